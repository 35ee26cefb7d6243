/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous rate limiter and barrier against a real redis-server,
 * driven by a poll() loop of the test's own (poll_loop.h): grants spaced
 * by the limiter, judged on the grant times the script recorded (never
 * more than the rate in any window of one interval), waits that end at
 * once when the limiter's hint is beyond them, cancels; barrier parties on
 * one loop completing rounds with blocking parties on threads, a lease
 * kept alive from the loop's timer, and rounds broken by an asynchronous
 * party's timeout, cancel or free, as a blocking party's would be; and
 * conditions on a lock awaited and signalled from the loop, with blocking
 * waiters and signallers beside them: holds restored, timeouts and
 * cancels that take the lock again, a signal a cancelled waiter passes on,
 * frees (from a callback, while asleep, while the join or the release is
 * out, after some of the holds were taken again); the fair lock, the write
 * lock and fixed leases. Waits that ride out a broken link for the
 * client's reconnect window.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "lock_common.h"
#include "fault_server.h"
#include "grant_records.h"
#include "poll_loop.h"
#include "async_outcome.h"

#define OK(call) assert_int_equal((call), CR_OK)

/* ------------------------------------------------------------- helpers */

/* For poll_loop_until: every outcome of a set has its callback. */
typedef struct outcomes {
    outcome *v;
    int n;
} outcomes;

static bool
all_called(void *arg)
{
    outcomes *s = arg;
    int i;

    for (i = 0; i < s->n; i++)
        if (s->v[i].calls == 0)
            return false;
    return true;
}

static cr_async *
new_async_on(cr_client *c)
{
    cr_async *a = NULL;

    OK(cr_async_new(c, &poll_loop, &a));
    return a;
}

static cr_async *
new_async(void)
{
    return new_async_on(test_client);
}

/* Runs `a` until o has its callback; the callback's status. */
static cr_status
await(cr_async *a, outcome *o, int64_t max_ms)
{
    assert_true(poll_loop_until(a, called, o, max_ms));
    assert_int_equal(o->calls, 1);
    return o->rc;
}

/* Turns the loop for about ms. */
static void
turn_for(cr_async *a, int64_t ms)
{
    int64_t end = poll_loop_now_ms() + ms;

    while (poll_loop_now_ms() < end)
        poll_loop_turn(a, 10);
}

/* ----------------------------------------------- rate limiter records */

static cr_rate_limiter *
limiter(const char *name, int64_t rate, int64_t interval_ms)
{
    cr_rate_limiter *l = NULL;

    OK(cr_rate_limiter_new(test_client, name, &l));
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, rate, interval_ms, 0,
                                    NULL));
    return l;
}

/* ------------------------------------------------- rate limiter tests */

#define SPACED_REQUESTS 14
#define SPACED_RATE 4
#define SPACED_INTERVAL 500

/* Fourteen requests on one loop, for 1 or 2 permits each (18 in all), at
 * 4 per 500 ms: every one is granted, never more than the rate in any
 * window of the grants the script recorded, the last not before the
 * limiter allows it, and the waits retry on the script's hint, not by
 * polling. */
static void
test_async_rate_limiter_spaces_grants_by_the_limiter(void **state)
{
    cr_rate_limiter *l = limiter("spaced", SPACED_RATE, SPACED_INTERVAL);
    cr_async *a = new_async();
    outcome o[SPACED_REQUESTS];
    outcomes all = {o, SPACED_REQUESTS};
    collector col;
    long long evals;
    int64_t start, last = 0;
    unsigned total = 0, asked = 0;
    size_t k;
    int i;

    (void)state;
    memset(o, 0, sizeof(o));
    memset(&col, 0, sizeof(col));
    snprintf(col.key, sizeof(col.key), "{spaced}:permits");
    assert_int_equal(pthread_create(&col.thread, NULL, collector_run, &col), 0);
    evals = calls_of("evalsha") + calls_of("eval");
    start = poll_loop_now_ms();
    for (i = 0; i < SPACED_REQUESTS; i++) {
        int64_t permits = i % 4 == 3 ? 2 : 1;

        asked += (unsigned)permits;
        OK(cr_async_rate_limiter_acquire(a, l, permits, CR_WAIT_FOREVER,
                                         record, &o[i], NULL));
    }
    assert_int_equal(o[0].calls, 0); /* never inside the call */
    assert_true(poll_loop_until(a, all_called, &all, slow(20000)));
    for (i = 0; i < SPACED_REQUESTS; i++) {
        assert_int_equal(o[i].calls, 1);
        assert_int_equal(o[i].rc, CR_OK);
        if (o[i].at > last)
            last = o[i].at;
    }
    evals = calls_of("evalsha") + calls_of("eval") - evals;
    atomic_store(&col.stop, true);
    pthread_join(col.thread, NULL);
    for (k = 0; k < col.n; k++)
        total += permits_of(&col.v[k]);
    assert_int_equal(total, asked);
    assert_true(most_in_a_window(col.v, col.n, SPACED_INTERVAL) <=
                SPACED_RATE);
    /* 18 permits at 4 per interval: the last in the fifth interval. */
    assert_true(last - start >= 4 * SPACED_INTERVAL - 100);
    /* Woken by the hints: a few attempts per request and interval, not a
     * poll (the collector's ZRANGEs are no EVALs). */
    assert_true(evals < SPACED_REQUESTS * 8);
    free(col.v);
    cr_async_free(a);
    cr_rate_limiter_free(l);
}

/* Bounded waits: one whose wait is shorter than the time the limiter
 * says ends at once with CR_BUSY (and that time in value), one of 0 makes
 * one attempt, and one long enough is granted when the grant expires. */
static void
test_async_rate_limiter_wait_bound_is_respected(void **state)
{
    int64_t interval = slow(1500);
    cr_rate_limiter *l = limiter("bounded", 1, interval);
    cr_async *a = new_async();
    outcome shortw = {0}, once = {0}, longw = {0};
    int64_t start;

    (void)state;
    OK(cr_rate_limiter_try_acquire(l, 1, 0));
    start = poll_loop_now_ms();
    OK(cr_async_rate_limiter_acquire(a, l, 1, slow(400), record, &shortw,
                                     NULL));
    OK(cr_async_rate_limiter_acquire(a, l, 1, 0, record, &once, NULL));
    assert_int_equal(await(a, &shortw, slow(3000)), CR_BUSY);
    assert_int_equal(await(a, &once, slow(3000)), CR_BUSY);
    /* Not slept out: the hint (about the interval) is beyond the wait. */
    assert_true(shortw.at - start < slow(400));
    assert_true(shortw.value > slow(400) && shortw.value <= interval + 100);
    assert_int_equal(redis_int("ZCARD {bounded}:permits"), 1);
    OK(cr_async_rate_limiter_acquire(a, l, 1, slow(5000), record, &longw,
                                     NULL));
    assert_int_equal(await(a, &longw, slow(8000)), CR_OK);
    assert_true(longw.at - start >= interval - 200);
    assert_true(longw.at - start < interval + slow(2000));
    /* More permits than the rate: refused by the script. */
    memset(&once, 0, sizeof(once));
    OK(cr_async_rate_limiter_acquire(a, l, 2, slow(1000), record, &once,
                                     NULL));
    assert_int_equal(await(a, &once, slow(3000)), CR_EINVAL);
    assert_int_equal(cr_async_rate_limiter_acquire(a, l, 0, 0, record, &once,
                                                   NULL),
                     CR_EINVAL);
    cr_async_free(a);
    cr_rate_limiter_free(l);
}

/* A request waiting for the limiter is cancelled: CR_ECANCELED at once,
 * nothing taken, and no attempt after it. */
static void
test_async_rate_limiter_cancel_ends_the_wait(void **state)
{
    cr_rate_limiter *l = limiter("cancelled", 1, slow(10000));
    cr_async *a = new_async();
    outcome o = {0};
    cr_request *req = NULL;
    long long evals;
    int64_t at;

    (void)state;
    OK(cr_rate_limiter_try_acquire(l, 1, 0));
    OK(cr_async_rate_limiter_acquire(a, l, 1, CR_WAIT_FOREVER, record, &o,
                                     &req));
    turn_for(a, 300); /* tried, asleep on the hint */
    assert_int_equal(o.calls, 0);
    evals = calls_of("evalsha") + calls_of("eval");
    at = poll_loop_now_ms();
    cr_async_cancel(req);
    assert_int_equal(o.calls, 0); /* never inside the call */
    assert_int_equal(await(a, &o, slow(2000)), CR_ECANCELED);
    assert_true(o.at - at < slow(500));
    turn_for(a, 300);
    assert_int_equal(o.calls, 1);
    assert_int_equal(calls_of("evalsha") + calls_of("eval"), evals);
    assert_int_equal(redis_int("ZCARD {cancelled}:permits"), 1);
    cr_async_free(a);
    cr_rate_limiter_free(l);
}

/* An acquisition whose attempts fail for I/O (the link cut, new
 * connections refused) retries them on the loop's timer with backoff and
 * is granted once the link is back; one that cannot reach Redis for
 * longer than the client's reconnect window ends then with CR_EIO, not at
 * the end of its 30 s wait. */
static void
test_async_rate_limiter_rides_out_a_broken_link_for_the_reconnect_window(void **state)
{
    const int64_t window_ms = 1000;
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c, *brief;
    cr_rate_limiter *l, *lb;
    cr_async *a, *ab;
    cr_test_relay_count w;
    outcome rode = {0}, gone = {0};
    int64_t start;

    (void)state;
    assert_non_null(relay);
    c = client_on_port(cr_test_relay_port(relay), 300, slow(30000));
    brief = client_on_port(cr_test_relay_port(relay), 300, window_ms);
    assert_non_null(c);
    assert_non_null(brief);
    a = new_async_on(c);
    ab = new_async_on(brief);
    OK(cr_rate_limiter_new(c, "cut", &l));
    OK(cr_rate_limiter_new(brief, "cut", &lb));
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 1, 500, 0, NULL));
    OK(cr_rate_limiter_try_acquire(l, 1, 0));
    cr_test_relay_refuse(relay, true);
    cr_test_relay_cut(relay);
    start = poll_loop_now_ms();
    OK(cr_async_rate_limiter_acquire(a, l, 1, slow(30000), record, &rode,
                                     NULL));
    OK(cr_async_rate_limiter_acquire(ab, lb, 1, 30000, record, &gone, NULL));
    assert_int_equal(await(ab, &gone, slow(10000)), CR_EIO);
    assert_true(gone.at - start >= window_ms);
    assert_true(gone.at - start <= window_ms + slow(2000));
    /* The other, with a long window, is still retrying. */
    w.relay = relay;
    w.n = cr_test_relay_accepts(relay) + 3;
    assert_true(poll_loop_until(a, cr_test_relay_reached, &w, slow(10000)));
    assert_int_equal(rode.calls, 0);
    cr_test_relay_refuse(relay, false);
    assert_int_equal(await(a, &rode, slow(10000)), CR_OK);
    cr_async_free(a);
    cr_async_free(ab);
    cr_rate_limiter_free(l);
    cr_rate_limiter_free(lb);
    cr_client_free(c);
    cr_client_free(brief);
    cr_test_relay_stop(relay);
}

/* ------------------------------------------------------------ barriers */

/* A blocking party on its own thread, for `rounds` rounds. */
typedef struct party {
    cr_barrier *barrier;
    int64_t wait_ms;
    int rounds;
    cr_status rc;
    int64_t generation[8], index[8];
    int64_t returned_ms;
    atomic_bool done;
    pthread_t thread;
} party;

static void *
party_run(void *arg)
{
    party *p = arg;
    int k;

    for (k = 0; k < p->rounds; k++) {
        p->rc = cr_barrier_await(p->barrier, p->wait_ms, &p->generation[k],
                                 &p->index[k]);
        if (p->rc != CR_OK)
            break;
    }
    p->returned_ms = poll_loop_now_ms();
    atomic_store(&p->done, true);
    return NULL;
}

static void
party_start(party *p, cr_barrier *b, int64_t wait_ms, int rounds)
{
    memset(p, 0, sizeof(*p));
    p->barrier = b;
    p->wait_ms = wait_ms;
    p->rounds = rounds;
    assert_int_equal(pthread_create(&p->thread, NULL, party_run, p), 0);
}

static cr_barrier *
barrier_on(cr_client *c, const char *name, int64_t parties)
{
    cr_barrier *b = NULL;

    OK(cr_barrier_new(c, name, parties, &b));
    return b;
}

static cr_barrier *
barrier(const char *name, int64_t parties)
{
    return barrier_on(test_client, name, parties);
}

/* A client whose parties hold leases of 30 s: a round they leave broken
 * within a second was broken by their leave, not by a lapsed lease. */
static cr_client *
long_lease_client(void)
{
    cr_client *c = new_client(30000);

    assert_non_null(c);
    return c;
}

/* For poll_loop_until: the barrier has `count` arrivals. */
typedef struct arrivals_wanted {
    cr_barrier *barrier;
    int64_t count;
} arrivals_wanted;

static bool
has_arrivals(void *arg)
{
    arrivals_wanted *w = arg;
    int64_t n = -1;

    return cr_barrier_get_number_waiting(w->barrier, &n) == CR_OK &&
           n >= w->count;
}

/* Turns the loop until `count` parties have arrived at b. */
static void
await_arrivals(cr_async *a, cr_barrier *b, int64_t count)
{
    arrivals_wanted w = {b, count};

    assert_true(poll_loop_until(a, has_arrivals, &w, slow(5000)));
}

#define MIXED_ASYNC 3
#define MIXED_THREADS 2
#define MIXED_ROUNDS 4

/* Three parties on one loop and two blocking threads, five parties, four
 * rounds: each round releases all of them with one generation and the
 * indices 0..4, once each. */
static void
test_async_barrier_parties_on_a_loop_and_threads_complete_rounds(void **state)
{
    cr_barrier *b = barrier("mixed", MIXED_ASYNC + MIXED_THREADS);
    cr_async *a = new_async();
    party t[MIXED_THREADS];
    outcome o[MIXED_ASYNC];
    outcomes all = {o, MIXED_ASYNC};
    unsigned seen[MIXED_ROUNDS] = {0};
    int k, i;

    (void)state;
    for (i = 0; i < MIXED_THREADS; i++)
        party_start(&t[i], b, slow(20000), MIXED_ROUNDS);
    for (k = 0; k < MIXED_ROUNDS; k++) {
        memset(o, 0, sizeof(o));
        for (i = 0; i < MIXED_ASYNC; i++)
            OK(cr_async_barrier_await(a, b, slow(20000), passed, &o[i],
                                      NULL));
        assert_true(poll_loop_until(a, all_called, &all, slow(20000)));
        for (i = 0; i < MIXED_ASYNC; i++) {
            assert_int_equal(o[i].calls, 1);
            assert_int_equal(o[i].rc, CR_OK);
            assert_int_equal(o[i].generation, k);
            assert_true(o[i].index >= 0 && o[i].index < 5);
            assert_int_equal(seen[k] & 1u << o[i].index, 0);
            seen[k] |= 1u << o[i].index;
        }
    }
    for (i = 0; i < MIXED_THREADS; i++) {
        pthread_join(t[i].thread, NULL);
        assert_int_equal(t[i].rc, CR_OK);
    }
    /* Each round: one generation, the indices 0..4 once each. */
    for (k = 0; k < MIXED_ROUNDS; k++) {
        for (i = 0; i < MIXED_THREADS; i++) {
            assert_int_equal(t[i].generation[k], k);
            assert_int_equal(seen[k] & 1u << t[i].index[k], 0);
            seen[k] |= 1u << t[i].index[k];
        }
        assert_int_equal(seen[k], 0x1f);
    }
    cr_async_free(a);
    cr_barrier_free(b);
}

/* A party on the loop waits ten leases (the client's watchdog, 300 ms)
 * for the last one: the loop's timer renews its lease, so the round is
 * not broken, and it completes when a blocking party arrives. */
static void
test_async_barrier_party_keeps_its_lease_while_it_waits(void **state)
{
    cr_barrier *b = barrier("leased", 2);
    cr_async *a = new_async();
    outcome o = {0};
    bool broken = true;
    party t;

    (void)state;
    OK(cr_async_barrier_await(a, b, CR_WAIT_FOREVER, passed, &o, NULL));
    await_arrivals(a, b, 1);
    turn_for(a, 3000);
    assert_int_equal(o.calls, 0);
    OK(cr_barrier_is_broken(b, &broken));
    assert_false(broken);
    party_start(&t, b, slow(5000), 1);
    assert_int_equal(await(a, &o, slow(5000)), CR_OK);
    pthread_join(t.thread, NULL);
    assert_int_equal(t.rc, CR_OK);
    assert_int_equal(o.index, 1);
    assert_int_equal(t.index[0], 0);
    cr_async_free(a);
    cr_barrier_free(b);
}

/* Publishes `payload` on the channel of barrier `name`'s generations of
 * `parity`, as another implementation of the protocol would, once the
 * party on loop `a` listens to it. */
static void
publish_on_barrier(cr_async *a, const char *name, int parity,
                   const char *payload)
{
    char channel[64];

    snprintf(channel, sizeof(channel), "credisson_barrier__channel:{%s}:%d",
             name, parity);
    assert_true(poll_loop_until(a, has_subscriber, channel, slow(5000)));
    assert_true(redis_int("PUBLISH %s %s", channel, payload) >= 1);
}

/* A party on the loop is released by its round's completion message alone
 * (0:<generation>:<since>; the hash still says the round is under way),
 * not by its own generation's with another creation stamp (a barrier of
 * the same name deleted and made again), which only wakes it to read its
 * round's outcome: its wait runs out. */
static void
test_async_barrier_only_its_rounds_completion_message_releases_it(
    void **state)
{
    cr_barrier *b = barrier("heard", 2);
    cr_async *a = new_async();
    outcome o = {0};
    long long since;
    char msg[64];

    (void)state;
    OK(cr_async_barrier_await(a, b, slow(1000), passed, &o, NULL));
    await_arrivals(a, b, 1);
    since = redis_int("HGET heard since");
    assert_true(since > 0);
    snprintf(msg, sizeof(msg), "0:0:%lld", since - 1);
    publish_on_barrier(a, "heard", 0, msg);
    assert_int_equal(await(a, &o, slow(5000)), CR_TIMEOUT);
    OK(cr_barrier_reset(b));
    memset(&o, 0, sizeof(o));
    OK(cr_async_barrier_await(a, b, slow(10000), passed, &o, NULL));
    await_arrivals(a, b, 1);
    snprintf(msg, sizeof(msg), "0:1:%lld", since);
    publish_on_barrier(a, "heard", 1, msg);
    assert_int_equal(await(a, &o, slow(5000)), CR_OK);
    assert_int_equal(o.generation, 1);
    assert_int_equal(o.index, 1);
    assert_int_equal(redis_int("HGET heard arrived"), 1);
    cr_async_free(a);
    cr_barrier_free(b);
}

/* A party on the loop whose wait runs out breaks the round: CR_TIMEOUT
 * to it, CR_EBROKEN to the blocking party at once (not a lease later). */
static void
test_async_barrier_timeout_breaks_the_round_for_a_blocking_party(void **state)
{
    cr_client *lc = long_lease_client();
    cr_barrier *b = barrier("timed", 3), *lb = barrier_on(lc, "timed", 3);
    cr_async *a = new_async_on(lc);
    outcome o = {0};
    bool broken = false;
    party t;

    (void)state;
    /* A handle of another client is refused. */
    assert_int_equal(cr_async_barrier_await(a, b, 0, passed, &o, NULL),
                     CR_EINVAL);
    party_start(&t, b, CR_WAIT_FOREVER, 1);
    while (!has_arrivals(&(arrivals_wanted){b, 1}))
        usleep(5000);
    OK(cr_async_barrier_await(a, lb, slow(500), passed, &o, NULL));
    assert_int_equal(await(a, &o, slow(5000)), CR_TIMEOUT);
    assert_int_equal(o.generation, -1);
    pthread_join(t.thread, NULL);
    assert_int_equal(t.rc, CR_EBROKEN);
    assert_true(t.returned_ms - o.at < slow(1000));
    OK(cr_barrier_is_broken(b, &broken));
    assert_true(broken);
    cr_async_free(a);
    cr_barrier_free(lb);
    cr_barrier_free(b);
    cr_client_free(lc);
}

/* A cancelled party on the loop is Java's interrupted await: it breaks
 * the round (CR_ECANCELED to it, CR_EBROKEN to the blocking party); one
 * cancelled before it arrived leaves the barrier alone. */
static void
test_async_barrier_cancel_breaks_the_round(void **state)
{
    cr_client *lc = long_lease_client();
    cr_barrier *b = barrier("cancelled", 3), *lb = barrier_on(lc, "cancelled", 3);
    cr_async *a = new_async_on(lc);
    outcome o = {0}, early = {0};
    cr_request *req = NULL;
    bool broken = false;
    int64_t at;
    party t;

    (void)state;
    /* Cancelled before its arrival went out: nothing changes. */
    OK(cr_async_barrier_await(a, lb, CR_WAIT_FOREVER, passed, &early, &req));
    cr_async_cancel(req);
    assert_int_equal(await(a, &early, slow(2000)), CR_ECANCELED);
    assert_int_equal(redis_int("EXISTS cancelled"), 0);

    party_start(&t, b, CR_WAIT_FOREVER, 1);
    OK(cr_async_barrier_await(a, lb, CR_WAIT_FOREVER, passed, &o, &req));
    await_arrivals(a, b, 2);
    turn_for(a, 100);
    assert_int_equal(o.calls, 0);
    at = poll_loop_now_ms();
    cr_async_cancel(req);
    assert_int_equal(o.calls, 0); /* never inside the call */
    assert_int_equal(await(a, &o, slow(3000)), CR_ECANCELED);
    pthread_join(t.thread, NULL);
    assert_int_equal(t.rc, CR_EBROKEN);
    assert_true(t.returned_ms - at < slow(1000)); /* not a lease later */
    OK(cr_barrier_is_broken(b, &broken));
    assert_true(broken);
    cr_async_free(a);
    cr_barrier_free(lb);
    cr_barrier_free(b);
    cr_client_free(lc);
}

/* The handle is freed from the callback of the party that completed the
 * round; another handle freed while its party waits breaks the round for
 * a blocking party at once. */
static void
test_async_barrier_free_from_a_callback_and_while_waiting(void **state)
{
    cr_client *lc = long_lease_client();
    cr_barrier *b = barrier("freed", 2), *lb;
    cr_async *a = new_async(), *c = new_async_on(lc);
    outcome o = {0}, w = {0};
    party t;
    int64_t at;

    (void)state;
    party_start(&t, b, slow(5000), 1);
    o.free_it = a;
    OK(cr_async_barrier_await(a, b, slow(5000), passed, &o, NULL));
    assert_true(poll_loop_until(a, called, &o, slow(5000)));
    /* a is gone: its callback freed it. */
    pthread_join(t.thread, NULL);
    assert_int_equal(o.rc, CR_OK);
    assert_int_equal(t.rc, CR_OK);
    assert_int_equal(o.generation, t.generation[0]);
    assert_int_equal(o.index + t.index[0], 1);

    cr_barrier_free(b);
    b = barrier("freed3", 3);
    lb = barrier_on(lc, "freed3", 3);
    party_start(&t, b, CR_WAIT_FOREVER, 1);
    OK(cr_async_barrier_await(c, lb, CR_WAIT_FOREVER, passed, &w, NULL));
    await_arrivals(c, b, 2);
    turn_for(c, 100);
    at = poll_loop_now_ms();
    cr_async_free(c);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.rc, CR_ECLOSED);
    pthread_join(t.thread, NULL);
    assert_int_equal(t.rc, CR_EBROKEN);
    assert_true(t.returned_ms - at < slow(1000)); /* not a lease later */
    cr_barrier_free(lb);
    cr_barrier_free(b);
    cr_client_free(lc);
}

/* ---------------------------------------------------------- conditions */

static cr_lock *
rlock_on(cr_client *c, const char *name)
{
    cr_lock *l = NULL;

    OK(cr_lock_new(c, name, &l));
    return l;
}

static cr_lock_condition *
condition_of(cr_lock *l, const char *name)
{
    cr_lock_condition *c = NULL;

    OK(cr_lock_condition_new(l, name, &c));
    return c;
}

/* Takes l `holds` times for `owner` on the loop with leases of lease_ms
 * (or the watchdog's). */
static void
async_take(cr_async *a, cr_lock *l, int64_t owner, int holds,
           int64_t lease_ms)
{
    int i;

    for (i = 0; i < holds; i++) {
        outcome o = {0};

        OK(cr_async_lock(a, l, owner, slow(5000), lease_ms, record, &o,
                         NULL));
        assert_int_equal(await(a, &o, slow(8000)), CR_OK);
    }
}

/* Takes l `holds` times for `owner` on the loop (watchdog lease). */
static void
async_hold(cr_async *a, cr_lock *l, int64_t owner, int holds)
{
    async_take(a, l, owner, holds, CR_LEASE_WATCHDOG);
}

/* Lets l go `holds` times for `owner` on the loop. */
static void
async_release(cr_async *a, cr_lock *l, int64_t owner, int holds)
{
    int i;

    for (i = 0; i < holds; i++) {
        outcome o = {0};

        OK(cr_async_unlock(a, l, owner, record, &o, NULL));
        assert_int_equal(await(a, &o, slow(5000)), CR_OK);
    }
}

/* The hold count of `owner` (of test_client) in lock hash `name`, read
 * from Redis; 0 when it has no field. */
static long long
hold_field(const char *name, int64_t owner)
{
    char field[128];
    long long n;

    snprintf(field, sizeof(field), "%s:%lld", cr_client_id(test_client),
             (long long)owner);
    n = redis_int("HGET %s %s", name, field);
    return n == -999 ? 0 : n;
}

/* Signals c once (or all) as `owner` on the loop, holding its lock
 * meanwhile; the number signalled. */
static int64_t
async_signal_under(cr_async *a, cr_lock *l, cr_lock_condition *c,
                   int64_t owner, bool all)
{
    outcome s = {0};

    async_hold(a, l, owner, 1);
    if (all)
        OK(cr_async_condition_signal_all(a, c, owner, record, &s, NULL));
    else
        OK(cr_async_condition_signal(a, c, owner, record, &s, NULL));
    assert_int_equal(await(a, &s, slow(5000)), CR_OK);
    async_release(a, l, owner, 1);
    return s.value;
}

/* What in_line waits for: `n` waiters in the line of condition `cond` of
 * lock `lock`, and the lock free when `free` (they let it go). */
typedef struct line_wanted {
    const char *lock, *cond;
    long long n;
    bool free;
} line_wanted;

static bool
line_is(void *arg)
{
    line_wanted *w = arg;

    return redis_int("ZCARD credisson_condition_queue:{%s}:%s", w->lock,
                     w->cond) == w->n &&
           (!w->free || redis_int("EXISTS %s", w->lock) == 0);
}

/* Turns the loop until the line of cond has n waiters (and, with `free`,
 * the lock is free). */
static void
loop_until_line(cr_async *a, const char *lock, const char *cond, long long n,
                bool free)
{
    line_wanted w = {lock, cond, n, free};

    assert_true(poll_loop_until(a, line_is, &w, slow(5000)));
}

/* A blocking waiter on its own thread: takes the lock `holds` times,
 * awaits, records what it found on its return and lets the lock go. */
typedef struct bwaiter {
    cr_lock *lock;
    cr_lock_condition *cond;
    int holds;
    int64_t wait_ms;
    cr_status rc;
    int64_t holds_after;
    atomic_bool done;
    pthread_t thread;
} bwaiter;

static void *
bwaiter_run(void *arg)
{
    bwaiter *w = arg;
    int i;

    for (i = 0; i < w->holds; i++)
        if (cr_lock_lock(w->lock, CR_LEASE_WATCHDOG) != CR_OK)
            return NULL;
    w->rc = cr_lock_condition_await(w->cond, w->wait_ms);
    cr_lock_get_hold_count(w->lock, &w->holds_after);
    for (i = 0; i < w->holds_after; i++)
        cr_lock_unlock(w->lock);
    atomic_store(&w->done, true);
    return NULL;
}

static void
bwaiter_start(bwaiter *w, cr_lock *l, cr_lock_condition *c, int holds,
              int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->cond = c;
    w->holds = holds;
    w->wait_ms = wait_ms;
    w->rc = CR_EINVAL;
    assert_int_equal(pthread_create(&w->thread, NULL, bwaiter_run, w), 0);
}

/* An asynchronous waiter that lets its lock go from its callback. */
typedef struct releaser {
    outcome o;
    cr_async *a;
    cr_lock *lock;
    int64_t owner;
    long long holds_seen; /* the owner's hold count in Redis then */
} releaser;

static void
release_on_return(void *userdata, cr_status rc, int64_t value)
{
    releaser *r = userdata;

    record(&r->o, rc, value);
    r->holds_seen = hold_field(cr_lock_name(r->lock), r->owner);
    if (rc == CR_OK)
        OK(cr_async_unlock(r->a, r->lock, r->owner, NULL, NULL, NULL));
}

static bool
releasers_called(void *arg)
{
    releaser *r = arg;
    int i;

    for (i = 0; i < 3; i++)
        if (r[i].o.calls == 0)
            return false;
    return true;
}

/* A signal wakes an asynchronous waiter, which lets its three holds go
 * while it waits and comes back holding the lock three times again, with
 * the watchdog's lease (renewed after it returns), once the signaller let
 * the lock go. */
static void
test_async_condition_signal_wakes_a_waiter_with_its_holds_restored(
    void **state)
{
    cr_lock *l = rlock_on(test_client, "cholds");
    cr_lock_condition *c = condition_of(l, "ready");
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id(), other = cr_async_owner_id();
    outcome w = {0}, s = {0};

    (void)state;
    async_hold(a, l, owner, 3);
    assert_int_equal(hold_field("cholds", owner), 3);
    OK(cr_async_condition_await(a, c, owner, CR_WAIT_FOREVER, record, &w,
                                NULL));
    assert_int_equal(w.calls, 0); /* never inside the call */
    loop_until_line(a, "cholds", "ready", 1, true); /* all three let go */
    assert_int_equal(w.calls, 0);
    async_hold(a, l, other, 1);
    OK(cr_async_condition_signal(a, c, other, record, &s, NULL));
    assert_int_equal(await(a, &s, slow(5000)), CR_OK);
    assert_int_equal(s.value, 1);
    /* Signalled, but the signaller holds the lock: the waiter waits. */
    turn_for(a, 300);
    assert_int_equal(w.calls, 0);
    assert_int_equal(hold_field("cholds", owner), 0);
    async_release(a, l, other, 1);
    assert_int_equal(await(a, &w, slow(5000)), CR_OK);
    assert_int_equal(w.value, 0);
    assert_int_equal(hold_field("cholds", owner), 3);
    assert_int_equal(redis_int("HLEN cholds"), 1);
    /* The watchdog renews it (a 300 ms lease, three leases later). */
    turn_for(a, 1000);
    assert_int_equal(hold_field("cholds", owner), 3);
    assert_int_equal(redis_int("EXISTS credisson_condition:{cholds}:ready"),
                     0);
    async_release(a, l, owner, 3);
    assert_int_equal(redis_int("EXISTS cholds"), 0);
    cr_async_free(a);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

/* A blocking waiter signalled by an asynchronous signaller, an
 * asynchronous waiter signalled by a blocking one, and three asynchronous
 * waiters woken by one signal-all, each back with its hold. */
static void
test_async_condition_blocking_and_async_sides_signal_each_other(void **state)
{
    cr_lock *l = rlock_on(test_client, "mixed_c");
    cr_lock_condition *c = condition_of(l, "c");
    cr_async *a = new_async();
    int64_t signaller = cr_async_owner_id(), owner = cr_async_owner_id();
    releaser r[3];
    outcome w = {0};
    bool woke = false;
    bwaiter b;
    int i;

    (void)state;
    /* Blocking waiter, asynchronous signaller. */
    bwaiter_start(&b, l, c, 2, slow(10000));
    loop_until_line(a, "mixed_c", "c", 1, true);
    assert_int_equal(async_signal_under(a, l, c, signaller, false), 1);
    pthread_join(b.thread, NULL);
    OK(b.rc);
    assert_int_equal(b.holds_after, 2);

    /* Asynchronous waiter, blocking signaller (this thread, between two
     * turns of the loop). */
    async_hold(a, l, owner, 2);
    OK(cr_async_condition_await(a, c, owner, slow(10000), record, &w, NULL));
    loop_until_line(a, "mixed_c", "c", 1, true);
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    OK(cr_lock_condition_signal(c, &woke));
    assert_true(woke);
    OK(cr_lock_unlock(l));
    assert_int_equal(await(a, &w, slow(5000)), CR_OK);
    assert_int_equal(hold_field("mixed_c", owner), 2);
    async_release(a, l, owner, 2);

    /* Three asynchronous waiters, one signal-all. */
    memset(r, 0, sizeof(r));
    for (i = 0; i < 3; i++) {
        r[i].a = a;
        r[i].lock = l;
        r[i].owner = cr_async_owner_id();
        async_hold(a, l, r[i].owner, 1);
        OK(cr_async_condition_await(a, c, r[i].owner, slow(10000),
                                    release_on_return, &r[i], NULL));
        loop_until_line(a, "mixed_c", "c", i + 1, true);
    }
    assert_int_equal(async_signal_under(a, l, c, signaller, true), 3);
    assert_true(poll_loop_until(a, releasers_called, r, slow(10000)));
    for (i = 0; i < 3; i++) {
        assert_int_equal(r[i].o.calls, 1);
        assert_int_equal(r[i].o.rc, CR_OK);
        assert_int_equal(r[i].holds_seen, 1);
    }
    assert_true(poll_loop_until(a, key_gone, "mixed_c", slow(5000)));
    assert_int_equal(redis_int("EXISTS credisson_condition:{mixed_c}:c"), 0);
    cr_async_free(a);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

/* Only a holder signals or awaits: CR_ENOTOWNER to the callback, nothing
 * written; bad owners and another client's condition are refused by the
 * call. With nobody waiting a signal wakes none. */
static void
test_async_condition_only_a_holder_signals_or_awaits(void **state)
{
    cr_client *c2 = new_client(30000);
    cr_lock *l = rlock_on(test_client, "cheld"), *l2 = rlock_on(c2, "cheld");
    cr_lock_condition *c = condition_of(l, "c"), *c2c = condition_of(l2, "c");
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id(), other = cr_async_owner_id();
    outcome s = {0}, all = {0}, w = {0};

    (void)state;
    OK(cr_async_condition_signal(a, c, owner, record, &s, NULL));
    OK(cr_async_condition_signal_all(a, c, owner, record, &all, NULL));
    OK(cr_async_condition_await(a, c, owner, 0, record, &w, NULL));
    assert_int_equal(await(a, &s, slow(5000)), CR_ENOTOWNER);
    assert_int_equal(await(a, &all, slow(5000)), CR_ENOTOWNER);
    assert_int_equal(await(a, &w, slow(5000)), CR_ENOTOWNER);
    /* Held by another owner: still not this one's. */
    async_hold(a, l, other, 1);
    memset(&s, 0, sizeof(s));
    OK(cr_async_condition_signal(a, c, owner, record, &s, NULL));
    assert_int_equal(await(a, &s, slow(5000)), CR_ENOTOWNER);
    memset(&w, 0, sizeof(w));
    OK(cr_async_condition_await(a, c, owner, 0, record, &w, NULL));
    assert_int_equal(await(a, &w, slow(5000)), CR_ENOTOWNER);
    assert_int_equal(hold_field("cheld", other), 1);
    /* The holder, nobody waiting: CR_OK, none signalled. */
    memset(&s, 0, sizeof(s));
    s.value = 7;
    OK(cr_async_condition_signal_all(a, c, other, record, &s, NULL));
    assert_int_equal(await(a, &s, slow(5000)), CR_OK);
    assert_int_equal(s.value, 0);
    async_release(a, l, other, 1);
    assert_int_equal(redis_int("EXISTS credisson_condition:{cheld}:c "
                               "credisson_condition_queue:{cheld}:c "
                               "credisson_condition_leases:{cheld}:c "
                               "credisson_conditions:{cheld}"),
                     0);
    /* Refused by the call: no callback. */
    assert_int_equal(cr_async_condition_signal(a, c, 0, record, &s, NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_condition_await(a, c, -1, 0, record, &w, NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_condition_await(a, c, owner, -5, record, &w,
                                              NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_condition_signal(a, c2c, owner, record, &s,
                                               NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_condition_signal_all(a, NULL, owner, record, &s,
                                                   NULL),
                     CR_EINVAL);
    cr_async_free(a);
    cr_lock_condition_free(c2c);
    cr_lock_condition_free(c);
    cr_lock_free(l2);
    cr_lock_free(l);
    cr_client_free(c2);
}

/* An asynchronous waiter on the lock `l` (hash `name`, its owners'
 * fields ending in `suffix`) that holds it twice with leases of lease_ms,
 * signalled by a blocking holder: back with both holds, and with the lease
 * it took (a fixed one is not renewed: it only runs down). */
static void
async_wait_and_signal_on(cr_lock *l, const char *name, const char *suffix,
                         int64_t lease_ms)
{
    cr_lock_condition *c = condition_of(l, "k");
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id();
    char field[160];
    outcome w = {0};
    bool woke = false;
    long long pttl;

    snprintf(field, sizeof(field), "%s:%lld%s", cr_client_id(test_client),
             (long long)owner, suffix);
    async_take(a, l, owner, 2, lease_ms);
    OK(cr_async_condition_await(a, c, owner, slow(10000), record, &w, NULL));
    loop_until_line(a, name, "k", 1, true);
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    OK(cr_lock_condition_signal(c, &woke));
    assert_true(woke);
    OK(cr_lock_unlock(l));
    assert_int_equal(await(a, &w, slow(5000)), CR_OK);
    assert_int_equal(redis_int("HGET %s %s", name, field), 2);
    pttl = redis_int("PTTL %s", name);
    assert_true(pttl > 0);
    if (lease_ms != CR_LEASE_WATCHDOG) {
        /* Taken again with its own lease (not the client's 300 ms
         * watchdog), which then only runs down. */
        assert_true(pttl > lease_ms / 2 && pttl <= lease_ms);
        turn_for(a, 700);
        assert_true(redis_int("PTTL %s", name) <= pttl - 500);
    }
    async_release(a, l, owner, 2);
    assert_int_equal(redis_int("EXISTS %s", name), 0);
    cr_async_free(a);
    cr_lock_condition_free(c);
}

/* Conditions on the fair lock and the write lock with the watchdog's
 * lease, and on an RLock held with a fixed lease, awaited on the loop. */
static void
test_async_condition_on_the_fair_lock_the_write_lock_and_a_fixed_lease(
    void **state)
{
    cr_lock *fair = NULL, *rl = rlock_on(test_client, "cfixed");
    cr_rwlock *rw = NULL;

    (void)state;
    OK(cr_fair_lock_new(test_client, "cfair", &fair));
    async_wait_and_signal_on(fair, "cfair", "", CR_LEASE_WATCHDOG);
    OK(cr_rwlock_new(test_client, "crw", &rw));
    async_wait_and_signal_on(cr_rwlock_write_lock(rw), "crw", ":write",
                             CR_LEASE_WATCHDOG);
    async_wait_and_signal_on(rl, "cfixed", "", slow(20000));
    cr_rwlock_free(rw);
    cr_lock_free(rl);
    cr_lock_free(fair);
}

/* A wait that runs out still takes the lock again before its callback:
 * CR_TIMEOUT only once another owner, which took the lock meanwhile, let
 * it go; with the hold count it had, and the line left. */
static void
test_async_condition_timeout_takes_the_lock_again(void **state)
{
    cr_lock *l = rlock_on(test_client, "ctimed");
    cr_lock_condition *c = condition_of(l, "c");
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id(), other = cr_async_owner_id();
    outcome w = {0};
    int64_t start;

    (void)state;
    async_hold(a, l, owner, 2);
    start = poll_loop_now_ms();
    OK(cr_async_condition_await(a, c, owner, slow(300), record, &w, NULL));
    loop_until_line(a, "ctimed", "c", 1, true);
    async_hold(a, l, other, 1);
    turn_for(a, slow(300) + 500); /* the wait ran out meanwhile */
    assert_int_equal(w.calls, 0);
    assert_int_equal(redis_int("ZCARD credisson_condition_queue:{ctimed}:c"),
                     0);
    async_release(a, l, other, 1);
    assert_int_equal(await(a, &w, slow(5000)), CR_TIMEOUT);
    assert_true(w.at - start >= 300);
    assert_int_equal(hold_field("ctimed", owner), 2);
    assert_int_equal(redis_int("HLEN ctimed"), 1);
    assert_int_equal(redis_int("EXISTS credisson_condition:{ctimed}:c"), 0);
    /* A wait of 0 with nothing due: at once. */
    memset(&w, 0, sizeof(w));
    OK(cr_async_condition_await(a, c, owner, 0, record, &w, NULL));
    assert_int_equal(await(a, &w, slow(5000)), CR_TIMEOUT);
    assert_int_equal(hold_field("ctimed", owner), 2);
    async_release(a, l, owner, 2);
    cr_async_free(a);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

/* The lease deadline of waiter `member` in the line of cond (0: none). */
static long long
lease_of(const char *lock, const char *cond, const char *member)
{
    long long v = redis_int("ZSCORE credisson_condition_leases:{%s}:%s %s",
                            lock, cond, member);

    return v == -999 ? 0 : v;
}

typedef struct look_wanted {
    const char *lock, *cond, *member;
    long long before;
} look_wanted;

static bool
looked(void *arg)
{
    look_wanted *w = arg;

    return lease_of(w->lock, w->cond, w->member) != w->before;
}

/* Turns the loop until the waiter `member` renews its lease in the line
 * of cond: a look just ran on the server, and with a lease of 30 s the
 * next is a second away. */
static void
loop_until_look(cr_async *a, const char *lock, const char *cond,
                const char *member)
{
    look_wanted w = {lock, cond, member, lease_of(lock, cond, member)};

    assert_true(poll_loop_until(a, looked, &w, slow(5000)));
}

/* A cancelled waiter leaves the line, passing on a signal that came for
 * it (to a blocking waiter behind it), takes the lock again and gets
 * CR_ECANCELED holding it; one cancelled with no signal due just leaves
 * and takes the lock again. The loop's side has 30 s leases, so that it
 * looks once a second: the signal and the cancel come between two
 * looks. */
static void
test_async_condition_cancel_passes_the_signal_on(void **state)
{
    cr_client *lc = long_lease_client();
    cr_lock *l = rlock_on(lc, "ccancel"), *tl = rlock_on(test_client,
                                                         "ccancel");
    cr_lock_condition *c = condition_of(l, "c"), *tc = condition_of(tl, "c");
    cr_async *a = new_async_on(lc);
    int64_t owner = cr_async_owner_id();
    char member[128], field[160];
    cr_request *req = NULL;
    outcome w = {0};
    bool woke = false;
    bwaiter b;

    (void)state;
    snprintf(member, sizeof(member), "%s:%lld", cr_client_id(lc),
             (long long)owner);
    snprintf(field, sizeof(field), "%s", member);
    /* Alone, no signal: it leaves and takes its two holds again. */
    async_hold(a, l, owner, 2);
    OK(cr_async_condition_await(a, c, owner, CR_WAIT_FOREVER, record, &w,
                                &req));
    loop_until_line(a, "ccancel", "c", 1, true);
    cr_async_cancel(req);
    assert_int_equal(w.calls, 0); /* never inside the call */
    assert_int_equal(await(a, &w, slow(5000)), CR_ECANCELED);
    assert_int_equal(redis_int("HGET ccancel %s", field), 2);
    assert_int_equal(redis_int("EXISTS credisson_condition:{ccancel}:c"), 0);
    async_release(a, l, owner, 1);

    /* First in line and signalled, then cancelled before it looked: the
     * signal goes to the blocking waiter behind it. */
    memset(&w, 0, sizeof(w));
    OK(cr_async_condition_await(a, c, owner, CR_WAIT_FOREVER, record, &w,
                                &req));
    loop_until_line(a, "ccancel", "c", 1, true);
    bwaiter_start(&b, tl, tc, 1, slow(10000));
    loop_until_line(a, "ccancel", "c", 2, true);
    loop_until_look(a, "ccancel", "c", member);
    OK(cr_lock_lock(tl, CR_LEASE_WATCHDOG));
    OK(cr_lock_condition_signal(tc, &woke)); /* the first: the loop's */
    assert_true(woke);
    OK(cr_lock_unlock(tl));
    cr_async_cancel(req);
    assert_int_equal(await(a, &w, slow(5000)), CR_ECANCELED);
    assert_int_equal(redis_int("HGET ccancel %s", field), 1);
    /* The blocking waiter got the signal (it may wait for the lock). */
    async_release(a, l, owner, 1);
    pthread_join(b.thread, NULL);
    OK(b.rc);
    assert_int_equal(b.holds_after, 1);
    assert_int_equal(redis_int("EXISTS credisson_condition:{ccancel}:c"), 0);
    cr_async_free(a);
    cr_lock_condition_free(tc);
    cr_lock_condition_free(c);
    cr_lock_free(tl);
    cr_lock_free(l);
    cr_client_free(lc);
}

static void
record_and_free(void *userdata, cr_status rc, int64_t value)
{
    outcome *o = userdata;

    record(o, rc, value);
    if (o->free_it != NULL)
        cr_async_free(o->free_it);
}

/* A handle freed from the callback of a signalled await (the lock held
 * again, released by a blocking call for the owner); another freed while
 * its await sleeps in line between two looks (30 s leases): CR_ECLOSED
 * inside the free, and the line left at once in the background (nothing
 * else would remove the entry before its lease lapses). */
static void
test_async_condition_free_from_a_callback_and_while_waiting(void **state)
{
    cr_client *lc = long_lease_client();
    cr_lock *l = rlock_on(test_client, "cfreed"), *ll = rlock_on(lc, "cfreed");
    cr_lock_condition *c = condition_of(l, "c"), *lcc = condition_of(ll, "c");
    cr_async *a = new_async(), *b = new_async_on(lc);
    int64_t owner = cr_async_owner_id();
    char member[128];
    outcome w = {0};
    bool woke = false;

    (void)state;
    async_hold(a, l, owner, 1);
    w.free_it = a;
    OK(cr_async_condition_await(a, c, owner, slow(10000), record_and_free,
                                &w, NULL));
    loop_until_line(a, "cfreed", "c", 1, true);
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    OK(cr_lock_condition_signal(c, &woke));
    assert_true(woke);
    OK(cr_lock_unlock(l));
    assert_true(poll_loop_until(a, called, &w, slow(5000)));
    /* a is gone: its callback freed it. */
    assert_int_equal(w.rc, CR_OK);
    assert_int_equal(hold_field("cfreed", owner), 1);
    OK(cr_lock_unlock_tid(l, owner));
    assert_int_equal(redis_int("EXISTS cfreed"), 0);

    memset(&w, 0, sizeof(w));
    snprintf(member, sizeof(member), "%s:%lld", cr_client_id(lc),
             (long long)owner);
    async_hold(b, ll, owner, 1);
    OK(cr_async_condition_await(b, lcc, owner, CR_WAIT_FOREVER, record, &w,
                                NULL));
    loop_until_line(b, "cfreed", "c", 1, true);
    loop_until_look(b, "cfreed", "c", member);
    turn_for(b, 50); /* the look's reply read: asleep */
    cr_async_free(b);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.rc, CR_ECLOSED);
    assert_true(cr_test_wait_until(
        key_gone, "credisson_condition_queue:{cfreed}:c", slow(2000)));
    assert_int_equal(redis_int("EXISTS credisson_condition:{cfreed}:c"), 0);
    assert_int_equal(redis_int("EXISTS cfreed"), 0); /* not held */
    cr_lock_condition_free(lcc);
    cr_lock_condition_free(c);
    cr_lock_free(ll);
    cr_lock_free(l);
    cr_client_free(lc);
}

static bool
relay_frozen(void *arg)
{
    return cr_test_relay_frozen(arg);
}

/* What freed_while_out waits for: one waiter in the line of cjoin's
 * condition c, and the lock free when `free`. */
static bool
cjoin_line(void *arg)
{
    const bool *free = arg;

    return redis_int("ZCARD credisson_condition_queue:{cjoin}:c") == 1 &&
           (!*free || redis_int("EXISTS cjoin") == 0);
}

/* A handle freed while its await has a command out, the replies frozen
 * once a command with `needle` in it went (and ran): the join (in its
 * arguments, the registry's key), or the release of the lock that follows
 * (the lock's channel; the join and the lock's acquisition do not name
 * it). CR_ECLOSED inside the free; the waiter the join put in line leaves
 * it in the background; the lock is free when the release ran, and
 * otherwise stays held by its owner until it lets it go. */
static void
freed_while_out(const char *needle, bool released)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;
    cr_lock *l;
    cr_lock_condition *cond;
    cr_async *a;
    int64_t owner = cr_async_owner_id();
    outcome w = {0};

    assert_non_null(relay);
    c = client_on_port(cr_test_relay_port(relay), 30000, slow(15000));
    assert_non_null(c);
    l = rlock_on(c, "cjoin");
    cond = condition_of(l, "c");
    a = new_async_on(c);
    async_hold(a, l, owner, 1);
    assert_int_equal(cr_test_relay_freeze_replies_after(relay, needle), 0);
    OK(cr_async_condition_await(a, cond, owner, CR_WAIT_FOREVER, record, &w,
                                NULL));
    assert_true(poll_loop_until(a, relay_frozen, relay, slow(5000)));
    assert_true(cr_test_wait_until(cjoin_line, &released, slow(5000)));
    cr_async_free(a);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.rc, CR_ECLOSED);
    cr_test_relay_thaw(relay);
    assert_true(cr_test_wait_until(
        key_gone, "credisson_condition_queue:{cjoin}:c", slow(5000)));
    assert_int_equal(redis_int("EXISTS credisson_condition:{cjoin}:c"), 0);
    if (!released) {
        assert_int_equal(redis_int("HGET cjoin %s:%lld", cr_client_id(c),
                                   (long long)owner),
                         1);
        OK(cr_lock_unlock_tid(l, owner));
    }
    assert_int_equal(redis_int("EXISTS cjoin"), 0);
    cr_lock_condition_free(cond);
    cr_lock_free(l);
    cr_client_free(c);
    cr_test_relay_stop(relay);
}

static void
test_async_condition_free_while_its_join_or_release_is_out(void **state)
{
    (void)state;
    freed_while_out("credisson_conditions:", false);
    freed_while_out("redisson_lock__channel", true);
}

/* A handle freed after its signalled await took the lock again once of
 * the three times it held it: the relay drops the second acquisition (it
 * never runs; its client waits for the answer), and the free comes then.
 * CR_ECLOSED inside the free, and the hold taken again is given back in
 * the background, so the lock ends up free (nothing else would let it go:
 * the watchdog keeps it while the client counts it). */
static void
test_async_condition_free_after_some_holds_were_taken_again_gives_them_back(
    void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    cr_lock *l, *tl = rlock_on(test_client, "cback");
    cr_lock_condition *cond, *tc = condition_of(tl, "c");
    cr_async *a;
    int64_t owner = cr_async_owner_id();
    char url[64];
    outcome w = {0};
    bool woke = false;

    (void)state;
    assert_non_null(relay);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d",
             cr_test_relay_port(relay));
    o.url = url;
    o.lock_watchdog_timeout_ms = 30000;
    /* The dropped acquisition is not answered: no timeout before the
     * free. */
    o.command_timeout_ms = slow(30000);
    OK(cr_client_new(&o, &c));
    l = rlock_on(c, "cback");
    cond = condition_of(l, "c");
    a = new_async_on(c);
    async_hold(a, l, owner, 3);
    OK(cr_async_condition_await(a, cond, owner, CR_WAIT_FOREVER, record, &w,
                                NULL));
    loop_until_line(a, "cback", "c", 1, true); /* all three let go */
    /* The lock's key as a command names it is in the acquisitions (and in
     * the releases and renewals, which do not come now), not in the looks
     * or subscriptions, whose keys and channels have it in braces: the
     * first acquisition goes through, the second is dropped. */
    assert_int_equal(cr_test_relay_drop_request(relay, "\r\ncback\r\n", 1),
                     0);
    /* Signalled and the lock let go before the loop turns again: the
     * first hold is taken at its first attempt. */
    OK(cr_lock_lock(tl, CR_LEASE_WATCHDOG));
    OK(cr_lock_condition_signal(tc, &woke));
    assert_true(woke);
    OK(cr_lock_unlock(tl));
    assert_true(poll_loop_until(a, cr_test_relay_dropped, relay, slow(5000)));
    assert_int_equal(w.calls, 0);
    assert_int_equal(redis_int("HGET cback %s:%lld", cr_client_id(c),
                               (long long)owner),
                     1);
    cr_async_free(a);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.rc, CR_ECLOSED);
    assert_true(cr_test_wait_until(key_gone, "cback", slow(5000)));
    assert_int_equal(redis_int("EXISTS credisson_condition:{cback}:c "
                               "credisson_condition_queue:{cback}:c"),
                     0);
    cr_lock_condition_free(cond);
    cr_lock_free(l);
    cr_client_free(c);
    cr_test_relay_stop(relay);
    cr_lock_condition_free(tc);
    cr_lock_free(tl);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_async_rate_limiter_spaces_grants_by_the_limiter),
        T(test_async_rate_limiter_wait_bound_is_respected),
        T(test_async_rate_limiter_cancel_ends_the_wait),
        T(test_async_rate_limiter_rides_out_a_broken_link_for_the_reconnect_window),
        T(test_async_barrier_parties_on_a_loop_and_threads_complete_rounds),
        T(test_async_barrier_party_keeps_its_lease_while_it_waits),
        T(test_async_barrier_only_its_rounds_completion_message_releases_it),
        T(test_async_barrier_timeout_breaks_the_round_for_a_blocking_party),
        T(test_async_barrier_cancel_breaks_the_round),
        T(test_async_barrier_free_from_a_callback_and_while_waiting),
        T(test_async_condition_signal_wakes_a_waiter_with_its_holds_restored),
        T(test_async_condition_blocking_and_async_sides_signal_each_other),
        T(test_async_condition_only_a_holder_signals_or_awaits),
        T(test_async_condition_timeout_takes_the_lock_again),
        T(test_async_condition_cancel_passes_the_signal_on),
        T(test_async_condition_free_from_a_callback_and_while_waiting),
        T(test_async_condition_on_the_fair_lock_the_write_lock_and_a_fixed_lease),
        T(test_async_condition_free_while_its_join_or_release_is_out),
        T(test_async_condition_free_after_some_holds_were_taken_again_gives_them_back),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
