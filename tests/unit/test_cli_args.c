/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the credisson tool's command-line parser (src/cli/args.c):
 * durations, counts, and whole command lines, each accepted with the values
 * it must give or refused with a one-line reason. The parser is pure, so
 * these tests need no server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/args.h"

#define MAX_WORDS 32

/* ------------------------------------------------------------- helpers */

/* Parses the duration s, which must be accepted, and returns it in ms. */
static int64_t duration_ok(const char *s, bool forever)
{
    char err[CR__CLI_ERR_MAX] = "";
    int64_t ms = -99;

    if (cr__cli_parse_duration(s, forever, &ms, err, sizeof(err)) != 0)
        print_error("duration '%s' refused: %s\n", s, err);
    assert_int_not_equal(ms, -99);
    return ms;
}

/* Checks that the duration s is refused with a reason containing needle,
 * and that the output is left untouched. */
static void duration_bad(const char *s, bool forever, const char *needle)
{
    char err[CR__CLI_ERR_MAX] = "";
    int64_t ms = 12345;

    assert_int_equal(cr__cli_parse_duration(s, forever, &ms, err,
                                            sizeof(err)), -1);
    assert_int_equal(ms, 12345);
    if (needle != NULL && strstr(err, needle) == NULL)
        print_error("reason for '%s' is '%s', wanted '%s'\n", s, err, needle);
    assert_non_null(strstr(err, needle != NULL ? needle : ""));
}

/* Splits `line` (words separated by single spaces; "_" stands for an empty
 * word) into argv after a program name, and parses it. Returns what the
 * parser returned; err receives its reason. `words` keeps the strings. */
static int parse_line(const char *line, char words[][128], char **argv,
                      cr__cli_args *a, char *err)
{
    int argc = 0;
    const char *p = line;

    argv[argc++] = "credisson";
    while (*p != '\0') {
        size_t n = strcspn(p, " ");
        char *w = words[argc];

        assert_true(n < 128 && argc < MAX_WORDS - 1);
        memcpy(w, p, n);
        w[n] = '\0';
        if (strcmp(w, "_") == 0)
            w[0] = '\0';
        argv[argc++] = w;
        p += n;
        if (*p == ' ')
            p++;
    }
    argv[argc] = NULL;
    return cr__cli_parse_args(argc, argv, a, err, CR__CLI_ERR_MAX);
}

/* The state each line test shares: words, argv, result and error. */
typedef struct line {
    char words[MAX_WORDS][128];
    char *argv[MAX_WORDS];
    cr__cli_args a;
    char err[CR__CLI_ERR_MAX];
} line;

/* Parses `s`, which must be accepted. */
static void line_ok(line *l, const char *s)
{
    if (parse_line(s, l->words, l->argv, &l->a, l->err) != 0)
        print_error("'%s' refused: %s\n", s, l->err);
    assert_string_equal(l->err, "");
}

/* Parses `s`, which must be refused with a one-line reason containing
 * needle. */
static void line_bad(line *l, const char *s, const char *needle)
{
    int rc = parse_line(s, l->words, l->argv, &l->a, l->err);

    if (rc != -1)
        print_error("'%s' was accepted\n", s);
    assert_int_equal(rc, -1);
    assert_null(strchr(l->err, '\n'));
    if (strstr(l->err, needle) == NULL)
        print_error("reason for '%s' is '%s', wanted '%s'\n", s, l->err,
                    needle);
    assert_non_null(strstr(l->err, needle));
}

/* ----------------------------------------------------------- durations */

static void test_duration_plain_number_is_seconds(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("0", false), 0);
    assert_int_equal(duration_ok("5", false), 5000);
    assert_int_equal(duration_ok("120", false), 120000);
}

static void test_duration_accepts_units(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("250ms", false), 250);
    assert_int_equal(duration_ok("3s", false), 3000);
    assert_int_equal(duration_ok("2m", false), 120000);
    assert_int_equal(duration_ok("1h", false), 3600000);
}

static void test_duration_accepts_fractions_rounded_down(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("0.5", false), 500);
    assert_int_equal(duration_ok("1.5m", false), 90000);
    assert_int_equal(duration_ok("0.0015s", false), 1);
    assert_int_equal(duration_ok("0.0009", false), 0);
    assert_int_equal(duration_ok("2.5ms", false), 2);
}

static void test_duration_accepts_compound_forms(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("1m30s", false), 90000);
    assert_int_equal(duration_ok("1h15m", false), 4500000);
    assert_int_equal(duration_ok("2h0m5s250ms", false), 7205250);
    assert_int_equal(duration_ok("1m0.5s", false), 60500);
    assert_int_equal(duration_ok("0.5h1.5m", false), 1890000);
    assert_int_equal(duration_ok("876599h59m59s999ms", false),
                     CR__CLI_DURATION_MAX - 1);
    assert_int_equal(duration_ok("876600h", false), CR__CLI_DURATION_MAX);
}

static void test_duration_refuses_malformed_compound_forms(void **state)
{
    (void)state;
    duration_bad("1m30", false, "its own unit");
    duration_bad("30s1m", false, "largest down");
    duration_bad("1s1s", false, "largest down");
    duration_bad("1m 30s", false, "unit");
    duration_bad("1m-30s", false, "unit");
    duration_bad("1m30x", false, "unit");
    duration_bad("1hm", false, "unit");
    duration_bad("876576h1h", false, "largest down");
    duration_bad("876600h1ms", false, "too long");
    duration_bad("1m.5s", false, "unit");
}

static void test_duration_forever_only_where_allowed(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("forever", true), CR__CLI_FOREVER);
    duration_bad("forever", false, "not allowed");
}

static void test_duration_accepts_one_hundred_years(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("3155760000s", false), CR__CLI_DURATION_MAX);
    duration_bad("3155760000.001s", false, "too long");
    duration_bad("3155760001", false, "too long");
}

static void test_duration_refuses_overflowing_digits(void **state)
{
    (void)state;
    duration_bad("99999999999999999999999999999", false, "too long");
    duration_bad("9999999999999999h", false, "too long");
}

static void test_duration_refuses_malformed(void **state)
{
    (void)state;
    duration_bad("", false, "empty");
    duration_bad(NULL, false, "empty");
    duration_bad("-1", false, "digit");
    duration_bad("+1", false, "digit");
    duration_bad(" 1", false, "digit");
    duration_bad("1 ", false, "unit");
    duration_bad("1.", false, "decimal point");
    duration_bad(".5", false, "digit");
    duration_bad("10x", false, "unit");
    duration_bad("10sec", false, "unit");
    duration_bad("1e3", false, "unit");
    duration_bad("0.1234567890", false, "decimals");
}

/* -------------------------------------------------------------- counts */

static void test_count_accepts_range(void **state)
{
    char err[CR__CLI_ERR_MAX];
    int64_t v = 0;

    (void)state;
    assert_int_equal(cr__cli_parse_count("0", 0, 5, &v, err, sizeof(err)), 0);
    assert_int_equal(v, 0);
    assert_int_equal(cr__cli_parse_count("-3", -5, 5, &v, err, sizeof(err)),
                     0);
    assert_int_equal(v, -3);
    assert_int_equal(cr__cli_parse_count("2147483647", 0, CR__CLI_COUNT_MAX,
                                         &v, err, sizeof(err)), 0);
    assert_int_equal(v, CR__CLI_COUNT_MAX);
}

static void test_count_refuses_bad_input_and_keeps_output(void **state)
{
    static const char *bad[] = {"", "x", "1x", "-", "--1", "1.0", " 1",
                                "6", "-6", "99999999999999999999999"};
    char err[CR__CLI_ERR_MAX];
    int64_t v = 42;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(cr__cli_parse_count(bad[i], -5, 5, &v, err,
                                             sizeof(err)), -1);
        assert_int_equal(v, 42);
    }
    assert_int_equal(cr__cli_parse_count(NULL, 0, 5, &v, err, sizeof(err)),
                     -1);
}

/* ----------------------------------------------------------------- lock */

static void test_args_lock_with_separator(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -- echo hi");
    assert_int_equal(l.a.command, CR__CLI_LOCK);
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_string_equal(l.a.name, "jobs");
    assert_int_equal(l.a.cmd_argc, 2);
    assert_string_equal(l.a.cmd[0], "echo");
    assert_string_equal(l.a.cmd[1], "hi");
    assert_null(l.a.cmd[2]);
    assert_int_equal(l.a.wait_ms, CR__CLI_FOREVER);
    assert_int_equal(l.a.lease_ms, -1);
    assert_int_equal(l.a.watchdog_ms, -1);
    assert_int_equal(l.a.command_timeout_ms, -1);
    assert_int_equal(l.a.kill_after_ms, 10000);
    assert_int_equal(l.a.kind, CR__CLI_LOCK_PLAIN);
}

static void test_args_lock_first_word_after_name_starts_command(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -w 2 make -j2 --keep-going");
    assert_int_equal(l.a.wait_ms, 2000);
    assert_int_equal(l.a.cmd_argc, 3);
    assert_string_equal(l.a.cmd[0], "make");
    assert_string_equal(l.a.cmd[2], "--keep-going");
}

static void test_args_lock_options_after_separator_belong_to_command(
    void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -- sh --wait 5 --");
    assert_int_equal(l.a.wait_ms, CR__CLI_FOREVER);
    assert_int_equal(l.a.cmd_argc, 4);
    assert_string_equal(l.a.cmd[3], "--");
}

static void test_args_lock_options(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock --wait=0 jobs --lease 1m --watchdog 300ms --kill-after "
                "0 --fair -- true");
    assert_int_equal(l.a.wait_ms, 0);
    assert_int_equal(l.a.lease_ms, 60000);
    assert_int_equal(l.a.watchdog_ms, 300);
    assert_int_equal(l.a.kill_after_ms, 0);
    assert_int_equal(l.a.kind, CR__CLI_LOCK_FAIR);
    line_ok(&l, "lock jobs --read -- true");
    assert_int_equal(l.a.kind, CR__CLI_LOCK_READ);
    line_ok(&l, "lock jobs --write --wait forever -- true");
    assert_int_equal(l.a.kind, CR__CLI_LOCK_WRITE);
    line_ok(&l, "lock jobs --fenced -- true");
    assert_int_equal(l.a.kind, CR__CLI_LOCK_FENCED);
    assert_int_equal(l.a.wait_ms, CR__CLI_FOREVER);
}

static void test_args_lock_refuses_conflicting_kinds(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "lock jobs --read --write -- true", "exclude each other");
    line_bad(&l, "lock jobs --fair --write -- true", "exclude each other");
    line_bad(&l, "lock jobs --fenced --fair -- true", "exclude each other");
}

static void test_args_lock_refuses_zero_lease(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "lock jobs --lease 0 -- true", "--lease must be more");
    line_bad(&l, "lock jobs --watchdog 0ms -- true", "--watchdog must");
    line_bad(&l, "lock jobs --lease forever -- true", "--lease");
}

static void test_args_lock_refuses_malformed_duration(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "lock jobs --wait 5x -- true",
             "invalid duration '5x' for --wait");
    line_bad(&l, "lock jobs --wait=-1 -- true", "invalid duration");
}

static void test_args_lock_without_a_command_holds(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs");
    assert_int_equal(l.a.action, CR__CLI_LOCK_HOLD);
    assert_null(l.a.cmd);
    line_ok(&l, "lock jobs --wait 1m30s --fenced --lease 10s");
    assert_int_equal(l.a.action, CR__CLI_LOCK_HOLD);
    assert_int_equal(l.a.wait_ms, 90000);
    assert_int_equal(l.a.kind, CR__CLI_LOCK_FENCED);
    line_bad(&l, "lock jobs --", "missing the command to run");
    line_bad(&l, "lock jobs --kill-after 1s", "--kill-after does not apply "
             "to 'lock NAME' without a command");
    line_bad(&l, "lock jobs --pass-credentials", "does not apply");
    line_bad(&l, "lock jobs --timeout 5s", "ambiguous");
}

static void test_args_lock_refuses_missing_or_empty_name(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "lock", "missing NAME");
    line_bad(&l, "lock _ -- true", "NAME is empty");
    line_bad(&l, "lock -- true", "unexpected '--'");
}

/* ------------------------------------------------------- global options */

static void test_args_global_options_before_and_after_command(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--url redis://h:1/2 --timeout 2s lock jobs --json -v "
                "--name-prefix app: -- true");
    assert_string_equal(l.a.url, "redis://h:1/2");
    assert_int_equal(l.a.command_timeout_ms, 2000);
    assert_true(l.a.json);
    assert_true(l.a.verbose);
    assert_string_equal(l.a.name_prefix, "app:");
    line_ok(&l, "inspect x --url=unix:///s --timeout=100ms");
    assert_string_equal(l.a.url, "unix:///s");
    assert_int_equal(l.a.command_timeout_ms, 100);
}

static void test_args_refuses_missing_command(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "", "missing command");
    line_bad(&l, "--json", "missing command");
}

static void test_args_refuses_unknown_command(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "frobnicate x", "unknown command 'frobnicate'");
}

static void test_args_refuses_unknown_option(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "lock jobs --frob -- true", "unknown option '--frob'");
    line_bad(&l, "-x lock jobs -- true", "unknown option '-x'");
    line_bad(&l, "lock jobs -wv -- true", "unknown option '-wv'");
}

static void test_args_unknown_option_error_hides_its_value(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "--uri=redis://:secret@h lock jobs -- true",
             "unknown option '--uri'");
    assert_null(strstr(l.err, "secret"));
}

static void test_args_error_quotes_are_cut_and_printable(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "lock jobs --wait "
                 "1234567890123456789012345678901234567890123456789x -- true",
             "...'");
    /* An escape character reaches the message as '?'. */
    parse_line("frob", l.words, l.argv, &l.a, l.err);
    l.words[1][1] = '\033';
    assert_int_equal(cr__cli_parse_args(2, l.argv, &l.a, l.err,
                                        sizeof(l.err)), -1);
    assert_null(strchr(l.err, '\033'));
    assert_non_null(strstr(l.err, "'f?ob'"));
}

static void test_args_refuses_option_without_value(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "inspect x --url", "--url needs a value");
    line_bad(&l, "inspect x --json=yes", "--json takes no value");
}

static void test_args_refuses_option_of_another_command(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "inspect x --wait 1", "--wait does not apply to inspect");
    line_bad(&l, "lock jobs --permits 2 -- true", "--permits does not apply");
    line_bad(&l, "latch x count --wait 1", "does not apply to 'latch count'");
}

static void test_args_refuses_extra_arguments(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "inspect x y", "unexpected argument 'y'");
    line_bad(&l, "version now", "unexpected argument");
    line_bad(&l, "inspect x -- true", "unexpected '--'");
}

/* ------------------------------------------------------------ semaphore */

static void test_args_semaphore_run(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "semaphore deploy --permits 2 --lease 5m -- ./deploy.sh a");
    assert_int_equal(l.a.command, CR__CLI_SEMAPHORE);
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_int_equal(l.a.permits, 2);
    assert_int_equal(l.a.lease_ms, 300000);
    assert_int_equal(l.a.cmd_argc, 2);
    line_ok(&l, "semaphore deploy ./deploy.sh");
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_int_equal(l.a.permits, -1);
    assert_string_equal(l.a.cmd[0], "./deploy.sh");
}

static void test_args_semaphore_actions(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "semaphore s set 4");
    assert_int_equal(l.a.action, CR__CLI_SEM_SET);
    assert_int_equal(l.a.value, 4);
    line_ok(&l, "semaphore s add -2");
    assert_int_equal(l.a.action, CR__CLI_SEM_ADD);
    assert_int_equal(l.a.value, -2);
    line_ok(&l, "semaphore s available --json");
    assert_int_equal(l.a.action, CR__CLI_SEM_AVAILABLE);
    assert_true(l.a.json);
}

static void test_args_semaphore_refuses_bad_actions(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "semaphore s set", "missing the number after 'set'");
    line_bad(&l, "semaphore s set -1", "invalid number '-1' for set");
    line_bad(&l, "semaphore s set 3 4", "unexpected argument '4'");
    line_bad(&l, "semaphore s --permits 0 -- true", "--permits");
    line_bad(&l, "semaphore s set 2 --wait 1", "does not apply");
    line_bad(&l, "semaphore s", "missing the command to run");
}

/* ---------------------------------------------------------------- latch */

static void test_args_latch_actions(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "latch shards set 3");
    assert_int_equal(l.a.command, CR__CLI_LATCH);
    assert_int_equal(l.a.action, CR__CLI_LATCH_SET);
    assert_int_equal(l.a.value, 3);
    line_ok(&l, "latch shards count-down");
    assert_int_equal(l.a.action, CR__CLI_LATCH_COUNT_DOWN);
    line_ok(&l, "latch shards count");
    assert_int_equal(l.a.action, CR__CLI_LATCH_COUNT);
    line_ok(&l, "latch shards await");
    assert_int_equal(l.a.action, CR__CLI_LATCH_AWAIT);
    assert_int_equal(l.a.wait_ms, CR__CLI_FOREVER);
}

static void test_args_latch_await_timeout_is_the_wait(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--timeout 2s latch shards await --timeout 30s");
    assert_int_equal(l.a.command_timeout_ms, 2000);
    assert_int_equal(l.a.wait_ms, 30000);
    line_ok(&l, "latch shards await -w 0");
    assert_int_equal(l.a.wait_ms, 0);
}

static void test_args_barrier_forms(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--timeout 2s barrier step --parties 4 --timeout 30s");
    assert_int_equal(l.a.command, CR__CLI_BARRIER);
    assert_int_equal(l.a.action, CR__CLI_BARRIER_AWAIT);
    assert_int_equal(l.a.parties, 4);
    assert_int_equal(l.a.command_timeout_ms, 2000);
    assert_int_equal(l.a.wait_ms, 30000);
    assert_null(l.a.cmd);
    line_ok(&l, "barrier step --parties 2 make test");
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_int_equal(l.a.wait_ms, CR__CLI_FOREVER);
    assert_string_equal(l.a.cmd[0], "make");
    assert_int_equal(l.a.cmd_argc, 2);
    line_ok(&l, "barrier step --parties 2 -- reset");
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_string_equal(l.a.cmd[0], "reset");
    line_ok(&l, "barrier step reset");
    assert_int_equal(l.a.action, CR__CLI_BARRIER_RESET);
    line_bad(&l, "barrier step", "missing --parties N for barrier");
    line_bad(&l, "barrier step --parties 0", "invalid number '0' for "
             "--parties");
    line_bad(&l, "barrier step --parties 100001", "out of range");
    line_bad(&l, "barrier step reset --parties 2", "does not apply to "
             "'barrier reset'");
    line_bad(&l, "barrier step --parties 2 --lease 5s -- true",
             "option --lease does not apply");
    line_bad(&l, "--parties 2 barrier step", "an option of barrier");
}

static void test_args_ratelimit_forms(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "ratelimit api --rate 10/1s -- curl x");
    assert_int_equal(l.a.command, CR__CLI_RATELIMIT);
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_int_equal(l.a.rate, 10);
    assert_int_equal(l.a.rate_interval_ms, 1000);
    assert_false(l.a.per_client);
    assert_int_equal(l.a.keep_alive_ms, -1);
    line_ok(&l, "ratelimit api --rate 5/1.5m --per-client --keep-alive 1h "
            "-w 0 curl");
    assert_int_equal(l.a.rate_interval_ms, 90000);
    assert_true(l.a.per_client);
    assert_int_equal(l.a.keep_alive_ms, 3600000);
    assert_int_equal(l.a.wait_ms, 0);
    assert_string_equal(l.a.cmd[0], "curl");
    line_ok(&l, "ratelimit api -- true");
    assert_int_equal(l.a.rate, -1);
    line_ok(&l, "ratelimit api available");
    assert_int_equal(l.a.action, CR__CLI_RL_AVAILABLE);
    line_bad(&l, "ratelimit api", "missing the command to run");
    line_bad(&l, "ratelimit api --rate 10 -- true", "not R/INTERVAL");
    line_bad(&l, "ratelimit api --rate 0/1s -- true", "permits");
    line_bad(&l, "ratelimit api --rate 10/0 -- true", "more than 0");
    line_bad(&l, "ratelimit api --rate 10/x -- true", "interval");
    line_bad(&l, "ratelimit api --rate 1/1s --per-client -- true",
             "--per-client needs --keep-alive");
    line_bad(&l, "ratelimit api --keep-alive 1m -- true",
             "give it with --rate");
    line_bad(&l, "ratelimit api --rate 1/1m --keep-alive 1s -- true",
             "at least the rate's interval");
    line_bad(&l, "ratelimit api available --rate 1/1s",
             "does not apply to 'ratelimit available'");
    /* The library's most permits, 2^32 - 1, not a Java int's. */
    line_ok(&l, "ratelimit api --rate 4294967295/1s -- true");
    assert_int_equal(l.a.rate, 4294967295LL);
    line_bad(&l, "ratelimit api --rate 4294967296/1s -- true",
             "out of range");
}

static void test_args_ratelimit_set_rate(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "ratelimit api set-rate 20/1m");
    assert_int_equal(l.a.action, CR__CLI_RL_SET_RATE);
    assert_int_equal(l.a.rate, 20);
    assert_int_equal(l.a.rate_interval_ms, 60000);
    assert_false(l.a.per_client);
    /* A PER_CLIENT rate for Java's clients needs no keep-alive. */
    line_ok(&l, "ratelimit api set-rate 5/1s --per-client");
    assert_true(l.a.per_client);
    line_ok(&l, "ratelimit api set-rate 5/1s --per-client --keep-alive 1h");
    assert_int_equal(l.a.keep_alive_ms, 3600000);
    line_bad(&l, "ratelimit api set-rate", "missing the rate R/INTERVAL "
             "after 'set-rate'");
    line_bad(&l, "ratelimit api set-rate 5", "invalid rate '5' for set-rate");
    line_bad(&l, "ratelimit api set-rate 5/1s --rate 1/1s", "does not apply");
    line_bad(&l, "ratelimit api set-rate 5/1s --wait 1", "does not apply");
    line_bad(&l, "ratelimit api set-rate 5/1m --keep-alive 1s",
             "at least the rate's interval");
}

static void test_args_slip_of_an_action_is_refused_not_run(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "semaphore s avaliable", "'avaliable' is not an action "
             "of semaphore (set, add or available); did you mean "
             "'available'? A command of that name goes after '--'");
    line_bad(&l, "semaphore s ste 3", "did you mean 'set'");
    line_bad(&l, "barrier b --parties 2 reste", "did you mean 'reset'");
    line_bad(&l, "ratelimit r set-rat 1/1s", "did you mean 'set-rate'");
    line_bad(&l, "ratelimit r availble", "did you mean 'available'");
    /* After "--" the word is the command's, whatever it looks like. */
    line_ok(&l, "semaphore s -- avaliable");
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_string_equal(l.a.cmd[0], "avaliable");
    line_ok(&l, "barrier b --parties 2 -- reste");
    assert_string_equal(l.a.cmd[0], "reste");
    /* A word far from every action is the command to run. */
    line_ok(&l, "semaphore s acquire");
    assert_int_equal(l.a.action, CR__CLI_RUN);
    assert_string_equal(l.a.cmd[0], "acquire");
    line_ok(&l, "ratelimit r --rate 1/1s curl");
    assert_string_equal(l.a.cmd[0], "curl");
}

static void test_action_distance_counts_edits_and_swaps(void **state)
{
    (void)state;
    assert_int_equal(cr__cli_action_distance("set", "set", 2), 0);
    assert_int_equal(cr__cli_action_distance("avaliable", "available", 2),
                     1);
    assert_int_equal(cr__cli_action_distance("reste", "reset", 2), 1);
    assert_int_equal(cr__cli_action_distance("ad", "add", 2), 1);
    assert_int_equal(cr__cli_action_distance("sett", "set", 2), 1);
    assert_int_equal(cr__cli_action_distance("sed", "set", 2), 1);
    assert_int_equal(cr__cli_action_distance("ste", "set", 2), 1);
    assert_int_equal(cr__cli_action_distance("st", "set", 2), 1);
    assert_true(cr__cli_action_distance("cat", "add", 2) > 2);
    assert_true(cr__cli_action_distance("acquire", "available", 2) > 2);
    assert_true(cr__cli_action_distance("x", "available", 2) > 2);
    assert_int_equal(cr__cli_action_distance("", "", 1), 0);
}

static void test_args_unlock_and_delete(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "unlock --force jobs");
    assert_int_equal(l.a.command, CR__CLI_UNLOCK);
    assert_int_equal(l.a.action, CR__CLI_FORCE_UNLOCK);
    assert_true(l.a.force);
    assert_false(l.a.yes);
    assert_string_equal(l.a.name, "jobs");
    line_ok(&l, "unlock jobs --force --yes");
    assert_true(l.a.yes);
    line_bad(&l, "unlock jobs", "unlock takes --force");
    line_bad(&l, "unlock --force jobs -- true", "unexpected '--'");
    line_bad(&l, "unlock --force jobs --wait 1", "--wait does not apply to "
             "unlock");
    line_ok(&l, "delete cronjob");
    assert_int_equal(l.a.command, CR__CLI_DELETE);
    assert_int_equal(l.a.action, CR__CLI_DELETE_OBJECT);
    line_ok(&l, "delete cronjob --yes --json");
    assert_true(l.a.yes);
    line_bad(&l, "delete cronjob --force", "--force does not apply to "
             "delete");
    line_bad(&l, "delete cronjob now", "unexpected argument 'now'");
    line_bad(&l, "--yes delete cronjob", "an option of unlock and delete");
}

static void test_args_latch_refuses_bad_actions(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "latch shards", "missing the latch action");
    line_bad(&l, "latch shards open", "unknown latch action 'open'");
    line_bad(&l, "latch shards set x", "invalid number 'x'");
    line_bad(&l, "latch shards set 0", "invalid number '0' for set");
}

/* ------------------------------------------------------ --kill-after */

static void test_args_kill_after_defaults_to_a_third_of_the_lease(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -- true");
    assert_int_equal(l.a.kill_after_ms, 10000);
    line_ok(&l, "lock jobs --watchdog 3s -- true");
    assert_int_equal(l.a.kill_after_ms, 1000);
    line_ok(&l, "lock jobs --lease 300ms --watchdog 1h -- true");
    assert_int_equal(l.a.kill_after_ms, 100);
    line_ok(&l, "semaphore s --lease 1h -- true");
    assert_int_equal(l.a.kill_after_ms, 10000);
    line_ok(&l, "semaphore s --watchdog 2ms -- true");
    assert_int_equal(l.a.kill_after_ms, 0);
    line_ok(&l, "latch l count");
    assert_int_equal(l.a.kill_after_ms, -1);
}

static void test_args_kill_after_must_be_shorter_than_the_lease(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs --lease 10s --kill-after 9.999s -- true");
    assert_int_equal(l.a.kill_after_ms, 9999);
    line_bad(&l, "lock jobs --lease 10s --kill-after 10s -- true",
             "--kill-after must be shorter than the lease (--lease 10000ms)");
    line_bad(&l, "semaphore s --lease 1s --kill-after 1m -- true",
             "--kill-after must be shorter than the lease");
    line_bad(&l, "lock jobs --kill-after 30s -- true",
             "shorter than the lease (the watchdog's 30000ms)");
    /* With the watchdog, the deadline is two thirds of the lease away
     * just before each renewal. */
    line_ok(&l, "lock jobs --watchdog 3s --kill-after 1999ms -- true");
    assert_int_equal(l.a.kill_after_ms, 1999);
    line_bad(&l, "lock jobs --watchdog 3s --kill-after 2s -- true",
             "two thirds of the watchdog's lease (3000ms)");
    line_ok(&l, "lock jobs --kill-after 0 -- true");
    assert_int_equal(l.a.kill_after_ms, 0);
}

/* ---------------------------------------------------------------- TLS */

static void test_args_tls_options(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--tls --cacert ca.pem --cacertdir /etc/ca --cert c.pem "
                "--key=k.pem --sni redis.example --insecure lock x -- true");
    assert_true(l.a.tls);
    assert_true(l.a.insecure);
    assert_string_equal(l.a.cacert, "ca.pem");
    assert_string_equal(l.a.cacertdir, "/etc/ca");
    assert_string_equal(l.a.cert, "c.pem");
    assert_string_equal(l.a.key, "k.pem");
    assert_string_equal(l.a.sni, "redis.example");
    line_ok(&l, "inspect x --tls");
    assert_true(l.a.tls);
    assert_false(l.a.insecure);
    assert_null(l.a.cacert);
    line_ok(&l, "latch x count --cacert ca.pem");
    assert_string_equal(l.a.cacert, "ca.pem");
}

static void test_args_tls_refuses_empty_values_and_values_for_flags(
    void **state)
{
    line l;

    (void)state;
    line_bad(&l, "--cacert _ lock x -- true", "--cacert is empty");
    line_bad(&l, "--sni= lock x -- true", "--sni is empty");
    line_bad(&l, "--tls=yes lock x -- true", "option --tls takes no value");
    line_bad(&l, "--insecure=1 lock x -- true", "takes no value");
    line_bad(&l, "lock x --key", "option --key needs a value");
}

/* -------------------------------------------------------- credentials */

static void test_args_credential_options(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--user app --password-file /run/pw --sentinel-user sen "
                "--sentinel-password-file=/run/spw --client-name job-1 "
                "lock x --pass-credentials -- true");
    assert_string_equal(l.a.user, "app");
    assert_string_equal(l.a.password_file, "/run/pw");
    assert_string_equal(l.a.sentinel_user, "sen");
    assert_string_equal(l.a.sentinel_password_file, "/run/spw");
    assert_string_equal(l.a.client_name, "job-1");
    assert_true(l.a.pass_credentials);
    line_ok(&l, "--pass-credentials semaphore s -- true");
    assert_true(l.a.pass_credentials);
    line_ok(&l, "lock x -- true");
    assert_null(l.a.user);
    assert_null(l.a.password_file);
    assert_null(l.a.client_name);
    assert_false(l.a.pass_credentials);
    /* An empty name asks for no name at all. */
    line_ok(&l, "--client-name _ inspect x");
    assert_string_equal(l.a.client_name, "");
}

static void test_args_credentials_refuse_bad_input(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "--password-file _ lock x -- true",
             "--password-file is empty");
    line_bad(&l, "--user _ lock x -- true", "--user is empty");
    line_bad(&l, "--client-name bad\x01name lock x -- true",
             "invalid --client-name 'bad?name'");
    line_bad(&l, "--client-name \x7f lock x -- true",
             "invalid --client-name");
    line_bad(&l, "--pass-credentials inspect x",
             "option --pass-credentials does not apply to inspect");
    line_bad(&l, "--pass-credentials latch l await",
             "does not apply to 'latch await'");
    /* There is no option that takes a password on the command line. */
    line_bad(&l, "--password s3cr3t lock x -- true",
             "unknown option '--password'");
    line_bad(&l, "--password=s3cr3t lock x -- true",
             "unknown option '--password'");
}

static void test_args_client_name_must_be_printable_without_spaces(
    void **state)
{
    char name[] = "my job", *argv[] = {"credisson", "--client-name", name,
                                       "inspect", "x", NULL};
    char err[CR__CLI_ERR_MAX];
    cr__cli_args a;

    (void)state;
    assert_int_equal(cr__cli_parse_args(5, argv, &a, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "invalid --client-name 'my job'"));
    name[2] = '\t';
    assert_int_equal(cr__cli_parse_args(5, argv, &a, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "'my?job'"));
    name[2] = '_';
    assert_int_equal(cr__cli_parse_args(5, argv, &a, err, sizeof(err)), 0);
}

/* ---------------------------------------------------------------- URLs */

/* Checks where cr__cli_url_password finds the password of url: `want`
 * is the text it must span, NULL when there is none. */
static void password_at(const char *url, const char *want)
{
    size_t off = 99, len = 99;
    bool found = cr__cli_url_password(url, &off, &len);

    if (want == NULL) {
        assert_false(found);
        assert_int_equal(len, 0);
        return;
    }
    assert_true(found);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(url + off, want, len);
}

static void test_url_password_is_found_as_the_parser_reads_it(void **state)
{
    (void)state;
    password_at("redis://:pw@host:1/2", "pw");
    password_at("redis://user:pw@host", "pw");
    password_at("rediss://user:p:w@host", "p:w");
    password_at("redis://user:p@ss@host:6379", "p@ss");
    password_at("redis-sentinel://u:pw@a:1,b:2/master", "pw");
    password_at("redis-cluster://:pw@a,b?sharded=on", "pw");
    password_at("unix://:pw@/run/redis.sock?db=1", "pw");
    password_at("redis://user@host", NULL);
    password_at("redis://user:@host", NULL);
    password_at("redis://host:6379", NULL);
    password_at("redis://host/0?x=a@b", NULL);
    password_at("no scheme:pw@host", NULL);
    password_at("", NULL);
}

static void test_url_redacted_hides_only_the_password(void **state)
{
    char buf[64], small[12];

    (void)state;
    cr__cli_url_redacted("redis://app:s3cr3t@h:1/2", buf, sizeof(buf));
    assert_string_equal(buf, "redis://app:***@h:1/2");
    cr__cli_url_redacted("redis://user:p@ss@host", buf, sizeof(buf));
    assert_string_equal(buf, "redis://user:***@host");
    cr__cli_url_redacted("unix://:pw@/run/r.sock?db=1", buf, sizeof(buf));
    assert_string_equal(buf, "unix://:***@/run/r.sock?db=1");
    cr__cli_url_redacted("redis://host:6379", buf, sizeof(buf));
    assert_string_equal(buf, "redis://host:6379");
    /* Cut short, never with a piece of the password. */
    cr__cli_url_redacted("redis://:secretpw@h", small, sizeof(small));
    assert_string_equal(small, "redis://:**");
}

/* Checks the TLS form of url: `want`, or NULL when it has none. */
static void tls_form(const char *url, const char *want)
{
    char buf[64];

    if (want == NULL) {
        assert_int_equal(cr__cli_tls_url(url, buf, sizeof(buf)), -1);
        return;
    }
    assert_int_equal(cr__cli_tls_url(url, buf, sizeof(buf)), 0);
    assert_string_equal(buf, want);
}

static void test_tls_url_forms(void **state)
{
    char small[16];

    (void)state;
    tls_form("redis://h:1/2", "rediss://h:1/2");
    tls_form("REDIS://h", "REDISs://h");
    tls_form("redis-sentinel://a,b/m", "rediss-sentinel://a,b/m");
    tls_form("redis-cluster://a:1", "rediss-cluster://a:1");
    tls_form("rediss://h", "rediss://h");
    tls_form("rediss-cluster://a", "rediss-cluster://a");
    tls_form("unix:///tmp/s", NULL);
    tls_form("redis-unix://x", NULL);
    tls_form("redisx://h", NULL);
    tls_form("h:6379", NULL);
    assert_int_equal(cr__cli_tls_url("redis://0123456", small,
                                     sizeof(small)), -1);
    assert_int_equal(cr__cli_tls_url("redis://012345", small,
                                     sizeof(small)), 0);
    assert_string_equal(small, "rediss://012345");
}

/* ------------------------------------------------------ help, version */

static void test_args_help_forms(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--help");
    assert_true(l.a.help);
    assert_int_equal(l.a.command, CR__CLI_NONE);
    line_ok(&l, "help lock");
    assert_true(l.a.help);
    assert_int_equal(l.a.command, CR__CLI_LOCK);
    line_ok(&l, "semaphore -h");
    assert_true(l.a.help);
    assert_int_equal(l.a.command, CR__CLI_SEMAPHORE);
    line_bad(&l, "help nothing", "unknown command");
}

static void test_args_version_forms(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--version");
    assert_int_equal(l.a.command, CR__CLI_VERSION);
    line_ok(&l, "version");
    assert_int_equal(l.a.command, CR__CLI_VERSION);
    line_ok(&l, "lock x -V -- true");
    assert_int_equal(l.a.command, CR__CLI_VERSION);
}

static void test_args_inspect(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "inspect my{lock} --json");
    assert_int_equal(l.a.command, CR__CLI_INSPECT);
    assert_int_equal(l.a.action, CR__CLI_SHOW);
    assert_string_equal(l.a.name, "my{lock}");
    assert_true(l.a.json);
}

/* ------------------------------------------- getopt_long's forms, stages */

static void test_args_short_options_bundle(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -vw5 -- true");
    assert_true(l.a.verbose);
    assert_int_equal(l.a.wait_ms, 5000);
    assert_int_equal(l.a.cmd_argc, 1);
    line_ok(&l, "lock jobs -vw 250ms true");
    assert_true(l.a.verbose);
    assert_int_equal(l.a.wait_ms, 250);
    assert_string_equal(l.a.cmd[0], "true");
    /* -V wins over everything, as --version does. */
    line_ok(&l, "-vV");
    assert_true(l.a.verbose);
    assert_int_equal(l.a.command, CR__CLI_VERSION);
    line_ok(&l, "lock -vh");
    assert_true(l.a.help);
    assert_true(l.a.verbose);
    assert_int_equal(l.a.command, CR__CLI_LOCK);
    line_ok(&l, "-hv semaphore");
    assert_true(l.a.help);
    assert_int_equal(l.a.command, CR__CLI_SEMAPHORE);
}

static void test_args_short_option_value_attached(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -w5 -- true");
    assert_int_equal(l.a.wait_ms, 5000);
    line_ok(&l, "lock -w0 jobs true");
    assert_int_equal(l.a.wait_ms, 0);
    assert_string_equal(l.a.name, "jobs");
    line_ok(&l, "lock jobs -w1.5m true");
    assert_int_equal(l.a.wait_ms, 90000);
    line_ok(&l, "latch l await -wforever");
    assert_int_equal(l.a.wait_ms, CR__CLI_FOREVER);
    line_bad(&l, "lock jobs -w5x -- true", "invalid duration '5x' for --wait");
    line_bad(&l, "lock jobs -vw", "option -w (--wait) needs a value");
}

static void test_args_long_option_value_after_equals(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--url=redis://h:1 --timeout=250ms lock jobs --wait=5 "
                "--lease=1m true");
    assert_string_equal(l.a.url, "redis://h:1");
    assert_int_equal(l.a.command_timeout_ms, 250);
    assert_int_equal(l.a.wait_ms, 5000);
    assert_int_equal(l.a.lease_ms, 60000);
    line_ok(&l, "semaphore s --permits=3 -- true");
    assert_int_equal(l.a.permits, 3);
    line_bad(&l, "lock jobs --wait= -- true", "--wait is empty");
}

static void test_args_long_options_are_not_abbreviated(void **state)
{
    line l;

    (void)state;
    /* getopt_long would take each of these for the one option they
     * begin; the tool knows its options by their whole names only. */
    line_bad(&l, "lock jobs --wai 5 -- true", "unknown option '--wai'");
    line_bad(&l, "--ur redis://h lock jobs -- true", "unknown option '--ur'");
    line_bad(&l, "--sentinel x lock jobs -- true",
             "unknown option '--sentinel'");
    line_bad(&l, "--pass semaphore s -- true", "unknown option '--pass'");
    line_bad(&l, "lock jobs --jso=1 -- true", "unknown option '--jso'");
    line_bad(&l, "--ur=redis://:secret@h lock jobs -- true",
             "unknown option '--ur'");
    assert_null(strstr(l.err, "secret"));
    line_bad(&l, "--password s3cr3t lock x -- true", "unknown option");
    assert_null(strstr(l.err, "s3cr3t"));
}

static void test_args_missing_name(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "lock -- true", "missing NAME after 'lock'");
    assert_non_null(strstr(l.err, "lock NAME [OPTIONS] [--] CMD"));
    line_bad(&l, "lock --wait 5 -- true", "missing NAME after 'lock'");
    line_bad(&l, "semaphore -w5", "missing NAME after 'semaphore'");
    line_bad(&l, "semaphore -- true", "missing NAME after 'semaphore'");
    line_bad(&l, "latch -v", "missing NAME after 'latch'");
    line_bad(&l, "inspect --json", "missing NAME after 'inspect'");
    assert_non_null(strstr(l.err, "inspect NAME"));
}

static void test_args_command_that_looks_like_an_option(void **state)
{
    line l;

    (void)state;
    /* Without '--', a word starting with '-' after NAME is an option of
     * the tool; an unknown one is refused, saying where a command that
     * starts with '-' goes. */
    line_bad(&l, "lock jobs -x", "unknown option '-x' for lock");
    assert_non_null(strstr(l.err, "after '--'"));
    line_bad(&l, "lock jobs --rm -rf", "unknown option '--rm' for lock");
    assert_non_null(strstr(l.err, "after '--'"));
    line_bad(&l, "semaphore s -w5 -x", "unknown option '-x' for semaphore");
    assert_non_null(strstr(l.err, "after '--'"));
    /* With a '--' further on, the word was meant for the tool. */
    line_bad(&l, "lock jobs -x -- true", "unknown option '-x' for lock");
    assert_null(strstr(l.err, "after '--'"));
    /* After '--', every word is the command's. */
    line_ok(&l, "lock jobs -- -x");
    assert_int_equal(l.a.cmd_argc, 1);
    assert_string_equal(l.a.cmd[0], "-x");
    line_ok(&l, "semaphore s -w5 -- --help -V");
    assert_false(l.a.help);
    assert_int_equal(l.a.command, CR__CLI_SEMAPHORE);
    assert_int_equal(l.a.wait_ms, 5000);
    assert_string_equal(l.a.cmd[0], "--help");
    /* So is every word after the command's first. */
    line_ok(&l, "lock jobs make -w5 --help");
    assert_int_equal(l.a.wait_ms, CR__CLI_FOREVER);
    assert_false(l.a.help);
    assert_int_equal(l.a.cmd_argc, 3);
}

static void test_args_unknown_option_at_each_stage(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "--frob lock jobs -- true", "unknown option '--frob'");
    line_bad(&l, "lock --frob jobs -- true", "unknown option '--frob' for "
                                              "lock");
    line_bad(&l, "lock jobs --frob -- true", "unknown option '--frob' for "
                                              "lock");
    line_bad(&l, "semaphore s set 2 --frob", "unknown option '--frob' for "
                                              "semaphore");
    line_bad(&l, "latch l await -k", "unknown option '-k' for latch");
    line_bad(&l, "inspect x --frob", "unknown option '--frob' for inspect");
    line_bad(&l, "-vk lock jobs -- true", "unknown option '-k' in '-vk'");
    line_bad(&l, "lock jobs -vk -- true", "unknown option '-k' in '-vk'");
    line_bad(&l, "lock jobs --json=yes -- true", "--json takes no value");
}

static void test_args_command_option_before_command_word(void **state)
{
    line l;

    (void)state;
    line_bad(&l, "--wait 5 lock jobs -- true",
             "option --wait comes after the command word");
    line_bad(&l, "-w5 lock jobs -- true",
             "option -w comes after the command word");
    line_bad(&l, "-vw 5 semaphore s -- true",
             "option -w comes after the command word");
    line_bad(&l, "--fair lock jobs -- true", "option --fair comes after");
    assert_non_null(strstr(l.err, "lock"));
    line_bad(&l, "--permits=2 semaphore s -- true",
             "option --permits comes after");
    line_bad(&l, "--kill-after 1s lock jobs -- true",
             "option --kill-after comes after");
    /* The options of every command stay where they were allowed. */
    line_ok(&l, "--pass-credentials -v --json --timeout 1s lock jobs "
                "-- true");
    assert_true(l.a.pass_credentials);
    assert_int_equal(l.a.command_timeout_ms, 1000);
}

static void test_args_argv_is_left_in_place(void **state)
{
    line l;
    int k;

    (void)state;
    /* Nothing is moved: the command is argv's own tail, and --url (the
     * last one given) points into its own word, the one the caller
     * blots its password out of. */
    line_ok(&l, "--url redis://:pw@h lock jobs -vw5 --url=redis://:pw2@h "
                "make -j2 --url x");
    for (k = 1; k <= 10; k++)
        assert_ptr_equal(l.argv[k], l.words[k]);
    assert_ptr_equal(l.a.url, l.words[6] + 6);
    assert_ptr_equal(l.a.cmd, &l.argv[7]);
    assert_int_equal(l.a.cmd_argc, 4);
}

static void test_args_negative_number_after_options(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "semaphore s add --json -v -2");
    assert_int_equal(l.a.action, CR__CLI_SEM_ADD);
    assert_int_equal(l.a.value, -2);
    assert_true(l.a.json);
    line_bad(&l, "semaphore s add -v -x", "unknown option '-x'");
}

static void test_args_parse_after_a_failed_bundle(void **state)
{
    line l;

    (void)state;
    /* A parse that stops inside a word leaves nothing for the next. */
    line_bad(&l, "lock jobs -vkw5 -- true", "unknown option '-k'");
    line_ok(&l, "lock jobs -w5 -- true");
    assert_int_equal(l.a.wait_ms, 5000);
    assert_false(l.a.verbose);
}

/* ------------------------------------- flock's forms, the two timeouts */

static void test_args_nonblock_is_a_wait_of_zero(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -n -- true");
    assert_int_equal(l.a.wait_ms, 0);
    line_ok(&l, "semaphore s --nonblock true");
    assert_int_equal(l.a.wait_ms, 0);
    line_ok(&l, "latch l await -n");
    assert_int_equal(l.a.wait_ms, 0);
    line_bad(&l, "lock jobs -n -w5 -- true", "exclude each other");
    line_bad(&l, "latch l await -n --timeout 5", "exclude each other");
    line_bad(&l, "-n lock jobs -- true", "comes after the command word");
    line_bad(&l, "semaphore s -n set 3", "does not apply");
}

static void test_args_conflict_exit_code(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "lock jobs -- true");
    assert_int_equal(l.a.conflict_exit_code, -1);
    line_ok(&l, "lock jobs -nE0 -- true");
    assert_int_equal(l.a.conflict_exit_code, 0);
    assert_int_equal(l.a.wait_ms, 0);
    line_ok(&l, "lock jobs -E 3 true");
    assert_int_equal(l.a.conflict_exit_code, 3);
    line_ok(&l, "latch l await --conflict-exit-code=255");
    assert_int_equal(l.a.conflict_exit_code, 255);
    line_bad(&l, "lock jobs -E 256 -- true", "out of range (0..255)");
    line_bad(&l, "lock jobs -E -1 -- true", "invalid number");
    line_bad(&l, "lock jobs -Ex -- true", "-E takes a number");
    line_bad(&l, "latch l count -E 1", "does not apply");
}

static void test_args_quiet_and_status_switches(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "-q lock jobs -- true");
    assert_true(l.a.quiet);
    assert_false(l.a.no_status);
    line_ok(&l, "lock jobs --no-status -qn -- true");
    assert_true(l.a.quiet);
    assert_true(l.a.no_status);
    line_ok(&l, "latch l await --must-exist");
    assert_true(l.a.must_exist);
    line_bad(&l, "latch l count --must-exist", "does not apply");
    line_bad(&l, "--must-exist latch l await", "comes after the command");
}

static void test_args_command_timeout_and_the_old_timeout(void **state)
{
    line l;

    (void)state;
    line_ok(&l, "--command-timeout 2s lock jobs --wait 5 -- true");
    assert_int_equal(l.a.command_timeout_ms, 2000);
    assert_int_equal(l.a.wait_ms, 5000);
    line_ok(&l, "lock jobs --command-timeout=1s -- true");
    assert_int_equal(l.a.command_timeout_ms, 1000);
    /* The old spelling, where it says one thing only. */
    line_ok(&l, "--timeout 2s lock jobs -- true");
    assert_int_equal(l.a.command_timeout_ms, 2000);
    line_ok(&l, "latch l await --timeout 30s");
    assert_int_equal(l.a.wait_ms, 30000);
    assert_int_equal(l.a.command_timeout_ms, -1);
    line_ok(&l, "semaphore s --timeout 1s set 3");
    assert_int_equal(l.a.command_timeout_ms, 1000);
    line_ok(&l, "inspect x --timeout 100ms");
    assert_int_equal(l.a.command_timeout_ms, 100);
    /* Where something waits, after the command word: refused. */
    line_bad(&l, "lock jobs --timeout 5 -- true", "ambiguous");
    line_bad(&l, "semaphore s --timeout 5 true", "ambiguous");
    line_bad(&l, "latch l --timeout 5 await", "ambiguous");
    line_bad(&l, "--command-timeout 0 lock jobs true", "more than 0");
}

/* Help is made from the parser's table: every option it lists for a
 * command is accepted after that command's word, and every option the
 * table has is listed for some command or for all. */
/* The lines an option of command c is tried in ("%s" stands for the
 * option and its value): one of them must take it. */
static const char *const *option_lines(cr__cli_command c)
{
    static const char *const lock[] = {"lock jobs %s -- true",
                                       "lock jobs %s", NULL};
    static const char *const sem[] = {"semaphore s %s -- true", NULL};
    static const char *const latch[] = {"latch l await %s", NULL};
    static const char *const barrier[] = {
        "barrier b --parties 2 %s -- true", "barrier b --parties 2 %s",
        NULL};
    static const char *const rate[] = {
        "ratelimit r --rate 1/1s --keep-alive 1m %s -- true",
        "ratelimit r set-rate 1/1s %s", NULL};
    static const char *const unlock[] = {"unlock --force x %s", NULL};
    static const char *const del[] = {"delete x %s", NULL};
    static const char *const none[] = {NULL};

    switch (c) {
    case CR__CLI_LOCK: return lock;
    case CR__CLI_SEMAPHORE: return sem;
    case CR__CLI_LATCH: return latch;
    case CR__CLI_BARRIER: return barrier;
    case CR__CLI_RATELIMIT: return rate;
    case CR__CLI_UNLOCK: return unlock;
    case CR__CLI_DELETE: return del;
    default: return none;
    }
}

static void test_args_option_docs_match_the_parser(void **state)
{
    const cr__cli_command_doc *cmds;
    cr__cli_option_doc docs[64];
    char opt[64], text[256];
    size_t n, ncmds, i, k;
    line l;

    (void)state;
    cmds = cr__cli_command_docs(&ncmds);
    for (k = 0; k < ncmds; k++) {
        const char *const *forms = option_lines(cmds[k].command);

        if (cmds[k].command == CR__CLI_NONE ||
            cmds[k].command == CR__CLI_VERSION ||
            cmds[k].command == CR__CLI_INSPECT)
            continue;
        n = cr__cli_option_docs(cmds[k].command, docs, 64);
        assert_true(n > 0 && n <= 64);
        for (i = 0; i < n; i++) {
            const char *v = docs[i].arg == NULL                    ? ""
                            : strcmp(docs[i].arg, "D") == 0        ? " 1s"
                            : strcmp(docs[i].arg, "R/INTERVAL") == 0 ? " 2/1s"
                                                                   : " 3";
            bool taken = false;
            size_t f;

            /* Options that exclude others are tried alone. */
            snprintf(opt, sizeof(opt), "--%s%s", docs[i].name, v);
            for (f = 0; forms[f] != NULL && !taken; f++) {
                snprintf(text, sizeof(text), forms[f], opt);
                taken = parse_line(text, l.words, l.argv, &l.a, l.err) == 0;
            }
            if (!taken)
                print_error("%s: no line takes %s (%s)\n", cmds[k].name,
                            opt, l.err);
            assert_true(taken);
        }
    }
    n = cr__cli_option_docs(CR__CLI_NONE, docs, 64);
    assert_true(n > 0);
    for (i = 0; i < n; i++)
        assert_non_null(docs[i].help);
    assert_true(cr__cli_option_docs(CR__CLI_INSPECT, docs, 64) == 0);
}

/* Writes form `f` of a command's help as a line the parser can read:
 * NAME becomes "x", K and N "3", R/INTERVAL "2/1s", optional parts
 * ([OPTIONS], [--json], [--yes], "[-- CMD [ARG...]]") are left out and
 * "[--] CMD [ARG...]" becomes "-- true". */
static void form_line(const char *cmd, const char *f, size_t flen,
                      char *out, size_t len)
{
    static const char *const subst[][2] = {
        {"[--] CMD [ARG...]", "-- true"}, {"[-- CMD [ARG...]]", ""},
        {"[OPTIONS]", ""}, {"[--json]", ""}, {"[--yes]", ""},
        {"R/INTERVAL", "2/1s"}, {"NAME", "x"}, {" K", " 3"}, {" N", " 3"}};
    size_t n = (size_t)snprintf(out, len, "%s ", cmd), i;

    for (i = 0; i < flen && n + 1 < len;) {
        size_t s, matched = 0;

        for (s = 0; s < sizeof(subst) / sizeof(subst[0]) && !matched; s++) {
            size_t sl = strlen(subst[s][0]);

            if (i + sl <= flen && memcmp(f + i, subst[s][0], sl) == 0 &&
                (f[i + sl] == ' ' || i + sl == flen || f[i + sl] == '\n')) {
                n += (size_t)snprintf(out + n, len - n, "%s", subst[s][1]);
                matched = sl;
            }
        }
        if (matched == 0)
            out[n++] = f[i++];
        else
            i += matched;
    }
    out[n] = '\0';
    /* Spaces left by what was taken out. */
    for (i = 0; out[i] != '\0';) {
        if (out[i] == ' ' && (out[i + 1] == ' ' || out[i + 1] == '\0'))
            memmove(out + i, out + i + 1, strlen(out + i));
        else
            i++;
    }
}

/* Every command and action help lists is one the parser takes, and every
 * command the parser knows is listed. */
static void test_args_command_docs_list_what_the_parser_takes(void **state)
{
    const cr__cli_command_doc *cmds;
    bool listed[16] = {false};
    char piece[128], text[160];
    size_t ncmds, k;
    line l;

    (void)state;
    cmds = cr__cli_command_docs(&ncmds);
    for (k = 0; k < ncmds; k++) {
        const char *f = cmds[k].forms;

        assert_true((size_t)cmds[k].command < 16);
        listed[cmds[k].command] = true;
        assert_non_null(cmds[k].summary);
        if (cmds[k].command == CR__CLI_NONE ||
            cmds[k].command == CR__CLI_VERSION)
            continue;
        assert_string_equal(cmds[k].name,
                            cr__cli_command_name(cmds[k].command));
        while (*f != '\0') {
            size_t flen = strcspn(f, "\n"), plen;
            const char *p = f, *end = f + flen;

            /* "NAME a K | b | c": each piece after the first is another
             * action of the same NAME. */
            while (p < end) {
                const char *bar = strstr(p, " | ");

                plen = bar != NULL && bar < end ? (size_t)(bar - p)
                                                : (size_t)(end - p);
                if (p == f)
                    snprintf(piece, sizeof(piece), "%.*s", (int)plen, p);
                else
                    snprintf(piece, sizeof(piece), "NAME %.*s", (int)plen, p);
                form_line(cmds[k].name, piece, strlen(piece), text,
                          sizeof(text));
                if (parse_line(text, l.words, l.argv, &l.a, l.err) != 0)
                    print_error("help's '%s' read as '%s': %s\n", piece,
                                text, l.err);
                assert_string_equal(l.err, "");
                p += plen + (p + plen < end ? 3 : 0);
            }
            f += flen + (f[flen] == '\n');
        }
    }
    for (k = CR__CLI_LOCK; k <= CR__CLI_DELETE; k++) {
        if (!listed[k])
            print_error("command %s is not in the table\n",
                        cr__cli_command_name((cr__cli_command)k));
        assert_true(listed[k]);
    }
}

static void test_args_tolerates_missing_error_buffer(void **state)
{
    char *argv[] = {"credisson", "frob", NULL};
    cr__cli_args a;

    (void)state;
    assert_int_equal(cr__cli_parse_args(2, argv, &a, NULL, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_plain_number_is_seconds),
        cmocka_unit_test(test_duration_accepts_units),
        cmocka_unit_test(test_duration_accepts_fractions_rounded_down),
        cmocka_unit_test(test_duration_accepts_compound_forms),
        cmocka_unit_test(test_duration_refuses_malformed_compound_forms),
        cmocka_unit_test(test_duration_forever_only_where_allowed),
        cmocka_unit_test(test_duration_accepts_one_hundred_years),
        cmocka_unit_test(test_duration_refuses_overflowing_digits),
        cmocka_unit_test(test_duration_refuses_malformed),
        cmocka_unit_test(test_count_accepts_range),
        cmocka_unit_test(test_count_refuses_bad_input_and_keeps_output),
        cmocka_unit_test(test_args_lock_with_separator),
        cmocka_unit_test(test_args_lock_first_word_after_name_starts_command),
        cmocka_unit_test(
            test_args_lock_options_after_separator_belong_to_command),
        cmocka_unit_test(test_args_lock_options),
        cmocka_unit_test(test_args_lock_refuses_conflicting_kinds),
        cmocka_unit_test(test_args_lock_refuses_zero_lease),
        cmocka_unit_test(test_args_lock_refuses_malformed_duration),
        cmocka_unit_test(test_args_lock_without_a_command_holds),
        cmocka_unit_test(test_args_lock_refuses_missing_or_empty_name),
        cmocka_unit_test(test_args_global_options_before_and_after_command),
        cmocka_unit_test(test_args_refuses_missing_command),
        cmocka_unit_test(test_args_refuses_unknown_command),
        cmocka_unit_test(test_args_refuses_unknown_option),
        cmocka_unit_test(test_args_unknown_option_error_hides_its_value),
        cmocka_unit_test(test_args_error_quotes_are_cut_and_printable),
        cmocka_unit_test(test_args_refuses_option_without_value),
        cmocka_unit_test(test_args_refuses_option_of_another_command),
        cmocka_unit_test(test_args_refuses_extra_arguments),
        cmocka_unit_test(test_args_semaphore_run),
        cmocka_unit_test(test_args_semaphore_actions),
        cmocka_unit_test(test_args_semaphore_refuses_bad_actions),
        cmocka_unit_test(test_args_latch_actions),
        cmocka_unit_test(test_args_latch_await_timeout_is_the_wait),
        cmocka_unit_test(test_args_latch_refuses_bad_actions),
        cmocka_unit_test(test_args_help_forms),
        cmocka_unit_test(test_args_version_forms),
        cmocka_unit_test(test_args_inspect),
        cmocka_unit_test(test_args_tolerates_missing_error_buffer),
        cmocka_unit_test(test_args_short_options_bundle),
        cmocka_unit_test(test_args_short_option_value_attached),
        cmocka_unit_test(test_args_long_option_value_after_equals),
        cmocka_unit_test(test_args_long_options_are_not_abbreviated),
        cmocka_unit_test(test_args_missing_name),
        cmocka_unit_test(test_args_command_that_looks_like_an_option),
        cmocka_unit_test(test_args_unknown_option_at_each_stage),
        cmocka_unit_test(test_args_command_option_before_command_word),
        cmocka_unit_test(test_args_argv_is_left_in_place),
        cmocka_unit_test(test_args_negative_number_after_options),
        cmocka_unit_test(test_args_parse_after_a_failed_bundle),
        cmocka_unit_test(test_args_nonblock_is_a_wait_of_zero),
        cmocka_unit_test(test_args_conflict_exit_code),
        cmocka_unit_test(test_args_quiet_and_status_switches),
        cmocka_unit_test(test_args_command_timeout_and_the_old_timeout),
        cmocka_unit_test(test_args_option_docs_match_the_parser),
        cmocka_unit_test(test_args_command_docs_list_what_the_parser_takes),
        cmocka_unit_test(test_args_kill_after_defaults_to_a_third_of_the_lease),
        cmocka_unit_test(test_args_kill_after_must_be_shorter_than_the_lease),
        cmocka_unit_test(test_args_tls_options),
        cmocka_unit_test(test_args_barrier_forms),
        cmocka_unit_test(test_args_ratelimit_forms),
        cmocka_unit_test(test_args_ratelimit_set_rate),
        cmocka_unit_test(test_args_slip_of_an_action_is_refused_not_run),
        cmocka_unit_test(test_action_distance_counts_edits_and_swaps),
        cmocka_unit_test(test_args_unlock_and_delete),
        cmocka_unit_test(
            test_args_tls_refuses_empty_values_and_values_for_flags),
        cmocka_unit_test(test_args_credential_options),
        cmocka_unit_test(test_args_credentials_refuse_bad_input),
        cmocka_unit_test(
            test_args_client_name_must_be_printable_without_spaces),
        cmocka_unit_test(test_url_password_is_found_as_the_parser_reads_it),
        cmocka_unit_test(test_url_redacted_hides_only_the_password),
        cmocka_unit_test(test_tls_url_forms),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
