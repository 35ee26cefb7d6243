/* SPDX-License-Identifier: MIT */
/*
 * RPermitExpirableSemaphore (protocol section 8): the available count in
 * the string key N, the permits out in the zset {N}:timeout (member: the
 * permit id as 16 raw bytes; score: its expiry in epoch ms from the
 * acquirer's wall clock, or 922337203685477 for never), and the same
 * channel as RSemaphore, redisson_sc:{N}.
 *
 * Every script first reclaims the expired permits it finds (ZREM them and
 * add them back to N), so a permit whose holder died comes back at the
 * first call on the semaphore after its lease: that is what makes the
 * semaphore fit a pool of workers that may crash.
 *
 * Ids travel as 32 hex characters in the API and as 16 raw bytes on the
 * wire (binary arguments, with their lengths given). Each acquire attempt
 * makes a fresh id and expiry, as Redisson does; an attempt whose reply was
 * lost is resolved before the next one (and before giving up with CR_EIO)
 * by looking its id up in the zset.
 *
 * A releaser leaves the waiters its release woke a turn (handoff.h); the
 * release script adds 3 times the number of subscribers its publish
 * reached to its reply.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credisson/semaphore.h"
#include "handoff.h"
#include "request.h"
#include "sem.h"

#define PES_MAGIC 0x43525045u /* "CRPE" */

#define ID_BYTES 16

/* Redisson's "never expires" score (nonExpirableTimeout). */
#define NEVER INT64_C(922337203685477)

struct cr_permit_semaphore {
    CR__SEM_FIELDS
};

/* id_new: a fresh id in the form semaphore `s`'s line stores. id_hex:
 * `id` as users see it, 32 lowercase hex characters and a NUL. */
static cr_status id_new(const void *s, cr__permit_id *id);
static void id_hex(const cr__permit_id *id, char *hex);

/* The calls in halves (ids as users see them in `hex`), so that the
 * blocking and the asynchronous API send the same: an acquire attempt of
 * `permits` under the n ids `ids` (one per permit, or one for all of them
 * on lines before 3.23.4) by `waiter` (CR_OK granted, CR_BUSY with the
 * time to the earliest expiry bounded by the line in *hint, and *listen),
 * a release of the `permits` id `hex` stands
 * for (CR_ENOTOWNER: not out; CR_ELOST: its lease had run out; *result 0,
 * 1 or 2 as the script's), an update of its lease (reply: 1 when updated,
 * cr__reply_bool). `id` receives the stored form of `hex`, which the call
 * refers to. */
static cr_status acquire_call(const void *s, const cr__sem_waiter *waiter,
                              int64_t permits, int64_t lease_ms,
                              const cr__permit_id *ids, size_t n,
                              cr__script_call *call);
static cr_status acquire_reply(cr_status rc, cr__reply *r, int64_t *hint,
                               int *listen);
static cr_status release_call(const void *s, const char *hex,
                              int64_t permits, cr__permit_id *id,
                              cr__script_call *call);
static cr_status release_reply(void *s, const char *hex, cr_status rc,
                               cr__reply *r, const cr__sub_seen *seen,
                               int64_t sent_us, bool async,
                               int64_t *result);
static cr_status update_call(const void *s, const char *hex,
                             int64_t lease_ms, cr__permit_id *id,
                             cr__script_call *call);

/* give_back_later: find out in the background whether the ids of
 * acquisition `a` (copied) were granted, and give them back if so. */
static void give_back_later(const cr__permit_acquisition *a);


const cr__sem_kind cr__permit_semaphore_kind = {PES_MAGIC, "permit semaphore",
                                                true};

/* The guard of every call. */
static cr_status
enter(cr_permit_semaphore *s, cr__op *op)
{
    return cr__sem_enter(s, &cr__permit_semaphore_kind, op);
}

/* ------------------------------------------------------------- creation */

cr_status
cr_permit_semaphore_new(cr_client *c, const char *name,
                        cr_permit_semaphore **out)
{
    return cr__sem_new(c, name, &cr__permit_semaphore_kind, sizeof(**out), (void **)out);
}

void
cr_permit_semaphore_free(cr_permit_semaphore *s)
{
    cr__sem_free(s, &cr__permit_semaphore_kind);
}

const char *
cr_permit_semaphore_name(const cr_permit_semaphore *s)
{
    return cr__object_name(s, PES_MAGIC);
}

/* -------------------------------------------------------------- helpers */

/* The value of one hex digit, or -1. */
static int
hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Whether semaphore `s`'s Java side stores ids as hex text (before 3.17). */
static bool
hex_ids(const void *s)
{
    return ((const cr__sem *)s)->client->wire.pes_hex_ids;
}

/* The stored form of 16 id bytes. */
static void
id_of_bytes(const void *s, const unsigned char *bytes, cr__permit_id *id)
{
    if (hex_ids(s)) {
        char hex[CR_PERMIT_ID_LEN + 1];

        cr__hex(bytes, ID_BYTES, hex);
        memcpy(id->b, hex, CR_PERMIT_ID_LEN);
        id->len = CR_PERMIT_ID_LEN;
    } else {
        memcpy(id->b, bytes, ID_BYTES);
        id->len = ID_BYTES;
    }
}

static cr_status
id_new(const void *s, cr__permit_id *id)
{
    unsigned char bytes[ID_BYTES];
    cr_status rc = cr__random_bytes(bytes, ID_BYTES);

    if (rc == CR_OK)
        id_of_bytes(s, bytes, id);
    return rc;
}

static void
id_hex(const cr__permit_id *id, char *hex)
{
    if (id->len == ID_BYTES) {
        cr__hex((const unsigned char *)id->b, ID_BYTES, hex);
    } else {
        memcpy(hex, id->b, CR_PERMIT_ID_LEN);
        hex[CR_PERMIT_ID_LEN] = '\0';
    }
}

/* Decodes a user's permit id (exactly 32 hex digits, either case) into
 * the stored form; CR_EINVAL otherwise. */
static cr_status
decode_id(const void *s, const char *hex, cr__permit_id *id)
{
    unsigned char bytes[ID_BYTES];
    size_t i;

    if (hex == NULL)
        return cr__fail(CR_EINVAL, "permit id is NULL");
    for (i = 0; i < ID_BYTES; i++) {
        int hi = hex_digit(hex[2 * i]), lo;

        /* hex[2 * i + 1] is safe to read: hex[2 * i] was not the NUL. */
        if (hi < 0 || (lo = hex_digit(hex[2 * i + 1])) < 0)
            break;
        bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    if (i != ID_BYTES || hex[2 * ID_BYTES] != '\0')
        return cr__fail(CR_EINVAL, "permit id is not %d hex digits",
                        CR_PERMIT_ID_LEN);
    id_of_bytes(s, bytes, id);
    return CR_OK;
}

/* Whether each permit has its own id (Redisson 3.23.4 and later), or an
 * acquisition's one id stands for all its permits. */
static bool
id_per_permit(const void *s)
{
    return ((const cr__sem *)s)->client->wire.pes_id_per_permit;
}

/* The checks of acquire_n's `permits`: 1..CR_PERMIT_ACQUIRE_MAX ids, and
 * on lines where one id stands for several permits, no lease (see
 * cr_permit_semaphore_try_acquire_n). */
static cr_status
check_acquire_n(const void *s, int64_t permits, int64_t lease_ms)
{
    cr_status rc = cr__check_range("permits", permits, 1,
                                   id_per_permit(s) ? CR_PERMIT_ACQUIRE_MAX
                                                    : CR_PERMITS_MAX);

    if (rc == CR_OK && permits > 1 && !id_per_permit(s) &&
        lease_ms != CR_LEASE_NONE)
        return cr__fail(CR_ENOTSUP, "before Redisson 3.23.4 one id stands "
                        "for all %lld permits, and when its lease ran out "
                        "only one would come back: take them without a "
                        "lease, or one at a time", (long long)permits);
    return rc;
}

/* The expiry score of a lease starting now. */
static int64_t
expiry_of(int64_t lease_ms)
{
    return lease_ms == CR_LEASE_NONE ? NEVER : cr__wall_ms() + lease_ms;
}

/* ------------------------------------------------------------ acquiring */

/* The rules of one acquisition (sem.h). */

/* The steps of the end, in order. */
enum { E_LOOK, E_STOP, E_LEAVE, E_DONE };

cr_status
cr__permit_acquisition_begin(cr__permit_acquisition *a, void *sem,
                             int64_t permits, int64_t lease_ms,
                             int64_t owner_id, int64_t wait_ms)
{
    cr_status rc;

    *a = (cr__permit_acquisition){.sem = sem, .permits = permits,
                                  .lease_ms = lease_ms, .rc = CR_BUSY};
    a->n = id_per_permit(sem) ? (size_t)permits : 1;
    if ((rc = cr__sem_waiter_begin(&a->waiter, sem, owner_id, wait_ms)) !=
        CR_OK)
        return rc;
    if ((a->ids = calloc(a->n, sizeof(*a->ids))) == NULL) {
        cr__sem_waiter_free(&a->waiter);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    return CR_OK;
}

void
cr__permit_acquisition_free(cr__permit_acquisition *a)
{
    free(a->ids);
    a->ids = NULL;
    cr__sem_waiter_free(&a->waiter);
}

void
cr__permit_acquisition_look(const cr__permit_acquisition *a,
                            const char *argv[3], size_t lens[3])
{
    argv[0] = "ZSCORE";
    argv[1] = a->sem->issued;
    argv[2] = a->ids[0].b;
    lens[0] = 6;
    lens[1] = strlen(a->sem->issued);
    lens[2] = a->ids[0].len;
}

cr_status
cr__permit_acquisition_looked(cr__permit_acquisition *a, cr_status rc,
                              cr__reply *r)
{
    bool granted;

    if (rc != CR_OK)
        return rc;
    /* Its ids went in together: the first tells. */
    granted = r->type != CR__REPLY_NIL;
    cr__reply_free(r);
    a->uncertain = false;
    return granted ? CR_OK : CR_BUSY;
}

cr_status
cr__permit_acquisition_call(cr__permit_acquisition *a, cr__script_call *call)
{
    cr_status rc = CR_OK;

    for (size_t i = 0; i < a->n && rc == CR_OK; i++)
        rc = id_new(a->sem, &a->ids[i]);
    if (rc == CR_OK)
        rc = acquire_call(a->sem, &a->waiter, a->permits, a->lease_ms, a->ids,
                                     a->n, call);
    return rc;
}

cr_status
cr__permit_acquisition_replied(cr__permit_acquisition *a, cr_status rc,
                               cr__reply *r, const cr__cmd *cmd,
                               int64_t *hint, int *listen)
{
    *hint = -1;
    *listen = CR__LISTEN_NO;
    if (cmd->sent && (rc == CR_EIO || rc == CR_ECLOSED))
        a->uncertain = true; /* it may have run: its reply was lost */
    return acquire_reply(rc, r, hint, listen);
}

void
cr__permit_acquisition_end_begin(cr__permit_acquisition *a, cr_status rc)
{
    a->rc = rc;
    a->end_step = E_LOOK;
}

cr__permit_end_do
cr__permit_acquisition_end_next(cr__permit_acquisition *a, unsigned stop)
{
    for (;;) {
        switch (a->end_step++) {
        case E_LOOK:
            /* A cancel too: what the lost attempt took is given back. */
            if ((a->rc == CR_EIO || a->rc == CR_BUSY ||
                 a->rc == CR_ECANCELED) && a->uncertain)
                return CR__PERMIT_END_LOOK;
            break;
        case E_STOP:
            if (a->rc == CR_OK && stop != 0) {
                a->rc = (stop & CR__STOP_CANCELLED)
                            ? cr__fail(CR_ECANCELED, "cancelled (the "
                                       "permits, granted meanwhile, are "
                                       "given back)")
                            : cr__fail(CR_ECLOSED, "the client is being freed "
                                       "(the permits, granted meanwhile, "
                                       "are given back)");
                return CR__PERMIT_END_GIVE_BACK;
            }
            break;
        case E_LEAVE:
            /* A try without a wait never went in line. */
            if (a->rc != CR_OK && a->waiter.wait_ms != 0)
                return a->rc == CR_EIO ? CR__PERMIT_END_LEAVE_LATER
                                       : CR__PERMIT_END_LEAVE;
            break;
        default:
            a->end_step = E_DONE;
            return CR__PERMIT_END_DONE;
        }
    }
}

bool
cr__permit_acquisition_end_looked(cr__permit_acquisition *a, cr_status rc,
                                  cr__reply *r)
{
    rc = cr__permit_acquisition_looked(a, rc, r);
    if (rc == CR_OK)
        a->rc = CR_OK; /* granted after all */
    return rc == CR_OK || rc == CR_BUSY;
}

cr_status
cr__permit_acquisition_done(const cr__permit_acquisition *a)
{
    if (a->rc == CR_BUSY)
        return cr__fail(CR_BUSY, "permit semaphore %s: no permit free until "
                        "the wait ran out", a->sem->name);
    return a->rc;
}

static cr_status
acquire_call(const void *obj, const cr__sem_waiter *waiter, int64_t permits,
             int64_t lease_ms,
                        const cr__permit_id *ids, size_t n,
                        cr__script_call *call)
{
    const cr__sem *s = obj;
    cr__sem_line_args ln = cr__sem_line_args_of(s);
    const char *one[1];
    size_t one_len[1];
    const char **v = n == 1 ? one : calloc(n, sizeof(*v));
    size_t *lens = n == 1 ? one_len : calloc(n, sizeof(*lens));
    cr_status rc = CR_ENOMEM;

    if (v != NULL && lens != NULL) {
        for (size_t i = 0; i < n; i++) {
            v[i] = ids[i].b;
            lens[i] = ids[i].len;
        }
        rc = cr__build_permit_semaphore_try_acquire(
            &(cr__permit_semaphore_try_acquire_args){
                .permits = s->raw, .issued = s->issued,
                .channel = s->channel, .line = ln.line,
                .line_state = ln.line_state, .k = permits,
                .expiry_ms = expiry_of(lease_ms), .now_ms = cr__wall_ms(),
                .never = NEVER, .publish = s->client->publish_cmd,
                .entry = waiter->entry,
                .wait = cr__line_wait_arg(waiter->wait_ms, false),
                .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
                .line_channel = ln.line_channel, .ids = v,
                .ids_lens = lens, .n_ids = n},
            call);
    }
    if (n != 1) {
        free(v);
        free(lens);
    }
    return rc;
}

static cr_status
acquire_reply(cr_status rc, cr__reply *r, int64_t *hint, int *listen)
{
    int64_t expiry = -1, left = -1;

    if (rc != CR_OK)
        return rc;
    rc = cr__fail(CR_ESCRIPT, "permit semaphore acquire replied neither OK "
                  "nor a place in line");
    if (r->type == CR__REPLY_STRING && r->len == 2 &&
        memcmp(r->str, "OK", 2) == 0) {
        rc = CR_OK;
    } else if (r->type == CR__REPLY_ARRAY && r->elements == 3 &&
               cr__reply_int(r->element[0], &expiry)) {
        /* The earliest expiry, in the wall clock of whoever took it. */
        if (expiry >= 0) {
            int64_t now = cr__wall_ms();

            left = expiry <= now ? 0
                   : expiry - now > CR_DURATION_MAX ? CR_DURATION_MAX
                                                   : expiry - now;
        }
        if (cr__sem_place(r, 1, left, hint, listen))
            rc = CR_BUSY;
    }
    cr__reply_free(r);
    return rc;
}

static cr_status release_id(const cr__op *op, cr_permit_semaphore *s,
                         const char *hex, int64_t permits, int64_t *result);

/* Gives back the n ids of an acquisition of `permits`, within `op`. */
static void
give_back(const cr__op *op, cr_permit_semaphore *s, const cr__permit_id *ids,
          size_t n, int64_t permits)
{
    char hex[CR_PERMIT_ID_LEN + 1];
    int64_t ignored;

    for (size_t i = 0; i < n; i++) {
        id_hex(&ids[i], hex);
        release_id(op, s, hex, n == 1 ? permits : 1, &ignored);
    }
}

/* The look of acquisition a (ZSCORE of its first id), blocking. */
static cr_status
look(const cr__op *op, cr__permit_acquisition *a, cr__reply **r)
{
    const char *argv[3];
    size_t lens[3];

    cr__permit_acquisition_look(a, argv, lens);
    return cr__command_retry(op, 3, argv, lens, r);
}

/* Permits whose grant may have come after their caller gave up. */
typedef struct late_permit {
    cr__permit_acquisition acq;
    cr__permit_id ids[]; /* acq.n */
} late_permit;

/* Background: if the permits were granted, give them back. */
static void
late_permit_run(const cr__op *op, void *arg)
{
    late_permit *p = arg;
    cr__reply *r = NULL;
    cr_status rc = look(op, &p->acq, &r);

    if (cr__permit_acquisition_looked(&p->acq, rc, r) != CR_OK)
        return;
    cr__log(&p->acq.sem->client->log, CR_LOG_INFO, "permit semaphore %s: "
            "permits granted after their caller gave up are given back",
            p->acq.sem->name);
    give_back(op, (cr_permit_semaphore *)p->acq.sem, p->ids, p->acq.n,
              p->acq.permits);
}

static void
late_permit_done(void *arg)
{
    free(arg);
}

static void
give_back_later(const cr__permit_acquisition *a)
{
    late_permit *p = calloc(1, sizeof(*p) + a->n * sizeof(p->ids[0]));

    if (p == NULL)
        return;
    p->acq = *a;
    memcpy(p->ids, a->ids, a->n * sizeof(p->ids[0]));
    p->acq.ids = p->ids;
    p->acq.waiter.channel = NULL; /* a's */
    cr__object_background(a->sem, late_permit_run, late_permit_done, p);
}

/* One attempt of a blocking acquisition. */
static cr_status
try_once(const cr__op *op, cr__permit_acquisition *a, int64_t *hint,
         int *listen)
{
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc;

    *hint = -1;
    if (a->uncertain) {
        rc = look(op, a, &r);
        if ((rc = cr__permit_acquisition_looked(a, rc, r)) != CR_BUSY)
            return rc; /* granted after all, or the look failed */
        r = NULL;
    }
    rc = cr__permit_acquisition_call(a, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    return cr__permit_acquisition_replied(a, rc, r, &cmd, hint, listen);
}

/* The end of a blocking acquisition: its steps inline. */
static cr_status
acquisition_end(cr__op *op, cr__permit_acquisition *a, cr_status rc)
{
    cr__op now = *op;
    cr__reply *r = NULL;

    cr__permit_acquisition_end_begin(a, rc);
    for (;;) {
        switch (cr__permit_acquisition_end_next(
            a, atomic_load(&a->sem->client->closing) ? CR__STOP_CLOSING
                                                     : 0)) {
        case CR__PERMIT_END_LOOK:
            /* One look if a connection is at hand; else in the background,
             * which gives permits granted too late back. */
            now.slot_deadline = cr__now_ms();
            rc = look(&now, a, &r);
            if (!cr__permit_acquisition_end_looked(a, rc, r))
                give_back_later(a);
            break;
        case CR__PERMIT_END_GIVE_BACK:
            /* The caller could not release them any more: now, within the
             * free's grace. */
            give_back(op, (cr_permit_semaphore *)a->sem, a->ids, a->n,
                      a->permits);
            break;
        case CR__PERMIT_END_LEAVE:
            cr__sem_leave(op, a->sem, &a->waiter);
            break;
        case CR__PERMIT_END_LEAVE_LATER:
            cr__sem_leave_later(a->sem, &a->waiter);
            break;
        case CR__PERMIT_END_DONE:
            return cr__permit_acquisition_done(a);
        }
    }
}

/* Acquisition shared by the acquire calls: `permits` under their ids,
 * written to `out` (CR_PERMIT_ID_LEN + 1 bytes each) with their number in
 * *n_out (may be NULL when it is 1). */
static cr_status
blocking_acquire(cr_permit_semaphore *s, int64_t permits, int64_t wait_ms,
        int64_t lease_ms, char *out, size_t *n_out)
{
    cr__permit_acquisition a = {0};
    cr__wait_spec spec;
    cr__wait w;
    cr__op op;
    int64_t hint = -1;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK ||
        (rc = cr__check_lease(lease_ms, "CR_LEASE_NONE")) != CR_OK ||
        (rc = check_acquire_n(s, permits, lease_ms)) != CR_OK ||
        (rc = cr__check_out(out, "id")) != CR_OK)
        goto out;
    wait_ms = cr__op_wait(&op, wait_ms);
    if ((rc = cr__permit_acquisition_begin(&a, s, permits, lease_ms,
                                           cr_thread_id(), wait_ms)) != CR_OK)
        goto out;
    cr__wait_turn(s->client->pubsub, s->channel, &s->handoff, wait_ms);
    cr__sem_wait_spec(s, &cr__permit_semaphore_kind, &a.waiter, false,
                      &spec);
    cr__wait_begin(&w, &op, &spec);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = try_once(&op, &a, &hint, &w.listen);
    rc = acquisition_end(&op, &a, rc);
    if (rc == CR_OK) {
        for (size_t i = 0; i < a.n; i++)
            id_hex(&a.ids[i], out + i * (CR_PERMIT_ID_LEN + 1));
        if (n_out != NULL)
            *n_out = a.n;
    }
out:
    cr__permit_acquisition_free(&a);
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_acquire(cr_permit_semaphore *s, int64_t lease_ms, char *id)
{
    return blocking_acquire(s, 1, CR_WAIT_FOREVER, lease_ms, id, NULL);
}

cr_status
cr_permit_semaphore_try_acquire(cr_permit_semaphore *s, int64_t wait_ms,
                                int64_t lease_ms, char *id)
{
    return blocking_acquire(s, 1, wait_ms, lease_ms, id, NULL);
}

cr_status
cr_permit_semaphore_acquire_n(cr_permit_semaphore *s, int64_t permits,
                              int64_t lease_ms, char *ids, size_t *n_ids)
{
    return blocking_acquire(s, permits, CR_WAIT_FOREVER, lease_ms, ids, n_ids);
}

cr_status
cr_permit_semaphore_try_acquire_n(cr_permit_semaphore *s, int64_t permits,
                                  int64_t wait_ms, int64_t lease_ms,
                                  char *ids, size_t *n_ids)
{
    return blocking_acquire(s, permits, wait_ms, lease_ms, ids, n_ids);
}

/* ------------------------------------------------------------ releasing */

static cr_status
release_call(const void *obj, const char *hex, int64_t permits,
                        cr__permit_id *id, cr__script_call *call)
{
    const cr__sem *s = obj;
    cr__sem_line_args ln = cr__sem_line_args_of(s);
    cr_status rc = decode_id(s, hex, id);

    if (rc != CR_OK)
        return rc;
    return cr__build_permit_semaphore_release(
        &(cr__permit_semaphore_release_args){
            .permits = s->raw, .channel = s->channel, .issued = s->issued,
            .line = ln.line, .line_state = ln.line_state,
            .id = {id->b, id->len}, .count = permits,
            .now_ms = cr__wall_ms(), .publish = s->client->publish_cmd,
            .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
            .line_channel = ln.line_channel},
        call);
}

static cr_status
release_reply(void *obj, const char *hex, cr_status rc,
                         cr__reply *r, const cr__sub_seen *seen,
                         int64_t sent_us, bool async, int64_t *result)
{
    cr__sem *s = obj;
    int64_t v = 0;

    if (rc != CR_OK ||
        (rc = cr__reply_i64(r, "permit semaphore release", &v)) != CR_OK)
        return rc;
    if (v < 0 || (v % 3 == 0 && v > 0))
        return cr__fail(CR_ESCRIPT, "permit semaphore release replied %lld",
                        (long long)v);
    *result = v % 3;
    if (v >= 3)
        cr__handoff_after_release(&s->handoff, seen, v / 3, sent_us,
                                  cr__now_us());
    if (result != NULL && *result == 0)
        return cr__fail(CR_ENOTOWNER, "permit %s of %s is not out (released, "
                        "expired or never issued)", hex, s->name);
    if (*result == 2) {
        CR__STAT_ADD(&s->client->run.stats, leases_lost, 1);
        cr__event(&s->client->run.stats, CR_EVENT_LEASE_LOST, CR_ELOST,
                  "permit semaphore", s->name, -1, -1, async);
        return cr__fail(CR_ELOST, "the lease of permit %s of %s had run out; "
                        "the permit was given back all the same", hex,
                        s->name);
    }
    cr__event(&s->client->run.stats, CR_EVENT_RELEASED, CR_OK,
              "permit semaphore", s->name, -1, -1, async);
    return CR_OK;
}

/* Runs the release script for `hex`: *result 0 (not out, CR_ENOTOWNER),
 * 1 (released) or 2 (expired, not reclaimed yet, released all the same:
 * CR_ELOST). */
static cr_status
release_id(const cr__op *op, cr_permit_semaphore *s, const char *hex,
        int64_t permits, int64_t *result)
{
    cr__permit_id id;
    int64_t sent = cr__now_us();
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr__sub_seen seen;
    cr_status rc = release_call(s, hex, permits, &id, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    cr__pubsub_waiters(s->client->pubsub, s->channel, &seen, NULL);
    return release_reply(s, hex, rc, r, &seen, sent, false, result);
}

cr_status
cr_permit_semaphore_release(cr_permit_semaphore *s, const char *id)
{
    int64_t result = 0;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    rc = release_id(&op, s, id, 1, &result);
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_release_n(cr_permit_semaphore *s, const char *id,
                              int64_t permits)
{
    int64_t result = 0;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if (id_per_permit(s) && permits != 1)
        rc = cr__fail(CR_EINVAL, "since Redisson 3.23.4 each permit has its "
                      "own id: an id stands for 1 permit, not %lld",
                      (long long)permits);
    else
        rc = cr__check_range("permits", permits, 1, CR_PERMITS_MAX);
    if (rc == CR_OK)
        rc = release_id(&op, s, id, permits, &result);
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_try_release(cr_permit_semaphore *s, const char *id,
                                bool *released)
{
    int64_t result = 0;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    rc = release_id(&op, s, id, 1, &result);
    if ((rc == CR_OK || rc == CR_ENOTOWNER || rc == CR_ELOST) &&
        released != NULL)
        *released = result == 1;
    if (rc == CR_ENOTOWNER || rc == CR_ELOST)
        rc = CR_OK; /* tryRelease: only whether it released */
    cr__object_leave(s);
    return rc;
}

/* --------------------------------------------------------------- leases */

static cr_status
update_call(const void *obj, const char *hex, int64_t lease_ms,
                       cr__permit_id *id, cr__script_call *call)
{
    const cr__sem *s = obj;
    cr_status rc;

    if ((rc = decode_id(s, hex, id)) != CR_OK ||
        (rc = cr__check_lease(lease_ms, "CR_LEASE_NONE")) != CR_OK)
        return rc;
    return cr__build_permit_semaphore_update_lease_time(
        &(cr__permit_semaphore_update_lease_time_args){
            .permits = s->raw, .issued = s->issued, .channel = s->channel,
            .id = {id->b, id->len},
            .expiry_ms = expiry_of(lease_ms), .now_ms = cr__wall_ms(),
            .publish = s->client->publish_cmd},
        call);
}

cr_status
cr_permit_semaphore_update_lease_time(cr_permit_semaphore *s, const char *id,
                                      int64_t lease_ms, bool *updated)
{
    cr__permit_id raw;
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    bool v = false;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    rc = update_call(s, id, lease_ms, &raw, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(&op, &cmd, &call, &r);
    cr__script_call_free(&call);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "update_lease_time", &v);
    if (rc == CR_OK && updated != NULL)
        *updated = v;
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_get_lease_time(cr_permit_semaphore *s, const char *id,
                                   int64_t *remaining_ms)
{
    cr__permit_id raw;
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = decode_id(s, id, &raw)) != CR_OK ||
        (rc = cr__check_out(remaining_ms, "remaining_ms")) != CR_OK)
        goto out;
    rc = cr__run_permit_semaphore_get_lease_time(&op, &cmd,
        &(cr__permit_semaphore_get_lease_time_args){
            .permits = s->raw, .issued = s->issued, .channel = s->channel,
            .id = {raw.b, raw.len}, .never = NEVER,
            .now_ms = cr__wall_ms(), .publish = s->client->publish_cmd},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_i64(r, "get_lease_time", &v);
    if (rc == CR_OK && v == 0)
        rc = cr__fail(CR_ENOTOWNER, "permit %s of %s is not out", id,
                      s->name);
    else if (rc == CR_OK)
        *remaining_ms = v;
out:
    cr__object_leave(s);
    return rc;
}

/* --------------------------------------------------------------- counts */

/* One of the three counts ('available', 'acquired', 'total'), after
 * reclaiming expired permits. */
static cr_status
count(cr_permit_semaphore *s, const char *which, int64_t *out)
{
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(out, "permits")) != CR_OK)
        goto out;
    rc = cr__run_permit_semaphore_permits(&op, &cmd,
        &(cr__permit_semaphore_permits_args){
            .permits = s->raw, .issued = s->issued, .channel = s->channel,
            .now_ms = cr__wall_ms(), .publish = s->client->publish_cmd,
            .which = which},
        &r);
    if (rc == CR_OK)
        rc = cr__reply_i64(r, "permit semaphore count", &v);
    if (rc == CR_OK)
        *out = v;
out:
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_available_permits(cr_permit_semaphore *s, int64_t *permits)
{
    return count(s, "available", permits);
}

cr_status
cr_permit_semaphore_acquired_permits(cr_permit_semaphore *s, int64_t *permits)
{
    return count(s, "acquired", permits);
}

cr_status
cr_permit_semaphore_get_permits(cr_permit_semaphore *s, int64_t *permits)
{
    return count(s, "total", permits);
}

/* ----------------------------------------------------- setting permits */

cr_status
cr_permit_semaphore_try_set_permits(cr_permit_semaphore *s, int64_t permits,
                                    bool *set)
{
    return cr__sem_try_set_permits(s, &cr__permit_semaphore_kind, permits, 0, set);
}

cr_status
cr_permit_semaphore_set_permits(cr_permit_semaphore *s, int64_t permits)
{
    cr__sem_line_args ln;
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    /* The handle is known good from here. */
    ln = cr__sem_line_args_of(s);
    if ((rc = cr__check_permits(permits)) != CR_OK)
        goto out;
    rc = cr__run_permit_semaphore_set_permits(&op, &cmd,
        &(cr__permit_semaphore_set_permits_args){
            .permits = s->raw, .channel = s->channel, .issued = s->issued,
            .line = ln.line, .line_state = ln.line_state,
            .count_value = permits, .publish = s->client->publish_cmd,
            .line_lease_ms = ln.line_lease_ms, .turn_ms = ln.turn_ms,
            .line_channel = ln.line_channel},
        &r);
    if (rc == CR_OK)
        cr__reply_free(r);
out:
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_add_permits(cr_permit_semaphore *s, int64_t delta)
{
    return cr__sem_add_permits(s, &cr__permit_semaphore_kind, delta);
}

cr_status
cr_permit_semaphore_delete(cr_permit_semaphore *s, bool *deleted)
{
    return cr__sem_delete(s, &cr__permit_semaphore_kind, deleted);
}

/* ------------------------------------------------ the asynchronous half */

/* An acquisition of one permit on the loop: the wait state machine as a
 * blocking call runs it (request.h), the same attempts, looks and end
 * (cr__permit_acquisition). */
typedef struct acquire_request {
    CR__REQUEST_FIELDS
    cr_async_permit_fn fn;
    cr__permit_acquisition acq;
    char id[CR_PERMIT_ID_LEN + 1]; /* the permit, as users see it */
} acquire_request;

static void acquire_attempt(cr_request *req);
static void acquire_end_step(acquire_request *q);

/* The reply of an attempt. */
static void
acquire_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    acquire_request *q = ctx;
    int64_t hint = -1;
    int listen = CR__LISTEN_NO;

    q->busy = false;
    rc = cr__permit_acquisition_replied(&q->acq, rc, r, cmd, &hint, &listen);
    if (q->ended) {
        /* The request ended meanwhile (its bound passed, or the handle is
         * being freed): what this attempt may have taken is looked for and
         * given back in the background; its place in line is left. */
        if (rc == CR_OK || q->acq.uncertain)
            give_back_later(&q->acq);
        else
            cr__sem_leave_later(q->acq.sem, &q->acq.waiter);
        cr__request_late((cr_request *)q);
        return;
    }
    q->w.rc = rc;
    q->w.hint = hint;
    q->w.listen = listen;
    cr__request_drive((cr_request *)q);
}

/* The answer of the look before an attempt. */
static void
looked_replied(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    acquire_request *q = ctx;

    (void)cmd;
    q->busy = false;
    if (q->ended) {
        /* Its bound passed while it looked: looked for again, given
         * back. */
        cr__reply_free(r);
        give_back_later(&q->acq);
        cr__request_late((cr_request *)q);
        return;
    }
    rc = cr__permit_acquisition_looked(&q->acq, rc, r);
    if (rc == CR_BUSY) {
        acquire_attempt((cr_request *)q); /* not granted: the attempt goes */
        return;
    }
    q->w.rc = rc;
    cr__request_drive((cr_request *)q);
}

/* Sends the look of the acquisition with `fn`. */
static cr_status
send_look(acquire_request *q, cr__areply_fn fn)
{
    const char *argv[3];
    size_t lens[3];

    cr__permit_acquisition_look(&q->acq, argv, lens);
    q->busy = true;
    return cr__aio_command(q->async->io, 3, argv, lens, fn, q);
}

static void
acquire_attempt(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;
    cr__script_call call = {0};
    cr_status rc;

    if (q->acq.uncertain) {
        rc = send_look(q, looked_replied);
        cr__request_attempt_failed(req, rc == CR_OK ? CR_OK : CR_EIO);
        return;
    }
    rc = cr__permit_acquisition_call(&q->acq, &call);
    if (rc == CR_OK) {
        q->busy = true;
        rc = cr__aio_script(q->async->io, &call, 0, acquire_replied, q);
    }
    cr__script_call_free(&call);
    cr__request_attempt_failed(req, rc);
}

static void
end_looked(void *ctx, cr_status rc, cr__reply *r, const cr__cmd *cmd)
{
    acquire_request *q = ctx;

    (void)cmd;
    q->busy = false;
    if (q->ended) {
        cr__reply_free(r);
        give_back_later(&q->acq);
        cr__request_late((cr_request *)q);
        return;
    }
    if (!cr__permit_acquisition_end_looked(&q->acq, rc, r))
        give_back_later(&q->acq);
    acquire_end_step(q);
}

/* The end's next step; once the bound has passed, the look is left to the
 * background. */
static void
acquire_end_step(acquire_request *q)
{
    cr__permit_acquisition *a = &q->acq;
    cr_status rc;

    for (;;) {
        unsigned stop = (q->cancelled ? CR__STOP_CANCELLED : 0) |
                        (atomic_load(&q->async->client->closing)
                             ? CR__STOP_CLOSING : 0);

        switch (cr__permit_acquisition_end_next(a, stop)) {
        case CR__PERMIT_END_LOOK:
            if (!q->overdue && send_look(q, end_looked) == CR_OK)
                return;
            q->busy = false;
            give_back_later(a);
            break;
        case CR__PERMIT_END_GIVE_BACK:
            give_back_later(a);
            break;
        case CR__PERMIT_END_LEAVE:
        case CR__PERMIT_END_LEAVE_LATER:
            cr__sem_leave_later(a->sem, &a->waiter);
            break;
        case CR__PERMIT_END_DONE:
            rc = cr__permit_acquisition_done(a);
            if (rc == CR_OK)
                id_hex(&a->ids[0], q->id);
            cr__request_end((cr_request *)q, rc);
            return;
        }
    }
}

static void
acquire_finish(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    cr__permit_acquisition_end_begin(&q->acq, q->w.rc);
    acquire_end_step(q);
}

static void
acquire_callback(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    if (q->fn != NULL)
        q->fn(req->userdata, req->rc, req->rc == CR_OK ? q->id : NULL);
}

/* The handle is freed while the acquisition waits (no command out): one
 * whose reply was lost is looked for in the background. */
static void
acquire_abandon(cr_request *req)
{
    acquire_request *q = (acquire_request *)req;

    if (!q->busy && q->acq.uncertain)
        give_back_later(&q->acq);
}

static void
acquire_release(cr_request *req)
{
    cr__permit_acquisition_free(&((acquire_request *)req)->acq);
}

static const cr__request_type acquire_type = {
    .attempt = acquire_attempt,
    .finish = acquire_finish,
    .callback = acquire_callback,
    .abandon = acquire_abandon,
    .release = acquire_release,
};

cr_status
cr_async_permit_acquire(cr_async *a, cr_permit_semaphore *s,
                        int64_t wait_ms, int64_t lease_ms,
                        cr_async_permit_fn fn, void *userdata,
                        cr_request **req)
{
    cr__wait_spec spec;
    acquire_request *q;
    cr_status rc = cr__async_enter(a, s, PES_MAGIC, "permit semaphore",
                                   false);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK ||
        (rc = cr__check_lease(lease_ms, "CR_LEASE_NONE")) != CR_OK) {
        cr__client_leave(a->client);
        return rc;
    }
    q = (acquire_request *)cr__request_new(a, &acquire_type, sizeof(*q),
                                           userdata);
    if (q == NULL) {
        cr__client_leave(a->client);
        return CR_ENOMEM;
    }
    q->fn = fn;
    if ((rc = cr__permit_acquisition_begin(&q->acq, s, 1, lease_ms,
                                           cr_async_owner_id(), wait_ms)) !=
        CR_OK)
        return cr__request_discard((cr_request *)q, rc);
    cr__sem_wait_spec(s, &cr__permit_semaphore_kind, &q->acq.waiter, true,
                      &spec);
    cr__request_wait((cr_request *)q, &spec, &s->handoff, s->channel, true);
    return cr__request_started(a, (cr_request *)q, req);
}

/* A one-command request on a permit: its id as users see it. */
typedef struct permit_command {
    cr__command_request base;
    char id[CR_PERMIT_ID_LEN + 1];
} permit_command;

/* The reply of a release. */
static cr_status
released_read(cr__command_request *q, cr_status rc, cr__reply *r)
{
    cr__sem *s = q->obj;
    cr__sub_seen seen;
    int64_t result = 0;

    cr__aio_subs.waiters(q->async->io, s->channel, &seen, NULL);
    return release_reply(s, ((permit_command *)q)->id, rc, r,
                                    &seen, q->sent_us, true, &result);
}

/* Starts a one-command request on permit `id` of `s`. */
static cr_status
permit_start(cr_async *a, cr_permit_semaphore *s, const char *id,
             cr_status rc, cr__script_call *call,
             cr_status (*read)(cr__command_request *, cr_status, cr__reply *),
             cr_async_fn fn, void *userdata, cr_request **req)
{
    cr__command_request *q = NULL;

    rc = cr__command_start(a, s, rc, call, 0, read, fn, userdata, req, NULL,
                           sizeof(permit_command), &q);
    if (rc == CR_OK)
        snprintf(((permit_command *)q)->id, CR_PERMIT_ID_LEN + 1, "%s", id);
    return rc;
}

cr_status
cr_async_permit_release(cr_async *a, cr_permit_semaphore *s, const char *id,
                        cr_async_fn fn, void *userdata, cr_request **req)
{
    cr__script_call call = {0};
    cr__permit_id raw;
    cr_status rc = cr__async_enter(a, s, PES_MAGIC, "permit semaphore",
                                   false);

    if (rc != CR_OK)
        return rc;
    rc = release_call(s, id, 1, &raw, &call);
    return permit_start(a, s, id, rc, &call, released_read, fn, userdata,
                        req);
}

cr_status
cr_async_permit_update_lease(cr_async *a, cr_permit_semaphore *s,
                             const char *id, int64_t lease_ms, cr_async_fn fn,
                             void *userdata, cr_request **req)
{
    cr__script_call call = {0};
    cr__permit_id raw;
    cr_status rc = cr__async_enter(a, s, PES_MAGIC, "permit semaphore",
                                   false);

    if (rc != CR_OK)
        return rc;
    rc = update_call(s, id, lease_ms, &raw, &call);
    return permit_start(a, s, id, rc, &call, cr__command_read_flag, fn,
                        userdata, req);
}
