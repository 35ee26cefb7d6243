/* SPDX-License-Identifier: MIT */
/*
 * Introspection (include/credisson/inspect.h): object_inspect.lua reads
 * every layout a name may have in one step; PUBSUB NUMSUB (and SHARDNUMSUB
 * in a cluster) on the semaphore's and the latch's channels tells a plain
 * semaphore from a latch when nothing else does, and on a lock's or a
 * semaphore's channel counts its subscribers; one CLIENT LIST tells which
 * owners' (and waiters') clients are connected, and where.
 *
 * Everything a snapshot points at lives in one arena of allocations freed
 * with it: the caller frees one pointer.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "credisson/inspect.h"
#include "object.h"

/* The most hold keys looked at per reader, and hash fields read. */
#define MAX_READER_HOLDS 64
#define MAX_HASH_FIELDS 10000
/* Redisson's "never expires" score of an expirable permit. */
#define PERMIT_NEVER 922337203685477LL

/* A snapshot and the strings it owns. */
typedef struct arena {
    cr_object_info info;
    char **strings;
    size_t nstrings, capstrings;
} arena;

/* A copy of n bytes of s kept by the arena; NULL when out of memory. */
static char *
keep(arena *a, const char *s, size_t n)
{
    char *copy;

    if (a->nstrings == a->capstrings) {
        size_t cap = a->capstrings ? a->capstrings * 2 : 32;
        char **grown = realloc(a->strings, cap * sizeof(*grown));

        if (grown == NULL)
            return NULL;
        a->strings = grown;
        a->capstrings = cap;
    }
    if ((copy = malloc(n + 1)) == NULL)
        return NULL;
    memcpy(copy, s, n);
    copy[n] = '\0';
    a->strings[a->nstrings++] = copy;
    return copy;
}

void
cr_object_info_free(cr_object_info *info)
{
    arena *a = (arena *)info; /* info is the arena's first member */
    size_t i;

    if (info == NULL)
        return;
    for (i = 0; i < a->nstrings; i++)
        free(a->strings[i]);
    free(a->strings);
    free(info->holders);
    free(info->queue);
    free(info->permits);
    for (i = 0; i < info->nconditions; i++)
        free(info->conditions[i].waiters);
    free(info->conditions);
    free(info->waiting_parties);
    free(info->line);
    free(a);
}

const char *
cr_object_kind_name(cr_object_kind kind)
{
    switch (kind) {
    case CR_OBJECT_NONE: return "none";
    case CR_OBJECT_LOCK: return "lock";
    case CR_OBJECT_FAIR_LOCK: return "fair-lock";
    case CR_OBJECT_RWLOCK: return "rwlock";
    case CR_OBJECT_SEMAPHORE: return "semaphore";
    case CR_OBJECT_PERMIT_SEMAPHORE: return "expirable-semaphore";
    case CR_OBJECT_LATCH: return "latch";
    case CR_OBJECT_SEMAPHORE_OR_LATCH: return "semaphore-or-latch";
    case CR_OBJECT_OTHER: return "other";
    case CR_OBJECT_BARRIER: return "barrier";
    case CR_OBJECT_RATE_LIMITER: return "rate-limiter";
    }
    return "unknown";
}

/* ------------------------------------------------------------- reading */

/* The reply's string as an integer (a score may have a fraction: its
 * whole part). */
static bool
reply_num(const cr__reply *r, int64_t *out)
{
    char buf[64], *end;
    double d;

    if (cr__reply_int(r, out))
        return true;
    if (r->type != CR__REPLY_STRING || r->len == 0 || r->len >= sizeof(buf))
        return false;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    d = strtod(buf, &end);
    if (*end != '\0' || d != d || d > 9.2e18 || d < -9.2e18)
        return false;
    *out = (int64_t)d;
    return true;
}

/* Whether the element is a string (an array element the script gave). */
static bool
is_str(const cr__reply *r)
{
    return r->type == CR__REPLY_STRING || r->type == CR__REPLY_STATUS;
}

/* The integer value of field `name` in the flat HGETALL `hash`; false
 * when it has none. */
static bool
hash_num(const cr__reply *hash, const char *name, int64_t *out)
{
    size_t i, n = strlen(name);

    for (i = 0; i + 1 < hash->elements; i += 2) {
        const cr__reply *f = hash->element[i];

        if (is_str(f) && f->len == n && memcmp(f->str, name, n) == 0)
            return cr__reply_int(hash->element[i + 1], out);
    }
    return false;
}

/* Tells a barrier's and a rate limiter's hash by their fields (their
 * protocols in doc/coordination.md) and reads them; true when it was one
 * of them. */
static bool
read_coordination(cr_object_info *in, const cr__reply *hash)
{
    int64_t broken = 0;

    if (hash_num(hash, "parties", &in->parties) &&
        hash_num(hash, "generation", &in->generation) &&
        hash_num(hash, "arrived", &in->waiting)) {
        in->broken = hash_num(hash, "broken", &broken) && broken == 1;
        in->kind = CR_OBJECT_BARRIER;
        return true;
    }
    if (hash_num(hash, "rate", &in->rate) &&
        hash_num(hash, "interval", &in->interval_ms) &&
        hash_num(hash, "type", &in->rate_type)) {
        hash_num(hash, "keepAliveTime", &in->keep_alive_ms);
        in->kind = CR_OBJECT_RATE_LIMITER;
        return true;
    }
    in->parties = in->generation = in->waiting = 0;
    in->rate = in->interval_ms = in->rate_type = 0;
    return false;
}

/* Fills the holders and the mode from the script's hash and readers (a
 * barrier or a rate limiter has none). */
static bool
read_holders(arena *a, const cr__reply *hash, const cr__reply *readers)
{
    cr_object_info *in = &a->info;
    size_t i, k;

    if (hash->type != CR__REPLY_ARRAY || read_coordination(in, hash))
        return true;
    in->holders = calloc(hash->elements / 2 + 1, sizeof(*in->holders));
    if (in->holders == NULL)
        return false;
    for (i = 0; i + 1 < hash->elements; i += 2) {
        const cr__reply *f = hash->element[i], *v = hash->element[i + 1];
        cr_holder_info *h = &in->holders[in->nholders];

        if (!is_str(f) || !is_str(v))
            continue;
        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0) {
            in->mode = strcmp(v->str, "read") == 0 ? "read"
                       : strcmp(v->str, "write") == 0 ? "write" : "unknown";
            continue;
        }
        if (!cr__reply_int(v, &h->count)) {
            in->kind = CR_OBJECT_OTHER; /* a hash whose values are no counts */
            continue;
        }
        if ((h->who.owner = keep(a, f->str, f->len)) == NULL)
            return false;
        h->who.owner_len = f->len;
        h->writer = cr__name_is_writer(f->str, f->len);
        h->ttl_ms = -2;
        for (k = 0; readers->type == CR__REPLY_ARRAY &&
                    k + 1 < readers->elements; k += 2)
            if (readers->element[k]->len == f->len &&
                memcmp(readers->element[k]->str, f->str, f->len) == 0)
                cr__reply_int(readers->element[k + 1], &h->ttl_ms);
        in->nholders++;
    }
    for (i = 0; in->mode == NULL && i < in->nholders; i++)
        in->holders[i].ttl_ms = in->ttl_ms;
    return true;
}

/* Fills the fair lock's queue. */
static bool
read_queue(arena *a, const cr__reply *q)
{
    cr_object_info *in = &a->info;
    size_t i;

    if (q->type != CR__REPLY_ARRAY || q->elements == 0)
        return true;
    in->queue = calloc(q->elements / 2 + 1, sizeof(*in->queue));
    if (in->queue == NULL)
        return false;
    for (i = 0; i + 1 < q->elements; i += 2) {
        cr_waiter_info *w = &in->queue[in->nqueue];

        if (!is_str(q->element[i]))
            continue;
        if ((w->who.owner = keep(a, q->element[i]->str,
                                 q->element[i]->len)) == NULL)
            return false;
        w->who.owner_len = q->element[i]->len;
        w->has_deadline = reply_num(q->element[i + 1], &w->deadline_ms);
        in->nqueue++;
    }
    return true;
}

/* Whether stored id `m` is hex text already (Redisson before 3.17). */
static bool
is_hex_id(const cr__reply *m)
{
    if (m->len != 32)
        return false;
    for (size_t i = 0; i < m->len; i++)
        if (!((m->str[i] >= '0' && m->str[i] <= '9') ||
              (m->str[i] >= 'a' && m->str[i] <= 'f')))
            return false;
    return true;
}

/* Fills the issued permits (ids are raw bytes, shown as hex, or before
 * Redisson 3.17 hex text, shown as it is). */
static bool
read_permits(arena *a, const cr__reply *p)
{
    cr_object_info *in = &a->info;
    size_t i;

    if (p->type != CR__REPLY_ARRAY || p->elements == 0)
        return true;
    in->permits = calloc(p->elements / 2 + 1, sizeof(*in->permits));
    if (in->permits == NULL)
        return false;
    for (i = 0; i + 1 < p->elements; i += 2) {
        cr_permit_info *e = &in->permits[in->npermits];
        const cr__reply *m = p->element[i];

        if (!is_str(m) || !reply_num(p->element[i + 1], &e->expires_ms))
            continue;
        if (is_hex_id(m)) {
            memcpy(e->id, m->str, m->len);
            e->id[m->len] = '\0';
        } else {
            cr__hex((const unsigned char *)m->str, m->len < 32 ? m->len : 32,
                    e->id);
        }
        e->never = e->expires_ms >= PERMIT_NEVER;
        in->npermits++;
    }
    return true;
}

/* Fills a lock's conditions: { C, waiting, { waiter, state, lease }... }
 * each. */
static bool
read_conditions(arena *a, const cr__reply *p)
{
    cr_object_info *in = &a->info;

    if (p->type != CR__REPLY_ARRAY || p->elements == 0)
        return true;
    in->conditions = calloc(p->elements, sizeof(*in->conditions));
    if (in->conditions == NULL)
        return false;
    for (size_t i = 0; i < p->elements; i++) {
        const cr__reply *c = p->element[i], *w;
        cr_condition_info *ci = &in->conditions[in->nconditions];

        if (c->type != CR__REPLY_ARRAY || c->elements != 3 ||
            !is_str(c->element[0]) || !reply_num(c->element[1], &ci->waiting) ||
            (w = c->element[2])->type != CR__REPLY_ARRAY)
            continue;
        if ((ci->name = keep(a, c->element[0]->str, c->element[0]->len)) ==
                NULL ||
            (w->elements > 0 &&
             (ci->waiters = calloc(w->elements / 3 + 1,
                                   sizeof(*ci->waiters))) == NULL))
            return false;
        in->nconditions++;
        for (size_t j = 0; j + 2 < w->elements; j += 3) {
            cr_condition_waiter_info *e = &ci->waiters[ci->nwaiters];
            const cr__reply *who = w->element[j], *state = w->element[j + 1];

            if (!is_str(who) || !is_str(state))
                continue;
            if ((e->who.owner = keep(a, who->str, who->len)) == NULL)
                return false;
            e->who.owner_len = who->len;
            e->signalled = state->len == 1 && state->str[0] == 's';
            e->has_lease = reply_num(w->element[j + 2], &e->lease_ms);
            ci->nwaiters++;
        }
    }
    return true;
}

/* Fills the barrier's waiting parties: { owner, lease, index, since }
 * each, put in the order they arrived (the highest index first). */
static bool
read_parties(arena *a, const cr__reply *p)
{
    cr_object_info *in = &a->info;
    size_t i, j;

    if (p->type != CR__REPLY_ARRAY || p->elements < 4)
        return true;
    in->waiting_parties = calloc(p->elements / 4, sizeof(cr_party_info));
    if (in->waiting_parties == NULL)
        return false;
    for (i = 0; i + 3 < p->elements; i += 4) {
        cr_party_info *e = &in->waiting_parties[in->nwaiting_parties];
        const cr__reply *who = p->element[i];

        if (!is_str(who) || !reply_num(p->element[i + 1], &e->lease_ms))
            continue;
        if ((e->who.owner = keep(a, who->str, who->len)) == NULL)
            return false;
        e->who.owner_len = who->len;
        e->has_index = reply_num(p->element[i + 2], &e->index);
        e->has_since = reply_num(p->element[i + 3], &e->since_ms);
        in->nwaiting_parties++;
    }
    /* Insertion sort: a round has few parties listed. */
    for (i = 1; i < in->nwaiting_parties; i++) {
        cr_party_info e = in->waiting_parties[i];

        for (j = i; j > 0 && in->waiting_parties[j - 1].index < e.index; j--)
            in->waiting_parties[j] = in->waiting_parties[j - 1];
        in->waiting_parties[j] = e;
    }
    return true;
}

/* Fills credisson's waiting line: { entry, lease, turn, permits, writer,
 * since } each, in line order (the five "" when its state is missing). */
static bool
read_line(arena *a, const cr__reply *p)
{
    cr_object_info *in = &a->info;

    if (p->type != CR__REPLY_ARRAY || p->elements < 6)
        return true;
    in->line = calloc(p->elements / 6, sizeof(*in->line));
    if (in->line == NULL)
        return false;
    for (size_t i = 0; i + 5 < p->elements; i += 6) {
        cr_line_waiter_info *e = &in->line[in->nline];
        cr__reply *const *f = &p->element[i + 1];
        const cr__reply *who = p->element[i];
        int64_t turn = 0, writer = 0;

        if (!is_str(who))
            continue;
        if ((e->who.owner = keep(a, who->str, who->len)) == NULL)
            return false;
        e->who.owner_len = who->len;
        e->has_state = reply_num(f[0], &e->lease_ms) &&
                       reply_num(f[1], &turn) &&
                       reply_num(f[2], &e->permits) &&
                       reply_num(f[3], &writer) &&
                       reply_num(f[4], &e->since_ms);
        if (e->has_state) {
            e->turn = turn == 1;
            e->writer = writer == 1;
        } else {
            e->lease_ms = e->permits = e->since_ms = 0;
        }
        in->nline++;
    }
    return true;
}

/* Counts the subscribers of the channels `names` (n of them, at most 2)
 * into counts: PUBSUB NUMSUB, with SHARDNUMSUB added in a cluster. False
 * when they cannot be counted. */
static bool
count_subscribers(const cr__op *op, cr_client *c, const cr__name_id *names,
                  int n, const char *raw, int64_t *counts)
{
    static const char *const kinds[2] = {"NUMSUB", "SHARDNUMSUB"};
    char *ch[2] = {NULL, NULL};
    bool ok = true;
    int k, i;

    for (i = 0; i < n; i++) {
        counts[i] = 0;
        ok = ok && (ch[i] = cr__name(names[i], raw)) != NULL;
    }
    for (k = 0; ok && k < (c->url.is_cluster ? 2 : 1); k++) {
        const char *argv[4] = {"PUBSUB", kinds[k], ch[0], ch[1]};
        cr__reply *r = NULL;

        ok = cr__command_retry(op, 2 + n, argv, NULL, &r) == CR_OK &&
             r->type == CR__REPLY_ARRAY && r->elements == (size_t)(2 * n);
        for (i = 0; ok && i < n; i++) {
            int64_t v = 0;

            ok = cr__reply_int(r->element[2 * i + 1], &v);
            counts[i] += v;
        }
        cr__reply_free(r);
    }
    for (i = 0; i < n; i++)
        free(ch[i]);
    return ok;
}

/* Counts the subscribers of the semaphore's and the latch's channels
 * (the only trace that tells a plain semaphore from a latch); false when
 * they cannot be counted. */
static bool
listeners(const cr__op *op, cr_client *c, const char *raw, int64_t *sem,
          int64_t *latch)
{
    static const cr__name_id both[2] = {CR__NAME_SEMAPHORE_CHANNEL,
                                          CR__NAME_LATCH_CHANNEL};
    int64_t counts[2];

    *sem = *latch = 0;
    if (!count_subscribers(op, c, both, 2, raw, counts))
        return false;
    *sem = counts[0];
    *latch = counts[1];
    return true;
}

/* Counts the connections subscribed to the channel of a lock that is not
 * fair or of a semaphore into in->subscribers (-1 for other kinds, or
 * when they cannot be counted). `sem` is the semaphore channel's count
 * when it was read already (-1 if not). */
static void
subscribers(const cr__op *op, cr_client *c, cr_object_info *in,
            const char *raw, int64_t sem)
{
    cr__name_id ch;

    in->subscribers = -1;
    switch (in->kind) {
    case CR_OBJECT_LOCK: ch = CR__NAME_LOCK_CHANNEL; break;
    case CR_OBJECT_RWLOCK: ch = CR__NAME_RWLOCK_CHANNEL; break;
    case CR_OBJECT_SEMAPHORE:
    case CR_OBJECT_PERMIT_SEMAPHORE:
    case CR_OBJECT_SEMAPHORE_OR_LATCH:
        if (sem >= 0) {
            in->subscribers = sem;
            return;
        }
        ch = CR__NAME_SEMAPHORE_CHANNEL;
        break;
    default:
        return;
    }
    if (!count_subscribers(op, c, &ch, 1, raw, &in->subscribers))
        in->subscribers = -1;
    cr__clear_error();
}

/* Decides the kind from what was read (what read_holders marked OTHER
 * stays so). */
static void
classify(cr_object_info *in, const char *type, bool has_queue, int64_t sem,
         int64_t latch)
{
    if (in->kind == CR_OBJECT_OTHER || in->kind == CR_OBJECT_BARRIER ||
        in->kind == CR_OBJECT_RATE_LIMITER)
        return;
    if (strcmp(type, "hash") == 0)
        in->kind = in->mode != NULL ? CR_OBJECT_RWLOCK
                   : has_queue ? CR_OBJECT_FAIR_LOCK : CR_OBJECT_LOCK;
    else if (strcmp(type, "string") == 0)
        in->kind = !in->has_value ? CR_OBJECT_OTHER
                   : in->issued_count > 0 ? CR_OBJECT_PERMIT_SEMAPHORE
                   : latch > 0 && sem == 0 ? CR_OBJECT_LATCH
                   : (sem > 0 || in->line_length > 0) && latch == 0
                       ? CR_OBJECT_SEMAPHORE /* a latch has no line */
                   : CR_OBJECT_SEMAPHORE_OR_LATCH;
    else if (strcmp(type, "none") == 0)
        in->kind = has_queue ? CR_OBJECT_FAIR_LOCK
                   : in->has_token || in->nconditions > 0 ? CR_OBJECT_LOCK
                   : in->issued_count > 0 ? CR_OBJECT_PERMIT_SEMAPHORE
                   : CR_OBJECT_NONE;
    else
        in->kind = CR_OBJECT_OTHER;
}

/* The names object_inspect.lua is given: its keys, and the condition
 * prefixes it makes keys of. */
#define NKEYS 12

/* Runs object_inspect.lua for `raw` and fills the snapshot from it. */
static cr_status
read_object(const cr__op *op, cr_client *c, arena *a, const char *raw)
{
    cr_object_info *in = &a->info;
    char *keys[NKEYS], *kp;
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL, **e;
    int64_t sem = 0, latch = 0, sem_read = -1;
    bool has_queue;
    cr_status rc = CR_ENOMEM;
    int i;

    keys[0] = strdup(raw);
    keys[1] = cr__name(CR__NAME_FAIR_QUEUE, raw);
    keys[2] = cr__name(CR__NAME_FAIR_TIMEOUTS, raw);
    keys[3] = cr__name(CR__NAME_FENCE_TOKEN, raw);
    keys[4] = cr__name(CR__NAME_PERMIT_TIMEOUTS, raw);
    keys[5] = cr__name(CR__NAME_CONDITIONS, raw);
    keys[6] = cr__name(CR__NAME_CONDITION, raw);
    keys[7] = cr__name(CR__NAME_CONDITION_QUEUE, raw);
    keys[8] = cr__name(CR__NAME_CONDITION_LEASES, raw);
    keys[9] = cr__name(CR__NAME_BARRIER_ARRIVALS, raw);
    keys[10] = cr__name(CR__NAME_LINE, raw);
    keys[11] = cr__name(CR__NAME_LINE_STATE, raw);
    kp = cr__name(CR__NAME_KEY_PREFIX, raw);
    for (i = 0; i < NKEYS; i++)
        if (keys[i] == NULL)
            goto out;
    if (kp == NULL)
        goto out;
    rc = cr__run_object_inspect(op, &cmd,
        &(cr__object_inspect_args){
            .object = keys[0], .queue = keys[1], .timeouts = keys[2],
            .token = keys[3], .permits = keys[4], .conditions = keys[5],
            .arrivals = keys[9], .line = keys[10], .line_state = keys[11],
            .most_listed = CR_INSPECT_MAX_LISTED,
            .most_holds = MAX_READER_HOLDS, .key_prefix = kp,
            .most_fields = MAX_HASH_FIELDS, .cond_prefix = keys[6],
            .queue_prefix = keys[7], .leases_prefix = keys[8]},
        &r);
    if (rc != CR_OK)
        goto out;
    rc = CR_ESCRIPT;
    if (r->type != CR__REPLY_ARRAY || r->elements != 15 ||
        !is_str(r->element[0]))
        goto out;
    e = r->element;
    snprintf(in->redis_type, sizeof(in->redis_type), "%s", e[0]->str);
    if (!cr__reply_int(e[1], &in->ttl_ms) || !cr__reply_int(e[2], &in->now_ms) ||
        !cr__reply_int(e[5], &in->queue_length) ||
        !cr__reply_int(e[9], &in->issued_count) ||
        !cr__reply_int(e[13], &in->line_length))
        goto out;
    if (is_str(e[3]) && strcmp(e[3]->str, "big") == 0)
        in->kind = CR_OBJECT_OTHER;
    in->has_token = is_str(e[7]) && cr__reply_int(e[7], &in->token);
    in->has_value = is_str(e[8]) && cr__reply_int(e[8], &in->value);
    rc = CR_ENOMEM;
    if (!read_holders(a, e[3], e[4]) || !read_queue(a, e[6]) ||
        !read_permits(a, e[10]) || !read_conditions(a, e[11]) ||
        !read_parties(a, e[12]) || !read_line(a, e[14]))
        goto out;
    has_queue = in->queue_length != 0;
    if (strcmp(in->redis_type, "string") == 0 && in->has_value &&
        in->issued_count == 0) {
        if (listeners(op, c, raw, &sem, &latch))
            sem_read = sem;
        else
            sem = latch = 0; /* cannot tell: ambiguous */
        cr__clear_error();
    }
    classify(in, in->redis_type, has_queue, sem, latch);
    if (in->kind != CR_OBJECT_BARRIER)
        in->nwaiting_parties = 0; /* a zset of that name, not a barrier's */
    subscribers(op, c, in, raw, sem_read);
    rc = CR_OK;
out:
    cr__reply_free(r);
    for (i = 0; i < NKEYS; i++)
        free(keys[i]);
    free(kp);
    if (rc == CR_ESCRIPT)
        rc = cr__fail(CR_ESCRIPT, "object_inspect.lua answered out of shape");
    return rc;
}

/* ------------------------------------------------------------ presence */

/* One connection of CLIENT LIST: its name and address (into the line). */
typedef struct conn_entry {
    const char *name;
    size_t name_len;
    const char *addr;
    size_t addr_len;
} conn_entry;

/* Finds field `key` ("name=") in the CLIENT LIST line [p, end); its value
 * runs to the next space. */
static bool
field(const char *p, const char *end, const char *key, const char **v,
      size_t *len)
{
    size_t k = strlen(key);

    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *stop = sp != NULL ? sp : end;

        if ((size_t)(stop - p) >= k && memcmp(p, key, k) == 0) {
            *v = p + k;
            *len = (size_t)(stop - p) - k;
            return true;
        }
        p = stop + 1;
    }
    return false;
}

/* Sets the presence of `who` from the client list `list`: connected when
 * a connection is named "credisson/<its client id>/<host>/<pid>". */
static bool
place(arena *a, cr_owner_info *who, const char *list, size_t len,
      bool unnamed)
{
    const char *p = list, *end = list + len;
    const char *colon = memchr(who->owner, ':', who->owner_len);
    size_t idlen = colon != NULL ? (size_t)(colon - who->owner) : 0;

    who->presence = unnamed ? CR_PRESENCE_UNKNOWN : CR_PRESENCE_GONE;
    while (idlen > 0 && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl != NULL ? nl : end, *name, *addr, *host;
        size_t nlen, alen, hostlen;
        long pid;

        if (field(p, stop, "name=", &name, &nlen) &&
            cr__name_client_parse(name, nlen, who->owner, idlen, &host,
                                  &hostlen, &pid)) {
            who->presence = CR_PRESENCE_CONNECTED;
            if (host != NULL) {
                if ((who->host = keep(a, host, hostlen)) == NULL)
                    return false;
                who->pid = pid;
            }
            if (field(p, stop, "addr=", &addr, &alen) &&
                (who->addr = keep(a, addr, alen)) == NULL)
                return false;
            return true;
        }
        p = stop + 1;
    }
    return true;
}

/* Reads CLIENT LIST once and places every owner of the snapshot. A list
 * that cannot be read (refused to a least-privileged user) leaves them
 * all unknown. */
static bool
read_presence(const cr__op *op, arena *a)
{
    const char *argv[2] = {"CLIENT", "LIST"};
    cr_object_info *in = &a->info;
    cr__reply *r = NULL;
    const char *p, *end;
    bool unnamed = false, ok = true;
    size_t i, waiters = 0;

    for (i = 0; i < in->nconditions; i++)
        waiters += in->conditions[i].nwaiters;
    if (in->nholders + in->nqueue + waiters + in->nwaiting_parties +
            in->nline == 0)
        return true;
    if (cr__command_retry(op, 2, argv, NULL, &r) != CR_OK ||
        r->type != CR__REPLY_STRING) {
        cr__reply_free(r);
        cr__clear_error();
        return true;
    }
    in->presence_read = true;
    /* Unnamed connections (a Java client without clientName) may be any
     * owner's: an owner not found is then unknown, not gone. */
    for (p = r->str, end = r->str + r->len; p < end && !unnamed;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl != NULL ? nl : end, *name;
        size_t nlen;

        unnamed = field(p, stop, "name=", &name, &nlen) && nlen == 0;
        p = stop + 1;
    }
    for (i = 0; ok && i < in->nholders; i++)
        ok = place(a, &in->holders[i].who, r->str, r->len, unnamed);
    for (i = 0; ok && i < in->nqueue; i++)
        ok = place(a, &in->queue[i].who, r->str, r->len, unnamed);
    for (i = 0; ok && i < in->nconditions; i++)
        for (size_t j = 0; ok && j < in->conditions[i].nwaiters; j++)
            ok = place(a, &in->conditions[i].waiters[j].who, r->str, r->len,
                       unnamed);
    for (i = 0; ok && i < in->nwaiting_parties; i++)
        ok = place(a, &in->waiting_parties[i].who, r->str, r->len, unnamed);
    for (i = 0; ok && i < in->nline; i++)
        ok = place(a, &in->line[i].who, r->str, r->len, unnamed);
    cr__reply_free(r);
    return ok;
}

cr_status
cr_object_inspect(cr_client *c, const char *name, cr_object_info **out)
{
    arena *a;
    char *raw = NULL;
    cr__op op;
    cr_status rc;

    cr__clear_error();
    if (out == NULL)
        return cr__fail(CR_EINVAL, "out is NULL");
    if ((rc = cr__name_check(name)) != CR_OK)
        return rc;
    if ((rc = cr__client_enter(c, &op)) != CR_OK)
        return rc;
    a = calloc(1, sizeof(*a));
    if (a == NULL || (raw = cr__name_raw(c->name_prefix, name)) == NULL ||
        (a->info.key = keep(a, raw, strlen(raw))) == NULL) {
        rc = CR_ENOMEM;
    } else if ((rc = cr__name_check_slots(c->url.is_cluster, raw, NULL)) == CR_OK &&
               (rc = read_object(&op, c, a, raw)) == CR_OK &&
               !read_presence(&op, a)) {
        rc = CR_ENOMEM;
    }
    free(raw);
    cr__client_leave(c);
    if (rc != CR_OK) {
        cr_object_info_free(a != NULL ? &a->info : NULL);
        return rc;
    }
    *out = &a->info;
    return CR_OK;
}
