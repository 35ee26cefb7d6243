/* SPDX-License-Identifier: MIT */
/*
 * Fault tests: contended runs of every lock kind and of the semaphores
 * while the server is restarted, connections are killed, scripts are
 * flushed and the server stalls, and single holders that are paused,
 * killed, forked or whose client is freed under them. Every worker records
 * its holds in a history (history.h); each test checks that no two holders
 * overlapped where the model promises exclusion (at most `permits` for a
 * semaphore) and that no worker hung, and prints the counts.
 *
 * A restart of a server without persistence loses every lock, so a waiter
 * may get a lock whose holder still believes it holds it: exclusion is
 * then lost by design. The restart test runs its own server with
 * appendonly yes and appendfsync always instead, so the locks and their
 * expiry times survive the restart and the run must show no overlap.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "credisson/rwlock.h"
#include "history.h"
#include "lock_common.h"

/* ------------------------------------------------------------- objects */

/* One handle on a synchronizer of any kind, used the same way by workers:
 * acquire with a wait, release. */
typedef struct obj {
    const char *kind;
    cr_lock *lock;
    cr_rwlock *rw;
    cr_semaphore *sem;
    cr_permit_semaphore *psem;
    char permit_id[33];
} obj;

/* The kinds a contended run covers, and how many may hold each at once. */
static const struct {
    const char *kind;
    int permits;
} kinds[] = {
    {"lock", 1},  {"fenced", 1}, {"spin", 1},      {"nonreentrant", 1},
    {"fair", 1},  {"write", 1},  {"semaphore", 2}, {"permit_semaphore", 2},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Opens `kind` named `name` on client `c` into *o. A semaphore gets
 * `permits` permits if it does not exist yet. */
static cr_status
obj_open(cr_client *c, const char *kind, const char *name, int permits, obj *o)
{
    cr_status rc;

    memset(o, 0, sizeof(*o));
    o->kind = kind;
    if (strcmp(kind, "lock") == 0)
        return cr_lock_new(c, name, &o->lock);
    if (strcmp(kind, "fenced") == 0)
        return cr_fenced_lock_new(c, name, &o->lock);
    if (strcmp(kind, "spin") == 0)
        return cr_spin_lock_new(c, name, &o->lock);
    if (strcmp(kind, "nonreentrant") == 0)
        return cr_non_reentrant_lock_new(c, name, &o->lock);
    if (strcmp(kind, "fair") == 0)
        return cr_fair_lock_new(c, name, &o->lock);
    if (strcmp(kind, "write") == 0) {
        rc = cr_rwlock_new(c, name, &o->rw);
        if (rc == CR_OK)
            o->lock = cr_rwlock_write_lock(o->rw);
        return rc;
    }
    if (strcmp(kind, "semaphore") == 0) {
        rc = cr_semaphore_new(c, name, &o->sem);
        if (rc == CR_OK)
            rc = cr_semaphore_try_set_permits(o->sem, permits, 0, NULL);
        return rc;
    }
    if (strcmp(kind, "permit_semaphore") == 0) {
        rc = cr_permit_semaphore_new(c, name, &o->psem);
        if (rc == CR_OK)
            rc = cr_permit_semaphore_try_set_permits(o->psem, permits, NULL);
        return rc;
    }
    return CR_EINVAL;
}

/* Acquires o (one permit of a semaphore), waiting at most wait_ms. Locks
 * and the permit semaphore's permits are taken with the watchdog or a
 * lease of 10 s. */
static cr_status
obj_acquire(obj *o, int64_t wait_ms)
{
    if (o->sem != NULL)
        return cr_semaphore_try_acquire(o->sem, 1, wait_ms);
    if (o->psem != NULL)
        return cr_permit_semaphore_try_acquire(o->psem, wait_ms, 10000,
                                               o->permit_id);
    return cr_lock_try_lock(o->lock, wait_ms, CR_LEASE_WATCHDOG);
}

/* Releases what obj_acquire took. */
static cr_status
obj_release(obj *o)
{
    if (o->sem != NULL)
        return cr_semaphore_release(o->sem, 1);
    if (o->psem != NULL)
        return cr_permit_semaphore_release(o->psem, o->permit_id);
    return cr_lock_unlock(o->lock);
}

/* Frees o's handle (an rwlock with its sides). */
static void
obj_close(obj *o)
{
    if (o->rw != NULL)
        cr_rwlock_free(o->rw);
    else
        cr_lock_free(o->lock);
    cr_semaphore_free(o->sem);
    cr_permit_semaphore_free(o->psem);
    memset(o, 0, sizeof(*o));
}

/* ------------------------------------------------------ contended runs */

#define WORKERS_PER_GROUP 3
#define NSTATUS (CR_ENOTSUP + 1)

typedef struct run run;
typedef struct group group;

typedef struct worker {
    run *run;
    group *group;
    int index;
    obj o;
    pthread_t thread;
} worker;

/* The workers of one object, and what they recorded. */
struct group {
    const char *kind;
    int permits;
    char name[64];
    cr_hist *hist;
    worker w[WORKERS_PER_GROUP];
    atomic_int errors[NSTATUS];
    char first_error[NSTATUS][160]; /* cr_last_error() of the first one */
};

/* A contended run: a group per kind, its workers spread over two clients. */
struct run {
    group g[NKINDS];
    cr_client *clients[2];
    atomic_bool stop;
    int64_t wait_ms;
    long hold_ns;
};

/* Sleeps `ns` nanoseconds. */
static void
nap_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Counts a status a worker did not expect, keeping the first detail. */
static void
count_error(group *g, cr_status rc)
{
    int s = rc > 0 && rc < NSTATUS ? (int)rc : 0;

    if (atomic_fetch_add(&g->errors[s], 1) == 0)
        snprintf(g->first_error[s], sizeof(g->first_error[s]), "%s",
                 cr_last_error());
}

/* Worker thread: acquire, record, bump, hold a moment, release, until told
 * to stop. Statuses other than "acquired" and "busy" are counted. */
static void *
worker_run(void *arg)
{
    worker *w = arg;
    group *g = w->group;
    cr_status rc;

    while (!atomic_load(&w->run->stop)) {
        long ev;

        rc = obj_acquire(&w->o, w->run->wait_ms);
        if (rc == CR_BUSY)
            continue;
        if (rc != CR_OK) {
            count_error(g, rc);
            nap_ns(10000000L);
            continue;
        }
        ev = cr_hist_begin(g->hist, w->index);
        if (g->permits == 1)
            cr_hist_bump(g->hist);
        nap_ns(w->run->hold_ns);
        cr_hist_end(g->hist, ev);
        rc = obj_release(&w->o);
        if (rc != CR_OK)
            count_error(g, rc);
    }
    cr_hist_done(g->hist, w->index);
    return NULL;
}

/* A client for fault runs: short timeouts so that faults are seen quickly,
 * a reconnect window of a few seconds, a pool for many threads. */
static cr_client *
fault_client(const cr_test_redis *srv, int64_t watchdog_ms,
             int64_t command_timeout_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = srv->url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.command_timeout_ms = command_timeout_ms;
    o.connect_timeout_ms = command_timeout_ms;
    o.reconnect_window_ms = slow(5000);
    o.pool_size = 8;
    if (cr_client_new(&o, &c) != CR_OK) {
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
        return NULL;
    }
    return c;
}

/* Starts a run on server `srv`: two clients and WORKERS_PER_GROUP threads
 * per kind, each object named after the scenario and its kind. */
static void
run_start(run *r, const cr_test_redis *srv, const char *scenario,
          int64_t watchdog_ms, int64_t command_timeout_ms)
{
    size_t k;
    int i;

    memset(r, 0, sizeof(*r));
    r->wait_ms = 1000;
    r->hold_ns = 1000000L;
    for (i = 0; i < 2; i++) {
        r->clients[i] = fault_client(srv, watchdog_ms, command_timeout_ms);
        assert_non_null(r->clients[i]);
    }
    for (k = 0; k < NKINDS; k++) {
        group *g = &r->g[k];

        g->kind = kinds[k].kind;
        g->permits = kinds[k].permits;
        snprintf(g->name, sizeof(g->name), "%s-%s", scenario, g->kind);
        g->hist = cr_hist_new(100000, WORKERS_PER_GROUP);
        assert_non_null(g->hist);
        for (i = 0; i < WORKERS_PER_GROUP; i++) {
            worker *w = &g->w[i];

            w->run = r;
            w->group = g;
            w->index = i;
            assert_int_equal(obj_open(r->clients[i % 2], g->kind, g->name,
                                      g->permits, &w->o), CR_OK);
        }
    }
    for (k = 0; k < NKINDS; k++)
        for (i = 0; i < WORKERS_PER_GROUP; i++)
            assert_int_equal(pthread_create(&r->g[k].w[i].thread, NULL,
                                            worker_run, &r->g[k].w[i]), 0);
}

/* Sleeps `ms` while the workers run (the fault schedules are timed). */
static void
run_for(int64_t ms)
{
    nap_ns((long)(ms % 1000) * 1000000L);
    if (ms >= 1000)
        sleep((unsigned)(ms / 1000));
}

/* Stops a run and checks every group: no overlap beyond its permits, no
 * worker still running after a generous deadline, the guarded counter
 * exact (locks only: a semaphore's holders bump it together). Statuses other than `allowed` (a bit per cr_status, CR_OK always
 * allowed) fail the test. Prints the counts. */
static void
run_stop(run *r, const char *scenario, unsigned allowed)
{
    size_t k;
    int i, s;
    cr_hist_report rep[NKINDS];
    bool all_done = true;

    atomic_store(&r->stop, true);
    for (k = 0; k < NKINDS; k++)
        if (!cr_hist_wait_done(r->g[k].hist, slow(15000)))
            all_done = false;
    for (k = 0; k < NKINDS; k++) {
        group *g = &r->g[k];
        char label[96];

        cr_hist_check(g->hist, g->permits, &rep[k]);
        snprintf(label, sizeof(label), "%s/%s", scenario, g->kind);
        cr_hist_print(label, &rep[k]);
        for (s = 1; s < NSTATUS; s++)
            if (atomic_load(&g->errors[s]) > 0)
                fprintf(stderr, "  %s: %d x %s (first: %s)\n", label,
                        atomic_load(&g->errors[s]), cr_strerror((cr_status)s),
                        g->first_error[s]);
    }
    /* A hung worker cannot be joined: fail before trying. */
    assert_true(all_done);
    for (k = 0; k < NKINDS; k++) {
        group *g = &r->g[k];

        for (i = 0; i < WORKERS_PER_GROUP; i++) {
            pthread_join(g->w[i].thread, NULL);
            obj_close(&g->w[i].o);
        }
    }
    for (i = 0; i < 2; i++)
        cr_client_free(r->clients[i]);
    for (k = 0; k < NKINDS; k++) {
        group *g = &r->g[k];

        assert_int_equal(rep[k].violations, 0);
        assert_int_equal(rep[k].hung, 0);
        assert_true(rep[k].max_concurrency <= g->permits);
        assert_int_equal(rep[k].counter, rep[k].bumps);
        assert_true(rep[k].holds > 0);
        for (s = 1; s < NSTATUS; s++)
            if (atomic_load(&g->errors[s]) > 0 && !(allowed & (1u << s))) {
                fprintf(stderr, "%s/%s: unexpected %s\n", scenario, g->kind,
                        cr_strerror((cr_status)s));
                fail();
            }
        cr_hist_free(g->hist);
    }
}

#define ALLOW(s) (1u << (s))

/* ------------------------------------------------------------- helpers */

static bool server_cmd_ok(const cr_test_redis *srv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Runs a command (hiredis format: %s is one argument) on `srv` and returns
 * whether the server answered without an error. */
static bool
server_cmd_ok(const cr_test_redis *srv, const char *fmt, ...)
{
    redisContext *c = cr_test_redis_connect(srv);
    redisReply *r = NULL;
    bool ok;
    va_list ap;

    if (c == NULL)
        return false;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL && !ok)
        fprintf(stderr, "server said: %s\n", r->str);
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* The same, failing the test when the command fails. */
#define server_cmd(srv, ...) assert_true(server_cmd_ok(srv, __VA_ARGS__))

/* A lower bound, in monotonic microseconds, of when `key` expires: its
 * PTTL added to the time the command was sent, less one millisecond for
 * the server's rounding. 0 when the key has no expiry or does not exist. */
static int64_t
expiry_lower_bound(const cr_test_redis *srv, const char *key)
{
    redisContext *c = cr_test_redis_connect(srv);
    redisReply *r;
    int64_t sent, until = 0;

    assert_non_null(c);
    sent = cr_hist_now_us();
    r = redisCommand(c, "PTTL %s", key);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0)
        until = sent + (r->integer - 1) * 1000;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return until;
}

/* A rel_worker process and the pipes to its stdin and from its stdout. */
typedef struct proc {
    pid_t pid;
    int to;   /* its stdin */
    int from; /* its stdout */
} proc;

/* Reads one line from the worker within timeout_ms into buf (without the
 * newline); false on timeout or end of file. */
static bool
proc_read_line(proc *p, char *buf, size_t len, int64_t timeout_ms)
{
    return cr_test_read_line(p->from, buf, len, timeout_ms);
}

/* Sends a line to the worker. */
static void
proc_say(proc *p, const char *line)
{
    assert_int_equal(write(p->to, line, strlen(line)), (ssize_t)strlen(line));
}

/* Closes the pipes and reaps the worker (after SIGKILL when `kill_it`). */
static void
proc_end(proc *p, bool kill_it)
{
    if (kill_it)
        kill(p->pid, SIGKILL);
    close(p->to);
    close(p->from);
    waitpid(p->pid, NULL, 0);
}

/* Starts a "hold" worker of `kind` on `name` and waits for its "L". */
static void
hold_in_worker(proc *p, const char *kind, const char *name, cr_hist *h,
               int index, int64_t watchdog_ms)
{
    char wd[24], fd[24], idx[24], line[32];
    const char *args[] = {"hold", test_redis.url, kind, name, wd, fd, idx,
                          "1000", NULL};

    snprintf(wd, sizeof(wd), "%lld", (long long)watchdog_ms);
    snprintf(fd, sizeof(fd), "%d", cr_hist_fd(h));
    snprintf(idx, sizeof(idx), "%d", index);
    p->pid = cr_test_spawn_piped("rel_worker", args, &p->to, &p->from);
    assert_true(p->pid > 0);
    assert_true(proc_read_line(p, line, sizeof(line), slow(10000)));
    assert_string_equal(line, "L");
}

/* A thread that takes an object once, records the hold, releases it. */
typedef struct taker {
    obj o;
    cr_hist *hist;
    int index;
    int64_t wait_ms;
    cr_status rc;
    int64_t got_at_ms;
    pthread_t thread;
} taker;

/* Thread body of a taker: acquire once, record, bump, release. */
static void *
taker_run(void *arg)
{
    taker *t = arg;
    long ev;

    t->rc = obj_acquire(&t->o, t->wait_ms);
    if (t->rc == CR_OK) {
        t->got_at_ms = cr_test_now_ms();
        ev = cr_hist_begin(t->hist, t->index);
        cr_hist_bump(t->hist);
        nap_ns(5000000L);
        cr_hist_end(t->hist, ev);
        t->rc = obj_release(&t->o);
    }
    cr_hist_done(t->hist, t->index);
    return NULL;
}

/* Opens `kind` named `name` on c for a taker and starts its thread. */
static void
taker_start(taker *t, cr_client *c, const char *kind, const char *name,
            cr_hist *h, int index, int64_t wait_ms)
{
    memset(t, 0, sizeof(*t));
    assert_int_equal(obj_open(c, kind, name, 1, &t->o), CR_OK);
    t->hist = h;
    t->index = index;
    t->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&t->thread, NULL, taker_run, t), 0);
}

/* Waits for a taker and frees its handle. */
static void
taker_join(taker *t)
{
    pthread_join(t->thread, NULL);
    obj_close(&t->o);
}

/* Checks a history of single holds: counts printed, no overlap, nobody
 * hung, the counter exact. */
static void
check_history(cr_hist *h, const char *label, int permits)
{
    cr_hist_report rep;

    cr_hist_check(h, permits, &rep);
    cr_hist_print(label, &rep);
    assert_int_equal(rep.violations, 0);
    assert_int_equal(rep.hung, 0);
    assert_int_equal(rep.counter, rep.bumps);
}

/* ----------------------------------------------------------- scenarios */

static void
test_reliability_redis_restart_keeps_exclusion_with_persistence(void **state)
{
    cr_test_redis aof;
    run r;

    (void)state;
    assert_int_equal(cr_test_redis_start(&aof, "--appendonly yes "
                                               "--appendfsync always"), 0);
    run_start(&r, &aof, "restart", 3000, 1000);
    run_for(800);
    cr_test_redis_stop(&aof);
    run_for(500);
    assert_int_equal(cr_test_redis_restart(&aof), 0);
    run_for(800);
    cr_test_redis_stop(&aof);
    assert_int_equal(cr_test_redis_restart(&aof), 0);
    run_for(1200);
    /* While the server is down calls fail with CR_EIO once their wait or
     * the reconnect window is over; a renewal that cannot reach the
     * server in time loses its lease, which unlock reports. Redis answers
     * LOADING while it reads the append-only file back. */
    run_stop(&r, "restart",
             ALLOW(CR_EIO) | ALLOW(CR_ELOST) | ALLOW(CR_ESERVER));
    cr_test_redis_destroy(&aof);
}

/* The next pseudo-random number (0..32767) of a fault schedule. */
static unsigned
next_rand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) & 0x7fff;
}

/* The seed of a fault schedule: CR_TEST_SEED, or the clock; printed. */
static unsigned
fault_seed(void)
{
    const char *s = getenv("CR_TEST_SEED");
    unsigned seed = s != NULL ? (unsigned)strtoul(s, NULL, 10)
                              : (unsigned)cr_test_now_ms();

    fprintf(stderr, "fault schedule seed %u (CR_TEST_SEED to replay)\n", seed);
    return seed;
}

static void
test_reliability_client_kill_at_random_moments_keeps_exclusion(void **state)
{
    unsigned seed = fault_seed();
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    int64_t end;
    int kills = 0;
    run r;

    (void)state;
    run_start(&r, &test_redis, "kill", 3000, slow(1000));
    end = cr_test_now_ms() + 3000;
    while (cr_test_now_ms() < end) {
        run_for(20 + next_rand(&seed) % 150);
        server_cmd(&test_redis, next_rand(&seed) % 2
                                    ? "CLIENT KILL TYPE normal SKIPME yes"
                                    : "CLIENT KILL TYPE pubsub");
        kills++;
    }
    fprintf(stderr, "kill: %d CLIENT KILL commands\n", kills);
    assert_int_equal(cr_client_stats_get(r.clients[0], &st), CR_OK);
    assert_true(st.reconnects > 0);
    /* A call whose link is cut twice in a row (its retry too) reports
     * CR_EIO; an unlock cut that way leaves the lease to expire. */
    run_stop(&r, "kill", ALLOW(CR_EIO) | ALLOW(CR_ELOST));
}

static void
test_reliability_script_flush_in_a_loop_keeps_exclusion(void **state)
{
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    int64_t end;
    int flushes = 0;
    run r;

    (void)state;
    run_start(&r, &test_redis, "flush", 3000, slow(1000));
    end = cr_test_now_ms() + 2500;
    while (cr_test_now_ms() < end) {
        run_for(15);
        server_cmd(&test_redis, "SCRIPT FLUSH");
        flushes++;
    }
    fprintf(stderr, "flush: %d SCRIPT FLUSH commands\n", flushes);
    assert_int_equal(cr_client_stats_get(r.clients[0], &st), CR_OK);
    assert_true(st.noscript_fallbacks > 0);
    /* NOSCRIPT is always followed by EVAL: no call may fail. */
    run_stop(&r, "flush", 0);
}

/* A call timed during a stall. */
typedef struct timed_call {
    cr_lock *lock;
    cr_status rc;
    int64_t took_ms;
} timed_call;

static void
timed_is_locked(timed_call *t)
{
    int64_t start = cr_test_now_ms();
    bool locked = false;

    t->rc = cr_lock_is_locked(t->lock, &locked);
    t->took_ms = cr_test_now_ms() - start;
}

/* Thread body: block the server for one second. */
static void *
debug_sleep(void *arg)
{
    (void)arg;
    server_cmd_ok(&test_redis, "DEBUG SLEEP 1");
    return NULL;
}

static void
test_reliability_server_stalls_longer_than_the_command_timeout(void **state)
{
    /* Leases outlast the stalls below, which outlast many timeouts. */
    const int64_t timeout_ms = 300, watchdog_ms = 10000;
    cr_client *c = fault_client(&test_redis, watchdog_ms, timeout_ms);
    timed_call t;
    pthread_t sleeper;
    cr_lock *l;
    run r;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "stall-single", &l), CR_OK);
    run_start(&r, &test_redis, "stall", watchdog_ms, timeout_ms);
    run_for(500);
    /* CLIENT PAUSE holds every client's commands for 3 s, ten command
     * timeouts; it is in effect once its reply came. */
    server_cmd(&test_redis, "CLIENT PAUSE 3000 ALL");
    t.lock = l;
    timed_is_locked(&t);
    fprintf(stderr, "stall: is_locked during CLIENT PAUSE: %s after %lld ms\n",
            cr_strerror(t.rc), (long long)t.took_ms);
    /* A first try, one retry on a new connection: about two timeouts, and
     * an error, where a client that waited for the answer would take the
     * whole pause. */
    assert_int_equal(t.rc, CR_EIO);
    assert_true(t.took_ms >= timeout_ms && t.took_ms < 2500);
    run_for(3000);
    /* DEBUG SLEEP blocks the whole server for 1 s; the call starts once
     * the sleep has surely begun. */
    assert_int_equal(pthread_create(&sleeper, NULL, debug_sleep, NULL), 0);
    nap_ns(200000000L);
    timed_is_locked(&t);
    pthread_join(sleeper, NULL);
    fprintf(stderr, "stall: is_locked during DEBUG SLEEP: %s after %lld ms\n",
            cr_strerror(t.rc), (long long)t.took_ms);
    assert_true(t.rc == CR_OK || t.rc == CR_EIO);
    assert_true(t.took_ms < slow(3 * timeout_ms + 1000));
    run_for(1000);
    /* Stalled calls fail with CR_EIO or go through afterwards; a lease
     * whose renewals were stalled past its end is reported lost. */
    run_stop(&r, "stall", ALLOW(CR_EIO) | ALLOW(CR_ELOST));
    cr_lock_free(l);
    cr_client_free(c);
}

/* The lock kinds whose holders the single-holder scenarios pause or kill. */
static const char *const paused_kinds[] = {"lock", "fenced", "fair", "write"};
static const char *const killed_kinds[] = {"lock", "spin", "nonreentrant",
                                           "fair"};

static void
test_reliability_paused_holder_learns_it_lost_and_next_holder_gets_in(void **state)
{
    size_t k;

    (void)state;
    for (k = 0; k < sizeof(paused_kinds) / sizeof(paused_kinds[0]); k++) {
        const char *kind = paused_kinds[k];
        char name[64], line[32], label[64];
        cr_hist *h = cr_hist_new(64, 3);
        taker t[2];
        proc p;
        int64_t until;
        int i;

        assert_non_null(h);
        snprintf(name, sizeof(name), "paused-%s", kind);
        hold_in_worker(&p, kind, name, h, 0, 1000);
        for (i = 0; i < 2; i++)
            taker_start(&t[i], test_client, kind, name, h, 1 + i, slow(10000));
        kill(p.pid, SIGSTOP);
        /* Let a renewal already on its way land, then read the lease. */
        nap_ns(100000000L);
        /* Every lock kind keeps its lease on the hash N. */
        until = expiry_lower_bound(&test_redis, name);
        assert_true(until > 0);
        cr_hist_set_valid_until(h, 0, until);
        /* Both takers get in once the paused holder's lease ran out. */
        for (i = 0; i < 2; i++) {
            taker_join(&t[i]);
            assert_int_equal(t[i].rc, CR_OK);
        }
        kill(p.pid, SIGCONT);
        /* On resume its watchdog finds the hold gone: the callback. */
        assert_true(proc_read_line(&p, line, sizeof(line), slow(5000)));
        assert_string_equal(line, "X");
        proc_say(&p, "U\n");
        assert_true(proc_read_line(&p, line, sizeof(line), slow(5000)));
        snprintf(label, sizeof(label), "U %d", (int)CR_ELOST);
        assert_string_equal(line, label);
        proc_say(&p, "Q\n");
        proc_end(&p, false);
        snprintf(label, sizeof(label), "sigstop/%s", kind);
        check_history(h, label, 1);
        cr_hist_free(h);
    }
}

static void
test_reliability_killed_holder_frees_after_its_lease_and_waiters_proceed(void **state)
{
    size_t k;

    (void)state;
    for (k = 0; k < sizeof(killed_kinds) / sizeof(killed_kinds[0]); k++) {
        const char *kind = killed_kinds[k];
        char name[64], label[64];
        cr_hist *h = cr_hist_new(64, 4);
        taker t[3];
        proc p;
        int64_t until, killed;
        int i;

        assert_non_null(h);
        snprintf(name, sizeof(name), "killed-%s", kind);
        hold_in_worker(&p, kind, name, h, 0, 1000);
        for (i = 0; i < 3; i++)
            taker_start(&t[i], test_client, kind, name, h, 1 + i, slow(10000));
        proc_end(&p, true);
        killed = cr_test_now_ms();
        cr_hist_done(h, 0);
        nap_ns(100000000L);
        /* Every lock kind keeps its lease on the hash N. */
        until = expiry_lower_bound(&test_redis, name);
        assert_true(until > 0);
        cr_hist_set_valid_until(h, 0, until);
        for (i = 0; i < 3; i++) {
            taker_join(&t[i]);
            assert_int_equal(t[i].rc, CR_OK);
            /* The first one within a lease (1 s) of the kill, plus slack. */
            assert_true(t[i].got_at_ms - killed < slow(4000));
        }
        snprintf(label, sizeof(label), "sigkill/%s", kind);
        check_history(h, label, 1);
        cr_hist_free(h);
    }
}

/* ThreadSanitizer refuses to start threads in the child of a process
 * that has threads: there, the child does not make a client of its own. */
#if defined(__SANITIZE_THREAD__)
static const bool threads_after_fork = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
static const bool threads_after_fork = false;
#else
static const bool threads_after_fork = true;
#endif
#else
static const bool threads_after_fork = true;
#endif

static void
test_reliability_fork_child_cannot_touch_holds_and_parent_renewal_goes_on(void **state)
{
    /* A lease of 300 ms, renewed every 100 ms, widened as every time
     * bound is where the program runs slowly (CR_TEST_SLOW): under
     * ThreadSanitizer on a loaded machine a renewal 200 ms late loses
     * the lock, and the renewals stop for a reason that is not the fork. */
    cr_client *c = new_client(slow(300));
    cr_lock *l, *fenced;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    renewals want = {c, 0};
    char verdict = '?';
    bool held = false;
    int fds[2];
    pid_t pid;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "forked-rel", &l), CR_OK);
    assert_int_equal(cr_fenced_lock_new(c, "forked-fenced", &fenced), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(fenced, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The child reports one byte and dies by SIGKILL, so that nothing
         * of the parent's runs at exit. */
        char v = 'y';
        cr_client *own = NULL;
        cr_lock *mine = NULL;
        bool b;

        if (cr_lock_unlock(l) != CR_EFORKED)
            v = 'u';
        else if (cr_lock_unlock(fenced) != CR_EFORKED)
            v = 'f';
        else if (cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG) != CR_EFORKED)
            v = 'l';
        else if (cr_lock_is_locked(l, &b) != CR_EFORKED)
            v = 'q';
        else if (cr_lock_force_unlock(l, &b) != CR_EFORKED)
            v = 'F';
        else if (cr_lock_new(c, "x", &mine) != CR_EFORKED)
            v = 'n';
        else if (!threads_after_fork)
            v = 'y'; /* ThreadSanitizer cannot start threads here */
        else if ((own = new_client(300)) == NULL)
            v = 'c';
        else if (cr_lock_new(own, "forked-rel", &mine) != CR_OK ||
                 cr_lock_try_lock(mine, 0, CR_LEASE_WATCHDOG) != CR_BUSY)
            v = 'b'; /* its own client sees the parent's hold */
        if (write(fds[1], &v, 1) != 1)
            v = 'w';
        kill(getpid(), SIGKILL);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &verdict, 1), 1);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    assert_int_equal(verdict, 'y');
    /* The parent's watchdog goes on: several more renewals and the locks
     * are still held. */
    assert_int_equal(cr_client_stats_get(c, &st), CR_OK);
    want.at_least = st.renewals_sent + 10;
    if (!cr_test_wait_until(renewals_reached, &want, slow(5000))) {
        assert_int_equal(cr_client_stats_get(c, &st), CR_OK);
        fail_msg("%llu of 10 renewals after the fork; %llu calls failed, "
                 "%llu leases lost",
                 (unsigned long long)(st.renewals_sent + 10 - want.at_least),
                 (unsigned long long)st.renewal_failures,
                 (unsigned long long)st.leases_lost);
    }
    assert_int_equal(cr_lock_is_held_by_current_thread(l, &held), CR_OK);
    assert_true(held);
    assert_int_equal(cr_lock_is_held_by_current_thread(fenced, &held), CR_OK);
    assert_true(held);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_unlock(fenced), CR_OK);
    cr_lock_free(l);
    cr_lock_free(fenced);
    cr_client_free(c);
}

/* A waiter blocked on an object of client being freed. */
typedef struct blocked {
    obj o;
    cr_latch *latch;
    cr_status rc;
    atomic_bool started;
    pthread_t thread;
} blocked;

/* Thread body of a waiter that blocks until its client is freed. */
static void *
blocked_run(void *arg)
{
    blocked *b = arg;

    atomic_store(&b->started, true);
    if (b->latch != NULL)
        b->rc = cr_latch_await(b->latch, CR_WAIT_FOREVER);
    else
        b->rc = obj_acquire(&b->o, CR_WAIT_FOREVER);
    return NULL;
}

/* For cr_test_wait_until: every object named (NULL-terminated) has a
 * waiter in its line, listening on its own channel. */
static bool
all_in_line(void *arg)
{
    const char *const *name = arg;

    for (; *name != NULL; name++)
        if (line_length(*name) < 1 || line_listeners(*name) < 1)
            return false;
    return true;
}

/* For cr_test_wait_until: `channel` (arg) has a subscriber. */
static bool
subscribed(void *arg)
{
    return numsub(arg) >= 1;
}

/* True once the client under test has sent a few more commands than *arg:
 * its spin lock waiter is polling. */
static bool
spinning(void *arg)
{
    uint64_t *before = arg;
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    return cr_client_stats_get(test_client, &st) == CR_OK &&
           st.commands >= *before + 3;
}

/* True once the fair lock's queue has a waiter. */
static bool
fair_queued(void *arg)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "LLEN %s", (char *)arg);
    bool ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;

    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

static void
test_reliability_client_freed_while_threads_wait_returns_eclosed(void **state)
{
    /* The spin lock comes last: it is started once the others wait. */
    static const char *const held_kinds[] = {"lock", "fenced", "nonreentrant",
                                             "fair", "write", "spin"};
    const char *lines[] = {"freed-lock", "freed-fenced", "freed-nonreentrant",
                           "freed-write", "freed-semaphore", NULL};
    enum { NHELD = 6, SPIN = NHELD - 1, SEM = NHELD, LATCH = NHELD + 1,
           NB = NHELD + 2 };
    cr_client *other = new_client(30000);
    obj theirs[NHELD];
    blocked b[NB];
    cr_latch *setter;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    uint64_t before;
    size_t i;
    char name[64];

    (void)state;
    assert_non_null(other);
    memset(b, 0, sizeof(b));
    for (i = 0; i < NHELD; i++) {
        snprintf(name, sizeof(name), "freed-%s", held_kinds[i]);
        assert_int_equal(obj_open(other, held_kinds[i], name, 1, &theirs[i]),
                         CR_OK);
        assert_int_equal(obj_acquire(&theirs[i], 0), CR_OK);
        assert_int_equal(obj_open(test_client, held_kinds[i], name, 1,
                                  &b[i].o), CR_OK);
    }
    /* A semaphore without permits and a closed latch. */
    assert_int_equal(cr_semaphore_new(test_client, "freed-semaphore",
                                      &b[SEM].o.sem), CR_OK);
    assert_int_equal(cr_latch_new(other, "freed-latch", &setter), CR_OK);
    assert_int_equal(cr_latch_try_set_count(setter, 1, 0, NULL), CR_OK);
    assert_int_equal(cr_latch_new(test_client, "freed-latch", &b[LATCH].latch),
                     CR_OK);
    for (i = 0; i < NB; i++)
        if (i != SPIN)
            assert_int_equal(pthread_create(&b[i].thread, NULL, blocked_run,
                                            &b[i]), 0);
    /* Every waiter must be inside its call before the client goes: one
     * that enters afterwards would use freed memory (documented misuse).
     * The lock kinds' and the semaphore's are in their objects' lines. */
    assert_true(cr_test_wait_until(all_in_line, lines, slow(5000)));
    assert_true(cr_test_wait_until(
        subscribed, "redisson_countdownlatch__channel__{freed-latch}",
        slow(5000)));
    assert_true(cr_test_wait_until(fair_queued,
                                   "redisson_lock_queue:{freed-fair}",
                                   slow(5000)));
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    before = st.commands;
    assert_int_equal(pthread_create(&b[SPIN].thread, NULL, blocked_run,
                                    &b[SPIN]), 0);
    assert_true(cr_test_wait_until(spinning, &before, slow(5000)));
    cr_client_free(test_client);
    test_client = NULL;
    for (i = 0; i < NB; i++) {
        pthread_join(b[i].thread, NULL);
        if (b[i].rc != CR_ECLOSED)
            fprintf(stderr, "waiter %zu returned %s\n", i,
                    cr_strerror(b[i].rc));
        assert_int_equal(b[i].rc, CR_ECLOSED);
        obj_close(&b[i].o);
        cr_latch_free(b[i].latch);
    }
    /* Each left its line as its client went: nobody behind it would wait
     * for its place's lease. */
    for (i = 0; lines[i] != NULL; i++)
        assert_int_equal(line_length(lines[i]), 0);
    for (i = 0; i < NHELD; i++) {
        assert_int_equal(obj_release(&theirs[i]), CR_OK);
        obj_close(&theirs[i]);
    }
    cr_latch_free(setter);
    cr_client_free(other);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_reliability_redis_restart_keeps_exclusion_with_persistence),
        T(test_reliability_client_kill_at_random_moments_keeps_exclusion),
        T(test_reliability_script_flush_in_a_loop_keeps_exclusion),
        T(test_reliability_server_stalls_longer_than_the_command_timeout),
        T(test_reliability_paused_holder_learns_it_lost_and_next_holder_gets_in),
        T(test_reliability_killed_holder_frees_after_its_lease_and_waiters_proceed),
        T(test_reliability_fork_child_cannot_touch_holds_and_parent_renewal_goes_on),
        T(test_reliability_client_freed_while_threads_wait_returns_eclosed),
#undef T
    };

    /* CR_TEST_FILTER=pattern runs only the matching tests. */
    if (getenv("CR_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("CR_TEST_FILTER"));
    return cmocka_run_group_tests(tests, redis_up_debug, redis_down);
}
