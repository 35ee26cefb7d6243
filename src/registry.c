/* SPDX-License-Identifier: MIT */
/*
 * Identity of clients and threads.
 *
 * Thread ids are taken from a process-wide counter the first time a thread
 * asks and kept in a thread-local variable, so no two threads of a process
 * ever share one, unlike pthread_self() and gettid() values that the system
 * reuses (a new thread would inherit a dead thread's reentrant holds).
 *
 * fork(): the child inherits the parent's clients, holds and thread ids, but
 * not its threads. A pthread_atfork child handler bumps a generation number;
 * every client call compares it with the client's own and refuses with
 * CR_EFORKED, so a child can neither renew nor release the parent's holds.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "credisson/client.h"
#include "registry.h"

static atomic_int_fast64_t next_tid = 1;
static _Thread_local int64_t my_tid;
static atomic_uint fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

int64_t
cr_thread_id(void)
{
    if (my_tid == 0)
        my_tid = atomic_fetch_add(&next_tid, 1);
    return my_tid;
}

/* Runs in the child after fork(). */
static void
after_fork_child(void)
{
    atomic_fetch_add(&fork_gen, 1);
}

/* Registers the fork handler once per process. */
static void
install_atfork(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

void
cr__registry_init(void)
{
    pthread_once(&atfork_once, install_atfork);
}

unsigned
cr__fork_generation(void)
{
    return atomic_load(&fork_gen);
}

cr_status
cr__uuid_v4(char out[37])
{
    unsigned char b[16];
    char hex[33];
    cr_status rc = cr__random_bytes(b, sizeof(b));

    if (rc != CR_OK)
        return rc;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    cr__hex(b, sizeof(b), hex);
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
             hex + 16, hex + 20);
    return CR_OK;
}

/* One step of the splitmix64 output function: a bijection that spreads
 * every input bit over the output. */
static uint64_t
mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static _Thread_local struct {
    uint64_t counter, salt; /* seeded from the kernel */
    unsigned fork_gen;      /* when they were seeded */
    bool seeded;
} request_ids;

cr_status
cr__request_id(unsigned char out[16])
{
    uint64_t a, b;

    if (!request_ids.seeded || request_ids.fork_gen != cr__fork_generation()) {
        uint64_t seed[2];
        cr_status rc = cr__random_bytes(seed, sizeof(seed));

        if (rc != CR_OK)
            return rc;
        request_ids.counter = seed[0];
        request_ids.salt = seed[1];
        request_ids.fork_gen = cr__fork_generation();
        request_ids.seeded = true;
    }
    /* A Weyl sequence through a bijection: no repeat within a thread for
     * 2^64 draws; the salt keeps two threads' ids apart. */
    request_ids.counter += UINT64_C(0x9e3779b97f4a7c15);
    a = mix64(request_ids.counter);
    b = mix64(request_ids.counter ^ request_ids.salt);
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
    return CR_OK;
}
