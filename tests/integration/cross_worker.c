/* SPDX-License-Identifier: MIT */
/*
 * A C process of the cross-implementation tests (test_java_*.c), run by
 * fork + exec beside the Java peers. VERSION is the client's
 * redisson_version ("-": none); KIND is lock, fair or write.
 *   cross_worker count URL VERSION KIND NAME N KEY
 *       N times: take NAME, GET KEY, sleep a millisecond (so that holders
 *       who do not exclude each other overlap), SET KEY to it plus one,
 *       release. The read-then-write is not atomic: only the lock keeps it
 *       exact.
 *   cross_worker sem-count URL VERSION NAME CUR OVER MAX N
 *       N times: acquire one permit of semaphore NAME, INCR CUR and INCR
 *       OVER when CUR went above MAX, sleep a millisecond, DECR CUR,
 *       release the permit.
 *   cross_worker mix URL VERSION ROLE NAME KEY UNTIL PAUSE PERMITS
 *       until epoch ms UNTIL: take NAME as ROLE (lock, fair, write, read;
 *       sem: a permit of semaphore NAME), the turn inside of mix_inside.h
 *       (PERMITS: a semaphore's), give it back, sleep PAUSE ms; then
 *       writes "n=<turns> max=<longest wait, ms>" on stdout.
 *   cross_worker fair-wait URL VERSION NAME FAIR_WAIT_MS
 *       wait for fair lock NAME without limit (its queue deadline
 *       FAIR_WAIT_MS); the test sees it join the queue and kills it while
 *       it waits. Should it get the lock, it writes "G\n" and exits 3.
 * Exits 0 on success, 1 with a message on stderr otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "credisson.h"
#include "mix_inside.h"

/* The longest a turn is waited for before the worker fails. */
#define TURN_WAIT_MS 30000

/* Prints what failed and exits 1. */
static void
die(const char *what, cr_status rc)
{
    fprintf(stderr, "cross_worker: %s: %s (%s)\n", what, cr_strerror(rc),
            cr_last_error());
    exit(1);
}

/* A client of `url` for Java side `version` ("-": none), with a fair lock
 * queue deadline of fair_wait_ms (0: the default). */
static cr_client *
client_of(const char *url, const char *version, int64_t fair_wait_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    cr_status rc;

    o.url = url;
    o.redisson_version = strcmp(version, "-") == 0 ? NULL : version;
    if (fair_wait_ms > 0)
        o.fair_lock_wait_timeout_ms = fair_wait_ms;
    if ((rc = cr_client_new(&o, &c)) != CR_OK)
        die("cr_client_new", rc);
    return c;
}

/* A plain connection to `url` ("redis://host:port"). */
static redisContext *
plain(const char *url)
{
    char host[128];
    int port = 6379;
    redisContext *r;

    if (sscanf(url, "redis://%127[^:]:%d", host, &port) < 1) {
        fprintf(stderr, "cross_worker: cannot read %s\n", url);
        exit(1);
    }
    r = redisConnect(host, port);
    if (r == NULL || r->err) {
        fprintf(stderr, "cross_worker: cannot connect to %s\n", url);
        exit(1);
    }
    return r;
}

/* Runs a command and returns its integer (or the number a string holds). */
static long long
command_int(redisContext *r, const char *fmt, const char *key)
{
    redisReply *rep = redisCommand(r, fmt, key);
    long long v = 0;

    if (rep == NULL) {
        fprintf(stderr, "cross_worker: a command on %s failed\n", key);
        exit(1);
    }
    if (rep->type == REDIS_REPLY_INTEGER)
        v = rep->integer;
    else if (rep->type == REDIS_REPLY_STRING)
        v = atoll(rep->str);
    freeReplyObject(rep);
    return v;
}

/* The lock of `kind` named `name` on client c (rw keeps a read/write
 * lock's owner alive; "read" is its read lock, "write" its write lock). */
static cr_lock *
lock_of(cr_client *c, const char *kind, const char *name, cr_rwlock **rw)
{
    cr_lock *l = NULL;
    cr_status rc;

    *rw = NULL;
    if (strcmp(kind, "lock") == 0)
        rc = cr_lock_new(c, name, &l);
    else if (strcmp(kind, "fair") == 0)
        rc = cr_fair_lock_new(c, name, &l);
    else if ((rc = cr_rwlock_new(c, name, rw)) == CR_OK)
        l = strcmp(kind, "read") == 0 ? cr_rwlock_read_lock(*rw)
                                      : cr_rwlock_write_lock(*rw);
    if (rc != CR_OK)
        die("lock handle", rc);
    return l;
}

static int
count(char **argv)
{
    cr_client *c = client_of(argv[2], argv[3], 0);
    cr_rwlock *rw;
    cr_lock *l = lock_of(c, argv[4], argv[5], &rw);
    redisContext *r = plain(argv[2]);
    long n = atol(argv[6]), i;
    cr_status rc;

    for (i = 0; i < n; i++) {
        long long v;
        char buf[32];
        redisReply *rep;

        if ((rc = cr_lock_try_lock(l, TURN_WAIT_MS, CR_LEASE_WATCHDOG)) !=
            CR_OK)
            die("lock", rc);
        v = command_int(r, "GET %s", argv[7]);
        usleep(1000);
        snprintf(buf, sizeof(buf), "%lld", v + 1);
        rep = redisCommand(r, "SET %s %s", argv[7], buf);
        if (rep == NULL)
            die("SET", CR_EIO);
        freeReplyObject(rep);
        if ((rc = cr_lock_unlock(l)) != CR_OK)
            die("unlock", rc);
    }
    redisFree(r);
    if (rw != NULL)
        cr_rwlock_free(rw);
    else
        cr_lock_free(l);
    cr_client_free(c);
    return 0;
}

static int
sem_count(char **argv)
{
    cr_client *c = client_of(argv[2], argv[3], 0);
    cr_semaphore *s = NULL;
    redisContext *r = plain(argv[2]);
    long long max = atoll(argv[7]);
    long n = atol(argv[8]), i;
    cr_status rc;

    if ((rc = cr_semaphore_new(c, argv[4], &s)) != CR_OK)
        die("cr_semaphore_new", rc);
    for (i = 0; i < n; i++) {
        if ((rc = cr_semaphore_try_acquire(s, 1, TURN_WAIT_MS)) != CR_OK)
            die("acquire", rc);
        if (command_int(r, "INCR %s", argv[5]) > max)
            command_int(r, "INCR %s", argv[6]);
        usleep(1000);
        command_int(r, "DECR %s", argv[5]);
        if ((rc = cr_semaphore_release(s, 1)) != CR_OK)
            die("release", rc);
    }
    redisFree(r);
    cr_semaphore_free(s);
    cr_client_free(c);
    return 0;
}

/* Milliseconds of the wall clock (the test's and the Java peers'). */
static long long
epoch_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds of the monotonic clock. */
static long long
mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
mix(char **argv)
{
    cr_client *c = client_of(argv[2], argv[3], 0);
    const char *role = argv[4];
    bool sem = strcmp(role, "sem") == 0;
    cr_rwlock *rw = NULL;
    cr_lock *l = NULL;
    cr_semaphore *s = NULL;
    redisContext *r = plain(argv[2]);
    long long until = atoll(argv[7]), pause = atoll(argv[8]), max = 0;
    long n = 0;
    cr_status rc;

    if (sem && (rc = cr_semaphore_new(c, argv[5], &s)) != CR_OK)
        die("cr_semaphore_new", rc);
    if (!sem)
        l = lock_of(c, role, argv[5], &rw);
    while (epoch_ms() < until) {
        long long start = mono_ms(), waited;

        rc = sem ? cr_semaphore_try_acquire(s, 1, TURN_WAIT_MS)
                 : cr_lock_try_lock(l, TURN_WAIT_MS, CR_LEASE_WATCHDOG);
        if (rc != CR_OK)
            die("acquire", rc);
        if ((waited = mono_ms() - start) > max)
            max = waited;
        if (!mix_inside(r, role, argv[6], atoll(argv[9])))
            die("a command inside", CR_EIO);
        rc = sem ? cr_semaphore_release(s, 1) : cr_lock_unlock(l);
        if (rc != CR_OK)
            die("release", rc);
        n++;
        if (pause > 0)
            usleep((useconds_t)pause * 1000);
    }
    printf("n=%ld max=%lld\n", n, max);
    fflush(stdout);
    redisFree(r);
    if (s != NULL)
        cr_semaphore_free(s);
    else if (rw != NULL)
        cr_rwlock_free(rw);
    else
        cr_lock_free(l);
    cr_client_free(c);
    return 0;
}

static int
fair_wait(char **argv)
{
    cr_client *c = client_of(argv[2], argv[3], atoll(argv[5]));
    cr_lock *l = NULL;
    cr_status rc;

    if ((rc = cr_fair_lock_new(c, argv[4], &l)) != CR_OK)
        die("cr_fair_lock_new", rc);
    rc = cr_lock_lock(l, CR_LEASE_WATCHDOG);
    if (rc != CR_OK)
        die("lock", rc);
    printf("G\n");
    fflush(stdout);
    return 3;
}

int
main(int argc, char **argv)
{
    if (argc == 8 && strcmp(argv[1], "count") == 0)
        return count(argv);
    if (argc == 9 && strcmp(argv[1], "sem-count") == 0)
        return sem_count(argv);
    if (argc == 10 && strcmp(argv[1], "mix") == 0)
        return mix(argv);
    if (argc == 6 && strcmp(argv[1], "fair-wait") == 0)
        return fair_wait(argv);
    fprintf(stderr, "cross_worker: unknown mode or arguments\n");
    return 1;
}
