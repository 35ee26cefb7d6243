/* SPDX-License-Identifier: MIT */
/*
 * The client: one per process, shared by all its threads. It owns the Redis
 * connections, the pub/sub dispatcher, the watchdog thread and the identity
 * (a random UUID) that names this process's lock holders.
 *
 * Thread safety: one cr_client per process, shared by all threads. Object
 * handles may be shared too; ownership is per thread (client id + thread id),
 * as in Redisson. Callbacks run on the client's watchdog thread and must not
 * block or call back into the library in a way that waits on Redis.
 *
 * Signals: a connection the server closed never raises SIGPIPE in the
 * application; the library sends with send(2) and MSG_NOSIGNAL, so such a
 * write fails with EPIPE instead, and the application's SIGPIPE disposition
 * and signal mask are left alone.
 */
#ifndef CREDISSON_CLIENT_H
#define CREDISSON_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <credisson/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_client cr_client;

/* Log levels for the optional log callback. The library never prints. */
typedef enum cr_log_level {
    CR_LOG_DEBUG = 0,
    CR_LOG_INFO,
    CR_LOG_WARN,
    CR_LOG_ERROR
} cr_log_level;

typedef void (*cr_log_fn)(void *userdata, cr_log_level level, const char *msg);

/* Pub/sub in a Redis Cluster (Redisson's shardedSubscriptionMode): AUTO
 * uses sharded pub/sub (SSUBSCRIBE, scripts publish with SPUBLISH) when
 * the servers support it (Redis 7+), ON always, OFF never (classic
 * SUBSCRIBE/PUBLISH). C and Java processes sharing objects must agree.
 * Outside a cluster, pub/sub is always classic. */
typedef enum cr_sharded_pubsub {
    CR_SHARDED_AUTO = 0,
    CR_SHARDED_ON,
    CR_SHARDED_OFF
} cr_sharded_pubsub;

/* What an event hook is told about (see cr_event). */
typedef enum cr_event_kind {
    CR_EVENT_ACQUIRED = 1,  /* a lock, permits or an open latch obtained;
                             * wait_ms: how long the call waited (a
                             * MultiLock or RedLock: once, as a whole) */
    CR_EVENT_RELEASED,      /* a lock's last hold given back (hold_ms: since
                             * the first), or permits or a permit released
                             * (hold_ms -1: not measured for permits) */
    CR_EVENT_BUSY,          /* not obtained before the wait ran out:
                             * status CR_BUSY (try_*) or CR_TIMEOUT (await);
                             * wait_ms: how long it waited */
    CR_EVENT_LEASE_LOST,    /* a hold found gone (watchdog, lease clock,
                             * unlock, failover check); name is the key */
    CR_EVENT_RENEWAL_FAILED,/* a watchdog renewal call failed (transport,
                             * timeout or an error reply); retried; name
                             * NULL, status the failure */
    CR_EVENT_RECONNECT,     /* a connection opened again after a loss */
    CR_EVENT_FAILOVER,      /* Sentinel switched masters and we followed */
    CR_EVENT_REDIRECT       /* a cluster MOVED or ASK reply followed */
} cr_event_kind;

/* One event, passed by pointer to the hook and valid only during the call
 * (copy the strings to keep them). Durations are -1 where they do not
 * apply. */
typedef struct cr_event {
    cr_event_kind kind;
    cr_status status;    /* the outcome: CR_OK, CR_BUSY, CR_TIMEOUT... */
    /* The object's kind as credisson names it ("lock", "fair lock", "read
     * lock", "write lock", "spin lock", "fenced lock", "multilock",
     * "redlock", "semaphore", "permit semaphore", "latch"...), NULL for
     * connection events. */
    const char *object;
    /* The object's name as given; for a multilock or redlock its locks'
     * names joined by ',' (cut to 127 bytes: the names that fit, then
     * ",+N" for the N others); for LEASE_LOST the key (the name after the
     * client's name_prefix); NULL for connection events. */
    const char *name;
    int64_t wait_ms;
    int64_t hold_ms;
    bool async;          /* from the asynchronous API (async.h) */
} cr_event;

/* An event hook: see cr_client_options.event_fn. */
typedef void (*cr_event_fn)(void *userdata, const cr_event *ev);

/* Options for cr_client_new. Start from CR_CLIENT_OPTIONS_INIT, which sets
 * `size` and leaves every other field 0 or NULL: each then takes the
 * default written beside it (Redisson's), so set only what differs:
 *
 *     cr_client_options opts = CR_CLIENT_OPTIONS_INIT;
 *     opts.url = "redis://10.0.0.5:6379";
 *
 * `size` lets the struct grow without breaking programs built before: the
 * library reads only the first `size` bytes, so a program built against an
 * older header gets the defaults of the fields it does not know, and one
 * built against a newer header works with an older library as long as it
 * leaves the fields that library does not know at 0 (otherwise
 * cr_client_new fails with CR_ENOTSUP). A size of 0 (a struct zeroed by
 * hand) is refused with CR_EINVAL.
 *
 * For those who change this header: fields are only ever added at the end,
 * at an offset no smaller than the struct's size before (after its tail
 * padding), with no implicit padding between or after them (add explicit
 * pad members, which the initialiser zeroes: an older library checks that
 * every byte past its struct is 0), and their 0 must mean what the library
 * did before they existed. The same holds for cr_client_stats. */
typedef struct cr_client_options {
    size_t size;                      /* sizeof(cr_client_options) */
    /* redis://[user:password@]host[:port][/db], unix:///path/to.sock
     * (unix://[user:password@]/path?db=N), or for Sentinel
     * redis-sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]
     * (sentinel port 26379 by default), or for Redis Cluster
     * redis-cluster://[user:password@]host[:port][,host[:port]...]
     * [?sharded=auto|on|off] (seed nodes; any reachable one will do).
     * rediss://, rediss-sentinel:// and rediss-cluster:// are the same over
     * TLS, for every connection (sentinels and cluster nodes too).
     * NULL: redis://127.0.0.1:6379. */
    const char *url;
    int64_t connect_timeout_ms;       /* 0: 3000 */
    int64_t command_timeout_ms;       /* 0: 3000 (Redisson's `timeout`) */
    int pool_size;                    /* command connections; 0: 4 */
    int64_t lock_watchdog_timeout_ms; /* 0: 30000 (lockWatchdogTimeout) */
    int lock_watchdog_batch_size;     /* keys per renewal call; 0: 100 */
    int64_t fair_lock_wait_timeout_ms;/* 0: 300000 (fairLockWaitTimeout) */
    int64_t subscription_timeout_ms;  /* 0: 7500 (subscriptionTimeout) */
    /* How long calls that wait keep retrying while Redis is unreachable
     * before they give up with CR_EIO. 0: 30000. */
    int64_t reconnect_window_ms;
    /* Redisson's checkLockSyncedSlaves: when > 0, every lock acquisition
     * (RLock, fenced, spin, non-reentrant, fair, read, write), unlock and
     * watchdog renewal is followed by WAIT for the server's connected
     * replicas for up to this many ms. When replicas exist but none
     * acknowledged an acquisition, it is undone and reported as CR_EIO
     * ("no replica acknowledged"), so that a failover cannot lose a lock
     * just granted; for unlocks and renewals it is logged. Semaphores and
     * latches are not checked. 0: off (Redisson's default is on with
     * 1000 ms outside single-server setups). */
    int64_t replica_sync_timeout_ms;
    /* Redisson NameMapper equivalent: a prefix put before every object name
     * (the Java side must map names the same way). NULL: none. */
    const char *name_prefix;
    /* Cluster only: sharded pub/sub; AUTO (0) takes the URL's sharded=
     * setting, itself AUTO by default. */
    cr_sharded_pubsub sharded_pubsub;
    /* NULL: no logging. The callback may run on any thread, internal ones
     * included, sometimes with internal locks held: it must not block or
     * call into the library. */
    cr_log_fn log_fn;
    void *log_userdata;
    cr_log_level log_level;           /* least severe level passed to log_fn */
    /* Credentials, instead of the URL's (which then needs none): a password
     * kept out of URLs and command lines. NULL: the URL's. */
    const char *username;
    const char *password;
    /* Sentinels' own credentials (Redisson's sentinelUsername and
     * sentinelPassword). NULL: the master's are sent, and a sentinel
     * without a password may refuse them harmlessly. */
    const char *sentinel_username;
    const char *sentinel_password;
    /* CLIENT SETNAME on every connection (Redisson's clientName). NULL:
     * "credisson/<client id>/<host>/<pid>", which `credisson inspect`
     * reads to show who holds a lock; "": no name. Printable ASCII without
     * spaces. */
    const char *client_name;
    /* TLS (the rediss schemes). The server's certificate is verified
     * against tls_ca_file or tls_ca_dir (NULL both: the system's CAs) and
     * must name tls_server_name when set (also sent as SNI), otherwise the
     * host connected to: the URL's, or for nodes found through Sentinel or
     * the cluster map, the address they announce, which the certificate
     * must then carry as an IP or DNS name. tls_cert_file and tls_key_file
     * (PEM; the key may sit in the certificate file) make it mutual TLS.
     * tls_insecure turns verification OFF: anyone on the path can then
     * read and change the traffic, passwords included; for tests only. */
    const char *tls_ca_file;
    const char *tls_ca_dir;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *tls_server_name;
    bool tls_insecure;
    /* An event hook for metrics and tracing (cr_event; see
     * cr_client_new(3)). NULL: none, and nothing is measured for it. It
     * runs on the thread where the event happens: the caller's for
     * acquisitions and releases, the event loop's for asynchronous
     * requests (a MultiLock's or RedLock's own thread for theirs), the
     * watchdog's and the lease clock's for renewals and lost
     * leases, any connection's for reconnects, failovers and redirects;
     * sometimes with internal locks held, and at the same time on several
     * threads. It must be quick, must not block and must not call into
     * the library. */
    cr_event_fn event_fn;
    void *event_userdata;
    /* The Redisson release the Java side runs, "MAJOR.MINOR[.PATCH]" such
     * as "3.16.4" (3.10 and later; the URL's ?redissonVersion= when NULL,
     * else the newest line credisson knows, 4.7). It sets what older
     * releases read and write differently: permit ids as hex text before
     * 3.17, one id for acquire(n) before 3.23.4, the fair lock's default
     * wait of 5 s before 3.13.3, classic pub/sub in a Cluster before 3.22,
     * no rate limiter before 3.21 and no keep-alive before 3.38
     * (doc/porting.md has the table). */
    const char *redisson_version;
    /* credisson's waiting line (doc/waiting-line.md): how long a waiter
     * that got its turn has to take what the turn gave before it loses
     * its place to the next, which bounds how long a dead or stopped
     * waiter holds up those behind it. Between 10 and 60000 ms; 0: 250. */
    int64_t line_turn_ms;
    /* The most cr_client_new may take in all: connecting, TLS, the
     * handshake, naming, asking the sentinels or a cluster node, each
     * exchange still bounded by its own timeout. 0: no bound beyond
     * those (a connect and a command timeout per server asked). At most
     * one year. */
    int64_t setup_timeout_ms;
} cr_client_options;

/* An initialiser for cr_client_options: every option at its default. As a
 * value (to reset a struct): o = (cr_client_options)CR_CLIENT_OPTIONS_INIT. */
#define CR_CLIENT_OPTIONS_INIT { .size = sizeof(cr_client_options) }

/* Counters since the client was created, cheap enough to stay on. Start
 * from CR_CLIENT_STATS_INIT: cr_client_stats_get fills the first `size`
 * bytes only (at most what this library knows), so counters added to a
 * newer header keep the value they had (0 from the initialiser) when the
 * library running is older. */
typedef struct cr_client_stats {
    size_t size;                 /* sizeof(cr_client_stats) */
    uint64_t acquisitions;       /* locks, permits and latches obtained */
    uint64_t contended_waits;    /* calls that had to wait, whatever came of it */
    uint64_t wait_time_total_ms; /* summed over contended waits */
    uint64_t wait_time_max_ms;
    uint64_t renewals_sent;      /* leases in renewal calls */
    uint64_t renewal_calls;      /* renewal script calls */
    uint64_t renewal_failures;   /* calls that failed in transport */
    uint64_t leases_lost;        /* holds found gone by the watchdog or unlock */
    uint64_t reconnects;         /* connections opened again after a loss */
    uint64_t noscript_fallbacks; /* EVALSHA answered NOSCRIPT, EVAL sent */
    uint64_t commands;           /* commands sent on command connections */
    uint64_t messages;           /* pub/sub messages received */
    uint64_t redirects;          /* cluster MOVED and ASK replies followed */
    uint64_t topology_refreshes; /* cluster slot maps read (CLUSTER SLOTS) */
    uint64_t failovers;          /* Sentinel master switches followed */
} cr_client_stats;

/* An initialiser for cr_client_stats (sets `size`). */
#define CR_CLIENT_STATS_INIT { .size = sizeof(cr_client_stats) }

/* cr_client_new: connect to Redis as `opts` says (NULL: all defaults) and
 * start the client's threads. Only the first command connection is opened
 * here, so a server that is down is reported at once as CR_EIO.
 * Ownership: *out needs to be freed with cr_client_free().
 * Returns CR_OK, CR_EINVAL (bad URL or option; opts->size 0 or not a size
 * the struct ever had: not made with CR_CLIENT_OPTIONS_INIT), CR_ENOTSUP (opts->size is larger
 * than this library's struct and a field it does not know is set),
 * CR_EIO (unreachable: refused, closed, silent, no sentinel knows the
 * master), CR_ESERVER (a cluster node's slot map is malformed), CR_EAUTH (credentials refused or missing), CR_ENOPERM (the ACL
 * user may not run a command the set-up needs, such as ROLE under
 * Sentinel), CR_ECONFIG (the server does not speak the Redis protocol, is
 * in protected mode, or SELECT failed), CR_ETLS (a certificate, key or CA file that cannot be loaded, a
 * certificate that does not verify or name the host), CR_ENOMEM. */
CR_EXPORT cr_status cr_client_new(const cr_client_options *opts,
                                  cr_client **out);

/* cr_client_free: stop the client's threads and close its connections. Leases
 * still held are no longer renewed (they expire by their TTL). Threads blocked
 * in a wait on this client return CR_ECLOSED: they are woken, and may tidy
 * up on their way out (a fair-lock waiter leaves the queue) for up to one
 * command timeout; then every command still under way, of any thread, is
 * cut off (CR_ECLOSED), whatever the server does. This call waits for them
 * to leave: it returns within about one command timeout. Object handles
 * must be freed before. NULL does nothing. Never call it from a callback.
 * In the child of a fork() it only marks the handle dead: nothing is sent,
 * no thread is joined and the parent's memory is left alone. */
CR_EXPORT void cr_client_free(cr_client *client);

/* cr_client_free_within: cr_client_free with `grace_ms` instead of one
 * command timeout for the tidying up (0: cut everything off at once; an
 * acquisition in flight then may stand on the server until its lease
 * ends). For a program that must end quickly, on a signal say. */
CR_EXPORT void cr_client_free_within(cr_client *client, int64_t grace_ms);

/* cr_client_id: the client's UUID (36 lowercase characters), Redisson's
 * RedissonClient.getId(). Borrowed; valid until cr_client_free. */
CR_EXPORT const char *cr_client_id(const cr_client *client);

/* cr_thread_id: the calling thread's id inside every credisson client: a
 * positive number taken from a process-wide counter the first time the
 * thread asks, never reused by another thread of this process. Owner names
 * are "<client id>:<thread id>". */
CR_EXPORT int64_t cr_thread_id(void);

/* cr_client_stats_get: copy the client's counters into *out, which says
 * its size in out->size (CR_CLIENT_STATS_INIT); out->size is kept, and
 * nothing past min(out->size, this library's struct) is written.
 * Returns CR_OK, or CR_EINVAL (client or out NULL, out->size 0 or not a
 * size the struct ever had). */
CR_EXPORT cr_status cr_client_stats_get(cr_client *client,
                                        cr_client_stats *out);

/* cr_client_set_deadline: end everything `client` does for the blocking
 * calls begun from now on by `deadline_ms`, a time in milliseconds on
 * CLOCK_MONOTONIC (clock_gettime's seconds * 1000 + nanoseconds /
 * 1000000), as a program that must be done by then needs (credisson(1)
 * bounds its run so). A call's wait is cut to end one command timeout
 * (plus the replica-sync timeout) before the deadline, 0 at least (one
 * attempt), so that it ends as a wait that ran out (CR_BUSY, CR_TIMEOUT)
 * rather than cut off; every command a call sends ends by the deadline
 * (CR_EIO when the server has not answered by then), and so does the
 * work a call leaves to the background (giving back an acquisition
 * whose answer came late), which freeing a handle waits for. Calls under
 * way keep the bound they began with; the asynchronous API's requests,
 * the watchdog's renewals and the lease clock are not bounded by it.
 * 0 removes the deadline.
 * Returns CR_OK, or CR_EINVAL (client NULL or freed, deadline_ms
 * negative). */
CR_EXPORT cr_status cr_client_set_deadline(cr_client *client,
                                           int64_t deadline_ms);

/* cr_version_str / cr_version_num: the library's run-time version. */
CR_EXPORT const char *cr_version_str(void);
CR_EXPORT unsigned cr_version_num(void);

#ifdef __cplusplus
}
#endif
#endif
