/* SPDX-License-Identifier: MIT */
/*
 * What a kind of script lock is (script_lock.h: RLock, fenced, spin,
 * non-reentrant, fair, read, write): a table of its scripts and traits,
 * which the script lock's class and the rules of its acquisitions
 * (acquisition.h) both read.
 */
#ifndef CR_LOCK_KIND_H
#define CR_LOCK_KIND_H

#include "lock.h"
#include "renewal.h"
#include "script.h"

typedef struct cr__unlock cr__unlock;

struct cr__lock_kind {
    const char *name;          /* "lock", "fair lock"... for messages */
    cr__hold_kind hold_kind;   /* which renewal script keeps it alive */
    bool writer;               /* owner names end in ":write" */
    bool own_channel;          /* each waiter has its own channel (the fair
                                * lock: the lock's channel + ":" + owner) */
    bool spin;                 /* wait by backoff, without pub/sub */
    const char *line;          /* its waits go through the lock's waiting
                                * line (line.h), which reads it as this
                                * ("lock", or "rw": writers preferred);
                                * NULL: no line */
    bool non_reentrant;        /* the owner taking it again is refused */
    int64_t min_sleep_ms;      /* floor for ttl hints while waiting */
    int64_t max_sleep_ms;      /* re-try at least this often; -1: no bound */
    /* One attempt, in two halves, so that a blocking call and an event
     * loop send the same: the script call (into *call; *tmp, when set,
     * is freed once it was sent), and the reading of its reply (rc: how
     * the call went; r, freed here: its reply when CR_OK): CR_OK when
     * taken (a kind may leave the fencing token in *hint_ms), CR_BUSY
     * with the longest sensible sleep in *hint_ms (-1: none) and, for a
     * kind in line, whether the waiter listens on the lock's channel
     * (*listen, wait.h), or a failure. `wait_ms` is the caller's whole
     * wait (the fair lock enqueues with it, a waiter goes in line), 0 for
     * a single try. */
    cr_status (*acquire_call)(cr_lock *l, const char *owner, int64_t lease_ms,
                              int64_t wait_ms, cr__script_call *call,
                              char **tmp);
    cr_status (*acquire_reply)(cr_lock *l, const char *owner, int64_t wait_ms,
                               cr_status rc, cr__reply *r, int64_t *hint_ms,
                               int *listen);
    /* The script call releasing one hold, with the unlock latch of `u`;
     * its reply is read by cr__unlock_end. */
    cr_status (*unlock_call)(cr_lock *l, const char *owner, int64_t lease_ms,
                             const struct cr__unlock *u,
                             cr__script_call *call, char **tmp);
    cr_status (*force_unlock)(const cr__op *op, cr_lock *l, bool *done);
    cr_status (*delete_)(const cr__op *op, cr_lock *l, bool *done);
    cr_status (*is_locked)(const cr__op *op, cr_lock *l, bool *locked);
    /* A waiter that waited `wait_ms` (not 0: a try without a wait never
     * enqueued) stops waiting without the lock: the script call that takes
     * it out of the kind's queue; NULL for kinds without one. Its reply is
     * read by cr__lock_give_up_reply. */
    cr_status (*give_up_call)(cr_lock *l, const char *owner, int64_t wait_ms,
                              cr__script_call *call);
};

#endif
