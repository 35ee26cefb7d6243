/* SPDX-License-Identifier: MIT */
/*
 * The cluster routing table. Slots map to node numbers (-1: unknown) in a
 * flat array of 16384 shorts behind a reader-writer lock: every command
 * reads it once, and it changes only on a refresh or a MOVED.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "slot.h"

typedef struct node {
    char host[256];
    int port;
    bool master; /* served a slot in the last map loaded */
} node;

struct cr__slot_map {
    pthread_rwlock_t lock;
    short owner[CR__SLOTS];
    node *nodes;
    int nnodes;
    int cap;
};

cr_status
cr__slot_map_new(cr__slot_map **out)
{
    cr__slot_map *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return CR_ENOMEM;
    pthread_rwlock_init(&m->lock, NULL);
    memset(m->owner, 0xff, sizeof(m->owner)); /* every slot -1 */
    *out = m;
    return CR_OK;
}

void
cr__slot_map_free(cr__slot_map *m)
{
    if (m == NULL)
        return;
    pthread_rwlock_destroy(&m->lock);
    free(m->nodes);
    free(m);
}

int
cr__slot_map_node(cr__slot_map *m, unsigned slot)
{
    int n;

    pthread_rwlock_rdlock(&m->lock);
    n = m->owner[slot & (CR__SLOTS - 1)];
    pthread_rwlock_unlock(&m->lock);
    return n;
}

/* Finds or adds host:port; the write lock is held. */
static int
intern_locked(cr__slot_map *m, const char *host, int port)
{
    int i;

    for (i = 0; i < m->nnodes; i++)
        if (m->nodes[i].port == port && strcasecmp(m->nodes[i].host, host) == 0)
            return i;
    if (strlen(host) >= sizeof(m->nodes[0].host) || port <= 0 ||
        m->nnodes == CR__CLUSTER_MAX_NODES)
        return -1;
    if (m->nnodes == m->cap) {
        int cap = m->cap == 0 ? 8 : m->cap * 2;
        node *grown = realloc(m->nodes, (size_t)cap * sizeof(*grown));

        if (grown == NULL)
            return -1;
        m->nodes = grown;
        m->cap = cap;
    }
    snprintf(m->nodes[m->nnodes].host, sizeof(m->nodes[0].host), "%s", host);
    m->nodes[m->nnodes].port = port;
    m->nodes[m->nnodes].master = false;
    return m->nnodes++;
}

int
cr__slot_map_intern(cr__slot_map *m, const char *host, int port)
{
    int n;

    pthread_rwlock_wrlock(&m->lock);
    n = intern_locked(m, host, port);
    pthread_rwlock_unlock(&m->lock);
    return n;
}

bool
cr__slot_map_addr(cr__slot_map *m, int n, char *host, size_t len, int *port)
{
    bool ok;

    pthread_rwlock_rdlock(&m->lock);
    ok = n >= 0 && n < m->nnodes;
    if (ok) {
        snprintf(host, len, "%s", m->nodes[n].host);
        *port = m->nodes[n].port;
    }
    pthread_rwlock_unlock(&m->lock);
    return ok;
}

int
cr__slot_map_count(cr__slot_map *m)
{
    int n;

    pthread_rwlock_rdlock(&m->lock);
    n = m->nnodes;
    pthread_rwlock_unlock(&m->lock);
    return n;
}

bool
cr__slot_map_is_master(cr__slot_map *m, int n)
{
    bool ok;

    pthread_rwlock_rdlock(&m->lock);
    ok = n >= 0 && n < m->nnodes && m->nodes[n].master;
    pthread_rwlock_unlock(&m->lock);
    return ok;
}

void
cr__slot_map_set(cr__slot_map *m, unsigned slot, int n)
{
    pthread_rwlock_wrlock(&m->lock);
    m->owner[slot & (CR__SLOTS - 1)] = (short)n;
    if (n >= 0 && n < m->nnodes)
        m->nodes[n].master = true;
    pthread_rwlock_unlock(&m->lock);
}

/* Whether `r` is one CLUSTER SLOTS range: [start, end, [host, port, ...],
 * replicas...] with sane numbers. */
static bool
is_range(const cr__reply *r)
{
    const cr__reply *master;

    if (r->type != CR__REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != CR__REPLY_INTEGER ||
        r->element[1]->type != CR__REPLY_INTEGER)
        return false;
    if (r->element[0]->integer < 0 ||
        r->element[1]->integer < r->element[0]->integer ||
        r->element[1]->integer >= CR__SLOTS)
        return false;
    master = r->element[2];
    return master->type == CR__REPLY_ARRAY && master->elements >= 2 &&
           master->element[0]->type == CR__REPLY_STRING &&
           master->element[1]->type == CR__REPLY_INTEGER &&
           master->element[1]->integer > 0 && master->element[1]->integer < 65536;
}

cr_status
cr__slot_map_load(cr__slot_map *m, const cr__reply *slots, int from)
{
    short *owner;
    char from_host[256];
    size_t i;
    int k;

    if (slots == NULL || slots->type != CR__REPLY_ARRAY)
        return cr__fail(CR_ESERVER, "CLUSTER SLOTS: not a slot map");
    for (i = 0; i < slots->elements; i++)
        if (!is_range(slots->element[i]))
            return cr__fail(CR_ESERVER, "CLUSTER SLOTS: malformed range");
    owner = malloc(sizeof(m->owner));
    if (owner == NULL)
        return CR_ENOMEM;
    memset(owner, 0xff, sizeof(m->owner));
    pthread_rwlock_wrlock(&m->lock);
    snprintf(from_host, sizeof(from_host), "%s",
             from >= 0 && from < m->nnodes ? m->nodes[from].host : "");
    for (k = 0; k < m->nnodes; k++)
        m->nodes[k].master = false;
    for (i = 0; i < slots->elements; i++) {
        const cr__reply *r = slots->element[i];
        const cr__reply *master = r->element[2];
        const char *host = master->element[0]->str;
        long long s;
        int n;

        /* Redis 7 answers "" or "?" when a node does not know its own
         * address: it is then the address we asked. */
        if (host[0] == '\0' || strcmp(host, "?") == 0)
            host = from_host;
        n = intern_locked(m, host, (int)master->element[1]->integer);
        if (n < 0)
            continue;
        m->nodes[n].master = true;
        for (s = r->element[0]->integer; s <= r->element[1]->integer; s++)
            owner[s] = (short)n;
    }
    memcpy(m->owner, owner, sizeof(m->owner));
    pthread_rwlock_unlock(&m->lock);
    free(owner);
    return CR_OK;
}

bool
cr__parse_redirect(const char *err, bool *ask, unsigned *slot, char *host,
                   size_t len, int *port)
{
    const char *p, *colon;
    char *end;
    unsigned long s;
    long pt;

    if (strncmp(err, "MOVED ", 6) == 0) {
        *ask = false;
        p = err + 6;
    } else if (strncmp(err, "ASK ", 4) == 0) {
        *ask = true;
        p = err + 4;
    } else {
        return false;
    }
    s = strtoul(p, &end, 10);
    if (end == p || *end != ' ' || s >= CR__SLOTS)
        return false;
    p = end + 1;
    colon = strrchr(p, ':');
    if (colon == NULL || (size_t)(colon - p) >= len)
        return false;
    pt = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || pt <= 0 || pt > 65535)
        return false;
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = '\0';
    *slot = (unsigned)s;
    *port = (int)pt;
    return true;
}

bool
cr__cluster_transient(const char *err, bool *down)
{
    *down = strncmp(err, "CLUSTERDOWN", 11) == 0;
    return *down || strncmp(err, "TRYAGAIN", 8) == 0;
}

int
cr__routing_key(int argc, const char **argv, const size_t *argvlen)
{
    const char *cmd = argv[0];

    (void)argvlen;
    if (strcasecmp(cmd, "EVALSHA") == 0 || strcasecmp(cmd, "EVAL") == 0)
        return argc > 3 && strcmp(argv[2], "0") != 0 ? 3 : -1;
    if (strcasecmp(cmd, "PING") == 0 || strcasecmp(cmd, "PUBLISH") == 0 ||
        strcasecmp(cmd, "WAIT") == 0 || strcasecmp(cmd, "ROLE") == 0 ||
        strcasecmp(cmd, "SCRIPT") == 0 || strcasecmp(cmd, "CLUSTER") == 0 ||
        strcasecmp(cmd, "INFO") == 0 || strcasecmp(cmd, "PUBSUB") == 0 ||
        strcasecmp(cmd, "TIME") == 0)
        return -1;
    return argc > 1 ? 1 : -1;
}
