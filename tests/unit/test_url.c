/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the Redis URL parser. Each test checks one behaviour: a form
 * of URL that must be understood, a mistake that must be refused with a
 * useful reason, or how a parsed URL is written back for logs. Every refusal
 * is also checked to leave the output zeroed, and valgrind checks that
 * nothing allocated on the way is leaked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "names.h"
#include "url.h"

#define ERR_LEN 256

/* Parse s, which must succeed, into *u. */
static void parse_ok(const char *s, cr__url *u)
{
    char err[ERR_LEN] = "";
    cr_status rc = cr__url_parse(s, u, err, sizeof(err));

    if (rc != CR_OK)
        print_error("parsing '%s' failed: %s\n", s, err);
    assert_int_equal(rc, CR_OK);
}

/* Check that every field of u is zero, as after a failed parse. */
static void assert_zeroed(const cr__url *u)
{
    assert_false(u->is_unix);
    assert_null(u->host);
    assert_int_equal(u->port, 0);
    assert_null(u->path);
    assert_null(u->user);
    assert_null(u->password);
    assert_int_equal(u->db, 0);
}

/* Parse s, which must be refused with CR_EINVAL and a reason containing
 * `needle` (when not NULL), and check the output is left zeroed. */
static void expect_invalid(const char *s, const char *needle)
{
    char err[ERR_LEN] = "";
    cr__url u;
    cr_status rc;

    memset(&u, 0xab, sizeof(u));
    rc = cr__url_parse(s, &u, err, sizeof(err));
    if (rc != CR_EINVAL)
        print_error("'%s' was not refused (rc %d)\n", s ? s : "(null)", rc);
    assert_int_equal(rc, CR_EINVAL);
    assert_zeroed(&u);
    assert_true(err[0] != '\0');
    assert_null(strchr(err, '\n'));
    if (needle != NULL && strstr(err, needle) == NULL)
        print_error("reason for '%s' is '%s', lacking '%s'\n",
                    s ? s : "(null)", err, needle);
    if (needle != NULL)
        assert_non_null(strstr(err, needle));
}

static void test_url_parses_host_only(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://localhost", &u);
    assert_false(u.is_unix);
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_null(u.user);
    assert_null(u.password);
    assert_null(u.path);
    cr__url_clear(&u);
}

static void test_url_parses_host_and_port(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://127.0.0.1:6380", &u);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 0);
    cr__url_clear(&u);
}

static void test_url_parses_host_port_and_db(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://redis.example.com:7000/5", &u);
    assert_string_equal(u.host, "redis.example.com");
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.db, 5);
    cr__url_clear(&u);
}

static void test_url_parses_db_without_port(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://host/12", &u);
    assert_string_equal(u.host, "host");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 12);
    cr__url_clear(&u);
}

static void test_url_accepts_trailing_slash(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://host:6379/", &u);
    assert_string_equal(u.host, "host");
    assert_int_equal(u.db, 0);
    cr__url_clear(&u);
}

static void test_url_accepts_uppercase_scheme(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("REDIS://host", &u);
    assert_string_equal(u.host, "host");
    cr__url_clear(&u);
    parse_ok("Unix:///tmp/r.sock", &u);
    assert_true(u.is_unix);
    cr__url_clear(&u);
}

static void test_url_parses_password_only(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://:secret@host", &u);
    assert_null(u.user);
    assert_string_equal(u.password, "secret");
    assert_string_equal(u.host, "host");
    assert_int_equal(u.port, 6379);
    cr__url_clear(&u);
}

static void test_url_parses_user_password_and_db(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://alice:wonder@db.local:6390/3", &u);
    assert_string_equal(u.user, "alice");
    assert_string_equal(u.password, "wonder");
    assert_string_equal(u.host, "db.local");
    assert_int_equal(u.port, 6390);
    assert_int_equal(u.db, 3);
    cr__url_clear(&u);
}

static void test_url_parses_user_without_password(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://bob@host", &u);
    assert_string_equal(u.user, "bob");
    assert_null(u.password);
    cr__url_clear(&u);
}

static void test_url_treats_empty_password_as_absent(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://bob:@host", &u);
    assert_string_equal(u.user, "bob");
    assert_null(u.password);
    cr__url_clear(&u);
}

static void test_url_percent_decodes_user_and_password(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://me%40corp:p%40ss%3aw%2Fd%25@host", &u);
    assert_string_equal(u.user, "me@corp");
    assert_string_equal(u.password, "p@ss:w/d%");
    cr__url_clear(&u);
}

static void test_url_keeps_unencoded_at_in_password(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://:p@ss@host:6380", &u);
    assert_string_equal(u.password, "p@ss");
    assert_string_equal(u.host, "host");
    assert_int_equal(u.port, 6380);
    cr__url_clear(&u);
}

static void test_url_refuses_malformed_percent_escape(void **state)
{
    (void)state;
    expect_invalid("redis://:ab%4@host", "percent-escape in the password");
    expect_invalid("redis://:ab%zz@host", "percent-escape in the password");
    expect_invalid("redis://:ab%@host", "percent-escape in the password");
    expect_invalid("redis://us%g1:pw@host", "percent-escape in the user");
}

static void test_url_refuses_percent_encoded_nul(void **state)
{
    (void)state;
    expect_invalid("redis://:ab%00cd@host", "%00");
}

static void test_url_parses_ipv6_in_brackets(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://[::1]:6380/2", &u);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 2);
    cr__url_clear(&u);
}

static void test_url_parses_ipv6_without_port(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://u:p@[2001:db8::7]", &u);
    assert_string_equal(u.host, "2001:db8::7");
    assert_int_equal(u.port, 6379);
    assert_string_equal(u.user, "u");
    assert_string_equal(u.password, "p");
    cr__url_clear(&u);
}

static void test_url_refuses_ipv6_without_brackets(void **state)
{
    (void)state;
    expect_invalid("redis://::1:6379", "brackets");
    expect_invalid("redis://fe80::1", "brackets");
}

static void test_url_refuses_unclosed_bracket(void **state)
{
    (void)state;
    expect_invalid("redis://[::1:6379", "']'");
}

static void test_url_refuses_non_ipv6_in_brackets(void **state)
{
    (void)state;
    expect_invalid("redis://[localhost]:6379", "IPv6");
}

static void test_url_parses_db_in_query(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://host:6379?db=4", &u);
    assert_int_equal(u.db, 4);
    cr__url_clear(&u);
    parse_ok("redis://host/?db=7", &u);
    assert_int_equal(u.db, 7);
    cr__url_clear(&u);
}

static void test_url_refuses_db_in_path_and_query(void **state)
{
    (void)state;
    expect_invalid("redis://host/1?db=2", "more than once");
    expect_invalid("redis://host?db=1&db=2", "more than once");
}

static void test_url_refuses_unknown_query_parameter(void **state)
{
    (void)state;
    expect_invalid("redis://host?timeout=5", "'timeout'");
    expect_invalid("unix:///tmp/r.sock?x%20y=1", "unknown query parameter");
}

static void test_url_refuses_query_db_without_value(void **state)
{
    (void)state;
    expect_invalid("redis://host?db", "no value");
    expect_invalid("redis://host?db=", "db must be");
}

static void test_url_parses_unix_socket(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("unix:///tmp/redis.sock", &u);
    assert_true(u.is_unix);
    assert_string_equal(u.path, "/tmp/redis.sock");
    assert_null(u.host);
    assert_int_equal(u.port, 0);
    assert_int_equal(u.db, 0);
    assert_null(u.user);
    assert_null(u.password);
    cr__url_clear(&u);
}

static void test_url_parses_unix_socket_with_auth_and_db(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("unix://user:pw@/tmp/redis.sock?db=2", &u);
    assert_true(u.is_unix);
    assert_string_equal(u.path, "/tmp/redis.sock");
    assert_string_equal(u.user, "user");
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.db, 2);
    cr__url_clear(&u);
    parse_ok("unix://:p%40w@/var/run/r.sock", &u);
    assert_null(u.user);
    assert_string_equal(u.password, "p@w");
    cr__url_clear(&u);
}

static void test_url_refuses_unix_without_absolute_path(void **state)
{
    (void)state;
    expect_invalid("unix://", "absolute socket path");
    expect_invalid("unix://tmp/redis.sock", "absolute socket path");
    expect_invalid("unix://localhost/tmp/redis.sock", "absolute socket path");
    expect_invalid("unix://?db=1", "absolute socket path");
    expect_invalid("unix://u:p@?db=1", "absolute socket path");
    expect_invalid("unix:///", "absolute socket path");
}

static void test_url_refuses_null(void **state)
{
    (void)state;
    expect_invalid(NULL, "NULL");
}

static void test_url_refuses_empty(void **state)
{
    (void)state;
    expect_invalid("", "empty");
}

static void test_url_refuses_missing_scheme(void **state)
{
    (void)state;
    expect_invalid("localhost:6379", "no scheme");
}

static void test_url_refuses_unknown_scheme(void **state)
{
    (void)state;
    expect_invalid("http://localhost", "unknown scheme 'http'");
    expect_invalid("http://user:pw@localhost", "unknown scheme 'http'");
    expect_invalid("://localhost", "malformed scheme");
}

static void test_url_reads_tls_schemes(void **state)
{
    static const char *const urls[] = {
        "rediss://u:pw@localhost:6380/2", "rediss-sentinel://s1,s2:26380/m",
        "rediss-cluster://n1:7000,n2:7001", "REDISS://localhost"};
    static const char *const shown[] = {
        "rediss://u:***@localhost:6380/2",
        "rediss-sentinel://s1:26379,s2:26380/m",
        "rediss-cluster://n1:7000,n2:7001", "rediss://localhost:6379"};
    char err[ERR_LEN], red[256];
    cr__url u;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
        assert_int_equal(cr__url_parse(urls[i], &u, err, sizeof(err)), CR_OK);
        assert_true(u.tls);
        cr__url_redacted(&u, red, sizeof(red));
        assert_string_equal(red, shown[i]);
        cr__url_clear(&u);
    }
    assert_int_equal(cr__url_parse("redis://localhost", &u, err, sizeof(err)),
                     CR_OK);
    assert_false(u.tls);
    cr__url_clear(&u);
    expect_invalid("redissx://localhost", "unknown scheme");
    expect_invalid("rediss-unix:///tmp/x", "unknown scheme");
}

static void test_url_parses_sentinel_addresses_and_master_name(void **state)
{
    cr__url u;
    char err[256], red[256];

    (void)state;
    assert_int_equal(cr__url_parse("redis-sentinel://:pw@10.0.0.1,h2:26380,"
                                   "[::1]:26381/mymaster/2", &u, err,
                                   sizeof(err)), CR_OK);
    assert_true(u.is_sentinel);
    assert_string_equal(u.master_name, "mymaster");
    assert_int_equal(u.nhosts, 3);
    assert_string_equal(u.hosts[0], "10.0.0.1");
    assert_int_equal(u.ports[0], 26379);
    assert_string_equal(u.hosts[1], "h2");
    assert_int_equal(u.ports[1], 26380);
    assert_string_equal(u.hosts[2], "::1");
    assert_int_equal(u.ports[2], 26381);
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.db, 2);
    assert_null(u.host);
    cr__url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "redis-sentinel://:***@10.0.0.1:26379,h2:26380,"
                             "[::1]:26381/mymaster/2");
    cr__url_clear(&u);
}

static void test_url_parses_cluster_seed_nodes(void **state)
{
    cr__url u;
    char err[256], red[256];

    (void)state;
    assert_int_equal(cr__url_parse("redis-cluster://u:pw@10.0.0.1,h2:7001,"
                                   "[::1]:7002", &u, err, sizeof(err)), CR_OK);
    assert_true(u.is_cluster);
    assert_false(u.is_sentinel);
    assert_int_equal(u.nhosts, 3);
    assert_string_equal(u.hosts[0], "10.0.0.1");
    assert_int_equal(u.ports[0], 6379);
    assert_string_equal(u.hosts[1], "h2");
    assert_int_equal(u.ports[1], 7001);
    assert_string_equal(u.hosts[2], "::1");
    assert_int_equal(u.sharded, CR__SHARDED_AUTO);
    assert_string_equal(u.user, "u");
    assert_null(u.host);
    cr__url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "redis-cluster://u:***@10.0.0.1:6379,h2:7001,"
                             "[::1]:7002");
    cr__url_clear(&u);
}

static void test_url_reads_the_cluster_sharded_mode(void **state)
{
    cr__url u;
    char err[256], red[256];

    (void)state;
    assert_int_equal(cr__url_parse("redis-cluster://h1/?sharded=off", &u, err,
                                   sizeof(err)), CR_OK);
    assert_int_equal(u.sharded, CR__SHARDED_OFF);
    cr__url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "redis-cluster://h1:6379/?sharded=off");
    cr__url_clear(&u);
    assert_int_equal(cr__url_parse("redis-cluster://h1?sharded=ON", &u, err,
                                   sizeof(err)), CR_OK);
    assert_int_equal(u.sharded, CR__SHARDED_ON);
    cr__url_clear(&u);
    expect_invalid("redis-cluster://h1?sharded=maybe", "auto, on or off");
    expect_invalid("redis-cluster://h1/3", "only db 0");
    /* sharded means nothing outside a cluster. */
    expect_invalid("redis://h1?sharded=on", "unknown query parameter");
}

static void test_url_reads_the_redisson_version(void **state)
{
    cr__url u;
    char err[256];

    (void)state;
    assert_int_equal(cr__url_parse("redis://h1/2?redissonVersion=3.16.4", &u,
                                   err, sizeof(err)), CR_OK);
    assert_int_equal(u.redisson_version, CR__VERSION(3, 16, 4));
    assert_int_equal(u.db, 2);
    cr__url_clear(&u);
    assert_int_equal(cr__url_parse("redis-cluster://h1?sharded=on&"
                                   "redissonVersion=4.7", &u, err,
                                   sizeof(err)), CR_OK);
    assert_int_equal(u.redisson_version, CR__VERSION(4, 7, 0));
    assert_int_equal(u.sharded, CR__SHARDED_ON);
    cr__url_clear(&u);
    assert_int_equal(cr__url_parse("redis://h1", &u, err, sizeof(err)), CR_OK);
    assert_int_equal(u.redisson_version, 0);
    cr__url_clear(&u);
    expect_invalid("redis://h1?redissonVersion=3.9.0", "older than");
    expect_invalid("redis://h1?redissonVersion=3", "MAJOR.MINOR");
    expect_invalid("redis://h1?redissonVersion=3.16.x", "MAJOR.MINOR");
    expect_invalid("redis://h1?redissonVersion=", "MAJOR.MINOR");
    expect_invalid("redis://h1?redissonVersion=3.10.", "MAJOR.MINOR");
    expect_invalid("redis://h1?redissonVersion=3.16&redissonVersion=4.7",
                   "more than once");
}

static void test_url_refuses_sentinel_without_master_or_hosts(void **state)
{
    (void)state;
    expect_invalid("redis-sentinel://h1,h2", "master's name");
    expect_invalid("redis-sentinel://h1:26379/", "master's name");
    expect_invalid("redis-sentinel://h1,,h2/m", "host is empty");
    expect_invalid("redis-sentinel://h1:0/m", "port");
}

static void test_url_refuses_empty_host(void **state)
{
    (void)state;
    expect_invalid("redis://", "host is empty");
    expect_invalid("redis://:6379", "host is empty");
    expect_invalid("redis://user:pw@", "host is empty");
    expect_invalid("redis://user:pw@/3", "host is empty");
    expect_invalid("redis://[]:6379", "host is empty");
}

static void test_url_refuses_invalid_host_character(void **state)
{
    (void)state;
    expect_invalid("redis://ho st:6379", "invalid character");
    expect_invalid("redis://ho%73t", "invalid character");
}

static void test_url_refuses_bad_port(void **state)
{
    (void)state;
    expect_invalid("redis://host:abc", "port");
    expect_invalid("redis://host:", "port");
    expect_invalid("redis://host:0", "port");
    expect_invalid("redis://host:65536", "port");
    expect_invalid("redis://host:-1", "port");
    expect_invalid("redis://host:+80", "port");
    expect_invalid("redis://host:99999999999999999999", "port");
    expect_invalid("redis://[::1]:70000", "port");
}

static void test_url_accepts_port_bounds(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://host:1", &u);
    assert_int_equal(u.port, 1);
    cr__url_clear(&u);
    parse_ok("redis://host:65535", &u);
    assert_int_equal(u.port, 65535);
    cr__url_clear(&u);
}

static void test_url_refuses_bad_db(void **state)
{
    (void)state;
    expect_invalid("redis://host/-1", "db must be");
    expect_invalid("redis://host/abc", "db must be");
    expect_invalid("redis://host/1x", "db must be");
    expect_invalid("redis://host/2147483648", "db must be");
    expect_invalid("redis://host?db=99999999999999999999", "db must be");
    expect_invalid("unix:///tmp/r.sock?db=-2", "db must be");
}

static void test_url_accepts_largest_db(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://host/2147483647", &u);
    assert_int_equal(u.db, 2147483647);
    cr__url_clear(&u);
}

static void test_url_refuses_trailing_garbage(void **state)
{
    (void)state;
    expect_invalid("redis://host:6379/0/extra", "after the db");
    expect_invalid("redis://[::1]x", "after the IPv6 address");
    expect_invalid("redis://host#frag", "fragments");
    expect_invalid("redis://host/1#frag", "fragments");
    expect_invalid("redis://host?db=1#frag", "fragments");
    expect_invalid("unix:///tmp/r.sock#x", "fragments");
}

static void test_url_refuses_at_after_host(void **state)
{
    (void)state;
    expect_invalid("redis://:pa/ss@host", "percent-encoded");
}

static void test_url_refuses_control_character(void **state)
{
    (void)state;
    expect_invalid("redis://host\n:6379", "control character");
    expect_invalid("redis://ho\tst", "control character");
}

static void test_url_refuses_overlong_input(void **state)
{
    size_t n = 70000;
    char *s = malloc(n + 1);

    (void)state;
    assert_non_null(s);
    memcpy(s, "redis://", 8);
    memset(s + 8, 'a', n - 8);
    s[n] = '\0';
    expect_invalid(s, "longer than");
    free(s);
}

static void test_url_error_never_contains_password(void **state)
{
    static const char *const bad[] = {
        "redis://:TopSecret99@host:99999",
        "redis://:TopSecret99@host/abc",
        "redis://:TopSecret99@host/1?db=2",
        "redis://:TopSecret99@host?TopSecret99=1",
        "redis://:TopSecret99@",
        "redis://:TopSecret99@[::1",
        "redis://:TopSecret99@ho st",
        "redis://u:TopSecret99%zz@host",
        "redis://u:TopSecret99%00@host",
        "redis://:TopSecret99/x@host",
        "redis://TopSecret99:TopSecret99",
        "redis://u:TopSecret99@host#TopSecret99",
        "TopSecret99://u:TopSecret99@host",
        "u:TopSecret99@host",
        "rediss://u:TopSecret99@host:99999",
        "unix://u:TopSecret99@tmp/sock",
        "unix://u:TopSecret99/tmp/sock",
        "unix://u:TopSecret99@/tmp/sock?db=x",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[ERR_LEN] = "";
        cr__url u;

        assert_int_equal(cr__url_parse(bad[i], &u, err, sizeof(err)),
                         CR_EINVAL);
        assert_zeroed(&u);
        assert_true(err[0] != '\0');
        if (strstr(err, "TopSecret99") != NULL)
            print_error("'%s' leaked the password: %s\n", bad[i], err);
        assert_null(strstr(err, "TopSecret99"));
    }
}

static void test_url_zeroes_output_on_late_failure(void **state)
{
    (void)state;
    /* User and password are decoded before the port is found bad, so this
     * also checks (under valgrind) that they are freed. */
    expect_invalid("redis://user:pw@host:0", "port");
    expect_invalid("unix://user:pw@/tmp/r.sock?db=x", "db must be");
}

static void test_url_accepts_missing_error_buffer(void **state)
{
    cr__url u;

    (void)state;
    assert_int_equal(cr__url_parse("bogus", &u, NULL, 0), CR_EINVAL);
    assert_zeroed(&u);
    assert_int_equal(cr__url_parse("redis://h", &u, NULL, 0), CR_OK);
    cr__url_clear(&u);
}

static void test_url_truncates_long_error(void **state)
{
    char err[8];
    cr__url u;

    (void)state;
    memset(err, 'x', sizeof(err));
    assert_int_equal(cr__url_parse("http://h", &u, err, sizeof(err)),
                     CR_EINVAL);
    assert_int_equal(strlen(err), sizeof(err) - 1);
}

static void test_url_clear_is_idempotent(void **state)
{
    cr__url u;

    (void)state;
    parse_ok("redis://u:p@h:1/2", &u);
    cr__url_clear(&u);
    assert_zeroed(&u);
    cr__url_clear(&u);
    assert_zeroed(&u);
    cr__url_clear(NULL);
}

static void test_url_redacts_password(void **state)
{
    char buf[128];
    cr__url u;

    (void)state;
    parse_ok("redis://alice:wonder@db.local:6390/3", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "redis://alice:***@db.local:6390/3");
    cr__url_clear(&u);
    parse_ok("redis://:wonder@h", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "redis://:***@h:6379");
    cr__url_clear(&u);
}

static void test_url_redacts_url_without_credentials(void **state)
{
    char buf[128];
    cr__url u;

    (void)state;
    parse_ok("redis://h", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "redis://h:6379");
    cr__url_clear(&u);
    parse_ok("redis://bob@h?db=1", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "redis://bob@h:6379/1");
    cr__url_clear(&u);
}

static void test_url_redacts_ipv6_and_unix(void **state)
{
    char buf[128];
    cr__url u;

    (void)state;
    parse_ok("redis://u:secret@[::1]:6380/2", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "redis://u:***@[::1]:6380/2");
    cr__url_clear(&u);
    parse_ok("unix://user:pw@/tmp/redis.sock?db=2", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "unix://user:***@/tmp/redis.sock?db=2");
    cr__url_clear(&u);
    parse_ok("unix:///tmp/redis.sock", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "unix:///tmp/redis.sock");
    cr__url_clear(&u);
}

static void test_url_redacted_encodes_user(void **state)
{
    char buf[128];
    cr__url u;

    (void)state;
    parse_ok("redis://me%40corp%3a1:x@h", &u);
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_string_equal(buf, "redis://me%40corp%3A1:***@h:6379");
    cr__url_clear(&u);
}

static void test_url_redacted_truncates_safely(void **state)
{
    char buf[12];
    cr__url u;

    (void)state;
    parse_ok("redis://alice:wonder@db.local:6390/3", &u);
    memset(buf, 'x', sizeof(buf));
    cr__url_redacted(&u, buf, sizeof(buf));
    assert_int_equal(strlen(buf), sizeof(buf) - 1);
    assert_memory_equal(buf, "redis://ali", sizeof(buf));
    cr__url_redacted(&u, buf, 0);
    cr__url_redacted(NULL, buf, sizeof(buf));
    assert_string_equal(buf, "");
    cr__url_clear(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parses_host_only),
        cmocka_unit_test(test_url_parses_host_and_port),
        cmocka_unit_test(test_url_parses_host_port_and_db),
        cmocka_unit_test(test_url_parses_db_without_port),
        cmocka_unit_test(test_url_accepts_trailing_slash),
        cmocka_unit_test(test_url_accepts_uppercase_scheme),
        cmocka_unit_test(test_url_parses_password_only),
        cmocka_unit_test(test_url_parses_user_password_and_db),
        cmocka_unit_test(test_url_parses_user_without_password),
        cmocka_unit_test(test_url_treats_empty_password_as_absent),
        cmocka_unit_test(test_url_percent_decodes_user_and_password),
        cmocka_unit_test(test_url_keeps_unencoded_at_in_password),
        cmocka_unit_test(test_url_refuses_malformed_percent_escape),
        cmocka_unit_test(test_url_refuses_percent_encoded_nul),
        cmocka_unit_test(test_url_parses_ipv6_in_brackets),
        cmocka_unit_test(test_url_parses_ipv6_without_port),
        cmocka_unit_test(test_url_refuses_ipv6_without_brackets),
        cmocka_unit_test(test_url_refuses_unclosed_bracket),
        cmocka_unit_test(test_url_refuses_non_ipv6_in_brackets),
        cmocka_unit_test(test_url_parses_db_in_query),
        cmocka_unit_test(test_url_refuses_db_in_path_and_query),
        cmocka_unit_test(test_url_refuses_unknown_query_parameter),
        cmocka_unit_test(test_url_refuses_query_db_without_value),
        cmocka_unit_test(test_url_parses_unix_socket),
        cmocka_unit_test(test_url_parses_unix_socket_with_auth_and_db),
        cmocka_unit_test(test_url_refuses_unix_without_absolute_path),
        cmocka_unit_test(test_url_refuses_null),
        cmocka_unit_test(test_url_refuses_empty),
        cmocka_unit_test(test_url_refuses_missing_scheme),
        cmocka_unit_test(test_url_refuses_unknown_scheme),
        cmocka_unit_test(test_url_reads_tls_schemes),
        cmocka_unit_test(test_url_parses_sentinel_addresses_and_master_name),
        cmocka_unit_test(test_url_refuses_sentinel_without_master_or_hosts),
        cmocka_unit_test(test_url_parses_cluster_seed_nodes),
        cmocka_unit_test(test_url_reads_the_cluster_sharded_mode),
        cmocka_unit_test(test_url_reads_the_redisson_version),
        cmocka_unit_test(test_url_refuses_empty_host),
        cmocka_unit_test(test_url_refuses_invalid_host_character),
        cmocka_unit_test(test_url_refuses_bad_port),
        cmocka_unit_test(test_url_accepts_port_bounds),
        cmocka_unit_test(test_url_refuses_bad_db),
        cmocka_unit_test(test_url_accepts_largest_db),
        cmocka_unit_test(test_url_refuses_trailing_garbage),
        cmocka_unit_test(test_url_refuses_at_after_host),
        cmocka_unit_test(test_url_refuses_control_character),
        cmocka_unit_test(test_url_refuses_overlong_input),
        cmocka_unit_test(test_url_error_never_contains_password),
        cmocka_unit_test(test_url_zeroes_output_on_late_failure),
        cmocka_unit_test(test_url_accepts_missing_error_buffer),
        cmocka_unit_test(test_url_truncates_long_error),
        cmocka_unit_test(test_url_clear_is_idempotent),
        cmocka_unit_test(test_url_redacts_password),
        cmocka_unit_test(test_url_redacts_url_without_credentials),
        cmocka_unit_test(test_url_redacts_ipv6_and_unix),
        cmocka_unit_test(test_url_redacted_encodes_user),
        cmocka_unit_test(test_url_redacted_truncates_safely),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
