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

#include "lock.h"
#include "renewal.h"
#include "scripts.h"

typedef struct cr__unlock cr__unlock;

struct cr__lock_kind {
    const char *name;          /* "lock", "fair lock"... for messages */
    cr__hold_kind hold_kind;   /* which renewal script keeps it alive */
    bool writer;               /* owner names end in ":write" */
    bool own_channel;          /* each waiter has its own channel (the fair
                                * lock: the lock's channel + ":" + owner) */
    bool spin;                 /* wait by backoff, without pub/sub */
    bool in_line;              /* new waits go behind this client's (wait.h) */
    bool non_reentrant;        /* the owner taking it again is refused */
    int64_t min_sleep_ms;      /* floor for ttl hints while waiting */
    int64_t max_sleep_ms;      /* re-try at least this often; -1: no bound */
    /* One attempt, in two halves, so that a blocking call and an event
     * loop send the same: the script call (into *call; *tmp, when set,
     * is freed once it was sent), and the reading of its reply (rc: how
     * the call went; r, freed here: its reply when CR_OK): CR_OK when
     * taken (a kind may leave the fencing token in *hint_ms), CR_BUSY
     * with the longest sensible sleep in *hint_ms (-1: none), or a
     * failure. `wait_ms` is the caller's whole wait (the fair lock
     * enqueues with it), 0 for a single try. */
    cr_status (*acquire_call)(cr_lock *l, const char *owner, int64_t lease_ms,
                              int64_t wait_ms, cr__script_call *call,
                              char **tmp);
    cr_status (*acquire_reply)(cr_lock *l, const char *owner, int64_t wait_ms,
                               cr_status rc, cr__reply *r, int64_t *hint_ms);
    /* The script call releasing one hold, with the unlock latch of `u`;
     * its reply is read by cr__unlock_end. */
    cr_status (*unlock_call)(cr_lock *l, const char *owner, int64_t lease_ms,
                             const struct cr__unlock *u,
                             cr__script_call *call, char **tmp);
    cr_status (*force_unlock)(const cr__op *op, cr_lock *l, bool *done);
    cr_status (*delete_)(const cr__op *op, cr_lock *l, bool *done);
    cr_status (*is_locked)(const cr__op *op, cr_lock *l, bool *locked);
    /* A waiter stops waiting without the lock: CR_OK, or the failure (the
     * caller then tries again in the background). */
    cr_status (*give_up)(const cr__op *op, cr_lock *l, const char *owner,
                         int64_t wait_ms);
};

/* cr__script_lock_new: a script lock of `kind` named `name` whose
 * releases are published on channel `channel` (NULL: RLock's channel of
 * the name). Ownership: *out needs cr_lock_free (or cr__lock_destroy when
 * owned). */
cr_status cr__script_lock_new(cr_client *c, const char *name,
                              const cr__lock_kind *kind, const char *channel,
                              cr_lock **out);

/* cr__lock_acquire_reply: the reply of an acquire script of RLock's shape
 * (nil when taken, else the PTTL) run with status rc: CR_OK, or CR_BUSY
 * with the PTTL in *hint; CR_EREENTRANT for a non-reentrant kind's
 * refusal. Frees r. */
cr_status cr__lock_acquire_reply(cr_lock *l, const char *owner,
                                 int64_t wait_ms, cr_status rc, cr__reply *r,
                                 int64_t *hint);

/* cr__lock_kind_acquire / cr__lock_kind_unlock: one attempt, one release
 * of one hold (*result 0: holds remain, 1: released; CR_ENOTOWNER when
 * the owner holds none), through the kind's calls, blocking. */
cr_status cr__lock_kind_acquire(const cr__op *op, cr_lock *l, cr__cmd *cmd,
                                const char *owner, int64_t lease_ms,
                                int64_t wait_ms, int64_t *hint);
cr_status cr__lock_kind_unlock(const cr__op *op, cr_lock *l,
                               const char *owner, int64_t lease_ms,
                               int *result);

/* An unlock under way: every kind's unlock script takes a fresh unlock
 * latch key (so that its one resend after a broken link cannot release
 * twice) and is sent with CR__CMD_RETRY and CR__CMD_SYNC. */
struct cr__unlock {
    cr__cmd cmd;
    char *unlock_latch;      /* redisson_unlock_latch:{N}:<request id> */
    int64_t unlock_latch_ms; /* its lifetime */
    int64_t started_us;      /* monotonic */
};

/* cr__unlock_begin: set up *u for an unlock of `l` (CR_ENOMEM).
 * cr__unlock_end: after the script ran with status rc and reply r, map the
 * reply (nil: CR_ENOTOWNER; 0 or 1 into *result, -n for "released, n
 * heard it"; the fair lock's 2: CR_ENOTOWNER, nobody held it), drop the
 * unlock latch as Redisson does, start the releaser's turn (handoff.h) and
 * free what begin made. */
cr_status cr__unlock_begin(cr_lock *l, cr__unlock *u);
cr_status cr__unlock_end(const cr__op *op, cr_lock *l, cr__unlock *u,
                         cr_status rc, cr__reply *r, int *result);

/* cr__script_lock_holds: this client's own count of `owner`'s holds of
 * `l` (*lost, may be NULL: found lost). */
int64_t cr__script_lock_holds(const cr_lock *l, const char *owner, bool *lost);

/* cr__unlock_reply: the reply of an unlock script (freed): CR_OK with
 * *result 0 (holds remain) or 1 (released) and *heard the subscribers its
 * message reached; CR_ENOTOWNER (nil, or the fair lock's 2: nobody held
 * it); CR_ESCRIPT. */
cr_status cr__unlock_reply(cr_lock *l, cr__reply *r, int *result,
                           int64_t *heard);

/* What an acquisition leaves to the client's background thread for an
 * owner (cr__script_lock_later): leaving a fair lock's queue, giving a
 * grant back, finding out whether an attempt whose reply was lost was
 * granted (and giving it back if so), checking a hold on a new master. */
#define CR__LATER_GIVE_UP 1u
#define CR__LATER_UNDO 2u
#define CR__LATER_RESOLVE 4u
#define CR__LATER_VERIFY 8u
void cr__script_lock_later(cr_lock *l, const char *owner, int64_t lease_ms,
                           int64_t wait_ms, unsigned what);

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
cr_status cr__rlock_unlock_call(cr_lock *l, const char *owner,
                                int64_t lease_ms, const cr__unlock *u,
                                cr__script_call *call, char **tmp);
cr_status cr__rlock_force_unlock(const cr__op *op, cr_lock *l, bool *done);
cr_status cr__rlock_is_locked(const cr__op *op, cr_lock *l, bool *locked);
cr_status cr__rlock_give_up(const cr__op *op, cr_lock *l, const char *owner,
                            int64_t wait_ms);

/* A kind that is RLock but for its name, acquire call, delete and whether
 * its waits go in line. */
#define CR__RLOCK_KIND(label, acquire_fn, delete_fn, line)                    \
    {                                                                         \
        .name = label, .hold_kind = CR__HOLD_PLAIN, .in_line = line,          \
        .min_sleep_ms = 1, .max_sleep_ms = -1, .acquire_call = acquire_fn,    \
        .acquire_reply = cr__lock_acquire_reply,                              \
        .unlock_call = cr__rlock_unlock_call,                                 \
        .force_unlock = cr__rlock_force_unlock,                               \
        .delete_ = delete_fn, .is_locked = cr__rlock_is_locked,               \
        .give_up = cr__rlock_give_up,                                         \
    }

#endif
