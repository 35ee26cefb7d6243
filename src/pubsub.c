/* SPDX-License-Identifier: MIT */
/*
 * The subscription table of the blocking pub/sub and its waiters
 * (pubsub.h), over the links of pubsub_link.c.
 *
 * Owns: the reference-counted subscriptions by channel (the commands each
 * still needs, confirmation, lingering, refusal, placement on a link),
 * what a message means for them (wake tokens, counts, openings), the
 * waiters in line by ticket with their fences, and the yielders waiting
 * for a channel's count.
 * May call: pubsub_link.c (the links, the mutex `mu` and the dispatcher
 * thread), route.c (the slot map, to place a sharded channel),
 * slot.c, common.c. The links call back only through cr__link_ops.
 *
 * Callers change the table of subscriptions, mark the entry dirty and
 * poke the dispatcher thread, which asks the table (send) for the
 * SUBSCRIBE/UNSUBSCRIBE commands it now needs. Replies come back in
 * order, so an entry counts its commands in flight and is confirmed only
 * when the last one sent was a SUBSCRIBE and all have been answered. A
 * waiter waits for input on its entry's link (cr__link_await), which it
 * reads itself when nobody else does; the replies come back here (reply).
 *
 * Lock order: the links' `mu` only; nothing else is taken while holding
 * it.
 */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "pubsub.h"
#include "pubsub_link.h"
#include "slot.h"

enum { SENT_NONE, SENT_SUB, SENT_UNSUB };

/* A subscription nobody uses is kept at least this long before
 * UNSUBSCRIBE, so that a process taking the same lock again and again does
 * not pay a SUBSCRIBE and an UNSUBSCRIBE round trip for each contended
 * wait. It ends at the dispatcher's next round after that (at most a
 * second later while a link is up), which a release does not wake. */

/* A thread in cr__sub_wait. An entry's waiters queue by ticket (the
 * order of their first wait) and its wake tokens go to the first: with p
 * tokens, the first p waiters may each take one. */
typedef struct waiter {
    uint64_t ticket;
    pthread_cond_t cv;
    struct waiter *next;
} waiter;

/* A thread waiting for a channel's count to reach `target`. */
typedef struct yielder {
    uint64_t target;
    pthread_cond_t cv;
    struct yielder *next;
} yielder;

struct cr__sub {
    uint64_t id; /* unique among the client's entries, never reused */
    char *channel;
    cr__decode_fn decode;
    int refs;
    cr__tally tally; /* what its messages left: tokens, counts, kept */
    int last_sent;
    int inflight;
    bool confirmed;
    bool wake_on_confirm; /* resubscribed after a drop: wake to retry */
    cr_status refused; /* the server refused it (an ACL): waits end so */
    char refused_why[200];
    int64_t idle_since; /* lingering since (no waiter left); 0: in use */
    bool dirty;
    int link;      /* the link (pubsub_link.h); -1 until placed */
    unsigned slot; /* the channel's cluster slot */
    unsigned resets;  /* times its subscription was lost (reset_sub) */
    uint64_t confirms; /* times the server confirmed it */
    struct yielder *yielders; /* threads in cr__pubsub_await_count */
    uint64_t open_pongs; /* the link's PONGs when an opening message came */
    struct cr__sub *next_dirty;
    waiter *waiting;           /* threads in cr__sub_wait, by ticket */
    uint64_t tickets;          /* tickets handed out */
    pthread_cond_t confirm_cv; /* waiters for the SUBSCRIBE confirmation */
    UT_hash_handle hh;
};

struct cr__pubsub {
    cr__links lk; /* the links, the mutex `mu` and the dispatcher */
    cr__sub *subs;
    cr__sub *dirty;
    bool closing;
    int64_t linger_due; /* when the next lingering entry expires; 0: none */
    uint64_t sub_ids;   /* ids given to entries so far */
};

/* ------------------------------------------------------------- helpers */

/* Initialises a condition variable that times out on the monotonic clock. */
static void
cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

/* Queues `s` for the dispatcher to reconcile; called with mu held. */
static void
mark_dirty(cr__pubsub *ps, cr__sub *s)
{
    if (s->dirty)
        return;
    s->dirty = true;
    s->next_dirty = ps->dirty;
    ps->dirty = s;
}

/* Frees an entry that is out of the hash table and the dirty list. */
static void
free_sub(cr__sub *s)
{
    pthread_cond_destroy(&s->confirm_cv);
    free(s->channel);
    free(s);
}

/* Wakes the yielders of `s` whose count was reached, or all; mu held. */
static void
wake_yielders(cr__sub *s, bool all)
{
    yielder *y;

    for (y = s->yielders; y != NULL; y = y->next)
        if (all || s->tally.counted >= y->target)
            pthread_cond_signal(&y->cv);
}

/* Wakes the waiters of `s` that may take a wake token (the oldest
 * s->tally.tokens), but not `self`, which reads the link and finds its own;
 * mu held. */
static void
wake_token_holders(cr__sub *s, const waiter *self)
{
    waiter *w;
    int64_t i = 0;

    for (w = s->waiting; w != NULL && i < s->tally.tokens; w = w->next, i++)
        if (w != self)
            pthread_cond_signal(&w->cv);
}

/* Whether waiter `w` of `s` may take a wake token: one of the oldest
 * s->tally.tokens; mu held. */
static bool
has_token(const cr__sub *s, const waiter *w)
{
    const waiter *o;
    int64_t i = 0;

    for (o = s->waiting; o != NULL && i < s->tally.tokens; o = o->next, i++)
        if (o == w)
            return true;
    return false;
}

/* Gives every local waiter of `s` a wake token to retry; mu held. */
static void
wake_all(cr__sub *s)
{
    s->tally.tokens = s->refs; /* each waiter holds a reference */
    wake_token_holders(s, NULL);
}


/* ------------------------------------------------ waiting on a link */

/* The fewest bytes a release message on `s` takes: "message", the
 * channel and a one-character payload in RESP (a sharded "smessage" is a
 * byte longer). */
static size_t
release_bytes(const cr__sub *s)
{
    size_t n = strlen(s->channel), digits = 1, m;

    for (m = n; m >= 10; m /= 10)
        digits++;
    /* *3 CRLF, $7 CRLF message CRLF, $n CRLF channel CRLF, $1 CRLF 0 CRLF */
    return 4 + 13 + 1 + digits + 2 + n + 2 + 7;
}

/* How many bytes the reader of the link of `s`, waiting for `releases`
 * messages on `s`, may let the kernel gather before poll() wakes it:
 * enough that the last of them has begun to arrive ((releases - 1) whole
 * messages and a byte); 1 (any input) when another entry on the link is
 * in use. The link lowers it to 1 unless the reader waits alone on it
 * (cr__link_await). mu held. */
static int
reader_min_bytes(cr__pubsub *ps, const cr__sub *s, uint64_t releases)
{
    const cr__sub *o, *tmp;
    uint64_t bytes;

    if (releases < 2 || s->link < 0)
        return 1;
    HASH_ITER(hh, ps->subs, o, tmp)
        if (o != s && o->link == s->link && o->refs > 0)
            return 1; /* someone may be waiting for its confirmation */
    bytes = (releases - 1) * release_bytes(s) + 1;
    return bytes > INT_MAX / 2 ? INT_MAX / 2 : (int)bytes;
}

/* Waits for input on the link of `s` until cv is signalled or the
 * deadline (ms; -1: none) passes (cr__link_await); mu held. `self`: the
 * calling thread as a waiter for wake tokens (NULL: it waits for
 * something else); `releases`: how many release messages on `s` are worth
 * waking for (1: any input). Returns false once the deadline passed. */
static bool
await_link(cr__pubsub *ps, cr__sub *s, pthread_cond_t *cv,
           const waiter *self, uint64_t releases, int64_t deadline)
{
    return cr__link_await(&ps->lk, s->link, cv, self,
                          reader_min_bytes(ps, s, releases), deadline);
}

/* ------------------------------------------------------- the public side */

cr_status
cr__pubsub_subscribe(cr__pubsub *ps, const char *channel,
                     cr__decode_fn decode, int64_t timeout_ms, cr__sub **out)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cr__now_ms() + timeout_ms;
    cr__sub *s;
    cr_status rc = CR_OK;

    pthread_mutex_lock(&ps->lk.mu);
    if (ps->closing) {
        pthread_mutex_unlock(&ps->lk.mu);
        return cr__fail(CR_ECLOSED, "the client is being freed");
    }
    HASH_FIND_STR(ps->subs, channel, s);
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL || (s->channel = strdup(channel)) == NULL) {
            free(s);
            pthread_mutex_unlock(&ps->lk.mu);
            return CR_ENOMEM;
        }
        s->id = ++ps->sub_ids;
        s->decode = decode;
        s->link = ps->lk.sharded ? -1 : 0;
        s->slot = cr__key_slot(channel, strlen(channel));
        cond_init_monotonic(&s->confirm_cv);
        HASH_ADD_KEYPTR(hh, ps->subs, s->channel, strlen(s->channel), s);
    }
    if (s->refs++ == 0) {
        s->idle_since = 0;
        if (s->last_sent != SENT_SUB) {
            mark_dirty(ps, s);
            cr__links_poke(&ps->lk);
        }
    }
    while (!s->confirmed && !ps->closing && s->refused == CR_OK)
        if (!cr__link_cond_wait(&s->confirm_cv, &ps->lk.mu, deadline))
            break;
    if (ps->closing)
        rc = cr__fail(CR_ECLOSED, "the client is being freed");
    else if (s->refused != CR_OK)
        rc = cr__fail(s->refused, "%s", s->refused_why);
    else if (!s->confirmed)
        rc = cr__fail(CR_TIMEOUT, "SUBSCRIBE %s not confirmed in time", channel);
    if (rc != CR_OK && rc != CR_TIMEOUT) {
        s->refs--;
        mark_dirty(ps, s);
        cr__links_poke(&ps->lk);
        s = NULL;
    }
    pthread_mutex_unlock(&ps->lk.mu);
    *out = s;
    return rc;
}

void
cr__pubsub_unsubscribe(cr__pubsub *ps, cr__sub *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&ps->lk.mu);
    if (--s->refs == 0) {
        s->tally.tokens = 0;
        if (s->last_sent == SENT_SUB && s->confirmed) {
            /* Linger; the dispatcher unsubscribes when it expires. */
            s->idle_since = cr__now_ms();
            if (ps->linger_due == 0) {
                ps->linger_due = s->idle_since + CR__LINGER_MS;
                if (ps->lk.round_due < 0)
                    cr__links_poke(&ps->lk);
            }
        } else {
            mark_dirty(ps, s);
            cr__links_poke(&ps->lk);
        }
    } else if (s->tally.tokens > s->refs) {
        s->tally.tokens = s->refs;
    }
    pthread_mutex_unlock(&ps->lk.mu);
}

cr_status
cr__sub_wait(cr__pubsub *ps, cr__sub *s, int64_t timeout_ms,
             uint64_t *ticket, const cr__fence *f, bool *opened)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cr__now_ms() + timeout_ms;
    cr_status rc = CR_TIMEOUT;
    waiter me, **p;

    cond_init_monotonic(&me.cv);
    pthread_mutex_lock(&ps->lk.mu);
    if (*ticket == 0)
        *ticket = ++s->tickets;
    me.ticket = *ticket;
    for (p = &s->waiting; *p != NULL && (*p)->ticket < me.ticket;
         p = &(*p)->next)
        ; /* behind those who came first, as it came back after a try */
    me.next = *p;
    *p = &me;
    while (!has_token(s, &me) && !ps->closing && s->refused == CR_OK)
        if (!await_link(ps, s, &me.cv, &me, 1, deadline))
            break;
    if (ps->closing) {
        rc = cr__fail(CR_ECLOSED, "the client is being freed");
    } else if (s->refused != CR_OK) {
        rc = cr__fail(s->refused, "%s", s->refused_why);
    } else if (has_token(s, &me)) {
        s->tally.tokens--;
        rc = CR_OK;
    }
    if (f != NULL)
        *opened = rc == CR_OK && f->link >= 0 && f->link == s->link &&
                  f->resets == s->resets && s->open_pongs >= f->pongs;
    for (p = &s->waiting; *p != &me; p = &(*p)->next)
        ;
    *p = me.next; /* those behind move up as the tokens went down */
    cr__link_hand_over(&ps->lk, s->link);
    pthread_mutex_unlock(&ps->lk.mu);
    pthread_cond_destroy(&me.cv);
    return rc;
}

bool
cr__sub_heard(cr__pubsub *ps, cr__sub *s, const char *payload, size_t len)
{
    bool heard;

    pthread_mutex_lock(&ps->lk.mu);
    heard = cr__kept_is(&s->tally.kept, payload, len);
    pthread_mutex_unlock(&ps->lk.mu);
    return heard;
}

void
cr__sub_kept(cr__pubsub *ps, cr__sub *s, cr__kept *out)
{
    pthread_mutex_lock(&ps->lk.mu);
    *out = s->tally.kept;
    pthread_mutex_unlock(&ps->lk.mu);
}

bool
cr__sub_confirmed(cr__pubsub *ps, cr__sub *s)
{
    bool ok;

    pthread_mutex_lock(&ps->lk.mu);
    ok = s->confirmed;
    pthread_mutex_unlock(&ps->lk.mu);
    return ok;
}

void
cr__sub_fence(cr__pubsub *ps, cr__sub *s, cr__fence *f)
{
    pthread_mutex_lock(&ps->lk.mu);
    f->link = s->link;
    f->resets = s->resets;
    /* Classic pub/sub in a cluster reaches this link through the cluster
     * bus from another node, out of order with the PING: no fence there. */
    if (s->link >= 0 && s->confirmed && (!ps->lk.cluster || ps->lk.sharded)) {
        f->pongs = cr__link_fence(&ps->lk, s->link);
    } else {
        f->link = -1;
    }
    pthread_mutex_unlock(&ps->lk.mu);
}

bool
cr__sub_quiet_since(cr__pubsub *ps, cr__sub *s, const cr__sub_mark *m)
{
    bool quiet;

    pthread_mutex_lock(&ps->lk.mu);
    quiet = m->id != 0 && m->id == s->id && s->confirmed &&
            s->confirms == m->confirms && s->tally.messages == m->messages;
    pthread_mutex_unlock(&ps->lk.mu);
    return quiet;
}

int
cr__pubsub_waiters(cr__pubsub *ps, const char *channel, cr__sub_seen *seen,
                   cr__sub_mark *mark)
{
    cr__sub *s;
    int n = -1;

    pthread_mutex_lock(&ps->lk.mu);
    HASH_FIND_STR(ps->subs, channel, s);
    seen->counted = 0;
    seen->counted_at_us = 0;
    if (mark != NULL)
        memset(mark, 0, sizeof(*mark));
    if (s != NULL && s->last_sent == SENT_SUB && s->confirmed) {
        yielder *y;

        for (n = s->refs, y = s->yielders; y != NULL; y = y->next)
            n--; /* they hold a reference but do not wait for the lock */
        seen->counted = s->tally.counted;
        seen->counted_at_us = s->tally.counted_at_us;
        if (mark != NULL) {
            mark->id = s->id;
            mark->confirms = s->confirms;
            mark->messages = s->tally.messages;
        }
    }
    pthread_mutex_unlock(&ps->lk.mu);
    seen->waiters = n;
    return n;
}

bool
cr__pubsub_await_count(cr__pubsub *ps, const char *channel,
                          uint64_t target, int64_t deadline_ms,
                          int64_t quiet_ms)
{
    int64_t start = cr__now_ms();
    uint64_t first;
    yielder me, **link;
    cr__sub *s;

    pthread_mutex_lock(&ps->lk.mu);
    HASH_FIND_STR(ps->subs, channel, s);
    if (s == NULL || s->last_sent != SENT_SUB || !s->confirmed || ps->closing) {
        pthread_mutex_unlock(&ps->lk.mu);
        return false;
    }
    /* A reference keeps the subscription (and its count) alive. */
    if (s->refs++ == 0)
        s->idle_since = 0;
    first = s->tally.counted;
    me.target = target;
    cond_init_monotonic(&me.cv);
    me.next = s->yielders;
    s->yielders = &me;
    while (s->tally.counted < target && s->confirmed && !ps->closing) {
        int64_t last = s->tally.counted_at_us / 1000, until;
        uint64_t before = s->tally.counted;
        uint64_t n = before - first < 2 ? 1 : target - before;
        bool in_time;

        /* One release at a time until two came (its own and one of the
         * others', or two of the others'), which says the others use the
         * lock; then all the rest at once, a reading thread's poll waiting
         * for their bytes: three wake-ups per yield instead of one per
         * process in line. No release in n quiet periods: the others are
         * not using the lock (any more). */
        until = (last > start ? last : start) + quiet_ms * (int64_t)n;
        in_time = await_link(ps, s, &me.cv, NULL, n,
                             until < deadline_ms ? until : deadline_ms);
        if (!in_time && (s->tally.counted == before || cr__now_ms() >= deadline_ms))
            break;
    }
    for (link = &s->yielders; *link != &me; link = &(*link)->next)
        ;
    *link = me.next;
    cr__link_hand_over(&ps->lk, s->link);
    pthread_mutex_unlock(&ps->lk.mu);
    pthread_cond_destroy(&me.cv);
    cr__pubsub_unsubscribe(ps, s);
    return true;
}

void
cr__pubsub_master_moved(cr__pubsub *ps)
{
    /* The dispatcher drops the links to the old master. */
    cr__links_poke(&ps->lk);
}

unsigned
cr__pubsub_channel_count(cr__pubsub *ps)
{
    cr__sub *s, *tmp;
    unsigned n = 0;

    pthread_mutex_lock(&ps->lk.mu);
    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->refs > 0 || s->last_sent == SENT_SUB)
            n++;
    pthread_mutex_unlock(&ps->lk.mu);
    return n;
}

/* ------------------------------------------- the table, for the links */

/* Queues one (S)SUBSCRIBE or (S)UNSUBSCRIBE of `s` on its link. */
static bool
append_cmd(cr__pubsub *ps, bool subscribe, const cr__sub *s)
{
    const char *argv[2] = {
        ps->lk.sharded ? (subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE")
                       : (subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE"),
        s->channel};

    return cr__link_send(&ps->lk, s->link,
                         subscribe ? CR__ASK_SUB : CR__ASK_UNSUB, s->id, 2,
                         argv);
}

/* Whether some wanted channel sits on link `i`. mu held. */
static bool
link_wanted(cr__pubsub *ps, int i)
{
    cr__sub *s, *tmp;

    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->link == i)
            return true;
    return false;
}

/* Sharded: places each wanted channel without a link on the link of its
 * slot's master; asks for a fresh slot map when a slot has none. mu held. */
static void
place_subs(cr__pubsub *ps)
{
    cr__sub *s, *tmp;
    char host[256];
    int port, node;

    HASH_ITER(hh, ps->subs, s, tmp) {
        if (s->link >= 0 || s->refs == 0)
            continue;
        node = cr__transport_node_addr(ps->lk.transport, (int64_t)s->slot,
                                       host, sizeof(host), &port);
        if (node < 0 ||
            (s->link = cr__link_for_node(&ps->lk, node, host, port)) < 0) {
            ps->lk.need_refresh = true;
            continue;
        }
        mark_dirty(ps, s);
    }
}

/* After a failure at `s` in reconcile: puts `s` and `rest` (the entries
 * after it) back on the dirty list, names its link in *bad, and returns
 * false. */
static bool
requeue(cr__pubsub *ps, cr__sub *s, cr__sub *rest, int *bad)
{
    cr__sub *next;

    *bad = s->link;
    mark_dirty(ps, s);
    for (s = rest; s != NULL; s = next) {
        next = s->next_dirty;
        s->dirty = false;
        mark_dirty(ps, s);
    }
    return false;
}

/* Sends what the dirty entries ask for and frees entries nobody wants any
 * more; mu held. Returns false when a link failed (*bad: which one). */
static bool
reconcile(cr__pubsub *ps, int *bad)
{
    cr__sub *s, *next;
    bool queued[CR__MAX_LINKS] = {false};
    int i, n;

    for (s = ps->dirty, ps->dirty = NULL; s != NULL; s = next) {
        bool up = s->link >= 0 && cr__link_up(&ps->lk, s->link);

        next = s->next_dirty;
        s->dirty = false;
        s->next_dirty = NULL;
        if (up && s->refs > 0 && s->last_sent != SENT_SUB &&
            s->refused == CR_OK) {
            if (!append_cmd(ps, true, s))
                return requeue(ps, s, next, bad);
            s->last_sent = SENT_SUB;
            s->inflight++;
            queued[s->link] = true;
        } else if (up && s->refs == 0 && s->last_sent == SENT_SUB) {
            if (!append_cmd(ps, false, s))
                return requeue(ps, s, next, bad);
            s->last_sent = SENT_UNSUB;
            s->confirmed = false;
            s->inflight++;
            queued[s->link] = true;
        } else if (s->refs == 0 && s->inflight == 0) {
            HASH_DEL(ps->subs, s);
            free_sub(s);
        }
    }
    n = cr__links_count(&ps->lk);
    for (i = 0; i < n; i++)
        if (queued[i] && !cr__link_flush(&ps->lk, i)) {
            *bad = i;
            return false;
        }
    return true;
}

void
cr__tally_message(cr__tally *t, int refs, cr__wake w, const char *payload,
                  size_t len, int64_t now_us)
{
    t->messages++;
    if (w.wakes >= refs)
        t->tokens = refs;
    else if (w.wakes > 0)
        t->tokens += w.wakes;
    if (t->tokens > refs)
        t->tokens = refs;
    if (w.counted) {
        t->counted++;
        t->counted_at_us = now_us;
    }
    cr__kept_note(&t->kept, w, payload, len);
}

bool
cr__linger_over(int64_t idle_since, int64_t now, int64_t *next)
{
    if (now - idle_since >= CR__LINGER_MS)
        return true;
    if (*next < 0 || idle_since + CR__LINGER_MS < *next)
        *next = idle_since + CR__LINGER_MS;
    return false;
}

/* Turns a message's payload read on link `link` into wake tokens as the
 * channel's decoder says; `self`: the waiter reading the link. */
static void
deliver(cr__pubsub *ps, int link, cr__sub *s, const char *payload,
        size_t len, const waiter *self)
{
    cr__wake w = s->decode(payload, len);

    cr__tally_message(&s->tally, s->refs, w, payload, len, cr__now_us());
    if (w.counted)
        wake_yielders(s, false);
    if (w.opens)
        s->open_pongs = cr__link_pongs(&ps->lk, link);
    /* The first in line, one per token, wake; the waiter reading the
     * link takes its own without a wake-up. */
    wake_token_holders(s, self);
}

/* Forgets that `s` is subscribed: it must be sent again (on the link of
 * its slot's master, when sharded) and its waiters retry now, as they may
 * have missed a message. mu held. */
static void
reset_sub(cr__pubsub *ps, cr__sub *s)
{
    s->last_sent = SENT_NONE;
    s->inflight = 0;
    s->confirmed = false;
    s->wake_on_confirm = true;
    s->resets++;
    if (ps->lk.sharded)
        s->link = -1;
    wake_all(s);
    mark_dirty(ps, s);
}

/* Handles a subscription's confirmation or end; mu held. */
static void
handle_ack(cr__pubsub *ps, cr__sub *s)
{
    if (s->inflight == 0 && s->last_sent == SENT_SUB) {
        /* The server ended it by itself: a sharded channel's slot moved. */
        cr__log(ps->lk.cfg.log, CR_LOG_INFO, "subscription to %s moved",
                s->channel);
        ps->lk.need_refresh = true;
        reset_sub(ps, s);
        return;
    }
    if (s->inflight > 0)
        s->inflight--;
    if (s->inflight == 0 && s->last_sent == SENT_SUB && !s->confirmed) {
        s->confirmed = true;
        s->confirms++;
        if (s->wake_on_confirm) {
            s->wake_on_confirm = false;
            wake_all(s);
        }
        pthread_cond_broadcast(&s->confirm_cv);
    }
    if (s->inflight == 0 && s->refs == 0)
        mark_dirty(ps, s); /* free it on the next reconcile */
}

/* Ends the waits on `s` with `rc`: the server refused its subscription
 * (an ACL without the channel, or a user without SUBSCRIBE). mu held. */
static void
refuse_sub(cr__pubsub *ps, cr__sub *s, cr_status rc, const char *why)
{
    cr__log(ps->lk.cfg.log, CR_LOG_ERROR, "subscription to %s refused: %s",
            s->channel, why);
    s->refused = rc;
    snprintf(s->refused_why, sizeof(s->refused_why), "%s", cr_last_error());
    s->last_sent = SENT_NONE;
    s->inflight = 0;
    s->confirmed = false;
    wake_all(s);
    pthread_cond_broadcast(&s->confirm_cv);
    mark_dirty(ps, s); /* freed once its waiters have gone */
}

/* Handles an error reply on link `link` that answers its oldest command,
 * a (un)subscription. Returns false when the link must be dropped (a
 * cluster node that does not serve the channel: MOVED, CLUSTERDOWN). mu
 * held. */
static bool
handle_error(cr__pubsub *ps, int link, const cr__reply *r)
{
    cr_status why = cr__reply_status(r->str);
    cr__sub *s, *tmp;
    uint64_t id = cr__link_take_oldest(&ps->lk, link);

    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->id == id)
            break;
    if (s != NULL && why == CR_ESERVER && !ps->lk.cluster)
        why = CR_ECONFIG; /* a proxy without pub/sub, say */
    if (s != NULL && why != CR_ESERVER && why != CR_EIO) {
        if (s->inflight > 0)
            s->inflight--;
        refuse_sub(ps, s, cr__fail(why, "SUBSCRIBE %s refused: %s",
                                   s->channel, r->str), r->str);
        return true;
    }
    cr__log(ps->lk.cfg.log, CR_LOG_INFO, "subscriber link: %s", r->str);
    if (ps->lk.cluster)
        ps->lk.need_refresh = true;
    return false;
}

/* Queues the UNSUBSCRIBE of entries that lingered long enough and sets
 * when the next one expires. mu held. */
static void
expire_lingering(cr__pubsub *ps, int64_t now)
{
    cr__sub *s, *tmp;
    int64_t next = -1;

    if (ps->linger_due == 0 || now < ps->linger_due)
        return;
    HASH_ITER(hh, ps->subs, s, tmp) {
        if (s->refs > 0 || s->idle_since == 0)
            continue;
        if (cr__linger_over(s->idle_since, now, &next)) {
            s->idle_since = 0;
            mark_dirty(ps, s);
        }
    }
    ps->linger_due = next < 0 ? 0 : next;
}

/* The callbacks of cr__link_ops; mu held. */

static bool
on_wanted(void *arg, int link)
{
    return link_wanted(arg, link);
}

static void
on_upkeep(void *arg)
{
    cr__pubsub *ps = arg;

    if (ps->lk.sharded)
        place_subs(ps);
    expire_lingering(ps, cr__now_ms());
}

static bool
on_send(void *arg, int *bad)
{
    return reconcile(arg, bad);
}

static bool
on_pending(void *arg)
{
    return ((cr__pubsub *)arg)->dirty != NULL;
}

static int64_t
on_due(void *arg, bool *entries)
{
    cr__pubsub *ps = arg;

    *entries = ps->subs != NULL;
    return ps->linger_due;
}

/* A reply for the table: a (un)subscription's answer, an error answering
 * one, or a message. */
static bool
on_reply(void *arg, int link, const cr__reply *r, const void *self)
{
    cr__pubsub *ps = arg;
    const cr__reply *ch;
    const char *k;
    cr__sub *s;

    if (r->type == CR__REPLY_ERROR)
        return handle_error(ps, link, r);
    k = r->element[0]->str;
    ch = r->element[1];
    if (ch->type != CR__REPLY_STRING)
        return true;
    HASH_FIND(hh, ps->subs, ch->str, ch->len, s);
    if (s == NULL)
        return true;
    if (strcasecmp(k, "smessage") == 0 || strcasecmp(k, "ssubscribe") == 0 ||
        strcasecmp(k, "sunsubscribe") == 0)
        k++; /* sharded: the same as message, subscribe, unsubscribe */
    if (strcasecmp(k, "message") == 0 && r->elements == 3 &&
        r->element[2]->type == CR__REPLY_STRING) {
        CR__STAT_ADD(ps->lk.cfg.stats, messages, 1);
        deliver(ps, link, s, r->element[2]->str, r->element[2]->len, self);
    } else if (strcasecmp(k, "subscribe") == 0) {
        cr__link_answered(&ps->lk, link, CR__ASK_SUB, s->id);
        handle_ack(ps, s);
    } else if (strcasecmp(k, "unsubscribe") == 0) {
        /* Unasked (a sharded channel's slot moved) when not expected. */
        cr__link_answered(&ps->lk, link, CR__ASK_UNSUB, s->id);
        handle_ack(ps, s);
    }
    return true;
}

static void
on_opened(void *arg, int link)
{
    cr__pubsub *ps = arg;
    cr__sub *s, *tmp;

    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->link == link)
            mark_dirty(ps, s);
}

static void
on_failed(void *arg, int link, cr_status final, const char *why)
{
    cr__pubsub *ps = arg;
    cr__sub *s, *tmp;

    if (final != CR_OK)
        HASH_ITER(hh, ps->subs, s, tmp)
            if (s->link == link && s->refs > 0 && s->refused == CR_OK)
                refuse_sub(ps, s, cr__fail(final, "%s", why), why);
    /* Sharded: the node may be gone; place its channels again. */
    HASH_ITER(hh, ps->subs, s, tmp)
        if (ps->lk.sharded && s->link == link)
            s->link = -1;
}

static void
on_dropped(void *arg, int link)
{
    cr__pubsub *ps = arg;
    cr__sub *s, *tmp;

    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->link == link)
            reset_sub(ps, s);
}

static const cr__link_ops table_ops = {
    .wanted = on_wanted,
    .upkeep = on_upkeep,
    .send = on_send,
    .pending = on_pending,
    .due = on_due,
    .reply = on_reply,
    .opened = on_opened,
    .failed = on_failed,
    .dropped = on_dropped,
};

/* ----------------------------------------------------------- life cycle */

cr_status
cr__pubsub_new(const cr__conn_config *cfg, cr__transport *t, bool sharded,
               cr__pubsub **out)
{
    cr__pubsub *ps = calloc(1, sizeof(*ps));
    cr_status rc;

    if (ps == NULL)
        return CR_ENOMEM;
    rc = cr__links_start(&ps->lk, cfg, t, sharded, &table_ops, ps);
    if (rc != CR_OK) {
        free(ps);
        return rc;
    }
    *out = ps;
    return CR_OK;
}

void
cr__pubsub_close(cr__pubsub *ps)
{
    cr__sub *s, *tmp;

    pthread_mutex_lock(&ps->lk.mu);
    ps->closing = true;
    HASH_ITER(hh, ps->subs, s, tmp) {
        waiter *w;

        for (w = s->waiting; w != NULL; w = w->next)
            pthread_cond_signal(&w->cv);
        pthread_cond_broadcast(&s->confirm_cv);
        wake_yielders(s, true);
    }
    cr__links_kick_readers(&ps->lk);
    pthread_mutex_unlock(&ps->lk.mu);
}

void
cr__pubsub_free(cr__pubsub *ps)
{
    cr__sub *s, *tmp;

    if (ps == NULL)
        return;
    cr__links_stop(&ps->lk);
    HASH_ITER(hh, ps->subs, s, tmp) {
        HASH_DEL(ps->subs, s);
        free_sub(s);
    }
    cr__links_free(&ps->lk);
    free(ps);
}
