/* SPDX-License-Identifier: MIT */
/*
 * Commands and scripts on the client's transport, and their replies.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "script.h"

/* The runner of the client an operation is on (its first member). */
static cr__runner *
run(const cr__op *op)
{
    return (cr__runner *)(void *)op->client;
}

/* `cmd` as a command of operation `op`. */
static cr__cmd *
of_op(cr__cmd *cmd, const cr__op *op)
{
    if (cmd->op == NULL)
        cmd->op = op;
    return cmd;
}

/* Turns an error reply into its status (CR_ESERVER, or CR_ENOPERM,
 * CR_EAUTH... by cr__reply_status) with its text; frees it. */
static cr_status
server_error(cr__reply *r)
{
    cr_status rc = cr__fail(cr__reply_status(r->str), "%s", r->str);

    cr__reply_free(r);
    return rc;
}

cr_status
cr__command(const cr__op *op, cr__cmd *cmd, int argc, const char **argv,
            const size_t *lens, cr__reply **out)
{
    cr__reply *r = NULL;
    cr_status rc = cr__transport_command(run(op)->transport, of_op(cmd, op),
                                         argc, argv, lens, &r);

    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_ERROR)
        return server_error(r);
    *out = r;
    return CR_OK;
}

cr_status
cr__command_retry(const cr__op *op, int argc, const char **argv,
                  const size_t *lens, cr__reply **out)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};

    return cr__command(op, &cmd, argc, argv, lens, out);
}

bool
cr__script_call_init(cr__script_call *call, const cr__script *s, size_t argc)
{
    call->script = s;
    call->nkeys = 0;
    call->argc = argc;
    call->argv = call->small_argv;
    call->lens = call->small_lens;
    if (argc <= sizeof(call->small_argv) / sizeof(call->small_argv[0]))
        return true;
    call->argv = malloc(argc * sizeof(*call->argv));
    call->lens = malloc(argc * sizeof(*call->lens));
    return call->argv != NULL && call->lens != NULL;
}

void
cr__script_call_free(cr__script_call *call)
{
    if (call->argv != call->small_argv) {
        free(call->argv);
        free(call->lens);
        call->argv = call->small_argv;
        call->lens = call->small_lens;
    }
}

void
cr__script_call_argv(cr__script_call *call, bool body, char nk[24])
{
    call->argv[0] = body ? "EVAL" : "EVALSHA";
    call->lens[0] = body ? 4 : 7;
    call->argv[1] = body ? call->script->body : call->script->sha1;
    call->lens[1] = body ? call->script->len : 40;
    call->lens[2] = cr__fmt_i64(nk, (int64_t)call->nkeys);
    call->argv[2] = nk;
}

cr_status
cr__script_call_run(const cr__op *op, cr__cmd *cmd, cr__script_call *call,
                    cr__reply **out)
{
    char nk[24];
    cr__reply *r = NULL;
    cr_status rc;

    of_op(cmd, op);
    cr__script_call_argv(call, false, nk);
    rc = cr__transport_command(run(op)->transport, cmd, (int)call->argc,
                               call->argv, call->lens, &r);
    if (rc == CR_OK && r->type == CR__REPLY_ERROR &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
        cr__reply_free(r);
        r = NULL;
        CR__STAT_ADD(&run(op)->stats, noscript_fallbacks, 1);
        cr__script_call_argv(call, true, nk);
        rc = cr__transport_command(run(op)->transport, cmd, (int)call->argc,
                                   call->argv, call->lens, &r);
    }
    if (rc == CR_OK && r->type == CR__REPLY_ERROR)
        return server_error(r);
    if (rc == CR_OK)
        *out = r;
    return rc;
}

cr_status
cr__command_get_int(const cr__op *op, const char *key, const char *what,
                    int64_t *out)
{
    const char *argv[2] = {"GET", key};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__command_retry(op, 2, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    if (r->type != CR__REPLY_NIL && !cr__reply_int(r, &v))
        rc = cr__fail(CR_ESCRIPT, "%s holds no number", what);
    else
        *out = v;
    cr__reply_free(r);
    return rc;
}

void
cr__del_noreply(const cr__op *op, const char *key)
{
    const char *argv[2] = {"DEL", key};

    cr__transport_send_noreply(run(op)->transport, op, 2, argv, NULL);
}

void
cr__reserved_upkeep(cr_client *c, int64_t stale_before, bool open)
{
    cr__transport_upkeep(((cr__runner *)(void *)c)->transport, stale_before,
                         open);
}

bool
cr__reply_int(const cr__reply *r, int64_t *out)
{
    if (r == NULL)
        return false;
    if (r->type == CR__REPLY_INTEGER) {
        *out = r->integer;
        return true;
    }
    if (r->type == CR__REPLY_STRING)
        return cr__parse_i64(r->str, r->len, out);
    return false;
}

cr_status
cr__reply_i64(cr__reply *r, const char *op, int64_t *out)
{
    cr_status rc = CR_OK;

    if (!cr__reply_int(r, out))
        rc = cr__fail(CR_ESCRIPT, "%s replied no integer", op);
    cr__reply_free(r);
    return rc;
}

cr_status
cr__reply_bool(cr__reply *r, const char *op, bool *out)
{
    int64_t v = 0;
    cr_status rc = cr__reply_i64(r, op, &v);

    if (rc == CR_OK)
        *out = v == 1;
    return rc;
}
