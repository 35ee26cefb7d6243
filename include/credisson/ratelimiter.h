/* SPDX-License-Identifier: MIT */
/*
 * Rate limiters: Redisson's RRateLimiter (cr_rate_limiter), on the same
 * keys, hash fields and record layout as Java Redisson 3.21 and later, so
 * C and Java processes share one budget: never more than `rate` permits in
 * any window of `interval_ms`.
 *
 * A limiter is a sliding-window log. Its configuration is the hash under
 * the name (rate, interval, type, keepAliveTime); each grant adds a record
 * (its time and its permits) to the sorted set {name}:permits and takes its
 * permits from the count in {name}:value. A record counts for one interval
 * and is reclaimed by the next call that looks. With CR_RATE_PER_CLIENT
 * each client (each cr_client, one UUID) has its own budget, in
 * {name}:value:<client id> and {name}:permits:<client id>. A grant needs
 * room in the records of the last interval as well as in the count, so
 * the rate holds over the grants recorded whatever a Java release() or
 * availablePermits() left in the count.
 *
 * Waiting: nothing is published when permits come back (Redisson has no
 * channel for it), so a waiting acquire sleeps for the time the last
 * attempt said (until the oldest record expires, + 3 ms) and tries again;
 * it never polls faster, and it gives up at once when that time is beyond
 * its wait.
 *
 * Clocks: credisson stamps its records with the server's clock; Java stamps
 * them with its own. A fleet of C clients needs no synchronized clocks; a
 * fleet with Java clients needs theirs in step with the server's.
 *
 * Thread safety: handles may be shared by the threads of a process; every
 * call is safe from any thread. Free handles before their client.
 */
#ifndef CREDISSON_RATELIMITER_H
#define CREDISSON_RATELIMITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>
#include <credisson/lock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_rate_limiter cr_rate_limiter;

/* Redisson's RateType, by its ordinal on the wire. */
typedef enum cr_rate_type {
    CR_RATE_OVERALL = 0,   /* one budget for every client */
    CR_RATE_PER_CLIENT = 1 /* one budget per client (per cr_client) */
} cr_rate_type;

/* A limiter's configuration (Redisson getConfig, plus the keep-alive time). */
typedef struct cr_rate_config {
    cr_rate_type type;
    int64_t rate;          /* permits per interval; 0: not initialized */
    int64_t interval_ms;   /* 0: not initialized */
    int64_t keep_alive_ms; /* 0: none */
} cr_rate_config;

/* The most permits one acquisition takes (a record keeps them in 32 bits),
 * and the highest rate the set calls take. */
#define CR_RATE_PERMITS_MAX ((int64_t)4294967295LL)

/* cr_rate_limiter_new: a handle on the rate limiter `name` (Redisson
 * getRateLimiter). The name is copied; nothing is sent to Redis.
 * Ownership: *out needs to be freed with cr_rate_limiter_free().
 * Returns CR_OK, CR_EINVAL (NULL or empty name, NULL out, a name whose
 * keys fall in different cluster slots), CR_ENOTSUP (the client's
 * redisson_version is before 3.21, whose records the limiter cannot
 * share), CR_ENOMEM, CR_EFORKED, CR_ECLOSED. */
CR_EXPORT cr_status cr_rate_limiter_new(cr_client *client, const char *name,
                                        cr_rate_limiter **out);

/* cr_rate_limiter_free: release the handle. NULL does nothing. */
CR_EXPORT void cr_rate_limiter_free(cr_rate_limiter *limiter);

/* cr_rate_limiter_name: the name as given. Borrowed; "" for NULL. */
CR_EXPORT const char *cr_rate_limiter_name(const cr_rate_limiter *limiter);

/* cr_rate_limiter_try_set_rate: give the limiter `rate`
 * (1..CR_RATE_PERMITS_MAX) permits per `interval_ms` (1..CR_DURATION_MAX)
 * of `type` unless it has a rate already (Redisson trySetRate).
 * keep_alive_ms > 0 (at least interval_ms) makes an unused limiter vanish
 * that long after its last acquisition, with its state; 0: never. *set
 * (may be NULL) tells whether this call set the rate.
 * Returns CR_OK, CR_EINVAL, CR_ENOTSUP (a keep-alive time, and the
 * client's redisson_version is before 3.38), CR_EIO, CR_ESERVER,
 * CR_ENOPERM. */
CR_EXPORT cr_status cr_rate_limiter_try_set_rate(cr_rate_limiter *limiter,
                                                 cr_rate_type type,
                                                 int64_t rate,
                                                 int64_t interval_ms,
                                                 int64_t keep_alive_ms,
                                                 bool *set);

/* cr_rate_limiter_set_rate: set the rate whatever it was (Redisson setRate,
 * without keepState): the budget of the new type starts afresh (this
 * client's own with CR_RATE_PER_CLIENT; other clients' budgets keep their
 * records, as in Redisson); a change of type clears the budgets of both
 * types. Arguments as cr_rate_limiter_try_set_rate.
 * Returns CR_OK, CR_EINVAL, CR_ENOTSUP (as try_set_rate), CR_EIO,
 * CR_ESERVER, CR_ENOPERM, CR_ESCRIPT, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_rate_limiter_set_rate(cr_rate_limiter *limiter,
                                             cr_rate_type type, int64_t rate,
                                             int64_t interval_ms,
                                             int64_t keep_alive_ms);

/* cr_rate_limiter_get_config: the limiter's configuration (Redisson
 * getConfig) into *config: type CR_RATE_OVERALL and zeros when it has
 * none.
 * Returns CR_OK, CR_EINVAL, CR_EIO, CR_ESERVER, CR_ENOPERM, CR_ESCRIPT,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_rate_limiter_get_config(cr_rate_limiter *limiter,
                                               cr_rate_config *config);

/* cr_rate_limiter_available_permits: the permits that could be taken now
 * (Redisson availablePermits; this client's with CR_RATE_PER_CLIENT).
 * Returns CR_OK, CR_EINVAL (no rate: "not initialized"), CR_EIO,
 * CR_ESERVER. */
CR_EXPORT cr_status cr_rate_limiter_available_permits(cr_rate_limiter *limiter,
                                                      int64_t *permits);

/* cr_rate_limiter_try_acquire: take `permits` (1..CR_RATE_PERMITS_MAX),
 * waiting at most wait_ms for them (0: one attempt; CR_WAIT_FOREVER: as
 * long as it takes) (Redisson tryAcquire(permits) and tryAcquire(permits,
 * timeout)). The wait sleeps the time each attempt says and returns
 * CR_BUSY at once when that is beyond what is left of wait_ms.
 * Returns CR_OK when taken, CR_BUSY when not within the wait, CR_EINVAL
 * for more permits than the rate (Redisson's "Requested permits amount
 * cannot exceed defined rate"; nothing is written) or a limiter without a
 * rate ("not initialized", also after its keep-alive time ran out), CR_EIO
 * (Redis unreachable for longer than the reconnect window; the permits may
 * have been taken), CR_ESERVER, CR_ECLOSED (the client is being freed). */
CR_EXPORT cr_status cr_rate_limiter_try_acquire(cr_rate_limiter *limiter,
                                                int64_t permits,
                                                int64_t wait_ms);

/* cr_rate_limiter_acquire: cr_rate_limiter_try_acquire with
 * CR_WAIT_FOREVER (Redisson acquire(permits)).
 * Returns CR_OK, CR_EINVAL, CR_EIO, CR_ESERVER, CR_ENOPERM, CR_ESCRIPT,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_rate_limiter_acquire(cr_rate_limiter *limiter,
                                            int64_t permits);

/* cr_rate_limiter_delete: delete the configuration, the OVERALL state and
 * this client's PER_CLIENT state (Redisson delete). *deleted (may be NULL)
 * tells whether any of them existed.
 * Returns CR_OK, CR_EINVAL, CR_EIO, CR_ESERVER, CR_ENOPERM, CR_ESCRIPT,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_rate_limiter_delete(cr_rate_limiter *limiter,
                                           bool *deleted);

#ifdef __cplusplus
}
#endif
#endif
