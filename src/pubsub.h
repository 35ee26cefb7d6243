/* SPDX-License-Identifier: MIT */
/*
 * Pub/sub: one subscriber connection (in a cluster with sharded pub/sub, one
 * per master) and one dispatcher thread per client.
 * Local waiters share one subscription per channel (reference counted:
 * SUBSCRIBE with the first waiter, UNSUBSCRIBE 250 ms after the last one
 * left unless another came meanwhile). A message
 * becomes wake tokens on the channel's subscription, so a message that
 * arrives between a failed attempt and the wait is never lost. After the
 * subscriber connection drops, the thread reconnects with backoff,
 * resubscribes every channel and wakes every waiter to retry.
 *
 * Thread safety: all functions may be called from any thread.
 */
#ifndef CR_PUBSUB_H
#define CR_PUBSUB_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "route.h"

/* What one message on a channel does (protocol section 2). Pub/sub knows
 * no object: each decodes its own messages, and says so when it
 * subscribes. */
typedef struct cr__wake {
    int64_t wakes; /* waiters it lets try again: 0.., or CR__WAKE_ALL */
    bool counted;  /* counts towards the channel's count (a lock's
                    * releases: cr__pubsub_await_count) */
    bool opens;    /* opens what waiters wait for for good (a latch at
                    * zero: see cr__sub_wait's fence) */
    bool kept;     /* the subscription keeps the payload, as the last
                    * such message it read (see cr__sub_heard) */
} cr__wake;
#define CR__WAKE_ALL INT64_MAX

/* The longest payload a subscription keeps (cr__wake's kept). */
#define CR__KEPT_MAX 64

/* The last kept message a subscription read, shared by the client's
 * subscriptions and the event loop's. */
typedef struct cr__kept {
    char payload[CR__KEPT_MAX];
    size_t len; /* 0: none, or the last was too long to keep */
} cr__kept;

/* cr__kept_note: what a message `payload` read on the subscription leaves
 * in `k`, as its decoding `w` says. */
static inline void
cr__kept_note(cr__kept *k, cr__wake w, const char *payload, size_t len)
{
    if (!w.kept)
        return;
    k->len = len <= sizeof(k->payload) ? len : 0;
    memcpy(k->payload, payload, k->len);
}

/* cr__kept_is: whether the last kept message is `payload`. */
static inline bool
cr__kept_is(const cr__kept *k, const char *payload, size_t len)
{
    return len > 0 && k->len == len && memcmp(k->payload, payload, len) == 0;
}

/* What a subscription's messages left on it, kept the same way by the
 * client's subscriptions (pubsub.c) and the event loop's (aio_sub.c), and
 * changed by cr__tally_message alone (and, for the tokens, the waiters
 * that take them). */
typedef struct cr__tally {
    int64_t tokens;        /* wake tokens: that many of the first waiters
                            * in line may each take one; never more than
                            * the subscription's references */
    uint64_t messages;     /* messages read, whatever they said */
    uint64_t counted;      /* counted messages (releases) read */
    int64_t counted_at_us; /* when the last of them was read (monotonic) */
    cr__kept kept;         /* the last kept message */
} cr__tally;

/* cr__tally_message: message `payload`, which the channel's decoder read
 * as `w`, read at now_us on a subscription with `refs` references (its
 * waiters): its wake tokens, counts and kept message. */
void cr__tally_message(cr__tally *t, int refs, cr__wake w, const char *payload,
                       size_t len, int64_t now_us);

/* How long a subscription nobody uses any more stays (a waiter that comes
 * back soon finds it in place), and the rule of the sweep that drops it:
 * cr__linger_over is true when one idle since idle_since has lingered long
 * enough by `now`; else *next (-1: none yet) gets the earliest time one
 * is due. */
#define CR__LINGER_MS 250
bool cr__linger_over(int64_t idle_since, int64_t now, int64_t *next);

typedef cr__wake (*cr__decode_fn)(const char *payload, size_t len);

typedef struct cr__pubsub cr__pubsub;
typedef struct cr__sub cr__sub;

/* cr__pubsub_new: start the dispatcher thread; it connects on its own. In a
 * cluster it finds nodes through `t`'s slot map, and with `sharded` uses
 * SSUBSCRIBE on each channel's slot master. */
cr_status cr__pubsub_new(const cr__conn_config *cfg, cr__transport *t,
                         bool sharded, cr__pubsub **out);

/* cr__pubsub_close: make every present and future wait return CR_ECLOSED. */
void cr__pubsub_close(cr__pubsub *ps);

/* cr__pubsub_free: stop the thread and free everything; no waiter may be
 * left (cr__pubsub_close first, and let them leave). */
void cr__pubsub_free(cr__pubsub *ps);

/* cr__pubsub_subscribe: take a reference on `channel`'s subscription,
 * whose messages `decode` reads (the first subscriber's decoder serves
 * the channel), and
 * wait up to timeout_ms (-1: no limit) for the server to confirm it.
 * Returns CR_OK when confirmed; CR_TIMEOUT when not confirmed in time (the
 * reference is still taken: the caller should poll instead of relying on
 * messages, see cr__sub_confirmed); CR_ECLOSED, CR_ENOMEM, or the status
 * of a refusal (CR_ENOPERM for an ACL without the command or the channel,
 * CR_EAUTH...; no reference).
 * Every *out must be given back with cr__pubsub_unsubscribe. */
cr_status cr__pubsub_subscribe(cr__pubsub *ps, const char *channel,
                               cr__decode_fn decode, int64_t timeout_ms,
                               cr__sub **out);

/* cr__pubsub_unsubscribe: drop the reference taken by subscribe. */
void cr__pubsub_unsubscribe(cr__pubsub *ps, cr__sub *sub);

/* A fence: a PING on a subscription's link, asked for at some moment, so
 * that a latch's "0" read after its PONG is known to have been published
 * after that moment (a connection delivers in order). */
typedef struct cr__fence {
    int link;        /* -1: none (the subscription was not confirmed) */
    unsigned resets; /* the subscription's resets when asked */
    uint64_t pongs;  /* the link's PONG count that answers it */
} cr__fence;

/* cr__sub_fence: ask the dispatcher for a PING on the link of confirmed
 * subscription `sub`, now; does not wait. */
void cr__sub_fence(cr__pubsub *ps, cr__sub *sub, cr__fence *f);

/* cr__sub_wait: wait up to timeout_ms (-1: no limit) for a wake token
 * and consume it. Returns CR_OK (woken), CR_TIMEOUT, CR_ECLOSED, or the
 * status of a refused subscription (see cr__pubsub_subscribe). A
 * caller's *ticket is 0 before its first wait and keeps the place in line
 * that wait gave it: the waiters of a subscription get its tokens in the
 * order they first waited, however often they wake, try and wait again. With a
 * fence `f` (else NULL), *opened tells on CR_OK whether the subscription
 * read a message that opens (cr__wake) after the PONG of `f`, on the same
 * link, without losing the subscription in between: a latch was counted
 * down to zero after the fence was asked for. */
cr_status cr__sub_wait(cr__pubsub *ps, cr__sub *sub, int64_t timeout_ms,
                       uint64_t *ticket, const cr__fence *f, bool *opened);

/* cr__sub_heard: true when the last kept message (cr__wake) read on `sub`
 * is `payload`. A message names what it tells (a barrier's completion its
 * generation and the barrier's creation stamp), so that hearing it proves
 * it, whenever it was read. */
bool cr__sub_heard(cr__pubsub *ps, cr__sub *sub, const char *payload,
                   size_t len);

/* cr__sub_kept: the last kept message read on `sub`, into *out. */
void cr__sub_kept(cr__pubsub *ps, cr__sub *sub, cr__kept *out);

/* cr__sub_confirmed: true while the server confirms the subscription. */
bool cr__sub_confirmed(cr__pubsub *ps, cr__sub *sub);

/* What a confirmed subscription had heard at some moment (see
 * cr__pubsub_waiters), to tell later whether it stayed subscribed and read
 * nothing since. */
typedef struct cr__sub_mark {
    uint64_t id;       /* the subscription's entry; 0: not subscribed then */
    uint64_t confirms; /* the server's confirmations of it until then */
    uint64_t messages; /* messages read on it until then */
} cr__sub_mark;

/* What a subscription to a channel has seen, as the releaser's turn
 * (handoff.h) reads it: the client's or an event loop's. */
typedef struct cr__sub_seen {
    int waiters;           /* local waiters; 0 while it lingers, -1 when
                            * not subscribed */
    uint64_t counted;      /* counted messages (cr__wake) read so far */
    int64_t counted_at_us; /* when the last was read (monotonic; 0: none) */
} cr__sub_seen;

/* cr__pubsub_waiters: what this client's subscription to `channel` has
 * seen, into *seen (its waiters as the return value too), and *mark
 * (unless NULL) the subscription's mark (id 0 when not subscribed). */
int cr__pubsub_waiters(cr__pubsub *ps, const char *channel, cr__sub_seen *seen,
                       cr__sub_mark *mark);

/* cr__sub_quiet_since: true when `sub` is the subscription marked in `m`,
 * confirmed without a break since and with no message read since: a
 * message published after the mark was taken is still to come. */
bool cr__sub_quiet_since(cr__pubsub *ps, cr__sub *sub, const cr__sub_mark *m);

/* cr__pubsub_await_count: wait until `channel`'s count of counted
 * messages reaches `target`, the monotonic clock reaches deadline_ms, or
 * none has been read for quiet_ms. Returns false at once when this client is not
 * subscribed to it (nothing to count). */
bool cr__pubsub_await_count(cr__pubsub *ps, const char *channel,
                               uint64_t target, int64_t deadline_ms,
                               int64_t quiet_ms);

/* cr__pubsub_master_moved: a topology listener: the links to the old
 * master are dropped now and their channels subscribed on the new one. */
void cr__pubsub_master_moved(cr__pubsub *ps);

/* cr__pubsub_channel_count: the number of channels subscribed (for
 * tests: 0 once every waiter has left). */
unsigned cr__pubsub_channel_count(cr__pubsub *ps);

#endif
