/* SPDX-License-Identifier: MIT */
/*
 * The credisson tool's connection (conn.c): every connection's settings,
 * from the options and the environment, the client made from them, and
 * the variables given to a command run.
 */
#ifndef CR_CLI_CONN_H
#define CR_CLI_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"

/* Room for the variables a command run gets: its hold's, and with
 * --pass-credentials the connection's. */
#define CR__CLI_ENV_MAX 24

/* cr__cli_hide_url_password: overwrite the password inside the URL `url`
 * (a string of argv) with '*', so that ps and /proc/PID/cmdline stop
 * showing it. The length stays, and so does everything else in it. */
void cr__cli_hide_url_password(char *url);

/* cr__cli_settle_connection: settle every connection setting into
 * cli->conn, and which variables the command run must not inherit: the
 * passwords, and $CREDISSON_URL when it carries one. `url` is --url's
 * copy, or NULL. Returns 0 or an exit code. */
int cr__cli_settle_connection(cr__cli *cli, const char *url);

/* cr__cli_connect: open the client the settings ask for, into
 * cli->client: on the waiting thread when the signal loop runs, so that a
 * signal ends the connecting too. Returns 0 or an exit code (128 + N for
 * signal N), having said why. */
int cr__cli_connect(cr__cli *cli);

/* cr__cli_free_settings: free what the settings own, wiping passwords. */
void cr__cli_free_settings(cr__cli *cli);

/* cr__cli_env_add: add "NAME=VALUE" to a NULL-terminated array of at most
 * max strings. Returns false when out of memory. */
bool cr__cli_env_add(char **env, size_t max, const char *var,
                     const char *value);

/* cr__cli_env_add_credentials: with --pass-credentials, add what a
 * credisson inside the command needs to connect as this one did: the URL
 * (with --tls, its TLS form), users, passwords and TLS settings. Returns
 * false when out of memory. */
bool cr__cli_env_add_credentials(cr__cli *cli, char **env, size_t max);

/* cr__cli_env_free: free the strings cr__cli_env_add put into env,
 * wiping them: some are passwords. */
void cr__cli_env_free(char **env);

#endif
