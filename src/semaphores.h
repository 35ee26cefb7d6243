/* SPDX-License-Identifier: MIT */
/*
 * What RSemaphore (semaphore.c) and RPermitExpirableSemaphore
 * (permit_semaphore.c) share: two scripts of the same shape (protocol
 * sections 7.2 and 8.2), on an entered handle `obj` with channel `channel`.
 */
#ifndef CR_SEMAPHORES_H
#define CR_SEMAPHORES_H

#include "object.h"

/* cr__sem_try_set_permits: try_set_permits (ttl_ms 0: none); *set (may be
 * NULL) tells whether it set them. */
cr_status cr__sem_try_set_permits(const void *obj, const char *channel,
                                  int64_t permits, int64_t ttl_ms, bool *set);

/* cr__sem_add_permits: add_permits by `delta`; `mode` is what to publish
 * ("total" for RSemaphore, "delta" for the permit semaphore). */
cr_status cr__sem_add_permits(const void *obj, const char *channel,
                              int64_t delta, const char *mode);

/* cr__sem_decode: a semaphore's message (protocol sections 7.2 and 8.2):
 * n > 0 permits came back, so up to n waiters may try. */
cr__wake cr__sem_decode(const char *payload, size_t len);

#endif
