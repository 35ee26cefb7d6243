/* SPDX-License-Identifier: MIT */
/*
 * credisson: the command-line tool. It runs a command while holding a lock
 * or a semaphore permit, works latches, barriers and rate limiters, and
 * shows what an object holds, for shell scripts, cron jobs and CI steps
 * that share Redis with programs using the library or Java Redisson.
 *
 * This file, the top of the tool, has main() and the help texts with the
 * exit-status table. Below it: the commands (cmd_lock.c, cmd_sem.c,
 * cmd_coord.c), what they share around a wait (obtain.c), the connection
 * settings and the client (conn.c), what introspection prints (inspect.c),
 * the runner of waits and children (run.c), the command line's parser
 * (args.c) and, at the bottom, messages and clocks (util.c). The tool uses
 * the library only through its public headers.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <credisson.h>

#include "cmd_coord.h"
#include "cmd_lock.h"
#include "cmd_sem.h"
#include "conn.h"
#include "inspect.h"
#include "run.h"
#include "util.h"

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
    "1.5m),\n"
    "or several from the largest unit down (1m30s, 1h15m); a plain number\n"
    "is seconds.\n";

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

/* ----------------------------------------------------------------- main */

/* Whether the command waits or runs a child, and so needs the signal
 * loop and the waiting thread. */
static bool needs_loop(const cr__cli_args *a)
{
    return a->action == CR__CLI_RUN || a->action == CR__CLI_LATCH_AWAIT ||
           a->action == CR__CLI_BARRIER_AWAIT;
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
        cr__cli_hide_url_password((char *)a.url);
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
        cr__cli_free_settings(&cli);
        return 0;
    }
    if (a.help) {
        print_help(a.command);
        cr__cli_free_settings(&cli);
        return 0;
    }
    cr__cli_printable(a.name, cli.name_shown, sizeof(cli.name_shown));
    /* The status line: on a terminal, unless turned off (-v wins over
     * --no-status, --quiet over both). */
    cli.status_line = isatty(STDERR_FILENO) && !a.quiet &&
                      (a.verbose || !a.no_status);
    code = cr__cli_settle_connection(&cli, cli.owned[0]);
    if (code == 0 && needs_loop(&a))
        code = cr__cli_signals_start(&cli);
    if (code == 0)
        code = cr__cli_connect(&cli);
    if (code == 0) {
        cli.tid = cr_thread_id();
        switch (a.command) {
        case CR__CLI_LOCK: code = cr__cli_cmd_lock(&cli); break;
        case CR__CLI_SEMAPHORE: code = cr__cli_cmd_semaphore(&cli); break;
        case CR__CLI_LATCH: code = cr__cli_cmd_latch(&cli); break;
        case CR__CLI_INSPECT: code = cr__cli_inspect(&cli); break;
        case CR__CLI_BARRIER: code = cr__cli_cmd_barrier(&cli); break;
        case CR__CLI_RATELIMIT: code = cr__cli_cmd_ratelimit(&cli); break;
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
    cr__cli_free_settings(&cli);
    if (fflush(stdout) != 0 && code == 0) {
        cr__cli_error(&cli, "cannot write the output: %s", strerror(errno));
        code = CR__CLI_EXIT_OSERR;
    }
    return code;
}

