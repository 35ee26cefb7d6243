/* SPDX-License-Identifier: MIT */
/*
 * The Redis Cluster routing table: which master serves each of the 16384
 * slots, read from CLUSTER SLOTS and corrected by MOVED replies; the parsing
 * of MOVED and ASK redirections; which error replies (TRYAGAIN,
 * CLUSTERDOWN) are waited out; and which key of a command routes it.
 *
 * Nodes are numbered in the order they become known and are never
 * forgotten, so a node number stays valid for the table's life (route.c
 * keeps one connection pool per number).
 *
 * Thread safety: the table has its own lock; every function may be called
 * from any thread. The pure functions need none.
 */
#ifndef CR_CLUSTER_H
#define CR_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "resp.h"

/* The most nodes a table will learn of. */
#define CR__CLUSTER_MAX_NODES 1024

typedef struct cr__slot_map cr__slot_map;

cr_status cr__slot_map_new(cr__slot_map **out);
void cr__slot_map_free(cr__slot_map *m);

/* cr__slot_map_node: the node serving `slot`, or -1 when none is known. */
int cr__slot_map_node(cr__slot_map *m, unsigned slot);

/* cr__slot_map_intern: the number of node host:port, learning it when new;
 * -1 when the table is full or out of memory. */
int cr__slot_map_intern(cr__slot_map *m, const char *host, int port);

/* cr__slot_map_addr: node `node`'s address into host (len bytes) and *port;
 * false for an unknown number. */
bool cr__slot_map_addr(cr__slot_map *m, int node, char *host, size_t len,
                       int *port);

/* cr__slot_map_count: how many nodes are known. */
int cr__slot_map_count(cr__slot_map *m);

/* cr__slot_map_is_master: whether `node` served a slot in the last map. */
bool cr__slot_map_is_master(cr__slot_map *m, int node);

/* cr__slot_map_set: `slot` is served by `node` (after a MOVED). */
void cr__slot_map_set(cr__slot_map *m, unsigned slot, int node);

/* cr__slot_map_load: replace the table with a CLUSTER SLOTS reply read from
 * node `from` (whose host stands in for an empty or "?" endpoint). Slots
 * the reply leaves out become unknown. CR_ESERVER when the reply is not a
 * slot map (the table is then unchanged). */
cr_status cr__slot_map_load(cr__slot_map *m, const cr__reply *slots, int from);

/* cr__parse_redirect: read a "MOVED <slot> <host>:<port>" or "ASK <slot>
 * <host>:<port>" error text. False for any other text. */
bool cr__parse_redirect(const char *err, bool *ask, unsigned *slot,
                        char *host, size_t len, int *port);

/* cr__cluster_transient: whether an error reply's text says the cluster
 * cannot serve the command just now and nothing ran, so that it may be
 * sent again to the same node after a pause: TRYAGAIN (a command naming
 * several keys of a slot being migrated, not all on this node yet) or
 * CLUSTERDOWN (a failover under way; *down is then true, as the slot map
 * may be changing too). The pause starts at CR__CLUSTER_RETRY_MIN_MS and
 * doubles up to CR__CLUSTER_RETRY_MAX_MS, within the command's timeout. */
bool cr__cluster_transient(const char *err, bool *down);
#define CR__CLUSTER_RETRY_MIN_MS 5
#define CR__CLUSTER_RETRY_MAX_MS 100

/* cr__routing_key: the index in argv of the key that routes the command
 * (the first key of EVAL/EVALSHA, the channel of SPUBLISH, else argv[1]),
 * or -1 when it has none (PING, PUBLISH, WAIT, ...: any node will do). */
int cr__routing_key(int argc, const char **argv, const size_t *argvlen);

#endif
