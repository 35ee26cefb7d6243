/* SPDX-License-Identifier: MIT */
/*
 * Scenario 7: the watchdog at scale. One client takes N lease-less locks
 * (distinct names, cr_lock_try_lock_tid, so the watchdog renews them all),
 * then does nothing while the watchdog runs for a number of renewal periods.
 *
 *   bench_watchdog [--url U] [--locks 10000,100000] [--watchdog-ms 3000]
 *                  [--periods 7] [--threads 4]
 *
 * For each N it prints one JSON line with:
 *   renewal_calls_per_period, locks_per_call  (cr_client_stats deltas over
 *       the quiet window; the ideal is N / batch size calls)
 *   cpu_pct      the client's CPU (getrusage, all its threads) over the
 *                window, in % of one core, at this watchdog timeout
 *   bytes_per_lock_handles / bytes_per_lock_holds  malloc'd bytes per held
 *       lock (mallinfo2 deltas) with the cr_lock handles still alive, and
 *       after freeing them (the holds table alone; a freed handle's hold is
 *       still renewed), plus the RSS growth per lock (/proc/self/statm)
 *   leases_lost (must be 0) and a sample of PTTLs (all must be > 0, read
 *       after a window longer than two leases)
 * Keys are deleted afterwards (pipelined DEL), never FLUSHALL.
 */
#include "config.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <credisson.h>

#include "bench.h"

typedef struct acquirer {
    cr_client *client;
    cr_lock **locks;
    size_t from, to;
} acquirer;

/* The lock name of index i. */
static void
lock_name(char *buf, size_t len, size_t i)
{
    snprintf(buf, len, "bench:wd:%zu", i);
}

/* Takes locks[from..to) with the watchdog, failing the run on any error. */
static void *
acquire_range(void *arg)
{
    acquirer *q = arg;
    size_t i;

    for (i = q->from; i < q->to; i++) {
        char name[48];
        cr_status rc;

        lock_name(name, sizeof(name), i);
        rc = cr_lock_new(q->client, name, &q->locks[i]);
        if (rc == CR_OK)
            rc = cr_lock_try_lock_tid(q->locks[i], 1, 0, CR_LEASE_WATCHDOG);
        if (rc != CR_OK)
            bench_die("taking %s: %s (%s)", name, cr_strerror(rc), cr_last_error());
    }
    return NULL;
}

/* Bytes handed out by malloc, over every arena. */
static double
heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();

    return (double)mi.uordblks + (double)mi.hblkhd;
}

/* Resident set size in bytes. */
static double
rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;

    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* Reads the PTTL of `sample` keys spread over the N locks (pipelined);
 * returns how many were > 0 and stores the smallest in *min. */
static size_t
sample_pttls(redisContext *c, size_t n, size_t sample, long long *min)
{
    size_t i, ok = 0;

    *min = -3;
    for (i = 0; i < sample; i++) {
        char name[48];

        lock_name(name, sizeof(name), i * (n / sample));
        redisAppendCommand(c, "PTTL %s", name);
    }
    for (i = 0; i < sample; i++) {
        redisReply *r = NULL;

        if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
            bench_die("PTTL: %s", c->errstr);
        if (r->type == REDIS_REPLY_INTEGER) {
            if (r->integer > 0)
                ok++;
            if (*min == -3 || r->integer < *min)
                *min = r->integer;
        }
        freeReplyObject(r);
    }
    return ok;
}

/* Deletes the N lock keys, 1000 per pipelined round. */
static void
delete_keys(redisContext *c, size_t n)
{
    size_t i, k;

    for (i = 0; i < n; i += k) {
        for (k = 0; k < 1000 && i + k < n; k++) {
            char name[48];

            lock_name(name, sizeof(name), i + k);
            redisAppendCommand(c, "DEL %s", name);
        }
        for (size_t m = 0; m < k; m++) {
            void *r = NULL;

            if (redisGetReply(c, &r) != REDIS_OK)
                bench_die("DEL: %s", c->errstr);
            freeReplyObject(r);
        }
    }
}

/* One measurement with n locks. */
static void
run(const char *url, size_t n, int64_t watchdog_ms, double periods,
    int threads)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_lock **locks = calloc(n, sizeof(*locks));
    acquirer *qs = calloc((size_t)threads, sizeof(*qs));
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    redisContext *rc = bench_redis(url);
    cr_client_stats s0 = CR_CLIENT_STATS_INIT, s1 = CR_CLIENT_STATS_INIT;
    double heap0, heap1, heap2, heap3, rss0, rss1, cpu0, cpu1;
    double period_s = (double)(watchdog_ms / 3) / 1e3, window;
    int64_t t0, t1, a0, a1;
    size_t i, sample = n < 1000 ? n : 1000, alive;
    long long min_pttl;
    bench_json j;
    int k;

    if (locks == NULL || qs == NULL || tids == NULL)
        bench_die("out of memory");
    delete_keys(rc, n);
    o.url = url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.pool_size = threads;
    if (cr_client_new(&o, &client) != CR_OK)
        bench_die("cr_client_new: %s", cr_last_error());
    malloc_trim(0);
    heap0 = heap_bytes();
    rss0 = rss_bytes();
    a0 = bench_now_ns();
    for (k = 0; k < threads; k++) {
        qs[k].client = client;
        qs[k].locks = locks;
        qs[k].from = n * (size_t)k / (size_t)threads;
        qs[k].to = n * (size_t)(k + 1) / (size_t)threads;
        if (pthread_create(&tids[k], NULL, acquire_range, &qs[k]) != 0)
            bench_die("pthread_create failed");
    }
    for (k = 0; k < threads; k++)
        pthread_join(tids[k], NULL);
    a1 = bench_now_ns();
    heap1 = heap_bytes();
    rss1 = rss_bytes();
    for (i = 0; i < n; i++)
        cr_lock_free(locks[i]);
    heap2 = heap_bytes();

    /* The quiet window: nothing but the watchdog. */
    if (cr_client_stats_get(client, &s0) != CR_OK)
        bench_die("stats");
    cpu0 = bench_cpu_s();
    t0 = bench_now_ns();
    bench_sleep_ns((int64_t)(periods * period_s * 1e9));
    t1 = bench_now_ns();
    cpu1 = bench_cpu_s();
    if (cr_client_stats_get(client, &s1) != CR_OK)
        bench_die("stats");
    heap3 = heap_bytes();
    alive = sample_pttls(rc, n, sample, &min_pttl);
    window = (double)(t1 - t0) / 1e9;

    bench_json_begin(&j, "s7_watchdog");
    bench_json_int(&j, "locks", (int64_t)n);
    bench_json_int(&j, "watchdog_ms", watchdog_ms);
    bench_json_num(&j, "period_s", period_s);
    bench_json_num(&j, "window_s", window);
    bench_json_num(&j, "acquire_rate", (double)n / ((double)(a1 - a0) / 1e9));
    bench_json_int(&j, "renewal_calls", (int64_t)(s1.renewal_calls - s0.renewal_calls));
    bench_json_int(&j, "renewals_sent", (int64_t)(s1.renewals_sent - s0.renewals_sent));
    bench_json_num(&j, "renewal_calls_per_period",
                   (double)(s1.renewal_calls - s0.renewal_calls) / (window / period_s));
    bench_json_num(&j, "renewals_per_lock_per_period",
                   (double)(s1.renewals_sent - s0.renewals_sent) / (double)n /
                   (window / period_s));
    bench_json_num(&j, "locks_per_call",
                   s1.renewal_calls > s0.renewal_calls
                       ? (double)(s1.renewals_sent - s0.renewals_sent) /
                         (double)(s1.renewal_calls - s0.renewal_calls) : 0);
    bench_json_int(&j, "renewal_failures", (int64_t)s1.renewal_failures);
    bench_json_int(&j, "leases_lost", (int64_t)s1.leases_lost);
    bench_json_num(&j, "cpu_pct", (cpu1 - cpu0) / window * 100.0);
    bench_json_num(&j, "cpu_ms_per_period", (cpu1 - cpu0) * 1e3 / (window / period_s));
    bench_json_num(&j, "bytes_per_lock_handles", (heap1 - heap0) / (double)n);
    bench_json_num(&j, "bytes_per_lock_holds", (heap2 - heap0) / (double)n);
    bench_json_num(&j, "bytes_per_lock_steady", (heap3 - heap0) / (double)n);
    bench_json_num(&j, "rss_per_lock", (rss1 - rss0) / (double)n);
    bench_json_int(&j, "pttl_sampled", (int64_t)sample);
    bench_json_int(&j, "pttl_alive", (int64_t)alive);
    bench_json_int(&j, "pttl_min", min_pttl);
    bench_json_end(&j);

    cr_client_free(client);
    delete_keys(rc, n);
    redisFree(rc);
    free(locks);
    free(qs);
    free(tids);
}

int
main(int argc, char **argv)
{
    bench_args a;
    char *list, *tok, *save = NULL;
    int64_t watchdog_ms;
    double periods;
    int threads;

    bench_args_parse(argc, argv, &a);
    list = strdup(bench_opt(&a, "--locks", "10000,100000"));
    watchdog_ms = atoll(bench_opt(&a, "--watchdog-ms", "3000"));
    periods = atof(bench_opt(&a, "--periods", "7"));
    threads = atoi(bench_opt(&a, "--threads", "4"));
    if (list == NULL || watchdog_ms < 3 || periods <= 0 || threads < 1)
        bench_die("bad options");
    for (tok = strtok_r(list, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        long long n = atoll(tok);

        if (n < 1)
            bench_die("bad --locks");
        run(a.url, (size_t)n, watchdog_ms, periods, threads);
    }
    free(list);
    free(a.rest);
    return 0;
}
