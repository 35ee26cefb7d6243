/* SPDX-License-Identifier: MIT */
/*
 * What the files of the credisson tool share: its exit codes, the state of
 * one run, and the entry points of the runner (run.c: signals, interruptible
 * waits, the supervised child) and of the inspector (inspect.c: printing
 * what cr_object_inspect reads). The tool reaches the library through
 * <credisson.h> only, plus the pure URL parser (src/url.c, compiled in to
 * show redacted URLs).
 */
#ifndef CR_CLI_H
#define CR_CLI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <credisson.h>

#include "args.h"

/* Exit codes: one table, the same in --help (usage_exit in credisson.c)
 * and in credisson(1); cr__cli_exit_code maps every cr_status onto it. A
 * command run under a lock or permit exits with its own status, or
 * 128 + N when killed by signal N, as in the shell. */
#define CR__CLI_EXIT_OK 0
#define CR__CLI_EXIT_USAGE 64       /* bad command line (EX_USAGE) */
#define CR__CLI_EXIT_UNAVAILABLE 69 /* Redis unreachable (EX_UNAVAILABLE) */
#define CR__CLI_EXIT_SOFTWARE 70    /* Redis or internal error (EX_SOFTWARE) */
#define CR__CLI_EXIT_OSERR 71       /* fork, pipe, memory... (EX_OSERR) */
#define CR__CLI_EXIT_RELEASE 74     /* CMD ran; its release failed (EX_IOERR) */
#define CR__CLI_EXIT_BUSY 75        /* not obtained in time (EX_TEMPFAIL) */
#define CR__CLI_EXIT_LOST 76        /* the lock or permit was lost */
#define CR__CLI_EXIT_NOPERM 77      /* credentials or ACL refused (EX_NOPERM) */
#define CR__CLI_EXIT_CONFIG 78      /* configuration, TLS, not supported
                                     * (EX_CONFIG) */
#define CR__CLI_EXIT_NOTSUP CR__CLI_EXIT_CONFIG
#define CR__CLI_EXIT_NOTHING 79     /* inspect: nothing under the name */
#define CR__CLI_EXIT_CANNOT_RUN 126 /* CMD found but not runnable */
#define CR__CLI_EXIT_NOT_FOUND 127  /* CMD not found */

/* The state of one run of the tool. */
typedef struct cr__cli {
    const cr__cli_args *args;
    const char *url;        /* what the client connects to; never printed */
    char url_shown[512];    /* the same with the password hidden */
    char name_shown[128];   /* the object's name, printable and shortened */
    /* Every connection's settings (URL, credentials, TLS, name), from the
     * options and the environment; the library's client is made from it,
     * and any other connection the tool opens should follow it too. */
    cr_client_options conn;
    char *owned[4];         /* strings conn and url point into; freed last */
    char *password;         /* read from --password-file; wiped when freed */
    char *sentinel_password;/* read from --sentinel-password-file */
    /* Variables the command run must not inherit (NULL-terminated). */
    const char *env_drop[4];
    cr_client *client;      /* NULL until connected, and after an abort */
    int64_t tid;            /* the owner thread id of every hold */
    bool status_line;       /* stderr is a terminal, no --no-status */
    bool abandoned;         /* a waiting thread was left running: exit now */
    char wait_error[256];   /* cr_last_error() of a failed waiting call */
    int sigfd;              /* signalfd of the forwarded signals, or -1 */
    int events[2];          /* self-pipe: other threads -> main loop */
} cr__cli;

/* What is held while a command runs, and how it is looked after. */
typedef struct cr__cli_hold {
    const char *what;       /* "lock", "permit": for messages */
    bool leased;            /* --lease: a lease that is never renewed */
    /* Where the hold stands, without waiting on Redis: CR_OK with its
     * local deadline in *deadline_ms (on cr__cli_now_ms()'s clock; left
     * as it is when none is known), CR_ELOST once it is known lost, any
     * other status when it cannot tell now. Called at every turn of the
     * supervision loop, and at least every check_ms. */
    cr_status (*state)(void *ctx, int64_t *deadline_ms);
    int64_t check_ms;
    /* Releases the hold once the command has ended. CR_ELOST means it had
     * been lost meanwhile. */
    cr_status (*release)(void *ctx);
    void *ctx;
} cr__cli_hold;

/* ------------------------------------------------------------ credisson.c */

/* Prints "credisson: <message>" on one line of stderr. */
void cr__cli_error(cr__cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints what failed ("cannot lock 'x'", formatted from fmt) with the
 * status text and the library's detail on one line of stderr, and returns
 * the exit code for rc. */
int cr__cli_fail(cr__cli *cli, cr_status rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The exit code for a status: BUSY, TIMEOUT and EEXPIRED 75, ELOST 76,
 * EINVAL 64, EIO 69, ENOMEM 71, EAUTH and ENOPERM 77, ECONFIG, ETLS and
 * ENOTSUP 78, every other one 70. */
int cr__cli_exit_code(cr_status rc);

/* Writes "<status text> (<detail>)" for a failure with rc into buf: the
 * detail is the waiting thread's (cli->wait_error, then cleared) or this
 * thread's cr_last_error(), printable; without one, the text alone.
 * Returns buf. */
const char *cr__cli_describe(cr__cli *cli, cr_status rc, char *buf,
                             size_t len);

/* Copies s into buf (len bytes) with bytes that are not printable ASCII
 * replaced by '?' and a long s shortened with "...". Returns buf. */
const char *cr__cli_printable(const char *s, char *buf, size_t len);

/* Formats a duration in ms as "850ms", "12.3s", "4m05s" or "2h07m". */
const char *cr__cli_fmt_ms(int64_t ms, char *buf, size_t len);

/* ---------------------------------------------------------------- run.c */

/* cr__cli_signals_start: block the signals the tool forwards (INT, TERM,
 * HUP, QUIT, USR1, USR2) and SIGCHLD in this thread, before any library
 * thread exists so that all of them inherit the mask, and open the signalfd
 * and the self-pipe the main loop polls. Returns 0 or an exit code. */
int cr__cli_signals_start(cr__cli *cli);

/* cr__cli_notify_lost: tell the main loop that a hold was found lost.
 * Safe on any thread (one write to the self-pipe). */
void cr__cli_notify_lost(cr__cli *cli);

/* Writes the status line shown while waiting, after waited_ms, reading
 * the object's state through `client` (the one the wait began with; the
 * function runs on a thread of its own and must not read cli->client,
 * which the main thread may clear). */
typedef void (*cr__cli_status_fn)(cr__cli *cli, cr_client *client, void *ctx,
                                  int64_t waited_ms, char *buf, size_t len);

/* cr__cli_wait: run fn(ctx) on a thread of its own while the main thread
 * watches for signals and, with the status line, draws it: `status`
 * (NULL: none) is called on a third thread, at once and then half a
 * second after each reading, and the main thread draws each line it
 * writes; the line is cleared when the wait ends, and a reading under way
 * then is not waited for (cr__cli_status_end joins its thread). Returns 0 when fn has returned, its
 * result in *rc. When a signal that ends waits (INT, TERM, HUP, QUIT)
 * arrives first, returns its number at once, within about a tenth of a
 * second whatever Redis does: a call that returns CR_OK within a short
 * grace is undone on its thread with undo(ctx) (may be NULL) before this
 * returns; one still under way is cut off by freeing the client
 * (cli->client becomes NULL; fn then returns CR_ECLOSED), or when there
 * is no client yet, left running with cli->abandoned set, and then ctx
 * must stay valid and the process must end with _exit. After a signal,
 * *rc is fn's result if it returned, else CR_ECLOSED. */
int cr__cli_wait(cr__cli *cli, cr_status (*fn)(void *ctx),
                 void (*undo)(void *ctx), void *ctx, cr__cli_status_fn status,
                 cr_status *rc);

/* cr__cli_status_end: join the thread that read the status line of the
 * last wait, once cli->client is freed (which cuts off a reading still
 * under way). Nothing when there was none. */
void cr__cli_status_end(cr__cli *cli);

/* cr__cli_sync_init: make a mutex and a condition whose timed waits run
 * on the monotonic clock, that of cr__cli_now_ms(). */
void cr__cli_sync_init(pthread_mutex_t *mu, pthread_cond_t *cv);

/* cr__cli_sleep_until: wait on cv (made by cr__cli_sync_init; mu held)
 * until `until` (monotonic ms) or until *stop is set. Returns *stop. */
bool cr__cli_sleep_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         const bool *stop, int64_t until);

/* cr__cli_now_ms: milliseconds on the monotonic clock, the clock of every
 * deadline the runner keeps. */
int64_t cr__cli_now_ms(void);

/* cr__cli_run: run the command args->cmd with `env` (NAME=VALUE strings,
 * NULL-terminated) added to the environment and cli->env_drop taken out,
 * while `hold` is held; forward signals to it; stop it before the hold
 * ends (SIGTERM --kill-after before its local deadline, SIGKILL at it;
 * when found lost earlier, SIGTERM at once and SIGKILL --kill-after later,
 * or at the deadline if that comes first); release the hold when it ends.
 * Returns the exit code of the tool: the command's status, 76 when the
 * hold was lost or the command stopped, 74 when the release failed. */
int cr__cli_run(cr__cli *cli, char **env, const cr__cli_hold *hold);

/* cr__cli_signals_stop: close what cr__cli_signals_start opened. */
void cr__cli_signals_stop(cr__cli *cli);

/* ------------------------------------------------------------ inspect.c */

/* cr__cli_inspect: print what the object under args->name is and its
 * state, as text or JSON. Returns the exit code. */
int cr__cli_inspect(cr__cli *cli);

/* cr__cli_summary: one line on the object's state for the status line
 * ("held by ... for 3.2s+ (count 1, lease 27.0s left; host h, pid p,
 * a.b.c.d:port)", a fair lock's "place 2 of 3 in the queue"), read
 * through `client`; the time held is as seen by this process, from its
 * first look. Called by one thread at a time. */
void cr__cli_summary(cr__cli *cli, cr_client *client, char *buf, size_t len);

/* cr__cli_json_str: write s (len bytes) to f as a JSON string: valid UTF-8
 * as it is, control characters escaped, each byte of an invalid sequence
 * as U+FFFD. */
void cr__cli_json_str(FILE *f, const char *s, size_t len);


#endif
