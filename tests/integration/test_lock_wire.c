/* SPDX-License-Identifier: MIT */
/*
 * RLock wire conformance: each test drives the public API, then reads Redis
 * with plain commands, a SUBSCRIBE listener or a MONITOR connection, and
 * checks exactly what a Java Redisson client would see and write: key
 * names, types, hash fields, hold counts, TTLs, channel names, published
 * payloads and the unlock latch (protocol sections 1, 3 and 4). Some tests
 * play the Java side by writing the keys and publishing themselves.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <strings.h>
#include <unistd.h>

#include "lock_common.h"
#include "scripts.h"

/* An owner of another process, as a Java client would write it. */
#define FOREIGN_UUID "9f6a4c1e-2b3d-4e5f-8a7b-0c1d2e3f4a5b"

/* ------------------------------------------------------------- helpers */

/* "<client id>:<tid>" of `c` into out. */
static void
owner_of(cr_client *c, int64_t tid, char *out, size_t size)
{
    snprintf(out, size, "%s:%lld", cr_client_id(c), (long long)tid);
}

/* True when s is exactly n lowercase hex digits. */
static bool
is_lower_hex(const char *s, size_t n)
{
    size_t i;

    if (strlen(s) != n)
        return false;
    for (i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* Checks that hash `key` has exactly one field, `field`, whose value is the
 * decimal `count`. */
static void
assert_single_field(const char *key, const char *field, long long count)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "HGETALL %s", key);
    char want[24];

    snprintf(want, sizeof(want), "%lld", count);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_int_equal(r->element[0]->type, REDIS_REPLY_STRING);
    assert_string_equal(r->element[0]->str, field);
    assert_int_equal(r->element[1]->type, REDIS_REPLY_STRING);
    assert_string_equal(r->element[1]->str, want);
    freeReplyObject(r);
}

/* Writes the lock hash `key` as another client would: one field `owner`
 * with `count` holds, and a TTL of ttl_ms (none when <= 0). */
static void
write_foreign_hold(const char *key, const char *owner, long long count,
                   long long ttl_ms)
{
    assert_int_equal(redis_int("HSET %s %s %lld", key, owner, count), 1);
    if (ttl_ms > 0)
        assert_int_equal(redis_int("PEXPIRE %s %lld", key, ttl_ms), 1);
}

/* A thread that takes a lock with try_lock and keeps it. */
typedef struct waiter {
    cr_lock *lock;
    int64_t wait_ms;
    cr_status rc;
    int64_t tid;         /* cr_thread_id() of the waiting thread */
    int64_t acquired_at; /* monotonic ms, 0 when not acquired */
    pthread_t thread;
} waiter;

static void *
waiter_run(void *arg)
{
    waiter *w = arg;

    w->tid = cr_thread_id();
    w->rc = cr_lock_try_lock(w->lock, w->wait_ms, CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK)
        w->acquired_at = cr_test_now_ms();
    return NULL;
}

static void
waiter_start(waiter *w, cr_lock *l, int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_run, w), 0);
}

/* ------------------------------------------------------------- MONITOR */

/* Commands seen on a MONITOR connection, with their arguments unquoted.
 * Commands run by scripts are marked from_lua. */
#define MON_MAX_CMDS 1024
#define MON_MAX_ARGS 16

typedef struct mon_cmd {
    bool from_lua;
    int argc;                  /* at most MON_MAX_ARGS kept */
    char *argv[MON_MAX_ARGS];
} mon_cmd;

typedef struct monitor {
    redisContext *ctx;
    mon_cmd cmds[MON_MAX_CMDS];
    size_t n;
} monitor;

static monitor *
monitor_start(void)
{
    monitor *m = calloc(1, sizeof(*m));
    redisReply *r;

    assert_non_null(m);
    m->ctx = cr_test_redis_connect(&test_redis);
    assert_non_null(m->ctx);
    r = redisCommand(m->ctx, "MONITOR");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    return m;
}

static void
monitor_stop(monitor *m)
{
    size_t i;
    int j;

    for (i = 0; i < m->n; i++) {
        for (j = 0; j < m->cmds[i].argc && j < MON_MAX_ARGS; j++)
            free(m->cmds[i].argv[j]);
    }
    redisFree(m->ctx);
    free(m);
}

/* Parses one MONITOR line: `<time> [<db> <source>] "arg" "arg" ...`. Of
 * the server's escapes only \\ and \" are undone, which is enough for the
 * key names compared here. */
static void
monitor_parse(monitor *m, const char *line)
{
    mon_cmd *c;
    const char *p = strchr(line, '[');
    const char *close = p != NULL ? strchr(p, ']') : NULL;

    if (close == NULL || m->n == MON_MAX_CMDS)
        return;
    c = &m->cmds[m->n++];
    c->from_lua = strstr(p, " lua]") != NULL && strstr(p, " lua]") < close;
    p = close + 1;
    while ((p = strchr(p, '"')) != NULL) {
        size_t len = 0;
        char *arg = malloc(strlen(p) + 1);

        assert_non_null(arg);
        for (p++; *p != '\0' && *p != '"'; p++) {
            if (*p == '\\' && p[1] != '\0')
                p++;
            arg[len++] = *p;
        }
        arg[len] = '\0';
        if (*p == '"')
            p++;
        if (c->argc < MON_MAX_ARGS)
            c->argv[c->argc] = arg;
        else
            free(arg);
        c->argc++;
    }
}

/* Reads one MONITOR line before `deadline` (monotonic ms); false when none
 * came in time. */
static bool
monitor_read(monitor *m, int64_t deadline)
{
    void *reply = NULL;
    redisReply *r;

    for (;;) {
        struct pollfd pfd;
        int64_t left;
        int rc;

        if (redisGetReplyFromReader(m->ctx, &reply) != REDIS_OK)
            return false;
        if (reply != NULL)
            break;
        left = deadline - cr_test_now_ms();
        if (left <= 0)
            return false;
        pfd.fd = m->ctx->fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0 || redisBufferRead(m->ctx) != REDIS_OK)
            return false;
    }
    r = reply;
    if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING)
        monitor_parse(m, r->str);
    freeReplyObject(r);
    return true;
}

/* Reads MONITOR lines until `done(m, arg)` or timeout_ms passes; returns
 * the last answer of done. */
static bool
monitor_until(monitor *m, bool (*done)(monitor *, void *), void *arg,
              int64_t timeout_ms)
{
    int64_t deadline = cr_test_now_ms() + timeout_ms;

    while (!done(m, arg)) {
        if (!monitor_read(m, deadline))
            return done(m, arg);
    }
    return true;
}

/* Index of the first command from `from` on whose name is `name` (any
 * case), run by a script or not as from_lua says, and whose first argument
 * starts with `prefix`; -1 when there is none. */
static long
monitor_find(const monitor *m, size_t from, bool from_lua, const char *name,
             const char *prefix)
{
    size_t i;

    for (i = from; i < m->n; i++) {
        const mon_cmd *c = &m->cmds[i];

        if (c->from_lua == from_lua && c->argc >= 2 &&
            strcasecmp(c->argv[0], name) == 0 &&
            strncmp(c->argv[1], prefix, strlen(prefix)) == 0)
            return (long)i;
    }
    return -1;
}

/* done() for monitor_until: a client-sent DEL of a latch key was seen. */
static bool
saw_latch_del(monitor *m, void *arg)
{
    (void)arg;
    return monitor_find(m, 0, false, "DEL", "redisson_unlock_latch:") >= 0;
}

/* Checks what an unlock seen by `m` did with its latch, whose name must
 * start with `latch_prefix` (e.g. "redisson_unlock_latch:{k}:"): a script
 * SET of "<prefix><32 lowercase hex>" to `result` with a PX lifetime, then a
 * DEL of the same key sent by the client itself. */
static void
assert_latch_set_then_deleted(monitor *m, const char *latch_prefix,
                              const char *result)
{
    const mon_cmd *set, *del;
    long s, d;

    assert_true(monitor_until(m, saw_latch_del, NULL, slow(3000)));
    s = monitor_find(m, 0, true, "set", "redisson_unlock_latch:");
    assert_true(s >= 0);
    set = &m->cmds[s];
    assert_int_equal(set->argc, 5);
    assert_int_equal(strncmp(set->argv[1], latch_prefix, strlen(latch_prefix)), 0);
    assert_true(is_lower_hex(set->argv[1] + strlen(latch_prefix), 32));
    assert_string_equal(set->argv[2], result);
    assert_true(strcasecmp(set->argv[3], "px") == 0);
    /* It outlives the unlock's resend: two tries, each a connect (the 3 s
     * default) and a command timeout (new_client's). */
    assert_true(atoll(set->argv[4]) >= 2 * (3000 + slow(2000)));
    d = monitor_find(m, (size_t)s + 1, false, "DEL", "redisson_unlock_latch:");
    assert_true(d > s);
    del = &m->cmds[d];
    assert_int_equal(del->argc, 2);
    assert_string_equal(del->argv[1], set->argv[1]);
}

/* What saw_pexpires waits for: `want` script PEXPIREs of `key`. */
typedef struct pexpire_count {
    const char *key;
    size_t want;
} pexpire_count;

/* Number of script PEXPIREs of `key` (to `ms` ms unless NULL). */
static size_t
count_lua_pexpire(const monitor *m, const char *key, const char *ms)
{
    size_t i, n = 0;

    for (i = 0; i < m->n; i++) {
        const mon_cmd *c = &m->cmds[i];

        if (c->from_lua && c->argc == 3 && strcasecmp(c->argv[0], "pexpire") == 0 &&
            strcmp(c->argv[1], key) == 0 && (ms == NULL || strcmp(c->argv[2], ms) == 0))
            n++;
    }
    return n;
}

/* done() for monitor_until: enough PEXPIREs seen. */
static bool
saw_pexpires(monitor *m, void *arg)
{
    pexpire_count *p = arg;

    return count_lua_pexpire(m, p->key, NULL) >= p->want;
}

/* --------------------------------------------------- layout of the hash */

static void
test_wire_lock_hash_has_one_field_uuid_colon_tid_with_count_1(void **state)
{
    char owner[96];
    cr_lock *l;

    (void)state;
    assert_true(is_uuid_v4(cr_client_id(test_client)));
    assert_true(cr_thread_id() > 0);
    owner_of(test_client, cr_thread_id(), owner, sizeof(owner));
    assert_int_equal(cr_lock_new(test_client, "wire", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_true(key_type_is("wire", "hash"));
    assert_single_field("wire", owner, 1);
    /* The main key is the name itself, and nothing else is left behind. */
    assert_int_equal(count_keys("*"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS wire"), 0);
    cr_lock_free(l);
}

static void
test_wire_clients_have_distinct_ids_and_do_not_share_reentrancy(void **state)
{
    cr_client *other = new_client(30000);
    char mine[96];
    cr_lock *a, *b;

    (void)state;
    assert_non_null(other);
    assert_true(is_uuid_v4(cr_client_id(other)));
    assert_string_not_equal(cr_client_id(other), cr_client_id(test_client));
    owner_of(test_client, cr_thread_id(), mine, sizeof(mine));
    assert_int_equal(cr_lock_new(test_client, "ids", &a), CR_OK);
    assert_int_equal(cr_lock_new(other, "ids", &b), CR_OK);
    assert_int_equal(cr_lock_lock(a, CR_LEASE_WATCHDOG), CR_OK);
    /* Same thread, other client: another owner, so no reentry. */
    assert_int_equal(cr_lock_try_lock(b, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_single_field("ids", mine, 1);
    assert_int_equal(cr_lock_unlock(a), CR_OK);
    cr_lock_free(a);
    cr_lock_free(b);
    cr_client_free(other);
}

static void
test_wire_reentrant_lock_counts_holds_in_the_field(void **state)
{
    char owner[96];
    cr_lock *l;

    (void)state;
    owner_of(test_client, cr_thread_id(), owner, sizeof(owner));
    assert_int_equal(cr_lock_new(test_client, "again", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_single_field("again", owner, 3);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_single_field("again", owner, 2);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_single_field("again", owner, 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS again"), 0);
    cr_lock_free(l);
}

static void
test_wire_explicit_thread_ids_are_written_in_signed_decimal(void **state)
{
    char owner[96];
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "tids", &l), CR_OK);
    assert_int_equal(cr_lock_lock_tid(l, -77, CR_LEASE_WATCHDOG), CR_OK);
    snprintf(owner, sizeof(owner), "%s:-77", cr_client_id(test_client));
    assert_single_field("tids", owner, 1);
    assert_int_equal(cr_lock_unlock_tid(l, -77), CR_OK);
    assert_int_equal(cr_lock_lock_tid(l, INT64_MAX, 10000), CR_OK);
    snprintf(owner, sizeof(owner), "%s:9223372036854775807",
             cr_client_id(test_client));
    assert_single_field("tids", owner, 1);
    assert_int_equal(cr_lock_unlock_tid(l, INT64_MAX), CR_OK);
    assert_int_equal(redis_int("EXISTS tids"), 0);
    cr_lock_free(l);
}

/* --------------------------------------------------------------- leases */

static void
test_wire_watchdog_lock_ttl_is_the_watchdog_timeout(void **state)
{
    cr_client *c = new_client(30000);
    long long ttl;
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "dog", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    ttl = redis_int("PTTL dog");
    assert_true(ttl > 25000 && ttl <= 30000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_wire_explicit_lease_sets_pttl_and_partial_unlock_restores_it(void **state)
{
    cr_client *c = new_client(30000);
    char owner[96];
    long long ttl;
    cr_lock *l;
    int i;

    (void)state;
    assert_non_null(c);
    owner_of(c, cr_thread_id(), owner, sizeof(owner));
    assert_int_equal(cr_lock_new(c, "leased", &l), CR_OK);
    for (i = 0; i < 3; i++) {
        assert_int_equal(cr_lock_lock(l, 10000), CR_OK);
        /* Each reentry sets the TTL back to the lease. */
        ttl = redis_int("PTTL leased");
        assert_true(ttl > 10000 - slow(1000) && ttl <= 10000);
        assert_int_equal(redis_int("PEXPIRE leased 4000"), 1);
    }
    assert_single_field("leased", owner, 3);
    for (i = 0; i < 2; i++) {
        assert_int_equal(cr_lock_unlock(l), CR_OK);
        /* A partial unlock sets it back to the lease too. */
        ttl = redis_int("PTTL leased");
        assert_true(ttl > 10000 - slow(1000) && ttl <= 10000);
        assert_int_equal(redis_int("PEXPIRE leased 4000"), 1);
    }
    assert_single_field("leased", owner, 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS leased"), 0);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_wire_partial_unlock_in_watchdog_mode_restores_the_watchdog_ttl(void **state)
{
    cr_client *c = new_client(30000);
    long long ttl;
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "partial", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("PEXPIRE partial 5000"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    ttl = redis_int("PTTL partial");
    assert_true(ttl > 25000 && ttl <= 30000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS partial"), 0);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_wire_watchdog_reentry_after_explicit_lease_sets_the_watchdog_ttl(void **state)
{
    cr_client *c = new_client(30000);
    char owner[96];
    long long ttl;
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    owner_of(c, cr_thread_id(), owner, sizeof(owner));
    assert_int_equal(cr_lock_new(c, "current", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 10000), CR_OK);
    /* Deliberately unlike Redisson, which passes the object's last explicit
     * lease here: a lease-less acquisition always asks for the watchdog
     * timeout, so a short lease left over from an earlier explicit hold
     * cannot expire before the first renewal. */
    assert_int_equal(redis_int("PEXPIRE current 4000"), 1);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    ttl = redis_int("PTTL current");
    assert_true(ttl > 30000 - slow(1000) && ttl <= 30000);
    assert_single_field("current", owner, 2);
    /* As Redisson's internalLockLeaseTime, the partial unlock re-applies
     * the object's current lease: the last explicit one. */
    assert_int_equal(redis_int("PEXPIRE current 4000"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    ttl = redis_int("PTTL current");
    assert_true(ttl > 10000 - slow(1000) && ttl <= 10000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS current"), 0);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_wire_full_unlock_resets_the_lease_to_the_watchdog_timeout(void **state)
{
    cr_client *c = new_client(30000);
    long long ttl;
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "reset", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 10000), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    ttl = redis_int("PTTL reset");
    assert_true(ttl > 25000 && ttl <= 30000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_wire_explicit_lease_is_not_renewed_by_the_watchdog(void **state)
{
    long long ttl;
    cr_lock *l;

    (void)state;
    /* test_client's watchdog is 300 ms: a renewal would cut the TTL to
     * at most 300 ms within 100 ms. */
    assert_int_equal(cr_lock_new(test_client, "fixed", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, slow(2000)), CR_OK);
    usleep(500000);
    ttl = redis_int("PTTL fixed");
    assert_true(ttl > 300 && ttl <= slow(2000) - 500);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

/* ------------------------------------------------------------- watchdog */

static void
test_wire_watchdog_renews_with_pexpire_to_watchdog_timeout(void **state)
{
    cr_client *c = new_client(600);
    pexpire_count want = {"renewed", 3};
    monitor *m;
    cr_lock *l;
    int64_t end;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "renewed", &l), CR_OK);
    m = monitor_start();
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    /* Four watchdog timeouts: without renewals the key would be gone. */
    end = cr_test_now_ms() + 2400;
    while (cr_test_now_ms() < end) {
        long long ttl = redis_int("PTTL renewed");

        assert_true(ttl > 0 && ttl <= 600);
        usleep(25000);
    }
    /* The acquire's PEXPIRE and the renewals all set the TTL to 600 ms. */
    assert_true(monitor_until(m, saw_pexpires, &want, slow(3000)));
    assert_int_equal(count_lua_pexpire(m, "renewed", NULL),
                     count_lua_pexpire(m, "renewed", "600"));
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    monitor_stop(m);
    cr_lock_free(l);
    cr_client_free(c);
}

static void
test_wire_watchdog_and_unlock_leave_a_lock_taken_by_another_owner_alone(void **state)
{
    const char *foreign = FOREIGN_UUID ":9";
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "taken", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    /* Behind the holder's back, another client takes the key over. */
    assert_int_equal(redis_int("DEL taken"), 1);
    write_foreign_hold("taken", foreign, 1, 0);
    assert_true(cr_test_wait_until(lock_is_lost, l, slow(3000)));
    usleep(300000); /* more renewal periods */
    assert_int_equal(redis_int("PTTL taken"), -1);
    assert_single_field("taken", foreign, 1);
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    assert_int_equal(redis_int("PTTL taken"), -1);
    assert_single_field("taken", foreign, 1);
    cr_lock_free(l);
}

/* -------------------------------------------------------------- pub/sub */

static void
test_wire_unlock_publishes_0_on_redisson_lock__channel(void **state)
{
    const char *ch = "redisson_lock__channel:{pub}";
    cr_test_listener *li = listen_on(&ch, 1);
    cr_lock *l;
    size_t n;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "pub", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    /* A partial unlock publishes nothing. */
    assert_int_equal(settle(li, ch, "marker-1"), 0);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    n = settle(li, ch, "marker-2");
    assert_int_equal(n, 2);
    assert_string_equal(cr_test_listener_get(li, 1)->channel, ch);
    assert_string_equal(cr_test_listener_get(li, 1)->payload, "0");
    assert_int_equal(cr_test_listener_get(li, 1)->payload_len, 1);
    assert_int_equal(count_messages(li, n, ch, "0"), 1);
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

static void
test_wire_unlock_by_a_non_owner_writes_and_publishes_nothing(void **state)
{
    const char *ch = "redisson_lock__channel:{notmine}";
    const char *foreign = FOREIGN_UUID ":1";
    cr_test_listener *li = listen_on(&ch, 1);
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "notmine", &l), CR_OK);
    write_foreign_hold("notmine", foreign, 1, 20000);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    assert_single_field("notmine", foreign, 1);
    assert_true(redis_int("PTTL notmine") > 15000);
    assert_int_equal(count_keys("*"), 1);
    /* And on a missing key. */
    assert_int_equal(redis_int("DEL notmine"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_ENOTOWNER);
    assert_int_equal(count_keys("*"), 0);
    assert_int_equal(settle(li, ch, "marker"), 0);
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

static void
test_wire_force_unlock_deletes_key_and_publishes_0(void **state)
{
    const char *ch = "redisson_lock__channel:{forced}";
    cr_test_listener *li = listen_on(&ch, 1);
    bool done = false;
    cr_lock *l;
    size_t n;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "forced", &l), CR_OK);
    write_foreign_hold("forced", FOREIGN_UUID ":3", 4, 20000);
    assert_int_equal(cr_lock_force_unlock(l, &done), CR_OK);
    assert_true(done);
    assert_int_equal(redis_int("EXISTS forced"), 0);
    n = settle(li, ch, "marker");
    assert_int_equal(n, 1);
    assert_string_equal(cr_test_listener_get(li, 0)->channel, ch);
    assert_string_equal(cr_test_listener_get(li, 0)->payload, "0");
    /* forceUnlock uses no latch. */
    assert_int_equal(count_keys("*"), 0);
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

static void
test_wire_force_unlock_of_a_free_lock_publishes_nothing(void **state)
{
    const char *ch = "redisson_lock__channel:{free}";
    cr_test_listener *li = listen_on(&ch, 1);
    bool done = true;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "free", &l), CR_OK);
    assert_int_equal(cr_lock_force_unlock(l, &done), CR_OK);
    assert_false(done);
    assert_int_equal(settle(li, ch, "marker"), 0);
    assert_int_equal(count_keys("*"), 0);
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

static void
test_wire_delete_deletes_key_and_publishes_0(void **state)
{
    const char *ch = "redisson_lock__channel:{deleted}";
    cr_test_listener *li = listen_on(&ch, 1);
    bool done = false;
    cr_lock *l;
    size_t n;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "deleted", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_delete(l, &done), CR_OK);
    assert_true(done);
    assert_int_equal(redis_int("EXISTS deleted"), 0);
    assert_int_equal(cr_lock_delete(l, &done), CR_OK);
    assert_false(done);
    n = settle(li, ch, "marker");
    assert_int_equal(n, 1);
    assert_string_equal(cr_test_listener_get(li, 0)->payload, "0");
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

/* --------------------------------------------------------- unlock latch */

static void
test_wire_unlock_latch_key_is_removed_after_unlock(void **state)
{
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "latched", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_true(cr_test_wait_until(no_latch_keys, NULL, slow(2000)));
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_true(cr_test_wait_until(no_latch_keys, NULL, slow(2000)));
    assert_int_equal(count_keys("*"), 0);
    cr_lock_free(l);
}

static void
test_wire_unlock_latch_is_set_with_a_32_hex_request_id_then_deleted(void **state)
{
    monitor *m;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "req", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    m = monitor_start();
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_latch_set_then_deleted(m, "redisson_unlock_latch:{req}:", "1");
    monitor_stop(m);
    cr_lock_free(l);
}

static void
test_wire_partial_unlock_sets_latch_to_0(void **state)
{
    monitor *m;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "req0", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    m = monitor_start();
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_latch_set_then_deleted(m, "redisson_unlock_latch:{req0}:", "0");
    monitor_stop(m);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
}

/* EVAL of lua/lock_unlock.lua as the library embeds it (with the waiting
 * line's functions it uses) with this latch, on lock "replay" with its
 * line; returns the reply. */
static redisReply *
eval_unlock(const char *key, const char *latch, const char *owner)
{
    return cr_test_redis_cmd(
        &test_redis, "EVAL %s 5 %s %s %s %s %s %s %s %s %s %s %s %s %s",
        cr__scripts[CR__SCRIPT_LOCK_UNLOCK].body, key,
        "redisson_lock__channel:{replay}", latch, "credisson_line:{replay}",
        "credisson_line_state:{replay}", "0", "10000", owner, "publish",
        "5000", "30000", "250", "credisson_line__channel:{replay}:");
}

static void
test_wire_unlock_script_replays_latch_result(void **state)
{
    const char *ch = "redisson_lock__channel:{replay}";
    const char *owner = FOREIGN_UUID ":4";
    const char *latch1 = "redisson_unlock_latch:{replay}:"
                         "00112233445566778899aabbccddeeff";
    const char *latch2 = "redisson_unlock_latch:{replay}:"
                         "ffeeddccbbaa99887766554433221100";
    const char *latch3 = "redisson_unlock_latch:{replay}:"
                         "0123456789abcdef0123456789abcdef";
    cr_test_listener *li;
    redisReply *r;
    long long ttl;
    int i;

    (void)state;
    li = listen_on(&ch, 1);
    write_foreign_hold("replay", owner, 2, 3000);
    /* A partial unlock, then its retry with the same latch. */
    for (i = 0; i < 2; i++) {
        r = eval_unlock("replay", latch1, owner);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_int_equal(r->integer, 0);
        freeReplyObject(r);
        assert_single_field("replay", owner, 1);
    }
    ttl = redis_int("PTTL replay");
    assert_true(ttl > 10000 - slow(1000) && ttl <= 10000);
    assert_true(key_type_is(latch1, "string"));
    assert_int_equal(redis_int("GET %s", latch1), 0);
    ttl = redis_int("PTTL %s", latch1);
    assert_true(ttl > 0 && ttl <= 5000);
    /* The full unlock, then its retry: one release and one message. The
     * first reply says the listener heard it (-1); the replay says 1. */
    for (i = 0; i < 2; i++) {
        r = eval_unlock("replay", latch2, owner);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_int_equal(r->integer, i == 0 ? -1 : 1);
        freeReplyObject(r);
        assert_int_equal(redis_int("EXISTS replay"), 0);
    }
    assert_int_equal(redis_int("GET %s", latch2), 1);
    assert_int_equal(settle(li, ch, "marker"), 1);
    assert_string_equal(cr_test_listener_get(li, 0)->payload, "0");
    /* Not the owner: nil, and no latch written. */
    r = eval_unlock("replay", latch3, owner);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    assert_int_equal(redis_int("EXISTS %s", latch3), 0);
    cr_test_listener_stop(li);
}

/* ---------------------------------------------------------------- names */

static void
test_wire_name_with_hash_tag_uses_prefix_without_added_braces(void **state)
{
    const char *chans[2] = {"redisson_lock__channel:app{7}lock",
                            "redisson_lock__channel:{app{7}lock}"};
    cr_test_listener *li = listen_on(chans, 2);
    char owner[96];
    cr_lock *l;
    size_t n;

    (void)state;
    owner_of(test_client, cr_thread_id(), owner, sizeof(owner));
    assert_int_equal(cr_lock_new(test_client, "app{7}lock", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_true(key_type_is("app{7}lock", "hash"));
    assert_single_field("app{7}lock", owner, 1);
    assert_int_equal(count_keys("*"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS app{7}lock"), 0);
    n = settle(li, chans[1], "marker");
    assert_int_equal(n, 1);
    assert_int_equal(count_messages(li, n, chans[0], "0"), 1);
    cr_test_listener_stop(li);
    cr_lock_free(l);
}

static void
test_wire_latch_of_a_hash_tagged_name_has_no_added_braces(void **state)
{
    monitor *m;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "app{7}lock", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    m = monitor_start();
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_latch_set_then_deleted(m, "redisson_unlock_latch:app{7}lock:", "1");
    monitor_stop(m);
    cr_lock_free(l);
}

static void
test_wire_name_prefix_is_part_of_the_key_and_the_channel(void **state)
{
    const char *ch = "redisson_lock__channel:{app:pre}";
    cr_test_listener *li = listen_on(&ch, 1);
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char owner[96];
    cr_lock *l;
    size_t n;

    (void)state;
    o.url = test_redis.url;
    o.command_timeout_ms = slow(2000);
    o.name_prefix = "app:";
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    owner_of(c, cr_thread_id(), owner, sizeof(owner));
    assert_int_equal(cr_lock_new(c, "pre", &l), CR_OK);
    assert_string_equal(cr_lock_name(l), "pre");
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("EXISTS pre"), 0);
    assert_single_field("app:pre", owner, 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS app:pre"), 0);
    n = settle(li, ch, "marker");
    assert_int_equal(n, 1);
    assert_string_equal(cr_test_listener_get(li, 0)->payload, "0");
    cr_test_listener_stop(li);
    cr_lock_free(l);
    cr_client_free(c);
}

/* ------------------------------------------- keys written by other clients */

static void
test_wire_is_locked_and_hold_count_read_plain_keys_written_by_another_client(void **state)
{
    const char *foreign = FOREIGN_UUID ":5";
    bool locked = false, held = true;
    int64_t n = -1;
    long long ttl;
    cr_lock *l;

    (void)state;
    write_foreign_hold("java", foreign, 2, 20000);
    assert_int_equal(cr_lock_new(test_client, "java", &l), CR_OK);
    assert_int_equal(cr_lock_is_locked(l, &locked), CR_OK);
    assert_true(locked);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(cr_lock_is_held_by_thread(l, 5, &held), CR_OK);
    assert_false(held);
    assert_int_equal(cr_lock_get_hold_count_tid(l, 5, &n), CR_OK);
    assert_int_equal(n, 0);
    assert_int_equal(cr_lock_is_held_by_current_thread(l, &held), CR_OK);
    assert_false(held);
    /* The failed attempt changed nothing: same field, TTL not reset. */
    assert_single_field("java", foreign, 2);
    ttl = redis_int("PTTL java");
    assert_true(ttl > 20000 - slow(2000) && ttl <= 20000);
    assert_int_equal(redis_int("PEXPIRE java 19000"), 1);
    assert_int_equal(cr_lock_try_lock(l, 0, 5000), CR_BUSY);
    ttl = redis_int("PTTL java");
    assert_true(ttl > 5000 && ttl <= 19000);
    cr_lock_free(l);
}

static void
test_wire_acquire_and_unlock_use_a_field_written_in_owner_form(void **state)
{
    long long ttl;
    char owner[96];
    int64_t n = 0;
    bool held = false;
    cr_lock *l;

    (void)state;
    /* The hold as this client's owner name would be written by anyone. */
    owner_of(test_client, 42, owner, sizeof(owner));
    write_foreign_hold("form", owner, 1, 20000);
    assert_int_equal(cr_lock_new(test_client, "form", &l), CR_OK);
    assert_int_equal(cr_lock_is_held_by_thread(l, 42, &held), CR_OK);
    assert_true(held);
    assert_int_equal(cr_lock_get_hold_count_tid(l, 42, &n), CR_OK);
    assert_int_equal(n, 1);
    /* Reentry increments that field. */
    assert_int_equal(cr_lock_try_lock_tid(l, 42, 0, 15000), CR_OK);
    assert_single_field("form", owner, 2);
    ttl = redis_int("PTTL form");
    assert_true(ttl > 0 && ttl <= 15000);
    assert_int_equal(cr_lock_unlock_tid(l, 42), CR_OK);
    assert_single_field("form", owner, 1);
    assert_int_equal(cr_lock_unlock_tid(l, 42), CR_OK);
    assert_int_equal(redis_int("EXISTS form"), 0);
    cr_lock_free(l);
}

static void
test_wire_remain_time_to_live_is_the_keys_pttl(void **state)
{
    int64_t ttl = 0;
    cr_lock *l;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "ttl", &l), CR_OK);
    assert_int_equal(cr_lock_remain_time_to_live(l, &ttl), CR_OK);
    assert_int_equal(ttl, -2);
    write_foreign_hold("ttl", FOREIGN_UUID ":1", 1, 0);
    assert_int_equal(cr_lock_remain_time_to_live(l, &ttl), CR_OK);
    assert_int_equal(ttl, -1);
    assert_int_equal(redis_int("PEXPIRE ttl 20000"), 1);
    assert_int_equal(cr_lock_remain_time_to_live(l, &ttl), CR_OK);
    assert_true(ttl > 20000 - slow(2000) && ttl <= 20000);
    cr_lock_free(l);
}

/* -------------------------------------------------------------- waiting */

static void
test_wire_java_held_lock_wakes_c_waiter_on_java_style_unlock(void **state)
{
    const char *ch = "redisson_lock__channel:{handoff}";
    char owner[96];
    uint64_t before;
    int64_t released;
    cr_lock *l;
    waiter w;

    (void)state;
    write_foreign_hold("handoff", FOREIGN_UUID ":7", 1, 20000);
    assert_int_equal(cr_lock_new(test_client, "handoff", &l), CR_OK);
    before = commands_of(test_client);
    waiter_start(&w, l, slow(30000));
    /* First in the lock's line, and no release of a waiter in line to
     * come: after a turn's length it listens on the lock's channel too. */
    await_waiters_in_line("handoff", 1);
    assert_true(cr_test_wait_until(has_subscriber, (void *)ch, slow(3000)));
    /* Its four tries made (before subscribing to its own channel, after,
     * once first for a turn's length, and after subscribing to the lock's
     * channel): it sleeps until a message or the 20 s lease. */
    await_commands(test_client, before + 4);
    /* What a Java unlock does to the keys. */
    released = cr_test_now_ms();
    assert_int_equal(redis_int("DEL handoff"), 1);
    assert_true(redis_int("PUBLISH %s 0", ch) >= 1);
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_at - released < slow(3000));
    owner_of(test_client, w.tid, owner, sizeof(owner));
    assert_single_field("handoff", owner, 1);
    assert_int_equal(cr_lock_unlock_tid(l, w.tid), CR_OK);
    assert_int_equal(redis_int("EXISTS handoff"), 0);
    cr_lock_free(l);
}

static void
test_wire_waiter_takes_the_lock_when_the_holders_ttl_runs_out(void **state)
{
    int64_t start;
    cr_lock *l;
    waiter w;

    (void)state;
    /* A holder that dies: no message ever comes, only the TTL hint. */
    start = cr_test_now_ms();
    write_foreign_hold("expiring", FOREIGN_UUID ":8", 1, 700);
    assert_int_equal(cr_lock_new(test_client, "expiring", &l), CR_OK);
    waiter_start(&w, l, slow(30000));
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.acquired_at - start >= 650);
    assert_true(w.acquired_at - start < 700 + slow(3000));
    assert_int_equal(cr_lock_unlock_tid(l, w.tid), CR_OK);
    cr_lock_free(l);
}

static void
test_wire_try_lock_on_a_key_without_ttl_waits_out_its_budget(void **state)
{
    const char *foreign = FOREIGN_UUID ":6";
    int64_t start, took;
    cr_lock *l;

    (void)state;
    write_foreign_hold("forever", foreign, 1, 0);
    assert_int_equal(cr_lock_new(test_client, "forever", &l), CR_OK);
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(l, 300, CR_LEASE_WATCHDOG), CR_BUSY);
    took = cr_test_now_ms() - start;
    assert_true(took >= 290 && took < slow(2000));
    assert_int_equal(redis_int("PTTL forever"), -1);
    assert_single_field("forever", foreign, 1);
    /* The waiter that gave up left the line, the last there: its keys
     * went with it. */
    assert_int_equal(redis_int("EXISTS credisson_line:{forever} "
                               "credisson_line_state:{forever}"), 0);
    /* It leaves no subscription behind, on the lock's channel or its own
     * (the client sends its UNSUBSCRIBE from its own thread, so wait for
     * it). */
    assert_true(cr_test_wait_until(has_no_subscriber,
                                   (void *)"redisson_lock__channel:{forever}",
                                   slow(2000)));
    assert_true(cr_test_wait_until(no_line_listener, (void *)"forever",
                                   slow(2000)));
    cr_lock_free(l);
}

/* ----------------------------------------------------------------- main */

#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_wire_lock_hash_has_one_field_uuid_colon_tid_with_count_1),
        T(test_wire_clients_have_distinct_ids_and_do_not_share_reentrancy),
        T(test_wire_reentrant_lock_counts_holds_in_the_field),
        T(test_wire_explicit_thread_ids_are_written_in_signed_decimal),
        T(test_wire_watchdog_lock_ttl_is_the_watchdog_timeout),
        T(test_wire_explicit_lease_sets_pttl_and_partial_unlock_restores_it),
        T(test_wire_partial_unlock_in_watchdog_mode_restores_the_watchdog_ttl),
        T(test_wire_watchdog_reentry_after_explicit_lease_sets_the_watchdog_ttl),
        T(test_wire_full_unlock_resets_the_lease_to_the_watchdog_timeout),
        T(test_wire_explicit_lease_is_not_renewed_by_the_watchdog),
        T(test_wire_watchdog_renews_with_pexpire_to_watchdog_timeout),
        T(test_wire_watchdog_and_unlock_leave_a_lock_taken_by_another_owner_alone),
        T(test_wire_unlock_publishes_0_on_redisson_lock__channel),
        T(test_wire_unlock_by_a_non_owner_writes_and_publishes_nothing),
        T(test_wire_force_unlock_deletes_key_and_publishes_0),
        T(test_wire_force_unlock_of_a_free_lock_publishes_nothing),
        T(test_wire_delete_deletes_key_and_publishes_0),
        T(test_wire_unlock_latch_key_is_removed_after_unlock),
        T(test_wire_unlock_latch_is_set_with_a_32_hex_request_id_then_deleted),
        T(test_wire_partial_unlock_sets_latch_to_0),
        T(test_wire_unlock_script_replays_latch_result),
        T(test_wire_name_with_hash_tag_uses_prefix_without_added_braces),
        T(test_wire_latch_of_a_hash_tagged_name_has_no_added_braces),
        T(test_wire_name_prefix_is_part_of_the_key_and_the_channel),
        T(test_wire_is_locked_and_hold_count_read_plain_keys_written_by_another_client),
        T(test_wire_acquire_and_unlock_use_a_field_written_in_owner_form),
        T(test_wire_remain_time_to_live_is_the_keys_pttl),
        T(test_wire_java_held_lock_wakes_c_waiter_on_java_style_unlock),
        T(test_wire_waiter_takes_the_lock_when_the_holders_ttl_runs_out),
        T(test_wire_try_lock_on_a_key_without_ttl_waits_out_its_budget),
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
