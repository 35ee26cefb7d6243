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

typedef struct attempt_ctx {
    const cr__op *op;
    cr_lock *lock;
    const char *owner;
    int64_t lease_ms;
    int64_t wait_ms;
    bool uncertain; /* the last attempt's reply was lost */
    int64_t token;  /* what the kind's acquire left on success */
    int attempts;   /* acquire calls made */
    int64_t sent_ms; /* when the last acquire was sent (its lease starts
                      * no earlier on the server) */
    unsigned gen;    /* the master's generation then (Sentinel) */
    cr__cmd cmd;     /* the last acquire's command: sent, replica sync */
} attempt_ctx;

/* Tells whether an attempt whose reply was lost did acquire: the server
 * counts one hold more than this client knows of. */
static cr_status
resolve_lost_reply(attempt_ctx *a, bool *acquired)
{
    int64_t server = 0;
    cr_status rc = server_hold_count(a->op, a->lock, a->owner, &server);

    if (rc != CR_OK)
        return rc;
    *acquired = server > cr__script_lock_holds(a->lock, a->owner, NULL);
    a->uncertain = false;
    return CR_OK;
}

/* One attempt of the wait. */
static cr_status
attempt(attempt_ctx *a, int64_t *hint)
{
    cr_lock *l = a->lock;
    int64_t settle;
    cr_status rc;

    if (a->uncertain) {
        bool acquired = false;

        rc = resolve_lost_reply(a, &acquired);
        if (rc != CR_OK)
            return rc;
        if (acquired) {
            a->token = 0;
            return CR_OK;
        }
    }
    if ((settle = cr__topology_settle_left(l->client->topology)) > 0) {
        /* Right after a Sentinel switch: a client that learns of it later
         * may hold a lock the old master granted; until it has been told
         * that it lost it, nothing is taken on the new master. */
        *hint = settle;
        return cr__fail(CR_BUSY, "the master moved just now: nothing is "
                        "taken on it for another %lld ms", (long long)settle);
    }
    a->attempts++;
    a->sent_ms = cr__now_ms();
    a->gen = cr__topology_generation(l->client->topology);
    a->cmd = (cr__cmd){.flags = CR__CMD_SYNC};
    rc = cr__lock_kind_acquire(a->op, l, &a->cmd, a->owner, a->lease_ms,
                               a->wait_ms, hint);
    if (rc == CR_EREENTRANT && cr__script_lock_holds(l, a->owner, NULL) == 0) {
        /* The server has a hold of this owner that this client does not
         * know of: an earlier attempt whose reply was lost did acquire.
         * It is this owner's hold: take it up instead of refusing. */
        a->token = 0;
        return CR_OK;
    }
    if (rc == CR_EIO && a->cmd.sent)
        a->uncertain = true; /* it may have run: its reply was lost */
    else if (rc == CR_OK)
        a->token = *hint;
    return rc;
}

/* What an acquisition leaves to the background (cr__script_lock_later). */
typedef struct give_back {
    cr_lock *lock;
    char owner[CR__OWNER_MAX];
    int64_t lease_ms, wait_ms;
    unsigned what;
} give_back;

/* The background job of a give_back. */
static void
give_back_run(const cr__op *op, void *arg)
{
    give_back *g = arg;
    cr_lock *l = g->lock;
    int64_t server = 0;
    int ignored;

    if ((g->what & CR__LATER_GIVE_UP) &&
        l->kind->give_up(op, l, g->owner, g->wait_ms) != CR_OK)
        cr__log(&l->client->log, CR_LOG_WARN, "fair lock %s: %s stays in its "
                "queue until its deadline", l->name, g->owner);
    if ((g->what & CR__LATER_RESOLVE) &&
        server_hold_count(op, l, g->owner, &server) == CR_OK &&
        server > cr__script_lock_holds(l, g->owner, NULL))
        g->what |= CR__LATER_UNDO; /* granted after its caller gave up */
    if (g->what & CR__LATER_UNDO) {
        cr_status rc = cr__lock_kind_unlock(op, l, g->owner, g->lease_ms,
                                            &ignored);

        cr__log(&l->client->log, rc == CR_OK ? CR_LOG_INFO : CR_LOG_WARN,
                "%s %s: an acquisition of %s its caller was told it did not "
                "get was given back: %s", l->kind->name, l->name, g->owner,
                rc == CR_OK ? "done" : cr_last_error());
    }
    if (g->what & CR__LATER_VERIFY)
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
cr__script_lock_later(cr_lock *l, const char *owner, int64_t lease_ms,
                      int64_t wait_ms, unsigned what)
{
    give_back *g;

    if (what == CR__LATER_GIVE_UP && l->kind->give_up == cr__rlock_give_up)
        return; /* nothing to leave: no queue */
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return;
    g->lock = l;
    snprintf(g->owner, sizeof(g->owner), "%s", owner);
    g->lease_ms = lease_ms;
    g->wait_ms = wait_ms;
    g->what = what;
    cr__object_background(l, give_back_run, give_back_done, g);
}

/* The class's acquire: see the file comment. */
static cr_status
script_acquire(cr__op *op, cr_lock *l, int64_t tid, int64_t wait_ms,
               int64_t lease_ms, int64_t *token)
{
    char owner[CR__OWNER_MAX], *channel = NULL;
    attempt_ctx a;
    cr__wait_spec spec = {0};
    cr__wait w;
    int64_t yield_start = cr__now_ms(), hint = -1;
    bool turned, give_up_later = false, undo_later = false;
    bool resolve_later = false;
    cr_status sync, rc;

    turned = cr__wait_turn(l->client->pubsub, l->channel, &l->handoff,
                           wait_ms);
    owner_of(l, tid, owner);
    if (!l->kind->spin)
        channel = l->kind->own_channel
                      ? cr__name_waiter_channel(l->channel, owner)
                      : l->channel;
    if (channel == NULL && !l->kind->spin)
        return CR_ENOMEM;
    a.op = op;
    a.lock = l;
    a.owner = owner;
    /* Redisson would pass the object's current lease (the last explicit
     * one) here; a short leftover lease could then expire before the first
     * renewal, so a lease-less hold always asks for the watchdog timeout. */
    a.lease_ms = lease_ms > 0 ? lease_ms : l->client->watchdog_timeout_ms;
    a.wait_ms = wait_ms;
    a.uncertain = false;
    a.token = 0;
    a.attempts = 0;
    a.sent_ms = cr__now_ms();
    a.gen = cr__topology_generation(l->client->topology);
    a.cmd = (cr__cmd){0};
    spec.channel = channel;
    spec.decode = cr__lock_decode;
    /* The turn let to others came out of the wait budget (at least one
     * attempt is still made). */
    spec.wait_ms = wait_ms;
    if (wait_ms > 0)
        spec.wait_ms = wait_ms > cr__now_ms() - yield_start
                           ? wait_ms - (cr__now_ms() - yield_start)
                           : 0;
    spec.min_sleep_ms = l->kind->min_sleep_ms;
    spec.max_sleep_ms = l->kind->max_sleep_ms;
    spec.trust_open = false;
    spec.subscribe_first = false;
    /* Not when it holds the lock already: a reentrant lock() must not wait
     * behind the threads that wait for this very hold. */
    spec.in_line = l->kind->in_line && cr__script_lock_holds(l, owner, NULL) == 0;
    cr__wait_begin(&w, op, &spec);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = attempt(&a, &hint);
    if (turned && a.attempts > 0)
        cr__handoff_tune(&l->handoff, rc == CR_OK && a.attempts == 1);
    if (rc == CR_OK && (sync = a.cmd.sync) != CR_OK) {
        char why[256];
        int ignored;

        /* Redisson's checkLockSyncedSlaves: a grant no replica has seen
         * could vanish in a failover; undo it and say so (a server that
         * refuses WAIT too: the check cannot work there). */
        snprintf(why, sizeof(why), "%s", cr_last_error());
        if (cr__lock_kind_unlock(op, l, owner, a.lease_ms, &ignored) != CR_OK)
            undo_later = true;
        rc = cr__fail(sync, "%s %s: %s; the acquisition was undone",
                      l->kind->name, l->name, why);
    }
    if ((rc == CR_EIO || rc == CR_BUSY) && a.uncertain) {
        bool acquired = false;
        int64_t patience = op->patience;

        /* One look if a connection is at hand; else in the background. */
        op->patience = cr__now_ms();
        if (resolve_lost_reply(&a, &acquired) != CR_OK) {
            resolve_later = true;
        } else if (acquired) {
            CR__STAT_ADD(&l->client->run.stats, acquisitions, 1);
            a.token = 0;
            rc = CR_OK;
        }
        op->patience = patience;
    }
    if (channel != l->channel)
        free(channel);
    if (rc == CR_OK && atomic_load(&l->client->closing)) {
        int ignored;

        /* Granted while the client is being freed: the caller could not
         * release it any more; give it back now, within the free's grace. */
        cr__lock_kind_unlock(op, l, owner, a.lease_ms, &ignored);
        rc = cr__fail(CR_ECLOSED, "the client is being freed (the lock, "
                      "granted meanwhile, was given back)");
    } else if (rc == CR_OK) {
        rc = cr__hold_add(l->client->renewal, l->kind->hold_kind, l->raw, owner,
                          l->kind->hold_kind == CR__HOLD_READ ? l->key2 : NULL,
                          tid, lease_ms == CR_LEASE_WATCHDOG,
                          cr__lease_valid_until(a.sent_ms, a.lease_ms),
                          l->lost_fn, l->lost_userdata);
        if (rc != CR_OK) {
            int ignored;

            /* Nobody would renew or remember it: give it back. */
            cr__lock_kind_unlock(op, l, owner, a.lease_ms, &ignored);
        } else {
            if (cr__topology_generation(l->client->topology) != a.gen)
                /* The master moved since: is the hold on the new one? */
                cr__hold_verify(l->client->renewal, l->kind->hold_kind, l->raw,
                                owner);
            if (lease_ms > 0)
                atomic_store(&l->lease_ms, lease_ms);
            cr__handoff_acquired(&l->handoff, cr__now_us());
            if (token != NULL)
                *token = a.token;
        }
    } else if (l->kind->give_up(op, l, owner, wait_ms) != CR_OK) {
        give_up_later = true;
    }
    if (rc != CR_OK && rc != CR_ECLOSED &&
        (give_up_later || undo_later || resolve_later))
        cr__script_lock_later(l, owner, a.lease_ms, wait_ms,
                              (give_up_later ? CR__LATER_GIVE_UP : 0) |
                              (undo_later ? CR__LATER_UNDO : 0) |
                              (resolve_later ? CR__LATER_RESOLVE : 0));
    if (cr__hooked(&l->client->run.stats) && (rc == CR_OK || rc == CR_BUSY))
        cr__op_event(op, rc == CR_OK ? CR_EVENT_ACQUIRED : CR_EVENT_BUSY, rc,
                     l->kind->name, l->name, cr__now_ms() - w.start, -1,
                     false);
    return rc;
}

cr_status
cr__lock_acquire_reply(cr_lock *l, const char *owner, int64_t wait_ms,
                       cr_status rc, cr__reply *r, int64_t *hint)
{
    (void)wait_ms;
    if (rc == CR_ESERVER && strstr(cr_last_error(), "NON_REENTRANT_REACQUIRE"))
        return cr__fail(CR_EREENTRANT, "%s is already held by %s", l->name,
                        owner);
    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_NIL)
        rc = CR_OK;
    else if (cr__reply_int(r, hint))
        rc = CR_BUSY;
    else
        rc = cr__fail(CR_ESCRIPT, "%s acquire replied neither nil nor a ttl",
                      l->kind->name);
    cr__reply_free(r);
    return rc;
}

/* ------------------------------------------------------------ releasing */

cr_status
cr__lock_kind_acquire(const cr__op *op, cr_lock *l, cr__cmd *cmd,
                      const char *owner, int64_t lease_ms, int64_t wait_ms,
                      int64_t *hint)
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
    return l->kind->acquire_reply(l, owner, wait_ms, rc, r, hint);
}

cr_status
cr__lock_kind_unlock(const cr__op *op, cr_lock *l, const char *owner,
                     int64_t lease_ms, int *result)
{
    cr__script_call call = {0};
    cr__unlock u;
    cr__reply *r = NULL;
    char *tmp = NULL;
    cr_status rc = cr__unlock_begin(l, &u);

    if (rc != CR_OK)
        return rc;
    rc = l->kind->unlock_call(l, owner, lease_ms, &u, &call, &tmp);
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &u.cmd, &call, &r);
    cr__script_call_free(&call);
    free(tmp);
    return cr__unlock_end(op, l, &u, rc, r, result);
}

cr_status
cr__unlock_begin(cr_lock *l, cr__unlock *u)
{
    u->cmd = (cr__cmd){.flags = CR__CMD_RETRY | CR__CMD_SYNC};
    u->unlock_latch_ms = l->client->unlock_latch_timeout_ms;
    u->started_us = cr__now_us();
    u->unlock_latch = cr__name(CR__NAME_UNLOCK_LATCH, l->raw);
    return u->unlock_latch != NULL ? CR_OK
                                   : cr__fail(CR_ENOMEM, "out of memory");
}

cr_status
cr__unlock_reply(cr_lock *l, cr__reply *r, int *result, int64_t *heard)
{
    int64_t v = 0;
    cr_status rc;

    *heard = 0;
    if (r->type == CR__REPLY_NIL) {
        rc = cr__fail(CR_ENOTOWNER, "%s %s is not held by this owner",
                      l->kind->name, l->name);
    } else if (cr__reply_int(r, &v) && v <= 1 && v > -1000000000) {
        *result = v != 0;
        *heard = v < 0 ? -v : 0;
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
cr__unlock_end(const cr__op *op, cr_lock *l, cr__unlock *u, cr_status rc,
               cr__reply *r, int *result)
{
    int64_t heard = 0;
    cr__sub_seen seen;

    if (rc == CR_OK) {
        rc = cr__unlock_reply(l, r, result, &heard);
        cr__del_noreply(op, u->unlock_latch);
    }
    free(u->unlock_latch);
    if (rc == CR_OK) {
        cr__pubsub_waiters(l->client->pubsub, l->channel, &seen, NULL);
        cr__handoff_after_unlock(&l->handoff, &seen, heard, u->started_us,
                                 cr__now_us(), l->kind->in_line);
    }
    return rc;
}

/* The class's release: see the file comment. */
static cr_status
script_release(cr__op *op, cr_lock *l, int64_t tid)
{
    char owner[CR__OWNER_MAX];
    cr__renewal *r = l->client->renewal;
    cr__hold_kind kind = l->kind->hold_kind;
    int64_t local, lease, sent;
    int result = 0;
    bool lost = false;
    cr_status rc;

    owner_of(l, tid, owner);
    local = cr__script_lock_holds(l, owner, &lost);
    cr__hold_releasing(r, kind, l->raw, owner);
    lease = atomic_load(&l->lease_ms);
    sent = cr__now_ms();
    rc = cr__lock_kind_unlock(op, l, owner, lease, &result);
    if (rc == CR_OK) {
        int64_t held = cr__hold_release(r, kind, l->raw, owner, result == 1,
                                        cr__lease_valid_until(sent, lease));

        if (result == 1)
            cr__op_event(op, CR_EVENT_RELEASED, CR_OK, l->kind->name,
                         l->name, -1, held, false);
    } else if (rc == CR_ENOTOWNER && local > 0) {
        /* Found lost by the unlock itself: reported as any lost hold, its
         * callback first. */
        cr__hold_found_lost(r, kind, l->raw, owner, "the unlock found it gone");
        cr__hold_release(r, kind, l->raw, owner, true, -1);
        rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had expired or was "
                      "removed before this unlock", l->kind->name, l->name,
                      owner);
    } else {
        /* As Redisson: a failed unlock still takes one renewal count, so a
         * lock whose unlock cannot reach Redis expires instead of being
         * renewed forever. */
        cr__hold_release(r, kind, l->raw, owner, false, -1);
        if (lost && local > 0) {
            char why[256];

            /* What the holder must hear first: it had lost the lock. */
            snprintf(why, sizeof(why), "%s", cr_last_error());
            rc = cr__fail(CR_ELOST, "%s %s: the hold of %s had been lost, and "
                          "the unlock failed too: %s", l->kind->name, l->name,
                          owner, why);
        }
    }
    if (rc != CR_OK || result == 1)
        atomic_store(&l->lease_ms, l->client->watchdog_timeout_ms);
    return rc;
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
    if (l->channel == NULL) {
        cr__lock_destroy(l);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *out = l;
    return CR_OK;
}
