/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the URL parser: any bytes as a URL go through
 * cr__url_parse; a parsed URL is written back by cr__url_redacted into
 * buffers of several sizes. Checks beyond the sanitizers': the error is
 * always a terminated string that fits, a parse leaves nothing behind on
 * failure, and the redacted text does not depend on the password: it is
 * the same when the password is swapped for another.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t sizes[] = {0, 1, 8, 64, 4096};
    char *s = malloc(size + 1);
    char err[256], out[4096];
    cr__url u;
    size_t i;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    memset(err, 'x', sizeof(err));
    if (cr__url_parse(s, &u, err, sizeof(err)) != CR_OK) {
        static const cr__url zero;

        if (memchr(err, '\0', sizeof(err)) == NULL)
            abort(); /* the reason must be a terminated string */
        if (memcmp(&u, &zero, sizeof(u)) != 0)
            abort(); /* a failed parse leaves *out zeroed */
        free(s);
        return 0;
    }
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        memset(out, 'x', sizeof(out));
        cr__url_redacted(&u, out, sizes[i]);
        if (sizes[i] > 0 && memchr(out, '\0', sizes[i]) == NULL)
            abort(); /* always terminated within the buffer */
    }
    if (u.password != NULL && u.password[0] != '\0') {
        char *pw = u.password;
        char other[4096];

        u.password = "another-password";
        cr__url_redacted(&u, other, sizeof(other));
        u.password = pw;
        if (strcmp(out, other) != 0)
            abort(); /* the password shows in the redacted URL */
    }
    cr__url_clear(&u);
    free(s);
    return 0;
}
