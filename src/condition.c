/* SPDX-License-Identifier: MIT */
/*
 * Conditions on a lock (include/credisson/condition.h; the protocol is in
 * doc/coordination.md): for the condition C of the lock N, the hash
 * credisson_condition:{N}:C (the line's counter, and each waiter's state:
 * "w" waiting, "s" signalled), the sorted sets
 * credisson_condition_queue:{N}:C (the waiting, by arrival) and
 * credisson_condition_leases:{N}:C (every waiter's lease deadline on the
 * server's clock), and the channel credisson_condition__channel:{N}:C,
 * where "1" says that a waiter was signalled.
 *
 * An await gets in line first (condition_await.lua, which also checks on
 * the server that the thread holds the lock), then releases each of its
 * holds with the lock's own release (the lock class's slot: its script,
 * its message, its unlock latch, the holds table), then waits through the
 * shared waiting loop (wait.c): each attempt is a look
 * (condition_wait.lua) that takes a signal when there is one, renews the
 * waiter's lease, settles lapsed leases (a dead signalled waiter's signal
 * passes on) and tells when the earliest lease lapses. Any message wakes
 * every local waiter, which looks. A wait that ends without a signal
 * leaves the line; one that cannot go on passes a signal that came to the
 * next waiter. Then it takes the lock again, once waiting as long as it
 * takes and then once per further hold, with the lease kind it had.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credisson/condition.h"
#include "script_lock.h"
#include "request.h"

#define CONDITION_MAGIC 0x4352434eu /* "CRCN" */

/* condition_wait.lua's answers and modes. */
#define ANSWER_WAITING 0
#define ANSWER_SIGNALLED 1
#define ANSWER_GONE 2
#define LOOK 0
#define LEAVE_KEEP 1    /* leave; a signal that came is taken */
#define LEAVE_PASS_ON 2 /* leave; a signal that came goes on */

static void free_parts(void *obj);

struct cr_lock_condition {
    CR__OBJECT_FIELDS
    cr_lock *lock;
    char *conds;   /* credisson_condition:{N}:C */
    char *queue;   /* credisson_condition_queue:{N}:C */
    char *leases;  /* credisson_condition_leases:{N}:C */
    char *channel; /* credisson_condition__channel:{N}:C */
    char *registry; /* credisson_conditions:{N}: the lock's conditions */
};

/* One await under way: who waits, and for how long its lease stands. */
typedef struct waiter {
    cr_lock_condition *cond;
    char id[CR__OWNER_MAX]; /* <uuid>:<owner id> */
    int64_t lease_ms;
} waiter;

/* The await and signal in halves, script calls and the reading of their
 * replies, so that the blocking call and the loop's request send the
 * same: the join (condition_await.lua, which checks on the server that
 * the owner holds the lock), the look and the two leaves
 * (condition_wait.lua), and the signal (condition_signal.lua);
 * doc/coordination.md has the protocol. The release and the
 * re-acquisition between them are the lock kind's own (script_lock.h). */

/* What the condition's channel says ("1": a waiter was signalled; any
 * message wakes every local waiter, which looks). */
static cr__wake decode_message(const char *payload, size_t len);

/* wait_spec: a waiter's wait for its signal, wait_ms, on
 * the condition's channel. */
static void wait_spec(const cr_lock_condition *c, int64_t wait_ms,
                             cr__wait_spec *spec);

/* holder_of: the lock's field of owner `owner_id` (a thread's,
 * or an asynchronous owner's) in N: <uuid>:<id>, with ":write" for the
 * write lock (CR__OWNER_MAX bytes). */
static void holder_of(const cr_lock_condition *c, int64_t owner_id,
                          char *out);

/* retake_lease: the lease the lock is to be taken again with:
 * CR_LEASE_WATCHDOG when `holder`'s hold is renewed by the watchdog, else
 * the lock's last explicit lease. */
static int64_t retake_lease(const cr_lock_condition *c, const char *holder);

/* waiter_begin: the waiter of owner `owner_id`, leased for
 * the client's watchdog timeout. */
static void waiter_begin(waiter *w, cr_lock_condition *c,
                                int64_t owner_id);

/* The join (reply: CR_OK in line, CR_ENOTOWNER when the server says
 * `holder` does not hold the lock, or rc), a look or a leave in `mode`
 * (CR__CONDITION_*), the look's reply (CR_OK signalled, or dropped from
 * the line: a spurious wake-up; CR_BUSY waiting, with the time until the
 * next look is due in *hint: the earliest lease lapsing, a third of the
 * waiter's lease at most) and the leave's (true when a signal had come
 * and was kept). Replies are freed; rc is how the call went. */
static cr_status join_call(const waiter *w,
                                  const char *holder, cr__script_call *call);
static cr_status join_reply(const waiter *w,
                                   cr_status rc, cr__reply *r);
static cr_status wait_call(const waiter *w, int mode,
                                  cr__script_call *call);
static cr_status look_reply(const waiter *w,
                                   cr_status rc, cr__reply *r, int64_t *hint);
static bool leave_reply(const waiter *w, cr_status rc,
                               cr__reply *r);

/* ran_out: the status of a wait that ran out and left
 * keeping a signal that had come (`signalled`): CR_OK, else CR_TIMEOUT. */
static cr_status ran_out(const cr_lock_condition *c, bool signalled);

/* not_taken: the failure `rc` of taking the lock again
 * after the wait (the lock is not held), with its message. */
static cr_status not_taken(const cr_lock_condition *c, cr_status rc);

/* leave_later: leave the line in the background, one try,
 * passing on a signal that came (a request whose handle was freed while
 * it was in line); its lease ends it otherwise. */
static void leave_later(const waiter *w);

/* The signal of up to `count` waiters by `holder` (the lock's field of
 * the signaller), and its reply: CR_OK with the number signalled in *n,
 * CR_ENOTOWNER when `holder` does not hold the lock, CR_ESCRIPT, or rc. */
static cr_status signal_call(const cr_lock_condition *c,
                                    const char *holder, int64_t count,
                                    cr__script_call *call);
static cr_status signal_reply(const cr_lock_condition *c, cr_status rc,
                                     cr__reply *r, int64_t *n);


/* The guard of every call (*op: the call's operation; end it with
 * cr__object_leave). */
static cr_status
enter(const cr_lock_condition *c, cr__op *op)
{
    return cr__object_enter(c, CONDITION_MAGIC, "lock condition", op);
}

/* ------------------------------------------------------------- creation */

/* The name `id` of the lock `raw` followed by ":<cond>", malloc'd; NULL
 * when out of memory. */
static char *
cond_name(cr__name_id id, const char *raw, const char *cond)
{
    char *base = cr__name(id, raw);
    char *name = base != NULL ? cr__name_suffixed(base, cond) : NULL;

    free(base);
    return name;
}

cr_status
cr_lock_condition_new(cr_lock *lock, const char *name, cr_lock_condition **out)
{
    cr_lock_condition *c = NULL;
    cr__op op;
    cr_status rc = cr__check_out(out, "out");

    if (rc == CR_OK && (rc = cr__lock_enter(lock, &op)) == CR_OK) {
        if (lock->kind == NULL || lock->kind->hold_kind == CR__HOLD_READ)
            rc = cr__fail(CR_ENOTSUP, "%s %s has no conditions (only a "
                          "lock of one key held by one owner has)",
                          lock->label, lock->name);
        cr__lock_leave(lock);
    }
    if (rc == CR_OK)
        rc = cr__object_new(lock->client, name, CONDITION_MAGIC, sizeof(*c),
                            false, (void **)&c);
    if (rc != CR_OK)
        return rc;
    c->lock = lock;
    c->conds = cond_name(CR__NAME_CONDITION, lock->raw, name);
    c->queue = cond_name(CR__NAME_CONDITION_QUEUE, lock->raw, name);
    c->leases = cond_name(CR__NAME_CONDITION_LEASES, lock->raw, name);
    c->channel = cond_name(CR__NAME_CONDITION_CHANNEL, lock->raw, name);
    c->registry = cr__name(CR__NAME_CONDITIONS, lock->raw);
    if (c->conds == NULL || c->queue == NULL || c->leases == NULL ||
        c->channel == NULL || c->registry == NULL) {
        cr__object_free(c, free_parts);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *out = c;
    return CR_OK;
}

/* Frees what the handle owns beside its names. */
static void
free_parts(void *obj)
{
    cr_lock_condition *c = obj;

    free(c->conds);
    free(c->queue);
    free(c->leases);
    free(c->channel);
    free(c->registry);
}

void
cr_lock_condition_free(cr_lock_condition *c)
{
    if (c == NULL || c->magic != CONDITION_MAGIC)
        return;
    cr__object_free(c, free_parts);
}

const char *
cr_lock_condition_name(const cr_lock_condition *c)
{
    return cr__object_name(c, CONDITION_MAGIC);
}



static void
holder_of(const cr_lock_condition *c, int64_t owner_id, char *out)
{
    cr__name_owner(c->lock->client->id, owner_id, c->lock->kind->writer, out);
}

static int64_t
retake_lease(const cr_lock_condition *c, const char *holder)
{
    cr_lock *l = c->lock;

    return cr__hold_is_watchdog(c->client->renewal, l->kind->hold_kind,
                                l->raw, holder)
               ? CR_LEASE_WATCHDOG
               : atomic_load(&l->lease_ms);
}

static void
waiter_begin(waiter *w, cr_lock_condition *c,
                           int64_t owner_id)
{
    w->cond = c;
    w->lease_ms = c->client->watchdog_timeout_ms;
    cr__name_owner(c->client->id, owner_id, false, w->id);
}

/* -------------------------------------------------------------- waiting */

static void
wait_spec(const cr_lock_condition *c, int64_t wait_ms,
                        cr__wait_spec *spec)
{
    *spec = (cr__wait_spec){
        .channel = c->channel,
        .decode = decode_message,
        .wait_ms = wait_ms,
        .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
    };
}

/* Any message ("1": a waiter was signalled) wakes every local waiter,
 * which looks whether it was. */
static cr__wake
decode_message(const char *payload, size_t len)
{
    (void)payload;
    (void)len;
    return (cr__wake){.wakes = CR__WAKE_ALL, .opens = false};
}

static cr_status
wait_call(const waiter *w, int mode,
                        cr__script_call *call)
{
    const cr_lock_condition *c = w->cond;

    return cr__build_condition_wait(
        &(cr__condition_wait_args){
            .conds = c->conds, .queue = c->queue, .leases = c->leases,
            .channel = c->channel, .registry = c->registry,
            .waiter = w->id, .lease_ms = w->lease_ms, .leave = mode,
            .publish = c->client->publish_cmd, .name = c->name},
        call);
}

/* The answer and the hint of condition_wait.lua's reply. Frees r. */
static cr_status
wait_answer(const waiter *wt, cr_status rc, cr__reply *r, int64_t *answer,
            int64_t *hint)
{
    if (rc != CR_OK)
        return rc;
    if (r->type != CR__REPLY_ARRAY || r->elements != 2 ||
        !cr__reply_int(r->element[0], answer) ||
        !cr__reply_int(r->element[1], hint))
        rc = cr__fail(CR_ESCRIPT, "condition %s: the look replied no pair "
                      "of integers", wt->cond->name);
    cr__reply_free(r);
    return rc;
}

/* Runs condition_wait.lua in `mode` for the waiter within `op`: its reply
 * into *r. */
static cr_status
wait_script(const cr__op *op, waiter *wt, int mode, cr__reply **r)
{
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr_status rc = wait_call(wt, mode, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, r);
    cr__script_call_free(&call);
    return rc;
}

static cr_status
look_reply(const waiter *w, cr_status rc,
                         cr__reply *r, int64_t *hint)
{
    int64_t answer = 0, ms = -1;

    *hint = -1;
    if ((rc = wait_answer(w, rc, r, &answer, &ms)) != CR_OK)
        return rc;
    if (answer != ANSWER_WAITING)
        return CR_OK;
    *hint = ms > 0 && ms < w->lease_ms / 3 ? ms : w->lease_ms / 3;
    return CR_BUSY;
}

/* One attempt of the wait: CR_OK when signalled (or dropped from the
 * line: a spurious wake-up), CR_BUSY with the time until the next look is
 * due (the earliest lease lapsing, or this waiter's renewal). */
static cr_status
look(const cr__op *op, waiter *wt, int64_t *hint)
{
    cr__reply *r = NULL;
    cr_status rc = wait_script(op, wt, LOOK, &r);

    return look_reply(wt, rc, r, hint);
}

static bool
leave_reply(const waiter *w, cr_status rc,
                          cr__reply *r)
{
    int64_t answer = 0, ms = -1;

    return wait_answer(w, rc, r, &answer, &ms) == CR_OK &&
           answer == ANSWER_SIGNALLED;
}

/* Leaves the line (mode LEAVE_KEEP or LEAVE_PASS_ON); *signalled tells
 * whether a signal had come and was kept. A failure is left to the lease,
 * which lapses. */
static void
leave(const cr__op *op, waiter *wt, int mode, bool *signalled)
{
    cr__reply *r = NULL;
    cr__op now = *op;
    cr_status rc;

    now.slot_deadline = cr__now_ms();
    rc = wait_script(&now, wt, mode, &r);
    *signalled = leave_reply(wt, rc, r);
}

static void
leave_later_run(const cr__op *op, void *arg)
{
    bool signalled = false;

    leave(op, arg, LEAVE_PASS_ON, &signalled);
}

static void
leave_later(const waiter *w)
{
    waiter *copy = malloc(sizeof(*copy));

    if (copy == NULL)
        return; /* the lease ends it */
    *copy = *w;
    cr__object_background(w->cond, leave_later_run, free, copy);
}

static cr_status
ran_out(const cr_lock_condition *c, bool signalled)
{
    return signalled ? CR_OK
                     : cr__fail(CR_TIMEOUT, "condition %s: no signal before "
                                "the wait ran out", c->name);
}

static cr_status
not_taken(const cr_lock_condition *c, cr_status rc)
{
    char why[256];

    snprintf(why, sizeof(why), "%s", cr_last_error());
    return cr__fail(rc, "%s %s could not be taken again after the "
                    "condition's wait: %s", c->lock->label, c->lock->name,
                    why);
}

/* Takes the lock again for `tid`: once waiting as long as it takes, then
 * once per further hold; gives back what it took when one fails. */
static cr_status
retake(cr__op *op, cr_lock_condition *c, int64_t tid, int64_t holds,
       int64_t lease_ms)
{
    cr_lock *l = c->lock;
    int64_t i, wait_ms = cr__op_wait(op, CR_WAIT_FOREVER);
    cr_status rc;

    rc = l->cls->acquire(op, l, tid, wait_ms, lease_ms, NULL);
    for (i = 1; i < holds && rc == CR_OK; i++)
        rc = l->cls->acquire(op, l, tid, 0, lease_ms, NULL);
    if (rc != CR_OK) {
        rc = not_taken(c, rc);
        for (; i > 1; i--)
            l->cls->release(op, l, tid);
    }
    return rc;
}

static cr_status
join_call(const waiter *w, const char *holder,
                        cr__script_call *call)
{
    const cr_lock_condition *c = w->cond;

    return cr__build_condition_await(
        &(cr__condition_await_args){
            .lock = c->lock->raw, .conds = c->conds, .queue = c->queue,
            .leases = c->leases, .registry = c->registry, .owner = holder,
            .waiter = w->id, .lease_ms = w->lease_ms, .name = c->name},
        call);
}

static cr_status
join_reply(const waiter *w, cr_status rc,
                         cr__reply *r)
{
    const cr_lock_condition *c = w->cond;
    bool in_line = false;

    if (rc == CR_OK)
        rc = cr__reply_bool(r, "condition await", &in_line);
    if (rc == CR_OK && !in_line)
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this owner",
                      c->lock->label, c->lock->name);
    return rc;
}

/* Gets in line (condition_await.lua): CR_OK, or CR_ENOTOWNER when the
 * server says the thread does not hold the lock. */
static cr_status
join(const cr__op *op, waiter *wt, const char *holder)
{
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc = join_call(wt, holder, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return join_reply(wt, rc, r);
}

cr_status
cr_lock_condition_await(cr_lock_condition *c, int64_t wait_ms)
{
    char holder[CR__OWNER_MAX];
    int64_t tid = cr_thread_id(), holds, lease, hint = -1, i;
    bool signalled = false;
    cr__wait_spec spec;
    waiter wt;
    cr__wait w;
    cr_lock *l;
    cr__op op;
    cr_status rc = enter(c, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK)
        goto out;
    l = c->lock;
    holder_of(c, tid, holder);
    holds = cr__script_lock_holds(l, holder, NULL);
    if (holds == 0) {
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this thread",
                      l->label, l->name);
        goto out;
    }
    lease = retake_lease(c, holder);
    waiter_begin(&wt, c, tid);
    if ((rc = join(&op, &wt, holder)) != CR_OK)
        goto out;
    for (i = 0; i < holds && rc == CR_OK; i++)
        rc = l->cls->release(&op, l, tid);
    if (rc != CR_OK) {
        leave(&op, &wt, LEAVE_PASS_ON, &signalled);
        goto out;
    }
    wait_ms = cr__op_wait(&op, wait_ms);
    wait_spec(c, wait_ms, &spec);
    cr__wait_begin(&w, &op, &spec);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = look(&op, &wt, &hint);
    if (rc == CR_BUSY) {
        leave(&op, &wt, LEAVE_KEEP, &signalled);
        rc = ran_out(c, signalled);
    } else if (rc != CR_OK) {
        /* The lock cannot be taken again: a signal must not be lost. */
        leave(&op, &wt, LEAVE_PASS_ON, &signalled);
        goto out;
    }
    {
        cr_status taken = retake(&op, c, tid, holds, lease);

        if (taken != CR_OK)
            rc = taken;
    }
out:
    cr__object_leave(c);
    return rc;
}

/* ------------------------------------------------------------ signalling */

static cr_status
signal_call(const cr_lock_condition *c, const char *holder,
                          int64_t count, cr__script_call *call)
{
    return cr__build_condition_signal(
        &(cr__condition_signal_args){
            .lock = c->lock->raw, .conds = c->conds, .queue = c->queue,
            .leases = c->leases, .channel = c->channel,
            .registry = c->registry, .owner = holder, .count = count,
            .publish = c->client->publish_cmd, .name = c->name},
        call);
}

static cr_status
signal_reply(const cr_lock_condition *c, cr_status rc,
                           cr__reply *r, int64_t *n)
{
    int64_t done = 0;

    if (rc != CR_OK)
        return rc;
    if (!cr__reply_int(r, &done))
        rc = cr__fail(CR_ESCRIPT, "condition %s: signal replied no integer",
                      c->name);
    else if (done < 0)
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this owner: only "
                      "its holder signals", c->lock->label, c->lock->name);
    cr__reply_free(r);
    if (rc == CR_OK)
        *n = done;
    return rc;
}

/* Signals up to `count` waiters: *n of them were. */
static cr_status
signal_some(cr_lock_condition *c, int64_t count, int64_t *n)
{
    char holder[CR__OWNER_MAX];
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr__op op;
    cr_status rc = enter(c, &op);

    if (rc != CR_OK)
        return rc;
    holder_of(c, cr_thread_id(), holder);
    rc = signal_call(c, holder, count, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(&op, &cmd, &call, &r);
    cr__script_call_free(&call);
    rc = signal_reply(c, rc, r, n);
    cr__object_leave(c);
    return rc;
}

cr_status
cr_lock_condition_signal(cr_lock_condition *c, bool *woke)
{
    int64_t n = 0;
    cr_status rc = signal_some(c, 1, &n);

    if (rc == CR_OK && woke != NULL)
        *woke = n > 0;
    return rc;
}

cr_status
cr_lock_condition_signal_all(cr_lock_condition *c, int64_t *woke)
{
    int64_t n = 0;
    cr_status rc = signal_some(c, INT32_MAX, &n);

    if (rc == CR_OK && woke != NULL)
        *woke = n;
    return rc;
}

/* ------------------------------------------------ the asynchronous half */

/* An await runs cr_lock_condition_await's steps on the loop: the join
 * (condition_await.lua), the release of each of the owner's holds with
 * the lock kind's own unlock (the same call, unlock latch and bookkeeping
 * as cr_async_unlock), the wait state machine on the condition's channel
 * with condition_wait.lua's looks as its attempts (the look's hint, a
 * third of the waiter's lease at most, bounds the sleeps, so the loop's
 * timer renews the lease), a leave when the wait ends without a signal,
 * and then the lock's own acquisitions (script_lock.h's lock request, as
 * cr_async_lock's) to take it again: once waiting as long as it takes,
 * then once per further hold, with the lease kind it had. A cancel during
 * the join, the release or the wait is Java's interrupted await: the
 * waiter leaves the line passing on a signal that came, takes the lock
 * again and ends with CR_ECANCELED; once the wait is over a cancel changes
 * nothing. */

/* What an await's command out is. */
enum { C_JOIN = 16, C_RELEASE, C_LOOK, C_LEAVE, C_GIVE_BACK };

typedef struct await_request {
    cr__lock_request lock;    /* first: the retakes are its acquisitions */
    cr_lock_condition *cond;
    waiter waiter;
    int64_t owner_id;
    char holder[CR__OWNER_MAX];
    int64_t await_ms;         /* the wait for a signal */
    int64_t lease_ms;         /* the holds', taken again with it */
    int64_t holds;            /* the owner's holds, let go and taken again */
    int64_t released, taken;  /* how many of them so far */
    int stage;                /* C_*: its command out */
    int leave_mode;           /* CR__CONDITION_LEAVE_*: the leave out */
    bool in_line;             /* (perhaps) in the condition's line */
    bool in_wait;             /* waiting for its signal: a cancel ends it */
    bool retake_after;        /* the lock is taken again after the leave */
    cr_status left_rc;        /* the await's status once the lock is back */
    cr__release rel;          /* a release or give-back out */
    cr__unlock u;
} await_request;

static void await_send(await_request *q, int stage);

/* The await's types: waiting for its signal, and taking its lock again
 * (the lock request's attempts and end). */
static void await_attempt(cr_request *req);
static void await_wait_done(cr_request *req);
static void await_callback(cr_request *req);
static void await_cancel(cr_request *req);
static void await_abandon(cr_request *req);
static void await_release(cr_request *req);

static const cr__request_type await_type = {
    .attempt = await_attempt,
    .finish = await_wait_done,
    .callback = await_callback,
    .cancel = await_cancel,
    .abandon = await_abandon,
    .release = await_release,
};

static const cr__request_type retake_type = {
    .attempt = cr__lock_request_attempt,
    .finish = cr__lock_request_finish,
    .callback = await_callback,
    .cancel = await_cancel,
    .abandon = await_abandon,
    .release = await_release,
};

static void await_retaken(cr__lock_request *lq, cr_status rc);

/* Takes the lock again: the first hold waiting as long as it takes, each
 * further one with one attempt; a cancel does not end these waits. */
static void
await_retake(await_request *q)
{
    cr_status rc;

    q->lock.ignores_cancel = true;
    q->lock.type = &retake_type;
    q->lock.then = await_retaken;
    if ((rc = cr__lock_request_begin(&q->lock, q->cond->lock,
                                     q->owner_id,
                                     q->taken == 0 ? CR_WAIT_FOREVER : 0,
                                     q->lease_ms, false)) != CR_OK)
        cr__request_end((cr_request *)q,
                        not_taken(q->cond, rc));
}

/* One hold was taken again (or not: the await fails, and what it took
 * again is given back). */
static void
await_retaken(cr__lock_request *lq, cr_status rc)
{
    await_request *q = (await_request *)lq;

    if (rc == CR_OK) {
        if (++q->taken < q->holds)
            await_retake(q);
        else
            cr__request_end((cr_request *)q, q->left_rc);
        return;
    }
    q->left_rc = not_taken(q->cond, rc);
    if (q->taken > 0)
        await_send(q, C_GIVE_BACK);
    else
        cr__request_end((cr_request *)q, q->left_rc);
}

/* Leaves the line in `mode`; then the lock is taken again (retake) or the
 * await ends with left_rc. */
static void
await_leave(await_request *q, int mode, bool retake)
{
    q->leave_mode = mode;
    q->retake_after = retake;
    await_send(q, C_LEAVE);
}

/* The wait for the signal is over (w.rc). */
static void
await_wait_done(cr_request *req)
{
    await_request *q = (await_request *)req;
    cr_status rc = q->lock.w.rc;

    q->in_wait = false;
    if (rc == CR_OK) {
        /* Signalled (or dropped from the line: a spurious wake-up). */
        q->left_rc = CR_OK;
        await_retake(q);
    } else if (q->lock.cancelled && (rc == CR_ECANCELED || rc == CR_BUSY)) {
        q->left_rc = cr__fail(CR_ECANCELED, "condition %s: the await was "
                              "cancelled", q->cond->name);
        await_leave(q, LEAVE_PASS_ON, true);
    } else if (rc == CR_BUSY) {
        q->left_rc = CR_BUSY; /* ran out: a signal that came is kept */
        await_leave(q, LEAVE_KEEP, true);
    } else {
        /* The lock cannot be taken again: a signal must not be lost. */
        q->left_rc = rc;
        await_leave(q, LEAVE_PASS_ON, false);
    }
}

static void
await_attempt(cr_request *req)
{
    await_send((await_request *)req, C_LOOK);
}

/* A cancel: before the wait, its first step sees it; during it, it ends
 * the wait; once the wait is over (taking the lock again), nothing
 * changes. */
static void
await_cancel(cr_request *req)
{
    await_request *q = (await_request *)req;

    if (q->in_wait)
        cr__request_end_wait_now(req, CR_ECANCELED);
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

    (void)op; /* each unlock is a call of its own */
    for (int64_t i = 0; i < g->n; i++)
        cr_lock_unlock_tid(g->lock, g->owner);
}

/* The handle is freed while the await is pending: what it leaves behind
 * goes to the background (its command out, if any, does its part when
 * its reply comes). */
static void
await_abandon(cr_request *req)
{
    await_request *q = (await_request *)req;
    cr__acquisition *a = &q->lock.acq;

    if (q->lock.ignores_cancel) {
        holds_back *g;

        if (q->taken > 0 && (g = malloc(sizeof(*g))) != NULL) {
            *g = (holds_back){a->lock, q->owner_id, q->taken};
            cr__object_background(a->lock, holds_back_run, free, g);
        }
        if (!q->lock.busy)
            cr__lock_clean_up_later(a->lock, a->owner, a->attempt_lease,
                                    a->wait_ms, CR__CLEANUP_LEAVE_QUEUE);
    } else if (q->in_line && !q->lock.busy) {
        leave_later(&q->waiter);
        q->in_line = false;
    }
}

static void
await_release(cr_request *req)
{
    await_request *q = (await_request *)req;

    free(q->u.unlock_latch);
    cr__lock_request_release(req);
}

static void
await_callback(cr_request *req)
{
    await_request *q = (await_request *)req;

    if (q->lock.fn != NULL)
        q->lock.fn(req->userdata, req->rc, 0);
}

static void
await_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    await_request *q = ctx;
    cr_async *a = q->lock.async;
    waiter *w = &q->waiter;
    int64_t hint = -1;
    bool signalled = false;

    q->lock.busy = false;
    switch (q->stage) {
    case C_JOIN:
        rc = join_reply(w, rc, r);
        /* Sent and not answered (a broken link, the handle freed): it
         * may be in line. */
        q->in_line = rc == CR_OK || (rc != CR_ENOTOWNER && cmd->sent);
        break;
    case C_RELEASE:
    case C_GIVE_BACK:
        if (q->u.unlock_latch != NULL)
            rc = cr__lock_async_release_read(a, &q->rel, &q->u, rc, r);
        else
            cr__reply_free(r); /* it could not be sent: the status stands */
        break;
    case C_LOOK:
        rc = look_reply(w, rc, r, &hint);
        if (rc == CR_OK)
            q->in_line = false; /* its signal taken, or dropped */
        break;
    default:
        signalled = leave_reply(w, rc, r);
        break;
    }
    if (q->lock.ended) {
        /* The handle was freed meanwhile: a waiter still in line leaves
         * in the background. */
        if (q->in_line)
            leave_later(w);
        cr__request_late((cr_request *)q);
        return;
    }
    switch (q->stage) {
    case C_JOIN:
        if (rc != CR_OK) {
            if (q->in_line) /* its join may have run */
                leave_later(w);
            cr__request_end((cr_request *)q, rc);
        } else {
            await_send(q, C_RELEASE);
        }
        return;
    case C_RELEASE:
        if (rc != CR_OK) {
            q->left_rc = rc;
            await_leave(q, LEAVE_PASS_ON, false);
        } else if (++q->released < q->holds) {
            await_send(q, C_RELEASE);
        } else {
            cr__wait_spec spec;

            /* Every hold was let go: the wait for the signal. */
            wait_spec(q->cond, q->await_ms, &spec);
            q->in_wait = true;
            cr__request_wait((cr_request *)q, &spec, NULL, NULL, false);
        }
        return;
    case C_GIVE_BACK:
        if (rc == CR_OK && --q->taken > 0)
            await_send(q, C_GIVE_BACK);
        else
            cr__request_end((cr_request *)q, q->left_rc);
        return;
    case C_LOOK:
        q->lock.w.rc = rc;
        q->lock.w.hint = hint;
        cr__request_drive((cr_request *)q);
        return;
    default:
        if (!q->retake_after) {
            cr__request_end((cr_request *)q, q->left_rc);
            return;
        }
        if (q->left_rc == CR_BUSY)
            q->left_rc = ran_out(q->cond, signalled);
        await_retake(q);
        return;
    }
}

/* Sends the command of `stage`; one that cannot be queued is its reply. */
static void
await_send(await_request *q, int stage)
{
    cr_async *a = q->lock.async;
    cr__script_call call = {0};
    cr_status rc;

    q->stage = stage;
    q->lock.busy = true;
    if (stage == C_RELEASE || stage == C_GIVE_BACK) {
        rc = cr__lock_async_release_send(a, q->cond->lock,
                                         q->holder, &q->rel, &q->u,
                                         await_replied, q);
    } else {
        rc = stage == C_JOIN
                 ? join_call(&q->waiter, q->holder, &call)
                 : wait_call(&q->waiter,
                                           stage == C_LOOK
                                               ? LOOK
                                               : q->leave_mode,
                                           &call);
        if (stage == C_LEAVE)
            q->in_line = false; /* a leave that fails: its lease lapses */
        if (rc == CR_OK)
            rc = cr__aio_script(a->io, &call, 0, await_replied, q);
        cr__script_call_free(&call);
    }
    if (rc != CR_OK)
        await_replied(q, rc, NULL, &(cr__cmd){0});
}

/* The guard of an asynchronous call on condition c by `owner`. */
static cr_status
async_enter(cr_async *a, cr_lock_condition *c, int64_t owner)
{
    cr_status rc = cr__async_enter(a, c, CONDITION_MAGIC, "lock condition",
                                   false);

    if (rc == CR_OK && owner <= 0) {
        cr__client_leave(a->client);
        rc = cr__fail(CR_EINVAL, "owner id %lld is not positive",
                      (long long)owner);
    }
    return rc;
}

cr_status
cr_async_condition_await(cr_async *a, cr_lock_condition *c, int64_t owner,
                         int64_t wait_ms, cr_async_fn fn, void *userdata,
                         cr_request **req)
{
    await_request *q;
    cr_lock *l;
    cr_status rc = async_enter(a, c, owner);

    if (rc != CR_OK)
        return rc;
    l = c->lock;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q = (await_request *)cr__request_new(a, &await_type, sizeof(*q),
                                         userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->lock.fn = fn;
    q->lock.final = true; /* its statuses say what a cancel did */
    q->cond = c;
    q->owner_id = owner;
    q->await_ms = wait_ms;
    waiter_begin(&q->waiter, c, owner);
    holder_of(c, owner, q->holder);
    q->holds = cr__script_lock_holds(l, q->holder, NULL);
    if (q->holds == 0) {
        cr__request_end((cr_request *)q,
                        cr__fail(CR_ENOTOWNER, "%s %s is not held by owner "
                                 "%lld", l->label, l->name,
                                 (long long)owner));
        return cr__request_started(a, (cr_request *)q, req);
    }
    q->lease_ms = retake_lease(c, q->holder);
    await_send(q, C_JOIN);
    return cr__request_started(a, (cr_request *)q, req);
}

static cr_status
signalled_read(cr__command_request *q, cr_status rc, cr__reply *r)
{
    return signal_reply(q->obj, rc, r, &q->value);
}

/* Signals up to `count` waiters as `owner`. */
static cr_status
async_signal(cr_async *a, cr_lock_condition *c, int64_t owner, int64_t count,
             cr_async_fn fn, void *userdata, cr_request **req)
{
    char holder[CR__OWNER_MAX];
    cr__script_call call = {0};
    cr_status rc = async_enter(a, c, owner);

    if (rc != CR_OK)
        return rc;
    holder_of(c, owner, holder);
    rc = signal_call(c, holder, count, &call);
    return cr__command_start(a, c, rc, &call, 0, signalled_read, fn, userdata,
                             req, NULL, 0, NULL);
}

cr_status
cr_async_condition_signal(cr_async *a, cr_lock_condition *c, int64_t owner,
                          cr_async_fn fn, void *userdata, cr_request **req)
{
    return async_signal(a, c, owner, 1, fn, userdata, req);
}

cr_status
cr_async_condition_signal_all(cr_async *a, cr_lock_condition *c,
                              int64_t owner, cr_async_fn fn, void *userdata,
                              cr_request **req)
{
    return async_signal(a, c, owner, INT32_MAX, fn, userdata, req);
}
