/* SPDX-License-Identifier: MIT */
/*
 * The values on credisson's command line (values.c): durations, counts,
 * rates, the distance of a word to an action, and URL text. Pure: each
 * call reads its arguments only. A failure comes back as -1 with a
 * one-line reason.
 */
#ifndef CR_CLI_VALUES_H
#define CR_CLI_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/ratelimiter.h>

/* A wait that never runs out ("--wait forever" or no --wait at all). */
#define CR__CLI_FOREVER ((int64_t)-1)
/* The longest duration accepted: 100 years, as the library's. */
#define CR__CLI_DURATION_MAX ((int64_t)3155760000000LL)
/* The largest count accepted for permits and latch counts. */
#define CR__CLI_COUNT_MAX ((int64_t)2147483647)
/* The most permits of a rate, the library's. */
#define CR__CLI_RATE_MAX CR_RATE_PERMITS_MAX
/* The most parties of a barrier: the library's CR_BARRIER_PARTIES_MAX. */
#define CR__CLI_PARTIES_MAX ((int64_t)100000)
/* Room for a usage error message. */
#define CR__CLI_ERR_MAX 256

/* cr__cli_why: write the formatted reason into err (errlen bytes, when
 * err is not NULL and errlen > 0) and return -1, so failure paths read
 * `return cr__cli_why(err, errlen, ...)`. */
int cr__cli_why(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* cr__cli_is_digit: whether c is an ASCII digit, whatever the locale. */
bool cr__cli_is_digit(char c);

/* cr__cli_parse_duration: parse a duration: a decimal number with an
 * optional fraction and an optional unit, "ms", "s", "m" or "h" (a plain
 * number is seconds), or several numbers each with its unit, the units
 * from the largest down ("1h15m", "1m30s", "2m0.5s"). "forever" gives
 * CR__CLI_FOREVER when allow_forever. Each part is rounded down to whole
 * milliseconds, and the sum must not exceed CR__CLI_DURATION_MAX.
 * Returns 0, or -1 with the reason in err. */
int cr__cli_parse_duration(const char *s, bool allow_forever, int64_t *out_ms,
                           char *err, size_t errlen);

/* cr__cli_parse_rate: parse a rate "R/INTERVAL": R a count of 1 to
 * CR__CLI_RATE_MAX permits, INTERVAL a duration above 0 (as
 * cr__cli_parse_duration; "10/1s", "100/1m", "5/500ms"). Returns 0, or -1
 * with the reason in err. */
int cr__cli_parse_rate(const char *s, int64_t *rate, int64_t *interval_ms,
                       char *err, size_t errlen);

/* cr__cli_parse_count: parse a whole decimal number (an optional leading
 * '-') between min and max inclusive. Returns 0, or -1 with a reason. */
int cr__cli_parse_count(const char *s, int64_t min, int64_t max,
                        int64_t *out, char *err, size_t errlen);

/* cr__cli_action_distance: the edit distance between a and b (optimal
 * string alignment: insertions, deletions, substitutions and swaps of
 * two neighbours, each 1), or any number above `most` once it is sure
 * to be above it. */
int cr__cli_action_distance(const char *a, const char *b, int most);

/* cr__cli_url_password: where the password of the URL `url` is, by the
 * rule the URL parser reads it with: after "://", the user information
 * ends at the last '@' before the first '/', '?' or '#', and the password
 * is what follows its first ':'. Sets *off and *len (len 0: none) and
 * returns whether there is one. Nothing is decoded or checked. */
bool cr__cli_url_password(const char *url, size_t *off, size_t *len);

/* cr__cli_url_redacted: write `url` into buf (len bytes, always
 * NUL-terminated when len > 0) with its password, found as
 * cr__cli_url_password finds it, replaced by "***": the form messages
 * show. */
void cr__cli_url_redacted(const char *url, char *buf, size_t len);

/* cr__cli_tls_url: write into buf (len bytes) the TLS form of `url`:
 * redis://, redis-sentinel:// and redis-cluster:// (in any case) become
 * rediss://, rediss-sentinel:// and rediss-cluster://, and a URL already
 * in a TLS form is copied as it is. Returns 0; -1 when the URL has no TLS
 * form (unix://, no scheme) or buf is too small. */
int cr__cli_tls_url(const char *url, char *buf, size_t len);

#endif
