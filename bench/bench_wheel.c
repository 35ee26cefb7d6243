/* SPDX-License-Identifier: MIT */
/*
 * Scenario 8: the timing wheel alone (src/timer_wheel.h), no Redis.
 *
 *   bench_wheel [--timers N] [--repeat R]
 *
 * N timers (1,000,000 by default) on a wheel shaped like the watchdog's at
 * the default 30 s lease (100 ms ticks, 512 buckets), with deadlines spread
 * over one renewal period (10 s) and a tenth of them beyond one revolution
 * (so they carry rounds). Measures, per timer: schedule, reschedule (move),
 * cancel in random order, fire (advancing tick by tick, as the watchdog
 * does) and fire after one jump over every deadline (a stalled thread). The
 * ceiling, timed in the same run on the same memory, is the least any
 * bucketed intrusive timer list can do: append N nodes to 512 circular
 * lists and unlink them in the same random order. Each figure is the median
 * of R repetitions and is printed with its ratio to the ceiling.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "timer_wheel.h"

#define TICK_MS 100
#define BUCKETS 512
#define PERIOD_MS 10000

/* The ceiling's node: the same two links as a cr__timer. */
typedef struct node {
    struct node *prev, *next;
} node;

/* A small fast generator (xorshift64*), so the benchmark needs no libc
 * randomness inside timed loops. */
static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* Wheel callback: count the timers fired. */
static void
on_fire(void *userdata, cr__timer *t)
{
    (void)t;
    (*(size_t *)userdata)++;
}

/* qsort comparison of two doubles. */
static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* The median of `v[0..n)` (sorts v). */
static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

int
main(int argc, char **argv)
{
    bench_args a;
    size_t n, i, *order;
    int repeat, r;
    int64_t *deadline, *moved;
    cr__timer *timers;
    node *nodes, *heads;
    double *sched, *resched, *cancel, *fire, *jump, *c_add, *c_del;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    bench_json j;

    bench_args_parse(argc, argv, &a);
    n = (size_t)atoll(bench_opt(&a, "--timers", "1000000"));
    repeat = atoi(bench_opt(&a, "--repeat", "3"));
    if (n < 1 || repeat < 1)
        bench_die("--timers and --repeat must be positive");
    timers = calloc(n, sizeof(*timers));
    nodes = calloc(n, sizeof(*nodes));
    heads = calloc(BUCKETS, sizeof(*heads));
    deadline = calloc(n, sizeof(*deadline));
    moved = calloc(n, sizeof(*moved));
    order = calloc(n, sizeof(*order));
    sched = calloc((size_t)repeat, sizeof(double));
    resched = calloc((size_t)repeat, sizeof(double));
    cancel = calloc((size_t)repeat, sizeof(double));
    fire = calloc((size_t)repeat, sizeof(double));
    jump = calloc((size_t)repeat, sizeof(double));
    c_add = calloc((size_t)repeat, sizeof(double));
    c_del = calloc((size_t)repeat, sizeof(double));
    if (timers == NULL || nodes == NULL || heads == NULL || deadline == NULL ||
        moved == NULL || order == NULL || sched == NULL || resched == NULL ||
        cancel == NULL || fire == NULL || jump == NULL || c_add == NULL || c_del == NULL)
        bench_die("out of memory");
    /* Deadlines: 90 % within one period, 10 % up to two revolutions out. */
    for (i = 0; i < n; i++) {
        uint64_t x = rnd(&seed);

        deadline[i] = 1 + (int64_t)(x % 10 == 0 ? x / 10 % (2 * BUCKETS * TICK_MS)
                                                : x / 10 % PERIOD_MS);
        moved[i] = deadline[i] + PERIOD_MS;
        order[i] = i;
    }
    for (i = n - 1; i > 0; i--) {
        size_t k = (size_t)(rnd(&seed) % (i + 1)), t = order[i];

        order[i] = order[k];
        order[k] = t;
    }
    for (r = 0; r < repeat; r++) {
        cr__wheel *w = NULL;
        size_t fired = 0;
        int64_t t0, t1, now;

        if (cr__wheel_new(TICK_MS, BUCKETS, 0, &w) != CR_OK)
            bench_die("cr__wheel_new failed");
        for (i = 0; i < n; i++)
            cr__timer_init(&timers[i], NULL);
        t0 = bench_now_ns();
        for (i = 0; i < n; i++)
            cr__wheel_schedule(w, &timers[i], deadline[i]);
        t1 = bench_now_ns();
        sched[r] = (double)(t1 - t0) / (double)n;
        t0 = bench_now_ns();
        for (i = 0; i < n; i++)
            cr__wheel_schedule(w, &timers[order[i]], moved[order[i]]);
        t1 = bench_now_ns();
        resched[r] = (double)(t1 - t0) / (double)n;
        t0 = bench_now_ns();
        for (i = 0; i < n; i++)
            cr__wheel_cancel(w, &timers[order[i]]);
        t1 = bench_now_ns();
        cancel[r] = (double)(t1 - t0) / (double)n;
        if (cr__wheel_count(w) != 0)
            bench_die("timers left after cancelling all");
        for (i = 0; i < n; i++)
            cr__wheel_schedule(w, &timers[i], deadline[i]);
        t0 = bench_now_ns();
        for (now = TICK_MS; now <= 2 * BUCKETS * TICK_MS; now += TICK_MS)
            cr__wheel_advance(w, now, on_fire, &fired);
        t1 = bench_now_ns();
        if (fired != n)
            bench_die("fired %zu of %zu timers", fired, n);
        fire[r] = (double)(t1 - t0) / (double)n;
        /* Again, with one jump over every deadline (a stalled thread). */
        for (i = 0; i < n; i++)
            cr__wheel_schedule(w, &timers[i], now + deadline[i]);
        fired = 0;
        t0 = bench_now_ns();
        cr__wheel_advance(w, now + 4 * BUCKETS * TICK_MS, on_fire, &fired);
        t1 = bench_now_ns();
        if (fired != n)
            bench_die("jump fired %zu of %zu timers", fired, n);
        jump[r] = (double)(t1 - t0) / (double)n;
        cr__wheel_free(w);

        /* The ceiling: the same links, no wheel. */
        for (i = 0; i < BUCKETS; i++)
            heads[i].prev = heads[i].next = &heads[i];
        t0 = bench_now_ns();
        for (i = 0; i < n; i++) {
            node *h = &heads[(deadline[i] / TICK_MS) & (BUCKETS - 1)];
            node *x = &nodes[i];

            x->prev = h->prev;
            x->next = h;
            h->prev->next = x;
            h->prev = x;
        }
        t1 = bench_now_ns();
        c_add[r] = (double)(t1 - t0) / (double)n;
        t0 = bench_now_ns();
        for (i = 0; i < n; i++) {
            node *x = &nodes[order[i]];

            x->prev->next = x->next;
            x->next->prev = x->prev;
            x->prev = x->next = NULL;
        }
        t1 = bench_now_ns();
        c_del[r] = (double)(t1 - t0) / (double)n;
    }

    bench_json_begin(&j, "s8_wheel");
    bench_json_int(&j, "timers", (int64_t)n);
    bench_json_int(&j, "repeat", repeat);
    {
        double s = median(sched, repeat), m = median(resched, repeat);
        double c = median(cancel, repeat), f = median(fire, repeat);
        double ca = median(c_add, repeat), cd = median(c_del, repeat);

        bench_json_num(&j, "schedule_ns", s);
        bench_json_num(&j, "reschedule_ns", m);
        bench_json_num(&j, "cancel_ns", c);
        bench_json_num(&j, "fire_ns", f);
        bench_json_num(&j, "jump_fire_ns", median(jump, repeat));
        bench_json_num(&j, "ceiling_append_ns", ca);
        bench_json_num(&j, "ceiling_unlink_ns", cd);
        bench_json_num(&j, "schedule_ratio", ca / s);
        bench_json_num(&j, "cancel_ratio", cd / c);
        bench_json_num(&j, "schedules_per_s", 1e9 / s);
        bench_json_num(&j, "cancels_per_s", 1e9 / c);
    }
    bench_json_end(&j);
    free(timers);
    free(nodes);
    free(heads);
    free(deadline);
    free(moved);
    free(order);
    free(sched);
    free(resched);
    free(cancel);
    free(fire);
    free(jump);
    free(c_add);
    free(c_del);
    free(a.rest);
    return 0;
}
