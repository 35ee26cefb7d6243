/* SPDX-License-Identifier: MIT */
/*
 * Read/write locks: Redisson's RReadWriteLock. One handle gives two locks,
 * a read lock that many owners may hold at once and a write lock that
 * excludes everyone else; both are ordinary cr_lock handles, so every
 * cr_lock_* call (lock, try_lock, unlock, the _tid forms, force_unlock,
 * delete, the queries, lost-lease callbacks) works on them.
 *
 * The state is the Redis hash `name` (the client's name_prefix before it):
 * a field "mode" ("read" or "write"), one field per reader "<uuid>:<tid>"
 * with its hold count, the writer's field "<uuid>:<tid>:write", and one
 * string key per read hold, {name}:<uuid>:<tid>:rwlock_timeout:<i>, whose
 * TTL is that hold's lease. Unlocks are announced on redisson_rwlock:{name}:
 * 0 by a read unlock, 1 by a write unlock.
 *
 * Thread safety: as cr_lock. A cr_rwlock may be shared by threads; it must
 * be freed once, when no thread uses it or its two locks any more.
 */
#ifndef CREDISSON_RWLOCK_H
#define CREDISSON_RWLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>
#include <credisson/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_rwlock cr_rwlock;

/* cr_rwlock_new: a handle on the read/write lock `name` (Redisson
 * getReadWriteLock). The name is copied; nothing is sent to Redis.
 * Ownership: *out needs to be freed with cr_rwlock_free().
 * Returns CR_OK, CR_EINVAL (NULL client, NULL or empty name, NULL out),
 * CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_rwlock_new(cr_client *client, const char *name,
                                  cr_rwlock **out);

/* cr_rwlock_free: free the handle and its two locks. Holds are not
 * released: unlock first. NULL does nothing. */
CR_EXPORT void cr_rwlock_free(cr_rwlock *rw);

/* cr_rwlock_read_lock: the read lock (Redisson readLock()). Readers are let
 * in whenever the lock is in read mode, even while writers wait (writers can
 * starve, as in Redisson). The thread holding the write lock may take read
 * holds too; releasing its last write hold then leaves a read lock (a
 * downgrade). A read hold's lease is kept by its own timeout key; with
 * CR_LEASE_WATCHDOG the watchdog renews only this client's readers' keys, so
 * the holds of a reader that died expire and stop blocking writers once the
 * remaining readers unlock. Unlocking a read lock that does not exist at all
 * publishes 0 and returns CR_ENOTOWNER (or CR_ELOST), as Redisson does.
 * Ownership: borrowed, owned by `rw` and valid until cr_rwlock_free(rw);
 * cr_lock_free() on it does nothing. NULL when rw is not a live handle. */
CR_EXPORT cr_lock *cr_rwlock_read_lock(cr_rwlock *rw);

/* cr_rwlock_write_lock: the write lock (Redisson writeLock()), reentrant;
 * each reentrant acquisition adds its lease to the lock's remaining TTL
 * (Redisson's rule). There is no read to write upgrade: when the owner
 * holds read holds of this lock and no write hold, lock and try_lock (any
 * wait, 0 included) return CR_EDEADLK at once, where Redisson would wait for
 * the owner itself forever (or, with an explicit read lease, until it runs
 * out). Release the read holds first. When the writer's last write unlock
 * leaves its read holds (a downgrade), 1 is published so that readers
 * waiting in other processes come in at once; Redisson publishes nothing
 * there. cr_lock_delete and cr_lock_force_unlock on either lock act only
 * when the lock is in that lock's mode, as in Redisson.
 * Ownership: borrowed, as cr_rwlock_read_lock. */
CR_EXPORT cr_lock *cr_rwlock_write_lock(cr_rwlock *rw);

/* cr_rwlock_delete: Redisson's RReadWriteLock.delete(): a plain DEL of the
 * hash, whatever its mode; nothing is published, so waiters find out at
 * their next attempt. Readers' timeout keys are left to expire. This
 * client's renewals of the lock stop. *deleted (may be NULL) tells whether
 * the hash existed.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_rwlock_delete(cr_rwlock *rw, bool *deleted);

#ifdef __cplusplus
}
#endif
#endif
