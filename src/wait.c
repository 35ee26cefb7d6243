/* SPDX-License-Identifier: MIT */
/*
 * The subscribe-then-retry loop of every waiting call.
 */
#include "config.h"

#include <time.h>

#include "wait.h"

/* While the subscription is not confirmed, messages may be missed: poll. */
#define UNCONFIRMED_POLL_MS 250
/* A wait that went in line without trying (spec->in_line) tries at the
 * latest after this long, in case those before it all leave. */
#define LINE_RECHECK_MS 100
#define IO_BACKOFF_MIN_MS 20
#define IO_BACKOFF_MAX_MS 1000

/* min() where -1 stands for "no bound". */
static int64_t
bound(int64_t a, int64_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

#define SPIN_INITIAL_MS 1
#define SPIN_MAX_MS 128

/* The waiting loop without pub/sub: back off exponentially with jitter
 * between attempts until the budget runs out; `rc` is the first attempt's
 * result. */
static cr_status
spin(cr_client *c, const cr__wait_spec *spec, int64_t deadline, cr_status rc)
{
    int64_t delay = SPIN_INITIAL_MS, k = 1, hint = -1, io_since = 0;

    while (rc == CR_BUSY || rc == CR_EIO) {
        int64_t now = cr__now_ms(), sleep = delay;
        unsigned char jitter = 0;

        if (rc == CR_EIO) {
            if (io_since == 0)
                io_since = now;
            if (now - io_since > c->reconnect_window_ms)
                break;
        } else {
            io_since = 0;
        }
        if (deadline >= 0) {
            if (now >= deadline) {
                rc = rc == CR_EIO ? CR_EIO : CR_BUSY;
                break;
            }
            sleep = bound(sleep, deadline - now);
        }
        cr__sleep_ms(sleep);
        if (atomic_load(&c->closing))
            return cr__fail(CR_ECLOSED, "the client is being freed");
        cr__random_bytes(&jitter, 1);
        delay = bound(delay * 2 + jitter % k, SPIN_MAX_MS);
        k++;
        rc = spec->attempt(spec->ctx, &hint);
    }
    return rc;
}

/* Records a contended wait that lasted from `start` until now. */
static void
count_wait(cr_client *c, int64_t start)
{
    uint64_t ms = (uint64_t)(cr__now_ms() - start);
    uint_fast64_t max = atomic_load(&c->stats.wait_time_max_ms);

    CR__STAT_ADD(&c->stats, contended_waits, 1);
    CR__STAT_ADD(&c->stats, wait_time_total_ms, ms);
    while (ms > max &&
           !atomic_compare_exchange_weak(&c->stats.wait_time_max_ms, &max, ms))
        ;
}

/* cr__wait's loop, after a first try that did not get it (`first`). */
static cr_status wait_more(cr_client *c, const cr__wait_spec *spec,
                           int64_t start, int64_t deadline, cr_status first,
                           bool in_line, const cr__sub_mark *mark,
                           int64_t hint);

cr_status
cr__wait(cr_client *c, const cr__wait_spec *spec)
{
    int64_t start = cr__now_ms(), hint = -1, read_at, patience;
    int64_t deadline = spec->wait_ms < 0 ? -1 : start + spec->wait_ms;
    cr__sub_mark mark = {0, 0, 0};
    uint64_t released;
    int local;
    bool in_line;
    cr_status rc;

    cr__call_wait(c, spec->wait_ms);
    local = spec->wait_ms != 0 && spec->channel != NULL
                ? cr__pubsub_waiters(c->pubsub, spec->channel, &released,
                                     &read_at, &mark)
                : -1;
    in_line = spec->in_line && local > 0;
    rc = in_line ? CR_BUSY : spec->attempt(spec->ctx, &hint);
    if (rc == CR_OK)
        CR__STAT_ADD(&c->stats, acquisitions, 1);
    if ((rc != CR_BUSY && rc != CR_EIO) || spec->wait_ms == 0)
        return rc;
    /* Retries do not wait for a connection slot past the wait's end: they
     * come back by themselves. */
    patience = cr__call_patience_set(deadline);
    rc = wait_more(c, spec, start, deadline, rc, in_line, &mark, hint);
    cr__call_patience_set(patience);
    return rc;
}

static cr_status
wait_more(cr_client *c, const cr__wait_spec *spec, int64_t start,
          int64_t deadline, cr_status first, bool in_line,
          const cr__sub_mark *mark, int64_t hint)
{
    int64_t io_since = 0, backoff = 0;
    cr__sub *sub = NULL;
    cr__fence fence = {-1, 0, 0};
    uint64_t ticket = 0;
    cr_status rc = first;

    if (spec->channel == NULL) {
        rc = spin(c, spec, deadline, rc);
        if (rc == CR_OK)
            CR__STAT_ADD(&c->stats, acquisitions, 1);
        count_wait(c, start);
        return rc;
    }
    rc = cr__pubsub_subscribe(c->pubsub, spec->channel, spec->decode,
                              bound(spec->wait_ms, c->subscription_timeout_ms),
                              &sub);
    if (rc != CR_OK && rc != CR_TIMEOUT)
        return rc; /* closing, out of memory, or refused (an ACL) */
    if (in_line) {
        hint = LINE_RECHECK_MS;
        rc = CR_BUSY;
    } else if (first == CR_BUSY && cr__sub_quiet_since(c->pubsub, sub, mark)) {
        /* Subscribed since before the try and nothing read since: a
         * release after the try is still to come as a message, and a try
         * now would only see what the first saw. */
        rc = CR_BUSY;
    } else {
        rc = spec->attempt(spec->ctx, &hint);
    }
    if (spec->trust_open && (rc == CR_BUSY || rc == CR_EIO))
        cr__sub_fence(c->pubsub, sub, &fence);
    while (rc == CR_BUSY || rc == CR_EIO) {
        int64_t now = cr__now_ms(), sleep;
        bool opened = false;
        cr_status woke;

        if (rc == CR_EIO) {
            if (io_since == 0)
                io_since = now;
            if (now - io_since > c->reconnect_window_ms)
                break;
            backoff = backoff == 0 ? IO_BACKOFF_MIN_MS
                                   : bound(backoff * 2, IO_BACKOFF_MAX_MS);
            sleep = backoff;
        } else {
            io_since = 0;
            backoff = 0;
            sleep = hint >= 0 ? (hint > spec->min_sleep_ms ? hint : spec->min_sleep_ms)
                              : -1;
        }
        if (!cr__sub_confirmed(c->pubsub, sub))
            sleep = bound(sleep, UNCONFIRMED_POLL_MS);
        sleep = bound(sleep, spec->max_sleep_ms);
        if (deadline >= 0) {
            if (now >= deadline) {
                rc = rc == CR_EIO ? CR_EIO : CR_BUSY;
                break;
            }
            sleep = bound(sleep, deadline - now);
        }
        woke = cr__sub_wait(c->pubsub, sub, sleep, &ticket,
                            spec->trust_open ? &fence : NULL, &opened);
        if (woke != CR_OK && woke != CR_TIMEOUT)
            rc = woke; /* closing, or the subscription was refused */
        else if (opened)
            rc = CR_OK; /* counted down to zero during this wait */
        else
            rc = spec->attempt(spec->ctx, &hint);
    }
    cr__pubsub_unsubscribe(c->pubsub, sub);
    if (rc == CR_OK)
        CR__STAT_ADD(&c->stats, acquisitions, 1);
    count_wait(c, start);
    if (rc == CR_ECLOSED)
        return cr__fail(CR_ECLOSED, "the client is being freed");
    return rc;
}
