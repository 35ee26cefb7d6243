/* SPDX-License-Identifier: MIT */
/*
 * Redisson release lines (protocol section 16; doc/porting.md's table):
 * the client option and the URL's ?redissonVersion= name the Java side's
 * release, and what that line reads and writes differently is what
 * credisson writes: permit ids as hex text before 3.17 and raw 16 bytes
 * since (on the boundary both ways), acquire(n) making one id before
 * 3.23.4 and n ids since, the fair lock's default wait of 5 s before
 * 3.13.3 and 300 s since, and the rate limiter refused before 3.21 and its
 * keep-alive before 3.38. Each selectable boundary is tested on both of
 * its sides against a real redis-server, on the keys as stored.
 */
#include <ctype.h>
#include <pthread.h>

#include "sync_common.h"

#define OK(call) assert_int_equal((call), CR_OK)
#define SLOT (CR_PERMIT_ID_LEN + 1)

/* ------------------------------------------------------------- helpers */

/* A client of the test server for the Java side's release `version`
 * (NULL: none given), with `url` instead of the server's when not NULL. */
static cr_client *
line_client(const char *version, const char *url)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = url != NULL ? url : test_redis.url;
    o.command_timeout_ms = slow(2000);
    o.redisson_version = version;
    if (cr_client_new(&o, &c) != CR_OK) {
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
        return NULL;
    }
    return c;
}

static cr_permit_semaphore *
pes(cr_client *c, const char *name, int64_t permits)
{
    cr_permit_semaphore *s = NULL;
    bool set = false;

    OK(cr_permit_semaphore_new(c, name, &s));
    OK(cr_permit_semaphore_try_set_permits(s, permits, &set));
    assert_true(set);
    return s;
}

/* The members of zset `key`, each of `len` bytes, into `out` (n slots of
 * 33 bytes: lengths other than 32 are hex-encoded there); returns their
 * number, with each one's length in lens. */
static size_t
members(const char *key, char out[][65], size_t *lens, size_t n)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "ZRANGE %s 0 -1", key);
    size_t i, got;

    assert_non_null(r);
    got = r->elements;
    for (i = 0; i < got && i < n; i++) {
        lens[i] = r->element[i]->len;
        if (lens[i] == CR_PERMIT_ID_LEN) {
            memcpy(out[i], r->element[i]->str, lens[i]);
            out[i][lens[i]] = '\0';
        } else {
            for (size_t j = 0; j < lens[i] && j < 32; j++)
                sprintf(out[i] + 2 * j, "%02x",
                        (unsigned char)r->element[i]->str[j]);
        }
    }
    freeReplyObject(r);
    return got;
}

/* True when s is exactly 32 lowercase hex digits. */
static bool
is_hex_id(const char *s)
{
    if (strlen(s) != CR_PERMIT_ID_LEN)
        return false;
    for (size_t i = 0; i < CR_PERMIT_ID_LEN; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    return true;
}

/* ------------------------------------------------------- the option */

static void
test_release_line_versions_are_checked(void **state)
{
    static const char *const bad[] = {"", "3", "3.9.9", "2.15.1", "abc",
                                      "3.16-SNAPSHOT", "3.16.4.1", "3..1",
                                      "3.1000", " 3.16"};
    static const char *const good[] = {"3.10", "3.16.4", "3.23.4", "4.7.0",
                                       "5.0"};
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char url[256];

    (void)state;
    o.url = test_redis.url;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o.redisson_version = bad[i];
        assert_int_equal(cr_client_new(&o, &c), CR_EINVAL);
        assert_null(c);
        assert_non_null(strstr(cr_last_error(), "Redisson release"));
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        o.redisson_version = good[i];
        OK(cr_client_new(&o, &c));
        cr_client_free(c);
        c = NULL;
    }
    /* In the URL: the same parser, and the same refusals. */
    snprintf(url, sizeof(url), "%s?redissonVersion=3.9", test_redis.url);
    o.url = url;
    o.redisson_version = NULL;
    assert_int_equal(cr_client_new(&o, &c), CR_EINVAL);
    assert_non_null(strstr(cr_last_error(), "3.10"));
    snprintf(url, sizeof(url), "%s?redissonVersion=3.16.4", test_redis.url);
    OK(cr_client_new(&o, &c));
    cr_client_free(c);
}

/* ------------------------------------------- permit ids: 3.17 boundary */

/* Acquires one permit on a client of `version` (or URL `url`) and returns
 * the length of its stored member. */
static size_t
stored_id_length(const char *version, const char *url, const char *name)
{
    cr_client *c = line_client(version, url);
    cr_permit_semaphore *s;
    char id[SLOT], got[4][65];
    size_t lens[4];

    assert_non_null(c);
    s = pes(c, name, 1);
    OK(cr_permit_semaphore_acquire(s, 60000, id));
    {
        char key[128];

        snprintf(key, sizeof(key), "{%s}:timeout", name);
        assert_int_equal(members(key, got, lens, 4), 1);
    }
    /* What the caller sees is the same on every line. */
    assert_true(is_hex_id(id));
    assert_string_equal(got[0], id);
    OK(cr_permit_semaphore_release(s, id));
    cr_permit_semaphore_free(s);
    cr_client_free(c);
    return lens[0];
}

static void
test_release_line_permit_ids_are_hex_text_before_3_17_and_raw_since(void **state)
{
    char url[256];

    (void)state;
    assert_int_equal(stored_id_length("3.16.4", NULL, "p3164"), 32);
    assert_int_equal(stored_id_length("3.17.0", NULL, "p3170"), 16);
    assert_int_equal(stored_id_length(NULL, NULL, "pnewest"), 16);
    /* The URL's setting, and the option winning over it. */
    snprintf(url, sizeof(url), "%s?redissonVersion=3.16.4", test_redis.url);
    assert_int_equal(stored_id_length(NULL, url, "purl"), 32);
    assert_int_equal(stored_id_length("3.17", url, "pboth"), 16);
}

static void
test_release_line_before_3_17_shares_hex_ids_with_java(void **state)
{
    /* What Java 3.16 wrote for its permit: the id's hex text as the
     * member, the expiry as the score. */
    const char *java = "00112233445566778899aabbccddeeff";
    cr_client *c = line_client("3.16.4", NULL);
    cr_permit_semaphore *s;
    char upper[SLOT], id[SLOT], score[64];
    int64_t left = 0, n = -1;
    bool updated = false;
    cr_object_info *info = NULL;

    (void)state;
    assert_non_null(c);
    s = pes(c, "shared", 2);
    assert_true(redis_ok("DECRBY shared 1"));
    assert_true(redis_ok("ZADD {shared}:timeout %lld %s",
                         (long long)time(NULL) * 1000 + 600000, java));
    /* C reads, extends and releases Java's id, given in either case... */
    OK(cr_permit_semaphore_get_lease_time(s, java, &left));
    assert_true(left > 500000 && left <= 600000);
    OK(cr_permit_semaphore_update_lease_time(s, java, CR_LEASE_NONE,
                                             &updated));
    assert_true(updated);
    assert_int_equal(redis_str(score, sizeof(score), "ZSCORE {shared}:timeout "
                               "%s", java),
                     15);
    assert_string_equal(score, "922337203685477");
    /* ...and `credisson inspect` shows it as it is. */
    OK(cr_object_inspect(c, "shared", &info));
    assert_int_equal(info->npermits, 1);
    assert_string_equal(info->permits[0].id, java);
    cr_object_info_free(info);
    for (size_t i = 0; i <= CR_PERMIT_ID_LEN; i++)
        upper[i] = (char)toupper((unsigned char)java[i]);
    OK(cr_permit_semaphore_release(s, upper));
    assert_int_equal(redis_int("ZCARD {shared}:timeout"), 0);
    OK(cr_permit_semaphore_available_permits(s, &n));
    assert_int_equal(n, 2);
    /* Java 3.16 releases C's id by its hex text: a plain ZREM finds it. */
    OK(cr_permit_semaphore_acquire(s, 60000, id));
    assert_int_equal(redis_int("ZREM {shared}:timeout %s", id), 1);
    cr_permit_semaphore_free(s);
    cr_client_free(c);
}

/* -------------------------------------- acquire(n): 3.23.4 boundary */

static void
test_release_line_acquire_n_makes_one_id_before_3_23_4(void **state)
{
    cr_client *c = line_client("3.23.3", NULL);
    cr_permit_semaphore *s;
    char ids[5 * SLOT], got[4][65];
    size_t n = 0, lens[4];
    int64_t avail = -1;

    (void)state;
    assert_non_null(c);
    s = pes(c, "one-id", 5);
    OK(cr_permit_semaphore_try_acquire_n(s, 3, 0, CR_LEASE_NONE, ids, &n));
    assert_int_equal(n, 1);
    assert_true(is_hex_id(ids));
    /* One member for three permits, as Java 3.23.3's acquire(3). */
    assert_int_equal(members("{one-id}:timeout", got, lens, 4), 1);
    assert_int_equal(lens[0], 16);
    assert_string_equal(got[0], ids);
    assert_int_equal(redis_int("GET one-id"), 2);
    /* Too few left: busy, nothing taken. */
    assert_int_equal(cr_permit_semaphore_try_acquire_n(s, 3, 0, CR_LEASE_NONE,
                                                       ids + SLOT, &n),
                     CR_BUSY);
    assert_int_equal(redis_int("GET one-id"), 2);
    /* Its lease would give back one permit of three: refused. */
    assert_int_equal(cr_permit_semaphore_try_acquire_n(s, 2, 0, 60000,
                                                       ids + SLOT, &n),
                     CR_ENOTSUP);
    /* release(id, 3) gives the three back. */
    OK(cr_permit_semaphore_release_n(s, ids, 3));
    OK(cr_permit_semaphore_available_permits(s, &avail));
    assert_int_equal(avail, 5);
    assert_int_equal(redis_int("ZCARD {one-id}:timeout"), 0);
    cr_permit_semaphore_free(s);
    cr_client_free(c);
}

static void
test_release_line_acquire_n_makes_an_id_per_permit_since_3_23_4(void **state)
{
    cr_client *c = line_client("3.23.4", NULL);
    cr_permit_semaphore *s;
    char ids[3 * SLOT], got[4][65];
    size_t n = 0, lens[4];
    int64_t avail = -1;

    (void)state;
    assert_non_null(c);
    s = pes(c, "n-ids", 4);
    OK(cr_permit_semaphore_try_acquire_n(s, 3, 0, 60000, ids, &n));
    assert_int_equal(n, 3);
    assert_int_equal(members("{n-ids}:timeout", got, lens, 4), 3);
    for (size_t i = 0; i < 3; i++) {
        bool found = false;

        assert_true(is_hex_id(ids + i * SLOT));
        assert_int_equal(lens[i], 16);
        for (size_t j = 0; j < 3; j++)
            found = found || strcmp(got[j], ids + i * SLOT) == 0;
        assert_true(found);
    }
    assert_string_not_equal(ids, ids + SLOT);
    assert_int_equal(redis_int("GET n-ids"), 1);
    /* An id stands for one permit on this line. */
    assert_int_equal(cr_permit_semaphore_release_n(s, ids, 3), CR_EINVAL);
    for (size_t i = 0; i < 3; i++)
        OK(cr_permit_semaphore_release_n(s, ids + i * SLOT, 1));
    OK(cr_permit_semaphore_available_permits(s, &avail));
    assert_int_equal(avail, 4);
    /* Bounds. */
    assert_int_equal(cr_permit_semaphore_try_acquire_n(s, 0, 0, 60000, ids,
                                                       &n),
                     CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_try_acquire_n(
                         s, CR_PERMIT_ACQUIRE_MAX + 1, 0, 60000, ids, &n),
                     CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_try_acquire_n(s, 1, 0, 60000, NULL,
                                                       &n),
                     CR_EINVAL);
    cr_permit_semaphore_free(s);
    cr_client_free(c);
}

/* On a line where one id stands for all of them, many permits may be
 * asked for at once; the expired ids reclaimed first can then be more than
 * Lua unpacks in one call (about 8000). */
static void
test_release_line_acquire_n_reclaims_thousands_of_expired_ids(void **state)
{
    cr_client *c = line_client("3.23.3", NULL);
    cr_permit_semaphore *s;
    char id[SLOT];
    size_t n = 0;

    (void)state;
    assert_non_null(c);
    s = pes(c, "many", 0);
    assert_true(redis_ok("EVAL %s 1 %s", "for i = 1, 9000 do "
                         "redis.call('zadd', KEYS[1], 1, 'expired' .. i) end",
                         "{many}:timeout"));
    OK(cr_permit_semaphore_try_acquire_n(s, 9000, 0, CR_LEASE_NONE, id, &n));
    assert_int_equal(n, 1);
    assert_int_equal(redis_int("ZCARD {many}:timeout"), 1);
    assert_int_equal(redis_int("GET many"), 0);
    OK(cr_permit_semaphore_release_n(s, id, 9000));
    assert_int_equal(redis_int("GET many"), 9000);
    cr_permit_semaphore_free(s);
    cr_client_free(c);
}

/* ---------------------------------- the fair lock's wait: 3.13.3 */

typedef struct fair_waiter {
    cr_lock *lock;
    cr_status rc;
} fair_waiter;

static void *
fair_waiter_run(void *arg)
{
    fair_waiter *w = arg;

    w->rc = cr_lock_lock(w->lock, CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK)
        cr_lock_unlock(w->lock);
    return NULL;
}

static bool
one_in_queue(void *arg)
{
    char key[128];

    snprintf(key, sizeof(key), "redisson_lock_timeout:{%s}",
             (const char *)arg);
    return redis_int("ZCARD %s", key) == 1;
}

/* How far ahead of now a waiter's timeout score lies when a client of
 * `version` waits without a limit behind a holder. */
static int64_t
fair_wait_ahead(const char *version, const char *name)
{
    cr_client *holder_client = line_client(version, NULL);
    cr_client *c = line_client(version, NULL);
    cr_lock *held = NULL;
    fair_waiter w = {NULL, CR_EINVAL};
    pthread_t t;
    char score[64];
    int64_t ahead;

    assert_non_null(holder_client);
    assert_non_null(c);
    OK(cr_fair_lock_new(holder_client, name, &held));
    OK(cr_fair_lock_new(c, name, &w.lock));
    OK(cr_lock_lock(held, CR_LEASE_WATCHDOG));
    assert_int_equal(pthread_create(&t, NULL, fair_waiter_run, &w), 0);
    assert_true(cr_test_wait_until(one_in_queue, (void *)name, slow(5000)));
    {
        redisReply *r = cr_test_redis_cmd(&test_redis, "ZRANGE "
                                          "redisson_lock_timeout:{%s} 0 0 "
                                          "WITHSCORES", name);

        assert_non_null(r);
        assert_int_equal(r->elements, 2);
        snprintf(score, sizeof(score), "%s", r->element[1]->str);
        freeReplyObject(r);
    }
    ahead = atoll(score) - (int64_t)time(NULL) * 1000;
    OK(cr_lock_unlock(held));
    pthread_join(t, NULL);
    OK(w.rc);
    cr_lock_free(w.lock);
    cr_lock_free(held);
    cr_client_free(c);
    cr_client_free(holder_client);
    return ahead;
}

static void
test_release_line_fair_lock_waits_5_s_before_3_13_3(void **state)
{
    int64_t old_line = fair_wait_ahead("3.13.2", "fair-old");
    int64_t new_line = fair_wait_ahead("3.13.3", "fair-new");

    (void)state;
    /* Redisson's score of the first waiter: now + the holder's time to
     * live (the 30 s watchdog lease) + the wait, 5 s on the old line and
     * 300 s since. */
    assert_true(old_line > 30000 + 2000 && old_line <= 30000 + 6000);
    assert_true(new_line > 30000 + 290000 && new_line <= 30000 + 301000);
}

/* ------------------------------------------- the rate limiter: 3.21, 3.38 */

static void
test_release_line_rate_limiter_needs_3_21_and_keep_alive_3_38(void **state)
{
    cr_client *c2 = line_client("3.20.1", NULL);
    cr_client *c3 = line_client("3.37.0", NULL);
    cr_client *c4 = line_client("3.38.0", NULL);
    cr_rate_limiter *l = NULL;
    bool set = false;

    (void)state;
    assert_non_null(c2);
    assert_non_null(c3);
    assert_non_null(c4);
    assert_int_equal(cr_rate_limiter_new(c2, "rl", &l), CR_ENOTSUP);
    assert_null(l);
    assert_non_null(strstr(cr_last_error(), "3.21"));
    OK(cr_rate_limiter_new(c3, "rl", &l));
    assert_int_equal(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 5, 1000,
                                                  60000, &set),
                     CR_ENOTSUP);
    assert_int_equal(redis_int("EXISTS rl"), 0);
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 5, 1000, 0, &set));
    assert_true(set);
    cr_rate_limiter_free(l);
    OK(cr_rate_limiter_new(c4, "rl", &l));
    OK(cr_rate_limiter_set_rate(l, CR_RATE_OVERALL, 5, 1000, 60000));
    assert_int_equal(redis_int("HGET rl keepAliveTime"), 60000);
    cr_rate_limiter_free(l);
    cr_client_free(c2);
    cr_client_free(c3);
    cr_client_free(c4);
}

static int
flush_up(void **state)
{
    (void)state;
    return cr_test_redis_flushall(&test_redis) == 0 ? 0 : -1;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup(f, flush_up)
        T(test_release_line_versions_are_checked),
        T(test_release_line_permit_ids_are_hex_text_before_3_17_and_raw_since),
        T(test_release_line_before_3_17_shares_hex_ids_with_java),
        T(test_release_line_acquire_n_makes_one_id_before_3_23_4),
        T(test_release_line_acquire_n_makes_an_id_per_permit_since_3_23_4),
        T(test_release_line_acquire_n_reclaims_thousands_of_expired_ids),
        T(test_release_line_fair_lock_waits_5_s_before_3_13_3),
        T(test_release_line_rate_limiter_needs_3_21_and_keep_alive_3_38),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
