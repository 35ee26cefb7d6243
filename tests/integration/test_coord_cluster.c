/* SPDX-License-Identifier: MIT */
/*
 * The coordination objects on a real Redis Cluster (three masters, started
 * once for the file): a barrier's rounds across processes, woken by sharded
 * pub/sub, on names served by different masters; a SIGKILLed party, a
 * timeout and a reset; the rate limiter's keys in its name's slot; names
 * whose keys would split refused.
 */
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "barrier_common.h"
#include "coord_block.h"
#include "credisson.h"
#include "redis_cluster.h"

#define CLUSTER_REPLICAS 0
#include "cluster_common.h"

#define OK(call) assert_int_equal((call), CR_OK)

/* A client on the cluster with leases of watchdog_ms. */
static cr_client *
client(int64_t watchdog_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = cl.url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.command_timeout_ms = slow(2000);
    o.reconnect_window_ms = slow(30000);
    if (cr_client_new(&o, &c) != CR_OK)
        fail_msg("cr_client_new: %s", cr_last_error());
    return c;
}

static void
await_arrivals(cr_barrier *b, int64_t count)
{
    arrivals_wanted w = {b, count};

    assert_true(cr_test_wait_until(has_arrivals, &w, slow(10000)));
}

/* Scripts that read a number on the key's master as an integer reply. */
#define HGET_NUM "return tonumber(redis.call('hget', KEYS[1], 'generation'))"
#define GET_NUM "return tonumber(redis.call('get', KEYS[1]))"

/* ---------------------------------------------------------------- tests */

#define PROCS 4
#define ROUNDS 20

static void
test_coord_cluster_barrier_rounds_across_processes_on_every_master(void **state)
{
    /* Names whose slots lie on different masters of three. */
    const char *names[] = {"bar{a}", "bar{b}", "bar{c}"};
    int masters[3], n, i, k, fd;
    coord_block *blk;
    char fdarg[16], parties[16], rounds[16];

    (void)state;
    for (n = 0; n < 3; n++)
        masters[n] = cr_test_cluster_master_of(
            &cl, cr_test_cluster_keyslot(&cl, names[n]));
    assert_true(masters[0] != masters[1] || masters[1] != masters[2]);
    snprintf(parties, sizeof(parties), "%d", PROCS);
    snprintf(rounds, sizeof(rounds), "%d", ROUNDS);
    for (n = 0; n < 3; n++) {
        pid_t pids[PROCS];

        blk = cr_test_memfd_alloc("coord_block", sizeof(*blk), &fd);
        assert_non_null(blk);
        snprintf(fdarg, sizeof(fdarg), "%d", fd);
        for (i = 0; i < PROCS; i++) {
            const char *a[] = {"barrier-rounds", cl.url, names[n], parties,
                               rounds, fdarg, NULL};

            pids[i] = cr_test_spawn("coord_worker", a, NULL);
            assert_true(pids[i] > 0);
        }
        for (i = 0; i < PROCS; i++)
            assert_int_equal(cr_test_wait_exit(pids[i]), 0);
        assert_int_equal(atomic_load(&blk->early), 0);
        assert_int_equal(atomic_load(&blk->disagree), 0);
        assert_int_equal(atomic_load(&blk->twice), 0);
        for (k = 0; k < ROUNDS; k++) {
            assert_int_equal(atomic_load(&blk->left[k]), PROCS);
            assert_int_equal(atomic_load(&blk->generation[k]), k + 1);
        }
        /* The barrier's keys live on its name's master. */
        assert_int_equal(cr_test_cluster_int_at_key(&cl, names[n],
                                                    "EVAL %s 1 %s", HGET_NUM,
                                                    names[n]),
                         ROUNDS);
        munmap(blk, sizeof(*blk));
        close(fd);
    }
}

static void
test_coord_cluster_barrier_sigkilled_party_timeout_and_reset(void **state)
{
    cr_client *c = client(300);
    cr_barrier *b = NULL;
    const char *args[] = {"barrier-wait", cl.url, "killed{x}", "3", "1000",
                          NULL};
    party p, q;
    pid_t pid;
    int64_t killed;
    int status = 0;

    (void)state;
    OK(cr_barrier_new(c, "killed{x}", 3, &b));
    pid = cr_test_spawn("coord_worker", args, NULL);
    assert_true(pid > 0);
    await_arrivals(b, 1);
    party_start(&p, b, slow(30000));
    await_arrivals(b, 2);
    kill(pid, SIGKILL);
    killed = cr_test_now_ms();
    assert_int_equal(waitpid(pid, &status, 0), pid);
    pthread_join(p.thread, NULL);
    assert_int_equal(p.rc, CR_EBROKEN);
    assert_true(p.returned_ms - killed <= 1000 + slow(700));
    /* Reset, then a timeout breaks the next round for the other party. */
    OK(cr_barrier_reset(b));
    party_start(&p, b, slow(30000));
    await_arrivals(b, 1);
    party_start(&q, b, 300);
    pthread_join(q.thread, NULL);
    pthread_join(p.thread, NULL);
    assert_int_equal(q.rc, CR_TIMEOUT);
    assert_int_equal(p.rc, CR_EBROKEN);
    assert_true(p.returned_ms - q.returned_ms < slow(500));
    OK(cr_barrier_reset(b));
    cr_barrier_free(b);
    cr_client_free(c);
}

static void
test_coord_cluster_rate_limiter_keys_share_the_name_slot(void **state)
{
    cr_client *c = client(300);
    const char *names[] = {"rl", "app{7}rl"};
    const char *values[] = {"{rl}:value", "app{7}rl:value"};
    const char *records[] = {"{rl}:permits", "app{7}rl:permits"};
    cr_rate_limiter *l = NULL;
    int i;

    (void)state;
    for (i = 0; i < 2; i++) {
        OK(cr_rate_limiter_new(c, names[i], &l));
        OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 2, 60000, 0,
                                        NULL));
        OK(cr_rate_limiter_try_acquire(l, 1, 0));
        OK(cr_rate_limiter_try_acquire(l, 1, 0));
        assert_int_equal(cr_rate_limiter_try_acquire(l, 1, 0), CR_BUSY);
        assert_int_equal(cr_test_cluster_int_at_key(&cl, names[i],
                                                    "EVAL %s 1 %s", GET_NUM,
                                                    values[i]), 0);
        assert_int_equal(cr_test_cluster_int_at_key(&cl, names[i],
                                                    "ZCARD %s", records[i]),
                         2);
        OK(cr_rate_limiter_delete(l, NULL));
        cr_rate_limiter_free(l);
    }
    cr_client_free(c);
}

/* A waiter on a lock's condition, on its own thread. */
typedef struct cond_waiter {
    cr_lock *lock;
    cr_lock_condition *cond;
    cr_status rc;
    bool held;
    pthread_t thread;
} cond_waiter;

static void *
cond_waiter_run(void *arg)
{
    cond_waiter *w = arg;

    w->rc = cr_lock_lock(w->lock, CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK)
        w->rc = cr_lock_condition_await(w->cond, slow(10000));
    cr_lock_is_held_by_current_thread(w->lock, &w->held);
    if (w->held)
        cr_lock_unlock(w->lock);
    return NULL;
}

/* What in_line waits for: a condition's line of `n` on its master. */
typedef struct line_wanted {
    const char *lock, *queue;
    long long n;
} line_wanted;

static bool
in_line(void *arg)
{
    line_wanted *w = arg;

    return cr_test_cluster_int_at_key(&cl, w->lock, "ZCARD %s", w->queue) ==
           w->n;
}

static void
test_coord_cluster_condition_keys_share_the_lock_slot(void **state)
{
    cr_client *c = client(30000);
    const char *names[] = {"cl", "app{7}cl"};
    const char *queues[] = {"credisson_condition_queue:{cl}:c",
                            "credisson_condition_queue:app{7}cl:c"};
    int i;

    (void)state;
    for (i = 0; i < 2; i++) {
        line_wanted lw = {names[i], queues[i], 1};
        cond_waiter w;
        bool woke = false;

        memset(&w, 0, sizeof(w));
        OK(cr_lock_new(c, names[i], &w.lock));
        OK(cr_lock_condition_new(w.lock, "c", &w.cond));
        assert_int_equal(pthread_create(&w.thread, NULL, cond_waiter_run, &w),
                         0);
        /* In line on the master of the lock's slot, the lock let go. */
        assert_true(cr_test_wait_until(in_line, &lw, slow(10000)));
        OK(cr_lock_lock(w.lock, CR_LEASE_WATCHDOG));
        OK(cr_lock_condition_signal(w.cond, &woke));
        assert_true(woke);
        OK(cr_lock_unlock(w.lock));
        pthread_join(w.thread, NULL);
        OK(w.rc);
        assert_true(w.held);
        cr_lock_condition_free(w.cond);
        cr_lock_free(w.lock);
    }
    cr_client_free(c);
}

static void
test_coord_cluster_refuses_names_whose_keys_split(void **state)
{
    cr_client *c = client(300);
    cr_barrier *b = NULL;
    cr_rate_limiter *l = NULL;

    (void)state;
    /* Protocol 1.1: "a}b" has no '{', but its derived keys get the tag
     * "a". */
    assert_int_equal(cr_barrier_new(c, "a}b", 2, &b), CR_EINVAL);
    assert_null(b);
    assert_int_equal(cr_rate_limiter_new(c, "a}b", &l), CR_EINVAL);
    assert_null(l);
    cr_client_free(c);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_coord_cluster_barrier_rounds_across_processes_on_every_master),
        cmocka_unit_test(
            test_coord_cluster_barrier_sigkilled_party_timeout_and_reset),
        cmocka_unit_test(test_coord_cluster_rate_limiter_keys_share_the_name_slot),
        cmocka_unit_test(test_coord_cluster_condition_keys_share_the_lock_slot),
        cmocka_unit_test(test_coord_cluster_refuses_names_whose_keys_split),
    };

    return cmocka_run_group_tests(tests, cluster_up, cluster_down);
}
