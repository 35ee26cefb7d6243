/* SPDX-License-Identifier: MIT */
/*
 * A separate process for the waiting line's tests (test_line.c), run by
 * fork + exec. Objects by KIND: lock, fenced, nonreentrant, write (the
 * write lock of a read/write lock), sem (RSemaphore, one permit at a
 * time), permit (RPermitExpirableSemaphore, one permit without a lease).
 * TURN_MS is the client's line_turn_ms (0: the default).
 *
 *   line_worker cycle URL KIND NAME CYCLES HOLD_US BLOCK_FD HIST_FD WORKER
 *               DRIVER N TURN_MS
 *       N workers (indexes WORKER .. WORKER + N - 1) on one client, each
 *       taking the object CYCLES times, waiting as long as it takes, and
 *       holding it HOLD_US: threads of the process (DRIVER "threads"), or
 *       requests of one cr_async on a libevent or libuv loop (DRIVER
 *       "libevent", "libuv"; KIND lock only). Each cycle is recorded in
 *       the line_block (line_block.h) behind BLOCK_FD and in the history
 *       behind HIST_FD, with a bump of its counter. The workers begin once
 *       the test sets the block's `go`.
 *   line_worker serve URL KIND NAME TURN_MS
 *       prints "E <entry>\n", its main thread's entry in the object's line,
 *       then obeys lines on stdin: "L <wait_ms>" takes the object waiting
 *       at most wait_ms (-1: as long as it takes) and prints
 *       "L <cr_status> <us>\n"; "U" gives it back and prints
 *       "U <cr_status> <us>\n" (us: CLOCK_MONOTONIC microseconds when the
 *       call returned, or, for "U", when it was made); "Q" or the end of
 *       stdin frees everything and exits 0.
 * Exits 1 with a message on stderr when set-up fails, 2 on bad usage.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credisson.h"
#include "credisson/rwlock.h"
#include "history.h"
#include "line_block.h"
#include "worker_common.h"

#ifdef CR_HAVE_LIBEVENT
#include <event2/event.h>

#include "credisson/async_libevent.h"
#endif
#ifdef CR_HAVE_LIBUV
#include "credisson/async_libuv.h"
#endif

/* The object a worker takes, of one of the kinds above. */
typedef struct object {
    const char *kind;
    cr_lock *lock;
    cr_rwlock *rw;
    cr_semaphore *sem;
    cr_permit_semaphore *permit;
} object;

/* Opens object NAME of KIND on `c` into *o; exits on failure. */
static void
open_object(cr_client *c, const char *kind, const char *name, object *o)
{
    cr_status rc;

    *o = (object){.kind = kind};
    if (strcmp(kind, "lock") == 0)
        rc = cr_lock_new(c, name, &o->lock);
    else if (strcmp(kind, "fenced") == 0)
        rc = cr_fenced_lock_new(c, name, &o->lock);
    else if (strcmp(kind, "nonreentrant") == 0)
        rc = cr_non_reentrant_lock_new(c, name, &o->lock);
    else if (strcmp(kind, "write") == 0) {
        rc = cr_rwlock_new(c, name, &o->rw);
        if (rc == CR_OK)
            o->lock = cr_rwlock_write_lock(o->rw);
    } else if (strcmp(kind, "sem") == 0)
        rc = cr_semaphore_new(c, name, &o->sem);
    else if (strcmp(kind, "permit") == 0)
        rc = cr_permit_semaphore_new(c, name, &o->permit);
    else {
        fprintf(stderr, "line_worker: unknown kind %s\n", kind);
        exit(2);
    }
    if (rc != CR_OK)
        die("open the object", rc);
}

/* Frees what open_object opened. */
static void
close_object(object *o)
{
    if (o->rw != NULL)
        cr_rwlock_free(o->rw);
    else if (o->lock != NULL)
        cr_lock_free(o->lock);
    cr_semaphore_free(o->sem);
    cr_permit_semaphore_free(o->permit);
}

/* Returns the status of taking `o` on the calling thread, waiting at most
 * wait_ms; a permit's id goes to `id`. */
static cr_status
take(object *o, int64_t wait_ms, char *id)
{
    if (o->sem != NULL)
        return cr_semaphore_try_acquire(o->sem, 1, wait_ms);
    if (o->permit != NULL)
        return cr_permit_semaphore_try_acquire(o->permit, wait_ms,
                                               CR_LEASE_NONE, id);
    return cr_lock_try_lock(o->lock, wait_ms, CR_LEASE_WATCHDOG);
}

/* Returns the status of giving `o` back (a permit: id `id`). */
static cr_status
give_back(object *o, const char *id)
{
    if (o->sem != NULL)
        return cr_semaphore_release(o->sem, 1);
    if (o->permit != NULL)
        return cr_permit_semaphore_release(o->permit, id);
    return cr_lock_unlock(o->lock);
}

/* Microseconds of CLOCK_MONOTONIC. */
static int64_t
now_us(void)
{
    return cr_hist_now_us();
}

/* ---------------------------------------------------------- cycle mode */

/* What the workers of a "cycle" run share. */
typedef struct run {
    object obj;
    line_block *block;
    cr_hist *hist;
    int cycles;
    int64_t hold_us;
} run;

/* One worker of a run. */
typedef struct worker {
    run *run;
    int index;
    int cycle;
    long ev;
    pthread_t thread;
    cr_lock *lock; /* async: its lock, and owner id */
    int64_t owner;
    void *timer;
} worker;

/* Records that worker w got the object (its cycle's call began at
 * call_us). */
static void
entered(worker *w, int64_t call_us)
{
    line_cycle *c = &w->run->block->cycle[w->index][w->cycle];

    c->call_us = call_us;
    c->enter_us = now_us();
    line_block_enter(w->run->block);
    w->ev = cr_hist_begin(w->run->hist, w->index);
    cr_hist_bump(w->run->hist);
}

/* Records that worker w is about to give the object back. */
static void
leaving(worker *w)
{
    cr_hist_end(w->run->hist, w->ev);
    w->run->block->cycle[w->index][w->cycle].leave_us = now_us();
    line_block_leave(w->run->block);
}

/* Records a call that failed with `rc`. */
static void
failed(worker *w, const char *what, cr_status rc)
{
    fprintf(stderr, "line_worker %d: %s: %s (%s)\n", w->index, what,
            cr_strerror(rc), cr_last_error());
    atomic_fetch_add(&w->run->block->failures, 1);
    cr_hist_error(w->run->hist);
}

/* Returns once the test said go. */
static void
await_go(line_block *b)
{
    atomic_fetch_add(&b->ready, 1);
    while (!atomic_load(&b->go))
        usleep(1000);
}

/* A thread worker: its cycles, blocking. */
static void *
thread_cycles(void *arg)
{
    worker *w = arg;
    run *r = w->run;
    char id[CR_PERMIT_ID_LEN + 1];

    for (w->cycle = 0; w->cycle < r->cycles; w->cycle++) {
        int64_t call = now_us();
        cr_status rc = take(&r->obj, CR_WAIT_FOREVER, id);

        if (rc != CR_OK) {
            failed(w, "take", rc);
            break;
        }
        entered(w, call);
        usleep((useconds_t)r->hold_us);
        leaving(w);
        if ((rc = give_back(&r->obj, id)) != CR_OK)
            failed(w, "give back", rc);
        atomic_fetch_add(&r->block->cycles_done[w->index], 1);
    }
    cr_hist_done(r->hist, w->index);
    return NULL;
}

/* The "threads" driver: n threads, each a worker. */
static void
run_threads(run *r, worker *w, int n)
{
    int i;

    await_go(r->block);
    for (i = 0; i < n; i++)
        if (pthread_create(&w[i].thread, NULL, thread_cycles, &w[i]) != 0) {
            fprintf(stderr, "line_worker: pthread_create failed\n");
            exit(1);
        }
    for (i = 0; i < n; i++)
        pthread_join(w[i].thread, NULL);
}

/* The asynchronous drivers: each worker a chain of requests on one
 * cr_async, its hold a timer of the loop. */
#if defined(CR_HAVE_LIBEVENT) || defined(CR_HAVE_LIBUV)
static cr_async *chain_async;
static int chains_left;
static void chain_next(worker *w);
static void chain_hold(worker *w);

/* Chain w is over (done, or stopped by a failure). */
static void
chain_end(worker *w)
{
    cr_hist_done(w->run->hist, w->index);
    chains_left--;
}

/* The unlock of a chain's cycle came back: the next cycle. */
static void
chain_unlocked(void *userdata, cr_status rc, int64_t value)
{
    worker *w = userdata;

    (void)value;
    if (rc != CR_OK)
        failed(w, "async unlock", rc);
    atomic_fetch_add(&w->run->block->cycles_done[w->index], 1);
    w->cycle++;
    chain_next(w);
}

/* The hold of a chain's cycle is over: give the lock back. */
static void
chain_release(worker *w)
{
    cr_status rc;

    leaving(w);
    rc = cr_async_unlock(chain_async, w->lock, w->owner, chain_unlocked, w,
                         NULL);
    if (rc != CR_OK) {
        failed(w, "cr_async_unlock", rc);
        chain_end(w);
    }
}

/* The lock of a chain's cycle came back. */
static void
chain_locked(void *userdata, cr_status rc, int64_t value)
{
    worker *w = userdata;

    (void)value;
    if (rc != CR_OK) {
        failed(w, "async lock", rc);
        chain_end(w);
        return;
    }
    entered(w, w->run->block->cycle[w->index][w->cycle].call_us);
    chain_hold(w);
}

/* Starts the next cycle of chain w, or ends it. */
static void
chain_next(worker *w)
{
    cr_status rc;

    if (w->cycle >= w->run->cycles) {
        chain_end(w);
        return;
    }
    w->run->block->cycle[w->index][w->cycle].call_us = now_us();
    rc = cr_async_lock(chain_async, w->lock, w->owner, CR_WAIT_FOREVER,
                       CR_LEASE_WATCHDOG, chain_locked, w, NULL);
    if (rc != CR_OK) {
        failed(w, "cr_async_lock", rc);
        chain_end(w);
    }
}
#endif

#ifdef CR_HAVE_LIBEVENT
/* libevent: the hold's timer ran out. */
static void
libevent_held(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    chain_release(arg);
}
#endif

#ifdef CR_HAVE_LIBUV
/* libuv: the hold's timer ran out. */
static void
libuv_held(uv_timer_t *t)
{
    chain_release(t->data);
}
#endif

#if defined(CR_HAVE_LIBEVENT) || defined(CR_HAVE_LIBUV)
static const char *chain_driver;

/* Holds chain w's lock for the run's hold on its loop's timer. */
static void
chain_hold(worker *w)
{
#ifdef CR_HAVE_LIBEVENT
    if (strcmp(chain_driver, "libevent") == 0) {
        struct timeval tv = {.tv_sec = (time_t)(w->run->hold_us / 1000000),
                             .tv_usec = (suseconds_t)(w->run->hold_us %
                                                      1000000)};

        evtimer_add((struct event *)w->timer, &tv);
        return;
    }
#endif
#ifdef CR_HAVE_LIBUV
    uv_timer_start((uv_timer_t *)w->timer, libuv_held,
                   (uint64_t)((w->run->hold_us + 999) / 1000), 0);
#endif
}
#endif

/* The asynchronous driver `driver` on client c: n chains on one lock. */
static void
run_chains(cr_client *c, run *r, worker *w, int n, const char *driver)
{
#if defined(CR_HAVE_LIBEVENT) || defined(CR_HAVE_LIBUV)
    int i;

    chain_driver = driver;
    chains_left = n;
    if (r->obj.lock == NULL || strcmp(r->obj.kind, "lock") != 0) {
        fprintf(stderr, "line_worker: the async drivers take a lock\n");
        exit(2);
    }
#ifdef CR_HAVE_LIBEVENT
    if (strcmp(driver, "libevent") == 0) {
        struct event_base *base = event_base_new();
        cr_libevent *x = NULL;
        cr_status rc;

        if (base == NULL || (rc = cr_libevent_new(c, base, &x)) != CR_OK)
            die("cr_libevent_new", CR_ENOMEM);
        chain_async = cr_libevent_async(x);
        for (i = 0; i < n; i++) {
            w[i].lock = r->obj.lock;
            w[i].owner = cr_async_owner_id();
            w[i].timer = evtimer_new(base, libevent_held, &w[i]);
        }
        await_go(r->block);
        for (i = 0; i < n; i++)
            chain_next(&w[i]);
        while (chains_left > 0)
            event_base_loop(base, EVLOOP_ONCE);
        for (i = 0; i < n; i++)
            event_free((struct event *)w[i].timer);
        cr_libevent_free(x);
        event_base_free(base);
        return;
    }
#endif
#ifdef CR_HAVE_LIBUV
    if (strcmp(driver, "libuv") == 0) {
        uv_loop_t loop;
        uv_timer_t *timers = calloc((size_t)n, sizeof(*timers));
        cr_libuv *x = NULL;
        cr_status rc;

        if (timers == NULL || uv_loop_init(&loop) != 0 ||
            (rc = cr_libuv_new(c, &loop, &x)) != CR_OK)
            die("cr_libuv_new", CR_ENOMEM);
        chain_async = cr_libuv_async(x);
        for (i = 0; i < n; i++) {
            w[i].lock = r->obj.lock;
            w[i].owner = cr_async_owner_id();
            uv_timer_init(&loop, &timers[i]);
            timers[i].data = &w[i];
            w[i].timer = &timers[i];
        }
        await_go(r->block);
        for (i = 0; i < n; i++)
            chain_next(&w[i]);
        while (chains_left > 0)
            uv_run(&loop, UV_RUN_ONCE);
        for (i = 0; i < n; i++)
            uv_close((uv_handle_t *)&timers[i], NULL);
        cr_libuv_free(x);
        uv_run(&loop, UV_RUN_NOWAIT);
        uv_loop_close(&loop);
        free(timers);
        return;
    }
#endif
#else
    (void)c;
    (void)r;
    (void)w;
    (void)n;
#endif
    fprintf(stderr, "line_worker: driver %s is not built in\n", driver);
    exit(2);
}

/* The "cycle" mode. */
static int
cycle_mode(cr_client *c, char **argv)
{
    int first = atoi(argv[9]), n = atoi(argv[11]), i;
    const char *driver = argv[10];
    run r = {.cycles = atoi(argv[5]), .hold_us = atoll(argv[6])};
    worker *w;

    r.block = line_block_attach(atoi(argv[7]));
    r.hist = cr_hist_attach(atoi(argv[8]));
    if (r.block == NULL || r.hist == NULL) {
        fprintf(stderr, "line_worker: cannot map the shared blocks\n");
        return 1;
    }
    if (n < 1 || first < 0 || first + n > LINE_WORKERS ||
        r.cycles > LINE_CYCLES) {
        fprintf(stderr, "line_worker: too many workers or cycles\n");
        return 2;
    }
    w = calloc((size_t)n, sizeof(*w));
    if (w == NULL)
        die("calloc", CR_ENOMEM);
    for (i = 0; i < n; i++)
        w[i] = (worker){.run = &r, .index = first + i, .ev = -1};
    open_object(c, argv[3], argv[4], &r.obj);
    if (strcmp(driver, "threads") == 0)
        run_threads(&r, w, n);
    else
        run_chains(c, &r, w, n, driver);
    close_object(&r.obj);
    free(w);
    cr_hist_free(r.hist);
    munmap(r.block, sizeof(*r.block));
    return 0;
}

/* ---------------------------------------------------------- serve mode */

/* The "serve" mode. */
static int
serve_mode(cr_client *c, const char *kind, const char *name)
{
    char line[64], msg[96], id[CR_PERMIT_ID_LEN + 1] = "";
    object o;

    open_object(c, kind, name, &o);
    snprintf(msg, sizeof(msg), "E %s:%lld\n", cr_client_id(c),
             (long long)cr_thread_id());
    say(msg);
    while (fgets(line, sizeof(line), stdin) != NULL) {
        cr_status rc;

        if (line[0] == 'L') {
            rc = take(&o, atoll(line + 1), id);
            snprintf(msg, sizeof(msg), "L %d %lld\n", (int)rc,
                     (long long)now_us());
        } else if (line[0] == 'U') {
            int64_t at = now_us();

            rc = give_back(&o, id);
            snprintf(msg, sizeof(msg), "U %d %lld\n", (int)rc,
                     (long long)at);
        } else {
            break;
        }
        say(msg);
    }
    close_object(&o);
    return 0;
}

int
main(int argc, char **argv)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_status rc;
    bool cycle = argc == 13 && strcmp(argv[1], "cycle") == 0;
    bool serve = argc == 6 && strcmp(argv[1], "serve") == 0;
    int ret;

    if (!cycle && !serve) {
        fprintf(stderr, "usage: line_worker cycle URL KIND NAME CYCLES "
                        "HOLD_US BLOCK_FD HIST_FD WORKER DRIVER N TURN_MS\n"
                        "       line_worker serve URL KIND NAME TURN_MS\n");
        return 2;
    }
    o.url = argv[2];
    o.line_turn_ms = atoll(argv[cycle ? 12 : 5]);
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    ret = cycle ? cycle_mode(client, argv)
                : serve_mode(client, argv[3], argv[4]);
    cr_client_free(client);
    return ret;
}
