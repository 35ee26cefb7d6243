/* SPDX-License-Identifier: MIT */
/*
 * The script lock (script_lock.h): what every kind of one hash and one
 * script per operation shares (protocol sections 2-4).
 *
 * An acquisition runs the kind's acquire script through the waiting loop,
 * then records the hold in the client's holds table (and, without a lease,
 * with the watchdog) before returning. An unlock runs the kind's unlock
 * script with a fresh unlock latch, so its one retry after a broken link
 * cannot release twice, and uses the holds table to tell a lost lease
 * (CR_ELOST) from a hold that never was (CR_ENOTOWNER).
 *
 * An acquire whose reply was lost (the link broke after sending) may or may
 * not have run. Before trying again, the lock compares the server's hold
 * count of the owner with this client's own: one more on the server means
 * the lost attempt did acquire, so it is not run twice.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition.h"
#include "script_lock.h"
#include "topology.h"
#include "wait.h"

/* The owner name of thread `tid` (CR__OWNER_MAX bytes). */
static void
owner_of(const cr_lock *l, int64_t tid, char *out)
{
    cr__name_owner(l->client->id, tid, l->kind->writer, out);
}

/* The hold count of `owner` on the server: HGET N owner. */
static cr_status
server_hold_count(const cr__op *op, cr_lock *l, const char *owner,
                  int64_t *count)
{
    const char *argv[3] = {"HGET", l->raw, owner};
    cr__reply *r = NULL;
    cr_status rc = cr__command_retry(op, 3, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_NIL)
        *count = 0;
    else if (!cr__reply_int(r, count))
        rc = cr__fail(CR_ESCRIPT, "hold count of %s is not a number", owner);
    cr__reply_free(r);
    return rc;
}

int64_t
cr__script_lock_holds(const cr_lock *l, const char *owner, bool *lost)
{
    return cr__hold_count(l->client->renewal, l->kind->hold_kind, l->raw,
                          owner, lost);
}

/* ------------------------------------------------------------ acquiring */

/* A lock's messages (protocol section 2): "0", one hold released, lets
 * one waiter try; "1" (a write lock, or several readers, gone) lets all
 * try; both count as releases, which the releaser's turn counts. */
cr__wake
cr__lock_decode(const char *payload, size_t len)
{
    int64_t n;

    if (!cr__parse_i64(payload, len, &n) || (n != 0 && n != 1))
        return (cr__wake){0};
    return (cr__wake){.wakes = n == 0 ? 1 : CR__WAKE_ALL, .counted = true};
}

/* What an acquisition leaves to the background (cr__lock_clean_up_later). */
typedef struct give_back {
    cr_lock *lock;
    char owner[CR__OWNER_MAX];
    int64_t lease_ms, wait_ms;
    unsigned cleanup; /* CR__CLEANUP_* */
} give_back;

/* The background job of a give_back. */
static void
give_back_run(const cr__op *op, void *arg)
{
    give_back *g = arg;
    cr_lock *l = g->lock;
    int64_t server = 0;
    int ignored;

    if (g->cleanup & CR__CLEANUP_LEAVE_QUEUE)
        cr__lock_kind_give_up(op, l, g->owner, g->wait_ms);
    if ((g->cleanup & CR__CLEANUP_RESOLVE) &&
        server_hold_count(op, l, g->owner, &server) == CR_OK &&
        server > cr__script_lock_holds(l, g->owner, NULL))
        g->cleanup |= CR__CLEANUP_GIVE_BACK; /* granted after its caller gave up */
    if (g->cleanup & CR__CLEANUP_GIVE_BACK) {
        cr_status rc = cr__lock_kind_unlock(op, l, g->owner, g->lease_ms,
                                            &ignored);

        cr__log(&l->client->log, rc == CR_OK ? CR_LOG_INFO : CR_LOG_WARN,
                "%s %s: an acquisition of %s its caller was told it did not "
                "get was given back: %s", l->kind->name, l->name, g->owner,
                rc == CR_OK ? "done" : cr_last_error());
    }
    if (g->cleanup & CR__CLEANUP_VERIFY)
        cr__hold_verify(l->client->renewal, l->kind->hold_kind, l->raw,
                        g->owner);
}

/* Frees a give_back; the handle may go. */
static void
give_back_done(void *arg)
{
    free(arg);
}

void
cr__lock_clean_up_later(cr_lock *l, const char *owner, int64_t lease_ms,
                        int64_t wait_ms, unsigned cleanup)
{
    give_back *g;

    if (cleanup == CR__CLEANUP_LEAVE_QUEUE &&
        (l->kind->give_up_call == NULL || wait_ms == 0))
        return; /* nothing to leave: no queue, or never in it */
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return;
    g->lock = l;
    snprintf(g->owner, sizeof(g->owner), "%s", owner);
    g->lease_ms = lease_ms;
    g->wait_ms = wait_ms;
    g->cleanup = cleanup;
    cr__object_background(l, give_back_run, give_back_done, g);
}

cr_status
cr__lock_record(cr_lock *l, const cr__acquisition *a)
{
    cr_status rc = cr__hold_add(
        l->client->renewal, l->kind->hold_kind, l->raw, a->owner,
        l->kind->hold_kind == CR__HOLD_READ ? l->key2 : NULL, a->owner_id,
        a->lease_ms == CR_LEASE_WATCHDOG,
        cr__lease_valid_until(a->sent_ms, a->attempt_lease), l->lost_fn,
        l->lost_userdata);

    if (rc != CR_OK)
        return rc;
    if (a->lease_ms > 0)
        atomic_store(&l->lease_ms, a->lease_ms);
    cr__handoff_acquired(&l->handoff, cr__now_us());
    return CR_OK;
}

void
cr__lock_acquisition_report(const cr__op *op, const cr__acquisition *a,
                            cr_status rc, const cr__wait *w, bool async)
{
    cr_lock *l = a->lock;

    if (rc == CR_OK && w->rc != CR_OK)
        /* Found at the end (a lost reply's grant): the wait did not count
         * it. */
        CR__STAT_ADD(&l->client->run.stats, acquisitions, 1);
    if (rc == CR_OK || rc == CR_BUSY)
        cr__op_event(op, rc == CR_OK ? CR_EVENT_ACQUIRED : CR_EVENT_BUSY, rc,
                     l->kind->name, l->name, cr__now_ms() - w->start, -1,
                     async);
}

cr_status
cr__lock_wait_spec(cr_lock *l, const char *owner, int64_t wait_ms,
                   cr__wait_spec *spec, char **channel)
{
    char entry[CR__OWNER_MAX];
    bool line = l->kind->line != NULL;

    *channel = NULL;
    if (line)
        cr__line_entry(owner, entry);
    if (!l->kind->spin && (line || l->kind->own_channel) &&
        (*channel = line ? cr__line_channel(&l->line, entry)
                         : cr__name_waiter_channel(l->channel, owner)) ==
            NULL)
        return cr__fail(CR_ENOMEM, "out of memory");
    *spec = (cr__wait_spec){
        .channel = l->kind->spin ? NULL
                   : *channel != NULL ? *channel : l->channel,
        .decode = line ? cr__line_decode : cr__lock_decode,
        .shared = line ? l->channel : NULL,
        .shared_decode = cr__lock_decode,
        .wait_ms = wait_ms,
        .min_sleep_ms = l->kind->min_sleep_ms,
        .max_sleep_ms = l->kind->max_sleep_ms,
    };
    if (line) {
        spec->max_sleep_ms = cr__line_max_sleep(l->client,
                                                spec->max_sleep_ms);
        spec->listen_after_ms = CR__LINE_LISTEN_AFTER_MS;
        spec->shared_yield_ms = CR__LINE_YIELD_MS;
    }
    return CR_OK;
}

/* One attempt of a blocking acquisition, as the wait state machine takes
 * it: its status, *hint and *listen. */
static cr_status
try_once(const cr__op *op, cr__acquisition *a, int64_t *hint, int *listen)
{
    cr_lock *l = a->lock;
    cr__cmd cmd = {.flags = CR__CMD_SYNC};
    int64_t server = 0;
    cr_status rc;

    for (;;) {
        switch (cr__acquisition_next(
            a, cr__topology_settle_left(l->client->topology), hint)) {
        case CR__ACQUISITION_LOOK:
            rc = server_hold_count(op, l, a->owner, &server);
            rc = cr__acquisition_looked(a, rc, server,
                                        cr__script_lock_holds(l, a->owner,
                                                              NULL));
            if (rc != CR_BUSY)
                return rc;
            continue; /* not granted: the attempt goes now */
        case CR__ACQUISITION_REFUSE:
            return CR_BUSY;
        case CR__ACQUISITION_SEND:
            break;
        }
        break;
    }
    cr__acquisition_sent(a, cr__now_ms(),
                         cr__topology_generation(l->client->topology));
    rc = cr__lock_kind_acquire(op, l, &cmd, a->owner, a->attempt_lease,
                               a->wait_ms, hint, listen);
    return cr__acquisition_replied(a, rc, *hint, &cmd,
                                   cr__script_lock_holds(l, a->owner, NULL));
}

/* The end of a blocking acquisition whose wait ended with `rc`: its steps
 * inline (acquisition.h), what fails left to the background. */
static cr_status
acquisition_end(cr__op *op, cr__acquisition *a, cr_status rc)
{
    cr_lock *l = a->lock;
    cr__op look = *op;
    int64_t server = 0;
    unsigned cleanup;
    int ignored;

    cr__acquisition_end_begin(a, rc);
    for (;;) {
        unsigned stop = atomic_load(&l->client->closing)
                            ? CR__STOP_CLOSING : 0;

        switch (cr__acquisition_end_next(
            a, stop, cr__topology_generation(l->client->topology))) {
        case CR__ACQUISITION_END_UNDO:
            cr__acquisition_end_undone(
                a, cr__lock_kind_unlock(op, l, a->owner, a->attempt_lease,
                                        &ignored));
            break;
        case CR__ACQUISITION_END_LOOK:
            /* One look if a connection is at hand. */
            look.slot_deadline = cr__now_ms();
            rc = server_hold_count(&look, l, a->owner, &server);
            cr__acquisition_end_looked(
                a, rc, server, cr__script_lock_holds(l, a->owner, NULL));
            break;
        case CR__ACQUISITION_END_RECORD:
            cr__acquisition_end_recorded(a, cr__lock_record(l, a));
            break;
        case CR__ACQUISITION_END_VERIFY:
            /* The master moved since: is the hold on the new one? */
            cr__hold_verify(l->client->renewal, l->kind->hold_kind, l->raw,
                            a->owner);
            break;
        case CR__ACQUISITION_END_GIVE_UP:
            cr__acquisition_end_given_up(
                a, cr__lock_kind_give_up(op, l, a->owner, a->wait_ms));
            break;
        case CR__ACQUISITION_END_DONE:
            rc = cr__acquisition_done(a, &cleanup);
            if (cleanup != 0)
                cr__lock_clean_up_later(l, a->owner, a->attempt_lease,
                                        a->wait_ms, cleanup);
            return rc;
        }
    }
}

/* The class's acquire: see the file comment. */
static cr_status
script_acquire(cr__op *op, cr_lock *l, int64_t tid, int64_t wait_ms,
               int64_t lease_ms, int64_t *token)
{
    cr__acquisition a;
    cr__wait_spec spec;
    cr__wait w;
    char *channel;
    int64_t turn_start = cr__now_ms(), hint = -1;
    bool tune;
    cr_status rc;

    tune = cr__wait_turn(l->client->pubsub, l->channel, &l->handoff, wait_ms);
    cr__acquisition_begin(&a, l, tid, lease_ms, wait_ms);
    /* The turn let to others came out of the wait budget (at least one
     * attempt is still made). */
    if (wait_ms > 0)
        wait_ms = wait_ms > cr__now_ms() - turn_start
                      ? wait_ms - (cr__now_ms() - turn_start)
                      : 0;
    if ((rc = cr__lock_wait_spec(l, a.owner, wait_ms, &spec, &channel)) !=
        CR_OK)
        return rc;
    cr__wait_begin(&w, op, &spec);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = try_once(op, &a, &hint, &w.listen);
    free(channel);
    if (tune && a.attempts > 0)
        cr__handoff_tune(&l->handoff, rc == CR_OK && a.attempts == 1);
    rc = acquisition_end(op, &a, rc);
    cr__lock_acquisition_report(op, &a, rc, &w, false);
    if (rc == CR_OK && token != NULL)
        *token = a.token;
    return rc;
}

cr_status
cr__lock_acquire_reply(cr_lock *l, const char *owner, int64_t wait_ms,
                       cr_status rc, cr__reply *r, int64_t *hint,
                       int *listen)
{
    cr__line_place place;

    (void)wait_ms;
    if (rc == CR_ESERVER && strstr(cr_last_error(), "NON_REENTRANT_REACQUIRE"))
        return cr__fail(CR_EREENTRANT, "%s is already held by %s", l->name,
                        owner);
    if (rc != CR_OK)
        return rc;
    *listen = CR__LISTEN_NO;
    if (r->type == CR__REPLY_NIL) {
        rc = CR_OK;
    } else if (r->type == CR__REPLY_ARRAY && r->elements == 3 &&
               cr__reply_int(r->element[0], hint) &&
               cr__line_place_of(r, 1, &place)) {
        *hint = cr__line_hint(*hint, &place);
        *listen = place.listen;
        rc = CR_BUSY;
    } else if (cr__reply_int(r, hint))
        rc = CR_BUSY;
    else
        rc = cr__fail(CR_ESCRIPT, "%s acquire replied neither nil nor a ttl",
                      l->kind->name);
    cr__reply_free(r);
    return rc;
}

/* ------------------------------------------------------------ releasing */

cr__lock_line_args
cr__lock_line_args_of(const cr_lock *l)
{
    cr__line_times t = cr__line_times_of(l->client);

    return (cr__lock_line_args){.line = l->line.key,
                                .line_state = l->line.state,
                                .line_channel = l->line.prefix,
                                .line_lease_ms = t.lease_ms,
                                .turn_ms = t.turn_ms};
}

cr_status
cr__lock_line_leave_call(cr_lock *l, const char *owner, int64_t wait_ms,
                         cr__script_call *call)
{
    (void)wait_ms;
    return cr__line_leave_call(&l->line, l->client, l->raw, l->kind->line,
                               owner, call);
}

cr_status
cr__lock_kind_acquire(const cr__op *op, cr_lock *l, cr__cmd *cmd,
                      const char *owner, int64_t lease_ms, int64_t wait_ms,
                      int64_t *hint, int *listen)
{
    cr__script_call call = {0};
    cr__reply *r = NULL;
    char *tmp = NULL;
    cr_status rc = l->kind->acquire_call(l, owner, lease_ms, wait_ms, &call,
                                         &tmp);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, cmd, &call, &r);
    cr__script_call_free(&call);
    free(tmp);
    return l->kind->acquire_reply(l, owner, wait_ms, rc, r, hint, listen);
}

cr_status
cr__lock_give_up_reply(cr_lock *l, const char *owner, cr_status rc,
                       cr__reply *r)
{
    char keep[512];

    if (rc == CR_OK) {
        cr__reply_free(r);
        return CR_OK;
    }
    snprintf(keep, sizeof(keep), "%s", cr_last_error());
    cr__log(&l->client->log, CR_LOG_WARN, "%s %s: %s could not leave the "
            "wait queue yet (%s: %s)", l->kind->name, l->name, owner,
            cr_strerror(rc), keep);
    cr__fail(CR_OK, "%s", keep);
    return rc;
}

cr_status
cr__lock_kind_give_up(const cr__op *op, cr_lock *l, const char *owner,
                      int64_t wait_ms)
{
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    char keep[512];
    cr_status rc;

    if (l->kind->give_up_call == NULL || wait_ms == 0)
        return CR_OK;
    snprintf(keep, sizeof(keep), "%s", cr_last_error());
    rc = l->kind->give_up_call(l, owner, wait_ms, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    rc = cr__lock_give_up_reply(l, owner, rc, r);
    if (rc == CR_OK)
        cr__fail(CR_OK, "%s", keep); /* the caller's detail stays */
    return rc;
}

cr_status
cr__lock_kind_unlock(const cr__op *op, cr_lock *l, const char *owner,
                     int64_t lease_ms, int *result)
{
    cr__script_call call = {0};
    cr__unlock u;
    cr__reply *r = NULL;
    cr__sub_seen seen;
    char *tmp = NULL;
    cr_status rc = cr__unlock_call(l, owner, lease_ms, &u, &call, &tmp);

    if (rc != CR_OK)
        return rc;
    rc = cr__script_call_run(op, &u.cmd, &call, &r);
    cr__script_call_free(&call);
    free(tmp);
    if (rc == CR_OK)
        cr__del_noreply(op, u.unlock_latch);
    cr__pubsub_waiters(l->client->pubsub, l->channel, &seen, NULL);
    return cr__unlock_end(l, &u, rc, r, &seen, result);
}

cr_status
cr__unlock_call(cr_lock *l, const char *owner, int64_t lease_ms,
                cr__unlock *u, cr__script_call *call, char **tmp)
{
    cr_status rc;

    u->cmd = (cr__cmd){.flags = CR__CMD_RETRY | CR__CMD_SYNC};
    u->unlock_latch_ms = l->client->unlock_latch_timeout_ms;
    u->started_us = cr__now_us();
    u->unlock_latch = cr__name(CR__NAME_UNLOCK_LATCH, l->raw);
    if (u->unlock_latch == NULL)
        return cr__fail(CR_ENOMEM, "out of memory");
    if ((rc = l->kind->unlock_call(l, owner, lease_ms, u, call, tmp)) !=
        CR_OK) {
        free(u->unlock_latch);
        u->unlock_latch = NULL;
    }
    return rc;
}

cr_status
cr__unlock_reply(cr_lock *l, cr__reply *r, int *result, int64_t *reached)
{
    int64_t v = 0;
    cr_status rc;

    *reached = 0;
    if (r->type == CR__REPLY_NIL) {
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this owner",
                      l->kind->name, l->name);
    } else if (cr__reply_int(r, &v) && v <= 1 && v > -1000000000) {
        *result = v != 0;
        *reached = v < 0 ? -v : 0;
        rc = CR_OK;
    } else if (cr__reply_int(r, &v) && v == 2) {
        rc = cr__fail(CR_ENOTOWNER, "%s %s was not held by anyone (the head "
                      "waiter was woken)", l->kind->name, l->name);
    } else {
        rc = cr__fail(CR_ESCRIPT, "unlock replied neither nil, 0 nor 1");
    }
    cr__reply_free(r);
    return rc;
}

cr_status
cr__unlock_end(cr_lock *l, cr__unlock *u, cr_status rc, cr__reply *r,
               const cr__sub_seen *seen, int *result)
{
    int64_t reached = 0;

    if (rc == CR_OK)
        rc = cr__unlock_reply(l, r, result, &reached);
    free(u->unlock_latch);
    u->unlock_latch = NULL;
    if (rc == CR_OK)
        cr__handoff_after_unlock(&l->handoff, seen, reached, u->started_us,
                                 cr__now_us(), l->kind->line != NULL);
    return rc;
}

void
cr__release_begin(cr__release *rel, cr_lock *l, const char *owner)
{
    rel->lock = l;
    snprintf(rel->owner, sizeof(rel->owner), "%s", owner);
    rel->lost = false;
    rel->local = cr__script_lock_holds(l, owner, &rel->lost);
    cr__hold_releasing(l->client->renewal, l->kind->hold_kind, l->raw, owner);
    rel->lease_ms = atomic_load(&l->lease_ms);
    rel->sent_ms = cr__now_ms();
}

cr_status
cr__release_end(const cr__op *op, const cr__release *rel, cr_status rc,
                int result, bool async)
{
    cr_lock *l = rel->lock;
    cr__renewal *r = l->client->renewal;
    cr__hold_kind kind = l->kind->hold_kind;

    if (rc == CR_OK) {
        int64_t held = cr__hold_release(r, kind, l->raw, rel->owner,
                                        result == 1,
                                        cr__lease_valid_until(rel->sent_ms,
                                                              rel->lease_ms));

        if (result == 1)
            cr__op_event(op, CR_EVENT_RELEASED, CR_OK, l->kind->name,
                         l->name, -1, held, async);
    } else if (rc == CR_ENOTOWNER && rel->local > 0) {
        /* Found lost by the unlock itself: reported as any lost hold, its
         * callback first. */
        cr__hold_found_lost(r, kind, l->raw, rel->owner,
                            "the unlock found it gone");
        cr__hold_release(r, kind, l->raw, rel->owner, true, -1);
        rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had expired or was "
                      "removed before this unlock", l->kind->name, l->name,
                      rel->owner);
    } else {
        /* As Redisson: a failed unlock still takes one renewal count, so a
         * lock whose unlock cannot reach Redis expires instead of being
         * renewed forever. */
        cr__hold_release(r, kind, l->raw, rel->owner, false, -1);
        if (rel->lost && rel->local > 0) {
            char why[256];

            /* What the holder must hear first: it had lost the lock. */
            snprintf(why, sizeof(why), "%s", cr_last_error());
            rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had been lost, and "
                          "the unlock failed too: %s", l->kind->name, l->name,
                          rel->owner, why);
        }
    }
    if (rc != CR_OK || result == 1)
        atomic_store(&l->lease_ms, l->client->watchdog_timeout_ms);
    return rc;
}

/* The class's release: see the file comment. */
static cr_status
script_release(cr__op *op, cr_lock *l, int64_t tid)
{
    char owner[CR__OWNER_MAX];
    cr__release rel;
    int result = 0;
    cr_status rc;

    owner_of(l, tid, owner);
    cr__release_begin(&rel, l, owner);
    rc = cr__lock_kind_unlock(op, l, owner, rel.lease_ms, &result);
    return cr__release_end(op, &rel, rc, result, false);
}

/* After a force_unlock or delete that ran: nothing of it is held. */
static cr_status
removed(cr_lock *l, cr_status rc)
{
    if (rc == CR_OK) {
        cr__hold_drop_key(l->client->renewal, l->kind->hold_kind, l->raw);
        atomic_store(&l->lease_ms, l->client->watchdog_timeout_ms);
    }
    return rc;
}

static cr_status
script_force_unlock(cr__op *op, cr_lock *l, bool *done)
{
    return removed(l, l->kind->force_unlock(op, l, done));
}

static cr_status
script_delete(cr__op *op, cr_lock *l, bool *done)
{
    return removed(l, l->kind->delete_(op, l, done));
}

cr_status
cr__lock_del(const cr__op *op, cr_lock *l, bool *done)
{
    const char *argv[4] = {"DEL", l->raw, l->key2, l->key3};
    int argc = l->key3 != NULL ? 4 : l->key2 != NULL ? 3 : 2;
    cr__reply *r = NULL;
    int64_t n = 0;
    cr_status rc = cr__command_retry(op, argc, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    rc = cr__reply_i64(r, "DEL", &n);
    *done = n > 0;
    return rc;
}

/* -------------------------------------------------------------- queries */

static cr_status
script_is_locked(cr__op *op, cr_lock *l, bool *locked)
{
    return l->kind->is_locked(op, l, locked);
}

static cr_status
script_hold_count(cr__op *op, cr_lock *l, int64_t tid, int64_t *count)
{
    char owner[CR__OWNER_MAX];

    owner_of(l, tid, owner);
    return server_hold_count(op, l, owner, count);
}

static cr_status
script_remain_ttl(cr__op *op, cr_lock *l, int64_t *ttl_ms)
{
    const char *argv[2] = {"PTTL", l->raw};
    cr__reply *r = NULL;
    cr_status rc = cr__command_retry(op, 2, argv, NULL, &r);

    if (rc == CR_OK)
        rc = cr__reply_i64(r, "PTTL", ttl_ms);
    return rc;
}

static cr_status
script_is_lost(cr_lock *l, int64_t tid, bool *lost)
{
    char owner[CR__OWNER_MAX];

    owner_of(l, tid, owner);
    *lost = false;
    cr__script_lock_holds(l, owner, lost);
    return CR_OK;
}

static cr_status
script_lease_left(cr_lock *l, int64_t tid, int64_t *left_ms)
{
    char owner[CR__OWNER_MAX];
    int64_t left;

    owner_of(l, tid, owner);
    left = cr__hold_left(l->client->renewal, l->kind->hold_kind, l->raw, owner);
    if (left < 0)
        return cr__fail(CR_ENOTOWNER, "%s %s is not held by %s through this "
                        "client", l->kind->name, l->name, owner);
    *left_ms = left;
    return CR_OK;
}

/* ---------------------------------------------------------------- class */

static void
script_free_own(cr_lock *l)
{
    free(l->channel);
    free(l->key2);
    free(l->key3);
    cr__line_free(&l->line);
}

static const cr__lock_class script_class = {
    .acquire = script_acquire,
    .release = script_release,
    .force_unlock = script_force_unlock,
    .delete_ = script_delete,
    .is_locked = script_is_locked,
    .hold_count = script_hold_count,
    .remain_ttl = script_remain_ttl,
    .is_lost = script_is_lost,
    .lease_left = script_lease_left,
    .free_own = script_free_own,
};

cr_status
cr__script_lock_new(cr_client *c, const char *name, const cr__lock_kind *kind,
                    const char *channel, cr_lock **out)
{
    cr_lock *l = NULL;
    cr_status rc = cr__lock_create(c, name, &script_class, kind->name, true,
                                   out != NULL ? &l : NULL);

    if (rc != CR_OK)
        return rc;
    l->kind = kind;
    l->channel = channel != NULL ? strdup(channel)
                                 : cr__name(CR__NAME_LOCK_CHANNEL, l->raw);
    if (l->channel == NULL || cr__line_init(&l->line, l->raw) != CR_OK) {
        cr__lock_destroy(l);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *out = l;
    return CR_OK;
}

/* ------------------------------------------------ the asynchronous half */

/* A lock acquisition runs the wait state machine on the loop as a
 * blocking call does (request.h), its attempts and its end the same rules
 * (acquisition.h): each command a step of the request, its reply the next
 * step's input. */

static void lock_end_step(cr__lock_request *q);

/* The answer to the look for a lost reply's grant before an attempt. */
static void
looked_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr__lock_request *q = ctx;
    cr__acquisition *a = &q->acq;
    int64_t server = 0;

    (void)cmd;
    q->busy = false;
    if (rc == CR_OK && r->type != CR__REPLY_NIL && !cr__reply_int(r, &server))
        rc = cr__fail(CR_ESCRIPT, "hold count of %s is not a number",
                      a->owner);
    cr__reply_free(r);
    if (q->ended) {
        /* Its bound passed after a lost reply: resolved in the
         * background. */
        cr__lock_clean_up_later(a->lock, a->owner, a->attempt_lease,
                                a->wait_ms,
                                CR__CLEANUP_RESOLVE | CR__CLEANUP_LEAVE_QUEUE);
        cr__request_late((cr_request *)q);
        return;
    }
    rc = cr__acquisition_looked(a, rc, server,
                                cr__script_lock_holds(a->lock, a->owner,
                                                      NULL));
    if (rc == CR_BUSY) {
        cr__lock_request_attempt((cr_request *)q); /* the attempt goes now */
        return;
    }
    q->w.rc = rc;
    cr__request_drive((cr_request *)q);
}

/* The reply to an attempt. */
static void
attempt_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr__lock_request *q = ctx;
    cr__acquisition *a = &q->acq;
    cr_lock *l = a->lock;
    int64_t hint = -1;

    q->busy = false;
    rc = l->kind->acquire_reply(l, a->owner, a->wait_ms, rc, r, &hint,
                                &q->w.listen);
    if (q->ended) {
        /* The request ended meanwhile (its bound passed, or the handle is
         * being freed): what this attempt may have taken is given back,
         * and a fair waiter's place in the queue left. */
        unsigned cleanup = CR__CLEANUP_LEAVE_QUEUE;

        if (rc == CR_OK)
            cleanup = CR__CLEANUP_GIVE_BACK;
        else if (cr__may_have_run(rc, cmd))
            cleanup |= CR__CLEANUP_RESOLVE;
        cr__lock_clean_up_later(l, a->owner, a->attempt_lease, a->wait_ms,
                                cleanup);
        cr__request_late((cr_request *)q);
        return;
    }
    q->w.rc = cr__acquisition_replied(a, rc, hint, cmd,
                                      cr__script_lock_holds(l, a->owner,
                                                            NULL));
    q->w.hint = hint;
    cr__request_drive((cr_request *)q);
}

/* Sends HGET N owner (the look for a lost reply's grant) with `fn`. */
static cr_status
send_look(cr__lock_request *q, cr__areply_fn fn)
{
    const char *argv[3] = {"HGET", q->acq.lock->raw, q->acq.owner};

    q->busy = true;
    return cr__aio_command(q->async->io, 3, argv, NULL, fn, q);
}

void
cr__lock_request_attempt(cr_request *req)
{
    cr__lock_request *q = (cr__lock_request *)req;
    cr__acquisition *a = &q->acq;
    cr_lock *l = a->lock;
    cr__topology *topo = l->client->topology;
    cr__script_call call = {0};
    char *tmp = NULL;
    int64_t hint = -1;
    cr_status rc;

    switch (cr__acquisition_next(a, cr__topology_settle_left(topo), &hint)) {
    case CR__ACQUISITION_LOOK:
        rc = send_look(q, looked_replied);
        cr__request_attempt_failed(req, rc == CR_OK ? CR_OK : CR_EIO);
        return;
    case CR__ACQUISITION_REFUSE:
        q->w.rc = CR_BUSY;
        q->w.hint = hint;
        cr__request_drive(req);
        return;
    case CR__ACQUISITION_SEND:
        break;
    }
    cr__acquisition_sent(a, cr__now_ms(), cr__topology_generation(topo));
    rc = l->kind->acquire_call(l, a->owner, a->attempt_lease, a->wait_ms,
                               &call, &tmp);
    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(q->async->io, &call, CR__CMD_SYNC,
                            attempt_replied, q);
    }
    cr__script_call_free(&call);
    free(tmp);
    cr__request_attempt_failed(req, rc);
}

/* The reply of one of the end's commands, which the request no longer
 * waits for (its bound passed, or the handle is being freed): what that
 * step was for goes to the background. */
static void
end_step_late(cr__lock_request *q, unsigned cleanup)
{
    cr__acquisition *a = &q->acq;

    cr__lock_clean_up_later(a->lock, a->owner, a->attempt_lease, a->wait_ms,
                            cleanup);
}

static void
undone_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr__lock_request *q = ctx;
    cr_lock *l = q->acq.lock;
    cr__sub_seen seen;
    int ignored = 0;

    (void)cmd;
    q->busy = false;
    if (rc == CR_OK) {
        const char *argv[2] = {"DEL", q->undo.unlock_latch};

        cr__aio_command(q->async->io, 2, argv, NULL, NULL, NULL);
    }
    cr__aio_subs.waiters(q->async->io, l->channel, &seen, NULL);
    rc = cr__unlock_end(l, &q->undo, rc, r, &seen, &ignored);
    if (q->ended) {
        if (rc != CR_OK)
            end_step_late(q, CR__CLEANUP_GIVE_BACK);
        cr__request_late((cr_request *)q);
        return;
    }
    cr__acquisition_end_undone(&q->acq, rc);
    lock_end_step(q);
}

static void
end_looked_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr__lock_request *q = ctx;
    cr__acquisition *a = &q->acq;
    int64_t server = 0;

    (void)cmd;
    q->busy = false;
    if (rc == CR_OK && r->type != CR__REPLY_NIL && !cr__reply_int(r, &server))
        rc = cr__fail(CR_ESCRIPT, "hold count of %s is not a number",
                      a->owner);
    cr__reply_free(r);
    if (q->ended) {
        end_step_late(q, CR__CLEANUP_RESOLVE | CR__CLEANUP_LEAVE_QUEUE);
        cr__request_late((cr_request *)q);
        return;
    }
    cr__acquisition_end_looked(a, rc, server,
                               cr__script_lock_holds(a->lock, a->owner,
                                                     NULL));
    lock_end_step(q);
}

static void
given_up_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    cr__lock_request *q = ctx;

    (void)cmd;
    q->busy = false;
    rc = cr__lock_give_up_reply(q->acq.lock, q->acq.owner, rc, r);
    if (q->ended) {
        if (rc != CR_OK)
            end_step_late(q, CR__CLEANUP_LEAVE_QUEUE);
        cr__request_late((cr_request *)q);
        return;
    }
    cr__acquisition_end_given_up(&q->acq, rc);
    lock_end_step(q);
}

/* Sends the end's undo: one unlock of the kind. */
static cr_status
send_undo(cr__lock_request *q)
{
    cr__acquisition *a = &q->acq;
    cr_lock *l = a->lock;
    cr__script_call call = {0};
    char *tmp = NULL;
    cr_status rc = cr__unlock_call(l, a->owner, a->attempt_lease, &q->undo,
                                   &call, &tmp);

    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(q->async->io, &call, q->undo.cmd.flags,
                            undone_replied, q);
        if (rc != CR_OK) {
            q->busy = false;
            free(q->undo.unlock_latch);
            q->undo.unlock_latch = NULL;
        }
    }
    cr__script_call_free(&call);
    free(tmp);
    return rc;
}

/* Sends the end's give-up: the kind's leave of its queue. */
static cr_status
send_give_up(cr__lock_request *q)
{
    cr__acquisition *a = &q->acq;
    cr_lock *l = a->lock;
    cr__script_call call = {0};
    cr_status rc = l->kind->give_up_call(l, a->owner, a->wait_ms, &call);

    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(q->async->io, &call, CR__CMD_RETRY,
                            given_up_replied, q);
        q->busy = rc == CR_OK;
    }
    cr__script_call_free(&call);
    return rc;
}

/* The end's next step (acquisition.h). Once the bound has passed nothing
 * more is sent: each step that needs Redis is left to the background. */
static void
lock_end_step(cr__lock_request *q)
{
    cr__acquisition *a = &q->acq;
    cr_lock *l = a->lock;
    cr__op op;
    unsigned cleanup;
    cr_status rc;

    for (;;) {
        unsigned stop = (q->cancelled && !q->ignores_cancel
                             ? CR__STOP_CANCELLED : 0) |
                        (atomic_load(&l->client->closing)
                             ? CR__STOP_CLOSING : 0);

        switch (cr__acquisition_end_next(
            a, stop, cr__topology_generation(l->client->topology))) {
        case CR__ACQUISITION_END_UNDO:
            if (q->overdue || send_undo(q) != CR_OK)
                cr__acquisition_end_undone(a, CR_EIO);
            else
                return;
            break;
        case CR__ACQUISITION_END_LOOK:
            if (q->overdue || send_look(q, end_looked_replied) != CR_OK) {
                q->busy = false;
                cr__acquisition_end_looked(a, CR_EIO, 0, 0);
            } else {
                return;
            }
            break;
        case CR__ACQUISITION_END_RECORD:
            cr__acquisition_end_recorded(a, cr__lock_record(l, a));
            break;
        case CR__ACQUISITION_END_VERIFY:
            /* No check of the new master that does not block: at once,
             * in the background. */
            cr__lock_clean_up_later(l, a->owner, a->attempt_lease, a->wait_ms,
                                    CR__CLEANUP_VERIFY);
            break;
        case CR__ACQUISITION_END_GIVE_UP:
            if (q->overdue || send_give_up(q) != CR_OK)
                cr__acquisition_end_given_up(a, CR_EIO);
            else
                return;
            break;
        case CR__ACQUISITION_END_DONE:
            rc = cr__acquisition_done(a, &cleanup);
            if (cleanup != 0)
                cr__lock_clean_up_later(l, a->owner, a->attempt_lease,
                                        a->wait_ms, cleanup);
            cr__request_op((cr_request *)q, &op);
            cr__lock_acquisition_report(&op, a, rc, &q->w, true);
            q->value = rc == CR_OK ? a->token : 0;
            if (q->then != NULL)
                q->then(q, rc);
            else
                cr__request_end((cr_request *)q, rc);
            return;
        }
    }
}

void
cr__lock_request_finish(cr_request *req)
{
    cr__lock_request *q = (cr__lock_request *)req;
    cr__acquisition *a = &q->acq;

    if (q->tune && a->attempts > 0)
        cr__handoff_tune(&a->lock->handoff,
                         q->w.rc == CR_OK && a->attempts == 1);
    cr__acquisition_end_begin(a, q->w.rc);
    lock_end_step(q);
}

cr_status
cr__lock_request_begin(cr__lock_request *q, cr_lock *l, int64_t owner,
                       int64_t wait_ms, int64_t lease_ms, bool bounded)
{
    cr__wait_spec spec;
    cr_status rc;

    cr__acquisition_begin(&q->acq, l, owner, lease_ms, wait_ms);
    free(q->channel);
    q->channel = NULL;
    q->tune = false;
    if ((rc = cr__lock_wait_spec(l, q->acq.owner, wait_ms, &spec,
                                 &q->channel)) != CR_OK)
        return rc;
    cr__request_wait((cr_request *)q, &spec, &l->handoff, l->channel,
                     bounded);
    return CR_OK;
}

void
cr__lock_request_release(cr_request *req)
{
    cr__lock_request *q = (cr__lock_request *)req;

    free(q->channel);
    free(q->undo.unlock_latch);
}

/* cr_async_lock's callback. */
static void
lock_callback(cr_request *req)
{
    cr__lock_request *q = (cr__lock_request *)req;

    if (q->fn != NULL)
        q->fn(q->userdata, q->rc, q->value);
}

/* The handle is freed while the acquisition waits: a fair waiter leaves
 * its queue in the background (a command out does its part when its
 * reply comes). */
static void
lock_abandon(cr_request *req)
{
    cr__lock_request *q = (cr__lock_request *)req;

    if (!q->busy)
        cr__lock_clean_up_later(q->acq.lock, q->acq.owner,
                                q->acq.attempt_lease, q->acq.wait_ms,
                                CR__CLEANUP_LEAVE_QUEUE);
}

static const cr__request_type lock_type = {
    .attempt = cr__lock_request_attempt,
    .finish = cr__lock_request_finish,
    .callback = lock_callback,
    .abandon = lock_abandon,
    .release = cr__lock_request_release,
};

/* The guard of an asynchronous call on lock `l` (a script lock must be of
 * the handle's client; a multilock's sub-locks may live on any). */
static cr_status
async_enter(cr_async *a, cr_lock *l)
{
    return cr__async_enter(a, l, CR__LOCK_MAGIC, "lock",
                           l != NULL && l->magic == CR__LOCK_MAGIC &&
                               l->kind == NULL);
}

cr_status
cr_async_lock(cr_async *a, cr_lock *l, int64_t owner, int64_t wait_ms,
              int64_t lease_ms, cr_async_fn fn, void *userdata,
              cr_request **req)
{
    cr__lock_request *q;
    cr_status rc = async_enter(a, l);

    if (rc != CR_OK)
        return rc;
    if (owner <= 0)
        rc = cr__fail(CR_EINVAL, "owner id %lld is not positive",
                      (long long)owner);
    else if ((rc = cr__check_wait(wait_ms)) == CR_OK)
        rc = cr__check_lease(lease_ms, "CR_LEASE_WATCHDOG");
    if (rc == CR_OK && l->kind == NULL)
        return cr__multilock_async(a, l, owner, wait_ms, lease_ms, false, fn,
                                   userdata, req);
    if (rc != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q = (cr__lock_request *)cr__request_new(a, &lock_type, sizeof(*q),
                                            userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->fn = fn;
    if ((rc = cr__lock_request_begin(q, l, owner, wait_ms, lease_ms, true)) !=
        CR_OK)
        return cr__request_discard((cr_request *)q, rc);
    return cr__request_started(a, (cr_request *)q, req);
}

/* An unlock on the loop: a one-command request with the release's
 * bookkeeping. */
typedef struct unlock_request {
    cr__command_request base;
    cr__release rel;
    cr__unlock u;
} unlock_request;

cr_status
cr__lock_async_release_send(cr_async *a, cr_lock *l, const char *owner,
                            cr__release *rel, cr__unlock *u,
                            cr__areply_fn fn, void *ctx)
{
    cr__script_call call = {0};
    char *tmp = NULL;
    cr_status rc;

    cr__release_begin(rel, l, owner);
    rc = cr__unlock_call(l, owner, rel->lease_ms, u, &call, &tmp);
    if (rc == CR_OK &&
        (rc = cr__aio_script(a->io, &call, u->cmd.flags, fn, ctx)) != CR_OK) {
        free(u->unlock_latch);
        u->unlock_latch = NULL;
    }
    cr__script_call_free(&call);
    free(tmp);
    if (rc != CR_OK) {
        cr__op op;

        /* Nothing was sent: the release ends here. */
        cr__op_begin(&op, a->client, -1);
        rc = cr__release_end(&op, rel, rc, 0, true);
    }
    return rc;
}

cr_status
cr__lock_async_release_read(cr_async *a, cr__release *rel, cr__unlock *u,
                            cr_status rc, cr__reply *r)
{
    cr_lock *l = rel->lock;
    cr__sub_seen seen;
    cr__op op;
    int result = 0;

    if (rc == CR_OK) {
        const char *argv[2] = {"DEL", u->unlock_latch};

        /* The unlock latch goes, as Redisson drops it; nobody waits for
         * that. */
        cr__aio_command(a->io, 2, argv, NULL, NULL, NULL);
    }
    cr__aio_subs.waiters(a->io, l->channel, &seen, NULL);
    rc = cr__unlock_end(l, u, rc, r, &seen, &result);
    cr__op_begin(&op, a->client, -1);
    return cr__release_end(&op, rel, rc, result, true);
}

static void
unlock_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    unlock_request *q = ctx;

    (void)cmd;
    q->base.busy = false;
    rc = cr__lock_async_release_read(q->base.async, &q->rel, &q->u, rc, r);
    if (!cr__request_late((cr_request *)q))
        cr__request_end((cr_request *)q, rc);
}

static void
unlock_callback(cr_request *req)
{
    unlock_request *q = (unlock_request *)req;

    if (q->base.fn != NULL)
        q->base.fn(req->userdata, req->rc, 0);
}

static void
unlock_release(cr_request *req)
{
    free(((unlock_request *)req)->u.unlock_latch);
}

static const cr__request_type unlock_type = {
    .callback = unlock_callback,
    .release = unlock_release,
};

cr_status
cr_async_unlock(cr_async *a, cr_lock *l, int64_t owner, cr_async_fn fn,
                void *userdata, cr_request **req)
{
    char name[CR__OWNER_MAX];
    unlock_request *q;
    cr_status rc = async_enter(a, l);

    if (rc != CR_OK)
        return rc;
    if (l->kind == NULL)
        return cr__multilock_async(a, l, owner, 0, 0, true, fn, userdata,
                                   req);
    q = (unlock_request *)cr__request_new(a, &unlock_type, sizeof(*q),
                                          userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->base.fn = fn;
    q->base.obj = l;
    q->base.busy = true;
    cr__name_owner(a->client->id, owner, l->kind->writer, name);
    if ((rc = cr__lock_async_release_send(a, l, name, &q->rel, &q->u,
                                          unlock_replied, q)) != CR_OK) {
        q->base.busy = false;
        return cr__request_discard((cr_request *)q, rc);
    }
    return cr__request_started(a, (cr_request *)q, req);
}
