/* SPDX-License-Identifier: MIT */
/*
 * RRateLimiter's acquire attempt in halves, a script call and the reading
 * of its reply, so that the blocking (ratelimiter.c) and the asynchronous
 * API (async.c) send the same; and the guard of its handles.
 */
#ifndef CR_RATELIMITERS_H
#define CR_RATELIMITERS_H

#include "credisson/ratelimiter.h"
#include "object.h"

/* The size of an attempt's record id (fresh random bytes per attempt; the
 * same again after a lost reply, so the script finds its own grant). */
#define CR__RATE_ID_BYTES 16

/* cr__rate_limiter_enter: the guard of every call on a rate limiter (end
 * it with cr__object_leave). */
cr_status cr__rate_limiter_enter(const cr_rate_limiter *l, cr__op *op);

/* An acquire attempt of `permits` (checked by the caller) under record id
 * `id` (CR__RATE_ID_BYTES, kept by the caller until the call is sent),
 * and its reply (rc: how the call went; frees r): CR_OK granted, CR_BUSY
 * with the script's hint in *hint (when the oldest record expires, + 3
 * ms; at least 1), CR_EINVAL for more permits than the rate or no rate,
 * CR_ESCRIPT, or rc. */
cr_status cr__rate_acquire_call(const cr_rate_limiter *l, int64_t permits,
                                const unsigned char *id,
                                cr__script_call *call);
cr_status cr__rate_acquire_reply(const cr_rate_limiter *l, int64_t permits,
                                 cr_status rc, cr__reply *r, int64_t *hint);

/* cr__rate_busy: the CR_BUSY of an acquisition of `permits` whose wait of
 * wait_ms ran out, the last hint `hint`, with its message. */
cr_status cr__rate_busy(const cr_rate_limiter *l, int64_t permits,
                        int64_t wait_ms, int64_t hint);

#endif
