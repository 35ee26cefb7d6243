/* SPDX-License-Identifier: MIT */
/*
 * What RSemaphore (semaphore.c) and RPermitExpirableSemaphore
 * (permit_semaphore.c) share: the handle's head (protocol sections 7.2 and
 * 8.2: the permits N, the channel redisson_sc:{N}, and for the expirable
 * kind the issued permits {N}:timeout), its life cycle and the calls that
 * are the same for both.
 */
#ifndef CR_SEMAPHORES_H
#define CR_SEMAPHORES_H

#include "handoff.h"
#include "object.h"

#define CR__SEM_FIELDS                                                        \
    CR__OBJECT_FIELDS                                                         \
    char *channel;       /* redisson_sc:{N} */                                \
    char *issued;        /* {N}:timeout (expirable kind), or NULL */          \
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

/* RSemaphore's calls in halves, a script call and the reading of its
 * reply, so that the blocking and the asynchronous API send the same:
 * an acquire attempt of `permits` under acquire latch `acquire_latch` (CR_OK
 * taken, CR_BUSY too few), and a release (*done: released; the releaser's
 * turn starts from `sent_us`, from what the releasing driver's
 * subscription to the channel has seen, `seen`). */
cr_status cr__sem_acquire_call(const void *s, int64_t permits,
                               const char *acquire_latch,
                               int64_t acquire_latch_ms,
                               cr__script_call *call);
cr_status cr__sem_acquire_reply(cr_status rc, cr__reply *r);
cr_status cr__sem_release_call(const void *s, int64_t permits,
                               bool only_if_exists, cr__script_call *call);
cr_status cr__sem_release_reply(void *s, cr_status rc, cr__reply *r,
                                const cr__sub_seen *seen, int64_t sent_us,
                                bool *done);

/* cr__sem_add_call: addPermits(delta) (checked) of either kind. */
cr_status cr__sem_add_call(const void *s, bool expirable, int64_t delta,
                           cr__script_call *call);

/* cr__sem_late: after an acquisition that ended in CR_EIO, find out in the
 * background whether its acquire latch (taken over) says the permits were
 * taken, and give them back if so. */
void cr__sem_late(void *s, char *acquire_latch, int64_t permits);

/* A permit id as it is stored (protocol sections 8.1 and 16): 16 random
 * bytes, raw; for a Java side before Redisson 3.17 their 32 lowercase hex
 * characters. */
typedef struct cr__permit_id {
    char b[CR_PERMIT_ID_LEN];
    size_t len; /* 16 or 32 */
} cr__permit_id;

/* cr__permit_id_new: a fresh id in the form semaphore `s`'s line stores. */
cr_status cr__permit_id_new(const void *s, cr__permit_id *id);

/* cr__permit_id_hex: `id` as users see it, 32 lowercase hex characters
 * and a NUL. */
void cr__permit_id_hex(const cr__permit_id *id, char *hex);

/* RPermitExpirableSemaphore's calls in halves (ids as users see them in
 * `hex`): an acquire attempt of `permits` under the n ids `ids` (one per
 * permit, or one for all of them on lines before 3.23.4; CR_OK granted,
 * CR_BUSY with the time to the earliest expiry in *hint), a release of
 * the `permits` id `hex` stands for (CR_ENOTOWNER: not out; CR_ELOST: its
 * lease had run out; *result 0, 1 or 2 as the script's), an update of its
 * lease (reply: 1 when updated, cr__reply_bool). `id` receives the stored
 * form of `hex`, which the call refers to. */
cr_status cr__permit_acquire_call(const void *s, int64_t permits,
                                  int64_t lease_ms, const cr__permit_id *ids,
                                  size_t n, cr__script_call *call);
cr_status cr__permit_acquire_reply(cr_status rc, cr__reply *r, int64_t *hint);
cr_status cr__permit_release_call(const void *s, const char *hex,
                                  int64_t permits, cr__permit_id *id,
                                  cr__script_call *call);
cr_status cr__permit_release_reply(void *s, const char *hex, cr_status rc,
                                   cr__reply *r, const cr__sub_seen *seen,
                                   int64_t sent_us, bool async,
                                   int64_t *result);
cr_status cr__permit_update_call(const void *s, const char *hex,
                                 int64_t lease_ms, cr__permit_id *id,
                                 cr__script_call *call);

/* cr__permit_late: find out in the background whether the n ids `ids` of
 * an acquisition of `permits` that ended without them were granted, and
 * give them back if so. */
void cr__permit_late(void *s, const cr__permit_id *ids, size_t n,
                     int64_t permits);

/* cr__sem_decode: a semaphore's message (protocol sections 7.2 and 8.2):
 * n > 0 permits came back, so up to n waiters may try. */
cr__wake cr__sem_decode(const char *payload, size_t len);

#endif
