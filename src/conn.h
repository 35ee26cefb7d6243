/* SPDX-License-Identifier: MIT */
/*
 * Private to the transport layer (transport.c and pubsub.c), the only files
 * that include <hiredis.h>: opening an authenticated connection and turning
 * hiredis replies into cr__reply.
 */
#ifndef CR_CONN_H
#define CR_CONN_H

#include <hiredis/hiredis.h>

#include "transport.h"

/* cr__conn_open: connect as `cfg` says (TCP or unix socket), or to cluster
 * node host:port when host is not NULL; set the command timeout, AUTH when
 * the URL has a password and SELECT a non-zero db.
 * On failure *out is NULL and the reason is in cr_last_error(): CR_EIO for
 * an unreachable server, CR_ESERVER when AUTH or SELECT was refused. */
cr_status cr__conn_open(const cr__conn_config *cfg, const char *host, int port,
                        redisContext **out);

/* cr__conn_flush: write what `c` has queued with send(2) and MSG_NOSIGNAL,
 * so that a connection the server closed fails with EPIPE instead of
 * raising SIGPIPE (hiredis writes with write(2)). Every write of the
 * library goes through it; hiredis then only reads. REDIS_OK, or REDIS_ERR
 * with c->err and c->errstr set. */
int cr__conn_flush(redisContext *c);

/* cr__conn_call: redisCommandArgv written by cr__conn_flush; NULL when the
 * link failed (c->err says why). Ownership: freeReplyObject(). */
redisReply *cr__conn_call(redisContext *c, int argc, const char **argv);

/* cr__reply_convert: a deep copy of a hiredis reply, or NULL when out of
 * memory. */
cr__reply *cr__reply_convert(const redisReply *r);

/* cr__conn_io_error: record the context's error as this thread's detail and
 * return CR_EIO. */
cr_status cr__conn_io_error(const redisContext *c, const char *what);

#endif
