/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API: every waiting or round-trip operation of locks,
 * semaphores and latches, the rate limiter's acquire, the barrier's await
 * and the lock condition's await and signals, without blocking a thread,
 * for servers built around an event loop (Redisson's RLockAsync,
 * RSemaphoreAsync, RPermitExpirableSemaphoreAsync, RCountDownLatchAsync,
 * RRateLimiterAsync).
 * The wire protocol is the same as the blocking API's: asynchronous,
 * blocking and Java clients share every object.
 *
 * A cr_async binds a client to one event loop. The library tells the loop
 * which descriptors to watch and when to call back (cr_loop); the
 * application owns the loop, as with libcurl's multi interface. Ready
 * adapters: credisson/async_libevent.h, async_libuv.h, async_libev.h; a
 * loop of one's own (poll, epoll) uses cr_async_fds.
 *
 * Requests: each call below starts one. It returns CR_OK when the request
 * was accepted (its callback will run exactly once), or a failure (bad
 * arguments, a closed handle: no callback runs). The callback runs on the
 * loop, never from inside the call that started the request, with the
 * status the blocking call would return (CR_OK obtained, CR_BUSY or
 * CR_TIMEOUT when the wait ran out, CR_ECANCELED when cancelled, CR_EIO...).
 *
 * Owners: a lock is held by an owner id, not by a thread. Take ids from
 * cr_async_owner_id(): they come from a range that never meets the thread
 * ids the blocking API gives threads, and the blocking API's _tid calls
 * accept them (a hold taken here can be released there, and the reverse).
 *
 * Thread safety: a cr_async and its requests are used from the loop's
 * thread only. Several cr_async (several loops) may share one client.
 * Leases of holds taken here are renewed by the client's watchdog thread,
 * so a loop stalled by the application does not lose them; a lost hold is
 * reported as the blocking API's are (cr_lock_set_lost_callback: on the
 * client's lease-clock thread, CR_ELOST from the unlock). A loop that runs
 * the library's timer more than a second late is reported in the log.
 */
#ifndef CREDISSON_ASYNC_H
#define CREDISSON_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/barrier.h>
#include <credisson/client.h>
#include <credisson/condition.h>
#include <credisson/latch.h>
#include <credisson/lock.h>
#include <credisson/ratelimiter.h>
#include <credisson/semaphore.h>
#include <credisson/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_async cr_async;
typedef struct cr_request cr_request;

/* What a descriptor is watched for. */
#define CR_WATCH_READ 1
#define CR_WATCH_WRITE 2

/* The loop interface. Both functions are called on the loop's thread,
 * from inside the library's calls. */
typedef struct cr_loop {
    /* Watch `fd` for `events` (CR_WATCH_*), replacing what it was watched
     * for; 0: stop watching it (it may be closed next). When it is ready,
     * call cr_async_io(async, fd, ready_events). */
    void (*watch)(void *data, int fd, int events);
    /* Call cr_async_timeout(async) once `ms` milliseconds from now (0: as
     * soon as the loop can), replacing the timer set before; -1: no timer. */
    void (*timer)(void *data, int64_t ms);
    void *data;
} cr_loop;

/* cr_async_new: bind `client` to the loop `loop` (copied). Nothing is sent
 * until the first request.
 * Ownership: *out needs to be freed with cr_async_free().
 * Returns CR_OK, CR_EINVAL (NULL client, loop or function), CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_new(cr_client *client, const cr_loop *loop,
                                 cr_async **out);

/* cr_async_free: complete every request still pending with CR_ECLOSED
 * (their callbacks run inside this call; a callback may not start new
 * requests on this handle then), give back what they obtained meanwhile,
 * stop watching every descriptor and free the handle. Holds taken earlier
 * stay held (release them first). NULL does nothing. Free it before its
 * client, on the loop's thread. Called from one of its callbacks, it frees
 * the handle when that callback's dispatch returns (requests started after
 * it fail with CR_ECLOSED). */
CR_EXPORT void cr_async_free(cr_async *async);

/* cr_async_io: `fd` is ready for `events` (CR_WATCH_*). */
CR_EXPORT void cr_async_io(cr_async *async, int fd, int events);

/* cr_async_timeout: the timer set with cr_loop.timer ran out. */
CR_EXPORT void cr_async_timeout(cr_async *async);

/* A loop of one's own: the descriptors to watch now and how long the loop
 * may sleep (-1: until a descriptor is ready), to pass to poll() or
 * epoll_wait(); then cr_async_io for each ready one and cr_async_timeout
 * when the time ran out. Use with a cr_loop whose functions do nothing. */
typedef struct cr_async_fd {
    int fd;
    int events; /* CR_WATCH_* */
} cr_async_fd;

/* cr_async_fds: up to `max` descriptors into fds; returns how many there
 * are (more than max: call again with room for all). *timeout_ms gets the
 * time until cr_async_timeout is due. */
CR_EXPORT int cr_async_fds(cr_async *async, cr_async_fd *fds, int max,
                           int64_t *timeout_ms);

/* cr_async_owner_id: a fresh owner id from the asynchronous range (above
 * 2^62), never one a thread of this process gets from cr_thread_id(). */
CR_EXPORT int64_t cr_async_owner_id(void);

/* Callbacks. `value` is the operation's number: the fencing token of a
 * fenced lock (0 otherwise), the permits drained, 1 when try_set_count
 * set the count; `id` the permit id of an expirable semaphore's acquire
 * (borrowed for the call). */
typedef void (*cr_async_fn)(void *userdata, cr_status rc, int64_t value);
typedef void (*cr_async_permit_fn)(void *userdata, cr_status rc,
                                   const char *id);
/* A barrier await's: the round's generation and the arrival index (as
 * cr_barrier_await gives them) with CR_OK, -1 and -1 otherwise. */
typedef void (*cr_async_barrier_fn)(void *userdata, cr_status rc,
                                    int64_t generation, int64_t index);

/* cr_async_cancel: stop a pending request. Its callback runs (later, on
 * the loop) with CR_ECANCELED, unless it had completed already (then
 * nothing happens). A lock or permit obtained after the cancel is given
 * back by the library, as Redisson's lockAsync does. A request that only
 * changes state (unlock, release, count down, add, drain, set count) may
 * have reached Redis: cancelling it only drops its callback's result (it
 * still runs, with CR_ECANCELED). `req` is the handle a call gave; it is
 * valid until its callback has run. */
CR_EXPORT void cr_async_cancel(cr_request *req);

/* ------------------------------------------------------------- locks */

/* cr_async_lock: tryLockAsync(wait_ms, lease_ms, owner) of any lock kind:
 * CR_OK when obtained (value: the fencing token of a fenced lock),
 * CR_BUSY when the wait ran out. wait_ms CR_WAIT_FOREVER: lockAsync. `req`
 * may be NULL. A MultiLock or RedLock (whose sub-locks may be on other
 * clients) runs its blocking call on a thread of its own, in slices of
 * 200 ms so that a cancel or a free ends it within a slice and a command.
 * Returns CR_OK (started), CR_EINVAL (owner not positive; bad wait or
 * lease; a handle that is not live), CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_lock(cr_async *async, cr_lock *lock,
                                  int64_t owner, int64_t wait_ms,
                                  int64_t lease_ms, cr_async_fn fn,
                                  void *userdata, cr_request **req);

/* cr_async_unlock: unlockAsync(owner): CR_OK, CR_ENOTOWNER, CR_ELOST to the
 * callback (a MultiLock's or RedLock's on a thread, as above).
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_unlock(cr_async *async, cr_lock *lock,
                                    int64_t owner, cr_async_fn fn,
                                    void *userdata, cr_request **req);

/* -------------------------------------------------------- semaphores */

/* cr_async_semaphore_acquire: tryAcquireAsync(permits, wait_ms) (wait_ms
 * CR_WAIT_FOREVER: acquireAsync): CR_OK or CR_BUSY to the callback.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_semaphore_acquire(cr_async *async,
                                               cr_semaphore *sem,
                                               int64_t permits,
                                               int64_t wait_ms,
                                               cr_async_fn fn, void *userdata,
                                               cr_request **req);

/* cr_async_semaphore_release: releaseAsync(permits) (1..CR_PERMITS_MAX).
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_semaphore_release(cr_async *async,
                                               cr_semaphore *sem,
                                               int64_t permits,
                                               cr_async_fn fn, void *userdata,
                                               cr_request **req);

/* cr_async_semaphore_add_permits: addPermitsAsync(delta).
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_semaphore_add_permits(cr_async *async,
                                                   cr_semaphore *sem,
                                                   int64_t delta,
                                                   cr_async_fn fn,
                                                   void *userdata,
                                                   cr_request **req);

/* cr_async_semaphore_drain_permits: drainPermitsAsync: value = drained.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_semaphore_drain_permits(cr_async *async,
                                                     cr_semaphore *sem,
                                                     cr_async_fn fn,
                                                     void *userdata,
                                                     cr_request **req);

/* cr_async_permit_acquire: tryAcquireAsync(wait_ms, lease_ms) of an
 * expirable semaphore (lease_ms CR_LEASE_NONE: no lease): the permit id
 * (CR_PERMIT_ID_LEN hex digits) to the callback with CR_OK, NULL with
 * CR_BUSY.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_permit_acquire(cr_async *async,
                                            cr_permit_semaphore *sem,
                                            int64_t wait_ms, int64_t lease_ms,
                                            cr_async_permit_fn fn,
                                            void *userdata, cr_request **req);

/* cr_async_permit_release: releaseAsync(id): CR_OK, CR_ENOTOWNER, CR_ELOST
 * to the callback.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_permit_release(cr_async *async,
                                            cr_permit_semaphore *sem,
                                            const char *id, cr_async_fn fn,
                                            void *userdata, cr_request **req);

/* cr_async_permit_update_lease: updateLeaseTimeAsync(id, lease_ms):
 * value 1 when the permit is still out and has its new lease.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_permit_update_lease(cr_async *async,
                                                 cr_permit_semaphore *sem,
                                                 const char *id,
                                                 int64_t lease_ms,
                                                 cr_async_fn fn,
                                                 void *userdata,
                                                 cr_request **req);

/* ------------------------------------------------------------ latches */

/* cr_async_latch_await: awaitAsync(wait_ms): CR_OK once open, CR_TIMEOUT,
 * CR_EEXPIRED to the callback.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_latch_await(cr_async *async, cr_latch *latch,
                                         int64_t wait_ms, cr_async_fn fn,
                                         void *userdata, cr_request **req);

/* cr_async_latch_count_down_and_await: countDownAndAwaitAsync(wait_ms),
 * as cr_latch_count_down_and_await (subscribed before it counts down;
 * the count down made once): CR_OK once open, CR_TIMEOUT, CR_EEXPIRED to
 * the callback.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_latch_count_down_and_await(cr_async *async,
                                                        cr_latch *latch,
                                                        int64_t wait_ms,
                                                        cr_async_fn fn,
                                                        void *userdata,
                                                        cr_request **req);

/* cr_async_latch_count_down: countDownAsync.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_latch_count_down(cr_async *async,
                                              cr_latch *latch,
                                              cr_async_fn fn, void *userdata,
                                              cr_request **req);

/* cr_async_latch_try_set_count: trySetCountAsync(count, ttl_ms): value 1
 * when set.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_latch_try_set_count(cr_async *async,
                                                 cr_latch *latch,
                                                 int64_t count, int64_t ttl_ms,
                                                 cr_async_fn fn,
                                                 void *userdata,
                                                 cr_request **req);

/* ------------------------------------------------------ rate limiters */

/* cr_async_rate_limiter_acquire: tryAcquireAsync(permits, wait_ms) of a
 * rate limiter (wait_ms 0: one attempt; CR_WAIT_FOREVER: acquireAsync),
 * as cr_rate_limiter_try_acquire: between attempts the request waits the
 * time the last one said on the loop's timer, and ends with CR_BUSY at
 * once when that is beyond what is left of its wait. The callback gets
 * CR_OK (taken), CR_BUSY (value: the ms until the limiter expects permits
 * back), CR_EINVAL (more permits than the rate, or no rate), CR_EIO...
 * A grant cannot be given back (RRateLimiter has no release): a cancel
 * that comes while an attempt is out, which then grants, ends the request
 * with CR_OK, not CR_ECANCELED.
 * Returns CR_OK (started), CR_EINVAL (permits outside
 * 1..CR_RATE_PERMITS_MAX, a bad wait, a handle that is not live or is of
 * another client),
 * CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_rate_limiter_acquire(cr_async *async,
                                                  cr_rate_limiter *limiter,
                                                  int64_t permits,
                                                  int64_t wait_ms,
                                                  cr_async_fn fn,
                                                  void *userdata,
                                                  cr_request **req);

/* ----------------------------------------------------------- barriers */

/* cr_async_barrier_await: cr_barrier_await(wait_ms) without blocking (0:
 * only if this arrival completes the round; CR_WAIT_FOREVER: as long as
 * it takes): arrive, then wait on the barrier's channel for the round's
 * end, renewing the party's lease from the loop's timer. Each request is
 * a party of its own. The callback gets CR_OK with the generation and the
 * arrival index, CR_EBROKEN (the round was broken, or the barrier was
 * broken already), CR_TIMEOUT (the wait ran out: the round is broken for
 * the others), CR_EINVAL (another number of parties)... A cancel is
 * Java's interrupted await: a party that arrived leaves and breaks the
 * round (CR_ECANCELED; the others get CR_EBROKEN), unless the round
 * completed first (CR_OK); one cancelled before its arrival was sent
 * leaves the barrier alone. Freeing the handle breaks the round too.
 * Returns CR_OK (started), CR_EINVAL (a bad wait, a handle that is not
 * live or is of another client), CR_ENOMEM, CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_barrier_await(cr_async *async,
                                           cr_barrier *barrier,
                                           int64_t wait_ms,
                                           cr_async_barrier_fn fn,
                                           void *userdata, cr_request **req);

/* --------------------------------------------------------- conditions */

/* cr_async_condition_await: cr_lock_condition_await(wait_ms) for `owner`,
 * which holds the condition's lock (taken with cr_async_lock, or a _tid
 * call): the same steps on the loop. The request gets in line, lets every
 * hold of the owner go with the lock kind's own unlock, waits for a
 * signal on the condition's channel at most wait_ms (0: only a signal
 * already due; CR_WAIT_FOREVER: as long as it takes), renewing its lease
 * in line from the loop's timer, then takes the lock again, waiting as
 * long as that takes, with the hold count it had and the same kind of
 * lease, before its callback runs. The callback gets CR_OK when signalled
 * (or woken spuriously, as the blocking call) and CR_TIMEOUT when the
 * wait ran out, the lock held again in both; CR_ENOTOWNER when the owner
 * does not hold the lock (nothing changes); and when the lock could not
 * be let go or taken again (CR_EIO, CR_ECLOSED...) the lock is not held,
 * and a signal that came is passed on. A cancel before the wait is over
 * is Java's interrupted await: the request leaves the line, passing on a
 * signal that came, takes the lock again as above and gets CR_ECANCELED
 * (the lock held); a cancel after the signal was taken or the wait ran
 * out changes nothing. Freeing the handle ends it with CR_ECLOSED at any
 * step: the line is left in the background and holds it had taken again
 * are given back (holds it had not let go yet stay held). One await per
 * owner at a time.
 * `value` is 0.
 * Returns CR_OK (started), CR_EINVAL (owner not positive, a bad wait, a
 * handle that is not live or is of another client), CR_ENOMEM,
 * CR_ECLOSED, CR_EFORKED. */
CR_EXPORT cr_status cr_async_condition_await(cr_async *async,
                                             cr_lock_condition *cond,
                                             int64_t owner, int64_t wait_ms,
                                             cr_async_fn fn, void *userdata,
                                             cr_request **req);

/* cr_async_condition_signal: cr_lock_condition_signal by `owner`, which
 * must hold the condition's lock: wakes the waiter that has waited
 * longest; value 1 when one was signalled, 0 when none waits. The
 * callback gets CR_OK, or CR_ENOTOWNER when the owner does not hold the
 * lock. Not resent after a broken link (CR_EIO: it may or may not have
 * been sent).
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_condition_signal(cr_async *async,
                                              cr_lock_condition *cond,
                                              int64_t owner, cr_async_fn fn,
                                              void *userdata,
                                              cr_request **req);

/* cr_async_condition_signal_all: cr_lock_condition_signal_all by
 * `owner`: wakes every waiter; value = how many were signalled. As
 * cr_async_condition_signal otherwise.
 * Returns CR_OK (started), CR_EINVAL, CR_ENOMEM, CR_ECLOSED, CR_EFORKED,
 * CR_EIO (in a cluster: no node known for the name's slot). */
CR_EXPORT cr_status cr_async_condition_signal_all(cr_async *async,
                                                  cr_lock_condition *cond,
                                                  int64_t owner,
                                                  cr_async_fn fn,
                                                  void *userdata,
                                                  cr_request **req);

#ifdef __cplusplus
}
#endif

#endif
