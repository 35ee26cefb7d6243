/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rules of one script lock acquisition (acquisition.h):
 * what comes before an attempt, what its reply means, and the steps of its
 * end. The rules do no I/O and read no clock, so each test plays the
 * driver: it says how each command the rules ask for went (a look's hold
 * counts, a reply's status, an undo's or a record's outcome) and checks
 * what they ask for next and how the acquisition ends, with what is left
 * to the background. The lock, its kind and its client are plain structs
 * with only what the rules read. Nothing talks to Redis and nothing
 * sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "acquisition.h"
#include "lock_kind.h"

#define CLIENT_ID "8c4f1a52-5b1e-4d3a-9a7e-2f0c6d9b1e11"
#define WATCHDOG_MS 30000
#define TID 7
#define WAIT_MS 5000
#define NOW 700000 /* monotonic ms */
#define GEN 3      /* the master's generation (Sentinel) */

/* What a test works on: the client, the lock's kind (a kind with a queue,
 * as the fair lock), the lock and the acquisition. */
struct fx {
    cr_client client;
    cr__lock_kind kind;
    cr_lock lock;
    cr__acquisition a;
};

/* The kind's give-up call: the rules only ask whether the kind has one;
 * returns CR_EINVAL after failing the test if it is called. */
static cr_status
give_up_call(cr_lock *l, const char *owner, int64_t wait_ms,
             cr__script_call *call)
{
    (void)l;
    (void)owner;
    (void)wait_ms;
    (void)call;
    fail_msg("the rules called the kind's give-up call");
    return CR_EINVAL;
}

static int
fx_up(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));

    memcpy(f->client.id, CLIENT_ID, sizeof(CLIENT_ID));
    f->client.watchdog_timeout_ms = WATCHDOG_MS;
    f->kind.name = "fair lock";
    f->kind.give_up_call = give_up_call;
    f->lock.client = &f->client;
    f->lock.kind = &f->kind;
    f->lock.name = "orders";
    cr__clear_error();
    cr__acquisition_begin(&f->a, &f->lock, TID, CR_LEASE_WATCHDOG, WAIT_MS);
    *state = f;
    return 0;
}

static int
fx_down(void **state)
{
    test_free(*state);
    return 0;
}

/* Returns what comes before the attempt when no Sentinel switch is
 * recent; fails the test if the hint is touched. */
static cr__acquisition_do
next(cr__acquisition *a)
{
    int64_t hint = -5;
    cr__acquisition_do d = cr__acquisition_next(a, 0, &hint);

    assert_int_equal(hint, -5);
    return d;
}

/* Returns a command's fate: written out (`sent`) or not, and its replica
 * sync. */
static cr__cmd
cmd_of(bool sent, cr_status sync)
{
    return (cr__cmd){.flags = CR__CMD_SYNC, .sent = sent, .sync = sync};
}

/* Sends an attempt of `a` at NOW to the master of generation GEN, whose
 * reply is `rc` with `hint`, the command's fate `cmd`, this client knowing
 * of `local` holds; returns the attempt's outcome. */
static cr_status
attempt(cr__acquisition *a, cr_status rc, int64_t hint, cr__cmd cmd,
        int64_t local)
{
    assert_int_equal(next(a), CR__ACQUISITION_SEND);
    cr__acquisition_sent(a, NOW, GEN);
    return cr__acquisition_replied(a, rc, hint, &cmd, local);
}

/* Ends `a` after one attempt whose reply, `rc`, is what the wait ended
 * with (sent, its replica sync `sync`): returns the end's first step,
 * with the reasons a grant cannot be kept `stop` and the master's
 * generation `gen` as they stand. */
static cr__acquisition_end_do
ended_after(cr__acquisition *a, cr_status rc, cr_status sync, unsigned stop,
            unsigned gen)
{
    attempt(a, rc, rc == CR_BUSY ? 100 : -1, cmd_of(true, sync), 0);
    cr__acquisition_end_begin(a, rc);
    return cr__acquisition_end_next(a, stop, gen);
}

/* Ends `a` after a grant no replica acknowledged (its reason the last
 * error), the master's generation being `gen`; fails the test unless the
 * end's first step is the undo. */
static void
unacknowledged_grant_ends(cr__acquisition *a, unsigned gen)
{
    attempt(a, CR_OK, -1, cmd_of(true, CR_EIO), 0);
    cr__fail(CR_EIO, "no replica acknowledged within the sync timeout");
    cr__acquisition_end_begin(a, CR_OK);
    assert_int_equal(cr__acquisition_end_next(a, 0, gen),
                     CR__ACQUISITION_END_UNDO);
}

/* Returns the acquisition's status once over, checking that the end has
 * nothing more to ask for and that `cleanup` is left to the background. */
static cr_status
done(cr__acquisition *a, unsigned cleanup)
{
    unsigned left = 12345;
    cr_status rc;

    assert_int_equal(cr__acquisition_end_next(a, 0, GEN),
                     CR__ACQUISITION_END_DONE);
    rc = cr__acquisition_done(a, &left);
    assert_int_equal(left, cleanup);
    return rc;
}

/* ------------------------------------------------------------ the begin */

static void
test_owner_is_the_client_id_and_the_owner_id(void **state)
{
    struct fx *f = *state;

    assert_string_equal(f->a.owner, CLIENT_ID ":7");
    f->kind.writer = true;
    cr__acquisition_begin(&f->a, &f->lock, 42, CR_LEASE_WATCHDOG, WAIT_MS);
    assert_string_equal(f->a.owner, CLIENT_ID ":42:write");
    assert_int_equal(f->a.owner_id, 42);
}

static void
test_attempts_ask_for_the_lease_asked(void **state)
{
    struct fx *f = *state;

    cr__acquisition_begin(&f->a, &f->lock, TID, 1500, WAIT_MS);
    assert_int_equal(f->a.attempt_lease, 1500);
    assert_int_equal(f->a.lease_ms, 1500);
}

static void
test_attempts_of_a_lease_less_hold_ask_for_the_watchdog_timeout(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(f->a.attempt_lease, WATCHDOG_MS);
    assert_int_equal(f->a.lease_ms, CR_LEASE_WATCHDOG);
}

static void
test_acquisition_begins_busy_certain_and_without_attempts(void **state)
{
    struct fx *f = *state;

    f->a.uncertain = true;
    f->a.attempts = 4;
    cr__acquisition_begin(&f->a, &f->lock, TID, CR_LEASE_WATCHDOG, WAIT_MS);
    assert_false(f->a.uncertain);
    assert_int_equal(f->a.attempts, 0);
    assert_int_equal(f->a.wait_ms, WAIT_MS);
    assert_int_equal(f->a.sync, CR_OK);
    assert_int_equal(next(&f->a), CR__ACQUISITION_SEND);
}

/* ------------------------------------------------ before an attempt */

static void
test_attempt_right_after_a_sentinel_switch_is_refused_until_it_settles(
    void **state)
{
    struct fx *f = *state;
    int64_t hint = -1;

    assert_int_equal(cr__acquisition_next(&f->a, 1200, &hint),
                     CR__ACQUISITION_REFUSE);
    assert_int_equal(hint, 1200);
    assert_non_null(strstr(cr_last_error(), "master moved"));
    assert_non_null(strstr(cr_last_error(), "1200 ms"));
    assert_int_equal(f->a.attempts, 0);
    /* Once it settled, the attempt goes. */
    hint = -1;
    assert_int_equal(cr__acquisition_next(&f->a, 0, &hint),
                     CR__ACQUISITION_SEND);
    assert_int_equal(hint, -1);
}

static void
test_attempt_after_a_lost_reply_looks_first_even_right_after_a_switch(
    void **state)
{
    struct fx *f = *state;
    int64_t hint = -1;

    assert_int_equal(attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 0),
                     CR_EIO);
    assert_int_equal(next(&f->a), CR__ACQUISITION_LOOK);
    assert_int_equal(cr__acquisition_next(&f->a, 1200, &hint),
                     CR__ACQUISITION_LOOK);
    assert_int_equal(hint, -1);
}

static void
test_look_that_finds_one_hold_more_than_known_is_a_grant(void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_EIO, 99, cmd_of(true, CR_OK), 0);
    f->a.token = 99;
    assert_int_equal(next(&f->a), CR__ACQUISITION_LOOK);
    assert_int_equal(cr__acquisition_looked(&f->a, CR_OK, 1, 0), CR_OK);
    assert_false(f->a.uncertain);
    assert_int_equal(f->a.token, 0); /* the lost reply's token is unknown */
}

static void
test_look_that_finds_a_reentrant_hold_more_than_known_is_a_grant(
    void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_ECLOSED, -1, cmd_of(true, CR_OK), 2);
    assert_int_equal(cr__acquisition_looked(&f->a, CR_OK, 3, 2), CR_OK);
}

static void
test_look_that_finds_no_hold_more_than_known_lets_the_attempt_go(
    void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 2);
    assert_int_equal(cr__acquisition_looked(&f->a, CR_OK, 2, 2), CR_BUSY);
    assert_false(f->a.uncertain);
    assert_int_equal(next(&f->a), CR__ACQUISITION_SEND);
}

static void
test_look_that_fails_is_the_attempts_outcome_and_comes_again(void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 0);
    assert_int_equal(cr__acquisition_looked(&f->a, CR_EIO, 1, 0), CR_EIO);
    assert_true(f->a.uncertain);
    assert_int_equal(next(&f->a), CR__ACQUISITION_LOOK);
    assert_int_equal(cr__acquisition_looked(&f->a, CR_ENOPERM, 0, 0),
                     CR_ENOPERM);
    assert_int_equal(next(&f->a), CR__ACQUISITION_LOOK);
}

/* --------------------------------------------------------- the attempt */

static void
test_sent_attempt_is_counted_with_its_time_and_masters_generation(
    void **state)
{
    struct fx *f = *state;

    cr__acquisition_sent(&f->a, NOW, GEN);
    cr__acquisition_sent(&f->a, NOW + 40, GEN + 1);
    assert_int_equal(f->a.attempts, 2);
    assert_int_equal(f->a.sent_ms, NOW + 40);
    assert_int_equal(f->a.gen, GEN + 1);
}

static void
test_grant_keeps_its_token_and_its_replica_sync(void **state)
{
    struct fx *f = *state;

    assert_int_equal(attempt(&f->a, CR_OK, 31, cmd_of(true, CR_OK), 0),
                     CR_OK);
    assert_int_equal(f->a.token, 31);
    assert_int_equal(f->a.sync, CR_OK);
    cr__acquisition_begin(&f->a, &f->lock, TID, CR_LEASE_WATCHDOG, WAIT_MS);
    assert_int_equal(attempt(&f->a, CR_OK, 32, cmd_of(true, CR_ENOPERM), 0),
                     CR_OK);
    assert_int_equal(f->a.token, 32);
    assert_int_equal(f->a.sync, CR_ENOPERM);
}

static void
test_busy_reply_is_busy_with_its_hint_and_certain(void **state)
{
    struct fx *f = *state;

    assert_int_equal(attempt(&f->a, CR_BUSY, 800, cmd_of(true, CR_OK), 0),
                     CR_BUSY);
    assert_false(f->a.uncertain);
    assert_int_equal(f->a.sync, CR_OK);
    assert_int_equal(next(&f->a), CR__ACQUISITION_SEND);
}

static void
test_reentrancy_refusal_while_this_client_knows_no_hold_is_a_grant(
    void **state)
{
    struct fx *f = *state;

    f->a.token = 55;
    /* The server has this owner's hold: an earlier attempt whose reply
     * was lost took it. */
    assert_int_equal(attempt(&f->a, CR_EREENTRANT, -1,
                             cmd_of(true, CR_EIO), 0),
                     CR_OK);
    assert_int_equal(f->a.token, 0);
    assert_int_equal(f->a.sync, CR_OK);
}

static void
test_reentrancy_refusal_while_this_client_holds_the_lock_is_a_refusal(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(attempt(&f->a, CR_EREENTRANT, -1,
                             cmd_of(true, CR_OK), 1),
                     CR_EREENTRANT);
    assert_false(f->a.uncertain);
}

static void
test_lost_reply_of_a_sent_attempt_makes_the_acquisition_uncertain(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 0),
                     CR_EIO);
    assert_true(f->a.uncertain);
    cr__acquisition_begin(&f->a, &f->lock, TID, CR_LEASE_WATCHDOG, WAIT_MS);
    /* Its handle freed before the reply was read. */
    assert_int_equal(attempt(&f->a, CR_ECLOSED, -1, cmd_of(true, CR_OK), 0),
                     CR_ECLOSED);
    assert_true(f->a.uncertain);
}

static void
test_failure_of_an_attempt_never_sent_leaves_the_acquisition_certain(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(attempt(&f->a, CR_EIO, -1, cmd_of(false, CR_OK), 0),
                     CR_EIO);
    assert_false(f->a.uncertain);
    assert_int_equal(attempt(&f->a, CR_ECLOSED, -1, cmd_of(false, CR_OK), 0),
                     CR_ECLOSED);
    assert_false(f->a.uncertain);
    assert_int_equal(next(&f->a), CR__ACQUISITION_SEND);
}

static void
test_answered_failure_leaves_the_acquisition_certain(void **state)
{
    struct fx *f = *state;

    assert_int_equal(attempt(&f->a, CR_ENOPERM, -1, cmd_of(true, CR_OK), 0),
                     CR_ENOPERM);
    assert_int_equal(attempt(&f->a, CR_ESCRIPT, -1, cmd_of(true, CR_OK), 0),
                     CR_ESCRIPT);
    assert_false(f->a.uncertain);
}

/* ----------------------------------------------------------- the end */

static void
test_grant_is_recorded_and_kept(void **state)
{
    struct fx *f = *state;

    assert_int_equal(attempt(&f->a, CR_OK, 9, cmd_of(true, CR_OK), 0),
                     CR_OK);
    cr__acquisition_end_begin(&f->a, CR_OK);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_RECORD);
    cr__acquisition_end_recorded(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_OK);
    assert_int_equal(f->a.token, 9);
}

static void
test_grant_no_replica_acknowledged_is_undone_first_and_says_why(
    void **state)
{
    struct fx *f = *state;

    unacknowledged_grant_ends(&f->a, GEN + 1);
    cr__acquisition_end_undone(&f->a, CR_OK);
    /* Neither recorded, nor checked on the new master, nor a queue left
     * (the grant took the waiter out of it). */
    assert_int_equal(done(&f->a, 0), CR_EIO);
    assert_non_null(strstr(cr_last_error(), "fair lock orders: no replica "
                                            "acknowledged"));
    assert_non_null(strstr(cr_last_error(), "undone"));
}

static void
test_grant_on_a_server_that_refuses_wait_is_undone_with_the_refusal(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_ENOPERM, 0, GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_ENOPERM);
}

static void
test_replica_sync_undo_that_fails_is_left_to_the_background(void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_EIO, 0, GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_EIO);
    assert_int_equal(done(&f->a, CR__CLEANUP_GIVE_BACK), CR_EIO);
}

/* The undo's unlock fails with its own message (here the grant's lease ran
 * out during the WAIT, so the unlock found no hold): the acquisition's
 * status still comes with the reason for it. */
static void
test_replica_sync_undo_that_fails_keeps_the_reason_in_the_message(
    void **state)
{
    struct fx *f = *state;

    unacknowledged_grant_ends(&f->a, GEN);
    cr__acquisition_end_undone(
        &f->a, cr__fail(CR_ENOTOWNER, "fair lock orders is not held by this "
                                      "owner"));
    assert_int_equal(done(&f->a, CR__CLEANUP_GIVE_BACK), CR_EIO);
    assert_non_null(strstr(cr_last_error(), "fair lock orders: no replica "
                                            "acknowledged"));
}

static void
test_end_after_a_lost_reply_looks_once_and_keeps_a_grant_it_finds(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_EIO, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_LOOK);
    cr__acquisition_end_looked(&f->a, CR_OK, 1, 0);
    assert_false(f->a.uncertain);
    assert_int_equal(f->a.token, 0);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_RECORD);
    cr__acquisition_end_recorded(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_OK);
}

/* A wait that ended on a broken link leaves its queue or line in the
 * background, not inline (where it would try the link again). */
static void
test_end_look_that_finds_no_grant_keeps_the_failure_and_leaves_the_queue_later(
    void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 1);
    cr__acquisition_end_begin(&f->a, CR_EIO);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_LOOK);
    cr__acquisition_end_looked(&f->a, CR_OK, 1, 1);
    assert_false(f->a.uncertain);
    assert_int_equal(done(&f->a, CR__CLEANUP_LEAVE_QUEUE), CR_EIO);
}

static void
test_end_look_that_fails_leaves_the_lost_reply_to_the_background(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_EIO, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_LOOK);
    cr__acquisition_end_looked(&f->a, CR_EIO, 0, 0);
    assert_int_equal(done(&f->a, CR__CLEANUP_RESOLVE | CR__CLEANUP_LEAVE_QUEUE),
                     CR_EIO);
}

/* A wait that ran out (the link is fine) leaves inline. */
static void
test_end_of_a_wait_that_ran_out_leaves_the_queue_inline(void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_BUSY, 100, cmd_of(true, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_BUSY);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_GIVE_UP);
    cr__acquisition_end_given_up(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_BUSY);
}

/* A wait that failed ends with its own message, though the end's look
 * fails with its own and leaves its work (and the leave) to the
 * background. */
static void
test_end_whose_look_fails_keeps_the_waits_message(void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 0);
    cr__fail(CR_EIO, "EVAL on 127.0.0.1:6379: timed out");
    cr__acquisition_end_begin(&f->a, CR_EIO);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_LOOK);
    cr__acquisition_end_looked(
        &f->a, cr__fail(CR_EIO, "HGET: no connection slot"), 0, 0);
    assert_int_equal(done(&f->a, CR__CLEANUP_RESOLVE |
                                     CR__CLEANUP_LEAVE_QUEUE),
                     CR_EIO);
    assert_string_equal(cr_last_error(), "EVAL on 127.0.0.1:6379: timed out");
}

static void
test_wait_that_ran_out_after_a_lost_reply_looks_too(void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_BUSY);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_LOOK);
}

/* A request cancelled after a lost reply looks too, and gives back what
 * the lost attempt took. */
static void
test_cancel_after_a_lost_reply_looks_and_gives_a_grant_back(void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_EIO, -1, cmd_of(true, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_ECANCELED);
    assert_int_equal(cr__acquisition_end_next(&f->a, CR__STOP_CANCELLED, GEN),
                     CR__ACQUISITION_END_LOOK);
    cr__acquisition_end_looked(&f->a, CR_OK, 1, 0);
    assert_int_equal(cr__acquisition_end_next(&f->a, CR__STOP_CANCELLED, GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_ECANCELED);
}

static void
test_end_without_a_lost_reply_does_not_look(void **state)
{
    struct fx *f = *state;

    f->kind.give_up_call = NULL;
    attempt(&f->a, CR_EIO, -1, cmd_of(false, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_EIO);
    assert_int_equal(done(&f->a, 0), CR_EIO);
    cr__acquisition_begin(&f->a, &f->lock, TID, CR_LEASE_WATCHDOG, WAIT_MS);
    attempt(&f->a, CR_BUSY, 100, cmd_of(true, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_BUSY);
    assert_int_equal(done(&f->a, 0), CR_BUSY);
}

static void
test_end_of_a_client_being_freed_neither_looks_nor_leaves_anything(
    void **state)
{
    struct fx *f = *state;

    attempt(&f->a, CR_ECLOSED, -1, cmd_of(true, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_ECLOSED);
    /* Its queue is left if it can be; if not, nothing runs in the
     * background of a client being freed. */
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_GIVE_UP);
    cr__acquisition_end_given_up(&f->a, CR_EIO);
    assert_int_equal(done(&f->a, 0), CR_ECLOSED);
}

static void
test_grant_that_came_after_a_cancel_is_undone_and_the_call_cancelled(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, CR__STOP_CANCELLED, GEN + 1),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_OK);
    /* Not recorded, not checked, and no queue to leave. */
    assert_int_equal(done(&f->a, 0), CR_ECANCELED);
    assert_non_null(strstr(cr_last_error(), "cancelled"));
}

static void
test_grant_that_came_while_the_client_is_freed_is_undone_and_closed(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, CR__STOP_CLOSING, GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_ECLOSED);
    assert_non_null(strstr(cr_last_error(), "being freed"));
}

static void
test_cancelled_grants_undo_that_fails_is_left_to_the_background(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, CR__STOP_CANCELLED, GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_EIO);
    assert_int_equal(done(&f->a, CR__CLEANUP_GIVE_BACK), CR_ECANCELED);
}

static void
test_undo_that_fails_while_the_client_is_freed_leaves_nothing(void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, CR__STOP_CLOSING, GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_EIO);
    assert_int_equal(done(&f->a, 0), CR_ECLOSED);
}

static void
test_grant_found_by_the_end_look_after_a_cancel_is_undone(void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_EIO, CR_OK, CR__STOP_CANCELLED, GEN),
                     CR__ACQUISITION_END_LOOK);
    cr__acquisition_end_looked(&f->a, CR_OK, 1, 0);
    assert_int_equal(cr__acquisition_end_next(&f->a, CR__STOP_CANCELLED,
                                              GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_ECANCELED);
}

static void
test_grant_the_holds_table_cannot_take_is_given_back(void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, 0, GEN + 1),
                     CR__ACQUISITION_END_RECORD);
    cr__acquisition_end_recorded(&f->a, CR_ENOMEM);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN + 1),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_OK);
    /* Not checked on the new master, and no queue to leave. */
    assert_int_equal(done(&f->a, 0), CR_ENOMEM);
}

static void
test_give_back_of_an_unrecorded_grant_that_fails_is_left_to_the_background(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_RECORD);
    cr__acquisition_end_recorded(&f->a, CR_ENOMEM);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_UNDO);
    cr__acquisition_end_undone(&f->a, CR_EIO);
    assert_int_equal(done(&f->a, CR__CLEANUP_GIVE_BACK), CR_ENOMEM);
}

static void
test_grant_is_checked_on_the_new_master_when_the_master_moved_since_sent(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, 0, GEN + 1),
                     CR__ACQUISITION_END_RECORD);
    cr__acquisition_end_recorded(&f->a, CR_OK);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN + 1),
                     CR__ACQUISITION_END_VERIFY);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN + 1),
                     CR__ACQUISITION_END_DONE);
    assert_int_equal(cr__acquisition_done(&f->a, &(unsigned){0}), CR_OK);
}

static void
test_grant_is_not_checked_when_the_master_stayed(void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_RECORD);
    cr__acquisition_end_recorded(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_OK);
}

static void
test_acquisition_without_the_lock_is_not_checked_when_the_master_moved(
    void **state)
{
    struct fx *f = *state;

    f->kind.give_up_call = NULL;
    assert_int_equal(ended_after(&f->a, CR_BUSY, CR_OK, 0, GEN + 1),
                     CR__ACQUISITION_END_DONE);
}

static void
test_waiter_that_ends_without_the_lock_leaves_the_kinds_queue(void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_BUSY, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_GIVE_UP);
    cr__acquisition_end_given_up(&f->a, CR_OK);
    assert_int_equal(done(&f->a, 0), CR_BUSY);
}

static void
test_waiter_without_limit_that_fails_leaves_the_kinds_queue(void **state)
{
    struct fx *f = *state;

    cr__acquisition_begin(&f->a, &f->lock, TID, CR_LEASE_WATCHDOG,
                          CR_WAIT_FOREVER);
    assert_int_equal(ended_after(&f->a, CR_ENOPERM, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_GIVE_UP);
}

static void
test_try_without_a_wait_never_enqueued_and_does_not_leave_the_queue(
    void **state)
{
    struct fx *f = *state;

    cr__acquisition_begin(&f->a, &f->lock, TID, CR_LEASE_WATCHDOG, 0);
    attempt(&f->a, CR_BUSY, 100, cmd_of(true, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_BUSY);
    assert_int_equal(done(&f->a, 0), CR_BUSY);
}

static void
test_kind_without_a_queue_has_none_to_leave(void **state)
{
    struct fx *f = *state;

    f->kind.give_up_call = NULL;
    attempt(&f->a, CR_BUSY, 100, cmd_of(true, CR_OK), 0);
    cr__acquisition_end_begin(&f->a, CR_BUSY);
    assert_int_equal(done(&f->a, 0), CR_BUSY);
}

static void
test_leaving_the_queue_that_fails_is_left_to_the_background(void **state)
{
    struct fx *f = *state;

    assert_int_equal(ended_after(&f->a, CR_BUSY, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_GIVE_UP);
    cr__acquisition_end_given_up(&f->a, CR_EIO);
    assert_int_equal(done(&f->a, CR__CLEANUP_LEAVE_QUEUE), CR_BUSY);
}

static void
test_end_that_is_over_stays_over(void **state)
{
    struct fx *f = *state;
    unsigned cleanup = 1;

    assert_int_equal(ended_after(&f->a, CR_OK, CR_OK, 0, GEN),
                     CR__ACQUISITION_END_RECORD);
    cr__acquisition_end_recorded(&f->a, CR_OK);
    assert_int_equal(cr__acquisition_end_next(&f->a, 0, GEN),
                     CR__ACQUISITION_END_DONE);
    assert_int_equal(cr__acquisition_end_next(&f->a, CR__STOP_CANCELLED,
                                              GEN + 1),
                     CR__ACQUISITION_END_DONE);
    assert_int_equal(cr__acquisition_done(&f->a, &cleanup), CR_OK);
    assert_int_equal(cleanup, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_up, fx_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_owner_is_the_client_id_and_the_owner_id),
        T(test_attempts_ask_for_the_lease_asked),
        T(test_attempts_of_a_lease_less_hold_ask_for_the_watchdog_timeout),
        T(test_acquisition_begins_busy_certain_and_without_attempts),
        T(test_attempt_right_after_a_sentinel_switch_is_refused_until_it_settles),
        T(test_attempt_after_a_lost_reply_looks_first_even_right_after_a_switch),
        T(test_look_that_finds_one_hold_more_than_known_is_a_grant),
        T(test_look_that_finds_a_reentrant_hold_more_than_known_is_a_grant),
        T(test_look_that_finds_no_hold_more_than_known_lets_the_attempt_go),
        T(test_look_that_fails_is_the_attempts_outcome_and_comes_again),
        T(test_sent_attempt_is_counted_with_its_time_and_masters_generation),
        T(test_grant_keeps_its_token_and_its_replica_sync),
        T(test_busy_reply_is_busy_with_its_hint_and_certain),
        T(test_reentrancy_refusal_while_this_client_knows_no_hold_is_a_grant),
        T(test_reentrancy_refusal_while_this_client_holds_the_lock_is_a_refusal),
        T(test_lost_reply_of_a_sent_attempt_makes_the_acquisition_uncertain),
        T(test_failure_of_an_attempt_never_sent_leaves_the_acquisition_certain),
        T(test_answered_failure_leaves_the_acquisition_certain),
        T(test_grant_is_recorded_and_kept),
        T(test_grant_no_replica_acknowledged_is_undone_first_and_says_why),
        T(test_grant_on_a_server_that_refuses_wait_is_undone_with_the_refusal),
        T(test_replica_sync_undo_that_fails_is_left_to_the_background),
        T(test_replica_sync_undo_that_fails_keeps_the_reason_in_the_message),
        T(test_end_after_a_lost_reply_looks_once_and_keeps_a_grant_it_finds),
        T(test_end_look_that_finds_no_grant_keeps_the_failure_and_leaves_the_queue_later),
        T(test_end_of_a_wait_that_ran_out_leaves_the_queue_inline),
        T(test_end_look_that_fails_leaves_the_lost_reply_to_the_background),
        T(test_end_whose_look_fails_keeps_the_waits_message),
        T(test_wait_that_ran_out_after_a_lost_reply_looks_too),
        T(test_cancel_after_a_lost_reply_looks_and_gives_a_grant_back),
        T(test_end_without_a_lost_reply_does_not_look),
        T(test_end_of_a_client_being_freed_neither_looks_nor_leaves_anything),
        T(test_grant_that_came_after_a_cancel_is_undone_and_the_call_cancelled),
        T(test_grant_that_came_while_the_client_is_freed_is_undone_and_closed),
        T(test_cancelled_grants_undo_that_fails_is_left_to_the_background),
        T(test_undo_that_fails_while_the_client_is_freed_leaves_nothing),
        T(test_grant_found_by_the_end_look_after_a_cancel_is_undone),
        T(test_grant_the_holds_table_cannot_take_is_given_back),
        T(test_give_back_of_an_unrecorded_grant_that_fails_is_left_to_the_background),
        T(test_grant_is_checked_on_the_new_master_when_the_master_moved_since_sent),
        T(test_grant_is_not_checked_when_the_master_stayed),
        T(test_acquisition_without_the_lock_is_not_checked_when_the_master_moved),
        T(test_waiter_that_ends_without_the_lock_leaves_the_kinds_queue),
        T(test_waiter_without_limit_that_fails_leaves_the_kinds_queue),
        T(test_try_without_a_wait_never_enqueued_and_does_not_leave_the_queue),
        T(test_kind_without_a_queue_has_none_to_leave),
        T(test_leaving_the_queue_that_fails_is_left_to_the_background),
        T(test_end_that_is_over_stays_over),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
