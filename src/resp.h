/* SPDX-License-Identifier: MIT */
/*
 * The Redis protocol (RESP2) as bytes, a pure module: commands written into
 * a growing buffer, and replies read incrementally from the bytes a server
 * sent, into the library's own reply type. No I/O, no locks.
 *
 * The reader allocates only for what has fully arrived: a header that
 * announces a huge array or string costs nothing until its bytes are
 * there, arrays nest at most CR__RESP_MAX_DEPTH deep and hold at most
 * CR__RESP_MAX_ELEMENTS elements, strings at most CR__RESP_MAX_BULK bytes,
 * so a broken or hostile server cannot make the client allocate more than
 * a small multiple of what it sent.
 */
#ifndef CR_RESP_H
#define CR_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credisson/status.h"

typedef enum cr__reply_type {
    CR__REPLY_NIL = 0,
    CR__REPLY_INTEGER,
    CR__REPLY_STRING, /* bulk string */
    CR__REPLY_STATUS,
    CR__REPLY_ERROR,
    CR__REPLY_ARRAY
} cr__reply_type;

typedef struct cr__reply {
    cr__reply_type type;
    long long integer;
    char *str; /* NUL-terminated copy for STRING, STATUS and ERROR */
    size_t len;
    size_t elements;
    struct cr__reply **element;
} cr__reply;

void cr__reply_free(cr__reply *r);

#define CR__RESP_MAX_DEPTH 16
#define CR__RESP_MAX_ELEMENTS ((int64_t)1 << 20)
#define CR__RESP_MAX_BULK ((int64_t)512 * 1024 * 1024)

/* A byte buffer: data[off..len) is what is still to be sent or read. */
typedef struct cr__buf {
    char *data;
    size_t off, len, cap;
} cr__buf;

/* cr__buf_reserve: room for n more bytes after len; false when out of
 * memory. Moves the unread part to the front first when that is enough. */
bool cr__buf_reserve(cr__buf *b, size_t n);
void cr__buf_free(cr__buf *b);

/* cr__resp_append: write one command (argc arguments; lens may be NULL for
 * C strings) into b. False when out of memory (b unchanged). */
bool cr__resp_append(cr__buf *b, int argc, const char *const *argv,
                     const size_t *lens);

/* cr__resp_parse: parse one reply from the n bytes at p. Returns CR_OK
 * with *out and *used (the bytes it took), CR_BUSY when the bytes end
 * before the reply does (*used then says how many bytes at least must be
 * there before trying again is worth it), CR_ESCRIPT when they are not
 * RESP or break a limit (a reason in cr_last_error()), CR_ENOMEM. */
cr_status cr__resp_parse(const char *p, size_t n, cr__reply **out,
                         size_t *used);

/* cr__reply_from_buffer: one reply from len bytes (for tests and the
 * fuzzer): CR_OK with *out, CR_BUSY when they end before the reply does,
 * CR_ESCRIPT when they are not RESP, CR_ENOMEM. */
cr_status cr__reply_from_buffer(const char *buf, size_t len, cr__reply **out);

/* cr__resp_is_reply_start: whether byte c can begin a RESP2 reply. */
bool cr__resp_is_reply_start(char c);

#endif
