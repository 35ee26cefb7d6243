/* SPDX-License-Identifier: MIT */
/*
 * The ceiling every other benchmark is compared with, measured on the same
 * server in the same run with nothing but hiredis:
 *
 *   ping_rps         PING round trips per second on one connection
 *   evalsha_rps_1    EVALSHA of lua/lock_acquire.lua on a key its owner
 *                    holds (the reentrant path: hexists, hincrby, pexpire;
 *                    the waiting line is not reached) per second on one
 *                    connection
 *   evalsha_rps_C    the same over C connections (8 and 32 by default), one
 *                    command in flight on each, driven by one thread
 *   protocol_pair_rps  the RLock protocol done by hand on one connection:
 *                    acquire script, unlock script with a fresh latch, and
 *                    the latch's DEL sent without waiting (as the library
 *                    does); what a client with zero overhead would reach.
 *                    The acquire ignores the waiting line (wait 2, as
 *                    Redisson's clients do), which costs a TIME; the
 *                    unlock looks at the line (a TIME and an EXISTS)
 *
 * Every script call is built by the generated cr__build_<name>() from the
 * script's own argument lines (bench.h), with the line's real names.
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

#define OWNER "bench-owner:1"
#define LEASE_MS 30000

/* One call of RLock's acquire script on `key` by OWNER, ready to be sent
 * as often as wanted (bench_script_argv), with what it points into. */
typedef struct acquire {
    cr__line line;
    cr__lock_acquire_args args;
    cr__script_call call;
    char nk[24];
} acquire;

/* Builds `a`, the acquire call of `key` (which must outlive it). */
static void
acquire_init(acquire *a, const char *key)
{
    bench_line(&a->line, key);
    a->args = bench_lock_acquire_args(key, OWNER, LEASE_MS, &a->line);
    bench_script_argv(cr__build_lock_acquire(&a->args, &a->call), &a->call, a->nk);
}

static void
acquire_free(acquire *a)
{
    cr__script_call_free(&a->call);
    cr__line_free(&a->line);
}

/* Appends `a`'s call to c's output and writes it out; exits on failure. */
static void
acquire_send(redisContext *c, const acquire *a)
{
    int done = 0;

    redisAppendCommandArgv(c, (int)a->call.argc, a->call.argv, a->call.lens);
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            bench_die("write: %s", c->errstr);
}

/* Runs `argv` on `c` in a loop for `seconds`; returns commands per second. */
static double
rate_one(redisContext *c, int argc, const char **argv, const size_t *lens,
         double seconds)
{
    int64_t start = bench_now_ns(), end = start + (int64_t)(seconds * 1e9), now;
    uint64_t n = 0;

    do {
        int i;

        for (i = 0; i < 64; i++)
            freeReplyObject(bench_cmd_argv(c, argc, argv, lens));
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
    acquire *acqs = calloc((size_t)nconn, sizeof(*acqs));
    int64_t start, end, now;
    uint64_t n = 0;
    int i;

    if (fds == NULL || keys == NULL || acqs == NULL)
        bench_die("out of memory");
    for (i = 0; i < nconn; i++) {
        snprintf(keys[i], sizeof(keys[i]), "bench:ceiling:%d", i);
        acquire_init(&acqs[i], keys[i]);
    }
    /* Prime: one command in flight per connection. */
    for (i = 0; i < nconn; i++) {
        acquire_send(cs[i], &acqs[i]);
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
                if (((redisReply *)reply)->type == REDIS_REPLY_ERROR)
                    bench_die("redis error: %s", ((redisReply *)reply)->str);
                freeReplyObject(reply);
                reply = NULL;
                n++;
                acquire_send(cs[i], &acqs[i]);
            }
        }
    }
    /* Drain the commands still in flight. */
    for (i = 0; i < nconn; i++) {
        void *reply = NULL;

        if (redisGetReply(cs[i], &reply) != REDIS_OK)
            bench_die("read: %s", cs[i]->errstr);
        freeReplyObject(reply);
        acquire_free(&acqs[i]);
    }
    free(fds);
    free(keys);
    free(acqs);
    return (double)n / ((double)(now - start) / 1e9);
}

/* The RLock protocol by hand: acquire, unlock with a latch, DEL of the
 * latch appended without waiting (its reply is read with the next one).
 * Returns pairs per second. */
static double
protocol_pairs(redisContext *c, double seconds)
{
    int64_t start = bench_now_ns(), end = start + (int64_t)(seconds * 1e9), now;
    const char *key = "bench:ceiling:pair";
    const char *channel = "redisson_lock__channel:{bench:ceiling:pair}";
    uint64_t n = 0;
    bool pending = false;
    cr__line line;

    bench_line(&line, key);
    do {
        char latch[96];
        cr__script_call call;
        cr__lock_acquire_args acq = bench_lock_acquire_args(key, OWNER, LEASE_MS, &line);
        cr__lock_unlock_args unl;
        const char *del[2] = {"DEL", latch};
        redisReply *r;

        snprintf(latch, sizeof(latch),
                 "redisson_unlock_latch:{bench:ceiling:pair}:%032llx",
                 (unsigned long long)n);
        unl = bench_lock_unlock_args(key, channel, latch, OWNER, LEASE_MS, &line);
        if (pending) {
            void *dropped = NULL;

            bench_script_append(c, cr__build_lock_acquire(&acq, &call), &call);
            if (redisGetReply(c, &dropped) != REDIS_OK)
                bench_die("read: %s", c->errstr);
            freeReplyObject(dropped);
            if (redisGetReply(c, (void **)&r) != REDIS_OK)
                bench_die("read: %s", c->errstr);
        } else {
            r = bench_script(c, cr__build_lock_acquire(&acq, &call), &call);
        }
        if (r->type != REDIS_REPLY_NIL)
            bench_die("the pair's acquire failed");
        freeReplyObject(r);
        r = bench_script(c, cr__build_lock_unlock(&unl, &call), &call);
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
    cr__line_free(&line);
    return (double)n / ((double)(now - start) / 1e9);
}

/* lock_renew.lua over 100 keys held by one owner: calls per second. */
static double
renew_calls(redisContext *c, double seconds)
{
    const char *keyv[100], *owners[100];
    char keys[100][32], nk[24];
    cr__lock_renew_args a = {.locks = keyv, .n_locks = 100, .lease_ms = LEASE_MS,
                             .owners = owners, .n_owners = 100};
    cr__script_call call;
    double rate;
    int i;

    for (i = 0; i < 100; i++) {
        snprintf(keys[i], sizeof(keys[i]), "bench:ceiling:renew:%d", i);
        freeReplyObject(bench_cmd(c, "HSET %s %s 1", keys[i], OWNER));
        keyv[i] = keys[i];
        owners[i] = OWNER;
    }
    bench_script_argv(cr__build_lock_renew(&a, &call), &call, nk);
    rate = rate_one(c, (int)call.argc, call.argv, call.lens, seconds);
    cr__script_call_free(&call);
    return rate;
}

int
main(int argc, char **argv)
{
    bench_args a;
    redisContext *c;
    const char *conns;
    const char *ping[1] = {"PING"};
    acquire one;
    bench_json j;
    char *list, *tok, *save = NULL;
    double each;

    bench_args_parse(argc, argv, &a);
    conns = bench_opt(&a, "--conns", "8,32");
    each = a.seconds;
    c = bench_redis(a.url);
    bench_script_load(c, CR__SCRIPT_LOCK_ACQUIRE);
    bench_script_load(c, CR__SCRIPT_LOCK_UNLOCK);
    bench_script_load(c, CR__SCRIPT_LOCK_RENEW);
    acquire_init(&one, "bench:ceiling:one");

    bench_json_begin(&j, "ceiling");
    {
        double ping_rps = rate_one(c, 1, ping, NULL, each);

        bench_json_num(&j, "ping_rps", ping_rps);
        bench_json_num(&j, "rtt_us", 1e6 / ping_rps);
    }
    bench_json_num(&j, "evalsha_rps_1",
                   rate_one(c, (int)one.call.argc, one.call.argv, one.call.lens, each));
    acquire_free(&one);
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
