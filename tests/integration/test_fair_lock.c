/* SPDX-License-Identifier: MIT */
/*
 * RFairLock against a real redis-server: FIFO order across threads and
 * processes, waiters that give up or die, reentrancy, exclusion (with an
 * RLock of the same name too), and wire conformance with Redisson: the
 * queue, the deadlines, the per-waiter channels and what is published on
 * them (protocol section 5). Some tests play the Java side by writing the
 * keys and publishing themselves.
 */
#include <pthread.h>
#include <signal.h>

#include "fair_common.h"

#define NAME "fair"
#define QUEUE "redisson_lock_queue:{fair}"
#define ZSET "redisson_lock_timeout:{fair}"
#define CHANNEL "redisson_lock__channel:{fair}"

/* ------------------------------------------------------------- helpers */

/* The deadline of `owner` in the zset, -1 when it has none. */
static long long
deadline_of(const char *owner)
{
    char v[64];

    redis_str(v, sizeof(v), "ZSCORE " ZSET " %s", owner);
    return v[0] != '\0' ? atoll(v) : -1;
}

/* cr_test_wait_until conditions: the lock's hash is gone; the queue has
 * at least 1, 2 or *arg waiters. */
static bool
lock_key_gone(void *arg)
{
    (void)arg;
    return redis_int("EXISTS " NAME) == 0;
}

static bool
queue_has_1(void *arg)
{
    (void)arg;
    return redis_int("LLEN " QUEUE) >= 1;
}

static bool
queue_has_2(void *arg)
{
    (void)arg;
    return redis_int("LLEN " QUEUE) >= 2;
}

static bool
queue_has(void *arg)
{
    return redis_int("LLEN " QUEUE) >= *(long long *)arg;
}

/* Waits until the queue has `n` waiters; fails the test after 5 s. */
static void
wait_queue_length(long long n)
{
    assert_true(cr_test_wait_until(queue_has, &n, slow(5000)));
}

/* A thread that asks for the lock with a wait, as thread id `tid` (0: its
 * own cr_thread_id()), records the outcome and, if asked, pushes `label`
 * onto the list "order" and unlocks. */
typedef struct waiter {
    cr_lock *lock;
    int64_t tid;
    int64_t wait_ms;
    bool unlock_after;
    const char *label;
    cr_status rc;
    int64_t acquired_wall; /* epoch ms, 0 when not acquired */
    int64_t acquired_mono;
    pthread_t thread;
} waiter;

/* Thread body of a waiter. */
static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    if (w->tid == 0)
        __atomic_store_n(&w->tid, cr_thread_id(), __ATOMIC_SEQ_CST);
    w->rc = cr_lock_try_lock_tid(w->lock, w->tid, w->wait_ms, CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK) {
        w->acquired_wall = wall_ms();
        w->acquired_mono = cr_test_now_ms();
        if (w->label != NULL)
            redis_int("RPUSH order %s", w->label);
        if (w->unlock_after)
            cr_lock_unlock_tid(w->lock, w->tid);
    }
    return NULL;
}

/* Starts a waiter thread (see waiter). */
static void
waiter_start(waiter *w, cr_lock *l, int64_t tid, int64_t wait_ms,
             bool unlock_after)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->tid = tid;
    w->wait_ms = wait_ms;
    w->unlock_after = unlock_after;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

/* ----------------------------------------------------------- behaviour */

static void
test_fair_lock_try_lock_takes_a_free_lock_with_rlock_layout(void **state)
{
    char owner[96];
    cr_lock *l;
    bool locked = false;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    assert_string_equal(cr_lock_name(l), NAME);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    owner_of(test_client, cr_thread_id(), owner);
    assert_int_equal(redis_int("HLEN " NAME), 1);
    assert_int_equal(redis_int("HGET " NAME " %s", owner), 1);
    assert_int_equal(cr_lock_is_locked(l, &locked), CR_OK);
    assert_true(locked);
    /* Nobody waited: no queue, no deadlines. */
    assert_int_equal(redis_int("EXISTS " QUEUE " " ZSET), 0);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
    cr_lock_free(l);
}

static void
test_fair_lock_is_reentrant_and_releases_hold_by_hold(void **state)
{
    cr_lock *l;
    int64_t n = 0;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 10000), CR_OK);
    assert_int_equal(cr_lock_lock(l, 20000), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 1000, 30000), CR_OK);
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_int_equal(n, 3);
    assert_true(redis_int("PTTL " NAME) > 20000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    /* A partial unlock re-applies the last explicit lease. */
    assert_true(redis_int("PTTL " NAME) > 20000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    cr_lock_free(l);
}

static void
test_fair_lock_waiters_get_it_in_queue_order_across_threads_and_processes(void **state)
{
    static const char *labels[] = {"t0", "p1", "t2", "p3", "t4"};
    cr_client *wc = client_with(30000, 0);
    cr_lock *holder, *l;
    waiter w[5];
    pid_t pids[5] = {0};
    int fds[5] = {-1, -1, -1, -1, -1};
    char expect[5][96], got[96];
    redisReply *r;
    int i;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(wc, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_lock(holder, CR_LEASE_WATCHDOG), CR_OK);
    for (i = 0; i < 5; i++) {
        if (labels[i][0] == 't') {
            waiter_start(&w[i], l, 0, slow(30000), true);
            w[i].label = labels[i];
            wait_queue_length(i + 1);
            owner_of(wc, __atomic_load_n(&w[i].tid, __ATOMIC_SEQ_CST), expect[i]);
        } else {
            const char *args[] = {"fifo", test_redis.url, NAME, labels[i],
                                  "order", NULL};

            pids[i] = spawn(args, &fds[i]);
            assert_true(cr_test_read_line(fds[i], expect[i], sizeof(expect[i]), slow(5000)));
            wait_queue_length(i + 1);
        }
    }
    /* The queue holds them in the order they came. */
    for (i = 0; i < 5; i++) {
        char index[16];

        snprintf(index, sizeof(index), "%d", i);
        redis_str(got, sizeof(got), "LINDEX " QUEUE " %s", index);
        assert_string_equal(got, expect[i]);
    }
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    for (i = 0; i < 5; i++) {
        if (labels[i][0] == 't') {
            pthread_join(w[i].thread, NULL);
            assert_int_equal(w[i].rc, CR_OK);
        } else {
            reap_ok(pids[i]);
            close(fds[i]);
        }
    }
    r = cr_test_redis_cmd(&test_redis, "LRANGE order 0 -1");
    assert_non_null(r);
    assert_int_equal(r->elements, 5);
    for (i = 0; i < 5; i++)
        assert_string_equal(r->element[i]->str, labels[i]);
    freeReplyObject(r);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(wc);
}

static void
test_fair_lock_waiter_that_gives_up_leaves_queue_and_later_deadlines_move(void **state)
{
    cr_client *wc = client_with(30000, 0);
    cr_lock *holder, *l;
    waiter a, b;
    char oa[96], ob[96], head[96];
    long long da, db;
    int64_t b_wait = slow(20000);

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(wc, NAME, &l), CR_OK);
    /* A long lease puts A's deadline far past its give-up, so only the
     * give-up can take it out of the queue. */
    assert_int_equal(cr_lock_lock(holder, 10000), CR_OK);
    waiter_start(&a, l, -1, 500, true);
    assert_true(cr_test_wait_until(queue_has_1, NULL, slow(3000)));
    waiter_start(&b, l, -2, b_wait, true);
    assert_true(cr_test_wait_until(queue_has_2, NULL, slow(3000)));
    owner_of(wc, -1, oa);
    owner_of(wc, -2, ob);
    da = deadline_of(oa);
    db = deadline_of(ob);
    /* B queued behind A: its deadline is A's plus its own wait. */
    assert_int_equal(db, da + b_wait);
    pthread_join(a.thread, NULL);
    assert_int_equal(a.rc, CR_BUSY);
    /* A left; B's deadline moved by A's 500 ms, not fairLockWaitTimeout. */
    assert_int_equal(redis_int("LLEN " QUEUE), 1);
    redis_str(head, sizeof(head), "LINDEX " QUEUE " %s", "0");
    assert_string_equal(head, ob);
    assert_int_equal(redis_int("ZCARD " ZSET), 1);
    assert_int_equal(deadline_of(oa), -1);
    assert_int_equal(deadline_of(ob), db - 500);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    pthread_join(b.thread, NULL);
    assert_int_equal(b.rc, CR_OK);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(wc);
}

static void
test_fair_lock_waiter_still_subscribed_tries_once_before_it_sleeps(void **state)
{
    cr_client *wc = client_with(30000, 0);
    cr_lock *holder, *l;
    cr_client_stats st0 = CR_CLIENT_STATS_INIT, st1 = CR_CLIENT_STATS_INIT;
    long long subs;
    bool lingered;
    waiter a, b;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(wc, NAME, &l), CR_OK);
    /* A first wait subscribes; its subscription lingers after it. */
    assert_int_equal(cr_lock_lock(holder, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&a, l, -3, slow(5000), true);
    wait_queue_length(1);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    pthread_join(a.thread, NULL);
    assert_int_equal(a.rc, CR_OK);
    /* The same owner waits again: one failed try, then sleep, then the
     * try that takes it; no second try once subscribed. */
    assert_int_equal(cr_lock_lock(holder, CR_LEASE_WATCHDOG), CR_OK);
    subs = subscribes_seen();
    assert_int_equal(cr_client_stats_get(wc, &st0), CR_OK);
    waiter_start(&b, l, -3, slow(5000), false);
    wait_queue_length(1);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    pthread_join(b.thread, NULL);
    assert_int_equal(b.rc, CR_OK);
    assert_int_equal(cr_client_stats_get(wc, &st1), CR_OK);
    lingered = subscribes_seen() == subs;
    assert_int_equal(cr_lock_unlock_tid(l, -3), CR_OK);
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(wc);
    if (!lingered) { /* too slow (valgrind): it ended before B came */
        print_message("subscription did not linger; %llu commands\n",
                      (unsigned long long)(st1.commands - st0.commands));
        skip();
    }
    assert_int_equal(st1.commands - st0.commands, 2);
}

static void
test_fair_lock_waiter_leaves_queue_when_its_client_is_freed(void **state)
{
    cr_client *wc = client_with(30000, 0);
    cr_lock *holder, *l;
    waiter w;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(wc, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_lock(holder, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&w, l, 0, CR_WAIT_FOREVER, true);
    assert_true(cr_test_wait_until(queue_has_1, NULL, slow(3000)));
    cr_client_free(wc);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_ECLOSED);
    assert_int_equal(redis_int("EXISTS " QUEUE " " ZSET), 0);
    cr_lock_free(l);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    cr_lock_free(holder);
}

/* What client_sent_more waits for: `client` has sent more commands than
 * `more_than`. */
typedef struct sent {
    cr_client *client;
    uint64_t more_than;
} sent;

/* cr_test_wait_until condition on a `sent`. */
static bool
client_sent_more(void *arg)
{
    sent *s = arg;
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    return cr_client_stats_get(s->client, &st) == CR_OK &&
           st.commands > s->more_than;
}

static void
test_fair_lock_dead_head_waiter_delays_others_only_until_its_deadline(void **state)
{
    cr_client *wc = client_with(30000, 0);
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_lock *holder, *l;
    waiter w;
    sent s;
    char dead[96];
    long long dd;
    int64_t unlocked;
    int fd;
    pid_t pid;
    const char *args[] = {"wait", test_redis.url, NAME, "1000", NULL};

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(wc, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_lock(holder, slow(1000)), CR_OK);
    /* D, another process, queues first (deadline: holder's ttl + 1 s),
     * then W. */
    pid = spawn(args, &fd);
    assert_true(cr_test_read_line(fd, dead, sizeof(dead), slow(5000)));
    assert_true(cr_test_wait_until(queue_has_1, NULL, slow(5000)));
    dd = deadline_of(dead);
    assert_true(dd > 0);
    waiter_start(&w, l, 0, slow(20000), true);
    assert_true(cr_test_wait_until(queue_has_2, NULL, slow(3000)));
    /* The holder stays much longer (a reentrant 60 s lease); W must have
     * retried since, and so been told to sleep for up to 60 s. */
    assert_int_equal(cr_lock_lock(holder, 60000), CR_OK);
    assert_int_equal(cr_client_stats_get(wc, &st), CR_OK);
    s.client = wc;
    s.more_than = st.commands;
    assert_true(cr_test_wait_until(client_sent_more, &s, slow(3000)));
    /* D dies in the queue; the holder leaves, telling only D. */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd);
    unlocked = wall_ms();
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    /* W got it once D's deadline had passed, not before, and soon after:
     * within its poll interval, far less than the holder's 60 s. */
    assert_true(w.acquired_wall >= dd);
    assert_true(w.acquired_wall <= (dd > unlocked ? dd : unlocked) + slow(1500));
    assert_int_equal(deadline_of(dead), -1);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(wc);
}

#define THREADS 6
#define ROUNDS 25

static void
test_fair_lock_mutual_exclusion_across_threads_keeps_counter_exact(void **state)
{
    shared_counter s = {.rounds = ROUNDS};
    pthread_t t[THREADS];
    int i;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &s.lock), CR_OK);
    for (i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, count_under_lock, &s), 0);
    for (i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(s.errors, 0);
    assert_int_equal(s.value, THREADS * ROUNDS);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    cr_lock_free(s.lock);
}

static void
test_fair_lock_mutual_exclusion_across_processes_keeps_counter_exact(void **state)
{
    const char *args[] = {"count", test_redis.url, NAME, "30", "counter", NULL};
    pid_t pids[3];
    int fds[3], i;

    (void)state;
    for (i = 0; i < 3; i++)
        pids[i] = spawn(args, &fds[i]);
    for (i = 0; i < 3; i++) {
        reap_ok(pids[i]);
        close(fds[i]);
    }
    assert_int_equal(redis_int("GET counter"), 90);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
}

static void
test_fair_lock_and_rlock_of_the_same_name_exclude_each_other(void **state)
{
    cr_client *other = client_with(30000, 0);
    cr_lock *fair, *plain;

    (void)state;
    assert_int_equal(cr_fair_lock_new(other, NAME, &fair), CR_OK);
    assert_int_equal(cr_lock_new(test_client, NAME, &plain), CR_OK);
    assert_int_equal(cr_lock_lock(fair, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(plain, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_try_lock(plain, 200, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_unlock(fair), CR_OK);
    assert_int_equal(cr_lock_lock(plain, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(fair, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_try_lock(fair, 200, CR_LEASE_WATCHDOG), CR_BUSY);
    /* The fair waiter that gave up left nothing behind. */
    assert_int_equal(redis_int("EXISTS " QUEUE " " ZSET), 0);
    assert_int_equal(cr_lock_unlock(plain), CR_OK);
    assert_int_equal(cr_lock_try_lock(fair, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(fair), CR_OK);
    cr_lock_free(fair);
    cr_lock_free(plain);
    cr_client_free(other);
}

static void
test_fair_lock_watchdog_keeps_it_alive_for_several_timeouts(void **state)
{
    cr_lock *l;
    int64_t end;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    end = cr_test_now_ms() + 1200;
    while (cr_test_now_ms() < end) {
        long long ttl = redis_int("PTTL " NAME);

        assert_true(ttl > 0 && ttl <= 300);
        usleep(20000);
    }
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

static void
test_fair_lock_bad_arguments_are_refused_with_einval(void **state)
{
    cr_lock *l = NULL;

    (void)state;
    assert_int_equal(cr_fair_lock_new(NULL, NAME, &l), CR_EINVAL);
    assert_int_equal(cr_fair_lock_new(test_client, NULL, &l), CR_EINVAL);
    assert_int_equal(cr_fair_lock_new(test_client, "", &l), CR_EINVAL);
    assert_int_equal(cr_fair_lock_new(test_client, NAME, NULL), CR_EINVAL);
    assert_null(l);
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, -5, CR_LEASE_WATCHDOG), CR_EINVAL);
    assert_int_equal(cr_lock_try_lock(l, 0, 0), CR_EINVAL);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    cr_lock_free(l);
}

/* ---------------------------------------------------------------- wire */

static void
test_fair_lock_wire_waiter_is_queued_with_a_deadline_and_its_own_channel(void **state)
{
    cr_client *other = client_with(30000, 0);
    cr_lock *holder, *l;
    waiter w;
    char mine[96], channel[160], head[96];
    int64_t before, after;
    long long d;

    (void)state;
    assert_int_equal(cr_fair_lock_new(other, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_lock(holder, 10000), CR_OK);
    owner_of(test_client, -7, mine);
    snprintf(channel, sizeof(channel), CHANNEL ":%s", mine);
    before = wall_ms();
    waiter_start(&w, l, -7, 5000, true);
    assert_true(cr_test_wait_until(queue_has_1, NULL, slow(3000)));
    assert_true(cr_test_wait_until(has_subscriber, channel, slow(3000)));
    after = wall_ms();
    assert_true(key_type_is(NAME, "hash"));
    assert_true(key_type_is(QUEUE, "list"));
    assert_true(key_type_is(ZSET, "zset"));
    assert_int_equal(redis_int("LLEN " QUEUE), 1);
    redis_str(head, sizeof(head), "LINDEX " QUEUE " %s", "0");
    assert_string_equal(head, mine);
    assert_int_equal(redis_int("ZCARD " ZSET), 1);
    /* deadline = the holder's ttl at enqueue + the waiter's wait + now. */
    d = deadline_of(mine);
    assert_true(d > before + 5000);
    assert_true(d <= after + 10000 + 5000);
    /* Only the waiter's own channel, not RLock's, is listened to. */
    assert_int_equal(numsub(CHANNEL), 0);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    assert_true(cr_test_wait_until(no_latch_keys, NULL, slow(3000)));
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(other);
}

static void
test_fair_lock_wire_unlock_publishes_0_only_to_the_head_waiter(void **state)
{
    cr_client *other = client_with(30000, 0);
    cr_lock *holder, *l;
    waiter a, b;
    char oa[96], ob[96], cha[160], chb[160];
    const char *channels[3] = {CHANNEL, cha, chb};
    cr_test_listener *li;
    long long db;
    size_t n;

    (void)state;
    assert_int_equal(cr_fair_lock_new(other, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    owner_of(test_client, -11, oa);
    owner_of(test_client, -12, ob);
    snprintf(cha, sizeof(cha), CHANNEL ":%s", oa);
    snprintf(chb, sizeof(chb), CHANNEL ":%s", ob);
    li = cr_test_listener_start(&test_redis, channels, 3);
    assert_non_null(li);
    assert_int_equal(cr_lock_lock(holder, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&a, l, -11, slow(4000), false);
    assert_true(cr_test_wait_until(queue_has_1, NULL, slow(3000)));
    waiter_start(&b, l, -12, slow(8000), false);
    assert_true(cr_test_wait_until(queue_has_2, NULL, slow(3000)));
    db = deadline_of(ob);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    pthread_join(a.thread, NULL);
    assert_int_equal(a.rc, CR_OK);
    /* A's acquisition moved B's deadline earlier by A's wait. */
    assert_int_equal(deadline_of(ob), db - slow(4000));
    n = settle(li, CHANNEL, "marker1");
    assert_int_equal(count_messages(li, n, cha, "0"), 1);
    assert_int_equal(count_messages(li, n, chb, NULL), 0);
    assert_int_equal(count_messages(li, n, CHANNEL, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(cr_lock_unlock_tid(l, -11), CR_OK);
    pthread_join(b.thread, NULL);
    assert_int_equal(b.rc, CR_OK);
    n = settle(li, CHANNEL, "marker2");
    assert_int_equal(count_messages(li, n, chb, "0"), 1);
    assert_int_equal(n, 3); /* "0" to A, marker1, "0" to B */
    assert_int_equal(cr_lock_unlock_tid(l, -12), CR_OK);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    cr_test_listener_stop(li);
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(other);
}

static void
test_fair_lock_wire_try_lock_without_wait_never_enqueues(void **state)
{
    cr_client *other = client_with(30000, 0);
    cr_lock *holder, *l;
    int64_t now;

    (void)state;
    assert_int_equal(cr_fair_lock_new(other, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    assert_int_equal(cr_lock_lock(holder, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(redis_int("EXISTS " QUEUE " " ZSET), 0);
    assert_int_equal(cr_lock_unlock(holder), CR_OK);
    /* A stray deadline with no queue (an inconsistent state): taking the
     * lock moves it by fairLockWaitTimeout (300000 by default), which shows
     * the no-wait script's swapped clock and wait arguments. */
    now = wall_ms();
    assert_int_equal(redis_int("ZADD " ZSET " %lld stray", (long long)now + 900000), 1);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("ZSCORE " ZSET " stray"), now + 600000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(other);
}

static void
test_fair_lock_wire_stale_head_waiters_are_dropped_and_missing_scores_tolerated(void **state)
{
    cr_lock *l;
    int64_t now = wall_ms();

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    /* Two dead Java waiters whose deadlines have passed. */
    assert_int_equal(redis_int("RPUSH " QUEUE " %s", FOREIGN_OWNER_1), 1);
    assert_int_equal(redis_int("RPUSH " QUEUE " %s", FOREIGN_OWNER_2), 2);
    assert_int_equal(redis_int("ZADD " ZSET " %lld %s", (long long)now - 1000,
                               FOREIGN_OWNER_1), 1);
    assert_int_equal(redis_int("ZADD " ZSET " %lld %s", (long long)now - 10,
                               FOREIGN_OWNER_2), 1);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("EXISTS " QUEUE " " ZSET), 0);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    /* A head with no deadline (an inconsistent state) is neither dropped
     * nor an error; it is in the way until deleted. */
    assert_int_equal(redis_int("RPUSH " QUEUE " %s", FOREIGN_OWNER_1), 1);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_try_lock(l, 200, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(redis_int("LLEN " QUEUE), 1);
    assert_int_equal(redis_int("EXISTS " ZSET), 0);
    assert_int_equal(redis_int("DEL " QUEUE), 1);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

static void
test_fair_lock_wire_java_unlock_message_wakes_the_c_waiter(void **state)
{
    cr_lock *l;
    waiter w;
    char mine[96], channel[160];
    int64_t published;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    /* A Java holder with a long lease. */
    assert_int_equal(redis_int("HSET " NAME " %s 1", FOREIGN_OWNER_1), 1);
    assert_int_equal(redis_int("PEXPIRE " NAME " 30000"), 1);
    owner_of(test_client, -21, mine);
    snprintf(channel, sizeof(channel), CHANNEL ":%s", mine);
    waiter_start(&w, l, -21, slow(10000), true);
    assert_true(cr_test_wait_until(queue_has_1, NULL, slow(3000)));
    assert_true(cr_test_wait_until(has_subscriber, channel, slow(3000)));
    /* The Java unlock, atomic as its script: the hash goes and the head
     * waiter is told (it polls only every second). */
    published = cr_test_now_ms();
    assert_int_equal(redis_int("EVAL %s 2 %s %s", "redis.call('del', KEYS[1]); "
                               "return redis.call('publish', KEYS[2], '0')",
                               NAME, channel), 1);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_mono - published < slow(300));
    cr_lock_free(l);
}

static void
test_fair_lock_wire_unlock_of_free_lock_wakes_head_and_reports_not_owner(void **state)
{
    char channel[160];
    const char *channels[1] = {channel};
    cr_test_listener *li;
    cr_lock *l;
    size_t n;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    snprintf(channel, sizeof(channel), CHANNEL ":%s", FOREIGN_OWNER_1);
    li = cr_test_listener_start(&test_redis, channels, 1);
    assert_non_null(li);
    assert_int_equal(redis_int("RPUSH " QUEUE " %s", FOREIGN_OWNER_1), 1);
    assert_int_equal(redis_int("ZADD " ZSET " %lld %s",
                               (long long)wall_ms() + 60000, FOREIGN_OWNER_1), 1);
    /* Redisson's script says "unlocked" here and wakes the head waiter;
     * the wake-up is reproduced, the answer is not. */
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    n = settle(li, channel, "marker");
    assert_int_equal(count_messages(li, n, channel, "0"), 1);
    assert_int_equal(redis_int("DEL " QUEUE " " ZSET), 2);
    /* An explicit lease that ran out: the owner learns it lost the lock,
     * and the head waiter is woken all the same. */
    assert_int_equal(cr_lock_lock(l, 100), CR_OK);
    assert_true(cr_test_wait_until(lock_key_gone, NULL, slow(3000)));
    assert_int_equal(redis_int("RPUSH " QUEUE " %s", FOREIGN_OWNER_1), 1);
    assert_int_equal(redis_int("ZADD " ZSET " %lld %s",
                               (long long)wall_ms() + 60000, FOREIGN_OWNER_1), 1);
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    n = settle(li, channel, "marker2");
    assert_int_equal(count_messages(li, n, channel, "0"), 2);
    assert_true(cr_test_wait_until(no_latch_keys, NULL, slow(3000)));
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

static void
test_fair_lock_wire_force_unlock_wakes_only_the_head_waiter(void **state)
{
    cr_client *other = client_with(30000, 0);
    /* The head waiter keeps the lock while the other times out: a 30 s
     * watchdog, so that a slow run cannot let its lease lapse meanwhile. */
    cr_client *mine = client_with(30000, 0);
    cr_lock *holder, *l;
    waiter a, b;
    char oa[96], ob[96], cha[160], chb[160];
    const char *channels[2] = {cha, chb};
    cr_test_listener *li;
    bool done = false;
    size_t n;

    (void)state;
    assert_int_equal(cr_fair_lock_new(other, NAME, &holder), CR_OK);
    assert_int_equal(cr_fair_lock_new(mine, NAME, &l), CR_OK);
    owner_of(mine, -31, oa);
    owner_of(mine, -32, ob);
    snprintf(cha, sizeof(cha), CHANNEL ":%s", oa);
    snprintf(chb, sizeof(chb), CHANNEL ":%s", ob);
    li = cr_test_listener_start(&test_redis, channels, 2);
    assert_non_null(li);
    assert_int_equal(cr_lock_lock(holder, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&a, l, -31, slow(10000), false);
    assert_true(cr_test_wait_until(queue_has_1, NULL, slow(3000)));
    waiter_start(&b, l, -32, slow(500), false);
    assert_true(cr_test_wait_until(queue_has_2, NULL, slow(3000)));
    assert_int_equal(cr_lock_force_unlock(l, &done), CR_OK);
    assert_true(done);
    pthread_join(a.thread, NULL);
    assert_int_equal(a.rc, CR_OK);
    pthread_join(b.thread, NULL);
    assert_int_equal(b.rc, CR_BUSY);
    n = settle(li, cha, "marker");
    assert_int_equal(count_messages(li, n, cha, "0"), 1);
    assert_int_equal(count_messages(li, n, chb, NULL), 0);
    /* The forced-out holder learns it at its unlock. */
    assert_int_equal(cr_lock_unlock(holder), CR_ELOST);
    assert_int_equal(cr_lock_force_unlock(l, &done), CR_OK);
    assert_true(done);
    assert_int_equal(cr_lock_force_unlock(l, &done), CR_OK);
    assert_false(done);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    cr_test_listener_stop(li);
    cr_lock_free(l);
    cr_lock_free(holder);
    cr_client_free(other);
    cr_client_free(mine);
}

static void
test_fair_lock_wire_delete_removes_all_three_keys_without_publishing(void **state)
{
    char channel[160];
    const char *channels[2] = {CHANNEL, channel};
    cr_test_listener *li;
    cr_lock *l;
    bool deleted = false;
    size_t n;

    (void)state;
    assert_int_equal(cr_fair_lock_new(test_client, NAME, &l), CR_OK);
    snprintf(channel, sizeof(channel), CHANNEL ":%s", FOREIGN_OWNER_1);
    li = cr_test_listener_start(&test_redis, channels, 2);
    assert_non_null(li);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("RPUSH " QUEUE " %s", FOREIGN_OWNER_1), 1);
    assert_int_equal(redis_int("ZADD " ZSET " %lld %s",
                               (long long)wall_ms() + 60000, FOREIGN_OWNER_1), 1);
    assert_int_equal(cr_lock_delete(l, &deleted), CR_OK);
    assert_true(deleted);
    assert_int_equal(redis_int("EXISTS " NAME " " QUEUE " " ZSET), 0);
    n = settle(li, CHANNEL, "marker");
    assert_int_equal(n, 0);
    assert_int_equal(cr_lock_delete(l, &deleted), CR_OK);
    assert_false(deleted);
    /* The hold was forgotten with the keys. */
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_fair_lock_try_lock_takes_a_free_lock_with_rlock_layout),
        T(test_fair_lock_is_reentrant_and_releases_hold_by_hold),
        T(test_fair_lock_waiters_get_it_in_queue_order_across_threads_and_processes),
        T(test_fair_lock_waiter_that_gives_up_leaves_queue_and_later_deadlines_move),
        T(test_fair_lock_waiter_still_subscribed_tries_once_before_it_sleeps),
        T(test_fair_lock_waiter_leaves_queue_when_its_client_is_freed),
        T(test_fair_lock_dead_head_waiter_delays_others_only_until_its_deadline),
        T(test_fair_lock_mutual_exclusion_across_threads_keeps_counter_exact),
        T(test_fair_lock_mutual_exclusion_across_processes_keeps_counter_exact),
        T(test_fair_lock_and_rlock_of_the_same_name_exclude_each_other),
        T(test_fair_lock_watchdog_keeps_it_alive_for_several_timeouts),
        T(test_fair_lock_bad_arguments_are_refused_with_einval),
        T(test_fair_lock_wire_waiter_is_queued_with_a_deadline_and_its_own_channel),
        T(test_fair_lock_wire_unlock_publishes_0_only_to_the_head_waiter),
        T(test_fair_lock_wire_try_lock_without_wait_never_enqueues),
        T(test_fair_lock_wire_stale_head_waiters_are_dropped_and_missing_scores_tolerated),
        T(test_fair_lock_wire_java_unlock_message_wakes_the_c_waiter),
        T(test_fair_lock_wire_unlock_of_free_lock_wakes_head_and_reports_not_owner),
        T(test_fair_lock_wire_force_unlock_wakes_only_the_head_waiter),
        T(test_fair_lock_wire_delete_removes_all_three_keys_without_publishing),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
