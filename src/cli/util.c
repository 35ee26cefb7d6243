/* SPDX-License-Identifier: MIT */
/*
 * The bottom of the credisson tool (util.h): messages, exit codes,
 * printable text, durations, JSON strings, the monotonic clock.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* ------------------------------------------------------------- messages */

void cr__cli_error(cr__cli *cli, const char *fmt, ...)
{
    va_list ap;

    (void)cli;
    fputs("credisson: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cr__cli_exit_code(cr_status rc)
{
    /* No default: a status added to the library makes the compiler ask
     * for its place in the table. */
    switch (rc) {
    case CR_OK: return CR__CLI_EXIT_OK;
    case CR_BUSY: case CR_TIMEOUT: case CR_EEXPIRED: case CR_EBROKEN:
        return CR__CLI_EXIT_BUSY;
    case CR_ELOST: return CR__CLI_EXIT_LOST;
    case CR_EINVAL: return CR__CLI_EXIT_USAGE;
    case CR_EIO: return CR__CLI_EXIT_UNAVAILABLE;
    case CR_ENOMEM: return CR__CLI_EXIT_OSERR;
    case CR_EAUTH: case CR_ENOPERM: return CR__CLI_EXIT_NOPERM;
    case CR_ECONFIG: case CR_ETLS: case CR_ENOTSUP:
        return CR__CLI_EXIT_CONFIG;
    case CR_ENOTOWNER: case CR_ESERVER: case CR_ESCRIPT: case CR_ECLOSED:
    case CR_EFORKED: case CR_EDEADLK: case CR_EREENTRANT: case CR_ECANCELED:
        return CR__CLI_EXIT_SOFTWARE;
    }
    return CR__CLI_EXIT_SOFTWARE;
}

const char *cr__cli_describe(cr__cli *cli, cr_status rc, char *buf,
                             size_t len)
{
    char detail[256];

    /* A failure of the waiting thread left its detail in wait_error. */
    cr__cli_printable(cli->wait_error[0] != '\0' ? cli->wait_error
                                                  : cr_last_error(),
                      detail, sizeof(detail));
    cli->wait_error[0] = '\0';
    if (detail[0] != '\0')
        snprintf(buf, len, "%s (%s)", cr_strerror(rc), detail);
    else
        snprintf(buf, len, "%s", cr_strerror(rc));
    return buf;
}

int cr__cli_fail(cr__cli *cli, cr_status rc, const char *fmt, ...)
{
    char why[384];
    va_list ap;

    cr__cli_describe(cli, rc, why, sizeof(why));
    fputs("credisson: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", why);
    return cr__cli_exit_code(rc);
}

const char *cr__cli_printable(const char *s, char *buf, size_t len)
{
    size_t i;

    if (len == 0)
        return buf;
    for (i = 0; s[i] != '\0' && i + 1 < len; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    buf[i] = '\0';
    if (s[i] != '\0' && len > 4)
        memcpy(buf + len - 4, "...", 4);
    return buf;
}

const char *cr__cli_fmt_ms(int64_t ms, char *buf, size_t len)
{
    if (ms < 0)
        snprintf(buf, len, "-");
    else if (ms < 1000)
        snprintf(buf, len, "%lldms", (long long)ms);
    else if (ms < 60000)
        snprintf(buf, len, "%lld.%llds", (long long)(ms / 1000),
                 (long long)(ms % 1000 / 100));
    else if (ms < 3600000)
        snprintf(buf, len, "%lldm%02llds", (long long)(ms / 60000),
                 (long long)(ms % 60000 / 1000));
    else
        snprintf(buf, len, "%lldh%02lldm", (long long)(ms / 3600000),
                 (long long)(ms % 3600000 / 60000));
    return buf;
}

/* ----------------------------------------------------------------- JSON */

void cr__cli_json_str(FILE *f, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    fputc('"', f);
    while (i < len) {
        unsigned char b = p[i];
        size_t n = 0, k;

        if (b < 0x80) {
            if (b == '"' || b == '\\')
                fprintf(f, "\\%c", b);
            else if (b < 0x20)
                fprintf(f, "\\u%04x", b);
            else
                fputc(b, f);
            i++;
            continue;
        }
        if (b >= 0xc2 && b <= 0xdf)
            n = 2;
        else if (b >= 0xe0 && b <= 0xef)
            n = 3;
        else if (b >= 0xf0 && b <= 0xf4)
            n = 4;
        for (k = 1; n != 0 && k < n; k++)
            if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
                n = 0;
        /* Overlong forms, surrogates and code points past U+10FFFF. */
        if (n != 0 && ((b == 0xe0 && p[i + 1] < 0xa0) ||
                       (b == 0xed && p[i + 1] > 0x9f) ||
                       (b == 0xf0 && p[i + 1] < 0x90) ||
                       (b == 0xf4 && p[i + 1] > 0x8f)))
            n = 0;
        if (n == 0) {
            fputs("\\ufffd", f);
            i++;
        } else {
            fwrite(p + i, 1, n, f);
            i += n;
        }
    }
    fputc('"', f);
}

/* ---------------------------------------------------------------- clock */

int64_t cr__cli_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cr__cli_sync_init(pthread_mutex_t *mu, pthread_cond_t *cv)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(mu, NULL);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

bool cr__cli_sleep_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         const bool *stop, int64_t until)
{
    struct timespec ts;

    ts.tv_sec = until / 1000;
    ts.tv_nsec = (until % 1000) * 1000000;
    while (!*stop && pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT)
        ;
    return *stop;
}
