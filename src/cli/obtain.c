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
    char waited[32];

    if ((rc == CR_BUSY || rc == CR_TIMEOUT) && a->quiet)
        return busy;
    if (rc == CR_BUSY && cli->args->wait_ms == 0)
        cr__cli_error(cli, "%s '%s': busy", what, cli->name_shown);
    else if (rc == CR_BUSY || rc == CR_TIMEOUT)
        cr__cli_error(cli, "%s '%s': gave up after %s", what,
                      cli->name_shown,
                      cr__cli_fmt_ms(cli->args->wait_ms, waited,
                                     sizeof(waited)));
    else
        return cr__cli_fail(cli, rc, "%s '%s'", what, cli->name_shown);
    return busy;
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
