/* SPDX-License-Identifier: MIT */
/*
 * Conditions on a lock: Java's Condition (lock.newCondition(), which
 * Redisson's RLock refuses with UnsupportedOperationException) across
 * processes, credisson's own. A thread that holds the lock awaits a
 * condition: it gets in line, lets the lock go entirely (whatever its hold
 * count), waits for a signal, and takes the lock again with the same hold
 * count and the same kind of lease before it returns. A thread that holds
 * the lock signals one waiter (the longest waiting) or all of them.
 *
 * Works with RLock (cr_lock_new), the fair lock, the write lock of a
 * read/write lock, and the fenced, spin and non-reentrant locks; not with
 * the read lock (as Java's ReadLock.newCondition()) nor MultiLock and
 * RedLock (CR_ENOTSUP). The release is the lock kind's own unlock, once
 * per hold, with the messages and unlock-latch keys it always sends.
 *
 * What a distributed system changes:
 * - No signal is lost between the release and the wait: a waiter is in
 *   line (in Redis) before it lets the lock go, and only a holder signals.
 * - A signal before any waiter is not remembered, as in Java.
 * - Every waiter holds a lease, renewed while it waits (a third of the
 *   client's watchdog timeout at the most between looks, judged on the
 *   server's clock): a waiter whose process dies leaves the line when its
 *   lease lapses, and one that dies after it was signalled but before it
 *   took the signal passes the signal on to the next waiter then.
 * - Spurious wake-ups happen, as Java allows: a waiter dropped from the
 *   line (its lease lapsed while its process was stalled) returns CR_OK
 *   unsignalled, and a signal passed on may wake a waiter that another
 *   signal also woke. Callers re-check their predicate in a loop, as in
 *   Java.
 *
 * Keys, in the lock's cluster slot, with N the lock's raw name and C the
 * condition's name: the hash credisson_condition:{N}:C, the sorted sets
 * credisson_condition_queue:{N}:C and credisson_condition_leases:{N}:C,
 * and the channel credisson_condition__channel:{N}:C
 * (doc/coordination.md has the protocol). No Redisson key is touched but
 * the lock's own.
 *
 * Thread safety: a condition handle may be shared by the threads of a
 * process; the owner is the calling thread, as for the lock. Free
 * conditions before their lock, and the lock before its client.
 *
 * An event loop awaits and signals for an owner id of the asynchronous
 * API with cr_async_condition_await, cr_async_condition_signal and
 * cr_async_condition_signal_all (credisson/async.h), which send the same.
 */
#ifndef CREDISSON_CONDITION_H
#define CREDISSON_CONDITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>
#include <credisson/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_lock_condition cr_lock_condition;

/* cr_lock_condition_new: a handle on the condition `name` of `lock`
 * (Java's lock.newCondition(), named so that processes share it; a lock
 * may have many). The name is copied; nothing is sent to Redis. The lock
 * must outlive the handle.
 * Ownership: *out needs to be freed with cr_lock_condition_free().
 * Returns CR_OK, CR_EINVAL (NULL or empty name, NULL lock or out),
 * CR_ENOTSUP (a read lock, a MultiLock or RedLock), CR_ENOMEM,
 * CR_EFORKED, CR_ECLOSED. */
CR_EXPORT cr_status cr_lock_condition_new(cr_lock *lock, const char *name,
                                          cr_lock_condition **out);

/* cr_lock_condition_free: release the handle. NULL does nothing. */
CR_EXPORT void cr_lock_condition_free(cr_lock_condition *cond);

/* cr_lock_condition_name: the name as given. Borrowed; "" for NULL. */
CR_EXPORT const char *cr_lock_condition_name(const cr_lock_condition *cond);

/* cr_lock_condition_await: with the lock held by the calling thread, let
 * it go and wait for a signal, at most wait_ms (0: only a signal already
 * due; CR_WAIT_FOREVER: as long as it takes) (Java's await() and
 * await(time, unit)); then take the lock again, waiting as long as that
 * takes, with the hold count it had and the same kind of lease (renewed
 * by the watchdog if it was, else the lock's last explicit lease).
 * Returns CR_OK when signalled (or woken spuriously, see above) and
 * CR_TIMEOUT when the wait ran out, the lock held again in both;
 * CR_ENOTOWNER when the thread does not hold the lock (nothing changes);
 * CR_EINVAL; and when the lock could not be taken again (the wait and the
 * lock's statuses: CR_ECLOSED, CR_EIO, CR_ESERVER...) the lock is not
 * held, and a signal that came is passed on. */
CR_EXPORT cr_status cr_lock_condition_await(cr_lock_condition *cond,
                                            int64_t wait_ms);

/* cr_lock_condition_signal: wake the waiter that has waited longest
 * (Java's signal()); nothing when none waits. The calling thread must
 * hold the lock. *woke (may be NULL) tells whether a waiter was
 * signalled. Not resent after a broken link (CR_EIO: it may or may not
 * have been sent).
 * Returns CR_OK, CR_ENOTOWNER (the thread does not hold the lock: Java's
 * IllegalMonitorStateException), CR_EINVAL, CR_EIO, CR_ESERVER. */
CR_EXPORT cr_status cr_lock_condition_signal(cr_lock_condition *cond,
                                             bool *woke);

/* cr_lock_condition_signal_all: wake every waiter (Java's signalAll()).
 * *woke (may be NULL) gets how many were signalled. As
 * cr_lock_condition_signal otherwise.
 * Returns CR_OK, CR_ENOTOWNER, CR_EINVAL, CR_EIO, CR_ESERVER. */
CR_EXPORT cr_status cr_lock_condition_signal_all(cr_lock_condition *cond,
                                                 int64_t *woke);

#ifdef __cplusplus
}
#endif
#endif
