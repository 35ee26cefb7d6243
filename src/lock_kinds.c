/* SPDX-License-Identifier: MIT */
/*
 * Lock kinds that are RLock with one difference each (protocol sections 11,
 * 12 and 13): the fenced lock (a token counter incremented by every
 * acquisition), the spin lock (no pub/sub: waiters back off), and the
 * non-reentrant lock (the owner taking it again is refused).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "lock.h"

/* --------------------------------------------------------- fenced lock */

/* The token counter's key, kept in l->impl. */
static const char *
token_key(const cr_lock *l)
{
    return l->impl;
}

static void
fenced_free(cr_lock *l)
{
    free(l->impl);
}

/* Fenced acquire: {-1, token} when taken, {pttl, -1} otherwise. Only a
 * positive token means acquired (a pttl of -1 is a lock without expiry,
 * which Redisson misreads as acquired). On CR_OK *hint is the token. */
static cr_status
fenced_acquire(cr_lock *l, cr__cmd *cmd, const char *owner, int64_t lease_ms,
               int64_t wait_ms, int64_t *hint)
{
    cr__reply *r = NULL;
    int64_t first, token;
    cr_status rc;

    (void)wait_ms;
    rc = cr__run_fenced_lock_acquire(l->client, cmd,
        &(cr__fenced_lock_acquire_args){.lock = l->raw, .token = token_key(l),
                                        .lease_ms = lease_ms, .owner = owner},
        &r);
    if (rc != CR_OK)
        return rc;
    if (r->type != CR__REPLY_ARRAY || r->elements != 2 ||
        !cr__reply_int(r->element[0], &first) ||
        !cr__reply_int(r->element[1], &token))
        rc = cr__fail(CR_ESCRIPT, "fenced acquire replied no pair");
    else if (token >= 1)
        *hint = token;
    else {
        *hint = first;
        rc = CR_BUSY;
    }
    cr__reply_free(r);
    return rc;
}

/* delete(): a plain DEL of the lock and of the token counter, no publish
 * (Redisson's behaviour; the token sequence starts over). */
static cr_status
fenced_delete(cr_lock *l, bool *done)
{
    const char *argv[3] = {"DEL", l->raw, token_key(l)};
    cr__reply *r = NULL;
    int64_t n = 0;
    cr_status rc = cr__command_retry(l->client, 3, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    cr__reply_int(r, &n);
    *done = n > 0;
    cr__reply_free(r);
    return CR_OK;
}

static const cr__lock_ops fenced_ops = {
    .kind = "fenced lock",
    .hold_kind = CR__HOLD_PLAIN,
    .wake_mode = CR__WAKE_LOCK,
    .min_sleep_ms = 1,
    .max_sleep_ms = -1,
    .owner = cr__lock_owner_plain,
    .acquire = fenced_acquire,
    .unlock = cr__lock_unlock_plain,
    .force_unlock = cr__lock_force_unlock_plain,
    .delete_ = fenced_delete,
    .is_locked = cr__lock_is_locked_plain,
    .hold_count = cr__lock_hold_count_plain,
    .channel = cr__lock_channel_plain,
    .free_impl = fenced_free,
};

cr_status
cr_fenced_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    cr_lock *l = NULL;
    cr_status rc;

    if (out == NULL)
        return cr__fail(CR_EINVAL, "out is NULL");
    rc = cr__lock_create(c, name, &fenced_ops, &l);
    if (rc != CR_OK)
        return rc;
    l->impl = cr__name(CR__NAME_FENCE_TOKEN, l->raw);
    if (l->impl == NULL) {
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
    if (l->magic == CR__LOCK_MAGIC && l->ops != &fenced_ops)
        return cr__fail(CR_EINVAL, "%s is not a fenced lock", l->name);
    return CR_OK;
}

cr_status
cr_fenced_lock_get_token(cr_lock *l, int64_t *token)
{
    const char *argv[2] = {"GET", NULL};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = check_fenced(l, token);

    if (rc != CR_OK || (rc = cr__lock_enter(l)) != CR_OK)
        return rc;
    argv[1] = token_key(l);
    rc = cr__command_retry(l->client, 2, argv, NULL, &r);
    if (rc == CR_OK) {
        if (r->type == CR__REPLY_NIL || cr__reply_int(r, &v))
            *token = v;
        else
            rc = cr__fail(CR_ESCRIPT, "the token counter is not a number");
        cr__reply_free(r);
    }
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_fenced_lock_try_lock_and_get_token(cr_lock *l, int64_t wait_ms,
                                      int64_t lease_ms, int64_t *token)
{
    int64_t t = 0;
    cr_status rc = check_fenced(l, token);

    if (rc != CR_OK)
        return rc;
    rc = cr__lock_acquire(l, cr_thread_id(), wait_ms, lease_ms, &t);
    /* After a lost reply the token is read back: while this owner holds the
     * lock nobody else can have taken a newer one. */
    if (rc == CR_OK && t == 0)
        rc = cr_fenced_lock_get_token(l, &t);
    if (rc == CR_OK)
        *token = t;
    return rc;
}

cr_status
cr_fenced_lock_lock_and_get_token(cr_lock *l, int64_t lease_ms, int64_t *token)
{
    return cr_fenced_lock_try_lock_and_get_token(l, CR_WAIT_FOREVER, lease_ms,
                                                 token);
}

/* ----------------------------------------------------------- spin lock */

/* Spin unlock: RLock's unlock without the publish. */
static cr_status
spin_unlock(cr_lock *l, const char *owner, int64_t lease_ms, int *result)
{
    cr__unlock u;
    cr__reply *r = NULL;
    cr_status rc = cr__unlock_begin(l, &u);

    if (rc != CR_OK)
        return rc;
    rc = cr__run_spin_lock_unlock(l->client, &u.cmd,
        &(cr__spin_lock_unlock_args){.lock = l->raw, .latch = u.latch,
                                     .lease_ms = lease_ms, .owner = owner,
                                     .latch_ms = u.latch_ms},
        &r);
    return cr__unlock_end(l, &u, rc, r, result);
}

/* Spin forceUnlock and delete: a plain DEL, nobody to tell. */
static cr_status
spin_force_unlock(cr_lock *l, bool *done)
{
    const char *argv[2] = {"DEL", l->raw};
    cr__reply *r = NULL;
    int64_t n = 0;
    cr_status rc = cr__command_retry(l->client, 2, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    cr__reply_int(r, &n);
    *done = n > 0;
    cr__reply_free(r);
    return CR_OK;
}

static const cr__lock_ops spin_ops = {
    .kind = "spin lock",
    .hold_kind = CR__HOLD_PLAIN,
    .wake_mode = CR__WAKE_LOCK,
    .spin = true,
    .owner = cr__lock_owner_plain,
    .acquire = cr__lock_acquire_plain,
    .unlock = spin_unlock,
    .force_unlock = spin_force_unlock,
    .delete_ = spin_force_unlock,
    .is_locked = cr__lock_is_locked_plain,
    .hold_count = cr__lock_hold_count_plain,
    .channel = cr__lock_channel_plain,
};

cr_status
cr_spin_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return cr__lock_create(c, name, &spin_ops, out);
}

/* ------------------------------------------------- non-reentrant lock */

/* Non-reentrant acquire: as RLock's, but this owner taking it again gets
 * CR_EREENTRANT (Redisson raises IllegalMonitorStateException). */
static cr_status
non_reentrant_acquire(cr_lock *l, cr__cmd *cmd, const char *owner,
                      int64_t lease_ms, int64_t wait_ms, int64_t *hint)
{
    cr__reply *r = NULL;
    cr_status rc = cr__run_non_reentrant_lock_acquire(l->client, cmd,
        &(cr__non_reentrant_lock_acquire_args){.lock = l->raw,
                                               .lease_ms = lease_ms,
                                               .owner = owner},
        &r);

    (void)wait_ms;
    rc = cr__lock_acquire_reply(l, rc, r, hint);
    if (rc == CR_ESERVER && strstr(cr_last_error(), "NON_REENTRANT_REACQUIRE"))
        return cr__fail(CR_EREENTRANT, "%s is already held by %s", l->name, owner);
    return rc;
}

static const cr__lock_ops non_reentrant_ops = {
    .kind = "non-reentrant lock",
    .hold_kind = CR__HOLD_PLAIN,
    .wake_mode = CR__WAKE_LOCK,
    .min_sleep_ms = 1,
    .max_sleep_ms = -1,
    .owner = cr__lock_owner_plain,
    .acquire = non_reentrant_acquire,
    .unlock = cr__lock_unlock_plain,
    .force_unlock = cr__lock_force_unlock_plain,
    .delete_ = cr__lock_force_unlock_plain,
    .is_locked = cr__lock_is_locked_plain,
    .hold_count = cr__lock_hold_count_plain,
    .channel = cr__lock_channel_plain,
};

cr_status
cr_non_reentrant_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return cr__lock_create(c, name, &non_reentrant_ops, out);
}
