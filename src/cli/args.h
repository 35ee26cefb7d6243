/* SPDX-License-Identifier: MIT */
/*
 * The command line of the credisson tool, parsed into a plain structure.
 * This module reads only its arguments, does no I/O and keeps no state of
 * its own, so it can be unit-tested and fuzzed on its own. It reads
 * options with getopt_long, whose state (optind, optarg, optopt, opterr)
 * is the process's: each parse resets it, and no other thread may use
 * getopt meanwhile. Every failure is a usage error with a one-line reason.
 */
#ifndef CR_CLI_ARGS_H
#define CR_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "values.h"

/* The lease the watchdog renews when --watchdog is not given: the
 * library's default lock_watchdog_timeout_ms. */
#define CR__CLI_DEFAULT_WATCHDOG_MS ((int64_t)30000)
/* The command timeout when --command-timeout is not given: the library's
 * default command_timeout_ms, and connect_timeout_ms. */
#define CR__CLI_DEFAULT_COMMAND_TIMEOUT_MS ((int64_t)3000)
/* The longest default --kill-after; a shorter lease makes it a third of
 * the lease. */
#define CR__CLI_DEFAULT_KILL_AFTER_MS ((int64_t)10000)

typedef enum cr__cli_command {
    CR__CLI_NONE = 0,
    CR__CLI_LOCK,
    CR__CLI_SEMAPHORE,
    CR__CLI_LATCH,
    CR__CLI_INSPECT,
    CR__CLI_VERSION,
    CR__CLI_BARRIER,
    CR__CLI_RATELIMIT,
    CR__CLI_UNLOCK,         /* unlock --force NAME */
    CR__CLI_DELETE          /* delete NAME */
} cr__cli_command;

typedef enum cr__cli_lock_kind {
    CR__CLI_LOCK_PLAIN = 0, /* RLock */
    CR__CLI_LOCK_FAIR,      /* --fair: RFairLock */
    CR__CLI_LOCK_FENCED,    /* --fenced: RFencedLock */
    CR__CLI_LOCK_READ,      /* --read: the read side of RReadWriteLock */
    CR__CLI_LOCK_WRITE      /* --write: its write side */
} cr__cli_lock_kind;

typedef enum cr__cli_action {
    CR__CLI_RUN = 0,        /* lock/semaphore: run CMD while holding */
    CR__CLI_SEM_SET,        /* semaphore NAME set K */
    CR__CLI_SEM_ADD,        /* semaphore NAME add K */
    CR__CLI_SEM_AVAILABLE,  /* semaphore NAME available */
    CR__CLI_LATCH_SET,      /* latch NAME set N */
    CR__CLI_LATCH_COUNT_DOWN,
    CR__CLI_LATCH_AWAIT,
    CR__CLI_LATCH_COUNT,
    CR__CLI_SHOW,           /* inspect NAME */
    CR__CLI_BARRIER_AWAIT,  /* barrier NAME --parties N, no command */
    CR__CLI_BARRIER_RESET,  /* barrier NAME reset */
    CR__CLI_RL_AVAILABLE,   /* ratelimit NAME available */
    CR__CLI_RL_SET_RATE,    /* ratelimit NAME set-rate R/INTERVAL */
    CR__CLI_LOCK_HOLD,      /* lock NAME, no command: hold until told */
    CR__CLI_FORCE_UNLOCK,   /* unlock --force NAME */
    CR__CLI_DELETE_OBJECT   /* delete NAME */
} cr__cli_action;

/* Everything the command line said. Durations are in ms; -1 in an optional
 * duration means "not given" unless stated otherwise. Strings point into
 * the argv that was parsed. */
typedef struct cr__cli_args {
    cr__cli_command command;
    cr__cli_action action;
    bool help;               /* --help, -h or "help [COMMAND]" */

    /* Global options. */
    const char *url;         /* --url; NULL: not given */
    /* --command-timeout (--timeout before the command word, and after
     * the word of a command that does not wait): Redis's connect and
     * command timeout; -1: not given. */
    int64_t command_timeout_ms;
    const char *name_prefix; /* --name-prefix; NULL: none */
    const char *redisson_version; /* --redisson-version; NULL: the URL's */
    bool json;               /* --json */
    bool verbose;            /* -v, --verbose: the status line */
    bool quiet;              /* -q, --quiet: no "busy", no status line */
    bool no_status;          /* --no-status */

    /* TLS, as redis-cli's options; NULL: not given. */
    bool tls;                /* --tls: redis... URLs become rediss... */
    bool insecure;           /* --insecure: no certificate verification */
    const char *cacert;      /* --cacert FILE */
    const char *cacertdir;   /* --cacertdir DIR */
    const char *cert;        /* --cert FILE */
    const char *key;         /* --key FILE */
    const char *sni;         /* --sni NAME */

    /* Credentials and the connection's name; NULL: not given. Passwords
     * come from files or the environment; one inside --url is hidden from
     * ps by the caller once parsed. */
    const char *user;                   /* --user */
    const char *password_file;          /* --password-file */
    const char *sentinel_user;          /* --sentinel-user */
    const char *sentinel_password_file; /* --sentinel-password-file */
    const char *client_name;            /* --client-name */
    bool pass_credentials;   /* --pass-credentials: CMD gets them too */

    /* The object and the command's own options. */
    const char *name;
    cr__cli_lock_kind kind;
    int64_t wait_ms;         /* --wait, --timeout of await, -n (0);
                              * FOREVER by default */
    int conflict_exit_code;  /* -E, --conflict-exit-code; -1: not given */
    bool must_exist;         /* latch await --must-exist */
    int64_t lease_ms;        /* --lease; -1: watchdog renewal */
    int64_t watchdog_ms;     /* --watchdog; -1: the library's default */
    /* --kill-after; when not given, a third of the lease (--lease, else
     * the watchdog's), at most CR__CLI_DEFAULT_KILL_AFTER_MS. Always
     * shorter than that lease for a command run. */
    int64_t kill_after_ms;
    int64_t permits;         /* --permits; -1: not given */
    int64_t value;           /* the number of set/add */
    int64_t parties;         /* barrier --parties; -1: not given */
    int64_t rate;            /* ratelimit --rate R/INTERVAL (or set-rate's
                              * R/INTERVAL): R; -1: not given */
    int64_t rate_interval_ms;/* its INTERVAL */
    bool per_client;         /* --per-client: RateType.PER_CLIENT */
    int64_t keep_alive_ms;   /* --keep-alive; -1: not given */
    bool force;              /* unlock --force */
    bool yes;                /* --yes: even while its holder is connected */

    /* The command to run: argv-style, NULL-terminated, inside argv. */
    char **cmd;
    int cmd_argc;
} cr__cli_args;

/* cr__cli_parse_args: parse argv[1..argc-1] into *out, in stages: options
 * of every command, the command word, options and NAME, then options and
 * the action or the command to run (from "--", or from the first word of
 * lock or semaphore after NAME that is not an option).
 * Nothing is written to argv and nothing in it is moved: hiding a password
 * given in --url is the caller's (cr__cli_url_password finds it in the
 * string `url` points into, which is inside that option's own word).
 * Returns 0 on success; -1 on a usage error, with a one-line reason in err
 * (errlen bytes, always NUL-terminated when errlen > 0). *out is filled in
 * either case, so a caller can still print help for the command named. */
int cr__cli_parse_args(int argc, char **argv, cr__cli_args *out, char *err,
                       size_t errlen);

/* One option as help shows it: "-w, --wait D" and its lines of text
 * ('\n' between them). */
typedef struct cr__cli_option_doc {
    char short_name;   /* 0: none */
    const char *name;  /* without "--" */
    const char *arg;   /* the value's placeholder; NULL: no value */
    const char *help;
} cr__cli_option_doc;

/* cr__cli_option_docs: the options the parser takes for command c, in the
 * order help lists them: with CR__CLI_NONE those of every command, else
 * c's own (of all its actions). Writes at most max of them into out and
 * returns how many there are. Help made from this lists exactly what the
 * parser accepts. */
size_t cr__cli_option_docs(cr__cli_command c, cr__cli_option_doc *out,
                           size_t max);

/* cr__cli_action_waits: whether the action parsed waits (for a lock, a
 * permit, a latch, a barrier's parties or a rate limiter's permit; --wait
 * bounds it) and may run a command or hold what it got: lock and
 * semaphore with a command or holding, latch await, barrier await,
 * ratelimit with a command. The others make one or a few calls and end. */
bool cr__cli_action_waits(const cr__cli_args *a);

/* cr__cli_command_name: the word for a command ("lock"...), "" for none. */
const char *cr__cli_command_name(cr__cli_command c);

/* One command as help shows it: its word, its forms after the word, one a
 * line ("NAME set K | add K | available": the action words are the first
 * word of each form after NAME and of each piece after " | "), and what
 * it does. */
typedef struct cr__cli_command_doc {
    cr__cli_command command; /* CR__CLI_NONE for "help" */
    const char *name;
    const char *forms;       /* '\n' between forms */
    const char *summary;
} cr__cli_command_doc;

/* cr__cli_command_docs: the commands the parser takes, in the order help
 * lists them, "help" and "version" included. Sets *n to how many; the
 * table is static. Help and the shell completion made from it list
 * exactly the commands and actions the parser accepts. */
const cr__cli_command_doc *cr__cli_command_docs(size_t *n);

#endif
