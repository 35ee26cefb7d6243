/* SPDX-License-Identifier: MIT */
/*
 * RCountDownLatch's calls in halves, a script call and the reading of its
 * reply, so that the blocking (latch.c) and the asynchronous API (async.c)
 * send the same; and what a wait on it needs.
 */
#ifndef CR_LATCHES_H
#define CR_LATCHES_H

#include "credisson/latch.h"
#include "object.h"

/* cr__latch_enter: the guard of every call on a latch (end it with
 * cr__object_leave). */
cr_status cr__latch_enter(const cr_latch *l, cr__op *op);

/* A look (CR_OK open, CR_BUSY closed with N's ttl in *hint, or with
 * must_exist never set, CR_EEXPIRED), a count down (CR_EEXPIRED when it had
 * expired; on CR_OK *left, may be NULL, gets the count left, 0 when open
 * or absent), trySetCount (arguments
 * checked; reply: 1 when set, cr__reply_bool). */
cr_status cr__latch_look_call(const cr_latch *l, bool must_exist,
                              cr__script_call *call);
cr_status cr__latch_look_reply(const cr_latch *l, cr_status rc, cr__reply *r,
                               int64_t *hint);
cr_status cr__latch_count_down_call(const cr_latch *l, cr__script_call *call);
cr_status cr__latch_count_down_reply(const cr_latch *l, cr_status rc,
                                     cr__reply *r, int64_t *left);
cr_status cr__latch_set_call(const cr_latch *l, int64_t count, int64_t ttl_ms,
                             cr__script_call *call);

/* What a latch's messages mean: "0", the count reached zero, wakes every
 * waiter and opens it for good. */
cr__wake cr__latch_decode(const char *payload, size_t len);

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
