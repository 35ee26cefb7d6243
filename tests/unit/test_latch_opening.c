/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rules of a wait for a count-down latch to open
 * (latch.h): the wait's spec, its attempts (the count down, made once and
 * marked before it is sent, then looks, checked argument by argument),
 * what their replies mean, and the status the wait ends with. The rules do
 * no I/O; each test plays the driver, with replies made from the RESP text
 * Redis would send (wire_stub.h). The latch is a real handle, made by
 * cr_latch_new on a client that is a plain struct with only what making a
 * handle reads (making one does no I/O). Nothing talks to Redis and
 * nothing sleeps.
 */
#include <stdio.h>
#include <string.h>

#include "latch.h"
#include "registry.h"
#include "wire_stub.h"

#define NAME "gate"
#define CHANNEL "redisson_countdownlatch__channel__{" NAME "}"
#define MARKER "{" NAME "}:credisson_latch_expiry"
#define WAIT_MS 2000

/* What a test works on: the client, the latch, the rules of one wait and
 * the spec they gave. */
struct fx {
    cr_client client;
    cr_latch *latch;
    cr__latch_opening o;
    cr__wait_spec spec;
};

static int
fx_up(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));

    f->client.magic = CR__CLIENT_MAGIC;
    f->client.fork_gen = cr__fork_generation();
    f->client.publish_cmd = "publish";
    assert_int_equal(cr_latch_new(&f->client, NAME, &f->latch), CR_OK);
    cr__clear_error();
    *state = f;
    return 0;
}

static int
fx_down(void **state)
{
    struct fx *f = *state;

    cr_latch_free(f->latch);
    test_free(f);
    return 0;
}

/* Begins f's wait of `wait_ms`, counting down first when `count_first`. */
static void
begin(struct fx *f, int64_t wait_ms, bool count_first, bool must_exist)
{
    cr__latch_opening_begin(&f->o, f->latch, wait_ms, count_first,
                            must_exist, &f->spec);
}

/* Builds f's next attempt, checks that it is the count down (`count`) or
 * a look (with `must_exist`), and frees it. */
static void
next_attempt(struct fx *f, bool count, bool must_exist)
{
    cr__script_call call = {0};

    assert_int_equal(cr__latch_opening_call(&f->o, &call), CR_OK);
    if (count) {
        assert_call_shape(&call, "latch_count_down", 3, 3);
        assert_call_key(&call, 0, NAME);
        assert_call_key(&call, 1, CHANNEL);
        assert_call_key(&call, 2, MARKER);
        assert_call_arg(&call, 0, "publish");
    } else {
        assert_call_shape(&call, "latch_await", 2, 2);
        assert_call_key(&call, 0, NAME);
        assert_call_key(&call, 1, MARKER);
        assert_call_arg(&call, 1, must_exist ? "1" : "0");
    }
    cr__script_call_free(&call);
}

/* Returns the outcome of f's last attempt whose reply is the RESP text
 * `resp`, with its hint in *hint. */
static cr_status
replied(struct fx *f, const char *resp, int64_t *hint)
{
    return cr__latch_opening_replied(&f->o, CR_OK, reply_of(resp), hint);
}

/* Returns the outcome of a look (made by f's next attempt) answered by
 * the RESP text `resp`, with its hint in *hint. */
static cr_status
looked(struct fx *f, const char *resp, int64_t *hint)
{
    next_attempt(f, false, f->o.must_exist);
    return replied(f, resp, hint);
}

/* Returns the outcome of a count down (made by f's next attempt)
 * answered by the RESP text `resp`; its hint must be none. */
static cr_status
counted_down(struct fx *f, const char *resp)
{
    int64_t hint = 5;
    cr_status rc;

    begin(f, WAIT_MS, true, false);
    next_attempt(f, true, false);
    rc = replied(f, resp, &hint);
    assert_int_equal(hint, -1);
    return rc;
}

/* ------------------------------------------------------------ the spec */

static void
test_wait_is_woken_on_the_latchs_channel_and_trusts_its_opening(
    void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, false, false);
    assert_string_equal(f->spec.channel, CHANNEL);
    assert_int_equal(f->spec.wait_ms, WAIT_MS);
    assert_true(f->spec.trust_open);
    assert_false(f->spec.subscribe_first);
    /* A latch has no waiting line: every waiter hears the opening. */
    assert_null(f->spec.shared);
    /* Without a hint, it looks again at least every second. */
    assert_int_equal(f->spec.min_sleep_ms, 1);
    assert_int_equal(f->spec.max_sleep_ms, CR__OBJECT_RECHECK_MS);
    /* "0" opens it for every waiter. */
    assert_non_null(f->spec.decode);
    assert_true(f->spec.decode("0", 1).opens);
    assert_int_equal(f->spec.decode("0", 1).wakes, CR__WAKE_ALL);
    assert_false(f->spec.decode("1", 1).opens);
    assert_int_equal(f->spec.decode("1", 1).wakes, 0);
}

static void
test_wait_that_runs_out_is_reported_as_a_timeout_of_the_latch(void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, false, false);
    assert_string_equal(f->spec.ev_object, "latch");
    assert_string_equal(f->spec.ev_name, NAME);
    assert_int_equal(f->spec.ev_busy, CR_TIMEOUT);
}

static void
test_count_down_and_await_subscribes_before_it_counts_down(void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, true, false);
    assert_true(f->spec.subscribe_first);
    assert_true(f->spec.trust_open);
    begin(f, CR_WAIT_FOREVER, true, false);
    assert_true(f->spec.subscribe_first);
}

static void
test_count_down_without_a_wait_does_not_subscribe(void **state)
{
    struct fx *f = *state;

    begin(f, 0, true, false);
    assert_false(f->spec.subscribe_first);
}

/* -------------------------------------------------------- the attempts */

static void
test_await_only_looks(void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, false, false);
    assert_true(f->o.counted);
    next_attempt(f, false, false);
    next_attempt(f, false, false);
}

static void
test_await_opened_looks_for_a_latch_that_must_exist(void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, false, true);
    next_attempt(f, false, true);
}

static void
test_count_down_is_marked_made_before_it_is_sent(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};

    begin(f, WAIT_MS, true, false);
    assert_false(f->o.counted);
    assert_int_equal(cr__latch_opening_call(&f->o, &call), CR_OK);
    /* Before any reply: a retry of the wait must not count down again. */
    assert_true(f->o.counted);
    assert_true(f->o.counting);
    cr__script_call_free(&call);
}

static void
test_count_down_is_made_once_then_the_wait_looks(void **state)
{
    struct fx *f = *state;
    int64_t hint;

    begin(f, WAIT_MS, true, false);
    next_attempt(f, true, false);
    assert_int_equal(replied(f, ":2\r\n", &hint), CR_BUSY);
    assert_false(f->o.counting);
    next_attempt(f, false, false);
    next_attempt(f, false, false);
}

static void
test_count_down_whose_reply_was_lost_is_not_made_again(void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;

    begin(f, WAIT_MS, true, false);
    next_attempt(f, true, false);
    assert_int_equal(cr__latch_opening_replied(&f->o, CR_EIO, NULL, &hint),
                     CR_EIO);
    assert_int_equal(hint, -1);
    assert_false(f->o.counting);
    next_attempt(f, false, false);
}

/* --------------------------------------------------------- the replies */

static void
test_count_down_that_leaves_a_count_is_busy_without_a_hint(void **state)
{
    struct fx *f = *state;

    assert_int_equal(counted_down(f, ":1\r\n"), CR_BUSY);
    assert_int_equal(counted_down(f, ":7\r\n"), CR_BUSY);
}

static void
test_count_down_to_zero_opens_it(void **state)
{
    struct fx *f = *state;

    assert_int_equal(counted_down(f, ":0\r\n"), CR_OK);
}

static void
test_count_down_of_a_latch_not_set_finds_it_open(void **state)
{
    struct fx *f = *state;

    assert_int_equal(counted_down(f, ":-2\r\n"), CR_OK);
}

static void
test_count_down_of_an_expired_latch_says_so(void **state)
{
    struct fx *f = *state;

    assert_int_equal(counted_down(f, ":-1\r\n"), CR_EEXPIRED);
    assert_non_null(strstr(cr_last_error(), "latch " NAME " expired"));
}

static void
test_count_down_answered_anything_else_is_a_script_error(void **state)
{
    struct fx *f = *state;

    assert_int_equal(counted_down(f, ":-3\r\n"), CR_ESCRIPT);
    assert_int_equal(counted_down(f, "+OK\r\n"), CR_ESCRIPT);
    assert_int_equal(counted_down(f, "*2\r\n:1\r\n:-1\r\n"), CR_ESCRIPT);
}

static void
test_look_at_a_closed_latch_is_busy_until_its_expiry(void **state)
{
    struct fx *f = *state;
    int64_t hint = -1;

    begin(f, WAIT_MS, false, false);
    assert_int_equal(looked(f, "*2\r\n:3\r\n:4500\r\n", &hint), CR_BUSY);
    assert_int_equal(hint, 4500);
    /* One that does not expire: no hint. */
    assert_int_equal(looked(f, "*2\r\n:3\r\n:-1\r\n", &hint), CR_BUSY);
    assert_int_equal(hint, -1);
}

static void
test_look_at_an_open_latch_ends_the_wait(void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;

    begin(f, WAIT_MS, false, false);
    assert_int_equal(looked(f, "*2\r\n:0\r\n:-1\r\n", &hint), CR_OK);
    assert_int_equal(hint, -1);
}

static void
test_look_at_an_expired_latch_says_so(void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;

    begin(f, WAIT_MS, false, false);
    assert_int_equal(looked(f, "*2\r\n:-1\r\n:-1\r\n", &hint), CR_EEXPIRED);
    assert_int_equal(hint, -1);
    assert_non_null(strstr(cr_last_error(), "latch " NAME " expired"));
}

static void
test_look_at_a_latch_never_set_that_must_exist_waits_for_it(void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;

    begin(f, WAIT_MS, false, true);
    assert_int_equal(looked(f, "*2\r\n:-2\r\n:-1\r\n", &hint), CR_BUSY);
    assert_int_equal(hint, -1);
}

static void
test_look_answered_anything_else_is_a_script_error(void **state)
{
    struct fx *f = *state;
    int64_t hint;

    begin(f, WAIT_MS, false, false);
    assert_int_equal(looked(f, ":0\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(looked(f, "*1\r\n:0\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(looked(f, "*3\r\n:0\r\n:-1\r\n:0\r\n", &hint),
                     CR_ESCRIPT);
    assert_int_equal(looked(f, "*2\r\n+OK\r\n:-1\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(looked(f, "*2\r\n:3\r\n$-1\r\n", &hint), CR_ESCRIPT);
}

static void
test_look_that_failed_is_the_attempts_outcome_without_a_hint(void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;

    begin(f, WAIT_MS, false, false);
    next_attempt(f, false, false);
    assert_int_equal(cr__latch_opening_replied(&f->o, CR_EIO, NULL, &hint),
                     CR_EIO);
    assert_int_equal(hint, -1);
}

/* ------------------------------------------------------------ the end */

static void
test_wait_that_ran_out_ends_in_a_timeout_saying_the_latch_is_closed(
    void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, false, false);
    assert_int_equal(cr__latch_opening_done(&f->o, CR_BUSY), CR_TIMEOUT);
    assert_non_null(strstr(cr_last_error(), "latch " NAME " still closed"));
    begin(f, WAIT_MS, false, true);
    assert_int_equal(cr__latch_opening_done(&f->o, CR_BUSY), CR_TIMEOUT);
    assert_non_null(strstr(cr_last_error(), "closed or never set"));
}

static void
test_open_latch_ends_the_wait_with_ok(void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, true, false);
    next_attempt(f, true, false);
    assert_int_equal(cr__latch_opening_done(&f->o, CR_OK), CR_OK);
}

static void
test_failure_before_the_count_down_says_it_was_not_counted_down(
    void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, true, false);
    /* The subscription, made first, was refused. */
    cr__fail(CR_ENOPERM, "no permission to subscribe");
    assert_int_equal(cr__latch_opening_done(&f->o, CR_ENOPERM), CR_ENOPERM);
    assert_non_null(strstr(cr_last_error(), "latch " NAME " not counted "
                                            "down: no permission to "
                                            "subscribe"));
}

static void
test_failure_after_the_count_down_was_sent_does_not_say_it_was_not_made(
    void **state)
{
    struct fx *f = *state;
    int64_t hint;

    begin(f, WAIT_MS, true, false);
    next_attempt(f, true, false);
    cr__fail(CR_EIO, "connection lost");
    assert_int_equal(cr__latch_opening_replied(&f->o, CR_EIO, NULL, &hint),
                     CR_EIO);
    assert_int_equal(cr__latch_opening_done(&f->o, CR_EIO), CR_EIO);
    assert_string_equal(cr_last_error(), "connection lost");
}

static void
test_failure_of_an_await_does_not_speak_of_a_count_down(void **state)
{
    struct fx *f = *state;

    begin(f, WAIT_MS, false, false);
    cr__fail(CR_EIO, "connection lost");
    assert_int_equal(cr__latch_opening_done(&f->o, CR_EIO), CR_EIO);
    assert_string_equal(cr_last_error(), "connection lost");
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_up, fx_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_wait_is_woken_on_the_latchs_channel_and_trusts_its_opening),
        T(test_wait_that_runs_out_is_reported_as_a_timeout_of_the_latch),
        T(test_count_down_and_await_subscribes_before_it_counts_down),
        T(test_count_down_without_a_wait_does_not_subscribe),
        T(test_await_only_looks),
        T(test_await_opened_looks_for_a_latch_that_must_exist),
        T(test_count_down_is_marked_made_before_it_is_sent),
        T(test_count_down_is_made_once_then_the_wait_looks),
        T(test_count_down_whose_reply_was_lost_is_not_made_again),
        T(test_count_down_that_leaves_a_count_is_busy_without_a_hint),
        T(test_count_down_to_zero_opens_it),
        T(test_count_down_of_a_latch_not_set_finds_it_open),
        T(test_count_down_of_an_expired_latch_says_so),
        T(test_count_down_answered_anything_else_is_a_script_error),
        T(test_look_at_a_closed_latch_is_busy_until_its_expiry),
        T(test_look_at_an_open_latch_ends_the_wait),
        T(test_look_at_an_expired_latch_says_so),
        T(test_look_at_a_latch_never_set_that_must_exist_waits_for_it),
        T(test_look_answered_anything_else_is_a_script_error),
        T(test_look_that_failed_is_the_attempts_outcome_without_a_hint),
        T(test_wait_that_ran_out_ends_in_a_timeout_saying_the_latch_is_closed),
        T(test_open_latch_ends_the_wait_with_ok),
        T(test_failure_before_the_count_down_says_it_was_not_counted_down),
        T(test_failure_after_the_count_down_was_sent_does_not_say_it_was_not_made),
        T(test_failure_of_an_await_does_not_speak_of_a_count_down),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
