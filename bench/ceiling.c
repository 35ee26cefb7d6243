/* SPDX-License-Identifier: MIT */
/*
 * The ceiling every other benchmark is compared with, measured on the same
 * server in the same run with nothing but hiredis:
 *
 *   ping_rps         PING round trips per second on one connection
 *   evalsha_rps_1    EVALSHA of lua/lock_acquire.lua (its reentrant path:
 *                    exists, hexists, hincrby, pexpire, the heaviest) per
 *                    second on one connection
 *   evalsha_rps_C    the same over C connections (8 and 32 by default), one
 *                    command in flight on each, driven by one thread
 *   protocol_pair_rps  the RLock protocol done by hand on one connection:
 *                    acquire script, unlock script with a fresh latch, and
 *                    the latch's DEL sent without waiting (as the library
 *                    does); what a client with zero overhead would reach
 *   renew100_rps     lock_renew.lua calls of 100 held keys per second on one
 *                    connection (the watchdog's unit of work)
 *
 *   ceiling [--url URL] [--seconds S] [--conns 8,32]
 *
 * Prints one JSON line, {"bench":"ceiling",...}.
 */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "scripts.h"

/* Loads script `id` into the server; exits unless its SHA1 is the one the
 * library will send. */
static void
load_script(redisContext *c, cr__script_id id)
{
    const char *argv[3] = {"SCRIPT", "LOAD", cr__scripts[id].body};
    size_t lens[3] = {6, 4, cr__scripts[id].len};
    redisReply *r = bench_cmd_argv(c, 3, argv, lens);

    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, cr__scripts[id].sha1) != 0)
        bench_die("SCRIPT LOAD of %s gave an unexpected SHA1", cr__scripts[id].name);
    freeReplyObject(r);
}

/* Runs `argv` on `c` in a loop for `seconds`; returns commands per second. */
static double
rate_one(redisContext *c, int argc, const char **argv, double seconds)
{
    int64_t start = bench_now_ns(), end = start + (int64_t)(seconds * 1e9), now;
    uint64_t n = 0;

    do {
        int i;

        for (i = 0; i < 64; i++)
            freeReplyObject(bench_cmd_argv(c, argc, argv, NULL));
        n += 64;
        now = bench_now_ns();
    } while (now < end);
    return (double)n / ((double)(now - start) / 1e9);
}

/* Sends the acquire script on every connection of `cs` with one command in
 * flight on each, driven by poll() from this one thread, for `seconds`;
 * returns commands per second over all of them. */
static double
rate_many(redisContext **cs, int nconn, double seconds)
{
    struct pollfd *fds = calloc((size_t)nconn, sizeof(*fds));
    char (*keys)[32] = calloc((size_t)nconn, sizeof(*keys));
    int64_t start, end, now;
    uint64_t n = 0;
    int i;

    if (fds == NULL || keys == NULL)
        bench_die("out of memory");
    for (i = 0; i < nconn; i++)
        snprintf(keys[i], sizeof(keys[i]), "bench:ceiling:%d", i);
    /* Prime: one command in flight per connection. */
    for (i = 0; i < nconn; i++) {
        const char *argv[6] = {"EVALSHA", cr__scripts[CR__SCRIPT_LOCK_ACQUIRE].sha1,
                               "1", keys[i], "30000", "bench-owner:1"};
        int done = 0;

        redisAppendCommandArgv(cs[i], 6, argv, NULL);
        while (!done)
            if (redisBufferWrite(cs[i], &done) != REDIS_OK)
                bench_die("write: %s", cs[i]->errstr);
        fds[i].fd = cs[i]->fd;
        fds[i].events = POLLIN;
    }
    start = bench_now_ns();
    end = start + (int64_t)(seconds * 1e9);
    for (;;) {
        now = bench_now_ns();
        if (now >= end)
            break;
        if (poll(fds, (nfds_t)nconn, 100) < 0)
            bench_die("poll failed");
        for (i = 0; i < nconn; i++) {
            void *reply = NULL;

            if (!(fds[i].revents & POLLIN))
                continue;
            if (redisBufferRead(cs[i]) != REDIS_OK)
                bench_die("read: %s", cs[i]->errstr);
            while (redisGetReplyFromReader(cs[i], &reply) == REDIS_OK &&
                   reply != NULL) {
                const char *argv[6] = {"EVALSHA",
                                       cr__scripts[CR__SCRIPT_LOCK_ACQUIRE].sha1,
                                       "1", keys[i], "30000", "bench-owner:1"};
                int done = 0;

                if (((redisReply *)reply)->type == REDIS_REPLY_ERROR)
                    bench_die("redis error: %s", ((redisReply *)reply)->str);
                freeReplyObject(reply);
                reply = NULL;
                n++;
                redisAppendCommandArgv(cs[i], 6, argv, NULL);
                while (!done)
                    if (redisBufferWrite(cs[i], &done) != REDIS_OK)
                        bench_die("write: %s", cs[i]->errstr);
            }
        }
    }
    /* Drain the commands still in flight. */
    for (i = 0; i < nconn; i++) {
        void *reply = NULL;

        if (redisGetReply(cs[i], &reply) != REDIS_OK)
            bench_die("read: %s", cs[i]->errstr);
        freeReplyObject(reply);
    }
    free(fds);
    free(keys);
    return (double)n / ((double)(now - start) / 1e9);
}

/* The RLock protocol by hand: acquire, unlock with a latch, DEL of the
 * latch appended without waiting (its reply is read with the next one).
 * Returns pairs per second. */
static double
protocol_pairs(redisContext *c, double seconds)
{
    int64_t start = bench_now_ns(), end = start + (int64_t)(seconds * 1e9), now;
    const char *owner = "bench-owner:1", *key = "bench:ceiling:pair";
    const char *channel = "redisson_lock__channel:{bench:ceiling:pair}";
    uint64_t n = 0;
    bool pending = false;

    do {
        char latch[96];
        const char *acq[6] = {"EVALSHA", cr__scripts[CR__SCRIPT_LOCK_ACQUIRE].sha1,
                              "1", key, "30000", owner};
        const char *unl[11] = {"EVALSHA", cr__scripts[CR__SCRIPT_LOCK_UNLOCK].sha1,
                               "3", key, channel, latch, "0", "30000", owner,
                               "publish", "10000"};
        const char *del[2] = {"DEL", latch};
        redisReply *r;

        snprintf(latch, sizeof(latch),
                 "redisson_unlock_latch:{bench:ceiling:pair}:%032llx",
                 (unsigned long long)n);
        if (pending) {
            void *dropped = NULL;

            redisAppendCommandArgv(c, 6, acq, NULL);
            if (redisGetReply(c, &dropped) != REDIS_OK)
                bench_die("read: %s", c->errstr);
            freeReplyObject(dropped);
            if (redisGetReply(c, (void **)&r) != REDIS_OK)
                bench_die("read: %s", c->errstr);
        } else {
            r = bench_cmd_argv(c, 6, acq, NULL);
        }
        if (r->type != REDIS_REPLY_NIL)
            bench_die("the pair's acquire failed");
        freeReplyObject(r);
        r = bench_cmd_argv(c, 11, unl, NULL);
        if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
            bench_die("the pair's unlock failed");
        freeReplyObject(r);
        redisAppendCommandArgv(c, 2, del, NULL);
        pending = true;
        n++;
        now = bench_now_ns();
    } while (now < end);
    if (pending) {
        void *dropped = NULL;

        if (redisGetReply(c, &dropped) == REDIS_OK)
            freeReplyObject(dropped);
    }
    return (double)n / ((double)(now - start) / 1e9);
}

/* lock_renew.lua over 100 keys held by one owner: calls per second. */
static double
renew_calls(redisContext *c, double seconds)
{
    const char *argv[3 + 100 + 101];
    char keys[100][32];
    int i;

    argv[0] = "EVALSHA";
    argv[1] = cr__scripts[CR__SCRIPT_LOCK_RENEW].sha1;
    argv[2] = "100";
    argv[103] = "30000";
    for (i = 0; i < 100; i++) {
        snprintf(keys[i], sizeof(keys[i]), "bench:ceiling:renew:%d", i);
        freeReplyObject(bench_cmd(c, "HSET %s bench-owner:1 1", keys[i]));
        argv[3 + i] = keys[i];
        argv[104 + i] = "bench-owner:1";
    }
    return rate_one(c, 204, argv, seconds);
}

int
main(int argc, char **argv)
{
    bench_args a;
    redisContext *c;
    const char *conns;
    const char *ping[1] = {"PING"};
    const char *acq[6] = {"EVALSHA", NULL, "1", "bench:ceiling:one", "30000",
                          "bench-owner:1"};
    bench_json j;
    char *list, *tok, *save = NULL;
    double each;

    bench_args_parse(argc, argv, &a);
    conns = bench_opt(&a, "--conns", "8,32");
    each = a.seconds;
    c = bench_redis(a.url);
    load_script(c, CR__SCRIPT_LOCK_ACQUIRE);
    load_script(c, CR__SCRIPT_LOCK_UNLOCK);
    load_script(c, CR__SCRIPT_LOCK_RENEW);
    acq[1] = cr__scripts[CR__SCRIPT_LOCK_ACQUIRE].sha1;

    bench_json_begin(&j, "ceiling");
    {
        double ping_rps = rate_one(c, 1, ping, each);

        bench_json_num(&j, "ping_rps", ping_rps);
        bench_json_num(&j, "rtt_us", 1e6 / ping_rps);
    }
    bench_json_num(&j, "evalsha_rps_1", rate_one(c, 6, acq, each));
    list = strdup(conns);
    if (list == NULL)
        bench_die("out of memory");
    for (tok = strtok_r(list, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        int n = atoi(tok), i;
        redisContext **cs = calloc((size_t)n, sizeof(*cs));
        char key[32];

        if (n < 1 || cs == NULL)
            bench_die("bad --conns");
        for (i = 0; i < n; i++)
            cs[i] = bench_redis(a.url);
        snprintf(key, sizeof(key), "evalsha_rps_%d", n);
        bench_json_num(&j, key, rate_many(cs, n, each));
        for (i = 0; i < n; i++)
            redisFree(cs[i]);
        free(cs);
    }
    free(list);
    bench_json_num(&j, "protocol_pair_rps", protocol_pairs(c, each));
    bench_json_num(&j, "renew100_rps", renew_calls(c, each));
    bench_json_num(&j, "seconds_each", each);
    bench_json_end(&j);
    freeReplyObject(bench_cmd(c, "DEL bench:ceiling:one bench:ceiling:pair"));
    redisFree(c);
    free(a.rest);
    return 0;
}
