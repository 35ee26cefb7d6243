/* SPDX-License-Identifier: MIT */
/*
 * What every module of the library shares: the client's counters, the
 * per-thread error detail, clocks, and small formatting helpers.
 */
#ifndef CR_COMMON_H
#define CR_COMMON_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credisson/client.h"
#include "credisson/status.h"

/* Counters behind cr_client_stats; relaxed atomics, updated anywhere. */
typedef struct cr__stats {
    atomic_uint_fast64_t acquisitions;
    atomic_uint_fast64_t contended_waits;
    atomic_uint_fast64_t wait_time_total_ms;
    atomic_uint_fast64_t wait_time_max_ms;
    atomic_uint_fast64_t renewals_sent;
    atomic_uint_fast64_t renewal_calls;
    atomic_uint_fast64_t renewal_failures;
    atomic_uint_fast64_t leases_lost;
    atomic_uint_fast64_t reconnects;
    atomic_uint_fast64_t noscript_fallbacks;
    atomic_uint_fast64_t commands;
    atomic_uint_fast64_t messages;
    atomic_uint_fast64_t redirects;
    atomic_uint_fast64_t topology_refreshes;
    atomic_uint_fast64_t failovers;
    /* The event hook sits beside the counters, so that every place that
     * counts an event can report it; set once by cr_client_new. */
    cr_event_fn hook;
    void *hook_userdata;
} cr__stats;

/* cr__event: report one event to the client's hook, if any. When there is
 * none this is one NULL check; callers that must read a clock for an event
 * test cr__hooked first. The hook runs on the calling thread. */
static inline bool
cr__hooked(const cr__stats *s)
{
    return s->hook != NULL;
}

static inline void
cr__event(const cr__stats *s, cr_event_kind kind, cr_status status,
          const char *object, const char *name, int64_t wait_ms,
          int64_t hold_ms, bool async)
{
    cr_event ev;

    if (s->hook == NULL)
        return;
    ev.kind = kind;
    ev.status = status;
    ev.object = object;
    ev.name = name;
    ev.wait_ms = wait_ms;
    ev.hold_ms = hold_ms;
    ev.async = async;
    s->hook(s->hook_userdata, &ev);
}

#define CR__STAT_ADD(stats, field, n)                                         \
    atomic_fetch_add_explicit(&(stats)->field, (n), memory_order_relaxed)

/* A log sink: the client's callback and threshold. */
typedef struct cr__logger {
    cr_log_fn fn;
    void *userdata;
    cr_log_level level;
} cr__logger;

void cr__log(const cr__logger *lg, cr_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Set this thread's last-error detail (cr_last_error) and return rc, so a
 * failure path reads `return cr__fail(CR_EINVAL, "name is empty");`. */
cr_status cr__fail(cr_status rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cr__clear_error(void);

/* Milliseconds on the monotonic clock, and since the epoch (wall clock). */
int64_t cr__now_ms(void);
int64_t cr__wall_ms(void);

/* What an operation's events are kept in instead of going to the hook
 * (cr__op's sink): the last one. A multilock's sub-locks report nothing
 * of their own this way (the multilock reports one event for them all),
 * and the asynchronous API reports a multilock's outcome itself, once,
 * from what its thread kept. */
typedef struct cr__event_sink {
    bool kept;
    cr_event_kind kind;
    cr_status status;
    const char *object, *name; /* live as long as the object */
    int64_t hold_ms;
} cr__event_sink;

/* One operation under way: a public call, a background job, a watchdog
 * round. It travels as the first argument of every internal call that
 * talks to Redis, and says what bounds that talk: every command it sends
 * ends by `deadline` (a public call that waits: its start + its wait +
 * one command timeout, the bound of credisson(3)); a connection attempt
 * slot (conn.c's breakers) is waited for until `patience` at the most (a
 * waiting loop sets it to the end of its wait, so that its retries do not
 * sleep past it: they come back later by themselves). Its events go to
 * `sink` when one is set, else to the client's hook. */
typedef struct cr__op {
    cr_client *client;
    int64_t start;    /* monotonic ms */
    int64_t deadline; /* monotonic ms; -1: none (each command is bounded
                       * by the command timeout alone) */
    int64_t patience; /* monotonic ms; -1: the deadline */
    cr__event_sink *sink;
} cr__op;

/* cr__op_begin: an operation of client `c` starting now, with `deadline`
 * (-1: none), no patience of its own and no sink. */
void cr__op_begin(cr__op *op, cr_client *c, int64_t deadline);

/* cr__op_deadline_in: min(now + ms, op's deadline): the end of one wait
 * of at most `ms` within the operation. */
int64_t cr__op_deadline_in(const cr__op *op, int64_t ms);

/* Microseconds on the monotonic clock. */
int64_t cr__now_us(void);

/* Sleeps `ms` milliseconds, or `us` microseconds (through signals). */
void cr__sleep_ms(int64_t ms);
void cr__sleep_us(int64_t us);

/* Writes v in decimal into buf (at least 21 bytes); returns the length. */
size_t cr__fmt_i64(char *buf, int64_t v);

/* Parses a whole decimal string of len bytes into *out; false when it is not
 * one or overflows. */
bool cr__parse_i64(const char *s, size_t len, int64_t *out);

/* Fills buf with n random bytes from the kernel; CR_EIO when it cannot. */
cr_status cr__random_bytes(void *buf, size_t n);

/* Writes n bytes as 2n lowercase hex characters plus a NUL into out. */
void cr__hex(const unsigned char *in, size_t n, char *out);

/* malloc'd printf; NULL on out of memory. */
char *cr__strdup_printf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif
