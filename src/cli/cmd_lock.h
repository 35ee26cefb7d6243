/* SPDX-License-Identifier: MIT */
/*
 * `credisson lock` (cmd_lock.c).
 */
#ifndef CR_CLI_CMD_LOCK_H
#define CR_CLI_CMD_LOCK_H

#include "cli.h"

/* cr__cli_cmd_lock: lock NAME ... -- CMD: acquire the lock of the kind
 * asked for, run CMD while it is held, release it. Returns the exit
 * code. */
int cr__cli_cmd_lock(cr__cli *cli);

#endif
