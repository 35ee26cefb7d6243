/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the protocol's name helpers (section 1.1), owner names,
 * UUIDs and request ids, decimal formatting and parsing: pure functions, no Redis.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "names.h"
#include "registry.h"

static void
assert_name(char *got, const char *want)
{
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void
test_prefix_name_wraps_plain_name_in_braces(void **state)
{
    (void)state;
    assert_name(cr__name_prefixed("redisson_lock__channel", "myLock"),
                "redisson_lock__channel:{myLock}");
}

static void
test_prefix_name_keeps_name_with_brace_as_is(void **state)
{
    (void)state;
    assert_name(cr__name_prefixed("redisson_lock__channel", "app{7}lock"),
                "redisson_lock__channel:app{7}lock");
    /* The test is "contains {", not "has a well-formed tag". */
    assert_name(cr__name_prefixed("p", "a{"), "p:a{");
}

static void
test_prefix_name_wraps_name_with_only_closing_brace(void **state)
{
    (void)state;
    assert_name(cr__name_prefixed("p", "a}b"), "p:{a}b}");
}

static void
test_suffix_name_follows_the_same_brace_rule(void **state)
{
    (void)state;
    assert_name(cr__name_suffixed("myLock", "timeout"), "{myLock}:timeout");
    assert_name(cr__name_suffixed("app{7}lock", "timeout"), "app{7}lock:timeout");
}

static void
test_unlock_latch_name_has_32_hex_request_id(void **state)
{
    char *a = cr__name(CR__NAME_UNLOCK_LATCH, "myLock");
    char *b = cr__name(CR__NAME_UNLOCK_LATCH, "myLock");
    const char *prefix = "redisson_unlock_latch:{myLock}:";
    size_t i;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(strncmp(a, prefix, strlen(prefix)), 0);
    assert_int_equal(strlen(a), strlen(prefix) + 32);
    for (i = strlen(prefix); a[i] != '\0'; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    assert_string_not_equal(a, b);
    free(a);
    free(b);
}

static void
test_uuid_v4_is_36_lowercase_chars_with_version_and_variant(void **state)
{
    char u[37];
    int i;

    (void)state;
    assert_int_equal(cr__uuid_v4(u), CR_OK);
    assert_int_equal(strlen(u), 36);
    for (i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            assert_int_equal(u[i], '-');
        else
            assert_non_null(strchr("0123456789abcdef", u[i]));
    }
    assert_int_equal(u[14], '4');
    assert_non_null(strchr("89ab", u[19]));
}

static void
test_owner_name_is_uuid_colon_decimal_tid(void **state)
{
    char out[CR__OWNER_MAX];

    (void)state;
    cr__name_owner("6f1c0a4e-1111-4222-8333-444455556666", -42, false, out);
    assert_string_equal(out, "6f1c0a4e-1111-4222-8333-444455556666:-42");
    cr__name_owner("6f1c0a4e-1111-4222-8333-444455556666", INT64_MAX, false, out);
    assert_string_equal(out,
                        "6f1c0a4e-1111-4222-8333-444455556666:9223372036854775807");
}

#define IDS 100000

static int
cmp_id(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

/* Draws n request ids into ids[n][16]. */
static void
draw_ids(unsigned char (*ids)[16], size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        assert_int_equal(cr__request_id(ids[i]), CR_OK);
}

static void *
draw_thread(void *arg)
{
    draw_ids(arg, IDS / 2);
    return NULL;
}

static void
test_request_ids_never_repeat_across_draws_and_threads(void **state)
{
    unsigned char (*ids)[16] = malloc(IDS * 16);
    pthread_t t;
    size_t i;

    (void)state;
    assert_non_null(ids);
    draw_ids(ids, IDS / 2);
    assert_int_equal(pthread_create(&t, NULL, draw_thread, ids + IDS / 2), 0);
    pthread_join(t, NULL);
    qsort(ids, IDS, 16, cmp_id);
    for (i = 1; i < IDS; i++)
        assert_true(memcmp(ids[i - 1], ids[i], 16) != 0);
    free(ids);
}

static void
test_request_ids_of_a_forked_child_differ_from_its_parents(void **state)
{
    unsigned char parent[16], child[16];
    int fds[2], status = 0;
    pid_t pid;

    (void)state;
    cr__registry_init();
    assert_int_equal(cr__request_id(parent), CR_OK);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Without a new seed the child would draw the parent's next id. */
        _exit(cr__request_id(child) == CR_OK &&
              write(fds[1], child, 16) == 16 ? 0 : 1);
    }
    assert_int_equal(read(fds[0], child, 16), 16);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(cr__request_id(parent), CR_OK);
    assert_true(memcmp(parent, child, 16) != 0);
    close(fds[0]);
    close(fds[1]);
}

#define ID_THREADS 8

/* A thread's id, read twice: the second must be the first. */
static void *
read_thread_id(void *arg)
{
    int64_t *id = arg;

    *id = cr_thread_id();
    if (cr_thread_id() != *id)
        *id = -1;
    return NULL;
}

static void
test_thread_ids_are_distinct_per_thread_and_stable(void **state)
{
    int64_t ids[ID_THREADS + 1];
    pthread_t t[ID_THREADS];
    int i, j;

    (void)state;
    for (i = 0; i < ID_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, read_thread_id, &ids[i]), 0);
    ids[ID_THREADS] = cr_thread_id();
    for (i = 0; i < ID_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(cr_thread_id(), ids[ID_THREADS]);
    for (i = 0; i <= ID_THREADS; i++) {
        assert_true(ids[i] > 0);
        for (j = 0; j < i; j++)
            assert_true(ids[i] != ids[j]);
    }
}

static void
test_fmt_and_parse_i64_round_trip_extremes(void **state)
{
    const int64_t values[] = {0, 1, -1, 30000, INT64_MAX, INT64_MIN};
    char buf[24];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        int64_t back = 7;
        size_t n = cr__fmt_i64(buf, values[i]);

        assert_true(cr__parse_i64(buf, n, &back));
        assert_true(back == values[i]);
    }
}

static void
test_parse_i64_refuses_garbage_and_overflow(void **state)
{
    int64_t v = 5;

    (void)state;
    assert_false(cr__parse_i64("", 0, &v));
    assert_false(cr__parse_i64("-", 1, &v));
    assert_false(cr__parse_i64("12a", 3, &v));
    assert_false(cr__parse_i64("9223372036854775808", 19, &v));
    assert_false(cr__parse_i64("-9223372036854775809", 20, &v));
    assert_true(v == 5);
}

/* The cluster check on a client struct that is never connected. */
static cr_status
slots_ok(bool cluster, const char *raw, const char *extra)
{
    return cr__name_check_slots(cluster, raw, extra);
}

static void
test_cluster_refuses_names_whose_derived_keys_split(void **state)
{
    (void)state;
    /* Protocol 1.1: "a}b" gives "p:{a}b}" (tag "a"); "a{" and "{}x" have
     * no tag, so "p:a{" hashes apart from "a{". */
    assert_int_equal(slots_ok(true, "a}b", NULL), CR_EINVAL);
    assert_non_null(strstr(cr_last_error(), "different cluster slots"));
    assert_int_equal(slots_ok(true, "a{", NULL), CR_EINVAL);
    assert_int_equal(slots_ok(true, "{}x", NULL), CR_EINVAL);
    assert_int_equal(slots_ok(true, "myLock", NULL), CR_OK);
    assert_int_equal(slots_ok(true, "app{7}lock", NULL), CR_OK);
    /* A latch's channel always adds braces (section 9). */
    assert_int_equal(slots_ok(true, "pre{tag}x",
                              "redisson_countdownlatch__channel__{pre{tag}x}"),
                     CR_EINVAL);
    assert_int_equal(slots_ok(true, "gate",
                              "redisson_countdownlatch__channel__{gate}"),
                     CR_OK);
}

static void
test_names_that_split_keys_still_work_outside_a_cluster(void **state)
{
    (void)state;
    assert_int_equal(slots_ok(false, "a}b", NULL), CR_OK);
    assert_int_equal(slots_ok(false, "pre{tag}x",
                              "redisson_countdownlatch__channel__{pre{tag}x}"),
                     CR_OK);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_refuses_names_whose_derived_keys_split),
        cmocka_unit_test(test_names_that_split_keys_still_work_outside_a_cluster),
        cmocka_unit_test(test_prefix_name_wraps_plain_name_in_braces),
        cmocka_unit_test(test_prefix_name_keeps_name_with_brace_as_is),
        cmocka_unit_test(test_prefix_name_wraps_name_with_only_closing_brace),
        cmocka_unit_test(test_suffix_name_follows_the_same_brace_rule),
        cmocka_unit_test(test_unlock_latch_name_has_32_hex_request_id),
        cmocka_unit_test(test_uuid_v4_is_36_lowercase_chars_with_version_and_variant),
        cmocka_unit_test(test_owner_name_is_uuid_colon_decimal_tid),
        cmocka_unit_test(test_thread_ids_are_distinct_per_thread_and_stable),
        cmocka_unit_test(test_request_ids_never_repeat_across_draws_and_threads),
        cmocka_unit_test(test_request_ids_of_a_forked_child_differ_from_its_parents),
        cmocka_unit_test(test_fmt_and_parse_i64_round_trip_extremes),
        cmocka_unit_test(test_parse_i64_refuses_garbage_and_overflow),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
