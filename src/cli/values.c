/* SPDX-License-Identifier: MIT */
/*
 * The values on credisson's command line, read and written as text:
 * durations, counts, rates, how near a word is to an action, and the
 * password, redacted and TLS forms of a URL. Pure: no I/O, no state.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "values.h"

/* Words longer than this are far from every action. */
#define MAX_WORD 40

/* ------------------------------------------------------------- messages */

int cr__cli_why(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---------------------------------------------------- numbers, durations */

bool cr__cli_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The units of a duration, largest first, and their length in ms. */
static const struct {
    const char *name;
    int64_t ms;
} units[] = {{"h", 3600 * 1000}, {"m", 60 * 1000}, {"s", 1000}, {"ms", 1}};
#define N_UNITS (sizeof(units) / sizeof(units[0]))

/* Reads one part of a duration at *p, a number with an optional fraction
 * and then its unit's letters, and moves *p past it. *rank is the unit's
 * place in units[], or N_UNITS when no letters follow the number (a plain
 * number). Adds the part, rounded down to whole ms, to *ms. Returns 0, or
 * -1 with the reason in err. */
static int duration_part(const char **p, int *rank, int64_t *ms, char *err,
                         size_t errlen)
{
    int64_t whole = 0, frac = 0, scale = 1, unit;
    const char *q = *p;
    size_t letters;
    int frac_digits = 0, k;

    if (!cr__cli_is_digit(*q))
        return cr__cli_why(err, errlen, "a duration starts with a digit");
    for (; cr__cli_is_digit(*q); q++) {
        /* Anything past 100 years in seconds already is too long. */
        if (whole > CR__CLI_DURATION_MAX)
            return cr__cli_why(err, errlen, "too long (at most 100 years)");
        whole = whole * 10 + (*q - '0');
    }
    if (*q == '.') {
        q++;
        if (!cr__cli_is_digit(*q))
            return cr__cli_why(err, errlen,
                               "a digit must follow the decimal point");
        for (; cr__cli_is_digit(*q); q++) {
            if (++frac_digits > 9)
                return cr__cli_why(err, errlen, "at most 9 decimals");
            frac = frac * 10 + (*q - '0');
            scale *= 10;
        }
    }
    for (letters = 0; q[letters] >= 'a' && q[letters] <= 'z'; letters++)
        ;
    *rank = (int)N_UNITS;
    unit = 1000;
    for (k = 0; letters > 0 && k < (int)N_UNITS; k++) {
        if (strlen(units[k].name) == letters &&
            memcmp(q, units[k].name, letters) == 0) {
            *rank = k;
            unit = units[k].ms;
        }
    }
    if (letters > 0 && *rank == (int)N_UNITS)
        return cr__cli_why(err, errlen, "unknown unit (use ms, s, m or h)");
    if (whole > CR__CLI_DURATION_MAX / unit)
        return cr__cli_why(err, errlen, "too long (at most 100 years)");
    /* frac < scale <= 1e9 and unit <= 3.6e6: the product fits, and so
     * does the sum of two parts each at most 100 years. */
    *ms += whole * unit + frac * unit / scale;
    if (*ms > CR__CLI_DURATION_MAX)
        return cr__cli_why(err, errlen, "too long (at most 100 years)");
    *p = q + letters;
    return 0;
}

int cr__cli_parse_duration(const char *s, bool allow_forever, int64_t *out_ms,
                           char *err, size_t errlen)
{
    const char *p = s;
    int64_t ms = 0;
    int rank = 0, last = -1;

    if (s == NULL || *s == '\0')
        return cr__cli_why(err, errlen, "empty duration");
    if (strcmp(s, "forever") == 0) {
        if (!allow_forever)
            return cr__cli_why(err, errlen, "\"forever\" is not allowed here");
        *out_ms = CR__CLI_FOREVER;
        return 0;
    }
    /* Parts such as 1h15m or 1m30s, as Go and systemd take them: each
     * with its unit, the units from the largest down; a plain number
     * (seconds) only alone. */
    while (*p != '\0') {
        if (last >= 0 && !cr__cli_is_digit(*p))
            return cr__cli_why(err, errlen, "unknown unit (use ms, s, m or h)");
        if (duration_part(&p, &rank, &ms, err, errlen) != 0)
            return -1;
        if (last >= 0 && rank == (int)N_UNITS)
            return cr__cli_why(err, errlen,
                               "a number after a unit needs its own "
                               "unit (1m30s)");
        if (last >= 0 && rank <= last)
            return cr__cli_why(err, errlen,
                               "units go from the largest down, each "
                               "once (1h15m, 1m30s)");
        if (rank == (int)N_UNITS && *p != '\0')
            return cr__cli_why(err, errlen, "unknown unit (use ms, s, m or h)");
        last = rank;
    }
    *out_ms = ms;
    return 0;
}

int cr__cli_parse_count(const char *s, int64_t min, int64_t max,
                        int64_t *out, char *err, size_t errlen)
{
    const char *p = s;
    bool neg = false;
    int64_t v = 0;

    if (s == NULL || *s == '\0')
        return cr__cli_why(err, errlen, "empty number");
    if (*p == '-') {
        neg = true;
        p++;
    }
    if (!cr__cli_is_digit(*p))
        return cr__cli_why(err, errlen, "not a whole number");
    for (; cr__cli_is_digit(*p); p++) {
        if (v > CR__CLI_COUNT_MAX * 10)
            return cr__cli_why(err, errlen, "out of range");
        v = v * 10 + (*p - '0');
    }
    if (*p != '\0')
        return cr__cli_why(err, errlen, "not a whole number");
    if (neg)
        v = -v;
    if (v < min || v > max)
        return cr__cli_why(err, errlen, "out of range (%lld..%lld)",
                           (long long)min, (long long)max);
    *out = v;
    return 0;
}

int cr__cli_parse_rate(const char *s, int64_t *rate, int64_t *interval_ms,
                       char *err, size_t errlen)
{
    char num[24], why[CR__CLI_ERR_MAX];
    const char *slash = strchr(s, '/');
    size_t n = slash != NULL ? (size_t)(slash - s) : 0;
    int64_t r, ms;

    if (slash == NULL || n == 0 || n >= sizeof(num))
        return cr__cli_why(err, errlen, "not R/INTERVAL");
    memcpy(num, s, n);
    num[n] = '\0';
    if (cr__cli_parse_count(num, 1, CR__CLI_RATE_MAX, &r, why,
                            sizeof(why)) != 0)
        return cr__cli_why(err, errlen, "permits: %s", why);
    if (cr__cli_parse_duration(slash + 1, false, &ms, why, sizeof(why)) != 0)
        return cr__cli_why(err, errlen, "interval: %s", why);
    if (ms == 0)
        return cr__cli_why(err, errlen, "interval: must be more than 0");
    *rate = r;
    *interval_ms = ms;
    return 0;
}

/* ------------------------------------------------------------- actions */

int cr__cli_action_distance(const char *a, const char *b, int most)
{
    /* Three rows of the optimal string alignment table, for words of at
     * most MAX_WORD characters (longer ones are far from any action). */
    int rows[3][MAX_WORD + 2], *prev2 = rows[0], *prev = rows[1],
        *cur = rows[2], *t;
    size_t la = strlen(a), lb = strlen(b), i, j;

    if (la > MAX_WORD || lb > MAX_WORD ||
        (la > lb ? la - lb : lb - la) > (size_t)most)
        return most + 1;
    for (j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = prev[j] + 1;

            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (prev[j - 1] + cost < best)
                best = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

/* ------------------------------------------------------------------ URLs */

bool cr__cli_url_password(const char *url, size_t *off, size_t *len)
{
    const char *rest = strstr(url, "://"), *at = NULL, *colon;
    size_t auth_len, i;

    *off = *len = 0;
    if (rest == NULL)
        return false;
    rest += 3;
    auth_len = strcspn(rest, "/?#");
    for (i = 0; i < auth_len; i++)
        if (rest[i] == '@')
            at = rest + i;
    if (at == NULL)
        return false;
    colon = memchr(rest, ':', (size_t)(at - rest));
    if (colon == NULL || colon + 1 == at)
        return false;
    *off = (size_t)(colon + 1 - url);
    *len = (size_t)(at - colon - 1);
    return true;
}

void cr__cli_url_redacted(const char *url, char *buf, size_t len)
{
    size_t off, n;

    if (len == 0)
        return;
    if (!cr__cli_url_password(url, &off, &n)) {
        snprintf(buf, len, "%s", url);
        return;
    }
    snprintf(buf, len, "%.*s***%s", (int)off, url, url + off + n);
}

int cr__cli_tls_url(const char *url, char *buf, size_t len)
{
    static const char *const tcp[] = {"redis", "redis-sentinel",
                                      "redis-cluster"};
    const char *sep = strstr(url, "://");
    size_t scheme_len, i;

    if (sep == NULL)
        return -1;
    scheme_len = (size_t)(sep - url);
    for (i = 0; i < sizeof(tcp) / sizeof(tcp[0]); i++) {
        size_t n = strlen(tcp[i]);

        if (scheme_len == n + 1 && strncasecmp(url, "rediss", 6) == 0 &&
            strncasecmp(url + 6, tcp[i] + 5, n - 5) == 0) {
            /* Already a TLS form. */
            if (strlen(url) >= len)
                return -1;
            strcpy(buf, url);
            return 0;
        }
        if (scheme_len == n && strncasecmp(url, tcp[i], n) == 0) {
            /* "redis" + "s" + the rest ("-sentinel://..."). */
            if (strlen(url) + 1 >= len)
                return -1;
            memcpy(buf, url, 5);
            buf[5] = 's';
            strcpy(buf + 6, url + 5);
            return 0;
        }
    }
    return -1;
}
