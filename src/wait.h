/* SPDX-License-Identifier: MIT */
/*
 * Waiting for an object, shared by every kind (protocol section 2): try,
 * subscribe to the object's channel, try again (not when the client was
 * subscribed already before the first try, lingering or for other
 * waiters, and has read nothing on it since), then sleep until a message
 * or the attempt's hint (a ttl) runs out, bounded by the caller's remaining
 * wait; repeat. A message between a failed try and the sleep is kept as a
 * wake token, so it is never lost; nothing sleeps unbounded on a message alone
 * unless the object gives no hint and the caller waits forever, and even
 * then `max_sleep_ms` can bound it. Transport errors while waiting are
 * retried with backoff for up to the client's reconnect window.
 *
 * These rules are one state machine (cr__wait_step), which says what to do
 * next: make an attempt, subscribe, sleep, or stop. It does no I/O and
 * reads no clock: the time comes in with each step, and what it asks for
 * goes out, so that its rules are tested without a server or a sleep. The
 * caller makes the attempts itself; cr__wait_next drives the rest by
 * blocking, for the calls that block a thread:
 *
 *     cr__wait_begin(&w, op, &spec);
 *     while (cr__wait_next(&w, &rc, hint))
 *         rc = attempt(..., &hint);
 *
 * and the asynchronous API drives it on its loop (async.c). Either driver
 * ends with cr__wait_report, the wait's one record in the counters and the
 * event hook.
 */
#ifndef CR_WAIT_H
#define CR_WAIT_H

#include <stdint.h>

#include "client.h"
#include "handoff.h"

typedef struct cr__wait_spec {
    /* Where the object's releases are published; NULL: no pub/sub, wait
     * between attempts by exponential backoff with jitter (the spin lock:
     * 1 ms, then next = min(128, current * 2 + random [0, k)) at the k-th
     * wait, as Redisson's LockOptions). For a waiter in an object's
     * waiting line (line.h): its own channel. */
    const char *channel;
    cr__decode_fn decode; /* what its messages mean */
    /* A waiter in line: the object's own channel, which it listens on
     * too once attempts have said for `listen_after_ms` that it is the
     * first the object cannot serve (`listen`; at once for
     * CR__LISTEN_NOW): releases of clients outside the line come only
     * there (a release by a waiter in line gives the next its turn,
     * usually well before). Its own channel's
     * messages are the line's (cr__line_decode): its turn, after which it
     * yields CR__LINE_YIELD_MS when others heard the release, or a watch,
     * after which it attempts when the turns before it end. NULL: not in
     * a line. */
    const char *shared;
    cr__decode_fn shared_decode;
    int64_t listen_after_ms;
    /* How long a waiter woken by a release on the object's own channel
     * holds off its attempt, the first time in its wait: a lock's
     * CR__LINE_YIELD_MS (a JVM's waiters react in ms and a C one in µs:
     * without it a Java release went to a credisson waiter nearly every
     * time; at every such release, Java's holds ran on and the credisson
     * side's longest wait doubled), 0 for a semaphore (whose credisson
     * waiters got a fifth of the acquisitions with it). */
    int64_t shared_yield_ms;
    int64_t wait_ms;      /* CR_WAIT_FOREVER (-1) or >= 0 */
    int64_t min_sleep_ms; /* floor for hinted sleeps (a 0 hint must not spin) */
    int64_t max_sleep_ms; /* re-check at least this often; -1: no bound */
    /* A message that opens (a latch's "0") read after a fence asked for
     * once subscribed and still closed (see cr__sub_fence) ends the wait
     * with CR_OK without another attempt: the count reached zero during
     * the wait, and a re-armed latch must not hide that. */
    bool trust_open;
    /* The first attempt comes only once subscribed, and is always made
     * then: an attempt that changes the object and cannot be repeated
     * before the subscription exists (the latch's count down of
     * countDownAndAwait), so that whatever it causes is published to a
     * subscription already in place. With trust_open its fence is asked
     * right after it. A wait of 0 makes no attempt at all: the caller
     * makes its one attempt without a wait. */
    bool subscribe_first;
    /* For the event hook: the object's kind and name (NULL: the caller
     * reports the outcome itself), whether the request is asynchronous,
     * and the status a wait that ran out is reported with (CR_BUSY, or
     * CR_TIMEOUT for an await). */
    const char *ev_object, *ev_name;
    bool ev_async;
    cr_status ev_busy;
} cr__wait_spec;

/* The subscriptions a wait uses: the client's (cr__wait_begin, the
 * blocking pub/sub of pubsub.h, whose functions these mirror) or an event
 * loop's. `sub` is what the subscribe request gave. */
typedef struct cr__wait_subs {
    int (*waiters)(void *ctx, const char *channel, cr__sub_seen *seen,
                   cr__sub_mark *mark);
    bool (*confirmed)(void *ctx, void *sub);
    bool (*quiet_since)(void *ctx, void *sub, const cr__sub_mark *mark);
    bool (*heard)(void *ctx, void *sub, const char *payload, size_t len);
    void (*kept)(void *ctx, void *sub, cr__kept *out);
    void (*fence)(void *ctx, void *sub, cr__fence *f);
    void (*unsubscribe)(void *ctx, void *sub);
} cr__wait_subs;

/* What the state machine asks for next. */
typedef enum cr__wait_do {
    CR__WAIT_ATTEMPT,   /* make one attempt; its status and hint (the
                         * longest sensible sleep, -1: none) go into
                         * rc and hint */
    CR__WAIT_SUBSCRIBE, /* subscribe to sub_channel (its messages read by
                         * sub_decode) for up to sleep_ms; the outcome
                         * goes into woke and got */
    CR__WAIT_SLEEP,     /* wait up to sleep_ms (-1: no limit) for a
                         * message on sleep_on (or just sleep without one:
                         * NULL), with the ticket at `ticket_of`; the
                         * outcome goes into woke and opened */
    CR__WAIT_DONE       /* over: rc is the call's status */
} cr__wait_do;

/* One waiting call's state. An attempt returns CR_OK when the object was
 * obtained; CR_BUSY when not, with a hint; CR_EIO to be retried; anything
 * else ends the wait with that status. */
typedef struct cr__wait {
    cr_client *client;  /* its settings: reconnect window, subscription
                         * timeout (read only) */
    cr__op *op;         /* the blocking driver's operation, or NULL */
    const cr__wait_subs *subs;
    void *subs_ctx;
    cr__wait_spec spec;
    /* Inputs, set by whoever carried out the last request. */
    cr_status rc;        /* the last attempt's status (then the result) */
    int64_t hint;        /* its hint */
    int listen;          /* in line: CR__LISTEN_* (line.h; see
                          * spec.shared) */
    cr_status woke;      /* a subscribe's or a sleep's status */
    bool opened;         /* a sleep read an opening message */
    void *got;           /* a subscribe's subscription */
    /* Outputs. */
    const char *sub_channel;
    cr__decode_fn sub_decode;
    void *sleep_on;
    uint64_t *ticket_of;
    int64_t sleep_ms;
    bool contended;      /* once done: it went past its first attempt */
    /* The machine's own. */
    int phase;
    cr_status first;
    int64_t start, deadline, io_since, backoff, delay, spins;
    bool asked;          /* the last request was an attempt */
    int answered;        /* attempts whose outcome came in */
    uint32_t jitter;     /* the spin's random state (xorshift32) */
    cr__sub_mark mark;
    cr__fence fence;
    void *sub;           /* the subscription to spec.channel */
    void *shared_sub;    /* to spec.shared, while it listens */
    int64_t first_since; /* attempts say it is first since (0: not) */
    bool shared_yielded; /* it yielded once on the object's channel */
    uint64_t ticket, shared_ticket;
    /* The blocking driver's: the operation's slot deadline it replaced. */
    int64_t slot_deadline;
    bool patient;
} cr__wait;

/* cr__wait_begin: start a wait for `spec` on the client's subscriptions,
 * driven by cr__wait_next within operation `op` (whose deadline the
 * caller has set: cr__op_wait). cr__wait_begin_on: on `subs` (ctx: their
 * first argument), at `now` (monotonic ms), for another driver. */
void cr__wait_begin(cr__wait *w, cr__op *op, const cr__wait_spec *spec);
void cr__wait_begin_on(cr__wait *w, cr_client *c, const cr__wait_spec *spec,
                       const cr__wait_subs *subs, void *ctx, int64_t now);

/* cr__wait_step: after the request it last made was carried out (its
 * outcome in the inputs), the next one, at `now` (monotonic ms). */
cr__wait_do cr__wait_step(cr__wait *w, int64_t now);

/* cr__wait_retrying: the first attempt is behind it and more may come
 * (a driver's retries then stop waiting for a connection slot at the
 * wait's end: they come back by themselves). */
bool cr__wait_retrying(const cr__wait *w);

/* cr__wait_report: a wait that is over, recorded at `now`: an acquisition
 * counted, a contended wait's time, and (spec.ev_name set) its event as
 * operation `op` reports events (cr__op_event). */
void cr__wait_report(const cr__wait *w, const cr__op *op, int64_t now);

/* cr__wait_next: the blocking driver. Given the last attempt's status and
 * hint (ignored before the first), subscribes and sleeps as the machine
 * says, and returns true when the next attempt is due, false when the
 * wait is over with *rc its status: CR_OK (obtained), CR_BUSY (the wait
 * ran out), CR_EIO (Redis unreachable for longer than the reconnect
 * window), CR_ECLOSED, or what an attempt returned. */
bool cr__wait_next(cr__wait *w, cr_status *rc, int64_t hint);

/* cr__wait_turn: the blocking driver of the releaser's turn (handoff.h):
 * keeps the turn `h` has pending for an acquisition that may wait
 * `wait_ms`, counting releases on `channel` through the client's
 * subscriptions (ps). Returns whether the first attempt after it is to
 * tune the lock's turn (cr__turn_tune). */
bool cr__wait_turn(cr__pubsub *ps, const char *channel, const cr__handoff *h,
                   int64_t wait_ms);

/* cr__wait_poll: a wait without a channel (the rate limiter's), of which
 * only client, deadline (-1: none) and spec.wait_ms are set, with the last
 * attempt's status in rc and its hint in hint: true with *sleep_ms the time
 * to sleep before the next attempt (the hint, or the backoff while Redis
 * cannot be reached), false when the wait is over with rc its status, at
 * `now`. A hint beyond the deadline ends it at once: waiting could not
 * help. The blocking and the asynchronous acquisitions both follow it. */
bool cr__wait_poll(cr__wait *w, int64_t now, int64_t *sleep_ms);

/* cr__wait_poll_begin: such a wait of wait_ms for client `c`, at `now`. */
void cr__wait_poll_begin(cr__wait *w, cr_client *c, int64_t wait_ms,
                         int64_t now);

#endif
