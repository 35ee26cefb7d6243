/* SPDX-License-Identifier: MIT */
/*
 * Parsing of the credisson command line: the command word, the object's
 * name, options (global ones anywhere before the command to run, a
 * command's own ones after its word), read with getopt_long, the action
 * and the command to run; and the tables of commands, actions and options
 * that help is made from. The values (durations, counts, rates, URL text)
 * are read by values.c.
 * Nothing here does I/O or reads the environment (glibc's getopt reads
 * POSIXLY_CORRECT, which the '+' of the optstring makes moot); text quoted
 * back in an error is shortened and stripped of control characters, and
 * the value of --url is never quoted, since it may carry a password.
 */
#include "config.h"

#include "args.h"

#include <getopt.h>
#include <limits.h>
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
    OPT_PASS_CREDENTIALS,
    OPT_COMMAND_TIMEOUT,
    OPT_QUIET,
    OPT_NO_STATUS,
    OPT_NONBLOCK,
    OPT_CONFLICT_EXIT_CODE,
    OPT_MUST_EXIST,
    OPT_PARTIES,
    OPT_RATE,
    OPT_PER_CLIENT,
    OPT_KEEP_ALIVE,
    OPT_REDISSON_VERSION,
    OPT_FORCE,
    OPT_YES
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
    (BIT(OPT_URL) | BIT(OPT_TIMEOUT) | BIT(OPT_COMMAND_TIMEOUT) |          \
     BIT(OPT_NAME_PREFIX) | BIT(OPT_REDISSON_VERSION) | BIT(OPT_JSON) |    \
     BIT(OPT_VERBOSE) |                                                    \
     BIT(OPT_QUIET) | BIT(OPT_NO_STATUS) | BIT(OPT_HELP) |                 \
     BIT(OPT_VERSION) | TLS_OPTS | CREDENTIAL_OPTS)
/* The options of a wait: how long, and what to do when it runs out. */
#define WAIT_OPTS                                                          \
    (BIT(OPT_WAIT) | BIT(OPT_NONBLOCK) | BIT(OPT_CONFLICT_EXIT_CODE))

typedef struct opt_def {
    const char *name;  /* without the leading "--" */
    char short_name;   /* 0: none */
    bool has_value;
    opt_id id;
    const char *arg;   /* the value's placeholder in help; NULL: none */
    const char *help;  /* its lines in help, '\n' between them */
} opt_def;

/* Every option, in the order help lists them; which ones a command
 * accepts is allowed_opts()'s. Help is made from this table, so that it
 * lists exactly what the parser takes. */
static const opt_def opt_defs[] = {
    {"url", 0, true, OPT_URL, "URL",
     "redis://[[user]:password@]host[:port][/db],\n"
     "unix:///path/to.sock,\n"
     "redis-sentinel://host:port[,host:port...]/master,\n"
     "redis-cluster://host:port[,host:port...]\n"
     "[?sharded=auto|on|off], or rediss://,\n"
     "rediss-sentinel://, rediss-cluster:// for TLS;\n"
     "default $CREDISSON_URL, else redis://127.0.0.1:6379"},
    {"command-timeout", 0, true, OPT_COMMAND_TIMEOUT, "D",
     "Redis connect and command timeout (default 3s)"},
    {"timeout", 0, true, OPT_TIMEOUT, "D",
     "before the command word: --command-timeout (its old\n"
     "name); after 'latch NAME await' and 'barrier': --wait"},
    {"name-prefix", 0, true, OPT_NAME_PREFIX, "P",
     "put P before every name (a Redisson NameMapper)"},
    {"redisson-version", 0, true, OPT_REDISSON_VERSION, "V",
     "the Java side's Redisson release, such as 3.16.4:\n"
     "write what it reads (default: 4.7; see credisson(1))"},
    {"user", 0, true, OPT_USER, "NAME", "the ACL user ($CREDISSON_USER)"},
    {"password-file", 0, true, OPT_PASSWORD_FILE, "F",
     "the password: the first line of F\n"
     "($CREDISSON_PASSWORD holds one too)"},
    {"sentinel-user", 0, true, OPT_SENTINEL_USER, "NAME",
     "the sentinels' own user ($CREDISSON_SENTINEL_USER)"},
    {"sentinel-password-file", 0, true, OPT_SENTINEL_PASSWORD_FILE, "F",
     "the sentinels' own password\n($CREDISSON_SENTINEL_PASSWORD)"},
    {"client-name", 0, true, OPT_CLIENT_NAME, "N",
     "name the connections N (CLIENT SETNAME)"},
    {"tls", 0, false, OPT_TLS, NULL,
     "use TLS: redis... URLs become rediss..."},
    {"cacert", 0, true, OPT_CACERT, "F",
     "verify the server with the CA certificates in F\n"
     "($CREDISSON_CACERT; default: the system's)"},
    {"cacertdir", 0, true, OPT_CACERTDIR, "D",
     "... or with those in directory D ($CREDISSON_CACERTDIR)"},
    {"cert", 0, true, OPT_CERT, "F",
     "the client certificate for mutual TLS ($CREDISSON_CERT)"},
    {"key", 0, true, OPT_KEY, "F",
     "the client certificate's key ($CREDISSON_KEY)"},
    {"sni", 0, true, OPT_SNI, "NAME",
     "the server name asked for and verified ($CREDISSON_SNI)"},
    {"insecure", 0, false, OPT_INSECURE, NULL,
     "do not verify the server ($CREDISSON_INSECURE=1)"},
    {"json", 0, false, OPT_JSON, NULL, "print data as JSON"},
    {"quiet", 'q', false, OPT_QUIET, NULL,
     "say nothing when not obtained in time (busy, gave up),\n"
     "and show no status line"},
    {"no-status", 0, false, OPT_NO_STATUS, NULL,
     "show no status line while waiting on a terminal"},
    {"verbose", 'v', false, OPT_VERBOSE, NULL,
     "show the status line while waiting on a terminal\n"
     "(the default; overrides --no-status)"},
    {"help", 'h', false, OPT_HELP, NULL, "show help"},
    {"version", 'V', false, OPT_VERSION, NULL, "show the version"},
    {"wait", 'w', true, OPT_WAIT, "D",
     "give up after D (0: one try); default: wait forever"},
    {"nonblock", 'n', false, OPT_NONBLOCK, NULL,
     "one try, no wait: --wait 0 (as flock -n)"},
    {"conflict-exit-code", 'E', true, OPT_CONFLICT_EXIT_CODE, "N",
     "exit with N (0-255) instead of 75 when not obtained in\n"
     "time (as flock -E)"},
    {"must-exist", 0, false, OPT_MUST_EXIST, NULL,
     "a latch that was never set is not open: wait until it\n"
     "is set and opened (see credisson(1) for Java's latches)"},
    {"lease", 0, true, OPT_LEASE, "D",
     "hold at most D, without renewal: CMD is stopped before\n"
     "the lease runs out; default: renewed for as long as\n"
     "CMD runs"},
    {"fair", 0, false, OPT_FAIR, NULL,
     "the fair lock (RFairLock): first come, first served"},
    {"fenced", 0, false, OPT_FENCED, NULL,
     "the fenced lock (RFencedLock): CMD gets a fencing\n"
     "token that grows with every acquisition"},
    {"read", 0, false, OPT_READ, NULL,
     "the read side of a read/write lock"},
    {"write", 0, false, OPT_WRITE, NULL,
     "the write side of a read/write lock"},
    {"permits", 0, true, OPT_PERMITS, "K",
     "make the semaphore K permits in total first"},
    {"watchdog", 0, true, OPT_WATCHDOG, "D",
     "the lease renewed while CMD runs, every third of it\n"
     "(default 30s)"},
    {"kill-after", 0, true, OPT_KILL_AFTER, "D",
     "SIGTERM CMD this long before the lease ends and\n"
     "SIGKILL it then; when the hold is lost, SIGTERM\n"
     "at once, SIGKILL D later (or at the end of the\n"
     "lease); default a third of the lease, at most 10s;\n"
     "shorter than the lease (than 2/3 of the watchdog's)"},
    {"pass-credentials", 0, false, OPT_PASS_CREDENTIALS, NULL,
     "give CMD the URL, user, password and TLS settings\n"
     "(for a credisson run inside CMD); otherwise CMD\n"
     "gets no password"},
    {"parties", 0, true, OPT_PARTIES, "N",
     "the barrier's number of parties (all must give the same)"},
    {"rate", 0, true, OPT_RATE, "R/INTERVAL",
     "the limiter's rate, set if it has none: R permits per\n"
     "INTERVAL (a duration); a warning when it has another"},
    {"per-client", 0, false, OPT_PER_CLIENT, NULL,
     "with --rate or set-rate: a budget per client\n"
     "(PER_CLIENT); a run with --rate needs --keep-alive"},
    {"keep-alive", 0, true, OPT_KEEP_ALIVE, "D",
     "with --rate or set-rate: how long the limiter's keys\n"
     "outlive their last use (at least INTERVAL)"},
    {"force", 0, false, OPT_FORCE, NULL,
     "unlock whoever holds it (Redisson's forceUnlock)"},
    {"yes", 0, false, OPT_YES, NULL,
     "go on although the holder's client is connected"},
};
#define N_OPTS (sizeof(opt_defs) / sizeof(opt_defs[0]))

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
    /* --timeout after the command word, before an action says whether
     * it is the wait or the Redis timeout (check() settles it). */
    bool late_timeout;
    int64_t late_timeout_ms;
} parser;

/* ------------------------------------------------------------- messages */

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

/* ---------------------------------------------------------------- words */

bool cr__cli_action_waits(const cr__cli_args *a)
{
    return a->action == CR__CLI_RUN || a->action == CR__CLI_LATCH_AWAIT ||
           a->action == CR__CLI_BARRIER_AWAIT ||
           a->action == CR__CLI_LOCK_HOLD;
}

const char *cr__cli_command_name(cr__cli_command c)
{
    switch (c) {
    case CR__CLI_LOCK: return "lock";
    case CR__CLI_SEMAPHORE: return "semaphore";
    case CR__CLI_LATCH: return "latch";
    case CR__CLI_INSPECT: return "inspect";
    case CR__CLI_VERSION: return "version";
    case CR__CLI_BARRIER: return "barrier";
    case CR__CLI_RATELIMIT: return "ratelimit";
    case CR__CLI_UNLOCK: return "unlock";
    case CR__CLI_DELETE: return "delete";
    case CR__CLI_NONE: break;
    }
    return "";
}

/* Maps a command word to its command; CR__CLI_NONE when unknown. */
static cr__cli_command command_of(const char *w)
{
    static const cr__cli_command all[] = {CR__CLI_LOCK, CR__CLI_SEMAPHORE,
                                          CR__CLI_LATCH, CR__CLI_INSPECT,
                                          CR__CLI_VERSION, CR__CLI_BARRIER,
                                          CR__CLI_RATELIMIT, CR__CLI_UNLOCK,
                                          CR__CLI_DELETE};
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
    if (s[0] != '-' || !cr__cli_is_digit(s[1]))
        return false;
    for (s++; *s != '\0'; s++)
        if (!cr__cli_is_digit(*s))
            return false;
    return true;
}

/* The options each command's action accepts besides the global ones. */
static uint64_t allowed_opts(const cr__cli_args *a)
{
    uint64_t run = WAIT_OPTS | BIT(OPT_LEASE) | BIT(OPT_WATCHDOG) |
                   BIT(OPT_KILL_AFTER) | BIT(OPT_PASS_CREDENTIALS);
    uint64_t rate = BIT(OPT_RATE) | BIT(OPT_PER_CLIENT) | BIT(OPT_KEEP_ALIVE);

    switch (a->action) {
    case CR__CLI_BARRIER_AWAIT:
        return BIT(OPT_WAIT) | BIT(OPT_PARTIES);
    case CR__CLI_RL_SET_RATE:
        return BIT(OPT_PER_CLIENT) | BIT(OPT_KEEP_ALIVE);
    case CR__CLI_LOCK_HOLD:
        return WAIT_OPTS | BIT(OPT_LEASE) | BIT(OPT_WATCHDOG) | KIND_OPTS;
    case CR__CLI_FORCE_UNLOCK:
        return BIT(OPT_FORCE) | BIT(OPT_YES);
    case CR__CLI_DELETE_OBJECT:
        return BIT(OPT_YES);
    case CR__CLI_LATCH_AWAIT:
        return WAIT_OPTS | BIT(OPT_MUST_EXIST);
    case CR__CLI_RUN:
        if (a->command == CR__CLI_LOCK)
            return run | KIND_OPTS;
        if (a->command == CR__CLI_SEMAPHORE)
            return run | BIT(OPT_PERMITS);
        if (a->command == CR__CLI_BARRIER)
            return BIT(OPT_WAIT) | BIT(OPT_PARTIES) |
                   BIT(OPT_PASS_CREDENTIALS);
        if (a->command == CR__CLI_RATELIMIT)
            return BIT(OPT_WAIT) | rate | BIT(OPT_PASS_CREDENTIALS);
        return 0;
    default:
        return 0;
    }
}

/* An action word after NAME, and what it takes after it. */
typedef struct action_def {
    cr__cli_command command;
    const char *word;
    cr__cli_action action;
    char value; /* 'n' a count (set/add K, set N), 'r' a rate, 0 none */
} action_def;

/* Every action word, in the order help lists them. */
static const action_def action_defs[] = {
    {CR__CLI_SEMAPHORE, "set", CR__CLI_SEM_SET, 'n'},
    {CR__CLI_SEMAPHORE, "add", CR__CLI_SEM_ADD, 'n'},
    {CR__CLI_SEMAPHORE, "available", CR__CLI_SEM_AVAILABLE, 0},
    {CR__CLI_LATCH, "set", CR__CLI_LATCH_SET, 'n'},
    {CR__CLI_LATCH, "count-down", CR__CLI_LATCH_COUNT_DOWN, 0},
    {CR__CLI_LATCH, "await", CR__CLI_LATCH_AWAIT, 0},
    {CR__CLI_LATCH, "count", CR__CLI_LATCH_COUNT, 0},
    {CR__CLI_BARRIER, "reset", CR__CLI_BARRIER_RESET, 0},
    {CR__CLI_RATELIMIT, "set-rate", CR__CLI_RL_SET_RATE, 'r'},
    {CR__CLI_RATELIMIT, "available", CR__CLI_RL_AVAILABLE, 0},
};
#define N_ACTIONS (sizeof(action_defs) / sizeof(action_defs[0]))

/* The word an action is named by in messages ("set", "await"). */
static const char *action_word(cr__cli_action act)
{
    size_t k;

    for (k = 0; k < N_ACTIONS; k++)
        if (action_defs[k].action == act)
            return action_defs[k].word;
    switch (act) {
    case CR__CLI_BARRIER_AWAIT: return "await";
    case CR__CLI_RUN: return "run";
    default: break;
    }
    return "";
}

/* Writes the action words of command c into buf as "a, b or c". */
static const char *action_list(cr__cli_command c, char *buf, size_t len)
{
    size_t k, n = 0, seen = 0, total = 0;

    for (k = 0; k < N_ACTIONS; k++)
        total += action_defs[k].command == c;
    buf[0] = '\0';
    for (k = 0; k < N_ACTIONS; k++) {
        if (action_defs[k].command != c)
            continue;
        seen++;
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s",
                              seen == 1       ? ""
                              : seen == total ? " or "
                                              : ", ",
                              action_defs[k].word);
        if (n >= len)
            break;
    }
    return buf;
}

/* The action of command c that word w is a likely slip of: within one
 * edit of a word of up to four letters, two of a longer one. NULL when
 * none is that close. */
static const action_def *near_action(cr__cli_command c, const char *w)
{
    size_t k;

    for (k = 0; k < N_ACTIONS; k++) {
        const action_def *d = &action_defs[k];
        int most = strlen(d->word) <= 4 ? 1 : 2;

        if (d->command == c && cr__cli_action_distance(w, d->word, most) <=
                                   most)
            return d;
    }
    return NULL;
}

/* ------------------------------------------------------------- options */

/* The actions that no word names: a command run, a wait, a hold. */
static const struct {
    cr__cli_command command;
    cr__cli_action action;
} wordless[] = {
    {CR__CLI_LOCK, CR__CLI_RUN},          {CR__CLI_LOCK, CR__CLI_LOCK_HOLD},
    {CR__CLI_SEMAPHORE, CR__CLI_RUN},
    {CR__CLI_BARRIER, CR__CLI_BARRIER_AWAIT},
    {CR__CLI_BARRIER, CR__CLI_RUN},       {CR__CLI_RATELIMIT, CR__CLI_RUN},
    {CR__CLI_UNLOCK, CR__CLI_FORCE_UNLOCK},
    {CR__CLI_DELETE, CR__CLI_DELETE_OBJECT}};

/* The options of command c's own, those of all its actions. */
static uint64_t own_opts(cr__cli_command c)
{
    cr__cli_args a;
    uint64_t mask = 0;
    size_t k;

    memset(&a, 0, sizeof(a));
    a.command = c;
    for (k = 0; k < N_ACTIONS; k++) {
        if (action_defs[k].command == c) {
            a.action = action_defs[k].action;
            mask |= allowed_opts(&a);
        }
    }
    for (k = 0; k < sizeof(wordless) / sizeof(wordless[0]); k++) {
        if (wordless[k].command == c) {
            a.action = wordless[k].action;
            mask |= allowed_opts(&a);
        }
    }
    return mask;
}

size_t cr__cli_option_docs(cr__cli_command c, cr__cli_option_doc *out,
                           size_t max)
{
    uint64_t mask = c == CR__CLI_NONE ? GLOBAL_OPTS : own_opts(c);
    size_t k, n = 0;

    for (k = 0; k < N_OPTS; k++) {
        const opt_def *d = &opt_defs[k];

        if (!(mask & BIT(d->id)))
            continue;
        if (n < max) {
            out[n].short_name = d->short_name;
            out[n].name = d->name;
            out[n].arg = d->arg;
            out[n].help = d->help;
        }
        n++;
    }
    return n;
}

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

    /* --timeout is the old name of two options: before the command word,
     * --command-timeout; after "latch NAME await" and "barrier", --wait.
     * Elsewhere after the command word it is settled once the action is
     * known. */
    if (id == OPT_TIMEOUT && ((a->command == CR__CLI_LATCH &&
                               a->action == CR__CLI_LATCH_AWAIT) ||
                              a->command == CR__CLI_BARRIER))
        id = OPT_WAIT;
    else if (id == OPT_TIMEOUT && a->command == CR__CLI_NONE)
        id = OPT_COMMAND_TIMEOUT;
    p->given |= BIT(id);
    if (d->has_value && *v == '\0' && id != OPT_URL &&
        id != OPT_NAME_PREFIX && id != OPT_CLIENT_NAME)
        return cr__cli_why(p->err, p->errlen, "--%s is empty", d->name);
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
            return cr__cli_why(p->err, p->errlen,
                               "invalid --client-name '%s': "
                               "printable ASCII without spaces",
                               quote(v, q));
        a->client_name = v;
        return 0;
    case OPT_PASS_CREDENTIALS:
        a->pass_credentials = true;
        return 0;
    case OPT_NAME_PREFIX:
        a->name_prefix = v;
        return 0;
    case OPT_REDISSON_VERSION:
        a->redisson_version = v;
        return 0;
    case OPT_JSON:
        a->json = true;
        return 0;
    case OPT_VERBOSE:
        a->verbose = true;
        return 0;
    case OPT_QUIET:
        a->quiet = true;
        return 0;
    case OPT_NO_STATUS:
        a->no_status = true;
        return 0;
    case OPT_NONBLOCK:
        a->wait_ms = 0;
        return 0;
    case OPT_MUST_EXIST:
        a->must_exist = true;
        return 0;
    case OPT_CONFLICT_EXIT_CODE:
        if (cr__cli_parse_count(v, 0, 255, &n, why, sizeof(why)) != 0)
            return cr__cli_why(p->err, p->errlen,
                               "invalid number '%s' for "
                               "--conflict-exit-code: %s",
                               quote(v, q), why);
        a->conflict_exit_code = (int)n;
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
            return cr__cli_why(p->err, p->errlen,
                               "invalid number '%s' for "
                               "--permits: %s",
                               quote(v, q), why);
        a->permits = n;
        return 0;
    case OPT_PARTIES:
        if (cr__cli_parse_count(v, 1, CR__CLI_PARTIES_MAX, &n, why,
                                sizeof(why)) != 0)
            return cr__cli_why(p->err, p->errlen,
                               "invalid number '%s' for "
                               "--parties: %s",
                               quote(v, q), why);
        a->parties = n;
        return 0;
    case OPT_RATE:
        if (cr__cli_parse_rate(v, &a->rate, &a->rate_interval_ms, why,
                               sizeof(why)) != 0)
            return cr__cli_why(p->err, p->errlen,
                               "invalid rate '%s' for --rate: "
                               "%s (examples: 10/1s, 100/1m)",
                               quote(v, q), why);
        return 0;
    case OPT_PER_CLIENT:
        a->per_client = true;
        return 0;
    case OPT_FORCE:
        a->force = true;
        return 0;
    case OPT_YES:
        a->yes = true;
        return 0;
    default:
        break;
    }
    if (cr__cli_parse_duration(v, id == OPT_WAIT, &n, why, sizeof(why)) != 0)
        return cr__cli_why(p->err, p->errlen,
                           "invalid duration '%s' for --%s: %s "
                           "(examples: 500ms, 10s, 1m30s)",
                           quote(v, q), d->name, why);
    switch (id) {
    case OPT_TIMEOUT:
    case OPT_COMMAND_TIMEOUT:
    case OPT_LEASE:
    case OPT_WATCHDOG:
        if (n == 0)
            return cr__cli_why(p->err, p->errlen, "--%s must be more than 0",
                               d->name);
        if (id == OPT_TIMEOUT) {
            p->late_timeout = true;
            p->late_timeout_ms = n;
        } else if (id == OPT_COMMAND_TIMEOUT)
            a->command_timeout_ms = n;
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
    case OPT_KEEP_ALIVE:
        if (n == 0)
            return cr__cli_why(p->err, p->errlen, "--%s must be more than 0",
                               d->name);
        a->keep_alive_ms = n;
        return 0;
    default:
        return 0;
    }
}

/* The options that may come before the command word: those of every
 * command, and --pass-credentials, a credential setting (check() refuses
 * it for what runs no command). The others belong to a command. */
#define BEFORE_COMMAND_OPTS (GLOBAL_OPTS | BIT(OPT_PASS_CREDENTIALS))

/* The value getopt_long returns for option d: its letter, or a number past
 * every char for an option with a long name only. */
static int getopt_value(const opt_def *d)
{
    return d->short_name != 0 ? (unsigned char)d->short_name
                              : UCHAR_MAX + 1 + (int)d->id;
}

/* The option getopt_long returned `value` for; NULL when there is none. */
static const opt_def *opt_of_value(int value)
{
    size_t i;

    for (i = 0; i < N_OPTS; i++)
        if (getopt_value(&opt_defs[i]) == value)
            return &opt_defs[i];
    return NULL;
}

/* The option whose long name is the len bytes at name; NULL when none. */
static const opt_def *opt_of_name(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < N_OPTS; i++)
        if (strlen(opt_defs[i].name) == len &&
            memcmp(opt_defs[i].name, name, len) == 0)
            return &opt_defs[i];
    return NULL;
}

/* Where the options parse_options reads stand: before the command word,
 * where only some are accepted, or after it. */
typedef enum stage {
    STAGE_GLOBAL = 0,
    STAGE_COMMAND
} stage;

/* How a run of options ended. */
typedef enum stop {
    STOP_END = 0, /* no word left */
    STOP_WORD,    /* at a word that is not an option */
    STOP_DASHDASH /* at "--", which is passed */
} stop;

/* Tells whether a command to run may follow NAME: always after lock,
 * and after semaphore, barrier and ratelimit until an action word came. */
static bool runs_command(const parser *p)
{
    cr__cli_command c = p->a->command;

    return c == CR__CLI_LOCK ||
           ((c == CR__CLI_SEMAPHORE || c == CR__CLI_RATELIMIT ||
             c == CR__CLI_BARRIER) &&
            !p->action_set);
}

/* Tells whether a word "--" comes anywhere from argv[i] on. */
static bool dashdash_ahead(const parser *p, int i)
{
    for (; i < p->argc; i++)
        if (strcmp(p->argv[i], "--") == 0)
            return true;
    return false;
}

/* Refuses the option word `word` that getopt_long did not know. `letter`
 * is the unknown letter in a word of short options (0 for a long one).
 * After NAME, where a word that is not an option starts the command to
 * run, says where a command that starts with '-' goes, unless a "--"
 * comes further on. Returns -1. */
static int unknown_option(parser *p, stage st, const char *word, int letter,
                          int next)
{
    const cr__cli_args *a = p->a;
    char spelled[MAX_QUOTED + 4], q[MAX_QUOTED + 4], q2[MAX_QUOTED + 4];
    char where[64] = "", in[MAX_QUOTED + 16] = "";
    const char *hint = "";
    bool runs = runs_command(p);

    if (letter != 0) {
        spelled[0] = '-';
        spelled[1] = (char)letter;
        spelled[2] = '\0';
        if (strlen(word) > 2)
            snprintf(in, sizeof(in), " in '%s'", quote(word, q2));
    } else {
        /* The name only, up to '=': the value may be a secret. */
        size_t n = strcspn(word, "=");

        if (n > MAX_QUOTED)
            n = MAX_QUOTED;
        memcpy(spelled, word, n);
        spelled[n] = '\0';
    }
    if (st == STAGE_COMMAND) {
        snprintf(where, sizeof(where), " for %s",
                 cr__cli_command_name(a->command));
        if (runs && a->name != NULL && !dashdash_ahead(p, next))
            hint = " (a command to run that starts with '-' goes after "
                   "'--')";
    }
    return cr__cli_why(p->err, p->errlen, "unknown option '%s'%s%s%s",
                       quote(spelled, q), in, where, hint);
}

/* Refuses option d, which belongs to a command, before the command word.
 * Returns -1. */
static int option_before_command(parser *p, const opt_def *d, bool is_long)
{
    const cr__cli_command_doc *docs;
    char of[160] = "";
    size_t n, k, len = 0, total = 0, seen = 0;

    /* The commands that take it, from the parser's own table. */
    docs = cr__cli_command_docs(&n);
    for (k = 0; k < n; k++)
        total += (own_opts(docs[k].command) & BIT(d->id)) != 0;
    for (k = 0; k < n && len < sizeof(of); k++) {
        if (!(own_opts(docs[k].command) & BIT(d->id)))
            continue;
        seen++;
        len += (size_t)snprintf(of + len, sizeof(of) - len, "%s%s",
                                seen == 1       ? ""
                                : seen == total ? " and "
                                                : ", ",
                                docs[k].name);
    }
    if (is_long)
        return cr__cli_why(p->err, p->errlen,
                           "option --%s comes after the "
                           "command word, not before it (an option of %s)",
                           d->name, of);
    return cr__cli_why(p->err, p->errlen,
                       "option -%c comes after the command "
                       "word, not before it (--%s, an option of %s)",
                       d->short_name, d->name, of);
}

/* Tells whether s can begin the value of the short option d: for -w a
 * duration (a digit, or "forever"), for -E a number. */
static bool looks_like_value(const opt_def *d, const char *s)
{
    return cr__cli_is_digit(*s) ||
           (d->id == OPT_WAIT && strcmp(s, "forever") == 0);
}

/* Reads options with getopt_long from argv[*i] on, until a word that is
 * not an option, a "--" or the end; at STAGE_GLOBAL, refuses those of a
 * command. While a number is due (set/add K), a negative one ends the run
 * as a word. Sets *i to the word it stopped at (the word after "--") and
 * *how to why it stopped. Returns 0, or -1 on a usage error.
 *
 * getopt_long is given argv from the word before argv[*i] on, as if that
 * word were the program's name, with its state reset ("optind = 0"), and
 * an optstring starting with '+': it then stops at the first word that is
 * not an option and never reorders argv, so the command to run stays
 * argv's own tail and --url's value stays in its own word, where the
 * caller hides its password. Its messages are off (opterr and ':'): the
 * reasons are made here. It would take a long option's name by any
 * unambiguous beginning ("--pass" for --pass-credentials); every option is
 * checked against the whole name as spelled. */
static int parse_options(parser *p, int *i, stage st, stop *how)
{
    struct option longopts[N_OPTS + 1];
    char shortopts[3 + 2 * N_OPTS + 1];
    char **sub = p->argv + *i - 1;
    int subc = p->argc - *i + 1, c, before, at, n = 0;
    size_t k;

    shortopts[n++] = '+';
    shortopts[n++] = ':';
    for (k = 0; k < N_OPTS; k++) {
        const opt_def *d = &opt_defs[k];

        longopts[k].name = d->name;
        longopts[k].has_arg = d->has_value ? required_argument : no_argument;
        longopts[k].flag = NULL;
        longopts[k].val = getopt_value(d);
        if (d->short_name != 0) {
            shortopts[n++] = d->short_name;
            if (d->has_value)
                shortopts[n++] = ':';
        }
    }
    memset(&longopts[N_OPTS], 0, sizeof(longopts[N_OPTS]));
    shortopts[n] = '\0';

    optind = 0;
    opterr = 0;
    for (;;) {
        const char *word;
        const opt_def *d;
        bool is_long;

        /* Before its first call getopt_long's optind is 0, for argv[1]. */
        before = optind > 0 ? optind : 1;
        if (p->value_pending && before < subc &&
            is_negative_number(sub[before])) {
            *how = STOP_WORD;
            at = before;
            break;
        }
        c = getopt_long(subc, sub, shortopts, longopts, NULL);
        if (c == -1) {
            /* It stops at a word's start: argv[before] is the word that
             * ended the options, or there was none left. */
            if (optind == before + 1 && strcmp(sub[before], "--") == 0)
                *how = STOP_DASHDASH;
            else
                *how = optind < subc ? STOP_WORD : STOP_END;
            at = optind;
            break;
        }
        /* The word getopt_long has just read from: it moves optind past
         * a word of short options only after its last letter. */
        word = sub[before];
        is_long = word[1] == '-';
        d = c == '?' || c == ':' ? opt_of_value(optopt) : opt_of_value(c);
        if (is_long) {
            size_t len = strcspn(word + 2, "=");
            const opt_def *exact = opt_of_name(word + 2, len);

            if (exact == NULL || exact != d)
                return unknown_option(p, st, word, 0, optind - 1 + *i);
            if (c == '?')
                return cr__cli_why(p->err, p->errlen,
                                   "option --%s takes no value", d->name);
        } else if (c == '?' || d == NULL) {
            return unknown_option(p, st, word, optopt, optind - 1 + *i);
        }
        if (c == ':') {
            if (is_long)
                return cr__cli_why(p->err, p->errlen,
                                   "option --%s needs a value", d->name);
            return cr__cli_why(p->err, p->errlen,
                               "option -%c (--%s) needs a "
                               "value",
                               d->short_name, d->name);
        }
        if (st == STAGE_GLOBAL && !(BIT(d->id) & BEFORE_COMMAND_OPTS))
            return option_before_command(p, d, is_long);
        /* The value of -w or -E attached in its word (-w5, -vw5, -E0)
         * must look like one: "-wv" is not a wait of "v" but a word not
         * understood, as it was before short options could be bundled.
         * -w and -E are the only short options with a value. */
        if (!is_long && d->has_value && optind == before + 1 &&
            !looks_like_value(d, optarg)) {
            char q[MAX_QUOTED + 4];

            if (d->id == OPT_WAIT)
                return cr__cli_why(p->err, p->errlen,
                                   "unknown option '%s' (-%c "
                                   "takes a duration: -%c5, -%c 500ms)",
                                   quote(word, q), d->short_name, d->short_name,
                                   d->short_name);
            return cr__cli_why(p->err, p->errlen,
                               "unknown option '%s' (-%c "
                               "takes a number: -%c0, -%c 3)",
                               quote(word, q), d->short_name, d->short_name,
                               d->short_name);
        }
        if (set_option(p, d, optarg) != 0)
            return -1;
    }
    *i += at - 1;
    return 0;
}

/* ----------------------------------------------------------- positionals */

/* The commands, their forms and what they do: help, the shell completion
 * (through help) and the parser's messages are made from this table.
 * Each form's action words are those of action_defs. */
static const cr__cli_command_doc command_docs[] = {
    {CR__CLI_LOCK, "lock", "NAME [OPTIONS] [--] CMD [ARG...]\nNAME [OPTIONS]",
     "run CMD while holding the lock NAME; without CMD, hold it\n"
     "until a signal or the end of standard input"},
    {CR__CLI_SEMAPHORE, "semaphore",
     "NAME [OPTIONS] [--] CMD [ARG...]\nNAME set K | add K | available",
     "run CMD while holding one permit of NAME; set, add to\n"
     "or print the permits"},
    {CR__CLI_LATCH, "latch",
     "NAME set N | count-down | count\nNAME await [OPTIONS]",
     "set, count down, print or wait for the latch NAME"},
    {CR__CLI_BARRIER, "barrier",
     "NAME --parties N [OPTIONS] [-- CMD [ARG...]]\nNAME reset",
     "wait until N parties arrived, then run CMD"},
    {CR__CLI_RATELIMIT, "ratelimit",
     "NAME [OPTIONS] [--] CMD [ARG...]\n"
     "NAME set-rate R/INTERVAL [OPTIONS]\nNAME available",
     "take one permit of the rate limiter, then run CMD;\n"
     "set its rate, or print the permits left"},
    {CR__CLI_INSPECT, "inspect", "NAME [--json]",
     "show what NAME is and its state"},
    {CR__CLI_UNLOCK, "unlock", "--force NAME [--yes]",
     "release the lock NAME whoever holds it (forceUnlock)"},
    {CR__CLI_DELETE, "delete", "NAME [--yes]",
     "delete the object NAME, whatever it is (delete)"},
    {CR__CLI_NONE, "help", "[COMMAND]", "show help; also COMMAND --help"},
    {CR__CLI_VERSION, "version", "", "show the version"},
};
#define N_COMMANDS (sizeof(command_docs) / sizeof(command_docs[0]))

const cr__cli_command_doc *cr__cli_command_docs(size_t *n)
{
    *n = N_COMMANDS;
    return command_docs;
}

/* Writes command c's forms into buf as "c FORM, or c FORM", for
 * messages. Returns buf. */
static const char *synopsis(cr__cli_command c, char *buf, size_t len)
{
    const char *name = cr__cli_command_name(c), *f = "";
    size_t k, n = 0;

    for (k = 0; k < N_COMMANDS; k++)
        if (command_docs[k].command == c)
            f = command_docs[k].forms;
    buf[0] = '\0';
    while (*f != '\0' && n < len) {
        size_t flen = strcspn(f, "\n");

        n += (size_t)snprintf(buf + n, len - n, "%s%s %.*s",
                              n > 0 ? ", or " : "", name, (int)flen, f);
        f += flen + (f[flen] == '\n');
    }
    return buf;
}

/* Writes the command words into buf as "a, b or c", for messages. */
static const char *command_list(char *buf, size_t len)
{
    size_t k, n = 0, last = 0;

    for (k = 0; k < N_COMMANDS; k++)
        if (command_docs[k].command != CR__CLI_NONE &&
            command_docs[k].command != CR__CLI_VERSION)
            last = k;
    buf[0] = '\0';
    for (k = 0; k < N_COMMANDS && n < len; k++) {
        if (command_docs[k].command == CR__CLI_NONE ||
            command_docs[k].command == CR__CLI_VERSION)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s",
                              n == 0 ? "" : k == last ? " or " : ", ",
                              command_docs[k].name);
    }
    return buf;
}

/* Refuses a missing NAME; `dashdash` when a "--" stood where it should
 * be. Returns -1. */
static int missing_name(parser *p, bool dashdash)
{
    cr__cli_command c = p->a->command;
    char forms[CR__CLI_ERR_MAX];

    return cr__cli_why(p->err, p->errlen, "missing NAME after '%s' (%s%s)",
                       cr__cli_command_name(c),
                       dashdash ? "unexpected '--': " : "",
                       synopsis(c, forms, sizeof(forms)));
}

/* Refuses a "--" where no command to run can follow. Returns -1. */
static int unexpected_dashdash(parser *p)
{
    return cr__cli_why(
        p->err, p->errlen,
        "unexpected '--': only 'lock NAME', "
        "'semaphore NAME', 'barrier NAME' and 'ratelimit NAME' run a "
        "command");
}

/* The word for an action in "does not apply to ..." messages: "'latch
 * count'", "'lock NAME' without a command", "unlock". */
static const char *applies_to(const cr__cli_args *a, char *buf, size_t len)
{
    const char *c = cr__cli_command_name(a->command);

    switch (a->action) {
    case CR__CLI_SHOW: case CR__CLI_FORCE_UNLOCK: case CR__CLI_DELETE_OBJECT:
        snprintf(buf, len, "%s", c);
        break;
    case CR__CLI_LOCK_HOLD:
        snprintf(buf, len, "'%s NAME' without a command", c);
        break;
    default:
        snprintf(buf, len, "'%s %s'", c, action_word(a->action));
        break;
    }
    return buf;
}

/* Takes the rest of argv, from index i, as the command to run. */
static int take_command(parser *p, int i)
{
    if (i >= p->argc)
        return cr__cli_why(p->err, p->errlen,
                           "missing the command to run after "
                           "'--'");
    p->a->action = CR__CLI_RUN;
    p->action_set = true;
    p->a->cmd = &p->argv[i];
    p->a->cmd_argc = p->argc - i;
    return 0;
}

/* Handles the word argv[*i] after NAME, which is not an option, and
 * advances *i past it. Returns 0, -1 on a usage error, or 1 when the word
 * is the first of the command to run (then *i is left on it). A word of
 * semaphore, barrier or ratelimit that is no action but a slip of one is
 * refused, not run: a command of that name goes after "--". */
static int parse_positional(parser *p, int *i)
{
    cr__cli_args *a = p->a;
    const char *w = p->argv[*i];
    char why[CR__CLI_ERR_MAX], q[MAX_QUOTED + 4], list[96];
    const action_def *near;
    size_t k;
    int64_t n;

    if (p->value_pending) {
        int64_t min = a->action == CR__CLI_SEM_ADD     ? -CR__CLI_COUNT_MAX
                      : a->action == CR__CLI_LATCH_SET ? 1
                                                       : 0;

        if (a->action == CR__CLI_RL_SET_RATE) {
            if (cr__cli_parse_rate(w, &a->rate, &a->rate_interval_ms, why,
                                   sizeof(why)) != 0)
                return cr__cli_why(p->err, p->errlen,
                                   "invalid rate '%s' for "
                                   "set-rate: %s (examples: 10/1s, 100/1m)",
                                   quote(w, q), why);
        } else if (cr__cli_parse_count(w, min, CR__CLI_COUNT_MAX, &n, why,
                                       sizeof(why)) != 0) {
            return cr__cli_why(p->err, p->errlen,
                               "invalid number '%s' for %s: %s", quote(w, q),
                               action_word(a->action), why);
        } else {
            a->value = n;
        }
        p->value_pending = false;
        (*i)++;
        return 0;
    }
    if (a->command == CR__CLI_LOCK)
        return 1; /* the command to run starts here */
    if (p->action_set || a->command == CR__CLI_INSPECT ||
        a->command == CR__CLI_UNLOCK || a->command == CR__CLI_DELETE)
        return cr__cli_why(p->err, p->errlen, "unexpected argument '%s'",
                           quote(w, q));
    for (k = 0; k < N_ACTIONS; k++) {
        const action_def *d = &action_defs[k];

        if (d->command == a->command && strcmp(w, d->word) == 0) {
            p->action_set = true;
            a->action = d->action;
            p->value_pending = d->value != 0;
            (*i)++;
            return 0;
        }
    }
    action_list(a->command, list, sizeof(list));
    if (a->command == CR__CLI_LATCH)
        return cr__cli_why(p->err, p->errlen,
                           "unknown latch action '%s' (use %s)", quote(w, q),
                           list);
    near = near_action(a->command, w);
    if (near != NULL)
        return cr__cli_why(
            p->err, p->errlen,
            "'%s' is not an action of %s (%s); "
            "did you mean '%s'? A command of that name goes after "
            "'--'",
            quote(w, q), cr__cli_command_name(a->command), list, near->word);
    return 1; /* the command to run starts here */
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
        return cr__cli_why(p->err, p->errlen,
                           "--kill-after must be shorter than "
                           "the lease (%s%lldms)",
                           a->lease_ms > 0 ? "--lease " : "the watchdog's ",
                           (long long)lease);
    if (a->lease_ms <= 0 && a->kill_after_ms >= lease - lease / 3)
        return cr__cli_why(
            p->err, p->errlen,
            "--kill-after must be shorter than "
            "two thirds of the watchdog's lease (%lldms), which is "
            "renewed every third of it",
            (long long)lease);
    return 0;
}

/* Checks what the whole command line says once it is read. Returns 0 or
 * -1 with the reason. */
static int check(parser *p)
{
    cr__cli_args *a = p->a;
    char list[96], what[64];
    uint64_t extra, kinds;
    size_t k;

    if (p->given & BIT(OPT_VERSION)) {
        a->command = CR__CLI_VERSION;
        return 0;
    }
    if (a->help)
        return 0;
    if (a->command == CR__CLI_NONE)
        return cr__cli_why(p->err, p->errlen,
                           "missing command (%s; try --help)",
                           command_list(list, sizeof(list)));
    if (a->command == CR__CLI_VERSION)
        return 0;
    if (a->name == NULL)
        return missing_name(p, false);
    action_list(a->command, list, sizeof(list));
    if (a->command == CR__CLI_LOCK && a->cmd == NULL)
        a->action = CR__CLI_LOCK_HOLD; /* hold until told, as etcdctl */
    if ((a->command == CR__CLI_SEMAPHORE || a->command == CR__CLI_RATELIMIT) &&
        !p->action_set && a->cmd == NULL)
        return cr__cli_why(p->err, p->errlen,
                           "missing the command to run (after "
                           "--), or %s",
                           list);
    if (a->command == CR__CLI_BARRIER && !p->action_set && a->cmd == NULL)
        a->action = CR__CLI_BARRIER_AWAIT;
    if (a->command == CR__CLI_LATCH && !p->action_set)
        return cr__cli_why(p->err, p->errlen, "missing the latch action: %s",
                           list);
    if (a->command == CR__CLI_UNLOCK)
        a->action = CR__CLI_FORCE_UNLOCK;
    if (a->command == CR__CLI_DELETE)
        a->action = CR__CLI_DELETE_OBJECT;
    if (p->value_pending)
        return cr__cli_why(p->err, p->errlen, "missing the %s after '%s'",
                           a->action == CR__CLI_RL_SET_RATE ? "rate R/INTERVAL"
                                                            : "number",
                           action_word(a->action));
    extra = p->given & ~(GLOBAL_OPTS | allowed_opts(a));
    for (k = 0; k < sizeof(opt_defs) / sizeof(opt_defs[0]); k++)
        if (extra & BIT(opt_defs[k].id))
            return cr__cli_why(
                p->err, p->errlen, "option --%s does not apply to %s",
                opt_defs[k].name, applies_to(a, what, sizeof(what)));
    if (a->command == CR__CLI_UNLOCK && !a->force)
        return cr__cli_why(
            p->err, p->errlen,
            "unlock takes --force: a lock is "
            "released by its holder, so 'unlock' only breaks one "
            "held by another (Redisson's forceUnlock)");
    if (p->late_timeout) {
        /* After the command word --timeout could mean the Redis timeout
         * (its old meaning there) or the wait: where something waits it
         * is refused, elsewhere it keeps its old meaning. */
        if (a->action == CR__CLI_RUN || a->action == CR__CLI_LATCH_AWAIT ||
            a->action == CR__CLI_LOCK_HOLD)
            return cr__cli_why(
                p->err, p->errlen,
                "--timeout after the command "
                "word is ambiguous here: use --wait D for how long "
                "to wait, --command-timeout D for Redis's timeout");
        a->command_timeout_ms = p->late_timeout_ms;
    }
    if ((p->given & BIT(OPT_NONBLOCK)) && (p->given & BIT(OPT_WAIT)))
        return cr__cli_why(p->err, p->errlen,
                           "-n (--nonblock) and --wait exclude "
                           "each other");
    if (a->command == CR__CLI_BARRIER && a->parties < 0 &&
        a->action != CR__CLI_BARRIER_RESET)
        return cr__cli_why(p->err, p->errlen,
                           "missing --parties N for barrier");
    if ((p->given & (BIT(OPT_PER_CLIENT) | BIT(OPT_KEEP_ALIVE))) &&
        a->rate < 0)
        return cr__cli_why(p->err, p->errlen,
                           "--per-client and --keep-alive set "
                           "a rate: give it with --rate R/INTERVAL");
    /* A rate set for Java's long-lived clients may do without; one this
     * run would use may not. */
    if (a->per_client && a->keep_alive_ms < 0 && a->action == CR__CLI_RUN)
        return cr__cli_why(p->err, p->errlen,
                           "--per-client needs --keep-alive D: "
                           "each run is a new client, which would get a fresh "
                           "budget and leave its keys behind for good");
    if (a->keep_alive_ms >= 0 && a->keep_alive_ms < a->rate_interval_ms)
        return cr__cli_why(p->err, p->errlen,
                           "--keep-alive must be at least the "
                           "rate's interval");
    kinds = p->given & KIND_OPTS;
    if ((kinds & (kinds - 1)) != 0)
        return cr__cli_why(p->err, p->errlen,
                           "--fair, --fenced, --read and "
                           "--write exclude each other");
    if (a->action == CR__CLI_RUN &&
        (a->command == CR__CLI_LOCK || a->command == CR__CLI_SEMAPHORE))
        return settle_kill_after(p);
    return 0;
}

/* The words after NAME (after the command word for version): options,
 * the action and its number, and the command to run, which starts at
 * "--" or at the first word of lock or semaphore that is not an option.
 * Returns 0 or -1. */
static int parse_after_name(parser *p, int i)
{
    cr__cli_args *a = p->a;
    stop how;
    int rc;

    for (;;) {
        if (parse_options(p, &i, STAGE_COMMAND, &how) != 0)
            return -1;
        if (how == STOP_END)
            return 0;
        if (how == STOP_DASHDASH) {
            if (!runs_command(p))
                return unexpected_dashdash(p);
            return take_command(p, i);
        }
        if (a->command == CR__CLI_VERSION) {
            char q[MAX_QUOTED + 4];

            return cr__cli_why(p->err, p->errlen, "unexpected argument '%s'",
                               quote(p->argv[i], q));
        }
        rc = parse_positional(p, &i);
        if (rc < 0)
            return -1;
        if (rc == 1)
            return take_command(p, i);
    }
}

/* The command line is read in stages: options of every command, up to
 * the command word ("help" may come first); the command word; options,
 * up to NAME; then options, the action and its number, up to the command
 * to run. Each run of options is parse_options()'s. */
int cr__cli_parse_args(int argc, char **argv, cr__cli_args *out, char *err,
                       size_t errlen)
{
    char q[MAX_QUOTED + 4], list[96];
    parser p;
    stop how;
    int i = 1;

    memset(out, 0, sizeof(*out));
    out->command_timeout_ms = -1;
    out->conflict_exit_code = -1;
    out->wait_ms = CR__CLI_FOREVER;
    out->lease_ms = -1;
    out->watchdog_ms = -1;
    out->kill_after_ms = -1;
    out->permits = -1;
    out->parties = -1;
    out->rate = -1;
    out->keep_alive_ms = -1;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    memset(&p, 0, sizeof(p));
    p.argc = argc;
    p.argv = argv;
    p.a = out;
    p.err = err;
    p.errlen = errlen;

    /* 1. Options before the command word, and "help" once. */
    for (;;) {
        if (parse_options(&p, &i, STAGE_GLOBAL, &how) != 0)
            return -1;
        if (how == STOP_DASHDASH)
            return unexpected_dashdash(&p);
        if (how == STOP_END)
            return check(&p);
        if (strcmp(argv[i], "help") != 0 || p.help_word)
            break;
        p.help_word = true;
        out->help = true;
        i++;
    }

    /* 2. The command word. */
    out->command = command_of(argv[i]);
    if (out->command == CR__CLI_NONE)
        return cr__cli_why(err, errlen, "unknown command '%s' (use %s)",
                           quote(argv[i], q), command_list(list, sizeof(list)));
    if (out->command == CR__CLI_INSPECT)
        out->action = CR__CLI_SHOW;
    i++;

    /* 3. Options up to NAME, and NAME. */
    if (out->command != CR__CLI_VERSION) {
        if (parse_options(&p, &i, STAGE_COMMAND, &how) != 0)
            return -1;
        if (how == STOP_DASHDASH)
            return missing_name(&p, true);
        if (how == STOP_END)
            return check(&p);
        if (argv[i][0] == '\0')
            return cr__cli_why(err, errlen, "NAME is empty");
        out->name = argv[i++];
    }

    /* 4. Options, the action, the command to run. */
    if (parse_after_name(&p, i) != 0)
        return -1;
    return check(&p);
}
