/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers: status texts, the per-thread last error, clocks, number
 * formatting and the kernel's random bytes.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common.h"

static _Thread_local char last_error[512];

const char *
cr_strerror(cr_status rc)
{
    switch (rc) {
    case CR_OK: return "success";
    case CR_BUSY: return "not acquired: held by another owner until the wait ran out";
    case CR_TIMEOUT: return "the wait ran out";
    case CR_ENOTOWNER: return "not held by this owner";
    case CR_ELOST: return "the lease was lost: the hold expired or was removed while held";
    case CR_EINVAL: return "invalid argument";
    case CR_ENOMEM: return "out of memory";
    case CR_EIO: return "connection or timeout error talking to Redis";
    case CR_ESERVER: return "Redis returned an error";
    case CR_ESCRIPT: return "unexpected reply from a script";
    case CR_ECLOSED: return "the client is being freed";
    case CR_EFORKED: return "the client belongs to the parent process of a fork()";
    case CR_EDEADLK: return "the call would wait for a hold of the caller itself";
    case CR_EREENTRANT: return "the non-reentrant lock is already held by this owner";
    case CR_EEXPIRED: return "the object expired while being waited on";
    case CR_ENOTSUP: return "operation not supported by this kind of object";
    case CR_EAUTH: return "authentication failed: wrong or missing credentials";
    case CR_ENOPERM: return "permission denied: the ACL user may not run a command";
    case CR_ECONFIG: return "the server does not fit the configuration";
    case CR_ETLS: return "TLS failed";
    case CR_ECANCELED: return "cancelled";
    case CR_EBROKEN: return "the barrier is broken: a party timed out, was cancelled or died, or it was reset";
    }
    return "unknown status";
}

const char *
cr_last_error(void)
{
    return last_error;
}

cr_status
cr__fail(cr_status rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return rc;
}

void
cr__clear_error(void)
{
    last_error[0] = '\0';
}

void
cr__log(const cr__logger *lg, cr_log_level level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (lg == NULL || lg->fn == NULL || level < lg->level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    lg->fn(lg->userdata, level, msg);
}

/* Reads clock `id` in milliseconds. */
static int64_t
clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
cr__now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

void
cr__op_begin(cr__op *op, cr_client *c, int64_t deadline)
{
    *op = (cr__op){.client = c, .start = cr__now_ms(), .deadline = deadline,
                   .patience = -1};
}

int64_t
cr__op_deadline_in(const cr__op *op, int64_t ms)
{
    int64_t d = cr__now_ms() + ms;

    return op->deadline >= 0 && op->deadline < d ? op->deadline : d;
}

int64_t
cr__now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
cr__wall_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

void
cr__sleep_ms(int64_t ms)
{
    cr__sleep_us(ms * 1000);
}

void
cr__sleep_us(int64_t us)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(us / 1000000);
    ts.tv_nsec = (long)(us % 1000000) * 1000;
    while (nanosleep(&ts, &ts) != 0)
        ;
}

size_t
cr__fmt_i64(char *buf, int64_t v)
{
    char tmp[21];
    size_t n = 0, len = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        buf[len++] = '-';
    while (n > 0)
        buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

bool
cr__parse_i64(const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0, limit;

    if (s == NULL || len == 0)
        return false;
    if (s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == len)
        return false;
    limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < len; i++) {
        unsigned d;

        if (s[i] < '0' || s[i] > '9')
            return false;
        d = (unsigned)(s[i] - '0');
        if (v > (limit - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

cr_status
cr__random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;

    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);

        if (got < 0) {
            if (errno == EINTR)
                continue;
            return cr__fail(CR_EIO, "getrandom: %s", strerror(errno));
        }
        p += got;
        n -= (size_t)got;
    }
    return CR_OK;
}

void
cr__hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

char *
cr__strdup_printf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}
