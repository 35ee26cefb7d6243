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

/* The channel a waiter listens on, and what its messages mean: "0", the
 * count reached zero, wakes every waiter and opens it for good. */
const char *cr__latch_channel(const cr_latch *l);
cr__wake cr__latch_decode(const char *payload, size_t len);

#endif
