/* SPDX-License-Identifier: MIT */
/*
 * Pools of command connections: for one server (the URL's, the master
 * Sentinel found through topology.h, or one cluster node), `size`
 * connections (conn.h) plus one reserved for the watchdog thread,
 * reconnection, one resend, READONLY and LOADING handling, and the
 * replica-sync check. Which server a command goes to is route.h's; the
 * command flags and outcome (cr__cmd) are shared by both. On the reserved
 * connection a reply that comes after its command's timeout can still be
 * passed on (cr__cmd's `late`): a renewal run late by a stalled server
 * proves its lease all the same.
 *
 * Bounds: a command's every wait (a free connection, a reconnection, the
 * reply, its one resend) ends by min(now + command timeout, the deadline
 * of the operation it is part of, cr__op in common.h).
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

/* Flags of a command (cr__cmd). */
#define CR__CMD_RETRY 1u    /* safe to send once more after a broken link */
#define CR__CMD_RESERVED 2u /* use the watchdog's reserved connection */
#define CR__CMD_SYNC 4u     /* follow with WAIT for the replicas (if on) */

/* Receives a reply kept for (cr__cmd's `late`): its id, and the reply
 * (ownership passes; cr__reply_free it). */
typedef void cr__late_fn(void *arg, uint64_t id, cr__reply *reply);

/* One command's flags, and what became of it beside its reply. */
typedef struct cr__cmd {
    unsigned flags; /* CR__CMD_* */
    /* The operation it is part of: its deadline bounds the command, its
     * slot deadline the wait for a connection attempt slot; NULL: none (the
     * command timeout alone). */
    const cr__op *op;
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
    /* With CR__CMD_RESERVED and a nonzero `late`: a reply that does not
     * come by the command's deadline (it was written out whole, the link
     * did not break: the server is slow, or the link stalled) is kept for
     * instead of being dropped with its connection, and `kept` is set
     * (never cleared: a command sent again elsewhere, in a cluster, may
     * have been kept for on its first node; the call still fails with
     * CR_EIO). When it comes, late_fn gets it
     * with this id, on the thread that reads it: a later command on the
     * reserved connection, or cr__pool_upkeep. A reply still owed when
     * its connection breaks, closes or is given up is never passed on.
     * Replies are told apart by their order on the connection, as every
     * reply of RESP is. */
    uint64_t late;
    cr__late_fn *late_fn;
    void *late_arg;
    bool kept;
} cr__cmd;

/* The connections to one server. */
typedef struct cr__pool cr__pool;

/* cr__pool_new: a pool of `size` connections (none open yet) plus one
 * reserved, for the server at host:port (a cluster node), or when host is
 * NULL the URL's server (with Sentinel: the master cfg->topology knows).
 * cfg must outlive the pool. NULL when out of memory. */
cr__pool *cr__pool_new(const cr__conn_config *cfg, int size, const char *host,
                       int port);
void cr__pool_free(cr__pool *p);

/* cr__cmd_deadline: when a wait of at most `ms` within command `cmd`
 * ends: min(now + ms, its operation's deadline). */
static inline int64_t
cr__cmd_deadline(const cr__cmd *cmd, int64_t ms)
{
    return cmd != NULL && cmd->op != NULL ? cr__op_deadline_in(cmd->op, ms)
                                          : cr__now_ms() + ms;
}

/* cr__pool_open: open the pool's first connection now, before `deadline`,
 * to report an unreachable or refusing server. */
cr_status cr__pool_open(cr__pool *p, int64_t deadline);

/* cr__pool_command: send one command to the pool's server (after ASKING,
 * in the same write and its reply dropped, when `asking`) and wait for its
 * reply. An error reply from Redis is CR_OK with a CR__REPLY_ERROR reply.
 * CR_EIO when the link broke or timed out (the detail is in
 * cr_last_error()); with CR__CMD_RETRY the command is sent once more on a
 * fresh connection first, time allowing. READONLY (a demoted master)
 * means nothing ran: with Sentinel the master is looked for again and the
 * command sent once more; with a plain URL the server is asked once more
 * after a reconnection, and CR_ECONFIG when it still says it is a
 * replica. LOADING, MASTERDOWN and the like are CR_EIO (nothing ran). A
 * reply read on a connection to a master that Sentinel has since
 * replaced is not used (CR_EIO). The final statuses of conn.h end it at
 * once. Ownership: *out needs cr__reply_free(). */
cr_status cr__pool_command(cr__pool *p, cr__cmd *cmd, int argc,
                           const char **argv, const size_t *argvlen,
                           cr__reply **out, bool asking);

/* cr__pool_upkeep: the watchdog's care of the reserved connection
 * between its commands. Passes on, without waiting, the kept replies (see
 * cr__cmd) that have come, each to its late_fn; closes instead a
 * connection whose every kept reply was sent before `stale_before`
 * (monotonic ms), its replies forgotten. With `open`, opens the reserved
 * connection when it is closed (within a command timeout; a failure is
 * left to the next command), so that a renewal finds it set up even when
 * the server stalls just before. */
void cr__pool_upkeep(cr__pool *p, int64_t stale_before, bool open);

/* cr__pool_send_noreply: send a command whose reply nobody waits for, as
 * part of operation `op` (may be NULL); its reply is read and dropped
 * after the connection's next command has been written. Failures are
 * ignored. */
void cr__pool_send_noreply(cr__pool *p, const cr__op *op, int argc,
                           const char **argv, const size_t *argvlen);

/* cr__pool_close_stale: close the idle connections opened under an older
 * topology generation (the master moved), the reserved and parked ones
 * included when no command is under way on them. */
void cr__pool_close_stale(cr__pool *p);

#endif
