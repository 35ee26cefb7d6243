/* SPDX-License-Identifier: MIT */
/*
 * The command transport a client holds: which server each command goes
 * to, over the pools of transport.h. Standalone and with Sentinel, one
 * pool; in a Redis Cluster, one pool per master, each command routed by
 * its key's slot (the map is cluster.h's), MOVED and ASK followed,
 * TRYAGAIN and CLUSTERDOWN waited out, the map re-read when it may be
 * stale.
 *
 * Bounds: those of transport.h, per command; a cluster command's
 * redirections and waits end by its command timeout too.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef CR_ROUTE_H
#define CR_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "conn.h"
#include "resp.h"
#include "transport.h"
#include "url.h"

/* Cluster: redirections (MOVED, ASK, a slot that moved after a broken
 * link) followed per command. */
#define CR__MAX_REDIRECTS 5

typedef struct cr__transport cr__transport;

/* cr__transport_new: a pool of `pool_size` connections plus one reserved
 * (per master in a cluster). Standalone and with Sentinel, one connection
 * is opened at once to report an unreachable or refusing server, the
 * others on first use; in a cluster, the seeds of the URL are asked for
 * the slot map; both within `op` (the client's creation). With Sentinel,
 * cfg->topology says where the master is. */
cr_status cr__transport_new(const cr__op *op, const cr__conn_config *cfg,
                            int pool_size, cr__transport **out);
void cr__transport_free(cr__transport *t);

/* cr__transport_command: send one command to its server and wait for its
 * reply, as cr__pool_command (transport.h) says. In a cluster the server
 * is the master of the routing key's slot; a redirection is followed (at
 * most CR__MAX_REDIRECTS, then the error reply is returned), and after a
 * broken link a CR__CMD_RETRY command follows its slot to a new master.
 * Ownership: *out needs cr__reply_free(). */
cr_status cr__transport_command(cr__transport *t, cr__cmd *cmd, int argc,
                                const char **argv, const size_t *argvlen,
                                cr__reply **out);

/* cr__transport_send_noreply: send a command whose reply nobody waits for
 * (the unlock latch's DEL), as part of `op` (may be NULL); its reply is read and dropped after the
 * connection's next command has been written. Failures are ignored. */
void cr__transport_send_noreply(cr__transport *t, const cr__op *op,
                                int argc, const char **argv,
                                const size_t *argvlen);

/* cr__transport_upkeep: cr__pool_upkeep on every pool made so far. */
void cr__transport_upkeep(cr__transport *t, int64_t stale_before,
                          bool open);

/* cr__transport_node_addr: in a cluster, the address of the master that
 * serves `slot` by the current map (no I/O), or of any master when slot
 * is -1. Returns its node number, or -1 when none is known or
 * outside a cluster. */
int cr__transport_node_addr(cr__transport *t, int64_t slot, char *host,
                            size_t len, int *port);

/* cr__transport_refresh: in a cluster, read the slot map again (unless it
 * was read just now); after a pub/sub link to a node broke, for example. */
void cr__transport_refresh(cr__transport *t);

/* cr__transport_moved: in a cluster, a MOVED reply seen elsewhere (the
 * event loop's links) said that host:port serves `slot` now: the map
 * learns it at once, as after the transport's own MOVED, and is read
 * again by the next command (no I/O here). */
void cr__transport_moved(cr__transport *t, unsigned slot, const char *host,
                         int port);

/* cr__transport_refresh_due: in a cluster, the slot map may be stale
 * (CLUSTERDOWN seen elsewhere): the next command reads it again first (no
 * I/O here). */
void cr__transport_refresh_due(cr__transport *t);

/* cr__transport_master_moved: tell the transport that the master moved
 * (a topology listener): idle connections opened before are closed now. */
void cr__transport_master_moved(cr__transport *t);

#endif
