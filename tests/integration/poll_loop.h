/* SPDX-License-Identifier: MIT */
/*
 * A loop of one's own for the asynchronous API's tests and benchmark:
 * poll() over what cr_async_fds gives, then cr_async_io / cr_async_timeout.
 * The cr_loop functions do nothing: cr_async_fds says it all each turn.
 */
#ifndef CR_TEST_POLL_LOOP_H
#define CR_TEST_POLL_LOOP_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "credisson.h"

static inline void
poll_loop_watch(void *data, int fd, int events)
{
    (void)data;
    (void)fd;
    (void)events;
}

static inline void
poll_loop_timer(void *data, int64_t ms)
{
    (void)data;
    (void)ms;
}

static const cr_loop poll_loop = {poll_loop_watch, poll_loop_timer, NULL};

static inline int64_t
poll_loop_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The descriptors to poll now, up to max, into p; their count. *timeout_ms
 * gets the time until cr_async_timeout is due (-1: none). */
static inline int
poll_loop_prepare(cr_async *a, struct pollfd *p, int max, int64_t *timeout_ms)
{
    cr_async_fd fds[64];
    int n = cr_async_fds(a, fds, 64, timeout_ms), i;

    if (n > 64)
        n = 64;
    if (n > max)
        n = max;
    for (i = 0; i < n; i++) {
        p[i].fd = fds[i].fd;
        p[i].events = (short)((fds[i].events & CR_WATCH_READ ? POLLIN : 0) |
                              (fds[i].events & CR_WATCH_WRITE ? POLLOUT : 0));
        p[i].revents = 0;
    }
    return n;
}

/* What poll() saw on a descriptor, as cr_async_io's events. */
static inline int
poll_loop_events(short revents)
{
    return (revents & (POLLIN | POLLERR | POLLHUP) ? CR_WATCH_READ : 0) |
           (revents & POLLOUT ? CR_WATCH_WRITE : 0);
}

/* One turn of the loop, sleeping at most max_ms. */
static inline void
poll_loop_turn(cr_async *a, int64_t max_ms)
{
    struct pollfd p[64];
    int64_t timeout = -1;
    int n = poll_loop_prepare(a, p, 64, &timeout), i;

    if (timeout < 0 || timeout > max_ms)
        timeout = max_ms;
    if (poll(p, (nfds_t)n, (int)timeout) > 0) {
        for (i = 0; i < n; i++)
            if (p[i].revents != 0)
                cr_async_io(a, p[i].fd, poll_loop_events(p[i].revents));
    }
    cr_async_timeout(a); /* runs only what is due */
}

/* Turns the loop until done(arg) or max_ms passed; true when done. */
static inline bool
poll_loop_until(cr_async *a, bool (*done)(void *arg), void *arg,
                int64_t max_ms)
{
    int64_t end = poll_loop_now_ms() + max_ms;

    while (!done(arg)) {
        int64_t left = end - poll_loop_now_ms();

        if (left <= 0)
            return false;
        poll_loop_turn(a, left < 50 ? left : 50);
    }
    return true;
}

#endif
