/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the reading of the replica-sync check's replies, which the
 * blocking pools and the loop's links share (conn.h): ROLE before a
 * command (how many replicas to WAIT for) and WAIT after it (did one
 * acknowledge). Each test gives a reply made from the RESP text a server
 * would send (wire_stub.h) and reads the status, the count, the reason and
 * what went to a test logger. Nothing talks to Redis and nothing sleeps.
 */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "wire_stub.h"

#define PEER "10.0.0.7:6380"

/* What the test logger received: the lines and the last one. */
struct log_seen {
    int lines;
    cr_log_level level;
    char last[512];
};

/* What a test works on: a logger that takes every level, and what it
 * received. */
struct fx {
    struct log_seen seen;
    cr__logger log;
};

/* The test logger: counts a line, keeps it and its level. */
static void
log_line(void *userdata, cr_log_level level, const char *msg)
{
    struct log_seen *s = userdata;

    s->lines++;
    s->level = level;
    snprintf(s->last, sizeof(s->last), "%s", msg);
}

static int
fx_up(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));

    f->log = (cr__logger){.fn = log_line, .userdata = &f->seen,
                          .level = CR_LOG_DEBUG};
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

/* Returns what cr__replicas_of reads in the ROLE reply `resp`, with the
 * count in *n (left alone when not CR_OK). */
static cr_status
replicas(struct fx *f, const char *resp, int64_t *n)
{
    cr__reply *r = reply_of(resp);
    cr_status rc = cr__replicas_of(r, PEER, &f->log, n);

    cr__reply_free(r);
    return rc;
}

/* Returns what cr__replica_sync_of reads in the WAIT reply `resp`. */
static cr_status
sync_of(struct fx *f, const char *resp)
{
    cr__reply *r = reply_of(resp);
    cr_status rc = cr__replica_sync_of(r, PEER, &f->log);

    cr__reply_free(r);
    return rc;
}

/* Checks that the logger received exactly one line, at error, and that
 * it is the reason the call left. */
static void
assert_logged_once_as_the_reason(const struct fx *f)
{
    assert_int_equal(f->seen.lines, 1);
    assert_int_equal(f->seen.level, CR_LOG_ERROR);
    assert_string_equal(f->seen.last, cr_last_error());
}

/* ---------------------------------------------------------------- ROLE */

static void
test_masters_role_counts_its_replicas(void **state)
{
    struct fx *f = *state;
    int64_t n = -1;

    assert_int_equal(replicas(f, "*3\r\n$6\r\nmaster\r\n:3129\r\n*2\r\n"
                                 "*3\r\n$8\r\n10.0.0.8\r\n$4\r\n6381\r\n"
                                 "$4\r\n3129\r\n"
                                 "*3\r\n$8\r\n10.0.0.9\r\n$4\r\n6382\r\n"
                                 "$4\r\n3100\r\n",
                             &n),
                     CR_OK);
    assert_int_equal(n, 2);
    assert_int_equal(f->seen.lines, 0);
}

static void
test_master_without_replicas_has_none_to_wait_for(void **state)
{
    struct fx *f = *state;
    int64_t n = -1;

    assert_int_equal(replicas(f, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n", &n),
                     CR_OK);
    assert_int_equal(n, 0);
    assert_int_equal(f->seen.lines, 0);
}

static void
test_replicas_role_waits_for_none(void **state)
{
    struct fx *f = *state;
    int64_t n = -1;

    /* The command that follows is refused with READONLY. */
    assert_int_equal(replicas(f, "*5\r\n$5\r\nslave\r\n$8\r\n10.0.0.7\r\n"
                                 ":6379\r\n$9\r\nconnected\r\n:3129\r\n",
                             &n),
                     CR_OK);
    assert_int_equal(n, 0);
    assert_int_equal(f->seen.lines, 0);
}

static void
test_role_refused_by_an_acl_is_that_refusal_and_logged(void **state)
{
    struct fx *f = *state;
    int64_t n = 9;

    assert_int_equal(replicas(f, "-NOPERM User app has no permissions to "
                                 "run the 'role' command\r\n",
                             &n),
                     CR_ENOPERM);
    assert_int_equal(n, 9);
    assert_non_null(strstr(cr_last_error(), PEER " refused ROLE"));
    assert_non_null(strstr(cr_last_error(), "NOPERM User app"));
    assert_logged_once_as_the_reason(f);
}

static void
test_role_unknown_to_the_server_is_a_configuration_error_and_logged(
    void **state)
{
    struct fx *f = *state;
    int64_t n = 9;

    assert_int_equal(replicas(f, "-ERR unknown command 'ROLE'\r\n", &n),
                     CR_ECONFIG);
    assert_non_null(strstr(cr_last_error(), "replica sync is on"));
    assert_logged_once_as_the_reason(f);
}

static void
test_role_reply_that_is_no_role_says_the_link_is_out_of_step(void **state)
{
    struct fx *f = *state;
    static const char *const garbage[] = {
        ":1\r\n", "+OK\r\n", "$-1\r\n", "*0\r\n", "*2\r\n:1\r\n:2\r\n",
    };
    int64_t n = 9;

    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        assert_int_equal(replicas(f, garbage[i], &n), CR_EIO);
        assert_non_null(strstr(cr_last_error(), "out of step"));
        assert_non_null(strstr(cr_last_error(), PEER));
    }
    assert_int_equal(n, 9);
}

/* ---------------------------------------------------------------- WAIT */

static void
test_wait_acknowledged_by_a_replica_is_ok_and_not_logged(void **state)
{
    struct fx *f = *state;

    assert_int_equal(sync_of(f, ":1\r\n"), CR_OK);
    assert_int_equal(sync_of(f, ":3\r\n"), CR_OK);
    assert_int_equal(f->seen.lines, 0);
}

static void
test_wait_no_replica_acknowledged_is_an_io_failure_naming_the_master(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(sync_of(f, ":0\r\n"), CR_EIO);
    assert_non_null(strstr(cr_last_error(), "no replica acknowledged"));
    assert_non_null(strstr(cr_last_error(), PEER));
    /* An outcome, not a refusal: the caller says what it did about it. */
    assert_int_equal(f->seen.lines, 0);
}

static void
test_wait_refused_by_an_acl_is_that_refusal_and_logged(void **state)
{
    struct fx *f = *state;

    assert_int_equal(sync_of(f, "-NOPERM User app has no permissions to "
                                "run the 'wait' command\r\n"),
                     CR_ENOPERM);
    assert_non_null(strstr(cr_last_error(), PEER " refused WAIT"));
    assert_logged_once_as_the_reason(f);
}

static void
test_wait_unknown_to_a_proxy_is_a_configuration_error_and_logged(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(sync_of(f, "-ERR unknown command 'WAIT'\r\n"),
                     CR_ECONFIG);
    assert_logged_once_as_the_reason(f);
}

static void
test_wait_reply_that_is_no_count_is_no_acknowledgement(void **state)
{
    struct fx *f = *state;

    assert_int_equal(sync_of(f, "+OK\r\n"), CR_EIO);
    assert_int_equal(sync_of(f, "$1\r\n1\r\n"), CR_EIO);
    assert_int_equal(sync_of(f, "$-1\r\n"), CR_EIO);
    assert_int_equal(sync_of(f, "*1\r\n:1\r\n"), CR_EIO);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_up, fx_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_masters_role_counts_its_replicas),
        T(test_master_without_replicas_has_none_to_wait_for),
        T(test_replicas_role_waits_for_none),
        T(test_role_refused_by_an_acl_is_that_refusal_and_logged),
        T(test_role_unknown_to_the_server_is_a_configuration_error_and_logged),
        T(test_role_reply_that_is_no_role_says_the_link_is_out_of_step),
        T(test_wait_acknowledged_by_a_replica_is_ok_and_not_logged),
        T(test_wait_no_replica_acknowledged_is_an_io_failure_naming_the_master),
        T(test_wait_refused_by_an_acl_is_that_refusal_and_logged),
        T(test_wait_unknown_to_a_proxy_is_a_configuration_error_and_logged),
        T(test_wait_reply_that_is_no_count_is_no_acknowledgement),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
