/* SPDX-License-Identifier: MIT */
/*
 * `credisson inspect`, and the status line shown while waiting: what the
 * object under a name is and its state, as the library's introspection
 * call reads it (cr_object_inspect: one read-only script, so a snapshot,
 * and one CLIENT LIST for who each owner is), printed for people or as
 * JSON. The layouts are Redisson's, so objects made by Java Redisson show
 * too.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inspect.h"
#include "util.h"

/* Who held the lock at the last status line, and since when (this host's
 * monotonic clock): the status line shows how long it has been held. */
static char seen_owner[256];
static int64_t seen_since_ms;

/* ------------------------------------------------------------------ JSON */

/* Writes `"key":` and the remaining time until an epoch deadline. */
static void json_deadline(FILE *f, const char *key, int64_t at, int64_t now)
{
    fprintf(f, ",\"%s\":%lld,\"remaining_ms\":%lld", key, (long long)at,
            (long long)(at - now));
}

/* The kind as the tool has always shown it in JSON (a fair lock is a
 * "lock" with a queue). */
static const char *json_kind(cr_object_kind k)
{
    return k == CR_OBJECT_FAIR_LOCK ? "lock" : cr_object_kind_name(k);
}

/* Whether the kind is a lock of any sort. */
static bool is_lock(cr_object_kind k)
{
    return k == CR_OBJECT_LOCK || k == CR_OBJECT_FAIR_LOCK ||
           k == CR_OBJECT_RWLOCK;
}

void cr__cli_json_client(const cr_owner_info *w)
{
    if (w->presence == CR_PRESENCE_CONNECTED) {
        fputs(",\"client\":{\"state\":\"connected\",\"host\":", stdout);
        if (w->host != NULL)
            cr__cli_json_str(stdout, w->host, strlen(w->host));
        else
            fputs("null", stdout);
        printf(",\"pid\":%ld,\"address\":", w->pid);
        if (w->addr != NULL)
            cr__cli_json_str(stdout, w->addr, strlen(w->addr));
        else
            fputs("null", stdout);
        fputc('}', stdout);
    } else {
        printf(",\"client\":{\"state\":\"%s\"}",
               w->presence == CR_PRESENCE_GONE ? "not connected" : "unknown");
    }
}

/* Writes `,"line_length":N,"line":[...]`: credisson's waiting line in
 * order, when the name has one. */
static void json_line(const cr_object_info *in)
{
    size_t i;

    if (in->line_length == 0)
        return;
    printf(",\"line_length\":%lld,\"line\":[", (long long)in->line_length);
    for (i = 0; i < in->nline; i++) {
        const cr_line_waiter_info *w = &in->line[i];

        fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
        cr__cli_json_str(stdout, w->who.owner, w->who.owner_len);
        if (w->has_state) {
            printf(",\"since_ms\":%lld,\"waited_ms\":%lld,\"turn\":%s",
                   (long long)w->since_ms,
                   (long long)(in->now_ms - w->since_ms),
                   w->turn ? "true" : "false");
            json_deadline(stdout, "lease_ms", w->lease_ms, in->now_ms);
            printf(",\"permits\":%lld,\"writer\":%s", (long long)w->permits,
                   w->writer ? "true" : "false");
        } else {
            fputs(",\"since_ms\":null,\"turn\":false,\"lease_ms\":null,"
                  "\"permits\":null,\"writer\":false", stdout);
        }
        cr__cli_json_client(&w->who);
        fputc('}', stdout);
    }
    fputc(']', stdout);
}

/* Prints the snapshot as one JSON object. */
static void print_json(const cr__cli *cli, const cr_object_info *in)
{
    size_t i;

    fputs("{\"name\":", stdout);
    cr__cli_json_str(stdout, cli->args->name, strlen(cli->args->name));
    fputs(",\"key\":", stdout);
    cr__cli_json_str(stdout, in->key, strlen(in->key));
    printf(",\"type\":\"%s\",\"redis_type\":", json_kind(in->kind));
    cr__cli_json_str(stdout, in->redis_type, strlen(in->redis_type));
    if (in->ttl_ms >= -1)
        printf(",\"ttl_ms\":%lld", (long long)in->ttl_ms);
    else
        fputs(",\"ttl_ms\":null", stdout);
    if (is_lock(in->kind)) {
        printf(",\"locked\":%s", in->nholders > 0 ? "true" : "false");
        if (in->mode != NULL)
            printf(",\"mode\":\"%s\"", in->mode);
        fputs(",\"holders\":[", stdout);
        for (i = 0; i < in->nholders; i++) {
            const cr_holder_info *h = &in->holders[i];

            fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
            cr__cli_json_str(stdout, h->who.owner, h->who.owner_len);
            printf(",\"count\":%lld", (long long)h->count);
            if (in->mode != NULL) {
                printf(",\"mode\":\"%s\"", h->writer ? "write" : "read");
                if (!h->writer && h->ttl_ms == -2)
                    fputs(",\"ttl_ms\":null", stdout); /* its keys are gone */
                else if (!h->writer)
                    printf(",\"ttl_ms\":%lld", (long long)h->ttl_ms);
            }
            cr__cli_json_client(&h->who);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    if (in->queue_length != 0) {
        printf(",\"queue_length\":%lld,\"queue\":[",
               (long long)(in->queue_length > 0 ? in->queue_length : 0));
        for (i = 0; i < in->nqueue; i++) {
            const cr_waiter_info *w = &in->queue[i];

            fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
            cr__cli_json_str(stdout, w->who.owner, w->who.owner_len);
            if (w->has_deadline)
                json_deadline(stdout, "deadline_ms", w->deadline_ms,
                              in->now_ms);
            else
                fputs(",\"deadline_ms\":null", stdout);
            cr__cli_json_client(&w->who);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    json_line(in);
    if (in->has_token)
        printf(",\"fencing_token\":%lld", (long long)in->token);
    if (in->kind == CR_OBJECT_SEMAPHORE || in->kind == CR_OBJECT_PERMIT_SEMAPHORE)
        printf(",\"available\":%lld", (long long)(in->has_value ? in->value
                                                                : 0));
    if (in->issued_count > 0) {
        printf(",\"issued_count\":%lld,\"issued\":[",
               (long long)in->issued_count);
        for (i = 0; i < in->npermits; i++) {
            const cr_permit_info *p = &in->permits[i];

            printf("%s{\"id\":\"%s\"", i > 0 ? "," : "", p->id);
            if (p->never)
                fputs(",\"expires_ms\":null", stdout);
            else
                json_deadline(stdout, "expires_ms", p->expires_ms, in->now_ms);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    if (in->kind == CR_OBJECT_LATCH)
        printf(",\"count\":%lld", (long long)in->value);
    if (in->kind == CR_OBJECT_BARRIER) {
        printf(",\"parties\":%lld,\"generation\":%lld,\"waiting\":%lld,"
               "\"broken\":%s,\"waiting_parties\":[", (long long)in->parties,
               (long long)in->generation, (long long)in->waiting,
               in->broken ? "true" : "false");
        for (i = 0; i < in->nwaiting_parties; i++) {
            const cr_party_info *p = &in->waiting_parties[i];

            fputs(i > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
            cr__cli_json_str(stdout, p->who.owner, p->who.owner_len);
            if (p->has_index)
                printf(",\"index\":%lld", (long long)p->index);
            else
                fputs(",\"index\":null", stdout);
            if (p->has_since)
                printf(",\"since_ms\":%lld,\"waited_ms\":%lld",
                       (long long)p->since_ms,
                       (long long)(in->now_ms - p->since_ms));
            else
                fputs(",\"since_ms\":null", stdout);
            json_deadline(stdout, "lease_ms", p->lease_ms, in->now_ms);
            cr__cli_json_client(&p->who);
            fputc('}', stdout);
        }
        fputc(']', stdout);
    }
    /* Connections, not waiters: see cr_object_info. */
    if (in->subscribers >= 0)
        printf(",\"subscribed_connections\":%lld",
               (long long)in->subscribers);
    if (in->kind == CR_OBJECT_RATE_LIMITER)
        printf(",\"rate\":%lld,\"interval_ms\":%lld,\"rate_type\":\"%s\","
               "\"keep_alive_ms\":%lld", (long long)in->rate,
               (long long)in->interval_ms,
               in->rate_type == 1 ? "per-client" : "overall",
               (long long)in->keep_alive_ms);
    if (in->kind == CR_OBJECT_SEMAPHORE_OR_LATCH)
        printf(",\"value\":%lld", (long long)in->value);
    if (in->nconditions > 0) {
        fputs(",\"conditions\":[", stdout);
        for (i = 0; i < in->nconditions; i++) {
            const cr_condition_info *c = &in->conditions[i];

            fputs(i > 0 ? ",{\"name\":" : "{\"name\":", stdout);
            cr__cli_json_str(stdout, c->name, strlen(c->name));
            printf(",\"waiting\":%lld,\"waiters\":[", (long long)c->waiting);
            for (size_t j = 0; j < c->nwaiters; j++) {
                const cr_condition_waiter_info *w = &c->waiters[j];

                fputs(j > 0 ? ",{\"owner\":" : "{\"owner\":", stdout);
                cr__cli_json_str(stdout, w->who.owner, w->who.owner_len);
                printf(",\"state\":\"%s\"",
                       w->signalled ? "signalled" : "waiting");
                if (w->has_lease)
                    json_deadline(stdout, "lease_ms", w->lease_ms, in->now_ms);
                else
                    fputs(",\"lease_ms\":null", stdout);
                cr__cli_json_client(&w->who);
                fputc('}', stdout);
            }
            fputs("]}", stdout);
        }
        fputc(']', stdout);
    }
    fputs("}\n", stdout);
}

/* ------------------------------------------------------------------ text */

const char *cr__cli_kind_phrase(const cr_object_info *in, char *buf,
                                size_t len)
{
    switch (in->kind) {
    case CR_OBJECT_NONE: snprintf(buf, len, "nothing"); break;
    case CR_OBJECT_LOCK: snprintf(buf, len, "a lock"); break;
    case CR_OBJECT_FAIR_LOCK: snprintf(buf, len, "a fair lock"); break;
    case CR_OBJECT_RWLOCK: snprintf(buf, len, "a read/write lock"); break;
    case CR_OBJECT_SEMAPHORE: snprintf(buf, len, "a semaphore"); break;
    case CR_OBJECT_PERMIT_SEMAPHORE:
        snprintf(buf, len, "an expirable semaphore");
        break;
    case CR_OBJECT_LATCH: snprintf(buf, len, "a latch"); break;
    case CR_OBJECT_SEMAPHORE_OR_LATCH:
        snprintf(buf, len, "a semaphore or a latch");
        break;
    case CR_OBJECT_BARRIER: snprintf(buf, len, "a barrier"); break;
    case CR_OBJECT_RATE_LIMITER: snprintf(buf, len, "a rate limiter"); break;
    case CR_OBJECT_OTHER:
        snprintf(buf, len, "a Redis %s", in->redis_type);
        break;
    }
    return buf;
}

/* Prints s (len bytes) with bytes that are not printable ASCII as '?'. */
static void text_str(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        putchar(s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
}

/* Writes "lease 12.3s left", "no expiry" or "" into buf for a PTTL. */
static const char *lease_text(int64_t ttl, char *buf, size_t len)
{
    char d[32];

    if (ttl == -1)
        snprintf(buf, len, "no expiry");
    else if (ttl >= 0)
        snprintf(buf, len, "lease %s left", cr__cli_fmt_ms(ttl, d, sizeof(d)));
    else
        buf[0] = '\0';
    return buf;
}

/* Writes "in 4m59s", "passed 3.0s ago" for an epoch deadline. */
static const char *until_text(int64_t at, int64_t now, char *buf, size_t len)
{
    char d[32];

    if (at >= now)
        snprintf(buf, len, "in %s", cr__cli_fmt_ms(at - now, d, sizeof(d)));
    else
        snprintf(buf, len, "passed %s ago",
                 cr__cli_fmt_ms(now - at, d, sizeof(d)));
    return buf;
}

bool cr__cli_fits(const cr__cli *cli, const cr_object_info *in,
                  const char **wanted)
{
    cr_object_kind k = in->kind;

    switch (cli->args->command) {
    case CR__CLI_LOCK:
        switch (cli->args->kind) {
        case CR__CLI_LOCK_FAIR:
            *wanted = "a fair lock";
            return k == CR_OBJECT_NONE || k == CR_OBJECT_FAIR_LOCK ||
                   k == CR_OBJECT_LOCK;
        case CR__CLI_LOCK_READ:
        case CR__CLI_LOCK_WRITE:
            *wanted = "a read/write lock";
            return k == CR_OBJECT_NONE || k == CR_OBJECT_RWLOCK;
        default:
            *wanted = "a lock";
            return k == CR_OBJECT_NONE || k == CR_OBJECT_LOCK;
        }
    case CR__CLI_SEMAPHORE:
        *wanted = "a semaphore";
        return k == CR_OBJECT_NONE || k == CR_OBJECT_SEMAPHORE ||
               k == CR_OBJECT_PERMIT_SEMAPHORE ||
               k == CR_OBJECT_SEMAPHORE_OR_LATCH;
    case CR__CLI_LATCH:
        *wanted = "a latch";
        return k == CR_OBJECT_NONE || k == CR_OBJECT_LATCH ||
               k == CR_OBJECT_SEMAPHORE_OR_LATCH;
    case CR__CLI_BARRIER:
        *wanted = "a barrier";
        return k == CR_OBJECT_NONE || k == CR_OBJECT_BARRIER;
    case CR__CLI_RATELIMIT:
        *wanted = "a rate limiter";
        return k == CR_OBJECT_NONE || k == CR_OBJECT_RATE_LIMITER;
    default:
        *wanted = "an object";
        return true;
    }
}

const char *cr__cli_client_text(const cr_owner_info *w, bool brief,
                                char *buf, size_t len)
{
    char host[80];

    if (w->presence == CR_PRESENCE_CONNECTED)
        snprintf(buf, len, "host %s, pid %ld%s%s",
                 cr__cli_printable(w->host != NULL ? w->host : "?", host,
                                   sizeof(host)),
                 w->pid, brief ? "" : ", ",
                 brief ? "" : w->addr != NULL ? w->addr : "?");
    else if (w->presence == CR_PRESENCE_GONE)
        snprintf(buf, len, "not connected");
    else
        snprintf(buf, len, "%s", brief ? "client unknown" : "unknown");
    return buf;
}

/* Prints a lock's holders. */
static void print_holders(const cr_object_info *in)
{
    char t[64], who[160];
    size_t i;

    for (i = 0; i < in->nholders; i++) {
        const cr_holder_info *h = &in->holders[i];

        fputs(in->mode == NULL ? "holder:     " : h->writer ? "writer:     "
                                                            : "reader:     ",
              stdout);
        text_str(h->who.owner, h->who.owner_len);
        printf(" (hold count %lld", (long long)h->count);
        if (in->mode != NULL && !h->writer)
            printf(", %s", h->ttl_ms >= -1 ? lease_text(h->ttl_ms, t, sizeof(t))
                                           : "hold keys expired");
        printf(")\n            client: %s\n",
               cr__cli_client_text(&h->who, false, who, sizeof(who)));
    }
}

/* Prints a barrier's waiting parties, in the order they arrived. */
static void print_parties(const cr_object_info *in)
{
    char t[64], d[32], who[160];
    size_t i;

    for (i = 0; i < in->nwaiting_parties; i++) {
        const cr_party_info *p = &in->waiting_parties[i];

        printf("  %zu. ", i + 1);
        text_str(p->who.owner, p->who.owner_len);
        if (p->has_since)
            printf(" (waiting %s", cr__cli_fmt_ms(in->now_ms - p->since_ms,
                                                  d, sizeof(d)));
        else
            fputs(" (arrived", stdout);
        printf(", lease %s), client: %s\n",
               until_text(p->lease_ms, in->now_ms, t, sizeof(t)),
               cr__cli_client_text(&p->who, false, who, sizeof(who)));
    }
}

/* Prints credisson's waiting line in order: who, for how long, whether it
 * holds a turn, its lease, what it wants and its client. */
static void print_line(const cr_object_info *in)
{
    char t[64], d[32], who[160];
    bool sem = in->kind == CR_OBJECT_SEMAPHORE ||
               in->kind == CR_OBJECT_PERMIT_SEMAPHORE ||
               in->kind == CR_OBJECT_SEMAPHORE_OR_LATCH;
    size_t i;

    if (in->line_length == 0)
        return;
    printf("line:       %lld waiting (credisson's waiters; Java's are not "
           "in it)\n", (long long)in->line_length);
    for (i = 0; i < in->nline; i++) {
        const cr_line_waiter_info *w = &in->line[i];

        printf("  %zu. ", i + 1);
        text_str(w->who.owner, w->who.owner_len);
        if (!w->has_state) {
            fputs(" (no state: lapsed)", stdout);
        } else {
            printf(" (waiting %s", cr__cli_fmt_ms(in->now_ms - w->since_ms,
                                                   d, sizeof(d)));
            if (w->writer)
                fputs(", to write", stdout);
            else if (in->kind == CR_OBJECT_RWLOCK)
                fputs(", to read", stdout);
            if (sem || w->permits != 1)
                printf(", wants %lld permit%s", (long long)w->permits,
                       w->permits == 1 ? "" : "s");
            printf("%s, lease %s)", w->turn ? ", its turn" : "",
                   until_text(w->lease_ms, in->now_ms, t, sizeof(t)));
        }
        printf(", client: %s\n",
               cr__cli_client_text(&w->who, false, who, sizeof(who)));
    }
}

/* Prints the snapshot for people. */
static void print_text(const cr__cli *cli, const cr_object_info *in)
{
    char t[64], who[160];
    size_t i;

    fputs("name:       ", stdout);
    text_str(cli->args->name, strlen(cli->args->name));
    if (strcmp(in->key, cli->args->name) != 0) {
        fputs(" (key ", stdout);
        text_str(in->key, strlen(in->key));
        fputc(')', stdout);
    }
    putchar('\n');
    switch (in->kind) {
    case CR_OBJECT_NONE:
        puts("type:       none (no such object)");
        if (in->line_length == 0)
            return;
        break; /* waiters in line for it (a semaphore never set) */
    case CR_OBJECT_OTHER:
        printf("type:       other (a Redis %s that is not a lock, semaphore "
               "or latch)\n", in->redis_type);
        return;
    case CR_OBJECT_LOCK:
    case CR_OBJECT_FAIR_LOCK:
    case CR_OBJECT_RWLOCK:
        printf("type:       %s\n", in->kind == CR_OBJECT_RWLOCK ? "read/write lock"
                                   : in->kind == CR_OBJECT_FAIR_LOCK ? "fair lock"
                                                                     : "lock");
        if (in->nholders == 0)
            puts("state:      free");
        else if (in->mode != NULL)
            printf("state:      held for %s (%s)\n",
                   strcmp(in->mode, "read") == 0 ? "reading" : "writing",
                   lease_text(in->ttl_ms, t, sizeof(t)));
        else
            printf("state:      held (%s)\n",
                   lease_text(in->ttl_ms, t, sizeof(t)));
        print_holders(in);
        break;
    case CR_OBJECT_SEMAPHORE:
    case CR_OBJECT_PERMIT_SEMAPHORE:
        printf("type:       %s\n", in->kind == CR_OBJECT_PERMIT_SEMAPHORE
                                       ? "expirable semaphore" : "semaphore");
        printf("available:  %lld\n", (long long)(in->has_value ? in->value
                                                               : 0));
        break;
    case CR_OBJECT_LATCH:
        puts("type:       latch");
        printf("count:      %lld\n", (long long)in->value);
        break;
    case CR_OBJECT_SEMAPHORE_OR_LATCH:
        puts("type:       semaphore or latch (both are a plain integer)");
        printf("value:      %lld\n", (long long)in->value);
        break;
    case CR_OBJECT_BARRIER:
        puts("type:       barrier");
        printf("state:      round %lld, %lld of %lld parties waiting%s\n",
               (long long)in->generation, (long long)in->waiting,
               (long long)in->parties, in->broken ? ", broken" : "");
        print_parties(in);
        break;
    case CR_OBJECT_RATE_LIMITER:
        puts("type:       rate limiter");
        printf("rate:       %lld per %s%s\n", (long long)in->rate,
               cr__cli_fmt_ms(in->interval_ms, t, sizeof(t)),
               in->rate_type == 1 ? ", per client" : "");
        if (in->keep_alive_ms > 0)
            printf("keep-alive: %s\n",
                   cr__cli_fmt_ms(in->keep_alive_ms, t, sizeof(t)));
        break;
    }
    if (in->queue_length != 0) {
        printf("queue:      %lld waiting\n",
               (long long)(in->queue_length > 0 ? in->queue_length : 0));
        for (i = 0; i < in->nqueue; i++) {
            const cr_waiter_info *w = &in->queue[i];

            printf("  %zu. ", i + 1);
            text_str(w->who.owner, w->who.owner_len);
            if (w->has_deadline)
                printf(" (deadline %s)",
                       until_text(w->deadline_ms, in->now_ms, t, sizeof(t)));
            else
                fputs(" (no deadline)", stdout);
            printf(", client: %s\n",
                   cr__cli_client_text(&w->who, false, who, sizeof(who)));
        }
    }
    print_line(in);
    if (in->has_token)
        printf("fencing token: %lld\n", (long long)in->token);
    if (in->subscribers >= 0)
        printf("subscribed: %lld connection%s to its channel (connections, "
               "idle and Java's too, not waiters)\n",
               (long long)in->subscribers, in->subscribers == 1 ? "" : "s");
    if (in->issued_count > 0) {
        printf("issued:     %lld\n", (long long)in->issued_count);
        for (i = 0; i < in->npermits; i++) {
            const cr_permit_info *p = &in->permits[i];

            printf("  %s (%s%s)\n", p->id, p->never ? "never expires"
                                                    : "expires ",
                   p->never ? "" : until_text(p->expires_ms, in->now_ms, t,
                                              sizeof(t)));
        }
    }
    for (i = 0; i < in->nconditions; i++) {
        const cr_condition_info *c = &in->conditions[i];

        fputs("condition:  ", stdout);
        text_str(c->name, strlen(c->name));
        printf(", %lld waiting\n", (long long)c->waiting);
        for (size_t j = 0; j < c->nwaiters; j++) {
            const cr_condition_waiter_info *w = &c->waiters[j];

            fputs("  ", stdout);
            text_str(w->who.owner, w->who.owner_len);
            printf(" (%s", w->signalled ? "signalled" : "waiting");
            if (w->has_lease)
                printf(", lease %s",
                       until_text(w->lease_ms, in->now_ms, t, sizeof(t)));
            printf("), client: %s\n",
                   cr__cli_client_text(&w->who, false, who, sizeof(who)));
        }
    }
}

int cr__cli_inspect(cr__cli *cli)
{
    cr_object_info *in = NULL;
    cr_status rc = cr_object_inspect(cli->client, cli->args->name, &in);
    int code;

    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot inspect '%s'", cli->name_shown);
    if (cli->args->json)
        print_json(cli, in);
    else
        print_text(cli, in);
    /* The snapshot is printed either way; a name that holds nothing has
     * a status of its own, so that scripts need not read the output. */
    code = in->kind == CR_OBJECT_NONE ? CR__CLI_EXIT_NOTHING : CR__CLI_EXIT_OK;
    cr_object_info_free(in);
    return code;
}

/* ----------------------------------------------------------- status line */

/* Writes an owner name shortened for the status line: a client UUID cut to
 * its first 8 characters ("1b9d6bcd...:1"). */
static void short_owner(const cr_owner_info *w, char *buf, size_t len)
{
    char clean[100];
    const char *colon;

    cr__cli_printable(w->owner, clean, sizeof(clean));
    colon = strchr(clean, ':');
    if (colon != NULL && colon - clean == 36)
        snprintf(buf, len, "%.8s...%s", clean, colon);
    else
        snprintf(buf, len, "%s", clean);
}

/* The place (from 1) of this run's waiter in a fair lock's queue, or with
 * `line` in credisson's waiting line, as listed; 0 when it is not listed.
 * A run has one client and one waiter: its entry is the one named
 * "<its client id>:...". */
static size_t own_place(cr_client *client, const cr_object_info *in,
                        bool line)
{
    char own[64];
    size_t i, n, count = line ? in->nline : in->nqueue;

    n = (size_t)snprintf(own, sizeof(own), "%s:", cr_client_id(client));
    for (i = 0; i < count; i++) {
        const cr_owner_info *w = line ? &in->line[i].who : &in->queue[i].who;

        if (w->owner_len > n && memcmp(w->owner, own, n) == 0)
            return i + 1;
    }
    return 0;
}

void cr__cli_summary(cr__cli *cli, cr_client *client, char *buf, size_t len)
{
    char who[128], t[64], d[32], host[160];
    int64_t now = cr__cli_now_ms();
    cr_object_info *in = NULL;

    buf[0] = '\0';
    if (client == NULL ||
        cr_object_inspect(client, cli->args->name, &in) != CR_OK) {
        snprintf(buf, len, "(cannot read its state)");
        return;
    }
    /* A waiter in a fair lock's queue, or in line, first wants to know
     * its place. */
    if (in->queue_length > 0 || in->line_length > 0) {
        bool line = in->queue_length <= 0;
        long long all = line ? in->line_length : in->queue_length;
        size_t place = own_place(client, in, line);

        if (place > 0)
            snprintf(buf, len, "place %zu of %lld %s; ", place, all,
                     line ? "in line" : "in the queue");
        else
            snprintf(buf, len, "%lld %s; ", all, line ? "in line" : "queued");
    }
    if (in->nholders > 0) {
        const cr_holder_info *h = &in->holders[0];
        size_t n = strlen(buf);

        short_owner(&h->who, who, sizeof(who));
        if (strcmp(seen_owner, who) != 0) {
            snprintf(seen_owner, sizeof(seen_owner), "%s", who);
            seen_since_ms = now;
        }
        /* How long: since this process first saw that holder, if before. */
        d[0] = '\0';
        if (now > seen_since_ms) {
            memcpy(d, " for ", 5);
            cr__cli_fmt_ms(now - seen_since_ms, d + 5, sizeof(d) - 6);
            strcat(d, "+");
        }
        snprintf(buf + n, len - n, "held by %s (%s)%s%s, count %lld, %s", who,
                 cr__cli_client_text(&h->who, true, host, sizeof(host)),
                 in->nholders > 1 ? " and others" : "", d,
                 (long long)h->count, lease_text(in->ttl_ms, t, sizeof(t)));
    } else if (is_lock(in->kind) ||
               (in->kind == CR_OBJECT_NONE && cli->args->command == CR__CLI_LOCK)) {
        snprintf(buf + strlen(buf), len - strlen(buf), "free");
    } else if (in->kind == CR_OBJECT_BARRIER) {
        snprintf(buf + strlen(buf), len - strlen(buf),
                 "%lld of %lld parties waiting in round %lld%s",
                 (long long)in->waiting, (long long)in->parties,
                 (long long)in->generation, in->broken ? ", broken" : "");
    } else if (cli->args->command == CR__CLI_LATCH) {
        if (in->kind == CR_OBJECT_NONE)
            snprintf(buf, len, "not set yet");
        else
            snprintf(buf, len, "count %lld", (long long)in->value);
    } else if (cli->args->command == CR__CLI_SEMAPHORE) {
        snprintf(buf + strlen(buf), len - strlen(buf),
                 "%lld available, %lld issued",
                 (long long)(in->has_value ? in->value : 0),
                 (long long)in->issued_count);
        if (in->npermits > 0 && !in->permits[0].never)
            snprintf(buf + strlen(buf), len - strlen(buf),
                     ", next expiry %s",
                     until_text(in->permits[0].expires_ms, in->now_ms, t,
                                sizeof(t)));
    }
    cr_object_info_free(in);
}
