/* SPDX-License-Identifier: MIT */
/*
 * Counters shared by the barrier tests and coord_worker processes (a memfd
 * mapped by the test and, through an inherited descriptor, by the
 * workers): per round, how many parties arrived and left, the generation
 * they were told and the arrival indices they got; and the violations the
 * parties saw.
 */
#ifndef CR_TEST_COORD_BLOCK_H
#define CR_TEST_COORD_BLOCK_H

#include <stdatomic.h>
#include <stdint.h>

#define COORD_ROUNDS_MAX 64

typedef struct coord_block {
    atomic_int arrived[COORD_ROUNDS_MAX];    /* called await in round k */
    atomic_int left[COORD_ROUNDS_MAX];       /* returned from it */
    atomic_llong generation[COORD_ROUNDS_MAX]; /* the first told, + 1 */
    atomic_ullong indices[COORD_ROUNDS_MAX]; /* a bit per arrival index */
    atomic_int early;    /* returned before every party had arrived */
    atomic_int disagree; /* told another generation than the others */
    atomic_int twice;    /* an index given twice in a round */
    atomic_int finished; /* parties done with every round */
} coord_block;

/* A party arrives in round k (before its await). */
static inline void
coord_arrive(coord_block *b, int k)
{
    atomic_fetch_add(&b->arrived[k], 1);
}

/* A party left round k (its await returned CR_OK with generation g and
 * index i): checks that all `parties` had arrived, that the generation
 * agrees and the index is new. */
static inline void
coord_leave(coord_block *b, int k, int parties, int64_t g, int64_t i)
{
    long long want = 0;
    unsigned long long bit = 1ULL << (i & 63);

    if (atomic_load(&b->arrived[k]) < parties)
        atomic_fetch_add(&b->early, 1);
    if (!atomic_compare_exchange_strong(&b->generation[k], &want, g + 1) &&
        want != g + 1)
        atomic_fetch_add(&b->disagree, 1);
    if (i < 0 || i >= parties || (atomic_fetch_or(&b->indices[k], bit) & bit))
        atomic_fetch_add(&b->twice, 1);
    atomic_fetch_add(&b->left[k], 1);
}

#endif
