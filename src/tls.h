/* SPDX-License-Identifier: MIT */
/*
 * TLS for the library's connections, on Debian's OpenSSL: one context per
 * client (CA, client certificate, verification settings) and one session
 * per connection, driven step by step on a non-blocking socket by conn.c.
 * Every write goes out with send(2) and MSG_NOSIGNAL (a BIO of our own),
 * so a closed connection never raises SIGPIPE.
 *
 * Thread safety: a context may be shared by every thread; a session is
 * used by one thread at a time.
 */
#ifndef CR_TLS_H
#define CR_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "credisson/status.h"

typedef struct cr__tls cr__tls;
typedef struct cr__tls_session cr__tls_session;

typedef struct cr__tls_settings {
    const char *ca_file;   /* PEM bundle; NULL with ca_dir NULL: the system's */
    const char *ca_dir;    /* hashed directory (c_rehash) */
    const char *cert_file; /* client certificate for mutual TLS, or NULL */
    const char *key_file;  /* its key (NULL: in cert_file) */
    bool insecure;         /* no peer verification at all */
} cr__tls_settings;

/* What a non-blocking step waits for. */
enum { CR__WANT_READ = 1, CR__WANT_WRITE = 2 };

/* cr__tls_new: a context with settings `s`. CR_ETLS with the file and
 * OpenSSL's reason when a file cannot be loaded. */
cr_status cr__tls_new(const cr__tls_settings *s, cr__tls **out);
void cr__tls_free(cr__tls *t);

/* cr__tls_session_new: a client session on connected socket fd, verifying
 * that the server's certificate names `verify_name` (a DNS name, also sent
 * as SNI, or an IP address), unless the context is insecure. */
cr_status cr__tls_session_new(cr__tls *t, int fd, const char *verify_name,
                              cr__tls_session **out);
void cr__tls_session_free(cr__tls_session *s);

/* cr__tls_handshake: one step. 1 when done, 0 when it waits (*want says
 * for what), -1 when it failed: CR_ETLS in *rc with the reason
 * (certificate verify failed: ..., hostname mismatch, an alert), or CR_EIO
 * when the connection broke or the bytes are not TLS (a plain server). */
int cr__tls_handshake(cr__tls_session *s, int *want, cr_status *rc);

/* cr__tls_read / cr__tls_write: > 0 bytes moved, 0 at end of stream
 * (read only), -1 when it waits (*want), -2 on failure: *rc CR_ETLS (an
 * alert: a certificate the server wanted, say) or CR_EIO, the reason in
 * cr_last_error(). */
ssize_t cr__tls_read(cr__tls_session *s, void *buf, size_t n, int *want,
                     cr_status *rc);
ssize_t cr__tls_write(cr__tls_session *s, const void *buf, size_t n,
                      int *want, cr_status *rc);

/* cr__tls_pending: bytes OpenSSL has decrypted and not yet handed out,
 * which poll() on the socket does not see. */
size_t cr__tls_pending(const cr__tls_session *s);

#endif
