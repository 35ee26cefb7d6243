/* SPDX-License-Identifier: MIT */
/*
 * What the lock integration tests share: one redis-server for the whole
 * group, a fresh client per test on a flushed server, and helpers to scale
 * time bounds when the suite runs under valgrind (CR_TEST_SLOW=1).
 */
#ifndef CR_TEST_LOCK_COMMON_H
#define CR_TEST_LOCK_COMMON_H

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

/* Time bounds are multiplied by this: 1, or 10 under valgrind. */
static inline int64_t
slow(int64_t ms)
{
    const char *s = getenv("CR_TEST_SLOW");

    return s != NULL && s[0] == '1' ? ms * 10 : ms;
}

/* Group setup: one server for every test of the file; skips the whole
 * program (exit 77) when redis-server is missing. */
static inline int
redis_up(void **state)
{
    int rc = cr_test_redis_start(&test_redis, NULL);

    (void)state;
    if (rc == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    return rc;
}

static inline int
redis_down(void **state)
{
    (void)state;
    cr_test_redis_destroy(&test_redis);
    return 0;
}

/* A client on the test server with a short watchdog (300 ms). */
static inline cr_client *
new_client(int64_t watchdog_ms)
{
    cr_client_options o;
    cr_client *c = NULL;

    memset(&o, 0, sizeof(o));
    o.url = test_redis.url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.command_timeout_ms = slow(2000);
    o.reconnect_window_ms = slow(15000);
    if (cr_client_new(&o, &c) != CR_OK) {
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
        return NULL;
    }
    return c;
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

#endif
