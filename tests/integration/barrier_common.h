/* SPDX-License-Identifier: MIT */
/*
 * What the tests of the cyclic barrier with blocking parties (test_barrier,
 * test_coord_cluster) share: a party awaiting on its own thread, and the
 * condition that a number of parties have arrived, for cr_test_wait_until.
 */
#ifndef CR_TEST_BARRIER_COMMON_H
#define CR_TEST_BARRIER_COMMON_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "credisson.h"
#include "redis_fixture.h"

/* A party on its own thread. */
typedef struct party {
    cr_barrier *barrier;
    int64_t wait_ms;
    cr_status rc;
    int64_t generation, index;
    int64_t returned_ms; /* cr_test_now_ms() */
    atomic_bool done;
    pthread_t thread;
} party;

/* Thread body: one await, then what it returned and when. */
static inline void *
party_run(void *arg)
{
    party *p = arg;

    p->rc = cr_barrier_await(p->barrier, p->wait_ms, &p->generation,
                             &p->index);
    p->returned_ms = cr_test_now_ms();
    atomic_store(&p->done, true);
    return NULL;
}

/* Starts party p on barrier b, waiting at most wait_ms. */
static inline void
party_start(party *p, cr_barrier *b, int64_t wait_ms)
{
    memset(p, 0, sizeof(*p));
    p->barrier = b;
    p->wait_ms = wait_ms;
    p->generation = p->index = -1;
    assert_int_equal(pthread_create(&p->thread, NULL, party_run, p), 0);
}

/* What has_arrivals waits for. */
typedef struct arrivals_wanted {
    cr_barrier *barrier;
    int64_t count;
} arrivals_wanted;

/* Returns whether at least w->count parties wait at w->barrier. */
static inline bool
has_arrivals(void *arg)
{
    arrivals_wanted *w = arg;
    int64_t n = -1;

    return cr_barrier_get_number_waiting(w->barrier, &n) == CR_OK &&
           n >= w->count;
}

#endif
