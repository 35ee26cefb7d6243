/* SPDX-License-Identifier: MIT */
/*
 * Cyclic barriers (cr_barrier): Java's CyclicBarrier across processes and
 * hosts, credisson's own object (Redisson has none). `parties` parties call
 * cr_barrier_await; the last to arrive releases all of them at once and
 * the barrier is ready for the next round (the next generation). Each
 * party learns the generation it was released from and its arrival index,
 * as Java's await() returns it: parties - 1 for the first to arrive, 0 for
 * the last.
 *
 * A round that cannot complete is broken, and every party waiting in it
 * returns CR_EBROKEN at once instead of waiting out its wait: a party whose
 * wait runs out (it returns CR_TIMEOUT), a party whose client is freed
 * while it waits (cancelled: CR_ECLOSED), a party whose process dies, and
 * cr_barrier_reset. A waiting party holds a lease (the client's
 * lock_watchdog_timeout_ms) that it renews while it waits; one that is not
 * renewed in time, judged on the server's clock, breaks the round. Every
 * waiter keeps a timer at the earliest lease it knows of, so a dead party
 * is noticed within its lease. Once broken, a barrier stays broken (an
 * await returns CR_EBROKEN at once) until cr_barrier_reset.
 *
 * Keys: the hash under the name, the sorted set
 * credisson_barrier_arrivals:{name} and the channels
 * credisson_barrier__channel:{name}:0 and :1, all in the name's cluster slot
 * (doc/coordination.md has the protocol). Works on standalone servers,
 * Sentinel and Redis Cluster.
 *
 * Thread safety: handles may be shared by the threads of a process; every
 * call is safe from any thread. A party is a thread: two threads awaiting
 * one barrier are two parties. Free handles before their client.
 */
#ifndef CREDISSON_BARRIER_H
#define CREDISSON_BARRIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>
#include <credisson/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_barrier cr_barrier;

/* The most parties a barrier takes. */
#define CR_BARRIER_PARTIES_MAX ((int64_t)100000)

/* cr_barrier_new: a handle on the barrier `name` of `parties`
 * (1..CR_BARRIER_PARTIES_MAX) parties (Java's new CyclicBarrier(parties)).
 * The first await creates the barrier with that number; an await through
 * a handle with another number is refused. The name is copied; nothing is
 * sent to Redis.
 * Ownership: *out needs to be freed with cr_barrier_free().
 * Returns CR_OK, CR_EINVAL (NULL or empty name, parties out of range, NULL
 * out, a name whose keys fall in different cluster slots), CR_ENOMEM,
 * CR_EFORKED, CR_ECLOSED. */
CR_EXPORT cr_status cr_barrier_new(cr_client *client, const char *name,
                                   int64_t parties, cr_barrier **out);

/* cr_barrier_free: release the handle. NULL does nothing. */
CR_EXPORT void cr_barrier_free(cr_barrier *barrier);

/* cr_barrier_name: the name as given. Borrowed; "" for NULL. */
CR_EXPORT const char *cr_barrier_name(const cr_barrier *barrier);

/* cr_barrier_await: arrive at the barrier and wait, at most wait_ms (0:
 * only if this arrival completes the round; CR_WAIT_FOREVER: as long as it
 * takes), until every party has arrived (Java's await and await(timeout)).
 * *generation (may be NULL) gets the round's generation number (0 for the
 * first round), *index (may be NULL) the arrival index (parties - 1 first,
 * 0 last); both are set on CR_OK only.
 * Returns CR_OK when the round completed; CR_EBROKEN when it was broken
 * (by another party's timeout, cancellation or death, by a reset or a
 * deletion) or the barrier was broken already; CR_TIMEOUT when this
 * party's wait ran out (it broke the round for the others); CR_EINVAL
 * (the barrier has another number of parties, or a bad wait); CR_ECLOSED
 * (the client is being freed: the round is broken); CR_EIO (Redis
 * unreachable for longer than the reconnect window; the party's lease
 * lapses and breaks the round); CR_ESERVER, CR_ENOPERM. */
CR_EXPORT cr_status cr_barrier_await(cr_barrier *barrier, int64_t wait_ms,
                                     int64_t *generation, int64_t *index);

/* cr_barrier_reset: break the round under way (its waiters get
 * CR_EBROKEN) and begin the next, not broken (Java's reset). A barrier
 * that does not exist is left so.
 * Returns CR_OK, CR_EINVAL (NULL or freed handle), CR_EIO, CR_ESERVER,
 * CR_ENOPERM, CR_ESCRIPT, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_barrier_reset(cr_barrier *barrier);

/* cr_barrier_get_parties: the handle's number of parties (Java's
 * getParties); nothing is sent to Redis.
 * Returns CR_OK, CR_EINVAL (NULL or freed handle, NULL parties). */
CR_EXPORT cr_status cr_barrier_get_parties(cr_barrier *barrier,
                                           int64_t *parties);

/* cr_barrier_get_number_waiting: the parties that have arrived in the
 * round under way (Java's getNumberWaiting); 0 when the barrier does not
 * exist.
 * Returns CR_OK, CR_EINVAL (NULL or freed handle, NULL waiting), CR_EIO, CR_ESERVER,
 * CR_ENOPERM, CR_ESCRIPT, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_barrier_get_number_waiting(cr_barrier *barrier,
                                                  int64_t *waiting);

/* cr_barrier_is_broken: whether the barrier is broken (Java's isBroken).
 * Returns CR_OK, CR_EINVAL (NULL or freed handle, NULL broken), CR_EIO, CR_ESERVER,
 * CR_ENOPERM, CR_ESCRIPT, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_barrier_is_broken(cr_barrier *barrier, bool *broken);

/* cr_barrier_delete: delete the barrier; its waiters return CR_EBROKEN.
 * *deleted (may be NULL) tells whether it existed.
 * Returns CR_OK, CR_EINVAL (NULL or freed handle), CR_EIO, CR_ESERVER,
 * CR_ENOPERM, CR_ESCRIPT, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_barrier_delete(cr_barrier *barrier, bool *deleted);

#ifdef __cplusplus
}
#endif
#endif
