/* SPDX-License-Identifier: MIT */
/*
 * TLS, against real redis-servers and sentinels speaking TLS with
 * certificates the fixture makes with openssl: every object works over
 * rediss://; mutual TLS; a wrong CA and a wrong name give CR_ETLS naming the
 * cause; verification turned off accepts them; a plain client on a TLS
 * port and a TLS client on a plain port end within their timeout, with a
 * hint and without a storm of connections; a Sentinel deployment over TLS
 * (rediss-sentinel://) with a waiter woken by pub/sub and a failover.
 */
#include <pthread.h>
#include <unistd.h>

#include "lock_common.h"
#include "tls_fixture.h"

#define NSENTINELS 3

static cr_test_tls_certs certs;
static char certs_dir[64];
static cr_test_redis mtls, wrong;

/* Prints what the client logs, for the test log. */
static void
print_log(void *userdata, cr_log_level level, const char *msg)
{
    (void)userdata;
    fprintf(stderr, "  log %d: %s\n", (int)level, msg);
}

/* Options for a TLS client of `url` trusting `ca` (NULL: the fixture's). */
static void
tls_options(cr_client_options *o, const char *url, const char *ca)
{
    *o = (cr_client_options)CR_CLIENT_OPTIONS_INIT;
    o->log_fn = print_log;
    o->log_level = CR_LOG_INFO;
    o->url = url;
    o->tls_ca_file = ca != NULL ? ca : certs.ca_cert;
    o->command_timeout_ms = slow(1000);
    o->connect_timeout_ms = slow(1000);
    o->lock_watchdog_timeout_ms = 600;
}

/* The number of connections the server behind `r` accepted so far. */
static long long
connections_received(const cr_test_redis *r)
{
    redisReply *rep = cr_test_redis_cmd(r, "INFO stats");
    const char *p;
    long long n = -1;

    if (rep != NULL && rep->type == REDIS_REPLY_STRING &&
        (p = strstr(rep->str, "total_connections_received:")) != NULL)
        n = atoll(p + strlen("total_connections_received:"));
    if (rep != NULL)
        freeReplyObject(rep);
    return n;
}

static int
tls_up(void **state)
{
    int rc;

    (void)state;
    snprintf(certs_dir, sizeof(certs_dir), "/tmp/cr-tls-%d", (int)getpid());
    rc = cr_test_tls_make_certs(certs_dir, &certs);
    if (rc == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    if (rc != 0)
        return -1;
    rc = cr_test_redis_start_tls(&test_redis, &certs, false, false, NULL);
    if (rc == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    if (rc != 0 || cr_test_redis_start_tls(&mtls, &certs, false, true, NULL) != 0 ||
        cr_test_redis_start_tls(&wrong, &certs, true, false, NULL) != 0)
        return -1;
    return 0;
}

static int
tls_down(void **state)
{
    char cmd[128];
    int ignored;

    (void)state;
    cr_test_redis_destroy(&mtls);
    cr_test_redis_destroy(&wrong);
    cr_test_redis_destroy(&test_redis);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", certs_dir);
    ignored = system(cmd);
    (void)ignored;
    return 0;
}

static int
tls_client_up(void **state)
{
    cr_client_options o;

    (void)state;
    if (cr_test_redis_flushall(&test_redis) != 0)
        return -1;
    tls_options(&o, test_redis.tls_url, NULL);
    if (cr_client_new(&o, &test_client) != CR_OK) {
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- waits */

typedef struct waiter {
    cr_lock *lock;
    cr_status rc;
    pthread_t thread;
} waiter;

static void *
wait_lock(void *arg)
{
    waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, slow(10000), CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK)
        w->rc = cr_lock_unlock(w->lock);
    return NULL;
}

/* Client c2 waits on `name` held by test_client, in the lock's line and
 * subscribed to its own channel over TLS, and gets it when the holder lets
 * go. */
static void
waiter_woken_over_tls(cr_client *c1, cr_client *c2, const char *name)
{
    cr_lock *a, *b;
    waiter w;

    assert_int_equal(cr_lock_new(c1, name, &a), CR_OK);
    assert_int_equal(cr_lock_new(c2, name, &b), CR_OK);
    assert_int_equal(cr_lock_lock(a, CR_LEASE_WATCHDOG), CR_OK);
    w.lock = b;
    w.rc = CR_EINVAL;
    assert_int_equal(pthread_create(&w.thread, NULL, wait_lock, &w), 0);
    await_waiters_in_line(name, 1);
    assert_true(cr_test_wait_until(line_listening, &(line_of){name, 1},
                                   slow(5000)));
    assert_int_equal(cr_lock_unlock(a), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    cr_lock_free(a);
    cr_lock_free(b);
}

/* ---------------------------------------------------------------- tests */

static void
test_tls_every_object_works_over_rediss(void **state)
{
    char id[CR_PERMIT_ID_LEN + 1];
    cr_client_options o;
    cr_client *c2 = NULL;
    cr_object_info *info = NULL;
    cr_permit_semaphore *p;
    cr_semaphore *s;
    cr_rwlock *rw;
    cr_latch *la;
    cr_lock *f;
    int64_t n = 0;
    bool set = false;

    (void)state;
    tls_options(&o, test_redis.tls_url, NULL);
    assert_int_equal(cr_client_new(&o, &c2), CR_OK);
    waiter_woken_over_tls(test_client, c2, "tls-lock");
    assert_int_equal(cr_fair_lock_new(test_client, "tls-fair", &f), CR_OK);
    assert_int_equal(cr_lock_lock(f, CR_LEASE_WATCHDOG), CR_OK);
    await_more_renewals(test_client, 2);
    assert_int_equal(cr_lock_unlock(f), CR_OK);
    assert_int_equal(cr_rwlock_new(test_client, "tls-rw", &rw), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), 5000), CR_OK);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    assert_int_equal(cr_semaphore_new(test_client, "tls-sem", &s), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 1, 0, &set), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(s, 1, 1000), CR_OK);
    assert_int_equal(cr_semaphore_release(s, 1), CR_OK);
    assert_int_equal(cr_permit_semaphore_new(test_client, "tls-psem", &p), CR_OK);
    assert_int_equal(cr_permit_semaphore_set_permits(p, 1), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_acquire(p, 1000, 5000, id), CR_OK);
    assert_int_equal(cr_permit_semaphore_release(p, id), CR_OK);
    assert_int_equal(cr_latch_new(test_client, "tls-latch", &la), CR_OK);
    assert_int_equal(cr_latch_try_set_count(la, 1, 0, &set), CR_OK);
    assert_int_equal(cr_latch_count_down(la), CR_OK);
    assert_int_equal(cr_latch_await(la, 1000), CR_OK);
    assert_int_equal(cr_latch_get_count(la, &n), CR_OK);
    assert_int_equal(cr_object_inspect(test_client, "tls-sem", &info), CR_OK);
    assert_int_equal(info->value, 1);
    cr_object_info_free(info);
    /* Nothing went over the plain port but the fixture's FLUSHALL. */
    assert_int_equal(redis_int("EXISTS tls-sem"), 1);
    cr_latch_free(la);
    cr_permit_semaphore_free(p);
    cr_semaphore_free(s);
    cr_rwlock_free(rw);
    cr_lock_free(f);
    cr_client_free(c2);
}

static void
test_tls_mutual_tls_needs_the_client_certificate(void **state)
{
    cr_client_options o;
    cr_client *c = NULL;
    cr_lock *l;

    (void)state;
    tls_options(&o, mtls.tls_url, NULL);
    {
        cr_status rc = cr_client_new(&o, &c);

        fprintf(stderr, "no client certificate: %s\n", cr_last_error());
        assert_int_equal(rc, CR_ETLS);
    }
    assert_non_null(strstr(cr_last_error(), "certificate"));
    o.tls_cert_file = certs.client_cert;
    o.tls_key_file = certs.client_key;
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    assert_int_equal(cr_lock_new(c, "mtls", &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, 5000), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_tls_wrong_ca_and_wrong_name_fail_with_their_cause(void **state)
{
    cr_client_options o;
    cr_client *c = NULL;

    (void)state;
    tls_options(&o, test_redis.tls_url, certs.other_ca_cert);
    assert_int_equal(cr_client_new(&o, &c), CR_ETLS);
    assert_non_null(strstr(cr_last_error(), "certificate verify failed"));
    tls_options(&o, wrong.tls_url, NULL);
    assert_int_equal(cr_client_new(&o, &c), CR_ETLS);
    assert_non_null(strstr(cr_last_error(), "mismatch"));
    /* The expected name, when set, is what is verified. */
    o.tls_server_name = "wrong.example.com";
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    cr_client_free(c);
    o.tls_server_name = "other.example.com";
    assert_int_equal(cr_client_new(&o, &c), CR_ETLS);
    /* A CA or key file that cannot be read is CR_ETLS at once. */
    tls_options(&o, test_redis.tls_url, "/nonexistent/ca.pem");
    assert_int_equal(cr_client_new(&o, &c), CR_ETLS);
    assert_non_null(strstr(cr_last_error(), "/nonexistent/ca.pem"));
}

static void
test_tls_insecure_accepts_any_certificate(void **state)
{
    cr_client_options o;
    cr_client *c = NULL;

    (void)state;
    tls_options(&o, wrong.tls_url, certs.other_ca_cert);
    o.tls_insecure = true;
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    cr_client_free(c);
}

static void
test_tls_plain_client_on_a_tls_port_ends_in_time_without_a_storm(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char url[128];
    long long before = connections_received(&test_redis);
    int64_t start = cr_test_now_ms(), took;
    int i;

    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", test_redis.tls_port);
    o.url = url;
    o.command_timeout_ms = 500;
    o.connect_timeout_ms = 500;
    for (i = 0; i < 3; i++) {
        assert_int_equal(cr_client_new(&o, &c), CR_EIO);
        fprintf(stderr, "plain to TLS: %s\n", cr_last_error());
        assert_true(strstr(cr_last_error(), "TLS") != NULL ||
                    strstr(cr_last_error(), "closed") != NULL);
    }
    took = cr_test_now_ms() - start;
    assert_true(took < 3 * slow(1000 + 300));
    /* One connection per client made: no retry storm. */
    assert_true(connections_received(&test_redis) - before <= 4);
}

static void
test_tls_tls_client_on_a_plain_port_ends_in_time_with_a_hint(void **state)
{
    cr_client_options o;
    cr_client *c = NULL;
    int64_t start = cr_test_now_ms(), took;

    (void)state;
    tls_options(&o, NULL, NULL);
    {
        char url[128];

        snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", test_redis.port);
        o.url = url;
        o.command_timeout_ms = 500;
        o.connect_timeout_ms = 500;
        assert_int_equal(cr_client_new(&o, &c), CR_EIO);
    }
    took = cr_test_now_ms() - start;
    fprintf(stderr, "TLS to plain: %s in %lld ms\n", cr_last_error(),
            (long long)took);
    assert_non_null(strstr(cr_last_error(), "TLS"));
    assert_true(took < slow(500 + 500) + 300);
}

/* ----------------------------------------------------- Sentinel over TLS */

static cr_test_redis sentinels[NSENTINELS], replica;

/* The TLS port sentinel 0 reports for the master, or -1. */
static long long
master_port(void)
{
    return cr_test_sentinel_master_port(&sentinels[0], "tlsmaster");
}

static bool
replica_known(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < NSENTINELS; i++) {
        redisReply *r = cr_test_redis_cmd(&sentinels[i],
                                          "SENTINEL replicas tlsmaster");
        bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1;

        if (r != NULL)
            freeReplyObject(r);
        if (!ok)
            return false;
    }
    return true;
}

static bool
master_moved(void *arg)
{
    return master_port() == *(const long long *)arg;
}

static bool
replica_online(void *arg)
{
    redisReply *r = cr_test_redis_cmd(arg, "INFO replication");
    bool ok = r != NULL && r->type == REDIS_REPLY_STRING &&
              strstr(r->str, "state=online") != NULL;

    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

static bool
replica_has_hold(void *arg)
{
    (void)arg;
    return cr_test_redis_type_is(&replica, "tls-failover", "hash");
}

static void
test_tls_sentinel_deployment_with_a_waiter_and_a_failover(void **state)
{
    cr_test_redis master;
    char args[256], conf[512], url[512];
    cr_client_options o;
    cr_client *c1 = NULL, *c2 = NULL;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    long long new_port;
    size_t off;
    cr_lock *l;
    int i;

    (void)state;
    assert_int_equal(cr_test_redis_start_tls(&master, &certs, false, false,
                                             "--tls-replication yes"), 0);
    snprintf(args, sizeof(args), "--tls-replication yes --replicaof 127.0.0.1 %d",
             master.tls_port);
    assert_int_equal(cr_test_redis_start_tls(&replica, &certs, false, false,
                                             args), 0);
    assert_true(cr_test_wait_until(replica_online, &master, 20000));
    snprintf(conf, sizeof(conf),
             "sentinel monitor tlsmaster 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds tlsmaster 1000\n"
             "sentinel failover-timeout tlsmaster 3000\n",
             master.tls_port);
    for (i = 0; i < NSENTINELS; i++)
        assert_int_equal(cr_test_redis_start_tls_conf(&sentinels[i], &certs,
                                                      conf, "--sentinel"), 0);
    off = (size_t)snprintf(url, sizeof(url), "rediss-sentinel://");
    for (i = 0; i < NSENTINELS; i++)
        off += (size_t)snprintf(url + off, sizeof(url) - off, "%s127.0.0.1:%d",
                                i > 0 ? "," : "", sentinels[i].tls_port);
    snprintf(url + off, sizeof(url) - off, "/tlsmaster");
    assert_true(cr_test_wait_until(replica_known, NULL, 30000));
    tls_options(&o, url, NULL);
    o.command_timeout_ms = slow(2000);
    /* Longer than the failover takes: the old master renews the hold until
     * the client learns of the switch, the new one must still have it. */
    o.lock_watchdog_timeout_ms = 10000;
    assert_int_equal(cr_client_new(&o, &c1), CR_OK);
    assert_int_equal(cr_client_new(&o, &c2), CR_OK);
    {
        cr_test_redis keep = test_redis;

        /* await_waiters_in_line asks test_redis: the master here. */
        test_redis = master;
        waiter_woken_over_tls(c1, c2, "tls-sentinel");
        test_redis = keep;
    }
    /* A failover: the client follows it over TLS. */
    assert_int_equal(cr_lock_new(c1, "tls-failover", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    new_port = replica.tls_port;
    /* The replica has the hold before the failover (replication is
     * asynchronous: a forced failover may lose what it has not got yet,
     * which the client would then report as lost). */
    assert_true(cr_test_wait_until(replica_has_hold, NULL, slow(5000)));
    {
        redisReply *r = cr_test_redis_cmd(&sentinels[0],
                                          "SENTINEL FAILOVER tlsmaster");

        assert_non_null(r);
        freeReplyObject(r);
    }
    assert_true(cr_test_wait_until(master_moved, &new_port, slow(20000)));
    for (i = 0; i < 200; i++) {
        assert_int_equal(cr_client_stats_get(c1, &st), CR_OK);
        if (st.failovers > 0)
            break;
        usleep(20000);
    }
    assert_true(st.failovers > 0);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, slow(5000), 5000), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c1);
    cr_client_free(c2);
    for (i = 0; i < NSENTINELS; i++)
        cr_test_redis_destroy(&sentinels[i]);
    cr_test_redis_destroy(&replica);
    cr_test_redis_destroy(&master);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tls_client_up, client_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_tls_every_object_works_over_rediss),
        T(test_tls_mutual_tls_needs_the_client_certificate),
        T(test_tls_wrong_ca_and_wrong_name_fail_with_their_cause),
        T(test_tls_insecure_accepts_any_certificate),
        T(test_tls_plain_client_on_a_tls_port_ends_in_time_without_a_storm),
        T(test_tls_tls_client_on_a_plain_port_ends_in_time_with_a_hint),
        T(test_tls_sentinel_deployment_with_a_waiter_and_a_failover),
    };

    return cmocka_run_group_tests(tests, tls_up, tls_down);
}
