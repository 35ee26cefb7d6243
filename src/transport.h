/* SPDX-License-Identifier: MIT */
/*
 * The transport: a pool of Redis connections (conn.h) for commands, one
 * connection reserved for the watchdog thread, reconnection, routing by
 * slot in a Redis Cluster (a pool per master), the master found through
 * Sentinel (topology.h), and the replica-sync check.
 *
 * Bounds: a command's every wait (a free connection, a reconnection, the
 * reply, its one resend) ends by min(now + command timeout, the calling
 * thread's call deadline, see cr__call_deadline in common.h).
 *
 * Thread safety: every function may be called from any thread; each
 * connection is used by one thread at a time.
 */
#ifndef CR_TRANSPORT_H
#define CR_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "conn.h"
#include "resp.h"
#include "url.h"

typedef struct cr__transport cr__transport;

/* cr__transport_new: a pool of `pool_size` connections plus one reserved.
 * One connection is opened at once to report an unreachable or refusing
 * server; the others open on first use. With Sentinel, cfg->topology says
 * where the master is. */
cr_status cr__transport_new(const cr__conn_config *cfg, int pool_size,
                            cr__transport **out);
void cr__transport_free(cr__transport *t);

/* Flags of a command (cr__cmd). */
/* Cluster: redirections (MOVED, ASK, a slot that moved after a broken
 * link) followed per command. */
#define CR__MAX_REDIRECTS 5

#define CR__CMD_RETRY 1u    /* safe to send once more after a broken link */
#define CR__CMD_RESERVED 2u /* use the watchdog's reserved connection */
#define CR__CMD_SYNC 4u     /* follow with WAIT for the replicas (if on) */

/* One command's flags, and what became of it beside its reply. */
typedef struct cr__cmd {
    unsigned flags; /* CR__CMD_* */
    /* On CR_EIO: whether it was written out, in part at least, so that
     * it may have run (an acquisition whose reply was lost); false when it
     * certainly was not (no connection, a refused connection, a master
     * that had moved). */
    bool sent;
    /* With CR__CMD_SYNC, once it ran: CR_OK when the replicas
     * acknowledged it (or there are none), CR_EIO when none did within
     * the sync timeout (Redisson's "None of slaves were synced"), or the
     * status of a refused WAIT (CR_ENOPERM, CR_ECONFIG for a proxy that
     * does not know it), with the reason in cr_last_error() when not
     * CR_OK. A refused ROLE (counting the replicas) fails the command
     * itself, before it runs. */
    cr_status sync;
} cr__cmd;

/* One server's connections: the URL's server (with Sentinel, the master
 * cfg->topology knows), or one cluster node. */
typedef struct cr__pool cr__pool;

/* cr__pool_new: a pool of `size` connections (none open yet) plus one
 * reserved, for the server at host:port, or the URL's server when host is
 * NULL. cfg must outlive the pool. NULL when out of memory. */
cr__pool *cr__pool_new(const cr__conn_config *cfg, int size, const char *host,
                       int port);
void cr__pool_free(cr__pool *p);

/* cr__pool_open: open the pool's first connection now, before `deadline`,
 * to report an unreachable or refusing server. */
cr_status cr__pool_open(cr__pool *p, int64_t deadline);

/* cr__pool_command: cr__transport_command on this pool's server (all it
 * says but the routing), after ASKING (in the same write, its reply
 * dropped) when `asking`. */
cr_status cr__pool_command(cr__pool *p, cr__cmd *cmd, int argc,
                           const char **argv, const size_t *argvlen,
                           cr__reply **out, bool asking);

/* cr__pool_send_noreply: cr__transport_send_noreply on this pool's
 * server. */
void cr__pool_send_noreply(cr__pool *p, int argc, const char **argv,
                           const size_t *argvlen);

/* cr__pool_close_stale: close the idle connections opened under an older
 * topology generation (the master moved). */
void cr__pool_close_stale(cr__pool *p);

/* cr__transport_command: send one command and wait for its reply. An error
 * reply from Redis is CR_OK with a CR__REPLY_ERROR reply. CR_EIO when the
 * link broke or timed out (the detail is in cr_last_error()); with
 * CR__CMD_RETRY the command is sent once more on a fresh connection first,
 * time allowing. READONLY (a demoted master) means nothing ran: with
 * Sentinel the master is looked for again and the command sent once more;
 * with a plain URL the server is asked once more after a reconnection,
 * and CR_ECONFIG when it still says it is a replica. A reply read on a
 * connection to a master that Sentinel has since replaced is not used
 * (CR_EIO). The final statuses of conn.h end it at once.
 * Ownership: *out needs cr__reply_free(). */
cr_status cr__transport_command(cr__transport *t, cr__cmd *cmd, int argc,
                                const char **argv, const size_t *argvlen,
                                cr__reply **out);

/* cr__transport_send_noreply: send a command whose reply nobody waits for
 * (the unlock latch's DEL); its reply is read and dropped after the
 * connection's next command has been written. Failures are ignored. */
void cr__transport_send_noreply(cr__transport *t, int argc, const char **argv,
                                const size_t *argvlen);

/* cr__transport_node_addr: in a cluster, the address of the master that
 * serves `slot` by the current map (no I/O), or of any master when slot
 * is -1. Returns its node number, or -1 when none is known or
 * outside a cluster. */
int cr__transport_node_addr(cr__transport *t, int64_t slot, char *host,
                            size_t len, int *port);

/* cr__transport_refresh: in a cluster, read the slot map again (unless it
 * was read just now); after a pub/sub link to a node broke, for example. */
void cr__transport_refresh(cr__transport *t);

/* cr__transport_master_moved: tell the transport that the master moved
 * (a topology listener): idle connections opened before are closed now. */
void cr__transport_master_moved(cr__transport *t);

#endif
