/* SPDX-License-Identifier: MIT */
/*
 * The credisson worker-pool demo: worker processes share a pool of a few
 * slots kept by a permit-expirable semaphore, and report to a coordinator
 * through a count-down latch.
 *
 *   worker_pool REDIS_URL [WORKERS] [SLOTS] [TASKS]
 *
 * Each worker takes a slot (a permit with a lease) for each of its tasks,
 * works, and gives the slot back by its id; at the end it counts the latch
 * down. One more process takes a slot and is killed while holding it: its
 * permit comes back by itself when its lease runs out, so the pool does not
 * shrink for good. The coordinator waits on the latch, and a shared counter
 * shows that no more than SLOTS tasks ever ran at once.
 *
 * Then a barrier with an expiry: one of its participants dies before
 * counting down, and the coordinator learns it (CR_EEXPIRED) when the
 * barrier's expiry runs out, instead of waiting forever.
 */
/* POSIX.1-2008 (clock_gettime, kill, nanosleep): the examples build with
 * -std=c11; glibc shows MAP_ANONYMOUS only with _DEFAULT_SOURCE. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <credisson.h>

#define POOL "demo:pool"
#define DONE "demo:pool:done"
#define BARRIER "demo:barrier"
#define LEASE_MS 1500

/* What the processes share: tasks running now and the most seen at once. */
typedef struct board {
    atomic_int running;
    atomic_int most;
} board;

/* Monotonic milliseconds. */
/* Sleeps `us` microseconds (usleep is not in POSIX.1-2008). */
static void
sleep_us(int64_t us)
{
    struct timespec ts = { (time_t)(us / 1000000),
                           (long)(us % 1000000) * 1000 };

    nanosleep(&ts, NULL);
}

static int64_t
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Opens a client or exits with the reason. */
static cr_client *
connect_or_die(const char *url)
{
    cr_client_options opts = CR_CLIENT_OPTIONS_INIT;
    cr_client *client;
    cr_status rc;

    opts.url = url;
    rc = cr_client_new(&opts, &client);
    if (rc != CR_OK) {
        fprintf(stderr, "cannot connect to %s: %s (%s)\n", url, cr_strerror(rc),
                cr_last_error());
        exit(1);
    }
    return client;
}

/* Prints a failed call and exits the process. */
static void
check(cr_status rc, const char *what)
{
    if (rc != CR_OK) {
        fprintf(stderr, "[%d] %s: %s (%s)\n", (int)getpid(), what,
                cr_strerror(rc), cr_last_error());
        exit(1);
    }
}

/* One worker process: its own client (never one inherited across fork). */
static int
worker(const char *url, int n, int tasks, board *b)
{
    cr_client *client = connect_or_die(url);
    cr_permit_semaphore *pool;
    cr_latch *done;
    int i;

    check(cr_permit_semaphore_new(client, POOL, &pool), "pool");
    check(cr_latch_new(client, DONE, &done), "latch");
    for (i = 0; i < tasks; i++) {
        char slot[CR_PERMIT_ID_LEN + 1];
        int now, most;

        check(cr_permit_semaphore_acquire(pool, LEASE_MS, slot), "acquire");
        now = atomic_fetch_add(&b->running, 1) + 1;
        most = atomic_load(&b->most);
        while (now > most && !atomic_compare_exchange_weak(&b->most, &most, now))
            ;
        printf("worker %d task %d in slot %.8s... (%d running)\n", n, i + 1,
               slot, now);
        fflush(stdout);
        sleep_us(100 * 1000); /* the task */
        atomic_fetch_sub(&b->running, 1);
        check(cr_permit_semaphore_release(pool, slot), "release");
    }
    check(cr_latch_count_down(done), "count_down");
    cr_latch_free(done);
    cr_permit_semaphore_free(pool);
    cr_client_free(client);
    return 0;
}

/* A worker that takes a slot and dies holding it. */
static void
crasher(const char *url)
{
    cr_client *client = connect_or_die(url);
    cr_permit_semaphore *pool;
    char slot[CR_PERMIT_ID_LEN + 1];

    check(cr_permit_semaphore_new(client, POOL, &pool), "pool");
    check(cr_permit_semaphore_acquire(pool, LEASE_MS, slot), "acquire");
    printf("crasher holds slot %.8s... and dies without releasing it\n", slot);
    fflush(stdout);
    kill(getpid(), SIGKILL);
}

/* A barrier participant: counts down after `delay_ms`, or dies first. */
static void
participant(const char *url, int n, int64_t delay_ms, int dies)
{
    cr_client *client = connect_or_die(url);
    cr_latch *barrier;
    cr_status rc;

    check(cr_latch_new(client, BARRIER, &barrier), "barrier");
    sleep_us(delay_ms * 1000);
    if (dies) {
        printf("participant %d dies before reaching the barrier\n", n);
        fflush(stdout);
        kill(getpid(), SIGKILL);
    }
    rc = cr_latch_count_down(barrier);
    printf("participant %d reached the barrier: %s\n", n, cr_strerror(rc));
    fflush(stdout);
    rc = cr_latch_await(barrier, CR_WAIT_FOREVER);
    printf("participant %d stops waiting: %s\n", n, cr_strerror(rc));
    fflush(stdout);
    cr_latch_free(barrier);
    cr_client_free(client);
    _exit(rc == CR_EEXPIRED ? 0 : 1);
}

/* Waits for every child; returns how many failed (a killed one does not
 * count). */
static int
reap(int n)
{
    int failed = 0;

    while (n-- > 0) {
        int status;

        if (wait(&status) < 0)
            return failed + 1;
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            failed++;
    }
    return failed;
}

int
main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    int workers = argc > 2 ? atoi(argv[2]) : 6;
    int slots = argc > 3 ? atoi(argv[3]) : 3;
    int tasks = argc > 4 ? atoi(argv[4]) : 3;
    board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_client *client;
    cr_permit_semaphore *pool;
    cr_latch *done, *barrier;
    int64_t start, crashed_at, deadline, available = -1;
    int i, failed;
    bool set = false;
    cr_status rc;

    if (b == MAP_FAILED || workers < 1 || slots < 1 || tasks < 1) {
        fprintf(stderr, "usage: worker_pool REDIS_URL [WORKERS] [SLOTS] [TASKS]\n");
        return 2;
    }
    client = connect_or_die(url);
    check(cr_permit_semaphore_new(client, POOL, &pool), "pool");
    check(cr_latch_new(client, DONE, &done), "latch");
    check(cr_latch_new(client, BARRIER, &barrier), "barrier");
    cr_permit_semaphore_delete(pool, NULL);
    cr_latch_delete(done, NULL);
    cr_latch_delete(barrier, NULL);
    check(cr_permit_semaphore_try_set_permits(pool, slots, &set), "set permits");
    check(cr_latch_try_set_count(done, workers, 0, &set), "set count");
    printf("%d workers x %d tasks share %d slots (leases of %d ms)\n", workers,
           tasks, slots, LEASE_MS);
    fflush(stdout);

    /* The crasher goes first, so the pool starts one slot short. */
    if (fork() == 0)
        crasher(url);
    crashed_at = now_ms();
    sleep_us(200 * 1000);
    start = now_ms();
    for (i = 0; i < workers; i++)
        if (fork() == 0)
            _exit(worker(url, i + 1, tasks, b));
    rc = cr_latch_await(done, 60000);
    failed = reap(workers + 1);
    printf("all workers done (%s) in %lld ms; at most %d tasks ran at once\n",
           cr_strerror(rc), (long long)(now_ms() - start),
           atomic_load(&b->most));
    /* The crashed worker's slot comes back once its lease has ended; the
     * count reclaims it. */
    deadline = crashed_at + LEASE_MS + 2000;
    while (cr_permit_semaphore_available_permits(pool, &available) == CR_OK &&
           available < slots && now_ms() < deadline)
        sleep_us(50 * 1000);
    printf("%lld of %d slots free, %lld ms after the crash: the crashed "
           "worker's slot came back when its lease ended\n",
           (long long)available, slots, (long long)(now_ms() - crashed_at));
    if (rc != CR_OK || failed != 0 || atomic_load(&b->most) > slots ||
        available != slots)
        return 1;

    /* A barrier of 3 with a 2 s expiry; participant 3 dies. */
    printf("\nbarrier of 3 that expires after 2000 ms; one participant dies:\n");
    fflush(stdout);
    check(cr_latch_try_set_count(barrier, 3, 2000, &set), "set barrier");
    for (i = 0; i < 3; i++)
        if (fork() == 0)
            participant(url, i + 1, 100 * (i + 1), i == 2);
    start = now_ms();
    rc = cr_latch_await(barrier, 10000);
    printf("coordinator stops waiting after %lld ms: %s\n",
           (long long)(now_ms() - start), cr_strerror(rc));
    failed = reap(3);
    cr_latch_free(barrier);
    cr_latch_free(done);
    cr_permit_semaphore_free(pool);
    cr_client_free(client);
    munmap(b, sizeof(*b));
    return rc == CR_EEXPIRED && failed == 0 ? 0 : 1;
}
