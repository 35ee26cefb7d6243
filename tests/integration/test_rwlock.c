/* SPDX-License-Identifier: MIT */
/*
 * RReadWriteLock against a real redis-server: shared readers, exclusive
 * writers (threads and processes), crashed readers, downgrade, the refused
 * upgrade, read-lock renewal, and wire conformance with Redisson: the hash's
 * mode and fields, the per-hold timeout keys, what the unlocks recompute and
 * publish on redisson_rwlock:{N} (protocol sections 4 and 6). Some tests play
 * the Java side by writing the keys and publishing themselves.
 */
#include <pthread.h>
#include <signal.h>

#include "fair_common.h"

#define NAME "rw"
#define CHANNEL "redisson_rwlock:{rw}"

/* ------------------------------------------------------------- helpers */

/* The timeout key of read hold `i` of `reader` on NAME. */
static void
timeout_key(const char *reader, int i, char *out, size_t size)
{
    snprintf(out, size, "{" NAME "}:%s:rwlock_timeout:%d", reader, i);
}

/* The mode field of NAME into out ("" when none). */
static void
mode_of(char *out, size_t size)
{
    redis_str(out, size, "HGET " NAME " %s", "mode");
}

/* A thread that asks for one side of the lock with a wait and keeps it
 * until told to let go (unless `unlock_after`). */
typedef struct waiter {
    cr_lock *lock;
    int64_t wait_ms;
    bool unlock_after;
    cr_status rc;
    int64_t acquired_mono; /* 0 when not acquired */
    pthread_t thread;
} waiter;

/* Thread body of a waiter. */
static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, w->wait_ms, CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK) {
        w->acquired_mono = cr_test_now_ms();
        if (w->unlock_after)
            cr_lock_unlock(w->lock);
    }
    return NULL;
}

/* Starts a waiter thread. */
static void
waiter_start(waiter *w, cr_lock *l, int64_t wait_ms, bool unlock_after)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->wait_ms = wait_ms;
    w->unlock_after = unlock_after;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

/* ----------------------------------------------------------- behaviour */

static void
test_rwlock_sides_are_borrowed_handles_owned_by_the_rwlock(void **state)
{
    cr_rwlock *rw = NULL;
    cr_lock *r, *w;

    (void)state;
    assert_int_equal(cr_rwlock_new(NULL, NAME, &rw), CR_EINVAL);
    assert_int_equal(cr_rwlock_new(test_client, NULL, &rw), CR_EINVAL);
    assert_int_equal(cr_rwlock_new(test_client, "", &rw), CR_EINVAL);
    assert_int_equal(cr_rwlock_new(test_client, NAME, NULL), CR_EINVAL);
    assert_null(rw);
    assert_null(cr_rwlock_read_lock(NULL));
    assert_null(cr_rwlock_write_lock(NULL));
    assert_int_equal(cr_rwlock_delete(NULL, NULL), CR_EINVAL);
    cr_rwlock_free(NULL);
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    r = cr_rwlock_read_lock(rw);
    w = cr_rwlock_write_lock(rw);
    assert_non_null(r);
    assert_non_null(w);
    assert_true(r != w);
    assert_string_equal(cr_lock_name(r), NAME);
    assert_string_equal(cr_lock_name(w), NAME);
    /* Freeing a side does nothing: it still works. */
    cr_lock_free(r);
    assert_int_equal(cr_lock_try_lock(r, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(r), CR_OK);
    assert_int_equal(cr_lock_try_lock(r, -3, CR_LEASE_WATCHDOG), CR_EINVAL);
    cr_rwlock_free(rw);
}

/* Readers that wait until all of them hold the read lock at once. */
typedef struct readers {
    cr_lock *lock;
    int inside;
    int most;
    int go;
    int errors;
} readers;

/* Thread body: take the read lock, count in, wait for the go, leave. */
static void *
read_together(void *arg)
{
    readers *s = arg;
    int n;

    if (cr_lock_lock(s->lock, CR_LEASE_WATCHDOG) != CR_OK) {
        __atomic_add_fetch(&s->errors, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    n = __atomic_add_fetch(&s->inside, 1, __ATOMIC_SEQ_CST);
    if (n > __atomic_load_n(&s->most, __ATOMIC_SEQ_CST))
        __atomic_store_n(&s->most, n, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&s->go, __ATOMIC_SEQ_CST))
        usleep(1000);
    __atomic_sub_fetch(&s->inside, 1, __ATOMIC_SEQ_CST);
    if (cr_lock_unlock(s->lock) != CR_OK)
        __atomic_add_fetch(&s->errors, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* cr_test_wait_until condition: four readers are inside. */
static bool
four_inside(void *arg)
{
    return __atomic_load_n(&((readers *)arg)->inside, __ATOMIC_SEQ_CST) == 4;
}

static void
test_rwlock_many_readers_hold_the_read_lock_at_once(void **state)
{
    readers s;
    cr_rwlock *rw;
    pthread_t t[4];
    char mode[16];
    int i;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    s.lock = cr_rwlock_read_lock(rw);
    for (i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, read_together, &s), 0);
    assert_true(cr_test_wait_until(four_inside, &s, slow(5000)));
    mode_of(mode, sizeof(mode));
    assert_string_equal(mode, "read");
    assert_int_equal(redis_int("HLEN " NAME), 5);
    assert_int_equal(count_keys("{" NAME "}:*:rwlock_timeout:1"), 4);
    __atomic_store_n(&s.go, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(s.errors, 0);
    assert_int_equal(s.most, 4);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
    assert_int_equal(count_keys("{" NAME "}:*"), 0);
    cr_rwlock_free(rw);
}

#define WRITERS 3
#define READERS 3
#define ROUNDS 20

/* Writers increment `value` non-atomically; readers check that nothing
 * changes and no writer is inside while they read. */
typedef struct mixed {
    cr_rwlock *rw;
    volatile long value;
    int writers_inside;
    int readers_inside;
    int violations;
    int errors;
} mixed;

/* Thread body of a writer. */
static void *
write_rounds(void *arg)
{
    mixed *m = arg;
    cr_lock *l = cr_rwlock_write_lock(m->rw);
    int i;

    for (i = 0; i < ROUNDS; i++) {
        long v;

        if (cr_lock_lock(l, CR_LEASE_WATCHDOG) != CR_OK) {
            __atomic_add_fetch(&m->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (__atomic_add_fetch(&m->writers_inside, 1, __ATOMIC_SEQ_CST) != 1 ||
            __atomic_load_n(&m->readers_inside, __ATOMIC_SEQ_CST) != 0)
            __atomic_add_fetch(&m->violations, 1, __ATOMIC_SEQ_CST);
        v = m->value;
        sched_yield();
        m->value = v + 1;
        __atomic_sub_fetch(&m->writers_inside, 1, __ATOMIC_SEQ_CST);
        if (cr_lock_unlock(l) != CR_OK)
            __atomic_add_fetch(&m->errors, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* Thread body of a reader. */
static void *
read_rounds(void *arg)
{
    mixed *m = arg;
    cr_lock *l = cr_rwlock_read_lock(m->rw);
    int i;

    for (i = 0; i < ROUNDS; i++) {
        long before;

        if (cr_lock_lock(l, CR_LEASE_WATCHDOG) != CR_OK) {
            __atomic_add_fetch(&m->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        __atomic_add_fetch(&m->readers_inside, 1, __ATOMIC_SEQ_CST);
        before = m->value;
        sched_yield();
        if (m->value != before ||
            __atomic_load_n(&m->writers_inside, __ATOMIC_SEQ_CST) != 0)
            __atomic_add_fetch(&m->violations, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&m->readers_inside, 1, __ATOMIC_SEQ_CST);
        if (cr_lock_unlock(l) != CR_OK)
            __atomic_add_fetch(&m->errors, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void
test_rwlock_writers_exclude_readers_and_writers_and_keep_counter_exact(void **state)
{
    mixed m;
    pthread_t t[WRITERS + READERS];
    int i;

    (void)state;
    memset(&m, 0, sizeof(m));
    assert_int_equal(cr_rwlock_new(test_client, NAME, &m.rw), CR_OK);
    for (i = 0; i < WRITERS + READERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL,
                                        i % 2 == 0 ? write_rounds : read_rounds,
                                        &m), 0);
    for (i = 0; i < WRITERS + READERS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(m.errors, 0);
    assert_int_equal(m.violations, 0);
    assert_int_equal(m.value, WRITERS * ROUNDS);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
    cr_rwlock_free(m.rw);
}

static void
test_rwlock_writers_in_other_processes_keep_counter_exact(void **state)
{
    const char *args[] = {"write-count", test_redis.url, NAME, "25", "counter",
                          NULL};
    pid_t pids[3];
    int fds[3], i;

    (void)state;
    for (i = 0; i < 3; i++)
        pids[i] = spawn(args, &fds[i]);
    for (i = 0; i < 3; i++) {
        reap_ok(pids[i]);
        close(fds[i]);
    }
    assert_int_equal(redis_int("GET counter"), 75);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
}

static void
test_rwlock_writer_gets_the_lock_when_the_last_reader_leaves(void **state)
{
    cr_client *other = client_with(30000, 0);
    cr_rwlock *theirs, *mine;
    waiter w;
    bool locked = true;
    int64_t released;

    (void)state;
    assert_int_equal(cr_rwlock_new(other, NAME, &theirs), CR_OK);
    assert_int_equal(cr_rwlock_new(test_client, NAME, &mine), CR_OK);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(theirs), -1,
                                      CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(theirs), -2,
                                      CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&w, cr_rwlock_write_lock(mine), slow(10000), true);
    await_waiters_in_line(NAME, 1);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(theirs), -1), CR_OK);
    assert_int_equal(cr_lock_is_locked(cr_rwlock_write_lock(mine), &locked), CR_OK);
    assert_false(locked);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(theirs), -2), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    /* The readers' lease is 30 s: only the message explains this. */
    assert_true(w.acquired_mono - released < slow(1000));
    cr_rwlock_free(mine);
    cr_rwlock_free(theirs);
    cr_client_free(other);
}

static void
test_rwlock_crashed_sole_reader_frees_the_lock_after_its_lease(void **state)
{
    const char *args[] = {"read-hold", test_redis.url, NAME, "300", NULL};
    cr_rwlock *rw;
    char dead[96];
    int64_t killed;
    int fd;
    pid_t pid;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    pid = spawn(args, &fd);
    assert_true(cr_test_read_line(fd, dead, sizeof(dead), slow(5000)));
    assert_int_equal(redis_int("HGET " NAME " %s", dead), 1);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd);
    killed = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(cr_rwlock_write_lock(rw), slow(5000),
                                      CR_LEASE_WATCHDOG), CR_OK);
    assert_true(cr_test_now_ms() - killed <= slow(1500));
    assert_int_equal(cr_lock_unlock(cr_rwlock_write_lock(rw)), CR_OK);
    cr_rwlock_free(rw);
}

static void
test_rwlock_crashed_reader_stops_blocking_writers_once_its_timeout_key_expires(void **state)
{
    const char *args[] = {"read-hold", test_redis.url, NAME, "300", NULL};
    cr_client *wc = client_with(30000, 0);
    cr_rwlock *mine, *writer;
    char dead[96], dead_key[160];
    waiter w;
    int64_t released;
    int fd;
    pid_t pid;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &mine), CR_OK);
    assert_int_equal(cr_rwlock_new(wc, NAME, &writer), CR_OK);
    pid = spawn(args, &fd);
    assert_true(cr_test_read_line(fd, dead, sizeof(dead), slow(5000)));
    timeout_key(dead, 1, dead_key, sizeof(dead_key));
    /* A live reader here, renewed by this client's watchdog (300 ms). */
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(mine), CR_LEASE_WATCHDOG),
                     CR_OK);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd);
    waiter_start(&w, cr_rwlock_write_lock(writer), slow(10000), true);
    /* Nobody renews the dead reader's key: it expires, although the hash
     * is kept alive by the live reader's renewals. */
    assert_true(cr_test_wait_until(key_gone, dead_key, slow(3000)));
    assert_int_equal(redis_int("HGET " NAME " %s", dead), 1);
    assert_true(redis_int("PTTL " NAME) > 0);
    assert_int_equal(w.acquired_mono, 0);
    /* The live reader leaves: the dead one no longer counts. */
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(mine)), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_mono - released < slow(1000));
    cr_rwlock_free(mine);
    cr_rwlock_free(writer);
    cr_client_free(wc);
}

static void
test_rwlock_downgrade_keeps_a_read_hold_and_wakes_other_readers(void **state)
{
    cr_client *wc = client_with(30000, 0);
    cr_rwlock *writer, *mine;
    cr_lock *wr, *wrr;
    char mode[16], reader[96];
    waiter r;
    bool locked = false;
    int64_t released;

    (void)state;
    assert_int_equal(cr_rwlock_new(wc, NAME, &writer), CR_OK);
    assert_int_equal(cr_rwlock_new(test_client, NAME, &mine), CR_OK);
    wr = cr_rwlock_write_lock(writer);
    wrr = cr_rwlock_read_lock(writer);
    assert_int_equal(cr_lock_lock(wr, CR_LEASE_WATCHDOG), CR_OK);
    /* The writer may take read holds too. */
    assert_int_equal(cr_lock_lock(wrr, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_is_locked(cr_rwlock_read_lock(mine), &locked), CR_OK);
    assert_true(locked);
    waiter_start(&r, cr_rwlock_read_lock(mine), slow(10000), true);
    await_waiters_in_line(NAME, 1);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(wr), CR_OK);
    pthread_join(r.thread, NULL);
    assert_int_equal(r.rc, CR_OK);
    /* The writer's lease is 30 s: the downgrade's message woke the reader. */
    assert_true(r.acquired_mono - released < slow(1000));
    mode_of(mode, sizeof(mode));
    assert_string_equal(mode, "read");
    owner_of(wc, cr_thread_id(), reader);
    assert_int_equal(redis_int("HGET " NAME " %s", reader), 1);
    assert_int_equal(cr_lock_is_locked(wr, &locked), CR_OK);
    assert_false(locked);
    assert_int_equal(cr_lock_unlock(wrr), CR_OK);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
    cr_rwlock_free(mine);
    cr_rwlock_free(writer);
    cr_client_free(wc);
}

static void
test_rwlock_read_to_write_upgrade_fails_at_once_with_edeadlk(void **state)
{
    cr_rwlock *rw;
    cr_lock *r, *w;
    char mine[96];
    int64_t start;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    r = cr_rwlock_read_lock(rw);
    w = cr_rwlock_write_lock(rw);
    assert_int_equal(cr_lock_lock(r, CR_LEASE_WATCHDOG), CR_OK);
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_EDEADLK);
    assert_true(strlen(cr_last_error()) > 0);
    assert_int_equal(cr_lock_try_lock(w, 0, CR_LEASE_WATCHDOG), CR_EDEADLK);
    assert_int_equal(cr_lock_try_lock(w, 5000, 1000), CR_EDEADLK);
    assert_true(cr_test_now_ms() - start < slow(1000));
    /* Nothing was written: one reader field besides the mode. */
    owner_of(test_client, cr_thread_id(), mine);
    assert_int_equal(redis_int("HLEN " NAME), 2);
    assert_int_equal(redis_int("HGET " NAME " %s", mine), 1);
    /* Another owner is merely busy. */
    assert_int_equal(cr_lock_try_lock_tid(w, -9, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_unlock(r), CR_OK);
    /* Write then read then write again is reentrancy, not an upgrade. */
    assert_int_equal(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(r, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(w), CR_OK);
    assert_int_equal(cr_lock_unlock(w), CR_OK);
    assert_int_equal(cr_lock_unlock(r), CR_OK);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
    cr_rwlock_free(rw);
}

static void
test_rwlock_watchdog_renews_readers_across_several_periods(void **state)
{
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_rwlock *rw, *other;
    char mine[96], k1[160], k2[160];
    int64_t end;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    assert_int_equal(cr_rwlock_new(test_client, "rw2", &other), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(rw), -4,
                                      CR_LEASE_WATCHDOG), CR_OK);
    /* A write hold elsewhere: plain and read renewals side by side. */
    assert_int_equal(cr_lock_lock(cr_rwlock_write_lock(other), CR_LEASE_WATCHDOG),
                     CR_OK);
    owner_of(test_client, cr_thread_id(), mine);
    timeout_key(mine, 1, k1, sizeof(k1));
    timeout_key(mine, 2, k2, sizeof(k2));
    end = cr_test_now_ms() + 1500; /* five watchdog timeouts */
    while (cr_test_now_ms() < end) {
        long long t = redis_int("PTTL " NAME), t1 = redis_int("PTTL %s", k1),
                  t2 = redis_int("PTTL %s", k2), t3 = redis_int("PTTL rw2");

        assert_true(t > 0 && t <= 300);
        assert_true(t1 > 0 && t1 <= 300);
        assert_true(t2 > 0 && t2 <= 300);
        assert_true(t3 > 0 && t3 <= 300);
        usleep(20000);
    }
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    assert_true(st.renewals_sent >= 8);
    assert_int_equal(st.leases_lost, 0);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(rw), -4), CR_OK);
    assert_int_equal(cr_lock_unlock(cr_rwlock_write_lock(other)), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    cr_rwlock_free(other);
    cr_rwlock_free(rw);
}

static void
test_rwlock_watchdog_renews_mixed_holds_in_batches_of_one_hash(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_client *c = NULL;
    cr_rwlock *a, *b;
    int64_t end;

    (void)state;
    o.url = test_redis.url;
    o.lock_watchdog_timeout_ms = 300;
    o.lock_watchdog_batch_size = 1;
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    assert_int_equal(cr_rwlock_new(c, NAME, &a), CR_OK);
    assert_int_equal(cr_rwlock_new(c, "rw2", &b), CR_OK);
    /* Two readers of one hash share a call; the other hash and the write
     * hold get calls of their own. */
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(a), -1,
                                      CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(a), -2,
                                      CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_write_lock(b), -3,
                                      CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(b), -3,
                                      CR_LEASE_WATCHDOG), CR_OK);
    end = cr_test_now_ms() + 1200;
    while (cr_test_now_ms() < end) {
        long long ta = redis_int("PTTL " NAME), tb = redis_int("PTTL rw2");

        assert_true(ta > 0 && ta <= 300);
        assert_true(tb > 0 && tb <= 300);
        assert_int_equal(count_keys("*rwlock_timeout*"), 3);
        usleep(20000);
    }
    assert_int_equal(cr_client_stats_get(c, &st), CR_OK);
    assert_int_equal(st.leases_lost, 0);
    assert_int_equal(st.renewal_failures, 0);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(a), -1), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(a), -2), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(b), -3), CR_OK);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_write_lock(b), -3), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    cr_rwlock_free(a);
    cr_rwlock_free(b);
    cr_client_free(c);
}

static void
test_rwlock_write_renewal_survives_a_read_unlock_of_the_same_thread(void **state)
{
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_rwlock *rw;
    int64_t end;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_write_lock(rw), CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    /* Redisson's read unlock would cancel the write renewal here. */
    end = cr_test_now_ms() + 1200;
    while (cr_test_now_ms() < end) {
        long long t = redis_int("PTTL " NAME);

        assert_true(t > 0 && t <= 300);
        usleep(20000);
    }
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    assert_int_equal(st.leases_lost, 0);
    assert_int_equal(cr_lock_unlock(cr_rwlock_write_lock(rw)), CR_OK);
    cr_rwlock_free(rw);
}

static void
test_rwlock_lost_read_hold_is_reported(void **state)
{
    lost_record rec = LOST_RECORD_INIT;
    cr_rwlock *rw;
    cr_lock *r;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    r = cr_rwlock_read_lock(rw);
    assert_int_equal(cr_lock_set_lost_callback(r, on_lost, &rec), CR_OK);
    assert_int_equal(cr_lock_lock(r, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("DEL " NAME), 1);
    assert_true(cr_test_wait_until(lock_is_lost, r, slow(3000)));
    assert_true(cr_test_wait_until(lost_called, &rec, slow(3000)));
    assert_int_equal(lost_calls(&rec), 1);
    assert_int_equal(rec.tid, cr_thread_id());
    assert_int_equal(cr_lock_unlock(r), CR_ELOST);
    assert_int_equal(cr_lock_unlock(r), CR_ENOTOWNER);
    cr_rwlock_free(rw);
}

/* ---------------------------------------------------------------- wire */

static void
test_rwlock_wire_read_holds_have_mode_field_and_timeout_keys(void **state)
{
    cr_rwlock *rw;
    char mine[96], key[160], mode[16], v[8];
    long long t;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    owner_of(test_client, -1, mine);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(rw), -1, 10000), CR_OK);
    assert_int_equal(cr_lock_lock_tid(cr_rwlock_read_lock(rw), -1, 5000), CR_OK);
    assert_true(key_type_is(NAME, "hash"));
    assert_int_equal(redis_int("HLEN " NAME), 2);
    mode_of(mode, sizeof(mode));
    assert_string_equal(mode, "read");
    assert_int_equal(redis_int("HGET " NAME " %s", mine), 2);
    timeout_key(mine, 1, key, sizeof(key));
    assert_true(key_type_is(key, "string"));
    redis_str(v, sizeof(v), "GET %s", key);
    assert_string_equal(v, "1");
    t = redis_int("PTTL %s", key);
    assert_true(t > 5000 && t <= 10000);
    timeout_key(mine, 2, key, sizeof(key));
    t = redis_int("PTTL %s", key);
    assert_true(t > 0 && t <= 5000);
    /* The hash lives as long as the longest read lease. */
    assert_true(redis_int("PTTL " NAME) > 5000);
    assert_int_equal(count_keys("*"), 3);
    /* The newest hold's key goes first. */
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(rw), -1), CR_OK);
    assert_int_equal(redis_int("EXISTS %s", key), 0);
    assert_int_equal(redis_int("HGET " NAME " %s", mine), 1);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(rw), -1), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    cr_rwlock_free(rw);
}

static void
test_rwlock_wire_write_hold_field_and_reentry_adds_the_lease(void **state)
{
    long long ttl;
    cr_rwlock *rw;
    char writer[96], mode[16];
    cr_lock *w;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    w = cr_rwlock_write_lock(rw);
    assert_int_equal(cr_lock_lock(w, 10000), CR_OK);
    mode_of(mode, sizeof(mode));
    assert_string_equal(mode, "write");
    owner_of(test_client, cr_thread_id(), writer);
    strcat(writer, ":write");
    assert_int_equal(redis_int("HLEN " NAME), 2);
    assert_int_equal(redis_int("HGET " NAME " %s", writer), 1);
    ttl = redis_int("PTTL " NAME);
    assert_true(ttl > 0 && ttl <= 10000);
    /* Reentry: the new lease is added to what is left (Redisson's rule). */
    assert_int_equal(cr_lock_lock(w, 20000), CR_OK);
    assert_true(redis_int("PTTL " NAME) > 25000);
    assert_int_equal(redis_int("HGET " NAME " %s", writer), 2);
    assert_int_equal(count_keys("*"), 1);
    assert_int_equal(cr_lock_unlock(w), CR_OK);
    assert_int_equal(cr_lock_unlock(w), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    cr_rwlock_free(rw);
}

static void
test_rwlock_wire_read_unlock_recomputes_ttl_and_drops_dead_readers(void **state)
{
    const char *channels[1] = {CHANNEL};
    cr_test_listener *li;
    cr_rwlock *rw;
    char foreign_key[160];
    long long t;
    size_t n;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    li = cr_test_listener_start(&test_redis, channels, 1);
    assert_non_null(li);
    /* A Java reader whose hold has 20 s left. */
    timeout_key(FOREIGN_OWNER_1, 1, foreign_key, sizeof(foreign_key));
    assert_int_equal(redis_int("HSET " NAME " mode read %s 1", FOREIGN_OWNER_1), 2);
    assert_int_equal(redis_int("PEXPIRE " NAME " 20000"), 1);
    redis_int("SET %s 1 PX 20000", foreign_key);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), 5000), CR_OK);
    /* Joining keeps the longer ttl. */
    assert_true(redis_int("PTTL " NAME) > 15000);
    assert_int_equal(redis_int("PEXPIRE " NAME " 100000"), 1);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    /* The hash now lives as long as the remaining reader's key. */
    t = redis_int("PTTL " NAME);
    assert_true(t > 15000 && t <= 20000);
    assert_int_equal(redis_int("HLEN " NAME), 2);
    /* The Java reader died: its key is gone. The next reader to leave
     * removes the whole hash, its field included, and tells the waiters. */
    assert_int_equal(redis_int("DEL %s", foreign_key), 1);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), 5000), CR_OK);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    n = settle(li, CHANNEL, "marker");
    assert_int_equal(n, 1);
    assert_int_equal(count_messages(li, n, CHANNEL, "0"), 1);
    cr_test_listener_stop(li);
    cr_rwlock_free(rw);
}

static void
test_rwlock_wire_unlocks_publish_0_for_read_and_1_for_write_and_downgrade(void **state)
{
    static const char *expected[] = {"0", "1", "1", "0", "0", "1"};
    const char *channels[1] = {CHANNEL};
    cr_test_listener *li;
    cr_rwlock *rw;
    cr_lock *r, *w;
    size_t n, i;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    r = cr_rwlock_read_lock(rw);
    w = cr_rwlock_write_lock(rw);
    li = cr_test_listener_start(&test_redis, channels, 1);
    assert_non_null(li);
    assert_int_equal(cr_lock_lock(r, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(r), CR_OK);              /* 0 */
    assert_int_equal(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(w), CR_OK);              /* 1 */
    assert_int_equal(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(r, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(w), CR_OK);              /* 1: downgrade */
    assert_int_equal(cr_lock_unlock(r), CR_OK);              /* 0 */
    /* Unlocks of a lock that does not exist publish too (as Redisson)
     * but report that nothing was held. */
    assert_int_equal(cr_lock_unlock(r), CR_ENOTOWNER);       /* 0 */
    assert_int_equal(cr_lock_unlock(w), CR_ENOTOWNER);       /* 1 */
    n = settle(li, CHANNEL, "marker");
    assert_int_equal(n, 6);
    for (i = 0; i < n; i++)
        assert_string_equal(cr_test_listener_get(li, i)->payload, expected[i]);
    assert_true(cr_test_wait_until(no_latch_keys, NULL, slow(3000)));
    assert_int_equal(count_keys("*"), 0);
    cr_test_listener_stop(li);
    cr_rwlock_free(rw);
}

static void
test_rwlock_wire_force_unlock_and_delete_act_per_mode(void **state)
{
    const char *channels[1] = {CHANNEL};
    cr_test_listener *li;
    cr_rwlock *rw;
    cr_lock *r, *w;
    bool done = true;
    size_t n;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    r = cr_rwlock_read_lock(rw);
    w = cr_rwlock_write_lock(rw);
    li = cr_test_listener_start(&test_redis, channels, 1);
    assert_non_null(li);
    assert_int_equal(cr_lock_lock(r, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_force_unlock(w, &done), CR_OK);
    assert_false(done);
    assert_int_equal(cr_lock_delete(w, &done), CR_OK);
    assert_false(done);
    assert_int_equal(cr_lock_force_unlock(r, &done), CR_OK); /* 0 */
    assert_true(done);
    assert_int_equal(redis_int("EXISTS " NAME), 0);
    assert_int_equal(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_delete(r, &done), CR_OK);
    assert_false(done);
    assert_int_equal(cr_lock_delete(w, &done), CR_OK);        /* 1 */
    assert_true(done);
    /* RReadWriteLock.delete(): a plain DEL, whatever the mode, no message. */
    assert_int_equal(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_rwlock_delete(rw, &done), CR_OK);
    assert_true(done);
    assert_int_equal(cr_rwlock_delete(rw, &done), CR_OK);
    assert_false(done);
    assert_int_equal(cr_lock_unlock(w), CR_ENOTOWNER);        /* 1 */
    n = settle(li, CHANNEL, "marker");
    assert_int_equal(n, 3);
    assert_string_equal(cr_test_listener_get(li, 0)->payload, "0");
    assert_string_equal(cr_test_listener_get(li, 1)->payload, "1");
    assert_string_equal(cr_test_listener_get(li, 2)->payload, "1");
    cr_test_listener_stop(li);
    cr_rwlock_free(rw);
}

static void
test_rwlock_wire_java_write_unlock_message_wakes_every_c_reader(void **state)
{
    uint64_t before;
    char writer[128];
    cr_rwlock *rw;
    waiter w[3];
    int64_t published;
    int i;

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    snprintf(writer, sizeof(writer), "%s:write", FOREIGN_OWNER_1);
    assert_int_equal(redis_int("HSET " NAME " mode write %s 1", writer), 2);
    assert_int_equal(redis_int("PEXPIRE " NAME " 30000"), 1);
    before = commands_of(test_client);
    for (i = 0; i < 3; i++)
        waiter_start(&w[i], cr_rwlock_read_lock(rw), slow(10000), true);
    /* Each has found it write-locked: all three wait in the lock's line,
     * and the first of them also listens on its channel (a Java release
     * comes there alone; the others get their turns from the first). */
    await_commands(test_client, before + 3);
    await_waiters_in_line(NAME, 3);
    assert_true(cr_test_wait_until(has_subscriber, CHANNEL, slow(3000)));
    /* The Java write unlock, atomic as its script: one "1" for all. */
    published = cr_test_now_ms();
    assert_int_equal(redis_int("EVAL %s 2 %s %s", "redis.call('del', KEYS[1]); "
                               "return redis.call('publish', KEYS[2], '1')",
                               NAME, CHANNEL), 1);
    for (i = 0; i < 3; i++) {
        pthread_join(w[i].thread, NULL);
        assert_int_equal(w[i].rc, CR_OK);
        assert_true(w[i].acquired_mono - published < slow(1000));
    }
    assert_int_equal(count_keys("*"), 0);
    cr_rwlock_free(rw);
}

static void
test_rwlock_wire_renewal_renews_only_this_clients_readers(void **state)
{
    cr_rwlock *rw;
    char mine[96], my_key[160], foreign_key[160];

    (void)state;
    assert_int_equal(cr_rwlock_new(test_client, NAME, &rw), CR_OK);
    /* A Java reader whose process is gone: 600 ms left on its key. */
    timeout_key(FOREIGN_OWNER_1, 1, foreign_key, sizeof(foreign_key));
    assert_int_equal(redis_int("HSET " NAME " mode read %s 1", FOREIGN_OWNER_1), 2);
    redis_int("SET %s 1 PX 600", foreign_key);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG), CR_OK);
    owner_of(test_client, cr_thread_id(), mine);
    timeout_key(mine, 1, my_key, sizeof(my_key));
    assert_true(cr_test_wait_until(key_gone, foreign_key, slow(3000)));
    /* Ours is renewed, the hash too; the dead reader's field stays until
     * the next read unlock. */
    assert_true(redis_int("PTTL %s", my_key) > 0);
    assert_true(redis_int("PTTL " NAME) > 0);
    assert_int_equal(redis_int("HGET " NAME " %s", FOREIGN_OWNER_1), 1);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    cr_rwlock_free(rw);
}

static void
test_rwlock_wire_names_with_braces_use_the_name_as_key_prefix(void **state)
{
    const char *channels[1] = {"redisson_rwlock:app{7}rw"};
    cr_test_listener *li;
    cr_rwlock *rw;
    char mine[96], key[160];
    size_t n;

    (void)state;
    li = cr_test_listener_start(&test_redis, channels, 1);
    assert_non_null(li);
    assert_int_equal(cr_rwlock_new(test_client, "app{7}rw", &rw), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG), CR_OK);
    owner_of(test_client, cr_thread_id(), mine);
    snprintf(key, sizeof(key), "app{7}rw:%s:rwlock_timeout:1", mine);
    assert_int_equal(redis_int("EXISTS %s", key), 1);
    /* Renewals reach the key under this prefix too: it outlives its
     * 300 ms lease. */
    await_more_renewals(test_client, 4);
    assert_true(redis_int("PTTL %s", key) > 0);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    n = settle(li, channels[0], "marker");
    assert_int_equal(count_messages(li, n, channels[0], "0"), 1);
    cr_test_listener_stop(li);
    cr_rwlock_free(rw);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_rwlock_sides_are_borrowed_handles_owned_by_the_rwlock),
        T(test_rwlock_many_readers_hold_the_read_lock_at_once),
        T(test_rwlock_writers_exclude_readers_and_writers_and_keep_counter_exact),
        T(test_rwlock_writers_in_other_processes_keep_counter_exact),
        T(test_rwlock_writer_gets_the_lock_when_the_last_reader_leaves),
        T(test_rwlock_crashed_sole_reader_frees_the_lock_after_its_lease),
        T(test_rwlock_crashed_reader_stops_blocking_writers_once_its_timeout_key_expires),
        T(test_rwlock_downgrade_keeps_a_read_hold_and_wakes_other_readers),
        T(test_rwlock_read_to_write_upgrade_fails_at_once_with_edeadlk),
        T(test_rwlock_watchdog_renews_readers_across_several_periods),
        T(test_rwlock_watchdog_renews_mixed_holds_in_batches_of_one_hash),
        T(test_rwlock_write_renewal_survives_a_read_unlock_of_the_same_thread),
        T(test_rwlock_lost_read_hold_is_reported),
        T(test_rwlock_wire_read_holds_have_mode_field_and_timeout_keys),
        T(test_rwlock_wire_write_hold_field_and_reentry_adds_the_lease),
        T(test_rwlock_wire_read_unlock_recomputes_ttl_and_drops_dead_readers),
        T(test_rwlock_wire_unlocks_publish_0_for_read_and_1_for_write_and_downgrade),
        T(test_rwlock_wire_force_unlock_and_delete_act_per_mode),
        T(test_rwlock_wire_java_write_unlock_message_wakes_every_c_reader),
        T(test_rwlock_wire_renewal_renews_only_this_clients_readers),
        T(test_rwlock_wire_names_with_braces_use_the_name_as_key_prefix),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
