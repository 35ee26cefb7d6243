/* SPDX-License-Identifier: MIT */
/*
 * TLS sessions on OpenSSL (see tls.h).
 *
 * OpenSSL keeps its errors in a queue per thread; each call here clears it
 * first and reads it on failure, so a reason never comes from an earlier
 * call. Peer verification is on unless the settings say insecure: the
 * chain must lead to the CA given (or the system's), and the certificate
 * must name the host asked for (SSL_set1_host for names, the IP address
 * check for addresses).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common.h"
#include "tls.h"

struct cr__tls {
    SSL_CTX *ctx;
    bool insecure;
};

struct cr__tls_session {
    SSL *ssl;
};

/* ------------------------------------------------------------ the BIO */

/* A socket BIO whose writes use send(2) with MSG_NOSIGNAL. */
static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

/* Writes for the BIO: send without SIGPIPE, retry flags as OpenSSL wants. */
static int
nosig_write(BIO *b, const char *buf, int n)
{
    ssize_t w = send(BIO_get_fd(b, NULL), buf, (size_t)n, MSG_NOSIGNAL);

    BIO_clear_retry_flags(b);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_write(b);
    return (int)w;
}

/* Makes the BIO method once: the socket method with our write. */
static void
nosig_init(void)
{
    const BIO_METHOD *sock = BIO_s_socket();

    nosig_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK |
                                    BIO_TYPE_DESCRIPTOR,
                                "credisson socket");
    if (nosig_method == NULL)
        return;
    BIO_meth_set_write(nosig_method, nosig_write);
    BIO_meth_set_read(nosig_method, BIO_meth_get_read(sock));
    BIO_meth_set_puts(nosig_method, BIO_meth_get_puts(sock));
    BIO_meth_set_ctrl(nosig_method, BIO_meth_get_ctrl(sock));
    BIO_meth_set_create(nosig_method, BIO_meth_get_create(sock));
    BIO_meth_set_destroy(nosig_method, BIO_meth_get_destroy(sock));
}

/* ------------------------------------------------------------ errors */

/* The first error in OpenSSL's queue as text (empties the queue). */
static const char *
ssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();

    if (e == 0)
        snprintf(buf, len, "no detail from OpenSSL");
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* ------------------------------------------------------------ contexts */

cr_status
cr__tls_new(const cr__tls_settings *s, cr__tls **out)
{
    char why[256];
    cr__tls *t;

    pthread_once(&nosig_once, nosig_init);
    if (nosig_method == NULL)
        return cr__fail(CR_ENOMEM, "cannot make the TLS socket method");
    ERR_clear_error();
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return CR_ENOMEM;
    t->insecure = s->insecure;
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (t->ctx == NULL) {
        free(t);
        return cr__fail(CR_ETLS, "cannot make a TLS context: %s",
                        ssl_reason(why, sizeof(why)));
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                 SSL_MODE_ENABLE_PARTIAL_WRITE);
    if (s->ca_file != NULL || s->ca_dir != NULL) {
        if (SSL_CTX_load_verify_locations(t->ctx, s->ca_file, s->ca_dir) != 1) {
            cr__tls_free(t);
            return cr__fail(CR_ETLS, "cannot load the CA %s %s: %s",
                            s->ca_file != NULL ? "file" : "directory",
                            s->ca_file != NULL ? s->ca_file : s->ca_dir,
                            ssl_reason(why, sizeof(why)));
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        cr__tls_free(t);
        return cr__fail(CR_ETLS, "cannot load the system's CA certificates: %s",
                        ssl_reason(why, sizeof(why)));
    }
    if (s->cert_file != NULL) {
        const char *key = s->key_file != NULL ? s->key_file : s->cert_file;

        if (SSL_CTX_use_certificate_chain_file(t->ctx, s->cert_file) != 1) {
            cr__tls_free(t);
            return cr__fail(CR_ETLS, "cannot load the client certificate %s: %s",
                            s->cert_file, ssl_reason(why, sizeof(why)));
        }
        if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(t->ctx) != 1) {
            cr__tls_free(t);
            return cr__fail(CR_ETLS, "cannot load the client key %s: %s", key,
                            ssl_reason(why, sizeof(why)));
        }
    } else if (s->key_file != NULL) {
        cr__tls_free(t);
        return cr__fail(CR_EINVAL, "a TLS key was given without a certificate");
    }
    SSL_CTX_set_verify(t->ctx, s->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);
    *out = t;
    return CR_OK;
}

void
cr__tls_free(cr__tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}

/* ------------------------------------------------------------ sessions */

cr_status
cr__tls_session_new(cr__tls *t, int fd, const char *verify_name,
                    cr__tls_session **out)
{
    unsigned char addr[16];
    bool is_ip = inet_pton(AF_INET, verify_name, addr) == 1 ||
                 inet_pton(AF_INET6, verify_name, addr) == 1;
    char why[256];
    cr__tls_session *s;
    BIO *bio;

    ERR_clear_error();
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return CR_ENOMEM;
    s->ssl = SSL_new(t->ctx);
    bio = nosig_method != NULL ? BIO_new(nosig_method) : NULL;
    if (s->ssl == NULL || bio == NULL) {
        BIO_free(bio);
        cr__tls_session_free(s);
        return cr__fail(CR_ENOMEM, "cannot make a TLS session: %s",
                        ssl_reason(why, sizeof(why)));
    }
    BIO_set_fd(bio, fd, BIO_NOCLOSE);
    SSL_set_bio(s->ssl, bio, bio);
    if (!is_ip && verify_name[0] != '\0' &&
        SSL_set_tlsext_host_name(s->ssl, verify_name) != 1) {
        cr__tls_session_free(s);
        return cr__fail(CR_ETLS, "cannot set the TLS server name %s: %s",
                        verify_name, ssl_reason(why, sizeof(why)));
    }
    if (!t->insecure &&
        (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s->ssl),
                                               verify_name) != 1
               : SSL_set1_host(s->ssl, verify_name) != 1)) {
        cr__tls_session_free(s);
        return cr__fail(CR_ETLS, "cannot verify against the name %s: %s",
                        verify_name, ssl_reason(why, sizeof(why)));
    }
    SSL_set_connect_state(s->ssl);
    *out = s;
    return CR_OK;
}

void
cr__tls_session_free(cr__tls_session *s)
{
    if (s == NULL)
        return;
    SSL_free(s->ssl);
    free(s);
}

/* Turns the outcome `n` of an SSL call into 0 (wait: *want set) or -1
 * with the reason recorded; `what` names the step for messages. */
static int
ssl_wait_or_fail(cr__tls_session *s, int n, int *want, const char *what,
                 cr_status *rc)
{
    char why[256];
    int e = SSL_get_error(s->ssl, n);
    long verify;

    switch (e) {
    case SSL_ERROR_WANT_READ:
        *want = CR__WANT_READ;
        return 0;
    case SSL_ERROR_WANT_WRITE:
        *want = CR__WANT_WRITE;
        return 0;
    case SSL_ERROR_ZERO_RETURN:
        *rc = cr__fail(CR_EIO, "TLS %s: the server closed the connection", what);
        return -1;
    case SSL_ERROR_SYSCALL:
        *rc = cr__fail(CR_EIO, "TLS %s: %s", what,
                       errno != 0 ? strerror(errno)
                                  : "the server closed the connection");
        ERR_clear_error();
        return -1;
    default:
        break;
    }
    verify = SSL_get_verify_result(s->ssl);
    if (verify != X509_V_OK) {
        *rc = cr__fail(CR_ETLS, "TLS %s: certificate verify failed: %s", what,
                       X509_verify_cert_error_string(verify));
        ERR_clear_error();
        return -1;
    }
    ssl_reason(why, sizeof(why));
    /* Bytes that are not TLS at all: most likely a plain server. */
    if (strstr(why, "wrong version number") != NULL ||
        strstr(why, "packet length too long") != NULL ||
        strstr(why, "record layer failure") != NULL)
        *rc = cr__fail(CR_EIO, "TLS %s: the server did not answer in TLS (%s)",
                       what, why);
    else
        *rc = cr__fail(CR_ETLS, "TLS %s failed: %s", what, why);
    return -1;
}

int
cr__tls_handshake(cr__tls_session *s, int *want, cr_status *rc)
{
    int n;

    ERR_clear_error();
    errno = 0;
    n = SSL_connect(s->ssl);
    if (n == 1)
        return 1;
    return ssl_wait_or_fail(s, n, want, "handshake", rc);
}

ssize_t
cr__tls_read(cr__tls_session *s, void *buf, size_t n, int *want,
             cr_status *rc)
{
    int got, step;

    ERR_clear_error();
    errno = 0;
    got = SSL_read(s->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (got > 0)
        return got;
    if (SSL_get_error(s->ssl, got) == SSL_ERROR_ZERO_RETURN)
        return 0;
    step = ssl_wait_or_fail(s, got, want, "read", rc);
    return step == 0 ? -1 : -2;
}

ssize_t
cr__tls_write(cr__tls_session *s, const void *buf, size_t n, int *want,
              cr_status *rc)
{
    int put, step;

    ERR_clear_error();
    errno = 0;
    put = SSL_write(s->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (put > 0)
        return put;
    step = ssl_wait_or_fail(s, put, want, "write", rc);
    return step == 0 ? -1 : -2;
}

size_t
cr__tls_pending(const cr__tls_session *s)
{
    return (size_t)SSL_pending(s->ssl);
}
