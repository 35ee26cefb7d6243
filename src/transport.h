/* SPDX-License-Identifier: MIT */
/*
 * The transport: a pool of Redis connections for commands, one connection
 * reserved for the watchdog thread, reconnection, AUTH and SELECT on every
 * (re)connect, routing by slot in a Redis Cluster (a pool per master), and the library's own reply type so that hiredis types never
 * leave the transport layer (transport.c and pubsub.c).
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
#include "url.h"

typedef enum cr__reply_type {
    CR__REPLY_NIL = 0,
    CR__REPLY_INTEGER,
    CR__REPLY_STRING, /* bulk string */
    CR__REPLY_STATUS,
    CR__REPLY_ERROR,
    CR__REPLY_ARRAY
} cr__reply_type;

typedef struct cr__reply {
    cr__reply_type type;
    long long integer;
    char *str; /* NUL-terminated copy for STRING, STATUS and ERROR */
    size_t len;
    size_t elements;
    struct cr__reply **element;
} cr__reply;

void cr__reply_free(cr__reply *r);

/* With Sentinel: where the master was last found. Every connection opened
 * asks the sentinels for the master first; when the answer changes (a
 * failover), the generation goes up and connections opened before are
 * opened again, the pub/sub one included. */
typedef struct cr__sentinel cr__sentinel;

cr_status cr__sentinel_new(cr__sentinel **out);
void cr__sentinel_free(cr__sentinel *s);
unsigned cr__sentinel_generation(const cr__sentinel *s);

/* What a connection needs: where, how long to wait, who to be. */
typedef struct cr__conn_config {
    const cr__url *url; /* borrowed for the transport's life */
    cr__sentinel *sentinel; /* NULL unless url->is_sentinel */
    int64_t sync_timeout_ms; /* replica-sync check (WAIT); 0: off */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    cr__stats *stats;   /* counters to bump (reconnects, commands) */
    const cr__logger *log;
} cr__conn_config;

typedef struct cr__transport cr__transport;

/* cr__transport_new: a pool of `pool_size` connections plus one reserved.
 * One connection is opened at once to report an unreachable or refusing
 * server; the others open on first use. */
cr_status cr__transport_new(const cr__conn_config *cfg, int pool_size,
                            cr__transport **out);
void cr__transport_free(cr__transport *t);

/* Flags for cr__transport_command. */
/* Cluster: redirections (MOVED, ASK, a slot that moved after a broken
 * link) followed per command. */
#define CR__MAX_REDIRECTS 5

#define CR__CMD_RETRY 1u    /* safe to send once more after a broken link */
#define CR__CMD_RESERVED 2u /* use the watchdog's reserved connection */
#define CR__CMD_SYNC 4u     /* follow with WAIT for the replicas (if on) */

/* cr__transport_command: send one command and wait for its reply. An error
 * reply from Redis is CR_OK with a CR__REPLY_ERROR reply. CR_EIO when the
 * link broke or timed out (the detail is in cr_last_error()); with
 * CR__CMD_RETRY the command is sent once more on a fresh connection first.
 * Ownership: *out needs cr__reply_free(). */
cr_status cr__transport_command(cr__transport *t, unsigned flags, int argc,
                                const char **argv, const size_t *argvlen,
                                cr__reply **out);

/* cr__transport_sync_failed: true when this thread's last CR__CMD_SYNC
 * command ran but no replica acknowledged it within the sync timeout
 * (Redisson's "None of slaves were synced"). */
bool cr__transport_sync_failed(void);

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

/* cr__reply_from_buffer: decode RESP bytes (one reply) with the same code
 * that decodes the server's replies; for the fuzzer and tests. CR_OK with
 * *out set, CR_BUSY when the bytes end before the reply does, CR_ESCRIPT when
 * they are not RESP. */
cr_status cr__reply_from_buffer(const char *buf, size_t len, cr__reply **out);

#endif
