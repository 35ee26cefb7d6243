/* SPDX-License-Identifier: MIT */
/*
 * The event loop's connections (aio.h): the handle's life cycle and its
 * dispatch. What the application's loop reports (a descriptor ready, the
 * timer due) goes to the part it is for: the links (aio_link.c), the
 * resolver's answers and the posts (aio_resolve.c), the timers
 * (aio_timer.c); each dispatch has a work budget, and what its links
 * queued is written when it ends. Freeing the handle ends every link,
 * subscription and sleeper, then the resolver thread.
 */
#include "config.h"

#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aio_internal.h"

/* The work one dispatch (a call of cr_async_io or cr_async_timeout) may
 * do, in replies read, timers run and callbacks run together: the rest
 * waits for the next turn (a timer of 0 ms), so that one dispatch stays
 * short whatever the backlog (cr__aio_spend). */
#define DISPATCH_BUDGET 32
/* A loop that calls cr_async_timeout this late has starved its waits and
 * wake-ups: said in the log, once per LATE_LOG_EVERY_MS at most. */
#define LATE_WARN_MS 1000
#define LATE_LOG_EVERY_MS 10000

/* ------------------------------------------------------------- dispatch */

bool
cr__aio_dispatching(const cr__aio *io)
{
    return io->dispatching > 0;
}

/* Starts a dispatch (they do not nest, but a callback may free the handle
 * inside one: see cr_async_free). */
static void
dispatch_begin(cr__aio *io)
{
    if (io->dispatching++ == 0)
        io->budget = DISPATCH_BUDGET;
}

/* Ends a dispatch: writes what its links queued. */
static void
dispatch_end(cr__aio *io)
{
    if (--io->dispatching > 0)
        return;
    while (io->dirty != NULL) {
        cr__alink *l = io->dirty;

        io->dirty = l->dirty_next;
        l->dirty = false;
        cr__aio_link_flush(l);
    }
}

void
cr__aio_timeout(cr__aio *io)
{
    int64_t now = cr__now_ms();

    if (io->armed >= 0 && now - io->armed > LATE_WARN_MS &&
        now - io->late_logged > LATE_LOG_EVERY_MS) {
        /* The leases are the watchdog thread's, safe; the loop's own
         * work is not: the application blocked its loop. */
        io->late_logged = now;
        cr__log(&io->client->log, CR_LOG_WARN, "the event loop ran the "
                "library's timer %lld ms late: its waits, wake-ups and "
                "replies were held up that long (the leases of its holds "
                "are renewed by the client's watchdog thread)",
                (long long)(now - io->armed));
    }
    io->armed = -1;
    dispatch_begin(io);
    while (io->nheap > 0 && io->heap[0]->due <= now && cr__aio_spend(io)) {
        cr__atimer *t = io->heap[0];

        cr__aio_cancel_timer(io, t);
        t->fn(t->ctx);
    }
    dispatch_end(io);
    cr__aio_arm(io);
}

/* The wake-up descriptor is readable: the resolver's answers and the
 * posts (on the loop). */
static void
woken(cr__aio *io)
{
    uint64_t n;
    cr__aresolve *j, *next;

    if (read(io->wake_fd, &n, sizeof(n)) < 0) {
        /* nothing to read: another turn took it */
    }
    cr__aio_run_posted(io);
    pthread_mutex_lock(&io->mu);
    j = io->done;
    io->done = NULL;
    pthread_mutex_unlock(&io->mu);
    for (; j != NULL; j = next) {
        cr__alink *l = j->link;

        next = j->next;
        if (l != NULL && l->state == CR__LINK_RESOLVING) {
            l->ai = j->ai;
            j->ai = NULL;
            l->resolved = j->err == 0 ? CR_OK
                          : cr__fail(CR_EIO, "cannot resolve %s: %s", l->host,
                                     gai_strerror(j->err));
            cr__aio_link_drive(l, 0);
        }
        if (j->ai != NULL)
            freeaddrinfo(j->ai);
        free(j);
    }
}

void
cr__aio_ready(cr__aio *io, int fd, int events)
{
    cr__alink *l;

    dispatch_begin(io);
    if (io->wake_fd >= 0 && fd == io->wake_fd) {
        woken(io);
    } else {
        for (l = io->links; l != NULL; l = l->next)
            if (l->fd == fd) {
                cr__aio_link_drive(l, events);
                break;
            }
    }
    dispatch_end(io);
}

int
cr__aio_fds(cr__aio *io, cr_async_fd *fds, int max, int64_t *timeout_ms)
{
    int n = 0;
    cr__alink *l;

    if (io->wake_fd >= 0) {
        if (n < max)
            fds[n] = (cr_async_fd){io->wake_fd, CR_WATCH_READ};
        n++;
    }
    for (l = io->links; l != NULL; l = l->next)
        if (l->fd >= 0 && l->watched != 0) {
            if (n < max)
                fds[n] = (cr_async_fd){l->fd, l->watched};
            n++;
        }
    if (io->nheap == 0) {
        *timeout_ms = -1;
    } else {
        int64_t now = cr__now_ms();

        *timeout_ms = io->heap[0]->due > now ? io->heap[0]->due - now : 0;
    }
    return n;
}

/* ----------------------------------------------------------- life cycle */

cr_status
cr__aio_new(cr_client *c, const cr_loop *loop, cr__aio **out)
{
    cr__aio *io = calloc(1, sizeof(*io));

    if (io == NULL)
        return CR_ENOMEM;
    io->client = c;
    io->loop = *loop;
    io->subops = &cr__aio_sub_ops;
    io->armed = -1;
    io->wake_fd = -1;
    io->cluster = c->url.is_cluster;
    io->sharded = io->cluster && strcmp(c->publish_cmd, "spublish") == 0;
    pthread_mutex_init(&io->mu, NULL);
    pthread_cond_init(&io->cv, NULL);
    *out = io;
    return CR_OK;
}

void
cr__aio_free(cr__aio *io)
{
    cr__alink *l, *next;
    cr__asub *s, *tmp;
    cr__aresolve *j, *jn;

    if (io == NULL)
        return;
    io->closing = true;
    for (l = io->links; l != NULL; l = l->next)
        cr__aio_link_fail(l, cr__fail(CR_ECLOSED, "the asynchronous handle "
                                      "is being freed"), NULL);
    HASH_ITER(hh, io->subs, s, tmp) {
        cr__aio_sub_confirmed(io, s, cr__fail(CR_ECLOSED, "the asynchronous "
                                              "handle is being freed"));
        while (s->sleepers != NULL) {
            cr__asleeper *w = s->sleepers;

            s->sleepers = w->next;
            w->next = NULL;
            cr__aio_cancel_timer(io, &w->timer);
            w->fn(w->ctx, CR_ECLOSED, false);
        }
        HASH_DEL(io->subs, s);
        free(s->channel);
        free(s);
    }
    for (l = io->links; l != NULL; l = next) {
        next = l->next;
        cr__aio_cancel_timer(io, &l->timer);
        cr__aio_cancel_timer(io, &l->more);
        cr__aio_cancel_timer(io, &l->opener);
        cr__buf_free(&l->queued);
        free(l->q);
        free(l);
    }
    if (io->resolver_started) {
        pthread_mutex_lock(&io->mu);
        io->resolver_stop = true;
        pthread_cond_signal(&io->cv);
        pthread_mutex_unlock(&io->mu);
        pthread_join(io->resolver, NULL);
    }
    cr__aio_run_posted(io); /* their senders are done: the caller joined them */
    if (io->wake_fd >= 0) {
        io->loop.watch(io->loop.data, io->wake_fd, 0);
        close(io->wake_fd);
    }
    for (j = io->todo; j != NULL; j = jn) {
        jn = j->next;
        free(j);
    }
    for (j = io->done; j != NULL; j = jn) {
        jn = j->next;
        if (j->ai != NULL)
            freeaddrinfo(j->ai);
        free(j);
    }
    cr__aio_cancel_timer(io, &io->linger);
    io->loop.timer(io->loop.data, -1);
    free(io->heap);
    pthread_cond_destroy(&io->cv);
    pthread_mutex_destroy(&io->mu);
    free(io);
}
