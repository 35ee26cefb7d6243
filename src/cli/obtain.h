/* SPDX-License-Identifier: MIT */
/*
 * What the credisson tool's commands share around obtaining something
 * (obtain.c): the status line of a wait, the message when it was not
 * obtained, counts printed as text or JSON, and a command run while
 * nothing is held.
 */
#ifndef CR_CLI_OBTAIN_H
#define CR_CLI_OBTAIN_H

#include <stddef.h>
#include <stdint.h>

#include <credisson.h>

#include "cli.h"

/* How often a held lock is checked for loss, besides the lost callback,
 * and how often a leased permit is looked up. */
#define CR__CLI_CHECK_MS 500

/* cr__cli_wait_status: the status line while waiting for a lock, a
 * permit, a latch, a barrier or a rate limiter (a cr__cli_status_fn). */
void cr__cli_wait_status(cr__cli *cli, cr_client *client, void *ctx,
                         int64_t waited_ms, char *buf, size_t len);

/* cr__cli_not_obtained: say why a wait for `what` ("lock") ended without
 * it, unless --quiet (and then who holds it, and since when as this
 * process saw), and return the exit code: 75, or -E's, when it was not
 * obtained in time, else the failure's (as cr__cli_fail_on). */
int cr__cli_not_obtained(cr__cli *cli, const char *what, cr_status rc);

/* cr__cli_fail_on: say that a call on `what` NAME ("semaphore 'x'")
 * failed with rc; when a script or the server failed on what NAME holds,
 * and that is not the command's kind of object, say what it holds
 * instead ("'cronjob' holds a Redis string, not a lock"). Returns the
 * exit code for rc. */
int cr__cli_fail_on(cr__cli *cli, cr_status rc, const char *what);

/* cr__cli_print_count: print a count as text, or with --json as
 * {"name":..., "<key>":n}. */
void cr__cli_print_count(cr__cli *cli, const char *key, int64_t n);

/* cr__cli_run_free: run CMD with the variables `vars` (name, value pairs,
 * NULL-ended) and, with --pass-credentials, the connection's; nothing is
 * held meanwhile. Returns the exit code. */
int cr__cli_run_free(cr__cli *cli, const char *what,
                     const char *const *vars);

#endif
