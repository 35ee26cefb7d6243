/* SPDX-License-Identifier: MIT */
/*
 * The client's insides, shared by the object modules: its settings, its
 * transport, pub/sub and watchdog, and the guard every public call goes
 * through.
 */
#ifndef CR_CLIENT_INTERNAL_H
#define CR_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "common.h"
#include "credisson/client.h"
#include "names.h"
#include "pubsub.h"
#include "registry.h"
#include "route.h"
#include "script.h"
#include "url.h"

typedef struct cr__renewal cr__renewal;

#define CR__CLIENT_MAGIC 0x43524353u /* "CRCS" */

struct cr_client {
    cr__runner run; /* first: what running commands needs (script.h) */
    uint32_t magic;
    char id[37];
    unsigned fork_gen;
    cr__url url;
    char *name_prefix;
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t watchdog_timeout_ms;
    int watchdog_batch;
    int64_t fair_wait_timeout_ms;
    cr__wire wire; /* the Java side's release line (names.h) */
    int64_t subscription_timeout_ms;
    int64_t reconnect_window_ms;
    int64_t line_turn_ms;     /* a waiting line's turn (line.h); 250 */
    int64_t unlock_latch_timeout_ms; /* lifetime of unlock latch keys */
    const char *publish_cmd;  /* "publish", or "spublish" (cluster, sharded) */
    cr__logger log;
    cr__conn_config conn_cfg;
    /* What conn_cfg points at: copies of the options' strings. */
    char *user, *password, *sentinel_user, *sentinel_password;
    char *client_name, *tls_name;
    int abort_fd;             /* an eventfd written once at free */
    cr__breakers *breakers;
    cr__tls *tls;
    cr__topology *topology;
    /* Background work (cr__background): a queue and its thread, started
     * on first use. */
    pthread_mutex_t jobs_mu;
    pthread_cond_t jobs_cv;
    struct cr__job *jobs, **jobs_tail;
    bool jobs_started, jobs_stop;
    pthread_t jobs_thread;
    cr__pubsub *pubsub;
    cr__renewal *renewal;
    atomic_bool closing;
    atomic_int active; /* public calls under way */
    /* cr_client_set_deadline's (monotonic ms): the end of every blocking
     * call and background job begun while it is set; 0: none. */
    _Atomic int64_t deadline;
    pthread_mutex_t mu;
    pthread_cond_t idle;
};

/* cr__client_enter: the guard at the top of every public call on `c`:
 * CR_EINVAL for NULL or a freed client (when detectable), CR_EFORKED in the
 * child of a fork, CR_ECLOSED while it is being freed. On CR_OK *op is the
 * call's operation, bounded by now + one command timeout (see
 * cr__op_wait), and the call must end with cr__client_leave. */
cr_status cr__client_enter(cr_client *c, cr__op *op);
void cr__client_leave(cr_client *c);

/* cr__op_wait: operation `op` waits up to wait_ms (CR_WAIT_FOREVER:
 * without limit): its deadline becomes its start + wait_ms + one command
 * timeout (+ the replica-sync timeout when that is on), the bound
 * credisson(3) promises. Under the client's deadline
 * (cr_client_set_deadline) the wait is cut to end that much before it
 * (0 at least: one attempt), and the operation's deadline is never
 * later. Returns the wait to use: wait_ms, or what is left of it. */
int64_t cr__op_wait(cr__op *op, int64_t wait_ms);

/* cr__op_event: report an event of operation `op` (object and name as the
 * event shows them): into its sink when it has one, else to the hook of
 * its client. */
void cr__op_event(const cr__op *op, cr_event_kind kind, cr_status status,
                  const char *object, const char *name, int64_t wait_ms,
                  int64_t hold_ms, bool async);

/* cr__background: run `run(op, arg)` on the client's background thread,
 * in an operation with a deadline of two command timeouts, then
 * `done(arg, true)`: what a call
 * that had to return (its bound came) leaves to finish, such as giving
 * back an acquisition whose answer came too late (as Redisson's lockAsync
 * does). When the client is freed first, `done(arg, false)` runs instead
 * (the server's expiries then clean up). CR_ENOMEM when it cannot be
 * queued; `done(arg, false)` has then run. */
cr_status cr__background(cr_client *c,
                         void (*run)(const cr__op *op, void *arg),
                         void (*done)(void *arg, bool ran), void *arg);

#endif
