/* SPDX-License-Identifier: MIT */
/*
 * MultiLock and RedLock (protocol section 10): one cr_lock made of n locks
 * of any kind, which may belong to different clients on independent Redis
 * servers, all taken with one thread id. A MultiLock needs every sub-lock; a
 * RedLock needs a majority (n/2 + 1). Unlike Redisson, the sub-locks are
 * contacted in parallel (the latency of the slowest server, not the sum), an
 * acquisition with a lease reports how long it is valid (the lease minus the
 * time taken minus a clock-drift allowance, as the Redlock algorithm says)
 * and counts as failed when nothing is left, and an unlock releases every
 * sub-lock and reports every error instead of stopping at the first.
 *
 * cr_lock_lock, cr_lock_try_lock, cr_lock_unlock, their _tid forms,
 * cr_lock_is_held_by_thread and cr_lock_get_hold_count (MultiLock: the
 * smallest count among the sub-locks; RedLock: the smallest within the
 * best-held majority) work on the handle; cr_lock_force_unlock,
 * cr_lock_delete, cr_lock_is_locked and cr_lock_remain_time_to_live return
 * CR_ENOTSUP, as in Redisson. Lost leases are reported per sub-lock: ask
 * cr_lock_is_lost, or set the lost callback, on the sub-lock handles (on the
 * multilock handle they never report anything).
 *
 * Thread safety: as any cr_lock. The sub-lock handles are borrowed: free
 * the multilock before them.
 */
#ifndef CREDISSON_MULTILOCK_H
#define CREDISSON_MULTILOCK_H

#include <stddef.h>
#include <stdint.h>

#include <credisson/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cr_multilock_new: a lock held only when all `n` (1..64) sub-locks are.
 * `locks` is copied, the handles are not owned.
 * Ownership: *out needs to be freed with cr_lock_free().
 * Returns CR_OK, CR_EINVAL (NULL, n out of range, a NULL or dead sub-lock,
 * the same handle twice), CR_ENOMEM. */
CR_EXPORT cr_status cr_multilock_new(cr_lock *const *locks, size_t n,
                                     cr_lock **out);

/* cr_redlock_new: the same, held when a majority (n/2 + 1) of the sub-locks
 * are. Redisson deprecates RedLock in favour of a fenced lock or an RLock
 * with replica synchronisation; see doc/safety.md.
 * Returns cr_multilock_new's statuses: CR_OK, CR_EINVAL, CR_ENOMEM. */
CR_EXPORT cr_status cr_redlock_new(cr_lock *const *locks, size_t n,
                                   cr_lock **out);

/* cr_multilock_get_validity: after this handle's last successful
 * acquisition with an explicit lease: the milliseconds of validity left
 * (lease - time to acquire - drift allowance - time since), 0 once gone;
 * CR_LEASE_WATCHDOG (-1) when it was taken with the watchdog.
 * Returns CR_OK, CR_EINVAL (not a multilock or never acquired). */
CR_EXPORT cr_status cr_multilock_get_validity(cr_lock *lock,
                                              int64_t *validity_ms);

#ifdef __cplusplus
}
#endif
#endif
