/* SPDX-License-Identifier: MIT */
/*
 * The cyclic barrier's await (barrier.c): a party under way, and the rule
 * that picks its next attempt, which the blocking call and the loop's
 * request both follow.
 */
#ifndef CR_BARRIER_H
#define CR_BARRIER_H

#include "credisson/barrier.h"
#include "object.h"

/* What an attempt's reply says to end the wait and begin another, on the
 * channel of the generation the arrival joined (see barrier.c's attempt);
 * never returned by the library. */
#define CR__BARRIER_AGAIN CR_EDEADLK

/* One party's await under way. */
typedef struct cr__barrier_party {
    cr_barrier *barrier;
    char owner[CR__OWNER_MAX];
    int64_t lease_ms;
    bool arrived; /* the arrival was answered: looks from now on (an
                   * arrival whose reply was lost is sent again) */
    int64_t generation, index;
    int64_t look_due; /* monotonic ms: the next look (renewal, or the
                       * earliest lease's lapse); before it, a wake-up
                       * only reads the round's outcome */
    int64_t since;    /* the barrier's creation stamp, which its round's
                       * completion message names */
    int parity;       /* the channel the wait listens to */
} cr__barrier_party;

/* cr__barrier_decode: what the channels' messages mean (0:<g>:<since>:
 * generation g completed, kept; 1: broken, reset, deleted; both wake
 * every waiter). */
cr__wake cr__barrier_decode(const char *payload, size_t len);

/* What a party's next attempt is: none (CR__BARRIER_HEARD: the
 * subscription of its wait `w` has read its round's completion, the last
 * kept message being 0:<generation>:<since>, so the round completed and
 * the party is released without a command), the arrival, the quick look
 * (a wake-up before the next look is due, at `now`) or the look. A
 * generation
 * completes once, and the creation stamp tells a barrier deleted and made
 * again under the same name from the one the party arrived at, so no
 * earlier message can pass for its round's. */
typedef enum cr__barrier_step {
    CR__BARRIER_HEARD,
    CR__BARRIER_ARRIVE,
    CR__BARRIER_QUICK,
    CR__BARRIER_LOOK
} cr__barrier_step;
cr__barrier_step cr__barrier_next(const cr__barrier_party *p,
                                  const cr__wait *w, int64_t now);

#endif
