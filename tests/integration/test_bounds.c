/* SPDX-License-Identifier: MIT */
/*
 * Bounds: whatever the server does, a call that takes a wait returns within
 * that wait and one command timeout, and a call without one within one
 * command timeout. The server under the client is made to misbehave in
 * every way the fixture knows: stalled by DEBUG SLEEP, replaced by a fault
 * server that never answers, one that answers a byte at a time, one that
 * closes or resets every connection, one that does not speak RESP, or
 * reached through a relay frozen both ways. The client is always created
 * while the server is healthy (through a relay to the real server), and
 * the relay is then frozen, or led to a fault server with every live
 * connection cut.
 *
 * Each fault test runs the waiting calls (a lock, an RSemaphore, a
 * permit-expirable semaphore, a latch) twice, once begun before the fault
 * (already waiting when it comes) and once begun during it, and the calls
 * without a wait (unlock, is_locked) during it, all at once on their own
 * threads; each is timed from its own start. The same file checks that an
 * acquisition abandoned at its deadline but granted by the server is given
 * back, that freeing a client whose thread waits on a frozen link ends in
 * time, and that a replica behind a plain URL is reported at once.
 *
 * Timeouts are short so the file runs in seconds: a 400 ms command timeout
 * and 500 ms waits, with 300 ms of slack in the plain run and ten times
 * that under valgrind or the sanitizers (CR_TEST_SLOW=1).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "fault_server.h"
#include "lock_common.h"
#include "poll_loop.h"

#define CMD_TIMEOUT_MS 400
#define WAIT_MS 500
#define SLACK_MS 300

/* The relay every test's client goes through, and a healthy client that
 * talks to the server directly. */
static cr_test_relay *relay;
static cr_client *direct;
static cr_test_fault_server *fault;

/* ------------------------------------------------------------- helpers */

/* The most a call may take: its wait, one command timeout, the slack. */
static int64_t
bound_ms(int64_t wait_ms)
{
    return wait_ms + CMD_TIMEOUT_MS + slow(SLACK_MS);
}

/* A client for `url` with connect and command timeouts of
 * command_timeout_ms, a pool large enough for every thread of a test, and
 * the default reconnect window (30 s), which the bounds must not depend
 * on. */
static cr_client *
client_timed(const char *url, int64_t command_timeout_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = url;
    o.command_timeout_ms = command_timeout_ms;
    o.connect_timeout_ms = command_timeout_ms;
    o.pool_size = 12;
    if (cr_client_new(&o, &c) != CR_OK) {
        fprintf(stderr, "cr_client_new(%s): %s\n", url, cr_last_error());
        return NULL;
    }
    return c;
}

/* client_timed with the short timeouts of this file. */
static cr_client *
short_client(const char *url)
{
    return client_timed(url, CMD_TIMEOUT_MS);
}

/* Per-test setup: a flushed server, a relay to it, the client under test
 * through the relay and a direct one. */
static int
bounds_up(void **state)
{
    char url[64];

    (void)state;
    if (cr_test_redis_flushall(&test_redis) != 0)
        return -1;
    relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    if (relay == NULL)
        return -1;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", cr_test_relay_port(relay));
    test_client = short_client(url);
    direct = new_client(30000);
    return test_client != NULL && direct != NULL ? 0 : -1;
}

/* Per-test teardown: the clients first (the fault server and the relay
 * must outlive them), then the relay and any fault server. */
static int
bounds_down(void **state)
{
    (void)state;
    cr_client_free(test_client);
    test_client = NULL;
    cr_client_free(direct);
    direct = NULL;
    cr_test_relay_stop(relay);
    relay = NULL;
    cr_test_fault_stop(fault);
    fault = NULL;
    return 0;
}

/* ------------------------------------------------------ the timed calls */

/* The objects the calls use, all on the client under test: a lock held by
 * someone else, an RSemaphore and a permit-expirable semaphore without
 * permits, a closed latch, and a lock this client holds. */
typedef struct objects {
    cr_lock *busy;
    cr_lock *mine;
    cr_semaphore *sem;
    cr_permit_semaphore *psem;
    cr_latch *latch;
} objects;

/* The owner thread id of "b:mine", which another thread unlocks. */
#define MINE_TID 4242

typedef enum call_kind {
    CALL_TRY_LOCK = 0,
    CALL_SEMAPHORE,
    CALL_PERMIT_SEMAPHORE,
    CALL_LATCH_AWAIT,
    CALL_UNLOCK,
    CALL_IS_LOCKED
} call_kind;

#define NWAITING 4

static const char *const call_names[] = {
    "cr_lock_try_lock", "cr_semaphore_try_acquire",
    "cr_permit_semaphore_try_acquire", "cr_latch_await", "cr_lock_unlock",
    "cr_lock_is_locked"};

/* One call on its own thread, and what came of it. */
typedef struct call {
    call_kind kind;
    objects *o;
    int64_t wait_ms;
    cr_status rc;
    char detail[160];
    int64_t started, took;
    pthread_t thread;
} call;

/* Thread body: make the call and time it. */
static void *
call_run(void *arg)
{
    call *c = arg;
    char id[CR_PERMIT_ID_LEN + 1];
    bool locked;

    c->started = cr_test_now_ms();
    switch (c->kind) {
    case CALL_TRY_LOCK:
        c->rc = cr_lock_try_lock(c->o->busy, c->wait_ms, 60000);
        break;
    case CALL_SEMAPHORE:
        c->rc = cr_semaphore_try_acquire(c->o->sem, 1, c->wait_ms);
        break;
    case CALL_PERMIT_SEMAPHORE:
        c->rc = cr_permit_semaphore_try_acquire(c->o->psem, c->wait_ms, 60000,
                                                id);
        break;
    case CALL_LATCH_AWAIT:
        c->rc = cr_latch_await(c->o->latch, c->wait_ms);
        break;
    case CALL_UNLOCK:
        c->rc = cr_lock_unlock_tid(c->o->mine, MINE_TID);
        break;
    case CALL_IS_LOCKED:
        c->rc = cr_lock_is_locked(c->o->busy, &locked);
        break;
    }
    c->took = cr_test_now_ms() - c->started;
    snprintf(c->detail, sizeof(c->detail), "%s", cr_last_error());
    return NULL;
}

static void
call_start(call *c, objects *o, call_kind kind, int64_t wait_ms)
{
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    c->o = o;
    c->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&c->thread, NULL, call_run, c), 0);
}

/* Whether `rc` is an outcome the call may have while the server is bad:
 * its wait ran out, or the server could not be reached; with `may_pass`
 * (a link cut now and then), a call without a wait may also go through. */
static bool
acceptable(call_kind kind, cr_status rc, bool may_pass)
{
    if (may_pass && kind >= NWAITING && rc == CR_OK)
        return true;
    switch (kind) {
    case CALL_LATCH_AWAIT:
        return rc == CR_TIMEOUT || rc == CR_EIO;
    case CALL_UNLOCK:
    case CALL_IS_LOCKED:
        return rc == CR_EIO;
    default:
        return rc == CR_BUSY || rc == CR_EIO;
    }
}

/* Checks the bound and the status of a call that was joined; `may_pass`
 * as for acceptable(). */
static void
call_check(const call *c, const char *scenario, const char *when,
           bool may_pass)
{
    int64_t bound = bound_ms(c->kind < NWAITING ? c->wait_ms : 0);

    fprintf(stderr, "%s: %s %s: %s after %lld ms (bound %lld) %s\n", scenario,
            call_names[c->kind], when, cr_strerror(c->rc), (long long)c->took,
            (long long)bound, c->detail);
    assert_true(c->took <= bound);
    assert_true(acceptable(c->kind, c->rc, may_pass));
}

/* Opens the objects on the client under test and puts them in place while
 * the server is healthy: "b:busy" is held by an owner no client knows,
 * "b:mine" by this client, the semaphores have no permits and the latch a
 * count of 1. */
static void
objects_open(objects *o)
{
    memset(o, 0, sizeof(*o));
    assert_true(redis_ok("HSET b:busy someone-else:1 1"));
    assert_true(redis_ok("PEXPIRE b:busy 600000"));
    assert_int_equal(cr_lock_new(test_client, "b:busy", &o->busy), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "b:mine", &o->mine), CR_OK);
    assert_int_equal(cr_lock_try_lock_tid(o->mine, MINE_TID, 0, 600000), CR_OK);
    assert_int_equal(cr_semaphore_new(test_client, "b:sem", &o->sem), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(o->sem, 0, 0, NULL), CR_OK);
    assert_int_equal(cr_permit_semaphore_new(test_client, "b:psem", &o->psem),
                     CR_OK);
    assert_int_equal(cr_permit_semaphore_try_set_permits(o->psem, 0, NULL),
                     CR_OK);
    assert_int_equal(cr_latch_new(test_client, "b:latch", &o->latch), CR_OK);
    assert_int_equal(cr_latch_try_set_count(o->latch, 1, 0, NULL), CR_OK);
}

static void
objects_close(objects *o)
{
    cr_lock_free(o->busy);
    cr_lock_free(o->mine);
    cr_semaphore_free(o->sem);
    cr_permit_semaphore_free(o->psem);
    cr_latch_free(o->latch);
}

/* cr_test_wait_until condition: each waiting call begun before the fault
 * is inside its wait: the lock's and the semaphores' waiters in their
 * objects' lines, listening on their own channels; the latch's waiter on
 * the latch's channel. */
static bool
all_waiting(void *arg)
{
    static const char *const lines[] = {"b:busy", "b:sem", "b:psem"};
    size_t i;

    (void)arg;
    for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        if (line_length(lines[i]) < 1 || line_listeners(lines[i]) < 1)
            return false;
    return numsub("redisson_countdownlatch__channel__{b:latch}") >= 1;
}

/* How a scenario makes the server bad, and mends it. */
typedef struct scenario {
    const char *name;
    void (*begin)(void);
    void (*end)(void);
    bool may_pass; /* the server answers between faults */
} scenario;

/* Runs the calls of a fault test: the waiting calls begun while the server
 * is healthy, the fault once they wait, then every call again during it;
 * checks every bound. */
static void
run_scenario(const scenario *s)
{
    call before[NWAITING], during[NWAITING + 2];
    bool waiting;
    objects o;
    int i;

    objects_open(&o);
    for (i = 0; i < NWAITING; i++)
        call_start(&before[i], &o, (call_kind)i, WAIT_MS);
    waiting = cr_test_wait_until(all_waiting, NULL, slow(WAIT_MS) / 2);
    s->begin();
    for (i = 0; i < NWAITING + 2; i++)
        call_start(&during[i], &o, (call_kind)i, WAIT_MS);
    /* Every thread is joined before any check may fail the test. */
    for (i = 0; i < NWAITING; i++)
        pthread_join(before[i].thread, NULL);
    for (i = 0; i < NWAITING + 2; i++)
        pthread_join(during[i].thread, NULL);
    if (s->end != NULL)
        s->end();
    /* The first calls were inside their waits when the fault came, and a
     * fault server was met (the calls without a wait show the others). */
    assert_true(waiting);
    assert_true(fault == NULL || cr_test_fault_accepts(fault) >= 1);
    for (i = 0; i < NWAITING; i++)
        call_check(&before[i], s->name, "begun before the fault", s->may_pass);
    for (i = 0; i < NWAITING + 2; i++)
        call_check(&during[i], s->name, "begun during the fault", s->may_pass);
    objects_close(&o);
}

/* ------------------------------------------------ the same, asynchronous */

/* One asynchronous request and what came of it. */
typedef struct areq {
    call_kind kind;
    int calls;
    cr_status rc;
    int64_t started, took;
} areq;

static void
areq_done(void *userdata, cr_status rc, int64_t value)
{
    areq *q = userdata;

    (void)value;
    q->calls++;
    q->rc = rc;
    q->took = cr_test_now_ms() - q->started;
}

static void
areq_permit_done(void *userdata, cr_status rc, const char *id)
{
    (void)id;
    areq_done(userdata, rc, 0);
}

static void
areq_start(cr_async *a, areq *q, objects *o, call_kind kind)
{
    cr_status rc = CR_EINVAL;

    memset(q, 0, sizeof(*q));
    q->kind = kind;
    q->started = cr_test_now_ms();
    switch (kind) {
    case CALL_TRY_LOCK:
        rc = cr_async_lock(a, o->busy, cr_async_owner_id(), WAIT_MS, 60000,
                           areq_done, q, NULL);
        break;
    case CALL_SEMAPHORE:
        rc = cr_async_semaphore_acquire(a, o->sem, 1, WAIT_MS, areq_done, q,
                                        NULL);
        break;
    case CALL_PERMIT_SEMAPHORE:
        rc = cr_async_permit_acquire(a, o->psem, WAIT_MS, 60000,
                                     areq_permit_done, q, NULL);
        break;
    case CALL_LATCH_AWAIT:
        rc = cr_async_latch_await(a, o->latch, WAIT_MS, areq_done, q, NULL);
        break;
    case CALL_UNLOCK:
    case CALL_IS_LOCKED: /* no asynchronous query: a second unlock */
        rc = cr_async_unlock(a, o->mine, MINE_TID, areq_done, q, NULL);
        break;
    }
    assert_int_equal(rc, CR_OK);
}

/* The scenario's fault begun on a thread of its own, so that the loop
 * keeps turning meanwhile (DEBUG SLEEP's begins by waiting for the stall). */
static atomic_bool begun;

static void *
begin_run(void *arg)
{
    const scenario *s = arg;

    s->begin();
    atomic_store(&begun, true);
    return NULL;
}

/* One turn of the loop; the longest single dispatch (wall time) so far in
 * *longest. */
static void
timed_turn(cr_async *a, int64_t *longest)
{
    struct pollfd p[64];
    int64_t timeout = -1, t;
    int n = poll_loop_prepare(a, p, 64, &timeout), i;

    poll(p, (nfds_t)n, (int)(timeout < 0 || timeout > 10 ? 10 : timeout));
    for (i = 0; i < n; i++) {
        if (p[i].revents == 0)
            continue;
        t = cr_test_now_ms();
        cr_async_io(a, p[i].fd, poll_loop_events(p[i].revents));
        t = cr_test_now_ms() - t;
        *longest = t > *longest ? t : *longest;
    }
    t = cr_test_now_ms();
    cr_async_timeout(a);
    t = cr_test_now_ms() - t;
    *longest = t > *longest ? t : *longest;
}

static bool
all_called(const areq *q, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (q[i].calls == 0)
            return false;
    return true;
}

/* run_scenario's calls made through the asynchronous API on one loop: the
 * waiting requests begun before the fault and again during it, an unlock
 * during it; every callback runs once within the request's bound, and no
 * dispatch blocks the loop. */
static void
run_async_scenario(const scenario *s)
{
    areq before[NWAITING], during[NWAITING + 2];
    int64_t longest = 0, end;
    pthread_t beginner;
    cr_async *a = NULL;
    bool waiting;
    objects o;
    int i;

    objects_open(&o);
    assert_int_equal(cr_async_new(test_client, &poll_loop, &a), CR_OK);
    for (i = 0; i < NWAITING; i++)
        areq_start(a, &before[i], &o, (call_kind)i);
    end = cr_test_now_ms() + slow(WAIT_MS) / 2;
    while (!(waiting = all_waiting(NULL)) && cr_test_now_ms() < end)
        timed_turn(a, &longest);
    atomic_store(&begun, false);
    assert_int_equal(pthread_create(&beginner, NULL, begin_run, (void *)s), 0);
    while (!atomic_load(&begun))
        timed_turn(a, &longest);
    for (i = 0; i < NWAITING + 2; i++)
        areq_start(a, &during[i], &o, (call_kind)i);
    end = cr_test_now_ms() + bound_ms(WAIT_MS) + slow(2000);
    while ((!all_called(before, NWAITING) ||
            !all_called(during, NWAITING + 2)) &&
           cr_test_now_ms() < end)
        timed_turn(a, &longest);
    pthread_join(beginner, NULL);
    if (s->end != NULL)
        s->end();
    cr_async_free(a);
    assert_true(waiting);
    assert_true(fault == NULL || cr_test_fault_accepts(fault) >= 1);
    for (i = 0; i < NWAITING + NWAITING + 2; i++) {
        const areq *q = i < NWAITING ? &before[i] : &during[i - NWAITING];
        int64_t bound = bound_ms(q->kind < NWAITING ? WAIT_MS : 0);

        fprintf(stderr, "%s async: %s %s: %d callback(s), %s after %lld ms "
                        "(bound %lld)\n", s->name, call_names[q->kind],
                i < NWAITING ? "begun before the fault" : "begun during it",
                q->calls, cr_strerror(q->rc), (long long)q->took,
                (long long)bound);
        assert_int_equal(q->calls, 1);
        assert_true(q->took <= bound);
        assert_true(acceptable(q->kind == CALL_IS_LOCKED ? CALL_UNLOCK : q->kind,
                               q->rc, s->may_pass));
    }
    fprintf(stderr, "%s async: longest dispatch %lld ms\n", s->name,
            (long long)longest);
    assert_true(longest <= slow(100));
    objects_close(&o);
}

/* ----------------------------------------------------------- the faults */

static pthread_t sleeper;

/* Thread body: DEBUG SLEEP for as long as the slowest call may take, and
 * a little more, so that every call meets a stalled server. */
static void *
debug_sleep_run(void *arg)
{
    char secs[32];
    redisReply *r;

    (void)arg;
    snprintf(secs, sizeof(secs), "%.3f",
             (double)(bound_ms(WAIT_MS) + 400) / 1000.0);
    r = cr_test_redis_cmd(&test_redis, "DEBUG SLEEP %s", secs);
    if (r != NULL)
        freeReplyObject(r);
    return NULL;
}

/* cr_test_wait_until condition: the server does not answer PING within
 * 50 ms (the kernel still accepts the connection). */
static bool
server_stalled(void *arg)
{
    struct timeval tv = {0, 50000};
    redisContext *c;
    redisReply *r;
    bool stalled;

    (void)arg;
    c = redisConnectWithTimeout("127.0.0.1", test_redis.port, tv);
    if (c == NULL || c->err) {
        if (c != NULL)
            redisFree(c);
        return false;
    }
    redisSetTimeout(c, tv);
    r = redisCommand(c, "PING");
    stalled = r == NULL;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return stalled;
}

static void
debug_sleep_begin(void)
{
    assert_int_equal(pthread_create(&sleeper, NULL, debug_sleep_run, NULL), 0);
    assert_true(cr_test_wait_until(server_stalled, NULL, slow(2000)));
}

static void
debug_sleep_end(void)
{
    pthread_join(sleeper, NULL);
}

static void
freeze_begin(void)
{
    cr_test_relay_freeze(relay, true, true);
}

static void
freeze_end(void)
{
    cr_test_relay_thaw(relay);
}

/* Leads the relay to a new fault server of `mode` and cuts every live
 * connection: from now on each connection of the client meets the fault. */
static void
lead_to_fault(cr_test_fault_mode mode)
{
    fault = cr_test_fault_start(mode);
    assert_non_null(fault);
    assert_int_equal(cr_test_relay_retarget(relay, "127.0.0.1",
                                            cr_test_fault_port(fault)), 0);
    cr_test_relay_cut(relay);
}

static void
silent_begin(void)
{
    lead_to_fault(CR_TEST_FAULT_SILENT);
}

static void
drip_begin(void)
{
    lead_to_fault(CR_TEST_FAULT_DRIP);
    /* A byte every 50 ms: a receive timeout restarted by each byte would
     * never fire. */
    cr_test_fault_set_drip_ms(fault, 50);
}

static void
close_begin(void)
{
    lead_to_fault(CR_TEST_FAULT_CLOSE);
}

static void
reset_begin(void)
{
    lead_to_fault(CR_TEST_FAULT_RESET);
}

/* A thread that cuts every connection through the relay every 20 ms, to
 * the real server behind it, until told to stop. */
static pthread_t cutter;
static atomic_bool cutting;

static void *
cutter_run(void *arg)
{
    (void)arg;
    while (atomic_load(&cutting)) {
        cr_test_relay_cut(relay);
        usleep(20000);
    }
    return NULL;
}

static void
cut_begin(void)
{
    atomic_store(&cutting, true);
    assert_int_equal(pthread_create(&cutter, NULL, cutter_run, NULL), 0);
}

static void
cut_end(void)
{
    atomic_store(&cutting, false);
    pthread_join(cutter, NULL);
}

/* -------------------------------------------------------------- the tests */

static void
test_bounds_calls_end_in_time_while_the_server_is_in_debug_sleep(void **state)
{
    const scenario s = {"debug-sleep", debug_sleep_begin, debug_sleep_end, false};

    (void)state;
    run_scenario(&s);
}

static void
test_bounds_calls_end_in_time_against_a_server_that_never_answers(void **state)
{
    const scenario s = {"silent", silent_begin, NULL, false};

    (void)state;
    run_scenario(&s);
}

static void
test_bounds_calls_end_in_time_against_a_server_that_drips_bytes(void **state)
{
    const scenario s = {"drip", drip_begin, NULL, false};

    (void)state;
    run_scenario(&s);
}

static void
test_bounds_calls_end_in_time_through_a_relay_frozen_both_ways(void **state)
{
    const scenario s = {"frozen", freeze_begin, freeze_end, false};

    (void)state;
    run_scenario(&s);
}

static void
test_bounds_calls_end_in_time_when_every_connection_is_closed(void **state)
{
    const scenario s = {"close", close_begin, NULL, false};

    (void)state;
    run_scenario(&s);
}

static void
test_bounds_calls_end_in_time_when_every_connection_is_reset(void **state)
{
    const scenario s = {"reset", reset_begin, NULL, false};

    (void)state;
    run_scenario(&s);
}

static void
test_bounds_calls_end_in_time_while_a_relay_cuts_every_connection_again_and_again(void **state)
{
    const scenario s = {"cut", cut_begin, cut_end, true};

    (void)state;
    run_scenario(&s);
}

/* The asynchronous API under the same faults. */
#define ASYNC_SCENARIO(fn, name, begin, end, may_pass)                        \
    static void fn(void **state)                                               \
    {                                                                          \
        const scenario s = {name, begin, end, may_pass};                       \
                                                                               \
        (void)state;                                                           \
        run_async_scenario(&s);                                                \
    }
ASYNC_SCENARIO(test_bounds_async_requests_end_in_time_while_the_server_is_in_debug_sleep,
               "debug-sleep", debug_sleep_begin, debug_sleep_end, false)
ASYNC_SCENARIO(test_bounds_async_requests_end_in_time_against_a_server_that_never_answers,
               "silent", silent_begin, NULL, false)
ASYNC_SCENARIO(test_bounds_async_requests_end_in_time_against_a_server_that_drips_bytes,
               "drip", drip_begin, NULL, false)
ASYNC_SCENARIO(test_bounds_async_requests_end_in_time_through_a_relay_frozen_both_ways,
               "frozen", freeze_begin, freeze_end, false)
ASYNC_SCENARIO(test_bounds_async_requests_end_in_time_when_every_connection_is_reset,
               "reset", reset_begin, NULL, false)
#undef ASYNC_SCENARIO

static void
test_bounds_reconnections_to_a_closing_server_stay_within_ten_a_second(void **state)
{
    const int64_t wait_ms = 2000;
    call c[NWAITING];
    objects o;
    size_t rate;
    int i;

    (void)state;
    objects_open(&o);
    lead_to_fault(CR_TEST_FAULT_CLOSE);
    /* Four threads wait for two seconds, each retrying its connection. */
    for (i = 0; i < NWAITING; i++)
        call_start(&c[i], &o, (call_kind)i, wait_ms);
    for (i = 0; i < NWAITING; i++)
        pthread_join(c[i].thread, NULL);
    for (i = 0; i < NWAITING; i++)
        call_check(&c[i], "breaker", "waiting 2 s", false);
    rate = cr_test_fault_max_per_second(fault);
    fprintf(stderr, "breaker: %zu connections in all, at most %zu within a "
                    "second\n",
            cr_test_fault_accepts(fault), rate);
    assert_true(cr_test_fault_accepts(fault) >= 1);
    assert_true(rate <= 10);
    objects_close(&o);
}

static void
test_bounds_a_server_that_is_not_redis_ends_a_wait_at_once_with_econfig(void **state)
{
    cr_status rc;
    int64_t start, took;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "b:garbage", &l), CR_OK);
    assert_true(redis_ok("HSET b:garbage someone-else:1 1"));
    lead_to_fault(CR_TEST_FAULT_GARBAGE);
    /* A long wait: only a final status ends it this early. */
    start = cr_test_now_ms();
    rc = cr_lock_try_lock(l, 10000, CR_LEASE_WATCHDOG);
    took = cr_test_now_ms() - start;
    fprintf(stderr, "garbage: try_lock: %s after %lld ms: %s\n",
            cr_strerror(rc), (long long)took, cr_last_error());
    assert_int_equal(rc, CR_ECONFIG);
    assert_non_null(strstr(cr_last_error(), "does not speak the Redis protocol"));
    assert_true(took <= bound_ms(0));
    cr_lock_free(l);
}

static void
test_bounds_an_acquisition_abandoned_at_its_deadline_is_given_back(void **state)
{
    cr_lock *mine, *theirs;
    cr_status rc;
    int64_t start, took;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "b:abandoned", &mine), CR_OK);
    assert_int_equal(cr_lock_new(direct, "b:abandoned", &theirs), CR_OK);
    /* The scripts are loaded, so the next EVALSHA runs on the server. */
    assert_int_equal(cr_lock_try_lock(mine, 0, 600000), CR_OK);
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    assert_int_equal(cr_test_relay_freeze_replies_after(relay, "EVALSHA"), 0);
    start = cr_test_now_ms();
    rc = cr_lock_try_lock(mine, WAIT_MS, 600000);
    took = cr_test_now_ms() - start;
    fprintf(stderr, "abandoned: try_lock: %s after %lld ms: %s\n",
            cr_strerror(rc), (long long)took, cr_last_error());
    assert_true(cr_test_relay_frozen(relay));
    assert_true(rc == CR_EIO || rc == CR_BUSY);
    assert_true(took <= bound_ms(WAIT_MS));
    /* The server granted it all the same, for ten minutes. */
    assert_int_equal(redis_int("EXISTS b:abandoned"), 1);
    cr_test_relay_thaw(relay);
    /* The client looks at the hold count in the background and gives the
     * hold back; without that the key would stand for its lease. */
    start = cr_test_now_ms();
    assert_true(cr_test_wait_until(key_gone, "b:abandoned", slow(2000)));
    fprintf(stderr, "abandoned: given back %lld ms after the thaw\n",
            (long long)(cr_test_now_ms() - start));
    assert_int_equal(cr_lock_try_lock(theirs, 0, 600000), CR_OK);
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    cr_lock_free(mine);
    cr_lock_free(theirs);
}

static void
test_bounds_setup_timeout_ms_bounds_client_new_against_a_server_that_never_answers(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    cr_status rc;
    char url[64];
    int64_t start, took;

    (void)state;
    fault = cr_test_fault_start(CR_TEST_FAULT_SILENT);
    assert_non_null(fault);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", cr_test_fault_port(fault));
    o.url = url;
    o.connect_timeout_ms = CMD_TIMEOUT_MS;
    o.command_timeout_ms = CMD_TIMEOUT_MS;
    /* Without it: a connect and a command timeout, 800 ms. */
    o.setup_timeout_ms = CMD_TIMEOUT_MS / 2;
    start = cr_test_now_ms();
    rc = cr_client_new(&o, &c);
    took = cr_test_now_ms() - start;
    fprintf(stderr, "setup_timeout_ms %lld: %s after %lld ms: %s\n",
            (long long)o.setup_timeout_ms, cr_strerror(rc), (long long)took,
            cr_last_error());
    assert_int_equal(rc, CR_EIO);
    assert_null(c);
    assert_true(cr_test_fault_accepts(fault) >= 1);
    assert_true(took <= o.setup_timeout_ms + slow(SLACK_MS));
    o.setup_timeout_ms = -1;
    assert_int_equal(cr_client_new(&o, &c), CR_EINVAL);
}

/* The monotonic clock in ms, as cr_client_set_deadline reads it. */
static int64_t
monotonic_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
test_bounds_a_client_deadline_ends_waits_calls_and_their_give_backs_by_it(void **state)
{
    /* The one command the deadline leaves room for gets a command
     * timeout that holds under valgrind too: this client's, through the
     * relay. */
    int64_t cmd_ms = slow(CMD_TIMEOUT_MS), start, took, deadline;
    cr_client *c;
    cr_lock *busy, *mine;
    cr_status rc;
    char url[64];

    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d",
             cr_test_relay_port(relay));
    assert_non_null(c = client_timed(url, cmd_ms));
    assert_true(redis_ok("HSET b:busy someone-else:1 1"));
    assert_true(redis_ok("PEXPIRE b:busy 600000"));
    assert_int_equal(cr_lock_new(c, "b:busy", &busy), CR_OK);
    assert_int_equal(cr_lock_new(c, "b:given", &mine), CR_OK);
    /* A healthy server: the long wait is cut to end one command timeout
     * before the deadline, and ends as a wait that ran out. */
    start = monotonic_ms();
    deadline = start + WAIT_MS + cmd_ms;
    assert_int_equal(cr_client_set_deadline(c, deadline), CR_OK);
    rc = cr_lock_try_lock(busy, slow(30000), 600000);
    took = monotonic_ms() - start;
    fprintf(stderr, "deadline: try_lock on a held lock: %s after %lld ms: "
            "%s\n", cr_strerror(rc), (long long)took,
            rc == CR_BUSY ? "" : cr_last_error());
    assert_int_equal(rc, CR_BUSY);
    assert_true(took <= WAIT_MS + slow(SLACK_MS));
    /* With no room left for a wait, a call still makes its one attempt
     * (a free lock: taken). */
    assert_int_equal(cr_lock_try_lock(mine, slow(30000), 600000), CR_OK);
    assert_int_equal(cr_client_set_deadline(c, 0), CR_OK);
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    /* A server that grants an attempt but whose answer never comes: the
     * call ends by the deadline, and so does giving the grant back in the
     * background, which freeing the handle waits for (two command
     * timeouts without the deadline). */
    assert_int_equal(cr_test_relay_freeze_replies_after(relay, "EVALSHA"), 0);
    start = monotonic_ms();
    deadline = start + WAIT_MS + cmd_ms;
    assert_int_equal(cr_client_set_deadline(c, deadline), CR_OK);
    rc = cr_lock_try_lock(mine, slow(30000), 600000);
    cr_lock_free(mine);
    took = monotonic_ms() - start;
    fprintf(stderr, "deadline: try_lock and free on a frozen relay: %s "
            "after %lld ms: %s\n", cr_strerror(rc), (long long)took,
            cr_last_error());
    assert_true(cr_test_relay_frozen(relay));
    assert_true(rc == CR_EIO || rc == CR_BUSY);
    assert_true(took <= WAIT_MS + cmd_ms + slow(SLACK_MS));
    cr_test_relay_thaw(relay);
    /* Without the deadline, calls have their own bounds again. */
    assert_int_equal(cr_client_set_deadline(c, 0), CR_OK);
    assert_int_equal(cr_lock_try_lock(busy, 0, 600000), CR_BUSY);
    assert_int_equal(cr_client_set_deadline(c, -1), CR_EINVAL);
    assert_int_equal(cr_client_set_deadline(NULL, 1), CR_EINVAL);
    cr_lock_free(busy);
    cr_client_free(c);
}

/* A thread blocked in a long wait on the client under test. */
typedef struct blocked_wait {
    cr_lock *lock;
    cr_status rc;
    pthread_t thread;
} blocked_wait;

static void *
blocked_wait_run(void *arg)
{
    blocked_wait *b = arg;

    b->rc = cr_lock_try_lock(b->lock, slow(30000), CR_LEASE_WATCHDOG);
    return NULL;
}

/* cr_test_wait_until condition: the fair lock's queue `arg` has a
 * waiter. */
static bool
fair_queued(void *arg)
{
    return redis_int("LLEN %s", (const char *)arg) >= 1;
}

/* Starts a plain-lock and a fair-lock waiter on locks held by someone
 * else, waits until both wait, then freezes the relay both ways. */
static void
block_two_waiters(blocked_wait *b)
{
    assert_true(redis_ok("HSET b:held someone-else:1 1"));
    assert_true(redis_ok("PEXPIRE b:held 600000"));
    assert_true(redis_ok("HSET b:fair someone-else:1 1"));
    assert_true(redis_ok("PEXPIRE b:fair 600000"));
    assert_int_equal(cr_lock_new(test_client, "b:held", &b[0].lock), CR_OK);
    assert_int_equal(cr_fair_lock_new(test_client, "b:fair", &b[1].lock), CR_OK);
    assert_int_equal(pthread_create(&b[0].thread, NULL, blocked_wait_run, &b[0]),
                     0);
    assert_int_equal(pthread_create(&b[1].thread, NULL, blocked_wait_run, &b[1]),
                     0);
    await_waiters_in_line("b:held", 1);
    assert_true(cr_test_wait_until(line_listening, &(line_of){"b:held", 1},
                                   slow(5000)));
    assert_true(cr_test_wait_until(fair_queued, "redisson_lock_queue:{b:fair}",
                                   slow(5000)));
    cr_test_relay_freeze(relay, true, true);
}

/* Joins the waiters, which must have returned CR_ECLOSED, and frees their
 * handles. */
static void
join_two_waiters(blocked_wait *b)
{
    int i;

    for (i = 0; i < 2; i++)
        pthread_join(b[i].thread, NULL);
    for (i = 0; i < 2; i++) {
        fprintf(stderr, "waiter %d: %s\n", i, cr_strerror(b[i].rc));
        assert_int_equal(b[i].rc, CR_ECLOSED);
        cr_lock_free(b[i].lock);
    }
}

static void
test_bounds_client_free_returns_within_a_command_timeout_while_a_thread_waits(void **state)
{
    blocked_wait b[2];
    int64_t start, took;

    (void)state;
    block_two_waiters(b);
    /* The waiters' handles are not freed before the client here: they are
     * inside their calls, which the free ends (CR_ECLOSED). */
    start = cr_test_now_ms();
    cr_client_free(test_client);
    took = cr_test_now_ms() - start;
    test_client = NULL;
    fprintf(stderr, "cr_client_free: %lld ms (bound %lld)\n", (long long)took,
            (long long)bound_ms(0));
    assert_true(took <= bound_ms(0));
    join_two_waiters(b);
}

static void
test_bounds_client_free_within_zero_returns_at_once(void **state)
{
    blocked_wait b[2];
    int64_t start, took;

    (void)state;
    block_two_waiters(b);
    start = cr_test_now_ms();
    cr_client_free_within(test_client, 0);
    took = cr_test_now_ms() - start;
    test_client = NULL;
    fprintf(stderr, "cr_client_free_within(0): %lld ms\n", (long long)took);
    assert_true(took <= slow(100));
    join_two_waiters(b);
}

static void
test_bounds_a_replica_behind_a_plain_url_gives_econfig_within_a_command_timeout(void **state)
{
    cr_test_redis replica;
    cr_client *c;
    cr_lock *l;
    cr_status rc;
    char args[64];
    int64_t start, took;

    (void)state;
    snprintf(args, sizeof(args), "--replicaof 127.0.0.1 %d", test_redis.port);
    assert_int_equal(cr_test_redis_start(&replica, args), 0);
    c = short_client(replica.url);
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "b:on-a-replica", &l), CR_OK);
    /* A long wait and the 30 s reconnect window: neither may be waited
     * out, since no retry mends a replica. */
    start = cr_test_now_ms();
    rc = cr_lock_try_lock(l, 10000, CR_LEASE_WATCHDOG);
    took = cr_test_now_ms() - start;
    fprintf(stderr, "replica: try_lock: %s after %lld ms: %s\n",
            cr_strerror(rc), (long long)took, cr_last_error());
    assert_int_equal(rc, CR_ECONFIG);
    assert_non_null(strstr(cr_last_error(), "replica"));
    assert_true(took <= bound_ms(0));
    cr_lock_free(l);
    cr_client_free(c);
    cr_test_redis_destroy(&replica);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, bounds_up, bounds_down)
        T(test_bounds_calls_end_in_time_while_the_server_is_in_debug_sleep),
        T(test_bounds_calls_end_in_time_against_a_server_that_never_answers),
        T(test_bounds_calls_end_in_time_against_a_server_that_drips_bytes),
        T(test_bounds_calls_end_in_time_through_a_relay_frozen_both_ways),
        T(test_bounds_calls_end_in_time_when_every_connection_is_closed),
        T(test_bounds_calls_end_in_time_when_every_connection_is_reset),
        T(test_bounds_calls_end_in_time_while_a_relay_cuts_every_connection_again_and_again),
        T(test_bounds_async_requests_end_in_time_while_the_server_is_in_debug_sleep),
        T(test_bounds_async_requests_end_in_time_against_a_server_that_never_answers),
        T(test_bounds_async_requests_end_in_time_against_a_server_that_drips_bytes),
        T(test_bounds_async_requests_end_in_time_through_a_relay_frozen_both_ways),
        T(test_bounds_async_requests_end_in_time_when_every_connection_is_reset),
        T(test_bounds_reconnections_to_a_closing_server_stay_within_ten_a_second),
        T(test_bounds_a_server_that_is_not_redis_ends_a_wait_at_once_with_econfig),
        T(test_bounds_an_acquisition_abandoned_at_its_deadline_is_given_back),
        T(test_bounds_setup_timeout_ms_bounds_client_new_against_a_server_that_never_answers),
        T(test_bounds_a_client_deadline_ends_waits_calls_and_their_give_backs_by_it),
        T(test_bounds_client_free_returns_within_a_command_timeout_while_a_thread_waits),
        T(test_bounds_client_free_within_zero_returns_at_once),
        T(test_bounds_a_replica_behind_a_plain_url_gives_econfig_within_a_command_timeout),
#undef T
    };

    (void)client_up;
    (void)client_down;
    (void)redis_up;
    /* CR_TEST_FILTER=pattern runs only the matching tests. */
    if (getenv("CR_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("CR_TEST_FILTER"));
    return cmocka_run_group_tests(tests, redis_up_debug, redis_down);
}
