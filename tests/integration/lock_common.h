/* SPDX-License-Identifier: MIT */
/*
 * What the lock integration tests share: one redis-server for the whole
 * group, a fresh client per test on a flushed server, helpers to scale
 * time bounds when the suite runs under valgrind (CR_TEST_SLOW=1), and
 * looks at the server: plain commands, keys, subscriber counts and a
 * SUBSCRIBE listener's messages.
 */
#ifndef CR_TEST_LOCK_COMMON_H
#define CR_TEST_LOCK_COMMON_H

#include <ctype.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "credisson.h"
#include "redis_fixture.h"

static cr_test_redis test_redis;
static cr_client *test_client;

/* A time bound of `ms`, scaled under valgrind (cr_test_slow). */
static inline int64_t
slow(int64_t ms)
{
    return cr_test_slow(ms);
}

/* Starts the group's server with `extra_args` (NULL: none); skips the
 * whole program (exit 77) when redis-server is missing. */
static inline int
redis_start_or_skip(const char *extra_args)
{
    int rc = cr_test_redis_start(&test_redis, extra_args);

    if (rc == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    return rc;
}

/* Group setup: one server for every test of the file. */
static inline int
redis_up(void **state)
{
    (void)state;
    return redis_start_or_skip(NULL);
}

/* Group setup of the files that stall the server: DEBUG (SLEEP) allowed. */
static inline int
redis_up_debug(void **state)
{
    (void)state;
    return redis_start_or_skip("--enable-debug-command yes");
}

static inline int
redis_down(void **state)
{
    (void)state;
    cr_test_redis_destroy(&test_redis);
    return 0;
}

/* A client on 127.0.0.1:port (the test server's, or a relay's) with a
 * watchdog timeout of watchdog_ms, which gives up on Redis after window_ms
 * without it. */
static inline cr_client *
client_on_port(int port, int64_t watchdog_ms, int64_t window_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char url[64];

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    o.url = url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.command_timeout_ms = slow(2000);
    o.reconnect_window_ms = window_ms;
    if (cr_client_new(&o, &c) != CR_OK) {
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
        return NULL;
    }
    return c;
}

/* A client on the test server with a watchdog timeout of watchdog_ms. */
static inline cr_client *
new_client(int64_t watchdog_ms)
{
    return client_on_port(test_redis.port, watchdog_ms, slow(15000));
}

/* Per-test setup: flushed server (restarted first if a test stopped it) and
 * a fresh client. */
static inline int
client_up(void **state)
{
    (void)state;
    if (test_redis.pid == 0 && cr_test_redis_restart(&test_redis) != 0)
        return -1;
    if (cr_test_redis_flushall(&test_redis) != 0)
        return -1;
    test_client = new_client(300);
    return test_client != NULL ? 0 : -1;
}

static inline int
client_down(void **state)
{
    (void)state;
    cr_client_free(test_client);
    test_client = NULL;
    return 0;
}

/* Runs a plain command; true unless it failed or Redis answered an error. */
static inline bool
redis_ok(const char *fmt, ...)
{
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r = NULL;
    bool ok;
    va_list ap;

    if (c == NULL)
        return false;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* Integer value of a plain command's reply, given in hiredis's format
 * (%s is one argument); -999 when there is none. */
static inline long long
redis_int(const char *fmt, ...)
{
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r = NULL;
    long long v = -999;
    va_list ap;

    if (c == NULL)
        return v;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r != NULL && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return v;
}


/* Number of subscribers of `channel` on the server; -1 on error. */
static inline long long
numsub(const char *channel)
{
    return cr_test_redis_numsub(&test_redis, channel);
}

/* Number of waiters in the waiting line of object `name` (credisson's
 * credisson_line:{name}); -1 on error. */
static inline long long
line_length(const char *name)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "ZCARD credisson_line:{%s}",
                                      name);
    long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer
                                                              : -1;

    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* cr_test_wait_until condition: the waiting line of `name` has `n` (or
 * more) waiters. */
typedef struct line_of {
    const char *name;
    long long n;
} line_of;

static inline bool
line_reaches(void *arg)
{
    const line_of *l = arg;

    return line_length(l->name) >= l->n;
}

/* Number of waiters of object `name` that listen on their own channels
 * (credisson_line__channel:{name}:<entry>, one each); -1 on error. */
static inline long long
line_listeners(const char *name)
{
    redisReply *r = cr_test_redis_cmd(
        &test_redis, "PUBSUB CHANNELS credisson_line__channel:{%s}:*", name);
    long long n = r != NULL && r->type == REDIS_REPLY_ARRAY
                      ? (long long)r->elements : -1;

    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* cr_test_wait_until condition: `n` (or more) waiters of the line_of's
 * object listen on their own channels. */
static inline bool
line_listening(void *arg)
{
    const line_of *l = arg;

    return line_listeners(l->name) >= l->n;
}

/* cr_test_wait_until condition: no waiter of object `name` (arg) listens
 * on its own channel. */
static inline bool
no_line_listener(void *arg)
{
    return line_listeners(arg) == 0;
}

/* Waits until the waiting line of `name` has at least `n` waiters (each
 * has made an attempt that put it there: a release from now on is theirs
 * to take, in order); fails the test otherwise. */
static inline void
await_waiters_in_line(const char *name, long long n)
{
    line_of want = {name, n};

    assert_true(cr_test_wait_until(line_reaches, &want, slow(5000)));
}

/* cr_test_wait_until condition: `channel` (arg) has a subscriber. */
static inline bool
has_subscriber(void *arg)
{
    return numsub(arg) > 0;
}

/* cr_test_wait_until condition: `channel` (arg) has no subscriber. */
static inline bool
has_no_subscriber(void *arg)
{
    return numsub(arg) == 0;
}

/* For cr_test_wait_until: a channel and the subscriber count it needs. */
typedef struct subs_wanted {
    const char *channel;
    long long count;
} subs_wanted;

/* cr_test_wait_until condition: a subs_wanted (arg) is met. */
static inline bool
has_subscribers(void *arg)
{
    subs_wanted *w = arg;

    return numsub(w->channel) >= w->count;
}

/* Waits until `channel` has at least `count` subscribers; fails the test
 * otherwise. */
static inline void
await_subscribers(const char *channel, long long count)
{
    subs_wanted w = {channel, count};

    assert_true(cr_test_wait_until(has_subscribers, &w, slow(5000)));
}

/* True for the 36-character lowercase textual form of a version 4 UUID. */
static inline bool
is_uuid_v4(const char *s)
{
    size_t i;

    if (strlen(s) != 36)
        return false;
    for (i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return false;
        } else if (!isxdigit((unsigned char)s[i]) ||
                   isupper((unsigned char)s[i])) {
            return false;
        }
    }
    return s[14] == '4' && strchr("89ab", s[19]) != NULL;
}

/* The test server's clock (TIME) in epoch ms. */
static inline long long
server_ms(void)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "TIME");
    long long ms;

    assert_non_null(r);
    ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* The server's count of calls of command `cmd` (lower case) so far (INFO
 * commandstats). */
static inline long long
calls_of(const char *cmd)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "INFO commandstats");
    char field[64];
    const char *p;
    long long n = 0;

    snprintf(field, sizeof(field), "cmdstat_%s:calls=", cmd);
    p = r != NULL && r->type == REDIS_REPLY_STRING ? strstr(r->str, field)
                                                   : NULL;
    if (p != NULL)
        n = atoll(p + strlen(field));
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* The server's count of SUBSCRIBE commands so far. */
static inline long long
subscribes_seen(void)
{
    return calls_of("subscribe");
}

/* What renewals_reached waits for: `client` has sent at least `at_least`
 * renewals. */
typedef struct renewals {
    cr_client *client;
    uint64_t at_least;
} renewals;

/* cr_test_wait_until condition on a `renewals`. */
static inline bool
renewals_reached(void *arg)
{
    renewals *r = arg;
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    return cr_client_stats_get(r->client, &st) == CR_OK &&
           st.renewals_sent >= r->at_least;
}

/* Waits until client `c` has sent `more` renewals beyond those it sent so
 * far; fails the test otherwise. */
static inline void
await_more_renewals(cr_client *c, uint64_t more)
{
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    renewals want = {c, 0};

    assert_int_equal(cr_client_stats_get(c, &st), CR_OK);
    want.at_least = st.renewals_sent + more;
    assert_true(cr_test_wait_until(renewals_reached, &want, slow(3000)));
}

/* Records the calls of a lost-lease callback (on_lost). */
typedef struct lost_record {
    pthread_mutex_t mu;
    int calls;
    int64_t tid;
    char name[64];
} lost_record;

#define LOST_RECORD_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0, ""}

/* Lost-lease callback: counts the call and keeps its arguments. */
static inline void
on_lost(void *userdata, const char *name, int64_t tid)
{
    lost_record *r = userdata;

    pthread_mutex_lock(&r->mu);
    r->calls++;
    r->tid = tid;
    snprintf(r->name, sizeof(r->name), "%s", name);
    pthread_mutex_unlock(&r->mu);
}

/* The calls of `r` so far. */
static inline int
lost_calls(lost_record *r)
{
    int n;

    pthread_mutex_lock(&r->mu);
    n = r->calls;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* cr_test_wait_until condition: the callback recording into `arg` ran (the
 * watchdog marks the hold lost, then calls it with its mutex released: a
 * moment later). */
static inline bool
lost_called(void *arg)
{
    return lost_calls(arg) > 0;
}

/* cr_test_wait_until condition: key `arg` is gone. */
static inline bool
key_gone(void *arg)
{
    return redis_int("EXISTS %s", (const char *)arg) == 0;
}

/* cr_test_wait_until condition: `arg` (a cr_lock) is marked lost. */
static inline bool
lock_is_lost(void *arg)
{
    bool lost = false;

    return cr_lock_is_lost(arg, &lost) == CR_OK && lost;
}

/* Commands a client has sent so far. */
static inline uint64_t
commands_of(cr_client *c)
{
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    return cr_client_stats_get(c, &st) == CR_OK ? st.commands : 0;
}

typedef struct commands_wanted {
    cr_client *client;
    uint64_t count;
} commands_wanted;

static inline bool
has_sent_commands(void *arg)
{
    const commands_wanted *w = arg;

    return commands_of(w->client) >= w->count;
}

/* Waits until client `c` has sent `count` commands in all (its waiters
 * made their first tries, say); fails the test otherwise. */
static inline void
await_commands(cr_client *c, uint64_t count)
{
    commands_wanted w = {c, count};

    assert_true(cr_test_wait_until(has_sent_commands, &w, slow(5000)));
}

/* Number of keys matching `pattern`; -1 on error. */
static inline long
count_keys(const char *pattern)
{
    return cr_test_redis_count_keys(&test_redis, pattern);
}

/* TYPE of `key` compared with `type`. */
static inline bool
key_type_is(const char *key, const char *type)
{
    return cr_test_redis_type_is(&test_redis, key, type);
}

/* cr_test_wait_until condition: no unlock latch key is left. */
static inline bool
no_latch_keys(void *arg)
{
    (void)arg;
    return count_keys("redisson_unlock_latch:*") == 0;
}

/* A listener on `n` channels; fails the test when it cannot start. */
static inline cr_test_listener *
listen_on(const char *const *channels, size_t n)
{
    cr_test_listener *li = cr_test_listener_start(&test_redis, channels, n);

    assert_non_null(li);
    return li;
}

/* Publishes `marker` on `channel` and waits for it to come back: every
 * message published before it has then been received too, since one
 * subscriber connection gets messages in the server's order. Returns the
 * index of the marker, i.e. the number of messages before it. */
static inline size_t
settle(cr_test_listener *li, const char *channel, const char *marker)
{
    size_t i;

    assert_true(redis_int("PUBLISH %s %s", channel, marker) >= 1);
    for (i = 0;; i++) {
        const cr_test_message *m;

        assert_true(cr_test_listener_wait(li, i + 1, slow(3000)) >= i + 1);
        m = cr_test_listener_get(li, i);
        assert_non_null(m);
        if (strcmp(m->payload, marker) == 0)
            return i;
    }
}

/* Number of messages among the first `n` with this channel (and this
 * payload, unless NULL). */
static inline size_t
count_messages(cr_test_listener *li, size_t n, const char *channel,
               const char *payload)
{
    size_t i, found = 0;

    for (i = 0; i < n; i++) {
        const cr_test_message *m = cr_test_listener_get(li, i);

        if (m != NULL && strcmp(m->channel, channel) == 0 &&
            (payload == NULL || strcmp(m->payload, payload) == 0))
            found++;
    }
    return found;
}

/* A counter that threads increment under a lock, each `rounds` times:
 * read, yield, write back plus one, so that only the lock keeps it exact
 * (run count_under_lock on each thread). */
typedef struct shared_counter {
    cr_lock *lock;
    int rounds;
    volatile long value;
    int errors; /* lock and unlock calls that failed */
} shared_counter;

/* Thread body: `rounds` times lock, non-atomic increment, unlock. */
static inline void *
count_under_lock(void *arg)
{
    shared_counter *s = arg;
    int i;

    for (i = 0; i < s->rounds; i++) {
        long v;

        if (cr_lock_lock(s->lock, CR_LEASE_WATCHDOG) != CR_OK) {
            __atomic_add_fetch(&s->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        v = s->value;
        sched_yield(); /* widen the window a missing exclusion would show */
        s->value = v + 1;
        if (cr_lock_unlock(s->lock) != CR_OK)
            __atomic_add_fetch(&s->errors, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* Waits for child process `pid` and checks that it exited with 0. */
static inline void
reap_ok(pid_t pid)
{
    assert_int_equal(cr_test_wait_exit(pid), 0);
}

#endif
