/* SPDX-License-Identifier: MIT */
/*
 * Names (protocol section 1.1). Redisson derives an object's other keys
 * and channels from its raw name N in two shapes so that they share N's
 * cluster slot: prefixName(P, N) is "P:{N}" and suffixName(N, S) "{N}:S",
 * except that a name that already has a '{' is taken as it is ("P:N",
 * "N:S"): its own tag then decides the slot.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "names.h"
#include "registry.h"
#include "slot.h"

#define WRITER_SUFFIX ":write"

typedef enum shape { PREFIX, SUFFIX, ALWAYS_BRACED, KEY_PREFIX } shape;

static const struct {
    shape shape;
    const char *word;
    bool request; /* followed by ":<request id>" */
} names[] = {
    [CR__NAME_LOCK_CHANNEL] = {PREFIX, "redisson_lock__channel", false},
    [CR__NAME_FAIR_QUEUE] = {PREFIX, "redisson_lock_queue", false},
    [CR__NAME_FAIR_TIMEOUTS] = {PREFIX, "redisson_lock_timeout", false},
    [CR__NAME_FENCE_TOKEN] = {PREFIX, "redisson_lock_token", false},
    [CR__NAME_RWLOCK_CHANNEL] = {PREFIX, "redisson_rwlock", false},
    [CR__NAME_SEMAPHORE_CHANNEL] = {PREFIX, "redisson_sc", false},
    [CR__NAME_PERMIT_TIMEOUTS] = {SUFFIX, "timeout", false},
    /* Braces whatever N holds: Redisson builds it without prefixName. */
    [CR__NAME_LATCH_CHANNEL] = {ALWAYS_BRACED,
                                "redisson_countdownlatch__channel__", false},
    [CR__NAME_LATCH_MARKER] = {SUFFIX, "credisson_latch_expiry", false},
    [CR__NAME_KEY_PREFIX] = {KEY_PREFIX, "", false},
    [CR__NAME_UNLOCK_LATCH] = {PREFIX, "redisson_unlock_latch", true},
    [CR__NAME_ACQUIRE_LATCH] = {PREFIX, "credisson_semaphore_acquire", true},
    [CR__NAME_RATE_VALUE] = {SUFFIX, "value", false},
    [CR__NAME_RATE_PERMITS] = {SUFFIX, "permits", false},
    [CR__NAME_RATE_HELD] = {SUFFIX, "credisson_rate_held", false},
    [CR__NAME_BARRIER_ARRIVALS] = {PREFIX, "credisson_barrier_arrivals", false},
    [CR__NAME_BARRIER_CHANNEL] = {PREFIX, "credisson_barrier__channel", false},
    [CR__NAME_CONDITION] = {PREFIX, "credisson_condition", false},
    [CR__NAME_CONDITION_QUEUE] = {PREFIX, "credisson_condition_queue", false},
    [CR__NAME_CONDITION_LEASES] = {PREFIX, "credisson_condition_leases",
                                   false},
    [CR__NAME_CONDITION_CHANNEL] = {PREFIX, "credisson_condition__channel",
                                    false},
    [CR__NAME_CONDITIONS] = {PREFIX, "credisson_conditions", false},
    [CR__NAME_LINE] = {PREFIX, "credisson_line", false},
    [CR__NAME_LINE_STATE] = {PREFIX, "credisson_line_state", false},
    [CR__NAME_LINE_CHANNEL] = {PREFIX, "credisson_line__channel", false},
};

/* Shapes name `word` around `raw`. */
static char *
shaped(shape s, const char *word, const char *raw)
{
    bool tagged;

    if (raw == NULL || word == NULL)
        return NULL; /* callers check names first; this keeps printf's
                      * arguments provably non-NULL */
    tagged = strchr(raw, '{') != NULL;
    switch (s) {
    case PREFIX:
        return cr__strdup_printf(tagged ? "%s:%s" : "%s:{%s}", word, raw);
    case SUFFIX:
        return cr__strdup_printf(tagged ? "%s:%s" : "{%s}:%s", raw, word);
    case ALWAYS_BRACED:
        return cr__strdup_printf("%s{%s}", word, raw);
    case KEY_PREFIX:
        return cr__strdup_printf(tagged ? "%s" : "{%s}", raw);
    }
    return NULL;
}

char *
cr__name_prefixed(const char *prefix, const char *raw)
{
    return shaped(PREFIX, prefix, raw);
}

char *
cr__name_suffixed(const char *raw, const char *suffix)
{
    return shaped(SUFFIX, suffix, raw);
}

char *
cr__name(cr__name_id id, const char *raw)
{
    unsigned char rid[16];
    char hex[33], *base, *key;

    base = shaped(names[id].shape, names[id].word, raw);
    if (base == NULL || !names[id].request)
        return base;
    key = NULL;
    if (cr__request_id(rid) == CR_OK) {
        cr__hex(rid, sizeof(rid), hex);
        key = cr__strdup_printf("%s:%s", base, hex);
    }
    free(base);
    return key;
}

char *
cr__name_raw(const char *prefix, const char *name)
{
    return cr__strdup_printf("%s%s", prefix != NULL ? prefix : "", name);
}

cr_status
cr__name_check(const char *name)
{
    if (name == NULL)
        return cr__fail(CR_EINVAL, "name is NULL");
    if (name[0] == '\0')
        return cr__fail(CR_EINVAL, "name is empty");
    return CR_OK;
}

cr_status
cr__name_check_slots(bool cluster, const char *raw, const char *extra)
{
    char *p, *s;
    unsigned want;
    bool ok;

    if (!cluster)
        return CR_OK;
    /* The words do not matter: without braces of their own they hash like
     * every prefixName / suffixName of the name. */
    p = shaped(PREFIX, "p", raw);
    s = shaped(SUFFIX, "s", raw);
    want = cr__key_slot(raw, strlen(raw));
    ok = p != NULL && s != NULL && cr__key_slot(p, strlen(p)) == want &&
         cr__key_slot(s, strlen(s)) == want &&
         (extra == NULL || cr__key_slot(extra, strlen(extra)) == want);
    if (p == NULL || s == NULL) {
        free(p);
        free(s);
        return cr__fail(CR_ENOMEM, "out of memory");
    }
    free(p);
    free(s);
    if (!ok)
        return cr__fail(CR_EINVAL, "name \"%s\" puts its keys in different "
                        "cluster slots (protocol 1.1); choose a name without "
                        "'}'%s or with one well-formed {tag}", raw,
                        extra != NULL ? "" : " or an unclosed '{'");
    return CR_OK;
}

char *
cr__name_reader_timeouts(const char *raw, const char *reader)
{
    char *base = shaped(SUFFIX, reader, raw), *prefix;

    if (base == NULL)
        return NULL;
    prefix = cr__strdup_printf("%s:rwlock_timeout", base);
    free(base);
    return prefix;
}

char *
cr__name_waiter_channel(const char *channel, const char *owner)
{
    return cr__strdup_printf("%s:%s", channel, owner);
}

void
cr__name_owner(const char *uuid, int64_t tid, bool writer, char *out)
{
    size_t n = strlen(uuid);

    memcpy(out, uuid, n);
    out[n] = ':';
    cr__fmt_i64(out + n + 1, tid);
    if (writer)
        strcat(out, WRITER_SUFFIX);
}

void
cr__name_switch_side(const char *owner, bool writer, char *out)
{
    size_t n = strlen(owner);

    if (!writer && cr__name_is_writer(owner, n))
        n -= sizeof(WRITER_SUFFIX) - 1;
    memcpy(out, owner, n);
    out[n] = '\0';
    if (writer)
        strcat(out, WRITER_SUFFIX);
}

bool
cr__name_is_writer(const char *owner, size_t len)
{
    size_t n = sizeof(WRITER_SUFFIX) - 1;

    return len > n && memcmp(owner + len - n, WRITER_SUFFIX, n) == 0;
}

#define CLIENT_WORD "credisson/"

char *
cr__name_client(const char *id)
{
    char host[65] = "";
    size_t i;

    /* The host cut short and made of characters Redis accepts in a name
     * ('/' made '_'). */
    (void)gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    for (i = 0; host[i] != '\0'; i++)
        if (host[i] < '!' || host[i] > '~' || host[i] == '/')
            host[i] = '_';
    return cr__strdup_printf(CLIENT_WORD "%s/%s/%ld", id,
                             host[0] != '\0' ? host : "unknown",
                             (long)getpid());
}

bool
cr__name_client_parse(const char *name, size_t len, const char *id,
                      size_t idlen, const char **host, size_t *hostlen,
                      long *pid)
{
    size_t w = sizeof(CLIENT_WORD) - 1;
    const char *rest, *slash;

    if (idlen == 0 || len <= w + idlen + 1 ||
        memcmp(name, CLIENT_WORD, w) != 0 ||
        memcmp(name + w, id, idlen) != 0 || name[w + idlen] != '/')
        return false;
    rest = name + w + idlen + 1;
    slash = memchr(rest, '/', len - w - idlen - 1);
    *host = NULL;
    *hostlen = 0;
    *pid = 0;
    if (slash != NULL) {
        *host = rest;
        *hostlen = (size_t)(slash - rest);
        *pid = strtol(slash + 1, NULL, 10);
    }
    return true;
}

void
cr__wire_of(int version, cr__wire *out)
{
    if (version == 0)
        version = CR__VERSION_NEWEST;
    out->version = version;
    out->pes_hex_ids = version < CR__VERSION(3, 17, 0);
    out->pes_id_per_permit = version >= CR__VERSION(3, 23, 4);
    out->fair_wait_ms = version < CR__VERSION(3, 13, 3) ? 5000 : 300000;
    out->sharded_pubsub = version >= CR__VERSION(3, 22, 0);
    out->rate_limiter = version >= CR__VERSION(3, 21, 0);
    out->keep_alive = version >= CR__VERSION(3, 38, 0);
}
