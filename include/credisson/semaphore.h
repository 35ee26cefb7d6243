/* SPDX-License-Identifier: MIT */
/*
 * Semaphores: Redisson's RSemaphore (cr_semaphore) and
 * RPermitExpirableSemaphore (cr_permit_semaphore), on the same keys and
 * channel as Java, so C and Java processes share one semaphore.
 *
 * An RSemaphore's permits are counts, not owned: anyone may release, and
 * the permits of a process that dies while holding them are gone for good.
 * A permit-expirable semaphore hands out permits with ids and optional
 * leases instead: each permit comes back by itself when its lease runs out.
 * That is the worker-pool pattern across processes: set N permits once,
 * have each worker acquire one with a lease longer than a task takes,
 * extend the lease (cr_permit_semaphore_update_lease_time) if a task runs
 * long, and release the permit by id when done. A worker that crashes or
 * is killed never releases, and its permit returns to the pool when its
 * lease ends, so the pool never shrinks for good.
 *
 * Counts are Java ints: permits from 0 to CR_PERMITS_MAX. Durations are
 * milliseconds; waits take CR_WAIT_FOREVER or 0..CR_DURATION_MAX.
 *
 * Waiting: a blocked acquire subscribes to redisson_sc:{name} and wakes on
 * every release message (from C or Java), and re-checks at least once a
 * second, so a missed message costs at most that second. A blocked
 * permit-expirable acquire also wakes when the earliest lease runs out.
 *
 * Thread safety: handles may be shared by the threads of a process; every
 * call is safe from any thread. Permits have no owner thread: any thread
 * (or process) may release them. Free handles before their client.
 */
#ifndef CREDISSON_SEMAPHORE_H
#define CREDISSON_SEMAPHORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>
#include <credisson/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_semaphore cr_semaphore;
typedef struct cr_permit_semaphore cr_permit_semaphore;

/* The largest permit count any call takes (Java's Integer.MAX_VALUE). */
#define CR_PERMITS_MAX ((int64_t)2147483647)

/* ------------------------------------------------------------ RSemaphore */

/* cr_semaphore_new: a handle on the semaphore `name` (Redisson
 * getSemaphore). The name is copied; nothing is sent to Redis.
 * Ownership: *out needs to be freed with cr_semaphore_free().
 * Returns CR_OK, CR_EINVAL (NULL or empty name, NULL out), CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_semaphore_new(cr_client *client, const char *name,
                                     cr_semaphore **out);

/* cr_semaphore_free: release the handle (not any permits). NULL does
 * nothing. */
CR_EXPORT void cr_semaphore_free(cr_semaphore *sem);

/* cr_semaphore_name: the name as given. Borrowed; "" for NULL. */
CR_EXPORT const char *cr_semaphore_name(const cr_semaphore *sem);

/* cr_semaphore_try_set_permits: set the number of permits to `permits`
 * (0..CR_PERMITS_MAX) if the semaphore does not exist yet (Redisson
 * trySetPermits). ttl_ms > 0 makes the semaphore's key expire after that
 * long (trySetPermits(permits, ttl)); 0: no expiry. *set (may be NULL) tells
 * whether it was set. A positive count is published to wake waiters.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_try_set_permits(cr_semaphore *sem,
                                                 int64_t permits,
                                                 int64_t ttl_ms, bool *set);

/* cr_semaphore_acquire: take `permits` (0..CR_PERMITS_MAX) permits, waiting
 * as long as it takes. 0 succeeds at once without asking Redis, as in
 * Redisson. A semaphore that was never set has no permits: the call waits
 * until someone sets or releases some.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO (Redis
 * unreachable for longer than the client's reconnect window), CR_ESERVER,
 * CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_acquire(cr_semaphore *sem, int64_t permits);

/* cr_semaphore_try_acquire: as cr_semaphore_acquire, waiting at most
 * wait_ms (0: one attempt; CR_WAIT_FOREVER: as acquire).
 * Returns CR_OK when taken, CR_BUSY when the wait ran out, CR_EINVAL,
 * CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT,
 * CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. An attempt whose reply was lost is never counted twice: each
 * call's attempts share a request id that Redis remembers for a while after
 * a success. */
CR_EXPORT cr_status cr_semaphore_try_acquire(cr_semaphore *sem,
                                             int64_t permits,
                                             int64_t wait_ms);

/* cr_semaphore_release: give back `permits` (0..CR_PERMITS_MAX; 0 does
 * nothing) permits, creating the semaphore if it does not exist (Redisson
 * release). The new count is published, when positive, to wake waiters.
 * Not resent after a broken link (CR_EIO): the release may or may not have
 * happened.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_release(cr_semaphore *sem, int64_t permits);

/* cr_semaphore_release_if_exists: as release, but only if the semaphore
 * exists (Redisson releaseIfExists). *released (may be NULL) tells whether
 * it did; 0 permits report false without asking Redis.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_release_if_exists(cr_semaphore *sem,
                                                   int64_t permits,
                                                   bool *released);

/* cr_semaphore_add_permits: add `delta` (-CR_PERMITS_MAX..CR_PERMITS_MAX)
 * to the count, creating the semaphore at 0 + delta if absent (Redisson
 * addPermits; a negative delta is Redisson's reducePermits). The count may
 * go negative. As in Redisson, any expiry of the key is removed. The new
 * count is published when positive. Not resent after a broken link.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_add_permits(cr_semaphore *sem,
                                             int64_t delta);

/* cr_semaphore_set_permits: make the available count exactly `permits`
 * (0..CR_PERMITS_MAX), whatever it was, keeping any expiry of the key.
 * credisson's own: Redisson's RSemaphore has no setPermits (permits that
 * are out are not tracked, so this sets what is available now, not a
 * total). A positive count is published.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_set_permits(cr_semaphore *sem,
                                             int64_t permits);

/* cr_semaphore_drain_permits: take every available permit (Redisson
 * drainPermits): the count becomes 0 and *drained (may be NULL) gets what
 * it was (0 when the semaphore does not exist; negative if it was). Any
 * expiry of the key is removed, as in Redisson.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_drain_permits(cr_semaphore *sem,
                                               int64_t *drained);

/* cr_semaphore_available_permits: the current count (0 when the semaphore
 * does not exist).
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_available_permits(cr_semaphore *sem,
                                                   int64_t *permits);

/* cr_semaphore_delete: delete the semaphore (Redisson delete). Blocked
 * waiters are not woken by it; *deleted (may be NULL) tells whether it
 * existed.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_semaphore_delete(cr_semaphore *sem, bool *deleted);

/* ------------------------------------------- RPermitExpirableSemaphore */

/* Length of a permit id in hex characters; buffers need one more. */
#define CR_PERMIT_ID_LEN 32
/* lease_ms: the permit never expires (Redisson's leaseTime -1). */
#define CR_LEASE_NONE ((int64_t)-1)
/* The most permits one acquire_n takes when each gets its own id. */
#define CR_PERMIT_ACQUIRE_MAX ((int64_t)1000)

/* cr_permit_semaphore_new: a handle on the permit-expirable semaphore
 * `name` (Redisson getPermitExpirableSemaphore). The name is copied;
 * nothing is sent to Redis.
 * Ownership: *out needs to be freed with cr_permit_semaphore_free().
 * Returns CR_OK, CR_EINVAL (NULL or empty name, NULL out), CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_permit_semaphore_new(cr_client *client,
                                            const char *name,
                                            cr_permit_semaphore **out);

/* cr_permit_semaphore_free: release the handle (not any permits). NULL
 * does nothing. */
CR_EXPORT void cr_permit_semaphore_free(cr_permit_semaphore *sem);

/* cr_permit_semaphore_name: the name as given. Borrowed; "" for NULL. */
CR_EXPORT const char *cr_permit_semaphore_name(const cr_permit_semaphore *sem);

/* cr_permit_semaphore_acquire: take one permit, waiting as long as it
 * takes, and write its id (32 lowercase hex characters and a NUL) into
 * `id`, which must have room for CR_PERMIT_ID_LEN + 1 bytes. The permit
 * expires lease_ms (1..CR_DURATION_MAX) after it was granted, measured on
 * this machine's wall clock (all clients of one semaphore need synchronised
 * clocks), or never with CR_LEASE_NONE. Expired permits are reclaimed by the
 * next acquire attempt, lease call or count from any client.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_acquire(cr_permit_semaphore *sem,
                                                int64_t lease_ms, char *id);

/* cr_permit_semaphore_try_acquire: as acquire, waiting at most wait_ms
 * (0: one attempt; CR_WAIT_FOREVER: as acquire). Returns CR_OK with the id
 * in `id`, CR_BUSY when the wait ran out (`id` untouched), CR_EINVAL,
 * CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT,
 * CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. An attempt whose reply was lost is looked up by its id before
 * the next one, so it is not taken twice. */
CR_EXPORT cr_status cr_permit_semaphore_try_acquire(cr_permit_semaphore *sem,
                                                    int64_t wait_ms,
                                                    int64_t lease_ms,
                                                    char *id);

/* cr_permit_semaphore_try_acquire_n: take `permits` permits at once
 * (Redisson tryAcquire(permits, waitTime, leaseTime)), waiting at most
 * wait_ms (0: one attempt; CR_WAIT_FOREVER: as long as it takes), each
 * expiring lease_ms after it was granted (or never: CR_LEASE_NONE). Their
 * ids go to `ids`, one after another, each CR_PERMIT_ID_LEN characters and
 * a NUL (id i at ids + i * (CR_PERMIT_ID_LEN + 1)), and their number to
 * *n_ids (may be NULL). How many ids there are follows the Java side's
 * release line (cr_client_options.redisson_version): since Redisson 3.23.4
 * one per permit (1..CR_PERMIT_ACQUIRE_MAX permits; `ids` needs room for
 * `permits` ids), before it one id for all of them (1..CR_PERMITS_MAX;
 * room for one id), given back with cr_permit_semaphore_release_n(id,
 * permits). On those older lines a lease with more than one permit is
 * CR_ENOTSUP: when such an id's lease runs out, Redisson's and
 * credisson's scripts give back one permit, not all.
 * Returns CR_OK, CR_BUSY when the wait ran out (nothing written),
 * CR_EINVAL, CR_ENOTSUP, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_try_acquire_n(cr_permit_semaphore *sem,
                                                      int64_t permits,
                                                      int64_t wait_ms,
                                                      int64_t lease_ms,
                                                      char *ids,
                                                      size_t *n_ids);

/* cr_permit_semaphore_acquire_n: as try_acquire_n, waiting as long as it
 * takes (Redisson acquire(permits, leaseTime)).
 * Returns CR_OK, CR_EINVAL, CR_ENOTSUP, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG,
 * CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_acquire_n(cr_permit_semaphore *sem,
                                                  int64_t permits,
                                                  int64_t lease_ms, char *ids,
                                                  size_t *n_ids);

/* cr_permit_semaphore_release: give back the permit `id` (32 hex
 * characters, either case; from C or from Java's acquire) (Redisson
 * release). Returns CR_OK; CR_ENOTOWNER when no such permit is out (never
 * issued, already released, or expired and reclaimed); CR_ELOST when its
 * lease had run out but it was not reclaimed yet: the permit comes back all
 * the same (where Java's release throws); CR_EINVAL for a malformed id;
 * CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO (not resent after a broken
 * link), CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG,
 * CR_ETLS. It gives back one permit: an id that stands for several (an
 * acquire_n before Redisson 3.23.4) goes back with
 * cr_permit_semaphore_release_n and its count, or the rest are lost (the
 * server does not know how many an id stands for). */
CR_EXPORT cr_status cr_permit_semaphore_release(cr_permit_semaphore *sem,
                                                const char *id);

/* cr_permit_semaphore_release_n: give back the `permits` permits that `id`
 * stands for: an id of cr_permit_semaphore_acquire_n for a Java side
 * before Redisson 3.23.4, which stands for all its permits (Java has no
 * public acquire(n) or release of several there; its release(permitId)
 * gives back one). Since 3.23.4 an id stands for one permit, and
 * `permits` must be 1 (else CR_EINVAL).
 * Returns CR_OK, CR_ENOTOWNER, CR_ELOST, CR_EINVAL, CR_ENOMEM, CR_ECLOSED,
 * CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM,
 * CR_ECONFIG, CR_ETLS, as cr_permit_semaphore_release. */
CR_EXPORT cr_status cr_permit_semaphore_release_n(cr_permit_semaphore *sem,
                                                  const char *id,
                                                  int64_t permits);

/* cr_permit_semaphore_try_release: as release, reporting in *released
 * (may be NULL) whether a permit with an unexpired lease was released
 * (Redisson tryRelease); an absent or expired id is CR_OK with false.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_try_release(cr_permit_semaphore *sem,
                                                    const char *id,
                                                    bool *released);

/* cr_permit_semaphore_update_lease_time: make the permit `id` expire
 * lease_ms from now (or never with CR_LEASE_NONE) (Redisson
 * updateLeaseTime). *updated (may be NULL) is false when the permit is not
 * out any more (released, or expired: expired permits are reclaimed first).
 * A malformed id or lease is CR_EINVAL.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_update_lease_time(
    cr_permit_semaphore *sem, const char *id, int64_t lease_ms,
    bool *updated);

/* cr_permit_semaphore_get_lease_time: the ms left of the permit's lease in
 * *remaining_ms, or CR_LEASE_NONE (-1) when it never expires (Redisson
 * getLeaseTime). Returns CR_OK, CR_ENOTOWNER when the permit is not out,
 * CR_EINVAL for a malformed id, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_get_lease_time(
    cr_permit_semaphore *sem, const char *id, int64_t *remaining_ms);

/* Counts, each after reclaiming expired permits (Redisson
 * availablePermits, acquiredPermits, getPermits): permits available now;
 * permits out; both together (0 when the semaphore was never set).
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_available_permits(
    cr_permit_semaphore *sem, int64_t *permits);
CR_EXPORT cr_status cr_permit_semaphore_acquired_permits(
    cr_permit_semaphore *sem, int64_t *permits);
CR_EXPORT cr_status cr_permit_semaphore_get_permits(cr_permit_semaphore *sem,
                                                    int64_t *permits);

/* cr_permit_semaphore_try_set_permits: set the number of permits
 * (0..CR_PERMITS_MAX) if the semaphore does not exist yet (Redisson
 * trySetPermits). *set (may be NULL) tells whether it was set.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_try_set_permits(
    cr_permit_semaphore *sem, int64_t permits, bool *set);

/* cr_permit_semaphore_set_permits: make available + out equal `permits`
 * (0..CR_PERMITS_MAX) by changing the available count (Redisson
 * setPermits); the available count may go negative while too many permits
 * are out.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_set_permits(cr_permit_semaphore *sem,
                                                    int64_t permits);

/* cr_permit_semaphore_add_permits: add `delta`
 * (-CR_PERMITS_MAX..CR_PERMITS_MAX) to the available count (Redisson
 * addPermits). Not resent after a broken link.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_add_permits(cr_permit_semaphore *sem,
                                                    int64_t delta);

/* cr_permit_semaphore_delete: delete the semaphore and its issued permits.
 * *deleted (may be NULL) tells whether anything existed.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_permit_semaphore_delete(cr_permit_semaphore *sem,
                                               bool *deleted);

#ifdef __cplusplus
}
#endif
#endif
