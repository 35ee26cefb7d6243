/* SPDX-License-Identifier: MIT */
/*
 * RCountDownLatch (protocol section 9): the count in the string key N, and
 * the channel redisson_countdownlatch__channel__{N} (always with braces)
 * carrying 0 (reached zero: open) and 1 (new count, or deleted).
 *
 * Waiting uses the shared loop (wait.c) in latch mode: a 0 wakes every
 * local waiter, and one read after the PONG of a PING the waiter asked for
 * once subscribed and still closed (a fence, pubsub.h) ends its wait at
 * once: that 0 was published during the wait. Otherwise each wake-up makes
 * another attempt,
 * one look at the latch (latch_await.lua):
 * closed (with N's remaining time to live as the hint, so a waiter also
 * wakes when the latch expires), open, or expired. Waiters look again at
 * least every CR__OBJECT_RECHECK_MS, so a latch deleted (which publishes 1
 * and opens nothing in Java) or a missed message cannot block them.
 *
 * The expiry is credisson's own; see include/credisson/latch.h for how the
 * marker key {N}:credisson_latch_expiry tells "expired" from "counted down
 * to zero" while leaving N, the channel and the messages exactly as
 * Redisson has them.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credisson/latch.h"
#include "latch.h"
#include "request.h"
#include "object.h"

#define LATCH_MAGIC 0x4352434cu /* "CRCL" */

static void free_parts(void *obj);

struct cr_latch {
    CR__OBJECT_FIELDS
    char *channel; /* redisson_countdownlatch__channel__{N} */
    char *marker;  /* {N}:credisson_latch_expiry */
};

/* The latch's calls in halves, a script call and the reading of its
 * reply, so that the blocking and the asynchronous API send the same: a
 * look (CR_OK open, CR_BUSY closed with N's ttl in *hint, or with
 * must_exist never set, CR_EEXPIRED), a count down (CR_EEXPIRED when it
 * had expired; on CR_OK *left, may be NULL, gets the count left, 0 when
 * open or absent), trySetCount (arguments checked; reply: 1 when set,
 * cr__reply_bool). */
static cr_status look_call(const cr_latch *l, bool must_exist,
                           cr__script_call *call);
static cr_status look_reply(const cr_latch *l, cr_status rc, cr__reply *r,
                            int64_t *hint);
static cr_status count_down_call(const cr_latch *l, cr__script_call *call);
static cr_status count_down_reply(const cr_latch *l, cr_status rc,
                                  cr__reply *r, int64_t *left);
static cr_status set_call(const cr_latch *l, int64_t count, int64_t ttl_ms,
                          cr__script_call *call);

/* What a latch's messages mean: "0", the count reached zero, wakes every
 * waiter and opens it for good. */
static cr__wake decode_message(const char *payload, size_t len);

/* The guard of every latch call (*op: the call's operation; end it with
 * cr__object_leave). */
static cr_status
enter(const cr_latch *l, cr__op *op)
{
    return cr__object_enter(l, LATCH_MAGIC, "latch", op);
}

/* ------------------------------------------------------------- creation */

cr_status
cr_latch_new(cr_client *c, const char *name, cr_latch **out)
{
    cr_latch *l = NULL;
    cr_status rc = cr__check_out(out, "out");

    if (rc == CR_OK)
        rc = cr__object_new(c, name, LATCH_MAGIC, sizeof(*l), true,
                            (void **)&l);
    if (rc != CR_OK)
        return rc;
    l->channel = cr__name(CR__NAME_LATCH_CHANNEL, l->raw);
    l->marker = cr__name(CR__NAME_LATCH_MARKER, l->raw);
    if (l->channel == NULL || l->marker == NULL)
        rc = cr__fail(CR_ENOMEM, "out of memory");
    else
        rc = cr__name_check_slots(c->url.is_cluster, l->raw, l->channel);
    if (rc != CR_OK) {
        cr__object_free(l, free_parts);
        return rc;
    }
    *out = l;
    return CR_OK;
}

/* Frees what the handle owns beside its names. */
static void
free_parts(void *obj)
{
    cr_latch *l = obj;

    free(l->channel);
    free(l->marker);
}

void
cr_latch_free(cr_latch *l)
{
    if (l == NULL || l->magic != LATCH_MAGIC)
        return;
    cr__object_free(l, free_parts);
}

const char *
cr_latch_name(const cr_latch *l)
{
    return cr__object_name(l, LATCH_MAGIC);
}

/* ----------------------------------------------------------- operations */

static cr_status
set_call(const cr_latch *l, int64_t count, int64_t ttl_ms,
                   cr__script_call *call)
{
    cr_status rc;

    if ((rc = cr__check_range("count", count, 1,
                              CR_LATCH_COUNT_MAX)) != CR_OK ||
        (rc = cr__check_ttl(ttl_ms)) != CR_OK)
        return rc;
    return cr__build_latch_try_set_count(&(cr__latch_try_set_count_args){
        .count = l->raw, .channel = l->channel, .marker = l->marker,
        .count_value = count, .publish = l->client->publish_cmd,
        .ttl_ms = ttl_ms, .marker_ms = ttl_ms + CR_LATCH_EXPIRY_GRACE_MS},
        call);
}

cr_status
cr_latch_try_set_count(cr_latch *l, int64_t count, int64_t ttl_ms, bool *set)
{
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    bool done = false;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    rc = set_call(l, count, ttl_ms, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(&op, &cmd, &call, &r);
    cr__script_call_free(&call);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "try_set_count", &done);
    if (rc == CR_OK && set != NULL)
        *set = done;
    cr__object_leave(l);
    return rc;
}

static cr_status
count_down_call(const cr_latch *l, cr__script_call *call)
{
    return cr__build_latch_count_down(&(cr__latch_count_down_args){
        .count = l->raw, .channel = l->channel, .marker = l->marker,
        .publish = l->client->publish_cmd,
        .grace_ms = CR_LATCH_EXPIRY_GRACE_MS,
        .opened_ms = CR_LATCH_OPENED_MARK_MS}, call);
}

static cr_status
count_down_reply(const cr_latch *l, cr_status rc, cr__reply *r,
                           int64_t *left)
{
    int64_t v = 0;

    if (rc != CR_OK)
        return rc;
    if (!cr__reply_int(r, &v) || v < -2)
        rc = cr__fail(CR_ESCRIPT, "count_down replied %s",
                      r->type == CR__REPLY_INTEGER ? "a bad number"
                                                   : "no integer");
    else if (v == -1)
        rc = cr__fail(CR_EEXPIRED, "latch %s expired before this count down",
                      l->name);
    else if (left != NULL)
        *left = v < 0 ? 0 : v;
    cr__reply_free(r);
    return rc;
}

/* One count down within `op`, not resent after a broken link: CR_OK with
 * the count left in *left (may be NULL), CR_EEXPIRED, or the failure. */
static cr_status
count_down(const cr__op *op, cr_latch *l, int64_t *left)
{
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc = count_down_call(l, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return count_down_reply(l, rc, r, left);
}

cr_status
cr_latch_count_down(cr_latch *l)
{
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    rc = count_down(&op, l, NULL);
    cr__object_leave(l);
    return rc;
}

cr_status
cr_latch_get_count(cr_latch *l, int64_t *count)
{
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(count, "count")) == CR_OK)
        rc = cr__object_get_count(&op, l, "latch", count);
    cr__object_leave(l);
    return rc;
}

cr_status
cr_latch_delete(cr_latch *l, bool *deleted)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    bool done = false;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    rc = cr__run_latch_delete(&op, &cmd,
        &(cr__latch_delete_args){.count = l->raw, .channel = l->channel,
                                 .marker = l->marker,
                                 .publish = l->client->publish_cmd,
                                 .grace_ms = CR_LATCH_EXPIRY_GRACE_MS},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "latch delete", &done);
    if (rc == CR_OK && deleted != NULL)
        *deleted = done;
    cr__object_leave(l);
    return rc;
}

/* -------------------------------------------------------------- waiting */

/* The latch's messages (protocol section 9): "0", the count reached zero,
 * wakes every waiter and opens it for good; "1" (a new count, or delete)
 * wakes nobody. */
static cr__wake
decode_message(const char *payload, size_t len)
{
    int64_t n;
    bool zero = cr__parse_i64(payload, len, &n) && n == 0;

    return (cr__wake){.wakes = zero ? CR__WAKE_ALL : 0, .opens = zero};
}

static cr_status
look_call(const cr_latch *l, bool must_exist,
                    cr__script_call *call)
{
    return cr__build_latch_await(&(cr__latch_await_args){
        .count = l->raw, .marker = l->marker,
        .grace_ms = CR_LATCH_EXPIRY_GRACE_MS,
        .must_exist = must_exist ? 1 : 0}, call);
}

static cr_status
look_reply(const cr_latch *l, cr_status rc, cr__reply *r,
                     int64_t *hint)
{
    int64_t count = 0, ttl = -1;

    *hint = -1;
    if (rc != CR_OK)
        return rc;
    if (r->type != CR__REPLY_ARRAY || r->elements != 2 ||
        !cr__reply_int(r->element[0], &count) ||
        !cr__reply_int(r->element[1], &ttl))
        rc = cr__fail(CR_ESCRIPT, "latch look replied no pair of integers");
    else if (count > 0 || count == -2)
        rc = CR_BUSY; /* closed, or (-2) never set when it must have been */
    else if (count == 0)
        rc = CR_OK;
    else
        rc = cr__fail(CR_EEXPIRED, "latch %s expired before it opened",
                      l->name);
    if (rc == CR_BUSY && ttl >= 0)
        *hint = ttl;
    cr__reply_free(r);
    return rc;
}

/* The rules of a wait for the latch to open (latch.h). */

void
cr__latch_opening_begin(cr__latch_opening *o, cr_latch *l, int64_t wait_ms,
                        bool count_first, bool must_exist,
                        cr__wait_spec *spec)
{
    *o = (cr__latch_opening){.latch = l, .counted = !count_first,
                             .must_exist = must_exist};
    *spec = (cr__wait_spec){
        .ev_object = "latch", .ev_name = l->name, .ev_busy = CR_TIMEOUT,
        .channel = l->channel, .decode = decode_message,
        .wait_ms = wait_ms, .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
        /* An opening message read after the fence ends the wait: the
         * count reached zero during it, and a re-armed latch must not hide
         * that. */
        .trust_open = true,
        /* The count down comes once subscribed, so that the opening it
         * causes is published to a subscription already in place. */
        .subscribe_first = count_first && wait_ms != 0,
    };
}

cr_status
cr__latch_opening_call(cr__latch_opening *o, cr__script_call *call)
{
    if (o->counted)
        return look_call(o->latch, o->must_exist, call);
    /* Marked before it is sent: a count down whose answer was lost is not
     * made again by the wait's retries (which then look). */
    o->counted = true;
    o->counting = true;
    return count_down_call(o->latch, call);
}

cr_status
cr__latch_opening_replied(cr__latch_opening *o, cr_status rc, cr__reply *r,
                          int64_t *hint)
{
    int64_t left = 0;

    *hint = -1;
    if (!o->counting)
        return look_reply(o->latch, rc, r, hint);
    o->counting = false;
    rc = count_down_reply(o->latch, rc, r, &left);
    return rc == CR_OK && left > 0 ? CR_BUSY : rc;
}

cr_status
cr__latch_opening_done(const cr__latch_opening *o, cr_status rc)
{
    cr_latch *l = o->latch;

    if (rc == CR_BUSY)
        return cr__fail(CR_TIMEOUT, "latch %s still %s when the wait ran out",
                        l->name, o->must_exist ? "closed or never set"
                                               : "closed");
    if (rc != CR_OK && !o->counted) {
        char why[256];

        snprintf(why, sizeof(why), "%s", cr_last_error());
        return cr__fail(rc, "latch %s not counted down: %s", l->name, why);
    }
    return rc;
}

/* One attempt of a blocking wait: the count down or a look. */
static cr_status
opening_attempt(const cr__op *op, cr__latch_opening *o, int64_t *hint)
{
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc = cr__latch_opening_call(o, &call);

    if (o->counting)
        cmd.flags = 0; /* a count down is never sent twice */
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return cr__latch_opening_replied(o, rc, r, hint);
}

/* Waits up to wait_ms for the latch to open, counting it down first when
 * `count_first`, subscribed before it does (a wait of 0 only counts
 * down); with `must_exist` a latch never set is waited for as a closed
 * one. */
static cr_status
wait_open(cr_latch *l, int64_t wait_ms, bool count_first, bool must_exist)
{
    cr__latch_opening o;
    cr__wait_spec spec;
    cr__wait w;
    int64_t hint = -1;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK)
        goto out;
    wait_ms = cr__op_wait(&op, wait_ms);
    cr__latch_opening_begin(&o, l, wait_ms, count_first, must_exist, &spec);
    if (count_first && wait_ms == 0) {
        rc = opening_attempt(&op, &o, &hint);
    } else {
        cr__wait_begin(&w, &op, &spec);
        for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
            rc = opening_attempt(&op, &o, &hint);
    }
    rc = cr__latch_opening_done(&o, rc);
out:
    cr__object_leave(l);
    return rc;
}

cr_status
cr_latch_count_down_and_await(cr_latch *l, int64_t wait_ms)
{
    return wait_open(l, wait_ms, true, false);
}

cr_status
cr_latch_await(cr_latch *l, int64_t wait_ms)
{
    return wait_open(l, wait_ms, false, false);
}

cr_status
cr_latch_await_opened(cr_latch *l, int64_t wait_ms)
{
    return wait_open(l, wait_ms, false, true);
}

/* ------------------------------------------------ the asynchronous half */

/* A wait on the loop (awaitAsync, countDownAndAwaitAsync): the wait state
 * machine as a blocking call runs it (request.h), the same spec, attempts
 * and end (cr__latch_opening). */
typedef struct opening_request {
    CR__REQUEST_FIELDS
    cr_async_fn fn;
    cr__latch_opening opening;
} opening_request;

static void
opening_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    opening_request *q = ctx;
    int64_t hint = -1;

    (void)cmd;
    q->busy = false;
    rc = cr__latch_opening_replied(&q->opening, rc, r, &hint);
    if (cr__request_late((cr_request *)q))
        return; /* nothing taken: nothing to give back */
    q->w.rc = rc;
    q->w.hint = hint;
    cr__request_drive((cr_request *)q);
}

static void
opening_attempt_async(cr_request *req)
{
    opening_request *q = (opening_request *)req;
    cr__script_call call = {0};
    cr_status rc = cr__latch_opening_call(&q->opening, &call);

    if (rc == CR_OK) {
        q->busy = true;
        /* A count down is never sent twice; a look may be. */
        rc = cr__aio_script(q->async->io, &call,
                            q->opening.counting ? 0 : CR__CMD_RETRY,
                            opening_replied, q);
    }
    cr__script_call_free(&call);
    cr__request_attempt_failed(req, rc);
}

static void
opening_finish(cr_request *req)
{
    opening_request *q = (opening_request *)req;

    cr__request_end(req, cr__latch_opening_done(&q->opening, q->w.rc));
}

static void
opening_callback(cr_request *req)
{
    opening_request *q = (opening_request *)req;

    if (q->fn != NULL)
        q->fn(req->userdata, req->rc, 0);
}

static const cr__request_type opening_type = {
    .attempt = opening_attempt_async,
    .finish = opening_finish,
    .callback = opening_callback,
};

/* A wait for the latch to open on the loop, counting down first when
 * `count_first` (with a wait of 0 it counts down only). */
static cr_status
async_wait_open(cr_async *a, cr_latch *l, int64_t wait_ms, bool count_first,
                cr_async_fn fn, void *userdata, cr_request **req)
{
    cr__wait_spec spec;
    opening_request *q;
    cr_status rc = cr__async_enter(a, l, LATCH_MAGIC, "latch", false);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q = (opening_request *)cr__request_new(a, &opening_type, sizeof(*q),
                                           userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->fn = fn;
    cr__latch_opening_begin(&q->opening, l, wait_ms, count_first, false,
                            &spec);
    spec.ev_async = true;
    cr__request_wait((cr_request *)q, &spec, NULL, NULL, true);
    return cr__request_started(a, (cr_request *)q, req);
}

cr_status
cr_async_latch_await(cr_async *a, cr_latch *l, int64_t wait_ms,
                     cr_async_fn fn, void *userdata, cr_request **req)
{
    return async_wait_open(a, l, wait_ms, false, fn, userdata, req);
}

cr_status
cr_async_latch_count_down_and_await(cr_async *a, cr_latch *l, int64_t wait_ms,
                                    cr_async_fn fn, void *userdata,
                                    cr_request **req)
{
    return async_wait_open(a, l, wait_ms, true, fn, userdata, req);
}

/* The reply of a count down. */
static cr_status
counted_down_read(cr__command_request *q, cr_status rc, cr__reply *r)
{
    return count_down_reply(q->obj, rc, r, NULL);
}

cr_status
cr_async_latch_count_down(cr_async *a, cr_latch *l, cr_async_fn fn,
                          void *userdata, cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = cr__async_enter(a, l, LATCH_MAGIC, "latch", false);

    if (rc != CR_OK)
        return rc;
    rc = count_down_call(l, &call);
    return cr__command_start(a, l, rc, &call, 0, counted_down_read, fn,
                             userdata, req, NULL, 0, NULL);
}

cr_status
cr_async_latch_try_set_count(cr_async *a, cr_latch *l, int64_t count,
                             int64_t ttl_ms, cr_async_fn fn, void *userdata,
                             cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = cr__async_enter(a, l, LATCH_MAGIC, "latch", false);

    if (rc != CR_OK)
        return rc;
    rc = set_call(l, count, ttl_ms, &call);
    return cr__command_start(a, l, rc, &call, 0, cr__command_read_flag, fn,
                             userdata, req, NULL, 0, NULL);
}
