/* SPDX-License-Identifier: MIT */
/*
 * Conditions on a lock (cr_lock_condition): a signal wakes the longest
 * waiting waiter, which returns holding the lock with the hold count it
 * had; only a holder awaits or signals; a signal before any waiter is not
 * remembered; a waiter killed while waiting, or after it was signalled,
 * does not keep later signals from the living (its lease lapses and the
 * signal passes on); RLock, the fair lock and the write lock; the keys,
 * leases and messages as written; and the bounded buffer with producers
 * and consumers in separate processes, every item taken exactly once.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync_common.h"

#define OK(call) assert_int_equal((call), CR_OK)

/* ------------------------------------------------------------- helpers */

/* A waiter on its own thread: takes the lock `holds` times (lease_ms, or
 * the watchdog), awaits, and records what it found on its return. */
typedef struct waiter {
    cr_lock *lock;
    cr_lock_condition *cond;
    int holds;
    int64_t lease_ms;
    int64_t wait_ms;
    cr_status rc;
    int64_t holds_after; /* the hold count once await returned */
    bool held_after;
    int64_t returned_ms;
    char id[128];        /* <uuid>:<tid>, the waiter's entry */
    atomic_bool queued;  /* its id is set: it is about to await */
    atomic_bool done;
    pthread_t thread;
} waiter;

static void *
waiter_run(void *arg)
{
    waiter *w = arg;
    int i;

    for (i = 0; i < w->holds; i++)
        if (cr_lock_lock(w->lock, w->lease_ms) != CR_OK)
            return NULL;
    snprintf(w->id, sizeof(w->id), "%s:%lld",
             cr_client_id(test_client), (long long)cr_thread_id());
    atomic_store(&w->queued, true);
    w->rc = cr_lock_condition_await(w->cond, w->wait_ms);
    w->returned_ms = cr_test_now_ms();
    cr_lock_get_hold_count(w->lock, &w->holds_after);
    cr_lock_is_held_by_current_thread(w->lock, &w->held_after);
    for (i = 0; i < w->holds_after; i++)
        cr_lock_unlock(w->lock);
    atomic_store(&w->done, true);
    return NULL;
}

static void
waiter_start(waiter *w, cr_lock *l, cr_lock_condition *c, int holds,
             int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->cond = c;
    w->holds = holds;
    w->lease_ms = CR_LEASE_WATCHDOG;
    w->wait_ms = wait_ms;
    w->rc = CR_EINVAL;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

/* What waiting_is waits for: `n` waiters in the line of condition `c` of
 * lock `lock`. */
typedef struct line_wanted {
    const char *lock, *cond;
    long long n;
} line_wanted;

static bool
line_is(void *arg)
{
    line_wanted *w = arg;

    return redis_int("ZCARD credisson_condition_queue:{%s}:%s", w->lock,
                     w->cond) == w->n;
}

/* Waits until `n` waiters are in the line (and so have let the lock go,
 * or are about to). */
static void
await_line(const char *lock, const char *cond, long long n)
{
    line_wanted w = {lock, cond, n};

    assert_true(cr_test_wait_until(line_is, &w, slow(5000)));
}

/* Waits until lock `name` is free (the waiters let it go). */
static void
await_free(const char *name)
{
    assert_true(cr_test_wait_until(key_gone, (void *)name, slow(5000)));
}

static cr_lock_condition *
condition(cr_lock *l, const char *name)
{
    cr_lock_condition *c = NULL;

    OK(cr_lock_condition_new(l, name, &c));
    return c;
}

static cr_lock *
rlock(const char *name)
{
    cr_lock *l = NULL;

    OK(cr_lock_new(test_client, name, &l));
    return l;
}

/* Takes `l`, signals `c` once (or all), lets `l` go; returns how many
 * were signalled. */
static int64_t
signal_under(cr_lock *l, cr_lock_condition *c, bool all)
{
    int64_t n = 0;
    bool woke = false;

    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    if (all) {
        OK(cr_lock_condition_signal_all(c, &n));
    } else {
        OK(cr_lock_condition_signal(c, &woke));
        n = woke;
    }
    OK(cr_lock_unlock(l));
    return n;
}

/* ---------------------------------------------------------------- tests */

static void
test_condition_signal_wakes_the_waiter_with_its_holds_restored(void **state)
{
    cr_lock *l = rlock("holds");
    cr_lock_condition *c = condition(l, "ready");
    waiter w;

    (void)state;
    waiter_start(&w, l, c, 3, slow(10000));
    await_line("holds", "ready", 1);
    await_free("holds"); /* all three holds were let go */
    assert_int_equal(signal_under(l, c, false), 1);
    pthread_join(w.thread, NULL);
    OK(w.rc);
    assert_true(w.held_after);
    assert_int_equal(w.holds_after, 3);
    /* The waiter let its three holds go: nothing is left. */
    assert_int_equal(redis_int("EXISTS holds"), 0);
    assert_int_equal(redis_int("EXISTS credisson_condition:{holds}:ready"),
                     0);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

static void
test_condition_only_a_holder_awaits_or_signals(void **state)
{
    cr_lock *l = rlock("holder"), *other = NULL;
    cr_lock_condition *c = condition(l, "c");
    cr_client *c2 = new_client(30000);
    bool woke = true;
    int64_t n = 7;

    (void)state;
    assert_int_equal(cr_lock_condition_signal(c, &woke), CR_ENOTOWNER);
    assert_true(woke); /* untouched */
    assert_int_equal(cr_lock_condition_signal_all(c, &n), CR_ENOTOWNER);
    assert_int_equal(n, 7);
    assert_int_equal(cr_lock_condition_await(c, 0), CR_ENOTOWNER);
    /* Held by another client: still not this thread's. */
    OK(cr_lock_new(c2, "holder", &other));
    OK(cr_lock_lock(other, CR_LEASE_WATCHDOG));
    assert_int_equal(cr_lock_condition_signal(c, NULL), CR_ENOTOWNER);
    assert_int_equal(cr_lock_condition_await(c, 0), CR_ENOTOWNER);
    OK(cr_lock_unlock(other));
    assert_int_equal(redis_int("EXISTS credisson_condition:{holder}:c "
                               "credisson_condition_queue:{holder}:c "
                               "credisson_condition_leases:{holder}:c"), 0);
    /* Bad arguments and the locks without conditions. */
    assert_int_equal(cr_lock_condition_new(l, "", &c), CR_EINVAL);
    assert_int_equal(cr_lock_condition_new(NULL, "c", &c), CR_EINVAL);
    assert_int_equal(cr_lock_condition_new(l, "c", NULL), CR_EINVAL);
    assert_int_equal(cr_lock_condition_await(c, -5), CR_EINVAL);
    {
        cr_rwlock *rw = NULL;
        cr_lock_condition *rc = NULL;

        OK(cr_rwlock_new(test_client, "rw", &rw));
        assert_int_equal(cr_lock_condition_new(cr_rwlock_read_lock(rw), "c",
                                               &rc),
                         CR_ENOTSUP);
        assert_null(rc);
        cr_rwlock_free(rw);
    }
    cr_lock_free(other);
    cr_client_free(c2);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

static void
test_condition_signal_before_any_waiter_is_not_remembered(void **state)
{
    cr_lock *l = rlock("early");
    cr_lock_condition *c = condition(l, "c");
    int64_t t0, ttl = 0, count = 0;

    (void)state;
    assert_int_equal(signal_under(l, c, false), 0);
    assert_int_equal(signal_under(l, c, true), 0);
    OK(cr_lock_lock(l, 5000)); /* an explicit lease this time */
    t0 = cr_test_now_ms();
    assert_int_equal(cr_lock_condition_await(c, 300), CR_TIMEOUT);
    assert_true(cr_test_now_ms() - t0 >= 300);
    /* Held again, with the lease it had (not the watchdog's). */
    OK(cr_lock_get_hold_count(l, &count));
    assert_int_equal(count, 1);
    OK(cr_lock_remain_time_to_live(l, &ttl));
    assert_true(ttl > 4000 && ttl <= 5000);
    OK(cr_lock_unlock(l));
    assert_int_equal(redis_int("EXISTS credisson_condition:{early}:c "
                               "credisson_condition_queue:{early}:c "
                               "credisson_condition_leases:{early}:c"), 0);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

static void
test_condition_signals_go_in_arrival_order(void **state)
{
    cr_lock *l = rlock("order");
    cr_lock_condition *c = condition(l, "c");
    waiter w[3];
    int i;

    (void)state;
    for (i = 0; i < 3; i++) {
        waiter_start(&w[i], l, c, 1, slow(10000));
        await_line("order", "c", i + 1);
    }
    await_free("order");
    assert_int_equal(signal_under(l, c, false), 1);
    pthread_join(w[0].thread, NULL);
    OK(w[0].rc);
    assert_true(w[0].held_after);
    /* The others still wait. */
    assert_int_equal(redis_int("ZCARD credisson_condition_queue:{order}:c"),
                     2);
    assert_false(atomic_load(&w[1].done) || atomic_load(&w[2].done));
    assert_int_equal(signal_under(l, c, true), 2);
    for (i = 1; i < 3; i++) {
        pthread_join(w[i].thread, NULL);
        OK(w[i].rc);
        assert_true(w[i].held_after);
    }
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

static void
test_condition_wire_keys_leases_and_messages(void **state)
{
    const char *channels[2] = {"redisson_lock__channel:{wire}",
                               "credisson_condition__channel:{wire}:c"};
    cr_test_listener *li = cr_test_listener_start(&test_redis, channels, 2);
    cr_lock *l = rlock("wire");
    cr_lock_condition *c = condition(l, "c");
    waiter w;
    char state_s[8];
    long long seq, deadline, now_ms;

    (void)state;
    waiter_start(&w, l, c, 1, slow(10000));
    await_line("wire", "c", 1);
    await_free("wire");
    /* The await let the lock go with RLock's own unlock: its 0. */
    assert_int_equal(cr_test_listener_wait(li, 1, slow(2000)), 1);
    assert_string_equal(cr_test_listener_get(li, 0)->channel, channels[0]);
    assert_string_equal(cr_test_listener_get(li, 0)->payload, "0");
    assert_true(redis_str(state_s, sizeof(state_s),
                          "HGET credisson_condition:{wire}:c %s", w.id) > 0);
    assert_string_equal(state_s, "w");
    seq = redis_int("HGET credisson_condition:{wire}:c seq");
    assert_int_equal(redis_int("ZSCORE credisson_condition_queue:{wire}:c %s",
                               w.id), seq);
    deadline = redis_int("ZSCORE credisson_condition_leases:{wire}:c %s",
                         w.id);
    now_ms = redis_int("EVAL %s 0", "local t = redis.call('time') return "
                       "t[1] * 1000 + math.floor(t[2] / 1000)");
    /* The lease is the client's watchdog timeout (30 s), renewed. */
    assert_true(deadline > now_ms && deadline <= now_ms + 30000);
    assert_int_equal(signal_under(l, c, false), 1);
    pthread_join(w.thread, NULL);
    OK(w.rc);
    /* "1" on the condition's channel, then the lock's traffic. */
    assert_true(cr_test_listener_wait(li, 2, slow(2000)) >= 2);
    assert_string_equal(cr_test_listener_get(li, 1)->channel, channels[1]);
    assert_string_equal(cr_test_listener_get(li, 1)->payload, "1");
    assert_int_equal(redis_int("EXISTS credisson_condition:{wire}:c "
                               "credisson_condition_queue:{wire}:c "
                               "credisson_condition_leases:{wire}:c"), 0);
    cr_test_listener_stop(li);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

/* A waiter and its signaller on one lock of another kind; when `channel`
 * is not NULL, the await's release must publish `message` on it first,
 * as the kind's own unlock does. */
static void
wait_and_signal_on(cr_lock *l, const char *key, const char *channel,
                   const char *message)
{
    cr_test_listener *li = channel != NULL
                               ? cr_test_listener_start(&test_redis, &channel,
                                                        1)
                               : NULL;
    cr_lock_condition *c = condition(l, "c");
    waiter w;

    waiter_start(&w, l, c, 2, slow(10000));
    await_line(key, "c", 1);
    await_free(key);
    if (li != NULL) {
        /* Two holds: a partial unlock (nothing), then the release. */
        assert_int_equal(cr_test_listener_wait(li, 1, slow(2000)), 1);
        assert_string_equal(cr_test_listener_get(li, 0)->payload, message);
        cr_test_listener_stop(li);
    }
    assert_int_equal(signal_under(l, c, false), 1);
    pthread_join(w.thread, NULL);
    OK(w.rc);
    assert_true(w.held_after);
    assert_int_equal(w.holds_after, 2);
    cr_lock_condition_free(c);
}

static void
test_condition_on_the_fair_lock_and_the_write_lock(void **state)
{
    cr_lock *fair = NULL;
    cr_rwlock *rw = NULL;

    (void)state;
    OK(cr_fair_lock_new(test_client, "fair", &fair));
    wait_and_signal_on(fair, "fair", NULL, NULL);
    OK(cr_rwlock_new(test_client, "rw", &rw));
    /* The write lock's own unlock publishes 1 on redisson_rwlock:{rw}. */
    wait_and_signal_on(cr_rwlock_write_lock(rw), "rw", "redisson_rwlock:{rw}",
                       "1");
    /* A reader does not hold the write lock: no signal from it. */
    {
        cr_lock_condition *c = condition(cr_rwlock_write_lock(rw), "c");

        OK(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG));
        assert_int_equal(cr_lock_condition_signal(c, NULL), CR_ENOTOWNER);
        OK(cr_lock_unlock(cr_rwlock_read_lock(rw)));
        cr_lock_condition_free(c);
    }
    cr_rwlock_free(rw);
    cr_lock_free(fair);
}

/* The watchdog timeout of a waiter that is killed (coord_worker's
 * argument): its lease in the line lapses between two thirds of it and all
 * of it after the kill. */
#define DEAD_WATCHDOG "6000"

/* Starts a coord_worker process that takes lock `name` with leases of
 * lease_ms, awaits its condition not-empty and is to be killed; returns
 * once it waits in line. */
static pid_t
dying_waiter(const char *name, const char *lease_ms, long long in_line)
{
    const char *args[] = {"condition-wait", test_redis.url, name, lease_ms,
                          NULL};
    char line[32];
    int out = -1;
    pid_t pid = cr_test_spawn("coord_worker", args, &out);

    assert_true(pid > 0);
    assert_true(cr_test_read_line(out, line, sizeof(line), -1));
    assert_string_equal(line, "waiting");
    close(out);
    await_line(name, "not-empty", in_line);
    return pid;
}

static void
kill_and_reap(pid_t pid)
{
    int status = 0;

    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void
test_condition_a_killed_waiter_does_not_keep_later_signals(void **state)
{
    cr_lock *l = rlock("dead");
    cr_lock_condition *c = condition(l, "not-empty");
    waiter w;
    int64_t signalled;
    pid_t dead;

    (void)state;
    /* The first in line dies while it waits, once the living one is in
     * line behind it: only the signal below lies between the kill and its
     * lease's end (at least two thirds of its watchdog timeout), so a
     * loaded machine does not see the living one settle it first. */
    dead = dying_waiter("dead", DEAD_WATCHDOG, 1);
    waiter_start(&w, l, c, 1, slow(30000));
    await_line("dead", "not-empty", 2);
    kill_and_reap(dead);
    /* The signal goes to the dead one, first in line with its lease still
     * standing; the living one stays in line... */
    signalled = cr_test_now_ms();
    assert_int_equal(signal_under(l, c, false), 1);
    assert_int_equal(redis_int("ZCARD credisson_condition_queue:{dead}:"
                               "not-empty"), 1);
    /* ...until that lease lapses and the signal passes on to it, within
     * the dead one's lease, not its own 30 s wait. */
    pthread_join(w.thread, NULL);
    OK(w.rc);
    assert_true(w.held_after);
    assert_true(w.returned_ms - signalled <= atol(DEAD_WATCHDOG) + slow(1000));
    /* A later signal finds nobody: the dead one is gone too. */
    assert_int_equal(signal_under(l, c, false), 0);
    assert_int_equal(redis_int("EXISTS credisson_condition:{dead}:not-empty"),
                     0);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

/* cr_object_inspect on the lock: its conditions with waiters, the
 * signalled first (here a dead one, its signal not taken), then the line;
 * once the last waiter has left, the lock's registry of conditions is
 * gone with the condition's keys. */
static void
test_condition_inspect_shows_the_waiters(void **state)
{
    cr_lock *l = rlock("seen");
    cr_lock_condition *c = condition(l, "not-empty");
    cr_object_info *info = NULL;
    const cr_condition_waiter_info *dead, *alive;
    waiter w;
    pid_t dead_pid;

    (void)state;
    dead_pid = dying_waiter("seen", DEAD_WATCHDOG, 1);
    waiter_start(&w, l, c, 1, slow(30000));
    await_line("seen", "not-empty", 2);
    kill_and_reap(dead_pid);
    assert_int_equal(signal_under(l, c, false), 1);
    OK(cr_object_inspect(test_client, "seen", &info));
    /* Nobody holds the lock, but it has a condition with waiters. */
    assert_int_equal(info->kind, CR_OBJECT_LOCK);
    assert_int_equal(info->nconditions, 1);
    assert_string_equal(info->conditions[0].name, "not-empty");
    assert_int_equal(info->conditions[0].waiting, 1);
    assert_int_equal(info->conditions[0].nwaiters, 2);
    dead = &info->conditions[0].waiters[0];
    alive = &info->conditions[0].waiters[1];
    assert_true(dead->signalled);
    assert_true(dead->has_lease);
    assert_false(alive->signalled);
    assert_true(alive->has_lease && alive->lease_ms > info->now_ms);
    assert_int_equal(alive->who.owner_len, strlen(w.id));
    assert_memory_equal(alive->who.owner, w.id, strlen(w.id));
    assert_int_equal(alive->who.presence, CR_PRESENCE_CONNECTED);
    assert_int_equal(alive->who.pid, (long)getpid());
    cr_object_info_free(info);
    /* The dead one's lease lapses, its signal passes on, the line empties. */
    pthread_join(w.thread, NULL);
    OK(w.rc);
    assert_int_equal(redis_int("EXISTS credisson_conditions:{seen} "
                               "credisson_condition:{seen}:not-empty"), 0);
    OK(cr_object_inspect(test_client, "seen", &info));
    assert_int_equal(info->kind, CR_OBJECT_NONE);
    assert_int_equal(info->nconditions, 0);
    cr_object_info_free(info);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

/* Whether the earliest lease in the zset `arg` has lapsed on the server's
 * clock. */
static bool
earliest_lease_lapsed(void *arg)
{
    long long first = redis_int("EVAL %s 1 %s",
                                "local e = redis.call('zrange', KEYS[1], 0, "
                                "0, 'withscores')[2] "
                                "local t = redis.call('time') "
                                "local now = t[1] * 1000 + "
                                "math.floor(t[2] / 1000) "
                                "if e and tonumber(e) <= now then return 1 "
                                "end return 0",
                                (const char *)arg);

    return first == 1;
}

static void
test_condition_a_waiter_dead_for_its_lease_is_skipped(void **state)
{
    cr_lock *l = rlock("lapsed");
    cr_lock_condition *c = condition(l, "not-empty");

    (void)state;
    kill_and_reap(dying_waiter("lapsed", "300", 1));
    await_free("lapsed");
    /* Its lease (300 ms) lapses on the server's clock; nobody looked
     * since, so it is still first in line: the signal drops it and counts
     * nobody signalled. */
    assert_true(cr_test_wait_until(earliest_lease_lapsed,
                                   "credisson_condition_leases:{lapsed}:"
                                   "not-empty", slow(3000)));
    assert_int_equal(redis_int("ZCARD credisson_condition_queue:{lapsed}:"
                               "not-empty"), 1);
    assert_int_equal(signal_under(l, c, false), 0);
    assert_int_equal(redis_int("EXISTS credisson_conditions:{lapsed} "
                               "credisson_condition:{lapsed}:not-empty "
                               "credisson_condition_queue:{lapsed}:not-empty "
                               "credisson_condition_leases:{lapsed}:not-empty"),
                     0);
    cr_lock_condition_free(c);
    cr_lock_free(l);
}

#define PRODUCERS 2
#define CONSUMERS 3
#define ITEMS 60 /* per producer */

static void
test_condition_bounded_buffer_across_processes(void **state)
{
    pid_t producers[PRODUCERS], consumers[CONSUMERS];
    int out[CONSUMERS], seen[PRODUCERS * ITEMS];
    char total[16], first[16], count[16];
    int i, taken = 0;

    (void)state;
    memset(seen, 0, sizeof(seen));
    snprintf(total, sizeof(total), "%d", PRODUCERS * ITEMS);
    snprintf(count, sizeof(count), "%d", ITEMS);
    for (i = 0; i < CONSUMERS; i++) {
        const char *a[] = {"consume", test_redis.url, "buf", total, "3",
                           NULL};

        consumers[i] = cr_test_spawn("coord_worker", a, &out[i]);
        assert_true(consumers[i] > 0);
    }
    for (i = 0; i < PRODUCERS; i++) {
        const char *a[] = {"produce", test_redis.url, "buf", first, count,
                           "3", NULL};

        snprintf(first, sizeof(first), "%d", i * ITEMS);
        producers[i] = cr_test_spawn("coord_worker", a, NULL);
        assert_true(producers[i] > 0);
    }
    for (i = 0; i < CONSUMERS; i++) {
        char line[32];

        while (cr_test_read_line(out[i], line, sizeof(line), -1)) {
            int item = atoi(line);

            assert_true(item >= 0 && item < PRODUCERS * ITEMS);
            seen[item]++;
            taken++;
        }
        close(out[i]);
    }
    for (i = 0; i < PRODUCERS; i++)
        reap_ok(producers[i]);
    for (i = 0; i < CONSUMERS; i++)
        reap_ok(consumers[i]);
    /* Every item taken exactly once, nothing left over. */
    assert_int_equal(taken, PRODUCERS * ITEMS);
    for (i = 0; i < PRODUCERS * ITEMS; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(redis_int("LLEN buf:items"), 0);
    assert_int_equal(redis_int("EXISTS buf"), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_condition_signal_wakes_the_waiter_with_its_holds_restored),
        T(test_condition_only_a_holder_awaits_or_signals),
        T(test_condition_signal_before_any_waiter_is_not_remembered),
        T(test_condition_signals_go_in_arrival_order),
        T(test_condition_wire_keys_leases_and_messages),
        T(test_condition_on_the_fair_lock_and_the_write_lock),
        T(test_condition_a_killed_waiter_does_not_keep_later_signals),
        T(test_condition_a_waiter_dead_for_its_lease_is_skipped),
        T(test_condition_inspect_shows_the_waiters),
        T(test_condition_bounded_buffer_across_processes),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
