/* SPDX-License-Identifier: MIT */
/*
 * A separate process for the tests of the rate limiter, the barrier and
 * the lock condition, run by fork + exec:
 *   coord_worker rate URL NAME MS THREADS
 *       THREADS threads share one client and take one permit at a time
 *       from the rate limiter NAME (waiting for each at most until MS ms
 *       after the start) until MS ms have passed; prints the number of
 *       permits granted and a newline.
 *   coord_worker barrier-rounds URL NAME PARTIES ROUNDS FD
 *       ROUNDS times: arrive at the barrier NAME of PARTIES parties (count
 *       itself in the coord_block mapped from descriptor FD), await it
 *       without a limit, and check what it was told (coord_leave).
 *   coord_worker barrier-wait URL NAME PARTIES WATCHDOG_MS
 *       with a client whose leases last WATCHDOG_MS, await the barrier
 *       without a limit (to be killed meanwhile), then print the status and
 *       a newline.
 *   coord_worker produce URL LOCK FIRST COUNT CAPACITY
 *       the bounded buffer LOCK:items of CAPACITY items, guarded by the
 *       lock LOCK with the conditions not-full and not-empty: puts the
 *       items FIRST..FIRST+COUNT-1, each once there is room.
 *   coord_worker consume URL LOCK TOTAL CAPACITY
 *       takes items from that buffer until TOTAL were taken by all
 *       consumers together (the counter LOCK:taken), printing each item
 *       taken on a line of its own.
 *   coord_worker condition-wait URL LOCK WATCHDOG_MS
 *       with a client whose leases last WATCHDOG_MS, takes the lock LOCK,
 *       prints "waiting" and awaits its condition not-empty without a
 *       limit (to be killed meanwhile).
 * Exits 0 on success, 1 with a message on stderr otherwise (a producer or
 * consumer that waits 20 s for a signal that never comes among them).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "coord_block.h"
#include "credisson.h"
#include "worker_common.h"

/* ------------------------------------------------------------------ rate */

typedef struct rate_run {
    cr_rate_limiter *limiter;
    long long until; /* monotonic ms */
    atomic_long granted;
} rate_run;

static void *
rate_thread(void *arg)
{
    rate_run *r = arg;
    long long now;

    while ((now = mono_ms()) < r->until) {
        cr_status rc = cr_rate_limiter_try_acquire(r->limiter, 1,
                                                   r->until - now);

        if (rc == CR_OK)
            atomic_fetch_add(&r->granted, 1);
        else if (rc != CR_BUSY)
            die("cr_rate_limiter_try_acquire", rc);
    }
    return NULL;
}

/* The "rate" mode. */
static int
run_rate(cr_client *client, const char *name, long ms, int threads)
{
    pthread_t tids[64];
    rate_run r;
    char line[32];
    cr_status rc;
    int i;

    if (threads < 1 || threads > 64)
        return 2;
    memset(&r, 0, sizeof(r));
    if ((rc = cr_rate_limiter_new(client, name, &r.limiter)) != CR_OK)
        die("cr_rate_limiter_new", rc);
    r.until = mono_ms() + ms;
    for (i = 0; i < threads; i++)
        if (pthread_create(&tids[i], NULL, rate_thread, &r) != 0)
            return 1;
    for (i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    cr_rate_limiter_free(r.limiter);
    snprintf(line, sizeof(line), "%ld\n", atomic_load(&r.granted));
    say(line);
    return 0;
}

/* ------------------------------------------------------------- barrier */

/* The "barrier-rounds" mode. */
static int
run_barrier_rounds(cr_client *client, const char *name, int parties,
                   int rounds, int fd)
{
    coord_block *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
                          MAP_SHARED, fd, 0);
    cr_barrier *bar = NULL;
    cr_status rc;
    int k;

    if (b == MAP_FAILED || rounds > COORD_ROUNDS_MAX) {
        perror("coord_worker: mmap");
        return 1;
    }
    if ((rc = cr_barrier_new(client, name, parties, &bar)) != CR_OK)
        die("cr_barrier_new", rc);
    for (k = 0; k < rounds; k++) {
        int64_t g = -1, i = -1;

        coord_arrive(b, k);
        if ((rc = cr_barrier_await(bar, CR_WAIT_FOREVER, &g, &i)) != CR_OK)
            die("cr_barrier_await", rc);
        coord_leave(b, k, parties, g, i);
    }
    atomic_fetch_add(&b->finished, 1);
    cr_barrier_free(bar);
    munmap(b, sizeof(*b));
    return 0;
}

/* The "barrier-wait" mode. */
static int
run_barrier_wait(const char *url, const char *name, int parties,
                 long watchdog_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_barrier *bar = NULL;
    char line[32];
    cr_status rc;

    o.url = url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    if ((rc = cr_barrier_new(client, name, parties, &bar)) != CR_OK)
        die("cr_barrier_new", rc);
    rc = cr_barrier_await(bar, CR_WAIT_FOREVER, NULL, NULL);
    snprintf(line, sizeof(line), "%d\n", (int)rc);
    cr_barrier_free(bar);
    cr_client_free(client);
    say(line);
    return 0;
}

/* ------------------------------------------------------ bounded buffer */

/* A command on the test server whose integer (or number string) answer
 * is returned; exits on failure. */
static long long
redis_num(redisContext *r, const char *fmt, const char *key, const char *arg)
{
    redisReply *rep = redisCommand(r, fmt, key, arg);
    long long v = 0;

    if (rep == NULL || rep->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "coord_worker: %s failed\n", fmt);
        exit(1);
    }
    if (rep->type == REDIS_REPLY_INTEGER)
        v = rep->integer;
    else if (rep->type == REDIS_REPLY_STRING)
        v = atoll(rep->str);
    freeReplyObject(rep);
    return v;
}

/* What a producer or consumer works with. */
typedef struct buffer {
    redisContext *redis;
    cr_lock *lock;
    cr_lock_condition *not_full, *not_empty;
    char items[128], taken[128];
    long long capacity;
} buffer;

/* Opens the buffer of lock `name` on `url` (redis://127.0.0.1:PORT). */
static void
buffer_open(buffer *b, cr_client *client, const char *url, const char *name,
            long long capacity)
{
    int port = 0;
    cr_status rc;

    if (sscanf(url, "redis://127.0.0.1:%d", &port) != 1 ||
        (b->redis = redisConnect("127.0.0.1", port)) == NULL ||
        b->redis->err != 0) {
        fprintf(stderr, "coord_worker: cannot reach %s\n", url);
        exit(1);
    }
    snprintf(b->items, sizeof(b->items), "%s:items", name);
    snprintf(b->taken, sizeof(b->taken), "%s:taken", name);
    b->capacity = capacity;
    if ((rc = cr_lock_new(client, name, &b->lock)) != CR_OK ||
        (rc = cr_lock_condition_new(b->lock, "not-full", &b->not_full)) !=
            CR_OK ||
        (rc = cr_lock_condition_new(b->lock, "not-empty", &b->not_empty)) !=
            CR_OK)
        die("opening the buffer", rc);
}

static void
buffer_close(buffer *b)
{
    cr_lock_condition_free(b->not_full);
    cr_lock_condition_free(b->not_empty);
    cr_lock_free(b->lock);
    redisFree(b->redis);
}

/* Awaits `cond` with the lock held; a wait of 20 s without a signal among
 * busy producers and consumers is a lost one. */
static void
buffer_await(cr_lock_condition *cond)
{
    cr_status rc = cr_lock_condition_await(cond, 20000);

    if (rc != CR_OK)
        die("cr_lock_condition_await", rc);
}

/* The "produce" mode. */
static int
run_produce(cr_client *client, const char *url, const char *name, int first,
            int count, long long capacity)
{
    buffer b;
    char item[32];
    cr_status rc;
    int k;

    buffer_open(&b, client, url, name, capacity);
    for (k = first; k < first + count; k++) {
        snprintf(item, sizeof(item), "%d", k);
        if ((rc = cr_lock_lock(b.lock, CR_LEASE_WATCHDOG)) != CR_OK)
            die("cr_lock_lock", rc);
        while (redis_num(b.redis, "LLEN %s", b.items, NULL) >= b.capacity)
            buffer_await(b.not_full);
        redis_num(b.redis, "RPUSH %s %s", b.items, item);
        if ((rc = cr_lock_condition_signal(b.not_empty, NULL)) != CR_OK)
            die("cr_lock_condition_signal", rc);
        if ((rc = cr_lock_unlock(b.lock)) != CR_OK)
            die("cr_lock_unlock", rc);
    }
    buffer_close(&b);
    return 0;
}

/* The "consume" mode. */
static int
run_consume(cr_client *client, const char *url, const char *name,
            long long total, long long capacity)
{
    buffer b;
    char line[48];
    cr_status rc;
    bool done = false;

    buffer_open(&b, client, url, name, capacity);
    while (!done) {
        redisReply *r;

        if ((rc = cr_lock_lock(b.lock, CR_LEASE_WATCHDOG)) != CR_OK)
            die("cr_lock_lock", rc);
        while (redis_num(b.redis, "LLEN %s", b.items, NULL) == 0 &&
               redis_num(b.redis, "GET %s", b.taken, NULL) < total)
            buffer_await(b.not_empty);
        r = redisCommand(b.redis, "LPOP %s", b.items);
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            snprintf(line, sizeof(line), "%s\n", r->str);
            say(line);
            if (redis_num(b.redis, "INCR %s", b.taken, NULL) == total &&
                (rc = cr_lock_condition_signal_all(b.not_empty, NULL)) !=
                    CR_OK)
                die("cr_lock_condition_signal_all", rc);
            if ((rc = cr_lock_condition_signal(b.not_full, NULL)) != CR_OK)
                die("cr_lock_condition_signal", rc);
        } else {
            done = true; /* all were taken */
        }
        if (r != NULL)
            freeReplyObject(r);
        if ((rc = cr_lock_unlock(b.lock)) != CR_OK)
            die("cr_lock_unlock", rc);
    }
    buffer_close(&b);
    return 0;
}

/* The "condition-wait" mode. */
static int
run_condition_wait(const char *url, const char *name, long watchdog_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_lock *lock = NULL;
    cr_lock_condition *cond = NULL;
    cr_status rc;

    o.url = url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    if ((rc = cr_client_new(&o, &client)) != CR_OK ||
        (rc = cr_lock_new(client, name, &lock)) != CR_OK ||
        (rc = cr_lock_condition_new(lock, "not-empty", &cond)) != CR_OK ||
        (rc = cr_lock_lock(lock, CR_LEASE_WATCHDOG)) != CR_OK)
        die("setting up", rc);
    say("waiting\n");
    rc = cr_lock_condition_await(cond, CR_WAIT_FOREVER);
    die("cr_lock_condition_await returned", rc);
    return 1;
}

int
main(int argc, char **argv)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_status rc;
    int ret;

    if (argc < 4) {
        fprintf(stderr, "usage: coord_worker rate|barrier-rounds|"
                "barrier-wait|produce|consume|condition-wait URL NAME ...\n");
        return 2;
    }
    if (strcmp(argv[1], "barrier-wait") == 0 && argc == 6)
        return run_barrier_wait(argv[2], argv[3], atoi(argv[4]),
                                atol(argv[5]));
    if (strcmp(argv[1], "condition-wait") == 0 && argc == 5)
        return run_condition_wait(argv[2], argv[3], atol(argv[4]));
    o.url = argv[2];
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    if (strcmp(argv[1], "rate") == 0 && argc == 6) {
        ret = run_rate(client, argv[3], atol(argv[4]), atoi(argv[5]));
    } else if (strcmp(argv[1], "produce") == 0 && argc == 7) {
        ret = run_produce(client, argv[2], argv[3], atoi(argv[4]),
                          atoi(argv[5]), atoll(argv[6]));
    } else if (strcmp(argv[1], "consume") == 0 && argc == 6) {
        ret = run_consume(client, argv[2], argv[3], atoll(argv[4]),
                          atoll(argv[5]));
    } else if (strcmp(argv[1], "barrier-rounds") == 0 && argc == 7) {
        ret = run_barrier_rounds(client, argv[3], atoi(argv[4]),
                                 atoi(argv[5]), atoi(argv[6]));
    } else {
        fprintf(stderr, "coord_worker: unknown mode or arguments: %s\n",
                argv[1]);
        ret = 2;
    }
    cr_client_free(client);
    return ret;
}
