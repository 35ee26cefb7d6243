/* SPDX-License-Identifier: MIT */
/*
 * What the cross-implementation tests (test_java_*.c) share: the real Java
 * Redisson client as long-lived peers (java_peer.h) beside one
 * redis-server, a C client per test with the same watchdog and fair-lock
 * wait as the peers, C workers as processes (cross_worker), C threads and
 * the asynchronous API on a poll loop of the test's own, all taking part
 * in one exact non-atomic counter (GET, a millisecond, SET plus one), a rate limiter's budget taken from
 * both sides and judged on the grant records, and the wall clock both
 * sides stamp their times with. Include after lock_common.h.
 *
 * The peers run with a watchdog of JAVA_WATCHDOG_MS and a fair-lock wait of
 * JAVA_FAIR_WAIT_MS, and so does the C client; leases that must not be
 * what wakes a waiter are JAVA_LONG_LEASE_MS.
 */
#ifndef CR_TEST_JAVA_COMMON_H
#define CR_TEST_JAVA_COMMON_H

#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grant_records.h"
#include "java_peer.h"
#include "poll_loop.h"

#define JAVA_WATCHDOG_MS 1500
#define JAVA_FAIR_WAIT_MS 2000
#define JAVA_LONG_LEASE_MS 30000
#define JAVA_OPTIONS "--watchdog 1500 --fair-wait 2000"
/* The longest a C participant of a shared counter waits for its turn
 * before it fails (a broken exclusion must fail the test, not hang it). */
#define TURN_WAIT_MS 30000

/* The peers of the program (JVM processes), started by java_up. */
static cr_test_java *jpeer[2];
static size_t njpeers;
/* The release line the peers run and the C side names; NULL: 4.7. */
static const char *jline;
/* The C client's fair-lock wait: the peers' (0: the line's default). */
static int64_t jfair_wait = JAVA_FAIR_WAIT_MS;

/* A C client of the test server for the Java side `version` (NULL: the
 * newest), with the peers' watchdog and fair-lock wait. */
static inline cr_client *
cross_client(const char *version)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = test_redis.url;
    o.lock_watchdog_timeout_ms = JAVA_WATCHDOG_MS;
    if (jfair_wait > 0)
        o.fair_lock_wait_timeout_ms = jfair_wait;
    o.command_timeout_ms = slow(3000);
    o.redisson_version = version;
    if (cr_client_new(&o, &c) != CR_OK) {
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
        return NULL;
    }
    return c;
}

typedef struct peer_start {
    const char *line, *options;
    cr_test_java *peer;
} peer_start;

/* Starts one peer (a thread of java_start). */
static inline void *
start_peer(void *arg)
{
    peer_start *s = arg;

    s->peer = cr_test_java_start(s->line, test_redis.url, s->options);
    return NULL;
}

/* Starts `n` (at most 2) peers of line `line` with `options` side by
 * side, as jpeer[0..n-1]; 0, or -1 when one did not start. */
static inline int
java_start(const char *line, size_t n, const char *options)
{
    pthread_t t[2];
    peer_start s[2];
    size_t i;

    jline = line;
    for (i = 0; i < n && i < 2; i++) {
        s[i] = (peer_start){line, options, NULL};
        if (pthread_create(&t[i], NULL, start_peer, &s[i]) != 0)
            return -1;
    }
    for (i = 0; i < n && i < 2; i++) {
        pthread_join(t[i], NULL);
        jpeer[i] = s[i].peer;
    }
    njpeers = 0;
    while (njpeers < n && jpeer[njpeers] != NULL)
        njpeers++;
    return njpeers == n ? 0 : -1;
}

/* Group setup: skips the program (77) where the real client cannot run,
 * then starts the server and `n` peers of line `line` side by side with
 * JAVA_OPTIONS. */
static inline int
java_up_n(const char *program, const char *line, size_t n)
{
    cr_test_java_require(program);
    if (redis_up(NULL) != 0)
        return -1;
    return java_start(line, n, JAVA_OPTIONS);
}

/* Stops the peers. */
static inline void
java_stop(void)
{
    size_t i;

    for (i = 0; i < 2; i++) {
        cr_test_java_stop(jpeer[i]);
        jpeer[i] = NULL;
    }
    njpeers = 0;
}

static inline int
java_down(void **state)
{
    java_stop();
    return redis_down(state);
}

/* Per-test setup: a flushed server and a fresh C client for jline. */
static inline int
cross_up(void **state)
{
    (void)state;
    if (cr_test_redis_flushall(&test_redis) != 0)
        return -1;
    test_client = cross_client(jline);
    return test_client != NULL ? 0 : -1;
}

/* Sends a command to peer p's actor and asserts it answered ok within
 * wait_ms; the answer (borrowed from the peer). */
#define JAVA_OK(p, actor, wait_ms, ...)                                       \
    java_expect_ok(cr_test_java_call((p), (actor), slow(wait_ms), __VA_ARGS__))

static inline const char *
java_expect_ok(const char *answer)
{
    assert_non_null(answer);
    assert_true(cr_test_java_ok(answer));
    return answer;
}

/* The answer to `tag`, asserted ok, waiting up to wait_ms. */
static inline const char *
java_wait_ok(cr_test_java *p, int tag, int64_t wait_ms)
{
    assert_true(tag > 0);
    return java_expect_ok(cr_test_java_wait(p, tag, slow(wait_ms)));
}

/* The thread id of peer p's actor (lock owners are "<peer id>:<tid>"). */
static inline long long
java_tid(cr_test_java *p, const char *actor)
{
    long long tid = cr_test_java_num(JAVA_OK(p, actor, 5000, "info"), "tid");

    assert_true(tid > 0);
    return tid;
}

/* cr_test_wait_until condition: peer 0's actor named by `arg` sleeps
 * between attempts (in what Redisson's waiters park on: "blocked"). A
 * release that comes then reaches it whatever Redisson's listener does
 * with the message. */
static inline bool
java_actor_sleeps(void *arg)
{
    const char *a = cr_test_java_call(jpeer[0], "probe", slow(5000),
                                      "blocked %s", (const char *)arg);

    return cr_test_java_num(a, "r") == 1;
}

/* ---------------------------------------------- waiting on both sides */

/* The channels matching `pattern` that have subscribers. */
static inline long long
channels_matching(const char *pattern)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "PUBSUB CHANNELS %s",
                                      pattern);
    long long n = r != NULL && r->type == REDIS_REPLY_ARRAY
                      ? (long long)r->elements
                      : -1;

    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* cr_test_wait_until condition: a channel matching `arg` has a
 * subscriber. */
static inline bool
has_channel(void *arg)
{
    return channels_matching(arg) > 0;
}

/* The channel where releases of lock `kind` named `name` are published,
 * into `out` (a fair lock: the pattern of its waiters' own channels). */
static inline void
lock_channel(const char *kind, const char *name, char *out, size_t size)
{
    if (strcmp(kind, "fair") == 0)
        snprintf(out, size, "redisson_lock__channel:{%s}:*", name);
    else if (strcmp(kind, "lock") == 0)
        snprintf(out, size, "redisson_lock__channel:{%s}", name);
    else
        snprintf(out, size, "redisson_rwlock:{%s}", name);
}

/* Waits until a waiter listens on the channel of lock `kind` named
 * `name` (a fair lock: any waiter's own channel); whether one did. */
static inline bool
listener_came(const char *kind, const char *name)
{
    char pattern[128];

    lock_channel(kind, name, pattern, sizeof(pattern));
    return cr_test_wait_until(has_channel, pattern, slow(10000));
}

/* listener_came, asserted. */
static inline void
await_listener(const char *kind, const char *name)
{
    assert_true(listener_came(kind, name));
}

/* cr_test_wait_until condition: nobody listens on the channels matching
 * `arg` (a subscription that outlived its waiter is gone). */
static inline bool
no_channel(void *arg)
{
    return channels_matching(arg) == 0;
}

/* Waits until nobody listens for releases of lock `kind` named `name`,
 * so that a listener seen afterwards is a waiter that came since (a C
 * waiter's client keeps a subscription a moment after its last waiter,
 * and Redisson drops its own after the acquisition). */
static inline void
await_no_listener(const char *kind, const char *name)
{
    char pattern[128];

    lock_channel(kind, name, pattern, sizeof(pattern));
    assert_true(cr_test_wait_until(no_channel, pattern, slow(10000)));
}

/* What c_waiter_listens waits for: a waiter in the line of object `name`
 * and a subscriber of `channel`. */
typedef struct c_listener {
    const char *name, *channel;
} c_listener;

/* cr_test_wait_until condition on a c_listener. */
static inline bool
c_listens(void *arg)
{
    const c_listener *l = arg;

    return line_length(l->name) >= 1 && has_channel((void *)l->channel);
}

/* Waits until a credisson waiter for object `name` stands in its waiting
 * line and listens on `channel`, the object's own, where a Java release
 * is published (the waiter first in line does after
 * CR__LINE_LISTEN_AFTER_MS; await_no_listener first, so that the
 * subscriber is that waiter's); whether it did. A fair lock has no line:
 * its waiter listens on its own channel at once. */
static inline bool
c_waiter_listens(const char *name, const char *channel)
{
    c_listener l = {name, channel};

    return cr_test_wait_until(c_listens, &l, slow(10000));
}

/* c_waiter_listens for a C waiter for lock `kind` named `name`. */
static inline bool
c_lock_waiter_listens(const char *kind, const char *name)
{
    char channel[128];

    if (strcmp(kind, "fair") == 0)
        return listener_came(kind, name);
    lock_channel(kind, name, channel, sizeof(channel));
    return c_waiter_listens(name, channel);
}

/* A C thread that takes a lock with a wait, notes when it got it (and,
 * when asked, the score of `probe` in zset `probe_key` then: fields the
 * test may set until the lock can be had), holds it hold_ms and releases
 * it (hold_ms -1: keeps it for the test to release). */
typedef struct taker {
    cr_lock *lock;
    int64_t wait_ms, lease_ms, hold_ms;
    const char *probe_key;
    char probe[128];
    cr_status rc;
    int64_t tid;       /* the thread's id: the owner of its hold */
    int64_t at;        /* epoch ms it got the lock */
    long long probed;  /* the score of probe when it got the lock */
    pthread_t thread;
} taker;

static inline void *
take_run(void *arg)
{
    taker *t = arg;

    t->tid = cr_thread_id();
    t->rc = cr_lock_try_lock(t->lock, t->wait_ms, t->lease_ms);
    t->at = cr_test_java_epoch_ms();
    if (t->rc == CR_OK && t->probe_key != NULL)
        t->probed = redis_int("ZSCORE %s %s", t->probe_key, t->probe);
    if (t->rc == CR_OK && t->hold_ms >= 0) {
        if (t->hold_ms > 0)
            usleep((useconds_t)t->hold_ms * 1000);
        if (cr_lock_unlock(t->lock) != CR_OK)
            t->rc = CR_ENOTOWNER;
    }
    return NULL;
}

static inline void
take_start(taker *t, cr_lock *l, int64_t wait_ms, int64_t hold_ms)
{
    memset(t, 0, sizeof(*t));
    t->lock = l;
    t->wait_ms = wait_ms;
    t->lease_ms = CR_LEASE_WATCHDOG;
    t->hold_ms = hold_ms;
    assert_int_equal(pthread_create(&t->thread, NULL, take_run, t), 0);
}

/* What queue_is waits for: fair lock `name`'s queue of `length`. */
typedef struct queue_wanted {
    const char *name;
    long long length;
} queue_wanted;

/* cr_test_wait_until condition on a queue_wanted. */
static inline bool
queue_is(void *arg)
{
    queue_wanted *q = arg;

    return redis_int("LLEN redisson_lock_queue:{%s}", q->name) == q->length;
}

/* Waits until fair lock `name` has `length` waiters in its queue. */
static inline void
await_queue_of(const char *name, long long length)
{
    queue_wanted q = {name, length};

    assert_true(cr_test_wait_until(queue_is, &q, slow(10000)));
}

/* ------------------------------------------------ a shared rate budget */

/* A C thread taking one permit at a time for run_ms, each try waiting as
 * long as is left. */
typedef struct rl_job {
    cr_rate_limiter *rl;
    int64_t run_ms;
    int got;
    cr_status rc;
    pthread_t thread;
} rl_job;

static inline void *
rl_thread(void *arg)
{
    rl_job *j = arg;
    int64_t end = cr_test_now_ms() + j->run_ms, left;

    j->rc = CR_OK;
    while ((left = end - cr_test_now_ms()) > 0) {
        cr_status rc = cr_rate_limiter_try_acquire(j->rl, 1, left);

        if (rc == CR_OK)
            j->got++;
        else if (rc != CR_BUSY)
            j->rc = rc;
    }
    return NULL;
}

/* The limiter `name` (of `rate` per interval_ms, set already) taken from
 * for run_ms by actor "a" of the first `java` peers and by `c` (at most
 * 4) C threads of test_client, one permit at a time; asserts that the
 * grant times the server recorded never hold more than the rate in a
 * window of one interval, and that a whole interval's worth was granted.
 * The records are read every 50 ms and live an interval before a call
 * may reclaim one: a reader starved that long would miss one, which
 * fails the count of records against the grants rather than hiding an
 * excess, so keep intervals of several hundred ms. */
static inline void
share_budget(const char *name, int rate, int interval_ms, int run_ms,
             size_t java, int c)
{
    cr_rate_limiter *rl = NULL;
    collector col;
    rl_job jobs[4];
    int tags[2], i;
    size_t k;
    long long total = 0;
    unsigned most;

    memset(&col, 0, sizeof(col));
    snprintf(col.key, sizeof(col.key), "{%s}:permits", name);
    assert_int_equal(cr_rate_limiter_new(test_client, name, &rl), CR_OK);
    assert_int_equal(pthread_create(&col.thread, NULL, collector_run, &col),
                     0);
    for (k = 0; k < java && k < 2; k++)
        tags[k] = cr_test_java_send(jpeer[k], "a", "rl-loop %s %d", name,
                                    run_ms);
    for (i = 0; i < c && i < 4; i++) {
        jobs[i] = (rl_job){.rl = rl, .run_ms = run_ms};
        assert_int_equal(pthread_create(&jobs[i].thread, NULL, rl_thread,
                                        &jobs[i]), 0);
    }
    for (i = 0; i < c && i < 4; i++) {
        pthread_join(jobs[i].thread, NULL);
        assert_int_equal(jobs[i].rc, CR_OK);
        total += jobs[i].got;
    }
    for (k = 0; k < java && k < 2; k++)
        total += cr_test_java_num(java_wait_ok(jpeer[k], tags[k], 15000),
                                  "got");
    atomic_store(&col.stop, true);
    pthread_join(col.thread, NULL);
    most = most_in_a_window(col.v, col.n, interval_ms);
    fprintf(stderr, "# %s: %lld grants by C and Java, %zu records, at "
            "most %u in a window of %d ms (rate %d)\n",
            jline != NULL ? jline : "4.7", total, col.n, most, interval_ms,
            rate);
    assert_int_equal((long long)col.n, total);
    assert_true(total >= rate);
    assert_true(most <= (unsigned)rate);
    free(col.v);
    cr_rate_limiter_free(rl);
}

/* ------------------------------------------------- the shared counter */

/* A C thread's share of the counter: `n` times take the lock, GET the
 * key, SET it plus one, release. */
typedef struct count_job {
    cr_lock *lock;
    const char *key;
    int n;
    cr_status rc;
    pthread_t thread;
} count_job;

/* Increments `key` by GET then SET on `c`, a millisecond apart (so that
 * holders who do not exclude each other overlap); false when a command
 * failed. */
static inline bool
bump_key(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    long long v;

    if (r == NULL)
        return false;
    v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    usleep(1000);
    r = redisCommand(c, "SET %s %lld", key, v + 1);
    if (r == NULL)
        return false;
    freeReplyObject(r);
    return true;
}

static inline void *
count_thread(void *arg)
{
    count_job *j = arg;
    redisContext *c = cr_test_redis_connect(&test_redis);
    int i;

    j->rc = c != NULL ? CR_OK : CR_EIO;
    for (i = 0; i < j->n && j->rc == CR_OK; i++) {
        if ((j->rc = cr_lock_try_lock(j->lock, slow(TURN_WAIT_MS),
                                      CR_LEASE_WATCHDOG)) != CR_OK)
            break;
        if (!bump_key(c, j->key))
            j->rc = CR_EIO;
        if (cr_lock_unlock(j->lock) != CR_OK && j->rc == CR_OK)
            j->rc = CR_ENOTOWNER;
    }
    if (c != NULL)
        redisFree(c);
    return NULL;
}

/* The asynchronous API's share: owners on one loop, each chaining lock,
 * the GET and SET (blocking, on the loop: nothing else runs meanwhile,
 * which only makes its holds longer), and unlock, `n` times. */
typedef struct async_owner {
    struct async_counter *counter;
    int64_t owner;
    int left;
} async_owner;

typedef struct async_counter {
    cr_async *async;
    cr_lock *lock;
    redisContext *redis;
    const char *key;
    async_owner owners[4];
    int nowners, running;
    cr_status rc;
    pthread_t thread;
} async_counter;

static void async_locked(void *userdata, cr_status rc, int64_t value);

/* The owner's next lock, or its end. */
static inline void
async_next(async_owner *o)
{
    async_counter *ac = o->counter;
    cr_status rc;

    if (o->left == 0 || ac->rc != CR_OK) {
        ac->running--;
        return;
    }
    rc = cr_async_lock(ac->async, ac->lock, o->owner, slow(TURN_WAIT_MS),
                       CR_LEASE_WATCHDOG, async_locked, o, NULL);
    if (rc != CR_OK) {
        ac->rc = rc;
        ac->running--;
    }
}

static inline void
async_unlocked(void *userdata, cr_status rc, int64_t value)
{
    async_owner *o = userdata;

    (void)value;
    if (rc != CR_OK && o->counter->rc == CR_OK)
        o->counter->rc = rc;
    o->left--;
    async_next(o);
}

static void
async_locked(void *userdata, cr_status rc, int64_t value)
{
    async_owner *o = userdata;
    async_counter *ac = o->counter;

    (void)value;
    if (rc == CR_OK && !bump_key(ac->redis, ac->key))
        rc = CR_EIO;
    if (rc == CR_OK)
        rc = cr_async_unlock(ac->async, ac->lock, o->owner, async_unlocked,
                             o, NULL);
    if (rc != CR_OK) {
        if (ac->rc == CR_OK)
            ac->rc = rc;
        ac->running--;
    }
}

static inline bool
async_done(void *arg)
{
    return ((async_counter *)arg)->running == 0;
}

/* The loop's thread: starts every owner, then turns until all are done
 * (or a minute passed). */
static inline void *
async_counter_run(void *arg)
{
    async_counter *ac = arg;
    int i;

    ac->running = ac->nowners;
    for (i = 0; i < ac->nowners; i++)
        async_next(&ac->owners[i]);
    if (!poll_loop_until(ac->async, async_done, ac, slow(60000)) &&
        ac->rc == CR_OK)
        ac->rc = CR_TIMEOUT;
    return NULL;
}

/* Starts `nowners` asynchronous owners of `lock` (on test_client), each
 * counting `n` times on `key`. */
static inline void
async_counter_start(async_counter *ac, cr_lock *lock, const char *key,
                    int nowners, int n)
{
    int i;

    memset(ac, 0, sizeof(*ac));
    assert_int_equal(cr_async_new(test_client, &poll_loop, &ac->async), CR_OK);
    ac->redis = cr_test_redis_connect(&test_redis);
    assert_non_null(ac->redis);
    ac->lock = lock;
    ac->key = key;
    ac->nowners = nowners;
    for (i = 0; i < nowners; i++) {
        ac->owners[i].counter = ac;
        ac->owners[i].owner = cr_async_owner_id();
        ac->owners[i].left = n;
    }
    assert_int_equal(pthread_create(&ac->thread, NULL, async_counter_run, ac),
                     0);
}

/* Waits for the asynchronous owners; their status. */
static inline cr_status
async_counter_join(async_counter *ac)
{
    pthread_join(ac->thread, NULL);
    cr_async_free(ac->async);
    redisFree(ac->redis);
    return ac->rc;
}

/* Starts a cross_worker with the given arguments (NULL-terminated). */
static inline pid_t
spawn_worker(const char *const *args)
{
    pid_t pid = cr_test_spawn("cross_worker", args, NULL);

    assert_true(pid > 0);
    return pid;
}

/* Waits for worker `pid` (up to wait_ms, then kills it); its exit code,
 * or -1 when it did not exit by itself. */
static inline int
reap_worker(pid_t pid, int64_t wait_ms)
{
    int64_t end = cr_test_now_ms() + wait_ms;
    int status;

    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (cr_test_now_ms() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(5000);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The Java side's release for cross_worker ("-": the newest). */
static inline const char *
worker_version(void)
{
    return jline != NULL ? jline : "-";
}

#endif
