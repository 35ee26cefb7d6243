/* SPDX-License-Identifier: MIT */
/*
 * Parsing of the credisson command line: durations, counts, the command
 * word, the object's name, options (global ones anywhere before the command
 * to run, a command's own ones after its word) and the command to run.
 * Nothing here does I/O or reads the environment; text quoted back in an
 * error is shortened and stripped of control characters, and the value of
 * --url is never quoted, since it may carry a password. Two helpers work on
 * URL text for the caller: where a password sits (to hide it from ps) and
 * the TLS form of a scheme (--tls).
 */
#include "config.h"

#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The longest piece of user input quoted back in an error. */
#define MAX_QUOTED 40

/* Option identities, also used as bits of a "given" mask. */
typedef enum opt_id {
    OPT_URL = 0,
    OPT_TIMEOUT,
    OPT_NAME_PREFIX,
    OPT_JSON,
    OPT_VERBOSE,
    OPT_HELP,
    OPT_VERSION,
    OPT_WAIT,
    OPT_LEASE,
    OPT_FAIR,
    OPT_FENCED,
    OPT_READ,
    OPT_WRITE,
    OPT_WATCHDOG,
    OPT_KILL_AFTER,
    OPT_PERMITS,
    OPT_TLS,
    OPT_INSECURE,
    OPT_CACERT,
    OPT_CACERTDIR,
    OPT_CERT,
    OPT_KEY,
    OPT_SNI,
    OPT_USER,
    OPT_PASSWORD_FILE,
    OPT_SENTINEL_USER,
    OPT_SENTINEL_PASSWORD_FILE,
    OPT_CLIENT_NAME,
    OPT_PASS_CREDENTIALS
} opt_id;

#define BIT(id) ((uint64_t)1 << (id))
#define KIND_OPTS                                                          \
    (BIT(OPT_FAIR) | BIT(OPT_FENCED) | BIT(OPT_READ) | BIT(OPT_WRITE))
#define TLS_OPTS                                                           \
    (BIT(OPT_TLS) | BIT(OPT_INSECURE) | BIT(OPT_CACERT) |                  \
     BIT(OPT_CACERTDIR) | BIT(OPT_CERT) | BIT(OPT_KEY) | BIT(OPT_SNI))
#define CREDENTIAL_OPTS                                                    \
    (BIT(OPT_USER) | BIT(OPT_PASSWORD_FILE) | BIT(OPT_SENTINEL_USER) |     \
     BIT(OPT_SENTINEL_PASSWORD_FILE) | BIT(OPT_CLIENT_NAME))
#define GLOBAL_OPTS                                                        \
    (BIT(OPT_URL) | BIT(OPT_TIMEOUT) | BIT(OPT_NAME_PREFIX) |              \
     BIT(OPT_JSON) | BIT(OPT_VERBOSE) | BIT(OPT_HELP) | BIT(OPT_VERSION) | \
     TLS_OPTS | CREDENTIAL_OPTS)

typedef struct opt_def {
    const char *name;  /* without the leading "--" */
    char short_name;   /* 0: none */
    bool has_value;
    opt_id id;
} opt_def;

/* Every option; which ones a command accepts is allowed_opts()'s. */
static const opt_def opt_defs[] = {
    {"url", 0, true, OPT_URL},
    {"timeout", 0, true, OPT_TIMEOUT},
    {"name-prefix", 0, true, OPT_NAME_PREFIX},
    {"json", 0, false, OPT_JSON},
    {"verbose", 'v', false, OPT_VERBOSE},
    {"help", 'h', false, OPT_HELP},
    {"version", 'V', false, OPT_VERSION},
    {"wait", 'w', true, OPT_WAIT},
    {"lease", 0, true, OPT_LEASE},
    {"fair", 0, false, OPT_FAIR},
    {"fenced", 0, false, OPT_FENCED},
    {"read", 0, false, OPT_READ},
    {"write", 0, false, OPT_WRITE},
    {"watchdog", 0, true, OPT_WATCHDOG},
    {"kill-after", 0, true, OPT_KILL_AFTER},
    {"permits", 0, true, OPT_PERMITS},
    {"tls", 0, false, OPT_TLS},
    {"insecure", 0, false, OPT_INSECURE},
    {"cacert", 0, true, OPT_CACERT},
    {"cacertdir", 0, true, OPT_CACERTDIR},
    {"cert", 0, true, OPT_CERT},
    {"key", 0, true, OPT_KEY},
    {"sni", 0, true, OPT_SNI},
    {"user", 0, true, OPT_USER},
    {"password-file", 0, true, OPT_PASSWORD_FILE},
    {"sentinel-user", 0, true, OPT_SENTINEL_USER},
    {"sentinel-password-file", 0, true, OPT_SENTINEL_PASSWORD_FILE},
    {"client-name", 0, true, OPT_CLIENT_NAME},
    {"pass-credentials", 0, false, OPT_PASS_CREDENTIALS},
};

/* The state of one parse. */
typedef struct parser {
    int argc;
    char **argv;
    cr__cli_args *a;
    char *err;
    size_t errlen;
    uint64_t given;      /* BIT(opt) for every option seen */
    bool action_set;     /* an action word was read */
    bool value_pending;  /* set/add still needs its number */
    bool help_word;      /* "help" was the command word */
} parser;

/* ------------------------------------------------------------- messages */

/* Writes a formatted reason into the parser's error buffer and returns -1,
 * so failure paths read `return fail(p, ...)`. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Copies at most MAX_QUOTED characters of s into buf (MAX_QUOTED + 4
 * bytes), replacing bytes that are not printable ASCII with '?' and marking
 * a cut with "...", so user input can be quoted in a one-line message
 * without reaching the terminal as control sequences. */
static const char *quote(const char *s, char *buf)
{
    size_t i;

    for (i = 0; s[i] != '\0' && i < MAX_QUOTED; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (s[i] != '\0') {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

/* ---------------------------------------------------- numbers, durations */

/* Tells whether c is an ASCII digit, whatever the locale. */
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int cr__cli_parse_duration(const char *s, bool allow_forever, int64_t *out_ms,
                           char *err, size_t errlen)
{
    int64_t whole = 0, frac = 0, scale = 1, unit, ms;
    const char *p = s;
    int frac_digits = 0;

    if (s == NULL || *s == '\0')
        return fail(err, errlen, "empty duration");
    if (strcmp(s, "forever") == 0) {
        if (!allow_forever)
            return fail(err, errlen, "\"forever\" is not allowed here");
        *out_ms = CR__CLI_FOREVER;
        return 0;
    }
    if (!is_digit(*p))
        return fail(err, errlen, "a duration starts with a digit");
    for (; is_digit(*p); p++) {
        /* Anything past 100 years in seconds already is too long. */
        if (whole > CR__CLI_DURATION_MAX)
            return fail(err, errlen, "too long (at most 100 years)");
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return fail(err, errlen, "a digit must follow the decimal point");
        for (; is_digit(*p); p++) {
            if (++frac_digits > 9)
                return fail(err, errlen, "at most 9 decimals");
            frac = frac * 10 + (*p - '0');
            scale *= 10;
        }
    }
    if (strcmp(p, "ms") == 0)
        unit = 1;
    else if (*p == '\0' || strcmp(p, "s") == 0)
        unit = 1000;
    else if (strcmp(p, "m") == 0)
        unit = 60 * 1000;
    else if (strcmp(p, "h") == 0)
        unit = 3600 * 1000;
    else
        return fail(err, errlen, "unknown unit (use ms, s, m or h)");
    if (whole > CR__CLI_DURATION_MAX / unit)
        return fail(err, errlen, "too long (at most 100 years)");
    /* frac < scale <= 1e9 and unit <= 3.6e6: the product fits. */
    ms = whole * unit + frac * unit / scale;
    if (ms > CR__CLI_DURATION_MAX)
        return fail(err, errlen, "too long (at most 100 years)");
    *out_ms = ms;
    return 0;
}

int cr__cli_parse_count(const char *s, int64_t min, int64_t max,
                        int64_t *out, char *err, size_t errlen)
{
    const char *p = s;
    bool neg = false;
    int64_t v = 0;

    if (s == NULL || *s == '\0')
        return fail(err, errlen, "empty number");
    if (*p == '-') {
        neg = true;
        p++;
    }
    if (!is_digit(*p))
        return fail(err, errlen, "not a whole number");
    for (; is_digit(*p); p++) {
        if (v > CR__CLI_COUNT_MAX * 10)
            return fail(err, errlen, "out of range");
        v = v * 10 + (*p - '0');
    }
    if (*p != '\0')
        return fail(err, errlen, "not a whole number");
    if (neg)
        v = -v;
    if (v < min || v > max)
        return fail(err, errlen, "out of range (%lld..%lld)", (long long)min,
                    (long long)max);
    *out = v;
    return 0;
}

/* ---------------------------------------------------------------- words */

const char *cr__cli_command_name(cr__cli_command c)
{
    switch (c) {
    case CR__CLI_LOCK: return "lock";
    case CR__CLI_SEMAPHORE: return "semaphore";
    case CR__CLI_LATCH: return "latch";
    case CR__CLI_INSPECT: return "inspect";
    case CR__CLI_VERSION: return "version";
    case CR__CLI_NONE: break;
    }
    return "";
}

/* Maps a command word to its command; CR__CLI_NONE when unknown. */
static cr__cli_command command_of(const char *w)
{
    static const cr__cli_command all[] = {CR__CLI_LOCK, CR__CLI_SEMAPHORE,
                                          CR__CLI_LATCH, CR__CLI_INSPECT,
                                          CR__CLI_VERSION};
    size_t i;

    for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (strcmp(w, cr__cli_command_name(all[i])) == 0)
            return all[i];
    return CR__CLI_NONE;
}

/* Tells whether s is a negative whole number, which is a value ("add -2")
 * rather than an option when a number is expected. */
static bool is_negative_number(const char *s)
{
    if (s[0] != '-' || !is_digit(s[1]))
        return false;
    for (s++; *s != '\0'; s++)
        if (!is_digit(*s))
            return false;
    return true;
}

/* The options each command's action accepts besides the global ones. */
static uint64_t allowed_opts(const cr__cli_args *a)
{
    uint64_t run = BIT(OPT_WAIT) | BIT(OPT_LEASE) | BIT(OPT_WATCHDOG) |
                   BIT(OPT_KILL_AFTER) | BIT(OPT_PASS_CREDENTIALS);

    switch (a->action) {
    case CR__CLI_RUN:
        if (a->command == CR__CLI_LOCK)
            return run | KIND_OPTS;
        return run | BIT(OPT_PERMITS);
    case CR__CLI_LATCH_AWAIT:
        return BIT(OPT_WAIT);
    default:
        return 0;
    }
}

/* The words "semaphore NAME ACTION" or "latch NAME ACTION" name for an
 * action, for messages. */
static const char *action_word(cr__cli_action act)
{
    switch (act) {
    case CR__CLI_SEM_SET: case CR__CLI_LATCH_SET: return "set";
    case CR__CLI_SEM_ADD: return "add";
    case CR__CLI_SEM_AVAILABLE: return "available";
    case CR__CLI_LATCH_COUNT_DOWN: return "count-down";
    case CR__CLI_LATCH_AWAIT: return "await";
    case CR__CLI_LATCH_COUNT: return "count";
    case CR__CLI_RUN: return "run";
    case CR__CLI_SHOW: break;
    }
    return "";
}

/* ------------------------------------------------------------- options */

/* Tells whether s can name a Redis connection (CLIENT SETNAME): printable
 * ASCII without spaces. */
static bool is_client_name(const char *s)
{
    for (; *s != '\0'; s++)
        if (*s <= 0x20 || *s >= 0x7f)
            return false;
    return true;
}

/* Stores the value of option `d` (text `v`) into the arguments. Returns 0,
 * or -1 with the reason. */
static int set_option(parser *p, const opt_def *d, const char *v)
{
    cr__cli_args *a = p->a;
    char why[CR__CLI_ERR_MAX], q[MAX_QUOTED + 4];
    int64_t n;
    opt_id id = d->id;

    /* After "latch NAME await", --timeout is the await's limit. */
    if (id == OPT_TIMEOUT && a->command == CR__CLI_LATCH &&
        a->action == CR__CLI_LATCH_AWAIT)
        id = OPT_WAIT;
    p->given |= BIT(id);
    if (d->has_value && *v == '\0' && id != OPT_URL &&
        id != OPT_NAME_PREFIX && id != OPT_CLIENT_NAME)
        return fail(p->err, p->errlen, "--%s is empty", d->name);
    switch (id) {
    case OPT_URL:
        a->url = v;
        return 0;
    case OPT_TLS:
        a->tls = true;
        return 0;
    case OPT_INSECURE:
        a->insecure = true;
        return 0;
    case OPT_CACERT:
        a->cacert = v;
        return 0;
    case OPT_CACERTDIR:
        a->cacertdir = v;
        return 0;
    case OPT_CERT:
        a->cert = v;
        return 0;
    case OPT_KEY:
        a->key = v;
        return 0;
    case OPT_SNI:
        a->sni = v;
        return 0;
    case OPT_USER:
        a->user = v;
        return 0;
    case OPT_PASSWORD_FILE:
        a->password_file = v;
        return 0;
    case OPT_SENTINEL_USER:
        a->sentinel_user = v;
        return 0;
    case OPT_SENTINEL_PASSWORD_FILE:
        a->sentinel_password_file = v;
        return 0;
    case OPT_CLIENT_NAME:
        if (!is_client_name(v))
            return fail(p->err, p->errlen, "invalid --client-name '%s': "
                        "printable ASCII without spaces", quote(v, q));
        a->client_name = v;
        return 0;
    case OPT_PASS_CREDENTIALS:
        a->pass_credentials = true;
        return 0;
    case OPT_NAME_PREFIX:
        a->name_prefix = v;
        return 0;
    case OPT_JSON:
        a->json = true;
        return 0;
    case OPT_VERBOSE:
        a->verbose = true;
        return 0;
    case OPT_HELP:
        a->help = true;
        return 0;
    case OPT_VERSION:
        return 0;
    case OPT_FAIR:
        a->kind = CR__CLI_LOCK_FAIR;
        return 0;
    case OPT_FENCED:
        a->kind = CR__CLI_LOCK_FENCED;
        return 0;
    case OPT_READ:
        a->kind = CR__CLI_LOCK_READ;
        return 0;
    case OPT_WRITE:
        a->kind = CR__CLI_LOCK_WRITE;
        return 0;
    case OPT_PERMITS:
        if (cr__cli_parse_count(v, 1, CR__CLI_COUNT_MAX, &n, why,
                                sizeof(why)) != 0)
            return fail(p->err, p->errlen, "invalid number '%s' for "
                        "--permits: %s", quote(v, q), why);
        a->permits = n;
        return 0;
    default:
        break;
    }
    if (cr__cli_parse_duration(v, id == OPT_WAIT, &n, why, sizeof(why)) != 0)
        return fail(p->err, p->errlen, "invalid duration '%s' for --%s: %s "
                    "(examples: 500ms, 10s, 1.5m)", quote(v, q), d->name, why);
    switch (id) {
    case OPT_TIMEOUT:
    case OPT_LEASE:
    case OPT_WATCHDOG:
        if (n == 0)
            return fail(p->err, p->errlen, "--%s must be more than 0",
                        d->name);
        if (id == OPT_TIMEOUT)
            a->timeout_ms = n;
        else if (id == OPT_LEASE)
            a->lease_ms = n;
        else
            a->watchdog_ms = n;
        return 0;
    case OPT_WAIT:
        a->wait_ms = n;
        return 0;
    case OPT_KILL_AFTER:
        a->kill_after_ms = n;
        return 0;
    default:
        return 0;
    }
}

/* Finds the option definition for a long name of len bytes, or a short
 * letter (name NULL); NULL when there is none. */
static const opt_def *find_opt(const char *name, size_t len, char letter)
{
    size_t i;

    for (i = 0; i < sizeof(opt_defs) / sizeof(opt_defs[0]); i++) {
        const opt_def *d = &opt_defs[i];

        if (name == NULL ? d->short_name == letter && letter != 0
                         : strlen(d->name) == len &&
                               memcmp(d->name, name, len) == 0)
            return d;
    }
    return NULL;
}

/* Parses the option at argv[*i] (which starts with '-'), taking its value
 * from the same word after '=' or from the next word. Advances *i past
 * what it used. Returns 0 or -1. */
static int parse_option(parser *p, int *i)
{
    const char *w = p->argv[*i], *v = NULL, *eq;
    char q[MAX_QUOTED + 4];
    const opt_def *d;

    if (w[1] == '-') {
        eq = strchr(w + 2, '=');
        d = find_opt(w + 2, eq != NULL ? (size_t)(eq - w - 2) : strlen(w + 2),
                     0);
        if (d == NULL) {
            char name[MAX_QUOTED + 4];

            if (eq != NULL) {
                /* Quote the name only: the value may be a secret. */
                size_t n = (size_t)(eq - w);

                if (n > MAX_QUOTED)
                    n = MAX_QUOTED;
                memcpy(name, w, n);
                name[n] = '\0';
                w = name;
            }
            return fail(p->err, p->errlen, "unknown option '%s'",
                        quote(w, q));
        }
        if (eq != NULL) {
            if (!d->has_value)
                return fail(p->err, p->errlen, "option --%s takes no value",
                            d->name);
            v = eq + 1;
        }
    } else {
        d = w[2] == '\0' ? find_opt(NULL, 0, w[1]) : NULL;
        if (d == NULL)
            return fail(p->err, p->errlen, "unknown option '%s'",
                        quote(w, q));
    }
    if (d->has_value && v == NULL) {
        if (*i + 1 >= p->argc)
            return fail(p->err, p->errlen, "option --%s needs a value",
                        d->name);
        v = p->argv[++*i];
    }
    (*i)++;
    return set_option(p, d, v);
}

/* ----------------------------------------------------------- positionals */

/* Takes the rest of argv, from index i, as the command to run. */
static int take_command(parser *p, int i)
{
    if (i >= p->argc)
        return fail(p->err, p->errlen, "missing the command to run after "
                    "'--'");
    p->a->cmd = &p->argv[i];
    p->a->cmd_argc = p->argc - i;
    return 0;
}

/* Handles the positional word at argv[*i] and advances *i past it.
 * Returns 0, -1 on a usage error, or 1 when the word is the first of the
 * command to run (then *i is left on it). */
static int parse_positional(parser *p, int *i)
{
    cr__cli_args *a = p->a;
    const char *w = p->argv[*i];
    char why[CR__CLI_ERR_MAX], q[MAX_QUOTED + 4];
    int64_t n;

    if (a->command == CR__CLI_NONE) {
        if (strcmp(w, "help") == 0 && !p->help_word) {
            p->help_word = true;
            a->help = true;
            (*i)++;
            return 0;
        }
        a->command = command_of(w);
        if (a->command == CR__CLI_NONE)
            return fail(p->err, p->errlen, "unknown command '%s' (use lock, "
                        "semaphore, latch or inspect)", quote(w, q));
        if (a->command == CR__CLI_INSPECT)
            a->action = CR__CLI_SHOW;
        (*i)++;
        return 0;
    }
    if (a->command == CR__CLI_VERSION)
        return fail(p->err, p->errlen, "unexpected argument '%s'",
                    quote(w, q));
    if (a->name == NULL) {
        if (*w == '\0')
            return fail(p->err, p->errlen, "NAME is empty");
        a->name = w;
        (*i)++;
        return 0;
    }
    if (p->value_pending) {
        int64_t min = a->action == CR__CLI_SEM_ADD     ? -CR__CLI_COUNT_MAX
                      : a->action == CR__CLI_LATCH_SET ? 1
                                                       : 0;

        if (cr__cli_parse_count(w, min, CR__CLI_COUNT_MAX, &n, why,
                                sizeof(why)) != 0)
            return fail(p->err, p->errlen, "invalid number '%s' for %s: %s",
                        quote(w, q), action_word(a->action), why);
        a->value = n;
        p->value_pending = false;
        (*i)++;
        return 0;
    }
    switch (a->command) {
    case CR__CLI_LOCK:
        return 1; /* the command to run starts here */
    case CR__CLI_SEMAPHORE:
        if (!p->action_set) {
            p->action_set = true;
            if (strcmp(w, "set") == 0 || strcmp(w, "add") == 0) {
                a->action = w[0] == 's' ? CR__CLI_SEM_SET : CR__CLI_SEM_ADD;
                p->value_pending = true;
            } else if (strcmp(w, "available") == 0) {
                a->action = CR__CLI_SEM_AVAILABLE;
            } else {
                a->action = CR__CLI_RUN;
                return 1; /* the command to run starts here */
            }
            (*i)++;
            return 0;
        }
        break;
    case CR__CLI_LATCH:
        if (!p->action_set) {
            p->action_set = true;
            if (strcmp(w, "set") == 0) {
                a->action = CR__CLI_LATCH_SET;
                p->value_pending = true;
            } else if (strcmp(w, "count-down") == 0) {
                a->action = CR__CLI_LATCH_COUNT_DOWN;
            } else if (strcmp(w, "await") == 0) {
                a->action = CR__CLI_LATCH_AWAIT;
            } else if (strcmp(w, "count") == 0) {
                a->action = CR__CLI_LATCH_COUNT;
            } else {
                return fail(p->err, p->errlen, "unknown latch action '%s' "
                            "(use set, count-down, await or count)",
                            quote(w, q));
            }
            (*i)++;
            return 0;
        }
        break;
    default:
        break;
    }
    return fail(p->err, p->errlen, "unexpected argument '%s'", quote(w, q));
}

/* --------------------------------------------------------------- checks */

/* Settles --kill-after for a command run: by default a third of the
 * lease the hold stands on (--lease, else the watchdog's), at most
 * CR__CLI_DEFAULT_KILL_AFTER_MS. One given must be shorter than that
 * lease, since the command gets SIGTERM that long before it ends; with
 * the watchdog, shorter than two thirds of it: a renewal comes every
 * third, and the deadline is then two thirds of the lease away at the
 * least, so a longer one would stop every command just before its next
 * renewal. Returns 0 or -1 with the reason. */
static int settle_kill_after(parser *p)
{
    cr__cli_args *a = p->a;
    int64_t lease = a->lease_ms > 0      ? a->lease_ms
                    : a->watchdog_ms > 0 ? a->watchdog_ms
                                         : CR__CLI_DEFAULT_WATCHDOG_MS;

    if (!(p->given & BIT(OPT_KILL_AFTER))) {
        a->kill_after_ms = lease / 3 < CR__CLI_DEFAULT_KILL_AFTER_MS
                               ? lease / 3
                               : CR__CLI_DEFAULT_KILL_AFTER_MS;
        return 0;
    }
    if (a->kill_after_ms >= lease)
        return fail(p->err, p->errlen, "--kill-after must be shorter than "
                    "the lease (%s%lldms)",
                    a->lease_ms > 0 ? "--lease " : "the watchdog's ",
                    (long long)lease);
    if (a->lease_ms <= 0 && a->kill_after_ms >= lease - lease / 3)
        return fail(p->err, p->errlen, "--kill-after must be shorter than "
                    "two thirds of the watchdog's lease (%lldms), which is "
                    "renewed every third of it", (long long)lease);
    return 0;
}

/* Checks what the whole command line says once it is read. Returns 0 or
 * -1 with the reason. */
static int check(parser *p)
{
    cr__cli_args *a = p->a;
    uint64_t extra, kinds;
    size_t k;

    if (p->given & BIT(OPT_VERSION)) {
        a->command = CR__CLI_VERSION;
        return 0;
    }
    if (a->help)
        return 0;
    if (a->command == CR__CLI_NONE)
        return fail(p->err, p->errlen, "missing command (lock, semaphore, "
                    "latch or inspect; try --help)");
    if (a->command == CR__CLI_VERSION)
        return 0;
    if (a->name == NULL)
        return fail(p->err, p->errlen, "missing NAME after '%s'",
                    cr__cli_command_name(a->command));
    if (a->command == CR__CLI_LOCK && a->cmd == NULL)
        return fail(p->err, p->errlen, "missing the command to run (put it "
                    "after --)");
    if (a->command == CR__CLI_SEMAPHORE && !p->action_set && a->cmd == NULL)
        return fail(p->err, p->errlen, "missing the command to run (after "
                    "--), or set, add or available");
    if (a->command == CR__CLI_LATCH && !p->action_set)
        return fail(p->err, p->errlen, "missing the latch action: set, "
                    "count-down, await or count");
    if (p->value_pending)
        return fail(p->err, p->errlen, "missing the number after '%s'",
                    action_word(a->action));
    extra = p->given & ~(GLOBAL_OPTS | allowed_opts(a));
    for (k = 0; k < sizeof(opt_defs) / sizeof(opt_defs[0]); k++) {
        if (extra & BIT(opt_defs[k].id)) {
            if (a->command == CR__CLI_INSPECT)
                return fail(p->err, p->errlen, "option --%s does not apply "
                            "to inspect", opt_defs[k].name);
            return fail(p->err, p->errlen, "option --%s does not apply to "
                        "'%s %s'", opt_defs[k].name,
                        cr__cli_command_name(a->command),
                        action_word(a->action));
        }
    }
    kinds = p->given & KIND_OPTS;
    if ((kinds & (kinds - 1)) != 0)
        return fail(p->err, p->errlen, "--fair, --fenced, --read and "
                    "--write exclude each other");
    if (a->action == CR__CLI_RUN)
        return settle_kill_after(p);
    return 0;
}

int cr__cli_parse_args(int argc, char **argv, cr__cli_args *out, char *err,
                       size_t errlen)
{
    parser p;
    int i = 1, rc;

    memset(out, 0, sizeof(*out));
    out->timeout_ms = -1;
    out->wait_ms = CR__CLI_FOREVER;
    out->lease_ms = -1;
    out->watchdog_ms = -1;
    out->kill_after_ms = -1;
    out->permits = -1;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    memset(&p, 0, sizeof(p));
    p.argc = argc;
    p.argv = argv;
    p.a = out;
    p.err = err;
    p.errlen = errlen;
    while (i < argc) {
        const char *w = argv[i];

        if (strcmp(w, "--") == 0) {
            bool runs = out->command == CR__CLI_LOCK ||
                        (out->command == CR__CLI_SEMAPHORE &&
                         (!p.action_set || out->action == CR__CLI_RUN));

            if (!runs || out->name == NULL)
                return fail(err, errlen, "unexpected '--': only 'lock NAME' "
                            "and 'semaphore NAME' run a command");
            out->action = CR__CLI_RUN;
            p.action_set = true;
            if (take_command(&p, i + 1) != 0)
                return -1;
            break;
        }
        if (w[0] == '-' && w[1] != '\0' &&
            !(p.value_pending && is_negative_number(w)))
            rc = parse_option(&p, &i);
        else
            rc = parse_positional(&p, &i);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            /* A plain word after NAME starts the command to run. */
            out->action = CR__CLI_RUN;
            p.action_set = true;
            take_command(&p, i);
            break;
        }
    }
    return check(&p);
}

/* ------------------------------------------------------------------ URLs */

bool cr__cli_url_password(const char *url, size_t *off, size_t *len)
{
    const char *rest = strstr(url, "://"), *at = NULL, *colon;
    size_t auth_len, i;

    *off = *len = 0;
    if (rest == NULL)
        return false;
    rest += 3;
    auth_len = strcspn(rest, "/?#");
    for (i = 0; i < auth_len; i++)
        if (rest[i] == '@')
            at = rest + i;
    if (at == NULL)
        return false;
    colon = memchr(rest, ':', (size_t)(at - rest));
    if (colon == NULL || colon + 1 == at)
        return false;
    *off = (size_t)(colon + 1 - url);
    *len = (size_t)(at - colon - 1);
    return true;
}

int cr__cli_tls_url(const char *url, char *buf, size_t len)
{
    static const char *const tcp[] = {"redis", "redis-sentinel",
                                      "redis-cluster"};
    const char *sep = strstr(url, "://");
    size_t scheme_len, i;

    if (sep == NULL)
        return -1;
    scheme_len = (size_t)(sep - url);
    for (i = 0; i < sizeof(tcp) / sizeof(tcp[0]); i++) {
        size_t n = strlen(tcp[i]);

        if (scheme_len == n + 1 && strncasecmp(url, "rediss", 6) == 0 &&
            strncasecmp(url + 6, tcp[i] + 5, n - 5) == 0) {
            /* Already a TLS form. */
            if (strlen(url) >= len)
                return -1;
            strcpy(buf, url);
            return 0;
        }
        if (scheme_len == n && strncasecmp(url, tcp[i], n) == 0) {
            /* "redis" + "s" + the rest ("-sentinel://..."). */
            if (strlen(url) + 1 >= len)
                return -1;
            memcpy(buf, url, 5);
            buf[5] = 's';
            strcpy(buf + 6, url + 5);
            return 0;
        }
    }
    return -1;
}
