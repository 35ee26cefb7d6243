/* SPDX-License-Identifier: MIT */
/*
 * RLock behaviour against a real redis-server: exclusion, reentrancy,
 * leases, the watchdog, lost leases, waking waiters, thread ids, fork, bad
 * arguments, and the client's life cycle; and the watchdog's batch planner
 * (src/renewal.h), which needs no server.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock_common.h"
#include "renewal.h"
#include "slot.h"

/* ------------------------------------------------------------- helpers */

typedef struct waiter {
    cr_lock *lock;
    int64_t wait_ms;
    int64_t lease_ms;
    int64_t hold_ms;     /* how long it keeps the lock before unlocking;
                            -1: turn_hold[n] as the n-th in turn */
    cr_status rc;
    int64_t acquired_at; /* monotonic ms, 0 when not */
    int64_t released_at; /* just before its unlock */
    atomic_bool holding;
    bool unlock_after;
    pthread_t thread;
} waiter;

/* The holds of waiters started by start_waiting_clients, in the order in
 * which they get the lock (file scope: a failed test leaves its waiters
 * running). */
#define TURNS 16
static int64_t turn_hold[TURNS];
static atomic_int turns;

/* Thread body: try_lock with the waiter's budget, record when it got it,
 * hold it hold_ms (the work done under the lock) and give it back. */
static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, w->wait_ms, w->lease_ms);
    if (w->rc == CR_OK) {
        w->acquired_at = cr_test_now_ms();
        atomic_store(&w->holding, true);
        if (w->hold_ms < 0) {
            int n = atomic_fetch_add(&turns, 1);

            w->hold_ms = n < TURNS ? turn_hold[n] : 0;
        }
        if (w->hold_ms > 0)
            usleep((useconds_t)w->hold_ms * 1000);
        w->released_at = cr_test_now_ms();
        if (w->unlock_after)
            w->rc = cr_lock_unlock(w->lock);
    }
    return NULL;
}

/* Starts a waiter that holds the lock hold_ms once it has it. */
static void
waiter_start_holding(waiter *w, cr_lock *l, int64_t wait_ms, int64_t hold_ms)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->wait_ms = wait_ms;
    w->lease_ms = CR_LEASE_WATCHDOG;
    w->hold_ms = hold_ms;
    atomic_init(&w->holding, false);
    w->unlock_after = true;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

static void
waiter_start(waiter *w, cr_lock *l, int64_t wait_ms)
{
    waiter_start_holding(w, l, wait_ms, 0);
}

/* -------------------------------------------------------- basic contract */

static void
test_lock_try_lock_acquires_a_free_lock(void **state)
{
    cr_lock *l;
    bool held = false, locked = false;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "free", &l), CR_OK);
    assert_string_equal(cr_lock_name(l), "free");
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_is_locked(l, &locked), CR_OK);
    assert_true(locked);
    assert_int_equal(cr_lock_is_held_by_current_thread(l, &held), CR_OK);
    assert_true(held);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_is_locked(l, &locked), CR_OK);
    assert_false(locked);
    cr_lock_free(l);
}

static void
test_lock_try_lock_returns_busy_when_held_by_other_client(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *mine, *theirs;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_lock_new(test_client, "busy", &mine), CR_OK);
    assert_int_equal(cr_lock_new(other, "busy", &theirs), CR_OK);
    assert_int_equal(cr_lock_lock(theirs, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(mine, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    assert_int_equal(cr_lock_try_lock(mine, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
}

static void
test_lock_reentrant_holds_are_counted_and_released_one_by_one(void **state)
{
    cr_lock *l;
    int64_t n = -1;
    bool locked = false;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "reentrant", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_int_equal(n, 3);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_is_locked(l, &locked), CR_OK);
    assert_true(locked);
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_is_locked(l, &locked), CR_OK);
    assert_false(locked);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    cr_lock_free(l);
}

static void *
unlock_from_thread(void *arg)
{
    return (void *)(intptr_t)cr_lock_unlock(arg);
}

static void
test_lock_unlock_by_another_thread_or_client_is_refused(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *l, *theirs;
    pthread_t t;
    void *ret;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "owned", &l), CR_OK);
    assert_int_equal(cr_lock_new(other, "owned", &theirs), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(pthread_create(&t, NULL, unlock_from_thread, l), 0);
    pthread_join(t, &ret);
    assert_int_equal((cr_status)(intptr_t)ret, CR_ENOTOWNER);
    /* Same thread id, other client: a different owner. */
    assert_int_equal(cr_lock_unlock(theirs), CR_ENOTOWNER);
    assert_int_equal(redis_int("HGET owned %s:%lld", cr_client_id(test_client),
                               (long long)cr_thread_id()), 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_lock_free(theirs);
    cr_client_free(other);
}

static void
test_lock_explicit_thread_id_locks_on_one_thread_and_unlocks_on_another(void **state)
{
    cr_lock *l;
    bool held = false;
    int64_t n = 0;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "tid", &l), CR_OK);
    assert_int_equal(cr_lock_lock_tid(l, -77, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock_tid(l, -77, 0, 5000), CR_OK);
    assert_int_equal(cr_lock_is_held_by_thread(l, -77, &held), CR_OK);
    assert_true(held);
    assert_int_equal(cr_lock_is_held_by_current_thread(l, &held), CR_OK);
    assert_false(held);
    assert_int_equal(cr_lock_get_hold_count_tid(l, -77, &n), CR_OK);
    assert_int_equal(n, 2);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    assert_int_equal(cr_lock_unlock_tid(l, -77), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(l, -77), CR_OK);
    assert_int_equal(redis_int("EXISTS tid"), 0);
    cr_lock_free(l);
}

/* ---------------------------------------------------------------- leases */

static void
test_lock_explicit_lease_expiry_frees_the_lock_and_unlock_reports_lost(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *l, *theirs;
    /* The lease must outlast the look at it below. */
    const int64_t lease = slow(300);
    int64_t ttl = 0, start;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "lease", &l), CR_OK);
    assert_int_equal(cr_lock_new(other, "lease", &theirs), CR_OK);
    /* Counted from before the lock: the lease ends at least `lease` after
     * it, however long the steps up to the other's wait take. */
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_lock(l, lease), CR_OK);
    assert_int_equal(cr_lock_remain_time_to_live(l, &ttl), CR_OK);
    assert_true(ttl > 0 && ttl <= lease);
    assert_int_equal(cr_lock_try_lock(theirs, slow(5000), CR_LEASE_WATCHDOG), CR_OK);
    assert_true(cr_test_now_ms() - start >= lease / 2);
    /* The first holder learns its lease is gone, distinctly. */
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    cr_lock_free(l);
    cr_lock_free(theirs);
    cr_client_free(other);
}

/* The watchdog timeout of the tests below whose holds must be renewed
 * without a break. A renewal is sent every third of it, so a renewing
 * thread that stalls for more than two thirds of it lets the key expire:
 * test_client's 300 ms left 200 ms, which a loaded machine outran. 1 s
 * leaves 667 ms; runs scaled by slow() get 3 s. */
static int64_t
renewed_timeout(void)
{
    return slow(300) > 1000 ? slow(300) : 1000;
}

static void
test_lock_watchdog_keeps_lock_alive_for_several_timeouts(void **state)
{
    const int64_t timeout = renewed_timeout();
    cr_client *c = new_client(timeout);
    cr_lock *l;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    int64_t end;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "watched", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    /* Five watchdog timeouts; the key must never vanish. */
    end = cr_test_now_ms() + 5 * timeout;
    while (cr_test_now_ms() < end) {
        long long ttl = redis_int("PTTL watched");

        assert_true(ttl > 0 && ttl <= timeout);
        usleep(20000);
    }
    assert_int_equal(cr_client_stats_get(c, &st), CR_OK);
    assert_true(st.renewals_sent >= 4);
    assert_int_equal(st.leases_lost, 0);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_lock_watchdog_stops_renewing_after_unlock(void **state)
{
    cr_lock *l;
    cr_client_stats before = CR_CLIENT_STATS_INIT, after = CR_CLIENT_STATS_INIT;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "stopped", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS stopped"), 0);
    assert_int_equal(cr_client_stats_get(test_client, &before), CR_OK);
    usleep(400000); /* several renewal periods must pass with nothing sent */
    assert_int_equal(cr_client_stats_get(test_client, &after), CR_OK);
    assert_true(after.renewals_sent == before.renewals_sent);
    assert_int_equal(redis_int("EXISTS stopped"), 0);
    cr_lock_free(l);
}

static void
test_lock_hold_left_by_a_slow_reentrant_unlock_stays_renewed(void **state)
{
    cr_client *c = new_client(renewed_timeout());
    bool lost = true;
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "slow-unlock", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    /* The unlock takes 200 ms (writes paused): the client's only renewal is
     * off meanwhile, and its watchdog thread goes idle. Once the unlock is
     * answered, the hold left must be renewed again, not left to expire. */
    assert_true(redis_ok("CLIENT PAUSE 200 WRITE"));
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    await_more_renewals(c, 3);
    assert_true(redis_int("PTTL slow-unlock") > 0);
    assert_int_equal(cr_lock_is_lost(l, &lost), CR_OK);
    assert_false(lost);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_lock_lease_hold_left_by_a_watchdog_reentry_expires_by_its_lease(void **state)
{
    cr_lock *l;
    /* The lease must outlast the steps up to the look at it below by more
     * than test_client's watchdog timeout (300 ms). */
    const int64_t lease = slow(1000);
    int64_t taken;
    long long ttl;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "leased-outer", &l), CR_OK);
    /* Counted from before the lock: the key lives `lease` from it at
     * least, however long the steps up to the unlock take. */
    taken = cr_test_now_ms();
    assert_int_equal(cr_lock_lock(l, lease), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    /* The inner, watchdog hold goes: the outer one had a 1 s lease, and
     * nothing renews it any more (Redisson stops renewing there too). */
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    ttl = redis_int("PTTL leased-outer");
    assert_true(ttl > 300 && ttl <= lease);
    assert_true(cr_test_wait_until(key_gone, "leased-outer", slow(3000)));
    assert_true(cr_test_now_ms() - taken >= lease - 300);
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    cr_lock_free(l);
}

static void
test_lock_watchdog_hold_under_a_lease_reentry_keeps_being_renewed(void **state)
{
    cr_client *c = new_client(renewed_timeout());
    bool lost = true;
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "watched-outer", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, 400), CR_OK);
    /* The inner, leased hold goes; the outer one was taken without a lease
     * and stays renewed (Redisson would stop, and let it expire by the
     * 400 ms its unlock sets). */
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    await_more_renewals(c, 3);
    assert_true(redis_int("PTTL watched-outer") > 0);
    assert_int_equal(cr_lock_is_lost(l, &lost), CR_OK);
    assert_false(lost);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS watched-outer"), 0);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_lock_lost_is_reported_when_key_deleted_behind_the_holder(void **state)
{
    lost_record rec = LOST_RECORD_INIT;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_lock *l;
    bool lost = true;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "stolen", &l), CR_OK);
    assert_int_equal(cr_lock_set_lost_callback(l, on_lost, &rec), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_is_lost(l, &lost), CR_OK);
    assert_false(lost);
    assert_int_equal(redis_int("DEL stolen"), 1);
    assert_true(cr_test_wait_until(lock_is_lost, l, slow(3000)));
    assert_true(cr_test_wait_until(lost_called, &rec, slow(3000)));
    pthread_mutex_lock(&rec.mu);
    assert_int_equal(rec.calls, 1);
    assert_string_equal(rec.name, "stolen");
    assert_int_equal(rec.tid, cr_thread_id());
    pthread_mutex_unlock(&rec.mu);
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    assert_int_equal(st.leases_lost, 1);
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    assert_int_equal(cr_lock_is_lost(l, &lost), CR_OK);
    assert_false(lost);
    cr_lock_free(l);
}

/* A hold deleted behind its holder and unlocked before the watchdog or
 * the lease clock noticed: the unlock reports it lost, callback first. */
static void
test_lock_unlock_that_finds_the_hold_gone_calls_the_callback_first(void **state)
{
    lost_record rec = LOST_RECORD_INIT;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "gone-at-unlock", &l), CR_OK);
    assert_int_equal(cr_lock_set_lost_callback(l, on_lost, &rec), CR_OK);
    assert_int_equal(cr_lock_lock(l, 60000), CR_OK);
    assert_int_equal(redis_int("DEL gone-at-unlock"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    pthread_mutex_lock(&rec.mu);
    assert_int_equal(rec.calls, 1);
    assert_string_equal(rec.name, "gone-at-unlock");
    pthread_mutex_unlock(&rec.mu);
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    assert_int_equal(st.leases_lost, 1);
    cr_lock_free(l);
}

/* A lost callback that takes 300 ms, then says it returned. */
static void
slow_lost_callback(void *userdata, const char *name, int64_t tid)
{
    atomic_int *state = userdata;

    (void)name;
    (void)tid;
    atomic_store(state, 1);
    usleep(300000); /* the work of a slow callback */
    atomic_store(state, 2);
}

static bool
callback_running(void *arg)
{
    return atomic_load((atomic_int *)arg) >= 1;
}

static void
test_lock_unlock_returns_after_a_due_lost_callback_returned(void **state)
{
    atomic_int cb = 0;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "lost-slowly", &l), CR_OK);
    assert_int_equal(cr_lock_set_lost_callback(l, slow_lost_callback, &cb),
                     CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("DEL lost-slowly"), 1);
    assert_true(cr_test_wait_until(callback_running, &cb, slow(3000)));
    /* Its userdata (cb) may go once the unlock returns: the callback must
     * be over by then. */
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    assert_int_equal(atomic_load(&cb), 2);
    cr_lock_free(l);
}

static void
test_lock_delete_resets_the_lease_to_the_watchdog_timeout(void **state)
{
    long long ttl;
    cr_lock *l;
    bool deleted = false;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "deleted", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 10000), CR_OK);
    assert_int_equal(cr_lock_delete(l, &deleted), CR_OK);
    assert_true(deleted);
    assert_int_equal(redis_int("EXISTS deleted"), 0);
    /* As Redisson's delete(): the next lease-less hold uses the watchdog
     * timeout (300 ms here), not the 10 s of the explicit lease before. */
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    ttl = redis_int("PTTL deleted");
    assert_true(ttl > 0 && ttl <= 300);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

/* --------------------------------------------------------------- waking */

static void
test_lock_unlock_wakes_a_waiter_of_another_client_promptly(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *mine, *theirs;
    waiter w;
    int64_t released;

    (void)state;
    assert_int_equal(cr_lock_new(other, "handoff", &theirs), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "handoff", &mine), CR_OK);
    assert_int_equal(cr_lock_lock(theirs, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&w, mine, slow(20000));
    await_waiters_in_line("handoff", 1);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    /* The lease is 30 s: only the message explains a quick wake-up. */
    assert_true(w.acquired_at - released < slow(1000));
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
}

/* Two threads of one client wait on a lock another client holds: the
 * first to wait reads the subscriber link itself, the other sleeps. The
 * reader, woken, takes the lock and hands the link over as it stops
 * waiting; its unlock's message (the other's turn, on the other's own
 * channel over the same link) must then wake the other at once, not at
 * the dispatcher's next round, up to a second later (nothing else pokes
 * the dispatcher: the subscription keeps a waiter). Both in the lock's
 * line means both wait. */
static void
test_lock_waiter_that_read_the_link_hands_it_to_the_next(void **state)
{
    cr_client *other = new_client(30000);
    int64_t worst = 0;
    int round;

    (void)state;
    for (round = 0; round < 5; round++) {
        cr_lock *theirs, *m1, *m2;
        char name[32];
        waiter w1, w2, *first, *second;

        snprintf(name, sizeof(name), "handover%d", round);
        assert_int_equal(cr_lock_new(other, name, &theirs), CR_OK);
        assert_int_equal(cr_lock_new(test_client, name, &m1), CR_OK);
        assert_int_equal(cr_lock_new(test_client, name, &m2), CR_OK);
        assert_int_equal(cr_lock_lock(theirs, CR_LEASE_WATCHDOG), CR_OK);
        waiter_start_holding(&w1, m1, slow(20000), 20);
        waiter_start_holding(&w2, m2, slow(20000), 20);
        await_waiters_in_line(name, 2);
        assert_int_equal(cr_lock_unlock(theirs), CR_OK);
        pthread_join(w1.thread, NULL);
        pthread_join(w2.thread, NULL);
        assert_int_equal(w1.rc, CR_OK);
        assert_int_equal(w2.rc, CR_OK);
        first = w1.acquired_at <= w2.acquired_at ? &w1 : &w2;
        second = first == &w1 ? &w2 : &w1;
        if (second->acquired_at - first->released_at > worst)
            worst = second->acquired_at - first->released_at;
        cr_lock_free(theirs);
        cr_lock_free(m1);
        cr_lock_free(m2);
    }
    /* The lease is 30 s: only the message read at once explains it. */
    assert_true(worst < slow(300));
    cr_client_free(other);
}

static bool
is_holding(void *arg)
{
    return atomic_load(&((waiter *)arg)->holding);
}


typedef struct tries {
    cr_client *client[2];
    uint64_t before[2]; /* their commands when their waiters started */
} tries;

/* True once both clients made the first attempt of their waits (with the
 * subscriber count met, they are subscribed too): a release from now on
 * wakes their waiters. (A wait makes a second attempt only when it had to
 * subscribe anew.) */
static bool
both_tried(void *arg)
{
    tries *t = arg;

    return commands_of(t->client[0]) >= t->before[0] + 1 &&
           commands_of(t->client[1]) >= t->before[1] + 1;
}

/* Makes `l` (of test_client) wait once while `other` holds the same lock,
 * so that test_client stays subscribed to its channel for a while
 * (LINGER_MS in pubsub.c); returns with `l` held. */
static void
take_after_a_wait(cr_lock *l, cr_lock *other)
{
    waiter first;

    waiter_start_holding(&first, other, CR_WAIT_FOREVER, 50);
    assert_true(cr_test_wait_until(is_holding, &first, 3000));
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    pthread_join(first.thread, NULL);
    assert_int_equal(first.rc, CR_OK);
}

/* A process that takes the lock again right after its unlock goes behind
 * the waiters of two other processes in the lock's waiting line: both
 * have their turn first, as in a queue, however quick it is. */
static void
test_lock_releaser_lets_every_woken_process_go_first(void **state)
{
    cr_client *b = new_client(30000), *c = new_client(30000);
    cr_lock *la, *lb, *lc;
    int round;

    (void)state;
    if (slow(1) > 1) {
        cr_client_free(b);
        cr_client_free(c);
        skip();
    }
    assert_int_equal(cr_lock_new(test_client, "queue", &la), CR_OK);
    assert_int_equal(cr_lock_new(b, "queue", &lb), CR_OK);
    assert_int_equal(cr_lock_new(c, "queue", &lc), CR_OK);
    for (round = 0; round < 3; round++) {
        waiter hb, hc;
        tries t = {{b, c}, {0, 0}};
        int64_t again_at;

        take_after_a_wait(la, lc);
        /* Two other processes wait in line; then it releases and locks
         * again. */
        t.before[0] = commands_of(b);
        t.before[1] = commands_of(c);
        waiter_start_holding(&hb, lb, CR_WAIT_FOREVER, 30);
        waiter_start_holding(&hc, lc, CR_WAIT_FOREVER, 30);
        assert_true(cr_test_wait_until(line_reaches,
                                       &(line_of){"queue", 2}, 3000));
        assert_true(cr_test_wait_until(both_tried, &t, 3000));
        assert_int_equal(cr_lock_unlock(la), CR_OK);
        assert_int_equal(cr_lock_lock(la, CR_LEASE_WATCHDOG), CR_OK);
        again_at = cr_test_now_ms();
        assert_int_equal(cr_lock_unlock(la), CR_OK);
        pthread_join(hb.thread, NULL);
        pthread_join(hc.thread, NULL);
        assert_int_equal(hb.rc, CR_OK);
        assert_int_equal(hc.rc, CR_OK);
        assert_true(again_at >= hb.released_at);
        assert_true(again_at >= hc.released_at);
    }
    cr_lock_free(la);
    cr_lock_free(lb);
    cr_lock_free(lc);
    cr_client_free(b);
    cr_client_free(c);
}

/* Voluntary context switches of the calling thread so far. */
static long
own_switches(void)
{
    struct rusage ru;

    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : -1;
}

/* Starts n waiters on locks[0..n-1] (one client each), the i-th of them
 * to get the lock holding it hold_ms[i], and returns once each has made
 * its first attempt and is in the lock's waiting line. */
static void
start_waiting_clients(waiter *w, cr_lock **locks, cr_client **clients,
                      const int64_t *hold_ms, int n, const char *name)
{
    uint64_t before[TURNS];
    int i;

    assert_true(n <= TURNS);
    atomic_store(&turns, 0);
    memcpy(turn_hold, hold_ms, (size_t)n * sizeof(*hold_ms));
    for (i = 0; i < n; i++) {
        before[i] = commands_of(clients[i]);
        waiter_start_holding(&w[i], locks[i], CR_WAIT_FOREVER, -1);
    }
    for (i = 0; i < n; i++) {
        tries t = {{clients[i], clients[i]}, {before[i], before[i]}};

        assert_true(cr_test_wait_until(both_tried, &t, 3000));
    }
    assert_true(cr_test_wait_until(line_reaches, &(line_of){name, n}, 3000));
}

#define HERD 10

/* A releaser that takes the lock again behind ten waiters of other
 * processes in the lock's line is not woken by their releases: each
 * release wakes the next in line alone, and it is woken when its turn (or
 * the watch before it) comes. Measured as the voluntary context switches
 * of the thread inside lock(): eleven releases (its own and ten) and a
 * few round trips if it heard every release, a few with the line. Needs
 * real speed. */
static void
test_lock_releaser_is_woken_a_few_times_for_many_releases(void **state)
{
    cr_client *c[HERD];
    cr_lock *mine, *l[HERD];
    int64_t hold[HERD], again_at;
    waiter w[HERD];
    long switches;
    int i;

    (void)state;
    if (slow(1) > 1)
        skip();
    assert_int_equal(cr_lock_new(test_client, "herd", &mine), CR_OK);
    for (i = 0; i < HERD; i++) {
        assert_non_null(c[i] = new_client(30000));
        assert_int_equal(cr_lock_new(c[i], "herd", &l[i]), CR_OK);
        hold[i] = 5; /* the releases come 5 ms apart */
    }
    take_after_a_wait(mine, l[0]);
    start_waiting_clients(w, l, c, hold, HERD, "herd");
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    switches = own_switches();
    assert_int_equal(cr_lock_lock(mine, CR_LEASE_WATCHDOG), CR_OK);
    switches = own_switches() - switches;
    again_at = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    for (i = 0; i < HERD; i++) {
        pthread_join(w[i].thread, NULL);
        assert_int_equal(w[i].rc, CR_OK);
        assert_true(again_at >= w[i].released_at);
        cr_lock_free(l[i]);
        cr_client_free(c[i]);
    }
    cr_lock_free(mine);
    assert_true(switches >= 0);
    assert_true(switches < HERD);
}

/* The releaser that takes the lock again at once goes behind the waiter
 * its unlock gave the turn to (no barging): the waiter comes first every
 * round, however quick the releaser is. The promise lasts as long as the
 * waiter's turn (250 ms: a waiter slower than that loses its place), so
 * the test needs real speed and is skipped when CR_TEST_SLOW is set.
 * (Before the line, the releaser's yield let the waiter first in about 39
 * rounds of 40, without it about 3 of 4.) */
static void
test_lock_releaser_goes_behind_the_waiter_it_gave_the_turn(void **state)
{
    cr_client *other = new_client(30000), *third = new_client(30000);
    cr_lock *theirs, *mine;
    int round, waiter_first = 0;

    (void)state;
    if (slow(1) > 1) {
        cr_client_free(other);
        cr_client_free(third);
        skip();
    }
    assert_int_equal(cr_lock_new(other, "yield", &theirs), CR_OK);
    assert_int_equal(cr_lock_new(third, "yield", &mine), CR_OK);
    for (round = 0; round < 40; round++) {
        waiter w;
        int64_t again_at;

        assert_int_equal(cr_lock_lock(theirs, CR_LEASE_WATCHDOG), CR_OK);
        waiter_start(&w, mine, 20000);
        await_waiters_in_line("yield", 1);
        assert_int_equal(cr_lock_unlock(theirs), CR_OK);
        assert_int_equal(cr_lock_try_lock(theirs, 20000, CR_LEASE_WATCHDOG),
                         CR_OK);
        again_at = cr_test_now_ms();
        assert_int_equal(cr_lock_unlock(theirs), CR_OK);
        pthread_join(w.thread, NULL);
        assert_int_equal(w.rc, CR_OK);
        if (w.acquired_at <= again_at)
            waiter_first++;
    }
    assert_int_equal(waiter_first, 40);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
    cr_client_free(third);
}

static void
test_lock_force_unlock_wakes_a_waiter_promptly(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *mine, *theirs;
    waiter w;
    int64_t released;
    bool done = false;

    (void)state;
    assert_int_equal(cr_lock_new(other, "forced", &theirs), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "forced", &mine), CR_OK);
    assert_int_equal(cr_lock_lock(theirs, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&w, mine, slow(20000));
    await_waiters_in_line("forced", 1);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_force_unlock(mine, &done), CR_OK);
    assert_true(done);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_at - released < slow(1000));
    /* The forced-out holder finds out at its unlock. */
    assert_int_equal(cr_lock_unlock(theirs), CR_ELOST);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
}

static void
test_lock_try_lock_returns_busy_within_its_wait_budget(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *mine, *theirs;
    int64_t start, took;
    char own[160];

    (void)state;
    assert_int_equal(cr_lock_new(other, "budget", &theirs), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "budget", &mine), CR_OK);
    assert_int_equal(cr_lock_lock(theirs, CR_LEASE_WATCHDOG), CR_OK);
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(mine, 300, CR_LEASE_WATCHDOG), CR_BUSY);
    took = cr_test_now_ms() - start;
    assert_true(took >= 290);
    assert_true(took < slow(1500));
    /* The waiter that gave up left the lock's line before it returned,
     * and no subscription is left behind, on its own channel or the
     * lock's (the UNSUBSCRIBE goes out from the dispatcher thread just
     * after). */
    assert_int_equal(line_length("budget"), 0);
    snprintf(own, sizeof(own), "credisson_line__channel:{budget}:%s:%lld",
             cr_client_id(test_client), (long long)cr_thread_id());
    assert_true(cr_test_wait_until(has_no_subscriber, own, slow(2000)));
    assert_true(cr_test_wait_until(has_no_subscriber,
                                   "redisson_lock__channel:{budget}", slow(2000)));
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
}

/* ------------------------------------------------------ mutual exclusion */

#define THREADS 8
#define ROUNDS 40

static void
test_lock_mutual_exclusion_across_threads_keeps_counter_exact(void **state)
{
    shared_counter s = {.rounds = ROUNDS};
    pthread_t t[THREADS];
    int i;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "threads", &s.lock), CR_OK);
    for (i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, count_under_lock, &s), 0);
    for (i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(s.errors, 0);
    assert_int_equal(s.value, THREADS * ROUNDS);
    assert_int_equal(redis_int("EXISTS threads"), 0);
    cr_lock_free(s.lock);
}

#define LINE_THREADS 4
#define LINE_ROUNDS 60

typedef struct line {
    long acquisitions;  /* under the lock */
    long overtaken;     /* waits that K - 1 others passed more than twice */
    int errors;
} line;

typedef struct in_line {
    line *ln;
    cr_lock *lock; /* each thread its own handle, as in the benchmark */
} in_line;

/* Takes and gives back the lock LINE_ROUNDS times, counting for each wait
 * how many acquisitions by others it let pass. */
static void *
take_turns(void *arg)
{
    in_line *me = arg;
    line *ln = me->ln;
    int i;

    for (i = 0; i < LINE_ROUNDS; i++) {
        long before = __atomic_load_n(&ln->acquisitions, __ATOMIC_SEQ_CST);

        if (cr_lock_lock(me->lock, CR_LEASE_WATCHDOG) != CR_OK) {
            __atomic_add_fetch(&ln->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (ln->acquisitions - before > 2 * (LINE_THREADS - 1))
            ln->overtaken++;
        __atomic_add_fetch(&ln->acquisitions, 1, __ATOMIC_SEQ_CST);
        if (cr_lock_unlock(me->lock) != CR_OK)
            __atomic_add_fetch(&ln->errors, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* Threads of one client that wait for a lock get it in line: a thread
 * coming back for the lock does not take it between two waiting threads,
 * and a woken thread that finds it taken keeps its place. Before, 16 to
 * 27 waits of 240 let more than twice the others pass; now none. */
static void
test_lock_threads_of_one_client_wait_in_line(void **state)
{
    line ln = {0, 0, 0};
    in_line arg[LINE_THREADS];
    pthread_t t[LINE_THREADS];
    int i;

    (void)state;
    for (i = 0; i < LINE_THREADS; i++) {
        arg[i].ln = &ln;
        assert_int_equal(cr_lock_new(test_client, "in-line", &arg[i].lock), CR_OK);
    }
    for (i = 0; i < LINE_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, take_turns, &arg[i]), 0);
    for (i = 0; i < LINE_THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(ln.errors, 0);
    assert_int_equal(ln.acquisitions, LINE_THREADS * LINE_ROUNDS);
    print_message("waits passed by more than %d: %ld of %ld\n",
                  2 * (LINE_THREADS - 1), ln.overtaken, ln.acquisitions);
    /* A descheduled thread may be passed now and then. */
    assert_true(ln.overtaken <= ln.acquisitions / 20);
    for (i = 0; i < LINE_THREADS; i++)
        cr_lock_free(arg[i].lock);
}

#define HANDOFF_ROUNDS 500

typedef struct handoffs {
    cr_lock *lock;
    int errors;
    int64_t longest; /* ms inside cr_lock_lock */
} handoffs;

/* Takes and gives back the lock HANDOFF_ROUNDS times, timing each wait. */
static void *
hand_off(void *arg)
{
    handoffs *h = arg;
    int i;

    for (i = 0; i < HANDOFF_ROUNDS; i++) {
        int64_t start = cr_test_now_ms(), took;

        if (cr_lock_lock(h->lock, CR_LEASE_WATCHDOG) != CR_OK) {
            h->errors++;
            continue;
        }
        took = cr_test_now_ms() - start;
        if (took > h->longest)
            h->longest = took;
        if (cr_lock_unlock(h->lock) != CR_OK)
            h->errors++;
    }
    return NULL;
}

#define HANDOFF_CLIENTS 4

/* Four clients (each with its own subscriber link, read by its waiting
 * thread or by its dispatcher, whichever came first) pass one lock around
 * thousands of times: no wait may hang on a read of a link the other
 * reader had already drained (that waits for the command timeout, 2 s
 * here) or on a message nobody reads (the dispatcher's next round, up to
 * a second later). A releaser yields at most 200 ms. */
static void
test_lock_handoffs_between_clients_never_stall(void **state)
{
    cr_client *c[HANDOFF_CLIENTS];
    handoffs h[HANDOFF_CLIENTS];
    pthread_t t[HANDOFF_CLIENTS];
    int i;

    (void)state;
    memset(h, 0, sizeof(h));
    for (i = 0; i < HANDOFF_CLIENTS; i++) {
        c[i] = i == 0 ? test_client : new_client(30000);
        assert_int_equal(cr_lock_new(c[i], "passed", &h[i].lock), CR_OK);
    }
    for (i = 0; i < HANDOFF_CLIENTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hand_off, &h[i]), 0);
    for (i = 0; i < HANDOFF_CLIENTS; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < HANDOFF_CLIENTS; i++) {
        assert_int_equal(h[i].errors, 0);
        assert_true(h[i].longest < slow(900));
        cr_lock_free(h[i].lock);
        if (i > 0)
            cr_client_free(c[i]);
    }
}

static void
test_lock_mutual_exclusion_across_processes_keeps_counter_exact(void **state)
{
    const char *args[] = {"count", test_redis.url, "procs", "50", "counter",
                          NULL};
    pid_t pids[4];
    int i;

    (void)state;
    for (i = 0; i < 4; i++) {
        pids[i] = cr_test_spawn("lock_worker", args, NULL);
        assert_true(pids[i] > 0);
    }
    for (i = 0; i < 4; i++)
        reap_ok(pids[i]);
    assert_int_equal(redis_int("GET counter"), 200);
    assert_int_equal(redis_int("EXISTS procs"), 0);
}

/* ------------------------------------------------------------------ fork */

/* Sockets open in this process that a program it runs would inherit (no
 * close-on-exec). */
static int
sockets_passed_on_exec(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char path[64], target[64];
        ssize_t len;
        int fd = atoi(e->d_name);

        if (e->d_name[0] == '.' || fd == dirfd(d))
            continue;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        len = readlink(path, target, sizeof(target) - 1);
        if (len > 0 && strncmp(target, "socket:", 7) == 0 &&
            !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
            n++;
    }
    closedir(d);
    return n;
}

static void
test_lock_client_sockets_are_not_passed_to_programs_run(void **state)
{
    int before = sockets_passed_on_exec();
    cr_client *c = new_client(300);
    cr_lock *held, *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(test_client, "cloexec", &held), CR_OK);
    assert_int_equal(cr_lock_new(c, "cloexec", &l), CR_OK);
    assert_int_equal(cr_lock_lock(held, CR_LEASE_WATCHDOG), CR_OK);
    /* A wait opens the pub/sub link too. */
    assert_int_equal(cr_lock_try_lock(l, 100, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(sockets_passed_on_exec(), before);
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    cr_lock_free(l);
    cr_lock_free(held);
    cr_client_free(c);
}

static void
test_lock_fork_child_can_neither_release_nor_use_parent_client(void **state)
{
    cr_lock *l;
    pid_t pid;
    int fds[2];
    char seen = 'x';
    bool held = false;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "forked", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* One byte tells the parent what the child saw; the child then
         * dies by SIGKILL so that nothing of the parent's runs at exit
         * (nor valgrind's leak check of memory the parent owns). */
        char verdict = 'y';

        if (cr_lock_unlock(l) != CR_EFORKED)
            verdict = 'u';
        else if (cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG) != CR_EFORKED)
            verdict = 'l';
        if (write(fds[1], &verdict, 1) != 1)
            verdict = 'w';
        kill(getpid(), SIGKILL);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &seen, 1), 1);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    assert_int_equal(seen, 'y');
    assert_int_equal(cr_lock_is_held_by_current_thread(l, &held), CR_OK);
    assert_true(held);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

/* ------------------------------------------------------------ bad input */

static void
test_lock_bad_arguments_are_refused_with_einval(void **state)
{
    cr_lock *l = NULL;
    bool b;
    int64_t n;

    (void)state;
    assert_int_equal(cr_lock_new(NULL, "x", &l), CR_EINVAL);
    assert_int_equal(cr_lock_new(test_client, NULL, &l), CR_EINVAL);
    assert_int_equal(cr_lock_new(test_client, "", &l), CR_EINVAL);
    assert_int_equal(cr_lock_new(test_client, "x", NULL), CR_EINVAL);
    assert_null(l);
    assert_int_equal(cr_lock_new(test_client, "x", &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, -5, CR_LEASE_WATCHDOG), CR_EINVAL);
    assert_int_equal(cr_lock_try_lock(l, 0, 0), CR_EINVAL);
    assert_int_equal(cr_lock_try_lock(l, 0, -7), CR_EINVAL);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_DURATION_MAX + 1), CR_EINVAL);
    assert_int_equal(cr_lock_try_lock(l, INT64_MAX, CR_LEASE_WATCHDOG), CR_EINVAL);
    assert_int_equal(cr_lock_lock(l, INT64_MIN), CR_EINVAL);
    assert_true(strlen(cr_last_error()) > 0);
    assert_int_equal(cr_lock_is_locked(l, NULL), CR_EINVAL);
    assert_int_equal(cr_lock_get_hold_count(l, NULL), CR_EINVAL);
    assert_int_equal(cr_lock_is_held_by_current_thread(l, NULL), CR_EINVAL);
    assert_int_equal(cr_lock_remain_time_to_live(l, NULL), CR_EINVAL);
    assert_int_equal(cr_lock_is_lost(l, NULL), CR_EINVAL);
    assert_int_equal(cr_lock_unlock(NULL), CR_EINVAL);
    assert_int_equal(cr_lock_is_locked(NULL, &b), CR_EINVAL);
    assert_int_equal(cr_lock_get_hold_count(NULL, &n), CR_EINVAL);
    /* Nothing was written by the refused calls. */
    assert_int_equal(redis_int("EXISTS x"), 0);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    cr_lock_free(l);
    cr_lock_free(NULL);
    cr_client_free(NULL);
    assert_string_equal(cr_strerror(CR_ELOST),
                        "the lease was lost: the hold expired or was removed while held");
}

static void
test_lock_names_with_braces_and_huge_names_work(void **state)
{
    static const char *names[] = {"a{", "{}x", "a}b", "app{7}lock"};
    char *huge = malloc(1 << 20);
    cr_lock *l;
    size_t i;

    (void)state;
    assert_non_null(huge);
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        assert_int_equal(cr_lock_new(test_client, names[i], &l), CR_OK);
        assert_int_equal(cr_lock_try_lock(l, 0, 10000), CR_OK);
        assert_int_equal(redis_int("HLEN %s", names[i]), 1);
        assert_int_equal(cr_lock_unlock(l), CR_OK);
        cr_lock_free(l);
    }
    memset(huge, 'n', (1 << 20) - 1);
    huge[(1 << 20) - 1] = '\0';
    assert_int_equal(cr_lock_new(test_client, huge, &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, 10000), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    free(huge);
}

/* ------------------------------------------------------------ the client */

static void
test_client_new_refuses_bad_url_and_options(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    (void)state;
    o.url = "http://127.0.0.1:1";
    assert_int_equal(cr_client_new(&o, &c), CR_EINVAL);
    assert_non_null(strstr(cr_last_error(), "http"));
    o.url = test_redis.url;
    o.pool_size = -1;
    assert_int_equal(cr_client_new(&o, &c), CR_EINVAL);
    o.pool_size = 0;
    o.lock_watchdog_timeout_ms = 5;
    assert_int_equal(cr_client_new(&o, &c), CR_EINVAL);
    assert_int_equal(cr_client_new(&o, NULL), CR_EINVAL);
    assert_null(c);
}

static void
test_client_new_reports_unreachable_server_as_eio(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    cr_test_redis gone;

    (void)state;
    /* A port that was free a moment ago and has no server. */
    assert_int_equal(cr_test_redis_start(&gone, NULL), 0);
    cr_test_redis_destroy(&gone);
    o.url = gone.url;
    o.connect_timeout_ms = 500;
    assert_int_equal(cr_client_new(&o, &c), CR_EIO);
    assert_null(c);
    assert_true(strlen(cr_last_error()) > 0);
}

typedef struct forever {
    cr_lock *lock;
    cr_status rc;
} forever;

static void *
wait_forever(void *arg)
{
    forever *f = arg;

    f->rc = cr_lock_lock(f->lock, CR_LEASE_WATCHDOG);
    return NULL;
}

static void
test_client_free_wakes_waiting_threads_with_eclosed(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *theirs, *mine;
    forever f;
    pthread_t t;

    (void)state;
    assert_int_equal(cr_lock_new(other, "closing", &theirs), CR_OK);
    assert_int_equal(cr_lock_lock(theirs, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "closing", &mine), CR_OK);
    f.lock = mine;
    f.rc = CR_OK;
    assert_int_equal(pthread_create(&t, NULL, wait_forever, &f), 0);
    await_waiters_in_line("closing", 1);
    cr_client_free(test_client);
    test_client = NULL;
    pthread_join(t, NULL);
    assert_int_equal(f.rc, CR_ECLOSED);
    cr_lock_free(mine);
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    cr_lock_free(theirs);
    cr_client_free(other);
}

static void
test_client_stats_count_acquisitions_and_contended_waits(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *mine, *theirs;
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "stats", &mine), CR_OK);
    assert_int_equal(cr_lock_new(other, "stats", &theirs), CR_OK);
    assert_int_equal(cr_lock_lock(mine, 200), CR_OK);
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    assert_int_equal(cr_lock_lock(theirs, slow(150)), CR_OK);
    assert_int_equal(cr_lock_try_lock(mine, slow(5000), 200), CR_OK);
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    assert_int_equal(st.acquisitions, 2);
    assert_int_equal(st.contended_waits, 1);
    assert_true(st.wait_time_max_ms >= 50);
    assert_true(st.commands >= 4);
    assert_int_equal(cr_client_stats_get(test_client, NULL), CR_EINVAL);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
}

static void
test_client_id_is_a_uuid_and_version_is_reported(void **state)
{
    (void)state;
    assert_true(is_uuid_v4(cr_client_id(test_client)));
    assert_string_equal(cr_version_str(), CR_VERSION_STR);
    assert_int_equal(cr_version_num(), CR_VERSION_NUM);
    assert_string_equal(cr_client_id(NULL), "");
}

/* ------------------------------------------------ watchdog batches */

/* No redis needed: the watchdog's batch planner (src/renewal.h) on keys
 * made up to fall into chosen cluster slots. */

#define PLAN_KEYLEN 32
#define PLAN_BATCH 100

/* A planning case: the keys (one per due entry) and the due list. */
typedef struct plan {
    size_t n;
    char (*keys)[PLAN_KEYLEN];
    cr__due *due;
} plan;

/* Makes a plan of n entries; fill the keys, then call plan_orders. */
static void
plan_new(plan *p, size_t n)
{
    p->n = n;
    p->keys = calloc(n, PLAN_KEYLEN);
    p->due = calloc(n, sizeof(*p->due));
    assert_non_null(p->keys);
    assert_non_null(p->due);
}

static void
plan_free(plan *p)
{
    free(p->keys);
    free(p->due);
}

/* Sets every entry's key and order (entries below `plain` are plain holds,
 * the others read holds), then shuffles the due list with a fixed seed. */
static void
plan_orders(plan *p, size_t plain, bool cluster)
{
    uint32_t seed = 12345;
    size_t i;

    for (i = 0; i < p->n; i++) {
        p->due[i].key = p->keys[i];
        p->due[i].order = cr__due_order(i < plain ? CR__HOLD_PLAIN
                                                  : CR__HOLD_READ,
                                        p->keys[i], cluster);
    }
    for (i = p->n; i > 1; i--) {
        size_t j;
        cr__due tmp;

        seed = seed * 1103515245u + 12345u;
        j = (seed >> 8) % i;
        tmp = p->due[i - 1];
        p->due[i - 1] = p->due[j];
        p->due[j] = tmp;
    }
}

/* The index of the key a due entry points at. */
static size_t
plan_index(const plan *p, const cr__due *d)
{
    return (size_t)(d->key - p->keys[0]) / PLAN_KEYLEN;
}

/* Sorts the plan and walks its batches, checking what holds for every
 * plan: each entry is in exactly one batch, a batch has one kind and one
 * order, at most PLAN_BATCH plain keys or read hashes, and a hash's
 * readers are never split between batches. Returns the batch count. */
static size_t
plan_batches(plan *p)
{
    bool *seen = calloc(p->n, sizeof(*seen));
    size_t from, end, i, batches = 0;

    assert_non_null(seen);
    cr__due_sort(p->due, p->n);
    for (from = 0; from < p->n; from = end) {
        bool read = (p->due[from].order >> 16) == CR__HOLD_READ;
        size_t units = 1;

        end = cr__due_batch_end(p->due, p->n, from, PLAN_BATCH);
        assert_true(end > from && end <= p->n);
        for (i = from; i < end; i++) {
            size_t k = plan_index(p, &p->due[i]);

            assert_false(seen[k]);
            seen[k] = true;
            assert_int_equal(p->due[i].order, p->due[from].order);
            if (i > from && read &&
                strcmp(p->due[i].key, p->due[i - 1].key) != 0)
                units++;
        }
        assert_true(read ? units <= PLAN_BATCH : end - from <= PLAN_BATCH);
        if (read && end < p->n)
            assert_true(strcmp(p->due[end].key, p->due[end - 1].key) != 0);
        batches++;
    }
    for (i = 0; i < p->n; i++)
        assert_true(seen[i]);
    free(seen);
    return batches;
}

/* The number of batches a slot-grouped plan needs at best: the sum over
 * the slots of ceil(keys in the slot / PLAN_BATCH). */
static size_t
plan_best_batches(const plan *p)
{
    size_t *per = calloc(CR__SLOTS, sizeof(*per)), i, best = 0;

    assert_non_null(per);
    for (i = 0; i < p->n; i++)
        per[cr__key_slot(p->keys[i], strlen(p->keys[i]))]++;
    for (i = 0; i < CR__SLOTS; i++)
        best += (per[i] + PLAN_BATCH - 1) / PLAN_BATCH;
    free(per);
    return best;
}

static void
test_renewal_batches_in_a_cluster_hold_keys_of_one_slot(void **state)
{
    plan p;
    size_t i, from, end, batches;

    (void)state;
    /* 250 keys of one slot, 130 of another, 60 scattered. */
    plan_new(&p, 440);
    for (i = 0; i < p.n; i++)
        snprintf(p.keys[i], PLAN_KEYLEN, i < 250   ? "{alpha}:%zu"
                                         : i < 380 ? "{beta}:%zu"
                                                   : "lock:%zu", i);
    plan_orders(&p, p.n, true);
    batches = plan_batches(&p);
    for (from = 0; from < p.n; from = end) {
        const char *first = p.due[from].key;

        end = cr__due_batch_end(p.due, p.n, from, PLAN_BATCH);
        for (i = from; i < end; i++)
            assert_int_equal(cr__key_slot(p.due[i].key, strlen(p.due[i].key)),
                             cr__key_slot(first, strlen(first)));
    }
    /* As full as the slots allow: 3 + 2 + about 60 batches. */
    assert_int_equal(batches, plan_best_batches(&p));
    assert_true(batches >= 5 + 50);
    plan_free(&p);
}

static void
test_renewal_batches_outside_a_cluster_mix_slots_and_keep_order(void **state)
{
    plan p;
    cr__due *before;
    size_t i;

    (void)state;
    plan_new(&p, 440);
    for (i = 0; i < p.n; i++)
        snprintf(p.keys[i], PLAN_KEYLEN, i < 250 ? "{alpha}:%zu" : "lock:%zu",
                 i);
    plan_orders(&p, p.n, false);
    before = malloc(p.n * sizeof(*before));
    assert_non_null(before);
    memcpy(before, p.due, p.n * sizeof(*before));
    /* Full batches whatever the slots, and plain holds are not sorted. */
    assert_int_equal(plan_batches(&p), (p.n + PLAN_BATCH - 1) / PLAN_BATCH);
    for (i = 0; i < p.n; i++)
        assert_ptr_equal(p.due[i].key, before[i].key);
    free(before);
    plan_free(&p);
}

static void
test_renewal_batches_keep_kinds_apart_and_readers_of_a_hash_together(
    void **state)
{
    plan p;
    size_t i, batches, hashes, readers;
    int cluster;

    (void)state;
    for (cluster = 0; cluster < 2; cluster++) {
        /* 70 plain holds of one slot, then 500 read holds: hashes with 1,
         * 2, 3, 1, 2, 3... readers, half of them of one slot; a hash's
         * readers share its key text. */
        plan_new(&p, 570);
        for (i = 0; i < 70; i++)
            snprintf(p.keys[i], PLAN_KEYLEN, "{alpha}:plain:%zu", i);
        for (i = 70, hashes = 0; i < p.n; hashes++)
            for (readers = 0; readers <= hashes % 3 && i < p.n; readers++)
                snprintf(p.keys[i++], PLAN_KEYLEN,
                         hashes % 2 ? "{beta}:rw:%zu" : "rw:%zu", hashes);
        plan_orders(&p, 70, cluster);
        batches = plan_batches(&p);
        if (!cluster) /* 1 plain batch, then 100 hashes per batch */
            assert_int_equal(batches,
                             1 + (hashes + PLAN_BATCH - 1) / PLAN_BATCH);
        else /* 1 plain, 2 of {beta}, one per slot of the others */
            assert_true(batches > 1 + 2 + hashes / 4);
        plan_free(&p);
    }
}

/* A thread of the test below: takes its 8 locks with the watchdog, holds
 * them for about a renewal period (so that their renewal falls due while
 * they are held and released) and unlocks them, 20 times. */
typedef struct churner {
    cr_client *client;
    int index;
    int64_t period_ms;
    int failures;
    pthread_t thread;
} churner;

static void *
churn(void *arg)
{
    churner *w = arg;
    cr_lock *l[8];
    char name[32];
    int i, k;

    for (k = 0; k < 8; k++) {
        snprintf(name, sizeof(name), "churn:%d:%d", w->index, k);
        if (cr_lock_new(w->client, name, &l[k]) != CR_OK) {
            w->failures++;
            while (k-- > 0)
                cr_lock_free(l[k]);
            return NULL;
        }
    }
    for (i = 0; i < 20; i++) {
        for (k = 0; k < 8; k++)
            if (cr_lock_lock(l[k], CR_LEASE_WATCHDOG) != CR_OK)
                w->failures++;
        /* 0.8 to 1.2 periods. */
        usleep((useconds_t)(w->period_ms * (800 + 100 * ((i + w->index) % 5))));
        for (k = 0; k < 8; k++)
            if (cr_lock_unlock(l[k]) != CR_OK)
                w->failures++;
    }
    for (k = 0; k < 8; k++)
        cr_lock_free(l[k]);
    return NULL;
}

/* Holds released while their renewal is on the wire (2 keys per call,
 * so that a round takes several round trips): the unlocks succeed and
 * nothing is reported lost (and valgrind sees no stale entry touched). */
static void
test_lock_holds_released_while_renewals_fly_are_not_reported_lost(
    void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    churner w[4];
    int i;

    (void)state;
    o.url = test_redis.url;
    o.lock_watchdog_timeout_ms = slow(150);
    o.lock_watchdog_batch_size = 2;
    o.command_timeout_ms = slow(2000);
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    memset(w, 0, sizeof(w));
    for (i = 0; i < 4; i++) {
        w[i].client = c;
        w[i].index = i;
        w[i].period_ms = slow(150) / 3;
        assert_int_equal(pthread_create(&w[i].thread, NULL, churn, &w[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(w[i].thread, NULL);
        assert_int_equal(w[i].failures, 0);
    }
    assert_int_equal(cr_client_stats_get(c, &st), CR_OK);
    assert_true(st.renewals_sent > 0);
    assert_int_equal(st.leases_lost, 0);
    cr_client_free(c);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_lock_try_lock_acquires_a_free_lock),
        T(test_lock_try_lock_returns_busy_when_held_by_other_client),
        T(test_lock_reentrant_holds_are_counted_and_released_one_by_one),
        T(test_lock_unlock_by_another_thread_or_client_is_refused),
        T(test_lock_explicit_thread_id_locks_on_one_thread_and_unlocks_on_another),
        T(test_lock_explicit_lease_expiry_frees_the_lock_and_unlock_reports_lost),
        T(test_lock_watchdog_keeps_lock_alive_for_several_timeouts),
        T(test_lock_watchdog_stops_renewing_after_unlock),
        T(test_lock_hold_left_by_a_slow_reentrant_unlock_stays_renewed),
        T(test_lock_lease_hold_left_by_a_watchdog_reentry_expires_by_its_lease),
        T(test_lock_watchdog_hold_under_a_lease_reentry_keeps_being_renewed),
        T(test_lock_lost_is_reported_when_key_deleted_behind_the_holder),
        T(test_lock_unlock_returns_after_a_due_lost_callback_returned),
        T(test_lock_unlock_that_finds_the_hold_gone_calls_the_callback_first),
        T(test_lock_delete_resets_the_lease_to_the_watchdog_timeout),
        T(test_lock_unlock_wakes_a_waiter_of_another_client_promptly),
        T(test_lock_waiter_that_read_the_link_hands_it_to_the_next),
        T(test_lock_releaser_goes_behind_the_waiter_it_gave_the_turn),
        T(test_lock_releaser_lets_every_woken_process_go_first),
        T(test_lock_releaser_is_woken_a_few_times_for_many_releases),
        T(test_lock_force_unlock_wakes_a_waiter_promptly),
        T(test_lock_try_lock_returns_busy_within_its_wait_budget),
        T(test_lock_mutual_exclusion_across_threads_keeps_counter_exact),
        T(test_lock_mutual_exclusion_across_processes_keeps_counter_exact),
        T(test_lock_threads_of_one_client_wait_in_line),
        T(test_lock_handoffs_between_clients_never_stall),
        T(test_lock_client_sockets_are_not_passed_to_programs_run),
        T(test_lock_fork_child_can_neither_release_nor_use_parent_client),
        T(test_lock_bad_arguments_are_refused_with_einval),
        T(test_lock_names_with_braces_and_huge_names_work),
        T(test_client_new_refuses_bad_url_and_options),
        T(test_client_new_reports_unreachable_server_as_eio),
        T(test_client_free_wakes_waiting_threads_with_eclosed),
        T(test_client_stats_count_acquisitions_and_contended_waits),
        T(test_client_id_is_a_uuid_and_version_is_reported),
        T(test_lock_holds_released_while_renewals_fly_are_not_reported_lost),
#undef T
        cmocka_unit_test(test_renewal_batches_in_a_cluster_hold_keys_of_one_slot),
        cmocka_unit_test(
            test_renewal_batches_outside_a_cluster_mix_slots_and_keep_order),
        cmocka_unit_test(
            test_renewal_batches_keep_kinds_apart_and_readers_of_a_hash_together),
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
