/* SPDX-License-Identifier: MIT */
/*
 * One asynchronous request's outcome, as the tests of the asynchronous API
 * record it: how often its callback ran, with what, and when; the
 * callbacks that record it (a request's, and a barrier await's) and the
 * condition that it was called, for poll_loop_until. Include after
 * poll_loop.h.
 */
#ifndef CR_TEST_ASYNC_OUTCOME_H
#define CR_TEST_ASYNC_OUTCOME_H

#include <stdbool.h>
#include <stdint.h>

#include "credisson.h"

/* One request's outcome. */
typedef struct outcome {
    int calls;
    cr_status rc;
    int64_t value, generation, index;
    int64_t at;        /* when the callback ran (monotonic ms) */
    cr_async *free_it; /* freed from passed() when set */
} outcome;

/* A request's callback (cr_async_fn): records into the outcome it is
 * given. */
static inline void
record(void *userdata, cr_status rc, int64_t value)
{
    outcome *o = userdata;

    o->calls++;
    o->rc = rc;
    o->value = value;
    o->at = poll_loop_now_ms();
}

/* A barrier await's callback: records into the outcome it is given, then
 * frees its free_it when set. */
static inline void
passed(void *userdata, cr_status rc, int64_t generation, int64_t index)
{
    outcome *o = userdata;

    o->calls++;
    o->rc = rc;
    o->generation = generation;
    o->index = index;
    o->at = poll_loop_now_ms();
    if (o->free_it != NULL)
        cr_async_free(o->free_it);
}

/* Returns whether the callback of outcome `arg` has run. */
static inline bool
called(void *arg)
{
    return ((outcome *)arg)->calls > 0;
}

#endif
