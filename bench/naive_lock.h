/* SPDX-License-Identifier: MIT */
/*
 * The lock every blog post starts from, as a peer for the benchmarks:
 * SET key token NX PX lease to take it, retried after a 1 ms sleep while
 * someone else has it, and a compare-and-delete script to give it back. No
 * reentrancy, no renewal, no notification: waiters poll.
 *
 * Thread safety: a naive_lock and its connection belong to one thread.
 */
#ifndef CR_BENCH_NAIVE_LOCK_H
#define CR_BENCH_NAIVE_LOCK_H

#include <stdint.h>

#include <hiredis/hiredis.h>

typedef struct naive_lock naive_lock;

/* naive_lock_new: a lock on `key` used through connection `c` (borrowed),
 * with a random token and a lease of lease_ms. Loads the unlock script. */
naive_lock *naive_lock_new(redisContext *c, const char *key, int64_t lease_ms);
void naive_lock_free(naive_lock *l);

/* naive_lock_lock: SET NX PX until it succeeds, sleeping retry_us between
 * attempts. Returns the number of attempts it took. */
uint64_t naive_lock_lock(naive_lock *l, int64_t retry_us);

/* naive_lock_unlock: delete the key if it still holds our token; returns
 * 1 when deleted, 0 when the lease had run out. */
int naive_lock_unlock(naive_lock *l);

#endif
