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
enter(cr_permit_semaphore *s)
{
    return cr__sem_enter(s, &cr__permit_semaphore_kind);
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

/* Decodes a user's permit id (exactly 32 hex digits, either case) into
 * 16 bytes; CR_EINVAL otherwise. */
static cr_status
decode_id(const char *hex, unsigned char *out)
{
    size_t i;

    if (hex == NULL)
        return cr__fail(CR_EINVAL, "permit id is NULL");
    for (i = 0; i < ID_BYTES; i++) {
        int hi = hex_digit(hex[2 * i]), lo;

        /* hex[2 * i + 1] is safe to read: hex[2 * i] was not the NUL. */
        if (hi < 0 || (lo = hex_digit(hex[2 * i + 1])) < 0)
            break;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    if (i != ID_BYTES || hex[2 * ID_BYTES] != '\0')
        return cr__fail(CR_EINVAL, "permit id is not %d hex digits",
                        CR_PERMIT_ID_LEN);
    return CR_OK;
}

/* The expiry score of a lease starting now. */
static int64_t
expiry_of(int64_t lease_ms)
{
    return lease_ms == CR_LEASE_NONE ? NEVER : cr__wall_ms() + lease_ms;
}

/* ------------------------------------------------------------ acquiring */

typedef struct attempt_ctx {
    cr_permit_semaphore *sem;
    int64_t lease_ms;
    unsigned char id[ID_BYTES]; /* the last attempt's id */
    bool uncertain;             /* the last attempt's reply was lost */
} attempt_ctx;

/* Tells whether the permit of the last attempt is out (its reply was lost
 * but it did run); clears the doubt when Redis answered. */
static cr_status
resolve_lost_reply(attempt_ctx *a, bool *granted)
{
    const char *argv[3] = {"ZSCORE", a->sem->issued, (const char *)a->id};
    size_t lens[3];
    cr__reply *r = NULL;
    cr_status rc;

    lens[0] = 6;
    lens[1] = strlen(a->sem->issued);
    lens[2] = ID_BYTES;
    rc = cr__command_retry(a->sem->client, 3, argv, lens, &r);
    if (rc != CR_OK)
        return rc;
    *granted = r->type != CR__REPLY_NIL;
    cr__reply_free(r);
    a->uncertain = false;
    return CR_OK;
}

cr_status
cr__permit_acquire_call(const void *obj, int64_t lease_ms,
                        const unsigned char *id, cr__script_call *call)
{
    const cr__sem *s = obj;
    const char *ids[1] = {(const char *)id};
    size_t id_lens[1] = {ID_BYTES};

    return cr__build_permit_semaphore_try_acquire(
        &(cr__permit_semaphore_try_acquire_args){
            .permits = s->raw, .issued = s->issued, .channel = s->channel,
            .k = 1, .expiry_ms = expiry_of(lease_ms), .now_ms = cr__wall_ms(),
            .never = NEVER, .publish = s->client->publish_cmd, .ids = ids,
            .ids_lens = id_lens, .n_ids = 1},
        call);
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

/* One attempt of the wait, with a fresh id and expiry. */
static cr_status
attempt(attempt_ctx *a, int64_t *hint)
{
    cr_permit_semaphore *s = a->sem;
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc;

    *hint = -1;
    if (a->uncertain) {
        bool granted = false;

        rc = resolve_lost_reply(a, &granted);
        if (rc != CR_OK)
            return rc;
        if (granted)
            return CR_OK;
    }
    rc = cr__random_bytes(a->id, ID_BYTES);
    if (rc != CR_OK)
        return rc;
    rc = cr__permit_acquire_call(s, a->lease_ms, a->id, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(s->client, &cmd, &call, &r);
    cr__script_call_free(&call);
    if (rc == CR_EIO && cmd.sent)
        a->uncertain = true; /* it may have run: its reply was lost */
    return cr__permit_acquire_reply(rc, r, hint);
}

/* A permit whose grant may have come after its caller gave up. */
typedef struct late_permit {
    cr_permit_semaphore *sem;
    unsigned char id[ID_BYTES];
} late_permit;

/* Background: if the permit was granted, give it back. */
static void
late_permit_run(void *arg)
{
    late_permit *p = arg;
    attempt_ctx a;
    char hex[CR_PERMIT_ID_LEN + 1];
    bool granted = false;

    memset(&a, 0, sizeof(a));
    a.sem = p->sem;
    memcpy(a.id, p->id, ID_BYTES);
    if (resolve_lost_reply(&a, &granted) != CR_OK || !granted)
        return;
    cr__hex(p->id, ID_BYTES, hex);
    cr__log(&p->sem->client->log, CR_LOG_INFO, "permit semaphore %s: a "
            "permit granted after its caller gave up is given back",
            p->sem->name);
    cr_permit_semaphore_release(p->sem, hex);
}

static void
late_permit_done(void *arg)
{
    free(arg);
}

void
cr__permit_late(void *s, const unsigned char *id)
{
    late_permit *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return;
    p->sem = s;
    memcpy(p->id, id, ID_BYTES);
    cr__object_background(s, late_permit_run, late_permit_done, p);
}

static cr_status release(cr_permit_semaphore *s, const char *hex,
                         int64_t *result);

/* Acquisition shared by acquire and try_acquire. */
static cr_status
acquire(cr_permit_semaphore *s, int64_t wait_ms, int64_t lease_ms, char *id)
{
    attempt_ctx a;
    cr__wait w;
    int64_t hint = -1;
    cr_status rc = enter(s);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_wait(wait_ms)) != CR_OK ||
        (rc = cr__check_lease(lease_ms, "CR_LEASE_NONE")) != CR_OK ||
        (rc = cr__check_out(id, "id")) != CR_OK)
        goto out;
    memset(&a, 0, sizeof(a));
    a.sem = s;
    a.lease_ms = lease_ms;
    cr__handoff_before(&s->handoff, s->client, s->channel, wait_ms);
    cr__object_wait_begin(&w, s, "permit semaphore", s->channel,
                          cr__sem_decode, false, wait_ms);
    for (rc = CR_BUSY; cr__wait_next(&w, &rc, hint);)
        rc = attempt(&a, &hint);
    if ((rc == CR_EIO || rc == CR_BUSY) && a.uncertain) {
        int64_t patience = cr__call_patience_set(cr__now_ms());
        bool granted = false;

        /* One look if a connection is at hand; else in the background,
         * which gives a permit granted too late back. */
        if (resolve_lost_reply(&a, &granted) != CR_OK)
            cr__permit_late(s, a.id);
        else if (granted)
            rc = CR_OK;
        cr__call_patience_set(patience);
    }
    if (rc == CR_OK && atomic_load(&s->client->closing)) {
        char hex[CR_PERMIT_ID_LEN + 1];
        int64_t ignored;

        /* Granted while the client is being freed: the caller could not
         * release it any more; give it back now, within the free's grace. */
        cr__hex(a.id, ID_BYTES, hex);
        release(s, hex, &ignored);
        rc = cr__fail(CR_ECLOSED, "the client is being freed (the permit, "
                      "granted meanwhile, was given back)");
    } else if (rc == CR_OK) {
        cr__hex(a.id, ID_BYTES, id);
    }
out:
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_acquire(cr_permit_semaphore *s, int64_t lease_ms, char *id)
{
    return acquire(s, CR_WAIT_FOREVER, lease_ms, id);
}

cr_status
cr_permit_semaphore_try_acquire(cr_permit_semaphore *s, int64_t wait_ms,
                                int64_t lease_ms, char *id)
{
    return acquire(s, wait_ms, lease_ms, id);
}

/* ------------------------------------------------------------ releasing */

cr_status
cr__permit_release_call(const void *obj, const char *hex,
                        unsigned char id[ID_BYTES], cr__script_call *call)
{
    const cr__sem *s = obj;
    cr_status rc = decode_id(hex, id);

    if (rc != CR_OK)
        return rc;
    return cr__build_permit_semaphore_release(
        &(cr__permit_semaphore_release_args){
            .permits = s->raw, .channel = s->channel, .issued = s->issued,
            .id = {(const char *)id, ID_BYTES}, .one = 1,
            .now_ms = cr__wall_ms(), .publish = s->client->publish_cmd},
        call);
}

cr_status
cr__permit_release_reply(void *obj, const char *hex, cr_status rc,
                         cr__reply *r, int64_t sent_us, bool async,
                         int64_t *result)
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
        cr__handoff_after_release(&s->handoff, s->client, s->channel, v / 3,
                                  sent_us);
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
release(cr_permit_semaphore *s, const char *hex, int64_t *result)
{
    unsigned char id[ID_BYTES];
    int64_t sent = cr__now_us();
    cr__script_call call = {0};
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc = cr__permit_release_call(s, hex, id, &call);

    if (rc == CR_OK)
        rc = cr__script_call_run(s->client, &cmd, &call, &r);
    cr__script_call_free(&call);
    return cr__permit_release_reply(s, hex, rc, r, sent, false, result);
}

cr_status
cr_permit_semaphore_release(cr_permit_semaphore *s, const char *id)
{
    int64_t result = 0;
    cr_status rc = enter(s);

    if (rc != CR_OK)
        return rc;
    rc = release(s, id, &result);
    cr__object_leave(s);
    return rc;
}

cr_status
cr_permit_semaphore_try_release(cr_permit_semaphore *s, const char *id,
                                bool *released)
{
    int64_t result = 0;
    cr_status rc = enter(s);

    if (rc != CR_OK)
        return rc;
    rc = release(s, id, &result);
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
                       unsigned char id[ID_BYTES], cr__script_call *call)
{
    const cr__sem *s = obj;
    cr_status rc;

    if ((rc = decode_id(hex, id)) != CR_OK ||
        (rc = cr__check_lease(lease_ms, "CR_LEASE_NONE")) != CR_OK)
        return rc;
    return cr__build_permit_semaphore_update_lease_time(
        &(cr__permit_semaphore_update_lease_time_args){
            .permits = s->raw, .issued = s->issued, .channel = s->channel,
            .id = {(const char *)id, ID_BYTES},
            .expiry_ms = expiry_of(lease_ms), .now_ms = cr__wall_ms(),
            .publish = s->client->publish_cmd},
        call);
}

cr_status
cr_permit_semaphore_update_lease_time(cr_permit_semaphore *s, const char *id,
                                      int64_t lease_ms, bool *updated)
{
    unsigned char raw[ID_BYTES];
    cr__script_call call = {0};
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    bool v = false;
    cr_status rc = enter(s);

    if (rc != CR_OK)
        return rc;
    rc = cr__permit_update_call(s, id, lease_ms, raw, &call);
    if (rc == CR_OK)
        rc = cr__script_call_run(s->client, &cmd, &call, &r);
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
    unsigned char raw[ID_BYTES];
    cr__cmd cmd = {.flags = CR__CMD_RETRY};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = enter(s);

    if (rc != CR_OK)
        return rc;
    if ((rc = decode_id(id, raw)) != CR_OK ||
        (rc = cr__check_out(remaining_ms, "remaining_ms")) != CR_OK)
        goto out;
    rc = cr__run_permit_semaphore_get_lease_time(s->client, &cmd,
        &(cr__permit_semaphore_get_lease_time_args){
            .permits = s->raw, .issued = s->issued, .channel = s->channel,
            .id = {(const char *)raw, ID_BYTES}, .never = NEVER,
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
    cr_status rc = enter(s);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(out, "permits")) != CR_OK)
        goto out;
    rc = cr__run_permit_semaphore_permits(s->client, &cmd,
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
    cr_status rc = enter(s);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_permits(permits)) != CR_OK)
        goto out;
    rc = cr__run_permit_semaphore_set_permits(s->client, &cmd,
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
