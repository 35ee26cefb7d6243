/* SPDX-License-Identifier: MIT */
/*
 * Tests of the test fixture itself, against one private redis-server: plain
 * commands reach it, the listener sees published messages in order, a
 * server stopped and restarted answers again on the same port, and the
 * polling, shared-memory and child-process helpers behave. The program exits with 77 (a
 * skip for automake) when redis-server is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "redis_fixture.h"

/* The server every test uses, started by main. */
static cr_test_redis server;

/* Check that reply is a status reply with the given text, and free it. */
static void expect_status(redisReply *reply, const char *text)
{
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    assert_string_equal(reply->str, text);
    freeReplyObject(reply);
}

/* Check that reply is an integer reply with the given value, and free it. */
static void expect_integer(redisReply *reply, long long value)
{
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_INTEGER);
    assert_int_equal(reply->integer, value);
    freeReplyObject(reply);
}

static void test_fixture_starts_server_with_url(void **state)
{
    char url[64];

    (void)state;
    assert_true(server.pid > 0);
    assert_true(server.port > 0 && server.port <= 65535);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", server.port);
    assert_string_equal(server.url, url);
    assert_int_equal(access(server.dir, F_OK), 0);
}

static void test_fixture_runs_set_and_get(void **state)
{
    redisReply *reply;

    (void)state;
    expect_status(cr_test_redis_cmd(&server, "SET %s %s", "k", "v 1"), "OK");
    reply = cr_test_redis_cmd(&server, "GET %s", "k");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STRING);
    assert_string_equal(reply->str, "v 1");
    freeReplyObject(reply);
}

static void test_fixture_flushall_empties_database(void **state)
{
    (void)state;
    expect_status(cr_test_redis_cmd(&server, "SET gone 1"), "OK");
    assert_int_equal(cr_test_redis_flushall(&server), 0);
    expect_integer(cr_test_redis_cmd(&server, "DBSIZE"), 0);
}

static void test_fixture_listener_gets_messages_in_order(void **state)
{
    static const char *const channels[] = { "chan:a", "chan:b" };
    const cr_test_message *m;
    cr_test_listener *l;

    (void)state;
    l = cr_test_listener_start(&server, channels, 2);
    assert_non_null(l);
    assert_int_equal(cr_test_listener_count(l), 0);
    expect_integer(cr_test_redis_cmd(&server, "PUBLISH chan:a first"), 1);
    expect_integer(cr_test_redis_cmd(&server, "PUBLISH chan:b second"), 1);
    assert_int_equal(cr_test_listener_wait(l, 2, 5000), 2);
    m = cr_test_listener_get(l, 0);
    assert_non_null(m);
    assert_string_equal(m->channel, "chan:a");
    assert_string_equal(m->payload, "first");
    assert_int_equal(m->payload_len, 5);
    m = cr_test_listener_get(l, 1);
    assert_non_null(m);
    assert_string_equal(m->channel, "chan:b");
    assert_string_equal(m->payload, "second");
    assert_null(cr_test_listener_get(l, 2));
    assert_int_equal(cr_test_listener_wait(l, 3, 20), 2);
    cr_test_listener_stop(l);
}

/* A condition for cr_test_wait_until: the counter at arg has reached 3,
 * counting each call. */
static bool third_call(void *arg)
{
    int *calls = arg;

    return ++*calls >= 3;
}

/* A condition for cr_test_wait_until that never holds. */
static bool never(void *arg)
{
    (void)arg;
    return false;
}

static void test_fixture_wait_until_polls_and_times_out(void **state)
{
    int calls = 0;
    int64_t start;

    (void)state;
    assert_true(cr_test_wait_until(third_call, &calls, 1000));
    assert_int_equal(calls, 3);
    start = cr_test_now_ms();
    assert_false(cr_test_wait_until(never, NULL, 30));
    assert_true(cr_test_now_ms() - start >= 30);
}

static void test_fixture_shared_memory_crosses_fork(void **state)
{
    int *shared = cr_test_shared_alloc(sizeof(int));
    int status;
    pid_t pid;

    (void)state;
    assert_non_null(shared);
    assert_int_equal(*shared, 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        *shared = 42;
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(*shared, 42);
    cr_test_shared_free(shared, sizeof(int));
}

static void test_fixture_memfd_block_is_shared_through_its_descriptor(
    void **state)
{
    int fd = -1;
    int *shared = cr_test_memfd_alloc("fixture_test", sizeof(int), &fd);
    pid_t pid;

    (void)state;
    assert_non_null(shared);
    assert_true(fd >= 0);
    assert_int_equal(*shared, 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* As a helper program would: its own mapping of the descriptor. */
        int *mine = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
                         MAP_SHARED, fd, 0);

        if (mine == MAP_FAILED)
            _exit(1);
        *mine = 42;
        _exit(0);
    }
    assert_int_equal(cr_test_wait_exit(pid), 0);
    assert_int_equal(*shared, 42);
    munmap(shared, sizeof(int));
    close(fd);
}

static void test_fixture_read_line_reads_whole_lines_until_eof(void **state)
{
    char line[16];
    int fds[2];

    (void)state;
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "one\ntw", 7), 7);
    assert_true(cr_test_read_line(fds[0], line, sizeof(line), -1));
    assert_string_equal(line, "one");
    close(fds[1]);
    /* A line cut by the end of the file is not whole. */
    assert_false(cr_test_read_line(fds[0], line, sizeof(line), -1));
    assert_string_equal(line, "tw");
    close(fds[0]);
}

static void test_fixture_read_line_gives_up_after_its_timeout(void **state)
{
    char line[16];
    int64_t start;
    int fds[2];

    (void)state;
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "half", 4), 4);
    start = cr_test_now_ms();
    assert_false(cr_test_read_line(fds[0], line, sizeof(line), 30));
    assert_true(cr_test_now_ms() - start >= 30);
    assert_string_equal(line, "half");
    close(fds[0]);
    close(fds[1]);
}

static void test_fixture_wait_exit_gives_the_status_or_minus_one(void **state)
{
    pid_t pid;

    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(3);
    assert_int_equal(cr_test_wait_exit(pid), 3);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pause();
        _exit(0);
    }
    kill(pid, SIGKILL);
    assert_int_equal(cr_test_wait_exit(pid), -1);
}

static void test_fixture_restart_reuses_port(void **state)
{
    int port = server.port;
    redisContext *c;

    (void)state;
    cr_test_redis_stop(&server);
    assert_int_equal(server.pid, 0);
    assert_int_equal(server.port, port);
    c = cr_test_redis_connect(&server);
    assert_null(c);
    assert_int_equal(cr_test_redis_restart(&server), 0);
    assert_true(server.pid > 0);
    assert_int_equal(server.port, port);
    expect_status(cr_test_redis_cmd(&server, "PING"), "PONG");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_starts_server_with_url),
        cmocka_unit_test(test_fixture_runs_set_and_get),
        cmocka_unit_test(test_fixture_flushall_empties_database),
        cmocka_unit_test(test_fixture_listener_gets_messages_in_order),
        cmocka_unit_test(test_fixture_wait_until_polls_and_times_out),
        cmocka_unit_test(test_fixture_shared_memory_crosses_fork),
        cmocka_unit_test(
            test_fixture_memfd_block_is_shared_through_its_descriptor),
        cmocka_unit_test(test_fixture_read_line_reads_whole_lines_until_eof),
        cmocka_unit_test(test_fixture_read_line_gives_up_after_its_timeout),
        cmocka_unit_test(test_fixture_wait_exit_gives_the_status_or_minus_one),
        cmocka_unit_test(test_fixture_restart_reuses_port),
    };
    int rc = cr_test_redis_start(&server, NULL);

    if (rc == CR_TEST_SKIP) {
        fprintf(stderr, "redis-server is not on the PATH; skipping\n");
        return CR_TEST_SKIP;
    }
    if (rc != 0) {
        fprintf(stderr, "cannot start redis-server\n");
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    cr_test_redis_destroy(&server);
    return rc;
}
