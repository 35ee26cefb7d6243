/* SPDX-License-Identifier: MIT */
/*
 * Built by tests/cmake/CMakeLists.txt against an installed credisson: the
 * library's version at run time must be the one its CMake package names,
 * and a call that needs no server must work.
 */
#include <stdio.h>
#include <string.h>

#include <credisson.h>

int
main(void)
{
    cr_client_options opts = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;

    if (strcmp(cr_version_str(), CR_EXPECTED_VERSION) != 0) {
        fprintf(stderr, "library %s, package %s\n", cr_version_str(),
                CR_EXPECTED_VERSION);
        return 1;
    }
    /* A URL that is not one: refused before any connection. */
    opts.url = "nowhere://";
    if (cr_client_new(&opts, &client) != CR_EINVAL) {
        fprintf(stderr, "cr_client_new accepted a bad URL\n");
        return 1;
    }
    printf("credisson %s: %s\n", cr_version_str(), cr_strerror(CR_EINVAL));
    return 0;
}
