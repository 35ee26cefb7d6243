/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the wait state machine (wait.h). The machine does no I/O
 * and reads no clock, so each test plays its driver: it carries out every
 * request the machine makes by setting the outcome (an attempt's status and
 * hint, a subscription's or a sleep's status) and the time, and answers the
 * machine's questions about the subscription from a stub table. Nothing
 * talks to Redis and nothing sleeps.
 */
#include <string.h>

#include "credisson/lock.h"
#include "subs_stub.h"

/* The numbers wait.c promises (its comments and wait.h). */
#define UNCONFIRMED_POLL_MS 250
#define IO_BACKOFF_MIN_MS 20
#define IO_BACKOFF_MAX_MS 1000
#define SPIN_INITIAL_MS 1
#define SPIN_MAX_MS 128

#define T0 1000000 /* the time a wait begins (monotonic ms) */
#define SUBSCRIPTION_TIMEOUT_MS 7500
#define RECONNECT_WINDOW_MS 5000

/* What a test works on: the client whose settings the machine reads, the
 * client's subscription (a stub) and the machine. */
struct fx {
    cr_client client;
    struct subs_stub stub;
    cr__wait w;
};

static int
fx_up(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));

    f->client.subscription_timeout_ms = SUBSCRIPTION_TIMEOUT_MS;
    f->client.reconnect_window_ms = RECONNECT_WINDOW_MS;
    f->stub.confirmed = true;
    cr__clear_error(); /* a test that expects a message sees its own */
    *state = f;
    return 0;
}

static int
fx_down(void **state)
{
    test_free(*state);
    return 0;
}

/* Returns a spec for a wait of `wait_ms` on a channel, with a floor of 1 ms
 * and no bound on hinted sleeps. */
static cr__wait_spec
on_channel(int64_t wait_ms)
{
    return (cr__wait_spec){.channel = "ch", .wait_ms = wait_ms,
                           .min_sleep_ms = 1, .max_sleep_ms = -1};
}

/* Begins f's wait for `spec` at `now` on the stub. */
static void
begin(struct fx *f, const cr__wait_spec *spec, int64_t now)
{
    cr__wait_begin_on(&f->w, &f->client, spec, &stub_subs, &f->stub, now);
}

/* Returns the machine's next request after an attempt that returned `rc`
 * with `hint`, at `now`. */
static cr__wait_do
attempted(cr__wait *w, cr_status rc, int64_t hint, int64_t now)
{
    w->rc = rc;
    w->hint = hint;
    return cr__wait_step(w, now);
}

/* Returns the machine's next request after a subscription that ended with
 * `woke` at `now` (a refused one gives no subscription). */
static cr__wait_do
subscribed(cr__wait *w, cr_status woke, int64_t now)
{
    w->woke = woke;
    w->got = woke == CR_OK || woke == CR_TIMEOUT ? STUB_SUB : NULL;
    return cr__wait_step(w, now);
}

/* Returns the machine's next request after a sleep that ended with `woke`
 * (`opened`: it read an opening message after its fence) at `now`. */
static cr__wait_do
slept(cr__wait *w, cr_status woke, bool opened, int64_t now)
{
    w->woke = woke;
    w->opened = opened;
    return cr__wait_step(w, now);
}

/* Returns the machine's request once f's wait on a channel, begun at T0,
 * made a first attempt busy with `hint` and subscribed at once. */
static cr__wait_do
to_subscribed(struct fx *f, const cr__wait_spec *spec, int64_t hint)
{
    begin(f, spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, hint, T0), CR__WAIT_SUBSCRIBE);
    return subscribed(&f->w, CR_OK, T0);
}

/* Takes f's wait on a channel from its beginning at T0 to its first sleep:
 * both attempts busy with `hint`, subscribed at once. */
static void
to_first_sleep(struct fx *f, const cr__wait_spec *spec, int64_t hint)
{
    assert_int_equal(to_subscribed(f, spec, hint), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, hint, T0), CR__WAIT_SLEEP);
}

/* `n` other threads of f's client wait on the channel (0: the
 * subscription lingers): it was in place before the wait began, and has
 * read nothing since (`quiet`) or a message. */
static void
threads_wait(struct fx *f, int n, bool quiet)
{
    f->stub.sub_id = 7;
    f->stub.waiters = n;
    f->stub.quiet = quiet;
}

/* ------------------------------------------------------ waits that end */

static void
test_wait_of_zero_tries_once_and_ends_busy(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(0);

    threads_wait(f, 3, false);
    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 500, T0), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_BUSY);
    assert_false(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 0);
}

static void
test_wait_of_zero_with_subscribe_first_makes_no_attempt(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(0);

    spec.subscribe_first = true;
    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_BUSY);
    assert_false(f->w.contended);
}

static void
test_wait_ends_ok_without_subscribing_when_the_first_attempt_is_granted(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_OK, -1, T0), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_OK);
    assert_false(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 0);
}

static void
test_wait_ends_with_the_status_of_an_attempt_that_failed(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_ESERVER, -1, T0), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ESERVER);
    assert_false(f->w.contended);

    /* The same on the second attempt, which gives the subscription back. */
    to_first_sleep(f, &spec, 300);
    assert_int_equal(slept(&f->w, CR_OK, false, T0 + 10), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_ESCRIPT, -1, T0 + 10), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ESCRIPT);
    assert_true(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 1);
}

/* ------------------------------------------- subscribe, try, sleep, retry */

static void
test_busy_wait_subscribes_tries_again_sleeps_for_the_hint_and_retries(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 800, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_OK, T0 + 1), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 300, T0 + 2), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 300);
    assert_ptr_equal(f->w.sub, STUB_SUB);
    assert_int_equal(slept(&f->w, CR_OK, false, T0 + 50), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 200, T0 + 51), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 200);
    assert_int_equal(slept(&f->w, CR_TIMEOUT, false, T0 + 251),
                     CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_OK, -1, T0 + 252), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_OK);
    assert_true(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 1);
    assert_null(f->w.sub);
}

static void
test_subscription_is_bounded_by_the_subscription_timeout(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(60000);

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(f->w.sleep_ms, SUBSCRIPTION_TIMEOUT_MS);

    spec = on_channel(CR_WAIT_FOREVER);
    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(f->w.sleep_ms, SUBSCRIPTION_TIMEOUT_MS);
}

static void
test_subscription_is_bounded_by_a_shorter_wait(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(2000);

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(f->w.sleep_ms, 2000);
}

static void
test_sleep_is_raised_to_min_sleep_for_a_short_hint(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    spec.min_sleep_ms = 5;
    to_first_sleep(f, &spec, 0);
    assert_int_equal(f->w.sleep_ms, 5);
    slept(&f->w, CR_OK, false, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, 4, T0), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 5);
    slept(&f->w, CR_OK, false, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, 6, T0), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 6);
}

static void
test_sleep_is_cut_to_max_sleep(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(CR_WAIT_FOREVER);

    spec.max_sleep_ms = 1000;
    to_first_sleep(f, &spec, 5000);
    assert_int_equal(f->w.sleep_ms, 1000);
    slept(&f->w, CR_TIMEOUT, false, T0 + 1000);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0 + 1000), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 1000);
}

static void
test_sleep_without_a_hint_waits_for_a_message_without_limit(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(CR_WAIT_FOREVER);

    to_first_sleep(f, &spec, -1);
    assert_int_equal(f->w.sleep_ms, -1);
}

static void
test_sleep_is_bounded_by_the_time_left(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(1000);

    to_first_sleep(f, &spec, -1);
    assert_int_equal(f->w.sleep_ms, 1000);
    slept(&f->w, CR_OK, false, T0 + 900);
    assert_int_equal(attempted(&f->w, CR_BUSY, 500, T0 + 900), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 100);
}

static void
test_sleep_polls_every_250_ms_while_the_subscription_is_unconfirmed(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(CR_WAIT_FOREVER);

    f->stub.confirmed = false;
    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, T0), CR__WAIT_SUBSCRIBE);
    /* Not confirmed in time: it tries again all the same. */
    assert_int_equal(subscribed(&f->w, CR_TIMEOUT, T0 + 7500),
                     CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, T0 + 7500),
                     CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, UNCONFIRMED_POLL_MS);
    slept(&f->w, CR_TIMEOUT, false, T0 + 7750);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0 + 7750), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, UNCONFIRMED_POLL_MS);
    /* Confirmed now: the hint again. */
    f->stub.confirmed = true;
    slept(&f->w, CR_TIMEOUT, false, T0 + 8000);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, T0 + 8000),
                     CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 5000);
}

static void
test_wait_ends_busy_once_its_deadline_passes(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(1000);

    to_first_sleep(f, &spec, 5000);
    assert_int_equal(f->w.sleep_ms, 1000);
    slept(&f->w, CR_OK, false, T0 + 999);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, T0 + 999), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 1);
    slept(&f->w, CR_TIMEOUT, false, T0 + 1000);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, T0 + 1000),
                     CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_BUSY);
    assert_true(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 1);
}

static void
test_wait_ends_busy_when_its_second_attempt_comes_after_the_deadline(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(1000);

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_TIMEOUT, T0 + 1000),
                     CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, T0 + 1200),
                     CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_BUSY);
    assert_int_equal(f->stub.unsubscribes, 1);
}

/* ------------------------------------- the quiet subscription shortcut */

static void
test_quiet_subscription_skips_the_second_attempt(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    /* Another thread of the client waits: the subscription was there
     * before the first attempt, and read nothing since. */
    threads_wait(f, 1, true);
    assert_int_equal(to_subscribed(f, &spec, 400), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 400); /* the first attempt's hint */
    assert_int_equal(slept(&f->w, CR_OK, false, T0 + 30), CR__WAIT_ATTEMPT);
}

static void
test_subscription_that_read_a_message_since_gets_a_second_attempt(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    threads_wait(f, 1, false);
    assert_int_equal(to_subscribed(f, &spec, 400), CR__WAIT_ATTEMPT);
}

static void
test_quiet_shortcut_is_not_taken_after_a_first_attempt_that_failed_for_io(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    threads_wait(f, 1, true);
    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_OK, T0), CR__WAIT_ATTEMPT);
}

/* ------------------------------------------------------ subscribe first */

static void
test_subscribe_first_makes_its_first_attempt_once_subscribed(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(5000);

    spec.subscribe_first = true;
    /* Even a quiet subscription from before gets the attempt: it was
     * never made. */
    threads_wait(f, 1, true);
    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(f->w.sleep_ms, 5000);
    assert_int_equal(subscribed(&f->w, CR_OK, T0 + 3), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 200, T0 + 4), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 200);
    assert_int_equal(f->stub.fences, 0);
}

static void
test_subscribe_first_with_trust_open_asks_its_fence_after_the_attempt(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(5000);

    spec.subscribe_first = true;
    spec.trust_open = true;
    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_OK, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(f->stub.fences, 0);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0), CR__WAIT_SLEEP);
    assert_int_equal(f->stub.fences, 1);
}

/* ------------------------------------------------ refused and closed */

static void
test_refused_subscription_ends_the_wait_with_its_status(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, 100, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_ENOPERM, T0), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ENOPERM);
    assert_false(f->w.contended);
    assert_null(f->w.sub);
    assert_int_equal(f->stub.unsubscribes, 0);
}

static void
test_closing_while_subscribing_ends_the_wait_closed(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    attempted(&f->w, CR_BUSY, 100, T0);
    assert_int_equal(subscribed(&f->w, CR_ECLOSED, T0), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ECLOSED);
    assert_int_equal(f->stub.unsubscribes, 0);
}

static void
test_subscription_refused_during_a_sleep_ends_the_wait_with_its_status(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    to_first_sleep(f, &spec, 300);
    assert_int_equal(slept(&f->w, CR_ENOPERM, false, T0 + 5), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ENOPERM);
    assert_true(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 1);
}

static void
test_closing_during_a_sleep_on_the_subscription_ends_the_wait_closed(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    to_first_sleep(f, &spec, 300);
    assert_int_equal(slept(&f->w, CR_ECLOSED, false, T0 + 5), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ECLOSED);
    assert_non_null(strstr(cr_last_error(), "being freed"));
    assert_int_equal(f->stub.unsubscribes, 1);
}

/* -------------------------------------------------- trust_open (latches) */

static void
test_trust_open_asks_a_fence_after_the_second_attempt_and_ends_on_an_opening_message(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    spec.trust_open = true;
    begin(f, &spec, T0);
    assert_int_equal(f->w.fence.link, -1); /* none asked yet */
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0), CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_OK, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(f->stub.fences, 0);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0), CR__WAIT_SLEEP);
    assert_int_equal(f->stub.fences, 1);
    assert_int_equal(f->w.fence.link, 0);
    assert_int_equal(f->w.fence.pongs, 1);
    /* A "0" read after the fence: over, without another attempt. */
    assert_int_equal(slept(&f->w, CR_OK, true, T0 + 40), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_OK);
    assert_true(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 1);
}

static void
test_trust_open_wait_asks_its_fence_once(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    spec.trust_open = true;
    to_first_sleep(f, &spec, -1);
    assert_int_equal(f->stub.fences, 1);
    assert_int_equal(slept(&f->w, CR_OK, false, T0 + 5), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0 + 5), CR__WAIT_SLEEP);
    assert_int_equal(f->stub.fences, 1);
}

static void
test_trust_open_asks_the_fence_before_a_quiet_subscriptions_sleep(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    spec.trust_open = true;
    threads_wait(f, 1, true);
    assert_int_equal(to_subscribed(f, &spec, -1), CR__WAIT_SLEEP);
    assert_int_equal(f->stub.fences, 1);
}

static void
test_trust_open_asks_no_fence_when_the_second_attempt_is_granted(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    spec.trust_open = true;
    to_subscribed(f, &spec, -1);
    assert_int_equal(attempted(&f->w, CR_OK, -1, T0), CR__WAIT_DONE);
    assert_int_equal(f->stub.fences, 0);
}

static void
test_wait_without_trust_open_asks_no_fence(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    to_first_sleep(f, &spec, -1);
    assert_int_equal(f->stub.fences, 0);
}

/* ------------------------------------------------------- I/O failures */

static void
test_io_failures_back_off_doubling_from_20_to_1000_ms(void **state)
{
    static const int64_t expect[] = {20, 40, 80, 160, 320, 640, 1000, 1000};
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(CR_WAIT_FOREVER);
    int64_t now = T0;

    f->client.reconnect_window_ms = 30000;
    begin(f, &spec, now);
    cr__wait_step(&f->w, now);
    /* A first attempt that failed for I/O subscribes and tries again. */
    assert_int_equal(attempted(&f->w, CR_EIO, -1, now), CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_OK, now), CR__WAIT_ATTEMPT);
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
        assert_int_equal(attempted(&f->w, CR_EIO, 5, now), CR__WAIT_SLEEP);
        assert_int_equal(f->w.sleep_ms, expect[i]);
        now += f->w.sleep_ms;
        assert_int_equal(slept(&f->w, CR_TIMEOUT, false, now),
                         CR__WAIT_ATTEMPT);
    }
}

static void
test_io_failures_end_the_wait_with_eio_once_the_reconnect_window_passes(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(CR_WAIT_FOREVER);
    int64_t t1 = T0 + 10;

    to_first_sleep(f, &spec, 300);
    slept(&f->w, CR_OK, false, t1);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, t1), CR__WAIT_SLEEP);
    slept(&f->w, CR_TIMEOUT, false, t1 + RECONNECT_WINDOW_MS);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, t1 + RECONNECT_WINDOW_MS),
                     CR__WAIT_SLEEP);
    slept(&f->w, CR_TIMEOUT, false, t1 + RECONNECT_WINDOW_MS + 1);
    assert_int_equal(
        attempted(&f->w, CR_EIO, -1, t1 + RECONNECT_WINDOW_MS + 1),
        CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_EIO);
    assert_true(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 1);
}

static void
test_busy_attempt_restarts_the_io_backoff_and_the_reconnect_window(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(CR_WAIT_FOREVER);
    int64_t t1 = T0 + 10;

    to_first_sleep(f, &spec, 300);
    slept(&f->w, CR_OK, false, t1);
    attempted(&f->w, CR_EIO, -1, t1);
    assert_int_equal(f->w.sleep_ms, 20);
    slept(&f->w, CR_TIMEOUT, false, t1 + 20);
    attempted(&f->w, CR_EIO, -1, t1 + 20);
    assert_int_equal(f->w.sleep_ms, 40);
    slept(&f->w, CR_TIMEOUT, false, t1 + 4000);
    attempted(&f->w, CR_BUSY, 300, t1 + 4000);
    assert_int_equal(f->w.sleep_ms, 300);
    slept(&f->w, CR_TIMEOUT, false, t1 + 4300);
    attempted(&f->w, CR_EIO, -1, t1 + 4300);
    assert_int_equal(f->w.sleep_ms, 20);
    /* Unreachable since t1 + 4300, not since t1. */
    slept(&f->w, CR_TIMEOUT, false, t1 + RECONNECT_WINDOW_MS + 100);
    assert_int_equal(
        attempted(&f->w, CR_EIO, -1, t1 + RECONNECT_WINDOW_MS + 100),
        CR__WAIT_SLEEP);
}

static void
test_io_failure_at_the_deadline_ends_the_wait_with_eio(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(1000);

    to_first_sleep(f, &spec, 300);
    slept(&f->w, CR_OK, false, T0 + 990);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0 + 990), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 10); /* the backoff, cut to the wait */
    slept(&f->w, CR_TIMEOUT, false, T0 + 1000);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0 + 1000), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_EIO);
}

/* -------------------------------------------------- the spin (no channel) */

/* Returns the next number of xorshift32 from *x: the spin's jitter. */
static uint32_t
xorshift32(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void
test_spin_sleeps_1_ms_then_doubles_with_jitter_up_to_128_ms(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = CR_WAIT_FOREVER, .max_sleep_ms = -1};
    uint32_t x = 0x2545f491u;
    int64_t now = T0, expect = SPIN_INITIAL_MS;
    bool jittered = false;

    begin(f, &spec, now);
    f->w.jitter = x;
    assert_int_equal(cr__wait_step(&f->w, now), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 50, now), CR__WAIT_SLEEP);
    assert_null(f->w.sub);
    for (int k = 1; k <= 16; k++) {
        int64_t next;

        assert_int_equal(f->w.sleep_ms, expect);
        now += f->w.sleep_ms;
        assert_int_equal(slept(&f->w, CR_TIMEOUT, false, now),
                         CR__WAIT_ATTEMPT);
        assert_int_equal(attempted(&f->w, CR_BUSY, 50, now), CR__WAIT_SLEEP);
        /* The k-th doubling adds a random number in [0, k). */
        next = expect * 2 + (int64_t)(xorshift32(&x) % 256) % k;

        jittered = jittered || next != expect * 2;
        expect = next < SPIN_MAX_MS ? next : SPIN_MAX_MS;
    }
    assert_int_equal(expect, SPIN_MAX_MS);
    assert_int_equal(f->w.sleep_ms, SPIN_MAX_MS);
    assert_true(jittered);
    assert_int_equal(f->stub.unsubscribes, 0);
}

static void
test_spin_ends_busy_at_its_deadline_and_never_sleeps_past_it(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = 10, .max_sleep_ms = -1};
    int64_t now = T0;

    begin(f, &spec, now);
    cr__wait_step(&f->w, now);
    now = T0 + 9;
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, now), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 1);
    slept(&f->w, CR_TIMEOUT, false, T0 + 10);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0 + 10), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_BUSY);
    assert_true(f->w.contended);

    /* A delay longer than the time left is cut to it. */
    spec.wait_ms = 5;
    begin(f, &spec, T0);
    f->w.jitter = 1;
    cr__wait_step(&f->w, T0);
    attempted(&f->w, CR_BUSY, -1, T0);
    slept(&f->w, CR_TIMEOUT, false, T0 + 1);
    attempted(&f->w, CR_BUSY, -1, T0 + 1);
    slept(&f->w, CR_TIMEOUT, false, T0 + 3);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0 + 4), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 1);
}

static void
test_spin_retries_io_failures_until_the_reconnect_window_passes(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = CR_WAIT_FOREVER, .max_sleep_ms = -1};

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0), CR__WAIT_SLEEP);
    slept(&f->w, CR_TIMEOUT, false, T0 + RECONNECT_WINDOW_MS);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0 + RECONNECT_WINDOW_MS),
                     CR__WAIT_SLEEP);
    slept(&f->w, CR_TIMEOUT, false, T0 + RECONNECT_WINDOW_MS + 1);
    assert_int_equal(
        attempted(&f->w, CR_EIO, -1, T0 + RECONNECT_WINDOW_MS + 1),
        CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_EIO);
    assert_true(f->w.contended);
}

static void
test_spin_busy_attempt_restarts_the_reconnect_window(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = CR_WAIT_FOREVER, .max_sleep_ms = -1};

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    attempted(&f->w, CR_EIO, -1, T0);
    slept(&f->w, CR_TIMEOUT, false, T0 + 4000);
    attempted(&f->w, CR_BUSY, -1, T0 + 4000);
    slept(&f->w, CR_TIMEOUT, false, T0 + 4500);
    attempted(&f->w, CR_EIO, -1, T0 + 4500);
    slept(&f->w, CR_TIMEOUT, false, T0 + RECONNECT_WINDOW_MS + 1);
    assert_int_equal(
        attempted(&f->w, CR_EIO, -1, T0 + RECONNECT_WINDOW_MS + 1),
        CR__WAIT_SLEEP);
}

static void
test_spin_ends_with_eio_at_its_deadline_after_an_io_failure(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = 10, .max_sleep_ms = -1};

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0 + 10), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_EIO);
}

static void
test_closing_during_a_spin_sleep_ends_the_wait_closed(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = CR_WAIT_FOREVER, .max_sleep_ms = -1};

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0), CR__WAIT_SLEEP);
    assert_int_equal(slept(&f->w, CR_ECLOSED, false, T0 + 1), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ECLOSED);
    assert_non_null(strstr(cr_last_error(), "being freed"));
    assert_true(f->w.contended);
}

static void
test_spin_ends_with_a_grant_or_an_attempts_error(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = CR_WAIT_FOREVER, .max_sleep_ms = -1};

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    attempted(&f->w, CR_BUSY, -1, T0);
    slept(&f->w, CR_TIMEOUT, false, T0 + 1);
    assert_int_equal(attempted(&f->w, CR_OK, -1, T0 + 1), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_OK);
    assert_true(f->w.contended);

    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    attempted(&f->w, CR_BUSY, -1, T0);
    slept(&f->w, CR_TIMEOUT, false, T0 + 1);
    assert_int_equal(attempted(&f->w, CR_ESERVER, -1, T0 + 1), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_ESERVER);
}

/* ------------------------------------------------ retrying and contended */

static void
test_wait_is_retrying_from_after_its_first_attempt_until_it_ends(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    begin(f, &spec, T0);
    assert_false(cr__wait_retrying(&f->w));
    cr__wait_step(&f->w, T0);
    assert_false(cr__wait_retrying(&f->w)); /* the first attempt is out */
    attempted(&f->w, CR_BUSY, -1, T0);
    assert_true(cr__wait_retrying(&f->w));
    subscribed(&f->w, CR_OK, T0);
    assert_true(cr__wait_retrying(&f->w));
    attempted(&f->w, CR_BUSY, -1, T0);
    assert_true(cr__wait_retrying(&f->w));
    slept(&f->w, CR_OK, false, T0);
    attempted(&f->w, CR_OK, -1, T0);
    assert_false(cr__wait_retrying(&f->w));

    /* The spin too. */
    spec = (cr__wait_spec){.wait_ms = 100, .max_sleep_ms = -1};
    begin(f, &spec, T0);
    cr__wait_step(&f->w, T0);
    attempted(&f->w, CR_BUSY, -1, T0);
    assert_true(cr__wait_retrying(&f->w));
}

static void
test_wait_subscribing_first_is_not_retrying_before_its_first_attempt(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    spec.subscribe_first = true;
    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_SUBSCRIBE);
    /* Subscribing first: no attempt has been made yet, so its retries
     * have not begun (a blocking driver keeps its slot deadline). */
    assert_false(cr__wait_retrying(&f->w));
    assert_int_equal(subscribed(&f->w, CR_OK, T0), CR__WAIT_ATTEMPT);
    assert_false(cr__wait_retrying(&f->w));
    attempted(&f->w, CR_BUSY, -1, T0);
    assert_true(cr__wait_retrying(&f->w));
}

static void
test_spin_backs_off_io_failures_as_every_wait_does(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = {.wait_ms = CR_WAIT_FOREVER, .max_sleep_ms = -1};

    begin(f, &spec, T0);
    f->w.jitter = 1;
    cr__wait_step(&f->w, T0);
    /* An unreachable Redis: 20, 40, 80 ms, not the spin's 1, 2, 4. */
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 20);
    slept(&f->w, CR_TIMEOUT, false, T0 + 20);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0 + 20), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 40);
    slept(&f->w, CR_TIMEOUT, false, T0 + 60);
    assert_int_equal(attempted(&f->w, CR_EIO, -1, T0 + 60), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 80);
    /* Busy again: the spin's own delays. */
    slept(&f->w, CR_TIMEOUT, false, T0 + 140);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, T0 + 140),
                     CR__WAIT_SLEEP);
    assert_true(f->w.sleep_ms <= SPIN_MAX_MS);
    assert_true(f->w.sleep_ms < 20);
}

static void
test_poll_without_a_hint_looks_again_within_the_wait(void **state)
{
    struct fx *f = *state;
    int64_t sleep = 0;

    (void)f;
    cr__wait_poll_begin(&f->w, &f->client, 300, T0);
    f->w.rc = CR_BUSY;
    f->w.hint = -1;
    assert_true(cr__wait_poll(&f->w, T0 + 100, &sleep));
    assert_int_equal(sleep, 200); /* by the wait's end */
    cr__wait_poll_begin(&f->w, &f->client, CR_WAIT_FOREVER, T0);
    f->w.rc = CR_BUSY;
    f->w.hint = -1;
    assert_true(cr__wait_poll(&f->w, T0, &sleep));
    assert_int_equal(sleep, 1000);
    cr__wait_poll_begin(&f->w, &f->client, 300, T0);
    f->w.rc = CR_BUSY;
    f->w.hint = -1;
    assert_false(cr__wait_poll(&f->w, T0 + 300, &sleep));
}

static void
test_wait_granted_by_its_second_attempt_is_contended(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = on_channel(10000);

    to_subscribed(f, &spec, -1);
    assert_int_equal(attempted(&f->w, CR_OK, -1, T0 + 2), CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_OK);
    assert_true(f->w.contended);
    assert_int_equal(f->stub.unsubscribes, 1);
}

/* ------------------------------------------------------------ cr__wait_poll */

/* Sets f's machine up as the rate limiter does for a poll of `wait_ms`
 * begun at T0, with the last attempt's status and hint. */
static void
poll_begin(struct fx *f, int64_t wait_ms)
{
    memset(&f->w, 0, sizeof(f->w));
    f->w.client = &f->client;
    f->w.spec.wait_ms = wait_ms;
    f->w.start = T0;
    f->w.deadline = wait_ms < 0 ? -1 : T0 + wait_ms;
}

/* Returns cr__wait_poll's answer after an attempt of `rc` with `hint` at
 * `now`, the sleep into *sleep (left -2 when not set). */
static bool
polled(cr__wait *w, cr_status rc, int64_t hint, int64_t now, int64_t *sleep)
{
    w->rc = rc;
    w->hint = hint;
    *sleep = -2;
    return cr__wait_poll(w, now, sleep);
}

static void
test_poll_ends_when_the_attempt_is_granted_or_failed(void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, 1000);
    assert_false(polled(&f->w, CR_OK, -1, T0, &sleep));
    assert_int_equal(f->w.rc, CR_OK);
    assert_false(polled(&f->w, CR_EINVAL, -1, T0, &sleep));
    assert_int_equal(f->w.rc, CR_EINVAL);
}

static void
test_poll_of_a_wait_of_zero_ends_after_one_attempt(void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, 0);
    assert_false(polled(&f->w, CR_BUSY, 10, T0, &sleep));
    assert_int_equal(f->w.rc, CR_BUSY);
}

static void
test_poll_sleeps_for_the_hint_within_the_wait(void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, 1000);
    assert_true(polled(&f->w, CR_BUSY, 300, T0, &sleep));
    assert_int_equal(sleep, 300);
    /* A hint that ends exactly with the wait is still worth it. */
    assert_true(polled(&f->w, CR_BUSY, 700, T0 + 300, &sleep));
    assert_int_equal(sleep, 700);
}

static void
test_poll_gives_up_at_once_when_the_hint_is_beyond_the_deadline(
    void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, 1000);
    assert_false(polled(&f->w, CR_BUSY, 701, T0 + 300, &sleep));
    assert_int_equal(f->w.rc, CR_BUSY);
    assert_int_equal(sleep, -2);
}

static void
test_poll_ends_busy_at_the_deadline(void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, 1000);
    assert_false(polled(&f->w, CR_BUSY, 0, T0 + 1000, &sleep));
    assert_int_equal(f->w.rc, CR_BUSY);
}

static void
test_poll_of_an_endless_wait_sleeps_for_any_hint(void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, CR_WAIT_FOREVER);
    assert_true(polled(&f->w, CR_BUSY, 3600000, T0, &sleep));
    assert_int_equal(sleep, 3600000);
}

static void
test_poll_backs_off_io_failures_doubling_from_20_to_1000_ms(void **state)
{
    static const int64_t expect[] = {20, 40, 80, 160, 320, 640, 1000, 1000};
    struct fx *f = *state;
    int64_t sleep, now = T0;

    f->client.reconnect_window_ms = 30000;
    poll_begin(f, CR_WAIT_FOREVER);
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
        assert_true(polled(&f->w, CR_EIO, 5, now, &sleep));
        assert_int_equal(sleep, expect[i]);
        now += sleep;
    }
    /* A busy attempt restarts the backoff. */
    assert_true(polled(&f->w, CR_BUSY, 5, now, &sleep));
    assert_int_equal(sleep, 5);
    assert_true(polled(&f->w, CR_EIO, 5, now + 5, &sleep));
    assert_int_equal(sleep, IO_BACKOFF_MIN_MS);
}

static void
test_poll_sleeps_an_io_backoff_up_to_the_deadline_then_ends_with_eio(
    void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, 1000);
    assert_true(polled(&f->w, CR_EIO, -1, T0 + 990, &sleep));
    assert_int_equal(sleep, 10);
    assert_false(polled(&f->w, CR_EIO, -1, T0 + 1000, &sleep));
    assert_int_equal(f->w.rc, CR_EIO);
}

static void
test_poll_ends_with_eio_once_the_reconnect_window_passes(void **state)
{
    struct fx *f = *state;
    int64_t sleep;

    poll_begin(f, CR_WAIT_FOREVER);
    assert_true(polled(&f->w, CR_EIO, -1, T0, &sleep));
    assert_true(polled(&f->w, CR_EIO, -1, T0 + RECONNECT_WINDOW_MS, &sleep));
    assert_false(
        polled(&f->w, CR_EIO, -1, T0 + RECONNECT_WINDOW_MS + 1, &sleep));
    assert_int_equal(f->w.rc, CR_EIO);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_up, fx_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_wait_of_zero_tries_once_and_ends_busy),
        T(test_wait_of_zero_with_subscribe_first_makes_no_attempt),
        T(test_wait_ends_ok_without_subscribing_when_the_first_attempt_is_granted),
        T(test_wait_ends_with_the_status_of_an_attempt_that_failed),
        T(test_busy_wait_subscribes_tries_again_sleeps_for_the_hint_and_retries),
        T(test_subscription_is_bounded_by_the_subscription_timeout),
        T(test_subscription_is_bounded_by_a_shorter_wait),
        T(test_sleep_is_raised_to_min_sleep_for_a_short_hint),
        T(test_sleep_is_cut_to_max_sleep),
        T(test_sleep_without_a_hint_waits_for_a_message_without_limit),
        T(test_sleep_is_bounded_by_the_time_left),
        T(test_sleep_polls_every_250_ms_while_the_subscription_is_unconfirmed),
        T(test_wait_ends_busy_once_its_deadline_passes),
        T(test_wait_ends_busy_when_its_second_attempt_comes_after_the_deadline),
        T(test_quiet_subscription_skips_the_second_attempt),
        T(test_subscription_that_read_a_message_since_gets_a_second_attempt),
        T(test_quiet_shortcut_is_not_taken_after_a_first_attempt_that_failed_for_io),
        T(test_subscribe_first_makes_its_first_attempt_once_subscribed),
        T(test_subscribe_first_with_trust_open_asks_its_fence_after_the_attempt),
        T(test_refused_subscription_ends_the_wait_with_its_status),
        T(test_closing_while_subscribing_ends_the_wait_closed),
        T(test_subscription_refused_during_a_sleep_ends_the_wait_with_its_status),
        T(test_closing_during_a_sleep_on_the_subscription_ends_the_wait_closed),
        T(test_trust_open_asks_a_fence_after_the_second_attempt_and_ends_on_an_opening_message),
        T(test_trust_open_wait_asks_its_fence_once),
        T(test_trust_open_asks_the_fence_before_a_quiet_subscriptions_sleep),
        T(test_trust_open_asks_no_fence_when_the_second_attempt_is_granted),
        T(test_wait_without_trust_open_asks_no_fence),
        T(test_io_failures_back_off_doubling_from_20_to_1000_ms),
        T(test_io_failures_end_the_wait_with_eio_once_the_reconnect_window_passes),
        T(test_busy_attempt_restarts_the_io_backoff_and_the_reconnect_window),
        T(test_io_failure_at_the_deadline_ends_the_wait_with_eio),
        T(test_spin_sleeps_1_ms_then_doubles_with_jitter_up_to_128_ms),
        T(test_spin_ends_busy_at_its_deadline_and_never_sleeps_past_it),
        T(test_spin_retries_io_failures_until_the_reconnect_window_passes),
        T(test_spin_busy_attempt_restarts_the_reconnect_window),
        T(test_spin_ends_with_eio_at_its_deadline_after_an_io_failure),
        T(test_closing_during_a_spin_sleep_ends_the_wait_closed),
        T(test_spin_ends_with_a_grant_or_an_attempts_error),
        T(test_wait_subscribing_first_is_not_retrying_before_its_first_attempt),
        T(test_spin_backs_off_io_failures_as_every_wait_does),
        T(test_poll_without_a_hint_looks_again_within_the_wait),
        T(test_wait_is_retrying_from_after_its_first_attempt_until_it_ends),
        T(test_wait_granted_by_its_second_attempt_is_contended),
        T(test_poll_ends_when_the_attempt_is_granted_or_failed),
        T(test_poll_of_a_wait_of_zero_ends_after_one_attempt),
        T(test_poll_sleeps_for_the_hint_within_the_wait),
        T(test_poll_gives_up_at_once_when_the_hint_is_beyond_the_deadline),
        T(test_poll_ends_busy_at_the_deadline),
        T(test_poll_of_an_endless_wait_sleeps_for_any_hint),
        T(test_poll_backs_off_io_failures_doubling_from_20_to_1000_ms),
        T(test_poll_sleeps_an_io_backoff_up_to_the_deadline_then_ends_with_eio),
        T(test_poll_ends_with_eio_once_the_reconnect_window_passes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
