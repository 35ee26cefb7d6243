/* SPDX-License-Identifier: MIT */
/*
 * Parsing of the Redis URLs a client is configured with, and writing them
 * back for logs with the password hidden. The module is pure: it reads
 * strings, allocates the parts it returns and does no I/O. Error messages
 * are built only from fixed text and from pieces of the input that were
 * checked to be harmless (a well-formed scheme or query key), so they can
 * never carry the password.
 */
#include "config.h"

#include "url.h"
#include "names.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The longest URL accepted; anything longer is refused unread. */
#define MAX_URL_LEN 65536

/* The longest scheme or query key that is quoted back in an error. */
#define MAX_QUOTED 32

/* The Redis port used when the URL names none. */
#define DEFAULT_PORT 6379
#define DEFAULT_SENTINEL_PORT 26379

/* Write a formatted reason into err when there is room for one, and return
 * CR_EINVAL so that callers can fail in one statement. */
static cr_status fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static cr_status fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return CR_EINVAL;
}

/* Report that memory ran out and return CR_ENOMEM. */
static cr_status fail_nomem(char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "out of memory");
    return CR_ENOMEM;
}

/* Tell whether c is an ASCII letter or digit, independently of the locale. */
static bool is_alnum(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

/* Tell whether c is an ASCII decimal digit. */
static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Tell whether the n bytes at p form a scheme name as RFC 3986 defines it
 * (a letter, then letters, digits, '+', '-' or '.'), short enough to be
 * quoted in an error message. */
static bool is_quotable_scheme(const char *p, size_t n)
{
    size_t i;

    if (n == 0 || n > MAX_QUOTED)
        return false;
    if (!((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')))
        return false;
    for (i = 1; i < n; i++) {
        if (!is_alnum(p[i]) && p[i] != '+' && p[i] != '-' && p[i] != '.')
            return false;
    }
    return true;
}

/* Tell whether the n bytes at p are a short name made of letters, digits,
 * '_' and '-', harmless enough to be quoted in an error message. */
static bool is_quotable_word(const char *p, size_t n)
{
    size_t i;

    if (n == 0 || n > MAX_QUOTED)
        return false;
    for (i = 0; i < n; i++) {
        if (!is_alnum(p[i]) && p[i] != '_' && p[i] != '-')
            return false;
    }
    return true;
}

/* Tell whether the n bytes at word and the sn bytes at secret overlap, that
 * is whether either holds the other; quoting such a word in an error could
 * reveal (part of) the secret. */
static bool overlaps(const char *word, size_t n, const char *secret,
                     size_t sn)
{
    if (secret == NULL || sn == 0)
        return false;
    return memmem(word, n, secret, sn) != NULL ||
           memmem(secret, sn, word, n) != NULL;
}

/* Return the value of the hexadecimal digit c, or -1 when it is not one. */
static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Copy the n bytes at p into a new NUL-terminated string, or return NULL
 * when memory runs out. */
static char *dup_range(const char *p, size_t n)
{
    char *s = malloc(n + 1);

    if (s == NULL)
        return NULL;
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* Overwrite the n bytes at s with zeros and free them, so that a partly
 * decoded password does not linger in freed memory. */
static void discard(char *s, size_t n)
{
    volatile char *v = s;

    while (n-- > 0)
        *v++ = '\0';
    free(s);
}

/* Percent-decode the n bytes at p into a new string stored in *out; an empty
 * range leaves *out NULL, as the part is then absent. `what` names the part
 * in error messages, which never quote the bytes themselves. An escape that
 * is cut short or not hexadecimal is an error, and so is %00, since the
 * result must be a C string. */
static cr_status decode_part(const char *p, size_t n, char **out,
                             const char *what, char *err, size_t errlen)
{
    size_t i, j;
    char *s;

    *out = NULL;
    if (n == 0)
        return CR_OK;
    s = malloc(n + 1);
    if (s == NULL)
        return fail_nomem(err, errlen);
    for (i = 0, j = 0; i < n; i++) {
        int hi, lo;

        if (p[i] != '%') {
            s[j++] = p[i];
            continue;
        }
        hi = i + 2 < n ? hex_value(p[i + 1]) : -1;
        lo = i + 2 < n ? hex_value(p[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            discard(s, j);
            return fail(err, errlen, "malformed percent-escape in the %s",
                        what);
        }
        if (hi == 0 && lo == 0) {
            discard(s, j);
            return fail(err, errlen, "the %s contains %%00", what);
        }
        s[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    s[j] = '\0';
    *out = s;
    return CR_OK;
}

/* Parse the n bytes at p as a decimal number between 0 and max, with no sign
 * and no spaces, into *value. Return false when they are not one. */
static bool parse_number(const char *p, size_t n, long max, long *value)
{
    long v = 0;
    size_t i;

    if (n == 0)
        return false;
    for (i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return false;
        v = v * 10 + (p[i] - '0');
        if (v > max)
            return false;
    }
    *value = v;
    return true;
}

/* Parse the n bytes at p as a database number into u->db. */
static cr_status parse_db(const char *p, size_t n, cr__url *u, char *err,
                          size_t errlen)
{
    long v;

    if (!parse_number(p, n, INT_MAX, &v))
        return fail(err, errlen,
                    "db must be a non-negative integer that fits an int");
    u->db = (int)v;
    return CR_OK;
}

/* Split the n bytes of user information at p into the user and the password
 * at the first ':', and percent-decode both into u. */
static cr_status parse_userinfo(const char *p, size_t n, cr__url *u,
                                char *err, size_t errlen)
{
    const char *colon = memchr(p, ':', n);
    size_t user_len = colon != NULL ? (size_t)(colon - p) : n;
    cr_status rc;

    rc = decode_part(p, user_len, &u->user, "user name", err, errlen);
    if (rc != CR_OK || colon == NULL)
        return rc;
    return decode_part(colon + 1, n - user_len - 1, &u->password, "password",
                       err, errlen);
}

/* Parse sharded=auto|on|off (n bytes of value at v) for redis-cluster://. */
static cr_status parse_sharded(const char *v, size_t n, cr__url *u, char *err,
                               size_t errlen)
{
    static const char *const modes[] = { "auto", "on", "off" };
    int i;

    for (i = 0; i < 3; i++) {
        if (strlen(modes[i]) == n && strncasecmp(v, modes[i], n) == 0) {
            u->sharded = i;
            return CR_OK;
        }
    }
    return fail(err, errlen, "sharded must be auto, on or off");
}

cr_status cr__url_parse_version(const char *v, size_t n, int *out, char *err,
                                size_t errlen)
{
    long part[3] = {0, 0, 0};
    size_t i = 0, parts = 0;

    while (parts < 3) {
        size_t digits = 0;

        while (i < n && v[i] >= '0' && v[i] <= '9' && digits < 4) {
            part[parts] = part[parts] * 10 + (v[i] - '0');
            i++;
            digits++;
        }
        if (digits == 0 || digits == 4 || part[parts] > 999)
            break;
        parts++;
        if (i == n || v[i] != '.')
            break;
        i++;
    }
    if (i != n || parts < 2 || v[n - 1] == '.')
        return fail(err, errlen, "a Redisson version is MAJOR.MINOR or "
                    "MAJOR.MINOR.PATCH, such as 3.23.4");
    *out = CR__VERSION((int)part[0], (int)part[1], (int)part[2]);
    if (*out < CR__VERSION_OLDEST)
        return fail(err, errlen, "Redisson %ld.%ld.%ld is older than the "
                    "oldest line credisson shares objects with (3.10)",
                    part[0], part[1], part[2]);
    return CR_OK;
}

/* Parse the query string that starts at q (just after the '?') up to the end
 * of the string. db=N and redissonVersion=V are understood, and sharded=M
 * for a cluster;
 * `db_given` says whether the path already gave the database, which makes a
 * second one an error. */
static cr_status parse_query(const char *q, bool db_given, cr__url *u,
                             char *err, size_t errlen)
{
    cr_status rc;

    if (strchr(q, '#') != NULL)
        return fail(err, errlen, "fragments ('#') are not supported");
    while (*q != '\0') {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);
        size_t key_len = eq != NULL ? (size_t)(eq - q) : len;

        if (len == 0) {
            q++;
            continue;
        }
        if (u->is_cluster && key_len == 7 && memcmp(q, "sharded", 7) == 0 &&
            eq != NULL) {
            rc = parse_sharded(eq + 1, len - key_len - 1, u, err, errlen);
            if (rc != CR_OK)
                return rc;
            q += len;
            continue;
        }
        if (key_len == 15 && memcmp(q, "redissonVersion", 15) == 0 &&
            eq != NULL) {
            if (u->redisson_version != 0)
                return fail(err, errlen, "redissonVersion is given more "
                            "than once");
            rc = cr__url_parse_version(eq + 1, len - key_len - 1,
                                       &u->redisson_version, err, errlen);
            if (rc != CR_OK)
                return rc;
            q += len;
            continue;
        }
        if (key_len != 2 || memcmp(q, "db", 2) != 0) {
            if (is_quotable_word(q, key_len) &&
                !overlaps(q, key_len, u->password,
                          u->password != NULL ? strlen(u->password) : 0))
                return fail(err, errlen,
                            "unknown query parameter '%.*s' (db, "
                            "redissonVersion and, for a cluster, sharded are "
                            "known)", (int)key_len, q);
            return fail(err, errlen, "unknown query parameter (db, "
                        "redissonVersion and, for a cluster, sharded are "
                        "known)");
        }
        if (db_given)
            return fail(err, errlen, "db is given more than once");
        if (eq == NULL)
            return fail(err, errlen, "db in the query has no value");
        rc = parse_db(eq + 1, len - key_len - 1, u, err, errlen);
        if (rc != CR_OK)
            return rc;
        db_given = true;
        q += len;
    }
    return CR_OK;
}

/* Tell whether the n bytes at p are a host name or IPv4 address: letters,
 * digits, '-', '.' and '_' only. */
static bool is_host_name(const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (!is_alnum(p[i]) && p[i] != '-' && p[i] != '.' && p[i] != '_')
            return false;
    }
    return true;
}

/* Tell whether the n bytes at p could be an IPv6 address: hexadecimal
 * digits, ':' and '.' only, with at least one ':'. */
static bool is_ipv6(const char *p, size_t n)
{
    size_t i;

    if (memchr(p, ':', n) == NULL)
        return false;
    for (i = 0; i < n; i++) {
        if (hex_value(p[i]) < 0 && p[i] != ':' && p[i] != '.')
            return false;
    }
    return true;
}

/* Parse the n bytes at p as host[:port] or [ipv6][:port] into u->host and
 * u->port; the port defaults to `dflt`. */
static cr_status parse_hostport(const char *p, size_t n, int dflt, cr__url *u,
                                char *err, size_t errlen)
{
    const char *host, *port = NULL;
    size_t host_len, port_len = 0;
    long v;

    if (n > 0 && p[0] == '[') {
        const char *close = memchr(p, ']', n);

        if (close == NULL)
            return fail(err, errlen, "'[' without a matching ']' in the host");
        host = p + 1;
        host_len = (size_t)(close - host);
        if (host_len == 0)
            return fail(err, errlen, "host is empty");
        if (!is_ipv6(host, host_len))
            return fail(err, errlen,
                        "host in brackets is not an IPv6 address");
        if (close + 1 < p + n) {
            if (close[1] != ':')
                return fail(err, errlen,
                            "unexpected characters after the IPv6 address");
            port = close + 2;
            port_len = (size_t)(p + n - port);
        }
    } else {
        const char *colon = memchr(p, ':', n);

        host = p;
        host_len = colon != NULL ? (size_t)(colon - p) : n;
        if (colon != NULL) {
            port = colon + 1;
            port_len = n - host_len - 1;
            if (memchr(port, ':', port_len) != NULL)
                return fail(err, errlen,
                            "IPv6 addresses must be written in brackets "
                            "([::1])");
        }
        if (host_len == 0)
            return fail(err, errlen, "host is empty");
        if (!is_host_name(host, host_len))
            return fail(err, errlen, "host contains an invalid character");
    }
    if (port != NULL) {
        if (!parse_number(port, port_len, 65535, &v) || v == 0)
            return fail(err, errlen,
                        "port must be a number between 1 and 65535");
        u->port = (int)v;
    } else {
        u->port = dflt;
    }
    u->host = dup_range(host, host_len);
    if (u->host == NULL)
        return fail_nomem(err, errlen);
    return CR_OK;
}

/* Parse the comma-separated sentinel or seed node addresses (n bytes at p)
 * into u->hosts/ports; the port defaults to `dflt`. */
static cr_status parse_hosts(const char *p, size_t n, int dflt, cr__url *u,
                             char *err, size_t errlen)
{
    size_t count = 1, i;
    cr_status rc;

    for (i = 0; i < n; i++)
        if (p[i] == ',')
            count++;
    if (count > 64)
        return fail(err, errlen, "more than 64 hosts");
    u->hosts = calloc(count, sizeof(*u->hosts));
    u->ports = calloc(count, sizeof(*u->ports));
    if (u->hosts == NULL || u->ports == NULL)
        return fail_nomem(err, errlen);
    for (i = 0; i < count; i++) {
        const char *end = memchr(p, ',', n);
        size_t len = end != NULL ? (size_t)(end - p) : n;

        rc = parse_hostport(p, len, dflt, u, err, errlen);
        if (rc != CR_OK)
            return rc;
        u->hosts[i] = u->host;
        u->ports[i] = u->port;
        u->nhosts++;
        u->host = NULL;
        u->port = 0;
        p += len + (end != NULL ? 1 : 0);
        n -= len + (end != NULL ? 1 : 0);
    }
    return CR_OK;
}

/* Tell whether the scheme of n bytes at s may be quoted in an error: it must
 * look like a scheme, and neither appear in what follows "://" (rest) nor
 * overlap the text where a password would be. */
static bool may_quote_scheme(const char *s, size_t n, const char *rest)
{
    size_t auth_len = strcspn(rest, "/?#");
    const char *at = NULL, *colon;
    size_t i;

    if (!is_quotable_scheme(s, n) || memmem(rest, strlen(rest), s, n) != NULL)
        return false;
    for (i = 0; i < auth_len; i++) {
        if (rest[i] == '@')
            at = rest + i;
    }
    if (at == NULL)
        return true;
    colon = memchr(rest, ':', (size_t)(at - rest));
    if (colon == NULL)
        return true;
    return !overlaps(s, n, colon + 1, (size_t)(at - colon - 1));
}

/* Parse what follows "redis://": [userinfo@]host[:port][/db][?query]. The
 * authority ends at the first '/', '?' or '#', and the user information at
 * the last '@' inside it, so an unencoded '@' in a password still works. */
static cr_status parse_tcp(const char *rest, cr__url *u, char *err,
                           size_t errlen)
{
    size_t auth_len = strcspn(rest, "/?#");
    const char *at = NULL, *p, *hp = rest;
    size_t i, seg;
    bool db_given = false;
    cr_status rc;

    for (i = 0; i < auth_len; i++) {
        if (rest[i] == '@')
            at = rest + i;
    }
    if (strchr(rest + auth_len, '@') != NULL)
        return fail(err, errlen,
                    "'@' after the host; a '/', '?' or '#' in the user or "
                    "password must be percent-encoded");
    if (at != NULL) {
        rc = parse_userinfo(rest, (size_t)(at - rest), u, err, errlen);
        if (rc != CR_OK)
            return rc;
        hp = at + 1;
    }
    if (u->is_sentinel || u->is_cluster)
        rc = parse_hosts(hp, (size_t)(rest + auth_len - hp),
                         u->is_sentinel ? DEFAULT_SENTINEL_PORT : DEFAULT_PORT,
                         u, err, errlen);
    else
        rc = parse_hostport(hp, (size_t)(rest + auth_len - hp), DEFAULT_PORT,
                            u, err, errlen);
    if (rc != CR_OK)
        return rc;
    p = rest + auth_len;
    if (u->is_sentinel) {
        size_t name_len;

        if (*p != '/' || (name_len = strcspn(p + 1, "/?#")) == 0)
            return fail(err, errlen, "redis-sentinel:// needs the master's "
                        "name after the hosts (/mymaster)");
        u->master_name = dup_range(p + 1, name_len);
        if (u->master_name == NULL)
            return fail_nomem(err, errlen);
        p += 1 + name_len;
    }
    if (*p == '/') {
        p++;
        seg = strcspn(p, "?#");
        if (seg > 0) {
            size_t digits = strspn(p, "0123456789");

            if (digits > 0 && digits < seg && p[digits] == '/')
                return fail(err, errlen,
                            "unexpected characters after the db");
            rc = parse_db(p, seg, u, err, errlen);
            if (rc != CR_OK)
                return rc;
            db_given = true;
        }
        p += seg;
    }
    if (u->is_cluster && u->db != 0)
        return fail(err, errlen, "a cluster has only db 0");
    if (*p == '#')
        return fail(err, errlen, "fragments ('#') are not supported");
    if (*p == '?')
        return parse_query(p + 1, db_given, u, err, errlen);
    return CR_OK;
}

/* Parse what follows "unix://": [userinfo@]/absolute/path[?query]. The part
 * before the path may hold only user information ending in '@'; a host
 * there, or a relative path, is refused. */
static cr_status parse_unix(const char *rest, cr__url *u, char *err,
                            size_t errlen)
{
    static const char need_path[] =
        "unix:// needs an absolute socket path (unix:///path/to.sock)";
    size_t auth_len = strcspn(rest, "/?#");
    const char *p = rest + auth_len;
    size_t path_len;
    cr_status rc;

    u->is_unix = true;
    if (auth_len > 0) {
        if (rest[auth_len - 1] != '@')
            return fail(err, errlen, need_path);
        rc = parse_userinfo(rest, auth_len - 1, u, err, errlen);
        if (rc != CR_OK)
            return rc;
    }
    path_len = strcspn(p, "?#");
    if (path_len < 2 || p[0] != '/')
        return fail(err, errlen, need_path);
    u->path = dup_range(p, path_len);
    if (u->path == NULL)
        return fail_nomem(err, errlen);
    p += path_len;
    if (*p == '#')
        return fail(err, errlen, "fragments ('#') are not supported");
    if (*p == '?')
        return parse_query(p + 1, false, u, err, errlen);
    return CR_OK;
}

cr_status cr__url_parse(const char *s, cr__url *out, char *err, size_t errlen)
{
    char plain[32];
    const char *sep;
    size_t len, i, scheme_len;
    cr_status rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL)
        return fail(err, errlen, "no place to store the parsed URL");
    memset(out, 0, sizeof(*out));
    if (s == NULL)
        return fail(err, errlen, "URL is NULL");
    len = strnlen(s, MAX_URL_LEN + 1);
    if (len == 0)
        return fail(err, errlen, "URL is empty");
    if (len > MAX_URL_LEN)
        return fail(err, errlen, "URL is longer than %d bytes", MAX_URL_LEN);
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c == 0x7f)
            return fail(err, errlen, "URL contains a control character");
    }
    sep = strstr(s, "://");
    if (sep == NULL)
        return fail(err, errlen,
                    "URL has no scheme (expected redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, redis-cluster:// or rediss-cluster://)");
    scheme_len = (size_t)(sep - s);
    /* "rediss..." is the TLS form of each TCP scheme: read as "redis...". */
    if (scheme_len >= 6 && scheme_len < sizeof(plain) &&
        strncasecmp(s, "rediss", 6) == 0 && (scheme_len == 6 || s[6] == '-')) {
        out->tls = true;
        snprintf(plain, sizeof(plain), "redis%.*s", (int)(scheme_len - 6),
                 s + 6);
        s = plain;
        scheme_len--;
    }
    if (scheme_len == 5 && strncasecmp(s, "redis", 5) == 0)
        rc = parse_tcp(sep + 3, out, err, errlen);
    else if (scheme_len == 4 && strncasecmp(s, "unix", 4) == 0)
        rc = parse_unix(sep + 3, out, err, errlen);
    else if (scheme_len == 14 && strncasecmp(s, "redis-sentinel", 14) == 0) {
        out->is_sentinel = true;
        rc = parse_tcp(sep + 3, out, err, errlen);
    }
    else if (scheme_len == 13 && strncasecmp(s, "redis-cluster", 13) == 0) {
        out->is_cluster = true;
        rc = parse_tcp(sep + 3, out, err, errlen);
    }
    else if (may_quote_scheme(s, scheme_len, sep + 3))
        rc = fail(err, errlen,
                  "unknown scheme '%.*s' (expected redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, redis-cluster:// or rediss-cluster://)",
                  (int)scheme_len, s);
    else
        rc = fail(err, errlen,
                  "malformed scheme (expected redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, redis-cluster:// or rediss-cluster://)");
    if (rc != CR_OK)
        cr__url_clear(out);
    return rc;
}

void cr__url_clear(cr__url *u)
{
    if (u == NULL)
        return;
    free(u->host);
    free(u->path);
    free(u->user);
    free(u->master_name);
    for (size_t i = 0; i < u->nhosts; i++)
        free(u->hosts[i]);
    free(u->hosts);
    free(u->ports);
    if (u->password != NULL)
        discard(u->password, strlen(u->password));
    memset(u, 0, sizeof(*u));
}

/* A bounded output buffer: text is appended while it fits, and the buffer
 * always stays NUL-terminated. */
struct sink {
    char *buf;
    size_t cap;
    size_t len;
};

/* Append the n bytes at p to the sink, cutting them short when full. */
static void put(struct sink *k, const char *p, size_t n)
{
    size_t room;

    if (k->cap == 0)
        return;
    room = k->cap - 1 - k->len;
    if (n > room)
        n = room;
    memcpy(k->buf + k->len, p, n);
    k->len += n;
    k->buf[k->len] = '\0';
}

/* Append a NUL-terminated string to the sink. */
static void put_str(struct sink *k, const char *s)
{
    put(k, s, strlen(s));
}

/* Append a number to the sink. */
static void put_int(struct sink *k, int v)
{
    char num[16];

    snprintf(num, sizeof(num), "%d", v);
    put_str(k, num);
}

/* Append s percent-encoded, so that ':', '@', '/' and other reserved or
 * unprintable bytes in a user name cannot change how the URL reads. */
static void put_encoded(struct sink *k, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            put(k, s, 1);
        } else {
            char esc[3] = { '%', hex[c >> 4], hex[c & 15] };

            put(k, esc, 3);
        }
    }
}

/* Append host:port, with an IPv6 host in brackets. */
static void put_hostport(struct sink *k, const char *host, int port)
{
    if (host != NULL && strchr(host, ':') != NULL) {
        put_str(k, "[");
        put_str(k, host);
        put_str(k, "]");
    } else {
        put_str(k, host != NULL ? host : "");
    }
    put_str(k, ":");
    put_int(k, port);
}

void cr__url_redacted(const cr__url *u, char *buf, size_t buflen)
{
    struct sink k = { buf, buflen, 0 };

    if (buf == NULL || buflen == 0)
        return;
    buf[0] = '\0';
    if (u == NULL)
        return;
    put_str(&k, u->is_unix ? "unix://" : u->tls ? "rediss" : "redis");
    if (!u->is_unix)
        put_str(&k, u->is_sentinel ? "-sentinel://"
                    : u->is_cluster ? "-cluster://" : "://");
    if (u->user != NULL)
        put_encoded(&k, u->user);
    if (u->password != NULL)
        put_str(&k, ":***");
    if (u->user != NULL || u->password != NULL)
        put_str(&k, "@");
    if (u->is_unix) {
        put_str(&k, u->path != NULL ? u->path : "");
        if (u->db != 0) {
            put_str(&k, "?db=");
            put_int(&k, u->db);
        }
        return;
    }
    if (u->is_sentinel || u->is_cluster) {
        size_t i;

        for (i = 0; i < u->nhosts; i++) {
            put_str(&k, i > 0 ? "," : "");
            put_hostport(&k, u->hosts[i], u->ports[i]);
        }
        if (u->is_sentinel) {
            put_str(&k, "/");
            put_str(&k, u->master_name != NULL ? u->master_name : "");
        } else if (u->sharded != CR__SHARDED_AUTO) {
            put_str(&k, u->sharded == CR__SHARDED_ON ? "/?sharded=on"
                                                     : "/?sharded=off");
        }
    } else {
        put_hostport(&k, u->host, u->port);
    }
    if (u->db != 0) {
        put_str(&k, "/");
        put_int(&k, u->db);
    }
}
