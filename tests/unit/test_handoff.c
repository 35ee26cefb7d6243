/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the releaser's turn (handoff.h). The policy reads no clock
 * and does no I/O: each test gives it what a subscription has seen (made-up
 * cr__sub_seen values) and the times, in microseconds, and checks the turn
 * it plans and the steps of that turn. Nothing talks to Redis and nothing
 * sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "handoff.h"

/* The numbers handoff.h promises. */
#define RTTS_MIN 4
#define RTTS_MAX 64
#define TURN_MIN_US 1000
#define TURN_MAX_US 20000
#define COUNT_MAX_US 200000

#define FOREVER (-1) /* a wait without limit, in ms */

/* The release most tests make: sent at SENT_US, answered at NOW_US (a
 * round trip of 500 us), by a handle that took the lock at 9000 us. */
#define SENT_US 10000
#define NOW_US 10500

/* Returns what a subscription has seen: `waiters` of this client's threads
 * (-1: not subscribed), `counted` releases, the last read at `at_us`. */
static cr__sub_seen
seen(int waiters, uint64_t counted, int64_t at_us)
{
    return (cr__sub_seen){.waiters = waiters, .counted = counted,
                          .counted_at_us = at_us};
}

/* Returns a handoff with no turn pending, whose handle took the lock at
 * `acquired_us`. */
static cr__handoff
fresh(int64_t acquired_us)
{
    cr__handoff h;

    cr__handoff_init(&h);
    cr__handoff_acquired(&h, acquired_us);
    return h;
}

/* h's lock is unlocked as most tests do it, `reached` by that many
 * subscribers, with `s` what the client's subscription has seen. */
static void
unlocked(cr__handoff *h, cr__sub_seen s, int64_t reached, bool in_line)
{
    cr__handoff_after_unlock(h, &s, reached, SENT_US, NOW_US, in_line);
}

/* Returns the turn h has pending for an acquisition at NOW_US that may
 * wait forever; fails the test when there is none. */
static cr__turn
pending(const cr__handoff *h)
{
    cr__turn t;

    assert_true(cr__handoff_turn(h, NOW_US, FOREVER, &t));
    return t;
}

/* Returns the round trips a turn of h's lock lasts now: the sleep of the
 * turn an unlock reached by one other process plans when it took 300 us. */
static int64_t
rtts_of(cr__handoff *h)
{
    cr__sub_seen s = seen(0, 0, 0);
    cr__turn t;

    cr__handoff_after_unlock(h, &s, 2, 10000, 10300, false);
    assert_true(cr__handoff_turn(h, 10300, FOREVER, &t));
    return t.sleep_us / 300;
}

/* ------------------------------------------------------------ the turn */

static void
test_fresh_handoff_keeps_no_turn(void **state)
{
    cr__handoff h = fresh(0);
    cr__turn t;

    (void)state;
    assert_false(cr__handoff_turn(&h, NOW_US, FOREVER, &t));
    assert_int_equal(rtts_of(&h), RTTS_MIN);
}

static void
test_turn_is_its_round_trips_within_1_to_20_ms(void **state)
{
    (void)state;
    assert_int_equal(cr__handoff_turn_us(4, 500), 2000);
    assert_int_equal(cr__handoff_turn_us(8, 250), 2000);
    assert_int_equal(cr__handoff_turn_us(4, 100), TURN_MIN_US);
    assert_int_equal(cr__handoff_turn_us(4, 0), TURN_MIN_US);
    assert_int_equal(cr__handoff_turn_us(64, 1000), TURN_MAX_US);
    assert_int_equal(cr__handoff_turn_us(4, 5000), 20000);
}

/* ----------------------------------------------------------- unlocks */

static void
test_unlock_heard_by_no_other_process_keeps_no_turn(void **state)
{
    cr__handoff h = fresh(9000);
    cr__turn t;

    (void)state;
    /* Only this client's own subscription reached it. */
    unlocked(&h, seen(0, 3, 0), 1, false);
    assert_false(cr__handoff_turn(&h, NOW_US, FOREVER, &t));
    /* Not subscribed, and nobody else reached it. */
    unlocked(&h, seen(-1, 0, 0), 0, false);
    assert_false(cr__handoff_turn(&h, NOW_US, FOREVER, &t));
}

static void
test_unlock_with_only_this_clients_waiters_in_line_keeps_no_turn(
    void **state)
{
    cr__handoff h = fresh(9000);
    cr__turn t;

    (void)state;
    unlocked(&h, seen(2, 0, 0), 1, true);
    assert_false(cr__handoff_turn(&h, NOW_US, FOREVER, &t));
}

static void
test_unlock_with_this_clients_waiters_out_of_line_keeps_a_turn_of_4_round_trips(
    void **state)
{
    cr__handoff h = fresh(9000);
    cr__sub_seen s = seen(2, 0, 0);
    cr__turn t;
    int64_t wait_us = 0;

    (void)state;
    /* Turns for other processes were tuned longer: not this one. */
    cr__handoff_tune(&h, true);
    cr__handoff_tune(&h, true);
    unlocked(&h, s, 1, false);
    t = pending(&h);
    assert_int_equal(t.sleep_us, 4 * 500);
    assert_int_equal(t.until_us, NOW_US + 2000);
    assert_int_equal(t.target, 0);
    assert_int_equal(cr__turn_next(&t, &s, NOW_US, &wait_us), CR__TURN_SLEEP);
    assert_int_equal(wait_us, 2000);
    assert_false(cr__turn_tune(&t, &s));
}

static void
test_unlock_heard_by_other_processes_counts_their_releases(void **state)
{
    cr__handoff h = fresh(9000);
    cr__turn t;

    (void)state;
    /* Subscribed, lingering, five releases read, the last before the
     * unlock was sent; reached by three subscribers: this client's and two
     * others. */
    unlocked(&h, seen(0, 5, 9500), 3, false);
    assert_true(cr__handoff_turn(&h, NOW_US + 100, FOREVER, &t));
    assert_int_equal(t.sleep_us, 4 * 500);
    /* A cycle is the turn and the hold (since 9000): 3500 us; two each. */
    assert_int_equal(t.quiet_us, 2 * 3500);
    assert_int_equal(t.until_us, NOW_US + 2 * 2 * 3500);
    /* The five, its own and one from each of the two. */
    assert_int_equal(t.target, 5 + 1 + 2);
    assert_int_equal(t.since_us, NOW_US + 100);
}

static void
test_unlock_whose_own_release_was_read_already_counts_it_once(void **state)
{
    cr__handoff h = fresh(9000);

    (void)state;
    /* Read after the unlock was sent. */
    unlocked(&h, seen(0, 5, SENT_US + 200), 3, false);
    assert_int_equal(pending(&h).target, 5 + 2);
    /* Read in the microsecond it was sent: its own too. */
    unlocked(&h, seen(0, 5, SENT_US), 3, false);
    assert_int_equal(pending(&h).target, 5 + 2);
}

static void
test_unlock_not_subscribed_counts_every_subscriber_as_another_process(
    void **state)
{
    cr__handoff h = fresh(9000);
    cr__turn t;

    (void)state;
    unlocked(&h, seen(-1, 0, 0), 2, false);
    t = pending(&h);
    assert_int_equal(t.target, 0 + 1 + 2);
    assert_int_equal(t.until_us, NOW_US + 2 * 2 * 3500);
}

static void
test_unlock_heard_by_others_keeps_a_turn_even_with_a_line(void **state)
{
    cr__handoff h = fresh(9000);

    (void)state;
    unlocked(&h, seen(2, 0, 0), 2, true);
    assert_int_equal(pending(&h).target, 2);
}

static void
test_counting_turn_lasts_at_most_200_ms(void **state)
{
    cr__handoff h = fresh(9000);
    cr__sub_seen s = seen(0, 0, 0);
    cr__turn t;

    (void)state;
    /* 30 others of 3500 us cycles: 210 ms, cut to 200. */
    unlocked(&h, s, 31, false);
    assert_int_equal(pending(&h).until_us, NOW_US + COUNT_MAX_US);
    /* A hold of an hour: each cycle is cut to 200 ms too. */
    h = fresh(0);
    cr__handoff_after_unlock(&h, &s, 2, 3600000000, 3600000500, false);
    assert_true(cr__handoff_turn(&h, 3600000500, FOREVER, &t));
    assert_int_equal(t.quiet_us, 2 * COUNT_MAX_US);
    assert_int_equal(t.until_us, 3600000500 + COUNT_MAX_US);
}

static void
test_lock_turn_doubles_up_to_64_round_trips_and_shrinks_by_one_down_to_4(
    void **state)
{
    cr__handoff h = fresh(0);
    static const int64_t up[] = {8, 16, 32, 64, 64};

    (void)state;
    for (size_t i = 0; i < sizeof(up) / sizeof(up[0]); i++) {
        cr__handoff_tune(&h, true);
        assert_int_equal(rtts_of(&h), up[i]);
    }
    cr__handoff_tune(&h, false);
    assert_int_equal(rtts_of(&h), RTTS_MAX - 1);
    for (int i = 0; i < RTTS_MAX; i++)
        cr__handoff_tune(&h, false);
    assert_int_equal(rtts_of(&h), RTTS_MIN);
}

/* ---------------------------------------------------------- releases */

/* h's semaphore is released as most tests do it (see unlocked). */
static void
released(cr__handoff *h, cr__sub_seen s, int64_t reached)
{
    cr__handoff_after_release(h, &s, reached, SENT_US, NOW_US);
}

static void
test_release_heard_by_another_subscriber_keeps_a_turn_of_4_round_trips(
    void **state)
{
    cr__handoff h = fresh(0);
    cr__turn t;

    (void)state;
    cr__handoff_tune(&h, true); /* a semaphore's turn is never tuned */
    released(&h, seen(0, 0, 0), 2);
    t = pending(&h);
    assert_int_equal(t.sleep_us, 4 * 500);
    assert_int_equal(t.until_us, NOW_US + 2000);
    assert_int_equal(t.target, 0);

    /* Not subscribed: one subscriber is another. */
    h = fresh(0);
    released(&h, seen(-1, 0, 0), 1);
    assert_int_equal(pending(&h).sleep_us, 2000);
}

/* This client's own waiters wait in the semaphore's line, which the
 * releaser's next acquisition joins at its end: no turn for them. */
static void
test_release_with_this_clients_waiters_keeps_no_turn(void **state)
{
    cr__handoff h = fresh(0);
    cr__turn t;

    (void)state;
    released(&h, seen(1, 0, 0), 1);
    assert_false(cr__handoff_turn(&h, NOW_US, FOREVER, &t));
}

static void
test_release_heard_by_nobody_else_keeps_no_turn(void **state)
{
    cr__handoff h = fresh(0);
    cr__turn t;

    (void)state;
    released(&h, seen(0, 0, 0), 1);
    assert_false(cr__handoff_turn(&h, NOW_US, FOREVER, &t));
    released(&h, seen(-1, 0, 0), 0);
    assert_false(cr__handoff_turn(&h, NOW_US, FOREVER, &t));
}

/* ------------------------------------------------- keeping the turn */

static void
test_turn_is_kept_only_until_it_ends(void **state)
{
    cr__handoff h = fresh(0);
    cr__turn t;

    (void)state;
    released(&h, seen(0, 0, 0), 2); /* until NOW_US + 2000 */
    assert_true(cr__handoff_turn(&h, NOW_US + 1999, FOREVER, &t));
    assert_int_equal(t.until_us, NOW_US + 2000);
    assert_false(cr__handoff_turn(&h, NOW_US + 2000, FOREVER, &t));
}

static void
test_acquisition_that_may_not_wait_keeps_no_turn(void **state)
{
    cr__handoff h = fresh(0);
    cr__turn t;

    (void)state;
    released(&h, seen(0, 0, 0), 2);
    assert_false(cr__handoff_turn(&h, NOW_US, 0, &t));
}

static void
test_turn_is_cut_to_the_acquisitions_wait(void **state)
{
    cr__handoff h = fresh(9000);
    cr__turn t;

    (void)state;
    unlocked(&h, seen(0, 0, 0), 3, false); /* 14 ms */
    assert_true(cr__handoff_turn(&h, NOW_US, 5, &t));
    assert_int_equal(t.until_us, NOW_US + 5000);
    assert_true(cr__handoff_turn(&h, NOW_US, 15, &t));
    assert_int_equal(t.until_us, NOW_US + 14000);
    assert_int_equal(pending(&h).until_us, NOW_US + 14000);
}

/* ------------------------------------------------ the turn's steps */

/* Returns a counting turn from 10000 to 30000, of quiet 4000 us and target
 * 8, with a sleep of 2000 us. */
static cr__turn
counting(void)
{
    return (cr__turn){.until_us = 30000, .sleep_us = 2000, .target = 8,
                      .quiet_us = 4000, .since_us = 10000};
}

static void
test_counting_turn_goes_once_the_target_is_read(void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(0, 8, 11000);
    int64_t wait_us = -7;

    (void)state;
    assert_int_equal(cr__turn_next(&t, &s, 11000, &wait_us), CR__TURN_GO);
    s.counted = 9;
    assert_int_equal(cr__turn_next(&t, &s, 11000, &wait_us), CR__TURN_GO);
    assert_false(cr__turn_tune(&t, &s));
}

static void
test_counting_turn_waits_for_the_count_once_then_goes(void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(0, 7, 0);
    int64_t wait_us = 0;

    (void)state;
    /* One wait for the count, for the rest of the turn; the driver's wait
     * ends it early (reached, or quiet). */
    assert_int_equal(cr__turn_next(&t, &s, 11000, &wait_us), CR__TURN_COUNT);
    assert_int_equal(wait_us, 30000 - 11000);
    /* After it, go, whatever was read. */
    assert_int_equal(cr__turn_next(&t, &s, 14000, &wait_us), CR__TURN_GO);
    assert_false(cr__turn_tune(&t, &s));
}

static void
test_count_wait_is_over_once_the_target_is_read(void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(0, 8, 11000);
    int64_t check = -7;

    (void)state;
    assert_true(cr__turn_count_over(&t, &s, 11000, &check));
    assert_int_equal(check, -7);
}

static void
test_count_wait_goes_on_until_the_quiet_time_or_the_turns_end(void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(0, 7, 0);
    int64_t check = 0;

    (void)state;
    /* Nothing read yet: quiet from its beginning. */
    assert_false(cr__turn_count_over(&t, &s, 11000, &check));
    assert_int_equal(check, 10000 + 4000);
    assert_true(cr__turn_count_over(&t, &s, 14000, &check));
    /* A release read at 13000: quiet from then. */
    s.counted_at_us = 13000;
    assert_false(cr__turn_count_over(&t, &s, 14000, &check));
    assert_int_equal(check, 13000 + 4000);
    assert_false(cr__turn_count_over(&t, &s, 16999, &check));
    assert_true(cr__turn_count_over(&t, &s, 17000, &check));
    /* Bounded by the turn's end. */
    s.counted_at_us = 28000;
    assert_false(cr__turn_count_over(&t, &s, 29000, &check));
    assert_int_equal(check, 30000);
    assert_true(cr__turn_count_over(&t, &s, 30000, &check));
}

static void
test_count_wait_is_over_when_the_subscription_went(void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(-1, 0, 0);
    int64_t check = 0;

    (void)state;
    assert_true(cr__turn_count_over(&t, &s, 11000, &check));
}

static void
test_counting_turn_goes_when_it_ends(void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(0, 7, 29000);
    int64_t wait_us = 0;

    (void)state;
    assert_int_equal(cr__turn_next(&t, &s, 30000, &wait_us), CR__TURN_GO);
}

static void
test_turn_with_nothing_to_count_sleeps_its_turn_and_asks_to_tune(
    void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(-1, 0, 0); /* not subscribed */
    int64_t wait_us = 0;

    (void)state;
    assert_int_equal(cr__turn_next(&t, &s, 11000, &wait_us), CR__TURN_SLEEP);
    assert_int_equal(wait_us, 2000);
    assert_int_equal(cr__turn_next(&t, &s, 29500, &wait_us), CR__TURN_SLEEP);
    assert_int_equal(wait_us, 500);
    assert_true(cr__turn_tune(&t, &s));
}

static void
test_turn_without_a_target_sleeps_its_rest_then_goes(void **state)
{
    cr__turn t = counting();
    cr__sub_seen s = seen(0, 0, 0);
    int64_t wait_us = 0;

    (void)state;
    t.target = 0;
    assert_int_equal(cr__turn_next(&t, &s, 10000, &wait_us), CR__TURN_SLEEP);
    assert_int_equal(wait_us, 2000);
    assert_int_equal(cr__turn_next(&t, &s, 29000, &wait_us), CR__TURN_SLEEP);
    assert_int_equal(wait_us, 1000);
    assert_int_equal(cr__turn_next(&t, &s, 30000, &wait_us), CR__TURN_GO);
    assert_false(cr__turn_tune(&t, &s));
    s.waiters = -1;
    assert_false(cr__turn_tune(&t, &s));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_handoff_keeps_no_turn),
        cmocka_unit_test(test_turn_is_its_round_trips_within_1_to_20_ms),
        cmocka_unit_test(test_unlock_heard_by_no_other_process_keeps_no_turn),
        cmocka_unit_test(
            test_unlock_with_only_this_clients_waiters_in_line_keeps_no_turn),
        cmocka_unit_test(
            test_unlock_with_this_clients_waiters_out_of_line_keeps_a_turn_of_4_round_trips),
        cmocka_unit_test(
            test_unlock_heard_by_other_processes_counts_their_releases),
        cmocka_unit_test(
            test_unlock_whose_own_release_was_read_already_counts_it_once),
        cmocka_unit_test(
            test_unlock_not_subscribed_counts_every_subscriber_as_another_process),
        cmocka_unit_test(
            test_unlock_heard_by_others_keeps_a_turn_even_with_a_line),
        cmocka_unit_test(test_counting_turn_lasts_at_most_200_ms),
        cmocka_unit_test(
            test_lock_turn_doubles_up_to_64_round_trips_and_shrinks_by_one_down_to_4),
        cmocka_unit_test(
            test_release_heard_by_another_subscriber_keeps_a_turn_of_4_round_trips),
        cmocka_unit_test(test_release_with_this_clients_waiters_keeps_no_turn),
        cmocka_unit_test(test_release_heard_by_nobody_else_keeps_no_turn),
        cmocka_unit_test(test_turn_is_kept_only_until_it_ends),
        cmocka_unit_test(test_acquisition_that_may_not_wait_keeps_no_turn),
        cmocka_unit_test(test_turn_is_cut_to_the_acquisitions_wait),
        cmocka_unit_test(test_counting_turn_goes_once_the_target_is_read),
        cmocka_unit_test(test_counting_turn_waits_for_the_count_once_then_goes),
        cmocka_unit_test(test_count_wait_is_over_once_the_target_is_read),
        cmocka_unit_test(
            test_count_wait_goes_on_until_the_quiet_time_or_the_turns_end),
        cmocka_unit_test(test_count_wait_is_over_when_the_subscription_went),
        cmocka_unit_test(test_counting_turn_goes_when_it_ends),
        cmocka_unit_test(
            test_turn_with_nothing_to_count_sleeps_its_turn_and_asks_to_tune),
        cmocka_unit_test(test_turn_without_a_target_sleeps_its_rest_then_goes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
