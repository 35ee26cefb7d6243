/* SPDX-License-Identifier: MIT */
/*
 * RCountDownLatch against a real redis-server: setting and counting down,
 * waiting threads and processes all woken by the last count down, awaits
 * that must not block (an open latch, a deleted latch, a missed message),
 * credisson's latch expiry (CR_EEXPIRED) and how it is told from a latch
 * counted down to zero, the keys and messages on the wire (protocol section
 * 9), and bad arguments.
 */
#include <pthread.h>

#include "sync_common.h"

/* ------------------------------------------------------------- helpers */

static cr_latch *
latch(const char *name, int64_t count, int64_t ttl_ms)
{
    cr_latch *l = NULL;
    bool set = false;

    assert_int_equal(cr_latch_new(test_client, name, &l), CR_OK);
    if (count > 0) {
        assert_int_equal(cr_latch_try_set_count(l, count, ttl_ms, &set), CR_OK);
        assert_true(set);
    }
    return l;
}

static int64_t
count_of(cr_latch *l)
{
    int64_t n = -999;

    assert_int_equal(cr_latch_get_count(l, &n), CR_OK);
    return n;
}

typedef struct waiter {
    cr_latch *latch;
    int64_t wait_ms;
    bool opened;     /* cr_latch_await_opened rather than cr_latch_await */
    cr_status rc;
    int64_t done_at;
    pthread_t thread;
} waiter;

static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->rc = w->opened ? cr_latch_await_opened(w->latch, w->wait_ms)
                      : cr_latch_await(w->latch, w->wait_ms);
    w->done_at = cr_test_now_ms();
    return NULL;
}

/* Starts a waiter; `opened`: one that must see the latch set before it
 * opens (cr_latch_await_opened). */
static void
waiter_begin(waiter *w, cr_latch *l, int64_t wait_ms, bool opened)
{
    memset(w, 0, sizeof(*w));
    w->latch = l;
    w->wait_ms = wait_ms;
    w->opened = opened;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

static void
waiter_start(waiter *w, cr_latch *l, int64_t wait_ms)
{
    waiter_begin(w, l, wait_ms, false);
}

/* Checks that `key` is an "opened" marker with its lifetime. */
static void
assert_opened_marker(const char *key)
{
    char cmd[160], value[32];
    long long ttl;

    snprintf(cmd, sizeof(cmd), "GET %s", key);
    assert_int_equal(redis_str(value, sizeof(value), cmd), 6);
    assert_string_equal(value, "opened");
    snprintf(cmd, sizeof(cmd), "PTTL %s", key);
    ttl = redis_int(cmd);
    assert_true(ttl > CR_LATCH_OPENED_MARK_MS - slow(5000) &&
                ttl <= CR_LATCH_OPENED_MARK_MS);
}

/* ------------------------------------------------------- basic contract */

static void
test_latch_try_set_count_sets_only_a_missing_latch(void **state)
{
    cr_latch *l = latch("gate", 3, 0);
    bool set = true;

    (void)state;
    assert_string_equal(cr_latch_name(l), "gate");
    assert_int_equal(cr_latch_try_set_count(l, 5, 0, &set), CR_OK);
    assert_false(set);
    assert_int_equal(count_of(l), 3);
    assert_int_equal(redis_int("PTTL gate"), -1);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(count_of(l), 2);
    assert_int_equal(cr_latch_await(l, 0), CR_TIMEOUT);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(count_of(l), 0);
    assert_int_equal(redis_int("EXISTS gate"), 0);
    /* Counting down a latch that is gone changes nothing. */
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(redis_int("EXISTS gate"), 0);
    assert_int_equal(cr_latch_try_set_count(l, 1, 0, &set), CR_OK);
    assert_true(set);
    cr_latch_free(l);
}

static void
test_latch_await_on_an_open_latch_returns_at_once(void **state)
{
    cr_latch *l = latch("never-set", 0, 0);
    int64_t start = cr_test_now_ms();

    (void)state;
    assert_int_equal(cr_latch_await(l, CR_WAIT_FOREVER), CR_OK);
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    assert_true(cr_test_now_ms() - start < slow(300));
    assert_int_equal(numsub("redisson_countdownlatch__channel__{never-set}"), 0);
    /* A Java trySetCount(0) leaves "0": open too. */
    assert_true(redis_ok("SET zero 0"));
    cr_latch_free(l);
    l = latch("zero", 0, 0);
    assert_int_equal(cr_latch_await(l, slow(2000)), CR_OK);
    cr_latch_free(l);
}

static void
test_latch_await_times_out_within_its_budget(void **state)
{
    cr_latch *l = latch("slow", 1, 0);
    int64_t start = cr_test_now_ms(), took;

    (void)state;
    assert_int_equal(cr_latch_await(l, 300), CR_TIMEOUT);
    took = cr_test_now_ms() - start;
    assert_true(took >= 300 && took < 300 + slow(600));
    assert_true(cr_test_wait_until(has_no_subscriber,
                                   "redisson_countdownlatch__channel__{slow}",
                                   slow(3000)));
    cr_latch_free(l);
}

/* ----------------------------------------------------------- waking */

static void
test_latch_last_count_down_wakes_every_waiting_thread(void **state)
{
    cr_client *other = new_client(30000);
    cr_latch *l = latch("threads", 2, 0), *theirs = NULL;
    uint64_t before = commands_of(test_client);
    waiter w[4];
    int64_t opened;
    int i;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_latch_new(other, "threads", &theirs), CR_OK);
    for (i = 0; i < 4; i++)
        waiter_start(&w[i], l, CR_WAIT_FOREVER);
    /* Each has found it closed: all four wait when it opens. */
    await_commands(test_client, before + 4);
    await_subscribers("redisson_countdownlatch__channel__{threads}", 1);
    assert_int_equal(cr_latch_count_down(theirs), CR_OK);
    assert_int_equal(cr_latch_count_down(theirs), CR_OK);
    opened = cr_test_now_ms();
    for (i = 0; i < 4; i++) {
        pthread_join(w[i].thread, NULL);
        assert_int_equal(w[i].rc, CR_OK);
        assert_true(w[i].done_at - opened < slow(500));
    }
    cr_latch_free(l);
    cr_latch_free(theirs);
    cr_client_free(other);
}

#define PROCS 4

static void
test_latch_last_count_down_wakes_every_waiting_process_promptly(void **state)
{
    cr_latch *l = latch("procs", 3, 0);
    pid_t pids[PROCS];
    int out[PROCS];
    int64_t opened;
    int i;

    (void)state;
    for (i = 0; i < PROCS; i++)
        pids[i] = spawn_worker(&out[i], "latch-wait", "procs", NULL, NULL);
    /* Every process subscribed (one subscription per client). */
    await_subscribers("redisson_countdownlatch__channel__{procs}", PROCS);
    for (i = 0; i < 3; i++)
        assert_int_equal(cr_latch_count_down(l), CR_OK);
    opened = cr_test_now_ms();
    for (i = 0; i < PROCS; i++) {
        char line[64];
        int rc = -1;
        long long at = 0;

        assert_true(cr_test_read_line(out[i], line, sizeof(line), -1));
        close(out[i]);
        assert_int_equal(sscanf(line, "%d %lld", &rc, &at), 2);
        assert_int_equal(rc, CR_OK);
        /* Woken by the message, not by a re-check or a ttl. */
        assert_true(at - opened < slow(500));
        reap_ok(pids[i]);
    }
    cr_latch_free(l);
}

static void
test_latch_waiter_wakes_on_a_java_style_count_down(void **state)
{
    cr_latch *l = latch("java", 1, 0);
    waiter w;
    int64_t opened;

    (void)state;
    waiter_start(&w, l, slow(10000));
    await_subscribers("redisson_countdownlatch__channel__{java}", 1);
    /* What Java's countDown does to a count of 1. */
    assert_int_equal(redis_int("DECR java"), 0);
    assert_int_equal(redis_int("DEL java"), 1);
    assert_int_equal(redis_int("PUBLISH redisson_countdownlatch__channel__{java} 0"), 1);
    opened = cr_test_now_ms();
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.done_at - opened < slow(500));
    cr_latch_free(l);
}

/* Whether a subscriber link has had its PING (the waiter's fence) run. */
static bool
fence_pinged(void *arg)
{
    static char list[65536];

    (void)arg;
    return redis_str(list, sizeof(list), "CLIENT LIST") > 0 &&
           strstr(list, "cmd=ping ") != NULL;
}

static void
test_latch_zero_during_the_wait_opens_it_though_set_again_at_once(void **state)
{
    cr_latch *l = latch("rearmed", 1, 0);
    waiter w;

    (void)state;
    waiter_start(&w, l, slow(2000));
    await_subscribers("redisson_countdownlatch__channel__{rearmed}", 1);
    assert_true(cr_test_wait_until(fence_pinged, NULL, slow(2000)));
    /* Opened and closed again in one step: no look can see it open, only
     * the message tells. A waiter that looked again would time out. */
    assert_int_equal(redis_int("EVAL %s 2 rearmed %s",
                               "redis.call('del', KEYS[1]); "
                               "redis.call('publish', KEYS[2], '0'); "
                               "redis.call('set', KEYS[1], '1'); return 1",
                               "redisson_countdownlatch__channel__{rearmed}"),
                     1);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_int_equal(count_of(l), 1);
    assert_int_equal(redis_int("DEL rearmed"), 1);
    cr_latch_free(l);
}

/* ------------------------------------------------- countDownAndAwait */

/* For cr_test_wait_until: a command (no arguments) and the integer it must
 * answer. */
typedef struct int_wanted {
    const char *cmd;
    long long want;
} int_wanted;

static bool
int_reached(void *arg)
{
    int_wanted *w = arg;

    return redis_int(w->cmd) == w->want;
}

/* Waits until `cmd` answers `want`; false when it never did. */
static bool
wait_int(const char *cmd, long long want, int64_t timeout_ms)
{
    int_wanted w = {cmd, want};

    return cr_test_wait_until(int_reached, &w, timeout_ms);
}

typedef struct counter {
    cr_client *client;
    const char *name;
    cr_status rc;
    pthread_t thread;
} counter;

static void *
counter_run(void *arg)
{
    counter *c = arg;
    cr_latch *l = NULL;

    c->rc = cr_latch_new(c->client, c->name, &l);
    if (c->rc == CR_OK)
        c->rc = cr_latch_count_down_and_await(l, slow(10000));
    cr_latch_free(l);
    return NULL;
}

static void
test_latch_count_down_and_await_releases_every_party_once_all_counted(void **state)
{
    counter c[4];
    int i;

    (void)state;
    cr_latch_free(latch("parties", 5, 0));
    for (i = 0; i < 4; i++) {
        c[i].client = new_client(30000); /* a subscription of its own each */
        c[i].name = "parties";
        assert_non_null(c[i].client);
        assert_int_equal(pthread_create(&c[i].thread, NULL, counter_run,
                                        &c[i]), 0);
    }
    /* Four of five counted down, each subscribed before it did: all wait. */
    await_subscribers("redisson_countdownlatch__channel__{parties}", 4);
    assert_true(wait_int("GET parties", 1, slow(5000)));
    for (i = 0; i < 4; i++)
        assert_int_equal(pthread_kill(c[i].thread, 0), 0);
    {
        cr_latch *last = latch("parties", 0, 0);

        assert_int_equal(cr_latch_count_down_and_await(last, 0), CR_OK);
        cr_latch_free(last);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(c[i].thread, NULL);
        assert_int_equal(c[i].rc, CR_OK);
        cr_client_free(c[i].client);
    }
    assert_int_equal(redis_int("EXISTS parties"), 0);
}

/* Reads MONITOR lines from `m` until one holds `needle` (then true) or
 * nothing comes for the wait. Each line read goes into log (size bytes,
 * appended). */
static bool
monitor_until(redisContext *m, const char *needle, char *log, size_t size)
{
    for (;;) {
        redisReply *r = NULL;
        bool found;

        if (redisGetReply(m, (void **)&r) != REDIS_OK || r == NULL)
            return false;
        found = r->type == REDIS_REPLY_STATUS && strstr(r->str, needle);
        if (r->type == REDIS_REPLY_STATUS && strlen(log) + r->len + 2 < size) {
            strcat(log, r->str);
            strcat(log, "\n");
        }
        freeReplyObject(r);
        if (found)
            return true;
    }
}

static void
test_latch_count_down_and_await_subscribes_before_it_counts_down(void **state)
{
    struct timeval tv = {slow(5000) / 1000, 0};
    redisContext *m = redisConnectWithTimeout("127.0.0.1", test_redis.port, tv);
    redisReply *ok;
    cr_latch *l = latch("order", 2, 0);
    static char log[16384];
    const char *sub, *counted;

    (void)state;
    log[0] = '\0';
    assert_true(m != NULL && m->err == 0);
    redisSetTimeout(m, tv);
    ok = redisCommand(m, "MONITOR");
    assert_non_null(ok);
    freeReplyObject(ok);
    /* Not the last: it counts down and waits until the timeout. */
    assert_int_equal(cr_latch_count_down_and_await(l, slow(300)), CR_TIMEOUT);
    assert_int_equal(count_of(l), 1);
    /* The count down is the script whose keys are the latch, its channel
     * and the marker: three keys (a look has two). */
    assert_true(monitor_until(m, "\"3\" \"order\" "
                              "\"redisson_countdownlatch__channel__{order}\"",
                              log, sizeof(log)));
    sub = strstr(log, "\"SUBSCRIBE\" "
                 "\"redisson_countdownlatch__channel__{order}\"");
    counted = strstr(log, "\"3\" \"order\"");
    if (sub == NULL || sub > counted)
        print_error("the server saw:\n%s", log);
    assert_true(sub != NULL && sub < counted);
    /* Once: a wait of 0 counts down, looks, and does not count again. */
    assert_int_equal(cr_latch_count_down_and_await(l, 0), CR_OK);
    assert_int_equal(cr_latch_count_down_and_await(l, 0), CR_OK);
    assert_int_equal(redis_int("EXISTS order"), 0);
    redisFree(m);
    cr_latch_free(l);
}

static void
test_latch_count_down_and_await_is_opened_though_set_again_at_once(void **state)
{
    cr_latch *l = latch("again", 2, 0);
    counter c = {.client = test_client, .name = "again"};

    (void)state;
    assert_int_equal(pthread_create(&c.thread, NULL, counter_run, &c), 0);
    assert_true(wait_int("GET again", 1, slow(5000)));
    assert_true(cr_test_wait_until(fence_pinged, NULL, slow(2000)));
    /* The last count down and a new trySetCount in one step: no look can
     * see the latch open; the 0, read after the fence, opens it. */
    assert_int_equal(redis_int("EVAL %s 2 again %s",
                               "redis.call('del', KEYS[1]); "
                               "redis.call('publish', KEYS[2], '0'); "
                               "redis.call('set', KEYS[1], '3'); return 1",
                               "redisson_countdownlatch__channel__{again}"),
                     1);
    pthread_join(c.thread, NULL);
    assert_int_equal(c.rc, CR_OK);
    assert_int_equal(count_of(l), 3);
    cr_latch_free(l);
}

static void
test_latch_count_down_and_await_on_an_absent_or_expired_latch(void **state)
{
    cr_latch *l = latch("absent", 0, 0), *e = latch("gone", 1, 50);

    (void)state;
    assert_int_equal(cr_latch_count_down_and_await(l, slow(1000)), CR_OK);
    assert_int_equal(redis_int("EXISTS absent"), 0);
    assert_true(wait_int("EXISTS gone", 0, slow(2000)));
    assert_int_equal(cr_latch_count_down_and_await(e, slow(1000)),
                     CR_EEXPIRED);
    assert_int_equal(cr_latch_count_down_and_await(l, -5), CR_EINVAL);
    assert_int_equal(cr_latch_count_down_and_await(NULL, 0), CR_EINVAL);
    cr_latch_free(l);
    cr_latch_free(e);
}

static void
test_latch_waiter_rechecks_after_a_missed_message(void **state)
{
    cr_latch *l = latch("missed", 1, 0);
    waiter w;
    int64_t opened;

    (void)state;
    waiter_start(&w, l, CR_WAIT_FOREVER);
    await_subscribers("redisson_countdownlatch__channel__{missed}", 1);
    /* Opened without any message. */
    assert_int_equal(redis_int("DEL missed"), 1);
    opened = cr_test_now_ms();
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.done_at - opened < slow(2500));
    cr_latch_free(l);
}

static void
test_latch_delete_publishes_new_count_and_waiters_see_it_open(void **state)
{
    const char *channels[1] = {"redisson_countdownlatch__channel__{del}"};
    const char *want[] = {"1", "1"};
    cr_test_listener *li = listen_on(channels, 1);
    cr_latch *l = latch("del", 2, 0);
    waiter w;
    bool deleted = false;

    (void)state;
    waiter_start(&w, l, slow(10000));
    await_subscribers(channels[0], 2);
    assert_int_equal(cr_latch_delete(l, &deleted), CR_OK);
    assert_true(deleted);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_int_equal(cr_latch_delete(l, &deleted), CR_OK);
    assert_false(deleted);
    assert_messages(li, channels[0], want, 2);
    cr_test_listener_stop(li);
    cr_latch_free(l);
}

static void
test_latch_client_free_wakes_waiters_with_eclosed(void **state)
{
    cr_client *other = new_client(30000);
    cr_latch *l = latch("closing", 1, 0), *theirs = NULL;
    waiter w;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_latch_new(other, "closing", &theirs), CR_OK);
    waiter_start(&w, theirs, CR_WAIT_FOREVER);
    await_subscribers("redisson_countdownlatch__channel__{closing}", 1);
    cr_client_free(other);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_ECLOSED);
    cr_latch_free(theirs);
    assert_int_equal(count_of(l), 1);
    cr_latch_free(l);
}

/* ------------------------------------------------------------- expiry */

static void
test_latch_expiry_is_reported_to_waiters_as_eexpired(void **state)
{
    cr_latch *l = latch("doomed", 2, 400);
    waiter w;
    long long marker;
    int64_t set_at = cr_test_now_ms();

    (void)state;
    assert_true(redis_int("PTTL doomed") > 0);
    marker = redis_int("PTTL {doomed}:credisson_latch_expiry");
    assert_true(marker > CR_LATCH_EXPIRY_GRACE_MS &&
                marker <= CR_LATCH_EXPIRY_GRACE_MS + 400);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    waiter_start(&w, l, CR_WAIT_FOREVER);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_EEXPIRED);
    /* Woken by the latch's own ttl, not the one-second re-check. */
    assert_true(w.done_at - set_at < 400 + slow(400));
    assert_int_equal(count_of(l), 0);
    assert_int_equal(cr_latch_await(l, 0), CR_EEXPIRED);
    assert_int_equal(cr_latch_count_down(l), CR_EEXPIRED);
    assert_int_equal(redis_int("EXISTS doomed"), 0);
    cr_latch_free(l);
}

static void
test_latch_with_expiry_counted_down_to_zero_is_open_not_expired(void **state)
{
    cr_latch *l = latch("made-it", 1, 60000);

    (void)state;
    assert_int_equal(redis_int("EXISTS {made-it}:credisson_latch_expiry"), 1);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(redis_int("EXISTS made-it"), 0);
    /* The marker now says "opened", for an hour, not "expiring". */
    assert_opened_marker("{made-it}:credisson_latch_expiry");
    assert_int_equal(cr_latch_await(l, CR_WAIT_FOREVER), CR_OK);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    cr_latch_free(l);
}

static void
test_latch_with_expiry_opened_by_java_is_open_not_expired(void **state)
{
    cr_latch *l = latch("java-opened", 1, 60000);

    (void)state;
    /* Java's countDown knows nothing of the marker and leaves it. */
    assert_int_equal(redis_int("DECR java-opened"), 0);
    assert_int_equal(redis_int("DEL java-opened"), 1);
    assert_int_equal(redis_int("EXISTS {java-opened}:credisson_latch_expiry"), 1);
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    /* A count down on it is one more on an open latch, as in Java. */
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(redis_int("EXISTS java-opened"), 0);
    cr_latch_free(l);
}

static void
test_latch_name_set_again_by_java_after_an_expiry_is_not_expired(void **state)
{
    cr_latch *l = latch("reused", 1, 200);

    (void)state;
    assert_true(cr_test_wait_until(key_gone, "reused", slow(3000)));
    assert_int_equal(cr_latch_await(l, 0), CR_EEXPIRED);
    /* Java's trySetCount(2) under the same name, the old marker still
     * there: a C look at the closed latch finds the marker stale... */
    assert_true(redis_ok("SET reused 2"));
    assert_int_equal(redis_int("EXISTS {reused}:credisson_latch_expiry"), 1);
    assert_int_equal(cr_latch_await(l, 0), CR_TIMEOUT);
    assert_int_equal(redis_int("EXISTS {reused}:credisson_latch_expiry"), 0);
    /* ...so that once Java opens it, it is open, not expired. */
    assert_int_equal(redis_int("DEL reused"), 1);
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    /* The same when a C count down is the first to see it. */
    cr_latch_free(l);
    l = latch("reused", 1, 200);
    assert_true(cr_test_wait_until(key_gone, "reused", slow(3000)));
    assert_true(redis_ok("SET reused 2"));
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(redis_int("EXISTS {reused}:credisson_latch_expiry"), 0);
    assert_int_equal(redis_int("DEL reused"), 1);
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    cr_latch_free(l);
}

static void
test_latch_set_to_zero_by_java_counts_down_as_open(void **state)
{
    cr_latch *l = latch("zero", 0, 0);

    (void)state;
    /* Java's trySetCount(0) leaves "0": open, and a count down is one more
     * on an open latch. */
    assert_true(redis_ok("SET zero 0"));
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(redis_int("EXISTS zero"), 0);
    cr_latch_free(l);
}

static void
test_latch_set_without_expiry_forgets_an_earlier_expiry(void **state)
{
    cr_latch *l = latch("reused", 1, 100);
    bool set = false;

    (void)state;
    assert_int_equal(cr_latch_await(l, slow(3000)), CR_EEXPIRED);
    assert_int_equal(cr_latch_try_set_count(l, 1, 0, &set), CR_OK);
    assert_true(set);
    assert_int_equal(redis_int("EXISTS {reused}:credisson_latch_expiry"), 0);
    assert_int_equal(redis_int("PTTL reused"), -1);
    /* Opened by a Java-style count down: no marker left to misread. */
    assert_int_equal(redis_int("DECR reused"), 0);
    assert_int_equal(redis_int("DEL reused"), 1);
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    cr_latch_free(l);
}

/* ------------------------------------------ a latch that must be set */

static void
test_latch_await_opened_waits_for_a_latch_never_set(void **state)
{
    cr_latch *l = latch("typo", 0, 0);
    int64_t start = cr_test_now_ms(), took;

    (void)state;
    assert_int_equal(cr_latch_await(l, 0), CR_OK);    /* Redisson's way */
    assert_int_equal(cr_latch_await_opened(l, 0), CR_TIMEOUT);
    start = cr_test_now_ms();
    assert_int_equal(cr_latch_await_opened(l, 300), CR_TIMEOUT);
    took = cr_test_now_ms() - start;
    assert_true(took >= 300 && took < 300 + slow(600));
    assert_non_null(strstr(cr_last_error(), "never set"));
    cr_latch_free(l);
}

static void
test_latch_await_opened_returns_for_a_latch_a_count_down_opened(void **state)
{
    cr_latch *l = latch("done", 1, 0);

    (void)state;
    assert_int_equal(cr_latch_await_opened(l, 0), CR_TIMEOUT); /* closed */
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(redis_int("EXISTS done"), 0);
    assert_opened_marker("{done}:credisson_latch_expiry");
    assert_int_equal(cr_latch_await_opened(l, 0), CR_OK);
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    cr_latch_free(l);
}

static void
test_latch_await_opened_waiter_sees_the_set_then_the_last_count_down(
    void **state)
{
    cr_latch *l = latch("late", 0, 0), *setter = latch("late", 0, 0);
    bool set = false;
    waiter w;
    int64_t opened;

    (void)state;
    waiter_begin(&w, l, slow(10000), true);
    /* Subscribed: it did not take the missing latch for an open one. */
    await_subscribers("redisson_countdownlatch__channel__{late}", 1);
    assert_int_equal(cr_latch_try_set_count(setter, 2, 0, &set), CR_OK);
    assert_true(set);
    assert_int_equal(cr_latch_count_down(setter), CR_OK);
    opened = cr_test_now_ms();
    assert_int_equal(cr_latch_count_down(setter), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.done_at >= opened);
    assert_true(w.done_at - opened < slow(500));
    cr_latch_free(l);
    cr_latch_free(setter);
}

static void
test_latch_await_opened_and_java_which_writes_no_marker(void **state)
{
    cr_latch *l = latch("java-set", 0, 0);
    waiter w;

    (void)state;
    /* Java's trySetCount(1), then its countDown while a C waiter waits:
     * the "0" message opens it. */
    assert_true(redis_ok("SET java-set 1"));
    waiter_begin(&w, l, slow(10000), true);
    await_subscribers("redisson_countdownlatch__channel__{java-set}", 1);
    /* Waiting: its look after subscribing found the latch closed and its
     * fence (a PING on the subscription's link) is back. An opening by
     * Java before the fence is not seen (latch.h). */
    assert_true(cr_test_wait_until(fence_pinged, NULL, slow(2000)));
    assert_int_equal(redis_int("DECR java-set"), 0);
    assert_int_equal(redis_int("DEL java-set"), 1);
    assert_int_equal(redis_int("PUBLISH redisson_countdownlatch__channel__{java-set} 0"), 1);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    /* A waiter that comes afterwards finds no marker: never set, as far
     * as it can tell. */
    assert_int_equal(redis_int("EXISTS {java-set}:credisson_latch_expiry"), 0);
    assert_int_equal(cr_latch_await_opened(l, 200), CR_TIMEOUT);
    cr_latch_free(l);
}

static void
test_latch_set_again_forgets_that_it_was_opened(void **state)
{
    cr_latch *l = latch("again", 1, 0);
    bool set = false;

    (void)state;
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(cr_latch_await_opened(l, 0), CR_OK);
    assert_int_equal(cr_latch_try_set_count(l, 1, 0, &set), CR_OK);
    assert_true(set);
    assert_int_equal(redis_int("EXISTS {again}:credisson_latch_expiry"), 0);
    assert_int_equal(cr_latch_await_opened(l, 0), CR_TIMEOUT);
    /* And a latch deleted is not opened. */
    assert_int_equal(cr_latch_delete(l, NULL), CR_OK);
    assert_int_equal(cr_latch_await_opened(l, 0), CR_TIMEOUT);
    cr_latch_free(l);
}

static void
test_latch_opened_marker_near_its_end_is_not_an_expiry(void **state)
{
    cr_latch *l = latch("old-open", 0, 0);

    (void)state;
    /* In its last second, within the expiry grace: still "opened". */
    assert_true(redis_ok("SET {old-open}:credisson_latch_expiry opened PX 1000"));
    assert_int_equal(cr_latch_await(l, 0), CR_OK);
    assert_int_equal(cr_latch_await_opened(l, 0), CR_OK);
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    cr_latch_free(l);
}

/* ------------------------------------------------------------ the wire */

static void
test_latch_wire_keys_and_publishes_match_redisson(void **state)
{
    const char *channels[2] = {"redisson_countdownlatch__channel__{wire}",
                               "redisson_countdownlatch__channel__{app{7}l}"};
    const char *want[] = {"1", "0"};
    cr_test_listener *li = listen_on(channels, 2);
    cr_latch *l = latch("wire", 2, 0), *braced = NULL;
    char value[32];
    const cr_test_message *m;

    (void)state;
    assert_int_equal(redis_str(value, sizeof(value), "GET wire"), 1);
    assert_string_equal(value, "2");
    assert_int_equal(redis_str(value, sizeof(value), "TYPE wire"), 6);
    assert_string_equal(value, "string");
    assert_int_equal(redis_int("EXISTS {wire}:credisson_latch_expiry"), 0);
    assert_int_equal(cr_latch_count_down(l), CR_OK);   /* no message */
    assert_int_equal(cr_latch_count_down(l), CR_OK);   /* "0" */
    assert_int_equal(cr_latch_count_down(l), CR_OK);   /* absent: none */
    assert_messages(li, channels[0], want, 2);
    /* The channel always wraps the name in braces. */
    braced = latch("app{7}l", 1, 0);
    assert_int_equal(cr_latch_count_down(braced), CR_OK);
    assert_true(cr_test_listener_wait(li, 5, slow(3000)) >= 5);
    m = cr_test_listener_get(li, 3);
    assert_string_equal(m->channel, channels[1]);
    assert_string_equal(m->payload, "1");
    m = cr_test_listener_get(li, 4);
    assert_string_equal(m->channel, channels[1]);
    assert_string_equal(m->payload, "0");
    cr_test_listener_stop(li);
    cr_latch_free(l);
    cr_latch_free(braced);
}

/* ------------------------------------------------------------ bad input */

static void
test_latch_bad_arguments_are_refused_with_einval(void **state)
{
    cr_latch *l = NULL;
    int64_t n = 42;
    bool set = true;

    (void)state;
    assert_int_equal(cr_latch_new(test_client, NULL, &l), CR_EINVAL);
    assert_int_equal(cr_latch_new(test_client, "", &l), CR_EINVAL);
    assert_int_equal(cr_latch_new(test_client, "x", NULL), CR_EINVAL);
    assert_int_equal(cr_latch_new(NULL, "x", &l), CR_EINVAL);
    assert_null(l);
    l = latch("bad", 0, 0);
    assert_int_equal(cr_latch_try_set_count(l, 0, 0, &set), CR_EINVAL);
    assert_int_equal(cr_latch_try_set_count(l, -1, 0, &set), CR_EINVAL);
    assert_int_equal(cr_latch_try_set_count(l, CR_LATCH_COUNT_MAX + 1, 0, &set),
                     CR_EINVAL);
    assert_int_equal(cr_latch_try_set_count(l, 1, -1, &set), CR_EINVAL);
    assert_int_equal(cr_latch_try_set_count(l, 1, CR_DURATION_MAX + 1, &set),
                     CR_EINVAL);
    assert_true(set);
    assert_int_equal(cr_latch_await(l, -2), CR_EINVAL);
    assert_int_equal(cr_latch_await(NULL, 0), CR_EINVAL);
    assert_int_equal(cr_latch_count_down(NULL), CR_EINVAL);
    assert_int_equal(cr_latch_get_count(l, NULL), CR_EINVAL);
    assert_int_equal(cr_latch_get_count(NULL, &n), CR_EINVAL);
    assert_int_equal(n, 42);
    assert_int_equal(redis_int("EXISTS bad"), 0);
    cr_latch_free(l);
    cr_latch_free(NULL);
    assert_string_equal(cr_latch_name(NULL), "");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_latch_try_set_count_sets_only_a_missing_latch),
        T(test_latch_await_on_an_open_latch_returns_at_once),
        T(test_latch_await_times_out_within_its_budget),
        T(test_latch_last_count_down_wakes_every_waiting_thread),
        T(test_latch_last_count_down_wakes_every_waiting_process_promptly),
        T(test_latch_waiter_wakes_on_a_java_style_count_down),
        T(test_latch_zero_during_the_wait_opens_it_though_set_again_at_once),
        T(test_latch_count_down_and_await_releases_every_party_once_all_counted),
        T(test_latch_count_down_and_await_subscribes_before_it_counts_down),
        T(test_latch_count_down_and_await_is_opened_though_set_again_at_once),
        T(test_latch_count_down_and_await_on_an_absent_or_expired_latch),
        T(test_latch_waiter_rechecks_after_a_missed_message),
        T(test_latch_delete_publishes_new_count_and_waiters_see_it_open),
        T(test_latch_client_free_wakes_waiters_with_eclosed),
        T(test_latch_expiry_is_reported_to_waiters_as_eexpired),
        T(test_latch_with_expiry_counted_down_to_zero_is_open_not_expired),
        T(test_latch_with_expiry_opened_by_java_is_open_not_expired),
        T(test_latch_name_set_again_by_java_after_an_expiry_is_not_expired),
        T(test_latch_set_to_zero_by_java_counts_down_as_open),
        T(test_latch_set_without_expiry_forgets_an_earlier_expiry),
        T(test_latch_await_opened_waits_for_a_latch_never_set),
        T(test_latch_await_opened_returns_for_a_latch_a_count_down_opened),
        T(test_latch_await_opened_waiter_sees_the_set_then_the_last_count_down),
        T(test_latch_await_opened_and_java_which_writes_no_marker),
        T(test_latch_set_again_forgets_that_it_was_opened),
        T(test_latch_opened_marker_near_its_end_is_not_an_expiry),
        T(test_latch_wire_keys_and_publishes_match_redisson),
        T(test_latch_bad_arguments_are_refused_with_einval),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
