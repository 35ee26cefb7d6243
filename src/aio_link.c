/* SPDX-License-Identifier: MIT */
/*
 * The links of the event loop's connections (aio.h): commands sent,
 * pipelined and answered, NOSCRIPT, MOVED/ASK, TRYAGAIN/CLUSTERDOWN,
 * replica WAIT, and the subscriber links' upkeep. A subscriber link
 * reaches the subscriptions on it (aio_sub.c, above the links) only
 * through the handle's cr__asub_ops.
 *
 * A link is one connection, command or subscriber, to one server. It is
 * opened when first needed: its name resolved (on the resolver thread
 * unless numeric), the address's breaker asked for a slot, then
 * cr__conn_start/cr__conn_step as the descriptor becomes ready. Commands
 * given to a link before it is up wait as RESP bytes and go out first
 * when it is. Every command waits for its reply in a ring, in order;
 * the oldest one's deadline is the link's timer. A link that fails, by
 * I/O, a deadline or a master that moved, hands every command it holds
 * CR_EIO (telling which had been written out) and is opened again on
 * the next need; a subscriber link comes back by itself while anyone is
 * subscribed, resubscribes, and wakes every sleeper to look again, as a
 * message may have been missed.
 *
 * In a cluster a command goes to the master of its slot by the client's
 * slot map (route.c's). MOVED sends it to the node named, and that node
 * goes into the map for the slot (the map is read again by the next
 * blocking command); ASK sends it there behind an ASKING, the map kept.
 * TRYAGAIN (a script whose keys a migration has split) and CLUSTERDOWN (a
 * failover) mean nothing ran: the command waits on a timer of the loop,
 * 5 ms at first and twice as long each time up to 100 ms, and goes to the
 * same link again (behind an ASKING if it went so) while its deadline
 * allows, then ends CR_EIO with the server's answer; CLUSTERDOWN also
 * marks the map for reading again. A command waiting so is its link's: it
 * ends with the link (CR_EIO, not written out) and with the handle
 * (CR_ECLOSED).
 */
#include "config.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "aio_internal.h"
#include "cluster.h"
#include "conn.h"
#include "slot.h"
#include "topology.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define PING_AFTER_MS 5000
#define REPLICAS_RECOUNT_MS 1000
#define MAX_REDIRECTS 5

/* ---------------------------------------------------------------- links */

/* Tells the loop what the link's descriptor is watched for now. */
static void
set_watch(cr__alink *l, int fd, int events)
{
    if (l->fd == fd && l->watched == events)
        return;
    if (l->fd >= 0 && l->fd != fd && l->watched != 0)
        l->io->loop.watch(l->io->loop.data, l->fd, 0);
    l->fd = fd;
    l->watched = events;
    if (fd >= 0)
        l->io->loop.watch(l->io->loop.data, fd, events);
}

/* The newest entry of the ring (to fill), growing it; NULL: no memory. */
cr__apend *
cr__aio_push(cr__alink *l)
{
    cr__apend *e;

    if (l->len == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16, i;
        cr__apend *q = malloc(cap * sizeof(*q));

        if (q == NULL)
            return NULL;
        for (i = 0; i < l->len; i++)
            q[i] = l->q[(l->head + i) % l->cap];
        free(l->q);
        l->q = q;
        l->cap = cap;
        l->head = 0;
    }
    e = &l->q[(l->head + l->len++) % l->cap];
    memset(e, 0, sizeof(*e));
    return e;
}

/* The oldest entry, taken out (by value). */
cr__apend
cr__aio_pop(cr__alink *l)
{
    cr__apend e = l->q[l->head];

    l->head = (l->head + 1) % l->cap;
    l->len--;
    if (l->unsent > l->len)
        l->unsent = l->len;
    return e;
}

/* Re-arms the link's timer: the oldest command's deadline, a reconnection,
 * or a PING after silence on a subscriber link. */
static void link_tick(void *arg);

void
cr__aio_link_schedule(cr__alink *l)
{
    cr__aio *io = l->io;
    int64_t at = -1, now = cr__now_ms();

    if (l->len > 0)
        at = l->q[l->head].deadline;
    if (l->state == CR__LINK_DOWN && l->sub && l->retry_at > 0)
        at = at < 0 || l->retry_at < at ? l->retry_at : at;
    if (l->state == CR__LINK_UP && l->sub && l->ping_sent == 0) {
        int64_t ping = l->last_rx + PING_AFTER_MS;

        at = at < 0 || ping < at ? ping : at;
    }
    if (at < 0)
        cr__aio_cancel_timer(io, &l->timer);
    else
        cr__aio_after(io, &l->timer, at > now ? at - now : 0, link_tick, l);
}

/* Queues RESP bytes on the link: on the connection when up, else to go
 * first when it is. */
cr_status
cr__aio_link_put(cr__alink *l, const char *data, size_t len, bool *unsent)
{
    *unsent = l->state != CR__LINK_UP;
    if (l->state == CR__LINK_UP)
        return cr__conn_append_raw(l->conn, data, len);
    if (!cr__buf_reserve(&l->queued, len))
        return cr__fail(CR_ENOMEM, "out of memory");
    memcpy(l->queued.data + l->queued.len, data, len);
    l->queued.len += len;
    return CR_OK;
}

/* Writes what the connection holds and watches for what it needs. */
void
cr__aio_link_flush(cr__alink *l)
{
    bool pending = false;
    int events = 0;
    cr_status rc;

    if (l->state != CR__LINK_UP)
        return;
    if ((rc = cr__conn_send(l->conn, &pending, &events)) != CR_OK) {
        cr__aio_link_fail(l, rc, NULL);
        return;
    }
    set_watch(l, cr__conn_fd(l->conn),
              CR_WATCH_READ | (pending ? CR_WATCH_WRITE : 0));
}

/* Has what was queued on the link written: when the current dispatch ends,
 * so that the commands of one turn of the loop go in one write, or, outside
 * a dispatch, when the loop next finds the descriptor writable. */
void
cr__aio_link_kick(cr__alink *l)
{
    cr__aio *io = l->io;

    if (l->state != CR__LINK_UP)
        return;
    if (io->dispatching == 0) {
        set_watch(l, l->fd, CR_WATCH_READ | CR_WATCH_WRITE);
    } else if (!l->dirty) {
        l->dirty = true;
        l->dirty_next = io->dirty;
        io->dirty = l;
    }
}

static void link_open(cr__alink *l);

static void
link_open_now(void *arg)
{
    link_open(arg);
}

/* Opens the link from the loop's next turn: a link that cannot open
 * (its breaker, a refused connect) fails its commands from there, never
 * inside the call that gave it one, whose request would be answered
 * before it was even started. */
void
cr__aio_link_open_soon(cr__alink *l)
{
    if (l->state == CR__LINK_DOWN && l->opener.index == 0)
        cr__aio_after(l->io, &l->opener, 0, link_open_now, l);
}

/* Opens the link: resolve, breaker, connect. */
static void
link_open(cr__alink *l)
{
    cr__aio *io = l->io;
    const cr__conn_config *cfg = &io->client->conn_cfg;
    char addr[300];
    int64_t retry = 0;
    cr_status rc;

    if (l->state != CR__LINK_DOWN)
        return;
    if (io->client->topology != NULL)
        cr__topology_master(io->client->topology, l->host, sizeof(l->host),
                            &l->port, &l->gen);
    if (l->host[0] != '\0') {
        snprintf(addr, sizeof(addr), strchr(l->host, ':') != NULL ? "[%s]:%d"
                                                                  : "%s:%d",
                 l->host, l->port);
        if (l->ai == NULL && (rc = cr__aio_resolve(l)) != CR_OK) {
            if (rc != CR_BUSY)
                cr__aio_link_fail(l, rc, NULL);
            return;
        }
        if (l->resolved != CR_OK) {
            cr__aio_link_fail(l, l->resolved, NULL);
            return;
        }
    } else {
        snprintf(addr, sizeof(addr), "%s", io->client->url.path);
    }
    if ((rc = cr__breaker_try(cfg->breakers, addr, &retry)) == CR_BUSY) {
        /* No attempt slot yet: tried again when there is one; the queued
         * commands' deadlines still hold (the link's timer). */
        cr__aio_after(io, &l->opener, retry > 0 ? retry : 1, link_open_now, l);
        cr__aio_link_schedule(l);
        return;
    }
    if (rc != CR_OK) {
        cr__aio_link_fail(l, rc, NULL);
        return;
    }
    if (l->host[0] != '\0') {
        rc = cr__conn_start(cfg, l->ai->ai_addr, l->ai->ai_addrlen, l->host,
                            l->port, io->client->topology != NULL
                                         ? CR__PEER_MASTER : CR__PEER_DATA,
                            &l->conn);
    } else {
        struct sockaddr_un sa;

        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", io->client->url.path);
        rc = cr__conn_start(cfg, (struct sockaddr *)&sa, sizeof(sa), NULL, 0,
                            CR__PEER_DATA, &l->conn);
    }
    if (rc != CR_OK) {
        cr__aio_link_fail(l, rc, NULL);
        return;
    }
    l->state = CR__LINK_CONNECTING;
    cr__aio_link_drive(l, CR_WATCH_WRITE);
}

static void
link_up(cr__alink *l)
{
    cr__aio *io = l->io;
    cr__asub *s, *tmp;
    cr_status rc = CR_OK;

    l->state = CR__LINK_UP;
    l->backoff = 0;
    l->retry_at = 0;
    l->last_rx = cr__now_ms();
    l->ping_sent = 0;
    if (l->queued.len > 0)
        rc = cr__conn_append_raw(l->conn, l->queued.data, l->queued.len);
    l->queued.len = l->queued.off = 0;
    l->unsent = 0;
    if (rc == CR_OK && l->sub)
        HASH_ITER(hh, io->subs, s, tmp)
            if (s->link == l && s->refs > 0 && !s->sent)
                if ((rc = io->subops->send(l, s, true)) != CR_OK)
                    break;
    if (rc != CR_OK) {
        cr__aio_link_fail(l, rc, NULL);
        return;
    }
    cr__aio_link_flush(l);
    cr__aio_link_schedule(l);
}

/* Ends the held reply of a script whose WAIT answered. */
static void
deliver(cr__apend *e, cr_status rc, cr__reply *r, cr__cmd *cmd)
{
    if (e->fn != NULL)
        e->fn(e->ctx, rc, r, cmd);
    else
        cr__reply_free(r);
    free(e->bytes);
}

/* The link broke (or the master moved, or a deadline passed): every
 * command it holds ends with CR_EIO, and a subscriber link comes back
 * after a backoff when anyone is subscribed. */
void
cr__aio_link_fail(cr__alink *l, cr_status rc, const char *why)
{
    cr__aio *io = l->io;
    size_t n = l->len, unsent = l->unsent, i;
    cr__aretry *retrying;
    char keep[400];

    if (why != NULL)
        rc = cr__fail(rc, "%s: %s", l->host[0] ? l->host : "redis", why);
    snprintf(keep, sizeof(keep), "%s", cr_last_error());
    cr__aio_forget_jobs(io, l);
    set_watch(l, -1, 0);
    cr__aio_cancel_timer(io, &l->more);
    cr__conn_free(l->conn);
    l->conn = NULL;
    if (l->ai != NULL)
        freeaddrinfo(l->ai);
    l->ai = NULL;
    l->state = CR__LINK_DOWN;
    l->queued.len = l->queued.off = 0;
    l->unsent = 0;
    l->ping_sent = 0;
    for (i = 0; i < n; i++) {
        cr__apend e = cr__aio_pop(l);
        cr__cmd cmd = {.flags = e.flags, .sent = i < n - unsent, .sync = CR_OK};

        if (e.held != NULL)
            cr__reply_free(e.held);
        e.held = NULL;
        cr__fail(rc == CR_OK ? CR_EIO : rc, "%s", keep);
        deliver(&e, rc == CR_OK || rc == CR_ECONFIG ? CR_EIO : rc, NULL,
                &cmd);
    }
    /* Those waiting to be sent again end too (nothing of theirs ran). */
    retrying = l->retrying;
    l->retrying = NULL;
    while (retrying != NULL) {
        cr__aretry *t = retrying;
        cr__apend e = t->e;
        cr__cmd cmd = {.flags = e.flags, .sent = false, .sync = CR_OK};

        retrying = t->next;
        cr__aio_cancel_timer(io, &t->timer);
        free(t);
        cr__fail(rc == CR_OK ? CR_EIO : rc, "%s", keep);
        deliver(&e, rc == CR_OK || rc == CR_ECONFIG ? CR_EIO : rc, NULL,
                &cmd);
    }
    if (l->sub) {
        cr__asub *x, *tmp;
        bool wanted = false;

        HASH_ITER(hh, io->subs, x, tmp) {
            if (x->link != l)
                continue;
            x->confirmed = false;
            x->sent = false;
            x->inflight = 0;
            x->resets++;
            wanted |= x->refs > 0;
        }
        l->backoff = l->backoff == 0 ? BACKOFF_MIN_MS
                     : l->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : l->backoff * 2;
        l->retry_at = wanted && !io->closing ? cr__now_ms() + l->backoff : 0;
        /* Waiters look again: a message may have been lost. */
        HASH_ITER(hh, io->subs, x, tmp)
            if (x->link == l) {
                x->tally.tokens = x->refs;
                io->subops->wake(io, x);
            }
    }
    cr__aio_link_schedule(l);
}

/* Sends what a link needs once it is up or every so often: a PING after
 * silence, a reconnection. */
static void
link_tick(void *arg)
{
    cr__alink *l = arg;
    int64_t now = cr__now_ms();

    if (l->len > 0 && l->q[l->head].deadline <= now) {
        cr__aio_link_fail(l, CR_EIO, "no reply in time");
        return;
    }
    if (l->state == CR__LINK_DOWN && l->sub && l->retry_at > 0 &&
        l->retry_at <= now) {
        l->retry_at = 0;
        link_open(l);
        return;
    }
    if (l->state == CR__LINK_UP && l->sub && l->ping_sent == 0 &&
        now >= l->last_rx + PING_AFTER_MS) {
        static const char ping[] = "*1\r\n$4\r\nPING\r\n";
        cr__apend *e = cr__aio_push(l);
        bool unsent;

        if (e != NULL) {
            e->kind = CR__PEND_PING;
            e->deadline = now + l->io->client->command_timeout_ms;
            if (cr__aio_link_put(l, ping, sizeof(ping) - 1, &unsent) == CR_OK) {
                l->ping_sent = now;
                l->io->pings++;
                cr__aio_link_flush(l);
            }
        }
    }
    cr__aio_link_schedule(l);
}

/* Sends the script of `e` again as EVAL (after NOSCRIPT), with its WAIT. */
static cr_status
resend_eval(cr__alink *l, cr__apend *e)
{
    cr__buf b = {0};
    char head[64], nk[24];
    size_t nklen;
    int n;
    bool unsent;
    cr__apend *f;
    cr_status rc = CR_ENOMEM;

    /* The key count is the element before the arguments: re-read it from
     * the EVALSHA form (its digits end at the tail). */
    {
        const char *p = e->bytes + e->tail - 2, *start;

        while (p > e->bytes && p[-1] != '\n')
            p--;
        start = p;
        nklen = (size_t)(e->bytes + e->tail - 2 - start);
        if (nklen >= sizeof(nk))
            return CR_ESCRIPT;
        memcpy(nk, start, nklen);
        nk[nklen] = '\0';
    }
    n = snprintf(head, sizeof(head), "*%d\r\n$4\r\nEVAL\r\n$%zu\r\n", e->argc,
                 e->script->len);
    if (cr__buf_reserve(&b, (size_t)n + e->script->len + 2 + 32 + nklen +
                                e->len - e->tail)) {
        memcpy(b.data, head, (size_t)n);
        b.len = (size_t)n;
        memcpy(b.data + b.len, e->script->body, e->script->len);
        b.len += e->script->len;
        b.len += (size_t)sprintf(b.data + b.len, "\r\n$%zu\r\n%s\r\n", nklen,
                                 nk);
        memcpy(b.data + b.len, e->bytes + e->tail, e->len - e->tail);
        b.len += e->len - e->tail;
        if ((f = cr__aio_push(l)) != NULL) {
            *f = *e;
            f->eval = true;
            f->bytes = b.data; /* the EVAL form, to send again if need be */
            f->len = b.len;
            f->tail = 0;
            if ((rc = cr__aio_link_put(l, b.data, b.len, &unsent)) != CR_OK) {
                l->len--;
            } else {
                b.data = NULL;
                if (unsent)
                    l->unsent++;
            }
        }
    }
    cr__buf_free(&b);
    return rc;
}

/* The WAIT that follows a SYNC script: queued after it. */
static cr_status
queue_wait(cr__alink *l, int64_t deadline)
{
    cr__aio *io = l->io;
    char replicas[24], timeout[24];
    const char *argv[3] = {"WAIT", replicas, timeout};
    cr__buf b = {0};
    cr__apend *e;
    bool unsent;
    cr_status rc = CR_ENOMEM;

    cr__fmt_i64(replicas, l->replicas);
    cr__fmt_i64(timeout, io->client->conn_cfg.sync_timeout_ms);
    if (cr__resp_append(&b, 3, argv, NULL) && (e = cr__aio_push(l)) != NULL) {
        e->kind = CR__PEND_WAIT;
        e->deadline = deadline + io->client->conn_cfg.sync_timeout_ms;
        rc = cr__aio_link_put(l, b.data, b.len, &unsent);
        if (unsent)
            l->unsent++;
    }
    cr__buf_free(&b);
    return rc;
}

/* The WAIT behind the oldest command, when there is one. */
static cr__apend *
wait_behind(cr__alink *l)
{
    return l->len > 0 && l->q[l->head].kind == CR__PEND_WAIT ? &l->q[l->head]
                                                             : NULL;
}

/* Queues `e` (its bytes) on `to` again, behind an ASKING when `ask`. True
 * when queued: the ring owns its bytes then. */
static bool
requeue(cr__alink *to, const cr__apend *e, bool ask)
{
    static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
    cr__apend *f;
    bool unsent;

    if (ask) {
        if ((f = cr__aio_push(to)) == NULL)
            return false;
        f->kind = CR__PEND_DROP;
        f->deadline = e->deadline;
        if (cr__aio_link_put(to, asking, sizeof(asking) - 1, &unsent) !=
            CR_OK) {
            to->len--;
            return false;
        }
        if (unsent)
            to->unsent++;
    }
    if ((f = cr__aio_push(to)) == NULL)
        return false;
    *f = *e;
    f->asked = ask;
    if (cr__aio_link_put(to, e->bytes, e->len, &unsent) != CR_OK) {
        to->len--;
        return false;
    }
    if (unsent)
        to->unsent++;
    if (to->state == CR__LINK_DOWN)
        cr__aio_link_open_soon(to);
    else
        cr__aio_link_kick(to);
    cr__aio_link_schedule(to);
    return true;
}

/* Sends `e` to the node another one redirected it to (ASK: behind an
 * ASKING). True when sent. */
static bool
redirect(cr__alink *l, cr__apend *e, bool ask, const char *host, int port)
{
    cr__aio *io = l->io;
    cr__apend moved = *e;
    cr__alink *to;

    for (to = io->links; to != NULL; to = to->next)
        if (!to->sub && strcmp(to->host, host) == 0 && to->port == port)
            break;
    if (to == NULL) {
        if ((to = calloc(1, sizeof(*to))) == NULL)
            return false;
        to->io = io;
        to->fd = -1;
        to->node = -2; /* known by address only */
        snprintf(to->host, sizeof(to->host), "%s", host);
        to->port = port;
        to->next = io->links;
        io->links = to;
    }
    moved.redirects++;
    return requeue(to, &moved, ask);
}

/* A command waiting out TRYAGAIN or CLUSTERDOWN goes to its link again:
 * behind an ASKING when it went so (its slot is being imported there),
 * with the WAIT of a SYNC script. */
static void
retry_now(void *arg)
{
    cr__aretry *t = arg, **p;
    cr__alink *l = t->link;
    cr__aio *io = l->io;
    cr__apend e = t->e;
    cr__cmd cmd = {.flags = e.flags, .sent = false, .sync = CR_OK};
    cr_status rc;

    for (p = &l->retrying; *p != NULL; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    if (cr__now_ms() >= e.deadline) {
        /* The loop came late: its time is up. */
        rc = cr__fail(CR_EIO, "%s: %s", l->host[0] ? l->host : "redis",
                      t->why);
    } else if (requeue(l, &e, e.asked)) {
        if (e.kind == CR__PEND_SCRIPT && (e.flags & CR__CMD_SYNC) &&
            l->replicas > 0 && io->client->conn_cfg.sync_timeout_ms > 0)
            queue_wait(l, e.deadline);
        free(t);
        return;
    } else {
        rc = cr__fail(CR_ENOMEM, "out of memory");
    }
    free(t);
    deliver(&e, rc, NULL, &cmd);
}

/* Waits out TRYAGAIN or CLUSTERDOWN (the server's answer `why`) for `e`,
 * as the blocking router does: a pause of CR__CLUSTER_RETRY_MIN_MS first,
 * each next one twice the last up to CR__CLUSTER_RETRY_MAX_MS, then sent
 * to `l` again. False when the pause would end past its deadline (or no
 * memory): it ends now. */
static bool
retry_later(cr__alink *l, const cr__apend *e, const char *why)
{
    int64_t pause = e->backoff == 0 ? CR__CLUSTER_RETRY_MIN_MS
                    : e->backoff * 2 > CR__CLUSTER_RETRY_MAX_MS
                        ? CR__CLUSTER_RETRY_MAX_MS
                        : e->backoff * 2;
    cr__aretry *t;

    if (cr__now_ms() + pause > e->deadline ||
        (t = calloc(1, sizeof(*t))) == NULL)
        return false;
    cr__aio_after(l->io, &t->timer, pause, retry_now, t);
    if (t->timer.index == 0) { /* no room in the heap */
        free(t);
        return false;
    }
    t->link = l;
    t->e = *e;
    t->e.backoff = pause;
    snprintf(t->why, sizeof(t->why), "%s", why);
    t->next = l->retrying;
    l->retrying = t;
    return true;
}

/* Handles the reply to the oldest command of a command link. */
static void
handle_reply(cr__alink *l, cr__reply *r)
{
    cr__aio *io = l->io;
    cr__apend e = cr__aio_pop(l), *w;
    cr__cmd cmd = {.flags = e.flags, .sent = true, .sync = CR_OK};
    cr_status rc = CR_OK;
    bool ask = false, down;
    unsigned slot;
    char host[256];
    int port;

    switch (e.kind) {
    case CR__PEND_ROLE:
        /* A ROLE that cannot count (refused: logged) leaves no replicas to
         * wait for; the next need asks again. */
        if (cr__replicas_of(r, l->host, &io->client->log, &l->replicas) !=
            CR_OK)
            l->replicas = 0;
        l->replicas_at = cr__now_ms();
        cr__reply_free(r);
        return;
    case CR__PEND_DROP:
    case CR__PEND_PING:
        cr__reply_free(r);
        return;
    case CR__PEND_WAIT:
        /* It holds the reply of the script before it (else nobody waits
         * for it). */
        if (e.held != NULL) {
            cmd.sync = cr__replica_sync_of(r, l->host, &io->client->log);
            deliver(&e, CR_OK, e.held, &cmd);
        }
        cr__reply_free(r);
        return;
    default:
        break;
    }
    w = wait_behind(l);
    if (r->type != CR__REPLY_ERROR) {
        if (w != NULL && e.kind == CR__PEND_SCRIPT) {
            /* Held until the WAIT behind it answers. */
            w->fn = e.fn;
            w->ctx = e.ctx;
            w->flags = e.flags;
            w->held = r;
            free(e.bytes);
            return;
        }
        deliver(&e, CR_OK, r, &cmd);
        return;
    }
    if (w != NULL)
        w->kind = CR__PEND_DROP;
    if (e.kind == CR__PEND_SCRIPT && !e.eval &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
        CR__STAT_ADD(&io->client->run.stats, noscript_fallbacks, 1);
        cr__reply_free(r);
        if (resend_eval(l, &e) != CR_OK) {
            deliver(&e, cr__fail(CR_ENOMEM, "out of memory"), NULL, &cmd);
            return;
        }
        if ((e.flags & CR__CMD_SYNC) && l->replicas > 0 &&
            io->client->conn_cfg.sync_timeout_ms > 0)
            queue_wait(l, e.deadline);
        free(e.bytes);
        cr__aio_link_kick(l);
        return;
    }
    if (io->cluster && e.bytes != NULL && e.redirects < MAX_REDIRECTS &&
        cr__parse_redirect(r->str, &ask, &slot, host, sizeof(host), &port)) {
        cr__reply_free(r);
        CR__STAT_ADD(&io->client->run.stats, redirects, 1);
        cr__event(&io->client->run.stats, CR_EVENT_REDIRECT, CR_OK, NULL,
                  NULL, -1, -1, true);
        if (!ask) /* the slot moved: the client's map learns it */
            cr__transport_moved(io->client->run.transport, slot, host, port);
        if (redirect(l, &e, ask, host, port))
            return;
        deliver(&e, cr__fail(CR_EIO, "a redirection could not be sent"),
                NULL, &cmd);
        return;
    }
    if (io->cluster && e.bytes != NULL &&
        cr__cluster_transient(r->str, &down)) {
        /* Nothing ran: sent again after a pause, until its deadline. */
        if (down)
            cr__transport_refresh_due(io->client->run.transport);
        if (retry_later(l, &e, r->str)) {
            cr__reply_free(r);
            return;
        }
        cmd.sent = false;
        rc = cr__fail(CR_EIO, "%s: %s", l->host[0] ? l->host : "redis",
                      r->str);
        cr__reply_free(r);
        deliver(&e, rc, NULL, &cmd);
        return;
    }
    if (strncmp(r->str, "READONLY", 8) == 0) {
        /* The master is a replica now: nothing ran. */
        cmd.sent = false;
        if (io->client->topology != NULL)
            cr__topology_hint(io->client->topology);
        rc = cr__fail(CR_EIO, "%s: %s", l->host, r->str);
        cr__reply_free(r);
        deliver(&e, rc, NULL, &cmd);
        cr__aio_link_fail(l, CR_EIO, "it became a replica");
        return;
    }
    rc = cr__fail(cr__reply_status(r->str), "%s", r->str);
    if (rc == CR_EIO)
        cmd.sent = false; /* LOADING, MASTERDOWN: nothing ran */
    cr__reply_free(r);
    deliver(&e, rc, NULL, &cmd);
}

static void
link_more(void *arg)
{
    cr__aio_link_drive(arg, CR_WATCH_READ);
}

/* Reads the replies that have come, as many as the dispatch's budget
 * allows. */
static void
link_read(cr__alink *l)
{
    for (;;) {
        cr__reply *r = NULL;
        cr_status rc;

        if (!cr__aio_spend(l->io)) {
            cr__aio_after(l->io, &l->more, 0, link_more, l);
            return;
        }
        rc = cr__conn_poll_reply(l->conn, &r);

        if (rc != CR_OK) {
            cr__aio_link_fail(l, rc, NULL);
            return;
        }
        if (r == NULL)
            return;
        l->last_rx = cr__now_ms();
        if (l->sub) {
            l->io->subops->reply(l, r);
            cr__reply_free(r);
        } else if (l->len > 0) {
            handle_reply(l, r);
        } else {
            cr__reply_free(r);
        }
        if (l->state != CR__LINK_UP)
            return;
    }
}

void
cr__aio_link_drive(cr__alink *l, int events)
{
    int want = 0;
    cr_status rc;

    switch (l->state) {
    case CR__LINK_RESOLVING:
        l->state = CR__LINK_DOWN;
        link_open(l);
        return;
    case CR__LINK_CONNECTING:
        rc = cr__conn_step(l->conn, &want);
        if (rc == CR_BUSY) {
            set_watch(l, cr__conn_fd(l->conn),
                      want == CR__WANT_WRITE ? CR_WATCH_WRITE : CR_WATCH_READ);
            return;
        }
        if (rc != CR_OK) {
            cr__aio_link_fail(l, rc, NULL);
            return;
        }
        link_up(l);
        return;
    case CR__LINK_UP:
        if (events & CR_WATCH_READ)
            link_read(l);
        if (l->state == CR__LINK_UP)
            cr__aio_link_flush(l);
        if (l->state == CR__LINK_UP)
            cr__aio_link_schedule(l);
        return;
    default:
        return;
    }
}

/* The command link for `slot` (-1: any), made when new. */
static cr__alink *
cmd_link(cr__aio *io, int64_t slot)
{
    char host[256] = "";
    int port = 0, node = -1;
    cr__alink *l;

    if (io->cluster) {
        node = cr__transport_node_addr(io->client->run.transport, slot, host,
                                       sizeof(host), &port);
        if (node < 0)
            return NULL;
    } else if (io->client->topology == NULL) {
        if (!io->client->url.is_unix) {
            snprintf(host, sizeof(host), "%s", io->client->url.host);
            port = io->client->url.port;
        }
    }
    for (l = io->links; l != NULL; l = l->next)
        if (!l->sub && (io->cluster ? (l->node == node ||
                                       (strcmp(l->host, host) == 0 &&
                                        l->port == port))
                                    : true))
            break;
    if (l == NULL) {
        if ((l = calloc(1, sizeof(*l))) == NULL)
            return NULL;
        l->io = io;
        l->fd = -1;
        l->node = node;
        snprintf(l->host, sizeof(l->host), "%s", host);
        l->port = port;
        l->next = io->links;
        io->links = l;
    }
    /* Sentinel: a link to a master that has since moved goes. */
    if (io->client->topology != NULL && l->state != CR__LINK_DOWN &&
        cr__topology_generation(io->client->topology) != l->gen)
        cr__aio_link_fail(l, CR_EIO, "the master moved");
    return l;
}

/* Queues one command (RESP in b) of `kind` on `l`. */
static cr_status
enqueue(cr__alink *l, int kind, cr__buf *b, size_t tail,
        const cr__script *script, int argc, unsigned flags, cr__areply_fn fn,
        void *ctx)
{
    cr__aio *io = l->io;
    int64_t deadline = cr__now_ms() + io->client->command_timeout_ms;
    bool sync = (flags & CR__CMD_SYNC) && io->client->conn_cfg.sync_timeout_ms > 0;
    bool unsent;
    cr__apend *e;
    cr_status rc;

    if (sync && (l->replicas_at == 0 ||
                 cr__now_ms() - l->replicas_at > REPLICAS_RECOUNT_MS)) {
        static const char role[] = "*1\r\n$4\r\nROLE\r\n";

        if ((e = cr__aio_push(l)) == NULL)
            return CR_ENOMEM;
        e->kind = CR__PEND_ROLE;
        e->deadline = deadline;
        if ((rc = cr__aio_link_put(l, role, sizeof(role) - 1, &unsent)) !=
            CR_OK) {
            l->len--;
            return rc;
        }
        if (unsent)
            l->unsent++;
        l->replicas_at = cr__now_ms(); /* counted before the next need */
        l->replicas = 1;                /* until ROLE says otherwise */
    }
    if ((e = cr__aio_push(l)) == NULL)
        return CR_ENOMEM;
    e->kind = kind;
    e->fn = fn;
    e->ctx = ctx;
    e->deadline = deadline;
    e->flags = flags;
    e->bytes = b->data;
    e->len = b->len;
    e->tail = tail;
    e->script = script;
    e->argc = argc;
    if ((rc = cr__aio_link_put(l, b->data, b->len, &unsent)) != CR_OK) {
        l->len--;
        return rc;
    }
    b->data = NULL; /* the entry owns the bytes now */
    if (unsent)
        l->unsent++;
    if (sync && l->replicas > 0 && queue_wait(l, deadline) != CR_OK)
        return CR_ENOMEM;
    if (l->state == CR__LINK_DOWN)
        cr__aio_link_open_soon(l);
    else
        cr__aio_link_kick(l);
    if (l->state != CR__LINK_DOWN || l->len > 0)
        cr__aio_link_schedule(l);
    return CR_OK;
}

/* Where the argument after the first n of a RESP command begins. */
static size_t
resp_skip(const char *p, int n)
{
    const char *q = strchr(p, '\n') + 1; /* "*<argc>\r\n" */

    while (n-- > 0) {
        size_t len = (size_t)strtoull(q + 1, NULL, 10); /* "$<len>\r\n" */

        q = strchr(q, '\n') + 1 + len + 2;
    }
    return (size_t)(q - p);
}

cr_status
cr__aio_script(cr__aio *io, const cr__script_call *call, unsigned flags,
               cr__areply_fn fn, void *ctx)
{
    cr__script_call c = *call;
    const char *argv_small[24];
    size_t lens_small[24];
    char nk[24];
    cr__buf b = {0};
    cr__alink *l;
    cr_status rc;

    if (io->closing)
        return cr__fail(CR_ECLOSED, "the asynchronous handle is being freed");
    /* A copy of the argument vectors, whose first three slots are ours. */
    c.argv = argv_small;
    c.lens = lens_small;
    if (call->argc > 24) {
        c.argv = malloc(call->argc * sizeof(*c.argv));
        c.lens = malloc(call->argc * sizeof(*c.lens));
        if (c.argv == NULL || c.lens == NULL) {
            if (c.argv != argv_small)
                free((void *)c.argv);
            if (c.lens != lens_small)
                free(c.lens);
            return CR_ENOMEM;
        }
    }
    memcpy(c.argv, call->argv, call->argc * sizeof(*c.argv));
    memcpy(c.lens, call->lens, call->argc * sizeof(*c.lens));
    cr__script_call_argv(&c, false, nk);
    rc = CR_ENOMEM;
    if (cr__resp_append(&b, (int)c.argc, c.argv, c.lens)) {
        l = cmd_link(io, c.nkeys > 0
                             ? (int64_t)cr__key_slot(c.argv[3], c.lens[3])
                             : -1);
        rc = l == NULL ? cr__fail(CR_EIO, "no cluster node is known for the "
                                  "slot")
                       : enqueue(l, CR__PEND_SCRIPT, &b, resp_skip(b.data, 3),
                                 c.script, (int)c.argc, flags, fn, ctx);
    }
    if (c.argv != argv_small) {
        free((void *)c.argv);
        free(c.lens);
    }
    cr__buf_free(&b);
    return rc;
}

cr_status
cr__aio_command(cr__aio *io, int argc, const char **argv, const size_t *lens,
                cr__areply_fn fn, void *ctx)
{
    cr__buf b = {0};
    cr__alink *l;
    cr_status rc;

    if (io->closing)
        return cr__fail(CR_ECLOSED, "the asynchronous handle is being freed");
    if (!cr__resp_append(&b, argc, argv, lens))
        return CR_ENOMEM;
    l = cmd_link(io, argc > 1 ? (int64_t)cr__key_slot(argv[1],
                                                      lens != NULL ? lens[1]
                                                                   : strlen(argv[1]))
                              : -1);
    rc = l == NULL ? cr__fail(CR_EIO, "no cluster node is known for the slot")
                   : enqueue(l, CR__PEND_CMD, &b, 0, NULL, argc, 0, fn, ctx);
    cr__buf_free(&b);
    return rc;
}
