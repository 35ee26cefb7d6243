/* SPDX-License-Identifier: MIT */
/*
 * Count-down latches: Redisson's RCountDownLatch (cr_latch), on the same
 * key, channel and messages as Java, so C and Java processes can count down
 * and wait on one latch.
 *
 * A latch is closed while its count is above zero. cr_latch_count_down
 * takes one off; the one that reaches zero deletes the key and publishes
 * 0 on redisson_countdownlatch__channel__{name}, which wakes every waiter
 * at once. A latch that does not exist counts as open (count 0).
 *
 * Beyond Redisson, a latch may be given an expiry, so that a participant
 * that crashes before counting down cannot block a barrier forever: when
 * it runs out, the latch is gone and cr_latch_await reports CR_EEXPIRED
 * instead of CR_OK. How that is told apart from "counted down to zero":
 * with an expiry, cr_latch_try_set_count also writes a marker key,
 * {name}:credisson_latch_expiry, that expires CR_LATCH_EXPIRY_GRACE_MS
 * after the latch. The count down that reaches zero deletes the marker
 * together with the latch. So when the latch key is gone: no marker means
 * open; a marker with more than the grace left means the key went before
 * its deadline (a Java countDown, which does not know the marker, or a
 * delete): open; a marker with at most the grace left means the key went
 * at its deadline: expired. Java peers see the latch exactly as Redisson
 * has it (the same key, no TTL unless one was asked for, the same channel
 * and messages); to Java an expired latch reads as count 0 (open), and a
 * Java waiter blocked in await() is not woken by the expiry.
 * A C look at a latch key without a TTL (set again under the name by a
 * Java client) deletes a marker left by an earlier latch.
 *
 * Opened or never set: Redisson deletes the key when the count reaches
 * zero, so a latch that was opened and one that was never set look the
 * same, and cr_latch_await (as Java's await) returns at once for both. A
 * credisson count down that opens a latch therefore leaves the same
 * marker key holding "opened", for CR_LATCH_OPENED_MARK_MS (one small key
 * per latch name for that long; setting the latch again deletes it), and
 * cr_latch_await_opened waits until the latch was set and opened: while
 * the key is absent without a marker, it waits as for a closed latch.
 * A latch opened by Java (whose countDown writes no marker), or deleted,
 * leaves no marker: a waiter that is waiting then sees the "0" message and
 * returns, one that comes later waits until its wait runs out. (Waiting:
 * its look after subscribing found the latch closed and its fence, a PING
 * on the subscription's link, came back, a few round trips after it
 * subscribed; a Java opening within those round trips is missed as one
 * before the wait.) Versions of
 * credisson before this marker read an "opened" marker in its last
 * CR_LATCH_EXPIRY_GRACE_MS as an expiry: upgrade the C clients sharing
 * latches together. Limits of the expiry: a waiter
 * that first looks more than the grace after the expiry sees "open"; one
 * that first looks after the deadline at a latch that a Java countDown had
 * opened shortly before it, or within the grace after an expiry at a latch
 * a Java client set again and opened before any C client looked, sees
 * "expired".
 *
 * Waiting: a waiter looks at the count, subscribes, looks again, then sleeps
 * until a 0 message, the latch's expiry or a second passes, and looks
 * again; so a latch opened before the waiter subscribed, or a missed
 * message, costs at most that second.
 *
 * Thread safety: handles may be shared by the threads of a process; every
 * call is safe from any thread. Free handles before their client.
 */
#ifndef CREDISSON_LATCH_H
#define CREDISSON_LATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>
#include <credisson/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_latch cr_latch;

/* The largest count cr_latch_try_set_count takes. */
#define CR_LATCH_COUNT_MAX ((int64_t)2147483647)
/* How much longer than an expiring latch its expiry marker lives. */
#define CR_LATCH_EXPIRY_GRACE_MS ((int64_t)60000)
/* How long the marker of a latch a credisson count down opened lives. */
#define CR_LATCH_OPENED_MARK_MS ((int64_t)3600000)

/* cr_latch_new: a handle on the latch `name` (Redisson
 * getCountDownLatch). The name is copied; nothing is sent to Redis.
 * Ownership: *out needs to be freed with cr_latch_free().
 * Returns CR_OK, CR_EINVAL (NULL or empty name, NULL out), CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_latch_new(cr_client *client, const char *name,
                                 cr_latch **out);

/* cr_latch_free: release the handle. NULL does nothing. */
CR_EXPORT void cr_latch_free(cr_latch *latch);

/* cr_latch_name: the name as given. Borrowed; "" for NULL. */
CR_EXPORT const char *cr_latch_name(const cr_latch *latch);

/* cr_latch_try_set_count: close the latch with `count`
 * (1..CR_LATCH_COUNT_MAX) if it does not exist (Redisson trySetCount);
 * publishes 1 ("new count"). ttl_ms > 0 (up to CR_DURATION_MAX) makes it
 * expire after that long whatever its count (credisson's own); 0: never.
 * *set (may be NULL) tells whether it was set; an existing latch is left
 * alone.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_latch_try_set_count(cr_latch *latch, int64_t count,
                                           int64_t ttl_ms, bool *set);

/* cr_latch_count_down: take one off the count (Redisson countDown); the
 * one that reaches zero opens the latch and wakes every waiter. A latch
 * that does not exist stays so and the call returns CR_OK, as in Redisson;
 * but CR_EEXPIRED when it expired (see above). Not resent after a broken
 * link (CR_EIO): the count down may or may not have happened.
 * Returns CR_OK, CR_EEXPIRED, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_latch_count_down(cr_latch *latch);

/* cr_latch_get_count: the count (Redisson getCount): 0 when the latch is
 * open, does not exist or expired (use cr_latch_await with 0 to tell).
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_latch_get_count(cr_latch *latch, int64_t *count);

/* cr_latch_await: wait until the latch is open, at most wait_ms (0: just
 * look; CR_WAIT_FOREVER: as long as it takes) (Redisson await).
 * Returns CR_OK when open (at once if it already is or does not exist),
 * CR_TIMEOUT when the wait ran out, CR_EEXPIRED when the latch's expiry ran
 * out before it opened, CR_EINVAL, CR_ENOMEM, CR_ECLOSED (client freed),
 * CR_EFORKED, CR_EIO (Redis unreachable for longer than the reconnect
 * window), CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG,
 * CR_ETLS. */
CR_EXPORT cr_status cr_latch_await(cr_latch *latch, int64_t wait_ms);

/* cr_latch_await_opened: as cr_latch_await, but a latch that does not
 * exist counts as open only when a credisson count down opened it (its
 * marker says so, for CR_LATCH_OPENED_MARK_MS); one never set (or deleted,
 * or opened by Java before the wait began, or opened longer ago than the
 * marker lives) is waited for as a closed one, until it is set and opened
 * or wait_ms runs out. A "0" message during the wait (a count down to zero
 * by Java or C) opens it as for cr_latch_await. For a barrier whose set
 * may come late or not at all (a typo in the name, a missing set).
 * Returns CR_OK when open after it was set, CR_TIMEOUT when the wait ran
 * out (closed, or never set), CR_EEXPIRED when the latch's expiry ran out
 * before it opened, CR_EINVAL, CR_ENOMEM, CR_ECLOSED (client freed),
 * CR_EFORKED, CR_EIO (Redis unreachable for longer than the reconnect
 * window), CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG,
 * CR_ETLS. */
CR_EXPORT cr_status cr_latch_await_opened(cr_latch *latch, int64_t wait_ms);
/* cr_latch_count_down_and_await: count down by one and wait until the
 * latch is open, at most wait_ms (0: count down only, CR_OK when that
 * opened it, CR_TIMEOUT otherwise; CR_WAIT_FOREVER:
 * as long as it takes) (Redisson countDownAndAwait, issue #6060). The
 * wait subscribes to the latch's channel before it counts down, so the 0
 * that opens the latch, whoever publishes it, reaches a subscription that
 * is in place; one read after the fence the call asks for once counted
 * down ends the wait even if the latch was set again meanwhile. The count
 * down is never made twice: a failure before it was sent leaves the count
 * as it was (the detail says "not counted down"); after it (CR_EIO while
 * waiting, CR_TIMEOUT, CR_ECLOSED) the count down stands. A latch that
 * does not exist is open: CR_OK at once.
 * Returns CR_OK when open, CR_TIMEOUT, CR_EEXPIRED, CR_EINVAL, CR_EIO (the
 * count down may or may not have happened when the link broke during it),
 * CR_ESERVER, CR_ECLOSED. */
CR_EXPORT cr_status cr_latch_count_down_and_await(cr_latch *latch,
                                                  int64_t wait_ms);

/* cr_latch_delete: delete the latch and its expiry marker (Redisson
 * delete). Publishes 1 when it existed, as Redisson does: Java waiters keep
 * waiting, C waiters see it open at their next look. *deleted (may be NULL)
 * tells whether it existed.
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO,
 * CR_ESERVER, CR_ESCRIPT, CR_EAUTH, CR_ENOPERM, CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_latch_delete(cr_latch *latch, bool *deleted);

#ifdef __cplusplus
}
#endif
#endif
