/* SPDX-License-Identifier: MIT */
/*
 * What the credisson tool prints of the library's introspection
 * (inspect.c): `credisson inspect`, and the state shown while waiting.
 */
#ifndef CR_CLI_INSPECT_H
#define CR_CLI_INSPECT_H

#include <stddef.h>

#include <credisson.h>

#include "cli.h"

/* cr__cli_inspect: print what the object under args->name is and its
 * state, as text or JSON. Returns the exit code. */
int cr__cli_inspect(cr__cli *cli);

/* cr__cli_summary: one line on the object's state for the status line
 * ("held by ... for 3.2s+ (count 1, lease 27.0s left; host h, pid p,
 * a.b.c.d:port)", a fair lock's "place 2 of 3 in the queue"), read
 * through `client`; the time held is as seen by this process, from its
 * first look. Called by one thread at a time. */
void cr__cli_summary(cr__cli *cli, cr_client *client, char *buf, size_t len);

#endif
