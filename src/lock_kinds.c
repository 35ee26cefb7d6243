/* SPDX-License-Identifier: MIT */
/*
 * Lock kinds that are RLock with one difference each (protocol sections 11,
 * 12 and 13): the fenced lock (a token counter incremented by every
 * acquisition), the spin lock (no pub/sub: waiters back off), and the
 * non-reentrant lock (the owner taking it again is refused).
 */
#include "config.h"

#include "script_lock.h"

/* --------------------------------------------------------- fenced lock */

/* Fenced acquire: {-1, token} when taken, {pttl, -1, listen, turn}
 * otherwise. Only a positive token means acquired (a pttl of -1 is a lock
 * without expiry, which Redisson misreads as acquired). On CR_OK *hint is
 * the token. The token counter's key is l->key2. */
static cr_status
fenced_call(cr_lock *l, const char *owner, int64_t lease_ms, int64_t wait_ms,
            cr__script_call *call, char **tmp)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);

    (void)tmp;
    return cr__build_fenced_lock_acquire(&(cr__fenced_lock_acquire_args){
        .lock = l->raw, .token = l->key2, .line = ln.line,
        .line_state = ln.line_state, .lease_ms = lease_ms, .owner = owner,
        .wait = cr__line_wait_arg(wait_ms, false),
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel,
        .publish = l->client->publish_cmd}, call);
}

static cr_status
fenced_reply(cr_lock *l, const char *owner, int64_t wait_ms, cr_status rc,
             cr__reply *r, int64_t *hint, int *listen)
{
    cr__line_place place = {.listen = CR__LISTEN_NO, .turn_ms = -1};
    int64_t first, token;

    (void)l;
    (void)owner;
    (void)wait_ms;
    if (rc != CR_OK)
        return rc;
    *listen = CR__LISTEN_NO;
    if (r->type != CR__REPLY_ARRAY || r->elements < 2 ||
        !cr__reply_int(r->element[0], &first) ||
        !cr__reply_int(r->element[1], &token) ||
        (token < 1 && !cr__line_place_of(r, 2, &place)))
        rc = cr__fail(CR_ESCRIPT, "fenced acquire replied neither a token "
                      "nor a place in line");
    else if (token >= 1)
        *hint = token;
    else {
        *hint = cr__line_hint(first, &place);
        *listen = place.listen;
        rc = CR_BUSY;
    }
    cr__reply_free(r);
    return rc;
}

/* delete() is a plain DEL of the lock and of the token counter, no publish
 * (Redisson's behaviour; the token sequence starts over). */
static const cr__lock_kind fenced_kind = {
    .name = "fenced lock",
    .hold_kind = CR__HOLD_PLAIN,
    .line = "lock",
    .min_sleep_ms = 1,
    .max_sleep_ms = -1,
    .acquire_call = fenced_call,
    .acquire_reply = fenced_reply,
    .unlock_call = cr__rlock_unlock_call,
    .force_unlock = cr__rlock_force_unlock,
    .delete_ = cr__lock_del,
    .is_locked = cr__rlock_is_locked,
    .give_up_call = cr__lock_line_leave_call,
};

cr_status
cr_fenced_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    cr_lock *l = NULL;
    cr_status rc = cr__script_lock_new(c, name, &fenced_kind, NULL,
                                       out != NULL ? &l : NULL);

    if (rc != CR_OK)
        return rc;
    if ((l->key2 = cr__name(CR__NAME_FENCE_TOKEN, l->raw)) == NULL) {
        cr_lock_free(l);
        return CR_ENOMEM;
    }
    *out = l;
    return CR_OK;
}

/* Checks that `l` is a fenced lock. */
static cr_status
check_fenced(const cr_lock *l, const int64_t *token)
{
    if (l == NULL || token == NULL)
        return cr__fail(CR_EINVAL, "lock or token is NULL");
    if (l->magic == CR__LOCK_MAGIC && l->kind != &fenced_kind)
        return cr__fail(CR_EINVAL, "%s is not a fenced lock", l->name);
    return CR_OK;
}

cr_status
cr_fenced_lock_get_token(cr_lock *l, int64_t *token)
{
    cr__op op;
    cr_status rc = check_fenced(l, token);

    if (rc != CR_OK || (rc = cr__lock_enter(l, &op)) != CR_OK)
        return rc;
    rc = cr__command_get_int(&op, l->key2, "the token counter", token);
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_fenced_lock_try_lock_and_get_token_tid(cr_lock *l, int64_t tid,
                                          int64_t wait_ms, int64_t lease_ms,
                                          int64_t *token)
{
    int64_t t = 0;
    cr_status rc = check_fenced(l, token);

    if (rc != CR_OK)
        return rc;
    rc = cr__lock_try_lock(l, NULL, tid, wait_ms, lease_ms, &t);
    /* After a lost reply the token is read back: while this owner holds the
     * lock nobody else can have taken a newer one. */
    if (rc == CR_OK && t == 0)
        rc = cr_fenced_lock_get_token(l, &t);
    if (rc == CR_OK)
        *token = t;
    return rc;
}

cr_status
cr_fenced_lock_try_lock_and_get_token(cr_lock *l, int64_t wait_ms,
                                      int64_t lease_ms, int64_t *token)
{
    return cr_fenced_lock_try_lock_and_get_token_tid(l, cr_thread_id(),
                                                     wait_ms, lease_ms, token);
}

cr_status
cr_fenced_lock_lock_and_get_token(cr_lock *l, int64_t lease_ms, int64_t *token)
{
    return cr_fenced_lock_try_lock_and_get_token_tid(l, cr_thread_id(),
                                                     CR_WAIT_FOREVER, lease_ms,
                                                     token);
}

cr_status
cr_fenced_lock_lock_and_get_token_tid(cr_lock *l, int64_t tid,
                                      int64_t lease_ms, int64_t *token)
{
    return cr_fenced_lock_try_lock_and_get_token_tid(l, tid, CR_WAIT_FOREVER,
                                                     lease_ms, token);
}

/* ----------------------------------------------------------- spin lock */

/* Spin unlock: RLock's unlock without the publish. */
static cr_status
spin_unlock_call(cr_lock *l, const char *owner, int64_t lease_ms,
                 const cr__unlock *u, cr__script_call *call, char **tmp)
{
    (void)tmp;
    return cr__build_spin_lock_unlock(&(cr__spin_lock_unlock_args){
        .lock = l->raw, .latch = u->unlock_latch, .lease_ms = lease_ms,
        .owner = owner, .latch_ms = u->unlock_latch_ms}, call);
}

/* forceUnlock and delete are a plain DEL: nobody to tell. */
static const cr__lock_kind spin_kind = {
    .name = "spin lock",
    .hold_kind = CR__HOLD_PLAIN,
    .spin = true,
    .acquire_call = cr__rlock_acquire_call,
    .acquire_reply = cr__lock_acquire_reply,
    .unlock_call = spin_unlock_call,
    .force_unlock = cr__lock_del,
    .delete_ = cr__lock_del,
    .is_locked = cr__rlock_is_locked,
};

cr_status
cr_spin_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return cr__script_lock_new(c, name, &spin_kind, NULL, out);
}

/* ------------------------------------------------- non-reentrant lock */

/* Non-reentrant acquire: RLock's script, refusing this owner taking it
 * again (CR_EREENTRANT; Redisson raises IllegalMonitorStateException). */
static cr_status
non_reentrant_call(cr_lock *l, const char *owner, int64_t lease_ms,
                   int64_t wait_ms, cr__script_call *call, char **tmp)
{
    return cr__rlock_acquire_call_of(l, owner, lease_ms, wait_ms, true, call,
                                     tmp);
}

static const cr__lock_kind non_reentrant_kind =
    CR__RLOCK_KIND("non-reentrant lock", non_reentrant_call,
                   cr__rlock_force_unlock);

cr_status
cr_non_reentrant_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return cr__script_lock_new(c, name, &non_reentrant_kind, NULL, out);
}
