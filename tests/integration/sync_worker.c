/* SPDX-License-Identifier: MIT */
/*
 * A separate process for the semaphore and latch tests, run by fork + exec:
 *   sync_worker sem URL NAME ROUNDS FD
 *       ROUNDS times: acquire one permit of the semaphore NAME, count
 *       itself in the shared block mapped from file descriptor FD (a
 *       sync_block: how many are inside now, the most ever seen), stay a
 *       moment, count itself out, release.
 *   sync_worker permit-hold URL NAME LEASE_MS
 *       acquire one permit of the permit-expirable semaphore NAME with that
 *       lease, write its id and a newline to stdout, then wait to be killed.
 *   sync_worker latch-wait URL NAME
 *       await the latch NAME without a limit, then write the status and the
 *       monotonic time in ms ("0 123456\n") to stdout.
 * Exits 0 on success, 1 with a message on stderr otherwise.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "credisson.h"
#include "sync_block.h"
#include "worker_common.h"

/* The "sem" mode. */
static int
run_sem(cr_client *client, const char *name, long rounds, int fd)
{
    sync_block *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED,
                         fd, 0);
    cr_semaphore *sem = NULL;
    cr_status rc;
    long i;

    if (b == MAP_FAILED) {
        perror("sync_worker: mmap");
        return 1;
    }
    if ((rc = cr_semaphore_new(client, name, &sem)) != CR_OK)
        die("cr_semaphore_new", rc);
    for (i = 0; i < rounds; i++) {
        if ((rc = cr_semaphore_acquire(sem, 1)) != CR_OK)
            die("cr_semaphore_acquire", rc);
        sync_block_enter(b);
        usleep(500);
        sync_block_leave(b);
        if ((rc = cr_semaphore_release(sem, 1)) != CR_OK)
            die("cr_semaphore_release", rc);
    }
    atomic_fetch_add(&b->finished, 1);
    cr_semaphore_free(sem);
    munmap(b, sizeof(*b));
    return 0;
}

int
main(int argc, char **argv)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *client = NULL;
    cr_status rc;
    int ret = 0;

    if (argc < 4) {
        fprintf(stderr, "usage: sync_worker sem|permit-hold|latch-wait URL "
                "NAME ...\n");
        return 2;
    }
    o.url = argv[2];
    if ((rc = cr_client_new(&o, &client)) != CR_OK)
        die("cr_client_new", rc);
    if (strcmp(argv[1], "sem") == 0 && argc == 6) {
        ret = run_sem(client, argv[3], atol(argv[4]), atoi(argv[5]));
    } else if (strcmp(argv[1], "permit-hold") == 0 && argc == 5) {
        cr_permit_semaphore *pes = NULL;
        char id[CR_PERMIT_ID_LEN + 2];

        if ((rc = cr_permit_semaphore_new(client, argv[3], &pes)) != CR_OK)
            die("cr_permit_semaphore_new", rc);
        if ((rc = cr_permit_semaphore_acquire(pes, atoll(argv[4]), id)) != CR_OK)
            die("cr_permit_semaphore_acquire", rc);
        strcat(id, "\n");
        if (write(1, id, strlen(id)) != (ssize_t)strlen(id))
            return 1;
        for (;;)
            pause();
    } else if (strcmp(argv[1], "latch-wait") == 0 && argc == 4) {
        cr_latch *latch = NULL;
        char line[64];

        if ((rc = cr_latch_new(client, argv[3], &latch)) != CR_OK)
            die("cr_latch_new", rc);
        rc = cr_latch_await(latch, CR_WAIT_FOREVER);
        snprintf(line, sizeof(line), "%d %lld\n", (int)rc, mono_ms());
        if (write(1, line, strlen(line)) != (ssize_t)strlen(line))
            ret = 1;
        cr_latch_free(latch);
    } else {
        fprintf(stderr, "sync_worker: unknown mode or arguments: %s\n", argv[1]);
        return 2;
    }
    cr_client_free(client);
    return ret;
}
