/* SPDX-License-Identifier: MIT */
/*
 * What this client holds, and the watchdog that keeps lease-less holds alive.
 *
 * Every hold taken through the library is counted here per (kind, key,
 * owner): that is how an unlock tells "the lease was lost" (CR_ELOST) from
 * "never held" (CR_ENOTOWNER), and how an acquire whose reply was lost is
 * resolved. Holds taken without a lease are renewed: each has a timer on the
 * client's timing wheel, due a third of the watchdog timeout after the time
 * its last renewal fell due (not after its answer came, so a slow round does
 * not stretch the period) and rounded to a slot so that renewals falling due
 * together go out together, up to the batch size per script call. In a Redis
 * Cluster a call names the keys of one hash slot only. A renewal that finds
 * the hold gone marks it lost and calls the holder's callback. A renewal
 * answered only after its command timeout (a stalled server) still counts,
 * from the moment it was sent, when its answer comes before the hold's
 * local deadline.
 *
 * Thread safety: all functions may be called from any thread.
 */
#ifndef CR_RENEWAL_H
#define CR_RENEWAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "credisson/client.h"
#include "credisson/lock.h"

typedef struct cr__renewal cr__renewal;

/* Which renewal script a hold needs. */
typedef enum cr__hold_kind {
    CR__HOLD_PLAIN = 0, /* hash N with field owner: RLock, fair, write... */
    CR__HOLD_READ       /* read lock: the hash and the reader's timeout keys */
} cr__hold_kind;

/* What the watchdog needs of its client. */
typedef struct cr__renewal_config {
    const char *id;          /* the client's UUID (owner names start so) */
    int64_t lease_ms;        /* lockWatchdogTimeout */
    int batch;               /* leases per renewal call */
    bool cluster;            /* renewal batches grouped by slot */
    cr__logger *log;
    cr__stats *stats;
} cr__renewal_config;

/* cr__renewal_new: the holds table, the watchdog and the lease clock of a
 * client, whose scripts it runs on `c`. */
cr_status cr__renewal_new(cr_client *c, const cr__renewal_config *cfg,
                          cr__renewal **out);

/* cr__renewal_free: stop the thread and forget every hold. */
void cr__renewal_free(cr__renewal *r);

/* cr__renewal_master_moved: a topology listener: every hold is checked on
 * the new master (HEXISTS of its owner's field), and each one not there is
 * reported lost. */
void cr__renewal_master_moved(cr__renewal *r);

/* cr__hold_verify: the same check for one hold, for an acquisition during
 * which the master moved (the listener's look may have come before it
 * entered the table). */
void cr__hold_verify(cr__renewal *r, cr__hold_kind kind, const char *key,
                     const char *owner);

/* The margin taken off a lease on this host's clock for clocks that run
 * at different rates (1 %, as RedLock's drift factor, and 2 ms). */
#define CR__LEASE_MARGIN(lease_ms) ((lease_ms) / 100 + 2)

/* cr__lease_valid_until: the local deadline of a hold whose acquire or
 * renewal was sent at sent_ms (monotonic) with lease_ms: sent_ms +
 * lease_ms - CR__LEASE_MARGIN(lease_ms). The server started its expiry no
 * earlier than the sending, so until then the hold stands. */
int64_t cr__lease_valid_until(int64_t sent_ms, int64_t lease_ms);

/* cr__hold_add: count one more hold of `owner` on `key`. With `watchdog`
 * the hold is renewed until its count drops below this level (unlocks undo
 * the last hold first): holds taken with a lease and left after the last
 * watchdog hold went are not renewed. `aux` is the read lock's
 * key prefix (NULL otherwise). `valid_until` is its local deadline
 * (cr__lease_valid_until of the acquire), which the lease clock keeps:
 * a hold not renewed by then is lost. `fn`/`userdata` are called when the
 * hold is found lost (by a renewal, the lease clock or the check after a
 * failover); `tid` is passed to them. */
cr_status cr__hold_add(cr__renewal *r, cr__hold_kind kind, const char *key,
                       const char *owner, const char *aux, int64_t tid,
                       bool watchdog, int64_t valid_until, cr_lock_lost_fn fn,
                       void *userdata);

/* cr__hold_count: this client's count of holds of `owner` on `key` (0 when
 * none); *lost (may be NULL) tells whether the watchdog found it gone. */
int64_t cr__hold_count(cr__renewal *r, cr__hold_kind kind, const char *key,
                       const char *owner, bool *lost);

/* cr__hold_is_watchdog: whether `owner`'s hold on `key` is renewed by the
 * watchdog (taken without a lease); false when there is none. */
bool cr__hold_is_watchdog(cr__renewal *r, cr__hold_kind kind, const char *key,
                          const char *owner);

/* cr__hold_release: one hold fewer (every hold when `all`); the entry and
 * its timers go when the count reaches 0. With holds left, `valid_until`
 * (>= 0) is their new local deadline: the unlock script set the key's
 * time to live again. Returns how long the hold stood (ms since the
 * cr__hold_add that made the entry) when the entry went and was not lost
 * and the client has an event hook; -1 otherwise. */
int64_t cr__hold_release(cr__renewal *r, cr__hold_kind kind,
                         const char *key, const char *owner, bool all, int64_t valid_until);

/* cr__hold_found_lost: the server no longer has the hold of `owner` on
 * `key` (an unlock found it gone): it is lost, `why`, and its callback is
 * due (it runs before the cr__hold_release that follows returns). */
void cr__hold_found_lost(cr__renewal *r, cr__hold_kind kind, const char *key,
                         const char *owner, const char *why);

/* cr__hold_left: how long the hold of `owner` on `key` still stands by
 * this host's clock (0 when lost), or -1 when there is none. */
int64_t cr__hold_left(cr__renewal *r, cr__hold_kind kind, const char *key,
                      const char *owner);

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

/* The batch planner, exposed for tests. A hold picked for renewal is its
 * key (a read hold's hash; the watchdog finds the hold from this pointer)
 * and its order: its kind in the high 16 bits, its key's cluster slot in
 * the low ones (0 outside a cluster, where batches mix slots). */
typedef struct cr__due {
    const char *key;
    uint32_t order;
} cr__due;

/* cr__due_order: the order of a hold of `kind` on `key`; `cluster` tells
 * whether the client talks to a Redis Cluster. */
uint32_t cr__due_order(cr__hold_kind kind, const char *key, bool cluster);

/* cr__due_sort: sort due[0..n) by order, and the read holds of one order
 * by key, so that batches are as full as they may be. A run already in
 * order (all plain holds outside a cluster) is not sorted again. */
void cr__due_sort(cr__due *due, size_t n);

/* cr__due_batch_end: the end of the batch starting at due[from] of the
 * sorted due[0..n): entries of one order, at most `batch` of them for
 * plain holds, the read holds of at most `batch` distinct hashes for read
 * holds. */
size_t cr__due_batch_end(const cr__due *due, size_t n, size_t from,
                         size_t batch);

#endif
