/* SPDX-License-Identifier: MIT */
/*
 * The subscriber links of the blocking pub/sub and its dispatcher thread
 * (pubsub_link.h): connecting and reconnecting with backoff, following a
 * Sentinel failover or a cluster's slot map, the PINGs that find a silent
 * link and make fences, the commands a link waits for an answer to, and
 * handing a link's socket between the threads that read it.
 *
 * Owns: the links (connections, their unanswered commands, readers and
 * sleepers), the mutex `mu`, the wake-up pipe and the dispatcher thread.
 * It knows nothing of channels or waiters: the table above (pubsub.c)
 * sends through it and hears from it through its callbacks (cr__link_ops).
 * May call: conn.c (connections, replies), route.c (the slot map),
 * topology.c (the master), common.c; never pubsub.c but through the
 * callbacks.
 *
 * The connection is used under `mu` only. Callers change the table of
 * subscriptions, mark the entry dirty and write a byte to a pipe; the
 * dispatcher thread, blocked in poll() on the sockets and that pipe, sends
 * the SUBSCRIBE/UNSUBSCRIBE commands the table now asks for. Replies come
 * back in order, so the link keeps the commands it waits for an answer to.
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

#include "pubsub_link.h"
#include "topology.h"

#define PING_AFTER_MS 5000
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

/* A thread sleeping while another reads the link (see "Reading" above). */
typedef struct sleeper {
    pthread_cond_t *cv;
    struct sleeper *next;
} sleeper;

/* A command sent on a link and not yet answered. */
typedef struct asked {
    int what;     /* CR__ASK_* */
    uint64_t sub; /* the entry's id for CR__ASK_SUB and CR__ASK_UNSUB */
} asked;

/* One subscriber connection, used under mu only. */
struct cr__link {
    cr__conn *ctx;
    /* The reading waiter: whether one polls reader_ctx (the ctx when it
     * took the link), the sleepers it hands over to (in arrival order), an
     * eventfd that wakes it (-1 until first needed), a dropped ctx left
     * for it to free, and whether the dispatcher's current poll includes
     * the socket. */
    bool reader;
    bool min_bytes; /* the reader polls with SO_RCVLOWAT raised */
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
    /* Fences (cr__link_fence): PINGs sent and PONGs read over the link's
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
};

/* ------------------------------------------------------------- helpers */

bool
cr__link_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
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

void
cr__links_poke(cr__links *ls)
{
    char b = 1;
    ssize_t n = write(ls->pipe_fd[1], &b, 1);

    (void)n; /* a full pipe already guarantees a wake-up */
}

/* Wakes the reader of link `l` from its poll. */
static void
kick(cr__link *l)
{
    uint64_t one = 1;
    ssize_t n = l->kick >= 0 ? write(l->kick, &one, sizeof(one)) : 0;

    (void)n; /* an eventfd write only fails when the counter is full */
}

void
cr__links_kick_readers(cr__links *ls)
{
    int i;

    for (i = 0; i < ls->nlinks; i++)
        if (ls->links[i].reader)
            kick(&ls->links[i]);
}

int
cr__links_count(const cr__links *ls)
{
    return ls->nlinks;
}

/* ----------------------------------------------------- commands on links */

/* Remembers that link `l` waits for the answer to a command; false when
 * out of memory. */
static bool
expect(cr__link *l, int what, uint64_t sub)
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
answered(cr__link *l, int what, uint64_t sub)
{
    if (l->nasked == 0 || l->asked[0].what != what ||
        (sub != 0 && l->asked[0].sub != sub))
        return false;
    memmove(l->asked, l->asked + 1, --l->nasked * sizeof(*l->asked));
    return true;
}

bool
cr__link_answered(cr__links *ls, int i, int ask, uint64_t sub)
{
    return answered(&ls->links[i], ask, sub);
}

uint64_t
cr__link_take_oldest(cr__links *ls, int i)
{
    cr__link *l = &ls->links[i];
    uint64_t id;

    if (l->nasked == 0)
        return 0;
    id = l->asked[0].sub;
    answered(l, l->asked[0].what, 0);
    return id;
}

bool
cr__link_up(const cr__links *ls, int i)
{
    return ls->links[i].ctx != NULL;
}

bool
cr__link_send(cr__links *ls, int i, int ask, uint64_t sub, int argc,
              const char **argv)
{
    cr__link *l = &ls->links[i];

    return expect(l, ask, sub) &&
           cr__conn_append(l->ctx, argc, argv, NULL) == CR_OK;
}

/* Writes out what a link has queued; false when the link failed. A
 * reader that polls for several messages at once is kicked, as the reply
 * is for someone else. mu held: the write is bounded by the command
 * timeout. */
static bool
flush_link(cr__links *ls, cr__link *l)
{
    if (l->min_bytes)
        kick(l);
    return cr__conn_flush(l->ctx, cr__now_ms() + ls->cfg.command_timeout_ms) ==
           CR_OK;
}

bool
cr__link_flush(cr__links *ls, int i)
{
    return flush_link(ls, &ls->links[i]);
}

int
cr__link_for_node(cr__links *ls, int node, const char *host, int port)
{
    int i, kick;

    for (i = 0; i < ls->nlinks; i++)
        if (ls->links[i].node == node)
            return i;
    if (ls->nlinks < CR__MAX_LINKS) {
        i = ls->nlinks++;
    } else {
        for (i = 0; i < ls->nlinks && (ls->ops->wanted(ls->arg, i) ||
                                       ls->links[i].reader ||
                                       ls->links[i].dead != NULL); i++)
            ;
        if (i == ls->nlinks)
            return -1;
        cr__conn_free(ls->links[i].ctx);
        free(ls->links[i].asked);
    }
    kick = ls->links[i].kick;
    memset(&ls->links[i], 0, sizeof(ls->links[i]));
    ls->links[i].kick = kick;
    ls->links[i].node = node;
    snprintf(ls->links[i].host, sizeof(ls->links[i].host), "%s", host);
    ls->links[i].port = port;
    ls->links[i].backoff = BACKOFF_MIN_MS;
    return i;
}

/* Sends a PING on connected link `l`; false when the link failed. Any
 * PING is a fence for the waiters that asked for one before it. mu held. */
static bool
ping_link(cr__links *ls, cr__link *l)
{
    const char *argv[1] = {"PING"};

    if (!expect(l, CR__ASK_PING, 0) ||
        cr__conn_append(l->ctx, 1, argv, NULL) != CR_OK ||
        !flush_link(ls, l))
        return false;
    l->pings++;
    if (l->ping_sent_ms == 0)
        l->ping_sent_ms = cr__now_ms();
    return true;
}

uint64_t
cr__link_fence(cr__links *ls, int i)
{
    cr__link *l = &ls->links[i];
    uint64_t pongs = l->pings + 1;

    if (l->ctx == NULL || !ping_link(ls, l)) {
        l->fence_wanted = true; /* the dispatcher finds out why */
        cr__links_poke(ls);
    }
    return pongs;
}

uint64_t
cr__link_pongs(const cr__links *ls, int i)
{
    return ls->links[i].pongs;
}

/* ------------------------------------------------------------ replies */

/* A PONG (or a PING's refusal) on link `l`: the link is alive. */
static void
ponged(cr__link *l)
{
    answered(l, CR__ASK_PING, 0);
    l->ping_sent_ms = 0;
    l->pongs++;
}

/* Handles one reply on link `i`; mu held. Returns false when the link must
 * be dropped. PONGs are the link's; the rest goes to the table. */
static bool
handle_reply(cr__links *ls, int i, const cr__reply *r, const void *self)
{
    cr__link *l = &ls->links[i];

    l->last_rx_ms = cr__now_ms();
    if (r->type == CR__REPLY_ERROR) {
        if (l->nasked > 0 && l->asked[0].what == CR__ASK_PING) {
            /* A user without PING: the answer still shows the link
             * alive. */
            ponged(l);
            if (!l->ping_refused)
                cr__log(ls->cfg.log, CR_LOG_WARN, "pub/sub PING refused "
                        "(%s); its error answer keeps the link checked",
                        r->str);
            l->ping_refused = true;
            return true;
        }
        if (l->nasked == 0) {
            cr__log(ls->cfg.log, CR_LOG_WARN, "subscriber link: %s", r->str);
            return !ls->cluster;
        }
        return ls->ops->reply(ls->arg, i, r, self);
    }
    if (r->type == CR__REPLY_STATUS && strcasecmp(r->str, "pong") == 0) {
        /* A link subscribed to nothing answers PING as any connection. */
        ponged(l);
        return true;
    }
    if (r->type != CR__REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != CR__REPLY_STRING)
        return true;
    if (strcasecmp(r->element[0]->str, "pong") == 0) {
        ponged(l);
        return true;
    }
    return ls->ops->reply(ls->arg, i, r, self);
}

/* Closes link `i` after a failure (`why`): every channel on it is
 * subscribed again and its waiters retry. mu held. */
static void
drop_link(cr__links *ls, int i, const char *why)
{
    cr__link *l = &ls->links[i];

    if (l->ctx != NULL) {
        cr__log(ls->cfg.log, CR_LOG_WARN, "pub/sub connection lost: %s", why);
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
    if (ls->cluster)
        ls->need_refresh = true;
    ls->ops->dropped(ls->arg, i);
}

/* Reads everything link `i` has and handles each complete reply (`self`:
 * as for cr__link_ops' reply); mu held. Returns false when the link
 * failed. */
static bool
read_replies(cr__links *ls, int i, const void *self)
{
    cr__link *l = &ls->links[i];

    for (;;) {
        cr__reply *r = NULL;
        bool ok;

        if (cr__conn_poll_reply(l->ctx, &r) != CR_OK)
            return false;
        if (r == NULL)
            return true;
        ok = handle_reply(ls, i, r, self);
        cr__reply_free(r);
        if (!ok)
            return false;
    }
}

/* ------------------------------------------------ reading by waiters */

/* The calling thread reads link `i` until input comes, the reader is
 * kicked or the deadline (ms; -1: none) passes, handling what it reads;
 * mu held, released while polling. `self`: the calling thread as a
 * waiter for wake tokens (NULL: it waits for something else), which finds a
 * token of its own without a wake-up; `min_bytes`: how many bytes must have
 * come before poll() returns (SO_RCVLOWAT, set for this poll only; see
 * reader_min_bytes). Returns false once the deadline passed. */
static bool
read_link(cr__links *ls, int i, const void *self, int min_bytes,
          int64_t deadline)
{
    cr__link *l = &ls->links[i];
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
        cr__links_poke(ls); /* take the socket out of the dispatcher's poll */
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
    l->min_bytes = min_bytes > 1 && setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT,
                                       &min_bytes, sizeof(min_bytes)) == 0;
    pthread_mutex_unlock(&ls->mu);
    n = poll(pfd, 2, (int)timeout);
    pthread_mutex_lock(&ls->mu);
    if (l->min_bytes) {
        int one = 1;

        /* Before anyone else polls the socket. */
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
        l->min_bytes = false;
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
        if (!read_replies(ls, i, self))
            drop_link(ls, i, cr_last_error());
        if (ls->ops->pending(ls->arg) || ls->need_refresh)
            cr__links_poke(ls); /* what was read asks for the upkeep */
    }
    return deadline < 0 || cr__now_ms() < deadline;
}

/* How many bytes link `l`'s reader, asked for `min_bytes` by the table, may
 * let the kernel gather before poll() wakes it: 1 (any input) unless it
 * alone waits on the link, with no PING out and nothing half read. mu
 * held. */
static int
reader_min_bytes(const cr__link *l, int min_bytes)
{
    if (min_bytes < 2 || l->sleepers != NULL || l->ping_sent_ms != 0 ||
        l->fence_wanted || cr__conn_unread(l->ctx) > 0)
        return 1;
    return min_bytes;
}

bool
cr__link_await(cr__links *ls, int i, pthread_cond_t *cv, const void *self,
               int min_bytes, int64_t deadline)
{
    cr__link *l = i >= 0 ? &ls->links[i] : NULL;
    sleeper me, **p;
    bool ok;

    if (l == NULL || l->ctx == NULL || ls->stop)
        return cr__link_cond_wait(cv, &ls->mu, deadline);
    if (l->kick < 0 &&
        (l->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) /* no fd */
        return cr__link_cond_wait(cv, &ls->mu, deadline); /* dispatcher */
    if (!l->reader)
        return read_link(ls, i, self, reader_min_bytes(l, min_bytes), deadline);
    if (l->min_bytes)
        kick(l); /* the reader would not wake for this sleeper's message */
    me.cv = cv;
    me.next = NULL;
    for (p = &l->sleepers; *p != NULL; p = &(*p)->next)
        ; /* in arrival order: the link goes to the longest sleeper */
    *p = &me;
    ok = cr__link_cond_wait(cv, &ls->mu, deadline);
    for (p = &l->sleepers; *p != &me; p = &(*p)->next)
        ;
    *p = me.next;
    return ok;
}

void
cr__link_hand_over(cr__links *ls, int i)
{
    cr__link *l = i >= 0 ? &ls->links[i] : NULL;

    if (l != NULL && !l->reader && l->sleepers != NULL)
        pthread_cond_signal(l->sleepers->cv);
}

/* ------------------------------------------------- the dispatcher thread */

/* Sends a PING after a silence or when a fence could not be sent at once,
 * and reports a link whose PING went unanswered for longer than the
 * command timeout; mu held. */
static bool
check_liveness(cr__links *ls, cr__link *l)
{
    int64_t now = cr__now_ms();

    if (l->fence_wanted ||
        (l->ping_sent_ms == 0 && now - l->last_rx_ms >= PING_AFTER_MS)) {
        l->fence_wanted = false;
        if (!ping_link(ls, l))
            return false;
    }
    return l->ping_sent_ms == 0 ||
           now - l->ping_sent_ms <= ls->cfg.command_timeout_ms;
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
connect_link(cr__links *ls, int i)
{
    cr__link *l = &ls->links[i];
    const cr__url *u = ls->cfg.url;
    cr__conn *c = NULL;
    char host[256];
    int port = l->port;
    unsigned gen = 0;
    cr__peer peer = CR__PEER_DATA;
    cr_status rc = CR_EIO;

    snprintf(host, sizeof(host), "%s", l->host);
    pthread_mutex_unlock(&ls->mu);
    if (ls->cluster && !ls->sharded &&
        cr__transport_node_addr(ls->transport, -1, host, sizeof(host),
                                &port) < 0) {
        host[0] = '\0';
    } else if (ls->cfg.topology != NULL) {
        cr__topology_master(ls->cfg.topology, host, sizeof(host), &port, &gen);
        peer = CR__PEER_MASTER;
    } else if (!ls->cluster && !u->is_unix) {
        snprintf(host, sizeof(host), "%s", u->host);
        port = u->port;
    }
    if (!ls->cluster || host[0] != '\0')
        rc = cr__conn_open(&ls->cfg, u->is_unix && !ls->cluster ? NULL : host,
                           port, peer, cr__now_ms() + ls->cfg.command_timeout_ms,
                           -1, &c);
    pthread_mutex_lock(&ls->mu);
    if (c == NULL) {
        char why[512] = "";
        cr_status final = CR_OK;

        if (cr__status_is_final(rc)) {
            /* No retry mends it: the waits on this link end with it. */
            snprintf(why, sizeof(why), "%s", cr_last_error());
            final = rc;
        } else if (rc == CR_EIO && ls->cfg.topology != NULL) {
            cr__topology_hint(ls->cfg.topology);
        }
        if (ls->cluster)
            ls->need_refresh = true;
        /* Sharded: the node may be gone; the table places its channels
         * again. */
        ls->ops->failed(ls->arg, i, final, why);
        l->retry_at = cr__now_ms() + l->backoff;
        l->backoff = l->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                     : l->backoff * 2;
        return;
    }
    ls->ops->opened(ls->arg, i);
    l->ctx = c;
    l->gen = gen;
    l->last_rx_ms = cr__now_ms();
    l->backoff = BACKOFF_MIN_MS;
    if (l->connected_once) {
        CR__STAT_ADD(ls->cfg.stats, reconnects, 1);
        cr__event(ls->cfg.stats, CR_EVENT_RECONNECT, CR_OK, NULL, NULL, -1,
                  -1, false);
    }
    l->connected_once = true;
}

/* One round of the dispatcher's upkeep (mu held, released for I/O): read
 * a new slot map when asked, let the table place channels, open the links
 * that have channels, follow a Sentinel failover, send what the table
 * asks for and check that quiet links are alive. Fills pfd (the pipe
 * first, then one entry per open link, their numbers in which[]) and
 * returns how long poll may wait. */
static int
upkeep(cr__links *ls, struct pollfd *pfd, int *which, int *nfds)
{
    int64_t now, due, wait_ms = -1;
    bool entries = false;
    int i, bad;

    if (ls->need_refresh) {
        ls->need_refresh = false;
        pthread_mutex_unlock(&ls->mu);
        cr__transport_refresh(ls->transport);
        pthread_mutex_lock(&ls->mu);
    }
    ls->ops->upkeep(ls->arg);
    now = cr__now_ms();
    for (i = 0; i < ls->nlinks; i++) {
        cr__link *l = &ls->links[i];

        if (l->ctx == NULL && l->retry_at <= now &&
            ls->ops->wanted(ls->arg, i))
            connect_link(ls, i);
        /* After the master moved, follow it. */
        if (l->ctx != NULL &&
            l->gen != cr__topology_generation(ls->cfg.topology))
            drop_link(ls, i, "the master moved");
        if (l->ctx != NULL && !check_liveness(ls, l))
            drop_link(ls, i, "no answer to PING");
    }
    while (!ls->ops->send(ls->arg, &bad))
        drop_link(ls, bad, cr_last_error());
    pfd[0].fd = ls->pipe_fd[0];
    pfd[0].events = POLLIN;
    *nfds = 1;
    now = cr__now_ms();
    for (i = 0; i < ls->nlinks; i++) {
        cr__link *l = &ls->links[i];

        if (l->ctx != NULL && !l->reader) {
            pfd[*nfds].fd = cr__conn_fd(l->ctx);
            pfd[*nfds].events = POLLIN;
            which[(*nfds)++] = i;
            l->polled = true;
            /* Bytes read already (TLS) do not wake poll(): read them now. */
            wait_ms = cr__conn_buffered(l->ctx) ? 0 : 1000;
        } else if (l->ctx != NULL) {
            wait_ms = 1000; /* a waiter reads it; keep checking liveness */
        } else if (ls->ops->wanted(ls->arg, i)) {
            int64_t w = l->retry_at > now ? l->retry_at - now : 0;

            if (wait_ms < 0 || w < wait_ms)
                wait_ms = w;
        }
    }
    due = ls->ops->due(ls->arg, &entries);
    if (ls->need_refresh || (ls->sharded && wait_ms < 0 && entries))
        wait_ms = BACKOFF_MIN_MS; /* channels still to place */
    if (due != 0 && (wait_ms < 0 || due - now < wait_ms))
        wait_ms = due > now ? due - now : 0;
    return (int)wait_ms;
}

/* The dispatcher: upkeep, wait for a socket or a poke, handle replies;
 * until told to stop. */
static void *
dispatcher(void *arg)
{
    cr__links *ls = arg;

    pthread_mutex_lock(&ls->mu);
    while (!ls->stop) {
        struct pollfd pfd[CR__MAX_LINKS + 1];
        int which[CR__MAX_LINKS + 1];
        int i, nfds, timeout = upkeep(ls, pfd, which, &nfds);

        ls->round_due = timeout < 0 ? -1 : cr__now_ms() + timeout;
        pthread_mutex_unlock(&ls->mu);
        poll(pfd, (nfds_t)nfds, timeout);
        pthread_mutex_lock(&ls->mu);
        if (pfd[0].revents & POLLIN)
            drain_pipe(ls->pipe_fd[0]);
        for (i = 1; i < nfds; i++)
            ls->links[which[i]].polled = false;
        for (i = 1; i < nfds; i++) {
            cr__link *l = &ls->links[which[i]];

            if (l->ctx != NULL && cr__conn_fd(l->ctx) == pfd[i].fd &&
                !l->reader &&
                ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) ||
                 cr__conn_buffered(l->ctx)) &&
                still_readable(l->ctx) && !read_replies(ls, which[i], NULL))
                drop_link(ls, which[i], cr_last_error());
        }
    }
    pthread_mutex_unlock(&ls->mu);
    return NULL;
}

/* ----------------------------------------------------------- life cycle */

cr_status
cr__links_start(cr__links *ls, const cr__conn_config *cfg, cr__transport *t,
                bool sharded, const cr__link_ops *ops, void *arg)
{
    int i;

    ls->cfg = *cfg;
    ls->transport = t;
    ls->cluster = cfg->url->is_cluster;
    ls->sharded = ls->cluster && sharded;
    ls->ops = ops;
    ls->arg = arg;
    ls->links = calloc(CR__MAX_LINKS, sizeof(*ls->links));
    if (ls->links == NULL)
        return CR_ENOMEM;
    for (i = 0; i < CR__MAX_LINKS; i++)
        ls->links[i].kick = -1;
    ls->round_due = -1;
    if (!ls->sharded) {
        /* One link for every channel. */
        ls->nlinks = 1;
        ls->links[0].node = -1;
        ls->links[0].backoff = BACKOFF_MIN_MS;
    }
    if (pipe2(ls->pipe_fd, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(ls->links);
        return cr__fail(CR_EIO, "pipe: %s", strerror(errno));
    }
    pthread_mutex_init(&ls->mu, NULL);
    if (pthread_create(&ls->thread, NULL, dispatcher, ls) != 0) {
        close(ls->pipe_fd[0]);
        close(ls->pipe_fd[1]);
        pthread_mutex_destroy(&ls->mu);
        free(ls->links);
        return cr__fail(CR_ENOMEM, "cannot start the pub/sub thread");
    }
    return CR_OK;
}

void
cr__links_stop(cr__links *ls)
{
    pthread_mutex_lock(&ls->mu);
    ls->stop = true;
    pthread_mutex_unlock(&ls->mu);
    cr__links_poke(ls);
    pthread_join(ls->thread, NULL);
}

void
cr__links_free(cr__links *ls)
{
    int i;

    for (i = 0; i < CR__MAX_LINKS; i++) {
        cr__conn_free(ls->links[i].ctx);
        cr__conn_free(ls->links[i].dead);
        free(ls->links[i].asked);
        if (ls->links[i].kick >= 0)
            close(ls->links[i].kick);
    }
    free(ls->links);
    close(ls->pipe_fd[0]);
    close(ls->pipe_fd[1]);
    pthread_mutex_destroy(&ls->mu);
}
