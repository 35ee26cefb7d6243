/* SPDX-License-Identifier: MIT */
/*
 * Scenario 9: the rate limiter against its own ceiling. K workers (threads
 * sharing one client, or processes with a client each) take one permit at
 * a time from one OVERALL limiter of R permits per interval I, each
 * waiting as long as the limiter says, for the run's length. The limiter's
 * ceiling is R per I: the figure is the grants in the whole intervals
 * after the first grant over R per interval (1.00: every permit the window
 * allows was used), and the commands the server ran per grant (the
 * attempts: a waiter that sleeps the hint makes few; one that polled would
 * make many). The grant times are CLOCK_MONOTONIC in shared memory; the
 * most grants seen in any interval-long window of them is reported too
 * (it may exceed R by the clock offset between the server and this host,
 * a few ms of grants, never by much).
 *
 * With --rate 0 the limiter's rate is 4294967295 per second, which no
 * client reaches: the figure is then the grants per second the library
 * gets out of the server, against bench/ceiling's EVALSHA rate.
 *
 *   bench_ratelimiter [--url U] [--seconds S] [--workers K]
 *                     [--mode threads|procs] [--rate R] [--interval-ms I]
 *
 * Prints one JSON line.
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

#define LIMITER_NAME "bench:rl"

typedef struct shared {
    atomic_int ready;
    atomic_int errors;
    atomic_llong start_ns; /* when the workers may start */
    atomic_llong end_ns;   /* when they stop */
    bench_samples grants;  /* grant times (ns) */
} shared;

typedef struct worker {
    const char *url;
    shared *sh;
    cr_client *client; /* shared by threads; NULL: make one */
} worker;

/* A worker: one permit at a time until the end. */
static void
work(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    bool own = w->client == NULL;
    cr_client *c = own ? bench_client(w->url) : w->client;
    cr_rate_limiter *l = NULL;
    int64_t now, end;

    if (cr_rate_limiter_new(c, LIMITER_NAME, &l) != CR_OK)
        bench_die("cr_rate_limiter_new: %s", cr_last_error());
    atomic_fetch_add(&sh->ready, 1);
    while (atomic_load(&sh->start_ns) == 0 ||
           bench_now_ns() < atomic_load(&sh->start_ns))
        bench_sleep_ns(100000);
    end = atomic_load(&sh->end_ns);
    while ((now = bench_now_ns()) < end) {
        cr_status rc = cr_rate_limiter_try_acquire(l, 1,
                                                   (end - now) / 1000000 + 1);

        if (rc == CR_OK)
            bench_samples_add(&sh->grants, bench_now_ns());
        else if (rc != CR_BUSY)
            atomic_fetch_add(&sh->errors, 1);
    }
    cr_rate_limiter_free(l);
    if (own)
        cr_client_free(c);
}

/* The server's count of EVALSHA and EVAL calls so far. */
static long long
script_calls(redisContext *c)
{
    redisReply *r = bench_cmd(c, "INFO commandstats");
    const char *names[2] = {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="};
    long long n = 0;
    int i;

    for (i = 0; i < 2; i++) {
        const char *at = strstr(r->str, names[i]);

        if (at != NULL)
            n += atoll(at + strlen(names[i]));
    }
    freeReplyObject(r);
    return n;
}

int
main(int argc, char **argv)
{
    bench_args a;
    shared *sh;
    worker w;
    int k;
    bool procs;
    int64_t rate, interval_ms;
    bench_workers ws;
    cr_client *c;
    cr_rate_limiter *l = NULL;
    redisContext *info;
    long long calls;
    size_t n, j, first, most = 0, whole = 0;
    int64_t interval_ns, t0, windows;
    double grants_per_s, ceiling;
    bench_json js;

    bench_args_parse(argc, argv, &a);
    k = atoi(bench_opt(&a, "--workers", "8"));
    procs = strcmp(bench_opt(&a, "--mode", "procs"), "procs") == 0;
    rate = atoll(bench_opt(&a, "--rate", "1000"));
    interval_ms = atoll(bench_opt(&a, "--interval-ms", "1000"));
    if (rate < 0 || interval_ms < 1)
        bench_die("--rate must be >= 0 and --interval-ms >= 1");
    if (rate == 0) {
        rate = CR_RATE_PERMITS_MAX;
        interval_ms = 1000;
    }
    sh = bench_shared(sizeof(*sh));
    bench_samples_init(&sh->grants, 1u << 22, true);
    c = bench_client(a.url);
    if (cr_rate_limiter_new(c, LIMITER_NAME, &l) != CR_OK ||
        cr_rate_limiter_delete(l, NULL) != CR_OK ||
        cr_rate_limiter_set_rate(l, CR_RATE_OVERALL, rate, interval_ms, 0) !=
            CR_OK)
        bench_die("setting the rate: %s", cr_last_error());
    memset(&w, 0, sizeof(w));
    w.url = a.url;
    w.sh = sh;
    if (!procs)
        w.client = c;
    bench_workers_start(&ws, k, procs, work, &w);
    while (atomic_load(&sh->ready) < k)
        bench_sleep_ns(1000000);
    info = bench_redis(a.url);
    calls = script_calls(info);
    atomic_store(&sh->end_ns, bench_now_ns() + 50000000 +
                              (int64_t)(a.seconds * 1e9));
    atomic_store(&sh->start_ns, bench_now_ns() + 50000000);
    bench_workers_join(&ws, "worker");
    calls = script_calls(info) - calls;
    redisFree(info);
    cr_rate_limiter_delete(l, NULL);
    cr_rate_limiter_free(l);
    if (procs)
        cr_client_free(c);

    /* Whole intervals from the first grant to the end of the run. */
    bench_samples_sort(&sh->grants);
    n = bench_samples_count(&sh->grants);
    interval_ns = interval_ms * 1000000;
    t0 = n > 0 ? sh->grants.v[0] : 0;
    windows = n > 0 ? (atomic_load(&sh->end_ns) - t0) / interval_ns : 0;
    for (first = 0, j = 0; first < n; first++) {
        /* The grants in [v[first], v[first] + interval). */
        while (j < n && sh->grants.v[j] < sh->grants.v[first] + interval_ns)
            j++;
        if (j - first > most)
            most = j - first;
        if (sh->grants.v[first] < t0 + windows * interval_ns)
            whole++;
    }
    grants_per_s = windows > 0 ? (double)whole / (windows * interval_ms / 1e3)
                               : 0;
    ceiling = (double)rate * 1000.0 / interval_ms;
    if (!procs)
        cr_client_free(c);

    bench_json_begin(&js, "s9_ratelimiter");
    bench_json_str(&js, "impl", "ratelimiter");
    bench_json_str(&js, "mode", procs ? "procs" : "threads");
    bench_json_int(&js, "workers", k);
    bench_json_int(&js, "rate", rate == CR_RATE_PERMITS_MAX ? 0 : rate);
    bench_json_int(&js, "interval_ms", interval_ms);
    bench_json_int(&js, "grants", (int64_t)n);
    bench_json_int(&js, "intervals", windows);
    bench_json_num(&js, "grants_per_s", grants_per_s);
    bench_json_num(&js, "ceiling_per_s",
                   rate == CR_RATE_PERMITS_MAX ? 0 : ceiling);
    bench_json_num(&js, "ratio", rate == CR_RATE_PERMITS_MAX || ceiling == 0
                                     ? 0 : grants_per_s / ceiling);
    bench_json_int(&js, "most_in_window", (int64_t)most);
    bench_json_num(&js, "attempts_per_grant",
                   n > 0 ? (double)calls / (double)n : 0);
    bench_json_int(&js, "errors", atomic_load(&sh->errors));
    bench_json_end(&js);
    free(a.rest);
    return 0;
}
