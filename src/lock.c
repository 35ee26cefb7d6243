/* SPDX-License-Identifier: MIT */
/*
 * Locks: the calls every kind shares, and RLock (protocol sections 3-4).
 *
 * An acquisition runs the kind's acquire script through the shared waiting
 * loop, then records the hold in the client's holds table (and, without a
 * lease, with the watchdog) before returning. An unlock runs the kind's
 * unlock script with a fresh unlock latch, so its one retry after a broken
 * link cannot release twice, and uses the holds table to tell a lost lease
 * (CR_ELOST) from a hold that never was (CR_ENOTOWNER).
 *
 * An acquire whose reply was lost (the link broke after sending) may or may
 * not have run. Before trying again, the lock compares the server's hold
 * count of the owner with this client's own: one more on the server means
 * the lost attempt did acquire, so it is not run twice.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "object.h"
#include "topology.h"
#include "wait.h"

/* A releaser's turn, in unlock round trips (see yield_rtts in lock.h). */
#define YIELD_RTTS_MIN 4
#define YIELD_RTTS_MAX 64

/* ------------------------------------------------------------- creation */

/* Frees the names of a handle. */
static void
free_names(cr_lock *l)
{
    free(l->channel);
    if (l->raw != l->name)
        free(l->raw);
    free(l->name);
}

cr_status
cr__lock_create(cr_client *c, const char *name, const cr__lock_ops *ops,
                cr_lock **out)
{
    cr_lock *l;
    cr_status rc;

    if (out == NULL)
        return cr__fail(CR_EINVAL, "out is NULL");
    rc = cr__name_check(name);
    if (rc != CR_OK)
        return rc;
    rc = cr__client_enter(c);
    if (rc != CR_OK)
        return rc;
    l = calloc(1, sizeof(*l));
    rc = CR_ENOMEM;
    /* Without a name prefix the raw name is the name: one string. The
     * name of a kind made of other locks (MultiLock, RedLock) is a label
     * that names no key, and may be cut short: only its members, checked
     * when they were made, need their keys in one slot. */
    if (l != NULL && (l->name = strdup(name)) != NULL &&
        (l->raw = c->name_prefix != NULL ? cr__name_raw(c->name_prefix, name)
                                          : l->name) != NULL &&
        (l->channel = cr__name(CR__NAME_LOCK_CHANNEL, l->raw)) != NULL)
        rc = ops->acquire_all != NULL ? CR_OK
                                      : cr__name_check_slots(c->url.is_cluster, l->raw, NULL);
    if (rc != CR_OK) {
        if (l != NULL)
            free_names(l);
        free(l);
        cr__client_leave(c);
        return rc;
    }
    l->magic = CR__LOCK_MAGIC;
    l->client = c;
    l->ops = ops;
    atomic_init(&l->lease_ms, c->watchdog_timeout_ms);
    atomic_init(&l->yield_until_us, 0);
    atomic_init(&l->yield_turn_us, 0);
    atomic_init(&l->yield_target, 0);
    atomic_init(&l->yield_quiet_us, 0);
    atomic_init(&l->yield_rtts, YIELD_RTTS_MIN);
    atomic_init(&l->acquired_us, 0);
    atomic_init(&l->bg_pending, 0);
    cr__client_leave(c);
    *out = l;
    return CR_OK;
}

void
cr_lock_free(cr_lock *l)
{
    if (l == NULL || l->magic != CR__LOCK_MAGIC || l->owned)
        return;
    cr__lock_destroy(l);
}

void
cr__lock_destroy(cr_lock *l)
{
    if (l == NULL || l->magic != CR__LOCK_MAGIC)
        return;
    /* A give-back under way uses the handle: it ends within two command
     * timeouts, or at once when the client is freed. */
    while (atomic_load(&l->bg_pending) > 0)
        cr__sleep_ms(1);
    if (l->ops->free_impl != NULL)
        l->ops->free_impl(l);
    l->magic = 0;
    free_names(l);
    free(l->aux);
    free(l);
}

const char *
cr_lock_name(const cr_lock *l)
{
    return l != NULL && l->magic == CR__LOCK_MAGIC ? l->name : "";
}

cr_status
cr__lock_enter(cr_lock *l)
{
    cr__clear_error();
    if (l == NULL)
        return cr__fail(CR_EINVAL, "lock is NULL");
    if (l->magic != CR__LOCK_MAGIC)
        return cr__fail(CR_EINVAL, "not a live lock handle (freed?)");
    return cr__client_enter(l->client);
}

void
cr__lock_leave(cr_lock *l)
{
    cr__client_leave(l->client);
}

/* Checks a wait: CR_WAIT_FOREVER or 0..CR_DURATION_MAX. */
static cr_status
check_wait(int64_t wait_ms)
{
    if (wait_ms == CR_WAIT_FOREVER || (wait_ms >= 0 && wait_ms <= CR_DURATION_MAX))
        return CR_OK;
    return cr__fail(CR_EINVAL, "wait of %lld ms is neither CR_WAIT_FOREVER "
                    "nor in 0..CR_DURATION_MAX", (long long)wait_ms);
}

/* Checks a lease: CR_LEASE_WATCHDOG or 1..CR_DURATION_MAX. */
static cr_status
check_lease(int64_t lease_ms)
{
    if (lease_ms == CR_LEASE_WATCHDOG || (lease_ms > 0 && lease_ms <= CR_DURATION_MAX))
        return CR_OK;
    return cr__fail(CR_EINVAL, "lease of %lld ms is neither CR_LEASE_WATCHDOG "
                    "nor in 1..CR_DURATION_MAX", (long long)lease_ms);
}

/* ------------------------------------------------------------ acquiring */

typedef struct attempt_ctx {
    cr_lock *lock;
    const char *owner;
    int64_t lease_ms;
    int64_t wait_ms;
    bool uncertain; /* the last attempt's reply was lost */
    int64_t extra;  /* what the kind's acquire left on success */
    int attempts;   /* acquire calls made */
    int64_t sent_ms; /* when the last acquire was sent (its lease starts
                      * no earlier on the server) */
    unsigned gen;    /* the master's generation then (Sentinel) */
    cr__cmd cmd;     /* the last acquire's command: sent, replica sync */
} attempt_ctx;

/* Tells whether an attempt whose reply was lost did acquire: the server
 * counts one hold more than this client knows of. */
static cr_status
resolve_lost_reply(attempt_ctx *a, bool *acquired)
{
    cr_lock *l = a->lock;
    int64_t server = 0, local;
    cr_status rc = l->ops->hold_count(l, a->owner, &server);

    if (rc != CR_OK)
        return rc;
    local = cr__hold_count(l->client->renewal, l->ops->hold_kind, l->raw,
                           a->owner, NULL);
    *acquired = server > local;
    a->uncertain = false;
    return CR_OK;
}

/* One attempt of the waiting loop (cr__attempt_fn). */
static cr_status
attempt(void *arg, int64_t *hint)
{
    attempt_ctx *a = arg;
    int64_t settle;
    cr_status rc;

    if (a->uncertain) {
        bool acquired = false;

        rc = resolve_lost_reply(a, &acquired);
        if (rc != CR_OK)
            return rc;
        if (acquired) {
            a->extra = 0;
            return CR_OK;
        }
    }
    if ((settle = cr__topology_settle_left(a->lock->client->topology)) > 0) {
        /* Right after a Sentinel switch: a client that learns of it later
         * may hold a lock the old master granted; until it has been told
         * that it lost it, nothing is taken on the new master. */
        *hint = settle;
        return cr__fail(CR_BUSY, "the master moved just now: nothing is "
                        "taken on it for another %lld ms", (long long)settle);
    }
    a->attempts++;
    a->sent_ms = cr__now_ms();
    a->gen = cr__topology_generation(a->lock->client->topology);
    a->cmd = (cr__cmd){.flags = CR__CMD_SYNC};
    rc = a->lock->ops->acquire(a->lock, &a->cmd, a->owner, a->lease_ms,
                               a->wait_ms, hint);
    if (rc == CR_EREENTRANT &&
        cr__hold_count(a->lock->client->renewal, a->lock->ops->hold_kind,
                       a->lock->raw, a->owner, NULL) == 0) {
        /* The server has a hold of this owner that this client does not
         * know of: an earlier attempt whose reply was lost did acquire.
         * It is this owner's hold: take it up instead of refusing. */
        a->extra = 0;
        return CR_OK;
    }
    if (rc == CR_EIO && a->cmd.sent)
        a->uncertain = true; /* it may have run: its reply was lost */
    else if (rc == CR_OK)
        a->extra = *hint;
    return rc;
}

/* A new acquisition that may wait holds back while its handle yields to
 * the waiters its last unlock woke (see yield_to_waiters), up to its wait
 * budget; one that may not wait goes at once. Returns true when it waited
 * a turn for waiters of other clients (it could not count releases). */
static bool
yield_first(cr_lock *l, int64_t wait_ms)
{
    int64_t now = cr__now_us(), until = atomic_load(&l->yield_until_us);
    int64_t turn = atomic_load(&l->yield_turn_us);
    uint64_t target = atomic_load(&l->yield_target);

    if (until <= now || wait_ms == 0)
        return false;
    if (wait_ms > 0 && until - now > wait_ms * 1000)
        until = now + wait_ms * 1000;
    if (target > 0 &&
        cr__pubsub_await_releases(l->client->pubsub, l->channel, target,
                                  (until + 999) / 1000,
                                  (atomic_load(&l->yield_quiet_us) + 999) / 1000))
        return false;
    cr__sleep_us(until - now < turn ? until - now : turn);
    return target > 0;
}

/* After a turn for waiters of other clients: the lock still free at the
 * first attempt means the woken waiter had not reached it yet (or had
 * left): longer turns; taken by then, the turn was long enough: a little
 * shorter. (Not after a turn for this client's threads: the lock is then
 * also free when they are all away in turns of their own, and longer
 * turns would only keep them away.) */
static void
tune_turn(cr_lock *l, bool free_at_once)
{
    int rtts = atomic_load(&l->yield_rtts);

    if (free_at_once)
        rtts = rtts * 2 > YIELD_RTTS_MAX ? YIELD_RTTS_MAX : rtts * 2;
    else if (rtts > YIELD_RTTS_MIN)
        rtts--;
    atomic_store(&l->yield_rtts, rtts);
}

/* What an acquisition that had to return leaves to the background:
 * leaving a fair lock's queue, undoing a grant no replica saw, finding out
 * whether an attempt whose reply was lost was granted (and giving it back
 * if so). */
typedef struct give_back {
    cr_lock *lock;
    char owner[CR__OWNER_MAX];
    int64_t lease_ms, wait_ms;
    bool give_up, undo, resolve;
} give_back;

/* The background job of a give_back. */
static void
give_back_run(void *arg)
{
    give_back *g = arg;
    cr_lock *l = g->lock;
    int64_t server = 0, local;
    int ignored;

    if (g->give_up && l->ops->give_up(l, g->owner, g->wait_ms) != CR_OK)
        cr__log(&l->client->log, CR_LOG_WARN, "fair lock %s: %s stays in its "
                "queue until its deadline", l->name, g->owner);
    if (g->resolve && l->ops->hold_count(l, g->owner, &server) == CR_OK) {
        local = cr__hold_count(l->client->renewal, l->ops->hold_kind, l->raw,
                               g->owner, NULL);
        g->undo = server > local; /* granted after its caller gave up */
    }
    if (g->undo) {
        cr_status rc = l->ops->unlock(l, g->owner, g->lease_ms, &ignored);

        cr__log(&l->client->log, rc == CR_OK ? CR_LOG_INFO : CR_LOG_WARN,
                "%s %s: an acquisition of %s its caller was told it did not "
                "get was given back: %s", l->ops->kind, l->name, g->owner,
                rc == CR_OK ? "done" : cr_last_error());
    }
}

/* Frees a give_back; the handle may go. */
static void
give_back_done(void *arg, bool ran)
{
    give_back *g = arg;

    (void)ran;
    atomic_fetch_sub(&g->lock->bg_pending, 1);
    free(g);
}

/* Leaves `what` to the background for `owner`'s acquisition of `l`. */
static void
leave_to_background(cr_lock *l, const char *owner, int64_t lease_ms,
                    int64_t wait_ms, bool give_up, bool undo, bool resolve)
{
    give_back *g = calloc(1, sizeof(*g));
    char keep[512];

    if (g == NULL)
        return;
    snprintf(keep, sizeof(keep), "%s", cr_last_error());
    g->lock = l;
    snprintf(g->owner, sizeof(g->owner), "%s", owner);
    g->lease_ms = lease_ms;
    g->wait_ms = wait_ms;
    g->give_up = give_up;
    g->undo = undo;
    g->resolve = resolve;
    atomic_fetch_add(&l->bg_pending, 1);
    cr__background(l->client, give_back_run, give_back_done, g);
    cr__fail(CR_OK, "%s", keep); /* the caller's detail stays */
}

cr_status
cr__lock_acquire(cr_lock *l, int64_t tid, int64_t wait_ms, int64_t lease_ms,
                 int64_t *extra)
{
    char owner[CR__OWNER_MAX];
    attempt_ctx a;
    cr__wait_spec spec;
    char *channel;
    int64_t yield_start;
    bool turned, give_up_later = false, undo_later = false;
    bool resolve_later = false;
    cr_status sync, rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    if ((rc = check_wait(wait_ms)) != CR_OK || (rc = check_lease(lease_ms)) != CR_OK)
        goto out;
    cr__call_wait(l->client, wait_ms);
    yield_start = cr__now_ms();
    turned = yield_first(l, wait_ms);
    if (l->ops->acquire_all != NULL) {
        rc = l->ops->acquire_all(l, tid, wait_ms, lease_ms);
        goto out;
    }
    l->ops->owner(l, tid, owner);
    channel = l->ops->spin ? NULL : l->ops->channel(l, owner);
    if (channel == NULL && !l->ops->spin) {
        rc = CR_ENOMEM;
        goto out;
    }
    a.lock = l;
    a.owner = owner;
    /* Redisson would pass the object's current lease (the last explicit
     * one) here; a short leftover lease could then expire before the first
     * renewal, so a lease-less hold always asks for the watchdog timeout. */
    a.lease_ms = lease_ms > 0 ? lease_ms : l->client->watchdog_timeout_ms;
    a.wait_ms = wait_ms;
    a.uncertain = false;
    a.extra = 0;
    a.attempts = 0;
    a.sent_ms = cr__now_ms();
    a.gen = cr__topology_generation(l->client->topology);
    a.cmd = (cr__cmd){0};
    spec.channel = channel;
    spec.mode = l->ops->wake_mode;
    /* The turn let to others came out of the wait budget (at least one
     * attempt is still made). */
    spec.wait_ms = wait_ms;
    if (wait_ms > 0)
        spec.wait_ms = wait_ms > cr__now_ms() - yield_start
                           ? wait_ms - (cr__now_ms() - yield_start)
                           : 0;
    spec.min_sleep_ms = l->ops->min_sleep_ms;
    spec.max_sleep_ms = l->ops->max_sleep_ms;
    spec.trust_open = false;
    /* Not when it holds the lock already: a reentrant lock() must not wait
     * behind the threads that wait for this very hold. */
    spec.in_line = l->ops->in_line &&
                   cr__hold_count(l->client->renewal, l->ops->hold_kind,
                                  l->raw, owner, NULL) == 0;
    spec.attempt = attempt;
    spec.ctx = &a;
    rc = cr__wait(l->client, &spec);
    if (turned && a.attempts > 0)
        tune_turn(l, rc == CR_OK && a.attempts == 1);
    if (rc == CR_OK && (sync = a.cmd.sync) != CR_OK) {
        char why[256];
        int ignored;

        /* Redisson's checkLockSyncedSlaves: a grant no replica has seen
         * could vanish in a failover; undo it and say so (a server that
         * refuses WAIT too: the check cannot work there). */
        snprintf(why, sizeof(why), "%s", cr_last_error());
        if (l->ops->unlock(l, owner, a.lease_ms, &ignored) != CR_OK)
            undo_later = true;
        rc = cr__fail(sync, "%s %s: %s; the acquisition was undone",
                      l->ops->kind, l->name, why);
    }
    if ((rc == CR_EIO || rc == CR_BUSY) && a.uncertain) {
        bool acquired = false;
        int64_t patience = cr__call_patience_set(cr__now_ms());

        /* One look if a connection is at hand; else in the background. */
        if (resolve_lost_reply(&a, &acquired) != CR_OK) {
            resolve_later = true;
        } else if (acquired) {
            CR__STAT_ADD(&l->client->stats, acquisitions, 1);
            a.extra = 0;
            rc = CR_OK;
        }
        cr__call_patience_set(patience);
    }
    free(channel);
    if (rc == CR_OK && atomic_load(&l->client->closing)) {
        int ignored;

        /* Granted while the client is being freed: the caller could not
         * release it any more; give it back now, within the free's grace. */
        l->ops->unlock(l, owner, a.lease_ms, &ignored);
        rc = cr__fail(CR_ECLOSED, "the client is being freed (the lock, "
                      "granted meanwhile, was given back)");
    } else if (rc == CR_OK) {
        rc = cr__hold_add(l->client->renewal, l->ops->hold_kind, l->raw, owner,
                          l->aux, tid, lease_ms == CR_LEASE_WATCHDOG,
                          cr__lease_valid_until(a.sent_ms, a.lease_ms),
                          l->lost_fn, l->lost_userdata);
        if (rc != CR_OK) {
            int ignored;

            /* Nobody would renew or remember it: give it back. */
            l->ops->unlock(l, owner, a.lease_ms, &ignored);
        } else {
            if (cr__topology_generation(l->client->topology) != a.gen)
                /* The master moved since: is the hold on the new one? */
                cr__hold_verify(l->client->renewal, l->ops->hold_kind, l->raw,
                                owner);
            if (lease_ms > 0)
                atomic_store(&l->lease_ms, lease_ms);
            atomic_store(&l->acquired_us, cr__now_us());
            if (extra != NULL)
                *extra = a.extra;
        }
    } else if (l->ops->give_up != NULL &&
               l->ops->give_up(l, owner, wait_ms) != CR_OK) {
        give_up_later = true;
    }
    if (rc != CR_OK && rc != CR_ECLOSED &&
        (give_up_later || undo_later || resolve_later))
        leave_to_background(l, owner, a.lease_ms, wait_ms, give_up_later,
                            undo_later, resolve_later);
out:
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_lock(cr_lock *l, int64_t lease_ms)
{
    return cr__lock_acquire(l, cr_thread_id(), CR_WAIT_FOREVER, lease_ms, NULL);
}

cr_status
cr_lock_try_lock(cr_lock *l, int64_t wait_ms, int64_t lease_ms)
{
    return cr__lock_acquire(l, cr_thread_id(), wait_ms, lease_ms, NULL);
}

cr_status
cr_lock_lock_tid(cr_lock *l, int64_t tid, int64_t lease_ms)
{
    return cr__lock_acquire(l, tid, CR_WAIT_FOREVER, lease_ms, NULL);
}

cr_status
cr_lock_try_lock_tid(cr_lock *l, int64_t tid, int64_t wait_ms, int64_t lease_ms)
{
    return cr__lock_acquire(l, tid, wait_ms, lease_ms, NULL);
}

/* ------------------------------------------------------------ releasing */

/* Unlock shared by cr_lock_unlock and cr_lock_unlock_tid. */
static cr_status
release(cr_lock *l, int64_t tid)
{
    char owner[CR__OWNER_MAX];
    cr__renewal *r;
    int64_t local, lease, sent;
    int result = 0;
    bool lost = false;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    if (l->ops->release_all != NULL) {
        rc = l->ops->release_all(l, tid);
        cr__client_leave(l->client);
        return rc;
    }
    r = l->client->renewal;
    l->ops->owner(l, tid, owner);
    local = cr__hold_count(r, l->ops->hold_kind, l->raw, owner, &lost);
    cr__hold_releasing(r, l->ops->hold_kind, l->raw, owner);
    lease = atomic_load(&l->lease_ms);
    sent = cr__now_ms();
    rc = l->ops->unlock(l, owner, lease, &result);
    if (rc == CR_OK) {
        cr__hold_release(r, l->ops->hold_kind, l->raw, owner, result == 1,
                         cr__lease_valid_until(sent, lease));
    } else if (rc == CR_ENOTOWNER && local > 0) {
        if (!lost)
            CR__STAT_ADD(&l->client->stats, leases_lost, 1);
        cr__hold_release(r, l->ops->hold_kind, l->raw, owner, true, -1);
        rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had expired or was "
                      "removed before this unlock", l->ops->kind, l->name, owner);
    } else {
        /* As Redisson: a failed unlock still takes one renewal count, so a
         * lock whose unlock cannot reach Redis expires instead of being
         * renewed forever. */
        cr__hold_release(r, l->ops->hold_kind, l->raw, owner, false, -1);
        if (lost && local > 0) {
            char why[256];

            /* What the holder must hear first: it had lost the lock. */
            snprintf(why, sizeof(why), "%s", cr_last_error());
            rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had been lost, and "
                          "the unlock failed too: %s", l->ops->kind, l->name,
                          owner, why);
        }
    }
    if (rc != CR_OK || result == 1)
        atomic_store(&l->lease_ms, l->client->watchdog_timeout_ms);
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_unlock(cr_lock *l)
{
    return release(l, cr_thread_id());
}

cr_status
cr_lock_unlock_tid(cr_lock *l, int64_t tid)
{
    return release(l, tid);
}

cr_status
cr_lock_force_unlock(cr_lock *l, bool *unlocked)
{
    bool done = false;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    rc = l->ops->force_unlock(l, &done);
    if (rc == CR_OK) {
        cr__hold_drop_key(l->client->renewal, l->ops->hold_kind, l->raw);
        atomic_store(&l->lease_ms, l->client->watchdog_timeout_ms);
        if (unlocked != NULL)
            *unlocked = done;
    }
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_delete(cr_lock *l, bool *deleted)
{
    bool done = false;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    rc = l->ops->delete_(l, &done);
    if (rc == CR_OK) {
        cr__hold_drop_key(l->client->renewal, l->ops->hold_kind, l->raw);
        atomic_store(&l->lease_ms, l->client->watchdog_timeout_ms);
        if (deleted != NULL)
            *deleted = done;
    }
    cr__client_leave(l->client);
    return rc;
}

/* -------------------------------------------------------------- queries */

cr_status
cr_lock_is_locked(cr_lock *l, bool *locked)
{
    bool v = false;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    if (locked == NULL)
        rc = cr__fail(CR_EINVAL, "locked is NULL");
    else if ((rc = l->ops->is_locked(l, &v)) == CR_OK)
        *locked = v;
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_get_hold_count_tid(cr_lock *l, int64_t tid, int64_t *count)
{
    char owner[CR__OWNER_MAX];
    int64_t n = 0;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    if (count == NULL) {
        rc = cr__fail(CR_EINVAL, "count is NULL");
    } else {
        l->ops->owner(l, tid, owner);
        if ((rc = l->ops->hold_count(l, owner, &n)) == CR_OK)
            *count = n;
    }
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_get_hold_count(cr_lock *l, int64_t *count)
{
    return cr_lock_get_hold_count_tid(l, cr_thread_id(), count);
}

cr_status
cr_lock_is_held_by_thread(cr_lock *l, int64_t tid, bool *held)
{
    int64_t n = 0;
    cr_status rc;

    if (held == NULL)
        return cr__fail(CR_EINVAL, "held is NULL");
    rc = cr_lock_get_hold_count_tid(l, tid, &n);
    if (rc == CR_OK)
        *held = n > 0;
    return rc;
}

cr_status
cr_lock_is_held_by_current_thread(cr_lock *l, bool *held)
{
    return cr_lock_is_held_by_thread(l, cr_thread_id(), held);
}

cr_status
cr_lock_remain_time_to_live(cr_lock *l, int64_t *ttl_ms)
{
    const char *argv[2] = {"PTTL", NULL};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    argv[1] = l->raw;
    if (ttl_ms == NULL)
        rc = cr__fail(CR_EINVAL, "ttl_ms is NULL");
    else if (l->ops->acquire_all != NULL)
        rc = cr__fail(CR_ENOTSUP, "a %s has no single time to live", l->ops->kind);
    else if ((rc = cr__command_retry(l->client, 2, argv, NULL,
                               &r)) == CR_OK &&
             (rc = cr__reply_i64(r, "PTTL", &v)) == CR_OK)
        *ttl_ms = v;
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_is_lost_tid(cr_lock *l, int64_t tid, bool *lost)
{
    char owner[CR__OWNER_MAX];
    bool v = false;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    if (lost == NULL) {
        rc = cr__fail(CR_EINVAL, "lost is NULL");
    } else {
        l->ops->owner(l, tid, owner);
        cr__hold_count(l->client->renewal, l->ops->hold_kind, l->raw, owner, &v);
        *lost = v;
    }
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_lease_left_tid(cr_lock *l, int64_t tid, int64_t *left_ms)
{
    char owner[CR__OWNER_MAX];
    int64_t left;
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    if (left_ms == NULL) {
        rc = cr__fail(CR_EINVAL, "left_ms is NULL");
    } else if (l->ops->acquire_all != NULL) {
        rc = cr__fail(CR_ENOTSUP, "a %s has no single lease; see "
                      "cr_multilock_get_validity", l->ops->kind);
    } else {
        l->ops->owner(l, tid, owner);
        left = cr__hold_left(l->client->renewal, l->ops->hold_kind, l->raw,
                             owner);
        if (left < 0)
            rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by %s through this "
                          "client", l->ops->kind, l->name, owner);
        else
            *left_ms = left;
    }
    cr__client_leave(l->client);
    return rc;
}

cr_status
cr_lock_lease_left(cr_lock *l, int64_t *left_ms)
{
    return cr_lock_lease_left_tid(l, cr_thread_id(), left_ms);
}

cr_status
cr_lock_is_lost(cr_lock *l, bool *lost)
{
    return cr_lock_is_lost_tid(l, cr_thread_id(), lost);
}

cr_status
cr_lock_set_lost_callback(cr_lock *l, cr_lock_lost_fn fn, void *userdata)
{
    cr_status rc = cr__lock_enter(l);

    if (rc != CR_OK)
        return rc;
    l->lost_fn = fn;
    l->lost_userdata = userdata;
    cr__client_leave(l->client);
    return CR_OK;
}

/* ---------------------------------------------------------------- RLock */

void
cr__lock_owner_plain(const cr_lock *l, int64_t tid, char *out)
{
    cr__name_owner(l->client->id, tid, false, out);
}

char *
cr__lock_channel_plain(cr_lock *l, const char *owner)
{
    (void)owner;
    return strdup(l->channel);
}

cr_status
cr__lock_acquire_reply(cr_lock *l, cr_status rc, cr__reply *r, int64_t *hint)
{
    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_NIL)
        rc = CR_OK;
    else if (cr__reply_int(r, hint))
        rc = CR_BUSY;
    else
        rc = cr__fail(CR_ESCRIPT, "%s acquire replied neither nil nor a ttl",
                      l->ops->kind);
    cr__reply_free(r);
    return rc;
}

/* RLock acquire: nil when acquired, else the PTTL hint. */
cr_status
cr__lock_acquire_plain(cr_lock *l, cr__cmd *cmd, const char *owner,
                       int64_t lease_ms, int64_t wait_ms, int64_t *hint)
{
    cr__reply *r = NULL;
    cr_status rc;

    (void)wait_ms;
    rc = cr__run_lock_acquire(l->client, cmd, &(cr__lock_acquire_args){
        .lock = l->raw, .lease_ms = lease_ms, .owner = owner}, &r);
    return cr__lock_acquire_reply(l, rc, r, hint);
}

/* A turn: yield_rtts unlock round trips (cr__turn_us). A yield that
 * counts releases lasts at most YIELD_COUNT_MAX_US. */
#define YIELD_COUNT_MAX_US 200000

/* Maps an unlock script's reply (nil, 0, 1, -n for "released, n heard
 * it", or the fair lock's 2) to a status and *result, drops the latch as
 * Redisson does and frees reply. *heard gets n (0 otherwise). */
static cr_status
unlock_reply(cr_lock *l, cr__reply *r, const char *latch, int *result,
             int64_t *heard)
{
    int64_t v;
    cr_status rc;

    *heard = 0;
    if (r->type == CR__REPLY_NIL)
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this owner",
                      l->ops->kind, l->name);
    else if (cr__reply_int(r, &v) && v <= 1 && v > -1000000000) {
        *result = v != 0;
        *heard = v < 0 ? -v : 0;
        rc = CR_OK;
    } else if (cr__reply_int(r, &v) && v == 2)
        rc = cr__fail(CR_ENOTOWNER, "%s %s was not held by anyone (the head "
                      "waiter was woken)", l->ops->kind, l->name);
    else
        rc = cr__fail(CR_ESCRIPT, "unlock replied neither nil, 0 nor 1");
    cr__reply_free(r);
    cr__drop_latch(l->client, latch);
    return rc;
}

/* After an unlock sent at `sent_us` whose message `heard` subscribers
 * received, this handle's next acquisition lets the waiters it woke go
 * first. Waiters in other processes (every subscriber but this client):
 * it waits until it has read as many releases on the channel after its
 * own, so that a process that keeps taking the lock re-enters behind those
 * that waited, as in a queue. Each of them is given two of this handle's
 * own cycles (its hold and a turn of yield_rtts unlock round trips), at most
 * YIELD_COUNT_MAX_US in all, and the yield ends as soon as no release
 * came for two cycles (they left). Its own release is counted too, unless
 * already read: a release read since the unlock was sent can only be its
 * own, as the lock was held until then. Waiters of this client only
 * (woken one at a time): one turn. */
static void
yield_to_waiters(cr_lock *l, int64_t heard, int64_t sent_us)
{
    uint64_t released = 0;
    int64_t read_at = 0, now = cr__now_us(), turn, cycle, whole;
    int local = cr__pubsub_waiters(l->client->pubsub, l->channel, &released,
                                   &read_at, NULL);
    int64_t others = heard - (local >= 0 ? 1 : 0);

    if (others <= 0 && (local <= 0 || l->ops->in_line))
        return; /* this client's waiters: its next wait joins their line */
    turn = cr__turn_us(others > 0 ? atomic_load(&l->yield_rtts) : YIELD_RTTS_MIN,
                       now - sent_us);
    cycle = turn + now - atomic_load(&l->acquired_us);
    cycle = cycle > YIELD_COUNT_MAX_US ? YIELD_COUNT_MAX_US : cycle;
    whole = others > 0 ? 2 * others * cycle : turn;
    whole = whole > YIELD_COUNT_MAX_US ? YIELD_COUNT_MAX_US : whole;
    if (others > 0)
        released += (uint64_t)others + (read_at >= sent_us ? 0 : 1);
    atomic_store(&l->yield_turn_us, turn);
    atomic_store(&l->yield_quiet_us, 2 * cycle);
    atomic_store(&l->yield_target, others > 0 ? released : 0);
    atomic_store(&l->yield_until_us, now + whole);
}

cr_status
cr__unlock_begin(cr_lock *l, cr__unlock *u)
{
    u->cmd = (cr__cmd){.flags = CR__CMD_RETRY | CR__CMD_SYNC};
    u->latch_ms = l->client->latch_timeout_ms;
    u->started_us = cr__now_us();
    u->latch = cr__name(CR__NAME_UNLOCK_LATCH, l->raw);
    return u->latch != NULL ? CR_OK : cr__fail(CR_ENOMEM, "out of memory");
}

cr_status
cr__unlock_end(cr_lock *l, cr__unlock *u, cr_status rc, cr__reply *r,
               int *result)
{
    int64_t heard;

    if (rc == CR_OK && (rc = unlock_reply(l, r, u->latch, result, &heard)) == CR_OK)
        yield_to_waiters(l, heard, u->started_us);
    free(u->latch);
    return rc;
}

cr_status
cr__lock_unlock_plain(cr_lock *l, const char *owner, int64_t lease_ms,
                      int *result)
{
    cr__unlock u;
    cr__reply *r = NULL;
    cr_status rc = cr__unlock_begin(l, &u);

    if (rc != CR_OK)
        return rc;
    rc = cr__run_lock_unlock(l->client, &u.cmd, &(cr__lock_unlock_args){
        .lock = l->raw, .channel = l->channel, .latch = u.latch, .message = 0,
        .lease_ms = lease_ms, .owner = owner, .publish = l->client->publish_cmd,
        .latch_ms = u.latch_ms}, &r);
    return cr__unlock_end(l, &u, rc, r, result);
}

cr_status
cr__lock_force_unlock_plain(cr_lock *l, bool *done)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__run_lock_force_unlock(l->client, &cmd,
        &(cr__lock_force_unlock_args){.lock = l->raw, .channel = l->channel,
                                      .message = 0,
                                      .publish = l->client->publish_cmd},
        &r);

    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "force unlock", &v);
    *done = v == 1;
    return rc;
}

cr_status
cr__lock_is_locked_plain(cr_lock *l, bool *locked)
{
    const char *argv[2] = {"EXISTS", l->raw};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__command_retry(l->client, 2, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "EXISTS", &v);
    *locked = v > 0;
    return rc;
}

cr_status
cr__lock_hold_count_plain(cr_lock *l, const char *owner, int64_t *count)
{
    const char *argv[3] = {"HGET", l->raw, owner};
    cr__reply *r = NULL;
    cr_status rc = cr__command_retry(l->client, 3, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_NIL)
        *count = 0;
    else if (!cr__reply_int(r, count))
        rc = cr__fail(CR_ESCRIPT, "hold count of %s is not a number", owner);
    cr__reply_free(r);
    return rc;
}

static const cr__lock_ops plain_ops = {
    .kind = "lock",
    .hold_kind = CR__HOLD_PLAIN,
    .wake_mode = CR__WAKE_LOCK,
    .min_sleep_ms = 1,
    .max_sleep_ms = -1,
    .in_line = true,
    .owner = cr__lock_owner_plain,
    .acquire = cr__lock_acquire_plain,
    .unlock = cr__lock_unlock_plain,
    .force_unlock = cr__lock_force_unlock_plain,
    .delete_ = cr__lock_force_unlock_plain,
    .is_locked = cr__lock_is_locked_plain,
    .hold_count = cr__lock_hold_count_plain,
    .channel = cr__lock_channel_plain,
};

cr_status
cr_lock_new(cr_client *c, const char *name, cr_lock **out)
{
    return cr__lock_create(c, name, &plain_ops, out);
}
