/* SPDX-License-Identifier: MIT */
/*
 * What the benchmark programs share: a monotonic clock in nanoseconds,
 * command-line options, a hiredis connection to the benchmark server, sample
 * sets with percentiles, shared memory for multi-process runs, and the one
 * JSON line each measurement prints (bench/report.py turns those lines into
 * the table and the target verdicts).
 *
 * Benchmarks only: nothing here is part of the library, and the programs
 * abort on the first unexpected error instead of recovering.
 */
#ifndef CR_BENCH_H
#define CR_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include <credisson.h>

#include "line.h"
#include "scripts.h"

/* ------------------------------------------------------------ clock */

/* Nanoseconds on CLOCK_MONOTONIC: one scale for every process of a run. */
int64_t bench_now_ns(void);

/* Sleeps `ns` nanoseconds (restarting after signals). */
void bench_sleep_ns(int64_t ns);

/* CPU seconds (user + system) this process has used so far. */
double bench_cpu_s(void);

/* ------------------------------------------------------------ options */

/* The options every program takes; bench_args() fills them from argv and
 * leaves what it does not know in `rest` (argv order kept). */
typedef struct bench_args {
    const char *url;   /* --url redis://host:port (default 127.0.0.1:6379) */
    double seconds;    /* --seconds S: length of each timed run (3) */
    int rest_count;
    char **rest;
} bench_args;

void bench_args_parse(int argc, char **argv, bench_args *out);

/* bench_opt: the value following `name` in a->rest, or `dflt`. */
const char *bench_opt(const bench_args *a, const char *name, const char *dflt);

/* bench_flag: whether `name` is in a->rest. */
bool bench_flag(const bench_args *a, const char *name);

/* ------------------------------------------------------------ Redis */

/* bench_redis: a new hiredis connection to `url` (redis://[host][:port]
 * only: the benchmark server has no password); exits on failure. */
redisContext *bench_redis(const char *url);

/* bench_client: a library client with the defaults on `url`; exits on
 * failure. Ownership: free it with cr_client_free(). */
cr_client *bench_client(const char *url);

/* bench_cmd: one command (hiredis format); exits when the link fails or
 * Redis answers an error. Ownership: the caller frees the reply. */
redisReply *bench_cmd(redisContext *c, const char *fmt, ...);

/* bench_cmd_argv: the same with an argument vector. */
redisReply *bench_cmd_argv(redisContext *c, int argc, const char **argv,
                           const size_t *lens);

/* ------------------------------------------------------------ the library's scripts */

/* The programs that run the library's scripts by hand (the ceiling and the
 * floors) build each call with the generated cr__build_<name>() of
 * scripts.h, from the script's own "--! keys:" and "--! argv:" lines, so
 * that a script whose arguments change breaks their build, not their
 * figures:
 *   cr__script_call call;
 *   cr__lock_acquire_args a = {.lock = key, ...};
 *   redisReply *r = bench_script(c, cr__build_lock_acquire(&a, &call), &call);
 */

/* bench_script_load: SCRIPT LOAD of the library's script `id`; exits
 * unless the server's SHA1 is the one the library sends. */
void bench_script_load(redisContext *c, cr__script_id id);

/* bench_script_argv: completes the call that a cr__build_<name>() made
 * (`built`: its status, `call`: what it filled) as EVALSHA, `nk` holding
 * the key count's digits: call->argc, call->argv and call->lens can then
 * be sent as often as wanted (redisCommandArgv) while the args struct, nk
 * and call live; free it with cr__script_call_free. Exits when the build
 * failed. */
void bench_script_argv(cr_status built, cr__script_call *call, char nk[24]);

/* bench_script_append: appends the call that a cr__build_<name>() made
 * to c's output buffer as EVALSHA, without sending it, and frees what the
 * build took; exits when the build failed. Its reply is read later
 * (redisGetReply). */
void bench_script_append(redisContext *c, cr_status built,
                         cr__script_call *call);

/* bench_script: the same call sent, and its reply; exits when the link
 * fails or Redis answers an error. Ownership: the caller frees the reply. */
redisReply *bench_script(redisContext *c, cr_status built,
                         cr__script_call *call);

/* The line arguments of a script run outside the library's waiting line
 * (doc/waiting-line.md): the object's real line names (cr__line_init) on
 * which nobody waits, the library's default waiting lease and turn, and
 * the `wait` that ignores the line (as the spin lock's attempts do). What
 * the scripts still run for the line (a TIME in an acquire, a TIME and an
 * EXISTS of the empty line in a release) and what it costs: "The floors'
 * scripts and the waiting line" in doc/benchmarks.md. */
#define BENCH_LINE_LEASE_MS 30000
#define BENCH_LINE_TURN_MS 250 /* the client default, cr_client_options.line_turn_ms */
#define BENCH_LINE_IGNORE cr__line_wait_arg(0, true)
#define BENCH_LATCH_MS 10000 /* an unlock or acquire latch's lifetime */

/* bench_line: the line names of raw name N into `ln` (free them with
 * cr__line_free); exits when out of memory. */
void bench_line(cr__line *ln, const char *raw);

/* bench_lock_acquire_args: RLock's acquire of `key` by `owner` for
 * lease_ms, outside the line (`ln`: the key's line names, bench_line). */
cr__lock_acquire_args bench_lock_acquire_args(const char *key, const char *owner,
                                              int64_t lease_ms, const cr__line *ln);

/* bench_lock_unlock_args: RLock's unlock of `key` by `owner`, publishing
 * 0 on `channel`, with the unlock latch `latch` (lease_ms: the lease left
 * to a partial unlock); `ln` as above. */
cr__lock_unlock_args bench_lock_unlock_args(const char *key, const char *channel,
                                            const char *latch, const char *owner,
                                            int64_t lease_ms, const cr__line *ln);

/* bench_die: print "bench: <what>" and exit 1. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                    noreturn));

/* ------------------------------------------------------------ workers */

/* The most workers one program starts. */
#define BENCH_WORKERS_MAX 256

/* K workers running one function, as processes or as threads. */
typedef struct bench_workers {
    int k;
    bool procs;
    void (*run)(void *arg);
    void *arg;
    pid_t pids[BENCH_WORKERS_MAX];
    pthread_t tids[BENCH_WORKERS_MAX];
} bench_workers;

/* bench_workers_start: start k (1..BENCH_WORKERS_MAX) workers running
 * run(arg): forked processes, each exiting 0 when run returns, or threads
 * of this process. Exits on failure. */
void bench_workers_start(bench_workers *ws, int k, bool procs,
                         void (*run)(void *arg), void *arg);

/* bench_workers_join: wait for every worker; exits, naming `what`, when a
 * process did not exit 0. */
void bench_workers_join(bench_workers *ws, const char *what);

/* ------------------------------------------------------------ samples */

/* A set of int64 samples (nanoseconds), in shared memory or not. */
typedef struct bench_samples {
    int64_t *v;
    size_t cap;
    _Atomic size_t n; /* may exceed cap: samples past cap are dropped */
} bench_samples;

/* bench_samples_init: room for `cap` samples; shared across fork() when
 * `shared`. */
void bench_samples_init(bench_samples *s, size_t cap, bool shared);

/* bench_samples_add: record one sample (thread- and process-safe). */
void bench_samples_add(bench_samples *s, int64_t v);

/* bench_samples_count: the samples kept (at most cap). */
size_t bench_samples_count(const bench_samples *s);

/* bench_samples_sort: sort the kept samples, then read percentiles. */
void bench_samples_sort(bench_samples *s);

/* bench_pct: the p-th percentile (0..100) of sorted samples; 0 when none. */
int64_t bench_pct(const bench_samples *s, double p);

/* bench_mean: the mean of the kept samples; 0 when none. */
double bench_mean(const bench_samples *s);

/* ------------------------------------------------------------ memory */

/* bench_shared: `size` zeroed bytes shared with children forked later. */
void *bench_shared(size_t size);
void bench_shared_free(void *p, size_t size);

/* ------------------------------------------------------------ output */

/* One JSON object on one line of stdout:
 *   bench_json j; bench_json_begin(&j, "s1_uncontended");
 *   bench_json_str(&j, "impl", "rlock"); bench_json_num(&j, "rate", r);
 *   bench_json_end(&j);
 * Keys and string values must not need escaping. */
typedef struct bench_json {
    char buf[4096];
    size_t len;
} bench_json;

void bench_json_begin(bench_json *j, const char *bench);
void bench_json_str(bench_json *j, const char *key, const char *val);
void bench_json_num(bench_json *j, const char *key, double val);
void bench_json_int(bench_json *j, const char *key, int64_t val);
void bench_json_bool(bench_json *j, const char *key, bool val);
void bench_json_end(bench_json *j);

#endif
