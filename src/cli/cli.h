/* SPDX-License-Identifier: MIT */
/*
 * The types every file of the credisson tool shares: its exit codes, the
 * state of one run and what is held while a command runs. Types only: the
 * functions live in one header per file (util.h at the bottom, then run.h,
 * inspect.h, conn.h, obtain.h, the commands' cmd_*.h, and credisson.c on
 * top). The tool reaches the library through the public headers only.
 */
#ifndef CR_CLI_H
#define CR_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson.h>

#include "args.h"

/* Exit codes: one table, the same in --help (usage_exit in credisson.c)
 * and in credisson(1); cr__cli_exit_code (util.c) maps every cr_status
 * onto it. A
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
    bool url_from_env;      /* it is $CREDISSON_URL */
    char url_shown[512];    /* the same with the password hidden */
    char name_shown[128];   /* the object's name, printable and shortened */
    /* Every connection's settings (URL, credentials, TLS, name), from the
     * options and the environment; the library's client is made from it,
     * and any other connection the tool opens should follow it too. */
    cr_client_options conn;
    /* Strings conn and url point into, freed last: --url's copy, the
     * --tls form, $CREDISSON_URL's copy. */
    char *owned[4];
    /* From --password-file, else taken out of $CREDISSON_PASSWORD; wiped
     * when freed. */
    char *password;
    char *sentinel_password;/* likewise, --sentinel-password-file */
    /* Variables the command run must not inherit (NULL-terminated). */
    const char *env_drop[4];
    cr_client *client;      /* NULL until connected, and after an abort */
    int64_t started_ms;     /* when main began (cr__cli_now_ms) */
    /* The end of the run until something is obtained: its start, its
     * wait (0 for a command that does not wait) and one command timeout
     * (cr__cli_now_ms's clock, which is the library's); -1: none, for a
     * wait without end. Connecting and every call end by it. */
    int64_t deadline_ms;
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

#endif
