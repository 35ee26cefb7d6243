/* SPDX-License-Identifier: MIT */
/*
 * What the credisson tool prints of the library's introspection
 * (inspect.c): `credisson inspect`, and the state shown while waiting.
 */
#ifndef CR_CLI_INSPECT_H
#define CR_CLI_INSPECT_H

#include <stdbool.h>
#include <stddef.h>

#include <credisson.h>

#include "cli.h"

/* cr__cli_inspect: print what the object under args->name is and its
 * state, as text or JSON. Returns the exit code. */
int cr__cli_inspect(cr__cli *cli);

/* cr__cli_summary: one line on the object's state for the status line
 * and for the message of a wait that ran out ("held by 1b9d6bcd...:1
 * (host h, pid p) for 3.2s+, count 1, lease 27.0s left", a fair lock's
 * "place 2 of 3 in the queue; ..."), read through `client`; the time held
 * is as seen by this process, from its first look (none at the first).
 * "(cannot read its state)" when it cannot be read. Called by one thread
 * at a time. */
void cr__cli_summary(cr__cli *cli, cr_client *client, char *buf, size_t len);

/* cr__cli_kind_phrase: write what a snapshot's kind is, for messages,
 * into buf: "a lock", "a semaphore", "a Redis string" (no object
 * credisson knows), "nothing". Returns buf. */
const char *cr__cli_kind_phrase(const cr_object_info *in, char *buf,
                                size_t len);

/* cr__cli_fits: whether what the snapshot holds is the kind of object
 * the command line's command works on (nothing fits every command), and
 * that kind, for messages ("a lock"), in *wanted. */
bool cr__cli_fits(const cr__cli *cli, const cr_object_info *in,
                  const char **wanted);

/* cr__cli_client_text: write who an owner's client is into buf: "host h,
 * pid p, a.b.c.d:port", "not connected", "unknown"; `brief` (for the
 * status line) leaves the address out and says "client unknown".
 * Returns buf. */
const char *cr__cli_client_text(const cr_owner_info *w, bool brief,
                                char *buf, size_t len);

/* cr__cli_json_client: write `,"client":{...}` for an owner to stdout:
 * connected (host, pid, address), "not connected" or "unknown". */
void cr__cli_json_client(const cr_owner_info *w);

#endif
