/* SPDX-License-Identifier: MIT */
/*
 * One Redis connection, the library's only way to a server: plain TCP, a
 * Unix socket or TLS, on a non-blocking socket whose every wait is bounded
 * by an absolute deadline (a server that drips bytes cannot stretch it) and
 * ended at once when the client closes (its abort descriptor). Opening
 * connects, does the TLS handshake and sends AUTH, CLIENT SETNAME, SELECT
 * and, for a master found through Sentinel, ROLE, all within one deadline.
 * Command pools, pub/sub links, sentinel queries and renewals all use it.
 *
 * What cannot be mended by trying again fails at once with its own status:
 * a server that does not speak the Redis protocol (CR_ECONFIG, with what it
 * answered), refused credentials (CR_EAUTH), a refused command (CR_ENOPERM),
 * a replica where a master was expected, protected mode (CR_ECONFIG), TLS
 * verification (CR_ETLS). An outage (refused, reset, closed, silent) is
 * CR_EIO. Connection attempts to one address are paced by its breaker: at
 * most 10 a second across the whole client, and after failures an
 * exponential backoff with jitter (100 ms doubling to 2 s).
 *
 * Thread safety: a connection is used by one thread at a time; the
 * breakers may be shared.
 */
#ifndef CR_CONN_H
#define CR_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common.h"
#include "resp.h"
#include "tls.h"
#include "url.h"

typedef struct cr__conn cr__conn;
typedef struct cr__breakers cr__breakers;
typedef struct cr__topology cr__topology;

/* What every connection of a client needs: where, who to be, how long to
 * wait. Borrowed by the transport, pub/sub and topology for the client's
 * life. */
typedef struct cr__conn_config {
    const cr__url *url;
    const char *user, *password;                   /* data nodes' AUTH */
    const char *sentinel_user, *sentinel_password; /* sentinels' AUTH */
    const char *client_name;  /* CLIENT SETNAME on every connection; NULL: none */
    cr__tls *tls;             /* NULL: plain */
    const char *tls_name;     /* name verified; NULL: the host connected to */
    int64_t sync_timeout_ms;  /* replica-sync check (WAIT); 0: off */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    cr__stats *stats;
    const cr__logger *log;
    cr__breakers *breakers;
    int abort_fd;             /* readable once the client is being freed */
    cr__topology *topology;   /* Sentinel following; NULL otherwise */
} cr__conn_config;

/* What the far end is expected to be. */
typedef enum cr__peer {
    CR__PEER_DATA = 0, /* a Redis server (the URL's, a cluster node) */
    CR__PEER_MASTER,   /* a master found through Sentinel: ROLE checked */
    CR__PEER_SENTINEL  /* a sentinel: its own credentials */
} cr__peer;

/* cr__conn_open: connect to host:port (host NULL: the URL's unix socket)
 * and set the connection up, all before `deadline` (monotonic ms), paced
 * by the address's breaker, whose next attempt slot is waited for until
 * `slot_deadline` at the most (-1: the deadline). Statuses as in the header
 * comment; the reason names the address (never a password). Ownership:
 * cr__conn_free. */
cr_status cr__conn_open(const cr__conn_config *cfg, const char *host, int port,
                        cr__peer peer, int64_t deadline,
                        int64_t slot_deadline, cr__conn **out);
void cr__conn_free(cr__conn *c);

/* cr__conn_append: queue a command (no I/O). CR_ENOMEM. */
cr_status cr__conn_append(cr__conn *c, int argc, const char *const *argv,
                          const size_t *lens);

/* cr__conn_append_raw: queue commands already in RESP (no I/O). */
cr_status cr__conn_append_raw(cr__conn *c, const char *data, size_t len);

/* cr__conn_flush: write everything queued before `deadline`. */
cr_status cr__conn_flush(cr__conn *c, int64_t deadline);

/* cr__conn_recv: the next reply, waiting until `deadline`. An error reply
 * is CR_OK with a CR__REPLY_ERROR reply. CR_EIO (timeout, end of stream,
 * reset), CR_ECONFIG (not RESP), CR_ECLOSED (client closing).
 * Ownership: *out needs cr__reply_free(). */
cr_status cr__conn_recv(cr__conn *c, int64_t deadline, cr__reply **out);

/* cr__conn_call: append, flush and receive one reply before `deadline`. */
cr_status cr__conn_call(cr__conn *c, int argc, const char *const *argv,
                        const size_t *lens, int64_t deadline,
                        cr__reply **out);

/* cr__conn_poll_reply: without waiting, a reply already received or
 * readable now: CR_OK with *out (NULL when none is complete yet), or the
 * failure of the link. Reads the socket at most once. */
cr_status cr__conn_poll_reply(cr__conn *c, cr__reply **out);

/* cr__conn_buffered: whether bytes wait in the connection (read from the
 * socket, or decrypted by TLS) that poll() on its descriptor cannot see. */
bool cr__conn_buffered(const cr__conn *c);

/* cr__conn_unread: bytes received and not yet parsed into replies (a
 * reply half read), TLS's decrypted ones included. */
size_t cr__conn_unread(const cr__conn *c);

int cr__conn_fd(const cr__conn *c);

/* cr__conn_peer: "host:port" or the socket path, for messages. */
const char *cr__conn_peer(const cr__conn *c);

/* cr__wait_fd: wait until fd is ready for `events` (POLLIN/POLLOUT), the
 * deadline (monotonic ms; -1: none) passes or abort_fd (-1: none) becomes
 * readable. 1 ready, 0 timed out, -1 aborted. */
int cr__wait_fd(int fd, short events, int abort_fd, int64_t deadline);

/* cr__reply_status: the status an error reply stands for: CR_EAUTH
 * (NOAUTH, WRONGPASS), CR_ENOPERM (NOPERM), CR_ECONFIG (DENIED,
 * MISCONF), CR_EIO (LOADING, MASTERDOWN, BUSY: passing states), otherwise
 * CR_ESERVER. Every rule of what an error means lives here. */
cr_status cr__reply_status(const char *err);

/* The replica-sync check's replies, read the same by the blocking pools
 * (transport.c) and the loop's links (aio_link.c), a refusal logged at error
 * to `log` (the check cannot work there):
 * cr__replicas_of: a ROLE reply before a command to be followed by WAIT:
 * CR_OK with the master's replica count in *n (a replica's ROLE: 0, as
 * READONLY follows the command); a refusal (CR_ECONFIG, or the refusal's
 * own status); CR_EIO for a reply that is no role at all (the replies on
 * the link are out of step).
 * cr__replica_sync_of: a WAIT reply: CR_OK when a replica acknowledged;
 * CR_EIO when none did within the sync timeout (Redisson's "None of slaves
 * were synced"); a refusal as above. The reason is in cr_last_error(). */
cr_status cr__replicas_of(const cr__reply *r, const char *peer,
                          const cr__logger *log, int64_t *n);
cr_status cr__replica_sync_of(const cr__reply *r, const char *peer,
                              const cr__logger *log);

/* cr__status_is_final: whether no retry can mend `rc` (authentication,
 * permission, configuration, TLS): waits end at once on it. */
bool cr__status_is_final(cr_status rc);

/* ----------------------------------------------- driven by an event loop
 *
 * The same connection without a wait: the caller watches cr__conn_fd for
 * what a call asks (CR__WANT_READ or CR__WANT_WRITE) and calls again. */

/* cr__conn_start: begin connecting to socket address `sa` (resolved
 * already) for host:port (host NULL: the URL's unix socket), to be set up
 * as `peer` expects; drive it with cr__conn_step. Take an attempt of the
 * address's breaker first (cr__breaker_try). Ownership: cr__conn_free. */
cr_status cr__conn_start(const cr__conn_config *cfg, const struct sockaddr *sa,
                         socklen_t salen, const char *host, int port,
                         cr__peer peer, cr__conn **out);

/* cr__conn_step: advance an opening connection: CR_OK once it is open and
 * set up; CR_BUSY while it waits for *events; otherwise the failure, as
 * cr__conn_open's (recorded with the breaker). */
cr_status cr__conn_step(cr__conn *c, int *events);

/* cr__conn_send: write what is queued as far as the socket takes it:
 * CR_OK with *pending set when some is left (wait for *events), or the
 * failure of the link. */
cr_status cr__conn_send(cr__conn *c, bool *pending, int *events);

/* cr__breaker_try: take an attempt slot of `addr` without waiting: CR_OK;
 * CR_BUSY with *retry_ms until the next slot; or the final status the
 * last attempt ended with (which no retry mends). */
cr_status cr__breaker_try(cr__breakers *b, const char *addr,
                          int64_t *retry_ms);

/* ------------------------------------------------------------ breakers */

cr_status cr__breakers_new(cr__breakers **out);
void cr__breakers_free(cr__breakers *b);

/* cr__breaker_attempts: the connection attempts made to `addr` so far
 * (for tests). */
uint64_t cr__breaker_attempts(cr__breakers *b, const char *addr);

#endif
