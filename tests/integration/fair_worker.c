/* SPDX-License-Identifier: MIT */
/*
 * A separate process for the fair lock and read/write lock tests, run by
 * fork + exec. Each mode makes its own client. Lines on stdout tell the
 * test what happened; "<owner>" is "<client id>:<thread id>".
 *   fair_worker fifo URL NAME LABEL ORDER_KEY
 *       print "<owner>\n", lock the fair lock NAME (watchdog), RPUSH LABEL
 *       onto the list ORDER_KEY, unlock, exit.
 *   fair_worker wait URL NAME FAIR_WAIT_MS
 *       with fair_lock_wait_timeout_ms = FAIR_WAIT_MS, print "<owner>\n",
 *       lock the fair lock NAME; if that ever returns, print "L\n" and wait
 *       to be killed (the test kills it while it waits in the queue).
 *   fair_worker count URL NAME ITERATIONS COUNTER_KEY
 *       lock the fair lock NAME, GET COUNTER_KEY and SET it plus one,
 *       unlock; repeat. Only the lock keeps the count exact.
 *   fair_worker write-count URL NAME ITERATIONS COUNTER_KEY
 *       the same under the write lock of the read/write lock NAME.
 *   fair_worker read-hold URL NAME WATCHDOG_MS
 *       with lock_watchdog_timeout_ms = WATCHDOG_MS, take the read lock of
 *       NAME (watchdog), print "<owner>\n" and wait to be killed.
 * Exits 0 on success, 1 with a message on stderr otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "credisson.h"
#include "worker_common.h"

/* Writes "<owner>\n" of the calling thread to stdout, unbuffered. */
static void
say_owner(cr_client *c)
{
    char line[128];
    int n = snprintf(line, sizeof(line), "%s:%lld\n", cr_client_id(c),
                     (long long)cr_thread_id());

    if (n <= 0 || write(1, line, (size_t)n) != n)
        exit(1);
}

/* A plain hiredis connection to the port at the end of `url`. */
static redisContext *
connect_to(const char *url)
{
    const char *port = strrchr(url, ':');
    redisContext *c = redisConnect("127.0.0.1", port != NULL ? atoi(port + 1) : 6379);

    if (c == NULL || c->err) {
        fprintf(stderr, "fair_worker: cannot connect\n");
        exit(1);
    }
    return c;
}

/* Runs one command on `c` and drops the reply; exits on failure. */
static void
run(redisContext *c, const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(c, fmt, a, b);

    if (r == NULL) {
        fprintf(stderr, "fair_worker: command failed\n");
        exit(1);
    }
    freeReplyObject(r);
}

/* Increments `key` by GET then SET on `c`. */
static void
bump(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    char v[24];

    if (r == NULL) {
        fprintf(stderr, "fair_worker: GET failed\n");
        exit(1);
    }
    snprintf(v, sizeof(v), "%lld",
             (r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0) + 1);
    freeReplyObject(r);
    run(c, "SET %s %s", key, v);
}

/* lock; bump; unlock, `n` times. */
static void
count(cr_lock *lock, const char *url, long n, const char *key)
{
    redisContext *c = connect_to(url);
    cr_status rc;
    long i;

    for (i = 0; i < n; i++) {
        if ((rc = cr_lock_lock(lock, CR_LEASE_WATCHDOG)) != CR_OK)
            die("cr_lock_lock", rc);
        bump(c, key);
        if ((rc = cr_lock_unlock(lock)) != CR_OK)
            die("cr_lock_unlock", rc);
    }
    redisFree(c);
}

int
main(int argc, char **argv)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_lock *lock = NULL;
    cr_rwlock *rw = NULL;
    const char *mode;
    bool rwmode;
    cr_status rc;

    if (argc < 5) {
        fprintf(stderr, "usage: fair_worker MODE URL NAME ...\n");
        return 2;
    }
    mode = argv[1];
    rwmode = strcmp(mode, "write-count") == 0 || strcmp(mode, "read-hold") == 0;
    o.url = argv[2];
    if (strcmp(mode, "wait") == 0)
        o.fair_lock_wait_timeout_ms = atoll(argv[4]);
    if (strcmp(mode, "read-hold") == 0)
        o.lock_watchdog_timeout_ms = atoll(argv[4]);
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    if (rwmode) {
        if ((rc = cr_rwlock_new(client, argv[3], &rw)) != CR_OK)
            die("cr_rwlock_new", rc);
        lock = strcmp(mode, "read-hold") == 0 ? cr_rwlock_read_lock(rw)
                                              : cr_rwlock_write_lock(rw);
    } else if ((rc = cr_fair_lock_new(client, argv[3], &lock)) != CR_OK) {
        die("cr_fair_lock_new", rc);
    }
    if (strcmp(mode, "fifo") == 0 && argc == 6) {
        redisContext *c = connect_to(argv[2]);

        say_owner(client);
        if ((rc = cr_lock_lock(lock, CR_LEASE_WATCHDOG)) != CR_OK)
            die("cr_lock_lock", rc);
        run(c, "RPUSH %s %s", argv[5], argv[4]);
        if ((rc = cr_lock_unlock(lock)) != CR_OK)
            die("cr_lock_unlock", rc);
        redisFree(c);
    } else if (strcmp(mode, "wait") == 0 || strcmp(mode, "read-hold") == 0) {
        if (strcmp(mode, "wait") == 0)
            say_owner(client);
        if ((rc = cr_lock_lock(lock, CR_LEASE_WATCHDOG)) != CR_OK)
            die("cr_lock_lock", rc);
        if (strcmp(mode, "read-hold") == 0)
            say_owner(client);
        else if (write(1, "L\n", 2) != 2)
            return 1;
        for (;;)
            pause();
    } else if ((strcmp(mode, "count") == 0 || strcmp(mode, "write-count") == 0) &&
               argc == 6) {
        count(lock, argv[2], atol(argv[4]), argv[5]);
    } else {
        fprintf(stderr, "fair_worker: bad mode or arguments: %s\n", mode);
        return 2;
    }
    if (rw != NULL)
        cr_rwlock_free(rw);
    else
        cr_lock_free(lock);
    cr_client_free(client);
    return 0;
}
