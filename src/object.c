/* SPDX-License-Identifier: MIT */
/*
 * The head of every handle: creation, freeing, background jobs, the call
 * guard, shared argument checks, and the waiting of objects that are not
 * locks (see object.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "object.h"

/* Frees the names of a head. */
static void
free_names(cr__object *o)
{
    if (o->raw != o->name)
        free(o->raw);
    free(o->name);
}

cr_status
cr__object_new(cr_client *c, const char *name, uint32_t magic, size_t size,
               bool keyed, void **out)
{
    cr__object *o;
    cr__op op;
    cr_status rc;

    cr__clear_error();
    rc = cr__name_check(name);
    if (rc != CR_OK)
        return rc;
    rc = cr__client_enter(c, &op);
    if (rc != CR_OK)
        return rc;
    o = calloc(1, size);
    /* Without a name prefix the raw name is the name: one string. */
    if (o == NULL || (o->name = strdup(name)) == NULL ||
        (o->raw = c->name_prefix != NULL ? cr__name_raw(c->name_prefix, name)
                                         : o->name) == NULL) {
        if (o != NULL)
            free(o->name);
        free(o);
        cr__client_leave(c);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    if (keyed &&
        (rc = cr__name_check_slots(c->url.is_cluster, o->raw, NULL)) != CR_OK) {
        free_names(o);
        free(o);
        cr__client_leave(c);
        return rc;
    }
    o->magic = magic;
    o->client = c;
    atomic_init(&o->bg_pending, 0);
    cr__client_leave(c);
    *out = o;
    return CR_OK;
}

void
cr__object_free(void *obj, void (*own)(void *obj))
{
    cr__object *o = obj;

    if (o == NULL)
        return;
    /* A give-back under way uses the handle: it ends within two command
     * timeouts, or at once when the client is freed. */
    while (atomic_load(&o->bg_pending) > 0)
        cr__sleep_ms(1);
    if (own != NULL)
        own(obj);
    o->magic = 0;
    free_names(o);
    free(o);
}

/* What cr__object_background hands cr__background. */
typedef struct object_job {
    cr__object *o;
    void (*run)(const cr__op *op, void *arg);
    void (*done)(void *arg);
    void *arg;
} object_job;

static void
object_job_run(const cr__op *op, void *arg)
{
    object_job *j = arg;

    j->run(op, j->arg);
}

static void
object_job_done(void *arg, bool ran)
{
    object_job *j = arg;

    (void)ran;
    j->done(j->arg);
    atomic_fetch_sub(&j->o->bg_pending, 1);
    free(j);
}

void
cr__object_background(void *obj, void (*run)(const cr__op *op, void *arg),
                      void (*done)(void *arg), void *arg)
{
    cr__object *o = obj;
    object_job *j = calloc(1, sizeof(*j));
    char keep[512];

    if (j == NULL) {
        done(arg);
        return;
    }
    snprintf(keep, sizeof(keep), "%s", cr_last_error());
    j->o = o;
    j->run = run;
    j->done = done;
    j->arg = arg;
    atomic_fetch_add(&o->bg_pending, 1);
    cr__background(o->client, object_job_run, object_job_done, j);
    cr__fail(CR_OK, "%s", keep); /* the caller's detail stays */
}

cr_status
cr__object_enter(const void *obj, uint32_t magic, const char *kind, cr__op *op)
{
    const cr__object *o = obj;

    cr__clear_error();
    if (o == NULL)
        return cr__fail(CR_EINVAL, "%s is NULL", kind);
    if (o->magic != magic)
        return cr__fail(CR_EINVAL, "not a live %s handle (freed?)", kind);
    return cr__client_enter(o->client, op);
}

void
cr__object_leave(const void *obj)
{
    cr__client_leave(((const cr__object *)obj)->client);
}

const char *
cr__object_name(const void *obj, uint32_t magic)
{
    const cr__object *o = obj;

    return o != NULL && o->magic == magic ? o->name : "";
}

cr_status
cr__check_wait(int64_t wait_ms)
{
    if (wait_ms == CR_WAIT_FOREVER ||
        (wait_ms >= 0 && wait_ms <= CR_DURATION_MAX))
        return CR_OK;
    return cr__fail(CR_EINVAL, "wait of %lld ms is neither CR_WAIT_FOREVER "
                    "nor in 0..CR_DURATION_MAX", (long long)wait_ms);
}

cr_status
cr__check_lease(int64_t lease_ms, const char *none_name)
{
    if (lease_ms == -1 || (lease_ms > 0 && lease_ms <= CR_DURATION_MAX))
        return CR_OK;
    return cr__fail(CR_EINVAL, "lease of %lld ms is neither %s nor in "
                    "1..CR_DURATION_MAX", (long long)lease_ms, none_name);
}

cr_status
cr__check_ttl(int64_t ttl_ms)
{
    if (ttl_ms >= 0 && ttl_ms <= CR_DURATION_MAX)
        return CR_OK;
    return cr__fail(CR_EINVAL, "time to live of %lld ms is neither 0 (none) "
                    "nor in 1..CR_DURATION_MAX", (long long)ttl_ms);
}

cr_status
cr__check_range(const char *what, int64_t v, int64_t min, int64_t max)
{
    if (v >= min && v <= max)
        return CR_OK;
    return cr__fail(CR_EINVAL, "%s of %lld is not in %lld..%lld", what,
                    (long long)v, (long long)min, (long long)max);
}

cr_status
cr__check_out(const void *out, const char *what)
{
    return out != NULL ? CR_OK : cr__fail(CR_EINVAL, "%s is NULL", what);
}

cr_status
cr__object_get_count(const cr__op *op, const void *obj, const char *kind,
                     int64_t *out)
{
    const cr__object *o = obj;
    char what[128];

    snprintf(what, sizeof(what), "%s %s", kind, o->name);
    return cr__command_get_int(op, o->raw, what, out);
}

void
cr__object_wait_begin(cr__wait *w, cr__op *op, const void *obj,
                      const char *kind, const char *channel,
                      cr__decode_fn decode, bool trust_open, int64_t wait_ms)
{
    cr__wait_spec spec = {
        .ev_object = kind,
        .ev_name = ((const cr__object *)obj)->name,
        .ev_busy = kind != NULL && strcmp(kind, "latch") == 0 ? CR_TIMEOUT
                                                               : CR_BUSY,
        .channel = channel,
        .decode = decode,
        .wait_ms = wait_ms,
        .min_sleep_ms = 1,
        .max_sleep_ms = CR__OBJECT_RECHECK_MS,
        .trust_open = trust_open,
    };

    cr__wait_begin(w, op, &spec);
}

cr_status
cr__check_permits(int64_t permits)
{
    return cr__check_range("permits", permits, 0, CR_PERMITS_MAX);
}

cr_status
cr__check_delta(int64_t delta)
{
    return cr__check_range("delta", delta, -CR_PERMITS_MAX, CR_PERMITS_MAX);
}
