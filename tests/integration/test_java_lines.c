/* SPDX-License-Identifier: MIT */
/*
 * The release lines against the real Java Redisson client: for each line
 * the shared recipe holds besides 4.7 (3.13.2, 3.16.4, 3.22.0, 3.23.3,
 * 3.37.0, 4.3.1; tests/java/README says how each builds), the client of
 * that line (tests/java/redisson.sh) runs beside credisson with
 * redisson_version set to it, on the objects whose wire differs between
 * lines (doc/porting.md, "Redisson release lines"):
 * - RLock (no unlock latch before 3.24): an exact counter over a C
 *   process, a C thread and two Java threads, and wake-ups both ways
 *   within WAKE_BOUND_MS (30 s leases, as in test_java_lock);
 * - the fair lock (a default wait of 5 s before 3.13.3, 300 s since): C
 *   and Java waiters that wait without limit take the same place in the
 *   timeout queue, a waiter's deadline the one before it plus the line's
 *   default, and are granted in the order they joined;
 * - the expirable semaphore (ids as hex text before 3.17, 16 raw bytes
 *   since; acquire(n) one id before 3.23.4, n since): ids issued by either
 *   side are released by the other, stored in the line's form;
 * - the rate limiter (refused before 3.21; no keep-alive before 3.38): a
 *   budget shared by C and Java keeps the rate in every window of the
 *   recorded grant times;
 * - the read/write lock: C and Java readers share it, a writer of either
 *   side waits for both and wakes within WAKE_BOUND_MS. (What differs
 *   before 4.4, Java readers renewing every reader's timeout key, shows
 *   only with a crashed reader over a whole lease; not run here.)
 * A line that does not build fails the program: it is never skipped.
 * Under valgrind and the sanitizers, or without a JDK or the jars, the
 * program skips saying why.
 */
#include <pthread.h>

#include "lock_common.h"
#include "java_common.h"

#define OK(call) assert_int_equal((call), CR_OK)
#define SLOT (CR_PERMIT_ID_LEN + 1)

#define WAKE_BOUND_MS 250
#define COUNT_EACH 10

/* Whether line jline is before release `v` ("3.23.4"). */
static bool
line_before(const char *v)
{
    int a[3] = {0, 0, 0}, b[3] = {0, 0, 0}, i;

    sscanf(jline, "%d.%d.%d", &a[0], &a[1], &a[2]);
    sscanf(v, "%d.%d.%d", &b[0], &b[1], &b[2]);
    for (i = 0; i < 3; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return false;
}

/* ---------------------------------------------------------------- RLock */

static void
test_line_rlock_counter_is_exact_and_releases_wake_both_ways(void **state)
{
    char n[16];
    const char *wargs[] = {"count", test_redis.url, jline, "lock", "lk", n,
                           "counter", NULL};
    cr_lock *l = NULL;
    count_job job;
    taker t;
    const char *a;
    int64_t released;
    int tags[2], tag;
    pid_t proc;

    (void)state;
    snprintf(n, sizeof(n), "%d", COUNT_EACH);
    OK(cr_lock_new(test_client, "lk", &l));
    tags[0] = cr_test_java_send(jpeer[0], "a", "count lock lk counter %d 1",
                                COUNT_EACH);
    tags[1] = cr_test_java_send(jpeer[0], "b", "count lock lk counter %d 1",
                                COUNT_EACH);
    proc = spawn_worker(wargs);
    job = (count_job){.lock = l, .key = "counter", .n = COUNT_EACH};
    assert_int_equal(pthread_create(&job.thread, NULL, count_thread, &job), 0);
    pthread_join(job.thread, NULL);
    OK(job.rc);
    assert_int_equal(reap_worker(proc, slow(60000)), 0);
    java_wait_ok(jpeer[0], tags[0], 60000);
    java_wait_ok(jpeer[0], tags[1], 60000);
    assert_int_equal(redis_int("GET counter"), 4 * COUNT_EACH);
    /* C releases, a sleeping Java waiter takes it. */
    OK(cr_lock_try_lock(l, 0, JAVA_LONG_LEASE_MS));
    tag = cr_test_java_send(jpeer[0], "w", "take lock lk 10000 -1 0");
    assert_true(cr_test_wait_until(java_actor_sleeps, "w", slow(10000)));
    OK(cr_lock_unlock(l));
    released = cr_test_java_epoch_ms();
    a = java_wait_ok(jpeer[0], tag, 15000);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    assert_true(cr_test_java_num(a, "at") - released <= WAKE_BOUND_MS);
    /* Java releases, a waiting C thread takes it. */
    a = JAVA_OK(jpeer[0], "h", 5000, "lock lock lk 0 %d", JAVA_LONG_LEASE_MS);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    await_no_listener("lock", "lk");
    take_start(&t, l, slow(10000), 0);
    if (!c_lock_waiter_listens("lock", "lk")) {
        pthread_join(t.thread, NULL); /* before the teardown frees it all */
        fail_msg("the C waiter for lock lk never listened");
    }
    a = JAVA_OK(jpeer[0], "h", 5000, "unlock lock lk");
    released = cr_test_java_num(a, "t");
    pthread_join(t.thread, NULL);
    OK(t.rc);
    fprintf(stderr, "# %s: lock released by Java, taken by C %lld ms later\n",
            jline, (long long)(t.at - released));
    assert_true(t.at - released <= WAKE_BOUND_MS);
    cr_lock_free(l);
}

/* ------------------------------------------------------------ fair lock */

/* The score of the waiter at `index` of fair lock `name`'s queue. */
static long long
deadline_at(const char *name, int index)
{
    redisReply *r = cr_test_redis_cmd(&test_redis,
                                      "LINDEX redisson_lock_queue:{%s} %d",
                                      name, index);
    long long v;

    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    v = redis_int("ZSCORE redisson_lock_timeout:{%s} %s", name, r->str);
    freeReplyObject(r);
    return v;
}

/* A C thread waiting for a fair lock without limit; when it got it. */
typedef struct fair_waiter {
    cr_lock *lock;
    cr_status rc;
    int64_t at;
    pthread_t thread;
} fair_waiter;

static void *
fair_wait_run(void *arg)
{
    fair_waiter *w = arg;

    w->rc = cr_lock_lock(w->lock, CR_LEASE_WATCHDOG);
    w->at = cr_test_java_epoch_ms();
    if (w->rc == CR_OK) {
        usleep(50000);
        if (cr_lock_unlock(w->lock) != CR_OK)
            w->rc = CR_ENOTOWNER;
    }
    return NULL;
}

static void
test_line_fair_lock_waiters_of_both_sides_take_the_lines_deadlines_in_order(
    void **state)
{
    int64_t wait = line_before("3.13.3") ? 5000 : 300000;
    cr_lock *holder = NULL, *l = NULL;
    fair_waiter c1;
    long long d0, d1, d2;
    int j1, j2;

    (void)state;
    OK(cr_fair_lock_new(test_client, "fq", &holder));
    OK(cr_fair_lock_new(test_client, "fq", &l));
    OK(cr_lock_try_lock(holder, 0, JAVA_LONG_LEASE_MS));
    j1 = cr_test_java_send(jpeer[0], "w1", "take fair fq -1 -1 50");
    await_queue_of("fq", 1);
    memset(&c1, 0, sizeof(c1));
    c1.lock = l;
    assert_int_equal(pthread_create(&c1.thread, NULL, fair_wait_run, &c1), 0);
    await_queue_of("fq", 2);
    j2 = cr_test_java_send(jpeer[0], "w2", "take fair fq -1 -1 50");
    await_queue_of("fq", 3);
    /* Each waiter's deadline is the one before it plus the line's
     * default wait, whichever side computed it. */
    d0 = deadline_at("fq", 0);
    d1 = deadline_at("fq", 1);
    d2 = deadline_at("fq", 2);
    fprintf(stderr, "# %s: deadlines %lld, +%lld (C), +%lld (Java)\n", jline,
            d0, d1 - d0, d2 - d1);
    assert_int_equal(d1 - d0, wait);
    assert_int_equal(d2 - d1, wait);
    OK(cr_lock_unlock(holder));
    {
        long long at1 = cr_test_java_num(java_wait_ok(jpeer[0], j1, 15000),
                                         "at");
        long long at2 = cr_test_java_num(java_wait_ok(jpeer[0], j2, 15000),
                                         "at");

        pthread_join(c1.thread, NULL);
        OK(c1.rc);
        assert_true(at1 < c1.at);
        assert_true(c1.at < at2);
    }
    assert_int_equal(redis_int("EXISTS redisson_lock_queue:{fq} "
                               "redisson_lock_timeout:{fq} fq"), 0);
    cr_lock_free(holder);
    cr_lock_free(l);
}

/* -------------------------------------------------- expirable semaphore */

/* Whether `id` (32 hex characters) is stored in `name`'s permits in the
 * line's form: the text before 3.17, the 16 bytes it encodes since. */
static bool
stored_in_line_form(const char *name, const char *id)
{
    unsigned char raw[16];
    int i;

    if (line_before("3.17.0"))
        return redis_int("ZSCORE {%s}:timeout %s", name, id) != -999;
    for (i = 0; i < 16; i++) {
        unsigned v;

        sscanf(id + 2 * i, "%2x", &v);
        raw[i] = (unsigned char)v;
    }
    return redis_int("ZSCORE {%s}:timeout %b", name, raw, (size_t)16) != -999;
}

static void
test_line_permit_ids_cross_in_the_lines_form(void **state)
{
    char ids[4 * SLOT], jid[4 * SLOT + 8], *p;
    cr_permit_semaphore *s = NULL;
    int64_t avail = -1;
    size_t n = 0, i;
    const char *a;
    bool one_id = line_before("3.23.4");

    (void)state;
    OK(cr_permit_semaphore_new(test_client, "ps", &s));
    JAVA_OK(jpeer[0], "a", 5000, "pes-set ps 4");
    /* One permit each way. */
    a = JAVA_OK(jpeer[0], "a", 5000, "pes-try ps 0 -1");
    assert_true(cr_test_java_str(a, "id", jid, sizeof(jid)));
    assert_true(stored_in_line_form("ps", jid));
    OK(cr_permit_semaphore_release(s, jid));
    OK(cr_permit_semaphore_try_acquire(s, 0, CR_LEASE_NONE, ids));
    assert_true(stored_in_line_form("ps", ids));
    JAVA_OK(jpeer[0], "a", 5000, "pes-release ps %s", ids);
    OK(cr_permit_semaphore_available_permits(s, &avail));
    assert_int_equal(avail, 4);
    /* Java's acquire(2) (3.23.4 and later; before, Redisson has none:
     * its scripts take one permit per id) makes two ids C releases. */
    if (!one_id) {
        a = JAVA_OK(jpeer[0], "a", 5000, "pes-acquire-n ps 2 -1");
        assert_true(cr_test_java_str(a, "ids", jid, sizeof(jid)));
        OK(cr_permit_semaphore_available_permits(s, &avail));
        assert_int_equal(avail, 2);
        assert_int_equal(strlen(jid), 2 * CR_PERMIT_ID_LEN + 1);
        jid[CR_PERMIT_ID_LEN] = '\0';
        OK(cr_permit_semaphore_release(s, jid));
        OK(cr_permit_semaphore_release(s, jid + CR_PERMIT_ID_LEN + 1));
        OK(cr_permit_semaphore_available_permits(s, &avail));
        assert_int_equal(avail, 4);
    }
    /* C's acquire_n(2): one id for both before 3.23.4 (only C gives it
     * back whole, with release_n), two since, which Java releases. */
    OK(cr_permit_semaphore_acquire_n(s, 2, CR_LEASE_NONE, ids, &n));
    assert_int_equal(n, one_id ? 1 : 2);
    assert_int_equal(cr_test_java_num(JAVA_OK(jpeer[0], "a", 5000,
                                              "pes-avail ps"), "n"), 2);
    for (i = 0, p = ids; i < n; i++, p += SLOT) {
        assert_true(stored_in_line_form("ps", p));
        if (one_id)
            OK(cr_permit_semaphore_release_n(s, p, 2));
        else
            JAVA_OK(jpeer[0], "a", 5000, "pes-release ps %s", p);
    }
    assert_int_equal(cr_test_java_num(JAVA_OK(jpeer[0], "a", 5000,
                                              "pes-avail ps"), "n"), 4);
    cr_permit_semaphore_free(s);
}

/* --------------------------------------------------------- rate limiter */

#define RL_RATE 10
#define RL_INTERVAL_MS 600
#define RL_RUN_MS 1200

static void
test_line_rate_limiter_budget_shared_keeps_the_rate_or_is_refused(
    void **state)
{
    cr_rate_limiter *rl = NULL;

    (void)state;
    if (line_before("3.21.0")) {
        /* Records credisson cannot share: refused, nothing written. */
        assert_int_equal(cr_rate_limiter_new(test_client, "rl", &rl),
                         CR_ENOTSUP);
        return;
    }
    OK(cr_rate_limiter_new(test_client, "rl", &rl));
    assert_int_equal(cr_rate_limiter_try_set_rate(rl, CR_RATE_OVERALL, 10,
                                                  1000, 5000, NULL),
                     line_before("3.38.0") ? CR_ENOTSUP : CR_OK);
    OK(cr_rate_limiter_delete(rl, NULL));
    JAVA_OK(jpeer[0], "a", 5000, "rl-set rl %d %d overall", RL_RATE,
            RL_INTERVAL_MS);
    share_budget("rl", RL_RATE, RL_INTERVAL_MS, RL_RUN_MS, 1, 1);
    cr_rate_limiter_free(rl);
}

/* ------------------------------------------------------ read/write lock */

static void
test_line_rwlock_readers_share_and_a_writer_wakes_after_both(void **state)
{
    cr_rwlock *rw = NULL;
    cr_lock *r, *w;
    taker t;
    const char *a;
    int64_t released;
    int tag;

    (void)state;
    OK(cr_rwlock_new(test_client, "rwl", &rw));
    r = cr_rwlock_read_lock(rw);
    w = cr_rwlock_write_lock(rw);
    /* A C and a Java reader at once; neither side's writer gets in. */
    OK(cr_lock_try_lock(r, 0, JAVA_LONG_LEASE_MS));
    a = JAVA_OK(jpeer[0], "r", 5000, "lock read rwl 0 %d", JAVA_LONG_LEASE_MS);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    a = JAVA_OK(jpeer[0], "x", 5000, "lock write rwl 0 -1");
    assert_int_equal(cr_test_java_num(a, "got"), 0);
    assert_int_equal(cr_lock_try_lock_tid(w, -7, 0, CR_LEASE_WATCHDOG),
                     CR_BUSY);
    /* A C writer waits for both readers; the last one out is Java's. */
    OK(cr_lock_unlock(r));
    await_no_listener("write", "rwl");
    take_start(&t, w, slow(10000), -1);
    if (!c_lock_waiter_listens("write", "rwl")) {
        pthread_join(t.thread, NULL); /* before the teardown frees it all */
        fail_msg("the C waiter for write rwl never listened");
    }
    a = JAVA_OK(jpeer[0], "r", 5000, "unlock read rwl");
    released = cr_test_java_num(a, "t");
    pthread_join(t.thread, NULL);
    OK(t.rc);
    fprintf(stderr, "# %s: last reader (Java) out, C writer in %lld ms later\n",
            jline, (long long)(t.at - released));
    assert_true(t.at - released <= WAKE_BOUND_MS);
    /* And a sleeping Java writer wakes when the C writer leaves. */
    tag = cr_test_java_send(jpeer[0], "w", "take write rwl 10000 -1 0");
    assert_true(cr_test_wait_until(java_actor_sleeps, "w", slow(10000)));
    OK(cr_lock_unlock_tid(w, t.tid));
    released = cr_test_java_epoch_ms();
    a = java_wait_ok(jpeer[0], tag, 15000);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    assert_true(cr_test_java_num(a, "at") - released <= WAKE_BOUND_MS);
    cr_rwlock_free(rw);
}

/* ----------------------------------------------------------------- main */

/* The line whose group runs. */
static const char *group_line;

/* Group setup of one line: its peer (without a fair-lock wait setting:
 * each side keeps its line's default). A line that does not build or
 * start fails every test of its group. */
static int
line_up(void **state)
{
    (void)state;
    return java_start(group_line, 1, "--watchdog 1500");
}

static int
line_down(void **state)
{
    (void)state;
    java_stop();
    return 0;
}

int
main(void)
{
    static const char *const lines[] = {"3.13.2", "3.16.4", "3.22.0",
                                        "3.23.3", "3.37.0", "4.3.1"};
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, cross_up, client_down)
        T(test_line_rlock_counter_is_exact_and_releases_wake_both_ways),
        T(test_line_fair_lock_waiters_of_both_sides_take_the_lines_deadlines_in_order),
        T(test_line_permit_ids_cross_in_the_lines_form),
        T(test_line_rate_limiter_budget_shared_keeps_the_rate_or_is_refused),
        T(test_line_rwlock_readers_share_and_a_writer_wakes_after_both),
#undef T
    };
    size_t i;
    int failed = 0;

    cr_test_java_require("test_java_lines");
    if (redis_up(NULL) != 0)
        return 1;
    jfair_wait = 0;
    for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        fprintf(stderr, "# Redisson %s\n", lines[i]);
        group_line = lines[i];
        failed += _cmocka_run_group_tests(lines[i], tests,
                                          sizeof(tests) / sizeof(tests[0]),
                                          line_up, line_down);
    }
    redis_down(NULL);
    return failed != 0;
}
