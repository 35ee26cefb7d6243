/* SPDX-License-Identifier: MIT */
/*
 * MultiLock and RedLock: the class of cr_lock (lock.h) whose acquisition and
 * release act on its sub-locks, each through the public lock calls.
 *
 * An attempt asks every sub-lock at once, one thread each, with the same
 * owner thread id and lease, and a wait of the remaining budget (MultiLock)
 * or a 1/n share of it (RedLock, as Redisson's lockWaitTime). It succeeds
 * when enough sub-locks were taken and, with an explicit lease, validity
 * remains; otherwise everything taken is released and, while the budget
 * lasts, the attempt is repeated after a short random pause so that two
 * contenders holding each other's sub-locks do not meet again in step.
 *
 * Events (cr_event): the multilock reports one acquisition (the time
 * waited in all its attempts), one wait that ran out and one release (the
 * time since this handle first took it for that owner) as a whole, to
 * the hook of its first sub-lock's client, as object "multilock" or
 * "redlock" and named by its sub-locks' names joined by ','. What its
 * sub-locks do on its behalf (each attempt's acquisitions, waits and
 * give-backs) is not reported: their jobs run with an event sink set.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "credisson/multilock.h"
#include "lock.h"

#define MAX_LOCKS 64
/* lock() without a wait retries attempts of this much per sub-lock, as
 * Redisson's base wait of n x 1500 ms. */
#define FOREVER_ATTEMPT_MS_PER_LOCK 1500

/* Room for the name events show: sub-lock names joined by ','. */
#define EV_NAME_MAX 128

/* An owner's holds of the multilock through this handle, kept when the
 * client has an event hook: for the time held its release reports. */
typedef struct holder {
    int64_t tid;
    int64_t count;
    int64_t since;             /* monotonic ms of its first acquisition */
    int64_t until;             /* monotonic ms its lease ends; -1: none */
} holder;

typedef struct multi {
    cr_lock **locks;
    size_t n;
    size_t needed;              /* n for MultiLock, n/2 + 1 for RedLock */
    bool redlock;
    atomic_int_fast64_t valid_until; /* monotonic ms; -1 watchdog; 0 never */
    char ev_name[EV_NAME_MAX];
    pthread_mutex_t mu;         /* guards holders */
    holder *holders;
    size_t nholders, capholders;
} multi;

/* One sub-lock's share of an attempt or an unlock, run on its own thread. */
typedef struct job {
    cr_lock *lock;
    int64_t tid;
    int64_t wait_ms;
    int64_t lease_ms;
    bool unlock;
    cr_status rc;
    char err[256];
    pthread_t thread;
} job;

/* Runs one job and keeps the thread's error detail with it. */
static void *
run_job(void *arg)
{
    job *j = arg;
    cr__event_sink quiet;

    if (j->unlock)
        j->rc = cr__lock_unlock(j->lock, &quiet, j->tid);
    else
        j->rc = cr__lock_try_lock(j->lock, &quiet, j->tid, j->wait_ms,
                                  j->lease_ms, NULL);
    snprintf(j->err, sizeof(j->err), "%s", j->rc == CR_OK ? "" : cr_last_error());
    return NULL;
}

/* Runs the n jobs in parallel (inline when a thread cannot be started). */
static void
run_jobs(job *jobs, size_t n)
{
    bool started[MAX_LOCKS];
    size_t i;

    for (i = 0; i < n; i++) {
        started[i] = n > 1 &&
                     pthread_create(&jobs[i].thread, NULL, run_job, &jobs[i]) == 0;
        if (!started[i])
            run_job(&jobs[i]);
    }
    for (i = 0; i < n; i++)
        if (started[i])
            pthread_join(jobs[i].thread, NULL);
}

/* Releases, in parallel, every sub-lock whose job acquired it. */
static void
release_taken(const job *jobs, size_t n)
{
    job todo[MAX_LOCKS];
    size_t i, k = 0;

    for (i = 0; i < n; i++) {
        if (jobs[i].rc != CR_OK)
            continue;
        todo[k] = jobs[i];
        todo[k].unlock = true;
        k++;
    }
    run_jobs(todo, k);
}

/* The Redlock algorithm's clock-drift allowance for a lease. */
static int64_t
drift(int64_t lease_ms)
{
    return lease_ms / 100 + 2;
}

/* Sleeps a random 5..50 ms, bounded by `deadline` (monotonic ms, -1: none). */
static void
pause_before_retry(int64_t deadline)
{
    unsigned char r = 0;
    int64_t ms;
    struct timespec ts;

    cr__random_bytes(&r, 1);
    ms = 5 + r % 46;
    if (deadline >= 0 && deadline - cr__now_ms() < ms)
        ms = deadline - cr__now_ms();
    if (ms <= 0)
        return;
    ts.tv_sec = 0;
    ts.tv_nsec = (long)ms * 1000000;
    nanosleep(&ts, NULL);
}

/* The holder entry of `tid`, added with count 0 when `add`; NULL when
 * there is none (or no memory). m->mu held. */
static holder *
holder_of(multi *m, int64_t tid, bool add)
{
    size_t i;

    for (i = 0; i < m->nholders; i++)
        if (m->holders[i].tid == tid)
            return &m->holders[i];
    if (!add)
        return NULL;
    if (m->nholders == m->capholders) {
        size_t cap = m->capholders ? 2 * m->capholders : 4;
        holder *h = realloc(m->holders, cap * sizeof(*h));

        if (h == NULL)
            return NULL;
        m->holders = h;
        m->capholders = cap;
    }
    m->holders[m->nholders] = (holder){.tid = tid, .count = 0,
                                       .since = cr__now_ms()};
    return &m->holders[m->nholders++];
}

/* An acquisition by `tid` that began at `start`, with a lease ending at
 * `until` (-1: none): counted for its release, and reported. Holds whose
 * lease ended are forgotten first: their release is never reported. */
static cr_status
acquired(const cr__op *op, cr_lock *l, int64_t tid, int64_t start,
         int64_t until)
{
    multi *m = l->impl;
    int64_t now = cr__now_ms();
    holder *h;

    if (!cr__hooked(&l->client->run.stats))
        return CR_OK;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->nholders;)
        if (m->holders[i].until >= 0 && m->holders[i].until <= now)
            m->holders[i] = m->holders[--m->nholders];
        else
            i++;
    if ((h = holder_of(m, tid, true)) != NULL) {
        h->count++;
        h->until = until;
    }
    pthread_mutex_unlock(&m->mu);
    cr__op_event(op, CR_EVENT_ACQUIRED, CR_OK, l->label, m->ev_name,
                 cr__now_ms() - start, -1, false);
    return CR_OK;
}

/* An unlock by `tid` that ended with `rc`: after CR_OK one hold fewer,
 * the last one reported released; after CR_ENOTOWNER or CR_ELOST (the hold
 * was not there any more) none is left, and nothing is reported; after any
 * other failure the holds stay counted (the unlock may be tried again).
 * Holds not taken through this handle are not reported. */
static void
released(const cr__op *op, cr_lock *l, int64_t tid, cr_status rc)
{
    multi *m = l->impl;
    int64_t held = -1;
    holder *h;

    if (!cr__hooked(&l->client->run.stats))
        return;
    pthread_mutex_lock(&m->mu);
    if ((h = holder_of(m, tid, false)) != NULL &&
        (rc == CR_ENOTOWNER || rc == CR_ELOST ||
         (rc == CR_OK && --h->count <= 0))) {
        held = cr__now_ms() - h->since;
        *h = m->holders[--m->nholders];
    }
    pthread_mutex_unlock(&m->mu);
    if (rc == CR_OK && held >= 0)
        cr__op_event(op, CR_EVENT_RELEASED, CR_OK, l->label, m->ev_name, -1,
                     held, false);
}

/* The class's acquire: see the file comment. */
static cr_status
multi_acquire(cr__op *op, cr_lock *l, int64_t tid, int64_t wait_ms,
              int64_t lease_ms, int64_t *token)
{
    multi *m = l->impl;
    int64_t start = cr__now_ms();
    int64_t deadline = wait_ms < 0 ? -1 : start + wait_ms;
    job jobs[MAX_LOCKS];
    cr_status failure = CR_BUSY;
    size_t i;

    if (token != NULL)
        *token = 0;
    for (;;) {
        int64_t now = cr__now_ms(), remain, share, taken = 0, t0 = now;

        remain = deadline < 0 ? (int64_t)m->n * FOREVER_ATTEMPT_MS_PER_LOCK
                              : deadline - now;
        if (remain < 0)
            remain = 0;
        share = m->redlock && remain > 0 ? remain / (int64_t)m->n : remain;
        if (remain > 0 && share < 1)
            share = 1;
        memset(jobs, 0, m->n * sizeof(*jobs));
        for (i = 0; i < m->n; i++) {
            jobs[i].lock = m->locks[i];
            jobs[i].tid = tid;
            jobs[i].wait_ms = share;
            jobs[i].lease_ms = lease_ms;
        }
        run_jobs(jobs, m->n);
        for (i = 0; i < m->n; i++) {
            if (jobs[i].rc == CR_OK)
                taken++;
            else if (jobs[i].rc != CR_BUSY && failure == CR_BUSY)
                failure = cr__fail(jobs[i].rc, "%s: %s", cr_lock_name(jobs[i].lock),
                                   jobs[i].err);
        }
        if ((size_t)taken >= m->needed) {
            if (lease_ms < 0) {
                atomic_store(&m->valid_until, -1);
                return acquired(op, l, tid, start, -1);
            }
            now = cr__now_ms();
            if (lease_ms - (now - t0) - drift(lease_ms) > 0) {
                atomic_store(&m->valid_until, t0 + lease_ms - drift(lease_ms));
                return acquired(op, l, tid, start, t0 + lease_ms);
            }
            failure = cr__fail(CR_BUSY, "acquired too late: no validity left "
                               "of a %lld ms lease", (long long)lease_ms);
        }
        release_taken(jobs, m->n);
        if (wait_ms == 0 || (deadline >= 0 && cr__now_ms() >= deadline))
            break;
        pause_before_retry(deadline);
    }
    /* Hard errors are reported only when nothing was merely busy. */
    for (i = 0; i < m->n; i++)
        if (jobs[i].rc == CR_BUSY) {
            failure = cr__fail(CR_BUSY, "not enough sub-locks taken in time");
            break;
        }
    if (failure == CR_BUSY && cr__hooked(&l->client->run.stats))
        cr__op_event(op, CR_EVENT_BUSY, CR_BUSY, l->label, m->ev_name,
                     cr__now_ms() - start, -1, false);
    return failure;
}

/* The class's release: unlock every sub-lock in parallel and report every
 * error. A RedLock only needs its majority released by its owner. */
static cr_status
multi_release(cr__op *op, cr_lock *l, int64_t tid)
{
    multi *m = l->impl;
    job jobs[MAX_LOCKS];
    char msg[1024] = "";
    size_t i, ok = 0, len = 0;
    cr_status first = CR_OK;

    memset(jobs, 0, m->n * sizeof(*jobs));
    for (i = 0; i < m->n; i++) {
        jobs[i].lock = m->locks[i];
        jobs[i].tid = tid;
        jobs[i].unlock = true;
    }
    run_jobs(jobs, m->n);
    for (i = 0; i < m->n; i++) {
        if (jobs[i].rc == CR_OK) {
            ok++;
            continue;
        }
        if (first == CR_OK)
            first = jobs[i].rc;
        if (len < sizeof(msg))
            len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s: %s",
                                    len > 0 ? "; " : "",
                                    cr_lock_name(jobs[i].lock), jobs[i].err);
    }
    atomic_store(&m->valid_until, 0);
    if (m->redlock && ok >= m->needed)
        first = CR_OK;
    else if (first != CR_OK)
        first = cr__fail(first, "%s", msg);
    released(op, l, tid, first);
    return first;
}

/* The smallest hold count among the sub-locks (RedLock: the majority's
 * smallest, i.e. the needed-th largest). */
static cr_status
multi_hold_count(cr__op *op, cr_lock *l, int64_t tid, int64_t *count)
{
    multi *m = l->impl;
    int64_t counts[MAX_LOCKS];
    size_t i, j;

    (void)op; /* each sub-lock's query is a call of its own */
    for (i = 0; i < m->n; i++) {
        cr_status rc = cr_lock_get_hold_count_tid(m->locks[i], tid, &counts[i]);

        if (rc != CR_OK)
            return rc;
    }
    /* Sort descending (n is small) and take the needed-th value. */
    for (i = 1; i < m->n; i++)
        for (j = i; j > 0 && counts[j] > counts[j - 1]; j--) {
            int64_t t = counts[j];

            counts[j] = counts[j - 1];
            counts[j - 1] = t;
        }
    *count = counts[m->needed - 1];
    return CR_OK;
}

/* Lost when so many sub-locks were lost that fewer than needed remain. */
static cr_status
multi_is_lost(cr_lock *l, int64_t tid, bool *lost)
{
    multi *m = l->impl;
    size_t i, gone = 0;

    for (i = 0; i < m->n; i++) {
        bool v = false;
        cr_status rc = cr_lock_is_lost_tid(m->locks[i], tid, &v);

        if (rc != CR_OK)
            return rc;
        gone += v;
    }
    *lost = m->n - gone < m->needed;
    return CR_OK;
}

static cr_status
multi_unsupported(cr__op *op, cr_lock *l, bool *unused)
{
    (void)op;
    (void)unused;
    return cr__fail(CR_ENOTSUP, "not supported by a %s", l->label);
}

static cr_status
multi_no_ttl(cr__op *op, cr_lock *l, int64_t *unused)
{
    (void)op;
    (void)unused;
    return cr__fail(CR_ENOTSUP, "a %s has no single time to live", l->label);
}

static cr_status
multi_no_lease(cr_lock *l, int64_t tid, int64_t *unused)
{
    (void)tid;
    (void)unused;
    return cr__fail(CR_ENOTSUP, "a %s has no single lease; see "
                    "cr_multilock_get_validity", l->label);
}

static void
multi_free(cr_lock *l)
{
    multi *m = l->impl;

    if (m != NULL) {
        free(m->locks);
        free(m->holders);
        pthread_mutex_destroy(&m->mu);
    }
    free(m);
}

/* The name events show: the sub-locks' names joined by ','; when they do
 * not all fit, those that do and ",+<how many more>", or, when not even
 * the first does, as much of it as fits, "..." and the count. */
static void
event_name(char *out, size_t len, cr_lock *const *locks, size_t n)
{
    char more[32];
    size_t used = 0, i;

    out[0] = '\0';
    for (i = 0; i < n; i++) {
        size_t need = strlen(locks[i]->name) + (i > 0);

        /* Room for this name and, unless it is the last, ",+N" after. */
        snprintf(more, sizeof(more), ",+%zu", n - i - 1);
        if (used + need + (i + 1 < n ? strlen(more) : 0) >= len)
            break;
        used += (size_t)snprintf(out + used, len - used, "%s%s",
                                 i > 0 ? "," : "", locks[i]->name);
    }
    if (i == n)
        return;
    if (i > 0) {
        snprintf(out + used, len - used, ",+%zu", n - i);
        return;
    }
    if (n > 1)
        snprintf(more, sizeof(more), "...,+%zu", n - 1);
    else
        snprintf(more, sizeof(more), "...");
    snprintf(out, len, "%.*s%s", (int)(len - 1 - strlen(more)),
             locks[0]->name, more);
}

static const cr__lock_class multi_class = {
    .acquire = multi_acquire,
    .release = multi_release,
    .force_unlock = multi_unsupported,
    .delete_ = multi_unsupported,
    .is_locked = multi_unsupported,
    .hold_count = multi_hold_count,
    .remain_ttl = multi_no_ttl,
    .is_lost = multi_is_lost,
    .lease_left = multi_no_lease,
    .free_own = multi_free,
};

/* Builds a multilock of either kind. */
static cr_status
create(cr_lock *const *locks, size_t n, bool redlock, cr_lock **out)
{
    char name[128];
    multi *m;
    cr_lock *l = NULL;
    size_t i, j;
    cr_status rc;

    cr__clear_error();
    if (locks == NULL || out == NULL || n == 0 || n > MAX_LOCKS)
        return cr__fail(CR_EINVAL, "need 1..%d sub-locks and an out pointer",
                        MAX_LOCKS);
    for (i = 0; i < n; i++) {
        if (locks[i] == NULL || locks[i]->magic != CR__LOCK_MAGIC)
            return cr__fail(CR_EINVAL, "sub-lock %zu is not a live lock", i);
        if (locks[i]->cls == &multi_class)
            return cr__fail(CR_EINVAL, "sub-lock %zu is itself a multilock", i);
        for (j = 0; j < i; j++)
            if (locks[j] == locks[i])
                return cr__fail(CR_EINVAL, "sub-lock %zu is given twice", i);
    }
    snprintf(name, sizeof(name), "%s(%s%s)", redlock ? "redlock" : "multilock",
             locks[0]->name, n > 1 ? ",..." : "");
    m = calloc(1, sizeof(*m));
    if (m == NULL || (m->locks = malloc(n * sizeof(*m->locks))) == NULL) {
        free(m);
        return CR_ENOMEM;
    }
    memcpy(m->locks, locks, n * sizeof(*m->locks));
    m->n = n;
    m->redlock = redlock;
    m->needed = redlock ? n / 2 + 1 : n;
    event_name(m->ev_name, sizeof(m->ev_name), locks, n);
    pthread_mutex_init(&m->mu, NULL);
    rc = cr__lock_create(locks[0]->client, name, &multi_class,
                         redlock ? "redlock" : "multilock", false, &l);
    if (rc != CR_OK) {
        pthread_mutex_destroy(&m->mu);
        free(m->locks);
        free(m);
        return rc;
    }
    l->impl = m;
    *out = l;
    return CR_OK;
}

cr_status
cr_multilock_new(cr_lock *const *locks, size_t n, cr_lock **out)
{
    return create(locks, n, false, out);
}

cr_status
cr_redlock_new(cr_lock *const *locks, size_t n, cr_lock **out)
{
    return create(locks, n, true, out);
}

cr_status
cr_multilock_get_validity(cr_lock *l, int64_t *validity_ms)
{
    int64_t until;

    if (l == NULL || validity_ms == NULL || l->magic != CR__LOCK_MAGIC ||
        l->cls != &multi_class)
        return cr__fail(CR_EINVAL, "not a multilock");
    until = atomic_load(&((multi *)l->impl)->valid_until);
    if (until == 0)
        return cr__fail(CR_EINVAL, "not acquired through this handle");
    if (until < 0)
        *validity_ms = CR_LEASE_WATCHDOG;
    else
        *validity_ms = until > cr__now_ms() ? until - cr__now_ms() : 0;
    return CR_OK;
}
