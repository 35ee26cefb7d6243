/* SPDX-License-Identifier: MIT */
/*
 * The lock kinds that are RLock with one difference: the fenced lock
 * (tokens), the spin lock (no pub/sub) and the non-reentrant lock.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fencing_guard.h"
#include "lock_common.h"

/* ---------------------------------------------------------- fenced lock */

static void
test_fenced_tokens_strictly_increase_across_clients_and_reentry(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *a, *b;
    int64_t t1 = 0, t2 = 0, t3 = 0, now = 0;

    (void)state;
    assert_int_equal(cr_fenced_lock_new(test_client, "fence", &a), CR_OK);
    assert_int_equal(cr_fenced_lock_new(other, "fence", &b), CR_OK);
    assert_int_equal(cr_fenced_lock_get_token(a, &now), CR_OK);
    assert_int_equal(now, 0);
    assert_int_equal(cr_fenced_lock_lock_and_get_token(a, CR_LEASE_WATCHDOG, &t1), CR_OK);
    assert_int_equal(t1, 1);
    /* Every acquisition takes a token, a reentrant one too. */
    assert_int_equal(cr_fenced_lock_try_lock_and_get_token(a, 0, CR_LEASE_WATCHDOG, &t2),
                     CR_OK);
    assert_int_equal(t2, 2);
    assert_int_equal(cr_fenced_lock_try_lock_and_get_token(b, 0, CR_LEASE_WATCHDOG, &t3),
                     CR_BUSY);
    assert_int_equal(t3, 0);
    assert_int_equal(cr_lock_unlock(a), CR_OK);
    assert_int_equal(cr_lock_unlock(a), CR_OK);
    /* A plain lock call on a fenced lock takes a token as well. */
    assert_int_equal(cr_lock_lock(b, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(b), CR_OK);
    assert_int_equal(cr_fenced_lock_lock_and_get_token(b, 5000, &t3), CR_OK);
    assert_int_equal(t3, 4);
    assert_int_equal(cr_fenced_lock_get_token(a, &now), CR_OK);
    assert_int_equal(now, 4);
    /* The counter never expires; the lock hash is RLock's. */
    assert_int_equal(redis_int("PTTL redisson_lock_token:{fence}"), -1);
    assert_int_equal(redis_int("HLEN fence"), 1);
    assert_int_equal(cr_lock_unlock(b), CR_OK);
    /* Only a fenced lock has tokens; bad arguments are refused. */
    assert_int_equal(cr_fenced_lock_get_token(NULL, &now), CR_EINVAL);
    assert_int_equal(cr_fenced_lock_new(test_client, "x", NULL), CR_EINVAL);
    assert_int_equal(cr_fenced_lock_new(test_client, "", &b), CR_EINVAL);
    assert_int_equal(cr_spin_lock_new(test_client, "x", NULL), CR_EINVAL);
    assert_int_equal(cr_non_reentrant_lock_new(NULL, "x", &b), CR_EINVAL);
    cr_lock_free(a);
    cr_lock_free(b);
    cr_client_free(other);
}

static void
test_fenced_delete_removes_lock_and_counter_without_publishing(void **state)
{
    const char *channels[] = {"redisson_lock__channel:{fdel}"};
    cr_test_listener *ls = cr_test_listener_start(&test_redis, channels, 1);
    cr_lock *l;
    int64_t t = 0;
    bool deleted = false;
    redisReply *r;

    (void)state;
    assert_non_null(ls);
    assert_int_equal(cr_fenced_lock_new(test_client, "fdel", &l), CR_OK);
    assert_int_equal(cr_fenced_lock_lock_and_get_token(l, 10000, &t), CR_OK);
    assert_int_equal(cr_lock_delete(l, &deleted), CR_OK);
    assert_true(deleted);
    assert_int_equal(redis_int("EXISTS fdel redisson_lock_token:{fdel}"), 0);
    r = cr_test_redis_cmd(&test_redis, "PUBLISH redisson_lock__channel:{fdel} marker");
    freeReplyObject(r);
    assert_int_equal(cr_test_listener_wait(ls, 1, slow(2000)), 1);
    assert_string_equal(cr_test_listener_get(ls, 0)->payload, "marker");
    cr_test_listener_stop(ls);
    cr_lock_free(l);
}

/* Reads one "X <number>" line from `f`; returns the number or -999. */
static long long
read_line(FILE *f, char want)
{
    char line[64];

    if (fgets(line, sizeof(line), f) == NULL || line[0] != want)
        return -999;
    return atoll(line + 2);
}

static void
test_fenced_paused_holder_has_older_token_and_its_late_write_is_refused(void **state)
{
    const char *args[] = {"fenced", test_redis.url, "paused", "300",
                          "resource", NULL};
    cr_lock *l;
    int fd = -1;
    int64_t mine = 0;
    long long theirs, wrote, unlocked;
    pid_t pid;
    FILE *f;
    redisReply *r;

    (void)state;
    pid = cr_test_spawn("lock_worker", args, &fd);
    assert_true(pid > 0);
    f = fdopen(fd, "r");
    assert_non_null(f);
    theirs = read_line(f, 'T');
    assert_true(theirs >= 1);
    kill(pid, SIGSTOP); /* a GC pause, a swapped-out VM... past the lease */
    assert_int_equal(cr_fenced_lock_new(test_client, "paused", &l), CR_OK);
    assert_int_equal(cr_fenced_lock_try_lock_and_get_token(l, slow(5000), 10000, &mine),
                     CR_OK);
    assert_true(mine > theirs);
    r = cr_test_redis_cmd(&test_redis, "EVAL %s 1 resource %lld", GUARDED_WRITE,
                          (long long)mine);
    assert_non_null(r);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    kill(pid, SIGCONT);
    wrote = read_line(f, 'W');
    unlocked = read_line(f, 'U');
    fclose(f);
    waitpid(pid, NULL, 0);
    /* The late holder's write is refused and its unlock says it lost. */
    assert_int_equal(wrote, 0);
    assert_int_equal(unlocked, CR_ELOST);
    assert_int_equal(redis_int("HGET resource token"), mine);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

/* ------------------------------------------------------------ spin lock */

typedef struct spinner {
    cr_lock *lock;
    volatile long *value;
    int rounds;
    int errors;
} spinner;

static void *
spin_count(void *arg)
{
    spinner *s = arg;
    int i;

    for (i = 0; i < s->rounds; i++) {
        long v;

        if (cr_lock_try_lock(s->lock, slow(20000), CR_LEASE_WATCHDOG) != CR_OK) {
            s->errors++;
            continue;
        }
        v = *s->value;
        sched_yield();
        *s->value = v + 1;
        if (cr_lock_unlock(s->lock) != CR_OK)
            s->errors++;
    }
    return NULL;
}

static void
test_spin_lock_keeps_counter_exact_without_any_subscription(void **state)
{
    volatile long value = 0;
    long long subs = subscribes_seen();
    spinner s[4];
    pthread_t t[4];
    cr_lock *l;
    int i;

    (void)state;
    assert_int_equal(cr_spin_lock_new(test_client, "spin", &l), CR_OK);
    for (i = 0; i < 4; i++) {
        s[i].lock = l;
        s[i].value = &value;
        s[i].rounds = 25;
        s[i].errors = 0;
        assert_int_equal(pthread_create(&t[i], NULL, spin_count, &s[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(s[i].errors, 0);
    }
    assert_int_equal(value, 100);
    /* Waiters poll: nobody subscribed to anything meanwhile. */
    assert_int_equal(subscribes_seen(), subs);
    assert_int_equal(redis_int("EXISTS spin"), 0);
    cr_lock_free(l);
}

static void
test_spin_lock_and_rlock_of_the_same_name_exclude_each_other(void **state)
{
    const char *channels[] = {"redisson_lock__channel:{both}"};
    cr_client *other = new_client(30000);
    cr_test_listener *ls = cr_test_listener_start(&test_redis, channels, 1);
    cr_lock *spin, *plain;
    int64_t start;
    redisReply *r;

    (void)state;
    assert_non_null(ls);
    assert_int_equal(cr_spin_lock_new(test_client, "both", &spin), CR_OK);
    assert_int_equal(cr_lock_new(other, "both", &plain), CR_OK);
    assert_int_equal(cr_lock_lock(spin, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(plain, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_unlock(spin), CR_OK);
    assert_int_equal(cr_lock_lock(plain, slow(400)), CR_OK);
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(spin, 150, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_true(cr_test_now_ms() - start >= 140);
    /* The spin waiter gets the lock once the RLock's lease runs out. */
    assert_int_equal(cr_lock_try_lock(spin, slow(5000), CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(spin), CR_OK);
    /* The spin lock's unlocks published nothing. */
    r = cr_test_redis_cmd(&test_redis, "PUBLISH redisson_lock__channel:{both} marker");
    freeReplyObject(r);
    assert_int_equal(cr_test_listener_wait(ls, 1, slow(2000)), 1);
    assert_string_equal(cr_test_listener_get(ls, 0)->payload, "marker");
    assert_int_equal(cr_lock_unlock(plain), CR_ELOST);
    cr_test_listener_stop(ls);
    cr_lock_free(spin);
    cr_lock_free(plain);
    cr_client_free(other);
}

/* --------------------------------------------------- non-reentrant lock */

static void
test_non_reentrant_lock_refuses_the_owner_taking_it_again(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *l, *plain;
    int64_t n = 0;

    (void)state;
    assert_int_equal(cr_non_reentrant_lock_new(test_client, "once", &l), CR_OK);
    assert_int_equal(cr_lock_new(other, "once", &plain), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_EREENTRANT);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_EREENTRANT);
    assert_non_null(strstr(cr_last_error(), "once"));
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_int_equal(n, 1);
    /* It excludes an RLock of the same name, both ways. */
    assert_int_equal(cr_lock_try_lock(plain, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_try_lock(plain, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_unlock(plain), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_lock_free(plain);
    cr_client_free(other);
}

static void
test_non_reentrant_fair_lock_refuses_its_owner_and_keeps_the_queue(void **state)
{
    cr_client *other = new_client(30000);
    cr_lock *l, *fair;

    (void)state;
    assert_int_equal(cr_non_reentrant_fair_lock_new(test_client, "fonce", &l), CR_OK);
    assert_int_equal(cr_fair_lock_new(other, "fonce", &fair), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_EREENTRANT);
    assert_int_equal(cr_lock_try_lock(l, 100, CR_LEASE_WATCHDOG), CR_EREENTRANT);
    /* A refused re-acquire leaves no queue entry behind. */
    assert_int_equal(redis_int("EXISTS redisson_lock_queue:{fonce}"), 0);
    assert_int_equal(redis_int("HGET fonce %s:%lld", cr_client_id(test_client),
                               (long long)cr_thread_id()), 1);
    assert_int_equal(cr_lock_try_lock(fair, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_try_lock(fair, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(fair), CR_OK);
    cr_lock_free(l);
    cr_lock_free(fair);
    cr_client_free(other);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_fenced_tokens_strictly_increase_across_clients_and_reentry),
        T(test_fenced_delete_removes_lock_and_counter_without_publishing),
        T(test_fenced_paused_holder_has_older_token_and_its_late_write_is_refused),
        T(test_spin_lock_keeps_counter_exact_without_any_subscription),
        T(test_spin_lock_and_rlock_of_the_same_name_exclude_each_other),
        T(test_non_reentrant_lock_refuses_the_owner_taking_it_again),
        T(test_non_reentrant_fair_lock_refuses_its_owner_and_keeps_the_queue),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
