/* SPDX-License-Identifier: MIT */
/*
 * What test_line.c and its helper program line_worker share: a block of
 * shared memory (a memfd the worker maps from an inherited descriptor)
 * where each worker records when each of its cycles asked for the object,
 * got it and gave it back (microseconds of CLOCK_MONOTONIC, which every
 * process of the machine shares), how many hold the object at once, and
 * the start signal, so that every worker begins at the same moment.
 * Exclusion itself is judged by the history checker (history.h), which
 * the workers record into too.
 */
#ifndef CR_TEST_LINE_BLOCK_H
#define CR_TEST_LINE_BLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

#include "history.h"

/* The most workers (threads or requests count one each) and cycles. */
#define LINE_WORKERS CR_HIST_MAX_WORKERS
#define LINE_CYCLES 64

/* One cycle of one worker. */
typedef struct line_cycle {
    int64_t call_us;  /* the acquiring call was made */
    int64_t enter_us; /* it returned with the object */
    int64_t leave_us; /* right before the release was sent */
} line_cycle;

typedef struct line_block {
    atomic_int ready;       /* workers set up, waiting for `go` */
    atomic_int go;          /* set by the test: begin */
    atomic_int inside;      /* holders now */
    atomic_int most_inside; /* the most at once */
    atomic_int failures;    /* calls that returned another status than
                             * CR_OK */
    atomic_int cycles_done[LINE_WORKERS];
    line_cycle cycle[LINE_WORKERS][LINE_CYCLES];
} line_block;

/* Maps the block behind inherited descriptor `fd`; NULL on failure. */
static inline line_block *
line_block_attach(int fd)
{
    void *p = mmap(NULL, sizeof(line_block), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);

    return p == MAP_FAILED ? NULL : p;
}

/* A holder comes in: counts it and keeps the most at once. */
static inline void
line_block_enter(line_block *b)
{
    int now = atomic_fetch_add(&b->inside, 1) + 1;
    int most = atomic_load(&b->most_inside);

    while (now > most &&
           !atomic_compare_exchange_weak(&b->most_inside, &most, now))
        ;
}

/* A holder goes. */
static inline void
line_block_leave(line_block *b)
{
    atomic_fetch_sub(&b->inside, 1);
}

#endif
