/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API on a libev loop (header only: include it in the
 * program that owns the loop, and link libev there).
 *
 *     cr_libev *e;
 *     cr_libev_new(client, EV_DEFAULT, &e);
 *     cr_async_lock(cr_libev_async(e), lock, owner, ...);
 *     ev_run(EV_DEFAULT, 0);
 *     cr_libev_free(e);
 *
 * Thread safety: as the loop's; use it from the loop's thread.
 */
#ifndef CREDISSON_ASYNC_LIBEV_H
#define CREDISSON_ASYNC_LIBEV_H

#include <stddef.h>
#include <stdlib.h>

#include <ev.h>

#include <credisson/async.h>

typedef struct cr_libev cr_libev;

typedef struct cr_libev_watch {
    ev_io io;          /* first: the callback finds the watch from it */
    cr_libev *owner;
} cr_libev_watch;

struct cr_libev {
    struct ev_loop *loop;
    cr_async *async;
    ev_timer timer;
    cr_libev_watch **watches;
    int nwatches, capwatches;
};

static void
cr_libev_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    cr_libev_watch *x = (cr_libev_watch *)w;

    (void)loop;
    cr_async_io(x->owner->async, w->fd,
                ((revents & EV_READ) ? CR_WATCH_READ : 0) |
                ((revents & EV_WRITE) ? CR_WATCH_WRITE : 0));
}

static void
cr_libev_on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    cr_libev *e = (cr_libev *)((char *)t - offsetof(cr_libev, timer));

    (void)loop;
    (void)revents;
    cr_async_timeout(e->async);
}

static void
cr_libev_watch_fd(void *data, int fd, int events)
{
    cr_libev *e = (cr_libev *)data;
    int i;

    for (i = 0; i < e->nwatches && e->watches[i]->io.fd != fd; i++)
        ;
    if (i < e->nwatches) {
        ev_io_stop(e->loop, &e->watches[i]->io);
        free(e->watches[i]);
        e->watches[i] = e->watches[--e->nwatches];
    }
    if (events == 0)
        return;
    if (e->nwatches == e->capwatches) {
        int cap = e->capwatches ? 2 * e->capwatches : 8;
        cr_libev_watch **w = (cr_libev_watch **)realloc(
            e->watches, (size_t)cap * sizeof(*w));

        if (w == NULL)
            return;
        e->watches = w;
        e->capwatches = cap;
    }
    if ((e->watches[e->nwatches] =
             (cr_libev_watch *)calloc(1, sizeof(cr_libev_watch))) == NULL)
        return;
    e->watches[e->nwatches]->owner = e;
    ev_io_init(&e->watches[e->nwatches]->io, cr_libev_on_io, fd,
               ((events & CR_WATCH_READ) ? EV_READ : 0) |
               ((events & CR_WATCH_WRITE) ? EV_WRITE : 0));
    ev_io_start(e->loop, &e->watches[e->nwatches]->io);
    e->nwatches++;
}

static void
cr_libev_set_timer(void *data, int64_t ms)
{
    cr_libev *e = (cr_libev *)data;

    ev_timer_stop(e->loop, &e->timer);
    if (ms < 0)
        return;
    ev_timer_set(&e->timer, (ev_tstamp)ms / 1000.0, 0.0);
    ev_timer_start(e->loop, &e->timer);
}

/* cr_libev_new: an asynchronous handle of `client` on `loop`.
 * Ownership: *out needs cr_libev_free().
 * Returns cr_async_new's statuses: CR_OK, CR_EINVAL, CR_ENOMEM (the
 * adapter's memory too), CR_ECLOSED, CR_EFORKED. */
static inline cr_status
cr_libev_new(cr_client *client, struct ev_loop *loop, cr_libev **out)
{
    cr_libev *e = (cr_libev *)calloc(1, sizeof(*e));
    cr_loop l;
    cr_status rc;

    if (e == NULL)
        return CR_ENOMEM;
    e->loop = loop;
    ev_timer_init(&e->timer, cr_libev_on_timer, 0.0, 0.0);
    l.watch = cr_libev_watch_fd;
    l.timer = cr_libev_set_timer;
    l.data = e;
    if ((rc = cr_async_new(client, &l, &e->async)) != CR_OK) {
        free(e);
        return rc;
    }
    *out = e;
    return CR_OK;
}

static inline cr_async *
cr_libev_async(cr_libev *e)
{
    return e->async;
}

/* cr_libev_free: cr_async_free, then the adapter's watchers. */
static inline void
cr_libev_free(cr_libev *e)
{
    if (e == NULL)
        return;
    cr_async_free(e->async);
    while (e->nwatches > 0) {
        ev_io_stop(e->loop, &e->watches[--e->nwatches]->io);
        free(e->watches[e->nwatches]);
    }
    free(e->watches);
    ev_timer_stop(e->loop, &e->timer);
    free(e);
}

#endif
