/* SPDX-License-Identifier: MIT */
/*
 * What the credisson tool's commands share around obtaining something
 * (obtain.h): the status line of a wait, the message when it was not
 * obtained, counts printed as text or JSON, and a command run while
 * nothing is held.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "inspect.h"
#include "obtain.h"
#include "run.h"
#include "util.h"

void cr__cli_wait_status(cr__cli *cli, cr_client *client, void *ctx,
                         int64_t waited_ms, char *buf, size_t len)
{
    cr__cli_command c = cli->args->command;
    const char *what = c == CR__CLI_SEMAPHORE   ? "a permit of semaphore"
                       : c == CR__CLI_LATCH     ? "latch"
                       : c == CR__CLI_BARRIER   ? "the parties of barrier"
                       : c == CR__CLI_RATELIMIT ? "a permit of rate limiter"
                                                : "lock";
    char state[384], waited[32];

    (void)ctx;
    cr__cli_summary(cli, client, state, sizeof(state));
    snprintf(buf, len, "waiting %s for %s '%s'%s%s",
             cr__cli_fmt_ms(waited_ms, waited, sizeof(waited)), what,
             cli->name_shown, state[0] != '\0' ? ": " : "", state);
}

int cr__cli_not_obtained(cr__cli *cli, const char *what, cr_status rc)
{
    const cr__cli_args *a = cli->args;
    int busy = a->conflict_exit_code >= 0 ? a->conflict_exit_code
                                          : CR__CLI_EXIT_BUSY;
    char waited[32], state[384] = "";

    if ((rc == CR_BUSY || rc == CR_TIMEOUT) && a->quiet)
        return busy;
    if (rc != CR_BUSY && rc != CR_TIMEOUT)
        return cr__cli_fail_on(cli, rc, what);
    /* Who holds it, and since when as this process saw: the reading of
     * the wait's start is over (joined), and one more is taken now. */
    cr__cli_status_end(cli);
    if (cli->client != NULL)
        cr__cli_summary(cli, cli->client, state, sizeof(state));
    if (state[0] == '(')
        state[0] = '\0'; /* cannot read it: the message goes without */
    if (rc == CR_BUSY && a->wait_ms == 0)
        cr__cli_error(cli, "%s '%s': busy%s%s", what, cli->name_shown,
                      state[0] != '\0' ? ", " : "", state);
    else
        cr__cli_error(cli, "%s '%s': gave up after %s%s%s", what,
                      cli->name_shown,
                      cr__cli_fmt_ms(a->wait_ms, waited, sizeof(waited)),
                      state[0] != '\0' ? ": " : "", state);
    return busy;
}

int cr__cli_fail_on(cr__cli *cli, cr_status rc, const char *what)
{
    cr_object_info *in = NULL;
    const char *wanted = "";
    char kind[64], why[384];
    bool fits = true;

    /* A script or a command that failed on what NAME holds: say what it
     * holds rather than the script's error. */
    cr__cli_describe(cli, rc, why, sizeof(why));
    if ((rc == CR_ESERVER || rc == CR_ESCRIPT) && cli->client != NULL &&
        cr_object_inspect(cli->client, cli->args->name, &in) == CR_OK)
        fits = cr__cli_fits(cli, in, &wanted);
    if (!fits)
        cr__cli_error(cli, "'%s' holds %s, not %s", cli->name_shown,
                      cr__cli_kind_phrase(in, kind, sizeof(kind)), wanted);
    else
        cr__cli_error(cli, "%s '%s': %s", what, cli->name_shown, why);
    cr_object_info_free(in);
    return cr__cli_exit_code(rc);
}

void cr__cli_print_count(cr__cli *cli, const char *key, int64_t n)
{
    if (!cli->args->json) {
        printf("%lld\n", (long long)n);
        return;
    }
    fputs("{\"name\":", stdout);
    cr__cli_json_str(stdout, cli->args->name, strlen(cli->args->name));
    printf(",\"%s\":%lld}\n", key, (long long)n);
}

/* The "hold" of a command run after a barrier or a rate limiter let it
 * go: there is nothing to keep or give back, so nothing stops CMD. */
static cr_status nothing_state(void *ctx, int64_t *deadline_ms)
{
    (void)ctx;
    (void)deadline_ms;
    return CR_OK;
}

/* Gives nothing back: CR_OK. */
static cr_status nothing_release(void *ctx)
{
    (void)ctx;
    return CR_OK;
}

int cr__cli_run_free(cr__cli *cli, const char *what,
                     const char *const *vars)
{
    char *env[CR__CLI_ENV_MAX];
    cr__cli_hold hold;
    bool ok = true;
    int code;

    memset(env, 0, sizeof(env));
    for (; ok && vars[0] != NULL; vars += 2)
        ok = cr__cli_env_add(env, CR__CLI_ENV_MAX, vars[0], vars[1]);
    if (!ok || !cr__cli_env_add_credentials(cli, env, CR__CLI_ENV_MAX)) {
        cr__cli_env_free(env);
        cr__cli_error(cli, "out of memory");
        return CR__CLI_EXIT_OSERR;
    }
    hold.what = what;
    hold.leased = false;
    hold.state = nothing_state;
    hold.check_ms = INT32_MAX;
    hold.release = nothing_release;
    hold.ctx = NULL;
    code = cr__cli_run(cli, env, &hold);
    cr__cli_env_free(env);
    return code;
}
