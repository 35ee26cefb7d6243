/* SPDX-License-Identifier: MIT */
/*
 * Locks: Redisson's RLock and every lock kind built like it. All of them are
 * a cr_lock *, as every Redisson lock is an RLock, and take the same calls.
 *
 * Thread safety: a cr_lock may be shared by threads. Ownership is per thread:
 * the owner is "<client id>:<thread id>" where the thread id is cr_thread_id()
 * of the calling thread, or the explicit id given to a *_tid call (for code
 * that locks on one thread and unlocks on another, as Redisson's
 * lockAsync(threadId)). Lost-lease callbacks run on the watchdog thread and
 * must not block.
 */
#ifndef CREDISSON_LOCK_H
#define CREDISSON_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_lock cr_lock;

/* lease_ms: renew the lease with the watchdog while held (Redisson lock()). */
#define CR_LEASE_WATCHDOG ((int64_t)-1)
/* wait_ms: wait as long as it takes (Redisson lock()). */
#define CR_WAIT_FOREVER ((int64_t)-1)
/* Longest accepted explicit lease or wait: 100 years. */
#define CR_DURATION_MAX ((int64_t)3155760000000LL)

/* Called on the watchdog thread when a watchdog-renewed hold is found gone
 * (expired, deleted or taken): `name` is the lock's raw name (the Redis key:
 * the client's name_prefix followed by the name), `thread_id` the owner
 * thread. */
typedef void (*cr_lock_lost_fn)(void *userdata, const char *name,
                                int64_t thread_id);

/* cr_lock_new: a handle on the reentrant lock `name` (Redisson getLock). The
 * name is copied. Nothing is sent to Redis.
 * Ownership: *out needs to be freed with cr_lock_free().
 * Returns CR_OK, CR_EINVAL (NULL client, NULL or empty name, a name too long
 * or, in a cluster, spanning slots; NULL out), CR_ENOMEM, CR_ECLOSED,
 * CR_EFORKED. */
CR_EXPORT cr_status cr_lock_new(cr_client *client, const char *name,
                                cr_lock **out);

/* cr_fair_lock_new: a handle on the fair lock `name` (Redisson
 * getFairLock): a reentrant lock granted in the order waiters asked for it.
 * It shares RLock's hash, so an RLock and a fair lock of the same name
 * exclude each other; waiters queue in redisson_lock_queue:{name} with
 * deadlines (epoch ms) in redisson_lock_timeout:{name}, and each listens on
 * its own channel. Every cr_lock_* call works on it. The name is copied;
 * nothing is sent to Redis.
 * - A waiter enqueues with its wait_ms, or with the client's
 *   fair_lock_wait_timeout_ms (default 300000) for CR_WAIT_FOREVER. A
 *   waiter at the head that stays in line past that much beyond the
 *   holder's lease is dropped from the queue by the next caller and joins
 *   again at the tail (Redisson's rule; watchdog holds longer than that
 *   cost waiters their place, not their wait).
 * - A waiter that gives up (wait ran out, error, client freed) leaves the
 *   queue at once. A dead process's waiter stays until its deadline and
 *   delays those behind it until then, as in Redisson; they re-check at
 *   least every second, and every 100 ms while the lock is free.
 * - cr_lock_try_lock with wait_ms 0 makes one attempt without joining the
 *   queue (Redisson's tryLock(); its tryLock(0, lease) joins and leaves).
 * - Unlocking a fair lock nobody holds wakes the first waiter, as Redisson
 *   does, but returns CR_ENOTOWNER (CR_ELOST if this owner had held it)
 *   where Redisson reports success.
 * - cr_lock_delete deletes the hash, the queue and the deadlines without
 *   waking anyone; cr_lock_force_unlock wakes the first waiter.
 * Deadlines use the clients' wall clocks: keep them NTP-synchronised.
 * Ownership: *out needs to be freed with cr_lock_free().
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_EFORKED, CR_ECLOSED. */
CR_EXPORT cr_status cr_fair_lock_new(cr_client *client, const char *name,
                                     cr_lock **out);

/* cr_lock_free: release the handle. Holds are not released: unlock first.
 * A watchdog renewal of a hold taken through this handle goes on until it is
 * unlocked through another handle or the client is freed. NULL does nothing. */
CR_EXPORT void cr_lock_free(cr_lock *lock);

/* cr_lock_name: the lock's name as given. Borrowed. */
CR_EXPORT const char *cr_lock_name(const cr_lock *lock);

/* cr_lock_lock: acquire, waiting as long as it takes. With lease_ms =
 * CR_LEASE_WATCHDOG the lease is the client's watchdog timeout, renewed every
 * third of it while held; otherwise the hold expires after lease_ms.
 * Returns CR_OK, CR_EREENTRANT (a non-reentrant kind already held by this
 * owner), CR_EDEADLK (a write lock whose owner holds read holds),
 * CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO (Redis unreachable
 * for longer than the reconnect window), CR_ESERVER, CR_ESCRIPT, CR_EAUTH,
 * CR_ENOPERM, CR_ECONFIG, CR_ETLS.
 * Threads: safe; the owner is the calling thread. */
CR_EXPORT cr_status cr_lock_lock(cr_lock *lock, int64_t lease_ms);

/* cr_lock_try_lock: acquire, waiting at most wait_ms (0: one attempt,
 * CR_WAIT_FOREVER: as cr_lock_lock). Returns CR_OK when acquired, CR_BUSY
 * when the wait ran out, and the failures of cr_lock_lock: CR_EREENTRANT,
 * CR_EDEADLK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_try_lock(cr_lock *lock, int64_t wait_ms,
                                     int64_t lease_ms);

/* cr_lock_unlock: release one hold of the calling thread. A partial unlock
 * re-applies the lock's current lease (Redisson's rule: the last explicit
 * lease taken through this handle, else the watchdog timeout). Returns CR_OK,
 * CR_ENOTOWNER when the thread holds no hold, CR_ELOST when this client
 * believed it held the lock but the hold had expired or been removed (its
 * lease was lost), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_unlock(cr_lock *lock);

/* Explicit-thread-id forms of the three calls above; thread_id may be any
 * value (negative ones included) as long as lock and unlock agree. */

/* cr_lock_lock_tid: cr_lock_lock for the owner `thread_id`.
 * Returns CR_OK, CR_EREENTRANT, CR_EDEADLK, CR_EINVAL, CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH,
 * CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_lock_tid(cr_lock *lock, int64_t thread_id,
                                     int64_t lease_ms);
/* cr_lock_try_lock_tid: cr_lock_try_lock for the owner `thread_id`.
 * Returns CR_OK, CR_BUSY, CR_EREENTRANT, CR_EDEADLK, CR_EINVAL, CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH,
 * CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_try_lock_tid(cr_lock *lock, int64_t thread_id,
                                         int64_t wait_ms, int64_t lease_ms);
/* cr_lock_unlock_tid: cr_lock_unlock for the owner `thread_id`.
 * Returns CR_OK, CR_ENOTOWNER, CR_ELOST, CR_EINVAL, CR_ENOMEM, CR_ECLOSED,
 * CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM,
 * CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_unlock_tid(cr_lock *lock, int64_t thread_id);

/* cr_lock_force_unlock: release the lock whoever holds it and wake a waiter.
 * *unlocked (may be NULL) tells whether it was held.
 * Returns CR_OK, CR_ENOTSUP (MultiLock, RedLock), CR_EINVAL, CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH,
 * CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_force_unlock(cr_lock *lock, bool *unlocked);

/* cr_lock_delete: Redisson's delete(): as force_unlock for RLock.
 * *deleted (may be NULL) tells whether there was something to delete.
 * Returns CR_OK, CR_ENOTSUP (MultiLock, RedLock), CR_EINVAL, CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH,
 * CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_delete(cr_lock *lock, bool *deleted);

/* Queries: plain commands, no scripts. */

/* cr_lock_is_locked: whether anyone holds the lock.
 * Returns CR_OK, CR_ENOTSUP (MultiLock, RedLock), CR_EINVAL, CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH,
 * CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_is_locked(cr_lock *lock, bool *locked);
/* cr_lock_is_held_by_current_thread, cr_lock_is_held_by_thread: whether
 * the calling thread (the owner `thread_id`) holds it.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_is_held_by_current_thread(cr_lock *lock,
                                                      bool *held);
CR_EXPORT cr_status cr_lock_is_held_by_thread(cr_lock *lock,
                                              int64_t thread_id, bool *held);
/* cr_lock_get_hold_count, cr_lock_get_hold_count_tid: the hold count of
 * the calling thread (of the owner `thread_id`); 0 when not held.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_get_hold_count(cr_lock *lock, int64_t *count);
CR_EXPORT cr_status cr_lock_get_hold_count_tid(cr_lock *lock,
                                               int64_t thread_id,
                                               int64_t *count);
/* cr_lock_remain_time_to_live: the remaining lease in ms; -2 when not
 * locked, -1 when it has no expiry.
 * Returns CR_OK, CR_ENOTSUP (MultiLock, RedLock), CR_EINVAL, CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH,
 * CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_lock_remain_time_to_live(cr_lock *lock,
                                                int64_t *ttl_ms);

/* cr_lock_is_lost: true when this client took the lock for `thread_id` (or
 * the calling thread with cr_lock_is_lost) and has since found the hold
 * lost: a renewal found it gone; its lease ran out on this host's clock
 * before a renewal succeeded (the lease clock: the moment its last
 * successful acquire or renewal was sent plus its lease, less 1 % and 2 ms
 * for clock rates, so before the server can let anyone else in); or, after
 * a Sentinel failover, the new master does not have it; or an unlock
 * found it gone (which then returns CR_ELOST). The flag stays
 * until that owner unlocks or acquires again, or the lock is force-unlocked
 * or deleted through this client. Nothing is sent to Redis.
 * Returns CR_OK, CR_EINVAL (a handle that is not live, NULL lost). */
CR_EXPORT cr_status cr_lock_is_lost(cr_lock *lock, bool *lost);
CR_EXPORT cr_status cr_lock_is_lost_tid(cr_lock *lock, int64_t thread_id,
                                        bool *lost);

/* cr_lock_lease_left: how long the hold of the calling thread (of
 * `thread_id` with the _tid form) still stands by this host's clock: its
 * local deadline (see cr_lock_is_lost) less now, 0 once lost. A watchdog
 * hold's deadline moves on with each successful renewal. A process that
 * must stop its work before another holder can be in stops it by then.
 * Returns CR_OK, CR_ENOTOWNER (this client holds none for that owner),
 * CR_ENOTSUP (MultiLock, RedLock: see cr_multilock_get_validity),
 * CR_EINVAL (a handle that is not live, NULL left_ms). */
CR_EXPORT cr_status cr_lock_lease_left(cr_lock *lock, int64_t *left_ms);
CR_EXPORT cr_status cr_lock_lease_left_tid(cr_lock *lock, int64_t thread_id,
                                           int64_t *left_ms);

/* cr_lock_set_lost_callback: call `fn` when a hold taken through this
 * handle after this call is found lost (see cr_lock_is_lost; holds taken
 * before keep the callback they were taken with; NULL stops giving one to
 * new holds). The callback runs on the client's lease-clock thread, which
 * never waits on Redis, so it comes on time however slow the server is;
 * it must not block, and may run after cr_lock_free while the hold lasts:
 * `userdata` must stay valid until the hold is released or the client
 * freed. A callback already due when the hold is released runs before
 * that release (cr_lock_unlock, force unlock, delete) returns, so nothing
 * calls it with `userdata` afterwards.
 * Returns CR_OK, CR_EINVAL (a handle that is not live). */
CR_EXPORT cr_status cr_lock_set_lost_callback(cr_lock *lock,
                                              cr_lock_lost_fn fn,
                                              void *userdata);

/* ------------------------------------------------------ other lock kinds */

/* cr_fenced_lock_new: Redisson's RFencedLock `name`: an RLock whose every
 * acquisition (reentrant ones too) takes the next value of the counter
 * redisson_lock_token:{name}, a fencing token. A resource guarded by the
 * lock keeps the highest token it has seen and refuses writes carrying an
 * older one, so a holder whose lease ran out (a long pause) cannot overwrite
 * the next holder's work. The counter never gets a TTL from credisson.
 * All cr_lock_* calls work on it; cr_lock_delete also deletes the counter
 * (as Redisson: the sequence then starts over at 1).
 * Ownership: *out needs to be freed with cr_lock_free().
 * Returns cr_lock_new's statuses: CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED,
 * CR_EFORKED. */
CR_EXPORT cr_status cr_fenced_lock_new(cr_client *client, const char *name,
                                       cr_lock **out);

/* cr_fenced_lock_try_lock_and_get_token: as cr_lock_try_lock, and on CR_OK
 * *token is the token of this acquisition (1, 2, 3...). wait_ms 0 makes
 * exactly one attempt (Redisson's no-argument form waits forever).
 * Returns CR_OK, CR_BUSY, CR_EINVAL (not a fenced lock; bad wait, lease or
 * NULL token), CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER,
 * CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_fenced_lock_try_lock_and_get_token(cr_lock *lock,
                                                          int64_t wait_ms,
                                                          int64_t lease_ms,
                                                          int64_t *token);
/* cr_fenced_lock_lock_and_get_token: the same, waiting as long as it takes;
 * unlike Redisson it honours lease_ms.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_fenced_lock_lock_and_get_token(cr_lock *lock,
                                                      int64_t lease_ms,
                                                      int64_t *token);
/* Explicit-owner forms of the two calls above (Redisson's
 * tryLockAndGetTokenAsync(wait, lease, unit, threadId) and
 * lockAndGetTokenAsync(lease, unit, threadId)): thread_id as for
 * cr_lock_try_lock_tid, an id from cr_async_owner_id() included.
 * Returns as the call each mirrors: CR_OK, CR_BUSY (the first only),
 * CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER,
 * CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_fenced_lock_try_lock_and_get_token_tid(
    cr_lock *lock, int64_t thread_id, int64_t wait_ms, int64_t lease_ms,
    int64_t *token);
CR_EXPORT cr_status cr_fenced_lock_lock_and_get_token_tid(cr_lock *lock,
                                                          int64_t thread_id,
                                                          int64_t lease_ms,
                                                          int64_t *token);
/* cr_fenced_lock_get_token: the counter's current value (0 before any).
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_fenced_lock_get_token(cr_lock *lock, int64_t *token);

/* cr_spin_lock_new: Redisson's RSpinLock `name`: RLock's keys and fields, no
 * pub/sub at all; waiters retry with exponential backoff (1 ms doubling to
 * 128 ms, with jitter), for deployments where pub/sub fan-out is the
 * bottleneck. It excludes an RLock of the same name (whose waiters are not
 * woken by its unlock: they wait for their ttl hint).
 * Ownership: *out needs to be freed with cr_lock_free().
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_spin_lock_new(cr_client *client, const char *name,
                                     cr_lock **out);

/* cr_non_reentrant_lock_new: Redisson 4.4's non-reentrant lock: RLock's
 * layout, but the owner taking it again gets CR_EREENTRANT instead of a
 * second hold.
 * Ownership: *out needs to be freed with cr_lock_free().
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_non_reentrant_lock_new(cr_client *client,
                                              const char *name,
                                              cr_lock **out);

/* cr_non_reentrant_fair_lock_new: the same rule on the fair lock's layout
 * (Redisson 4.4's non-reentrant fair lock).
 * Ownership: *out needs to be freed with cr_lock_free().
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_non_reentrant_fair_lock_new(cr_client *client,
                                                   const char *name,
                                                   cr_lock **out);

#ifdef __cplusplus
}
#endif
#endif
