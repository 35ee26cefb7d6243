/* SPDX-License-Identifier: MIT */
/*
 * The subscriber connection and its dispatcher thread.
 *
 * The connection is used under `mu` only. Callers change the table of
 * subscriptions, mark the entry dirty and write a byte to a pipe; the
 * dispatcher thread, blocked in poll() on the sockets and that pipe, sends
 * the SUBSCRIBE/UNSUBSCRIBE commands the table now asks for. Replies come
 * back in order, so an entry counts its commands in flight and is confirmed
 * only when the last one sent was a SUBSCRIBE and all have been answered.
 *
 * Reading: a thread that waits for a message (cr__sub_wait, a yield) reads
 * its link itself when nobody else does (the link's "reader"), so that a
 * message wakes it directly, not the dispatcher which would then wake it:
 * one thread wake-up per message instead of two. Meanwhile the dispatcher
 * leaves that socket out of its poll, other waiting threads sleep on their
 * condition variables (listed as the link's sleepers), and a reader that
 * stops waiting hands the link to the one that has slept longest. A link
 * nobody waits on is read by the dispatcher again at its next round (at
 * most a second later, or at once when poked). A link dropped while a
 * reader polls it is freed by that reader, which an eventfd wakes.
 *
 * A silent link (a partition) is found by a PING every few seconds of
 * silence: no answer within the command timeout counts as a broken link.
 *
 * Links: one subscriber connection to the server, or in a Redis Cluster to
 * one master (classic pub/sub: PUBLISH reaches every node), or with sharded
 * pub/sub one link per master, each channel SSUBSCRIBEd on the master of its
 * slot. When a link breaks, a slot moves (the server then ends the sharded
 * subscription itself) or a node answers with an error, its channels are
 * placed again from a fresh slot map and their waiters woken to retry.
 *
 * Lock order: `mu` only; nothing else is taken while holding it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uthash.h>

#include "pubsub.h"
#include "slot.h"
#include "topology.h"

enum { SENT_NONE, SENT_SUB, SENT_UNSUB };

/* What a link waits for an answer to, in the order sent. */
enum { ASK_SUB, ASK_UNSUB, ASK_PING };

#define PING_AFTER_MS 5000
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define MAX_LINKS 64
/* A subscription nobody uses is kept at least this long before
 * UNSUBSCRIBE, so that a process taking the same lock again and again does
 * not pay a SUBSCRIBE and an UNSUBSCRIBE round trip for each contended
 * wait. It ends at the dispatcher's next round after that (at most a
 * second later while a link is up), which a release does not wake. */
#define LINGER_MS 250

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
    int64_t tokens;
    int last_sent;
    int inflight;
    bool confirmed;
    bool wake_on_confirm; /* resubscribed after a drop: wake to retry */
    cr_status refused; /* the server refused it (an ACL): waits end so */
    char refused_why[200];
    int64_t idle_since; /* lingering since (no waiter left); 0: in use */
    bool dirty;
    int link;      /* index in ps->links; -1 until placed */
    unsigned slot; /* the channel's cluster slot */
    unsigned resets;  /* times its subscription was lost (reset_sub) */
    uint64_t confirms; /* times the server confirmed it */
    uint64_t messages; /* messages read on it, whatever they said */
    uint64_t counted; /* counted messages read, lingering or not */
    int64_t counted_at_us; /* when the last of them was read (monotonic) */
    struct yielder *yielders; /* threads in cr__pubsub_await_count */
    uint64_t open_pongs; /* the link's PONGs when an opening message came */
    struct cr__sub *next_dirty;
    waiter *waiting;           /* threads in cr__sub_wait, by ticket */
    uint64_t tickets;          /* tickets handed out */
    pthread_cond_t confirm_cv; /* waiters for the SUBSCRIBE confirmation */
    UT_hash_handle hh;
};

/* A thread sleeping while another reads the link (see "Reading" above). */
typedef struct sleeper {
    pthread_cond_t *cv;
    struct sleeper *next;
} sleeper;

/* A command sent on a link and not yet answered. */
typedef struct asked {
    int what;     /* ASK_* */
    uint64_t sub; /* the entry's id for ASK_SUB and ASK_UNSUB */
} asked;

/* One subscriber connection, used under mu only. */
typedef struct sublink {
    cr__conn *ctx;
    /* The reading waiter: whether one polls reader_ctx (the ctx when it
     * took the link), the sleepers it hands over to (in arrival order), an
     * eventfd that wakes it (-1 until first needed), a dropped ctx left
     * for it to free, and whether the dispatcher's current poll includes
     * the socket. */
    bool reader;
    bool lowat; /* the reader polls with SO_RCVLOWAT raised */
    cr__conn *reader_ctx;
    sleeper *sleepers;
    int kick;
    cr__conn *dead;
    bool polled;
    int node;      /* cluster node number; -1: the URL's server */
    char host[256];
    int port;
    int64_t last_rx_ms;
    int64_t ping_sent_ms; /* 0 when no PING is outstanding */
    /* Fences (cr__sub_fence): PINGs sent and PONGs read over the link's
     * life (never reset: a PING lost with a connection only makes later
     * PONGs count for earlier PINGs, which is safe), and whether a fence
     * asked for could not be sent at once (the dispatcher then sends it). */
    uint64_t pings, pongs;
    bool fence_wanted;
    bool ping_refused;    /* told once that the ACL refuses PING */
    int64_t retry_at;     /* next connection attempt */
    int64_t backoff;
    bool connected_once;
    unsigned gen; /* topology generation of ctx */
    /* Commands sent and not answered yet, oldest first: an error reply is
     * the answer to the oldest (a SUBSCRIBE refused by an ACL ends the
     * waits on its channel with that status). */
    asked *asked;
    size_t nasked, capasked;
} sublink;

struct cr__pubsub {
    cr__conn_config cfg;
    cr__transport *transport; /* the slot map, in a cluster */
    bool cluster;
    bool sharded; /* SSUBSCRIBE per slot owner */
    pthread_mutex_t mu;
    cr__sub *subs;
    cr__sub *dirty;
    int pipe_fd[2];
    pthread_t thread;
    bool closing;
    bool stop;
    bool need_refresh; /* a cluster link saw the topology change */
    const waiter *self; /* the reading waiter (see read_link) */
    int64_t linger_due; /* when the next lingering entry expires; 0: none */
    int64_t round_due;  /* when the dispatcher's poll times out; -1: never */
    uint64_t sub_ids;   /* ids given to entries so far */
    sublink links[MAX_LINKS];
    int nlinks;
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

/* Waits on cv until the monotonic deadline (ms; -1: none). Returns false
 * once the deadline has passed. */
static bool
cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
{
    struct timespec ts;

    if (deadline < 0) {
        pthread_cond_wait(cv, mu);
        return true;
    }
    if (cr__now_ms() >= deadline)
        return false;
    ts.tv_sec = deadline / 1000;
    ts.tv_nsec = (deadline % 1000) * 1000000;
    return pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT ||
           cr__now_ms() < deadline;
}

/* Wakes the dispatcher thread. */
static void
poke(cr__pubsub *ps)
{
    char b = 1;
    ssize_t n = write(ps->pipe_fd[1], &b, 1);

    (void)n; /* a full pipe already guarantees a wake-up */
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
        if (all || s->counted >= y->target)
            pthread_cond_signal(&y->cv);
}

/* Wakes the waiters of `s` that may take a wake token (the oldest
 * s->tokens), but not `self`, which reads the link and finds its own;
 * mu held. */
static void
wake_token_holders(cr__sub *s, const waiter *self)
{
    waiter *w;
    int64_t i = 0;

    for (w = s->waiting; w != NULL && i < s->tokens; w = w->next, i++)
        if (w != self)
            pthread_cond_signal(&w->cv);
}

/* Whether waiter `w` of `s` may take a wake token: one of the oldest
 * s->tokens; mu held. */
static bool
has_token(const cr__sub *s, const waiter *w)
{
    const waiter *o;
    int64_t i = 0;

    for (o = s->waiting; o != NULL && i < s->tokens; o = o->next, i++)
        if (o == w)
            return true;
    return false;
}

/* Gives every local waiter of `s` a wake token to retry; mu held. */
static void
wake_all(cr__sub *s)
{
    s->tokens = s->refs; /* each waiter holds a reference */
    wake_token_holders(s, NULL);
}

static bool await_link(cr__pubsub *ps, cr__sub *s, pthread_cond_t *cv,
                       const waiter *self, uint64_t releases,
                       int64_t deadline);
static void hand_over(cr__pubsub *ps, cr__sub *s);
static bool ping_link(cr__pubsub *ps, sublink *l);
static void kick(sublink *l);

/* ------------------------------------------------------- the public side */

cr_status
cr__pubsub_subscribe(cr__pubsub *ps, const char *channel,
                     cr__decode_fn decode, int64_t timeout_ms, cr__sub **out)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cr__now_ms() + timeout_ms;
    cr__sub *s;
    cr_status rc = CR_OK;

    pthread_mutex_lock(&ps->mu);
    if (ps->closing) {
        pthread_mutex_unlock(&ps->mu);
        return cr__fail(CR_ECLOSED, "the client is being freed");
    }
    HASH_FIND_STR(ps->subs, channel, s);
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL || (s->channel = strdup(channel)) == NULL) {
            free(s);
            pthread_mutex_unlock(&ps->mu);
            return CR_ENOMEM;
        }
        s->id = ++ps->sub_ids;
        s->decode = decode;
        s->link = ps->sharded ? -1 : 0;
        s->slot = cr__key_slot(channel, strlen(channel));
        cond_init_monotonic(&s->confirm_cv);
        HASH_ADD_KEYPTR(hh, ps->subs, s->channel, strlen(s->channel), s);
    }
    if (s->refs++ == 0) {
        s->idle_since = 0;
        if (s->last_sent != SENT_SUB) {
            mark_dirty(ps, s);
            poke(ps);
        }
    }
    while (!s->confirmed && !ps->closing && s->refused == CR_OK)
        if (!cond_wait_until(&s->confirm_cv, &ps->mu, deadline))
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
        poke(ps);
        s = NULL;
    }
    pthread_mutex_unlock(&ps->mu);
    *out = s;
    return rc;
}

void
cr__pubsub_unsubscribe(cr__pubsub *ps, cr__sub *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&ps->mu);
    if (--s->refs == 0) {
        s->tokens = 0;
        if (s->last_sent == SENT_SUB && s->confirmed) {
            /* Linger; the dispatcher unsubscribes when it expires. */
            s->idle_since = cr__now_ms();
            if (ps->linger_due == 0) {
                ps->linger_due = s->idle_since + LINGER_MS;
                if (ps->round_due < 0)
                    poke(ps);
            }
        } else {
            mark_dirty(ps, s);
            poke(ps);
        }
    } else if (s->tokens > s->refs) {
        s->tokens = s->refs;
    }
    pthread_mutex_unlock(&ps->mu);
}

cr_status
cr__sub_wait(cr__pubsub *ps, cr__sub *s, int64_t timeout_ms,
             uint64_t *ticket, const cr__fence *f, bool *opened)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cr__now_ms() + timeout_ms;
    cr_status rc = CR_TIMEOUT;
    waiter me, **p;

    cond_init_monotonic(&me.cv);
    pthread_mutex_lock(&ps->mu);
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
        s->tokens--;
        rc = CR_OK;
    }
    if (f != NULL)
        *opened = rc == CR_OK && f->link >= 0 && f->link == s->link &&
                  f->resets == s->resets && s->open_pongs >= f->pongs;
    for (p = &s->waiting; *p != &me; p = &(*p)->next)
        ;
    *p = me.next; /* those behind move up as the tokens went down */
    hand_over(ps, s);
    pthread_mutex_unlock(&ps->mu);
    pthread_cond_destroy(&me.cv);
    return rc;
}

bool
cr__sub_confirmed(cr__pubsub *ps, cr__sub *s)
{
    bool ok;

    pthread_mutex_lock(&ps->mu);
    ok = s->confirmed;
    pthread_mutex_unlock(&ps->mu);
    return ok;
}

void
cr__sub_fence(cr__pubsub *ps, cr__sub *s, cr__fence *f)
{
    pthread_mutex_lock(&ps->mu);
    f->link = s->link;
    f->resets = s->resets;
    /* Classic pub/sub in a cluster reaches this link through the cluster
     * bus from another node, out of order with the PING: no fence there. */
    if (s->link >= 0 && s->confirmed && (!ps->cluster || ps->sharded)) {
        sublink *l = &ps->links[s->link];

        f->pongs = l->pings + 1;
        if (l->ctx == NULL || !ping_link(ps, l)) {
            l->fence_wanted = true; /* the dispatcher finds out why */
            poke(ps);
        }
    } else {
        f->link = -1;
    }
    pthread_mutex_unlock(&ps->mu);
}

bool
cr__sub_quiet_since(cr__pubsub *ps, cr__sub *s, const cr__sub_mark *m)
{
    bool quiet;

    pthread_mutex_lock(&ps->mu);
    quiet = m->id != 0 && m->id == s->id && s->confirmed &&
            s->confirms == m->confirms && s->messages == m->messages;
    pthread_mutex_unlock(&ps->mu);
    return quiet;
}

int
cr__pubsub_waiters(cr__pubsub *ps, const char *channel, uint64_t *count,
                   int64_t *counted_at_us, cr__sub_mark *mark)
{
    cr__sub *s;
    int n = -1;

    pthread_mutex_lock(&ps->mu);
    HASH_FIND_STR(ps->subs, channel, s);
    *count = 0;
    *counted_at_us = 0;
    if (mark != NULL)
        memset(mark, 0, sizeof(*mark));
    if (s != NULL && s->last_sent == SENT_SUB && s->confirmed) {
        yielder *y;

        for (n = s->refs, y = s->yielders; y != NULL; y = y->next)
            n--; /* they hold a reference but do not wait for the lock */
        *count = s->counted;
        *counted_at_us = s->counted_at_us;
        if (mark != NULL) {
            mark->id = s->id;
            mark->confirms = s->confirms;
            mark->messages = s->messages;
        }
    }
    pthread_mutex_unlock(&ps->mu);
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

    pthread_mutex_lock(&ps->mu);
    HASH_FIND_STR(ps->subs, channel, s);
    if (s == NULL || s->last_sent != SENT_SUB || !s->confirmed || ps->closing) {
        pthread_mutex_unlock(&ps->mu);
        return false;
    }
    /* A reference keeps the subscription (and its count) alive. */
    if (s->refs++ == 0)
        s->idle_since = 0;
    first = s->counted;
    me.target = target;
    cond_init_monotonic(&me.cv);
    me.next = s->yielders;
    s->yielders = &me;
    while (s->counted < target && s->confirmed && !ps->closing) {
        int64_t last = s->counted_at_us / 1000, until;
        uint64_t before = s->counted;
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
        if (!in_time && (s->counted == before || cr__now_ms() >= deadline_ms))
            break;
    }
    for (link = &s->yielders; *link != &me; link = &(*link)->next)
        ;
    *link = me.next;
    hand_over(ps, s);
    pthread_mutex_unlock(&ps->mu);
    pthread_cond_destroy(&me.cv);
    cr__pubsub_unsubscribe(ps, s);
    return true;
}

void
cr__pubsub_master_moved(cr__pubsub *ps)
{
    poke(ps); /* the dispatcher drops the links to the old master */
}

unsigned
cr__pubsub_channel_count(cr__pubsub *ps)
{
    cr__sub *s, *tmp;
    unsigned n = 0;

    pthread_mutex_lock(&ps->mu);
    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->refs > 0 || s->last_sent == SENT_SUB)
            n++;
    pthread_mutex_unlock(&ps->mu);
    return n;
}

/* ------------------------------------------------- the dispatcher thread */

/* Remembers that link `l` waits for the answer to a command; false when
 * out of memory. */
static bool
expect(sublink *l, int what, uint64_t sub)
{
    if (l->nasked == l->capasked) {
        size_t cap = l->capasked ? l->capasked * 2 : 16;
        asked *grown = realloc(l->asked, cap * sizeof(*grown));

        if (grown == NULL)
            return false;
        l->asked = grown;
        l->capasked = cap;
    }
    l->asked[l->nasked].what = what;
    l->asked[l->nasked++].sub = sub;
    return true;
}

/* Takes the oldest unanswered command off link `l` when it is `what` on
 * entry `sub` (0: any entry), and tells whether it was. */
static bool
answered(sublink *l, int what, uint64_t sub)
{
    if (l->nasked == 0 || l->asked[0].what != what ||
        (sub != 0 && l->asked[0].sub != sub))
        return false;
    memmove(l->asked, l->asked + 1, --l->nasked * sizeof(*l->asked));
    return true;
}

/* Queues one (S)SUBSCRIBE or (S)UNSUBSCRIBE of `s` in the link's output
 * buffer. */
static bool
append_cmd(cr__pubsub *ps, sublink *l, bool subscribe, const cr__sub *s)
{
    const char *argv[2] = {
        ps->sharded ? (subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE")
                    : (subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE"),
        s->channel};

    return expect(l, subscribe ? ASK_SUB : ASK_UNSUB, s->id) &&
           cr__conn_append(l->ctx, 2, argv, NULL) == CR_OK;
}

/* Writes out what a link has queued; false when the link failed. A
 * reader that polls for several messages at once is kicked, as the reply
 * is for someone else. mu held: the write is bounded by the command
 * timeout. */
static bool
flush_link(cr__pubsub *ps, sublink *l)
{
    if (l->lowat)
        kick(l);
    return cr__conn_flush(l->ctx, cr__now_ms() + ps->cfg.command_timeout_ms) ==
           CR_OK;
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

/* The link of cluster node `node`: its own, else a new one, else one no
 * channel uses any more (a node gone in a failover); -1 when all are in
 * use. mu held. */
static int
link_for_node(cr__pubsub *ps, int node, const char *host, int port)
{
    int i, kick;

    for (i = 0; i < ps->nlinks; i++)
        if (ps->links[i].node == node)
            return i;
    if (ps->nlinks < MAX_LINKS) {
        i = ps->nlinks++;
    } else {
        for (i = 0; i < ps->nlinks && (link_wanted(ps, i) ||
                                       ps->links[i].reader ||
                                       ps->links[i].dead != NULL); i++)
            ;
        if (i == ps->nlinks)
            return -1;
        cr__conn_free(ps->links[i].ctx);
        free(ps->links[i].asked);
    }
    kick = ps->links[i].kick;
    memset(&ps->links[i], 0, sizeof(ps->links[i]));
    ps->links[i].kick = kick;
    ps->links[i].node = node;
    snprintf(ps->links[i].host, sizeof(ps->links[i].host), "%s", host);
    ps->links[i].port = port;
    ps->links[i].backoff = BACKOFF_MIN_MS;
    return i;
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
        node = cr__transport_node_addr(ps->transport, (int64_t)s->slot, host,
                                       sizeof(host), &port);
        if (node < 0 || (s->link = link_for_node(ps, node, host, port)) < 0) {
            ps->need_refresh = true;
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
    bool queued[MAX_LINKS] = {false};
    int i;

    for (s = ps->dirty, ps->dirty = NULL; s != NULL; s = next) {
        sublink *l = s->link >= 0 ? &ps->links[s->link] : NULL;

        next = s->next_dirty;
        s->dirty = false;
        s->next_dirty = NULL;
        if (l != NULL && l->ctx != NULL && s->refs > 0 &&
            s->last_sent != SENT_SUB && s->refused == CR_OK) {
            if (!append_cmd(ps, l, true, s))
                return requeue(ps, s, next, bad);
            s->last_sent = SENT_SUB;
            s->inflight++;
            queued[s->link] = true;
        } else if (l != NULL && l->ctx != NULL && s->refs == 0 &&
                   s->last_sent == SENT_SUB) {
            if (!append_cmd(ps, l, false, s))
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
    for (i = 0; i < ps->nlinks; i++)
        if (queued[i] && !flush_link(ps, &ps->links[i])) {
            *bad = i;
            return false;
        }
    return true;
}

/* Turns a message's payload into wake tokens as the channel's decoder says. */
static void
deliver(cr__pubsub *ps, sublink *l, cr__sub *s, const char *payload,
        size_t len)
{
    cr__wake w = s->decode(payload, len);

    s->messages++;
    if (w.wakes >= s->refs)
        s->tokens = s->refs;
    else if (w.wakes > 0)
        s->tokens += w.wakes;
    if (w.counted) {
        s->counted++;
        s->counted_at_us = cr__now_us();
        wake_yielders(s, false);
    }
    if (w.opens)
        s->open_pongs = l->pongs;
    if (s->tokens > s->refs)
        s->tokens = s->refs;
    /* The first in line, one per token, wake; the waiter reading the
     * link takes its own without a wake-up. */
    wake_token_holders(s, ps->self);
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
    if (ps->sharded)
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
        cr__log(ps->cfg.log, CR_LOG_INFO, "subscription to %s moved",
                s->channel);
        ps->need_refresh = true;
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
    cr__log(ps->cfg.log, CR_LOG_ERROR, "subscription to %s refused: %s",
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

/* Handles an error reply on link `l`: the answer to its oldest command.
 * Returns false when the link must be dropped (a cluster node that does
 * not serve the channel: MOVED, CLUSTERDOWN). mu held. */
static bool
handle_error(cr__pubsub *ps, sublink *l, const cr__reply *r)
{
    cr_status why = cr__reply_status(r->str);
    cr__sub *s, *tmp;
    uint64_t id;

    if (l->nasked > 0 && l->asked[0].what == ASK_PING) {
        /* A user without PING: the answer still shows the link alive. */
        answered(l, ASK_PING, 0);
        l->ping_sent_ms = 0;
        l->pongs++;
        if (!l->ping_refused)
            cr__log(ps->cfg.log, CR_LOG_WARN, "pub/sub PING refused (%s); "
                    "its error answer keeps the link checked", r->str);
        l->ping_refused = true;
        return true;
    }
    if (l->nasked == 0) {
        cr__log(ps->cfg.log, CR_LOG_WARN, "subscriber link: %s", r->str);
        return !ps->cluster;
    }
    id = l->asked[0].sub;
    answered(l, l->asked[0].what, 0);
    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->id == id)
            break;
    if (s != NULL && why == CR_ESERVER && !ps->cluster)
        why = CR_ECONFIG; /* a proxy without pub/sub, say */
    if (s != NULL && why != CR_ESERVER && why != CR_EIO) {
        if (s->inflight > 0)
            s->inflight--;
        refuse_sub(ps, s, cr__fail(why, "SUBSCRIBE %s refused: %s",
                                   s->channel, r->str), r->str);
        return true;
    }
    cr__log(ps->cfg.log, CR_LOG_INFO, "subscriber link: %s", r->str);
    if (ps->cluster)
        ps->need_refresh = true;
    return false;
}

/* Handles one reply on link `l`; mu held. Returns false when the link must
 * be dropped. */
static bool
handle_reply(cr__pubsub *ps, sublink *l, const cr__reply *r)
{
    const cr__reply *kind, *ch;
    const char *k;
    cr__sub *s;

    l->last_rx_ms = cr__now_ms();
    if (r->type == CR__REPLY_ERROR)
        return handle_error(ps, l, r);
    if (r->type == CR__REPLY_STATUS && strcasecmp(r->str, "pong") == 0) {
        /* A link subscribed to nothing answers PING as any connection. */
        answered(l, ASK_PING, 0);
        l->ping_sent_ms = 0;
        l->pongs++;
        return true;
    }
    if (r->type != CR__REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != CR__REPLY_STRING)
        return true;
    kind = r->element[0];
    k = kind->str;
    if (strcasecmp(k, "pong") == 0) {
        answered(l, ASK_PING, 0);
        l->ping_sent_ms = 0;
        l->pongs++;
        return true;
    }
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
        CR__STAT_ADD(ps->cfg.stats, messages, 1);
        deliver(ps, l, s, r->element[2]->str, r->element[2]->len);
    } else if (strcasecmp(k, "subscribe") == 0) {
        answered(l, ASK_SUB, s->id);
        handle_ack(ps, s);
    } else if (strcasecmp(k, "unsubscribe") == 0) {
        /* Unasked (a sharded channel's slot moved) when not expected. */
        answered(l, ASK_UNSUB, s->id);
        handle_ack(ps, s);
    }
    return true;
}

/* Closes link `i` after a failure (`why`): every channel on it is
 * subscribed again and its waiters retry. mu held. */
static void
drop_link(cr__pubsub *ps, int i, const char *why)
{
    sublink *l = &ps->links[i];
    cr__sub *s, *tmp;

    if (l->ctx != NULL) {
        cr__log(ps->cfg.log, CR_LOG_WARN, "pub/sub connection lost: %s", why);
        if (l->reader && l->reader_ctx == l->ctx) {
            l->dead = l->ctx; /* its reader polls the socket: it frees it */
            kick(l);
        } else {
            cr__conn_free(l->ctx);
        }
        l->ctx = NULL;
    }
    l->ping_sent_ms = 0;
    l->nasked = 0;
    if (ps->cluster)
        ps->need_refresh = true;
    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->link == i)
            reset_sub(ps, s);
}

/* Reads everything link `l` has and handles each complete reply; mu held.
 * Returns false when the link failed. */
static bool
read_replies(cr__pubsub *ps, sublink *l)
{
    for (;;) {
        cr__reply *r = NULL;
        bool ok;

        if (cr__conn_poll_reply(l->ctx, &r) != CR_OK)
            return false;
        if (r == NULL)
            return true;
        ok = handle_reply(ps, l, r);
        cr__reply_free(r);
        if (!ok)
            return false;
    }
}

/* ------------------------------------------------ reading by waiters */

/* Wakes the reader of link `l` from its poll. */
static void
kick(sublink *l)
{
    uint64_t one = 1;
    ssize_t n = l->kick >= 0 ? write(l->kick, &one, sizeof(one)) : 0;

    (void)n; /* an eventfd write only fails when the counter is full */
}

/* The calling thread reads link `i` until input comes, the reader is
 * kicked or the deadline (ms; -1: none) passes, handling what it reads;
 * mu held, released while polling. `self`: the calling thread as a
 * waiter for wake tokens (NULL: it waits for something else), which finds a
 * token of its own without a wake-up; `lowat`: how many bytes must have
 * come before poll() returns (SO_RCVLOWAT, set for this poll only; see
 * reader_lowat). Returns false once the deadline passed. */
static bool
read_link(cr__pubsub *ps, int i, const waiter *self, int lowat,
          int64_t deadline)
{
    sublink *l = &ps->links[i];
    cr__conn *ctx = l->ctx;
    int fd = cr__conn_fd(ctx);
    struct pollfd pfd[2];
    int64_t now = cr__now_ms(), timeout = -1;
    uint64_t drained;
    int n;

    if (deadline >= 0) {
        if (now >= deadline)
            return false;
        timeout = deadline - now > INT_MAX ? INT_MAX : deadline - now;
    }
    l->reader = true;
    l->reader_ctx = ctx;
    if (l->polled)
        poke(ps); /* take the socket out of the dispatcher's poll */
    pfd[0].fd = fd;
    pfd[0].events = POLLIN;
    pfd[0].revents = 0;
    pfd[1].fd = l->kick;
    pfd[1].events = POLLIN;
    pfd[1].revents = 0;
    if (cr__conn_buffered(ctx)) {
        /* Read already (TLS decrypted more than it handed out): the
         * socket may have nothing more to say. */
        l->reader = false;
        pfd[0].revents = POLLIN;
        n = 1;
        goto ready;
    }
    /* Unix sockets ignore it in poll(): a wake-up per message, as before. */
    l->lowat = lowat > 1 && setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT,
                                       &lowat, sizeof(lowat)) == 0;
    pthread_mutex_unlock(&ps->mu);
    n = poll(pfd, 2, (int)timeout);
    pthread_mutex_lock(&ps->mu);
    if (l->lowat) {
        int one = 1;

        /* Before anyone else polls the socket. */
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
        l->lowat = false;
    }
    l->reader = false;
    if (pfd[1].revents & POLLIN) {
        ssize_t ignored = read(l->kick, &drained, sizeof(drained));

        (void)ignored; /* nonblocking; a kick may be read by a later reader */
    }
ready:
    if (l->dead != NULL) {
        cr__conn_free(l->dead); /* dropped while this thread polled it */
        l->dead = NULL;
    } else if (n > 0 && l->ctx == ctx &&
               (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        ps->self = self;
        if (!read_replies(ps, l))
            drop_link(ps, i, cr_last_error());
        ps->self = NULL;
        if (ps->dirty != NULL || ps->need_refresh)
            poke(ps); /* what was read asks for the dispatcher's upkeep */
    }
    return deadline < 0 || cr__now_ms() < deadline;
}

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

/* How many bytes link `i`'s reader, waiting for `releases` messages on
 * `s`, may let the kernel gather before poll() wakes it: enough that the
 * last of them has begun to arrive ((releases - 1) whole messages and a
 * byte); 1 (any input) unless it alone waits on the link, with no PING
 * out and nothing half read. mu held. */
static int
reader_lowat(cr__pubsub *ps, const cr__sub *s, uint64_t releases)
{
    sublink *l = &ps->links[s->link];
    const cr__sub *o, *tmp;
    uint64_t bytes;

    if (releases < 2 || l->sleepers != NULL || l->ping_sent_ms != 0 ||
        l->fence_wanted || cr__conn_unread(l->ctx) > 0)
        return 1;
    HASH_ITER(hh, ps->subs, o, tmp)
        if (o != s && o->link == s->link && o->refs > 0)
            return 1; /* someone may be waiting for its confirmation */
    bytes = (releases - 1) * release_bytes(s) + 1;
    return bytes > INT_MAX / 2 ? INT_MAX / 2 : (int)bytes;
}

/* Waits for input on the link of `s` until cv is signalled or the
 * deadline (ms; -1: none) passes; mu held. Reads the link itself when it
 * is connected and nobody else reads it, else sleeps on cv (as a sleeper
 * of the link when someone reads it). `self`: as for read_link;
 * `releases`: how many release messages on `s` are worth waking for (1:
 * any input). Returns false once the deadline passed. */
static bool
await_link(cr__pubsub *ps, cr__sub *s, pthread_cond_t *cv,
           const waiter *self, uint64_t releases, int64_t deadline)
{
    sublink *l = s->link >= 0 ? &ps->links[s->link] : NULL;
    sleeper me, **p;
    bool ok;

    if (l == NULL || l->ctx == NULL || ps->stop)
        return cond_wait_until(cv, &ps->mu, deadline);
    if (l->kick < 0 &&
        (l->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) /* no fd */
        return cond_wait_until(cv, &ps->mu, deadline); /* dispatcher reads */
    if (!l->reader)
        return read_link(ps, s->link, self, reader_lowat(ps, s, releases),
                         deadline);
    if (l->lowat)
        kick(l); /* the reader would not wake for this sleeper's message */
    me.cv = cv;
    me.next = NULL;
    for (p = &l->sleepers; *p != NULL; p = &(*p)->next)
        ; /* in arrival order: the link goes to the longest sleeper */
    *p = &me;
    ok = cond_wait_until(cv, &ps->mu, deadline);
    for (p = &l->sleepers; *p != &me; p = &(*p)->next)
        ;
    *p = me.next;
    return ok;
}

/* A thread done waiting on `s` hands its link to a sleeper, if nobody
 * reads it now; mu held. */
static void
hand_over(cr__pubsub *ps, cr__sub *s)
{
    sublink *l = s->link >= 0 ? &ps->links[s->link] : NULL;

    if (l != NULL && !l->reader && l->sleepers != NULL)
        pthread_cond_signal(l->sleepers->cv);
}

/* Sends a PING on connected link `l`; false when the link failed. Any
 * PING is a fence for the waiters that asked for one before it. mu held. */
static bool
ping_link(cr__pubsub *ps, sublink *l)
{
    const char *argv[1] = {"PING"};

    if (!expect(l, ASK_PING, 0) ||
        cr__conn_append(l->ctx, 1, argv, NULL) != CR_OK ||
        !flush_link(ps, l))
        return false;
    l->pings++;
    if (l->ping_sent_ms == 0)
        l->ping_sent_ms = cr__now_ms();
    return true;
}

/* Sends a PING after a silence or when a fence could not be sent at once,
 * and reports a link whose PING went unanswered for longer than the
 * command timeout; mu held. */
static bool
check_liveness(cr__pubsub *ps, sublink *l)
{
    int64_t now = cr__now_ms();

    if (l->fence_wanted ||
        (l->ping_sent_ms == 0 && now - l->last_rx_ms >= PING_AFTER_MS)) {
        l->fence_wanted = false;
        if (!ping_link(ps, l))
            return false;
    }
    return l->ping_sent_ms == 0 ||
           now - l->ping_sent_ms <= ps->cfg.command_timeout_ms;
}

/* Whether link connection `c` has input (or an error) now. The
 * dispatcher's poll may be stale: a reading waiter may have taken the
 * input meanwhile. mu held. */
static bool
still_readable(cr__conn *c)
{
    struct pollfd p = {cr__conn_fd(c), POLLIN, 0};

    return cr__conn_buffered(c) || poll(&p, 1, 0) > 0;
}

/* Drains the wake-up pipe. */
static void
drain_pipe(int fd)
{
    char buf[64];

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
}

/* Opens link `i` (mu held; released while connecting). Without a cluster
 * the link goes to the URL's server (the master, with Sentinel); with
 * classic pub/sub in a cluster, to any master. */
static void
connect_link(cr__pubsub *ps, int i)
{
    sublink *l = &ps->links[i];
    const cr__url *u = ps->cfg.url;
    cr__conn *c = NULL;
    char host[256];
    int port = l->port;
    unsigned gen = 0;
    cr__peer peer = CR__PEER_DATA;
    cr_status rc = CR_EIO;
    cr__sub *s, *tmp;

    snprintf(host, sizeof(host), "%s", l->host);
    pthread_mutex_unlock(&ps->mu);
    if (ps->cluster && !ps->sharded &&
        cr__transport_node_addr(ps->transport, -1, host, sizeof(host),
                                &port) < 0) {
        host[0] = '\0';
    } else if (ps->cfg.topology != NULL) {
        cr__topology_master(ps->cfg.topology, host, sizeof(host), &port, &gen);
        peer = CR__PEER_MASTER;
    } else if (!ps->cluster && !u->is_unix) {
        snprintf(host, sizeof(host), "%s", u->host);
        port = u->port;
    }
    if (!ps->cluster || host[0] != '\0')
        rc = cr__conn_open(&ps->cfg, u->is_unix && !ps->cluster ? NULL : host,
                           port, peer, cr__now_ms() + ps->cfg.command_timeout_ms,
                           &c);
    pthread_mutex_lock(&ps->mu);
    if (c == NULL && cr__status_is_final(rc)) {
        char why[512];

        /* No retry mends it: the waits on this link end with it. */
        snprintf(why, sizeof(why), "%s", cr_last_error());
        HASH_ITER(hh, ps->subs, s, tmp)
            if (s->link == i && s->refs > 0 && s->refused == CR_OK)
                refuse_sub(ps, s, cr__fail(rc, "%s", why), why);
    } else if (c == NULL && rc == CR_EIO && ps->cfg.topology != NULL) {
        cr__topology_hint(ps->cfg.topology);
    }
    if (c == NULL) {
        if (ps->cluster)
            ps->need_refresh = true;
        /* Sharded: the node may be gone; place its channels again. */
        HASH_ITER(hh, ps->subs, s, tmp)
            if (ps->sharded && s->link == i)
                s->link = -1;
        l->retry_at = cr__now_ms() + l->backoff;
        l->backoff = l->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                     : l->backoff * 2;
        return;
    }
    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->link == i)
            mark_dirty(ps, s);
    l->ctx = c;
    l->gen = gen;
    l->last_rx_ms = cr__now_ms();
    l->backoff = BACKOFF_MIN_MS;
    if (l->connected_once) {
        CR__STAT_ADD(ps->cfg.stats, reconnects, 1);
        cr__event(ps->cfg.stats, CR_EVENT_RECONNECT, CR_OK, NULL, NULL, -1,
                  -1, false);
    }
    l->connected_once = true;
}

/* Queues the UNSUBSCRIBE of entries that lingered long enough and sets
 * when the next one expires. mu held. */
static void
expire_lingering(cr__pubsub *ps, int64_t now)
{
    cr__sub *s, *tmp;

    if (ps->linger_due == 0 || now < ps->linger_due)
        return;
    ps->linger_due = 0;
    HASH_ITER(hh, ps->subs, s, tmp) {
        if (s->refs > 0 || s->idle_since == 0)
            continue;
        if (now - s->idle_since >= LINGER_MS) {
            s->idle_since = 0;
            mark_dirty(ps, s);
        } else if (ps->linger_due == 0 ||
                   s->idle_since + LINGER_MS < ps->linger_due) {
            ps->linger_due = s->idle_since + LINGER_MS;
        }
    }
}

/* One round of the dispatcher's upkeep (mu held, released for I/O): read
 * a new slot map when asked, place channels, open the links that have
 * channels, follow a Sentinel failover, send what the table asks for and
 * check that quiet links are alive. Fills pfd (the pipe first, then one
 * entry per open link, their numbers in which[]) and returns how long
 * poll may wait. */
static int
upkeep(cr__pubsub *ps, struct pollfd *pfd, int *which, int *nfds)
{
    int64_t now, wait_ms = -1;
    int i, bad;

    if (ps->need_refresh) {
        ps->need_refresh = false;
        pthread_mutex_unlock(&ps->mu);
        cr__transport_refresh(ps->transport);
        pthread_mutex_lock(&ps->mu);
    }
    if (ps->sharded)
        place_subs(ps);
    now = cr__now_ms();
    expire_lingering(ps, now);
    for (i = 0; i < ps->nlinks; i++) {
        sublink *l = &ps->links[i];

        if (l->ctx == NULL && l->retry_at <= now && link_wanted(ps, i))
            connect_link(ps, i);
        /* After the master moved, follow it. */
        if (l->ctx != NULL &&
            l->gen != cr__topology_generation(ps->cfg.topology))
            drop_link(ps, i, "the master moved");
        if (l->ctx != NULL && !check_liveness(ps, l))
            drop_link(ps, i, "no answer to PING");
    }
    while (!reconcile(ps, &bad))
        drop_link(ps, bad, cr_last_error());
    pfd[0].fd = ps->pipe_fd[0];
    pfd[0].events = POLLIN;
    *nfds = 1;
    now = cr__now_ms();
    for (i = 0; i < ps->nlinks; i++) {
        sublink *l = &ps->links[i];

        if (l->ctx != NULL && !l->reader) {
            pfd[*nfds].fd = cr__conn_fd(l->ctx);
            pfd[*nfds].events = POLLIN;
            which[(*nfds)++] = i;
            l->polled = true;
            /* Bytes read already (TLS) do not wake poll(): read them now. */
            wait_ms = cr__conn_buffered(l->ctx) ? 0 : 1000;
        } else if (l->ctx != NULL) {
            wait_ms = 1000; /* a waiter reads it; keep checking liveness */
        } else if (link_wanted(ps, i)) {
            int64_t w = l->retry_at > now ? l->retry_at - now : 0;

            if (wait_ms < 0 || w < wait_ms)
                wait_ms = w;
        }
    }
    if (ps->need_refresh || (ps->sharded && wait_ms < 0 && ps->subs != NULL))
        wait_ms = BACKOFF_MIN_MS; /* channels still to place */
    if (ps->linger_due != 0 && (wait_ms < 0 || ps->linger_due - now < wait_ms))
        wait_ms = ps->linger_due > now ? ps->linger_due - now : 0;
    return (int)wait_ms;
}

/* The dispatcher: upkeep, wait for a socket or a poke, handle replies;
 * until told to stop. */
static void *
dispatcher(void *arg)
{
    cr__pubsub *ps = arg;

    pthread_mutex_lock(&ps->mu);
    while (!ps->stop) {
        struct pollfd pfd[MAX_LINKS + 1];
        int which[MAX_LINKS + 1];
        int i, nfds, timeout = upkeep(ps, pfd, which, &nfds);

        ps->round_due = timeout < 0 ? -1 : cr__now_ms() + timeout;
        pthread_mutex_unlock(&ps->mu);
        poll(pfd, (nfds_t)nfds, timeout);
        pthread_mutex_lock(&ps->mu);
        if (pfd[0].revents & POLLIN)
            drain_pipe(ps->pipe_fd[0]);
        for (i = 1; i < nfds; i++)
            ps->links[which[i]].polled = false;
        for (i = 1; i < nfds; i++) {
            sublink *l = &ps->links[which[i]];

            if (l->ctx != NULL && cr__conn_fd(l->ctx) == pfd[i].fd &&
                !l->reader &&
                ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) ||
                 cr__conn_buffered(l->ctx)) &&
                still_readable(l->ctx) && !read_replies(ps, l))
                drop_link(ps, which[i], cr_last_error());
        }
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

/* ----------------------------------------------------------- life cycle */

cr_status
cr__pubsub_new(const cr__conn_config *cfg, cr__transport *t, bool sharded,
               cr__pubsub **out)
{
    cr__pubsub *ps = calloc(1, sizeof(*ps));
    int i;

    if (ps == NULL)
        return CR_ENOMEM;
    ps->cfg = *cfg;
    ps->transport = t;
    ps->cluster = cfg->url->is_cluster;
    ps->sharded = ps->cluster && sharded;
    for (i = 0; i < MAX_LINKS; i++)
        ps->links[i].kick = -1;
    ps->round_due = -1;
    if (!ps->sharded) {
        /* One link for every channel. */
        ps->nlinks = 1;
        ps->links[0].node = -1;
        ps->links[0].backoff = BACKOFF_MIN_MS;
    }
    if (pipe2(ps->pipe_fd, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(ps);
        return cr__fail(CR_EIO, "pipe: %s", strerror(errno));
    }
    pthread_mutex_init(&ps->mu, NULL);
    if (pthread_create(&ps->thread, NULL, dispatcher, ps) != 0) {
        close(ps->pipe_fd[0]);
        close(ps->pipe_fd[1]);
        pthread_mutex_destroy(&ps->mu);
        free(ps);
        return cr__fail(CR_ENOMEM, "cannot start the pub/sub thread");
    }
    *out = ps;
    return CR_OK;
}

void
cr__pubsub_close(cr__pubsub *ps)
{
    cr__sub *s, *tmp;
    int i;

    pthread_mutex_lock(&ps->mu);
    ps->closing = true;
    HASH_ITER(hh, ps->subs, s, tmp) {
        waiter *w;

        for (w = s->waiting; w != NULL; w = w->next)
            pthread_cond_signal(&w->cv);
        pthread_cond_broadcast(&s->confirm_cv);
        wake_yielders(s, true);
    }
    for (i = 0; i < ps->nlinks; i++)
        if (ps->links[i].reader)
            kick(&ps->links[i]);
    pthread_mutex_unlock(&ps->mu);
}

void
cr__pubsub_free(cr__pubsub *ps)
{
    cr__sub *s, *tmp;
    int i;

    if (ps == NULL)
        return;
    pthread_mutex_lock(&ps->mu);
    ps->stop = true;
    pthread_mutex_unlock(&ps->mu);
    poke(ps);
    pthread_join(ps->thread, NULL);
    for (i = 0; i < MAX_LINKS; i++) {
        cr__conn_free(ps->links[i].ctx);
        cr__conn_free(ps->links[i].dead);
        free(ps->links[i].asked);
        if (ps->links[i].kick >= 0)
            close(ps->links[i].kick);
    }
    HASH_ITER(hh, ps->subs, s, tmp) {
        HASH_DEL(ps->subs, s);
        free_sub(s);
    }
    close(ps->pipe_fd[0]);
    close(ps->pipe_fd[1]);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}
