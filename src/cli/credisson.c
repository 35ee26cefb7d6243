/* SPDX-License-Identifier: MIT */
/*
 * credisson: the command-line tool. It runs a command while holding a lock
 * or a semaphore permit, works latches, and shows what an object holds, for
 * shell scripts, cron jobs and CI steps that share Redis with programs
 * using the library or Java Redisson.
 *
 * This file has main(), the help texts, the exit-status table, the
 * connection settings (URL, TLS, credentials: options first, then the
 * environment; a password in --url is blotted out of argv once read), the
 * client set-up and the commands, with the permit's renewing thread;
 * run.c runs the child and the interruptible waits; inspect.c prints what
 * the library's introspection reads; args.c parses the command line. The
 * tool uses the library only through <credisson.h> (and the pure URL
 * parser, compiled in, to hide passwords in messages).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <credisson.h>

#include "cli.h"
#include "url.h"

/* How often a held lock is checked for loss, besides the lost callback,
 * and how often a leased permit is looked up. */
#define LOCK_CHECK_MS 500

/* The longest password read from a file. */
#define PASSWORD_MAX 1024

/* Room for the variables a command run gets: its hold's, and with
 * --pass-credentials the connection's. */
#define ENV_MAX 24

/* ---------------------------------------------------------------- help */

/* The help texts: one per command, the notes on options and the exit
 * codes shown after each. The options themselves are listed from the
 * parser's table (cr__cli_option_docs), so that help shows exactly what
 * the parser takes. The man page says the same at more length; keep them
 * in step (and in step with cli.h's exit codes). */
static const char usage_main[] =
    "Usage: credisson [OPTIONS] COMMAND NAME ...\n"
    "\n"
    "Redisson's distributed locks, semaphores and latches from the shell;\n"
    "the objects are shared with the credisson library and Java Redisson.\n"
    "\n"
    "Commands:\n"
    "  lock NAME [-n | -w D] [-E N] [--lease D]\n"
    "       [--fair|--fenced|--read|--write] [--] CMD [ARG...]\n"
    "                    run CMD while holding the lock NAME\n"
    "  semaphore NAME [--permits K] [-n | -w D] [-E N] [--lease D]\n"
    "       [--] CMD [ARG...]\n"
    "                    run CMD while holding one permit of NAME\n"
    "  semaphore NAME set K | add K | available\n"
    "  latch NAME set N | count-down | count\n"
    "  latch NAME await [-n | -w D] [-E N] [--must-exist]\n"
    "  barrier NAME --parties N [-w D] [-- CMD [ARG...]]\n"
    "                    wait until N parties arrived, then run CMD\n"
    "  barrier NAME reset\n"
    "  ratelimit NAME [--rate R/INTERVAL] [-w D] [--] CMD [ARG...]\n"
    "                    take one permit of the rate limiter, then run "
    "CMD\n"
    "  ratelimit NAME available\n"
    "  inspect NAME      show what NAME is and its state\n"
    "  help [COMMAND]    show help; also COMMAND --help\n"
    "  version           show the version\n";

static const char usage_notes[] =
    "\n"
    "Options win over variables. A password in --url is hidden from ps\n"
    "once the command line is read.\n"
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
    "  71     system error (fork, pipe, memory)\n"
    "  74     CMD ran, but its lock or permit could not be released\n"
    "  75     not obtained in time: lock or permit busy, --wait or await "
    "timed out\n"
    "         (with -E N: N instead); latch already set, or expired;\n"
    "         barrier round broken\n"
    "  76     the lock or permit was lost, or its lease ran out, while CMD "
    "ran\n"
    "         (CMD was stopped)\n"
    "  77     credentials refused or missing, or an ACL refused a command\n"
    "  78     configuration error (TLS, password file), or not supported\n"
    "  79     inspect: nothing under NAME\n"
    "  126    CMD cannot be run\n"
    "  127    CMD not found\n"
    "  128+N  CMD was killed by signal N, or the wait ended by it\n";

static const char usage_lock[] =
    "Usage: credisson lock NAME [OPTIONS] [--] CMD [ARG...]\n"
    "\n"
    "Acquire the lock NAME (a Redisson RLock), run CMD while it is held, "
    "and\n"
    "release it when CMD ends. The exit status is CMD's.\n";

static const char tail_lock[] =
    "\n"
    "CMD sees CREDISSON_LOCK_NAME, CREDISSON_LOCK_OWNER and, with --fenced,\n"
    "CREDISSON_FENCING_TOKEN. Signals INT, TERM, HUP, QUIT, USR1 and USR2\n"
    "are passed on to CMD, and the lock is released when it ends; before\n"
    "CMD starts, INT, TERM, HUP and QUIT end the wait at once.\n";

static const char usage_semaphore[] =
    "Usage: credisson semaphore NAME [OPTIONS] [--] CMD [ARG...]\n"
    "       credisson semaphore NAME set K | add K | available\n"
    "\n"
    "Run CMD while holding one permit of the semaphore NAME (a Redisson\n"
    "RPermitExpirableSemaphore): a permit expires unless renewed, so a\n"
    "killed credisson never keeps one. Or set the total number of permits,\n"
    "add to it (K may be negative), or print how many are available.\n";

static const char tail_semaphore[] =
    "\n"
    "CMD sees CREDISSON_SEMAPHORE_NAME and CREDISSON_PERMIT_ID.\n";

static const char usage_latch[] =
    "Usage: credisson latch NAME set N | count-down | count\n"
    "       credisson latch NAME await [OPTIONS]\n"
    "\n"
    "Work the count-down latch NAME (a Redisson RCountDownLatch): set its\n"
    "count when it has none, count it down by one, wait until it reaches "
    "zero,\n"
    "or print its count. A latch that does not exist counts as open, as in\n"
    "Redisson, unless await has --must-exist.\n";

static const char usage_barrier[] =
    "Usage: credisson barrier NAME --parties N [--timeout D] "
    "[--] [CMD [ARG...]]\n"
    "       credisson barrier NAME reset\n"
    "\n"
    "Arrive at the cyclic barrier NAME of N parties (credisson's own, as\n"
    "Java's CyclicBarrier) and wait until all N have arrived; then run "
    "CMD,\n"
    "if given, and exit with its status. Without CMD, print the round's\n"
    "generation and this party's arrival index. A party that gives up,\n"
    "is interrupted or dies breaks the round: the others exit with 75,\n"
    "and so does every later party until \"reset\" begins a new round.\n"
    "\n"
    "Barrier options:\n"
    "  --parties N       the number of parties (every party gives the "
    "same)\n"
    "  --timeout D, -w, --wait D\n"
    "                    give up after D (breaking the round); default: "
    "wait\n"
    "                    forever\n"
    "  --pass-credentials\n"
    "                    give CMD the connection's settings\n"
    "\n"
    "CMD sees CREDISSON_BARRIER_NAME, CREDISSON_BARRIER_GENERATION and\n"
    "CREDISSON_BARRIER_INDEX (N-1 for the first to arrive, 0 for the "
    "last).\n";

static const char usage_ratelimit[] =
    "Usage: credisson ratelimit NAME [OPTIONS] [--] CMD [ARG...]\n"
    "       credisson ratelimit NAME available\n"
    "\n"
    "Take one permit of the rate limiter NAME (a Redisson RRateLimiter),\n"
    "waiting for it as long as the limiter says, then run CMD and exit "
    "with\n"
    "its status. Or print how many permits could be taken now.\n"
    "\n"
    "Rate limiter options:\n"
    "  --rate R/INTERVAL R permits per INTERVAL (10/1s, 100/1m), set when\n"
    "                    the limiter has no rate yet (trySetRate); a "
    "warning\n"
    "                    when its stored rate differs\n"
    "  --per-client      a budget per client (RateType.PER_CLIENT); needs\n"
    "                    --keep-alive, since every run is a new client\n"
    "  --keep-alive D    an unused limiter vanishes D after its last "
    "permit\n"
    "                    (at least INTERVAL)\n"
    "  -w, --wait D      give up after D (0: one try); default: wait "
    "forever\n"
    "  --pass-credentials\n"
    "                    give CMD the connection's settings\n"
    "\n"
    "CMD sees CREDISSON_RATELIMIT_NAME.\n";

static const char usage_inspect[] =
    "Usage: credisson inspect NAME [--json]\n"
    "\n"
    "Show what the object NAME is and its state, read in one step that\n"
    "changes nothing: lock holders with hold counts, lease and the host,\n"
    "pid and address of their process (or \"not connected\", \"unknown\"),\n"
    "the fair-lock queue with deadlines, read/write mode and readers,\n"
    "semaphore permits and issued expirable permits, a latch's count, a\n"
    "fencing token. Works on objects made by Java Redisson too. Nothing\n"
    "under NAME: exit status 79.\n";

/* The column where the text of an option starts in help. */
#define HELP_COLUMN 20

/* Prints the options the parser takes for `c` (CR__CLI_NONE: those of
 * every command), one "  -w, --wait D" and its text each. */
static void print_options(cr__cli_command c)
{
    cr__cli_option_doc docs[64];
    size_t n = cr__cli_option_docs(c, docs, 64), i;

    for (i = 0; i < n && i < 64; i++) {
        const cr__cli_option_doc *d = &docs[i];
        const char *line = d->help;
        int w;

        if (d->short_name != 0)
            w = printf("  -%c, --%s", d->short_name, d->name);
        else
            w = printf("  --%s", d->name);
        if (d->arg != NULL)
            w += printf(" %s", d->arg);
        /* The text on the same line when there is room, else below. */
        if (w > HELP_COLUMN - 2) {
            putchar('\n');
            w = 0;
        }
        for (;;) {
            size_t len = strcspn(line, "\n");

            printf("%*s%.*s\n", HELP_COLUMN - w, "", (int)len, line);
            w = 0;
            if (line[len] == '\0')
                break;
            line += len + 1;
        }
    }
}

/* Prints the help for `c` (all commands for CR__CLI_NONE) on stdout. */
static void print_help(cr__cli_command c)
{
    const char *tail = "";

    switch (c) {
    case CR__CLI_LOCK:
        fputs(usage_lock, stdout);
        fputs("\nLock options:\n", stdout);
        tail = tail_lock;
        break;
    case CR__CLI_SEMAPHORE:
        fputs(usage_semaphore, stdout);
        fputs("\nSemaphore options (of a command run):\n", stdout);
        tail = tail_semaphore;
        break;
    case CR__CLI_LATCH:
        fputs(usage_latch, stdout);
        fputs("\nOptions of latch await:\n", stdout);
        break;
    case CR__CLI_INSPECT: fputs(usage_inspect, stdout); break;
    case CR__CLI_BARRIER: fputs(usage_barrier, stdout); break;
    case CR__CLI_RATELIMIT: fputs(usage_ratelimit, stdout); break;
    default: fputs(usage_main, stdout); break;
    }
    if (c == CR__CLI_LOCK || c == CR__CLI_SEMAPHORE || c == CR__CLI_LATCH)
        print_options(c);
    fputs(tail, stdout);
    fputs("\nOptions of every command (anywhere before CMD):\n", stdout);
    print_options(CR__CLI_NONE);
    fputs(usage_notes, stdout);
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
    /* No default: a status added to the library makes the compiler ask
     * for its place in the table. */
    switch (rc) {
    case CR_OK: return CR__CLI_EXIT_OK;
    case CR_BUSY: case CR_TIMEOUT: case CR_EEXPIRED: case CR_EBROKEN:
        return CR__CLI_EXIT_BUSY;
    case CR_ELOST: return CR__CLI_EXIT_LOST;
    case CR_EINVAL: return CR__CLI_EXIT_USAGE;
    case CR_EIO: return CR__CLI_EXIT_UNAVAILABLE;
    case CR_ENOMEM: return CR__CLI_EXIT_OSERR;
    case CR_EAUTH: case CR_ENOPERM: return CR__CLI_EXIT_NOPERM;
    case CR_ECONFIG: case CR_ETLS: case CR_ENOTSUP:
        return CR__CLI_EXIT_CONFIG;
    case CR_ENOTOWNER: case CR_ESERVER: case CR_ESCRIPT: case CR_ECLOSED:
    case CR_EFORKED: case CR_EDEADLK: case CR_EREENTRANT: case CR_ECANCELED:
        return CR__CLI_EXIT_SOFTWARE;
    }
    return CR__CLI_EXIT_SOFTWARE;
}

const char *cr__cli_describe(cr__cli *cli, cr_status rc, char *buf,
                             size_t len)
{
    char detail[256];

    /* A failure of the waiting thread left its detail in wait_error. */
    cr__cli_printable(cli->wait_error[0] != '\0' ? cli->wait_error
                                                  : cr_last_error(),
                      detail, sizeof(detail));
    cli->wait_error[0] = '\0';
    if (detail[0] != '\0')
        snprintf(buf, len, "%s (%s)", cr_strerror(rc), detail);
    else
        snprintf(buf, len, "%s", cr_strerror(rc));
    return buf;
}

int cr__cli_fail(cr__cli *cli, cr_status rc, const char *fmt, ...)
{
    char why[384];
    va_list ap;

    cr__cli_describe(cli, rc, why, sizeof(why));
    fputs("credisson: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", why);
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

/* ---------------------------------------------------- connection settings */

/* The value of the environment variable `name`, or NULL when it is unset
 * or empty (an empty variable is as good as unset). */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && *v != '\0' ? v : NULL;
}

/* Overwrites the password inside the URL `url` (a string of argv) with
 * '*', so that ps and /proc/PID/cmdline stop showing it. The length stays,
 * and so does everything else in the URL. */
static void hide_url_password(char *url)
{
    size_t off, len;

    if (cr__cli_url_password(url, &off, &len))
        memset(url + off, '*', len);
}

/* Reads the first line of the password file `path` (given with option
 * `opt`) into *out, a new string, wiped when freed. Warns when the file
 * can be read by its group or by others. Returns 0 or an exit code. */
static int read_password_file(cr__cli *cli, const char *opt,
                              const char *path, char **out)
{
    char buf[PASSWORD_MAX + 2], shown[128];
    struct stat st;
    size_t n = 0, line;
    ssize_t got;
    int fd, e;

    cr__cli_printable(path, shown, sizeof(shown));
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        cr__cli_error(cli, "cannot read the %s '%s': %s", opt, shown,
                      strerror(errno));
        return CR__CLI_EXIT_CONFIG;
    }
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (st.st_mode & (S_IRGRP | S_IROTH)) != 0)
        cr__cli_error(cli, "warning: the %s '%s' can be read by others "
                      "(chmod 600 it)", opt, shown);
    while (n < sizeof(buf) - 1 &&
           (got = read(fd, buf + n, sizeof(buf) - 1 - n)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            e = errno;
            close(fd);
            explicit_bzero(buf, sizeof(buf));
            cr__cli_error(cli, "cannot read the %s '%s': %s", opt, shown,
                          strerror(e));
            return CR__CLI_EXIT_CONFIG;
        }
        n += (size_t)got;
        if (memchr(buf, '\n', n) != NULL)
            break;
    }
    close(fd);
    buf[n] = '\0';
    line = strcspn(buf, "\n");
    if (line > 0 && buf[line - 1] == '\r')
        line--;
    if (line > PASSWORD_MAX || line == 0) {
        explicit_bzero(buf, sizeof(buf));
        cr__cli_error(cli, "the %s '%s' %s", opt, shown,
                      line == 0 ? "has an empty first line"
                                : "has a first line over 1024 bytes");
        return CR__CLI_EXIT_CONFIG;
    }
    *out = strndup(buf, line);
    explicit_bzero(buf, sizeof(buf));
    if (*out == NULL) {
        cr__cli_error(cli, "out of memory");
        return CR__CLI_EXIT_OSERR;
    }
    return 0;
}

/* Frees a password read from a file, wiping it first. */
static void free_password(char *p)
{
    if (p != NULL) {
        explicit_bzero(p, strlen(p));
        free(p);
    }
}

/* Decides which URL to use and how to show it: --url (given here as the
 * copy made before argv was blotted), else $CREDISSON_URL, else the local
 * server; with --tls, its TLS form. Returns 0 or an exit code. */
static int settle_url(cr__cli *cli, const char *url)
{
    const char *where = url != NULL ? "" : " in CREDISSON_URL";
    char err[256];
    cr__url u;
    cr_status rc;

    if (url != NULL && *url == '\0') {
        /* Most likely --url "$VAR" with VAR unset: not a quiet localhost. */
        cr__cli_error(cli, "invalid URL: --url is empty");
        return CR__CLI_EXIT_USAGE;
    }
    if (url == NULL)
        url = env_value("CREDISSON_URL");
    if (url != NULL) {
        rc = cr__url_parse(url, &u, err, sizeof(err));
        if (rc != CR_OK) {
            cr__cli_error(cli, "invalid URL%s: %s", where, err);
            return rc == CR_EINVAL ? CR__CLI_EXIT_USAGE
                                   : CR__CLI_EXIT_SOFTWARE;
        }
        if (cli->args->tls && u.is_unix) {
            cr__url_clear(&u);
            cr__cli_error(cli, "--tls: the URL%s is a unix:// socket, which "
                          "has no TLS form", where);
            return CR__CLI_EXIT_USAGE;
        }
        cr__url_clear(&u);
    }
    if (cli->args->tls) {
        const char *plain = url != NULL ? url : "redis://127.0.0.1:6379";
        size_t len = strlen(plain) + 2;

        cli->owned[1] = malloc(len);
        if (cli->owned[1] == NULL) {
            cr__cli_error(cli, "out of memory");
            return CR__CLI_EXIT_OSERR;
        }
        if (cr__cli_tls_url(plain, cli->owned[1], len) != 0) {
            cr__cli_error(cli, "--tls: the URL%s has no TLS form", where);
            return CR__CLI_EXIT_USAGE;
        }
        url = cli->owned[1];
    }
    cli->url = url;
    cli->conn.url = url;
    if (url == NULL) {
        snprintf(cli->url_shown, sizeof(cli->url_shown),
                 "redis://127.0.0.1:6379");
        return 0;
    }
    if (cr__url_parse(url, &u, err, sizeof(err)) != CR_OK) {
        cr__cli_error(cli, "invalid URL%s: %s", where, err);
        return CR__CLI_EXIT_USAGE;
    }
    cr__url_redacted(&u, cli->url_shown, sizeof(cli->url_shown));
    cr__url_clear(&u);
    return 0;
}

/* Whether the URL in use is one of the TLS forms. */
static bool url_is_tls(const cr__cli *cli)
{
    return cli->url != NULL && strncasecmp(cli->url, "rediss", 6) == 0;
}

/* Settles the TLS settings: each option, else its variable. Options for
 * a connection without TLS are a usage error (variables are then left
 * alone, as redis-cli's are). Returns 0 or an exit code. */
static int settle_tls(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    const char *insecure = env_value("CREDISSON_INSECURE");
    const char *given = a->cacert != NULL      ? "--cacert"
                        : a->cacertdir != NULL ? "--cacertdir"
                        : a->cert != NULL      ? "--cert"
                        : a->key != NULL       ? "--key"
                        : a->sni != NULL       ? "--sni"
                        : a->insecure          ? "--insecure"
                                               : NULL;
    cr_client_options *o = &cli->conn;

    if (!url_is_tls(cli)) {
        if (given == NULL)
            return 0;
        cr__cli_error(cli, "%s applies to TLS only: add --tls, or use a "
                      "rediss:// URL", given);
        return CR__CLI_EXIT_USAGE;
    }
    o->tls_ca_file = a->cacert != NULL ? a->cacert
                                       : env_value("CREDISSON_CACERT");
    o->tls_ca_dir = a->cacertdir != NULL ? a->cacertdir
                                         : env_value("CREDISSON_CACERTDIR");
    o->tls_cert_file = a->cert != NULL ? a->cert : env_value("CREDISSON_CERT");
    o->tls_key_file = a->key != NULL ? a->key : env_value("CREDISSON_KEY");
    o->tls_server_name = a->sni != NULL ? a->sni : env_value("CREDISSON_SNI");
    o->tls_insecure = a->insecure ||
                      (insecure != NULL && strcmp(insecure, "0") != 0);
    if (o->tls_insecure)
        cr__cli_error(cli, "warning: --insecure: the server's certificate "
                      "is not verified; anyone on the way can read and "
                      "change the traffic");
    return 0;
}

/* Settles the credentials: each option (passwords from files), else its
 * variable; and the connections' name. Returns 0 or an exit code. */
static int settle_credentials(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    cr_client_options *o = &cli->conn;
    int code;

    o->username = a->user != NULL ? a->user : env_value("CREDISSON_USER");
    o->sentinel_username = a->sentinel_user != NULL
                               ? a->sentinel_user
                               : env_value("CREDISSON_SENTINEL_USER");
    if (a->password_file != NULL) {
        code = read_password_file(cli, "--password-file", a->password_file,
                                  &cli->password);
        if (code != 0)
            return code;
        o->password = cli->password;
    } else {
        o->password = env_value("CREDISSON_PASSWORD");
    }
    if (a->sentinel_password_file != NULL) {
        code = read_password_file(cli, "--sentinel-password-file",
                                  a->sentinel_password_file,
                                  &cli->sentinel_password);
        if (code != 0)
            return code;
        o->sentinel_password = cli->sentinel_password;
    } else {
        o->sentinel_password = env_value("CREDISSON_SENTINEL_PASSWORD");
    }
    o->client_name = a->client_name;
    return 0;
}

/* Settles every connection setting into cli->conn, and which variables
 * the command run must not inherit: the passwords, and $CREDISSON_URL
 * when it carries one. `url` is --url's copy, or NULL. Returns 0 or an
 * exit code. */
static int settle_connection(cr__cli *cli, const char *url)
{
    const cr__cli_args *a = cli->args;
    const char *env_url = getenv("CREDISSON_URL");
    size_t off, len, n = 0;
    int code;

    code = settle_url(cli, url);
    if (code == 0)
        code = settle_tls(cli);
    if (code == 0)
        code = settle_credentials(cli);
    if (code != 0)
        return code;
    if (a->command_timeout_ms > 0) {
        cli->conn.connect_timeout_ms = a->command_timeout_ms;
        cli->conn.command_timeout_ms = a->command_timeout_ms;
    }
    if (a->watchdog_ms > 0)
        cli->conn.lock_watchdog_timeout_ms = a->watchdog_ms;
    cli->conn.name_prefix = a->name_prefix;
    cli->conn.redisson_version = a->redisson_version;
    /* Commands run once: one connection for calls, besides the watchdog's
     * and the subscriber's. */
    cli->conn.pool_size = 1;
    cli->env_drop[n++] = "CREDISSON_PASSWORD";
    cli->env_drop[n++] = "CREDISSON_SENTINEL_PASSWORD";
    if (env_url != NULL && cr__cli_url_password(env_url, &off, &len))
        cli->env_drop[n++] = "CREDISSON_URL";
    cli->env_drop[n] = NULL;
    return 0;
}

/* What connecting takes and gives, for the waiting thread. */
typedef struct connect_job {
    cr_client_options o;
    cr_client *client;
} connect_job;

/* The waiting thread's call: make the client. */
static cr_status connect_call(void *ctx)
{
    connect_job *j = ctx;

    return cr_client_new(&j->o, &j->client);
}

/* Frees a client made after the wait for it was ended by a signal. */
static void connect_undo(void *ctx)
{
    connect_job *j = ctx;

    cr_client_free_within(j->client, 0);
    j->client = NULL;
}

/* A hint for a failure to connect, from its status and detail: a plain
 * connection the server dropped at once may have met a TLS port; a
 * server wanting a password may have been given none. "" when none
 * fits. */
static const char *connect_hint(const cr__cli *cli, cr_status rc,
                                const char *detail)
{
    size_t off, len;

    if ((rc == CR_EIO || rc == CR_ECONFIG) && !url_is_tls(cli) &&
        (strstr(detail, "reset") != NULL ||
         strstr(detail, "closed the connection") != NULL ||
         strstr(detail, "not the Redis") != NULL))
        return "; if that port speaks TLS, add --tls or use rediss://";
    if (rc == CR_EAUTH && cli->conn.password == NULL &&
        (cli->url == NULL || !cr__cli_url_password(cli->url, &off, &len)))
        return "; give the password with --password-file or "
               "CREDISSON_PASSWORD";
    return "";
}

/* Opens the client the settings ask for: on the waiting thread when the
 * signal loop runs, so that a signal ends the connecting too. Returns 0
 * or an exit code (128 + N for signal N). */
static int connect_client(cr__cli *cli)
{
    /* Static: a thread left connecting after a signal may still write to
     * it while the process ends. */
    static connect_job job;
    char why[384];
    cr_status rc;
    int sig;

    job.o = cli->conn;
    job.client = NULL;
    if (cli->sigfd >= 0) {
        sig = cr__cli_wait(cli, connect_call, connect_undo, &job, NULL, &rc);
        if (sig != 0)
            return 128 + sig;
    } else {
        rc = connect_call(&job);
    }
    if (rc == CR_OK) {
        cli->client = job.client;
        return 0;
    }
    cr__cli_describe(cli, rc, why, sizeof(why));
    if (rc == CR_EINVAL || rc == CR_ENOMEM)
        cr__cli_error(cli, "cannot create the client: %s", why);
    else
        cr__cli_error(cli, "cannot use Redis at %s: %s%s", cli->url_shown,
                      why, connect_hint(cli, rc, why));
    return cr__cli_exit_code(rc);
}

/* ----------------------------------------------------- the command's env */

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

/* Adds "NAME=VALUE" when value is not NULL. Returns false when out of
 * memory. */
static bool env_add_set(char **env, size_t max, const char *var,
                        const char *value)
{
    return value == NULL || env_add(env, max, var, value);
}

/* Frees the strings env_add put into env, wiping them: some are
 * passwords. */
static void env_free(char **env)
{
    size_t n;

    for (n = 0; env[n] != NULL; n++) {
        explicit_bzero(env[n], strlen(env[n]));
        free(env[n]);
    }
}

/* With --pass-credentials, adds what a credisson inside the command needs
 * to connect as this one did: the URL (with --tls, its TLS form), users,
 * passwords and TLS settings. Returns false when out of memory. */
static bool env_add_credentials(cr__cli *cli, char **env, size_t max)
{
    const cr_client_options *o = &cli->conn;

    if (!cli->args->pass_credentials)
        return true;
    return env_add_set(env, max, "CREDISSON_URL", cli->url) &&
           env_add_set(env, max, "CREDISSON_USER", o->username) &&
           env_add_set(env, max, "CREDISSON_PASSWORD", o->password) &&
           env_add_set(env, max, "CREDISSON_SENTINEL_USER",
                       o->sentinel_username) &&
           env_add_set(env, max, "CREDISSON_SENTINEL_PASSWORD",
                       o->sentinel_password) &&
           env_add_set(env, max, "CREDISSON_CACERT", o->tls_ca_file) &&
           env_add_set(env, max, "CREDISSON_CACERTDIR", o->tls_ca_dir) &&
           env_add_set(env, max, "CREDISSON_CERT", o->tls_cert_file) &&
           env_add_set(env, max, "CREDISSON_KEY", o->tls_key_file) &&
           env_add_set(env, max, "CREDISSON_SNI", o->tls_server_name) &&
           env_add_set(env, max, "CREDISSON_INSECURE",
                       o->tls_insecure ? "1" : NULL);
}

/* The status line while waiting for a lock, a permit or a latch. */
static void wait_status(cr__cli *cli, cr_client *client, void *ctx,
                        int64_t waited_ms, char *buf, size_t len)
{
    cr__cli_command c = cli->args->command;
    const char *what = c == CR__CLI_SEMAPHORE   ? "a permit of semaphore"
                       : c == CR__CLI_LATCH     ? "latch"
                       : c == CR__CLI_BARRIER   ? "the parties of barrier"
                       : c == CR__CLI_RATELIMIT ? "a permit of rate limiter"
                                                : "lock";
    char state[384], waited[32];

    (void)ctx;
    cr__cli_summary(cli, client, state, sizeof(state));
    snprintf(buf, len, "waiting %s for %s '%s'%s%s",
             cr__cli_fmt_ms(waited_ms, waited, sizeof(waited)), what,
             cli->name_shown, state[0] != '\0' ? ": " : "", state);
}

/* Says why a wait for `what` ("lock 'x'") ended without it, unless
 * --quiet, and returns the exit code: 75, or -E's, when it was not
 * obtained in time. */
static int not_obtained(cr__cli *cli, const char *what, cr_status rc)
{
    const cr__cli_args *a = cli->args;
    int busy = a->conflict_exit_code >= 0 ? a->conflict_exit_code
                                          : CR__CLI_EXIT_BUSY;
    char waited[32];

    if ((rc == CR_BUSY || rc == CR_TIMEOUT) && a->quiet)
        return busy;
    if (rc == CR_BUSY && cli->args->wait_ms == 0)
        cr__cli_error(cli, "%s '%s': busy", what, cli->name_shown);
    else if (rc == CR_BUSY || rc == CR_TIMEOUT)
        cr__cli_error(cli, "%s '%s': gave up after %s", what,
                      cli->name_shown,
                      cr__cli_fmt_ms(cli->args->wait_ms, waited,
                                     sizeof(waited)));
    else
        return cr__cli_fail(cli, rc, "%s '%s'", what, cli->name_shown);
    return busy;
}

/* The margin a local deadline keeps before the end of a lease of lease_ms,
 * as the library's lease clock: 1 % for clock rates, and 2 ms. */
static int64_t lease_margin(int64_t lease_ms)
{
    return lease_ms / 100 + 2;
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

/* lock NAME ... -- CMD: acquire, run, release. */
static int cmd_lock(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    char owner[128], token[24], *env[ENV_MAX];
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
    sig = cr__cli_wait(cli, lock_acquire, lock_undo, &j, wait_status, &rc);
    if (sig != 0) {
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
    if (!env_add(env, ENV_MAX, "CREDISSON_LOCK_NAME", a->name) ||
        !env_add(env, ENV_MAX, "CREDISSON_LOCK_OWNER", owner) ||
        (a->kind == CR__CLI_LOCK_FENCED &&
         !env_add(env, ENV_MAX, "CREDISSON_FENCING_TOKEN", token)) ||
        !env_add_credentials(cli, env, ENV_MAX)) {
        lock_release(&j);
        cr__cli_error(cli, "out of memory");
        code = CR__CLI_EXIT_OSERR;
        goto out;
    }
    hold.what = "lock";
    hold.leased = a->lease_ms > 0;
    hold.state = lock_state;
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
 * --lease it only looks the permit up every LOCK_CHECK_MS. A permit found
 * not out any more is lost, and the main loop is told. */
static void *permit_main(void *arg)
{
    permit_job *j = arg;
    int64_t every = j->renew ? j->lease_ms / 3 : LOCK_CHECK_MS;
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

/* semaphore NAME ... -- CMD: take a permit, run, give it back. */
static int sem_run(cr__cli *cli, cr_permit_semaphore *sem)
{
    const cr__cli_args *a = cli->args;
    char *env[ENV_MAX];
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
    if (a->permits > 0) {
        rc = cr_permit_semaphore_set_permits(sem, a->permits);
        if (rc != CR_OK)
            return cr__cli_fail(cli, rc, "cannot set the permits of '%s'",
                                cli->name_shown);
    }
    sig = cr__cli_wait(cli, permit_acquire, permit_undo, &j, wait_status,
                       &rc);
    if (sig != 0)
        return 128 + sig;
    if (rc != CR_OK)
        return not_obtained(cli, "semaphore", rc);
    if (!permit_watch(&j)) {
        permit_release(&j);
        cr__cli_error(cli, "cannot start a thread");
        return CR__CLI_EXIT_OSERR;
    }
    if (!env_add(env, ENV_MAX, "CREDISSON_SEMAPHORE_NAME", a->name) ||
        !env_add(env, ENV_MAX, "CREDISSON_PERMIT_ID", j.id) ||
        !env_add_credentials(cli, env, ENV_MAX)) {
        permit_release(&j);
        cr__cli_error(cli, "out of memory");
        code = CR__CLI_EXIT_OSERR;
    } else {
        hold.what = "permit";
        hold.leased = !j.renew;
        hold.state = permit_state;
        hold.check_ms = LOCK_CHECK_MS;
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

/* The waiting thread's call for latch await: with --must-exist, a latch
 * never set is waited for as a closed one. */
static cr_status latch_await(void *ctx)
{
    latch_job *j = ctx;

    if (j->cli->args->must_exist)
        return cr_latch_await_opened(j->latch, j->cli->args->wait_ms);
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
        sig = cr__cli_wait(cli, latch_await, NULL, &j, wait_status, &rc);
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

/* ----------------------------------------------------- barrier, ratelimit */

/* The "hold" of a command run after a barrier or a rate limiter let it
 * go: there is nothing to keep or give back, so nothing stops CMD. */
static cr_status nothing_state(void *ctx, int64_t *deadline_ms)
{
    (void)ctx;
    (void)deadline_ms;
    return CR_OK;
}

static cr_status nothing_release(void *ctx)
{
    (void)ctx;
    return CR_OK;
}

/* Runs CMD with the variables `vars` (name, value pairs, NULL-ended) and,
 * with --pass-credentials, the connection's; nothing is held meanwhile.
 * Returns the exit code. */
static int run_free(cr__cli *cli, const char *what, const char *const *vars)
{
    char *env[ENV_MAX];
    cr__cli_hold hold;
    bool ok = true;
    int code;

    memset(env, 0, sizeof(env));
    for (; ok && vars[0] != NULL; vars += 2)
        ok = env_add(env, ENV_MAX, vars[0], vars[1]);
    if (!ok || !env_add_credentials(cli, env, ENV_MAX)) {
        env_free(env);
        cr__cli_error(cli, "out of memory");
        return CR__CLI_EXIT_OSERR;
    }
    hold.what = what;
    hold.leased = false;
    hold.state = nothing_state;
    hold.check_ms = INT32_MAX;
    hold.release = nothing_release;
    hold.ctx = NULL;
    code = cr__cli_run(cli, env, &hold);
    env_free(env);
    return code;
}

/* A barrier being awaited. */
typedef struct barrier_job {
    cr__cli *cli;
    cr_barrier *barrier;
    int64_t generation, index;
} barrier_job;

/* The waiting thread's call. */
static cr_status barrier_await(void *ctx)
{
    barrier_job *j = ctx;

    return cr_barrier_await(j->barrier, j->cli->args->wait_ms,
                            &j->generation, &j->index);
}

/* barrier NAME --parties N [--timeout D] [-- CMD]: arrive, wait for the
 * round, then run CMD or print the generation and the index. */
static int cmd_barrier(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    char gen[24], idx[24];
    barrier_job j;
    cr_status rc;
    int code, sig;

    memset(&j, 0, sizeof(j));
    j.cli = cli;
    /* A reset does not look at the number of parties. */
    rc = cr_barrier_new(cli->client, a->name, a->parties > 0 ? a->parties : 1,
                        &j.barrier);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open barrier '%s'",
                            cli->name_shown);
    if (a->action == CR__CLI_BARRIER_RESET) {
        rc = cr_barrier_reset(j.barrier);
        cr_barrier_free(j.barrier);
        return rc == CR_OK ? 0
                           : cr__cli_fail(cli, rc, "barrier '%s'",
                                          cli->name_shown);
    }
    /* A signal frees the client, which breaks the round for the others
     * (CR_ECLOSED); the exit code is then 128 + the signal's number. */
    sig = cr__cli_wait(cli, barrier_await, NULL, &j, wait_status, &rc);
    if (sig != 0) {
        code = 128 + sig;
    } else if (rc == CR_EBROKEN) {
        cr__cli_error(cli, "barrier '%s': the round was broken (a party "
                      "gave up, was stopped or died, or the barrier was "
                      "reset)", cli->name_shown);
        code = CR__CLI_EXIT_BUSY;
    } else if (rc != CR_OK) {
        code = not_obtained(cli, "barrier", rc);
    } else {
        snprintf(gen, sizeof(gen), "%lld", (long long)j.generation);
        snprintf(idx, sizeof(idx), "%lld", (long long)j.index);
        if (a->action == CR__CLI_RUN) {
            const char *vars[] = {"CREDISSON_BARRIER_NAME", a->name,
                                  "CREDISSON_BARRIER_GENERATION", gen,
                                  "CREDISSON_BARRIER_INDEX", idx, NULL};

            code = run_free(cli, "barrier", vars);
        } else {
            if (a->json) {
                fputs("{\"name\":", stdout);
                cr__cli_json_str(stdout, a->name, strlen(a->name));
                printf(",\"generation\":%s,\"index\":%s}\n", gen, idx);
            } else {
                printf("generation %s index %s\n", gen, idx);
            }
            code = 0;
        }
    }
    cr_barrier_free(j.barrier);
    return code;
}

/* A permit being waited for. */
typedef struct rate_job {
    cr__cli *cli;
    cr_rate_limiter *limiter;
} rate_job;

/* The waiting thread's call: one permit. */
static cr_status rate_acquire(void *ctx)
{
    rate_job *j = ctx;

    return cr_rate_limiter_try_acquire(j->limiter, 1, j->cli->args->wait_ms);
}

/* Sets --rate when the limiter has none (trySetRate), and warns when the
 * stored configuration differs from it. Returns 0 or an exit code. */
static int rate_settle(cr__cli *cli, cr_rate_limiter *l)
{
    const cr__cli_args *a = cli->args;
    cr_rate_type type = a->per_client ? CR_RATE_PER_CLIENT : CR_RATE_OVERALL;
    cr_rate_config cfg;
    bool set = false;
    cr_status rc;

    rc = cr_rate_limiter_try_set_rate(l, type, a->rate, a->rate_interval_ms,
                                      a->keep_alive_ms > 0 ? a->keep_alive_ms
                                                           : 0,
                                      &set);
    if (rc == CR_OK && !set)
        rc = cr_rate_limiter_get_config(l, &cfg);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot set the rate of '%s'",
                            cli->name_shown);
    if (!set && (cfg.rate != a->rate || cfg.interval_ms != a->rate_interval_ms ||
                 cfg.type != type)) {
        char asked[32], stored[32];

        cr__cli_error(cli, "warning: rate limiter '%s' keeps its rate of "
                      "%lld per %s%s, not --rate %lld/%s%s",
                      cli->name_shown, (long long)cfg.rate,
                      cr__cli_fmt_ms(cfg.interval_ms, stored, sizeof(stored)),
                      cfg.type == CR_RATE_PER_CLIENT ? " per client" : "",
                      (long long)a->rate,
                      cr__cli_fmt_ms(a->rate_interval_ms, asked,
                                     sizeof(asked)),
                      a->per_client ? " --per-client" : "");
    }
    return 0;
}

/* ratelimit NAME [--rate R/I] -- CMD | available. */
static int cmd_ratelimit(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    rate_job j;
    int64_t n = 0;
    cr_status rc;
    int code = 0, sig;

    j.cli = cli;
    rc = cr_rate_limiter_new(cli->client, a->name, &j.limiter);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open rate limiter '%s'",
                            cli->name_shown);
    if (a->action == CR__CLI_RL_AVAILABLE) {
        rc = cr_rate_limiter_available_permits(j.limiter, &n);
        if (rc == CR_OK)
            print_count(cli, "available", n);
        else
            code = cr__cli_fail(cli, rc, "rate limiter '%s'",
                                cli->name_shown);
    } else if (a->rate <= 0 || (code = rate_settle(cli, j.limiter)) == 0) {
        sig = cr__cli_wait(cli, rate_acquire, NULL, &j, wait_status, &rc);
        if (sig != 0) {
            code = 128 + sig;
        } else if (rc != CR_OK) {
            code = not_obtained(cli, "rate limiter", rc);
        } else {
            const char *vars[] = {"CREDISSON_RATELIMIT_NAME", a->name, NULL};

            code = run_free(cli, "rate limiter", vars);
        }
    }
    cr_rate_limiter_free(j.limiter);
    return code;
}

/* ----------------------------------------------------------------- main */

/* Whether the command waits or runs a child, and so needs the signal
 * loop and the waiting thread. */
static bool needs_loop(const cr__cli_args *a)
{
    return a->action == CR__CLI_RUN || a->action == CR__CLI_LATCH_AWAIT ||
           a->action == CR__CLI_BARRIER_AWAIT;
}

/* Frees what the settings of the connection own, wiping the passwords. */
static void free_settings(cr__cli *cli)
{
    size_t i;

    free_password(cli->password);
    free_password(cli->sentinel_password);
    for (i = 0; i < sizeof(cli->owned) / sizeof(cli->owned[0]); i++) {
        if (cli->owned[i] != NULL)
            explicit_bzero(cli->owned[i], strlen(cli->owned[i]));
        free(cli->owned[i]);
    }
}

int main(int argc, char **argv)
{
    char err[CR__CLI_ERR_MAX];
    cr__cli_args a;
    cr__cli cli;
    int code, parsed;

    memset(&cli, 0, sizeof(cli));
    cli.conn = (cr_client_options)CR_CLIENT_OPTIONS_INIT;
    cli.args = &a;
    cli.sigfd = cli.events[0] = cli.events[1] = -1;
    parsed = cr__cli_parse_args(argc, argv, &a, err, sizeof(err));
    /* The URL is kept, then its password blotted out of argv, which is
     * what ps shows: from here on, only this process's memory has it. */
    if (parsed == 0 && a.url != NULL)
        cli.owned[0] = strdup(a.url);
    if (a.url != NULL)
        hide_url_password((char *)a.url);
    if (parsed != 0) {
        cr__cli_error(&cli, "%s", err);
        return CR__CLI_EXIT_USAGE;
    }
    if (a.url != NULL && cli.owned[0] == NULL) {
        cr__cli_error(&cli, "out of memory");
        return CR__CLI_EXIT_OSERR;
    }
    if (a.command == CR__CLI_VERSION) {
        printf("credisson %s (library %s)\n", CR_VERSION_STR,
               cr_version_str());
        free_settings(&cli);
        return 0;
    }
    if (a.help) {
        print_help(a.command);
        free_settings(&cli);
        return 0;
    }
    cr__cli_printable(a.name, cli.name_shown, sizeof(cli.name_shown));
    /* The status line: on a terminal, unless turned off (-v wins over
     * --no-status, --quiet over both). */
    cli.status_line = isatty(STDERR_FILENO) && !a.quiet &&
                      (a.verbose || !a.no_status);
    code = settle_connection(&cli, cli.owned[0]);
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
        case CR__CLI_BARRIER: code = cmd_barrier(&cli); break;
        case CR__CLI_RATELIMIT: code = cmd_ratelimit(&cli); break;
        default: code = CR__CLI_EXIT_USAGE; break;
        }
    }
    if (cli.abandoned) {
        /* A thread still connects on memory and libraries exit() would
         * tear down: end without them. Nothing is held yet. */
        fflush(stdout);
        fflush(stderr);
        _exit(code);
    }
    cr_client_free(cli.client);
    cr__cli_status_end(&cli);
    cr__cli_signals_stop(&cli);
    free_settings(&cli);
    if (fflush(stdout) != 0 && code == 0) {
        cr__cli_error(&cli, "cannot write the output: %s", strerror(errno));
        code = CR__CLI_EXIT_OSERR;
    }
    return code;
}
