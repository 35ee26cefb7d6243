/* SPDX-License-Identifier: MIT */
/*
 * RLock (protocol section 3): the script lock's first kind, whose
 * operations the other kinds reuse where the protocol says they are the
 * same.
 */
#include "config.h"

#include "script_lock.h"

/* Acquire: nil when acquired, else {PTTL, listen, turn}. The spin lock's
 * too, without the line; with `non_reentrant`, the non-reentrant lock's. */
cr_status
cr__rlock_acquire_call_of(cr_lock *l, const char *owner, int64_t lease_ms,
                          int64_t wait_ms, bool non_reentrant,
                          cr__script_call *call, char **tmp)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);

    (void)tmp;
    return cr__build_lock_acquire(&(cr__lock_acquire_args){
        .lock = l->raw, .line = ln.line, .line_state = ln.line_state,
        .lease_ms = lease_ms, .owner = owner,
        .wait = cr__line_wait_arg(wait_ms, l->kind->spin),
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel,
        .publish = l->client->publish_cmd, .non_reentrant = non_reentrant},
        call);
}

cr_status
cr__rlock_acquire_call(cr_lock *l, const char *owner, int64_t lease_ms,
                       int64_t wait_ms, cr__script_call *call, char **tmp)
{
    return cr__rlock_acquire_call_of(l, owner, lease_ms, wait_ms, false, call,
                                     tmp);
}

/* Unlock: nil (not held by the owner), 0 (holds remain), 1 or -n
 * (released; n subscribers reached it). */
cr_status
cr__rlock_unlock_call(cr_lock *l, const char *owner, int64_t lease_ms,
                      const cr__unlock *u, cr__script_call *call, char **tmp)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);

    (void)tmp;
    return cr__build_lock_unlock(&(cr__lock_unlock_args){
        .lock = l->raw, .channel = l->channel, .latch = u->unlock_latch,
        .line = ln.line, .line_state = ln.line_state,
        .message = 0, .lease_ms = lease_ms, .owner = owner,
        .publish = l->client->publish_cmd, .latch_ms = u->unlock_latch_ms,
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel}, call);
}

/* forceUnlock (and delete): the hash goes and waiters are told. */
cr_status
cr__rlock_force_unlock(const cr__op *op, cr_lock *l, bool *done)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__run_lock_force_unlock(op, &cmd,
        &(cr__lock_force_unlock_args){.lock = l->raw, .channel = l->channel,
                                      .line = ln.line,
                                      .line_state = ln.line_state,
                                      .message = 0,
                                      .publish = l->client->publish_cmd,
                                      .line_lease_ms = ln.line_lease_ms,
                                      .turn_ms = ln.turn_ms,
                                      .line_channel = ln.line_channel},
        &r);

    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "force unlock", &v);
    *done = v == 1;
    return rc;
}

cr_status
cr__rlock_is_locked(const cr__op *op, cr_lock *l, bool *locked)
{
    const char *argv[2] = {"EXISTS", l->raw};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__command_retry(op, 2, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "EXISTS", &v);
    *locked = v > 0;
    return rc;
}

static const cr__lock_kind rlock_kind =
    CR__RLOCK_KIND("lock", cr__rlock_acquire_call, cr__rlock_force_unlock);

cr_status
cr_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return cr__script_lock_new(c, name, &rlock_kind, NULL, out);
}
