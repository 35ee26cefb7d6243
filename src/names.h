/* SPDX-License-Identifier: MIT */
/*
 * Every name credisson puts on the wire outside lua/: keys, channels, hash
 * fields (owner names) and connection names, as Redisson spells them
 * (protocol section 1), and the rule that a name's derived keys must share
 * its cluster slot. No other file spells one.
 */
#ifndef CR_NAMES_H
#define CR_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credisson/status.h"

/* Room for an owner name "<36-char uuid>:<20-digit tid>:write" and a NUL. */
#define CR__OWNER_MAX 72

/* The names derived from an object's raw name N. */
typedef enum cr__name_id {
    CR__NAME_LOCK_CHANNEL,      /* redisson_lock__channel:{N} */
    CR__NAME_FAIR_QUEUE,        /* redisson_lock_queue:{N} */
    CR__NAME_FAIR_TIMEOUTS,     /* redisson_lock_timeout:{N} */
    CR__NAME_FENCE_TOKEN,       /* redisson_lock_token:{N} */
    CR__NAME_RWLOCK_CHANNEL,    /* redisson_rwlock:{N} */
    CR__NAME_SEMAPHORE_CHANNEL, /* redisson_sc:{N} */
    CR__NAME_PERMIT_TIMEOUTS,   /* {N}:timeout, the issued permits */
    CR__NAME_LATCH_CHANNEL,     /* redisson_countdownlatch__channel__{N} */
    CR__NAME_LATCH_MARKER,      /* {N}:credisson_latch_expiry (credisson's) */
    CR__NAME_KEY_PREFIX,        /* {N} (N when it has a '{'): what precedes
                                 * ":<reader>" in readers' timeout keys */
    CR__NAME_UNLOCK_LATCH,      /* redisson_unlock_latch:{N}:<request id> */
    CR__NAME_ACQUIRE_LATCH,     /* credisson_semaphore_acquire:{N}:<request
                                 * id> (credisson's) */
    CR__NAME_RATE_VALUE,        /* {N}:value, a rate limiter's permits left
                                 * (OVERALL; PER_CLIENT adds ":<client id>") */
    CR__NAME_RATE_PERMITS,      /* {N}:permits, its grant records (likewise) */
    CR__NAME_RATE_HELD,         /* {N}:credisson_rate_held, the summary of
                                 * those records (credisson's; likewise) */
    CR__NAME_BARRIER_ARRIVALS,  /* credisson_barrier_arrivals:{N}, a cyclic
                                 * barrier's parties waiting and their leases
                                 * (credisson's) */
    CR__NAME_BARRIER_CHANNEL,   /* credisson_barrier__channel:{N} */
    /* A condition C on the lock N (credisson's): each name is followed by
     * ":C" (cr__name_suffixed). */
    CR__NAME_CONDITION,         /* credisson_condition:{N}, its waiters */
    CR__NAME_CONDITION_QUEUE,   /* credisson_condition_queue:{N}, their
                                 * line */
    CR__NAME_CONDITION_LEASES,  /* credisson_condition_leases:{N}, their
                                 * leases */
    CR__NAME_CONDITION_CHANNEL, /* credisson_condition__channel:{N} */
    CR__NAME_CONDITIONS,        /* credisson_conditions:{N} (no ":C"): the
                                 * names of N's conditions with waiters */
    /* The waiting line of a lock, a read/write lock or a semaphore N
     * (credisson's; line.h). */
    CR__NAME_LINE,              /* credisson_line:{N}, its entries */
    CR__NAME_LINE_STATE,        /* credisson_line_state:{N}, their leases */
    CR__NAME_LINE_CHANNEL       /* credisson_line__channel:{N}, followed by
                                 * ":<entry>": each waiter's own channel */
} cr__name_id;

/* Redisson's two shapes, malloc'd (NULL: out of memory):
 * prefixName(P, N) = "P:N" when N contains '{', else "P:{N}";
 * suffixName(N, S) = "N:S" when N contains '{', else "{N}:S". */
char *cr__name_prefixed(const char *prefix, const char *raw);
char *cr__name_suffixed(const char *raw, const char *suffix);

/* cr__name: name `id` of raw name N, malloc'd; the unlock and acquire
 * latches get a fresh request id each call. NULL when out of memory (or
 * randomness). */
char *cr__name(cr__name_id id, const char *raw);

/* cr__name_raw: Redisson's NameMapper: `prefix` (may be NULL) + name,
 * malloc'd; NULL when out of memory. */
char *cr__name_raw(const char *prefix, const char *name);

/* cr__name_check: CR_EINVAL unless `name` is a non-empty string. */
cr_status cr__name_check(const char *name);

/* cr__name_check_slots: in a cluster, CR_EINVAL (with a message) unless
 * every name derived from raw name N, and `extra` (a derived name of
 * another shape, or NULL), hash to N's own slot: the object's scripts
 * would otherwise fail with CROSSSLOT (protocol 1.1). */
cr_status cr__name_check_slots(bool cluster, const char *raw,
                               const char *extra);

/* cr__name_reader_timeouts: a reader's timeout key prefix
 * {N}:<reader>:rwlock_timeout (N:<reader>:... when N has a '{'), malloc'd. */
char *cr__name_reader_timeouts(const char *raw, const char *reader);

/* cr__name_waiter_channel: a fair-lock waiter's own channel, the lock's
 * channel + ":" + its owner name, malloc'd. */
char *cr__name_waiter_channel(const char *channel, const char *owner);

/* cr__name_owner: "<uuid>:<tid>", plus ":write" when `writer`, into `out`
 * (CR__OWNER_MAX bytes). */
void cr__name_owner(const char *uuid, int64_t tid, bool writer, char *out);

/* cr__name_switch_side: the same thread's writer name of reader name
 * `owner` (`writer`), or its reader name of writer name `owner`, into
 * `out` (CR__OWNER_MAX bytes). */
void cr__name_switch_side(const char *owner, bool writer, char *out);

/* cr__name_is_writer: whether an owner name (of `len` bytes) is a writer's. */
bool cr__name_is_writer(const char *owner, size_t len);

/* cr__name_client: the default connection name
 * "credisson/<client id>/<host>/<pid>", malloc'd. */
char *cr__name_client(const char *id);

/* cr__name_client_parse: whether connection name `name` (`len` bytes) is
 * the default name of client `id` (`idlen` bytes); *host (`*hostlen`
 * bytes, inside `name`) and *pid are then set from it (*host NULL when the
 * name has none). */
bool cr__name_client_parse(const char *name, size_t len, const char *id,
                           size_t idlen, const char **host, size_t *hostlen,
                           long *pid);

/* A Redisson release as one number, 3.23.4 -> 3023004. */
#define CR__VERSION(major, minor, patch)                                   \
    ((major) * 1000000 + (minor) * 1000 + (patch))

/* The oldest release line credisson can share objects with, and the
 * newest it knows (newer ones get its formats). */
#define CR__VERSION_OLDEST CR__VERSION(3, 10, 0)
#define CR__VERSION_NEWEST CR__VERSION(4, 7, 0)

/* What a Java peer of one Redisson release line reads and writes
 * differently (protocol section 16; doc/porting.md has the table). Only
 * what both sides must agree on switches: credisson's own safety (the
 * unlock latch, readers renewing only their own keys) stays on every
 * line. */
typedef struct cr__wire {
    int version;            /* CR__VERSION(...) of the Java side */
    bool pes_hex_ids;       /* before 3.17.0: permit ids stored as their
                             * 32 lowercase hex characters, not 16 bytes */
    bool pes_id_per_permit; /* since 3.23.4: acquire(n) makes n ids;
                             * before, one id stands for the n permits */
    int64_t fair_wait_ms;   /* fairLockWaitTimeout's default: 5 s before
                             * 3.13.3, 300 s since */
    bool sharded_pubsub;    /* since 3.22.0: sharded pub/sub in a Cluster
                             * when the server has it (before: never) */
    bool rate_limiter;      /* since 3.21.0: the limiter's records in the
                             * format credisson writes */
    bool keep_alive;        /* since 3.38.0: the limiter's keepAliveTime */
} cr__wire;

/* cr__wire_of: the formats of release `version` (CR__VERSION; 0: the
 * newest). */
void cr__wire_of(int version, cr__wire *out);

#endif
