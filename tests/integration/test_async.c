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
#include <unistd.h>

#include "fault_server.h"
#include "lock_common.h"
#include "poll_loop.h"

/* One request's outcome. */
typedef struct outcome {
    int calls;
    cr_status rc;
    int64_t value;
    int64_t at; /* when the callback ran (monotonic ms) */
} outcome;

static void
record(void *userdata, cr_status rc, int64_t value)
{
    outcome *o = userdata;

    o->calls++;
    o->rc = rc;
    o->value = value;
    o->at = poll_loop_now_ms();
}

static bool
called(void *arg)
{
    return ((outcome *)arg)->calls > 0;
}

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

static void
test_async_fenced_lock_gives_its_token(void **state)
{
    cr_async *a = new_async();
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, p = {0}, u = {0};
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
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
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
    assert_int_equal(cr_async_lock(a, m, 1, 0, 1000, record, &o, NULL),
                     CR_ENOTSUP);
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

/* The grant comes while the request is cancelled (its reply held back in
 * a relay): the library gives the lock back, deterministically. */
static void
test_async_lock_granted_after_its_cancel_is_given_back(void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    cr_async *a;
    cr_request *req = NULL;
    outcome first = {0}, u = {0}, r = {0};
    int64_t owner = cr_async_owner_id();
    char url[64];
    cr_lock *l;
    loop_until until;

    (void)state;
    assert_non_null(relay);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d",
             cr_test_relay_port(relay));
    o.url = url;
    o.command_timeout_ms = slow(5000);
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    assert_int_equal(cr_async_new(c, &poll_loop, &a), CR_OK);
    assert_int_equal(cr_lock_new(c, "race", &l), CR_OK);
    /* The script is loaded: the next EVALSHA runs on the server. */
    assert_int_equal(cr_async_lock(a, l, owner, 0, 600000, record, &first,
                                   NULL), CR_OK);
    assert_int_equal(await(a, &first, slow(3000)), CR_OK);
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL), CR_OK);
    assert_int_equal(await(a, &u, slow(3000)), CR_OK);
    assert_int_equal(cr_test_relay_freeze_replies_after(relay, "EVALSHA"), 0);
    assert_int_equal(cr_async_lock(a, l, owner, CR_WAIT_FOREVER, 600000,
                                   record, &r, &req), CR_OK);
    while (!cr_test_relay_frozen(relay))
        poll_loop_turn(a, 10);
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
        T(test_async_fenced_lock_gives_its_token),
        T(test_async_free_ends_pending_requests_with_eclosed),
        T(test_async_free_from_a_callback_waits_for_the_dispatch),
        T(test_async_owner_ids_never_meet_thread_ids),
        T(test_async_bad_arguments_are_refused_without_a_callback),
        T(test_async_semaphore_acquire_waits_for_a_release_and_counts_exactly),
        T(test_async_permit_ids_are_shared_with_the_blocking_api),
        T(test_async_latch_await_opens_when_counted_down_elsewhere),
        T(test_async_latch_count_down_and_await),
        T(test_async_lock_granted_after_its_cancel_is_given_back),
        T(test_async_waiter_survives_a_killed_subscriber_link),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
