/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API against a real redis-server, driven by a poll()
 * loop of the test's own (poll_loop.h): locks taken, waited for,
 * cancelled and released without blocking, sharing holds with the
 * blocking API through owner ids; callbacks exactly once and never inside
 * the call that started them.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_server.h"
#include "lock_common.h"
#include "poll_loop.h"
#include "async_outcome.h"

static cr_async *
new_async(void)
{
    cr_async *a = NULL;

    assert_int_equal(cr_async_new(test_client, &poll_loop, &a), CR_OK);
    return a;
}

/* Runs `a` until o has its callback; the callback's status. */
static cr_status
await(cr_async *a, outcome *o, int64_t max_ms)
{
    assert_true(poll_loop_until(a, called, o, max_ms));
    assert_int_equal(o->calls, 1);
    return o->rc;
}

static void
test_async_lock_and_unlock_without_contention(void **state)
{
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, u = {0};
    char field[128];
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "alock", &l), CR_OK);
    assert_int_equal(cr_async_lock(a, l, owner, 0, 30000, record, &o, NULL),
                     CR_OK);
    assert_int_equal(o.calls, 0); /* never inside the call */
    assert_int_equal(await(a, &o, slow(3000)), CR_OK);
    snprintf(field, sizeof(field), "%s:%lld", cr_client_id(test_client),
             (long long)owner);
    assert_int_equal(redis_int("HGET alock %s", field), 1);
    assert_true(redis_int("PTTL alock") > 25000);
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_OK);
    assert_int_equal(redis_int("EXISTS alock"), 0);
    cr_async_free(a);
    cr_lock_free(l);
}

/* A blocking thread's hold, released after `hold_ms`. */
typedef struct holder {
    cr_lock *lock;
    int64_t hold_ms;
    atomic_bool holding;
    pthread_t thread;
} holder;

static void *
holder_run(void *arg)
{
    holder *h = arg;

    assert_int_equal(cr_lock_lock(h->lock, 30000), CR_OK);
    atomic_store(&h->holding, true);
    usleep((useconds_t)h->hold_ms * 1000);
    assert_int_equal(cr_lock_unlock(h->lock), CR_OK);
    return NULL;
}

static void
test_async_lock_waits_for_a_blocking_holder_and_wakes_on_its_release(void **state)
{
    cr_async *a = new_async();
    outcome o = {0};
    holder h = {0};
    int64_t start;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "shared", &l), CR_OK);
    h.lock = l;
    h.hold_ms = 300;
    assert_int_equal(pthread_create(&h.thread, NULL, holder_run, &h), 0);
    while (!atomic_load(&h.holding))
        usleep(1000);
    start = poll_loop_now_ms();
    assert_int_equal(cr_async_lock(a, l, cr_async_owner_id(), slow(10000),
                                   CR_LEASE_WATCHDOG, record, &o, NULL),
                     CR_OK);
    assert_int_equal(await(a, &o, slow(10000)), CR_OK);
    pthread_join(h.thread, NULL);
    /* Woken by the release's message: well before the lock's 30 s ttl. */
    assert_true(o.at - start < slow(3000));
    cr_async_free(a);
    cr_lock_free(l);
}

static void
test_async_lock_wait_runs_out_with_busy(void **state)
{
    cr_async *a = new_async();
    outcome o = {0};
    int64_t start;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "taken", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 30000), CR_OK);
    start = poll_loop_now_ms();
    assert_int_equal(cr_async_lock(a, l, cr_async_owner_id(), 300, 10000,
                                   record, &o, NULL), CR_OK);
    assert_int_equal(await(a, &o, slow(5000)), CR_BUSY);
    assert_true(o.at - start >= 300);
    assert_true(o.at - start < 300 + slow(1000));
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_async_free(a);
    cr_lock_free(l);
}

static void
test_async_cancel_ends_a_waiting_request_and_takes_nothing(void **state)
{
    cr_async *a = new_async();
    outcome o = {0};
    cr_request *req = NULL;
    cr_lock *l;
    int i;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "cancelled", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 30000), CR_OK);
    assert_int_equal(cr_async_lock(a, l, cr_async_owner_id(), CR_WAIT_FOREVER,
                                   10000, record, &o, &req), CR_OK);
    for (i = 0; i < 20; i++)
        poll_loop_turn(a, 10); /* it subscribes and sleeps */
    assert_int_equal(o.calls, 0);
    cr_async_cancel(req);
    assert_int_equal(o.calls, 0); /* never inside the call */
    assert_int_equal(await(a, &o, slow(3000)), CR_ECANCELED);
    /* Released now, the lock stays free: the cancelled request took
     * nothing (and its callback ran once). */
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    for (i = 0; i < 20; i++)
        poll_loop_turn(a, 10);
    assert_int_equal(redis_int("EXISTS cancelled"), 0);
    assert_int_equal(o.calls, 1);
    cr_async_free(a);
    cr_lock_free(l);
}

static void
test_async_hold_is_released_by_the_blocking_tid_call(void **state)
{
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, u = {0};
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "mixed", &l), CR_OK);
    assert_int_equal(cr_async_lock(a, l, owner, 0, 30000, record, &o, NULL),
                     CR_OK);
    assert_int_equal(await(a, &o, slow(3000)), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
    assert_int_equal(redis_int("EXISTS mixed"), 0);
    /* And the reverse: the blocking _tid call takes, the async one gives
     * back. */
    assert_int_equal(cr_lock_try_lock_tid(l, owner, 0, 30000), CR_OK);
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_OK);
    assert_int_equal(redis_int("EXISTS mixed"), 0);
    cr_async_free(a);
    cr_lock_free(l);
}

/* Many requests on a few locks from one loop: each takes its lock, bumps
 * a counter kept in Redis by a read and a write (a lost update shows as a
 * short count), then unlocks. */
#define MANY 300
#define LOCKS 3

typedef struct worker {
    cr_async *async;
    cr_lock *lock;
    int64_t owner;
    int stage; /* 0 waiting, 1 holding, 2 done */
    outcome o;
    int *done;
} worker;

static void
worker_unlocked(void *userdata, cr_status rc, int64_t value)
{
    worker *w = userdata;

    (void)value;
    assert_int_equal(rc, CR_OK);
    w->stage = 2;
    (*w->done)++;
}

static void
worker_locked(void *userdata, cr_status rc, int64_t value)
{
    worker *w = userdata;
    char key[32];
    int64_t n;

    (void)value;
    assert_int_equal(rc, CR_OK);
    w->stage = 1;
    snprintf(key, sizeof(key), "count:%s", cr_lock_name(w->lock));
    n = redis_int("GET %s", key);
    assert_true(redis_ok("SET %s %lld", key, (long long)n + 1));
    assert_int_equal(cr_async_unlock(w->async, w->lock, w->owner,
                                     worker_unlocked, w, NULL), CR_OK);
}

static bool
all_done(void *arg)
{
    return *(int *)arg == MANY;
}

static void
test_async_many_pending_requests_keep_counters_exact(void **state)
{
    static worker w[MANY];
    cr_async *a = new_async();
    cr_lock *locks[LOCKS];
    char name[16];
    int i, done = 0;

    (void)state;
    for (i = 0; i < LOCKS; i++) {
        snprintf(name, sizeof(name), "many%d", i);
        assert_int_equal(cr_lock_new(test_client, name, &locks[i]), CR_OK);
        assert_true(redis_ok("SET count:%s 0", name));
    }
    for (i = 0; i < MANY; i++) {
        w[i] = (worker){.async = a, .lock = locks[i % LOCKS],
                        .owner = cr_async_owner_id(), .done = &done};
        assert_int_equal(cr_async_lock(a, w[i].lock, w[i].owner,
                                       CR_WAIT_FOREVER, 30000, worker_locked,
                                       &w[i], NULL), CR_OK);
    }
    assert_true(poll_loop_until(a, all_done, &done, slow(60000)));
    for (i = 0; i < LOCKS; i++) {
        assert_int_equal(redis_int("GET count:many%d", i), MANY / LOCKS);
        assert_int_equal(redis_int("EXISTS many%d", i), 0);
        cr_lock_free(locks[i]);
    }
    cr_async_free(a);
}

/* ------------------------------------ async, blocking and CLI together */

/* Async requests, blocking threads and credisson(1) processes on one lock,
 * one semaphore of 2 permits and one latch; the async requests (up to
 * MX_ROUNDS times) and the threads take the lock again and again until the
 * tool's runs are over, so that all three contend. Every holder of the lock adds
 * one to a counter by a read and a write (a lost update shows as a short
 * count); every holder of a permit counts itself in "mx:inside" and
 * records in "mx:over" when it finds more than 2 inside; every count-down
 * of the latch is recorded in "mx:counted" before it is made, so that an
 * await that returns must find them all. */
#define MX_ASYNC 40     /* async requests on each object */
#define MX_THREADS 4    /* blocking threads ... */
#define MX_ROUNDS 10    /* ... each at least this many times */
#define MX_CLI 6        /* credisson(1) runs on each object */
#define MX_COUNT_DOWNS (MX_ASYNC + MX_THREADS + MX_CLI)

typedef struct mixed {
    cr_async *a;
    cr_lock *lock;
    cr_semaphore *sem;
    cr_latch *latch;
    int done;         /* async requests and awaits finished */
    int failures;
    int64_t async_holds;
    atomic_bool cli_done;
} mixed;

typedef struct mixed_req {
    mixed *m;
    int64_t owner;
    int rounds;
} mixed_req;

static void
critical_section(void)
{
    long long n = redis_int("GET mx:count");

    usleep(1000); /* a window for a lost update */
    redis_ok("SET mx:count %lld", (n < 0 ? 0 : n) + 1);
}

static void
permit_section(void)
{
    if (redis_int("INCR mx:inside") > 2)
        redis_int("INCR mx:over");
    redis_int("DECR mx:inside");
}

static void
mixed_finished(void *userdata, cr_status rc, int64_t value)
{
    mixed_req *r = userdata;

    (void)value;
    if (rc != CR_OK)
        r->m->failures++;
    r->m->done++;
}

static void mixed_locked(void *userdata, cr_status rc, int64_t value);

/* An async holder gave the lock back: again, up to MX_ROUNDS times,
 * while the tool runs. */
static void
mixed_unlocked(void *userdata, cr_status rc, int64_t value)
{
    mixed_req *r = userdata;

    if (rc == CR_OK && ++r->rounds < MX_ROUNDS &&
        !atomic_load(&r->m->cli_done) &&
        cr_async_lock(r->m->a, r->m->lock, r->owner, CR_WAIT_FOREVER, 30000,
                      mixed_locked, r, NULL) == CR_OK)
        return;
    mixed_finished(userdata, rc, value);
}

static void
mixed_locked(void *userdata, cr_status rc, int64_t value)
{
    mixed_req *r = userdata;

    if (rc != CR_OK) {
        mixed_finished(r, rc, value);
        return;
    }
    critical_section();
    r->m->async_holds++;
    rc = cr_async_unlock(r->m->a, r->m->lock, r->owner, mixed_unlocked, r,
                         NULL);
    if (rc != CR_OK)
        mixed_finished(r, rc, value);
}

static void
mixed_permitted(void *userdata, cr_status rc, int64_t value)
{
    mixed_req *r = userdata;

    if (rc != CR_OK) {
        mixed_finished(r, rc, value);
        return;
    }
    permit_section();
    rc = cr_async_semaphore_release(r->m->a, r->m->sem, 1, mixed_finished, r,
                                    NULL);
    if (rc != CR_OK)
        mixed_finished(r, rc, value);
}

/* An await returned: every count-down must have come first. */
static void
mixed_opened(void *userdata, cr_status rc, int64_t value)
{
    mixed_req *r = userdata;

    (void)value;
    if (rc != CR_OK || redis_int("GET mx:counted") != MX_COUNT_DOWNS)
        r->m->failures++;
    r->m->done++;
}

/* A blocking thread: MX_ROUNDS of the lock and of a permit, one count
 * down, then an await. */
typedef struct mixed_thread {
    mixed *m;
    atomic_int failures;
    int holds;
    pthread_t thread;
} mixed_thread;

static void *
mixed_thread_run(void *arg)
{
    mixed_thread *t = arg;
    int i;

    for (i = 0; i < MX_ROUNDS || !atomic_load(&t->m->cli_done); i++) {
        if (cr_lock_lock(t->m->lock, 30000) != CR_OK) {
            atomic_fetch_add(&t->failures, 1);
            continue;
        }
        critical_section();
        t->holds++;
        if (cr_lock_unlock(t->m->lock) != CR_OK)
            atomic_fetch_add(&t->failures, 1);
        usleep(5000); /* the tool's runs get their turns too */
        if (cr_semaphore_acquire(t->m->sem, 1) != CR_OK) {
            atomic_fetch_add(&t->failures, 1);
            continue;
        }
        permit_section();
        if (cr_semaphore_release(t->m->sem, 1) != CR_OK)
            atomic_fetch_add(&t->failures, 1);
    }
    redis_int("INCR mx:counted");
    if (cr_latch_count_down(t->m->latch) != CR_OK)
        atomic_fetch_add(&t->failures, 1);
    if (cr_latch_await(t->m->latch, 60000) != CR_OK ||
        redis_int("GET mx:counted") != MX_COUNT_DOWNS)
        atomic_fetch_add(&t->failures, 1);
    return NULL;
}

/* The credisson(1) side, two shells: one makes MX_CLI runs under the lock
 * and MX_CLI under a permit, and MX_CLI count-downs; the other awaits the
 * latch and checks what was counted. Each exits 0 when all went well. */
typedef struct mixed_cli {
    char cmd[4096];
    int status;
    atomic_bool *done;
    pthread_t thread;
} mixed_cli;

static void *
mixed_cli_run(void *arg)
{
    mixed_cli *c = arg;

    c->status = system(c->cmd);
    if (c->done != NULL)
        atomic_store(c->done, true);
    return NULL;
}

static bool
mixed_all_done(void *arg)
{
    mixed *m = arg;

    return m->done == 3 * MX_ASYNC + 1;
}

static void
test_async_blocking_and_cli_clients_share_objects_with_exact_counts(void **state)
{
    static mixed_req reqs[3 * MX_ASYNC + 1];
    const char *dir = getenv("CR_TEST_BUILDDIR");
    mixed_thread threads[MX_THREADS];
    mixed_cli cli, awaiter;
    mixed m = {0};
    int64_t holds;
    int i, k = 0;

    (void)state;
    m.a = new_async();
    assert_int_equal(cr_lock_new(test_client, "mx:lock", &m.lock), CR_OK);
    assert_int_equal(cr_semaphore_new(test_client, "mx:sem", &m.sem), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(m.sem, 2, 0, NULL), CR_OK);
    assert_int_equal(cr_latch_new(test_client, "mx:latch", &m.latch), CR_OK);
    assert_int_equal(cr_latch_try_set_count(m.latch, MX_COUNT_DOWNS, 0, NULL),
                     CR_OK);
    snprintf(cli.cmd, sizeof(cli.cmd),
             "t='%s/credisson --url redis://127.0.0.1:%d'; r='redis-cli -p %d'; "
             "ok=0; for i in $(seq %d); do "
             " $t lock mx:lock -- sh -c \"v=\\$($r GET mx:count); sleep 0.02; "
             "  $r SET mx:count \\$((v + 1)) >/dev/null\" || ok=1; "
             " $t semaphore mx:sem -- sh -c \"n=\\$($r INCR mx:inside); "
             "  [ \\$n -gt 2 ] && $r INCR mx:over; $r DECR mx:inside\" "
             "  >/dev/null || ok=1; "
             " $r INCR mx:counted >/dev/null; "
             " $t latch mx:latch count-down || ok=1; "
             "done; exit $ok",
             dir != NULL ? dir : ".", test_redis.port, test_redis.port, MX_CLI);
    snprintf(awaiter.cmd, sizeof(awaiter.cmd),
             "%s/credisson --url redis://127.0.0.1:%d latch mx:latch await "
             "--timeout 120s && [ \"$(redis-cli -p %d GET mx:counted)\" = %d ]",
             dir != NULL ? dir : ".", test_redis.port, test_redis.port,
             MX_COUNT_DOWNS);
    cli.done = &m.cli_done;
    awaiter.done = NULL;
    atomic_init(&m.cli_done, false);
    assert_int_equal(pthread_create(&cli.thread, NULL, mixed_cli_run, &cli), 0);
    assert_int_equal(pthread_create(&awaiter.thread, NULL, mixed_cli_run,
                                    &awaiter), 0);
    for (i = 0; i < MX_THREADS; i++) {
        threads[i].m = &m;
        threads[i].holds = 0;
        atomic_init(&threads[i].failures, 0);
        assert_int_equal(pthread_create(&threads[i].thread, NULL,
                                        mixed_thread_run, &threads[i]), 0);
    }
    for (i = 0; i < MX_ASYNC; i++) {
        reqs[k] = (mixed_req){&m, cr_async_owner_id(), 0};
        assert_int_equal(cr_async_lock(m.a, m.lock, reqs[k].owner,
                                       CR_WAIT_FOREVER, 30000, mixed_locked,
                                       &reqs[k], NULL), CR_OK);
        k++;
        reqs[k] = (mixed_req){&m, 0, 0};
        assert_int_equal(cr_async_semaphore_acquire(m.a, m.sem, 1,
                                                    CR_WAIT_FOREVER,
                                                    mixed_permitted, &reqs[k],
                                                    NULL), CR_OK);
        k++;
    }
    reqs[k] = (mixed_req){&m, 0, 0};
    assert_int_equal(cr_async_latch_await(m.a, m.latch, CR_WAIT_FOREVER,
                                          mixed_opened, &reqs[k], NULL), CR_OK);
    k++;
    for (i = 0; i < MX_ASYNC; i++) {
        reqs[k] = (mixed_req){&m, 0, 0};
        assert_true(redis_int("INCR mx:counted") > 0);
        assert_int_equal(cr_async_latch_count_down(m.a, m.latch,
                                                   mixed_finished, &reqs[k],
                                                   NULL), CR_OK);
        k++;
    }
    /* Every async request and the await; the others join below. */
    assert_true(poll_loop_until(m.a, mixed_all_done, &m, slow(120000)));
    pthread_join(cli.thread, NULL);
    pthread_join(awaiter.thread, NULL);
    holds = m.async_holds + MX_CLI;
    for (i = 0; i < MX_THREADS; i++) {
        pthread_join(threads[i].thread, NULL);
        assert_int_equal(atomic_load(&threads[i].failures), 0);
        holds += threads[i].holds;
    }
    fprintf(stderr, "mixed: %lld holds of the lock (%lld async)\n",
            (long long)holds, (long long)m.async_holds);
    assert_int_equal(m.failures, 0);
    assert_true(WIFEXITED(cli.status));
    assert_int_equal(WEXITSTATUS(cli.status), 0);
    assert_true(WIFEXITED(awaiter.status));
    assert_int_equal(WEXITSTATUS(awaiter.status), 0);
    assert_int_equal(redis_int("GET mx:count"), holds);
    assert_int_equal(redis_int("GET mx:over"), -999); /* never set */
    assert_int_equal(redis_int("GET mx:inside"), 0);
    assert_int_equal(redis_int("EXISTS mx:lock mx:latch"), 0);
    assert_int_equal(redis_int("GET mx:sem"), 2); /* every permit back */
    cr_async_free(m.a);
    cr_lock_free(m.lock);
    cr_semaphore_free(m.sem);
    cr_latch_free(m.latch);
}

/* ------------------------------------------------------ a stalled loop */

static void
count_late_loop(void *userdata, cr_log_level level, const char *msg)
{
    if (level == CR_LOG_WARN && strstr(msg, "event loop ran") != NULL)
        atomic_fetch_add((atomic_int *)userdata, 1);
}

/* Starts a 300 ms wait on "stalled" (held by the test's client) from `a`. */
static void
wait_on_held(cr_async *a, cr_lock *l, outcome *o)
{
    assert_int_equal(cr_async_lock(a, l, cr_async_owner_id(), 300, 30000,
                                   record, o, NULL), CR_OK);
}

/* An application that blocks its loop past the library's timer is told in
 * the log; one that turns it in time is not. */
static void
test_async_a_loop_blocked_past_a_timer_is_reported_in_the_log(void **state)
{
    cr_client_options opt = CR_CLIENT_OPTIONS_INIT;
    atomic_int warned;
    outcome first = {0}, second = {0};
    cr_lock *held, *l;
    cr_client *c = NULL;
    cr_async *a = NULL;
    int i;

    (void)state;
    atomic_init(&warned, 0);
    opt.url = test_redis.url;
    opt.log_fn = count_late_loop;
    opt.log_userdata = &warned;
    assert_int_equal(cr_client_new(&opt, &c), CR_OK);
    assert_int_equal(cr_async_new(c, &poll_loop, &a), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "stalled", &held), CR_OK);
    assert_int_equal(cr_lock_lock(held, 30000), CR_OK);
    assert_int_equal(cr_lock_new(c, "stalled", &l), CR_OK);
    wait_on_held(a, l, &first);
    assert_int_equal(await(a, &first, slow(5000)), CR_BUSY);
    assert_int_equal(atomic_load(&warned), 0);
    wait_on_held(a, l, &second);
    for (i = 0; i < 5; i++)
        poll_loop_turn(a, 10);
    usleep(1500 * 1000); /* the application blocks its loop */
    assert_int_equal(await(a, &second, slow(5000)), CR_BUSY);
    assert_int_equal(atomic_load(&warned), 1);
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    cr_async_free(a);
    cr_lock_free(l);
    cr_lock_free(held);
    cr_client_free(c);
}

/* ------------------------------------------------ MultiLock and RedLock */

/* Three sub-locks "m:a", "m:b", "m:c" on the test's client. */
static void
sub_locks(cr_lock *subs[3])
{
    static const char *const names[3] = {"m:a", "m:b", "m:c"};
    int i;

    for (i = 0; i < 3; i++)
        assert_int_equal(cr_lock_new(test_client, names[i], &subs[i]), CR_OK);
}

/* Fields that owner holds in the three sub-locks' hashes. */
static long long
held_by(int64_t owner)
{
    char field[128];

    snprintf(field, sizeof(field), "%s:%lld", cr_client_id(test_client),
             (long long)owner);
    return redis_int("HEXISTS m:a %s", field) +
           redis_int("HEXISTS m:b %s", field) +
           redis_int("HEXISTS m:c %s", field);
}

/* A MultiLock taken, waited for and released on the loop; a RedLock too;
 * the blocking _tid call releases what the loop took. */
static void
test_async_multilock_and_redlock_are_taken_without_blocking_the_loop(void **state)
{
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id(), start;
    outcome o = {0}, u = {0}, w = {0}, r = {0};
    cr_lock *subs[3], *multi, *red, *other;

    (void)state;
    sub_locks(subs);
    assert_int_equal(cr_multilock_new(subs, 3, &multi), CR_OK);
    assert_int_equal(cr_redlock_new(subs, 3, &red), CR_OK);
    assert_int_equal(cr_async_lock(a, multi, owner, 0, 30000, record, &o,
                                   NULL), CR_OK);
    assert_int_equal(o.calls, 0); /* never inside the call */
    assert_int_equal(await(a, &o, slow(5000)), CR_OK);
    assert_int_equal(held_by(owner), 3);
    assert_int_equal(cr_async_unlock(a, multi, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(5000)), CR_OK);
    assert_int_equal(redis_int("EXISTS m:a m:b m:c"), 0);
    /* One sub-lock held elsewhere: a wait that runs out, within its
     * bound, then one that gets all three once it is released. */
    assert_int_equal(cr_lock_new(test_client, "m:b", &other), CR_OK);
    assert_int_equal(cr_lock_lock(other, 30000), CR_OK);
    memset(&o, 0, sizeof(o));
    start = poll_loop_now_ms();
    assert_int_equal(cr_async_lock(a, multi, owner, 300, 30000, record, &o,
                                   NULL), CR_OK);
    assert_int_equal(await(a, &o, slow(5000)), CR_BUSY);
    assert_true(o.at - start <= 300 + slow(2500));
    assert_int_equal(held_by(owner), 0);
    assert_int_equal(cr_async_lock(a, multi, owner, CR_WAIT_FOREVER, 30000,
                                   record, &w, NULL), CR_OK);
    for (int i = 0; i < 20; i++)
        poll_loop_turn(a, 10);
    assert_int_equal(w.calls, 0);
    assert_int_equal(cr_lock_unlock(other), CR_OK);
    assert_int_equal(await(a, &w, slow(5000)), CR_OK);
    assert_int_equal(held_by(owner), 3);
    assert_int_equal(cr_lock_unlock_tid(multi, owner), CR_OK);
    assert_int_equal(held_by(owner), 0);
    /* A RedLock: a majority suffices. */
    assert_int_equal(cr_lock_lock(other, 30000), CR_OK);
    assert_int_equal(cr_async_lock(a, red, owner, 1000, 30000, record, &r,
                                   NULL), CR_OK);
    assert_int_equal(await(a, &r, slow(5000)), CR_OK);
    assert_int_equal(held_by(owner), 2);
    memset(&u, 0, sizeof(u));
    assert_int_equal(cr_async_unlock(a, red, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(5000)), CR_OK);
    assert_int_equal(held_by(owner), 0);
    assert_int_equal(cr_lock_unlock(other), CR_OK);
    cr_async_free(a);
    cr_lock_free(red);
    cr_lock_free(multi);
    cr_lock_free(other);
    for (int i = 0; i < 3; i++)
        cr_lock_free(subs[i]);
}

/* Cancelled while it waits, and freed while it waits: it ends (within a
 * slice and a command), its callback runs once, and nothing stays held. */
static void
test_async_multilock_cancel_and_free_end_the_wait_and_leave_nothing(void **state)
{
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id();
    outcome c = {0}, f = {0};
    cr_lock *subs[3], *multi, *other;
    cr_request *req = NULL;
    int i;

    (void)state;
    sub_locks(subs);
    assert_int_equal(cr_multilock_new(subs, 3, &multi), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "m:c", &other), CR_OK);
    assert_int_equal(cr_lock_lock(other, 30000), CR_OK);
    assert_int_equal(cr_async_lock(a, multi, owner, CR_WAIT_FOREVER, 30000,
                                   record, &c, &req), CR_OK);
    for (i = 0; i < 20; i++)
        poll_loop_turn(a, 10);
    cr_async_cancel(req);
    assert_int_equal(await(a, &c, slow(5000)), CR_ECANCELED);
    assert_int_equal(held_by(owner), 0);
    assert_int_equal(cr_async_lock(a, multi, owner, CR_WAIT_FOREVER, 30000,
                                   record, &f, NULL), CR_OK);
    for (i = 0; i < 20; i++)
        poll_loop_turn(a, 10);
    cr_async_free(a);
    assert_int_equal(f.calls, 1);
    assert_int_equal(f.rc, CR_ECLOSED);
    assert_int_equal(held_by(owner), 0);
    assert_int_equal(cr_lock_unlock(other), CR_OK);
    cr_lock_free(multi);
    cr_lock_free(other);
    for (i = 0; i < 3; i++)
        cr_lock_free(subs[i]);
}

static void
test_async_fenced_lock_gives_its_token_and_shares_it_with_the_tid_calls(void **state)
{
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, p = {0}, u = {0};
    int64_t token = 0;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_fenced_lock_new(test_client, "fenced", &l), CR_OK);
    assert_int_equal(cr_async_lock(a, l, owner, 0, 30000, record, &o, NULL),
                     CR_OK);
    assert_int_equal(await(a, &o, slow(3000)), CR_OK);
    assert_int_equal(o.value, 1);
    assert_int_equal(cr_async_lock(a, l, owner, 0, 30000, record, &p, NULL),
                     CR_OK);
    assert_int_equal(await(a, &p, slow(3000)), CR_OK);
    assert_int_equal(p.value, 2); /* reentrant: the next token */
    /* The blocking token calls reenter the same owner's hold. */
    assert_int_equal(cr_fenced_lock_try_lock_and_get_token_tid(l, owner, 0,
                                                               30000, &token),
                     CR_OK);
    assert_int_equal(token, 3);
    assert_int_equal(cr_fenced_lock_lock_and_get_token_tid(l, owner, 30000,
                                                           &token), CR_OK);
    assert_int_equal(token, 4);
    assert_int_equal(redis_int("HGET fenced %s:%lld", cr_client_id(test_client),
                               (long long)owner), 4);
    /* Another owner is refused while it holds. */
    assert_int_equal(cr_fenced_lock_try_lock_and_get_token_tid(l, owner + 1, 0,
                                                               30000, &token),
                     CR_BUSY);
    assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
    assert_int_equal(redis_int("EXISTS fenced"), 0);
    cr_async_free(a);
    cr_lock_free(l);
}

static void
test_async_free_ends_pending_requests_with_eclosed(void **state)
{
    cr_async *a = new_async();
    outcome o = {0};
    cr_lock *l;
    int i;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "held", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 30000), CR_OK);
    assert_int_equal(cr_async_lock(a, l, cr_async_owner_id(), CR_WAIT_FOREVER,
                                   10000, record, &o, NULL), CR_OK);
    for (i = 0; i < 20; i++)
        poll_loop_turn(a, 10);
    cr_async_free(a);
    assert_int_equal(o.calls, 1);
    assert_int_equal(o.rc, CR_ECLOSED);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

/* What a callback that frees its handle saw. */
typedef struct freer {
    cr_async *a;
    cr_lock *other;
    outcome o, late;
    cr_status late_rc;
    bool freed;
} freer;

static void
free_from_callback(void *userdata, cr_status rc, int64_t value)
{
    freer *f = userdata;

    record(&f->o, rc, value);
    cr_async_free(f->a);
    /* Still inside the dispatch: the handle lives, but takes nothing new. */
    f->late_rc = cr_async_lock(f->a, f->other, cr_async_owner_id(), 0, 1000,
                               record, &f->late, NULL);
    f->freed = true;
}

/* A turn of the loop that stops calling into the handle once a callback
 * freed it (that dispatch was the handle's last). */
static void
turn_until_freed(freer *f)
{
    struct pollfd p[64];
    int64_t timeout = -1;
    int n = poll_loop_prepare(f->a, p, 64, &timeout), i;

    poll(p, (nfds_t)n, (int)(timeout < 0 || timeout > 10 ? 10 : timeout));
    for (i = 0; i < n && !f->freed; i++)
        if (p[i].revents != 0)
            cr_async_io(f->a, p[i].fd, poll_loop_events(p[i].revents));
    if (!f->freed)
        cr_async_timeout(f->a);
}

/* cr_async_free from a callback: the handle goes when that dispatch
 * returns, the other pending requests end with CR_ECLOSED once, and what
 * is asked meanwhile is refused at once. */
static void
test_async_free_from_a_callback_waits_for_the_dispatch(void **state)
{
    freer f = {0};
    outcome waiting = {0};
    int64_t owner = cr_async_owner_id(), end;
    cr_lock *free_lock, *held;

    (void)state;
    f.a = new_async();
    assert_int_equal(cr_lock_new(test_client, "freed-in-cb", &free_lock), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "held-elsewhere", &held), CR_OK);
    assert_int_equal(cr_lock_lock(held, 30000), CR_OK);
    f.other = held;
    assert_int_equal(cr_async_lock(f.a, held, cr_async_owner_id(),
                                   CR_WAIT_FOREVER, 10000, record, &waiting,
                                   NULL), CR_OK);
    assert_int_equal(cr_async_lock(f.a, free_lock, owner, 0, 30000,
                                   free_from_callback, &f, NULL), CR_OK);
    end = poll_loop_now_ms() + slow(5000);
    while (!f.freed && poll_loop_now_ms() < end)
        turn_until_freed(&f);
    assert_true(f.freed);
    assert_int_equal(f.o.calls, 1);
    assert_int_equal(f.o.rc, CR_OK);
    assert_int_equal(f.late_rc, CR_ECLOSED);
    assert_int_equal(f.late.calls, 0);
    /* The waiter ended with the handle, once. */
    assert_int_equal(waiting.calls, 1);
    assert_int_equal(waiting.rc, CR_ECLOSED);
    /* A hold obtained before the free stays held: its owner gives it back. */
    assert_int_equal(redis_int("EXISTS freed-in-cb"), 1);
    assert_int_equal(cr_lock_unlock_tid(free_lock, owner), CR_OK);
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    cr_lock_free(free_lock);
    cr_lock_free(held);
}

static void
test_async_owner_ids_never_meet_thread_ids(void **state)
{
    int64_t a = cr_async_owner_id(), b = cr_async_owner_id();

    (void)state;
    assert_true(a >= (int64_t)1 << 62);
    assert_true(b > a);
    assert_true(cr_thread_id() < (int64_t)1 << 62);
}

static void
test_async_bad_arguments_are_refused_without_a_callback(void **state)
{
    cr_async *a = new_async();
    outcome o = {0};
    cr_lock *l, *m;
    cr_lock *parts[1];

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "bad", &l), CR_OK);
    parts[0] = l;
    assert_int_equal(cr_multilock_new(parts, 1, &m), CR_OK);
    assert_int_equal(cr_async_lock(NULL, l, 1, 0, 1000, record, &o, NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_lock(a, NULL, 1, 0, 1000, record, &o, NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_lock(a, l, 0, 0, 1000, record, &o, NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_lock(a, l, 1, -5, 1000, record, &o, NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_lock(a, l, 1, 0, 0, record, &o, NULL),
                     CR_EINVAL);
    assert_int_equal(cr_async_lock(a, m, 0, 0, 1000, record, &o, NULL),
                     CR_EINVAL);
    poll_loop_turn(a, 20);
    assert_int_equal(o.calls, 0);
    cr_async_free(a);
    cr_lock_free(m);
    cr_lock_free(l);
}

/* ---------------------------------------------- semaphores and latches */

typedef struct permit_outcome {
    int calls;
    cr_status rc;
    char id[CR_PERMIT_ID_LEN + 1];
} permit_outcome;

static void
record_permit(void *userdata, cr_status rc, const char *id)
{
    permit_outcome *o = userdata;

    o->calls++;
    o->rc = rc;
    snprintf(o->id, sizeof(o->id), "%s", id != NULL ? id : "");
}

static bool
permit_called(void *arg)
{
    return ((permit_outcome *)arg)->calls > 0;
}

/* A blocking thread that releases permits after a pause. */
typedef struct releaser {
    cr_semaphore *sem;
    int64_t after_ms;
    pthread_t thread;
} releaser;

static void *
releaser_run(void *arg)
{
    releaser *r = arg;

    usleep((useconds_t)r->after_ms * 1000);
    assert_int_equal(cr_semaphore_release(r->sem, 2), CR_OK);
    return NULL;
}

static void
test_async_semaphore_acquire_waits_for_a_release_and_counts_exactly(void **state)
{
    cr_async *a = new_async();
    outcome o = {0}, b = {0}, v = {0};
    cr_semaphore *s;
    releaser r;
    int64_t start;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "asem", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 1, 0, NULL), CR_OK);
    r = (releaser){.sem = s, .after_ms = 300};
    start = poll_loop_now_ms();
    assert_int_equal(cr_async_semaphore_acquire(a, s, 3, slow(10000), record,
                                                &o, NULL), CR_OK);
    assert_int_equal(pthread_create(&r.thread, NULL, releaser_run, &r), 0);
    assert_int_equal(await(a, &o, slow(10000)), CR_OK);
    pthread_join(r.thread, NULL);
    assert_true(o.at - start >= 300);
    assert_true(o.at - start < 300 + slow(2000)); /* woken, not polled */
    assert_int_equal(redis_int("GET asem"), 0);
    /* Too few now: the wait runs out. */
    assert_int_equal(cr_async_semaphore_acquire(a, s, 1, 200, record, &b,
                                                NULL), CR_OK);
    assert_int_equal(await(a, &b, slow(5000)), CR_BUSY);
    assert_int_equal(cr_async_semaphore_add_permits(a, s, 5, record, &v,
                                                    NULL), CR_OK);
    assert_int_equal(await(a, &v, slow(3000)), CR_OK);
    assert_int_equal(v.value, 5);
    memset(&v, 0, sizeof(v));
    assert_int_equal(cr_async_semaphore_release(a, s, 2, record, &v, NULL),
                     CR_OK);
    assert_int_equal(await(a, &v, slow(3000)), CR_OK);
    memset(&v, 0, sizeof(v));
    assert_int_equal(cr_async_semaphore_drain_permits(a, s, record, &v, NULL),
                     CR_OK);
    assert_int_equal(await(a, &v, slow(3000)), CR_OK);
    assert_int_equal(v.value, 7);
    assert_int_equal(redis_int("GET asem"), 0);
    /* No acquire latch is left behind. */
    assert_int_equal(redis_int("EXISTS credisson_semaphore_acquire:{asem}"), 0);
    cr_async_free(a);
    cr_semaphore_free(s);
}

static void
test_async_permit_ids_are_shared_with_the_blocking_api(void **state)
{
    cr_async *a = new_async();
    permit_outcome p = {0};
    outcome u = {0}, v = {0};
    char id[CR_PERMIT_ID_LEN + 1];
    cr_permit_semaphore *s;

    (void)state;
    assert_int_equal(cr_permit_semaphore_new(test_client, "apes", &s), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_set_permits(s, 1, NULL), CR_OK);
    assert_int_equal(cr_async_permit_acquire(a, s, 0, 60000, record_permit, &p,
                                             NULL), CR_OK);
    assert_true(poll_loop_until(a, permit_called, &p, slow(3000)));
    assert_int_equal(p.rc, CR_OK);
    assert_int_equal(strlen(p.id), CR_PERMIT_ID_LEN);
    assert_int_equal(cr_async_permit_update_lease(a, s, p.id, 120000, record,
                                                  &v, NULL), CR_OK);
    assert_int_equal(await(a, &v, slow(3000)), CR_OK);
    assert_int_equal(v.value, 1);
    /* Released by the blocking call, then the other way round. */
    assert_int_equal(cr_permit_semaphore_release(s, p.id), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_acquire(s, 0, 60000, id), CR_OK);
    assert_int_equal(cr_async_permit_release(a, s, id, record, &u, NULL),
                     CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_OK);
    memset(&u, 0, sizeof(u));
    assert_int_equal(cr_async_permit_release(a, s, id, record, &u, NULL),
                     CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_ENOTOWNER);
    cr_async_free(a);
    cr_permit_semaphore_free(s);
}

/* A blocking thread that counts a latch down after a pause. */
typedef struct counter {
    cr_latch *latch;
    int64_t after_ms;
    pthread_t thread;
} counter;

static void *
counter_run(void *arg)
{
    counter *c = arg;

    usleep((useconds_t)c->after_ms * 1000);
    assert_int_equal(cr_latch_count_down(c->latch), CR_OK);
    return NULL;
}

static void
test_async_latch_await_opens_when_counted_down_elsewhere(void **state)
{
    cr_async *a = new_async();
    outcome o = {0}, t = {0}, d = {0}, w = {0};
    cr_latch *l;
    counter c;
    int64_t start;

    (void)state;
    assert_int_equal(cr_latch_new(test_client, "alatch", &l), CR_OK);
    assert_int_equal(cr_async_latch_try_set_count(a, l, 2, 0, record, &t,
                                                  NULL), CR_OK);
    assert_int_equal(await(a, &t, slow(3000)), CR_OK);
    assert_int_equal(t.value, 1);
    assert_int_equal(cr_async_latch_count_down(a, l, record, &d, NULL), CR_OK);
    assert_int_equal(await(a, &d, slow(3000)), CR_OK);
    assert_int_equal(redis_int("GET alatch"), 1);
    assert_int_equal(cr_async_latch_await(a, l, 200, record, &w, NULL), CR_OK);
    assert_int_equal(await(a, &w, slow(5000)), CR_TIMEOUT);
    c = (counter){.latch = l, .after_ms = 300};
    start = poll_loop_now_ms();
    assert_int_equal(cr_async_latch_await(a, l, slow(10000), record, &o, NULL),
                     CR_OK);
    assert_int_equal(pthread_create(&c.thread, NULL, counter_run, &c), 0);
    assert_int_equal(await(a, &o, slow(10000)), CR_OK);
    pthread_join(c.thread, NULL);
    assert_true(o.at - start < 300 + slow(1500)); /* woken, not polled */
    cr_async_free(a);
    cr_latch_free(l);
}

/* Whether latch "acount" was counted down to 1 (a poll_loop_until
 * condition). */
static bool
counted_to_one(void *arg)
{
    (void)arg;
    return redis_int("GET acount") == 1;
}

static void
test_async_latch_count_down_and_await(void **state)
{
    cr_async *a = new_async();
    outcome o = {0}, z = {0};
    cr_latch *l;

    (void)state;
    assert_int_equal(cr_latch_new(test_client, "acount", &l), CR_OK);
    assert_int_equal(cr_latch_try_set_count(l, 2, 0, NULL), CR_OK);
    assert_int_equal(cr_async_latch_count_down_and_await(a, l, slow(10000),
                                                         record, &o, NULL),
                     CR_OK);
    /* Counted down once, subscribed, waiting for the last party. */
    assert_true(poll_loop_until(a, counted_to_one, NULL, slow(3000)));
    await_subscribers("redisson_countdownlatch__channel__{acount}", 1);
    assert_int_equal(o.calls, 0);
    assert_int_equal(redis_int("GET acount"), 1);
    /* The last party, with a wait of 0: its count down opens the latch. */
    assert_int_equal(cr_async_latch_count_down_and_await(a, l, 0, record, &z,
                                                         NULL), CR_OK);
    assert_int_equal(await(a, &z, slow(3000)), CR_OK);
    assert_int_equal(await(a, &o, slow(3000)), CR_OK);
    assert_int_equal(redis_int("EXISTS acount"), 0);
    cr_async_free(a);
    cr_latch_free(l);
}

/* ------------------------------------------------------ faults and races */

/* Turns the loop of `a` while waiting for a condition of the server. */
typedef struct loop_until {
    cr_async *a;
    bool (*cond)(void *);
    void *arg;
} loop_until;

static bool
turn_and_check(void *arg)
{
    loop_until *u = arg;

    poll_loop_turn(u->a, 10);
    return u->cond(u->arg);
}

/* A client through `relay` (a command timeout of 5 s) and its handle on
 * the poll loop. */
static void
relay_client(cr_test_relay *relay, cr_client **c, cr_async **a)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    char url[64];

    assert_non_null(relay);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d",
             cr_test_relay_port(relay));
    o.url = url;
    o.command_timeout_ms = slow(5000);
    *c = NULL;
    assert_int_equal(cr_client_new(&o, c), CR_OK);
    assert_int_equal(cr_async_new(*c, &poll_loop, a), CR_OK);
}

/* Takes and releases lock l on loop a: its scripts are loaded, and the
 * next acquisition's EVALSHA runs on the server. */
static void
lock_scripts_loaded(cr_async *a, cr_lock *l, int64_t owner)
{
    outcome first = {0}, u = {0};

    assert_int_equal(cr_async_lock(a, l, owner, 0, 600000, record, &first,
                                   NULL), CR_OK);
    assert_int_equal(await(a, &first, slow(3000)), CR_OK);
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_OK);
}

/* Turns loop a until `relay` holds back the replies after the EVALSHA it
 * was told to freeze after. */
static void
turn_until_frozen(cr_async *a, cr_test_relay *relay)
{
    while (!cr_test_relay_frozen(relay))
        poll_loop_turn(a, 10);
}

/* The grant comes while the request is cancelled (its reply held back in
 * a relay): the library gives the lock back, deterministically. */
static void
test_async_lock_granted_after_its_cancel_is_given_back(void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;
    cr_async *a;
    cr_request *req = NULL;
    outcome r = {0};
    int64_t owner = cr_async_owner_id();
    cr_lock *l;
    loop_until until;

    (void)state;
    relay_client(relay, &c, &a);
    assert_int_equal(cr_lock_new(c, "race", &l), CR_OK);
    lock_scripts_loaded(a, l, owner);
    assert_int_equal(cr_test_relay_freeze_replies_after(relay, "EVALSHA"), 0);
    assert_int_equal(cr_async_lock(a, l, owner, CR_WAIT_FOREVER, 600000,
                                   record, &r, &req), CR_OK);
    turn_until_frozen(a, relay);
    /* Granted on the server, the answer held back: cancel now. */
    assert_int_equal(redis_int("EXISTS race"), 1);
    cr_async_cancel(req);
    cr_test_relay_thaw(relay);
    assert_int_equal(await(a, &r, slow(5000)), CR_ECANCELED);
    until = (loop_until){a, key_gone, "race"};
    assert_true(cr_test_wait_until(turn_and_check, &until, slow(5000)));
    cr_async_free(a);
    cr_lock_free(l);
    cr_client_free(c);
    cr_test_relay_stop(relay);
}

/* The grant comes after the handle was freed (the reply held back in a
 * relay, the handle freed while it is out): the request ends with
 * CR_ECLOSED, once, and the client gives the lock back in the background,
 * long before its lease would end. */
static void
test_async_lock_granted_after_its_handle_was_freed_is_given_back(void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;
    cr_async *a;
    outcome r = {0};
    int64_t owner = cr_async_owner_id();
    cr_lock *l;

    (void)state;
    relay_client(relay, &c, &a);
    assert_int_equal(cr_lock_new(c, "freed", &l), CR_OK);
    lock_scripts_loaded(a, l, owner);
    assert_int_equal(cr_test_relay_freeze_replies_after(relay, "EVALSHA"), 0);
    assert_int_equal(cr_async_lock(a, l, owner, CR_WAIT_FOREVER, 600000,
                                   record, &r, NULL), CR_OK);
    turn_until_frozen(a, relay);
    /* Granted on the server, the answer held back: free the handle. */
    assert_int_equal(redis_int("EXISTS freed"), 1);
    cr_async_free(a);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.rc, CR_ECLOSED);
    cr_test_relay_thaw(relay);
    assert_true(cr_test_wait_until(key_gone, "freed", slow(5000)));
    cr_lock_free(l);
    cr_client_free(c);
    cr_test_relay_stop(relay);
}

static bool
fsem_full(void *arg)
{
    (void)arg;
    return redis_int("GET fsem") == 2;
}

/* The same for a semaphore's permit: given back after the handle that
 * asked for it was freed with the grant's reply out. */
static void
test_async_permit_granted_after_its_handle_was_freed_is_given_back(
    void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;
    cr_async *a;
    outcome first = {0}, r = {0};
    cr_semaphore *s;

    (void)state;
    relay_client(relay, &c, &a);
    assert_int_equal(cr_semaphore_new(c, "fsem", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 2, 0, NULL), CR_OK);
    /* The script is loaded: the next EVALSHA runs on the server. */
    assert_int_equal(cr_async_semaphore_acquire(a, s, 1, 0, record, &first,
                                                NULL), CR_OK);
    assert_int_equal(await(a, &first, slow(3000)), CR_OK);
    assert_int_equal(cr_semaphore_release(s, 1), CR_OK);
    assert_int_equal(cr_test_relay_freeze_replies_after(relay, "EVALSHA"), 0);
    assert_int_equal(cr_async_semaphore_acquire(a, s, 1, CR_WAIT_FOREVER,
                                                record, &r, NULL), CR_OK);
    turn_until_frozen(a, relay);
    /* Taken on the server, the answer held back: free the handle. */
    assert_int_equal(redis_int("GET fsem"), 1);
    cr_async_free(a);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.rc, CR_ECLOSED);
    cr_test_relay_thaw(relay);
    assert_true(cr_test_wait_until(fsem_full, NULL, slow(5000)));
    cr_semaphore_free(s);
    cr_client_free(c);
    cr_test_relay_stop(relay);
}

/* The subscriber link is killed while a request sleeps on it: the link
 * comes back, the request still wakes on the release, once. */
static void
test_async_waiter_survives_a_killed_subscriber_link(void **state)
{
    cr_async *a = new_async();
    outcome o = {0};
    holder h = {0};
    cr_lock *l;
    int i;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "killed", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 30000), CR_OK);
    assert_int_equal(cr_async_lock(a, l, cr_async_owner_id(), slow(20000),
                                   30000, record, &o, NULL), CR_OK);
    for (i = 0; i < 30; i++)
        poll_loop_turn(a, 10); /* subscribed, asleep */
    assert_true(redis_ok("CLIENT KILL TYPE pubsub"));
    for (i = 0; i < 30; i++)
        poll_loop_turn(a, 10); /* back, subscribed again */
    assert_int_equal(o.calls, 0);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(await(a, &o, slow(5000)), CR_OK);
    for (i = 0; i < 10; i++)
        poll_loop_turn(a, 10);
    assert_int_equal(o.calls, 1);
    (void)h;
    cr_async_free(a);
    cr_lock_free(l);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_async_lock_and_unlock_without_contention),
        T(test_async_lock_waits_for_a_blocking_holder_and_wakes_on_its_release),
        T(test_async_lock_wait_runs_out_with_busy),
        T(test_async_cancel_ends_a_waiting_request_and_takes_nothing),
        T(test_async_hold_is_released_by_the_blocking_tid_call),
        T(test_async_many_pending_requests_keep_counters_exact),
        T(test_async_blocking_and_cli_clients_share_objects_with_exact_counts),
        T(test_async_a_loop_blocked_past_a_timer_is_reported_in_the_log),
        T(test_async_multilock_and_redlock_are_taken_without_blocking_the_loop),
        T(test_async_multilock_cancel_and_free_end_the_wait_and_leave_nothing),
        T(test_async_fenced_lock_gives_its_token_and_shares_it_with_the_tid_calls),
        T(test_async_free_ends_pending_requests_with_eclosed),
        T(test_async_free_from_a_callback_waits_for_the_dispatch),
        T(test_async_owner_ids_never_meet_thread_ids),
        T(test_async_bad_arguments_are_refused_without_a_callback),
        T(test_async_semaphore_acquire_waits_for_a_release_and_counts_exactly),
        T(test_async_permit_ids_are_shared_with_the_blocking_api),
        T(test_async_latch_await_opens_when_counted_down_elsewhere),
        T(test_async_latch_count_down_and_await),
        T(test_async_lock_granted_after_its_cancel_is_given_back),
        T(test_async_lock_granted_after_its_handle_was_freed_is_given_back),
        T(test_async_permit_granted_after_its_handle_was_freed_is_given_back),
        T(test_async_waiter_survives_a_killed_subscriber_link),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
