/* SPDX-License-Identifier: MIT */
/*
 * Introspection: what an object under a name is and what it holds, for
 * objects of credisson's and of Java Redisson's alike. One call answers
 * Redisson's isLocked, getHoldCount, remainTimeToLive, getQueueLength,
 * availablePermits and getCount together, read in one atomic step (a
 * script that writes nothing), so the answer is a snapshot; and, with one
 * CLIENT LIST, who each owner is: the host and process of a credisson
 * client (every connection names itself "credisson/<client id>/<host>/
 * <pid>" unless client_name says otherwise), whether it is connected at
 * all. `credisson inspect` prints exactly this.
 *
 * Thread safety: as every call on a client.
 */
#ifndef CREDISSON_INSPECT_H
#define CREDISSON_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/client.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a name holds. A semaphore and a latch are both a plain integer:
 * when nothing else tells them apart (an expirable semaphore's issued
 * permits, credisson's waiting line, who listens on which channel) the
 * kind is
 * CR_OBJECT_SEMAPHORE_OR_LATCH. New kinds are only added at the end. */
typedef enum cr_object_kind {
    CR_OBJECT_NONE = 0,           /* nothing under this name */
    CR_OBJECT_LOCK,               /* RLock, fenced, spin, non-reentrant */
    CR_OBJECT_FAIR_LOCK,          /* a lock with a wait queue */
    CR_OBJECT_RWLOCK,             /* a read/write lock */
    CR_OBJECT_SEMAPHORE,
    CR_OBJECT_PERMIT_SEMAPHORE,   /* RPermitExpirableSemaphore */
    CR_OBJECT_LATCH,
    CR_OBJECT_SEMAPHORE_OR_LATCH, /* a bare integer: cannot tell */
    CR_OBJECT_OTHER,              /* a key no credisson object uses */
    CR_OBJECT_BARRIER,            /* a cyclic barrier (cr_barrier) */
    CR_OBJECT_RATE_LIMITER        /* RRateLimiter */
} cr_object_kind;

/* Whether the client an owner belongs to is connected to the server. */
typedef enum cr_presence {
    CR_PRESENCE_UNKNOWN = 0, /* the client list cannot be read (CLIENT LIST
                              * is in @admin), or the owner's client names
                              * no connection and unnamed ones are there (a
                              * Java client without clientName) */
    CR_PRESENCE_CONNECTED,   /* host, pid and addr below are set */
    CR_PRESENCE_GONE         /* no connection of its client: a dead process */
} cr_presence;

/* An owner name "<client id>:<thread id>[:write]" and who it is. */
typedef struct cr_owner_info {
    const char *owner;   /* not NUL-safe: owner_len bytes (then a NUL) */
    size_t owner_len;
    cr_presence presence;
    const char *host;    /* CONNECTED: from the client's name, else NULL */
    long pid;            /* CONNECTED: its process id, else 0 */
    const char *addr;    /* CONNECTED: "ip:port" of one of its connections */
} cr_owner_info;

typedef struct cr_holder_info {
    cr_owner_info who;
    int64_t count;   /* hold count */
    bool writer;     /* read/write lock: the write side */
    int64_t ttl_ms;  /* readers: the longest lease left of their holds (-2:
                      * their keys are gone); others: the lock's */
} cr_holder_info;

typedef struct cr_waiter_info {
    cr_owner_info who;
    bool has_deadline;
    int64_t deadline_ms; /* epoch ms the waiter's turn lapses */
} cr_waiter_info;

typedef struct cr_permit_info {
    char id[65];         /* hex */
    bool never;          /* no expiry */
    int64_t expires_ms;  /* epoch ms */
} cr_permit_info;

/* A waiter of a condition on a lock (cr_lock_condition): in line, or
 * signalled and not yet back (its signal passes on if its lease lapses). */
typedef struct cr_condition_waiter_info {
    cr_owner_info who;
    bool signalled;
    bool has_lease;
    int64_t lease_ms;    /* epoch ms its lease lapses */
} cr_condition_waiter_info;

/* A condition of a lock with waiters. */
typedef struct cr_condition_info {
    const char *name;    /* its name, as cr_lock_condition_new was given */
    int64_t waiting;     /* waiters in line (all of them) */
    size_t nwaiters;     /* the signalled first, then the line in order */
    cr_condition_waiter_info *waiters;
} cr_condition_info;

/* A party waiting at a barrier in the round under way. */
typedef struct cr_party_info {
    cr_owner_info who;
    bool has_index;
    int64_t index;       /* its arrival index: parties - 1 for the first */
    bool has_since;      /* false when an older credisson let it in */
    int64_t since_ms;    /* epoch ms it arrived */
    int64_t lease_ms;    /* epoch ms its lease lapses unless it looks again */
} cr_party_info;

/* A waiter in credisson's waiting line of a lock that is not fair, a
 * read/write lock or a semaphore (doc/waiting-line.md): credisson's
 * waiters queue there so that a release wakes only those it can serve.
 * Java Redisson's waiters are never in it. */
typedef struct cr_line_waiter_info {
    cr_owner_info who;   /* "<client id>:<thread id>": the thread's reader
                          * name even when it waits to write */
    bool has_state;      /* false: its state is missing (the next script
                          * that walks the line drops it); the fields
                          * below are then 0 */
    int64_t since_ms;    /* epoch ms it came into line */
    bool turn;           /* it holds a turn: it was told that the object
                          * can serve it now */
    int64_t lease_ms;    /* epoch ms its place lapses unless its waiter
                          * attempts again: its turn's end when `turn`,
                          * else its waiting lease's (a lapsed entry stays
                          * listed until a script walks the line) */
    int64_t permits;     /* what it wants: permits of a semaphore, 1 for a
                          * lock */
    bool writer;         /* read/write lock: it waits to write */
} cr_line_waiter_info;

/* The snapshot. Lists hold at most CR_INSPECT_MAX_LISTED entries; the
 * counts beside them are the whole. The library allocates it: fields are
 * only added at the end. */
#define CR_INSPECT_MAX_LISTED 100

typedef struct cr_object_info {
    cr_object_kind kind;
    char redis_type[16];     /* Redis TYPE of the name's key */
    const char *key;         /* the key: the name after the name prefix */
    int64_t ttl_ms;          /* its PTTL: -2 absent, -1 no expiry */
    int64_t now_ms;          /* the server's clock (epoch ms) when read */
    const char *mode;        /* read/write lock: "read", "write"; else NULL */
    size_t nholders;
    cr_holder_info *holders;
    int64_t queue_length;    /* fair lock waiters; -1: deadlines, no queue */
    size_t nqueue;
    cr_waiter_info *queue;
    bool has_token;
    int64_t token;           /* fenced lock: the last token given */
    bool has_value;
    int64_t value;           /* semaphore: available permits; latch: count */
    int64_t issued_count;    /* expirable semaphore: permits out */
    size_t npermits;
    cr_permit_info *permits;
    bool presence_read;      /* the client list could be read */
    /* A barrier: its parties, the generation under way, the parties
     * waiting in it and whether it is broken. A rate limiter: its rate
     * per interval, the type (0 OVERALL, 1 PER_CLIENT) and keep-alive
     * time (0: none). Zero for other kinds. */
    int64_t parties, generation, waiting;
    bool broken;
    int64_t rate, interval_ms, rate_type, keep_alive_ms;
    /* A lock: its conditions that have waiters (by name; the first
     * CR_INSPECT_MAX_LISTED, with no count of the others). */
    size_t nconditions;
    cr_condition_info *conditions;
    /* A barrier: its waiting parties (`waiting` counts them all), in the
     * order they arrived. */
    size_t nwaiting_parties;
    cr_party_info *waiting_parties;
    /* A lock that is not fair (RLock, fenced, spin, read/write) or a
     * semaphore: how many connections are subscribed to its channel
     * (PUBSUB NUMSUB, and SHARDNUMSUB too in a cluster, on the node the
     * command reached). It counts connections, not waiters: a client's
     * one subscriber connection serves all its waiters and may stay
     * subscribed a while after the last (Java's too). -1 for other kinds,
     * or when it cannot be read. */
    int64_t subscribers;
    /* credisson's waiting line (cr_line_waiter_info), for any kind whose
     * name has one, a name with no object too (a semaphore never set,
     * whose waiters wait for permits): its length (0: no line), and its
     * first CR_INSPECT_MAX_LISTED entries in order. */
    int64_t line_length;
    size_t nline;
    cr_line_waiter_info *line;
} cr_object_info;

/* cr_object_inspect: read what `name` (after the client's name prefix)
 * holds. Ownership: *out needs cr_object_info_free().
 * Returns CR_OK, CR_EINVAL (NULL client, NULL or empty name, NULL out),
 * CR_ENOMEM, CR_ECLOSED, CR_EFORKED, CR_EIO, CR_ESERVER, CR_ESCRIPT,
 * CR_EAUTH, CR_ENOPERM (the user may not run the script: EVAL/EVALSHA on
 * the name's keys), CR_ECONFIG, CR_ETLS. */
CR_EXPORT cr_status cr_object_inspect(cr_client *client, const char *name,
                                      cr_object_info **out);

/* cr_object_info_free: free a snapshot. NULL does nothing. */
CR_EXPORT void cr_object_info_free(cr_object_info *info);

/* cr_object_kind_name: "none", "lock", "fair-lock", "rwlock", "semaphore",
 * "expirable-semaphore", "latch", "semaphore-or-latch", "other". */
CR_EXPORT const char *cr_object_kind_name(cr_object_kind kind);

#ifdef __cplusplus
}
#endif
#endif
