/* SPDX-License-Identifier: MIT */
/*
 * A program as a user of libcredisson builds it: <credisson.h> only, linked
 * against the shared library, no libtool wrapper and no run path, so that
 * tests/abi/test_abi.sh picks the library it runs against with
 * LD_LIBRARY_PATH. Compiled twice from this file:
 *
 *   probe_old  against include/ (today's header);
 *   probe_new  against tests/abi/next/credisson/client.h, today's header
 *              with one field appended to cr_client_options
 *              (abi_next_option) and one to cr_client_stats
 *              (abi_next_counter): a program built for a newer credisson.
 *
 * Usage: probe MODE [URL [EXPECTED]]
 *   sizes          prints sizeof of both structs and the library loaded
 *   misuse         a zeroed or implausible size is CR_EINVAL with a message
 *                  naming the initialiser (no server needed)
 *   connect URL    cr_client_new with this program's size, a lock taken and
 *                  given back, cr_client_stats_get into a struct followed
 *                  by a canary: the counters arrive, size and canary stay
 *   extra URL ok|enotsup   (probe_new only) the new option set to 1:
 *                  cr_client_new must return CR_OK or CR_ENOTSUP
 * Prints what it checked; exits 0 when every check held, 1 otherwise.
 */
#include <credisson.h>

#include <inttypes.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY UINT64_C(0xa5c3a5c3deadbeef)

static int failures;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "probe: FAILED %s: ", #cond);                     \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            failures++;                                                       \
        }                                                                     \
    } while (0)

/* The statuses the probe meets, by name. */
static const char *
status_name(cr_status rc)
{
    switch (rc) {
    case CR_OK: return "CR_OK";
    case CR_EINVAL: return "CR_EINVAL";
    case CR_ENOTSUP: return "CR_ENOTSUP";
    default: return cr_strerror(rc);
    }
}

/* dl_iterate_phdr callback: copies the path of the libcredisson loaded. */
static int
find_library(struct dl_phdr_info *info, size_t size, void *data)
{
    char *out = data;

    (void)size;
    if (info->dlpi_name != NULL &&
        strstr(info->dlpi_name, "libcredisson") != NULL) {
        snprintf(out, 4096, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* Options for `url` in a heap block of exactly this program's struct, so
 * that a library reading past it is caught by valgrind and ASan. */
static cr_client_options *
options_for(const char *url)
{
    cr_client_options *o = malloc(sizeof(*o));

    if (o == NULL) {
        perror("malloc");
        exit(2);
    }
    *o = (cr_client_options)CR_CLIENT_OPTIONS_INIT;
    o->url = url;
    o->command_timeout_ms = 5000;
    return o;
}

static void
sizes(void)
{
    char lib[4096] = "";

    dl_iterate_phdr(find_library, lib);
    printf("options=%zu stats=%zu library=%s\n", sizeof(cr_client_options),
           sizeof(cr_client_stats), lib);
}

static void
misuse(void)
{
    cr_client_options o;
    cr_client *c = NULL;
    cr_status rc;

    /* A struct zeroed by hand, as every caller did before `size`. */
    memset(&o, 0, sizeof(o));
    o.url = "redis://127.0.0.1:1";
    rc = cr_client_new(&o, &c);
    CHECK(rc == CR_EINVAL, "size 0: %s", status_name(rc));
    CHECK(strstr(cr_last_error(), "CR_CLIENT_OPTIONS_INIT") != NULL,
          "message: %s", cr_last_error());
    printf("size 0: %s: %s\n", status_name(rc), cr_last_error());
    CHECK(c == NULL, "a client made");
    /* A size no struct ever had: too small, and garbage. */
    o.size = sizeof(size_t);
    rc = cr_client_new(&o, &c);
    CHECK(rc == CR_EINVAL, "size 8: %s", status_name(rc));
    o.size = (size_t)1 << 40;
    rc = cr_client_new(&o, &c);
    CHECK(rc == CR_EINVAL, "size 2^40: %s", status_name(rc));
    printf("size 2^40: %s: %s\n", status_name(rc), cr_last_error());
}

/* Takes and gives back a lock, so that the counters move. */
static void
lock_once(cr_client *c)
{
    cr_lock *l = NULL;
    cr_status rc;

    rc = cr_lock_new(c, "abi:probe", &l);
    CHECK(rc == CR_OK, "cr_lock_new: %s: %s", status_name(rc),
          cr_last_error());
    if (rc != CR_OK)
        return;
    rc = cr_lock_try_lock(l, 1000, 10000);
    CHECK(rc == CR_OK, "try_lock: %s: %s", status_name(rc),
          cr_last_error());
    if (rc == CR_OK) {
        rc = cr_lock_unlock(l);
        CHECK(rc == CR_OK, "unlock: %s: %s", status_name(rc),
              cr_last_error());
    }
    cr_lock_free(l);
}

/* cr_client_stats_get into a struct with canaries after it (and, for
 * probe_new, in the field the library may not know): none may change. */
static void
stats(cr_client *c)
{
    struct {
        cr_client_stats st;
        uint64_t after[4];
    } box;
    cr_client_stats zeroed;
    cr_status rc;

    memset(&box, 0xa5, sizeof(box));
    box.st = (cr_client_stats)CR_CLIENT_STATS_INIT;
    for (int i = 0; i < 4; i++)
        box.after[i] = CANARY;
#ifdef ABI_PROBE_NEXT
    box.st.abi_next_counter = CANARY;
#endif
    rc = cr_client_stats_get(c, &box.st);
    CHECK(rc == CR_OK, "stats_get: %s: %s", status_name(rc),
          cr_last_error());
    CHECK(box.st.size == sizeof(cr_client_stats), "size became %zu",
          box.st.size);
    CHECK(box.st.acquisitions >= 1, "acquisitions %" PRIu64,
          box.st.acquisitions);
    CHECK(box.st.commands >= 2, "commands %" PRIu64, box.st.commands);
    for (int i = 0; i < 4; i++)
        CHECK(box.after[i] == CANARY, "canary %d after the struct: %#" PRIx64,
              i, box.after[i]);
#ifdef ABI_PROBE_NEXT
    /* Written by a library that knows the field (0 here: it counts
     * nothing), left alone by one that does not. */
    printf("abi_next_counter=%#" PRIx64 "\n", box.st.abi_next_counter);
#endif
    printf("stats: size=%zu acquisitions=%" PRIu64 " commands=%" PRIu64
           " canaries intact\n", box.st.size, box.st.acquisitions,
           box.st.commands);
    /* A zeroed stats struct is refused, and left as it was. */
    memset(&zeroed, 0, sizeof(zeroed));
    rc = cr_client_stats_get(c, &zeroed);
    CHECK(rc == CR_EINVAL, "zeroed stats: %s", status_name(rc));
    CHECK(strstr(cr_last_error(), "CR_CLIENT_STATS_INIT") != NULL,
          "message: %s", cr_last_error());
    CHECK(zeroed.commands == 0, "a refused struct was written");
}

static void
connect_and_use(const char *url)
{
    cr_client_options *o = options_for(url);
    cr_client *c = NULL;
    cr_status rc;

    rc = cr_client_new(o, &c);
    CHECK(rc == CR_OK, "cr_client_new: %s: %s", status_name(rc),
          cr_last_error());
    free(o);
    if (rc != CR_OK)
        return;
    printf("connected with options of %zu bytes\n",
           sizeof(cr_client_options));
    lock_once(c);
    stats(c);
    cr_client_free(c);
}

#ifdef ABI_PROBE_NEXT
static void
extra(const char *url, const char *expected)
{
    cr_client_options *o = options_for(url);
    cr_client *c = NULL;
    cr_status want = strcmp(expected, "ok") == 0 ? CR_OK : CR_ENOTSUP;
    cr_status rc;

    o->abi_next_option = 1;
    rc = cr_client_new(o, &c);
    printf("abi_next_option=1: %s%s%s\n", status_name(rc),
           rc != CR_OK ? ": " : "", rc != CR_OK ? cr_last_error() : "");
    CHECK(rc == want, "cr_client_new: %s, expected %s", status_name(rc),
          status_name(want));
    if (rc == CR_ENOTSUP)
        CHECK(strstr(cr_last_error(), "does not know") != NULL,
              "message: %s", cr_last_error());
    if (rc == CR_OK) {
        lock_once(c);
        cr_client_free(c);
    }
    free(o);
}
#endif

int
main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    if (strcmp(mode, "sizes") == 0) {
        sizes();
    } else if (strcmp(mode, "misuse") == 0) {
        misuse();
    } else if (strcmp(mode, "connect") == 0 && argc == 3) {
        connect_and_use(argv[2]);
#ifdef ABI_PROBE_NEXT
    } else if (strcmp(mode, "extra") == 0 && argc == 4) {
        extra(argv[2], argv[3]);
#endif
    } else {
        fprintf(stderr, "usage: probe sizes | misuse | connect URL"
#ifdef ABI_PROBE_NEXT
                " | extra URL ok|enotsup"
#endif
                "\n");
        return 2;
    }
    return failures == 0 ? 0 : 1;
}
