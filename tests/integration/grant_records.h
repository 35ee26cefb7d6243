/* SPDX-License-Identifier: MIT */
/*
 * What the rate limiter's tests (blocking and asynchronous) share to judge
 * grants on the records the script wrote: a thread that collects every
 * record of a zset (member and grant time) while the run goes on, and the
 * most permits any sliding window of one interval holds; and taking every
 * permit a limiter has left. Include after
 * lock_common.h (test_redis).
 */
#ifndef CR_TEST_GRANT_RECORDS_H
#define CR_TEST_GRANT_RECORDS_H

#include <pthread.h>
#include <stdatomic.h>

/* A grant record as read from the zset: the member's bytes and score. */
typedef struct grant_record {
    char member[32];
    size_t len;
    long long score;
} grant_record;

/* What a record collector has seen: every member once. */
typedef struct collector {
    char key[128];
    grant_record *v;
    size_t n, cap;
    atomic_bool stop;
    pthread_t thread;
} collector;

/* Adds the records of one ZRANGE WITHSCORES reply not seen before. */
static void
collect(collector *c, const redisReply *r)
{
    size_t i, k;

    for (i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *m = r->element[i];
        bool seen = false;

        for (k = c->n; k > 0 && !seen; k--)
            seen = c->v[k - 1].len == m->len &&
                   memcmp(c->v[k - 1].member, m->str, m->len) == 0;
        if (seen || m->len > sizeof(c->v[0].member))
            continue;
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 256;
            c->v = realloc(c->v, c->cap * sizeof(*c->v));
            assert_non_null(c->v);
        }
        memcpy(c->v[c->n].member, m->str, m->len);
        c->v[c->n].len = m->len;
        c->v[c->n].score = atoll(r->element[i + 1]->str);
        c->n++;
    }
}

/* The collector's thread: reads the whole zset every 50 ms (a record
 * lives one interval before a call may reclaim it). */
static void *
collector_run(void *arg)
{
    collector *c = arg;
    redisContext *rc = cr_test_redis_connect(&test_redis);
    bool last = false;

    assert_non_null(rc);
    while (!last) {
        redisReply *r;

        last = atomic_load(&c->stop);
        r = redisCommand(rc, "ZRANGE %s 0 -1 WITHSCORES", c->key);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY)
            collect(c, r);
        if (r != NULL)
            freeReplyObject(r);
        if (!last)
            usleep(50000);
    }
    redisFree(rc);
    return NULL;
}

static int
by_score(const void *a, const void *b)
{
    const grant_record *x = a, *y = b;

    return x->score < y->score ? -1 : x->score > y->score;
}

/* The permits of a record (bytes 17..20, little-endian). */
static unsigned
permits_of(const grant_record *r)
{
    const unsigned char *p = (const unsigned char *)r->member;

    assert_int_equal(r->len, 21);
    assert_int_equal(p[0], 16);
    return p[17] | p[18] << 8 | p[19] << 16 | (unsigned)p[20] << 24;
}

/* The most permits granted in any window [s, s + interval) that starts at
 * a grant: the sliding-window bound Redisson promises. */
static unsigned
most_in_a_window(grant_record *v, size_t n, long long interval)
{
    unsigned most = 0;
    size_t i, j;

    qsort(v, n, sizeof(*v), by_score);
    for (i = 0; i < n; i++) {
        unsigned sum = 0;

        for (j = i; j < n && v[j].score < v[i].score + interval; j++)
            sum += permits_of(&v[j]);
        if (sum > most)
            most = sum;
    }
    return most;
}

/* Takes one permit at a time from `l` without waiting until refused;
 * how many. */
static inline int
take_all(cr_rate_limiter *l)
{
    int n = 0;
    cr_status rc;

    while ((rc = cr_rate_limiter_try_acquire(l, 1, 0)) == CR_OK)
        n++;
    assert_int_equal(rc, CR_BUSY);
    return n;
}

#endif
