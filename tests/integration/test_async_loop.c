/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API on a real event loop through its ready adapter
 * (credisson/async_libevent.h, async_libuv.h or async_libev.h, chosen at
 * build time by CR_LOOP_LIBEVENT, CR_LOOP_LIBUV or CR_LOOP_LIBEV): a lock
 * taken at once, one waited for while a blocking thread holds it, a latch
 * opened by another thread; the adapter freed cleanly.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "lock_common.h"
#include "poll_loop.h"
#include "async_outcome.h"

#if defined(CR_LOOP_LIBEVENT)
#include "credisson/async_libevent.h"
typedef cr_libevent adapter;
static struct event_base *base;
static void loop_open(void) { base = event_base_new(); assert_non_null(base); }
static cr_status adapter_new(adapter **out) { return cr_libevent_new(test_client, base, out); }
static cr_async *adapter_async(adapter *x) { return cr_libevent_async(x); }
static void adapter_free(adapter *x) { cr_libevent_free(x); }
static void loop_once(void) { event_base_loop(base, EVLOOP_ONCE); }
static void loop_close(void) { event_base_free(base); }
#elif defined(CR_LOOP_LIBUV)
#include "credisson/async_libuv.h"
typedef cr_libuv adapter;
static uv_loop_t loop;
static void loop_open(void) { assert_int_equal(uv_loop_init(&loop), 0); }
static cr_status adapter_new(adapter **out) { return cr_libuv_new(test_client, &loop, out); }
static cr_async *adapter_async(adapter *x) { return cr_libuv_async(x); }
static void adapter_free(adapter *x) { cr_libuv_free(x); uv_run(&loop, UV_RUN_NOWAIT); }
static void loop_once(void) { uv_run(&loop, UV_RUN_ONCE); }
static void loop_close(void) { assert_int_equal(uv_loop_close(&loop), 0); }
#else
#include "credisson/async_libev.h"
typedef cr_libev adapter;
static struct ev_loop *evl;
static void loop_open(void) { evl = ev_loop_new(EVFLAG_AUTO); assert_non_null(evl); }
static cr_status adapter_new(adapter **out) { return cr_libev_new(test_client, evl, out); }
static cr_async *adapter_async(adapter *x) { return cr_libev_async(x); }
static void adapter_free(adapter *x) { cr_libev_free(x); }
static void loop_once(void) { ev_run(evl, EVRUN_ONCE); }
static void loop_close(void) { ev_loop_destroy(evl); }
#endif

/* Runs the loop until o's callback ran; its status. */
static cr_status
run_until(outcome *o, int64_t max_ms)
{
    int64_t end = poll_loop_now_ms() + max_ms;

    while (o->calls == 0 && poll_loop_now_ms() < end)
        loop_once();
    assert_int_equal(o->calls, 1);
    return o->rc;
}

typedef struct helper {
    cr_lock *lock;
    cr_latch *latch;
    atomic_bool holding;
    pthread_t thread;
} helper;

static void *
helper_run(void *arg)
{
    helper *h = arg;

    assert_int_equal(cr_lock_lock(h->lock, 30000), CR_OK);
    atomic_store(&h->holding, true);
    usleep(200000);
    assert_int_equal(cr_lock_unlock(h->lock), CR_OK);
    usleep(200000);
    assert_int_equal(cr_latch_count_down(h->latch), CR_OK);
    return NULL;
}

static void
test_async_loop_adapter_runs_locks_and_latches(void **state)
{
    adapter *x = NULL;
    cr_async *a;
    outcome o = {0}, w = {0}, u = {0}, l = {0};
    int64_t owner = cr_async_owner_id();
    helper h = {0};
    cr_lock *lock;
    cr_latch *latch;

    (void)state;
    loop_open();
    assert_int_equal(adapter_new(&x), CR_OK);
    a = adapter_async(x);
    assert_int_equal(cr_lock_new(test_client, "loop", &lock), CR_OK);
    assert_int_equal(cr_latch_new(test_client, "loop-latch", &latch), CR_OK);
    assert_int_equal(cr_latch_try_set_count(latch, 1, 0, NULL), CR_OK);
    /* Taken at once, released. */
    assert_int_equal(cr_async_lock(a, lock, owner, 0, 30000, record, &o, NULL),
                     CR_OK);
    assert_int_equal(run_until(&o, slow(5000)), CR_OK);
    assert_int_equal(cr_async_unlock(a, lock, owner, record, &u, NULL), CR_OK);
    assert_int_equal(run_until(&u, slow(5000)), CR_OK);
    /* Waited for while a blocking thread holds it; then a latch. */
    h.lock = lock;
    h.latch = latch;
    assert_int_equal(pthread_create(&h.thread, NULL, helper_run, &h), 0);
    while (!atomic_load(&h.holding))
        usleep(1000);
    assert_int_equal(cr_async_lock(a, lock, owner, slow(10000), 30000, record,
                                   &w, NULL), CR_OK);
    assert_int_equal(cr_async_latch_await(a, latch, slow(10000), record, &l,
                                          NULL), CR_OK);
    assert_int_equal(run_until(&w, slow(10000)), CR_OK);
    assert_int_equal(run_until(&l, slow(10000)), CR_OK);
    pthread_join(h.thread, NULL);
    memset(&u, 0, sizeof(u));
    assert_int_equal(cr_async_unlock(a, lock, owner, record, &u, NULL), CR_OK);
    assert_int_equal(run_until(&u, slow(5000)), CR_OK);
    adapter_free(x);
    loop_close();
    cr_latch_free(latch);
    cr_lock_free(lock);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_async_loop_adapter_runs_locks_and_latches, client_up,
            client_down),
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
