/* SPDX-License-Identifier: MIT */
/*
 * A holder's turn inside the object of a mixed cross run (java_mix.h),
 * shared by the test programs' threads and cross_worker's processes; the
 * Java peer's "mix" verb does the same. Every key derives from KEY:
 *   KEY       the count: an exclusive holder (lock, fair, write) GETs it,
 *             waits a millisecond and SETs it plus one, so that holders
 *             the object does not keep apart lose increments; a semaphore
 *             holder INCRs it;
 *   KEY:w     exclusive holders inside, KEY:r readers inside, KEY:in
 *             semaphore holders inside (INCR on entering, DECR on leaving);
 *   KEY:over  one INCR per overlap seen: an exclusive holder finding
 *             another holder inside, a reader finding a writer, a
 *             semaphore holder finding more than the permits inside.
 * Only hiredis: cross_worker includes it too.
 */
#ifndef CR_TEST_MIX_INSIDE_H
#define CR_TEST_MIX_INSIDE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

/* Runs `cmd` on key KEY<suffix> (and `arg`, when not NULL); the integer it
 * answered (or the number a string holds, 0 for nil), and *ok false when
 * the command failed. */
static inline long long
mix_cmd(redisContext *c, const char *cmd, const char *key,
        const char *suffix, const char *arg, bool *ok)
{
    redisReply *r = arg != NULL
                        ? redisCommand(c, "%s %s%s %s", cmd, key, suffix, arg)
                        : redisCommand(c, "%s %s%s", cmd, key, suffix);
    long long v = 0;

    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        *ok = false;
    else if (r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* One holder's turn inside, as role `role` ("lock", "fair", "write",
 * "read" or "sem" of `permits`), on connection c; false when a command
 * failed. */
static inline bool
mix_inside(redisContext *c, const char *role, const char *key,
           long long permits)
{
    bool ok = true;
    char next[32];

    if (strcmp(role, "sem") == 0) {
        if (mix_cmd(c, "INCR", key, ":in", NULL, &ok) > permits)
            mix_cmd(c, "INCR", key, ":over", NULL, &ok);
        usleep(1000);
        mix_cmd(c, "DECR", key, ":in", NULL, &ok);
        mix_cmd(c, "INCR", key, "", NULL, &ok);
    } else if (strcmp(role, "read") == 0) {
        mix_cmd(c, "INCR", key, ":r", NULL, &ok);
        if (mix_cmd(c, "GET", key, ":w", NULL, &ok) > 0)
            mix_cmd(c, "INCR", key, ":over", NULL, &ok);
        usleep(1000);
        mix_cmd(c, "DECR", key, ":r", NULL, &ok);
    } else {
        if (mix_cmd(c, "INCR", key, ":w", NULL, &ok) > 1 ||
            mix_cmd(c, "GET", key, ":r", NULL, &ok) > 0)
            mix_cmd(c, "INCR", key, ":over", NULL, &ok);
        snprintf(next, sizeof(next), "%lld",
                 mix_cmd(c, "GET", key, "", NULL, &ok) + 1);
        usleep(1000);
        mix_cmd(c, "SET", key, "", next, &ok);
        mix_cmd(c, "DECR", key, ":w", NULL, &ok);
    }
    return ok;
}

#endif
