/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API on a libuv loop (header only: include it in the
 * program that owns the uv_loop_t, and link libuv there).
 *
 *     cr_libuv *u;
 *     cr_libuv_new(client, uv_default_loop(), &u);
 *     cr_async_lock(cr_libuv_async(u), lock, owner, ...);
 *     uv_run(uv_default_loop(), UV_RUN_DEFAULT);
 *     cr_libuv_free(u);   (its handles close at the loop's next turn)
 *
 * Thread safety: as the loop's; use it from the loop's thread.
 */
#ifndef CREDISSON_ASYNC_LIBUV_H
#define CREDISSON_ASYNC_LIBUV_H

#include <stdlib.h>

#include <uv.h>

#include <credisson/async.h>

typedef struct cr_libuv cr_libuv;

typedef struct cr_libuv_watch {
    uv_poll_t poll;    /* first: the callback finds the watch from it */
    cr_libuv *owner;
    int fd;
} cr_libuv_watch;

struct cr_libuv {
    uv_loop_t *loop;
    cr_async *async;
    uv_timer_t timer;
    cr_libuv_watch **watches;
    int nwatches, capwatches;
    bool freed;
};

static void
cr_libuv_on_poll(uv_poll_t *p, int status, int events)
{
    cr_libuv_watch *w = (cr_libuv_watch *)p;

    if (w->owner == NULL)
        return;
    cr_async_io(w->owner->async, w->fd,
                (status < 0 || (events & UV_READABLE) ? CR_WATCH_READ : 0) |
                ((events & UV_WRITABLE) ? CR_WATCH_WRITE : 0));
}

static void
cr_libuv_on_timer(uv_timer_t *t)
{
    cr_libuv *u = (cr_libuv *)t->data;

    cr_async_timeout(u->async);
}

static void
cr_libuv_closed(uv_handle_t *h)
{
    free(h);
}

static void
cr_libuv_timer_closed(uv_handle_t *h)
{
    free(h->data); /* the adapter, which holds the timer */
}

static void
cr_libuv_watch_fd(void *data, int fd, int events)
{
    cr_libuv *u = (cr_libuv *)data;
    int i, flags = ((events & CR_WATCH_READ) ? UV_READABLE : 0) |
                   ((events & CR_WATCH_WRITE) ? UV_WRITABLE : 0);

    for (i = 0; i < u->nwatches && u->watches[i]->fd != fd; i++)
        ;
    if (i < u->nwatches && events != 0) {
        uv_poll_start(&u->watches[i]->poll, flags, cr_libuv_on_poll);
        return;
    }
    if (i < u->nwatches) {
        /* The descriptor may be closed next: stop polling it now. */
        uv_poll_stop(&u->watches[i]->poll);
        u->watches[i]->owner = NULL;
        uv_close((uv_handle_t *)&u->watches[i]->poll, cr_libuv_closed);
        u->watches[i] = u->watches[--u->nwatches];
        return;
    }
    if (events == 0)
        return;
    if (u->nwatches == u->capwatches) {
        int cap = u->capwatches ? 2 * u->capwatches : 8;
        cr_libuv_watch **w = (cr_libuv_watch **)realloc(
            u->watches, (size_t)cap * sizeof(*w));

        if (w == NULL)
            return;
        u->watches = w;
        u->capwatches = cap;
    }
    if ((u->watches[u->nwatches] =
             (cr_libuv_watch *)calloc(1, sizeof(cr_libuv_watch))) == NULL)
        return;
    u->watches[u->nwatches]->owner = u;
    u->watches[u->nwatches]->fd = fd;
    if (uv_poll_init(u->loop, &u->watches[u->nwatches]->poll, fd) != 0) {
        free(u->watches[u->nwatches]);
        return;
    }
    uv_poll_start(&u->watches[u->nwatches]->poll, flags, cr_libuv_on_poll);
    u->nwatches++;
}

static void
cr_libuv_set_timer(void *data, int64_t ms)
{
    cr_libuv *u = (cr_libuv *)data;

    if (u->freed)
        return;
    if (ms < 0)
        uv_timer_stop(&u->timer);
    else
        uv_timer_start(&u->timer, cr_libuv_on_timer, (uint64_t)ms, 0);
}

/* cr_libuv_new: an asynchronous handle of `client` on `loop`.
 * Ownership: *out needs cr_libuv_free().
 * Returns cr_async_new's statuses: CR_OK, CR_EINVAL, CR_ENOMEM (the
 * adapter's memory too), CR_ECLOSED, CR_EFORKED. */
static inline cr_status
cr_libuv_new(cr_client *client, uv_loop_t *loop, cr_libuv **out)
{
    cr_libuv *u = (cr_libuv *)calloc(1, sizeof(*u));
    cr_loop l;
    cr_status rc;

    if (u == NULL)
        return CR_ENOMEM;
    u->loop = loop;
    uv_timer_init(loop, &u->timer);
    u->timer.data = u;
    l.watch = cr_libuv_watch_fd;
    l.timer = cr_libuv_set_timer;
    l.data = u;
    if ((rc = cr_async_new(client, &l, &u->async)) != CR_OK) {
        u->freed = true;
        uv_close((uv_handle_t *)&u->timer, cr_libuv_timer_closed);
        return rc;
    }
    *out = u;
    return CR_OK;
}

static inline cr_async *
cr_libuv_async(cr_libuv *u)
{
    return u->async;
}

/* cr_libuv_free: cr_async_free, then the adapter's handles, which libuv
 * closes (and this frees) at the loop's next turn: run the loop once more
 * before closing it. */
static inline void
cr_libuv_free(cr_libuv *u)
{
    if (u == NULL)
        return;
    cr_async_free(u->async);
    while (u->nwatches > 0) {
        cr_libuv_watch *w = u->watches[--u->nwatches];

        uv_poll_stop(&w->poll);
        w->owner = NULL;
        uv_close((uv_handle_t *)&w->poll, cr_libuv_closed);
    }
    free(u->watches);
    u->freed = true;
    uv_timer_stop(&u->timer);
    uv_close((uv_handle_t *)&u->timer, cr_libuv_timer_closed);
}

#endif
