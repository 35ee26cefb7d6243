/* SPDX-License-Identifier: MIT */
/*
 * The least-privilege ACL user of doc/deployment.md is enough: this test
 * reads the ACL SETUSER lines between the document's markers (so the
 * document and the test cannot drift apart), creates exactly that user on
 * a real server with a replica, and runs every object with it: every lock
 * kind with a waiter woken by pub/sub, the watchdog's renewals, the
 * semaphores, the latch, the rate limiter, the barrier, introspection and
 * the replica-sync check. No call
 * may fail and the client may log no refusal. Then, one right at a time
 * taken away, what the user lacks is reported as such: CR_ENOPERM naming
 * the command, a refused SUBSCRIBE ending the wait at once, a refused ROLE
 * with replica sync on failing the acquisition instead of turning the
 * check off.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "lock_common.h"

static cr_test_redis replica;
static char acl_base[2048], acl_sync[512];
static char url[256];

/* ------------------------------------------------------------- helpers */

/* Reads the fenced block after `<!-- acl:<name> -->` in doc/deployment.md
 * into out as one line. */
static bool
read_acl_block(const char *name, char *out, size_t len)
{
    const char *src = getenv("CR_TEST_SRCDIR");
    char path[512], marker[64], line[512];
    bool in_marker = false, in_block = false;
    FILE *f;

    snprintf(path, sizeof(path), "%s/doc/deployment.md",
             src != NULL ? src : ".");
    snprintf(marker, sizeof(marker), "<!-- acl:%s -->", name);
    f = fopen(path, "r");
    if (f == NULL)
        return false;
    out[0] = '\0';
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, marker) == 0) {
            in_marker = true;
        } else if (in_marker && strncmp(line, "```", 3) == 0) {
            if (in_block)
                break;
            in_block = true;
        } else if (in_block) {
            strncat(out, " ", len - strlen(out) - 1);
            strncat(out, line, len - strlen(out) - 1);
        }
    }
    fclose(f);
    return out[0] != '\0';
}

/* Runs an ACL command given as one line of words on `r` (SECRET becomes
 * the user's password); true when the server accepted it. */
static bool
acl(const cr_test_redis *r, const char *words)
{
    char buf[2048], *argv[128], *p, *save = NULL;
    redisContext *c = cr_test_redis_connect(r);
    redisReply *reply;
    int argc = 0;
    bool ok;

    if (c == NULL)
        return false;
    snprintf(buf, sizeof(buf), "%s", words);
    for (p = strtok_r(buf, " ", &save); p != NULL && argc < 128;
         p = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(p, ">SECRET") == 0 ? ">acl-pw-7d1e" : p;
    reply = redisCommandArgv(c, argc, (const char **)argv, NULL);
    ok = reply != NULL && reply->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "ACL refused: %s\n",
                reply != NULL ? reply->str : "no reply");
    if (reply != NULL)
        freeReplyObject(reply);
    redisFree(c);
    return ok;
}

/* Refusals the client logged (warnings and errors naming one). */
static atomic_int refusals;

static void
log_refusals(void *userdata, cr_log_level level, const char *msg)
{
    (void)userdata;
    if (level >= CR_LOG_WARN &&
        (strstr(msg, "NOPERM") != NULL || strstr(msg, "refused") != NULL)) {
        fprintf(stderr, "logged: %s\n", msg);
        atomic_fetch_add(&refusals, 1);
    }
}

/* A client of user `locker`, with replica sync when `sync`. */
static cr_client *
locker(bool sync)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = url;
    o.lock_watchdog_timeout_ms = 300;
    o.command_timeout_ms = slow(2000);
    o.replica_sync_timeout_ms = sync ? slow(1000) : 0;
    o.log_fn = log_refusals;
    o.log_level = CR_LOG_WARN;
    if (cr_client_new(&o, &c) != CR_OK)
        fprintf(stderr, "cr_client_new: %s\n", cr_last_error());
    return c;
}

#define OK(call)                                                              \
    do {                                                                      \
        cr_status rc_ = (call);                                               \
        if (rc_ != CR_OK)                                                     \
            fprintf(stderr, "%s: %s (%s)\n", #call, cr_strerror(rc_),         \
                    cr_last_error());                                         \
        assert_int_equal(rc_, CR_OK);                                         \
    } while (0)

/* ------------------------------------------------------------- fixture */

/* The replica has finished its first sync (state=online). */
static bool
replica_online(void *arg)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "INFO replication");
    bool ok = r != NULL && r->type == REDIS_REPLY_STRING &&
              strstr(r->str, "state=online") != NULL;

    (void)arg;
    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

static int
acl_up(void **state)
{
    char args[128];

    if (redis_up(state) != 0)
        return -1;
    snprintf(args, sizeof(args), "--replicaof 127.0.0.1 %d", test_redis.port);
    if (cr_test_redis_start(&replica, args) != 0 ||
        !cr_test_wait_until(replica_online, NULL, 20000))
        return -1;
    if (!read_acl_block("base", acl_base, sizeof(acl_base)) ||
        !read_acl_block("replica-sync", acl_sync, sizeof(acl_sync))) {
        fprintf(stderr, "doc/deployment.md has no ACL blocks\n");
        return -1;
    }
    snprintf(url, sizeof(url), "redis://locker:acl-pw-7d1e@127.0.0.1:%d",
             test_redis.port);
    return 0;
}

static int
acl_down(void **state)
{
    cr_test_redis_destroy(&replica);
    return redis_down(state);
}

static int
user_up(void **state)
{
    if (client_up(state) != 0)
        return -1;
    atomic_store(&refusals, 0);
    return acl(&test_redis, "ACL DELUSER locker") &&
                   acl(&test_redis, acl_base) && acl(&test_redis, acl_sync)
               ? 0
               : -1;
}

/* ---------------------------------------------------------------- waits */

typedef struct waiter {
    cr_lock *lock;
    cr_status rc;
    pthread_t thread;
} waiter;

static void *
wait_lock(void *arg)
{
    waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, slow(10000), CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK)
        w->rc = cr_lock_unlock(w->lock);
    return NULL;
}

/* Takes `mine` (of client a), makes `theirs` (of client b) wait for it,
 * then releases. For a kind with a waiting line (`line`: the object's
 * name), the waiter is in line, subscribed to its own channel and, first
 * there, to the object's `channel` (where Java's releases come): a waiter
 * woken by the release with every subscription the user needs. */
static void
contend(cr_lock *mine, cr_lock *theirs, const char *line, const char *channel)
{
    waiter w = {theirs, CR_EINVAL, 0};

    OK(cr_lock_lock(mine, CR_LEASE_WATCHDOG));
    assert_int_equal(pthread_create(&w.thread, NULL, wait_lock, &w), 0);
    if (line != NULL) {
        await_waiters_in_line(line, 1);
        assert_true(cr_test_wait_until(line_listening, &(line_of){line, 1},
                                       slow(5000)));
        await_subscribers(channel, 1);
    }
    OK(cr_lock_unlock(mine));
    pthread_join(w.thread, NULL);
    if (w.rc != CR_OK)
        fprintf(stderr, "the waiter on %s: %s\n", cr_lock_name(theirs),
                cr_strerror(w.rc));
    OK(w.rc);
}

/* ---------------------------------------------------------------- tests */

static void
test_acl_documented_user_runs_every_lock_kind(void **state)
{
    cr_client *a = locker(true), *b = locker(true);
    cr_lock *l, *l2, *f, *f2, *s, *s2, *n, *m, *subs[2];
    cr_rwlock *rw, *rw2;
    int64_t v = 0;
    bool yes = false;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    /* RLock: reentrant, queries, a waiter, renewals, force unlock. */
    OK(cr_lock_new(a, "app:lock", &l));
    OK(cr_lock_new(b, "app:lock", &l2));
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    OK(cr_lock_lock(l, 5000));
    OK(cr_lock_is_locked(l, &yes));
    OK(cr_lock_get_hold_count(l, &v));
    assert_int_equal(v, 2);
    OK(cr_lock_remain_time_to_live(l, &v));
    await_more_renewals(a, 2);
    OK(cr_lock_unlock(l));
    OK(cr_lock_unlock(l));
    contend(l, l2, "app:lock", "redisson_lock__channel:{app:lock}");
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    OK(cr_lock_force_unlock(l2, &yes));
    OK(cr_lock_delete(l, &yes));
    /* Fenced (its token counter) and non-reentrant. */
    OK(cr_fenced_lock_new(a, "app:fenced", &f));
    OK(cr_fenced_lock_new(b, "app:fenced", &f2));
    OK(cr_fenced_lock_try_lock_and_get_token(f, 0, CR_LEASE_WATCHDOG, &v));
    OK(cr_fenced_lock_get_token(f2, &v));
    OK(cr_lock_unlock(f));
    contend(f, f2, "app:fenced", "redisson_lock__channel:{app:fenced}");
    OK(cr_lock_delete(f, &yes));
    OK(cr_non_reentrant_lock_new(a, "app:nr", &n));
    OK(cr_lock_lock(n, CR_LEASE_WATCHDOG));
    assert_int_equal(cr_lock_lock(n, CR_LEASE_WATCHDOG), CR_EREENTRANT);
    OK(cr_lock_unlock(n));
    /* Spin: no pub/sub. */
    OK(cr_spin_lock_new(a, "app:spin", &s));
    OK(cr_spin_lock_new(b, "app:spin", &s2));
    contend(s, s2, NULL, NULL);
    /* Fair: a waiter that gives up, one that gets it. */
    cr_lock_free(f);
    cr_lock_free(f2);
    OK(cr_fair_lock_new(a, "app:fair", &f));
    OK(cr_fair_lock_new(b, "app:fair", &f2));
    OK(cr_lock_lock(f, CR_LEASE_WATCHDOG));
    assert_int_equal(cr_lock_try_lock(f2, 200, CR_LEASE_WATCHDOG), CR_BUSY);
    OK(cr_lock_unlock(f));
    contend(f, f2, NULL, NULL);
    OK(cr_lock_force_unlock(f, &yes));
    /* Read/write: two readers, then a writer woken by their release. */
    OK(cr_rwlock_new(a, "app:rw", &rw));
    OK(cr_rwlock_new(b, "app:rw", &rw2));
    OK(cr_lock_lock(cr_rwlock_read_lock(rw), CR_LEASE_WATCHDOG));
    OK(cr_lock_lock(cr_rwlock_read_lock(rw2), CR_LEASE_WATCHDOG));
    await_more_renewals(a, 1);
    OK(cr_lock_unlock(cr_rwlock_read_lock(rw2)));
    OK(cr_lock_unlock(cr_rwlock_read_lock(rw)));
    contend(cr_rwlock_read_lock(rw), cr_rwlock_write_lock(rw2), "app:rw",
            "redisson_rwlock:{app:rw}");
    OK(cr_rwlock_delete(rw, &yes));
    /* MultiLock over two names. */
    subs[0] = l;
    subs[1] = s;
    OK(cr_multilock_new(subs, 2, &m));
    OK(cr_lock_lock(m, 5000));
    OK(cr_lock_unlock(m));
    cr_lock_free(m);
    cr_rwlock_free(rw);
    cr_rwlock_free(rw2);
    cr_lock_free(f);
    cr_lock_free(f2);
    cr_lock_free(n);
    cr_lock_free(s);
    cr_lock_free(s2);
    cr_lock_free(l);
    cr_lock_free(l2);
    cr_client_free(a);
    cr_client_free(b);
    assert_int_equal(atomic_load(&refusals), 0);
}

typedef struct sem_waiter {
    cr_semaphore *sem;
    cr_latch *latch;
    cr_status rc;
    pthread_t thread;
} sem_waiter;

static void *
wait_permit(void *arg)
{
    sem_waiter *w = arg;

    w->rc = cr_semaphore_try_acquire(w->sem, 1, slow(10000));
    return NULL;
}

static void *
wait_latch(void *arg)
{
    sem_waiter *w = arg;

    w->rc = cr_latch_await(w->latch, slow(10000));
    return NULL;
}

static void
test_acl_documented_user_runs_semaphores_latches_and_inspect(void **state)
{
    cr_client *a = locker(false), *b = locker(false);
    char id[CR_PERMIT_ID_LEN + 1];
    cr_semaphore *s, *s2;
    cr_permit_semaphore *p;
    cr_latch *la, *la2;
    cr_object_info *info = NULL;
    cr_lock *l;
    sem_waiter w;
    int64_t v = 0;
    bool yes = false;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    OK(cr_semaphore_new(a, "app:sem", &s));
    OK(cr_semaphore_new(b, "app:sem", &s2));
    OK(cr_semaphore_try_set_permits(s, 0, 0, &yes));
    memset(&w, 0, sizeof(w));
    w.sem = s2;
    assert_int_equal(pthread_create(&w.thread, NULL, wait_permit, &w), 0);
    /* In line, on its own channel and (first there) on the semaphore's. */
    await_waiters_in_line("app:sem", 1);
    assert_true(cr_test_wait_until(line_listening, &(line_of){"app:sem", 1},
                                   slow(5000)));
    await_subscribers("redisson_sc:{app:sem}", 1);
    OK(cr_semaphore_release(s, 1));
    pthread_join(w.thread, NULL);
    OK(w.rc);
    OK(cr_semaphore_add_permits(s, 3));
    OK(cr_semaphore_try_acquire(s, 1, 0));
    OK(cr_semaphore_drain_permits(s, &v));
    OK(cr_semaphore_set_permits(s, 2));
    OK(cr_semaphore_available_permits(s, &v));
    OK(cr_semaphore_delete(s, &yes));
    OK(cr_permit_semaphore_new(a, "app:psem", &p));
    OK(cr_permit_semaphore_set_permits(p, 2));
    OK(cr_permit_semaphore_try_acquire(p, 0, 10000, id));
    OK(cr_permit_semaphore_update_lease_time(p, id, 20000, &yes));
    OK(cr_permit_semaphore_available_permits(p, &v));
    OK(cr_permit_semaphore_release(p, id));
    OK(cr_permit_semaphore_delete(p, &yes));
    OK(cr_latch_new(a, "app:latch", &la));
    OK(cr_latch_new(b, "app:latch", &la2));
    OK(cr_latch_try_set_count(la, 1, 0, &yes));
    memset(&w, 0, sizeof(w));
    w.latch = la2;
    assert_int_equal(pthread_create(&w.thread, NULL, wait_latch, &w), 0);
    await_subscribers("redisson_countdownlatch__channel__{app:latch}", 1);
    OK(cr_latch_count_down(la));
    pthread_join(w.thread, NULL);
    OK(w.rc);
    OK(cr_latch_get_count(la, &v));
    OK(cr_latch_delete(la, &yes));
    /* Introspection: without +client|list, who holds it is unknown. */
    OK(cr_lock_new(a, "app:seen", &l));
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    OK(cr_object_inspect(b, "app:seen", &info));
    assert_int_equal(info->kind, CR_OBJECT_LOCK);
    assert_int_equal(info->nholders, 1);
    assert_false(info->presence_read);
    assert_int_equal(info->holders[0].who.presence, CR_PRESENCE_UNKNOWN);
    cr_object_info_free(info);
    OK(cr_object_inspect(b, "app:sem", &info));
    cr_object_info_free(info);
    OK(cr_lock_unlock(l));
    cr_lock_free(l);
    cr_latch_free(la);
    cr_latch_free(la2);
    cr_permit_semaphore_free(p);
    cr_semaphore_free(s);
    cr_semaphore_free(s2);
    cr_client_free(a);
    cr_client_free(b);
    assert_int_equal(atomic_load(&refusals), 0);
}

static void
test_acl_documented_user_runs_the_rate_limiter(void **state)
{
    cr_client *a = locker(false);
    cr_rate_limiter *rl, *pc;
    cr_rate_config cfg;
    int64_t v = 0;
    bool yes = false;

    (void)state;
    assert_non_null(a);
    OK(cr_rate_limiter_new(a, "app:rl", &rl));
    OK(cr_rate_limiter_try_set_rate(rl, CR_RATE_OVERALL, 2, 200, 1000, &yes));
    OK(cr_rate_limiter_get_config(rl, &cfg));
    OK(cr_rate_limiter_try_acquire(rl, 2, 0));
    /* A wait through the hint, and the reclaiming of expired records. */
    OK(cr_rate_limiter_try_acquire(rl, 1, slow(5000)));
    OK(cr_rate_limiter_available_permits(rl, &v));
    OK(cr_rate_limiter_set_rate(rl, CR_RATE_OVERALL, 3, 200, 0));
    OK(cr_rate_limiter_delete(rl, &yes));
    OK(cr_rate_limiter_new(a, "app:pc", &pc));
    OK(cr_rate_limiter_try_set_rate(pc, CR_RATE_PER_CLIENT, 1, 1000, 0, &yes));
    OK(cr_rate_limiter_try_acquire(pc, 1, 0));
    OK(cr_rate_limiter_delete(pc, &yes));
    cr_rate_limiter_free(pc);
    cr_rate_limiter_free(rl);
    cr_client_free(a);
    assert_int_equal(atomic_load(&refusals), 0);
}

typedef struct barrier_party {
    cr_barrier *barrier;
    cr_status rc;
    pthread_t thread;
} barrier_party;

static void *
barrier_party_run(void *arg)
{
    barrier_party *p = arg;

    p->rc = cr_barrier_await(p->barrier, slow(10000), NULL, NULL);
    return NULL;
}

static void
test_acl_documented_user_runs_the_barrier(void **state)
{
    cr_client *a = locker(false), *b = locker(false);
    cr_barrier *ba, *bb;
    barrier_party p;
    int64_t v = 0;
    bool yes = false;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    OK(cr_barrier_new(a, "app:bar", 2, &ba));
    OK(cr_barrier_new(b, "app:bar", 2, &bb));
    /* A round: one waits (subscribed, renewing its lease), one completes. */
    memset(&p, 0, sizeof(p));
    p.barrier = bb;
    assert_int_equal(pthread_create(&p.thread, NULL, barrier_party_run, &p),
                     0);
    await_subscribers("credisson_barrier__channel:{app:bar}:0", 1);
    OK(cr_barrier_await(ba, slow(10000), NULL, NULL));
    pthread_join(p.thread, NULL);
    OK(p.rc);
    /* A round broken by a timeout, a reset, the queries, a delete. */
    assert_int_equal(cr_barrier_await(ba, 0, NULL, NULL), CR_TIMEOUT);
    OK(cr_barrier_is_broken(ba, &yes));
    OK(cr_barrier_reset(ba));
    OK(cr_barrier_get_number_waiting(ba, &v));
    OK(cr_barrier_delete(ba, &yes));
    cr_barrier_free(ba);
    cr_barrier_free(bb);
    cr_client_free(a);
    cr_client_free(b);
    assert_int_equal(atomic_load(&refusals), 0);
}

/* A waiter on the condition of a lock, on its own thread. */
typedef struct condition_waiter {
    cr_lock *lock;
    cr_lock_condition *cond;
    cr_status rc;
    pthread_t thread;
} condition_waiter;

static void *
condition_waiter_run(void *arg)
{
    condition_waiter *w = arg;

    w->rc = cr_lock_lock(w->lock, CR_LEASE_WATCHDOG);
    if (w->rc == CR_OK)
        w->rc = cr_lock_condition_await(w->cond, slow(10000));
    if (w->rc == CR_OK)
        w->rc = cr_lock_unlock(w->lock);
    return NULL;
}

static void
test_acl_documented_user_runs_conditions_and_count_down_and_await(void **state)
{
    cr_client *a = locker(false), *b = locker(false);
    cr_lock *la, *lb;
    cr_lock_condition *ca, *cb;
    cr_latch *latch;
    condition_waiter w;
    bool woke = false;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    OK(cr_lock_new(a, "app:cond", &la));
    OK(cr_lock_new(b, "app:cond", &lb));
    OK(cr_lock_condition_new(la, "c", &ca));
    OK(cr_lock_condition_new(lb, "c", &cb));
    memset(&w, 0, sizeof(w));
    w.lock = lb;
    w.cond = cb;
    assert_int_equal(pthread_create(&w.thread, NULL, condition_waiter_run,
                                    &w), 0);
    await_subscribers("credisson_condition__channel:{app:cond}:c", 1);
    OK(cr_lock_lock(la, CR_LEASE_WATCHDOG));
    OK(cr_lock_condition_signal(ca, &woke));
    assert_true(woke);
    OK(cr_lock_unlock(la));
    pthread_join(w.thread, NULL);
    OK(w.rc);
    OK(cr_latch_new(a, "app:latch", &latch));
    OK(cr_latch_try_set_count(latch, 1, 0, NULL));
    OK(cr_latch_count_down_and_await(latch, slow(5000)));
    cr_latch_free(latch);
    cr_lock_condition_free(ca);
    cr_lock_condition_free(cb);
    cr_lock_free(la);
    cr_lock_free(lb);
    cr_client_free(a);
    cr_client_free(b);
    assert_int_equal(atomic_load(&refusals), 0);
}

static void
test_acl_a_refused_script_is_enoperm_naming_the_command(void **state)
{
    cr_client *a;
    cr_lock *l;

    (void)state;
    assert_true(acl(&test_redis, "ACL SETUSER locker -evalsha -eval"));
    a = locker(false);
    assert_non_null(a);
    OK(cr_lock_new(a, "app:noeval", &l));
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_ENOPERM);
    assert_non_null(strstr(cr_last_error(), "evalsha"));
    cr_lock_free(l);
    cr_client_free(a);
}

static void
test_acl_a_refused_subscribe_ends_the_wait_at_once(void **state)
{
    cr_client *a, *b;
    cr_lock *l, *l2;
    int64_t start, took;

    (void)state;
    assert_true(acl(&test_redis, "ACL SETUSER locker -subscribe"));
    a = locker(false);
    b = locker(false);
    assert_non_null(a);
    assert_non_null(b);
    OK(cr_lock_new(a, "app:nosub", &l));
    OK(cr_lock_new(b, "app:nosub", &l2));
    OK(cr_lock_lock(l, CR_LEASE_WATCHDOG));
    start = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(l2, slow(5000), CR_LEASE_WATCHDOG),
                     CR_ENOPERM);
    took = cr_test_now_ms() - start;
    assert_non_null(strstr(cr_last_error(), "SUBSCRIBE"));
    /* Not the subscription timeout (7.5 s), nor the wait (5 s). */
    assert_true(took < slow(1000));
    /* Its first attempt put it in the lock's line; it left as it gave up. */
    assert_int_equal(line_length("app:nosub"), 0);
    OK(cr_lock_unlock(l));
    cr_lock_free(l);
    cr_lock_free(l2);
    cr_client_free(a);
    cr_client_free(b);
}

static void
test_acl_replica_sync_without_role_fails_instead_of_turning_off(void **state)
{
    cr_client *a;
    cr_lock *l;

    (void)state;
    assert_true(acl(&test_redis, "ACL SETUSER locker -role"));
    a = locker(true);
    assert_non_null(a);
    OK(cr_lock_new(a, "app:norole", &l));
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_ENOPERM);
    assert_non_null(strstr(cr_last_error(), "ROLE"));
    assert_int_equal(redis_int("EXISTS app:norole"), 0);
    assert_true(atomic_load(&refusals) > 0); /* and it is logged */
    cr_lock_free(l);
    cr_client_free(a);
}

static void
test_acl_replica_sync_without_wait_undoes_the_acquisition(void **state)
{
    cr_client *a;
    cr_lock *l;

    (void)state;
    assert_true(cr_test_wait_until(replica_online, NULL, slow(10000)));
    assert_true(acl(&test_redis, "ACL SETUSER locker -wait"));
    a = locker(true);
    assert_non_null(a);
    OK(cr_lock_new(a, "app:nowait", &l));
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_ENOPERM);
    assert_non_null(strstr(cr_last_error(), "WAIT"));
    assert_true(cr_test_wait_until(key_gone, "app:nowait", slow(3000)));
    cr_lock_free(l);
    cr_client_free(a);
}

static void
test_acl_wrong_or_missing_password_is_eauth(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;
    char bad[256];

    (void)state;
    snprintf(bad, sizeof(bad), "redis://locker:wrong@127.0.0.1:%d",
             test_redis.port);
    o.url = bad;
    assert_int_equal(cr_client_new(&o, &c), CR_EAUTH);
    assert_null(strstr(cr_last_error(), "wrong"));
    assert_true(redis_ok("CONFIG SET requirepass adm-pw-0c1d"));
    o.url = test_redis.url;
    assert_int_equal(cr_client_new(&o, &c), CR_EAUTH);
    assert_non_null(strstr(cr_last_error(), "NOAUTH"));
    o.password = "adm-pw-0c1d";
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    cr_client_free(c);
    {
        redisContext *r = cr_test_redis_connect(&test_redis);
        redisReply *reply = r != NULL
                                ? redisCommand(r, "AUTH adm-pw-0c1d")
                                : NULL;

        if (reply != NULL)
            freeReplyObject(reply);
        reply = r != NULL ? redisCommand(r, "CONFIG SET requirepass %s", "")
                          : NULL;
        assert_non_null(reply);
        freeReplyObject(reply);
        redisFree(r);
    }
}

#define T(f) cmocka_unit_test_setup_teardown(f, user_up, client_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_acl_documented_user_runs_every_lock_kind),
        T(test_acl_documented_user_runs_semaphores_latches_and_inspect),
        T(test_acl_documented_user_runs_the_rate_limiter),
        T(test_acl_documented_user_runs_the_barrier),
        T(test_acl_a_refused_script_is_enoperm_naming_the_command),
        T(test_acl_documented_user_runs_conditions_and_count_down_and_await),
        T(test_acl_a_refused_subscribe_ends_the_wait_at_once),
        T(test_acl_replica_sync_without_role_fails_instead_of_turning_off),
        T(test_acl_replica_sync_without_wait_undoes_the_acquisition),
        T(test_acl_wrong_or_missing_password_is_eauth),
    };

    return cmocka_run_group_tests(tests, acl_up, acl_down);
}
