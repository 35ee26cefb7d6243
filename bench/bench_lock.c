/* SPDX-License-Identifier: MIT */
/*
 * Lock benchmarks, scenarios 1 and 2 of doc/benchmarks.md, for any lock
 * implementation that fits the `impl` table below (credisson's RLock, the
 * instant-handoff floor, the naive SET NX lock; other credisson lock kinds
 * are added to the table as they appear).
 *
 *   bench_lock --scenario uncontended --impl NAME [--url U] [--seconds S]
 *       one thread takes and releases the lock as fast as it can: pairs/s.
 *   bench_lock --scenario contended --impl NAME --workers K
 *              [--mode threads|procs] [--url U] [--seconds S]
 *       K workers (threads sharing one client, or processes with one client
 *       each) loop on one lock: lock, GET the counter, SET it plus one,
 *       unlock. Reports throughput, the wait inside lock() (p50, p99, max),
 *       the handoff latency (one holder's unlock to the next holder's
 *       acquire, CLOCK_MONOTONIC timestamps in shared memory), the order of
 *       grants (the share that passed no worker which had called lock()
 *       earlier and still waited) and whether the counter is exact.
 *   ... --permits P   a semaphore (or its floor) of P permits: up to P
 *       workers inside at once, each doing INCR counter + GET instead.
 *   ... --read-share R   R % of the cycles take the read lock and only
 *       GET the counter (rwlock; floor_rw; an exclusive impl takes its one
 *       lock for both); the rest write as above.
 *
 * Each run prints one JSON line. Timestamps are taken inside the critical
 * section, so they are ordered by the lock itself: the holder writes the
 * release time just before unlocking, the next holder reads it just after
 * acquiring.
 */
#include "config.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <credisson.h>

#include "bench.h"
#include "naive_lock.h"
#include "scripts.h"

#define LOCK_NAME "bench:lock"
#define COUNTER_KEY "bench:counter"
#define SEM_NAME "bench:sem"
#define PES_NAME "bench:pes"
#define MAX_WORKERS 256
#define MAX_SAMPLES (4u << 20)

/* ------------------------------------------------------------ shared state */

/* What the workers of one run share; in shared memory for processes. */
typedef struct shared {
    atomic_int ready;
    atomic_int go;
    atomic_int stop;
    atomic_int holders;             /* workers inside */
    atomic_int readers, writers;    /* inside, with --read-share */
    atomic_uint_fast64_t violations; /* entered while someone was inside */
    atomic_uint_fast64_t cycles;
    atomic_uint_fast64_t commands;  /* credisson clients' command counts */
    atomic_uint_fast64_t messages;
    atomic_uint_fast64_t writes;    /* with --read-share: write cycles */
    /* The order of grants: when each worker called lock() (0: it is not
     * waiting), and per grant the workers it passed that had called
     * earlier. */
    _Atomic int64_t waiting_since[MAX_WORKERS];
    atomic_uint_fast64_t in_order;  /* grants that passed nobody */
    atomic_uint_fast64_t passed;    /* workers passed, summed */
    /* Written only inside the critical section. */
    int64_t last_release_ns;
    int last_holder;
    uint64_t self_reacquire;
    uint64_t handovers;
    /* The floor's ticket lock: the holder of ticket t posts the slot of
     * t + 1, which only that ticket's worker waits on. */
    atomic_uint_fast64_t floor_next;
    sem_t floor_slot[MAX_WORKERS]; /* process-shared */
    sem_t floor_permits;           /* floor_sem: P permits */
    pthread_rwlock_t floor_rw;     /* floor_rw: writers preferred */
    bench_samples waits;
    bench_samples read_waits;      /* with --read-share */
    bench_samples write_waits;
    bench_samples handoffs;
} shared;

typedef struct run_cfg {
    const char *url;
    const char *scenario;
    const struct impl *im;
    int workers;
    bool procs;
    bool counter;
    double seconds;
    int64_t lease_ms;
    int permits;    /* --permits: semaphores only */
    int read_share; /* --read-share: % of cycles that read */
} run_cfg;

/* One worker: a thread, or the only thread of a child process. */
typedef struct worker {
    int id;
    const run_cfg *cfg;
    shared *sh;
    cr_client *client;   /* shared by threads, own in a process */
    bool own_client;
    redisContext *redis; /* the worker's own connection for the counter */
    cr_lock *lock;       /* credisson kinds */
    char floor_key[32];  /* the floor's private lock */
    char floor_owner[32];
    uint64_t floor_seq;
    uint64_t floor_ticket; /* the ticket it holds the floor with */
    bool floor_pending;  /* a latch DEL whose reply is still to read */
    naive_lock *naive;
    cr_rwlock *rw;       /* the write lock's owner */
    cr_lock *read;       /* its read lock (rwlock) */
    cr_semaphore *sem;   /* the semaphore */
    cr_permit_semaphore *pes; /* the permit-expirable semaphore */
    char pes_id[CR_PERMIT_ID_LEN + 1]; /* the permit it holds */
    char floor_sem_key[32];   /* floor_sem: its private semaphore */
    char floor_sem_latch[64];
    unsigned seed;       /* --read-share draws */
} worker;

/* Reports a credisson failure inside a worker and exits the process. */
static void
check(cr_status rc, const char *what)
{
    if (rc != CR_OK)
        bench_die("%s: %s (%s)", what, cr_strerror(rc), cr_last_error());
}

/* qsort comparison of two doubles. */
static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------ implementations */

/* A lock under test: how a worker makes its handle, locks and unlocks. */
typedef struct impl {
    const char *name;
    bool kind;        /* another credisson lock kind (run.sh --list-kinds) */
    bool uses_client;
    void (*open)(worker *w);
    void (*lock)(worker *w);
    void (*unlock)(worker *w);
    void (*close)(worker *w);
    /* Shared (read) side for --read-share; NULL: lock and unlock. */
    void (*lock_shared)(worker *w);
    void (*unlock_shared)(worker *w);
} impl;

/* Frees the worker's credisson handles. */
static void
close_handles(worker *w)
{
    cr_lock_free(w->lock);
    w->lock = NULL;
}

/* RLock (getLock): lock() with the watchdog, as Redisson's lock(). */
static void
rlock_open(worker *w)
{
    check(cr_lock_new(w->client, LOCK_NAME, &w->lock), "cr_lock_new");
}

static void
rlock_lock(worker *w)
{
    check(cr_lock_lock(w->lock, CR_LEASE_WATCHDOG), "cr_lock_lock");
}

/* RLock with an explicit lease (no watchdog): lock(leaseTime). */
static void
rlock_lease_lock(worker *w)
{
    check(cr_lock_lock(w->lock, w->cfg->lease_ms), "cr_lock_lock");
}

static void
rlock_unlock(worker *w)
{
    check(cr_lock_unlock(w->lock), "cr_lock_unlock");
}

/* The instant-handoff floor: a ticket lock hands the critical section over
 * in arrival order, one wake per handover (a plain process-shared mutex
 * let the releaser take it again, in one run 95 % of the time, and then
 * measured no handover at all), and the holder still makes the round trips of an
 * RLock lock and unlock, by hand with hiredis on a private key nobody else
 * wants: the acquire script, the unlock script with a fresh latch, and the
 * latch's DEL sent with the next command without waiting for it. So each
 * cycle costs the Redis commands of a lock cycle, with zero client overhead
 * and no waiting between holders. */
static void
floor_open(worker *w)
{
    cr__script_id ids[2] = {CR__SCRIPT_LOCK_ACQUIRE, CR__SCRIPT_LOCK_UNLOCK};
    int i;

    for (i = 0; i < 2; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", cr__scripts[ids[i]].body};

        freeReplyObject(bench_cmd_argv(w->redis, 3, argv, NULL));
    }
    snprintf(w->floor_key, sizeof(w->floor_key), "bench:floor:%d", w->id);
    snprintf(w->floor_owner, sizeof(w->floor_owner), "bench-floor:%d", w->id);
}

/* Reads one reply of the floor's connection; exits on failure. */
static redisReply *
floor_reply(worker *w)
{
    void *r = NULL;

    if (redisGetReply(w->redis, &r) != REDIS_OK || r == NULL)
        bench_die("floor: %s", w->redis->errstr);
    return r;
}

/* The floor's acquire script on its private key (and the reply of the
 * last cycle's latch DEL). */
static void
floor_lock_cmds(worker *w)
{
    const char *acq[6] = {"EVALSHA", cr__scripts[CR__SCRIPT_LOCK_ACQUIRE].sha1,
                          "1", w->floor_key, "30000", w->floor_owner};
    redisReply *r;

    redisAppendCommandArgv(w->redis, 6, acq, NULL);
    if (w->floor_pending) {
        freeReplyObject(floor_reply(w));
        w->floor_pending = false;
    }
    r = floor_reply(w);
    if (r->type != REDIS_REPLY_NIL)
        bench_die("floor: the private lock was not free");
    freeReplyObject(r);
}

static void
floor_lock(worker *w)
{
    w->floor_ticket = atomic_fetch_add(&w->sh->floor_next, 1);
    while (sem_wait(&w->sh->floor_slot[w->floor_ticket % (uint64_t)w->cfg->workers]) != 0)
        ; /* EINTR */
    floor_lock_cmds(w);
}

/* The floor's unlock script with a fresh latch; the latch's DEL goes out
 * now and its reply is read with the next command's. */
static void
floor_unlock_cmds(worker *w)
{
    char latch[96], channel[64];
    const char *unl[11] = {"EVALSHA", cr__scripts[CR__SCRIPT_LOCK_UNLOCK].sha1,
                           "3", w->floor_key, channel, latch, "0", "30000",
                           w->floor_owner, "publish", "10000"};
    const char *del[2] = {"DEL", latch};
    redisReply *r;

    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", w->floor_key);
    snprintf(latch, sizeof(latch), "redisson_unlock_latch:{%s}:%032llx",
             w->floor_key, (unsigned long long)++w->floor_seq);
    r = bench_cmd_argv(w->redis, 11, unl, NULL);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
        bench_die("floor: the private unlock failed");
    freeReplyObject(r);
    redisAppendCommandArgv(w->redis, 2, del, NULL);
    w->floor_pending = true;
}

static void
floor_unlock(worker *w)
{
    floor_unlock_cmds(w);
    sem_post(&w->sh->floor_slot[(w->floor_ticket + 1) % (uint64_t)w->cfg->workers]);
}

static void
floor_close(worker *w)
{
    if (w->floor_pending)
        freeReplyObject(floor_reply(w));
    w->floor_pending = false;
}

/* The naive SET NX PX lock with 1 ms sleep-and-retry (naive_lock.c). */
static void
naive_open(worker *w)
{
    w->naive = naive_lock_new(w->redis, LOCK_NAME, 30000);
}

static void
naive_do_lock(worker *w)
{
    naive_lock_lock(w->naive, 1000);
}

static void
naive_do_unlock(worker *w)
{
    if (naive_lock_unlock(w->naive) != 1)
        bench_die("naive unlock found its lease gone");
}

static void
naive_close(worker *w)
{
    naive_lock_free(w->naive);
    w->naive = NULL;
}

/* The other credisson lock kinds take RLock's lock and unlock calls on a
 * handle of their own (each kind has its own key, see reset_keys). */
static void
fair_open(worker *w)
{
    check(cr_fair_lock_new(w->client, LOCK_NAME, &w->lock), "cr_fair_lock_new");
}

static void
spin_open(worker *w)
{
    check(cr_spin_lock_new(w->client, LOCK_NAME, &w->lock), "cr_spin_lock_new");
}

static void
write_open(worker *w)
{
    check(cr_rwlock_new(w->client, LOCK_NAME, &w->rw), "cr_rwlock_new");
    w->lock = cr_rwlock_write_lock(w->rw);
}

static void
write_close(worker *w)
{
    w->lock = NULL; /* borrowed from the rwlock */
    cr_rwlock_free(w->rw);
    w->rw = NULL;
}

/* A semaphore of one permit used as a mutex (set by reset_keys). */
static void
semaphore_open(worker *w)
{
    check(cr_semaphore_new(w->client, SEM_NAME, &w->sem), "cr_semaphore_new");
}

static void
sem_lock(worker *w)
{
    check(cr_semaphore_acquire(w->sem, 1), "cr_semaphore_acquire");
}

static void
sem_unlock(worker *w)
{
    check(cr_semaphore_release(w->sem, 1), "cr_semaphore_release");
}

static void
semaphore_close(worker *w)
{
    cr_semaphore_free(w->sem);
    w->sem = NULL;
}

/* A permit-expirable semaphore of one permit used as a mutex (set by
 * reset_keys); permits that never expire. */
static void
pes_open(worker *w)
{
    check(cr_permit_semaphore_new(w->client, PES_NAME, &w->pes),
          "cr_permit_semaphore_new");
}

static void
pes_lock(worker *w)
{
    check(cr_permit_semaphore_acquire(w->pes, CR_LEASE_NONE, w->pes_id),
          "cr_permit_semaphore_acquire");
}

static void
pes_unlock(worker *w)
{
    check(cr_permit_semaphore_release(w->pes, w->pes_id),
          "cr_permit_semaphore_release");
}

static void
pes_close(worker *w)
{
    cr_permit_semaphore_free(w->pes);
    w->pes = NULL;
}

/* The read/write lock with --read-share: its read lock for reading
 * cycles, its write lock for the others. */
static void
rwlock_open(worker *w)
{
    write_open(w);
    w->read = cr_rwlock_read_lock(w->rw);
}

static void
read_lock(worker *w)
{
    check(cr_lock_lock(w->read, CR_LEASE_WATCHDOG), "cr_lock_lock (read)");
}

static void
read_unlock(worker *w)
{
    check(cr_lock_unlock(w->read), "cr_lock_unlock (read)");
}

static void
rwlock_close(worker *w)
{
    w->read = NULL;
    write_close(w);
}

/* The floor of a semaphore of P permits: a process-shared POSIX semaphore
 * of P lets workers in at once, and each cycle still makes the Redis
 * commands of a semaphore cycle by hand, on a private key that always has
 * its permit: the acquire script (with its fresh latch key), the latch's
 * DEL (sent with the release script, whose reply is read after the DEL's)
 * and the release script. */
static void
floor_sem_open(worker *w)
{
    cr__script_id ids[2] = {CR__SCRIPT_SEMAPHORE_TRY_ACQUIRE,
                            CR__SCRIPT_SEMAPHORE_RELEASE};
    int i;

    for (i = 0; i < 2; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", cr__scripts[ids[i]].body};

        freeReplyObject(bench_cmd_argv(w->redis, 3, argv, NULL));
    }
    snprintf(w->floor_sem_key, sizeof(w->floor_sem_key), "bench:floorsem:%d", w->id);
    freeReplyObject(bench_cmd(w->redis, "SET %s 1", w->floor_sem_key));
}

static void
floor_sem_lock(worker *w)
{
    const char *acq[7] = {"EVALSHA", cr__scripts[CR__SCRIPT_SEMAPHORE_TRY_ACQUIRE].sha1,
                          "2", w->floor_sem_key, w->floor_sem_latch, "1", "10000"};
    const char *del[2] = {"DEL", w->floor_sem_latch};
    redisReply *r;

    while (sem_wait(&w->sh->floor_permits) != 0)
        ; /* EINTR */
    snprintf(w->floor_sem_latch, sizeof(w->floor_sem_latch),
             "credisson_semaphore_acquire:{%s}:%llx", w->floor_sem_key,
             (unsigned long long)++w->floor_seq);
    r = bench_cmd_argv(w->redis, 7, acq, NULL);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
        bench_die("floor_sem: the private permit was not there");
    freeReplyObject(r);
    redisAppendCommandArgv(w->redis, 2, del, NULL);
    w->floor_pending = true;
}

static void
floor_sem_unlock(worker *w)
{
    char channel[64];
    const char *rel[8] = {"EVALSHA", cr__scripts[CR__SCRIPT_SEMAPHORE_RELEASE].sha1,
                          "2", w->floor_sem_key, channel, "1", "publish", "0"};

    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", w->floor_sem_key);
    redisAppendCommandArgv(w->redis, 8, rel, NULL);
    freeReplyObject(floor_reply(w)); /* the latch's DEL */
    w->floor_pending = false;
    freeReplyObject(floor_reply(w));
    sem_post(&w->sh->floor_permits);
}

static void
floor_sem_close(worker *w)
{
    floor_close(w);
    freeReplyObject(bench_cmd(w->redis, "DEL %s", w->floor_sem_key));
}

/* The floor of the read/write mix: a process-shared rwlock (writers
 * preferred) hands over at once, and every cycle, reading or writing,
 * makes the Redis commands of the instant-handoff floor's lock cycle. */
static void
floor_rw_lock(worker *w)
{
    pthread_rwlock_wrlock(&w->sh->floor_rw);
    floor_lock_cmds(w);
}

static void
floor_rw_unlock(worker *w)
{
    floor_unlock_cmds(w);
    pthread_rwlock_unlock(&w->sh->floor_rw);
}

static void
floor_rw_lock_shared(worker *w)
{
    pthread_rwlock_rdlock(&w->sh->floor_rw);
    floor_lock_cmds(w);
}

/* Every implementation this program knows; `kind` marks the credisson lock
 * kinds other than RLock, which run.sh lists with --list-kinds. A new kind
 * takes one line here and an open function that makes its handle. */
static const impl impls[] = {
    {"rlock", false, true, rlock_open, rlock_lock, rlock_unlock, close_handles,
     NULL, NULL},
    {"rlock_lease", false, true, rlock_open, rlock_lease_lock, rlock_unlock,
     close_handles, NULL, NULL},
    {"floor", false, false, floor_open, floor_lock, floor_unlock, floor_close,
     NULL, NULL},
    {"naive", false, false, naive_open, naive_do_lock, naive_do_unlock, naive_close,
     NULL, NULL},
    {"fair", true, true, fair_open, rlock_lock, rlock_unlock, close_handles, NULL, NULL},
    {"write", true, true, write_open, rlock_lock, rlock_unlock, write_close, NULL, NULL},
    {"spin", true, true, spin_open, rlock_lock, rlock_unlock, close_handles, NULL, NULL},
    {"semaphore", true, true, semaphore_open, sem_lock, sem_unlock, semaphore_close,
     NULL, NULL},
    {"permit_semaphore", true, true, pes_open, pes_lock, pes_unlock, pes_close,
     NULL, NULL},
    /* Only with --permits or --read-share (scenarios 4 and 5). */
    {"floor_sem", false, false, floor_sem_open, floor_sem_lock, floor_sem_unlock,
     floor_sem_close, NULL, NULL},
    {"rwlock", false, true, rwlock_open, rlock_lock, rlock_unlock, rwlock_close,
     read_lock, read_unlock},
    {"floor_rw", false, false, floor_open, floor_rw_lock, floor_rw_unlock, floor_close,
     floor_rw_lock_shared, floor_rw_unlock},
};

/* Finds an implementation by name; exits listing them when unknown. */
static const impl *
find_impl(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
        if (strcmp(impls[i].name, name) == 0)
            return &impls[i];
    fprintf(stderr, "bench_lock: unknown --impl %s; known:", name);
    for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
        fprintf(stderr, " %s", impls[i].name);
    fputc('\n', stderr);
    exit(2);
}

/* ------------------------------------------------------------ the loop */

/* GET then SET the counter: the read-modify-write only the lock keeps
 * exact. */
static void
bump_counter(redisContext *c)
{
    redisReply *r = bench_cmd(c, "GET %s", COUNTER_KEY);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    freeReplyObject(r);
    freeReplyObject(bench_cmd(c, "SET %s %lld", COUNTER_KEY, v + 1));
}

/* INCR the counter and GET it: what each of P holders does at once. */
static void
incr_counter(redisContext *c)
{
    freeReplyObject(bench_cmd(c, "INCR %s", COUNTER_KEY));
    freeReplyObject(bench_cmd(c, "GET %s", COUNTER_KEY));
}

/* The order of one grant: counts the workers still waiting that had
 * called lock() before this one did at `since`. Where holders overlap
 * (scenarios 4 and 5), a grant made microseconds after an earlier
 * caller's, before that one cleared its stamp, counts as passing it. */
static void
note_order(shared *sh, const worker *w, int64_t since)
{
    uint64_t passed = 0;
    int i;

    atomic_store(&sh->waiting_since[w->id], 0);
    for (i = 0; i < w->cfg->workers; i++) {
        int64_t t = atomic_load(&sh->waiting_since[i]);

        if (t != 0 && t < since)
            passed++;
    }
    if (passed == 0)
        atomic_fetch_add(&sh->in_order, 1);
    atomic_fetch_add(&sh->passed, passed);
}

/* Entering the critical section: counts a violation when it is shared
 * with more than it may be (one holder; P holders; readers with no
 * writer). Returns what leave() needs. */
static atomic_int *
enter(shared *sh, const run_cfg *cfg, bool reading)
{
    if (cfg->read_share > 0) {
        atomic_int *mine = reading ? &sh->readers : &sh->writers;
        int n = atomic_fetch_add(mine, 1) + 1;

        if (atomic_load(&sh->writers) > (reading ? 0 : 1) ||
            (!reading && (n > 1 || atomic_load(&sh->readers) > 0)))
            atomic_fetch_add(&sh->violations, 1);
        return mine;
    }
    if (atomic_fetch_add(&sh->holders, 1) + 1 > cfg->permits)
        atomic_fetch_add(&sh->violations, 1);
    return &sh->holders;
}

/* The body of every worker: set up, wait for the start, loop until told to
 * stop, tear down. */
static void
work(worker *w)
{
    const impl *im = w->cfg->im;
    const run_cfg *cfg = w->cfg;
    shared *sh = w->sh;
    /* One holder at a time: the handovers can be timed. */
    bool exclusive = cfg->permits == 1 && cfg->read_share == 0;
    uint64_t cycles = 0, writes = 0;

    w->redis = bench_redis(w->cfg->url);
    if (im->uses_client && w->client == NULL) {
        w->client = bench_client(w->cfg->url);
        w->own_client = true;
    }
    im->open(w);
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go))
        bench_sleep_ns(100000);
    while (!atomic_load(&sh->stop)) {
        bool reading = cfg->read_share > 0 &&
                       (int)(rand_r(&w->seed) % 100) < cfg->read_share;
        bool shared_side = reading && im->lock_shared != NULL;
        int64_t t0 = bench_now_ns(), t1;
        atomic_int *inside;

        atomic_store(&sh->waiting_since[w->id], t0);
        (shared_side ? im->lock_shared : im->lock)(w);
        t1 = bench_now_ns();
        note_order(sh, w, t0);
        inside = enter(sh, cfg, shared_side);
        if (exclusive && sh->last_holder >= 0) {
            if (sh->last_holder != w->id) {
                sh->handovers++;
                bench_samples_add(&sh->handoffs, t1 - sh->last_release_ns);
            } else {
                sh->self_reacquire++;
            }
        }
        bench_samples_add(&sh->waits, t1 - t0);
        if (cfg->read_share > 0)
            bench_samples_add(reading ? &sh->read_waits : &sh->write_waits, t1 - t0);
        if (reading)
            freeReplyObject(bench_cmd(w->redis, "GET %s", COUNTER_KEY));
        else if (cfg->permits > 1)
            incr_counter(w->redis);
        else if (cfg->counter)
            bump_counter(w->redis);
        writes += !reading;
        if (exclusive)
            sh->last_holder = w->id;
        atomic_fetch_sub(inside, 1);
        if (exclusive)
            sh->last_release_ns = bench_now_ns();
        (shared_side ? im->unlock_shared : im->unlock)(w);
        cycles++;
    }
    atomic_fetch_add(&sh->cycles, cycles);
    atomic_fetch_add(&sh->writes, writes);
    im->close(w);
    if (w->own_client) {
        cr_client_stats st = CR_CLIENT_STATS_INIT;

        if (cr_client_stats_get(w->client, &st) == CR_OK) {
            atomic_fetch_add(&sh->commands, st.commands);
            atomic_fetch_add(&sh->messages, st.messages);
        }
        cr_client_free(w->client);
        w->client = NULL;
    }
    redisFree(w->redis);
}

/* pthread entry point of a worker. */
static void *
thread_main(void *arg)
{
    work(arg);
    return NULL;
}

/* Waits until every worker is ready, bounded; with processes, exits as
 * soon as one of them has died. */
static void
wait_ready(shared *sh, int n, bool procs)
{
    int64_t deadline = bench_now_ns() + 60 * (int64_t)1000000000;

    while (atomic_load(&sh->ready) < n) {
        int status;

        if (procs && waitpid(-1, &status, WNOHANG) > 0)
            bench_die("a worker process died while starting");
        if (bench_now_ns() > deadline)
            bench_die("workers did not start");
        bench_sleep_ns(1000000);
    }
}

/* Deletes the lock, the counter and what the other kinds keep (the fair
 * lock's queue and timeouts, the semaphore) before and after a run, and
 * gives the semaphore its `permits` (a Redisson semaphore is a plain
 * counter key). */
static void
reset_keys(redisContext *c, int permits)
{
    freeReplyObject(bench_cmd(c, "DEL %s %s %s redisson_lock_queue:{%s} "
                              "redisson_lock_timeout:{%s}", LOCK_NAME,
                              COUNTER_KEY, SEM_NAME, LOCK_NAME, LOCK_NAME));
    freeReplyObject(bench_cmd(c, "DEL %s {%s}:timeout", PES_NAME, PES_NAME));
    freeReplyObject(bench_cmd(c, "SET %s %d", SEM_NAME, permits));
    freeReplyObject(bench_cmd(c, "SET %s %d", PES_NAME, permits));
}

/* Reads the counter after a run. */
static long long
read_counter(redisContext *c)
{
    redisReply *r = bench_cmd(c, "GET %s", COUNTER_KEY);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    freeReplyObject(r);
    return v;
}

/* Runs one measurement and prints its JSON line. */
static void
run(const run_cfg *cfg)
{
    shared *sh = bench_shared(sizeof(*sh));
    redisContext *rc = bench_redis(cfg->url);
    worker *ws = calloc((size_t)cfg->workers, sizeof(*ws));
    pthread_t *tids = calloc((size_t)cfg->workers, sizeof(*tids));
    pid_t *pids = calloc((size_t)cfg->workers, sizeof(*pids));
    cr_client *shared_client = NULL;
    pthread_rwlockattr_t rwa;
    uint64_t writes;
    double cpu0, cpu1, elapsed;
    int64_t start, end;
    long long counter;
    uint64_t cycles;
    bench_json j;
    int i;

    if (ws == NULL || tids == NULL || pids == NULL)
        bench_die("out of memory");
    for (i = 0; i < cfg->workers; i++)
        sem_init(&sh->floor_slot[i], 1, i == 0 ? 1 : 0);
    sem_init(&sh->floor_permits, 1, (unsigned)cfg->permits);
    pthread_rwlockattr_init(&rwa);
    pthread_rwlockattr_setpshared(&rwa, PTHREAD_PROCESS_SHARED);
    pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&sh->floor_rw, &rwa);
    pthread_rwlockattr_destroy(&rwa);
    sh->last_holder = -1;
    bench_samples_init(&sh->waits, MAX_SAMPLES, true);
    bench_samples_init(&sh->handoffs, MAX_SAMPLES, true);
    if (cfg->read_share > 0) {
        bench_samples_init(&sh->read_waits, MAX_SAMPLES, true);
        bench_samples_init(&sh->write_waits, MAX_SAMPLES, true);
    }
    reset_keys(rc, cfg->permits);
    if (!cfg->procs && cfg->im->uses_client)
        shared_client = bench_client(cfg->url);
    cpu0 = bench_cpu_s();
    for (i = 0; i < cfg->workers; i++) {
        ws[i].id = i;
        ws[i].cfg = cfg;
        ws[i].sh = sh;
        ws[i].client = shared_client;
        ws[i].seed = 7919u * (unsigned)i + 1;
        if (cfg->procs) {
            fflush(NULL);
            pids[i] = fork();
            if (pids[i] < 0)
                bench_die("fork failed");
            if (pids[i] == 0) {
                work(&ws[i]);
                _exit(0);
            }
        } else if (pthread_create(&tids[i], NULL, thread_main, &ws[i]) != 0) {
            bench_die("pthread_create failed");
        }
    }
    wait_ready(sh, cfg->workers, cfg->procs);
    start = bench_now_ns();
    atomic_store(&sh->go, 1);
    bench_sleep_ns((int64_t)(cfg->seconds * 1e9));
    atomic_store(&sh->stop, 1);
    for (i = 0; i < cfg->workers; i++) {
        if (cfg->procs) {
            int status = 0;

            if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0)
                bench_die("worker process %d failed", i);
        } else {
            pthread_join(tids[i], NULL);
        }
    }
    end = bench_now_ns();
    cpu1 = bench_cpu_s();
    if (shared_client != NULL) {
        cr_client_stats st = CR_CLIENT_STATS_INIT;

        if (cr_client_stats_get(shared_client, &st) == CR_OK) {
            atomic_fetch_add(&sh->commands, st.commands);
            atomic_fetch_add(&sh->messages, st.messages);
        }
        cr_client_free(shared_client);
    }
    elapsed = (double)(end - start) / 1e9;
    cycles = atomic_load(&sh->cycles);
    writes = atomic_load(&sh->writes);
    counter = read_counter(rc);
    reset_keys(rc, cfg->permits);
    bench_samples_sort(&sh->waits);
    bench_samples_sort(&sh->handoffs);

    bench_json_begin(&j, cfg->read_share > 0 ? "s4_rwlock"
                         : cfg->permits > 1  ? "s5_semaphore"
                                             : "s2_contended");
    bench_json_str(&j, "impl", cfg->im->name);
    bench_json_str(&j, "mode", cfg->procs ? "procs" : "threads");
    bench_json_int(&j, "workers", cfg->workers);
    bench_json_int(&j, "permits", cfg->permits);
    bench_json_int(&j, "read_share", cfg->read_share);
    bench_json_num(&j, "seconds", elapsed);
    bench_json_int(&j, "cycles", (int64_t)cycles);
    bench_json_num(&j, "rate", (double)cycles / elapsed);
    if (cfg->counter) {
        bench_json_int(&j, "counter", counter);
        bench_json_bool(&j, "counter_exact", counter == (long long)writes);
    }
    bench_json_num(&j, "in_order_share",
                   cycles > 0 ? (double)atomic_load(&sh->in_order) / (double)cycles : 0);
    bench_json_num(&j, "passed_mean",
                   cycles > 0 ? (double)atomic_load(&sh->passed) / (double)cycles : 0);
    if (cfg->read_share > 0) {
        bench_samples *rw[2] = {&sh->read_waits, &sh->write_waits};
        const char *names[2][3] = {{"reads", "read_wait_p50_us", "read_wait_p99_us"},
                                   {"writes", "write_wait_p50_us", "write_wait_p99_us"}};
        int k;

        for (k = 0; k < 2; k++) {
            bench_samples_sort(rw[k]);
            bench_json_int(&j, names[k][0], (int64_t)bench_samples_count(rw[k]));
            bench_json_num(&j, names[k][1], (double)bench_pct(rw[k], 50) / 1e3);
            bench_json_num(&j, names[k][2], (double)bench_pct(rw[k], 99) / 1e3);
        }
    }
    bench_json_int(&j, "violations", (int64_t)atomic_load(&sh->violations));
    bench_json_num(&j, "wait_p50_us", (double)bench_pct(&sh->waits, 50) / 1e3);
    bench_json_num(&j, "wait_p99_us", (double)bench_pct(&sh->waits, 99) / 1e3);
    bench_json_num(&j, "wait_max_us", (double)bench_pct(&sh->waits, 100) / 1e3);
    bench_json_num(&j, "wait_mean_us", bench_mean(&sh->waits) / 1e3);
    if (cfg->workers > 1 && cfg->permits == 1 && cfg->read_share == 0) {
        bench_json_int(&j, "handovers", (int64_t)sh->handovers);
        bench_json_num(&j, "handoff_p50_us",
                       (double)bench_pct(&sh->handoffs, 50) / 1e3);
        bench_json_num(&j, "handoff_p99_us",
                       (double)bench_pct(&sh->handoffs, 99) / 1e3);
        bench_json_num(&j, "self_share",
                       cycles > 1 ? (double)sh->self_reacquire / (double)(cycles - 1) : 0);
    }
    bench_json_num(&j, "cycle_us", cycles > 0 ? elapsed * 1e6 / (double)cycles : 0);
    if (!cfg->procs)
        bench_json_num(&j, "client_cpu_us_per_cycle",
                       cycles > 0 ? (cpu1 - cpu0) * 1e6 / (double)cycles : 0);
    if (cfg->im->uses_client)
        bench_json_num(&j, "commands_per_cycle",
                       cycles > 0 ? (double)atomic_load(&sh->commands) / (double)cycles : 0);
    bench_json_end(&j);

    if (cfg->counter && counter != (long long)writes)
        fprintf(stderr, "bench_lock: counter %lld != %llu writes\n", counter,
                (unsigned long long)writes);
    redisFree(rc);
    free(ws);
    free(tids);
    free(pids);
}

/* Scenario 1: one thread, no contention. The run is cut into rounds; each
 * round times lock/unlock pairs for a slice, then the ceiling for a slice
 * of the same length: EVALSHA of the acquire script on this thread's own
 * hiredis connection. Interleaving keeps the ratio meaningful on a machine
 * whose speed drifts (shared cores, a VM). Prints one JSON line. */
static void
run_uncontended(const run_cfg *cfg)
{
    const impl *im = cfg->im;
    shared *sh = bench_shared(sizeof(*sh));
    const char *acq[6] = {"EVALSHA", cr__scripts[CR__SCRIPT_LOCK_ACQUIRE].sha1,
                          "1", "bench:s1:ceiling", "30000", "bench-owner:1"};
    const char *load[3] = {"SCRIPT", "LOAD", cr__scripts[CR__SCRIPT_LOCK_ACQUIRE].body};
    int rounds = (int)(cfg->seconds / 0.5 + 0.5), r;
    int64_t slice, pair_ns = 0, ceil_ns = 0;
    uint64_t pairs = 0, ceils = 0;
    double cpu = 0, *ratios;
    bench_samples lat;
    worker w;
    bench_json j;

    if (rounds < 2)
        rounds = 2;
    slice = (int64_t)(cfg->seconds * 1e9 / 2 / rounds);
    ratios = calloc((size_t)rounds, sizeof(*ratios));
    if (ratios == NULL)
        bench_die("out of memory");
    bench_samples_init(&lat, MAX_SAMPLES, false);
    memset(&w, 0, sizeof(w));
    w.cfg = cfg;
    w.sh = sh;
    w.redis = bench_redis(cfg->url);
    freeReplyObject(bench_cmd_argv(w.redis, 3, load, NULL));
    reset_keys(w.redis, 1);
    if (im->uses_client) {
        w.client = bench_client(cfg->url);
        w.own_client = true;
    }
    im->open(&w);
    /* Warm up: connections, script cache, first allocations. */
    im->lock(&w);
    im->unlock(&w);
    for (r = 0; r < rounds; r++) {
        int64_t t0 = bench_now_ns(), t, end = t0 + slice;
        uint64_t n = 0, m = 0;
        double c0 = bench_cpu_s();

        do {
            int64_t s0 = bench_now_ns();

            im->lock(&w);
            im->unlock(&w);
            t = bench_now_ns();
            bench_samples_add(&lat, t - s0);
            n++;
        } while (t < end);
        cpu += bench_cpu_s() - c0;
        pairs += n;
        pair_ns += t - t0;
        ratios[r] = (double)n / ((double)(t - t0) / 1e9);
        t0 = bench_now_ns();
        end = t0 + slice;
        do {
            freeReplyObject(bench_cmd_argv(w.redis, 6, acq, NULL));
            m++;
            t = bench_now_ns();
        } while (t < end);
        ceils += m;
        ceil_ns += t - t0;
        ratios[r] /= (double)m / ((double)(t - t0) / 1e9) / 2;
    }
    im->close(&w);
    if (w.own_client)
        cr_client_free(w.client);
    freeReplyObject(bench_cmd(w.redis, "DEL bench:s1:ceiling"));
    reset_keys(w.redis, 1);
    redisFree(w.redis);
    qsort(ratios, (size_t)rounds, sizeof(*ratios), cmp_double);
    bench_samples_sort(&lat);

    bench_json_begin(&j, "s1_uncontended");
    bench_json_str(&j, "impl", im->name);
    bench_json_int(&j, "workers", 1);
    bench_json_int(&j, "rounds", rounds);
    bench_json_num(&j, "seconds", (double)pair_ns / 1e9);
    bench_json_int(&j, "cycles", (int64_t)pairs);
    bench_json_num(&j, "rate", (double)pairs / ((double)pair_ns / 1e9));
    bench_json_num(&j, "ceiling_evalsha_rps_1",
                   (double)ceils / ((double)ceil_ns / 1e9));
    bench_json_num(&j, "ratio_median", ratios[rounds / 2]);
    bench_json_num(&j, "ratio_min", ratios[0]);
    bench_json_num(&j, "ratio_max", ratios[rounds - 1]);
    bench_json_num(&j, "pair_p50_us", (double)bench_pct(&lat, 50) / 1e3);
    bench_json_num(&j, "pair_p99_us", (double)bench_pct(&lat, 99) / 1e3);
    bench_json_num(&j, "client_cpu_us_per_cycle", cpu * 1e6 / (double)pairs);
    bench_json_end(&j);
    free(ratios);
    free(lat.v);
}

int
main(int argc, char **argv)
{
    bench_args a;
    run_cfg cfg;
    const char *mode;

    bench_args_parse(argc, argv, &a);
    if (bench_flag(&a, "--list-kinds")) {
        size_t i;

        for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
            if (impls[i].kind)
                printf("%s\n", impls[i].name);
        free(a.rest);
        return 0;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.url = a.url;
    cfg.seconds = a.seconds;
    cfg.scenario = bench_opt(&a, "--scenario", "uncontended");
    cfg.im = find_impl(bench_opt(&a, "--impl", "rlock"));
    cfg.lease_ms = atoll(bench_opt(&a, "--lease-ms", "30000"));
    cfg.permits = atoi(bench_opt(&a, "--permits", "1"));
    cfg.read_share = atoi(bench_opt(&a, "--read-share", "0"));
    if (cfg.permits < 1 || cfg.permits > MAX_WORKERS)
        bench_die("--permits must be in 1..%d", MAX_WORKERS);
    if (cfg.read_share < 0 || cfg.read_share > 100)
        bench_die("--read-share is a percentage");
    if (cfg.permits > 1 && strcmp(cfg.im->name, "semaphore") != 0 &&
        strcmp(cfg.im->name, "floor_sem") != 0)
        bench_die("--permits is for semaphore and floor_sem");
    mode = bench_opt(&a, "--mode", "threads");
    cfg.procs = strcmp(mode, "procs") == 0;
    if (!cfg.procs && strcmp(mode, "threads") != 0)
        bench_die("--mode is threads or procs");
    if (strcmp(cfg.scenario, "uncontended") == 0) {
        cfg.workers = 1;
        cfg.counter = false;
    } else if (strcmp(cfg.scenario, "contended") == 0) {
        cfg.workers = atoi(bench_opt(&a, "--workers", "8"));
        cfg.counter = true;
    } else {
        bench_die("--scenario is uncontended or contended");
    }
    if (cfg.workers < 1 || cfg.workers > MAX_WORKERS)
        bench_die("--workers must be in 1..%d", MAX_WORKERS);
    if (cfg.workers == 1 && !cfg.counter)
        run_uncontended(&cfg);
    else
        run(&cfg);
    free(a.rest);
    return 0;
}
