/* SPDX-License-Identifier: MIT */
/*
 * `credisson semaphore` (cmd_sem.h): one permit of an expirable semaphore
 * held while a command runs, its lease renewed (or, with --lease, looked
 * up) by a thread of the tool's own, since the library keeps no lease
 * clock for permits; and the semaphore's count set, added to or read.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cmd_sem.h"
#include "conn.h"
#include "obtain.h"
#include "run.h"
#include "util.h"

/* The margin a local deadline keeps before the end of a lease of lease_ms,
 * as the library's lease clock: 1 % for clock rates, and 2 ms. */
static int64_t lease_margin(int64_t lease_ms)
{
    return lease_ms / 100 + 2;
}

/* A permit taken for the run of a command, and the thread that renews its
 * lease (or, with --lease, looks it up) while the command runs. The
 * library keeps no lease clock for permits, so this job does: the local
 * deadline is the moment a successful renewal was sent plus the lease,
 * less lease_margin(). */
typedef struct permit_job {
    cr__cli *cli;
    cr_permit_semaphore *sem;
    int64_t lease_ms;
    bool renew;         /* no --lease: the lease is renewed while CMD runs */
    int64_t asked_ms;   /* when the acquisition was asked for */
    char id[CR_PERMIT_ID_LEN + 1];
    /* Shared with the renewing thread, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* on the monotonic clock */
    bool sync_made;     /* mu and cv exist */
    bool started;       /* the thread runs */
    bool stop;          /* the thread is asked to end */
    bool lost;          /* the permit was found gone */
    int64_t deadline;   /* the local deadline of the lease */
    pthread_t thread;
} permit_job;

/* The waiting thread's call: one permit with its lease. */
static cr_status permit_acquire(void *ctx)
{
    permit_job *j = ctx;

    j->asked_ms = cr__cli_now_ms();
    return cr_permit_semaphore_try_acquire(j->sem, j->cli->args->wait_ms,
                                           j->lease_ms, j->id);
}

/* Gives the permit back: a permit that had expired (reclaimed or not)
 * was lost. */
static cr_status permit_give_back(permit_job *j)
{
    cr_status rc = cr_permit_semaphore_release(j->sem, j->id);

    return rc == CR_ENOTOWNER ? CR_ELOST : rc;
}

/* The waiting thread's undo: gives back a permit granted as a signal
 * came. */
static void permit_undo(void *ctx)
{
    permit_give_back(ctx);
}

/* The renewing thread. Without --lease it extends the lease every third
 * of it, and a renewal that succeeds moves the deadline to its sending
 * time plus the lease, less the margin; a failed one leaves the deadline
 * where it was, so the command is stopped before the lease can end. With
 * --lease it only looks the permit up every CR__CLI_CHECK_MS. A permit found
 * not out any more is lost, and the main loop is told. */
static void *permit_main(void *arg)
{
    permit_job *j = arg;
    int64_t every = j->renew ? j->lease_ms / 3 : CR__CLI_CHECK_MS;
    int64_t next, sent, left;
    bool updated, gone;
    cr_status rc;

    if (every < 1)
        every = 1;
    pthread_mutex_lock(&j->mu);
    next = cr__cli_now_ms() + every;
    while (!cr__cli_sleep_until(&j->cv, &j->mu, &j->stop, next)) {
        pthread_mutex_unlock(&j->mu);
        sent = cr__cli_now_ms();
        updated = false;
        if (j->renew) {
            rc = cr_permit_semaphore_update_lease_time(j->sem, j->id,
                                                       j->lease_ms,
                                                       &updated);
            gone = rc == CR_OK && !updated;
        } else {
            rc = cr_permit_semaphore_get_lease_time(j->sem, j->id, &left);
            gone = rc == CR_ENOTOWNER;
        }
        pthread_mutex_lock(&j->mu);
        if (updated && sent + j->lease_ms - lease_margin(j->lease_ms) >
                           j->deadline)
            j->deadline = sent + j->lease_ms - lease_margin(j->lease_ms);
        if (gone) {
            j->lost = true;
            cr__cli_notify_lost(j->cli);
            break;
        }
        next = sent + every;
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Sets the permit's first deadline and starts its thread. The deadline
 * comes from the lease left as the server reckons it (on this host's
 * clock, which wrote the expiry), counted from a moment taken before
 * asking; when that cannot be read, from when the acquisition was asked
 * for, the earliest it can have been sent. Returns false when the thread
 * cannot be started. */
static bool permit_watch(permit_job *j)
{
    int64_t asked = cr__cli_now_ms(), left = 0;
    cr_status rc;

    rc = cr_permit_semaphore_get_lease_time(j->sem, j->id, &left);
    if (rc == CR_OK && left > 0)
        j->deadline = asked + left - lease_margin(j->lease_ms);
    else
        j->deadline = j->asked_ms + j->lease_ms - lease_margin(j->lease_ms);
    j->lost = rc == CR_ENOTOWNER;
    cr__cli_sync_init(&j->mu, &j->cv);
    j->sync_made = true;
    j->started = pthread_create(&j->thread, NULL, permit_main, j) == 0;
    return j->started;
}

/* Ends the permit's thread; it may first finish a call under way. */
static void permit_unwatch(permit_job *j)
{
    if (j->started) {
        pthread_mutex_lock(&j->mu);
        j->stop = true;
        pthread_cond_signal(&j->cv);
        pthread_mutex_unlock(&j->mu);
        pthread_join(j->thread, NULL);
        j->started = false;
    }
    if (j->sync_made) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        j->sync_made = false;
    }
}

/* Where the permit stands, from its thread's bookkeeping (no Redis). */
static cr_status permit_state(void *ctx, int64_t *deadline_ms)
{
    permit_job *j = ctx;
    cr_status rc = CR_OK;

    pthread_mutex_lock(&j->mu);
    if (j->lost)
        rc = CR_ELOST;
    else
        *deadline_ms = j->deadline;
    pthread_mutex_unlock(&j->mu);
    return rc;
}

/* Ends the permit's thread and gives the permit back once the command
 * has ended. */
static cr_status permit_release(void *ctx)
{
    permit_job *j = ctx;

    permit_unwatch(j);
    return permit_give_back(j);
}

/* The counts of a semaphore: available, and out (issued, not expired). */
typedef struct counts {
    int64_t available, out;
} counts;

/* Reads the counts, each after expired permits are taken back. */
static cr_status read_counts(cr_permit_semaphore *sem, counts *c)
{
    cr_status rc = cr_permit_semaphore_acquired_permits(sem, &c->out);

    return rc == CR_OK ? cr_permit_semaphore_available_permits(sem,
                                                               &c->available)
                       : rc;
}

/* --permits K: sets K permits if the semaphore has none (trySetPermits),
 * and warns when the total it has is another: permits out of a name that
 * Java uses as an RSemaphore are not recorded, and setting the total on
 * every run would give them back each time. Returns 0 or an exit code. */
static int settle_permits(cr__cli *cli, cr_permit_semaphore *sem)
{
    const cr__cli_args *a = cli->args;
    bool set = false;
    cr_status rc;
    counts c;

    rc = cr_permit_semaphore_try_set_permits(sem, a->permits, &set);
    if (rc == CR_OK && !set)
        rc = read_counts(sem, &c);
    if (rc != CR_OK)
        return cr__cli_fail_on(cli, rc, "semaphore");
    if (!set && c.available + c.out != a->permits)
        cr__cli_error(cli, "warning: semaphore '%s' is set already (%lld "
                      "available, %lld out as expirable permits), which is "
                      "not --permits %lld; kept as it is ('credisson "
                      "semaphore %s set %lld' sets it)", cli->name_shown,
                      (long long)c.available, (long long)c.out,
                      (long long)a->permits, cli->name_shown,
                      (long long)a->permits);
    return 0;
}

/* semaphore NAME set K: setPermits, printing the counts before and after.
 * Returns the exit code. */
static int set_permits(cr__cli *cli, cr_permit_semaphore *sem)
{
    const cr__cli_args *a = cli->args;
    counts before, after;
    cr_status rc;

    rc = read_counts(sem, &before);
    if (rc == CR_OK)
        rc = cr_permit_semaphore_set_permits(sem, a->value);
    if (rc == CR_OK)
        rc = read_counts(sem, &after);
    if (rc != CR_OK)
        return cr__cli_fail_on(cli, rc, "semaphore");
    if (a->json) {
        fputs("{\"name\":", stdout);
        cr__cli_json_str(stdout, a->name, strlen(a->name));
        printf(",\"before\":{\"available\":%lld,\"out\":%lld},"
               "\"after\":{\"available\":%lld,\"out\":%lld}}\n",
               (long long)before.available, (long long)before.out,
               (long long)after.available, (long long)after.out);
    } else {
        printf("before: %lld available, %lld out\n"
               "after:  %lld available, %lld out\n",
               (long long)before.available, (long long)before.out,
               (long long)after.available, (long long)after.out);
    }
    return 0;
}

/* semaphore NAME ... -- CMD: take a permit, run, give it back. */
static int sem_run(cr__cli *cli, cr_permit_semaphore *sem)
{
    const cr__cli_args *a = cli->args;
    char *env[CR__CLI_ENV_MAX];
    cr__cli_hold hold;
    permit_job j;
    cr_status rc;
    int code, sig;

    memset(env, 0, sizeof(env));
    memset(&j, 0, sizeof(j));
    j.cli = cli;
    j.sem = sem;
    j.renew = a->lease_ms <= 0;
    j.lease_ms = a->lease_ms > 0 ? a->lease_ms
                 : a->watchdog_ms > 0 ? a->watchdog_ms
                                      : CR__CLI_DEFAULT_WATCHDOG_MS;
    if (a->permits > 0 && (code = settle_permits(cli, sem)) != 0)
        return code;
    sig = cr__cli_wait(cli, permit_acquire, permit_undo, &j,
                       cr__cli_wait_status, &rc);
    if (sig != 0)
        return 128 + sig;
    if (rc != CR_OK)
        return cr__cli_not_obtained(cli, "semaphore", rc);
    if (!permit_watch(&j)) {
        permit_release(&j);
        cr__cli_error(cli, "cannot start a thread");
        return CR__CLI_EXIT_OSERR;
    }
    if (!cr__cli_env_add(env, CR__CLI_ENV_MAX, "CREDISSON_SEMAPHORE_NAME",
                         a->name) ||
        !cr__cli_env_add(env, CR__CLI_ENV_MAX, "CREDISSON_PERMIT_ID", j.id) ||
        !cr__cli_env_add_credentials(cli, env, CR__CLI_ENV_MAX)) {
        permit_release(&j);
        cr__cli_error(cli, "out of memory");
        code = CR__CLI_EXIT_OSERR;
    } else {
        hold.what = "permit";
        hold.leased = !j.renew;
        hold.state = permit_state;
        hold.check_ms = CR__CLI_CHECK_MS;
        hold.release = permit_release;
        hold.ctx = &j;
        code = cr__cli_run(cli, env, &hold);
    }
    cr__cli_env_free(env);
    return code;
}

int cr__cli_cmd_semaphore(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    cr_permit_semaphore *sem = NULL;
    int64_t n = 0;
    cr_status rc;
    int code = 0;

    rc = cr_permit_semaphore_new(cli->client, a->name, &sem);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open semaphore '%s'",
                            cli->name_shown);
    switch (a->action) {
    case CR__CLI_RUN:
        code = sem_run(cli, sem);
        break;
    case CR__CLI_SEM_SET:
        code = set_permits(cli, sem);
        break;
    case CR__CLI_SEM_ADD:
        rc = cr_permit_semaphore_add_permits(sem, a->value);
        break;
    default:
        rc = cr_permit_semaphore_available_permits(sem, &n);
        if (rc == CR_OK)
            cr__cli_print_count(cli, "available", n);
        break;
    }
    if (a->action != CR__CLI_RUN && a->action != CR__CLI_SEM_SET &&
        rc != CR_OK)
        code = cr__cli_fail_on(cli, rc, "semaphore");
    cr_permit_semaphore_free(sem);
    return code;
}
