/* SPDX-License-Identifier: MIT */
/*
 * `credisson lock` (cmd_lock.h): a lock of the kind asked for, held while
 * a command runs, its loss found by the library's lease clock.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cmd_lock.h"
#include "conn.h"
#include "obtain.h"
#include "run.h"
#include "util.h"

/* A lock taken for the run of a command. */
typedef struct lock_job {
    cr__cli *cli;
    cr_rwlock *rw;      /* --read, --write: owns `lock` */
    cr_lock *lock;
    int64_t lease_ms;
    int64_t tid;        /* the owner thread id the hold was taken for */
    int64_t token;      /* --fenced: the fencing token */
} lock_job;

/* The waiting thread's call. Every kind is acquired for the main thread's
 * owner id, except the fenced lock, whose token call has no _tid form: it
 * is taken for the waiting thread's own id, which the release then uses. */
static cr_status lock_acquire(void *ctx)
{
    lock_job *j = ctx;
    int64_t wait_ms = j->cli->args->wait_ms;

    if (j->cli->args->kind == CR__CLI_LOCK_FENCED) {
        j->tid = cr_thread_id();
        return cr_fenced_lock_try_lock_and_get_token(j->lock, wait_ms,
                                                     j->lease_ms, &j->token);
    }
    return cr_lock_try_lock_tid(j->lock, j->tid, wait_ms, j->lease_ms);
}

/* Where the hold stands, from the library's lease clock (no Redis): lost,
 * or its local deadline, which a watchdog renewal moves on. The deadline
 * is reckoned from a moment taken before asking, so it is never later
 * than the library's. */
static cr_status lock_state(void *ctx, int64_t *deadline_ms)
{
    lock_job *j = ctx;
    int64_t now = cr__cli_now_ms(), left = 0;
    bool lost = false;
    cr_status rc;

    rc = cr_lock_is_lost_tid(j->lock, j->tid, &lost);
    if (rc == CR_OK && lost)
        return CR_ELOST;
    rc = cr_lock_lease_left_tid(j->lock, j->tid, &left);
    if (rc != CR_OK)
        return rc;
    if (left <= 0)
        return CR_ELOST;
    *deadline_ms = now + left;
    return CR_OK;
}

/* Releases the lock once the command has ended, or gives back one taken
 * as a signal came. */
static cr_status lock_release(void *ctx)
{
    lock_job *j = ctx;

    return cr_lock_unlock_tid(j->lock, j->tid);
}

/* The waiting thread's undo: releases a lock granted as a signal came. */
static void lock_undo(void *ctx)
{
    lock_release(ctx);
}

/* Called on the library's lease-clock thread when the hold is found gone
 * or its lease has run out. */
static void lock_lost(void *userdata, const char *name, int64_t thread_id)
{
    (void)name;
    (void)thread_id;
    cr__cli_notify_lost(userdata);
}

/* Makes the handle for the kind of lock asked for. Returns 0 or an exit
 * code. */
static int lock_open(cr__cli *cli, lock_job *j)
{
    const cr__cli_args *a = cli->args;
    cr_status rc;

    switch (a->kind) {
    case CR__CLI_LOCK_FAIR:
        rc = cr_fair_lock_new(cli->client, a->name, &j->lock);
        break;
    case CR__CLI_LOCK_FENCED:
        rc = cr_fenced_lock_new(cli->client, a->name, &j->lock);
        break;
    case CR__CLI_LOCK_READ:
    case CR__CLI_LOCK_WRITE:
        rc = cr_rwlock_new(cli->client, a->name, &j->rw);
        if (rc == CR_OK)
            j->lock = a->kind == CR__CLI_LOCK_READ
                          ? cr_rwlock_read_lock(j->rw)
                          : cr_rwlock_write_lock(j->rw);
        break;
    default:
        rc = cr_lock_new(cli->client, a->name, &j->lock);
        break;
    }
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open lock '%s'",
                            cli->name_shown);
    return 0;
}

/* Says on stdout that the lock is held, for a hold without a command:
 * "owner O" (and " token T" for a fenced lock), or with --json the same
 * as an object; flushed at once, for a script that waits for it. */
static void announce(cr__cli *cli, const char *owner, const lock_job *j)
{
    const cr__cli_args *a = cli->args;

    if (a->json) {
        fputs("{\"name\":", stdout);
        cr__cli_json_str(stdout, a->name, strlen(a->name));
        fputs(",\"owner\":", stdout);
        cr__cli_json_str(stdout, owner, strlen(owner));
        if (a->kind == CR__CLI_LOCK_FENCED)
            printf(",\"fencing_token\":%lld", (long long)j->token);
        fputs("}\n", stdout);
    } else if (a->kind == CR__CLI_LOCK_FENCED) {
        printf("owner %s token %lld\n", owner, (long long)j->token);
    } else {
        printf("owner %s\n", owner);
    }
    fflush(stdout);
}

int cr__cli_cmd_lock(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    char owner[128], token[24], *env[CR__CLI_ENV_MAX];
    cr__cli_hold hold;
    lock_job j;
    cr_status rc;
    int code, sig;

    memset(env, 0, sizeof(env));
    memset(&j, 0, sizeof(j));
    j.cli = cli;
    j.tid = cli->tid;
    j.lease_ms = a->lease_ms > 0 ? a->lease_ms : CR_LEASE_WATCHDOG;
    code = lock_open(cli, &j);
    if (code != 0)
        goto out;
    /* Every hold, leased or renewed, is declared lost at its deadline. */
    cr_lock_set_lost_callback(j.lock, lock_lost, cli);
    sig = cr__cli_wait(cli, lock_acquire, lock_undo, &j, cr__cli_wait_status,
                       &rc);
    if (sig != 0) {
        code = 128 + sig;
        goto out;
    }
    if (rc != CR_OK) {
        code = cr__cli_not_obtained(cli, "lock", rc);
        goto out;
    }
    snprintf(owner, sizeof(owner), "%s:%lld%s", cr_client_id(cli->client),
             (long long)j.tid, a->kind == CR__CLI_LOCK_WRITE ? ":write" : "");
    hold.what = "lock";
    hold.leased = a->lease_ms > 0;
    hold.state = lock_state;
    hold.check_ms = CR__CLI_CHECK_MS;
    hold.release = lock_release;
    hold.ctx = &j;
    if (a->action == CR__CLI_LOCK_HOLD) {
        announce(cli, owner, &j);
        code = cr__cli_keep(cli, &hold);
        goto out;
    }
    snprintf(token, sizeof(token), "%lld", (long long)j.token);
    if (!cr__cli_env_add(env, CR__CLI_ENV_MAX, "CREDISSON_LOCK_NAME",
                         a->name) ||
        !cr__cli_env_add(env, CR__CLI_ENV_MAX, "CREDISSON_LOCK_OWNER",
                         owner) ||
        (a->kind == CR__CLI_LOCK_FENCED &&
         !cr__cli_env_add(env, CR__CLI_ENV_MAX, "CREDISSON_FENCING_TOKEN",
                          token)) ||
        !cr__cli_env_add_credentials(cli, env, CR__CLI_ENV_MAX)) {
        lock_release(&j);
        cr__cli_error(cli, "out of memory");
        code = CR__CLI_EXIT_OSERR;
        goto out;
    }
    code = cr__cli_run(cli, env, &hold);
out:
    cr__cli_env_free(env);
    /* After an abandoned wait the client is already freed; freeing a
     * handle then only gives back its memory. */
    if (j.rw != NULL)
        cr_rwlock_free(j.rw);
    else
        cr_lock_free(j.lock);
    return code;
}
