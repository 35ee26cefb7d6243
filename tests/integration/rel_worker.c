/* SPDX-License-Identifier: MIT */
/*
 * A separate process for the reliability tests, run by fork + exec. It
 * records its holds in the test's history (history.h), mapped from an
 * inherited descriptor, and talks to the test through its stdin and stdout:
 *
 *   rel_worker hold URL KIND NAME WATCHDOG_MS HIST_FD WORKER CMD_TIMEOUT_MS
 *       Take the lock NAME of kind KIND (lock, fenced, spin, nonreentrant,
 *       fair, write) with the watchdog, record the hold, and write "L\n".
 *       When the watchdog finds the hold lost, the lost callback writes
 *       "X\n". Then obey lines on stdin: "U" ends the recorded hold,
 *       unlocks and writes "U <cr_status>\n"; "Q" or the end of stdin
 *       marks the worker done in the history, frees everything and exits 0.
 *       The command and connect timeouts are CMD_TIMEOUT_MS, so that a cut
 *       link is found quickly.
 *
 * Exits 1 with a message on stderr when set-up fails, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credisson.h"
#include "credisson/rwlock.h"
#include "history.h"
#include "worker_common.h"

/* The lost-lease callback: tell the test at once. */
static void
on_lost(void *userdata, const char *name, int64_t thread_id)
{
    (void)userdata;
    (void)name;
    (void)thread_id;
    say("X\n");
}

/* Opens the lock NAME of kind KIND; a write lock keeps its rwlock in *rw. */
static cr_status
open_lock(cr_client *c, const char *kind, const char *name, cr_rwlock **rw,
          cr_lock **out)
{
    if (strcmp(kind, "lock") == 0)
        return cr_lock_new(c, name, out);
    if (strcmp(kind, "fenced") == 0)
        return cr_fenced_lock_new(c, name, out);
    if (strcmp(kind, "spin") == 0)
        return cr_spin_lock_new(c, name, out);
    if (strcmp(kind, "nonreentrant") == 0)
        return cr_non_reentrant_lock_new(c, name, out);
    if (strcmp(kind, "fair") == 0)
        return cr_fair_lock_new(c, name, out);
    if (strcmp(kind, "write") == 0) {
        cr_status rc = cr_rwlock_new(c, name, rw);

        if (rc == CR_OK)
            *out = cr_rwlock_write_lock(*rw);
        return rc;
    }
    fprintf(stderr, "rel_worker: unknown kind %s\n", kind);
    exit(2);
}

/* The "hold" mode. */
static int
run_hold(cr_lock *lock, cr_hist *h, int worker)
{
    char line[16], msg[32];
    cr_status rc;
    long ev;

    if ((rc = cr_lock_set_lost_callback(lock, on_lost, NULL)) != CR_OK)
        die("cr_lock_set_lost_callback", rc);
    if ((rc = cr_lock_lock(lock, CR_LEASE_WATCHDOG)) != CR_OK)
        die("cr_lock_lock", rc);
    ev = cr_hist_begin(h, worker);
    say("L\n");
    while (fgets(line, sizeof(line), stdin) != NULL) {
        if (line[0] == 'U') {
            cr_hist_end(h, ev);
            rc = cr_lock_unlock(lock);
            snprintf(msg, sizeof(msg), "U %d\n", (int)rc);
            say(msg);
        } else if (line[0] == 'Q') {
            break;
        }
    }
    cr_hist_done(h, worker);
    return 0;
}

int
main(int argc, char **argv)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_rwlock *rw = NULL;
    cr_lock *lock = NULL;
    cr_hist *h;
    cr_status rc;
    int worker, ret;

    if (argc != 9 || strcmp(argv[1], "hold") != 0) {
        fprintf(stderr, "usage: rel_worker hold URL KIND NAME WATCHDOG_MS "
                        "HIST_FD WORKER CMD_TIMEOUT_MS\n");
        return 2;
    }
    h = cr_hist_attach(atoi(argv[6]));
    if (h == NULL) {
        fprintf(stderr, "rel_worker: cannot map the history\n");
        return 1;
    }
    worker = atoi(argv[7]);
    o.url = argv[2];
    o.lock_watchdog_timeout_ms = atoll(argv[5]);
    o.command_timeout_ms = atoll(argv[8]);
    o.connect_timeout_ms = atoll(argv[8]);
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    if ((rc = open_lock(client, argv[3], argv[4], &rw, &lock)) != CR_OK)
        die("open the lock", rc);
    ret = run_hold(lock, h, worker);
    if (rw != NULL)
        cr_rwlock_free(rw);
    else
        cr_lock_free(lock);
    cr_client_free(client);
    cr_hist_free(h);
    return ret;
}
