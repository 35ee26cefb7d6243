/* SPDX-License-Identifier: MIT */
/*
 * Bad input and misuse: every public call with NULL handles and
 * out-parameters, NULL, empty, enormous and braced names, durations,
 * permits and counts out of range, the documented misuses of live handles
 * (double unlock, unlock of a lock never taken), and a server in the wrong
 * state: a key of another type, an ACL user without the rights the
 * scripts need, a wrong password, and something that is not Redis at all
 * on the port. Each call must fail cleanly, with a status and a message in
 * cr_last_error(), and never crash or hang. The security tests check that
 * AUTH works with a password and with an ACL user, and that no password
 * ever shows up in an error or a log line.
 */
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "credisson/rwlock.h"
#include "lock_common.h"

/* ------------------------------------------------------------- helpers */

/* Checks that `rc` is `want` and, for a failure, that a message says why. */
static void
check_status(cr_status rc, cr_status want, const char *what)
{
    if (rc != want) {
        fprintf(stderr, "%s: got %s, want %s (%s)\n", what, cr_strerror(rc),
                cr_strerror(want), cr_last_error());
        fail();
    }
    if (want >= CR_ENOTOWNER && cr_last_error()[0] == '\0') {
        fprintf(stderr, "%s: %s without a message\n", what, cr_strerror(rc));
        fail();
    }
}

#define EXPECT(call, want) check_status((call), (want), #call)

/* The durations every duration argument must refuse. */
static const int64_t bad_durations[] = {
    -2, -1000, INT64_MIN, CR_DURATION_MAX + 1, INT64_MAX,
};
#define NBAD_DURATIONS (sizeof(bad_durations) / sizeof(bad_durations[0]))

/* The counts every permit or count argument must refuse. */
static const int64_t bad_counts[] = {
    -1, -2, INT64_MIN, CR_PERMITS_MAX + 1, INT64_MAX,
};
#define NBAD_COUNTS (sizeof(bad_counts) / sizeof(bad_counts[0]))

/* Every way to make a lock handle from a client and a name. */
typedef cr_status (*lock_ctor)(cr_client *, const char *, cr_lock **);
static const struct {
    const char *kind;
    lock_ctor make;
} lock_ctors[] = {
    {"lock", cr_lock_new},
    {"fair", cr_fair_lock_new},
    {"fenced", cr_fenced_lock_new},
    {"spin", cr_spin_lock_new},
    {"nonreentrant", cr_non_reentrant_lock_new},
    {"nonreentrant-fair", cr_non_reentrant_fair_lock_new},
};
#define NCTORS (sizeof(lock_ctors) / sizeof(lock_ctors[0]))

/* --------------------------------------------------------- NULL handles */

static void
test_misuse_null_handles_are_refused_with_einval_and_a_message(void **state)
{
    char id[CR_PERMIT_ID_LEN + 1] = "0123456789abcdef0123456789abcdef";
    int64_t n = 7;
    bool b = true;
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    (void)state;
    /* Frees of NULL do nothing; names of NULL are "". */
    cr_client_free(NULL);
    cr_lock_free(NULL);
    cr_rwlock_free(NULL);
    cr_semaphore_free(NULL);
    cr_permit_semaphore_free(NULL);
    cr_latch_free(NULL);
    assert_string_equal(cr_client_id(NULL), "");
    assert_string_equal(cr_lock_name(NULL), "");
    assert_string_equal(cr_semaphore_name(NULL), "");
    assert_string_equal(cr_permit_semaphore_name(NULL), "");
    assert_string_equal(cr_latch_name(NULL), "");
    assert_null(cr_rwlock_read_lock(NULL));
    assert_null(cr_rwlock_write_lock(NULL));
    EXPECT(cr_client_stats_get(NULL, &st), CR_EINVAL);

    EXPECT(cr_lock_lock(NULL, CR_LEASE_WATCHDOG), CR_EINVAL);
    EXPECT(cr_lock_try_lock(NULL, 0, CR_LEASE_WATCHDOG), CR_EINVAL);
    EXPECT(cr_lock_unlock(NULL), CR_EINVAL);
    EXPECT(cr_lock_lock_tid(NULL, 1, CR_LEASE_WATCHDOG), CR_EINVAL);
    EXPECT(cr_lock_try_lock_tid(NULL, 1, 0, CR_LEASE_WATCHDOG), CR_EINVAL);
    EXPECT(cr_lock_unlock_tid(NULL, 1), CR_EINVAL);
    EXPECT(cr_lock_force_unlock(NULL, &b), CR_EINVAL);
    EXPECT(cr_lock_delete(NULL, &b), CR_EINVAL);
    EXPECT(cr_lock_is_locked(NULL, &b), CR_EINVAL);
    EXPECT(cr_lock_is_held_by_current_thread(NULL, &b), CR_EINVAL);
    EXPECT(cr_lock_is_held_by_thread(NULL, 1, &b), CR_EINVAL);
    EXPECT(cr_lock_get_hold_count(NULL, &n), CR_EINVAL);
    EXPECT(cr_lock_get_hold_count_tid(NULL, 1, &n), CR_EINVAL);
    EXPECT(cr_lock_remain_time_to_live(NULL, &n), CR_EINVAL);
    EXPECT(cr_lock_is_lost(NULL, &b), CR_EINVAL);
    EXPECT(cr_lock_is_lost_tid(NULL, 1, &b), CR_EINVAL);
    EXPECT(cr_lock_set_lost_callback(NULL, NULL, NULL), CR_EINVAL);
    EXPECT(cr_fenced_lock_try_lock_and_get_token(NULL, 0, CR_LEASE_WATCHDOG, &n),
           CR_EINVAL);
    EXPECT(cr_fenced_lock_lock_and_get_token(NULL, CR_LEASE_WATCHDOG, &n),
           CR_EINVAL);
    EXPECT(cr_fenced_lock_get_token(NULL, &n), CR_EINVAL);
    EXPECT(cr_multilock_get_validity(NULL, &n), CR_EINVAL);
    EXPECT(cr_rwlock_delete(NULL, &b), CR_EINVAL);

    EXPECT(cr_semaphore_try_set_permits(NULL, 1, 0, &b), CR_EINVAL);
    EXPECT(cr_semaphore_acquire(NULL, 1), CR_EINVAL);
    EXPECT(cr_semaphore_try_acquire(NULL, 1, 0), CR_EINVAL);
    EXPECT(cr_semaphore_release(NULL, 1), CR_EINVAL);
    EXPECT(cr_semaphore_release_if_exists(NULL, 1, &b), CR_EINVAL);
    EXPECT(cr_semaphore_add_permits(NULL, 1), CR_EINVAL);
    EXPECT(cr_semaphore_set_permits(NULL, 1), CR_EINVAL);
    EXPECT(cr_semaphore_drain_permits(NULL, &n), CR_EINVAL);
    EXPECT(cr_semaphore_available_permits(NULL, &n), CR_EINVAL);
    EXPECT(cr_semaphore_delete(NULL, &b), CR_EINVAL);

    EXPECT(cr_permit_semaphore_acquire(NULL, 1000, id), CR_EINVAL);
    EXPECT(cr_permit_semaphore_try_acquire(NULL, 0, 1000, id), CR_EINVAL);
    EXPECT(cr_permit_semaphore_release(NULL, id), CR_EINVAL);
    EXPECT(cr_permit_semaphore_try_release(NULL, id, &b), CR_EINVAL);
    EXPECT(cr_permit_semaphore_update_lease_time(NULL, id, 1000, &b), CR_EINVAL);
    EXPECT(cr_permit_semaphore_get_lease_time(NULL, id, &n), CR_EINVAL);
    EXPECT(cr_permit_semaphore_available_permits(NULL, &n), CR_EINVAL);
    EXPECT(cr_permit_semaphore_acquired_permits(NULL, &n), CR_EINVAL);
    EXPECT(cr_permit_semaphore_get_permits(NULL, &n), CR_EINVAL);
    EXPECT(cr_permit_semaphore_try_set_permits(NULL, 1, &b), CR_EINVAL);
    EXPECT(cr_permit_semaphore_set_permits(NULL, 1), CR_EINVAL);
    EXPECT(cr_permit_semaphore_add_permits(NULL, 1), CR_EINVAL);
    EXPECT(cr_permit_semaphore_delete(NULL, &b), CR_EINVAL);

    EXPECT(cr_latch_try_set_count(NULL, 1, 0, &b), CR_EINVAL);
    EXPECT(cr_latch_count_down(NULL), CR_EINVAL);
    EXPECT(cr_latch_get_count(NULL, &n), CR_EINVAL);
    EXPECT(cr_latch_await(NULL, 0), CR_EINVAL);
    EXPECT(cr_latch_delete(NULL, &b), CR_EINVAL);
    /* Out-parameters stay untouched on failure. */
    assert_int_equal(n, 7);
    assert_true(b);
    assert_string_equal(id, "0123456789abcdef0123456789abcdef");
}

static void
test_misuse_null_client_name_and_out_are_refused_by_constructors(void **state)
{
    cr_lock *l = NULL;
    cr_rwlock *rw = NULL;
    cr_semaphore *s = NULL;
    cr_permit_semaphore *ps = NULL;
    cr_latch *la = NULL;
    size_t i;

    (void)state;
    EXPECT(cr_client_new(NULL, NULL), CR_EINVAL);
    for (i = 0; i < NCTORS; i++) {
        EXPECT(lock_ctors[i].make(NULL, "x", &l), CR_EINVAL);
        EXPECT(lock_ctors[i].make(test_client, NULL, &l), CR_EINVAL);
        EXPECT(lock_ctors[i].make(test_client, "", &l), CR_EINVAL);
        EXPECT(lock_ctors[i].make(test_client, "x", NULL), CR_EINVAL);
        assert_null(l);
    }
    EXPECT(cr_rwlock_new(NULL, "x", &rw), CR_EINVAL);
    EXPECT(cr_rwlock_new(test_client, NULL, &rw), CR_EINVAL);
    EXPECT(cr_rwlock_new(test_client, "", &rw), CR_EINVAL);
    EXPECT(cr_rwlock_new(test_client, "x", NULL), CR_EINVAL);
    EXPECT(cr_semaphore_new(NULL, "x", &s), CR_EINVAL);
    EXPECT(cr_semaphore_new(test_client, NULL, &s), CR_EINVAL);
    EXPECT(cr_semaphore_new(test_client, "", &s), CR_EINVAL);
    EXPECT(cr_semaphore_new(test_client, "x", NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_new(NULL, "x", &ps), CR_EINVAL);
    EXPECT(cr_permit_semaphore_new(test_client, NULL, &ps), CR_EINVAL);
    EXPECT(cr_permit_semaphore_new(test_client, "", &ps), CR_EINVAL);
    EXPECT(cr_permit_semaphore_new(test_client, "x", NULL), CR_EINVAL);
    EXPECT(cr_latch_new(NULL, "x", &la), CR_EINVAL);
    EXPECT(cr_latch_new(test_client, NULL, &la), CR_EINVAL);
    EXPECT(cr_latch_new(test_client, "", &la), CR_EINVAL);
    EXPECT(cr_latch_new(test_client, "x", NULL), CR_EINVAL);
    assert_null(rw);
    assert_null(s);
    assert_null(ps);
    assert_null(la);
}

static void
test_misuse_null_out_parameters_are_refused(void **state)
{
    cr_lock *l, *f, *m;
    cr_semaphore *s;
    cr_permit_semaphore *ps;
    cr_latch *la;
    char id[CR_PERMIT_ID_LEN + 1];

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "outs", &l), CR_OK);
    assert_int_equal(cr_fenced_lock_new(test_client, "outs-f", &f), CR_OK);
    assert_int_equal(cr_multilock_new(&l, 1, &m), CR_OK);
    assert_int_equal(cr_semaphore_new(test_client, "outs-s", &s), CR_OK);
    assert_int_equal(cr_permit_semaphore_new(test_client, "outs-p", &ps), CR_OK);
    assert_int_equal(cr_latch_new(test_client, "outs-l", &la), CR_OK);
    EXPECT(cr_client_stats_get(test_client, NULL), CR_EINVAL);
    EXPECT(cr_lock_is_locked(l, NULL), CR_EINVAL);
    EXPECT(cr_lock_is_held_by_current_thread(l, NULL), CR_EINVAL);
    EXPECT(cr_lock_is_held_by_thread(l, 1, NULL), CR_EINVAL);
    EXPECT(cr_lock_get_hold_count(l, NULL), CR_EINVAL);
    EXPECT(cr_lock_get_hold_count_tid(l, 1, NULL), CR_EINVAL);
    EXPECT(cr_lock_remain_time_to_live(l, NULL), CR_EINVAL);
    EXPECT(cr_lock_is_lost(l, NULL), CR_EINVAL);
    EXPECT(cr_lock_is_lost_tid(l, 1, NULL), CR_EINVAL);
    EXPECT(cr_fenced_lock_get_token(f, NULL), CR_EINVAL);
    EXPECT(cr_fenced_lock_try_lock_and_get_token(f, 0, CR_LEASE_WATCHDOG, NULL),
           CR_EINVAL);
    EXPECT(cr_fenced_lock_lock_and_get_token(f, CR_LEASE_WATCHDOG, NULL),
           CR_EINVAL);
    EXPECT(cr_multilock_get_validity(m, NULL), CR_EINVAL);
    EXPECT(cr_semaphore_available_permits(s, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_acquire(ps, 1000, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_try_acquire(ps, 0, 1000, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_release(ps, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_try_release(ps, NULL, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_update_lease_time(ps, NULL, 1000, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_get_lease_time(ps, NULL, NULL), CR_EINVAL);
    memset(id, 'a', CR_PERMIT_ID_LEN);
    id[CR_PERMIT_ID_LEN] = '\0';
    EXPECT(cr_permit_semaphore_get_lease_time(ps, id, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_available_permits(ps, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_acquired_permits(ps, NULL), CR_EINVAL);
    EXPECT(cr_permit_semaphore_get_permits(ps, NULL), CR_EINVAL);
    EXPECT(cr_latch_get_count(la, NULL), CR_EINVAL);
    /* Malformed permit ids: empty, too short, not hexadecimal, too long. */
    EXPECT(cr_permit_semaphore_release(ps, ""), CR_EINVAL);
    EXPECT(cr_permit_semaphore_release(ps, "abc"), CR_EINVAL);
    EXPECT(cr_permit_semaphore_release(ps, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"),
           CR_EINVAL);
    EXPECT(cr_permit_semaphore_release(ps, "0123456789abcdef0123456789abcdef0"),
           CR_EINVAL);
    cr_latch_free(la);
    cr_permit_semaphore_free(ps);
    cr_semaphore_free(s);
    cr_lock_free(m);
    cr_lock_free(f);
    cr_lock_free(l);
}

/* ----------------------------------------------------------------- names */

static void
test_misuse_enormous_and_braced_names_work_for_every_kind(void **state)
{
    const size_t big = 1u << 20;
    char *huge = malloc(big + 1);
    const char *names[] = {NULL, "a{b}c", "{", "}", "{}", "}{", "x{y",
                           "sp ace\n\t", "\xc3\xa9t\xc3\xa9"};
    size_t i, k;

    (void)state;
    assert_non_null(huge);
    memset(huge, 'n', big);
    huge[big] = '\0';
    names[0] = huge;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        cr_semaphore *s;
        cr_latch *la;
        cr_rwlock *rw;
        int64_t n = -1;

        for (k = 0; k < NCTORS; k++) {
            cr_lock *l;
            bool locked = false;

            EXPECT(lock_ctors[k].make(test_client, names[i], &l), CR_OK);
            EXPECT(cr_lock_try_lock(l, 0, 10000), CR_OK);
            EXPECT(cr_lock_is_locked(l, &locked), CR_OK);
            assert_true(locked);
            EXPECT(cr_lock_unlock(l), CR_OK);
            EXPECT(cr_lock_unlock(l), CR_ENOTOWNER);
            EXPECT(cr_lock_delete(l, NULL), CR_OK);
            cr_lock_free(l);
        }
        EXPECT(cr_rwlock_new(test_client, names[i], &rw), CR_OK);
        EXPECT(cr_lock_try_lock(cr_rwlock_write_lock(rw), 0, 10000), CR_OK);
        EXPECT(cr_lock_unlock(cr_rwlock_write_lock(rw)), CR_OK);
        cr_rwlock_free(rw);
        EXPECT(cr_semaphore_new(test_client, names[i], &s), CR_OK);
        EXPECT(cr_semaphore_try_set_permits(s, 1, 0, NULL), CR_OK);
        EXPECT(cr_semaphore_try_acquire(s, 1, 0), CR_OK);
        EXPECT(cr_semaphore_release(s, 1), CR_OK);
        EXPECT(cr_semaphore_delete(s, NULL), CR_OK);
        cr_semaphore_free(s);
        EXPECT(cr_latch_new(test_client, names[i], &la), CR_OK);
        EXPECT(cr_latch_try_set_count(la, 1, 0, NULL), CR_OK);
        EXPECT(cr_latch_count_down(la), CR_OK);
        EXPECT(cr_latch_get_count(la, &n), CR_OK);
        assert_int_equal(n, 0);
        cr_latch_free(la);
    }
    /* The braced name is used as given: the lock key is a{b}c itself. */
    assert_int_equal(redis_int("EXISTS %s", "a{b}c"), 0);
    free(huge);
}

/* ------------------------------------------------------ numbers in range */

static void
test_misuse_out_of_range_durations_are_refused(void **state)
{
    char id[CR_PERMIT_ID_LEN + 1];
    cr_lock *l, *f;
    cr_semaphore *s;
    cr_permit_semaphore *ps;
    cr_latch *la;
    int64_t token = 0;
    size_t i;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "durations", &l), CR_OK);
    assert_int_equal(cr_fenced_lock_new(test_client, "durations-f", &f), CR_OK);
    assert_int_equal(cr_semaphore_new(test_client, "durations-s", &s), CR_OK);
    assert_int_equal(cr_permit_semaphore_new(test_client, "durations-p", &ps),
                     CR_OK);
    assert_int_equal(cr_permit_semaphore_try_set_permits(ps, 1, NULL), CR_OK);
    assert_int_equal(cr_latch_new(test_client, "durations-l", &la), CR_OK);
    for (i = 0; i < NBAD_DURATIONS; i++) {
        int64_t d = bad_durations[i];

        EXPECT(cr_lock_lock(l, d), CR_EINVAL);
        EXPECT(cr_lock_try_lock(l, d, CR_LEASE_WATCHDOG), CR_EINVAL);
        EXPECT(cr_lock_try_lock(l, 0, d), CR_EINVAL);
        EXPECT(cr_lock_lock_tid(l, 1, d), CR_EINVAL);
        EXPECT(cr_lock_try_lock_tid(l, 1, d, 1000), CR_EINVAL);
        EXPECT(cr_fenced_lock_try_lock_and_get_token(f, d, 1000, &token),
               CR_EINVAL);
        EXPECT(cr_fenced_lock_lock_and_get_token(f, d, &token), CR_EINVAL);
        EXPECT(cr_semaphore_try_acquire(s, 1, d), CR_EINVAL);
        EXPECT(cr_semaphore_try_set_permits(s, 1, d, NULL), CR_EINVAL);
        EXPECT(cr_permit_semaphore_try_acquire(ps, d, 1000, id), CR_EINVAL);
        EXPECT(cr_permit_semaphore_try_acquire(ps, 0, d, id), CR_EINVAL);
        EXPECT(cr_permit_semaphore_acquire(ps, d, id), CR_EINVAL);
        EXPECT(cr_latch_await(la, d), CR_EINVAL);
        EXPECT(cr_latch_try_set_count(la, 1, d, NULL), CR_EINVAL);
    }
    /* A lease of 0 is neither the watchdog nor a lease. */
    EXPECT(cr_lock_try_lock(l, 0, 0), CR_EINVAL);
    EXPECT(cr_permit_semaphore_try_acquire(ps, 0, 0, id), CR_EINVAL);
    /* Nothing was taken on the way. */
    assert_int_equal(redis_int("EXISTS durations"), 0);
    assert_int_equal(token, 0);
    cr_latch_free(la);
    cr_permit_semaphore_free(ps);
    cr_semaphore_free(s);
    cr_lock_free(f);
    cr_lock_free(l);
}

static void
test_misuse_out_of_range_permits_and_counts_are_refused(void **state)
{
    cr_semaphore *s;
    cr_permit_semaphore *ps;
    cr_latch *la;
    size_t i;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "counts-s", &s), CR_OK);
    assert_int_equal(cr_permit_semaphore_new(test_client, "counts-p", &ps), CR_OK);
    assert_int_equal(cr_latch_new(test_client, "counts-l", &la), CR_OK);
    for (i = 0; i < NBAD_COUNTS; i++) {
        int64_t v = bad_counts[i];

        EXPECT(cr_semaphore_try_set_permits(s, v, 0, NULL), CR_EINVAL);
        EXPECT(cr_semaphore_acquire(s, v), CR_EINVAL);
        EXPECT(cr_semaphore_try_acquire(s, v, 0), CR_EINVAL);
        EXPECT(cr_semaphore_release(s, v), CR_EINVAL);
        EXPECT(cr_semaphore_release_if_exists(s, v, NULL), CR_EINVAL);
        EXPECT(cr_semaphore_set_permits(s, v), CR_EINVAL);
        EXPECT(cr_permit_semaphore_try_set_permits(ps, v, NULL), CR_EINVAL);
        EXPECT(cr_permit_semaphore_set_permits(ps, v), CR_EINVAL);
        EXPECT(cr_latch_try_set_count(la, v, 0, NULL), CR_EINVAL);
    }
    /* Deltas may be negative, down to -CR_PERMITS_MAX. */
    EXPECT(cr_semaphore_add_permits(s, CR_PERMITS_MAX + 1), CR_EINVAL);
    EXPECT(cr_semaphore_add_permits(s, -CR_PERMITS_MAX - 1), CR_EINVAL);
    EXPECT(cr_semaphore_add_permits(s, INT64_MIN), CR_EINVAL);
    EXPECT(cr_permit_semaphore_add_permits(ps, INT64_MAX), CR_EINVAL);
    EXPECT(cr_permit_semaphore_add_permits(ps, INT64_MIN), CR_EINVAL);
    /* Nothing was created on the way. */
    assert_int_equal(redis_int("EXISTS counts-s"), 0);
    assert_int_equal(redis_int("EXISTS counts-p"), 0);
    assert_int_equal(redis_int("EXISTS counts-l"), 0);
    cr_latch_free(la);
    cr_permit_semaphore_free(ps);
    cr_semaphore_free(s);
}

static void
test_misuse_permit_lease_calls_refuse_malformed_ids_and_leases(void **state)
{
    static const char *const bad_ids[] = {
        "",
        "abc",
        "0123456789abcdef0123456789abcde",   /* 31 digits */
        "0123456789abcdef0123456789abcdef0", /* 33 digits */
        "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
        "0123456789abcdef0123456789abcdeg",
        "0123456789abcdef 123456789abcdef",
        "0x23456789abcdef0123456789abcdef",
    };
    char id[CR_PERMIT_ID_LEN + 1], cut[CR_PERMIT_ID_LEN + 1];
    cr_permit_semaphore *ps;
    int64_t left = 7;
    bool updated = true;
    size_t i;

    (void)state;
    assert_int_equal(cr_permit_semaphore_new(test_client, "leases-p", &ps),
                     CR_OK);
    EXPECT(cr_permit_semaphore_update_lease_time(ps, NULL, 1000, &updated),
           CR_EINVAL);
    EXPECT(cr_permit_semaphore_get_lease_time(ps, NULL, &left), CR_EINVAL);
    for (i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
        EXPECT(cr_permit_semaphore_update_lease_time(ps, bad_ids[i], 1000,
                                                     &updated),
               CR_EINVAL);
        EXPECT(cr_permit_semaphore_update_lease_time(ps, bad_ids[i],
                                                     CR_LEASE_NONE, NULL),
               CR_EINVAL);
        EXPECT(cr_permit_semaphore_get_lease_time(ps, bad_ids[i], &left),
               CR_EINVAL);
    }
    /* Refused before anything was sent: the semaphore is still not there. */
    assert_int_equal(count_keys("*"), 0);
    /* With a permit out: a malformed form of its id is refused as such,
     * not looked up, and no bad lease replaces the one it has. */
    assert_int_equal(cr_permit_semaphore_try_set_permits(ps, 1, NULL), CR_OK);
    assert_int_equal(cr_permit_semaphore_acquire(ps, 60000, id), CR_OK);
    memcpy(cut, id, sizeof(cut));
    cut[CR_PERMIT_ID_LEN - 1] = '\0';
    EXPECT(cr_permit_semaphore_update_lease_time(ps, cut, 1000, &updated),
           CR_EINVAL);
    EXPECT(cr_permit_semaphore_get_lease_time(ps, cut, &left), CR_EINVAL);
    for (i = 0; i < NBAD_DURATIONS; i++)
        EXPECT(cr_permit_semaphore_update_lease_time(ps, id, bad_durations[i],
                                                     &updated),
               CR_EINVAL);
    EXPECT(cr_permit_semaphore_update_lease_time(ps, id, 0, &updated),
           CR_EINVAL);
    /* Out-parameters stay untouched on failure. */
    assert_true(updated);
    assert_int_equal(left, 7);
    EXPECT(cr_permit_semaphore_get_lease_time(ps, id, &left), CR_OK);
    assert_true(left > 1000 && left <= 60000);
    EXPECT(cr_permit_semaphore_release(ps, id), CR_OK);
    EXPECT(cr_permit_semaphore_delete(ps, NULL), CR_OK);
    assert_int_equal(count_keys("*"), 0);
    cr_permit_semaphore_free(ps);
}

static void
test_misuse_bad_multilock_sets_are_refused(void **state)
{
    cr_lock *locks[65], *m = NULL, *other;
    cr_client *second = new_client(300);
    int64_t v = 0;
    size_t i;

    (void)state;
    assert_non_null(second);
    for (i = 0; i < 65; i++) {
        char name[16];

        snprintf(name, sizeof(name), "ml%zu", i);
        assert_int_equal(cr_lock_new(test_client, name, &locks[i]), CR_OK);
    }
    EXPECT(cr_multilock_new(NULL, 1, &m), CR_EINVAL);
    EXPECT(cr_multilock_new(locks, 0, &m), CR_EINVAL);
    EXPECT(cr_multilock_new(locks, 65, &m), CR_EINVAL);
    EXPECT(cr_multilock_new(locks, SIZE_MAX, &m), CR_EINVAL);
    EXPECT(cr_multilock_new(locks, 2, NULL), CR_EINVAL);
    EXPECT(cr_redlock_new(NULL, 1, &m), CR_EINVAL);
    EXPECT(cr_redlock_new(locks, 0, &m), CR_EINVAL);
    EXPECT(cr_redlock_new(locks, 65, &m), CR_EINVAL);
    EXPECT(cr_redlock_new(locks, 3, NULL), CR_EINVAL);
    other = locks[1];
    locks[1] = locks[0];
    EXPECT(cr_multilock_new(locks, 2, &m), CR_EINVAL); /* the same twice */
    EXPECT(cr_redlock_new(locks, 3, &m), CR_EINVAL);
    locks[1] = NULL;
    EXPECT(cr_multilock_new(locks, 2, &m), CR_EINVAL);
    EXPECT(cr_redlock_new(locks, 3, &m), CR_EINVAL);
    locks[1] = other;
    /* A NULL first sub-lock, the one a multilock takes its client from. */
    other = locks[0];
    locks[0] = NULL;
    EXPECT(cr_multilock_new(locks, 3, &m), CR_EINVAL);
    EXPECT(cr_redlock_new(locks, 3, &m), CR_EINVAL);
    locks[0] = other;
    assert_null(m);
    /* A multilock answers the calls it has no meaning for clearly. */
    assert_int_equal(cr_multilock_new(locks, 64, &m), CR_OK);
    EXPECT(cr_multilock_get_validity(m, &v), CR_EINVAL); /* never taken */
    EXPECT(cr_lock_force_unlock(m, NULL), CR_ENOTSUP);
    EXPECT(cr_lock_delete(m, NULL), CR_ENOTSUP);
    EXPECT(cr_lock_unlock(m), CR_ENOTOWNER);
    /* Validity and fencing calls on the wrong kind. */
    EXPECT(cr_multilock_get_validity(locks[0], &v), CR_EINVAL);
    EXPECT(cr_fenced_lock_get_token(locks[0], &v), CR_EINVAL);
    assert_int_equal(v, 0);
    cr_lock_free(m);
    for (i = 0; i < 65; i++)
        cr_lock_free(locks[i]);
    cr_client_free(second);
}

/* ------------------------------------------------- documented misuses */

static void
test_misuse_double_unlock_and_unlock_of_a_never_locked_lock(void **state)
{
    size_t k;
    cr_rwlock *rw;
    cr_lock *nr;

    (void)state;
    for (k = 0; k < NCTORS; k++) {
        cr_lock *l;

        assert_int_equal(lock_ctors[k].make(test_client, "twice", &l), CR_OK);
        EXPECT(cr_lock_unlock(l), CR_ENOTOWNER);
        EXPECT(cr_lock_unlock_tid(l, -5), CR_ENOTOWNER);
        EXPECT(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
        EXPECT(cr_lock_unlock(l), CR_OK);
        EXPECT(cr_lock_unlock(l), CR_ENOTOWNER);
        cr_lock_free(l);
    }
    assert_int_equal(cr_rwlock_new(test_client, "twice-rw", &rw), CR_OK);
    EXPECT(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_ENOTOWNER);
    EXPECT(cr_lock_unlock(cr_rwlock_write_lock(rw)), CR_ENOTOWNER);
    /* The sides belong to the rwlock: freeing one alone does nothing. */
    cr_lock_free(cr_rwlock_read_lock(rw));
    EXPECT(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG), CR_OK);
    EXPECT(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    cr_rwlock_free(rw);
    /* Taking a non-reentrant lock twice is refused, and it stays held. */
    assert_int_equal(cr_non_reentrant_lock_new(test_client, "twice-nr", &nr),
                     CR_OK);
    EXPECT(cr_lock_lock(nr, CR_LEASE_WATCHDOG), CR_OK);
    EXPECT(cr_lock_try_lock(nr, 0, CR_LEASE_WATCHDOG), CR_EREENTRANT);
    EXPECT(cr_lock_unlock(nr), CR_OK);
    EXPECT(cr_lock_unlock(nr), CR_ENOTOWNER);
    cr_lock_free(nr);
}

static void
test_misuse_fencing_calls_on_other_kinds_are_refused(void **state)
{
    cr_lock *subs[2], *sides[3];
    cr_rwlock *rw;
    int64_t token = 7;
    bool locked = true;
    size_t k;

    (void)state;
    for (k = 0; k < NCTORS; k++) {
        cr_lock *l;

        if (strcmp(lock_ctors[k].kind, "fenced") == 0)
            continue;
        assert_int_equal(lock_ctors[k].make(test_client, "unfenced", &l), CR_OK);
        EXPECT(cr_fenced_lock_try_lock_and_get_token(l, 0, CR_LEASE_WATCHDOG,
                                                     &token),
               CR_EINVAL);
        EXPECT(cr_fenced_lock_try_lock_and_get_token(l, 0, 10000, &token),
               CR_EINVAL);
        EXPECT(cr_fenced_lock_lock_and_get_token(l, CR_LEASE_WATCHDOG, &token),
               CR_EINVAL);
        EXPECT(cr_fenced_lock_lock_and_get_token(l, 10000, &token), CR_EINVAL);
        /* Nothing was taken on the way. */
        EXPECT(cr_lock_is_locked(l, &locked), CR_OK);
        assert_false(locked);
        locked = true;
        EXPECT(cr_lock_is_held_by_current_thread(l, &locked), CR_OK);
        assert_false(locked);
        locked = true;
        cr_lock_free(l);
    }
    /* The sides of a rwlock and a multilock are not fenced either. */
    assert_int_equal(cr_rwlock_new(test_client, "unfenced-rw", &rw), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "unfenced-a", &subs[0]), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "unfenced-b", &subs[1]), CR_OK);
    sides[0] = cr_rwlock_read_lock(rw);
    sides[1] = cr_rwlock_write_lock(rw);
    assert_int_equal(cr_multilock_new(subs, 2, &sides[2]), CR_OK);
    for (k = 0; k < 3; k++) {
        EXPECT(cr_fenced_lock_try_lock_and_get_token(sides[k], 0,
                                                     CR_LEASE_WATCHDOG, &token),
               CR_EINVAL);
        EXPECT(cr_fenced_lock_lock_and_get_token(sides[k], 10000, &token),
               CR_EINVAL);
        EXPECT(cr_fenced_lock_get_token(sides[k], &token), CR_EINVAL);
    }
    EXPECT(cr_lock_unlock(sides[2]), CR_ENOTOWNER);
    assert_int_equal(token, 7);
    assert_int_equal(count_keys("*"), 0);
    cr_lock_free(sides[2]);
    cr_lock_free(subs[1]);
    cr_lock_free(subs[0]);
    cr_rwlock_free(rw);
}

static void
test_misuse_strerror_of_unknown_codes_is_a_text(void **state)
{
    static const int codes[] = {-1000, -1, (int)CR_ENOTSUP + 1, 1000,
                                INT_MIN, INT_MAX};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *text = cr_strerror((cr_status)codes[i]);

        assert_non_null(text);
        assert_true(text[0] != '\0');
        /* An unknown code is never called a success. */
        assert_string_not_equal(text, cr_strerror(CR_OK));
    }
}

static void
test_misuse_a_cleared_lost_callback_is_not_called(void **state)
{
    lost_record cleared = LOST_RECORD_INIT;
    lost_record witness = LOST_RECORD_INIT;
    cr_lock *l, *w;
    bool lost = true;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "cleared", &l), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "witness", &w), CR_OK);
    EXPECT(cr_lock_set_lost_callback(l, on_lost, &cleared), CR_OK);
    EXPECT(cr_lock_set_lost_callback(l, NULL, NULL), CR_OK);
    EXPECT(cr_lock_set_lost_callback(w, on_lost, &witness), CR_OK);
    EXPECT(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    EXPECT(cr_lock_lock(w, CR_LEASE_WATCHDOG), CR_OK);
    EXPECT(cr_lock_is_lost(l, &lost), CR_OK);
    assert_false(lost);
    /* The hold is deleted behind its holder; the watchdog (300 ms) finds
     * it gone. */
    assert_int_equal(redis_int("DEL cleared"), 1);
    assert_true(cr_test_wait_until(lock_is_lost, l, slow(3000)));
    /* The witness is found lost in the same watchdog round or a later
     * one: its callback runs after any the first loss queued. */
    assert_int_equal(redis_int("DEL witness"), 1);
    assert_true(cr_test_wait_until(lost_called, &witness, slow(3000)));
    assert_int_equal(lost_calls(&witness), 1);
    assert_int_equal(lost_calls(&cleared), 0);
    EXPECT(cr_lock_is_lost(l, &lost), CR_OK);
    assert_true(lost);
    EXPECT(cr_lock_unlock(l), CR_ELOST);
    EXPECT(cr_lock_unlock(w), CR_ELOST);
    assert_int_equal(count_keys("*"), 0);
    cr_lock_free(w);
    cr_lock_free(l);
}

static void
test_misuse_bad_client_options_and_urls_are_refused(void **state)
{
    static const char *const urls[] = {
        "", "http://127.0.0.1", "rediss-unix:///tmp/x.sock",
        "redis://127.0.0.1:0", "redis://127.0.0.1:65536",
        "redis://127.0.0.1:-1", "redis://[::1", "redis://host:port",
        "redis://127.0.0.1/notadb", "redis://127.0.0.1/99999999999",
        "unix://", "redis://a b:1",
    };
    cr_client_options o;
    cr_client *c = NULL;
    char *long_url;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
        o = (cr_client_options)CR_CLIENT_OPTIONS_INIT;
        o.url = urls[i];
        EXPECT(cr_client_new(&o, &c), CR_EINVAL);
    }
    long_url = malloc((1u << 20) + 16);
    assert_non_null(long_url);
    strcpy(long_url, "redis://");
    memset(long_url + 8, 'h', 1u << 20);
    long_url[8 + (1u << 20)] = '\0';
    o.url = long_url;
    EXPECT(cr_client_new(&o, &c), CR_EINVAL);
    free(long_url);
#define BAD_OPTION(field, value)                                              \
    do {                                                                      \
        o = (cr_client_options)CR_CLIENT_OPTIONS_INIT;                        \
        o.url = test_redis.url;                                               \
        o.field = (value);                                                    \
        EXPECT(cr_client_new(&o, &c), CR_EINVAL);                             \
    } while (0)
    BAD_OPTION(connect_timeout_ms, -1);
    BAD_OPTION(command_timeout_ms, INT64_MIN);
    BAD_OPTION(command_timeout_ms, INT64_MAX);
    BAD_OPTION(pool_size, -1);
    BAD_OPTION(pool_size, INT_MAX);
    BAD_OPTION(lock_watchdog_timeout_ms, 10);
    BAD_OPTION(lock_watchdog_timeout_ms, INT64_MAX);
    BAD_OPTION(lock_watchdog_batch_size, -3);
    BAD_OPTION(fair_lock_wait_timeout_ms, -1);
    BAD_OPTION(subscription_timeout_ms, -1);
    BAD_OPTION(reconnect_window_ms, -1);
    BAD_OPTION(subscription_timeout_ms, INT64_MAX);
    BAD_OPTION(reconnect_window_ms, INT64_MAX);
    BAD_OPTION(replica_sync_timeout_ms, -1);
    BAD_OPTION(replica_sync_timeout_ms, INT64_MIN);
    BAD_OPTION(replica_sync_timeout_ms, 3600001);
    BAD_OPTION(replica_sync_timeout_ms, INT64_MAX);
    BAD_OPTION(sharded_pubsub, (cr_sharded_pubsub)-1);
    BAD_OPTION(sharded_pubsub, (cr_sharded_pubsub)(CR_SHARDED_OFF + 1));
    BAD_OPTION(sharded_pubsub, (cr_sharded_pubsub)INT_MAX);
    BAD_OPTION(client_name, "two words");
    BAD_OPTION(client_name, "new\nline");
    /* TLS settings with a URL that does not ask for TLS. */
    BAD_OPTION(tls_ca_file, "/etc/ssl/certs/ca-certificates.crt");
    BAD_OPTION(tls_insecure, true);
#undef BAD_OPTION
    assert_null(c);
}

/* -------------------------------------------------- wrong server state */

static void
test_misuse_key_of_another_type_gives_eserver_with_wrongtype(void **state)
{
    char id[CR_PERMIT_ID_LEN + 1];
    cr_semaphore *s;
    cr_permit_semaphore *ps;
    cr_latch *la;
    cr_rwlock *rw;
    int64_t n;
    size_t k;

    (void)state;
    assert_int_equal(redis_int("RPUSH %s x", "wrong"), 1);
    for (k = 0; k < NCTORS; k++) {
        cr_lock *l;
        int64_t start = cr_test_now_ms();

        assert_int_equal(lock_ctors[k].make(test_client, "wrong", &l), CR_OK);
        /* An error ends a wait at once: it is not retried. */
        EXPECT(cr_lock_try_lock(l, slow(5000), CR_LEASE_WATCHDOG), CR_ESERVER);
        assert_non_null(strstr(cr_last_error(), "WRONGTYPE"));
        assert_true(cr_test_now_ms() - start < slow(2000));
        EXPECT(cr_lock_unlock(l), CR_ESERVER);
        assert_non_null(strstr(cr_last_error(), "WRONGTYPE"));
        EXPECT(cr_lock_get_hold_count(l, &n), CR_ESERVER);
        cr_lock_free(l);
    }
    assert_int_equal(cr_rwlock_new(test_client, "wrong", &rw), CR_OK);
    EXPECT(cr_lock_try_lock(cr_rwlock_write_lock(rw), 0, 1000), CR_ESERVER);
    EXPECT(cr_lock_try_lock(cr_rwlock_read_lock(rw), 0, 1000), CR_ESERVER);
    cr_rwlock_free(rw);
    assert_int_equal(cr_semaphore_new(test_client, "wrong", &s), CR_OK);
    EXPECT(cr_semaphore_try_acquire(s, 1, 0), CR_ESERVER);
    assert_non_null(strstr(cr_last_error(), "WRONGTYPE"));
    EXPECT(cr_semaphore_release(s, 1), CR_ESERVER);
    EXPECT(cr_semaphore_available_permits(s, &n), CR_ESERVER);
    cr_semaphore_free(s);
    assert_int_equal(cr_permit_semaphore_new(test_client, "wrong", &ps), CR_OK);
    EXPECT(cr_permit_semaphore_try_acquire(ps, 0, 1000, id), CR_ESERVER);
    cr_permit_semaphore_free(ps);
    assert_int_equal(cr_latch_new(test_client, "wrong", &la), CR_OK);
    EXPECT(cr_latch_get_count(la, &n), CR_ESERVER);
    EXPECT(cr_latch_count_down(la), CR_ESERVER);
    cr_latch_free(la);
    /* The list is untouched. */
    assert_int_equal(redis_int("LLEN %s", "wrong"), 1);
}

/* Runs an admin command on the group server; fails the test on error. */
static void
admin(const char *fmt, ...)
{
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r;
    va_list ap;

    assert_non_null(c);
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "admin: %s\n", r->str);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    redisFree(c);
}

/* A client for user `user` with password `pw` on the group server. */
static cr_status
client_as(const char *user, const char *pw, cr_client **out)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    char url[256];

    snprintf(url, sizeof(url), "redis://%s:%s@127.0.0.1:%d", user, pw,
             test_redis.port);
    o.url = url;
    o.command_timeout_ms = slow(2000);
    o.lock_watchdog_timeout_ms = 3000;
    return cr_client_new(&o, out);
}

static void
test_misuse_acl_user_without_eval_or_publish_gets_enoperm(void **state)
{
    cr_client *noeval = NULL, *nopub = NULL;
    cr_lock *l;
    int64_t n = 0;

    (void)state;
    admin("ACL SETUSER noeval on >pw-noeval ~* &* +@all -eval -evalsha");
    admin("ACL SETUSER nopub on >pw-nopub ~* &* +@all -publish");
    assert_int_equal(client_as("noeval", "pw-noeval", &noeval), CR_OK);
    assert_int_equal(client_as("nopub", "pw-nopub", &nopub), CR_OK);
    /* Without EVAL nothing that runs a script works; plain queries do. */
    assert_int_equal(cr_lock_new(noeval, "acl", &l), CR_OK);
    EXPECT(cr_lock_try_lock(l, slow(2000), CR_LEASE_WATCHDOG), CR_ENOPERM);
    assert_non_null(strstr(cr_last_error(), "NOPERM"));
    EXPECT(cr_lock_unlock(l), CR_ENOPERM);
    EXPECT(cr_lock_get_hold_count(l, &n), CR_OK);
    cr_lock_free(l);
    /* Without PUBLISH the lock is taken, but the unlock script fails at its
     * PUBLISH, after its DEL: Redis does not roll a script back, so the
     * lock is gone, the caller hears CR_ENOPERM and no waiter is woken. */
    assert_int_equal(cr_lock_new(nopub, "acl", &l), CR_OK);
    EXPECT(cr_lock_try_lock(l, 0, 5000), CR_OK);
    EXPECT(cr_lock_unlock(l), CR_ENOPERM);
    /* Redis 7.0 words a refusal inside a script differently. */
    assert_true(strstr(cr_last_error(), "NOPERM") != NULL ||
                strstr(cr_last_error(), "can't run this command") != NULL);
    assert_int_equal(redis_int("EXISTS acl"), 0);
    cr_lock_free(l);
    cr_client_free(noeval);
    cr_client_free(nopub);
    admin("ACL DELUSER noeval nopub");
}

/* ------------------------------------------------ a server that is not */

/* What the fake server answers. */
typedef enum fake_mode {
    FAKE_GARBAGE,  /* bytes that are not RESP */
    FAKE_SILENT,   /* accepts and never answers */
    FAKE_WRONG,    /* a valid reply of the wrong kind to everything */
    FAKE_CLOSE,    /* accepts and closes the connection at once */
    FAKE_ONCE,     /* answers a connection's first input "+OK", then closes */
} fake_mode;

typedef struct fake_server {
    fake_mode mode;
    int listen_fd;
    int port;
    atomic_bool stop;
    pthread_t thread;
} fake_server;

/* The fake server's thread: accept, read, answer as its mode says; up to
 * 64 connections, all closed when it stops. */
static void *
fake_run(void *arg)
{
    fake_server *f = arg;
    struct pollfd fds[65];
    bool answered[65] = {false};
    nfds_t n = 1, i;

    fds[0].fd = f->listen_fd;
    fds[0].events = POLLIN;
    while (!atomic_load(&f->stop)) {
        if (poll(fds, n, 50) <= 0)
            continue;
        if ((fds[0].revents & POLLIN) && n < 65) {
            int c = accept(f->listen_fd, NULL, NULL);

            if (c >= 0 && f->mode == FAKE_CLOSE) {
                close(c);
            } else if (c >= 0) {
                fds[n].fd = c;
                fds[n].events = POLLIN;
                fds[n].revents = 0;
                answered[n] = false;
                n++;
            }
        }
        for (i = 1; i < n; i++) {
            char buf[4096];
            ssize_t got;

            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            got = read(fds[i].fd, buf, sizeof(buf));
            if (got <= 0 || (f->mode == FAKE_ONCE && answered[i])) {
                close(fds[i].fd);
                answered[i] = answered[n - 1];
                fds[i] = fds[--n];
                i--;
                continue;
            }
            if (f->mode == FAKE_ONCE) {
                static const char ok[] = "+OK\r\n";

                answered[i] = true;
                if (write(fds[i].fd, ok, sizeof(ok) - 1) < 0)
                    continue;
            }
            if (f->mode == FAKE_GARBAGE) {
                static const char junk[] = "HTTP/1.1 400 Bad Request\r\n\x01\xff";

                if (write(fds[i].fd, junk, sizeof(junk) - 1) < 0)
                    continue;
            } else if (f->mode == FAKE_WRONG) {
                static const char ok[] = "+OK\r\n";
                ssize_t k;

                /* One answer per command (each starts a line with '*'). */
                for (k = 0; k < got; k++)
                    if (buf[k] == '*' && (k == 0 || buf[k - 1] == '\n') &&
                        write(fds[i].fd, ok, sizeof(ok) - 1) < 0)
                        break;
            }
        }
    }
    for (i = 1; i < n; i++)
        close(fds[i].fd);
    return NULL;
}

/* Starts a fake server in `mode` on a free port of 127.0.0.1. */
static void
fake_start(fake_server *f, fake_mode mode)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);

    memset(f, 0, sizeof(*f));
    f->mode = mode;
    f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->listen_fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(f->listen_fd, (struct sockaddr *)&sa, &len), 0);
    assert_int_equal(listen(f->listen_fd, 16), 0);
    f->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_run, f), 0);
}

/* Stops a fake server and closes its connections. */
static void
fake_stop(fake_server *f)
{
    atomic_store(&f->stop, true);
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
}

/* A client of the fake server, with `pw` as password when not NULL. */
static cr_status
fake_client(const fake_server *f, const char *pw, int64_t timeout_ms,
            cr_client **out)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    char url[128];

    if (pw != NULL)
        snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d", pw, f->port);
    else
        snprintf(url, sizeof(url), "redis://127.0.0.1:%d", f->port);
    o.url = url;
    o.command_timeout_ms = timeout_ms;
    o.connect_timeout_ms = timeout_ms;
    o.reconnect_window_ms = timeout_ms;
    o.subscription_timeout_ms = timeout_ms;
    return cr_client_new(&o, out);
}

static void
test_misuse_a_server_that_is_not_redis_fails_cleanly_without_hanging(void **state)
{
    static const fake_mode modes[] = {FAKE_GARBAGE, FAKE_SILENT, FAKE_WRONG};
    static const char *const mode_names[] = {"garbage", "silent", "wrong"};
    const int64_t timeout_ms = 300;
    size_t i;

    (void)state;
    for (i = 0; i < 3; i++) {
        fake_server f;
        cr_client *c = NULL;
        cr_semaphore *s;
        cr_lock *l;
        cr_status rc;
        int64_t start, took, n;
        bool b;

        fake_start(&f, modes[i]);
        /* The set-up (AUTH, CLIENT SETNAME) tells a server that does not
         * speak RESP at once (CR_ECONFIG), a silent one by its timeout. */
        start = cr_test_now_ms();
        rc = fake_client(&f, modes[i] == FAKE_SILENT ? NULL : "fake-pw",
                         timeout_ms, &c);
        took = cr_test_now_ms() - start;
        fprintf(stderr, "%s: client: %s (%s) in %lld ms\n",
                mode_names[i], cr_strerror(rc), cr_last_error(),
                (long long)took);
        assert_true(took < slow(2 * timeout_ms + 1000));
        if (modes[i] != FAKE_WRONG) {
            assert_int_equal(rc, modes[i] == FAKE_GARBAGE ? CR_ECONFIG : CR_EIO);
            assert_true(cr_last_error()[0] != '\0');
            if (modes[i] == FAKE_GARBAGE)
                assert_non_null(strstr(cr_last_error(), "HTTP/1.1 400"));
            fake_stop(&f);
            continue;
        }
        /* "+OK" is a fine answer to AUTH and CLIENT SETNAME; every call
         * then fails on its replies. */
        assert_int_equal(rc, CR_OK);
        assert_int_equal(cr_lock_new(c, "fake", &l), CR_OK);
        assert_int_equal(cr_semaphore_new(c, "fake", &s), CR_OK);
        start = cr_test_now_ms();
        rc = cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG);
        fprintf(stderr, "%s: try_lock: %s (%s)\n", mode_names[i],
                cr_strerror(rc), cr_last_error());
        assert_true(rc == CR_EIO || rc == CR_ESCRIPT);
        assert_true(cr_last_error()[0] != '\0');
        /* A wait gives up within its budget plus a command timeout. */
        rc = cr_lock_try_lock(l, 500, CR_LEASE_WATCHDOG);
        assert_true(rc == CR_EIO || rc == CR_ESCRIPT || rc == CR_BUSY);
        rc = cr_lock_unlock(l);
        assert_true(rc == CR_EIO || rc == CR_ESCRIPT || rc == CR_ENOTOWNER);
        rc = cr_lock_is_locked(l, &b);
        assert_true(rc == CR_EIO || rc == CR_ESCRIPT);
        rc = cr_semaphore_try_acquire(s, 1, 0);
        assert_true(rc == CR_EIO || rc == CR_ESCRIPT);
        rc = cr_semaphore_available_permits(s, &n);
        assert_true(rc == CR_EIO || rc == CR_ESCRIPT);
        took = cr_test_now_ms() - start;
        assert_true(took < slow(20 * timeout_ms + 500 + 2000));
        cr_semaphore_free(s);
        cr_lock_free(l);
        start = cr_test_now_ms();
        cr_client_free(c);
        assert_true(cr_test_now_ms() - start < slow(3 * timeout_ms + 1000));
        fake_stop(&f);
    }
}

static void
test_misuse_connections_closed_by_the_server_do_not_raise_sigpipe(void **state)
{
    const size_t big = 4u << 20;
    char *name = malloc(big + 1);
    fake_server f;
    cr_client *c = NULL;
    cr_lock *l;
    bool b;
    int i;

    (void)state;
    assert_non_null(name);
    memset(name, 'k', big);
    name[big] = '\0';
    /* The default action of SIGPIPE kills the process: the library must
     * not let a write to a closed connection raise it. A command larger
     * than the socket buffers is still being written when the peer's
     * reset comes back, and the write fails with EPIPE. */
    signal(SIGPIPE, SIG_DFL);
    fake_start(&f, FAKE_ONCE);
    assert_int_equal(fake_client(&f, NULL, 300, &c), CR_OK);
    assert_int_equal(cr_lock_new(c, name, &l), CR_OK);
    for (i = 0; i < 3; i++) {
        EXPECT(cr_lock_is_locked(l, &b), CR_EIO);
        EXPECT(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_EIO);
    }
    cr_lock_free(l);
    cr_client_free(c);
    fake_stop(&f);
    free(name);
}

/* ------------------------------------------------------------- security */

/* The log lines seen, joined, for the credential checks. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_seen[65536];

static void
collect_log(void *userdata, cr_log_level level, const char *msg)
{
    (void)userdata;
    (void)level;
    pthread_mutex_lock(&log_mu);
    strncat(log_seen, msg, sizeof(log_seen) - strlen(log_seen) - 2);
    strncat(log_seen, "\n", sizeof(log_seen) - strlen(log_seen) - 1);
    pthread_mutex_unlock(&log_mu);
}

/* Fails the test when `text` contains any of the secrets. */
static void
no_secret_in(const char *text, const char *where)
{
    static const char *const secrets[] = {"S3cret-Pw-a81f", "Wr0ng-Pw-77c2",
                                          "Acl-Pw-e5d0", "fake-pw"};
    size_t i;

    for (i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (strstr(text, secrets[i]) != NULL) {
            fprintf(stderr, "%s shows a password: %s\n", where, text);
            fail();
        }
}

/* cr_client_new with `url` and the collecting logger at debug level;
 * checks the error text has no secret. */
static cr_status
logged_client(const char *url, cr_client **out)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_status rc;

    o.url = url;
    o.command_timeout_ms = slow(1000);
    o.connect_timeout_ms = slow(1000);
    o.reconnect_window_ms = 500;
    o.lock_watchdog_timeout_ms = 300;
    o.log_fn = collect_log;
    o.log_level = CR_LOG_DEBUG;
    rc = cr_client_new(&o, out);
    no_secret_in(cr_last_error(), url);
    return rc;
}

static void
test_security_auth_works_and_credentials_are_never_printed(void **state)
{
    cr_test_redis secured;
    fake_server f;
    cr_client *c = NULL;
    cr_lock *l;
    char url[256];
    int port;
    redisContext *admin_conn;
    redisReply *r;
    static const char *const bad_urls[] = {
        "redis://:S3cret-Pw-a81f@127.0.0.1:notaport",
        "redis://user:S3cret-Pw-a81f@[::1:6379",
        "rediss://:S3cret-Pw-a81f@127.0.0.1:99999",
        "redis://:S3cret-Pw-a81f@127.0.0.1:6379/x",
        "redis://:S3cret-Pw-a81f@bad host:1",
        "redis://:S3cret-Pw-a81f%zz@127.0.0.1:1",
        "ftp://:S3cret-Pw-a81f@127.0.0.1",
    };
    size_t i;

    (void)state;
    log_seen[0] = '\0';
    assert_int_equal(cr_test_redis_start(&secured, "--requirepass S3cret-Pw-a81f"),
                     0);
    port = secured.port;
    admin_conn = cr_test_redis_connect(&secured);
    assert_non_null(admin_conn);
    r = redisCommand(admin_conn, "AUTH %s", "S3cret-Pw-a81f");
    assert_non_null(r);
    freeReplyObject(r);
    r = redisCommand(admin_conn, "ACL SETUSER locker on >Acl-Pw-e5d0 ~* &* +@all");
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);

    /* The right password, as requirepass and as an ACL user: locks work. */
    snprintf(url, sizeof(url), "redis://:S3cret-Pw-a81f@127.0.0.1:%d", port);
    assert_int_equal(logged_client(url, &c), CR_OK);
    assert_int_equal(cr_lock_new(c, "secured", &l), CR_OK);
    EXPECT(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    EXPECT(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
    snprintf(url, sizeof(url), "redis://locker:Acl-Pw-e5d0@127.0.0.1:%d", port);
    assert_int_equal(logged_client(url, &c), CR_OK);
    assert_int_equal(cr_lock_new(c, "secured", &l), CR_OK);
    EXPECT(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    EXPECT(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);

    /* Wrong passwords are refused at cr_client_new, with the server's
     * words and without the password. */
    snprintf(url, sizeof(url), "redis://:Wr0ng-Pw-77c2@127.0.0.1:%d", port);
    EXPECT(logged_client(url, &c), CR_EAUTH);
    snprintf(url, sizeof(url), "redis://locker:Wr0ng-Pw-77c2@127.0.0.1:%d", port);
    EXPECT(logged_client(url, &c), CR_EAUTH);
    snprintf(url, sizeof(url), "redis://nobody:Acl-Pw-e5d0@127.0.0.1:%d", port);
    EXPECT(logged_client(url, &c), CR_EAUTH);
    /* No password at all: refused at once too (NOAUTH at the set-up). */
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    EXPECT(logged_client(url, &c), CR_EAUTH);
    assert_non_null(strstr(cr_last_error(), "NOAUTH"));
    /* Malformed URLs carrying a password. */
    for (i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++)
        EXPECT(logged_client(bad_urls[i], &c), CR_EINVAL);
    /* A password sent to nothing, and to something that is not Redis. */
    cr_test_redis_stop(&secured);
    snprintf(url, sizeof(url), "redis://:S3cret-Pw-a81f@127.0.0.1:%d", port);
    EXPECT(logged_client(url, &c), CR_EIO);
    fake_start(&f, FAKE_GARBAGE);
    snprintf(url, sizeof(url), "redis://u:S3cret-Pw-a81f@127.0.0.1:%d", f.port);
    EXPECT(logged_client(url, &c), CR_ECONFIG);
    fake_stop(&f);
    /* A client whose server goes away logs its reconnection attempts. */
    assert_int_equal(cr_test_redis_restart(&secured), 0);
    snprintf(url, sizeof(url), "redis://locker:Acl-Pw-e5d0@127.0.0.1:%d", port);
    r = redisCommand(admin_conn, "PING"); /* the old connection is gone */
    if (r != NULL)
        freeReplyObject(r);
    redisFree(admin_conn);
    admin_conn = cr_test_redis_connect(&secured);
    assert_non_null(admin_conn);
    r = redisCommand(admin_conn, "AUTH %s", "S3cret-Pw-a81f");
    assert_non_null(r);
    freeReplyObject(r);
    r = redisCommand(admin_conn, "ACL SETUSER locker on >Acl-Pw-e5d0 ~* &* +@all");
    assert_non_null(r);
    freeReplyObject(r);
    redisFree(admin_conn);
    assert_int_equal(logged_client(url, &c), CR_OK);
    assert_int_equal(cr_lock_new(c, "secured", &l), CR_OK);
    EXPECT(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    cr_test_redis_stop(&secured);
    EXPECT(cr_lock_unlock(l), CR_EIO);
    no_secret_in(cr_last_error(), "unlock error");
    EXPECT(cr_lock_try_lock(l, 200, CR_LEASE_WATCHDOG), CR_EIO);
    no_secret_in(cr_last_error(), "try_lock error");
    cr_lock_free(l);
    cr_client_free(c);
    pthread_mutex_lock(&log_mu);
    no_secret_in(log_seen, "the log");
    pthread_mutex_unlock(&log_mu);
    cr_test_redis_destroy(&secured);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_misuse_null_handles_are_refused_with_einval_and_a_message),
        T(test_misuse_null_client_name_and_out_are_refused_by_constructors),
        T(test_misuse_null_out_parameters_are_refused),
        T(test_misuse_enormous_and_braced_names_work_for_every_kind),
        T(test_misuse_out_of_range_durations_are_refused),
        T(test_misuse_out_of_range_permits_and_counts_are_refused),
        T(test_misuse_permit_lease_calls_refuse_malformed_ids_and_leases),
        T(test_misuse_bad_multilock_sets_are_refused),
        T(test_misuse_double_unlock_and_unlock_of_a_never_locked_lock),
        T(test_misuse_fencing_calls_on_other_kinds_are_refused),
        T(test_misuse_strerror_of_unknown_codes_is_a_text),
        T(test_misuse_a_cleared_lost_callback_is_not_called),
        T(test_misuse_bad_client_options_and_urls_are_refused),
        T(test_misuse_key_of_another_type_gives_eserver_with_wrongtype),
        T(test_misuse_acl_user_without_eval_or_publish_gets_enoperm),
        T(test_misuse_a_server_that_is_not_redis_fails_cleanly_without_hanging),
        T(test_misuse_connections_closed_by_the_server_do_not_raise_sigpipe),
        T(test_security_auth_works_and_credentials_are_never_printed),
#undef T
    };

    if (getenv("CR_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("CR_TEST_FILTER"));
    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
