/* SPDX-License-Identifier: MIT */
/*
 * What the semaphore and latch tests share on top of lock_common.h: the
 * exact messages a listener got, plain commands, the sync_worker helper
 * program, and a counter block shared with it.
 */
#ifndef CR_TEST_SYNC_COMMON_H
#define CR_TEST_SYNC_COMMON_H

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h" /* cr__now_us */
#include "lock_common.h"
#include "sync_block.h"

/* Checks that the first messages are exactly `want` (n payloads) on
 * `channel`, in order. */
static inline void
assert_messages(cr_test_listener *li, const char *channel,
                const char *const *want, size_t n)
{
    size_t i, got = settle(li, channel, "marker");

    for (i = 0; i < got && i < n; i++) {
        const cr_test_message *m = cr_test_listener_get(li, i);

        assert_string_equal(m->channel, channel);
        assert_string_equal(m->payload, want[i]);
    }
    assert_int_equal(got, n);
}

/* The string or status reply of a plain command into out (size bytes, ""
 * otherwise); returns the reply's length or -1. */
static inline long
redis_str(char *out, size_t size, const char *fmt, ...)
{
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r = NULL;
    long len = -1;
    va_list ap;

    out[0] = '\0';
    if (c == NULL)
        return -1;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r != NULL &&
        (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
        r->len < size) {
        memcpy(out, r->str, r->len);
        out[r->len] = '\0';
        len = (long)r->len;
    }
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return len;
}

/* Starts sync_worker with up to 4 more arguments (NULL-terminated) after
 * the mode, URL and name; its stdout goes to *out_fd (read end) when out_fd
 * is not NULL. Returns its pid. */
static inline pid_t
spawn_worker(int *out_fd, const char *mode, const char *name, const char *a1,
             const char *a2)
{
    const char *args[] = {mode, test_redis.url, name, a1, a2, NULL};
    pid_t pid = cr_test_spawn("sync_worker", args, out_fd);

    assert_true(pid > 0);
    return pid;
}

/* A waiter on a semaphore as another process would be (Java, say): it
 * hears the release on its own subscription to redisson_sc:{key} and,
 * 300 us later, takes one of the permits counted in `key` with a script of
 * its own and gives it back with a publish. Works on both semaphores. */
typedef struct far_waiter {
    const char *key;      /* the semaphore's name, its count's key */
    cr_test_listener *li; /* subscribed to its channel */
    size_t seen;          /* messages before this round */
    long long got;        /* 1 when it took the permit */
    int64_t sent_us;      /* when its attempt left (monotonic); 0: none */
    int64_t took_us;      /* when its script said so (monotonic) */
    pthread_t thread;
} far_waiter;

static inline void *
far_waiter_run(void *arg)
{
    far_waiter *w = arg;
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r;
    char channel[128];

    if (c == NULL || cr_test_listener_wait(w->li, w->seen + 1, 3000) <= w->seen) {
        if (c != NULL)
            redisFree(c);
        return NULL;
    }
    usleep(300);
    w->sent_us = cr__now_us();
    r = redisCommand(c, "EVAL %s 1 %s 1",
                     "if tonumber(redis.call('get', KEYS[1]) or '0') >= "
                     "tonumber(ARGV[1]) then redis.call('decrby', KEYS[1], "
                     "ARGV[1]) return 1 end return 0", w->key);
    w->got = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    w->took_us = cr__now_us();
    if (r != NULL)
        freeReplyObject(r);
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", w->key);
    if (w->got == 1)
        freeReplyObject(redisCommand(c, "EVAL %s 2 %s %s 1",
                                     "redis.call('publish', KEYS[2], "
                                     "redis.call('incrby', KEYS[1], ARGV[1]))",
                                     w->key, channel));
    redisFree(c);
    return NULL;
}

/* Rounds in which handle `h` takes the one permit of semaphore `key`
 * (take: wait budget in ms), a far waiter starts listening, and `h` gives
 * the permit back (give), takes it again at once (within 5 s) and gives it
 * back. A round counts when the far waiter's attempt left within 1 ms of
 * the release's start: within the shortest turn the releaser keeps, so
 * the waiter should have the permit first. On a loaded machine the
 * waiter's thread often wakes later than that, which says nothing of the
 * turn: such rounds are not counted, and the rounds go on until 20 counted
 * (at most 400). Returns in how many counted rounds the far waiter had the
 * permit before `h` had it again; their number in *counted. */
static inline int
far_waiter_rounds(const char *key, void *h, void (*take)(void *, int64_t),
                  void (*give)(void *), int *counted)
{
    char channel[128];
    const char *ch = channel;
    far_waiter w;
    int64_t released_us, again_us;
    int round, waiter_first = 0;

    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", key);
    memset(&w, 0, sizeof(w));
    w.key = key;
    w.li = cr_test_listener_start(&test_redis, &ch, 1);
    assert_non_null(w.li);
    *counted = 0;
    for (round = 0; round < 400 && *counted < 20; round++) {
        take(h, CR_WAIT_FOREVER);
        w.seen = cr_test_listener_count(w.li);
        w.got = 0;
        w.sent_us = 0;
        assert_int_equal(pthread_create(&w.thread, NULL, far_waiter_run, &w), 0);
        released_us = cr__now_us();
        give(h);
        take(h, 5000);
        again_us = cr__now_us();
        give(h);
        pthread_join(w.thread, NULL);
        assert_true(w.got == 0 || w.got == 1);
        if (w.sent_us == 0 || w.sent_us - released_us >= 1000)
            continue;
        (*counted)++;
        if (w.got == 1 && w.took_us < again_us)
            waiter_first++;
    }
    cr_test_listener_stop(w.li);
    return waiter_first;
}

/* Asserts that the far waiter came first in at least three in four of
 * the rounds far_waiter_rounds counted; skips when the machine let it
 * answer in time in fewer than 5 of 400. */
#define assert_far_waiter_first(key, h, take, give)                         \
    do {                                                                    \
        int counted_, first_ = far_waiter_rounds(key, h, take, give,       \
                                                 &counted_);               \
        if (counted_ < 5) {                                                 \
            print_message("the far waiter answered within 1 ms in %d "      \
                          "rounds of 400: the machine is too busy\n",     \
                          counted_);                                        \
            skip();                                                         \
        }                                                                   \
        if (first_ * 4 < counted_ * 3)                                      \
            fail_msg("the far waiter came first in %d of %d rounds",        \
                     first_, counted_);                                     \
    } while (0)

/* A sync_block in a memfd that child processes inherit; *fd is its
 * descriptor (close it and munmap the block when done). */
static inline sync_block *
shared_block(int *fd)
{
    sync_block *b = cr_test_memfd_alloc("sync_block", sizeof(*b), fd);

    assert_non_null(b);
    return b;
}

#endif
