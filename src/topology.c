/* SPDX-License-Identifier: MIT */
/*
 * Following the master through Sentinel (see topology.h).
 *
 * The thread holds two connections to one sentinel: a subscriber to
 * "+switch-master" and one for SENTINEL get-master-addr-by-name. When the
 * sentinel fails, the next one is used (the one that answered last is
 * tried first). A candidate address, from a message or an answer, becomes
 * the master only when a connection to it says ROLE master; a sentinel
 * that lags behind cannot move the client back and forth, since the
 * candidate must then be a master too.
 *
 * Lock order: `mu` only, never held during I/O or while listeners run.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topology.h"

#define MAX_LISTENERS 8

struct cr__topology {
    const cr__conn_config *cfg;
    pthread_mutex_t mu;
    char host[256];
    int port;
    unsigned generation;
    int64_t switched_at;    /* when the generation last rose (monotonic) */
    size_t first;           /* the sentinel that answered last */
    struct {
        cr__switch_fn fn;
        void *userdata;
    } listeners[MAX_LISTENERS];
    int nlisteners;
    int wake[2];            /* hints and stop */
    bool stop;
    pthread_t thread;
    bool started;
};

/* ------------------------------------------------------------- helpers */

/* Opens a connection to sentinel k before the deadline. */
static cr_status
open_sentinel(cr__topology *t, size_t k, int64_t deadline, cr__conn **out)
{
    const cr__url *u = t->cfg->url;

    return cr__conn_open(t->cfg, u->hosts[k], u->ports[k], CR__PEER_SENTINEL,
                         deadline, -1, out);
}

/* Asks the sentinel behind `c` where the master is; CR_OK with host and
 * port, CR_EIO when it does not know (or the link failed: *broken). */
static cr_status
ask(cr__topology *t, cr__conn *c, char *host, size_t len, int *port,
    bool *broken)
{
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name",
                           t->cfg->url->master_name};
    cr__reply *r = NULL;
    cr_status rc = cr__conn_call(c, 3, argv, NULL,
                                 cr__now_ms() + t->cfg->command_timeout_ms, &r);

    *broken = rc != CR_OK;
    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_ERROR) {
        rc = cr__reply_status(r->str);
        rc = cr__fail(rc == CR_ESERVER ? CR_EIO : rc, "sentinel %s: %s",
                      cr__conn_peer(c), r->str);
        *broken = rc != CR_EIO;
    } else if (r->type == CR__REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == CR__REPLY_STRING &&
               r->element[1]->type == CR__REPLY_STRING &&
               r->element[0]->len < len &&
               (*port = atoi(r->element[1]->str)) > 0) {
        snprintf(host, len, "%s", r->element[0]->str);
    } else {
        rc = cr__fail(CR_EIO, "sentinel %s does not know master %s",
                      cr__conn_peer(c), t->cfg->url->master_name);
    }
    cr__reply_free(r);
    return rc;
}

/* Asks the sentinels in turn, the last one that answered first, until one
 * says where the master is. A final status (credentials, TLS) of every
 * sentinel is returned as such; otherwise CR_EIO. */
static cr_status
find_master(cr__topology *t, int64_t deadline, char *host, size_t len,
            int *port)
{
    const cr__url *u = t->cfg->url;
    cr_status rc = CR_EIO, final = CR_OK;
    char why[512] = "";
    size_t i, first;

    pthread_mutex_lock(&t->mu);
    first = t->first;
    pthread_mutex_unlock(&t->mu);
    for (i = 0; i < u->nhosts; i++) {
        size_t k = (first + i) % u->nhosts;
        cr__conn *c = NULL;
        bool broken = false;

        rc = open_sentinel(t, k, deadline, &c);
        if (rc == CR_OK)
            rc = ask(t, c, host, len, port, &broken);
        cr__conn_free(c);
        if (rc == CR_OK) {
            pthread_mutex_lock(&t->mu);
            t->first = k;
            pthread_mutex_unlock(&t->mu);
            return CR_OK;
        }
        if (rc == CR_ECLOSED)
            return rc;
        if (cr__status_is_final(rc) && final == CR_OK)
            final = rc;
        snprintf(why, sizeof(why), "%s", cr_last_error());
    }
    return cr__fail(final != CR_OK ? final : CR_EIO,
                    "no sentinel knows master %s (%s)", u->master_name, why);
}

/* Makes host:port the master when a connection to it says ROLE master,
 * raises the generation and tells the listeners. */
static void
consider(cr__topology *t, const char *host, int port)
{
    cr__conn *c = NULL;
    unsigned gen;
    int i, n;

    pthread_mutex_lock(&t->mu);
    if (strcmp(t->host, host) == 0 && t->port == port) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    pthread_mutex_unlock(&t->mu);
    if (cr__conn_open(t->cfg, host, port, CR__PEER_MASTER,
                      cr__now_ms() + t->cfg->command_timeout_ms, -1,
                      &c) != CR_OK) {
        cr__log(t->cfg->log, CR_LOG_INFO, "master %s: %s:%d is not usable yet "
                "(%s)", t->cfg->url->master_name, host, port, cr_last_error());
        return;
    }
    cr__conn_free(c);
    pthread_mutex_lock(&t->mu);
    cr__log(t->cfg->log, CR_LOG_WARN, "master %s moved from %s:%d to %s:%d",
            t->cfg->url->master_name, t->host, t->port, host, port);
    snprintf(t->host, sizeof(t->host), "%s", host);
    t->port = port;
    gen = ++t->generation;
    t->switched_at = cr__now_ms();
    n = t->nlisteners;
    pthread_mutex_unlock(&t->mu);
    CR__STAT_ADD(t->cfg->stats, failovers, 1);
    cr__event(t->cfg->stats, CR_EVENT_FAILOVER, CR_OK, NULL, NULL, -1, -1,
              false);
    for (i = 0; i < n; i++)
        t->listeners[i].fn(t->listeners[i].userdata, gen);
}

/* Reads a "+switch-master" message on the subscriber: "<name> <old ip>
 * <old port> <new ip> <new port>"; considers the new address when it is
 * about our master. */
static void
on_message(cr__topology *t, const cr__reply *r)
{
    char name[256], oldh[256], newh[256];
    int oldp, newp;

    if (r->type != CR__REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != CR__REPLY_STRING ||
        strcmp(r->element[0]->str, "message") != 0 ||
        r->element[2]->type != CR__REPLY_STRING ||
        r->element[2]->len >= 1000)
        return;
    if (sscanf(r->element[2]->str, "%255s %255s %d %255s %d", name, oldh,
               &oldp, newh, &newp) == 5 &&
        strcmp(name, t->cfg->url->master_name) == 0)
        consider(t, newh, newp);
}

/* Opens the subscriber on sentinel k; NULL when it cannot. */
static cr__conn *
subscribe(cr__topology *t, size_t k)
{
    const char *argv[2] = {"SUBSCRIBE", "+switch-master"};
    int64_t deadline = cr__now_ms() + t->cfg->command_timeout_ms;
    cr__conn *c = NULL;
    cr__reply *r = NULL;

    if (open_sentinel(t, k, deadline, &c) != CR_OK)
        return NULL;
    if (cr__conn_call(c, 2, argv, NULL, deadline, &r) != CR_OK ||
        r->type != CR__REPLY_ARRAY) {
        if (r != NULL && r->type == CR__REPLY_ERROR)
            cr__log(t->cfg->log, CR_LOG_WARN, "sentinel %s refused SUBSCRIBE "
                    "+switch-master: %s; asking every %d ms instead",
                    cr__conn_peer(c), r->str, TOPOLOGY_POLL_MS);
        cr__reply_free(r);
        cr__conn_free(c);
        return NULL;
    }
    cr__reply_free(r);
    return c;
}

/* Empties the wake-up pipe; true when something was in it. */
static bool
drain(int fd)
{
    char buf[64];
    bool any = false;

    while (read(fd, buf, sizeof(buf)) > 0)
        any = true;
    return any;
}

/* ------------------------------------------------------------ the thread */

static void *
follow(void *arg)
{
    cr__topology *t = arg;
    const cr__url *u = t->cfg->url;
    cr__conn *sub = NULL, *cmd = NULL;
    size_t k;
    int64_t next_ask = cr__now_ms() + TOPOLOGY_POLL_MS, sub_retry = 0;

    for (;;) {
        struct pollfd p[3];
        int64_t now = cr__now_ms();
        int n = 0, w, timeout;
        bool stop;

        pthread_mutex_lock(&t->mu);
        stop = t->stop;
        k = t->first;
        pthread_mutex_unlock(&t->mu);
        if (stop)
            break;
        if (sub == NULL && now >= sub_retry) {
            sub = subscribe(t, k);
            sub_retry = now + TOPOLOGY_POLL_MS;
        }
        if (now >= next_ask) {
            char host[256];
            int port = 0;
            bool broken = false;
            cr_status rc = CR_EIO;

            next_ask = now + TOPOLOGY_POLL_MS;
            if (cmd == NULL)
                open_sentinel(t, k, now + t->cfg->command_timeout_ms, &cmd);
            if (cmd != NULL)
                rc = ask(t, cmd, host, sizeof(host), &port, &broken);
            if (broken || cmd == NULL) {
                cr__conn_free(cmd);
                cmd = NULL;
                /* The next round asks the next sentinel. */
                pthread_mutex_lock(&t->mu);
                t->first = (k + 1) % u->nhosts;
                pthread_mutex_unlock(&t->mu);
            }
            if (rc == CR_OK)
                consider(t, host, port);
        }
        while (sub != NULL && cr__conn_buffered(sub)) {
            cr__reply *r = NULL;

            if (cr__conn_poll_reply(sub, &r) != CR_OK) {
                cr__conn_free(sub);
                sub = NULL;
            } else if (r == NULL) {
                break;
            } else {
                on_message(t, r);
                cr__reply_free(r);
            }
        }
        p[n].fd = t->wake[0];
        p[n++].events = POLLIN;
        p[n].fd = t->cfg->abort_fd;
        p[n++].events = POLLIN;
        if (sub != NULL) {
            p[n].fd = cr__conn_fd(sub);
            p[n++].events = POLLIN;
        }
        now = cr__now_ms();
        timeout = (int)(next_ask > now ? next_ask - now : 0);
        if (sub == NULL && sub_retry - now < timeout)
            timeout = (int)(sub_retry > now ? sub_retry - now : 0);
        w = poll(p, (nfds_t)n, timeout);
        if (w < 0 && errno != EINTR)
            break;
        if (w <= 0)
            continue;
        if (p[1].revents & POLLIN)
            break; /* the client is being freed */
        if ((p[0].revents & POLLIN) && drain(t->wake[0]))
            next_ask = 0; /* a hint: ask now */
        if (n > 2 && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
            cr__reply *r = NULL;
            cr_status rc;

            while ((rc = cr__conn_poll_reply(sub, &r)) == CR_OK && r != NULL) {
                on_message(t, r);
                cr__reply_free(r);
            }
            if (rc != CR_OK) {
                cr__conn_free(sub);
                sub = NULL;
                next_ask = 0; /* the sentinel may be gone with news */
            }
        }
    }
    cr__conn_free(sub);
    cr__conn_free(cmd);
    return NULL;
}

/* ----------------------------------------------------------- life cycle */

/* Wakes the thread (a full pipe means a wake-up is pending already). */
static void
wake(cr__topology *t)
{
    char b = 1;
    ssize_t n = write(t->wake[1], &b, 1);

    (void)n;
}

cr_status
cr__topology_new(const cr__conn_config *cfg, int64_t deadline,
                 cr__topology **out)
{
    cr__topology *t = calloc(1, sizeof(*t));
    cr_status rc;

    if (t == NULL)
        return CR_ENOMEM;
    t->cfg = cfg;
    t->generation = 1;
    t->wake[0] = t->wake[1] = -1;
    pthread_mutex_init(&t->mu, NULL);
    if (pipe2(t->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        cr__topology_free(t);
        return cr__fail(CR_EIO, "pipe: %s", strerror(errno));
    }
    rc = find_master(t, deadline, t->host, sizeof(t->host), &t->port);
    if (rc == CR_OK && pthread_create(&t->thread, NULL, follow, t) != 0)
        rc = cr__fail(CR_ENOMEM, "cannot start the Sentinel thread");
    if (rc != CR_OK) {
        cr__topology_free(t);
        return rc;
    }
    t->started = true;
    *out = t;
    return CR_OK;
}

void
cr__topology_stop(cr__topology *t)
{
    if (t == NULL || !t->started)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_mutex_unlock(&t->mu);
    wake(t);
    pthread_join(t->thread, NULL);
    t->started = false;
}

void
cr__topology_free(cr__topology *t)
{
    if (t == NULL)
        return;
    cr__topology_stop(t);
    if (t->wake[0] >= 0) {
        close(t->wake[0]);
        close(t->wake[1]);
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void
cr__topology_master(cr__topology *t, char *host, size_t len, int *port,
                    unsigned *generation)
{
    pthread_mutex_lock(&t->mu);
    snprintf(host, len, "%s", t->host);
    *port = t->port;
    *generation = t->generation;
    pthread_mutex_unlock(&t->mu);
}

unsigned
cr__topology_generation(cr__topology *t)
{
    unsigned g;

    if (t == NULL)
        return 0;
    pthread_mutex_lock(&t->mu);
    g = t->generation;
    pthread_mutex_unlock(&t->mu);
    return g;
}

int64_t
cr__topology_settle_left(cr__topology *t)
{
    int64_t left = 0;

    if (t == NULL)
        return 0;
    pthread_mutex_lock(&t->mu);
    if (t->switched_at != 0)
        left = t->switched_at + TOPOLOGY_SETTLE_MS - cr__now_ms();
    pthread_mutex_unlock(&t->mu);
    return left > 0 ? left : 0;
}

void
cr__topology_hint(cr__topology *t)
{
    if (t != NULL)
        wake(t);
}

void
cr__topology_listen(cr__topology *t, cr__switch_fn fn, void *userdata)
{
    pthread_mutex_lock(&t->mu);
    if (t->nlisteners < MAX_LISTENERS) {
        t->listeners[t->nlisteners].fn = fn;
        t->listeners[t->nlisteners].userdata = userdata;
        t->nlisteners++;
    }
    pthread_mutex_unlock(&t->mu);
}
