/* SPDX-License-Identifier: MIT */
/*
 * Redis Cluster, against a real one: three masters with a replica each,
 * started once for the file. Every object on every master, keys of one
 * object on one master, wake-ups by sharded and by classic pub/sub, SPUBLISH
 * as Java listeners hear it, names refused when their keys would split, a
 * slot migrated under held and awaited locks (and its MOVED and ASK
 * reported to the event hook; asynchronous scripts waiting out TRYAGAIN
 * mid-migration, and their MOVED correcting the slot map), and a master
 * killed while
 * threads contend for a lock with a shared counter. The failover test runs
 * last: it leaves the cluster without the killed node.
 */
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "credisson.h"
#include "poll_loop.h"
#include "async_outcome.h"
#include "redis_cluster.h"

#define CLUSTER_REPLICAS 1 /* a replica for each master */
#include "cluster_common.h"

/* A client on the cluster; `query` (may be NULL) is appended to the URL;
 * `hook` (may be NULL) is its event hook, called with `hook_userdata`. */
static cr_client *
hooked_client(const char *query, int64_t watchdog_ms, int64_t sync_ms,
              cr_event_fn hook, void *hook_userdata)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char url[1100];

    snprintf(url, sizeof(url), "%s%s", cl.url, query != NULL ? query : "");
    o.url = url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.replica_sync_timeout_ms = sync_ms;
    o.command_timeout_ms = slow(2000);
    o.reconnect_window_ms = slow(30000);
    o.event_fn = hook;
    o.event_userdata = hook_userdata;
    if (cr_client_new(&o, &c) != CR_OK)
        fail_msg("cr_client_new: %s", cr_last_error());
    return c;
}

static cr_client *
client(const char *query, int64_t watchdog_ms, int64_t sync_ms)
{
    return hooked_client(query, watchdog_ms, sync_ms, NULL, NULL);
}

static cr_client_stats
stats(cr_client *c)
{
    cr_client_stats s = CR_CLIENT_STATS_INIT;

    assert_int_equal(cr_client_stats_get(c, &s), CR_OK);
    return s;
}

/* A name "<prefix>-<n>" whose slot is served by master `master` (the
 * index of a master node), written into buf. */
static void
name_on(char *buf, size_t len, const char *prefix, int master)
{
    int n;

    for (n = 0; n < 100000; n++) {
        snprintf(buf, len, "%s-%d", prefix, n);
        if (cr_test_cluster_master_of(&cl, cr_test_cluster_keyslot(&cl, buf)) ==
            master)
            return;
    }
    fail_msg("no name found for master %d", master);
}

/* The indexes of the three masters, in node order. */
static void
masters(int out[3])
{
    int i, k = 0;

    for (i = 0; i < cl.nnodes && k < 3; i++) {
        redisReply *r = cr_test_cluster_cmd(&cl, i, "ROLE");

        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            strcmp(r->element[0]->str, "master") == 0)
            out[k++] = i;
        if (r != NULL)
            freeReplyObject(r);
    }
    assert_int_equal(k, 3);
}

/* An integer command on the master of `key`'s slot. */
#define AT_KEY(key, ...) cr_test_cluster_int_at_key(&cl, key, __VA_ARGS__)

/* Fails the test, quoting the library's message, unless `call` returns
 * `want` with `text` (NULL: any) in that message. */
#define assert_status(call, want, text)                                    \
    do {                                                                   \
        cr_status rc_ = (call);                                            \
        const char *text_ = (text);                                        \
        if (rc_ != (want) ||                                               \
            (text_ != NULL && strstr(cr_last_error(), text_) == NULL))     \
            fail_msg("wanted %s, got %s: %s", cr_strerror(want),           \
                     cr_strerror(rc_), cr_last_error());                   \
    } while (0)

/* ---------------------------------------------------------- every object */

/* Every kind of object named so that it lives on master m: what it writes
 * is on that master, and it works end to end. */
static void
exercise_objects_on(cr_client *c, int m)
{
    char name[64], owner[64], id[CR_PERMIT_ID_LEN + 1];
    cr_lock *lock, *fair, *fenced;
    cr_rwlock *rw;
    cr_semaphore *sem;
    cr_permit_semaphore *ps;
    cr_latch *latch;
    int64_t token = 0;
    bool set = false;

    name_on(name, sizeof(name), "lock", m);
    assert_int_equal(cr_lock_new(c, name, &lock), CR_OK);
    assert_int_equal(cr_lock_lock(lock, CR_LEASE_WATCHDOG), CR_OK);
    snprintf(owner, sizeof(owner), "%s:%lld", cr_client_id(c),
             (long long)cr_thread_id());
    assert_int_equal(AT_KEY(name, "HEXISTS %s %s", name, owner), 1);
    assert_int_equal(cr_lock_unlock(lock), CR_OK);
    assert_int_equal(AT_KEY(name, "EXISTS %s", name), 0);
    cr_lock_free(lock);

    name_on(name, sizeof(name), "fair", m);
    assert_int_equal(cr_fair_lock_new(c, name, &fair), CR_OK);
    assert_int_equal(cr_lock_try_lock(fair, 0, 10000), CR_OK);
    assert_int_equal(AT_KEY(name, "HEXISTS %s %s", name, owner), 1);
    assert_int_equal(cr_lock_unlock(fair), CR_OK);
    cr_lock_free(fair);

    name_on(name, sizeof(name), "rw", m);
    assert_int_equal(cr_rwlock_new(c, name, &rw), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(rw), 10000), CR_OK);
    assert_int_equal(AT_KEY(name, "HEXISTS %s mode", name), 1);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(rw)), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_write_lock(rw), CR_LEASE_WATCHDOG),
                     CR_OK);
    assert_int_equal(cr_lock_unlock(cr_rwlock_write_lock(rw)), CR_OK);
    assert_int_equal(AT_KEY(name, "EXISTS %s", name), 0);
    cr_rwlock_free(rw);

    name_on(name, sizeof(name), "sem", m);
    assert_int_equal(cr_semaphore_new(c, name, &sem), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(sem, 2, 0, &set), CR_OK);
    assert_true(set);
    assert_int_equal(cr_semaphore_try_acquire(sem, 2, 0), CR_OK);
    assert_int_equal(AT_KEY(name, "STRLEN %s", name), 1); /* "0" */
    assert_int_equal(cr_semaphore_release(sem, 2), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(sem, 1, 1000), CR_OK);
    assert_int_equal(cr_semaphore_release(sem, 1), CR_OK);
    cr_semaphore_free(sem);

    name_on(name, sizeof(name), "psem", m);
    assert_int_equal(cr_permit_semaphore_new(c, name, &ps), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_set_permits(ps, 1, &set), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_acquire(ps, 1000, 10000, id),
                     CR_OK);
    assert_int_equal(cr_permit_semaphore_release(ps, id), CR_OK);
    cr_permit_semaphore_free(ps);

    name_on(name, sizeof(name), "latch", m);
    assert_int_equal(cr_latch_new(c, name, &latch), CR_OK);
    assert_int_equal(cr_latch_try_set_count(latch, 1, 0, &set), CR_OK);
    assert_int_equal(cr_latch_await(latch, 0), CR_TIMEOUT);
    assert_int_equal(cr_latch_count_down(latch), CR_OK);
    assert_int_equal(cr_latch_await(latch, 1000), CR_OK);
    cr_latch_free(latch);

    name_on(name, sizeof(name), "fenced", m);
    assert_int_equal(cr_fenced_lock_new(c, name, &fenced), CR_OK);
    assert_int_equal(cr_fenced_lock_try_lock_and_get_token(fenced, 0, 10000,
                                                           &token), CR_OK);
    assert_true(token >= 1);
    assert_int_equal(cr_lock_unlock(fenced), CR_OK);
    cr_lock_free(fenced);
}

static void
test_cluster_every_object_works_on_every_master(void **state)
{
    cr_client *c = client(NULL, 0, 0);
    int m[3], i;

    (void)state;
    masters(m);
    for (i = 0; i < 3; i++)
        exercise_objects_on(c, m[i]);
    assert_true(stats(c).topology_refreshes >= 1);
    cr_client_free(c);
}

/* --------------------------------------------------- keys share a slot */

typedef struct waiter {
    cr_lock *lock;
    int64_t wait_ms;
    int64_t lease_ms;
    cr_status rc;
    int64_t done_at;
    pthread_t thread;
} waiter;

static void *
waiter_main(void *arg)
{
    waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, w->wait_ms, w->lease_ms);
    w->done_at = cr_test_now_ms();
    if (w->rc == CR_OK)
        w->rc = cr_lock_unlock(w->lock);
    return NULL;
}

static void
waiter_start(waiter *w, cr_lock *lock, int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->lock = lock;
    w->wait_ms = wait_ms;
    w->lease_ms = CR_LEASE_WATCHDOG;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

typedef struct at_key {
    const char *key;
    const char *cmd; /* an integer command on the key, e.g. "LLEN" */
    long long want;
} at_key;

static bool
key_int_is(void *arg)
{
    at_key *a = arg;
    char fmt[32];

    snprintf(fmt, sizeof(fmt), "%s %%s", a->cmd);
    return cr_test_cluster_int_at_key(&cl, a->key, fmt, a->key) == a->want;
}

static void
test_cluster_fair_lock_keys_share_the_name_slot(void **state)
{
    cr_client *a = client(NULL, 0, 0), *b = client(NULL, 0, 0);
    char name[64], queue[96], zset[96];
    cr_lock *la, *lb;
    at_key q;
    waiter w;
    int node, m[3];

    (void)state;

    masters(m);
    name_on(name, sizeof(name), "fairq", m[1]);
    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
    snprintf(zset, sizeof(zset), "redisson_lock_timeout:{%s}", name);
    assert_int_equal(cr_test_cluster_keyslot(&cl, queue),
                     cr_test_cluster_keyslot(&cl, name));
    assert_int_equal(cr_fair_lock_new(a, name, &la), CR_OK);
    assert_int_equal(cr_fair_lock_new(b, name, &lb), CR_OK);
    assert_int_equal(cr_lock_lock(la, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&w, lb, slow(10000));
    q = (at_key){queue, "LLEN", 1};
    assert_true(cr_test_wait_until(key_int_is, &q, slow(3000)));
    /* The queue, the timeout set and the lock are on one master. */
    node = cr_test_cluster_master_of(&cl, cr_test_cluster_keyslot(&cl, name));
    {
        redisReply *r = cr_test_cluster_cmd(&cl, node, "EXISTS %s %s %s", name,
                                            queue, zset);

        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_int_equal(r->integer, 3);
        freeReplyObject(r);
    }
    assert_int_equal(cr_lock_unlock(la), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    cr_lock_free(la);
    cr_lock_free(lb);
    cr_client_free(a);
    cr_client_free(b);
}

/* ------------------------------------------------------------- pub/sub */

/* The waiting line of object `name` and whether its waiters listen on
 * sharded channels. */
typedef struct line_arg {
    const char *name;
    bool sharded;
} line_arg;

/* Whether the line of the line_arg's object has a waiter (on the master
 * of its slot) that listens on its own channel (on any master). The line's
 * names are the object's name after "credisson_line:" and
 * "credisson_line__channel:", in braces unless it has its own. */
static bool
waits_in_line(void *arg)
{
    line_arg *a = arg;
    const char *open = strchr(a->name, '{') != NULL ? "" : "{";
    const char *close = *open != '\0' ? "}" : "";
    char key[128];
    int i;

    snprintf(key, sizeof(key), "credisson_line:%s%s%s", open, a->name, close);
    if (cr_test_cluster_int_at_key(&cl, key, "ZCARD %s", key) < 1)
        return false;
    for (i = 0; i < cl.nnodes; i++) {
        redisReply *r = cr_test_cluster_cmd(
            &cl, i, "PUBSUB %s credisson_line__channel:%s%s%s:*",
            a->sharded ? "SHARDCHANNELS" : "CHANNELS", open, a->name, close);
        bool yes = r != NULL && r->type == REDIS_REPLY_ARRAY &&
                   r->elements >= 1;

        if (r != NULL)
            freeReplyObject(r);
        if (yes)
            return true;
    }
    return false;
}

/* Whether client `arg` has read a pub/sub message. */
static bool
heard_a_message(void *arg)
{
    return stats(arg).messages >= 1;
}

/* A waiter in client b is woken by a's unlock through pub/sub, its turn
 * on its own channel (not by the lease running out: the holder's lease is
 * the 30 s watchdog). The waiter may also take the lock on the attempt it
 * makes once subscribed, so the message is awaited rather than expected to
 * have come first. */
static void
unlock_wakes_waiter(const char *query, bool sharded, const char *prefix)
{
    cr_client *a = client(query, 0, 0), *b = client(query, 0, 0);
    char name[64];
    cr_lock *la, *lb;
    int64_t released;
    line_arg in_line;
    waiter w;
    int m[3];


    masters(m);
    name_on(name, sizeof(name), prefix, m[2]);
    assert_int_equal(cr_lock_new(a, name, &la), CR_OK);
    assert_int_equal(cr_lock_new(b, name, &lb), CR_OK);
    assert_int_equal(cr_lock_lock(la, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&w, lb, slow(20000));
    in_line = (line_arg){name, sharded};
    assert_true(cr_test_wait_until(waits_in_line, &in_line, slow(5000)));
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(la), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.done_at - released < slow(2000));
    assert_true(cr_test_wait_until(heard_a_message, b, slow(2000)));
    cr_lock_free(la);
    cr_lock_free(lb);
    cr_client_free(a);
    cr_client_free(b);
}

static void
test_cluster_unlock_wakes_waiter_by_sharded_pubsub(void **state)
{
    (void)state;
    unlock_wakes_waiter(NULL, true, "wake-sharded");
}

static void
test_cluster_unlock_wakes_waiter_by_classic_pubsub(void **state)
{
    (void)state;
    unlock_wakes_waiter("/?sharded=off", false, "wake-classic");
}

/* A Java side before Redisson 3.22 never uses sharded pub/sub: with its
 * release line given, AUTO means classic even where the server has
 * sharded pub/sub (protocol section 16). */
static void
test_cluster_release_line_before_3_22_wakes_by_classic_pubsub(void **state)
{
    (void)state;
    unlock_wakes_waiter("/?redissonVersion=3.21.0", false, "wake-old-line");
}

static void
test_cluster_unlock_publishes_with_spublish(void **state)
{
    cr_client *c = client(NULL, 0, 0);
    char channel[96];
    redisContext *ctx;
    redisReply *r = NULL;
    cr_lock *l;
    int node;

    (void)state;
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{spub}");
    node = cr_test_cluster_master_of(&cl, cr_test_cluster_keyslot(&cl, channel));
    ctx = cr_test_redis_connect(&cl.nodes[node]);
    assert_non_null(ctx);
    r = redisCommand(ctx, "SSUBSCRIBE %s", channel);
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(cr_lock_new(c, "spub", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    /* What a Java waiter in sharded mode hears: smessage <channel> 0. */
    assert_int_equal(redisGetReply(ctx, (void **)&r), REDIS_OK);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "smessage");
    assert_string_equal(r->element[1]->str, channel);
    assert_string_equal(r->element[2]->str, "0");
    freeReplyObject(r);
    redisFree(ctx);
    cr_lock_free(l);
    cr_client_free(c);
}

/* --------------------------------------------------------- bad names */

static void
test_cluster_refuses_names_whose_keys_split(void **state)
{
    cr_client *c = client(NULL, 0, 0);
    cr_lock *l = NULL;
    cr_latch *latch = NULL;

    (void)state;
    /* Protocol 1.1: "a}b" has no '{', but its channel gets the tag "a". */
    assert_int_equal(cr_lock_new(c, "a}b", &l), CR_EINVAL);
    assert_null(l);
    assert_non_null(strstr(cr_last_error(), "slot"));
    /* Section 9: a latch channel always wraps the name in braces. */
    assert_int_equal(cr_latch_new(c, "pre{tag}x", &latch), CR_EINVAL);
    assert_null(latch);
    /* A well-formed tag is fine for a lock. */
    assert_int_equal(cr_lock_new(c, "app{7}lock", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, 5000), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
}

/* ------------------------------------------------------------ watchdog */

typedef struct renew_arg {
    cr_client *c;
    uint64_t target;
} renew_arg;

/* Whether the client has made `target` renewal calls. */
static bool
renewed_enough(void *arg)
{
    renew_arg *r = arg;

    return stats(r->c).renewal_calls >= r->target;
}

#define SPREAD 24

/* Waits for 3 x SPREAD more renewal calls of client c (many rounds, each
 * split by slot), none of which failed or found a hold gone. */
static void
assert_renewed_cleanly(cr_client *c)
{
    renew_arg r = {c, stats(c).renewal_calls + 3 * SPREAD};
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    assert_true(cr_test_wait_until(renewed_enough, &r, slow(10000)));
    st = stats(c);
    assert_int_equal(st.renewal_failures, 0);
    assert_int_equal(st.leases_lost, 0);
}

static void
test_cluster_watchdog_renews_locks_in_every_slot(void **state)
{
    cr_client *c = client(NULL, 600, 0);
    cr_lock *locks[SPREAD];
    char name[32];
    int i;

    (void)state;
    /* Two dozen names: many slots on all three masters, renewed together
     * every 200 ms: each call must name keys of one slot only. */
    for (i = 0; i < SPREAD; i++) {
        snprintf(name, sizeof(name), "wd-%d", i);
        assert_int_equal(cr_lock_new(c, name, &locks[i]), CR_OK);
        assert_int_equal(cr_lock_lock(locks[i], CR_LEASE_WATCHDOG), CR_OK);
    }
    assert_renewed_cleanly(c);
    for (i = 0; i < SPREAD; i++) {
        snprintf(name, sizeof(name), "wd-%d", i);
        assert_true(cr_test_cluster_int_at_key(&cl, name, "PTTL %s", name) > 0);
        assert_int_equal(cr_lock_unlock(locks[i]), CR_OK);
        cr_lock_free(locks[i]);
    }
    cr_client_free(c);
}

/* Read holds (two readers each) and plain holds of many slots, renewed
 * together: each call names one slot's hashes and timeout keys only. */
static void
test_cluster_watchdog_renews_read_holds_in_every_slot(void **state)
{
    cr_client *c = client(NULL, 600, 0);
    cr_rwlock *rw[SPREAD];
    char name[32];
    int i;

    (void)state;
    for (i = 0; i < SPREAD; i++) {
        snprintf(name, sizeof(name), "wdr-%d", i);
        assert_int_equal(cr_rwlock_new(c, name, &rw[i]), CR_OK);
        assert_int_equal(cr_lock_try_lock_tid(cr_rwlock_read_lock(rw[i]), 1,
                                              0, CR_LEASE_WATCHDOG), CR_OK);
        assert_int_equal(cr_lock_try_lock_tid(cr_rwlock_read_lock(rw[i]), 2,
                                              0, CR_LEASE_WATCHDOG), CR_OK);
    }
    assert_renewed_cleanly(c);
    for (i = 0; i < SPREAD; i++) {
        snprintf(name, sizeof(name), "wdr-%d", i);
        assert_true(AT_KEY(name, "PTTL %s", name) > 0);
        assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(rw[i]), 1),
                         CR_OK);
        assert_int_equal(cr_lock_unlock_tid(cr_rwlock_read_lock(rw[i]), 2),
                         CR_OK);
        cr_rwlock_free(rw[i]);
    }
    cr_client_free(c);
}

/* ------------------------------------------------------ slot migration */

/* A client whose commands may wait out a migration that the test finishes
 * while its loop stands still (a long command timeout). */
static cr_client *
patient_client(void)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = cl.url;
    o.command_timeout_ms = slow(20000);
    if (cr_client_new(&o, &c) != CR_OK)
        fail_msg("cr_client_new: %s", cr_last_error());
    return c;
}

/* The TRYAGAIN replies every live node has given (INFO errorstats). */
static long long
tryagains(void)
{
    static const char field[] = "errorstat_TRYAGAIN:count=";
    long long n = 0;
    int i;

    for (i = 0; i < cl.nnodes; i++) {
        redisReply *r;
        const char *p;

        if (cl.nodes[i].pid == 0)
            continue;
        r = cr_test_cluster_cmd(&cl, i, "INFO errorstats");
        if (r != NULL && r->type == REDIS_REPLY_STRING &&
            (p = strstr(r->str, field)) != NULL)
            n += atoll(p + sizeof(field) - 1);
        if (r != NULL)
            freeReplyObject(r);
    }
    return n;
}

static bool
tryagains_reach(void *arg)
{
    return tryagains() >= *(long long *)arg;
}

static void
test_cluster_slot_migration_keeps_locks_working(void **state)
{
    cr_client *a = client(NULL, 600, 0), *b = client(NULL, 600, 0),
              *p = patient_client();
    unsigned slot = cr_test_cluster_keyslot(&cl, "mig");
    int from = cr_test_cluster_master_of(&cl, slot), m[3], to;
    renew_arg renewed;
    cr_lock *held, *other, *wl;
    int64_t released;
    long long tries;
    bool lost = true;
    waiter w, wo;
    line_arg in_line = {"{mig}held", true};

    (void)state;
    masters(m);
    to = m[0] != from ? m[0] : m[1];
    assert_int_equal(cr_lock_new(a, "{mig}held", &held), CR_OK);
    assert_int_equal(cr_lock_new(p, "{mig}other", &other), CR_OK);
    assert_int_equal(cr_lock_new(b, "{mig}held", &wl), CR_OK);
    assert_int_equal(cr_lock_lock(held, CR_LEASE_WATCHDOG), CR_OK);
    waiter_start(&w, wl, slow(30000));
    assert_true(cr_test_wait_until(waits_in_line, &in_line, slow(5000)));

    /* Mid-migration: the held lock's key is already on the new owner;
     * renewals are sent there after ASK. */
    assert_int_equal(cr_test_cluster_migrate_begin(&cl, slot, to), 0);
    assert_int_equal(cr_test_cluster_migrate_keys(&cl, slot, to), 0);
    renewed.c = a;
    renewed.target = stats(a).renewal_calls + 3;
    assert_true(cr_test_wait_until(renewed_enough, &renewed, slow(5000)));
    assert_int_equal(stats(a).renewal_failures, 0);
    assert_true(stats(a).redirects >= 1);
    /* A new acquisition names its lock's waiting line too (three keys),
     * which neither node holds whole until the slot is moved: it waits out
     * TRYAGAIN, as Redisson's unlock and fair lock do, and is in once the
     * migration ends (then lets go). */
    tries = tryagains() + 1;
    waiter_start(&wo, other, 0);
    assert_true(cr_test_wait_until(tryagains_reach, &tries, slow(5000)));

    /* Done: the old owner answers MOVED; the acquisition waiting out
     * TRYAGAIN, unlock, renewal and the waiter's subscription follow the
     * slot. */
    assert_int_equal(cr_test_cluster_migrate_finish(&cl, slot, to, slow(10000)),
                     0);
    pthread_join(wo.thread, NULL);
    assert_int_equal(wo.rc, CR_OK);
    assert_int_equal(cr_lock_is_lost(held, &lost), CR_OK);
    assert_false(lost);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    /* Woken on the new owner: the message came, and soon. */
    assert_true(w.done_at - released < slow(3000));
    assert_true(cr_test_wait_until(heard_a_message, b, slow(2000)));
    assert_int_equal(stats(a).leases_lost, 0);
    assert_int_equal(cr_test_cluster_master_of(&cl, slot), to);
    cr_lock_free(held);
    cr_lock_free(other);
    cr_lock_free(wl);
    cr_client_free(a);
    cr_client_free(b);
    cr_client_free(p);
}

/* ------------------------------------------------------------ the tool */

/* Runs a shell command, keeps its standard output in out; its exit code. */
static int
run_shell(const char *cmd, char *out, size_t len)
{
    FILE *f = popen(cmd, "r");
    size_t n;
    int status;

    assert_non_null(f);
    n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    status = pclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
test_cluster_cli_runs_a_command_under_a_lock_and_inspects_it(void **state)
{
    const char *dir = getenv("CR_TEST_BUILDDIR");
    char tool[512], cmd[4096], out[4096];

    (void)state;
    snprintf(tool, sizeof(tool), "%s/credisson", dir != NULL ? dir : ".");
    snprintf(cmd, sizeof(cmd), "%s --url '%s' lock cli-cluster -- "
             "%s --url '%s' inspect cli-cluster", tool, cl.url, tool, cl.url);
    assert_int_equal(run_shell(cmd, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "type:       lock"));
    assert_non_null(strstr(out, "held"));
    assert_int_equal(AT_KEY("cli-cluster", "EXISTS %s", "cli-cluster"), 0);
    /* A name whose keys would split is refused as bad usage. */
    snprintf(cmd, sizeof(cmd), "%s --url '%s' lock 'a}b' -- true 2>&1", tool,
             cl.url);
    assert_int_equal(run_shell(cmd, out, sizeof(out)), 64);
    assert_non_null(strstr(out, "slot"));
}

/* ------------------------------------------------------ replica sync */

/* The index of the first replica of master m (INFO replication), or -1. */
static int
replica_of(int m)
{
    redisReply *r = cr_test_cluster_cmd(&cl, m, "INFO replication");
    const char *p;
    int port = 0, i;

    if (r != NULL && r->type == REDIS_REPLY_STRING &&
        (p = strstr(r->str, "slave0:")) != NULL &&
        (p = strstr(p, "port=")) != NULL)
        port = atoi(p + 5);
    if (r != NULL)
        freeReplyObject(r);
    for (i = 0; i < cl.nnodes; i++)
        if (cl.nodes[i].port == port)
            return i;
    return -1;
}

/* Whether master `*arg` lists a replica in ROLE (one the replica-sync
 * check counts). */
static bool
lists_a_replica(void *arg)
{
    redisReply *r = cr_test_cluster_cmd(&cl, *(int *)arg, "ROLE");
    bool listed = r != NULL && r->type == REDIS_REPLY_ARRAY &&
                  r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY &&
                  r->element[2]->elements > 0;

    if (r != NULL)
        freeReplyObject(r);
    return listed;
}

/* After a test that stops a replica: it runs again even when the test
 * failed before its SIGCONT, or every test after it would fail too. */
static int
replicas_resumed(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < cl.nnodes; i++)
        if (cl.nodes[i].pid > 0)
            kill(cl.nodes[i].pid, SIGCONT);
    return 0;
}

static void
test_cluster_replica_sync_undoes_unacknowledged_acquisitions(void **state)
{
    cr_client *c;
    char name[64], rwname[64];
    cr_lock *plain, *fair;
    cr_rwlock *rw;
    int m[3], replica;

    (void)state;
    masters(m);
    replica = replica_of(m[0]);
    assert_true(replica >= 0);
    /* The client counts the replicas when its connections first need them
     * (then once a second): only once the master lists its replica again
     * (an earlier test may have left it resynchronising) does every count
     * see it. */
    assert_true(cr_test_wait_until(lists_a_replica, &m[0], slow(10000)));
    c = client(NULL, 0, 200);
    name_on(name, sizeof(name), "sync", m[0]);
    name_on(rwname, sizeof(rwname), "syncrw", m[0]);
    assert_int_equal(cr_lock_new(c, name, &plain), CR_OK);
    assert_int_equal(cr_fair_lock_new(c, rwname, &fair), CR_OK);
    assert_int_equal(cr_rwlock_new(c, rwname, &rw), CR_OK);
    /* With the replica in sync, acquisitions and unlocks go through. */
    assert_int_equal(cr_lock_try_lock(plain, 0, 10000), CR_OK);
    assert_int_equal(cr_lock_unlock(plain), CR_OK);
    /* A replica that cannot acknowledge: every kind undoes its grant. */
    assert_int_equal(kill(cl.nodes[replica].pid, SIGSTOP), 0);
    assert_status(cr_lock_try_lock(plain, 0, 10000), CR_EIO,
                  "no replica acknowledged");
    assert_int_equal(AT_KEY(name, "EXISTS %s", name), 0);
    assert_int_equal(cr_lock_try_lock(fair, 0, 10000), CR_EIO);
    assert_int_equal(cr_lock_try_lock(cr_rwlock_write_lock(rw), 0, 10000),
                     CR_EIO);
    assert_int_equal(cr_lock_try_lock(cr_rwlock_read_lock(rw), 0, 10000),
                     CR_EIO);
    assert_int_equal(AT_KEY(rwname, "EXISTS %s", rwname), 0);
    assert_int_equal(kill(cl.nodes[replica].pid, SIGCONT), 0);
    cr_rwlock_free(rw);
    cr_lock_free(fair);
    cr_lock_free(plain);
    cr_client_free(c);
}

/* An unlock leaves its latch DEL's reply unread on its connection; the
 * replicas counted again (once a second) on that connection before the
 * next acquisition must be ROLE's count, not that reply taken for one (it
 * read as "no replicas": no WAIT, and a grant no replica saw went through
 * as taken). */
static void
test_cluster_replica_sync_recount_after_an_unlock(void **state)
{
    cr_client *c;
    char name[64];
    cr_lock *l;
    int m[3], replica;

    (void)state;
    masters(m);
    replica = replica_of(m[0]);
    assert_true(replica >= 0);
    assert_true(cr_test_wait_until(lists_a_replica, &m[0], slow(10000)));
    c = client(NULL, 0, 200);
    name_on(name, sizeof(name), "recount", m[0]);
    assert_int_equal(cr_lock_new(c, name, &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, 10000), CR_OK); /* counted */
    assert_int_equal(cr_lock_unlock(l), CR_OK); /* its DEL's reply unread */
    /* Past the recount period (1 s): the next acquisition counts again. */
    usleep(1200 * 1000);
    assert_int_equal(kill(cl.nodes[replica].pid, SIGSTOP), 0);
    assert_status(cr_lock_try_lock(l, 0, 10000), CR_EIO,
                  "no replica acknowledged");
    assert_int_equal(AT_KEY(name, "EXISTS %s", name), 0);
    assert_int_equal(kill(cl.nodes[replica].pid, SIGCONT), 0);
    cr_lock_free(l);
    cr_client_free(c);
}

/* A sync timeout longer than the command timeout: the WAIT is given its
 * whole time, and the grant undone, rather than cut by the command timeout
 * (a broken link, whose acquisition would then count as taken). */
static void
test_cluster_replica_sync_longer_than_the_command_timeout(void **state)
{
    const int64_t sync_ms = slow(1500);
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char name[64];
    cr_lock *l;
    int64_t start, took;
    int m[3], replica;
    cr_status rc;

    (void)state;
    masters(m);
    replica = replica_of(m[0]);
    assert_true(replica >= 0);
    name_on(name, sizeof(name), "longsync", m[0]);
    o.url = cl.url;
    o.replica_sync_timeout_ms = sync_ms;
    o.command_timeout_ms = slow(500);
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    assert_int_equal(cr_lock_new(c, name, &l), CR_OK);
    assert_int_equal(kill(cl.nodes[replica].pid, SIGSTOP), 0);
    start = cr_test_now_ms();
    /* A lease that outlasts the WAIT: the grant is still there for the
     * undo to give back (one shorter would run out during the WAIT). */
    rc = cr_lock_try_lock(l, 0, 4 * sync_ms);
    took = cr_test_now_ms() - start;
    assert_int_equal(kill(cl.nodes[replica].pid, SIGCONT), 0); /* first */
    assert_status(rc, CR_EIO, "no replica acknowledged");
    assert_true(took >= sync_ms);
    assert_int_equal(AT_KEY(name, "EXISTS %s", name), 0);
    cr_lock_free(l);
    cr_client_free(c);
}

/* ------------------------------------------------------------ failover */

#define WORKERS 4

typedef struct shared {
    cr_client *client;
    const char *lock_name;
    const char *counter; /* on another master than the lock */
    int counter_node;    /* that master */
    long target;         /* for progress_to */
    atomic_int inside;
    atomic_int violations;
    atomic_long increments;
    atomic_long failures;
    atomic_bool stop;
} shared;

/* Lock, GET + SET the counter, unlock, until told to stop. */
static void *
worker_main(void *arg)
{
    shared *sh = arg;
    redisContext *ctx = cr_test_redis_connect(&cl.nodes[sh->counter_node]);
    cr_lock *l;

    if (ctx == NULL || cr_lock_new(sh->client, sh->lock_name, &l) != CR_OK) {
        if (ctx != NULL)
            redisFree(ctx);
        atomic_fetch_add(&sh->failures, 1);
        return NULL;
    }
    while (!atomic_load(&sh->stop)) {
        redisReply *r;

        if (cr_lock_try_lock(l, slow(30000), CR_LEASE_WATCHDOG) != CR_OK) {
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->violations, 1);
        r = redisCommand(ctx, "GET %s", sh->counter);
        if (r != NULL && (r->type == REDIS_REPLY_STRING ||
                          r->type == REDIS_REPLY_NIL)) {
            long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

            freeReplyObject(r);
            r = redisCommand(ctx, "SET %s %lld", sh->counter, v + 1);
            if (r != NULL && r->type == REDIS_REPLY_STATUS)
                atomic_fetch_add(&sh->increments, 1);
        }
        if (r != NULL)
            freeReplyObject(r);
        atomic_fetch_sub(&sh->inside, 1);
        if (cr_lock_unlock(l) != CR_OK)
            atomic_fetch_add(&sh->failures, 1);
    }
    cr_lock_free(l);
    redisFree(ctx);
    return NULL;
}

/* Whether the workers have counted up to sh->target. */
static bool
progress_to(void *arg)
{
    shared *sh = arg;

    return atomic_load(&sh->increments) >= sh->target;
}

static void
test_cluster_master_failover_waiters_proceed_counter_exact(void **state)
{
    char lock_name[64], counter[64];
    shared sh;
    pthread_t t[WORKERS];
    unsigned slot;
    long total;
    int i, lock_master, new_master;

    (void)state;
    memset(&sh, 0, sizeof(sh));
    /* Locks acquired with the replica-sync check, so that a failover does
     * not forget one just granted (asynchronous replication otherwise
     * could: a violation would then be counted, not hidden). */
    sh.client = client(NULL, 900, 1000);
    name_on(lock_name, sizeof(lock_name), "fo-lock",
            cr_test_cluster_master_of(&cl, cr_test_cluster_keyslot(&cl, "fo-lock-0")));
    slot = cr_test_cluster_keyslot(&cl, lock_name);
    lock_master = cr_test_cluster_master_of(&cl, slot);
    for (i = 0;; i++) {
        snprintf(counter, sizeof(counter), "fo-counter-%d", i);
        if (cr_test_cluster_master_of(&cl, cr_test_cluster_keyslot(&cl, counter)) !=
            lock_master)
            break;
    }
    sh.lock_name = lock_name;
    sh.counter = counter;
    sh.counter_node = cr_test_cluster_master_of(&cl,
                                                cr_test_cluster_keyslot(&cl, counter));
    sh.target = 50;
    for (i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &sh), 0);
    assert_true(cr_test_wait_until(progress_to, &sh, slow(10000)));

    new_master = cr_test_cluster_kill_master(&cl, slot, slow(30000));
    assert_true(new_master >= 0);
    assert_int_not_equal(new_master, lock_master);
    /* The workers go on against the promoted replica. */
    sh.target = atomic_load(&sh.increments) + 50;
    assert_true(cr_test_wait_until(progress_to, &sh, slow(30000)));
    atomic_store(&sh.stop, true);
    for (i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    total = atomic_load(&sh.increments);
    fprintf(stderr, "failover: %ld increments, %d overlapping holds, "
            "%ld failed calls\n", total, atomic_load(&sh.violations),
            atomic_load(&sh.failures));
    assert_int_equal(atomic_load(&sh.violations), 0);
    assert_int_equal(cr_test_cluster_int_at_key(&cl, counter, "INCRBY %s 0",
                                                counter), total);
    assert_true(stats(sh.client).topology_refreshes >= 2);
    cr_client_free(sh.client);
}

/* ----------------------------------------------------- asynchronous API */

/* The asynchronous API in a cluster: each request goes to the master of
 * its slot, and a waiter is woken through the sharded pub/sub link of its
 * channel's slot master. */
static void
test_cluster_async_requests_reach_every_master_and_wake_by_sharded_pubsub(void **state)
{
    cr_client *c = client("?sharded=on", 0, 0);
    cr_client *other = client("?sharded=on", 0, 0);
    cr_async *a = NULL;
    char name[64];
    int m[3], i;

    (void)state;
    masters(m);
    assert_int_equal(cr_async_new(c, &poll_loop, &a), CR_OK);
    for (i = 0; i < 3; i++) {
        outcome o = {0}, u = {0}, w = {0};
        int64_t owner = cr_async_owner_id();
        cr_lock *l, *theirs;

        name_on(name, sizeof(name), "async", m[i]);
        assert_int_equal(cr_lock_new(c, name, &l), CR_OK);
        assert_int_equal(cr_lock_new(other, name, &theirs), CR_OK);
        assert_int_equal(cr_async_lock(a, l, owner, 0, 30000, record,
                                       &o, NULL), CR_OK);
        assert_true(poll_loop_until(a, called, &o, slow(5000)));
        assert_int_equal(o.rc, CR_OK);
        assert_int_equal(AT_KEY(name, "EXISTS %s", name), 1);
        assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL),
                         CR_OK);
        assert_true(poll_loop_until(a, called, &u, slow(5000)));
        assert_int_equal(u.rc, CR_OK);
        assert_int_equal(cr_lock_lock(theirs, 30000), CR_OK);
        assert_int_equal(cr_async_lock(a, l, owner, slow(10000), 30000,
                                       record, &w, NULL), CR_OK);
        poll_loop_turn(a, 100);
        assert_int_equal(w.calls, 0);
        assert_int_equal(cr_lock_unlock(theirs), CR_OK);
        assert_true(poll_loop_until(a, called, &w, slow(5000)));
        assert_int_equal(w.rc, CR_OK);
        assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
        cr_lock_free(theirs);
        cr_lock_free(l);
    }
    cr_async_free(a);
    cr_client_free(other);
    cr_client_free(c);
}

/* ----------------------------------------------------- redirect events */

/* What the event hook heard of redirections: how many, how many from the
 * asynchronous API, and how many had a field other than the documented
 * (CR_OK, no object or name, no times). */
typedef struct redirect_log {
    pthread_mutex_t mu;
    int n, async, malformed;
} redirect_log;

static void
on_redirect(void *userdata, const cr_event *ev)
{
    redirect_log *log = userdata;

    if (ev->kind != CR_EVENT_REDIRECT)
        return;
    pthread_mutex_lock(&log->mu);
    log->n++;
    log->async += ev->async;
    log->malformed += ev->status != CR_OK || ev->object != NULL ||
                      ev->name != NULL || ev->wait_ms != -1 ||
                      ev->hold_ms != -1;
    pthread_mutex_unlock(&log->mu);
}

static redirect_log
redirects_heard(redirect_log *log)
{
    redirect_log copy;

    pthread_mutex_lock(&log->mu);
    copy = *log;
    pthread_mutex_unlock(&log->mu);
    return copy;
}

/* Whether an asynchronous command was redirected (a poll loop's
 * condition). */
static bool
async_redirected(void *arg)
{
    return redirects_heard(arg).async >= 1;
}

/* A slot moved by hand under a client whose map still names the old
 * owner: mid-migration the old owner answers ASK for a key it lacks (the
 * map stays, so every such command is redirected again), then MOVED once
 * the slot is moved (the map follows, and the next command goes straight
 * to the new owner). Each redirection followed is one CR_EVENT_REDIRECT,
 * blocking or asynchronous. */
static void
test_cluster_moved_and_ask_are_reported_as_redirect_events(void **state)
{
    redirect_log log = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    cr_client *c = hooked_client(NULL, 30000, 0, on_redirect, &log);
    unsigned slot = cr_test_cluster_keyslot(&cl, "evr");
    int from = cr_test_cluster_master_of(&cl, slot), m[3], to, before;
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, u = {0};
    cr_lock *a, *b, *d;
    cr_async *as = NULL;
    bool locked = false;

    (void)state;
    masters(m);
    to = m[0] != from ? m[0] : m[1];
    assert_int_equal(cr_lock_new(c, "{evr}a", &a), CR_OK);
    assert_int_equal(cr_lock_new(c, "{evr}b", &b), CR_OK);
    assert_int_equal(cr_lock_new(c, "{evr}d", &d), CR_OK);
    assert_int_equal(cr_async_new(c, &poll_loop, &as), CR_OK);
    /* The map is right: nothing redirected. */
    assert_int_equal(cr_lock_try_lock(a, 0, 30000), CR_OK);
    assert_int_equal(redirects_heard(&log).n, 0);

    /* ASK: the old owner is MIGRATING and lacks the keys; a command on
     * one key is served by the new owner after ASKING, every time. */
    assert_int_equal(cr_test_cluster_migrate_begin(&cl, slot, to), 0);
    assert_int_equal(cr_test_cluster_migrate_keys(&cl, slot, to), 0);
    assert_int_equal(cr_lock_is_locked(a, &locked), CR_OK);
    assert_true(locked);
    before = redirects_heard(&log).n;
    assert_true(before >= 1);
    assert_int_equal(cr_lock_is_locked(b, &locked), CR_OK);
    assert_false(locked);
    assert_true(redirects_heard(&log).n > before);
    /* An asynchronous acquisition (its script names the lock's waiting
     * line too, which the new owner answers TRYAGAIN until the slot is
     * moved) is redirected as well, and waits. */
    assert_int_equal(cr_async_lock(as, d, owner, 0, 30000, record, &o,
                                   NULL), CR_OK);
    assert_true(poll_loop_until(as, async_redirected, &log, slow(5000)));

    /* MOVED: the slot is the new owner's now. One redirection, then the
     * map knows. */
    assert_int_equal(cr_test_cluster_migrate_finish(&cl, slot, to, slow(10000)),
                     0);
    before = redirects_heard(&log).n;
    assert_int_equal(cr_lock_unlock(a), CR_OK);
    assert_true(redirects_heard(&log).n > before);
    before = redirects_heard(&log).n;
    assert_int_equal(cr_lock_is_locked(b, &locked), CR_OK);
    assert_int_equal(redirects_heard(&log).n, before);
    assert_true(poll_loop_until(as, called, &o, slow(5000)));
    assert_int_equal(o.rc, CR_OK);
    assert_int_equal(cr_async_unlock(as, d, owner, record, &u, NULL),
                     CR_OK);
    assert_true(poll_loop_until(as, called, &u, slow(5000)));
    assert_int_equal(u.rc, CR_OK);
    assert_int_equal(AT_KEY("{evr}a", "EXISTS %s", "{evr}a"), 0);
    assert_int_equal(AT_KEY("{evr}d", "EXISTS %s", "{evr}d"), 0);
    assert_int_equal(cr_test_cluster_master_of(&cl, slot), to);
    assert_int_equal(redirects_heard(&log).malformed, 0);
    cr_async_free(as);
    cr_lock_free(a);
    cr_lock_free(b);
    cr_lock_free(d);
    cr_client_free(c);
}

/* ------------------------------------- asynchronous TRYAGAIN and MOVED */

/* Mid-migration, with a lock's hash already on the new owner, a script
 * naming keys of the slot that the new owner lacks (the unlock's channel
 * and latch, a fair lock's queue and timeouts) is answered ASK by the old
 * owner and TRYAGAIN by the new one. The asynchronous unlock and lock
 * attempt wait it out (they are neither failed nor answered while it
 * lasts) and succeed once the migration is finished. */
static void
test_cluster_async_scripts_wait_out_tryagain_mid_migration(void **state)
{
    cr_client *c = patient_client();
    unsigned slot = cr_test_cluster_keyslot(&cl, "atry");
    int from = cr_test_cluster_master_of(&cl, slot), m[3], to;
    int64_t owner = cr_async_owner_id(), until;
    outcome o = {0}, u = {0}, f = {0};
    cr_lock *l, *fair;
    cr_async *as = NULL;
    long long target;

    (void)state;
    masters(m);
    to = m[0] != from ? m[0] : m[1];
    assert_int_equal(cr_lock_new(c, "{atry}u", &l), CR_OK);
    assert_int_equal(cr_fair_lock_new(c, "{atry}f", &fair), CR_OK);
    assert_int_equal(cr_async_new(c, &poll_loop, &as), CR_OK);
    assert_int_equal(cr_async_lock(as, l, owner, 0, 60000, record, &o,
                                   NULL), CR_OK);
    assert_true(poll_loop_until(as, called, &o, slow(5000)));
    assert_int_equal(o.rc, CR_OK);

    assert_int_equal(cr_test_cluster_migrate_begin(&cl, slot, to), 0);
    assert_int_equal(cr_test_cluster_migrate_keys(&cl, slot, to), 0);
    target = tryagains() + 2;
    assert_int_equal(cr_async_unlock(as, l, owner, record, &u, NULL),
                     CR_OK);
    assert_int_equal(cr_async_lock(as, fair, owner, 0, 60000, record,
                                   &f, NULL), CR_OK);
    /* Both were sent at once: the first two TRYAGAINs are theirs. */
    assert_true(poll_loop_until(as, tryagains_reach, &target, slow(5000)));
    until = cr_test_now_ms() + 300;
    while (cr_test_now_ms() < until)
        poll_loop_turn(as, 50);
    assert_int_equal(u.calls, 0);
    assert_int_equal(f.calls, 0);
    assert_true(tryagains() > target); /* asked again meanwhile */

    assert_int_equal(cr_test_cluster_migrate_finish(&cl, slot, to, slow(10000)),
                     0);
    assert_true(poll_loop_until(as, called, &u, slow(5000)));
    assert_true(poll_loop_until(as, called, &f, slow(5000)));
    assert_int_equal(u.calls, 1);
    assert_int_equal(u.rc, CR_OK);
    assert_int_equal(f.calls, 1);
    assert_int_equal(f.rc, CR_OK);
    assert_int_equal(cr_test_cluster_master_of(&cl, slot), to);
    assert_int_equal(AT_KEY("{atry}u", "EXISTS %s", "{atry}u"), 0);
    assert_int_equal(AT_KEY("{atry}f", "EXISTS %s", "{atry}f"), 1);
    assert_int_equal(cr_lock_unlock_tid(fair, owner), CR_OK);
    cr_async_free(as);
    cr_lock_free(l);
    cr_lock_free(fair);
    cr_client_free(c);
}

/* cr_async_free while a script waits out TRYAGAIN: its callback runs
 * once, with CR_ECLOSED, and nothing of it is left (valgrind). */
static void
test_cluster_async_free_ends_a_script_waiting_out_tryagain(void **state)
{
    cr_client *c = patient_client();
    unsigned slot = cr_test_cluster_keyslot(&cl, "afree");
    int from = cr_test_cluster_master_of(&cl, slot), m[3], to;
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, u = {0};
    cr_async *as = NULL;
    long long target;
    cr_lock *l;

    (void)state;
    masters(m);
    to = m[0] != from ? m[0] : m[1];
    assert_int_equal(cr_lock_new(c, "{afree}u", &l), CR_OK);
    assert_int_equal(cr_async_new(c, &poll_loop, &as), CR_OK);
    assert_int_equal(cr_async_lock(as, l, owner, 0, 60000, record, &o,
                                   NULL), CR_OK);
    assert_true(poll_loop_until(as, called, &o, slow(5000)));
    assert_int_equal(o.rc, CR_OK);
    assert_int_equal(cr_test_cluster_migrate_begin(&cl, slot, to), 0);
    assert_int_equal(cr_test_cluster_migrate_keys(&cl, slot, to), 0);
    target = tryagains() + 1;
    assert_int_equal(cr_async_unlock(as, l, owner, record, &u, NULL),
                     CR_OK);
    assert_true(poll_loop_until(as, tryagains_reach, &target, slow(5000)));
    assert_int_equal(u.calls, 0);
    cr_async_free(as);
    assert_int_equal(u.calls, 1);
    assert_int_equal(u.rc, CR_ECLOSED);

    assert_int_equal(cr_test_cluster_migrate_finish(&cl, slot, to, slow(10000)),
                     0);
    assert_int_equal(cr_lock_unlock_tid(l, owner), CR_OK);
    cr_lock_free(l);
    cr_client_free(c);
}

/* One MOVED seen by an asynchronous command puts the slot's new owner in
 * the client's map: the next asynchronous command to the slot goes
 * straight there (no blocking command in between to read the map). */
static void
test_cluster_async_moved_corrects_the_slot_map(void **state)
{
    cr_client *c = client(NULL, 30000, 0);
    unsigned slot = cr_test_cluster_keyslot(&cl, "amv");
    int from = cr_test_cluster_master_of(&cl, slot), m[3], to;
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, u = {0};
    uint64_t before;
    cr_async *as = NULL;
    cr_lock *l;

    (void)state;
    masters(m);
    to = m[0] != from ? m[0] : m[1];
    assert_int_equal(cr_lock_new(c, "{amv}a", &l), CR_OK);
    assert_int_equal(cr_async_new(c, &poll_loop, &as), CR_OK);
    /* The slot moves under the client: its map names the old owner. */
    assert_int_equal(cr_test_cluster_migrate_begin(&cl, slot, to), 0);
    assert_int_equal(cr_test_cluster_migrate_keys(&cl, slot, to), 0);
    assert_int_equal(cr_test_cluster_migrate_finish(&cl, slot, to, slow(10000)),
                     0);
    before = stats(c).redirects;
    assert_int_equal(cr_async_lock(as, l, owner, 0, 30000, record, &o,
                                   NULL), CR_OK);
    assert_true(poll_loop_until(as, called, &o, slow(5000)));
    assert_int_equal(o.rc, CR_OK);
    assert_int_equal(stats(c).redirects, before + 1);
    assert_int_equal(cr_async_unlock(as, l, owner, record, &u, NULL),
                     CR_OK);
    assert_true(poll_loop_until(as, called, &u, slow(5000)));
    assert_int_equal(u.rc, CR_OK);
    assert_int_equal(stats(c).redirects, before + 1);
    assert_int_equal(AT_KEY("{amv}a", "EXISTS %s", "{amv}a"), 0);
    cr_async_free(as);
    cr_lock_free(l);
    cr_client_free(c);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_every_object_works_on_every_master),
        cmocka_unit_test(test_cluster_fair_lock_keys_share_the_name_slot),
        cmocka_unit_test(test_cluster_unlock_wakes_waiter_by_sharded_pubsub),
        cmocka_unit_test(test_cluster_release_line_before_3_22_wakes_by_classic_pubsub),
        cmocka_unit_test(test_cluster_unlock_wakes_waiter_by_classic_pubsub),
        cmocka_unit_test(test_cluster_unlock_publishes_with_spublish),
        cmocka_unit_test(test_cluster_async_requests_reach_every_master_and_wake_by_sharded_pubsub),
        cmocka_unit_test(test_cluster_refuses_names_whose_keys_split),
        cmocka_unit_test(test_cluster_watchdog_renews_locks_in_every_slot),
        cmocka_unit_test(test_cluster_watchdog_renews_read_holds_in_every_slot),
        cmocka_unit_test(test_cluster_slot_migration_keeps_locks_working),
        cmocka_unit_test(test_cluster_moved_and_ask_are_reported_as_redirect_events),
        cmocka_unit_test(test_cluster_async_scripts_wait_out_tryagain_mid_migration),
        cmocka_unit_test(test_cluster_async_free_ends_a_script_waiting_out_tryagain),
        cmocka_unit_test(test_cluster_async_moved_corrects_the_slot_map),
        cmocka_unit_test(test_cluster_cli_runs_a_command_under_a_lock_and_inspects_it),
        cmocka_unit_test_teardown(
            test_cluster_replica_sync_undoes_unacknowledged_acquisitions,
            replicas_resumed),
        cmocka_unit_test_teardown(
            test_cluster_replica_sync_recount_after_an_unlock,
            replicas_resumed),
        cmocka_unit_test_teardown(
            test_cluster_replica_sync_longer_than_the_command_timeout,
            replicas_resumed),
        cmocka_unit_test(test_cluster_master_failover_waiters_proceed_counter_exact),
    };

    /* CR_TEST_FILTER=pattern runs only the matching tests. */
    if (getenv("CR_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("CR_TEST_FILTER"));
    return cmocka_run_group_tests(tests, cluster_up, cluster_down);
}
