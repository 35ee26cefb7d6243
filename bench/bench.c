/* SPDX-License-Identifier: MIT */
/*
 * The helpers behind bench.h: clock, options, hiredis wrappers that exit on
 * failure, samples and percentiles, shared memory and JSON lines.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* ------------------------------------------------------------ clock */

int64_t
bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
bench_sleep_ns(int64_t ns)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

double
bench_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* ------------------------------------------------------------ options */

void
bench_args_parse(int argc, char **argv, bench_args *out)
{
    int i;

    out->url = "redis://127.0.0.1:6379";
    out->seconds = 3.0;
    out->rest = calloc((size_t)argc + 1, sizeof(*out->rest));
    out->rest_count = 0;
    if (out->rest == NULL)
        bench_die("out of memory");
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            out->url = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            out->seconds = atof(argv[++i]);
        else
            out->rest[out->rest_count++] = argv[i];
    }
    if (out->seconds <= 0)
        bench_die("--seconds must be positive");
}

const char *
bench_opt(const bench_args *a, const char *name, const char *dflt)
{
    int i;

    for (i = 0; i + 1 < a->rest_count; i++)
        if (strcmp(a->rest[i], name) == 0)
            return a->rest[i + 1];
    return dflt;
}

bool
bench_flag(const bench_args *a, const char *name)
{
    int i;

    for (i = 0; i < a->rest_count; i++)
        if (strcmp(a->rest[i], name) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------ Redis */

void
bench_die(const char *fmt, ...)
{
    va_list ap;

    fputs("bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

redisContext *
bench_redis(const char *url)
{
    char host[256] = "127.0.0.1";
    const char *p = url;
    const char *colon;
    int port = 6379;
    size_t n;
    redisContext *c;

    if (strncmp(p, "redis://", 8) == 0)
        p += 8;
    colon = strchr(p, ':');
    n = colon != NULL ? (size_t)(colon - p) : strcspn(p, "/");
    if (n > 0 && n < sizeof(host)) {
        memcpy(host, p, n);
        host[n] = '\0';
    }
    if (colon != NULL)
        port = atoi(colon + 1);
    c = redisConnect(host, port);
    if (c == NULL || c->err)
        bench_die("cannot connect to %s:%d: %s", host, port,
                  c != NULL ? c->errstr : "out of memory");
    return c;
}

/* Exits unless `r` is a reply that is not an error. */
static redisReply *
checked(redisContext *c, redisReply *r)
{
    if (r == NULL)
        bench_die("redis: %s", c->errstr[0] ? c->errstr : "no reply");
    if (r->type == REDIS_REPLY_ERROR)
        bench_die("redis error: %s", r->str);
    return r;
}

cr_client *
bench_client(const char *url)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = url;
    if (cr_client_new(&o, &c) != CR_OK)
        bench_die("cr_client_new: %s", cr_last_error());
    return c;
}

redisReply *
bench_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return checked(c, r);
}

redisReply *
bench_cmd_argv(redisContext *c, int argc, const char **argv,
               const size_t *lens)
{
    return checked(c, redisCommandArgv(c, argc, argv, lens));
}

/* ------------------------------------------------------------ the library's scripts */

/* The benchmarks fill each script's argument struct with designated
 * initializers, so a renamed or removed argument fails to compile; these
 * make an added one fail too (it would otherwise go out as 0 or crash the
 * run). Each field of a generated struct is 8 bytes (a pointer, an
 * int64_t or a size_t) on the 64-bit targets the project builds for, so
 * the size counts them: when one fails, fill the new argument where the
 * benchmarks build that script's calls, then update the count. */
#if UINTPTR_MAX == UINT64_MAX
#define ARGS_FIELDS(type, n)                                                   \
    _Static_assert(sizeof(type) == (n) * 8,                                    \
                   #type " changed: update the benchmarks' calls of its script")
ARGS_FIELDS(cr__lock_acquire_args, 11);
ARGS_FIELDS(cr__lock_unlock_args, 13);
ARGS_FIELDS(cr__lock_renew_args, 7);
ARGS_FIELDS(cr__semaphore_try_acquire_args, 12);
ARGS_FIELDS(cr__semaphore_release_args, 10);
ARGS_FIELDS(cr__rwlock_read_acquire_args, 12);
ARGS_FIELDS(cr__rwlock_write_acquire_args, 10);
ARGS_FIELDS(cr__rwlock_read_unlock_args, 14);
ARGS_FIELDS(cr__rwlock_write_unlock_args, 13);
#endif

void
bench_script_load(redisContext *c, cr__script_id id)
{
    const char *argv[3] = {"SCRIPT", "LOAD", cr__scripts[id].body};
    size_t lens[3] = {6, 4, cr__scripts[id].len};
    redisReply *r = bench_cmd_argv(c, 3, argv, lens);

    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, cr__scripts[id].sha1) != 0)
        bench_die("SCRIPT LOAD of %s gave an unexpected SHA1", cr__scripts[id].name);
    freeReplyObject(r);
}

void
bench_script_argv(cr_status built, cr__script_call *call, char nk[24])
{
    if (built != CR_OK)
        bench_die("building a call of %s: %s", call->script->name,
                  cr_strerror(built));
    cr__script_call_argv(call, false, nk);
}

void
bench_script_append(redisContext *c, cr_status built, cr__script_call *call)
{
    char nk[24];

    bench_script_argv(built, call, nk);
    if (redisAppendCommandArgv(c, (int)call->argc, call->argv, call->lens) != REDIS_OK)
        bench_die("redis: %s", c->errstr);
    cr__script_call_free(call);
}

redisReply *
bench_script(redisContext *c, cr_status built, cr__script_call *call)
{
    void *r = NULL;

    bench_script_append(c, built, call);
    if (redisGetReply(c, &r) != REDIS_OK)
        r = NULL;
    return checked(c, r);
}

void
bench_line(cr__line *ln, const char *raw)
{
    if (cr__line_init(ln, raw) != CR_OK)
        bench_die("out of memory");
}

cr__lock_acquire_args
bench_lock_acquire_args(const char *key, const char *owner, int64_t lease_ms,
                        const cr__line *ln)
{
    return (cr__lock_acquire_args){
        .lock = key, .line = ln->key, .line_state = ln->state,
        .lease_ms = lease_ms, .owner = owner, .wait = BENCH_LINE_IGNORE,
        .line_lease_ms = BENCH_LINE_LEASE_MS, .turn_ms = BENCH_LINE_TURN_MS,
        .line_channel = ln->prefix, .publish = "publish", .non_reentrant = 0};
}

cr__lock_unlock_args
bench_lock_unlock_args(const char *key, const char *channel, const char *latch,
                       const char *owner, int64_t lease_ms, const cr__line *ln)
{
    return (cr__lock_unlock_args){
        .lock = key, .channel = channel, .latch = latch, .line = ln->key,
        .line_state = ln->state, .message = 0, .lease_ms = lease_ms,
        .owner = owner, .publish = "publish", .latch_ms = BENCH_LATCH_MS,
        .line_lease_ms = BENCH_LINE_LEASE_MS, .turn_ms = BENCH_LINE_TURN_MS,
        .line_channel = ln->prefix};
}

/* ------------------------------------------------------------ memory */

void *
bench_shared(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        bench_die("mmap of %zu bytes failed", size);
    return p;
}

void
bench_shared_free(void *p, size_t size)
{
    if (p != NULL)
        munmap(p, size);
}

/* ------------------------------------------------------------ samples */

void
bench_samples_init(bench_samples *s, size_t cap, bool shared)
{
    s->v = shared ? bench_shared(cap * sizeof(*s->v))
                  : malloc(cap * sizeof(*s->v));
    if (s->v == NULL)
        bench_die("out of memory for %zu samples", cap);
    s->cap = cap;
    atomic_init(&s->n, 0);
}

void
bench_samples_add(bench_samples *s, int64_t v)
{
    size_t i = atomic_fetch_add(&s->n, 1);

    if (i < s->cap)
        s->v[i] = v;
}

size_t
bench_samples_count(const bench_samples *s)
{
    size_t n = atomic_load(&s->n);

    return n < s->cap ? n : s->cap;
}

/* qsort comparison of two int64 values. */
static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

void
bench_samples_sort(bench_samples *s)
{
    qsort(s->v, bench_samples_count(s), sizeof(*s->v), cmp_i64);
}

int64_t
bench_pct(const bench_samples *s, double p)
{
    size_t n = bench_samples_count(s), i;

    if (n == 0)
        return 0;
    i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return s->v[i < n ? i : n - 1];
}

double
bench_mean(const bench_samples *s)
{
    size_t n = bench_samples_count(s), i;
    double sum = 0;

    for (i = 0; i < n; i++)
        sum += (double)s->v[i];
    return n > 0 ? sum / (double)n : 0;
}

/* ------------------------------------------------------------ output */

/* Appends printf output to the line being built. */
static void
json_add(bench_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
json_add(bench_json *j, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (j->len >= sizeof(j->buf))
        return;
    va_start(ap, fmt);
    n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        j->len += (size_t)n;
}

void
bench_json_begin(bench_json *j, const char *bench)
{
    j->len = 0;
    json_add(j, "{\"bench\":\"%s\"", bench);
}

void
bench_json_str(bench_json *j, const char *key, const char *val)
{
    json_add(j, ",\"%s\":\"%s\"", key, val);
}

void
bench_json_num(bench_json *j, const char *key, double val)
{
    json_add(j, ",\"%s\":%.6g", key, val);
}

void
bench_json_int(bench_json *j, const char *key, int64_t val)
{
    json_add(j, ",\"%s\":%lld", key, (long long)val);
}

void
bench_json_bool(bench_json *j, const char *key, bool val)
{
    json_add(j, ",\"%s\":%s", key, val ? "true" : "false");
}

void
bench_json_end(bench_json *j)
{
    json_add(j, "}");
    printf("%s\n", j->buf);
    fflush(stdout);
}

/* ------------------------------------------------------------ workers */

/* A worker thread's body. */
static void *
worker_thread(void *arg)
{
    bench_workers *ws = arg;

    ws->run(ws->arg);
    return NULL;
}

void
bench_workers_start(bench_workers *ws, int k, bool procs,
                    void (*run)(void *arg), void *arg)
{
    int i;

    if (k < 1 || k > BENCH_WORKERS_MAX)
        bench_die("--workers must be in 1..%d", BENCH_WORKERS_MAX);
    ws->k = k;
    ws->procs = procs;
    ws->run = run;
    ws->arg = arg;
    for (i = 0; i < k; i++) {
        if (procs) {
            fflush(NULL);
            ws->pids[i] = fork();
            if (ws->pids[i] < 0)
                bench_die("fork failed");
            if (ws->pids[i] == 0) {
                run(arg);
                _exit(0);
            }
        } else if (pthread_create(&ws->tids[i], NULL, worker_thread, ws) !=
                   0) {
            bench_die("pthread_create failed");
        }
    }
}

void
bench_workers_join(bench_workers *ws, const char *what)
{
    int i;

    for (i = 0; i < ws->k; i++) {
        if (ws->procs) {
            int status = 0;

            if (waitpid(ws->pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0)
                bench_die("%s process %d failed", what, i);
        } else {
            pthread_join(ws->tids[i], NULL);
        }
    }
}
