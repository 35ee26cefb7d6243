/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API (credisson/async.h): requests driven by the loop.
 *
 * A request that waits runs the same wait state machine as the blocking
 * calls (wait.h): each step it asks for, an attempt, a subscription or a
 * sleep, is carried out through aio.c and its outcome fed back, on the
 * loop. The attempts are the object kinds' own script calls and reply
 * readers, so both APIs send the same bytes. What an acquisition leaves
 * behind when it ends without the lock (a fair lock's queue entry, a grant
 * that came after a cancel, an attempt whose reply was lost) goes to the
 * client's background thread, as the blocking calls' do.
 *
 * Callbacks run from cr_async_io and cr_async_timeout: a request that ends
 * goes on the done list, which the loop's next turn empties.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aio.h"
#include "barriers.h"
#include "conditions.h"
#include "credisson/async.h"
#include "latches.h"
#include "ratelimiters.h"
#include "script_lock.h"
#include "semaphores.h"
#include "topology.h"

#define CR__ASYNC_MAGIC 0x43524153u /* "CRAS" */

/* Owner ids of the asynchronous API start here (cr_thread_id counts up
 * from 1 and never gets there). */
#define OWNER_BASE ((int64_t)1 << 62)

static atomic_int_fast64_t next_owner = 0;

enum { Q_WAIT, Q_SCRIPT, Q_THREAD };

/* The object of a waiting request that is not a lock. */
enum {
    O_SEM = 1, O_PERMIT, O_LATCH, O_LATCH_COUNT, O_RATE, O_BARRIER, O_COND
};

/* What a barrier await's command out is: the attempts barriers.h names,
 * or the leave. */
enum {
    B_ARRIVE = CR__BARRIER_ARRIVE,
    B_QUICK = CR__BARRIER_QUICK,
    B_LOOK = CR__BARRIER_LOOK,
    B_LEAVE
};

/* What a condition await's command out is. */
enum { C_JOIN = 16, C_RELEASE, C_LOOK, C_LEAVE, C_GIVE_BACK };

/* What a waiting request does at the steps the wait state machine leaves
 * to it: send an attempt (whose reply sets w.rc and w.hint, then drives
 * on), and end once the wait is over (w.rc). */
typedef struct wait_ops {
    void (*attempt)(cr_request *q);
    void (*finish)(cr_request *q);
} wait_ops;

struct cr_request {
    cr_async *async;
    int kind;
    cr_request *prev, *next;  /* pending requests */
    cr_request *done_next;    /* ended, callback due */
    bool ended, cancelled;
    bool final;               /* its outcome stands after a cancel: it
                               * happened on the server, and cannot be
                               * given back (a rate limiter's grant) */
    bool busy;                /* a command of it is out */
    bool zombie;              /* ended and called back, a command still out */
    bool sleeping;            /* asleep on a subscription */
    bool subscribing;         /* waiting for a subscription's answer */
    cr_status rc;
    int64_t value;
    char id[CR_PERMIT_ID_LEN + 1];
    cr_async_fn fn;
    cr_async_permit_fn pfn;
    cr_async_barrier_fn bfn;
    void *userdata;
    /* Waiting. */
    const wait_ops *ops;
    cr__wait w;
    cr__asleeper sleeper;
    cr__atimer timer;
    cr__atimer bound;         /* the wait, one command timeout, replica sync */
    /* Locks. */
    cr_lock *lock;
    int64_t owner_id, lease_ms, wait_ms, attempt_lease, sent_ms;
    int64_t sent_us;          /* a release's: when it was sent */
    char owner[CR__OWNER_MAX];
    char *channel;            /* a fair waiter's own channel, or NULL */
    bool uncertain;           /* the last attempt's reply was lost */
    unsigned gen;
    cr__cmd cmd;              /* the last attempt's: sent, replica sync */
    cr__unlock unlock;
    /* Semaphores and latches. */
    int what;                 /* O_SEM, O_PERMIT, O_LATCH, O_LATCH_COUNT
                               * (countDownAndAwait: its first attempt
                               * counts down, the others look) */
    bool counted;             /* O_LATCH_COUNT: the count down was sent */
    bool counting;            /* and its reply is awaited */
    void *obj;
    int64_t permits;
    char *acquire_latch;      /* a semaphore acquisition's acquire latch */
    cr__permit_id raw_id;     /* a permit's id, as stored */
    unsigned char rid[CR__RATE_ID_BYTES]; /* a rate limiter's record id */
    /* Barriers. */
    cr__barrier_party *party; /* the await's party */
    int stage;                /* B_*: its command out */
    cr_status left_rc;        /* the wait's end, which its leave reports */
    char *why;                /* and that end's message */
    bool overdue;             /* its bound passed: nothing more is awaited */
    /* Condition awaits. */
    cr__condition_waiter *waiter;
    int64_t await_ms;         /* the wait for a signal */
    int64_t holds;            /* the owner's holds, let go and taken again */
    int64_t released, taken;  /* how many of them so far */
    int leave_mode;           /* CR__CONDITION_LEAVE_*: the leave out */
    bool in_line;             /* (perhaps) in the condition's line */
    bool in_wait;             /* waiting for its signal: a cancel ends it */
    bool retake_after;        /* the lock is taken again after the leave */
    bool shielded;            /* taking the lock again: a cancel does not
                               * end its wait */
    /* The releaser's turn before its wait's first attempt. */
    cr__turn turn;
    const char *turn_channel;
    bool tune;                /* its first attempt tunes the lock's turn */
    int attempts;             /* a lock's attempts sent */
    /* Reply readers of one-command requests. */
    cr_status (*read)(cr_request *q, cr_status rc, cr__reply *r);
    /* A MultiLock's or RedLock's call, on a thread of its own. */
    struct thread_call *call;
};

struct cr_async {
    uint32_t magic;
    cr_client *client;
    cr__aio *io;
    cr_request *pending;
    cr_request *done, **done_tail;
    cr__atimer done_timer;
    bool freeing;
    bool free_later;    /* cr_async_free was called from a callback */
};

int64_t
cr_async_owner_id(void)
{
    return OWNER_BASE + atomic_fetch_add(&next_owner, 1);
}

/* ------------------------------------------------------------ requests */

static void
request_free(cr_request *q)
{
    free(q->channel);
    free(q->acquire_latch);
    free(q->party);
    free(q->why);
    free(q->waiter);
    free(q);
}

/* The reply to a command of a request that ended before it came (its
 * bound passed, or the handle is being freed): true when the caller is to
 * return at once, having given back what the command took. The request is
 * freed here once its callback has run. */
static bool
late_reply(cr_request *q)
{
    if (!q->ended)
        return false;
    if (q->zombie)
        request_free(q);
    return true;
}

/* Runs the callbacks of the requests that ended: `all`, or as many as the
 * dispatch's budget allows. */
static void
run_callbacks(cr_async *a, bool all)
{
    cr_request *q;

    while ((q = a->done) != NULL && (all || cr__aio_spend(a->io))) {
        a->done = q->done_next;
        if (a->done == NULL)
            a->done_tail = &a->done;
        if (q->pfn != NULL)
            q->pfn(q->userdata, q->rc, q->rc == CR_OK ? q->id : NULL);
        else if (q->bfn != NULL)
            q->bfn(q->userdata, q->rc,
                   q->rc == CR_OK ? q->party->generation : -1,
                   q->rc == CR_OK ? q->party->index : -1);
        else if (q->fn != NULL)
            q->fn(q->userdata, q->rc, q->value);
        if (q->busy)
            q->zombie = true; /* its command's reply frees it */
        else
            request_free(q);
    }
}

static void
run_done(void *arg)
{
    cr_async *a = arg;

    run_callbacks(a, false);
    if (a->done != NULL && !a->freeing)
        cr__aio_after(a->io, &a->done_timer, 0, run_done, a);
}

/* Takes `q` off its handle's pending list. */
static void
unlink_pending(cr_request *q)
{
    if (q->prev != NULL)
        q->prev->next = q->next;
    else
        q->async->pending = q->next;
    if (q->next != NULL)
        q->next->prev = q->prev;
}

/* Ends `q` with `rc`: its callback runs at the loop's next turn. */
static void
end(cr_request *q, cr_status rc)
{
    cr_async *a = q->async;

    if (q->ended)
        return;
    q->ended = true;
    q->rc = q->cancelled && rc != CR_ECLOSED && !q->final ? CR_ECANCELED : rc;
    cr__aio_cancel_timer(a->io, &q->timer);
    cr__aio_cancel_timer(a->io, &q->bound);
    cr__aio_wake_stop(a->io, &q->sleeper);
    unlink_pending(q);
    q->done_next = NULL;
    *a->done_tail = q;
    a->done_tail = &q->done_next;
    if (!a->freeing)
        cr__aio_after(a->io, &a->done_timer, 0, run_done, a);
}

/* A new pending request of `a`. */
static cr_request *
request_new(cr_async *a, int kind, cr_async_fn fn, void *userdata)
{
    cr_request *q = calloc(1, sizeof(*q));

    if (q == NULL)
        return NULL;
    q->async = a;
    q->kind = kind;
    q->fn = fn;
    q->userdata = userdata;
    q->next = a->pending;
    if (a->pending != NULL)
        a->pending->prev = q;
    a->pending = q;
    return q;
}

/* Takes back a request that could not start: no callback runs. */
static void
discard(cr_request *q)
{
    unlink_pending(q);
    free(q);
}

/* The guard of every call that starts a request. */
static cr_status
enter(cr_async *a)
{
    cr__op op;

    cr__clear_error();
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return cr__fail(CR_EINVAL, "not a live asynchronous handle");
    if (a->freeing || a->free_later)
        return cr__fail(CR_ECLOSED, "the asynchronous handle is being freed");
    return cr__client_enter(a->client, &op);
}

/* Keeps the request handle for the caller (it may be NULL). */
static cr_status
started(cr_async *a, cr_request *q, cr_request **req)
{
    if (req != NULL)
        *req = q;
    cr__client_leave(a->client);
    return CR_OK;
}

/* ----------------------------------------------- one-command requests */

/* The reply of a one-command request. */
static void
script_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;

    (void)cmd;
    q->busy = false;
    rc = q->read(q, rc, r);
    end(q, rc);
}

/* Starts a request that is one script call and a reply reader. */
static cr_status
start_script(cr_async *a, cr__script_call *call, unsigned flags,
             cr_status (*read)(cr_request *, cr_status, cr__reply *),
             cr_async_fn fn, void *userdata, cr_request **req,
             cr_request **out)
{
    cr_request *q = request_new(a, Q_SCRIPT, fn, userdata);
    cr_status rc;

    if (q == NULL)
        return CR_ENOMEM;
    q->read = read;
    q->busy = true;
    if ((rc = cr__aio_script(a->io, call, flags, script_replied, q)) != CR_OK) {
        discard(q);
        return rc;
    }
    if (out != NULL)
        *out = q;
    return started(a, q, req);
}

/* -------------------------------------------------------------- locks */

static void drive(cr_request *q);
static void step_later(void *arg);

/* Whether a command whose reply ended with `rc` may have run unanswered:
 * it was sent, and then its link was lost (CR_EIO) or the handle freed
 * (CR_ECLOSED) before its reply was read. */
static bool
may_have_run(cr_status rc, const cr__cmd *cmd)
{
    return cmd->sent && (rc == CR_EIO || rc == CR_ECLOSED);
}

/* After an attempt (or a look) of waiting request q was sent: a command
 * that could not even be queued is the attempt's outcome at once. */
static void
attempt_sent(cr_request *q, cr_status rc)
{
    if (rc == CR_OK)
        return;
    q->busy = false;
    q->w.rc = rc;
    drive(q);
}

/* The reply to an attempt. */
static void
attempt_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;
    cr_lock *l = q->lock;
    int64_t hint = -1;

    q->busy = false;
    q->cmd = *cmd;
    rc = l->kind->acquire_reply(l, q->owner, q->wait_ms, rc, r, &hint);
    if (q->ended) {
        /* The request ended meanwhile (its bound passed, or the handle is
         * being freed): what this attempt may have taken is given back,
         * and a fair waiter's place in the queue left. */
        cr__script_lock_later(l, q->owner, q->attempt_lease, q->wait_ms,
                              rc == CR_OK ? CR__LATER_UNDO
                              : may_have_run(rc, cmd)
                                  ? CR__LATER_RESOLVE | CR__LATER_GIVE_UP
                                  : CR__LATER_GIVE_UP);
        late_reply(q);
        return;
    }
    if (rc == CR_EREENTRANT && cr__script_lock_holds(l, q->owner, NULL) == 0) {
        /* A hold of this owner this client does not know of: an earlier
         * attempt whose reply was lost did acquire. */
        hint = 0;
        rc = CR_OK;
    }
    if (may_have_run(rc, cmd))
        q->uncertain = true;
    if (rc == CR_OK)
        q->value = hint;
    q->w.rc = rc;
    q->w.hint = hint;
    drive(q);
}

/* The answer to "did the lost attempt acquire?" before trying again. */
static void
resolved_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;
    int64_t server = 0;

    (void)cmd;
    q->busy = false;
    if (q->ended) {
        /* Its bound passed after a lost reply: resolved in the background. */
        cr__reply_free(r);
        cr__script_lock_later(q->lock, q->owner, q->attempt_lease, q->wait_ms,
                              CR__LATER_RESOLVE | CR__LATER_GIVE_UP);
        late_reply(q);
        return;
    }
    if (rc == CR_OK && r->type != CR__REPLY_NIL && !cr__reply_int(r, &server))
        rc = cr__fail(CR_ESCRIPT, "hold count of %s is not a number",
                      q->owner);
    cr__reply_free(r);
    if (rc != CR_OK) {
        q->w.rc = rc;
        drive(q);
        return;
    }
    q->uncertain = false;
    if (server > cr__script_lock_holds(q->lock, q->owner, NULL)) {
        q->value = 0;
        q->w.rc = CR_OK;
        drive(q);
        return;
    }
    drive(q); /* the state machine still asks for the attempt */
}

/* Sends one attempt (or first the look that resolves a lost reply). */
static void
lock_attempt(cr_request *q)
{
    cr_async *a = q->async;
    cr_lock *l = q->lock;
    cr__script_call call = {0};
    char *tmp = NULL;
    int64_t settle;
    cr_status rc;

    if (q->uncertain) {
        const char *argv[3] = {"HGET", l->raw, q->owner};

        q->busy = true;
        rc = cr__aio_command(a->io, 3, argv, NULL, resolved_replied, q);
        attempt_sent(q, rc == CR_OK ? CR_OK : CR_EIO);
        return;
    }
    if ((settle = cr__topology_settle_left(a->client->topology)) > 0) {
        q->w.hint = settle;
        q->w.rc = cr__fail(CR_BUSY, "the master moved just now: nothing is "
                           "taken on it for another %lld ms", (long long)settle);
        drive(q);
        return;
    }
    q->sent_ms = cr__now_ms();
    q->gen = cr__topology_generation(a->client->topology);
    q->attempts++;
    rc = l->kind->acquire_call(l, q->owner, q->attempt_lease, q->wait_ms, &call,
                               &tmp);
    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(a->io, &call, CR__CMD_SYNC, attempt_replied, q);
    }
    cr__script_call_free(&call);
    free(tmp);
    attempt_sent(q, rc);
}

/* The wait is over: keep the hold, or leave what remains behind.
 * Returns the acquisition's status. */
static cr_status
lock_settle(cr_request *q)
{
    cr_async *a = q->async;
    cr_lock *l = q->lock;
    cr_status rc = q->w.rc;
    unsigned later = 0;

    if (q->tune && q->attempts > 0)
        cr__handoff_tune(&l->handoff, rc == CR_OK && q->attempts == 1);
    if (rc == CR_OK && q->cmd.sync != CR_OK) {
        /* A grant no replica saw could vanish in a failover: undone. */
        later |= CR__LATER_UNDO;
        rc = cr__fail(q->cmd.sync, "%s %s: %s; the acquisition was undone",
                      l->kind->name, l->name, cr_last_error());
    }
    if ((rc == CR_EIO || rc == CR_BUSY) && q->uncertain)
        later |= CR__LATER_RESOLVE;
    if (rc == CR_OK && ((q->cancelled && !q->shielded) ||
                        atomic_load(&a->client->closing))) {
        later |= CR__LATER_UNDO; /* obtained after the cancel: given back */
        rc = q->cancelled && !q->shielded ? CR_ECANCELED : CR_ECLOSED;
    } else if (rc == CR_OK) {
        rc = cr__hold_add(a->client->renewal, l->kind->hold_kind, l->raw,
                          q->owner,
                          l->kind->hold_kind == CR__HOLD_READ ? l->key2 : NULL,
                          q->owner_id, q->lease_ms == CR_LEASE_WATCHDOG,
                          cr__lease_valid_until(q->sent_ms, q->attempt_lease),
                          l->lost_fn, l->lost_userdata);
        if (rc != CR_OK) {
            later |= CR__LATER_UNDO;
        } else {
            if (cr__topology_generation(a->client->topology) != q->gen)
                later |= CR__LATER_VERIFY;
            if (q->lease_ms > 0)
                atomic_store(&l->lease_ms, q->lease_ms);
            cr__handoff_acquired(&l->handoff, cr__now_us());
        }
    }
    if (rc != CR_OK && !(later & CR__LATER_UNDO))
        later |= CR__LATER_GIVE_UP;
    if (later != 0)
        cr__script_lock_later(l, q->owner, q->attempt_lease, q->wait_ms, later);
    if (rc != CR_OK)
        q->value = 0;
    if (cr__hooked(&a->client->run.stats) && (rc == CR_OK || rc == CR_BUSY))
        cr__event(&a->client->run.stats,
                  rc == CR_OK ? CR_EVENT_ACQUIRED : CR_EVENT_BUSY, rc,
                  l->kind->name, l->name, cr__now_ms() - q->w.start, -1, true);
    return rc;
}

static void
lock_finish(cr_request *q)
{
    end(q, lock_settle(q));
}

/* A subscription or a sleep ended. */
static void
woke(void *ctx, cr_status woke, bool opened)
{
    cr_request *q = ctx;

    q->sleeping = false;
    q->subscribing = false;
    q->w.woke = woke;
    q->w.opened = opened;
    if (q->w.sub == NULL)
        q->w.sub = q->sleeper.sub;
    drive(q);
}

/* A sleep without a subscription ended. */
static void
slept(void *arg)
{
    cr_request *q = arg;

    q->w.woke = atomic_load(&q->async->client->closing) ? CR_ECLOSED
                                                        : CR_TIMEOUT;
    drive(q);
}

static void lock_attempt(cr_request *q);
static void lock_finish(cr_request *q);
static const wait_ops lock_ops = {lock_attempt, lock_finish};

/* Carries out what the wait state machine asks next. */
static void
drive(cr_request *q)
{
    cr_async *a = q->async;

    switch (cr__wait_step(&q->w, cr__now_ms())) {
    case CR__WAIT_ATTEMPT:
        if (q->cancelled && !q->shielded) {
            q->w.rc = CR_ECANCELED;
            drive(q);
            return;
        }
        q->ops->attempt(q);
        return;
    case CR__WAIT_SUBSCRIBE:
        q->sleeper.fn = woke;
        q->sleeper.ctx = q;
        q->w.sub = NULL;
        q->subscribing = true;
        cr__aio_subscribe(a->io, q->w.spec.channel, q->w.spec.decode,
                          q->w.sleep_ms, &q->sleeper);
        return;
    case CR__WAIT_SLEEP:
        if (q->cancelled && !q->shielded) {
            q->w.woke = CR_ECANCELED;
            drive(q);
            return;
        }
        if (q->w.sub != NULL) {
            q->sleeper.fn = woke;
            q->sleeper.ctx = q;
            q->sleeping = true;
            cr__aio_sleep(a->io, q->w.sub, q->w.sleep_ms, NULL, &q->sleeper);
        } else {
            cr__aio_after(a->io, &q->timer, q->w.sleep_ms, slept, q);
        }
        return;
    case CR__WAIT_DONE: {
        cr__op op;

        cr__op_begin(&op, a->client, -1);
        cr__wait_report(&q->w, &op, cr__now_ms());
        q->ops->finish(q);
        return;
    }
    }
}

/* A step of a waiting request from a timer: the first, after the
 * releaser's turn, or one a cancel brought forward. */
static void
step_later(void *arg)
{
    cr_request *q = arg;

    drive(q);
}

/* Brings the end of q's wait forward to now: its next step ends it; a
 * step under way (a command out, a subscription being confirmed) comes
 * first. A sleep cut short reports `woke`. */
static void
end_wait_now(cr_request *q, cr_status woke)
{
    cr__aio *io = q->async->io;

    q->w.spec.wait_ms = 0;
    q->w.deadline = cr__now_ms();
    if (q->sleeping || q->subscribing) {
        cr__aio_wake_stop(io, &q->sleeper);
        if (q->subscribing) {
            /* The reference is given back; the wait sees a refusal. */
            cr__aio_subs.unsubscribe(io, q->sleeper.sub);
            q->sleeper.sub = NULL;
        }
        q->sleeping = q->subscribing = false;
        q->w.woke = woke;
        q->w.opened = false;
        cr__aio_after(io, &q->timer, 0, step_later, q);
    } else if (q->timer.index != 0) {
        cr__aio_after(io, &q->timer, 0, q->timer.fn, q);
    }
}

/* Takes waiting request q out of its wait, at whatever step it is: what
 * it subscribed to is given back, its sleep ends. */
static void
detach(cr_request *q)
{
    cr__aio *io = q->async->io;
    void *sub = q->subscribing ? q->sleeper.sub : q->w.sub;

    cr__aio_wake_stop(io, &q->sleeper);
    if (sub != NULL)
        cr__aio_subs.unsubscribe(io, sub);
    q->w.sub = q->sleeper.sub = NULL;
    q->sleeping = q->subscribing = false;
}

/* Ends waiting request q now with rc; a command of it still out meets
 * late_reply when it answers. */
static void
abandon(cr_request *q, cr_status rc)
{
    detach(q);
    end(q, rc);
}

/* A waiting request's bound, its wait and one command timeout (and the
 * replica sync's, when on), passed: it ends now, as a blocking call
 * returns at its deadline. A command of it still out does not hold it
 * (what it takes is given back when it answers); otherwise the wait ends
 * as when it runs out, leaving nothing behind, without a last attempt. */
static void
bound_passed(void *arg)
{
    cr_request *q = arg;

    if (q->ended)
        return;
    if (q->busy) {
        abandon(q, cr__fail(CR_EIO, "no answer within the wait and one "
                            "command timeout"));
        return;
    }
    detach(q);
    cr__aio_cancel_timer(q->async->io, &q->timer);
    q->w.rc = q->w.rc == CR_EIO ? CR_EIO : CR_BUSY;
    q->overdue = true;
    q->ops->finish(q);
}

/* The releaser's turn of waiting request q (handoff.h) on the loop, as
 * cr__wait_turn keeps it for a blocking call; the wait's first step comes
 * once it is over. */
static void
turn_step(void *arg)
{
    cr_request *q = arg;
    cr__aio *io = q->async->io;
    cr__sub_seen seen = {.waiters = -1};
    int64_t wait_us = 0;

    cr__aio_subs.waiters(io, q->turn_channel, &seen, NULL);
    switch (cr__turn_next(&q->turn, &seen, cr__now_us(), &wait_us)) {
    case CR__TURN_COUNT:
        cr__aio_after(io, &q->timer, (wait_us + 999) / 1000, turn_step, q);
        return;
    case CR__TURN_SLEEP:
        q->tune = cr__turn_tune(&q->turn, &seen);
        cr__aio_after(io, &q->timer, (wait_us + 999) / 1000, step_later, q);
        return;
    case CR__TURN_GO:
        q->tune = cr__turn_tune(&q->turn, &seen);
        drive(q);
        return;
    }
}

/* Begins the wait of `q` after the releaser's turn of `h` (NULL: none),
 * whose releases are published on `channel`, without a bound of its own
 * (a condition await's, whose steps end it). */
static void
wait_start(cr_request *q, const cr__wait_spec *spec, const cr__handoff *h,
           const char *channel)
{
    cr_async *a = q->async;

    cr__wait_begin_on(&q->w, a->client, spec, &cr__aio_subs, a->io,
                      cr__now_ms());
    if (h != NULL && cr__handoff_turn(h, cr__now_us(), spec->wait_ms,
                                      &q->turn)) {
        q->turn_channel = channel;
        cr__aio_after(a->io, &q->timer, 0, turn_step, q);
    } else {
        cr__aio_after(a->io, &q->timer, 0, step_later, q);
    }
}

/* Begins the wait of `q` after the releaser's turn of `h` (as wait_start),
 * bounded by the wait. */
static void
wait_begin(cr_request *q, const cr__wait_spec *spec, const cr__handoff *h,
           const char *channel)
{
    cr_async *a = q->async;

    wait_start(q, spec, h, channel);
    if (spec->wait_ms >= 0)
        cr__aio_after(a->io, &q->bound,
                      spec->wait_ms + a->client->command_timeout_ms +
                          a->client->conn_cfg.sync_timeout_ms,
                      bound_passed, q);
}

/* ------------------------------------------- MultiLock and RedLock */

/* Their sub-locks may live on other clients, whose links this handle does
 * not have: the blocking call runs on a thread of its own, in slices of
 * THREAD_SLICE_MS at most, so that a cancel or a free is seen between
 * two; the outcome is posted to the loop. */
#define THREAD_SLICE_MS 200

typedef struct thread_call {
    cr__apost post;
    cr_request *q;            /* NULL once it ended without the outcome */
    cr_lock *lock;
    int64_t owner, wait_ms, lease_ms;
    bool unlock;
    atomic_bool stop;         /* cancelled, or the handle is being freed */
    bool joined;              /* by cr_async_free */
    cr_status rc;
    char err[256];
    pthread_t thread;
} thread_call;

/* The thread call's outcome as one event of the request, from what the
 * multilock's calls kept in the thread's sink: an acquisition or a wait
 * that ran out with the time waited over all the slices, or a release.
 * Nothing for a cancelled wait or an error, as for the other requests. */
static void
thread_call_event(const thread_call *t, const cr__event_sink *kept,
                  int64_t start)
{
    if (!kept->kept)
        return;
    if (t->unlock ? t->rc != CR_OK || kept->kind != CR_EVENT_RELEASED
                  : t->rc != CR_OK &&
                        (t->rc != CR_BUSY || atomic_load(&t->stop)))
        return;
    cr__event(&t->lock->client->run.stats, kept->kind, kept->status,
              kept->object, kept->name, t->unlock ? -1 : cr__now_ms() - start,
              kept->hold_ms, true);
}

static void *
thread_call_run(void *arg)
{
    thread_call *t = arg;
    int64_t start = cr__now_ms(), left;
    cr__event_sink kept = {0};

    if (t->unlock) {
        t->rc = cr__lock_unlock(t->lock, &kept, t->owner);
    } else {
        do {
            left = t->wait_ms < 0 ? THREAD_SLICE_MS
                                  : t->wait_ms - (cr__now_ms() - start);
            t->rc = cr__lock_try_lock(t->lock, &kept, t->owner,
                                      left > THREAD_SLICE_MS
                                          ? THREAD_SLICE_MS
                                          : left > 0 ? left : 0,
                                      t->lease_ms, NULL);
        } while (t->rc == CR_BUSY && !atomic_load(&t->stop) &&
                 (t->wait_ms < 0 || cr__now_ms() - start < t->wait_ms));
    }
    snprintf(t->err, sizeof(t->err), "%s", cr_last_error());
    thread_call_event(t, &kept, start);
    cr__aio_post(t->q->async->io, &t->post);
    return NULL;
}

/* Gives back, in the background, what a thread call took after its
 * request ended. */
static void
give_back_run(const cr__op *op, void *arg)
{
    thread_call *t = arg;

    (void)op; /* the unlock is a call of its own */
    cr_lock_unlock_tid(t->lock, t->owner);
}

/* The thread call's outcome, on the loop. */
static void
thread_call_done(void *ctx)
{
    thread_call *t = ctx;
    cr_request *q = t->q;
    cr_status rc = t->rc == CR_OK ? CR_OK : cr__fail(t->rc, "%s", t->err);

    if (!t->joined)
        pthread_join(t->thread, NULL);
    q->busy = false;
    q->call = NULL;
    if (!t->unlock && t->rc == CR_OK && (q->ended || q->cancelled)) {
        /* Obtained after the cancel or the free: given back. */
        cr__object_background(t->lock, give_back_run, free, t);
        t = NULL;
    }
    free(t);
    if (q->ended)
        late_reply(q);
    else
        end(q, rc); /* CR_ECANCELED when cancelled */
}

/* Starts the blocking call of a MultiLock or RedLock on a thread. */
static cr_status
start_thread_call(cr_async *a, cr_lock *l, int64_t owner, int64_t wait_ms,
                  int64_t lease_ms, bool unlock, cr_async_fn fn,
                  void *userdata, cr_request **req)
{
    thread_call *t = calloc(1, sizeof(*t));
    cr_request *q;
    cr_status rc;

    if (t == NULL || (q = request_new(a, Q_THREAD, fn, userdata)) == NULL) {
        free(t);
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    t->post = (cr__apost){NULL, thread_call_done, t};
    t->q = q;
    t->lock = l;
    t->owner = owner;
    t->wait_ms = wait_ms;
    t->lease_ms = lease_ms;
    t->unlock = unlock;
    atomic_init(&t->stop, false);
    q->call = t;
    q->busy = true;
    if ((rc = cr__aio_post_ready(a->io)) != CR_OK ||
        pthread_create(&t->thread, NULL, thread_call_run, t) != 0) {
        discard(q);
        free(t);
        cr__client_leave(a->client);
        return rc != CR_OK ? rc : cr__fail(CR_ENOMEM, "cannot start a thread");
    }
    return started(a, q, req);
}

/* Begins the wait of lock request q (its lock, owner, wait and lease
 * set) on the lock kind's channel, after the releaser's turn; `bounded`:
 * with the request's bound. CR_ENOMEM when a fair waiter's channel cannot
 * be named (nothing begun). */
static cr_status
lock_wait_begin(cr_request *q, bool bounded)
{
    cr_lock *l = q->lock;
    cr__wait_spec spec;

    if (l->kind->own_channel && q->channel == NULL &&
        (q->channel = cr__name_waiter_channel(l->channel, q->owner)) == NULL)
        return cr__fail(CR_ENOMEM, "out of memory");
    spec = (cr__wait_spec){
        .channel = l->kind->spin ? NULL
                   : q->channel != NULL ? q->channel : l->channel,
        .decode = cr__lock_decode,
        .wait_ms = q->wait_ms,
        .min_sleep_ms = l->kind->min_sleep_ms,
        .max_sleep_ms = l->kind->max_sleep_ms,
        .in_line = l->kind->in_line &&
                   cr__script_lock_holds(l, q->owner, NULL) == 0,
    };
    if (bounded)
        wait_begin(q, &spec, &l->handoff, l->channel);
    else
        wait_start(q, &spec, &l->handoff, l->channel);
    return CR_OK;
}

cr_status
cr_async_lock(cr_async *a, cr_lock *l, int64_t owner, int64_t wait_ms,
              int64_t lease_ms, cr_async_fn fn, void *userdata,
              cr_request **req)
{
    cr__op guard;
    cr_request *q;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__lock_enter(l, &guard)) == CR_OK) {
        cr__lock_leave(l);
        if (owner <= 0)
            rc = cr__fail(CR_EINVAL, "owner id %lld is not positive",
                          (long long)owner);
        else if ((rc = cr__check_wait(wait_ms)) == CR_OK)
            rc = cr__check_lease(lease_ms, "CR_LEASE_WATCHDOG");
    }
    if (rc == CR_OK && l->kind == NULL)
        return start_thread_call(a, l, owner, wait_ms, lease_ms, false, fn,
                                 userdata, req);
    if (rc == CR_OK && (q = request_new(a, Q_WAIT, fn, userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q->ops = &lock_ops;
    q->lock = l;
    q->owner_id = owner;
    q->lease_ms = lease_ms;
    q->wait_ms = wait_ms;
    q->attempt_lease = lease_ms > 0 ? lease_ms : a->client->watchdog_timeout_ms;
    cr__name_owner(a->client->id, owner, l->kind->writer, q->owner);
    if ((rc = lock_wait_begin(q, true)) != CR_OK)
        end(q, rc);
    return started(a, q, req);
}

/* The reply of an unlock. */
static cr_status
unlock_read(cr_request *q, cr_status rc, cr__reply *r)
{
    cr_async *a = q->async;
    cr_lock *l = q->lock;
    cr__renewal *ren = a->client->renewal;
    int64_t heard = 0, local;
    cr__sub_seen seen;
    bool lost = false;
    int result = 0;

    local = cr__script_lock_holds(l, q->owner, &lost);
    if (rc == CR_OK) {
        const char *argv[2] = {"DEL", q->unlock.unlock_latch};

        rc = cr__unlock_reply(l, r, &result, &heard);
        /* The unlock latch goes, as Redisson drops it; nobody waits for
         * that. */
        cr__aio_command(a->io, 2, argv, NULL, NULL, NULL);
    }
    if (rc == CR_OK) {
        int64_t held = cr__hold_release(
            ren, l->kind->hold_kind, l->raw, q->owner, result == 1,
            cr__lease_valid_until(q->sent_ms, q->attempt_lease));

        if (result == 1)
            cr__event(&a->client->run.stats, CR_EVENT_RELEASED, CR_OK,
                      l->kind->name, l->name, -1, held, true);
        cr__aio_subs.waiters(a->io, l->channel, &seen, NULL);
        cr__handoff_after_unlock(&l->handoff, &seen, heard,
                                 q->unlock.started_us, cr__now_us(),
                                 l->kind->in_line);
    } else if (rc == CR_ENOTOWNER && local > 0) {
        cr__hold_found_lost(ren, l->kind->hold_kind, l->raw, q->owner,
                            "the unlock found it gone");
        cr__hold_release(ren, l->kind->hold_kind, l->raw, q->owner, true, -1);
        rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had expired or was "
                      "removed before this unlock", l->kind->name, l->name,
                      q->owner);
    } else {
        cr__hold_release(ren, l->kind->hold_kind, l->raw, q->owner, false, -1);
        if (lost && local > 0)
            rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had been lost, and "
                          "the unlock failed too", l->kind->name, l->name,
                          q->owner);
    }
    if (rc != CR_OK || result == 1)
        atomic_store(&l->lease_ms, a->client->watchdog_timeout_ms);
    free(q->unlock.unlock_latch);
    q->unlock.unlock_latch = NULL;
    return rc;
}

/* Begins the unlock of one hold of `owner` of `l` (cr_async_unlock's,
 * and a condition await's release): *u begun, the hold marked releasing,
 * the kind's script call built into *call with the lock's current lease
 * (*lease; *tmp, when set, freed once the call was sent). On failure
 * nothing is left; once it succeeded, an unlock that cannot be sent is
 * taken back with unlock_abort. */
static cr_status
unlock_prepare(cr_async *a, cr_lock *l, const char *owner, cr__unlock *u,
               int64_t *lease, cr__script_call *call, char **tmp)
{
    cr_status rc = cr__unlock_begin(l, u);

    if (rc != CR_OK)
        return rc;
    cr__hold_releasing(a->client->renewal, l->kind->hold_kind, l->raw, owner);
    *lease = atomic_load(&l->lease_ms);
    rc = l->kind->unlock_call(l, owner, *lease, u, call, tmp);
    if (rc != CR_OK) {
        cr__hold_release(a->client->renewal, l->kind->hold_kind, l->raw,
                         owner, false, -1);
        free(u->unlock_latch);
        u->unlock_latch = NULL;
    }
    return rc;
}

static void
unlock_abort(cr_async *a, cr_lock *l, const char *owner, cr__unlock *u)
{
    cr__hold_release(a->client->renewal, l->kind->hold_kind, l->raw, owner,
                     false, -1);
    free(u->unlock_latch);
    u->unlock_latch = NULL;
}

cr_status
cr_async_unlock(cr_async *a, cr_lock *l, int64_t owner, cr_async_fn fn,
                void *userdata, cr_request **req)
{
    cr__op guard;
    cr__script_call call = {0};
    cr_request *q = NULL;
    char name[CR__OWNER_MAX], *tmp = NULL;
    cr__unlock u = {0};
    int64_t lease = 0;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__lock_enter(l, &guard)) == CR_OK) {
        cr__lock_leave(l);
        if (l->kind == NULL)
            return start_thread_call(a, l, owner, 0, 0, true, fn, userdata,
                                     req);
    }
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    cr__name_owner(a->client->id, owner, l->kind->writer, name);
    rc = unlock_prepare(a, l, name, &u, &lease, &call, &tmp);
    if (rc == CR_OK &&
        (rc = start_script(a, &call, u.cmd.flags, unlock_read, fn, userdata,
                           req, &q)) != CR_OK)
        unlock_abort(a, l, name, &u);
    cr__script_call_free(&call);
    free(tmp);
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q->lock = l;
    q->owner_id = owner;
    q->unlock = u;
    q->sent_ms = cr__now_ms();
    q->attempt_lease = lease;
    memcpy(q->owner, name, sizeof(name));
    return CR_OK;
}

/* ---------------------------------------------- semaphores and latches */

/* The reply to a semaphore's, a permit's or a latch's attempt. */
static void
object_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;
    int64_t hint = -1;

    q->busy = false;
    if (q->what == O_SEM) {
        rc = cr__sem_acquire_reply(rc, r);
    } else if (q->what == O_LATCH_COUNT && q->counting) {
        int64_t left = 0;

        q->counting = false;
        rc = cr__latch_count_down_reply(q->obj, rc, r, &left);
        if (rc == CR_OK && left > 0)
            rc = CR_BUSY;
    } else if (q->what == O_LATCH || q->what == O_LATCH_COUNT) {
        rc = cr__latch_look_reply(q->obj, rc, r, &hint);
    }
    else
        rc = cr__permit_acquire_reply(rc, r, &hint);
    if (may_have_run(rc, cmd))
        q->uncertain = true;
    if (q->ended) {
        /* The request ended meanwhile (its bound passed, or the handle is
         * being freed): what this attempt may have taken is looked for and
         * given back in the background. */
        if (q->what == O_PERMIT && (rc == CR_OK || q->uncertain))
            cr__permit_late(q->obj, &q->raw_id, 1, 1);
        else if (q->what == O_SEM && (rc == CR_OK || q->uncertain)) {
            cr__sem_late(q->obj, q->acquire_latch, q->permits);
            q->acquire_latch = NULL;
        }
        late_reply(q);
        return;
    }
    q->w.rc = rc;
    q->w.hint = hint;
    drive(q);
}

/* A permit whose reply was lost: is it out? (before the next attempt) */
static void
permit_resolved(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;

    (void)cmd;
    q->busy = false;
    if (q->ended) {
        /* Its bound passed while it looked: looked for again, given back. */
        cr__reply_free(r);
        cr__permit_late(q->obj, &q->raw_id, 1, 1);
        late_reply(q);
        return;
    }
    if (rc == CR_OK) {
        q->uncertain = false;
        if (r->type != CR__REPLY_NIL)
            q->w.rc = CR_OK; /* it was granted */
        cr__reply_free(r);
    } else {
        q->w.rc = rc;
    }
    drive(q);
}

static void
object_attempt(cr_request *q)
{
    cr_async *a = q->async;
    cr__script_call call = {0};
    cr__sem *s = q->obj;
    cr_status rc;

    if (q->what == O_PERMIT && q->uncertain) {
        const char *argv[3] = {"ZSCORE", s->issued, q->raw_id.b};
        size_t lens[3] = {6, strlen(s->issued), q->raw_id.len};

        q->busy = true;
        rc = cr__aio_command(a->io, 3, argv, lens, permit_resolved, q);
        attempt_sent(q, rc == CR_OK ? CR_OK : CR_EIO);
        return;
    }
    if (q->what == O_SEM) {
        rc = cr__sem_acquire_call(s, q->permits, q->acquire_latch,
                                  a->client->reconnect_window_ms +
                                      a->client->unlock_latch_timeout_ms,
                                  &call);
    } else if (q->what == O_LATCH_COUNT && !q->counted) {
        /* Marked before it is sent: never counted down twice. */
        q->counted = q->counting = true;
        rc = cr__latch_count_down_call(q->obj, &call);
    } else if (q->what == O_LATCH || q->what == O_LATCH_COUNT) {
        rc = cr__latch_look_call(q->obj, false, &call);
    } else {
        rc = cr__permit_id_new(s, &q->raw_id);
        if (rc == CR_OK)
            rc = cr__permit_acquire_call(s, 1, q->lease_ms, &q->raw_id, 1,
                                         &call);
    }
    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(a->io, &call, 0, object_replied, q);
    }
    cr__script_call_free(&call);
    attempt_sent(q, rc);
}

static void
object_finish(cr_request *q)
{
    cr_async *a = q->async;
    cr_status rc = q->w.rc;

    if (q->what == O_SEM) {
        /* A semaphore: permits taken after a cancel, or perhaps taken by
         * an attempt whose reply was lost, are looked for and given back
         * in the background. */
        if ((rc == CR_OK && q->cancelled) || (rc == CR_EIO && q->uncertain)) {
            cr__sem_late(q->obj, q->acquire_latch, q->permits);
            q->acquire_latch = NULL;
        } else if (rc == CR_OK) {
            const char *argv[2] = {"DEL", q->acquire_latch};

            cr__aio_command(a->io, 2, argv, NULL, NULL, NULL);
        } else if (rc == CR_BUSY) {
            rc = cr__fail(CR_BUSY, "semaphore %s: fewer than %lld permits "
                          "until the wait ran out", ((cr__sem *)q->obj)->name,
                          (long long)q->permits);
        }
    } else if (q->what == O_LATCH || q->what == O_LATCH_COUNT) {
        if (rc == CR_BUSY)
            rc = cr__fail(CR_TIMEOUT, "latch %s still closed when the wait "
                          "ran out", cr_latch_name(q->obj));
    } else {
        if ((rc == CR_OK && q->cancelled) ||
            ((rc == CR_EIO || rc == CR_BUSY) && q->uncertain))
            cr__permit_late(q->obj, &q->raw_id, 1, 1);
        else if (rc == CR_OK)
            cr__permit_id_hex(&q->raw_id, q->id);
    }
    end(q, rc);
}

static const wait_ops object_ops = {object_attempt, object_finish};

/* A waiting request on a semaphore or a latch. */
static cr_request *
object_request(cr_async *a, int what, void *obj, const char *channel,
               cr__decode_fn decode, int64_t wait_ms, cr__handoff *h,
               cr_async_fn fn, void *userdata)
{
    static const char *const kinds[] = {
        [O_SEM] = "semaphore", [O_PERMIT] = "permit semaphore",
        [O_LATCH] = "latch", [O_LATCH_COUNT] = "latch"};
    cr_request *q = request_new(a, Q_WAIT, fn, userdata);
    cr__wait_spec spec = {
        .ev_object = kinds[what],
        .ev_name = ((const cr__object *)obj)->name,
        .ev_async = true,
        .ev_busy = what == O_LATCH || what == O_LATCH_COUNT ? CR_TIMEOUT
                                                            : CR_BUSY,
        .channel = channel,
        .decode = decode,
        .wait_ms = wait_ms,
        .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
    };
    if (q == NULL)
        return NULL;
    q->ops = &object_ops;
    q->what = what;
    q->obj = obj;
    wait_begin(q, &spec, h, channel);
    return q;
}

cr_status
cr_async_semaphore_acquire(cr_async *a, cr_semaphore *sem, int64_t permits,
                           int64_t wait_ms, cr_async_fn fn, void *userdata,
                           cr_request **req)
{
    cr__op guard;
    cr__sem *s = (cr__sem *)sem;
    cr_request *q = NULL;
    char *acquire_latch = NULL;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__sem_enter(sem, &cr__semaphore_kind, &guard)) == CR_OK) {
        cr__object_leave(sem);
        if ((rc = cr__check_permits(permits)) == CR_OK &&
            (rc = cr__check_wait(wait_ms)) == CR_OK &&
            (acquire_latch = cr__name(CR__NAME_ACQUIRE_LATCH, s->raw)) ==
                NULL)
            rc = cr__fail(CR_ENOMEM, "cannot make a request id");
    }
    if (rc == CR_OK &&
        (q = object_request(a, O_SEM, s, s->channel, cr__sem_decode, wait_ms,
                            &s->handoff, fn, userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        free(acquire_latch);
        cr__client_leave(a->client);
        return rc;
    }
    q->acquire_latch = acquire_latch;
    q->permits = permits;
    if (permits == 0) {
        cr__aio_cancel_timer(a->io, &q->timer);
        end(q, CR_OK); /* nothing to take */
    }
    return started(a, q, req);
}

cr_status
cr_async_permit_acquire(cr_async *a, cr_permit_semaphore *sem,
                        int64_t wait_ms, int64_t lease_ms,
                        cr_async_permit_fn fn, void *userdata,
                        cr_request **req)
{
    cr__op guard;
    cr__sem *s = (cr__sem *)sem;
    cr_request *q = NULL;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__sem_enter(sem, &cr__permit_semaphore_kind, &guard)) ==
        CR_OK) {
        cr__object_leave(sem);
        if ((rc = cr__check_wait(wait_ms)) == CR_OK)
            rc = cr__check_lease(lease_ms, "CR_LEASE_NONE");
    }
    if (rc == CR_OK &&
        (q = object_request(a, O_PERMIT, s, s->channel, cr__sem_decode,
                            wait_ms, &s->handoff, NULL, userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q->pfn = fn;
    q->lease_ms = lease_ms;
    return started(a, q, req);
}

/* A wait on a latch: awaitAsync (O_LATCH) or countDownAndAwaitAsync
 * (O_LATCH_COUNT, subscribed before it counts down; with a wait of 0 it
 * counts down only). */
static cr_status
latch_wait(cr_async *a, cr_latch *l, int what, int64_t wait_ms,
           cr_async_fn fn, void *userdata, cr_request **req)
{
    cr__op guard;
    cr_request *q = NULL;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__latch_enter(l, &guard)) == CR_OK) {
        cr__object_leave(l);
        rc = cr__check_wait(wait_ms);
    }
    if (rc == CR_OK &&
        (q = object_request(a, what, l, cr__latch_channel(l),
                            cr__latch_decode, wait_ms, NULL, fn,
                            userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q->w.spec.subscribe_first = what == O_LATCH_COUNT && wait_ms != 0;
    return started(a, q, req);
}

cr_status
cr_async_latch_await(cr_async *a, cr_latch *l, int64_t wait_ms,
                     cr_async_fn fn, void *userdata, cr_request **req)
{
    return latch_wait(a, l, O_LATCH, wait_ms, fn, userdata, req);
}

cr_status
cr_async_latch_count_down_and_await(cr_async *a, cr_latch *l, int64_t wait_ms,
                                    cr_async_fn fn, void *userdata,
                                    cr_request **req)
{
    return latch_wait(a, l, O_LATCH_COUNT, wait_ms, fn, userdata, req);
}

/* ------------------------------------------------------ rate limiters */

/* A rate limiter's or a barrier's handle must be of the client the
 * asynchronous handle sends through (its names, lease and owner are). */
static cr_status
same_client(const cr_async *a, const void *obj)
{
    if (((const cr__object *)obj)->client != a->client)
        return cr__fail(CR_EINVAL, "%s is a handle of another client",
                        ((const cr__object *)obj)->name);
    return CR_OK;
}

/* RRateLimiter publishes nothing: between attempts an acquisition waits
 * the time the last one said on the loop's timer (or backs off while
 * Redis cannot be reached), as cr_rate_limiter_try_acquire sleeps, and
 * gives up at once when that time is beyond its wait. A grant cannot be
 * given back (RRateLimiter has no release): one that comes after a cancel
 * is reported as CR_OK. */

static void rate_attempt(cr_request *q);

static void
rate_finish(cr_request *q)
{
    cr_status rc = q->w.rc;

    cr__aio_cancel_timer(q->async->io, &q->timer);
    if (rc == CR_BUSY) {
        rc = cr__rate_busy(q->obj, q->permits, q->wait_ms, q->w.hint);
        q->value = q->w.hint > 0 ? q->w.hint : 0;
    } else if (rc == CR_OK) {
        CR__STAT_ADD(&q->async->client->run.stats, acquisitions, 1);
        q->final = true;
    }
    end(q, rc);
}

/* The next attempt is due. */
static void
rate_step(void *arg)
{
    cr_request *q = arg;

    if (q->cancelled) {
        q->w.rc = CR_ECANCELED;
        rate_finish(q);
    } else if (atomic_load(&q->async->client->closing)) {
        q->w.rc = cr__fail(CR_ECLOSED, "the client is being freed");
        rate_finish(q);
    } else {
        rate_attempt(q);
    }
}

/* After an attempt (its status in w.rc): the next on the timer, or the
 * end, by the blocking loop's rules. */
static void
rate_next(cr_request *q)
{
    int64_t sleep;

    if (q->cancelled || !cr__wait_poll(&q->w, cr__now_ms(), &sleep)) {
        rate_finish(q);
        return;
    }
    cr__aio_after(q->async->io, &q->timer, sleep, rate_step, q);
}

static void
rate_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;
    int64_t hint = -1;

    q->busy = false;
    /* Sent, its reply lost: it may have granted; the next attempt asks
     * with the same id and finds out. */
    if (rc != CR_OK)
        q->uncertain = q->uncertain || may_have_run(rc, cmd);
    else
        q->uncertain = false;
    rc = cr__rate_acquire_reply(q->obj, q->permits, rc, r, &hint);
    if (q->ended) {
        late_reply(q); /* a grant after the bound: nothing to give back */
        return;
    }
    if (rc == CR_BUSY)
        q->w.hint = hint;
    q->w.rc = rc;
    rate_next(q);
}

static void
rate_attempt(cr_request *q)
{
    cr__script_call call = {0};
    cr_status rc = CR_OK;

    if (!q->uncertain)
        rc = cr__random_bytes(q->rid, CR__RATE_ID_BYTES);
    if (rc == CR_OK)
        rc = cr__rate_acquire_call(q->obj, q->permits, q->rid, &call);
    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(q->async->io, &call, 0, rate_replied, q);
    }
    cr__script_call_free(&call);
    if (rc != CR_OK) {
        q->busy = false;
        q->w.rc = rc;
        rate_next(q);
    }
}

static const wait_ops rate_ops = {rate_attempt, rate_finish};

cr_status
cr_async_rate_limiter_acquire(cr_async *a, cr_rate_limiter *l,
                              int64_t permits, int64_t wait_ms,
                              cr_async_fn fn, void *userdata,
                              cr_request **req)
{
    cr__op guard;
    cr_request *q = NULL;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__rate_limiter_enter(l, &guard)) == CR_OK) {
        cr__object_leave(l);
        if ((rc = same_client(a, l)) == CR_OK &&
            (rc = cr__check_range("permits", permits, 1,
                                  CR_RATE_PERMITS_MAX)) == CR_OK)
            rc = cr__check_wait(wait_ms);
    }
    if (rc == CR_OK && (q = request_new(a, Q_WAIT, fn, userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q->ops = &rate_ops;
    q->what = O_RATE;
    q->obj = l;
    q->permits = permits;
    q->wait_ms = wait_ms;
    q->w.client = a->client;
    q->w.start = cr__now_ms();
    q->w.deadline = wait_ms < 0 ? -1 : q->w.start + wait_ms;
    q->w.spec.wait_ms = wait_ms;
    q->w.hint = -1; /* none yet */
    if (wait_ms >= 0)
        cr__aio_after(a->io, &q->bound,
                      wait_ms + a->client->command_timeout_ms +
                          a->client->conn_cfg.sync_timeout_ms,
                      bound_passed, q);
    cr__aio_after(a->io, &q->timer, 0, rate_step, q); /* never inside */
    return started(a, q, req);
}

/* ------------------------------------------------------------ barriers */

/* An await runs the wait state machine as cr_barrier_await does: its
 * first attempt is the arrival, later ones a quick look (a wake-up before
 * a look is due) or a look, which renews the party's lease: the wait's
 * sleeps are bounded by the look's hint (a third of the lease at most),
 * so the loop's timer keeps the lease alive. A wait that ends without an
 * outcome leaves, breaking the round unless it ended first. */

static void barrier_send(cr_request *q, int stage);

/* The wait on the channel of the party's generation, for wait_ms. */
static void
barrier_spec(cr_request *q, int64_t wait_ms, cr__wait_spec *spec)
{
    *spec = (cr__wait_spec){
        .channel = cr__barrier_channel(q->obj, q->party->parity),
        .decode = cr__barrier_decode,
        .wait_ms = wait_ms,
        .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
    };
}

/* The await is over with rc. */
static void
barrier_complete(cr_request *q, cr_status rc)
{
    cr__barrier_ended(q->party);
    if (rc == CR_OK)
        q->final = true; /* passed: a cancel cannot undo the round */
    end(q, rc);
}

/* After the wait and its last look: leave, or complete. */
static void
barrier_conclude(cr_request *q, cr_status rc)
{
    if ((rc == CR_BUSY || rc == CR_ECANCELED) && q->cancelled)
        rc = cr__fail(CR_ECANCELED, "barrier %s: the await was cancelled",
                      ((const cr__object *)q->obj)->name);
    if (rc != CR_OK && rc != CR_EBROKEN && rc != CR_EINVAL &&
        q->party->arrived && q->overdue) {
        /* No time is left to await the leave: it runs in the background,
         * and breaks the round unless the round completed first. */
        cr__barrier_leave_later(q->party);
        barrier_complete(q, cr__fail(CR_TIMEOUT, "barrier %s: no answer "
                                     "within the wait and one command "
                                     "timeout; the party leaves (the round "
                                     "is broken unless it completed first)",
                                     ((const cr__object *)q->obj)->name));
        return;
    }
    if (rc != CR_OK && rc != CR_EBROKEN && rc != CR_EINVAL &&
        q->party->arrived) {
        free(q->why);
        q->why = strdup(cr_last_error());
        q->left_rc = rc;
        barrier_send(q, B_LEAVE);
        return;
    }
    barrier_complete(q, rc);
}

static void
barrier_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;
    cr__barrier_party *p = q->party;
    cr_status sent = rc;
    int64_t hint = -1;
    bool look_now = false;

    (void)cmd;
    q->busy = false;
    switch (q->stage) {
    case B_ARRIVE:
        rc = cr__barrier_arrive_reply(p, rc, r, &hint);
        break;
    case B_QUICK:
        rc = cr__barrier_quick_reply(p, rc, r, &hint, &look_now);
        break;
    case B_LEAVE:
        rc = cr__barrier_leave_reply(p, q->left_rc,
                                     q->why != NULL ? q->why : "",
                                     rc, r);
        break;
    default:
        rc = cr__barrier_look_reply(p, rc, r, &hint);
        break;
    }
    if (q->ended) {
        /* Ended meanwhile (its bound passed, or the handle is being
         * freed): a party still waiting, or whose leave may not have run,
         * leaves in the background. */
        if (q->stage == B_LEAVE ? sent != CR_OK
                                : rc != CR_OK && rc != CR_EBROKEN &&
                                      rc != CR_EINVAL)
            cr__barrier_leave_later(p);
        late_reply(q);
        return;
    }
    if (q->stage == B_LEAVE) {
        barrier_complete(q, rc);
        return;
    }
    if (look_now) {
        barrier_send(q, B_LOOK);
        return;
    }
    q->w.rc = rc;
    q->w.hint = hint;
    drive(q);
}

/* Sends the command of `stage`; one that cannot be queued is its reply. */
static void
barrier_send(cr_request *q, int stage)
{
    cr__aio *io = q->async->io;
    cr__script_call call = {0};
    cr_status rc;

    q->stage = stage;
    q->busy = true;
    if (stage == B_QUICK) {
        const char *argv[4];
        char field[32];

        cr__barrier_quick_argv(q->party, argv, field);
        rc = cr__aio_command(io, 4, argv, NULL, barrier_replied, q);
    } else {
        rc = stage == B_ARRIVE  ? cr__barrier_arrive_call(q->party, &call)
             : stage == B_LEAVE ? cr__barrier_leave_call(q->party, &call)
                                : cr__barrier_look_call(q->party, &call);
        if (rc == CR_OK)
            rc = cr__aio_script(io, &call, 0, barrier_replied, q);
        cr__script_call_free(&call);
    }
    if (rc != CR_OK)
        barrier_replied(q, rc, NULL, &(cr__cmd){0});
}

static void
barrier_attempt(cr_request *q)
{
    cr__barrier_step next = cr__barrier_next(q->party, &q->w, cr__now_ms());

    if (next != CR__BARRIER_HEARD) {
        barrier_send(q, (int)next);
        return;
    }
    q->w.rc = CR_OK; /* its round's completion, read: no command */
    q->w.hint = -1;
    drive(q);
}

/* The wait is over (w.rc). */
static void
barrier_finish(cr_request *q)
{
    cr_async *a = q->async;
    cr__barrier_party *p = q->party;
    cr_status rc = q->w.rc;
    cr__wait_spec spec;

    if (rc == CR__BARRIER_AGAIN) {
        /* The arrival joined a generation of the other parity: a new wait
         * on its channel, for what is left of this one. */
        int64_t left = q->w.deadline < 0 ? -1 : q->w.deadline - cr__now_ms();

        p->parity = (int)(p->generation % 2);
        barrier_spec(q, left < 0 && q->w.deadline >= 0 ? 0 : left, &spec);
        cr__wait_begin_on(&q->w, a->client, &spec, &cr__aio_subs, a->io,
                          cr__now_ms());
        cr__aio_after(a->io, &q->timer, 0, step_later, q);
        return;
    }
    barrier_conclude(q, rc);
}

static const wait_ops barrier_ops = {barrier_attempt, barrier_finish};

cr_status
cr_async_barrier_await(cr_async *a, cr_barrier *b, int64_t wait_ms,
                       cr_async_barrier_fn fn, void *userdata,
                       cr_request **req)
{
    cr__op guard;
    cr__barrier_party *p = NULL;
    cr__wait_spec spec;
    cr_request *q = NULL;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__barrier_enter(b, &guard)) == CR_OK) {
        cr__object_leave(b);
        if ((rc = same_client(a, b)) == CR_OK &&
            (rc = cr__check_wait(wait_ms)) == CR_OK &&
            (p = malloc(sizeof(*p))) == NULL)
            rc = CR_ENOMEM;
    }
    if (rc == CR_OK && (q = request_new(a, Q_WAIT, NULL, userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        free(p);
        cr__client_leave(a->client);
        return rc;
    }
    cr__barrier_party_begin(p, b, cr_async_owner_id());
    q->bfn = fn;
    q->ops = &barrier_ops;
    q->what = O_BARRIER;
    q->obj = b;
    q->party = p;
    barrier_spec(q, wait_ms, &spec);
    wait_begin(q, &spec, NULL, NULL);
    return started(a, q, req);
}

/* One-command requests on semaphores and latches: their reply readers. */
static cr_status
released_read(cr_request *q, cr_status rc, cr__reply *r)
{
    cr__sub_seen seen;
    bool done = false;

    cr__aio_subs.waiters(q->async->io, ((cr__sem *)q->obj)->channel, &seen,
                         NULL);
    rc = cr__sem_release_reply(q->obj, rc, r, &seen, q->sent_us, &done);
    if (rc == CR_OK)
        cr__event(&q->async->client->run.stats, CR_EVENT_RELEASED, CR_OK,
                  "semaphore", ((const cr__object *)q->obj)->name, -1, -1,
                  true);
    return rc;
}

static cr_status
number_read(cr_request *q, cr_status rc, cr__reply *r)
{
    return rc == CR_OK ? cr__reply_i64(r, "the script", &q->value) : rc;
}

static cr_status
flag_read(cr_request *q, cr_status rc, cr__reply *r)
{
    bool v = false;

    if (rc == CR_OK && (rc = cr__reply_bool(r, "the script", &v)) == CR_OK)
        q->value = v;
    return rc;
}

static cr_status
permit_released_read(cr_request *q, cr_status rc, cr__reply *r)
{
    cr__sub_seen seen;
    int64_t result = 0;

    cr__aio_subs.waiters(q->async->io, ((cr__sem *)q->obj)->channel, &seen,
                         NULL);
    return cr__permit_release_reply(q->obj, q->id, rc, r, &seen, q->sent_us,
                                    true, &result);
}

static cr_status
counted_down_read(cr_request *q, cr_status rc, cr__reply *r)
{
    return cr__latch_count_down_reply(q->obj, rc, r, NULL);
}

/* Starts a one-command request once `call` is built (rc: how building
 * went), keeping `obj` for its reader. */
static cr_status
start_on(cr_async *a, void *obj, cr_status rc, cr__script_call *call,
         cr_status (*read)(cr_request *, cr_status, cr__reply *),
         cr_async_fn fn, void *userdata, cr_request **req, const char *id)
{
    cr_request *q = NULL;

    if (rc == CR_OK)
        rc = start_script(a, call, 0, read, fn, userdata, req, &q);
    cr__script_call_free(call);
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q->obj = obj;
    q->sent_us = cr__now_us();
    if (id != NULL)
        snprintf(q->id, sizeof(q->id), "%s", id);
    return CR_OK;
}

/* The guard of a one-command request on a semaphore handle. */
static cr_status
enter_on(cr_async *a, const void *obj, const cr__sem_kind *k)
{
    cr__op guard;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__sem_enter(obj, k, &guard)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    cr__object_leave(obj);
    return CR_OK;
}

cr_status
cr_async_semaphore_release(cr_async *a, cr_semaphore *sem, int64_t permits,
                           cr_async_fn fn, void *userdata, cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = enter_on(a, sem, &cr__semaphore_kind);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) == CR_OK && permits == 0)
        rc = cr__fail(CR_EINVAL, "nothing to release: 0 permits");
    if (rc == CR_OK)
        rc = cr__sem_release_call(sem, permits, false, &call);
    return start_on(a, sem, rc, &call, released_read, fn, userdata, req, NULL);
}

cr_status
cr_async_semaphore_add_permits(cr_async *a, cr_semaphore *sem, int64_t delta,
                               cr_async_fn fn, void *userdata,
                               cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = enter_on(a, sem, &cr__semaphore_kind);

    if (rc != CR_OK)
        return rc;
    rc = cr__sem_add_call(sem, false, delta, &call);
    return start_on(a, sem, rc, &call, number_read, fn, userdata, req, NULL);
}

cr_status
cr_async_semaphore_drain_permits(cr_async *a, cr_semaphore *sem,
                                 cr_async_fn fn, void *userdata,
                                 cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = enter_on(a, sem, &cr__semaphore_kind);

    if (rc != CR_OK)
        return rc;
    rc = cr__build_semaphore_drain_permits(
        &(cr__semaphore_drain_permits_args){.permits = ((cr__sem *)sem)->raw},
        &call);
    return start_on(a, sem, rc, &call, number_read, fn, userdata, req, NULL);
}

cr_status
cr_async_permit_release(cr_async *a, cr_permit_semaphore *sem, const char *id,
                        cr_async_fn fn, void *userdata, cr_request **req)
{
    cr__script_call call = {0};
    cr__permit_id raw;
    cr_status rc = enter_on(a, sem, &cr__permit_semaphore_kind);

    if (rc != CR_OK)
        return rc;
    rc = cr__permit_release_call(sem, id, 1, &raw, &call);
    return start_on(a, sem, rc, &call, permit_released_read, fn, userdata, req,
                    id);
}

cr_status
cr_async_permit_update_lease(cr_async *a, cr_permit_semaphore *sem,
                             const char *id, int64_t lease_ms, cr_async_fn fn,
                             void *userdata, cr_request **req)
{
    cr__script_call call = {0};
    cr__permit_id raw;
    cr_status rc = enter_on(a, sem, &cr__permit_semaphore_kind);

    if (rc != CR_OK)
        return rc;
    rc = cr__permit_update_call(sem, id, lease_ms, &raw, &call);
    return start_on(a, sem, rc, &call, flag_read, fn, userdata, req, NULL);
}

cr_status
cr_async_latch_count_down(cr_async *a, cr_latch *l, cr_async_fn fn,
                          void *userdata, cr_request **req)
{
    cr__op guard;
    cr__script_call call = {0};
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__latch_enter(l, &guard)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    cr__object_leave(l);
    rc = cr__latch_count_down_call(l, &call);
    return start_on(a, l, rc, &call, counted_down_read, fn, userdata, req,
                    NULL);
}

cr_status
cr_async_latch_try_set_count(cr_async *a, cr_latch *l, int64_t count,
                             int64_t ttl_ms, cr_async_fn fn, void *userdata,
                             cr_request **req)
{
    cr__op guard;
    cr__script_call call = {0};
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__latch_enter(l, &guard)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    cr__object_leave(l);
    rc = cr__latch_set_call(l, count, ttl_ms, &call);
    return start_on(a, l, rc, &call, flag_read, fn, userdata, req, NULL);
}

/* ---------------------------------------------------------- conditions */

/* A condition await runs cr_lock_condition_await's steps on the loop: the
 * join (condition_await.lua), the release of each of the owner's holds
 * with the lock kind's own unlock (the same call, unlock latch and
 * bookkeeping as cr_async_unlock), the wait state machine on the
 * condition's channel with condition_wait.lua's looks as its attempts
 * (the look's hint, a third of the waiter's lease at most, bounds the
 * sleeps, so the loop's timer renews the lease), a leave when the wait
 * ends without a signal, and then the lock's own waits (lock_attempt, as
 * cr_async_lock's) to take it again: once waiting as long as it takes,
 * then once per further hold, with the lease kind it had. A cancel during
 * the join, the release or the wait is Java's interrupted await: the
 * waiter leaves the line passing on a signal that came, takes the lock
 * again and ends with CR_ECANCELED; once the wait is over a cancel changes
 * nothing. */

static void cond_send(cr_request *q, int stage);

static const char *
cond_name(const cr_request *q)
{
    return cr_lock_condition_name(q->obj);
}

static void cond_retaken(cr_request *q);
static const wait_ops cond_lock_ops = {lock_attempt, cond_retaken};

/* Takes the lock again: the first hold waiting as long as it takes, each
 * further one with one attempt; a cancel does not end these waits. */
static void
cond_retake(cr_request *q)
{
    cr_async *a = q->async;
    cr_status rc;

    q->shielded = true;
    q->ops = &cond_lock_ops;
    q->wait_ms = q->taken == 0 ? CR_WAIT_FOREVER : 0;
    q->attempt_lease =
        q->lease_ms > 0 ? q->lease_ms : a->client->watchdog_timeout_ms;
    q->uncertain = false;
    q->cmd = (cr__cmd){0};
    if ((rc = lock_wait_begin(q, false)) != CR_OK)
        end(q, cr__condition_not_taken(q->obj, rc));
}

/* One hold was taken again (or not: the await fails, and what it took
 * again is given back). */
static void
cond_retaken(cr_request *q)
{
    cr_status rc = lock_settle(q);

    q->value = 0;
    if (rc == CR_OK) {
        if (++q->taken < q->holds)
            cond_retake(q);
        else
            end(q, q->left_rc);
        return;
    }
    q->left_rc = cr__condition_not_taken(q->obj, rc);
    if (q->taken > 0)
        cond_send(q, C_GIVE_BACK);
    else
        end(q, q->left_rc);
}

/* Leaves the line in `mode`; then the lock is taken again (retake) or the
 * await ends with left_rc. */
static void
cond_leave(cr_request *q, int mode, bool retake)
{
    q->leave_mode = mode;
    q->retake_after = retake;
    cond_send(q, C_LEAVE);
}

/* The wait for the signal is over (w.rc). */
static void
cond_wait_done(cr_request *q)
{
    cr_status rc = q->w.rc;

    q->in_wait = false;
    if (rc == CR_OK) {
        /* Signalled (or dropped from the line: a spurious wake-up). */
        q->left_rc = CR_OK;
        cond_retake(q);
    } else if (q->cancelled && (rc == CR_ECANCELED || rc == CR_BUSY)) {
        q->left_rc = cr__fail(CR_ECANCELED, "condition %s: the await was "
                              "cancelled", cond_name(q));
        cond_leave(q, CR__CONDITION_LEAVE_PASS_ON, true);
    } else if (rc == CR_BUSY) {
        q->left_rc = CR_BUSY; /* ran out: a signal that came is kept */
        cond_leave(q, CR__CONDITION_LEAVE_KEEP, true);
    } else {
        /* The lock cannot be taken again: a signal must not be lost. */
        q->left_rc = rc;
        cond_leave(q, CR__CONDITION_LEAVE_PASS_ON, false);
    }
}

static void
cond_attempt(cr_request *q)
{
    cond_send(q, C_LOOK);
}

static const wait_ops cond_ops = {cond_attempt, cond_wait_done};

/* Every hold was let go: the wait for the signal. */
static void
cond_wait(cr_request *q)
{
    cr__wait_spec spec = {
        .channel = cr__condition_channel(q->obj),
        .decode = cr__condition_decode,
        .wait_ms = q->await_ms,
        .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
    };

    q->ops = &cond_ops;
    q->in_wait = true;
    wait_start(q, &spec, NULL, NULL);
}

/* A background job: the holds an await took again before its handle was
 * freed are given back. */
typedef struct holds_back {
    cr_lock *lock;
    int64_t owner, n;
} holds_back;

static void
holds_back_run(const cr__op *op, void *arg)
{
    holds_back *g = arg;
    int64_t i;

    (void)op; /* each unlock is a call of its own */
    for (i = 0; i < g->n; i++)
        cr_lock_unlock_tid(g->lock, g->owner);
}

/* The handle is freed while condition await q is pending: what it leaves
 * behind goes to the background (its command out, if any, does its part
 * when its reply comes). */
static void
cond_abandoned(cr_request *q)
{
    if (q->shielded) {
        holds_back *g;

        if (q->taken > 0 && (g = malloc(sizeof(*g))) != NULL) {
            *g = (holds_back){q->lock, q->owner_id, q->taken};
            cr__object_background(q->lock, holds_back_run, free, g);
        }
        if (!q->busy)
            cr__script_lock_later(q->lock, q->owner, q->attempt_lease,
                                  q->wait_ms, CR__LATER_GIVE_UP);
    } else if (q->in_line && !q->busy) {
        cr__condition_leave_later(q->waiter);
        q->in_line = false;
    }
}

static void
cond_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr_request *q = ctx;
    cr__condition_waiter *w = q->waiter;
    int64_t hint = -1;
    bool signalled = false;

    q->busy = false;
    switch (q->stage) {
    case C_JOIN:
        rc = cr__condition_join_reply(w, rc, r);
        /* Sent and not answered (a broken link, the handle freed): it
         * may be in line. */
        q->in_line = rc == CR_OK || (rc != CR_ENOTOWNER && cmd->sent);
        break;
    case C_RELEASE:
    case C_GIVE_BACK:
        if (q->unlock.unlock_latch != NULL)
            rc = unlock_read(q, rc, r); /* else it could not be sent */
        else
            cr__reply_free(r);
        break;
    case C_LOOK:
        rc = cr__condition_look_reply(w, rc, r, &hint);
        if (rc == CR_OK)
            q->in_line = false; /* its signal taken, or dropped */
        break;
    default:
        signalled = cr__condition_leave_reply(w, rc, r);
        break;
    }
    if (q->ended) {
        /* The handle was freed meanwhile: a waiter still in line leaves
         * in the background. */
        if (q->in_line)
            cr__condition_leave_later(w);
        late_reply(q);
        return;
    }
    switch (q->stage) {
    case C_JOIN:
        if (rc != CR_OK) {
            if (q->in_line) /* its join may have run */
                cr__condition_leave_later(w);
            end(q, rc);
        } else {
            cond_send(q, C_RELEASE);
        }
        return;
    case C_RELEASE:
        if (rc != CR_OK) {
            q->left_rc = rc;
            cond_leave(q, CR__CONDITION_LEAVE_PASS_ON, false);
        } else if (++q->released < q->holds) {
            cond_send(q, C_RELEASE);
        } else {
            cond_wait(q);
        }
        return;
    case C_GIVE_BACK:
        if (rc == CR_OK && --q->taken > 0)
            cond_send(q, C_GIVE_BACK);
        else
            end(q, q->left_rc);
        return;
    case C_LOOK:
        q->w.rc = rc;
        q->w.hint = hint;
        drive(q);
        return;
    default:
        if (!q->retake_after) {
            end(q, q->left_rc);
            return;
        }
        if (q->left_rc == CR_BUSY)
            q->left_rc = cr__condition_ran_out(q->obj, signalled);
        cond_retake(q);
        return;
    }
}

/* Sends the command of `stage`; one that cannot be queued is its reply. */
static void
cond_send(cr_request *q, int stage)
{
    cr_async *a = q->async;
    cr__script_call call = {0};
    char *tmp = NULL;
    cr_status rc;

    q->stage = stage;
    q->busy = true;
    if (stage == C_RELEASE || stage == C_GIVE_BACK) {
        rc = unlock_prepare(a, q->lock, q->owner, &q->unlock,
                            &q->attempt_lease, &call, &tmp);
        q->sent_ms = cr__now_ms();
        if (rc == CR_OK &&
            (rc = cr__aio_script(a->io, &call, q->unlock.cmd.flags,
                                 cond_replied, q)) != CR_OK)
            unlock_abort(a, q->lock, q->owner, &q->unlock);
    } else {
        rc = stage == C_JOIN
                 ? cr__condition_join_call(q->waiter, q->owner, &call)
                 : cr__condition_wait_call(q->waiter,
                                           stage == C_LOOK
                                               ? CR__CONDITION_LOOK
                                               : q->leave_mode,
                                           &call);
        if (stage == C_LEAVE)
            q->in_line = false; /* a leave that fails: its lease lapses */
        if (rc == CR_OK)
            rc = cr__aio_script(a->io, &call, 0, cond_replied, q);
    }
    cr__script_call_free(&call);
    free(tmp);
    if (rc != CR_OK)
        cond_replied(q, rc, NULL, &(cr__cmd){0});
}

/* The guard of a request on condition c by `owner`. */
static cr_status
enter_cond(cr_async *a, cr_lock_condition *c, int64_t owner)
{
    cr__op guard;
    cr_status rc = enter(a);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__condition_enter(c, &guard)) == CR_OK) {
        cr__object_leave(c);
        if ((rc = same_client(a, c)) == CR_OK && owner <= 0)
            rc = cr__fail(CR_EINVAL, "owner id %lld is not positive",
                          (long long)owner);
    }
    if (rc != CR_OK)
        cr__client_leave(a->client);
    return rc;
}

cr_status
cr_async_condition_await(cr_async *a, cr_lock_condition *c, int64_t owner,
                         int64_t wait_ms, cr_async_fn fn, void *userdata,
                         cr_request **req)
{
    cr__condition_waiter *w = NULL;
    cr_request *q = NULL;
    cr_lock *l;
    cr_status rc = enter_cond(a, c, owner);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) == CR_OK &&
        (w = malloc(sizeof(*w))) == NULL)
        rc = CR_ENOMEM;
    if (rc == CR_OK && (q = request_new(a, Q_WAIT, fn, userdata)) == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK) {
        free(w);
        cr__client_leave(a->client);
        return rc;
    }
    l = cr__condition_lock(c);
    cr__condition_waiter_begin(w, c, owner);
    q->what = O_COND;
    q->obj = c;
    q->lock = l;
    q->owner_id = owner;
    q->waiter = w;
    q->await_ms = wait_ms;
    q->final = true; /* its statuses say what a cancel did */
    cr__condition_holder(c, owner, q->owner);
    q->holds = cr__script_lock_holds(l, q->owner, NULL);
    if (q->holds == 0) {
        end(q, cr__fail(CR_ENOTOWNER, "%s %s is not held by owner %lld",
                        l->label, l->name, (long long)owner));
        return started(a, q, req);
    }
    q->lease_ms = cr__condition_lease(c, q->owner);
    cond_send(q, C_JOIN);
    return started(a, q, req);
}

static cr_status
signalled_read(cr_request *q, cr_status rc, cr__reply *r)
{
    return cr__condition_signal_reply(q->obj, rc, r, &q->value);
}

/* Signals up to `count` waiters as `owner`. */
static cr_status
cond_signal(cr_async *a, cr_lock_condition *c, int64_t owner, int64_t count,
            cr_async_fn fn, void *userdata, cr_request **req)
{
    char holder[CR__OWNER_MAX];
    cr__script_call call = {0};
    cr_status rc = enter_cond(a, c, owner);

    if (rc != CR_OK)
        return rc;
    cr__condition_holder(c, owner, holder);
    rc = cr__condition_signal_call(c, holder, count, &call);
    return start_on(a, c, rc, &call, signalled_read, fn, userdata, req, NULL);
}

cr_status
cr_async_condition_signal(cr_async *a, cr_lock_condition *c, int64_t owner,
                          cr_async_fn fn, void *userdata, cr_request **req)
{
    return cond_signal(a, c, owner, 1, fn, userdata, req);
}

cr_status
cr_async_condition_signal_all(cr_async *a, cr_lock_condition *c,
                              int64_t owner, cr_async_fn fn, void *userdata,
                              cr_request **req)
{
    return cond_signal(a, c, owner, INT32_MAX, fn, userdata, req);
}

/* -------------------------------------------------------------- handle */

cr_status
cr_async_new(cr_client *c, const cr_loop *loop, cr_async **out)
{
    cr_async *a;
    cr__op op;
    cr_status rc;

    cr__clear_error();
    if (out == NULL || loop == NULL || loop->watch == NULL ||
        loop->timer == NULL)
        return cr__fail(CR_EINVAL, "out, loop or one of its functions is "
                        "NULL");
    if ((rc = cr__client_enter(c, &op)) != CR_OK)
        return rc;
    if ((a = calloc(1, sizeof(*a))) == NULL) {
        cr__client_leave(c);
        return CR_ENOMEM;
    }
    a->client = c;
    a->done_tail = &a->done;
    if ((rc = cr__aio_new(c, loop, &a->io)) != CR_OK) {
        free(a);
        cr__client_leave(c);
        return rc;
    }
    a->magic = CR__ASYNC_MAGIC;
    cr__client_leave(c);
    *out = a;
    return CR_OK;
}

void
cr_async_free(cr_async *a)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return;
    if (cr__aio_dispatching(a->io)) {
        a->free_later = true; /* when the dispatch returns */
        return;
    }
    a->freeing = true;
    while (a->pending != NULL) {
        cr_request *q = a->pending;

        cr_status closed = cr__fail(CR_ECLOSED, "the asynchronous handle is "
                                    "being freed");

        q->cancelled = true;
        if (q->kind == Q_WAIT) {
            /* A barrier party waiting (no command out) leaves in the
             * background, breaking the round as the blocking call does
             * when its client is freed; one with a command out, when
             * that command's reply comes (CR_ECLOSED, below). */
            if (q->what == O_BARRIER && !q->busy)
                cr__barrier_leave_later(q->party);
            else if (q->what == O_COND)
                cond_abandoned(q);
            abandon(q, closed);
        } else {
            if (q->kind == Q_THREAD && q->call != NULL) {
                /* Its slice ends; cr__aio_free runs its outcome. */
                atomic_store(&q->call->stop, true);
                pthread_join(q->call->thread, NULL);
                q->call->joined = true;
            }
            end(q, closed);
        }
    }
    cr__aio_free(a->io); /* commands out end now: their requests ended */
    run_callbacks(a, true); /* the loop's part is gone */
    a->magic = 0;
    free(a);
}

void
cr_async_io(cr_async *a, int fd, int events)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return;
    cr__aio_ready(a->io, fd, events);
    if (a->free_later)
        cr_async_free(a);
}

void
cr_async_timeout(cr_async *a)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC)
        return;
    cr__aio_timeout(a->io);
    if (a->free_later)
        cr_async_free(a);
}

int
cr_async_fds(cr_async *a, cr_async_fd *fds, int max, int64_t *timeout_ms)
{
    if (a == NULL || a->magic != CR__ASYNC_MAGIC || timeout_ms == NULL ||
        (fds == NULL && max > 0))
        return 0;
    return cr__aio_fds(a->io, fds, max, timeout_ms);
}

void
cr_async_cancel(cr_request *q)
{
    if (q == NULL || q->ended || q->cancelled)
        return;
    q->cancelled = true;
    if (q->what == O_COND) {
        /* Before its wait: the wait's first step sees the cancel; after
         * it: nothing changes (see cr_async_condition_await). */
        if (q->in_wait)
            end_wait_now(q, CR_ECANCELED);
    } else if (q->kind == Q_WAIT) {
        end_wait_now(q, CR_ECANCELED);
    } else if (q->kind == Q_THREAD && q->call != NULL) {
        atomic_store(&q->call->stop, true); /* ends at its next slice */
    }
    /* A one-command request ends when its command answers. */
}
