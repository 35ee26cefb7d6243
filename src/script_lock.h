/* SPDX-License-Identifier: MIT */
/*
 * The script lock: one Redis hash N (field = owner name, value = hold
 * count) and one script per operation. Its kinds (RLock, fenced, spin,
 * non-reentrant, fair, read, write) differ only in the table below;
 * script_lock.c does the rest for all of them: the waiting loop, the holds
 * table and the watchdog, lost replies, replica sync, the releaser's turn,
 * give-backs, lost-lease reporting.
 */
#ifndef CR_SCRIPT_LOCK_H
#define CR_SCRIPT_LOCK_H

#include "acquisition.h"
#include "lock.h"
#include "lock_kind.h"
#include "renewal.h"
#include "request.h"
#include "scripts.h"
#include "wait.h"

/* cr__script_lock_new: a script lock of `kind` named `name` whose
 * releases are published on channel `channel` (NULL: RLock's channel of
 * the name). Ownership: *out needs cr_lock_free (or cr__lock_destroy when
 * owned). */
cr_status cr__script_lock_new(cr_client *c, const char *name,
                              const cr__lock_kind *kind, const char *channel,
                              cr_lock **out);

/* cr__lock_acquire_reply: the reply of an acquire script of RLock's shape
 * (nil when taken, else the PTTL, or in line {PTTL, listen, turn}) run
 * with status rc: CR_OK, or CR_BUSY with the hint in *hint (cr__line_hint)
 * and *listen; CR_EREENTRANT for a non-reentrant kind's refusal. Frees
 * r. */
cr_status cr__lock_acquire_reply(cr_lock *l, const char *owner,
                                 int64_t wait_ms, cr_status rc, cr__reply *r,
                                 int64_t *hint, int *listen);

/* cr__lock_line_args: the line arguments of a script lock's scripts. */
typedef struct cr__lock_line_args {
    const char *line, *line_state, *line_channel;
    int64_t line_lease_ms, turn_ms;
} cr__lock_line_args;
cr__lock_line_args cr__lock_line_args_of(const cr_lock *l);

/* cr__lock_kind_acquire / cr__lock_kind_unlock: one attempt, one release
 * of one hold (*result 0: holds remain, 1: released; CR_ENOTOWNER when
 * the owner holds none), through the kind's calls, blocking.
 * cr__lock_kind_give_up: a waiter that waited `wait_ms` leaves the kind's
 * queue (nothing to do for a kind without one, or a wait of 0). */
cr_status cr__lock_kind_acquire(const cr__op *op, cr_lock *l, cr__cmd *cmd,
                                const char *owner, int64_t lease_ms,
                                int64_t wait_ms, int64_t *hint, int *listen);
cr_status cr__lock_kind_unlock(const cr__op *op, cr_lock *l,
                               const char *owner, int64_t lease_ms,
                               int *result);
cr_status cr__lock_kind_give_up(const cr__op *op, cr_lock *l,
                                const char *owner, int64_t wait_ms);

/* cr__lock_give_up_reply: the reply of a give-up (rc: how the call went),
 * freed; a failure is logged and returned (the entry leaves the queue at
 * the latest when its deadline passes). The caller's error detail is
 * kept. */
cr_status cr__lock_give_up_reply(cr_lock *l, const char *owner, cr_status rc,
                                 cr__reply *r);

/* cr__lock_wait_spec: the wait of owner `owner` on `l` for `wait_ms`
 * (wait.h), into *spec; *channel, when set, is a fair waiter's own
 * channel, which the spec points at: free it after the wait. CR_ENOMEM. */
cr_status cr__lock_wait_spec(cr_lock *l, const char *owner, int64_t wait_ms,
                             cr__wait_spec *spec, char **channel);

/* cr__lock_record: the grant of acquisition `a` goes into the holds table
 * (and, without a lease, to the watchdog); the lock's current lease and
 * the releaser's turn learn of it. CR_ENOMEM... when it cannot be kept. */
cr_status cr__lock_record(cr_lock *l, const cr__acquisition *a);

/* cr__lock_acquisition_report: an acquisition that waited (`w`) ended with
 * `rc`: a grant found at the end counted, and the event reported as `op`
 * reports them. */
void cr__lock_acquisition_report(const cr__op *op, const cr__acquisition *a,
                                 cr_status rc, const cr__wait *w, bool async);

/* An unlock under way: every kind's unlock script takes a fresh unlock
 * latch key (so that its one resend after a broken link cannot release
 * twice) and is sent with CR__CMD_RETRY and CR__CMD_SYNC. */
struct cr__unlock {
    cr__cmd cmd;
    char *unlock_latch;      /* redisson_unlock_latch:{N}:<request id> */
    int64_t unlock_latch_ms; /* its lifetime */
    int64_t started_us;      /* monotonic */
};

/* cr__unlock_call: the script call that releases one hold of `owner` of
 * `l` asking for `lease_ms` (the kind's), with a fresh unlock latch in *u;
 * *tmp, when set, is freed once the call was sent. On failure nothing is
 * left to free.
 * cr__unlock_end: after the script ran with status rc and reply r (the
 * driver has sent the DEL of u's unlock latch, as Redisson drops it, when
 * it ran): the reply mapped (nil: CR_ENOTOWNER; *result 0: holds remain,
 * 1: released; the fair lock's 2: CR_ENOTOWNER, nobody held it), the
 * releaser's turn begun from what the driver's subscription to the
 * channel has seen (handoff.h), and the latch's name freed. */
cr_status cr__unlock_call(cr_lock *l, const char *owner, int64_t lease_ms,
                          cr__unlock *u, cr__script_call *call, char **tmp);
cr_status cr__unlock_end(cr_lock *l, cr__unlock *u, cr_status rc,
                         cr__reply *r, const cr__sub_seen *seen, int *result);

/* A release of one hold of an owner by its holder (cr_lock_unlock's,
 * cr_async_unlock's, a condition await's), around the unlock: the holds
 * table's bookkeeping, and the status the holder gets. */
typedef struct cr__release {
    cr_lock *lock;
    char owner[CR__OWNER_MAX];
    int64_t local;     /* this client's count of the owner's holds */
    bool lost;         /* found lost before the unlock */
    int64_t lease_ms;  /* the lease the unlock asks for (the current one) */
    int64_t sent_ms;   /* monotonic */
} cr__release;

/* cr__release_begin: before the unlock: the hold is marked releasing (the
 * watchdog leaves it alone). cr__release_end: after it ended with rc and
 * *result: the hold gone or kept, a release reported (as `op` reports
 * events; `async`: of the asynchronous API), a loss reported first
 * (CR_ELOST) whether the unlock found it or failed too; the lock's lease
 * goes back to the watchdog's once it is free. Returns the status. */
void cr__release_begin(cr__release *rel, cr_lock *l, const char *owner);
cr_status cr__release_end(const cr__op *op, const cr__release *rel,
                          cr_status rc, int result, bool async);

/* cr__script_lock_holds: this client's own count of `owner`'s holds of
 * `l` (*lost, may be NULL: found lost). */
int64_t cr__script_lock_holds(const cr_lock *l, const char *owner, bool *lost);

/* cr__unlock_reply: the reply of an unlock script (freed): CR_OK with
 * *result 0 (holds remain) or 1 (released) and *reached the subscribers its
 * message reached; CR_ENOTOWNER (nil, or the fair lock's 2: nobody held
 * it); CR_ESCRIPT. */
cr_status cr__unlock_reply(cr_lock *l, cr__reply *r, int *result,
                           int64_t *reached);

/* cr__lock_clean_up_later: what an acquisition leaves to the client's
 * background thread for an owner (CR__CLEANUP_*, acquisition.h). */
void cr__lock_clean_up_later(cr_lock *l, const char *owner, int64_t lease_ms,
                             int64_t wait_ms, unsigned cleanup);

/* ------------------------------------------------ the asynchronous half */

/* A lock acquisition on the loop (cr_async_lock's, and a condition
 * await's retakes of its lock): a request (request.h) whose type's
 * attempt and finish are cr__lock_request_attempt and
 * cr__lock_request_finish, and whose struct starts with this one. */
typedef struct cr__lock_request {
    CR__REQUEST_FIELDS
    cr_async_fn fn;
    int64_t value;        /* the fencing token, once granted */
    cr__acquisition acq;
    char *channel;        /* a fair waiter's own channel, or NULL */
    cr__unlock undo;      /* the end's undo, while it is out */
    /* Once the acquisition is over: NULL, the request ends with its
     * status (cr_async_lock); else what comes next (a condition's). */
    void (*then)(struct cr__lock_request *q, cr_status rc);
} cr__lock_request;

/* cr__lock_request_begin: begins acquisition q of `l` for owner id
 * `owner` with wait_ms and lease_ms (checked), after the releaser's turn;
 * `bounded` as cr__request_wait's. CR_ENOMEM when nothing could begin. */
cr_status cr__lock_request_begin(cr__lock_request *q, cr_lock *l,
                                 int64_t owner, int64_t wait_ms,
                                 int64_t lease_ms, bool bounded);
void cr__lock_request_attempt(cr_request *q);
void cr__lock_request_finish(cr_request *q);
/* cr__lock_request_release: frees what a lock request owns. */
void cr__lock_request_release(cr_request *q);

/* cr__lock_async_release_send: sends the release of one hold of `owner`
 * of `l` on the loop (cr_async_unlock's, a condition await's), its reply
 * to fn(ctx); *rel and *u, the caller's, are kept until then and read
 * by cr__lock_async_release_read, which returns the status the holder
 * gets. On failure nothing was sent, and the release ended with the
 * status returned. */
cr_status cr__lock_async_release_send(cr_async *a, cr_lock *l,
                                      const char *owner, cr__release *rel,
                                      cr__unlock *u, cr__areply_fn fn,
                                      void *ctx);
cr_status cr__lock_async_release_read(cr_async *a, cr__release *rel,
                                      cr__unlock *u, cr_status rc,
                                      cr__reply *r);

/* cr__lock_decode: a lock channel's message (protocol section 2): "0", one
 * hold released, lets one waiter try; "1" lets all try; both count as
 * releases for the releaser's turn. */
cr__wake cr__lock_decode(const char *payload, size_t len);

/* cr__lock_del: DEL of N and the kind's other keys, nothing published
 * (delete() of the kinds whose waiters find out at their next attempt);
 * *done: any of them existed. */
cr_status cr__lock_del(const cr__op *op, cr_lock *l, bool *done);

/* RLock's operations (rlock.c), for kinds that share them. */
cr_status cr__rlock_acquire_call(cr_lock *l, const char *owner,
                                 int64_t lease_ms, int64_t wait_ms,
                                 cr__script_call *call, char **tmp);
cr_status cr__rlock_acquire_call_of(cr_lock *l, const char *owner,
                                    int64_t lease_ms, int64_t wait_ms,
                                    bool non_reentrant, cr__script_call *call,
                                    char **tmp);
cr_status cr__rlock_unlock_call(cr_lock *l, const char *owner,
                                int64_t lease_ms, const cr__unlock *u,
                                cr__script_call *call, char **tmp);
cr_status cr__rlock_force_unlock(const cr__op *op, cr_lock *l, bool *done);
cr_status cr__rlock_is_locked(const cr__op *op, cr_lock *l, bool *locked);

/* The give-up of a kind in line: the waiter leaves the line (kind "lock"
 * or "rw" as the line reads the lock). */
cr_status cr__lock_line_leave_call(cr_lock *l, const char *owner,
                                   int64_t wait_ms, cr__script_call *call);

/* A kind that is RLock but for its name, acquire call and delete, whose
 * waits go through the waiting line. */
#define CR__RLOCK_KIND(label, acquire_fn, delete_fn)                          \
    {                                                                         \
        .name = label, .hold_kind = CR__HOLD_PLAIN, .line = "lock",           \
        .min_sleep_ms = 1, .max_sleep_ms = -1, .acquire_call = acquire_fn,    \
        .acquire_reply = cr__lock_acquire_reply,                              \
        .unlock_call = cr__rlock_unlock_call,                                 \
        .force_unlock = cr__rlock_force_unlock,                               \
        .delete_ = delete_fn, .is_locked = cr__rlock_is_locked,               \
        .give_up_call = cr__lock_line_leave_call,                             \
    }

#endif
