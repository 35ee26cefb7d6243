/* SPDX-License-Identifier: MIT */
/*
 * `credisson semaphore` (cmd_sem.c).
 */
#ifndef CR_CLI_CMD_SEM_H
#define CR_CLI_CMD_SEM_H

#include "cli.h"

/* cr__cli_cmd_semaphore: semaphore NAME ...: run a command while holding
 * one permit, or set, add, available. The permit-expirable semaphore's
 * calls are used for all of them; on a plain RSemaphore (no issued
 * permits) they act the same. Returns the exit code. */
int cr__cli_cmd_semaphore(cr__cli *cli);

#endif
