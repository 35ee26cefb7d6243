/* SPDX-License-Identifier: MIT */
/*
 * The cyclic barrier (include/credisson/barrier.h; its protocol is in
 * doc/coordination.md): the hash N (parties, generation, arrived, broken,
 * each waiting party's arrival index, the outcomes of recent generations),
 * the waiting parties with their lease deadlines in the zset
 * credisson_barrier_arrivals:{N}, and the channels
 * credisson_barrier__channel:{N}:0 and :1, of the even and the odd
 * generations (0: a round completed; 1: a round broken, a reset, a
 * deletion).
 *
 * An await runs through the shared waiting loop (wait.c): its first attempt
 * is the arrival (barrier_arrive.lua), later ones a look
 * (barrier_look.lua) that renews the party's lease and breaks the round
 * when another party's lease has lapsed on the server's clock, when one is
 * due: the waiter sleeps until a message, the earliest lease it knows of,
 * or a third of its own lease (when it must renew), whichever comes first,
 * and a wake-up before a look is due only reads its round's outcome.
 * A message wakes every local waiter. A round's completion names its
 * generation and the barrier's creation stamp (0:<g>:<since>), and the
 * subscription keeps the last one it read: a party that hears its own
 * round's is released without a command (see cr__barrier_next); after
 * any other wake-up it reads the outcome of its own generation, which the
 * hash keeps, so a message missed, read late or about a later round
 * cannot mislead it.
 *
 * A wait that ends without an outcome (its time ran out, the client is
 * being freed, Redis stayed unreachable) leaves (barrier_leave.lua), which
 * breaks the round unless it ended first. An arrival whose reply was lost
 * is simply sent again: the script finds the party waiting and keeps its
 * arrival.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barrier.h"
#include "request.h"

#define BARRIER_MAGIC 0x43524252u /* "CRBR" */

/* Outcomes kept in the hash: a waiter that looks more generations late
 * than this finds its own forgotten (and reports its round broken). */
#define OUTCOMES_KEPT 64

/* The answers of the scripts (the first element of their replies). */
#define ANSWER_WAITING 0
#define ANSWER_COMPLETED 1
#define ANSWER_BROKEN 2
#define ANSWER_OTHER_PARTIES 3 /* barrier_arrive.lua */
#define ANSWER_BROKE_IT 3      /* barrier_leave.lua */
#define ANSWER_GONE 4

static void free_parts(void *obj);

struct cr_barrier {
    CR__OBJECT_FIELDS
    int64_t parties;
    char *arrivals;   /* credisson_barrier_arrivals:{N} */
    char *channel[2]; /* credisson_barrier__channel:{N}:0 and :1, of the
                       * even and the odd generations */
    atomic_int_fast64_t next; /* the generation an arrival most likely
                               * joins: the last released + 1 */
};

/* The await in halves, script calls and the reading of their replies, so
 * that the blocking call and the loop's request send the same
 * (doc/coordination.md has the protocol):
 *
 * party_begin: a party of `b` whose owner id is `owner_id` (a thread's, or
 * an asynchronous request's), leased for the client's watchdog timeout,
 * listening first to the channel of the generation the handle expects.
 * wait_spec: the wait of party p for wait_ms, on the channel of the
 * generation it expects (once arrived: the one it joined). wait_left:
 * what is left at `now` of wait w (-1: no limit), for a new wait after an
 * arrival that joined a generation of the other parity
 * (CR__BARRIER_AGAIN). must_leave: a wait that ended with rc leaves (an
 * arrived party without an outcome).
 *
 * The arrival (reply: CR_BUSY waiting, with the hint; CR_OK this arrival
 * completed the round; CR__BARRIER_AGAIN it joined a generation of the
 * other parity, waiting; CR_EBROKEN; CR_EINVAL other parties...), a look
 * (which renews the party's lease and breaks the round when another's has
 * lapsed: CR_BUSY with the hint, CR_OK completed, CR_EBROKEN...), the
 * quick look of a wake-up before the look is due (HMGET: argv and its
 * `field` buffer; reply: CR_OK, CR_EBROKEN, CR_BUSY with the time left to
 * the look as the hint, or *look set: the look is due now), and the leave
 * of a wait that ended without an outcome `rc` (the message `why`; the
 * await's status from its reply, `left` being how the call went: CR_OK
 * when the round completed first, CR_EBROKEN when it was broken first,
 * CR_TIMEOUT for a wait that ran out, rc CR_BUSY, else rc: the round is
 * broken; only for an arrived party). Replies are freed; rc is how the
 * call went. leave_later: the leave in the background, one try, for an
 * arrived party whose await ended without it (a request whose bound
 * passed or whose handle was freed). await_ended: the handle expects the
 * next generation after the party's. */
static void party_begin(cr__barrier_party *p, cr_barrier *b,
                        int64_t owner_id);
static void wait_spec(cr__barrier_party *p, int64_t wait_ms,
                      cr__wait_spec *spec);
static int64_t wait_left(const cr__wait *w, int64_t now);
static bool must_leave(const cr__barrier_party *p, cr_status rc);
static cr_status arrive_call(const cr__barrier_party *p,
                             cr__script_call *call);
static cr_status arrive_reply(cr__barrier_party *p, cr_status rc,
                              cr__reply *r, int64_t *hint);
static cr_status look_call(const cr__barrier_party *p, cr__script_call *call);
static cr_status look_reply(cr__barrier_party *p, cr_status rc, cr__reply *r,
                            int64_t *hint);
static void quick_argv(const cr__barrier_party *p, const char *argv[4],
                       char field[32]);
static cr_status quick_reply(cr__barrier_party *p, cr_status rc, cr__reply *r,
                             int64_t *hint, bool *look);
static cr_status leave_call(const cr__barrier_party *p,
                            cr__script_call *call);
static cr_status leave_reply(const cr__barrier_party *p, cr_status rc,
                             const char *why, cr_status left, cr__reply *r);
static void leave_later(const cr__barrier_party *p);
static void await_ended(const cr__barrier_party *p);

/* The guard of every call (*op: the call's operation; end it with
 * cr__object_leave). */
static cr_status
enter(const cr_barrier *b, cr__op *op)
{
    return cr__object_enter(b, BARRIER_MAGIC, "barrier", op);
}

/* ------------------------------------------------------------- creation */

cr_status
cr_barrier_new(cr_client *c, const char *name, int64_t parties,
               cr_barrier **out)
{
    cr_barrier *b = NULL;
    char *base;
    cr_status rc = cr__check_out(out, "out");

    if (rc == CR_OK)
        rc = cr__check_range("parties", parties, 1, CR_BARRIER_PARTIES_MAX);
    if (rc == CR_OK)
        rc = cr__object_new(c, name, BARRIER_MAGIC, sizeof(*b), true,
                            (void **)&b);
    if (rc != CR_OK)
        return rc;
    b->parties = parties;
    atomic_init(&b->next, 0);
    b->arrivals = cr__name(CR__NAME_BARRIER_ARRIVALS, b->raw);
    base = cr__name(CR__NAME_BARRIER_CHANNEL, b->raw);
    if (base != NULL) {
        b->channel[0] = cr__name_suffixed(base, "0");
        b->channel[1] = cr__name_suffixed(base, "1");
        free(base);
    }
    if (b->arrivals == NULL || b->channel[0] == NULL || b->channel[1] == NULL) {
        cr__object_free(b, free_parts);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    *out = b;
    return CR_OK;
}

/* Frees what the handle owns beside its names. */
static void
free_parts(void *obj)
{
    cr_barrier *b = obj;

    free(b->arrivals);
    free(b->channel[0]);
    free(b->channel[1]);
}

void
cr_barrier_free(cr_barrier *b)
{
    if (b == NULL || b->magic != BARRIER_MAGIC)
        return;
    cr__object_free(b, free_parts);
}

const char *
cr_barrier_name(const cr_barrier *b)
{
    return cr__object_name(b, BARRIER_MAGIC);
}

/* -------------------------------------------------------------- waiting */

/* The barrier's messages: 0:<g>:<since> (generation g completed, kept:
 * see cr__barrier_next) and 1 (broken, reset, deleted) wake every waiter,
 * as does the bare 0 an older credisson publishes for a completion. */
cr__wake
cr__barrier_decode(const char *payload, size_t len)
{
    int64_t n;

    if (len > 2 && payload[0] == '0' && payload[1] == ':')
        return (cr__wake){.wakes = CR__WAKE_ALL, .kept = true};
    if (!cr__parse_i64(payload, len, &n))
        return (cr__wake){0};
    return (cr__wake){.wakes = CR__WAKE_ALL};
}

/* Whether the subscription of the party's wait has read its round's
 * completion (see cr__barrier_next). */
static bool
heard(const cr__barrier_party *p, const cr__wait *w)
{
    char msg[CR__KEPT_MAX];
    int n;

    if (w->sub == NULL)
        return false;
    n = snprintf(msg, sizeof(msg), "0:%lld:%lld", (long long)p->generation,
                 (long long)p->since);
    return n > 0 && (size_t)n < sizeof(msg) &&
           w->subs->heard(w->subs_ctx, w->sub, msg, (size_t)n);
}

cr__barrier_step
cr__barrier_next(const cr__barrier_party *p, const cr__wait *w, int64_t now)
{
    if (!p->arrived)
        return CR__BARRIER_ARRIVE;
    if (heard(p, w))
        return CR__BARRIER_HEARD;
    return now < p->look_due ? CR__BARRIER_QUICK : CR__BARRIER_LOOK;
}


/* One await under way. */
typedef cr__barrier_party await_ctx;

static void
party_begin(cr__barrier_party *p, cr_barrier *b, int64_t owner_id)
{
    memset(p, 0, sizeof(*p));
    p->barrier = b;
    p->lease_ms = b->client->watchdog_timeout_ms;
    cr__name_owner(b->client->id, owner_id, false, p->owner);
    p->parity = (int)(atomic_load(&b->next) % 2);
}

static void
await_ended(const cr__barrier_party *p)
{
    if (p->arrived)
        atomic_store(&p->barrier->next, p->generation + 1);
}

/* The elements of a script's reply: *n integers into v (at most max);
 * CR_ESCRIPT otherwise. Frees r. */
static cr_status
reply_ints(const cr_barrier *b, cr__reply *r, int64_t *v, size_t max,
           size_t *n)
{
    size_t i;
    cr_status rc = CR_OK;

    if (r->type != CR__REPLY_ARRAY || r->elements == 0 || r->elements > max)
        rc = CR_ESCRIPT;
    for (i = 0; rc == CR_OK && i < r->elements; i++)
        if (!cr__reply_int(r->element[i], &v[i]))
            rc = CR_ESCRIPT;
    *n = rc == CR_OK ? r->elements : 0;
    cr__reply_free(r);
    if (rc != CR_OK)
        return cr__fail(rc, "barrier %s: a script replied no list of "
                        "integers", b->name);
    return CR_OK;
}

/* The hint of a waiting answer: the earliest lease's lapse, and at the
 * latest the next renewal of this party's own (a third of its lease); the
 * next look is due then. */
static int64_t
hint_of(await_ctx *a, int64_t lapse_ms)
{
    int64_t renew = a->lease_ms / 3 > 0 ? a->lease_ms / 3 : 1;
    int64_t hint = lapse_ms < renew ? lapse_ms : renew;

    a->look_due = cr__now_ms() + hint;
    return hint;
}

static cr_status
arrive_call(const cr__barrier_party *a, cr__script_call *call)
{
    const cr_barrier *b = a->barrier;

    return cr__build_barrier_arrive(
        &(cr__barrier_arrive_args){
            .barrier = b->raw, .arrivals = b->arrivals,
            .even = b->channel[0], .odd = b->channel[1],
            .parties = b->parties, .owner = a->owner, .lease_ms = a->lease_ms,
            .publish = b->client->publish_cmd, .keep = OUTCOMES_KEPT},
        call);
}

/* The arrival's answer: CR_BUSY (waiting, with the hint), CR_OK (this
 * arrival completed the round), CR_EBROKEN, CR_EINVAL (other parties)... */
static cr_status
arrival_answer(await_ctx *a, cr_status rc, cr__reply *r, int64_t *hint)
{
    cr_barrier *b = a->barrier;
    int64_t v[5];
    size_t n = 0;

    if (rc != CR_OK || (rc = reply_ints(b, r, v, 5, &n)) != CR_OK)
        return rc;
    switch (v[0]) {
    case ANSWER_WAITING:
        if (n != 5)
            break;
        a->arrived = true;
        a->generation = v[1];
        a->index = v[2];
        a->since = v[4];
        *hint = hint_of(a, v[3]);
        return CR_BUSY;
    case ANSWER_COMPLETED:
        if (n != 3)
            break;
        a->arrived = true; /* for await_ended: the next round */
        a->generation = v[1];
        a->index = v[2];
        return CR_OK;
    case ANSWER_BROKEN:
        return cr__fail(CR_EBROKEN, "barrier %s is broken (generation %lld): "
                        "reset it to begin a new round", b->name,
                        n > 1 ? (long long)v[1] : -1LL);
    case ANSWER_OTHER_PARTIES:
        return cr__fail(CR_EINVAL, "barrier %s has %lld parties, not %lld",
                        b->name, (long long)v[1], (long long)b->parties);
    }
    return cr__fail(CR_ESCRIPT, "barrier %s: the arrival replied %lld",
                    b->name, (long long)v[0]);
}

static cr_status
arrive_reply(cr__barrier_party *a, cr_status rc, cr__reply *r,
                         int64_t *hint)
{
    rc = arrival_answer(a, rc, r, hint);
    if (rc == CR_BUSY && a->generation % 2 != a->parity)
        return CR__BARRIER_AGAIN;
    return rc;
}

static cr_status
look_call(const cr__barrier_party *a, cr__script_call *call)
{
    const cr_barrier *b = a->barrier;

    return cr__build_barrier_look(
        &(cr__barrier_look_args){
            .barrier = b->raw, .arrivals = b->arrivals,
            .even = b->channel[0], .odd = b->channel[1],
            .owner = a->owner, .generation = a->generation,
            .lease_ms = a->lease_ms, .publish = b->client->publish_cmd,
            .keep = OUTCOMES_KEPT},
        call);
}

/* A look while waiting: CR_BUSY (waiting, with the hint), CR_OK
 * (completed), CR_EBROKEN... */
static cr_status
look_reply(cr__barrier_party *a, cr_status rc, cr__reply *r,
                       int64_t *hint)
{
    cr_barrier *b = a->barrier;
    int64_t v[2];
    size_t n = 0;

    if (rc != CR_OK || (rc = reply_ints(b, r, v, 2, &n)) != CR_OK)
        return rc;
    switch (v[0]) {
    case ANSWER_WAITING:
        if (n != 2)
            break;
        *hint = hint_of(a, v[1]);
        return CR_BUSY;
    case ANSWER_COMPLETED:
        return CR_OK;
    case ANSWER_BROKEN:
        return cr__fail(CR_EBROKEN, "barrier %s: the round of generation %lld "
                        "was broken (a party timed out, was cancelled or "
                        "died, or the barrier was reset)", b->name,
                        (long long)a->generation);
    case ANSWER_GONE:
        return cr__fail(CR_EBROKEN, "barrier %s: the round of generation %lld "
                        "is gone (the barrier was deleted)", b->name,
                        (long long)a->generation);
    }
    return cr__fail(CR_ESCRIPT, "barrier %s: a look replied %lld", b->name,
                    (long long)v[0]);
}

static cr_status
look(const cr__op *op, await_ctx *a, int64_t *hint)
{
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr_status rc = look_call(a, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return look_reply(a, rc, r, hint);
}

static void
quick_argv(const cr__barrier_party *a, const char *argv[4],
                       char field[32])
{
    snprintf(field, 32, "o:%lld", (long long)a->generation);
    argv[0] = "HMGET";
    argv[1] = a->barrier->raw;
    argv[2] = field;
    argv[3] = "generation";
}

/* A wake-up before the next look is due (a message, most likely): reads
 * the outcome of the party's round and the generation (HMGET N o:<g>
 * generation), cheaper for the server than a look. CR_OK (completed),
 * CR_EBROKEN, or CR_BUSY with the time left to the look as the hint; a
 * generation gone or moved on without an outcome asks for the look now. */
static cr_status
quick_reply(cr__barrier_party *a, cr_status rc, cr__reply *r,
                        int64_t *hint, bool *look_now)
{
    cr_barrier *b = a->barrier;
    int64_t g = -1, left;

    *look_now = false;
    if (rc != CR_OK)
        return rc;
    if (r->type != CR__REPLY_ARRAY || r->elements != 2) {
        cr__reply_free(r);
        return cr__fail(CR_ESCRIPT, "barrier %s: HMGET replied no pair",
                        b->name);
    }
    if (r->element[0]->type == CR__REPLY_STRING) {
        bool completed = r->element[0]->len == 1 && r->element[0]->str[0] == '1';

        cr__reply_free(r);
        if (completed)
            return CR_OK;
        return cr__fail(CR_EBROKEN, "barrier %s: the round of generation %lld "
                        "was broken (a party timed out, was cancelled or "
                        "died, or the barrier was reset)", b->name,
                        (long long)a->generation);
    }
    if (!cr__reply_int(r->element[1], &g) || g != a->generation)
        a->look_due = 0; /* deleted, or moved on: the look tells */
    cr__reply_free(r);
    left = a->look_due - cr__now_ms();
    if (left <= 0) {
        *look_now = true;
        return CR_BUSY;
    }
    *hint = left;
    return CR_BUSY;
}

static cr_status
quick_look(const cr__op *op, await_ctx *a, int64_t *hint)
{
    const char *argv[4];
    char field[32];
    cr__reply *r = NULL;
    bool look_now = false;
    cr_status rc;

    quick_argv(a, argv, field);
    rc = cr__command_retry(op, 4, argv, NULL, &r);
    rc = quick_reply(a, rc, r, hint, &look_now);
    return look_now ? look(op, a, hint) : rc;
}

/* One attempt of the wait.
 *
 * A round's end is published on the channel of its generation's parity,
 * so that the parties of two successive rounds never share a subscription:
 * pub/sub hands a message's wake-ups to the waiters of a subscription in
 * the order they first slept, and a party of the next round sleeping
 * before a slow party of this one would take the wake-up meant for it
 * (and leave it asleep until it looks again). The wait listens to the
 * channel of the generation the handle expects; an arrival that joined a
 * generation of the other parity ends the wait (CR__BARRIER_AGAIN) and a
 * new one begins on the right channel. */
static cr_status
try_once(const cr__op *op, await_ctx *a, const cr__wait *w, int64_t *hint)
{
    cr_status rc;

    *hint = -1;
    switch (cr__barrier_next(a, w, cr__now_ms())) {
    case CR__BARRIER_ARRIVE: {
        cr__script_call call = {0};
        cr__cmd cmd = {.flags = CR__CMD_RETRY};
        cr__reply *r = NULL;

        rc = arrive_call(a, &call);
        if (rc == CR_OK)
            rc = cr__script_call_run(op, &cmd, &call, &r);
        cr__script_call_free(&call);
        return arrive_reply(a, rc, r, hint);
    }
    case CR__BARRIER_HEARD:
        return CR_OK;
    case CR__BARRIER_QUICK:
        return quick_look(op, a, hint);
    default:
        return look(op, a, hint);
    }
}

static cr_status
leave_call(const cr__barrier_party *a, cr__script_call *call)
{
    const cr_barrier *b = a->barrier;

    return cr__build_barrier_leave(
        &(cr__barrier_leave_args){
            .barrier = b->raw, .arrivals = b->arrivals,
            .even = b->channel[0], .odd = b->channel[1],
            .owner = a->owner, .generation = a->generation,
            .publish = b->client->publish_cmd, .keep = OUTCOMES_KEPT},
        call);
}

static cr_status
leave_reply(const cr__barrier_party *a, cr_status rc,
                        const char *why, cr_status left, cr__reply *r)
{
    const cr_barrier *b = a->barrier;
    int64_t v[1];
    size_t n = 0;

    if (left == CR_OK)
        left = reply_ints(b, r, v, 1, &n);
    if (left != CR_OK) {
        /* Not left (nor known to be there): the lease ends it. */
        return cr__fail(rc, "%s", why);
    }
    switch (v[0]) {
    case ANSWER_COMPLETED:
        return CR_OK;
    case ANSWER_BROKEN:
    case ANSWER_GONE:
        return cr__fail(CR_EBROKEN, "barrier %s: the round of generation %lld "
                        "was broken before this party's wait ended", b->name,
                        (long long)a->generation);
    default:
        if (rc == CR_BUSY)
            return cr__fail(CR_TIMEOUT, "barrier %s: %lld of %lld parties did "
                            "not arrive in time; the round (generation %lld) "
                            "is broken", b->name, (long long)a->index,
                            (long long)b->parties, (long long)a->generation);
        return cr__fail(rc, "%s (the round, generation %lld, is broken)", why,
                        (long long)a->generation);
    }
}

/* The leave itself within `op`, at most one try, not waiting for a
 * connection attempt slot: the lease breaks the round if this cannot.
 * Returns how the call went, *r its reply. */
static cr_status
leave_once(const cr__op *op, const await_ctx *a, cr__reply **r)
{
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__op now = *op;
    cr_status left = leave_call(a, &call);

    now.slot_deadline = cr__now_ms();
    if (left == CR_OK)
        left = cr__script_call_run(&now, &cmd, &call, r);
    cr__script_call_free(&call);
    return left;
}

/* The wait ended without an outcome (`rc`): leave, breaking the round
 * unless it ended first. Returns the await's status. */
static cr_status
leave(const cr__op *op, await_ctx *a, cr_status rc)
{
    cr__reply *r = NULL;
    cr_status left;
    char why[256];

    if (!a->arrived)
        return rc; /* never arrived, or not known to: a lease ends it */
    snprintf(why, sizeof(why), "%s", cr_last_error());
    left = leave_once(op, a, &r);
    return leave_reply(a, rc, why, left, r);
}

static void
leave_later_run(const cr__op *op, void *arg)
{
    cr__reply *r = NULL;

    if (leave_once(op, arg, &r) == CR_OK)
        cr__reply_free(r);
}

static void
leave_later(const cr__barrier_party *p)
{
    cr__barrier_party *copy = malloc(sizeof(*copy));

    if (copy == NULL || !p->arrived) {
        free(copy); /* the lease ends it */
        return;
    }
    *copy = *p;
    cr__object_background(p->barrier, leave_later_run, free, copy);
}

static void
wait_spec(cr__barrier_party *p, int64_t wait_ms,
                      cr__wait_spec *spec)
{
    if (p->arrived)
        p->parity = (int)(p->generation % 2);
    *spec = (cr__wait_spec){
        .channel = p->barrier->channel[p->parity],
        .decode = cr__barrier_decode,
        .wait_ms = wait_ms,
        .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
    };
}

static int64_t
wait_left(const cr__wait *w, int64_t now)
{
    if (w->deadline < 0)
        return -1;
    return w->deadline > now ? w->deadline - now : 0;
}

static bool
must_leave(const cr__barrier_party *p, cr_status rc)
{
    return rc != CR_OK && rc != CR_EBROKEN && rc != CR_EINVAL && p->arrived;
}

cr_status
cr_barrier_await(cr_barrier *b, int64_t wait_ms, int64_t *generation,
                 int64_t *index)
{
    await_ctx a;
    cr__wait_spec spec;
    cr__wait w;
    int64_t hint = -1;
    cr__op op;
    cr_status rc = enter(b, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK)
        goto out;
    wait_ms = cr__op_wait(&op, wait_ms);
    party_begin(&a, b, cr_thread_id());
    wait_spec(&a, wait_ms, &spec);
    for (;;) {
        cr__wait_begin(&w, &op, &spec);
        for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
            rc = try_once(&op, &a, &w, &hint);
        if (rc != CR__BARRIER_AGAIN)
            break;
        /* A new wait on the channel of the generation it joined, for what
         * is left of this one. */
        wait_spec(&a, wait_left(&w, cr__now_ms()),
                              &spec);
    }
    if (must_leave(&a, rc))
        rc = leave(&op, &a, rc);
    await_ended(&a);
    if (rc == CR_OK) {
        if (generation != NULL)
            *generation = a.generation;
        if (index != NULL)
            *index = a.index;
    }
out:
    cr__object_leave(b);
    return rc;
}

/* ------------------------------------------------------- the other calls */

cr_status
cr_barrier_reset(cr_barrier *b)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr__op op;
    cr_status rc = enter(b, &op);

    if (rc != CR_OK)
        return rc;
    rc = cr__run_barrier_reset(&op, &cmd,
        &(cr__barrier_reset_args){
            .barrier = b->raw, .arrivals = b->arrivals,
            .even = b->channel[0], .odd = b->channel[1],
            .publish = b->client->publish_cmd, .keep = OUTCOMES_KEPT},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_i64(r, "barrier reset", &v);
    cr__object_leave(b);
    return rc;
}

cr_status
cr_barrier_get_parties(cr_barrier *b, int64_t *parties)
{
    cr__op op;
    cr_status rc = enter(b, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(parties, "parties")) == CR_OK)
        *parties = b->parties;
    cr__object_leave(b);
    return rc;
}

/* HGET of a count field of the hash (0 when absent), within `op`. */
static cr_status
hash_count(const cr__op *op, cr_barrier *b, const char *field, int64_t *out)
{
    const char *argv[3] = {"HGET", b->raw, field};
    cr__reply *r = NULL;
    cr_status rc = cr__command_retry(op, 3, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    if (r->type == CR__REPLY_NIL)
        *out = 0;
    else if (!cr__reply_int(r, out))
        rc = cr__fail(CR_ESCRIPT, "barrier %s: %s is no count", b->name,
                      field);
    cr__reply_free(r);
    return rc;
}

cr_status
cr_barrier_get_number_waiting(cr_barrier *b, int64_t *waiting)
{
    int64_t v = 0;
    cr__op op;
    cr_status rc = enter(b, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(waiting, "waiting")) == CR_OK &&
        (rc = hash_count(&op, b, "arrived", &v)) == CR_OK)
        *waiting = v;
    cr__object_leave(b);
    return rc;
}

cr_status
cr_barrier_is_broken(cr_barrier *b, bool *broken)
{
    int64_t v = 0;
    cr__op op;
    cr_status rc = enter(b, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(broken, "broken")) == CR_OK &&
        (rc = hash_count(&op, b, "broken", &v)) == CR_OK)
        *broken = v == 1;
    cr__object_leave(b);
    return rc;
}

cr_status
cr_barrier_delete(cr_barrier *b, bool *deleted)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    bool done = false;
    cr__op op;
    cr_status rc = enter(b, &op);

    if (rc != CR_OK)
        return rc;
    rc = cr__run_barrier_delete(&op, &cmd,
        &(cr__barrier_delete_args){
            .barrier = b->raw, .arrivals = b->arrivals,
            .even = b->channel[0], .odd = b->channel[1],
            .publish = b->client->publish_cmd},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "barrier delete", &done);
    if (rc == CR_OK && deleted != NULL)
        *deleted = done;
    cr__object_leave(b);
    return rc;
}

/* ------------------------------------------------ the asynchronous half */

/* An await on the loop runs the wait state machine as cr_barrier_await
 * does: its first attempt is the arrival, later ones a quick look (a
 * wake-up before a look is due) or a look, which renews the party's
 * lease: the wait's sleeps are bounded by the look's hint (a third of the
 * lease at most), so the loop's timer keeps the lease alive. A wait that
 * ends without an outcome leaves, breaking the round unless it ended
 * first. */

/* What an await's command out is: the attempts cr__barrier_next names, or
 * the leave. */
enum {
    B_ARRIVE = CR__BARRIER_ARRIVE,
    B_QUICK = CR__BARRIER_QUICK,
    B_LOOK = CR__BARRIER_LOOK,
    B_LEAVE
};

typedef struct await_request {
    CR__REQUEST_FIELDS
    cr_async_barrier_fn fn;
    cr__barrier_party party;
    int stage;                /* B_*: its command out */
    cr_status left_rc;        /* the wait's end, which its leave reports */
    char *why;                /* and that end's message */
} await_request;

static void await_send(await_request *q, int stage);

/* The await is over with rc. */
static void
await_complete(await_request *q, cr_status rc)
{
    await_ended(&q->party);
    if (rc == CR_OK)
        q->final = true; /* passed: a cancel cannot undo the round */
    cr__request_end((cr_request *)q, rc);
}

/* After the wait and its last look: leave, or complete. */
static void
await_conclude(await_request *q, cr_status rc)
{
    const char *name = q->party.barrier->name;

    if ((rc == CR_BUSY || rc == CR_ECANCELED) && q->cancelled)
        rc = cr__fail(CR_ECANCELED, "barrier %s: the await was cancelled",
                      name);
    if (must_leave(&q->party, rc) && q->overdue) {
        /* No time is left to await the leave: it runs in the background,
         * and breaks the round unless the round completed first. */
        leave_later(&q->party);
        await_complete(q, cr__fail(CR_TIMEOUT, "barrier %s: no answer "
                                   "within the wait and one command "
                                   "timeout; the party leaves (the round "
                                   "is broken unless it completed first)",
                                   name));
        return;
    }
    if (must_leave(&q->party, rc)) {
        free(q->why);
        q->why = strdup(cr_last_error());
        q->left_rc = rc;
        await_send(q, B_LEAVE);
        return;
    }
    await_complete(q, rc);
}

static void
await_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    await_request *q = ctx;
    cr__barrier_party *p = &q->party;
    cr_status sent = rc;
    int64_t hint = -1;
    bool look_now = false;

    (void)cmd;
    q->busy = false;
    switch (q->stage) {
    case B_ARRIVE:
        rc = arrive_reply(p, rc, r, &hint);
        break;
    case B_QUICK:
        rc = quick_reply(p, rc, r, &hint, &look_now);
        break;
    case B_LEAVE:
        rc = leave_reply(p, q->left_rc,
                                     q->why != NULL ? q->why : "", rc, r);
        break;
    default:
        rc = look_reply(p, rc, r, &hint);
        break;
    }
    if (q->ended) {
        /* Ended meanwhile (its bound passed, or the handle is being
         * freed): a party still waiting, or whose leave may not have run,
         * leaves in the background. */
        if (q->stage == B_LEAVE ? sent != CR_OK
                                : rc != CR_OK && rc != CR_EBROKEN &&
                                      rc != CR_EINVAL)
            leave_later(p);
        cr__request_late((cr_request *)q);
        return;
    }
    if (q->stage == B_LEAVE) {
        await_complete(q, rc);
        return;
    }
    if (look_now) {
        await_send(q, B_LOOK);
        return;
    }
    q->w.rc = rc;
    q->w.hint = hint;
    cr__request_drive((cr_request *)q);
}

/* Sends the command of `stage`; one that cannot be queued is its reply. */
static void
await_send(await_request *q, int stage)
{
    cr__aio *io = q->async->io;
    cr__script_call call = {0};
    cr_status rc;

    q->stage = stage;
    q->busy = true;
    if (stage == B_QUICK) {
        const char *argv[4];
        char field[32];

        quick_argv(&q->party, argv, field);
        rc = cr__aio_command(io, 4, argv, NULL, await_replied, q);
    } else {
        rc = stage == B_ARRIVE  ? arrive_call(&q->party, &call)
             : stage == B_LEAVE ? leave_call(&q->party, &call)
                                : look_call(&q->party, &call);
        if (rc == CR_OK)
            rc = cr__aio_script(io, &call, 0, await_replied, q);
        cr__script_call_free(&call);
    }
    if (rc != CR_OK)
        await_replied(q, rc, NULL, &(cr__cmd){0});
}

static void
await_attempt(cr_request *req)
{
    await_request *q = (await_request *)req;
    cr__barrier_step next = cr__barrier_next(&q->party, &q->w, cr__now_ms());

    if (next != CR__BARRIER_HEARD) {
        await_send(q, (int)next);
        return;
    }
    q->w.rc = CR_OK; /* its round's completion, read: no command */
    q->w.hint = -1;
    cr__request_drive(req);
}

/* The wait is over (w.rc). */
static void
await_finish(cr_request *req)
{
    await_request *q = (await_request *)req;
    cr__wait_spec spec;

    if (q->w.rc == CR__BARRIER_AGAIN) {
        /* The arrival joined a generation of the other parity: a new wait
         * on its channel, for what is left of this one. */
        wait_spec(&q->party,
                              wait_left(&q->w, cr__now_ms()),
                              &spec);
        cr__request_wait_again(req, &spec);
        return;
    }
    await_conclude(q, q->w.rc);
}

static void
await_callback(cr_request *req)
{
    await_request *q = (await_request *)req;

    if (q->fn != NULL)
        q->fn(req->userdata, req->rc,
              req->rc == CR_OK ? q->party.generation : -1,
              req->rc == CR_OK ? q->party.index : -1);
}

/* The handle is freed: a party waiting (no command out) leaves in the
 * background, breaking the round as the blocking call does when its
 * client is freed; one with a command out, when that command's reply
 * comes (CR_ECLOSED). */
static void
await_abandon(cr_request *req)
{
    await_request *q = (await_request *)req;

    if (!q->busy)
        leave_later(&q->party);
}

static void
await_release(cr_request *req)
{
    free(((await_request *)req)->why);
}

static const cr__request_type await_type = {
    .attempt = await_attempt,
    .finish = await_finish,
    .callback = await_callback,
    .abandon = await_abandon,
    .release = await_release,
};

cr_status
cr_async_barrier_await(cr_async *a, cr_barrier *b, int64_t wait_ms,
                       cr_async_barrier_fn fn, void *userdata,
                       cr_request **req)
{
    cr__wait_spec spec;
    await_request *q;
    cr_status rc = cr__async_enter(a, b, BARRIER_MAGIC, "barrier", false);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q = (await_request *)cr__request_new(a, &await_type, sizeof(*q),
                                         userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->fn = fn;
    party_begin(&q->party, b, cr_async_owner_id());
    wait_spec(&q->party, wait_ms, &spec);
    cr__request_wait((cr_request *)q, &spec, NULL, NULL, true);
    return cr__request_started(a, (cr_request *)q, req);
}
