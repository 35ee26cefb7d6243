/* SPDX-License-Identifier: MIT */
/*
 * A hashed timing wheel in the style of Netty's HashedWheelTimer: a ring of
 * buckets, each a doubly linked list of timers; a timer further away than one
 * revolution carries the number of remaining rounds. Schedule and cancel are
 * O(1). The wheel is pure: it never reads a clock and never locks; the caller
 * passes the current time (milliseconds on any monotonic scale) and
 * serialises calls. Timers are intrusive: the caller owns their memory.
 */
#ifndef CR_TIMER_WHEEL_H
#define CR_TIMER_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credisson/status.h"

typedef struct cr__wheel cr__wheel;

/* Embed one in whatever needs a timeout; fields are private to the wheel. */
typedef struct cr__timer {
    struct cr__timer *prev;
    struct cr__timer *next;
    int64_t deadline_ms;
    int64_t rounds;
    unsigned bucket;
    int state;
    void *data; /* the caller's, untouched by the wheel */
} cr__timer;

/* Called by cr__wheel_advance for each expired timer, which is already
 * unscheduled when the call is made. The callback may schedule or cancel any
 * timer, this one included, and may free timers it has cancelled or that have
 * fired; it must not call cr__wheel_advance or cr__wheel_free. */
typedef void (*cr__wheel_fire_fn)(void *userdata, cr__timer *timer);

/* cr__wheel_new: a wheel of `nbuckets` buckets (rounded up to a power of
 * two) of `tick_ms` each, starting at `now_ms`. Returns CR_OK, CR_EINVAL
 * (tick_ms < 1, nbuckets < 1 or > 2^20), CR_ENOMEM. */
cr_status cr__wheel_new(int64_t tick_ms, unsigned nbuckets, int64_t now_ms,
                        cr__wheel **out);

/* cr__wheel_free: free the wheel; scheduled timers are dropped, not fired. */
void cr__wheel_free(cr__wheel *w);

/* cr__timer_init: make `t` an unscheduled timer carrying `data`. */
void cr__timer_init(cr__timer *t, void *data);

/* cr__wheel_schedule: (re)schedule `t` to fire at `deadline_ms` (a deadline
 * in the past fires at the next advance). A scheduled timer is moved. */
void cr__wheel_schedule(cr__wheel *w, cr__timer *t, int64_t deadline_ms);

/* cr__wheel_cancel: unschedule `t`; nothing happens when it is not
 * scheduled, has fired, or is expired but its callback has not run yet in
 * the advance under way (it then does not fire). */
void cr__wheel_cancel(cr__wheel *w, cr__timer *t);

/* cr__timer_is_scheduled: true while `t` is waiting to fire. */
bool cr__timer_is_scheduled(const cr__timer *t);

/* cr__wheel_advance: process every tick up to `now_ms` and call `fn` for each
 * timer whose deadline has passed (deadline_ms <= now_ms); timers fire in tick
 * order. Returns the number of timers fired. */
size_t cr__wheel_advance(cr__wheel *w, int64_t now_ms, cr__wheel_fire_fn fn,
                         void *userdata);

/* cr__wheel_count: the number of scheduled timers. */
size_t cr__wheel_count(const cr__wheel *w);

/* cr__wheel_tick_ms: the tick given to cr__wheel_new. */
int64_t cr__wheel_tick_ms(const cr__wheel *w);

#endif
