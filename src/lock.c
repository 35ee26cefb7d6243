/* SPDX-License-Identifier: MIT */
/*
 * The public calls on a cr_lock, whatever its class: the guard, the
 * argument checks, then the class (lock.h).
 */
#include "config.h"

#include <stdlib.h>

#include "lock.h"

cr_status
cr__lock_create(cr_client *c, const char *name, const cr__lock_class *cls,
                const char *label, bool keyed, cr_lock **out)
{
    cr_lock *l = NULL;
    cr_status rc;

    if (out == NULL)
        return cr__fail(CR_EINVAL, "out is NULL");
    rc = cr__object_new(c, name, CR__LOCK_MAGIC, sizeof(*l), keyed,
                        (void **)&l);
    if (rc != CR_OK)
        return rc;
    l->cls = cls;
    l->label = label;
    atomic_init(&l->lease_ms, c->watchdog_timeout_ms);
    cr__handoff_init(&l->handoff);
    *out = l;
    return CR_OK;
}

/* Frees what the class owns (cr__object_free's `own`). */
static void
free_class_parts(void *obj)
{
    cr_lock *l = obj;

    l->cls->free_own(l);
}

void
cr__lock_destroy(cr_lock *l)
{
    if (l == NULL || l->magic != CR__LOCK_MAGIC)
        return;
    cr__object_free(l, free_class_parts);
}

void
cr_lock_free(cr_lock *l)
{
    if (l == NULL || l->magic != CR__LOCK_MAGIC || l->owned)
        return;
    cr__lock_destroy(l);
}

const char *
cr_lock_name(const cr_lock *l)
{
    return cr__object_name(l, CR__LOCK_MAGIC);
}

cr_status
cr__lock_enter(const cr_lock *l, cr__op *op)
{
    return cr__object_enter(l, CR__LOCK_MAGIC, "lock", op);
}

void
cr__lock_leave(const cr_lock *l)
{
    cr__object_leave(l);
}

/* ------------------------------------------------------------ acquiring */

cr_status
cr__lock_try_lock(cr_lock *l, cr__event_sink *sink, int64_t tid,
                  int64_t wait_ms, int64_t lease_ms, int64_t *token)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    op.sink = sink;
    if ((rc = cr__check_wait(wait_ms)) == CR_OK &&
        (rc = cr__check_lease(lease_ms, "CR_LEASE_WATCHDOG")) == CR_OK) {
        wait_ms = cr__op_wait(&op, wait_ms);
        rc = l->cls->acquire(&op, l, tid, wait_ms, lease_ms, token);
    }
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_lock(cr_lock *l, int64_t lease_ms)
{
    return cr__lock_try_lock(l, NULL, cr_thread_id(), CR_WAIT_FOREVER, lease_ms,
                             NULL);
}

cr_status
cr_lock_try_lock(cr_lock *l, int64_t wait_ms, int64_t lease_ms)
{
    return cr__lock_try_lock(l, NULL, cr_thread_id(), wait_ms, lease_ms, NULL);
}

cr_status
cr_lock_lock_tid(cr_lock *l, int64_t tid, int64_t lease_ms)
{
    return cr__lock_try_lock(l, NULL, tid, CR_WAIT_FOREVER, lease_ms, NULL);
}

cr_status
cr_lock_try_lock_tid(cr_lock *l, int64_t tid, int64_t wait_ms, int64_t lease_ms)
{
    return cr__lock_try_lock(l, NULL, tid, wait_ms, lease_ms, NULL);
}

/* ------------------------------------------------------------ releasing */

cr_status
cr__lock_unlock(cr_lock *l, cr__event_sink *sink, int64_t tid)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    op.sink = sink;
    rc = l->cls->release(&op, l, tid);
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_unlock_tid(cr_lock *l, int64_t tid)
{
    return cr__lock_unlock(l, NULL, tid);
}

cr_status
cr_lock_unlock(cr_lock *l)
{
    return cr_lock_unlock_tid(l, cr_thread_id());
}

/* force_unlock (`force`) and delete; *out (may be NULL) set. */
static cr_status
remove_lock(cr_lock *l, bool force, bool *out)
{
    bool done = false;
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    rc = force ? l->cls->force_unlock(&op, l, &done)
               : l->cls->delete_(&op, l, &done);
    if (rc == CR_OK && out != NULL)
        *out = done;
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_force_unlock(cr_lock *l, bool *unlocked)
{
    return remove_lock(l, true, unlocked);
}

cr_status
cr_lock_delete(cr_lock *l, bool *deleted)
{
    return remove_lock(l, false, deleted);
}

/* -------------------------------------------------------------- queries */

cr_status
cr_lock_is_locked(cr_lock *l, bool *locked)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(locked, "locked")) == CR_OK)
        rc = l->cls->is_locked(&op, l, locked);
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_get_hold_count_tid(cr_lock *l, int64_t tid, int64_t *count)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(count, "count")) == CR_OK)
        rc = l->cls->hold_count(&op, l, tid, count);
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_get_hold_count(cr_lock *l, int64_t *count)
{
    return cr_lock_get_hold_count_tid(l, cr_thread_id(), count);
}

cr_status
cr_lock_is_held_by_thread(cr_lock *l, int64_t tid, bool *held)
{
    int64_t n = 0;
    cr_status rc;

    if (held == NULL)
        return cr__fail(CR_EINVAL, "held is NULL");
    rc = cr_lock_get_hold_count_tid(l, tid, &n);
    if (rc == CR_OK)
        *held = n > 0;
    return rc;
}

cr_status
cr_lock_is_held_by_current_thread(cr_lock *l, bool *held)
{
    return cr_lock_is_held_by_thread(l, cr_thread_id(), held);
}

cr_status
cr_lock_remain_time_to_live(cr_lock *l, int64_t *ttl_ms)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(ttl_ms, "ttl_ms")) == CR_OK)
        rc = l->cls->remain_ttl(&op, l, ttl_ms);
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_is_lost_tid(cr_lock *l, int64_t tid, bool *lost)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(lost, "lost")) == CR_OK)
        rc = l->cls->is_lost(l, tid, lost);
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_is_lost(cr_lock *l, bool *lost)
{
    return cr_lock_is_lost_tid(l, cr_thread_id(), lost);
}

cr_status
cr_lock_lease_left_tid(cr_lock *l, int64_t tid, int64_t *left_ms)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    if ((rc = cr__check_out(left_ms, "left_ms")) == CR_OK)
        rc = l->cls->lease_left(l, tid, left_ms);
    cr__lock_leave(l);
    return rc;
}

cr_status
cr_lock_lease_left(cr_lock *l, int64_t *left_ms)
{
    return cr_lock_lease_left_tid(l, cr_thread_id(), left_ms);
}

cr_status
cr_lock_set_lost_callback(cr_lock *l, cr_lock_lost_fn fn, void *userdata)
{
    cr__op op;
    cr_status rc = cr__lock_enter(l, &op);

    if (rc != CR_OK)
        return rc;
    l->lost_fn = fn;
    l->lost_userdata = userdata;
    cr__lock_leave(l);
    return CR_OK;
}
