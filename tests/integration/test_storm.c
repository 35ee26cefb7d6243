/* SPDX-License-Identifier: MIT */
/*
 * No connection storms. A client made through a relay to a real server
 * finds its server replaced by something broken (the relay forwards new
 * connections to a fake server and cuts the open ones); eight threads then
 * wait five seconds each on a lock. Whatever the fake does (accept and
 * close, reset, say nothing, answer HTTP or bytes that are not RESP, or be
 * a TLS-only port), the client opens at most 10 connections a second to
 * it, every wait ends within its bound, and a server that does not speak
 * the Redis protocol fails every wait at once (CR_ECONFIG, naming what it
 * answered). cr_client_new against each is bounded the same way.
 */
#include <pthread.h>
#include <unistd.h>

#include "fault_server.h"
#include "lock_common.h"
#include "tls_fixture.h"

#define THREADS 8
#define WAIT_MS 5000
#define TIMEOUT_MS 300

static cr_test_tls_certs certs;
static char certs_dir[64];
static cr_test_redis tls_only;

typedef struct waiter {
    cr_lock *lock;
    cr_status rc;
    int64_t took_ms;
    pthread_t thread;
} waiter;

static void *
wait_lock(void *arg)
{
    waiter *w = arg;
    int64_t start = cr_test_now_ms();

    w->rc = cr_lock_try_lock(w->lock, WAIT_MS, CR_LEASE_WATCHDOG);
    w->took_ms = cr_test_now_ms() - start;
    return NULL;
}

/* A client through `relay`, with short timeouts. */
static cr_client *
relay_client(const cr_test_relay *relay)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char url[64];

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d",
             cr_test_relay_port(relay));
    o.url = url;
    o.command_timeout_ms = TIMEOUT_MS;
    o.connect_timeout_ms = TIMEOUT_MS;
    o.subscription_timeout_ms = TIMEOUT_MS;
    if (cr_client_new(&o, &c) != CR_OK)
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
    return c;
}

/* Moves the client behind `relay` onto the broken server at `port` and
 * runs the eight waits; returns how many connections reached it. */
static size_t
storm(cr_test_relay *relay, cr_client *c, int port,
      cr_test_fault_server *f, cr_status want, int64_t most_ms)
{
    waiter w[THREADS];
    size_t per_second, accepts;
    int64_t start;
    int i;

    assert_int_equal(cr_test_relay_retarget(relay, "127.0.0.1", port), 0);
    cr_test_relay_cut(relay);
    start = cr_test_now_ms();
    for (i = 0; i < THREADS; i++) {
        assert_int_equal(cr_lock_new(c, "storm", &w[i].lock), CR_OK);
        assert_int_equal(pthread_create(&w[i].thread, NULL, wait_lock, &w[i]),
                         0);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(w[i].thread, NULL);
        if (w[i].rc != want)
            fprintf(stderr, "wait %d: %s (%s) in %lld ms\n", i,
                    cr_strerror(w[i].rc), cr_last_error(),
                    (long long)w[i].took_ms);
        assert_int_equal(w[i].rc, want);
        assert_true(w[i].took_ms <= most_ms);
        cr_lock_free(w[i].lock);
    }
    if (f != NULL) {
        accepts = cr_test_fault_accepts(f);
        per_second = cr_test_fault_max_per_second(f);
    } else {
        accepts = cr_test_relay_accepts(relay);
        per_second = 0; /* not counted per second: the caller bounds it */
    }
    fprintf(stderr, "%zu connections in %lld ms, at most %zu in a second\n",
            accepts, (long long)(cr_test_now_ms() - start), per_second);
    assert_true(per_second <= 10);
    return accepts;
}

/* One broken kind: a relay client moved onto a fake server of `mode`. */
static void
storm_against(cr_test_fault_mode mode, cr_status want, int64_t most_ms)
{
    cr_test_fault_server *f = cr_test_fault_start(mode);
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;

    assert_non_null(f);
    assert_non_null(relay);
    c = relay_client(relay);
    assert_non_null(c);
    storm(relay, c, cr_test_fault_port(f), f, want, most_ms);
    cr_client_free(c);
    cr_test_relay_stop(relay);
    cr_test_fault_stop(f);
}

static void
test_storm_accept_then_close_is_an_outage_paced_below_10_per_second(void **state)
{
    (void)state;
    storm_against(CR_TEST_FAULT_CLOSE, CR_EIO, slow(WAIT_MS + TIMEOUT_MS + 300));
}

static void
test_storm_reset_is_an_outage_paced_below_10_per_second(void **state)
{
    (void)state;
    storm_against(CR_TEST_FAULT_RESET, CR_EIO, slow(WAIT_MS + TIMEOUT_MS + 300));
}

static void
test_storm_silent_server_is_paced_and_waits_keep_their_bound(void **state)
{
    (void)state;
    storm_against(CR_TEST_FAULT_SILENT, CR_EIO, slow(WAIT_MS + TIMEOUT_MS + 300));
}

static void
test_storm_http_answer_fails_every_wait_at_once(void **state)
{
    (void)state;
    storm_against(CR_TEST_FAULT_HTTP, CR_ECONFIG, slow(1000));
}

static void
test_storm_garbage_answer_fails_every_wait_at_once(void **state)
{
    (void)state;
    storm_against(CR_TEST_FAULT_GARBAGE, CR_ECONFIG, slow(1000));
}

static void
test_storm_protected_mode_fails_every_wait_at_once(void **state)
{
    (void)state;
    storm_against(CR_TEST_FAULT_DENIED, CR_ECONFIG, slow(1000));
}

static void
test_storm_plain_client_on_a_tls_only_port_is_paced(void **state)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client *c;
    size_t n;

    (void)state;
    assert_non_null(relay);
    c = relay_client(relay);
    assert_non_null(c);
    n = storm(relay, c, tls_only.tls_port, NULL, CR_EIO,
              slow(WAIT_MS + TIMEOUT_MS + 300));
    /* Over the whole wait: 10 a second at the very most. */
    assert_true(n <= 10 * (WAIT_MS / 1000 + 1));
    cr_client_free(c);
    cr_test_relay_stop(relay);
}

static void
test_storm_client_new_against_each_broken_server_is_bounded(void **state)
{
    static const cr_test_fault_mode modes[] = {
        CR_TEST_FAULT_CLOSE, CR_TEST_FAULT_RESET, CR_TEST_FAULT_HTTP,
        CR_TEST_FAULT_SILENT, CR_TEST_FAULT_DRIP, CR_TEST_FAULT_DENIED,
        CR_TEST_FAULT_GARBAGE};
    static const cr_status want[] = {CR_EIO, CR_EIO, CR_ECONFIG, CR_EIO,
                                     CR_EIO, CR_ECONFIG, CR_ECONFIG};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        cr_test_fault_server *f = cr_test_fault_start(modes[i]);
        cr_client_options o = CR_CLIENT_OPTIONS_INIT;
        cr_client *c = NULL;
        char url[64];
        int64_t start, took;
        cr_status rc;

        assert_non_null(f);
        snprintf(url, sizeof(url), "redis://127.0.0.1:%d",
                 cr_test_fault_port(f));
        o.url = url;
        o.command_timeout_ms = TIMEOUT_MS;
        o.connect_timeout_ms = TIMEOUT_MS;
        start = cr_test_now_ms();
        rc = cr_client_new(&o, &c);
        took = cr_test_now_ms() - start;
        fprintf(stderr, "mode %zu: %s (%s) in %lld ms, %zu connections\n", i,
                cr_strerror(rc), cr_last_error(), (long long)took,
                cr_test_fault_accepts(f));
        assert_int_equal(rc, want[i]);
        assert_true(took <= slow(2 * TIMEOUT_MS + 300));
        assert_true(cr_test_fault_accepts(f) <= 1);
        if (modes[i] == CR_TEST_FAULT_HTTP)
            assert_non_null(strstr(cr_last_error(), "HTTP/1.1 400"));
        cr_test_fault_stop(f);
    }
}

static int
storm_up(void **state)
{
    int rc;

    if (redis_up(state) != 0)
        return -1;
    snprintf(certs_dir, sizeof(certs_dir), "/tmp/cr-storm-%d", (int)getpid());
    rc = cr_test_tls_make_certs(certs_dir, &certs);
    if (rc == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    return rc == 0 && cr_test_redis_start_tls(&tls_only, &certs, false, false,
                                              NULL) == 0
               ? 0
               : -1;
}

static int
storm_down(void **state)
{
    char cmd[128];
    int ignored;

    cr_test_redis_destroy(&tls_only);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", certs_dir);
    ignored = system(cmd);
    (void)ignored;
    return redis_down(state);
}

#define T(f) cmocka_unit_test(f)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_storm_client_new_against_each_broken_server_is_bounded),
        T(test_storm_accept_then_close_is_an_outage_paced_below_10_per_second),
        T(test_storm_reset_is_an_outage_paced_below_10_per_second),
        T(test_storm_silent_server_is_paced_and_waits_keep_their_bound),
        T(test_storm_http_answer_fails_every_wait_at_once),
        T(test_storm_garbage_answer_fails_every_wait_at_once),
        T(test_storm_protected_mode_fails_every_wait_at_once),
        T(test_storm_plain_client_on_a_tls_only_port_is_paced),
    };

    return cmocka_run_group_tests(tests, storm_up, storm_down);
}
