/* SPDX-License-Identifier: MIT */
/*
 * A block of counters shared by test processes and threads (a memfd mapped
 * by the test and, through an inherited descriptor, by sync_worker): how
 * many are inside a guarded section now, the most ever seen inside at once,
 * how many entries there were, and how many workers finished.
 */
#ifndef CR_TEST_SYNC_BLOCK_H
#define CR_TEST_SYNC_BLOCK_H

#include <stdatomic.h>

typedef struct sync_block {
    atomic_int inside;
    atomic_int most;
    atomic_int entries;
    atomic_int finished;
} sync_block;

/* Counts the caller in and raises `most` if needed. */
static inline void
sync_block_enter(sync_block *b)
{
    int now = atomic_fetch_add(&b->inside, 1) + 1;
    int most = atomic_load(&b->most);

    while (now > most && !atomic_compare_exchange_weak(&b->most, &most, now))
        ;
    atomic_fetch_add(&b->entries, 1);
}

/* Counts the caller out. */
static inline void
sync_block_leave(sync_block *b)
{
    atomic_fetch_sub(&b->inside, 1);
}

#endif
