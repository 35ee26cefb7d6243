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

#include <stdio.h>
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

/* The reply of an acquire attempt (freed): CR_OK taken, CR_BUSY too few
 * (with the wait's *hint and *listen). */
static cr_status
acquire_reply(cr_status rc, cr__reply *r, int64_t *hint, int *listen)
{
    int64_t v = 0;

    if (rc != CR_OK)
        return rc;
    if (cr__reply_int(r, &v) && v == 1)
        rc = CR_OK;
    else if (!cr__sem_place(r, 1, -1, hint, listen))
        rc = cr__fail(CR_ESCRIPT, "semaphore acquire replied neither 1 nor "
                      "a place in line");
    else
        rc = CR_BUSY;
    cr__reply_free(r);
    return rc;
}

/* The rules of one acquisition (sem.h). */

/* The steps of the end, in order. */
enum { E_LOOK, E_STOP, E_LEAVE, E_DROP, E_DONE };

cr_status
cr__sem_acquisition_begin(cr__sem_acquisition *a, void *sem, int64_t permits,
                          int64_t owner_id, int64_t wait_ms)
{
    cr__sem *s = sem;
    cr_client *c = s->client;
    cr_status rc;

    *a = (cr__sem_acquisition){.sem = s, .permits = permits, .rc = CR_BUSY};
    if ((rc = cr__sem_waiter_begin(&a->waiter, s, owner_id, wait_ms)) !=
        CR_OK)
        return rc;
    /* The acquire latch must outlive every retry of the call: the waiting
     * loop's retries for the reconnect window, and the transport's resends
     * of the last one (the unlock latch's lifetime). */
    a->acquire_latch_ms = c->reconnect_window_ms + c->unlock_latch_timeout_ms;
    a->acquire_latch = cr__name(CR__NAME_ACQUIRE_LATCH, s->raw);
    if (a->acquire_latch == NULL) {
        cr__sem_waiter_free(&a->waiter);
        return cr__fail(CR_ENOMEM, "cannot make a request id");
    }
    return CR_OK;
}

cr_status
cr__sem_acquisition_call(const cr__sem_acquisition *a, cr__script_call *call)
{
    const cr__sem *s = a->sem;
    cr__sem_line_args ln = cr__sem_line_args_of(s);

    return cr__build_semaphore_try_acquire(&(cr__semaphore_try_acquire_args){
        .permits = s->raw, .latch = a->acquire_latch, .line = ln.line,
        .line_state = ln.line_state, .count_value = a->permits,
        .latch_ms = a->acquire_latch_ms, .entry = a->waiter.entry,
        .wait = cr__line_wait_arg(a->waiter.wait_ms, false),
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel,
        .publish = s->client->publish_cmd}, call);
}

cr_status
cr__sem_acquisition_replied(cr__sem_acquisition *a, cr_status rc,
                            cr__reply *r, const cr__cmd *cmd, int64_t *hint,
                            int *listen)
{
    /* Sent, its reply lost: it may have taken them. Every later attempt
     * of the call carries the same acquire latch, which says so. */
    if (cmd->sent && (rc == CR_EIO || rc == CR_ECLOSED))
        a->uncertain = true;
    *hint = -1;
    *listen = CR__LISTEN_NO;
    return acquire_reply(rc, r, hint, listen);
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
            /* A cancel too: what the lost attempt took is given back. */
            if ((a->rc == CR_EIO || a->rc == CR_ECANCELED) && a->uncertain)
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
        case E_LEAVE:
            /* A try without a wait never went in line. */
            if (a->rc != CR_OK && a->waiter.wait_ms != 0)
                return a->rc == CR_EIO ? CR__SEM_END_LEAVE_LATER
                                       : CR__SEM_END_LEAVE;
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
    cr__sem_waiter_free(&a->waiter);
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
 * when there are too few (*hint, *listen: its place in line). */
static cr_status
try_once(const cr__op *op, cr__sem_acquisition *a, int64_t *hint,
         int *listen)
{
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc = cr__sem_acquisition_call(a, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return cr__sem_acquisition_replied(a, rc, r, &cmd, hint, listen);
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
        case CR__SEM_END_LEAVE:
            cr__sem_leave(op, a->sem, &a->waiter);
            break;
        case CR__SEM_END_LEAVE_LATER:
            cr__sem_leave_later(a->sem, &a->waiter);
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
    cr__wait_spec spec;
    cr__wait w;
    cr__op op;
    int64_t hint = -1;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) != CR_OK ||
        (rc = cr__check_wait(wait_ms)) != CR_OK || permits == 0)
        goto out;
    wait_ms = cr__op_wait(&op, wait_ms);
    if ((rc = cr__sem_acquisition_begin(&a, s, permits, cr_thread_id(),
                                        wait_ms)) != CR_OK)
        goto out;
    cr__wait_turn(s->client->pubsub, s->channel, &s->handoff, wait_ms);
    cr__sem_wait_spec(s, &cr__semaphore_kind, &a.waiter, false, &spec);
    cr__wait_begin(&w, &op, &spec);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = try_once(&op, &a, &hint, &w.listen);
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
    cr__sem_line_args ln = cr__sem_line_args_of(s);

    return cr__build_semaphore_release(&(cr__semaphore_release_args){
        .permits = s->raw, .channel = s->channel, .line = ln.line,
        .line_state = ln.line_state, .count_value = permits,
        .publish = s->client->publish_cmd, .if_exists = only_if_exists,
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel}, call);
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
    cr__sem_line_args ln;
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    /* The handle is known good from here. */
    ln = cr__sem_line_args_of(s);
    if ((rc = cr__check_permits(permits)) != CR_OK)
        goto out;
    rc = cr__run_semaphore_set_permits(&op, &cmd,
        &(cr__semaphore_set_permits_args){.permits = s->raw,
                                          .channel = s->channel,
                                          .line = ln.line,
                                          .line_state = ln.line_state,
                                          .count_value = permits,
                                          .publish = s->client->publish_cmd,
                                          .line_lease_ms = ln.line_lease_ms,
                                          .turn_ms = ln.turn_ms,
                                          .line_channel = ln.line_channel},
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

cr_status
cr__sem_waiter_begin(cr__sem_waiter *sw, const void *obj, int64_t owner_id,
                     int64_t wait_ms)
{
    const cr__sem *s = obj;

    cr__name_owner(s->client->id, owner_id, false, sw->entry);
    sw->wait_ms = wait_ms;
    sw->channel = cr__line_channel(&s->line, sw->entry);
    return sw->channel != NULL ? CR_OK : cr__fail(CR_ENOMEM, "out of memory");
}

void
cr__sem_waiter_free(cr__sem_waiter *sw)
{
    free(sw->channel);
    sw->channel = NULL;
}

void
cr__sem_wait_spec(const void *obj, const cr__sem_kind *k,
                  const cr__sem_waiter *sw, bool async, cr__wait_spec *spec)
{
    const cr__sem *s = obj;

    *spec = (cr__wait_spec){
        .ev_object = k->label, .ev_name = s->name, .ev_async = async,
        .ev_busy = CR_BUSY, .channel = sw->channel,
        .decode = cr__line_decode, .shared = s->channel,
        .shared_decode = cr__sem_decode, .wait_ms = sw->wait_ms,
        .min_sleep_ms = 1,
        /* The first in line re-checks as before the line (an expired
         * permit of the expirable kind comes back unannounced). */
        .max_sleep_ms = cr__line_max_sleep(s->client, CR__OBJECT_RECHECK_MS),
        .listen_after_ms = CR__LINE_LISTEN_AFTER_MS,
    };
}

cr__sem_line_args
cr__sem_line_args_of(const void *obj)
{
    const cr__sem *s = obj;
    cr__line_times t = cr__line_times_of(s->client);

    return (cr__sem_line_args){.line = s->line.key,
                               .line_state = s->line.state,
                               .line_channel = s->line.prefix,
                               .line_lease_ms = t.lease_ms,
                               .turn_ms = t.turn_ms};
}

bool
cr__sem_place(const cr__reply *r, size_t at, int64_t object_hint,
              int64_t *hint, int *listen)
{
    cr__line_place place;

    if (!cr__line_place_of(r, at, &place))
        return false;
    *hint = cr__line_hint(object_hint, &place);
    *listen = place.listen;
    return true;
}

/* The leave's call. */
static cr_status
leave_call(const cr__sem *s, const cr__sem_waiter *sw, cr__script_call *call)
{
    return cr__line_leave_call(&s->line, s->client, s->raw, "sem", sw->entry,
                               call);
}

/* Logs a leave that failed. */
static void
leave_failed(const cr__sem *s, const cr__sem_waiter *sw, cr_status rc)
{
    if (rc != CR_OK)
        cr__log(&s->client->log, CR_LOG_WARN, "semaphore %s: %s could not "
                "leave the waiting line (%s: %s); its lease ends its place",
                s->name, sw->entry, cr_strerror(rc), cr_last_error());
}

void
cr__sem_leave(const cr__op *op, void *obj, const cr__sem_waiter *sw)
{
    cr__sem *s = obj;
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    char keep[512];
    cr_status rc;

    snprintf(keep, sizeof(keep), "%s", cr_last_error());
    rc = leave_call(s, sw, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    cr__reply_free(r);
    leave_failed(s, sw, rc);
    cr__fail(CR_OK, "%s", keep); /* the caller's detail stays */
}

/* A leave in the background. */
typedef struct late_leave {
    cr__sem *sem;
    cr__sem_waiter waiter;
} late_leave;

static void
late_leave_run(const cr__op *op, void *arg)
{
    late_leave *p = arg;

    cr__sem_leave(op, p->sem, &p->waiter);
}

void
cr__sem_leave_later(void *obj, const cr__sem_waiter *sw)
{
    late_leave *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return;
    p->sem = obj;
    p->waiter = *sw;
    p->waiter.channel = NULL; /* not needed, and its caller's */
    cr__object_background(obj, late_leave_run, free, p);
}

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
        cr__line_init(&s->line, s->raw) != CR_OK ||
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
    cr__line_free(&s->line);
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
    cr__sem_line_args ln;
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    bool done = false;
    cr__op op;
    cr_status rc = cr__sem_enter(s, k, &op);

    if (rc != CR_OK)
        return rc;
    /* The handle is known good from here. */
    ln = cr__sem_line_args_of(s);
    if ((rc = cr__check_permits(permits)) == CR_OK &&
        (rc = cr__check_ttl(ttl_ms)) == CR_OK)
        rc = cr__run_semaphore_try_set_permits(&op, &cmd,
            &(cr__semaphore_try_set_permits_args){
                .permits = s->raw, .channel = s->channel, .line = ln.line,
                .line_state = ln.line_state, .count_value = permits,
                .publish = s->client->publish_cmd, .ttl_ms = ttl_ms,
                .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
                .line_channel = ln.line_channel},
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
    cr__sem_line_args ln = cr__sem_line_args_of(s);
    cr_status rc = cr__check_delta(delta);

    /* RSemaphore publishes the new count, the permit-expirable semaphore
     * the change. */
    if (rc != CR_OK)
        return rc;
    return cr__build_semaphore_add_permits(&(cr__semaphore_add_permits_args){
        .permits = s->raw, .channel = s->channel, .line = ln.line,
        .line_state = ln.line_state, .delta = delta,
        .publish = s->client->publish_cmd,
        .what = expirable ? "delta" : "total",
        .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
        .line_channel = ln.line_channel}, call);
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
    rc = cr__sem_acquisition_replied(&q->acq, rc, r, cmd, &q->w.hint,
                                     &q->w.listen);
    if (q->ended) {
        /* The request ended meanwhile (its bound passed, or the handle is
         * being freed): what this attempt may have taken is looked for
         * and given back in the background. */
        if (rc == CR_OK || q->acq.uncertain)
            give_back_later(&q->acq);
        else
            cr__sem_leave_later(q->acq.sem, &q->acq.waiter);
        cr__request_late((cr_request *)q);
        return;
    }
    q->w.rc = rc;
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
        case CR__SEM_END_LEAVE:
        case CR__SEM_END_LEAVE_LATER:
            cr__sem_leave_later(a->sem, &a->waiter);
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
    acquire_request *q = (acquire_request *)req;

    free(q->acq.acquire_latch);
    cr__sem_waiter_free(&q->acq.waiter);
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
    cr__wait_spec spec;
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
    if ((rc = cr__sem_acquisition_begin(&q->acq, s, permits,
                                        cr_async_owner_id(), wait_ms)) !=
        CR_OK)
        return cr__request_discard((cr_request *)q, rc);
    if (permits == 0) {
        cr__request_end((cr_request *)q, CR_OK); /* nothing to take */
    } else {
        cr__sem_wait_spec(s, &cr__semaphore_kind, &q->acq.waiter, true,
                          &spec);
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
