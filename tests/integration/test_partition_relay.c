/* SPDX-License-Identifier: MIT */
/*
 * A network partition made without network namespaces, so that it runs for
 * any user (test_partition.c needs root): the holder's client reaches the
 * server through a relay, which is frozen both ways. The holder's lease
 * runs out on the server; its client must say so first, on its own lease
 * clock, whether its watchdog thread is stuck in a renewal that the frozen
 * relay never answers (a command timeout four leases long) or keeps for
 * the answers of renewals that timed out and tries new connections (a
 * command timeout an eighth of the lease). Then another client takes the
 * lock, and once the relay thaws the holder's unlock reports CR_ELOST.
 * The history shows that the second holder got in only after the first
 * was told. And a renewal lost on its way while its link stays up (a
 * proxy that drops it) costs nothing: the next goes on a fresh link.
 */
#include <stdatomic.h>
#include <unistd.h>

#include "fault_server.h"
#include "history.h"
#include "lock_common.h"

/* The holder's lost callback: when it came, in microseconds. */
static atomic_llong lost_at_us;

static void
record_lost(void *userdata, const char *name, int64_t thread_id)
{
    (void)userdata;
    (void)name;
    (void)thread_id;
    atomic_store(&lost_at_us, (long long)cr_hist_now_us());
}

/* Polls EXISTS `key` on connection `c` every millisecond until the key is
 * gone or timeout_ms passes. *last_seen_us gets the time the last poll
 * that still found the key was sent (the key was there after it), and the
 * function returns the time the first poll that did not find it came
 * back (it was gone before), or -1 on timeout. */
static int64_t
poll_until_gone(redisContext *c, const char *key, int64_t timeout_ms,
                int64_t *last_seen_us)
{
    int64_t deadline = cr_hist_now_us() + timeout_ms * 1000;

    while (cr_hist_now_us() < deadline) {
        int64_t sent = cr_hist_now_us();
        redisReply *r = redisCommand(c, "EXISTS %s", key);
        bool there = r != NULL && r->type == REDIS_REPLY_INTEGER &&
                     r->integer == 1;

        if (r != NULL)
            freeReplyObject(r);
        if (r == NULL)
            return -1;
        if (!there)
            return cr_hist_now_us();
        *last_seen_us = sent;
        usleep(1000);
    }
    return -1;
}

/* The partition, for a holder whose command timeout is `timeout_ms` (a
 * multiple of its lease, or a part of it). */
static void
frozen_holder_is_told_before_its_key_expires(int64_t lease_ms,
                                             int64_t timeout_ms)
{
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_hist *h = cr_hist_new(16, 2);
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *holder = NULL;
    cr_lock *held, *wanted;
    cr_hist_report rep;
    redisContext *watch;
    char url[64];
    int64_t left = -1, frozen_us, gone_us, last_seen_us = 0, lost_us, second_us;
    bool lost = false;
    long first, second;

    assert_non_null(relay);
    assert_non_null(h);
    atomic_store(&lost_at_us, 0);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", cr_test_relay_port(relay));
    o.url = url;
    o.lock_watchdog_timeout_ms = lease_ms;
    o.command_timeout_ms = timeout_ms;
    o.connect_timeout_ms = 500;
    assert_int_equal(cr_client_new(&o, &holder), CR_OK);
    assert_int_equal(cr_lock_new(holder, "part:relay", &held), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "part:relay", &wanted), CR_OK);
    assert_int_equal(cr_lock_set_lost_callback(held, record_lost, NULL), CR_OK);
    assert_int_equal(cr_lock_lock(held, CR_LEASE_WATCHDOG), CR_OK);
    first = cr_hist_begin(h, 0);
    /* The watchdog works through the relay before the partition. */
    await_more_renewals(holder, 1);
    assert_int_equal(cr_lock_lease_left(held, &left), CR_OK);
    assert_true(left > 0 && left <= lease_ms);
    watch = cr_test_redis_connect(&test_redis);
    assert_non_null(watch);

    cr_test_relay_freeze(relay, true, true);
    frozen_us = cr_hist_now_us();
    gone_us = poll_until_gone(watch, "part:relay", 3 * lease_ms, &last_seen_us);
    lost_us = atomic_load(&lost_at_us);
    fprintf(stderr, "partition: lost callback %lld ms after the freeze, key "
                    "gone between %lld and %lld ms after it\n",
            (long long)(lost_us - frozen_us) / 1000,
            (long long)(last_seen_us - frozen_us) / 1000,
            (long long)(gone_us - frozen_us) / 1000);
    assert_true(gone_us > 0);
    /* Told before the key could be gone, and not before the partition
     * could have cost it its lease: the last renewal before the freeze was
     * at most a third of the lease earlier. */
    assert_true(lost_us > 0);
    assert_true(lost_us < last_seen_us);
    assert_true(lost_us >= frozen_us + lease_ms * 1000 / 2);
    cr_hist_set_valid_until(h, first, lost_us);
    assert_int_equal(cr_lock_is_lost(held, &lost), CR_OK);
    assert_true(lost);
    assert_int_equal(cr_lock_lease_left(held, &left), CR_OK);
    assert_int_equal(left, 0);

    /* The key is gone: the other client gets in at once. */
    assert_int_equal(cr_lock_try_lock(wanted, slow(2000), CR_LEASE_WATCHDOG),
                     CR_OK);
    second_us = cr_hist_now_us();
    second = cr_hist_begin(h, 1);
    assert_true(second_us > lost_us);

    /* Back in touch, the holder learns it from its unlock too. */
    cr_test_relay_thaw(relay);
    cr_hist_end(h, first);
    assert_int_equal(cr_lock_unlock(held), CR_ELOST);
    cr_hist_done(h, 0);
    cr_hist_end(h, second);
    assert_int_equal(cr_lock_unlock(wanted), CR_OK);
    cr_hist_done(h, 1);
    cr_hist_check(h, 1, &rep);
    cr_hist_print("partition-relay/lock", &rep);
    assert_int_equal(rep.violations, 0);
    assert_int_equal(rep.holds, 2);
    assert_int_equal(rep.hung, 0);

    redisFree(watch);
    cr_lock_free(held);
    cr_lock_free(wanted);
    cr_client_free(holder);
    cr_test_relay_stop(relay);
    cr_hist_free(h);
}

/* The lease clock runs 1 % + 2 ms ahead of the server, 42 ms for a 4 s
 * lease, which is all the time the callback's thread has to run on a
 * loaded machine; under valgrind, 8 s (82 ms ahead). */
static int64_t
partition_lease_ms(void)
{
    return slow(1) > 1 ? 8000 : 4000;
}

static void
test_partition_relay_frozen_holder_is_told_before_its_key_expires_and_another_gets_in(void **state)
{
    (void)state;
    /* A renewal sent into the frozen relay waits four leases for its
     * answer: only the lease clock can tell the hold is lost in time. */
    frozen_holder_is_told_before_its_key_expires(partition_lease_ms(),
                                                 4 * partition_lease_ms());
}

static void
test_partition_relay_holder_keeping_for_answers_that_never_come_is_told_before_its_key_expires(void **state)
{
    (void)state;
    /* Each renewal times out after an eighth of the lease; its answer is
     * kept for, the next ones are sent on new connections that the frozen
     * relay never answers either. None of those answers comes: the lease
     * clock tells the hold lost before the server lets it go. */
    frozen_holder_is_told_before_its_key_expires(partition_lease_ms(),
                                                 partition_lease_ms() / 8);
}

/* A renewal lost on its way while its link stays up (a proxy that drops
 * it): its answer never comes, and the link is still there. The renewal
 * after it goes on a fresh connection, and the hold never lapses. */
static void
test_partition_relay_renewal_lost_on_a_live_link_is_sent_again_on_a_fresh_one(void **state)
{
    const int64_t lease_ms = slow(1) > 1 ? 6000 : 3000;
    cr_test_relay *relay = cr_test_relay_start("127.0.0.1", test_redis.port);
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_client *holder = NULL;
    cr_lock *held;
    char url[64];
    int64_t until, left = -1;
    bool lost = true;

    (void)state;
    assert_non_null(relay);
    atomic_store(&lost_at_us, 0);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", cr_test_relay_port(relay));
    o.url = url;
    o.lock_watchdog_timeout_ms = lease_ms;
    o.command_timeout_ms = lease_ms / 6;
    assert_int_equal(cr_client_new(&o, &holder), CR_OK);
    assert_int_equal(cr_lock_new(holder, "part:dropped", &held), CR_OK);
    assert_int_equal(cr_lock_set_lost_callback(held, record_lost, NULL), CR_OK);
    assert_int_equal(cr_lock_lock(held, CR_LEASE_WATCHDOG), CR_OK);
    await_more_renewals(holder, 1);
    /* Only renewals are sent by EVALSHA from now on. */
    assert_int_equal(cr_test_relay_drop_request(relay, "EVALSHA", 0), 0);
    assert_true(cr_test_wait_until(cr_test_relay_dropped, relay, lease_ms));
    /* Two leases on, it has stood throughout. */
    until = cr_test_now_ms() + 2 * lease_ms;
    while (cr_test_now_ms() < until) {
        assert_int_equal(cr_lock_is_lost(held, &lost), CR_OK);
        assert_false(lost);
        usleep(20000);
    }
    assert_int_equal(atomic_load(&lost_at_us), 0);
    assert_int_equal(cr_lock_lease_left(held, &left), CR_OK);
    assert_true(left > 0);
    assert_int_equal(cr_client_stats_get(holder, &st), CR_OK);
    assert_true(st.renewal_failures >= 1);
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    assert_int_equal(redis_int("EXISTS part:dropped"), 0);
    cr_lock_free(held);
    cr_client_free(holder);
    cr_test_relay_stop(relay);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_partition_relay_frozen_holder_is_told_before_its_key_expires_and_another_gets_in,
            client_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_partition_relay_holder_keeping_for_answers_that_never_come_is_told_before_its_key_expires,
            client_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_partition_relay_renewal_lost_on_a_live_link_is_sent_again_on_a_fresh_one,
            client_up, client_down),
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
