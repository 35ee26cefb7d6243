/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API on a libevent 2 loop (header only: include it in
 * the program that owns the event_base, and link libevent there).
 *
 *     cr_libevent *e;
 *     cr_libevent_new(client, base, &e);
 *     cr_async_lock(cr_libevent_async(e), lock, owner, ...);
 *     event_base_dispatch(base);
 *     cr_libevent_free(e);
 *
 * Thread safety: as the event_base's; use it from the loop's thread.
 */
#ifndef CREDISSON_ASYNC_LIBEVENT_H
#define CREDISSON_ASYNC_LIBEVENT_H

#include <stdlib.h>

#include <event2/event.h>

#include <credisson/async.h>

typedef struct cr_libevent_watch {
    int fd;
    struct event *ev;
} cr_libevent_watch;

typedef struct cr_libevent {
    struct event_base *base;
    cr_async *async;
    struct event *timer;
    cr_libevent_watch *watches;
    int nwatches, capwatches;
} cr_libevent;

static void
cr_libevent_on_io(evutil_socket_t fd, short what, void *arg)
{
    cr_libevent *e = (cr_libevent *)arg;

    cr_async_io(e->async, (int)fd,
                ((what & EV_READ) ? CR_WATCH_READ : 0) |
                ((what & EV_WRITE) ? CR_WATCH_WRITE : 0));
}

static void
cr_libevent_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cr_async_timeout(((cr_libevent *)arg)->async);
}

static void
cr_libevent_watch_fd(void *data, int fd, int events)
{
    cr_libevent *e = (cr_libevent *)data;
    short what = (short)(EV_PERSIST | ((events & CR_WATCH_READ) ? EV_READ : 0) |
                         ((events & CR_WATCH_WRITE) ? EV_WRITE : 0));
    int i;

    for (i = 0; i < e->nwatches && e->watches[i].fd != fd; i++)
        ;
    if (i < e->nwatches) {
        event_free(e->watches[i].ev);
        e->watches[i] = e->watches[--e->nwatches];
    }
    if (events == 0)
        return;
    if (e->nwatches == e->capwatches) {
        int cap = e->capwatches ? 2 * e->capwatches : 8;
        cr_libevent_watch *w = (cr_libevent_watch *)realloc(
            e->watches, (size_t)cap * sizeof(*w));

        if (w == NULL)
            return;
        e->watches = w;
        e->capwatches = cap;
    }
    e->watches[e->nwatches].fd = fd;
    e->watches[e->nwatches].ev = event_new(e->base, fd, what,
                                           cr_libevent_on_io, e);
    if (e->watches[e->nwatches].ev != NULL &&
        event_add(e->watches[e->nwatches].ev, NULL) == 0)
        e->nwatches++;
}

static void
cr_libevent_set_timer(void *data, int64_t ms)
{
    cr_libevent *e = (cr_libevent *)data;
    struct timeval tv;

    if (ms < 0) {
        event_del(e->timer);
        return;
    }
    tv.tv_sec = (long)(ms / 1000);
    tv.tv_usec = (long)(ms % 1000) * 1000;
    event_add(e->timer, &tv);
}

/* cr_libevent_new: an asynchronous handle of `client` on `base`.
 * Ownership: *out needs cr_libevent_free().
 * Returns cr_async_new's statuses: CR_OK, CR_EINVAL, CR_ENOMEM (the
 * adapter's memory too), CR_ECLOSED, CR_EFORKED. */
static inline cr_status
cr_libevent_new(cr_client *client, struct event_base *base,
                cr_libevent **out)
{
    cr_libevent *e = (cr_libevent *)calloc(1, sizeof(*e));
    cr_loop loop;
    cr_status rc;

    if (e == NULL)
        return CR_ENOMEM;
    e->base = base;
    e->timer = evtimer_new(base, cr_libevent_on_timer, e);
    if (e->timer == NULL) {
        free(e);
        return CR_ENOMEM;
    }
    loop.watch = cr_libevent_watch_fd;
    loop.timer = cr_libevent_set_timer;
    loop.data = e;
    if ((rc = cr_async_new(client, &loop, &e->async)) != CR_OK) {
        event_free(e->timer);
        free(e);
        return rc;
    }
    *out = e;
    return CR_OK;
}

static inline cr_async *
cr_libevent_async(cr_libevent *e)
{
    return e->async;
}

/* cr_libevent_free: cr_async_free, then the adapter's events. */
static inline void
cr_libevent_free(cr_libevent *e)
{
    if (e == NULL)
        return;
    cr_async_free(e->async);
    while (e->nwatches > 0)
        event_free(e->watches[--e->nwatches].ev);
    free(e->watches);
    event_free(e->timer);
    free(e);
}

#endif
