/* SPDX-License-Identifier: MIT */
/*
 * Identity: the client's UUID, the process-wide thread ids, request ids
 * and fork() detection.
 */
#ifndef CR_REGISTRY_H
#define CR_REGISTRY_H

#include <stdint.h>

#include "common.h"

/* cr__uuid_v4: a random version-4 UUID in 36 lowercase characters + NUL. */
cr_status cr__uuid_v4(char out[37]);

/* cr__request_id: 16 bytes that name one request (an unlock latch, a
 * semaphore acquisition), unique in practice: drawn from a per-thread
 * generator that the kernel seeds once per thread and again after fork(),
 * so the hot path makes no system call. Not secret: the ids only tell
 * retries of one request from others. */
cr_status cr__request_id(unsigned char out[16]);

/* cr__fork_generation: how many fork()s the current process descends from
 * since the library was loaded; a client remembers it at creation and
 * refuses to act as an owner when it has changed. */
unsigned cr__fork_generation(void);

/* cr__registry_init: install the pthread_atfork handler (idempotent). */
void cr__registry_init(void);

#endif
