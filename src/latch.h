/* SPDX-License-Identifier: MIT */
/*
 * RCountDownLatch's waits (latch.c): the rules of a wait for the latch to
 * open, shared by the blocking calls and the loop's requests.
 */
#ifndef CR_LATCH_H
#define CR_LATCH_H

#include "credisson/latch.h"
#include "object.h"

/* The rules of a wait for the latch to open, written once for the
 * blocking calls (await, awaitOpened, countDownAndAwait) and the loop's
 * requests: the wait's spec (an opening message read after the fence ends
 * it; countDownAndAwait subscribes first), its attempts (the count down,
 * once, marked before it is sent, then looks) and the status it ends
 * with. */
typedef struct cr__latch_opening {
    cr_latch *latch;
    bool counted;    /* the count down was sent (or none is to be) */
    bool counting;   /* and its reply is the one awaited */
    bool must_exist; /* a latch never set is waited for as closed */
} cr__latch_opening;

/* cr__latch_opening_begin: a wait of wait_ms, counting down first when
 * `count_first`; its spec into *spec. _call: the next attempt. _replied:
 * its outcome (rc: how the call went; r freed): CR_OK open, CR_BUSY with
 * N's ttl in *hint, or a failure. _done: the wait's status from the
 * machine's (CR_TIMEOUT when it ran out; a failure before the count down
 * says so). */
void cr__latch_opening_begin(cr__latch_opening *o, cr_latch *l,
                             int64_t wait_ms, bool count_first,
                             bool must_exist, cr__wait_spec *spec);
cr_status cr__latch_opening_call(cr__latch_opening *o, cr__script_call *call);
cr_status cr__latch_opening_replied(cr__latch_opening *o, cr_status rc,
                                    cr__reply *r, int64_t *hint);
cr_status cr__latch_opening_done(const cr__latch_opening *o, cr_status rc);

#endif
