/* SPDX-License-Identifier: MIT */
/*
 * The event-loop side of the connections: what the asynchronous API
 * (async.c) sends its commands and subscriptions through, driven by the
 * application's loop (credisson/async.h's cr_loop) instead of threads.
 *
 * One command link and one subscriber link per server (per master in a
 * cluster), opened on first use with cr__conn_start/cr__conn_step, so the
 * loop never waits: not for a connection, a TLS handshake, a slow server
 * or a name (names are resolved on a helper thread). Commands are
 * pipelined; each gets its reply, or CR_EIO when its link breaks or its
 * command timeout passes (with whether it was written out). Scripts go by
 * EVALSHA, and by EVAL when the server answers NOSCRIPT. With Sentinel the
 * links go to the master the client's topology thread knows, and are
 * opened again when it moves; in a cluster, to the master of the
 * command's slot by the client's slot map, following MOVED (which
 * corrects the map) and ASK, and waiting out TRYAGAIN and CLUSTERDOWN
 * for up to the command timeout.
 *
 * Subscriptions are reference counted per channel, as the blocking
 * pub/sub's: each object decodes its own messages (cr__decode_fn), a
 * message becomes wake tokens for the waiters in line, and a token nobody
 * could take yet waits for the next sleeper, so none is lost. They serve
 * the wait state machine through cr__aio_subs.
 *
 * Everything here runs on the loop's thread; nothing blocks.
 */
#ifndef CR_AIO_H
#define CR_AIO_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "credisson/async.h"
#include "script.h"
#include "wait.h"

typedef struct cr__aio cr__aio;

/* A timer of the loop (cr__aio_timer_*). Zeroed: not set. */
typedef struct cr__atimer {
    int64_t due;                 /* monotonic ms */
    size_t index;                /* 1 + place in the heap; 0: not set */
    void (*fn)(void *ctx);
    void *ctx;
} cr__atimer;

/* A reply to a command sent here: rc CR_OK with r (which the callee
 * frees), or the failure (an error reply's status, as the blocking
 * runner's, or CR_EIO); cmd says, as the blocking transport's cr__cmd,
 * whether it was written out (so may have run) and, for CR__CMD_SYNC,
 * what the replicas said. */
typedef void (*cr__areply_fn)(void *ctx, cr_status rc, cr__reply *r,
                              const cr__cmd *cmd);

/* A sleeper on a subscription (cr__aio_sleep), kept by its owner. */
typedef struct cr__asleeper {
    struct cr__asleeper *next;
    void *sub;                   /* where it sleeps; NULL: not sleeping */
    uint64_t ticket;             /* its place in line (kept across sleeps) */
    cr__atimer timer;
    bool opened;                 /* an opening message came (a fence) */
    void (*fn)(void *ctx, cr_status woke, bool opened);
    void *ctx;
} cr__asleeper;

cr_status cr__aio_new(cr_client *c, const cr_loop *loop, cr__aio **out);

/* cr__aio_free: close every link; every command still waiting for its
 * reply gets CR_ECLOSED first. */
void cr__aio_free(cr__aio *io);

/* What the loop reports (credisson/async.h). */
void cr__aio_ready(cr__aio *io, int fd, int events);
void cr__aio_timeout(cr__aio *io);
int cr__aio_fds(cr__aio *io, cr_async_fd *fds, int max, int64_t *timeout_ms);
/* True inside cr__aio_ready or cr__aio_timeout (a callback is running). */
bool cr__aio_dispatching(const cr__aio *io);

/* cr__aio_spend: takes one unit of the current dispatch's work budget (a
 * reply, a timer, a callback); false when it is spent: leave the rest to
 * a timer of 0 ms. Outside a dispatch always true. */
bool cr__aio_spend(cr__aio *io);

/* Work posted to the loop from another thread. */
typedef struct cr__apost {
    struct cr__apost *next;
    void (*fn)(void *ctx);
    void *ctx;
} cr__apost;

/* cr__aio_post_ready: make posting possible (the wake-up descriptor, then
 * watched); on the loop, before the first post. CR_OK or CR_ENOMEM. */
cr_status cr__aio_post_ready(cr__aio *io);

/* cr__aio_post: from any thread, once cr__aio_post_ready succeeded: run
 * p->fn(p->ctx) on the loop at its next turn (in cr__aio_free at the
 * latest, whose caller has stopped every poster). p is the poster's. */
void cr__aio_post(cr__aio *io, cr__apost *p);

/* cr__aio_after: run fn(ctx) from the loop at the latest once `ms` passed
 * (0: at its next turn), replacing what `t` was set for. */
void cr__aio_after(cr__aio *io, cr__atimer *t, int64_t ms,
                   void (*fn)(void *ctx), void *ctx);
void cr__aio_cancel_timer(cr__aio *io, cr__atimer *t);

/* cr__aio_script: send script `call` (built; its arguments are copied, so
 * the call may go at once) with CR__CMD_* `flags` (CR__CMD_SYNC: followed
 * by the replica check, a WAIT, when replica sync is on). CR_OK, or
 * CR_ENOMEM. */
cr_status cr__aio_script(cr__aio *io, const cr__script_call *call,
                         unsigned flags, cr__areply_fn fn, void *ctx);

/* cr__aio_command: send one plain command, routed by argv[1] in a
 * cluster. */
cr_status cr__aio_command(cr__aio *io, int argc, const char **argv,
                          const size_t *lens, cr__areply_fn fn, void *ctx);

/* Subscriptions, as the wait state machine uses them (ctx: the cr__aio). */
extern const cr__wait_subs cr__aio_subs;

/* cr__aio_subscribe: take a reference on `channel` (s->sub) and call
 * s->fn once the server confirmed it (CR_OK), after timeout_ms (CR_TIMEOUT:
 * the reference is still taken), or when it was refused (its status; no
 * reference, s->sub NULL). From the loop, never from inside this call. */
void cr__aio_subscribe(cr__aio *io, const char *channel, cr__decode_fn decode,
                       int64_t timeout_ms, cr__asleeper *s);

/* cr__aio_sleep: wait on `sub` for a wake token (CR_OK), up to ms (-1: no
 * limit; CR_TIMEOUT), or until the links close (CR_ECLOSED); `fence`
 * (may be NULL): as cr__sub_wait's. fn runs from the loop. */
void cr__aio_sleep(cr__aio *io, void *sub, int64_t ms, const cr__fence *fence,
                   cr__asleeper *s);

/* cr__aio_wake_stop: `s` stops sleeping (its callback will not run). */
void cr__aio_wake_stop(cr__aio *io, cr__asleeper *s);

#endif
