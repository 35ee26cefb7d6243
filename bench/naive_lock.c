/* SPDX-License-Identifier: MIT */
/*
 * The naive Redis lock (see naive_lock.h), written on hiredis as the blog
 * posts write it: one SET NX PX per attempt, a 1 ms sleep between attempts,
 * and an atomic compare-and-delete in Lua to unlock.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bench.h"
#include "naive_lock.h"

/* KEYS[1] = the lock key, ARGV[1] = our token; deletes the key only while
 * it still holds the token. Returns 1 when deleted, 0 otherwise. */
static const char unlock_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
    "    return redis.call('del', KEYS[1])\n"
    "end\n"
    "return 0\n";

struct naive_lock {
    redisContext *c;
    char *key;
    char token[33];
    char lease[24];
    char sha[41];
};

naive_lock *
naive_lock_new(redisContext *c, const char *key, int64_t lease_ms)
{
    naive_lock *l = calloc(1, sizeof(*l));
    unsigned char rnd[16];
    redisReply *r;
    int i;

    if (l == NULL || (l->key = strdup(key)) == NULL)
        bench_die("out of memory");
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        bench_die("getrandom failed");
    for (i = 0; i < 16; i++)
        snprintf(l->token + 2 * i, 3, "%02x", rnd[i]);
    snprintf(l->lease, sizeof(l->lease), "%lld", (long long)lease_ms);
    l->c = c;
    r = bench_cmd(c, "SCRIPT LOAD %s", unlock_script);
    if (r->type != REDIS_REPLY_STRING || r->len != 40)
        bench_die("SCRIPT LOAD gave no SHA1");
    memcpy(l->sha, r->str, 41);
    freeReplyObject(r);
    return l;
}

void
naive_lock_free(naive_lock *l)
{
    if (l == NULL)
        return;
    free(l->key);
    free(l);
}

uint64_t
naive_lock_lock(naive_lock *l, int64_t retry_us)
{
    const char *argv[6] = {"SET", l->key, l->token, "NX", "PX", l->lease};
    uint64_t attempts = 0;

    for (;;) {
        redisReply *r = bench_cmd_argv(l->c, 6, argv, NULL);
        int ok = r->type == REDIS_REPLY_STATUS;

        freeReplyObject(r);
        attempts++;
        if (ok)
            return attempts;
        bench_sleep_ns(retry_us * 1000);
    }
}

int
naive_lock_unlock(naive_lock *l)
{
    const char *argv[5] = {"EVALSHA", l->sha, "1", l->key, l->token};
    redisReply *r = bench_cmd_argv(l->c, 5, argv, NULL);
    int deleted = r->type == REDIS_REPLY_INTEGER && r->integer == 1;

    freeReplyObject(r);
    return deleted;
}
