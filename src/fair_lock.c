/* SPDX-License-Identifier: MIT */
/*
 * RFairLock (protocol section 5): RLock's hash, plus a FIFO queue of waiting
 * owners (redisson_lock_queue:{N}) and a sorted set of their deadlines in
 * epoch ms (redisson_lock_timeout:{N}). Each waiter listens on its own
 * channel, redisson_lock__channel:{N}:<owner>, and an unlock tells only the
 * waiter at the head of the queue. The lock is a cr_lock of its own kind:
 * lock.c does the waiting, the holds table and the watchdog (the plain
 * renewal script, on the hash only).
 *
 * What credisson does differently from Redisson, on the client side only:
 * - A waiter that stops waiting without the lock (wait ran out, error, the
 *   client being freed) always leaves the queue, and later waiters' deadlines
 *   move by the wait it enqueued with (Redisson's async path uses
 *   fairLockWaitTimeout there, and interrupted waiters stay queued).
 * - Hints never make a waiter spin: while the lock is free but the caller
 *   is not first in line (the head waiter is on its way, or dead), it polls
 *   every FREE_POLL_MS; and it polls at least every HELD_POLL_MS in any case,
 *   because an unlock wakes only the head waiter, and a dead head waiter
 *   would otherwise leave the others asleep for a whole ttl hint.
 * - try_lock with a wait of 0 runs the no-wait script and never enqueues
 *   (Redisson's tryLock(0, ...) enqueues and at once gives up).
 * - Unlocking a fair lock nobody holds wakes the head waiter as Redisson
 *   does, but is reported as CR_ENOTOWNER (or CR_ELOST), not as success.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "object.h"

/* Poll interval while the lock is free but someone else is first in line. */
#define FREE_POLL_MS 100
/* Longest sleep between attempts of a fair waiter. */
#define HELD_POLL_MS 1000

/* The fair lock's own keys, kept in l->impl. */
typedef struct fair_keys {
    char *queue; /* redisson_lock_queue:{N} */
    char *zset;  /* redisson_lock_timeout:{N} */
    bool non_reentrant; /* Redisson 4.4's non-reentrant fair lock */
} fair_keys;

static void
fair_free(cr_lock *l)
{
    fair_keys *k = l->impl;

    if (k != NULL) {
        free(k->queue);
        free(k->zset);
        free(k);
    }
}

/* The wait a waiter enqueues with, in ms: its own wait when it gave one,
 * else the client's fairLockWaitTimeout. The give-up uses the same value. */
static int64_t
enqueue_wait(const cr_lock *l, int64_t wait_ms)
{
    return wait_ms > 0 ? wait_ms : l->client->fair_wait_timeout_ms;
}

/* The waiter's own channel: redisson_lock__channel:{N}:<owner>. */
static char *
fair_channel(cr_lock *l, const char *owner)
{
    return cr__name_waiter_channel(l->channel, owner);
}

/* One attempt. With a wait, the waiting script, which enqueues the caller;
 * without, the no-wait script, which never does. On CR_BUSY *hint is the
 * sleep before the next attempt: the script's ttl when positive, -1 (a
 * message or HELD_POLL_MS) when the lock has no expiry, and FREE_POLL_MS
 * when the script says 0 or less otherwise (the lock is free, or the tail
 * waiter's deadline has passed). */
static cr_status
fair_acquire(cr_lock *l, cr__cmd *cmd, const char *owner, int64_t lease_ms,
             int64_t wait_ms, int64_t *hint)
{
    fair_keys *k = l->impl;
    int64_t wait = enqueue_wait(l, wait_ms), now = cr__wall_ms(), v;
    cr__reply *r = NULL;
    cr_status rc;

    if (wait_ms == 0)
        rc = cr__run_fair_lock_try_acquire(l->client, cmd,
            &(cr__fair_lock_try_acquire_args){
                .lock = l->raw, .queue = k->queue, .timeouts = k->zset,
                .lease_ms = lease_ms, .owner = owner, .now_ms = now,
                .wait_ms = wait, .non_reentrant = k->non_reentrant},
            &r);
    else
        rc = cr__run_fair_lock_acquire(l->client, cmd,
            &(cr__fair_lock_acquire_args){
                .lock = l->raw, .queue = k->queue, .timeouts = k->zset,
                .lease_ms = lease_ms, .owner = owner, .wait_ms = wait,
                .now_ms = now, .non_reentrant = k->non_reentrant},
            &r);
    if (rc == CR_ESERVER && strstr(cr_last_error(), "NON_REENTRANT_REACQUIRE"))
        return cr__fail(CR_EREENTRANT, "%s is already held by %s", l->name, owner);
    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_NIL) {
        rc = CR_OK;
    } else if (cr__reply_int(r, &v)) {
        rc = CR_BUSY;
        if (wait_ms == 0 || v == -1)
            *hint = -1;
        else
            *hint = v > 0 ? v : FREE_POLL_MS;
    } else {
        rc = cr__fail(CR_ESCRIPT, "fair lock acquire replied neither nil "
                      "nor a number");
    }
    cr__reply_free(r);
    return rc;
}

/* A waiter stopped waiting without the lock: take it out of the queue and
 * move the deadlines of those behind it by the wait it enqueued with. A
 * try without a wait never enqueued. A failure is logged and returned (the
 * caller tries again in the background; failing that, the entry leaves the
 * queue when its deadline passes). The caller's error detail is kept. */
static cr_status
fair_give_up(cr_lock *l, const char *owner, int64_t wait_ms)
{
    fair_keys *k = l->impl;
    char keep[512];
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc;

    if (wait_ms == 0)
        return CR_OK;
    snprintf(keep, sizeof(keep), "%s", cr_last_error());
    rc = cr__run_fair_lock_give_up(l->client, &cmd,
        &(cr__fair_lock_give_up_args){.queue = k->queue, .timeouts = k->zset,
                                      .owner = owner,
                                      .wait_ms = enqueue_wait(l, wait_ms)},
        &r);
    if (rc == CR_OK) {
        cr__reply_free(r);
    } else {
        cr__log(&l->client->log, CR_LOG_WARN,
                "fair lock %s: %s could not leave the wait queue yet (%s: %s)",
                l->name, owner, cr_strerror(rc), cr_last_error());
    }
    cr__fail(CR_OK, "%s", keep);
    return rc;
}

/* Unlock: RLock's replies, plus 2 when the lock was not held at all (the
 * head waiter was still woken, as in Redisson, whose script says 1). */
static cr_status
fair_unlock(cr_lock *l, const char *owner, int64_t lease_ms, int *result)
{
    fair_keys *k = l->impl;
    cr__unlock u;
    cr__reply *r = NULL;
    cr_status rc = cr__unlock_begin(l, &u);

    if (rc != CR_OK)
        return rc;
    rc = cr__run_fair_lock_unlock(l->client, &u.cmd,
        &(cr__fair_lock_unlock_args){
            .lock = l->raw, .queue = k->queue, .timeouts = k->zset,
            .channel = l->channel, .latch = u.latch, .message = 0,
            .lease_ms = lease_ms, .owner = owner, .now_ms = cr__wall_ms(),
            .publish = l->client->publish_cmd, .latch_ms = u.latch_ms},
        &r);
    return cr__unlock_end(l, &u, rc, r, result);
}

/* forceUnlock: delete the hash and wake the head waiter. */
static cr_status
fair_force_unlock(cr_lock *l, bool *done)
{
    fair_keys *k = l->impl;
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc;

    rc = cr__run_fair_lock_force_unlock(l->client, &cmd,
        &(cr__fair_lock_force_unlock_args){
            .lock = l->raw, .queue = k->queue, .timeouts = k->zset,
            .channel = l->channel, .message = 0, .now_ms = cr__wall_ms(),
            .publish = l->client->publish_cmd},
        &r);
    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "fair force unlock", &v);
    *done = v == 1;
    return rc;
}

/* delete(): a plain DEL of the hash, the queue and the deadlines; nothing is
 * published, so waiters find out at their next attempt (Redisson's
 * behaviour). */
static cr_status
fair_delete(cr_lock *l, bool *done)
{
    fair_keys *k = l->impl;
    const char *argv[4] = {"DEL", l->raw, k->queue, k->zset};
    cr__reply *r = NULL;
    int64_t n = 0;
    cr_status rc = cr__command_retry(l->client, 4, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "DEL", &n);
    *done = n > 0;
    return rc;
}

static const cr__lock_ops fair_ops = {
    .kind = "fair lock",
    .hold_kind = CR__HOLD_PLAIN,
    .wake_mode = CR__WAKE_LOCK,
    .min_sleep_ms = 10,
    .max_sleep_ms = HELD_POLL_MS,
    .owner = cr__lock_owner_plain,
    .acquire = fair_acquire,
    .unlock = fair_unlock,
    .force_unlock = fair_force_unlock,
    .delete_ = fair_delete,
    .is_locked = cr__lock_is_locked_plain,
    .hold_count = cr__lock_hold_count_plain,
    .channel = fair_channel,
    .give_up = fair_give_up,
    .free_impl = fair_free,
};

/* Makes a fair lock, reentrant or not. */
static cr_status
create(cr_client *c, const char *name, bool non_reentrant, cr_lock **out)
{
    cr_lock *l = NULL;
    fair_keys *k;
    cr_status rc = cr__lock_create(c, name, &fair_ops, out != NULL ? &l : NULL);

    if (rc != CR_OK)
        return rc;
    l->impl = k = calloc(1, sizeof(*k));
    if (k == NULL ||
        (k->queue = cr__name(CR__NAME_FAIR_QUEUE, l->raw)) == NULL ||
        (k->zset = cr__name(CR__NAME_FAIR_TIMEOUTS, l->raw)) == NULL) {
        cr_lock_free(l);
        return CR_ENOMEM;
    }
    k->non_reentrant = non_reentrant;
    *out = l;
    return CR_OK;
}

cr_status
cr_fair_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return create(c, name, false, out);
}

cr_status
cr_non_reentrant_fair_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return create(c, name, true, out);
}
