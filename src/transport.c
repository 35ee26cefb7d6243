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
 * Lock order: the pool mutex is never held while talking to Redis.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
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

struct cr__transport {
    cr__conn_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn *conns;
    int nconns;
    conn *free_list;
    conn reserved;
    pthread_mutex_t reserved_mu;
    atomic_uint_fast64_t epoch;
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
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
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
    redisReply *r = NULL;
    bool ok = false;

    if (c != NULL && !c->err &&
        redisSetTimeout(c, ms_to_tv(cfg->command_timeout_ms)) == REDIS_OK)
        r = redisCommand(c, "SENTINEL get-master-addr-by-name %s",
                         cfg->url->master_name);
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
    for (i = 0; i < u->nsentinels; i++) {
        size_t k = (first + i) % u->nsentinels;

        if (!ask_sentinel(cfg, u->sentinel_hosts[k], u->sentinel_ports[k], host,
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
static bool
is_master(redisContext *c)
{
    redisReply *r = redisCommand(c, "ROLE");
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
    redisReply *r = redisCommand(c, "ROLE");
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
cr__conn_open(const cr__conn_config *cfg, redisContext **out)
{
    const cr__url *u = cfg->url;
    struct timeval tv = ms_to_tv(cfg->connect_timeout_ms);
    char host[256];
    int port = u->port;
    redisContext *c;
    cr_status rc;

    *out = NULL;
    if (u->is_sentinel) {
        rc = find_master(cfg, host, sizeof(host), &port);
        if (rc != CR_OK)
            return rc;
    } else if (!u->is_unix) {
        snprintf(host, sizeof(host), "%s", u->host);
    }
    if (u->is_unix)
        c = redisConnectUnixWithTimeout(u->path, tv);
    else
        c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL)
        return cr__fail(CR_ENOMEM, "cannot allocate a connection");
    if (c->err) {
        rc = cr__fail(CR_EIO, "cannot connect to %s:%d: %s",
                      u->is_unix ? u->path : host, port, c->errstr);
        redisFree(c);
        return rc;
    }
    limit_reader(c->reader);
    if (redisSetTimeout(c, ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK) {
        redisFree(c);
        return cr__fail(CR_EIO, "cannot set the command timeout");
    }
    if (!u->is_unix)
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

cr_status
cr__transport_new(const cr__conn_config *cfg, int pool_size,
                  cr__transport **out)
{
    cr__sigpipe sp;
    cr__transport *t;
    cr_status rc;
    int i;

    if (pool_size < 1 || pool_size > 1024)
        return cr__fail(CR_EINVAL, "pool size %d is not in 1..1024", pool_size);
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return CR_ENOMEM;
    t->conns = calloc((size_t)pool_size, sizeof(*t->conns));
    if (t->conns == NULL) {
        free(t);
        return CR_ENOMEM;
    }
    t->cfg = *cfg;
    t->nconns = pool_size;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    pthread_mutex_init(&t->reserved_mu, NULL);
    atomic_init(&t->epoch, 1);
    for (i = pool_size - 1; i >= 0; i--) {
        t->conns[i].next_free = t->free_list;
        t->free_list = &t->conns[i];
    }
    cr__sigpipe_block(&sp);
    rc = cr__conn_open(cfg, &t->conns[0].ctx);
    cr__sigpipe_unblock(&sp);
    if (rc != CR_OK) {
        cr__transport_free(t);
        return rc;
    }
    t->conns[0].epoch = 1;
    t->conns[0].sgen = cr__sentinel_generation(cfg->sentinel);
    t->conns[0].opened = true;
    *out = t;
    return CR_OK;
}

void
cr__transport_free(cr__transport *t)
{
    int i;

    if (t == NULL)
        return;
    for (i = 0; i < t->nconns; i++)
        if (t->conns[i].ctx != NULL)
            redisFree(t->conns[i].ctx);
    if (t->reserved.ctx != NULL)
        redisFree(t->reserved.ctx);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->reserved_mu);
    free(t->conns);
    free(t);
}

/* Takes a connection for the calling thread: the reserved one, or the next
 * free one of the pool (waiting for one to come back when all are busy). */
static conn *
take_conn(cr__transport *t, unsigned flags)
{
    conn *c;

    if (flags & CR__CMD_RESERVED) {
        pthread_mutex_lock(&t->reserved_mu);
        return &t->reserved;
    }
    pthread_mutex_lock(&t->mu);
    while (t->free_list == NULL)
        pthread_cond_wait(&t->cv, &t->mu);
    c = t->free_list;
    t->free_list = c->next_free;
    pthread_mutex_unlock(&t->mu);
    return c;
}

/* Gives back a connection taken by take_conn. */
static void
give_conn(cr__transport *t, conn *c)
{
    if (c == &t->reserved) {
        pthread_mutex_unlock(&t->reserved_mu);
        return;
    }
    pthread_mutex_lock(&t->mu);
    c->next_free = t->free_list;
    t->free_list = c;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Closes a connection that failed and tells the pool that the others may be
 * broken too. */
static void
drop_conn(cr__transport *t, conn *c)
{
    redisFree(c->ctx);
    c->ctx = NULL;
    c->discard = 0;
    atomic_fetch_add(&t->epoch, 1);
}

/* Makes sure `c` has a live, current connection with no pending replies. */
static cr_status
ready_conn(cr__transport *t, conn *c)
{
    uint64_t epoch = atomic_load(&t->epoch);
    cr_status rc;

    if (c->ctx != NULL &&
        (c->epoch != epoch || c->sgen != cr__sentinel_generation(t->cfg.sentinel))) {
        redisFree(c->ctx);
        c->ctx = NULL;
        c->discard = 0;
    }
    if (c->ctx == NULL) {
        rc = cr__conn_open(&t->cfg, &c->ctx);
        if (rc != CR_OK)
            return rc;
        c->epoch = epoch;
        c->sgen = cr__sentinel_generation(t->cfg.sentinel);
        c->replicas_at = 0;
        if (c->opened)
            CR__STAT_ADD(t->cfg.stats, reconnects, 1);
        c->opened = true;
    }
    return CR_OK;
}

/* Reads and drops the replies of commands sent without waiting (latch
 * DELs). They come before the reply of anything sent after them, so a new
 * command is written first and these are read while it travels. */
static cr_status
drain_deferred(cr__transport *t, conn *c)
{
    while (c->discard > 0) {
        void *r = NULL;

        if (redisGetReply(c->ctx, &r) != REDIS_OK) {
            cr_status rc = cr__conn_io_error(c->ctx, "reading a deferred reply");

            drop_conn(t, c);
            return rc;
        }
        freeReplyObject(r);
        c->discard--;
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
wait_replicas(cr__transport *t, conn *c)
{
    redisReply *r;

    r = redisCommand(c->ctx, "WAIT %lld %lld", c->replicas,
                     (long long)t->cfg.sync_timeout_ms);
    if (r == NULL) {
        cr_status rc = cr__conn_io_error(c->ctx, "WAIT");

        drop_conn(t, c);
        return rc;
    }
    sync_failed = r->type != REDIS_REPLY_INTEGER || r->integer == 0;
    freeReplyObject(r);
    return CR_OK;
}

/* Sends one command on `c` and reads its reply. *not_run is set when the
 * command certainly did not run (the server refused it as a replica). */
static cr_status
run_on(cr__transport *t, conn *c, int argc, const char **argv,
       const size_t *argvlen, cr__reply **out, bool *not_run, bool sync)
{
    void *raw = NULL;
    redisReply *r;
    cr_status rc = ready_conn(t, c);

    if (rc != CR_OK)
        return rc;
    CR__STAT_ADD(t->cfg.stats, commands, 1);
    if (redisAppendCommandArgv(c->ctx, argc, argv, argvlen) != REDIS_OK)
        return cr__fail(CR_ENOMEM, "cannot format %s", argv[0]);
    if ((rc = drain_deferred(t, c)) != CR_OK)
        return rc;
    if (redisGetReply(c->ctx, &raw) != REDIS_OK || raw == NULL) {
        rc = cr__conn_io_error(c->ctx, argv[0]);
        drop_conn(t, c);
        return rc;
    }
    r = raw;
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "READONLY", 8) == 0) {
        /* A failover turned this master into a replica: nothing ran. */
        rc = cr__fail(CR_EIO, "%s: %s", argv[0], r->str);
        freeReplyObject(r);
        drop_conn(t, c);
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
        (rc = wait_replicas(t, c)) != CR_OK) {
        cr__reply_free(*out);
        *out = NULL;
    }
    return rc;
}

cr_status
cr__transport_command(cr__transport *t, unsigned flags, int argc,
                      const char **argv, const size_t *argvlen,
                      cr__reply **out)
{
    conn *c = take_conn(t, flags);
    bool not_run = false;
    bool sync = (flags & CR__CMD_SYNC) && t->cfg.sync_timeout_ms > 0;
    cr__sigpipe sp;
    cr_status rc;

    sync_failed = false;
    cr__sigpipe_block(&sp);
    rc = run_on(t, c, argc, argv, argvlen, out, &not_run, sync);
    if (rc == CR_EIO && ((flags & CR__CMD_RETRY) || not_run)) {
        cr__log(t->cfg.log, CR_LOG_WARN, "%s failed (%s), retrying once",
                argv[0], cr_last_error());
        rc = run_on(t, c, argc, argv, argvlen, out, &not_run, sync);
    }
    cr__sigpipe_unblock(&sp);
    give_conn(t, c);
    return rc;
}

void
cr__transport_send_noreply(cr__transport *t, int argc, const char **argv,
                           const size_t *argvlen)
{
    conn *c = take_conn(t, 0);
    cr__sigpipe sp;
    int done = 0;

    cr__sigpipe_block(&sp);
    if (ready_conn(t, c) == CR_OK &&
        redisAppendCommandArgv(c->ctx, argc, argv, argvlen) == REDIS_OK) {
        c->discard++;
        CR__STAT_ADD(t->cfg.stats, commands, 1);
        while (!done) {
            if (redisBufferWrite(c->ctx, &done) != REDIS_OK) {
                drop_conn(t, c);
                break;
            }
        }
    }
    cr__sigpipe_unblock(&sp);
    give_conn(t, c);
}
