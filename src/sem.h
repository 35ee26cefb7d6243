/* SPDX-License-Identifier: MIT */
/*
 * What RSemaphore (semaphore.c) and RPermitExpirableSemaphore
 * (permit_semaphore.c) share: the handle's head (protocol sections 7.2 and
 * 8.2: the permits N, the channel redisson_sc:{N}, and for the expirable
 * kind the issued permits {N}:timeout), its life cycle and the calls that
 * are the same for both.
 */
#ifndef CR_SEM_H
#define CR_SEM_H

#include "handoff.h"
#include "line.h"
#include "object.h"
#include "wait.h"

#define CR__SEM_FIELDS                                                        \
    CR__OBJECT_FIELDS                                                         \
    char *channel;       /* redisson_sc:{N} */                                \
    char *issued;        /* {N}:timeout (expirable kind), or NULL */          \
    cr__line line;       /* its waiting line (line.h) */                      \
    cr__handoff handoff; /* the releaser's turn */

typedef struct cr__sem {
    CR__SEM_FIELDS
} cr__sem;

/* Which of the two a handle is. */
typedef struct cr__sem_kind {
    uint32_t magic;
    const char *label;  /* for messages */
    bool expirable;     /* the permit-expirable semaphore */
} cr__sem_kind;

/* The two kinds (semaphore.c, permit_semaphore.c). */
extern const cr__sem_kind cr__semaphore_kind;
extern const cr__sem_kind cr__permit_semaphore_kind;

/* cr__sem_new: a handle of `size` bytes (starting with CR__SEM_FIELDS)
 * of kind `k` for `name`. cr__sem_free frees it (NULL and dead handles
 * are left alone); cr__sem_enter is its guard (*op: the call's
 * operation; end with cr__object_leave). */
cr_status cr__sem_new(cr_client *c, const char *name, const cr__sem_kind *k,
                      size_t size, void **out);
void cr__sem_free(void *s, const cr__sem_kind *k);
cr_status cr__sem_enter(const void *s, const cr__sem_kind *k, cr__op *op);

/* The public calls both kinds have, guard included: trySetPermits
 * (ttl_ms 0: none; *set may be NULL), addPermits, and delete (of N and
 * the issued permits; *deleted may be NULL). */
cr_status cr__sem_try_set_permits(void *s, const cr__sem_kind *k,
                                  int64_t permits, int64_t ttl_ms, bool *set);
cr_status cr__sem_add_permits(void *s, const cr__sem_kind *k, int64_t delta);
cr_status cr__sem_delete(void *s, const cr__sem_kind *k, bool *deleted);

/* An acquisition's place in the semaphore's waiting line (line.h): its
 * entry (the waiting thread's or request's name), its own channel, and
 * its wait (a try without one never goes in line). */
typedef struct cr__sem_waiter {
    char entry[CR__OWNER_MAX];
    char *channel;
    int64_t wait_ms;
} cr__sem_waiter;

/* cr__sem_waiter_begin: the place of owner `owner_id` (a thread's or an
 * asynchronous request's id) waiting wait_ms on `s` (CR_ENOMEM);
 * cr__sem_waiter_free: what begin allocated. */
cr_status cr__sem_waiter_begin(cr__sem_waiter *sw, const void *s,
                               int64_t owner_id, int64_t wait_ms);
void cr__sem_waiter_free(cr__sem_waiter *sw);

/* cr__sem_wait_spec: the wait of `sw` on `s` (of kind `k`; `async`: a
 * request's), the same for both kinds and both drivers. */
void cr__sem_wait_spec(const void *s, const cr__sem_kind *k,
                       const cr__sem_waiter *sw, bool async,
                       cr__wait_spec *spec);

/* cr__sem_line_args: the line arguments of a semaphore's scripts. */
typedef struct cr__sem_line_args {
    const char *line, *line_state, *line_channel;
    int64_t line_lease_ms, turn_ms;
} cr__sem_line_args;
cr__sem_line_args cr__sem_line_args_of(const void *s);

/* cr__sem_place: the place a failed attempt's reply {.., listen, turn}
 * (at `at`) gives `sw`'s wait: its hint (from the semaphore's own,
 * `object_hint`) and *listen. False for a reply without one. */
bool cr__sem_place(const cr__reply *r, size_t at, int64_t object_hint,
                   int64_t *hint, int *listen);

/* cr__sem_leave: `sw` leaves the line (its wait ended without the
 * permits) within `op`; cr__sem_leave_later: in the background (the loop's
 * requests). A failure is logged: the entry's lease then ends its place.
 * Which of the two a blocking call takes is its end's rule (LEAVE or
 * LEAVE_LATER below). */
void cr__sem_leave(const cr__op *op, void *s, const cr__sem_waiter *sw);
void cr__sem_leave_later(void *s, const cr__sem_waiter *sw);

/* The rules of one RSemaphore acquisition, written once for the blocking
 * call and the loop's request. Permits are not owned, so an attempt
 * whose reply was lost cannot be resolved by asking who holds what, as
 * the lock does. Instead every attempt of one acquisition carries the
 * same acquire latch, credisson_semaphore_acquire:{N}:<request id>, which
 * a successful attempt leaves behind for a while: the next attempt, or a
 * last look before giving up with CR_EIO, finds it and reports the
 * acquisition instead of taking the permits twice.
 *
 * The end: a wait that ended in CR_EIO after a lost reply looks for the
 * latch once (LOOK: EXISTS; not known, it is looked for in the
 * background, which gives the permits back if they were taken); a grant
 * that came after a cancel or while the client is being freed is given
 * back (GIVE_BACK: in the background, which looks at the latch first); a
 * grant drops its latch (DROP: DEL without a reply). */
typedef struct cr__sem_acquisition {
    cr__sem *sem;
    cr__sem_waiter waiter;
    int64_t permits;
    char *acquire_latch;
    int64_t acquire_latch_ms; /* its lifetime: every retry of the call */
    bool uncertain;           /* an attempt's reply was lost */
    int end_step;
    cr_status rc;
} cr__sem_acquisition;

typedef enum cr__sem_end_do {
    CR__SEM_END_LOOK,      /* EXISTS the latch, then ..._end_looked */
    CR__SEM_END_GIVE_BACK, /* give them back in the background */
    CR__SEM_END_LEAVE,     /* leave the line (cr__sem_leave) */
    CR__SEM_END_LEAVE_LATER, /* the same in the background (the wait ended
                              * on a broken link: inline, the leave would
                              * try it again within the caller's call) */
    CR__SEM_END_DROP,      /* DEL the latch, no reply awaited */
    CR__SEM_END_DONE       /* cr__sem_acquisition_done */
} cr__sem_end_do;

/* cr__sem_acquisition_begin: an acquisition of `permits` of `sem` by
 * owner `owner_id` waiting wait_ms (its acquire latch named and timed, its
 * place in line); CR_ENOMEM. cr__sem_acquisition_call: its attempt;
 * cr__sem_acquisition_replied: that attempt's outcome from its reply (rc:
 * how the call went; r freed) and the command's fate: CR_OK taken (by it
 * or an earlier attempt), CR_BUSY too few (with *hint and *listen for the
 * wait), or a failure. */
cr_status cr__sem_acquisition_begin(cr__sem_acquisition *a, void *sem,
                                    int64_t permits, int64_t owner_id,
                                    int64_t wait_ms);
cr_status cr__sem_acquisition_call(const cr__sem_acquisition *a,
                                   cr__script_call *call);
cr_status cr__sem_acquisition_replied(cr__sem_acquisition *a, cr_status rc,
                                      cr__reply *r, const cr__cmd *cmd,
                                      int64_t *hint, int *listen);

/* The end, once the wait ended with `rc`: its steps (`stop`: CR__STOP_*
 * as they stand now); the look's outcome (false: not known, the driver
 * leaves it to the background); and the acquisition's status, its latch's
 * name freed. */
void cr__sem_acquisition_end_begin(cr__sem_acquisition *a, cr_status rc);
cr__sem_end_do cr__sem_acquisition_end_next(cr__sem_acquisition *a,
                                            unsigned stop);
bool cr__sem_acquisition_end_looked(cr__sem_acquisition *a, cr_status rc,
                                    bool taken);
cr_status cr__sem_acquisition_done(cr__sem_acquisition *a);

/* A permit id as it is stored (protocol sections 8.1 and 16): 16 random
 * bytes, raw; for a Java side before Redisson 3.17 their 32 lowercase hex
 * characters. */
typedef struct cr__permit_id {
    char b[CR_PERMIT_ID_LEN];
    size_t len; /* 16 or 32 */
} cr__permit_id;

/* The rules of one RPermitExpirableSemaphore acquisition, written once
 * for the blocking call and the loop's request. Before an attempt whose
 * predecessor's reply was lost (uncertain), a look (ZSCORE of its first
 * id: its ids went in together) tells whether it was granted; if not, the
 * attempt goes with fresh ids. The end: a wait that ended without the
 * permits after a lost reply looks once more (LOOK; not known, it is
 * looked for in the background, which gives them back if they were
 * granted); a grant that came after a cancel or while the client is being
 * freed is given back (GIVE_BACK: now by a blocking call, within the
 * free's grace; in the background by the loop's request). */
typedef struct cr__permit_acquisition {
    cr__sem *sem;
    cr__sem_waiter waiter;
    int64_t permits;
    int64_t lease_ms;
    cr__permit_id *ids; /* the last attempt's, n of them */
    size_t n;           /* one per permit, or one for all (before 3.23.4) */
    bool uncertain;     /* the last attempt's reply was lost */
    int end_step;
    cr_status rc;
} cr__permit_acquisition;

typedef enum cr__permit_end_do {
    CR__PERMIT_END_LOOK,      /* the look, then ..._end_looked */
    CR__PERMIT_END_GIVE_BACK, /* give the ids back */
    CR__PERMIT_END_LEAVE,     /* leave the line (cr__sem_leave) */
    CR__PERMIT_END_LEAVE_LATER, /* in the background, as the semaphore's */
    CR__PERMIT_END_DONE       /* cr__permit_acquisition_done */
} cr__permit_end_do;

/* cr__permit_acquisition_begin: an acquisition of `permits` of `sem` with
 * `lease_ms` (both checked) by owner `owner_id` waiting wait_ms, as
 * cr__sem_acquisition_begin's; CR_ENOMEM. _free: what begin allocated.
 * _look: the look's command. _looked: its outcome (rc: how the command
 * went; r freed): CR_OK granted, CR_BUSY not (the attempt goes now), or
 * the failure. _call: an attempt with fresh ids. _replied: its outcome
 * from its reply and the command's fate, with the time until the
 * earliest expiry in *hint (the line's bound on it, cr__sem_place) and
 * *listen. */
cr_status cr__permit_acquisition_begin(cr__permit_acquisition *a, void *sem,
                                       int64_t permits, int64_t lease_ms,
                                       int64_t owner_id, int64_t wait_ms);
void cr__permit_acquisition_free(cr__permit_acquisition *a);
void cr__permit_acquisition_look(const cr__permit_acquisition *a,
                                 const char *argv[3], size_t lens[3]);
cr_status cr__permit_acquisition_looked(cr__permit_acquisition *a,
                                        cr_status rc, cr__reply *r);
cr_status cr__permit_acquisition_call(cr__permit_acquisition *a,
                                      cr__script_call *call);
cr_status cr__permit_acquisition_replied(cr__permit_acquisition *a,
                                         cr_status rc, cr__reply *r,
                                         const cr__cmd *cmd, int64_t *hint,
                                         int *listen);

/* The end, once the wait ended with `rc` (`stop`: CR__STOP_* as they
 * stand now); the end's look's outcome (false: not known, the driver
 * leaves it to the background); the acquisition's status. */
void cr__permit_acquisition_end_begin(cr__permit_acquisition *a,
                                      cr_status rc);
cr__permit_end_do cr__permit_acquisition_end_next(cr__permit_acquisition *a,
                                                  unsigned stop);
bool cr__permit_acquisition_end_looked(cr__permit_acquisition *a,
                                       cr_status rc, cr__reply *r);
cr_status cr__permit_acquisition_done(const cr__permit_acquisition *a);

/* cr__sem_decode: a semaphore's message (protocol sections 7.2 and 8.2):
 * n > 0 permits came back, so up to n waiters may try. */
cr__wake cr__sem_decode(const char *payload, size_t len);

#endif
