/* SPDX-License-Identifier: MIT */
/*
 * `credisson unlock --force` and `credisson delete` (cmd_remove.c).
 */
#ifndef CR_CLI_CMD_REMOVE_H
#define CR_CLI_CMD_REMOVE_H

#include "cli.h"

/* cr__cli_cmd_remove: unlock --force NAME (the lock's forceUnlock) or
 * delete NAME (its kind's delete): read what NAME holds, refuse while its
 * holder's client may be running unless --yes, remove it and print whom
 * it removed. Returns the exit code: 79 when nothing is under NAME, 64
 * for a name that holds no lock (unlock) or no known object (delete), 75
 * when refused. */
int cr__cli_cmd_remove(cr__cli *cli);

#endif
