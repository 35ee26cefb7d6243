/* SPDX-License-Identifier: MIT */
/*
 * Running commands and the Lua scripts of lua/ on a client's transport,
 * and reading their replies. Each script is called through the typed
 * argument struct and cr__run_<name>() that build-aux/embed-lua.sh
 * generates from the script's "--! keys:" and "--! argv:" lines into
 * scripts.h; a script is sent by EVALSHA first, by EVAL when the server
 * answers NOSCRIPT (after SCRIPT FLUSH or a restart).
 */
#ifndef CR_SCRIPT_H
#define CR_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credisson/client.h"
#include "resp.h"
#include "transport.h"

/* What running commands needs of a client: the first member of struct
 * cr_client, so that every cr_client * taken here is one of these. */
typedef struct cr__runner {
    cr__transport *transport;
    cr__stats stats;
} cr__runner;

/* Bytes with a length (a script's :bin argument). */
typedef struct cr__bytes {
    const char *p;
    size_t len;
} cr__bytes;

/* One embedded script. */
typedef struct cr__script {
    const char *name;
    const char *sha1; /* 40 lowercase hex characters */
    const char *body;
    size_t len;
} cr__script;

/* The first argv slot a generated call fills: cr__script_run puts the
 * command, the SHA1 (or body) and the key count in the three before. */
#define CR__SCRIPT_ARGV0 3

/* cr__script_run: run script `s` with argv[3..argc)
 * (lens: their lengths), of which the first nkeys are keys; argv[0..2]
 * are the runner's. An error reply becomes its status (cr__reply_status:
 * CR_ESERVER, CR_ENOPERM...) with the server's text in cr_last_error().
 * The generated cr__run_<name>() calls are the way in.
 * Ownership: *out needs cr__reply_free(). */
cr_status cr__script_run(cr_client *c, cr__cmd *cmd, const cr__script *s,
                         size_t nkeys, size_t argc, const char **argv,
                         size_t *lens, cr__reply **out);

/* cr__command: one plain command; an error reply becomes its status as
 * with scripts. `lens` may be NULL for C strings. */
cr_status cr__command(cr_client *c, cr__cmd *cmd, int argc, const char **argv,
                      const size_t *lens, cr__reply **out);

/* cr__command_retry: cr__command with CR__CMD_RETRY, for reads and other
 * commands safe to send twice. */
cr_status cr__command_retry(cr_client *c, int argc, const char **argv,
                            const size_t *lens, cr__reply **out);

/* cr__command_get_int: GET `key` as a number: 0 when the key does not
 * exist, CR_ESCRIPT ("<what> holds no number") when it is no number. */
cr_status cr__command_get_int(cr_client *c, const char *key, const char *what,
                              int64_t *out);

/* cr__drop_latch: send DEL of an unlock latch without waiting (after the
 * unlock script replied, as Redisson does). */
void cr__drop_latch(cr_client *c, const char *latch);

/* cr__reply_int: the integer of an INTEGER reply, or of a STRING holding a
 * decimal; false otherwise. */
bool cr__reply_int(const cr__reply *r, int64_t *out);

/* cr__reply_i64: *out = an integer reply (or a string of a decimal);
 * CR_ESCRIPT naming `op` otherwise. Frees the reply. */
cr_status cr__reply_i64(cr__reply *r, const char *op, int64_t *out);

/* cr__reply_bool: *out = (an integer reply is 1); CR_ESCRIPT naming `op`
 * when the reply is no integer. Frees the reply. */
cr_status cr__reply_bool(cr__reply *r, const char *op, bool *out);

#endif
