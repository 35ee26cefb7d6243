/* SPDX-License-Identifier: MIT */
/*
 * Scenario 10: the asynchronous API at load. One loop thread with
 * `requests` pending acquisitions over `locks` locks, every one released
 * once obtained, against the blocking API doing the same with one thread
 * per waiter. Prints: the rate of acquisitions, the bytes each pending
 * request takes, the library's thread CPU time per loop iteration and per
 * dispatch (one cr_async_io or cr_async_timeout call: p99, p99.9 and the
 * longest, in thread CPU time, so that preemption does not count), the
 * subscriber links the server saw, and exclusion (never two holders of
 * one lock at once, every request served).
 *
 *   bench_async --url URL --mode async|threads --requests N --locks L
 *               [--threads T]
 */
#include "config.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "credisson.h"
#include "../tests/integration/poll_loop.h"

typedef struct job {
    cr_async *async;
    cr_lock *lock;
    int index;      /* the lock's */
    int64_t owner;
    struct job *next_held;
} job;

/* Per lock: the requests holding it now. A grant is held until the end of
 * the loop iteration it arrived in (every other reply of that iteration is
 * read first), so that a second grant of the same lock meanwhile shows. */
static int *holders;
static job *held;
static int64_t done, violations, obtained;

static void
unlocked(void *userdata, cr_status rc, int64_t value)
{
    (void)userdata;
    (void)value;
    if (rc != CR_OK)
        bench_die("async unlock: %s", cr_strerror(rc));
    done++;
}

static void
locked(void *userdata, cr_status rc, int64_t value)
{
    job *j = userdata;

    (void)value;
    if (rc != CR_OK)
        bench_die("async lock: %s: %s", cr_strerror(rc), cr_last_error());
    obtained++;
    if (++holders[j->index] != 1)
        violations++;
    j->next_held = held;
    held = j;
}

static void
release_held(void)
{
    while (held != NULL) {
        job *j = held;

        held = j->next_held;
        holders[j->index]--;
        if (cr_async_unlock(j->async, j->lock, j->owner, unlocked, j, NULL) !=
            CR_OK)
            bench_die("cr_async_unlock: %s", cr_last_error());
    }
}

static int64_t
thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The subscriber connections of this client the server sees. */
static int64_t
pubsub_links(const char *url, cr_client *c)
{
    redisContext *r = bench_redis(url);
    redisReply *rep = bench_cmd(r, "CLIENT LIST TYPE pubsub");
    const char *p = rep->str;
    int64_t n = 0;

    while (p != NULL && (p = strstr(p, cr_client_id(c))) != NULL) {
        n++;
        p++;
    }
    freeReplyObject(rep);
    redisFree(r);
    return n;
}

static cr_client *
client_for(const char *url)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = url;
    o.pool_size = 8;
    if (cr_client_new(&o, &c) != CR_OK)
        bench_die("cr_client_new: %s", cr_last_error());
    return c;
}

/* What one pass over the requests measured. */
typedef struct pass {
    int64_t ns, iterations, cpu_ns, links;
    double bytes_per_pending;
    bench_samples dispatch;   /* thread CPU of each dispatch */
} pass;

/* Starts every request at once, then runs the loop until each was
 * obtained and released. */
static void
one_pass(const char *url, cr_client *c, cr_async *a, cr_lock **locks,
         job *jobs, int n, int nlocks, pass *out)
{
    struct mallinfo2 before, after;
    int64_t start;
    int i;

    done = obtained = 0;
    out->iterations = out->cpu_ns = 0;
    out->links = -1;
    bench_samples_init(&out->dispatch, 1u << 20, false);
    before = mallinfo2();
    start = bench_now_ns();
    for (i = 0; i < n; i++) {
        jobs[i] = (job){a, locks[i % nlocks], i % nlocks, cr_async_owner_id(), NULL};
        if (cr_async_lock(a, jobs[i].lock, jobs[i].owner, CR_WAIT_FOREVER,
                          30000, locked, &jobs[i], NULL) != CR_OK)
            bench_die("cr_async_lock: %s", cr_last_error());
    }
    after = mallinfo2();
    out->bytes_per_pending = (double)(after.uordblks - before.uordblks) / n;
    while (done < n) {
        struct pollfd p[64];
        int64_t timeout = -1, t0, d0;
        int k = poll_loop_prepare(a, p, 64, &timeout), m;

        poll(p, (nfds_t)k, (int)(timeout < 0 || timeout > 100 ? 100 : timeout));
        t0 = thread_cpu_ns();
        for (m = 0; m < k; m++) {
            if (p[m].revents == 0)
                continue;
            d0 = thread_cpu_ns();
            cr_async_io(a, p[m].fd, poll_loop_events(p[m].revents));
            bench_samples_add(&out->dispatch, thread_cpu_ns() - d0);
        }
        d0 = thread_cpu_ns();
        cr_async_timeout(a);
        bench_samples_add(&out->dispatch, thread_cpu_ns() - d0);
        release_held();
        out->cpu_ns += thread_cpu_ns() - t0;
        out->iterations++;
        if (out->links < 0 && obtained > n / 2)
            out->links = pubsub_links(url, c);
    }
    out->ns = bench_now_ns() - start;
    bench_samples_sort(&out->dispatch);
}

/* Two passes of the same load: the first warms the allocator up (the
 * first touch of the memory the rings and buffers grow into costs page
 * faults, a few milliseconds once), the second is the steady state the
 * figures come from; the first's longest dispatch is printed too. */
static void
run_async(const char *url, int n, int nlocks)
{
    cr_client *c = client_for(url);
    cr_lock **locks = calloc((size_t)nlocks, sizeof(*locks));
    job *jobs = calloc((size_t)n, sizeof(*jobs));
    cr_async *a = NULL;
    pass cold, warm;
    char name[32];
    bench_json j;
    int i;

    holders = calloc((size_t)nlocks, sizeof(*holders));
    if (locks == NULL || jobs == NULL || holders == NULL ||
        cr_async_new(c, &poll_loop, &a) != CR_OK)
        bench_die("setting up");
    for (i = 0; i < nlocks; i++) {
        snprintf(name, sizeof(name), "bench:async:%d", i);
        if (cr_lock_new(c, name, &locks[i]) != CR_OK)
            bench_die("cr_lock_new");
    }
    one_pass(url, c, a, locks, jobs, n, nlocks, &cold);
    one_pass(url, c, a, locks, jobs, n, nlocks, &warm);
    bench_json_begin(&j, "s10_async");
    bench_json_str(&j, "mode", "async");
    bench_json_int(&j, "requests", n);
    bench_json_int(&j, "locks", nlocks);
    bench_json_num(&j, "seconds", (double)warm.ns / 1e9);
    bench_json_num(&j, "rate", n / ((double)warm.ns / 1e9));
    bench_json_int(&j, "obtained", obtained);
    bench_json_int(&j, "violations", violations);
    bench_json_num(&j, "bytes_per_pending", warm.bytes_per_pending);
    bench_json_num(&j, "cpu_us_per_iteration",
                   warm.iterations > 0
                       ? (double)warm.cpu_ns / warm.iterations / 1000.0 : 0);
    bench_json_num(&j, "dispatch_p99_us", bench_pct(&warm.dispatch, 99) / 1000.0);
    bench_json_num(&j, "dispatch_p999_us",
                   bench_pct(&warm.dispatch, 99.9) / 1000.0);
    bench_json_num(&j, "dispatch_max_us", bench_pct(&warm.dispatch, 100) / 1000.0);
    bench_json_num(&j, "cold_dispatch_max_us",
                   bench_pct(&cold.dispatch, 100) / 1000.0);
    bench_json_int(&j, "iterations", warm.iterations);
    bench_json_int(&j, "pubsub_links", warm.links);
    bench_json_end(&j);
    cr_async_free(a);
    for (i = 0; i < nlocks; i++)
        cr_lock_free(locks[i]);
    free(cold.dispatch.v);
    free(warm.dispatch.v);
    free(locks);
    free(jobs);
    free(holders);
    cr_client_free(c);
}

/* ------------------------------------------------ one thread per waiter */

typedef struct worker {
    cr_lock *lock;
    int index;      /* the lock's */
    int rounds;
    pthread_t thread;
} worker;

static atomic_int_fast64_t t_done, t_violations;
static atomic_int *t_holders;   /* per lock, as `holders` */

static void *
worker_run(void *arg)
{
    worker *w = arg;
    int i;

    for (i = 0; i < w->rounds; i++) {
        if (cr_lock_lock(w->lock, 30000) != CR_OK)
            bench_die("cr_lock_lock: %s", cr_last_error());
        if (atomic_fetch_add(&t_holders[w->index], 1) != 0)
            atomic_fetch_add(&t_violations, 1);
        atomic_fetch_add(&t_done, 1);
        atomic_fetch_sub(&t_holders[w->index], 1);
        if (cr_lock_unlock(w->lock) != CR_OK)
            bench_die("cr_lock_unlock: %s", cr_last_error());
    }
    return NULL;
}

static void
run_threads(const char *url, int n, int nlocks, int nthreads)
{
    cr_client *c = client_for(url);
    cr_lock **locks = calloc((size_t)nlocks, sizeof(*locks));
    worker *w = calloc((size_t)nthreads, sizeof(*w));
    pthread_attr_t attr;
    int64_t start, end;
    char name[32];
    bench_json j;
    int i, started = 0;

    t_holders = calloc((size_t)nlocks, sizeof(*t_holders));
    if (locks == NULL || w == NULL || t_holders == NULL)
        bench_die("out of memory");
    for (i = 0; i < nlocks; i++) {
        snprintf(name, sizeof(name), "bench:async:%d", i);
        if (cr_lock_new(c, name, &locks[i]) != CR_OK)
            bench_die("cr_lock_new");
    }
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    start = bench_now_ns();
    for (i = 0; i < nthreads; i++) {
        w[i].lock = locks[i % nlocks];
        w[i].index = i % nlocks;
        w[i].rounds = n / nthreads + (i < n % nthreads ? 1 : 0);
        if (pthread_create(&w[i].thread, &attr, worker_run, &w[i]) == 0)
            started++;
        else
            break;
    }
    for (i = 0; i < started; i++)
        pthread_join(w[i].thread, NULL);
    end = bench_now_ns();
    bench_json_begin(&j, "s10_async");
    bench_json_str(&j, "mode", "threads");
    bench_json_int(&j, "requests", atomic_load(&t_done));
    bench_json_int(&j, "locks", nlocks);
    bench_json_int(&j, "threads", started);
    bench_json_num(&j, "seconds", (double)(end - start) / 1e9);
    bench_json_num(&j, "rate",
                   atomic_load(&t_done) / ((double)(end - start) / 1e9));
    bench_json_int(&j, "violations", atomic_load(&t_violations));
    bench_json_end(&j);
    for (i = 0; i < nlocks; i++)
        cr_lock_free(locks[i]);
    free(locks);
    free(w);
    free(t_holders);
    cr_client_free(c);
}

int
main(int argc, char **argv)
{
    bench_args a;
    const char *mode;
    int n, nlocks, nthreads;

    bench_args_parse(argc, argv, &a);
    mode = bench_opt(&a, "--mode", "async");
    n = atoi(bench_opt(&a, "--requests", "10000"));
    nlocks = atoi(bench_opt(&a, "--locks", "100"));
    nthreads = atoi(bench_opt(&a, "--threads", "1000"));
    if (n <= 0 || nlocks <= 0 || nthreads <= 0)
        bench_die("--requests, --locks and --threads take positive numbers");
    if (strcmp(mode, "threads") == 0)
        run_threads(a.url, n, nlocks, nthreads);
    else
        run_async(a.url, n, nlocks);
    return 0;
}
