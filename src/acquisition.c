/* SPDX-License-Identifier: MIT */
/*
 * The rules of one acquisition of a script lock (see acquisition.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "acquisition.h"
#include "lock_kind.h"

/* The steps of the end, in order. */
enum {
    E_SYNC,    /* a grant no replica acknowledged */
    E_LOOK,    /* a lost reply */
    E_STOP,    /* a grant that came after a cancel or during the free */
    E_RECORD,  /* the holds table */
    E_REUNDO,  /* a grant the holds table could not take */
    E_VERIFY,  /* the master moved since the grant was sent */
    E_GIVE_UP, /* the fair lock's queue */
    E_DONE
};

void
cr__acquisition_begin(cr__acquisition *a, cr_lock *l, int64_t owner_id,
                      int64_t lease_ms, int64_t wait_ms)
{
    *a = (cr__acquisition){.lock = l, .owner_id = owner_id,
                           .lease_ms = lease_ms, .wait_ms = wait_ms,
                           .sync = CR_OK, .rc = CR_BUSY};
    cr__name_owner(l->client->id, owner_id, l->kind->writer, a->owner);
    a->attempt_lease = lease_ms > 0 ? lease_ms
                                    : l->client->watchdog_timeout_ms;
}

cr__acquisition_do
cr__acquisition_next(cr__acquisition *a, int64_t settle_ms, int64_t *hint)
{
    if (a->uncertain)
        return CR__ACQUISITION_LOOK;
    if (settle_ms > 0) {
        /* Right after a Sentinel switch: a client that learns of it later
         * may hold a lock the old master granted; until it has been told
         * that it lost it, nothing is taken on the new master. */
        *hint = settle_ms;
        cr__fail(CR_BUSY, "the master moved just now: nothing is taken on "
                 "it for another %lld ms", (long long)settle_ms);
        return CR__ACQUISITION_REFUSE;
    }
    return CR__ACQUISITION_SEND;
}

cr_status
cr__acquisition_looked(cr__acquisition *a, cr_status rc, int64_t server,
                       int64_t local)
{
    if (rc != CR_OK)
        return rc;
    a->uncertain = false;
    if (server > local) {
        /* One hold more on the server than this client knows of: the lost
         * attempt did acquire. */
        a->token = 0;
        return CR_OK;
    }
    return CR_BUSY;
}

void
cr__acquisition_sent(cr__acquisition *a, int64_t now, unsigned gen)
{
    a->attempts++;
    a->sent_ms = now;
    a->gen = gen;
}

cr_status
cr__acquisition_replied(cr__acquisition *a, cr_status rc, int64_t hint,
                        const cr__cmd *cmd, int64_t local)
{
    if (rc == CR_EREENTRANT && local == 0) {
        /* The server has a hold of this owner that this client does not
         * know of: an earlier attempt whose reply was lost did acquire.
         * It is this owner's hold: take it up instead of refusing. */
        a->token = 0;
        a->sync = CR_OK;
        return CR_OK;
    }
    /* Sent, then its link was lost or the handle freed before its reply
     * was read: it may have run. */
    if (cmd->sent && (rc == CR_EIO || rc == CR_ECLOSED))
        a->uncertain = true;
    if (rc == CR_OK) {
        a->token = hint;
        a->sync = cmd->sync;
    }
    return rc;
}

/* Keeps the message of the acquisition's status as it stands (the last
 * error); returns nothing. */
static void
keep_why(cr__acquisition *a)
{
    snprintf(a->why, sizeof(a->why), "%s", cr_last_error());
}

void
cr__acquisition_end_begin(cr__acquisition *a, cr_status rc)
{
    a->rc = rc;
    keep_why(a);
    a->end_step = E_SYNC;
    a->cleanup = 0;
    a->undone = a->unrecorded = false;
}

cr__acquisition_end_do
cr__acquisition_end_next(cr__acquisition *a, unsigned stop, unsigned gen)
{
    cr_lock *l = a->lock;

    for (;;) {
        switch (a->end_step++) {
        case E_SYNC:
            if (a->rc == CR_OK && a->sync != CR_OK) {
                char why[256];

                /* Redisson's checkLockSyncedSlaves: a grant no replica has
                 * seen could vanish in a failover; undo it and say so (a
                 * server that refuses WAIT too: the check cannot work
                 * there). */
                snprintf(why, sizeof(why), "%s", cr_last_error());
                a->rc = cr__fail(a->sync, "%s %s: %s; the acquisition was "
                                 "undone", l->kind->name, l->name, why);
                keep_why(a);
                a->undone = true;
                return CR__ACQUISITION_END_UNDO;
            }
            break;
        case E_LOOK:
            /* A cancel too: what the lost attempt took is given back. */
            if ((a->rc == CR_EIO || a->rc == CR_BUSY ||
                 a->rc == CR_ECANCELED) && a->uncertain)
                return CR__ACQUISITION_END_LOOK;
            break;
        case E_STOP:
            if (a->rc == CR_OK && stop != 0) {
                a->rc = (stop & CR__STOP_CANCELLED)
                            ? cr__fail(CR_ECANCELED, "cancelled (the lock, "
                                       "granted meanwhile, is given back)")
                            : cr__fail(CR_ECLOSED, "the client is being freed "
                                       "(the lock, granted meanwhile, is "
                                       "given back)");
                keep_why(a);
                a->undone = true;
                return CR__ACQUISITION_END_UNDO;
            }
            break;
        case E_RECORD:
            if (a->rc == CR_OK)
                return CR__ACQUISITION_END_RECORD;
            break;
        case E_REUNDO:
            if (a->unrecorded)
                return CR__ACQUISITION_END_UNDO;
            break;
        case E_VERIFY:
            if (a->rc == CR_OK && gen != a->gen)
                return CR__ACQUISITION_END_VERIFY;
            break;
        case E_GIVE_UP:
            /* A try without a wait never enqueued. A wait that ended on a
             * broken link leaves its queue or line in the background: a
             * leave inline would try the link again inside the caller's
             * call (and a MultiLock's sub-lock on a dead server would
             * cost its whole round that much). */
            if (a->rc == CR_OK || a->undone || l->kind->give_up_call == NULL ||
                a->wait_ms == 0)
                break;
            if (a->rc == CR_EIO) {
                a->cleanup |= CR__CLEANUP_LEAVE_QUEUE;
                break;
            }
            return CR__ACQUISITION_END_GIVE_UP;
        default:
            a->end_step = E_DONE;
            return CR__ACQUISITION_END_DONE;
        }
    }
}

void
cr__acquisition_end_undone(cr__acquisition *a, cr_status rc)
{
    if (rc != CR_OK)
        a->cleanup |= CR__CLEANUP_GIVE_BACK;
}

void
cr__acquisition_end_looked(cr__acquisition *a, cr_status rc, int64_t server,
                           int64_t local)
{
    if (rc != CR_OK) {
        a->cleanup |= CR__CLEANUP_RESOLVE;
        return;
    }
    a->uncertain = false;
    if (server > local) {
        a->token = 0;
        a->rc = CR_OK;
    }
}

void
cr__acquisition_end_recorded(cr__acquisition *a, cr_status rc)
{
    if (rc == CR_OK)
        return;
    /* Nobody would renew or remember it: give it back. */
    a->rc = rc;
    keep_why(a);
    a->undone = a->unrecorded = true;
}

void
cr__acquisition_end_given_up(cr__acquisition *a, cr_status rc)
{
    if (rc != CR_OK)
        a->cleanup |= CR__CLEANUP_LEAVE_QUEUE;
}

cr_status
cr__acquisition_done(const cr__acquisition *a, unsigned *cleanup)
{
    /* Nothing runs in the background of a client being freed. */
    *cleanup = a->rc == CR_ECLOSED ? 0 : a->cleanup;
    return a->rc == CR_OK ? CR_OK : cr__fail(a->rc, "%s", a->why);
}
