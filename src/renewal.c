/* SPDX-License-Identifier: MIT */
/*
 * The holds table and the watchdog thread.
 *
 * Entries are keyed by the bytes kind, key, NUL, owner. The watchdog thread
 * sleeps one wheel tick at a time while timers are scheduled (and on its
 * condition variable when none are), advances the wheel, and renews the
 * holds whose timers fired, in calls of up to `watchdog_batch` keys on the
 * transport's reserved connection. While a call is under way the table is
 * unlocked: the results are applied by looking each entry up again and
 * checking its generation, so an entry released (or released and taken
 * again) meanwhile is never touched by a stale answer.
 *
 * Due holds are grouped by kind: plain holds (RLock, fair lock, write lock)
 * go to lock_renew.lua, read holds to rwlock_read_renew.lua, which takes
 * (hash, key prefix) pairs, each with the names of this client's readers of
 * that hash, and renews only their timeout keys (Redisson 4.4+). A batch
 * holds up to `watchdog_batch` plain keys, or read holds of up to that many
 * hashes.
 *
 * A call that fails in transport keeps every registration: they are tried
 * again a second later. Each batch is independent; one failing batch does
 * not stop the others (unlike Redisson, section 4.1 of the protocol).
 *
 * Lock order: r->mu only. Lost callbacks run with it released.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "renewal.h"
#include "slot.h"
#include "timer_wheel.h"

#define WHEEL_BUCKETS 512
#define RETRY_AFTER_ERROR_MS 1000

typedef struct hold {
    char *id; /* kind byte, key, NUL, owner, NUL */
    size_t idlen; /* without the last NUL */
    const char *key;   /* inside id */
    const char *owner; /* inside id */
    char *aux;
    cr__hold_kind kind;
    int64_t tid;
    int64_t count;
    uint64_t gen;
    bool watchdog;
    bool lost;
    bool releasing; /* an unlock is under way: renewal answers are stale */
    cr_lock_lost_fn fn;
    void *userdata;
    cr__timer timer;
    UT_hash_handle hh;
} hold;

/* A hold picked for renewal: enough to find it again afterwards, and the
 * read lock's key prefix (a copy of the hold's aux), NULL for other kinds. */
typedef struct due {
    char *id;
    size_t idlen;
    char *aux;
    uint64_t gen;
    unsigned slot; /* the key's cluster slot; 0 outside a cluster */
} due;

static const char *due_key(const struct due *d);

typedef struct lost_call {
    cr_lock_lost_fn fn;
    void *userdata;
    char *key;
    int64_t tid;
} lost_call;

struct cr__renewal {
    cr_client *client;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop;
    bool idle; /* the thread waits with no deadline: signal it to schedule */
    hold *holds;
    size_t renewing;
    uint64_t next_gen;
    cr__wheel *wheel;
    int64_t period_ms; /* watchdog timeout / 3 */
    int64_t slot_ms;   /* renewal times are rounded down to this */
    int64_t due_at;    /* when the due list being renewed fell due */
    due *due;          /* timers fired in this tick */
    size_t ndue, capdue;
};

/* ------------------------------------------------------------ the table */

/* Builds the id bytes of (kind, key, owner) into a malloc'd buffer. */
static char *
make_id(cr__hold_kind kind, const char *key, const char *owner, size_t *len)
{
    size_t klen = strlen(key), olen = strlen(owner);
    char *id = malloc(klen + olen + 3);

    if (id == NULL)
        return NULL;
    id[0] = (char)('0' + kind);
    memcpy(id + 1, key, klen + 1);
    memcpy(id + 2 + klen, owner, olen + 1);
    *len = klen + olen + 2;
    return id;
}

/* Finds the entry of (kind, key, owner); r->mu held. */
static hold *
find_hold(cr__renewal *r, cr__hold_kind kind, const char *key,
          const char *owner)
{
    size_t len;
    char *id = make_id(kind, key, owner, &len);
    hold *h = NULL;

    if (id == NULL)
        return NULL;
    HASH_FIND(hh, r->holds, id, len, h);
    free(id);
    return h;
}

/* The next renewal time of a hold renewed at `now`: one period later,
 * rounded down to the slot so that holds renewed at nearby moments share a
 * tick and a script call. */
static int64_t
next_renewal(const cr__renewal *r, int64_t now)
{
    int64_t at = (now + r->period_ms) / r->slot_ms * r->slot_ms;

    return at > now ? at : now + 1;
}

/* Removes and frees an entry; r->mu held. */
static void
remove_hold(cr__renewal *r, hold *h)
{
    if (cr__timer_is_scheduled(&h->timer))
        cr__wheel_cancel(r->wheel, &h->timer);
    if (h->watchdog && !h->lost)
        r->renewing--;
    HASH_DEL(r->holds, h);
    free(h->aux);
    free(h->id);
    free(h);
}

cr_status
cr__hold_add(cr__renewal *r, cr__hold_kind kind, const char *key,
             const char *owner, const char *aux, int64_t tid, bool watchdog,
             cr_lock_lost_fn fn, void *userdata)
{
    hold *h;
    bool start_renewing;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL && h->lost) {
        /* A fresh acquisition after a loss the owner never acknowledged:
         * start over. */
        remove_hold(r, h);
        h = NULL;
    }
    if (h == NULL) {
        h = calloc(1, sizeof(*h));
        if (h == NULL || (h->id = make_id(kind, key, owner, &h->idlen)) == NULL ||
            (aux != NULL && (h->aux = strdup(aux)) == NULL)) {
            if (h != NULL)
                free(h->id);
            free(h);
            pthread_mutex_unlock(&r->mu);
            return CR_ENOMEM;
        }
        h->key = h->id + 1;
        h->owner = h->key + strlen(h->key) + 1;
        h->kind = kind;
        h->tid = tid;
        h->gen = ++r->next_gen;
        cr__timer_init(&h->timer, h);
        HASH_ADD_KEYPTR(hh, r->holds, h->id, h->idlen, h);
    }
    h->count++;
    if (fn != NULL) {
        h->fn = fn;
        h->userdata = userdata;
    }
    start_renewing = watchdog && !h->watchdog;
    if (start_renewing) {
        h->watchdog = true;
        r->renewing++;
        cr__wheel_schedule(r->wheel, &h->timer, next_renewal(r, cr__now_ms()));
        /* A thread that is ticking sees the timer at its next tick, long
         * before it is due; only an idle one needs waking (a futex call
         * and a context switch per acquisition otherwise). */
        if (r->idle)
            pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return CR_OK;
}

int64_t
cr__hold_count(cr__renewal *r, cr__hold_kind kind, const char *key,
               const char *owner, bool *lost)
{
    hold *h;
    int64_t n = 0;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL)
        n = h->count;
    if (lost != NULL)
        *lost = h != NULL && h->lost;
    pthread_mutex_unlock(&r->mu);
    return n;
}

void
cr__hold_release(cr__renewal *r, cr__hold_kind kind, const char *key,
                 const char *owner, bool all)
{
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL && (all || --h->count <= 0)) {
        remove_hold(r, h);
    } else if (h != NULL && h->releasing) {
        /* Holds remain: renew them again from now. */
        h->releasing = false;
        if (h->watchdog && !h->lost)
            cr__wheel_schedule(r->wheel, &h->timer, next_renewal(r, cr__now_ms()));
    }
    pthread_mutex_unlock(&r->mu);
}

void
cr__hold_releasing(cr__renewal *r, cr__hold_kind kind, const char *key,
                   const char *owner)
{
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL) {
        h->releasing = true;
        if (cr__timer_is_scheduled(&h->timer))
            cr__wheel_cancel(r->wheel, &h->timer);
    }
    pthread_mutex_unlock(&r->mu);
}

void
cr__hold_drop_key(cr__renewal *r, cr__hold_kind kind, const char *key)
{
    hold *h, *tmp;

    pthread_mutex_lock(&r->mu);
    HASH_ITER(hh, r->holds, h, tmp)
        if (h->kind == kind && strcmp(h->key, key) == 0)
            remove_hold(r, h);
    pthread_mutex_unlock(&r->mu);
}

size_t
cr__hold_entries(cr__renewal *r)
{
    size_t n;

    pthread_mutex_lock(&r->mu);
    n = HASH_COUNT(r->holds);
    pthread_mutex_unlock(&r->mu);
    return n;
}

size_t
cr__hold_renewing(cr__renewal *r)
{
    size_t n;

    pthread_mutex_lock(&r->mu);
    n = r->renewing;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---------------------------------------------------------- the watchdog */

/* Wheel callback: queue the hold for renewal in this tick. */
static void
on_timer(void *userdata, cr__timer *t)
{
    cr__renewal *r = userdata;
    hold *h = t->data;
    due *d;

    if (r->ndue == r->capdue) {
        size_t cap = r->capdue ? r->capdue * 2 : 64;
        due *grown = realloc(r->due, cap * sizeof(*grown));

        if (grown == NULL) {
            /* Try again next tick rather than lose the registration. */
            cr__wheel_schedule(r->wheel, t, cr__now_ms() + RETRY_AFTER_ERROR_MS);
            return;
        }
        r->due = grown;
        r->capdue = cap;
    }
    d = &r->due[r->ndue];
    d->id = malloc(h->idlen + 1);
    if (d->id == NULL) {
        cr__wheel_schedule(r->wheel, t, cr__now_ms() + RETRY_AFTER_ERROR_MS);
        return;
    }
    memcpy(d->id, h->id, h->idlen + 1); /* with the owner's NUL */
    d->aux = NULL;
    if (h->aux != NULL && (d->aux = strdup(h->aux)) == NULL) {
        free(d->id);
        cr__wheel_schedule(r->wheel, t, cr__now_ms() + RETRY_AFTER_ERROR_MS);
        return;
    }
    d->idlen = h->idlen;
    d->gen = h->gen;
    /* In a cluster one script call may name keys of one slot only. */
    d->slot = r->client->url.is_cluster
                  ? cr__key_slot(due_key(d), strlen(due_key(d))) : 0;
    r->ndue++;
}

/* Finds the hold a due entry stands for, if it still exists; r->mu held. */
static hold *
due_hold(cr__renewal *r, const due *d)
{
    hold *h = NULL;

    HASH_FIND(hh, r->holds, d->id, d->idlen, h);
    return h != NULL && h->gen == d->gen ? h : NULL;
}

/* The kind, key and owner inside a due entry's id. */
static cr__hold_kind
due_kind(const due *d)
{
    return (cr__hold_kind)(d->id[0] - '0');
}

static const char *
due_key(const due *d)
{
    return d->id + 1;
}

static const char *
due_owner(const due *d)
{
    return d->id + 2 + strlen(d->id + 1);
}

/* qsort order of due entries: by kind, slot, key, then owner, so that a
 * batch holds one kind (and in a cluster one slot) and a hash's readers
 * sit side by side. */
static int
due_cmp(const void *a, const void *b)
{
    const due *x = a, *y = b;
    int c = (int)due_kind(x) - (int)due_kind(y);

    if (c == 0)
        c = (x->slot > y->slot) - (x->slot < y->slot);
    if (c == 0)
        c = strcmp(due_key(x), due_key(y));
    if (c == 0)
        c = strcmp(due_owner(x), due_owner(y));
    return c;
}

/* The end of the batch starting at due[from] (sorted): entries of one kind
 * and one slot, at most `batch` of them for plain holds, and the read holds
 * of at most `batch` distinct hashes for read holds. */
static size_t
batch_end(const cr__renewal *r, size_t from, size_t batch)
{
    cr__hold_kind kind = due_kind(&r->due[from]);
    unsigned slot = r->due[from].slot;
    size_t end = from + 1, keys = 1;

    for (; end < r->ndue && due_kind(&r->due[end]) == kind &&
           r->due[end].slot == slot; end++) {
        if (kind != CR__HOLD_READ) {
            if (end - from == batch)
                break;
        } else if (strcmp(due_key(&r->due[end]),
                          due_key(&r->due[end - 1])) != 0) {
            if (keys == batch)
                break;
            keys++;
        }
    }
    return end;
}

/* Builds the arguments of lock_renew.lua for due[from..from+n): KEYS the
 * lock keys, ARGV the lease then each key's owner. The strings point into
 * the due entries, which live until the due list is cleared. */
static const char **
plain_args(cr__renewal *r, size_t from, size_t n, const char *lease,
           int *nkeys, int *nargs)
{
    const char **args = calloc(2 * n + 1, sizeof(*args));
    size_t i;

    if (args == NULL)
        return NULL;
    args[n] = lease;
    for (i = 0; i < n; i++) {
        args[i] = due_key(&r->due[from + i]);
        args[n + 1 + i] = due_owner(&r->due[from + i]);
    }
    *nkeys = (int)n;
    *nargs = (int)n + 1;
    return args;
}

/* Builds the arguments of rwlock_read_renew.lua for the read holds
 * due[from..from+n), sorted by key: KEYS pairs (hash, key prefix), ARGV the
 * lease then, per hash, its number of readers and their names. The counts
 * are written into `counts` (24 bytes per hash), freed by the caller. */
static const char **
read_args(cr__renewal *r, size_t from, size_t n, const char *lease,
          char **counts, int *nkeys, int *nargs)
{
    size_t i, keys = 0, k, arg, start;
    const char **args;

    for (i = 0; i < n; i++)
        if (i == 0 || strcmp(due_key(&r->due[from + i]),
                             due_key(&r->due[from + i - 1])) != 0)
            keys++;
    args = calloc(3 * keys + n + 1, sizeof(*args));
    *counts = calloc(keys, 24);
    if (args == NULL || *counts == NULL) {
        free(args);
        free(*counts);
        *counts = NULL;
        return NULL;
    }
    args[2 * keys] = lease;
    arg = 2 * keys + 1;
    for (i = 0, k = 0; i < n; k++) {
        const due *d = &r->due[from + i];

        args[2 * k] = due_key(d);
        args[2 * k + 1] = d->aux != NULL ? d->aux : due_key(d);
        for (start = i; i < n && strcmp(due_key(&r->due[from + i]),
                                        due_key(d)) == 0; i++)
            ;
        cr__fmt_i64(*counts + 24 * k, (int64_t)(i - start));
        args[arg++] = *counts + 24 * k;
        for (; start < i; start++)
            args[arg++] = due_owner(&r->due[from + start]);
    }
    *nkeys = (int)(2 * keys);
    *nargs = (int)(keys + n + 1);
    return args;
}

/* Renews due[from..from+n) (all of one kind) in one script call and applies
 * the answers, one per entry; entered and left with r->mu held, released
 * during the call. Lost holds are appended to `lost` for their callbacks. */
static void
renew_batch(cr__renewal *r, size_t from, size_t n, lost_call *lost,
            size_t *nlost)
{
    cr_client *c = r->client;
    bool read = due_kind(&r->due[from]) == CR__HOLD_READ;
    char lease[24], *counts = NULL;
    const char **args;
    cr__reply *reply = NULL;
    cr_status rc;
    size_t i;
    int64_t now;
    int nkeys = 0, nargs = 0;

    cr__fmt_i64(lease, c->watchdog_timeout_ms);
    args = read ? read_args(r, from, n, lease, &counts, &nkeys, &nargs)
                : plain_args(r, from, n, lease, &nkeys, &nargs);
    if (args == NULL) {
        rc = CR_ENOMEM; /* retried like a failed call */
    } else {
        pthread_mutex_unlock(&r->mu);
        rc = cr__script_run(c, read ? CR__SCRIPT_RWLOCK_READ_RENEW
                                    : CR__SCRIPT_LOCK_RENEW,
                            CR__CMD_RESERVED | CR__CMD_RETRY | CR__CMD_SYNC,
                            nkeys, nargs, args, NULL, &reply);
        if (rc == CR_OK && cr__transport_sync_failed())
            cr__log(&c->log, CR_LOG_WARN, "watchdog renewal of %zu leases: "
                    "no replica acknowledged it within the sync timeout", n);
        CR__STAT_ADD(&c->stats, renewal_calls, 1);
        CR__STAT_ADD(&c->stats, renewals_sent, n);
        if (rc == CR_OK &&
            (reply->type != CR__REPLY_ARRAY || reply->elements != n))
            rc = CR_ESCRIPT;
        if (rc != CR_OK) {
            CR__STAT_ADD(&c->stats, renewal_failures, 1);
            cr__log(&c->log, CR_LOG_WARN,
                    "watchdog renewal of %zu leases failed (%s: %s); retrying",
                    n, cr_strerror(rc), cr_last_error());
        }
        pthread_mutex_lock(&r->mu);
    }
    now = cr__now_ms();
    for (i = 0; i < n; i++) {
        hold *h = due_hold(r, &r->due[from + i]);
        int64_t ok;

        if (h == NULL || !h->watchdog || h->lost || h->releasing)
            continue;
        if (rc != CR_OK) {
            cr__wheel_schedule(r->wheel, &h->timer, now + RETRY_AFTER_ERROR_MS);
        } else if (cr__reply_int(reply->element[i], &ok) && ok == 1) {
            /* A period after it fell due, not after the answer: a slow
             * round of renewals must not stretch the period. */
            cr__wheel_schedule(r->wheel, &h->timer, next_renewal(r, r->due_at));
        } else {
            h->lost = true;
            r->renewing--;
            CR__STAT_ADD(&c->stats, leases_lost, 1);
            cr__log(&c->log, CR_LOG_WARN, "lock %s lost by %s: renewal found it gone",
                    h->key, h->owner);
            if (h->fn != NULL && (lost[*nlost].key = strdup(h->key)) != NULL) {
                lost[*nlost].fn = h->fn;
                lost[*nlost].userdata = h->userdata;
                lost[*nlost].tid = h->tid;
                (*nlost)++;
            }
        }
    }
    cr__reply_free(reply);
    free(args);
    free(counts);
}

/* Renews every due hold in batches and runs the lost callbacks; r->mu held
 * on entry and exit. */
static void
renew_due(cr__renewal *r)
{
    size_t batch = (size_t)r->client->watchdog_batch, from, i, nlost = 0;
    lost_call *lost = calloc(r->ndue, sizeof(*lost));

    if (lost == NULL)
        return; /* timers stay fired: retried as the due list is kept */
    qsort(r->due, r->ndue, sizeof(*r->due), due_cmp);
    for (from = 0; from < r->ndue; from = i) {
        i = batch_end(r, from, batch);
        renew_batch(r, from, i - from, lost, &nlost);
    }
    for (i = 0; i < r->ndue; i++) {
        free(r->due[i].id);
        free(r->due[i].aux);
    }
    r->ndue = 0;
    pthread_mutex_unlock(&r->mu);
    for (i = 0; i < nlost; i++) {
        lost[i].fn(lost[i].userdata, lost[i].key, lost[i].tid);
        free(lost[i].key);
    }
    free(lost);
    pthread_mutex_lock(&r->mu);
}

/* Waits on cv until the monotonic time `deadline`. */
static void
sleep_until(cr__renewal *r, int64_t deadline)
{
    struct timespec ts;

    ts.tv_sec = deadline / 1000;
    ts.tv_nsec = (deadline % 1000) * 1000000;
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* The watchdog thread. */
static void *
watchdog(void *arg)
{
    cr__renewal *r = arg;
    int64_t tick = cr__wheel_tick_ms(r->wheel), busy_until = 0;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        /* Idle (no deadline) only when nothing is scheduled, and not in
         * the tick after a wake-up: a thread taking and releasing a lock in
         * a loop then costs a wake-up per tick, not one per acquisition. */
        if (cr__wheel_count(r->wheel) == 0 && cr__now_ms() >= busy_until) {
            r->idle = true;
            pthread_cond_wait(&r->cv, &r->mu);
            r->idle = false;
            busy_until = cr__now_ms() + tick;
        } else {
            sleep_until(r, cr__now_ms() + tick);
        }
        if (r->stop)
            break;
        r->due_at = cr__now_ms();
        cr__wheel_advance(r->wheel, r->due_at, on_timer, r);
        if (r->ndue > 0)
            renew_due(r);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ----------------------------------------------------------- life cycle */

cr_status
cr__renewal_new(cr_client *c, cr__renewal **out)
{
    cr__renewal *r = calloc(1, sizeof(*r));
    pthread_condattr_t attr;
    int64_t tick;
    cr_status rc;

    if (r == NULL)
        return CR_ENOMEM;
    r->client = c;
    r->period_ms = c->watchdog_timeout_ms / 3 > 0 ? c->watchdog_timeout_ms / 3 : 1;
    tick = r->period_ms / 20;
    tick = tick < 1 ? 1 : tick > 100 ? 100 : tick;
    r->slot_ms = r->period_ms / 10 > tick ? r->period_ms / 10 : tick;
    rc = cr__wheel_new(tick, WHEEL_BUCKETS, cr__now_ms(), &r->wheel);
    if (rc != CR_OK) {
        free(r);
        return rc;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&r->thread, NULL, watchdog, r) != 0) {
        cr__wheel_free(r->wheel);
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        return cr__fail(CR_ENOMEM, "cannot start the watchdog thread");
    }
    *out = r;
    return CR_OK;
}

void
cr__renewal_free(cr__renewal *r)
{
    hold *h, *tmp;

    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    HASH_ITER(hh, r->holds, h, tmp)
        remove_hold(r, h);
    cr__wheel_free(r->wheel);
    free(r->due);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
