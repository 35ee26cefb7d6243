/* SPDX-License-Identifier: MIT */
/*
 * A contender for the failover tests, run by fork + exec: it takes one lock
 * through Sentinel again and again, and records each hold in the test's
 * history (history.h), mapped from an inherited descriptor:
 *
 *   failover_worker URL NAME LEASE_MS HOLD_MS HIST_FD WORKER WATCHDOG_MS
 *
 * Each round waits up to 30 s for the lock NAME, with the watchdog
 * (LEASE_MS -1) or a lease of LEASE_MS, records the hold, bumps the guarded
 * counter, keeps the lock HOLD_MS (less when told it lost the lock), ends
 * the recorded hold and unlocks. When the lost callback fires, the hold
 * under way counts only until then (cr_hist_set_valid_until): the holder
 * was told, and a holder that is told stops its work.
 *
 * With HOLD_MS -1 it makes one round only, and keeps the lock until the
 * test says "U": it writes "L" once it holds, and "U <status>" with what
 * its unlock returned.
 *
 * It tells the test, one line per write(2) on stdout:
 *   "R"           its client is up (the sentinels told it the master)
 *   "F <n>"       its client has followed n master switches (polled every
 *                 5 ms from cr_client_stats.failovers)
 *   "X"           a hold was reported lost
 *   "E <status>"  a call ended in a status it did not expect (also counted
 *                 with cr_hist_error; the detail goes to stderr)
 * and stops after its current round on "Q" or the end of its stdin: it
 * marks itself done in the history, frees everything and exits 0.
 *
 * The command timeout is 1000 ms and the connect timeout 500 ms. Exits 1
 * with a message on stderr when set-up fails, 2 on bad usage.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "credisson.h"
#include "history.h"
#include "worker_common.h"

#define WAIT_MS 30000

static cr_hist *hist;
static atomic_long current = -1;    /* the recorded hold under way */
static atomic_llong lost_at_us;     /* when the last lost callback came */
static atomic_bool finished;        /* the monitor thread may end */

/* Sleeps `ms` milliseconds. */
static void
nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The lost callback (on the client's lease-clock thread): the hold under
 * way counts until now. A callback that comes before the hold was
 * recorded is found by the main thread through lost_at_us. */
static void
on_lost(void *userdata, const char *name, int64_t thread_id)
{
    int64_t now = cr_hist_now_us();
    long ev;

    (void)userdata;
    (void)name;
    (void)thread_id;
    atomic_store(&lost_at_us, (long long)now);
    ev = atomic_load(&current);
    if (ev >= 0)
        cr_hist_set_valid_until(hist, ev, now);
    say("X\n");
}

/* Reports a status the worker did not expect. */
static void
unexpected(const char *call, cr_status rc)
{
    char msg[32];

    fprintf(stderr, "failover_worker: %s: %s (%s)\n", call, cr_strerror(rc),
            cr_last_error());
    cr_hist_error(hist);
    snprintf(msg, sizeof(msg), "E %d\n", (int)rc);
    say(msg);
}

/* Whether the test asked this worker to stop ("Q" or the end of stdin);
 * never waits. */
static bool
stop_asked(void)
{
    struct pollfd p = {0, POLLIN, 0};
    char buf[16];
    ssize_t n;

    if (poll(&p, 1, 0) <= 0)
        return false;
    n = read(0, buf, sizeof(buf));
    return n <= 0 || memchr(buf, 'Q', (size_t)n) != NULL;
}

/* The monitor thread: tells the test each master switch its client
 * followed. */
static void *
monitor(void *arg)
{
    cr_client *c = arg;
    uint64_t seen = 0;

    while (!atomic_load(&finished)) {
        cr_client_stats st = CR_CLIENT_STATS_INIT;

        if (cr_client_stats_get(c, &st) == CR_OK && st.failovers > seen) {
            char msg[32];

            seen = st.failovers;
            snprintf(msg, sizeof(msg), "F %llu\n", (unsigned long long)seen);
            say(msg);
        }
        nap_ms(5);
    }
    return NULL;
}

/* Reads stdin until a line starting with `what` comes (true), or its end
 * (false). */
static bool
await_line(char what)
{
    char line[16];

    while (fgets(line, sizeof(line), stdin) != NULL)
        if (line[0] == what)
            return true;
    return false;
}

/* The one round of a bridge (HOLD_MS -1): hold until the test says "U". */
static void
bridge(cr_lock *lock, int64_t lease_ms, int worker)
{
    char msg[32];
    cr_status rc;
    long ev;

    atomic_store(&lost_at_us, 0);
    rc = cr_lock_try_lock(lock, WAIT_MS, lease_ms);
    if (rc != CR_OK) {
        unexpected("cr_lock_try_lock", rc);
        return;
    }
    ev = cr_hist_begin(hist, worker);
    atomic_store(&current, ev);
    cr_hist_bump(hist);
    say("L\n");
    if (!await_line('U'))
        return;
    atomic_store(&current, -1);
    cr_hist_end(hist, ev);
    rc = cr_lock_unlock(lock);
    snprintf(msg, sizeof(msg), "U %d\n", (int)rc);
    say(msg);
    await_line('Q');
}

/* One round: acquire, record, bump, hold, release. */
static void
round_once(cr_lock *lock, int64_t lease_ms, long hold_ms, int worker)
{
    cr_status rc;
    long ev, waited;
    long long t;

    atomic_store(&lost_at_us, 0);
    rc = cr_lock_try_lock(lock, WAIT_MS, lease_ms);
    if (rc == CR_BUSY)
        return;
    if (rc != CR_OK) {
        unexpected("cr_lock_try_lock", rc);
        nap_ms(50);
        return;
    }
    ev = cr_hist_begin(hist, worker);
    atomic_store(&current, ev);
    if ((t = atomic_load(&lost_at_us)) != 0)
        cr_hist_set_valid_until(hist, ev, t);
    cr_hist_bump(hist);
    for (waited = 0; waited < hold_ms && atomic_load(&lost_at_us) == 0;
         waited += 2)
        nap_ms(2);
    atomic_store(&current, -1);
    cr_hist_end(hist, ev);
    rc = cr_lock_unlock(lock);
    /* An unlock of a hold the client was told it lost says so. */
    if (rc != CR_OK && !(rc == CR_ELOST && atomic_load(&lost_at_us) != 0))
        unexpected("cr_lock_unlock", rc);
}

int
main(int argc, char **argv)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_lock *lock = NULL;
    pthread_t mon;
    cr_status rc;
    int64_t lease_ms;
    long hold_ms;
    int worker;

    if (argc != 8) {
        fprintf(stderr, "usage: failover_worker URL NAME LEASE_MS HOLD_MS "
                        "HIST_FD WORKER WATCHDOG_MS\n");
        return 2;
    }
    hist = cr_hist_attach(atoi(argv[5]));
    if (hist == NULL) {
        fprintf(stderr, "failover_worker: cannot map the history\n");
        return 1;
    }
    lease_ms = atoll(argv[3]);
    hold_ms = atol(argv[4]);
    worker = atoi(argv[6]);
    o.url = argv[1];
    o.lock_watchdog_timeout_ms = atoll(argv[7]);
    o.command_timeout_ms = 1000;
    o.connect_timeout_ms = 500;
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    if ((rc = cr_lock_new(client, argv[2], &lock)) != CR_OK)
        die("cr_lock_new", rc);
    if ((rc = cr_lock_set_lost_callback(lock, on_lost, NULL)) != CR_OK)
        die("cr_lock_set_lost_callback", rc);
    if (pthread_create(&mon, NULL, monitor, client) != 0)
        die("pthread_create", CR_ENOMEM);
    say("R\n");
    if (hold_ms < 0)
        bridge(lock, lease_ms, worker);
    else
        while (!stop_asked())
            round_once(lock, lease_ms, hold_ms, worker);
    cr_hist_done(hist, worker);
    atomic_store(&finished, true);
    pthread_join(mon, NULL);
    cr_lock_free(lock);
    cr_client_free(client);
    cr_hist_free(hist);
    return 0;
}
