/* SPDX-License-Identifier: MIT */
/*
 * The head every handle starts with (locks, the read/write lock,
 * semaphores, the latch), as libuv's UV_HANDLE_FIELDS: the client, the
 * name as given and the raw name N, a magic number that tells a live handle
 * of the right kind, and the count of its background jobs; with it, the
 * one guard pair of every call, the argument checks every kind shares, and
 * the waiting of the objects that are not locks.
 */
#ifndef CR_OBJECT_H
#define CR_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include <stdatomic.h>

#include "client.h"
#include "credisson/lock.h"
#include "credisson/semaphore.h"
#include "scripts.h"
#include "wait.h"

/* How often a waiter on an object looks again without a message: the
 * protocol gives semaphore and latch waiters no hint, and a message can be
 * missed. */
#define CR__OBJECT_RECHECK_MS 1000

/* The first members of every handle. */
#define CR__OBJECT_FIELDS                                                     \
    uint32_t magic;                                                           \
    cr_client *client;                                                        \
    char *name; /* as given by the user */                                    \
    char *raw;  /* N: the name after the client's name prefix (the name      \
                 * itself when there is none) */                              \
    atomic_int bg_pending; /* background jobs not finished: freeing the      \
                            * handle waits for them */

typedef struct cr__object {
    CR__OBJECT_FIELDS
} cr__object;

/* cr__object_new: allocate a zeroed handle of `size` bytes, which starts
 * with CR__OBJECT_FIELDS, for `name` on client `c`. Checks the name, the
 * client and, when `keyed` (the name is a key: all but MultiLock and
 * RedLock, whose name is a label), that the name's derived keys share its
 * cluster slot. The caller checks its user's out-parameter.
 * Ownership: *out needs cr__object_free(). */
cr_status cr__object_new(cr_client *c, const char *name, uint32_t magic,
                         size_t size, bool keyed, void **out);

/* cr__object_free: wait for the handle's background jobs, then free what
 * the kind owns (`own`, may be NULL), the names and the handle; NULL does
 * nothing. */
void cr__object_free(void *obj, void (*own)(void *obj));

/* cr__object_enter: the guard at the top of every call on a handle: clears
 * this thread's error, refuses NULL and handles that are not live handles of
 * `magic` (CR_EINVAL, naming `kind`), then enters the client (*op: the
 * call's operation, cr__client_enter). On CR_OK the call must end with
 * cr__object_leave. */
cr_status cr__object_enter(const void *obj, uint32_t magic, const char *kind,
                           cr__op *op);

/* cr__object_leave: the end of every call whose cr__object_enter
 * succeeded. */
void cr__object_leave(const void *obj);

/* cr__object_name: the name as given, or "" for NULL or a dead handle. */
const char *cr__object_name(const void *obj, uint32_t magic);

/* cr__object_background: run run(op, arg) in the background for handle
 * `obj` (cr__background), which its free waits for. */
void cr__object_background(void *obj,
                           void (*run)(const cr__op *op, void *arg),
                           void (*done)(void *arg), void *arg);

/* cr__check_wait: CR_WAIT_FOREVER or 0..CR_DURATION_MAX, else CR_EINVAL. */
cr_status cr__check_wait(int64_t wait_ms);

/* cr__check_lease: `none` (a lease-less hold: CR_LEASE_WATCHDOG,
 * CR_LEASE_NONE, both -1, named `none_name`) or 1..CR_DURATION_MAX, else
 * CR_EINVAL. */
cr_status cr__check_lease(int64_t lease_ms, const char *none_name);

/* cr__check_ttl: 0 (none) or 1..CR_DURATION_MAX, else CR_EINVAL. */
cr_status cr__check_ttl(int64_t ttl_ms);

/* cr__check_range: `what` = v within min..max, else CR_EINVAL. */
cr_status cr__check_range(const char *what, int64_t v, int64_t min,
                          int64_t max);

/* cr__check_permits / cr__check_delta: a permit count 0..CR_PERMITS_MAX,
 * a change of one -CR_PERMITS_MAX..CR_PERMITS_MAX, else CR_EINVAL. */
cr_status cr__check_permits(int64_t permits);
cr_status cr__check_delta(int64_t delta);

/* cr__check_out: CR_EINVAL naming `what` when an out-parameter is NULL. */
cr_status cr__check_out(const void *out, const char *what);

/* cr__object_get_count: GET of the object's key N, a count (0 when N does
 * not exist) into *out; CR_ESCRIPT naming `kind` when N holds no number.
 * On an entered handle, within `op`. */
cr_status cr__object_get_count(const cr__op *op, const void *obj,
                               const char *kind, int64_t *out);

/* cr__object_wait_begin: begin a wait (wait.h) within `op` (its deadline
 * set: cr__op_wait) for an object's attempts,
 * woken through `channel`, whose messages `decode` reads (trust_open: as
 * cr__wait_spec's), floor 1 ms, looking again at least every
 * CR__OBJECT_RECHECK_MS. On an entered handle. Its outcome goes to the
 * event hook as the object `kind`'s ("semaphore", "latch"...; a latch's
 * wait that runs out is reported as CR_TIMEOUT); NULL: none (a barrier's
 * or a condition's wait is no acquisition). */
void cr__object_wait_begin(cr__wait *w, cr__op *op, const void *obj,
                           const char *kind, const char *channel,
                           cr__decode_fn decode, bool trust_open,
                           int64_t wait_ms);

#endif
