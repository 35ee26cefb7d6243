/* SPDX-License-Identifier: MIT */
/*
 * The subscriber connection and its dispatcher thread.
 *
 * Only the dispatcher thread touches the connection. Callers change the
 * table of subscriptions under `mu`, mark the entry dirty and write a byte to
 * a pipe; the thread, blocked in poll() on the socket and that pipe, sends
 * the SUBSCRIBE/UNSUBSCRIBE commands the table now asks for. Replies come
 * back in order, so an entry counts its commands in flight and is confirmed
 * only when the last one sent was a SUBSCRIBE and all have been answered.
 *
 * A silent link (a partition) is found by a PING every few seconds of
 * silence: no answer within the command timeout counts as a broken link.
 *
 * Lock order: `mu` only; nothing else is taken while holding it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uthash.h>

#include "conn.h"
#include "pubsub.h"

enum { SENT_NONE, SENT_SUB, SENT_UNSUB };

#define PING_AFTER_MS 5000
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

struct cr__sub {
    char *channel;
    cr__wake_mode mode;
    int refs;
    int64_t permits;
    int last_sent;
    int inflight;
    bool confirmed;
    bool wake_on_confirm; /* resubscribed after a drop: wake to retry */
    bool dirty;
    struct cr__sub *next_dirty;
    pthread_cond_t cv;         /* waiters for permits */
    pthread_cond_t confirm_cv; /* waiters for the SUBSCRIBE confirmation */
    UT_hash_handle hh;
};

struct cr__pubsub {
    cr__conn_config cfg;
    pthread_mutex_t mu;
    cr__sub *subs;
    cr__sub *dirty;
    int pipe_fd[2];
    pthread_t thread;
    bool closing;
    bool stop;
    redisContext *ctx; /* dispatcher thread only */
    int64_t last_rx_ms;
    int64_t ping_sent_ms; /* 0 when no PING is outstanding */
    bool connected_once;
    unsigned sgen; /* Sentinel generation of ctx */
};

/* ------------------------------------------------------------- helpers */

/* Initialises a condition variable that times out on the monotonic clock. */
static void
cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

/* Waits on cv until the monotonic deadline (ms; -1: none). Returns false
 * once the deadline has passed. */
static bool
cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline)
{
    struct timespec ts;

    if (deadline < 0) {
        pthread_cond_wait(cv, mu);
        return true;
    }
    if (cr__now_ms() >= deadline)
        return false;
    ts.tv_sec = deadline / 1000;
    ts.tv_nsec = (deadline % 1000) * 1000000;
    return pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT ||
           cr__now_ms() < deadline;
}

/* Wakes the dispatcher thread. */
static void
poke(cr__pubsub *ps)
{
    char b = 1;
    ssize_t n = write(ps->pipe_fd[1], &b, 1);

    (void)n; /* a full pipe already guarantees a wake-up */
}

/* Queues `s` for the dispatcher to reconcile; called with mu held. */
static void
mark_dirty(cr__pubsub *ps, cr__sub *s)
{
    if (s->dirty)
        return;
    s->dirty = true;
    s->next_dirty = ps->dirty;
    ps->dirty = s;
}

/* Frees an entry that is out of the hash table and the dirty list. */
static void
free_sub(cr__sub *s)
{
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->confirm_cv);
    free(s->channel);
    free(s);
}

/* Gives every local waiter of `s` a permit to retry; mu held. */
static void
wake_all(cr__sub *s)
{
    s->permits = s->refs;
    pthread_cond_broadcast(&s->cv);
}

/* ------------------------------------------------------- the public side */

cr_status
cr__pubsub_subscribe(cr__pubsub *ps, const char *channel, cr__wake_mode mode,
                     int64_t timeout_ms, cr__sub **out)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cr__now_ms() + timeout_ms;
    cr__sub *s;
    cr_status rc = CR_OK;

    pthread_mutex_lock(&ps->mu);
    if (ps->closing) {
        pthread_mutex_unlock(&ps->mu);
        return cr__fail(CR_ECLOSED, "the client is being freed");
    }
    HASH_FIND_STR(ps->subs, channel, s);
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL || (s->channel = strdup(channel)) == NULL) {
            free(s);
            pthread_mutex_unlock(&ps->mu);
            return CR_ENOMEM;
        }
        s->mode = mode;
        cond_init_monotonic(&s->cv);
        cond_init_monotonic(&s->confirm_cv);
        HASH_ADD_KEYPTR(hh, ps->subs, s->channel, strlen(s->channel), s);
    }
    if (s->refs++ == 0) {
        mark_dirty(ps, s);
        poke(ps);
    }
    while (!s->confirmed && !ps->closing)
        if (!cond_wait_until(&s->confirm_cv, &ps->mu, deadline))
            break;
    if (ps->closing)
        rc = cr__fail(CR_ECLOSED, "the client is being freed");
    else if (!s->confirmed)
        rc = cr__fail(CR_TIMEOUT, "SUBSCRIBE %s not confirmed in time", channel);
    if (rc == CR_ECLOSED) {
        s->refs--;
        mark_dirty(ps, s);
        poke(ps);
        s = NULL;
    }
    pthread_mutex_unlock(&ps->mu);
    *out = s;
    return rc;
}

void
cr__pubsub_unsubscribe(cr__pubsub *ps, cr__sub *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&ps->mu);
    if (--s->refs == 0) {
        s->permits = 0;
        mark_dirty(ps, s);
        poke(ps);
    } else if (s->permits > s->refs) {
        s->permits = s->refs;
    }
    pthread_mutex_unlock(&ps->mu);
}

cr_status
cr__sub_wait(cr__pubsub *ps, cr__sub *s, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cr__now_ms() + timeout_ms;
    cr_status rc = CR_TIMEOUT;

    pthread_mutex_lock(&ps->mu);
    while (s->permits == 0 && !ps->closing)
        if (!cond_wait_until(&s->cv, &ps->mu, deadline))
            break;
    if (ps->closing) {
        rc = cr__fail(CR_ECLOSED, "the client is being freed");
    } else if (s->permits > 0) {
        s->permits--;
        rc = CR_OK;
    }
    pthread_mutex_unlock(&ps->mu);
    return rc;
}

bool
cr__sub_confirmed(cr__pubsub *ps, cr__sub *s)
{
    bool ok;

    pthread_mutex_lock(&ps->mu);
    ok = s->confirmed;
    pthread_mutex_unlock(&ps->mu);
    return ok;
}

unsigned
cr__pubsub_channel_count(cr__pubsub *ps)
{
    cr__sub *s, *tmp;
    unsigned n = 0;

    pthread_mutex_lock(&ps->mu);
    HASH_ITER(hh, ps->subs, s, tmp)
        if (s->refs > 0 || s->last_sent == SENT_SUB)
            n++;
    pthread_mutex_unlock(&ps->mu);
    return n;
}

/* ------------------------------------------------- the dispatcher thread */

/* Queues one SUBSCRIBE or UNSUBSCRIBE in the connection's output buffer. */
static bool
append_cmd(cr__pubsub *ps, const char *cmd, const char *channel)
{
    const char *argv[2] = {cmd, channel};

    return redisAppendCommandArgv(ps->ctx, 2, argv, NULL) == REDIS_OK;
}

/* Sends what the dirty entries ask for and frees entries nobody wants any
 * more; mu held. Returns false when the link failed. */
static bool
reconcile(cr__pubsub *ps)
{
    cr__sub *s, *next;
    int done = 0;
    bool queued = false;

    for (s = ps->dirty, ps->dirty = NULL; s != NULL; s = next) {
        next = s->next_dirty;
        s->dirty = false;
        s->next_dirty = NULL;
        if (ps->ctx != NULL && s->refs > 0 && s->last_sent != SENT_SUB) {
            if (!append_cmd(ps, "SUBSCRIBE", s->channel))
                return false;
            s->last_sent = SENT_SUB;
            s->inflight++;
            queued = true;
        } else if (ps->ctx != NULL && s->refs == 0 && s->last_sent == SENT_SUB) {
            if (!append_cmd(ps, "UNSUBSCRIBE", s->channel))
                return false;
            s->last_sent = SENT_UNSUB;
            s->confirmed = false;
            s->inflight++;
            queued = true;
        } else if (s->refs == 0 && s->inflight == 0) {
            HASH_DEL(ps->subs, s);
            free_sub(s);
        }
    }
    while (queued && !done)
        if (redisBufferWrite(ps->ctx, &done) != REDIS_OK)
            return false;
    return true;
}

/* Turns a message's payload into permits as the channel's mode says. */
static void
deliver(cr__sub *s, const char *payload, size_t len)
{
    int64_t n;

    if (!cr__parse_i64(payload, len, &n))
        return;
    switch (s->mode) {
    case CR__WAKE_LOCK:
        if (n == 0)
            s->permits++;
        else if (n == 1)
            s->permits = s->refs;
        break;
    case CR__WAKE_SEMAPHORE:
        if (n > 0)
            s->permits += n < s->refs ? n : s->refs;
        break;
    case CR__WAKE_LATCH:
        if (n == 0)
            s->permits = s->refs;
        break;
    }
    if (s->permits > s->refs)
        s->permits = s->refs;
    /* One permit wakes one waiter; more wake all (each takes one). */
    if (s->permits == 1)
        pthread_cond_signal(&s->cv);
    else if (s->permits > 1)
        pthread_cond_broadcast(&s->cv);
}

/* Handles one reply from the subscriber connection; mu held. */
static void
handle_reply(cr__pubsub *ps, const redisReply *r)
{
    const redisReply *kind, *ch;
    cr__sub *s;

    ps->last_rx_ms = cr__now_ms();
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0];
    if (strcasecmp(kind->str, "pong") == 0) {
        ps->ping_sent_ms = 0;
        return;
    }
    ch = r->element[1];
    if (ch->type != REDIS_REPLY_STRING)
        return;
    HASH_FIND(hh, ps->subs, ch->str, ch->len, s);
    if (s == NULL)
        return;
    if (strcasecmp(kind->str, "message") == 0 && r->elements == 3 &&
        r->element[2]->type == REDIS_REPLY_STRING) {
        CR__STAT_ADD(ps->cfg.stats, messages, 1);
        deliver(s, r->element[2]->str, r->element[2]->len);
    } else if (strcasecmp(kind->str, "subscribe") == 0 ||
               strcasecmp(kind->str, "unsubscribe") == 0) {
        if (s->inflight > 0)
            s->inflight--;
        if (s->inflight == 0 && s->last_sent == SENT_SUB && !s->confirmed) {
            s->confirmed = true;
            if (s->wake_on_confirm) {
                s->wake_on_confirm = false;
                wake_all(s);
            }
            pthread_cond_broadcast(&s->confirm_cv);
        }
        if (s->inflight == 0 && s->refs == 0)
            mark_dirty(ps, s); /* free it on the next reconcile */
    }
}

/* Forgets the broken connection: every subscription must be sent again and
 * every waiter retries now (it may have missed a message). mu held. */
static void
drop_link(cr__pubsub *ps)
{
    cr__sub *s, *tmp;

    if (ps->ctx != NULL) {
        cr__log(ps->cfg.log, CR_LOG_WARN, "pub/sub connection lost: %s",
                ps->ctx->errstr[0] ? ps->ctx->errstr : "no answer");
        redisFree(ps->ctx);
        ps->ctx = NULL;
    }
    ps->ping_sent_ms = 0;
    HASH_ITER(hh, ps->subs, s, tmp) {
        s->last_sent = SENT_NONE;
        s->inflight = 0;
        s->confirmed = false;
        s->wake_on_confirm = true;
        wake_all(s);
        mark_dirty(ps, s);
    }
}

/* Reads everything the socket has and handles each complete reply; mu held.
 * Returns false when the link failed. */
static bool
read_replies(cr__pubsub *ps)
{
    void *r;

    if (redisBufferRead(ps->ctx) != REDIS_OK)
        return false;
    for (;;) {
        r = NULL;
        if (redisGetReplyFromReader(ps->ctx, &r) != REDIS_OK)
            return false;
        if (r == NULL)
            return true;
        handle_reply(ps, r);
        freeReplyObject(r);
    }
}

/* Sends a PING after a silence, and reports a link whose PING went
 * unanswered for longer than the command timeout; mu held. */
static bool
check_liveness(cr__pubsub *ps)
{
    int64_t now = cr__now_ms();
    const char *argv[1] = {"PING"};
    int done = 0;

    if (ps->ping_sent_ms != 0)
        return now - ps->ping_sent_ms <= ps->cfg.command_timeout_ms;
    if (now - ps->last_rx_ms < PING_AFTER_MS)
        return true;
    if (redisAppendCommandArgv(ps->ctx, 1, argv, NULL) != REDIS_OK)
        return false;
    while (!done)
        if (redisBufferWrite(ps->ctx, &done) != REDIS_OK)
            return false;
    ps->ping_sent_ms = now;
    return true;
}

/* Drains the wake-up pipe. */
static void
drain_pipe(int fd)
{
    char buf[64];

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
}

/* The dispatcher: connect (with backoff), reconcile, wait for the socket or
 * a poke, handle replies; until told to stop. */
static void *
dispatcher(void *arg)
{
    cr__pubsub *ps = arg;
    int64_t backoff = BACKOFF_MIN_MS;
    sigset_t pipe_only;

    /* This thread writes to a socket the server may close: a SIGPIPE must
     * not kill the process. Blocked for the thread's life, one that is
     * raised here stays pending on this thread and is never delivered. */
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, NULL);
    pthread_mutex_lock(&ps->mu);
    while (!ps->stop) {
        struct pollfd pfd[2];
        int timeout, nfds = 1;

        if (ps->ctx == NULL && ps->subs != NULL) {
            redisContext *c = NULL;

            pthread_mutex_unlock(&ps->mu);
            cr__conn_open(&ps->cfg, &c);
            pthread_mutex_lock(&ps->mu);
            if (c != NULL) {
                cr__sub *s, *tmp;

                HASH_ITER(hh, ps->subs, s, tmp)
                    mark_dirty(ps, s);
                ps->ctx = c;
                ps->sgen = cr__sentinel_generation(ps->cfg.sentinel);
                ps->last_rx_ms = cr__now_ms();
                backoff = BACKOFF_MIN_MS;
                if (ps->connected_once)
                    CR__STAT_ADD(ps->cfg.stats, reconnects, 1);
                ps->connected_once = true;
            }
        }
        /* After a failover found by any connection, follow the master. */
        if (ps->ctx != NULL && ps->sgen != cr__sentinel_generation(ps->cfg.sentinel))
            drop_link(ps);
        if (ps->ctx != NULL && (!reconcile(ps) || !check_liveness(ps)))
            drop_link(ps);
        else if (ps->ctx == NULL)
            reconcile(ps); /* frees entries nobody wants */
        pfd[0].fd = ps->pipe_fd[0];
        pfd[0].events = POLLIN;
        if (ps->ctx != NULL) {
            pfd[1].fd = ps->ctx->fd;
            pfd[1].events = POLLIN;
            nfds = 2;
            timeout = 1000;
        } else if (ps->subs != NULL) {
            timeout = (int)backoff;
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        } else {
            timeout = -1;
        }
        pthread_mutex_unlock(&ps->mu);
        poll(pfd, (nfds_t)nfds, timeout);
        pthread_mutex_lock(&ps->mu);
        if (pfd[0].revents & POLLIN)
            drain_pipe(ps->pipe_fd[0]);
        if (nfds == 2 && ps->ctx != NULL &&
            (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
            !read_replies(ps))
            drop_link(ps);
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

/* ----------------------------------------------------------- life cycle */

cr_status
cr__pubsub_new(const cr__conn_config *cfg, cr__pubsub **out)
{
    cr__pubsub *ps = calloc(1, sizeof(*ps));

    if (ps == NULL)
        return CR_ENOMEM;
    ps->cfg = *cfg;
    if (pipe2(ps->pipe_fd, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(ps);
        return cr__fail(CR_EIO, "pipe: %s", strerror(errno));
    }
    pthread_mutex_init(&ps->mu, NULL);
    if (pthread_create(&ps->thread, NULL, dispatcher, ps) != 0) {
        close(ps->pipe_fd[0]);
        close(ps->pipe_fd[1]);
        pthread_mutex_destroy(&ps->mu);
        free(ps);
        return cr__fail(CR_ENOMEM, "cannot start the pub/sub thread");
    }
    *out = ps;
    return CR_OK;
}

void
cr__pubsub_close(cr__pubsub *ps)
{
    cr__sub *s, *tmp;

    pthread_mutex_lock(&ps->mu);
    ps->closing = true;
    HASH_ITER(hh, ps->subs, s, tmp) {
        pthread_cond_broadcast(&s->cv);
        pthread_cond_broadcast(&s->confirm_cv);
    }
    pthread_mutex_unlock(&ps->mu);
}

void
cr__pubsub_free(cr__pubsub *ps)
{
    cr__sub *s, *tmp;

    if (ps == NULL)
        return;
    pthread_mutex_lock(&ps->mu);
    ps->stop = true;
    pthread_mutex_unlock(&ps->mu);
    poke(ps);
    pthread_join(ps->thread, NULL);
    if (ps->ctx != NULL)
        redisFree(ps->ctx);
    HASH_ITER(hh, ps->subs, s, tmp) {
        HASH_DEL(ps->subs, s);
        free_sub(s);
    }
    close(ps->pipe_fd[0]);
    close(ps->pipe_fd[1]);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}
