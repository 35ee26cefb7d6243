/* SPDX-License-Identifier: MIT */
/*
 * Tests of the fault fixtures themselves. Each fault server mode is seen
 * through a raw socket, as a client library would see it; the accept
 * counts are checked against connections opened on purpose; the relay
 * forwards to a private redis-server and its freezes, cut and refusal are
 * checked byte by byte; the TLS certificates are checked with openssl, and
 * TLS servers, a TLS sentinel among them, with redis-cli and openssl
 * s_client. The program exits with 77 (a skip for automake) when
 * redis-server is not installed; the TLS tests are skipped without
 * openssl.
 */
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fault_server.h"
#include "redis_fixture.h"
#include "tls_fixture.h"

/* What the fault modes answer, as fault_server.h describes them. */
#define HTTP_REPLY                                                          \
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
#define DENIED_REPLY                                                        \
    "-DENIED Redis is running in protected mode because protected mode is " \
    "enabled\r\n"
#define GARBAGE_REPLY "\x16\x03\x01\x00\x05hello"

/* How long a test waits for something that should come at once, and how
 * long it watches for something that should not come at all. */
#define WAIT_MS 3000
#define QUIET_MS 200

/* The plain server behind the relay, the TLS servers (the first wants
 * client certificates, the second shows the wrong name) and their
 * certificates, all started by main. */
static cr_test_redis server;
static cr_test_redis tls_server;
static cr_test_redis wrong_server;
static cr_test_tls_certs certs;
static char certs_dir[64];
static bool have_tls;

/* ------------------------------------------------------------- helpers */

/* Open a blocking TCP connection to 127.0.0.1:port whose reads give up
 * after 2 s, so that a fixture that fails to answer fails the test rather
 * than hanging it. */
static int
connect_to(int port)
{
    struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Send all of the C string `text` on fd. */
static void
send_text(int fd, const char *text)
{
    size_t len = strlen(text);

    assert_int_equal(send(fd, text, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Read exactly `len` bytes from fd into buf (which gets a NUL after them);
 * the read timeout of connect_to fails the test when they do not come. */
static void
read_exact(int fd, char *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = recv(fd, buf + got, len - got, 0);

        assert_true(n > 0);
        got += (size_t)n;
    }
    buf[len] = '\0';
}

/* Read from fd until end of file, into buf (NUL-terminated, at most
 * size - 1 bytes). Returns the number of bytes read. */
static size_t
read_to_eof(int fd, char *buf, size_t size)
{
    size_t got = 0;

    for (;;) {
        ssize_t n = recv(fd, buf + got, size - 1 - got, 0);

        assert_true(n >= 0);
        if (n == 0)
            break;
        got += (size_t)n;
        assert_true(got < size - 1);
    }
    buf[got] = '\0';
    return got;
}

/* Tell whether fd has something to read (bytes, an end or an error)
 * within ms milliseconds. */
static bool
readable_within(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, ms) == 1;
}

/* Send "PING" on fd and check that "+PONG" comes back. */
static void
expect_pong(int fd)
{
    char buf[8];

    send_text(fd, "PING\r\n");
    read_exact(fd, buf, 7);
    assert_string_equal(buf, "+PONG\r\n");
}

/* Check that a hiredis connection to 127.0.0.1:port gets PONG. */
static void
expect_hiredis_pong(int port)
{
    struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    redisReply *reply;

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisSetTimeout(c, tv);
    reply = redisCommand(c, "PING");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    assert_string_equal(reply->str, "PONG");
    freeReplyObject(reply);
    redisFree(c);
}

/* The fault server that a counting condition looks at, and how many
 * accepts it waits for. */
typedef struct accept_wait {
    cr_test_fault_server *f;
    size_t count;
} accept_wait;

/* A condition for cr_test_wait_until: the fault server has accepted at
 * least the awaited number of connections. */
static bool
accepted(void *arg)
{
    accept_wait *w = arg;

    return cr_test_fault_accepts(w->f) >= w->count;
}

/* A condition for cr_test_wait_until: the relay at arg has frozen its
 * replies after seeing its needle. */
static bool
relay_frozen(void *arg)
{
    return cr_test_relay_frozen(arg);
}

/* The key a condition looks at on the plain server, and the value it
 * waits for. */
typedef struct key_wait {
    const char *key;
    const char *value;
} key_wait;

/* A condition for cr_test_wait_until: the key holds the awaited value on
 * the plain server. */
static bool
key_is(void *arg)
{
    key_wait *w = arg;
    redisReply *reply = cr_test_redis_cmd(&server, "GET %s", w->key);
    bool same = reply != NULL && reply->type == REDIS_REPLY_STRING &&
                strcmp(reply->str, w->value) == 0;

    if (reply != NULL)
        freeReplyObject(reply);
    return same;
}

/* Run the shell command `cmd` and tell whether its output (standard error
 * included by the command itself) contains `needle`. */
static bool
output_has(const char *cmd, const char *needle)
{
    char buf[8192];
    size_t len = 0, n;
    FILE *p = popen(cmd, "r");

    assert_non_null(p);
    while (len < sizeof(buf) - 1 &&
           (n = fread(buf + len, 1, sizeof(buf) - 1 - len, p)) > 0)
        len += n;
    buf[len] = '\0';
    pclose(p);
    return strstr(buf, needle) != NULL;
}

/* ------------------------------------------------------ fault servers */

/* A CLOSE server ends each connection at once: the first read of a client
 * that sent nothing returns end of file. */
static void
test_fault_close_ends_connection_at_once(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_CLOSE);
    char c;
    int fd;

    (void)state;
    assert_non_null(f);
    fd = connect_to(cr_test_fault_port(f));
    assert_int_equal(recv(fd, &c, 1, 0), 0);
    close(fd);
    cr_test_fault_stop(f);
}

/* A RESET server resets each connection: the client's read fails with
 * ECONNRESET. */
static void
test_fault_reset_resets_connection(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_RESET);
    char c;
    int fd;

    (void)state;
    assert_non_null(f);
    fd = connect_to(cr_test_fault_port(f));
    assert_int_equal(recv(fd, &c, 1, 0), -1);
    assert_int_equal(errno, ECONNRESET);
    close(fd);
    cr_test_fault_stop(f);
}

/* An HTTP server answers the first input with a 400 response and ends the
 * connection. */
static void
test_fault_http_answers_bad_request_and_closes(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_HTTP);
    char buf[256];
    int fd;

    (void)state;
    assert_non_null(f);
    fd = connect_to(cr_test_fault_port(f));
    send_text(fd, "PING\r\n");
    read_to_eof(fd, buf, sizeof(buf));
    assert_memory_equal(buf, "HTTP/1.1 400", 12);
    assert_string_equal(buf, HTTP_REPLY);
    close(fd);
    cr_test_fault_stop(f);
}

/* A SILENT server takes the connection and its input and never answers,
 * not within 200 ms and not after more input. */
static void
test_fault_silent_never_answers(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_SILENT);
    accept_wait w = { .count = 1 };
    int fd;

    (void)state;
    assert_non_null(f);
    w.f = f;
    fd = connect_to(cr_test_fault_port(f));
    assert_true(cr_test_wait_until(accepted, &w, WAIT_MS));
    send_text(fd, "PING\r\n");
    assert_false(readable_within(fd, QUIET_MS));
    /* The connection is still open: more input is taken and dropped. */
    send_text(fd, "PING\r\n");
    assert_false(readable_within(fd, 20));
    close(fd);
    cr_test_fault_stop(f);
}

/* A DRIP server starts an endless bulk reply and then sends one byte per
 * drip_ms, so that a 200 ms receive timeout, restarted by each byte, never
 * fires although the reply takes longer than that. */
static void
test_fault_drip_sends_one_byte_at_a_time(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_DRIP);
    struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
    char buf[16];
    int64_t first;
    int fd, i;

    (void)state;
    assert_non_null(f);
    cr_test_fault_set_drip_ms(f, 20);
    fd = connect_to(cr_test_fault_port(f));
    /* A 200 ms receive timeout, which each byte restarts. */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    send_text(fd, "PING\r\n");
    read_exact(fd, buf, 10);
    assert_string_equal(buf, "$1000000\r\n");
    read_exact(fd, buf, 1);
    first = cr_test_now_ms();
    for (i = 0; i < 12; i++) {
        read_exact(fd, buf, 1);
        assert_int_equal(buf[0], 'x');
    }
    /* Twelve more bytes, at least 19 ms apart: the reply took longer than
     * the timeout, which never fired. */
    assert_true(cr_test_now_ms() - first >= 12 * 19);
    close(fd);
    cr_test_fault_stop(f);
}

/* A DENIED server answers the first command with the protected-mode error
 * and ends the connection. */
static void
test_fault_denied_answers_protected_mode_error_and_closes(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_DENIED);
    char buf[256];
    int fd;

    (void)state;
    assert_non_null(f);
    fd = connect_to(cr_test_fault_port(f));
    send_text(fd, "*1\r\n$4\r\nPING\r\n");
    read_to_eof(fd, buf, sizeof(buf));
    assert_string_equal(buf, DENIED_REPLY);
    close(fd);
    cr_test_fault_stop(f);
}

/* A GARBAGE server answers each input, and only input, with the same bytes
 * that are not RESP. */
static void
test_fault_garbage_answers_each_input_with_tls_bytes(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_GARBAGE);
    char buf[16];
    int fd;

    (void)state;
    assert_non_null(f);
    fd = connect_to(cr_test_fault_port(f));
    send_text(fd, "PING\r\n");
    read_exact(fd, buf, 10);
    assert_memory_equal(buf, GARBAGE_REPLY, 10);
    send_text(fd, "PING\r\n");
    read_exact(fd, buf, 10);
    assert_memory_equal(buf, GARBAGE_REPLY, 10);
    assert_false(readable_within(fd, 20));
    close(fd);
    cr_test_fault_stop(f);
}

/* Thirty connections opened at once count as thirty accepts, all within
 * one second and all between the times taken around them. */
static void
test_fault_counts_accepts_per_second_and_between(void **state)
{
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_SILENT);
    accept_wait w = { .count = 30 };
    int64_t from, to;
    int fds[30];
    size_t i;

    (void)state;
    assert_non_null(f);
    w.f = f;
    assert_int_equal(cr_test_fault_accepts(f), 0);
    assert_int_equal(cr_test_fault_max_per_second(f), 0);
    from = cr_test_now_ms();
    for (i = 0; i < 30; i++)
        fds[i] = connect_to(cr_test_fault_port(f));
    assert_true(cr_test_wait_until(accepted, &w, WAIT_MS));
    to = cr_test_now_ms();
    assert_int_equal(cr_test_fault_accepts(f), 30);
    assert_true(cr_test_fault_max_per_second(f) >= 30);
    assert_int_equal(cr_test_fault_accepts_between(f, from, to), 30);
    assert_int_equal(cr_test_fault_accepts_between(f, from - 5000, from - 1),
                     0);
    assert_int_equal(cr_test_fault_accepts_between(f, to + 1, to + 5000), 0);
    for (i = 0; i < 30; i++)
        close(fds[i]);
    cr_test_fault_stop(f);
}

/* Past CR_TEST_FAULT_MAX_LIVE connections, accepting another closes the
 * oldest, and the newest stays open. */
static void
test_fault_closes_oldest_beyond_live_limit(void **state)
{
    enum { N = CR_TEST_FAULT_MAX_LIVE + 44 };
    cr_test_fault_server *f = cr_test_fault_start(CR_TEST_FAULT_SILENT);
    accept_wait w = { .count = N };
    int *fds = calloc(N, sizeof(int));
    char c;
    size_t i;

    (void)state;
    assert_non_null(f);
    assert_non_null(fds);
    w.f = f;
    for (i = 0; i < N; i++)
        fds[i] = connect_to(cr_test_fault_port(f));
    assert_true(cr_test_wait_until(accepted, &w, WAIT_MS));
    /* The first connection was closed to make room; the last is open. */
    assert_int_equal(recv(fds[0], &c, 1, 0), 0);
    assert_false(readable_within(fds[N - 1], 20));
    for (i = 0; i < N; i++)
        close(fds[i]);
    free(fds);
    cr_test_fault_stop(f);
}

/* ---------------------------------------------------------------- relay */

/* Start a relay to the plain server as the test's state. */
static int
relay_up(void **state)
{
    cr_test_relay *r = cr_test_relay_start("127.0.0.1", server.port);

    if (r == NULL)
        return -1;
    *state = r;
    return 0;
}

/* Stop the test's relay. */
static int
relay_down(void **state)
{
    cr_test_relay_stop(*state);
    return 0;
}

/* The relay listens on a port of its own and forwards a hiredis PING to
 * redis-server and its PONG back. */
static void
test_relay_passes_ping_to_redis(void **state)
{
    cr_test_relay *r = *state;

    assert_true(cr_test_relay_port(r) > 0);
    assert_int_not_equal(cr_test_relay_port(r), server.port);
    expect_hiredis_pong(cr_test_relay_port(r));
    assert_int_equal(cr_test_relay_accepts(r), 1);
}

/* With both directions frozen a PING gets no answer, and the PONG arrives
 * once the relay thaws. */
static void
test_relay_freeze_holds_ping_until_thaw(void **state)
{
    cr_test_relay *r = *state;
    char buf[8];
    int fd = connect_to(cr_test_relay_port(r));

    expect_pong(fd);
    cr_test_relay_freeze(r, true, true);
    send_text(fd, "PING\r\n");
    assert_false(readable_within(fd, QUIET_MS));
    cr_test_relay_thaw(r);
    read_exact(fd, buf, 7);
    assert_string_equal(buf, "+PONG\r\n");
    close(fd);
}

/* With requests frozen a SET does not reach the server; after the thaw it
 * runs and is answered. */
static void
test_relay_freeze_requests_keeps_command_from_server(void **state)
{
    cr_test_relay *r = *state;
    key_wait w = { .key = "relay:held", .value = "1" };
    char buf[8];
    int fd = connect_to(cr_test_relay_port(r));

    expect_pong(fd);
    cr_test_relay_freeze(r, true, false);
    send_text(fd, "SET relay:held 1\r\n");
    assert_false(readable_within(fd, QUIET_MS));
    assert_false(key_is(&w));
    cr_test_relay_thaw(r);
    read_exact(fd, buf, 5);
    assert_string_equal(buf, "+OK\r\n");
    assert_true(key_is(&w));
    close(fd);
}

/* freeze_replies_after("SET") lets a PING through, then freezes the
 * replies right after the SET went out: the server has run the SET, but
 * its OK only arrives after the thaw, and the needle fires only once. */
static void
test_relay_freeze_replies_after_runs_command_but_holds_reply(void **state)
{
    cr_test_relay *r = *state;
    key_wait w = { .key = "relay:ran", .value = "1" };
    char buf[8];
    int fd = connect_to(cr_test_relay_port(r));

    assert_int_equal(cr_test_relay_freeze_replies_after(r, ""), -1);
    assert_int_equal(cr_test_relay_freeze_replies_after(r, "SET"), 0);
    /* Other commands pass as before. */
    expect_pong(fd);
    assert_false(cr_test_relay_frozen(r));
    send_text(fd, "SET relay:ran 1\r\n");
    assert_true(cr_test_wait_until(relay_frozen, r, WAIT_MS));
    assert_true(cr_test_wait_until(key_is, &w, WAIT_MS));
    assert_false(readable_within(fd, QUIET_MS));
    cr_test_relay_thaw(r);
    assert_false(cr_test_relay_frozen(r));
    read_exact(fd, buf, 5);
    assert_string_equal(buf, "+OK\r\n");
    /* The needle fired once: the next SET is answered at once. */
    send_text(fd, "SET relay:ran 2\r\n");
    read_exact(fd, buf, 5);
    assert_string_equal(buf, "+OK\r\n");
    close(fd);
}

/* A condition for cr_test_wait_until: a client of the plain server has
 * sent part of a command, which the server holds in its query buffer. */
static bool
partial_command_held(void *arg)
{
    redisReply *reply = cr_test_redis_cmd(&server, "CLIENT LIST");
    bool held = reply != NULL && reply->type == REDIS_REPLY_STRING &&
                strstr(reply->str, " qbuf=2 ") != NULL;

    (void)arg;
    if (reply != NULL)
        freeReplyObject(reply);
    return held;
}

/* A needle split between two chunks is found: "SE" goes out alone (the
 * server holds it, waiting for the rest), and the chunk with "T" freezes
 * the replies. */
static void
test_relay_freeze_replies_after_finds_needle_split_between_chunks(
    void **state)
{
    cr_test_relay *r = *state;
    key_wait w = { .key = "relay:split", .value = "1" };
    char buf[8];
    int fd = connect_to(cr_test_relay_port(r));

    expect_pong(fd);
    assert_int_equal(cr_test_relay_freeze_replies_after(r, "SET"), 0);
    send_text(fd, "SE");
    assert_true(cr_test_wait_until(partial_command_held, NULL, WAIT_MS));
    assert_false(cr_test_relay_frozen(r));
    send_text(fd, "T relay:split 1\r\n");
    assert_true(cr_test_wait_until(relay_frozen, r, WAIT_MS));
    assert_true(cr_test_wait_until(key_is, &w, WAIT_MS));
    assert_false(readable_within(fd, QUIET_MS));
    cr_test_relay_thaw(r);
    read_exact(fd, buf, 5);
    assert_string_equal(buf, "+OK\r\n");
    close(fd);
}

/* A cut resets the live connection, and a new one is relayed as before. */
static void
test_relay_cut_resets_live_connections(void **state)
{
    cr_test_relay *r = *state;
    int fd = connect_to(cr_test_relay_port(r));
    char c;

    expect_pong(fd);
    cr_test_relay_cut(r);
    assert_int_equal(recv(fd, &c, 1, 0), -1);
    assert_int_equal(errno, ECONNRESET);
    close(fd);
    /* New connections are relayed as before. */
    expect_hiredis_pong(cr_test_relay_port(r));
}

/* While refusing, the relay accepts new connections and closes them at
 * once, counting them, and leaves the live one alone. */
static void
test_relay_refuse_closes_new_connections(void **state)
{
    cr_test_relay *r = *state;
    int fd = connect_to(cr_test_relay_port(r));
    int refused;
    char c;

    expect_pong(fd);
    cr_test_relay_refuse(r, true);
    refused = connect_to(cr_test_relay_port(r));
    assert_int_equal(recv(refused, &c, 1, 0), 0);
    close(refused);
    assert_int_equal(cr_test_relay_accepts(r), 2);
    /* The live connection is left alone, and refusing can end. */
    expect_pong(fd);
    cr_test_relay_refuse(r, false);
    expect_hiredis_pong(cr_test_relay_port(r));
    close(fd);
}

/* The number of clients connected to the plain server, -1 on error. */
static long
connected_clients(void)
{
    redisReply *reply = cr_test_redis_cmd(&server, "INFO clients");
    const char *p;
    long n = -1;

    if (reply != NULL && reply->type == REDIS_REPLY_STRING &&
        (p = strstr(reply->str, "connected_clients:")) != NULL)
        n = strtol(p + strlen("connected_clients:"), NULL, 10);
    if (reply != NULL)
        freeReplyObject(reply);
    return n;
}

/* A condition for cr_test_wait_until: only the asking connection is left
 * on the plain server. */
static bool
no_other_client(void *arg)
{
    (void)arg;
    return connected_clients() == 1;
}

/* A client that closes its connection to the relay makes the relay close
 * its connection to the server too. */
static void
test_relay_closes_server_side_when_client_closes(void **state)
{
    cr_test_relay *r = *state;
    int fd;

    /* Connections of earlier tests may take a moment to go. */
    assert_true(cr_test_wait_until(no_other_client, NULL, WAIT_MS));
    fd = connect_to(cr_test_relay_port(r));
    expect_pong(fd);
    assert_int_equal(connected_clients(), 2);
    close(fd);
    assert_true(cr_test_wait_until(no_other_client, NULL, WAIT_MS));
}

/* ------------------------------------------------------------------ TLS */

/* Skip the calling TLS test when openssl is missing. cmocka counts a skip
 * only from the test itself, not from its setup. */
static void
need_tls(void)
{
    if (!have_tls)
        skip();
}

/* The certificates chain to their CA and not to the other one, carry the
 * names and the key usage they are made for, and come with their keys. */
static void
test_tls_certs_are_made_and_chain_to_their_ca(void **state)
{
    char cmd[2048];

    (void)state;
    need_tls();
    snprintf(cmd, sizeof(cmd), "openssl verify -CAfile %s %s %s %s 2>&1",
             certs.ca_cert, certs.server_cert, certs.wrong_cert,
             certs.client_cert);
    assert_true(output_has(cmd, "server.crt: OK"));
    assert_true(output_has(cmd, "wrong.crt: OK"));
    assert_true(output_has(cmd, "client.crt: OK"));
    snprintf(cmd, sizeof(cmd), "openssl verify -CAfile %s %s 2>&1",
             certs.other_ca_cert, certs.server_cert);
    assert_false(output_has(cmd, ": OK"));
    snprintf(cmd, sizeof(cmd), "openssl x509 -noout -subject -ext "
             "subjectAltName -in %s 2>&1", certs.server_cert);
    assert_true(output_has(cmd, "CN = localhost"));
    assert_true(output_has(cmd, "IP Address:127.0.0.1, DNS:localhost"));
    snprintf(cmd, sizeof(cmd), "openssl x509 -noout -ext subjectAltName "
             "-in %s 2>&1", certs.wrong_cert);
    assert_true(output_has(cmd, "DNS:wrong.example.com"));
    assert_false(output_has(cmd, "127.0.0.1"));
    snprintf(cmd, sizeof(cmd), "openssl x509 -noout -ext extendedKeyUsage "
             "-in %s 2>&1", certs.client_cert);
    assert_true(output_has(cmd, "TLS Web Client Authentication"));
    assert_int_equal(access(certs.ca_key, R_OK), 0);
    assert_int_equal(access(certs.server_key, R_OK), 0);
    assert_int_equal(access(certs.wrong_key, R_OK), 0);
    assert_int_equal(access(certs.client_key, R_OK), 0);
}

/* A second call for the same directory reuses the set it finds there. */
static void
test_tls_make_certs_reuses_existing_set(void **state)
{
    cr_test_tls_certs again;
    struct stat before, after;

    (void)state;
    need_tls();
    assert_int_equal(stat(certs.ca_cert, &before), 0);
    assert_int_equal(cr_test_tls_make_certs(certs_dir, &again), 0);
    assert_int_equal(stat(certs.ca_cert, &after), 0);
    assert_memory_equal(&before.st_mtim, &after.st_mtim,
                        sizeof(before.st_mtim));
    assert_string_equal(again.server_cert, certs.server_cert);
    assert_string_equal(again.other_ca_cert, certs.other_ca_cert);
}

/* A TLS server has its tls_port and tls_url, answers PING over TLS to a
 * client with a certificate, and still serves the fixture on its plain
 * port. */
static void
test_tls_server_answers_ping_over_tls(void **state)
{
    char url[64], out[64];

    (void)state;
    need_tls();
    assert_true(tls_server.tls_port > 0);
    assert_int_not_equal(tls_server.tls_port, tls_server.port);
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", tls_server.tls_port);
    assert_string_equal(tls_server.tls_url, url);
    assert_int_equal(cr_test_tls_cli(&tls_server, &certs, "PING", out,
                                     sizeof(out)), 0);
    assert_string_equal(out, "PONG\n");
    /* The plain port works for the fixture's own checks. */
    assert_int_equal(cr_test_redis_flushall(&tls_server), 0);
}

/* A TLS server that requires client certificates does not answer a client
 * that has none. */
static void
test_tls_server_refuses_client_without_certificate(void **state)
{
    cr_test_tls_certs anonymous = certs;
    char out[64];

    (void)state;
    need_tls();
    anonymous.client_cert[0] = '\0';
    anonymous.client_key[0] = '\0';
    assert_int_not_equal(cr_test_tls_cli(&tls_server, &anonymous, "PING",
                                         out, sizeof(out)), 0);
    assert_null(strstr(out, "PONG"));
}

/* A plain hiredis connection to the TLS port gets no PONG, and knows it
 * within the 1 s it allows. */
static void
test_tls_port_gives_plain_hiredis_no_pong(void **state)
{
    struct timeval tv = { .tv_sec = 1, .tv_usec = 0 };
    redisContext *c;
    redisReply *reply;
    int64_t start = cr_test_now_ms();

    (void)state;
    need_tls();
    c = redisConnectWithTimeout("127.0.0.1", tls_server.tls_port, tv);
    assert_non_null(c);
    if (c->err == 0) {
        redisSetTimeout(c, tv);
        reply = redisCommand(c, "PING");
        assert_true(reply == NULL || reply->type != REDIS_REPLY_STATUS ||
                    strcmp(reply->str, "PONG") != 0);
        if (reply != NULL)
            freeReplyObject(reply);
    }
    redisFree(c);
    assert_true(cr_test_now_ms() - start < 1500);
}

/* The localhost certificate passes openssl's check of 127.0.0.1, and the
 * wrong-name server's certificate fails it. */
static void
test_tls_wrong_name_server_fails_address_check(void **state)
{
    char cmd[2048];

    (void)state;
    need_tls();
    snprintf(cmd, sizeof(cmd), "openssl s_client -connect 127.0.0.1:%d "
             "-CAfile %s -cert %s -key %s -verify_ip 127.0.0.1 "
             "</dev/null 2>&1", tls_server.tls_port, certs.ca_cert,
             certs.client_cert, certs.client_key);
    assert_true(output_has(cmd, "Verify return code: 0 (ok)"));
    snprintf(cmd, sizeof(cmd), "openssl s_client -connect 127.0.0.1:%d "
             "-CAfile %s -verify_ip 127.0.0.1 </dev/null 2>&1",
             wrong_server.tls_port, certs.ca_cert);
    assert_true(output_has(cmd, "IP address mismatch"));
    assert_false(output_has(cmd, "Verify return code: 0 (ok)"));
}

/* A stopped TLS server is restarted on both of its ports and answers over
 * TLS again. */
static void
test_tls_restart_reuses_both_ports(void **state)
{
    int port = tls_server.port, tls_port = tls_server.tls_port;
    char out[64];

    (void)state;
    need_tls();
    cr_test_redis_stop(&tls_server);
    assert_int_equal(tls_server.pid, 0);
    assert_int_not_equal(cr_test_tls_cli(&tls_server, &certs, "PING", out,
                                         sizeof(out)), 0);
    assert_int_equal(cr_test_redis_restart(&tls_server), 0);
    assert_int_equal(tls_server.port, port);
    assert_int_equal(tls_server.tls_port, tls_port);
    assert_int_equal(cr_test_tls_cli(&tls_server, &certs, "PING", out,
                                     sizeof(out)), 0);
    assert_string_equal(out, "PONG\n");
}

/* The TLS port a condition looks for among the master's clients. */
typedef struct sentinel_wait {
    int tls_port;
} sentinel_wait;

/* A condition for cr_test_wait_until: a sentinel's command connection is
 * among the TLS server's clients, on its TLS port. */
static bool
sentinel_on_tls_port(void *arg)
{
    sentinel_wait *w = arg;
    redisReply *reply = cr_test_redis_cmd(&tls_server, "CLIENT LIST");
    char laddr[64], *list = NULL, *save = NULL, *line;
    bool found = false;

    snprintf(laddr, sizeof(laddr), "laddr=127.0.0.1:%d ", w->tls_port);
    if (reply != NULL && reply->type == REDIS_REPLY_STRING)
        list = strdup(reply->str);
    for (line = list != NULL ? strtok_r(list, "\n", &save) : NULL;
         line != NULL && !found; line = strtok_r(NULL, "\n", &save))
        found = strstr(line, "name=sentinel-") != NULL &&
                strstr(line, laddr) != NULL;
    free(list);
    if (reply != NULL)
        freeReplyObject(reply);
    return found;
}

/* A sentinel with TLS options starts, answers over TLS, and talks TLS to
 * the master it monitors (its connection is on the master's TLS port). */
static void
test_tls_sentinel_starts_and_monitors_over_tls(void **state)
{
    sentinel_wait w = { .tls_port = tls_server.tls_port };
    cr_test_redis sentinel;
    char conf[256], out[256];
    int rc;

    (void)state;
    need_tls();
    snprintf(conf, sizeof(conf),
             "sentinel monitor tlsmaster 127.0.0.1 %d 1\n"
             "sentinel down-after-milliseconds tlsmaster 5000\n",
             tls_server.tls_port);
    rc = cr_test_redis_start_tls_conf(&sentinel, &certs, conf, "--sentinel");
    assert_int_equal(rc, 0);
    assert_true(sentinel.tls_port > 0);
    assert_int_equal(cr_test_tls_cli(&sentinel, &certs, "PING", out,
                                     sizeof(out)), 0);
    assert_string_equal(out, "PONG\n");
    assert_int_equal(cr_test_tls_cli(&sentinel, &certs,
                                     "SENTINEL get-master-addr-by-name "
                                     "tlsmaster", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "127.0.0.1"));
    assert_true(cr_test_wait_until(sentinel_on_tls_port, &w, WAIT_MS));
    cr_test_redis_destroy(&sentinel);
}

/* ----------------------------------------------------------------- main */

/* Remove one entry met by nftw, children before their directory. */
static int
remove_entry(const char *path, const struct stat *st, int flag,
             struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Make the certificates and start the two TLS servers; have_tls tells
 * whether it worked. Returns 0, CR_TEST_SKIP when openssl is missing, or
 * -1. */
static int
start_tls(void)
{
    int rc;

    snprintf(certs_dir, sizeof(certs_dir), "/tmp/cr-test-tls-XXXXXX");
    if (mkdtemp(certs_dir) == NULL) {
        certs_dir[0] = '\0';
        return -1;
    }
    rc = cr_test_tls_make_certs(certs_dir, &certs);
    if (rc != 0)
        return rc;
    if (cr_test_redis_start_tls(&tls_server, &certs, false, true, NULL) != 0)
        return -1;
    if (cr_test_redis_start_tls(&wrong_server, &certs, true, false,
                                NULL) != 0)
        return -1;
    have_tls = true;
    return 0;
}

/* Stop every server main started and remove the certificates. */
static void
stop_all(void)
{
    cr_test_redis_destroy(&wrong_server);
    cr_test_redis_destroy(&tls_server);
    cr_test_redis_destroy(&server);
    if (certs_dir[0] != '\0')
        nftw(certs_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_close_ends_connection_at_once),
        cmocka_unit_test(test_fault_reset_resets_connection),
        cmocka_unit_test(test_fault_http_answers_bad_request_and_closes),
        cmocka_unit_test(test_fault_silent_never_answers),
        cmocka_unit_test(test_fault_drip_sends_one_byte_at_a_time),
        cmocka_unit_test(
            test_fault_denied_answers_protected_mode_error_and_closes),
        cmocka_unit_test(test_fault_garbage_answers_each_input_with_tls_bytes),
        cmocka_unit_test(test_fault_counts_accepts_per_second_and_between),
        cmocka_unit_test(test_fault_closes_oldest_beyond_live_limit),
        cmocka_unit_test_setup_teardown(test_relay_passes_ping_to_redis,
                                        relay_up, relay_down),
        cmocka_unit_test_setup_teardown(
            test_relay_freeze_holds_ping_until_thaw, relay_up, relay_down),
        cmocka_unit_test_setup_teardown(
            test_relay_freeze_requests_keeps_command_from_server, relay_up,
            relay_down),
        cmocka_unit_test_setup_teardown(
            test_relay_freeze_replies_after_runs_command_but_holds_reply,
            relay_up, relay_down),
        cmocka_unit_test_setup_teardown(
            test_relay_freeze_replies_after_finds_needle_split_between_chunks,
            relay_up, relay_down),
        cmocka_unit_test_setup_teardown(
            test_relay_cut_resets_live_connections, relay_up, relay_down),
        cmocka_unit_test_setup_teardown(
            test_relay_refuse_closes_new_connections, relay_up, relay_down),
        cmocka_unit_test_setup_teardown(
            test_relay_closes_server_side_when_client_closes, relay_up,
            relay_down),
        cmocka_unit_test(test_tls_certs_are_made_and_chain_to_their_ca),
        cmocka_unit_test(test_tls_make_certs_reuses_existing_set),
        cmocka_unit_test(test_tls_server_answers_ping_over_tls),
        cmocka_unit_test(test_tls_server_refuses_client_without_certificate),
        cmocka_unit_test(test_tls_port_gives_plain_hiredis_no_pong),
        cmocka_unit_test(test_tls_wrong_name_server_fails_address_check),
        cmocka_unit_test(test_tls_restart_reuses_both_ports),
        cmocka_unit_test(test_tls_sentinel_starts_and_monitors_over_tls),
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
    rc = start_tls();
    if (rc == CR_TEST_SKIP) {
        fprintf(stderr, "openssl is not on the PATH; TLS tests skipped\n");
    } else if (rc != 0) {
        fprintf(stderr, "cannot make certificates or start TLS servers\n");
        stop_all();
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    stop_all();
    return rc;
}
