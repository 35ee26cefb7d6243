/* SPDX-License-Identifier: MIT */
/*
 * Exporting credisson's events (cr_event(3)) as Prometheus metrics: a hook
 * that folds each event into histograms of wait and hold times (fixed
 * buckets) and counters of waits that ran out, lost leases, failed
 * renewals, reconnects, failovers and redirects, kept per object kind and
 * per label. Object names are mapped to a bounded set of labels first:
 * "order:12345" becomes "order" (what comes before the first ':'), and
 * once MAX_LABELS labels are in use, new ones become "other", so that a
 * stream of distinct names cannot explode the number of series.
 *
 *   metrics [--url REDIS_URL]
 *
 * It takes a few locks, a semaphore and a latch against that Redis, then
 * prints the exposition (text format 0.0.4) to stdout, as a /metrics
 * endpoint would serve it. A real exporter would serve render() over HTTP
 * from its own thread; the hook itself only counts, under a short mutex,
 * as it must not block (it runs on library threads too).
 */
/* POSIX.1-2008 (pthread mutexes, nanosleep): the examples build with
 * -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <credisson.h>

#define MAX_LABELS 16
#define LABEL_MAX 32
#define NBUCKETS 10

/* Bucket bounds in seconds; the +Inf bucket is the count. */
static const double bounds[NBUCKETS] = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30,
};

typedef struct histogram {
    uint64_t buckets[NBUCKETS]; /* not cumulative; summed when rendered */
    uint64_t count;
    double sum;                 /* seconds */
} histogram;

/* One series set: an object kind and a label. */
typedef struct series {
    char object[LABEL_MAX];
    char label[LABEL_MAX];
    histogram wait, hold;
    uint64_t busy, lost;
} series;

typedef struct metrics {
    pthread_mutex_t mu;
    series s[MAX_LABELS + 1]; /* the last one for "other" */
    size_t n;
    uint64_t reconnects, renewal_failures, failovers, redirects;
} metrics;

/* A name's label: what comes before the first ':', or the whole name;
 * characters other than [A-Za-z0-9_-] become '_' so the label needs no
 * escaping. Replace this with a function of your own (a table of known
 * prefixes, say) if names are shaped otherwise. */
static void
label_of(const char *name, char *out, size_t size)
{
    size_t i;

    for (i = 0; name[i] != '\0' && name[i] != ':' && i + 1 < size; i++) {
        char ch = name[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';

        out[i] = ok ? ch : '_';
    }
    out[i] = '\0';
}

/* The series of (object, label), made when there is room, else the
 * shared "other" one. m->mu held. */
static series *
series_of(metrics *m, const char *object, const char *label)
{
    series *s;
    size_t i;

    for (i = 0; i < m->n; i++)
        if (strcmp(m->s[i].object, object) == 0 &&
            strcmp(m->s[i].label, label) == 0)
            return &m->s[i];
    if (m->n < MAX_LABELS) {
        s = &m->s[m->n++];
    } else {
        s = &m->s[MAX_LABELS];
        object = "other";
        label = "other";
    }
    snprintf(s->object, sizeof(s->object), "%s", object);
    snprintf(s->label, sizeof(s->label), "%s", label);
    return s;
}

static void
observe(histogram *h, int64_t ms)
{
    double sec = (double)ms / 1000.0;
    int i;

    for (i = 0; i < NBUCKETS && sec > bounds[i]; i++)
        ;
    if (i < NBUCKETS)
        h->buckets[i]++;
    h->count++;
    h->sum += sec;
}

/* The hook: counts and returns, never blocks for long nor calls into the
 * library. */
static void
on_event(void *userdata, const cr_event *ev)
{
    metrics *m = userdata;
    char label[LABEL_MAX];
    series *s = NULL;

    pthread_mutex_lock(&m->mu);
    if (ev->name != NULL && ev->object != NULL) {
        label_of(ev->name, label, sizeof(label));
        s = series_of(m, ev->object, label);
    }
    switch (ev->kind) {
    case CR_EVENT_ACQUIRED:
        if (s != NULL && ev->wait_ms >= 0)
            observe(&s->wait, ev->wait_ms);
        break;
    case CR_EVENT_RELEASED:
        if (s != NULL && ev->hold_ms >= 0)
            observe(&s->hold, ev->hold_ms);
        break;
    case CR_EVENT_BUSY:
        if (s != NULL) {
            s->busy++;
            observe(&s->wait, ev->wait_ms);
        }
        break;
    case CR_EVENT_LEASE_LOST:
        if (s != NULL)
            s->lost++;
        break;
    case CR_EVENT_RENEWAL_FAILED:
        m->renewal_failures++;
        break;
    case CR_EVENT_RECONNECT:
        m->reconnects++;
        break;
    case CR_EVENT_FAILOVER:
        m->failovers++;
        break;
    case CR_EVENT_REDIRECT:
        m->redirects++;
        break;
    }
    pthread_mutex_unlock(&m->mu);
}

/* Prints one histogram's series. */
static void
render_histogram(FILE *f, const char *metric, const series *s,
                 const histogram *h)
{
    uint64_t cum = 0;
    int i;

    for (i = 0; i < NBUCKETS; i++) {
        cum += h->buckets[i];
        fprintf(f, "%s_bucket{object=\"%s\",name=\"%s\",le=\"%g\"} %" PRIu64
                "\n", metric, s->object, s->label, bounds[i], cum);
    }
    fprintf(f, "%s_bucket{object=\"%s\",name=\"%s\",le=\"+Inf\"} %" PRIu64
            "\n", metric, s->object, s->label, h->count);
    fprintf(f, "%s_sum{object=\"%s\",name=\"%s\"} %.6f\n", metric, s->object,
            s->label, h->sum);
    fprintf(f, "%s_count{object=\"%s\",name=\"%s\"} %" PRIu64 "\n", metric,
            s->object, s->label, h->count);
}

/* The exposition, in the Prometheus text format. */
static void
render(metrics *m, FILE *f)
{
    size_t i, n;

    pthread_mutex_lock(&m->mu);
    n = m->n;
    fprintf(f, "# HELP credisson_wait_seconds Time waited to acquire, "
            "acquired or not.\n# TYPE credisson_wait_seconds histogram\n");
    for (i = 0; i < n; i++)
        render_histogram(f, "credisson_wait_seconds", &m->s[i], &m->s[i].wait);
    fprintf(f, "# HELP credisson_hold_seconds Time a lock was held.\n"
            "# TYPE credisson_hold_seconds histogram\n");
    for (i = 0; i < n; i++)
        render_histogram(f, "credisson_hold_seconds", &m->s[i], &m->s[i].hold);
    fprintf(f, "# HELP credisson_busy_total Waits that ran out.\n"
            "# TYPE credisson_busy_total counter\n");
    for (i = 0; i < n; i++)
        fprintf(f, "credisson_busy_total{object=\"%s\",name=\"%s\"} %" PRIu64
                "\n", m->s[i].object, m->s[i].label, m->s[i].busy);
    fprintf(f, "# HELP credisson_leases_lost_total Holds found gone.\n"
            "# TYPE credisson_leases_lost_total counter\n");
    for (i = 0; i < n; i++)
        fprintf(f, "credisson_leases_lost_total{object=\"%s\",name=\"%s\"} "
                "%" PRIu64 "\n", m->s[i].object, m->s[i].label, m->s[i].lost);
    fprintf(f, "# HELP credisson_reconnects_total Connections opened again.\n"
            "# TYPE credisson_reconnects_total counter\n"
            "credisson_reconnects_total %" PRIu64 "\n", m->reconnects);
    fprintf(f, "# HELP credisson_renewal_failures_total Watchdog renewal "
            "calls that failed.\n"
            "# TYPE credisson_renewal_failures_total counter\n"
            "credisson_renewal_failures_total %" PRIu64 "\n",
            m->renewal_failures);
    fprintf(f, "# HELP credisson_failovers_total Sentinel master switches.\n"
            "# TYPE credisson_failovers_total counter\n"
            "credisson_failovers_total %" PRIu64 "\n", m->failovers);
    fprintf(f, "# HELP credisson_redirects_total Cluster MOVED/ASK "
            "followed.\n# TYPE credisson_redirects_total counter\n"
            "credisson_redirects_total %" PRIu64 "\n", m->redirects);
    pthread_mutex_unlock(&m->mu);
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Exits with a message when rc is not what was expected. */
static void
check(cr_status rc, cr_status want, const char *what)
{
    if (rc != want) {
        fprintf(stderr, "metrics: %s: %s (%s)\n", what, cr_strerror(rc),
                cr_last_error());
        exit(1);
    }
}

/* A short run: locks named order:<n> (one label between them), a
 * semaphore with one permit taken twice (the second try is busy), and a
 * latch opened by its count down. */
static void
run(cr_client *client)
{
    cr_semaphore *sem;
    cr_latch *latch;
    bool set;
    int i;

    for (i = 0; i < 5; i++) {
        char name[32];
        cr_lock *l;

        snprintf(name, sizeof(name), "order:%d", 12340 + i);
        check(cr_lock_new(client, name, &l), CR_OK, "cr_lock_new");
        check(cr_lock_try_lock(l, 1000, 10000), CR_OK, "try_lock");
        sleep_ms(5 * (i + 1));
        check(cr_lock_unlock(l), CR_OK, "unlock");
        cr_lock_free(l);
    }
    check(cr_semaphore_new(client, "pool:db", &sem), CR_OK, "semaphore");
    check(cr_semaphore_try_set_permits(sem, 1, 60000, &set), CR_OK,
          "set permits");
    check(cr_semaphore_try_acquire(sem, 1, 1000), CR_OK, "acquire");
    check(cr_semaphore_try_acquire(sem, 1, 0), CR_BUSY, "second acquire");
    check(cr_semaphore_release(sem, 1), CR_OK, "release");
    check(cr_semaphore_delete(sem, &set), CR_OK, "delete semaphore");
    cr_semaphore_free(sem);
    check(cr_latch_new(client, "deploy:web", &latch), CR_OK, "latch");
    check(cr_latch_try_set_count(latch, 1, 60000, &set), CR_OK, "set count");
    check(cr_latch_count_down(latch), CR_OK, "count down");
    check(cr_latch_await(latch, 1000), CR_OK, "await");
    cr_latch_free(latch);
}

int
main(int argc, char **argv)
{
    cr_client_options opts = CR_CLIENT_OPTIONS_INIT;
    static metrics m = {.mu = PTHREAD_MUTEX_INITIALIZER};
    cr_client *client;
    cr_status rc;
    int i;

    opts.url = "redis://127.0.0.1:6379";
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) {
            opts.url = argv[++i];
        } else {
            fprintf(stderr, "usage: metrics [--url REDIS_URL]\n");
            return 2;
        }
    }
    opts.event_fn = on_event;
    opts.event_userdata = &m;
    if ((rc = cr_client_new(&opts, &client)) != CR_OK) {
        fprintf(stderr, "metrics: cannot connect to %s: %s (%s)\n", opts.url,
                cr_strerror(rc), cr_last_error());
        return 1;
    }
    run(client);
    cr_client_free(client);
    render(&m, stdout);
    return 0;
}
