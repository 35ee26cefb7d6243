/* SPDX-License-Identifier: MIT */
/*
 * The credisson tool's connection (conn.h): the settings of every
 * connection (URL, TLS, credentials: options first, then the environment;
 * a password in --url is blotted out of argv once read), the client made
 * from them, and the variables a command run gets.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "run.h"
#include "util.h"

/* The longest password read from a file. */
#define PASSWORD_MAX 1024

/* ---------------------------------------------------- connection settings */

/* The value of the environment variable `name`, or NULL when it is unset
 * or empty (an empty variable is as good as unset). */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && *v != '\0' ? v : NULL;
}

void cr__cli_hide_url_password(char *url)
{
    size_t off, len;

    if (cr__cli_url_password(url, &off, &len))
        memset(url + off, '*', len);
}

/* Reads the first line of the password file `path` (given with option
 * `opt`) into *out, a new string, wiped when freed. Warns when the file
 * can be read by its group or by others. Returns 0 or an exit code. */
static int read_password_file(cr__cli *cli, const char *opt,
                              const char *path, char **out)
{
    char buf[PASSWORD_MAX + 2], shown[128];
    struct stat st;
    size_t n = 0, line;
    ssize_t got;
    int fd, e;

    cr__cli_printable(path, shown, sizeof(shown));
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        cr__cli_error(cli, "cannot read the %s '%s': %s", opt, shown,
                      strerror(errno));
        return CR__CLI_EXIT_CONFIG;
    }
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (st.st_mode & (S_IRGRP | S_IROTH)) != 0)
        cr__cli_error(cli, "warning: the %s '%s' can be read by others "
                      "(chmod 600 it)", opt, shown);
    while (n < sizeof(buf) - 1 &&
           (got = read(fd, buf + n, sizeof(buf) - 1 - n)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            e = errno;
            close(fd);
            explicit_bzero(buf, sizeof(buf));
            cr__cli_error(cli, "cannot read the %s '%s': %s", opt, shown,
                          strerror(e));
            return CR__CLI_EXIT_CONFIG;
        }
        n += (size_t)got;
        if (memchr(buf, '\n', n) != NULL)
            break;
    }
    close(fd);
    buf[n] = '\0';
    line = strcspn(buf, "\n");
    if (line > 0 && buf[line - 1] == '\r')
        line--;
    if (line > PASSWORD_MAX || line == 0) {
        explicit_bzero(buf, sizeof(buf));
        cr__cli_error(cli, "the %s '%s' %s", opt, shown,
                      line == 0 ? "has an empty first line"
                                : "has a first line over 1024 bytes");
        return CR__CLI_EXIT_CONFIG;
    }
    *out = strndup(buf, line);
    explicit_bzero(buf, sizeof(buf));
    if (*out == NULL) {
        cr__cli_error(cli, "out of memory");
        return CR__CLI_EXIT_OSERR;
    }
    return 0;
}

/* Takes the secret in the variable `name` into *out, a new string wiped
 * when freed (left NULL when the variable is unset or empty), and blots
 * it out of this process's environment, which `ps e` and /proc/PID/environ
 * show for the whole run: its value is overwritten in place (unsetenv
 * alone would leave those bytes where they are), then the variable is
 * unset. Returns 0 or an exit code. */
static int take_secret(cr__cli *cli, const char *name, char **out)
{
    char *v = getenv(name);

    if (v == NULL || *v == '\0')
        return 0;
    *out = strdup(v);
    memset(v, '*', strlen(v));
    unsetenv(name);
    if (*out == NULL) {
        cr__cli_error(cli, "out of memory");
        return CR__CLI_EXIT_OSERR;
    }
    return 0;
}

/* Frees a password read from a file, wiping it first. */
static void free_password(char *p)
{
    if (p != NULL) {
        explicit_bzero(p, strlen(p));
        free(p);
    }
}

/* Decides which URL to use and how to show it: --url (given here as the
 * copy made before argv was blotted), else $CREDISSON_URL, else the local
 * server; with --tls, its TLS form. The URL is checked by the library
 * when the client is made. Returns 0 or an exit code. */
static int settle_url(cr__cli *cli, const char *url)
{
    const char *where = url != NULL ? "" : " in CREDISSON_URL";
    char shown[sizeof(cli->url_shown)];

    if (url != NULL && *url == '\0') {
        /* Most likely --url "$VAR" with VAR unset: not a quiet localhost. */
        cr__cli_error(cli, "invalid URL: --url is empty");
        return CR__CLI_EXIT_USAGE;
    }
    if (url == NULL)
        url = cli->owned[2]; /* $CREDISSON_URL's copy */
    cli->url_from_env = url != NULL && where[0] != '\0';
    if (cli->args->tls) {
        const char *plain = url != NULL ? url : "redis://127.0.0.1:6379";
        size_t len = strlen(plain) + 2;

        if (strncasecmp(plain, "unix://", 7) == 0) {
            cr__cli_error(cli, "--tls: the URL%s is a unix:// socket, which "
                          "has no TLS form", where);
            return CR__CLI_EXIT_USAGE;
        }
        cli->owned[1] = malloc(len);
        if (cli->owned[1] == NULL) {
            cr__cli_error(cli, "out of memory");
            return CR__CLI_EXIT_OSERR;
        }
        if (cr__cli_tls_url(plain, cli->owned[1], len) != 0) {
            cr__cli_error(cli, "--tls: the URL%s has no TLS form", where);
            return CR__CLI_EXIT_USAGE;
        }
        url = cli->owned[1];
    }
    cli->url = url;
    cli->conn.url = url;
    cr__cli_url_redacted(url != NULL ? url : "redis://127.0.0.1:6379", shown,
                         sizeof(shown));
    cr__cli_printable(shown, cli->url_shown, sizeof(cli->url_shown));
    return 0;
}

/* Whether the URL in use is one of the TLS forms. */
static bool url_is_tls(const cr__cli *cli)
{
    return cli->url != NULL && strncasecmp(cli->url, "rediss", 6) == 0;
}

/* Settles the TLS settings: each option, else its variable. Options for
 * a connection without TLS are a usage error (variables are then left
 * alone, as redis-cli's are). Returns 0 or an exit code. */
static int settle_tls(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    const char *insecure = env_value("CREDISSON_INSECURE");
    const char *given = a->cacert != NULL      ? "--cacert"
                        : a->cacertdir != NULL ? "--cacertdir"
                        : a->cert != NULL      ? "--cert"
                        : a->key != NULL       ? "--key"
                        : a->sni != NULL       ? "--sni"
                        : a->insecure          ? "--insecure"
                                               : NULL;
    cr_client_options *o = &cli->conn;

    if (!url_is_tls(cli)) {
        if (given == NULL)
            return 0;
        cr__cli_error(cli, "%s applies to TLS only: add --tls, or use a "
                      "rediss:// URL", given);
        return CR__CLI_EXIT_USAGE;
    }
    o->tls_ca_file = a->cacert != NULL ? a->cacert
                                       : env_value("CREDISSON_CACERT");
    o->tls_ca_dir = a->cacertdir != NULL ? a->cacertdir
                                         : env_value("CREDISSON_CACERTDIR");
    o->tls_cert_file = a->cert != NULL ? a->cert : env_value("CREDISSON_CERT");
    o->tls_key_file = a->key != NULL ? a->key : env_value("CREDISSON_KEY");
    o->tls_server_name = a->sni != NULL ? a->sni : env_value("CREDISSON_SNI");
    o->tls_insecure = a->insecure ||
                      (insecure != NULL && strcmp(insecure, "0") != 0);
    if (o->tls_insecure)
        cr__cli_error(cli, "warning: --insecure: the server's certificate "
                      "is not verified; anyone on the way can read and "
                      "change the traffic");
    return 0;
}

/* Settles the credentials: each option (passwords from files), else its
 * variable; and the connections' name. Returns 0 or an exit code. */
static int settle_credentials(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    cr_client_options *o = &cli->conn;
    int code;

    o->username = a->user != NULL ? a->user : env_value("CREDISSON_USER");
    o->sentinel_username = a->sentinel_user != NULL
                               ? a->sentinel_user
                               : env_value("CREDISSON_SENTINEL_USER");
    /* The variables' secrets leave the environment whether used or not. */
    code = take_secret(cli, "CREDISSON_PASSWORD", &cli->password);
    if (code == 0)
        code = take_secret(cli, "CREDISSON_SENTINEL_PASSWORD",
                           &cli->sentinel_password);
    if (code == 0 && a->password_file != NULL) {
        free_password(cli->password);
        cli->password = NULL;
        code = read_password_file(cli, "--password-file", a->password_file,
                                  &cli->password);
    }
    if (code == 0 && a->sentinel_password_file != NULL) {
        free_password(cli->sentinel_password);
        cli->sentinel_password = NULL;
        code = read_password_file(cli, "--sentinel-password-file",
                                  a->sentinel_password_file,
                                  &cli->sentinel_password);
    }
    if (code != 0)
        return code;
    o->password = cli->password;
    o->sentinel_password = cli->sentinel_password;
    o->client_name = a->client_name;
    return 0;
}

int cr__cli_settle_connection(cr__cli *cli, const char *url)
{
    const cr__cli_args *a = cli->args;
    char *env_url = getenv("CREDISSON_URL");
    size_t off, len, n = 0;
    int64_t cmd_ms, wait_ms;
    int code;

    /* $CREDISSON_URL is copied, and its password blotted out of the
     * environment as --url's is out of argv (it stays set, starred, so
     * that the command run is still kept from it below). */
    if (env_url != NULL && *env_url != '\0') {
        cli->owned[2] = strdup(env_url);
        if (cli->owned[2] == NULL) {
            cr__cli_error(cli, "out of memory");
            return CR__CLI_EXIT_OSERR;
        }
        cr__cli_hide_url_password(env_url);
    }
    code = settle_url(cli, url);
    if (code == 0)
        code = settle_tls(cli);
    if (code == 0)
        code = settle_credentials(cli);
    if (code != 0)
        return code;
    cmd_ms = a->command_timeout_ms > 0 ? a->command_timeout_ms
                                       : CR__CLI_DEFAULT_COMMAND_TIMEOUT_MS;
    cli->conn.connect_timeout_ms = cmd_ms;
    cli->conn.command_timeout_ms = cmd_ms;
    /* The run's bound: its wait (0 for a command that does not wait)
     * and one command timeout from its start, connecting included. */
    wait_ms = cr__cli_action_waits(a) ? a->wait_ms : 0;
    cli->deadline_ms = wait_ms < 0 ? -1 : cli->started_ms + wait_ms + cmd_ms;
    if (a->watchdog_ms > 0)
        cli->conn.lock_watchdog_timeout_ms = a->watchdog_ms;
    cli->conn.name_prefix = a->name_prefix;
    cli->conn.redisson_version = a->redisson_version;
    /* Commands run once: one connection for calls, besides the watchdog's
     * and the subscriber's. */
    cli->conn.pool_size = 1;
    cli->env_drop[n++] = "CREDISSON_PASSWORD";
    cli->env_drop[n++] = "CREDISSON_SENTINEL_PASSWORD";
    if (env_url != NULL && cr__cli_url_password(env_url, &off, &len))
        cli->env_drop[n++] = "CREDISSON_URL";
    cli->env_drop[n] = NULL;
    return 0;
}

/* What connecting takes and gives, for the waiting thread. */
typedef struct connect_job {
    cr_client_options o;
    cr_client *client;
} connect_job;

/* The waiting thread's call: make the client. */
static cr_status connect_call(void *ctx)
{
    connect_job *j = ctx;

    return cr_client_new(&j->o, &j->client);
}

/* Frees a client made after the wait for it was ended by a signal. */
static void connect_undo(void *ctx)
{
    connect_job *j = ctx;

    cr_client_free_within(j->client, 0);
    j->client = NULL;
}

/* A hint for a failure to connect, from its status and detail: a plain
 * connection the server dropped at once may have met a TLS port (unless
 * the library's detail says so already: one hint is enough); a server
 * wanting a password may have been given none, and one asking for a
 * client certificate (TLS 1.3's "certificate required", or 1.2's
 * handshake failure) none either. "" when none fits. */
static const char *connect_hint(const cr__cli *cli, cr_status rc,
                                const char *detail)
{
    size_t off, len;

    if ((rc == CR_EIO || rc == CR_ECONFIG) && !url_is_tls(cli) &&
        strstr(detail, "TLS") == NULL &&
        (strstr(detail, "reset") != NULL ||
         strstr(detail, "closed the connection") != NULL ||
         strstr(detail, "not the Redis") != NULL))
        return "; if that port speaks TLS, add --tls or use rediss://";
    if (rc == CR_ETLS && cli->conn.tls_cert_file == NULL &&
        (strstr(detail, "certificate required") != NULL ||
         strstr(detail, "alert handshake failure") != NULL))
        return "; the server may want a client certificate: give it with "
               "--cert F and --key F (or CREDISSON_CERT and CREDISSON_KEY)";
    if (rc == CR_EAUTH && cli->conn.password == NULL &&
        (cli->url == NULL || !cr__cli_url_password(cli->url, &off, &len)))
        return "; give the password with --password-file or "
               "CREDISSON_PASSWORD";
    return "";
}

int cr__cli_connect(cr__cli *cli)
{
    /* Static: a thread left connecting after a signal may still write to
     * it while the process ends. */
    static connect_job job;
    char why[384];
    cr_status rc;
    int sig;

    job.o = cli->conn;
    job.client = NULL;
    /* Connecting counts against the run's bound, which every call made
     * until something is obtained keeps too. */
    if (cli->deadline_ms >= 0) {
        int64_t left = cli->deadline_ms - cr__cli_now_ms();

        job.o.setup_timeout_ms = left > 1 ? left : 1;
    }
    if (cli->sigfd >= 0) {
        sig = cr__cli_wait(cli, connect_call, connect_undo, &job, NULL, &rc);
        if (sig != 0)
            return 128 + sig;
    } else {
        rc = connect_call(&job);
    }
    if (rc == CR_OK) {
        cli->client = job.client;
        if (cli->deadline_ms >= 0)
            cr_client_set_deadline(cli->client, cli->deadline_ms);
        return 0;
    }
    cr__cli_describe(cli, rc, why, sizeof(why));
    /* The library checks the settings, the URL first: its reason never
     * holds the password. */
    if (rc == CR_EINVAL)
        cr__cli_error(cli, "cannot use these settings: %s%s", why,
                      cli->url_from_env ? " (the URL is CREDISSON_URL's)"
                                        : "");
    else if (rc == CR_ENOMEM)
        cr__cli_error(cli, "cannot create the client: %s", why);
    else
        cr__cli_error(cli, "cannot use Redis at %s: %s%s", cli->url_shown,
                      why, connect_hint(cli, rc, why));
    return cr__cli_exit_code(rc);
}

/* ----------------------------------------------------- the command's env */

bool cr__cli_env_add(char **env, size_t max, const char *var,
                     const char *value)
{
    size_t n = 0;
    char *s;

    while (env[n] != NULL)
        n++;
    if (n + 1 >= max)
        return false;
    s = malloc(strlen(var) + strlen(value) + 2);
    if (s == NULL)
        return false;
    sprintf(s, "%s=%s", var, value);
    env[n] = s;
    return true;
}

/* Adds "NAME=VALUE" when value is not NULL. Returns false when out of
 * memory. */
static bool env_add_set(char **env, size_t max, const char *var,
                        const char *value)
{
    return value == NULL || cr__cli_env_add(env, max, var, value);
}

void cr__cli_env_free(char **env)
{
    size_t n;

    for (n = 0; env[n] != NULL; n++) {
        explicit_bzero(env[n], strlen(env[n]));
        free(env[n]);
    }
}

bool cr__cli_env_add_credentials(cr__cli *cli, char **env, size_t max)
{
    const cr_client_options *o = &cli->conn;

    if (!cli->args->pass_credentials)
        return true;
    return env_add_set(env, max, "CREDISSON_URL", cli->url) &&
           env_add_set(env, max, "CREDISSON_USER", o->username) &&
           env_add_set(env, max, "CREDISSON_PASSWORD", o->password) &&
           env_add_set(env, max, "CREDISSON_SENTINEL_USER",
                       o->sentinel_username) &&
           env_add_set(env, max, "CREDISSON_SENTINEL_PASSWORD",
                       o->sentinel_password) &&
           env_add_set(env, max, "CREDISSON_CACERT", o->tls_ca_file) &&
           env_add_set(env, max, "CREDISSON_CACERTDIR", o->tls_ca_dir) &&
           env_add_set(env, max, "CREDISSON_CERT", o->tls_cert_file) &&
           env_add_set(env, max, "CREDISSON_KEY", o->tls_key_file) &&
           env_add_set(env, max, "CREDISSON_SNI", o->tls_server_name) &&
           env_add_set(env, max, "CREDISSON_INSECURE",
                       o->tls_insecure ? "1" : NULL);
}

void cr__cli_free_settings(cr__cli *cli)
{
    size_t i;

    free_password(cli->password);
    free_password(cli->sentinel_password);
    for (i = 0; i < sizeof(cli->owned) / sizeof(cli->owned[0]); i++) {
        if (cli->owned[i] != NULL)
            explicit_bzero(cli->owned[i], strlen(cli->owned[i]));
        free(cli->owned[i]);
    }
}
