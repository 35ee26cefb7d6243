/* SPDX-License-Identifier: MIT */
/*
 * Scenario 6: count-down latch release fan-out. K waiters (threads sharing
 * one client, or processes with a client each) await one latch; the
 * coordinator closes it with a count of 1, waits until every waiter has
 * called await and is waiting, then counts it down. A waiter is waiting
 * once it has sent the PING that is its last command before the wait (the
 * latch's fence, src/wait.c): the coordinator reads the server's PING
 * count (INFO commandstats; at most WAITING_MAX_NS), then lets SETTLE_NS
 * more pass. Without that, waiters still making their first attempts
 * when the count down came returned through them, and on a slow stretch
 * the last of them late. The release latency of a waiter is the time from
 * just before the count down to the return of its await (CLOCK_MONOTONIC,
 * shared memory); a round's "all released" time is that of its last
 * waiter.
 * Rounds repeat for the run's length; the first WARMUP_ROUNDS are not
 * counted (they include every waiter's first connection and SUBSCRIBE).
 *
 * With --impl floor, the same rounds run without the library: each waiter
 * has a bare hiredis connection SUBSCRIBEd to a channel and blocks reading
 * it; the coordinator PUBLISHes one message. One wake-up per waiter and
 * one PUBLISH: the fan-out this machine and server give, which the latch
 * is divided by.
 *
 *   bench_latch [--url U] [--seconds S] [--workers K] [--mode threads|procs]
 *               [--impl latch|floor]
 *
 * Prints one JSON line; report.py divides the latencies by the PING round
 * trip measured by bench/ceiling in the same run.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <credisson.h>

#include "bench.h"

#define LATCH_NAME "bench:latch"
#define FLOOR_CHANNEL "bench:latch:floor"
#define MAX_WORKERS 256
#define SETTLE_NS 5000000 /* once all wait, before counting down */
#define WAITING_MAX_NS 200000000 /* for the waiters' PINGs */
#define WARMUP_ROUNDS 3

typedef struct shared {
    /* Rounds are handed out and counted under a process-shared mutex, so
     * that idle waiters sleep instead of polling: with 64 processes on
     * two cores, polling would take the CPU from the waiters being woken. */
    pthread_mutex_t mu;
    pthread_cond_t round_cv; /* round changed */
    pthread_cond_t count_cv; /* ready or done grew */
    int round;               /* the round the waiters should await; -1: stop */
    int ready;               /* waiters that have called await, all rounds */
    int done;                /* waiters whose await returned, all rounds */
    atomic_int errors;
    atomic_llong opened_ns; /* just before the count down of this round */
    atomic_llong last_ns;   /* the latest return of an await this round */
    bench_samples lat;      /* per waiter and round */
    bench_samples all;      /* per round: until the last waiter returned */
} shared;

/* Adds one to *counter under the mutex and tells the coordinator. */
static void
count_one(shared *sh, int *counter)
{
    pthread_mutex_lock(&sh->mu);
    (*counter)++;
    pthread_cond_signal(&sh->count_cv);
    pthread_mutex_unlock(&sh->mu);
}

typedef struct worker {
    const char *url;
    shared *sh;
    bool floor;        /* bare hiredis subscriber instead of the library */
    cr_client *client; /* shared by threads; NULL: make one */
} worker;

/* Records the return of a waiter's await (or read) in `round` at `now`. */
static void
returned(shared *sh, int round, long long now)
{
    long long last = atomic_load(&sh->last_ns);

    if (round > WARMUP_ROUNDS)
        bench_samples_add(&sh->lat, now - atomic_load(&sh->opened_ns));
    while (now > last &&
           !atomic_compare_exchange_weak(&sh->last_ns, &last, now))
        ;
    count_one(sh, &sh->done);
}

/* Waits for the next round; returns it, or -1 when told to stop. */
static int
next_round(shared *sh, int seen)
{
    pthread_mutex_lock(&sh->mu);
    while (sh->round == seen)
        pthread_cond_wait(&sh->round_cv, &sh->mu);
    seen = sh->round;
    pthread_mutex_unlock(&sh->mu);
    return seen;
}

/* A floor waiter: one bare subscriber connection, one message per round. */
static void
floor_rounds(worker *w)
{
    shared *sh = w->sh;
    redisContext *rc = bench_redis(w->url);
    redisReply *r = bench_cmd(rc, "SUBSCRIBE %s", FLOOR_CHANNEL);
    void *msg;
    int seen = 0;

    freeReplyObject(r);
    while ((seen = next_round(sh, seen)) >= 0) {
        count_one(sh, &sh->ready);
        if (redisGetReply(rc, &msg) != REDIS_OK)
            bench_die("floor subscriber: %s", rc->errstr);
        returned(sh, seen, bench_now_ns());
        freeReplyObject(msg);
    }
    redisFree(rc);
}

/* A waiter: await the latch once per round until told to stop. */
static void
wait_rounds(worker *w)
{
    shared *sh = w->sh;
    bool own = w->client == NULL;
    cr_client *c;
    cr_latch *l = NULL;
    int seen = 0;

    if (w->floor) {
        floor_rounds(w);
        return;
    }
    c = own ? bench_client(w->url) : w->client;
    if (cr_latch_new(c, LATCH_NAME, &l) != CR_OK)
        bench_die("cr_latch_new: %s", cr_last_error());
    while ((seen = next_round(sh, seen)) >= 0) {
        count_one(sh, &sh->ready);
        if (cr_latch_await(l, 30000) != CR_OK)
            atomic_fetch_add(&sh->errors, 1);
        returned(sh, seen, bench_now_ns());
    }
    cr_latch_free(l);
    if (own)
        cr_client_free(c);
}

/* pthread entry point. */
static void *
thread_main(void *arg)
{
    wait_rounds(arg);
    return NULL;
}

/* Waits until *counter reaches `want`, bounded to 30 s. */
static void
await_count(shared *sh, int *counter, int want)
{
    struct timespec deadline;
    bool late = false;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    pthread_mutex_lock(&sh->mu);
    while (*counter < want && !late)
        late = pthread_cond_timedwait(&sh->count_cv, &sh->mu, &deadline) != 0 &&
               *counter < want;
    pthread_mutex_unlock(&sh->mu);
    if (late)
        bench_die("waiters did not keep up");
}

/* The server's count of PING calls so far. */
static long long
pings(redisContext *c)
{
    redisReply *r = bench_cmd(c, "INFO commandstats");
    const char *at = strstr(r->str, "cmdstat_ping:calls=");
    long long n = at != NULL ? atoll(at + strlen("cmdstat_ping:calls=")) : 0;

    freeReplyObject(r);
    return n;
}

/* Waits until `want` PINGs were counted, at most WAITING_MAX_NS. */
static void
await_pings(redisContext *c, long long want)
{
    int64_t give_up = bench_now_ns() + WAITING_MAX_NS;

    while (pings(c) < want && bench_now_ns() < give_up)
        bench_sleep_ns(200000);
}

/* Hands out round `r` (-1: stop) to every waiter. */
static void
start_round(shared *sh, int r)
{
    pthread_mutex_lock(&sh->mu);
    sh->round = r;
    pthread_cond_broadcast(&sh->round_cv);
    pthread_mutex_unlock(&sh->mu);
}

/* Makes the round mutex and conditions usable across fork(). */
static void
init_sync(shared *sh)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;

    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&sh->round_cv, &ca);
    pthread_cond_init(&sh->count_cv, &ca);
    pthread_condattr_destroy(&ca);
}

int
main(int argc, char **argv)
{
    bench_args a;
    shared *sh;
    worker w;
    int k, i, rounds = 0;
    bool procs;
    pid_t pids[MAX_WORKERS];
    pthread_t tids[MAX_WORKERS];
    cr_client *c = NULL;
    cr_latch *l = NULL;
    redisContext *pub = NULL, *info;
    long long base;
    const char *impl;
    int64_t start, end;
    bench_json j;

    bench_args_parse(argc, argv, &a);
    k = atoi(bench_opt(&a, "--workers", "8"));
    procs = strcmp(bench_opt(&a, "--mode", "procs"), "procs") == 0;
    impl = bench_opt(&a, "--impl", "latch");
    if (strcmp(impl, "latch") != 0 && strcmp(impl, "floor") != 0)
        bench_die("--impl must be latch or floor");
    if (k < 1 || k > MAX_WORKERS)
        bench_die("--workers must be in 1..%d", MAX_WORKERS);
    sh = bench_shared(sizeof(*sh));
    init_sync(sh);
    bench_samples_init(&sh->lat, 1u << 20, true);
    bench_samples_init(&sh->all, 1u << 16, true);
    memset(&w, 0, sizeof(w));
    w.url = a.url;
    w.sh = sh;
    w.floor = strcmp(impl, "floor") == 0;
    if (!procs && !w.floor)
        w.client = bench_client(a.url);
    for (i = 0; i < k; i++) {
        if (procs) {
            fflush(NULL);
            pids[i] = fork();
            if (pids[i] < 0)
                bench_die("fork failed");
            if (pids[i] == 0) {
                wait_rounds(&w);
                _exit(0);
            }
        } else if (pthread_create(&tids[i], NULL, thread_main, &w) != 0) {
            bench_die("pthread_create failed");
        }
    }
    /* The coordinator's own client, made after the fork. */
    if (w.floor) {
        pub = bench_redis(a.url);
    } else {
        c = procs ? bench_client(a.url) : w.client;
        if (cr_latch_new(c, LATCH_NAME, &l) != CR_OK)
            bench_die("cr_latch_new: %s", cr_last_error());
        cr_latch_delete(l, NULL);
    }
    info = bench_redis(a.url);
    start = bench_now_ns();
    end = start + (int64_t)(a.seconds * 1e9);
    while (bench_now_ns() < end) {
        if (l != NULL && cr_latch_try_set_count(l, 1, 0, NULL) != CR_OK)
            bench_die("try_set_count: %s", cr_last_error());
        rounds++;
        base = l != NULL ? pings(info) : 0;
        start_round(sh, rounds);
        await_count(sh, &sh->ready, rounds * k);
        if (l != NULL) /* the floor's waiters send nothing: ready is waiting */
            await_pings(info, base + k);
        bench_sleep_ns(SETTLE_NS);
        atomic_store(&sh->last_ns, 0);
        atomic_store(&sh->opened_ns, bench_now_ns());
        if (pub != NULL)
            freeReplyObject(bench_cmd(pub, "PUBLISH %s 0", FLOOR_CHANNEL));
        else if (cr_latch_count_down(l) != CR_OK)
            bench_die("count_down: %s", cr_last_error());
        await_count(sh, &sh->done, rounds * k);
        if (rounds > WARMUP_ROUNDS)
            bench_samples_add(&sh->all, atomic_load(&sh->last_ns) -
                                        atomic_load(&sh->opened_ns));
    }
    start_round(sh, -1);
    for (i = 0; i < k; i++) {
        if (procs) {
            int status = 0;

            if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0)
                bench_die("waiter process %d failed", i);
        } else {
            pthread_join(tids[i], NULL);
        }
    }
    if (l != NULL)
        cr_latch_delete(l, NULL);
    cr_latch_free(l);
    cr_client_free(c);
    if (pub != NULL)
        redisFree(pub);
    redisFree(info);
    bench_samples_sort(&sh->lat);
    bench_samples_sort(&sh->all);

    bench_json_begin(&j, "s6_latch");
    bench_json_str(&j, "impl", impl);
    bench_json_str(&j, "mode", procs ? "procs" : "threads");
    bench_json_int(&j, "workers", k);
    bench_json_int(&j, "rounds",
                   rounds > WARMUP_ROUNDS ? rounds - WARMUP_ROUNDS : 0);
    bench_json_int(&j, "errors", atomic_load(&sh->errors));
    bench_json_num(&j, "release_p50_us", (double)bench_pct(&sh->lat, 50) / 1e3);
    bench_json_num(&j, "release_p99_us", (double)bench_pct(&sh->lat, 99) / 1e3);
    bench_json_num(&j, "release_max_us", (double)bench_pct(&sh->lat, 100) / 1e3);
    bench_json_num(&j, "all_p50_us", (double)bench_pct(&sh->all, 50) / 1e3);
    bench_json_num(&j, "all_p99_us", (double)bench_pct(&sh->all, 99) / 1e3);
    bench_json_num(&j, "all_max_us", (double)bench_pct(&sh->all, 100) / 1e3);
    bench_json_end(&j);
    free(a.rest);
    return 0;
}
