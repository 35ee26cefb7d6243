/* SPDX-License-Identifier: MIT */
/*
 * Scenario 5: count-down latch release fan-out. K waiters (threads sharing
 * one client, or processes with a client each) await one latch; the
 * coordinator closes it with a count of 1, waits until every waiter has
 * called await (and a few milliseconds more, for their subscriptions), then
 * counts it down. The release latency of a waiter is the time from just
 * before the count down to the return of its await (CLOCK_MONOTONIC, shared
 * memory). Rounds repeat for the run's length.
 *
 *   bench_latch [--url U] [--seconds S] [--workers K] [--mode threads|procs]
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
#include <unistd.h>

#include <credisson.h>

#include "bench.h"

#define LATCH_NAME "bench:latch"
#define MAX_WORKERS 256
#define SETTLE_NS 5000000 /* after the last await call, before counting down */

typedef struct shared {
    atomic_int round;   /* the round the waiters should await; -1: stop */
    atomic_int ready;   /* waiters that have called await, all rounds */
    atomic_int done;    /* waiters whose await returned, all rounds */
    atomic_int errors;
    atomic_llong opened_ns; /* just before the count down of this round */
    bench_samples lat;
} shared;

typedef struct worker {
    const char *url;
    shared *sh;
    cr_client *client; /* shared by threads; NULL: make one */
} worker;

/* Makes a client with the defaults on `url`; exits on failure. */
static cr_client *
new_client(const char *url)
{
    cr_client_options o;
    cr_client *c = NULL;

    memset(&o, 0, sizeof(o));
    o.url = url;
    if (cr_client_new(&o, &c) != CR_OK)
        bench_die("cr_client_new: %s", cr_last_error());
    return c;
}

/* A waiter: await the latch once per round until told to stop. */
static void
wait_rounds(worker *w)
{
    shared *sh = w->sh;
    bool own = w->client == NULL;
    cr_client *c = own ? new_client(w->url) : w->client;
    cr_latch *l = NULL;
    int seen = 0;

    if (cr_latch_new(c, LATCH_NAME, &l) != CR_OK)
        bench_die("cr_latch_new: %s", cr_last_error());
    for (;;) {
        int r = atomic_load(&sh->round);

        if (r < 0)
            break;
        if (r == seen) {
            bench_sleep_ns(20000);
            continue;
        }
        seen = r;
        atomic_fetch_add(&sh->ready, 1);
        if (cr_latch_await(l, 30000) != CR_OK)
            atomic_fetch_add(&sh->errors, 1);
        bench_samples_add(&sh->lat, bench_now_ns() - atomic_load(&sh->opened_ns));
        atomic_fetch_add(&sh->done, 1);
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

/* Waits until *v reaches `want`, bounded to 30 s. */
static void
await_count(atomic_int *v, int want)
{
    int64_t deadline = bench_now_ns() + 30 * (int64_t)1000000000;

    while (atomic_load(v) < want) {
        if (bench_now_ns() > deadline)
            bench_die("waiters did not keep up");
        bench_sleep_ns(20000);
    }
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
    cr_client *c;
    cr_latch *l = NULL;
    int64_t start, end;
    bench_json j;

    bench_args_parse(argc, argv, &a);
    k = atoi(bench_opt(&a, "--workers", "8"));
    procs = strcmp(bench_opt(&a, "--mode", "procs"), "procs") == 0;
    if (k < 1 || k > MAX_WORKERS)
        bench_die("--workers must be in 1..%d", MAX_WORKERS);
    sh = bench_shared(sizeof(*sh));
    bench_samples_init(&sh->lat, 1u << 20, true);
    memset(&w, 0, sizeof(w));
    w.url = a.url;
    w.sh = sh;
    if (!procs)
        w.client = new_client(a.url);
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
    c = procs ? new_client(a.url) : w.client;
    if (cr_latch_new(c, LATCH_NAME, &l) != CR_OK)
        bench_die("cr_latch_new: %s", cr_last_error());
    cr_latch_delete(l, NULL);
    start = bench_now_ns();
    end = start + (int64_t)(a.seconds * 1e9);
    while (bench_now_ns() < end) {
        if (cr_latch_try_set_count(l, 1, 0, NULL) != CR_OK)
            bench_die("try_set_count: %s", cr_last_error());
        rounds++;
        atomic_store(&sh->round, rounds);
        await_count(&sh->ready, rounds * k);
        bench_sleep_ns(SETTLE_NS);
        atomic_store(&sh->opened_ns, bench_now_ns());
        if (cr_latch_count_down(l) != CR_OK)
            bench_die("count_down: %s", cr_last_error());
        await_count(&sh->done, rounds * k);
    }
    atomic_store(&sh->round, -1);
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
    cr_latch_delete(l, NULL);
    cr_latch_free(l);
    cr_client_free(c);
    bench_samples_sort(&sh->lat);

    bench_json_begin(&j, "s5_latch");
    bench_json_str(&j, "impl", "latch");
    bench_json_str(&j, "mode", procs ? "procs" : "threads");
    bench_json_int(&j, "workers", k);
    bench_json_int(&j, "rounds", rounds);
    bench_json_int(&j, "errors", atomic_load(&sh->errors));
    bench_json_num(&j, "release_p50_us", (double)bench_pct(&sh->lat, 50) / 1e3);
    bench_json_num(&j, "release_p99_us", (double)bench_pct(&sh->lat, 99) / 1e3);
    bench_json_num(&j, "release_max_us", (double)bench_pct(&sh->lat, 100) / 1e3);
    bench_json_end(&j);
    free(a.rest);
    return 0;
}
