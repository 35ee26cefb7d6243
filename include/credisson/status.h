/* SPDX-License-Identifier: MIT */
/*
 * Status codes shared by every credisson call, the static text for each and the
 * per-thread detail of the last failure.
 */
#ifndef CREDISSON_STATUS_H
#define CREDISSON_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define CR_EXPORT __attribute__((visibility("default")))
#else
#define CR_EXPORT
#endif

/* Every call that can fail returns a cr_status. CR_BUSY and CR_TIMEOUT are
 * outcomes, not faults: the call worked and the answer was "not now". Values
 * are stable across releases; new ones are only added at the end. */
typedef enum cr_status {
    CR_OK = 0,      /* done; for try_* calls: acquired */
    CR_BUSY,        /* not acquired before the wait ran out */
    CR_TIMEOUT,     /* an await returned because its wait ran out */
    CR_ENOTOWNER,   /* unlock/release by a thread that does not hold it */
    CR_ELOST,       /* the lease expired or the lock was taken away while held */
    CR_EINVAL,      /* a bad argument: NULL, empty name, absurd duration... */
    CR_ENOMEM,      /* out of memory */
    CR_EIO,         /* connection or timeout trouble talking to Redis */
    CR_ESERVER,     /* Redis answered with an error (see cr_last_error()) */
    CR_ESCRIPT,     /* a script replied with something the protocol forbids */
    CR_ECLOSED,     /* the client is being freed */
    CR_EFORKED,     /* the client was created by the parent of a fork() */
    CR_EDEADLK,     /* the call would wait for the caller itself (rwlock upgrade) */
    CR_EREENTRANT,  /* a non-reentrant lock already held by this owner */
    CR_EEXPIRED,    /* the object expired while being waited on (latch expiry) */
    CR_ENOTSUP,     /* the operation does not exist for this kind of object;
                     * cr_client_new: an option set that this library (older
                     * than the header compiled with) does not have */
    CR_EAUTH,       /* the server refused the credentials, or wants some */
    CR_ENOPERM,     /* the ACL user may not run a command (or use a channel) */
    CR_ECONFIG,     /* the server is not what the configuration says: not
                     * Redis, a replica, protected mode; no retry mends it */
    CR_ETLS,        /* TLS failed: certificate, host name, handshake */
    CR_ECANCELED,   /* an asynchronous request was cancelled */
    CR_EBROKEN      /* a barrier's round was broken: a party timed out, was
                     * cancelled or died, or the barrier was reset */
} cr_status;

/* cr_strerror: a static, never-NULL English text for `rc`. */
CR_EXPORT const char *cr_strerror(cr_status rc);

/* cr_last_error: the detail of the last failed call made by this thread
 * (for instance the Redis error text), or "". Owned by the library; calls
 * clear it when they start, so read it right after the call that failed. */
CR_EXPORT const char *cr_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
