/* SPDX-License-Identifier: MIT */
/*
 * The releaser's turn: the one policy for how a handle that has just
 * released lets the waiters its release woke go first. It does no I/O and
 * reads no clock: the drivers (the blocking calls, wait.c's
 * cr__wait_turn, and the event loop's requests, async.c) give it what the
 * subscription saw and the time, and keep the turn it plans.
 *
 * A handle that releases and acquires again at once would win the race
 * against the waiters its release woke (they are a message and a round
 * trip behind), and a loop would starve them. So the next acquisition of
 * that handle that may wait first keeps a turn.
 *
 * Locks (after an unlock): waiters in other processes (every subscriber
 * of the channel but this client) are counted: the handle waits until it
 * has read as many releases on the channel after its own, so that a
 * process that keeps taking the lock re-enters behind those that waited,
 * as in a queue. Each is given two of the handle's own cycles (its hold
 * and a turn), at most HANDOFF_COUNT_MAX_US in all, and the counting ends
 * as soon as no release came for two cycles (they left). Where nothing
 * can be counted (the client is not subscribed), it sleeps a turn. A turn
 * is `rtts` unlock round
 * trips: 4, doubled (up to 64) each time the first attempt after a turn
 * still found the lock free (the woken waiter was slower than the turn: a
 * loaded machine), one less each time it did not. Waiters of this client
 * only (woken one at a time): one turn of 4.
 *
 * Semaphores (after a release): a turn of four release round trips when
 * the release reached a subscriber other than this client (its own
 * waiters wait in the semaphore's line, line.h, which the releaser's next
 * acquisition joins at its end).
 *
 * A turn is 1 to 20 ms (cr__handoff_turn_us).
 */
#ifndef CR_HANDOFF_H
#define CR_HANDOFF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pubsub.h"

typedef struct cr__handoff {
    atomic_int_fast64_t until_us; /* the turn ends then (monotonic) */
    atomic_int_fast64_t turn_us;  /* its sleep */
    atomic_int_fast64_t quiet_us; /* no release for this long: they left */
    atomic_uint_fast64_t target;  /* release count to wait for; 0: none */
    atomic_int rtts;              /* a lock's turn, in round trips */
    atomic_int_fast64_t acquired_us; /* when the handle last took it */
} cr__handoff;

/* A turn an acquisition keeps before its first attempt (monotonic us). */
typedef struct cr__turn {
    int64_t until_us;  /* it ends then at the latest */
    int64_t sleep_us;  /* the sleep after the counting (or without one) */
    uint64_t target;   /* count releases until this many; 0: no counting */
    int64_t quiet_us;  /* the counting ends when none came for this long */
    int64_t since_us;  /* when it began */
    bool counted;      /* its count was waited for */
} cr__turn;

/* What a turn asks for next (cr__turn_next). */
typedef enum cr__turn_do {
    CR__TURN_GO,    /* over: make the first attempt */
    CR__TURN_COUNT, /* wait until the subscription's count of releases
                     * reaches the target, none came for quiet_us, or
                     * *wait_us passed; then ask again */
    CR__TURN_SLEEP  /* sleep *wait_us, then go */
} cr__turn_do;

/* cr__handoff_init: no turn pending. */
void cr__handoff_init(cr__handoff *h);

/* cr__handoff_turn_us: a turn of `rtts` round trips of `rtt_us` each,
 * within 1 to 20 ms. */
int64_t cr__handoff_turn_us(int64_t rtts, int64_t rtt_us);

/* cr__handoff_after_unlock: a lock's unlock sent at `sent_us` whose
 * message reached `reached` subscribers, its reply read at `now_us`, with
 * `seen` what the releaser's client's subscription to the channel has
 * seen. `in_line`: this client's own threads wait in line (wait.h), so
 * their turn needs none. */
void cr__handoff_after_unlock(cr__handoff *h, const cr__sub_seen *seen,
                              int64_t reached, int64_t sent_us, int64_t now_us,
                              bool in_line);

/* cr__handoff_after_release: a semaphore's release, as above. */
void cr__handoff_after_release(cr__handoff *h, const cr__sub_seen *seen,
                               int64_t reached, int64_t sent_us,
                               int64_t now_us);

/* cr__handoff_turn: the turn pending for an acquisition that may wait
 * `wait_ms` (within which it is kept), at `now_us`: false when there is
 * none (none pending, or a wait of 0: one that may not wait goes at
 * once). */
bool cr__handoff_turn(const cr__handoff *h, int64_t now_us, int64_t wait_ms,
                      cr__turn *t);

/* cr__turn_next: what turn `t` asks for at `now_us`, given what the
 * subscription to its channel has seen (read by the driver before each
 * call; not subscribed, waiters -1: nothing can be counted): with a
 * target, one wait for the count (which ends once it is reached, none came
 * for the quiet time, or the turn has passed), then go on; without one
 * (or nothing to count), sleep the turn's rest. */
cr__turn_do cr__turn_next(cr__turn *t, const cr__sub_seen *seen,
                          int64_t now_us, int64_t *wait_us);

/* cr__turn_count_over: during a turn's count wait, whether it is over at
 * now_us (reached, quiet for quiet_us, or past the turn's end); if not,
 * *check_us is when it may be at the latest without a new release. For a
 * driver that looks at the count now and then (the loop's) rather than
 * waking on each release (pub/sub's cr__pubsub_await_count). */
bool cr__turn_count_over(const cr__turn *t, const cr__sub_seen *seen,
                         int64_t now_us, int64_t *check_us);

/* cr__turn_tune: after turn t, whether the first attempt is to tune the
 * lock's turn (cr__handoff_tune): it had releases to count and could not
 * (it slept a turn instead). */
bool cr__turn_tune(const cr__turn *t, const cr__sub_seen *seen);

/* cr__handoff_tune: after such a turn, whether the first attempt found the
 * lock free at once (longer turns) or not (a little shorter). */
void cr__handoff_tune(cr__handoff *h, bool free_at_once);

/* cr__handoff_acquired: the handle took the lock at `now_us`. */
void cr__handoff_acquired(cr__handoff *h, int64_t now_us);

#endif
