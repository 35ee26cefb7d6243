/* SPDX-License-Identifier: MIT */
/*
 * The hashed timing wheel behind credisson's timeouts. Time is cut into ticks
 * of tick_ms counted from the creation time, and tick k lives in bucket
 * k & mask. The wheel remembers `cur`, the first tick not yet wholly passed.
 * A timer is due at the tick of its deadline, or at `cur` when that tick is
 * already behind, and always keeps rounds == (due tick - cur) / nbuckets. So
 * a timer with 0 rounds in the bucket of the tick being processed is due in
 * that tick, and leaving a tick takes one round off the others in its bucket.
 * Expired timers go to a firing list before their callbacks run, which lets a
 * callback cancel or reschedule any timer safely.
 */
#include "config.h"

#include "timer_wheel.h"

#include <stdlib.h>

/* A timer is idle (in no list), scheduled (in a bucket) or firing (expired,
 * on the firing list, its callback not called yet). Zero is idle, so a zeroed
 * timer is a valid unscheduled one. */
enum { TIMER_IDLE = 0, TIMER_SCHEDULED, TIMER_FIRING };

#define MAX_BUCKETS (1u << 20)

struct cr__wheel {
    int64_t tick_ms;
    int64_t start_ms;   /* the creation time, where tick 0 begins */
    int64_t now_ms;     /* the latest time given to the wheel */
    uint64_t cur;       /* the first tick not wholly passed */
    unsigned mask;      /* the number of buckets minus one */
    unsigned shift;     /* log2 of the number of buckets */
    size_t count;       /* timers in the buckets or on the firing list */
    cr__timer firing;   /* sentinel of the expired timers awaiting callbacks */
    cr__timer *buckets; /* sentinels of the circular bucket lists */
};

/* Make `head` the sentinel of an empty circular list. */
static void list_init(cr__timer *head)
{
    head->prev = head;
    head->next = head;
}

/* Append `t` at the tail of the list whose sentinel is `head`. */
static void list_append(cr__timer *head, cr__timer *t)
{
    t->prev = head->prev;
    t->next = head;
    head->prev->next = t;
    head->prev = t;
}

/* Take `t` out of the list that holds it. */
static void list_unlink(cr__timer *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->prev = NULL;
    t->next = NULL;
}

/* Move `t` from its bucket to the tail of the firing list. */
static void move_to_firing(cr__wheel *w, cr__timer *t)
{
    list_unlink(t);
    t->state = TIMER_FIRING;
    list_append(&w->firing, t);
}

/* The tick that contains `ms`; any time before the start is in tick 0. The
 * subtraction is unsigned so that it cannot overflow. */
static uint64_t tick_of(const cr__wheel *w, int64_t ms)
{
    if (ms <= w->start_ms)
        return 0;
    return ((uint64_t)ms - (uint64_t)w->start_ms) / (uint64_t)w->tick_ms;
}

/* The rounds left for a timer due at tick `due`, which is not before `cur`.
 * They are capped to fit the field, a limit no real clock reaches. */
static int64_t rounds_until(const cr__wheel *w, uint64_t due)
{
    uint64_t rounds = (due - w->cur) >> w->shift;

    return rounds > INT64_MAX ? INT64_MAX : (int64_t)rounds;
}

/* Move the timers of the bucket `head` that are due by `now_ms` to the firing
 * list. When the tick is wholly passed, every other timer of the bucket is a
 * round closer; a timer with no rounds left is then always due. */
static void collect_bucket(cr__wheel *w, cr__timer *head, int64_t now_ms,
                           bool passed)
{
    cr__timer *t, *next;

    for (t = head->next; t != head; t = next) {
        next = t->next;
        if (t->rounds == 0 && t->deadline_ms <= now_ms)
            move_to_firing(w, t);
        else if (passed && t->rounds > 0)
            t->rounds--;
    }
}

/* Move every timer due by `now_ms` to the firing list after a jump of at
 * least one revolution, `cur` having been set to the new tick already. The
 * timers left are given the rounds they have from there. */
static void collect_all(cr__wheel *w, int64_t now_ms)
{
    for (unsigned i = 0; i <= w->mask; i++) {
        cr__timer *head = &w->buckets[i];
        cr__timer *t, *next;

        for (t = head->next; t != head; t = next) {
            next = t->next;
            if (t->deadline_ms <= now_ms)
                move_to_firing(w, t);
            else
                t->rounds = rounds_until(w, tick_of(w, t->deadline_ms));
        }
    }
}

/* Merge two chains sorted by deadline and linked through `next` alone. On
 * equal deadlines the timer of `a` goes first, which keeps the sort stable. */
static cr__timer *merge(cr__timer *a, cr__timer *b)
{
    cr__timer head;
    cr__timer *tail = &head;

    while (a != NULL && b != NULL) {
        cr__timer **first = b->deadline_ms < a->deadline_ms ? &b : &a;

        tail->next = *first;
        tail = *first;
        *first = (*first)->next;
    }
    tail->next = a != NULL ? a : b;
    return head.next;
}

/* Sort a NULL-terminated chain by deadline with a top-down merge sort. */
static cr__timer *sort_chain(cr__timer *list)
{
    cr__timer *slow = list, *fast, *second;

    if (list == NULL || list->next == NULL)
        return list;
    for (fast = list->next; fast != NULL && fast->next != NULL;
         fast = fast->next->next)
        slow = slow->next;
    second = slow->next;
    slow->next = NULL;
    return merge(sort_chain(list), sort_chain(second));
}

/* Put the firing list in deadline order, and so in tick order, after a jump
 * that gathered the expired timers of several revolutions at once. */
static void sort_firing(cr__wheel *w)
{
    cr__timer *head = &w->firing;
    cr__timer *t, *next;

    if (head->next == head)
        return;
    head->prev->next = NULL;
    t = sort_chain(head->next);
    list_init(head);
    for (; t != NULL; t = next) {
        next = t->next;
        list_append(head, t);
    }
}

/* Pop the firing list one timer at a time and call `fn` for each, so that a
 * callback may cancel, reschedule or free any timer still on the list or
 * elsewhere. Returns the number of timers fired. */
static size_t fire(cr__wheel *w, cr__wheel_fire_fn fn, void *userdata)
{
    size_t fired = 0;

    while (w->firing.next != &w->firing) {
        cr__timer *t = w->firing.next;

        list_unlink(t);
        t->state = TIMER_IDLE;
        w->count--;
        fired++;
        if (fn != NULL)
            fn(userdata, t);
    }
    return fired;
}

cr_status cr__wheel_new(int64_t tick_ms, unsigned nbuckets, int64_t now_ms,
                        cr__wheel **out)
{
    cr__wheel *w;
    unsigned n = 1, shift = 0;

    if (out != NULL)
        *out = NULL;
    if (out == NULL || tick_ms < 1 || nbuckets < 1 || nbuckets > MAX_BUCKETS)
        return CR_EINVAL;
    while (n < nbuckets) {
        n <<= 1;
        shift++;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return CR_ENOMEM;
    w->buckets = calloc(n, sizeof(*w->buckets));
    if (w->buckets == NULL) {
        free(w);
        return CR_ENOMEM;
    }
    for (unsigned i = 0; i < n; i++)
        list_init(&w->buckets[i]);
    list_init(&w->firing);
    w->tick_ms = tick_ms;
    w->start_ms = now_ms;
    w->now_ms = now_ms;
    w->mask = n - 1;
    w->shift = shift;
    *out = w;
    return CR_OK;
}

void cr__wheel_free(cr__wheel *w)
{
    if (w == NULL)
        return;
    free(w->buckets);
    free(w);
}

void cr__timer_init(cr__timer *t, void *data)
{
    t->prev = NULL;
    t->next = NULL;
    t->deadline_ms = 0;
    t->rounds = 0;
    t->bucket = 0;
    t->state = TIMER_IDLE;
    t->data = data;
}

void cr__wheel_schedule(cr__wheel *w, cr__timer *t, int64_t deadline_ms)
{
    uint64_t due = tick_of(w, deadline_ms);

    cr__wheel_cancel(w, t);
    if (due < w->cur)
        due = w->cur;
    t->deadline_ms = deadline_ms;
    t->rounds = rounds_until(w, due);
    t->bucket = (unsigned)(due & w->mask);
    t->state = TIMER_SCHEDULED;
    list_append(&w->buckets[t->bucket], t);
    w->count++;
}

void cr__wheel_cancel(cr__wheel *w, cr__timer *t)
{
    if (t->state == TIMER_IDLE)
        return;
    list_unlink(t);
    t->state = TIMER_IDLE;
    w->count--;
}

bool cr__timer_is_scheduled(const cr__timer *t)
{
    return t->state != TIMER_IDLE;
}

size_t cr__wheel_advance(cr__wheel *w, int64_t now_ms, cr__wheel_fire_fn fn,
                         void *userdata)
{
    uint64_t target;
    size_t fired = 0;
    bool passed;

    /* Time never goes back for the wheel: a past deadline scheduled after the
     * last advance must still fire at this one. */
    if (now_ms < w->now_ms)
        now_ms = w->now_ms;
    w->now_ms = now_ms;
    target = tick_of(w, now_ms);

    /* A jump of a revolution or more visits every bucket once, whatever its
     * length, and sorts what expired. */
    if (target - w->cur > w->mask) {
        w->cur = target;
        collect_all(w, now_ms);
        sort_firing(w);
        return fire(w, fn, userdata);
    }

    /* Otherwise walk the ticks in order up to the one holding `now_ms`, which
     * is only partly passed. `cur` moves on before the callbacks run, so that
     * a timer they schedule in the past lands in a tick still to be walked. */
    do {
        passed = w->cur < target;
        collect_bucket(w, &w->buckets[w->cur & w->mask], now_ms, passed);
        if (passed)
            w->cur++;
        fired += fire(w, fn, userdata);
    } while (passed);
    return fired;
}

size_t cr__wheel_count(const cr__wheel *w)
{
    return w->count;
}

int64_t cr__wheel_tick_ms(const cr__wheel *w)
{
    return w->tick_ms;
}
