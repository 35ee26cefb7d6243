/* SPDX-License-Identifier: MIT */
/*
 * The subscriptions of the event loop's connections (aio.h) and their
 * sleepers. One subscriber link per server (per slot master with sharded
 * pub/sub) carries the (S)SUBSCRIBE and (S)UNSUBSCRIBE commands; a
 * subscription is reference counted per channel, confirmed or refused,
 * and lingers CR__LINGER_MS after its last reference. Each object decodes
 * its own messages (cr__decode_fn); a message becomes wake tokens
 * (cr__tally_message) for the sleepers in line by ticket, and a token
 * nobody could take yet waits for the next sleeper. cr__aio_subs is the
 * wait state machine's view of them. The links (aio_link.c, below) call
 * in here only through cr__aio_sub_ops.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aio_internal.h"
#include "conn.h"
#include "slot.h"
#include "topology.h"

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
void
cr__aio_sub_confirmed(cr__aio *io, cr__asub *s, cr_status rc)
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
                cr__aio_sub_confirmed(io, e.sub, cr__fail(
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
            cr__aio_sub_confirmed(io, s, CR_OK);
            /* Waiters look again: they may have missed a message. */
            s->tally.tokens = s->refs;
            wake_token_holders(io, s);
        }
        if (!s->sent)
            s->confirmed = false;
    }
}

/* What the links call here (aio_internal.h). */
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
aio_kept(void *ctx, void *sub, cr__kept *out)
{
    cr__asub *s = sub;

    (void)ctx;
    *out = s != NULL ? s->tally.kept : (cr__kept){.len = 0};
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
    aio_waiters, aio_confirmed, aio_quiet_since, aio_heard, aio_kept,
    aio_fence, aio_unsubscribe,
};
