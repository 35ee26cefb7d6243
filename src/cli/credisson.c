/* SPDX-License-Identifier: MIT */
/*
 * credisson: the command-line tool. It runs a command while holding a lock
 * or a semaphore permit, works latches, and shows what an object holds, for
 * shell scripts, cron jobs and CI steps that share Redis with programs
 * using the library or Java Redisson.
 *
 * This file has main(), the help texts, the client set-up and the
 * commands; run.c runs the child and the interruptible waits; inspect.c
 * reads objects with plain commands; args.c parses the command line. Apart
 * from inspect.c the tool uses the library only through <credisson.h>
 * (and the pure URL parser, compiled in, to hide passwords in messages).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <credisson.h>

#include "cli.h"
#include "url.h"

/* How often a held lock is checked for loss, besides the lost callback. */
#define LOCK_CHECK_MS 500

/* The lease of a permit renewed while its command runs, unless --watchdog
 * says otherwise: the library's default watchdog timeout. */
#define DEFAULT_WATCHDOG_MS 30000

/* ---------------------------------------------------------------- help */

/* The help texts: one per command, and the exit codes shown after each.
 * The man page says the same at more length; keep them in step. */
static const char usage_main[] =
    "Usage: credisson [OPTIONS] COMMAND NAME ...\n"
    "\n"
    "Redisson's distributed locks, semaphores and latches from the shell;\n"
    "the objects are shared with the credisson library and Java Redisson.\n"
    "\n"
    "Commands:\n"
    "  lock NAME [--wait D] [--lease D] [--fair|--fenced|--read|--write]\n"
    "       [--] CMD [ARG...]\n"
    "                    run CMD while holding the lock NAME\n"
    "  semaphore NAME [--permits K] [--wait D] [--lease D] [--] CMD "
    "[ARG...]\n"
    "                    run CMD while holding one permit of NAME\n"
    "  semaphore NAME set K | add K | available\n"
    "  latch NAME set N | count-down | await [--timeout D] | count\n"
    "  inspect NAME      show what NAME is and its state\n"
    "  help [COMMAND]    show help; also COMMAND --help\n"
    "  version           show the version\n"
    "\n"
    "Options (anywhere before CMD):\n"
    "  --url URL         redis://[[user]:password@]host[:port][/db],\n"
    "                    unix:///path/to.sock,\n"
    "                    redis-sentinel://host:port[,host:port...]/master or\n"
    "                    redis-cluster://host:port[,host:port...]\n"
    "                    [?sharded=auto|on|off];\n"
    "                    default $CREDISSON_URL, else\n"
    "                    redis://127.0.0.1:6379\n"
    "  --timeout D       Redis connect and command timeout (default 3s)\n"
    "  --name-prefix P   put P before every name (a Redisson NameMapper)\n"
    "  --json            print data as JSON\n"
    "  -v, --verbose     while waiting, show the holder on a terminal\n"
    "  -h, --help        show help\n"
    "  -V, --version     show the version\n"
    "\n"
    "A duration D is a number with a unit, ms, s, m or h (250ms, 10s, "
    "1.5m);\n"
    "a plain number is seconds.\n";

static const char usage_exit[] =
    "\n"
    "Exit status:\n"
    "  0      success (for a command run: its own status)\n"
    "  64     usage error\n"
    "  69     Redis unreachable\n"
    "  70     Redis or internal error\n"
    "  71     system error (fork, pipe)\n"
    "  75     not obtained in time: lock or permit busy, --wait or await "
    "timed out,\n"
    "         latch already set\n"
    "  76     the lock or permit was lost while CMD ran (CMD was stopped),\n"
    "         or its --lease ran out before CMD ended\n"
    "  78     not supported, or not available in this build\n"
    "  126    CMD cannot be run;  127  CMD not found\n"
    "  128+N  CMD was killed by signal N, or the wait ended by it\n";

static const char usage_lock[] =
    "Usage: credisson lock NAME [OPTIONS] [--] CMD [ARG...]\n"
    "\n"
    "Acquire the lock NAME (a Redisson RLock), run CMD while it is held, "
    "and\n"
    "release it when CMD ends. The exit status is CMD's.\n"
    "\n"
    "  -w, --wait D      give up after D (0: one try); default: wait "
    "forever\n"
    "  --lease D         hold at most D, without renewal; default: renewed "
    "by\n"
    "                    the watchdog for as long as CMD runs\n"
    "  --fair            the fair lock (RFairLock): first come, first "
    "served\n"
    "  --fenced          the fenced lock (RFencedLock): CMD gets a fencing\n"
    "                    token that grows with every acquisition\n"
    "  --read, --write   the read or the write side of a read/write lock\n"
    "  --watchdog D      the lease the watchdog renews, every third of it\n"
    "                    (default 30s)\n"
    "  --kill-after D    when the lock is lost, SIGKILL CMD this long after\n"
    "                    SIGTERM (default 10s)\n"
    "\n"
    "CMD sees CREDISSON_LOCK_NAME, CREDISSON_LOCK_OWNER and, with --fenced,\n"
    "CREDISSON_FENCING_TOKEN. Signals INT, TERM, HUP, QUIT, USR1 and USR2\n"
    "are passed on to CMD, and the lock is released when it ends.\n";

static const char usage_semaphore[] =
    "Usage: credisson semaphore NAME [OPTIONS] [--] CMD [ARG...]\n"
    "       credisson semaphore NAME set K | add K | available\n"
    "\n"
    "Run CMD while holding one permit of the semaphore NAME (a Redisson\n"
    "RPermitExpirableSemaphore): a permit expires unless renewed, so a\n"
    "killed credisson never keeps one. Or set the total number of permits,\n"
    "add to it (K may be negative), or print how many are available.\n"
    "\n"
    "  --permits K       make the semaphore K permits in total first\n"
    "  -w, --wait D      give up after D (0: one try); default: wait "
    "forever\n"
    "  --lease D         hold the permit at most D, without renewal;\n"
    "                    default: renewed for as long as CMD runs\n"
    "  --watchdog D      the lease renewed, every third of it (default "
    "30s)\n"
    "  --kill-after D    when the permit is lost, SIGKILL CMD this long "
    "after\n"
    "                    SIGTERM (default 10s)\n"
    "\n"
    "CMD sees CREDISSON_SEMAPHORE_NAME and CREDISSON_PERMIT_ID.\n";

static const char usage_latch[] =
    "Usage: credisson latch NAME set N | count-down | await [--timeout D] "
    "| count\n"
    "\n"
    "Work the count-down latch NAME (a Redisson RCountDownLatch): set its\n"
    "count when it has none, count it down by one, wait until it reaches "
    "zero\n"
    "(at most D with --timeout or --wait), or print its count.\n";

static const char usage_inspect[] =
    "Usage: credisson inspect NAME [--json]\n"
    "\n"
    "Show what the object NAME is and its state, read with plain commands:\n"
    "lock holders with hold counts and lease, the fair-lock queue with\n"
    "deadlines, read/write mode and readers, semaphore permits and issued\n"
    "expirable permits, a latch's count, a fencing token. Works on objects\n"
    "made by Java Redisson too.\n";

/* Prints the help for `c` (all commands for CR__CLI_NONE) on stdout. */
static void print_help(cr__cli_command c)
{
    switch (c) {
    case CR__CLI_LOCK: fputs(usage_lock, stdout); break;
    case CR__CLI_SEMAPHORE: fputs(usage_semaphore, stdout); break;
    case CR__CLI_LATCH: fputs(usage_latch, stdout); break;
    case CR__CLI_INSPECT: fputs(usage_inspect, stdout); break;
    default: fputs(usage_main, stdout); break;
    }
    fputs(usage_exit, stdout);
}

/* ------------------------------------------------------------- messages */

void cr__cli_error(cr__cli *cli, const char *fmt, ...)
{
    va_list ap;

    (void)cli;
    fputs("credisson: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cr__cli_exit_code(cr_status rc)
{
    switch (rc) {
    case CR_OK: return CR__CLI_EXIT_OK;
    case CR_BUSY: case CR_TIMEOUT: return CR__CLI_EXIT_BUSY;
    case CR_ELOST: return CR__CLI_EXIT_LOST;
    case CR_EINVAL: return CR__CLI_EXIT_USAGE;
    case CR_EIO: return CR__CLI_EXIT_UNAVAILABLE;
    case CR_ENOTSUP: return CR__CLI_EXIT_NOTSUP;
    default: return CR__CLI_EXIT_SOFTWARE;
    }
}

int cr__cli_fail(cr__cli *cli, cr_status rc, const char *fmt, ...)
{
    char detail[256];
    va_list ap;

    /* A failure of the waiting thread left its detail in wait_error. */
    cr__cli_printable(cli->wait_error[0] != '\0' ? cli->wait_error
                                                  : cr_last_error(),
                      detail, sizeof(detail));
    cli->wait_error[0] = '\0';
    fputs("credisson: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (detail[0] != '\0')
        fprintf(stderr, ": %s (%s)\n", cr_strerror(rc), detail);
    else
        fprintf(stderr, ": %s\n", cr_strerror(rc));
    return cr__cli_exit_code(rc);
}

const char *cr__cli_printable(const char *s, char *buf, size_t len)
{
    size_t i;

    if (len == 0)
        return buf;
    for (i = 0; s[i] != '\0' && i + 1 < len; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    buf[i] = '\0';
    if (s[i] != '\0' && len > 4)
        memcpy(buf + len - 4, "...", 4);
    return buf;
}

const char *cr__cli_fmt_ms(int64_t ms, char *buf, size_t len)
{
    if (ms < 0)
        snprintf(buf, len, "-");
    else if (ms < 1000)
        snprintf(buf, len, "%lldms", (long long)ms);
    else if (ms < 60000)
        snprintf(buf, len, "%lld.%llds", (long long)(ms / 1000),
                 (long long)(ms % 1000 / 100));
    else if (ms < 3600000)
        snprintf(buf, len, "%lldm%02llds", (long long)(ms / 60000),
                 (long long)(ms % 60000 / 1000));
    else
        snprintf(buf, len, "%lldh%02lldm", (long long)(ms / 3600000),
                 (long long)(ms % 3600000 / 60000));
    return buf;
}

/* --------------------------------------------------------------- client */

/* Decides which URL to use and how to show it. Returns 0 or an exit
 * code. */
static int choose_url(cr__cli *cli)
{
    const char *url = cli->args->url;
    char err[256];
    cr__url u;
    cr_status rc;

    if (url != NULL && *url == '\0') {
        /* Most likely --url "$VAR" with VAR unset: not a quiet localhost. */
        cr__cli_error(cli, "invalid URL: --url is empty");
        return CR__CLI_EXIT_USAGE;
    }
    if (url == NULL)
        url = getenv("CREDISSON_URL");
    if (url != NULL && *url == '\0')
        url = NULL; /* an empty CREDISSON_URL is as good as unset */
    cli->url = url;
    if (url == NULL) {
        snprintf(cli->url_shown, sizeof(cli->url_shown),
                 "redis://127.0.0.1:6379");
        return 0;
    }
    rc = cr__url_parse(url, &u, err, sizeof(err));
    if (rc != CR_OK) {
        cr__cli_error(cli, "invalid URL%s: %s",
                      cli->args->url != NULL ? "" : " in CREDISSON_URL", err);
        return rc == CR_EINVAL ? CR__CLI_EXIT_USAGE : CR__CLI_EXIT_SOFTWARE;
    }
    cr__url_redacted(&u, cli->url_shown, sizeof(cli->url_shown));
    cr__url_clear(&u);
    return 0;
}

/* Opens the client the options ask for. Returns 0 or an exit code. */
static int connect_client(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    cr_client_options o;
    cr_status rc;

    memset(&o, 0, sizeof(o));
    o.url = cli->url;
    if (a->timeout_ms > 0) {
        o.connect_timeout_ms = a->timeout_ms;
        o.command_timeout_ms = a->timeout_ms;
    }
    if (a->watchdog_ms > 0)
        o.lock_watchdog_timeout_ms = a->watchdog_ms;
    o.name_prefix = a->name_prefix;
    /* Commands run once: one connection for calls, besides the watchdog's
     * and the subscriber's. */
    o.pool_size = 1;
    rc = cr_client_new(&o, &cli->client);
    if (rc == CR_OK)
        return 0;
    if (rc == CR_EIO || rc == CR_ESERVER) {
        cr__cli_fail(cli, rc, "cannot use Redis at %s", cli->url_shown);
        return CR__CLI_EXIT_UNAVAILABLE;
    }
    if (rc == CR_EINVAL)
        return cr__cli_fail(cli, rc, "invalid option");
    return cr__cli_fail(cli, rc, "cannot create the client");
}

/* Adds "NAME=VALUE" to a NULL-terminated array of at most max strings.
 * Returns false when out of memory. */
static bool env_add(char **env, size_t max, const char *var,
                    const char *value)
{
    size_t n = 0;
    char *s;

    while (env[n] != NULL)
        n++;
    if (n + 1 >= max)
        return false;
    s = malloc(strlen(var) + strlen(value) + 2);
    if (s == NULL)
        return false;
    sprintf(s, "%s=%s", var, value);
    env[n] = s;
    return true;
}

/* Frees the strings env_add put into env. */
static void env_free(char **env)
{
    size_t n;

    for (n = 0; env[n] != NULL; n++)
        free(env[n]);
}

/* The status line while waiting for a lock, a permit or a latch. */
static void wait_status(cr__cli *cli, void *ctx, int64_t waited_ms,
                        char *buf, size_t len)
{
    const char *what = cli->args->command == CR__CLI_SEMAPHORE
                           ? "a permit of semaphore"
                       : cli->args->command == CR__CLI_LATCH ? "latch"
                                                             : "lock";
    char state[384], waited[32];

    (void)ctx;
    cr__cli_summary(cli, state, sizeof(state));
    snprintf(buf, len, "waiting %s for %s '%s'%s%s",
             cr__cli_fmt_ms(waited_ms, waited, sizeof(waited)), what,
             cli->name_shown, state[0] != '\0' ? ": " : "", state);
}

/* ----------------------------------------------------------------- lock */

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

/* Polled while the command runs: the watchdog's lost flag. */
static cr_status lock_check(void *ctx, bool *lost)
{
    lock_job *j = ctx;

    return cr_lock_is_lost_tid(j->lock, j->tid, lost);
}

/* Releases the lock once the command has ended. */
static cr_status lock_release(void *ctx)
{
    lock_job *j = ctx;

    return cr_lock_unlock_tid(j->lock, j->tid);
}

/* Called on the watchdog thread when the hold is found gone. */
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

/* Says why a wait for `what` ("lock 'x'") ended without it, and returns
 * the exit code. */
static int not_obtained(cr__cli *cli, const char *what, cr_status rc)
{
    char waited[32];

    if (rc == CR_BUSY && cli->args->wait_ms == 0)
        cr__cli_error(cli, "%s '%s': busy", what, cli->name_shown);
    else if (rc == CR_BUSY || rc == CR_TIMEOUT)
        cr__cli_error(cli, "%s '%s': gave up after %s", what,
                      cli->name_shown,
                      cr__cli_fmt_ms(cli->args->wait_ms, waited,
                                     sizeof(waited)));
    else
        return cr__cli_fail(cli, rc, "%s '%s'", what, cli->name_shown);
    return CR__CLI_EXIT_BUSY;
}

/* lock NAME ... -- CMD: acquire, run, release. */
static int cmd_lock(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    char owner[128], token[24], *env[4] = {NULL, NULL, NULL, NULL};
    cr__cli_hold hold;
    lock_job j;
    cr_status rc;
    int code, sig;

    memset(&j, 0, sizeof(j));
    j.cli = cli;
    j.tid = cli->tid;
    j.lease_ms = a->lease_ms > 0 ? a->lease_ms : CR_LEASE_WATCHDOG;
    code = lock_open(cli, &j);
    if (code != 0)
        goto out;
    if (a->lease_ms <= 0)
        cr_lock_set_lost_callback(j.lock, lock_lost, cli);
    sig = cr__cli_wait(cli, lock_acquire, &j, wait_status, &rc);
    if (sig != 0) {
        if (rc == CR_OK && cli->client != NULL)
            lock_release(&j);
        code = 128 + sig;
        goto out;
    }
    if (rc != CR_OK) {
        code = not_obtained(cli, "lock", rc);
        goto out;
    }
    snprintf(owner, sizeof(owner), "%s:%lld%s", cr_client_id(cli->client),
             (long long)j.tid, a->kind == CR__CLI_LOCK_WRITE ? ":write" : "");
    snprintf(token, sizeof(token), "%lld", (long long)j.token);
    if (!env_add(env, 4, "CREDISSON_LOCK_NAME", a->name) ||
        !env_add(env, 4, "CREDISSON_LOCK_OWNER", owner) ||
        (a->kind == CR__CLI_LOCK_FENCED &&
         !env_add(env, 4, "CREDISSON_FENCING_TOKEN", token))) {
        lock_release(&j);
        cr__cli_error(cli, "out of memory");
        code = CR__CLI_EXIT_OSERR;
        goto out;
    }
    hold.what = "lock";
    hold.check = lock_check;
    hold.check_ms = LOCK_CHECK_MS;
    hold.release = lock_release;
    hold.ctx = &j;
    code = cr__cli_run(cli, env, &hold);
out:
    env_free(env);
    /* After an abandoned wait the client is already freed; freeing a
     * handle then only gives back its memory. */
    if (j.rw != NULL)
        cr_rwlock_free(j.rw);
    else
        cr_lock_free(j.lock);
    return code;
}

/* ------------------------------------------------------------ semaphore */

/* A permit taken for the run of a command. */
typedef struct permit_job {
    cr__cli *cli;
    cr_permit_semaphore *sem;
    int64_t lease_ms;
    bool renew;         /* no --lease: the lease is renewed while CMD runs */
    char id[CR_PERMIT_ID_LEN + 1];
} permit_job;

/* The waiting thread's call: one permit with its lease. */
static cr_status permit_acquire(void *ctx)
{
    permit_job *j = ctx;

    return cr_permit_semaphore_try_acquire(j->sem, j->cli->args->wait_ms,
                                           j->lease_ms, j->id);
}

/* Polled every third of the lease while the command runs: extends the
 * permit's lease, and finds it lost when it is not out any more. A failed
 * call is tried again at the next check. */
static cr_status permit_check(void *ctx, bool *lost)
{
    permit_job *j = ctx;
    bool updated = false;
    cr_status rc;

    if (!j->renew)
        return CR_OK;
    rc = cr_permit_semaphore_update_lease_time(j->sem, j->id, j->lease_ms,
                                               &updated);
    if (rc == CR_OK && !updated)
        *lost = true;
    return rc;
}

/* Gives the permit back once the command has ended; a permit that had
 * expired (reclaimed or not) was lost. */
static cr_status permit_release(void *ctx)
{
    permit_job *j = ctx;
    cr_status rc = cr_permit_semaphore_release(j->sem, j->id);

    return rc == CR_ENOTOWNER ? CR_ELOST : rc;
}

/* semaphore NAME ... -- CMD: take a permit, run, give it back. */
static int sem_run(cr__cli *cli, cr_permit_semaphore *sem)
{
    const cr__cli_args *a = cli->args;
    char *env[3] = {NULL, NULL, NULL};
    cr__cli_hold hold;
    permit_job j;
    cr_status rc;
    int code, sig;

    memset(&j, 0, sizeof(j));
    j.cli = cli;
    j.sem = sem;
    j.renew = a->lease_ms <= 0;
    j.lease_ms = a->lease_ms > 0 ? a->lease_ms
                 : a->watchdog_ms > 0 ? a->watchdog_ms : DEFAULT_WATCHDOG_MS;
    if (a->permits > 0) {
        rc = cr_permit_semaphore_set_permits(sem, a->permits);
        if (rc != CR_OK)
            return cr__cli_fail(cli, rc, "cannot set the permits of '%s'",
                                cli->name_shown);
    }
    sig = cr__cli_wait(cli, permit_acquire, &j, wait_status, &rc);
    if (sig != 0) {
        if (rc == CR_OK && cli->client != NULL)
            permit_release(&j);
        return 128 + sig;
    }
    if (rc != CR_OK)
        return not_obtained(cli, "semaphore", rc);
    if (!env_add(env, 3, "CREDISSON_SEMAPHORE_NAME", a->name) ||
        !env_add(env, 3, "CREDISSON_PERMIT_ID", j.id)) {
        permit_release(&j);
        cr__cli_error(cli, "out of memory");
        code = CR__CLI_EXIT_OSERR;
    } else {
        hold.what = "permit";
        hold.check = permit_check;
        hold.check_ms = j.renew ? j.lease_ms / 3 : LOCK_CHECK_MS;
        if (hold.check_ms < 1)
            hold.check_ms = 1;
        hold.release = permit_release;
        hold.ctx = &j;
        code = cr__cli_run(cli, env, &hold);
    }
    env_free(env);
    return code;
}

/* Prints a count as text or as {"name":..., "<key>":n}. */
static void print_count(cr__cli *cli, const char *key, int64_t n)
{
    if (!cli->args->json) {
        printf("%lld\n", (long long)n);
        return;
    }
    fputs("{\"name\":", stdout);
    cr__cli_json_str(stdout, cli->args->name, strlen(cli->args->name));
    printf(",\"%s\":%lld}\n", key, (long long)n);
}

/* semaphore NAME ...: run a command, or set, add, available. The
 * permit-expirable semaphore's calls are used for all of them; on a plain
 * RSemaphore (no issued permits) they act the same. */
static int cmd_semaphore(cr__cli *cli)
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
        rc = cr_permit_semaphore_set_permits(sem, a->value);
        break;
    case CR__CLI_SEM_ADD:
        rc = cr_permit_semaphore_add_permits(sem, a->value);
        break;
    default:
        rc = cr_permit_semaphore_available_permits(sem, &n);
        if (rc == CR_OK)
            print_count(cli, "available", n);
        break;
    }
    if (a->action != CR__CLI_RUN && rc != CR_OK)
        code = cr__cli_fail(cli, rc, "semaphore '%s'", cli->name_shown);
    cr_permit_semaphore_free(sem);
    return code;
}

/* ---------------------------------------------------------------- latch */

/* A latch being awaited. */
typedef struct latch_job {
    cr__cli *cli;
    cr_latch *latch;
} latch_job;

/* The waiting thread's call for latch await. */
static cr_status latch_await(void *ctx)
{
    latch_job *j = ctx;

    return cr_latch_await(j->latch, j->cli->args->wait_ms);
}

/* latch NAME set N | count-down | await | count. */
static int cmd_latch(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    latch_job j;
    int64_t n = 0;
    bool set = false;
    cr_status rc;
    int code = 0, sig;

    j.cli = cli;
    rc = cr_latch_new(cli->client, a->name, &j.latch);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open latch '%s'",
                            cli->name_shown);
    switch (a->action) {
    case CR__CLI_LATCH_SET:
        rc = cr_latch_try_set_count(j.latch, a->value, 0, &set);
        if (rc == CR_OK && !set) {
            cr__cli_error(cli, "latch '%s' already has a count",
                          cli->name_shown);
            code = CR__CLI_EXIT_BUSY;
        }
        break;
    case CR__CLI_LATCH_COUNT_DOWN:
        rc = cr_latch_count_down(j.latch);
        break;
    case CR__CLI_LATCH_AWAIT:
        sig = cr__cli_wait(cli, latch_await, &j, wait_status, &rc);
        if (sig != 0) {
            code = 128 + sig;
            rc = CR_OK;
        } else if (rc == CR_TIMEOUT) {
            code = not_obtained(cli, "latch", rc);
            rc = CR_OK;
        }
        break;
    default:
        rc = cr_latch_get_count(j.latch, &n);
        if (rc == CR_OK)
            print_count(cli, "count", n);
        break;
    }
    if (rc == CR_EEXPIRED) {
        cr__cli_error(cli, "latch '%s' has expired", cli->name_shown);
        code = CR__CLI_EXIT_BUSY;
    } else if (rc != CR_OK) {
        code = cr__cli_fail(cli, rc, "latch '%s'", cli->name_shown);
    }
    cr_latch_free(j.latch);
    return code;
}

/* ----------------------------------------------------------------- main */

/* Whether the command waits or runs a child, and so needs the signal
 * loop and the waiting thread. */
static bool needs_loop(const cr__cli_args *a)
{
    return a->action == CR__CLI_RUN || a->action == CR__CLI_LATCH_AWAIT;
}

int main(int argc, char **argv)
{
    char err[CR__CLI_ERR_MAX];
    cr__cli_args a;
    cr__cli cli;
    int code;

    memset(&cli, 0, sizeof(cli));
    cli.args = &a;
    cli.sigfd = cli.events[0] = cli.events[1] = -1;
    if (cr__cli_parse_args(argc, argv, &a, err, sizeof(err)) != 0) {
        cr__cli_error(&cli, "%s", err);
        return CR__CLI_EXIT_USAGE;
    }
    if (a.command == CR__CLI_VERSION) {
        printf("credisson %s (library %s)\n", CR_VERSION_STR,
               cr_version_str());
        return 0;
    }
    if (a.help) {
        print_help(a.command);
        return 0;
    }
    cr__cli_printable(a.name, cli.name_shown, sizeof(cli.name_shown));
    cli.status_line = a.verbose && isatty(STDERR_FILENO);
    code = choose_url(&cli);
    if (code == 0 && needs_loop(&a))
        code = cr__cli_signals_start(&cli);
    if (code == 0)
        code = connect_client(&cli);
    if (code == 0) {
        cli.tid = cr_thread_id();
        switch (a.command) {
        case CR__CLI_LOCK: code = cmd_lock(&cli); break;
        case CR__CLI_SEMAPHORE: code = cmd_semaphore(&cli); break;
        case CR__CLI_LATCH: code = cmd_latch(&cli); break;
        case CR__CLI_INSPECT: code = cr__cli_inspect(&cli); break;
        default: code = CR__CLI_EXIT_USAGE; break;
        }
    }
    cr__cli_inspect_close(&cli);
    cr_client_free(cli.client);
    cr__cli_signals_stop(&cli);
    if (fflush(stdout) != 0 && code == 0) {
        cr__cli_error(&cli, "cannot write the output: %s", strerror(errno));
        code = CR__CLI_EXIT_OSERR;
    }
    return code;
}
