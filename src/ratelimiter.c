/* SPDX-License-Identifier: MIT */
/*
 * RRateLimiter (the team's redisson-ratelimiter.md; "ratelimiter protocol
 * section" numbers below are its): the configuration hash N, the permits
 * left in {N}:value and the grant records in the zset {N}:permits, or
 * {N}:value:<client id> and {N}:permits:<client id> for a PER_CLIENT
 * limiter. Every script takes all five keys, and credisson's summary of
 * the records ({N}:credisson_rate_held, and its ":<client id>" form), and
 * picks by the stored type.
 *
 * A grant needs room in the records, not only in the stored value: the
 * permits of the live records plus those asked for stay within the rate
 * whatever the value says (a Java release() can raise it above that, and
 * Java's availablePermits() above the rate). The summary (the records'
 * permits, their number and the lowest member) spares the scripts counting
 * every record on each attempt while no other client changed them.
 *
 * An attempt sends a fresh 16-byte record id; the script finds a record
 * with that id before anything else, so the transport's one resend after
 * a broken link, and the next attempt after a lost reply (which keeps the
 * id), never take permits twice (Redisson's quirk Q1, fixed).
 *
 * Waiting has no pub/sub: Redisson publishes nothing when records expire.
 * The loop sleeps for the script's hint (the oldest record's expiry + 3
 * ms) on the client's abort descriptor, so that the client's free ends the
 * sleep, and gives up at once when the hint is beyond the caller's wait.
 */
#include "config.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "credisson/ratelimiter.h"
#include "object.h"
#include "request.h"
#include "wait.h"

#define RATE_MAGIC 0x4352524cu /* "CRRL" */

/* The size of an attempt's record id (fresh random bytes per attempt; the
 * same again after a lost reply, so the script finds its own grant). */
#define ID_BYTES 16

/* The answers of the acquire and available scripts (their first element). */
#define ANSWER_OK 0
#define ANSWER_WAIT 1
#define ANSWER_NO_RATE 2
#define ANSWER_OVER_RATE 3

static void free_parts(void *obj);

struct cr_rate_limiter {
    CR__OBJECT_FIELDS
    char *value;          /* {N}:value */
    char *client_value;   /* {N}:value:<client id> */
    char *records;        /* {N}:permits */
    char *client_records; /* {N}:permits:<client id> */
    char *held;           /* {N}:credisson_rate_held */
    char *client_held;    /* {N}:credisson_rate_held:<client id> */
};

/* The guard of every call (*op: the call's operation; end it with
 * cr__object_leave). */
static cr_status
enter(const cr_rate_limiter *l, cr__op *op)
{
    return cr__object_enter(l, RATE_MAGIC, "rate limiter", op);
}

/* ------------------------------------------------------------- creation */

cr_status
cr_rate_limiter_new(cr_client *c, const char *name, cr_rate_limiter **out)
{
    cr_rate_limiter *l = NULL;
    cr_status rc = cr__check_out(out, "out");

    if (rc == CR_OK)
        rc = cr__object_new(c, name, RATE_MAGIC, sizeof(*l), true,
                            (void **)&l);
    if (rc != CR_OK)
        return rc;
    if (!c->wire.rate_limiter) {
        cr__object_free(l, free_parts);
        return cr__fail(CR_ENOTSUP, "Redisson before 3.21 writes rate "
                        "limiter records that credisson cannot share (and "
                        "cannot read credisson's); the client names an "
                        "older Java side");
    }
    l->value = cr__name(CR__NAME_RATE_VALUE, l->raw);
    l->records = cr__name(CR__NAME_RATE_PERMITS, l->raw);
    l->held = cr__name(CR__NAME_RATE_HELD, l->raw);
    if (l->value != NULL && l->records != NULL && l->held != NULL) {
        l->client_value = cr__name_suffixed(l->value, c->id);
        l->client_records = cr__name_suffixed(l->records, c->id);
        l->client_held = cr__name_suffixed(l->held, c->id);
    }
    if (l->client_value == NULL || l->client_records == NULL ||
        l->client_held == NULL) {
        cr__object_free(l, free_parts);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *out = l;
    return CR_OK;
}

/* Frees what the handle owns beside its names. */
static void
free_parts(void *obj)
{
    cr_rate_limiter *l = obj;

    free(l->value);
    free(l->client_value);
    free(l->records);
    free(l->client_records);
    free(l->held);
    free(l->client_held);
}

void
cr_rate_limiter_free(cr_rate_limiter *l)
{
    if (l == NULL || l->magic != RATE_MAGIC)
        return;
    cr__object_free(l, free_parts);
}

const char *
cr_rate_limiter_name(const cr_rate_limiter *l)
{
    return cr__object_name(l, RATE_MAGIC);
}

/* -------------------------------------------------------- configuration */

/* The checks of both set calls (ratelimiter protocol section 3: Java's
 * keep-alive rule included, and that a Java side before 3.38 has no
 * keep-alive: its acquires would not refresh it, and the limiter would
 * vanish under it). */
static cr_status
check_rate(const cr_rate_limiter *l, cr_rate_type type, int64_t rate,
           int64_t interval_ms, int64_t keep_alive_ms)
{
    cr_status rc;

    if (type != CR_RATE_OVERALL && type != CR_RATE_PER_CLIENT)
        return cr__fail(CR_EINVAL, "rate type %d is neither CR_RATE_OVERALL "
                        "nor CR_RATE_PER_CLIENT", (int)type);
    if ((rc = cr__check_range("rate", rate, 1, CR_RATE_PERMITS_MAX)) != CR_OK ||
        (rc = cr__check_range("interval_ms", interval_ms, 1,
                              CR_DURATION_MAX)) != CR_OK ||
        (rc = cr__check_ttl(keep_alive_ms)) != CR_OK)
        return rc;
    if (keep_alive_ms != 0 && keep_alive_ms < interval_ms)
        return cr__fail(CR_EINVAL, "keep-alive time of %lld ms is shorter "
                        "than the interval of %lld ms", (long long)keep_alive_ms,
                        (long long)interval_ms);
    if (keep_alive_ms != 0 && !l->client->wire.keep_alive)
        return cr__fail(CR_ENOTSUP, "Redisson before 3.38 has no keep-alive "
                        "time: its acquires would not refresh it (the "
                        "client names an older Java side)");
    return CR_OK;
}

cr_status
cr_rate_limiter_try_set_rate(cr_rate_limiter *l, cr_rate_type type,
                             int64_t rate, int64_t interval_ms,
                             int64_t keep_alive_ms, bool *set)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    bool done = false;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = check_rate(l, type, rate, interval_ms, keep_alive_ms)) != CR_OK)
        goto out;
    rc = cr__run_rate_limiter_try_set_rate(&op, &cmd,
        &(cr__rate_limiter_try_set_rate_args){
            .config = l->raw, .rate = rate, .interval_ms = interval_ms,
            .type = type, .keep_alive_ms = keep_alive_ms},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "rate limiter try_set_rate", &done);
    if (rc == CR_OK && set != NULL)
        *set = done;
out:
    cr__object_leave(l);
    return rc;
}

cr_status
cr_rate_limiter_set_rate(cr_rate_limiter *l, cr_rate_type type, int64_t rate,
                         int64_t interval_ms, int64_t keep_alive_ms)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    bool done = false;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = check_rate(l, type, rate, interval_ms, keep_alive_ms)) != CR_OK)
        goto out;
    rc = cr__run_rate_limiter_set_rate(&op, &cmd,
        &(cr__rate_limiter_set_rate_args){
            .config = l->raw, .value = l->value,
            .client_value = l->client_value, .permits = l->records,
            .client_permits = l->client_records, .rate = rate,
            .interval_ms = interval_ms, .type = type,
            .keep_alive_ms = keep_alive_ms},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "rate limiter set_rate", &done);
out:
    cr__object_leave(l);
    return rc;
}

/* Whether the hash field in reply f is `name`. */
static bool
field_is(const cr__reply *f, const char *name)
{
    return f->type == CR__REPLY_STRING && f->len == strlen(name) &&
           memcmp(f->str, name, f->len) == 0;
}

cr_status
cr_rate_limiter_get_config(cr_rate_limiter *l, cr_rate_config *config)
{
    const char *argv[2] = {"HGETALL", NULL};
    cr_rate_config got = {CR_RATE_OVERALL, 0, 0, 0};
    cr__reply *r = NULL;
    size_t i;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    argv[1] = l->raw;
    if ((rc = cr__check_out(config, "config")) != CR_OK ||
        (rc = cr__command_retry(&op, 2, argv, NULL, &r)) != CR_OK)
        goto out;
    if (r->type != CR__REPLY_ARRAY) {
        rc = cr__fail(CR_ESCRIPT, "rate limiter %s: HGETALL replied no array",
                      l->name);
    } else {
        for (i = 0; i + 1 < r->elements && rc == CR_OK; i += 2) {
            const cr__reply *f = r->element[i];
            int64_t v = 0;

            if (!field_is(f, "rate") && !field_is(f, "interval") &&
                !field_is(f, "type") && !field_is(f, "keepAliveTime"))
                continue;
            if (!cr__reply_int(r->element[i + 1], &v) || v < 0) {
                rc = cr__fail(CR_ESCRIPT, "rate limiter %s: field %s holds "
                              "no count", l->name, f->str);
            } else if (field_is(f, "rate")) {
                got.rate = v;
            } else if (field_is(f, "interval")) {
                got.interval_ms = v;
            } else if (field_is(f, "type")) {
                got.type = v == 1 ? CR_RATE_PER_CLIENT : CR_RATE_OVERALL;
            } else {
                got.keep_alive_ms = v;
            }
        }
    }
    cr__reply_free(r);
    if (rc == CR_OK)
        *config = got;
out:
    cr__object_leave(l);
    return rc;
}

/* ------------------------------------------------------------ acquiring */

/* Reads an {answer, value} reply of the acquire or available script. */
static cr_status
answer_of(const cr_rate_limiter *l, cr__reply *r, int64_t *answer, int64_t *value)
{
    cr_status rc = CR_OK;

    if (r->type != CR__REPLY_ARRAY || r->elements != 2 ||
        !cr__reply_int(r->element[0], answer) ||
        !cr__reply_int(r->element[1], value) || *answer < ANSWER_OK ||
        *answer > ANSWER_OVER_RATE)
        rc = cr__fail(CR_ESCRIPT, "rate limiter %s: a script replied no "
                      "{answer, value} pair", l->name);
    cr__reply_free(r);
    if (rc == CR_OK && *answer == ANSWER_NO_RATE)
        rc = cr__fail(CR_EINVAL, "rate limiter %s is not initialized: it has "
                      "no rate (never set, deleted, or its keep-alive time "
                      "ran out)", l->name);
    return rc;
}

/* An acquire attempt of `permits` (checked by the caller) under record id
 * `id` (ID_BYTES, kept by the caller until the call is sent). */
static cr_status
acquire_call(const cr_rate_limiter *l, int64_t permits,
             const unsigned char *id, cr__script_call *call)
{
    return cr__build_rate_limiter_acquire(
        &(cr__rate_limiter_acquire_args){
            .config = l->raw, .value = l->value,
            .client_value = l->client_value, .permits = l->records,
            .client_permits = l->client_records, .held = l->held,
            .client_held = l->client_held, .count = permits,
            .id = {(const char *)id, ID_BYTES}},
        call);
}

/* The reply of an acquire attempt (rc: how the call went; frees r):
 * CR_OK granted, CR_BUSY with the script's hint in *hint (when the oldest
 * record expires, + 3 ms; at least 1), CR_EINVAL for more permits than the
 * rate or no rate, CR_ESCRIPT, or rc. */
static cr_status
acquire_reply(const cr_rate_limiter *l, int64_t permits, cr_status rc,
              cr__reply *r, int64_t *hint)
{
    int64_t answer = 0, value = 0;

    if (rc != CR_OK || (rc = answer_of(l, r, &answer, &value)) != CR_OK)
        return rc;
    switch (answer) {
    case ANSWER_OK:
        return CR_OK;
    case ANSWER_OVER_RATE:
        return cr__fail(CR_EINVAL, "rate limiter %s: %lld permits asked for, "
                        "more than its rate of %lld (Redisson: Requested "
                        "permits amount cannot exceed defined rate)", l->name,
                        (long long)permits, (long long)value);
    default:
        *hint = value > 0 ? value : 1;
        return CR_BUSY;
    }
}

/* The CR_BUSY of an acquisition of `permits` whose wait of wait_ms ran
 * out, the last hint `hint`, with its message. */
static cr_status
busy_status(const cr_rate_limiter *l, int64_t permits, int64_t wait_ms,
            int64_t hint)
{
    return cr__fail(CR_BUSY, "rate limiter %s: %lld permits not free within "
                    "%lld ms (the next comes back in %lld ms)", l->name,
                    (long long)permits, (long long)wait_ms, (long long)hint);
}

/* The rules of one acquisition, written once for the blocking call and
 * the loop's request: each attempt under a fresh record id, or the same
 * again after a lost reply (the script then finds its own grant); the
 * wait between attempts by wait.c's rule for a wait without a channel
 * (cr__wait_poll: the script's hint, or the I/O backoff); and the status
 * the wait ends with. */
typedef struct rate_acquisition {
    cr_rate_limiter *limiter;
    int64_t permits;
    unsigned char id[ID_BYTES];
    bool uncertain; /* the last attempt's reply was lost: keep its id */
} rate_acquisition;

/* An attempt's script call. */
static cr_status
rate_call(rate_acquisition *a, cr__script_call *call)
{
    cr_status rc;

    if (!a->uncertain && (rc = cr__random_bytes(a->id, ID_BYTES)) != CR_OK)
        return rc;
    return acquire_call(a->limiter, a->permits, a->id, call);
}

/* An attempt's outcome: CR_OK when granted; CR_BUSY with the script's hint
 * in *hint; CR_EINVAL for too many permits or no rate; CR_EIO... */
static cr_status
rate_replied(rate_acquisition *a, cr_status rc, cr__reply *r,
             const cr__cmd *cmd, int64_t *hint)
{
    if (rc != CR_OK) {
        /* Sent, its reply lost: it may have granted; the next attempt
         * asks with the same id and finds out. */
        a->uncertain = a->uncertain ||
                       (cmd->sent && (rc == CR_EIO || rc == CR_ECLOSED));
        return rc;
    }
    a->uncertain = false;
    return acquire_reply(a->limiter, a->permits, rc, r, hint);
}

/* The status the acquisition ends with, its wait `w` over. */
static cr_status
rate_done(const rate_acquisition *a, const cr__wait *w)
{
    if (w->rc == CR_BUSY)
        return busy_status(a->limiter, a->permits, w->spec.wait_ms,
                             w->hint);
    if (w->rc == CR_OK)
        CR__STAT_ADD(&a->limiter->client->run.stats, acquisitions, 1);
    return w->rc;
}

/* One attempt of a blocking acquisition. */
static cr_status
try_once(const cr__op *op, rate_acquisition *a, int64_t *hint)
{
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc = rate_call(a, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return rate_replied(a, rc, r, &cmd, hint);
}

/* Sleeps ms milliseconds, or until the client's free wakes its waits.
 * Returns false when the client is being freed. */
static bool
sleep_unless_closing(cr_client *c, int64_t ms)
{
    struct pollfd p = {c->abort_fd, POLLIN, 0};
    int64_t until = cr__now_ms() + ms, now;

    while (!atomic_load(&c->closing) && (now = cr__now_ms()) < until) {
        int64_t left = until - now;

        if (poll(&p, c->abort_fd >= 0 ? 1 : 0,
                 (int)(left > 1000000 ? 1000000 : left)) > 0)
            break;
    }
    return !atomic_load(&c->closing);
}

cr_status
cr_rate_limiter_try_acquire(cr_rate_limiter *l, int64_t permits,
                            int64_t wait_ms)
{
    rate_acquisition a = {.limiter = l, .permits = permits};
    cr__wait w;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_range("permits", permits, 1,
                              CR_RATE_PERMITS_MAX)) != CR_OK ||
        (rc = cr__check_wait(wait_ms)) != CR_OK)
        goto out;
    wait_ms = cr__op_wait(&op, wait_ms);
    cr__wait_poll_begin(&w, l->client, wait_ms, cr__now_ms());
    for (;;) {
        int64_t sleep;

        w.rc = try_once(&op, &a, &w.hint);
        if (!cr__wait_poll(&w, cr__now_ms(), &sleep))
            break;
        /* Retries do not wait for a connection slot past the wait. */
        op.slot_deadline = w.deadline;
        if (!sleep_unless_closing(l->client, sleep)) {
            w.rc = cr__fail(CR_ECLOSED, "the client is being freed");
            break;
        }
    }
    rc = rate_done(&a, &w);
out:
    cr__object_leave(l);
    return rc;
}

cr_status
cr_rate_limiter_acquire(cr_rate_limiter *l, int64_t permits)
{
    return cr_rate_limiter_try_acquire(l, permits, CR_WAIT_FOREVER);
}

/* --------------------------------------------------------------- queries */

cr_status
cr_rate_limiter_available_permits(cr_rate_limiter *l, int64_t *permits)
{
    static const unsigned char unused[ID_BYTES];
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t answer = 0, value = 0;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(permits, "permits")) != CR_OK)
        goto out;
    /* The acquire script with no permits asked for only looks. */
    rc = acquire_call(l, 0, unused, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(&op, &cmd, &call, &r);
    cr__script_call_free(&call);
    if (rc == CR_OK)
        rc = answer_of(l, r, &answer, &value);
    if (rc == CR_OK)
        *permits = value;
out:
    cr__object_leave(l);
    return rc;
}

cr_status
cr_rate_limiter_delete(cr_rate_limiter *l, bool *deleted)
{
    const char *argv[6];
    cr__reply *r = NULL;
    int64_t n = 0;
    cr__op op;
    cr_status rc = enter(l, &op);

    if (rc != CR_OK)
        return rc;
    argv[0] = "DEL";
    argv[1] = l->raw;
    argv[2] = l->value;
    argv[3] = l->client_value;
    argv[4] = l->records;
    argv[5] = l->client_records;
    rc = cr__command_retry(&op, 6, argv, NULL, &r);
    if (rc == CR_OK)
        rc = cr__reply_i64(r, "rate limiter delete", &n);
    if (rc == CR_OK && deleted != NULL)
        *deleted = n > 0;
    if (rc == CR_OK) {
        /* credisson's summary of the records, on its own so that it does
         * not count as a limiter deleted. Where this fails it expires
         * within an interval, and describes no records a new limiter under
         * the name could have. */
        argv[1] = l->held;
        argv[2] = l->client_held;
        if (cr__command_retry(&op, 3, argv, NULL, &r) == CR_OK)
            cr__reply_free(r);
    }
    cr__object_leave(l);
    return rc;
}

/* ------------------------------------------------ the asynchronous half */

/* An acquisition on the loop: RRateLimiter publishes nothing, so between
 * attempts it waits the time the last one said on the loop's timer (or
 * backs off while Redis cannot be reached), as the blocking call sleeps,
 * by the same rule (cr__wait_poll), and gives up at once when that time
 * is beyond its wait. A grant cannot be given back (RRateLimiter has no
 * release): one that comes after a cancel is reported as CR_OK. */
typedef struct acquire_request {
    CR__REQUEST_FIELDS
    cr_async_fn fn;
    int64_t value;    /* the hint of a wait that ran out */
    rate_acquisition acq;
} acquire_request;

static void acquire_attempt(acquire_request *q);

static void
acquire_finish(acquire_request *q)
{
    cr_status rc = rate_done(&q->acq, &q->w);

    cr__aio_cancel_timer(q->async->io, &q->timer);
    if (rc == CR_BUSY)
        q->value = q->w.hint > 0 ? q->w.hint : 0;
    else if (rc == CR_OK)
        q->final = true;
    cr__request_end((cr_request *)q, rc);
}

/* The next attempt is due. */
static void
acquire_step(void *arg)
{
    acquire_request *q = arg;

    if (q->cancelled) {
        q->w.rc = CR_ECANCELED;
        acquire_finish(q);
    } else if (atomic_load(&q->async->client->closing)) {
        q->w.rc = cr__fail(CR_ECLOSED, "the client is being freed");
        acquire_finish(q);
    } else {
        acquire_attempt(q);
    }
}

/* After an attempt (its status in w.rc): the next on the timer, or the
 * end, by the blocking call's rule. */
static void
acquire_next(acquire_request *q)
{
    int64_t sleep;

    if (q->cancelled || !cr__wait_poll(&q->w, cr__now_ms(), &sleep)) {
        acquire_finish(q);
        return;
    }
    cr__aio_after(q->async->io, &q->timer, sleep, acquire_step, q);
}

static void
acquire_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    acquire_request *q = ctx;
    int64_t hint = -1;

    q->busy = false;
    rc = rate_replied(&q->acq, rc, r, cmd, &hint);
    if (cr__request_late((cr_request *)q))
        return; /* a grant after the bound: nothing to give back */
    if (rc == CR_BUSY)
        q->w.hint = hint;
    q->w.rc = rc;
    acquire_next(q);
}

static void
acquire_attempt(acquire_request *q)
{
    cr__script_call call = {0};
    cr_status rc = rate_call(&q->acq, &call);

    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(q->async->io, &call, 0, acquire_replied, q);
    }
    cr__script_call_free(&call);
    if (rc != CR_OK) {
        q->busy = false;
        q->w.rc = rc;
        acquire_next(q);
    }
}

/* Its bound's end (cr__request_wait's bound, which this request keeps by
 * itself): as the wait state machine's finish. */
static void
acquire_bound_finish(cr_request *req)
{
    acquire_finish((acquire_request *)req);
}

static void
acquire_callback(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    if (q->fn != NULL)
        q->fn(req->userdata, req->rc, q->value);
}

/* A cancel ends the wait at its next step. */
static void
acquire_cancel(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    if (!q->busy)
        cr__aio_after(q->async->io, &q->timer, 0, acquire_step, q);
}

static const cr__request_type acquire_type = {
    .finish = acquire_bound_finish,
    .callback = acquire_callback,
    .cancel = acquire_cancel,
};

cr_status
cr_async_rate_limiter_acquire(cr_async *a, cr_rate_limiter *l,
                              int64_t permits, int64_t wait_ms,
                              cr_async_fn fn, void *userdata,
                              cr_request **req)
{
    acquire_request *q;
    cr_status rc = cr__async_enter(a, l, RATE_MAGIC, "rate limiter", false);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_range("permits", permits, 1,
                              CR_RATE_PERMITS_MAX)) != CR_OK ||
        (rc = cr__check_wait(wait_ms)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q = (acquire_request *)cr__request_new(a, &acquire_type, sizeof(*q),
                                           userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->fn = fn;
    q->acq = (rate_acquisition){.limiter = l, .permits = permits};
    cr__wait_poll_begin(&q->w, a->client, wait_ms, cr__now_ms());
    cr__request_bound((cr_request *)q);
    cr__aio_after(a->io, &q->timer, 0, acquire_step, q); /* never inside */
    return cr__request_started(a, (cr_request *)q, req);
}
