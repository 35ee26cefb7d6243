/* SPDX-License-Identifier: MIT */
/*
 * The credisson demo: several worker processes add to one counter kept in a
 * plain file, each read-modify-write under one RLock, then one process holds
 * the lock far longer than its lease while the watchdog keeps it alive.
 *
 *   counter_demo REDIS_URL [WORKERS] [ROUNDS]
 *
 * The counter file is read and written without any file locking: only the
 * Redis lock keeps the final count exact.
 */
/* POSIX.1-2008 (mkstemp, nanosleep): the examples build with -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <credisson.h>

#define LOCK_NAME "demo:counter"

/* Sleeps `us` microseconds (usleep is not in POSIX.1-2008). */
static void
sleep_us(int64_t us)
{
    struct timespec ts = { (time_t)(us / 1000000),
                           (long)(us % 1000000) * 1000 };

    nanosleep(&ts, NULL);
}

/* Reads the number in `path` (0 when missing). */
static long
read_counter(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = 0;

    if (f != NULL) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

/* Writes `v` into `path`. */
static void
write_counter(const char *path, long v)
{
    FILE *f = fopen(path, "w");

    if (f != NULL) {
        fprintf(f, "%ld\n", v);
        fclose(f);
    }
}

/* Opens a client or exits with the reason. */
static cr_client *
connect_or_die(const char *url, int64_t watchdog_ms)
{
    cr_client_options opts = CR_CLIENT_OPTIONS_INIT;
    cr_client *client;
    cr_status rc;

    opts.url = url;
    opts.lock_watchdog_timeout_ms = watchdog_ms;
    rc = cr_client_new(&opts, &client);
    if (rc != CR_OK) {
        fprintf(stderr, "cannot connect to %s: %s (%s)\n", url, cr_strerror(rc),
                cr_last_error());
        exit(1);
    }
    return client;
}

/* One worker process: its own client (never one inherited across fork). */
static int
worker(const char *url, int id, int rounds, const char *path)
{
    cr_client *client = connect_or_die(url, 0);
    cr_lock *lock;
    int i;

    if (cr_lock_new(client, LOCK_NAME, &lock) != CR_OK)
        return 1;
    for (i = 0; i < rounds; i++) {
        long v;

        if (cr_lock_lock(lock, CR_LEASE_WATCHDOG) != CR_OK) {
            fprintf(stderr, "worker %d: %s\n", id, cr_last_error());
            return 1;
        }
        v = read_counter(path);
        if (i % (rounds / 4 > 0 ? rounds / 4 : 1) == 0)
            printf("worker %d holds %s as %s:%lld, counter %ld -> %ld\n", id,
                   LOCK_NAME, cr_client_id(client), (long long)cr_thread_id(),
                   v, v + 1);
        fflush(stdout);
        sleep_us(200); /* make a missing lock show as a wrong count */
        write_counter(path, v + 1);
        if (cr_lock_unlock(lock) != CR_OK) {
            fprintf(stderr, "worker %d: unlock: %s\n", id, cr_last_error());
            return 1;
        }
    }
    cr_lock_free(lock);
    cr_client_free(client);
    return 0;
}

/* Holds the lock for 3 watchdog timeouts and shows the lease being renewed. */
static int
long_hold(const char *url)
{
    const int64_t watchdog = 1500;
    cr_client *client = connect_or_die(url, watchdog);
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_lock *lock;
    int64_t ttl = 0;
    int i;

    if (cr_lock_new(client, LOCK_NAME, &lock) != CR_OK ||
        cr_lock_lock(lock, CR_LEASE_WATCHDOG) != CR_OK)
        return 1;
    printf("\nholding %s with a %lld ms watchdog lease for 4.5 s:\n", LOCK_NAME,
           (long long)watchdog);
    for (i = 0; i < 9; i++) {
        cr_lock_remain_time_to_live(lock, &ttl);
        printf("  t=%4d ms  remaining lease %5lld ms\n", i * 500, (long long)ttl);
        sleep_us(500 * 1000);
    }
    cr_client_stats_get(client, &st);
    printf("still held after 3 leases; the watchdog renewed it %llu times\n",
           (unsigned long long)st.renewals_sent);
    if (cr_lock_unlock(lock) != CR_OK)
        return 1;
    cr_lock_free(lock);
    cr_client_free(client);
    return 0;
}

int
main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    int workers = argc > 2 ? atoi(argv[2]) : 4;
    int rounds = argc > 3 ? atoi(argv[3]) : 100;
    char path[] = "/tmp/credisson-demo-XXXXXX";
    int fd = mkstemp(path), i, failed = 0;
    long total;

    if (fd < 0 || workers < 1 || rounds < 1) {
        fprintf(stderr, "usage: counter_demo REDIS_URL [WORKERS] [ROUNDS]\n");
        return 2;
    }
    close(fd);
    write_counter(path, 0);
    printf("%d worker processes add %d each to a counter file under one lock\n",
           workers, rounds);
    fflush(stdout);
    for (i = 0; i < workers; i++) {
        pid_t pid = fork();

        if (pid == 0)
            _exit(worker(url, i + 1, rounds, path));
        if (pid < 0)
            failed = 1;
    }
    for (i = 0; i < workers; i++) {
        int status;

        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    total = read_counter(path);
    unlink(path);
    printf("final count %ld, expected %ld: %s\n", total, (long)workers * rounds,
           total == (long)workers * rounds ? "exact" : "WRONG");
    if (failed || total != (long)workers * rounds)
        return 1;
    return long_hold(url);
}
