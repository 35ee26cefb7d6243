/* SPDX-License-Identifier: MIT */
/*
 * RRateLimiter (cr_rate_limiter): the wire layout of Redisson 3.21+ (keys,
 * configuration fields, 21-byte records, times to live), the budget under
 * load from eight processes and their threads, judged on the grant times
 * the script recorded (never more than the rate in any window of one
 * interval, and close to the rate over several intervals), PER_CLIENT
 * budgets, refusals, and waits that sleep the script's hint.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock_common.h"
#include "fault_server.h"
#include "grant_records.h"
#include "scripts.h" /* a resend of one attempt, by hand */

#define OK(call) assert_int_equal((call), CR_OK)

/* ------------------------------------------------------------- helpers */

/* A new limiter handle on the test client. */
static cr_rate_limiter *
limiter(const char *name)
{
    cr_rate_limiter *l = NULL;

    OK(cr_rate_limiter_new(test_client, name, &l));
    return l;
}

/* --------------------------------------------------------------- tests */

static void
test_rate_limiter_try_set_rate_sets_once_and_get_config_reads_it(void **state)
{
    cr_rate_limiter *l = limiter("myLimiter");
    cr_rate_config cfg;
    bool set = false;

    (void)state;
    OK(cr_rate_limiter_get_config(l, &cfg));
    assert_int_equal(cfg.rate, 0);
    assert_int_equal(cfg.interval_ms, 0);
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 10, 1000, 0, &set));
    assert_true(set);
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_PER_CLIENT, 3, 500, 0, &set));
    assert_false(set);
    OK(cr_rate_limiter_get_config(l, &cfg));
    assert_int_equal(cfg.type, CR_RATE_OVERALL);
    assert_int_equal(cfg.rate, 10);
    assert_int_equal(cfg.interval_ms, 1000);
    assert_int_equal(cfg.keep_alive_ms, 0);
    /* The hash as Redisson writes it, in decimal. */
    assert_int_equal(redis_int("HGET myLimiter rate"), 10);
    assert_int_equal(redis_int("HGET myLimiter interval"), 1000);
    assert_int_equal(redis_int("HGET myLimiter type"), 0);
    assert_int_equal(redis_int("HGET myLimiter keepAliveTime"), 0);
    assert_int_equal(redis_int("PTTL myLimiter"), -1);
    /* A Java trySetRate(PER_CLIENT, ...) is read back as such. */
    assert_true(redis_ok("HSET other rate 7 interval 250 type 1 "
                         "keepAliveTime 5000"));
    cr_rate_limiter_free(l);
    l = limiter("other");
    OK(cr_rate_limiter_get_config(l, &cfg));
    assert_int_equal(cfg.type, CR_RATE_PER_CLIENT);
    assert_int_equal(cfg.rate, 7);
    assert_int_equal(cfg.interval_ms, 250);
    assert_int_equal(cfg.keep_alive_ms, 5000);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_wire_keys_records_and_no_ttl(void **state)
{
    cr_rate_limiter *l = limiter("myLimiter");
    redisReply *r;
    const unsigned char *m;
    long long before, after, score;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 10, 60000, 0, NULL));
    before = server_ms();
    OK(cr_rate_limiter_try_acquire(l, 3, 0));
    after = server_ms();
    assert_int_equal(redis_int("GET {myLimiter}:value"), 7);
    r = cr_test_redis_cmd(&test_redis, "ZRANGE {myLimiter}:permits 0 -1 "
                          "WITHSCORES");
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    /* 0x10, 16 id bytes, the permits as a little-endian uint32. */
    assert_int_equal(r->element[0]->len, 21);
    m = (const unsigned char *)r->element[0]->str;
    assert_int_equal(m[0], 0x10);
    assert_int_equal(m[17], 3);
    assert_int_equal(m[18] | m[19] | m[20], 0);
    score = atoll(r->element[1]->str);
    assert_true(score >= before && score <= after);
    freeReplyObject(r);
    /* No time to live anywhere without keep-alive or one on N. */
    assert_int_equal(redis_int("PTTL myLimiter"), -1);
    assert_int_equal(redis_int("PTTL {myLimiter}:value"), -1);
    assert_int_equal(redis_int("PTTL {myLimiter}:permits"), -1);
    /* Nothing of the PER_CLIENT shape. */
    assert_int_equal(cr_test_redis_count_keys(&test_redis, "{myLimiter}:*:*"),
                     0);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_tagged_name_and_keep_alive_ttls(void **state)
{
    cr_rate_limiter *l = limiter("app{7}rl");
    const char *id = cr_client_id(test_client);
    long long ttl;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_PER_CLIENT, 5, 1000, 2000,
                                    NULL));
    ttl = redis_int("PTTL app{7}rl");
    assert_true(ttl > 1000 && ttl <= 2000);
    OK(cr_rate_limiter_try_acquire(l, 2, 0));
    /* The client's own pair, named suffixName(suffixName(N, value), U). */
    assert_int_equal(redis_int("GET app{7}rl:value:%s", id), 3);
    assert_int_equal(redis_int("ZCARD app{7}rl:permits:%s", id), 1);
    assert_int_equal(redis_int("EXISTS app{7}rl:value"), 0);
    assert_int_equal(redis_int("EXISTS app{7}rl:permits"), 0);
    /* keepAliveTime: N and the pair live 2 s from the acquisition. */
    ttl = redis_int("PTTL app{7}rl");
    assert_true(ttl > 1000 && ttl <= 2000);
    ttl = redis_int("PTTL app{7}rl:value:%s", id);
    assert_true(ttl > 1000 && ttl <= 2000);
    ttl = redis_int("PTTL app{7}rl:permits:%s", id);
    assert_true(ttl > 1000 && ttl <= 2000);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_copies_the_time_to_live_of_n(void **state)
{
    cr_rate_limiter *l = limiter("expiring");
    long long ttl;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 5, 1000, 0, NULL));
    /* A user's expire (Java expire(10 s)) on N alone. */
    assert_true(redis_ok("PEXPIRE expiring 10000"));
    OK(cr_rate_limiter_try_acquire(l, 1, 0));
    ttl = redis_int("PTTL {expiring}:value");
    assert_true(ttl > 8000 && ttl <= 10000);
    ttl = redis_int("PTTL {expiring}:permits");
    assert_true(ttl > 8000 && ttl <= 10000);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_permits_above_the_rate_are_refused(void **state)
{
    cr_rate_limiter *l = limiter("small");

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 5, 1000, 0, NULL));
    assert_int_equal(cr_rate_limiter_try_acquire(l, 6, 0), CR_EINVAL);
    assert_non_null(strstr(cr_last_error(), "cannot exceed defined rate"));
    assert_int_equal(cr_rate_limiter_try_acquire(l, 6, slow(2000)), CR_EINVAL);
    /* Nothing written. */
    assert_int_equal(redis_int("EXISTS {small}:value {small}:permits"), 0);
    /* Permits the record cannot hold, and none, are refused before Redis. */
    assert_int_equal(cr_rate_limiter_try_acquire(l, 0, 0), CR_EINVAL);
    assert_int_equal(cr_rate_limiter_try_acquire(l, CR_RATE_PERMITS_MAX + 1,
                                                 0), CR_EINVAL);
    OK(cr_rate_limiter_try_acquire(l, 5, 0));
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_without_a_rate_is_not_initialized(void **state)
{
    cr_rate_limiter *l = limiter("unset");
    int64_t n = 0;

    (void)state;
    assert_int_equal(cr_rate_limiter_try_acquire(l, 1, 0), CR_EINVAL);
    assert_non_null(strstr(cr_last_error(), "not initialized"));
    assert_int_equal(cr_rate_limiter_available_permits(l, &n), CR_EINVAL);
    assert_int_equal(cr_test_redis_count_keys(&test_redis, "*"), 0);
    /* Bad settings are refused (keep-alive shorter than the interval). */
    assert_int_equal(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 5, 1000,
                                                  999, NULL), CR_EINVAL);
    assert_int_equal(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 0, 1000,
                                                  0, NULL), CR_EINVAL);
    assert_int_equal(cr_rate_limiter_try_set_rate(l, (cr_rate_type)2, 5, 1000,
                                                  0, NULL), CR_EINVAL);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_a_resent_attempt_takes_permits_once(void **state)
{
    cr_rate_limiter *l = limiter("resend");
    const char *id = "0123456789abcdef";
    cr__rate_limiter_acquire_args args = {
        .config = "resend", .value = "{resend}:value",
        .client_value = "{resend}:value:x", .permits = "{resend}:permits",
        .client_permits = "{resend}:permits:x",
        .held = "{resend}:credisson_rate_held",
        .client_held = "{resend}:credisson_rate_held:x", .count = 2,
        .id = {id, 16}};
    int round;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 3, 60000, 0, NULL));
    /* The same attempt twice, as the transport resends it after a broken
     * link: granted both times, the permits taken once (Q1 fixed). */
    for (round = 0; round < 2; round++) {
        cr__cmd cmd = {0};
        cr__reply *r = NULL;
        cr__op op;

        cr__op_begin(&op, test_client, -1);
        OK(cr__run_rate_limiter_acquire(&op, &cmd, &args, &r));
        assert_int_equal(r->type, CR__REPLY_ARRAY);
        assert_int_equal(r->element[0]->integer, 0);
        cr__reply_free(r);
    }
    assert_int_equal(redis_int("GET {resend}:value"), 1);
    assert_int_equal(redis_int("ZCARD {resend}:permits"), 1);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_reads_records_it_did_not_write(void **state)
{
    cr_rate_limiter *l = limiter("foreign");
    long long now = server_ms();
    int64_t n = 0;

    (void)state;
    /* A limiter of 4 whose value says 1 left: one live record of 3 from
     * another client (Java), its id 16 other bytes. */
    assert_true(redis_ok("HSET foreign rate 4 interval 60000 type 0 "
                         "keepAliveTime 0"));
    assert_true(redis_ok("SET {foreign}:value 1"));
    assert_true(redis_ok("ZADD {foreign}:permits %lld %b", now,
                         "\x10" "ABCDEFGHIJKLMNOP" "\x03\x00\x00\x00",
                         (size_t)21));
    assert_int_equal(cr_rate_limiter_try_acquire(l, 2, 0), CR_BUSY);
    OK(cr_rate_limiter_available_permits(l, &n));
    assert_int_equal(n, 1);
    OK(cr_rate_limiter_try_acquire(l, 1, 0));
    /* An expired record of 3 comes back as 3 permits (L honoured). */
    assert_true(redis_ok("DEL {foreign}:permits"));
    assert_true(redis_ok("SET {foreign}:value 0"));
    assert_true(redis_ok("ZADD {foreign}:permits %lld %b", now - 120000,
                         "\x10" "ABCDEFGHIJKLMNOP" "\x03\x00\x00\x00",
                         (size_t)21));
    assert_true(redis_ok("ZADD {foreign}:permits %lld %b", now,
                         "\x10" "QRSTUVWXYZABCDEF" "\x01\x00\x00\x00",
                         (size_t)21));
    OK(cr_rate_limiter_available_permits(l, &n));
    assert_int_equal(n, 3);
    assert_int_equal(redis_int("ZCARD {foreign}:permits"), 1);
    cr_rate_limiter_free(l);
}

/* Adds a live grant record of `permits` stamped `at` (as another client,
 * Java say, writes it) to `key`, under id byte `tag` repeated. */
static void
add_record(const char *key, long long at, char tag, unsigned permits)
{
    char m[21];

    m[0] = 16;
    memset(m + 1, tag, 16);
    m[17] = (char)(permits & 0xff);
    m[18] = (char)(permits >> 8 & 0xff);
    m[19] = (char)(permits >> 16 & 0xff);
    m[20] = (char)(permits >> 24 & 0xff);
    assert_true(redis_ok("ZADD %s %lld %b", key, at, m, sizeof(m)));
}

static void
test_rate_limiter_grants_within_the_rate_over_the_records_whatever_the_value(
    void **state)
{
    cr_rate_limiter *l = limiter("stored");
    int64_t n = 0;

    (void)state;
    /* A limiter of 10 per minute with a live record of 5: whatever the
     * stored value says, 5 are left. Above the rate, as a Java
     * availablePermits() leaves it after a release(): */
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 10, 60000, 0, NULL));
    add_record("{stored}:permits", server_ms(), 'J', 5);
    assert_true(redis_ok("SET {stored}:value 15"));
    OK(cr_rate_limiter_available_permits(l, &n));
    assert_int_equal(n, 5);
    assert_int_equal(take_all(l), 5);
    /* Within the rate but above what the records leave, as a Java
     * release(4) of a grant of 5 leaves it: */
    assert_true(redis_ok("DEL {stored}:permits"));
    add_record("{stored}:permits", server_ms(), 'K', 5);
    assert_true(redis_ok("SET {stored}:value 9"));
    OK(cr_rate_limiter_available_permits(l, &n));
    assert_int_equal(n, 5);
    assert_int_equal(take_all(l), 5);
    assert_int_equal(cr_rate_limiter_try_acquire(l, 1, 0), CR_BUSY);
    /* No value at all with live records: the records still count. */
    assert_true(redis_ok("DEL {stored}:value"));
    assert_int_equal(take_all(l), 0);
    /* A stored value below the records' room is kept: it only refuses. */
    assert_true(redis_ok("DEL {stored}:permits"));
    add_record("{stored}:permits", server_ms(), 'L', 1);
    assert_true(redis_ok("SET {stored}:value 2"));
    assert_int_equal(take_all(l), 2);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_counts_records_another_client_added_between_its_grants(
    void **state)
{
    cr_rate_limiter *l = limiter("mixed");
    long long pttl;

    (void)state;
    /* credisson keeps a summary of the records beside them; a record
     * another client adds between two attempts, with the value left
     * unchanged (as a Java acquire followed by a release()), is counted. */
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 10, 60000, 0, NULL));
    OK(cr_rate_limiter_try_acquire(l, 3, 0));
    assert_int_equal(redis_int("EXISTS {mixed}:credisson_rate_held"), 1);
    pttl = redis_int("PTTL {mixed}:credisson_rate_held");
    assert_true(pttl > 0 && pttl <= 60000);
    add_record("{mixed}:permits", server_ms(), 'J', 4);
    assert_int_equal(take_all(l), 3);
    /* And a record another client removed (an early one, as Java's
     * reclaiming of a record its clock saw expire) frees its permits. */
    add_record("{mixed}:permits", server_ms() - 60000 - 1000, 'A', 2);
    assert_true(redis_ok("SET {mixed}:value 10"));
    assert_true(redis_ok("ZREMRANGEBYSCORE {mixed}:permits 0 %lld",
                         server_ms() - 60000));
    assert_int_equal(take_all(l), 0);
    assert_true(redis_ok("ZREM {mixed}:permits %b",
                         "\x10JJJJJJJJJJJJJJJJ\x04\x00\x00\x00",
                         (size_t)21));
    assert_int_equal(take_all(l), 4);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_available_permits_come_back_after_the_interval(void **state)
{
    cr_rate_limiter *l = limiter("refill");
    int64_t n = 0, start;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 10, 300, 0, NULL));
    OK(cr_rate_limiter_available_permits(l, &n));
    assert_int_equal(n, 10);
    OK(cr_rate_limiter_try_acquire(l, 3, 0));
    OK(cr_rate_limiter_try_acquire(l, 4, 0));
    OK(cr_rate_limiter_available_permits(l, &n));
    assert_int_equal(n, 3);
    start = cr_test_now_ms();
    while (n != 10 && cr_test_now_ms() - start < slow(3000)) {
        usleep(20000);
        OK(cr_rate_limiter_available_permits(l, &n));
    }
    assert_int_equal(n, 10);
    assert_int_equal(redis_int("ZCARD {refill}:permits"), 0);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_a_wait_sleeps_the_hint_without_polling(void **state)
{
    cr_rate_limiter *l = limiter("sleepy");
    int64_t t0, took;
    long long calls;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 2, 1000, 0, NULL));
    OK(cr_rate_limiter_try_acquire(l, 2, 0));
    calls = calls_of("evalsha") + calls_of("eval");
    t0 = cr_test_now_ms();
    OK(cr_rate_limiter_try_acquire(l, 1, slow(5000)));
    took = cr_test_now_ms() - t0;
    /* Granted once the first record expired, about 1 s after it. */
    assert_true(took >= 900);
    assert_true(took < slow(2500));
    /* One attempt, one sleep, one attempt (a late wake-up may add one). */
    assert_true(calls_of("evalsha") + calls_of("eval") - calls <= 3);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_gives_up_at_once_when_the_hint_is_beyond_the_wait(void **state)
{
    cr_rate_limiter *l = limiter("slow");
    int64_t t0;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 1, 30000, 0, NULL));
    OK(cr_rate_limiter_try_acquire(l, 1, 0));
    t0 = cr_test_now_ms();
    assert_int_equal(cr_rate_limiter_try_acquire(l, 1, 5000), CR_BUSY);
    assert_true(cr_test_now_ms() - t0 < slow(1000));
    /* A wait of 0 is one attempt. */
    assert_int_equal(cr_rate_limiter_try_acquire(l, 1, 0), CR_BUSY);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_per_client_gives_each_client_its_own_budget(void **state)
{
    cr_client *other = new_client(300);
    cr_rate_limiter *a = limiter("perclient"), *b = NULL;

    (void)state;
    assert_non_null(other);
    OK(cr_rate_limiter_new(other, "perclient", &b));
    OK(cr_rate_limiter_try_set_rate(a, CR_RATE_PER_CLIENT, 2, 60000, 0, NULL));
    OK(cr_rate_limiter_try_acquire(a, 2, 0));
    assert_int_equal(cr_rate_limiter_try_acquire(a, 1, 0), CR_BUSY);
    OK(cr_rate_limiter_try_acquire(b, 1, 0));
    OK(cr_rate_limiter_try_acquire(b, 1, 0));
    assert_int_equal(cr_rate_limiter_try_acquire(b, 1, 0), CR_BUSY);
    assert_int_equal(redis_int("GET {perclient}:value:%s",
                               cr_client_id(test_client)), 0);
    assert_int_equal(redis_int("GET {perclient}:value:%s",
                               cr_client_id(other)), 0);
    assert_int_equal(redis_int("EXISTS {perclient}:value"), 0);
    cr_rate_limiter_free(b);
    cr_client_free(other);
    cr_rate_limiter_free(a);
}

static void
test_rate_limiter_set_rate_starts_afresh_and_delete_removes_all(void **state)
{
    cr_rate_limiter *l = limiter("reset");
    cr_rate_config cfg;
    bool deleted = false;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 2, 60000, 0, NULL));
    OK(cr_rate_limiter_try_acquire(l, 2, 0));
    assert_int_equal(cr_rate_limiter_try_acquire(l, 1, 0), CR_BUSY);
    OK(cr_rate_limiter_set_rate(l, CR_RATE_OVERALL, 3, 60000, 0));
    OK(cr_rate_limiter_get_config(l, &cfg));
    assert_int_equal(cfg.rate, 3);
    OK(cr_rate_limiter_try_acquire(l, 3, 0));
    /* A change of type clears the other type's state too. */
    OK(cr_rate_limiter_set_rate(l, CR_RATE_PER_CLIENT, 1, 60000, 0));
    assert_int_equal(redis_int("EXISTS {reset}:value {reset}:permits"), 0);
    OK(cr_rate_limiter_try_acquire(l, 1, 0));
    OK(cr_rate_limiter_delete(l, &deleted));
    assert_true(deleted);
    assert_int_equal(cr_test_redis_count_keys(&test_redis, "*"), 0);
    OK(cr_rate_limiter_delete(l, &deleted));
    assert_false(deleted);
    cr_rate_limiter_free(l);
}

/* A thread of the test process taking permits for a while. */
typedef struct taker {
    cr_rate_limiter *limiter;
    int64_t until; /* cr_test_now_ms() */
    int permits;   /* 0: 1, 2 or 3 in turn */
    bool probe;    /* one attempt every 25 ms instead of waiting */
    long granted;  /* permits */
    pthread_t thread;
} taker;

static void *
taker_run(void *arg)
{
    taker *t = arg;
    int64_t now;
    int i = 0;

    while ((now = cr_test_now_ms()) < t->until) {
        int p = t->permits > 0 ? t->permits : 1 + i++ % 3;
        cr_status rc = cr_rate_limiter_try_acquire(t->limiter, p,
                                                   t->probe ? 0
                                                   : t->until - now);

        if (t->probe)
            usleep(25000);

        if (rc == CR_OK)
            t->granted += p;
        else
            assert_int_equal(rc, CR_BUSY);
    }
    return NULL;
}

/* Reads a worker's count of grants and checks that it exited with 0. */
static long
worker_grants(pid_t pid, int fd)
{
    char line[64] = "";

    cr_test_read_line(fd, line, sizeof(line), -1);
    close(fd);
    reap_ok(pid);
    return atol(line);
}

#define HAMMER_PROCS 8
#define HAMMER_RATE 20
#define HAMMER_INTERVALS 4

static void
test_rate_limiter_eight_processes_never_exceed_the_rate_in_any_window(void **state)
{
    collector col;
    taker t[2];
    pid_t pids[HAMMER_PROCS];
    int fds[HAMMER_PROCS], i;
    cr_rate_limiter *l = limiter("hammer");
    long total = 0;
    size_t in_run = 0, k;
    long long first, run_ms = HAMMER_INTERVALS * 1000 + 600;
    char ms[32];
    const char *args[5];

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, HAMMER_RATE, 1000, 0,
                                    NULL));
    memset(&col, 0, sizeof(col));
    snprintf(col.key, sizeof(col.key), "{hammer}:permits");
    assert_int_equal(pthread_create(&col.thread, NULL, collector_run, &col), 0);
    snprintf(ms, sizeof(ms), "%lld", run_ms);
    args[0] = test_redis.url;
    args[1] = "hammer";
    args[2] = ms;
    args[3] = "2";
    args[4] = NULL;
    for (i = 0; i < HAMMER_PROCS; i++) {
        const char *a[] = {"rate", args[0], args[1], args[2], args[3], NULL};

        pids[i] = cr_test_spawn("coord_worker", a, &fds[i]);
        assert_true(pids[i] > 0);
    }
    /* Two threads here: one waits as the workers do, one makes single
     * attempts at any moment (as Java's tryAcquire() would). */
    for (i = 0; i < 2; i++) {
        memset(&t[i], 0, sizeof(t[i]));
        t[i].limiter = l;
        t[i].permits = 1;
        t[i].probe = i == 1;
        t[i].until = cr_test_now_ms() + run_ms;
        assert_int_equal(pthread_create(&t[i].thread, NULL, taker_run, &t[i]),
                         0);
    }
    for (i = 0; i < 2; i++) {
        pthread_join(t[i].thread, NULL);
        total += t[i].granted;
    }
    for (i = 0; i < HAMMER_PROCS; i++)
        total += worker_grants(pids[i], fds[i]);
    atomic_store(&col.stop, true);
    pthread_join(col.thread, NULL);
    /* Every grant has its record, and the records hold one permit each. */
    assert_int_equal((long)col.n, total);
    /* Never more than the rate in any window of one interval. */
    assert_true(most_in_a_window(col.v, col.n, 1000) <= HAMMER_RATE);
    /* And close to it: the intervals from the first grant hold (almost)
     * the rate each. */
    first = col.v[0].score;
    for (k = 0; k < col.n; k++)
        if (col.v[k].score < first + HAMMER_INTERVALS * 1000)
            in_run++;
    fprintf(stderr, "hammer: %ld grants, %zu in the first %d intervals\n",
            total, in_run, HAMMER_INTERVALS);
    assert_true(in_run * 100 >= 95 * HAMMER_RATE * HAMMER_INTERVALS);
    assert_true(in_run <= HAMMER_RATE * HAMMER_INTERVALS);
    free(col.v);
    cr_rate_limiter_free(l);
}

static void
test_rate_limiter_threads_asking_for_several_permits_keep_the_window(void **state)
{
    collector col;
    taker t[6];
    cr_rate_limiter *l = limiter("mixed");

    long total = 0;
    size_t k;
    int i;

    (void)state;
    OK(cr_rate_limiter_try_set_rate(l, CR_RATE_OVERALL, 12, 1000, 0, NULL));
    memset(&col, 0, sizeof(col));
    snprintf(col.key, sizeof(col.key), "{mixed}:permits");
    assert_int_equal(pthread_create(&col.thread, NULL, collector_run, &col), 0);
    for (i = 0; i < 6; i++) {
        memset(&t[i], 0, sizeof(t[i]));
        t[i].limiter = l;
        t[i].probe = i == 5;
        t[i].until = cr_test_now_ms() + 3300;
        assert_int_equal(pthread_create(&t[i].thread, NULL, taker_run, &t[i]),
                         0);
    }
    for (i = 0; i < 6; i++) {
        pthread_join(t[i].thread, NULL);
        total += t[i].granted;
    }
    atomic_store(&col.stop, true);
    pthread_join(col.thread, NULL);
    for (k = 0; k < col.n; k++)
        total -= permits_of(&col.v[k]);
    assert_int_equal(total, 0);
    assert_true(most_in_a_window(col.v, col.n, 1000) <= 12);
    free(col.v);
    cr_rate_limiter_free(l);
}

/* A thread waiting in try_acquire for a permit (wait_ms: its wait, 0
 * standing for CR_WAIT_FOREVER) and how long it took. */
typedef struct blocked {
    cr_rate_limiter *limiter;
    int64_t wait_ms, took;
    cr_status rc;
    atomic_bool done;
    pthread_t thread;
} blocked;

static void *
blocked_run(void *arg)
{
    blocked *b = arg;
    int64_t t0 = cr_test_now_ms();

    b->rc = cr_rate_limiter_try_acquire(b->limiter, 1,
                                        b->wait_ms == 0 ? CR_WAIT_FOREVER
                                                        : b->wait_ms);
    b->took = cr_test_now_ms() - t0;
    atomic_store(&b->done, true);
    return NULL;
}

static bool
is_done(void *arg)
{
    return atomic_load(&((blocked *)arg)->done);
}

static void
test_rate_limiter_freeing_the_client_ends_a_wait(void **state)
{
    cr_client *c = new_client(300);
    blocked b;
    int64_t t0;

    (void)state;
    assert_non_null(c);
    memset(&b, 0, sizeof(b));
    OK(cr_rate_limiter_new(c, "stuck", &b.limiter));
    OK(cr_rate_limiter_try_set_rate(b.limiter, CR_RATE_OVERALL, 1, 600000, 0,
                                    NULL));
    OK(cr_rate_limiter_try_acquire(b.limiter, 1, 0));
    assert_int_equal(pthread_create(&b.thread, NULL, blocked_run, &b), 0);
    /* It sleeps the 10-minute hint; no more attempts come meanwhile. */
    assert_false(cr_test_wait_until(is_done, &b, 300));
    t0 = cr_test_now_ms();
    cr_client_free(c);
    pthread_join(b.thread, NULL);
    assert_int_equal(b.rc, CR_ECLOSED);
    /* Within the free's grace (one command timeout), not the hint. */
    assert_true(cr_test_now_ms() - t0 < slow(2000) + 1000);
    cr_rate_limiter_free(b.limiter);
}

/* A wait whose attempts fail for I/O (the link cut, new connections
 * refused) retries them with backoff, and is granted once the link is
 * back: the permit came back meanwhile. Three refused connections show
 * it retried rather than gave up. */
static void
test_rate_limiter_a_wait_rides_out_a_broken_link(void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;
    cr_test_relay_count w;
    blocked b;

    (void)state;
    assert_non_null(relay);
    c = client_on_port(cr_test_relay_port(relay), 300, slow(30000));
    assert_non_null(c);
    memset(&b, 0, sizeof(b));
    OK(cr_rate_limiter_new(c, "cut", &b.limiter));
    OK(cr_rate_limiter_try_set_rate(b.limiter, CR_RATE_OVERALL, 1, 500, 0,
                                    NULL));
    OK(cr_rate_limiter_try_acquire(b.limiter, 1, 0));
    cr_test_relay_refuse(relay, true);
    cr_test_relay_cut(relay);
    w.relay = relay;
    w.n = cr_test_relay_accepts(relay) + 3;
    b.wait_ms = slow(30000);
    assert_int_equal(pthread_create(&b.thread, NULL, blocked_run, &b), 0);
    assert_true(cr_test_wait_until(cr_test_relay_reached, &w, slow(10000)));
    assert_false(atomic_load(&b.done));
    cr_test_relay_refuse(relay, false);
    pthread_join(b.thread, NULL);
    OK(b.rc);
    assert_true(b.took < b.wait_ms);
    cr_rate_limiter_free(b.limiter);
    cr_client_free(c);
    cr_test_relay_stop(relay);
}

/* A wait that cannot reach Redis for longer than the client's reconnect
 * window ends then, with CR_EIO, however long it would have waited: not
 * before the window, not at the end of its 30 s wait. */
static void
test_rate_limiter_a_wait_ends_with_eio_once_the_reconnect_window_passed(void **state)
{
    const int64_t window_ms = 1000;
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;
    blocked b;

    (void)state;
    assert_non_null(relay);
    c = client_on_port(cr_test_relay_port(relay), 300, window_ms);
    assert_non_null(c);
    memset(&b, 0, sizeof(b));
    OK(cr_rate_limiter_new(c, "gone", &b.limiter));
    OK(cr_rate_limiter_try_set_rate(b.limiter, CR_RATE_OVERALL, 1, 500, 0,
                                    NULL));
    cr_test_relay_refuse(relay, true);
    cr_test_relay_cut(relay);
    b.wait_ms = 30000;
    assert_int_equal(pthread_create(&b.thread, NULL, blocked_run, &b), 0);
    pthread_join(b.thread, NULL);
    assert_int_equal(b.rc, CR_EIO);
    assert_true(b.took >= window_ms);
    /* The window, then at most one more attempt (refused at once). */
    assert_true(b.took <= window_ms + slow(2000));
    cr_rate_limiter_free(b.limiter);
    cr_client_free(c);
    cr_test_relay_stop(relay);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_rate_limiter_try_set_rate_sets_once_and_get_config_reads_it),
        T(test_rate_limiter_wire_keys_records_and_no_ttl),
        T(test_rate_limiter_tagged_name_and_keep_alive_ttls),
        T(test_rate_limiter_copies_the_time_to_live_of_n),
        T(test_rate_limiter_permits_above_the_rate_are_refused),
        T(test_rate_limiter_without_a_rate_is_not_initialized),
        T(test_rate_limiter_a_resent_attempt_takes_permits_once),
        T(test_rate_limiter_reads_records_it_did_not_write),
        T(test_rate_limiter_grants_within_the_rate_over_the_records_whatever_the_value),
        T(test_rate_limiter_counts_records_another_client_added_between_its_grants),
        T(test_rate_limiter_available_permits_come_back_after_the_interval),
        T(test_rate_limiter_a_wait_sleeps_the_hint_without_polling),
        T(test_rate_limiter_gives_up_at_once_when_the_hint_is_beyond_the_wait),
        T(test_rate_limiter_per_client_gives_each_client_its_own_budget),
        T(test_rate_limiter_set_rate_starts_afresh_and_delete_removes_all),
        T(test_rate_limiter_eight_processes_never_exceed_the_rate_in_any_window),
        T(test_rate_limiter_threads_asking_for_several_permits_keep_the_window),
        T(test_rate_limiter_freeing_the_client_ends_a_wait),
        T(test_rate_limiter_a_wait_rides_out_a_broken_link),
        T(test_rate_limiter_a_wait_ends_with_eio_once_the_reconnect_window_passed),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
