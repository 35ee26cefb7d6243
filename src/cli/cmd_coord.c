/* SPDX-License-Identifier: MIT */
/*
 * `credisson latch`, `barrier` and `ratelimit` (cmd_coord.h): the
 * coordination objects whose wait holds nothing afterwards.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cmd_coord.h"
#include "obtain.h"
#include "run.h"
#include "util.h"

/* A latch being awaited. */
typedef struct latch_job {
    cr__cli *cli;
    cr_latch *latch;
} latch_job;

/* The waiting thread's call for latch await: with --must-exist, a latch
 * never set is waited for as a closed one. */
static cr_status latch_await(void *ctx)
{
    latch_job *j = ctx;

    if (j->cli->args->must_exist)
        return cr_latch_await_opened(j->latch, j->cli->args->wait_ms);
    return cr_latch_await(j->latch, j->cli->args->wait_ms);
}

int cr__cli_cmd_latch(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    latch_job j;
    int64_t n = 0;
    bool set = false;
    cr_status rc;
    int code = 0, sig;

    j.cli = cli;
    rc = cr_latch_new(cli->client, a->name, &j.latch);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open latch '%s'",
                            cli->name_shown);
    switch (a->action) {
    case CR__CLI_LATCH_SET:
        rc = cr_latch_try_set_count(j.latch, a->value, 0, &set);
        if (rc == CR_OK && !set) {
            cr__cli_error(cli, "latch '%s' already has a count",
                          cli->name_shown);
            code = CR__CLI_EXIT_BUSY;
        }
        break;
    case CR__CLI_LATCH_COUNT_DOWN:
        rc = cr_latch_count_down(j.latch);
        break;
    case CR__CLI_LATCH_AWAIT:
        sig = cr__cli_wait(cli, latch_await, NULL, &j, cr__cli_wait_status,
                           &rc);
        if (sig != 0) {
            code = 128 + sig;
            rc = CR_OK;
        } else if (rc == CR_TIMEOUT) {
            code = cr__cli_not_obtained(cli, "latch", rc);
            rc = CR_OK;
        }
        break;
    default:
        rc = cr_latch_get_count(j.latch, &n);
        if (rc == CR_OK)
            cr__cli_print_count(cli, "count", n);
        break;
    }
    if (rc == CR_EEXPIRED) {
        cr__cli_error(cli, "latch '%s' has expired", cli->name_shown);
        code = CR__CLI_EXIT_BUSY;
    } else if (rc != CR_OK) {
        code = cr__cli_fail_on(cli, rc, "latch");
    }
    cr_latch_free(j.latch);
    return code;
}

/* ----------------------------------------------------- barrier, ratelimit */

/* A barrier being awaited. */
typedef struct barrier_job {
    cr__cli *cli;
    cr_barrier *barrier;
    int64_t generation, index;
} barrier_job;

/* The waiting thread's call. */
static cr_status barrier_await(void *ctx)
{
    barrier_job *j = ctx;

    return cr_barrier_await(j->barrier, j->cli->args->wait_ms,
                            &j->generation, &j->index);
}

int cr__cli_cmd_barrier(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    char gen[24], idx[24];
    barrier_job j;
    cr_status rc;
    int code, sig;

    memset(&j, 0, sizeof(j));
    j.cli = cli;
    /* A reset does not look at the number of parties. */
    rc = cr_barrier_new(cli->client, a->name, a->parties > 0 ? a->parties : 1,
                        &j.barrier);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open barrier '%s'",
                            cli->name_shown);
    if (a->action == CR__CLI_BARRIER_RESET) {
        rc = cr_barrier_reset(j.barrier);
        cr_barrier_free(j.barrier);
        return rc == CR_OK ? 0
                           : cr__cli_fail_on(cli, rc, "barrier");
    }
    /* A signal frees the client, which breaks the round for the others
     * (CR_ECLOSED); the exit code is then 128 + the signal's number. */
    sig = cr__cli_wait(cli, barrier_await, NULL, &j, cr__cli_wait_status, &rc);
    if (sig != 0) {
        code = 128 + sig;
    } else if (rc == CR_EBROKEN) {
        cr__cli_error(cli, "barrier '%s': the round was broken (a party "
                      "gave up, was stopped or died, or the barrier was "
                      "reset or deleted)", cli->name_shown);
        code = CR__CLI_EXIT_BUSY;
    } else if (rc != CR_OK) {
        code = cr__cli_not_obtained(cli, "barrier", rc);
    } else {
        snprintf(gen, sizeof(gen), "%lld", (long long)j.generation);
        snprintf(idx, sizeof(idx), "%lld", (long long)j.index);
        if (a->action == CR__CLI_RUN) {
            const char *vars[] = {"CREDISSON_BARRIER_NAME", a->name,
                                  "CREDISSON_BARRIER_GENERATION", gen,
                                  "CREDISSON_BARRIER_INDEX", idx, NULL};

            code = cr__cli_run_free(cli, "barrier", vars);
        } else {
            if (a->json) {
                fputs("{\"name\":", stdout);
                cr__cli_json_str(stdout, a->name, strlen(a->name));
                printf(",\"generation\":%s,\"index\":%s}\n", gen, idx);
            } else {
                printf("generation %s index %s\n", gen, idx);
            }
            code = 0;
        }
    }
    cr_barrier_free(j.barrier);
    return code;
}

/* A permit being waited for. */
typedef struct rate_job {
    cr__cli *cli;
    cr_rate_limiter *limiter;
} rate_job;

/* The waiting thread's call: one permit. */
static cr_status rate_acquire(void *ctx)
{
    rate_job *j = ctx;

    return cr_rate_limiter_try_acquire(j->limiter, 1, j->cli->args->wait_ms);
}

/* Writes a limiter's configuration into buf: "10 per 1.0s", then ", per
 * client" and ", keep-alive 1m00s" when they apply; "no rate" without
 * one. Returns buf. */
static const char *config_text(const cr_rate_config *c, char *buf,
                               size_t len)
{
    char every[32], keep[32];

    if (c->rate == 0) {
        snprintf(buf, len, "no rate");
        return buf;
    }
    snprintf(buf, len, "%lld per %s%s%s%s", (long long)c->rate,
             cr__cli_fmt_ms(c->interval_ms, every, sizeof(every)),
             c->type == CR_RATE_PER_CLIENT ? ", per client" : "",
             c->keep_alive_ms > 0 ? ", keep-alive " : "",
             c->keep_alive_ms > 0
                 ? cr__cli_fmt_ms(c->keep_alive_ms, keep, sizeof(keep))
                 : "");
    return buf;
}

/* Writes a configuration to stdout as JSON: null without a rate. */
static void config_json(const cr_rate_config *c)
{
    if (c->rate == 0) {
        fputs("null", stdout);
        return;
    }
    printf("{\"rate\":%lld,\"interval_ms\":%lld,\"rate_type\":\"%s\","
           "\"keep_alive_ms\":%lld}", (long long)c->rate,
           (long long)c->interval_ms,
           c->type == CR_RATE_PER_CLIENT ? "per-client" : "overall",
           (long long)c->keep_alive_ms);
}

/* Says that the limiter has no rate, and how to give it one. Returns
 * the exit code, 78. */
static int no_rate(cr__cli *cli)
{
    cr__cli_error(cli, "rate limiter '%s' has no rate (never set, deleted, "
                  "or its keep-alive time ran out): give one with --rate "
                  "R/INTERVAL (--rate 10/1s: ten a second), or set it with "
                  "'credisson ratelimit %s set-rate R/INTERVAL'",
                  cli->name_shown, cli->name_shown);
    return CR__CLI_EXIT_CONFIG;
}

/* Settles the limiter before a command run: sets --rate when it has none
 * (trySetRate), then reads what it has. Refuses one without a rate, and
 * a PER_CLIENT one without a keep-alive time (each run is a new client,
 * whose two keys would stay for good), and warns on every run against a
 * PER_CLIENT one (each run gets a budget of its own) and when the stored
 * configuration differs from --rate (and --keep-alive when given).
 * Returns 0 or an exit code. */
static int rate_settle(cr__cli *cli, cr_rate_limiter *l)
{
    const cr__cli_args *a = cli->args;
    cr_rate_type type = a->per_client ? CR_RATE_PER_CLIENT : CR_RATE_OVERALL;
    cr_rate_config cfg;
    char stored[96];
    bool set = false;
    cr_status rc = CR_OK;

    if (a->rate > 0)
        rc = cr_rate_limiter_try_set_rate(l, type, a->rate,
                                          a->rate_interval_ms,
                                          a->keep_alive_ms > 0
                                              ? a->keep_alive_ms
                                              : 0,
                                          &set);
    if (rc == CR_OK)
        rc = cr_rate_limiter_get_config(l, &cfg);
    if (rc != CR_OK)
        return cr__cli_fail_on(cli, rc, "rate limiter");
    if (cfg.rate == 0)
        return no_rate(cli);
    config_text(&cfg, stored, sizeof(stored));
    if (!set && a->rate > 0 &&
        (cfg.rate != a->rate || cfg.interval_ms != a->rate_interval_ms ||
         cfg.type != type ||
         (a->keep_alive_ms > 0 && cfg.keep_alive_ms != a->keep_alive_ms))) {
        char asked[32], keep[32];

        cr__cli_error(cli, "warning: rate limiter '%s' keeps its rate of "
                      "%s, not --rate %lld/%s%s%s%s ('credisson ratelimit "
                      "%s set-rate' changes it)",
                      cli->name_shown, stored, (long long)a->rate,
                      cr__cli_fmt_ms(a->rate_interval_ms, asked,
                                     sizeof(asked)),
                      a->per_client ? " --per-client" : "",
                      a->keep_alive_ms > 0 ? " --keep-alive " : "",
                      a->keep_alive_ms > 0
                          ? cr__cli_fmt_ms(a->keep_alive_ms, keep,
                                           sizeof(keep))
                          : "",
                      cli->name_shown);
    }
    if (cfg.type == CR_RATE_PER_CLIENT && cfg.keep_alive_ms == 0) {
        cr__cli_error(cli, "rate limiter '%s' is PER_CLIENT without a "
                      "keep-alive time: each run is a new client, whose "
                      "budget would start afresh and whose two keys would "
                      "stay for good; not used (give it one with "
                      "'credisson ratelimit %s set-rate R/INTERVAL "
                      "--per-client --keep-alive D')", cli->name_shown,
                      cli->name_shown);
        return CR__CLI_EXIT_CONFIG;
    }
    if (cfg.type == CR_RATE_PER_CLIENT)
        cr__cli_error(cli, "warning: rate limiter '%s' is PER_CLIENT: each "
                      "run is a new client with a budget of its own, so "
                      "runs do not limit each other", cli->name_shown);
    return 0;
}

/* ratelimit NAME set-rate R/INTERVAL: setRate, whatever the limiter had,
 * printing its configuration before and after. Returns the exit code. */
static int rate_set(cr__cli *cli, cr_rate_limiter *l)
{
    const cr__cli_args *a = cli->args;
    cr_rate_config before, after;
    char was[96], now[96];
    cr_status rc;

    rc = cr_rate_limiter_get_config(l, &before);
    if (rc == CR_OK)
        rc = cr_rate_limiter_set_rate(l, a->per_client ? CR_RATE_PER_CLIENT
                                                      : CR_RATE_OVERALL,
                                      a->rate, a->rate_interval_ms,
                                      a->keep_alive_ms > 0 ? a->keep_alive_ms
                                                           : 0);
    if (rc == CR_OK)
        rc = cr_rate_limiter_get_config(l, &after);
    if (rc != CR_OK)
        return cr__cli_fail_on(cli, rc, "rate limiter");
    if (a->json) {
        fputs("{\"name\":", stdout);
        cr__cli_json_str(stdout, a->name, strlen(a->name));
        fputs(",\"before\":", stdout);
        config_json(&before);
        fputs(",\"after\":", stdout);
        config_json(&after);
        fputs("}\n", stdout);
    } else {
        printf("before: %s\nafter:  %s\n",
               config_text(&before, was, sizeof(was)),
               config_text(&after, now, sizeof(now)));
    }
    return 0;
}

int cr__cli_cmd_ratelimit(cr__cli *cli)
{
    const cr__cli_args *a = cli->args;
    rate_job j;
    int64_t n = 0;
    cr_status rc;
    int code = 0, sig;

    j.cli = cli;
    rc = cr_rate_limiter_new(cli->client, a->name, &j.limiter);
    if (rc != CR_OK)
        return cr__cli_fail(cli, rc, "cannot open rate limiter '%s'",
                            cli->name_shown);
    if (a->action == CR__CLI_RL_SET_RATE) {
        code = rate_set(cli, j.limiter);
    } else if (a->action == CR__CLI_RL_AVAILABLE) {
        rc = cr_rate_limiter_available_permits(j.limiter, &n);
        if (rc == CR_OK)
            cr__cli_print_count(cli, "available", n);
        else if (rc == CR_EINVAL)
            code = no_rate(cli); /* its only EINVAL: "not initialized" */
        else
            code = cr__cli_fail_on(cli, rc, "rate limiter");
    } else if ((code = rate_settle(cli, j.limiter)) == 0) {
        sig = cr__cli_wait(cli, rate_acquire, NULL, &j, cr__cli_wait_status,
                           &rc);
        if (sig != 0) {
            code = 128 + sig;
        } else if (rc == CR_EINVAL) {
            code = no_rate(cli); /* deleted, or expired, meanwhile */
        } else if (rc != CR_OK) {
            code = cr__cli_not_obtained(cli, "rate limiter", rc);
        } else {
            const char *vars[] = {"CREDISSON_RATELIMIT_NAME", a->name, NULL};

            code = cr__cli_run_free(cli, "rate limiter", vars);
        }
    }
    cr_rate_limiter_free(j.limiter);
    return code;
}
