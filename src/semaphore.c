/* SPDX-License-Identifier: MIT */
/*
 * RSemaphore (protocol section 7): a count of permits in the string key N,
 * released permits published on redisson_sc:{N}.
 *
 * An acquire runs one script per attempt through the shared waiting loop
 * (wait.c), subscribed to the channel in semaphore mode (a message n wakes
 * up to n local waiters) and re-checking at least every
 * CR__OBJECT_RECHECK_MS, since the protocol gives semaphore waiters no hint
 * and a message can be missed.
 *
 * Permits are not owned, so an attempt whose reply was lost cannot be
 * resolved by asking who holds what, as the lock does. Instead, every
 * attempt of one call carries the same request id, and a successful attempt
 * leaves a short-lived key credisson_semaphore_acquire:{N}:<id> behind: the
 * next attempt, or a last look before giving up with CR_EIO, finds it and
 * reports the acquisition instead of taking the permits twice. The key is
 * deleted (without waiting for the reply) once the call has its answer.
 * Java never looks at it.
 *
 * Releases and additions are not idempotent and are never resent.
 *
 * A releaser leaves the waiters its release woke a turn (handoff.h); the
 * release script returns how many subscribers its publish reached.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "credisson/semaphore.h"
#include "handoff.h"
#include "semaphores.h"

#define SEM_MAGIC 0x43525345u /* "CRSE" */

struct cr_semaphore {
    CR__SEM_FIELDS
};

const cr__sem_kind cr__semaphore_kind = {SEM_MAGIC, "semaphore", false};

/* The guard of every semaphore call (*op: the call's operation). */
static cr_status
enter(cr_semaphore *s, cr__op *op)
{
    return cr__sem_enter(s, &cr__semaphore_kind, op);
}

/* ------------------------------------------------------------- creation */

cr_status
cr_semaphore_new(cr_client *c, const char *name, cr_semaphore **out)
{
    return cr__sem_new(c, name, &cr__semaphore_kind, sizeof(**out), (void **)out);
}

void
cr_semaphore_free(cr_semaphore *s)
{
    cr__sem_free(s, &cr__semaphore_kind);
}

const char *
cr_semaphore_name(const cr_semaphore *s)
{
    return cr__object_name(s, SEM_MAGIC);
}

/* ------------------------------------------------------------ acquiring */

typedef struct attempt_ctx {
    const cr__op *op;
    cr_semaphore *sem;
    int64_t permits;
    int64_t acquire_latch_ms;
    char *acquire_latch; /* credisson_semaphore_acquire:{N}:<request id> */
} attempt_ctx;

cr_status
cr__sem_acquire_call(const void *obj, int64_t permits,
                     const char *acquire_latch, int64_t acquire_latch_ms,
                     cr__script_call *call)
{
    const cr__sem *s = obj;

    return cr__build_semaphore_try_acquire(&(cr__semaphore_try_acquire_args){
        .permits = s->raw, .latch = acquire_latch, .count_value = permits,
        .latch_ms = acquire_latch_ms}, call);
}

cr_status
cr__sem_acquire_reply(cr_status rc, cr__reply *r)
{
    int64_t v = 0;

    if (rc != CR_OK)
        return rc;
    if (!cr__reply_int(r, &v) || (v != 0 && v != 1))
        rc = cr__fail(CR_ESCRIPT, "semaphore acquire replied neither 0 nor 1");
    else
        rc = v == 1 ? CR_OK : CR_BUSY;
    cr__reply_free(r);
    return rc;
}

/* One attempt of the wait: CR_OK when the permits were taken, by this
 * attempt or by an earlier one of the same call; CR_BUSY (no hint) when
 * there are too few. */
static cr_status
attempt(attempt_ctx *a, int64_t *hint)
{
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc = cr__sem_acquire_call(a->sem, a->permits, a->acquire_latch,
                                        a->acquire_latch_ms, &call);

    *hint = -1;
    if (rc == CR_OK)
        rc = cr__script_call_run(a->op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return cr__sem_acquire_reply(rc, r);
}

/* After a wait that ended in CR_EIO: did an attempt whose reply was lost
 * take the permits? Its acquire latch says so: CR_OK with *taken, or the
 * failure of the look. */
static cr_status
acquire_latch_left_behind(const cr__op *op, const char *acquire_latch,
                          bool *taken)
{
    const char *argv[2] = {"EXISTS", acquire_latch};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__command_retry(op, 2, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    cr__reply_int(r, &v);
    cr__reply_free(r);
    *taken = v == 1;
    return CR_OK;
}

/* Permits that may have been taken after their caller gave up. */
typedef struct late_permits {
    cr__sem *sem;
    char *acquire_latch;
    int64_t permits;
} late_permits;

/* Background: if the acquire latch says they were taken, give them back. */
static cr_status release_permits(const cr__op *op, cr_semaphore *s,
                                 int64_t permits, bool only_if_exists,
                                 bool *done);

static void
late_permits_run(const cr__op *op, void *arg)
{
    late_permits *p = arg;
    bool taken = false, done = false;

    if (acquire_latch_left_behind(op, p->acquire_latch, &taken) != CR_OK ||
        !taken)
        return;
    cr__log(&p->sem->client->log, CR_LOG_INFO, "semaphore %s: %lld "
            "permits taken after their caller gave up are given back",
            p->sem->name, (long long)p->permits);
    if (release_permits(op, (cr_semaphore *)p->sem, p->permits, false,
                        &done) == CR_OK)
        cr__del_noreply(op, p->acquire_latch);
}

static void
late_permits_done(void *arg)
{
    late_permits *p = arg;

    free(p->acquire_latch);
    free(p);
}

void
cr__sem_late(void *obj, char *acquire_latch, int64_t permits)
{
    late_permits *late = calloc(1, sizeof(*late));

    if (late == NULL) {
        free(acquire_latch);
        return;
    }
    late->sem = obj;
    late->acquire_latch = acquire_latch;
    late->permits = permits;
    cr__object_background(obj, late_permits_run, late_permits_done, late);
}

/* Acquisition shared by acquire and try_acquire. */
static cr_status
acquire(cr_semaphore *s, int64_t permits, int64_t wait_ms)
{
    cr_client *c;
    attempt_ctx a;
    cr__wait w;
    cr__op op;
    int64_t hint = -1;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    c = s->client;
    if ((rc = cr__check_permits(permits)) != CR_OK ||
        (rc = cr__check_wait(wait_ms)) != CR_OK || permits == 0)
        goto out;
    cr__op_wait(&op, wait_ms);
    memset(&a, 0, sizeof(a));
    a.op = &op;
    a.sem = s;
    a.permits = permits;
    /* The acquire latch must outlive every retry of the call: the waiting
     * loop's retries for the reconnect window, and the transport's resends
     * of the last one (the unlock latch's lifetime). */
    a.acquire_latch_ms = c->reconnect_window_ms + c->unlock_latch_timeout_ms;
    a.acquire_latch = cr__name(CR__NAME_ACQUIRE_LATCH, s->raw);
    if (a.acquire_latch == NULL) {
        rc = cr__fail(CR_ENOMEM, "cannot make a request id");
        goto out;
    }
    cr__wait_turn(c->pubsub, s->channel, &s->handoff, wait_ms);
    cr__object_wait_begin(&w, &op, s, "semaphore", s->channel,
                          cr__sem_decode, false, wait_ms);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = attempt(&a, &hint);
    if (rc == CR_EIO) {
        bool taken = false;

        /* One look if a connection is at hand; else in the background. */
        op.patience = cr__now_ms();
        if (acquire_latch_left_behind(&op, a.acquire_latch, &taken) ==
            CR_OK) {
            if (taken)
                rc = CR_OK;
        } else {
            cr__sem_late(s, a.acquire_latch, permits);
            a.acquire_latch = NULL;
        }
    }
    if (rc == CR_OK)
        cr__del_noreply(&op, a.acquire_latch);
    else if (rc == CR_BUSY)
        cr__fail(CR_BUSY, "semaphore %s: fewer than %lld permits until the "
                 "wait ran out", s->name, (long long)permits);
    free(a.acquire_latch);
out:
    cr__object_leave(s);
    return rc;
}

cr_status
cr_semaphore_acquire(cr_semaphore *s, int64_t permits)
{
    return acquire(s, permits, CR_WAIT_FOREVER);
}

cr_status
cr_semaphore_try_acquire(cr_semaphore *s, int64_t permits, int64_t wait_ms)
{
    return acquire(s, permits, wait_ms);
}

/* ------------------------------------------------------------ releasing */

cr_status
cr__sem_release_call(const void *obj, int64_t permits, bool only_if_exists,
                     cr__script_call *call)
{
    const cr__sem *s = obj;

    return cr__build_semaphore_release(&(cr__semaphore_release_args){
        .permits = s->raw, .channel = s->channel, .count_value = permits,
        .publish = s->client->publish_cmd, .if_exists = only_if_exists}, call);
}

cr_status
cr__sem_release_reply(void *obj, cr_status rc, cr__reply *r,
                      const cr__sub_seen *seen, int64_t sent_us, bool *done)
{
    cr__sem *s = obj;
    int64_t v = 0;

    if (rc == CR_OK)
        rc = cr__reply_i64(r, "semaphore release", &v);
    if (rc == CR_OK) {
        *done = v > 0;
        if (v > 1)
            cr__handoff_after_release(&s->handoff, seen, v - 1, sent_us,
                                      cr__now_us());
    }
    return rc;
}

/* Runs the release script within `op`; *done tells whether it
 * released. */
static cr_status
release_permits(const cr__op *op, cr_semaphore *s, int64_t permits,
                bool only_if_exists, bool *done)
{
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr__sub_seen seen;
    int64_t sent;
    cr_status rc = cr__check_permits(permits);

    if (rc != CR_OK)
        return rc;
    if (permits == 0) {
        *done = false;
        return CR_OK;
    }
    sent = cr__now_us();
    rc = cr__sem_release_call(s, permits, only_if_exists, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    cr__pubsub_waiters(s->client->pubsub, s->channel, &seen, NULL);
    return cr__sem_release_reply(s, rc, r, &seen, sent, done);
}

/* The public release: the guard, then release_permits. */
static cr_status
release(cr_semaphore *s, int64_t permits, bool only_if_exists, bool *done)
{
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    rc = release_permits(&op, s, permits, only_if_exists, done);
    cr__object_leave(s);
    return rc;
}

cr_status
cr_semaphore_release(cr_semaphore *s, int64_t permits)
{
    bool done = false;
    cr_status rc = release(s, permits, false, &done);

    if (rc == CR_OK)
        cr__event(&s->client->run.stats, CR_EVENT_RELEASED, CR_OK,
                  "semaphore", s->name, -1, -1, false);
    return rc;
}

cr_status
cr_semaphore_release_if_exists(cr_semaphore *s, int64_t permits,
                               bool *released)
{
    bool done = false;
    cr_status rc = release(s, permits, true, &done);

    if (rc == CR_OK && released != NULL)
        *released = done;
    return rc;
}

/* ----------------------------------------------------- setting permits */

cr_status
cr_semaphore_try_set_permits(cr_semaphore *s, int64_t permits, int64_t ttl_ms,
                             bool *set)
{
    return cr__sem_try_set_permits(s, &cr__semaphore_kind, permits, ttl_ms, set);
}

cr_status
cr_semaphore_add_permits(cr_semaphore *s, int64_t delta)
{
    return cr__sem_add_permits(s, &cr__semaphore_kind, delta);
}

cr_status
cr_semaphore_set_permits(cr_semaphore *s, int64_t permits)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) != CR_OK)
        goto out;
    rc = cr__run_semaphore_set_permits(&op, &cmd,
        &(cr__semaphore_set_permits_args){.permits = s->raw,
                                          .channel = s->channel,
                                          .count_value = permits,
                                          .publish = s->client->publish_cmd},
        &r);
    if (rc == CR_OK)
        cr__reply_free(r);
out:
    cr__object_leave(s);
    return rc;
}

cr_status
cr_semaphore_drain_permits(cr_semaphore *s, int64_t *drained)
{
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    rc = cr__run_semaphore_drain_permits(&op, &cmd,
        &(cr__semaphore_drain_permits_args){.permits = s->raw}, &r);
    if (rc == CR_OK)
        rc = cr__reply_i64(r, "drain_permits", &v);
    if (rc == CR_OK && drained != NULL)
        *drained = v;
    cr__object_leave(s);
    return rc;
}

/* -------------------------------------------------------------- queries */

cr_status
cr_semaphore_available_permits(cr_semaphore *s, int64_t *permits)
{
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(permits, "permits")) == CR_OK)
        rc = cr__object_get_count(&op, s, "semaphore", permits);
    cr__object_leave(s);
    return rc;
}

cr_status
cr_semaphore_delete(cr_semaphore *s, bool *deleted)
{
    return cr__sem_delete(s, &cr__semaphore_kind, deleted);
}

/* ------------------------------------- shared with the permit semaphore */

cr__wake
cr__sem_decode(const char *payload, size_t len)
{
    int64_t n;

    return (cr__wake){.wakes = cr__parse_i64(payload, len, &n) && n > 0 ? n
                                                                       : 0};
}

cr_status
cr__sem_new(cr_client *c, const char *name, const cr__sem_kind *k,
            size_t size, void **out)
{
    cr__sem *s = NULL;
    cr_status rc = cr__check_out(out, "out");

    if (rc == CR_OK)
        rc = cr__object_new(c, name, k->magic, size, true, (void **)&s);
    if (rc != CR_OK)
        return rc;
    cr__handoff_init(&s->handoff);
    if ((s->channel = cr__name(CR__NAME_SEMAPHORE_CHANNEL, s->raw)) == NULL ||
        (k->expirable &&
         (s->issued = cr__name(CR__NAME_PERMIT_TIMEOUTS, s->raw)) == NULL)) {
        cr__sem_free(s, k);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *out = s;
    return CR_OK;
}

/* Frees what a handle owns beside its names (cr__object_free's `own`). */
static void
sem_own(void *obj)
{
    cr__sem *s = obj;

    free(s->channel);
    free(s->issued);
}

void
cr__sem_free(void *s, const cr__sem_kind *k)
{
    if (s == NULL || ((cr__sem *)s)->magic != k->magic)
        return;
    cr__object_free(s, sem_own);
}

cr_status
cr__sem_enter(const void *s, const cr__sem_kind *k, cr__op *op)
{
    return cr__object_enter(s, k->magic, k->label, op);
}

cr_status
cr__sem_try_set_permits(void *obj, const cr__sem_kind *k, int64_t permits,
                        int64_t ttl_ms, bool *set)
{
    cr__sem *s = obj;
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    bool done = false;
    cr__op op;
    cr_status rc = cr__sem_enter(s, k, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) == CR_OK &&
        (rc = cr__check_ttl(ttl_ms)) == CR_OK)
        rc = cr__run_semaphore_try_set_permits(&op, &cmd,
            &(cr__semaphore_try_set_permits_args){
                .permits = s->raw, .channel = s->channel,
                .count_value = permits, .publish = s->client->publish_cmd,
                .ttl_ms = ttl_ms},
            &r);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "try_set_permits", &done);
    if (rc == CR_OK && set != NULL)
        *set = done;
    cr__object_leave(s);
    return rc;
}

cr_status
cr__sem_add_call(const void *obj, bool expirable, int64_t delta,
                 cr__script_call *call)
{
    const cr__sem *s = obj;
    cr_status rc = cr__check_delta(delta);

    /* RSemaphore publishes the new count, the permit-expirable semaphore
     * the change. */
    if (rc != CR_OK)
        return rc;
    return cr__build_semaphore_add_permits(&(cr__semaphore_add_permits_args){
        .permits = s->raw, .channel = s->channel, .delta = delta,
        .publish = s->client->publish_cmd,
        .what = expirable ? "delta" : "total"}, call);
}

cr_status
cr__sem_add_permits(void *obj, const cr__sem_kind *k, int64_t delta)
{
    cr__sem *s = obj;
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr__op op;
    cr_status rc = cr__sem_enter(s, k, &op);

    if (rc != CR_OK)
        return rc;
    rc = cr__sem_add_call(s, k->expirable, delta, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(&op, &cmd, &call, &r);
    cr__script_call_free(&call);
    if (rc == CR_OK)
        cr__reply_free(r);
    cr__object_leave(s);
    return rc;
}

cr_status
cr__sem_delete(void *obj, const cr__sem_kind *k, bool *deleted)
{
    cr__sem *s = obj;
    const char *argv[3] = {"DEL", NULL, NULL};
    cr__reply *r = NULL;
    int64_t n = 0;
    cr__op op;
    cr_status rc = cr__sem_enter(s, k, &op);

    if (rc != CR_OK)
        return rc;
    argv[1] = s->raw;
    argv[2] = s->issued;
    rc = cr__command_retry(&op, argv[2] != NULL ? 3 : 2, argv, NULL, &r);
    if (rc == CR_OK)
        rc = cr__reply_i64(r, "DEL", &n);
    if (rc == CR_OK && deleted != NULL)
        *deleted = n > 0;
    cr__object_leave(s);
    return rc;
}
