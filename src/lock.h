/* SPDX-License-Identifier: MIT */
/*
 * The inside of a cr_lock. Every lock kind (RLock, fair, read, write, spin,
 * fenced...) is a cr_lock with a table of operations, as hiredis's
 * redisContextFuncs; lock.c holds what all kinds share (argument checks,
 * the acquire and release paths built on wait.c and renewal.c, lost-lease
 * reporting) and RLock's own operations, which other kinds reuse where the
 * protocol says they are the same.
 */
#ifndef CR_LOCK_INTERNAL_H
#define CR_LOCK_INTERNAL_H

#include <stdatomic.h>

#include "client.h"
#include "credisson/lock.h"
#include "renewal.h"
#include "scripts.h"

#define CR__LOCK_MAGIC 0x43524c4bu /* "CRLK" */

typedef struct cr__lock_ops {
    const char *kind;          /* "lock", "fair_lock", ... for messages */
    cr__hold_kind hold_kind;   /* which renewal script keeps it alive */
    cr__wake_mode wake_mode;   /* how its channel's messages wake waiters */
    int64_t min_sleep_ms;      /* floor for ttl hints while waiting */
    int64_t max_sleep_ms;      /* re-try at least this often; -1: no bound */
    bool spin;                 /* wait by backoff, without pub/sub */
    bool in_line;              /* new waits go behind this client's (wait.h) */
    /* Owner name of thread `tid` (the write lock appends ":write"). */
    void (*owner)(const cr_lock *l, int64_t tid, char *out);
    /* One attempt (see cr__attempt_fn), sent as `cmd` says, which then
     * tells whether it was sent and what the replicas said; `wait_ms` is
     * the caller's whole wait (the fair lock enqueues with it), 0 for a single try. On CR_OK a
     * kind may leave a value in *hint_ms for the caller (the fenced lock's
     * token). */
    cr_status (*acquire)(cr_lock *l, cr__cmd *cmd, const char *owner,
                         int64_t lease_ms, int64_t wait_ms, int64_t *hint_ms);
    /* Release one hold: *result 0 (holds remain) or 1 (released);
     * CR_ENOTOWNER when the owner holds none. */
    cr_status (*unlock)(cr_lock *l, const char *owner, int64_t lease_ms,
                        int *result);
    cr_status (*force_unlock)(cr_lock *l, bool *done);
    cr_status (*delete_)(cr_lock *l, bool *done);
    cr_status (*is_locked)(cr_lock *l, bool *locked);
    cr_status (*hold_count)(cr_lock *l, const char *owner, int64_t *count);
    /* The channel a waiter subscribes to, malloc'd (unused when spin). */
    char *(*channel)(cr_lock *l, const char *owner);
    /* Called when a waiter stops waiting without the lock; NULL: none.
     * CR_OK, or the failure (the caller then tries again in the
     * background). */
    cr_status (*give_up)(cr_lock *l, const char *owner, int64_t wait_ms);
    /* Frees l->impl; NULL: nothing to free. */
    void (*free_impl)(cr_lock *l);
    /* Kinds made of other locks (MultiLock, RedLock) replace the whole
     * acquisition and release instead of one script call; NULL otherwise. */
    cr_status (*acquire_all)(cr_lock *l, int64_t tid, int64_t wait_ms,
                             int64_t lease_ms);
    cr_status (*release_all)(cr_lock *l, int64_t tid);
} cr__lock_ops;

struct cr_lock {
    uint32_t magic;
    cr_client *client;
    const cr__lock_ops *ops;
    char *name;    /* as given by the user */
    char *raw;     /* N: the name after the client's name prefix */
    char *channel; /* redisson_lock__channel:{N} */
    char *aux;     /* the kind's extra key for renewal (read lock), or NULL */
    atomic_int_fast64_t lease_ms; /* Redisson's per-object current lease */
    cr_lock_lost_fn lost_fn;
    void *lost_userdata;
    void *impl;    /* the kind's own data */
    /* After an unlock that woke waiters, a new acquisition through this
     * handle first lets them have their turns (lock.c, yield_first): until
     * the channel's release count reaches yield_target, at the latest
     * until yield_until_us (monotonic) or until no release came for
     * yield_quiet_us; yield_turn_us when it cannot count. A turn for
     * other clients' waiters is yield_rtts unlock round trips: 4, doubled
     * (up to 64) each time the first attempt after such a turn still found
     * the lock free (the woken waiter was slower than the turn: a loaded
     * machine), one less each time it did not; for this client's threads,
     * always 4. */
    atomic_int_fast64_t yield_until_us;
    atomic_int yield_rtts;
    atomic_int_fast64_t yield_turn_us;
    atomic_int_fast64_t yield_quiet_us;
    atomic_uint_fast64_t yield_target;
    atomic_int_fast64_t acquired_us; /* when it last took the lock */
    atomic_int bg_pending; /* background give-backs not finished: freeing
                            * the handle waits for them (lock.c) */
    bool owned;    /* freed by the object that made it (a read/write lock's
                    * sides): cr_lock_free leaves it alone */
};

/* cr__lock_create: a cr_lock of kind `ops` for `name`. */
cr_status cr__lock_create(cr_client *c, const char *name,
                          const cr__lock_ops *ops, cr_lock **out);

/* cr__lock_destroy: free a handle, owned or not (cr_lock_free's work). */
void cr__lock_destroy(cr_lock *l);

/* cr__lock_acquire: lock/try_lock of any kind for owner thread `tid`; on
 * CR_OK *extra (may be NULL) gets the value the kind's acquire left (the
 * fencing token), or 0 when the acquisition was only found afterwards (a
 * lost reply). */
cr_status cr__lock_acquire(cr_lock *l, int64_t tid, int64_t wait_ms,
                           int64_t lease_ms, int64_t *extra);

/* cr__lock_enter / cr__lock_leave: the guard of every call on a lock
 * handle (a live handle of a live client). */
cr_status cr__lock_enter(cr_lock *l);
void cr__lock_leave(cr_lock *l);

/* cr__lock_acquire_reply: the reply of an acquire script of RLock's shape
 * (nil when taken, else the PTTL) run with status rc: CR_OK, or CR_BUSY
 * with the PTTL in *hint. Frees r. */
cr_status cr__lock_acquire_reply(cr_lock *l, cr_status rc, cr__reply *r,
                                 int64_t *hint);

/* RLock's operations, for kinds that share them. */
cr_status cr__lock_acquire_plain(cr_lock *l, cr__cmd *cmd, const char *owner,
                                 int64_t lease_ms, int64_t wait_ms,
                                 int64_t *hint);
void cr__lock_owner_plain(const cr_lock *l, int64_t tid, char *out);
cr_status cr__lock_unlock_plain(cr_lock *l, const char *owner, int64_t lease_ms,
                                int *result);
cr_status cr__lock_force_unlock_plain(cr_lock *l, bool *done);
cr_status cr__lock_is_locked_plain(cr_lock *l, bool *locked);
cr_status cr__lock_hold_count_plain(cr_lock *l, const char *owner,
                                    int64_t *count);
char *cr__lock_channel_plain(cr_lock *l, const char *owner);

/* An unlock under way: every kind's unlock script takes a fresh unlock
 * latch key (so that its one resend after a broken link cannot release
 * twice) and is sent with CR__CMD_RETRY and CR__CMD_SYNC. */
typedef struct cr__unlock {
    cr__cmd cmd;
    char *latch;        /* redisson_unlock_latch:{N}:<request id> */
    int64_t latch_ms;   /* its lifetime */
    int64_t started_us; /* monotonic */
} cr__unlock;

/* cr__unlock_begin: set up *u for an unlock of `l` (CR_ENOMEM).
 * cr__unlock_end: after the script ran with status rc and reply r, map the
 * reply (nil: CR_ENOTOWNER; 0 or 1 into *result; the fair lock's 2:
 * CR_ENOTOWNER, nobody held it), drop the latch as Redisson does, let the
 * waiters it woke have their turn (handoff) and free what begin made. */
cr_status cr__unlock_begin(cr_lock *l, cr__unlock *u);
cr_status cr__unlock_end(cr_lock *l, cr__unlock *u, cr_status rc,
                         cr__reply *r, int *result);

#endif
