/* SPDX-License-Identifier: MIT */
/*
 * The rules of one acquisition of a script lock (script_lock.h), written
 * once for the blocking call (script_lock.c) and the event loop's request
 * (the asynchronous half of script_lock.c): what comes before an attempt,
 * what its reply means, and how the acquisition ends. Nothing here talks
 * to Redis, reads a clock or sleeps; the drivers make the calls these
 * functions ask for and feed their outcomes back.
 *
 * Before each attempt the wait state machine asks for (wait.h):
 * cr__acquisition_next says whether to look first for a hold that an
 * attempt whose reply was lost may have taken (LOOK: HGET of the owner's
 * hold count, its answer to cr__acquisition_looked), to refuse because a
 * Sentinel switch just happened (REFUSE: nothing is taken on a new master
 * until every client had the time to learn that it lost what the old
 * one granted), or to send the kind's acquire script (SEND, then
 * cr__acquisition_sent, and its reply to cr__acquisition_replied).
 *
 * When the wait is over, the acquisition ends through a few steps,
 * cr__acquisition_end_next, which a blocking call carries out inline and
 * a request on the loop as its last commands, all within the call's bound
 * (its wait and one command timeout); only a step that fails, or that the
 * bound (or the handle's free) cuts off, is left to the client's
 * background thread (CR__CLEANUP_* in script_lock.h):
 *
 *   1. a grant no replica acknowledged (replica sync on) is undone;
 *   2. an attempt whose reply was lost is looked for once (one look, not
 *      waiting for a connection slot): granted after all, it is kept;
 *   3. a grant that came after a cancel, or while the client is being
 *      freed, is undone;
 *   4. a grant is recorded in the holds table (a failure undoes it), and
 *      checked on the new master if the master moved since it was sent
 *      (inline by a blocking call; the loop has no form of that check
 *      that does not block, so a request leaves it to the background at
 *      once, which marks the hold lost when it is not there);
 *   5. a waiter that ends without the lock leaves the kind's queue (the
 *      fair lock's; a try without a wait never enqueued).
 */
#ifndef CR_ACQUISITION_H
#define CR_ACQUISITION_H

#include "lock.h"
#include "transport.h"

/* What an acquisition leaves to the client's background thread for an
 * owner (cr__lock_clean_up_later): leaving a fair lock's queue, giving a
 * grant back, finding out whether an attempt whose reply was lost was
 * granted (and giving it back if so), checking a hold on a new master. */
#define CR__CLEANUP_LEAVE_QUEUE 1u
#define CR__CLEANUP_GIVE_BACK 2u
#define CR__CLEANUP_RESOLVE 4u
#define CR__CLEANUP_VERIFY 8u

/* One acquisition under way. */
typedef struct cr__acquisition {
    cr_lock *lock;
    char owner[CR__OWNER_MAX];
    int64_t owner_id;      /* the thread id, or the asynchronous owner id */
    int64_t lease_ms;      /* as asked (CR_LEASE_WATCHDOG: none) */
    int64_t attempt_lease; /* the lease each attempt asks for */
    int64_t wait_ms;       /* the caller's whole wait */
    bool uncertain;        /* the last attempt's reply was lost */
    int64_t token;         /* what the kind's acquire left (fencing) */
    int attempts;          /* acquire scripts sent */
    int64_t sent_ms;       /* when the last was sent (monotonic) */
    unsigned gen;          /* the master's generation then (Sentinel) */
    cr_status sync;        /* its replica sync */
    /* The end (cr__acquisition_end_next). */
    int end_step;
    cr_status rc;          /* the acquisition's status so far */
    char why[512];         /* its message, which the end's own commands'
                            * failures (an undo's, a look's) must not
                            * replace: cr__acquisition_done restores it */
    unsigned cleanup;      /* what is left to the background */
    bool undone;           /* a grant was (or is to be) given back */
    bool unrecorded;       /* the holds table could not take it */
} cr__acquisition;

/* cr__acquisition_begin: an acquisition of `l` for owner id `owner_id`
 * (its owner name written in), with the lease asked (CR_LEASE_WATCHDOG:
 * the attempts ask for the client's watchdog timeout, as a lease-less
 * hold must never get a short leftover lease) and the caller's wait. */
void cr__acquisition_begin(cr__acquisition *a, cr_lock *l, int64_t owner_id,
                           int64_t lease_ms, int64_t wait_ms);

/* What comes before an attempt. */
typedef enum cr__acquisition_do {
    CR__ACQUISITION_LOOK,   /* HGET N owner, then cr__acquisition_looked */
    CR__ACQUISITION_REFUSE, /* the attempt is CR_BUSY with *hint (the
                             * reason in cr_last_error()) */
    CR__ACQUISITION_SEND    /* the acquire script, cr__acquisition_sent
                             * when it goes, cr__acquisition_replied */
} cr__acquisition_do;

/* cr__acquisition_next: before an attempt, `settle_ms` being what is left
 * of the pause after a Sentinel switch (cr__topology_settle_left). */
cr__acquisition_do cr__acquisition_next(cr__acquisition *a, int64_t settle_ms,
                                        int64_t *hint);

/* cr__acquisition_looked: the look's outcome `rc`, the server's hold count
 * of the owner and this client's own: CR_OK when the lost attempt did
 * acquire (the attempt's outcome is a grant); CR_BUSY when it did not (go
 * on: send the attempt); else the failure, the attempt's outcome. */
cr_status cr__acquisition_looked(cr__acquisition *a, cr_status rc,
                                 int64_t server, int64_t local);

/* cr__acquisition_sent: the acquire script goes now, at `now` (monotonic
 * ms) to the master of generation `gen`. */
void cr__acquisition_sent(cr__acquisition *a, int64_t now, unsigned gen);

/* cr__acquisition_replied: the attempt's outcome, from the kind's reply
 * reader's status `rc` and hint, the command's fate `cmd`, and this
 * client's count of the owner's holds: the status the wait gets. A
 * refusal of a non-reentrant kind while this client knows of no hold is a
 * grant whose reply was lost (the server has this owner's hold). */
cr_status cr__acquisition_replied(cr__acquisition *a, cr_status rc,
                                  int64_t hint, const cr__cmd *cmd,
                                  int64_t local);

/* What the end asks for next. */
typedef enum cr__acquisition_end_do {
    CR__ACQUISITION_END_UNDO,    /* give the grant back (one unlock of the
                                  * kind), then ..._end_undone */
    CR__ACQUISITION_END_LOOK,    /* look for the lost reply's grant (as
                                  * LOOK, no waiting for a connection
                                  * slot), then ..._end_looked */
    CR__ACQUISITION_END_RECORD,  /* add the hold to the holds table, then
                                  * ..._end_recorded */
    CR__ACQUISITION_END_VERIFY,  /* check the hold on the new master
                                  * (cr__hold_verify), nothing to feed
                                  * back */
    CR__ACQUISITION_END_GIVE_UP, /* leave the queue (the kind's give-up),
                                  * then ..._end_given_up */
    CR__ACQUISITION_END_DONE     /* over: its status and what is left to
                                  * the background, cr__acquisition_done */
} cr__acquisition_end_do;

/* cr__acquisition_end_begin: the wait ended with `rc`. */
void cr__acquisition_end_begin(cr__acquisition *a, cr_status rc);

/* cr__acquisition_end_next: the next step of the end; `stop` holds the
 * reasons a grant cannot be kept (CR__STOP_*) as they stand now,
 * `gen` the master's generation now. */
cr__acquisition_end_do cr__acquisition_end_next(cr__acquisition *a,
                                                unsigned stop, unsigned gen);

/* The outcomes of the end's steps (each: how it went). */
void cr__acquisition_end_undone(cr__acquisition *a, cr_status rc);
void cr__acquisition_end_looked(cr__acquisition *a, cr_status rc,
                                int64_t server, int64_t local);
void cr__acquisition_end_recorded(cr__acquisition *a, cr_status rc);
void cr__acquisition_end_given_up(cr__acquisition *a, cr_status rc);

/* cr__acquisition_done: once over, the acquisition's status, with what is
 * left to the background in *cleanup (CR__CLEANUP_*: pass it to
 * cr__lock_clean_up_later when not 0). A failure's message is back in
 * cr_last_error(): the reason for that status, not that of a step of the
 * end that failed (an undo's, a look's, a give-up's) and left its work to
 * the background. */
cr_status cr__acquisition_done(const cr__acquisition *a, unsigned *cleanup);

#endif
