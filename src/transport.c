/* SPDX-License-Identifier: MIT */
/*
 * Pools of command connections (conn.h), one per server; which server a
 * command goes to is route.c's. A caller takes a free connection, sends
 * one command, reads its reply and gives the connection back, so no
 * connection is ever used by two threads at once.
 *
 * A connection that fails (I/O error, timeout, end of stream) is closed at
 * once, and the pool's epoch is bumped: the other idle connections were
 * likely cut by the same event (a server restart), so each is reopened
 * before its next use instead of failing one more caller. With Sentinel a
 * connection also carries the topology's generation: one opened before the
 * master moved is never used again, and a reply read on it is not trusted.
 *
 * Every wait ends by the command's deadline: min(now + command timeout,
 * the caller's call deadline); a resend happens only before it.
 *
 * The reserved connection keeps a reply that did not come by the deadline
 * when its command asks (cr__cmd's `late`): the connection is not closed
 * then (a stalled server times out without breaking anything), nor for
 * the failure of another connection. Before its next command it is read
 * for that reply; when that has not come, it is parked (read for it, never
 * written again, closed when a newer one is parked or when what it owes
 * can no longer help) and the command goes on a fresh connection. A
 * parked connection whose reply came serves as the reserved one again if
 * there is none.
 *
 * Lock order: the pool mutex is never held while talking to Redis; the
 * reserved connection's mutex is held for a whole command on it (and the
 * parked one's upkeep), and while a kept reply's late_fn runs.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "topology.h"
#include "transport.h"

/* How often a connection with the replica-sync check counts replicas. */
#define REPLICAS_RECOUNT_MS 1000

/* A reply kept for (cr__cmd's `late`), which its connection owes. */
typedef struct owed {
    uint64_t id;   /* cr__cmd's `late`; 0: none owed */
    unsigned skip; /* replies to drop before it (ASKING's) */
    int64_t sent;  /* when its command was written */
    cr__late_fn *fn;
    void *arg;
} owed;

typedef struct conn {
    cr__conn *ctx;
    unsigned discard; /* sent replies nobody waits for, to drop first */
    uint64_t epoch;   /* pool epoch when ctx was opened */
    unsigned gen;     /* topology generation when ctx was opened */
    long long replicas; /* replicas of the server (sync on) */
    int64_t replicas_at; /* when they were last counted */
    bool opened;      /* has been open before: the next open is a reconnect */
    struct conn *next_free;
    owed owed;        /* the reserved and parked connections' */
} conn;

/* The connections to one server: the URL's, or one cluster master. */
struct cr__pool {
    const cr__conn_config *cfg;
    char host[256]; /* cluster node; empty: the URL's server */
    int port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn *conns;
    int nconns;
    conn *free_list;
    conn reserved;
    conn parked;      /* a reserved connection given up on while it owed
                       * a reply: still read for it, never written */
    pthread_mutex_t reserved_mu; /* the reserved and parked connections */
    atomic_uint_fast64_t epoch;
};

/* ------------------------------------------------------------------- pool */

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

cr__pool *
cr__pool_new(const cr__conn_config *cfg, int size, const char *host, int port)
{
    cr__pool *p = calloc(1, sizeof(*p));
    int i;

    if (p == NULL)
        return NULL;
    p->conns = calloc((size_t)size, sizeof(*p->conns));
    if (p->conns == NULL) {
        free(p);
        return NULL;
    }
    p->cfg = cfg;
    if (host != NULL)
        snprintf(p->host, sizeof(p->host), "%s", host);
    p->port = port;
    p->nconns = size;
    pthread_mutex_init(&p->mu, NULL);
    cond_init_monotonic(&p->cv);
    pthread_mutex_init(&p->reserved_mu, NULL);
    atomic_init(&p->epoch, 1);
    for (i = size - 1; i >= 0; i--) {
        p->conns[i].next_free = p->free_list;
        p->free_list = &p->conns[i];
    }
    return p;
}

void
cr__pool_free(cr__pool *p)
{
    int i;

    if (p == NULL)
        return;
    for (i = 0; i < p->nconns; i++)
        cr__conn_free(p->conns[i].ctx);
    cr__conn_free(p->reserved.ctx);
    cr__conn_free(p->parked.ctx);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->reserved_mu);
    free(p->conns);
    free(p);
}

/* Takes a connection for the calling thread: the reserved one, or the next
 * free one of the pool, waiting until `deadline` for one to come back when
 * all are busy. NULL (with the reason recorded) when none came in time. */
static conn *
take_conn(cr__pool *p, unsigned flags, int64_t deadline)
{
    struct timespec ts;
    conn *c;

    if (flags & CR__CMD_RESERVED) {
        pthread_mutex_lock(&p->reserved_mu);
        return &p->reserved;
    }
    ts.tv_sec = deadline / 1000;
    ts.tv_nsec = (deadline % 1000) * 1000000;
    pthread_mutex_lock(&p->mu);
    while (p->free_list == NULL)
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT &&
            p->free_list == NULL) {
            pthread_mutex_unlock(&p->mu);
            cr__fail(CR_EIO, "no free connection in time (all %d busy)",
                     p->nconns);
            return NULL;
        }
    c = p->free_list;
    p->free_list = c->next_free;
    pthread_mutex_unlock(&p->mu);
    return c;
}

/* Gives back a connection taken by take_conn. */
static void
give_conn(cr__pool *p, conn *c)
{
    if (c == &p->reserved) {
        pthread_mutex_unlock(&p->reserved_mu);
        return;
    }
    pthread_mutex_lock(&p->mu);
    c->next_free = p->free_list;
    p->free_list = c;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Closes the connection of `c`; a reply it owed is forgotten. */
static void
close_conn(conn *c)
{
    cr__conn_free(c->ctx);
    c->ctx = NULL;
    c->discard = 0;
    c->owed.id = 0;
}

/* Closes a connection that failed and tells the pool that the others may be
 * broken too. */
static void
drop_conn(cr__pool *p, conn *c)
{
    close_conn(c);
    atomic_fetch_add(&p->epoch, 1);
}

/* Reads the reply `c` owes (cr__cmd's `late`) if it has come, without
 * waiting, and passes it on to its late_fn. CR_OK when it was passed on
 * or has not come; the failure of the link otherwise. A reply read on a
 * connection opened before the master moved is not passed on: the
 * connection is closed, what it owed forgotten (CR_EIO). */
static cr_status
settle(cr__pool *p, conn *c)
{
    while (c->owed.id != 0) {
        cr__reply *r = NULL;
        cr_status rc = cr__conn_poll_reply(c->ctx, &r);
        uint64_t id = c->owed.id;

        if (rc != CR_OK)
            return rc;
        if (r == NULL)
            return CR_OK;
        if (c->gen != cr__topology_generation(p->cfg->topology)) {
            cr__reply_free(r);
            close_conn(c);
            return cr__fail(CR_EIO, "a reply owed by a connection to the old "
                            "master is not used");
        }
        if (c->owed.skip > 0) {
            c->owed.skip--;
            cr__reply_free(r);
            continue;
        }
        c->owed.id = 0;
        c->owed.fn(c->owed.arg, id, r);
    }
    return CR_OK;
}

/* After `cmd` timed out on the reserved connection `c` (written at `sent`
 * behind `skip` replies still to drop), the link unbroken: keeps for its
 * reply when cmd->late asks. Returns whether it does. */
static bool
owe(conn *c, cr__cmd *cmd, unsigned skip, int64_t sent)
{
    if (cmd->late == 0 || cmd->late_fn == NULL || c->owed.id != 0)
        return false;
    c->owed.id = cmd->late;
    c->owed.skip = skip;
    c->owed.sent = sent;
    c->owed.fn = cmd->late_fn;
    c->owed.arg = cmd->late_arg;
    cmd->kept = true;
    return true;
}

/* Before a command on the reserved connection: takes the reply it owes if
 * that has come. If not, the connection is parked (the one parked before
 * is closed: its reply is older), still read for its reply but never
 * written again, and the command goes on a fresh connection: the server
 * or the link behind the old one may be gone where a new one gets
 * through, and a command written behind a reply that never comes would
 * never be answered either. */
static void
reserved_ready(cr__pool *p)
{
    conn *c = &p->reserved;

    if (c->owed.id == 0)
        return;
    if (settle(p, c) != CR_OK) {
        if (c->ctx != NULL)
            drop_conn(p, c);
        return;
    }
    if (c->owed.id == 0)
        return;
    close_conn(&p->parked);
    p->parked.ctx = c->ctx;
    p->parked.epoch = c->epoch;
    p->parked.gen = c->gen;
    p->parked.owed = c->owed;
    c->ctx = NULL;
    c->owed.id = 0;
}

/* Makes sure `c` has a live, current connection, opening one before
 * `deadline` when needed (waiting for a connection attempt slot until
 * `slot_deadline` at the most, -1: the deadline): to the pool's cluster
 * node, to the master the topology knows, or to the URL's server. */
static cr_status
ready_conn(cr__pool *p, conn *c, int64_t deadline, int64_t slot_deadline)
{
    uint64_t epoch = atomic_load(&p->epoch);
    cr__topology *topo = p->cfg->topology;
    const cr__url *u = p->cfg->url;
    char host[256];
    int port = p->port;
    unsigned gen = 0;
    cr__peer peer = CR__PEER_DATA;
    cr_status rc;

    /* The reserved connection is not closed for another's failure: a
     * stall times every connection out, and a new one could not be set
     * up before it ends, where a renewal written on the old one is run as
     * it ends (a broken one fails at once, and the renewal is sent again
     * on a fresh one). */
    if (c->ctx != NULL &&
        ((c->epoch != epoch && c != &p->reserved) ||
         c->gen != cr__topology_generation(topo)))
        close_conn(c);
    if (c->ctx != NULL)
        return CR_OK;
    if (p->host[0] != '\0') {
        snprintf(host, sizeof(host), "%s", p->host);
    } else if (topo != NULL) {
        cr__topology_master(topo, host, sizeof(host), &port, &gen);
        peer = CR__PEER_MASTER;
    } else if (!u->is_unix) {
        snprintf(host, sizeof(host), "%s", u->host);
        port = u->port;
    }
    rc = cr__conn_open(p->cfg, u->is_unix && p->host[0] == '\0' ? NULL : host,
                       port, peer, deadline, slot_deadline, &c->ctx);
    if (rc != CR_OK) {
        if (topo != NULL && rc == CR_EIO)
            cr__topology_hint(topo); /* the master may have moved */
        return rc;
    }
    c->epoch = epoch;
    c->gen = gen;
    c->replicas_at = 0;
    if (c->opened) {
        CR__STAT_ADD(p->cfg->stats, reconnects, 1);
        cr__event(p->cfg->stats, CR_EVENT_RECONNECT, CR_OK, NULL, NULL, -1,
                  -1, false);
    }
    c->opened = true;
    return CR_OK;
}

void
cr__pool_close_stale(cr__pool *p)
{
    unsigned gen = cr__topology_generation(p->cfg->topology);
    conn *c;

    pthread_mutex_lock(&p->mu);
    for (c = p->free_list; c != NULL; c = c->next_free)
        if (c->ctx != NULL && c->gen != gen)
            close_conn(c);
    pthread_mutex_unlock(&p->mu);
    /* The reserved and parked connections too, unless a renewal is under
     * way on the reserved one: its answer from the old master is not used
     * and its connection goes with it, or it is kept for and the next
     * upkeep closes it. */
    if (pthread_mutex_trylock(&p->reserved_mu) == 0) {
        if (p->reserved.ctx != NULL && p->reserved.gen != gen)
            close_conn(&p->reserved);
        if (p->parked.ctx != NULL && p->parked.gen != gen)
            close_conn(&p->parked);
        pthread_mutex_unlock(&p->reserved_mu);
    }
}

/* Reads and drops *n replies nobody waits for (counting *n down): DELs
 * of unlock (and acquire) latches, whose replies come before that of
 * anything sent after them (so a new command is written first and these
 * are read while it travels), and ASKING's. */
static cr_status
drop_replies(conn *c, unsigned *n, int64_t deadline)
{
    for (; *n > 0; (*n)--) {
        cr__reply *r = NULL;
        cr_status rc = cr__conn_recv(c->ctx, deadline, &r);

        if (rc != CR_OK)
            return rc;
        cr__reply_free(r);
    }
    return CR_OK;
}

/* Counts the replicas of the server behind `c` with ROLE, before a
 * command that is to be followed by WAIT. A refused ROLE is reported, not
 * read as "no replicas": the check would silently be off. So is a reply
 * that is no role at all: the replies on the link are out of step. */
static cr_status
count_replicas(cr__pool *p, conn *c, int64_t deadline)
{
    const char *argv[1] = {"ROLE"};
    cr__reply *r = NULL;
    unsigned deferred = c->discard;
    int64_t replicas = 0;
    cr_status rc;

    /* The replies of unlock latch DELs sent before come first: an
     * unlock's DEL read as ROLE's reply counted no replicas, and the
     * acquisition after it went without WAIT. */
    if (cr__conn_append(c->ctx, 1, argv, NULL) != CR_OK)
        return CR_ENOMEM;
    c->discard = 0;
    if ((rc = cr__conn_flush(c->ctx, deadline)) != CR_OK ||
        (rc = drop_replies(c, &deferred, deadline)) != CR_OK ||
        (rc = cr__conn_recv(c->ctx, deadline, &r)) != CR_OK) {
        if (c->ctx != NULL)
            drop_conn(p, c);
        return rc;
    }
    rc = cr__replicas_of(r, cr__conn_peer(c->ctx), p->cfg->log, &replicas);
    if (rc == CR_OK) {
        c->replicas = replicas;
        c->replicas_at = cr__now_ms();
    } else if (rc == CR_EIO) {
        drop_conn(p, c);
    }
    cr__reply_free(r);
    return rc;
}

/* After a command on `c`: WAIT until the replicas acknowledge it; the
 * outcome goes to cmd->sync. Returns CR_EIO when the link broke. */
static cr_status
wait_replicas(cr__pool *p, conn *c, cr__cmd *cmd)
{
    char replicas[24], timeout[24];
    const char *argv[3] = {"WAIT", replicas, timeout};
    cr__reply *r = NULL;
    int64_t deadline = cr__now_ms() + p->cfg->sync_timeout_ms +
                       p->cfg->command_timeout_ms;
    cr_status rc;

    cr__fmt_i64(replicas, c->replicas);
    cr__fmt_i64(timeout, p->cfg->sync_timeout_ms);
    /* WAIT itself may take the sync timeout: read its answer for that
     * long on top of a command's time. */
    rc = cr__conn_call(c->ctx, 3, argv, NULL, deadline, &r);
    if (rc != CR_OK) {
        drop_conn(p, c);
        return rc;
    }
    cmd->sync = cr__replica_sync_of(r, cr__conn_peer(c->ctx), p->cfg->log);
    cr__reply_free(r);
    return CR_OK;
}

/* Whether a reply is READONLY: the server is (now) a replica. */
static bool
is_readonly(const cr__reply *r)
{
    return r->type == CR__REPLY_ERROR && strncmp(r->str, "READONLY", 8) == 0;
}

/* Sends one command on `c` (after ASKING when `asking`) and reads its
 * reply before `deadline`. *not_run is set when the command certainly did
 * not run (the server refused it as a replica, or is loading), *readonly
 * for the former. A reply that the reserved connection does not get by
 * the deadline, the link unbroken, is kept for when cmd->late asks. */
static cr_status
run_on(cr__pool *p, conn *c, cr__cmd *cmd, int argc, const char **argv,
       const size_t *argvlen, cr__reply **out, bool *not_run, bool *readonly,
       bool sync, bool asking, int64_t deadline)
{
    static const char *asking_argv[1] = {"ASKING"};
    cr__topology *topo = p->cfg->topology;
    unsigned deferred;
    int64_t sent;
    cr_status rc = ready_conn(p, c, deadline,
                              cmd->op != NULL ? cmd->op->slot_deadline
                                              : -1);

    if (rc != CR_OK)
        return rc;
    if (sync && cr__now_ms() - c->replicas_at > REPLICAS_RECOUNT_MS &&
        (rc = count_replicas(p, c, deadline)) != CR_OK) {
        *not_run = true;
        return rc;
    }
    CR__STAT_ADD(p->cfg->stats, commands, 1);
    if ((asking && cr__conn_append(c->ctx, 1, asking_argv, NULL) != CR_OK) ||
        cr__conn_append(c->ctx, argc, argv, argvlen) != CR_OK)
        return CR_ENOMEM;
    deferred = c->discard + (asking ? 1 : 0);
    c->discard = 0;
    cmd->sent = true; /* from here on it may run, whatever becomes of the reply */
    sent = cr__now_ms();
    if ((rc = cr__conn_flush(c->ctx, deadline)) != CR_OK) {
        drop_conn(p, c);
        return rc;
    }
    if ((rc = drop_replies(c, &deferred, deadline)) != CR_OK ||
        (rc = cr__conn_recv(c->ctx, deadline, out)) != CR_OK) {
        /* Only timed out, the link unbroken: the server may still run it
         * and answer. */
        if (rc == CR_EIO && c == &p->reserved && c->ctx != NULL &&
            cr__now_ms() >= deadline && owe(c, cmd, deferred, sent)) {
            cr__log(p->cfg->log, CR_LOG_DEBUG, "%s: its reply is kept for",
                    cr_last_error());
            return rc;
        }
        if (c->ctx != NULL)
            drop_conn(p, c);
        return rc;
    }
    if (topo != NULL && c->gen != cr__topology_generation(topo)) {
        /* Read on the old master after a switch: what it says does not
         * hold on the new one. */
        rc = cr__fail(CR_EIO, "%s: the master moved while it ran; the old "
                      "master's answer is not used", argv[0]);
        cr__reply_free(*out);
        *out = NULL;
        drop_conn(p, c);
        return rc;
    }
    if (is_readonly(*out)) {
        /* A failover turned this master into a replica: nothing ran. */
        rc = cr__fail(CR_EIO, "%s on %s: %s", argv[0], cr__conn_peer(c->ctx),
                      (*out)->str);
        cr__reply_free(*out);
        *out = NULL;
        drop_conn(p, c);
        *not_run = *readonly = true;
        return rc;
    }
    if ((*out)->type == CR__REPLY_ERROR &&
        cr__reply_status((*out)->str) == CR_EIO) {
        /* LOADING, MASTERDOWN...: nothing ran, the link is fine, and it
         * will pass: a transient failure that waiting calls retry. */
        rc = cr__fail(CR_EIO, "%s: %s", argv[0], (*out)->str);
        cr__reply_free(*out);
        *out = NULL;
        return rc;
    }
    if (sync && c->replicas > 0 && (*out)->type != CR__REPLY_ERROR &&
        (rc = wait_replicas(p, c, cmd)) != CR_OK) {
        cr__reply_free(*out);
        *out = NULL;
    }
    return rc;
}

/* After READONLY on a plain URL (a name that may now lead to the new
 * primary, or a URL that points at a replica): a fresh connection's ROLE
 * tells which. CR_OK when it is a master now; CR_ECONFIG when a replica. */
static cr_status
check_still_replica(cr__pool *p, conn *c, int64_t deadline)
{
    const char *argv[1] = {"ROLE"};
    cr__reply *r = NULL;
    cr_status rc = ready_conn(p, c, deadline, -1);

    if (rc == CR_OK)
        rc = cr__conn_call(c->ctx, 1, argv, NULL, deadline, &r);
    if (rc != CR_OK) {
        if (c->ctx != NULL)
            drop_conn(p, c);
        return rc;
    }
    if (r->type == CR__REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == CR__REPLY_STRING &&
        strcmp(r->element[0]->str, "master") != 0)
        rc = cr__fail(CR_ECONFIG, "the server at %s is a replica (READONLY): "
                      "point the URL at the master, or use redis-sentinel:// "
                      "to follow it", cr__conn_peer(c->ctx));
    cr__reply_free(r);
    return rc;
}

/* Once more after a broken link when that is safe (`flags` has
 * CR__CMD_RETRY, or the command did not run) and time remains. */
cr_status
cr__pool_command(cr__pool *p, cr__cmd *cmd, int argc, const char **argv,
                 const size_t *argvlen, cr__reply **out, bool asking)
{
    unsigned flags = cmd->flags;
    int64_t deadline = cr__cmd_deadline(cmd, p->cfg->command_timeout_ms);
    conn *c = take_conn(p, flags, deadline);
    bool not_run = false, readonly = false;
    bool sync = (flags & CR__CMD_SYNC) && p->cfg->sync_timeout_ms > 0;
    cr_status rc;

    cmd->sent = false;
    if (c == NULL)
        return CR_EIO;
    if (c == &p->reserved)
        reserved_ready(p);
    cmd->sync = CR_OK;
    rc = run_on(p, c, cmd, argc, argv, argvlen, out, &not_run, &readonly,
                sync, asking, deadline);
    if (readonly && p->cfg->topology != NULL) {
        cr__topology_hint(p->cfg->topology);
    } else if (readonly && p->host[0] == '\0') {
        cr_status role = check_still_replica(p, c, deadline);

        if (role != CR_OK)
            rc = role;
        not_run = role == CR_OK;
    }
    if (rc == CR_EIO && ((flags & CR__CMD_RETRY) || not_run) &&
        !cmd->kept && cr__now_ms() < deadline) {
        cr__log(p->cfg->log, CR_LOG_WARN, "%s failed (%s), retrying once",
                argv[0], cr_last_error());
        rc = run_on(p, c, cmd, argc, argv, argvlen, out, &not_run, &readonly,
                    sync, asking, deadline);
    }
    give_conn(p, c);
    return rc;
}

cr_status
cr__pool_open(cr__pool *p, int64_t deadline)
{
    return ready_conn(p, &p->conns[0], deadline, -1);
}

void
cr__pool_upkeep(cr__pool *p, int64_t stale_before, bool open)
{
    conn *held[2] = {&p->reserved, &p->parked};
    int i;

    pthread_mutex_lock(&p->reserved_mu);
    for (i = 0; i < 2; i++) {
        conn *c = held[i];

        /* Nothing read on a connection to a master that was replaced is
         * used: it goes now rather than at its next use. */
        if (c->ctx != NULL &&
            c->gen != cr__topology_generation(p->cfg->topology))
            close_conn(c);
        if (c->ctx == NULL || c->owed.id == 0)
            continue;
        if (c->owed.sent < stale_before)
            close_conn(c);
        else if (settle(p, c) != CR_OK && c->ctx != NULL)
            drop_conn(p, c);
    }
    if (p->parked.ctx != NULL && p->parked.owed.id == 0) {
        /* It owes nothing now: it serves again, or goes. */
        if (p->reserved.ctx == NULL) {
            p->reserved.ctx = p->parked.ctx;
            p->reserved.epoch = p->parked.epoch;
            p->reserved.gen = p->parked.gen;
            p->reserved.replicas_at = 0;
            p->parked.ctx = NULL;
        } else {
            close_conn(&p->parked);
        }
    }
    if (open && p->reserved.ctx == NULL)
        ready_conn(p, &p->reserved,
                   cr__now_ms() + p->cfg->command_timeout_ms, -1);
    pthread_mutex_unlock(&p->reserved_mu);
}

void
cr__pool_send_noreply(cr__pool *p, const cr__op *op, int argc,
                      const char **argv, const size_t *argvlen)
{
    int64_t deadline = op != NULL ? cr__op_deadline_in(op, p->cfg->command_timeout_ms)
                                  : cr__now_ms() + p->cfg->command_timeout_ms;
    conn *c;

    if ((c = take_conn(p, 0, deadline)) == NULL)
        return;
    if (ready_conn(p, c, deadline,
                   op != NULL ? op->slot_deadline : -1) == CR_OK &&
        cr__conn_append(c->ctx, argc, argv, argvlen) == CR_OK) {
        c->discard++;
        CR__STAT_ADD(p->cfg->stats, commands, 1);
        if (cr__conn_flush(c->ctx, deadline) != CR_OK)
            drop_conn(p, c);
    }
    give_conn(p, c);
}
