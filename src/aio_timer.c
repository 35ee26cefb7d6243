/* SPDX-License-Identifier: MIT */
/*
 * The loop's timers (aio.h's cr__aio_after): a binary heap of cr__atimer
 * by due time, the earliest of which the application's loop is asked to
 * come back for (cr_loop's timer); and the work budget of one dispatch
 * (cr__aio_spend). The dispatch runs the timers that are due
 * (cr__aio_timeout, aio_loop.c).
 */
#include "config.h"

#include <stdlib.h>

#include "aio_internal.h"

static void
heap_swap(cr__aio *io, size_t a, size_t b)
{
    cr__atimer *t = io->heap[a];

    io->heap[a] = io->heap[b];
    io->heap[b] = t;
    io->heap[a]->index = a + 1;
    io->heap[b]->index = b + 1;
}

static void
heap_up(cr__aio *io, size_t i)
{
    while (i > 0 && io->heap[(i - 1) / 2]->due > io->heap[i]->due) {
        heap_swap(io, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void
heap_down(cr__aio *io, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;

        if (l < io->nheap && io->heap[l]->due < io->heap[m]->due)
            m = l;
        if (r < io->nheap && io->heap[r]->due < io->heap[m]->due)
            m = r;
        if (m == i)
            return;
        heap_swap(io, i, m);
        i = m;
    }
}

/* Sets the loop's timer for the earliest due timer, when it changed. */
void
cr__aio_arm(cr__aio *io)
{
    int64_t due = io->nheap > 0 ? io->heap[0]->due : -1, now;

    if (due == io->armed)
        return;
    io->armed = due;
    if (due < 0) {
        io->loop.timer(io->loop.data, -1);
        return;
    }
    now = cr__now_ms();
    io->loop.timer(io->loop.data, due > now ? due - now : 0);
}

void
cr__aio_cancel_timer(cr__aio *io, cr__atimer *t)
{
    size_t i;

    if (t->index == 0)
        return;
    i = t->index - 1;
    t->index = 0;
    if (i != io->nheap - 1) {
        io->heap[i] = io->heap[io->nheap - 1];
        io->heap[i]->index = i + 1;
        io->nheap--;
        heap_down(io, i);
        heap_up(io, i);
    } else {
        io->nheap--;
    }
    cr__aio_arm(io);
}

void
cr__aio_after(cr__aio *io, cr__atimer *t, int64_t ms, void (*fn)(void *ctx),
              void *ctx)
{
    cr__aio_cancel_timer(io, t);
    if (io->nheap == io->capheap) {
        size_t cap = io->capheap ? 2 * io->capheap : 64;
        cr__atimer **h = realloc(io->heap, cap * sizeof(*h));

        if (h == NULL) { /* no room: run it at the next turn of anything */
            ms = 0;
            return;
        }
        io->heap = h;
        io->capheap = cap;
    }
    t->due = cr__now_ms() + (ms > 0 ? ms : 0);
    t->fn = fn;
    t->ctx = ctx;
    io->heap[io->nheap++] = t;
    t->index = io->nheap;
    heap_up(io, io->nheap - 1);
    cr__aio_arm(io);
}

/* --------------------------------------------------------------- budget */

bool
cr__aio_spend(cr__aio *io)
{
    if (io->dispatching == 0)
        return true;
    if (io->budget <= 0)
        return false;
    io->budget--;
    return true;
}
