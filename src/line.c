/* SPDX-License-Identifier: MIT */
/*
 * The C side of the waiting line (line.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "common.h"
#include "line.h"
#include "scripts.h"

cr_status
cr__line_init(cr__line *ln, const char *raw)
{
    char *channel = cr__name(CR__NAME_LINE_CHANNEL, raw);

    *ln = (cr__line){.key = cr__name(CR__NAME_LINE, raw),
                     .state = cr__name(CR__NAME_LINE_STATE, raw),
                     .prefix = channel != NULL
                                   ? cr__strdup_printf("%s:", channel)
                                   : NULL};
    free(channel);
    if (ln->key == NULL || ln->state == NULL || ln->prefix == NULL) {
        cr__line_free(ln);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    return CR_OK;
}

void
cr__line_free(cr__line *ln)
{
    free(ln->key);
    free(ln->state);
    free(ln->prefix);
    *ln = (cr__line){0};
}

char *
cr__line_channel(const cr__line *ln, const char *entry)
{
    return cr__strdup_printf("%s%s", ln->prefix, entry);
}

void
cr__line_entry(const char *owner, char *out)
{
    if (cr__name_is_writer(owner, strlen(owner)))
        cr__name_switch_side(owner, false, out);
    else
        snprintf(out, CR__OWNER_MAX, "%s", owner);
}

cr__line_times
cr__line_times_of(const cr_client *c)
{
    return (cr__line_times){.lease_ms = c->watchdog_timeout_ms,
                            .turn_ms = c->line_turn_ms};
}

int64_t
cr__line_max_sleep(const cr_client *c, int64_t max_ms)
{
    int64_t renew = cr__line_times_of(c).lease_ms / 3;

    return max_ms >= 0 && max_ms < renew ? max_ms : renew;
}

int64_t
cr__line_wait_arg(int64_t wait_ms, bool spin)
{
    if (spin)
        return 2;
    return wait_ms != 0 ? 1 : 0;
}

bool
cr__line_place_of(const cr__reply *r, size_t at, cr__line_place *p)
{
    int64_t listen = 0, turn = -1;

    *p = (cr__line_place){.listen = CR__LISTEN_NO, .turn_ms = -1};
    if (r == NULL || r->type != CR__REPLY_ARRAY || r->elements < at + 2 ||
        !cr__reply_int(r->element[at], &listen) ||
        !cr__reply_int(r->element[at + 1], &turn))
        return false;
    p->listen = listen == CR__LISTEN_SOON || listen == CR__LISTEN_NOW
                    ? (int)listen : CR__LISTEN_NO;
    p->turn_ms = turn >= 0 ? turn : -1;
    return true;
}

int64_t
cr__line_hint(int64_t object_hint, const cr__line_place *p)
{
    int64_t hint = p->listen ? object_hint : -1;

    if (p->turn_ms >= 0 && (hint < 0 || p->turn_ms < hint))
        hint = p->turn_ms;
    return hint;
}

cr__wake
cr__line_decode(const char *payload, size_t len)
{
    if (len < 2 || (payload[0] != 't' && payload[0] != 'w'))
        return (cr__wake){0};
    return (cr__wake){.wakes = 1, .kept = true};
}

int64_t
cr__line_delay(const char *payload, size_t len)
{
    int64_t n;

    if (len < 2 || !cr__parse_i64(payload + 1, len - 1, &n) || n <= 0)
        return 0;
    if (payload[0] == 'w')
        return n;
    return payload[0] == 't' ? CR__LINE_YIELD_MS : 0;
}

cr_status
cr__line_leave_call(const cr__line *ln, const cr_client *c,
                    const char *object, const char *kind, const char *entry,
                    cr__script_call *call)
{
    cr__line_times t = cr__line_times_of(c);

    return cr__build_line_leave(&(cr__line_leave_args){
        .line = ln->key, .line_state = ln->state, .object = object,
        .entry = entry, .kind = kind, .line_lease_ms = t.lease_ms,
        .turn_ms = t.turn_ms, .line_channel = ln->prefix,
        .publish = c->publish_cmd}, call);
}
