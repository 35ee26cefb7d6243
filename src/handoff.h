/* SPDX-License-Identifier: MIT */
/*
 * The releaser's turn: the one policy for how a handle that has just
 * released lets the waiters its release woke go first.
 *
 * A handle that releases and acquires again at once would win the race
 * against the waiters its release woke (they are a message and a round
 * trip behind), and a loop would starve them. So the next acquisition of
 * that handle that may wait first pauses a turn.
 *
 * Locks (after an unlock): waiters in other processes (every subscriber
 * of the channel but this client) are counted: the handle waits until it
 * has read as many releases on the channel after its own, so that a
 * process that keeps taking the lock re-enters behind those that waited,
 * as in a queue. Each is given two of the handle's own cycles (its hold
 * and a turn), at most HANDOFF_COUNT_MAX_US in all, and the pause ends as
 * soon as no release came for two cycles (they left). A turn is `rtts`
 * unlock round trips: 4, doubled (up to 64) each time the first attempt
 * after a turn still found the lock free (the woken waiter was slower than
 * the turn: a loaded machine), one less each time it did not. Waiters of
 * this client only (woken one at a time): one turn of 4.
 *
 * Semaphores (after a release): a turn of four release round trips when
 * the release reached a subscriber other than this client, or this client
 * has waiting threads.
 *
 * A turn is 1 to 20 ms (cr__handoff_turn_us).
 */
#ifndef CR_HANDOFF_H
#define CR_HANDOFF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"

typedef struct cr__handoff {
    atomic_int_fast64_t until_us; /* the pause ends then (monotonic) */
    atomic_int_fast64_t turn_us;  /* the longest sleep when not counting */
    atomic_int_fast64_t quiet_us; /* no release for this long: they left */
    atomic_uint_fast64_t target;  /* release count to wait for; 0: none */
    atomic_int rtts;              /* a lock's turn, in round trips */
    atomic_int_fast64_t acquired_us; /* when the handle last took it */
} cr__handoff;

/* cr__handoff_init: no turn pending. */
void cr__handoff_init(cr__handoff *h);

/* cr__handoff_turn_us: a turn of `rtts` round trips of `rtt_us` each,
 * within 1 to 20 ms. */
int64_t cr__handoff_turn_us(int64_t rtts, int64_t rtt_us);

/* cr__handoff_after_unlock: a lock's unlock sent at `sent_us` (monotonic)
 * whose message on `channel` reached `heard` subscribers. `in_line`: this
 * client's own threads wait in line (wait.h), so their turn needs none. */
void cr__handoff_after_unlock(cr__handoff *h, cr_client *c,
                              const char *channel, int64_t heard,
                              int64_t sent_us, bool in_line);

/* cr__handoff_after_release: a semaphore's release, as above. */
void cr__handoff_after_release(cr__handoff *h, cr_client *c,
                               const char *channel, int64_t heard,
                               int64_t sent_us);

/* cr__handoff_before: an acquisition that may wait (wait_ms != 0) pauses
 * for the turn pending, within its wait budget; one that may not wait
 * goes at once. Returns true when it waited a lock's turn without being
 * able to count releases (cr__handoff_tune then learns from the first
 * attempt). */
bool cr__handoff_before(cr__handoff *h, cr_client *c, const char *channel,
                        int64_t wait_ms);

/* cr__handoff_tune: after such a turn, whether the first attempt found the
 * lock free at once (longer turns) or not (a little shorter). */
void cr__handoff_tune(cr__handoff *h, bool free_at_once);

/* cr__handoff_acquired: the handle took the lock now. */
void cr__handoff_acquired(cr__handoff *h);

#endif
