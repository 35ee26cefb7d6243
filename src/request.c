/* SPDX-License-Identifier: MIT */
/*
 * The requests of the asynchronous API (see request.h): their life, the
 * one-command request, and the driver of the wait state machine on the
 * loop.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "request.h"

/* ------------------------------------------------------------- life */

/* Frees `q` and what it owns. */
static void
request_free(cr_request *q)
{
    if (q->type->release != NULL)
        q->type->release(q);
    free(q);
}

bool
cr__request_late(cr_request *q)
{
    if (!q->ended)
        return false;
    if (q->orphaned)
        request_free(q);
    return true;
}

bool
cr__may_have_run(cr_status rc, const cr__cmd *cmd)
{
    return cmd->sent && (rc == CR_EIO || rc == CR_ECLOSED);
}

/* Runs the callbacks of the requests that ended: `all`, or as many as the
 * dispatch's budget allows. */
static void
run_callbacks(cr_async *a, bool all)
{
    cr_request *q;

    while ((q = a->done) != NULL && (all || cr__aio_spend(a->io))) {
        a->done = q->done_next;
        if (a->done == NULL)
            a->done_tail = &a->done;
        q->type->callback(q);
        if (q->busy)
            q->orphaned = true; /* its command's reply frees it */
        else
            request_free(q);
    }
}

static void
run_done(void *arg)
{
    cr_async *a = arg;

    run_callbacks(a, false);
    if (a->done != NULL && !a->freeing)
        cr__aio_after(a->io, &a->done_timer, 0, run_done, a);
}

void
cr__async_run_callbacks(cr_async *a)
{
    run_callbacks(a, true);
}

/* Takes `q` off its handle's pending list. */
static void
unlink_pending(cr_request *q)
{
    if (q->prev != NULL)
        q->prev->next = q->next;
    else
        q->async->pending = q->next;
    if (q->next != NULL)
        q->next->prev = q->prev;
}

void
cr__request_end(cr_request *q, cr_status rc)
{
    cr_async *a = q->async;

    if (q->ended)
        return;
    q->ended = true;
    q->rc = q->cancelled && rc != CR_ECLOSED && !q->final ? CR_ECANCELED : rc;
    cr__aio_cancel_timer(a->io, &q->timer);
    cr__aio_cancel_timer(a->io, &q->bound);
    cr__aio_wake_stop(a->io, &q->sleeper);
    unlink_pending(q);
    q->done_next = NULL;
    *a->done_tail = q;
    a->done_tail = &q->done_next;
    if (!a->freeing)
        cr__aio_after(a->io, &a->done_timer, 0, run_done, a);
}

cr_request *
cr__request_new(cr_async *a, const cr__request_type *type, size_t size,
                void *userdata)
{
    cr_request *q = calloc(1, size);

    if (q == NULL)
        return NULL;
    q->async = a;
    q->type = type;
    q->userdata = userdata;
    q->next = a->pending;
    if (a->pending != NULL)
        a->pending->prev = q;
    a->pending = q;
    return q;
}

cr_status
cr__request_discard(cr_request *q, cr_status rc)
{
    cr_async *a = q->async;

    unlink_pending(q);
    request_free(q);
    cr__client_leave(a->client);
    return rc;
}

cr_status
cr__async_enter(cr_async *a, const void *obj, uint32_t magic,
                const char *kind, bool any_client)
{
    cr__op op;
    cr_status rc = cr__object_enter(obj, magic, kind, &op);

    if (rc != CR_OK)
        return rc;
    cr__object_leave(obj);
    cr__clear_error();
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return cr__fail(CR_EINVAL, "not a live asynchronous handle");
    if (a->freeing || a->free_later)
        return cr__fail(CR_ECLOSED, "the asynchronous handle is being freed");
    if ((rc = cr__client_enter(a->client, &op)) != CR_OK)
        return rc;
    if (!any_client && ((const cr__object *)obj)->client != a->client) {
        cr__client_leave(a->client);
        return cr__fail(CR_EINVAL, "%s is a handle of another client than "
                        "the asynchronous handle's",
                        ((const cr__object *)obj)->name);
    }
    return CR_OK;
}

cr_status
cr__request_started(cr_async *a, cr_request *q, cr_request **req)
{
    if (req != NULL)
        *req = q;
    cr__client_leave(a->client);
    return CR_OK;
}

void
cr__request_op(const cr_request *q, cr__op *op)
{
    cr__op_begin(op, q->async->client, -1);
}

/* ----------------------------------------------- one-command requests */

/* The reply of a one-command request. */
static void
command_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr__command_request *q = ctx;

    (void)cmd;
    q->busy = false;
    rc = q->read(q, rc, r);
    cr__request_end((cr_request *)q, rc);
}

/* Its callback. */
static void
command_callback(cr_request *q)
{
    cr__command_request *c = (cr__command_request *)q;

    if (c->fn != NULL)
        c->fn(q->userdata, q->rc, c->value);
}

static const cr__request_type command_type = {
    .callback = command_callback,
};

cr_status
cr__command_start(cr_async *a, void *obj, cr_status rc,
                  cr__script_call *call, unsigned flags,
                  cr_status (*read)(cr__command_request *, cr_status,
                                    cr__reply *),
                  cr_async_fn fn, void *userdata, cr_request **req,
                  const cr__request_type *type, size_t size,
                  cr__command_request **out)
{
    cr__command_request *q = NULL;

    if (rc == CR_OK &&
        (q = (cr__command_request *)cr__request_new(
             a, type != NULL ? type : &command_type,
             size != 0 ? size : sizeof(*q), userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        cr__script_call_free(call);
        cr__client_leave(a->client);
        return rc;
    }
    q->fn = fn;
    q->read = read;
    q->obj = obj;
    q->busy = true;
    q->sent_us = cr__now_us();
    rc = cr__aio_script(a->io, call, flags, command_replied, q);
    cr__script_call_free(call);
    if (rc != CR_OK) {
        q->busy = false;
        return cr__request_discard((cr_request *)q, rc);
    }
    if (out != NULL)
        *out = q;
    return cr__request_started(a, (cr_request *)q, req);
}

cr_status
cr__command_read_number(cr__command_request *q, cr_status rc, cr__reply *r)
{
    return rc == CR_OK ? cr__reply_i64(r, "the script", &q->value) : rc;
}

cr_status
cr__command_read_flag(cr__command_request *q, cr_status rc, cr__reply *r)
{
    bool v = false;

    if (rc == CR_OK && (rc = cr__reply_bool(r, "the script", &v)) == CR_OK)
        q->value = v;
    return rc;
}

/* ---------------------------------------------------- waiting requests */

/* A subscription or a sleep ended. */
static void
woke(void *ctx, cr_status woke, bool opened)
{
    cr_request *q = ctx;

    if (q->subscribing)
        q->w.got = q->sleeper.sub;
    /* The sleeper is out of every line now, and the subscription is the
     * wait's to give back: a stale pointer here would have the sleeper's
     * later stop read a subscription freed once it lingered out. */
    q->sleeper.sub = NULL;
    q->sleeping = false;
    q->subscribing = false;
    q->w.woke = woke;
    q->w.opened = opened;
    cr__request_drive(q);
}

/* A sleep without a subscription ended. */
static void
slept(void *arg)
{
    cr_request *q = arg;

    q->w.woke = atomic_load(&q->async->client->closing) ? CR_ECLOSED
                                                        : CR_TIMEOUT;
    cr__request_drive(q);
}

/* A step of a waiting request from a timer: the first, after the
 * releaser's turn, or one a cancel brought forward. */
static void
step_later(void *arg)
{
    cr__request_drive(arg);
}

void
cr__request_drive(cr_request *q)
{
    cr_async *a = q->async;

    switch (cr__wait_step(&q->w, cr__now_ms())) {
    case CR__WAIT_ATTEMPT:
        if (q->cancelled && !q->ignores_cancel) {
            q->w.rc = CR_ECANCELED;
            cr__request_drive(q);
            return;
        }
        q->type->attempt(q);
        return;
    case CR__WAIT_SUBSCRIBE:
        q->sleeper.fn = woke;
        q->sleeper.ctx = q;
        q->w.got = NULL;
        q->subscribing = true;
        cr__aio_subscribe(a->io, q->w.sub_channel, q->w.sub_decode,
                          q->w.sleep_ms, &q->sleeper);
        return;
    case CR__WAIT_SLEEP:
        if (q->cancelled && !q->ignores_cancel) {
            q->w.woke = CR_ECANCELED;
            cr__request_drive(q);
            return;
        }
        if (q->w.sleep_on != NULL) {
            q->sleeper.fn = woke;
            q->sleeper.ctx = q;
            q->sleeping = true;
            cr__aio_sleep(a->io, q->w.sleep_on, q->w.sleep_ms,
                          q->w.spec.trust_open ? &q->w.fence : NULL,
                          &q->sleeper);
        } else {
            cr__aio_after(a->io, &q->timer, q->w.sleep_ms, slept, q);
        }
        return;
    case CR__WAIT_DONE: {
        cr__op op;

        cr__request_op(q, &op);
        cr__wait_report(&q->w, &op, cr__now_ms());
        q->type->finish(q);
        return;
    }
    }
}

void
cr__request_attempt_failed(cr_request *q, cr_status rc)
{
    if (rc == CR_OK)
        return;
    q->busy = false;
    q->w.rc = rc;
    cr__request_drive(q);
}

void
cr__request_end_wait_now(cr_request *q, cr_status woke)
{
    cr__aio *io = q->async->io;

    q->w.spec.wait_ms = 0;
    q->w.deadline = cr__now_ms();
    if (q->sleeping || q->subscribing) {
        cr__aio_wake_stop(io, &q->sleeper);
        if (q->subscribing) {
            /* The reference is given back; the wait sees a refusal. */
            cr__aio_subs.unsubscribe(io, q->sleeper.sub);
            q->sleeper.sub = NULL;
        }
        q->sleeping = q->subscribing = false;
        q->w.woke = woke;
        q->w.opened = false;
        cr__aio_after(io, &q->timer, 0, step_later, q);
    } else if (q->timer.index != 0) {
        cr__aio_after(io, &q->timer, 0, q->timer.fn, q);
    }
}

/* Takes waiting request q out of its wait, at whatever step it is: what
 * it subscribed to is given back, its sleep ends. */
static void
detach(cr_request *q)
{
    cr__aio *io = q->async->io;
    void *subs[3] = {q->subscribing ? q->sleeper.sub : NULL, q->w.sub,
                     q->w.shared_sub};
    int i;

    cr__aio_wake_stop(io, &q->sleeper);
    for (i = 0; i < 3; i++)
        if (subs[i] != NULL)
            cr__aio_subs.unsubscribe(io, subs[i]);
    q->w.sub = q->w.shared_sub = q->sleeper.sub = NULL;
    q->sleeping = q->subscribing = false;
}

void
cr__request_abandon(cr_request *q, cr_status rc)
{
    detach(q);
    cr__request_end(q, rc);
}

/* A waiting request's bound, its wait and one command timeout (and the
 * replica sync's, when on), passed: it ends now, as a blocking call
 * returns at its deadline. A command of it still out does not hold it
 * (what it takes is given back when it answers); otherwise the wait ends
 * as when it runs out, without a last attempt, and what the request must
 * still do goes to the background (q->overdue). */
static void
bound_passed(void *arg)
{
    cr_request *q = arg;

    if (q->ended)
        return;
    q->overdue = true;
    if (q->busy) {
        cr__request_abandon(q, cr__fail(CR_EIO, "no answer within the wait "
                                        "and one command timeout"));
        return;
    }
    detach(q);
    cr__aio_cancel_timer(q->async->io, &q->timer);
    q->w.rc = q->w.rc == CR_EIO ? CR_EIO : CR_BUSY;
    q->type->finish(q);
}

static void turn_step(void *arg);

/* The count wait of a request's turn: the loop looks at the count at the
 * latest when the turn's rule says it may be over. */
static void
turn_count(void *arg)
{
    cr_request *q = arg;
    cr__aio *io = q->async->io;
    cr__sub_seen seen = {.waiters = -1};
    int64_t now = cr__now_us(), check = now;

    cr__aio_subs.waiters(io, q->turn_channel, &seen, NULL);
    if (cr__turn_count_over(&q->turn, &seen, now, &check))
        turn_step(q);
    else
        cr__aio_after(io, &q->timer, (check - now + 999) / 1000, turn_count,
                      q);
}

/* The releaser's turn of waiting request q (handoff.h) on the loop, as
 * cr__wait_turn keeps it for a blocking call; the wait's first step comes
 * once it is over. */
static void
turn_step(void *arg)
{
    cr_request *q = arg;
    cr__aio *io = q->async->io;
    cr__sub_seen seen = {.waiters = -1};
    int64_t wait_us = 0;

    cr__aio_subs.waiters(io, q->turn_channel, &seen, NULL);
    switch (cr__turn_next(&q->turn, &seen, cr__now_us(), &wait_us)) {
    case CR__TURN_COUNT:
        turn_count(q);
        return;
    case CR__TURN_SLEEP:
        q->tune = cr__turn_tune(&q->turn, &seen);
        cr__aio_after(io, &q->timer, (wait_us + 999) / 1000, step_later, q);
        return;
    case CR__TURN_GO:
        q->tune = cr__turn_tune(&q->turn, &seen);
        cr__request_drive(q);
        return;
    }
}

void
cr__request_wait(cr_request *q, const cr__wait_spec *spec,
                 const cr__handoff *h, const char *channel, bool bounded)
{
    cr_async *a = q->async;

    cr__wait_begin_on(&q->w, a->client, spec, &cr__aio_subs, a->io,
                      cr__now_ms());
    if (h != NULL && cr__handoff_turn(h, cr__now_us(), spec->wait_ms,
                                      &q->turn)) {
        q->turn_channel = channel;
        cr__aio_after(a->io, &q->timer, 0, turn_step, q);
    } else {
        cr__aio_after(a->io, &q->timer, 0, step_later, q);
    }
    if (bounded)
        cr__request_bound(q);
}

void
cr__request_bound(cr_request *q)
{
    cr_async *a = q->async;

    if (q->w.spec.wait_ms >= 0)
        cr__aio_after(a->io, &q->bound,
                      q->w.spec.wait_ms + a->client->command_timeout_ms +
                          a->client->conn_cfg.sync_timeout_ms,
                      bound_passed, q);
}

void
cr__request_wait_again(cr_request *q, const cr__wait_spec *spec)
{
    cr_async *a = q->async;

    cr__wait_begin_on(&q->w, a->client, spec, &cr__aio_subs, a->io,
                      cr__now_ms());
    cr__aio_after(a->io, &q->timer, 0, step_later, q);
}
