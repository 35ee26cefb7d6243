/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rules of one acquisition of a semaphore and of a
 * permit-expirable semaphore (sem.h): the attempt each builds (checked
 * argument by argument, its place in the waiting line included), what its
 * reply means, when a reply was lost, and the steps of the end (leaving
 * the line among them). The rules do no I/O; each test plays the driver,
 * with replies made from the RESP text Redis would send (wire_stub.h). The
 * semaphore's head and its client are plain structs with only what the
 * rules read. Nothing talks to Redis and nothing sleeps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credisson/lock.h"
#include "sem.h"
#include "wire_stub.h"

/* The client's settings the acquire latch's lifetime comes from. */
#define RECONNECT_WINDOW_MS 30000
#define UNLOCK_LATCH_MS 13000

/* A name with the client's name prefix "app:", so that the raw name N,
 * which the keys are made of, differs from the name. */
#define NAME "pool"
#define RAW "app:pool"

#define NEVER "922337203685477" /* Redisson's never-expires score */
#define ID_BYTES 16
#define DAY_MS 86400000

/* The waiter: its client's id, its thread's, its entry in the line; the
 * line's keys and channel prefix; the client's settings the line's leases
 * come from (the watchdog's timeout, the turn). */
#define CLIENT_ID "0c9e3f4a-58d1-4b7e-9a62-3f1d2c4b5e6f"
#define OWNER_ID 7
#define ENTRY CLIENT_ID ":7"
#define LINE "credisson_line:{" RAW "}"
#define LINE_STATE "credisson_line_state:{" RAW "}"
#define LINE_PREFIX "credisson_line__channel:{" RAW "}:"
#define WATCHDOG_MS 30000
#define TURN_MS 250
#define WAIT_MS 5000

/* An attempt's reply when too few permits are free: not first in line,
 * no turn before it. */
#define IN_LINE "*3\r\n:0\r\n:0\r\n:-1\r\n"

/* What a test works on: the client, the semaphore's head, and one
 * acquisition of each kind. */
struct fx {
    cr_client client;
    cr__sem sem;
    cr__sem_acquisition a;
    cr__permit_acquisition p;
};

static int
fx_up(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));

    f->client.reconnect_window_ms = RECONNECT_WINDOW_MS;
    f->client.unlock_latch_timeout_ms = UNLOCK_LATCH_MS;
    f->client.publish_cmd = "publish";
    f->client.watchdog_timeout_ms = WATCHDOG_MS;
    f->client.line_turn_ms = TURN_MS;
    snprintf(f->client.id, sizeof(f->client.id), "%s", CLIENT_ID);
    cr__wire_of(0, &f->client.wire); /* the newest release line */
    f->sem.client = &f->client;
    f->sem.name = NAME;
    f->sem.raw = RAW;
    f->sem.channel = "redisson_sc:{" RAW "}";
    f->sem.issued = "{" RAW "}:timeout";
    assert_int_equal(cr__line_init(&f->sem.line, RAW), CR_OK);
    cr__clear_error();
    *state = f;
    return 0;
}

static int
fx_down(void **state)
{
    struct fx *f = *state;

    free(f->a.acquire_latch);
    cr__sem_waiter_free(&f->a.waiter);
    cr__permit_acquisition_free(&f->p);
    cr__line_free(&f->sem.line);
    test_free(f);
    return 0;
}

/* Returns a command's fate: written out (`sent`) or not. */
static cr__cmd
cmd_of(bool sent)
{
    return (cr__cmd){.sent = sent};
}

/* --------------------------------------------------------- RSemaphore */

/* Begins f's semaphore acquisition of `permits` by thread OWNER_ID,
 * waiting wait_ms (0: a try that does not wait). */
static void
sem_begin_waiting(struct fx *f, int64_t permits, int64_t wait_ms)
{
    free(f->a.acquire_latch);
    cr__sem_waiter_free(&f->a.waiter);
    assert_int_equal(cr__sem_acquisition_begin(&f->a, &f->sem, permits,
                                               OWNER_ID, wait_ms),
                     CR_OK);
    assert_non_null(f->a.acquire_latch);
}

/* Begins f's semaphore acquisition of `permits`, waiting WAIT_MS. */
static void
sem_begin(struct fx *f, int64_t permits)
{
    sem_begin_waiting(f, permits, WAIT_MS);
}

/* Returns the outcome of an attempt of f's semaphore acquisition whose
 * reply is the RESP text `resp`, with the wait's hint and listen in *hint
 * and *listen. */
static cr_status
sem_replied_place(struct fx *f, const char *resp, int64_t *hint,
                  int *listen)
{
    cr__cmd cmd = cmd_of(true);

    return cr__sem_acquisition_replied(&f->a, CR_OK, reply_of(resp), &cmd,
                                       hint, listen);
}

/* Returns the outcome of an attempt of f's semaphore acquisition whose
 * reply is the RESP text `resp`. */
static cr_status
sem_replied(struct fx *f, const char *resp)
{
    int64_t hint;
    int listen;

    return sem_replied_place(f, resp, &hint, &listen);
}

/* Returns the outcome of an attempt of f's semaphore acquisition that
 * failed with `rc`, written out or not; it gives the wait no hint and
 * does not listen. */
static cr_status
sem_failed(struct fx *f, cr_status rc, bool sent)
{
    cr__cmd cmd = cmd_of(sent);
    int64_t hint = 5;
    int listen = CR__LISTEN_SOON;

    rc = cr__sem_acquisition_replied(&f->a, rc, NULL, &cmd, &hint, &listen);
    assert_int_equal(hint, -1);
    assert_int_equal(listen, CR__LISTEN_NO);
    return rc;
}

/* Returns the status of f's semaphore acquisition, checking that its end
 * has no step left. */
static cr_status
sem_done(struct fx *f)
{
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, 0),
                     CR__SEM_END_DONE);
    return cr__sem_acquisition_done(&f->a);
}

/* Returns the status of f's semaphore acquisition, checking that the only
 * step left of its end is leaving the line. (After a grant given back, the
 * grant's script took the entry out already: that leave finds none.) */
static cr_status
sem_left(struct fx *f)
{
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, 0),
                     CR__SEM_END_LEAVE);
    return sem_done(f);
}

/* As sem_left, the leave in the background: the wait ended on a broken
 * link, which a leave inline would try again within the caller's call. */
static cr_status
sem_left_later(struct fx *f)
{
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, 0),
                     CR__SEM_END_LEAVE_LATER);
    return sem_done(f);
}

/* Ends f's semaphore acquisition of 3 after an attempt whose reply was
 * lost, the wait having ended with `rc`: returns the end's first step,
 * with the reasons a grant cannot be kept `stop`. */
static cr__sem_end_do
sem_ended_after_a_lost_reply(struct fx *f, cr_status rc, unsigned stop)
{
    sem_begin(f, 3);
    assert_int_equal(sem_failed(f, CR_EIO, true), CR_EIO);
    cr__sem_acquisition_end_begin(&f->a, rc);
    return cr__sem_acquisition_end_next(&f->a, stop);
}

static void
test_acquire_latch_is_named_after_the_raw_name_and_a_request_id(
    void **state)
{
    struct fx *f = *state;
    static const char prefix[] = "credisson_semaphore_acquire:{" RAW "}:";
    cr__sem_acquisition other;
    const char *id;

    sem_begin(f, 3);
    assert_int_equal(strncmp(f->a.acquire_latch, prefix, strlen(prefix)), 0);
    id = f->a.acquire_latch + strlen(prefix);
    assert_int_equal(strlen(id), 32);
    assert_int_equal(strspn(id, "0123456789abcdef"), 32);
    /* Each acquisition has a latch of its own. */
    assert_int_equal(cr__sem_acquisition_begin(&other, &f->sem, 3, OWNER_ID,
                                               WAIT_MS),
                     CR_OK);
    assert_string_not_equal(other.acquire_latch, f->a.acquire_latch);
    free(other.acquire_latch);
    cr__sem_waiter_free(&other.waiter);
}

static void
test_acquire_latch_lives_the_reconnect_window_and_the_unlock_latchs_life(
    void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    assert_int_equal(f->a.acquire_latch_ms,
                     RECONNECT_WINDOW_MS + UNLOCK_LATCH_MS);
}

static void
test_every_attempt_carries_the_same_acquire_latch(void **state)
{
    struct fx *f = *state;
    char lifetime[32];

    snprintf(lifetime, sizeof(lifetime), "%d",
             RECONNECT_WINDOW_MS + UNLOCK_LATCH_MS);
    sem_begin(f, 3);
    for (int i = 0; i < 2; i++) {
        cr__script_call call = {0};

        assert_int_equal(cr__sem_acquisition_call(&f->a, &call), CR_OK);
        assert_call_shape(&call, "semaphore_try_acquire", 4, 8);
        assert_call_key(&call, 0, RAW);
        assert_call_key(&call, 1, f->a.acquire_latch);
        assert_call_arg(&call, 0, "3");
        assert_call_arg(&call, 1, lifetime);
        cr__script_call_free(&call);
    }
}

/* The attempt of a waiting acquisition: the waiter's entry (its client's
 * id and thread), 1 (it goes in line), the line's keys, its waiting lease
 * (the watchdog's timeout) and turn, and the channel prefix the entry's
 * own channel is made of. */
static void
test_waiting_attempt_carries_the_waiters_entry_and_the_lines_settings(
    void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    char lease[32], turn[32];

    snprintf(lease, sizeof(lease), "%d", WATCHDOG_MS);
    snprintf(turn, sizeof(turn), "%d", TURN_MS);
    sem_begin(f, 3);
    assert_string_equal(f->a.waiter.entry, ENTRY);
    assert_string_equal(f->a.waiter.channel, LINE_PREFIX ENTRY);
    assert_int_equal(cr__sem_acquisition_call(&f->a, &call), CR_OK);
    assert_call_shape(&call, "semaphore_try_acquire", 4, 8);
    assert_call_key(&call, 2, LINE);
    assert_call_key(&call, 3, LINE_STATE);
    assert_call_arg(&call, 2, ENTRY);
    assert_call_arg(&call, 3, "1");
    assert_call_arg(&call, 4, lease);
    assert_call_arg(&call, 5, turn);
    assert_call_arg(&call, 6, LINE_PREFIX);
    assert_call_arg(&call, 7, "publish");
    cr__script_call_free(&call);
}

/* A try that does not wait asks the script not to put it in line. */
static void
test_try_without_a_wait_attempts_without_going_in_line(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};

    sem_begin_waiting(f, 3, 0);
    assert_int_equal(cr__sem_acquisition_call(&f->a, &call), CR_OK);
    assert_call_arg(&call, 2, ENTRY);
    assert_call_arg(&call, 3, "0");
    cr__script_call_free(&call);
}

static void
test_attempt_answered_1_took_the_permits_and_a_place_found_too_few(
    void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    assert_int_equal(sem_replied(f, ":1\r\n"), CR_OK);
    assert_int_equal(sem_replied(f, IN_LINE), CR_BUSY);
    assert_false(f->a.uncertain);
}

/* The place in a busy reply {0, listen, turn}: the first the semaphore
 * cannot serve listens on its channel and has no hint (the semaphore has
 * no expiry); a waiter behind a turn attempts when that turn ends; any
 * other sleeps until its own channel speaks. */
static void
test_place_in_line_says_who_listens_and_until_when_to_sleep(void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;
    int listen = CR__LISTEN_NO;

    sem_begin(f, 3);
    assert_int_equal(sem_replied_place(f, "*3\r\n:0\r\n:1\r\n:-1\r\n",
                                       &hint, &listen),
                     CR_BUSY);
    assert_int_equal(listen, CR__LISTEN_SOON);
    assert_int_equal(hint, -1);
    assert_int_equal(sem_replied_place(f, "*3\r\n:0\r\n:0\r\n:120\r\n",
                                       &hint, &listen),
                     CR_BUSY);
    assert_int_equal(listen, CR__LISTEN_NO);
    assert_int_equal(hint, 120);
    assert_int_equal(sem_replied_place(f, IN_LINE, &hint, &listen), CR_BUSY);
    assert_int_equal(listen, CR__LISTEN_NO);
    assert_int_equal(hint, -1);
}

static void
test_attempt_answered_anything_else_is_a_script_error(void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    assert_int_equal(sem_replied(f, ":2\r\n"), CR_ESCRIPT);
    assert_int_equal(sem_replied(f, ":-1\r\n"), CR_ESCRIPT);
    assert_int_equal(sem_replied(f, "+OK\r\n"), CR_ESCRIPT);
    assert_int_equal(sem_replied(f, "$-1\r\n"), CR_ESCRIPT);
    /* A bare 0 (the reply before the line) and a place cut short. */
    assert_int_equal(sem_replied(f, ":0\r\n"), CR_ESCRIPT);
    assert_int_equal(sem_replied(f, "*2\r\n:0\r\n:1\r\n"), CR_ESCRIPT);
}

static void
test_semaphores_lost_reply_of_a_sent_attempt_makes_it_uncertain(
    void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    assert_int_equal(sem_failed(f, CR_EIO, true), CR_EIO);
    assert_true(f->a.uncertain);
    sem_begin(f, 3);
    assert_int_equal(sem_failed(f, CR_ECLOSED, true), CR_ECLOSED);
    assert_true(f->a.uncertain);
}

static void
test_semaphores_failure_not_sent_or_answered_leaves_it_certain(
    void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    assert_int_equal(sem_failed(f, CR_EIO, false), CR_EIO);
    assert_int_equal(sem_failed(f, CR_ECLOSED, false), CR_ECLOSED);
    assert_int_equal(sem_failed(f, CR_ENOPERM, true), CR_ENOPERM);
    assert_false(f->a.uncertain);
}

static void
test_semaphores_grant_drops_its_latch_and_frees_its_name(void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    assert_int_equal(sem_replied(f, ":1\r\n"), CR_OK);
    cr__sem_acquisition_end_begin(&f->a, CR_OK);
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, 0),
                     CR__SEM_END_DROP);
    assert_int_equal(sem_done(f), CR_OK);
    assert_null(f->a.acquire_latch);
}

static void
test_semaphores_grant_after_a_cancel_is_given_back_and_cancelled(
    void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    cr__sem_acquisition_end_begin(&f->a, CR_OK);
    /* Given back: the latch goes with them, not dropped. */
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, CR__STOP_CANCELLED),
                     CR__SEM_END_GIVE_BACK);
    assert_int_equal(sem_left(f), CR_ECANCELED);
    assert_non_null(strstr(cr_last_error(), "cancelled"));
}

static void
test_semaphores_grant_while_the_client_is_freed_is_given_back_and_closed(
    void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    cr__sem_acquisition_end_begin(&f->a, CR_OK);
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, CR__STOP_CLOSING),
                     CR__SEM_END_GIVE_BACK);
    assert_int_equal(sem_left(f), CR_ECLOSED);
}

static void
test_semaphores_io_failure_after_a_lost_reply_looks_for_the_latch(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(sem_ended_after_a_lost_reply(f, CR_EIO, 0),
                     CR__SEM_END_LOOK);
    /* The latch is there: the lost attempt took them. */
    assert_true(cr__sem_acquisition_end_looked(&f->a, CR_OK, true));
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, 0),
                     CR__SEM_END_DROP);
    assert_int_equal(sem_done(f), CR_OK);
}

static void
test_semaphores_look_without_the_latch_keeps_the_failure(void **state)
{
    struct fx *f = *state;

    assert_int_equal(sem_ended_after_a_lost_reply(f, CR_EIO, 0),
                     CR__SEM_END_LOOK);
    assert_true(cr__sem_acquisition_end_looked(&f->a, CR_OK, false));
    assert_int_equal(sem_left_later(f), CR_EIO);
}

static void
test_semaphores_look_that_fails_is_not_known(void **state)
{
    struct fx *f = *state;

    assert_int_equal(sem_ended_after_a_lost_reply(f, CR_EIO, 0),
                     CR__SEM_END_LOOK);
    /* The driver leaves the look to the background. */
    assert_false(cr__sem_acquisition_end_looked(&f->a, CR_EIO, true));
    assert_int_equal(sem_left_later(f), CR_EIO);
}

static void
test_semaphores_grant_found_by_the_look_after_a_cancel_is_given_back(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(sem_ended_after_a_lost_reply(f, CR_EIO, CR__STOP_CANCELLED),
                     CR__SEM_END_LOOK);
    assert_true(cr__sem_acquisition_end_looked(&f->a, CR_OK, true));
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, CR__STOP_CANCELLED),
                     CR__SEM_END_GIVE_BACK);
    assert_int_equal(sem_left(f), CR_ECANCELED);
}

static void
test_semaphores_end_without_a_lost_reply_does_not_look(void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    sem_failed(f, CR_EIO, false);
    cr__sem_acquisition_end_begin(&f->a, CR_EIO);
    assert_int_equal(sem_left_later(f), CR_EIO);
}

/* A wait that ends without the permits, however it ends, takes its entry
 * out of the line (those behind it may be served now): within the call,
 * or in the background when the wait ended on a broken link. One that got
 * them was taken out by the script that granted them. */
static void
test_semaphores_wait_that_ends_without_the_permits_leaves_the_line(
    void **state)
{
    struct fx *f = *state;
    static const cr_status ends[] = {CR_BUSY, CR_ECANCELED, CR_ECLOSED,
                                     CR_ESERVER, CR_ESCRIPT};

    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
        sem_begin(f, 3);
        cr__sem_acquisition_end_begin(&f->a, ends[i]);
        assert_int_equal(sem_left(f), ends[i]);
    }
    sem_begin(f, 3);
    cr__sem_acquisition_end_begin(&f->a, CR_EIO);
    assert_int_equal(sem_left_later(f), CR_EIO);
    sem_begin(f, 3);
    assert_int_equal(sem_replied(f, ":1\r\n"), CR_OK);
    cr__sem_acquisition_end_begin(&f->a, CR_OK);
    assert_int_equal(cr__sem_acquisition_end_next(&f->a, 0),
                     CR__SEM_END_DROP);
    assert_int_equal(sem_done(f), CR_OK);
}

/* A try that does not wait never went in line: nothing to leave. */
static void
test_semaphores_try_without_a_wait_has_no_line_to_leave(void **state)
{
    struct fx *f = *state;

    sem_begin_waiting(f, 3, 0);
    assert_int_equal(sem_replied(f, IN_LINE), CR_BUSY);
    cr__sem_acquisition_end_begin(&f->a, CR_BUSY);
    assert_int_equal(sem_done(f), CR_BUSY);
}

static void
test_semaphores_wait_that_ran_out_says_how_many_permits_it_wanted(
    void **state)
{
    struct fx *f = *state;

    sem_begin(f, 3);
    /* The last attempt, answered, looked at the latch itself. */
    sem_failed(f, CR_EIO, true);
    assert_int_equal(sem_replied(f, IN_LINE), CR_BUSY);
    cr__sem_acquisition_end_begin(&f->a, CR_BUSY);
    assert_int_equal(sem_left(f), CR_BUSY);
    assert_non_null(strstr(cr_last_error(), "semaphore " NAME ": fewer "
                                            "than 3 permits"));
}

/* ---------------------------------------- RPermitExpirableSemaphore */

/* Begins f's permit acquisition of `permits` with `lease_ms` by thread
 * OWNER_ID, waiting wait_ms (0: a try that does not wait). */
static void
permit_begin_waiting(struct fx *f, int64_t permits, int64_t lease_ms,
                     int64_t wait_ms)
{
    cr__permit_acquisition_free(&f->p);
    assert_int_equal(cr__permit_acquisition_begin(&f->p, &f->sem, permits,
                                                  lease_ms, OWNER_ID,
                                                  wait_ms),
                     CR_OK);
}

/* Begins f's permit acquisition of `permits` with `lease_ms`, waiting
 * WAIT_MS. */
static void
permit_begin(struct fx *f, int64_t permits, int64_t lease_ms)
{
    permit_begin_waiting(f, permits, lease_ms, WAIT_MS);
}

/* Builds an attempt of f's permit acquisition into *call, checking what
 * every attempt of `permits` with `nids` ids carries. */
static void
permit_call(struct fx *f, int64_t permits, size_t nids,
            cr__script_call *call)
{
    char k[32];

    snprintf(k, sizeof(k), "%lld", (long long)permits);
    assert_int_equal(cr__permit_acquisition_call(&f->p, call), CR_OK);
    assert_call_shape(call, "permit_semaphore_try_acquire", 5, 10 + nids);
    assert_call_key(call, 0, RAW);
    assert_call_key(call, 1, "{" RAW "}:timeout");
    assert_call_key(call, 2, "redisson_sc:{" RAW "}");
    assert_call_arg(call, 0, k);
    assert_call_arg(call, 3, NEVER);
    assert_call_arg(call, 4, "publish");
}

/* Returns id `i` of `call` (an attempt: its ids after 10 arguments), with
 * its length in *len. */
static const char *
call_id(const cr__script_call *call, size_t i, size_t *len)
{
    size_t at = CR__SCRIPT_ARGV0 + call->nkeys + 10 + i;

    assert_true(at < call->argc);
    *len = call->lens[at];
    return call->argv[at];
}

/* Returns the outcome of an attempt of f's permit acquisition whose
 * reply is the RESP text `resp`, with its hint in *hint and whether it
 * listens in *listen. */
static cr_status
permit_replied_place(struct fx *f, const char *resp, int64_t *hint,
                     int *listen)
{
    cr__cmd cmd = cmd_of(true);

    return cr__permit_acquisition_replied(&f->p, CR_OK, reply_of(resp), &cmd,
                                          hint, listen);
}

/* Returns the outcome of an attempt of f's permit acquisition whose
 * reply is the RESP text `resp`, with its hint in *hint. */
static cr_status
permit_replied(struct fx *f, const char *resp, int64_t *hint)
{
    int listen;

    return permit_replied_place(f, resp, hint, &listen);
}

/* Returns the outcome of an attempt of f's permit acquisition that
 * failed with `rc`, written out or not; its hint must be none, and it
 * does not listen. */
static cr_status
permit_failed(struct fx *f, cr_status rc, bool sent)
{
    cr__cmd cmd = cmd_of(sent);
    int64_t hint = 5;
    int listen = CR__LISTEN_SOON;

    rc = cr__permit_acquisition_replied(&f->p, rc, NULL, &cmd, &hint,
                                        &listen);
    assert_int_equal(hint, -1);
    assert_int_equal(listen, CR__LISTEN_NO);
    return rc;
}

/* Returns the status of f's permit acquisition, checking that its end
 * has no step left. */
static cr_status
permit_done(struct fx *f)
{
    assert_int_equal(cr__permit_acquisition_end_next(&f->p, 0),
                     CR__PERMIT_END_DONE);
    return cr__permit_acquisition_done(&f->p);
}

/* Returns the status of f's permit acquisition, checking that the only
 * step left of its end is leaving the line (after a grant given back too,
 * as sem_left). */
static cr_status
permit_left(struct fx *f)
{
    assert_int_equal(cr__permit_acquisition_end_next(&f->p, 0),
                     CR__PERMIT_END_LEAVE);
    return permit_done(f);
}

/* As permit_left, the leave in the background (as sem_left_later). */
static cr_status
permit_left_later(struct fx *f)
{
    assert_int_equal(cr__permit_acquisition_end_next(&f->p, 0),
                     CR__PERMIT_END_LEAVE_LATER);
    return permit_done(f);
}

/* Ends f's permit acquisition of 1 after an attempt whose reply was
 * lost, the wait having ended with `rc`: returns the end's first step,
 * with the reasons a grant cannot be kept `stop`. */
static cr__permit_end_do
permit_ended_after_a_lost_reply(struct fx *f, cr_status rc, unsigned stop)
{
    permit_begin(f, 1, CR_LEASE_NONE);
    assert_int_equal(permit_failed(f, CR_EIO, true), CR_EIO);
    cr__permit_acquisition_end_begin(&f->p, rc);
    return cr__permit_acquisition_end_next(&f->p, stop);
}

static void
test_acquisition_makes_one_id_per_permit_since_3_23_4(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    size_t len[3];
    const char *id[3];

    permit_begin(f, 3, CR_LEASE_NONE);
    assert_int_equal(f->p.n, 3);
    permit_call(f, 3, 3, &call);
    for (size_t i = 0; i < 3; i++) {
        id[i] = call_id(&call, i, &len[i]);
        assert_int_equal(len[i], ID_BYTES);
    }
    assert_memory_not_equal(id[0], id[1], ID_BYTES);
    assert_memory_not_equal(id[1], id[2], ID_BYTES);
    assert_memory_not_equal(id[0], id[2], ID_BYTES);
    cr__script_call_free(&call);
}

static void
test_acquisition_makes_one_id_for_all_its_permits_before_3_23_4(
    void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    size_t len;

    cr__wire_of(CR__VERSION(3, 23, 3), &f->client.wire);
    permit_begin(f, 3, CR_LEASE_NONE);
    assert_int_equal(f->p.n, 1);
    permit_call(f, 3, 1, &call);
    call_id(&call, 0, &len);
    assert_int_equal(len, ID_BYTES);
    cr__script_call_free(&call);
}

static void
test_ids_are_32_lowercase_hex_characters_before_3_17(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    const char *id;
    size_t len;

    cr__wire_of(CR__VERSION(3, 16, 8), &f->client.wire);
    permit_begin(f, 1, CR_LEASE_NONE);
    permit_call(f, 1, 1, &call);
    id = call_id(&call, 0, &len);
    assert_int_equal(len, 32);
    for (size_t i = 0; i < len; i++)
        assert_non_null(strchr("0123456789abcdef", id[i]));
    cr__script_call_free(&call);
}

static void
test_each_attempt_goes_with_fresh_ids(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    char first[2][ID_BYTES];
    size_t len;

    permit_begin(f, 2, CR_LEASE_NONE);
    permit_call(f, 2, 2, &call);
    for (size_t i = 0; i < 2; i++)
        memcpy(first[i], call_id(&call, i, &len), ID_BYTES);
    cr__script_call_free(&call);
    permit_call(f, 2, 2, &call);
    for (size_t i = 0; i < 2; i++)
        assert_memory_not_equal(call_id(&call, i, &len), first[i], ID_BYTES);
    cr__script_call_free(&call);
}

static void
test_permits_with_a_lease_expire_after_it_and_without_never(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    int64_t left;

    permit_begin(f, 1, CR_LEASE_NONE);
    permit_call(f, 1, 1, &call);
    assert_call_arg(&call, 1, NEVER);
    cr__script_call_free(&call);
    permit_begin(f, 1, DAY_MS);
    assert_int_equal(f->p.lease_ms, DAY_MS);
    assert_int_equal(cr__permit_acquisition_call(&f->p, &call), CR_OK);
    /* The expiry and "now" come from two readings of the wall clock:
     * between them the lease, give or take a minute. */
    left = call_arg_int(&call, 1) - call_arg_int(&call, 2);
    assert_in_range(left, DAY_MS - 60000, DAY_MS + 60000);
    cr__script_call_free(&call);
}

static void
test_look_after_a_lost_reply_asks_for_the_first_ids_score(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    const char *argv[3];
    size_t lens[3], len;
    const char *id;

    permit_begin(f, 2, CR_LEASE_NONE);
    permit_call(f, 2, 2, &call);
    id = call_id(&call, 0, &len);
    cr__permit_acquisition_look(&f->p, argv, lens);
    assert_int_equal(lens[0], 6);
    assert_memory_equal(argv[0], "ZSCORE", 6);
    assert_int_equal(lens[1], strlen("{" RAW "}:timeout"));
    assert_memory_equal(argv[1], "{" RAW "}:timeout", lens[1]);
    assert_int_equal(lens[2], len);
    assert_memory_equal(argv[2], id, len);
    cr__script_call_free(&call);
}

static void
test_look_sends_the_first_id_whole_zero_bytes_included(void **state)
{
    struct fx *f = *state;
    static const char id[ID_BYTES] = "\x01\x00\x02\x03\x04\x05\x06\x07"
                                     "\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f";
    const char *argv[3];
    size_t lens[3];

    permit_begin(f, 2, CR_LEASE_NONE);
    memcpy(f->p.ids[0].b, id, ID_BYTES);
    f->p.ids[0].len = ID_BYTES;
    cr__permit_acquisition_look(&f->p, argv, lens);
    assert_int_equal(lens[2], ID_BYTES);
    assert_memory_equal(argv[2], id, ID_BYTES);
}

static void
test_look_that_finds_a_score_is_a_grant_and_nil_lets_the_attempt_go(
    void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    permit_failed(f, CR_EIO, true);
    assert_int_equal(cr__permit_acquisition_looked(
                         &f->p, CR_OK, reply_of("$15\r\n" NEVER "\r\n")),
                     CR_OK);
    assert_false(f->p.uncertain);
    permit_failed(f, CR_EIO, true);
    assert_int_equal(cr__permit_acquisition_looked(&f->p, CR_OK,
                                                   reply_of("$-1\r\n")),
                     CR_BUSY);
    assert_false(f->p.uncertain);
}

static void
test_look_that_fails_keeps_the_acquisition_uncertain(void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    permit_failed(f, CR_EIO, true);
    assert_int_equal(cr__permit_acquisition_looked(&f->p, CR_EIO, NULL),
                     CR_EIO);
    assert_true(f->p.uncertain);
}

/* A busy reply is {the earliest expiry or -1, listen, turn}. */
static void
test_attempt_answered_ok_is_a_grant_and_no_expiry_is_busy_without_a_hint(
    void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;

    permit_begin(f, 1, CR_LEASE_NONE);
    assert_int_equal(permit_replied(f, "$2\r\nOK\r\n", &hint), CR_OK);
    assert_int_equal(hint, -1);
    hint = 5;
    assert_int_equal(permit_replied(f, "*3\r\n:-1\r\n:1\r\n:-1\r\n", &hint),
                     CR_BUSY);
    assert_int_equal(hint, -1);
    assert_false(f->p.uncertain);
}

/* The first the semaphore cannot serve looks again when the earliest
 * permit expires (an expired permit comes back without a message). */
static void
test_attempt_answered_an_expiry_is_busy_until_then_within_bounds(
    void **state)
{
    struct fx *f = *state;
    int64_t hint = -1;
    int listen = CR__LISTEN_NO;

    permit_begin(f, 1, CR_LEASE_NONE);
    /* An expiry long past: look again at once. */
    assert_int_equal(permit_replied_place(f, "*3\r\n:5\r\n:1\r\n:-1\r\n",
                                          &hint, &listen),
                     CR_BUSY);
    assert_int_equal(listen, CR__LISTEN_SOON);
    assert_int_equal(hint, 0);
    /* One past any duration: the longest. */
    assert_int_equal(permit_replied(f, "*3\r\n:922337203685476\r\n:1\r\n"
                                       ":-1\r\n", &hint),
                     CR_BUSY);
    assert_int_equal(hint, CR_DURATION_MAX);
}

/* A waiter behind the first does not watch the expiries (the first
 * does, and passes the turn on): it sleeps until its channel speaks, or
 * until the turn before it ends. */
static void
test_expiry_is_watched_by_the_first_in_line_alone(void **state)
{
    struct fx *f = *state;
    int64_t hint = 5;
    int listen = CR__LISTEN_SOON;

    permit_begin(f, 1, CR_LEASE_NONE);
    assert_int_equal(permit_replied_place(f, "*3\r\n:5\r\n:0\r\n:-1\r\n",
                                          &hint, &listen),
                     CR_BUSY);
    assert_int_equal(listen, CR__LISTEN_NO);
    assert_int_equal(hint, -1);
    assert_int_equal(permit_replied_place(f, "*3\r\n:5\r\n:0\r\n:40\r\n",
                                          &hint, &listen),
                     CR_BUSY);
    assert_int_equal(hint, 40);
    /* The first: whichever comes first, the expiry or the turn's end. */
    assert_int_equal(permit_replied_place(f, "*3\r\n:922337203685476\r\n"
                                             ":1\r\n:40\r\n", &hint, &listen),
                     CR_BUSY);
    assert_int_equal(listen, CR__LISTEN_SOON);
    assert_int_equal(hint, 40);
}

static void
test_attempt_answered_anything_else_is_a_permit_script_error(void **state)
{
    struct fx *f = *state;
    int64_t hint = -1;

    permit_begin(f, 1, CR_LEASE_NONE);
    assert_int_equal(permit_replied(f, "$4\r\n:abc\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(permit_replied(f, "$1\r\n:\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(permit_replied(f, "$2\r\nok\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(permit_replied(f, ":1\r\n", &hint), CR_ESCRIPT);
    /* The replies before the line (nil, an expiry as a string), a place
     * cut short, an expiry that is no number. */
    assert_int_equal(permit_replied(f, "$-1\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(permit_replied(f, "$2\r\n:5\r\n", &hint), CR_ESCRIPT);
    assert_int_equal(permit_replied(f, "*2\r\n:5\r\n:1\r\n", &hint),
                     CR_ESCRIPT);
    assert_int_equal(permit_replied(f, "*3\r\n$1\r\nx\r\n:1\r\n:-1\r\n",
                                    &hint),
                     CR_ESCRIPT);
}

/* The permit attempt of a waiting acquisition carries its entry, 1 (it
 * goes in line), the line's keys, leases and channel prefix; a try that
 * does not wait carries 0. */
static void
test_permit_attempt_carries_the_waiters_place_in_line(void **state)
{
    struct fx *f = *state;
    cr__script_call call = {0};
    char lease[32], turn[32];

    snprintf(lease, sizeof(lease), "%d", WATCHDOG_MS);
    snprintf(turn, sizeof(turn), "%d", TURN_MS);
    permit_begin(f, 2, CR_LEASE_NONE);
    permit_call(f, 2, 2, &call);
    assert_call_key(&call, 3, LINE);
    assert_call_key(&call, 4, LINE_STATE);
    assert_call_arg(&call, 5, ENTRY);
    assert_call_arg(&call, 6, "1");
    assert_call_arg(&call, 7, lease);
    assert_call_arg(&call, 8, turn);
    assert_call_arg(&call, 9, LINE_PREFIX);
    cr__script_call_free(&call);
    permit_begin_waiting(f, 2, CR_LEASE_NONE, 0);
    permit_call(f, 2, 2, &call);
    assert_call_arg(&call, 6, "0");
    cr__script_call_free(&call);
}

static void
test_permits_lost_reply_of_a_sent_attempt_makes_it_uncertain(void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    assert_int_equal(permit_failed(f, CR_EIO, true), CR_EIO);
    assert_true(f->p.uncertain);
    permit_begin(f, 1, CR_LEASE_NONE);
    assert_int_equal(permit_failed(f, CR_ECLOSED, true), CR_ECLOSED);
    assert_true(f->p.uncertain);
}

static void
test_permits_failure_not_sent_or_answered_leaves_it_certain(void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    assert_int_equal(permit_failed(f, CR_EIO, false), CR_EIO);
    assert_int_equal(permit_failed(f, CR_ECLOSED, false), CR_ECLOSED);
    assert_int_equal(permit_failed(f, CR_ENOPERM, true), CR_ENOPERM);
    assert_false(f->p.uncertain);
}

static void
test_permits_grant_is_kept(void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    cr__permit_acquisition_end_begin(&f->p, CR_OK);
    assert_int_equal(permit_done(f), CR_OK);
}

static void
test_permits_grant_after_a_cancel_is_given_back_and_cancelled(void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    cr__permit_acquisition_end_begin(&f->p, CR_OK);
    assert_int_equal(cr__permit_acquisition_end_next(&f->p,
                                                     CR__STOP_CANCELLED),
                     CR__PERMIT_END_GIVE_BACK);
    assert_int_equal(permit_left(f), CR_ECANCELED);
    assert_non_null(strstr(cr_last_error(), "cancelled"));
}

static void
test_permits_grant_while_the_client_is_freed_is_given_back_and_closed(
    void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    cr__permit_acquisition_end_begin(&f->p, CR_OK);
    assert_int_equal(cr__permit_acquisition_end_next(&f->p,
                                                     CR__STOP_CLOSING),
                     CR__PERMIT_END_GIVE_BACK);
    assert_int_equal(permit_left(f), CR_ECLOSED);
}

static void
test_permits_end_after_a_lost_reply_looks_and_keeps_a_grant_it_finds(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(permit_ended_after_a_lost_reply(f, CR_EIO, 0),
                     CR__PERMIT_END_LOOK);
    assert_true(cr__permit_acquisition_end_looked(
        &f->p, CR_OK, reply_of("$15\r\n" NEVER "\r\n")));
    assert_int_equal(permit_done(f), CR_OK);
}

static void
test_permits_wait_that_ran_out_after_a_lost_reply_looks_too(void **state)
{
    struct fx *f = *state;

    assert_int_equal(permit_ended_after_a_lost_reply(f, CR_BUSY, 0),
                     CR__PERMIT_END_LOOK);
    assert_true(cr__permit_acquisition_end_looked(&f->p, CR_OK,
                                                  reply_of("$-1\r\n")));
    assert_int_equal(permit_left(f), CR_BUSY);
    assert_non_null(strstr(cr_last_error(), "permit semaphore " NAME
                                            ": no permit free"));
}

static void
test_permits_look_that_finds_nothing_keeps_the_failure(void **state)
{
    struct fx *f = *state;

    assert_int_equal(permit_ended_after_a_lost_reply(f, CR_EIO, 0),
                     CR__PERMIT_END_LOOK);
    assert_true(cr__permit_acquisition_end_looked(&f->p, CR_OK,
                                                  reply_of("$-1\r\n")));
    assert_int_equal(permit_left_later(f), CR_EIO);
}

static void
test_permits_look_that_fails_is_not_known(void **state)
{
    struct fx *f = *state;

    assert_int_equal(permit_ended_after_a_lost_reply(f, CR_EIO, 0),
                     CR__PERMIT_END_LOOK);
    assert_false(cr__permit_acquisition_end_looked(&f->p, CR_EIO, NULL));
    assert_int_equal(permit_left_later(f), CR_EIO);
}

static void
test_permits_grant_found_by_the_look_after_a_cancel_is_given_back(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(permit_ended_after_a_lost_reply(f, CR_EIO, CR__STOP_CANCELLED),
                     CR__PERMIT_END_LOOK);
    assert_true(cr__permit_acquisition_end_looked(
        &f->p, CR_OK, reply_of("$15\r\n" NEVER "\r\n")));
    assert_int_equal(cr__permit_acquisition_end_next(&f->p,
                                                     CR__STOP_CANCELLED),
                     CR__PERMIT_END_GIVE_BACK);
    assert_int_equal(permit_left(f), CR_ECANCELED);
}

static void
test_permits_end_without_a_lost_reply_does_not_look(void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    permit_failed(f, CR_EIO, false);
    cr__permit_acquisition_end_begin(&f->p, CR_EIO);
    assert_int_equal(permit_left_later(f), CR_EIO);
    permit_begin(f, 1, CR_LEASE_NONE);
    cr__permit_acquisition_end_begin(&f->p, CR_BUSY);
    assert_int_equal(permit_left(f), CR_BUSY);
}

/* A permit wait that ends without them leaves the line (a cancelled one
 * too); a try that did not wait has nothing to leave (and a grant neither:
 * test_permits_grant_is_kept). */
static void
test_permits_wait_that_ends_without_them_leaves_the_line(void **state)
{
    struct fx *f = *state;

    permit_begin(f, 1, CR_LEASE_NONE);
    cr__permit_acquisition_end_begin(&f->p, CR_ECANCELED);
    assert_int_equal(permit_left(f), CR_ECANCELED);
    /* Ended on a broken link: in the background (as the semaphore's). */
    permit_begin(f, 1, CR_LEASE_NONE);
    cr__permit_acquisition_end_begin(&f->p, CR_EIO);
    assert_int_equal(permit_left_later(f), CR_EIO);
    permit_begin_waiting(f, 1, CR_LEASE_NONE, 0);
    cr__permit_acquisition_end_begin(&f->p, CR_BUSY);
    assert_int_equal(permit_done(f), CR_BUSY);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_up, fx_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_acquire_latch_is_named_after_the_raw_name_and_a_request_id),
        T(test_acquire_latch_lives_the_reconnect_window_and_the_unlock_latchs_life),
        T(test_every_attempt_carries_the_same_acquire_latch),
        T(test_waiting_attempt_carries_the_waiters_entry_and_the_lines_settings),
        T(test_try_without_a_wait_attempts_without_going_in_line),
        T(test_attempt_answered_1_took_the_permits_and_a_place_found_too_few),
        T(test_place_in_line_says_who_listens_and_until_when_to_sleep),
        T(test_attempt_answered_anything_else_is_a_script_error),
        T(test_semaphores_lost_reply_of_a_sent_attempt_makes_it_uncertain),
        T(test_semaphores_failure_not_sent_or_answered_leaves_it_certain),
        T(test_semaphores_grant_drops_its_latch_and_frees_its_name),
        T(test_semaphores_grant_after_a_cancel_is_given_back_and_cancelled),
        T(test_semaphores_grant_while_the_client_is_freed_is_given_back_and_closed),
        T(test_semaphores_io_failure_after_a_lost_reply_looks_for_the_latch),
        T(test_semaphores_look_without_the_latch_keeps_the_failure),
        T(test_semaphores_look_that_fails_is_not_known),
        T(test_semaphores_grant_found_by_the_look_after_a_cancel_is_given_back),
        T(test_semaphores_end_without_a_lost_reply_does_not_look),
        T(test_semaphores_wait_that_ran_out_says_how_many_permits_it_wanted),
        T(test_semaphores_wait_that_ends_without_the_permits_leaves_the_line),
        T(test_semaphores_try_without_a_wait_has_no_line_to_leave),
        T(test_acquisition_makes_one_id_per_permit_since_3_23_4),
        T(test_acquisition_makes_one_id_for_all_its_permits_before_3_23_4),
        T(test_ids_are_32_lowercase_hex_characters_before_3_17),
        T(test_each_attempt_goes_with_fresh_ids),
        T(test_permits_with_a_lease_expire_after_it_and_without_never),
        T(test_look_after_a_lost_reply_asks_for_the_first_ids_score),
        T(test_look_sends_the_first_id_whole_zero_bytes_included),
        T(test_look_that_finds_a_score_is_a_grant_and_nil_lets_the_attempt_go),
        T(test_look_that_fails_keeps_the_acquisition_uncertain),
        T(test_attempt_answered_ok_is_a_grant_and_no_expiry_is_busy_without_a_hint),
        T(test_attempt_answered_an_expiry_is_busy_until_then_within_bounds),
        T(test_expiry_is_watched_by_the_first_in_line_alone),
        T(test_permit_attempt_carries_the_waiters_place_in_line),
        T(test_attempt_answered_anything_else_is_a_permit_script_error),
        T(test_permits_lost_reply_of_a_sent_attempt_makes_it_uncertain),
        T(test_permits_failure_not_sent_or_answered_leaves_it_certain),
        T(test_permits_grant_is_kept),
        T(test_permits_grant_after_a_cancel_is_given_back_and_cancelled),
        T(test_permits_grant_while_the_client_is_freed_is_given_back_and_closed),
        T(test_permits_end_after_a_lost_reply_looks_and_keeps_a_grant_it_finds),
        T(test_permits_wait_that_ran_out_after_a_lost_reply_looks_too),
        T(test_permits_look_that_finds_nothing_keeps_the_failure),
        T(test_permits_look_that_fails_is_not_known),
        T(test_permits_grant_found_by_the_look_after_a_cancel_is_given_back),
        T(test_permits_end_without_a_lost_reply_does_not_look),
        T(test_permits_wait_that_ends_without_them_leaves_the_line),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
