/* SPDX-License-Identifier: MIT */
/*
 * RPermitExpirableSemaphore against a real redis-server: permit ids and
 * leases, release by id (from C and from ids a Java client issued), expired
 * permits coming back (also those of a SIGKILLed process), lease updates,
 * the counts, waits, the keys, zset members and messages on the wire
 * (protocol section 8), and bad arguments.
 */
#include <ctype.h>
#include <pthread.h>

#include "sync_common.h"

#define NEVER_SCORE "922337203685477"

/* ------------------------------------------------------------- helpers */

static cr_permit_semaphore *
pes(const char *name, int64_t permits)
{
    cr_permit_semaphore *s = NULL;
    bool set = false;

    assert_int_equal(cr_permit_semaphore_new(test_client, name, &s), CR_OK);
    if (permits >= 0) {
        assert_int_equal(cr_permit_semaphore_try_set_permits(s, permits, &set),
                         CR_OK);
        assert_true(set);
    }
    return s;
}

static int64_t
available(cr_permit_semaphore *s)
{
    int64_t n = -999;

    assert_int_equal(cr_permit_semaphore_available_permits(s, &n), CR_OK);
    return n;
}

static int64_t
acquired(cr_permit_semaphore *s)
{
    int64_t n = -999;

    assert_int_equal(cr_permit_semaphore_acquired_permits(s, &n), CR_OK);
    return n;
}

/* True when s is exactly 32 lowercase hex digits. */
static bool
is_permit_id(const char *s)
{
    size_t i;

    if (strlen(s) != CR_PERMIT_ID_LEN)
        return false;
    for (i = 0; i < CR_PERMIT_ID_LEN; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    return true;
}

/* Decodes 32 hex digits into 16 bytes. */
static void
unhex(const char *hex, unsigned char *out)
{
    size_t i;

    for (i = 0; i < 16; i++) {
        unsigned v = 0;

        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
}

/* The score of the raw 16-byte member for `hex` in zset `key`, as text
 * into out; false when it is not a member. */
static bool
zscore_of(const char *key, const char *hex, char *out, size_t size)
{
    unsigned char raw[16];
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r;
    bool found = false;

    unhex(hex, raw);
    assert_non_null(c);
    r = redisCommand(c, "ZSCORE %s %b", key, raw, (size_t)16);
    if (r != NULL && r->type == REDIS_REPLY_STRING && r->len < size) {
        memcpy(out, r->str, r->len);
        out[r->len] = '\0';
        found = true;
    }
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return found;
}

/* ---------------------------------------------------------- permits */

/* Names whose keys a Redis Cluster would put in different slots (protocol
 * 1.1) are refused only in cluster mode; a single server takes them. */
static void
test_permit_semaphore_names_that_split_cluster_slots_work_outside_a_cluster(
    void **state)
{
    static const char *names[] = {"a{", "{}x", "a}b"};
    char id[CR_PERMIT_ID_LEN + 1];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        cr_permit_semaphore *s = pes(names[i], 1);

        assert_int_equal(cr_permit_semaphore_try_acquire(s, 0, 10000, id),
                         CR_OK);
        assert_int_equal(acquired(s), 1);
        assert_int_equal(cr_permit_semaphore_release(s, id), CR_OK);
        assert_int_equal(available(s), 1);
        cr_permit_semaphore_free(s);
    }
}

static void
test_permit_semaphore_acquire_returns_a_hex_id_stored_raw_with_its_expiry(void **state)
{
    cr_permit_semaphore *s = pes("pes", 2);
    char id[CR_PERMIT_ID_LEN + 1], forever[CR_PERMIT_ID_LEN + 1], score[64];
    redisReply *r;
    int64_t before = 0, t;

    (void)state;
    assert_string_equal(cr_permit_semaphore_name(s), "pes");
    before = (int64_t)time(NULL) * 1000;
    assert_int_equal(cr_permit_semaphore_acquire(s, 60000, id), CR_OK);
    assert_true(is_permit_id(id));
    assert_true(zscore_of("{pes}:timeout", id, score, sizeof(score)));
    t = atoll(score);
    assert_true(t >= before + 59000 && t <= before + 62000);
    assert_int_equal(cr_permit_semaphore_try_acquire(s, 0, CR_LEASE_NONE, forever),
                     CR_OK);
    assert_true(is_permit_id(forever));
    assert_string_not_equal(id, forever);
    assert_true(zscore_of("{pes}:timeout", forever, score, sizeof(score)));
    assert_string_equal(score, NEVER_SCORE);
    /* Members are exactly 16 raw bytes. */
    r = cr_test_redis_cmd(&test_redis, "ZRANGE {pes}:timeout 0 -1");
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    assert_int_equal(r->element[0]->len, 16);
    assert_int_equal(r->element[1]->len, 16);
    freeReplyObject(r);
    assert_int_equal(redis_int("GET pes"), 0);
    assert_int_equal(available(s), 0);
    assert_int_equal(acquired(s), 2);
    assert_int_equal(cr_permit_semaphore_release(s, id), CR_OK);
    assert_int_equal(cr_permit_semaphore_release(s, forever), CR_OK);
    assert_int_equal(available(s), 2);
    assert_int_equal(redis_int("ZCARD {pes}:timeout"), 0);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_release_of_a_released_id_is_refused(void **state)
{
    cr_permit_semaphore *s = pes("pes", 1);
    char id[CR_PERMIT_ID_LEN + 1];
    bool released = true;

    (void)state;
    assert_int_equal(cr_permit_semaphore_acquire(s, CR_LEASE_NONE, id), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_release(s, id, &released), CR_OK);
    assert_true(released);
    assert_int_equal(cr_permit_semaphore_release(s, id), CR_ENOTOWNER);
    assert_int_equal(cr_permit_semaphore_try_release(s, id, &released), CR_OK);
    assert_false(released);
    assert_int_equal(cr_permit_semaphore_release(s, "00000000000000000000000000000000"),
                     CR_ENOTOWNER);
    assert_int_equal(available(s), 1);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_release_accepts_uppercase_ids(void **state)
{
    cr_permit_semaphore *s = pes("pes", 1);
    char id[CR_PERMIT_ID_LEN + 1];
    size_t i;

    (void)state;
    assert_int_equal(cr_permit_semaphore_acquire(s, 60000, id), CR_OK);
    for (i = 0; id[i] != '\0'; i++)
        id[i] = (char)toupper((unsigned char)id[i]);
    assert_int_equal(cr_permit_semaphore_release(s, id), CR_OK);
    assert_int_equal(available(s), 1);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_releases_an_id_issued_by_java(void **state)
{
    const char *hex = "0123456789abcdef0011223344556677";
    unsigned char raw[16];
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r;
    cr_permit_semaphore *s = pes("jpes", 3);
    int64_t left = 0;

    (void)state;
    /* What Java's tryAcquire writes: N down by one, the raw id in the zset. */
    unhex(hex, raw);
    assert_non_null(c);
    r = redisCommand(c, "DECRBY jpes 1");
    freeReplyObject(r);
    r = redisCommand(c, "ZADD {jpes}:timeout %s %b", NEVER_SCORE, raw, (size_t)16);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    redisFree(c);
    assert_int_equal(acquired(s), 1);
    assert_int_equal(cr_permit_semaphore_get_lease_time(s, hex, &left), CR_OK);
    assert_int_equal(left, CR_LEASE_NONE);
    assert_int_equal(cr_permit_semaphore_release(s, hex), CR_OK);
    assert_int_equal(available(s), 3);
    assert_int_equal(acquired(s), 0);
    cr_permit_semaphore_free(s);
}

/* ------------------------------------------------------------- leases */

static void
test_permit_semaphore_expired_permit_is_reclaimed_and_its_release_reports_lost(void **state)
{
    const char *channels[1] = {"redisson_sc:{exp}"};
    cr_test_listener *li = listen_on(channels, 1);
    cr_permit_semaphore *s = pes("exp", 1);
    char a[CR_PERMIT_ID_LEN + 1], b[CR_PERMIT_ID_LEN + 1];
    const char *want[] = {"1", "1", "1"};

    (void)state;
    /* An expired permit that nobody reclaimed yet: its release gives it back
     * and says the lease was lost. */
    assert_int_equal(cr_permit_semaphore_acquire(s, 50, a), CR_OK);
    usleep(120 * 1000);
    assert_int_equal(redis_int("GET exp"), 0);
    assert_int_equal(cr_permit_semaphore_release(s, a), CR_ELOST);
    assert_int_equal(redis_int("GET exp"), 1);
    /* One reclaimed by a count: it comes back without any release. */
    assert_int_equal(cr_permit_semaphore_acquire(s, 50, b), CR_OK);
    usleep(120 * 1000);
    assert_int_equal(available(s), 1);
    assert_int_equal(acquired(s), 0);
    assert_int_equal(cr_permit_semaphore_release(s, b), CR_ENOTOWNER);
    /* Messages: "1" from the set, the lost release and the reclaim. */
    assert_messages(li, channels[0], want, 3);
    cr_test_listener_stop(li);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_lease_time_can_be_read_and_updated(void **state)
{
    cr_permit_semaphore *s = pes("lease", 1);
    char id[CR_PERMIT_ID_LEN + 1], score[64];
    int64_t left = 0;
    bool updated = false;

    (void)state;
    assert_int_equal(cr_permit_semaphore_acquire(s, 5000, id), CR_OK);
    assert_int_equal(cr_permit_semaphore_get_lease_time(s, id, &left), CR_OK);
    assert_true(left > 3000 && left <= 5000);
    assert_int_equal(cr_permit_semaphore_update_lease_time(s, id, 600000, &updated),
                     CR_OK);
    assert_true(updated);
    assert_int_equal(cr_permit_semaphore_get_lease_time(s, id, &left), CR_OK);
    assert_true(left > 590000 && left <= 600000);
    assert_int_equal(cr_permit_semaphore_update_lease_time(s, id, CR_LEASE_NONE,
                                                           &updated), CR_OK);
    assert_true(zscore_of("{lease}:timeout", id, score, sizeof(score)));
    assert_string_equal(score, NEVER_SCORE);
    assert_int_equal(cr_permit_semaphore_get_lease_time(s, id, &left), CR_OK);
    assert_int_equal(left, -1);
    assert_int_equal(cr_permit_semaphore_release(s, id), CR_OK);
    left = 77;
    assert_int_equal(cr_permit_semaphore_get_lease_time(s, id, &left),
                     CR_ENOTOWNER);
    assert_int_equal(left, 77);
    assert_int_equal(cr_permit_semaphore_update_lease_time(s, id, 1000, &updated),
                     CR_OK);
    assert_false(updated);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_killed_holder_permit_comes_back_after_its_lease(void **state)
{
    cr_permit_semaphore *s = pes("orphan", 1);
    char line[64], id[CR_PERMIT_ID_LEN + 1];
    int out = -1;
    int64_t killed, took;
    pid_t pid;

    (void)state;
    pid = spawn_worker(&out, "permit-hold", "orphan", "1000", NULL);
    assert_true(cr_test_read_line(out, line, sizeof(line), -1));
    close(out);
    assert_true(is_permit_id(line));
    assert_int_equal(cr_permit_semaphore_try_acquire(s, 0, 60000, id), CR_BUSY);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    killed = cr_test_now_ms();
    /* The waiter sleeps until the earliest lease runs out, then reclaims. */
    assert_int_equal(cr_permit_semaphore_try_acquire(s, slow(10000), 60000, id),
                     CR_OK);
    took = cr_test_now_ms() - killed;
    assert_true(took < slow(2000));
    assert_string_not_equal(id, line);
    assert_int_equal(acquired(s), 1);
    assert_int_equal(cr_permit_semaphore_release(s, id), CR_OK);
    cr_permit_semaphore_free(s);
}

/* --------------------------------------------------------------- waits */

typedef struct waiter {
    cr_permit_semaphore *sem;
    int64_t wait_ms;
    char id[CR_PERMIT_ID_LEN + 1];
    cr_status rc;
    int64_t done_at;
    pthread_t thread;
} waiter;

static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->rc = cr_permit_semaphore_try_acquire(w->sem, w->wait_ms, 60000, w->id);
    w->done_at = cr_test_now_ms();
    return NULL;
}

static void
test_permit_semaphore_release_wakes_a_waiter_promptly(void **state)
{
    cr_client *other = new_client(30000);
    cr_permit_semaphore *s = pes("wake", 1), *theirs = NULL;
    char id[CR_PERMIT_ID_LEN + 1];
    waiter w;
    int64_t released;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_permit_semaphore_new(other, "wake", &theirs), CR_OK);
    assert_int_equal(cr_permit_semaphore_acquire(theirs, CR_LEASE_NONE, id), CR_OK);
    memset(&w, 0, sizeof(w));
    w.sem = s;
    w.wait_ms = slow(10000);
    assert_int_equal(pthread_create(&w.thread, NULL, waiter_run, &w), 0);
    await_waiters_in_line("wake", 1);
    assert_int_equal(cr_permit_semaphore_release(theirs, id), CR_OK);
    released = cr_test_now_ms();
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.done_at - released < slow(500));
    assert_true(is_permit_id(w.id));
    assert_int_equal(cr_permit_semaphore_release(s, w.id), CR_OK);
    cr_permit_semaphore_free(s);
    cr_permit_semaphore_free(theirs);
    cr_client_free(other);
}

/* far_waiter_rounds' steps on a permit semaphore: a permit that never
 * expires, its id kept beside the handle. */
typedef struct held {
    cr_permit_semaphore *s;
    char id[CR_PERMIT_ID_LEN + 1];
} held;

static void
take_permit(void *h, int64_t wait_ms)
{
    held *p = h;

    assert_int_equal(cr_permit_semaphore_try_acquire(p->s, wait_ms,
                                                     CR_LEASE_NONE, p->id),
                     CR_OK);
}

static void
give_permit(void *h)
{
    held *p = h;

    assert_int_equal(cr_permit_semaphore_release(p->s, p->id), CR_OK);
}

/* As for RSemaphore: a handle that releases a permit and acquires again
 * at once lets a waiter its release reached elsewhere (300 us behind the
 * message) have the permit first. Needs real speed, as there. */
static void
test_permit_semaphore_releaser_lets_the_waiter_it_woke_go_first(void **state)
{
    held p;

    (void)state;
    if (slow(1) > 1)
        skip();
    p.s = pes("ypes", 1);
    assert_far_waiter_first("ypes", &p, take_permit, give_permit);
    cr_permit_semaphore_free(p.s);
}

static void
test_permit_semaphore_try_acquire_returns_busy_within_its_wait_budget(void **state)
{
    cr_permit_semaphore *s = pes("busy", 0);
    char id[CR_PERMIT_ID_LEN + 1] = "untouched";
    int64_t start = cr_test_now_ms(), took;

    (void)state;
    assert_int_equal(cr_permit_semaphore_try_acquire(s, 300, 1000, id), CR_BUSY);
    took = cr_test_now_ms() - start;
    assert_true(took >= 300 && took < 300 + slow(600));
    assert_string_equal(id, "untouched");
    assert_int_equal(redis_int("ZCARD {busy}:timeout"), 0);
    cr_permit_semaphore_free(s);
}

/* -------------------------------------------------------------- counts */

static void
test_permit_semaphore_set_add_and_get_permits_count_permits_out(void **state)
{
    const char *channels[1] = {"redisson_sc:{cnt}"};
    const char *want[] = {"2", "5", "3"};
    cr_test_listener *li = listen_on(channels, 1);
    cr_permit_semaphore *s = pes("cnt", -1);
    char a[CR_PERMIT_ID_LEN + 1], b[CR_PERMIT_ID_LEN + 1];
    int64_t total = -1;
    bool set = true;

    (void)state;
    assert_int_equal(cr_permit_semaphore_get_permits(s, &total), CR_OK);
    assert_int_equal(total, 0);
    assert_int_equal(cr_permit_semaphore_set_permits(s, 2), CR_OK);      /* "2" */
    assert_int_equal(cr_permit_semaphore_try_set_permits(s, 9, &set), CR_OK);
    assert_false(set);
    assert_int_equal(cr_permit_semaphore_acquire(s, 60000, a), CR_OK);
    assert_int_equal(cr_permit_semaphore_acquire(s, 60000, b), CR_OK);
    assert_int_equal(cr_permit_semaphore_set_permits(s, 2), CR_OK);      /* same */
    assert_int_equal(cr_permit_semaphore_set_permits(s, 5), CR_OK);      /* "5" */
    assert_int_equal(available(s), 3);
    assert_int_equal(cr_permit_semaphore_get_permits(s, &total), CR_OK);
    assert_int_equal(total, 5);
    assert_int_equal(cr_permit_semaphore_add_permits(s, -4), CR_OK);     /* none */
    assert_int_equal(available(s), -1);
    assert_int_equal(cr_permit_semaphore_add_permits(s, 3), CR_OK);      /* "3" */
    assert_int_equal(available(s), 2);
    assert_int_equal(acquired(s), 2);
    assert_messages(li, channels[0], want, 3);
    cr_test_listener_stop(li);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_delete_removes_both_keys(void **state)
{
    cr_permit_semaphore *s = pes("gone", 2);
    char id[CR_PERMIT_ID_LEN + 1];
    bool deleted = false;

    (void)state;
    assert_int_equal(cr_permit_semaphore_acquire(s, 60000, id), CR_OK);
    assert_int_equal(redis_int("EXISTS gone {gone}:timeout"), 2);
    assert_int_equal(cr_permit_semaphore_delete(s, &deleted), CR_OK);
    assert_true(deleted);
    assert_int_equal(redis_int("EXISTS gone {gone}:timeout"), 0);
    assert_int_equal(cr_permit_semaphore_delete(s, &deleted), CR_OK);
    assert_false(deleted);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_zset_follows_the_ttl_of_the_count(void **state)
{
    cr_permit_semaphore *s = pes("ttl", 1);
    char id[CR_PERMIT_ID_LEN + 1];
    long long ttl;

    (void)state;
    assert_int_equal(redis_int("PEXPIRE ttl 60000"), 1);
    assert_int_equal(cr_permit_semaphore_acquire(s, CR_LEASE_NONE, id), CR_OK);
    ttl = redis_int("PTTL {ttl}:timeout");
    assert_true(ttl > 50000 && ttl <= 60000);
    cr_permit_semaphore_free(s);
}

static void
test_permit_semaphore_names_with_braces_use_redisson_names(void **state)
{
    cr_permit_semaphore *s = pes("app{7}pes", 1);
    char id[CR_PERMIT_ID_LEN + 1];

    (void)state;
    assert_int_equal(cr_permit_semaphore_acquire(s, 60000, id), CR_OK);
    assert_int_equal(redis_int("ZCARD app{7}pes:timeout"), 1);
    assert_int_equal(redis_int("GET app{7}pes"), 0);
    assert_int_equal(cr_permit_semaphore_release(s, id), CR_OK);
    cr_permit_semaphore_free(s);
}

/* ------------------------------------------------------------ bad input */

static void
test_permit_semaphore_bad_arguments_are_refused_with_einval(void **state)
{
    cr_permit_semaphore *s = NULL;
    const char *short_id = "0123456789abcdef0123456789abcde";
    const char *long_id = "0123456789abcdef0123456789abcdef0";
    const char *bad_digit = "0123456789abcdef0123456789abcdeg";
    const char *text = "not hex at all, not at all!!!!!!";
    char id[CR_PERMIT_ID_LEN + 1] = "untouched";
    int64_t n = 42;
    bool b = true;

    (void)state;
    assert_int_equal(cr_permit_semaphore_new(test_client, NULL, &s), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_new(test_client, "", &s), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_new(test_client, "x", NULL), CR_EINVAL);
    assert_null(s);
    s = pes("bad", 1);
    assert_int_equal(cr_permit_semaphore_acquire(NULL, 1000, id), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_acquire(s, 0, id), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_acquire(s, -2, id), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_acquire(s, CR_DURATION_MAX + 1, id),
                     CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_acquire(s, 1000, NULL), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_try_acquire(s, -5, 1000, id), CR_EINVAL);
    assert_string_equal(id, "untouched");
    assert_int_equal(cr_permit_semaphore_release(s, NULL), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_release(s, ""), CR_EINVAL);
    /* 31 digits, 33 digits, a non-hex digit, 32 characters of text. */
    assert_int_equal(cr_permit_semaphore_release(s, short_id), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_release(s, long_id), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_release(s, bad_digit), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_try_release(s, text, &b), CR_EINVAL);
    assert_true(b);
    assert_int_equal(cr_permit_semaphore_update_lease_time(
                         s, "0123456789abcdef0123456789abcdef", 0, &b), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_get_lease_time(
                         s, "0123456789abcdef0123456789abcdef", NULL), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_try_set_permits(s, -1, &b), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_set_permits(s, CR_PERMITS_MAX + 1),
                     CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_add_permits(s, INT64_MIN), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_available_permits(s, NULL), CR_EINVAL);
    assert_int_equal(cr_permit_semaphore_get_permits(NULL, &n), CR_EINVAL);
    assert_int_equal(n, 42);
    assert_int_equal(available(s), 1);
    cr_permit_semaphore_free(s);
    cr_permit_semaphore_free(NULL);
    assert_string_equal(cr_permit_semaphore_name(NULL), "");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_permit_semaphore_acquire_returns_a_hex_id_stored_raw_with_its_expiry),
        T(test_permit_semaphore_names_that_split_cluster_slots_work_outside_a_cluster),
        T(test_permit_semaphore_release_of_a_released_id_is_refused),
        T(test_permit_semaphore_release_accepts_uppercase_ids),
        T(test_permit_semaphore_releases_an_id_issued_by_java),
        T(test_permit_semaphore_expired_permit_is_reclaimed_and_its_release_reports_lost),
        T(test_permit_semaphore_lease_time_can_be_read_and_updated),
        T(test_permit_semaphore_killed_holder_permit_comes_back_after_its_lease),
        T(test_permit_semaphore_release_wakes_a_waiter_promptly),
        T(test_permit_semaphore_releaser_lets_the_waiter_it_woke_go_first),
        T(test_permit_semaphore_try_acquire_returns_busy_within_its_wait_budget),
        T(test_permit_semaphore_set_add_and_get_permits_count_permits_out),
        T(test_permit_semaphore_delete_removes_both_keys),
        T(test_permit_semaphore_zset_follows_the_ttl_of_the_count),
        T(test_permit_semaphore_names_with_braces_use_redisson_names),
        T(test_permit_semaphore_bad_arguments_are_refused_with_einval),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
