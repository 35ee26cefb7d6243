/* SPDX-License-Identifier: MIT */
/*
 * A separate process for the lock tests, run by fork + exec:
 *   lock_worker count URL NAME ITERATIONS COUNTER_KEY
 *       lock NAME, read COUNTER_KEY, write it back plus one, unlock; repeat.
 *       The read-then-write is not atomic: only the lock keeps it exact.
 *   lock_worker hold URL NAME WATCHDOG_MS
 *       take NAME with the watchdog, write "L\n" to stdout, then wait to be
 *       killed.
 *   lock_worker fenced URL NAME LEASE_MS GUARD_KEY
 *       take the fenced lock NAME for LEASE_MS, write "T <token>\n", sleep
 *       four leases (the test pauses it meanwhile with SIGSTOP), then try a
 *       write to the guarded resource GUARD_KEY, which keeps the highest
 *       token seen and refuses older ones: write "W <1|0>\n", then unlock
 *       and write "U <cr_status>\n".
 * Exits 0 on success, 1 with a message on stderr otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "credisson.h"
#include "fencing_guard.h"
#include "worker_common.h"

/* Increments `key` by GET then SET on `c`. */
static void
bump(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    long long v;

    if (r == NULL) {
        fprintf(stderr, "lock_worker: GET failed\n");
        exit(1);
    }
    v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    r = redisCommand(c, "SET %s %lld", key, v + 1);
    if (r == NULL) {
        fprintf(stderr, "lock_worker: SET failed\n");
        exit(1);
    }
    freeReplyObject(r);
}

int
main(int argc, char **argv)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_lock *lock = NULL;
    cr_status rc;

    if (argc < 5) {
        fprintf(stderr, "usage: lock_worker count|hold URL NAME ...\n");
        return 2;
    }
    o.url = argv[2];
    if (strcmp(argv[1], "hold") == 0)
        o.lock_watchdog_timeout_ms = atoll(argv[4]);
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    if (strcmp(argv[1], "fenced") == 0)
        rc = cr_fenced_lock_new(client, argv[3], &lock);
    else
        rc = cr_lock_new(client, argv[3], &lock);
    if (rc != CR_OK)
        die("cr_lock_new", rc);
    if (strcmp(argv[1], "hold") == 0) {
        if ((rc = cr_lock_lock(lock, CR_LEASE_WATCHDOG)) != CR_OK)
            die("cr_lock_lock", rc);
        if (write(1, "L\n", 2) != 2)
            return 1;
        for (;;)
            pause();
    } else if (strcmp(argv[1], "fenced") == 0 && argc == 6) {
        const char *port = strrchr(argv[2], ':');
        redisContext *c = redisConnect("127.0.0.1", port != NULL ? atoi(port + 1) : 6379);
        long long lease = atoll(argv[4]);
        int64_t token = 0;
        redisReply *r;

        if ((rc = cr_fenced_lock_lock_and_get_token(lock, lease, &token)) != CR_OK)
            die("cr_fenced_lock_lock_and_get_token", rc);
        printf("T %lld\n", (long long)token);
        fflush(stdout);
        usleep((useconds_t)lease * 4000);
        r = c != NULL ? redisCommand(c, "EVAL %s 1 %s %lld", GUARDED_WRITE,
                                     argv[5], (long long)token) : NULL;
        printf("W %lld\n", r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1);
        if (r != NULL)
            freeReplyObject(r);
        printf("U %d\n", (int)cr_lock_unlock(lock));
        fflush(stdout);
        redisFree(c);
    } else if (strcmp(argv[1], "count") == 0 && argc == 6) {
        long n = atol(argv[4]), i;
        const char *port = strrchr(argv[2], ':');
        redisContext *c = redisConnect("127.0.0.1", port != NULL ? atoi(port + 1) : 6379);
        if (c == NULL || c->err) {
            fprintf(stderr, "lock_worker: cannot connect\n");
            return 1;
        }
        for (i = 0; i < n; i++) {
            if ((rc = cr_lock_lock(lock, CR_LEASE_WATCHDOG)) != CR_OK)
                die("cr_lock_lock", rc);
            bump(c, argv[5]);
            if ((rc = cr_lock_unlock(lock)) != CR_OK)
                die("cr_lock_unlock", rc);
        }
        redisFree(c);
    } else {
        fprintf(stderr, "lock_worker: unknown mode %s\n", argv[1]);
        return 2;
    }
    cr_lock_free(lock);
    cr_client_free(client);
    return 0;
}
