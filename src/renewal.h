/* SPDX-License-Identifier: MIT */
/*
 * What this client holds, and the watchdog that keeps lease-less holds alive.
 *
 * Every hold taken through the library is counted here per (kind, key,
 * owner): that is how an unlock tells "the lease was lost" (CR_ELOST) from
 * "never held" (CR_ENOTOWNER), and how an acquire whose reply was lost is
 * resolved. Holds taken without a lease are renewed: each has a timer on the
 * client's timing wheel, due a third of the watchdog timeout after the last
 * renewal and rounded to a slot so that renewals falling due together go out
 * together, up to the batch size per script call. A renewal that finds the
 * hold gone marks it lost and calls the holder's callback.
 *
 * Thread safety: all functions may be called from any thread.
 */
#ifndef CR_RENEWAL_H
#define CR_RENEWAL_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "credisson/lock.h"

/* Which renewal script a hold needs. */
typedef enum cr__hold_kind {
    CR__HOLD_PLAIN = 0, /* hash N with field owner: RLock, fair, write... */
    CR__HOLD_READ       /* read lock: the hash and the reader's timeout keys */
} cr__hold_kind;

/* cr__renewal_new: the holds table and the watchdog thread of client `c`. */
cr_status cr__renewal_new(cr_client *c, cr__renewal **out);

/* cr__renewal_free: stop the thread and forget every hold. */
void cr__renewal_free(cr__renewal *r);

/* cr__hold_add: count one more hold of `owner` on `key`. With `watchdog`
 * the hold is renewed until its count drops to 0. `aux` is the read lock's
 * key prefix (NULL otherwise). `fn`/`userdata` are called if the watchdog
 * finds the hold gone; `tid` is passed to them. */
cr_status cr__hold_add(cr__renewal *r, cr__hold_kind kind, const char *key,
                       const char *owner, const char *aux, int64_t tid,
                       bool watchdog, cr_lock_lost_fn fn, void *userdata);

/* cr__hold_count: this client's count of holds of `owner` on `key` (0 when
 * none); *lost (may be NULL) tells whether the watchdog found it gone. */
int64_t cr__hold_count(cr__renewal *r, cr__hold_kind kind, const char *key,
                       const char *owner, bool *lost);

/* cr__hold_release: one hold fewer (every hold when `all`); the entry and
 * its timer go when the count reaches 0. */
void cr__hold_release(cr__renewal *r, cr__hold_kind kind, const char *key,
                      const char *owner, bool all);

/* cr__hold_releasing: an unlock of (kind, key, owner) is about to run: stop
 * renewing it and ignore renewal answers in flight (a renewal racing the
 * unlock would otherwise find the hold gone and report it lost). The next
 * cr__hold_release ends this: renewal resumes if holds remain. */
void cr__hold_releasing(cr__renewal *r, cr__hold_kind kind, const char *key,
                        const char *owner);

/* cr__hold_drop_key: forget every owner's holds on `key` (force unlock). */
void cr__hold_drop_key(cr__renewal *r, cr__hold_kind kind, const char *key);

/* cr__hold_entries / cr__hold_renewing: the number of (key, owner) entries,
 * and of those being renewed (for tests and stats). */
size_t cr__hold_entries(cr__renewal *r);
size_t cr__hold_renewing(cr__renewal *r);

#endif
