/* SPDX-License-Identifier: MIT */
/*
 * Running commands and the Lua scripts of lua/ on a client's transport,
 * within an operation (cr__op: its deadline bounds them), and reading
 * their replies. Each script is called through the typed
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
#include "route.h"

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

/* The first argv slot a generated call fills: the runner puts the
 * command, the SHA1 (or body) and the key count in the three before. */
#define CR__SCRIPT_ARGV0 3

/* One script call, built by a generated cr__build_<name>() (its argv
 * points into the args struct it was built from, and into `ints`) and
 * sent by cr__script_call_run, or by the asynchronous transport. */
typedef struct cr__script_call {
    const cr__script *script;
    size_t nkeys, argc;
    const char **argv;
    size_t *lens;
    const char *small_argv[24]; /* argv and lens when they fit */
    size_t small_lens[24];
    char ints[8][24];           /* the :int arguments in decimal */
} cr__script_call;

/* cr__script_call_init: room for argc arguments (false: out of memory).
 * cr__script_call_free: what init took (the call stays usable until
 * then). */
bool cr__script_call_init(cr__script_call *call, const cr__script *s,
                          size_t argc);
void cr__script_call_free(cr__script_call *call);

/* cr__script_call_run: run `call` (EVALSHA, then EVAL on NOSCRIPT). An
 * error reply becomes its status (cr__reply_status: CR_ESERVER,
 * CR_ENOPERM...) with the server's text in cr_last_error().
 * Ownership: *out needs cr__reply_free(). */
cr_status cr__script_call_run(const cr__op *op, cr__cmd *cmd,
                              cr__script_call *call, cr__reply **out);

/* cr__script_call_argv: argv[0..2] of `call` for sending it by EVALSHA
 * (`body` false) or by EVAL (true); `nk` holds the key count's digits. */
void cr__script_call_argv(cr__script_call *call, bool body, char nk[24]);

/* cr__command: one plain command; an error reply becomes its status as
 * with scripts. `lens` may be NULL for C strings. */
cr_status cr__command(const cr__op *op, cr__cmd *cmd, int argc,
                      const char **argv, const size_t *lens, cr__reply **out);

/* cr__command_retry: cr__command with CR__CMD_RETRY, for reads and other
 * commands safe to send twice. */
cr_status cr__command_retry(const cr__op *op, int argc, const char **argv,
                            const size_t *lens, cr__reply **out);

/* cr__command_get_int: GET `key` as a number: 0 when the key does not
 * exist, CR_ESCRIPT ("<what> holds no number") when it is no number. */
cr_status cr__command_get_int(const cr__op *op, const char *key,
                              const char *what, int64_t *out);

/* cr__del_noreply: send DEL of `key` without waiting: an unlock latch
 * after the unlock script replied, as Redisson does, or a semaphore's
 * acquire latch. */
void cr__del_noreply(const cr__op *op, const char *key);

/* cr__reserved_upkeep: the watchdog's care of its reserved connections
 * between renewals, as cr__pool_upkeep says. */
void cr__reserved_upkeep(cr_client *c, int64_t stale_before, bool open);

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
