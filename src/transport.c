/* SPDX-License-Identifier: MIT */
/*
 * The command transport: a pool of blocking hiredis connections. A caller
 * takes a free connection, sends one command, reads its reply and gives the
 * connection back, so no connection is ever used by two threads at once.
 *
 * A connection that fails (I/O error, timeout, EOF) is closed at once, and
 * the pool's epoch is bumped: the other idle connections were likely cut by
 * the same event (a server restart), so each is reopened before its next
 * use instead of failing one more caller. Opening sends AUTH and SELECT.
 *
 * In a Redis Cluster there is one such pool per master, made on first use,
 * and each command goes to the master of its routing key's slot (the
 * table in cluster.c). MOVED corrects the table and sends the command
 * again; ASK sends it once to the named node after ASKING; TRYAGAIN (a
 * multi-key script on a slot being migrated) and CLUSTERDOWN are retried
 * with a short backoff; a broken link or CLUSTERDOWN re-reads the map.
 *
 * Lock order: the pool mutex is never held while talking to Redis; the
 * refresh mutex may be held while a pool connection is taken.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/sds.h>

#include "cluster.h"
#include "conn.h"
#include "slot.h"
#include "transport.h"

struct cr__sentinel {
    pthread_mutex_t mu;
    char host[256]; /* the master last found */
    int port;
    size_t first;   /* the sentinel that answered last: asked first */
    atomic_uint generation;
};

/* How often a connection with the replica-sync check counts replicas. */
#define REPLICAS_RECOUNT_MS 1000

/* Cluster: the slot map re-read at least this often, and never more often
 * than the second figure. */
#define REFRESH_PERIOD_MS 10000
#define REFRESH_MIN_GAP_MS 100

typedef struct conn {
    redisContext *ctx;
    unsigned discard; /* sent replies nobody waits for, to drop first */
    uint64_t epoch;   /* pool epoch when ctx was opened */
    unsigned sgen;    /* Sentinel generation when ctx was opened */
    long long replicas; /* replicas of the server (sync on) */
    int64_t replicas_at; /* when they were last counted */
    bool opened;      /* has been open before: the next open is a reconnect */
    struct conn *next_free;
} conn;

/* The connections to one server: the URL's, or one cluster master. */
typedef struct pool {
    const cr__conn_config *cfg;
    char host[256]; /* cluster node; empty: the URL's server */
    int port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn *conns;
    int nconns;
    conn *free_list;
    conn reserved;
    pthread_mutex_t reserved_mu;
    atomic_uint_fast64_t epoch;
} pool;

struct cr__transport {
    cr__conn_config cfg;
    int pool_size;
    pool *single;          /* standalone and Sentinel */
    cr__slot_map *map;     /* cluster: NULL otherwise */
    pthread_mutex_t nodes_mu;
    pool *nodes[CR__CLUSTER_MAX_NODES]; /* by node number, made on use */
    pthread_mutex_t refresh_mu;
    _Atomic int64_t refreshed_at;
    atomic_bool refresh_due;
};

/* ---------------------------------------------------------------- replies */

void
cr__reply_free(cr__reply *r)
{
    size_t i;

    if (r == NULL)
        return;
    for (i = 0; i < r->elements; i++)
        cr__reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

/* Copies len bytes of s into r->str with a terminating NUL. */
static bool
copy_str(cr__reply *r, const char *s, size_t len)
{
    r->str = malloc(len + 1);
    if (r->str == NULL)
        return false;
    if (len > 0)
        memcpy(r->str, s, len);
    r->str[len] = '\0';
    r->len = len;
    return true;
}

cr__reply *
cr__reply_convert(const redisReply *r)
{
    cr__reply *out = calloc(1, sizeof(*out));
    size_t i;

    if (out == NULL)
        return NULL;
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        out->type = CR__REPLY_INTEGER;
        out->integer = r->integer;
        return out;
    case REDIS_REPLY_NIL:
        out->type = CR__REPLY_NIL;
        return out;
    case REDIS_REPLY_STATUS:
        out->type = CR__REPLY_STATUS;
        break;
    case REDIS_REPLY_ERROR:
        out->type = CR__REPLY_ERROR;
        break;
    case REDIS_REPLY_ARRAY:
        out->type = CR__REPLY_ARRAY;
        if (r->elements == 0)
            return out;
        out->element = calloc(r->elements, sizeof(*out->element));
        if (out->element == NULL)
            goto oom;
        out->elements = r->elements;
        for (i = 0; i < r->elements; i++) {
            out->element[i] = cr__reply_convert(r->element[i]);
            if (out->element[i] == NULL)
                goto oom;
        }
        return out;
    default:
        /* Bulk strings, and any RESP3 type a newer hiredis may report. */
        out->type = CR__REPLY_STRING;
        break;
    }
    if (!copy_str(out, r->str != NULL ? r->str : "", r->str != NULL ? r->len : 0))
        goto oom;
    return out;
oom:
    cr__reply_free(out);
    return NULL;
}

/* Caps the size of the arrays a reader accepts, so that a hostile or broken
 * server cannot make it allocate gigabytes from one header (*322222222).
 * hiredis 1.x has the setting; 0.14 has none (see doc/safety.md). */
static void
limit_reader(redisReader *rd)
{
#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
    rd->maxelements = 1 << 20;
#else
    (void)rd;
#endif
}

cr_status
cr__reply_from_buffer(const char *buf, size_t len, cr__reply **out)
{
    redisReader *rd = redisReaderCreate();
    void *raw = NULL;
    cr_status rc;

    if (rd == NULL)
        return CR_ENOMEM;
    limit_reader(rd);
    if (redisReaderFeed(rd, buf, len) != REDIS_OK ||
        redisReaderGetReply(rd, &raw) != REDIS_OK) {
        rc = cr__fail(CR_ESCRIPT, "not a RESP reply: %s", rd->errstr);
    } else if (raw == NULL) {
        rc = CR_BUSY;
    } else {
        *out = cr__reply_convert(raw);
        rc = *out != NULL ? CR_OK : CR_ENOMEM;
    }
    if (raw != NULL)
        freeReplyObject(raw);
    redisReaderFree(rd);
    return rc;
}

/* ------------------------------------------------------------- connecting */

int
cr__conn_flush(redisContext *c)
{
    size_t len = sdslen(c->obuf), done = 0;

    while (done < len) {
        ssize_t n = send(c->fd, c->obuf + done, len - done, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;

            c->err = REDIS_ERR_IO;
            snprintf(c->errstr, sizeof(c->errstr), "%s", strerror(err));
            errno = err;
            return REDIS_ERR;
        }
        done += (size_t)n;
    }
    sdsclear(c->obuf);
    return REDIS_OK;
}

redisReply *
cr__conn_call(redisContext *c, int argc, const char **argv)
{
    void *r = NULL;

    if (redisAppendCommandArgv(c, argc, argv, NULL) != REDIS_OK ||
        cr__conn_flush(c) != REDIS_OK || redisGetReply(c, &r) != REDIS_OK)
        return NULL;
    return r;
}

cr_status
cr__conn_io_error(const redisContext *c, const char *what)
{
    if (c != NULL && c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
        return cr__fail(CR_EIO, "%s: timed out", what);
    return cr__fail(CR_EIO, "%s: %s", what,
                    c != NULL && c->errstr[0] ? c->errstr : "connection error");
}

/* Converts milliseconds to a timeval. */
static struct timeval
ms_to_tv(int64_t ms)
{
    struct timeval tv;

    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    return tv;
}

/* Runs a setup command (AUTH, SELECT) on a new connection; CR_ESERVER with
 * the server's text when refused, CR_EIO when the link fails. */
static cr_status
setup_command(redisContext *c, int argc, const char **argv, const char *what)
{
    redisReply *r = cr__conn_call(c, argc, argv);
    cr_status rc = CR_OK;

    if (r == NULL)
        return cr__conn_io_error(c, what);
    if (r->type == REDIS_REPLY_ERROR)
        rc = cr__fail(CR_ESERVER, "%s refused: %s", what, r->str);
    freeReplyObject(r);
    return rc;
}

/* ------------------------------------------------------------ sentinel */

cr_status
cr__sentinel_new(cr__sentinel **out)
{
    cr__sentinel *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return CR_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->generation, 1);
    *out = s;
    return CR_OK;
}

void
cr__sentinel_free(cr__sentinel *s)
{
    if (s == NULL)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

unsigned
cr__sentinel_generation(const cr__sentinel *s)
{
    return s != NULL ? atomic_load(&((cr__sentinel *)s)->generation) : 0;
}

/* Asks one sentinel where the master is; false when it cannot say. */
static bool
ask_sentinel(const cr__conn_config *cfg, const char *host, int port,
             char *master, size_t len, int *master_port)
{
    redisContext *c = redisConnectWithTimeout(host, port,
                                              ms_to_tv(cfg->connect_timeout_ms));
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name",
                           cfg->url->master_name};
    redisReply *r = NULL;
    bool ok = false;

    if (c != NULL && !c->err)
        (void)fcntl(c->fd, F_SETFD, fcntl(c->fd, F_GETFD) | FD_CLOEXEC);
    if (c != NULL && !c->err &&
        redisSetTimeout(c, ms_to_tv(cfg->command_timeout_ms)) == REDIS_OK)
        r = cr__conn_call(c, 3, argv);
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING &&
        r->element[1]->type == REDIS_REPLY_STRING && r->element[0]->len < len) {
        snprintf(master, len, "%s", r->element[0]->str);
        *master_port = atoi(r->element[1]->str);
        ok = *master_port > 0;
    }
    if (r != NULL)
        freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return ok;
}

/* Finds the master through the sentinels, the last one that answered
 * first; records a change of address as a new generation. */
static cr_status
find_master(const cr__conn_config *cfg, char *host, size_t len, int *port)
{
    cr__sentinel *s = cfg->sentinel;
    const cr__url *u = cfg->url;
    size_t i, first;

    pthread_mutex_lock(&s->mu);
    first = s->first;
    pthread_mutex_unlock(&s->mu);
    for (i = 0; i < u->nhosts; i++) {
        size_t k = (first + i) % u->nhosts;

        if (!ask_sentinel(cfg, u->hosts[k], u->ports[k], host,
                          len, port))
            continue;
        pthread_mutex_lock(&s->mu);
        s->first = k;
        if (strcmp(s->host, host) != 0 || s->port != *port) {
            if (s->port != 0)
                cr__log(cfg->log, CR_LOG_WARN, "master %s moved to %s:%d",
                        u->master_name, host, *port);
            snprintf(s->host, sizeof(s->host), "%s", host);
            s->port = *port;
            atomic_fetch_add(&s->generation, 1);
        }
        pthread_mutex_unlock(&s->mu);
        return CR_OK;
    }
    return cr__fail(CR_EIO, "no sentinel knows master %s", u->master_name);
}

/* Tells whether the server behind `c` is a master (ROLE), so that a
 * sentinel's stale answer during a failover is not trusted. */
static const char *role_argv[1] = {"ROLE"};

static bool
is_master(redisContext *c)
{
    redisReply *r = cr__conn_call(c, 1, role_argv);
    bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
              r->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(r->element[0]->str, "master") == 0;

    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

/* Counts the replicas connected to the server behind `c` (ROLE). */
static long long
count_replicas(redisContext *c)
{
    redisReply *r = cr__conn_call(c, 1, role_argv);
    long long n = 0;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
        r->element[2]->type == REDIS_REPLY_ARRAY)
        n = (long long)r->element[2]->elements;
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* ------------------------------------------------------------ opening */

cr_status
cr__conn_open(const cr__conn_config *cfg, const char *node, int node_port,
              redisContext **out)
{
    const cr__url *u = cfg->url;
    struct timeval tv = ms_to_tv(cfg->connect_timeout_ms);
    char host[256];
    int port = u->port;
    redisContext *c;
    cr_status rc;

    *out = NULL;
    if (node != NULL) {
        snprintf(host, sizeof(host), "%s", node);
        port = node_port;
    } else if (u->is_sentinel) {
        rc = find_master(cfg, host, sizeof(host), &port);
        if (rc != CR_OK)
            return rc;
    } else if (!u->is_unix) {
        snprintf(host, sizeof(host), "%s", u->host);
    }
    if (u->is_unix && node == NULL)
        c = redisConnectUnixWithTimeout(u->path, tv);
    else
        c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL)
        return cr__fail(CR_ENOMEM, "cannot allocate a connection");
    if (c->err) {
        rc = cr__fail(CR_EIO, "cannot connect to %s:%d: %s",
                      u->is_unix && node == NULL ? u->path : host, port,
                      c->errstr);
        redisFree(c);
        return rc;
    }
    limit_reader(c->reader);
    /* Not inherited by programs the application runs (hiredis has no flag
     * for it; a fork in another thread just now would still get it). */
    (void)fcntl(c->fd, F_SETFD, fcntl(c->fd, F_GETFD) | FD_CLOEXEC);
    if (redisSetTimeout(c, ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK) {
        redisFree(c);
        return cr__fail(CR_EIO, "cannot set the command timeout");
    }
    if (!u->is_unix || node != NULL)
        redisEnableKeepAlive(c);
    if (u->password != NULL) {
        const char *argv[3] = {"AUTH", u->user, u->password};

        if (u->user != NULL)
            rc = setup_command(c, 3, argv, "AUTH");
        else {
            argv[1] = u->password;
            rc = setup_command(c, 2, argv, "AUTH");
        }
        if (rc != CR_OK) {
            redisFree(c);
            return rc;
        }
    }
    if (u->is_sentinel && !is_master(c)) {
        redisFree(c);
        return cr__fail(CR_EIO, "%s:%d is not (yet) the master of %s", host,
                        port, u->master_name);
    }
    if (u->db != 0) {
        char db[24];
        const char *argv[2] = {"SELECT", db};

        cr__fmt_i64(db, u->db);
        rc = setup_command(c, 2, argv, "SELECT");
        if (rc != CR_OK) {
            redisFree(c);
            return rc;
        }
    }
    *out = c;
    return CR_OK;
}

/* ------------------------------------------------------------------- pool */

/* Makes a pool of `size` connections (none open yet) for the server at
 * host:port, or the URL's server when host is NULL. */
static pool *
pool_new(const cr__conn_config *cfg, int size, const char *host, int port)
{
    pool *p = calloc(1, sizeof(*p));
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
    pthread_cond_init(&p->cv, NULL);
    pthread_mutex_init(&p->reserved_mu, NULL);
    atomic_init(&p->epoch, 1);
    for (i = size - 1; i >= 0; i--) {
        p->conns[i].next_free = p->free_list;
        p->free_list = &p->conns[i];
    }
    return p;
}

static void
pool_free(pool *p)
{
    int i;

    if (p == NULL)
        return;
    for (i = 0; i < p->nconns; i++)
        if (p->conns[i].ctx != NULL)
            redisFree(p->conns[i].ctx);
    if (p->reserved.ctx != NULL)
        redisFree(p->reserved.ctx);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->reserved_mu);
    free(p->conns);
    free(p);
}

/* Takes a connection for the calling thread: the reserved one, or the next
 * free one of the pool (waiting for one to come back when all are busy). */
static conn *
take_conn(pool *p, unsigned flags)
{
    conn *c;

    if (flags & CR__CMD_RESERVED) {
        pthread_mutex_lock(&p->reserved_mu);
        return &p->reserved;
    }
    pthread_mutex_lock(&p->mu);
    while (p->free_list == NULL)
        pthread_cond_wait(&p->cv, &p->mu);
    c = p->free_list;
    p->free_list = c->next_free;
    pthread_mutex_unlock(&p->mu);
    return c;
}

/* Gives back a connection taken by take_conn. */
static void
give_conn(pool *p, conn *c)
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

/* Closes a connection that failed and tells the pool that the others may be
 * broken too. */
static void
drop_conn(pool *p, conn *c)
{
    redisFree(c->ctx);
    c->ctx = NULL;
    c->discard = 0;
    atomic_fetch_add(&p->epoch, 1);
}

/* Makes sure `c` has a live, current connection with no pending replies. */
static cr_status
ready_conn(pool *p, conn *c)
{
    uint64_t epoch = atomic_load(&p->epoch);
    cr_status rc;

    if (c->ctx != NULL &&
        (c->epoch != epoch || c->sgen != cr__sentinel_generation(p->cfg->sentinel))) {
        redisFree(c->ctx);
        c->ctx = NULL;
        c->discard = 0;
    }
    if (c->ctx == NULL) {
        rc = cr__conn_open(p->cfg, p->host[0] ? p->host : NULL, p->port,
                           &c->ctx);
        if (rc != CR_OK)
            return rc;
        c->epoch = epoch;
        c->sgen = cr__sentinel_generation(p->cfg->sentinel);
        c->replicas_at = 0;
        if (c->opened)
            CR__STAT_ADD(p->cfg->stats, reconnects, 1);
        c->opened = true;
    }
    return CR_OK;
}

/* Reads and drops `n` replies nobody waits for: latch DELs, whose replies
 * come before that of anything sent after them (so a new command is
 * written first and these are read while it travels), and ASKING's. */
static cr_status
drop_replies(pool *p, conn *c, unsigned n)
{
    while (n-- > 0) {
        void *r = NULL;

        if (redisGetReply(c->ctx, &r) != REDIS_OK) {
            cr_status rc = cr__conn_io_error(c->ctx, "reading a deferred reply");

            drop_conn(p, c);
            return rc;
        }
        freeReplyObject(r);
    }
    return CR_OK;
}

static _Thread_local bool sync_failed;

bool
cr__transport_sync_failed(void)
{
    return sync_failed;
}

/* After a command on `c`: WAIT until the replicas acknowledge it, and note
 * in sync_failed when none did. Returns CR_EIO when the link broke. */
static cr_status
wait_replicas(pool *p, conn *c)
{
    char replicas[24], timeout[24];
    const char *argv[3] = {"WAIT", replicas, timeout};
    redisReply *r;

    cr__fmt_i64(replicas, c->replicas);
    cr__fmt_i64(timeout, p->cfg->sync_timeout_ms);
    /* WAIT itself may take the sync timeout: read its answer for that long
     * on top of a command's time, then back to the command timeout. */
    if (redisSetTimeout(c->ctx, ms_to_tv(p->cfg->sync_timeout_ms +
                                         p->cfg->command_timeout_ms)) != REDIS_OK ||
        (r = cr__conn_call(c->ctx, 3, argv)) == NULL) {
        cr_status rc = cr__conn_io_error(c->ctx, "WAIT");

        drop_conn(p, c);
        return rc;
    }
    if (redisSetTimeout(c->ctx, ms_to_tv(p->cfg->command_timeout_ms)) != REDIS_OK)
        drop_conn(p, c); /* the next command opens one with the right timeout */
    sync_failed = r->type != REDIS_REPLY_INTEGER || r->integer == 0;
    freeReplyObject(r);
    return CR_OK;
}

/* Sends one command on `c` (after ASKING when `asking`) and reads its
 * reply. *not_run is set when the command certainly did not run (the
 * server refused it as a replica). */
static cr_status
run_on(pool *p, conn *c, int argc, const char **argv, const size_t *argvlen,
       cr__reply **out, bool *not_run, bool sync, bool asking)
{
    static const char *asking_argv[1] = {"ASKING"};
    void *raw = NULL;
    redisReply *r;
    unsigned deferred;
    cr_status rc = ready_conn(p, c);

    if (rc != CR_OK)
        return rc;
    CR__STAT_ADD(p->cfg->stats, commands, 1);
    if ((asking &&
         redisAppendCommandArgv(c->ctx, 1, asking_argv, NULL) != REDIS_OK) ||
        redisAppendCommandArgv(c->ctx, argc, argv, argvlen) != REDIS_OK)
        return cr__fail(CR_ENOMEM, "cannot format %s", argv[0]);
    deferred = c->discard + (asking ? 1 : 0);
    c->discard = 0;
    if (cr__conn_flush(c->ctx) != REDIS_OK) {
        rc = cr__conn_io_error(c->ctx, argv[0]);
        drop_conn(p, c);
        return rc;
    }
    if ((rc = drop_replies(p, c, deferred)) != CR_OK)
        return rc;
    if (redisGetReply(c->ctx, &raw) != REDIS_OK || raw == NULL) {
        rc = cr__conn_io_error(c->ctx, argv[0]);
        drop_conn(p, c);
        return rc;
    }
    r = raw;
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "READONLY", 8) == 0) {
        /* A failover turned this master into a replica: nothing ran. */
        rc = cr__fail(CR_EIO, "%s: %s", argv[0], r->str);
        freeReplyObject(r);
        drop_conn(p, c);
        *not_run = true;
        return rc;
    }
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LOADING", 7) == 0) {
        /* A restarted server still reading its data back: nothing ran,
         * and it will answer soon, so this is a transient failure that
         * waiting calls retry (not a server error). The link is fine. */
        rc = cr__fail(CR_EIO, "%s: %s", argv[0], r->str);
        freeReplyObject(r);
        return rc;
    }
    *out = cr__reply_convert(r);
    freeReplyObject(r);
    if (*out == NULL)
        return CR_ENOMEM;
    if (sync && cr__now_ms() - c->replicas_at > REPLICAS_RECOUNT_MS) {
        /* Replicas come and go: count them again now and then. */
        c->replicas = count_replicas(c->ctx);
        c->replicas_at = cr__now_ms();
    }
    if (sync && c->replicas > 0 && (*out)->type != CR__REPLY_ERROR &&
        (rc = wait_replicas(p, c)) != CR_OK) {
        cr__reply_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Runs one command on pool `p`, once more after a broken link when that is
 * safe (`flags` has CR__CMD_RETRY, or the command did not run). */
static cr_status
pool_command(pool *p, unsigned flags, int argc, const char **argv,
             const size_t *argvlen, cr__reply **out, bool asking)
{
    conn *c = take_conn(p, flags);
    bool not_run = false;
    bool sync = (flags & CR__CMD_SYNC) && p->cfg->sync_timeout_ms > 0;
    cr_status rc;

    sync_failed = false;
    rc = run_on(p, c, argc, argv, argvlen, out, &not_run, sync, asking);
    if (rc == CR_EIO && ((flags & CR__CMD_RETRY) || not_run)) {
        cr__log(p->cfg->log, CR_LOG_WARN, "%s failed (%s), retrying once",
                argv[0], cr_last_error());
        rc = run_on(p, c, argc, argv, argvlen, out, &not_run, sync, asking);
    }
    give_conn(p, c);
    return rc;
}

/* ---------------------------------------------------------------- cluster */

/* The pool of cluster node `n`, made on first use; NULL when out of
 * memory or unknown. */
static pool *
node_pool(cr__transport *t, int n)
{
    char host[256];
    int port;
    pool *p;

    if (n < 0 || n >= CR__CLUSTER_MAX_NODES)
        return NULL;
    pthread_mutex_lock(&t->nodes_mu);
    p = t->nodes[n];
    if (p == NULL && cr__slot_map_addr(t->map, n, host, sizeof(host), &port))
        p = t->nodes[n] = pool_new(&t->cfg, t->pool_size, host, port);
    pthread_mutex_unlock(&t->nodes_mu);
    return p;
}

/* Asks node `n` for the slot map and loads it; CR_OK when loaded. */
static cr_status
refresh_from(cr__transport *t, int n)
{
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    pool *p = node_pool(t, n);
    cr__reply *r = NULL;
    cr_status rc;

    if (p == NULL)
        return CR_ENOMEM;
    rc = pool_command(p, 0, 2, argv, NULL, &r, false);
    if (rc == CR_OK && r->type == CR__REPLY_ERROR)
        rc = cr__fail(CR_ESERVER, "CLUSTER SLOTS: %s", r->str);
    else if (rc == CR_OK)
        rc = cr__slot_map_load(t->map, r, n);
    cr__reply_free(r);
    return rc;
}

/* Reads the slot map again: from the known masters first, then from every
 * other node known (the seeds among them), until one answers. Unless
 * `force`, does nothing when another thread refreshed it just now. */
static cr_status
refresh(cr__transport *t, bool force)
{
    int64_t started = cr__now_ms();
    cr_status rc = CR_EIO;
    int pass, n, count;

    pthread_mutex_lock(&t->refresh_mu);
    if (atomic_load(&t->refreshed_at) >= started - (force ? 0 : REFRESH_MIN_GAP_MS)) {
        pthread_mutex_unlock(&t->refresh_mu);
        return CR_OK;
    }
    atomic_store(&t->refresh_due, false);
    count = cr__slot_map_count(t->map);
    for (pass = 0; pass < 2 && rc != CR_OK; pass++)
        for (n = 0; n < count && rc != CR_OK; n++)
            if (cr__slot_map_is_master(t->map, n) == (pass == 0))
                rc = refresh_from(t, n);
    if (rc == CR_OK) {
        CR__STAT_ADD(t->cfg.stats, topology_refreshes, 1);
        atomic_store(&t->refreshed_at, cr__now_ms());
    } else {
        cr__log(t->cfg.log, CR_LOG_WARN, "no cluster node gave its slot map: %s",
                cr_last_error());
        rc = cr__fail(CR_EIO, "no cluster node gave its slot map");
    }
    pthread_mutex_unlock(&t->refresh_mu);
    return rc;
}

/* Whether an error reply says the cluster cannot serve the command now
 * (nothing ran): TRYAGAIN during a migration, CLUSTERDOWN. */
static bool
is_transient(const cr__reply *r)
{
    return strncmp(r->str, "TRYAGAIN", 8) == 0 ||
           strncmp(r->str, "CLUSTERDOWN", 11) == 0;
}

/* One command in a cluster: routed by its key's slot, following MOVED and
 * ASK, waiting out TRYAGAIN and CLUSTERDOWN for up to the command timeout,
 * and re-reading the map after a broken link. */
static cr_status
cluster_command(cr__transport *t, unsigned flags, int argc, const char **argv,
                const size_t *argvlen, cr__reply **out)
{
    int k = cr__routing_key(argc, argv, argvlen);
    unsigned slot = k < 0 ? 0 : cr__key_slot(argv[k], argvlen != NULL ?
                                             argvlen[k] : strlen(argv[k]));
    int64_t deadline = cr__now_ms() + t->cfg.command_timeout_ms;
    int64_t backoff = 5;
    int redirects = 0, node = -1;
    bool asking = false;
    cr_status rc;

    if (atomic_load(&t->refresh_due) ||
        cr__now_ms() - atomic_load(&t->refreshed_at) > REFRESH_PERIOD_MS)
        refresh(t, false);
    for (;;) {
        char host[256];
        unsigned moved_slot;
        int port;
        bool ask;
        pool *p;

        if (!asking && (node = cr__slot_map_node(t->map, slot)) < 0 &&
            (refresh(t, false) != CR_OK ||
             (node = cr__slot_map_node(t->map, slot)) < 0))
            return cr__fail(CR_EIO, "%s: no cluster node serves slot %u",
                            argv[0], slot);
        if ((p = node_pool(t, node)) == NULL)
            return CR_ENOMEM;
        rc = pool_command(p, flags, argc, argv, argvlen, out, asking);
        asking = false;
        if (rc == CR_EIO) {
            /* The node may be gone: a failover moves its slots. A command
             * safe to send again follows them when they moved. */
            int was = node;

            if (refresh(t, false) != CR_OK || !(flags & CR__CMD_RETRY) ||
                ++redirects > CR__MAX_REDIRECTS ||
                cr__slot_map_node(t->map, slot) == was)
                return rc;
            continue;
        }
        if (rc != CR_OK || (*out)->type != CR__REPLY_ERROR)
            return rc;
        if (cr__parse_redirect((*out)->str, &ask, &moved_slot, host,
                               sizeof(host), &port)) {
            if (++redirects > CR__MAX_REDIRECTS)
                return CR_OK; /* the caller reports the error reply */
            CR__STAT_ADD(t->cfg.stats, redirects, 1);
            node = cr__slot_map_intern(t->map, host, port);
            if (node < 0)
                return CR_OK;
            if (ask)
                asking = true;
            else {
                cr__slot_map_set(t->map, moved_slot, node);
                atomic_store(&t->refresh_due, true);
            }
        } else if (is_transient(*out)) {
            if (cr__now_ms() + backoff > deadline) {
                rc = cr__fail(CR_EIO, "%s: %s", argv[0], (*out)->str);
                cr__reply_free(*out);
                *out = NULL;
                return rc;
            }
            if (strncmp((*out)->str, "CLUSTERDOWN", 11) == 0)
                refresh(t, false);
            cr__sleep_ms(backoff);
            backoff = backoff * 2 > 100 ? 100 : backoff * 2;
        } else {
            return CR_OK;
        }
        cr__reply_free(*out);
        *out = NULL;
    }
}

/* Learns the seed nodes and reads the first slot map. */
static cr_status
cluster_start(cr__transport *t)
{
    const cr__url *u = t->cfg.url;
    cr_status rc;
    size_t i;

    rc = cr__slot_map_new(&t->map);
    if (rc != CR_OK)
        return rc;
    for (i = 0; i < u->nhosts; i++)
        if (cr__slot_map_intern(t->map, u->hosts[i], u->ports[i]) < 0)
            return CR_ENOMEM;
    for (i = 0; i < u->nhosts; i++)
        if ((rc = refresh_from(t, (int)i)) == CR_OK)
            break;
    if (rc != CR_OK)
        return rc;
    CR__STAT_ADD(t->cfg.stats, topology_refreshes, 1);
    atomic_store(&t->refreshed_at, cr__now_ms());
    return CR_OK;
}

int
cr__transport_node_addr(cr__transport *t, int64_t slot, char *host, size_t len,
                        int *port)
{
    int node, n, count;

    if (t->map == NULL)
        return -1;
    if (slot >= 0) {
        node = cr__slot_map_node(t->map, (unsigned)slot);
    } else {
        /* Any master: the first one known. */
        count = cr__slot_map_count(t->map);
        for (node = -1, n = 0; n < count && node < 0; n++)
            if (cr__slot_map_is_master(t->map, n))
                node = n;
    }
    if (node < 0 || !cr__slot_map_addr(t->map, node, host, len, port))
        return -1;
    return node;
}

void
cr__transport_refresh(cr__transport *t)
{
    if (t->map != NULL)
        refresh(t, false);
}

/* -------------------------------------------------------------- transport */

cr_status
cr__transport_new(const cr__conn_config *cfg, int pool_size,
                  cr__transport **out)
{
    cr__transport *t;
    cr_status rc = CR_OK;

    if (pool_size < 1 || pool_size > 1024)
        return cr__fail(CR_EINVAL, "pool size %d is not in 1..1024", pool_size);
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return CR_ENOMEM;
    t->cfg = *cfg;
    t->pool_size = pool_size;
    pthread_mutex_init(&t->nodes_mu, NULL);
    pthread_mutex_init(&t->refresh_mu, NULL);
    if (cfg->url->is_cluster) {
        rc = cluster_start(t);
    } else if ((t->single = pool_new(&t->cfg, pool_size, NULL, 0)) == NULL) {
        rc = CR_ENOMEM;
    } else {
        /* Open one connection now to report an unreachable server. */
        conn *c = &t->single->conns[0];

        rc = ready_conn(t->single, c);
    }
    if (rc != CR_OK) {
        cr__transport_free(t);
        return rc;
    }
    *out = t;
    return CR_OK;
}

void
cr__transport_free(cr__transport *t)
{
    int i;

    if (t == NULL)
        return;
    pool_free(t->single);
    for (i = 0; i < CR__CLUSTER_MAX_NODES; i++)
        pool_free(t->nodes[i]);
    cr__slot_map_free(t->map);
    pthread_mutex_destroy(&t->nodes_mu);
    pthread_mutex_destroy(&t->refresh_mu);
    free(t);
}

cr_status
cr__transport_command(cr__transport *t, unsigned flags, int argc,
                      const char **argv, const size_t *argvlen,
                      cr__reply **out)
{
    if (t->map != NULL)
        return cluster_command(t, flags, argc, argv, argvlen, out);
    return pool_command(t->single, flags, argc, argv, argvlen, out, false);
}

void
cr__transport_send_noreply(cr__transport *t, int argc, const char **argv,
                           const size_t *argvlen)
{
    pool *p = t->single;
    conn *c;

    if (t->map != NULL) {
        int k = cr__routing_key(argc, argv, argvlen);
        unsigned slot = k < 0 ? 0 : cr__key_slot(argv[k], argvlen != NULL ?
                                                 argvlen[k] : strlen(argv[k]));

        /* A stale map sends it to the wrong node: its MOVED is dropped and
         * the key expires by itself. */
        if ((p = node_pool(t, cr__slot_map_node(t->map, slot))) == NULL)
            return;
    }
    c = take_conn(p, 0);
    if (ready_conn(p, c) == CR_OK &&
        redisAppendCommandArgv(c->ctx, argc, argv, argvlen) == REDIS_OK) {
        c->discard++;
        CR__STAT_ADD(p->cfg->stats, commands, 1);
        if (cr__conn_flush(c->ctx) != REDIS_OK)
            drop_conn(p, c);
    }
    give_conn(p, c);
}
