/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API's requests (credisson/async.h): the handle they
 * belong to, the head every request starts with (as libuv's
 * UV_REQ_FIELDS beside its handle fields, which object.h follows), and
 * what drives a request on the loop.
 *
 * Each object's asynchronous half lives next to its blocking half (the
 * lock's in script_lock.c, the semaphores', the latch's...), as one small
 * struct per request type that starts with CR__REQUEST_FIELDS and a table
 * of what that type does (cr__request_type). What they share is here: a
 * request's life (started, ended, called back at the loop's next turn,
 * never inside the call that started it), the one-command request (a
 * script call and a reply reader), and the waiting request, which runs the
 * wait state machine (wait.h) as a blocking call does, each step it asks
 * for carried out through the event loop (aio.h), after the releaser's
 * turn (handoff.h), within a bound of its wait and one command timeout.
 *
 * Everything here runs on the loop's thread.
 */
#ifndef CR_REQUEST_H
#define CR_REQUEST_H

#include "aio.h"
#include "credisson/async.h"
#include "handoff.h"
#include "object.h"

#define CR__ASYNC_MAGIC 0x43524153u /* "CRAS" */

struct cr_async {
    uint32_t magic;
    cr_client *client;
    cr__aio *io;
    cr_request *pending;
    cr_request *done, **done_tail;
    cr__atimer done_timer;
    bool freeing;
    bool free_later;    /* cr_async_free was called from a callback */
};

/* What a type of request does. */
typedef struct cr__request_type {
    /* A waiting request: send the attempt the wait state machine asks
     * for (its reply sets w.rc and w.hint, then cr__request_drive), and
     * end once the wait is over (w.rc). NULL for the others. */
    void (*attempt)(cr_request *q);
    void (*finish)(cr_request *q);
    /* Run the request's callback with its outcome (q->rc). */
    void (*callback)(cr_request *q);
    /* cr_async_cancel: what a cancel does besides marking it (NULL: a
     * waiting request's wait ends now; a one-command request ends when
     * its command answers). */
    void (*cancel)(cr_request *q);
    /* The handle is being freed while the request is pending: what it
     * leaves behind goes to the background before it ends with
     * CR_ECLOSED (NULL: nothing to leave). */
    void (*abandon)(cr_request *q);
    /* Free what the request owns besides itself (NULL: nothing). */
    void (*release)(cr_request *q);
} cr__request_type;

/* The head of every request. */
#define CR__REQUEST_FIELDS                                                    \
    cr_async *async;                                                          \
    const cr__request_type *type;                                             \
    cr_request *prev, *next;   /* the handle's pending requests */            \
    cr_request *done_next;     /* ended, its callback due */                  \
    bool ended, cancelled;                                                    \
    bool final;       /* its outcome stands after a cancel: it happened      \
                       * on the server and cannot be given back */           \
    bool busy;        /* a command of it is out */                            \
    bool orphaned;    /* ended and called back, a command still out */       \
    bool sleeping;    /* asleep on a subscription */                          \
    bool subscribing; /* waiting for a subscription's answer */              \
    bool overdue;     /* its bound passed: nothing more is awaited */         \
    bool ignores_cancel; /* its wait goes on after a cancel (a condition   \
                          * await taking its lock again) */               \
    cr_status rc;                                                             \
    void *userdata;                                                           \
    /* A waiting request's wait. */                                           \
    cr__wait w;                                                               \
    cr__asleeper sleeper;                                                     \
    cr__atimer timer;                                                         \
    cr__atimer bound; /* the wait, one command timeout, replica sync */       \
    cr__turn turn;    /* the releaser's turn before its first attempt */      \
    const char *turn_channel;                                                 \
    bool tune;        /* its first attempt tunes the lock's turn */

struct cr_request {
    CR__REQUEST_FIELDS
};

/* cr__async_enter: the guard of every call that starts a request on `a`
 * for handle `obj`, which must be a live handle of `magic` (named `kind`
 * in messages) and, unless `any_client` (a multilock, whose sub-locks may
 * live on any client), of the asynchronous handle's client: its names,
 * leases and owners are that client's. On CR_OK the call ends with
 * cr__request_started, or cr__client_leave when it starts nothing. */
cr_status cr__async_enter(cr_async *a, const void *obj, uint32_t magic,
                          const char *kind, bool any_client);

/* cr__request_new: a pending request of `type` on `a`, of `size` bytes
 * (a struct that starts with CR__REQUEST_FIELDS), zeroed; NULL when out
 * of memory. */
cr_request *cr__request_new(cr_async *a, const cr__request_type *type,
                            size_t size, void *userdata);

/* cr__request_started: the call that made `q` returns (*req, may be NULL,
 * gets it); the guard ends. */
cr_status cr__request_started(cr_async *a, cr_request *q, cr_request **req);

/* cr__async_run_callbacks: runs the callbacks of every request that
 * ended (the handle is being freed). */
void cr__async_run_callbacks(cr_async *a);

/* cr__request_discard: takes back a request that could not start (no
 * callback runs); the guard ends. Returns rc. */
cr_status cr__request_discard(cr_request *q, cr_status rc);

/* cr__request_end: `q` ends with rc (CR_ECANCELED instead once cancelled,
 * unless final or CR_ECLOSED); its callback runs at the loop's next
 * turn. Ending twice does nothing. */
void cr__request_end(cr_request *q, cr_status rc);

/* cr__request_late: a reply came for a command of `q`: true when q ended
 * before it came (its bound passed, or the handle is being freed), and
 * the caller is to return at once; `q` is freed here once its callback
 * has run, so a caller that gives back what the command took does that
 * first (q->ended tells) and calls this last. */
bool cr__request_late(cr_request *q);

/* cr__may_have_run: a command whose reply ended with `rc` may have run
 * unanswered: it was sent, and then its link was lost (CR_EIO) or the
 * handle freed (CR_ECLOSED) before its reply was read. */
bool cr__may_have_run(cr_status rc, const cr__cmd *cmd);

/* ------------------------------------------------ one-command requests */

/* A request that is one script call and a reply reader: the releases,
 * additions and queries of the objects. */
typedef struct cr__command_request {
    CR__REQUEST_FIELDS
    cr_async_fn fn;
    int64_t value;         /* what the callback gets */
    cr_status (*read)(struct cr__command_request *q, cr_status rc,
                      cr__reply *r);
    void *obj;
    int64_t sent_us;       /* when it was sent (monotonic) */
} cr__command_request;

/* cr__command_start: starts a one-command request of `type` (NULL: the
 * plain one; or a type whose struct starts with a cr__command_request) of
 * `size` bytes on `obj`, once `call` is built (rc: how building went; the
 * call is freed here), with CR__CMD_* `flags`, its reply read by `read`;
 * *out (may be NULL) gets it. The guard ends either way. */
cr_status cr__command_start(cr_async *a, void *obj, cr_status rc,
                            cr__script_call *call, unsigned flags,
                            cr_status (*read)(cr__command_request *,
                                              cr_status, cr__reply *),
                            cr_async_fn fn, void *userdata, cr_request **req,
                            const cr__request_type *type, size_t size,
                            cr__command_request **out);

/* Reply readers of one-command requests: an integer, and a flag (an
 * integer 1), into q->value. */
cr_status cr__command_read_number(cr__command_request *q, cr_status rc,
                                  cr__reply *r);
cr_status cr__command_read_flag(cr__command_request *q, cr_status rc,
                                cr__reply *r);

/* ---------------------------------------------------- waiting requests */

/* cr__request_drive: carry out what the wait state machine asks next. */
void cr__request_drive(cr_request *q);

/* cr__request_wait: begin the wait of `q` for `spec` after the releaser's
 * turn of `h` (NULL: none), whose releases are published on `channel`;
 * `bounded`: the request ends at the latest at its wait plus one command
 * timeout (and the replica sync's), as a blocking call returns by its
 * deadline (without: a condition await's steps, which end it). */
void cr__request_wait(cr_request *q, const cr__wait_spec *spec,
                      const cr__handoff *h, const char *channel,
                      bool bounded);

/* cr__request_bound: the request ends at the latest at its wait
 * (w.spec.wait_ms) plus one command timeout (and the replica sync's):
 * what is out then is abandoned, else its type's finish runs with w.rc
 * CR_BUSY (or CR_EIO) and q->overdue set. */
void cr__request_bound(cr_request *q);

/* cr__request_wait_again: begin another wait of `q` for `spec` at once
 * (no turn, no new bound): a barrier party that joined a generation of
 * the other parity. */
void cr__request_wait_again(cr_request *q, const cr__wait_spec *spec);

/* cr__request_end_wait_now: brings the end of q's wait forward to now:
 * its next step ends it; a step under way (a command out, a subscription
 * being confirmed) comes first. A sleep cut short reports `woke`. */
void cr__request_end_wait_now(cr_request *q, cr_status woke);

/* cr__request_abandon: takes waiting request q out of its wait at
 * whatever step it is and ends it now with rc; a command of it still out
 * meets cr__request_late when it answers. */
void cr__request_abandon(cr_request *q, cr_status rc);

/* cr__request_attempt_failed: an attempt (or a look) of waiting request q
 * could not even be queued: its status is the attempt's outcome at once
 * (nothing when rc is CR_OK). */
void cr__request_attempt_failed(cr_request *q, cr_status rc);

/* cr__request_op: an operation (common.h) for what a request reports:
 * its client, no deadline, no sink. */
void cr__request_op(const cr_request *q, cr__op *op);

#endif
