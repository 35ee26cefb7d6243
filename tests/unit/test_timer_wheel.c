/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the hashed timing wheel. The wheel never reads a clock, so
 * the tests never sleep: each drives the wheel with chosen times and checks
 * that every timer fires at the first advance that reaches its deadline, in
 * tick order, exactly once, and not at all once cancelled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "timer_wheel.h"

#define MAX_FIRES 256

/* A timer under test with what the test expects of it and what happened. */
struct item {
    cr__timer timer;
    int id;
    int64_t deadline;        /* the deadline it was last scheduled at */
    int fired;               /* how many times its callback ran */
    int64_t fired_at;        /* the time of the advance that last fired it */
    struct item *victims[2]; /* timers its callback cancels */
    int reschedules;         /* how many more times its callback reschedules */
    int64_t delta;           /* the new deadline is the current time + delta */
};

/* What a test's callbacks share: the wheel, the time of the advance under
 * way and the ids of the fired timers in firing order. */
struct rec {
    cr__wheel *w;
    int64_t now;
    size_t n;
    int order[MAX_FIRES];
};

/* Make `it` an idle timer with the given id. */
static void item_init(struct item *it, int id)
{
    *it = (struct item){ .id = id };
    cr__timer_init(&it->timer, it);
}

/* Schedule `it` on the wheel of `r` at `deadline`. */
static void item_schedule(struct rec *r, struct item *it, int64_t deadline)
{
    it->deadline = deadline;
    cr__wheel_schedule(r->w, &it->timer, deadline);
}

/* The callback of most tests: check the timer is unscheduled and not early,
 * record it, then cancel its victims and reschedule it when asked to. */
static void record(void *userdata, cr__timer *t)
{
    struct rec *r = userdata;
    struct item *it = t->data;

    assert_false(cr__timer_is_scheduled(t));
    assert_true(it->deadline <= r->now);
    assert_true(r->n < MAX_FIRES);
    r->order[r->n++] = it->id;
    it->fired++;
    it->fired_at = r->now;
    for (int i = 0; i < 2; i++)
        if (it->victims[i] != NULL)
            cr__wheel_cancel(r->w, &it->victims[i]->timer);
    if (it->reschedules > 0) {
        it->reschedules--;
        item_schedule(r, it, r->now + it->delta);
    }
}

/* Advance the wheel of `r` to `now` with the recording callback. */
static size_t advance(struct rec *r, int64_t now)
{
    r->now = now;
    return cr__wheel_advance(r->w, now, record, r);
}

/* Create the wheel of `r`. */
static void rec_init(struct rec *r, int64_t tick_ms, unsigned nbuckets,
                     int64_t now)
{
    *r = (struct rec){ .now = now };
    assert_int_equal(cr__wheel_new(tick_ms, nbuckets, now, &r->w), CR_OK);
}

/* A small deterministic pseudo-random generator (xorshift64). */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static void test_wheel_new_rejects_bad_arguments(void **state)
{
    cr__wheel *w = (cr__wheel *)&w;

    (void)state;
    assert_int_equal(cr__wheel_new(0, 8, 0, &w), CR_EINVAL);
    assert_null(w);
    assert_int_equal(cr__wheel_new(-5, 8, 0, &w), CR_EINVAL);
    assert_int_equal(cr__wheel_new(1, 0, 0, &w), CR_EINVAL);
    assert_int_equal(cr__wheel_new(1, (1u << 20) + 1, 0, &w), CR_EINVAL);
    assert_int_equal(cr__wheel_new(1, 8, 0, NULL), CR_EINVAL);
    assert_int_equal(cr__wheel_new(1, 1u << 20, 0, &w), CR_OK);
    assert_non_null(w);
    cr__wheel_free(w);
}

static void test_wheel_tick_ms_returns_the_tick_given(void **state)
{
    cr__wheel *w;

    (void)state;
    assert_int_equal(cr__wheel_new(25, 3, 1000, &w), CR_OK);
    assert_int_equal(cr__wheel_tick_ms(w), 25);
    assert_int_equal(cr__wheel_count(w), 0);
    cr__wheel_free(w);
    cr__wheel_free(NULL);
}

static void test_wheel_fires_timers_in_deadline_order(void **state)
{
    static const int64_t deadlines[] = { 1065, 1005, 1042, 1020, 1070, 1031 };
    static const int expected[] = { 1, 3, 5, 2, 0, 4 };
    struct item items[6];
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 1000);
    for (int i = 0; i < 6; i++) {
        item_init(&items[i], i);
        item_schedule(&r, &items[i], deadlines[i]);
    }
    assert_int_equal(advance(&r, 1075), 6);
    assert_int_equal(r.n, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(r.order[i], expected[i]);
    cr__wheel_free(r.w);
}

static void test_wheel_fires_each_timer_at_first_advance_past_deadline(
    void **state)
{
    static const int64_t deadlines[] = { 1, 9, 10, 11, 19, 37, 79, 80, 81 };
    struct item items[9];
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    for (int i = 0; i < 9; i++) {
        item_init(&items[i], i);
        item_schedule(&r, &items[i], deadlines[i]);
    }
    for (int64_t now = 0; now <= 100; now++)
        advance(&r, now);
    for (int i = 0; i < 9; i++) {
        assert_int_equal(items[i].fired, 1);
        assert_int_equal(items[i].fired_at, deadlines[i]);
    }
    cr__wheel_free(r.w);
}

static void test_wheel_waits_for_a_later_deadline_in_the_current_tick(
    void **state)
{
    struct item it;
    struct rec r;

    (void)state;
    rec_init(&r, 100, 4, 0);
    item_init(&it, 0);
    item_schedule(&r, &it, 70);
    assert_int_equal(advance(&r, 30), 0);
    assert_int_equal(advance(&r, 69), 0);
    assert_true(cr__timer_is_scheduled(&it.timer));
    assert_int_equal(advance(&r, 70), 1);
    assert_int_equal(it.fired, 1);
    cr__wheel_free(r.w);
}

static void test_wheel_fires_timers_beyond_one_revolution_after_their_rounds(
    void **state)
{
    /* One revolution is 40 ms; the last three share a bucket. */
    static const int64_t deadlines[] = { 15, 55, 135, 175 };
    struct item items[4];
    struct rec r;

    (void)state;
    rec_init(&r, 10, 4, 0);
    for (int i = 0; i < 4; i++) {
        item_init(&items[i], i);
        item_schedule(&r, &items[i], deadlines[i]);
    }
    for (int64_t now = 5; now <= 200; now += 5) {
        advance(&r, now);
        for (int i = 0; i < 4; i++)
            assert_int_equal(items[i].fired, now >= deadlines[i] ? 1 : 0);
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(items[i].fired_at, deadlines[i]);
    cr__wheel_free(r.w);
}

static void test_wheel_with_odd_bucket_count_fires_on_time(void **state)
{
    struct item items[50];
    struct rec r;

    (void)state;
    rec_init(&r, 3, 5, -100);
    for (int i = 0; i < 50; i++) {
        item_init(&items[i], i);
        item_schedule(&r, &items[i], -100 + i * 7);
    }
    for (int64_t now = -100; now <= 300; now++)
        advance(&r, now);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(items[i].fired, 1);
        assert_int_equal(items[i].fired_at, -100 + i * 7);
    }
    cr__wheel_free(r.w);
}

static void test_wheel_cancel_before_fire_prevents_firing(void **state)
{
    struct item a, b;
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    item_init(&a, 0);
    item_init(&b, 1);
    item_schedule(&r, &a, 30);
    item_schedule(&r, &b, 30);
    cr__wheel_cancel(r.w, &a.timer);
    assert_false(cr__timer_is_scheduled(&a.timer));
    cr__wheel_cancel(r.w, &a.timer);
    assert_int_equal(cr__wheel_count(r.w), 1);
    assert_int_equal(advance(&r, 100), 1);
    assert_int_equal(a.fired, 0);
    assert_int_equal(b.fired, 1);
    cr__wheel_cancel(r.w, &b.timer);
    assert_int_equal(cr__wheel_count(r.w), 0);
    assert_int_equal(advance(&r, 1000), 0);
    cr__wheel_free(r.w);
}

static void test_wheel_cancel_from_callback_prevents_firing(void **state)
{
    struct item a, b, c, d;
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    item_init(&a, 0);
    item_init(&b, 1);
    item_init(&c, 2);
    item_init(&d, 3);
    /* b expires in the same tick as a and is on the firing list when a's
     * callback cancels it; c expires in a later tick of the same advance. */
    item_schedule(&r, &a, 11);
    item_schedule(&r, &b, 12);
    item_schedule(&r, &c, 45);
    item_schedule(&r, &d, 46);
    a.victims[0] = &b;
    a.victims[1] = &c;
    assert_int_equal(advance(&r, 60), 2);
    assert_int_equal(a.fired, 1);
    assert_int_equal(b.fired, 0);
    assert_int_equal(c.fired, 0);
    assert_int_equal(d.fired, 1);
    assert_false(cr__timer_is_scheduled(&b.timer));
    assert_false(cr__timer_is_scheduled(&c.timer));
    assert_int_equal(cr__wheel_count(r.w), 0);
    assert_int_equal(advance(&r, 500), 0);
    cr__wheel_free(r.w);
}

/* The callback of the freeing test: cancel and free the victim, which is
 * still on the firing list, then free the fired timer itself. */
static void cancel_and_free(void *userdata, cr__timer *t)
{
    struct rec *r = userdata;
    struct item *it = t->data;

    r->n++;
    if (it->victims[0] != NULL) {
        cr__wheel_cancel(r->w, &it->victims[0]->timer);
        free(it->victims[0]);
    }
    free(it);
}

static void test_wheel_callback_may_free_cancelled_and_fired_timers(
    void **state)
{
    struct item *a = malloc(sizeof(*a));
    struct item *b = malloc(sizeof(*b));
    struct rec r;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    rec_init(&r, 10, 8, 0);
    item_init(a, 0);
    item_init(b, 1);
    item_schedule(&r, a, 20);
    item_schedule(&r, b, 21);
    a->victims[0] = b;
    assert_int_equal(cr__wheel_advance(r.w, 50, cancel_and_free, &r), 1);
    assert_int_equal(r.n, 1);
    assert_int_equal(cr__wheel_count(r.w), 0);
    cr__wheel_free(r.w);
}

static void test_wheel_reschedule_from_callback_fires_again_later(
    void **state)
{
    static const int64_t expected[] = { 10, 35, 60, 85 };
    struct item it;
    struct rec r;

    (void)state;
    rec_init(&r, 10, 4, 0);
    item_init(&it, 0);
    it.reschedules = 3;
    it.delta = 25;
    item_schedule(&r, &it, 10);
    for (int64_t now = 0; now <= 300; now += 5) {
        advance(&r, now);
        if (it.fired > 0)
            assert_int_equal(it.fired_at, expected[it.fired - 1]);
    }
    assert_int_equal(it.fired, 4);
    assert_int_equal(cr__wheel_count(r.w), 0);
    cr__wheel_free(r.w);
}

static void test_wheel_reschedule_into_current_tick_waits_for_deadline(
    void **state)
{
    struct item it;
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    item_init(&it, 0);
    it.reschedules = 1;
    it.delta = 4;
    item_schedule(&r, &it, 12);
    assert_int_equal(advance(&r, 13), 1);
    assert_true(cr__timer_is_scheduled(&it.timer));
    assert_int_equal(advance(&r, 16), 0);
    assert_int_equal(advance(&r, 17), 1);
    assert_int_equal(it.fired, 2);
    assert_int_equal(it.fired_at, 17);
    cr__wheel_free(r.w);
}

static void test_wheel_reschedule_into_the_past_from_callback_is_not_lost(
    void **state)
{
    struct item a, b;
    struct rec r;
    size_t fired;

    (void)state;
    rec_init(&r, 10, 16, 0);
    item_init(&a, 0);
    item_init(&b, 1);
    a.reschedules = 1;
    a.delta = -100;
    b.reschedules = 1;
    b.delta = 0;
    /* a fires in a tick the advance walks past, b in its last tick. */
    item_schedule(&r, &a, 5);
    item_schedule(&r, &b, 95);
    fired = advance(&r, 100);
    assert_true(fired >= 2 && fired <= 4);
    fired += advance(&r, 100);
    assert_int_equal(fired, 4);
    assert_int_equal(a.fired, 2);
    assert_int_equal(b.fired, 2);
    assert_int_equal(cr__wheel_count(r.w), 0);
    cr__wheel_free(r.w);
}

static void test_wheel_past_deadline_fires_at_next_advance(void **state)
{
    struct item items[3];
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    assert_int_equal(advance(&r, 500), 0);
    for (int i = 0; i < 3; i++)
        item_init(&items[i], i);
    item_schedule(&r, &items[0], 100);
    item_schedule(&r, &items[1], -1000);
    item_schedule(&r, &items[2], 500);
    assert_int_equal(advance(&r, 500), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(items[i].fired, 1);
    cr__wheel_free(r.w);
}

static void test_wheel_count_tracks_scheduled_timers(void **state)
{
    struct item items[4];
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    for (int i = 0; i < 4; i++) {
        item_init(&items[i], i);
        item_schedule(&r, &items[i], 10 + i * 100);
    }
    assert_int_equal(cr__wheel_count(r.w), 4);
    item_schedule(&r, &items[3], 20);
    assert_int_equal(cr__wheel_count(r.w), 4);
    cr__wheel_cancel(r.w, &items[2].timer);
    cr__wheel_cancel(r.w, &items[2].timer);
    assert_int_equal(cr__wheel_count(r.w), 3);
    assert_int_equal(advance(&r, 50), 2);
    assert_int_equal(cr__wheel_count(r.w), 1);
    assert_int_equal(advance(&r, 500), 1);
    assert_int_equal(cr__wheel_count(r.w), 0);
    cr__wheel_free(r.w);
}

static void test_wheel_schedule_moves_a_scheduled_timer(void **state)
{
    struct item a, b;
    struct rec r;

    (void)state;
    rec_init(&r, 10, 4, 0);
    item_init(&a, 0);
    item_init(&b, 1);
    item_schedule(&r, &a, 50);
    item_schedule(&r, &a, 20);
    item_schedule(&r, &b, 20);
    item_schedule(&r, &b, 170);
    for (int64_t now = 0; now <= 200; now++)
        advance(&r, now);
    assert_int_equal(a.fired, 1);
    assert_int_equal(a.fired_at, 20);
    assert_int_equal(b.fired, 1);
    assert_int_equal(b.fired_at, 170);
    cr__wheel_free(r.w);
}

static void test_wheel_is_scheduled_follows_the_timer(void **state)
{
    struct item it;
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    item_init(&it, 0);
    assert_false(cr__timer_is_scheduled(&it.timer));
    item_schedule(&r, &it, 10);
    assert_true(cr__timer_is_scheduled(&it.timer));
    advance(&r, 10);
    assert_false(cr__timer_is_scheduled(&it.timer));
    item_schedule(&r, &it, 30);
    cr__wheel_cancel(r.w, &it.timer);
    assert_false(cr__timer_is_scheduled(&it.timer));
    cr__wheel_free(r.w);
}

static void test_wheel_ignores_time_going_backwards(void **state)
{
    struct item it;
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    item_init(&it, 0);
    item_schedule(&r, &it, 150);
    assert_int_equal(advance(&r, 100), 0);
    assert_int_equal(advance(&r, 50), 0);
    assert_int_equal(advance(&r, 149), 0);
    assert_int_equal(advance(&r, 150), 1);
    cr__wheel_free(r.w);
}

static void test_wheel_large_jump_fires_due_timers_in_deadline_order(
    void **state)
{
    struct item items[100];
    struct rec r;
    uint64_t seed = 42;
    size_t fired;

    (void)state;
    /* 8 buckets of 1 ms: the deadlines span about 125 revolutions. */
    rec_init(&r, 1, 8, 0);
    for (int i = 0; i < 100; i++) {
        item_init(&items[i], i);
        item_schedule(&r, &items[i],
                      1 + (int64_t)(next_random(&seed) % 1000));
    }
    fired = advance(&r, 500);
    assert_int_equal(fired, r.n);
    for (size_t k = 1; k < r.n; k++)
        assert_true(items[r.order[k - 1]].deadline <=
                    items[r.order[k]].deadline);
    for (int i = 0; i < 100; i++)
        assert_int_equal(items[i].fired, items[i].deadline <= 500 ? 1 : 0);
    /* The timers left keep their exact deadlines after the jump. */
    for (int64_t now = 501; now <= 1001; now++)
        advance(&r, now);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(items[i].fired, 1);
        if (items[i].deadline > 500)
            assert_int_equal(items[i].fired_at, items[i].deadline);
    }
    assert_int_equal(cr__wheel_count(r.w), 0);
    cr__wheel_free(r.w);
}

static void test_wheel_huge_jump_walks_one_revolution_only(void **state)
{
    const int64_t jump = INT64_C(1000000000000000); /* 10^15 ticks */
    struct item near, far, after;
    struct rec r;

    (void)state;
    rec_init(&r, 1, 1024, 0);
    item_init(&near, 0);
    item_init(&far, 1);
    item_init(&after, 2);
    item_schedule(&r, &near, 3);
    item_schedule(&r, &far, 2 * jump + 7);
    /* Walking 10^15 ticks one by one would never finish. */
    assert_int_equal(advance(&r, jump), 1);
    assert_int_equal(near.fired, 1);
    assert_int_equal(far.fired, 0);
    item_schedule(&r, &after, jump + 5000);
    for (int64_t now = jump; now <= jump + 5000; now += 10)
        advance(&r, now);
    assert_int_equal(after.fired, 1);
    assert_int_equal(after.fired_at, jump + 5000);
    assert_int_equal(advance(&r, 2 * jump + 6), 0);
    assert_int_equal(advance(&r, 2 * jump + 7), 1);
    assert_int_equal(far.fired, 1);
    cr__wheel_free(r.w);
}

static void test_wheel_free_drops_scheduled_timers(void **state)
{
    struct item items[10];
    struct rec r;

    (void)state;
    rec_init(&r, 10, 8, 0);
    for (int i = 0; i < 10; i++) {
        item_init(&items[i], i);
        item_schedule(&r, &items[i], i * 50);
    }
    cr__wheel_free(r.w);
    for (int i = 0; i < 10; i++)
        assert_int_equal(items[i].fired, 0);
}

#define MANY 1000000

/* One of the many timers: the deadline it expects and its fire count. */
struct many_item {
    cr__timer timer;
    int64_t deadline;
    int fired;
};

/* What the many-timer callback checks against, and the errors it counted;
 * counting instead of asserting keeps the hot loop tight. */
struct many_ctx {
    int64_t prev_now;
    int64_t now;
    size_t fired;
    size_t errors;
};

/* The many-timer callback: a timer must be due, not late by an advance, not
 * cancelled and fired once. */
static void many_fire(void *userdata, cr__timer *t)
{
    struct many_ctx *c = userdata;
    struct many_item *m = t->data;

    if (m->deadline > c->now || m->deadline <= c->prev_now || m->fired != 0)
        c->errors++;
    m->fired++;
    c->fired++;
}

static void test_wheel_million_timers_fire_once_and_never_early(void **state)
{
    struct many_item *items = calloc(MANY, sizeof(*items));
    struct many_ctx c = { .prev_now = INT64_MIN };
    const int64_t start = 5000, span = 512 * 6;
    uint64_t seed = 0x9e3779b97f4a7c15u;
    cr__wheel *w;

    (void)state;
    assert_non_null(items);
    assert_int_equal(cr__wheel_new(1, 512, start, &w), CR_OK);
    /* Deadlines fall from a little before the start to six revolutions on. */
    for (size_t i = 0; i < MANY; i++) {
        items[i].deadline = start - 100 + (int64_t)(next_random(&seed) % span);
        cr__timer_init(&items[i].timer, &items[i]);
        cr__wheel_schedule(w, &items[i].timer, items[i].deadline);
    }
    assert_int_equal(cr__wheel_count(w), MANY);
    for (size_t i = 0; i < MANY; i += 2)
        cr__wheel_cancel(w, &items[i].timer);
    assert_int_equal(cr__wheel_count(w), MANY / 2);
    for (c.now = start; c.now <= start + span;) {
        cr__wheel_advance(w, c.now, many_fire, &c);
        c.prev_now = c.now;
        c.now += 1 + (int64_t)(next_random(&seed) % 37);
    }
    cr__wheel_advance(w, c.now, many_fire, &c);
    assert_int_equal(c.errors, 0);
    assert_int_equal(c.fired, MANY / 2);
    for (size_t i = 0; i < MANY; i++)
        if (items[i].fired != (int)(i & 1))
            fail_msg("timer %zu fired %d times", i, items[i].fired);
    assert_int_equal(cr__wheel_count(w), 0);
    cr__wheel_free(w);
    free(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wheel_new_rejects_bad_arguments),
        cmocka_unit_test(test_wheel_tick_ms_returns_the_tick_given),
        cmocka_unit_test(test_wheel_fires_timers_in_deadline_order),
        cmocka_unit_test(
            test_wheel_fires_each_timer_at_first_advance_past_deadline),
        cmocka_unit_test(
            test_wheel_waits_for_a_later_deadline_in_the_current_tick),
        cmocka_unit_test(
            test_wheel_fires_timers_beyond_one_revolution_after_their_rounds),
        cmocka_unit_test(test_wheel_with_odd_bucket_count_fires_on_time),
        cmocka_unit_test(test_wheel_cancel_before_fire_prevents_firing),
        cmocka_unit_test(test_wheel_cancel_from_callback_prevents_firing),
        cmocka_unit_test(
            test_wheel_callback_may_free_cancelled_and_fired_timers),
        cmocka_unit_test(
            test_wheel_reschedule_from_callback_fires_again_later),
        cmocka_unit_test(
            test_wheel_reschedule_into_current_tick_waits_for_deadline),
        cmocka_unit_test(
            test_wheel_reschedule_into_the_past_from_callback_is_not_lost),
        cmocka_unit_test(test_wheel_past_deadline_fires_at_next_advance),
        cmocka_unit_test(test_wheel_count_tracks_scheduled_timers),
        cmocka_unit_test(test_wheel_schedule_moves_a_scheduled_timer),
        cmocka_unit_test(test_wheel_is_scheduled_follows_the_timer),
        cmocka_unit_test(test_wheel_ignores_time_going_backwards),
        cmocka_unit_test(
            test_wheel_large_jump_fires_due_timers_in_deadline_order),
        cmocka_unit_test(test_wheel_huge_jump_walks_one_revolution_only),
        cmocka_unit_test(test_wheel_free_drops_scheduled_timers),
        cmocka_unit_test(
            test_wheel_million_timers_fire_once_and_never_early),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
