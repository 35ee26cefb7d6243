/* SPDX-License-Identifier: MIT */
/*
 * The event loop's connections (aio.h): the handle's life cycle and its
 * dispatch. What the application's loop reports (a descriptor ready, the
 * timer due) goes to the part it is for: the links (aio_link.c), the
 * resolver's answers and the posts (aio_resolve.c), the timers
 * (aio_timer.c); each dispatch has a work budget, and what its links
 * queued is written when it ends. The subscriptions and their sleepers
 * are here too until they move to aio_sub.c.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <uthash.h>

#include "aio_internal.h"
#include "cluster.h"
#include "conn.h"
#include "slot.h"
#include "topology.h"

/* The work one dispatch (a call of cr_async_io or cr_async_timeout) may
 * do, in replies read, timers run and callbacks run together: the rest
 * waits for the next turn (a timer of 0 ms), so that one dispatch stays
 * short whatever the backlog (cr__aio_spend). */
#define DISPATCH_BUDGET 32
/* A loop that calls cr_async_timeout this late has starved its waits and
 * wake-ups: said in the log, once per LATE_LOG_EVERY_MS at most. */
#define LATE_WARN_MS 1000
#define LATE_LOG_EVERY_MS 10000

static void dispatch_begin(cr__aio *io);
static void dispatch_end(cr__aio *io);

/* --------------------------------------------------------------- timers */

void
cr__aio_timeout(cr__aio *io)
{
    int64_t now = cr__now_ms();

    if (io->armed >= 0 && now - io->armed > LATE_WARN_MS &&
        now - io->late_logged > LATE_LOG_EVERY_MS) {
        /* The leases are the watchdog thread's, safe; the loop's own
         * work is not: the application blocked its loop. */
        io->late_logged = now;
        cr__log(&io->client->log, CR_LOG_WARN, "the event loop ran the "
                "library's timer %lld ms late: its waits, wake-ups and "
                "replies were held up that long (the leases of its holds "
                "are renewed by the client's watchdog thread)",
                (long long)(now - io->armed));
    }
    io->armed = -1;
    dispatch_begin(io);
    while (io->nheap > 0 && io->heap[0]->due <= now && cr__aio_spend(io)) {
        cr__atimer *t = io->heap[0];

        cr__aio_cancel_timer(io, t);
        t->fn(t->ctx);
    }
    dispatch_end(io);
    cr__aio_arm(io);
}

/* ------------------------------------------------------------- watching */

int
cr__aio_fds(cr__aio *io, cr_async_fd *fds, int max, int64_t *timeout_ms)
{
    int n = 0;
    cr__alink *l;

    if (io->wake_fd >= 0) {
        if (n < max)
            fds[n] = (cr_async_fd){io->wake_fd, CR_WATCH_READ};
        n++;
    }
    for (l = io->links; l != NULL; l = l->next)
        if (l->fd >= 0 && l->watched != 0) {
            if (n < max)
                fds[n] = (cr_async_fd){l->fd, l->watched};
            n++;
        }
    if (io->nheap == 0) {
        *timeout_ms = -1;
    } else {
        int64_t now = cr__now_ms();

        *timeout_ms = io->heap[0]->due > now ? io->heap[0]->due - now : 0;
    }
    return n;
}

/* -------------------------------------------------------- the resolver */

/* The wake-up descriptor is readable: the resolver's answers and the
 * posts (on the loop). */
static void
woken(cr__aio *io)
{
    uint64_t n;
    cr__aresolve *j, *next;

    if (read(io->wake_fd, &n, sizeof(n)) < 0) {
        /* nothing to read: another turn took it */
    }
    cr__aio_run_posted(io);
    pthread_mutex_lock(&io->mu);
    j = io->done;
    io->done = NULL;
    pthread_mutex_unlock(&io->mu);
    for (; j != NULL; j = next) {
        cr__alink *l = j->link;

        next = j->next;
        if (l != NULL && l->state == CR__LINK_RESOLVING) {
            l->ai = j->ai;
            j->ai = NULL;
            l->resolved = j->err == 0 ? CR_OK
                          : cr__fail(CR_EIO, "cannot resolve %s: %s", l->host,
                                     gai_strerror(j->err));
            cr__aio_link_drive(l, 0);
        }
        if (j->ai != NULL)
            freeaddrinfo(j->ai);
        free(j);
    }
}

bool
cr__aio_dispatching(const cr__aio *io)
{
    return io->dispatching > 0;
}

/* Starts a dispatch (they do not nest, but a callback may free the handle
 * inside one: see cr_async_free). */
static void
dispatch_begin(cr__aio *io)
{
    if (io->dispatching++ == 0)
        io->budget = DISPATCH_BUDGET;
}

/* Ends a dispatch: writes what its links queued. */
static void
dispatch_end(cr__aio *io)
{
    if (--io->dispatching > 0)
        return;
    while (io->dirty != NULL) {
        cr__alink *l = io->dirty;

        io->dirty = l->dirty_next;
        l->dirty = false;
        cr__aio_link_flush(l);
    }
}

void
cr__aio_ready(cr__aio *io, int fd, int events)
{
    cr__alink *l;

    dispatch_begin(io);
    if (io->wake_fd >= 0 && fd == io->wake_fd) {
        woken(io);
    } else {
        for (l = io->links; l != NULL; l = l->next)
            if (l->fd == fd) {
                cr__aio_link_drive(l, events);
                break;
            }
    }
    dispatch_end(io);
}

/* ------------------------------------------------------- subscriptions */

/* The subscriber link of a channel, made when new: one per server (per
 * slot master with sharded pub/sub). */
static cr__alink *
sub_link(cr__aio *io, const char *channel)
{
    char host[256] = "";
    int port = 0, node = -1;
    cr__alink *l;

    if (io->cluster) {
        node = cr__transport_node_addr(io->client->run.transport,
                                       io->sharded ? (int64_t)cr__key_slot(
                                                         channel, strlen(channel))
                                                   : -1,
                                       host, sizeof(host), &port);
        if (node < 0)
            return NULL;
    } else if (io->client->topology == NULL && !io->client->url.is_unix) {
        snprintf(host, sizeof(host), "%s", io->client->url.host);
        port = io->client->url.port;
    }
    for (l = io->links; l != NULL; l = l->next)
        if (l->sub && (!io->cluster || l->node == node))
            break;
    if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
        l->io = io;
        l->sub = true;
        l->fd = -1;
        l->node = node;
        snprintf(l->host, sizeof(l->host), "%s", host);
        l->port = port;
        l->next = io->links;
        io->links = l;
    }
    if (l != NULL && io->client->topology != NULL &&
        l->state != CR__LINK_DOWN &&
        cr__topology_generation(io->client->topology) != l->gen)
        cr__aio_link_fail(l, CR_EIO, "the master moved");
    return l;
}

static cr_status
sub_send(cr__alink *l, cr__asub *s, bool subscribe)
{
    cr__aio *io = l->io;
    const char *argv[2] = {
        io->sharded ? (subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE")
                    : (subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE"),
        s->channel};
    cr__buf b = {0};
    cr__apend *e;
    bool unsent;
    cr_status rc = CR_ENOMEM;

    if (cr__resp_append(&b, 2, argv, NULL) && (e = cr__aio_push(l)) != NULL) {
        e->kind = subscribe ? CR__PEND_SUB : CR__PEND_UNSUB;
        e->sub = s;
        e->deadline = cr__now_ms() + io->client->command_timeout_ms;
        if ((rc = cr__aio_link_put(l, b.data, b.len, &unsent)) == CR_OK) {
            s->sent = subscribe;
            s->inflight++;
            if (unsent)
                l->unsent++;
        } else {
            l->len--;
        }
    }
    cr__buf_free(&b);
    return rc;
}

/* Runs a sleeper's callback at the loop's next turn (never inside the
 * call that made it sleep). */
static void
sleeper_fire(void *arg)
{
    cr__asleeper *s = arg;

    s->fn(s->ctx, CR_OK, s->opened);
}

/* Takes `w` out of its subscription's line. */
static void
unlink_sleeper(cr__aio *io, cr__asleeper *w)
{
    cr__asub *s = w->sub;
    cr__asleeper **p;

    if (s == NULL)
        return;
    for (p = &s->sleepers; *p != NULL; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    for (p = &s->confirming; *p != NULL; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->next = NULL;
    cr__aio_cancel_timer(io, &w->timer);
}

/* Gives the sleepers their wake tokens: the first in line, one each. */
static void
wake_token_holders(cr__aio *io, cr__asub *s)
{
    while (s->tally.tokens > 0 && s->sleepers != NULL) {
        cr__asleeper *w = s->sleepers;

        s->tally.tokens--;
        s->sleepers = w->next;
        w->next = NULL;
        cr__aio_cancel_timer(io, &w->timer);
        w->fn(w->ctx, CR_OK, w->opened);
    }
}

/* A subscription's confirmation (or refusal) reaches those waiting. */
static void
sub_confirmed(cr__aio *io, cr__asub *s, cr_status rc)
{
    while (s->confirming != NULL) {
        cr__asleeper *w = s->confirming;

        s->confirming = w->next;
        w->next = NULL;
        cr__aio_cancel_timer(io, &w->timer);
        if (rc != CR_OK) {
            s->refs--;
            w->sub = NULL;
        }
        w->fn(w->ctx, rc, false);
    }
}

static void
handle_sub_reply(cr__alink *l, const cr__reply *r)
{
    cr__aio *io = l->io;
    const cr__reply *ch;
    const char *k;
    cr__asub *s;

    if (r->type == CR__REPLY_ERROR) {
        /* The oldest question asked is the one refused. */
        if (l->len > 0) {
            cr__apend e = cr__aio_pop(l);

            if (e.kind == CR__PEND_SUB && e.sub != NULL) {
                e.sub->inflight--;
                e.sub->sent = false;
                sub_confirmed(io, e.sub, cr__fail(
                    cr__reply_status(r->str) == CR_ESERVER
                        ? CR_ENOPERM : cr__reply_status(r->str),
                    "SUBSCRIBE %s refused: %s", e.sub->channel, r->str));
            }
        }
        return;
    }
    if (r->type != CR__REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != CR__REPLY_STRING)
        return;
    k = r->element[0]->str;
    if (strcasecmp(k, "pong") == 0) {
        if (l->len > 0 && l->q[l->head].kind == CR__PEND_PING)
            cr__aio_pop(l);
        l->ping_sent = 0;
        io->pongs++;
        return;
    }
    ch = r->element[1];
    if (ch->type != CR__REPLY_STRING)
        return;
    HASH_FIND(hh, io->subs, ch->str, ch->len, s);
    if (s == NULL)
        return;
    if (strcasecmp(k, "smessage") == 0 || strcasecmp(k, "ssubscribe") == 0 ||
        strcasecmp(k, "sunsubscribe") == 0)
        k++; /* sharded: the same as message, subscribe, unsubscribe */
    if (strcasecmp(k, "message") == 0 && r->elements == 3 &&
        r->element[2]->type == CR__REPLY_STRING) {
        cr__wake w = s->decode(r->element[2]->str, r->element[2]->len);

        CR__STAT_ADD(&io->client->run.stats, messages, 1);
        cr__tally_message(&s->tally, s->refs, w, r->element[2]->str,
                          r->element[2]->len, cr__now_us());
        if (w.opens) {
            cr__asleeper *x;

            s->open_pongs = io->pongs;
            for (x = s->sleepers; x != NULL; x = x->next)
                x->opened = true;
        }
        wake_token_holders(io, s);
    } else if (strcasecmp(k, "subscribe") == 0 ||
               strcasecmp(k, "unsubscribe") == 0) {
        if (l->len > 0 && (l->q[l->head].kind == CR__PEND_SUB ||
                           l->q[l->head].kind == CR__PEND_UNSUB))
            cr__aio_pop(l);
        if (s->inflight > 0)
            s->inflight--;
        if (s->inflight == 0 && s->sent && !s->confirmed) {
            s->confirmed = true;
            s->confirms++;
            sub_confirmed(io, s, CR_OK);
            /* Waiters look again: they may have missed a message. */
            s->tally.tokens = s->refs;
            wake_token_holders(io, s);
        }
        if (!s->sent)
            s->confirmed = false;
    }
}

const cr__asub_ops cr__aio_sub_ops = {
    sub_send, wake_token_holders, handle_sub_reply,
};

/* Unsubscribes what nobody used for CR__LINGER_MS. */
static void
linger(void *arg)
{
    cr__aio *io = arg;
    cr__asub *s, *tmp;
    int64_t now = cr__now_ms(), next = -1;

    HASH_ITER(hh, io->subs, s, tmp) {
        if (s->refs > 0 || s->idle_since == 0)
            continue;
        if (cr__linger_over(s->idle_since, now, &next)) {
            if (s->sent && s->link != NULL && s->link->state == CR__LINK_UP)
                sub_send(s->link, s, false);
            if (s->link != NULL)
                cr__aio_link_kick(s->link);
            HASH_DEL(io->subs, s);
            free(s->channel);
            free(s);
        }
    }
    if (next >= 0)
        cr__aio_after(io, &io->linger, next - now, linger, io);
}

static void
confirm_timeout(void *arg)
{
    cr__asleeper *w = arg;
    cr__asub *s = w->sub;
    cr__asleeper **p;

    for (p = &s->confirming; *p != NULL; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->next = NULL;
    w->fn(w->ctx, cr__fail(CR_TIMEOUT, "SUBSCRIBE %s not confirmed in time",
                           s->channel), false);
}

static void
confirm_now(void *arg)
{
    cr__asleeper *w = arg;
    cr__asub *s = w->sub;
    cr__asleeper **p;

    for (p = &s->confirming; *p != NULL; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->next = NULL;
    w->fn(w->ctx, CR_OK, false);
}

static void
subscribe_failed(void *arg)
{
    cr__asleeper *w = arg;

    w->fn(w->ctx, cr__fail(CR_ENOMEM, "out of memory"), false);
}

void
cr__aio_subscribe(cr__aio *io, const char *channel, cr__decode_fn decode,
                  int64_t timeout_ms, cr__asleeper *w)
{
    cr__asub *s;
    cr__alink *l;

    HASH_FIND_STR(io->subs, channel, s);
    if (s == NULL) {
        if ((s = calloc(1, sizeof(*s))) == NULL ||
            (s->channel = strdup(channel)) == NULL) {
            free(s);
            w->sub = NULL;
            cr__aio_after(io, &w->timer, 0, subscribe_failed, w);
            return;
        }
        s->decode = decode;
        HASH_ADD_KEYPTR(hh, io->subs, s->channel, strlen(s->channel), s);
    }
    s->refs++;
    s->idle_since = 0;
    w->sub = s;
    w->next = s->confirming;
    s->confirming = w;
    if (s->confirmed) {
        cr__aio_after(io, &w->timer, 0, confirm_now, w);
        return;
    }
    cr__aio_after(io, &w->timer, timeout_ms, confirm_timeout, w);
    if (!s->sent) {
        l = s->link != NULL ? s->link : sub_link(io, channel);
        if (l == NULL) {
            return; /* the timeout answers */
        }
        s->link = l;
        if (l->state == CR__LINK_UP) {
            if (sub_send(l, s, true) == CR_OK)
                cr__aio_link_kick(l);
        } else if (l->state == CR__LINK_DOWN) {
            cr__aio_link_open_soon(l); /* link_up sends it */
        }
        cr__aio_link_schedule(l);
    }
}

/* A sleep ran out. */
static void
sleep_timeout(void *arg)
{
    cr__asleeper *w = arg;
    cr__aio *io = NULL;
    cr__asub *s = w->sub;
    cr__asleeper **p;

    (void)io;
    for (p = &s->sleepers; *p != NULL; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->next = NULL;
    w->fn(w->ctx, CR_TIMEOUT, false);
}

void
cr__aio_sleep(cr__aio *io, void *sub, int64_t ms, const cr__fence *fence,
              cr__asleeper *w)
{
    cr__asub *s = sub;
    cr__asleeper **p;

    (void)fence;
    if (w->ticket == 0)
        w->ticket = ++io->tickets;
    w->sub = s;
    w->opened = false;
    if (s->tally.tokens > 0 && s->sleepers == NULL) {
        s->tally.tokens--;
        cr__aio_after(io, &w->timer, 0, sleeper_fire, w);
        return;
    }
    for (p = &s->sleepers; *p != NULL && (*p)->ticket < w->ticket;
         p = &(*p)->next)
        ;
    w->next = *p;
    *p = w;
    if (ms >= 0)
        cr__aio_after(io, &w->timer, ms, sleep_timeout, w);
    wake_token_holders(io, s);
}

void
cr__aio_wake_stop(cr__aio *io, cr__asleeper *w)
{
    unlink_sleeper(io, w);
}

/* cr__wait_subs over the loop's subscriptions. */
static int
aio_waiters(void *ctx, const char *channel, cr__sub_seen *seen,
            cr__sub_mark *mark)
{
    cr__aio *io = ctx;
    cr__asub *s;

    HASH_FIND_STR(io->subs, channel, s);
    *seen = (cr__sub_seen){.waiters = -1};
    if (mark != NULL)
        mark->id = 0;
    if (s == NULL || !s->confirmed)
        return -1;
    if (mark != NULL) {
        mark->id = (uint64_t)(uintptr_t)s;
        mark->confirms = s->confirms;
        mark->messages = s->tally.messages;
    }
    seen->counted = s->tally.counted;
    seen->counted_at_us = s->tally.counted_at_us;
    return seen->waiters = s->refs;
}

static bool
aio_confirmed(void *ctx, void *sub)
{
    (void)ctx;
    return sub != NULL && ((cr__asub *)sub)->confirmed;
}

static bool
aio_quiet_since(void *ctx, void *sub, const cr__sub_mark *m)
{
    cr__asub *s = sub;

    (void)ctx;
    return s != NULL && m->id == (uint64_t)(uintptr_t)s && s->confirmed &&
           s->confirms == m->confirms && s->tally.messages == m->messages;
}

static bool
aio_heard(void *ctx, void *sub, const char *payload, size_t len)
{
    cr__asub *s = sub;

    (void)ctx;
    return s != NULL && cr__kept_is(&s->tally.kept, payload, len);
}

static void
aio_fence(void *ctx, void *sub, cr__fence *f)
{
    (void)ctx;
    (void)sub;
    f->link = -1; /* no fences on the loop's links: the waiter looks again */
}

static void
aio_unsubscribe(void *ctx, void *sub)
{
    cr__aio *io = ctx;
    cr__asub *s = sub;

    if (s == NULL || --s->refs > 0)
        return;
    s->tally.tokens = 0;
    s->idle_since = cr__now_ms();
    if (io->linger.index == 0)
        cr__aio_after(io, &io->linger, CR__LINGER_MS, linger, io);
}

const cr__wait_subs cr__aio_subs = {
    aio_waiters, aio_confirmed, aio_quiet_since, aio_heard, aio_fence,
    aio_unsubscribe,
};

/* ----------------------------------------------------------- life cycle */

cr_status
cr__aio_new(cr_client *c, const cr_loop *loop, cr__aio **out)
{
    cr__aio *io = calloc(1, sizeof(*io));

    if (io == NULL)
        return CR_ENOMEM;
    io->client = c;
    io->loop = *loop;
    io->subops = &cr__aio_sub_ops;
    io->armed = -1;
    io->wake_fd = -1;
    io->cluster = c->url.is_cluster;
    io->sharded = io->cluster && strcmp(c->publish_cmd, "spublish") == 0;
    pthread_mutex_init(&io->mu, NULL);
    pthread_cond_init(&io->cv, NULL);
    *out = io;
    return CR_OK;
}

void
cr__aio_free(cr__aio *io)
{
    cr__alink *l, *next;
    cr__asub *s, *tmp;
    cr__aresolve *j, *jn;

    if (io == NULL)
        return;
    io->closing = true;
    for (l = io->links; l != NULL; l = l->next)
        cr__aio_link_fail(l, cr__fail(CR_ECLOSED, "the asynchronous handle "
                                      "is being freed"), NULL);
    HASH_ITER(hh, io->subs, s, tmp) {
        sub_confirmed(io, s, cr__fail(CR_ECLOSED, "the asynchronous handle is "
                                      "being freed"));
        while (s->sleepers != NULL) {
            cr__asleeper *w = s->sleepers;

            s->sleepers = w->next;
            w->next = NULL;
            cr__aio_cancel_timer(io, &w->timer);
            w->fn(w->ctx, CR_ECLOSED, false);
        }
        HASH_DEL(io->subs, s);
        free(s->channel);
        free(s);
    }
    for (l = io->links; l != NULL; l = next) {
        next = l->next;
        cr__aio_cancel_timer(io, &l->timer);
        cr__aio_cancel_timer(io, &l->more);
        cr__aio_cancel_timer(io, &l->opener);
        cr__buf_free(&l->queued);
        free(l->q);
        free(l);
    }
    if (io->resolver_started) {
        pthread_mutex_lock(&io->mu);
        io->resolver_stop = true;
        pthread_cond_signal(&io->cv);
        pthread_mutex_unlock(&io->mu);
        pthread_join(io->resolver, NULL);
    }
    cr__aio_run_posted(io); /* their senders are done: the caller joined them */
    if (io->wake_fd >= 0) {
        io->loop.watch(io->loop.data, io->wake_fd, 0);
        close(io->wake_fd);
    }
    for (j = io->todo; j != NULL; j = jn) {
        jn = j->next;
        free(j);
    }
    for (j = io->done; j != NULL; j = jn) {
        jn = j->next;
        if (j->ai != NULL)
            freeaddrinfo(j->ai);
        free(j);
    }
    cr__aio_cancel_timer(io, &io->linger);
    io->loop.timer(io->loop.data, -1);
    free(io->heap);
    pthread_cond_destroy(&io->cv);
    pthread_mutex_destroy(&io->mu);
    free(io);
}
