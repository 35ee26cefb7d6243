/* SPDX-License-Identifier: MIT */
/*
 * RSemaphore against a real redis-server: setting, acquiring and releasing
 * permits, waits and their bounds, wake-ups from C and from messages a Java
 * client would send, k permits bounding a section entered by threads and
 * processes, conservation of permits, the keys and messages on the wire
 * (protocol section 7), and bad arguments.
 */
#include <pthread.h>

#include "client.h"
#include "scripts.h"
#include "sync_common.h"

/* ------------------------------------------------------------- helpers */

typedef struct waiter {
    cr_semaphore *sem;
    int64_t permits;
    int64_t wait_ms;
    cr_status rc;
    int64_t done_at;
    pthread_t thread;
} waiter;

/* Thread body: try_acquire with the waiter's budget. */
static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->rc = cr_semaphore_try_acquire(w->sem, w->permits, w->wait_ms);
    w->done_at = cr_test_now_ms();
    return NULL;
}

static void
waiter_start(waiter *w, cr_semaphore *s, int64_t permits, int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->sem = s;
    w->permits = permits;
    w->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

static int64_t
available(cr_semaphore *s)
{
    int64_t n = -999;

    assert_int_equal(cr_semaphore_available_permits(s, &n), CR_OK);
    return n;
}

/* -------------------------------------------------------- basic contract */

static void
test_semaphore_try_set_permits_sets_only_a_missing_semaphore(void **state)
{
    cr_semaphore *s;
    bool set = false;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "sem", &s), CR_OK);
    assert_string_equal(cr_semaphore_name(s), "sem");
    assert_int_equal(available(s), 0);
    assert_int_equal(cr_semaphore_try_set_permits(s, 3, 0, &set), CR_OK);
    assert_true(set);
    assert_int_equal(cr_semaphore_try_set_permits(s, 7, 0, &set), CR_OK);
    assert_false(set);
    assert_int_equal(available(s), 3);
    assert_int_equal(redis_int("PTTL sem"), -1);
    cr_semaphore_free(s);
}

static void
test_semaphore_try_set_permits_with_ttl_expires_the_key(void **state)
{
    cr_semaphore *s;
    bool set = false;
    long long ttl;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "sem", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 2, 60000, &set), CR_OK);
    assert_true(set);
    ttl = redis_int("PTTL sem");
    assert_true(ttl > 50000 && ttl <= 60000);
    cr_semaphore_free(s);
}

static void
test_semaphore_acquire_and_release_move_the_count(void **state)
{
    cr_semaphore *s;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "sem", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 5, 0, NULL), CR_OK);
    assert_int_equal(cr_semaphore_acquire(s, 2), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(s, 3, 0), CR_OK);
    assert_int_equal(available(s), 0);
    assert_int_equal(cr_semaphore_try_acquire(s, 1, 0), CR_BUSY);
    assert_int_equal(cr_semaphore_release(s, 4), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(s, 5, 0), CR_BUSY);
    assert_int_equal(available(s), 4);
    /* Zero permits: done at once, as in Redisson. */
    assert_int_equal(cr_semaphore_acquire(s, 0), CR_OK);
    assert_int_equal(cr_semaphore_release(s, 0), CR_OK);
    assert_int_equal(available(s), 4);
    cr_semaphore_free(s);
}

static void
test_semaphore_acquire_waits_on_a_semaphore_never_set(void **state)
{
    cr_client *other = new_client(30000);
    cr_semaphore *mine, *theirs;
    waiter w;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_semaphore_new(test_client, "unset", &mine), CR_OK);
    assert_int_equal(cr_semaphore_new(other, "unset", &theirs), CR_OK);
    waiter_start(&w, mine, 1, slow(10000));
    await_waiters_in_line("unset", 1);
    assert_int_equal(cr_semaphore_release(theirs, 1), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_int_equal(available(mine), 0);
    cr_semaphore_free(mine);
    cr_semaphore_free(theirs);
    cr_client_free(other);
}

static void
test_semaphore_release_if_exists_leaves_a_missing_semaphore_alone(void **state)
{
    cr_semaphore *s;
    bool released = true;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "sem", &s), CR_OK);
    assert_int_equal(cr_semaphore_release_if_exists(s, 2, &released), CR_OK);
    assert_false(released);
    assert_int_equal(redis_int("EXISTS sem"), 0);
    assert_int_equal(cr_semaphore_try_set_permits(s, 1, 0, NULL), CR_OK);
    assert_int_equal(cr_semaphore_release_if_exists(s, 2, &released), CR_OK);
    assert_true(released);
    assert_int_equal(available(s), 3);
    released = true;
    assert_int_equal(cr_semaphore_release_if_exists(s, 0, &released), CR_OK);
    assert_false(released);
    cr_semaphore_free(s);
}

static void
test_semaphore_add_set_drain_and_delete(void **state)
{
    cr_semaphore *s;
    int64_t drained = -1;
    bool deleted = false;
    long long ttl;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "sem", &s), CR_OK);
    assert_int_equal(cr_semaphore_add_permits(s, 4), CR_OK);
    assert_int_equal(available(s), 4);
    assert_int_equal(cr_semaphore_add_permits(s, -6), CR_OK);
    assert_int_equal(available(s), -2);
    assert_int_equal(cr_semaphore_try_acquire(s, 1, 0), CR_BUSY);
    assert_int_equal(cr_semaphore_release(s, 3), CR_OK);
    assert_int_equal(available(s), 1);
    /* set_permits keeps the key's expiry; drain drops it, as in Redisson. */
    assert_int_equal(redis_int("PEXPIRE sem 60000"), 1);
    assert_int_equal(cr_semaphore_set_permits(s, 9), CR_OK);
    assert_int_equal(available(s), 9);
    ttl = redis_int("PTTL sem");
    assert_true(ttl > 50000 && ttl <= 60000);
    assert_int_equal(cr_semaphore_drain_permits(s, &drained), CR_OK);
    assert_int_equal(drained, 9);
    assert_int_equal(available(s), 0);
    assert_int_equal(redis_int("PTTL sem"), -1);
    assert_int_equal(cr_semaphore_drain_permits(s, &drained), CR_OK);
    assert_int_equal(drained, 0);
    assert_int_equal(cr_semaphore_delete(s, &deleted), CR_OK);
    assert_true(deleted);
    assert_int_equal(cr_semaphore_delete(s, &deleted), CR_OK);
    assert_false(deleted);
    assert_int_equal(cr_semaphore_drain_permits(s, &drained), CR_OK);
    assert_int_equal(drained, 0);
    assert_int_equal(redis_int("EXISTS sem"), 0);
    cr_semaphore_free(s);
}

/* ----------------------------------------------------------------- waits */

static void
test_semaphore_try_acquire_returns_busy_within_its_wait_budget(void **state)
{
    cr_semaphore *s;
    int64_t start, took;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "sem", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 1, 0, NULL), CR_OK);
    start = cr_test_now_ms();
    assert_int_equal(cr_semaphore_try_acquire(s, 2, 0), CR_BUSY);
    assert_true(cr_test_now_ms() - start < slow(500));
    start = cr_test_now_ms();
    assert_int_equal(cr_semaphore_try_acquire(s, 2, 400), CR_BUSY);
    took = cr_test_now_ms() - start;
    assert_true(took >= 400);
    assert_true(took < 400 + slow(600));
    /* The wait that ran out left the semaphore's line, and no subscription
     * behind, on the semaphore's channel or its own. */
    assert_int_equal(line_length("sem"), 0);
    assert_true(cr_test_wait_until(has_no_subscriber, "redisson_sc:{sem}",
                                   slow(3000)));
    assert_true(cr_test_wait_until(no_line_listener, "sem", slow(3000)));
    assert_int_equal(available(s), 1);
    cr_semaphore_free(s);
}

static void
test_semaphore_release_wakes_a_waiter_of_another_client_promptly(void **state)
{
    cr_client *other = new_client(30000);
    cr_semaphore *mine, *theirs;
    waiter w;
    int64_t released;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_semaphore_new(test_client, "sem", &mine), CR_OK);
    assert_int_equal(cr_semaphore_new(other, "sem", &theirs), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(mine, 0, 0, NULL), CR_OK);
    waiter_start(&w, mine, 2, slow(10000));
    await_waiters_in_line("sem", 1);
    assert_int_equal(cr_semaphore_release(theirs, 1), CR_OK);
    assert_int_equal(cr_semaphore_release(theirs, 1), CR_OK);
    released = cr_test_now_ms();
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    /* Woken by the message, well before the one-second re-check. */
    assert_true(w.done_at - released < slow(500));
    assert_int_equal(available(mine), 0);
    cr_semaphore_free(mine);
    cr_semaphore_free(theirs);
    cr_client_free(other);
}

/* A thread that waits for a lock, takes it and gives it back. */
typedef struct lock_waiter {
    cr_lock *lock;
    cr_status rc;
    pthread_t thread;
} lock_waiter;

static void *
lock_waiter_run(void *arg)
{
    lock_waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, slow(10000), 10000);
    if (w->rc == CR_OK)
        w->rc = cr_lock_unlock(w->lock);
    return NULL;
}

/* cr_object_inspect counts the connections subscribed to a semaphore's
 * channel and, for a lock that is not fair, to the lock's: the waiter's
 * client's one subscriber connection while it waits, none once it has
 * let go. */
static void
test_inspect_counts_the_connections_subscribed_to_the_channel(void **state)
{
    cr_client *other = new_client(30000);
    cr_semaphore *mine, *theirs;
    cr_object_info *in = NULL;
    cr_lock *held, *wanted;
    lock_waiter lw;
    waiter w;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_semaphore_new(test_client, "subs", &mine), CR_OK);
    assert_int_equal(cr_semaphore_new(other, "subs", &theirs), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(mine, 0, 0, NULL), CR_OK);
    waiter_start(&w, theirs, 1, slow(10000));
    await_subscribers("redisson_sc:{subs}", 1);
    assert_int_equal(cr_object_inspect(test_client, "subs", &in), CR_OK);
    assert_int_equal(in->kind, CR_OBJECT_SEMAPHORE);
    assert_int_equal(in->subscribers, 1);
    cr_object_info_free(in);
    assert_int_equal(cr_semaphore_release(mine, 1), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(cr_test_wait_until(has_no_subscriber, "redisson_sc:{subs}",
                                   slow(5000)));
    assert_int_equal(cr_semaphore_release(mine, 1), CR_OK);
    assert_int_equal(cr_object_inspect(test_client, "subs", &in), CR_OK);
    assert_int_equal(in->subscribers, 0);
    cr_object_info_free(in);
    /* A lock: the waiter of the other client is subscribed. */
    assert_int_equal(cr_lock_new(test_client, "lsubs", &held), CR_OK);
    assert_int_equal(cr_lock_new(other, "lsubs", &wanted), CR_OK);
    assert_int_equal(cr_lock_lock(held, 10000), CR_OK);
    lw.lock = wanted;
    assert_int_equal(pthread_create(&lw.thread, NULL, lock_waiter_run, &lw),
                     0);
    await_subscribers("redisson_lock__channel:{lsubs}", 1);
    assert_int_equal(cr_object_inspect(test_client, "lsubs", &in), CR_OK);
    assert_int_equal(in->kind, CR_OBJECT_LOCK);
    assert_int_equal(in->subscribers, 1);
    cr_object_info_free(in);
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    pthread_join(lw.thread, NULL);
    assert_int_equal(lw.rc, CR_OK);
    cr_lock_free(held);
    cr_lock_free(wanted);
    cr_semaphore_free(mine);
    cr_semaphore_free(theirs);
    cr_client_free(other);
}

/* A handle that releases and acquires again at once lets a waiter its
 * release reached elsewhere have the permit first: it pauses a turn of a
 * few release round trips (1 ms at least), where the waiter here needs
 * 300 us after the message. Without the turn the releaser is a round trip
 * ahead and wins. Under valgrind a thread wakes too slowly for that, so
 * the test needs real speed and is skipped when CR_TEST_SLOW is set. */
/* far_waiter_rounds' steps on a cr_semaphore: one permit. */
static void
take_one(void *h, int64_t wait_ms)
{
    assert_int_equal(cr_semaphore_try_acquire(h, 1, wait_ms), CR_OK);
}

static void
give_one(void *h)
{
    assert_int_equal(cr_semaphore_release(h, 1), CR_OK);
}

static void
test_semaphore_releaser_lets_the_waiter_it_woke_go_first(void **state)
{
    cr_semaphore *theirs;

    (void)state;
    if (slow(1) > 1)
        skip();
    assert_int_equal(cr_semaphore_new(test_client, "ysem", &theirs), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(theirs, 1, 0, NULL), CR_OK);
    assert_far_waiter_first("ysem", theirs, take_one, give_one);
    assert_int_equal(available(theirs), 1);
    cr_semaphore_free(theirs);
}

static void
test_semaphore_waiter_wakes_on_a_java_style_release_message(void **state)
{
    cr_semaphore *s;
    waiter w;
    int64_t published;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "jsem", &s), CR_OK);
    waiter_start(&w, s, 1, slow(10000));
    /* In line, and the first there: it listens on the semaphore's channel
     * too, where a Java release is heard. */
    await_waiters_in_line("jsem", 1);
    await_subscribers("redisson_sc:{jsem}", 1);
    /* What Java's release(1) does: INCRBY, then publish the new total, in
     * one script (no re-check of the waiter can come between them); the
     * message reaches the waiter's client. Its re-check is a second after
     * its last try, so a wake-up within half of that is the message's. */
    assert_int_equal(redis_int("EVAL %s 1 jsem",
                               "redis.call('incrby', KEYS[1], 1) "
                               "return redis.call('publish', "
                               "'redisson_sc:{' .. KEYS[1] .. '}', 1)"),
                     1);
    published = cr_test_now_ms();
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.done_at - published < slow(500));
    cr_semaphore_free(s);
}

static void
test_semaphore_waiter_rechecks_when_no_message_comes(void **state)
{
    cr_semaphore *s;
    waiter w;
    int64_t set_at;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "quiet", &s), CR_OK);
    waiter_start(&w, s, 1, CR_WAIT_FOREVER);
    await_waiters_in_line("quiet", 1);
    /* Permits appear without any message. */
    assert_true(redis_ok("SET quiet 1"));
    set_at = cr_test_now_ms();
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.done_at - set_at < slow(2500));
    cr_semaphore_free(s);
}

/* ----------------------------------------------- bounds on concurrency */

#define K 3
#define THREADS 6
#define PROCS 3
#define ROUNDS 15

typedef struct section_ctx {
    cr_semaphore *sem;
    sync_block *block;
    int errors;
} section_ctx;

/* Thread body: ROUNDS times through the section guarded by the semaphore. */
static void *
section_thread(void *arg)
{
    section_ctx *x = arg;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        if (cr_semaphore_acquire(x->sem, 1) != CR_OK) {
            __atomic_add_fetch(&x->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        sync_block_enter(x->block);
        usleep(500);
        sync_block_leave(x->block);
        if (cr_semaphore_release(x->sem, 1) != CR_OK)
            __atomic_add_fetch(&x->errors, 1, __ATOMIC_SEQ_CST);
    }
    atomic_fetch_add(&x->block->finished, 1);
    return NULL;
}

static void
test_semaphore_k_permits_bound_a_section_across_threads_and_processes(void **state)
{
    section_ctx x = {NULL, NULL, 0};
    pthread_t t[THREADS];
    pid_t pids[PROCS];
    char rounds[16], fdtext[16];
    int fd, i;

    (void)state;
    x.block = shared_block(&fd);
    assert_int_equal(cr_semaphore_new(test_client, "pool", &x.sem), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(x.sem, K, 0, NULL), CR_OK);
    snprintf(rounds, sizeof(rounds), "%d", ROUNDS);
    snprintf(fdtext, sizeof(fdtext), "%d", fd);
    for (i = 0; i < PROCS; i++)
        pids[i] = spawn_worker(NULL, "sem", "pool", rounds, fdtext);
    for (i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, section_thread, &x), 0);
    for (i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < PROCS; i++)
        reap_ok(pids[i]);
    assert_int_equal(x.errors, 0);
    assert_int_equal(atomic_load(&x.block->finished), THREADS + PROCS);
    assert_int_equal(atomic_load(&x.block->entries), (THREADS + PROCS) * ROUNDS);
    assert_int_equal(atomic_load(&x.block->inside), 0);
    assert_true(atomic_load(&x.block->most) >= 1);
    assert_true(atomic_load(&x.block->most) <= K);
    assert_int_equal(available(x.sem), K);
    cr_semaphore_free(x.sem);
    munmap(x.block, sizeof(*x.block));
    close(fd);
}

typedef struct storm_ctx {
    cr_semaphore *sem;
    unsigned seed;
    int errors;
} storm_ctx;

/* Thread body: random acquires of 1..3 permits with short or no waits, each
 * success given back, with a release of 1 and a take of 1 in between. */
static void *
storm_thread(void *arg)
{
    storm_ctx *x = arg;
    int i;

    for (i = 0; i < 25; i++) {
        int64_t n = 1 + rand_r(&x->seed) % 3;
        int64_t wait = rand_r(&x->seed) % 2 == 0 ? 0 : 20;
        cr_status rc = cr_semaphore_try_acquire(x->sem, n, wait);

        if (rc == CR_OK) {
            if (cr_semaphore_release(x->sem, n) != CR_OK)
                x->errors++;
        } else if (rc != CR_BUSY) {
            x->errors++;
        }
        if (cr_semaphore_release(x->sem, 1) != CR_OK ||
            cr_semaphore_acquire(x->sem, 1) != CR_OK)
            x->errors++;
    }
    return NULL;
}

static void
test_semaphore_permits_are_conserved_after_a_storm(void **state)
{
    storm_ctx x[6];
    pthread_t t[6];
    cr_semaphore *s;
    int i;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "storm", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 4, 0, NULL), CR_OK);
    for (i = 0; i < 6; i++) {
        x[i].sem = s;
        x[i].seed = (unsigned)i * 7919u + 1;
        x[i].errors = 0;
        assert_int_equal(pthread_create(&t[i], NULL, storm_thread, &x[i]), 0);
    }
    for (i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(x[i].errors, 0);
    }
    assert_int_equal(available(s), 4);
    cr_semaphore_free(s);
}

/* ------------------------------------------------------ lost replies */

static void
test_semaphore_acquire_attempt_replays_with_the_same_request_id(void **state)
{
    const char *latch = "credisson_semaphore_acquire:{replay}:00112233445566778899aabbccddeeff";
    const cr__semaphore_try_acquire_args args = {
        .permits = "replay", .latch = latch, .line = "credisson_line:{replay}",
        .line_state = "credisson_line_state:{replay}", .count_value = 2,
        .latch_ms = 60000, .entry = "c0ffee:1", .wait = 0,
        .line_lease_ms = 30000, .turn_ms = 250,
        .line_channel = "credisson_line__channel:{replay}:",
        .publish = "publish"};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    int64_t v = -1;
    cr__op op;

    (void)state;
    cr__op_begin(&op, test_client, -1);
    assert_true(redis_ok("SET replay 3"));
    /* The first attempt takes two permits and leaves the latch... */
    assert_int_equal(cr__run_semaphore_try_acquire(&op, &cmd, &args, &r), CR_OK);
    assert_true(cr__reply_int(r, &v));
    cr__reply_free(r);
    assert_int_equal(v, 1);
    assert_int_equal(redis_int("GET replay"), 1);
    /* ...so a retry of the same call (its reply was lost) takes none. */
    assert_int_equal(cr__run_semaphore_try_acquire(&op, &cmd, &args, &r), CR_OK);
    assert_true(cr__reply_int(r, &v));
    cr__reply_free(r);
    assert_int_equal(v, 1);
    assert_int_equal(redis_int("GET replay"), 1);
    assert_true(redis_int("PTTL %s", latch) > 50000);
}

static bool
no_acquire_latches(void *arg)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "KEYS %s", (char *)arg);
    bool none = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 0;

    if (r != NULL)
        freeReplyObject(r);
    return none;
}

static void
test_semaphore_acquire_latch_is_deleted_after_the_call(void **state)
{
    cr_semaphore *s;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "tidy", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 2, 0, NULL), CR_OK);
    assert_int_equal(cr_semaphore_acquire(s, 1), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(s, 1, 100), CR_OK);
    /* The deferred DEL is read back with the next command. */
    assert_int_equal(available(s), 0);
    assert_int_equal(available(s), 0);
    assert_true(cr_test_wait_until(no_acquire_latches,
                                   "credisson_semaphore_acquire:*", slow(2000)));
    cr_semaphore_free(s);
}

/* ------------------------------------------------------------ the wire */

static void
test_semaphore_wire_keys_and_publishes_match_redisson(void **state)
{
    const char *channels[1] = {"redisson_sc:{wire}"};
    const char *want[] = {"3", "2", "8", "4"};
    cr_test_listener *li = listen_on(channels, 1);
    cr_semaphore *s;
    char value[32];
    int64_t drained = 0;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "wire", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 3, 0, NULL), CR_OK);
    assert_int_equal(redis_str(value, sizeof(value), "GET wire"), 1);
    assert_string_equal(value, "3");
    assert_int_equal(redis_str(value, sizeof(value), "TYPE wire"), 6);
    assert_string_equal(value, "string");
    assert_int_equal(cr_semaphore_acquire(s, 2), CR_OK);   /* no publish */
    assert_int_equal(cr_semaphore_release(s, 1), CR_OK);   /* "2" */
    assert_int_equal(cr_semaphore_add_permits(s, -5), CR_OK); /* -3: none */
    assert_int_equal(cr_semaphore_release(s, 1), CR_OK);   /* -2: none */
    assert_int_equal(cr_semaphore_add_permits(s, 10), CR_OK); /* "8" */
    assert_int_equal(cr_semaphore_drain_permits(s, &drained), CR_OK);
    assert_int_equal(drained, 8);
    assert_int_equal(cr_semaphore_try_set_permits(s, 5, 0, NULL), CR_OK); /* exists */
    assert_int_equal(cr_semaphore_set_permits(s, 0), CR_OK); /* 0: none */
    assert_int_equal(cr_semaphore_set_permits(s, 4), CR_OK); /* "4" */
    assert_int_equal(redis_str(value, sizeof(value), "GET wire"), 1);
    assert_string_equal(value, "4");
    assert_messages(li, channels[0], want, 4);
    cr_test_listener_stop(li);
    cr_semaphore_free(s);
}

static void
test_semaphore_names_with_braces_and_prefix_use_redisson_names(void **state)
{
    const char *channels[2] = {"redisson_sc:app{7}sem", "redisson_sc:{pre:x}"};
    const char *want0[] = {"1"};
    cr_test_listener *li = listen_on(channels, 2);
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *prefixed = NULL;
    cr_semaphore *a, *b;
    const cr_test_message *m;

    (void)state;
    o.url = test_redis.url;
    o.name_prefix = "pre:";
    assert_int_equal(cr_client_new(&o, &prefixed), CR_OK);
    assert_int_equal(cr_semaphore_new(test_client, "app{7}sem", &a), CR_OK);
    assert_int_equal(cr_semaphore_new(prefixed, "x", &b), CR_OK);
    assert_int_equal(cr_semaphore_release(a, 1), CR_OK);
    assert_int_equal(redis_int("GET app{7}sem"), 1);
    assert_messages(li, channels[0], want0, 1);
    assert_int_equal(cr_semaphore_release(b, 2), CR_OK);
    assert_int_equal(redis_int("GET pre:x"), 2);
    assert_true(cr_test_listener_wait(li, 3, slow(3000)) >= 3);
    m = cr_test_listener_get(li, 2);
    assert_string_equal(m->channel, "redisson_sc:{pre:x}");
    assert_string_equal(m->payload, "2");
    cr_test_listener_stop(li);
    cr_semaphore_free(a);
    cr_semaphore_free(b);
    cr_client_free(prefixed);
}

/* Names whose keys a Redis Cluster would put in different slots (protocol
 * 1.1) are refused only in cluster mode; a single server takes them. */
static void
test_semaphore_names_that_split_cluster_slots_work_outside_a_cluster(void **state)
{
    static const char *names[] = {"a{", "{}x", "a}b"};
    cr_semaphore *s;
    bool set = false;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        assert_int_equal(cr_semaphore_new(test_client, names[i], &s), CR_OK);
        assert_int_equal(cr_semaphore_try_set_permits(s, 1, 0, &set), CR_OK);
        assert_true(set);
        assert_int_equal(cr_semaphore_try_acquire(s, 1, 0), CR_OK);
        assert_int_equal(cr_semaphore_release(s, 1), CR_OK);
        assert_int_equal(redis_int("GET %s", names[i]), 1);
        cr_semaphore_free(s);
    }
}

/* ------------------------------------------------------------ bad input */

static void
test_semaphore_bad_arguments_are_refused_with_einval(void **state)
{
    cr_semaphore *s = NULL, *dead = NULL;
    int64_t n = 42;
    bool b = true;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, NULL, &s), CR_EINVAL);
    assert_int_equal(cr_semaphore_new(test_client, "", &s), CR_EINVAL);
    assert_int_equal(cr_semaphore_new(test_client, "x", NULL), CR_EINVAL);
    assert_int_equal(cr_semaphore_new(NULL, "x", &s), CR_EINVAL);
    assert_null(s);
    assert_int_equal(cr_semaphore_new(test_client, "bad", &s), CR_OK);
    assert_int_equal(cr_semaphore_acquire(NULL, 1), CR_EINVAL);
    assert_int_equal(cr_semaphore_acquire(s, -1), CR_EINVAL);
    assert_string_not_equal(cr_last_error(), "");
    assert_int_equal(cr_semaphore_acquire(s, CR_PERMITS_MAX + 1), CR_EINVAL);
    assert_int_equal(cr_semaphore_try_acquire(s, 1, -2), CR_EINVAL);
    assert_int_equal(cr_semaphore_try_acquire(s, 1, CR_DURATION_MAX + 1), CR_EINVAL);
    assert_int_equal(cr_semaphore_release(s, -1), CR_EINVAL);
    assert_int_equal(cr_semaphore_release(s, INT64_MAX), CR_EINVAL);
    assert_int_equal(cr_semaphore_release_if_exists(s, -3, &b), CR_EINVAL);
    assert_true(b);
    assert_int_equal(cr_semaphore_try_set_permits(s, -1, 0, &b), CR_EINVAL);
    assert_int_equal(cr_semaphore_try_set_permits(s, 1, -5, &b), CR_EINVAL);
    assert_true(b);
    assert_int_equal(cr_semaphore_add_permits(s, CR_PERMITS_MAX + 1), CR_EINVAL);
    assert_int_equal(cr_semaphore_add_permits(s, -CR_PERMITS_MAX - 1), CR_EINVAL);
    assert_int_equal(cr_semaphore_set_permits(s, -1), CR_EINVAL);
    assert_int_equal(cr_semaphore_available_permits(s, NULL), CR_EINVAL);
    assert_int_equal(cr_semaphore_drain_permits(NULL, &n), CR_EINVAL);
    assert_int_equal(n, 42);
    assert_int_equal(redis_int("EXISTS bad"), 0);
    /* A handle is freed; free(NULL) does nothing. */
    assert_int_equal(cr_semaphore_new(test_client, "dead", &dead), CR_OK);
    cr_semaphore_free(dead);
    cr_semaphore_free(NULL);
    assert_string_equal(cr_semaphore_name(NULL), "");
    cr_semaphore_free(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_semaphore_try_set_permits_sets_only_a_missing_semaphore),
        T(test_semaphore_names_that_split_cluster_slots_work_outside_a_cluster),
        T(test_semaphore_try_set_permits_with_ttl_expires_the_key),
        T(test_semaphore_acquire_and_release_move_the_count),
        T(test_semaphore_acquire_waits_on_a_semaphore_never_set),
        T(test_semaphore_release_if_exists_leaves_a_missing_semaphore_alone),
        T(test_semaphore_add_set_drain_and_delete),
        T(test_semaphore_try_acquire_returns_busy_within_its_wait_budget),
        T(test_semaphore_release_wakes_a_waiter_of_another_client_promptly),
        T(test_inspect_counts_the_connections_subscribed_to_the_channel),
        T(test_semaphore_releaser_lets_the_waiter_it_woke_go_first),
        T(test_semaphore_waiter_wakes_on_a_java_style_release_message),
        T(test_semaphore_waiter_rechecks_when_no_message_comes),
        T(test_semaphore_k_permits_bound_a_section_across_threads_and_processes),
        T(test_semaphore_permits_are_conserved_after_a_storm),
        T(test_semaphore_acquire_attempt_replays_with_the_same_request_id),
        T(test_semaphore_acquire_latch_is_deleted_after_the_call),
        T(test_semaphore_wire_keys_and_publishes_match_redisson),
        T(test_semaphore_names_with_braces_and_prefix_use_redisson_names),
        T(test_semaphore_bad_arguments_are_refused_with_einval),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
