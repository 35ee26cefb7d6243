/* SPDX-License-Identifier: MIT */
/*
 * The cyclic barrier's await in halves, script calls and the reading of
 * their replies, so that the blocking (barrier.c) and the asynchronous API
 * (async.c) send the same: the arrival, the look (which renews the party's
 * lease and breaks the round when another's has lapsed), the quick look
 * of a wake-up before a look is due, and the leave of a wait that ended
 * without an outcome (doc/coordination.md has the protocol).
 */
#ifndef CR_BARRIERS_H
#define CR_BARRIERS_H

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

/* cr__barrier_enter: the guard of every call on a barrier (end it with
 * cr__object_leave). */
cr_status cr__barrier_enter(const cr_barrier *b, cr__op *op);

/* cr__barrier_party_begin: a party of `b` whose owner id is `owner_id`
 * (a thread's, or an asynchronous request's), leased for the client's
 * watchdog timeout, listening first to the channel of the generation the
 * handle expects. */
void cr__barrier_party_begin(cr__barrier_party *p, cr_barrier *b,
                             int64_t owner_id);

/* The channel of the generations of `parity` (0 even, 1 odd), and what
 * its messages mean (0:<g>:<since>: generation g completed, kept; 1:
 * broken, reset, deleted; both wake every waiter). */
const char *cr__barrier_channel(const cr_barrier *b, int parity);
cr__wake cr__barrier_decode(const char *payload, size_t len);

/* The arrival (reply: CR_BUSY waiting, with the hint; CR_OK this arrival
 * completed the round; CR__BARRIER_AGAIN it joined a generation of the
 * other parity, waiting; CR_EBROKEN; CR_EINVAL other parties...), a look
 * (CR_BUSY with the hint, CR_OK completed, CR_EBROKEN...), and the quick
 * look of a wake-up before the look is due (HMGET: argv and its `field`
 * buffer; reply: CR_OK, CR_EBROKEN, CR_BUSY with the time left to the
 * look as the hint, or *look set: the look is due now). Replies are freed;
 * rc is how the call went. */
cr_status cr__barrier_arrive_call(const cr__barrier_party *p,
                                  cr__script_call *call);
cr_status cr__barrier_arrive_reply(cr__barrier_party *p, cr_status rc,
                                   cr__reply *r, int64_t *hint);
cr_status cr__barrier_look_call(const cr__barrier_party *p,
                                cr__script_call *call);
cr_status cr__barrier_look_reply(cr__barrier_party *p, cr_status rc,
                                 cr__reply *r, int64_t *hint);
void cr__barrier_quick_argv(const cr__barrier_party *p, const char *argv[4],
                            char field[32]);
cr_status cr__barrier_quick_reply(cr__barrier_party *p, cr_status rc,
                                  cr__reply *r, int64_t *hint, bool *look);

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

/* The leave of a wait that ended without an outcome, `rc` (the message
 * `why`): its call, and the await's status from its reply (`left`: how
 * the call went; CR_OK when the round completed first, CR_EBROKEN when it
 * was broken first, CR_TIMEOUT for a wait that ran out (rc CR_BUSY),
 * else rc: the round is broken). Only for an arrived party. */
cr_status cr__barrier_leave_call(const cr__barrier_party *p,
                                 cr__script_call *call);
cr_status cr__barrier_leave_reply(const cr__barrier_party *p, cr_status rc,
                                  const char *why, cr_status left,
                                  cr__reply *r);

/* cr__barrier_leave_later: leave in the background, one try, for an
 * arrived party whose await ended without its leave (an asynchronous
 * request whose bound passed or whose handle was freed). */
void cr__barrier_leave_later(const cr__barrier_party *p);

/* cr__barrier_ended: the await is over: the handle expects the next
 * generation after the party's. */
void cr__barrier_ended(const cr__barrier_party *p);

#endif
