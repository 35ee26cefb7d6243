/* SPDX-License-Identifier: MIT */
/*
 * The client's event hook (cr_client_options.event_fn) against a real
 * redis-server: acquisitions with the time waited, releases with the time
 * held, waits that ran out, lost leases, failed watchdog renewals and
 * reconnects, for a lock, a semaphore, a latch, a MultiLock, a RedLock and
 * an asynchronous request; and nothing at all when no hook is set.
 */
#include "lock_common.h"
#include "poll_loop.h"
#include "async_outcome.h"

#include <unistd.h>

/* ------------------------------------------------------------- recorder */

#define MAX_EVENTS 256

typedef struct seen {
    cr_event_kind kind;
    cr_status status;
    char object[32];
    char name[128];
    int64_t wait_ms, hold_ms;
    bool async;
} seen;

static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static seen events[MAX_EVENTS];
static size_t nevents;

/* The hook: copies the event, whose strings live only during the call. */
static void
on_event(void *userdata, const cr_event *ev)
{
    seen *s;

    assert_ptr_equal(userdata, &rec_mu);
    pthread_mutex_lock(&rec_mu);
    if (nevents < MAX_EVENTS) {
        s = &events[nevents++];
        s->kind = ev->kind;
        s->status = ev->status;
        snprintf(s->object, sizeof(s->object), "%s",
                 ev->object != NULL ? ev->object : "");
        snprintf(s->name, sizeof(s->name), "%s",
                 ev->name != NULL ? ev->name : "");
        s->wait_ms = ev->wait_ms;
        s->hold_ms = ev->hold_ms;
        s->async = ev->async;
    }
    pthread_mutex_unlock(&rec_mu);
}

/* The first event of `kind` about `name` ("" for connection events), or
 * NULL; a copy in *out. */
static bool
find(cr_event_kind kind, const char *name, seen *out)
{
    bool found = false;

    pthread_mutex_lock(&rec_mu);
    for (size_t i = 0; i < nevents && !found; i++)
        if (events[i].kind == kind && strcmp(events[i].name, name) == 0) {
            *out = events[i];
            found = true;
        }
    pthread_mutex_unlock(&rec_mu);
    return found;
}

/* How many events of `kind` about `name` (NULL: any name) came. */
static int
count_of(cr_event_kind kind, const char *name)
{
    int n = 0;

    pthread_mutex_lock(&rec_mu);
    for (size_t i = 0; i < nevents; i++)
        if (events[i].kind == kind &&
            (name == NULL || strcmp(events[i].name, name) == 0))
            n++;
    pthread_mutex_unlock(&rec_mu);
    return n;
}

/* How many events of any kind about `name` came. */
static int
count_about(const char *name)
{
    int n = 0;

    pthread_mutex_lock(&rec_mu);
    for (size_t i = 0; i < nevents; i++)
        if (strcmp(events[i].name, name) == 0)
            n++;
    pthread_mutex_unlock(&rec_mu);
    return n;
}

static size_t
count_events(void)
{
    size_t n;

    pthread_mutex_lock(&rec_mu);
    n = nevents;
    pthread_mutex_unlock(&rec_mu);
    return n;
}

static bool
reconnect_seen(void *arg)
{
    seen s;

    (void)arg;
    return find(CR_EVENT_RECONNECT, "", &s);
}

static bool
lost_seen(void *arg)
{
    seen s;

    return find(CR_EVENT_LEASE_LOST, arg, &s);
}

static bool
renewal_failed_seen(void *arg)
{
    seen s;

    (void)arg;
    return find(CR_EVENT_RENEWAL_FAILED, "", &s);
}

/* Per-test setup: a flushed server and a client with the hook. */
static int
hooked_up(void **state)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;

    (void)state;
    if (cr_test_redis_flushall(&test_redis) != 0)
        return -1;
    nevents = 0;
    o.url = test_redis.url;
    o.lock_watchdog_timeout_ms = 300;
    o.command_timeout_ms = slow(2000);
    o.reconnect_window_ms = slow(15000);
    o.event_fn = on_event;
    o.event_userdata = &rec_mu;
    return cr_client_new(&o, &test_client) == CR_OK ? 0 : -1;
}

/* ---------------------------------------------------------------- tests */

static void
test_events_lock_acquired_busy_and_released_with_times(void **state)
{
    cr_client *other = new_client(300);
    cr_lock *l, *held;
    seen s;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_lock_new(test_client, "order:1", &l), CR_OK);
    assert_int_equal(cr_lock_new(other, "order:1", &held), CR_OK);
    assert_int_equal(cr_lock_try_lock(held, 0, 400), CR_OK);
    /* Held elsewhere: a try without wait is busy at once. */
    assert_int_equal(cr_lock_try_lock(l, 0, 10000), CR_BUSY);
    assert_true(find(CR_EVENT_BUSY, "order:1", &s));
    assert_int_equal(s.status, CR_BUSY);
    assert_string_equal(s.object, "lock");
    assert_true(s.wait_ms >= 0 && s.wait_ms < slow(200));
    assert_false(s.async);
    /* Waiting for the other's lease (400 ms) to run out. */
    assert_int_equal(cr_lock_try_lock(l, slow(5000), 10000), CR_OK);
    assert_true(find(CR_EVENT_ACQUIRED, "order:1", &s));
    assert_int_equal(s.status, CR_OK);
    assert_string_equal(s.object, "lock");
    assert_true(s.wait_ms >= 200);
    assert_true(s.wait_ms < slow(5000));
    assert_int_equal(s.hold_ms, -1);
    usleep(150 * 1000);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_true(find(CR_EVENT_RELEASED, "order:1", &s));
    assert_int_equal(s.status, CR_OK);
    assert_true(s.hold_ms >= 150 && s.hold_ms < slow(3000));
    assert_int_equal(s.wait_ms, -1);
    cr_lock_free(held);
    cr_lock_free(l);
    cr_client_free(other);
}

static void
test_events_lease_lost_when_key_deleted_behind_the_holder(void **state)
{
    cr_lock *l;
    seen s;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "stolen", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("DEL stolen"), 1);
    assert_true(cr_test_wait_until(lost_seen, "stolen", slow(3000)));
    assert_true(find(CR_EVENT_LEASE_LOST, "stolen", &s));
    assert_int_equal(s.status, CR_ELOST);
    assert_string_equal(s.object, "lock");
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    /* A lost hold is not reported released. */
    assert_false(find(CR_EVENT_RELEASED, "stolen", &s));
    cr_lock_free(l);
}

/* A watchdog renewal the server refuses: someone else made the lock's key
 * a string, so the renewal script's HEXISTS fails with WRONGTYPE. The
 * failure is reported as such, with the status and no object (a renewal
 * call is for a batch of holds), and retried. */
static void
test_events_renewal_failed_when_the_server_refuses_the_renewal(void **state)
{
    cr_client_stats st = CR_CLIENT_STATS_INIT;
    cr_lock *l;
    seen s;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "refused", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_false(find(CR_EVENT_RENEWAL_FAILED, "", &s));
    assert_true(redis_ok("SET refused taken"));
    /* Renewals come every 100 ms (a third of the 300 ms watchdog). */
    assert_true(cr_test_wait_until(renewal_failed_seen, NULL, slow(3000)));
    assert_true(find(CR_EVENT_RENEWAL_FAILED, "", &s));
    assert_int_equal(s.status, CR_ESERVER); /* WRONGTYPE */
    assert_string_equal(s.object, "");
    assert_int_equal(s.wait_ms, -1);
    assert_int_equal(s.hold_ms, -1);
    assert_false(s.async);
    assert_int_equal(cr_client_stats_get(test_client, &st), CR_OK);
    assert_true(st.renewal_failures >= 1);
    assert_int_equal(redis_int("DEL refused"), 1);
    /* The hold is gone by now or found gone by the unlock. */
    assert_int_not_equal(cr_lock_unlock(l), CR_OK);
    assert_false(find(CR_EVENT_RELEASED, "refused", &s));
    cr_lock_free(l);
}

static void
test_events_reconnect_after_client_kill(void **state)
{
    cr_lock *l;
    int64_t n = 0;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "killed", &l), CR_OK);
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_true(redis_ok("CLIENT KILL TYPE normal SKIPME yes"));
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_true(cr_test_wait_until(reconnect_seen, NULL, slow(3000)));
    cr_lock_free(l);
}

static void
test_events_semaphore_acquired_busy_and_released(void **state)
{
    cr_semaphore *sem;
    bool set = false;
    seen s;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "pool:db", &sem), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(sem, 1, 0, &set), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(sem, 1, 0), CR_OK);
    assert_true(find(CR_EVENT_ACQUIRED, "pool:db", &s));
    assert_string_equal(s.object, "semaphore");
    assert_true(s.wait_ms >= 0 && s.wait_ms < slow(1000));
    assert_int_equal(cr_semaphore_try_acquire(sem, 1, 100), CR_BUSY);
    assert_true(find(CR_EVENT_BUSY, "pool:db", &s));
    assert_int_equal(s.status, CR_BUSY);
    assert_true(s.wait_ms >= 100 && s.wait_ms < slow(2000));
    assert_int_equal(cr_semaphore_release(sem, 1), CR_OK);
    assert_true(find(CR_EVENT_RELEASED, "pool:db", &s));
    assert_string_equal(s.object, "semaphore");
    assert_int_equal(s.hold_ms, -1);
    cr_semaphore_free(sem);
}

static void
test_events_permit_semaphore_acquired_released_and_lease_lost(void **state)
{
    cr_permit_semaphore *sem;
    char id[CR_PERMIT_ID_LEN + 1];
    bool set = false;
    seen s;

    (void)state;
    assert_int_equal(cr_permit_semaphore_new(test_client, "slots:7", &sem),
                     CR_OK);
    assert_int_equal(cr_permit_semaphore_try_set_permits(sem, 1, &set), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_acquire(sem, 0, 10000, id), CR_OK);
    assert_true(find(CR_EVENT_ACQUIRED, "slots:7", &s));
    assert_string_equal(s.object, "permit semaphore");
    assert_int_equal(cr_permit_semaphore_try_acquire(sem, 0, 10000, id),
                     CR_BUSY);
    assert_true(find(CR_EVENT_BUSY, "slots:7", &s));
    assert_int_equal(s.status, CR_BUSY);
    assert_int_equal(cr_permit_semaphore_release(sem, id), CR_OK);
    assert_true(find(CR_EVENT_RELEASED, "slots:7", &s));
    assert_string_equal(s.object, "permit semaphore");
    assert_int_equal(s.hold_ms, -1);
    /* A permit whose lease ran out before its release: lost. */
    assert_int_equal(cr_permit_semaphore_try_acquire(sem, 0, 50, id), CR_OK);
    usleep(slow(200) * 1000);
    assert_int_equal(cr_permit_semaphore_release(sem, id), CR_ELOST);
    assert_true(find(CR_EVENT_LEASE_LOST, "slots:7", &s));
    assert_int_equal(s.status, CR_ELOST);
    assert_string_equal(s.object, "permit semaphore");
    cr_permit_semaphore_free(sem);
}

static void
test_events_latch_timeout_and_opened(void **state)
{
    cr_latch *l;
    bool set = false;
    seen s;

    (void)state;
    assert_int_equal(cr_latch_new(test_client, "deploy", &l), CR_OK);
    assert_int_equal(cr_latch_try_set_count(l, 1, 0, &set), CR_OK);
    assert_int_equal(cr_latch_await(l, 100), CR_TIMEOUT);
    assert_true(find(CR_EVENT_BUSY, "deploy", &s));
    assert_int_equal(s.status, CR_TIMEOUT);
    assert_string_equal(s.object, "latch");
    assert_true(s.wait_ms >= 100 && s.wait_ms < slow(2000));
    assert_int_equal(cr_latch_count_down(l), CR_OK);
    assert_int_equal(cr_latch_await(l, 1000), CR_OK);
    assert_true(find(CR_EVENT_ACQUIRED, "deploy", &s));
    assert_string_equal(s.object, "latch");
    cr_latch_free(l);
}

static void
test_events_async_lock_acquired_and_released(void **state)
{
    cr_async *a = NULL;
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, u = {0};
    cr_lock *l;
    seen s;

    (void)state;
    assert_int_equal(cr_async_new(test_client, &poll_loop, &a), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "alock", &l), CR_OK);
    assert_int_equal(cr_async_lock(a, l, owner, 0, 30000, record, &o, NULL),
                     CR_OK);
    assert_true(poll_loop_until(a, called, &o, slow(3000)));
    assert_int_equal(o.rc, CR_OK);
    assert_true(find(CR_EVENT_ACQUIRED, "alock", &s));
    assert_true(s.async);
    assert_string_equal(s.object, "lock");
    assert_true(s.wait_ms >= 0 && s.wait_ms < slow(3000));
    assert_int_equal(cr_async_unlock(a, l, owner, record, &u, NULL), CR_OK);
    assert_true(poll_loop_until(a, called, &u, slow(3000)));
    assert_int_equal(u.rc, CR_OK);
    assert_true(find(CR_EVENT_RELEASED, "alock", &s));
    assert_true(s.async);
    assert_true(s.hold_ms >= 0 && s.hold_ms < slow(3000));
    cr_async_free(a);
    cr_lock_free(l);
}

/* A MultiLock reports itself: one acquisition with the whole wait, one
 * release of its last hold with the time held, one wait that ran out,
 * as object "multilock" named by its locks' names joined; its sub-locks,
 * taken and given back on its behalf, report nothing of their own. */
static void
test_events_multilock_reports_itself_once_and_not_its_members(void **state)
{
    cr_client *other = new_client(300);
    cr_lock *a, *b, *ml, *held;
    seen s;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_lock_new(test_client, "ml:a", &a), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "ml:b", &b), CR_OK);
    assert_int_equal(cr_multilock_new((cr_lock *[]){a, b}, 2, &ml), CR_OK);
    assert_int_equal(cr_lock_new(other, "ml:b", &held), CR_OK);
    /* Waiting for the other's lease (400 ms) on one sub-lock. */
    assert_int_equal(cr_lock_try_lock(held, 0, 400), CR_OK);
    assert_int_equal(cr_lock_try_lock(ml, slow(5000), 10000), CR_OK);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, "ml:a,ml:b"), 1);
    assert_true(find(CR_EVENT_ACQUIRED, "ml:a,ml:b", &s));
    assert_int_equal(s.status, CR_OK);
    assert_string_equal(s.object, "multilock");
    assert_true(s.wait_ms >= 200 && s.wait_ms < slow(5000));
    assert_int_equal(s.hold_ms, -1);
    assert_false(s.async);
    /* Reentrant: only the last unlock releases it. */
    assert_int_equal(cr_lock_try_lock(ml, 0, 10000), CR_OK);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, "ml:a,ml:b"), 2);
    usleep(150 * 1000);
    assert_int_equal(cr_lock_unlock(ml), CR_OK);
    assert_int_equal(count_of(CR_EVENT_RELEASED, "ml:a,ml:b"), 0);
    assert_int_equal(cr_lock_unlock(ml), CR_OK);
    assert_int_equal(count_of(CR_EVENT_RELEASED, "ml:a,ml:b"), 1);
    assert_true(find(CR_EVENT_RELEASED, "ml:a,ml:b", &s));
    assert_int_equal(s.status, CR_OK);
    assert_string_equal(s.object, "multilock");
    assert_true(s.hold_ms >= 150 && s.hold_ms < slow(5000));
    assert_int_equal(s.wait_ms, -1);
    /* A wait that runs out: one busy event, however many attempts. */
    assert_int_equal(cr_lock_try_lock(held, 0, 30000), CR_OK);
    assert_int_equal(cr_lock_try_lock(ml, 300, 10000), CR_BUSY);
    assert_int_equal(count_of(CR_EVENT_BUSY, "ml:a,ml:b"), 1);
    assert_true(find(CR_EVENT_BUSY, "ml:a,ml:b", &s));
    assert_int_equal(s.status, CR_BUSY);
    assert_string_equal(s.object, "multilock");
    assert_true(s.wait_ms >= 300 && s.wait_ms < slow(3000));
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    /* The sub-locks said nothing of their own. */
    assert_int_equal(count_about("ml:a"), 0);
    assert_int_equal(count_about("ml:b"), 0);
    /* Used on their own, they report as any lock. */
    assert_int_equal(cr_lock_try_lock(a, 0, 10000), CR_OK);
    assert_int_equal(cr_lock_unlock(a), CR_OK);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, "ml:a"), 1);
    assert_int_equal(count_of(CR_EVENT_RELEASED, "ml:a"), 1);
    cr_lock_free(ml);
    cr_lock_free(held);
    cr_lock_free(a);
    cr_lock_free(b);
    cr_client_free(other);
}

/* A MultiLock hold whose lease ended is forgotten: taken again and
 * released, the multilock reports one release (not none, as when the
 * ended hold still counted); an unlock of a hold no longer there reports
 * nothing. */
static void
test_events_multilock_forgets_holds_whose_lease_ended(void **state)
{
    cr_lock *a, *b, *ml;

    (void)state;
    assert_int_equal(cr_lock_new(test_client, "mle:a", &a), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "mle:b", &b), CR_OK);
    assert_int_equal(cr_multilock_new((cr_lock *[]){a, b}, 2, &ml), CR_OK);
    assert_int_equal(cr_lock_try_lock(ml, 0, 300), CR_OK);
    assert_true(cr_test_wait_until(key_gone, "mle:a", slow(5000)));
    assert_true(cr_test_wait_until(key_gone, "mle:b", slow(5000)));
    assert_int_equal(cr_lock_try_lock(ml, 0, 10000), CR_OK);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, "mle:a,mle:b"), 2);
    assert_int_equal(cr_lock_unlock(ml), CR_OK);
    assert_int_equal(count_of(CR_EVENT_RELEASED, "mle:a,mle:b"), 1);
    assert_int_not_equal(cr_lock_unlock(ml), CR_OK);
    assert_int_equal(count_of(CR_EVENT_RELEASED, "mle:a,mle:b"), 1);
    cr_lock_free(ml);
    cr_lock_free(a);
    cr_lock_free(b);
}

/* A RedLock reports itself as "redlock": acquired and released with a
 * majority of its locks, busy without one. */
static void
test_events_redlock_reports_itself_with_a_majority(void **state)
{
    cr_client *other = new_client(300);
    cr_lock *l[3], *rl, *theirs[2];
    seen s;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_lock_new(test_client, "rl:1", &l[0]), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "rl:2", &l[1]), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "rl:3", &l[2]), CR_OK);
    assert_int_equal(cr_redlock_new(l, 3, &rl), CR_OK);
    assert_int_equal(cr_lock_new(other, "rl:3", &theirs[0]), CR_OK);
    assert_int_equal(cr_lock_new(other, "rl:2", &theirs[1]), CR_OK);
    assert_int_equal(cr_lock_try_lock(theirs[0], 0, 30000), CR_OK);
    assert_int_equal(cr_lock_try_lock(rl, 0, 10000), CR_OK);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, "rl:1,rl:2,rl:3"), 1);
    assert_true(find(CR_EVENT_ACQUIRED, "rl:1,rl:2,rl:3", &s));
    assert_string_equal(s.object, "redlock");
    assert_true(s.wait_ms >= 0 && s.wait_ms < slow(2000));
    assert_int_equal(cr_lock_unlock(rl), CR_OK);
    assert_int_equal(count_of(CR_EVENT_RELEASED, "rl:1,rl:2,rl:3"), 1);
    assert_true(find(CR_EVENT_RELEASED, "rl:1,rl:2,rl:3", &s));
    assert_string_equal(s.object, "redlock");
    assert_true(s.hold_ms >= 0 && s.hold_ms < slow(2000));
    assert_int_equal(cr_lock_try_lock(theirs[1], 0, 30000), CR_OK);
    assert_int_equal(cr_lock_try_lock(rl, 150, 10000), CR_BUSY);
    assert_int_equal(count_of(CR_EVENT_BUSY, "rl:1,rl:2,rl:3"), 1);
    assert_true(find(CR_EVENT_BUSY, "rl:1,rl:2,rl:3", &s));
    assert_int_equal(s.status, CR_BUSY);
    assert_string_equal(s.object, "redlock");
    assert_true(s.wait_ms >= 150 && s.wait_ms < slow(3000));
    assert_int_equal(count_about("rl:1"), 0);
    assert_int_equal(count_about("rl:2"), 0);
    assert_int_equal(count_about("rl:3"), 0);
    assert_int_equal(cr_lock_unlock(theirs[0]), CR_OK);
    assert_int_equal(cr_lock_unlock(theirs[1]), CR_OK);
    cr_lock_free(rl);
    cr_lock_free(theirs[0]);
    cr_lock_free(theirs[1]);
    for (int i = 0; i < 3; i++)
        cr_lock_free(l[i]);
    cr_client_free(other);
}

/* The name of a MultiLock whose locks' names do not all fit: those that
 * do, then ",+" and how many more. */
static void
test_events_multilock_name_of_many_locks_is_cut_with_a_count(void **state)
{
    cr_lock *l[8], *ml;
    char name[32], want[128] = "";
    size_t used = 0;
    int i;

    (void)state;
    for (i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "long-lock-name-number-%02d", i);
        assert_int_equal(cr_lock_new(test_client, name, &l[i]), CR_OK);
        if (i < 5) /* 5 x 24 + 4 commas, with ",+3": 127 bytes */
            used += (size_t)snprintf(want + used, sizeof(want) - used, "%s%s",
                                     i > 0 ? "," : "", name);
    }
    snprintf(want + used, sizeof(want) - used, ",+3");
    assert_int_equal(cr_multilock_new(l, 8, &ml), CR_OK);
    assert_int_equal(cr_lock_try_lock(ml, 0, 10000), CR_OK);
    assert_int_equal(cr_lock_unlock(ml), CR_OK);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, want), 1);
    assert_int_equal(count_of(CR_EVENT_RELEASED, want), 1);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, NULL), 1);
    cr_lock_free(ml);
    for (i = 0; i < 8; i++)
        cr_lock_free(l[i]);
}

/* From the asynchronous API, a MultiLock runs on a thread in slices of a
 * wait: still one event per request, marked asynchronous, with the time
 * the whole request waited. */
static void
test_events_async_multilock_reports_once_per_request(void **state)
{
    cr_client *other = new_client(300);
    cr_async *as = NULL;
    int64_t owner = cr_async_owner_id();
    outcome o = {0}, u = {0}, w = {0};
    cr_lock *a, *b, *ml, *held;
    seen s;

    (void)state;
    assert_non_null(other);
    assert_int_equal(cr_async_new(test_client, &poll_loop, &as), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "aml:a", &a), CR_OK);
    assert_int_equal(cr_lock_new(test_client, "aml:b", &b), CR_OK);
    assert_int_equal(cr_multilock_new((cr_lock *[]){a, b}, 2, &ml), CR_OK);
    assert_int_equal(cr_lock_new(other, "aml:a", &held), CR_OK);
    assert_int_equal(cr_async_lock(as, ml, owner, 0, 30000, record, &o, NULL),
                     CR_OK);
    assert_true(poll_loop_until(as, called, &o, slow(3000)));
    assert_int_equal(o.rc, CR_OK);
    assert_int_equal(count_of(CR_EVENT_ACQUIRED, "aml:a,aml:b"), 1);
    assert_true(find(CR_EVENT_ACQUIRED, "aml:a,aml:b", &s));
    assert_string_equal(s.object, "multilock");
    assert_true(s.async);
    assert_true(s.wait_ms >= 0 && s.wait_ms < slow(3000));
    assert_int_equal(cr_async_unlock(as, ml, owner, record, &u, NULL), CR_OK);
    assert_true(poll_loop_until(as, called, &u, slow(3000)));
    assert_int_equal(u.rc, CR_OK);
    assert_int_equal(count_of(CR_EVENT_RELEASED, "aml:a,aml:b"), 1);
    assert_true(find(CR_EVENT_RELEASED, "aml:a,aml:b", &s));
    assert_true(s.async);
    assert_true(s.hold_ms >= 0 && s.hold_ms < slow(3000));
    /* A wait of several slices (200 ms each) that runs out: one event. */
    assert_int_equal(cr_lock_try_lock(held, 0, 30000), CR_OK);
    assert_int_equal(cr_async_lock(as, ml, owner, 500, 30000, record, &w,
                                   NULL), CR_OK);
    assert_true(poll_loop_until(as, called, &w, slow(5000)));
    assert_int_equal(w.rc, CR_BUSY);
    assert_int_equal(count_of(CR_EVENT_BUSY, "aml:a,aml:b"), 1);
    assert_true(find(CR_EVENT_BUSY, "aml:a,aml:b", &s));
    assert_int_equal(s.status, CR_BUSY);
    assert_true(s.async);
    assert_true(s.wait_ms >= 500 && s.wait_ms < slow(5000));
    assert_int_equal(count_about("aml:a"), 0);
    assert_int_equal(count_about("aml:b"), 0);
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    cr_async_free(as);
    cr_lock_free(ml);
    cr_lock_free(held);
    cr_lock_free(a);
    cr_lock_free(b);
    cr_client_free(other);
}

/* Without a hook nothing is measured or delivered (a NULL hook called
 * would crash): a plain client takes, releases, loses and reconnects
 * while the recorder stays empty. */
static void
test_events_none_without_a_hook(void **state)
{
    cr_lock *l;
    int64_t n = 0;

    (void)state;
    nevents = 0;
    assert_int_equal(cr_lock_new(test_client, "quiet", &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, 10000), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_true(redis_ok("CLIENT KILL TYPE normal SKIPME yes"));
    assert_int_equal(cr_lock_get_hold_count(l, &n), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(redis_int("DEL quiet"), 1);
    usleep(slow(500) * 1000);
    assert_int_equal(cr_lock_unlock(l), CR_ELOST);
    cr_lock_free(l);
    assert_int_equal(count_events(), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_events_lock_acquired_busy_and_released_with_times, hooked_up,
            client_down),
        cmocka_unit_test_setup_teardown(
            test_events_lease_lost_when_key_deleted_behind_the_holder,
            hooked_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_events_renewal_failed_when_the_server_refuses_the_renewal,
            hooked_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_events_reconnect_after_client_kill, hooked_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_events_semaphore_acquired_busy_and_released, hooked_up,
            client_down),
        cmocka_unit_test_setup_teardown(
            test_events_permit_semaphore_acquired_released_and_lease_lost,
            hooked_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_events_latch_timeout_and_opened, hooked_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_events_async_lock_acquired_and_released, hooked_up,
            client_down),
        cmocka_unit_test_setup_teardown(
            test_events_multilock_reports_itself_once_and_not_its_members,
            hooked_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_events_multilock_forgets_holds_whose_lease_ended, hooked_up,
            client_down),
        cmocka_unit_test_setup_teardown(
            test_events_redlock_reports_itself_with_a_majority, hooked_up,
            client_down),
        cmocka_unit_test_setup_teardown(
            test_events_multilock_name_of_many_locks_is_cut_with_a_count,
            hooked_up, client_down),
        cmocka_unit_test_setup_teardown(
            test_events_async_multilock_reports_once_per_request, hooked_up,
            client_down),
        cmocka_unit_test_setup_teardown(test_events_none_without_a_hook,
                                        client_up, client_down),
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
