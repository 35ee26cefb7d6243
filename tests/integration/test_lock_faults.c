/* SPDX-License-Identifier: MIT */
/*
 * RLock when things break: scripts flushed, connections killed, the server
 * restarted, silent or stalled, a holder process killed. Each test shows
 * that waiters proceed promptly, that holders learn what happened, and
 * that a holder does not believe it lost what it still holds.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credisson/rwlock.h"
#include "lock_common.h"

typedef struct waiter {
    cr_lock *lock;
    int64_t wait_ms;
    cr_status rc;
    int64_t acquired_at;
    pthread_t thread;
} waiter;

/* Thread body: wait for the lock, record when it came, give it back. */
static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, w->wait_ms, CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK) {
        w->acquired_at = cr_test_now_ms();
        w->rc = cr_lock_unlock(w->lock);
    }
    return NULL;
}

static void
waiter_start(waiter *w, cr_lock *l, int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

/* Holds `name` from a second client with a 30 s watchdog lease, so that
 * only a message (or a fault path) can wake a waiter quickly. */
static cr_client *
hold_elsewhere(const char *name, cr_lock **out)
{
    cr_client *other = new_client(30000);

    assert_non_null(other);
    assert_int_equal(cr_lock_new(other, name, out), CR_OK);
    assert_int_equal(cr_lock_lock(*out, CR_LEASE_WATCHDOG), CR_OK);
    return other;
}

static void
test_lock_waiting_survives_script_flush(void **state)
{
    cr_lock *theirs, *mine;
    cr_client *other = hold_elsewhere("flushed", &theirs);
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    waiter w;
    int64_t released;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "flushed", &mine), CR_OK);
    waiter_start(&w, mine, slow(20000));
    await_waiters_in_line("flushed", 1);
    redisReply *r = cr_test_redis_cmd(&test_redis, "SCRIPT FLUSH");
    assert_non_null(r);
    freeReplyObject(r);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_at - released < slow(1000));
    assert_int_equal(cr_client_stats_get(other, &st), CR_OK);
    assert_true(st.noscript_fallbacks >= 1);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
}

typedef struct reconnect_watch {
    cr_client *client;
    uint64_t before; /* its reconnect count when the fault was made */
} reconnect_watch;

/* True once the client has reconnected since the fault. */
static bool
reconnected(void *arg)
{
    reconnect_watch *rw = arg;
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    return cr_client_stats_get(rw->client, &st) == CR_OK &&
           st.reconnects > rw->before;
}

static void
test_lock_waiting_survives_client_kill_of_the_pubsub_connection(void **state)
{
    line_of listening = {"killed", 1};
    cr_lock *theirs, *mine;
    cr_client *other = hold_elsewhere("killed", &theirs);
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    reconnect_watch rw = {test_client, 0};
    waiter w;
    int64_t released;
    redisReply *r;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "killed", &mine), CR_OK);
    waiter_start(&w, mine, slow(30000));
    await_waiters_in_line("killed", 1);
    assert_true(cr_test_wait_until(line_listening, &listening, slow(3000)));
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    rw.before = st.reconnects;
    r = cr_test_redis_cmd(&test_redis, "CLIENT KILL TYPE pubsub");
    assert_non_null(r);
    freeReplyObject(r);
    /* The subscriber reconnects and subscribes again on its own: the
     * waiter listens on its own channel, where its turn will come. */
    assert_true(cr_test_wait_until(reconnected, &rw, slow(5000)));
    assert_true(cr_test_wait_until(line_listening, &listening, slow(5000)));
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_at - released < slow(1000));
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(other);
}

static atomic_int links_lost;

/* Log callback: counts the subscriber links found dead. */
static void
count_links_lost(void *userdata, cr_log_level level, const char *msg)
{
    (void)userdata;
    (void)level;
    if (strstr(msg, "pub/sub connection lost") != NULL)
        atomic_fetch_add(&links_lost, 1);
}

static bool
a_link_was_lost(void *arg)
{
    (void)arg;
    return atomic_load(&links_lost) > 0;
}

/* A client whose lost subscriber links are counted in links_lost (reset
 * here), with a 1 s command timeout. */
static cr_client *
link_watching_client(void)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = test_redis.url;
    o.command_timeout_ms = 1000;
    o.reconnect_window_ms = slow(30000);
    o.log_fn = count_links_lost;
    o.log_level = CR_LOG_WARN;
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    atomic_store(&links_lost, 0);
    return c;
}

static void
test_lock_waiting_survives_a_redis_restart(void **state)
{
    cr_lock *theirs, *mine;
    cr_client *other = hold_elsewhere("restart", &theirs);
    cr_client *c = link_watching_client();
    waiter w;
    int64_t restarted;

    (void)state;
    assert_int_equal(cr_lock_new(c, "restart", &mine), CR_OK);
    waiter_start(&w, mine, CR_WAIT_FOREVER);
    await_waiters_in_line("restart", 1);
    cr_test_redis_stop(&test_redis);
    /* The waiter's client has seen the server gone. */
    assert_true(cr_test_wait_until(a_link_was_lost, NULL, slow(5000)));
    assert_int_equal(cr_test_redis_restart(&test_redis), 0);
    restarted = cr_test_now_ms();
    /* Without persistence the restarted server has no lock (and no line):
     * the waiter must notice through its resubscription, not wait for the
     * 30 s lease. */
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_at - restarted < slow(5000));
    /* The old holder's watchdog finds its hold gone and says so. */
    assert_true(cr_test_wait_until(lock_is_lost, theirs, slow(15000)));
    assert_int_equal(cr_lock_unlock(theirs), CR_ELOST);
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(c);
    cr_client_free(other);
}

/* A waiter reads its subscriber link itself. When the server stops
 * answering (SIGSTOP: the socket stays open, nothing comes), the
 * dispatcher finds the link dead by its PING (after 5 s of silence and the
 * 1 s command timeout) and drops it under the reading waiter, which frees
 * it (valgrind checks that part); once the server is back the waiter is
 * subscribed again and the release wakes it. */
static void
test_lock_waiter_reading_a_silent_link_recovers_when_it_is_dropped(void **state)
{
    line_of listening = {"silent", 1};
    cr_lock *theirs, *mine;
    cr_client *other = hold_elsewhere("silent", &theirs), *c;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    reconnect_watch rw = {NULL, 0};
    waiter w;
    int64_t released;
    bool lost;

    (void)state;
    c = link_watching_client();
    assert_int_equal(cr_lock_new(c, "silent", &mine), CR_OK);
    waiter_start(&w, mine, slow(60000));
    await_waiters_in_line("silent", 1);
    assert_true(cr_test_wait_until(line_listening, &listening, slow(3000)));
    assert_int_equal(cr_client_stats_get(c, &st), CR_OK);
    rw.client = c;
    rw.before = st.reconnects;
    assert_int_equal(kill(test_redis.pid, SIGSTOP), 0);
    lost = cr_test_wait_until(a_link_was_lost, NULL, slow(15000));
    assert_int_equal(kill(test_redis.pid, SIGCONT), 0); /* before asserting */
    assert_true(lost);
    /* Reconnected first: until the resumed server reads the old socket's
     * close, the waiter's channel may still count that connection's
     * subscription. */
    assert_true(cr_test_wait_until(reconnected, &rw, slow(10000)));
    assert_true(cr_test_wait_until(line_listening, &listening, slow(10000)));
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(theirs), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_at - released < slow(1000));
    cr_lock_free(mine);
    cr_lock_free(theirs);
    cr_client_free(c);
    cr_client_free(other);
}

static void
test_lock_calls_survive_client_kill_of_command_connections(void **state)
{
    cr_lock *l;
    redisReply *r;
    int64_t n = 0;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "cmdkill", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    r = cr_test_redis_cmd(&test_redis, "CLIENT KILL TYPE normal SKIPME yes");
    assert_non_null(r);
    freeReplyObject(r);
    /* Queries and unlock are safe to resend: they go through. */
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    r = cr_test_redis_cmd(&test_redis, "CLIENT KILL TYPE normal SKIPME yes");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS cmdkill"), 0);
    cr_lock_free(l);
}

static void
test_lock_killed_holder_frees_the_lock_after_its_lease(void **state)
{
    const char *args[] = {"hold", test_redis.url, "orphan", "1000", NULL};
    char buf[4];
    cr_lock *mine;
    int fd = -1;
    int64_t killed;
    pid_t pid;

    (void)state;
    pid = cr_test_spawn("lock_worker", args, &fd);
    assert_true(pid > 0);
    assert_int_equal(read(fd, buf, 2), 2);
    close(fd);
    assert_int_equal(cr_lock_new(test_client, "orphan", &mine), CR_OK);
    assert_int_equal(cr_lock_try_lock(mine, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    killed = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(mine, slow(10000), CR_LEASE_WATCHDOG), CR_OK);
    /* At most one lease (1 s) after the holder died, plus slack. */
    assert_true(cr_test_now_ms() - killed < slow(2500));
    assert_int_equal(cr_lock_unlock(mine), CR_OK);
    cr_lock_free(mine);
}

/* A DEBUG SLEEP of `seconds` on a connection of its own, sent at the
 * monotonic time at_ms: the whole server stalls, and what clients send
 * meanwhile waits in its queue and runs when the sleep ends. */
typedef struct stall {
    int64_t at_ms;
    double seconds;
    bool ok;
    pthread_t thread;
} stall;

static void *
stall_run(void *arg)
{
    stall *s = arg;
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r = NULL;
    int64_t left = s->at_ms - cr_test_now_ms();

    if (c == NULL)
        return NULL;
    if (left > 0)
        usleep((useconds_t)left * 1000);
    r = redisCommand(c, "DEBUG SLEEP %.3f", s->seconds);
    s->ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return NULL;
}

static void
stall_start(stall *s, int64_t at_ms, double seconds)
{
    memset(s, 0, sizeof(*s));
    s->at_ms = at_ms;
    s->seconds = seconds;
    assert_int_equal(pthread_create(&s->thread, NULL, stall_run, s), 0);
}

/* Waits until the watchdog renews `key` (its PEXPIRETIME moves on) and
 * returns when that was seen (monotonic ms); fails the test when no
 * renewal comes within `within_ms`. */
static int64_t
await_renewal_of(const char *key, int64_t within_ms)
{
    long long before = redis_int("PEXPIRETIME %s", key);
    int64_t deadline = cr_test_now_ms() + within_ms;

    assert_true(before > 0);
    while (cr_test_now_ms() < deadline) {
        if (redis_int("PEXPIRETIME %s", key) != before)
            return cr_test_now_ms();
        usleep(5000);
    }
    fail_msg("no renewal of %s within %lld ms", key, (long long)within_ms);
    return -1;
}

/* The holder of issue 31: a 1 s command timeout and a 6 s watchdog lease,
 * renewed every 2 s. Two 2 s stalls, 0.1 s apart, start 0.7 s and 0.6 s
 * before a renewal falls due: each of those renewals waits in the
 * server's queue past its command timeout and runs as its stall ends; 4 s
 * of stall against a 6 s lease. Without their answers the hold would
 * stand until 6 s after the last renewal before the stalls, and the one
 * after them is due later. With them it stands from the moment each was
 * sent: it is never reported lost, and its unlock finds it. `read` takes
 * the read lock of a read/write lock, whose renewals have a script of
 * their own. Under valgrind every time is doubled. */
static void
hold_outlives_two_stalls(bool read)
{
    const int64_t k = slow(1) > 1 ? 2 : 1;
    const int64_t lease_ms = 6000 * k, period_ms = lease_ms / 3;
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    cr_rwlock *rw = NULL;
    cr_lock *l;
    stall s1, s2;
    int64_t renewed, left = -1;
    bool lost = true;

    o.url = test_redis.url;
    o.command_timeout_ms = 1000 * k;
    o.lock_watchdog_timeout_ms = lease_ms;
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    if (read) {
        assert_int_equal(cr_rwlock_new(c, "stalled", &rw), CR_OK);
        l = cr_rwlock_read_lock(rw);
    } else {
        assert_int_equal(cr_lock_new(c, "stalled", &l), CR_OK);
    }
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    renewed = await_renewal_of("stalled", 2 * period_ms);
    /* Renewals fall due at renewed + 2 s and + 4 s. */
    stall_start(&s1, renewed + period_ms - 700 * k, 2.0 * (double)k);
    stall_start(&s2, renewed + 2 * period_ms - 600 * k, 2.0 * (double)k);
    pthread_join(s1.thread, NULL);
    pthread_join(s2.thread, NULL);
    assert_true(s1.ok && s2.ok);
    /* Past the end of the lease the last renewal before the stalls proved
     * (renewed + 6 s), and of the one sent in the first stall (+ 8 s). */
    while (cr_test_now_ms() < renewed + lease_ms + period_ms + 500 * k) {
        assert_int_equal(cr_lock_is_lost(l, &lost), CR_OK);
        assert_false(lost);
        usleep(50000);
    }
    assert_int_equal(cr_lock_lease_left(l, &left), CR_OK);
    assert_true(left > 0);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS stalled"), 0);
    if (read)
        cr_rwlock_free(rw);
    else
        cr_lock_free(l);
    cr_client_free(c);
}

static void
test_lock_watchdog_hold_outlives_two_stalls_shorter_than_its_lease(void **state)
{
    (void)state;
    hold_outlives_two_stalls(false);
}

static void
test_lock_watchdog_read_hold_outlives_two_stalls_shorter_than_its_lease(void **state)
{
    (void)state;
    hold_outlives_two_stalls(true);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_lock_waiting_survives_script_flush),
        T(test_lock_waiting_survives_client_kill_of_the_pubsub_connection),
        T(test_lock_waiter_reading_a_silent_link_recovers_when_it_is_dropped),
        T(test_lock_calls_survive_client_kill_of_command_connections),
        T(test_lock_waiting_survives_a_redis_restart),
        T(test_lock_killed_holder_frees_the_lock_after_its_lease),
        T(test_lock_watchdog_hold_outlives_two_stalls_shorter_than_its_lease),
        T(test_lock_watchdog_read_hold_outlives_two_stalls_shorter_than_its_lease),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up_debug, redis_down);
}
