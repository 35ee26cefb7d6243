/* SPDX-License-Identifier: MIT */
/*
 * RReadWriteLock (protocol section 6): one hash N with a "mode" field,
 * reader fields "<uuid>:<tid>" and the writer's "<uuid>:<tid>:write"; a
 * string key per read hold whose TTL is that hold's lease; one channel,
 * redisson_rwlock:{N}, where read unlocks publish 0 (wake one waiter) and
 * write unlocks 1 (wake them all).
 *
 * A cr_rwlock owns two script locks, one per side, each of its own kind,
 * so script_lock.c does the waiting, the holds table and the watchdog for
 * both; both wait on the rwlock's channel. Read holds are CR__HOLD_READ
 * entries: the watchdog renews them with rwlock_read_renew.lua, whose key
 * prefix is the read side's key2 (the hold's aux). Write holds are
 * plain entries under the writer's name. The two kinds of entries are
 * independent, so releasing a read hold never cancels the same thread's
 * write renewal (Redisson's registries interfere there).
 *
 * Client-side additions: a read to write upgrade fails with CR_EDEADLK
 * instead of waiting for itself, and a downgrade publishes 1.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credisson/rwlock.h"
#include "script_lock.h"

#define CR__RWLOCK_MAGIC 0x43525257u /* "CRRW" */

struct cr_rwlock {
    CR__OBJECT_FIELDS
    cr_lock *read;
    cr_lock *write;
};

/* ------------------------------------------------------------ read side */


/* The reader's timeout prefix and its writer name, in one allocation
 * (freed once the call was sent): *prefix, then *writer. */
static cr_status
reader_names(cr_lock *l, const char *owner, char **tmp, char **writer)
{
    char *prefix = cr__name_reader_timeouts(l->raw, owner);
    size_t n;

    if (prefix == NULL)
        return cr__fail(CR_ENOMEM, "out of memory");
    n = strlen(prefix) + 1;
    *tmp = realloc(prefix, n + CR__OWNER_MAX);
    if (*tmp == NULL) {
        free(prefix);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *writer = *tmp + n;
    cr__name_switch_side(owner, true, *writer);
    return CR_OK;
}

/* Read acquire: nil when taken, else {PTTL, listen, turn}. */
static cr_status
read_acquire_call(cr_lock *l, const char *owner, int64_t lease_ms,
                  int64_t wait_ms, cr__script_call *call, char **tmp)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);
    char *writer;
    cr_status rc = reader_names(l, owner, tmp, &writer);

    if (rc != CR_OK)
        return rc;
    return cr__build_rwlock_read_acquire(&(cr__rwlock_read_acquire_args){
        .lock = l->raw, .reader_timeouts = *tmp, .line = ln.line,
        .line_state = ln.line_state, .lease_ms = lease_ms, .reader = owner,
        .writer = writer, .wait = cr__line_wait_arg(wait_ms, false),
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel,
        .publish = l->client->publish_cmd}, call);
}

/* Read unlock: nil, 0 or 1 as RLock's; the lease is not used (the hash's
 * TTL is recomputed from the remaining readers' timeout keys). */
static cr_status
read_unlock_call(cr_lock *l, const char *owner, int64_t lease_ms,
                 const cr__unlock *u, cr__script_call *call, char **tmp)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);
    char *writer;
    cr_status rc = reader_names(l, owner, tmp, &writer);

    (void)lease_ms;
    if (rc != CR_OK)
        return rc;
    return cr__build_rwlock_read_unlock(&(cr__rwlock_read_unlock_args){
        .lock = l->raw, .channel = l->channel, .reader_timeouts = *tmp,
        .key_prefix = l->key2, .latch = u->unlock_latch, .line = ln.line,
        .line_state = ln.line_state, .message = 0, .reader = owner,
        .publish = l->client->publish_cmd, .latch_ms = u->unlock_latch_ms,
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel}, call);
}

/* forceUnlock (and delete) of one side: runs only in that side's mode. */
static cr_status
side_force_unlock(const cr__op *op, cr_lock *l, const char *mode,
                  int64_t message, bool *done)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc = cr__run_rwlock_force_unlock(op, &cmd,
        &(cr__rwlock_force_unlock_args){.lock = l->raw,
                                        .channel = l->channel,
                                        .line = ln.line,
                                        .line_state = ln.line_state,
                                        .message = message,
                                        .publish = l->client->publish_cmd,
                                        .mode = mode,
                                        .line_lease_ms = ln.line_lease_ms,
                                        .turn_ms = ln.turn_ms,
                                        .line_channel = ln.line_channel},
        &r);

    return rc != CR_OK ? rc : cr__reply_bool(r, "force unlock", done);
}

/* isLocked of one side. */
static cr_status
side_is_locked(const cr__op *op, cr_lock *l, const char *mode,
               bool *locked)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc = cr__run_rwlock_is_locked(op, &cmd,
        &(cr__rwlock_is_locked_args){.lock = l->raw, .mode = mode}, &r);

    return rc != CR_OK ? rc : cr__reply_bool(r, "isLocked", locked);
}

static cr_status
read_force_unlock(const cr__op *op, cr_lock *l, bool *done)
{
    return side_force_unlock(op, l, "read", 0, done);
}

static cr_status
read_is_locked(const cr__op *op, cr_lock *l, bool *locked)
{
    return side_is_locked(op, l, "read", locked);
}

/* The read side: waits and renews as RLock, on its own scripts. */
static const cr__lock_kind read_kind = {
    .name = "read lock",
    .hold_kind = CR__HOLD_READ,
    .line = "rw",
    .min_sleep_ms = 1,
    .max_sleep_ms = -1,
    .acquire_call = read_acquire_call,
    .acquire_reply = cr__lock_acquire_reply,
    .unlock_call = read_unlock_call,
    .force_unlock = read_force_unlock,
    .delete_ = read_force_unlock,
    .is_locked = read_is_locked,
    .give_up_call = cr__lock_line_leave_call,
};

/* ----------------------------------------------------------- write side */

/* True when the writer's thread holds read holds of this lock (as far as
 * this client knows, and not found lost) and no write hold: the write lock
 * could then only be had after the owner released its own read holds. */
static bool
is_upgrade(const cr_lock *l, const char *writer)
{
    char reader[CR__OWNER_MAX];
    cr__renewal *r = l->client->renewal;
    bool lost = false;

    cr__name_switch_side(writer, false, reader);
    if (cr__hold_count(r, CR__HOLD_READ, l->raw, reader, &lost) == 0 || lost)
        return false;
    return cr__hold_count(r, CR__HOLD_PLAIN, l->raw, writer, NULL) == 0;
}

/* Write acquire: nil when taken, else {PTTL, listen, turn}; CR_EDEADLK
 * instead when the owner would wait for its own read holds. */
static cr_status
write_acquire_call(cr_lock *l, const char *owner, int64_t lease_ms,
                   int64_t wait_ms, cr__script_call *call, char **tmp)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);

    (void)tmp;
    return cr__build_rwlock_write_acquire(&(cr__rwlock_write_acquire_args){
        .lock = l->raw, .line = ln.line, .line_state = ln.line_state,
        .lease_ms = lease_ms, .writer = owner,
        .wait = cr__line_wait_arg(wait_ms, false),
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel,
        .publish = l->client->publish_cmd}, call);
}

static cr_status
write_acquire_reply(cr_lock *l, const char *owner, int64_t wait_ms,
                    cr_status rc, cr__reply *r, int64_t *hint, int *listen)
{
    rc = cr__lock_acquire_reply(l, owner, wait_ms, rc, r, hint, listen);
    if (rc == CR_BUSY && is_upgrade(l, owner))
        rc = cr__fail(CR_EDEADLK, "write lock %s: this owner holds read holds "
                      "of it and no write hold; a read to write upgrade would "
                      "wait for itself (release the read holds first)",
                      l->name);
    return rc;
}

/* Write unlock: nil, 0 or 1 as RLock's; publishes 1. */
static cr_status
write_unlock_call(cr_lock *l, const char *owner, int64_t lease_ms,
                  const cr__unlock *u, cr__script_call *call, char **tmp)
{
    cr__lock_line_args ln = cr__lock_line_args_of(l);

    (void)tmp;
    return cr__build_rwlock_write_unlock(&(cr__rwlock_write_unlock_args){
        .lock = l->raw, .channel = l->channel, .latch = u->unlock_latch,
        .line = ln.line, .line_state = ln.line_state, .message = 1,
        .lease_ms = lease_ms, .writer = owner,
        .publish = l->client->publish_cmd, .latch_ms = u->unlock_latch_ms,
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel}, call);
}

static cr_status
write_force_unlock(const cr__op *op, cr_lock *l, bool *done)
{
    return side_force_unlock(op, l, "write", 1, done);
}

static cr_status
write_is_locked(const cr__op *op, cr_lock *l, bool *locked)
{
    return side_is_locked(op, l, "write", locked);
}

/* The write side: owner names end in ":write". */
static const cr__lock_kind write_kind = {
    .name = "write lock",
    .hold_kind = CR__HOLD_PLAIN,
    .writer = true,
    .line = "rw",
    .min_sleep_ms = 1,
    .max_sleep_ms = -1,
    .acquire_call = write_acquire_call,
    .acquire_reply = write_acquire_reply,
    .unlock_call = write_unlock_call,
    .force_unlock = write_force_unlock,
    .delete_ = write_force_unlock,
    .is_locked = write_is_locked,
    .give_up_call = cr__lock_line_leave_call,
};

/* ------------------------------------------------------------ the handle */

/* Frees the sides (cr__object_free's `own`). */
static void
free_sides(void *obj)
{
    cr_rwlock *rw = obj;

    cr__lock_destroy(rw->read);
    cr__lock_destroy(rw->write);
}

/* Makes one side: a script lock owned by rw, waiting on `channel`. */
static cr_status
make_side(cr_rwlock *rw, const cr__lock_kind *kind, const char *channel,
          cr_lock **out)
{
    cr_status rc = cr__script_lock_new(rw->client, rw->name, kind, channel,
                                       out);

    if (rc == CR_OK)
        (*out)->owned = true;
    return rc;
}

cr_status
cr_rwlock_new(cr_client *c, const char *name, cr_rwlock **out)
{
    cr_rwlock *rw = NULL;
    char *channel = NULL;
    cr_status rc;

    if (out == NULL)
        return cr__fail(CR_EINVAL, "out is NULL");
    rc = cr__object_new(c, name, CR__RWLOCK_MAGIC, sizeof(*rw), true,
                        (void **)&rw);
    if (rc != CR_OK)
        return rc;
    if ((channel = cr__name(CR__NAME_RWLOCK_CHANNEL, rw->raw)) == NULL)
        rc = cr__fail(CR_ENOMEM, "out of memory");
    if (rc == CR_OK &&
        (rc = make_side(rw, &read_kind, channel, &rw->read)) == CR_OK &&
        (rc = make_side(rw, &write_kind, channel, &rw->write)) == CR_OK &&
        (rw->read->key2 = cr__name(CR__NAME_KEY_PREFIX, rw->raw)) == NULL)
        rc = cr__fail(CR_ENOMEM, "out of memory");
    free(channel);
    if (rc != CR_OK) {
        cr__object_free(rw, free_sides);
        return rc;
    }
    *out = rw;
    return CR_OK;
}

void
cr_rwlock_free(cr_rwlock *rw)
{
    if (rw == NULL || rw->magic != CR__RWLOCK_MAGIC)
        return;
    cr__object_free(rw, free_sides);
}

cr_lock *
cr_rwlock_read_lock(cr_rwlock *rw)
{
    return rw != NULL && rw->magic == CR__RWLOCK_MAGIC ? rw->read : NULL;
}

cr_lock *
cr_rwlock_write_lock(cr_rwlock *rw)
{
    return rw != NULL && rw->magic == CR__RWLOCK_MAGIC ? rw->write : NULL;
}

cr_status
cr_rwlock_delete(cr_rwlock *rw, bool *deleted)
{
    const char *argv[2] = {"DEL", NULL};
    cr__reply *r = NULL;
    int64_t n = 0;
    cr__op op;
    cr_status rc = cr__object_enter(rw, CR__RWLOCK_MAGIC, "read/write lock",
                                    &op);

    if (rc != CR_OK)
        return rc;
    argv[1] = rw->raw;
    rc = cr__command_retry(&op, 2, argv, NULL, &r);
    if (rc == CR_OK)
        rc = cr__reply_i64(r, "DEL", &n);
    if (rc == CR_OK) {
        cr__hold_drop_key(rw->client->renewal, CR__HOLD_READ, rw->raw);
        cr__hold_drop_key(rw->client->renewal, CR__HOLD_PLAIN, rw->raw);
        atomic_store(&rw->read->lease_ms, rw->client->watchdog_timeout_ms);
        atomic_store(&rw->write->lease_ms, rw->client->watchdog_timeout_ms);
        if (deleted != NULL)
            *deleted = n > 0;
    }
    cr__object_leave(rw);
    return rc;
}
