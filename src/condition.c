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

#include "conditions.h"

#define CONDITION_MAGIC 0x4352434eu /* "CRCN" */

/* condition_wait.lua's answers and modes. */
#define ANSWER_WAITING 0
#define ANSWER_SIGNALLED 1
#define ANSWER_GONE 2
#define LOOK CR__CONDITION_LOOK
#define LEAVE_KEEP CR__CONDITION_LEAVE_KEEP
#define LEAVE_PASS_ON CR__CONDITION_LEAVE_PASS_ON

static void free_own(void *obj);

struct cr_lock_condition {
    CR__OBJECT_FIELDS
    cr_lock *lock;
    char *conds;   /* credisson_condition:{N}:C */
    char *queue;   /* credisson_condition_queue:{N}:C */
    char *leases;  /* credisson_condition_leases:{N}:C */
    char *channel; /* credisson_condition__channel:{N}:C */
    char *registry; /* credisson_conditions:{N}: the lock's conditions */
};

typedef cr__condition_waiter waiter;

/* The guard of every call. */
cr_status
cr__condition_enter(const cr_lock_condition *c, cr__op *op)
{
    return cr__object_enter(c, CONDITION_MAGIC, "lock condition", op);
}

static cr_status
enter(cr_lock_condition *c, cr__op *op)
{
    return cr__condition_enter(c, op);
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
        cr__object_free(c, free_own);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *out = c;
    return CR_OK;
}

/* Frees what the handle owns beside its names. */
static void
free_own(void *obj)
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
    cr__object_free(c, free_own);
}

const char *
cr_lock_condition_name(const cr_lock_condition *c)
{
    return cr__object_name(c, CONDITION_MAGIC);
}

cr_lock *
cr__condition_lock(const cr_lock_condition *c)
{
    return c->lock;
}

const char *
cr__condition_channel(const cr_lock_condition *c)
{
    return c->channel;
}

void
cr__condition_holder(const cr_lock_condition *c, int64_t owner_id, char *out)
{
    cr__name_owner(c->lock->client->id, owner_id, c->lock->kind->writer, out);
}

int64_t
cr__condition_lease(const cr_lock_condition *c, const char *holder)
{
    cr_lock *l = c->lock;

    return cr__hold_is_watchdog(c->client->renewal, l->kind->hold_kind,
                                l->raw, holder)
               ? CR_LEASE_WATCHDOG
               : atomic_load(&l->lease_ms);
}

void
cr__condition_waiter_begin(cr__condition_waiter *w, cr_lock_condition *c,
                           int64_t owner_id)
{
    w->cond = c;
    w->lease_ms = c->client->watchdog_timeout_ms;
    cr__name_owner(c->client->id, owner_id, false, w->id);
}

/* -------------------------------------------------------------- waiting */

/* Any message ("1": a waiter was signalled) wakes every local waiter,
 * which looks whether it was. */
cr__wake
cr__condition_decode(const char *payload, size_t len)
{
    (void)payload;
    (void)len;
    return (cr__wake){.wakes = CR__WAKE_ALL, .opens = false};
}

cr_status
cr__condition_wait_call(const cr__condition_waiter *w, int mode,
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
    cr_status rc = cr__condition_wait_call(wt, mode, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, r);
    cr__script_call_free(&call);
    return rc;
}

cr_status
cr__condition_look_reply(const cr__condition_waiter *w, cr_status rc,
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

    return cr__condition_look_reply(wt, rc, r, hint);
}

bool
cr__condition_leave_reply(const cr__condition_waiter *w, cr_status rc,
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

    now.patience = cr__now_ms();
    rc = wait_script(&now, wt, mode, &r);
    *signalled = cr__condition_leave_reply(wt, rc, r);
}

static void
leave_later_run(const cr__op *op, void *arg)
{
    bool signalled = false;

    leave(op, arg, LEAVE_PASS_ON, &signalled);
}

void
cr__condition_leave_later(const cr__condition_waiter *w)
{
    waiter *copy = malloc(sizeof(*copy));

    if (copy == NULL)
        return; /* the lease ends it */
    *copy = *w;
    cr__object_background(w->cond, leave_later_run, free, copy);
}

cr_status
cr__condition_ran_out(const cr_lock_condition *c, bool signalled)
{
    return signalled ? CR_OK
                     : cr__fail(CR_TIMEOUT, "condition %s: no signal before "
                                "the wait ran out", c->name);
}

cr_status
cr__condition_not_taken(const cr_lock_condition *c, cr_status rc)
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
    cr_status rc;
    int64_t i;

    cr__op_wait(op, CR_WAIT_FOREVER);
    rc = l->cls->acquire(op, l, tid, CR_WAIT_FOREVER, lease_ms, NULL);
    for (i = 1; i < holds && rc == CR_OK; i++)
        rc = l->cls->acquire(op, l, tid, 0, lease_ms, NULL);
    if (rc != CR_OK) {
        rc = cr__condition_not_taken(c, rc);
        for (; i > 1; i--)
            l->cls->release(op, l, tid);
    }
    return rc;
}

cr_status
cr__condition_join_call(const cr__condition_waiter *w, const char *holder,
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

cr_status
cr__condition_join_reply(const cr__condition_waiter *w, cr_status rc,
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
    cr_status rc = cr__condition_join_call(wt, holder, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return cr__condition_join_reply(wt, rc, r);
}

cr_status
cr_lock_condition_await(cr_lock_condition *c, int64_t wait_ms)
{
    char holder[CR__OWNER_MAX];
    int64_t tid = cr_thread_id(), holds, lease, hint = -1, i;
    bool signalled = false;
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
    cr__condition_holder(c, tid, holder);
    holds = cr__script_lock_holds(l, holder, NULL);
    if (holds == 0) {
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this thread",
                      l->label, l->name);
        goto out;
    }
    lease = cr__condition_lease(c, holder);
    cr__condition_waiter_begin(&wt, c, tid);
    if ((rc = join(&op, &wt, holder)) != CR_OK)
        goto out;
    for (i = 0; i < holds && rc == CR_OK; i++)
        rc = l->cls->release(&op, l, tid);
    if (rc != CR_OK) {
        leave(&op, &wt, LEAVE_PASS_ON, &signalled);
        goto out;
    }
    cr__op_wait(&op, wait_ms);
    cr__object_wait_begin(&w, &op, c, NULL, c->channel, cr__condition_decode,
                          false, wait_ms);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = look(&op, &wt, &hint);
    if (rc == CR_BUSY) {
        leave(&op, &wt, LEAVE_KEEP, &signalled);
        rc = cr__condition_ran_out(c, signalled);
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

cr_status
cr__condition_signal_call(const cr_lock_condition *c, const char *holder,
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

cr_status
cr__condition_signal_reply(const cr_lock_condition *c, cr_status rc,
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
    cr__condition_holder(c, cr_thread_id(), holder);
    rc = cr__condition_signal_call(c, holder, count, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(&op, &cmd, &call, &r);
    cr__script_call_free(&call);
    rc = cr__condition_signal_reply(c, rc, r, n);
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
