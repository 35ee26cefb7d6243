/* SPDX-License-Identifier: MIT */
/*
 * The bottom of the credisson tool: what every other file of it may call
 * and which calls none of them. One-line messages on stderr, the exit code
 * of a status, text made safe to print, durations and JSON strings written
 * out, and the monotonic clock with the sleeps that run on it.
 */
#ifndef CR_CLI_UTIL_H
#define CR_CLI_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <credisson.h>

#include "cli.h"

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

/* cr__cli_json_str: write s (len bytes) to f as a JSON string: valid UTF-8
 * as it is, control characters escaped, each byte of an invalid sequence
 * as U+FFFD. */
void cr__cli_json_str(FILE *f, const char *s, size_t len);

/* cr__cli_now_ms: milliseconds on the monotonic clock, the clock of every
 * deadline the tool keeps. */
int64_t cr__cli_now_ms(void);

/* cr__cli_sync_init: make a mutex and a condition whose timed waits run
 * on the monotonic clock, that of cr__cli_now_ms(). */
void cr__cli_sync_init(pthread_mutex_t *mu, pthread_cond_t *cv);

/* cr__cli_sleep_until: wait on cv (made by cr__cli_sync_init; mu held)
 * until `until` (monotonic ms) or until *stop is set. Returns *stop. */
bool cr__cli_sleep_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         const bool *stop, int64_t until);

#endif
