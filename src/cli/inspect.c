/* SPDX-License-Identifier: MIT */
/*
 * `credisson inspect`, and the status line shown while waiting: what the
 * object under a name is and its state, read with plain commands (TYPE,
 * PTTL, HGETALL, LRANGE, ZRANGE, GET, PUBSUB NUMSUB), never a script, so
 * that looking never changes anything. The key layouts are Redisson's
 * (redisson-protocol.md), so objects made by Java Redisson show too.
 *
 * This is the one file of the tool that talks to Redis without the
 * library: the library has no calls for reading other owners' holds. It
 * opens its own hiredis connection from the same URL.
 *
 * A semaphore and a latch are both a plain integer under their name; only
 * the issued-permits set of an expirable semaphore, or who listens on
 * which channel, can tell them apart. When nothing does, the object is
 * shown as "semaphore or latch".
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "cli.h"
#include "url.h"

/* Redisson's "never expires" score of an expirable permit. */
#define PERMIT_NEVER 922337203685477LL
/* At most this many queue entries, permits and reader holds are read. */
#define MAX_LISTED 100
#define MAX_READER_HOLDS 64
/* A hash with more fields than this is not taken for a lock. */
#define MAX_HASH_FIELDS 10000

/* One owner in a lock's hash. */
typedef struct holder {
    char *owner;
    size_t len;
    int64_t count;
    int64_t ttl_ms;  /* readers: longest lease left of their holds */
    bool writer;
} holder;

/* One waiter of a fair lock, with its deadline when it has one. */
typedef struct queued {
    char *owner;
    size_t len;
    bool has_deadline;
    int64_t deadline_ms;
} queued;

/* One issued expirable permit. */
typedef struct permit {
    char id[2 * 32 + 1];
    bool never;
    int64_t expires_ms;
} permit;

/* Everything read about one name. */
typedef struct state {
    char *raw;              /* the key: the name after the prefix */
    char type[32];          /* Redis TYPE of the key */
    const char *kind;       /* what it is, as shown (see classify) */
    int64_t ttl_ms;         /* PTTL of the key: -2 absent, -1 no expiry */
    int64_t now_ms;         /* this host's wall clock */
    /* Locks. */
    const char *mode;       /* read/write lock: "read" or "write" */
    holder *holders;
    size_t nholders;
    bool not_a_lock;        /* a hash whose values are not counts */
    /* Fair lock. */
    bool has_queue;
    queued *queue;
    size_t nqueue;
    int64_t queue_len;
    /* Fenced lock. */
    bool has_token;
    int64_t token;
    /* Semaphores and latches. */
    bool has_value;
    int64_t value;
    bool has_permits;       /* the {N}:timeout set exists */
    permit *permits;
    size_t npermits;
    int64_t permits_len;
    int64_t sem_subs, latch_subs;
} state;

/* Who held the lock at the last status line, and since when (this host's
 * monotonic clock): the status line shows how long it has been held. */
static char seen_owner[256];
static int64_t seen_since_ms;

/* ------------------------------------------------------------ connection */

/* Milliseconds of a clock. */
static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs one command on c; words are NUL-terminated strings. Returns the
 * reply (to be freed) or NULL on a broken connection. */
static redisReply *call(redisContext *c, int argc, const char **argv)
{
    return redisCommandArgv(c, argc, argv, NULL);
}

/* Prints an error unless `quiet` (the status line must not be broken up
 * by messages). */
static void report(cr__cli *cli, bool quiet, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(cr__cli *cli, bool quiet, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (quiet)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cr__cli_error(cli, "%s", msg);
}

/* Opens the inspector's connection as the URL says, with AUTH and SELECT.
 * Returns 0 or an exit code, after saying what failed unless `quiet`. */
/* With a redis-sentinel:// URL: asks the sentinels in turn where the master
 * is and connects to it; NULL when none answers. */
static redisContext *connect_master(const cr__url *u, struct timeval tv)
{
    size_t i;

    for (i = 0; i < u->nhosts; i++) {
        redisContext *s = redisConnectWithTimeout(u->hosts[i],
                                                  u->ports[i], tv);
        redisReply *r = NULL;
        redisContext *m = NULL;

        if (s != NULL && s->err == 0) {
            redisSetTimeout(s, tv);
            r = redisCommand(s, "SENTINEL get-master-addr-by-name %s",
                             u->master_name);
        }
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_STRING)
            m = redisConnectWithTimeout(r->element[0]->str,
                                        atoi(r->element[1]->str), tv);
        if (r != NULL)
            freeReplyObject(r);
        if (s != NULL)
            redisFree(s);
        if (m != NULL)
            return m;
    }
    return NULL;
}

/* With a redis-cluster:// URL: the first seed node that accepts a
 * connection (a MOVED reply then leads to the right one). */
static redisContext *connect_seed(const cr__url *u, struct timeval tv)
{
    size_t i;

    for (i = 0; i < u->nhosts; i++) {
        redisContext *c = redisConnectWithTimeout(u->hosts[i], u->ports[i], tv);

        if (c != NULL && c->err == 0)
            return c;
        if (c != NULL)
            redisFree(c);
    }
    return NULL;
}

/* Opens the inspector's connection as the URL says, or to cluster node
 * host:port when host is not NULL, with AUTH and SELECT. Returns 0 or an
 * exit code, after saying what failed unless `quiet`. */
static int open_conn_to(cr__cli *cli, bool quiet, const char *host, int port)
{
    const char *url = cli->url != NULL ? cli->url : "redis://127.0.0.1:6379";
    int64_t t = cli->args->timeout_ms > 0 ? cli->args->timeout_ms : 3000;
    struct timeval tv = {(time_t)(t / 1000), (suseconds_t)(t % 1000 * 1000)};
    redisContext *c;
    redisReply *r = NULL;
    char err[256], db[16];
    cr__url u;

    if (cr__url_parse(url, &u, err, sizeof(err)) != CR_OK) {
        report(cli, quiet, "invalid URL: %s", err);
        return CR__CLI_EXIT_USAGE;
    }
    if (host != NULL)
        c = redisConnectWithTimeout(host, port, tv);
    else if (u.is_sentinel)
        c = connect_master(&u, tv);
    else if (u.is_cluster)
        c = connect_seed(&u, tv);
    else
        c = u.is_unix ? redisConnectUnixWithTimeout(u.path, tv)
                      : redisConnectWithTimeout(u.host, u.port, tv);
    if (c == NULL || c->err != 0) {
        report(cli, quiet, "cannot use Redis at %s: %s", cli->url_shown,
                      c != NULL ? c->errstr : "no node answers");
        goto fail;
    }
    redisSetTimeout(c, tv);
    if (u.password != NULL) {
        const char *auth[3] = {"AUTH", u.user != NULL ? u.user : "",
                               u.password};

        r = u.user != NULL ? call(c, 3, auth)
                           : call(c, 2, (const char *[]){"AUTH", u.password});
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            report(cli, quiet, "cannot use Redis at %s: AUTH refused",
                          cli->url_shown);
            goto fail;
        }
        freeReplyObject(r);
        r = NULL;
    }
    if (u.db != 0) {
        snprintf(db, sizeof(db), "%d", u.db);
        r = call(c, 2, (const char *[]){"SELECT", db});
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            report(cli, quiet, "cannot use Redis at %s: SELECT refused",
                          cli->url_shown);
            goto fail;
        }
        freeReplyObject(r);
    }
    cli->cluster = u.is_cluster;
    cr__url_clear(&u);
    cli->redis = c;
    return 0;
fail:
    if (r != NULL)
        freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    cr__url_clear(&u);
    return CR__CLI_EXIT_UNAVAILABLE;
}

static int open_conn(cr__cli *cli, bool quiet)
{
    return open_conn_to(cli, quiet, NULL, 0);
}

/* In a cluster, when `r` is "MOVED <slot> <host>:<port>": connects to that
 * node instead (every key of one object lives in one slot). Returns 1 when
 * it did, 0 when `r` is no redirection, or an exit code. */
static int follow_moved(cr__cli *cli, const redisReply *r, bool quiet)
{
    char host[256];
    const char *sp, *colon;
    int code;

    if (!cli->cluster || r->type != REDIS_REPLY_ERROR ||
        strncmp(r->str, "MOVED ", 6) != 0 ||
        (sp = strchr(r->str + 6, ' ')) == NULL ||
        (colon = strrchr(sp, ':')) == NULL ||
        (size_t)(colon - sp - 1) >= sizeof(host))
        return 0;
    snprintf(host, sizeof(host), "%.*s", (int)(colon - sp - 1), sp + 1);
    cr__cli_inspect_close(cli);
    code = open_conn_to(cli, quiet, host, atoi(colon + 1));
    return code == 0 ? 1 : code;
}

void cr__cli_inspect_close(cr__cli *cli)
{
    if (cli->redis != NULL)
        redisFree(cli->redis);
    cli->redis = NULL;
}

/* ----------------------------------------------------------------- names */

/* malloc'd concatenation of up to four strings (NULLs skipped). */
static char *concat(const char *a, const char *b, const char *c,
                    const char *d)
{
    const char *parts[4] = {a, b, c, d};
    size_t len = 1, i;
    char *s;

    for (i = 0; i < 4; i++)
        if (parts[i] != NULL)
            len += strlen(parts[i]);
    s = malloc(len);
    if (s == NULL)
        return NULL;
    s[0] = '\0';
    for (i = 0; i < 4; i++)
        if (parts[i] != NULL)
            strcat(s, parts[i]);
    return s;
}

/* Redisson's prefixName(p, n): "p:n" when n has a '{', else "p:{n}". */
static char *prefix_name(const char *p, const char *n)
{
    return strchr(n, '{') != NULL ? concat(p, ":", n, NULL)
                                  : concat(p, ":{", n, "}");
}

/* Redisson's suffixName(n, s): "n:s" when n has a '{', else "{n}:s". */
static char *suffix_name(const char *n, const char *s)
{
    return strchr(n, '{') != NULL ? concat(n, ":", s, NULL)
                                  : concat("{", n, "}:", s);
}

/* ---------------------------------------------------------------- reading */

/* Parses a reply string of len bytes as a whole decimal number. */
static bool parse_i64(const char *s, size_t len, int64_t *out)
{
    char buf[32], *end;
    long long v;

    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtoll(buf, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* Parses a sorted-set score (a decimal, maybe with a fraction) as whole
 * milliseconds. */
static bool parse_score(const char *s, size_t len, int64_t *out)
{
    char buf[64], *end;
    double v;

    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    v = strtod(buf, &end);
    if (*end != '\0' || v != v || v > 9.2e18 || v < -9.2e18)
        return false;
    *out = (int64_t)v;
    return true;
}

/* Runs a command whose reply is an integer; -2 when it is not one. */
static int64_t int_reply(redisContext *c, int argc, const char **argv,
                         bool *broken)
{
    redisReply *r = call(c, argc, argv);
    int64_t v = -2;

    if (r == NULL)
        *broken = true;
    else if (r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* Copies a reply string into a malloc'd NUL-terminated buffer. */
static char *dup_reply(const redisReply *r)
{
    char *s = malloc(r->len + 1);

    if (s != NULL) {
        memcpy(s, r->str, r->len);
        s[r->len] = '\0';
    }
    return s;
}

/* Reads a lock's or read/write lock's hash into st. A hash with more
 * fields than any lock has is not read: it is someone's data. Returns
 * false when out of memory or the connection broke (*broken). */
static bool read_hash(redisContext *c, state *st, bool *broken)
{
    char *kp = strchr(st->raw, '{') != NULL ? concat(st->raw, NULL, NULL, NULL)
                                            : concat("{", st->raw, "}", NULL);
    redisReply *r = NULL;
    size_t i;
    bool ok = false;

    if (kp == NULL)
        goto out;
    if (int_reply(c, 2, (const char *[]){"HLEN", st->raw}, broken) >
        MAX_HASH_FIELDS) {
        st->not_a_lock = true;
        ok = !*broken;
        goto out;
    }
    r = call(c, 2, (const char *[]){"HGETALL", st->raw});
    if (r == NULL) {
        *broken = true;
        goto out;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        ok = true;
        goto out;
    }
    st->holders = calloc(r->elements / 2 + 1, sizeof(*st->holders));
    if (st->holders == NULL)
        goto out;
    for (i = 0; i + 1 < r->elements; i += 2) {
        redisReply *f = r->element[i], *v = r->element[i + 1];
        holder *h = &st->holders[st->nholders];

        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0) {
            st->mode = v->len == 4 && memcmp(v->str, "read", 4) == 0
                           ? "read"
                       : v->len == 5 && memcmp(v->str, "write", 5) == 0
                           ? "write"
                           : "unknown";
            continue;
        }
        if (!parse_i64(v->str, v->len, &h->count)) {
            st->not_a_lock = true;
            continue;
        }
        h->owner = dup_reply(f);
        if (h->owner == NULL)
            goto out;
        h->len = f->len;
        h->ttl_ms = -2;
        h->writer = f->len > 6 && memcmp(f->str + f->len - 6, ":write", 6) == 0;
        st->nholders++;
    }
    /* A reader's lease is the longest one left of its holds' keys,
     * {N}:<owner>:rwlock_timeout:<i> for i = 1..count. */
    for (i = 0; st->mode != NULL && i < st->nholders; i++) {
        holder *h = &st->holders[i];
        char *base = concat(kp, ":", h->owner, ":rwlock_timeout:");
        int64_t k;

        if (base == NULL)
            goto out;
        for (k = 1; !h->writer && k <= h->count && k <= MAX_READER_HOLDS;
             k++) {
            char num[24], *key;
            int64_t ttl;

            snprintf(num, sizeof(num), "%lld", (long long)k);
            key = concat(base, num, NULL, NULL);
            if (key == NULL) {
                free(base);
                goto out;
            }
            ttl = int_reply(c, 2, (const char *[]){"PTTL", key}, broken);
            free(key);
            if (ttl > h->ttl_ms)
                h->ttl_ms = ttl;
        }
        free(base);
    }
    ok = true;
out:
    free(kp);
    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

/* Reads a fair lock's queue (its first MAX_LISTED waiters) and their
 * deadlines into st, when they exist. */
static bool read_queue(redisContext *c, state *st, bool *broken)
{
    char *qk = prefix_name("redisson_lock_queue", st->raw);
    char *zk = prefix_name("redisson_lock_timeout", st->raw);
    redisReply *q = NULL;
    char last[16];
    size_t i;
    bool ok = false;

    if (qk == NULL || zk == NULL)
        goto out;
    st->queue_len = int_reply(c, 2, (const char *[]){"LLEN", qk}, broken);
    st->has_queue = st->queue_len > 0 ||
                    int_reply(c, 2, (const char *[]){"EXISTS", zk}, broken) > 0;
    if (!st->has_queue || *broken) {
        ok = !*broken;
        goto out;
    }
    if (st->queue_len < 0)
        st->queue_len = 0;
    snprintf(last, sizeof(last), "%d", MAX_LISTED - 1);
    q = call(c, 4, (const char *[]){"LRANGE", qk, "0", last});
    if (q == NULL) {
        *broken = true;
        goto out;
    }
    if (q->type != REDIS_REPLY_ARRAY) {
        ok = true;
        goto out;
    }
    st->queue = calloc(q->elements + 1, sizeof(*st->queue));
    if (st->queue == NULL)
        goto out;
    for (i = 0; i < q->elements; i++) {
        redisReply *e = q->element[i], *z;
        queued *w = &st->queue[st->nqueue];

        if (e->type != REDIS_REPLY_STRING)
            continue;
        w->owner = dup_reply(e);
        if (w->owner == NULL)
            goto out;
        w->len = e->len;
        st->nqueue++;
        z = redisCommand(c, "ZSCORE %s %b", zk, e->str, e->len);
        if (z == NULL) {
            *broken = true;
            goto out;
        }
        if (z->type == REDIS_REPLY_STRING)
            w->has_deadline = parse_score(z->str, z->len, &w->deadline_ms);
        freeReplyObject(z);
    }
    ok = true;
out:
    if (q != NULL)
        freeReplyObject(q);
    free(qk);
    free(zk);
    return ok;
}

/* Reads a fenced lock's token counter into st, when it exists. */
static bool read_token(redisContext *c, state *st, bool *broken)
{
    char *tk = prefix_name("redisson_lock_token", st->raw);
    redisReply *r;

    if (tk == NULL)
        return false;
    r = call(c, 2, (const char *[]){"GET", tk});
    free(tk);
    if (r == NULL) {
        *broken = true;
        return false;
    }
    if (r->type == REDIS_REPLY_STRING)
        st->has_token = parse_i64(r->str, r->len, &st->token);
    freeReplyObject(r);
    return true;
}

/* Reads the integer under the name (semaphore permits, latch count). */
static bool read_value(redisContext *c, state *st, bool *broken)
{
    redisReply *r = call(c, 2, (const char *[]){"GET", st->raw});

    if (r == NULL) {
        *broken = true;
        return false;
    }
    if (r->type == REDIS_REPLY_STRING)
        st->has_value = parse_i64(r->str, r->len, &st->value);
    freeReplyObject(r);
    return true;
}

/* Writes n bytes as lowercase hex into out (2n + 1 bytes). */
static void to_hex(const char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[(unsigned char)in[i] >> 4];
        out[2 * i + 1] = digits[(unsigned char)in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Reads an expirable semaphore's issued permits into st, when the set
 * exists. Ids are stored as raw bytes and shown as hex. */
static bool read_permits(redisContext *c, state *st, bool *broken)
{
    char *zk = suffix_name(st->raw, "timeout"), last[16];
    redisReply *r = NULL;
    size_t i;
    bool ok = false;

    if (zk == NULL)
        return false;
    st->permits_len = int_reply(c, 2, (const char *[]){"ZCARD", zk}, broken);
    st->has_permits = st->permits_len > 0;
    if (!st->has_permits) {
        ok = !*broken;
        goto out;
    }
    snprintf(last, sizeof(last), "%d", MAX_LISTED - 1);
    r = call(c, 5, (const char *[]){"ZRANGE", zk, "0", last, "WITHSCORES"});
    if (r == NULL) {
        *broken = true;
        goto out;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        ok = true;
        goto out;
    }
    st->permits = calloc(r->elements / 2 + 1, sizeof(*st->permits));
    if (st->permits == NULL)
        goto out;
    for (i = 0; i + 1 < r->elements; i += 2) {
        redisReply *m = r->element[i], *s = r->element[i + 1];
        permit *p = &st->permits[st->npermits];

        if (m->type != REDIS_REPLY_STRING || s->type != REDIS_REPLY_STRING ||
            !parse_score(s->str, s->len, &p->expires_ms))
            continue;
        to_hex(m->str, m->len < 32 ? m->len : 32, p->id);
        p->never = p->expires_ms >= PERMIT_NEVER;
        st->npermits++;
    }
    ok = true;
out:
    if (r != NULL)
        freeReplyObject(r);
    free(zk);
    return ok;
}

/* Counts the subscribers of the semaphore's and the latch's channels,
 * the only trace that tells a plain semaphore from a latch. */
static bool read_listeners(redisContext *c, bool cluster, state *st,
                           bool *broken)
{
    char *sc = prefix_name("redisson_sc", st->raw);
    char *lc = concat("redisson_countdownlatch__channel__{", st->raw, "}",
                      NULL);
    redisReply *r = NULL;
    bool ok = false;

    if (sc == NULL || lc == NULL)
        goto out;
    r = call(c, 4, (const char *[]){"PUBSUB", "NUMSUB", sc, lc});
    if (r == NULL) {
        *broken = true;
        goto out;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
        r->element[1]->type == REDIS_REPLY_INTEGER &&
        r->element[3]->type == REDIS_REPLY_INTEGER) {
        st->sem_subs = r->element[1]->integer;
        st->latch_subs = r->element[3]->integer;
    }
    if (cluster) {
        /* Sharded subscribers count apart (on this node: the slot's). */
        freeReplyObject(r);
        r = call(c, 4, (const char *[]){"PUBSUB", "SHARDNUMSUB", sc, lc});
        if (r == NULL) {
            *broken = true;
            goto out;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
            r->element[1]->type == REDIS_REPLY_INTEGER &&
            r->element[3]->type == REDIS_REPLY_INTEGER) {
            st->sem_subs += r->element[1]->integer;
            st->latch_subs += r->element[3]->integer;
        }
    }
    ok = true;
out:
    if (r != NULL)
        freeReplyObject(r);
    free(sc);
    free(lc);
    return ok;
}

/* Decides what the object is from what was read. The kinds are "none",
 * "lock", "rwlock", "semaphore", "expirable-semaphore", "latch",
 * "semaphore-or-latch" and "other" (a key no credisson object uses). */
static const char *classify(const state *st)
{
    if (strcmp(st->type, "hash") == 0)
        return st->not_a_lock ? "other" : st->mode != NULL ? "rwlock" : "lock";
    if (strcmp(st->type, "string") == 0) {
        if (!st->has_value)
            return "other";
        if (st->has_permits)
            return "expirable-semaphore";
        if (st->latch_subs > 0 && st->sem_subs == 0)
            return "latch";
        if (st->sem_subs > 0 && st->latch_subs == 0)
            return "semaphore";
        return "semaphore-or-latch";
    }
    if (strcmp(st->type, "none") == 0) {
        if (st->has_queue || st->has_token)
            return "lock";
        if (st->has_permits)
            return "expirable-semaphore";
        return "none";
    }
    return "other";
}

/* Reads everything about the name into st. Returns 0 or an exit code,
 * after saying what failed unless `quiet`. */
static int read_state(cr__cli *cli, state *st, bool quiet)
{
    const char *prefix = cli->args->name_prefix;
    redisContext *c;
    redisReply *r;
    bool broken = false, ok = true;
    int code;

    memset(st, 0, sizeof(*st));
    if (cli->redis == NULL && (code = open_conn(cli, quiet)) != 0)
        return code;
    c = cli->redis;
    st->raw = concat(prefix, cli->args->name, NULL, NULL);
    if (st->raw == NULL)
        goto nomem;
    st->now_ms = clock_ms(CLOCK_REALTIME);
    r = call(c, 2, (const char *[]){"TYPE", st->raw});
    if (r == NULL)
        goto broken;
    if ((code = follow_moved(cli, r, quiet)) != 0) {
        freeReplyObject(r);
        if (code != 1)
            return code;
        c = cli->redis;
        r = call(c, 2, (const char *[]){"TYPE", st->raw});
        if (r == NULL)
            goto broken;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        char why[128];

        report(cli, quiet, "Redis at %s refused TYPE: %s", cli->url_shown,
                      cr__cli_printable(r->str, why, sizeof(why)));
        freeReplyObject(r);
        return CR__CLI_EXIT_SOFTWARE;
    }
    if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING)
        snprintf(st->type, sizeof(st->type), "%.*s", (int)r->len, r->str);
    freeReplyObject(r);
    st->ttl_ms = int_reply(c, 2, (const char *[]){"PTTL", st->raw}, &broken);
    if (strcmp(st->type, "hash") == 0)
        ok = read_hash(c, st, &broken);
    if (ok && (strcmp(st->type, "hash") == 0 || strcmp(st->type, "none") == 0))
        ok = read_queue(c, st, &broken) && read_token(c, st, &broken);
    if (ok && (strcmp(st->type, "string") == 0 ||
               strcmp(st->type, "none") == 0))
        ok = read_value(c, st, &broken) && read_permits(c, st, &broken) &&
             read_listeners(c, cli->cluster, st, &broken);
    if (broken)
        goto broken;
    if (!ok)
        goto nomem;
    st->kind = classify(st);
    return 0;
broken:
    report(cli, quiet, "lost the connection to Redis at %s: %s",
                  cli->url_shown, c->errstr[0] != '\0' ? c->errstr : "EOF");
    return CR__CLI_EXIT_UNAVAILABLE;
nomem:
    report(cli, quiet, "out of memory");
    return CR__CLI_EXIT_OSERR;
}

/* Frees what read_state allocated. */
static void free_state(state *st)
{
    size_t i;

    for (i = 0; i < st->nholders; i++)
        free(st->holders[i].owner);
    for (i = 0; i < st->nqueue; i++)
        free(st->queue[i].owner);
    free(st->holders);
    free(st->queue);
    free(st->permits);
    free(st->raw);
}

/* ------------------------------------------------------------------ JSON */

void cr__cli_json_str(FILE *f, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    fputc('"', f);
    while (i < len) {
        unsigned char b = p[i];
        size_t n = 0, k;

        if (b < 0x80) {
            if (b == '"' || b == '\\')
                fprintf(f, "\\%c", b);
            else if (b < 0x20)
                fprintf(f, "\\u%04x", b);
            else
                fputc(b, f);
            i++;
            continue;
        }
        if (b >= 0xc2 && b <= 0xdf)
            n = 2;
        else if (b >= 0xe0 && b <= 0xef)
            n = 3;
        else if (b >= 0xf0 && b <= 0xf4)
            n = 4;
        for (k = 1; n != 0 && k < n; k++)
            if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
                n = 0;
        /* Overlong forms, surrogates and code points past U+10FFFF. */
        if (n != 0 && ((b == 0xe0 && p[i + 1] < 0xa0) ||
                       (b == 0xed && p[i + 1] > 0x9f) ||
                       (b == 0xf0 && p[i + 1] < 0x90) ||
                       (b == 0xf4 && p[i + 1] > 0x8f)))
            n = 0;
        if (n == 0) {
            fputs("\\ufffd", f);
            i++;
        } else {
            fwrite(p + i, 1, n, f);
            i += n;
        }
    }
    fputc('"', f);
}

/* Writes `"key":` and the remaining time until an epoch deadline. */
static void json_deadline(FILE *f, const char *key, int64_t at, int64_t now)
{
    fprintf(f, ",\"%s\":%lld,\"remaining_ms\":%lld", key, (long long)at,
            (long long)(at - now));
}

/* Prints st as one JSON object. */
static void print_json(const cr__cli *cli, const state *st)
{
    size_t i;

    fputs("{\"name\":", stdout);
    cr__cli_json_str(stdout, cli->args->name, strlen(cli->args->name));
    fputs(",\"key\":", stdout);
    cr__cli_json_str(stdout, st->raw, strlen(st->raw));
    printf(",\"type\":\"%s\",\"redis_type\":", st->kind);
    cr__cli_json_str(stdout, st->type, strlen(st->type));
    if (st->ttl_ms >= -1)
        printf(",\"ttl_ms\":%lld", (long long)st->ttl_ms);
    else
        fputs(",\"ttl_ms\":null", stdout);
    if (strcmp(st->kind, "lock") == 0 || strcmp(st->kind, "rwlock") == 0) {
        printf(",\"locked\":%s", st->nholders > 0 ? "true" : "false");
        if (st->mode != NULL)
            printf(",\"mode\":\"%s\"", st->mode);
        fputs(",\"holders\":[", stdout);
        for (i = 0; i < st->nholders; i++) {
            const holder *h = &st->holders[i];

            fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
            cr__cli_json_str(stdout, h->owner, h->len);
            printf(",\"count\":%lld", (long long)h->count);
            if (st->mode != NULL) {
                printf(",\"mode\":\"%s\"", h->writer ? "write" : "read");
                if (!h->writer && h->ttl_ms == -2)
                    fputs(",\"ttl_ms\":null", stdout); /* its keys are gone */
                else if (!h->writer)
                    printf(",\"ttl_ms\":%lld", (long long)h->ttl_ms);
            }
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    if (st->has_queue) {
        printf(",\"queue_length\":%lld,\"queue\":[", (long long)st->queue_len);
        for (i = 0; i < st->nqueue; i++) {
            const queued *w = &st->queue[i];

            fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
            cr__cli_json_str(stdout, w->owner, w->len);
            if (w->has_deadline)
                json_deadline(stdout, "deadline_ms", w->deadline_ms,
                              st->now_ms);
            else
                fputs(",\"deadline_ms\":null", stdout);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    if (st->has_token)
        printf(",\"fencing_token\":%lld", (long long)st->token);
    if (strcmp(st->kind, "semaphore") == 0 ||
        strcmp(st->kind, "expirable-semaphore") == 0)
        printf(",\"available\":%lld", (long long)(st->has_value ? st->value
                                                                : 0));
    if (st->has_permits) {
        printf(",\"issued_count\":%lld,\"issued\":[",
               (long long)st->permits_len);
        for (i = 0; i < st->npermits; i++) {
            const permit *p = &st->permits[i];

            printf("%s{\"id\":\"%s\"", i > 0 ? "," : "", p->id);
            if (p->never)
                fputs(",\"expires_ms\":null", stdout);
            else
                json_deadline(stdout, "expires_ms", p->expires_ms,
                              st->now_ms);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    if (strcmp(st->kind, "latch") == 0)
        printf(",\"count\":%lld", (long long)st->value);
    if (strcmp(st->kind, "semaphore-or-latch") == 0)
        printf(",\"value\":%lld", (long long)st->value);
    fputs("}\n", stdout);
}

/* ------------------------------------------------------------------ text */

/* Prints s (len bytes) with bytes that are not printable ASCII as '?'. */
static void text_str(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        putchar(s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
}

/* Writes "lease 12.3s left", "no expiry" or "" into buf for a PTTL. */
static const char *lease_text(int64_t ttl, char *buf, size_t len)
{
    char d[32];

    if (ttl == -1)
        snprintf(buf, len, "no expiry");
    else if (ttl >= 0)
        snprintf(buf, len, "lease %s left", cr__cli_fmt_ms(ttl, d, sizeof(d)));
    else
        buf[0] = '\0';
    return buf;
}

/* Writes "in 4m59s", "passed 3.0s ago" for an epoch deadline. */
static const char *until_text(int64_t at, int64_t now, char *buf, size_t len)
{
    char d[32];

    if (at >= now)
        snprintf(buf, len, "in %s", cr__cli_fmt_ms(at - now, d, sizeof(d)));
    else
        snprintf(buf, len, "passed %s ago",
                 cr__cli_fmt_ms(now - at, d, sizeof(d)));
    return buf;
}

/* Prints a lock's or read/write lock's holders. */
static void print_holders(const state *st)
{
    char t[64];
    size_t i;

    for (i = 0; i < st->nholders; i++) {
        const holder *h = &st->holders[i];

        fputs(st->mode == NULL ? "holder:     " : h->writer ? "writer:     "
                                                            : "reader:     ",
              stdout);
        text_str(h->owner, h->len);
        printf(" (hold count %lld", (long long)h->count);
        if (st->mode != NULL && !h->writer)
            printf(", %s", h->ttl_ms >= -1 ? lease_text(h->ttl_ms, t, sizeof(t))
                                           : "hold keys expired");
        fputs(")\n", stdout);
    }
}

/* Prints st for people. */
static void print_text(const cr__cli *cli, const state *st)
{
    char t[64];
    size_t i;

    fputs("name:       ", stdout);
    text_str(cli->args->name, strlen(cli->args->name));
    if (strcmp(st->raw, cli->args->name) != 0) {
        fputs(" (key ", stdout);
        text_str(st->raw, strlen(st->raw));
        fputc(')', stdout);
    }
    putchar('\n');
    if (strcmp(st->kind, "none") == 0) {
        puts("type:       none (no such object)");
        return;
    }
    if (strcmp(st->kind, "other") == 0) {
        printf("type:       other (a Redis %s that is not a lock, semaphore "
               "or latch)\n", st->type);
        return;
    }
    if (strcmp(st->kind, "lock") == 0 || strcmp(st->kind, "rwlock") == 0) {
        printf("type:       %s\n", st->mode != NULL ? "read/write lock"
                                   : st->has_queue ? "fair lock" : "lock");
        if (st->nholders == 0)
            puts("state:      free");
        else if (st->mode != NULL)
            printf("state:      held for %s (%s)\n",
                   strcmp(st->mode, "read") == 0 ? "reading" : "writing",
                   lease_text(st->ttl_ms, t, sizeof(t)));
        else
            printf("state:      held (%s)\n",
                   lease_text(st->ttl_ms, t, sizeof(t)));
        print_holders(st);
    }
    if (st->has_queue) {
        printf("queue:      %lld waiting\n", (long long)st->queue_len);
        for (i = 0; i < st->nqueue; i++) {
            const queued *w = &st->queue[i];

            printf("  %zu. ", i + 1);
            text_str(w->owner, w->len);
            if (w->has_deadline)
                printf(" (deadline %s)\n",
                       until_text(w->deadline_ms, st->now_ms, t, sizeof(t)));
            else
                puts(" (no deadline)");
        }
    }
    if (st->has_token)
        printf("fencing token: %lld\n", (long long)st->token);
    if (strcmp(st->kind, "semaphore") == 0 ||
        strcmp(st->kind, "expirable-semaphore") == 0) {
        printf("type:       %s\n", st->kind[0] == 'e' ? "expirable semaphore"
                                                      : "semaphore");
        printf("available:  %lld\n", (long long)(st->has_value ? st->value
                                                               : 0));
    }
    if (st->has_permits) {
        printf("issued:     %lld\n", (long long)st->permits_len);
        for (i = 0; i < st->npermits; i++) {
            const permit *p = &st->permits[i];

            printf("  %s (%s%s)\n", p->id, p->never ? "never expires"
                                                    : "expires ",
                   p->never ? "" : until_text(p->expires_ms, st->now_ms, t,
                                              sizeof(t)));
        }
    }
    if (strcmp(st->kind, "latch") == 0) {
        puts("type:       latch");
        printf("count:      %lld\n", (long long)st->value);
    }
    if (strcmp(st->kind, "semaphore-or-latch") == 0) {
        puts("type:       semaphore or latch (both are a plain integer)");
        printf("value:      %lld\n", (long long)st->value);
    }
}

int cr__cli_inspect(cr__cli *cli)
{
    state st;
    int code = read_state(cli, &st, false);

    if (code == 0) {
        if (cli->args->json)
            print_json(cli, &st);
        else
            print_text(cli, &st);
    }
    free_state(&st);
    return code;
}

/* ----------------------------------------------------------- status line */

/* Writes an owner name shortened for the status line: a client UUID cut to
 * its first 8 characters ("1b9d6bcd...:1"). */
static void short_owner(const holder *h, char *buf, size_t len)
{
    char clean[100];
    const char *colon;

    cr__cli_printable(h->owner, clean, sizeof(clean));
    colon = strchr(clean, ':');
    if (colon != NULL && colon - clean == 36)
        snprintf(buf, len, "%.8s...%s", clean, colon);
    else
        snprintf(buf, len, "%s", clean);
}

void cr__cli_summary(cr__cli *cli, char *buf, size_t len)
{
    char who[128], t[64], d[32];
    int64_t now = clock_ms(CLOCK_MONOTONIC);
    state st;

    buf[0] = '\0';
    if (read_state(cli, &st, true) != 0) {
        free_state(&st);
        cr__cli_inspect_close(cli);
        snprintf(buf, len, "(cannot read its state)");
        return;
    }
    if (st.nholders > 0) {
        const holder *h = &st.holders[0];

        short_owner(h, who, sizeof(who));
        if (strcmp(seen_owner, who) != 0) {
            snprintf(seen_owner, sizeof(seen_owner), "%s", who);
            seen_since_ms = now;
        }
        snprintf(buf, len, "held by %s%s for %s+ (count %lld, %s)", who,
                 st.nholders > 1 ? " and others" : "",
                 cr__cli_fmt_ms(now - seen_since_ms, d, sizeof(d)),
                 (long long)h->count, lease_text(st.ttl_ms, t, sizeof(t)));
    } else if (strcmp(st.kind, "lock") == 0 ||
               (strcmp(st.kind, "none") == 0 &&
                cli->args->command == CR__CLI_LOCK)) {
        snprintf(buf, len, "free");
    } else if (cli->args->command == CR__CLI_LATCH) {
        snprintf(buf, len, "count %lld", (long long)st.value);
    } else if (cli->args->command == CR__CLI_SEMAPHORE) {
        snprintf(buf, len, "%lld available, %lld issued",
                 (long long)(st.has_value ? st.value : 0),
                 (long long)st.permits_len);
        if (st.npermits > 0 && !st.permits[0].never)
            snprintf(buf + strlen(buf), len - strlen(buf),
                     ", next expiry %s",
                     until_text(st.permits[0].expires_ms, st.now_ms, t,
                                sizeof(t)));
    }
    if (st.has_queue) {
        size_t n = strlen(buf);

        snprintf(buf + n, len - n, ", %lld queued", (long long)st.queue_len);
    }
    free_state(&st);
}
