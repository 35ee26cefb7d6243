/* SPDX-License-Identifier: MIT */
/*
 * The command transport a client holds: which server's pool (transport.h)
 * each command goes to. Standalone and with Sentinel there is one pool.
 *
 * In a Redis Cluster there is one pool per master, made on first use,
 * and each command goes to the master of its routing key's slot (the
 * table in cluster.c). MOVED corrects the table and sends the command
 * again; ASK sends it once to the named node after ASKING; TRYAGAIN (a
 * multi-key script on a slot being migrated) and CLUSTERDOWN are retried
 * with a short backoff; a broken link or CLUSTERDOWN re-reads the map.
 *
 * Lock order: the refresh mutex may be held while a pool connection is
 * taken (to read the map); the nodes mutex only while a node's pool is
 * found or made (the map's lock is taken inside it).
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "route.h"
#include "slot.h"

/* Cluster: the slot map re-read at least this often, and never more often
 * than the second figure. */
#define REFRESH_PERIOD_MS 10000
#define REFRESH_MIN_GAP_MS 100

struct cr__transport {
    cr__conn_config cfg;
    int pool_size;
    cr__pool *single;      /* standalone and Sentinel */
    cr__slot_map *map;     /* cluster: NULL otherwise */
    pthread_mutex_t nodes_mu;
    cr__pool *nodes[CR__CLUSTER_MAX_NODES]; /* by node number, made on use */
    pthread_mutex_t refresh_mu;
    _Atomic int64_t refreshed_at;
    atomic_bool refresh_due;
};

/* ---------------------------------------------------------------- cluster */

/* The pool of cluster node `n`, made on first use; NULL when out of
 * memory or unknown. */
static cr__pool *
node_pool(cr__transport *t, int n)
{
    char host[256];
    int port;
    cr__pool *p;

    if (n < 0 || n >= CR__CLUSTER_MAX_NODES)
        return NULL;
    pthread_mutex_lock(&t->nodes_mu);
    p = t->nodes[n];
    if (p == NULL && cr__slot_map_addr(t->map, n, host, sizeof(host), &port))
        p = t->nodes[n] = cr__pool_new(&t->cfg, t->pool_size, host, port);
    pthread_mutex_unlock(&t->nodes_mu);
    return p;
}

/* Asks node `n` for the slot map and loads it; CR_OK when loaded. */
static cr_status
refresh_from(cr__transport *t, const cr__op *op, int n)
{
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    cr__pool *p = node_pool(t, n);
    cr__cmd cmd = {.op = op};
    cr__reply *r = NULL;
    cr_status rc;

    if (p == NULL)
        return CR_ENOMEM;
    rc = cr__pool_command(p, &cmd, 2, argv, NULL, &r, false);
    if (rc == CR_OK && r->type == CR__REPLY_ERROR)
        rc = cr__fail(CR_ESERVER, "CLUSTER SLOTS: %s", r->str);
    else if (rc == CR_OK)
        rc = cr__slot_map_load(t->map, r, n);
    cr__reply_free(r);
    return rc;
}

/* Reads the slot map again, within operation `op` (may be NULL): from the
 * known masters first, then from every other node known (the seeds among
 * them), until one answers. Unless `force`, does nothing when another
 * thread refreshed it just now. */
static cr_status
refresh(cr__transport *t, const cr__op *op, bool force)
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
                rc = refresh_from(t, op, n);
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

/* Slot `slot` is served by node `node` now (a MOVED said so): the map is
 * corrected at once, and read again before the next command. */
static void
moved(cr__transport *t, unsigned slot, int node)
{
    cr__slot_map_set(t->map, slot, node);
    atomic_store(&t->refresh_due, true);
}

/* One command in a cluster: routed by its key's slot, following MOVED and
 * ASK, waiting out TRYAGAIN and CLUSTERDOWN for up to the command timeout,
 * and re-reading the map after a broken link. */
static cr_status
cluster_command(cr__transport *t, cr__cmd *cmd, int argc, const char **argv,
                const size_t *argvlen, cr__reply **out)
{
    unsigned flags = cmd->flags;
    int k = cr__routing_key(argc, argv, argvlen);
    unsigned slot = k < 0 ? 0 : cr__key_slot(argv[k], argvlen != NULL ?
                                             argvlen[k] : strlen(argv[k]));
    int64_t deadline = cr__cmd_deadline(cmd, t->cfg.command_timeout_ms);
    int64_t backoff = CR__CLUSTER_RETRY_MIN_MS;
    int redirects = 0, node = -1;
    bool asking = false, down;
    cr_status rc;

    if (atomic_load(&t->refresh_due) ||
        cr__now_ms() - atomic_load(&t->refreshed_at) > REFRESH_PERIOD_MS)
        refresh(t, cmd->op, false);
    for (;;) {
        char host[256];
        unsigned moved_slot;
        int port;
        bool ask;
        cr__pool *p;

        if (!asking && (node = cr__slot_map_node(t->map, slot)) < 0 &&
            (refresh(t, cmd->op, false) != CR_OK ||
             (node = cr__slot_map_node(t->map, slot)) < 0))
            return cr__fail(CR_EIO, "%s: no cluster node serves slot %u",
                            argv[0], slot);
        if ((p = node_pool(t, node)) == NULL)
            return CR_ENOMEM;
        rc = cr__pool_command(p, cmd, argc, argv, argvlen, out, asking);
        asking = false;
        if (rc == CR_EIO) {
            /* The node may be gone: a failover moves its slots. A command
             * safe to send again follows them when they moved. */
            int was = node;

            if (refresh(t, cmd->op, false) != CR_OK || !(flags & CR__CMD_RETRY) ||
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
            cr__event(t->cfg.stats, CR_EVENT_REDIRECT, CR_OK, NULL, NULL, -1,
                      -1, false);
            node = cr__slot_map_intern(t->map, host, port);
            if (node < 0)
                return CR_OK;
            if (ask)
                asking = true;
            else
                moved(t, moved_slot, node);
        } else if (cr__cluster_transient((*out)->str, &down)) {
            if (cr__now_ms() + backoff > deadline) {
                rc = cr__fail(CR_EIO, "%s: %s", argv[0], (*out)->str);
                cr__reply_free(*out);
                *out = NULL;
                return rc;
            }
            if (down)
                refresh(t, cmd->op, false);
            cr__sleep_ms(backoff);
            backoff = backoff * 2 > CR__CLUSTER_RETRY_MAX_MS
                          ? CR__CLUSTER_RETRY_MAX_MS : backoff * 2;
        } else {
            return CR_OK;
        }
        cr__reply_free(*out);
        *out = NULL;
    }
}

/* Learns the seed nodes and reads the first slot map, within `op`. */
static cr_status
cluster_start(cr__transport *t, const cr__op *op)
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
        if ((rc = refresh_from(t, op, (int)i)) == CR_OK)
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
        refresh(t, NULL, false);
}

void
cr__transport_moved(cr__transport *t, unsigned slot, const char *host,
                    int port)
{
    int node;

    if (t->map != NULL && (node = cr__slot_map_intern(t->map, host, port)) >= 0)
        moved(t, slot, node);
}

void
cr__transport_refresh_due(cr__transport *t)
{
    if (t->map != NULL)
        atomic_store(&t->refresh_due, true);
}

/* -------------------------------------------------------------- transport */

cr_status
cr__transport_new(const cr__op *op, const cr__conn_config *cfg,
                  int pool_size, cr__transport **out)
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
        rc = cluster_start(t, op);
    } else if ((t->single = cr__pool_new(&t->cfg, pool_size, NULL, 0)) ==
               NULL) {
        rc = CR_ENOMEM;
    } else {
        /* Open one connection now to report an unreachable server. */
        rc = cr__pool_open(t->single,
                           cr__op_deadline_in(op, cfg->connect_timeout_ms +
                                                      cfg->command_timeout_ms));
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
    cr__pool_free(t->single);
    for (i = 0; i < CR__CLUSTER_MAX_NODES; i++)
        cr__pool_free(t->nodes[i]);
    cr__slot_map_free(t->map);
    pthread_mutex_destroy(&t->nodes_mu);
    pthread_mutex_destroy(&t->refresh_mu);
    free(t);
}

cr_status
cr__transport_command(cr__transport *t, cr__cmd *cmd, int argc,
                      const char **argv, const size_t *argvlen,
                      cr__reply **out)
{
    if (t->map != NULL)
        return cluster_command(t, cmd, argc, argv, argvlen, out);
    return cr__pool_command(t->single, cmd, argc, argv, argvlen, out, false);
}

void
cr__transport_send_noreply(cr__transport *t, const cr__op *op, int argc,
                           const char **argv, const size_t *argvlen)
{
    cr__pool *p = t->single;

    if (t->map != NULL) {
        int k = cr__routing_key(argc, argv, argvlen);
        unsigned slot = k < 0 ? 0 : cr__key_slot(argv[k], argvlen != NULL ?
                                                 argvlen[k] : strlen(argv[k]));

        /* A stale map sends it to the wrong node: its MOVED is dropped and
         * the key expires by itself. */
        if ((p = node_pool(t, cr__slot_map_node(t->map, slot))) == NULL)
            return;
    }
    cr__pool_send_noreply(p, op, argc, argv, argvlen);
}

void
cr__transport_upkeep(cr__transport *t, int64_t stale_before, bool open)
{
    cr__pool *pools[CR__CLUSTER_MAX_NODES];
    int i, n = 0;

    if (t->map == NULL) {
        cr__pool_upkeep(t->single, stale_before, open);
        return;
    }
    /* A pool, once made, lives as long as the transport. */
    pthread_mutex_lock(&t->nodes_mu);
    for (i = 0; i < CR__CLUSTER_MAX_NODES; i++)
        if (t->nodes[i] != NULL)
            pools[n++] = t->nodes[i];
    pthread_mutex_unlock(&t->nodes_mu);
    for (i = 0; i < n; i++)
        cr__pool_upkeep(pools[i], stale_before, open);
}

void
cr__transport_master_moved(cr__transport *t)
{
    if (t->single != NULL)
        cr__pool_close_stale(t->single);
}
