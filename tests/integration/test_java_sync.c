/* SPDX-License-Identifier: MIT */
/*
 * The semaphores, the latch and the rate limiter against the real Java
 * Redisson client (4.7, built from its sources by tests/java/redisson.sh;
 * tests/java/README), both ways round.
 *
 * Bounds, each holding on a loaded two-core machine:
 * - semaphores of 1 and 2 permits taken at once, for a while, by C
 *   processes, C threads, the asynchronous API and two JVMs (java_mix.h)
 *   never have more holders inside than permits (each holder counts
 *   itself in and out with INCR and DECR and counts an excess), end with
 *   their permits as both sides read them and their waiting line gone,
 *   and no waiter of either side waits as long as a lost wake-up would
 *   make it (MIX_LIVE_MS); each side's longest wait in fair shares is
 *   printed. An expirable semaphore of 2 shared by C threads and two JVMs
 *   never has a third holder either.
 * - wake-ups: a waiter on either side gets its permit, or returns from
 *   the latch, within WAKE_BOUND_MS of the release or count down that woke
 *   it (stamped by the side that made it; one host, one wall clock). A C
 *   waiter's own fallback is a look once a second, Java's the end of its
 *   wait (10 s), so only the message wakes either that soon.
 * - an expirable permit's lease taken on one side is reclaimed by the
 *   other within LEASE_BOUND_MS of its end.
 * - the rate limiter: the grant times the server recorded, C's and Java's
 *   together, never hold more than the rate in any window of one
 *   interval; and after Java's release() and availablePermits() stored
 *   more than the rate, credisson grants no more than the rate.
 * Under valgrind and the sanitizers the program skips (the JVM is not
 * what they check); without a JDK or the jars it skips saying why.
 */
#include <pthread.h>

#include "lock_common.h"
#include "java_common.h"
#include "java_mix.h"

#define OK(call) assert_int_equal((call), CR_OK)
#define SLOT (CR_PERMIT_ID_LEN + 1)

#define WAKE_BOUND_MS 250
#define LEASE_BOUND_MS 500
#define COUNT_EACH 10

/* ------------------------------------------------------------- helpers */


/* A C semaphore holder's turn inside: INCR cur, an excess counted in
 * over, a millisecond (so that holders the semaphore does not keep apart
 * overlap), DECR cur. */
static bool
inside(redisContext *c)
{
    redisReply *r = redisCommand(c, "INCR cur");
    bool ok = r != NULL && r->type == REDIS_REPLY_INTEGER;

    if (ok && r->integer > 2) {
        freeReplyObject(r);
        r = redisCommand(c, "INCR over");
    }
    if (r != NULL)
        freeReplyObject(r);
    usleep(1000);
    r = redisCommand(c, "DECR cur");
    ok = ok && r != NULL;
    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

/* A C thread that waits in `fn(obj)` and notes when it returned. */
typedef struct c_waiter {
    cr_status (*fn)(void *obj);
    void *obj;
    cr_status rc;
    int64_t at;     /* epoch ms it returned */
    pthread_t thread;
} c_waiter;

static void *
c_wait_run(void *arg)
{
    c_waiter *w = arg;

    w->rc = w->fn(w->obj);
    w->at = cr_test_java_epoch_ms();
    return NULL;
}

static void
c_wait_start(c_waiter *w, cr_status (*fn)(void *), void *obj)
{
    memset(w, 0, sizeof(*w));
    w->fn = fn;
    w->obj = obj;
    assert_int_equal(pthread_create(&w->thread, NULL, c_wait_run, w), 0);
}

/* Waits until C waiter w stands in the line of semaphore `name` and
 * listens on `channel`, its own, where Java's releases are published
 * (c_waiter_listens); fails the test, once the waiter is back, when it
 * did not. */
static void
c_wait_listens(c_waiter *w, const char *name, const char *channel)
{
    if (!c_waiter_listens(name, channel)) {
        pthread_join(w->thread, NULL); /* before the teardown frees it all */
        fail_msg("the C waiter for %s never listened on %s", name, channel);
    }
}

/* One permit of a semaphore, waiting up to 10 s. */
static cr_status
sem_take_one(void *obj)
{
    return cr_semaphore_try_acquire(obj, 1, slow(10000));
}

/* --------------------------------------------------------- semaphores */

/* A mixed run (java_mix.h) on a semaphore of `permits` named `name`, set
 * by Java. */
static void
sem_mix(const char *name, int permits)
{
    mix_object o = {.kind = "sem", .name = name, .permits = permits};

    JAVA_OK(jpeer[0], "a", 5000, "sem-set %s %d", name, permits);
    mix_run(&o);
}

static void
test_java_semaphore_of_one_mixed_holders_never_overlap_and_none_waits_past_the_bound(
    void **state)
{
    (void)state;
    sem_mix("msem1", 1);
}

static void
test_java_semaphore_of_two_mixed_holders_never_exceed_it_and_none_waits_past_the_bound(
    void **state)
{
    (void)state;
    sem_mix("msem2", 2);
}

static void
test_java_semaphore_release_wakes_the_other_side_within_the_bound(
    void **state)
{
    cr_semaphore *s = NULL;
    c_waiter w;
    const char *a;
    int64_t released, got_at;
    int tag;

    (void)state;
    OK(cr_semaphore_new(test_client, "sem1", &s));
    JAVA_OK(jpeer[0], "a", 5000, "sem-set sem1 1");
    /* Java holds the permit, C waits; Java releases. */
    a = JAVA_OK(jpeer[0], "a", 5000, "sem-try sem1 1 0");
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    c_wait_start(&w, sem_take_one, s);
    c_wait_listens(&w, "sem1", "redisson_sc:{sem1}");
    a = JAVA_OK(jpeer[0], "a", 5000, "sem-release sem1 1");
    released = cr_test_java_num(a, "t");
    pthread_join(w.thread, NULL);
    OK(w.rc);
    got_at = w.at;
    fprintf(stderr, "# semaphore released by Java, taken by C %lld ms later\n",
            (long long)(got_at - released));
    assert_true(got_at - released <= WAKE_BOUND_MS);
    /* C holds it, Java waits; C releases. */
    tag = cr_test_java_send(jpeer[0], "w", "sem-try sem1 1 10000");
    assert_true(cr_test_wait_until(java_actor_sleeps, "w", slow(10000)));
    OK(cr_semaphore_release(s, 1));
    released = cr_test_java_epoch_ms();
    a = java_wait_ok(jpeer[0], tag, 15000);
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    fprintf(stderr, "# semaphore released by C, taken by Java %lld ms later\n",
            cr_test_java_num(a, "t") - (long long)released);
    assert_true(cr_test_java_num(a, "t") - released <= WAKE_BOUND_MS);
    cr_semaphore_free(s);
}


/* ----------------------------------------------- expirable semaphores */

/* A C thread's turns on an expirable semaphore of 2, each permit with a
 * lease far longer than a turn. */
typedef struct pes_job {
    cr_permit_semaphore *sem;
    int n;
    cr_status rc;
    pthread_t thread;
} pes_job;

static void *
pes_thread(void *arg)
{
    pes_job *j = arg;
    redisContext *c = cr_test_redis_connect(&test_redis);
    char id[SLOT];
    int i;

    j->rc = c != NULL ? CR_OK : CR_EIO;
    for (i = 0; i < j->n && j->rc == CR_OK; i++) {
        if ((j->rc = cr_permit_semaphore_try_acquire(j->sem,
                                                     slow(TURN_WAIT_MS),
                                                     JAVA_LONG_LEASE_MS,
                                                     id)) != CR_OK)
            break;
        if (!inside(c))
            j->rc = CR_EIO;
        if (cr_permit_semaphore_release(j->sem, id) != CR_OK &&
            j->rc == CR_OK)
            j->rc = CR_EIO;
    }
    if (c != NULL)
        redisFree(c);
    return NULL;
}

/* An expirable permit without a lease, waiting up to 10 s. */
typedef struct pes_take {
    cr_permit_semaphore *sem;
    char id[SLOT];
} pes_take;

static cr_status
pes_take_one(void *obj)
{
    pes_take *t = obj;

    return cr_permit_semaphore_try_acquire(t->sem, slow(10000), CR_LEASE_NONE,
                                           t->id);
}

/* Asserts that C and Java read `n` available permits of `name`. */
static void
pes_agree(cr_permit_semaphore *s, const char *name, int64_t n)
{
    int64_t c = -1;

    OK(cr_permit_semaphore_available_permits(s, &c));
    assert_int_equal(c, n);
    assert_int_equal(cr_test_java_num(JAVA_OK(jpeer[0], "a", 5000,
                                              "pes-avail %s", name), "n"), n);
}

/* What pes_back waits for: `n` permits of `name` available as `side`
 * ('c' or 'j') reads them. */
typedef struct pes_wanted {
    cr_permit_semaphore *sem;
    const char *name;
    char side;
    int64_t n;
} pes_wanted;

/* cr_test_wait_until condition on a pes_wanted. */
static bool
pes_back(void *arg)
{
    pes_wanted *w = arg;
    int64_t n = -1;

    if (w->side == 'c')
        return cr_permit_semaphore_available_permits(w->sem, &n) == CR_OK &&
               n == w->n;
    return cr_test_java_num(cr_test_java_call(jpeer[0], "a", slow(5000),
                                              "pes-avail %s", w->name),
                            "n") == w->n;
}

static void
test_java_permit_semaphore_of_two_never_has_a_third_holder_across_c_and_java(
    void **state)
{
    cr_permit_semaphore *s = NULL;
    pes_job jobs[2];
    int tags[2], i;

    (void)state;
    JAVA_OK(jpeer[0], "a", 5000, "pes-set pes2 2");
    OK(cr_permit_semaphore_new(test_client, "pes2", &s));
    tags[0] = cr_test_java_send(jpeer[0], "a", "pes-count pes2 cur over 2 %d "
                                "%d", COUNT_EACH, JAVA_LONG_LEASE_MS);
    tags[1] = cr_test_java_send(jpeer[1], "a", "pes-count pes2 cur over 2 %d "
                                "%d", COUNT_EACH, JAVA_LONG_LEASE_MS);
    for (i = 0; i < 2; i++) {
        jobs[i] = (pes_job){.sem = s, .n = COUNT_EACH};
        assert_int_equal(pthread_create(&jobs[i].thread, NULL, pes_thread,
                                        &jobs[i]), 0);
    }
    for (i = 0; i < 2; i++) {
        pthread_join(jobs[i].thread, NULL);
        OK(jobs[i].rc);
    }
    java_wait_ok(jpeer[0], tags[0], 60000);
    java_wait_ok(jpeer[1], tags[1], 60000);
    assert_int_equal(redis_int("EXISTS over"), 0);
    assert_int_equal(redis_int("GET cur"), 0);
    pes_agree(s, "pes2", 2);
    cr_permit_semaphore_free(s);
}

static void
test_java_permit_ids_and_leases_cross_both_ways(void **state)
{
    char id[SLOT], jid[64];
    cr_permit_semaphore *s = NULL;
    pes_wanted want;
    const char *a;
    int64_t end, back;

    (void)state;
    OK(cr_permit_semaphore_new(test_client, "pes", &s));
    JAVA_OK(jpeer[0], "a", 5000, "pes-set pes 3");
    pes_agree(s, "pes", 3);
    /* A Java permit released by C, a C permit released by Java. */
    a = JAVA_OK(jpeer[0], "a", 5000, "pes-try pes 0 -1");
    assert_true(cr_test_java_str(a, "id", jid, sizeof(jid)));
    assert_int_equal(strlen(jid), CR_PERMIT_ID_LEN);
    pes_agree(s, "pes", 2);
    OK(cr_permit_semaphore_release(s, jid));
    pes_agree(s, "pes", 3);
    OK(cr_permit_semaphore_try_acquire(s, 0, CR_LEASE_NONE, id));
    pes_agree(s, "pes", 2);
    JAVA_OK(jpeer[0], "a", 5000, "pes-release pes %s", id);
    pes_agree(s, "pes", 3);
    /* A Java lease reclaimed by C when it ends, and the reverse. */
    a = JAVA_OK(jpeer[0], "a", 5000, "pes-try pes 0 500");
    end = cr_test_java_num(a, "t") + 500;
    pes_agree(s, "pes", 2);
    want = (pes_wanted){s, "pes", 'c', 3};
    assert_true(cr_test_wait_until(pes_back, &want, slow(5000)));
    back = cr_test_java_epoch_ms();
    fprintf(stderr, "# a Java lease came back to C %lld ms after its end\n",
            (long long)(back - end));
    assert_true(back - end <= LEASE_BOUND_MS);
    OK(cr_permit_semaphore_try_acquire(s, 0, 500, id));
    end = cr_test_java_epoch_ms() + 500;
    want = (pes_wanted){s, "pes", 'j', 3};
    assert_true(cr_test_wait_until(pes_back, &want, slow(5000)));
    back = cr_test_java_epoch_ms();
    fprintf(stderr, "# a C lease came back to Java %lld ms after its end\n",
            (long long)(back - end));
    assert_true(back - end <= LEASE_BOUND_MS);
    /* The id whose lease ended is no longer out, on either side. */
    assert_int_equal(cr_permit_semaphore_release(s, id), CR_ENOTOWNER);
    assert_int_equal(cr_test_java_num(JAVA_OK(jpeer[0], "a", 5000,
                                              "pes-try-release pes %s", id),
                                      "r"), 0);
    cr_permit_semaphore_free(s);
}

static void
test_java_permit_release_and_lease_end_wake_the_other_side(void **state)
{
    char jid[64], id[SLOT];
    cr_permit_semaphore *s = NULL;
    pes_take t;
    c_waiter w;
    const char *a;
    int64_t released;
    int tag;

    (void)state;
    OK(cr_permit_semaphore_new(test_client, "pes1", &s));
    JAVA_OK(jpeer[0], "a", 5000, "pes-set pes1 1");
    /* Java's release wakes a C waiter. */
    a = JAVA_OK(jpeer[0], "a", 5000, "pes-try pes1 0 -1");
    assert_true(cr_test_java_str(a, "id", jid, sizeof(jid)));
    t.sem = s;
    c_wait_start(&w, pes_take_one, &t);
    c_wait_listens(&w, "pes1", "redisson_sc:{pes1}");
    a = JAVA_OK(jpeer[0], "a", 5000, "pes-release pes1 %s", jid);
    released = cr_test_java_num(a, "t");
    pthread_join(w.thread, NULL);
    OK(w.rc);
    fprintf(stderr, "# permit released by Java, taken by C %lld ms later\n",
            (long long)(w.at - released));
    assert_true(w.at - released <= WAKE_BOUND_MS);
    /* C's release wakes a Java waiter. */
    tag = cr_test_java_send(jpeer[0], "w", "pes-try pes1 10000 -1");
    assert_true(cr_test_wait_until(java_actor_sleeps, "w", slow(10000)));
    OK(cr_permit_semaphore_release(s, t.id));
    released = cr_test_java_epoch_ms();
    a = java_wait_ok(jpeer[0], tag, 15000);
    assert_true(cr_test_java_str(a, "id", jid, sizeof(jid)));
    assert_int_equal(strlen(jid), CR_PERMIT_ID_LEN);
    fprintf(stderr, "# permit released by C, taken by Java %lld ms later\n",
            cr_test_java_num(a, "t") - (long long)released);
    assert_true(cr_test_java_num(a, "t") - released <= WAKE_BOUND_MS);
    /* The end of a Java lease wakes a C waiter, and the reverse. */
    JAVA_OK(jpeer[0], "a", 5000, "pes-release pes1 %s", jid);
    a = JAVA_OK(jpeer[0], "a", 5000, "pes-try pes1 0 800");
    released = cr_test_java_num(a, "t") + 800;
    c_wait_start(&w, pes_take_one, &t);
    pthread_join(w.thread, NULL);
    OK(w.rc);
    fprintf(stderr, "# a Java lease ended, C took the permit %lld ms later\n",
            (long long)(w.at - released));
    assert_true(w.at - released <= LEASE_BOUND_MS);
    OK(cr_permit_semaphore_release(s, t.id));
    OK(cr_permit_semaphore_try_acquire(s, 0, 800, id));
    released = cr_test_java_epoch_ms() + 800;
    a = JAVA_OK(jpeer[0], "w", 15000, "pes-try pes1 10000 -1");
    assert_true(cr_test_java_str(a, "id", jid, sizeof(jid)));
    fprintf(stderr, "# a C lease ended, Java took the permit %lld ms later\n",
            cr_test_java_num(a, "t") - (long long)released);
    assert_true(cr_test_java_num(a, "t") - released <= LEASE_BOUND_MS);
    cr_permit_semaphore_free(s);
}

/* ------------------------------------------------------------- latches */

static cr_status
latch_wait(void *obj)
{
    return cr_latch_await(obj, slow(10000));
}

static void
test_java_latch_count_down_wakes_the_other_side_within_the_bound(
    void **state)
{
    cr_latch *l = NULL, *l2 = NULL;
    int64_t count = -1, released;
    c_waiter w;
    const char *a;
    int tag;

    (void)state;
    OK(cr_latch_new(test_client, "gate", &l));
    OK(cr_latch_new(test_client, "gate2", &l2));
    /* Set by Java, counted down by both; C waits, Java opens it. */
    JAVA_OK(jpeer[0], "a", 5000, "latch-set gate 2");
    OK(cr_latch_get_count(l, &count));
    assert_int_equal(count, 2);
    OK(cr_latch_count_down(l));
    assert_int_equal(cr_test_java_num(JAVA_OK(jpeer[0], "a", 5000,
                                              "latch-count gate"), "n"), 1);
    c_wait_start(&w, latch_wait, l);
    await_subscribers("redisson_countdownlatch__channel__{gate}", 1);
    a = JAVA_OK(jpeer[0], "a", 5000, "latch-down gate");
    released = cr_test_java_num(a, "t");
    pthread_join(w.thread, NULL);
    OK(w.rc);
    fprintf(stderr, "# latch opened by Java, C waiter back %lld ms later\n",
            (long long)(w.at - released));
    assert_true(w.at - released <= WAKE_BOUND_MS);
    /* Java waits, C opens it. */
    JAVA_OK(jpeer[0], "a", 5000, "latch-set gate2 1");
    tag = cr_test_java_send(jpeer[0], "w", "latch-await gate2 10000");
    assert_true(cr_test_wait_until(java_actor_sleeps, "w", slow(10000)));
    OK(cr_latch_count_down(l2));
    released = cr_test_java_epoch_ms();
    a = java_wait_ok(jpeer[0], tag, 15000);
    assert_int_equal(cr_test_java_num(a, "r"), 1);
    fprintf(stderr, "# latch opened by C, Java waiter back %lld ms later\n",
            cr_test_java_num(a, "t") - (long long)released);
    assert_true(cr_test_java_num(a, "t") - released <= WAKE_BOUND_MS);
    cr_latch_free(l);
    cr_latch_free(l2);
}

/* --------------------------------------------------------- rate limiter */

#define RL_RATE 10
#define RL_INTERVAL_MS 1000
#define RL_RUN_MS 2500

static void
test_java_rate_limiter_budget_shared_by_c_and_java_keeps_the_rate_in_every_window(
    void **state)
{
    (void)state;
    JAVA_OK(jpeer[0], "a", 5000, "rl-set shared %d %d overall", RL_RATE,
            RL_INTERVAL_MS);
    share_budget("shared", RL_RATE, RL_INTERVAL_MS, RL_RUN_MS, 2, 2);
}

static void
test_java_rate_limiter_keeps_its_rate_after_java_stored_more_than_it(
    void **state)
{
    cr_rate_limiter *rl = NULL;
    int64_t n = -1;
    const char *a;

    (void)state;
    OK(cr_rate_limiter_new(test_client, "over", &rl));
    JAVA_OK(jpeer[0], "a", 5000, "rl-set over 10 1000 overall");
    /* Java takes 5 and gives them back: its count says 10 while its
     * record of 5 lives. credisson takes what the records leave. */
    a = JAVA_OK(jpeer[0], "a", 5000, "rl-try over 5 0");
    assert_int_equal(cr_test_java_num(a, "got"), 1);
    JAVA_OK(jpeer[0], "a", 5000, "rl-release over 5");
    assert_int_equal(redis_int("GET {over}:value"), 10);
    OK(cr_rate_limiter_available_permits(rl, &n));
    assert_int_equal(n, 5);
    assert_int_equal(take_all(rl), 5);
    /* Once those records expired, Java's availablePermits() adds them
     * back to its count without a cap: it stores more than the rate. */
    JAVA_OK(jpeer[0], "a", 5000, "sleep 1100");
    a = JAVA_OK(jpeer[0], "a", 5000, "rl-avail over");
    fprintf(stderr, "# Java's availablePermits() stored %lld for a rate of "
            "10\n", cr_test_java_num(a, "n"));
    assert_true(cr_test_java_num(a, "n") > 10);
    assert_true(redis_int("GET {over}:value") > 10);
    /* credisson grants the rate in one interval, not what was stored. */
    OK(cr_rate_limiter_available_permits(rl, &n));
    assert_int_equal(n, 10);
    assert_int_equal(take_all(rl), 10);
    assert_int_equal(redis_int("ZCARD {over}:permits"), 10);
    /* And the count it left makes Java refuse too. */
    a = JAVA_OK(jpeer[0], "a", 5000, "rl-burst over 5");
    assert_int_equal(cr_test_java_num(a, "got"), 0);
    cr_rate_limiter_free(rl);
}

/* -------------------------------------------------------------- inspect */

static void
test_java_inspect_reads_semaphores_latches_and_limiters_java_made(
    void **state)
{
    char id[64];
    cr_object_info *info = NULL;
    const char *a;

    (void)state;
    JAVA_OK(jpeer[0], "a", 5000, "sem-set isem 5");
    JAVA_OK(jpeer[0], "a", 5000, "sem-try isem 2 0");
    OK(cr_object_inspect(test_client, "isem", &info));
    assert_true(info->kind == CR_OBJECT_SEMAPHORE ||
                info->kind == CR_OBJECT_SEMAPHORE_OR_LATCH);
    assert_true(info->has_value);
    assert_int_equal(info->value, 3);
    cr_object_info_free(info);
    JAVA_OK(jpeer[0], "a", 5000, "pes-set ipes 3");
    a = JAVA_OK(jpeer[0], "a", 5000, "pes-try ipes 0 60000");
    assert_true(cr_test_java_str(a, "id", id, sizeof(id)));
    OK(cr_object_inspect(test_client, "ipes", &info));
    assert_int_equal(info->kind, CR_OBJECT_PERMIT_SEMAPHORE);
    assert_int_equal(info->value, 2);
    assert_int_equal(info->issued_count, 1);
    assert_int_equal(info->npermits, 1);
    assert_string_equal(info->permits[0].id, id);
    assert_false(info->permits[0].never);
    assert_true(info->permits[0].expires_ms > info->now_ms + 50000);
    cr_object_info_free(info);
    JAVA_OK(jpeer[0], "a", 5000, "latch-set ilatch 4");
    OK(cr_object_inspect(test_client, "ilatch", &info));
    assert_true(info->kind == CR_OBJECT_LATCH ||
                info->kind == CR_OBJECT_SEMAPHORE_OR_LATCH);
    assert_int_equal(info->value, 4);
    cr_object_info_free(info);
    JAVA_OK(jpeer[0], "a", 5000, "rl-set irl 7 1000 per_client");
    OK(cr_object_inspect(test_client, "irl", &info));
    assert_int_equal(info->kind, CR_OBJECT_RATE_LIMITER);
    assert_int_equal(info->rate, 7);
    assert_int_equal(info->interval_ms, 1000);
    assert_int_equal(info->rate_type, 1);
    cr_object_info_free(info);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, cross_up, client_down)
        T(test_java_semaphore_of_one_mixed_holders_never_overlap_and_none_waits_past_the_bound),
        T(test_java_semaphore_of_two_mixed_holders_never_exceed_it_and_none_waits_past_the_bound),
        T(test_java_semaphore_release_wakes_the_other_side_within_the_bound),
        T(test_java_permit_semaphore_of_two_never_has_a_third_holder_across_c_and_java),
        T(test_java_permit_ids_and_leases_cross_both_ways),
        T(test_java_permit_release_and_lease_end_wake_the_other_side),
        T(test_java_latch_count_down_wakes_the_other_side_within_the_bound),
        T(test_java_rate_limiter_budget_shared_by_c_and_java_keeps_the_rate_in_every_window),
        T(test_java_rate_limiter_keeps_its_rate_after_java_stored_more_than_it),
        T(test_java_inspect_reads_semaphores_latches_and_limiters_java_made),
#undef T
    };

    if (java_up_n("test_java_sync", NULL, 2) != 0) {
        java_down(NULL);
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, java_down);
}
