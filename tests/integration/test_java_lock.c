/* SPDX-License-Identifier: MIT */
/*
 * The locks against the real Java Redisson client (4.7, built from its
 * sources by tests/java/redisson.sh; tests/java/README): RLock, the fair
 * lock and the read/write lock shared by C and Java processes and threads,
 * both ways round.
 *
 * Bounds, each holding on a loaded two-core machine:
 * - exclusion: an exact non-atomic counter (GET, then SET plus one, under
 *   the lock) over C processes, C threads, the asynchronous API, two JVMs
 *   and two threads of one JVM; it fails at the first overlap that loses
 *   an increment, whatever the timing. On the RLock and the read/write
 *   lock (writers and readers) they all run at once for a while
 *   (java_mix.h), credisson's in its waiting line: no overlap, and no
 *   waiter of either side waits as long as a lost wake-up would make it
 *   (MIX_LIVE_MS); each side's longest wait in fair shares is printed.
 * - wake-ups: a waiter on either side gets the lock within WAKE_BOUND_MS
 *   of the release that woke it (the release's end as its side stamped it,
 *   the acquisition as the waiter's side did; one host, one wall clock).
 *   Holders take a lease of JAVA_LONG_LEASE_MS (30 s), and a waiter's
 *   fallback is that lease's expiry (its ttl hint), so only the release
 *   message can wake it that soon (a Java release reaches a credisson
 *   waiter on the object's own channel, where the first in its waiting
 *   line listens after a moment: the release comes once it does). A
 *   credisson waiter wakes within a few ms and Redisson's within 5-25 ms
 *   on an idle machine; the bound leaves the rest for a loaded one.
 * - the fair lock: waiters of both sides are granted in the order they
 *   joined the queue, a Java waiter that gives up leaves it, and a C
 *   waiter that dies holds the others up no longer than its deadline in
 *   the queue (plus JAVA_RETRY_BOUND_MS for the others' retries).
 * - the watchdog: a C and a Java hold of one read lock, both renewed, stay
 *   for WATCHDOG_PERIODS times the watchdog timeout (1.5 s), far past what
 *   either lease alone would last.
 * - forceUnlock: a Java forceUnlock is seen by the C holder as a lost
 *   lease within one renewal period (a third of the watchdog timeout) plus
 *   WAKE_BOUND_MS, and C's force-unlock wakes Java waiters within
 *   WAKE_BOUND_MS.
 * Under valgrind and the sanitizers the program skips (the JVM is not
 * what they check); without a JDK or the jars it skips saying why.
 */
#include <pthread.h>

#include "lock_common.h"
#include "java_common.h"
#include "java_mix.h"

#define OK(call) assert_int_equal((call), CR_OK)

#define WAKE_BOUND_MS 250
#define COUNT_EACH 10

/* ------------------------------------------------------------- helpers */

/* A lock of `kind` ("lock", "fair", "write", "read") on test_client named
 * `name`; a read/write lock's owner goes to *rw. */
static cr_lock *
c_lock(const char *kind, const char *name, cr_rwlock **rw)
{
    cr_lock *l = NULL;

    *rw = NULL;
    if (strcmp(kind, "lock") == 0) {
        OK(cr_lock_new(test_client, name, &l));
    } else if (strcmp(kind, "fair") == 0) {
        OK(cr_fair_lock_new(test_client, name, &l));
    } else {
        OK(cr_rwlock_new(test_client, name, rw));
        l = strcmp(kind, "read") == 0 ? cr_rwlock_read_lock(*rw)
                                      : cr_rwlock_write_lock(*rw);
    }
    return l;
}

static void
c_lock_free(cr_lock *l, cr_rwlock *rw)
{
    if (rw != NULL)
        cr_rwlock_free(rw);
    else
        cr_lock_free(l);
}

/* One counter over every kind of participant on lock `kind` named `name`:
 * two C processes, two C threads (one client), two asynchronous owners,
 * two threads of the first JVM and one of the second; asserts the counter
 * is exact. */
static void
count_everywhere(const char *kind, const char *name)
{
    char n[16];
    const char *wargs[] = {"count", test_redis.url, worker_version(), kind,
                           name, n, "counter", NULL};
    cr_rwlock *rw;
    cr_lock *l = c_lock(kind, name, &rw);
    count_job jobs[2];
    async_counter ac;
    pid_t procs[2];
    int tags[3], i;
    long long total = 0;

    snprintf(n, sizeof(n), "%d", COUNT_EACH);
    tags[0] = cr_test_java_send(jpeer[0], "a", "count %s %s counter %d 1",
                                kind, name, COUNT_EACH);
    tags[1] = cr_test_java_send(jpeer[0], "b", "count %s %s counter %d 1",
                                kind, name, COUNT_EACH);
    tags[2] = cr_test_java_send(jpeer[1], "a", "count %s %s counter %d 1",
                                kind, name, COUNT_EACH);
    for (i = 0; i < 2; i++)
        procs[i] = spawn_worker(wargs);
    for (i = 0; i < 2; i++) {
        jobs[i] = (count_job){.lock = l, .key = "counter", .n = COUNT_EACH};
        assert_int_equal(pthread_create(&jobs[i].thread, NULL, count_thread,
                                        &jobs[i]), 0);
    }
    async_counter_start(&ac, l, "counter", 2, COUNT_EACH);
    for (i = 0; i < 2; i++) {
        pthread_join(jobs[i].thread, NULL);
        OK(jobs[i].rc);
    }
    OK(async_counter_join(&ac));
    for (i = 0; i < 2; i++)
        assert_int_equal(reap_worker(procs[i], slow(60000)), 0);
    java_wait_ok(jpeer[0], tags[0], 60000);
    java_wait_ok(jpeer[0], tags[1], 60000);
    java_wait_ok(jpeer[1], tags[2], 60000);
    total = redis_int("GET counter");
    assert_int_equal(total, 9 * COUNT_EACH);
    assert_int_equal(redis_int("EXISTS %s", name), 0);
    c_lock_free(l, rw);
}


/* A Java hold of lock `jkind` released while a C thread waits for
 * `ckind` on the same name: the C thread has it within WAKE_BOUND_MS. */
static void
java_release_wakes_c(const char *jkind, const char *ckind, const char *name)
{
    cr_rwlock *rw;
    cr_lock *l = c_lock(ckind, name, &rw);
    const char *a;
    taker t;
    int64_t released;

    a = JAVA_OK(jpeer[0], "h", 5000, "lock %s %s 0 %d", jkind, name,
                JAVA_LONG_LEASE_MS);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    await_no_listener(ckind, name);
    take_start(&t, l, slow(10000), 0);
    if (!c_lock_waiter_listens(ckind, name)) {
        pthread_join(t.thread, NULL); /* before the teardown frees it all */
        fail_msg("the C waiter for %s %s never listened", ckind, name);
    }
    a = JAVA_OK(jpeer[0], "h", 5000, "unlock %s %s", jkind, name);
    released = cr_test_java_num(a, "t");
    pthread_join(t.thread, NULL);
    OK(t.rc);
    fprintf(stderr, "# %s released by Java, %s taken by C %lld ms later\n",
            jkind, ckind, (long long)(t.at - released));
    assert_true(t.at - released <= WAKE_BOUND_MS);
    c_lock_free(l, rw);
}


/* A C hold of `ckind` released while a Java thread waits for `jkind` on
 * the same name: the Java thread has it within WAKE_BOUND_MS. The release
 * comes once the Java waiter sleeps: Redisson wakes a read/write lock's
 * waiters on message 1 (a write unlock's) only if they sleep at that
 * instant, and one between its attempt and its sleep misses it (Java's
 * quirk, doc/safety.md), whichever side released. */
static void
c_release_wakes_java(const char *ckind, const char *jkind, const char *name)
{
    cr_rwlock *rw;
    cr_lock *l = c_lock(ckind, name, &rw);
    const char *a;
    int64_t released;
    int tag;

    OK(cr_lock_try_lock(l, 0, JAVA_LONG_LEASE_MS));
    tag = cr_test_java_send(jpeer[0], "w", "take %s %s 10000 -1 0", jkind,
                            name);
    await_listener(jkind, name);
    assert_true(cr_test_wait_until(java_actor_sleeps, "w", slow(10000)));
    OK(cr_lock_unlock(l));
    released = cr_test_java_epoch_ms();
    a = java_wait_ok(jpeer[0], tag, 15000);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    fprintf(stderr, "# %s released by C, %s taken by Java %lld ms later\n",
            ckind, jkind, cr_test_java_num(a, "at") - (long long)released);
    assert_true(cr_test_java_num(a, "at") - released <= WAKE_BOUND_MS);
    c_lock_free(l, rw);
}

/* --------------------------------------------------------------- tests */

static void
test_java_rlock_mixed_waiters_count_exactly_and_none_waits_past_the_bound(
    void **state)
{
    mix_object o = {.kind = "lock", .name = "xlock"};

    (void)state;
    mix_run(&o);
}

static void
test_java_fair_lock_counter_is_exact_across_c_and_java(void **state)
{
    (void)state;
    count_everywhere("fair", "xfair");
}

static void
test_java_rwlock_mixed_writers_and_readers_never_overlap_and_none_waits_past_the_bound(
    void **state)
{
    mix_object o = {.kind = "rw", .name = "xrw"};

    (void)state;
    mix_run(&o);
}


static void
test_java_rlock_release_wakes_the_other_side_within_the_bound(void **state)
{
    (void)state;
    java_release_wakes_c("lock", "lock", "wlock");
    c_release_wakes_java("lock", "lock", "wlock");
}

/* A thread's wait for lock `lock` as thread id `tid` (so that waits of
 * several threads are one waiter's, with one channel): it takes it,
 * notes when, and gives it back. */
typedef struct tid_taker {
    cr_lock *lock;
    int64_t tid, at;
    cr_status rc;
    pthread_t thread;
} tid_taker;

static void *
tid_take_run(void *arg)
{
    tid_taker *t = arg;

    t->rc = cr_lock_try_lock_tid(t->lock, t->tid, slow(15000),
                                 JAVA_LONG_LEASE_MS);
    t->at = cr_test_java_epoch_ms();
    if (t->rc == CR_OK && cr_lock_unlock_tid(t->lock, t->tid) != CR_OK)
        t->rc = CR_ENOTOWNER;
    return NULL;
}

/* A C waiter that comes back into the line at once, its own channel's
 * subscription still in place from its last wait and quiet since, is the
 * first the lock cannot serve: it takes the listening rules of any such
 * waiter, and a Java release reaches it within WAKE_BOUND_MS (it had
 * slept until its hint, the Java lease, at most a third of its waiting
 * lease: 10 s with the default watchdog timeout of mix_client). Each round
 * is one wait of the same waiter; the next comes well within the
 * subscription's linger (250 ms) on an idle machine. */
static void
test_java_c_waiter_back_in_line_at_once_hears_a_java_release(void **state)
{
    cr_client *c = mix_client();
    line_of in_line = {"again", 1};
    tid_taker t = {.tid = 4242};
    const char *a;
    int64_t released;
    int round;

    (void)state;
    assert_non_null(c);
    OK(cr_lock_new(c, "again", &t.lock));
    for (round = 0; round < 3; round++) {
        a = JAVA_OK(jpeer[0], "h", 5000, "lock lock again 0 %d",
                    JAVA_LONG_LEASE_MS);
        assert_int_equal(cr_test_java_num(a, "got"), 1);
        assert_int_equal(pthread_create(&t.thread, NULL, tid_take_run, &t),
                         0);
        if (!cr_test_wait_until(line_reaches, &in_line, slow(5000))) {
            pthread_join(t.thread, NULL); /* before the teardown frees it */
            fail_msg("the C waiter never stood in line");
        }
        a = JAVA_OK(jpeer[0], "h", 5000, "unlock lock again");
        released = cr_test_java_num(a, "t");
        pthread_join(t.thread, NULL);
        OK(t.rc);
        fprintf(stderr, "# round %d: released by Java, taken by C %lld ms "
                "later\n", round, (long long)(t.at - released));
        assert_true(t.at - released <= WAKE_BOUND_MS);
    }
    cr_lock_free(t.lock);
    cr_client_free(c);
}

static void
test_java_fair_lock_release_wakes_the_other_sides_head_within_the_bound(
    void **state)
{
    (void)state;
    java_release_wakes_c("fair", "fair", "wfair");
    c_release_wakes_java("fair", "fair", "wfair");
}

static void
test_java_rwlock_release_wakes_the_other_side_within_the_bound(void **state)
{
    (void)state;
    java_release_wakes_c("write", "read", "wrw1");
    java_release_wakes_c("read", "write", "wrw2");
    c_release_wakes_java("write", "read", "wrw3");
    c_release_wakes_java("read", "write", "wrw4");
    c_release_wakes_java("write", "write", "wrw5");
}


static void
await_queue(long long length)
{
    await_queue_of("fifo", length);
}

/* How long the others may take to retry once a dead waiter's deadline
 * passed: Java's head-less waiters retry on a 0 hint at once, C's
 * within 100 ms; the rest is for a loaded machine. */
#define JAVA_RETRY_BOUND_MS 1000

static void
test_java_fair_lock_grants_in_queue_order_past_a_java_give_up_and_a_dead_c_waiter(
    void **state)
{
    char dead[128], wait_ms[16];
    const char *wargs[] = {"fair-wait", test_redis.url, worker_version(),
                           "fifo", wait_ms, NULL};
    cr_lock *holder = NULL, *l1 = NULL, *l2 = NULL;
    taker t1, t2;
    redisReply *q;
    int w1, w2, w3;
    long long at1, at3;
    pid_t d;

    (void)state;
    snprintf(wait_ms, sizeof(wait_ms), "%d", JAVA_FAIR_WAIT_MS);
    OK(cr_fair_lock_new(test_client, "fifo", &holder));
    OK(cr_fair_lock_new(test_client, "fifo", &l1));
    OK(cr_fair_lock_new(test_client, "fifo", &l2));
    OK(cr_lock_try_lock(holder, 0, CR_LEASE_WATCHDOG));
    /* The queue, in joining order: a Java waiter, a C thread, a Java
     * waiter that gives up after 800 ms, a C process that dies, a waiter
     * of the second JVM, a C thread. Each joins once the one before is
     * in. */
    w1 = cr_test_java_send(jpeer[0], "w1", "take fair fifo -1 -1 100");
    await_queue(1);
    take_start(&t1, l1, slow(60000), 100);
    t1.probe_key = "redisson_lock_timeout:{fifo}";
    await_queue(2);
    w2 = cr_test_java_send(jpeer[0], "w2", "take fair fifo 800 -1 100");
    await_queue(3);
    d = spawn_worker(wargs);
    await_queue(4);
    q = cr_test_redis_cmd(&test_redis, "LINDEX redisson_lock_queue:{fifo} 3");
    assert_non_null(q);
    assert_int_equal(q->type, REDIS_REPLY_STRING);
    snprintf(dead, sizeof(dead), "%s", q->str);
    freeReplyObject(q);
    snprintf(t1.probe, sizeof(t1.probe), "%s", dead);
    w3 = cr_test_java_send(jpeer[1], "w3", "take fair fifo -1 -1 100");
    await_queue(5);
    take_start(&t2, l2, slow(60000), 100);
    await_queue(6);
    kill(d, SIGKILL);
    assert_int_equal(reap_worker(d, slow(5000)), -1);
    /* The Java waiter that gave up left the queue (Redisson 4.7). */
    assert_int_equal(cr_test_java_num(java_wait_ok(jpeer[0], w2, 5000), "got"),
                     0);
    await_queue(5);
    OK(cr_lock_unlock(holder));
    at1 = cr_test_java_num(java_wait_ok(jpeer[0], w1, 30000), "at");
    at3 = cr_test_java_num(java_wait_ok(jpeer[1], w3, 30000), "at");
    pthread_join(t1.thread, NULL);
    pthread_join(t2.thread, NULL);
    OK(t1.rc);
    OK(t2.rc);
    assert_true(at1 < t1.at);
    assert_true(t1.at < at3);
    assert_true(at3 < t2.at);
    /* The dead waiter held the queue up until its deadline at most. */
    fprintf(stderr, "# the dead C waiter's deadline was %lld ms after the "
            "C thread ahead of it got the lock; the Java waiter behind it "
            "got it %lld ms after that deadline\n",
            t1.probed - (long long)t1.at, at3 - t1.probed);
    assert_true(t1.probed > 0);
    assert_true(at3 <= (t1.probed > t1.at + 100 ? t1.probed : t1.at + 100) +
                           JAVA_RETRY_BOUND_MS);
    assert_int_equal(redis_int("EXISTS redisson_lock_queue:{fifo} "
                               "redisson_lock_timeout:{fifo} fifo"), 0);
    cr_lock_free(holder);
    cr_lock_free(l1);
    cr_lock_free(l2);
}



#define WATCHDOG_PERIODS 3

static void
test_java_c_and_java_holds_renewed_side_by_side_for_several_periods(
    void **state)
{
    char owner[128];
    cr_rwlock *rw = NULL;
    cr_lock *mine = NULL;
    long long tid = java_tid(jpeer[0], "r");
    const char *a;
    int64_t until;

    (void)state;
    /* One read lock held by a C thread and a Java thread, both with the
     * watchdog; and an RLock each. */
    OK(cr_rwlock_new(test_client, "dogrw", &rw));
    OK(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG));
    a = JAVA_OK(jpeer[0], "r", 5000, "lock read dogrw 0 -1");
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    OK(cr_lock_new(test_client, "dogc", &mine));
    OK(cr_lock_lock(mine, CR_LEASE_WATCHDOG));
    a = JAVA_OK(jpeer[0], "r", 5000, "lock lock dogj 0 -1");
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    until = cr_test_now_ms() + WATCHDOG_PERIODS * JAVA_WATCHDOG_MS;
    while (cr_test_now_ms() < until) {
        /* Each lease alone lasts one watchdog timeout; they stay. */
        assert_true(redis_int("PTTL dogrw") > 0);
        assert_true(redis_int("PTTL dogc") > 0);
        assert_true(redis_int("PTTL dogj") > 0);
        assert_int_equal(redis_int("HLEN dogrw"), 3); /* mode + 2 readers */
        usleep(100000);
    }
    snprintf(owner, sizeof(owner), "{dogrw}:%s:%lld:rwlock_timeout:1",
             cr_test_java_id(jpeer[0]), tid);
    assert_true(redis_int("PTTL %s", owner) > 0);
    OK(cr_lock_unlock(cr_rwlock_read_lock(rw)));
    JAVA_OK(jpeer[0], "r", 5000, "unlock read dogrw");
    OK(cr_lock_unlock(mine));
    JAVA_OK(jpeer[0], "r", 5000, "unlock lock dogj");
    assert_int_equal(redis_int("EXISTS dogrw dogc dogj"), 0);
    cr_lock_free(mine);
    cr_rwlock_free(rw);
}

static void
test_java_force_unlock_is_a_lost_lease_for_the_c_holder(void **state)
{
    lost_record lost = LOST_RECORD_INIT;
    cr_lock *l = NULL;
    const char *a;
    int64_t forced;

    (void)state;
    OK(cr_lock_new(test_client, "forced", &l));
    OK(cr_lock_set_lost_callback(l, on_lost, &lost));
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    a = JAVA_OK(jpeer[0], "f", 5000, "force lock forced");
    assert_int_equal(cr_test_java_num(a, "r"), 1);
    forced = cr_test_now_ms();
    /* The next renewal (a third of the watchdog timeout away at most)
     * finds it gone; the rest of the bound is for a loaded machine. */
    assert_true(cr_test_wait_until(lost_called, &lost, slow(JAVA_WATCHDOG_MS)));
    fprintf(stderr, "# C learned of the Java forceUnlock in %lld ms\n",
            (long long)(cr_test_now_ms() - forced));
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    cr_lock_free(l);
}

/* A Java holder of `kind` "forcing", a Java waiter that sleeps for it, a
 * C force-unlock: the waiter has it within WAKE_BOUND_MS. */
static void
c_force_wakes_java(const char *kind)
{
    cr_rwlock *rw;
    cr_lock *l = c_lock(kind, "forcing", &rw);
    bool unlocked = false;
    const char *a;
    int64_t forced;
    int tag;

    a = JAVA_OK(jpeer[0], "h", 5000, "lock %s forcing 0 %d", kind,
                JAVA_LONG_LEASE_MS);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    tag = cr_test_java_send(jpeer[0], "w", "take %s forcing 10000 -1 0", kind);
    await_listener(kind, "forcing");
    assert_true(cr_test_wait_until(java_actor_sleeps, "w", slow(10000)));
    OK(cr_lock_force_unlock(l, &unlocked));
    forced = cr_test_java_epoch_ms();
    assert_true(unlocked);
    a = java_wait_ok(jpeer[0], tag, 15000);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    fprintf(stderr, "# %s forced open by C, taken by Java %lld ms later\n",
            kind, cr_test_java_num(a, "at") - (long long)forced);
    assert_true(cr_test_java_num(a, "at") - forced <= WAKE_BOUND_MS);
    c_lock_free(l, rw);
}

static void
test_java_c_force_unlock_wakes_java_waiters(void **state)
{
    (void)state;
    c_force_wakes_java("lock");
    assert_true(redis_ok("FLUSHALL"));
    c_force_wakes_java("fair");
}

/* The owner name of peer p's actor. */
static void
java_owner(cr_test_java *p, const char *actor, char *out, size_t size)
{
    snprintf(out, size, "%s:%lld", cr_test_java_id(p), java_tid(p, actor));
}

static void
test_java_inspect_reads_locks_java_holds_and_waits_for(void **state)
{
    char holder[128], waiter[128], reader[128];
    cr_object_info *info = NULL;
    int tag;

    (void)state;
    java_owner(jpeer[0], "h", holder, sizeof(holder));
    java_owner(jpeer[0], "w", waiter, sizeof(waiter));
    java_owner(jpeer[1], "r", reader, sizeof(reader));
    /* An RLock held twice by one Java thread. */
    JAVA_OK(jpeer[0], "h", 5000, "lock lock seen -1 %d", JAVA_LONG_LEASE_MS);
    JAVA_OK(jpeer[0], "h", 5000, "lock lock seen -1 %d", JAVA_LONG_LEASE_MS);
    OK(cr_object_inspect(test_client, "seen", &info));
    assert_int_equal(info->kind, CR_OBJECT_LOCK);
    assert_int_equal(info->nholders, 1);
    assert_string_equal(info->holders[0].who.owner, holder);
    assert_int_equal(info->holders[0].count, 2);
    assert_true(info->holders[0].ttl_ms > JAVA_LONG_LEASE_MS - 5000);
    cr_object_info_free(info);
    /* A fair lock held by one Java thread, another waiting in its queue. */
    JAVA_OK(jpeer[0], "h", 5000, "lock fair seenq -1 %d", JAVA_LONG_LEASE_MS);
    tag = cr_test_java_send(jpeer[0], "w", "take fair seenq 20000 -1 0");
    await_queue_of("seenq", 1);
    OK(cr_object_inspect(test_client, "seenq", &info));
    assert_int_equal(info->kind, CR_OBJECT_FAIR_LOCK);
    assert_string_equal(info->holders[0].who.owner, holder);
    assert_int_equal(info->queue_length, 1);
    assert_int_equal(info->nqueue, 1);
    assert_string_equal(info->queue[0].who.owner, waiter);
    assert_true(info->queue[0].has_deadline);
    assert_true(info->queue[0].deadline_ms > info->now_ms);
    cr_object_info_free(info);
    JAVA_OK(jpeer[0], "h", 5000, "unlock fair seenq");
    java_wait_ok(jpeer[0], tag, 10000);
    /* A read/write lock read by two JVMs. */
    JAVA_OK(jpeer[0], "h", 5000, "lock read seenrw -1 -1");
    JAVA_OK(jpeer[1], "r", 5000, "lock read seenrw -1 -1");
    OK(cr_object_inspect(test_client, "seenrw", &info));
    assert_int_equal(info->kind, CR_OBJECT_RWLOCK);
    assert_string_equal(info->mode, "read");
    assert_int_equal(info->nholders, 2);
    assert_true((strcmp(info->holders[0].who.owner, holder) == 0 &&
                 strcmp(info->holders[1].who.owner, reader) == 0) ||
                (strcmp(info->holders[1].who.owner, holder) == 0 &&
                 strcmp(info->holders[0].who.owner, reader) == 0));
    assert_false(info->holders[0].writer);
    cr_object_info_free(info);
    JAVA_OK(jpeer[0], "h", 5000, "unlock read seenrw");
    JAVA_OK(jpeer[1], "r", 5000, "unlock read seenrw");
    JAVA_OK(jpeer[0], "h", 5000, "force lock seen");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, cross_up, client_down)
        T(test_java_rlock_mixed_waiters_count_exactly_and_none_waits_past_the_bound),
        T(test_java_fair_lock_counter_is_exact_across_c_and_java),
        T(test_java_rwlock_mixed_writers_and_readers_never_overlap_and_none_waits_past_the_bound),
        T(test_java_rlock_release_wakes_the_other_side_within_the_bound),
        T(test_java_c_waiter_back_in_line_at_once_hears_a_java_release),
        T(test_java_fair_lock_release_wakes_the_other_sides_head_within_the_bound),
        T(test_java_rwlock_release_wakes_the_other_side_within_the_bound),
        T(test_java_fair_lock_grants_in_queue_order_past_a_java_give_up_and_a_dead_c_waiter),
        T(test_java_c_and_java_holds_renewed_side_by_side_for_several_periods),
        T(test_java_force_unlock_is_a_lost_lease_for_the_c_holder),
        T(test_java_c_force_unlock_wakes_java_waiters),
        T(test_java_inspect_reads_locks_java_holds_and_waits_for),
#undef T
    };

    if (java_up_n("test_java_lock", NULL, 2) != 0) {
        java_down(NULL);
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, java_down);
}
