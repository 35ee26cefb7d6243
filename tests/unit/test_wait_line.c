/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of a wait in an object's waiting line (wait.h's spec.shared,
 * line.h): the waiter sleeps on its own channel, listens on the object's
 * own channel too once attempts have said for listen_after_ms that it is
 * the first the object cannot serve (at once when its turn was taken by a
 * client outside the line), stops listening when they no longer say so, and holds off its attempt after the line's messages ('w<ms>': a
 * watch; 't<heard>': its turn, with a yield when others heard the
 * release). Also the pure helpers of line.c that build a waiter's sleep.
 * As in test_wait.c, the test plays the machine's driver: nothing talks to
 * Redis and nothing sleeps. The stub here tells the waiter's own
 * subscription from the object's, which subs_stub.h's single one cannot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "credisson/lock.h"
#include "line.h"
#include "script_lock.h"
#include "wait.h"

#define T0 1000000 /* the time a wait begins (monotonic ms) */
#define SUBSCRIPTION_TIMEOUT_MS 7500
#define RECONNECT_WINDOW_MS 5000
#define TURN_MS 250        /* the client's line_turn_ms */
#define LISTEN_AFTER_MS CR__LINE_LISTEN_AFTER_MS /* the spec's, 50 ms */
#define WATCHDOG_MS 30000  /* the waiting lease */

#define OWN "credisson_line__channel:{L}:c1:7"
#define SHARED "redisson_lock__channel:{L}"

/* The two subscriptions a waiter in line has, as tokens. */
static int own_token, shared_token;
#define OWN_SUB ((void *)&own_token)
#define SHARED_SUB ((void *)&shared_token)

/* The subscriptions as a test sets them up, and what the machine asked. */
struct two_subs {
    cr__kept kept[2];     /* the last kept message of each: own, shared */
    int unsubscribes[2];
};

/* Returns 0 for the waiter's own subscription, 1 for the object's. */
static int
which(void *sub)
{
    if (sub == OWN_SUB)
        return 0;
    assert_ptr_equal(sub, SHARED_SUB);
    return 1;
}

/* Returns -1: no subscription was in place before the wait. */
static int
subs_waiters(void *ctx, const char *channel, cr__sub_seen *seen,
             cr__sub_mark *mark)
{
    (void)ctx;
    assert_non_null(channel);
    *seen = (cr__sub_seen){.waiters = -1};
    if (mark != NULL)
        *mark = (cr__sub_mark){0};
    return -1;
}

/* Returns true: both subscriptions are confirmed. */
static bool
subs_confirmed(void *ctx, void *sub)
{
    (void)ctx;
    which(sub);
    return true;
}

/* Returns false: a fresh subscription is never quiet since a mark. */
static bool
subs_quiet_since(void *ctx, void *sub, const cr__sub_mark *mark)
{
    (void)ctx;
    (void)mark;
    which(sub);
    return false;
}

/* Returns whether `sub`'s last kept message is `payload`. */
static bool
subs_heard(void *ctx, void *sub, const char *payload, size_t len)
{
    struct two_subs *s = ctx;

    return cr__kept_is(&s->kept[which(sub)], payload, len);
}

/* Gives `sub`'s last kept message. */
static void
subs_kept(void *ctx, void *sub, cr__kept *out)
{
    struct two_subs *s = ctx;

    *out = s->kept[which(sub)];
}

/* A line wait asks no fence (it does not trust an opening message). */
static void
subs_fence(void *ctx, void *sub, cr__fence *f)
{
    (void)ctx;
    (void)sub;
    (void)f;
    fail_msg("a line wait asked for a fence");
}

/* Counts a reference given back, per subscription. */
static void
subs_unsubscribe(void *ctx, void *sub)
{
    struct two_subs *s = ctx;

    s->unsubscribes[which(sub)]++;
}

static const cr__wait_subs two_subs_ops = {
    subs_waiters, subs_confirmed,   subs_quiet_since, subs_heard,
    subs_kept,    subs_fence,       subs_unsubscribe,
};

/* What a test works on: the client whose settings the machine reads, the
 * subscriptions and the machine. */
struct fx {
    cr_client client;
    struct two_subs subs;
    cr__wait w;
};

static int
fx_up(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));

    f->client.subscription_timeout_ms = SUBSCRIPTION_TIMEOUT_MS;
    f->client.reconnect_window_ms = RECONNECT_WINDOW_MS;
    f->client.watchdog_timeout_ms = WATCHDOG_MS;
    f->client.line_turn_ms = TURN_MS;
    cr__clear_error();
    *state = f;
    return 0;
}

static int
fx_down(void **state)
{
    test_free(*state);
    return 0;
}

/* Returns the spec of a waiter in a lock's line waiting `wait_ms`, as
 * cr__lock_wait_spec makes it: its own channel, the lock's as the shared
 * one, listening after CR__LINE_LISTEN_AFTER_MS, re-checking at least
 * every third of the waiting lease. */
static cr__wait_spec
in_line(int64_t wait_ms)
{
    return (cr__wait_spec){.channel = OWN, .decode = cr__line_decode,
                           .shared = SHARED,
                           .shared_decode = cr__lock_decode,
                           .listen_after_ms = LISTEN_AFTER_MS,
                           .shared_yield_ms = CR__LINE_YIELD_MS,
                           .wait_ms = wait_ms,
                           .min_sleep_ms = 1, .max_sleep_ms = WATCHDOG_MS / 3};
}

/* Begins f's wait for `spec` at `now` on the two subscriptions. */
static void
begin(struct fx *f, const cr__wait_spec *spec, int64_t now)
{
    cr__wait_begin_on(&f->w, &f->client, spec, &two_subs_ops, &f->subs, now);
}

/* What an attempt's reply says of the waiter's place (line.h's
 * CR__LISTEN_*, which the driver puts in w.listen): behind others the
 * object cannot serve either; the first it cannot serve; that, and its
 * turn was taken by a client outside the line. */
#define BEHIND CR__LISTEN_NO
#define FIRST CR__LISTEN_SOON
#define ROBBED CR__LISTEN_NOW

/* Returns the machine's next request after an attempt that returned `rc`
 * with `hint`, whose reply gave the waiter's place `listen`, at `now`. */
static cr__wait_do
attempted(cr__wait *w, cr_status rc, int64_t hint, int listen, int64_t now)
{
    w->rc = rc;
    w->hint = hint;
    w->listen = listen;
    return cr__wait_step(w, now);
}

/* Returns the machine's next request after a subscription to
 * w->sub_channel that ended with `woke` at `now` (a refused one gives
 * none). */
static cr__wait_do
subscribed(cr__wait *w, cr_status woke, int64_t now)
{
    bool shared = strcmp(w->sub_channel, SHARED) == 0;

    w->woke = woke;
    w->got = woke == CR_OK || woke == CR_TIMEOUT
                 ? (shared ? SHARED_SUB : OWN_SUB)
                 : NULL;
    return cr__wait_step(w, now);
}

/* Returns the machine's next request after a sleep that ended with
 * `woke` at `now`, having read `message` on the subscription it slept on
 * (NULL: none; kept there as the client's subscriptions keep it). */
static cr__wait_do
slept(struct fx *f, cr_status woke, const char *message, int64_t now)
{
    if (message != NULL) {
        cr__kept *k = &f->subs.kept[which(f->w.sleep_on)];
        cr__wake wk = f->w.sleep_on == OWN_SUB
                          ? cr__line_decode(message, strlen(message))
                          : cr__lock_decode(message, strlen(message));

        cr__kept_note(k, wk, message, strlen(message));
    }
    f->w.woke = woke;
    f->w.opened = false;
    return cr__wait_step(&f->w, now);
}

/* Takes f's wait in line from its beginning at T0 to its first sleep:
 * the first attempt busy, subscribed to its own channel at once, the
 * second attempt busy with `hint` and the place `listen` as its reply
 * said. */
static void
to_first_sleep(struct fx *f, const cr__wait_spec *spec, int64_t hint,
               int listen)
{
    begin(f, spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, hint, listen, T0),
                     CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_OK, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, hint, listen, T0),
                     CR__WAIT_SLEEP);
}

/* Takes f's wait to the point where it listens on the object's channel:
 * first in every attempt since T0, LISTEN_AFTER_MS passed, subscribed to
 * the object's channel and asleep on it after one more attempt. */
static void
to_listening(struct fx *f, const cr__wait_spec *spec)
{
    int64_t at = T0 + LISTEN_AFTER_MS;

    to_first_sleep(f, spec, -1, FIRST);
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, at), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, FIRST, at),
                     CR__WAIT_SUBSCRIBE);
    assert_int_equal(subscribed(&f->w, CR_OK, at), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, FIRST, at),
                     CR__WAIT_SLEEP);
    assert_ptr_equal(f->w.sleep_on, SHARED_SUB);
}

/* ---------------------------------------------- its own channel first */

static void
test_line_wait_subscribes_to_the_waiters_own_channel_with_the_lines_decoder(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    begin(f, &spec, T0);
    assert_int_equal(cr__wait_step(&f->w, T0), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, FIRST, T0),
                     CR__WAIT_SUBSCRIBE);
    assert_string_equal(f->w.sub_channel, OWN);
    assert_ptr_equal(f->w.sub_decode, cr__line_decode);
    assert_int_equal(f->w.sleep_ms, SUBSCRIPTION_TIMEOUT_MS);
    assert_int_equal(subscribed(&f->w, CR_OK, T0), CR__WAIT_ATTEMPT);
    assert_ptr_equal(f->w.sub, OWN_SUB);
    assert_null(f->w.shared_sub);
}

static void
test_line_wait_that_is_not_first_sleeps_on_its_own_channel_until_a_message(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_first_sleep(f, &spec, -1, BEHIND);
    assert_ptr_equal(f->w.sleep_on, OWN_SUB);
    /* No hint: the third of the waiting lease (each attempt renews it). */
    assert_int_equal(f->w.sleep_ms, WATCHDOG_MS / 3);
    /* Still not first long after: it never subscribes to the lock's. */
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + 10000),
                     CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, BEHIND, T0 + 10000),
                     CR__WAIT_SLEEP);
    assert_ptr_equal(f->w.sleep_on, OWN_SUB);
    assert_null(f->w.shared_sub);
}

/* ------------------------------------- listening on the object's channel */

static void
test_line_wait_listens_only_after_being_first_for_a_while_and_sleeps_until_then(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    /* First since T0: its sleep ends when LISTEN_AFTER_MS have passed,
     * however long the object's own hint. */
    to_first_sleep(f, &spec, 5000, FIRST);
    assert_ptr_equal(f->w.sleep_on, OWN_SUB);
    assert_int_equal(f->w.sleep_ms, LISTEN_AFTER_MS);
    /* Woken 20 ms in, still first: it sleeps the rest of that time. */
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + 20), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 5000, FIRST, T0 + 20),
                     CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, LISTEN_AFTER_MS - 20);
    assert_null(f->w.shared_sub);
    /* LISTEN_AFTER_MS after the first such attempt: it subscribes to the
     * lock's channel, with its decoder, for up to the subscription
     * timeout. */
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + LISTEN_AFTER_MS),
                     CR__WAIT_ATTEMPT);
    assert_int_equal(
        attempted(&f->w, CR_BUSY, 5000, FIRST, T0 + LISTEN_AFTER_MS),
        CR__WAIT_SUBSCRIBE);
    assert_string_equal(f->w.sub_channel, SHARED);
    assert_ptr_equal(f->w.sub_decode, cr__lock_decode);
    assert_int_equal(f->w.sleep_ms, SUBSCRIPTION_TIMEOUT_MS);
}

static void
test_line_wait_listens_at_once_when_its_turn_was_taken_from_it(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_first_sleep(f, &spec, -1, BEHIND);
    /* Its turn: a client outside the line took the lock first. It races
     * them for the next release: it listens now. */
    assert_int_equal(slept(f, CR_OK, "t1", T0 + 500), CR__WAIT_SLEEP);
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + 502), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 700, ROBBED, T0 + 502),
                     CR__WAIT_SUBSCRIBE);
    assert_string_equal(f->w.sub_channel, SHARED);
    assert_int_equal(subscribed(&f->w, CR_OK, T0 + 503), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 700, FIRST, T0 + 504),
                     CR__WAIT_SLEEP);
    assert_ptr_equal(f->w.sleep_on, SHARED_SUB);
    assert_int_equal(f->w.sleep_ms, 700);
}

static void
test_line_wait_attempts_once_after_subscribing_to_the_objects_channel(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);
    int64_t at = T0 + LISTEN_AFTER_MS;

    to_first_sleep(f, &spec, -1, FIRST);
    slept(f, CR_TIMEOUT, NULL, at);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, FIRST, at),
                     CR__WAIT_SUBSCRIBE);
    /* A release between the last attempt and the subscription would be
     * missed: one more attempt, which may take the lock. */
    assert_int_equal(subscribed(&f->w, CR_OK, at + 1), CR__WAIT_ATTEMPT);
    assert_ptr_equal(f->w.shared_sub, SHARED_SUB);
    assert_int_equal(attempted(&f->w, CR_OK, -1, BEHIND, at + 2),
                     CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_OK);
    /* Both subscriptions given back. */
    assert_int_equal(f->subs.unsubscribes[0], 1);
    assert_int_equal(f->subs.unsubscribes[1], 1);
}

static void
test_line_wait_sleeps_on_the_objects_channel_while_it_listens(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_listening(f, &spec);
    /* A release there (a Java one) wakes it: it yields to the Java
     * waiters, which heard it too, then attempts. */
    assert_int_equal(slept(f, CR_OK, "0", T0 + 400), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, CR__LINE_YIELD_MS);
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + 402), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_BUSY, 800, FIRST, T0 + 402),
                     CR__WAIT_SLEEP);
    assert_ptr_equal(f->w.sleep_on, SHARED_SUB);
    assert_int_equal(f->w.sleep_ms, 800); /* the lock's hint, once listening */
    assert_int_equal(f->subs.unsubscribes[1], 0);
    /* The Java side took it. At its next release this waiter attempts at
     * once: it yields once in a wait. */
    assert_int_equal(slept(f, CR_OK, "0", T0 + 420), CR__WAIT_ATTEMPT);
}

static void
test_line_wait_gives_the_objects_channel_back_when_no_longer_first(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_listening(f, &spec);
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + 600), CR__WAIT_ATTEMPT);
    /* Someone was served before it (a turn began): not first now. */
    assert_int_equal(attempted(&f->w, CR_BUSY, 250, BEHIND, T0 + 600),
                     CR__WAIT_SLEEP);
    assert_int_equal(f->subs.unsubscribes[1], 1);
    assert_null(f->w.shared_sub);
    assert_ptr_equal(f->w.sleep_on, OWN_SUB);
    /* First again: LISTEN_AFTER_MS more before it listens again. */
    slept(f, CR_TIMEOUT, NULL, T0 + 850);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, FIRST, T0 + 850),
                     CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, LISTEN_AFTER_MS);
    assert_null(f->w.shared_sub);
}

static void
test_line_wait_counts_again_when_an_attempt_says_it_is_not_first(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);
    int64_t again = T0 + 300;

    to_first_sleep(f, &spec, -1, FIRST);
    slept(f, CR_TIMEOUT, NULL, T0 + LISTEN_AFTER_MS - 10);
    assert_int_equal(
        attempted(&f->w, CR_BUSY, -1, BEHIND, T0 + LISTEN_AFTER_MS - 10),
        CR__WAIT_SLEEP);
    slept(f, CR_TIMEOUT, NULL, again);
    /* First again from T0 + 300, not since T0. */
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, FIRST, again),
                     CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, LISTEN_AFTER_MS);
    slept(f, CR_TIMEOUT, NULL, again + LISTEN_AFTER_MS - 1);
    assert_int_equal(
        attempted(&f->w, CR_BUSY, -1, FIRST, again + LISTEN_AFTER_MS - 1),
        CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 1);
    slept(f, CR_TIMEOUT, NULL, again + LISTEN_AFTER_MS);
    assert_int_equal(
        attempted(&f->w, CR_BUSY, -1, FIRST, again + LISTEN_AFTER_MS),
        CR__WAIT_SUBSCRIBE);
}

static void
test_line_wait_goes_on_without_the_objects_channel_when_it_is_refused(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);
    int64_t at = T0 + LISTEN_AFTER_MS;

    to_first_sleep(f, &spec, -1, FIRST);
    slept(f, CR_TIMEOUT, NULL, at);
    assert_int_equal(attempted(&f->w, CR_BUSY, -1, FIRST, at),
                     CR__WAIT_SUBSCRIBE);
    /* An ACL without the lock's channel: the wait goes on, asleep on its
     * own channel (its turns and hints alone). */
    assert_int_equal(subscribed(&f->w, CR_ENOPERM, at), CR__WAIT_SLEEP);
    assert_ptr_equal(f->w.sleep_on, OWN_SUB);
    assert_null(f->w.shared_sub);
    assert_int_equal(f->w.sleep_ms, WATCHDOG_MS / 3);
    /* Its turn comes: it takes the lock. */
    assert_int_equal(slept(f, CR_OK, "t0", T0 + 900), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_OK, -1, BEHIND, T0 + 900),
                     CR__WAIT_DONE);
    assert_int_equal(f->w.rc, CR_OK);
}

/* ------------------------------------------------- the line's messages */

static void
test_line_wait_holds_its_attempt_for_the_ms_of_a_watch(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_first_sleep(f, &spec, -1, BEHIND);
    /* The turns before it end in 120 ms: it attempts then. */
    assert_int_equal(slept(f, CR_OK, "w120", T0 + 50), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 120);
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + 170), CR__WAIT_ATTEMPT);
    assert_int_equal(attempted(&f->w, CR_OK, -1, BEHIND, T0 + 170),
                     CR__WAIT_DONE);
}

static void
test_line_wait_cuts_a_watch_to_the_time_left(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(1000);

    to_first_sleep(f, &spec, -1, BEHIND);
    assert_int_equal(slept(f, CR_OK, "w250", T0 + 900), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, 100);
}

static void
test_line_wait_attempts_at_once_after_a_watch_of_zero(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_first_sleep(f, &spec, -1, BEHIND);
    /* No turn runs: it may be first now. */
    assert_int_equal(slept(f, CR_OK, "w0", T0 + 50), CR__WAIT_ATTEMPT);
}

static void
test_line_wait_yields_when_others_heard_the_release_of_its_turn(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_first_sleep(f, &spec, -1, BEHIND);
    /* Two clients outside the line heard the release: they try first. */
    assert_int_equal(slept(f, CR_OK, "t2", T0 + 50), CR__WAIT_SLEEP);
    assert_int_equal(f->w.sleep_ms, CR__LINE_YIELD_MS);
    assert_int_equal(slept(f, CR_TIMEOUT, NULL, T0 + 52), CR__WAIT_ATTEMPT);
}

static void
test_line_wait_attempts_at_once_on_a_turn_nobody_else_heard(void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    to_first_sleep(f, &spec, -1, BEHIND);
    assert_int_equal(slept(f, CR_OK, "t0", T0 + 50), CR__WAIT_ATTEMPT);
}

static void
test_line_wait_does_not_hold_off_after_a_release_on_the_objects_channel(
    void **state)
{
    struct fx *f = *state;
    cr__wait_spec spec = in_line(CR_WAIT_FOREVER);

    /* A semaphore's waiter (no yield on the object's channel). */
    spec.shared_yield_ms = 0;
    to_listening(f, &spec);
    /* Its own channel's last message was a watch, long read: a release
     * heard on the object's channel is not delayed by it. */
    cr__kept_note(&f->subs.kept[0], cr__line_decode("w900", 4), "w900", 4);
    assert_int_equal(slept(f, CR_OK, "0", T0 + 400), CR__WAIT_ATTEMPT);
}

/* ----------------------------------------------------- line.c's helpers */

static void
test_line_decode_wakes_and_keeps_turns_and_watches_only(void **state)
{
    cr__wake w;

    (void)state;
    w = cr__line_decode("t0", 2);
    assert_int_equal(w.wakes, 1);
    assert_true(w.kept);
    w = cr__line_decode("w120", 4);
    assert_int_equal(w.wakes, 1);
    assert_true(w.kept);
    assert_int_equal(cr__line_decode("0", 1).wakes, 0);
    assert_int_equal(cr__line_decode("t", 1).wakes, 0);
    assert_int_equal(cr__line_decode("x5", 2).wakes, 0);
}

static void
test_line_delay_reads_watches_and_turns(void **state)
{
    (void)state;
    assert_int_equal(cr__line_delay("w120", 4), 120);
    assert_int_equal(cr__line_delay("w0", 2), 0);
    assert_int_equal(cr__line_delay("t0", 2), 0);
    assert_int_equal(cr__line_delay("t3", 2), CR__LINE_YIELD_MS);
    assert_int_equal(cr__line_delay("w-5", 3), 0);
    assert_int_equal(cr__line_delay("wx", 2), 0);
    assert_int_equal(cr__line_delay("q9", 2), 0);
}

static void
test_line_hint_is_the_objects_only_for_the_first_and_never_past_a_turn(
    void **state)
{
    cr__line_place first = {.listen = FIRST, .turn_ms = -1};
    cr__line_place behind = {.listen = BEHIND, .turn_ms = -1};
    cr__line_place first_turn = {.listen = FIRST, .turn_ms = 80};
    cr__line_place behind_turn = {.listen = BEHIND, .turn_ms = 80};

    (void)state;
    assert_int_equal(cr__line_hint(5000, &first), 5000);
    assert_int_equal(cr__line_hint(-1, &first), -1);
    assert_int_equal(cr__line_hint(5000, &behind), -1);
    assert_int_equal(cr__line_hint(5000, &first_turn), 80);
    assert_int_equal(cr__line_hint(30, &first_turn), 30);
    assert_int_equal(cr__line_hint(5000, &behind_turn), 80);
}

static void
test_line_max_sleep_is_a_third_of_the_waiting_lease(void **state)
{
    struct fx *f = *state;

    assert_int_equal(cr__line_max_sleep(&f->client, -1), WATCHDOG_MS / 3);
    assert_int_equal(cr__line_max_sleep(&f->client, 100), 100);
    assert_int_equal(cr__line_max_sleep(&f->client, 20000), WATCHDOG_MS / 3);
}

static void
test_line_wait_arg_says_try_wait_or_spin(void **state)
{
    (void)state;
    assert_int_equal(cr__line_wait_arg(0, false), 0);
    assert_int_equal(cr__line_wait_arg(100, false), 1);
    assert_int_equal(cr__line_wait_arg(CR_WAIT_FOREVER, false), 1);
    assert_int_equal(cr__line_wait_arg(0, true), 2);
    assert_int_equal(cr__line_wait_arg(100, true), 2);
}

static void
test_line_entry_of_a_writer_is_its_threads_reader_name(void **state)
{
    char out[CR__OWNER_MAX];

    (void)state;
    cr__line_entry("0b5c6a3e-1111-4222-8333-444455556666:7:write", out);
    assert_string_equal(out, "0b5c6a3e-1111-4222-8333-444455556666:7");
    cr__line_entry("0b5c6a3e-1111-4222-8333-444455556666:7", out);
    assert_string_equal(out, "0b5c6a3e-1111-4222-8333-444455556666:7");
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_up, fx_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_line_wait_subscribes_to_the_waiters_own_channel_with_the_lines_decoder),
        T(test_line_wait_that_is_not_first_sleeps_on_its_own_channel_until_a_message),
        T(test_line_wait_listens_only_after_being_first_for_a_while_and_sleeps_until_then),
        T(test_line_wait_listens_at_once_when_its_turn_was_taken_from_it),
        T(test_line_wait_attempts_once_after_subscribing_to_the_objects_channel),
        T(test_line_wait_sleeps_on_the_objects_channel_while_it_listens),
        T(test_line_wait_gives_the_objects_channel_back_when_no_longer_first),
        T(test_line_wait_counts_again_when_an_attempt_says_it_is_not_first),
        T(test_line_wait_goes_on_without_the_objects_channel_when_it_is_refused),
        T(test_line_wait_holds_its_attempt_for_the_ms_of_a_watch),
        T(test_line_wait_cuts_a_watch_to_the_time_left),
        T(test_line_wait_attempts_at_once_after_a_watch_of_zero),
        T(test_line_wait_yields_when_others_heard_the_release_of_its_turn),
        T(test_line_wait_attempts_at_once_on_a_turn_nobody_else_heard),
        T(test_line_wait_does_not_hold_off_after_a_release_on_the_objects_channel),
        T(test_line_decode_wakes_and_keeps_turns_and_watches_only),
        T(test_line_delay_reads_watches_and_turns),
        T(test_line_hint_is_the_objects_only_for_the_first_and_never_past_a_turn),
        T(test_line_max_sleep_is_a_third_of_the_waiting_lease),
        T(test_line_wait_arg_says_try_wait_or_spin),
        T(test_line_entry_of_a_writer_is_its_threads_reader_name),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
