/* SPDX-License-Identifier: MIT */
/*
 * Scenario 10: the cyclic barrier's round time. K parties (threads sharing
 * one client, or processes with a client each) run rounds back to back:
 * each awaits the barrier, and as soon as it is released awaits it again.
 * A party's round time is the time between two of its releases: its
 * arrival, the wait for the slowest party, the wake-up. Samples are taken
 * by every party for every round after the first WARMUP_ROUNDS; p50, p99
 * and max are reported with the rounds per second.
 *
 * With --impl floor, the same rounds run without the library: each party
 * has a hiredis connection for commands and one SUBSCRIBEd to a channel; an
 * arrival is one EVAL that increments a counter and, for the K-th arrival
 * of a round, PUBLISHes the round's number; a party is released when it
 * reads a number at least its round's. One script and one wake-up per
 * party and round, no lease, no check: the bare pub/sub floor the barrier
 * is divided by.
 *
 * The run ends when its time is up: the parties stop after their next
 * release, and those left waiting in a round that can no longer complete
 * leave after STOP_WAIT_MS (that round is not counted).
 *
 *   bench_barrier [--url U] [--seconds S] [--workers K]
 *                 [--mode threads|procs] [--impl barrier|floor]
 *
 * Prints one JSON line.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <credisson.h>

#include "bench.h"

#define BARRIER_NAME "bench:barrier"
#define FLOOR_COUNTER "bench:barrier:floor"
#define FLOOR_CHANNEL "bench:barrier:floor:ch"
#define WARMUP_ROUNDS 3
#define STOP_WAIT_MS 2000

/* One arrival of the floor: the K-th of a round publishes its number. */
static const char floor_arrive[] =
    "local n = redis.call('incr', KEYS[1]) "
    "local k = tonumber(ARGV[1]) "
    "if n % k == 0 then redis.call('publish', KEYS[2], n / k) end "
    "return n";

typedef struct shared {
    atomic_int ready;
    atomic_int go;
    atomic_int stop;
    atomic_int errors;
    atomic_llong rounds;  /* rounds completed (the highest seen) */
    bench_samples round;  /* a party's time between two releases (ns) */
} shared;

typedef struct worker {
    const char *url;
    shared *sh;
    int parties;
    bool floor;
    cr_client *client; /* shared by threads; NULL: make one */
} worker;

/* Waits for the start. */
static void
start_line(shared *sh)
{
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go))
        bench_sleep_ns(200000);
}

/* Records that `round` was completed, released at `now`, after the
 * previous release at *last. */
static void
released(shared *sh, long long round, int64_t now, int64_t *last)
{
    long long seen = atomic_load(&sh->rounds);

    if (round > WARMUP_ROUNDS && *last > 0)
        bench_samples_add(&sh->round, now - *last);
    *last = now;
    while (round > seen &&
           !atomic_compare_exchange_weak(&sh->rounds, &seen, round))
        ;
}

/* A floor party. */
static void
floor_rounds(worker *w)
{
    shared *sh = w->sh;
    redisContext *cmd = bench_redis(w->url), *sub = bench_redis(w->url);
    struct timeval tv = {STOP_WAIT_MS / 1000, 0};
    char k[16];
    long long round = 0;
    int64_t last = 0;

    freeReplyObject(bench_cmd(sub, "SUBSCRIBE %s", FLOOR_CHANNEL));
    redisSetTimeout(sub, tv);
    snprintf(k, sizeof(k), "%d", w->parties);
    start_line(sh);
    while (!atomic_load(&sh->stop)) {
        long long got = 0;

        round++;
        freeReplyObject(bench_cmd(cmd, "EVAL %s 2 %s %s %s", floor_arrive,
                                  FLOOR_COUNTER, FLOOR_CHANNEL, k));
        while (got < round) {
            redisReply *m = NULL;

            if (redisGetReply(sub, (void **)&m) != REDIS_OK) {
                got = -1;
                break;
            }
            if (m->type == REDIS_REPLY_ARRAY && m->elements == 3)
                got = atoll(m->element[2]->str);
            freeReplyObject(m);
        }
        if (got < 0)
            break;
        released(sh, round, bench_now_ns(), &last);
    }
    redisFree(sub);
    redisFree(cmd);
}

/* A barrier party. */
static void
barrier_rounds(worker *w)
{
    shared *sh = w->sh;
    bool own = w->client == NULL;
    cr_client *c = own ? bench_client(w->url) : w->client;
    cr_barrier *b = NULL;
    int64_t last = 0;

    if (cr_barrier_new(c, BARRIER_NAME, w->parties, &b) != CR_OK)
        bench_die("cr_barrier_new: %s", cr_last_error());
    start_line(sh);
    while (!atomic_load(&sh->stop)) {
        int64_t g = -1;
        cr_status rc = cr_barrier_await(b, STOP_WAIT_MS, &g, NULL);

        if (rc != CR_OK) {
            if (!atomic_load(&sh->stop))
                atomic_fetch_add(&sh->errors, 1);
            break;
        }
        released(sh, g + 1, bench_now_ns(), &last);
    }
    cr_barrier_free(b);
    if (own)
        cr_client_free(c);
}

static void
work(void *arg)
{
    worker *w = arg;

    if (w->floor)
        floor_rounds(w);
    else
        barrier_rounds(w);
}

int
main(int argc, char **argv)
{
    bench_args a;
    shared *sh;
    worker w;
    int k;
    bool procs;
    const char *impl;
    bench_workers ws;
    redisContext *rc;
    int64_t start, elapsed;
    bench_json j;

    bench_args_parse(argc, argv, &a);
    k = atoi(bench_opt(&a, "--workers", "16"));
    procs = strcmp(bench_opt(&a, "--mode", "procs"), "procs") == 0;
    impl = bench_opt(&a, "--impl", "barrier");
    if (strcmp(impl, "barrier") != 0 && strcmp(impl, "floor") != 0)
        bench_die("--impl must be barrier or floor");
    rc = bench_redis(a.url);
    freeReplyObject(bench_cmd(rc, "DEL %s %s credisson_barrier_arrivals:{%s}",
                              FLOOR_COUNTER, BARRIER_NAME, BARRIER_NAME));
    sh = bench_shared(sizeof(*sh));
    bench_samples_init(&sh->round, 1u << 22, true);
    memset(&w, 0, sizeof(w));
    w.url = a.url;
    w.sh = sh;
    w.parties = k;
    w.floor = strcmp(impl, "floor") == 0;
    if (!procs && !w.floor)
        w.client = bench_client(a.url);
    bench_workers_start(&ws, k, procs, work, &w);
    while (atomic_load(&sh->ready) < k)
        bench_sleep_ns(1000000);
    start = bench_now_ns();
    atomic_store(&sh->go, 1);
    bench_sleep_ns((int64_t)(a.seconds * 1e9));
    atomic_store(&sh->stop, 1);
    elapsed = bench_now_ns() - start;
    bench_workers_join(&ws, "party");
    if (w.client != NULL)
        cr_client_free(w.client);
    freeReplyObject(bench_cmd(rc, "DEL %s %s credisson_barrier_arrivals:{%s}",
                              FLOOR_COUNTER, BARRIER_NAME, BARRIER_NAME));
    redisFree(rc);
    bench_samples_sort(&sh->round);

    bench_json_begin(&j, "s11_barrier");
    bench_json_str(&j, "impl", impl);
    bench_json_str(&j, "mode", procs ? "procs" : "threads");
    bench_json_int(&j, "workers", k);
    bench_json_int(&j, "rounds", atomic_load(&sh->rounds));
    bench_json_num(&j, "rounds_per_s",
                   (double)atomic_load(&sh->rounds) / (elapsed / 1e9));
    bench_json_int(&j, "errors", atomic_load(&sh->errors));
    bench_json_num(&j, "round_p50_us", (double)bench_pct(&sh->round, 50) / 1e3);
    bench_json_num(&j, "round_p99_us", (double)bench_pct(&sh->round, 99) / 1e3);
    bench_json_num(&j, "round_max_us", (double)bench_pct(&sh->round, 100) / 1e3);
    bench_json_end(&j);
    free(a.rest);
    return 0;
}
