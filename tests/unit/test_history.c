/* SPDX-License-Identifier: MIT */
/*
 * The history checker of the fault tests, checked on histories made by
 * hand: it must find overlaps where there are some (or the fault tests
 * would pass for nothing) and none where there are none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "history.h"

/* Lets the microsecond clock move on, so that stamps taken one after the
 * other differ. */
static void
tick(void)
{
    struct timespec ts = {0, 5000};

    nanosleep(&ts, NULL);
}

static void
test_history_holds_one_after_another_are_no_violation(void **state)
{
    cr_hist *h = cr_hist_new(16, 2);
    cr_hist_report r;
    long a, b;

    (void)state;
    assert_non_null(h);
    a = cr_hist_begin(h, 0);
    cr_hist_bump(h);
    tick();
    cr_hist_end(h, a);
    tick();
    b = cr_hist_begin(h, 1);
    cr_hist_bump(h);
    tick();
    cr_hist_end(h, b);
    cr_hist_done(h, 0);
    cr_hist_done(h, 1);
    cr_hist_check(h, 1, &r);
    assert_int_equal(r.holds, 2);
    assert_int_equal(r.violations, 0);
    assert_int_equal(r.max_concurrency, 1);
    assert_int_equal(r.hung, 0);
    assert_int_equal(r.open, 0);
    assert_int_equal(r.counter, 2);
    assert_int_equal(r.bumps, 2);
    cr_hist_free(h);
}

static void
test_history_overlapping_holds_are_a_violation(void **state)
{
    cr_hist *h = cr_hist_new(16, 2);
    cr_hist_report r;
    long a, b;

    (void)state;
    a = cr_hist_begin(h, 0);
    tick();
    b = cr_hist_begin(h, 1);
    tick();
    cr_hist_end(h, a);
    cr_hist_end(h, b);
    cr_hist_check(h, 1, &r);
    assert_int_equal(r.violations, 1);
    assert_int_equal(r.max_concurrency, 2);
    /* Two permits allow it. */
    cr_hist_check(h, 2, &r);
    assert_int_equal(r.violations, 0);
    /* Nobody said they were done: both count as hung. */
    assert_int_equal(r.hung, 2);
    cr_hist_free(h);
}

static void
test_history_a_lost_hold_counts_only_until_its_lease_ended(void **state)
{
    cr_hist *h = cr_hist_new(16, 2);
    cr_hist_report r;
    int64_t lease_end;
    long a, b;

    (void)state;
    a = cr_hist_begin(h, 0);
    tick();
    lease_end = cr_hist_now_us();
    tick();
    b = cr_hist_begin(h, 1);
    tick();
    cr_hist_end(h, b);
    cr_hist_end(h, a); /* the paused holder ends long after */
    cr_hist_check(h, 1, &r);
    assert_int_equal(r.violations, 1);
    cr_hist_set_valid_until(h, a, lease_end);
    cr_hist_check(h, 1, &r);
    assert_int_equal(r.violations, 0);
    cr_hist_free(h);
}

static void
test_history_an_open_hold_counts_forever_unless_bounded(void **state)
{
    cr_hist *h = cr_hist_new(16, 2);
    cr_hist_report r;
    int64_t lease_end;
    long a, b;

    (void)state;
    a = cr_hist_begin(h, 0); /* a killed holder: never ended */
    tick();
    lease_end = cr_hist_now_us();
    tick();
    b = cr_hist_begin(h, 1);
    cr_hist_end(h, b);
    cr_hist_check(h, 1, &r);
    assert_int_equal(r.open, 1);
    assert_int_equal(r.violations, 1);
    cr_hist_set_valid_until(h, a, lease_end);
    cr_hist_check(h, 1, &r);
    assert_int_equal(r.violations, 0);
    cr_hist_free(h);
}

static void
test_history_three_holders_over_two_permits_are_one_violation(void **state)
{
    cr_hist *h = cr_hist_new(16, 3);
    cr_hist_report r;
    long ev[3];
    int i;

    (void)state;
    for (i = 0; i < 3; i++) {
        ev[i] = cr_hist_begin(h, i);
        tick();
    }
    for (i = 0; i < 3; i++)
        cr_hist_end(h, ev[i]);
    cr_hist_check(h, 2, &r);
    assert_int_equal(r.violations, 1);
    assert_int_equal(r.max_concurrency, 3);
    cr_hist_free(h);
}

static void
test_history_is_shared_through_its_descriptor(void **state)
{
    cr_hist *h = cr_hist_new(16, 1);
    cr_hist *again = cr_hist_attach(dup(cr_hist_fd(h)));
    cr_hist_report r;

    (void)state;
    assert_non_null(again);
    cr_hist_end(again, cr_hist_begin(again, 0));
    cr_hist_error(again);
    cr_hist_done(again, 0);
    cr_hist_free(again);
    cr_hist_check(h, 1, &r);
    assert_int_equal(r.holds, 1);
    assert_int_equal(r.errors, 1);
    assert_int_equal(r.hung, 0);
    assert_null(cr_hist_attach(-1));
    assert_null(cr_hist_new(0, 1));
    assert_null(cr_hist_new(1, CR_HIST_MAX_WORKERS + 1));
    cr_hist_free(h);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_holds_one_after_another_are_no_violation),
        cmocka_unit_test(test_history_overlapping_holds_are_a_violation),
        cmocka_unit_test(test_history_a_lost_hold_counts_only_until_its_lease_ended),
        cmocka_unit_test(test_history_an_open_hold_counts_forever_unless_bounded),
        cmocka_unit_test(test_history_three_holders_over_two_permits_are_one_violation),
        cmocka_unit_test(test_history_is_shared_through_its_descriptor),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
