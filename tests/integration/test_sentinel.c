/* SPDX-License-Identifier: MIT */
/*
 * Sentinel: a master, two replicas and three sentinels, all real processes
 * on 127.0.0.1. The client finds the master through the sentinels, and when
 * the master dies and a replica takes over, a lock held with the watchdog
 * (and the replica-sync check on) survives, is renewed on the new master,
 * and a waiter on another client proceeds when it is released.
 */
#include <pthread.h>
#include <unistd.h>

#include "lock_common.h"
#include "poll_loop.h"
#include "async_outcome.h"

#define NREPLICAS 2
#define NSENTINELS 3

static cr_test_redis replicas[NREPLICAS];
static cr_test_redis sentinels[NSENTINELS];
static char url[512];

/* The port sentinel 0 reports for the master, or -1. */
static long long
sentinel_master_port(void)
{
    return cr_test_sentinel_master_port(&sentinels[0], "mymaster");
}

/* Both replicas have finished their first sync (state=online). */
static bool
replicas_attached(void *arg)
{
    redisReply *rep = cr_test_redis_cmd(&test_redis, "INFO replication");
    int online = 0;
    const char *p;

    (void)arg;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING)
        for (p = rep->str; (p = strstr(p, "state=online")) != NULL; p++)
            online++;
    if (rep != NULL)
        freeReplyObject(rep);
    return online == NREPLICAS;
}

static bool
sentinels_see_replicas(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < NSENTINELS; i++) {
        redisReply *r = cr_test_redis_cmd(&sentinels[i], "SENTINEL replicas mymaster");
        bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY &&
                  r->elements == NREPLICAS;

        if (r != NULL)
            freeReplyObject(r);
        if (!ok)
            return false;
    }
    return true;
}

static int
deployment_up(void **state)
{
    char args[128], conf[512];
    size_t off = 0;
    int i, rc;

    (void)state;
    rc = cr_test_redis_start(&test_redis, "--repl-diskless-sync-delay 0");
    if (rc == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    if (rc != 0)
        return -1;
    snprintf(args, sizeof(args),
             "--replicaof 127.0.0.1 %d --repl-diskless-sync-delay 0",
             test_redis.port);
    for (i = 0; i < NREPLICAS; i++)
        if (cr_test_redis_start(&replicas[i], args) != 0)
            return -1;
    snprintf(conf, sizeof(conf),
             "sentinel monitor mymaster 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds mymaster 1000\n"
             "sentinel failover-timeout mymaster 10000\n"
             "sentinel parallel-syncs mymaster 1\n",
             test_redis.port);
    for (i = 0; i < NSENTINELS; i++)
        if (cr_test_redis_start_conf(&sentinels[i], conf, "--sentinel") != 0)
            return -1;
    off = (size_t)snprintf(url, sizeof(url), "redis-sentinel://");
    for (i = 0; i < NSENTINELS; i++)
        off += (size_t)snprintf(url + off, sizeof(url) - off, "%s127.0.0.1:%d",
                                i > 0 ? "," : "", sentinels[i].port);
    snprintf(url + off, sizeof(url) - off, "/mymaster");
    if (!cr_test_wait_until(replicas_attached, NULL, 20000) ||
        !cr_test_wait_until(sentinels_see_replicas, NULL, 30000)) {
        fprintf(stderr, "the Sentinel deployment did not settle\n");
        return -1;
    }
    return 0;
}

static int
deployment_down(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < NSENTINELS; i++)
        cr_test_redis_destroy(&sentinels[i]);
    for (i = 0; i < NREPLICAS; i++)
        cr_test_redis_destroy(&replicas[i]);
    cr_test_redis_destroy(&test_redis);
    return 0;
}

/* A client through the sentinels. */
static cr_client *
sentinel_client(int64_t watchdog_ms, int64_t sync_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.replica_sync_timeout_ms = sync_ms;
    o.connect_timeout_ms = 500;
    o.command_timeout_ms = slow(2000);
    o.reconnect_window_ms = slow(30000);
    if (cr_client_new(&o, &c) != CR_OK)
        fprintf(stderr, "cr_client_new(%s): %s\n", url, cr_last_error());
    return c;
}

static void
test_sentinel_client_finds_the_master_and_locks_there(void **state)
{
    cr_client *c = sentinel_client(30000, 1000);
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "s:found", &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("EXISTS s:found"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS s:found"), 0);
    cr_lock_free(l);
    cr_client_free(c);
}

/* The asynchronous API through the sentinels, with replica sync on (its
 * WAIT pipelined behind each script): a lock taken on the master, one
 * waited for while another client holds it. */
static void
test_sentinel_async_requests_go_to_the_master_with_replica_sync(void **state)
{
    cr_client *c = sentinel_client(30000, 1000);
    cr_client *other = sentinel_client(30000, 0);
    outcome o = {0}, u = {0}, w = {0};
    int64_t owner = cr_async_owner_id();
    cr_async *a = NULL;
    cr_lock *l, *theirs;

    (void)state;
    assert_non_null(c);
    assert_non_null(other);
    assert_int_equal(cr_async_new(c, &poll_loop, &a), CR_OK);
    assert_int_equal(cr_lock_new(c, "s:async", &l), CR_OK);
    assert_int_equal(cr_lock_new(other, "s:async", &theirs), CR_OK);
    assert_int_equal(cr_async_lock(a, l, owner, 0, 30000, record, &o,
                                   NULL), CR_OK);
    assert_true(poll_loop_until(a, called, &o, slow(5000)));
    assert_int_equal(o.rc, CR_OK);
    assert_int_equal(redis_int("EXISTS s:async"), 1);
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL),
                     CR_OK);
    assert_true(poll_loop_until(a, called, &u, slow(5000)));
    assert_int_equal(u.rc, CR_OK);
    assert_int_equal(cr_lock_lock(theirs, 30000), CR_OK);
    assert_int_equal(cr_async_lock(a, l, owner, slow(10000), 30000,
                                   record, &w, NULL), CR_OK);
    poll_loop_turn(a, 100);
    assert_int_equal(w.calls, 0);
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    assert_true(poll_loop_until(a, called, &w, slow(5000)));
    assert_int_equal(w.rc, CR_OK);
    assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
    cr_async_free(a);
    cr_lock_free(theirs);
    cr_lock_free(l);
    cr_client_free(other);
    cr_client_free(c);
}

typedef struct waiter {
    cr_lock *lock;
    cr_status rc;
    int64_t acquired_at;
    pthread_t thread;
} waiter;

static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, slow(60000), 5000);
    if (w->rc == CR_OK) {
        w->acquired_at = cr_test_now_ms();
        w->rc = cr_lock_unlock(w->lock);
    }
    return NULL;
}

static bool
failed_over(void *arg)
{
    return sentinel_master_port() != *(int *)arg;
}

static void
test_sentinel_failover_keeps_a_synced_watchdog_lock_and_waiters_proceed(void **state)
{
    /* A failover takes a few seconds, more on a loaded machine: a 20 s
     * lease, and under valgrind or the sanitizers 60 s with only a check
     * that the lock outlives the failover. */
    bool slow_run = slow(1) > 1;
    int64_t lease = slow_run ? 60000 : 20000;
    cr_client *holder = sentinel_client(lease, 1000);
    cr_client *other = sentinel_client(lease, 0);
    cr_lock *held, *wanted;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    waiter w;
    int old_port = test_redis.port, i;
    int64_t released, end;
    bool lost = true;

    (void)state;
    assert_non_null(holder);
    assert_non_null(other);
    assert_int_equal(cr_lock_new(holder, "s:failover", &held), CR_OK);
    assert_int_equal(cr_lock_new(other, "s:failover", &wanted), CR_OK);
    /* With the replica-sync check the grant is on a replica before it is
     * ours: the failover cannot lose it. */
    assert_int_equal(cr_lock_lock(held, CR_LEASE_WATCHDOG), CR_OK);
    memset(&w, 0, sizeof(w));
    w.lock = wanted;
    assert_int_equal(pthread_create(&w.thread, NULL, waiter_run, &w), 0);
    cr_test_redis_stop(&test_redis); /* the master dies */
    assert_true(cr_test_wait_until(failed_over, &old_port, slow(30000)));
    /* The promoted replica becomes the server the tests read. */
    for (i = 0; i < NREPLICAS; i++)
        if (replicas[i].port == sentinel_master_port()) {
            cr_test_redis tmp = test_redis;

            test_redis = replicas[i];
            replicas[i] = tmp;
        }
    assert_true(test_redis.port != old_port);

    /* The lock is there and the watchdog keeps renewing it on the new
     * master past its lease. */
    assert_int_equal(redis_int("HLEN s:failover"), 1);
    /* Past a whole lease after the failover the lock is still
     * there: only renewals on the new master can have kept it. */
    end = cr_test_now_ms() + (slow_run ? 3000 : lease + 1000);
    while (cr_test_now_ms() < end) {
        assert_true(redis_int("PTTL s:failover") > 0);
        usleep(200000);
    }
    assert_int_equal(cr_client_stats_get(holder, &st), CR_OK);
    if (!slow_run)
        assert_true(st.renewal_calls >= 3);
    assert_int_equal(cr_lock_is_lost(held, &lost), CR_OK);
    assert_false(lost);
    assert_int_equal(w.rc, CR_OK); /* not yet returned: still waiting */
    assert_int_equal(w.acquired_at, 0);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    /* The waiter's subscription moved to the new master: the release
     * message wakes it, far sooner than its ttl hint (up to the lease). */
    assert_true(w.acquired_at - released < slow(3000));
    cr_lock_free(held);
    cr_lock_free(wanted);
    cr_client_free(holder);
    cr_client_free(other);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sentinel_client_finds_the_master_and_locks_there),
        cmocka_unit_test(test_sentinel_async_requests_go_to_the_master_with_replica_sync),
        cmocka_unit_test(test_sentinel_failover_keeps_a_synced_watchdog_lock_and_waiters_proceed),
    };

    (void)client_up;
    (void)client_down;
    (void)redis_up;
    (void)redis_down;
    return cmocka_run_group_tests(tests, deployment_up, deployment_down);
}
