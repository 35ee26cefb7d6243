/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the command line of the credisson tool: the input,
 * split at NUL bytes, is an argument vector for cr__cli_parse_args, and the
 * whole input as one string goes through the duration and count parsers.
 * Checks beyond the sanitizers': errors are terminated strings, parsed
 * durations are within range, parsed counts within their bounds, a command
 * run's --kill-after is shorter than its lease, a password found in a URL
 * lies inside it, and a URL's TLS form is one byte longer or the same.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *argv[MAX_ARGS + 2], err[CR__CLI_ERR_MAX];
    char *tls = malloc(size + 2);
    cr__cli_args args;
    int argc = 1;
    size_t i, start = 0, off, len;
    int64_t v, lease;

    if (tls == NULL) {
        free(buf);
        return 0;
    }

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = "credisson";
    for (i = 0; i <= size && argc <= MAX_ARGS; i++) {
        if (i == size || buf[i] == '\0') {
            argv[argc++] = buf + start;
            start = i + 1;
        }
    }
    argv[argc] = NULL;
    memset(err, 'x', sizeof(err));
    if (cr__cli_parse_args(argc, argv, &args, err, sizeof(err)) != 0) {
        if (memchr(err, '\0', sizeof(err)) == NULL)
            abort();
    } else if (args.action == CR__CLI_RUN && !args.help &&
               (args.command == CR__CLI_LOCK ||
                args.command == CR__CLI_SEMAPHORE)) {
        /* A run under a lease (not a barrier's or a rate limiter's):
         * its command is stopped before the lease ends. */
        lease = args.lease_ms > 0      ? args.lease_ms
                : args.watchdog_ms > 0 ? args.watchdog_ms
                                       : CR__CLI_DEFAULT_WATCHDOG_MS;
        if (args.kill_after_ms < 0 || args.kill_after_ms >= lease ||
            args.kill_after_ms > CR__CLI_DURATION_MAX)
            abort();
    }
    (void)cr__cli_command_name(args.command);
    memset(err, 'x', sizeof(err));
    if (cr__cli_parse_duration(buf, true, &v, err, sizeof(err)) == 0) {
        if (v != CR__CLI_FOREVER && (v < 0 || v > CR__CLI_DURATION_MAX))
            abort();
    } else if (memchr(err, '\0', sizeof(err)) == NULL) {
        abort();
    }
    if (cr__cli_parse_count(buf, -5, 1000, &v, err, sizeof(err)) == 0 &&
        (v < -5 || v > 1000))
        abort();
    if (cr__cli_url_password(buf, &off, &len) &&
        (len == 0 || off + len > strlen(buf) || buf[off + len] != '@'))
        abort();
    if (cr__cli_tls_url(buf, tls, size + 2) == 0 &&
        strlen(tls) != strlen(buf) && strlen(tls) != strlen(buf) + 1)
        abort();
    free(tls);
    free(buf);
    return 0;
}
