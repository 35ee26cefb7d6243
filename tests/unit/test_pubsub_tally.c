/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the two rules both pub/subs (the client's, pubsub.c, and
 * the event loop's, aio.c) share (pubsub.h): what a message leaves on a
 * subscription (cr__tally_message: its wake tokens, counts and kept
 * message) and when one nobody uses any more goes (cr__linger_over). Each
 * test gives a message as its channel's decoder read it, and the times.
 * Nothing talks to Redis and nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pubsub.h"

#define NOW_US 123456789

/* Returns a message's decoding that wakes `wakes` waiters. */
static cr__wake
waking(int64_t wakes)
{
    return (cr__wake){.wakes = wakes};
}

/* The message `payload`, decoded as `w`, is read at `now_us` on a
 * subscription with `refs` waiters whose tally is `t`. */
static void
read_message(cr__tally *t, int refs, cr__wake w, const char *payload,
             int64_t now_us)
{
    cr__tally_message(t, refs, w, payload, strlen(payload), now_us);
}

/* ------------------------------------------------------ wake tokens */

static void
test_message_waking_some_gives_that_many_tokens_more(void **state)
{
    cr__tally t = {0};

    (void)state;
    read_message(&t, 5, waking(2), "2", NOW_US);
    assert_int_equal(t.tokens, 2);
    read_message(&t, 5, waking(1), "1", NOW_US);
    assert_int_equal(t.tokens, 3);
}

static void
test_tokens_never_outnumber_the_waiters(void **state)
{
    cr__tally t = {0};

    (void)state;
    read_message(&t, 5, waking(4), "4", NOW_US);
    read_message(&t, 5, waking(4), "4", NOW_US);
    assert_int_equal(t.tokens, 5);
    read_message(&t, 3, waking(7), "7", NOW_US);
    assert_int_equal(t.tokens, 3);
}

static void
test_message_waking_all_gives_every_waiter_one_token(void **state)
{
    cr__tally t = {.tokens = 1};

    (void)state;
    read_message(&t, 4, waking(CR__WAKE_ALL), "0", NOW_US);
    assert_int_equal(t.tokens, 4);
    read_message(&t, 4, waking(CR__WAKE_ALL), "0", NOW_US);
    assert_int_equal(t.tokens, 4);
}

static void
test_message_waking_nobody_gives_no_token(void **state)
{
    cr__tally t = {.tokens = 1};

    (void)state;
    read_message(&t, 4, waking(0), "1", NOW_US);
    assert_int_equal(t.tokens, 1);
}

static void
test_message_read_after_waiters_left_trims_their_tokens(void **state)
{
    cr__tally t = {.tokens = 4};

    (void)state;
    /* Two of the four waiters left without taking theirs. */
    read_message(&t, 2, waking(0), "1", NOW_US);
    assert_int_equal(t.tokens, 2);
}

static void
test_lingering_subscription_keeps_no_tokens(void **state)
{
    cr__tally t = {0};

    (void)state;
    read_message(&t, 0, waking(CR__WAKE_ALL), "0", NOW_US);
    read_message(&t, 0, waking(3), "3", NOW_US);
    assert_int_equal(t.tokens, 0);
}

/* ---------------------------------------------------------- counts */

static void
test_every_message_is_counted_whatever_it_says(void **state)
{
    cr__tally t = {0};

    (void)state;
    read_message(&t, 1, waking(0), "junk", NOW_US);
    read_message(&t, 1, waking(1), "1", NOW_US);
    read_message(&t, 0, waking(CR__WAKE_ALL), "0", NOW_US);
    assert_int_equal(t.messages, 3);
}

static void
test_counted_message_is_counted_with_the_time_it_was_read(void **state)
{
    cr__tally t = {0};

    (void)state;
    read_message(&t, 1, (cr__wake){.wakes = 1, .counted = true}, "0",
                 NOW_US);
    read_message(&t, 1, (cr__wake){.wakes = 1, .counted = true}, "0",
                 NOW_US + 40);
    assert_int_equal(t.counted, 2);
    assert_int_equal(t.counted_at_us, NOW_US + 40);
}

static void
test_message_not_counted_leaves_the_count_and_its_time(void **state)
{
    cr__tally t = {0};

    (void)state;
    read_message(&t, 1, (cr__wake){.wakes = 1, .counted = true}, "0",
                 NOW_US);
    read_message(&t, 1, waking(1), "1", NOW_US + 40);
    assert_int_equal(t.counted, 1);
    assert_int_equal(t.counted_at_us, NOW_US);
    assert_int_equal(t.messages, 2);
}

/* ---------------------------------------------------- kept messages */

static void
test_kept_message_is_kept_until_the_next_kept_one(void **state)
{
    cr__tally t = {0};
    const cr__wake kept = {.wakes = CR__WAKE_ALL, .kept = true};

    (void)state;
    read_message(&t, 1, kept, "0:5:1700000000123", NOW_US);
    assert_true(cr__kept_is(&t.kept, "0:5:1700000000123", 17));
    /* Only the whole message is it. */
    assert_false(cr__kept_is(&t.kept, "0:5:17", 6));
    assert_false(cr__kept_is(&t.kept, "0:5:17000000001234", 18));
    /* A message that is not kept leaves it. */
    read_message(&t, 1, waking(0), "1", NOW_US);
    assert_true(cr__kept_is(&t.kept, "0:5:1700000000123", 17));
    read_message(&t, 1, kept, "0:6:1700000000123", NOW_US);
    assert_false(cr__kept_is(&t.kept, "0:5:1700000000123", 17));
    assert_true(cr__kept_is(&t.kept, "0:6:1700000000123", 17));
}

static void
test_kept_message_too_long_to_keep_forgets_the_last(void **state)
{
    cr__tally t = {0};
    const cr__wake kept = {.kept = true};
    char longer[CR__KEPT_MAX + 2];

    (void)state;
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    read_message(&t, 1, kept, "0:5:1", NOW_US);
    read_message(&t, 1, kept, longer, NOW_US);
    assert_false(cr__kept_is(&t.kept, "0:5:1", 5));
    assert_false(cr__kept_is(&t.kept, longer, strlen(longer)));
    assert_int_equal(t.kept.len, 0);
}

static void
test_kept_message_of_the_longest_length_is_kept(void **state)
{
    cr__tally t = {0};
    char longest[CR__KEPT_MAX + 1];

    (void)state;
    memset(longest, 'y', CR__KEPT_MAX);
    longest[CR__KEPT_MAX] = '\0';
    read_message(&t, 1, (cr__wake){.kept = true}, longest, NOW_US);
    assert_true(cr__kept_is(&t.kept, longest, CR__KEPT_MAX));
}

static void
test_no_message_kept_matches_nothing(void **state)
{
    cr__tally t = {0};

    (void)state;
    assert_false(cr__kept_is(&t.kept, "", 0));
    assert_false(cr__kept_is(&t.kept, "0", 1));
}

/* ------------------------------------------------------------ linger */

static void
test_idle_subscription_stays_for_its_linger(void **state)
{
    int64_t next = -1;

    (void)state;
    assert_false(cr__linger_over(1000, 1000, &next));
    assert_false(cr__linger_over(1000, 1000 + CR__LINGER_MS - 1, &next));
    assert_int_equal(next, 1000 + CR__LINGER_MS);
}

static void
test_idle_subscription_goes_once_it_lingered(void **state)
{
    int64_t next = 4321;

    (void)state;
    assert_int_equal(CR__LINGER_MS, 250);
    assert_true(cr__linger_over(1000, 1000 + CR__LINGER_MS, &next));
    assert_true(cr__linger_over(1000, 9000, &next));
    /* One that goes is due for nothing. */
    assert_int_equal(next, 4321);
}

static void
test_sweep_is_next_due_when_the_earliest_idle_one_is(void **state)
{
    int64_t next = -1;

    (void)state;
    assert_false(cr__linger_over(1100, 1200, &next));
    assert_int_equal(next, 1100 + CR__LINGER_MS);
    assert_false(cr__linger_over(1000, 1200, &next));
    assert_int_equal(next, 1000 + CR__LINGER_MS);
    assert_false(cr__linger_over(1150, 1200, &next));
    assert_int_equal(next, 1000 + CR__LINGER_MS);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_waking_some_gives_that_many_tokens_more),
        cmocka_unit_test(test_tokens_never_outnumber_the_waiters),
        cmocka_unit_test(test_message_waking_all_gives_every_waiter_one_token),
        cmocka_unit_test(test_message_waking_nobody_gives_no_token),
        cmocka_unit_test(test_message_read_after_waiters_left_trims_their_tokens),
        cmocka_unit_test(test_lingering_subscription_keeps_no_tokens),
        cmocka_unit_test(test_every_message_is_counted_whatever_it_says),
        cmocka_unit_test(test_counted_message_is_counted_with_the_time_it_was_read),
        cmocka_unit_test(test_message_not_counted_leaves_the_count_and_its_time),
        cmocka_unit_test(test_kept_message_is_kept_until_the_next_kept_one),
        cmocka_unit_test(test_kept_message_too_long_to_keep_forgets_the_last),
        cmocka_unit_test(test_kept_message_of_the_longest_length_is_kept),
        cmocka_unit_test(test_no_message_kept_matches_nothing),
        cmocka_unit_test(test_idle_subscription_stays_for_its_linger),
        cmocka_unit_test(test_idle_subscription_goes_once_it_lingered),
        cmocka_unit_test(test_sweep_is_next_due_when_the_earliest_idle_one_is),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
