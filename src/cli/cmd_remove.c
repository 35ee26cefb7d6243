/* SPDX-License-Identifier: MIT */
/*
 * The escape hatches (cmd_remove.h): `credisson unlock --force NAME`, a
 * lock released whoever holds it, and `credisson delete NAME`, any object
 * deleted, each as Redisson does it for the kind the name holds (read
 * first with cr_object_inspect). Both say whom they removed, and refuse
 * while that holder's client is connected, or cannot be told to be gone,
 * unless --yes. What they remove is the holder the snapshot named just
 * before: one that came in between is removed too, and not named.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cmd_remove.h"
#include "inspect.h"
#include "util.h"

/* Whether the kind is a lock of any sort. */
static bool is_lock(cr_object_kind k)
{
    return k == CR_OBJECT_LOCK || k == CR_OBJECT_FAIR_LOCK ||
           k == CR_OBJECT_RWLOCK;
}

/* The first owner in the snapshot whose client may still be running:
 * connected, or not known to be gone (a holder, or a barrier's waiting
 * party); NULL when every one is gone. */
static const cr_owner_info *live_owner(const cr_object_info *in)
{
    size_t i;

    for (i = 0; i < in->nholders; i++)
        if (in->holders[i].who.presence != CR_PRESENCE_GONE)
            return &in->holders[i].who;
    for (i = 0; i < in->nwaiting_parties; i++)
        if (in->waiting_parties[i].who.presence != CR_PRESENCE_GONE)
            return &in->waiting_parties[i].who;
    return NULL;
}

/* The permits out whose lease has not run out at the snapshot's time. */
static int64_t permits_out(const cr_object_info *in)
{
    int64_t n = 0;
    size_t i;

    for (i = 0; i < in->npermits; i++)
        n += in->permits[i].never || in->permits[i].expires_ms > in->now_ms;
    return n + (in->issued_count - (int64_t)in->npermits);
}

/* Refuses to go on while someone may still hold what would be removed:
 * a holder or waiting party whose client is connected or cannot be told
 * gone, or permits out whose holders nobody can name. Returns 0 when the
 * way is clear, or 75 having said why. */
static int refuse_if_live(cr__cli *cli, const cr_object_info *in,
                          const char *done)
{
    const cr_owner_info *w = live_owner(in);
    char owner[128], who[160];
    int64_t out;

    if (w != NULL) {
        cr__cli_printable(w->owner, owner, sizeof(owner));
        cr__cli_error(cli, "'%s' is held by %s (%s), whose client %s: not "
                      "%s; give --yes to go on anyway", cli->name_shown,
                      owner, cr__cli_client_text(w, false, who, sizeof(who)),
                      w->presence == CR_PRESENCE_CONNECTED
                          ? "is connected"
                          : "cannot be told gone (CLIENT LIST refused, or "
                            "unnamed connections)",
                      done);
        return CR__CLI_EXIT_BUSY;
    }
    out = in->kind == CR_OBJECT_PERMIT_SEMAPHORE ? permits_out(in) : 0;
    if (out > 0) {
        cr__cli_error(cli, "'%s' has %lld permit%s out, whose holders "
                      "cannot be named: not %s; give --yes to go on anyway",
                      cli->name_shown, (long long)out, out == 1 ? "" : "s",
                      done);
        return CR__CLI_EXIT_BUSY;
    }
    return 0;
}

/* Opens a handle of the lock kind the snapshot shows: *rw for a
 * read/write lock, with *lock its side in the mode it is held in, else
 * *lock. Free with close_lock. */
static cr_status open_lock(cr__cli *cli, const cr_object_info *in,
                           cr_rwlock **rw, cr_lock **lock)
{
    const char *name = cli->args->name;
    cr_status rc;

    *rw = NULL;
    *lock = NULL;
    if (in->kind == CR_OBJECT_RWLOCK)
        rc = cr_rwlock_new(cli->client, name, rw);
    else if (in->kind == CR_OBJECT_FAIR_LOCK)
        rc = cr_fair_lock_new(cli->client, name, lock);
    else if (in->has_token)
        rc = cr_fenced_lock_new(cli->client, name, lock);
    else
        rc = cr_lock_new(cli->client, name, lock);
    if (rc == CR_OK && *rw != NULL)
        *lock = in->mode != NULL && strcmp(in->mode, "write") == 0
                    ? cr_rwlock_write_lock(*rw)
                    : cr_rwlock_read_lock(*rw);
    return rc;
}

/* Frees what open_lock made. */
static void close_lock(cr_rwlock *rw, cr_lock *lock)
{
    if (rw != NULL)
        cr_rwlock_free(rw);
    else
        cr_lock_free(lock);
}

/* Releases the lock the snapshot shows, whoever holds it, with the
 * forceUnlock of its kind (the side of a read/write lock in its mode).
 * *done tells whether it was held. */
static cr_status force_unlock(cr__cli *cli, const cr_object_info *in,
                              bool *done)
{
    cr_rwlock *rw;
    cr_lock *lock;
    cr_status rc = open_lock(cli, in, &rw, &lock);

    if (rc == CR_OK)
        rc = cr_lock_force_unlock(lock, done);
    close_lock(rw, lock);
    return rc;
}

/* Deletes what the snapshot shows with its kind's delete. A lock of any
 * kind is force-unlocked first, so that its waiters, Java's too, are
 * woken (Redisson's delete of a fair or read/write lock publishes
 * nothing). *done tells whether there was something to delete. */
static cr_status delete_object(cr__cli *cli, const cr_object_info *in,
                               bool *done)
{
    const char *name = cli->args->name;
    cr_client *c = cli->client;
    cr_status rc = CR_OK;
    bool more = false;

    *done = false;
    switch (in->kind) {
    case CR_OBJECT_LOCK:
    case CR_OBJECT_FAIR_LOCK:
    case CR_OBJECT_RWLOCK: {
        cr_rwlock *rw;
        cr_lock *lock;

        rc = open_lock(cli, in, &rw, &lock);
        if (rc == CR_OK)
            rc = cr_lock_force_unlock(lock, done);
        if (rc == CR_OK)
            rc = rw != NULL ? cr_rwlock_delete(rw, &more)
                            : cr_lock_delete(lock, &more);
        close_lock(rw, lock);
        break;
    }
    case CR_OBJECT_SEMAPHORE: {
        cr_semaphore *s = NULL;

        rc = cr_semaphore_new(c, name, &s);
        if (rc == CR_OK)
            rc = cr_semaphore_delete(s, &more);
        cr_semaphore_free(s);
        break;
    }
    case CR_OBJECT_PERMIT_SEMAPHORE: {
        cr_permit_semaphore *s = NULL;

        rc = cr_permit_semaphore_new(c, name, &s);
        if (rc == CR_OK)
            rc = cr_permit_semaphore_delete(s, &more);
        cr_permit_semaphore_free(s);
        break;
    }
    case CR_OBJECT_LATCH:
    case CR_OBJECT_SEMAPHORE_OR_LATCH: {
        /* A latch's delete is a semaphore's and tells its waiters. */
        cr_latch *l = NULL;

        rc = cr_latch_new(c, name, &l);
        if (rc == CR_OK)
            rc = cr_latch_delete(l, &more);
        cr_latch_free(l);
        break;
    }
    case CR_OBJECT_BARRIER: {
        cr_barrier *b = NULL;

        rc = cr_barrier_new(c, name, in->parties > 0 ? in->parties : 1, &b);
        if (rc == CR_OK)
            rc = cr_barrier_delete(b, &more);
        cr_barrier_free(b);
        break;
    }
    case CR_OBJECT_RATE_LIMITER: {
        cr_rate_limiter *r = NULL;

        rc = cr_rate_limiter_new(c, name, &r);
        if (rc == CR_OK)
            rc = cr_rate_limiter_delete(r, &more);
        cr_rate_limiter_free(r);
        break;
    }
    case CR_OBJECT_NONE:
    case CR_OBJECT_OTHER:
        break;
    }
    *done = *done || more;
    return rc;
}

/* Prints what was removed: the kind and each holder (or waiting party)
 * with its client, as text or as one JSON object. */
static void report(cr__cli *cli, const cr_object_info *in, bool done)
{
    bool force = cli->args->action == CR__CLI_FORCE_UNLOCK;
    const char *verb = force ? "unlocked" : "deleted";
    char kind[96], owner[128], who[160];
    size_t i;

    if (cli->args->json) {
        fputs("{\"name\":", stdout);
        cr__cli_json_str(stdout, cli->args->name, strlen(cli->args->name));
        printf(",\"type\":\"%s\",\"%s\":%s,\"holders\":[",
               cr_object_kind_name(in->kind), verb, done ? "true" : "false");
        for (i = 0; i < in->nholders; i++) {
            const cr_holder_info *h = &in->holders[i];

            fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
            cr__cli_json_str(stdout, h->who.owner, h->who.owner_len);
            printf(",\"count\":%lld", (long long)h->count);
            cr__cli_json_client(&h->who);
            fputc('}', stdout);
        }
        fputs("],\"waiting_parties\":[", stdout);
        for (i = 0; i < in->nwaiting_parties; i++) {
            const cr_party_info *p = &in->waiting_parties[i];

            fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
            cr__cli_json_str(stdout, p->who.owner, p->who.owner_len);
            cr__cli_json_client(&p->who);
            fputc('}', stdout);
        }
        fputs("]}\n", stdout);
        return;
    }
    cr__cli_kind_phrase(in, kind, sizeof(kind));
    if (!done) {
        printf("'%s' (%s) %s\n", cli->name_shown, kind,
               force ? "was free: nothing unlocked" : "was gone already");
        return;
    }
    printf("%s '%s' (%s)\n", verb, cli->name_shown, kind);
    for (i = 0; i < in->nholders; i++) {
        const cr_holder_info *h = &in->holders[i];

        cr__cli_printable(h->who.owner, owner, sizeof(owner));
        printf("  holder %s (hold count %lld), client: %s\n", owner,
               (long long)h->count,
               cr__cli_client_text(&h->who, false, who, sizeof(who)));
    }
    for (i = 0; i < in->nwaiting_parties; i++) {
        const cr_party_info *p = &in->waiting_parties[i];

        cr__cli_printable(p->who.owner, owner, sizeof(owner));
        printf("  waiting party %s, client: %s\n", owner,
               cr__cli_client_text(&p->who, false, who, sizeof(who)));
    }
    if (!force && in->has_token && is_lock(in->kind))
        printf("  its fencing token (last %lld) is deleted too: tokens "
               "start again from 1\n", (long long)in->token);
}

int cr__cli_cmd_remove(cr__cli *cli)
{
    bool force = cli->args->action == CR__CLI_FORCE_UNLOCK, done = false;
    cr_object_info *in = NULL;
    char kind[96];
    cr_status rc;
    int code = 0;

    rc = cr_object_inspect(cli->client, cli->args->name, &in);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot read '%s'", cli->name_shown);
    cr__cli_kind_phrase(in, kind, sizeof(kind));
    if (in->kind == CR_OBJECT_NONE) {
        cr__cli_error(cli, "nothing under '%s': nothing to %s",
                      cli->name_shown, force ? "unlock" : "delete");
        code = CR__CLI_EXIT_NOTHING;
    } else if (force && !is_lock(in->kind)) {
        cr__cli_error(cli, "'%s' holds %s, not a lock: nothing unlocked "
                      "('credisson delete' removes any object)",
                      cli->name_shown, kind);
        code = CR__CLI_EXIT_USAGE;
    } else if (in->kind == CR_OBJECT_OTHER) {
        cr__cli_error(cli, "'%s' holds %s, which is no object credisson "
                      "knows: not deleted", cli->name_shown, kind);
        code = CR__CLI_EXIT_USAGE;
    } else if (!cli->args->yes &&
               (code = refuse_if_live(cli, in, force ? "unlocked"
                                                     : "deleted")) != 0) {
        /* Said why. */
    } else {
        rc = force ? force_unlock(cli, in, &done)
                   : delete_object(cli, in, &done);
        if (rc != CR_OK)
            code = cr__cli_fail(cli, rc, "cannot %s '%s'",
                                force ? "unlock" : "delete",
                                cli->name_shown);
        else
            report(cli, in, done);
    }
    cr_object_info_free(in);
    return code;
}
