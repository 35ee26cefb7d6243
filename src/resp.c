/* SPDX-License-Identifier: MIT */
/*
 * RESP2 writing and reading (see resp.h).
 *
 * A reply is read in two passes over the bytes: `scan` checks that a whole
 * reply is there and well formed without allocating anything, then `build`
 * makes the reply tree from bytes known to be good. A reply split over
 * several reads is scanned again from its start when more bytes come; the
 * scan says how many bytes must be there at least before that is worth it
 * (the end of a long string it waits for), so a big string arriving in
 * many pieces is not scanned once per piece.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "resp.h"

/* ---------------------------------------------------------------- buffers */

bool
cr__buf_reserve(cr__buf *b, size_t n)
{
    size_t cap;
    char *grown;

    if (b->cap - b->len >= n)
        return true;
    if (b->off > 0) {
        /* Move the unread part to the front. */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= n)
            return true;
    }
    cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2)
            return false;
        cap *= 2;
    }
    grown = realloc(b->data, cap);
    if (grown == NULL)
        return false;
    b->data = grown;
    b->cap = cap;
    return true;
}

void
cr__buf_free(cr__buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

/* Writes c then v in decimal then CRLF at `p`; returns the bytes written. */
static size_t
put_header(char *p, char c, int64_t v)
{
    size_t n;

    p[0] = c;
    n = 1 + cr__fmt_i64(p + 1, v);
    p[n] = '\r';
    p[n + 1] = '\n';
    return n + 2;
}

bool
cr__resp_append(cr__buf *b, int argc, const char *const *argv,
                const size_t *lens)
{
    size_t need = 24, i;
    char *p;

    for (i = 0; i < (size_t)argc; i++)
        need += 24 + 2 + (lens != NULL ? lens[i] : strlen(argv[i]));
    if (!cr__buf_reserve(b, need))
        return false;
    p = b->data + b->len;
    p += put_header(p, '*', argc);
    for (i = 0; i < (size_t)argc; i++) {
        size_t len = lens != NULL ? lens[i] : strlen(argv[i]);

        p += put_header(p, '$', (int64_t)len);
        if (len > 0)
            memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    b->len = (size_t)(p - b->data);
    return true;
}

/* ---------------------------------------------------------------- replies */

void
cr__reply_free(cr__reply *r)
{
    size_t i;

    if (r == NULL)
        return;
    for (i = 0; i < r->elements; i++)
        cr__reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

bool
cr__resp_is_reply_start(char c)
{
    return c == '+' || c == '-' || c == ':' || c == '$' || c == '*';
}

/* The outcome of scanning: a whole reply, not yet (more bytes needed),
 * or bytes that are not RESP. */
typedef enum scan_result { SCAN_OK, SCAN_MORE, SCAN_BAD } scan_result;

/* Finds the CRLF ending the line that starts at p[0] (n bytes available);
 * returns its offset, or -1 when the line is not complete. A line with a
 * bare CR or LF inside is not RESP: *bad is set. */
static ptrdiff_t
line_end(const char *p, size_t n, bool *bad)
{
    const char *cr = memchr(p, '\r', n);

    if (cr == NULL) {
        *bad = memchr(p, '\n', n) != NULL;
        return -1;
    }
    if (memchr(p, '\n', (size_t)(cr - p)) != NULL) {
        *bad = true;
        return -1;
    }
    if ((size_t)(cr - p) + 1 >= n)
        return -1;
    if (cr[1] != '\n') {
        *bad = true;
        return -1;
    }
    return cr - p;
}

/* Reads the decimal in p[0..len) (an optional '-'); false when it is not
 * one. */
static bool
line_int(const char *p, size_t len, int64_t *v)
{
    return cr__parse_i64(p, len, v);
}

/* Scans one reply at p (n bytes) at nesting `depth`. On SCAN_OK *end is
 * the offset after it; on SCAN_MORE *end is how many bytes at least must
 * be there before it can be whole. */
static scan_result
scan(const char *p, size_t n, int depth, size_t *end)
{
    bool bad = false;
    ptrdiff_t eol;
    int64_t v;
    size_t off, i;

    if (n == 0) {
        *end = 1;
        return SCAN_MORE;
    }
    if (!cr__resp_is_reply_start(p[0])) {
        cr__fail(CR_ESCRIPT, "not a RESP reply (first byte 0x%02x)",
                 (unsigned char)p[0]);
        return SCAN_BAD;
    }
    eol = line_end(p + 1, n - 1, &bad);
    if (bad) {
        cr__fail(CR_ESCRIPT, "not a RESP reply (a bare CR or LF in a line)");
        return SCAN_BAD;
    }
    if (eol < 0) {
        *end = n + 1;
        return SCAN_MORE;
    }
    off = 1 + (size_t)eol + 2;
    switch (p[0]) {
    case '+':
    case '-':
        *end = off;
        return SCAN_OK;
    case ':':
        if (!line_int(p + 1, (size_t)eol, &v)) {
            cr__fail(CR_ESCRIPT, "not a RESP integer");
            return SCAN_BAD;
        }
        *end = off;
        return SCAN_OK;
    case '$':
        if (!line_int(p + 1, (size_t)eol, &v) || v < -1 ||
            v > CR__RESP_MAX_BULK) {
            cr__fail(CR_ESCRIPT, "not a RESP bulk length (or above %lld)",
                     (long long)CR__RESP_MAX_BULK);
            return SCAN_BAD;
        }
        if (v == -1) {
            *end = off;
            return SCAN_OK;
        }
        if (n < off + (size_t)v + 2) {
            *end = off + (size_t)v + 2;
            return SCAN_MORE;
        }
        if (p[off + (size_t)v] != '\r' || p[off + (size_t)v + 1] != '\n') {
            cr__fail(CR_ESCRIPT, "a RESP bulk string without its CRLF");
            return SCAN_BAD;
        }
        *end = off + (size_t)v + 2;
        return SCAN_OK;
    default: /* '*' */
        if (!line_int(p + 1, (size_t)eol, &v) || v < -1 ||
            v > CR__RESP_MAX_ELEMENTS) {
            cr__fail(CR_ESCRIPT, "not a RESP array length (or above %lld)",
                     (long long)CR__RESP_MAX_ELEMENTS);
            return SCAN_BAD;
        }
        if (v > 0 && depth + 1 >= CR__RESP_MAX_DEPTH) {
            cr__fail(CR_ESCRIPT, "RESP arrays nested deeper than %d",
                     CR__RESP_MAX_DEPTH);
            return SCAN_BAD;
        }
        for (i = 0; i < (size_t)(v > 0 ? v : 0); i++) {
            size_t sub;
            scan_result r = scan(p + off, n - off, depth + 1, &sub);

            if (r != SCAN_OK) {
                *end = off + sub;
                return r;
            }
            off += sub;
        }
        *end = off;
        return SCAN_OK;
    }
}

/* Builds the reply at p (n bytes), known to be whole and well formed by
 * scan; *used gets its length. NULL when out of memory. */
static cr__reply *
build(const char *p, size_t n, size_t *used)
{
    const char *eol = memchr(p + 1, '\r', n - 1);
    size_t len = (size_t)(eol - (p + 1)), off = len + 3, i;
    cr__reply *r = calloc(1, sizeof(*r));
    int64_t v = 0;

    if (r == NULL)
        return NULL;
    switch (p[0]) {
    case '+':
    case '-':
        r->type = p[0] == '+' ? CR__REPLY_STATUS : CR__REPLY_ERROR;
        break;
    case ':':
        line_int(p + 1, len, &v);
        r->type = CR__REPLY_INTEGER;
        r->integer = v;
        *used = off;
        return r;
    case '$':
        line_int(p + 1, len, &v);
        if (v < 0) {
            r->type = CR__REPLY_NIL;
            *used = off;
            return r;
        }
        r->type = CR__REPLY_STRING;
        p += off;
        len = (size_t)v;
        off += len + 2;
        break;
    default:
        line_int(p + 1, len, &v);
        *used = off;
        if (v < 0) {
            r->type = CR__REPLY_NIL;
            return r;
        }
        r->type = CR__REPLY_ARRAY;
        if (v == 0)
            return r;
        r->element = calloc((size_t)v, sizeof(*r->element));
        if (r->element == NULL) {
            free(r);
            return NULL;
        }
        r->elements = (size_t)v;
        for (i = 0; i < r->elements; i++) {
            size_t sub = 0;

            if ((r->element[i] = build(p + *used, n - *used, &sub)) == NULL) {
                cr__reply_free(r);
                return NULL;
            }
            *used += sub;
        }
        return r;
    }
    /* A status, an error or a bulk string: len bytes at p (+1 for lines). */
    if (r->type != CR__REPLY_STRING)
        p += 1;
    r->str = malloc(len + 1);
    if (r->str == NULL) {
        free(r);
        return NULL;
    }
    if (len > 0)
        memcpy(r->str, p, len);
    r->str[len] = '\0';
    r->len = len;
    *used = off;
    return r;
}

cr_status
cr__resp_parse(const char *p, size_t n, cr__reply **out, size_t *used)
{
    size_t end = 0;

    switch (scan(p, n, 0, &end)) {
    case SCAN_MORE:
        *used = end;
        return CR_BUSY;
    case SCAN_BAD:
        return CR_ESCRIPT;
    case SCAN_OK:
        break;
    }
    *out = build(p, n, used);
    return *out != NULL ? CR_OK : CR_ENOMEM;
}

cr_status
cr__reply_from_buffer(const char *buf, size_t len, cr__reply **out)
{
    size_t used = 0;

    return cr__resp_parse(buf, len, out, &used);
}
