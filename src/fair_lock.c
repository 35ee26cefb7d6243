/* SPDX-License-Identifier: MIT */
/*
 * RFairLock (protocol section 5): RLock's hash, plus a FIFO queue of waiting
 * owners (redisson_lock_queue:{N}) and a sorted set of their deadlines in
 * epoch ms (redisson_lock_timeout:{N}). Each waiter listens on its own
 * channel, redisson_lock__channel:{N}:<owner>, and an unlock tells only the
 * waiter at the head of the queue. The lock is a script lock of its own
 * kind: script_lock.c does the waiting, the holds table and the watchdog
 * (the plain renewal script, on the hash only). The queue's key is
 * l->key2, the deadlines' l->key3.
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

#include "script_lock.h"

/* Poll interval while the lock is free but someone else is first in line. */
#define FREE_POLL_MS 100
/* Longest sleep between attempts of a fair waiter. */
#define HELD_POLL_MS 1000

/* The wait a waiter enqueues with, in ms: its own wait when it gave one,
 * else the client's fairLockWaitTimeout. The give-up uses the same value. */
static int64_t
enqueue_wait(const cr_lock *l, int64_t wait_ms)
{
    return wait_ms > 0 ? wait_ms : l->client->fair_wait_timeout_ms;
}

/* One attempt. With a wait, the waiting script, which enqueues the caller;
 * without, the no-wait script, which never does. On CR_BUSY *hint is the
 * sleep before the next attempt: the script's ttl when positive, -1 (a
 * message or HELD_POLL_MS) when the lock has no expiry, and FREE_POLL_MS
 * when the script says 0 or less otherwise (the lock is free, or the tail
 * waiter's deadline has passed). */
static cr_status
fair_acquire_call(cr_lock *l, const char *owner, int64_t lease_ms,
                  int64_t wait_ms, cr__script_call *call, char **tmp)
{
    int64_t wait = enqueue_wait(l, wait_ms), now = cr__wall_ms();

    (void)tmp;
    if (wait_ms == 0)
        return cr__build_fair_lock_try_acquire(
            &(cr__fair_lock_try_acquire_args){
                .lock = l->raw, .queue = l->key2, .timeouts = l->key3,
                .lease_ms = lease_ms, .owner = owner, .now_ms = now,
                .wait_ms = wait, .non_reentrant = l->kind->non_reentrant},
            call);
    return cr__build_fair_lock_acquire(
        &(cr__fair_lock_acquire_args){
            .lock = l->raw, .queue = l->key2, .timeouts = l->key3,
            .lease_ms = lease_ms, .owner = owner, .wait_ms = wait,
            .now_ms = now, .non_reentrant = l->kind->non_reentrant},
        call);
}

static cr_status
fair_acquire_reply(cr_lock *l, const char *owner, int64_t wait_ms,
                   cr_status rc, cr__reply *r, int64_t *hint, int *listen)
{
    int64_t v = -1;

    rc = cr__lock_acquire_reply(l, owner, wait_ms, rc, r, &v, listen);
    if (rc == CR_BUSY)
        *hint = wait_ms == 0 || v == -1 ? -1 : v > 0 ? v : FREE_POLL_MS;
    return rc;
}

/* A waiter stopped waiting without the lock: take it out of the queue and
 * move the deadlines of those behind it by the wait it enqueued with. */
static cr_status
fair_give_up_call(cr_lock *l, const char *owner, int64_t wait_ms,
                  cr__script_call *call)
{
    return cr__build_fair_lock_give_up(&(cr__fair_lock_give_up_args){
        .queue = l->key2, .timeouts = l->key3, .owner = owner,
        .wait_ms = enqueue_wait(l, wait_ms)}, call);
}

/* Unlock: RLock's replies, plus 2 when the lock was not held at all (the
 * head waiter was still woken, as in Redisson, whose script says 1). */
static cr_status
fair_unlock_call(cr_lock *l, const char *owner, int64_t lease_ms,
                 const cr__unlock *u, cr__script_call *call, char **tmp)
{
    (void)tmp;
    return cr__build_fair_lock_unlock(&(cr__fair_lock_unlock_args){
        .lock = l->raw, .queue = l->key2, .timeouts = l->key3,
        .channel = l->channel, .latch = u->unlock_latch, .message = 0,
        .lease_ms = lease_ms, .owner = owner, .now_ms = cr__wall_ms(),
        .publish = l->client->publish_cmd,
        .latch_ms = u->unlock_latch_ms}, call);
}

/* forceUnlock: delete the hash and wake the head waiter. */
static cr_status
fair_force_unlock(const cr__op *op, cr_lock *l, bool *done)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc;

    rc = cr__run_fair_lock_force_unlock(op, &cmd,
        &(cr__fair_lock_force_unlock_args){
            .lock = l->raw, .queue = l->key2, .timeouts = l->key3,
            .channel = l->channel, .message = 0, .now_ms = cr__wall_ms(),
            .publish = l->client->publish_cmd},
        &r);
    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "fair force unlock", &v);
    *done = v == 1;
    return rc;
}

/* delete() is a plain DEL of the hash, the queue and the deadlines;
 * nothing is published, so waiters find out at their next attempt
 * (Redisson's behaviour). */
#define FAIR_KIND(label, nr)                                                  \
    {                                                                         \
        .name = label, .hold_kind = CR__HOLD_PLAIN, .own_channel = true,      \
        .non_reentrant = nr, .min_sleep_ms = 10,                              \
        .max_sleep_ms = HELD_POLL_MS, .acquire_call = fair_acquire_call,      \
        .acquire_reply = fair_acquire_reply, .unlock_call = fair_unlock_call, \
        .force_unlock = fair_force_unlock,                                    \
        .delete_ = cr__lock_del, .is_locked = cr__rlock_is_locked,            \
        .give_up_call = fair_give_up_call,                                    \
    }
static const cr__lock_kind fair_kind = FAIR_KIND("fair lock", false);
static const cr__lock_kind fair_nr_kind =
    FAIR_KIND("non-reentrant fair lock", true);

/* Makes a fair lock of `kind`. */
static cr_status
create(cr_client *c, const char *name, const cr__lock_kind *kind,
       cr_lock **out)
{
    cr_lock *l = NULL;
    cr_status rc = cr__script_lock_new(c, name, kind, NULL,
                                       out != NULL ? &l : NULL);

    if (rc != CR_OK)
        return rc;
    if ((l->key2 = cr__name(CR__NAME_FAIR_QUEUE, l->raw)) == NULL ||
        (l->key3 = cr__name(CR__NAME_FAIR_TIMEOUTS, l->raw)) == NULL) {
        cr_lock_free(l);
        return CR_ENOMEM;
    }
    *out = l;
    return CR_OK;
}

cr_status
cr_fair_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return create(c, name, &fair_kind, out);
}

cr_status
cr_non_reentrant_fair_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return create(c, name, &fair_nr_kind, out);
}
