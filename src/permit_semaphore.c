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

#include <stdlib.h>
#include <string.h>

#include "credisson/semaphore.h"
#include "handoff.h"
#include "semaphores.h"

#define PES_MAGIC 0x43525045u /* "CRPE" */

#define ID_BYTES 16

/* Redisson's "never expires" score (nonExpirableTimeout). */
#define NEVER INT64_C(922337203685477)

struct cr_permit_semaphore {
    CR__SEM_FIELDS
};

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

cr_status
cr__permit_id_new(const void *s, cr__permit_id *id)
{
    unsigned char bytes[ID_BYTES];
    cr_status rc = cr__random_bytes(bytes, ID_BYTES);

    if (rc == CR_OK)
        id_of_bytes(s, bytes, id);
    return rc;
}

void
cr__permit_id_hex(const cr__permit_id *id, char *hex)
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

typedef struct attempt_ctx {
    const cr__op *op;
    cr_permit_semaphore *sem;
    int64_t permits;
    int64_t lease_ms;
    cr__permit_id *ids; /* the last attempt's ids */
    size_t n;
    bool uncertain;     /* the last attempt's reply was lost */
} attempt_ctx;

/* Tells whether the permits of the last attempt are out (its reply was
 * lost but it did run: its ids went in together, so the first tells);
 * clears the doubt when Redis answered. */
static cr_status
resolve_lost_reply(attempt_ctx *a, bool *granted)
{
    const char *argv[3] = {"ZSCORE", a->sem->issued, a->ids[0].b};
    size_t lens[3];
    cr__reply *r = NULL;
    cr_status rc;

    lens[0] = 6;
    lens[1] = strlen(a->sem->issued);
    lens[2] = a->ids[0].len;
    rc = cr__command_retry(a->op, 3, argv, lens, &r);
    if (rc != CR_OK)
        return rc;
    *granted = r->type != CR__REPLY_NIL;
    cr__reply_free(r);
    a->uncertain = false;
    return CR_OK;
}

cr_status
cr__permit_acquire_call(const void *obj, int64_t permits, int64_t lease_ms,
                        const cr__permit_id *ids, size_t n,
                        cr__script_call *call)
{
    const cr__sem *s = obj;
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
                .channel = s->channel, .k = permits,
                .expiry_ms = expiry_of(lease_ms), .now_ms = cr__wall_ms(),
                .never = NEVER, .publish = s->client->publish_cmd, .ids = v,
                .ids_lens = lens, .n_ids = n},
            call);
    }
    if (n != 1) {
        free(v);
        free(lens);
    }
    return rc;
}

cr_status
cr__permit_acquire_reply(cr_status rc, cr__reply *r, int64_t *hint)
{
    if (rc != CR_OK)
        return rc;
    rc = cr__fail(CR_ESCRIPT, "permit semaphore acquire replied neither OK, "
                  "an expiry nor nil");
    if (r->type == CR__REPLY_NIL) {
        rc = CR_BUSY;
    } else if (r->type == CR__REPLY_STRING && r->len == 2 &&
               memcmp(r->str, "OK", 2) == 0) {
        rc = CR_OK;
    } else if (r->type == CR__REPLY_STRING && r->len > 1 && r->str[0] == ':') {
        char *end = NULL;
        double t = strtod(r->str + 1, &end);

        if (end != r->str + 1 && *end == '\0') {
            double left = t - (double)cr__wall_ms();

            *hint = left < 0 ? 0 : left > (double)CR_DURATION_MAX
                                       ? CR_DURATION_MAX : (int64_t)left;
            rc = CR_BUSY;
        }
    }
    cr__reply_free(r);
    return rc;
}

/* One attempt of the wait, with fresh ids and expiry. */
static cr_status
attempt(attempt_ctx *a, int64_t *hint)
{
    cr_permit_semaphore *s = a->sem;
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc = CR_OK;

    *hint = -1;
    if (a->uncertain) {
        bool granted = false;

        rc = resolve_lost_reply(a, &granted);
        if (rc != CR_OK)
            return rc;
        if (granted)
            return CR_OK;
    }
    for (size_t i = 0; i < a->n && rc == CR_OK; i++)
        rc = cr__permit_id_new(s, &a->ids[i]);
    if (rc == CR_OK)
        rc = cr__permit_acquire_call(s, a->permits, a->lease_ms, a->ids, a->n,
                                     &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(a->op, &cmd, &call, &r);
    cr__script_call_free(&call);
    if (rc == CR_EIO && cmd.sent)
        a->uncertain = true; /* it may have run: its reply was lost */
    return cr__permit_acquire_reply(rc, r, hint);
}

static cr_status release(const cr__op *op, cr_permit_semaphore *s,
                         const char *hex, int64_t permits, int64_t *result);

/* Gives back the n ids of an acquisition of `permits`, within `op`. */
static void
give_back(const cr__op *op, cr_permit_semaphore *s, const cr__permit_id *ids,
          size_t n, int64_t permits)
{
    char hex[CR_PERMIT_ID_LEN + 1];
    int64_t ignored;

    for (size_t i = 0; i < n; i++) {
        cr__permit_id_hex(&ids[i], hex);
        release(op, s, hex, n == 1 ? permits : 1, &ignored);
    }
}

/* Permits whose grant may have come after their caller gave up. */
typedef struct late_permit {
    cr_permit_semaphore *sem;
    int64_t permits;
    size_t n;
    cr__permit_id ids[]; /* n */
} late_permit;

/* Background: if the permits were granted, give them back. */
static void
late_permit_run(const cr__op *op, void *arg)
{
    late_permit *p = arg;
    attempt_ctx a;
    bool granted = false;

    memset(&a, 0, sizeof(a));
    a.op = op;
    a.sem = p->sem;
    a.ids = p->ids;
    a.n = p->n;
    if (resolve_lost_reply(&a, &granted) != CR_OK || !granted)
        return;
    cr__log(&p->sem->client->log, CR_LOG_INFO, "permit semaphore %s: "
            "permits granted after their caller gave up are given back",
            p->sem->name);
    give_back(op, p->sem, p->ids, p->n, p->permits);
}

static void
late_permit_done(void *arg)
{
    free(arg);
}

void
cr__permit_late(void *s, const cr__permit_id *ids, size_t n, int64_t permits)
{
    late_permit *p = calloc(1, sizeof(*p) + n * sizeof(p->ids[0]));

    if (p == NULL)
        return;
    p->sem = s;
    p->permits = permits;
    p->n = n;
    memcpy(p->ids, ids, n * sizeof(p->ids[0]));
    cr__object_background(s, late_permit_run, late_permit_done, p);
}

/* Acquisition shared by the acquire calls: `permits` under their ids,
 * written to `out` (CR_PERMIT_ID_LEN + 1 bytes each) with their number in
 * *n_out (may be NULL when it is 1). */
static cr_status
acquire(cr_permit_semaphore *s, int64_t permits, int64_t wait_ms,
        int64_t lease_ms, char *out, size_t *n_out)
{
    attempt_ctx a;
    cr__wait w;
    int64_t hint = -1;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    memset(&a, 0, sizeof(a));
    if ((rc = cr__check_wait(wait_ms)) != CR_OK ||
        (rc = cr__check_lease(lease_ms, "CR_LEASE_NONE")) != CR_OK ||
        (rc = check_acquire_n(s, permits, lease_ms)) != CR_OK ||
        (rc = cr__check_out(out, "id")) != CR_OK)
        goto out;
    cr__op_wait(&op, wait_ms);
    a.op = &op;
    a.sem = s;
    a.permits = permits;
    a.lease_ms = lease_ms;
    a.n = id_per_permit(s) ? (size_t)permits : 1;
    if ((a.ids = calloc(a.n, sizeof(*a.ids))) == NULL) {
        rc = cr__fail(CR_ENOMEM, "out of memory");
        goto out;
    }
    cr__wait_turn(s->client->pubsub, s->channel, &s->handoff, wait_ms);
    cr__object_wait_begin(&w, &op, s, "permit semaphore", s->channel,
                          cr__sem_decode, false, wait_ms);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = attempt(&a, &hint);
    if ((rc == CR_EIO || rc == CR_BUSY) && a.uncertain) {
        bool granted = false;

        /* One look if a connection is at hand; else in the background,
         * which gives permits granted too late back. */
        op.patience = cr__now_ms();
        if (resolve_lost_reply(&a, &granted) != CR_OK)
            cr__permit_late(s, a.ids, a.n, permits);
        else if (granted)
            rc = CR_OK;
    }
    if (rc == CR_OK && atomic_load(&s->client->closing)) {
        /* Granted while the client is being freed: the caller could not
         * release them any more; give them back now, within the free's
         * grace. */
        give_back(&op, s, a.ids, a.n, permits);
        rc = cr__fail(CR_ECLOSED, "the client is being freed (the permits, "
                      "granted meanwhile, were given back)");
    } else if (rc == CR_OK) {
        for (size_t i = 0; i < a.n; i++)
            cr__permit_id_hex(&a.ids[i], out + i * (CR_PERMIT_ID_LEN + 1));
        if (n_out != NULL)
            *n_out = a.n;
    }
out:
    free(a.ids);
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_acquire(cr_permit_semaphore *s, int64_t lease_ms, char *id)
{
    return acquire(s, 1, CR_WAIT_FOREVER, lease_ms, id, NULL);
}

cr_status
cr_permit_semaphore_try_acquire(cr_permit_semaphore *s, int64_t wait_ms,
                                int64_t lease_ms, char *id)
{
    return acquire(s, 1, wait_ms, lease_ms, id, NULL);
}

cr_status
cr_permit_semaphore_acquire_n(cr_permit_semaphore *s, int64_t permits,
                              int64_t lease_ms, char *ids, size_t *n_ids)
{
    return acquire(s, permits, CR_WAIT_FOREVER, lease_ms, ids, n_ids);
}

cr_status
cr_permit_semaphore_try_acquire_n(cr_permit_semaphore *s, int64_t permits,
                                  int64_t wait_ms, int64_t lease_ms,
                                  char *ids, size_t *n_ids)
{
    return acquire(s, permits, wait_ms, lease_ms, ids, n_ids);
}

/* ------------------------------------------------------------ releasing */

cr_status
cr__permit_release_call(const void *obj, const char *hex, int64_t permits,
                        cr__permit_id *id, cr__script_call *call)
{
    const cr__sem *s = obj;
    cr_status rc = decode_id(s, hex, id);

    if (rc != CR_OK)
        return rc;
    return cr__build_permit_semaphore_release(
        &(cr__permit_semaphore_release_args){
            .permits = s->raw, .channel = s->channel, .issued = s->issued,
            .id = {id->b, id->len}, .count = permits,
            .now_ms = cr__wall_ms(), .publish = s->client->publish_cmd},
        call);
}

cr_status
cr__permit_release_reply(void *obj, const char *hex, cr_status rc,
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
release(const cr__op *op, cr_permit_semaphore *s, const char *hex,
        int64_t permits, int64_t *result)
{
    cr__permit_id id;
    int64_t sent = cr__now_us();
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr__sub_seen seen;
    cr_status rc = cr__permit_release_call(s, hex, permits, &id, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(op, &cmd, &call, &r);
    cr__script_call_free(&call);
    cr__pubsub_waiters(s->client->pubsub, s->channel, &seen, NULL);
    return cr__permit_release_reply(s, hex, rc, r, &seen, sent, false, result);
}

cr_status
cr_permit_semaphore_release(cr_permit_semaphore *s, const char *id)
{
    int64_t result = 0;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    rc = release(&op, s, id, 1, &result);
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
        rc = release(&op, s, id, permits, &result);
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
    rc = release(&op, s, id, 1, &result);
    if ((rc == CR_OK || rc == CR_ENOTOWNER || rc == CR_ELOST) &&
        released != NULL)
        *released = result == 1;
    if (rc == CR_ENOTOWNER || rc == CR_ELOST)
        rc = CR_OK; /* tryRelease: only whether it released */
    cr__object_leave(s);
    return rc;
}

/* --------------------------------------------------------------- leases */

cr_status
cr__permit_update_call(const void *obj, const char *hex, int64_t lease_ms,
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
    rc = cr__permit_update_call(s, id, lease_ms, &raw, &call);
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
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    cr__op op;
    cr_status rc = enter(s, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) != CR_OK)
        goto out;
    rc = cr__run_permit_semaphore_set_permits(&op, &cmd,
        &(cr__permit_semaphore_set_permits_args){
            .permits = s->raw, .channel = s->channel, .issued = s->issued,
            .count_value = permits, .publish = s->client->publish_cmd},
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
