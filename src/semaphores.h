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

/* cr__sem_new: a handle of `size` bytes (starting with CR__SEM_FIELDS)
 * of kind `k` for `name`. cr__sem_free frees it (NULL and dead handles
 * are left alone); cr__sem_enter is its guard (end with
 * cr__object_leave). */
cr_status cr__sem_new(cr_client *c, const char *name, const cr__sem_kind *k,
                      size_t size, void **out);
void cr__sem_free(void *s, const cr__sem_kind *k);
cr_status cr__sem_enter(const void *s, const cr__sem_kind *k);

/* The public calls both kinds have, guard included: trySetPermits
 * (ttl_ms 0: none; *set may be NULL), addPermits, and delete (of N and
 * the issued permits; *deleted may be NULL). */
cr_status cr__sem_try_set_permits(void *s, const cr__sem_kind *k,
                                  int64_t permits, int64_t ttl_ms, bool *set);
cr_status cr__sem_add_permits(void *s, const cr__sem_kind *k, int64_t delta);
cr_status cr__sem_delete(void *s, const cr__sem_kind *k, bool *deleted);

/* cr__sem_decode: a semaphore's message (protocol sections 7.2 and 8.2):
 * n > 0 permits came back, so up to n waiters may try. */
cr__wake cr__sem_decode(const char *payload, size_t len);

#endif
