/* SPDX-License-Identifier: MIT */
/*
 * MultiLock and RedLock over three independent redis-server processes:
 * all-or-nothing acquisition, majorities with servers stopped, leases and
 * the watchdog on every sub-lock, unlock everywhere, parallel latency.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lock_common.h"

#define SERVERS 3

static cr_test_redis servers[SERVERS]; /* servers[0] is test_redis */
static cr_client *clients[SERVERS];
static cr_lock *subs[SERVERS];

static int
three_up(void **state)
{
    int i;

    (void)state;
    i = cr_test_redis_start(&test_redis, NULL);
    if (i == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    if (i != 0)
        return -1;
    for (i = 1; i < SERVERS; i++)
        if (cr_test_redis_start(&servers[i], NULL) != 0)
            return -1;
    return 0;
}

static int
three_down(void **state)
{
    int i;

    (void)state;
    for (i = 1; i < SERVERS; i++)
        cr_test_redis_destroy(&servers[i]);
    return redis_down(NULL);
}

/* A client per server (300 ms watchdog) and a sub-lock "m" on each. */
static int
clients_up(void **state)
{
    cr_client_options o;
    int i;

    (void)state;
    servers[0] = test_redis;
    for (i = 0; i < SERVERS; i++) {
        if (servers[i].pid == 0 && cr_test_redis_restart(&servers[i]) != 0)
            return -1;
        o = (cr_client_options)CR_CLIENT_OPTIONS_INIT;
        o.url = servers[i].url;
        o.lock_watchdog_timeout_ms = 300;
        o.connect_timeout_ms = 300;
        o.command_timeout_ms = slow(2000);
        o.reconnect_window_ms = slow(2000);
        if (cr_client_new(&o, &clients[i]) != CR_OK ||
            cr_lock_new(clients[i], "m", &subs[i]) != CR_OK)
            return -1;
        redisReply *r = cr_test_redis_cmd(&servers[i], "FLUSHALL");
        if (r == NULL)
            return -1;
        freeReplyObject(r);
    }
    return 0;
}

static int
clients_down(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < SERVERS; i++) {
        cr_lock_free(subs[i]);
        cr_client_free(clients[i]);
        subs[i] = NULL;
        clients[i] = NULL;
    }
    test_redis = servers[0];
    return 0;
}

/* EXISTS m on server i. */
static long long
exists_on(int i)
{
    redisReply *r = cr_test_redis_cmd(&servers[i], "EXISTS m");
    long long v = r != NULL ? r->integer : -1;

    if (r != NULL)
        freeReplyObject(r);
    return v;
}

static long long
pttl_on(int i)
{
    redisReply *r = cr_test_redis_cmd(&servers[i], "PTTL m");
    long long v = r != NULL ? r->integer : -99;

    if (r != NULL)
        freeReplyObject(r);
    return v;
}

static void
test_multilock_takes_every_sub_lock_and_unlocks_everywhere(void **state)
{
    cr_lock *m;
    bool held = false;
    int64_t n = 0;
    int i;

    (void)state;
    assert_int_equal(cr_multilock_new(subs, SERVERS, &m), CR_OK);
    assert_int_equal(cr_lock_try_lock(m, 0, 5000), CR_OK);
    for (i = 0; i < SERVERS; i++) {
        assert_int_equal(exists_on(i), 1);
        assert_true(pttl_on(i) > 0 && pttl_on(i) <= 5000);
    }
    assert_int_equal(cr_lock_is_held_by_current_thread(m, &held), CR_OK);
    assert_true(held);
    assert_int_equal(cr_lock_get_hold_count(m, &n), CR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(cr_lock_unlock(m), CR_OK);
    for (i = 0; i < SERVERS; i++)
        assert_int_equal(exists_on(i), 0);
    /* What Redisson does not support is refused, not faked. */
    assert_int_equal(cr_lock_force_unlock(m, NULL), CR_ENOTSUP);
    assert_int_equal(cr_lock_is_locked(m, &held), CR_ENOTSUP);
    cr_lock_free(m);
}

static void
test_multilock_fails_whole_and_leaves_nothing_when_one_sub_lock_is_held(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *other;
    cr_lock *blocker, *m;
    int64_t start;

    (void)state;
    o.url = servers[1].url;
    assert_int_equal(cr_client_new(&o, &other), CR_OK);
    assert_int_equal(cr_lock_new(other, "m", &blocker), CR_OK);
    assert_int_equal(cr_lock_lock(blocker, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_multilock_new(subs, SERVERS, &m), CR_OK);
    assert_int_equal(cr_lock_try_lock(m, 0, 5000), CR_BUSY);
    assert_int_equal(exists_on(0), 0);
    assert_int_equal(exists_on(2), 0);
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(m, 300, 5000), CR_BUSY);
    assert_true(cr_test_now_ms() - start < slow(2000));
    assert_int_equal(exists_on(0), 0);
    assert_int_equal(exists_on(2), 0);
    assert_int_equal(cr_lock_unlock(blocker), CR_OK);
    assert_int_equal(cr_lock_try_lock(m, slow(3000), 5000), CR_OK);
    assert_int_equal(cr_lock_unlock(m), CR_OK);
    cr_lock_free(m);
    cr_lock_free(blocker);
    cr_client_free(other);
}

static void
test_redlock_acquires_with_one_server_stopped_but_not_with_two(void **state)
{
    cr_lock *r;
    int64_t validity = 0;

    (void)state;
    assert_int_equal(cr_redlock_new(subs, SERVERS, &r), CR_OK);
    cr_test_redis_stop(&servers[2]);
    assert_int_equal(cr_lock_try_lock(r, slow(2000), 10000), CR_OK);
    assert_int_equal(cr_multilock_get_validity(r, &validity), CR_OK);
    assert_true(validity > 10000 - slow(2000) && validity < 10000);
    assert_int_equal(exists_on(0), 1);
    assert_int_equal(exists_on(1), 1);
    /* The unlock of a majority is a success; the dead server's error is
     * not hidden from cr_last_error either way. */
    assert_int_equal(cr_lock_unlock(r), CR_OK);
    assert_int_equal(exists_on(0), 0);
    assert_int_equal(exists_on(1), 0);
    cr_test_redis_stop(&servers[1]);
    assert_int_equal(cr_lock_try_lock(r, 300, 10000), CR_EIO);
    assert_int_equal(exists_on(0), 0);
    cr_lock_free(r);
}

static void
test_redlock_with_a_lease_shorter_than_the_acquisition_fails(void **state)
{
    cr_lock *r;
    int i;

    (void)state;
    assert_int_equal(cr_redlock_new(subs, SERVERS, &r), CR_OK);
    /* A 2 ms lease leaves no validity after the drift allowance. */
    assert_int_equal(cr_lock_try_lock(r, 0, 2), CR_BUSY);
    for (i = 0; i < SERVERS; i++)
        assert_int_equal(exists_on(i), 0);
    cr_lock_free(r);
}

static void
test_multilock_watchdog_keeps_every_sub_lock_alive(void **state)
{
    cr_lock *m;
    int64_t validity = 0, end;
    int i;

    (void)state;
    assert_int_equal(cr_multilock_new(subs, SERVERS, &m), CR_OK);
    assert_int_equal(cr_lock_lock(m, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_multilock_get_validity(m, &validity), CR_OK);
    assert_int_equal(validity, CR_LEASE_WATCHDOG);
    end = cr_test_now_ms() + 1200; /* four 300 ms watchdog timeouts */
    while (cr_test_now_ms() < end) {
        for (i = 0; i < SERVERS; i++)
            assert_true(pttl_on(i) > 0);
        usleep(30000);
    }
    assert_int_equal(cr_lock_unlock(m), CR_OK);
    for (i = 0; i < SERVERS; i++)
        assert_int_equal(exists_on(i), 0);
    cr_lock_free(m);
}

/* A relay between one client and one server that holds what the client
 * sends for `delay_ms` before passing it on: a server that answers late,
 * counted from each request's arrival (a server-side stall such as DEBUG
 * SLEEP is counted from when it began, so serial calls would not add up).
 * Replies pass at once. */
#define RELAY_PAIRS 8

typedef struct relay {
    int listen_fd, port, upstream_port;
    int fds[RELAY_PAIRS][2]; /* client side, server side; -1: unused */
    atomic_int delay_ms;
    atomic_bool stop;
    pthread_t thread;
} relay;

/* Copies what is readable on `from` to `to`; false on EOF or error. */
static bool
pass_on(int from, int to, int delay_ms)
{
    char buf[16384];
    ssize_t n = read(from, buf, sizeof(buf)), off = 0;

    if (n <= 0)
        return false;
    if (delay_ms > 0)
        usleep((useconds_t)delay_ms * 1000); /* the late server itself */
    while (off < n) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));

        if (w <= 0)
            return false;
        off += w;
    }
    return true;
}

static void *
relay_run(void *arg)
{
    relay *r = arg;

    while (!atomic_load(&r->stop)) {
        struct pollfd pfd[1 + 2 * RELAY_PAIRS];
        int where[1 + 2 * RELAY_PAIRS], i, n = 1;

        pfd[0].fd = r->listen_fd;
        pfd[0].events = POLLIN;
        for (i = 0; i < RELAY_PAIRS; i++)
            if (r->fds[i][0] >= 0) {
                pfd[n] = (struct pollfd){r->fds[i][0], POLLIN, 0};
                where[n++] = 2 * i;
                pfd[n] = (struct pollfd){r->fds[i][1], POLLIN, 0};
                where[n++] = 2 * i + 1;
            }
        if (poll(pfd, (nfds_t)n, 50) <= 0)
            continue;
        for (i = 1; i < n; i++) {
            int pair = where[i] / 2, side = where[i] % 2;

            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) ||
                r->fds[pair][0] < 0)
                continue;
            if (!pass_on(r->fds[pair][side], r->fds[pair][!side],
                         side == 0 ? atomic_load(&r->delay_ms) : 0)) {
                close(r->fds[pair][0]);
                close(r->fds[pair][1]);
                r->fds[pair][0] = r->fds[pair][1] = -1;
            }
        }
        if (pfd[0].revents & POLLIN) {
            struct sockaddr_in a = {.sin_family = AF_INET};
            int c = accept(r->listen_fd, NULL, NULL), u;

            if (c < 0)
                continue;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            a.sin_port = htons((uint16_t)r->upstream_port);
            u = socket(AF_INET, SOCK_STREAM, 0);
            for (i = 0; i < RELAY_PAIRS && r->fds[i][0] >= 0; i++)
                ;
            if (u < 0 || i == RELAY_PAIRS ||
                connect(u, (struct sockaddr *)&a, sizeof(a)) != 0) {
                close(c);
                if (u >= 0)
                    close(u);
                continue;
            }
            r->fds[i][0] = c;
            r->fds[i][1] = u;
        }
    }
    return NULL;
}

/* Starts a relay to server `srv` on a free loopback port; 0 or -1. */
static int
relay_start(relay *r, const cr_test_redis *srv)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int i;

    memset(r, 0, sizeof(*r));
    for (i = 0; i < RELAY_PAIRS; i++)
        r->fds[i][0] = r->fds[i][1] = -1;
    atomic_init(&r->delay_ms, 0);
    atomic_init(&r->stop, false);
    r->upstream_port = srv->port;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((r->listen_fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        bind(r->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(r->listen_fd, RELAY_PAIRS) != 0 ||
        getsockname(r->listen_fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    r->port = ntohs(a.sin_port);
    return pthread_create(&r->thread, NULL, relay_run, r) == 0 ? 0 : -1;
}

static void
relay_stop(relay *r)
{
    int i;

    atomic_store(&r->stop, true);
    pthread_join(r->thread, NULL);
    for (i = 0; i < RELAY_PAIRS; i++)
        if (r->fds[i][0] >= 0) {
            close(r->fds[i][0]);
            close(r->fds[i][1]);
        }
    close(r->listen_fd);
}

static void
test_multilock_contacts_servers_in_parallel(void **state)
{
    const int delay_ms = 300;
    relay relays[SERVERS];
    cr_client *c[SERVERS];
    cr_lock *via[SERVERS], *m;
    int64_t start, took;
    int i;

    (void)state;
    for (i = 0; i < SERVERS; i++) {
        cr_client_options o = CR_CLIENT_OPTIONS_INIT;
        char url[64];

        assert_int_equal(relay_start(&relays[i], &servers[i]), 0);
        snprintf(url, sizeof(url), "redis://127.0.0.1:%d", relays[i].port);
        o.url = url;
        o.command_timeout_ms = slow(5000);
        assert_int_equal(cr_client_new(&o, &c[i]), CR_OK);
        assert_int_equal(cr_lock_new(c[i], "m", &via[i]), CR_OK);
    }
    assert_int_equal(cr_multilock_new(via, SERVERS, &m), CR_OK);
    /* Every server answers 300 ms after each request: one after another
     * the acquisition would take 900. */
    for (i = 0; i < SERVERS; i++)
        atomic_store(&relays[i].delay_ms, delay_ms);
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(m, 0, 5000), CR_OK);
    took = cr_test_now_ms() - start;
    for (i = 0; i < SERVERS; i++)
        atomic_store(&relays[i].delay_ms, 0);
    for (i = 0; i < SERVERS; i++)
        assert_int_equal(exists_on(i), 1);
    assert_true(took >= delay_ms);
    assert_true(took < slow(2 * delay_ms));
    assert_int_equal(cr_lock_unlock(m), CR_OK);
    for (i = 0; i < SERVERS; i++)
        assert_int_equal(exists_on(i), 0);
    cr_lock_free(m);
    for (i = 0; i < SERVERS; i++) {
        cr_lock_free(via[i]);
        cr_client_free(c[i]);
        relay_stop(&relays[i]);
    }
}

static void
test_multilock_refuses_bad_sub_lock_lists(void **state)
{
    cr_lock *twice[2], *m = NULL;

    (void)state;
    twice[0] = subs[0];
    twice[1] = subs[0];
    assert_int_equal(cr_multilock_new(NULL, 1, &m), CR_EINVAL);
    assert_int_equal(cr_multilock_new(subs, 0, &m), CR_EINVAL);
    assert_int_equal(cr_multilock_new(twice, 2, &m), CR_EINVAL);
    assert_int_equal(cr_redlock_new(subs, 65, &m), CR_EINVAL);
    assert_null(m);
    assert_int_equal(cr_multilock_get_validity(subs[0], NULL), CR_EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, clients_up, clients_down)
        T(test_multilock_takes_every_sub_lock_and_unlocks_everywhere),
        T(test_multilock_fails_whole_and_leaves_nothing_when_one_sub_lock_is_held),
        T(test_redlock_acquires_with_one_server_stopped_but_not_with_two),
        T(test_redlock_with_a_lease_shorter_than_the_acquisition_fails),
        T(test_multilock_watchdog_keeps_every_sub_lock_alive),
        T(test_multilock_contacts_servers_in_parallel),
        T(test_multilock_refuses_bad_sub_lock_lists),
#undef T
    };

    (void)client_up;
    (void)client_down;
    return cmocka_run_group_tests(tests, three_up, three_down);
}
