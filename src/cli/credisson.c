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
#include "cmd_remove.h"
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
    "Redisson's locks, semaphores, latches and rate limiters, and cyclic\n"
    "barriers, from the shell; the objects are shared with the credisson\n"
    "library and Java Redisson.\n";

static const char usage_notes[] =
    "\n"
    "Options win over variables. A password in --url is hidden from ps\n"
    "once the command line is read, and one in CREDISSON_PASSWORD,\n"
    "CREDISSON_SENTINEL_PASSWORD or CREDISSON_URL once it is read.\n"
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
    "  74     CMD ran (or the hold ended), but its lock or permit could "
    "not be\n"
    "         released\n"
    "  75     not obtained in time: lock or permit busy, --wait or await "
    "timed out\n"
    "         (with -E N: N instead); latch already set, or expired;\n"
    "         barrier round broken; unlock --force or delete refused "
    "while the\n"
    "         holder is connected\n"
    "  76     the lock or permit was lost, or its lease ran out, while CMD "
    "ran\n"
    "         (CMD was stopped) or while it was held\n"
    "  77     credentials refused or missing, or an ACL refused a command\n"
    "  78     configuration error (TLS, password file, a rate limiter "
    "without\n"
    "         a rate or a per-client one without keep-alive), or not "
    "supported\n"
    "  79     inspect, unlock --force, delete: nothing under NAME\n"
    "  126    CMD cannot be run\n"
    "  127    CMD not found\n"
    "  128+N  CMD was killed by signal N, or the wait ended by it\n";

static const char usage_lock[] =
    "Acquire the lock NAME (a Redisson RLock), run CMD while it is held, "
    "and\n"
    "release it when CMD ends. The exit status is CMD's. Without CMD, "
    "hold\n"
    "the lock until INT, TERM or HUP comes or standard input (a pipe, a\n"
    "socket or a terminal) ends; its owner (and fencing token) is printed\n"
    "once it is held, and the exit status is 0 once it is released.\n";

static const char tail_lock[] =
    "\n"
    "CMD sees CREDISSON_LOCK_NAME, CREDISSON_LOCK_OWNER and, with --fenced,\n"
    "CREDISSON_FENCING_TOKEN. Signals INT, TERM, HUP, QUIT, USR1 and USR2\n"
    "are passed on to CMD, and the lock is released when it ends; before\n"
    "CMD starts, INT, TERM, HUP and QUIT end the wait at once.\n";

static const char usage_semaphore[] =
    "Run CMD while holding one permit of the semaphore NAME (a Redisson\n"
    "RPermitExpirableSemaphore): a permit expires unless renewed, so a\n"
    "killed credisson never keeps one. --permits K sets K permits if the\n"
    "semaphore has none (trySetPermits). Or set the total number of "
    "permits\n"
    "(setPermits: the counts before and after are printed), add to it (K\n"
    "may be negative), or print how many are available.\n";

static const char tail_semaphore[] =
    "\n"
    "CMD sees CREDISSON_SEMAPHORE_NAME and CREDISSON_PERMIT_ID.\n";

static const char usage_latch[] =
    "Work the count-down latch NAME (a Redisson RCountDownLatch): set its\n"
    "count when it has none, count it down by one, wait until it reaches "
    "zero,\n"
    "or print its count. A latch that does not exist counts as open, as in\n"
    "Redisson, unless await has --must-exist.\n";

static const char usage_barrier[] =
    "Arrive at the cyclic barrier NAME of N parties (credisson's own, as\n"
    "Java's CyclicBarrier) and wait until all N have arrived; then run "
    "CMD,\n"
    "if given, and exit with its status. Without CMD, print the round's\n"
    "generation and this party's arrival index. A party that gives up\n"
    "(--wait), is interrupted or dies breaks the round: the others exit\n"
    "with 75, and so does every later party until \"reset\" begins a new\n"
    "round.\n";

static const char tail_barrier[] =
    "\n"
    "CMD sees CREDISSON_BARRIER_NAME, CREDISSON_BARRIER_GENERATION and\n"
    "CREDISSON_BARRIER_INDEX (N-1 for the first to arrive, 0 for the "
    "last).\n";

static const char usage_ratelimit[] =
    "Take one permit of the rate limiter NAME (a Redisson RRateLimiter),\n"
    "waiting for it as long as the limiter says, then run CMD and exit "
    "with\n"
    "its status. --rate sets the rate if the limiter has none (trySetRate);\n"
    "set-rate sets it whatever it was (setRate). Or print how many permits\n"
    "could be taken now. A PER_CLIENT limiter gives each run a budget of\n"
    "its own, since each run is a new client: a warning says so, and one\n"
    "without a keep-alive time is refused.\n";

static const char tail_ratelimit[] =
    "\n"
    "CMD sees CREDISSON_RATELIMIT_NAME.\n";

static const char usage_inspect[] =
    "Show what the object NAME is and its state, read in one step that\n"
    "changes nothing: lock holders with hold counts, lease and the host,\n"
    "pid and address of their process (or \"not connected\", \"unknown\"),\n"
    "the fair-lock queue with deadlines, read/write mode and readers,\n"
    "semaphore permits and issued expirable permits, a latch's count, a\n"
    "fencing token, a barrier's waiting parties, the connections\n"
    "subscribed to a lock's or semaphore's channel. Works on objects made\n"
    "by Java Redisson too. Nothing under NAME: exit status 79.\n";

static const char usage_unlock[] =
    "Release the lock NAME whoever holds it, as Redisson's forceUnlock:\n"
    "its kind (lock, fair lock, read or write side) is read first, and its\n"
    "waiters are woken, Java's too. Prints whom it removed (owner, host,\n"
    "pid). While that holder's client is still connected, or when that\n"
    "cannot be told, it refuses with 75 unless --yes is given.\n";

static const char usage_delete[] =
    "Delete the object NAME, whatever it is, as Redisson's delete of its\n"
    "kind: a lock is force-unlocked, a barrier's waiters are told it broke,\n"
    "a latch's waiters that it opened. Prints what it removed and whom\n"
    "(owner, host, pid); refuses with 75 while a holder's client is still\n"
    "connected, or when that cannot be told, unless --yes is given.\n";

/* The column where the text of an option starts in help. */
#define HELP_COLUMN 20

/* Prints text (lines with '\n' between them) at HELP_COLUMN, after a
 * line already w columns wide: its first line beside it when there is
 * room, else below. */
static void print_text_at_column(int w, const char *text)
{
    if (w > HELP_COLUMN - 2) {
        putchar('\n');
        w = 0;
    }
    for (;;) {
        size_t len = strcspn(text, "\n");

        printf("%*s%.*s\n", HELP_COLUMN - w, "", (int)len, text);
        w = 0;
        if (text[len] == '\0')
            break;
        text += len + 1;
    }
}

/* Prints the options the parser takes for `c` (CR__CLI_NONE: those of
 * every command), one "  -w, --wait D" and its text each. */
static void print_options(cr__cli_command c)
{
    cr__cli_option_doc docs[64];
    size_t n = cr__cli_option_docs(c, docs, 64), i;

    for (i = 0; i < n && i < 64; i++) {
        const cr__cli_option_doc *d = &docs[i];
        int w;

        if (d->short_name != 0)
            w = printf("  -%c, --%s", d->short_name, d->name);
        else
            w = printf("  --%s", d->name);
        if (d->arg != NULL)
            w += printf(" %s", d->arg);
        print_text_at_column(w, d->help);
    }
}

/* Prints the commands of the parser's table, each form on a line of its
 * own and what the command does below (beside a short last form). */
static void print_commands(void)
{
    const cr__cli_command_doc *d;
    size_t n, i;

    d = cr__cli_command_docs(&n);
    fputs("\nCommands:\n", stdout);
    for (i = 0; i < n; i++) {
        const char *f = d[i].forms;
        int w = 0;

        do {
            size_t len = strcspn(f, "\n");

            w = printf("  %s%s%.*s", d[i].name, len > 0 ? " " : "",
                       (int)len, f);
            f += len;
            if (*f == '\n') {
                putchar('\n');
                f++;
            }
        } while (*f != '\0');
        print_text_at_column(w, d[i].summary);
    }
}

/* Prints "Usage:" and command c's forms from the parser's table. */
static void print_usage(cr__cli_command c)
{
    const cr__cli_command_doc *d;
    const char *lead = "Usage:";
    size_t n, i;

    d = cr__cli_command_docs(&n);
    for (i = 0; i < n; i++) {
        const char *f = d[i].forms;

        if (d[i].command != c)
            continue;
        while (*f != '\0') {
            size_t len = strcspn(f, "\n");

            printf("%-6s credisson %s %.*s\n", lead, d[i].name, (int)len, f);
            lead = "";
            f += len + (f[len] == '\n');
        }
    }
    putchar('\n');
}

/* Prints the help for `c` (all commands for CR__CLI_NONE) on stdout:
 * usage, what it does, its own options, then those of every command. */
static void print_help(cr__cli_command c)
{
    const char *text = NULL, *tail = "";

    switch (c) {
    case CR__CLI_LOCK: text = usage_lock; tail = tail_lock; break;
    case CR__CLI_SEMAPHORE:
        text = usage_semaphore;
        tail = tail_semaphore;
        break;
    case CR__CLI_LATCH: text = usage_latch; break;
    case CR__CLI_INSPECT: text = usage_inspect; break;
    case CR__CLI_BARRIER: text = usage_barrier; tail = tail_barrier; break;
    case CR__CLI_RATELIMIT:
        text = usage_ratelimit;
        tail = tail_ratelimit;
        break;
    case CR__CLI_UNLOCK: text = usage_unlock; break;
    case CR__CLI_DELETE: text = usage_delete; break;
    default: break;
    }
    if (text == NULL) {
        fputs(usage_main, stdout);
        print_commands();
    } else {
        print_usage(c);
        fputs(text, stdout);
        if (cr__cli_option_docs(c, NULL, 0) > 0) {
            printf("\nOptions of %s:\n", cr__cli_command_name(c));
            print_options(c);
        }
    }
    fputs(tail, stdout);
    fputs("\nOptions of every command (anywhere before CMD):\n", stdout);
    print_options(CR__CLI_NONE);
    fputs(usage_notes, stdout);
    fputs(usage_exit, stdout);
}

/* ----------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    char err[CR__CLI_ERR_MAX];
    cr__cli_args a;
    cr__cli cli;
    int code, parsed;

    memset(&cli, 0, sizeof(cli));
    cli.started_ms = cr__cli_now_ms();
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
    /* The command to run is looked up before anything is taken. */
    code = a.action == CR__CLI_RUN ? cr__cli_check_program(&cli) : 0;
    if (code == 0)
        code = cr__cli_settle_connection(&cli, cli.owned[0]);
    /* A command that waits, or runs a child, needs the signal loop and
     * the waiting thread. */
    if (code == 0 && cr__cli_action_waits(&a))
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
        case CR__CLI_UNLOCK:
        case CR__CLI_DELETE: code = cr__cli_cmd_remove(&cli); break;
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

