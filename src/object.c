/* SPDX-License-Identifier: MIT */
/*
 * Handles of the non-lock objects: creation, the call guard, argument
 * checks, replies, waiting, and the semaphores' shared scripts (see
 * object.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "object.h"

cr_status
cr__object_new(cr_client *c, const char *name, uint32_t magic, size_t size,
               void **out)
{
    cr__object *o;
    cr_status rc;

    cr__clear_error();
    rc = cr__name_check(name);
    if (rc != CR_OK)
        return rc;
    rc = cr__client_enter(c);
    if (rc != CR_OK)
        return rc;
    o = calloc(1, size);
    if (o == NULL || (o->name = strdup(name)) == NULL ||
        (o->raw = cr__name_raw(c->name_prefix, name)) == NULL) {
        if (o != NULL)
            free(o->name);
        free(o);
        cr__client_leave(c);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    if ((rc = cr__name_check_slots(c->url.is_cluster, o->raw, NULL)) != CR_OK) {
        free(o->name);
        free(o->raw);
        free(o);
        cr__client_leave(c);
        return rc;
    }
    o->magic = magic;
    o->client = c;
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
    free(o->name);
    free(o->raw);
    free(o);
}

/* What cr__object_background hands cr__background. */
typedef struct object_job {
    cr__object *o;
    void (*run)(void *arg);
    void (*done)(void *arg);
    void *arg;
} object_job;

static void
object_job_run(void *arg)
{
    object_job *j = arg;

    j->run(j->arg);
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
cr__object_background(void *obj, void (*run)(void *arg),
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
cr__object_enter(const void *obj, uint32_t magic, const char *kind)
{
    const cr__object *o = obj;

    cr__clear_error();
    if (o == NULL)
        return cr__fail(CR_EINVAL, "%s is NULL", kind);
    if (o->magic != magic)
        return cr__fail(CR_EINVAL, "not a live %s handle (freed?)", kind);
    return cr__client_enter(o->client);
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
cr__object_get_count(const void *obj, const char *kind, int64_t *out)
{
    const cr__object *o = obj;
    const char *argv[2] = {"GET", o->raw};
    cr__reply *r = NULL;
    int64_t v = 0;
    cr_status rc = cr__command_retry(o->client, 2, argv, NULL, &r);

    if (rc != CR_OK)
        return rc;
    if (r->type != CR__REPLY_NIL && !cr__reply_int(r, &v))
        rc = cr__fail(CR_ESCRIPT, "%s %s holds no number", kind, o->name);
    else
        *out = v;
    cr__reply_free(r);
    return rc;
}

cr_status
cr__object_wait(const void *obj, const char *channel, cr__wake_mode mode,
                int64_t wait_ms, cr__attempt_fn attempt, void *ctx)
{
    cr__wait_spec spec;

    spec.channel = channel;
    spec.mode = mode;
    spec.wait_ms = wait_ms;
    spec.min_sleep_ms = 1;
    spec.max_sleep_ms = CR__OBJECT_RECHECK_MS;
    spec.trust_open = mode == CR__WAKE_LATCH;
    spec.in_line = false;
    spec.attempt = attempt;
    spec.ctx = ctx;
    return cr__wait(((const cr__object *)obj)->client, &spec);
}

/* ------------------------------------------------ the releaser's turn */

#define TURN_RTTS 4 /* RLock's shortest turn */

void
cr__turn_leave(cr_client *c, const char *channel, int64_t heard,
               int64_t sent_us, _Atomic int64_t *until_us)
{
    uint64_t released = 0;
    int64_t read_at = 0, now = cr__now_us();
    int local = cr__pubsub_waiters(c->pubsub, channel, &released, &read_at,
                                   NULL);

    if (heard - (local >= 0 ? 1 : 0) <= 0 && local <= 0)
        return;
    atomic_store(until_us, now + cr__turn_us(TURN_RTTS, now - sent_us));
}

void
cr__turn_take(_Atomic int64_t *until_us, int64_t wait_ms)
{
    int64_t pause = atomic_load(until_us) - cr__now_us();

    if (wait_ms == 0)
        return;
    if (wait_ms > 0 && pause > wait_ms * 1000)
        pause = wait_ms * 1000;
    if (pause > 0)
        cr__sleep_us(pause);
}

/* ------------------------------------------------ the semaphores' scripts */

cr_status
cr__sem_try_set_permits(const void *obj, const char *channel, int64_t permits,
                        int64_t ttl_ms, bool *set)
{
    const cr__object *o = obj;
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    bool done = false;
    cr_status rc = cr__check_permits(permits);

    if (rc == CR_OK)
        rc = cr__run_semaphore_try_set_permits(o->client, &cmd,
            &(cr__semaphore_try_set_permits_args){
                .permits = o->raw, .channel = channel, .count_value = permits,
                .publish = o->client->publish_cmd, .ttl_ms = ttl_ms},
            &r);
    if (rc == CR_OK)
        rc = cr__reply_bool(r, "try_set_permits", &done);
    if (rc == CR_OK && set != NULL)
        *set = done;
    return rc;
}

cr_status
cr__sem_add_permits(const void *obj, const char *channel, int64_t delta,
                    const char *mode)
{
    const cr__object *o = obj;
    cr__cmd cmd = {0};
    cr__reply *r = NULL;
    cr_status rc = cr__check_delta(delta);

    if (rc == CR_OK)
        rc = cr__run_semaphore_add_permits(o->client, &cmd,
            &(cr__semaphore_add_permits_args){
                .permits = o->raw, .channel = channel, .delta = delta,
                .publish = o->client->publish_cmd, .what = mode},
            &r);
    if (rc == CR_OK)
        cr__reply_free(r);
    return rc;
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
