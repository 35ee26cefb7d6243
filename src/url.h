/* SPDX-License-Identifier: MIT */
/*
 * Parsing of Redis URLs, a pure module (no I/O):
 *   redis://[[user]:password@]host[:port][/db]      (port 6379, db 0 default)
 *   redis://[user:password@][::1]:port/db          (IPv6 in brackets)
 *   unix://[[user]:password@]/path/to.sock[?db=N]
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db]
 *                                                  (Sentinel, port 26379 default)
 *   redis-cluster://[[user]:password@]host[:port][,host[:port]...][?sharded=M]
 *                                 (Cluster seed nodes; M is auto, on or off)
 *   rediss://, rediss-sentinel://, rediss-cluster://: the same over TLS
 * User and password are percent-decoded; with Sentinel they are the master's
 * (sentinels get their own from the client options, else these). A query
 * string may carry db=N too.
 */
#ifndef CR_URL_H
#define CR_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "credisson/status.h"

enum { CR__SHARDED_AUTO = 0, CR__SHARDED_ON, CR__SHARDED_OFF };

typedef struct cr__url {
    bool tls;       /* rediss...:// */
    bool is_unix;
    char *host;     /* NULL for unix:// */
    int port;       /* 0 for unix:// */
    char *path;     /* socket path for unix://, NULL otherwise */
    char *user;     /* NULL when absent */
    char *password; /* NULL when absent */
    int db;         /* 0..INT_MAX */
    /* redis-sentinel:// and redis-cluster://: the sentinels to ask, or the
     * cluster's seed nodes; host and port above are then unset. */
    bool is_sentinel;
    bool is_cluster;
    char *master_name; /* Sentinel: the master's name */
    size_t nhosts;
    char **hosts;
    int *ports;
    /* Cluster: sharded pub/sub mode (protocol 1.3), one of CR__SHARDED_*. */
    int sharded;
    /* ?redissonVersion=V: the Java side's Redisson release (CR__VERSION);
     * 0 when not given. */
    int redisson_version;
} cr__url;

/* cr__url_parse: parse `s` into *out (which needs cr__url_clear after CR_OK).
 * On failure *out is left zeroed and a one-line reason that never contains
 * the password is written to err (errlen bytes, may be 0).
 * Returns CR_OK, CR_EINVAL, CR_ENOMEM. */
cr_status cr__url_parse(const char *s, cr__url *out, char *err, size_t errlen);

/* cr__url_parse_version: parse a Redisson release, MAJOR.MINOR[.PATCH]
 * (`n` bytes at `v`), into *out (CR__VERSION); 3.10 and later.
 * Returns CR_OK or CR_EINVAL with the reason in err. */
cr_status cr__url_parse_version(const char *v, size_t n, int *out, char *err,
                                size_t errlen);

/* cr__url_clear: free what cr__url_parse allocated and zero *u. */
void cr__url_clear(cr__url *u);

/* cr__url_redacted: write `u` back as a URL with the password replaced by
 * "***" into buf (always NUL-terminated); for logs and error messages. */
void cr__url_redacted(const cr__url *u, char *buf, size_t buflen);

#endif
