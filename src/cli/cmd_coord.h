/* SPDX-License-Identifier: MIT */
/*
 * `credisson latch`, `barrier` and `ratelimit` (cmd_coord.c).
 */
#ifndef CR_CLI_CMD_COORD_H
#define CR_CLI_CMD_COORD_H

#include "cli.h"

/* cr__cli_cmd_latch: latch NAME set N | count-down | await | count.
 * Returns the exit code. */
int cr__cli_cmd_latch(cr__cli *cli);

/* cr__cli_cmd_barrier: barrier NAME --parties N [-w D] [-- CMD]: arrive,
 * wait for the round, then run CMD or print the generation and the index;
 * or barrier NAME reset. Returns the exit code. */
int cr__cli_cmd_barrier(cr__cli *cli);

/* cr__cli_cmd_ratelimit: ratelimit NAME [--rate R/I] -- CMD | available.
 * Returns the exit code. */
int cr__cli_cmd_ratelimit(cr__cli *cli);

#endif
