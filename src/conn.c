/* SPDX-License-Identifier: MIT */
/*
 * One connection (see conn.h): sockets, TLS, deadlines, the set-up
 * commands, and the breakers that pace connection attempts.
 *
 * Every socket is non-blocking and close-on-exec. A wait is a poll() on
 * the socket and the client's abort descriptor until an absolute
 * deadline, so no reply, however slowly it drips, holds a caller past it,
 * and freeing the client ends every wait at once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <uthash.h>

#include "conn.h"

/* Breakers: at most one attempt per EMISSION_MS on average, with bursts
 * of up to BURST (10 a second at most), and after the n-th failure in a
 * row no attempt before 100 ms x 2^(n-1), at most BACKOFF_MAX_MS, less
 * up to half of it at random. */
#define EMISSION_MS 100
#define BURST 10
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

/* TCP keepalive, as hiredis sets it: probes after 15 s of silence. */
#define KEEPALIVE_S 15

/* How much of a non-Redis answer is quoted in the message. */
#define QUOTE_MAX 60

/* One set-up command. */
typedef enum step_kind { STEP_AUTH, STEP_NAME, STEP_SELECT, STEP_ROLE,
                         STEP_PING } step_kind;

typedef struct setup_step {
    const char *argv[3];
    int argc;
    step_kind kind;
    const char *what;
} setup_step;

/* The set-up of a connection: the steps sent in one round trip, and how
 * far the checking of their answers has come. */
typedef struct setup_state {
    setup_step steps[5];
    int n, checked;
    cr__peer peer;
    bool borrowed;   /* a sentinel was sent the master's credentials */
    cr_status first; /* the first refusal that matters */
    char db[24];
} setup_state;

/* Where an opening connection driven by a loop is (cr__conn_step). */
enum { OPEN_DONE = 0, OPEN_CONNECTING, OPEN_HANDSHAKE, OPEN_SETUP };

struct cr__conn {
    int fd;
    cr__tls_session *tls;
    int want;        /* what the TLS session waits for (CR__WANT_*) */
    cr__buf in, out;
    size_t need;     /* bytes in `in` before parsing again is worth it */
    bool replied;    /* a valid reply has come: RESP is spoken */
    cr_status failed; /* the status of the last failed read or write */
    int abort_fd;
    char peer[300];
    /* Opening without waiting (cr__conn_start): */
    int opening;
    const cr__conn_config *cfg;
    char tls_name[256];
    setup_state setup;
};

/* ----------------------------------------------------------------- waits */

int
cr__wait_fd(int fd, short events, int abort_fd, int64_t deadline)
{
    for (;;) {
        struct pollfd p[2] = {{fd, events, 0}, {abort_fd, POLLIN, 0}};
        int64_t now = cr__now_ms(), left = deadline < 0 ? -1 : deadline - now;
        int n;

        if (deadline >= 0 && left <= 0)
            return 0;
        n = poll(p, abort_fd >= 0 ? 2 : 1,
                 left < 0 ? -1 : left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (abort_fd >= 0 && (p[1].revents & POLLIN))
            return -1;
        if (n > 0)
            return 1;
    }
}

/* The status of a wait that did not become ready, for `what`. */
static cr_status
wait_failed(const cr__conn *c, int waited, const char *what)
{
    if (waited < 0)
        return cr__fail(CR_ECLOSED, "%s on %s: the client is being freed",
                        what, c->peer);
    return cr__fail(CR_EIO, "%s on %s: timed out", what, c->peer);
}

/* --------------------------------------------------------------- errors */

cr_status
cr__replicas_of(const cr__reply *r, const char *peer, const cr__logger *log,
                int64_t *n)
{
    cr_status rc;

    if (r->type == CR__REPLY_ERROR) {
        rc = cr__reply_status(r->str);
        rc = cr__fail(rc == CR_ESERVER ? CR_ECONFIG : rc, "replica sync is on "
                      "but %s refused ROLE, which counts the replicas to WAIT "
                      "for: %s", peer, r->str);
        cr__log(log, CR_LOG_ERROR, "%s", cr_last_error());
        return rc;
    }
    if (r->type == CR__REPLY_ARRAY && r->elements >= 3 &&
        r->element[2]->type == CR__REPLY_ARRAY) {
        *n = (int64_t)r->element[2]->elements;
        return CR_OK;
    }
    if (r->type == CR__REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == CR__REPLY_STRING) {
        *n = 0; /* a replica's ROLE: READONLY follows the command */
        return CR_OK;
    }
    rc = cr__fail(CR_EIO, "ROLE on %s answered no role: the replies on the "
                  "link are out of step", peer);
    cr__log(log, CR_LOG_ERROR, "%s", cr_last_error());
    return rc;
}

cr_status
cr__replica_sync_of(const cr__reply *r, const char *peer,
                    const cr__logger *log)
{
    cr_status rc;

    if (r->type == CR__REPLY_ERROR) {
        rc = cr__reply_status(r->str);
        rc = cr__fail(rc == CR_ESERVER ? CR_ECONFIG : rc, "replica sync is on "
                      "but %s refused WAIT: %s", peer, r->str);
        cr__log(log, CR_LOG_ERROR, "%s", cr_last_error());
        return rc;
    }
    if (r->type != CR__REPLY_INTEGER || r->integer == 0)
        return cr__fail(CR_EIO, "no replica acknowledged within the sync "
                        "timeout (master %s)", peer);
    return CR_OK;
}

cr_status
cr__reply_status(const char *err)
{
    static const struct {
        const char *prefix;
        cr_status rc;
    } rules[] = {
        {"NOAUTH", CR_EAUTH},     {"WRONGPASS", CR_EAUTH},
        {"NOPERM", CR_ENOPERM},   {"DENIED", CR_ECONFIG},
        {"MISCONF", CR_ECONFIG},  {"LOADING", CR_EIO},
        {"MASTERDOWN", CR_EIO},   {"BUSY ", CR_EIO},
    };
    size_t i;

    for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (strncmp(err, rules[i].prefix, strlen(rules[i].prefix)) == 0)
            return rules[i].rc;
    /* A script's call refused by an ACL: Redis 7.0 says "ERR The user
     * executing the script can't run this command...", later ones wrap
     * NOPERM. */
    if (strstr(err, "NOPERM") != NULL ||
        strstr(err, "no permissions to") != NULL ||
        strstr(err, "can't run this command") != NULL)
        return CR_ENOPERM;
    if (strstr(err, "invalid password") != NULL ||
        strstr(err, "invalid username-password") != NULL)
        return CR_EAUTH;
    return CR_ESERVER;
}

bool
cr__status_is_final(cr_status rc)
{
    return rc == CR_EAUTH || rc == CR_ENOPERM || rc == CR_ECONFIG ||
           rc == CR_ETLS;
}

/* ------------------------------------------------------------- breakers */

typedef struct breaker {
    UT_hash_handle hh;
    int64_t tat;      /* GCRA's theoretical arrival time (ms) */
    int64_t blocked_until; /* backoff after failures */
    unsigned failures;
    uint64_t attempts;
    cr_status final;  /* the last failure, when no retry can mend it */
    char why[200];    /* the last failure, for refusals */
    char addr[];
} breaker;

struct cr__breakers {
    pthread_mutex_t mu;
    breaker *all;
};

cr_status
cr__breakers_new(cr__breakers **out)
{
    cr__breakers *b = calloc(1, sizeof(*b));

    if (b == NULL)
        return CR_ENOMEM;
    pthread_mutex_init(&b->mu, NULL);
    *out = b;
    return CR_OK;
}

void
cr__breakers_free(cr__breakers *b)
{
    breaker *k, *tmp;

    if (b == NULL)
        return;
    HASH_ITER(hh, b->all, k, tmp) {
        HASH_DEL(b->all, k);
        free(k);
    }
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* The breaker of `addr`, made on first use; mu held. NULL: no memory. */
static breaker *
find_breaker(cr__breakers *b, const char *addr)
{
    size_t len = strlen(addr);
    breaker *k;

    HASH_FIND(hh, b->all, addr, len, k);
    if (k == NULL && (k = calloc(1, sizeof(*k) + len + 1)) != NULL) {
        memcpy(k->addr, addr, len + 1);
        HASH_ADD(hh, b->all, addr[0], len, k);
    }
    return k;
}

uint64_t
cr__breaker_attempts(cr__breakers *b, const char *addr)
{
    breaker *k;
    uint64_t n = 0;

    pthread_mutex_lock(&b->mu);
    HASH_FIND(hh, b->all, addr, strlen(addr), k);
    if (k != NULL)
        n = k->attempts;
    pthread_mutex_unlock(&b->mu);
    return n;
}

/* Takes the next attempt slot of `addr`, sleeping until it comes. CR_EIO
 * without an attempt when it comes after `deadline` or `slot_deadline` (-1:
 * none; a waiting loop's retries come back by themselves), the last
 * failure named. CR_ECLOSED when aborted. */
static cr_status
breaker_enter(cr__breakers *b, const char *addr, int64_t deadline,
              int64_t slot_deadline, int abort_fd)
{
    int64_t now = cr__now_ms(), at;
    char why[200];
    breaker *k;

    if (b == NULL)
        return CR_OK;
    pthread_mutex_lock(&b->mu);
    if ((k = find_breaker(b, addr)) == NULL) {
        pthread_mutex_unlock(&b->mu);
        return CR_ENOMEM;
    }
    at = k->tat - (int64_t)(BURST - 1) * EMISSION_MS;
    if (at < now)
        at = now;
    if (at < k->blocked_until)
        at = k->blocked_until;
    if (slot_deadline < 0 || (deadline >= 0 && deadline < slot_deadline))
        slot_deadline = deadline;
    if (slot_deadline >= 0 && at > slot_deadline) {
        cr_status final = k->final;
        unsigned failures = k->failures;

        snprintf(why, sizeof(why), "%s", k->why);
        pthread_mutex_unlock(&b->mu);
        if (final != CR_OK) /* what the server said stands: say it again */
            return cr__fail(final, "%s", why);
        if (failures == 0) /* no backoff: the time ran out first */
            return cr__fail(CR_EIO, "%s: no time left to connect (timed "
                            "out)", addr);
        return cr__fail(CR_EIO, "%s: not tried again yet (%u failures in a "
                        "row, backing off%s%s)", addr, failures,
                        why[0] ? "; last: " : "", why);
    }
    k->tat = (k->tat > at ? k->tat : at) + EMISSION_MS;
    k->attempts++;
    pthread_mutex_unlock(&b->mu);
    if (at > now) {
        struct pollfd p = {abort_fd, POLLIN, 0};

        while ((now = cr__now_ms()) < at) {
            int n = poll(&p, abort_fd >= 0 ? 1 : 0, (int)(at - now));

            if (n > 0)
                return cr__fail(CR_ECLOSED, "the client is being freed");
        }
    }
    return CR_OK;
}

/* Records the outcome `rc` of an attempt on `addr`: a success clears the
 * backoff; a failure (reason `why`) extends it, and one no retry mends is
 * kept, so that attempts refused while backing off fail with it too. */
static void
breaker_done(cr__breakers *b, const char *addr, cr_status rc, const char *why)
{
    bool ok = rc == CR_OK;
    breaker *k;

    if (b == NULL)
        return;
    pthread_mutex_lock(&b->mu);
    if ((k = find_breaker(b, addr)) != NULL) {
        k->final = cr__status_is_final(rc) ? rc : CR_OK;
        if (ok) {
            k->failures = 0;
            k->blocked_until = 0;
            k->why[0] = '\0';
        } else {
            int64_t delay = BACKOFF_MIN_MS;
            unsigned char r = 0;
            unsigned i;

            for (i = 1; i < k->failures + 1 && delay < BACKOFF_MAX_MS; i++)
                delay *= 2;
            if (delay > BACKOFF_MAX_MS)
                delay = BACKOFF_MAX_MS;
            cr__random_bytes(&r, 1);
            delay -= delay / 2 * r / 255; /* jitter: 50 % to 100 % */
            k->failures++;
            k->blocked_until = cr__now_ms() + delay;
            snprintf(k->why, sizeof(k->why), "%s", why);
        }
    }
    pthread_mutex_unlock(&b->mu);
}

/* ----------------------------------------------------------- raw I/O */

/* Reads what is there into c->in: > 0 bytes, 0 at end of stream, -1 when
 * nothing is there now (c->want set), -2 on failure (reason recorded). */
static ssize_t
read_some(cr__conn *c)
{
    ssize_t n;

    if (!cr__buf_reserve(&c->in, 16384)) {
        c->failed = cr__fail(CR_ENOMEM, "out of memory reading from %s",
                             c->peer);
        return -2;
    }
    if (c->tls != NULL) {
        n = cr__tls_read(c->tls, c->in.data + c->in.len,
                         c->in.cap - c->in.len, &c->want, &c->failed);
    } else {
        do
            n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->want = CR__WANT_READ;
            n = -1;
        } else if (n < 0 && errno == ECONNRESET && !c->replied) {
            c->failed = cr__fail(CR_EIO, "%s reset the connection before "
                                 "answering (a port that expects TLS: "
                                 "rediss://?)", c->peer);
            n = -2;
        } else if (n < 0) {
            c->failed = cr__fail(CR_EIO, "reading from %s: %s", c->peer,
                                 strerror(errno));
            n = -2;
        }
    }
    if (n > 0)
        c->in.len += (size_t)n;
    return n;
}

/* Writes some of c->out: > 0 bytes, -1 when the socket is full (c->want),
 * -2 on failure. */
static ssize_t
write_some(cr__conn *c)
{
    const char *p = c->out.data + c->out.off;
    size_t len = c->out.len - c->out.off;
    ssize_t n;

    if (c->tls != NULL)
        return cr__tls_write(c->tls, p, len, &c->want, &c->failed);
    do
        n = send(c->fd, p, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        c->want = CR__WANT_WRITE;
        return -1;
    }
    if (n < 0) {
        c->failed = cr__fail(CR_EIO, "writing to %s: %s", c->peer,
                             strerror(errno));
        return -2;
    }
    return n;
}

/* The poll events for what c->want says. */
static short
want_events(const cr__conn *c)
{
    return c->want == CR__WANT_WRITE ? POLLOUT : POLLIN;
}

cr_status
cr__conn_flush(cr__conn *c, int64_t deadline)
{
    while (c->out.off < c->out.len) {
        ssize_t n = write_some(c);
        int w;

        if (n > 0) {
            c->out.off += (size_t)n;
            continue;
        }
        if (n == -2 && c->tls != NULL && c->failed == CR_EIO) {
            cr_status wrote = c->failed;
            char why[512];

            /* A TLS server that refused us (no client certificate) sent
             * an alert before closing: that is the cause to report. */
            snprintf(why, sizeof(why), "%s", cr_last_error());
            if (read_some(c) == -2 && c->failed == CR_ETLS)
                return c->failed;
            c->failed = cr__fail(wrote, "%s", why);
        }
        if (n == -2)
            return c->failed;
        if ((w = cr__wait_fd(c->fd, want_events(c), c->abort_fd, deadline)) <= 0)
            return wait_failed(c, w, "writing");
    }
    c->out.off = c->out.len = 0;
    return CR_OK;
}

cr_status
cr__conn_append(cr__conn *c, int argc, const char *const *argv,
                const size_t *lens)
{
    if (!cr__resp_append(&c->out, argc, argv, lens))
        return cr__fail(CR_ENOMEM, "cannot format %s", argv[0]);
    return CR_OK;
}

cr_status
cr__conn_append_raw(cr__conn *c, const char *data, size_t len)
{
    if (!cr__buf_reserve(&c->out, len))
        return cr__fail(CR_ENOMEM, "out of memory");
    memcpy(c->out.data + c->out.len, data, len);
    c->out.len += len;
    return CR_OK;
}

/* Quotes the first line of what a non-Redis server sent, printable. */
static void
quote_answer(const cr__conn *c, char *buf, size_t len)
{
    size_t i, n = c->in.len - c->in.off;
    const char *p = c->in.data + c->in.off;

    for (i = 0; i < n && i + 1 < len && i < QUOTE_MAX && p[i] != '\r' &&
                p[i] != '\n'; i++)
        buf[i] = p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?';
    buf[i] = '\0';
}

/* Parses a reply from what c->in holds: CR_OK with *out (NULL: not
 * complete yet), CR_ECONFIG or CR_EIO when the bytes are not RESP. */
static cr_status
parse(cr__conn *c, cr__reply **out)
{
    size_t avail = c->in.len - c->in.off, used = 0;
    cr_status rc;

    *out = NULL;
    if (avail == 0 || avail < c->need)
        return CR_OK;
    rc = cr__resp_parse(c->in.data + c->in.off, avail, out, &used);
    if (rc == CR_BUSY) {
        c->need = used;
        return CR_OK;
    }
    if (rc == CR_ESCRIPT) {
        char seen[QUOTE_MAX + 1];

        quote_answer(c, seen, sizeof(seen));
        if (!c->replied)
            return cr__fail(CR_ECONFIG, "the server at %s does not speak the "
                            "Redis protocol: it answered '%s'", c->peer, seen);
        return cr__fail(CR_EIO, "%s sent bytes that are not the Redis "
                        "protocol: '%s'", c->peer, seen);
    }
    if (rc != CR_OK)
        return rc;
    c->in.off += used;
    c->need = 0;
    c->replied = true;
    if (c->in.off == c->in.len)
        c->in.off = c->in.len = 0;
    return CR_OK;
}

/* The failure of an end of stream before a reply. */
static cr_status
eof_failed(const cr__conn *c)
{
    if (!c->replied && c->tls == NULL)
        return cr__fail(CR_EIO, "%s closed the connection before answering "
                        "(a proxy whose server is down, or a port that "
                        "expects TLS: rediss://)", c->peer);
    return cr__fail(CR_EIO, "%s closed the connection", c->peer);
}

cr_status
cr__conn_recv(cr__conn *c, int64_t deadline, cr__reply **out)
{
    for (;;) {
        cr_status rc = parse(c, out);
        ssize_t n;
        int w;

        if (rc != CR_OK || *out != NULL)
            return rc;
        n = read_some(c);
        if (n > 0)
            continue;
        if (n == 0)
            return eof_failed(c);
        if (n == -2)
            return c->failed;
        if ((w = cr__wait_fd(c->fd, want_events(c), c->abort_fd, deadline)) <= 0)
            return wait_failed(c, w, "waiting for a reply");
    }
}

cr_status
cr__conn_poll_reply(cr__conn *c, cr__reply **out)
{
    for (;;) {
        cr_status rc = parse(c, out);
        ssize_t n;

        if (rc != CR_OK || *out != NULL)
            return rc;
        n = read_some(c);
        if (n == 0)
            return eof_failed(c);
        if (n == -2)
            return c->failed;
        if (n == -1)
            return CR_OK;
    }
}

cr_status
cr__conn_call(cr__conn *c, int argc, const char *const *argv,
              const size_t *lens, int64_t deadline, cr__reply **out)
{
    cr_status rc = cr__conn_append(c, argc, argv, lens);

    if (rc == CR_OK)
        rc = cr__conn_flush(c, deadline);
    if (rc == CR_OK)
        rc = cr__conn_recv(c, deadline, out);
    return rc;
}

bool
cr__conn_buffered(const cr__conn *c)
{
    size_t avail = c->in.len - c->in.off;

    return (avail > 0 && avail >= c->need) ||
           (c->tls != NULL && cr__tls_pending(c->tls) > 0);
}

size_t
cr__conn_unread(const cr__conn *c)
{
    return c->in.len - c->in.off +
           (c->tls != NULL ? cr__tls_pending(c->tls) : 0);
}

int
cr__conn_fd(const cr__conn *c)
{
    return c->fd;
}

const char *
cr__conn_peer(const cr__conn *c)
{
    return c->peer;
}

void
cr__conn_free(cr__conn *c)
{
    if (c == NULL)
        return;
    cr__tls_session_free(c->tls);
    if (c->fd >= 0)
        close(c->fd);
    cr__buf_free(&c->in);
    cr__buf_free(&c->out);
    free(c);
}

/* ------------------------------------------------------------ connecting */

/* Sets the options of a new TCP socket: no Nagle delay, keepalive. */
static void
tune_tcp(int fd)
{
    int one = 1, idle = KEEPALIVE_S, intvl = KEEPALIVE_S / 3, cnt = 3;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* Connects a new non-blocking socket to `sa` before the deadline: the
 * descriptor, or -1 with the reason recorded (ECLOSED in *aborted). */
static int
connect_one(const struct sockaddr *sa, socklen_t salen, int family,
            const char *peer, int abort_fd, int64_t deadline, bool *aborted)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int err = 0, w;
    socklen_t len = sizeof(err);

    if (fd < 0) {
        cr__fail(CR_EIO, "cannot connect to %s: socket: %s", peer,
                 strerror(errno));
        return -1;
    }
    if (connect(fd, sa, salen) == 0)
        return fd;
    if (errno != EINPROGRESS && errno != EINTR) {
        cr__fail(CR_EIO, "cannot connect to %s: %s", peer, strerror(errno));
        close(fd);
        return -1;
    }
    w = cr__wait_fd(fd, POLLOUT, abort_fd, deadline);
    if (w <= 0) {
        *aborted = w < 0;
        cr__fail(w < 0 ? CR_ECLOSED : CR_EIO, "cannot connect to %s: %s",
                 peer, w < 0 ? "the client is being freed" : "timed out");
        close(fd);
        return -1;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        cr__fail(CR_EIO, "cannot connect to %s: %s", peer,
                 strerror(err != 0 ? err : errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Opens the socket of `c` to host:port, or to the unix socket `path`. */
static cr_status
open_socket(cr__conn *c, const char *host, int port, const char *path,
            int64_t deadline)
{
    bool aborted = false;

    if (host == NULL) {
        struct sockaddr_un sa;

        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        if (strlen(path) >= sizeof(sa.sun_path))
            return cr__fail(CR_EINVAL, "unix socket path too long: %s", path);
        strcpy(sa.sun_path, path);
        c->fd = connect_one((struct sockaddr *)&sa, sizeof(sa), AF_UNIX,
                            c->peer, c->abort_fd, deadline, &aborted);
    } else {
        struct addrinfo hints, *res = NULL, *ai;
        char service[16];
        int e;

        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        snprintf(service, sizeof(service), "%d", port);
        /* A name is resolved here, blocking (doc/deployment.md). */
        e = getaddrinfo(host, service, &hints, &res);
        if (e != 0)
            return cr__fail(CR_EIO, "cannot resolve %s: %s", host,
                            gai_strerror(e));
        for (ai = res; ai != NULL && c->fd < 0 && !aborted; ai = ai->ai_next)
            c->fd = connect_one(ai->ai_addr, ai->ai_addrlen, ai->ai_family,
                                c->peer, c->abort_fd, deadline, &aborted);
        freeaddrinfo(res);
        if (c->fd >= 0)
            tune_tcp(c->fd);
    }
    if (c->fd >= 0)
        return CR_OK;
    return aborted ? CR_ECLOSED : CR_EIO;
}

/* Runs the TLS handshake of `c` before the deadline, verifying `name`. */
static cr_status
handshake(cr__conn *c, cr__tls *tls, const char *name, int64_t deadline)
{
    cr_status rc = cr__tls_session_new(tls, c->fd, name, &c->tls);

    while (rc == CR_OK) {
        int step = cr__tls_handshake(c->tls, &c->want, &rc), w;

        if (step == 1)
            return CR_OK;
        if (step < 0)
            break;
        if ((w = cr__wait_fd(c->fd, want_events(c), c->abort_fd, deadline)) <= 0) {
            if (w < 0)
                return wait_failed(c, w, "TLS handshake");
            return cr__fail(CR_EIO, "TLS handshake with %s: no answer in time "
                            "(does the server speak TLS on this port?)",
                            c->peer);
        }
    }
    if (rc != CR_ENOMEM) {
        char why[400];

        snprintf(why, sizeof(why), "%s", cr_last_error());
        rc = cr__fail(rc, "%s: %s", c->peer, why);
    }
    return rc;
}

/* What a refusal of `step` means: CR_OK when the connection is usable
 * anyway (a name refused by an ACL; credentials borrowed from the master
 * that a sentinel refused; a password sent to a sentinel that has none).
 * `err` is the server's text. */
static cr_status
refusal(const setup_step *step, const char *err, cr__peer peer,
        bool borrowed)
{
    cr_status why = cr__reply_status(err);

    switch (step->kind) {
    case STEP_AUTH:
        if (borrowed || (peer == CR__PEER_SENTINEL &&
                         strstr(err, "without any password configured") != NULL))
            return CR_OK;
        return why == CR_ESERVER ? CR_EAUTH : why;
    case STEP_NAME:
        return why == CR_EAUTH || why == CR_ECONFIG ? why : CR_OK;
    default:
        return why == CR_ESERVER ? CR_ECONFIG : why;
    }
}

/* Checks the answer `r` of the next set-up step of `c`. */
static void
check_step(cr__conn *c, const cr__reply *r)
{
    setup_state *st = &c->setup;
    const setup_step *step = &st->steps[st->checked++];

    if (st->first != CR_OK) {
        ; /* already decided; the rest is read for a clean message */
    } else if (r->type == CR__REPLY_ERROR) {
        cr_status why = refusal(step, r->str, st->peer, st->borrowed);

        if (why != CR_OK)
            st->first = cr__fail(why, "%s on %s refused: %s", step->what,
                                 c->peer, r->str);
    } else if (step->kind == STEP_ROLE &&
               !(r->type == CR__REPLY_ARRAY && r->elements > 0 &&
                 r->element[0]->type == CR__REPLY_STRING &&
                 strcmp(r->element[0]->str, "master") == 0)) {
        st->first = cr__fail(CR_EIO, "%s is not (yet) the master", c->peer);
    }
}

/* Queues the set-up commands the peer needs, to go in one round trip
 * (no I/O). */
static cr_status
queue_setup(cr__conn *c, const cr__conn_config *cfg, cr__peer peer)
{
    setup_state *st = &c->setup;
    setup_step *steps = st->steps;
    const char *user = peer == CR__PEER_SENTINEL ? cfg->sentinel_user : cfg->user;
    const char *password = peer == CR__PEER_SENTINEL ? cfg->sentinel_password
                                                     : cfg->password;
    int n = 0, i;
    cr_status rc = CR_OK;

    memset(st, 0, sizeof(*st));
    st->peer = peer;
    if (peer == CR__PEER_SENTINEL && password == NULL && cfg->password != NULL) {
        /* As Redisson: the master's credentials, which a sentinel without
         * a password may refuse. */
        user = cfg->user;
        password = cfg->password;
        st->borrowed = true;
    }
    if (password != NULL) {
        steps[n].argv[0] = "AUTH";
        steps[n].argv[1] = user != NULL ? user : password;
        steps[n].argv[2] = password;
        steps[n].argc = user != NULL ? 3 : 2;
        steps[n].kind = STEP_AUTH;
        steps[n++].what = "AUTH";
    }
    if (cfg->client_name != NULL) {
        steps[n].argv[0] = "CLIENT";
        steps[n].argv[1] = "SETNAME";
        steps[n].argv[2] = cfg->client_name;
        steps[n].argc = 3;
        steps[n].kind = STEP_NAME;
        steps[n++].what = "CLIENT SETNAME";
    }
    if (peer != CR__PEER_SENTINEL && cfg->url->db != 0) {
        cr__fmt_i64(st->db, cfg->url->db);
        steps[n].argv[0] = "SELECT";
        steps[n].argv[1] = st->db;
        steps[n].argc = 2;
        steps[n].kind = STEP_SELECT;
        steps[n++].what = "SELECT";
    }
    if (peer == CR__PEER_MASTER) {
        steps[n].argv[0] = "ROLE";
        steps[n].argc = 1;
        steps[n].kind = STEP_ROLE;
        steps[n++].what = "ROLE";
    }
    if (n == 0) {
        /* Nothing to send: a PING tells a Redis server from anything else
         * before the connection is used. */
        steps[n].argv[0] = "PING";
        steps[n].argc = 1;
        steps[n].kind = STEP_PING;
        steps[n++].what = "PING";
    }
    st->n = n;
    for (i = 0; i < n && rc == CR_OK; i++)
        rc = cr__conn_append(c, steps[i].argc, steps[i].argv, NULL);
    return rc;
}

/* Sends the set-up commands the peer needs in one round trip and checks
 * their answers. */
static cr_status
setup(cr__conn *c, const cr__conn_config *cfg, cr__peer peer,
      int64_t deadline)
{
    cr_status rc = queue_setup(c, cfg, peer);

    if (rc == CR_OK)
        rc = cr__conn_flush(c, deadline);
    while (rc == CR_OK && c->setup.checked < c->setup.n) {
        cr__reply *r = NULL;

        rc = cr__conn_recv(c, deadline, &r);
        if (rc == CR_OK) {
            check_step(c, r);
            cr__reply_free(r);
        } else if (c->setup.first != CR_OK) {
            rc = c->setup.first;
        }
    }
    return rc == CR_OK ? c->setup.first : rc;
}

cr_status
cr__conn_open(const cr__conn_config *cfg, const char *host, int port,
              cr__peer peer, int64_t deadline, int64_t slot_deadline,
              cr__conn **out)
{
    int64_t connect_by = cr__now_ms() + cfg->connect_timeout_ms;
    const char *path = cfg->url->path;
    cr__conn *c;
    cr_status rc;

    *out = NULL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return CR_ENOMEM;
    c->fd = -1;
    c->abort_fd = cfg->abort_fd;
    if (host != NULL)
        snprintf(c->peer, sizeof(c->peer), strchr(host, ':') != NULL ? "[%s]:%d"
                                                                     : "%s:%d",
                 host, port);
    else
        snprintf(c->peer, sizeof(c->peer), "%s", path);
    rc = breaker_enter(cfg->breakers, c->peer, deadline, slot_deadline,
                       cfg->abort_fd);
    if (rc != CR_OK) {
        cr__conn_free(c);
        return rc;
    }
    if (deadline >= 0 && connect_by > deadline)
        connect_by = deadline;
    rc = open_socket(c, host, port, path, connect_by);
    if (rc == CR_OK && cfg->tls != NULL)
        rc = handshake(c, cfg->tls,
                       cfg->tls_name != NULL ? cfg->tls_name
                                             : host != NULL ? host : "localhost",
                       deadline);
    if (rc == CR_OK)
        rc = setup(c, cfg, peer, deadline);
    if (rc != CR_ECLOSED)
        breaker_done(cfg->breakers, c->peer, rc, cr_last_error());
    if (rc != CR_OK) {
        cr__conn_free(c);
        return rc;
    }
    c->replied = true;
    *out = c;
    return CR_OK;
}

/* ------------------------------------------------- driven by an event loop */

cr_status
cr__breaker_try(cr__breakers *b, const char *addr, int64_t *retry_ms)
{
    int64_t now = cr__now_ms(), at;
    breaker *k;

    *retry_ms = 0;
    if (b == NULL)
        return CR_OK;
    pthread_mutex_lock(&b->mu);
    if ((k = find_breaker(b, addr)) == NULL) {
        pthread_mutex_unlock(&b->mu);
        return CR_ENOMEM;
    }
    at = k->tat - (int64_t)(BURST - 1) * EMISSION_MS;
    if (at < k->blocked_until)
        at = k->blocked_until;
    if (at > now) {
        cr_status final = k->final;
        char why[200];

        snprintf(why, sizeof(why), "%s", k->why);
        pthread_mutex_unlock(&b->mu);
        *retry_ms = at - now;
        if (final != CR_OK)
            return cr__fail(final, "%s", why);
        return cr__fail(CR_BUSY, "%s: not tried again for %lld ms", addr,
                        (long long)*retry_ms);
    }
    k->tat = (k->tat > now ? k->tat : now) + EMISSION_MS;
    k->attempts++;
    pthread_mutex_unlock(&b->mu);
    return CR_OK;
}

cr_status
cr__conn_start(const cr__conn_config *cfg, const struct sockaddr *sa,
               socklen_t salen, const char *host, int port, cr__peer peer,
               cr__conn **out)
{
    cr__conn *c = calloc(1, sizeof(*c));
    cr_status rc;

    *out = NULL;
    if (c == NULL)
        return CR_ENOMEM;
    c->abort_fd = -1;
    c->cfg = cfg;
    if (host != NULL)
        snprintf(c->peer, sizeof(c->peer), strchr(host, ':') != NULL ? "[%s]:%d"
                                                                     : "%s:%d",
                 host, port);
    else
        snprintf(c->peer, sizeof(c->peer), "%s", cfg->url->path);
    snprintf(c->tls_name, sizeof(c->tls_name), "%s",
             cfg->tls_name != NULL ? cfg->tls_name
                                   : host != NULL ? host : "localhost");
    c->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        rc = cr__fail(CR_EIO, "cannot connect to %s: socket: %s", c->peer,
                      strerror(errno));
        cr__conn_free(c);
        return rc;
    }
    if (sa->sa_family != AF_UNIX)
        tune_tcp(c->fd);
    c->opening = OPEN_CONNECTING;
    if (connect(c->fd, sa, salen) != 0 && errno != EINPROGRESS &&
        errno != EINTR) {
        rc = cr__fail(CR_EIO, "cannot connect to %s: %s", c->peer,
                      strerror(errno));
        breaker_done(cfg->breakers, c->peer, rc, cr_last_error());
        cr__conn_free(c);
        return rc;
    }
    c->setup.peer = peer;
    *out = c;
    return CR_OK;
}

/* One step of an opening connection; see cr__conn_step. */
static cr_status
open_step(cr__conn *c, int *events)
{
    int err = 0, step;
    socklen_t len = sizeof(err);
    cr_status rc = CR_OK;

    switch (c->opening) {
    case OPEN_CONNECTING:
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err == EINPROGRESS || err == EALREADY) {
            *events = CR__WANT_WRITE;
            return CR_BUSY;
        }
        if (err != 0)
            return cr__fail(CR_EIO, "cannot connect to %s: %s", c->peer,
                            strerror(err));
        if (c->cfg->tls != NULL) {
            rc = cr__tls_session_new(c->cfg->tls, c->fd, c->tls_name, &c->tls);
            if (rc != CR_OK)
                return rc;
            c->opening = OPEN_HANDSHAKE;
        } else {
            c->opening = OPEN_SETUP;
            if ((rc = queue_setup(c, c->cfg, c->setup.peer)) != CR_OK)
                return rc;
        }
        return open_step(c, events);
    case OPEN_HANDSHAKE:
        step = cr__tls_handshake(c->tls, &c->want, &rc);
        if (step == 0) {
            *events = c->want;
            return CR_BUSY;
        }
        if (step < 0) {
            char why[400];

            snprintf(why, sizeof(why), "%s", cr_last_error());
            return cr__fail(rc, "%s: %s", c->peer, why);
        }
        c->opening = OPEN_SETUP;
        if ((rc = queue_setup(c, c->cfg, c->setup.peer)) != CR_OK)
            return rc;
        return open_step(c, events);
    case OPEN_SETUP: {
        bool pending = false;

        if ((rc = cr__conn_send(c, &pending, events)) != CR_OK)
            return rc;
        while (c->setup.checked < c->setup.n) {
            cr__reply *r = NULL;

            if ((rc = cr__conn_poll_reply(c, &r)) != CR_OK)
                return c->setup.first != CR_OK ? c->setup.first : rc;
            if (r == NULL) {
                if (!pending)
                    *events = CR__WANT_READ;
                return CR_BUSY;
            }
            check_step(c, r);
            cr__reply_free(r);
        }
        if (c->setup.first != CR_OK)
            return c->setup.first;
        c->opening = OPEN_DONE;
        c->replied = true;
        return CR_OK;
    }
    default:
        return CR_OK;
    }
}

cr_status
cr__conn_step(cr__conn *c, int *events)
{
    cr_status rc = open_step(c, events);

    if (rc != CR_BUSY)
        breaker_done(c->cfg->breakers, c->peer, rc, cr_last_error());
    return rc;
}

cr_status
cr__conn_send(cr__conn *c, bool *pending, int *events)
{
    *pending = false;
    while (c->out.off < c->out.len) {
        ssize_t n = write_some(c);

        if (n > 0) {
            c->out.off += (size_t)n;
            continue;
        }
        if (n == -2)
            return c->failed;
        *pending = true;
        *events = c->want;
        return CR_OK;
    }
    c->out.off = c->out.len = 0;
    return CR_OK;
}
