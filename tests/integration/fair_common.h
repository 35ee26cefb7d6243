/* SPDX-License-Identifier: MIT */
/*
 * What the fair lock and read/write lock tests share on top of
 * lock_common.h: clients with chosen timeouts, owner names, reading string
 * keys, and the fair_worker program run as a separate process (fork + exec,
 * its stdout on a pipe).
 */
#ifndef CR_TEST_FAIR_COMMON_H
#define CR_TEST_FAIR_COMMON_H

#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lock_common.h"

/* Owners of another process, as a Java client would write them. */
#define FOREIGN_OWNER_1 "9f6a4c1e-2b3d-4e5f-8a7b-0c1d2e3f4a5b:1"
#define FOREIGN_OWNER_2 "9f6a4c1e-2b3d-4e5f-8a7b-0c1d2e3f4a5b:2"

/* Wall clock in epoch ms, as the fair lock's deadlines. */
static inline int64_t
wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A client on the test server with the given watchdog and fair wait. */
static inline cr_client *
client_with(int64_t watchdog_ms, int64_t fair_wait_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = test_redis.url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.fair_lock_wait_timeout_ms = fair_wait_ms;
    o.command_timeout_ms = slow(2000);
    o.reconnect_window_ms = slow(15000);
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    return c;
}

/* "<client id>:<tid>" into out (at least 96 bytes). */
static inline void
owner_of(cr_client *c, int64_t tid, char *out)
{
    snprintf(out, 96, "%s:%lld", cr_client_id(c), (long long)tid);
}

/* A string reply of a plain command copied into out ("" when none). */
static inline void
redis_str(char *out, size_t size, const char *fmt, const char *arg)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, fmt, arg);

    out[0] = '\0';
    if (r != NULL && r->type == REDIS_REPLY_STRING)
        snprintf(out, size, "%s", r->str);
    if (r != NULL)
        freeReplyObject(r);
}

/* Starts fair_worker with arguments `args` (NULL-terminated, without the
 * program name); its stdout is *fd. */
static inline pid_t
spawn(const char *const *args, int *fd)
{
    pid_t pid = cr_test_spawn("fair_worker", args, fd);

    assert_true(pid > 0);
    return pid;
}

#endif
