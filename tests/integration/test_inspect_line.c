/* SPDX-License-Identifier: MIT */
/*
 * cr_object_inspect reads credisson's waiting line (lua/lib/line.lua) in
 * its snapshot: its length and its entries in order, each with when it
 * came, whether it holds a turn and until when, what it wants and its
 * client, for a lock, a write lock behind readers and a semaphore. Each
 * waiter has a client of its own, as separate processes would: the line
 * then holds one entry per client, in the order they came.
 */
#include "fault_server.h"
#include "lock_common.h"

#define OK(call) assert_int_equal((call), CR_OK)

/* A waiting thread: a lock's side taken and given back for owner `tid`,
 * or `permits` of a semaphore taken and given back. */
typedef struct waiter {
    pthread_t thread;
    cr_lock *lock;
    cr_semaphore *sem;
    int64_t tid, permits;
    cr_status rc;
} waiter;

static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    if (w->lock != NULL) {
        w->rc = cr_lock_try_lock_tid(w->lock, w->tid, slow(20000), 30000);
        if (w->rc == CR_OK)
            w->rc = cr_lock_unlock_tid(w->lock, w->tid);
    } else {
        w->rc = cr_semaphore_try_acquire(w->sem, w->permits, slow(20000));
        if (w->rc == CR_OK)
            w->rc = cr_semaphore_release(w->sem, w->permits);
    }
    return NULL;
}

/* Starts waiter `w` and waits until the line of `name` holds `place`
 * entries (it is the last of them); fails the test otherwise. */
static void
waiter_start(waiter *w, const char *name, long long place)
{
    line_of want = {name, place};

    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
    assert_true(cr_test_wait_until(line_reaches, &want, slow(5000)));
}

/* Joins waiter `w`: it got what it waited for. */
static void
waiter_join(waiter *w)
{
    pthread_join(w->thread, NULL);
    assert_int_equal(w->rc, CR_OK);
}

/* A client on the test server whose line turns (given by its releases)
 * last `turn_ms`. */
static cr_client *
client_with_turn(int64_t turn_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char url[64];

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", test_redis.port);
    o.url = url;
    o.line_turn_ms = turn_ms;
    o.command_timeout_ms = slow(2000);
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    return c;
}

/* Asserts that entry `e` is the waiter `tid` of client `c`, still
 * waiting: in line since [after, now], wanting `permits`, to write or not,
 * its waiting lease (of the 30 s watchdog) ahead, its client connected. */
static void
assert_waiting(const cr_object_info *in, const cr_line_waiter_info *e,
               cr_client *c, int64_t tid, long long after, int64_t permits,
               bool writer)
{
    char entry[64];

    if (tid >= 0) {
        snprintf(entry, sizeof(entry), "%s:%lld", cr_client_id(c),
                 (long long)tid);
        assert_int_equal(e->who.owner_len, strlen(entry));
        assert_memory_equal(e->who.owner, entry, strlen(entry));
    } else {
        assert_int_equal(strncmp(e->who.owner, cr_client_id(c), 36), 0);
    }
    assert_int_equal(e->who.presence, CR_PRESENCE_CONNECTED);
    assert_true(e->has_state);
    assert_true(e->since_ms >= after && e->since_ms <= in->now_ms);
    assert_int_equal(e->permits, permits);
    assert_int_equal(e->writer, writer);
    assert_false(e->turn);
    assert_true(e->lease_ms > in->now_ms &&
                e->lease_ms <= in->now_ms + 30000);
}

/* A lock's waiters of three clients are listed in the order they came,
 * each with its arrival time, lease and client; once the lock is given
 * back, the first holds a turn (of the releaser's length) while the
 * others wait on; when all are served, no line is left. */
static void
test_inspect_lists_a_locks_waiters_in_line_order_with_the_first_turn(
    void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *holder = client_with_turn(30000), *c[3];
    cr_lock *held, *want[3];
    cr_object_info *in = NULL;
    waiter w[3];
    long long before;
    int i;

    (void)state;
    assert_non_null(relay);
    /* The first waiter's client goes through the relay, to be frozen. */
    c[0] = client_on_port(cr_test_relay_port(relay), 30000, slow(15000));
    c[1] = new_client(30000);
    c[2] = new_client(30000);
    OK(cr_lock_new(holder, "seen", &held));
    OK(cr_lock_lock(held, 30000));
    OK(cr_object_inspect(test_client, "seen", &in));
    assert_int_equal(in->line_length, 0); /* held, nobody waits */
    assert_int_equal(in->nline, 0);
    assert_null(in->line);
    cr_object_info_free(in);
    before = server_ms();
    for (i = 0; i < 3; i++) {
        assert_non_null(c[i]);
        OK(cr_lock_new(c[i], "seen", &want[i]));
        w[i] = (waiter){.lock = want[i], .tid = 10 + i};
        waiter_start(&w[i], "seen", i + 1);
    }
    OK(cr_object_inspect(test_client, "seen", &in));
    assert_int_equal(in->kind, CR_OBJECT_LOCK);
    assert_int_equal(in->line_length, 3);
    assert_int_equal(in->nline, 3);
    for (i = 0; i < 3; i++)
        assert_waiting(in, &in->line[i], c[i], 10 + i, before, 1, false);
    assert_true(in->line[0].since_ms <= in->line[1].since_ms &&
                in->line[1].since_ms <= in->line[2].since_ms);
    cr_object_info_free(in);
    /* Given back while the first cannot hear it: its turn shows. */
    cr_test_relay_freeze(relay, true, true);
    before = server_ms();
    OK(cr_lock_unlock(held));
    OK(cr_object_inspect(test_client, "seen", &in));
    assert_int_equal(in->line_length, 3);
    assert_int_equal(in->nline, 3);
    assert_true(in->line[0].turn);
    assert_true(in->line[0].lease_ms >= before + 30000 &&
                in->line[0].lease_ms <= in->now_ms + 30000);
    assert_false(in->line[1].turn);
    assert_false(in->line[2].turn);
    cr_object_info_free(in);
    cr_test_relay_thaw(relay);
    for (i = 0; i < 3; i++)
        waiter_join(&w[i]);
    OK(cr_object_inspect(test_client, "seen", &in));
    assert_int_equal(in->line_length, 0);
    assert_int_equal(in->nline, 0);
    cr_object_info_free(in);
    for (i = 0; i < 3; i++) {
        cr_lock_free(want[i]);
        cr_client_free(c[i]);
    }
    cr_lock_free(held);
    cr_client_free(holder);
    cr_test_relay_stop(relay);
}

/* A writer waiting behind a reader is listed first, as a writer under its
 * thread's reader name; a reader that came after it waits behind it (the
 * line keeps new readers out while a writer waits) and is listed so. */
static void
test_inspect_lists_a_writer_in_line_behind_the_readers(void **state)
{
    cr_client *c[3];
    cr_rwlock *rw[3];
    cr_object_info *in = NULL;
    waiter w[2];
    long long before;
    int i;

    (void)state;
    for (i = 0; i < 3; i++) {
        assert_non_null(c[i] = new_client(30000));
        OK(cr_rwlock_new(c[i], "rw", &rw[i]));
    }
    OK(cr_lock_lock_tid(cr_rwlock_read_lock(rw[0]), 1, 30000));
    before = server_ms();
    w[0] = (waiter){.lock = cr_rwlock_write_lock(rw[1]), .tid = 2};
    waiter_start(&w[0], "rw", 1);
    w[1] = (waiter){.lock = cr_rwlock_read_lock(rw[2]), .tid = 3};
    waiter_start(&w[1], "rw", 2);
    OK(cr_object_inspect(test_client, "rw", &in));
    assert_int_equal(in->kind, CR_OBJECT_RWLOCK);
    assert_string_equal(in->mode, "read");
    assert_int_equal(in->nholders, 1);
    assert_int_equal(in->line_length, 2);
    assert_int_equal(in->nline, 2);
    assert_waiting(in, &in->line[0], c[1], 2, before, 1, true);
    assert_waiting(in, &in->line[1], c[2], 3, before, 1, false);
    cr_object_info_free(in);
    OK(cr_lock_unlock_tid(cr_rwlock_read_lock(rw[0]), 1));
    waiter_join(&w[0]);
    waiter_join(&w[1]);
    for (i = 0; i < 3; i++) {
        cr_rwlock_free(rw[i]);
        cr_client_free(c[i]);
    }
}

/* A semaphore's waiters are listed with the permits each wants, in order:
 * while its permits were never set (no object yet: the line shows all the
 * same), and while a permit is there that the first cannot use (it wants
 * two, and the one behind it does not pass it). */
static void
test_inspect_lists_a_semaphores_waiters_with_the_permits_they_want(
    void **state)
{
    cr_client *c[2];
    cr_semaphore *sem[2], *mine;
    cr_object_info *in = NULL;
    waiter w[2];
    long long before;
    int i;

    (void)state;
    before = server_ms();
    for (i = 0; i < 2; i++) {
        assert_non_null(c[i] = new_client(30000));
        OK(cr_semaphore_new(c[i], "sem", &sem[i]));
        w[i] = (waiter){.sem = sem[i], .permits = 2 - i};
        waiter_start(&w[i], "sem", i + 1);
    }
    OK(cr_object_inspect(test_client, "sem", &in));
    assert_int_equal(in->kind, CR_OBJECT_NONE);
    assert_int_equal(in->line_length, 2);
    assert_int_equal(in->nline, 2);
    assert_waiting(in, &in->line[0], c[0], -1, before, 2, false);
    assert_waiting(in, &in->line[1], c[1], -1, before, 1, false);
    cr_object_info_free(in);
    OK(cr_semaphore_new(test_client, "sem", &mine));
    OK(cr_semaphore_release(mine, 1));
    OK(cr_object_inspect(test_client, "sem", &in));
    assert_true(in->has_value);
    assert_int_equal(in->value, 1);
    assert_int_equal(in->line_length, 2);
    assert_int_equal(in->nline, 2);
    assert_int_equal(in->line[0].permits, 2);
    assert_false(in->line[0].turn);
    assert_int_equal(in->line[1].permits, 1);
    assert_false(in->line[1].turn);
    cr_object_info_free(in);
    OK(cr_semaphore_release(mine, 2));
    for (i = 0; i < 2; i++) {
        waiter_join(&w[i]);
        cr_semaphore_free(sem[i]);
        cr_client_free(c[i]);
    }
    OK(cr_object_inspect(test_client, "sem", &in));
    assert_int_equal(in->value, 3);
    assert_int_equal(in->line_length, 0);
    assert_int_equal(in->nline, 0);
    cr_object_info_free(in);
    cr_semaphore_free(mine);
}

/* A plain integer that nobody listens on is a semaphore when credisson's
 * waiting line holds an entry for it: a latch has no line. */
static void
test_inspect_a_plain_integer_with_a_line_is_a_semaphore(void **state)
{
    cr_object_info *in = NULL;

    (void)state;
    assert_true(redis_ok("SET quiet 0"));
    OK(cr_object_inspect(test_client, "quiet", &in));
    assert_int_equal(in->kind, CR_OBJECT_SEMAPHORE_OR_LATCH);
    cr_object_info_free(in);
    /* One entry, as a waiter that joined and has not subscribed yet. */
    assert_int_equal(redis_int("ZADD credisson_line:{quiet} 1 gone:1"), 1);
    OK(cr_object_inspect(test_client, "quiet", &in));
    assert_int_equal(in->kind, CR_OBJECT_SEMAPHORE);
    assert_int_equal(in->line_length, 1);
    assert_int_equal(in->value, 0);
    cr_object_info_free(in);
    assert_int_equal(redis_int("DEL quiet credisson_line:{quiet}"), 2);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_inspect_lists_a_locks_waiters_in_line_order_with_the_first_turn),
        T(test_inspect_lists_a_writer_in_line_behind_the_readers),
        T(test_inspect_lists_a_semaphores_waiters_with_the_permits_they_want),
        T(test_inspect_a_plain_integer_with_a_line_is_a_semaphore),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
