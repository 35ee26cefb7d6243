/* SPDX-License-Identifier: MIT */
/*
 * The runner of the credisson tool (run.c): signals, waits that a signal
 * can interrupt, and a command run as a child while a hold is kept.
 */
#ifndef CR_CLI_RUN_H
#define CR_CLI_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson.h>

#include "cli.h"

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
 * then is not waited for (cr__cli_status_end joins its thread). Without
 * a status line, a wait that is not one try (and not --quiet) still gets
 * one reading when it has lasted 200 ms, which the message of a wait that
 * ran out uses to say how long the holder has held it. Returns 0 when fn has returned,
 * its result in *rc. When a signal that ends waits (INT, TERM, HUP, QUIT)
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
 * last wait: once cli->client is freed (which cuts off a reading still
 * under way), or before this thread reads the state itself (then it
 * waits for a reading under way, one round trip). Nothing when there
 * was none. */
void cr__cli_status_end(cr__cli *cli);

/* cr__cli_run: run the command args->cmd with `env` (NAME=VALUE strings,
 * NULL-terminated) added to the environment and cli->env_drop taken out,
 * while `hold` is held; forward signals to it; stop it before the hold
 * ends (SIGTERM --kill-after before its local deadline, SIGKILL at it;
 * when found lost earlier, SIGTERM at once and SIGKILL --kill-after later,
 * or at the deadline if that comes first); release the hold when it ends.
 * Returns the exit code of the tool: the command's status, 76 when the
 * hold was lost or the command stopped, 74 when the release failed. */
int cr__cli_run(cr__cli *cli, char **env, const cr__cli_hold *hold);

/* cr__cli_check_program: look the command to run (args->cmd[0]) up as
 * its start will, on $PATH or as the path given, before anything is
 * acquired. Returns 0, or 127 (not found) or 126 (not runnable) having
 * said why; the start looks again. */
int cr__cli_check_program(cr__cli *cli);

/* cr__cli_keep: keep `hold` without a command, until INT, TERM, HUP or
 * QUIT arrives or standard input ends (when it is a pipe, a socket or a
 * terminal), then release it. A hold found lost, or whose local deadline
 * passes (its lease ran out, or could not be renewed), ends at once.
 * Returns 0 once released, 76 when it was lost or ran out, 74 when the
 * release failed. */
int cr__cli_keep(cr__cli *cli, const cr__cli_hold *hold);

/* cr__cli_signals_stop: close what cr__cli_signals_start opened. */
void cr__cli_signals_stop(cr__cli *cli);

#endif
