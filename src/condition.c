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

#define CONDITION_MAGIC 0x4352434eu /* "CRCN" */

/* condition_wait.lua's answers and modes. */
#define ANSWER_WAITING 0
#define ANSWER_SIGNALLED 1
#define ANSWER_GONE 2
#define LOOK 0
#define LEAVE_KEEP 1    /* leave; a signal that came is taken */
#define LEAVE_PASS_ON 2 /* leave; a signal that came goes to the next */

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

/* One await under way: who waits, and for how long its lease stands. */
typedef struct waiter {
    cr_lock_condition *cond;
    char id[CR__OWNER_MAX]; /* <uuid>:<tid> */
    int64_t lease_ms;
} waiter;

/* The guard of every call. */
static cr_status
enter(cr_lock_condition *c)
{
    return cr__object_enter(c, CONDITION_MAGIC, "lock condition");
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
    cr_status rc = cr__check_out(out, "out");

    if (rc == CR_OK && (rc = cr__lock_enter(lock)) == CR_OK) {
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

/* The lock's field of the calling thread `tid` in N: <uuid>:<tid>, with
 * ":write" for the write lock. */
static void
holder_of(const cr_lock_condition *c, int64_t tid, char *out)
{
    cr__name_owner(c->lock->client->id, tid, c->lock->kind->writer, out);
}

/* -------------------------------------------------------------- waiting */

/* Any message ("1": a waiter was signalled) wakes every local waiter,
 * which looks whether it was. */
static cr__wake
decode(const char *payload, size_t len)
{
    (void)payload;
    (void)len;
    return (cr__wake){.wakes = CR__WAKE_ALL, .opens = false};
}

/* Runs condition_wait.lua in `mode` for the waiter: its answer into
 * *answer and the script's hint into *hint. */
static cr_status
wait_script(waiter *wt, int mode, int64_t *answer, int64_t *hint)
{
    cr_lock_condition *c = wt->cond;
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc;

    rc = cr__run_condition_wait(c->client, &cmd,
        &(cr__condition_wait_args){
            .conds = c->conds, .queue = c->queue, .leases = c->leases,
            .channel = c->channel, .registry = c->registry,
            .waiter = wt->id, .lease_ms = wt->lease_ms, .leave = mode,
            .publish = c->client->publish_cmd, .name = c->name},
        &r);
    if (rc != CR_OK)
        return rc;
    if (r->type != CR__REPLY_ARRAY || r->elements != 2 ||
        !cr__reply_int(r->element[0], answer) ||
        !cr__reply_int(r->element[1], hint))
        rc = cr__fail(CR_ESCRIPT, "condition %s: the look replied no pair "
                      "of integers", c->name);
    cr__reply_free(r);
    return rc;
}

/* One attempt of the wait: CR_OK when signalled (or dropped from the
 * line: a spurious wake-up), CR_BUSY with the time until the next look is
 * due (the earliest lease lapsing, or this waiter's renewal). */
static cr_status
look(waiter *wt, int64_t *hint)
{
    int64_t answer = 0, ms = -1;
    cr_status rc = wait_script(wt, LOOK, &answer, &ms);

    *hint = -1;
    if (rc != CR_OK)
        return rc;
    if (answer != ANSWER_WAITING)
        return CR_OK;
    *hint = ms > 0 && ms < wt->lease_ms / 3 ? ms : wt->lease_ms / 3;
    return CR_BUSY;
}

/* Leaves the line (mode LEAVE_KEEP or LEAVE_PASS_ON); *signalled tells
 * whether a signal had come and was kept. A failure is left to the lease,
 * which lapses. */
static void
leave(waiter *wt, int mode, bool *signalled)
{
    int64_t answer = 0, ms = -1, patience = cr__call_patience_set(cr__now_ms());

    *signalled = wait_script(wt, mode, &answer, &ms) == CR_OK &&
                 answer == ANSWER_SIGNALLED;
    cr__call_patience_set(patience);
}

/* Takes the lock again for `tid`: once waiting as long as it takes, then
 * once per further hold; gives back what it took when one fails. */
static cr_status
retake(cr_lock *l, int64_t tid, int64_t holds, int64_t lease_ms)
{
    cr_status rc;
    int64_t i;

    cr__call_wait(l->client, CR_WAIT_FOREVER);
    rc = l->cls->acquire(l, tid, CR_WAIT_FOREVER, lease_ms, NULL);
    for (i = 1; i < holds && rc == CR_OK; i++)
        rc = l->cls->acquire(l, tid, 0, lease_ms, NULL);
    if (rc != CR_OK) {
        char why[256];

        snprintf(why, sizeof(why), "%s", cr_last_error());
        for (; i > 1; i--)
            l->cls->release(l, tid);
        rc = cr__fail(rc, "%s %s could not be taken again after the "
                      "condition's wait: %s", l->label, l->name, why);
    }
    return rc;
}

/* Gets in line (condition_await.lua): CR_OK, or CR_ENOTOWNER when the
 * server says the thread does not hold the lock. */
static cr_status
join(waiter *wt, const char *holder)
{
    cr_lock_condition *c = wt->cond;
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    bool in_line = false;
    cr_status rc;

    rc = cr__run_condition_await(c->client, &cmd,
        &(cr__condition_await_args){
            .lock = c->lock->raw, .conds = c->conds, .queue = c->queue,
            .leases = c->leases, .registry = c->registry, .owner = holder,
            .waiter = wt->id, .lease_ms = wt->lease_ms, .name = c->name},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "condition await", &in_line);
    if (rc == CR_OK && !in_line)
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this thread",
                      c->lock->label, c->lock->name);
    return rc;
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
    cr_status rc = enter(c);

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
    lease = cr__hold_is_watchdog(c->client->renewal, l->kind->hold_kind,
                                 l->raw, holder)
                ? CR_LEASE_WATCHDOG
                : atomic_load(&l->lease_ms);
    wt.cond = c;
    wt.lease_ms = c->client->watchdog_timeout_ms;
    cr__name_owner(c->client->id, tid, false, wt.id);
    if ((rc = join(&wt, holder)) != CR_OK)
        goto out;
    for (i = 0; i < holds && rc == CR_OK; i++)
        rc = l->cls->release(l, tid);
    if (rc != CR_OK) {
        leave(&wt, LEAVE_PASS_ON, &signalled);
        goto out;
    }
    cr__object_wait_begin(&w, c, NULL, c->channel, decode, false, wait_ms);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = look(&wt, &hint);
    if (rc == CR_BUSY) {
        leave(&wt, LEAVE_KEEP, &signalled);
        rc = signalled ? CR_OK
                       : cr__fail(CR_TIMEOUT, "condition %s: no signal "
                                  "before the wait ran out", c->name);
    } else if (rc != CR_OK) {
        /* The lock cannot be taken again: a signal must not be lost. */
        leave(&wt, LEAVE_PASS_ON, &signalled);
        goto out;
    }
    {
        cr_status taken = retake(l, tid, holds, lease);

        if (taken != CR_OK)
            rc = taken;
    }
out:
    cr__object_leave(c);
    return rc;
}

/* ------------------------------------------------------------ signalling */

/* Signals up to `count` waiters: *n of them were. */
static cr_status
signal_some(cr_lock_condition *c, int64_t count, int64_t *n)
{
    char holder[CR__OWNER_MAX];
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    int64_t done = 0;
    cr_status rc = enter(c);

    if (rc != CR_OK)
        return rc;
    holder_of(c, cr_thread_id(), holder);
    rc = cr__run_condition_signal(c->client, &cmd,
        &(cr__condition_signal_args){
            .lock = c->lock->raw, .conds = c->conds, .queue = c->queue,
            .leases = c->leases, .channel = c->channel,
            .registry = c->registry, .owner = holder, .count = count,
            .publish = c->client->publish_cmd, .name = c->name},
        &r);
    if (rc == CR_OK) {
        if (!cr__reply_int(r, &done))
            rc = cr__fail(CR_ESCRIPT, "condition %s: signal replied no "
                          "integer", c->name);
        else if (done < 0)
            rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this thread: "
                          "only its holder signals", c->lock->label,
                          c->lock->name);
        cr__reply_free(r);
    }
    if (rc == CR_OK)
        *n = done;
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
