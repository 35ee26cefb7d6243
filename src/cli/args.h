/* SPDX-License-Identifier: MIT */
/*
 * The command line of the credisson tool, parsed into a plain structure.
 * This module is pure: it reads only its arguments, does no I/O, reads no
 * environment and keeps no state, so it can be unit-tested and fuzzed on
 * its own. Every failure is a usage error with a one-line reason.
 */
#ifndef CR_CLI_ARGS_H
#define CR_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A wait that never runs out ("--wait forever" or no --wait at all). */
#define CR__CLI_FOREVER ((int64_t)-1)
/* The longest duration accepted: 100 years, as the library's. */
#define CR__CLI_DURATION_MAX ((int64_t)3155760000000LL)
/* The largest count accepted for permits and latch counts. */
#define CR__CLI_COUNT_MAX ((int64_t)2147483647)
/* Room for a usage error message. */
#define CR__CLI_ERR_MAX 256

typedef enum cr__cli_command {
    CR__CLI_NONE = 0,
    CR__CLI_LOCK,
    CR__CLI_SEMAPHORE,
    CR__CLI_LATCH,
    CR__CLI_INSPECT,
    CR__CLI_VERSION
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
    CR__CLI_SHOW            /* inspect NAME */
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
    int64_t timeout_ms;      /* --timeout: Redis connect/command timeout */
    const char *name_prefix; /* --name-prefix; NULL: none */
    bool json;               /* --json */
    bool verbose;            /* -v, --verbose */

    /* The object and the command's own options. */
    const char *name;
    cr__cli_lock_kind kind;
    int64_t wait_ms;         /* --wait, --timeout of await; FOREVER default */
    int64_t lease_ms;        /* --lease; -1: watchdog renewal */
    int64_t watchdog_ms;     /* --watchdog; -1: the library's default */
    int64_t kill_after_ms;   /* --kill-after; 10 s default */
    int64_t permits;         /* --permits; -1: not given */
    int64_t value;           /* the number of set/add */

    /* The command to run: argv-style, NULL-terminated, inside argv. */
    char **cmd;
    int cmd_argc;
} cr__cli_args;

/* cr__cli_parse_args: parse argv[1..argc-1] into *out.
 * Returns 0 on success; -1 on a usage error, with a one-line reason in err
 * (errlen bytes, always NUL-terminated when errlen > 0). *out is filled in
 * either case, so a caller can still print help for the command named. */
int cr__cli_parse_args(int argc, char **argv, cr__cli_args *out, char *err,
                       size_t errlen);

/* cr__cli_parse_duration: parse a duration: a decimal number with an
 * optional fraction and an optional unit, "ms", "s", "m" or "h"; a plain
 * number is seconds. "forever" gives CR__CLI_FOREVER when allow_forever.
 * The result is rounded down to whole milliseconds and must not exceed
 * CR__CLI_DURATION_MAX. Returns 0, or -1 with the reason in err. */
int cr__cli_parse_duration(const char *s, bool allow_forever, int64_t *out_ms,
                           char *err, size_t errlen);

/* cr__cli_parse_count: parse a whole decimal number (an optional leading
 * '-') between min and max inclusive. Returns 0, or -1 with a reason. */
int cr__cli_parse_count(const char *s, int64_t min, int64_t max,
                        int64_t *out, char *err, size_t errlen);

/* cr__cli_command_name: the word for a command ("lock"...), "" for none. */
const char *cr__cli_command_name(cr__cli_command c);

#endif
