/* SPDX-License-Identifier: MIT */
/*
 * Waiting for an object, shared by every kind (protocol section 2): try,
 * subscribe to the object's channel, try again (not when the client was
 * subscribed already before the first try, lingering or for other
 * waiters, and has read nothing on it since), then sleep until a message
 * or the attempt's hint (a ttl) runs out, bounded by the caller's remaining
 * wait; repeat. A message between a failed try and the sleep is kept as a
 * permit, so it is never lost; nothing sleeps unbounded on a message alone
 * unless the object gives no hint and the caller waits forever, and even
 * then `max_sleep_ms` can bound it. Transport errors while waiting are
 * retried with backoff for up to the client's reconnect window.
 */
#ifndef CR_WAIT_H
#define CR_WAIT_H

#include <stdint.h>

#include "client.h"

/* One attempt. Returns CR_OK when the object was obtained; CR_BUSY when
 * not, with *hint_ms the longest sensible sleep before the next attempt (-1:
 * no hint, wait for a message); CR_EIO to be retried; anything else ends the
 * wait with that status. */
typedef cr_status (*cr__attempt_fn)(void *ctx, int64_t *hint_ms);

typedef struct cr__wait_spec {
    /* Where the object's releases are published; NULL: no pub/sub, wait
     * between attempts by exponential backoff with jitter (the spin lock:
     * 1 ms, then next = min(128, current * 2 + random [0, k)) at the k-th
     * wait, as Redisson's LockOptions). */
    const char *channel;
    cr__decode_fn decode; /* what its messages mean */
    int64_t wait_ms;      /* CR_WAIT_FOREVER (-1) or >= 0 */
    int64_t min_sleep_ms; /* floor for hinted sleeps (a 0 hint must not spin) */
    int64_t max_sleep_ms; /* re-check at least this often; -1: no bound */
    /* A message that opens (a latch's "0") read after a fence asked for
     * once subscribed and still closed (see cr__sub_fence) ends the wait
     * with CR_OK without another attempt: the count reached zero during
     * the wait, and a re-armed latch must not hide that. */
    bool trust_open;
    /* Lock mode: while threads of this client wait on the channel, a new
     * wait joins their line without trying first, so that a thread coming
     * back for the lock cannot take it between two of them (its first try
     * comes with its first wake-up, or after LINE_RECHECK_MS). */
    bool in_line;
    cr__attempt_fn attempt;
    void *ctx;
} cr__wait_spec;

/* cr__wait: run the loop. Returns CR_OK (obtained), CR_BUSY (the wait ran
 * out), CR_EIO (Redis unreachable for longer than the reconnect window), or
 * what the attempt returned. */
cr_status cr__wait(cr_client *c, const cr__wait_spec *spec);

#endif
