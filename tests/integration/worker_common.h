/* SPDX-License-Identifier: MIT */
/*
 * What the helper programs that the integration tests run as separate
 * processes (lock_worker, fair_worker, sync_worker, coord_worker,
 * rel_worker, failover_worker) share: dying with the library's status and
 * detail, a line to the test in one write, and the monotonic clock.
 */
#ifndef CR_TEST_WORKER_COMMON_H
#define CR_TEST_WORKER_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "credisson.h"

/* Prints what failed ("<program>: <what>: <status> (<detail>)") and exits
 * with 1. */
static inline void
die(const char *what, cr_status rc)
{
    fprintf(stderr, "%s: %s: %s (%s)\n", program_invocation_short_name, what,
            cr_strerror(rc), cr_last_error());
    exit(1);
}

/* Writes a whole short message to stdout with one write(2), which is safe
 * on the library's threads too (no stdio lock); exits with 1 when it
 * cannot. */
static inline void
say(const char *msg)
{
    size_t n = strlen(msg);

    if (write(1, msg, n) != (ssize_t)n)
        exit(1);
}

/* Monotonic milliseconds, comparable between processes of one machine. */
static inline long long
mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
