/* SPDX-License-Identifier: MIT */
/*
 * The condition's await and signal in halves, script calls and the
 * reading of their replies, so that the blocking (condition.c) and the
 * asynchronous API (async.c) send the same: the join (condition_await.lua,
 * which checks on the server that the owner holds the lock), the look and
 * the two leaves (condition_wait.lua), and the signal
 * (condition_signal.lua); doc/coordination.md has the protocol. The
 * release and the re-acquisition between them are the lock kind's own
 * (script_lock.h).
 */
#ifndef CR_CONDITIONS_H
#define CR_CONDITIONS_H

#include "credisson/condition.h"
#include "script_lock.h"

/* condition_wait.lua's modes. */
#define CR__CONDITION_LOOK 0
#define CR__CONDITION_LEAVE_KEEP 1    /* leave; a signal that came is taken */
#define CR__CONDITION_LEAVE_PASS_ON 2 /* leave; a signal that came goes on */

/* One await under way: who waits, and for how long its lease stands. */
typedef struct cr__condition_waiter {
    cr_lock_condition *cond;
    char id[CR__OWNER_MAX]; /* <uuid>:<owner id> */
    int64_t lease_ms;
} cr__condition_waiter;

/* cr__condition_enter: the guard of every call on a condition (end it
 * with cr__object_leave). */
cr_status cr__condition_enter(const cr_lock_condition *c, cr__op *op);

/* The condition's lock, and its channel ("1": a waiter was signalled;
 * any message wakes every local waiter, which looks). */
cr_lock *cr__condition_lock(const cr_lock_condition *c);
const char *cr__condition_channel(const cr_lock_condition *c);
cr__wake cr__condition_decode(const char *payload, size_t len);

/* cr__condition_holder: the lock's field of owner `owner_id` (a thread's,
 * or an asynchronous owner's) in N: <uuid>:<id>, with ":write" for the
 * write lock (CR__OWNER_MAX bytes). */
void cr__condition_holder(const cr_lock_condition *c, int64_t owner_id,
                          char *out);

/* cr__condition_lease: the lease the lock is to be taken again with:
 * CR_LEASE_WATCHDOG when `holder`'s hold is renewed by the watchdog, else
 * the lock's last explicit lease. */
int64_t cr__condition_lease(const cr_lock_condition *c, const char *holder);

/* cr__condition_waiter_begin: the waiter of owner `owner_id`, leased for
 * the client's watchdog timeout. */
void cr__condition_waiter_begin(cr__condition_waiter *w, cr_lock_condition *c,
                                int64_t owner_id);

/* The join (reply: CR_OK in line, CR_ENOTOWNER when the server says
 * `holder` does not hold the lock, or rc), a look or a leave in `mode`
 * (CR__CONDITION_*), the look's reply (CR_OK signalled, or dropped from
 * the line: a spurious wake-up; CR_BUSY waiting, with the time until the
 * next look is due in *hint: the earliest lease lapsing, a third of the
 * waiter's lease at most) and the leave's (true when a signal had come
 * and was kept). Replies are freed; rc is how the call went. */
cr_status cr__condition_join_call(const cr__condition_waiter *w,
                                  const char *holder, cr__script_call *call);
cr_status cr__condition_join_reply(const cr__condition_waiter *w,
                                   cr_status rc, cr__reply *r);
cr_status cr__condition_wait_call(const cr__condition_waiter *w, int mode,
                                  cr__script_call *call);
cr_status cr__condition_look_reply(const cr__condition_waiter *w,
                                   cr_status rc, cr__reply *r, int64_t *hint);
bool cr__condition_leave_reply(const cr__condition_waiter *w, cr_status rc,
                               cr__reply *r);

/* cr__condition_ran_out: the status of a wait that ran out and left
 * keeping a signal that had come (`signalled`): CR_OK, else CR_TIMEOUT. */
cr_status cr__condition_ran_out(const cr_lock_condition *c, bool signalled);

/* cr__condition_not_taken: the failure `rc` of taking the lock again
 * after the wait (the lock is not held), with its message. */
cr_status cr__condition_not_taken(const cr_lock_condition *c, cr_status rc);

/* cr__condition_leave_later: leave the line in the background, one try,
 * passing on a signal that came (a request whose handle was freed while
 * it was in line); its lease ends it otherwise. */
void cr__condition_leave_later(const cr__condition_waiter *w);

/* The signal of up to `count` waiters by `holder` (the lock's field of
 * the signaller), and its reply: CR_OK with the number signalled in *n,
 * CR_ENOTOWNER when `holder` does not hold the lock, CR_ESCRIPT, or rc. */
cr_status cr__condition_signal_call(const cr_lock_condition *c,
                                    const char *holder, int64_t count,
                                    cr__script_call *call);
cr_status cr__condition_signal_reply(const cr_lock_condition *c, cr_status rc,
                                     cr__reply *r, int64_t *n);

#endif
