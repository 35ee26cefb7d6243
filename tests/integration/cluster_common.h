/* SPDX-License-Identifier: MIT */
/*
 * What the Redis Cluster tests (test_cluster, test_coord_cluster) share:
 * one cluster of three masters for the whole file, with CLUSTER_REPLICAS
 * replicas each (defined before this is included), its group fixture, and
 * time bounds scaled under valgrind.
 */
#ifndef CR_TEST_CLUSTER_COMMON_H
#define CR_TEST_CLUSTER_COMMON_H

#include <stdint.h>
#include <stdlib.h>

#include "redis_cluster.h"

#ifndef CLUSTER_REPLICAS
#error "define CLUSTER_REPLICAS before including cluster_common.h"
#endif

static cr_test_cluster cl;

/* A time bound of `ms`, scaled under valgrind (cr_test_slow). */
static inline int64_t
slow(int64_t ms)
{
    return cr_test_slow(ms);
}

/* Group setup: the cluster for every test of the file; skips the whole
 * program (exit 77) when redis-server is missing. */
static inline int
cluster_up(void **state)
{
    int rc = cr_test_cluster_start(&cl, 3, CLUSTER_REPLICAS, slow(60000));

    (void)state;
    if (rc == CR_TEST_SKIP)
        exit(CR_TEST_SKIP);
    return rc;
}

static inline int
cluster_down(void **state)
{
    (void)state;
    cr_test_cluster_destroy(&cl);
    return 0;
}

#endif
