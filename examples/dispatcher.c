/* SPDX-License-Identifier: MIT */
/*
 * A job dispatcher on a libuv loop, one thread, many jobs in flight: the
 * asynchronous API's demo.
 *
 *   dispatcher [--url URL] [--jobs N] [--resources R] [--slots K]
 *              [--dispatchers D] [--prefix P]
 *
 * Each job works on one of R resources: it takes the resource's lock
 * (P:resource:<r>, an RLock), then a permit of the semaphore P:slots (K
 * jobs at work at once across every dispatcher sharing it), works for a
 * few milliseconds (a timer stands for its I/O), gives the permit and the
 * lock back, and counts the latch P:done down. The latch is set to N x D
 * by whichever dispatcher comes first, so D dispatchers started at once
 * (on one host or several) all finish when the last job of any of them is
 * done. Nothing blocks: N jobs wait at once without N threads.
 *
 * Prints one line when done: the jobs run, the most at work at once in
 * this process, and any resource found taken twice (there should be none).
 * Exits 0 when every job ran and the latch opened.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <credisson.h>
#include <credisson/async_libuv.h>

#define WORK_MS 3

typedef struct job job;

typedef struct dispatcher {
    cr_async *async;
    cr_lock **locks;      /* one per resource */
    int *busy;            /* per resource: jobs inside in this process */
    cr_semaphore *slots;
    cr_latch *done;
    job *jobs;
    int njobs, finished, at_work, most, overlaps;
    cr_status failed;     /* the first failure, CR_OK while none */
} dispatcher;

struct job {
    dispatcher *d;
    int resource;
    int64_t owner;        /* the async owner id that holds the lock */
    uv_timer_t work;
};

static void job_locked(void *userdata, cr_status rc, int64_t value);
static void job_permitted(void *userdata, cr_status rc, int64_t value);
static void job_worked(uv_timer_t *t);
static void job_released(void *userdata, cr_status rc, int64_t value);
static void job_unlocked(void *userdata, cr_status rc, int64_t value);
static void job_counted(void *userdata, cr_status rc, int64_t value);

/* Records the first failure and stops the loop. */
static void
fail(dispatcher *d, const char *what, cr_status rc)
{
    if (d->failed == CR_OK) {
        fprintf(stderr, "dispatcher: %s: %s: %s\n", what, cr_strerror(rc),
                cr_last_error());
        d->failed = rc;
    }
    uv_stop(uv_default_loop());
}

/* A request that could not even start: its callback will not run. */
static void
check_started(dispatcher *d, const char *what, cr_status rc)
{
    if (rc != CR_OK)
        fail(d, what, rc);
}

static void
job_start(job *j)
{
    dispatcher *d = j->d;

    check_started(d, "lock", cr_async_lock(d->async, d->locks[j->resource],
                                           j->owner, CR_WAIT_FOREVER,
                                           CR_LEASE_WATCHDOG, job_locked, j,
                                           NULL));
}

static void
job_locked(void *userdata, cr_status rc, int64_t value)
{
    job *j = userdata;
    dispatcher *d = j->d;

    (void)value;
    if (rc != CR_OK) {
        fail(d, "lock", rc);
        return;
    }
    if (d->busy[j->resource]++ != 0)
        d->overlaps++;
    check_started(d, "acquire", cr_async_semaphore_acquire(
                                    d->async, d->slots, 1, CR_WAIT_FOREVER,
                                    job_permitted, j, NULL));
}

static void
job_permitted(void *userdata, cr_status rc, int64_t value)
{
    job *j = userdata;
    dispatcher *d = j->d;

    (void)value;
    if (rc != CR_OK) {
        fail(d, "acquire", rc);
        return;
    }
    if (++d->at_work > d->most)
        d->most = d->at_work;
    uv_timer_start(&j->work, job_worked, WORK_MS, 0);
}

static void
job_worked(uv_timer_t *t)
{
    job *j = t->data;
    dispatcher *d = j->d;

    d->at_work--;
    check_started(d, "release", cr_async_semaphore_release(
                                    d->async, d->slots, 1, job_released, j,
                                    NULL));
}

static void
job_released(void *userdata, cr_status rc, int64_t value)
{
    job *j = userdata;
    dispatcher *d = j->d;

    (void)value;
    if (rc != CR_OK) {
        fail(d, "release", rc);
        return;
    }
    d->busy[j->resource]--;
    check_started(d, "unlock", cr_async_unlock(d->async,
                                               d->locks[j->resource],
                                               j->owner, job_unlocked, j,
                                               NULL));
}

static void
job_unlocked(void *userdata, cr_status rc, int64_t value)
{
    job *j = userdata;
    dispatcher *d = j->d;

    (void)value;
    if (rc != CR_OK) {
        fail(d, "unlock", rc);
        return;
    }
    check_started(d, "count down", cr_async_latch_count_down(
                                       d->async, d->done, job_counted, j,
                                       NULL));
}

static void
job_counted(void *userdata, cr_status rc, int64_t value)
{
    job *j = userdata;

    (void)value;
    if (rc != CR_OK)
        fail(j->d, "count down", rc);
    else
        j->d->finished++;
}

/* Every dispatcher's jobs are done. */
static void
all_done(void *userdata, cr_status rc, int64_t value)
{
    dispatcher *d = userdata;

    (void)value;
    if (rc != CR_OK)
        fail(d, "await", rc);
    uv_stop(uv_default_loop());
}

/* The latch is set (by this dispatcher or another): start the jobs. */
static void
latch_set(void *userdata, cr_status rc, int64_t value)
{
    dispatcher *d = userdata;
    int i;

    (void)value;
    if (rc != CR_OK) {
        fail(d, "set the latch", rc);
        return;
    }
    for (i = 0; i < d->njobs && d->failed == CR_OK; i++)
        job_start(&d->jobs[i]);
    check_started(d, "await", cr_async_latch_await(d->async, d->done,
                                                   CR_WAIT_FOREVER, all_done,
                                                   d, NULL));
}

static const char *
opt(int argc, char **argv, const char *name, const char *dflt)
{
    int i;

    for (i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return dflt;
}

int
main(int argc, char **argv)
{
    const char *prefix = opt(argc, argv, "--prefix", "dispatch");
    int njobs = atoi(opt(argc, argv, "--jobs", "2000"));
    int nres = atoi(opt(argc, argv, "--resources", "20"));
    int slots = atoi(opt(argc, argv, "--slots", "8"));
    int ndisp = atoi(opt(argc, argv, "--dispatchers", "1"));
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    dispatcher d = {0};
    cr_client *client = NULL;
    cr_libuv *u = NULL;
    char name[256];
    cr_status rc;
    int i;

    o.url = opt(argc, argv, "--url", getenv("CREDISSON_URL"));
    if (o.url == NULL)
        o.url = "redis://127.0.0.1:6379";
    if (njobs <= 0 || nres <= 0 || slots <= 0 || ndisp <= 0) {
        fprintf(stderr, "dispatcher: --jobs, --resources, --slots and "
                        "--dispatchers take positive numbers\n");
        return 64;
    }
    if ((rc = cr_client_new(&o, &client)) != CR_OK) {
        fprintf(stderr, "dispatcher: connect: %s\n", cr_last_error());
        return 1;
    }
    d.njobs = njobs;
    d.locks = calloc((size_t)nres, sizeof(*d.locks));
    d.busy = calloc((size_t)nres, sizeof(*d.busy));
    d.jobs = calloc((size_t)njobs, sizeof(*d.jobs));
    if (d.locks == NULL || d.busy == NULL || d.jobs == NULL) {
        fprintf(stderr, "dispatcher: out of memory\n");
        return 1;
    }
    for (i = 0; i < nres; i++) {
        snprintf(name, sizeof(name), "%s:resource:%d", prefix, i);
        if (cr_lock_new(client, name, &d.locks[i]) != CR_OK)
            return 1;
    }
    snprintf(name, sizeof(name), "%s:slots", prefix);
    if (cr_semaphore_new(client, name, &d.slots) != CR_OK)
        return 1;
    /* Blocking calls before the loop runs are fine: set the permits once
     * (the first dispatcher to get here does). */
    if ((rc = cr_semaphore_try_set_permits(d.slots, slots, 0, NULL)) != CR_OK) {
        fprintf(stderr, "dispatcher: set permits: %s\n", cr_last_error());
        return 1;
    }
    snprintf(name, sizeof(name), "%s:done", prefix);
    if (cr_latch_new(client, name, &d.done) != CR_OK ||
        cr_libuv_new(client, uv_default_loop(), &u) != CR_OK) {
        fprintf(stderr, "dispatcher: %s\n", cr_last_error());
        return 1;
    }
    d.async = cr_libuv_async(u);
    for (i = 0; i < njobs; i++) {
        d.jobs[i].d = &d;
        d.jobs[i].resource = i % nres;
        d.jobs[i].owner = cr_async_owner_id();
        uv_timer_init(uv_default_loop(), &d.jobs[i].work);
        d.jobs[i].work.data = &d.jobs[i];
    }
    /* Set to N x D unless another dispatcher did first (value 0 then). */
    check_started(&d, "set the latch", cr_async_latch_try_set_count(
                                           d.async, d.done,
                                           (int64_t)njobs * ndisp, 600000,
                                           latch_set, &d, NULL));
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);

    printf("dispatcher: %d of %d jobs done on %d resources, at most %d at "
           "work at once (%d slots), %d resources taken twice%s\n",
           d.finished, njobs, nres, d.most, slots, d.overlaps,
           d.failed == CR_OK ? "" : "; failed");
    cr_libuv_free(u); /* pending requests end with CR_ECLOSED */
    for (i = 0; i < njobs; i++)
        uv_close((uv_handle_t *)&d.jobs[i].work, NULL);
    uv_run(uv_default_loop(), UV_RUN_DEFAULT); /* the handles close */
    uv_loop_close(uv_default_loop());
    for (i = 0; i < nres; i++)
        cr_lock_free(d.locks[i]);
    cr_semaphore_free(d.slots);
    cr_latch_free(d.done);
    cr_client_free(client);
    free(d.locks);
    free(d.busy);
    free(d.jobs);
    return d.failed == CR_OK && d.finished == njobs && d.overlaps == 0 &&
                   d.most <= slots
               ? 0
               : 1;
}
