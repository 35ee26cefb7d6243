/* SPDX-License-Identifier: MIT */
/*
 * The holds table and the watchdog thread.
 *
 * Entries are keyed by the bytes kind, key, NUL, owner. Most owners are
 * "<client id>:<tid>": for those the kind byte says so and the id keeps
 * only what follows the client id's colon, which saves 37 bytes per hold
 * (the full owner is written back when a renewal names it). An entry is one
 * allocation: the id (and a read hold's key prefix) sit at its end.
 *
 * The watchdog thread sleeps one wheel tick at a time while timers are
 * scheduled (and on its condition variable when none are), advances the
 * wheel, and renews the holds whose timers fired, in calls of up to
 * `watchdog_batch` keys on the transport's reserved connection. The due
 * list points at the entries themselves and is kept from round to round
 * (no allocation per due hold). While a call is under way the table is
 * unlocked; an entry removed meanwhile (released, dropped, lost and taken
 * again) is only unlinked and marked dead, and freed when the round ends,
 * so the call's arguments and the answers' bookkeeping never see freed
 * memory and a stale answer never touches a fresh entry.
 *
 * A renewed hold falls due again a period after it last fell due, not
 * after the answer came: a round that takes long (100,000 holds on a slow
 * server) does not stretch the period. Only a hold that is more than a
 * period late is scheduled from the answer instead (renewing it again at
 * once would only add to the load that made it late).
 *
 * Due holds are grouped by kind: plain holds (RLock, fair lock, write lock)
 * go to lock_renew.lua, read holds to rwlock_read_renew.lua, which takes
 * (hash, key prefix) pairs, each with the names of this client's readers of
 * that hash, and renews only their timeout keys (Redisson 4.4+). A batch
 * holds up to `watchdog_batch` plain keys, or read holds of up to that many
 * hashes. In a Redis Cluster a batch holds the keys of one hash slot only
 * (a script naming keys of two slots fails with CROSSSLOT; a read hold's
 * timeout keys carry its hash's tag); the transport routes the call by its
 * first key. Due holds are sorted by (kind, slot) to fill the batches.
 * Outside a cluster every hold has slot 0 and plain holds are not sorted.
 *
 * A call that fails in transport keeps every registration: they are tried
 * again a second later. Each batch is independent; one failing batch does
 * not stop the others (unlike Redisson, section 4.1 of the protocol).
 *
 * A call whose answer does not come by the command timeout (a stalled
 * server runs it when the stall ends) is retried the same way, but its
 * answer is kept for: the transport keeps the connection (see cr__cmd's
 * `late`), and the thread takes the answer at its next tick, or before
 * its next call, and applies it as if it had come in time. The server ran
 * the renewal after it was sent, so it proves the lease from then. It is
 * applied only to the entries the call named, and only to those neither
 * acquired nor released since (their `sets` count), since the order of
 * those on the server is not known; and it only ever moves a deadline
 * on. A call sent a lease ago or more could prove nothing any more and is
 * forgotten, and an answer that never comes proves nothing: the lease
 * clock ends the hold at its deadline as before. When the watchdog
 * thread has holds to renew again after it had none, it opens the
 * reserved connection at once, so that the first renewal does not have to
 * set one up in the middle of a stall.
 *
 * The lease clock. Every hold, leased or renewed, has a local deadline
 * (valid_until): the moment its last successful acquire or renewal was
 * sent plus its lease, less CR__LEASE_MARGIN for clocks that run at
 * different rates. A second thread, which never talks to Redis, keeps
 * these deadlines on a wheel of its own: a hold whose deadline comes is
 * lost (its callback runs, cr_lock_is_lost says so) before the server can
 * let anyone else in, however long the watchdog thread is held up in a
 * renewal. The same thread runs every lost callback, whoever found the
 * loss (the watchdog, the lease clock, the check after a failover).
 *
 * Lock order: r->mu only, taken inside the transport's reserved
 * connection mutex when a late answer comes (never the other way round:
 * no call is made with r->mu held). Lost callbacks run with it released.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "names.h"
#include "registry.h"
#include "renewal.h"
#include "scripts.h"
#include "slot.h"
#include "timer_wheel.h"

#define WHEEL_BUCKETS 512
#define RETRY_AFTER_ERROR_MS 1000

/* The lease clock's tick: a hold's loss is reported at most this long
 * before its local deadline (its timer is set a tick early). */
#define CLOCK_TICK_MS 10

/* The kind byte at the start of an id: '0' + kind for a full owner,
 * 'a' + kind when the client id and its colon were left out. */
#define KIND_FULL '0'
#define KIND_SHORT 'a'

/* Ids up to this size are built on the stack for a lookup. */
#define ID_STACK 256

#define WD_FROM_MAX ((1u << 26) - 1)

typedef struct hold {
    UT_hash_handle hh;
    cr__timer timer;
    cr__timer expiry;         /* on the lease clock, at valid_until */
    int64_t valid_until;      /* local deadline (monotonic ms) */
    int64_t since;            /* when it was taken, for the event hook
                               * (monotonic ms; 0 without a hook) */
    uint64_t seq;             /* unique among the client's entries */
    cr_lock_lost_fn fn;
    void *userdata;
    int64_t tid;
    int64_t count;
    int64_t due_ms;  /* when its timer is (was last) due */
    uint32_t idlen;  /* the hash key's bytes: kind, key, NUL, owner */
    /* Its acquisitions and releases so far, wrapping (see proved). */
    uint32_t sets;
    uint32_t order;  /* cr__due_order of its kind and key */
    unsigned aux : 1;       /* a read lock's key prefix follows the id */
    unsigned watchdog : 1;
    unsigned lost : 1;
    unsigned releasing : 1; /* an unlock is under way: answers are stale */
    unsigned queued : 1;    /* in the due list of the round under way */
    unsigned dead : 1;      /* removed while queued: freed after the round */
    /* The lowest of the count's levels taken without a lease (unlocks undo
     * the last first); 0: none. Deeper levels are stored as WD_FROM_MAX,
     * which only renews longer. */
    unsigned wd_from : 26;
    char id[];              /* id bytes, NUL, then aux and NUL if any */
} hold;

/* A hold named by a late call: its entry then, and where its id is in
 * the call's bytes. */
typedef struct late_hold {
    uint64_t seq;
    uint32_t sets;
    uint32_t idlen;
    size_t off;
} late_hold;

/* A renewal call whose answer did not come by its command timeout and is
 * kept for (the transport keeps its connection): when it was sent, and
 * the holds it named, one per answer. One allocation: the record, its
 * holds, their ids. */
typedef struct late_call {
    struct late_call *next;
    uint64_t id;      /* cr__cmd's `late` */
    int64_t sent;
    size_t n;
    late_hold *holds;
    char *ids;
} late_call;

typedef struct lost_call {
    cr_lock_lost_fn fn;
    void *userdata;
    char *key;
    int64_t tid;
} lost_call;

struct cr__renewal {
    cr_client *client;  /* where its scripts run */
    cr__renewal_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop;
    bool idle; /* the thread waits with no deadline: signal it to schedule */
    bool cluster;
    size_t client_idlen; /* strlen(cfg.id) */
    hold *holds;
    size_t renewing;
    uint64_t seqs;     /* entries made so far */
    cr__wheel *wheel;
    int64_t period_ms; /* watchdog timeout / 3 */
    int64_t slot_ms;   /* renewal times are rounded down to this */
    /* Kept from round to round; used by the watchdog thread only. */
    cr__due *due; /* timers fired in this tick */
    size_t ndue, capdue;
    const char **args; /* one call's arguments */
    size_t capargs;
    char *text;        /* full owners and reader counts of one call */
    size_t captext;
    uint32_t *sets;    /* one call's holds' sets when it was sent */
    size_t capsets;
    /* Renewal calls whose answers are kept for, newest first, and the
     * ids given so far. */
    late_call *late;
    uint64_t late_ids;
    /* The lease clock: its wheel and thread, and the lost callbacks
     * queued for it (nlost) and running now (ncalling). */
    cr__wheel *clock;
    pthread_t clock_thread;
    pthread_cond_t clock_cv;
    bool clock_idle;
    lost_call *lost;
    size_t nlost, caplost, ncalling;
    /* Signalled when no lost callback is queued or running any more (see
     * wait_lost_calls). */
    pthread_cond_t calls_done;
};

/* The entry whose key a due entry points at. */
static hold *
due_hold(const cr__due *d)
{
    return (hold *)(void *)(d->key - 1 - offsetof(hold, id));
}

/* The buffer `p` (room for *cap elements of `size` bytes) with room for
 * `need`: itself, or grown (and *cap updated); NULL when out of memory, and
 * `p` is then unchanged. */
static void *
grow(void *p, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 16;
    void *grown;

    if (need <= *cap)
        return p;
    while (n < need)
        n *= 2;
    if ((grown = realloc(p, n * size)) != NULL)
        *cap = n;
    return grown;
}

/* ------------------------------------------------------------ the table */

/* How many leading bytes of `owner` an id leaves out: the client id and
 * its colon when the owner starts with them (and is short enough to be
 * written back into CR__OWNER_MAX bytes), else none. */
static size_t
owner_skip(const cr__renewal *r, const char *owner)
{
    size_t n = r->client_idlen;

    if (strncmp(owner, r->cfg.id, n) == 0 && owner[n] == ':' &&
        strlen(owner) < CR__OWNER_MAX)
        return n + 1;
    return 0;
}

/* The bytes the id of (key, owner) takes, with its NUL. */
static size_t
id_size(const cr__renewal *r, const char *key, const char *owner)
{
    return 1 + strlen(key) + 1 + strlen(owner + owner_skip(r, owner)) + 1;
}

/* Writes the id of (kind, key, owner) with its NUL into `id` (room for
 * id_size bytes) and returns its length without that NUL. */
static size_t
write_id(const cr__renewal *r, char *id, cr__hold_kind kind, const char *key,
         const char *owner)
{
    size_t skip = owner_skip(r, owner);
    size_t klen = strlen(key), olen = strlen(owner + skip);

    id[0] = (char)((skip ? KIND_SHORT : KIND_FULL) + kind);
    memcpy(id + 1, key, klen + 1);
    memcpy(id + 2 + klen, owner + skip, olen + 1);
    return klen + olen + 2;
}

/* The key inside an entry's id. */
static const char *
hold_key(const hold *h)
{
    return h->id + 1;
}

/* The entry's owner: inside its id, or written back into `buf`
 * (CR__OWNER_MAX bytes) when the id keeps it short. */
static const char *
hold_owner(const cr__renewal *r, const hold *h, char *buf)
{
    const char *rest = h->id + 2 + strlen(h->id + 1);

    if (h->id[0] < KIND_SHORT)
        return rest;
    memcpy(buf, r->cfg.id, r->client_idlen);
    buf[r->client_idlen] = ':';
    strcpy(buf + r->client_idlen + 1, rest);
    return buf;
}

/* Finds the entry of (kind, key, owner); r->mu held. */
static hold *
find_hold(cr__renewal *r, cr__hold_kind kind, const char *key,
          const char *owner)
{
    char stack[ID_STACK], *id = stack;
    size_t size = id_size(r, key, owner), len;
    hold *h = NULL;

    if (size > sizeof(stack) && (id = malloc(size)) == NULL)
        return NULL;
    len = write_id(r, id, kind, key, owner);
    HASH_FIND(hh, r->holds, id, len, h);
    if (id != stack)
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

/* How long after a failed renewal it is tried again: a second, or half a
 * period for short watchdog timeouts, so that a few tries fit in a lease. */
static int64_t
retry_after(const cr__renewal *r)
{
    return r->period_ms / 2 < RETRY_AFTER_ERROR_MS ? r->period_ms / 2 + 1
                                                   : RETRY_AFTER_ERROR_MS;
}

/* Schedules the renewal of `h` at `at`; r->mu held. A thread that is
 * ticking sees the timer at its next tick, long before it is due; only an
 * idle one (nothing else scheduled) needs waking, or the timer would never
 * fire: a futex call and a context switch otherwise. */
static void
schedule(cr__renewal *r, hold *h, int64_t at)
{
    h->due_ms = at;
    cr__wheel_schedule(r->wheel, &h->timer, at);
    if (r->idle)
        pthread_cond_signal(&r->cv);
}

/* Before the entry of a lost hold with a callback goes (its userdata may be
 * freed once its release returns): waits until the callbacks queued in the
 * round under way have run, unless called from one of them; r->mu held.
 * Returns whether it waited (r->mu was released meanwhile). */
static bool
wait_lost_calls(cr__renewal *r, const hold *h)
{
    bool waited = false;

    if (!h->lost || h->fn == NULL ||
        pthread_equal(pthread_self(), r->clock_thread))
        return false;
    while (r->nlost > 0 || r->ncalling > 0) {
        pthread_cond_wait(&r->calls_done, &r->mu);
        waited = true;
    }
    return waited;
}

/* Sets the local deadline of `h` to `valid_until` and its timer on the
 * lease clock a tick before; r->mu held. */
static void
set_deadline(cr__renewal *r, hold *h, int64_t valid_until)
{
    h->valid_until = valid_until;
    cr__wheel_schedule(r->clock, &h->expiry, valid_until - CLOCK_TICK_MS);
    if (r->clock_idle)
        pthread_cond_signal(&r->clock_cv);
}

/* Takes `h` off the watchdog: its timer and its place in the count of
 * renewed holds; r->mu held. */
static void
stop_renewal(cr__renewal *r, hold *h)
{
    if (cr__timer_is_scheduled(&h->timer))
        cr__wheel_cancel(r->wheel, &h->timer);
    if (h->watchdog && !h->lost)
        r->renewing--;
    h->watchdog = 0;
    h->wd_from = 0;
}

/* Removes an entry: frees it, or only unlinks it while the round under
 * way still points at it; r->mu held. */
static void
remove_hold(cr__renewal *r, hold *h)
{
    stop_renewal(r, h);
    cr__wheel_cancel(r->clock, &h->expiry);
    HASH_DEL(r->holds, h);
    if (h->queued)
        h->dead = true;
    else
        free(h);
}

/* A new entry of (kind, key, owner) with `aux` (may be NULL), not yet in
 * the table; NULL when out of memory. */
static hold *
new_hold(cr__renewal *r, cr__hold_kind kind, const char *key,
         const char *owner, const char *aux)
{
    size_t size = id_size(r, key, owner);
    size_t alen = aux != NULL ? strlen(aux) + 1 : 0;
    hold *h = calloc(1, sizeof(*h) + size + alen);

    if (h == NULL || size + alen > UINT32_MAX) {
        free(h);
        return NULL;
    }
    h->idlen = (uint32_t)write_id(r, h->id, kind, key, owner);
    if (aux != NULL) {
        h->aux = 1;
        memcpy(h->id + size, aux, alen);
    }
    h->order = cr__due_order(kind, key, r->cluster);
    cr__timer_init(&h->timer, h);
    cr__timer_init(&h->expiry, h);
    return h;
}

cr_status
cr__hold_add(cr__renewal *r, cr__hold_kind kind, const char *key,
             const char *owner, const char *aux, int64_t tid, bool watchdog,
             int64_t valid_until, cr_lock_lost_fn fn, void *userdata)
{
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL && h->lost) {
        /* A fresh acquisition after a loss the owner never acknowledged:
         * start over. */
        remove_hold(r, h);
        h = NULL;
    }
    if (h == NULL) {
        if ((h = new_hold(r, kind, key, owner, aux)) == NULL) {
            pthread_mutex_unlock(&r->mu);
            return CR_ENOMEM;
        }
        h->tid = tid;
        h->seq = ++r->seqs;
        if (cr__hooked(r->cfg.stats))
            h->since = cr__now_ms();
        HASH_ADD_KEYPTR(hh, r->holds, h->id, h->idlen, h);
    }
    h->count++;
    h->sets++;
    set_deadline(r, h, valid_until);
    if (fn != NULL) {
        h->fn = fn;
        h->userdata = userdata;
    }
    if (watchdog && h->wd_from == 0)
        h->wd_from = h->count < WD_FROM_MAX ? (unsigned)h->count : WD_FROM_MAX;
    if (watchdog && !h->watchdog) {
        h->watchdog = 1;
        r->renewing++;
        schedule(r, h, next_renewal(r, cr__now_ms()));
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

bool
cr__hold_is_watchdog(cr__renewal *r, cr__hold_kind kind, const char *key,
                     const char *owner)
{
    hold *h;
    bool wd;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    wd = h != NULL && h->watchdog;
    pthread_mutex_unlock(&r->mu);
    return wd;
}

int64_t
cr__hold_release(cr__renewal *r, cr__hold_kind kind, const char *key,
                 const char *owner, bool all, int64_t valid_until)
{
    int64_t held = -1;
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL && (all || --h->count <= 0)) {
        if (wait_lost_calls(r, h) &&
            (find_hold(r, kind, key, owner) != h || !h->lost))
            h = NULL; /* replaced by a new hold during the wait */
        if (h != NULL && h->since != 0 && !h->lost)
            held = cr__now_ms() - h->since;
        if (h != NULL)
            remove_hold(r, h);
    } else if (h != NULL) {
        h->sets++;
        if (h->count < h->wd_from)
            stop_renewal(r, h); /* the levels left were all taken with a
                                 * lease: they expire by it, as in Redisson */
        if (h->releasing && h->watchdog && !h->lost) {
            /* From the unlock, whose answer may have come late: a period
             * after it was sent (two before the deadline it set), or now. */
            int64_t now = cr__now_ms(), at = next_renewal(r, now);
            int64_t by = (valid_until >= 0 ? valid_until : h->valid_until) -
                         2 * r->period_ms;

            schedule(r, h, at < by ? at : by > now ? by : now);
        }
        if (!h->lost && (valid_until >= 0 ||
                         !cr__timer_is_scheduled(&h->expiry)))
            /* The unlock set the time to live again; or it failed while
             * the deadline came (the clock let the unlock decide). */
            set_deadline(r, h, valid_until >= 0 ? valid_until
                                                : h->valid_until);
        h->releasing = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return held;
}

static void mark_lost(cr__renewal *r, hold *h, const char *why);

void
cr__hold_found_lost(cr__renewal *r, cr__hold_kind kind, const char *key,
                    const char *owner, const char *why)
{
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL && !h->lost)
        mark_lost(r, h, why);
    pthread_mutex_unlock(&r->mu);
}

int64_t
cr__hold_left(cr__renewal *r, cr__hold_kind kind, const char *key,
              const char *owner)
{
    int64_t left = -1;
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL) {
        left = h->lost ? 0 : h->valid_until - cr__now_ms();
        if (left < 0)
            left = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return left;
}

void
cr__hold_releasing(cr__renewal *r, cr__hold_kind kind, const char *key,
                   const char *owner)
{
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    if (h != NULL) {
        h->releasing = 1;
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
        if ((cr__hold_kind)(h->order >> 16) == kind &&
            strcmp(hold_key(h), key) == 0 && wait_lost_calls(r, h))
            break; /* waited: the table may have changed; look again */
    HASH_ITER(hh, r->holds, h, tmp)
        if ((cr__hold_kind)(h->order >> 16) == kind &&
            strcmp(hold_key(h), key) == 0)
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

/* ------------------------------------------------------ the batch planner */

uint32_t
cr__due_order(cr__hold_kind kind, const char *key, bool cluster)
{
    uint32_t slot = cluster ? cr__key_slot(key, strlen(key)) : 0;

    return (uint32_t)kind << 16 | slot;
}

/* qsort order of due entries: by order, then read holds by key so that a
 * hash's readers sit side by side (plain holds of one order are equal). */
static int
due_cmp(const void *a, const void *b)
{
    const cr__due *x = a, *y = b;

    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    if ((x->order >> 16) == CR__HOLD_READ)
        return strcmp(x->key, y->key);
    return 0;
}

/* Sorts due[0..n) with due_cmp unless it is in order already. */
static void
sort_run(cr__due *due, size_t n)
{
    size_t i;

    for (i = 1; i < n; i++)
        if (due_cmp(&due[i - 1], &due[i]) > 0)
            break;
    if (i < n)
        qsort(due, n, sizeof(*due), due_cmp);
}

void
cr__due_sort(cr__due *due, size_t n)
{
    size_t plain = 0, i;

    /* Plain holds first, in a linear pass; then each run by itself. */
    for (i = 0; i < n; i++) {
        if ((due[i].order >> 16) != CR__HOLD_READ) {
            cr__due tmp = due[i];

            due[i] = due[plain];
            due[plain++] = tmp;
        }
    }
    sort_run(due, plain);
    sort_run(due + plain, n - plain);
}

size_t
cr__due_batch_end(const cr__due *due, size_t n, size_t from, size_t batch)
{
    uint32_t order = due[from].order;
    bool read = (order >> 16) == CR__HOLD_READ;
    size_t end = from + 1, keys = 1;

    for (; end < n && due[end].order == order; end++) {
        if (!read) {
            if (end - from == batch)
                break;
        } else if (strcmp(due[end].key, due[end - 1].key) != 0) {
            if (keys == batch)
                break;
            keys++;
        }
    }
    return end;
}

/* ---------------------------------------------------------- the watchdog */

/* Wheel callback: queue the hold for renewal in this tick. */
static void
on_timer(void *userdata, cr__timer *t)
{
    cr__renewal *r = userdata;
    hold *h = t->data;
    cr__due *due = grow(r->due, &r->capdue, r->ndue + 1, sizeof(*due));

    if (due == NULL) {
        /* Try again later rather than lose the registration. */
        cr__wheel_schedule(r->wheel, t, cr__now_ms() + retry_after(r));
        return;
    }
    r->due = due;
    r->due[r->ndue].key = hold_key(h);
    r->due[r->ndue].order = h->order;
    r->ndue++;
    h->queued = 1;
}

/* Makes room for one call's arguments (`nargs` pointers) and text
 * (`ntext` bytes); false when out of memory. */
static bool
reserve_call(cr__renewal *r, size_t nargs, size_t ntext)
{
    const char **args = grow(r->args, &r->capargs, nargs, sizeof(*args));
    char *text;

    if (args == NULL)
        return false;
    r->args = args;
    if ((text = grow(r->text, &r->captext, ntext, 1)) == NULL)
        return false;
    r->text = text;
    return true;
}

/* Builds the arguments of lock_renew.lua for due[from..from+n) into
 * r->args: the lock keys (*nkeys), then each key's owner (*nargs). */
static bool
plain_args(cr__renewal *r, size_t from, size_t n, size_t *nkeys,
           size_t *nargs)
{
    const char **args;
    size_t i;

    if (!reserve_call(r, 2 * n, n * CR__OWNER_MAX))
        return false;
    args = r->args;
    for (i = 0; i < n; i++) {
        const cr__due *d = &r->due[from + i];

        args[i] = d->key;
        args[n + i] = hold_owner(r, due_hold(d), r->text + i * CR__OWNER_MAX);
    }
    *nkeys = n;
    *nargs = n;
    return true;
}

/* Builds the arguments of rwlock_read_renew.lua for the read holds
 * due[from..from+n), sorted by key, into r->args: pairs (hash, key
 * prefix) (*nkeys), then per hash its number of readers and their names
 * (*nargs). */
static bool
read_args(cr__renewal *r, size_t from, size_t n, size_t *nkeys,
          size_t *nargs)
{
    size_t i, keys = 0, k, arg, start;
    const char **args;
    char *counts;

    for (i = 0; i < n; i++)
        if (i == 0 || strcmp(r->due[from + i].key,
                             r->due[from + i - 1].key) != 0)
            keys++;
    if (!reserve_call(r, 3 * keys + n, n * CR__OWNER_MAX + keys * 24))
        return false;
    args = r->args;
    counts = r->text + n * CR__OWNER_MAX;
    arg = 2 * keys;
    for (i = 0, k = 0; i < n; k++) {
        const cr__due *d = &r->due[from + i];
        const hold *h = due_hold(d);

        args[2 * k] = d->key;
        args[2 * k + 1] = h->aux ? h->id + h->idlen + 1 : d->key;
        for (start = i; i < n && strcmp(r->due[from + i].key, d->key) == 0;
             i++)
            ;
        cr__fmt_i64(counts + 24 * k, (int64_t)(i - start));
        args[arg++] = counts + 24 * k;
        for (; start < i; start++)
            args[arg++] = hold_owner(r, due_hold(&r->due[from + start]),
                                     r->text + start * CR__OWNER_MAX);
    }
    *nkeys = 2 * keys;
    *nargs = keys + n;
    return true;
}

/* Marks `h` lost (`why` says how it was found) and queues its callback
 * for the lease clock's thread; r->mu held. */
static void
mark_lost(cr__renewal *r, hold *h, const char *why)
{
    char owner[CR__OWNER_MAX];
    lost_call *lost;

    h->lost = 1;
    if (h->watchdog)
        r->renewing--;
    cr__wheel_cancel(r->clock, &h->expiry);
    CR__STAT_ADD(r->cfg.stats, leases_lost, 1);
    cr__event(r->cfg.stats, CR_EVENT_LEASE_LOST, CR_ELOST,
              h->aux ? "read lock" : "lock", hold_key(h), -1, -1,
              false);
    cr__log(r->cfg.log, CR_LOG_WARN, "lock %s lost by %s: %s", hold_key(h),
            hold_owner(r, h, owner), why);
    if (h->fn == NULL)
        return;
    lost = grow(r->lost, &r->caplost, r->nlost + 1, sizeof(*lost));
    if (lost == NULL)
        return;
    r->lost = lost;
    if ((lost[r->nlost].key = strdup(hold_key(h))) != NULL) {
        lost[r->nlost].fn = h->fn;
        lost[r->nlost].userdata = h->userdata;
        lost[r->nlost].tid = h->tid;
        r->nlost++;
        pthread_cond_signal(&r->clock_cv);
    }
}

/* When a hold renewed now, due at `due`, falls due next: a period after
 * `due`, or after `now` when that is already past (more than a period
 * late: the server cannot keep up, and renewing at once would add to it). */
static int64_t
next_due(const cr__renewal *r, int64_t due, int64_t now)
{
    int64_t at = next_renewal(r, due);

    return at > now ? at : next_renewal(r, now);
}

/* A renewal of `h` sent at `sent` (when its count of acquisitions and
 * releases was `then`) found it and set the watchdog's lease again; r->mu
 * held. The server ran it after `sent`, and after every acquisition and
 * release counted before (their answers had come): its deadline moves on
 * to what the renewal proves when that is later. One counted since may
 * have run before or after it on the server: a timely answer then leaves
 * the earlier of the two deadlines, which holds whichever ran last, and a
 * late one (`late`) changes nothing. Returns whether it moved on. */
static bool
proved(cr__renewal *r, hold *h, int64_t sent, uint32_t then, bool late)
{
    int64_t until = cr__lease_valid_until(sent, r->cfg.lease_ms);

    if (h->sets != then) {
        if (!late && until < h->valid_until)
            set_deadline(r, h, until);
        return false;
    }
    if (until <= h->valid_until)
        return false;
    set_deadline(r, h, until);
    return true;
}

/* Before the call renewing due[from..from+n) goes out at `sent`: notes
 * each hold's count of acquisitions and releases in r->sets, and brings a
 * deadline later than the renewal's back to it (a level taken with a
 * lease longer than the watchdog's): once sent, the renewal may run at
 * any time and set the shorter lease. False when out of memory; r->mu
 * held. */
static bool
note_sets(cr__renewal *r, size_t from, size_t n, int64_t sent)
{
    uint32_t *sets = grow(r->sets, &r->capsets, n, sizeof(*sets));
    int64_t until = cr__lease_valid_until(sent, r->cfg.lease_ms);
    size_t i;

    if (sets == NULL)
        return false;
    r->sets = sets;
    for (i = 0; i < n; i++) {
        hold *h = due_hold(&r->due[from + i]);

        sets[i] = h->sets;
        if (!h->dead && !h->lost && h->valid_until > until)
            set_deadline(r, h, until);
    }
    return true;
}

/* Keeps a record of the call `id` renewing due[from..from+n), sent at
 * `sent`, whose answer the transport keeps for (see on_late); r->mu held.
 * Out of memory, its answer will be dropped. */
static void
keep_call(cr__renewal *r, size_t from, size_t n, int64_t sent, uint64_t id)
{
    size_t bytes = 0, i;
    late_call *call;

    for (i = 0; i < n; i++)
        bytes += due_hold(&r->due[from + i])->idlen;
    call = malloc(sizeof(*call) + n * sizeof(*call->holds) + bytes);
    if (call == NULL)
        return;
    call->id = id;
    call->sent = sent;
    call->n = n;
    call->holds = (late_hold *)(void *)(call + 1);
    call->ids = (char *)(call->holds + n);
    for (i = 0, bytes = 0; i < n; i++) {
        const hold *h = due_hold(&r->due[from + i]);

        call->holds[i].seq = h->dead ? 0 : h->seq; /* 0: matches none */
        call->holds[i].sets = r->sets[i];
        call->holds[i].idlen = h->idlen;
        call->holds[i].off = bytes;
        memcpy(call->ids + bytes, h->id, h->idlen);
        bytes += h->idlen;
    }
    call->next = r->late;
    r->late = call;
}

/* Applies the answer of a late call, one per hold, as renew_batch applies
 * a timely one, to the holds that are still the entries it named, were
 * neither acquired nor released since, and are renewed and not being
 * released: a hold found gone is lost; one it renewed stands until what
 * the renewal proves, when that is later, and is renewed again a period
 * after the call was sent (at once when that has passed: the server
 * answers again); r->mu held. */
static void
apply_late(cr__renewal *r, const late_call *call, const cr__reply *reply)
{
    int64_t now = cr__now_ms(), at = next_renewal(r, call->sent), ok;
    size_t i, moved = 0;

    if (at < now)
        at = now;
    for (i = 0; i < call->n; i++) {
        const late_hold *lh = &call->holds[i];
        hold *h = NULL;

        HASH_FIND(hh, r->holds, call->ids + lh->off, lh->idlen, h);
        if (h == NULL || h->seq != lh->seq || h->sets != lh->sets ||
            !h->watchdog || h->lost || h->releasing ||
            !cr__reply_int(reply->element[i], &ok))
            continue;
        if (ok != 1) {
            mark_lost(r, h, "a renewal found it gone");
        } else if (proved(r, h, call->sent, lh->sets, true)) {
            moved++;
            if (cr__timer_is_scheduled(&h->timer) && h->due_ms > at)
                schedule(r, h, at);
        }
    }
    cr__log(r->cfg.log, CR_LOG_INFO, "a watchdog renewal of %zu leases was "
            "answered %lld ms after it was sent, past its timeout; %zu "
            "leases stand on it", call->n, (long long)(now - call->sent),
            moved);
}

/* The transport's late_fn for renewal calls (see cr__cmd): the answer of
 * call `id`, on the watchdog thread (r->mu not held). */
static void
on_late(void *arg, uint64_t id, cr__reply *reply)
{
    cr__renewal *r = arg;
    late_call **at, *call;

    pthread_mutex_lock(&r->mu);
    for (at = &r->late; *at != NULL && (*at)->id != id; at = &(*at)->next)
        ;
    if ((call = *at) != NULL) {
        *at = call->next;
        if (reply->type == CR__REPLY_ARRAY && reply->elements == call->n)
            apply_late(r, call, reply);
        free(call);
    }
    pthread_mutex_unlock(&r->mu);
    cr__reply_free(reply);
}

/* The watchdog's care of its reserved connections between renewals:
 * takes the answers of late calls that have come (see on_late), after
 * forgetting the calls sent a lease ago or more, whose answers could prove
 * nothing any more (all of them when `all`); the transport then closes
 * the connections that owe only such answers. With `open`, opens the
 * reserved connections that are closed. r->mu held on entry and exit,
 * released meanwhile. */
static void
upkeep(cr__renewal *r, bool all, bool open)
{
    int64_t stale = cr__now_ms() - r->cfg.lease_ms;
    late_call **at = &r->late, *call;

    if (r->late == NULL && !open)
        return;
    while ((call = *at) != NULL) {
        if (all || call->sent < stale) {
            *at = call->next;
            free(call);
        } else {
            at = &call->next;
        }
    }
    if (r->late == NULL)
        stale = INT64_MAX;
    pthread_mutex_unlock(&r->mu);
    cr__reserved_upkeep(r->client, stale, open);
    pthread_mutex_lock(&r->mu);
}

/* Renews due[from..from+n) (all of one order) in one script call and
 * applies the answers, one per entry; entered and left with r->mu held,
 * released during the call. An answer that does not come by the command
 * timeout is kept for (keep_call, on_late), and meanwhile the holds are
 * retried as after a failure. */
static void
renew_batch(cr__renewal *r, size_t from, size_t n)
{
    cr_client *c = r->client;
    bool read = (r->due[from].order >> 16) == CR__HOLD_READ;
    cr__cmd cmd = {.flags = CR__CMD_RESERVED | CR__CMD_RETRY | CR__CMD_SYNC,
                   .late = ++r->late_ids, .late_fn = on_late, .late_arg = r};
    cr__reply *reply = NULL;
    cr__op op;
    cr_status rc;
    size_t i, nkeys = 0, nargs = 0;
    int64_t now, sent = cr__now_ms(), lease = r->cfg.lease_ms;

    if (!(read ? read_args(r, from, n, &nkeys, &nargs)
               : plain_args(r, from, n, &nkeys, &nargs)) ||
        !note_sets(r, from, n, sent)) {
        rc = CR_ENOMEM; /* retried like a failed call */
    } else {
        pthread_mutex_unlock(&r->mu);
        cr__op_begin(&op, c, -1);
        if (read)
            rc = cr__run_rwlock_read_renew(&op, &cmd,
                &(cr__rwlock_read_renew_args){
                    .pairs = r->args, .n_pairs = nkeys, .lease_ms = lease,
                    .readers = r->args + nkeys, .n_readers = nargs},
                &reply);
        else
            rc = cr__run_lock_renew(&op, &cmd,
                &(cr__lock_renew_args){
                    .locks = r->args, .n_locks = nkeys, .lease_ms = lease,
                    .owners = r->args + nkeys, .n_owners = nargs},
                &reply);
        if (rc == CR_OK && cmd.sync != CR_OK)
            cr__log(r->cfg.log, CR_LOG_WARN, "watchdog renewal of %zu leases: %s",
                    n, cr_last_error());
        CR__STAT_ADD(r->cfg.stats, renewal_calls, 1);
        CR__STAT_ADD(r->cfg.stats, renewals_sent, n);
        if (rc == CR_OK &&
            (reply->type != CR__REPLY_ARRAY || reply->elements != n))
            rc = CR_ESCRIPT;
        if (rc != CR_OK) {
            CR__STAT_ADD(r->cfg.stats, renewal_failures, 1);
            cr__event(r->cfg.stats, CR_EVENT_RENEWAL_FAILED, rc, NULL, NULL,
                      -1, -1, false);
            cr__log(r->cfg.log, CR_LOG_WARN,
                    "watchdog renewal of %zu leases failed (%s: %s); "
                    "retrying%s", n, cr_strerror(rc), cr_last_error(),
                    cmd.kept ? ", and its answer is still awaited" : "");
        }
        pthread_mutex_lock(&r->mu);
        if (rc != CR_OK && cmd.kept)
            keep_call(r, from, n, sent, cmd.late);
    }
    now = cr__now_ms();
    for (i = 0; i < n; i++) {
        hold *h = due_hold(&r->due[from + i]);
        int64_t ok;

        if (h->dead || !h->watchdog || h->lost || h->releasing ||
            cr__timer_is_scheduled(&h->timer))
            continue;
        if (rc != CR_OK) {
            schedule(r, h, now + retry_after(r));
        } else if (cr__reply_int(reply->element[i], &ok) && ok == 1) {
            schedule(r, h, next_due(r, h->due_ms, now));
            proved(r, h, sent, r->sets[i], false);
        } else {
            mark_lost(r, h, "a renewal found it gone");
        }
    }
    cr__reply_free(reply);
}

/* Renews every due hold in batches and frees the entries removed
 * meanwhile; r->mu held on entry and exit. */
static void
renew_due(cr__renewal *r)
{
    size_t batch = (size_t)r->cfg.batch, from, i;

    cr__due_sort(r->due, r->ndue);
    for (from = 0; from < r->ndue; from = i) {
        i = cr__due_batch_end(r->due, r->ndue, from, batch);
        renew_batch(r, from, i - from);
    }
    for (i = 0; i < r->ndue; i++) {
        hold *h = due_hold(&r->due[i]);

        h->queued = 0;
        if (h->dead)
            free(h);
    }
    r->ndue = 0;
}

/* Frees the buffers kept from round to round (nothing is renewed now:
 * a client that held many locks once does not keep their due list). */
static void
drop_buffers(cr__renewal *r)
{
    free(r->due);
    free(r->args);
    free(r->text);
    free(r->sets);
    r->due = NULL;
    r->args = NULL;
    r->text = NULL;
    r->sets = NULL;
    r->capdue = r->capargs = r->captext = r->capsets = 0;
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
    bool woke = false;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        /* Idle (no deadline) only when nothing is scheduled, and not in
         * the tick after a wake-up: a thread taking and releasing a lock in
         * a loop then costs a wake-up per tick, not one per acquisition. */
        if (cr__wheel_count(r->wheel) == 0 && cr__now_ms() >= busy_until) {
            if (r->late != NULL) {
                upkeep(r, true, false); /* nothing is renewed any more */
                continue;
            }
            drop_buffers(r);
            r->idle = true;
            pthread_cond_wait(&r->cv, &r->mu);
            r->idle = false;
            busy_until = cr__now_ms() + tick;
            woke = true;
        } else {
            sleep_until(r, cr__now_ms() + tick);
        }
        if (r->stop)
            break;
        /* Holds to renew again: their first renewal finds its connection
         * set up, even when the server stalls meanwhile. */
        upkeep(r, false, woke);
        woke = false;
        cr__wheel_advance(r->wheel, cr__now_ms(), on_timer, r);
        if (r->ndue > 0)
            renew_due(r);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ------------------------------------------------------- the lease clock */

/* Lease clock callback: the hold's local deadline has come. An unlock
 * under way decides by its answer instead. */
static void
on_expiry(void *userdata, cr__timer *t)
{
    cr__renewal *r = userdata;
    hold *h = t->data;

    if (!h->lost && !h->releasing)
        mark_lost(r, h, "its lease ran out on this host's clock before a "
                  "renewal succeeded");
}

/* Runs the lost callbacks queued so far, with r->mu released. */
static void
run_lost_calls(cr__renewal *r)
{
    lost_call *calls = r->lost;
    size_t n = r->nlost, i;

    if (n == 0)
        return;
    r->lost = NULL;
    r->nlost = r->caplost = 0;
    r->ncalling = n;
    pthread_mutex_unlock(&r->mu);
    for (i = 0; i < n; i++) {
        calls[i].fn(calls[i].userdata, calls[i].key, calls[i].tid);
        free(calls[i].key);
    }
    free(calls);
    pthread_mutex_lock(&r->mu);
    r->ncalling = 0;
    pthread_cond_broadcast(&r->calls_done);
}

/* The lease clock's thread: ticks while deadlines are set, fires them,
 * runs lost callbacks; never talks to Redis. */
static void *
lease_clock(void *arg)
{
    cr__renewal *r = arg;
    struct timespec ts;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        if (cr__wheel_count(r->clock) == 0 && r->nlost == 0) {
            r->clock_idle = true;
            pthread_cond_wait(&r->clock_cv, &r->mu);
            r->clock_idle = false;
        } else if (r->nlost == 0) {
            int64_t at = cr__now_ms() + CLOCK_TICK_MS;

            ts.tv_sec = at / 1000;
            ts.tv_nsec = (at % 1000) * 1000000;
            pthread_cond_timedwait(&r->clock_cv, &r->mu, &ts);
        }
        if (r->stop)
            break;
        cr__wheel_advance(r->clock, cr__now_ms(), on_expiry, r);
        run_lost_calls(r);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int64_t
cr__lease_valid_until(int64_t sent_ms, int64_t lease_ms)
{
    return sent_ms + lease_ms - CR__LEASE_MARGIN(lease_ms);
}

/* ----------------------------------------------------------- life cycle */

cr_status
cr__renewal_new(cr_client *c, const cr__renewal_config *cfg,
                cr__renewal **out)
{
    cr__renewal *r = calloc(1, sizeof(*r));
    pthread_condattr_t attr;
    int64_t tick, now = cr__now_ms();
    bool watchdog_started = false;
    cr_status rc;

    if (r == NULL)
        return CR_ENOMEM;
    r->client = c;
    r->cfg = *cfg;
    r->cluster = cfg->cluster;
    r->client_idlen = strlen(cfg->id);
    r->period_ms = cfg->lease_ms / 3 > 0 ? cfg->lease_ms / 3 : 1;
    tick = r->period_ms / 20;
    tick = tick < 1 ? 1 : tick > 100 ? 100 : tick;
    r->slot_ms = r->period_ms / 10 > tick ? r->period_ms / 10 : tick;
    rc = cr__wheel_new(tick, WHEEL_BUCKETS, now, &r->wheel);
    if (rc == CR_OK)
        rc = cr__wheel_new(CLOCK_TICK_MS, WHEEL_BUCKETS, now, &r->clock);
    if (rc != CR_OK) {
        cr__wheel_free(r->wheel);
        free(r);
        return rc;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &attr);
    pthread_cond_init(&r->clock_cv, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&r->calls_done, NULL);
    if (pthread_create(&r->thread, NULL, watchdog, r) != 0 ||
        !(watchdog_started = true) ||
        pthread_create(&r->clock_thread, NULL, lease_clock, r) != 0) {
        if (watchdog_started) {
            pthread_mutex_lock(&r->mu);
            r->stop = true;
            pthread_cond_signal(&r->cv);
            pthread_mutex_unlock(&r->mu);
            pthread_join(r->thread, NULL);
        }
        cr__wheel_free(r->wheel);
        cr__wheel_free(r->clock);
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        pthread_cond_destroy(&r->clock_cv);
        pthread_cond_destroy(&r->calls_done);
        free(r);
        return cr__fail(CR_ENOMEM, "cannot start the watchdog threads");
    }
    *out = r;
    return CR_OK;
}

void
cr__renewal_free(cr__renewal *r)
{
    hold *h, *tmp;
    size_t i;

    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_cond_signal(&r->clock_cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_join(r->clock_thread, NULL);
    HASH_ITER(hh, r->holds, h, tmp)
        remove_hold(r, h);
    cr__wheel_free(r->wheel);
    cr__wheel_free(r->clock);
    drop_buffers(r);
    for (i = 0; i < r->nlost; i++)
        free(r->lost[i].key);
    free(r->lost);
    while (r->late != NULL) {
        late_call *call = r->late;

        r->late = call->next;
        free(call);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    pthread_cond_destroy(&r->clock_cv);
    pthread_cond_destroy(&r->calls_done);
    free(r);
}

/* One hold to look for on a new master. */
typedef struct check {
    uint64_t seq;
    cr__hold_kind kind;
    char *key;
    char owner[CR__OWNER_MAX];
} check;

/* Asks the master whether `owner` still has a field in hash `key` (both
 * hold kinds count their holds there). CR_OK with *there, or the failure. */
static cr_status
still_there(cr__renewal *r, const char *key, const char *owner, bool *there)
{
    const char *argv[3] = {"HEXISTS", key, owner};
    cr__reply *reply = NULL;
    int64_t v = 0;
    cr__op op;
    cr_status rc;

    cr__op_begin(&op, r->client, -1);
    rc = cr__command_retry(&op, 3, argv, NULL, &reply);

    if (rc != CR_OK)
        return rc;
    *there = cr__reply_int(reply, &v) && v == 1;
    cr__reply_free(reply);
    return CR_OK;
}

/* Marks the entry of `k` lost when it is still the one checked. */
static void
lost_on_new_master(cr__renewal *r, const check *k)
{
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, k->kind, k->key, k->owner);
    if (h != NULL && h->seq == k->seq && !h->lost)
        mark_lost(r, h, "the new master after a failover does not have it "
                  "(it stayed behind on the old one)");
    pthread_mutex_unlock(&r->mu);
}

void
cr__renewal_master_moved(cr__renewal *r)
{
    check *checks = NULL;
    size_t n = 0, i, failed = 0;
    hold *h, *tmp;
    char owner[CR__OWNER_MAX];

    pthread_mutex_lock(&r->mu);
    if (HASH_COUNT(r->holds) > 0)
        checks = calloc(HASH_COUNT(r->holds), sizeof(*checks));
    HASH_ITER(hh, r->holds, h, tmp) {
        if (checks == NULL || h->lost ||
            (checks[n].key = strdup(hold_key(h))) == NULL)
            continue;
        checks[n].seq = h->seq;
        checks[n].kind = (cr__hold_kind)(h->order >> 16);
        snprintf(checks[n].owner, sizeof(checks[n].owner), "%s",
                 hold_owner(r, h, owner));
        n++;
    }
    pthread_mutex_unlock(&r->mu);
    for (i = 0; i < n; i++) {
        bool there = true;

        if (still_there(r, checks[i].key, checks[i].owner, &there) != CR_OK)
            failed++;
        else if (!there)
            lost_on_new_master(r, &checks[i]);
        free(checks[i].key);
    }
    free(checks);
    if (failed > 0)
        cr__log(r->cfg.log, CR_LOG_WARN, "after the failover, %zu of %zu "
                "holds could not be checked on the new master (%s); their "
                "renewals will tell", failed, n, cr_last_error());
}

void
cr__hold_verify(cr__renewal *r, cr__hold_kind kind, const char *key,
                const char *owner)
{
    check k;
    bool there = true;
    hold *h;

    pthread_mutex_lock(&r->mu);
    h = find_hold(r, kind, key, owner);
    k.seq = h != NULL ? h->seq : 0;
    pthread_mutex_unlock(&r->mu);
    if (h == NULL || still_there(r, key, owner, &there) != CR_OK || there)
        return;
    k.kind = kind;
    k.key = (char *)key;
    snprintf(k.owner, sizeof(k.owner), "%s", owner);
    lost_on_new_master(r, &k);
}
