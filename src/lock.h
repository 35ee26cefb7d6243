/* SPDX-License-Identifier: MIT */
/*
 * The inside of a cr_lock: one interface (cr__lock_class) with two
 * implementations, each filling every slot: the script lock
 * (script_lock.c: RLock and every kind that is one hash and a script per
 * operation) and the multilock (multilock.c: MultiLock and RedLock, made
 * of other locks). lock.c holds the public calls: the guard, the argument
 * checks every lock shares, then the class.
 */
#ifndef CR_LOCK_INTERNAL_H
#define CR_LOCK_INTERNAL_H

#include <stdatomic.h>

#include "credisson/async.h"
#include "credisson/lock.h"
#include "handoff.h"
#include "line.h"
#include "object.h"

#define CR__LOCK_MAGIC 0x43524c4bu /* "CRLK" */

typedef struct cr__lock_kind cr__lock_kind; /* script_lock.h */

/* What every lock does; the arguments are checked and the handle entered
 * (cr__lock_enter) before a slot is called, within the call's operation
 * `op` (its deadline set for the call's wait). */
typedef struct cr__lock_class {
    /* lock / try_lock for owner thread `tid` (cr_lock_try_lock_tid's
     * statuses); on CR_OK *token (may be NULL) gets the fencing token, or
     * 0 when there is none or the acquisition was found afterwards. */
    cr_status (*acquire)(cr__op *op, cr_lock *l, int64_t tid, int64_t wait_ms,
                         int64_t lease_ms, int64_t *token);
    cr_status (*release)(cr__op *op, cr_lock *l, int64_t tid);
    cr_status (*force_unlock)(cr__op *op, cr_lock *l, bool *done);
    cr_status (*delete_)(cr__op *op, cr_lock *l, bool *done);
    cr_status (*is_locked)(cr__op *op, cr_lock *l, bool *locked);
    cr_status (*hold_count)(cr__op *op, cr_lock *l, int64_t tid,
                            int64_t *count);
    cr_status (*remain_ttl)(cr__op *op, cr_lock *l, int64_t *ttl_ms);
    cr_status (*is_lost)(cr_lock *l, int64_t tid, bool *lost);
    cr_status (*lease_left)(cr_lock *l, int64_t tid, int64_t *left_ms);
    /* Frees what the implementation owns (not the head). */
    void (*free_own)(cr_lock *l);
} cr__lock_class;

struct cr_lock {
    CR__OBJECT_FIELDS
    const cr__lock_class *cls;
    const char *label;   /* "lock", "fair lock", "redlock"... for messages */
    cr_lock_lost_fn lost_fn;
    void *lost_userdata;
    bool owned;          /* freed by the object that made it (a read/write
                          * lock's sides): cr_lock_free leaves it alone */
    void *impl;          /* a multilock's own data */
    /* Script locks only. */
    const cr__lock_kind *kind;
    char *channel;       /* where its releases are published */
    char *key2, *key3;   /* the kind's other keys, or NULL */
    cr__line line;       /* its waiting line (line.h) */
    atomic_int_fast64_t lease_ms; /* Redisson's per-object current lease */
    cr__handoff handoff;
};

/* cr__lock_create: a cr_lock of class `cls`, labelled `label`, for `name`
 * (`keyed`: the name is a key, not a multilock's label). */
cr_status cr__lock_create(cr_client *c, const char *name,
                          const cr__lock_class *cls, const char *label,
                          bool keyed, cr_lock **out);

/* cr__lock_destroy: free a handle, owned or not (cr_lock_free's work). */
void cr__lock_destroy(cr_lock *l);

/* cr__lock_enter / cr__lock_leave: the guard of every call on a lock
 * handle (a live handle of a live client); *op: the call's operation. */
cr_status cr__lock_enter(const cr_lock *l, cr__op *op);
void cr__lock_leave(const cr_lock *l);

/* cr__lock_try_lock / cr__lock_unlock: lock/try_lock and unlock with the
 * public calls' checks and guard, for owner thread `tid`; *token as the
 * class's acquire. The acquisition, wait and release events go into `sink`
 * when it is not NULL (cr__event_sink: a multilock's sub-locks, the
 * asynchronous API's thread calls), else to the client's hook. */
cr_status cr__lock_try_lock(cr_lock *l, cr__event_sink *sink, int64_t tid,
                            int64_t wait_ms, int64_t lease_ms, int64_t *token);
cr_status cr__lock_unlock(cr_lock *l, cr__event_sink *sink, int64_t tid);

/* cr__multilock_async: a MultiLock's or RedLock's acquisition (or, with
 * `unlock`, release) as a request of `a`: the blocking call on a thread
 * of its own (multilock.c), its outcome posted to the loop. Entered as
 * cr__async_enter's caller; the guard ends either way. */
cr_status cr__multilock_async(cr_async *a, cr_lock *l, int64_t owner,
                              int64_t wait_ms, int64_t lease_ms, bool unlock,
                              cr_async_fn fn, void *userdata,
                              cr_request **req);

#endif
