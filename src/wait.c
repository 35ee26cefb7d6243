/* SPDX-License-Identifier: MIT */
/*
 * The subscribe-then-retry rules of every waiting call, as one state
 * machine, and the driver that carries it out by blocking (wait.h).
 */
#include "config.h"

#include <time.h>

#include "line.h"
#include "wait.h"

/* While the subscription is not confirmed, messages may be missed: poll. */
#define UNCONFIRMED_POLL_MS 250
#define IO_BACKOFF_MIN_MS 20
#define IO_BACKOFF_MAX_MS 1000
#define SPIN_INITIAL_MS 1
#define SPIN_MAX_MS 128

/* The machine's phases: what the request it made last was. */
enum {
    P_BEGIN,     /* nothing yet */
    P_FIRST,     /* the first attempt */
    P_SUBSCRIBE, /* the subscription */
    P_SECOND,    /* the attempt right after subscribing */
    P_LISTEN,    /* the subscription to the object's own channel of a
                  * waiter in line */
    P_SLEEP,     /* a sleep on the subscription */
    P_HOLD,      /* in line: a yield, or a watch until the turns before
                  * it end, then an attempt either way */
    P_RETRY,     /* an attempt after a sleep */
    P_SPIN,      /* a sleep without pub/sub */
    P_SPUN,      /* an attempt after it */
    P_DONE
};

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

/* Records a contended wait that lasted from `start` until `now`. */
static void
count_wait(cr_client *c, int64_t start, int64_t now)
{
    uint64_t ms = (uint64_t)(now - start);
    uint_fast64_t max = atomic_load(&c->run.stats.wait_time_max_ms);

    CR__STAT_ADD(&c->run.stats, contended_waits, 1);
    CR__STAT_ADD(&c->run.stats, wait_time_total_ms, ms);
    while (ms > max &&
           !atomic_compare_exchange_weak(&c->run.stats.wait_time_max_ms, &max, ms))
        ;
}

/* The client's subscriptions (pubsub.h) as a wait uses them. */
static int
client_waiters(void *ps, const char *channel, cr__sub_seen *seen,
               cr__sub_mark *mark)
{
    return cr__pubsub_waiters(ps, channel, seen, mark);
}

static bool
client_confirmed(void *ps, void *sub)
{
    return cr__sub_confirmed(ps, sub);
}

static bool
client_quiet_since(void *ps, void *sub, const cr__sub_mark *mark)
{
    return cr__sub_quiet_since(ps, sub, mark);
}

static bool
client_heard(void *ps, void *sub, const char *payload, size_t len)
{
    return cr__sub_heard(ps, sub, payload, len);
}

static void
client_kept(void *ps, void *sub, cr__kept *out)
{
    cr__sub_kept(ps, sub, out);
}

static void
client_fence(void *ps, void *sub, cr__fence *f)
{
    cr__sub_fence(ps, sub, f);
}

static void
client_unsubscribe(void *ps, void *sub)
{
    cr__pubsub_unsubscribe(ps, sub);
}

static const cr__wait_subs client_subs = {
    client_waiters, client_confirmed, client_quiet_since, client_heard,
    client_kept, client_fence, client_unsubscribe,
};

void
cr__wait_begin_on(cr__wait *w, cr_client *c, const cr__wait_spec *spec,
                  const cr__wait_subs *subs, void *ctx, int64_t now)
{
    *w = (cr__wait){.client = c, .subs = subs, .subs_ctx = ctx, .spec = *spec,
                    .rc = CR_BUSY, .hint = -1, .phase = P_BEGIN};
    w->start = now;
    w->deadline = spec->wait_ms < 0 ? -1 : w->start + spec->wait_ms;
    w->fence.link = -1;
    /* The spin's jitter needs no better randomness than the time and the
     * wait's address (no system call here). */
    w->jitter = (uint32_t)((uint64_t)now * 2654435761u) ^
                (uint32_t)(uintptr_t)w;
    if (w->jitter == 0)
        w->jitter = 0x9e3779b9u;
    if (spec->wait_ms != 0 && spec->channel != NULL) {
        cr__sub_seen seen;

        subs->waiters(ctx, spec->channel, &seen, &w->mark);
    }
}

void
cr__wait_begin(cr__wait *w, cr__op *op, const cr__wait_spec *spec)
{
    cr__wait_begin_on(w, op->client, spec, &client_subs, op->client->pubsub,
                      cr__now_ms());
    w->op = op;
}

/* Ends the wait with w->rc: the last of the state it holds. */
static cr__wait_do
over(cr__wait *w, bool contended)
{
    if (w->sub != NULL) {
        w->subs->unsubscribe(w->subs_ctx, w->sub);
        w->sub = NULL;
    }
    if (w->shared_sub != NULL) {
        w->subs->unsubscribe(w->subs_ctx, w->shared_sub);
        w->shared_sub = NULL;
    }
    w->contended = contended;
    if (contended && w->rc == CR_ECLOSED)
        w->rc = cr__fail(CR_ECLOSED, "the client is being freed");
    w->phase = P_DONE;
    return CR__WAIT_DONE;
}

bool
cr__wait_retrying(const cr__wait *w)
{
    return w->answered > 0 && w->phase != P_DONE;
}

void
cr__wait_report(const cr__wait *w, const cr__op *op, int64_t now)
{
    cr_client *c = w->client;

    if (w->rc == CR_OK)
        CR__STAT_ADD(&c->run.stats, acquisitions, 1);
    if (w->spec.ev_name != NULL && (w->rc == CR_OK || w->rc == CR_BUSY))
        cr__op_event(op, w->rc == CR_OK ? CR_EVENT_ACQUIRED : CR_EVENT_BUSY,
                     w->rc == CR_OK ? CR_OK : w->spec.ev_busy,
                     w->spec.ev_object, w->spec.ev_name, now - w->start, -1,
                     w->spec.ev_async);
    if (w->contended)
        count_wait(c, w->start, now);
}

/* Whether the status of an attempt asks for another. */
static bool
again(cr_status rc)
{
    return rc == CR_BUSY || rc == CR_EIO;
}

/* The retry rule of an attempt that failed for I/O (w->rc CR_EIO): the
 * next after a backoff doubling from IO_BACKOFF_MIN_MS to IO_BACKOFF_MAX_MS,
 * until Redis has been unreachable for longer than the client's reconnect
 * window (false). Any other status restarts the count. */
static bool
io_retry(cr__wait *w, int64_t now, int64_t *sleep)
{
    if (w->rc != CR_EIO) {
        w->io_since = 0;
        w->backoff = 0;
        return true;
    }
    if (w->io_since == 0)
        w->io_since = now;
    if (now - w->io_since > w->client->reconnect_window_ms)
        return false;
    w->backoff = w->backoff == 0 ? IO_BACKOFF_MIN_MS
                                 : bound(w->backoff * 2, IO_BACKOFF_MAX_MS);
    *sleep = w->backoff;
    return true;
}

/* After a failed attempt at `now`: how long to sleep before the next (-1:
 * until a message), or false when the wait is over (w->rc set). */
static bool
plan_sleep(cr__wait *w, int64_t now, int64_t *sleep)
{
    if (!io_retry(w, now, sleep))
        return false;
    if (w->rc != CR_EIO)
        *sleep = w->hint >= 0 ? (w->hint > w->spec.min_sleep_ms
                                     ? w->hint : w->spec.min_sleep_ms)
                              : -1;
    if (!w->subs->confirmed(w->subs_ctx, w->sleep_on))
        *sleep = bound(*sleep, UNCONFIRMED_POLL_MS);
    *sleep = bound(*sleep, w->spec.max_sleep_ms);
    if (w->deadline >= 0) {
        if (now >= w->deadline)
            return false;
        *sleep = bound(*sleep, w->deadline - now);
    }
    return true;
}

/* The loop without pub/sub: back off exponentially with jitter between
 * attempts until the budget runs out. */
static cr__wait_do
spin(cr__wait *w, int64_t now)
{
    int64_t sleep = w->delay;

    if (!again(w->rc))
        return over(w, true);
    /* I/O failures back off as every wait's do, for the reconnect window;
     * a busy lock, by the spin's own delays. */
    if (!io_retry(w, now, &sleep))
        return over(w, true);
    if (w->deadline >= 0) {
        if (now >= w->deadline) {
            w->rc = w->rc == CR_EIO ? CR_EIO : CR_BUSY;
            return over(w, true);
        }
        sleep = bound(sleep, w->deadline - now);
    }
    w->sleep_ms = sleep;
    w->phase = P_SPIN;
    return CR__WAIT_SLEEP;
}

/* After the first attempt since subscribing (or the decision to make
 * none): a latch waiter asks for its fence; then as sleep_or_stop. */
static cr__wait_do sleep_or_stop(cr__wait *w, int64_t now);

static cr__wait_do
fence_then_sleep(cr__wait *w, int64_t now)
{
    if (w->spec.trust_open && again(w->rc))
        w->subs->fence(w->subs_ctx, w->sub, &w->fence);
    return sleep_or_stop(w, now);
}

/* Where a waiter sleeps: on the object's own channel while it listens
 * there (in line), else on its subscription. */
static void
choose_sleep(cr__wait *w)
{
    bool shared = w->listen && w->shared_sub != NULL;

    w->sleep_on = shared ? w->shared_sub : w->sub;
    w->ticket_of = shared ? &w->shared_ticket : &w->ticket;
}

/* After an attempt with the subscription in place: sleep, or stop. */
static cr__wait_do
sleep_or_stop(cr__wait *w, int64_t now)
{
    int64_t sleep;

    if (!again(w->rc))
        return over(w, true);
    choose_sleep(w);
    if (!plan_sleep(w, now, &sleep)) {
        w->rc = w->rc == CR_EIO ? CR_EIO : CR_BUSY;
        return over(w, true);
    }
    w->sleep_ms = sleep;
    w->phase = P_SLEEP;
    return CR__WAIT_SLEEP;
}

/* The next of the spin's random numbers (xorshift32: enough for jitter). */
static uint32_t
next_jitter(cr__wait *w)
{
    uint32_t x = w->jitter;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return w->jitter = x;
}

/* Asks for an attempt. */
static cr__wait_do
attempt(cr__wait *w)
{
    w->asked = true;
    return CR__WAIT_ATTEMPT;
}

/* After an attempt of a waiter in line that goes on waiting: it listens on
 * the object's own channel from when an attempt says it is the first the
 * object cannot serve (subscribing, then one more attempt: a release in
 * between would be missed), until one says it no longer is. */
static cr__wait_do
listen_or(cr__wait *w, int64_t now, cr__wait_do (*next)(cr__wait *, int64_t))
{
    if (w->spec.shared == NULL || !again(w->rc))
        return next(w, now);
    if (!w->listen || w->rc != CR_BUSY)
        w->first_since = 0;
    else if (w->listen == CR__LISTEN_NOW)
        w->first_since = now - w->spec.listen_after_ms;
    else if (w->first_since == 0)
        w->first_since = now;
    if (w->listen && w->shared_sub == NULL &&
        now - w->first_since < w->spec.listen_after_ms) {
        /* First only for a moment so far: a release by a waiter in line
         * would give it its turn; it looks again when the moment ends. */
        w->hint = bound(w->hint, w->first_since + w->spec.listen_after_ms -
                                     now);
        return next(w, now);
    }
    if (w->listen && w->shared_sub == NULL) {
        w->sub_channel = w->spec.shared;
        w->sub_decode = w->spec.shared_decode;
        w->sleep_ms = w->client->subscription_timeout_ms;
        if (w->deadline >= 0)
            w->sleep_ms = bound(w->sleep_ms, w->deadline > now
                                                 ? w->deadline - now : 0);
        w->phase = P_LISTEN;
        return CR__WAIT_SUBSCRIBE;
    }
    if (!w->listen && w->shared_sub != NULL) {
        w->subs->unsubscribe(w->subs_ctx, w->shared_sub);
        w->shared_sub = NULL;
    }
    return next(w, now);
}

/* A waiter in line woken by a message: how long it holds off its attempt
 * (on its own channel, its turn with others that heard the release: a
 * yield; a watch: until the turns before it end; on the object's, the
 * spec's shared_yield_ms the first time). */
static int64_t
line_delay(cr__wait *w)
{
    cr__kept k;

    if (w->shared_sub != NULL && w->sleep_on == w->shared_sub) {
        if (w->shared_yielded)
            return 0;
        w->shared_yielded = true;
        return w->spec.shared_yield_ms;
    }
    if (w->spec.shared == NULL || w->sleep_on != w->sub || w->sub == NULL)
        return 0;
    w->subs->kept(w->subs_ctx, w->sub, &k);
    return cr__line_delay(k.payload, k.len);
}

/* cr__wait_step's body: the step after the phase the machine is in. */
static cr__wait_do
step(cr__wait *w, int64_t now)
{
    cr_client *c = w->client;

    switch (w->phase) {
    case P_BEGIN:
        w->phase = P_FIRST;
        if (!w->spec.subscribe_first)
            return attempt(w);
        w->rc = CR_BUSY; /* it subscribes first */
        /* fall through */
    case P_FIRST:
        if (!again(w->rc) || w->spec.wait_ms == 0)
            return over(w, false);
        w->first = w->rc;
        if (w->spec.channel == NULL) {
            w->delay = SPIN_INITIAL_MS;
            w->spins = 1;
            return spin(w, now);
        }
        w->sleep_ms = bound(w->spec.wait_ms, c->subscription_timeout_ms);
        w->sub_channel = w->spec.channel;
        w->sub_decode = w->spec.decode;
        w->phase = P_SUBSCRIBE;
        return CR__WAIT_SUBSCRIBE;
    case P_SUBSCRIBE:
        if (w->woke != CR_OK && w->woke != CR_TIMEOUT) {
            /* closing, out of memory, or refused (an ACL) */
            w->rc = w->woke;
            return over(w, false);
        }
        w->sub = w->got;
        if (w->first == CR_BUSY && !w->spec.subscribe_first &&
            w->subs->quiet_since(w->subs_ctx, w->sub, &w->mark)) {
            /* Subscribed since before the try and nothing read since: a
             * release after the try is still to come as a message, and a
             * try now would only see what the first saw. A waiter first
             * in line still takes the listening rules (a release by a
             * client outside the line comes on the object's own channel
             * only, which it does not hear yet). */
            w->rc = CR_BUSY;
            return listen_or(w, now, fence_then_sleep);
        }
        w->phase = P_SECOND;
        return attempt(w);
    case P_SECOND:
        return listen_or(w, now, fence_then_sleep);
    case P_LISTEN:
        if (w->woke == CR_OK || w->woke == CR_TIMEOUT) {
            w->shared_sub = w->got;
            w->phase = P_SECOND;
            return attempt(w);
        }
        if (w->woke == CR_ECLOSED) {
            w->rc = w->woke;
            return over(w, true);
        }
        /* Refused (an ACL without that channel): it waits for its turns
         * and its hints alone. */
        w->listen = CR__LISTEN_NO;
        return sleep_or_stop(w, now);
    case P_SLEEP:
        if (w->woke != CR_OK && w->woke != CR_TIMEOUT) {
            w->rc = w->woke; /* closing, or the subscription was refused */
            return sleep_or_stop(w, now);
        }
        if (w->opened) {
            w->rc = CR_OK; /* counted down to zero during this wait */
            return over(w, true);
        }
        if (w->woke == CR_OK) {
            int64_t delay = line_delay(w);

            if (delay > 0) {
                w->sleep_ms = delay;
                if (w->deadline >= 0)
                    w->sleep_ms = bound(delay, w->deadline > now
                                                   ? w->deadline - now : 0);
                w->phase = P_HOLD;
                return CR__WAIT_SLEEP;
            }
        }
        w->phase = P_RETRY;
        return attempt(w);
    case P_HOLD:
        if (w->woke != CR_OK && w->woke != CR_TIMEOUT) {
            w->rc = w->woke;
            return sleep_or_stop(w, now);
        }
        w->phase = P_RETRY;
        return attempt(w);
    case P_RETRY:
        return listen_or(w, now, sleep_or_stop);
    case P_SPIN:
        if (w->woke == CR_ECLOSED) {
            w->rc = CR_ECLOSED;
            return over(w, true);
        }
        w->delay = bound(w->delay * 2 + (int64_t)(next_jitter(w) % 256) % w->spins,
                         SPIN_MAX_MS);
        w->spins++;
        w->phase = P_SPUN;
        return attempt(w);
    case P_SPUN:
        return spin(w, now);
    default:
        return CR__WAIT_DONE;
    }
}

cr__wait_do
cr__wait_step(cr__wait *w, int64_t now)
{
    if (w->asked) {
        w->asked = false;
        w->answered++; /* the outcome of the attempt it asked for is in */
    }
    return step(w, now);
}

bool
cr__wait_next(cr__wait *w, cr_status *rc, int64_t hint)
{
    cr_client *c = w->client;
    cr__wait_do next;

    w->rc = *rc;
    w->hint = hint;
    for (;;) {
        next = cr__wait_step(w, cr__now_ms());
        if (!w->patient && cr__wait_retrying(w)) {
            /* Retries do not wait for a connection slot past the wait's
             * end: they come back by themselves. */
            w->slot_deadline = w->op->slot_deadline;
            w->op->slot_deadline = w->deadline;
            w->patient = true;
        }
        switch (next) {
        case CR__WAIT_ATTEMPT:
            return true;
        case CR__WAIT_SUBSCRIBE:
            w->got = NULL;
            w->woke = cr__pubsub_subscribe(c->pubsub, w->sub_channel,
                                           w->sub_decode, w->sleep_ms,
                                           (cr__sub **)&w->got);
            break;
        case CR__WAIT_SLEEP:
            w->opened = false;
            if (w->sleep_on != NULL) {
                w->woke = cr__sub_wait(c->pubsub, w->sleep_on, w->sleep_ms,
                                       w->ticket_of,
                                       w->spec.trust_open ? &w->fence : NULL,
                                       &w->opened);
            } else {
                cr__sleep_ms(w->sleep_ms);
                w->woke = atomic_load(&c->closing) ? CR_ECLOSED : CR_TIMEOUT;
            }
            break;
        case CR__WAIT_DONE:
            if (w->patient)
                w->op->slot_deadline = w->slot_deadline;
            cr__wait_report(w, w->op, cr__now_ms());
            *rc = w->rc;
            return false;
        }
    }
}

bool
cr__wait_turn(cr__pubsub *ps, const char *channel, const cr__handoff *h,
              int64_t wait_ms)
{
    cr__turn t;
    cr__sub_seen seen;
    int64_t wait_us;

    if (!cr__handoff_turn(h, cr__now_us(), wait_ms, &t))
        return false;
    for (;;) {
        cr__pubsub_waiters(ps, channel, &seen, NULL);
        switch (cr__turn_next(&t, &seen, cr__now_us(), &wait_us)) {
        case CR__TURN_GO:
            return cr__turn_tune(&t, &seen);
        case CR__TURN_COUNT:
            /* Woken by each release, with pub/sub's own rule for when
             * none comes (its quiet periods). */
            cr__pubsub_await_count(ps, channel, t.target,
                                   (cr__now_us() + wait_us + 999) / 1000,
                                   (t.quiet_us + 999) / 1000);
            break;
        case CR__TURN_SLEEP:
            cr__sleep_us(wait_us);
            return cr__turn_tune(&t, &seen);
        }
    }
}

void
cr__wait_poll_begin(cr__wait *w, cr_client *c, int64_t wait_ms, int64_t now)
{
    *w = (cr__wait){.client = c, .rc = CR_BUSY, .hint = -1, .start = now,
                    .deadline = wait_ms < 0 ? -1 : now + wait_ms};
    w->spec.wait_ms = wait_ms;
}

bool
cr__wait_poll(cr__wait *w, int64_t now, int64_t *sleep_ms)
{
    int64_t sleep = w->hint;

    if (!again(w->rc) || w->spec.wait_ms == 0)
        return false;
    if (!io_retry(w, now, &sleep))
        return false;
    if (sleep < 0) {
        /* No hint: look again within the I/O backoff's bound, by the
         * wait's end at the latest. */
        if (w->deadline >= 0 && now >= w->deadline)
            return false;
        *sleep_ms = w->deadline >= 0 ? bound(IO_BACKOFF_MAX_MS,
                                             w->deadline - now)
                                     : IO_BACKOFF_MAX_MS;
        return true;
    }
    if (w->deadline >= 0 && (now >= w->deadline || sleep > w->deadline - now)) {
        /* Nothing comes back before the wait ends (the hint says when it
         * may): give up now. */
        if (w->rc == CR_BUSY || now >= w->deadline)
            return false;
        sleep = w->deadline - now;
    }
    *sleep_ms = sleep;
    return true;
}
