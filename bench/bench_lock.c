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
 *       GET the counter (rwlock; floor_rw; tfloor_rw; an exclusive impl
 *       takes its one lock for both); the rest write as above.
 *   ... --impl redisson|redisson_sem --java-cp CP
 *       the real Java Redisson client (bench/redisson_peer, compiled by
 *       tests/java/redisson.sh classpath): K threads of one JVM, or K JVM
 *       processes (--mode procs), on RLock or RSemaphore.
 *   ... --java-workers J [--java-mode threads|procs] --java-cp CP
 *       a mixed run: J Java workers (threads of one JVM, or JVMs) beside
 *       the K C workers of --impl rlock or semaphore, on the same object;
 *       each side's cycles and longest wait (scenario 13).
 *
 * The floors: --impl floor (the instant-handoff floor), floor_sem and
 * floor_rw hand over through local process-shared primitives; tfloor,
 * tfloor_sem and tfloor_rw (the targeted floors) through Redis, one
 * message to the next waiter's own channel (see "the targeted floor"
 * below).
 *
 * Each run prints one JSON line. Timestamps are taken inside the critical
 * section, so they are ordered by the lock itself: the holder writes the
 * release time just before unlocking, the next holder reads it just after
 * acquiring.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
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

#define LOCK_NAME "bench:lock"
#define COUNTER_KEY "bench:counter"
#define SEM_NAME "bench:sem"
#define PES_NAME "bench:pes"
#define MAX_WORKERS 256
#define MAX_SAMPLES (4u << 20)
#define FLOOR_LEASE_MS 30000 /* the floors' lease */

/* ------------------------------------------------------------ shared state */

/* The targeted floor's line of waiters (tfloor, tfloor_sem, tfloor_rw),
 * kept in shared memory under a process-shared mutex: a perfect line that
 * costs no Redis command, so that the only commands of a hand-over are the
 * object's own scripts. A holder's state goes back to free only once its
 * release script has answered, so that a newcomer let in at once never
 * finds the object still taken on the server. */
typedef struct tline {
    pthread_mutex_t mu;
    bool held;      /* tfloor: held, or being handed to a waiter */
    int avail;      /* tfloor_sem: permits nobody holds or was handed */
    int readers;    /* tfloor_rw: read holds, those being released included */
    int leaving;    /* tfloor_rw: read holds whose release is on its way */
    bool writer;    /* tfloor_rw: a write hold, or one being handed over */
    bool w_releasing; /* tfloor_rw: a write release on its way, to nobody */
    int owed;       /* tfloor_rw: a writer whose wake-up is still owed, or -1 */
    int q[MAX_WORKERS];         /* waiting workers, a ring in arrival order */
    bool q_write[MAX_WORKERS];  /* tfloor_rw: whether each entry writes */
    int head, len;
} tline;

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
    tline line;                    /* the targeted floors */
    atomic_uint_fast64_t late_wakes; /* their wake-ups sent by a command of
                                      * their own (not by a release script) */
    bench_samples waits;
    bench_samples read_waits;      /* with --read-share */
    bench_samples write_waits;
    bench_samples handoffs;
    /* Per worker (C workers first, then Java workers): its cycles and its
     * longest wait. */
    uint64_t w_cycles[MAX_WORKERS];
    int64_t w_wait_max[MAX_WORKERS];
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
    const char *java_cp; /* --java-cp: the Java peer's class path */
    int java_workers;    /* --java-workers: Java workers beside the C ones */
    bool java_procs;     /* --java-mode procs: one JVM each */
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
    cr__line floor_line; /* the line names of the floor's object (unused) */
    uint64_t floor_seq;
    uint64_t floor_ticket; /* the ticket it holds the floor with */
    int floor_pending;   /* replies still to read: a latch DEL, wake-ups */
    redisContext *sub;   /* the targeted floor: subscribed to its own channel */
    naive_lock *naive;
    cr_rwlock *rw;       /* the write lock's owner */
    cr_lock *read;       /* its read lock (rwlock) */
    cr_semaphore *sem;   /* the semaphore */
    cr_permit_semaphore *pes; /* the permit-expirable semaphore */
    char pes_id[CR_PERMIT_ID_LEN + 1]; /* the permit it holds */
    char floor_sem_key[32];   /* floor_sem: its private semaphore */
    char floor_sem_latch[96];
    char tf_timeouts[80];     /* tfloor_rw: its reader's timeout prefix */
    char tf_writer[48];       /* tfloor_rw: its writer's name */
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
    /* The Java peer's kind (RedissonPeer's worker mode) that takes the same
     * object: what the JVMs of a Java impl run, or beside a C impl with
     * --java-workers; NULL: none. */
    const char *java;
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
/* Loads the library's scripts `ids` into the server on the worker's
 * connection, so that the floors can call them by EVALSHA. */
static void
load_scripts(worker *w, const cr__script_id *ids, int n)
{
    int i;

    for (i = 0; i < n; i++)
        bench_script_load(w->redis, ids[i]);
}

/* Names the floor's object `key` (its line's names too) and the worker's
 * owner name in it, "<who>:<worker id>". */
static void
floor_name(worker *w, const char *key, const char *who)
{
    snprintf(w->floor_key, sizeof(w->floor_key), "%s", key);
    snprintf(w->floor_owner, sizeof(w->floor_owner), "%s:%d", who, w->id);
    cr__line_free(&w->floor_line);
    bench_line(&w->floor_line, key);
}

static void
floor_open(worker *w)
{
    cr__script_id ids[2] = {CR__SCRIPT_LOCK_ACQUIRE, CR__SCRIPT_LOCK_UNLOCK};
    char key[32];

    load_scripts(w, ids, 2);
    snprintf(key, sizeof(key), "bench:floor:%d", w->id);
    floor_name(w, key, "bench-floor");
}

/* Reads one reply of the floor's connection; exits on failure or an
 * error reply. */
static redisReply *
floor_reply(worker *w)
{
    void *r = NULL;

    if (redisGetReply(w->redis, &r) != REDIS_OK || r == NULL)
        bench_die("floor: %s", w->redis->errstr);
    if (((redisReply *)r)->type == REDIS_REPLY_ERROR)
        bench_die("floor: redis error: %s", ((redisReply *)r)->str);
    return r;
}

/* Reads the replies of the commands the floor sent without waiting. */
static void
floor_drain(worker *w)
{
    for (; w->floor_pending > 0; w->floor_pending--)
        freeReplyObject(floor_reply(w));
}

/* Sends one command on the floor's connection and returns its reply,
 * read after those of the commands still pending. */
static redisReply *
floor_call(worker *w, int argc, const char **argv)
{
    redisAppendCommandArgv(w->redis, argc, argv, NULL);
    floor_drain(w);
    return floor_reply(w);
}

/* The same for the script call a cr__build_<name>() made (`built`, its
 * status, and `call`). */
static redisReply *
floor_script(worker *w, cr_status built, cr__script_call *call)
{
    bench_script_append(w->redis, built, call);
    floor_drain(w);
    return floor_reply(w);
}

/* The floor's acquire script on its lock key (and the reply of the last
 * cycle's latch DEL), ignoring the library's line as Redisson does. */
static void
floor_lock_cmds(worker *w)
{
    cr__script_call call;
    cr__lock_acquire_args a = bench_lock_acquire_args(w->floor_key, w->floor_owner,
                                                      FLOOR_LEASE_MS, &w->floor_line);
    redisReply *r = floor_script(w, cr__build_lock_acquire(&a, &call), &call);

    if (r->type != REDIS_REPLY_NIL)
        bench_die("floor: the lock was not free");
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

/* The floor's unlock script with a fresh latch, publishing to `channel`
 * (RLock's own channel of the floor's private key when NULL); the latch's
 * DEL goes out now and its reply is read with the next command's. */
static void
floor_unlock_cmds(worker *w, const char *channel)
{
    char latch[96], own[64];
    cr__script_call call;
    cr__lock_unlock_args a;
    const char *del[2] = {"DEL", latch};
    redisReply *r;

    if (channel == NULL) {
        snprintf(own, sizeof(own), "redisson_lock__channel:{%s}", w->floor_key);
        channel = own;
    }
    /* Per worker: the targeted floor's workers share one key. */
    snprintf(latch, sizeof(latch), "redisson_unlock_latch:{%s}:%d:%llx",
             w->floor_key, w->id, (unsigned long long)++w->floor_seq);
    a = bench_lock_unlock_args(w->floor_key, channel, latch, w->floor_owner,
                               FLOOR_LEASE_MS, &w->floor_line);
    r = floor_script(w, cr__build_lock_unlock(&a, &call), &call);
    /* 1: released, nobody heard; -n: released, n subscribers heard. */
    if (r->type != REDIS_REPLY_INTEGER || (r->integer != 1 && r->integer >= 0))
        bench_die("floor: the unlock failed");
    freeReplyObject(r);
    redisAppendCommandArgv(w->redis, 2, del, NULL);
    w->floor_pending++;
}

static void
floor_unlock(worker *w)
{
    floor_unlock_cmds(w, NULL);
    sem_post(&w->sh->floor_slot[(w->floor_ticket + 1) % (uint64_t)w->cfg->workers]);
}

static void
floor_close(worker *w)
{
    floor_drain(w);
    cr__line_free(&w->floor_line);
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

    load_scripts(w, ids, 2);
    snprintf(w->floor_sem_key, sizeof(w->floor_sem_key), "bench:floorsem:%d", w->id);
    floor_name(w, w->floor_sem_key, "bench-floor");
    freeReplyObject(bench_cmd(w->redis, "SET %s 1", w->floor_sem_key));
}

/* The semaphore's acquire script for one permit of the floor's key,
 * ignoring the library's line as Redisson does, with a fresh latch (its
 * DEL goes out with the release script). */
static void
floor_sem_acquire_cmds(worker *w)
{
    cr__script_call call;
    cr__semaphore_try_acquire_args a = {
        .permits = w->floor_sem_key, .latch = w->floor_sem_latch,
        .line = w->floor_line.key, .line_state = w->floor_line.state,
        .count_value = 1, .latch_ms = BENCH_LATCH_MS, .entry = w->floor_owner,
        .wait = BENCH_LINE_IGNORE, .line_lease_ms = BENCH_LINE_LEASE_MS,
        .turn_ms = BENCH_LINE_TURN_MS, .line_channel = w->floor_line.prefix,
        .publish = "publish"};
    redisReply *r;

    snprintf(w->floor_sem_latch, sizeof(w->floor_sem_latch),
             "credisson_semaphore_acquire:{%s}:%d:%llx", w->floor_sem_key, w->id,
             (unsigned long long)++w->floor_seq);
    r = floor_script(w, cr__build_semaphore_try_acquire(&a, &call), &call);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
        bench_die("floor_sem: the permit was not there");
    freeReplyObject(r);
}

/* The semaphore's release script for one permit, publishing to `channel`
 * (the semaphore's own channel when NULL), sent behind the DEL of the
 * acquire's latch; the DEL's reply is read first. (A DEL sent right after
 * the acquire went out with the first command of the critical section,
 * whose replies were then each read as the one before's: the GET of
 * --permits 1 saw the DEL's, and the counter stayed at 1.) */
static void
floor_sem_release_cmds(worker *w, const char *channel)
{
    char own[64];
    cr__script_call call;
    cr__semaphore_release_args a = {
        .permits = w->floor_sem_key, .channel = channel,
        .line = w->floor_line.key, .line_state = w->floor_line.state,
        .count_value = 1, .publish = "publish", .if_exists = 0,
        .line_lease_ms = BENCH_LINE_LEASE_MS, .turn_ms = BENCH_LINE_TURN_MS,
        .line_channel = w->floor_line.prefix};

    const char *del[2] = {"DEL", w->floor_sem_latch};

    if (channel == NULL) {
        snprintf(own, sizeof(own), "redisson_sc:{%s}", w->floor_sem_key);
        a.channel = own;
    }
    redisAppendCommandArgv(w->redis, 2, del, NULL);
    w->floor_pending++;
    freeReplyObject(floor_script(w, cr__build_semaphore_release(&a, &call), &call));
}

static void
floor_sem_lock(worker *w)
{
    while (sem_wait(&w->sh->floor_permits) != 0)
        ; /* EINTR */
    floor_sem_acquire_cmds(w);
}

static void
floor_sem_unlock(worker *w)
{
    floor_sem_release_cmds(w, NULL);
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
    floor_unlock_cmds(w, NULL);
    pthread_rwlock_unlock(&w->sh->floor_rw);
}

static void
floor_rw_lock_shared(worker *w)
{
    pthread_rwlock_rdlock(&w->sh->floor_rw);
    floor_lock_cmds(w);
}

/* ------------------------------------------------------------ the targeted floor */

/* The targeted floor (issue 30): bare hiredis clients hand the object over
 * the cheapest way the wire allows. Each waiter has a connection of its
 * own SUBSCRIBEd to a channel of its own; the line is kept here (tline),
 * so a releaser knows the next waiter and its release script (the object's
 * own, on the shared key) publishes to that waiter's channel alone; the
 * woken waiter runs one acquire script, which cannot fail. Per hand-over:
 * one release script, one message to one subscriber, one acquire script.
 * A write release that lets several readers in publishes to the first and
 * sends each of the others a PUBLISH behind the script. When the line was
 * empty as a release was sent and a waiter came while it was on its way,
 * that waiter is woken by a PUBLISH of its own once the release has
 * answered (a late wake, counted; also when two read releases reach the
 * server in the other order than they left the line). A release script
 * that grants the object to the waiter outright would save the acquire
 * script; that is not how a Redisson waiter is woken, and not this floor. */

#define TFLOOR_NOBODY "bench:tfloor:nobody"
#define TFLOOR_TURN_MAX_S 30 /* the longest a floor's waiter waits */

/* Writes worker `id`'s channel into buf, or the channel nobody listens to
 * when id < 0; returns buf. */
static const char *
tfloor_channel(char *buf, size_t n, int id)
{
    if (id < 0)
        snprintf(buf, n, "%s", TFLOOR_NOBODY);
    else
        snprintf(buf, n, "bench:tfloor:%d", id);
    return buf;
}

/* Puts worker `id` at the back of the line. */
static void
line_push(tline *l, int id, bool write)
{
    int at = (l->head + l->len) % MAX_WORKERS;

    l->q[at] = id;
    l->q_write[at] = write;
    l->len++;
}

/* Takes the first of the line; returns its id, or -1 when nobody waits. */
static int
line_pop(tline *l)
{
    int id;

    if (l->len == 0)
        return -1;
    id = l->q[l->head];
    l->head = (l->head + 1) % MAX_WORKERS;
    l->len--;
    return id;
}

/* Subscribes the worker's own connection to its own channel. */
static void
tfloor_subscribe(worker *w)
{
    char ch[48];
    void *r = NULL;

    w->sub = bench_redis(w->cfg->url);
    tfloor_channel(ch, sizeof(ch), w->id);
    if (redisAppendCommand(w->sub, "SUBSCRIBE %s", ch) != REDIS_OK ||
        redisGetReply(w->sub, &r) != REDIS_OK || r == NULL)
        bench_die("tfloor: SUBSCRIBE failed");
    freeReplyObject(r);
    /* A turn comes within a few holds: a floor that lost a wake-up fails
     * the run rather than hanging it. */
    if (redisSetTimeout(w->sub, (struct timeval){TFLOOR_TURN_MAX_S, 0}) !=
        REDIS_OK)
        bench_die("tfloor: cannot set a read timeout");
}

/* Blocks until the worker's channel brings its turn. */
static void
tfloor_await(worker *w)
{
    redisReply *r = NULL;

    if (redisGetReply(w->sub, (void **)&r) != REDIS_OK || r == NULL)
        bench_die("tfloor: no turn within %d s (%s)", TFLOOR_TURN_MAX_S,
                  w->sub->errstr);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        strcmp(r->element[0]->str, "message") != 0)
        bench_die("tfloor: a reply other than a message on the channel");
    freeReplyObject(r);
}

/* Wakes worker `id` with a PUBLISH of its own, now. */
static void
tfloor_wake_late(worker *w, int id)
{
    char ch[48];
    const char *pub[3] = {"PUBLISH", ch, "0"};

    tfloor_channel(ch, sizeof(ch), id);
    freeReplyObject(floor_call(w, 3, pub));
    atomic_fetch_add(&w->sh->late_wakes, 1);
}

/* Takes the object in the line's view when `free_now` says it is free
 * (and takes it), or joins the line and waits for its turn. */
static void
tfloor_enter(worker *w, bool (*free_now)(tline *l, bool write), bool write)
{
    tline *l = &w->sh->line;
    bool wait;

    pthread_mutex_lock(&l->mu);
    wait = !free_now(l, write);
    if (wait)
        line_push(l, w->id, write);
    pthread_mutex_unlock(&l->mu);
    if (wait)
        tfloor_await(w);
}

/* The lock: free when nobody holds it and nobody waits; takes it. */
static bool
lock_take(tline *l, bool write)
{
    (void)write;
    if (l->held || l->len > 0)
        return false;
    l->held = true;
    return true;
}

static void
tfloor_open(worker *w)
{
    cr__script_id ids[2] = {CR__SCRIPT_LOCK_ACQUIRE, CR__SCRIPT_LOCK_UNLOCK};

    load_scripts(w, ids, 2);
    floor_name(w, LOCK_NAME, "bench-tfloor");
    tfloor_subscribe(w);
}

static void
tfloor_lock(worker *w)
{
    tfloor_enter(w, lock_take, true);
    floor_lock_cmds(w);
}

/* A release of the lock or of a permit: to the first in line when there
 * is one (`cmds`, the release script, publishes to its channel; the local
 * state stays taken on its behalf); otherwise, once the script has
 * answered, to whoever came meanwhile (a late wake), or back to free
 * (`give_back`). */
static void
tfloor_release(worker *w, void (*cmds)(worker *w, const char *channel),
               void (*give_back)(tline *l))
{
    tline *l = &w->sh->line;
    char ch[48];
    int next;

    pthread_mutex_lock(&l->mu);
    next = line_pop(l);
    pthread_mutex_unlock(&l->mu);
    cmds(w, tfloor_channel(ch, sizeof(ch), next));
    if (next >= 0)
        return;
    pthread_mutex_lock(&l->mu);
    next = line_pop(l);
    if (next < 0)
        give_back(l);
    pthread_mutex_unlock(&l->mu);
    if (next >= 0)
        tfloor_wake_late(w, next);
}

/* The lock is free again. */
static void
lock_give_back(tline *l)
{
    l->held = false;
}

static void
tfloor_unlock(worker *w)
{
    tfloor_release(w, floor_unlock_cmds, lock_give_back);
}

static void
tfloor_close(worker *w)
{
    floor_close(w);
    redisFree(w->sub);
    w->sub = NULL;
}

/* The semaphore: a permit is free when one is left and nobody waits;
 * takes it. */
static bool
sem_take(tline *l, bool write)
{
    (void)write;
    if (l->avail == 0 || l->len > 0)
        return false;
    l->avail--;
    return true;
}

static void
tfloor_sem_open(worker *w)
{
    cr__script_id ids[2] = {CR__SCRIPT_SEMAPHORE_TRY_ACQUIRE,
                            CR__SCRIPT_SEMAPHORE_RELEASE};

    load_scripts(w, ids, 2);
    snprintf(w->floor_sem_key, sizeof(w->floor_sem_key), "%s", SEM_NAME);
    floor_name(w, SEM_NAME, "bench-tfloor");
    tfloor_subscribe(w);
}

static void
tfloor_sem_lock(worker *w)
{
    tfloor_enter(w, sem_take, true);
    floor_sem_acquire_cmds(w);
}

/* A permit is free again. */
static void
sem_give_back(tline *l)
{
    l->avail++;
}

static void
tfloor_sem_unlock(worker *w)
{
    tfloor_release(w, floor_sem_release_cmds, sem_give_back);
}

/* The read/write lock, writers preferred: a reader gets in when no writer
 * holds it and nobody waits (while readers hold, the first in line is a
 * writer); a writer when nobody holds it and nobody waits. Takes it. */
static bool
rw_take(tline *l, bool write)
{
    if (l->writer || l->w_releasing || l->len > 0 || (write && l->readers > 0))
        return false;
    if (write)
        l->writer = true;
    else
        l->readers++;
    return true;
}

static void
tfloor_rw_open(worker *w)
{
    cr__script_id ids[4] = {CR__SCRIPT_RWLOCK_READ_ACQUIRE, CR__SCRIPT_RWLOCK_READ_UNLOCK,
                            CR__SCRIPT_RWLOCK_WRITE_ACQUIRE, CR__SCRIPT_RWLOCK_WRITE_UNLOCK};

    load_scripts(w, ids, 4);
    floor_name(w, LOCK_NAME, "bench-tfloor");
    snprintf(w->tf_writer, sizeof(w->tf_writer), "%s:write", w->floor_owner);
    snprintf(w->tf_timeouts, sizeof(w->tf_timeouts), "{%s}:%s:rwlock_timeout",
             LOCK_NAME, w->floor_owner);
    tfloor_subscribe(w);
}

/* The write or read acquire script, ignoring the library's line; it
 * cannot fail after the floor's line gave the worker its turn. */
static void
tfloor_rw_acquire_cmds(worker *w, bool write)
{
    cr__script_call call;
    cr__rwlock_write_acquire_args wr = {
        .lock = w->floor_key, .line = w->floor_line.key,
        .line_state = w->floor_line.state, .lease_ms = FLOOR_LEASE_MS,
        .writer = w->tf_writer, .wait = BENCH_LINE_IGNORE,
        .line_lease_ms = BENCH_LINE_LEASE_MS, .turn_ms = BENCH_LINE_TURN_MS,
        .line_channel = w->floor_line.prefix, .publish = "publish"};
    cr__rwlock_read_acquire_args rd = {
        .lock = w->floor_key, .reader_timeouts = w->tf_timeouts,
        .line = w->floor_line.key, .line_state = w->floor_line.state,
        .lease_ms = FLOOR_LEASE_MS, .reader = w->floor_owner,
        .writer = w->tf_writer, .wait = BENCH_LINE_IGNORE,
        .line_lease_ms = BENCH_LINE_LEASE_MS, .turn_ms = BENCH_LINE_TURN_MS,
        .line_channel = w->floor_line.prefix, .publish = "publish"};
    redisReply *r = write
        ? floor_script(w, cr__build_rwlock_write_acquire(&wr, &call), &call)
        : floor_script(w, cr__build_rwlock_read_acquire(&rd, &call), &call);

    if (r->type != REDIS_REPLY_NIL)
        bench_die("tfloor_rw: the %s lock was not free", write ? "write" : "read");
    freeReplyObject(r);
}

/* The write or read unlock script with a fresh latch (its DEL goes out
 * now), publishing to the channel of wakes[0] (of nobody when n == 0);
 * wakes[1..n-1] get a PUBLISH each, sent behind the script on the same
 * connection, so after the release on the server. Returns the script's
 * reply (1: the lock was released and the message published). */
static long long
tfloor_rw_release_cmds(worker *w, bool write, const int *wakes, int n)
{
    char latch[96], prefix[40], ch[48];
    cr__script_call call;
    cr__rwlock_write_unlock_args wr = {
        .lock = w->floor_key, .channel = ch, .latch = latch,
        .line = w->floor_line.key, .line_state = w->floor_line.state,
        .message = 1, .lease_ms = FLOOR_LEASE_MS, .writer = w->tf_writer,
        .publish = "publish", .latch_ms = BENCH_LATCH_MS,
        .line_lease_ms = BENCH_LINE_LEASE_MS, .turn_ms = BENCH_LINE_TURN_MS,
        .line_channel = w->floor_line.prefix};
    cr__rwlock_read_unlock_args rd = {
        .lock = w->floor_key, .channel = ch, .reader_timeouts = w->tf_timeouts,
        .key_prefix = prefix, .latch = latch, .line = w->floor_line.key,
        .line_state = w->floor_line.state, .message = 0,
        .reader = w->floor_owner, .publish = "publish",
        .latch_ms = BENCH_LATCH_MS, .line_lease_ms = BENCH_LINE_LEASE_MS,
        .turn_ms = BENCH_LINE_TURN_MS, .line_channel = w->floor_line.prefix};
    const char *del[2] = {"DEL", latch};
    redisReply *r;
    long long v;
    int i;

    tfloor_channel(ch, sizeof(ch), n > 0 ? wakes[0] : -1);
    snprintf(prefix, sizeof(prefix), "{%s}", LOCK_NAME);
    snprintf(latch, sizeof(latch), "redisson_unlock_latch:{%s}:%d:%llx", LOCK_NAME,
             w->id, (unsigned long long)++w->floor_seq);
    if (write)
        bench_script_append(w->redis, cr__build_rwlock_write_unlock(&wr, &call), &call);
    else
        bench_script_append(w->redis, cr__build_rwlock_read_unlock(&rd, &call), &call);
    for (i = 1; i < n; i++) {
        char rch[48];
        const char *pub[3] = {"PUBLISH", rch, "1"};

        tfloor_channel(rch, sizeof(rch), wakes[i]);
        redisAppendCommandArgv(w->redis, 3, pub, NULL);
    }
    floor_drain(w);
    r = floor_reply(w);
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 0)
        bench_die("tfloor_rw: the %s unlock failed", write ? "write" : "read");
    v = r->integer;
    freeReplyObject(r);
    w->floor_pending += n > 1 ? n - 1 : 0;
    redisAppendCommandArgv(w->redis, 2, del, NULL);
    w->floor_pending++;
    return v;
}

static void
tfloor_rw_lock(worker *w)
{
    tfloor_enter(w, rw_take, true);
    tfloor_rw_acquire_cmds(w, true);
}

static void
tfloor_rw_lock_shared(worker *w)
{
    tfloor_enter(w, rw_take, false);
    tfloor_rw_acquire_cmds(w, false);
}

/* Hands the read/write lock to the first in line: a writer (`writer` set),
 * or every reader before the next writer. Stores their ids in `ids` and
 * returns how many; under the line's mutex. */
static int
rw_hand_over(tline *l, int *ids, bool *to_writer)
{
    int n = 0;

    *to_writer = l->len > 0 && l->q_write[l->head];
    if (*to_writer) {
        l->writer = true;
        ids[n++] = line_pop(l);
        return n;
    }
    while (l->len > 0 && !l->q_write[l->head]) {
        l->readers++;
        ids[n++] = line_pop(l);
    }
    return n;
}

/* A write release. The lock goes to the first in line as the script is
 * sent (a writer, or the readers before the next writer); otherwise, or
 * when it went to readers, `w_releasing` keeps newcomers in line until the
 * script has answered, so that nobody is let in before the server has let
 * the write hold go, and then it goes to those who came meanwhile. */
static void
tfloor_rw_unlock(worker *w)
{
    tline *l = &w->sh->line;
    int ids[MAX_WORKERS], n, i;
    bool to_writer;

    pthread_mutex_lock(&l->mu);
    n = rw_hand_over(l, ids, &to_writer);
    if (!to_writer) {
        l->writer = false;
        l->w_releasing = true;
    }
    pthread_mutex_unlock(&l->mu);
    tfloor_rw_release_cmds(w, true, ids, n);
    if (to_writer)
        return;
    pthread_mutex_lock(&l->mu);
    l->w_releasing = false;
    if (l->readers == 0 && !l->writer) {
        /* Nobody holds it: it went to nobody, or the readers it went to
         * have all left while this release was on its way (the last of
         * them handed nothing on, as it was). The first in line gets it,
         * a writer too. */
        n = rw_hand_over(l, ids, &to_writer);
    } else {
        /* Readers that came meanwhile with no writer before them join the
         * readers the lock went to, unless those have all left already and
         * handed it to a writer. */
        n = 0;
        while (!l->writer && l->len > 0 && !l->q_write[l->head]) {
            l->readers++;
            ids[n++] = line_pop(l);
        }
    }
    pthread_mutex_unlock(&l->mu);
    for (i = 0; i < n; i++)
        tfloor_wake_late(w, ids[i]);
}

/* A read release. The reader that leaves last in this line's view hands
 * the lock to the writer first in line, and its script publishes to it.
 * (A reader can be first in line only while a write release that let
 * readers in is still on its way: that release lets it join.) When the
 * server ran another reader's script last (which published to nobody),
 * the wake-up is owed and sent once every read release has answered. */
static void
tfloor_rw_unlock_shared(worker *w)
{
    tline *l = &w->sh->line;
    int target = -1, late[MAX_WORKERS], nlate = 0, i;
    long long r;

    pthread_mutex_lock(&l->mu);
    l->leaving++;
    if (l->readers == l->leaving && l->len > 0 && l->q_write[l->head]) {
        target = line_pop(l);
        l->writer = true;
    }
    pthread_mutex_unlock(&l->mu);
    r = tfloor_rw_release_cmds(w, false, &target, target >= 0 ? 1 : 0);
    pthread_mutex_lock(&l->mu);
    l->readers--;
    l->leaving--;
    if (target >= 0 && r != 1)
        l->owed = target;
    if (l->readers == 0) {
        if (l->owed >= 0) {
            late[nlate++] = l->owed;
            l->owed = -1;
        } else if (!l->writer && !l->w_releasing) {
            bool to_writer;

            nlate = rw_hand_over(l, late, &to_writer);
        }
    }
    pthread_mutex_unlock(&l->mu);
    for (i = 0; i < nlate; i++)
        tfloor_wake_late(w, late[i]);
}

/* Every implementation this program knows; `kind` marks the credisson lock
 * kinds other than RLock, which run.sh lists with --list-kinds. A new kind
 * takes one line here and an open function that makes its handle. */
static const impl impls[] = {
    {"rlock", false, true, rlock_open, rlock_lock, rlock_unlock, close_handles,
     NULL, NULL, "lock"},
    {"rlock_lease", false, true, rlock_open, rlock_lease_lock, rlock_unlock,
     close_handles, NULL, NULL, NULL},
    {"floor", false, false, floor_open, floor_lock, floor_unlock, floor_close,
     NULL, NULL, NULL},
    {"naive", false, false, naive_open, naive_do_lock, naive_do_unlock, naive_close,
     NULL, NULL, NULL},
    {"fair", true, true, fair_open, rlock_lock, rlock_unlock, close_handles, NULL, NULL, NULL},
    {"write", true, true, write_open, rlock_lock, rlock_unlock, write_close, NULL, NULL, NULL},
    {"spin", true, true, spin_open, rlock_lock, rlock_unlock, close_handles, NULL, NULL, NULL},
    {"semaphore", true, true, semaphore_open, sem_lock, sem_unlock, semaphore_close,
     NULL, NULL, "sem"},
    {"permit_semaphore", true, true, pes_open, pes_lock, pes_unlock, pes_close,
     NULL, NULL, NULL},
    /* Only with --permits or --read-share (scenarios 4 and 5). */
    {"floor_sem", false, false, floor_sem_open, floor_sem_lock, floor_sem_unlock,
     floor_sem_close, NULL, NULL, NULL},
    {"rwlock", false, true, rwlock_open, rlock_lock, rlock_unlock, rwlock_close,
     read_lock, read_unlock, NULL},
    {"floor_rw", false, false, floor_open, floor_rw_lock, floor_rw_unlock, floor_close,
     floor_rw_lock_shared, floor_rw_unlock, NULL},
    /* The targeted floors: tfloor (RLock's scripts), tfloor_sem (the
     * semaphore's, with --permits), tfloor_rw (the read/write lock's, with
     * --read-share). */
    {"tfloor", false, false, tfloor_open, tfloor_lock, tfloor_unlock, tfloor_close,
     NULL, NULL, NULL},
    {"tfloor_sem", false, false, tfloor_sem_open, tfloor_sem_lock, tfloor_sem_unlock,
     tfloor_close, NULL, NULL, NULL},
    {"tfloor_rw", false, false, tfloor_rw_open, tfloor_rw_lock, tfloor_rw_unlock,
     tfloor_close, tfloor_rw_lock_shared, tfloor_rw_unlock_shared, NULL},
    /* The real Java Redisson client (bench/redisson_peer, --java-cp):
     * RLock, and RSemaphore with --permits; threads of one JVM, or JVM
     * processes. */
    {"redisson", false, false, NULL, NULL, NULL, NULL, NULL, NULL, "lock"},
    {"redisson_sem", false, false, NULL, NULL, NULL, NULL, NULL, NULL, "sem"},
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
    /* One holder at a time, all of them C workers: the handovers can be
     * timed. */
    bool exclusive = cfg->permits == 1 && cfg->read_share == 0 && cfg->java_workers == 0;
    uint64_t cycles = 0, writes = 0;
    int64_t wait_max = 0;

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
        if (t1 - t0 > wait_max)
            wait_max = t1 - t0;
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
    sh->w_cycles[w->id] = cycles;
    sh->w_wait_max[w->id] = wait_max;
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

/* Sets up the floors' process-shared primitives for `workers` workers
 * and `permits` permits: the instant floor's ticket slots, floor_sem's
 * semaphore, the targeted floors' line and floor_rw's rwlock. */
static void
floors_init(shared *sh, int workers, int permits)
{
    pthread_rwlockattr_t rwa;
    pthread_mutexattr_t ma;
    int i;

    for (i = 0; i < workers; i++)
        sem_init(&sh->floor_slot[i], 1, i == 0 ? 1 : 0);
    sem_init(&sh->floor_permits, 1, (unsigned)permits);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->line.mu, &ma);
    pthread_mutexattr_destroy(&ma);
    sh->line.avail = permits;
    sh->line.owed = -1;
    pthread_rwlockattr_init(&rwa);
    pthread_rwlockattr_setpshared(&rwa, PTHREAD_PROCESS_SHARED);
    pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&sh->floor_rw, &rwa);
    pthread_rwlockattr_destroy(&rwa);
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

/* ------------------------------------------------------------ the Java peer */

/* One JVM running bench/redisson_peer's worker mode, driven through its
 * stdin and stdout (the protocol is in RedissonPeer.java's header). */
typedef struct jvm {
    pid_t pid;
    int to;     /* its stdin */
    int from;   /* its stdout */
    char *buf;  /* bytes read and not yet returned as a line */
    size_t len, cap;
} jvm;

/* Starts a JVM whose `threads` threads take `kind` ("lock": RLock
 * LOCK_NAME; "sem": RSemaphore SEM_NAME) with cfg's URL and permits. */
static void
jvm_start(jvm *v, const run_cfg *cfg, const char *kind, int threads)
{
    int in[2], out[2];
    char nthreads[16], permits[16];

    snprintf(nthreads, sizeof(nthreads), "%d", threads);
    snprintf(permits, sizeof(permits), "%d", cfg->permits);
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        bench_die("pipe failed");
    fflush(NULL);
    v->pid = fork();
    if (v->pid < 0)
        bench_die("fork failed");
    if (v->pid == 0) {
        const char *argv[] = {"java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
                              "-cp", cfg->java_cp, "RedissonPeer", "--url", cfg->url,
                              "worker", kind,
                              strcmp(kind, "sem") == 0 ? SEM_NAME : LOCK_NAME,
                              nthreads, permits, NULL};

        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execvp("java", (char *const *)argv);
        fprintf(stderr, "bench_lock: cannot run java\n");
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    v->to = in[1];
    v->from = out[0];
    v->buf = NULL;
    v->len = v->cap = 0;
}

/* Reads the JVM's next line before `deadline` (bench_now_ns); exits when
 * the JVM ends or is late. Returns the line without its newline, owned by
 * the jvm until the next call. */
static char *
jvm_line(jvm *v, int64_t deadline, size_t *consumed)
{
    for (;;) {
        char *nl = v->len > 0 ? memchr(v->buf, '\n', v->len) : NULL;
        struct pollfd pfd = {v->from, POLLIN, 0};
        int64_t left = deadline - bench_now_ns();
        ssize_t n;

        if (nl != NULL) {
            *nl = '\0';
            *consumed = (size_t)(nl - v->buf) + 1;
            return v->buf;
        }
        if (left <= 0)
            bench_die("the Java peer (pid %d) did not answer in time", (int)v->pid);
        if (poll(&pfd, 1, (int)(left / 1000000 + 1)) <= 0)
            continue;
        if (v->cap - v->len < 65536) {
            v->cap = v->cap * 2 + 65536;
            v->buf = realloc(v->buf, v->cap);
            if (v->buf == NULL)
                bench_die("out of memory");
        }
        n = read(v->from, v->buf + v->len, v->cap - v->len);
        if (n <= 0)
            bench_die("the Java peer (pid %d) ended early; run it by hand to see why",
                      (int)v->pid);
        v->len += (size_t)n;
    }
}

/* Drops the line jvm_line returned. */
static void
jvm_consume(jvm *v, size_t consumed)
{
    memmove(v->buf, v->buf + consumed, v->len - consumed);
    v->len -= consumed;
}

/* Waits for the JVM's "ready" (its start and warm-up: a minute at most,
 * for many JVMs on few cores). */
static void
jvm_await_ready(jvm *v)
{
    size_t used;
    char *line = jvm_line(v, bench_now_ns() + 120 * (int64_t)1000000000, &used);

    if (strcmp(line, "ready") != 0)
        bench_die("the Java peer said \"%s\" instead of ready", line);
    jvm_consume(v, used);
}

/* Tells the JVM to run until end_ns. */
static void
jvm_go(jvm *v, int64_t start_ns, int64_t end_ns)
{
    char go[64];
    int n = snprintf(go, sizeof(go), "go %lld %lld\n", (long long)start_ns,
                     (long long)end_ns);

    if (write(v->to, go, (size_t)n) != n)
        bench_die("cannot write to the Java peer");
}

/* Reads the JVM's results into the run's samples and its workers' slots
 * from `first` on, waits for it to exit; returns the cycles. */
static uint64_t
jvm_collect(jvm *v, shared *sh, int first)
{
    int64_t deadline = bench_now_ns() + 60 * (int64_t)1000000000;
    uint64_t cycles = 0;
    int id = first, status = 0;

    for (;;) {
        size_t used;
        char *line = jvm_line(v, deadline, &used), *p, *q;
        unsigned long long c, mx;

        if (strcmp(line, "done") == 0) {
            jvm_consume(v, used);
            break;
        }
        if (strncmp(line, "worker ", 7) != 0)
            bench_die("the Java peer said \"%.60s\"", line);
        c = strtoull(line + 7, &p, 10);
        mx = strtoull(p, &p, 10);
        for (;;) {
            unsigned long long w = strtoull(p, &q, 10);

            if (q == p)
                break;
            bench_samples_add(&sh->waits, (int64_t)w);
            p = q;
        }
        sh->w_cycles[id] = c;
        sh->w_wait_max[id] = (int64_t)mx;
        id++;
        cycles += c;
        jvm_consume(v, used);
    }
    close(v->to);
    close(v->from);
    free(v->buf);
    if (waitpid(v->pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_die("the Java peer (pid %d) failed", (int)v->pid);
    return cycles;
}

/* Runs one measurement and prints its JSON line: cfg->workers workers of
 * cfg->im, and cfg->java_workers Java workers beside them (a mixed run). */
static void
run(const run_cfg *cfg)
{
    bool java_only = cfg->im->open == NULL;
    int kc = java_only ? 0 : cfg->workers;                  /* C workers */
    int kj = java_only ? cfg->workers : cfg->java_workers;  /* Java workers */
    bool jprocs = java_only ? cfg->procs : cfg->java_procs;
    int njvm = kj == 0 ? 0 : jprocs ? kj : 1, k = kc + kj;
    bool mixed = kc > 0 && kj > 0;
    shared *sh = bench_shared(sizeof(*sh));
    redisContext *rc = bench_redis(cfg->url);
    worker *ws = calloc((size_t)k + 1, sizeof(*ws));
    pthread_t *tids = calloc((size_t)k + 1, sizeof(*tids));
    pid_t *pids = calloc((size_t)k + 1, sizeof(*pids));
    jvm *jvms = calloc((size_t)njvm + 1, sizeof(*jvms));
    cr_client *shared_client = NULL;
    uint64_t writes, cycles, c_cycles = 0, j_cycles = 0, wmin = UINT64_MAX, wmax = 0;
    int64_t start, end, c_wait_max = 0, j_wait_max = 0;
    double cpu0, cpu1, elapsed;
    long long counter;
    bench_json j;
    int i;

    if (ws == NULL || tids == NULL || pids == NULL || jvms == NULL)
        bench_die("out of memory");
    if (k > MAX_WORKERS)
        bench_die("at most %d workers in all", MAX_WORKERS);
    if (kj > 0 && (cfg->im->java == NULL || cfg->java_cp == NULL))
        bench_die("Java workers need --java-cp and an impl the Java peer has (rlock, "
                  "semaphore)");
    floors_init(sh, kc, cfg->permits);
    sh->last_holder = -1;
    bench_samples_init(&sh->waits, MAX_SAMPLES, true);
    bench_samples_init(&sh->handoffs, MAX_SAMPLES, true);
    if (cfg->read_share > 0) {
        bench_samples_init(&sh->read_waits, MAX_SAMPLES, true);
        bench_samples_init(&sh->write_waits, MAX_SAMPLES, true);
    }
    reset_keys(rc, cfg->permits);
    /* The JVMs first: their start and warm-up take seconds, during which
     * the C workers would only poll for the start. */
    for (i = 0; i < njvm; i++)
        jvm_start(&jvms[i], cfg, cfg->im->java, jprocs ? 1 : kj);
    for (i = 0; i < njvm; i++)
        jvm_await_ready(&jvms[i]);
    if (kc > 0 && !cfg->procs && cfg->im->uses_client)
        shared_client = bench_client(cfg->url);
    cpu0 = bench_cpu_s();
    for (i = 0; i < kc; i++) {
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
    wait_ready(sh, kc, cfg->procs);
    start = bench_now_ns();
    end = start + (int64_t)(cfg->seconds * 1e9);
    for (i = 0; i < njvm; i++)
        jvm_go(&jvms[i], start, end);
    atomic_store(&sh->go, 1);
    bench_sleep_ns(end - start);
    atomic_store(&sh->stop, 1);
    for (i = 0; i < kc; i++) {
        if (cfg->procs) {
            int status = 0;

            if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0)
                bench_die("worker process %d failed", i);
        } else {
            pthread_join(tids[i], NULL);
        }
    }
    /* The C workers end their last cycle after the stop; the Java workers
     * start none after `end`. */
    if (kc > 0)
        end = bench_now_ns();
    cpu1 = bench_cpu_s();
    for (i = 0; i < njvm; i++)
        j_cycles += jvm_collect(&jvms[i], sh, kc + (jprocs ? i : 0));
    if (shared_client != NULL) {
        cr_client_stats st = CR_CLIENT_STATS_INIT;

        if (cr_client_stats_get(shared_client, &st) == CR_OK) {
            atomic_fetch_add(&sh->commands, st.commands);
            atomic_fetch_add(&sh->messages, st.messages);
        }
        cr_client_free(shared_client);
    }
    elapsed = (double)(end - start) / 1e9;
    c_cycles = atomic_load(&sh->cycles);
    cycles = c_cycles + j_cycles;
    writes = atomic_load(&sh->writes) + j_cycles;
    counter = read_counter(rc);
    reset_keys(rc, cfg->permits);
    bench_samples_sort(&sh->waits);
    bench_samples_sort(&sh->handoffs);
    for (i = 0; i < k; i++) {
        int64_t *side = i < kc ? &c_wait_max : &j_wait_max;

        if (sh->w_wait_max[i] > *side)
            *side = sh->w_wait_max[i];
        if (sh->w_cycles[i] < wmin)
            wmin = sh->w_cycles[i];
        if (sh->w_cycles[i] > wmax)
            wmax = sh->w_cycles[i];
    }

    bench_json_begin(&j, mixed                 ? "s13_mixed"
                         : cfg->read_share > 0 ? "s4_rwlock"
                         : cfg->permits > 1    ? "s5_semaphore"
                                               : "s2_contended");
    bench_json_str(&j, "impl", cfg->im->name);
    bench_json_str(&j, "mode", cfg->procs ? "procs" : "threads");
    bench_json_int(&j, "workers", k);
    bench_json_int(&j, "permits", cfg->permits);
    bench_json_int(&j, "read_share", cfg->read_share);
    bench_json_num(&j, "seconds", elapsed);
    bench_json_int(&j, "cycles", (int64_t)cycles);
    bench_json_num(&j, "rate", (double)cycles / elapsed);
    if (cfg->counter) {
        bench_json_int(&j, "counter", counter);
        bench_json_bool(&j, "counter_exact", counter == (long long)writes);
    }
    if (kj == 0) {
        /* The Java workers stamp nothing in shared memory. */
        bench_json_num(&j, "in_order_share",
                       cycles > 0 ? (double)atomic_load(&sh->in_order) / (double)cycles : 0);
        bench_json_num(&j, "passed_mean",
                       cycles > 0 ? (double)atomic_load(&sh->passed) / (double)cycles : 0);
    }
    if (cfg->read_share > 0) {
        bench_samples *rw[2] = {&sh->read_waits, &sh->write_waits};
        const char *names[2][4] = {
            {"reads", "read_wait_p50_us", "read_wait_p99_us", "read_wait_max_us"},
            {"writes", "write_wait_p50_us", "write_wait_p99_us", "write_wait_max_us"}};
        int n;

        for (n = 0; n < 2; n++) {
            bench_samples_sort(rw[n]);
            bench_json_int(&j, names[n][0], (int64_t)bench_samples_count(rw[n]));
            bench_json_num(&j, names[n][1], (double)bench_pct(rw[n], 50) / 1e3);
            bench_json_num(&j, names[n][2], (double)bench_pct(rw[n], 99) / 1e3);
            bench_json_num(&j, names[n][3], (double)bench_pct(rw[n], 100) / 1e3);
        }
    }
    bench_json_int(&j, "violations", (int64_t)atomic_load(&sh->violations));
    bench_json_num(&j, "wait_p50_us", (double)bench_pct(&sh->waits, 50) / 1e3);
    bench_json_num(&j, "wait_p99_us", (double)bench_pct(&sh->waits, 99) / 1e3);
    bench_json_num(&j, "wait_max_us", (double)bench_pct(&sh->waits, 100) / 1e3);
    bench_json_num(&j, "wait_mean_us", bench_mean(&sh->waits) / 1e3);
    if (kj == 0 && k > 1 && cfg->permits == 1 && cfg->read_share == 0) {
        bench_json_int(&j, "handovers", (int64_t)sh->handovers);
        bench_json_num(&j, "handoff_p50_us",
                       (double)bench_pct(&sh->handoffs, 50) / 1e3);
        bench_json_num(&j, "handoff_p99_us",
                       (double)bench_pct(&sh->handoffs, 99) / 1e3);
        bench_json_num(&j, "self_share",
                       cycles > 1 ? (double)sh->self_reacquire / (double)(cycles - 1) : 0);
    }
    bench_json_num(&j, "cycle_us", cycles > 0 ? elapsed * 1e6 / (double)cycles : 0);
    /* A worker's fair share of a wait: one turn of every worker. */
    bench_json_num(&j, "fair_share_us",
                   cycles > 0 ? (double)k * elapsed * 1e6 / (double)cycles : 0);
    bench_json_int(&j, "worker_cycles_min", (int64_t)wmin);
    bench_json_int(&j, "worker_cycles_max", (int64_t)wmax);
    if (kj > 0) {
        bench_json_str(&j, "java_mode", jprocs ? "procs" : "threads");
        bench_json_int(&j, "jvms", njvm);
    }
    if (mixed) {
        bench_json_str(&j, "peer", "redisson");
        bench_json_int(&j, "c_workers", kc);
        bench_json_int(&j, "java_workers", kj);
        bench_json_int(&j, "c_cycles", (int64_t)c_cycles);
        bench_json_int(&j, "java_cycles", (int64_t)j_cycles);
        bench_json_num(&j, "c_wait_max_us", (double)c_wait_max / 1e3);
        bench_json_num(&j, "java_wait_max_us", (double)j_wait_max / 1e3);
    }
    if (strncmp(cfg->im->name, "tfloor", 6) == 0)
        bench_json_num(&j, "late_wakes_per_cycle",
                       cycles > 0 ? (double)atomic_load(&sh->late_wakes) / (double)cycles : 0);
    if (kc > 0 && !cfg->procs)
        bench_json_num(&j, "client_cpu_us_per_cycle",
                       cycles > 0 ? (cpu1 - cpu0) * 1e6 / (double)cycles : 0);
    if (cfg->im->uses_client)
        bench_json_num(&j, "commands_per_cycle",
                       c_cycles > 0 ? (double)atomic_load(&sh->commands) / (double)c_cycles
                                    : 0);
    bench_json_end(&j);

    if (cfg->counter && counter != (long long)writes)
        fprintf(stderr, "bench_lock: counter %lld != %llu writes\n", counter,
                (unsigned long long)writes);
    redisFree(rc);
    free(ws);
    free(tids);
    free(pids);
    free(jvms);
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
    cr__line ceil_line;
    cr__lock_acquire_args ceil_args;
    cr__script_call acq;
    char nk[24];
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
    floors_init(sh, 1, cfg->permits);
    memset(&w, 0, sizeof(w));
    w.cfg = cfg;
    w.sh = sh;
    w.redis = bench_redis(cfg->url);
    bench_script_load(w.redis, CR__SCRIPT_LOCK_ACQUIRE);
    /* The ceiling: RLock's acquire script on a key this thread holds after
     * its first call (the reentrant path), as the library sends it. */
    bench_line(&ceil_line, "bench:s1:ceiling");
    ceil_args = bench_lock_acquire_args("bench:s1:ceiling", "bench-owner:1",
                                        FLOOR_LEASE_MS, &ceil_line);
    bench_script_argv(cr__build_lock_acquire(&ceil_args, &acq), &acq, nk);
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
            freeReplyObject(bench_cmd_argv(w.redis, (int)acq.argc, acq.argv, acq.lens));
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
    cr__script_call_free(&acq);
    cr__line_free(&ceil_line);
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
        strcmp(cfg.im->name, "floor_sem") != 0 && strcmp(cfg.im->name, "tfloor_sem") != 0 &&
        strcmp(cfg.im->name, "redisson_sem") != 0)
        bench_die("--permits is for semaphore, floor_sem, tfloor_sem and redisson_sem");
    mode = bench_opt(&a, "--mode", "threads");
    cfg.procs = strcmp(mode, "procs") == 0;
    if (!cfg.procs && strcmp(mode, "threads") != 0)
        bench_die("--mode is threads or procs");
    cfg.java_cp = bench_opt(&a, "--java-cp", NULL);
    cfg.java_workers = atoi(bench_opt(&a, "--java-workers", "0"));
    mode = bench_opt(&a, "--java-mode", "threads");
    cfg.java_procs = strcmp(mode, "procs") == 0;
    if (!cfg.java_procs && strcmp(mode, "threads") != 0)
        bench_die("--java-mode is threads or procs");
    if (cfg.java_workers < 0 || cfg.java_workers > MAX_WORKERS)
        bench_die("--java-workers must be in 0..%d", MAX_WORKERS);
    if (cfg.im->open == NULL && strcmp(cfg.scenario, "contended") != 0)
        bench_die("the Java peer's pairs are RedissonPeer's own mode (pairs)");
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
