/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API's handle (credisson/async.h): made on a client and
 * a loop, driven by the loop's reports, freed with its requests. The
 * requests themselves are each object's asynchronous half (request.h
 * says what they share).
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "request.h"

/* Owner ids of the asynchronous API start here (cr_thread_id counts up
 * from 1 and never gets there). */
#define OWNER_BASE ((int64_t)1 << 62)

static atomic_int_fast64_t next_owner = 0;

int64_t
cr_async_owner_id(void)
{
    return OWNER_BASE + atomic_fetch_add(&next_owner, 1);
}

cr_status
cr_async_new(cr_client *c, const cr_loop *loop, cr_async **out)
{
    cr_async *a;
    cr__op op;
    cr_status rc;

    cr__clear_error();
    if (out == NULL || loop == NULL || loop->watch == NULL ||
        loop->timer == NULL)
        return cr__fail(CR_EINVAL, "out, loop or one of its functions is "
                        "NULL");
    if ((rc = cr__client_enter(c, &op)) != CR_OK)
        return rc;
    if ((a = calloc(1, sizeof(*a))) == NULL) {
        cr__client_leave(c);
        return CR_ENOMEM;
    }
    a->client = c;
    a->done_tail = &a->done;
    if ((rc = cr__aio_new(c, loop, &a->io)) != CR_OK) {
        free(a);
        cr__client_leave(c);
        return rc;
    }
    a->magic = CR__ASYNC_MAGIC;
    cr__client_leave(c);
    *out = a;
    return CR_OK;
}

void
cr_async_free(cr_async *a)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return;
    if (cr__aio_dispatching(a->io)) {
        a->free_later = true; /* when the dispatch returns */
        return;
    }
    a->freeing = true;
    while (a->pending != NULL) {
        cr_request *q = a->pending;
        cr_status closed = cr__fail(CR_ECLOSED, "the asynchronous handle is "
                                    "being freed");

        q->cancelled = true;
        if (q->type->abandon != NULL)
            q->type->abandon(q);
        if (q->type->attempt != NULL)
            cr__request_abandon(q, closed); /* out of its wait */
        else
            cr__request_end(q, closed);
    }
    cr__aio_free(a->io); /* commands out end now: their requests ended */
    cr__async_run_callbacks(a); /* the loop's part is gone */
    a->magic = 0;
    free(a);
}

void
cr_async_io(cr_async *a, int fd, int events)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return;
    cr__aio_ready(a->io, fd, events);
    if (a->free_later)
        cr_async_free(a);
}

void
cr_async_timeout(cr_async *a)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return;
    cr__aio_timeout(a->io);
    if (a->free_later)
        cr_async_free(a);
}

int
cr_async_fds(cr_async *a, cr_async_fd *fds, int max, int64_t *timeout_ms)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC || timeout_ms == NULL ||
        (fds == NULL && max > 0))
        return 0;
    return cr__aio_fds(a->io, fds, max, timeout_ms);
}

void
cr_async_cancel(cr_request *q)
{
    if (q == NULL || q->ended || q->cancelled)
        return;
    q->cancelled = true;
    if (q->type->cancel != NULL)
        q->type->cancel(q);
    else if (q->type->attempt != NULL)
        cr__request_end_wait_now(q, CR_ECANCELED);
    /* A one-command request ends when its command answers. */
}
