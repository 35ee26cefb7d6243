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
#include "request.h"
#include "sem.h"

#define SEM_MAGIC 0x43525345u /* "CRSE" */

struct cr_semaphore {
    CR__SEM_FIELDS
};

/* RSemaphore's release and addition in halves, a script call and the
 * reading of its reply, so that the blocking and the asynchronous API send
 * the same (release_reply: *done, released; the releaser's turn starts
 * from `sent_us`, from what the releasing driver's subscription to the
 * channel has seen, `seen`; add_call: addPermits(delta), checked, of
 * either kind). */
static cr_status release_call(const void *s, int64_t permits,
                              bool only_if_exists, cr__script_call *call);
static cr_status release_reply(void *s, cr_status rc, cr__reply *r,
                               const cr__sub_seen *seen, int64_t sent_us,
                               bool *done);
static cr_status add_call(const void *s, bool expirable, int64_t delta,
                          cr__script_call *call);

/* give_back_later: find out in the background whether acquisition a's
 * acquire latch (taken over) says the permits were taken, and give them
 * back if so. */
static void give_back_later(cr__sem_acquisition *a);


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

/* The reply of an acquire attempt (freed): CR_OK taken, CR_BUSY too
 * few. */
static cr_status
acquire_reply(cr_status rc, cr__reply *r)
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

/* The rules of one acquisition (semaphores.h). */

/* The steps of the end, in order. */
enum { E_LOOK, E_STOP, E_DROP, E_DONE };

cr_status
cr__sem_acquisition_begin(cr__sem_acquisition *a, void *sem, int64_t permits)
{
    cr__sem *s = sem;
    cr_client *c = s->client;

    *a = (cr__sem_acquisition){.sem = s, .permits = permits, .rc = CR_BUSY};
    /* The acquire latch must outlive every retry of the call: the waiting
     * loop's retries for the reconnect window, and the transport's resends
     * of the last one (the unlock latch's lifetime). */
    a->acquire_latch_ms = c->reconnect_window_ms + c->unlock_latch_timeout_ms;
    a->acquire_latch = cr__name(CR__NAME_ACQUIRE_LATCH, s->raw);
    return a->acquire_latch != NULL
               ? CR_OK
               : cr__fail(CR_ENOMEM, "cannot make a request id");
}

cr_status
cr__sem_acquisition_call(const cr__sem_acquisition *a, cr__script_call *call)
{
    const cr__sem *s = a->sem;

    return cr__build_semaphore_try_acquire(&(cr__semaphore_try_acquire_args){
        .permits = s->raw, .latch = a->acquire_latch,
        .count_value = a->permits, .latch_ms = a->acquire_latch_ms}, call);
}

cr_status
cr__sem_acquisition_replied(cr__sem_acquisition *a, cr_status rc,
                            cr__reply *r, const cr__cmd *cmd)
{
    /* Sent, its reply lost: it may have taken them. Every later attempt
     * of the call carries the same acquire latch, which says so. */
    if (cmd->sent && (rc == CR_EIO || rc == CR_ECLOSED))
        a->uncertain = true;
    return acquire_reply(rc, r);
}

void
cr__sem_acquisition_end_begin(cr__sem_acquisition *a, cr_status rc)
{
    a->rc = rc;
    a->end_step = E_LOOK;
}

cr__sem_end_do
cr__sem_acquisition_end_next(cr__sem_acquisition *a, unsigned stop)
{
    for (;;) {
        switch (a->end_step++) {
        case E_LOOK:
            if (a->rc == CR_EIO && a->uncertain)
                return CR__SEM_END_LOOK;
            break;
        case E_STOP:
            if (a->rc == CR_OK && stop != 0) {
                a->rc = (stop & CR__STOP_CANCELLED)
                            ? cr__fail(CR_ECANCELED, "cancelled (the "
                                       "permits, taken meanwhile, are given "
                                       "back)")
                            : cr__fail(CR_ECLOSED, "the client is being freed "
                                       "(the permits, taken meanwhile, are "
                                       "given back)");
                return CR__SEM_END_GIVE_BACK;
            }
            break;
        case E_DROP:
            if (a->rc == CR_OK)
                return CR__SEM_END_DROP;
            break;
        default:
            a->end_step = E_DONE;
            return CR__SEM_END_DONE;
        }
    }
}

bool
cr__sem_acquisition_end_looked(cr__sem_acquisition *a, cr_status rc,
                               bool taken)
{
    if (rc != CR_OK)
        return false; /* not known: looked for in the background */
    if (taken)
        a->rc = CR_OK;
    return true;
}

cr_status
cr__sem_acquisition_done(cr__sem_acquisition *a)
{
    free(a->acquire_latch);
    a->acquire_latch = NULL;
    if (a->rc == CR_BUSY)
        return cr__fail(CR_BUSY, "semaphore %s: fewer than %lld permits "
                        "until the wait ran out", a->sem->name,
                        (long long)a->permits);
    return a->rc;
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

static void
give_back_later(cr__sem_acquisition *a)
{
    late_permits *late = calloc(1, sizeof(*late));

    if (late == NULL)
        return;
    late->sem = a->sem;
    late->acquire_latch = a->acquire_latch;
    late->permits = a->permits;
    a->acquire_latch = NULL; /* the job's now */
    cr__object_background(a->sem, late_permits_run, late_permits_done, late);
}

/* One attempt of a blocking acquisition: CR_OK when the permits were
 * taken, by this attempt or by an earlier one of the same call; CR_BUSY
 * (no hint) when there are too few. */
static cr_status
try_once(const cr__op *op, cr__sem_acquisition *a, int64_t *hint)
{
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc = cr__sem_acquisition_call(a, &call);

    *hint = -1;
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return cr__sem_acquisition_replied(a, rc, r, &cmd);
}

/* The end of a blocking acquisition: its steps inline. */
static cr_status
acquisition_end(cr__op *op, cr__sem_acquisition *a, cr_status rc)
{
    cr__op look = *op;
    bool taken = false;

    cr__sem_acquisition_end_begin(a, rc);
    for (;;) {
        switch (cr__sem_acquisition_end_next(
            a, atomic_load(&a->sem->client->closing)
                   ? CR__STOP_CLOSING : 0)) {
        case CR__SEM_END_LOOK:
            /* One look if a connection is at hand; else in the
             * background. */
            look.slot_deadline = cr__now_ms();
            rc = acquire_latch_left_behind(&look, a->acquire_latch, &taken);
            if (!cr__sem_acquisition_end_looked(a, rc, taken))
                give_back_later(a);
            break;
        case CR__SEM_END_GIVE_BACK:
            give_back_later(a);
            break;
        case CR__SEM_END_DROP:
            cr__del_noreply(op, a->acquire_latch);
            break;
        case CR__SEM_END_DONE:
            return cr__sem_acquisition_done(a);
        }
    }
}

/* Acquisition shared by acquire and try_acquire. */
static cr_status
blocking_acquire(cr_semaphore *s, int64_t permits, int64_t wait_ms)
{
    cr__sem_acquisition a;
    cr__wait w;
    cr__op op;
    int64_t hint = -1;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) != CR_OK ||
        (rc = cr__check_wait(wait_ms)) != CR_OK || permits == 0)
        goto out;
    cr__op_wait(&op, wait_ms);
    if ((rc = cr__sem_acquisition_begin(&a, s, permits)) != CR_OK)
        goto out;
    cr__wait_turn(s->client->pubsub, s->channel, &s->handoff, wait_ms);
    cr__object_wait_begin(&w, &op, s, "semaphore", s->channel,
                          cr__sem_decode, false, wait_ms);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = try_once(&op, &a, &hint);
    rc = acquisition_end(&op, &a, rc);
out:
    cr__object_leave(s);
    return rc;
}

cr_status
cr_semaphore_acquire(cr_semaphore *s, int64_t permits)
{
    return blocking_acquire(s, permits, CR_WAIT_FOREVER);
}

cr_status
cr_semaphore_try_acquire(cr_semaphore *s, int64_t permits, int64_t wait_ms)
{
    return blocking_acquire(s, permits, wait_ms);
}

/* ------------------------------------------------------------ releasing */

static cr_status
release_call(const void *obj, int64_t permits, bool only_if_exists,
                     cr__script_call *call)
{
    const cr__sem *s = obj;

    return cr__build_semaphore_release(&(cr__semaphore_release_args){
        .permits = s->raw, .channel = s->channel, .count_value = permits,
        .publish = s->client->publish_cmd, .if_exists = only_if_exists}, call);
}

static cr_status
release_reply(void *obj, cr_status rc, cr__reply *r,
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
    rc = release_call(s, permits, only_if_exists, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    cr__pubsub_waiters(s->client->pubsub, s->channel, &seen, NULL);
    return release_reply(s, rc, r, &seen, sent, done);
}

/* The public release: the guard, then release_permits. */
static cr_status
release_guarded(cr_semaphore *s, int64_t permits, bool only_if_exists, bool *done)
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
    cr_status rc = release_guarded(s, permits, false, &done);

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
    cr_status rc = release_guarded(s, permits, true, &done);

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

static cr_status
add_call(const void *obj, bool expirable, int64_t delta,
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
    rc = add_call(s, k->expirable, delta, &call);
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

/* ------------------------------------------------ the asynchronous half */

/* An acquisition on the loop: the wait state machine as a blocking call
 * runs it (request.h), the same attempts and end (cr__sem_acquisition). */
typedef struct acquire_request {
    CR__REQUEST_FIELDS
    cr_async_fn fn;
    cr__sem_acquisition acq;
} acquire_request;

static void acquire_end_step(acquire_request *q);

static void
acquire_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    acquire_request *q = ctx;

    q->busy = false;
    rc = cr__sem_acquisition_replied(&q->acq, rc, r, cmd);
    if (q->ended) {
        /* The request ended meanwhile (its bound passed, or the handle is
         * being freed): what this attempt may have taken is looked for
         * and given back in the background. */
        if (rc == CR_OK || q->acq.uncertain)
            give_back_later(&q->acq);
        cr__request_late((cr_request *)q);
        return;
    }
    q->w.rc = rc;
    q->w.hint = -1;
    cr__request_drive((cr_request *)q);
}

static void
acquire_attempt(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;
    cr__script_call call = {0};
    cr_status rc = cr__sem_acquisition_call(&q->acq, &call);

    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(q->async->io, &call, 0, acquire_replied, q);
    }
    cr__script_call_free(&call);
    cr__request_attempt_failed(req, rc);
}

static void
latch_looked(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    acquire_request *q = ctx;
    int64_t v = 0;

    (void)cmd;
    q->busy = false;
    if (rc == CR_OK)
        cr__reply_int(r, &v);
    cr__reply_free(r);
    if (q->ended) {
        give_back_later(&q->acq);
        cr__request_late((cr_request *)q);
        return;
    }
    if (!cr__sem_acquisition_end_looked(&q->acq, rc, v == 1))
        give_back_later(&q->acq);
    acquire_end_step(q);
}

/* The end's next step; once the bound has passed, the look is left to the
 * background. */
static void
acquire_end_step(acquire_request *q)
{
    cr__sem_acquisition *a = &q->acq;
    cr__aio *io = q->async->io;

    for (;;) {
        unsigned stop = (q->cancelled ? CR__STOP_CANCELLED : 0) |
                        (atomic_load(&q->async->client->closing)
                             ? CR__STOP_CLOSING : 0);

        switch (cr__sem_acquisition_end_next(a, stop)) {
        case CR__SEM_END_LOOK: {
            const char *argv[2] = {"EXISTS", a->acquire_latch};

            q->busy = true;
            if (!q->overdue &&
                cr__aio_command(io, 2, argv, NULL, latch_looked, q) == CR_OK)
                return;
            q->busy = false;
            give_back_later(a);
            break;
        }
        case CR__SEM_END_GIVE_BACK:
            give_back_later(a);
            break;
        case CR__SEM_END_DROP: {
            const char *argv[2] = {"DEL", a->acquire_latch};

            cr__aio_command(io, 2, argv, NULL, NULL, NULL);
            break;
        }
        case CR__SEM_END_DONE:
            cr__request_end((cr_request *)q, cr__sem_acquisition_done(a));
            return;
        }
    }
}

static void
acquire_finish(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    cr__sem_acquisition_end_begin(&q->acq, q->w.rc);
    acquire_end_step(q);
}

static void
acquire_callback(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    if (q->fn != NULL)
        q->fn(req->userdata, req->rc, 0);
}

/* The handle is freed while the acquisition waits (no command out): one
 * whose reply was lost is looked for in the background. */
static void
acquire_abandon(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    if (!q->busy && q->acq.uncertain)
        give_back_later(&q->acq);
}

static void
acquire_release(cr_request *req)
{
    free(((acquire_request *)req)->acq.acquire_latch);
}

static const cr__request_type acquire_type = {
    .attempt = acquire_attempt,
    .finish = acquire_finish,
    .callback = acquire_callback,
    .abandon = acquire_abandon,
    .release = acquire_release,
};

cr_status
cr_async_semaphore_acquire(cr_async *a, cr_semaphore *s, int64_t permits,
                           int64_t wait_ms, cr_async_fn fn, void *userdata,
                           cr_request **req)
{
    cr__wait_spec spec = {
        .ev_object = "semaphore", .ev_async = true, .ev_busy = CR_BUSY,
        .decode = cr__sem_decode, .wait_ms = wait_ms, .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
    };
    acquire_request *q;
    cr_status rc = cr__async_enter(a, s, SEM_MAGIC, "semaphore", false);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) != CR_OK ||
        (rc = cr__check_wait(wait_ms)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q = (acquire_request *)cr__request_new(a, &acquire_type, sizeof(*q),
                                           userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->fn = fn;
    if ((rc = cr__sem_acquisition_begin(&q->acq, s, permits)) != CR_OK)
        return cr__request_discard((cr_request *)q, rc);
    if (permits == 0) {
        cr__request_end((cr_request *)q, CR_OK); /* nothing to take */
    } else {
        spec.ev_name = s->name;
        spec.channel = s->channel;
        cr__request_wait((cr_request *)q, &spec, &s->handoff, s->channel,
                         true);
    }
    return cr__request_started(a, (cr_request *)q, req);
}

/* The reply of a release. */
static cr_status
released_read(cr__command_request *q, cr_status rc, cr__reply *r)
{
    cr__sem *s = q->obj;
    cr__sub_seen seen;
    bool done = false;

    cr__aio_subs.waiters(q->async->io, s->channel, &seen, NULL);
    rc = release_reply(s, rc, r, &seen, q->sent_us, &done);
    if (rc == CR_OK)
        cr__event(&s->client->run.stats, CR_EVENT_RELEASED, CR_OK,
                  "semaphore", s->name, -1, -1, true);
    return rc;
}

cr_status
cr_async_semaphore_release(cr_async *a, cr_semaphore *s, int64_t permits,
                           cr_async_fn fn, void *userdata, cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = cr__async_enter(a, s, SEM_MAGIC, "semaphore", false);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) == CR_OK && permits == 0)
        rc = cr__fail(CR_EINVAL, "nothing to release: 0 permits");
    if (rc == CR_OK)
        rc = release_call(s, permits, false, &call);
    return cr__command_start(a, s, rc, &call, 0, released_read, fn, userdata,
                             req, NULL, 0, NULL);
}

cr_status
cr_async_semaphore_add_permits(cr_async *a, cr_semaphore *s, int64_t delta,
                               cr_async_fn fn, void *userdata,
                               cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = cr__async_enter(a, s, SEM_MAGIC, "semaphore", false);

    if (rc != CR_OK)
        return rc;
    rc = add_call(s, false, delta, &call);
    return cr__command_start(a, s, rc, &call, 0, cr__command_read_number, fn,
                             userdata, req, NULL, 0, NULL);
}

cr_status
cr_async_semaphore_drain_permits(cr_async *a, cr_semaphore *s,
                                 cr_async_fn fn, void *userdata,
                                 cr_request **req)
{
    cr__script_call call = {0};
    cr_status rc = cr__async_enter(a, s, SEM_MAGIC, "semaphore", false);

    if (rc != CR_OK)
        return rc;
    rc = cr__build_semaphore_drain_permits(
        &(cr__semaphore_drain_permits_args){.permits = s->raw}, &call);
    return cr__command_start(a, s, rc, &call, 0, cr__command_read_number, fn,
                             userdata, req, NULL, 0, NULL);
}
