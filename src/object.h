/* SPDX-License-Identifier: MIT */
/*
 * What the handles of the non-lock objects (semaphores, the latch) share:
 * the client, the name as given and the raw name N, a magic number that
 * tells a live handle of the right kind, the guard of every call, the
 * argument checks of counts, waits and times to live, reading replies, the
 * waiting loop's settings, and the scripts both semaphores run.
 */
#ifndef CR_OBJECT_H
#define CR_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include <stdatomic.h>

#include "client.h"
#include "credisson/lock.h"
#include "credisson/semaphore.h"
#include "wait.h"
#include "scripts.h"

/* How often a waiter on an object looks again without a message: the
 * protocol gives semaphore and latch waiters no hint, and a message can be
 * missed. */
#define CR__OBJECT_RECHECK_MS 1000

/* The first member of every such handle. */
typedef struct cr__object {
    uint32_t magic;
    cr_client *client;
    char *name; /* as given by the user */
    char *raw;  /* N: the name after the client's name prefix */
    atomic_int bg_pending; /* background give-backs not finished: freeing
                            * the handle waits for them */
} cr__object;

/* cr__object_background: run run(arg) in the background for handle `obj`
 * (cr__background), which its free waits for. */
void cr__object_background(void *obj, void (*run)(void *arg),
                           void (*done)(void *arg), void *arg);

/* cr__object_new: allocate a zeroed handle of `size` bytes, whose first
 * member is a cr__object, for `name` on client `c`. Checks the name and
 * the client (the caller checks its user's out-parameter).
 * Ownership: *out needs cr__object_free(). */
cr_status cr__object_new(cr_client *c, const char *name, uint32_t magic,
                         size_t size, void **out);

/* cr__object_free: wait for the handle's background jobs, then free what
 * the kind owns (`own`, may be NULL), the names and the handle; NULL does
 * nothing. */
void cr__object_free(void *obj, void (*own)(void *obj));

/* cr__object_enter: the guard at the top of every call on a handle: clears
 * this thread's error, refuses NULL and handles that are not live handles of
 * `magic` (CR_EINVAL, naming `kind`), then enters the client. On CR_OK the
 * call must end with cr__client_leave(o->client). */
cr_status cr__object_enter(const void *obj, uint32_t magic, const char *kind);

/* cr__object_leave: the end of every call whose cr__object_enter
 * succeeded. */
void cr__object_leave(const void *obj);

/* cr__object_name: the name as given, or "" for NULL or a dead handle. */
const char *cr__object_name(const void *obj, uint32_t magic);

/* cr__check_wait: CR_WAIT_FOREVER or 0..CR_DURATION_MAX, else CR_EINVAL. */
cr_status cr__check_wait(int64_t wait_ms);

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
 * On an entered handle. */
cr_status cr__object_get_count(const void *obj, const char *kind,
                               int64_t *out);

/* cr__object_wait: the waiting loop (cr__wait) for an object's `attempt`,
 * woken through `channel` in `mode`, floor 1 ms, looking again at least
 * every CR__OBJECT_RECHECK_MS. On an entered handle. */
cr_status cr__object_wait(const void *obj, const char *channel,
                          cr__wake_mode mode, int64_t wait_ms,
                          cr__attempt_fn attempt, void *ctx);

/* The releaser's turn of both semaphores. A handle that releases and
 * acquires again at once would win the race against the waiters its
 * release woke (they are a message and a round trip behind), and a busy
 * loop would starve them. So, as RLock's releaser, its next acquire that
 * may wait first pauses a turn of four release round trips (cr__turn_us:
 * 1 to 20 ms) when the release reached a subscriber other than its own
 * client, or this client has waiting threads.
 *
 * cr__turn_leave: after a release sent at `sent_us` (monotonic) whose
 * publish on `channel` reached `heard` subscribers, sets *until_us to when
 * the turn ends (left alone when nobody else heard it).
 * cr__turn_take: an acquire that may wait (wait_ms != 0) pauses until
 * *until_us, within its wait budget. */
void cr__turn_leave(cr_client *c, const char *channel, int64_t heard,
                    int64_t sent_us, _Atomic int64_t *until_us);
void cr__turn_take(_Atomic int64_t *until_us, int64_t wait_ms);

/* The scripts RSemaphore and RPermitExpirableSemaphore share (protocol
 * sections 7.2 and 8.2), on an entered handle `obj`, which is a
 * cr__object, with channel `channel`:
 *
 * cr__sem_try_set_permits: try_set_permits (ttl_ms 0: none); *set (may be
 * NULL) tells whether it set them.
 * cr__sem_add_permits: add_permits by `delta`; `mode` is what to publish
 * ("total" for RSemaphore, "delta" for the permit semaphore). */
cr_status cr__sem_try_set_permits(const void *obj, const char *channel,
                                  int64_t permits, int64_t ttl_ms, bool *set);
cr_status cr__sem_add_permits(const void *obj, const char *channel,
                              int64_t delta, const char *mode);

#endif
