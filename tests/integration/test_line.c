/* SPDX-License-Identifier: MIT */
/*
 * The waiting line (doc/waiting-line.md, lua/lib/line.lua) against a real
 * redis-server: exactness and liveness with many processes, threads and
 * asynchronous requests on one lock, each cycle recorded (line_block.h,
 * history.h) and the history checked (no overlap, every waiter served, no
 * waiter overtaken twice by another, the longest wait within what a line
 * allows); semaphores that never over-issue; a head that is killed or
 * stopped while its turn runs; writers first on the read/write lock;
 * killed pub/sub links and a flushed script cache while the line is long;
 * tries that do not barge; waits that run out; the line's keys and their
 * time to live. The processes are line_worker's.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credisson/rwlock.h"
#include "history.h"
#include "line_block.h"
#include "lock_common.h"

/* A waiter's turn in the tests that time one (the clients' line_turn_ms):
 * short, so that a dead head costs little, and long against a hand-over. */
#define TURN_MS 200

/* A turn when the client's line_turn_ms is 0 (client.h). */
#define DEFAULT_TURN_MS 250

/* n, or n / by (rounded up) under CR_TEST_SLOW (valgrind, the
 * sanitizers, whose processes are many times slower): the runs of many
 * processes and cycles shrink there. */
static int
scaled(int n, int by)
{
    return slow(1) > 1 ? (n + by - 1) / by : n;
}

/* The hold of a run whose order is checked: 1 ms, or 10 ms under
 * CR_TEST_SLOW. There, an attempt takes a few ms to reach the server from
 * many workers on two cores, and a worker whose attempt has not joined the
 * line yet can be overtaken by one that released and joined again: with
 * holds long against that time, the order checked is the line's, not the
 * time an attempt took to join it. */
static int64_t
order_hold_us(void)
{
    return slow(1) > 1 ? 10000 : 1000;
}

/* A client on the test server with a turn of turn_ms (0: the default)
 * and a watchdog timeout (the line's waiting lease) of watchdog_ms. */
static cr_client *
line_client(int64_t turn_ms, int64_t watchdog_ms)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = test_redis.url;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.command_timeout_ms = slow(2000);
    o.line_turn_ms = turn_ms;
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    return c;
}

/* The line's keys of object `name`. */
static void
line_keys(const char *name, char *key, char *state, size_t size)
{
    snprintf(key, size, "credisson_line:{%s}", name);
    snprintf(state, size, "credisson_line_state:{%s}", name);
}

/* Entry `entry`'s ticket in the line of `name`, -1 when it is not there. */
static long long
ticket_of(const char *name, const char *entry)
{
    char key[256], state[256];
    redisReply *r;
    long long t = -1;

    line_keys(name, key, state, sizeof(key));
    r = cr_test_redis_cmd(&test_redis, "ZSCORE %s %s", key, entry);
    if (r != NULL && r->type == REDIS_REPLY_STRING)
        t = atoll(r->str);
    if (r != NULL)
        freeReplyObject(r);
    return t;
}

/* cr_test_wait_until condition on an `in_line`: the entry is in line
 * (`in`) or not. */
typedef struct in_line {
    const char *name, *entry;
    bool in;
} in_line;

static bool
in_line_is(void *arg)
{
    const in_line *l = arg;

    return (ticket_of(l->name, l->entry) >= 0) == l->in;
}

/* Waits until `entry` is in the line of `name`; fails the test otherwise. */
static void
await_in_line(const char *name, const char *entry)
{
    in_line l = {name, entry, true};

    assert_true(cr_test_wait_until(in_line_is, &l, slow(5000)));
}

/* The longest round trip of a few lock calls of client c (a reference for
 * the margins below, measured in the same run). */
static int64_t
round_trip_ms(cr_client *c)
{
    cr_lock *l;
    int64_t most = 0;
    int i;

    assert_int_equal(cr_lock_new(c, "rtt", &l), CR_OK);
    for (i = 0; i < 5; i++) {
        int64_t t = cr_test_now_ms();
        bool locked;

        assert_int_equal(cr_lock_is_locked(l, &locked), CR_OK);
        if (cr_test_now_ms() - t > most)
            most = cr_test_now_ms() - t;
    }
    cr_lock_free(l);
    return most > 0 ? most : 1;
}

/* ------------------------------------------------------ the processes */

/* The worker processes a test started and has not reaped: a test that
 * fails half-way leaves them to its teardown, which kills them. */
static pid_t live[64];
static int n_live;

/* Notes that `pid` runs. */
static void
note_started(pid_t pid)
{
    assert_true(n_live < (int)(sizeof(live) / sizeof(live[0])));
    live[n_live++] = pid;
}

/* Notes that `pid` was reaped. */
static void
note_reaped(pid_t pid)
{
    int i;

    for (i = 0; i < n_live; i++)
        if (live[i] == pid) {
            live[i] = live[--n_live];
            return;
        }
}

/* Per-test setup: the group's (a flushed server, a fresh client). */
static int
line_up(void **state)
{
    n_live = 0;
    return client_up(state);
}

/* Per-test teardown: the processes a failed test left are killed. */
static int
line_down(void **state)
{
    while (n_live > 0) {
        kill(live[n_live - 1], SIGCONT);
        kill(live[n_live - 1], SIGKILL);
        waitpid(live[--n_live], NULL, 0);
    }
    return client_down(state);
}


/* A line_worker in "serve" mode and the pipes to and from it. */
typedef struct proc {
    pid_t pid;
    int to, from;
    char entry[160]; /* its entry in the line */
} proc;

/* Starts a "serve" worker on object `name` of `kind` with a turn of
 * turn_ms, and reads its entry. */
static void
proc_start(proc *p, const char *kind, const char *name, int64_t turn_ms)
{
    char turn[24], line[160];
    const char *args[] = {"serve", test_redis.url, kind, name, turn, NULL};

    snprintf(turn, sizeof(turn), "%lld", (long long)turn_ms);
    p->pid = cr_test_spawn_piped("line_worker", args, &p->to, &p->from);
    assert_true(p->pid > 0);
    note_started(p->pid);
    assert_true(cr_test_read_line(p->from, line, sizeof(line), slow(10000)));
    assert_true(line[0] == 'E' && line[1] == ' ');
    snprintf(p->entry, sizeof(p->entry), "%s", line + 2);
}

/* Sends a command line to the worker. */
static void
proc_say(proc *p, const char *cmd)
{
    assert_int_equal(write(p->to, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
}

/* Reads the worker's answer to command `op` within timeout_ms: its status
 * and time (CLOCK_MONOTONIC microseconds). False when none came. */
static bool
proc_answer(proc *p, char op, cr_status *rc, int64_t *us, int64_t timeout_ms)
{
    char line[96];
    int st = 0;
    long long t = 0;

    if (!cr_test_read_line(p->from, line, sizeof(line), timeout_ms))
        return false;
    assert_int_equal(line[0], op);
    assert_int_equal(sscanf(line + 1, "%d %lld", &st, &t), 2);
    *rc = (cr_status)st;
    *us = t;
    return true;
}

/* Has the worker release what it holds; returns when it was released. */
static int64_t
proc_release(proc *p)
{
    cr_status rc;
    int64_t us;

    proc_say(p, "U\n");
    assert_true(proc_answer(p, 'U', &rc, &us, slow(5000)));
    assert_int_equal(rc, CR_OK);
    return us;
}

/* Whether process `pid` is stopped (its state in /proc is T). */
static bool
is_stopped(void *arg)
{
    char path[64], buf[256], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", *(pid_t *)arg);
    if ((f = fopen(path, "r")) == NULL)
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* Stops the worker and waits until it is. */
static void
proc_stop(proc *p)
{
    assert_int_equal(kill(p->pid, SIGSTOP), 0);
    assert_true(cr_test_wait_until(is_stopped, &p->pid, slow(2000)));
}

/* Ends the worker (after SIGKILL when `kill_it`) and reaps it; a worker
 * that was not killed must exit with 0. */
static void
proc_end(proc *p, bool kill_it)
{
    int status = 0;

    if (kill_it) {
        kill(p->pid, SIGKILL);
    } else {
        proc_say(p, "Q\n");
    }
    close(p->to);
    close(p->from);
    assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
    note_reaped(p->pid);
    if (!kill_it)
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Microseconds of CLOCK_MONOTONIC, as the workers give them. */
static int64_t
now_us(void)
{
    return cr_hist_now_us();
}

/* ------------------------------------------------------- cycle runs */

/* One process of a cycle run: its driver ("threads", "libevent",
 * "libuv") and how many workers it runs. */
typedef struct group {
    const char *driver;
    int n;
} group;

#define MAX_GROUPS 40

/* A cycle run: every worker takes object `name` of `kind` `cycles` times
 * and holds it hold_us, all beginning at once. */
typedef struct cycle_run {
    const char *kind, *name;
    int cycles;
    int64_t hold_us;
    int permits; /* at most this many holders at once */
    const group *groups;
    int ngroups;
    /* What the run left. */
    pid_t pids[MAX_GROUPS];
    int64_t started_us;
    line_block *block;
    int block_fd;
    cr_hist *hist;
    int workers;
    int64_t elapsed_us;
} cycle_run;

/* cr_test_wait_until condition: every process of the run is ready. */
static bool
all_ready(void *arg)
{
    const cycle_run *r = arg;

    return atomic_load(&r->block->ready) >= r->ngroups;
}

/* Starts r's processes and lets them go once all are ready. */
static void
start_cycles(cycle_run *r)
{
    int g, first = 0;

    assert_true(r->ngroups <= MAX_GROUPS);
    r->workers = 0;
    for (g = 0; g < r->ngroups; g++)
        r->workers += r->groups[g].n;
    assert_true(r->workers <= LINE_WORKERS && r->cycles <= LINE_CYCLES);
    r->block = cr_test_memfd_alloc("line_block", sizeof(line_block),
                                   &r->block_fd);
    assert_non_null(r->block);
    r->hist = cr_hist_new((size_t)(r->workers * r->cycles) + 16, r->workers);
    assert_non_null(r->hist);
    for (g = 0; g < r->ngroups; g++) {
        char cycles[16], hold[24], bfd[16], hfd[16], idx[16], n[16],
            turn[24];
        const char *args[] = {"cycle", test_redis.url, r->kind, r->name,
                              cycles, hold, bfd, hfd, idx,
                              r->groups[g].driver, n, turn, NULL};

        snprintf(cycles, sizeof(cycles), "%d", r->cycles);
        snprintf(hold, sizeof(hold), "%lld", (long long)r->hold_us);
        snprintf(bfd, sizeof(bfd), "%d", r->block_fd);
        snprintf(hfd, sizeof(hfd), "%d", cr_hist_fd(r->hist));
        snprintf(idx, sizeof(idx), "%d", first);
        snprintf(n, sizeof(n), "%d", r->groups[g].n);
        /* The default turn (250 ms), scaled under valgrind and the
         * sanitizers: there a worker descheduled for longer than a turn
         * loses its place, which the order checks would count as others
         * barging. */
        snprintf(turn, sizeof(turn), "%lld", (long long)slow(250));
        r->pids[g] = cr_test_spawn("line_worker", args, NULL);
        assert_true(r->pids[g] > 0);
        note_started(r->pids[g]);
        first += r->groups[g].n;
    }
    assert_true(cr_test_wait_until(all_ready, r, slow(30000)));
    r->started_us = now_us();
    atomic_store(&r->block->go, 1);
}

/* Waits up to timeout_ms for r's processes to end and reaps them (a hung
 * run fails the test; the teardown kills its processes). */
static void
finish_cycles(cycle_run *r, int64_t timeout_ms)
{
    bool done = cr_hist_wait_done(r->hist, timeout_ms);
    int g;

    r->elapsed_us = now_us() - r->started_us;
    assert_true(done);
    for (g = 0; g < r->ngroups; g++) {
        assert_int_equal(cr_test_wait_exit(r->pids[g]), 0);
        note_reaped(r->pids[g]);
    }
}

/* Runs r's processes to their end. */
static void
run_cycles(cycle_run *r)
{
    start_cycles(r);
    finish_cycles(r, slow(120000));
}

/* Frees what run_cycles made. */
static void
free_cycles(cycle_run *r)
{
    cr_hist_free(r->hist);
    munmap(r->block, sizeof(*r->block));
    close(r->block_fd);
}

/* Checks that r was exact: no failed call, every worker served every
 * cycle, never more than r->permits holders at once (the history and the
 * count inside), the guarded counter exact when one holds at a time. */
static void
check_exact(const cycle_run *r, const char *scenario)
{
    cr_hist_report rep;
    int w;

    cr_hist_check(r->hist, r->permits, &rep);
    cr_hist_print(scenario, &rep);
    assert_int_equal(atomic_load(&r->block->failures), 0);
    for (w = 0; w < r->workers; w++)
        assert_int_equal(atomic_load(&r->block->cycles_done[w]), r->cycles);
    assert_int_equal(rep.holds, (size_t)(r->workers * r->cycles));
    assert_int_equal(rep.violations, 0);
    assert_int_equal(rep.open, 0);
    assert_int_equal(rep.hung, 0);
    assert_int_equal(rep.errors, 0);
    assert_true(rep.max_concurrency <= r->permits);
    assert_true(atomic_load(&r->block->most_inside) <= r->permits);
    assert_int_equal(rep.bumps, (long long)(r->workers * r->cycles));
    if (r->permits == 1)
        assert_int_equal(rep.counter, rep.bumps);
}

/* What check_line_order found. */
typedef struct order {
    int64_t longest_wait_us;
    int64_t step_us;  /* the 90th percentile of the time from one hold's
                       * start to the next's: a hand-over, and a hold
                       * when one holds at a time */
    int64_t bound_us; /* the longest wait a line allows (wait_bound) */
    int twice;       /* waits in which another worker began two holds */
    int most;        /* the most holds one worker began in another's wait */
} order;

/* Holds worker v began while worker w's cycle c waited. */
static int
begun_in_wait(const cycle_run *r, int w, int c, int v)
{
    const line_cycle *me = &r->block->cycle[w][c];
    int d, n = 0;

    for (d = 0; d < r->cycles; d++) {
        int64_t at = r->block->cycle[v][d].enter_us;

        if (at > me->call_us && at < me->enter_us)
            n++;
    }
    return n;
}

/* Compares two int64_t for qsort. */
static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The order of r's holds. In a line, a waiter waits for those ahead of
 * it, each once: another worker begins at most one hold while it waits
 * (two when its place was lost: a turn that ran out before it came to
 * take it). Its wait therefore spans at most 2 x (workers - 1) + 1 steps
 * from one hold's start to the next's (a hold and a hand-over each, as
 * this run measured them on this machine, its load and stalls
 * included): the sum of the longest that many steps of the run bounds
 * it. A line that lets others barge keeps a waiter through many more. */
static order
check_line_order(const cycle_run *r, const char *scenario)
{
    size_t n = (size_t)(r->workers * r->cycles), k = 0, i;
    int64_t *starts = calloc(n, sizeof(*starts));
    int64_t *steps = calloc(n, sizeof(*steps));
    int64_t mean;
    order o = {0};
    int w, c, v;

    assert_non_null(starts);
    assert_non_null(steps);
    for (w = 0; w < r->workers; w++)
        for (c = 0; c < r->cycles; c++) {
            const line_cycle *x = &r->block->cycle[w][c];
            int64_t wait = x->enter_us - x->call_us;
            bool doubled = false;

            starts[k++] = x->enter_us;
            if (wait > o.longest_wait_us)
                o.longest_wait_us = wait;
            for (v = 0; v < r->workers; v++) {
                int b = v == w ? 0 : begun_in_wait(r, w, c, v);

                if (b > o.most)
                    o.most = b;
                doubled = doubled || b >= 2;
            }
            o.twice += doubled;
        }
    qsort(starts, n, sizeof(*starts), cmp_i64);
    for (i = 0; i + 1 < n; i++)
        steps[i] = starts[i + 1] - starts[i];
    mean = n > 1 ? (starts[n - 1] - starts[0]) / (int64_t)(n - 1) : 0;
    qsort(steps, n - 1, sizeof(*steps), cmp_i64);
    o.step_us = n > 1 ? steps[(n - 1) * 9 / 10] : 0;
    /* The steps a wait may span: one for each hold begun in it and
     * its own hand-over. */
    for (i = 0; i < (size_t)(2 * r->workers - 1) && i + 1 < n; i++)
        o.bound_us += steps[n - 2 - i];
    fprintf(stderr,
            "%s: %d workers x %d cycles in %lld ms: from one hold's start "
            "to the next's %lld us on average, %lld us at the 90th "
            "percentile; longest wait %lld ms (%.1f x workers x mean "
            "step); waits overtaken twice by one worker %d, the most holds "
            "one worker began in another's wait %d\n",
            scenario, r->workers, r->cycles,
            (long long)(r->elapsed_us / 1000), (long long)mean,
            (long long)o.step_us, (long long)(o.longest_wait_us / 1000),
            mean > 0 ? (double)o.longest_wait_us /
                           (double)(r->workers * mean)
                     : 0.0,
            o.twice, o.most);
    free(starts);
    free(steps);
    return o;
}

/* Checks r's waits: none longer than the line allows; with one holder at
 * a time, no waiter overtaken by another worker more than twice (once is
 * a line's order; twice, a place lost), and twice in a few waits at most:
 * one in 50, or in 25 under CR_TEST_SLOW, where attempts and messages
 * run late under load and a place is lost now and then (four waits of
 * 144 with four ThreadSanitizer runs of this suite at once on two cores).
 * A line that lets others barge loses most of them. */
static void
check_waits(const cycle_run *r, const order *o)
{
    int waits = r->workers * r->cycles;

    fprintf(stderr, "longest wait %lld ms, bound %lld ms\n",
            (long long)(o->longest_wait_us / 1000),
            (long long)(o->bound_us / 1000));
    assert_true(o->longest_wait_us <= o->bound_us);
    if (r->permits > 1)
        return;
    assert_true(o->most <= 2);
    assert_true(o->twice <= 2 + waits / (slow(1) > 1 ? 25 : 50));
}

/* Checks run r, which is over: exact, and in the line's order. */
static void
check_run(const cycle_run *r, const char *scenario)
{
    order o;

    check_exact(r, scenario);
    o = check_line_order(r, scenario);
    check_waits(r, &o);
}

/* 32 processes of one worker each. */
static const group one_each[32] = {
    [0 ... 31] = {"threads", 1},
};

/* ------------------------------------------------------------ tests */

static void
test_line_32_processes_share_one_lock_in_order(void **state)
{
    cycle_run r = {.kind = "lock", .name = "line32",
                   .cycles = scaled(50, 5),
                   .hold_us = order_hold_us(), .permits = 1,
                   .groups = one_each, .ngroups = scaled(32, 4)};

    (void)state;
    run_cycles(&r);
    check_run(&r, "lock, processes");
    free_cycles(&r);
}

/* Processes, the threads of one client and the requests of cr_async on
 * libevent and libuv loops wait in one line for one lock, each thread and
 * request with an entry of its own. */
static void
test_line_threads_and_async_requests_share_a_lock_with_processes_in_order(
    void **state)
{
    static const group mix[] = {
        [0 ... 11] = {"threads", 1},
        {"threads", 4},
#ifdef CR_HAVE_LIBEVENT
        {"libevent", 4},
#endif
#ifdef CR_HAVE_LIBUV
        {"libuv", 4},
#endif
    };
    cycle_run r = {.kind = "lock", .name = "linemix",
                   .cycles = scaled(30, 5),
                   .hold_us = order_hold_us(), .permits = 1,
                   .groups = mix,
                   .ngroups = (int)(sizeof(mix) / sizeof(mix[0]))};

    (void)state;
    run_cycles(&r);
    check_run(&r, "lock, processes, threads and requests");
    free_cycles(&r);
}

/* 32 processes on a semaphore of `permits`, each taking one permit 20
 * times: never more than `permits` inside, every process served, the
 * waits within the line's bound, and every permit back at the end. */
static void
semaphore_run(const char *kind, const char *name, int permits)
{
    cycle_run r = {.kind = kind, .name = name, .cycles = scaled(20, 4),
                   .hold_us = order_hold_us(), .permits = permits,
                   .groups = one_each,
                   .ngroups = scaled(32, 4)};
    char scenario[64];
    int64_t left = -1;

    if (strcmp(kind, "sem") == 0) {
        cr_semaphore *s;

        assert_int_equal(cr_semaphore_new(test_client, name, &s), CR_OK);
        assert_int_equal(cr_semaphore_try_set_permits(s, permits, 0, NULL),
                         CR_OK);
        run_cycles(&r);
        assert_int_equal(cr_semaphore_available_permits(s, &left), CR_OK);
        cr_semaphore_free(s);
    } else {
        cr_permit_semaphore *s;

        assert_int_equal(cr_permit_semaphore_new(test_client, name, &s),
                         CR_OK);
        assert_int_equal(cr_permit_semaphore_try_set_permits(s, permits,
                                                             NULL),
                         CR_OK);
        run_cycles(&r);
        assert_int_equal(cr_permit_semaphore_available_permits(s, &left),
                         CR_OK);
        cr_permit_semaphore_free(s);
    }
    snprintf(scenario, sizeof(scenario), "%s of %d, %d processes", kind,
             permits, r.ngroups);
    check_run(&r, scenario);
    assert_int_equal(left, permits);
    free_cycles(&r);
}

static void
test_line_semaphore_of_1_never_over_issues_to_32_processes(void **state)
{
    (void)state;
    semaphore_run("sem", "sem1", 1);
}

static void
test_line_semaphore_of_2_never_over_issues_to_32_processes(void **state)
{
    (void)state;
    semaphore_run("sem", "sem2", 2);
}

static void
test_line_semaphore_of_8_never_over_issues_to_32_processes(void **state)
{
    (void)state;
    semaphore_run("sem", "sem8", 8);
}

static void
test_line_expirable_semaphore_of_2_never_over_issues_to_32_processes(
    void **state)
{
    (void)state;
    semaphore_run("permit", "psem2", 2);
}

/* The start of the two tests below: the test's client (turn TURN_MS)
 * holds lock `name`; three workers p[0..2] (turn TURN_MS) wait in line in
 * that order. Returns the margin a hand-over may take beyond a turn here:
 * a message, a wake-up and two round trips, from round trips measured
 * now, and room for a loaded machine's scheduling. */
static int64_t
three_in_line(cr_client *c, cr_lock *l, const char *name, proc *p)
{
    int i;

    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    for (i = 0; i < 3; i++) {
        proc_start(&p[i], "lock", name, TURN_MS);
        proc_say(&p[i], "L -1\n");
        await_in_line(name, p[i].entry);
    }
    assert_true(ticket_of(name, p[0].entry) < ticket_of(name, p[1].entry));
    assert_true(ticket_of(name, p[1].entry) < ticket_of(name, p[2].entry));
    return slow(200 + 20 * round_trip_ms(c));
}

/* Releases l at a time it returns (CLOCK_MONOTONIC microseconds, taken
 * before the call). */
static int64_t
release_now(cr_lock *l)
{
    int64_t at = now_us();

    assert_int_equal(cr_lock_unlock(l), CR_OK);
    return at;
}

/* Waits for worker p's "L" answer: the lock taken; returns when. */
static int64_t
taken_by(proc *p, int64_t timeout_ms)
{
    cr_status rc;
    int64_t us = 0;

    assert_true(proc_answer(p, 'L', &rc, &us, timeout_ms));
    assert_int_equal(rc, CR_OK);
    return us;
}

/* Releases l, whose head in line, p[0], cannot take its turn (it was
 * killed or stopped): the second, p[1], takes the lock once that turn
 * ends (its watch), never before, and within the turn and `margin`; the
 * head's entry is gone then. */
static void
next_takes_after_the_turn(cr_lock *l, const char *name, proc *p,
                          int64_t margin)
{
    int64_t released = release_now(l), second = taken_by(&p[1], slow(5000));

    fprintf(stderr, "%s head: the next took the lock %lld ms after the "
                    "release (turn %d ms, margin %lld ms)\n",
            name, (long long)((second - released) / 1000), TURN_MS,
            (long long)margin);
    assert_true(second - released >= (TURN_MS - 5) * 1000);
    assert_true(second - released <= (TURN_MS + margin) * 1000);
    assert_int_equal(ticket_of(name, p[0].entry), -1);
}

/* The head of the line is stopped (SIGSTOP) while its turn runs: the next
 * takes the lock once that turn ends (its watch), within the turn and a
 * hand-over's margin, never before. Continued, the stopped one has lost
 * its place: it goes behind the third, and takes the lock after it,
 * without overlap. */
static void
test_line_stopped_head_delays_the_next_by_its_turn_and_loses_its_place(
    void **state)
{
    cr_client *c = line_client(TURN_MS, 30000);
    cr_lock *l;
    proc p[3];
    int64_t margin, second_out, third, third_out, first;

    (void)state;
    assert_int_equal(cr_lock_new(c, "stopped", &l), CR_OK);
    margin = three_in_line(c, l, "stopped", p);
    proc_stop(&p[0]);
    next_takes_after_the_turn(l, "stopped", p, margin);
    assert_int_equal(kill(p[0].pid, SIGCONT), 0);
    /* Continued, it attempts (its turn's message waits for it), finds the
     * lock held, and goes in line again: behind the third. */
    await_in_line("stopped", p[0].entry);
    assert_true(ticket_of("stopped", p[0].entry) >
                ticket_of("stopped", p[2].entry));
    second_out = proc_release(&p[1]);
    third = taken_by(&p[2], slow(5000));
    assert_true(third > second_out);
    third_out = proc_release(&p[2]);
    first = taken_by(&p[0], slow(5000));
    assert_true(first > third_out);
    proc_release(&p[0]);
    for (int i = 0; i < 3; i++)
        proc_end(&p[i], false);
    cr_lock_free(l);
    cr_client_free(c);
}

/* The head of the line is killed while its turn runs: the next takes the
 * lock once that turn ends, within the turn and a hand-over's margin;
 * the dead one's entry goes, and the third follows the second at once. */
static void
test_line_killed_head_delays_the_next_by_its_turn_at_most(void **state)
{
    cr_client *c = line_client(TURN_MS, 30000);
    cr_lock *l;
    proc p[3];
    int64_t margin, second_out, third;

    (void)state;
    assert_int_equal(cr_lock_new(c, "killed", &l), CR_OK);
    margin = three_in_line(c, l, "killed", p);
    proc_end(&p[0], true);
    next_takes_after_the_turn(l, "killed", p, margin);
    second_out = proc_release(&p[1]);
    third = taken_by(&p[2], slow(5000));
    assert_true(third > second_out);
    /* No turn of a dead waiter before it: a hand-over, not a turn. */
    assert_true(third - second_out <= margin * 1000);
    proc_release(&p[2]);
    proc_end(&p[1], false);
    proc_end(&p[2], false);
    cr_lock_free(l);
    cr_client_free(c);
}

/* Readers of their own clients that take read holds of HOLD_MS back to
 * back on one read/write lock, staggered so that a read hold is always
 * there, until told to stop; and what they saw. */
#define READERS 3
#define READ_HOLD_MS 30

typedef struct readers {
    cr_client *client[READERS];
    cr_rwlock *rw[READERS];
    pthread_t thread[READERS];
    atomic_bool stop;
    atomic_int inside;  /* read holders now */
    atomic_int holds;   /* read holds taken */
    atomic_int failures;
    atomic_bool writer_in;
    atomic_int overlaps; /* read holds taken while the writer held */
} readers;

typedef struct reader_arg {
    readers *r;
    int i;
} reader_arg;

/* Thread body of a reader: read holds until told to stop; returns
 * NULL. */
static void *
reader_run(void *arg)
{
    reader_arg *a = arg;
    readers *r = a->r;
    cr_lock *l = cr_rwlock_read_lock(r->rw[a->i]);

    usleep((useconds_t)(a->i * READ_HOLD_MS * 1000 / READERS));
    while (!atomic_load(&r->stop)) {
        if (cr_lock_try_lock(l, slow(10000), CR_LEASE_WATCHDOG) != CR_OK) {
            atomic_fetch_add(&r->failures, 1);
            continue;
        }
        atomic_fetch_add(&r->inside, 1);
        if (atomic_load(&r->writer_in))
            atomic_fetch_add(&r->overlaps, 1);
        atomic_fetch_add(&r->holds, 1);
        usleep(READ_HOLD_MS * 1000);
        atomic_fetch_sub(&r->inside, 1);
        if (cr_lock_unlock(l) != CR_OK)
            atomic_fetch_add(&r->failures, 1);
    }
    return NULL;
}

/* cr_test_wait_until condition: the readers took `n` holds. */
typedef struct holds_wanted {
    readers *r;
    int n;
} holds_wanted;

static bool
readers_took(void *arg)
{
    holds_wanted *h = arg;

    return atomic_load(&h->r->holds) >= h->n;
}

/* A writer that waits while credisson readers keep re-taking read holds
 * gets the lock once the read holds before it end: readers behind it in
 * line wait. Without writers first it would never get in (a read hold is
 * always there). */
static void
test_line_writer_gets_in_while_readers_keep_reading(void **state)
{
    static readers r;
    reader_arg args[READERS];
    cr_client *wc = line_client(0, 30000);
    cr_rwlock *wrw;
    cr_lock *w;
    holds_wanted warm = {&r, 2 * READERS};
    int64_t t0, waited, bound;
    int i, before;

    (void)state;
    memset(&r, 0, sizeof(r));
    for (i = 0; i < READERS; i++) {
        r.client[i] = line_client(0, 30000);
        assert_int_equal(cr_rwlock_new(r.client[i], "prefer", &r.rw[i]),
                         CR_OK);
        args[i] = (reader_arg){&r, i};
        assert_int_equal(pthread_create(&r.thread[i], NULL, reader_run,
                                        &args[i]), 0);
    }
    assert_int_equal(cr_rwlock_new(wc, "prefer", &wrw), CR_OK);
    w = cr_rwlock_write_lock(wrw);
    assert_true(cr_test_wait_until(readers_took, &warm, slow(5000)));
    /* The read holds there now end within READ_HOLD_MS; those that come
     * behind the writer wait. A turn for a reader that dawdles, and a
     * margin. */
    bound = slow(READ_HOLD_MS + 250 + 500);
    t0 = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(w, slow(5000), CR_LEASE_WATCHDOG),
                     CR_OK);
    waited = cr_test_now_ms() - t0;
    atomic_store(&r.writer_in, true);
    assert_int_equal(atomic_load(&r.inside), 0);
    before = atomic_load(&r.holds);
    usleep(2 * READ_HOLD_MS * 1000);
    /* No reader came in while it wrote. */
    assert_int_equal(atomic_load(&r.holds), before);
    atomic_store(&r.writer_in, false);
    assert_int_equal(cr_lock_unlock(w), CR_OK);
    fprintf(stderr, "writer waited %lld ms among readers (bound %lld)\n",
            (long long)waited, (long long)bound);
    assert_true(waited <= bound);
    /* The readers go on after it. */
    warm.n = atomic_load(&r.holds) + READERS;
    assert_true(cr_test_wait_until(readers_took, &warm, slow(5000)));
    atomic_store(&r.stop, true);
    for (i = 0; i < READERS; i++) {
        pthread_join(r.thread[i], NULL);
        cr_rwlock_free(r.rw[i]);
        cr_client_free(r.client[i]);
    }
    assert_int_equal(atomic_load(&r.failures), 0);
    assert_int_equal(atomic_load(&r.overlaps), 0);
    cr_rwlock_free(wrw);
    cr_client_free(wc);
}

/* A thread that takes one side of a read/write lock with a wait on a
 * client of its own, and keeps it until the test takes it back. */
typedef struct taker {
    cr_lock *lock;
    int64_t wait_ms;
    cr_status rc;
    int64_t at;  /* when the call returned (ms) */
    int64_t tid; /* the thread's id, for the unlock */
    pthread_t thread;
} taker;

/* Thread body of a taker: its call; returns NULL. */
static void *
taker_run(void *arg)
{
    taker *t = arg;

    t->tid = cr_thread_id();
    t->rc = cr_lock_try_lock(t->lock, t->wait_ms, CR_LEASE_WATCHDOG);
    t->at = cr_test_now_ms();
    return NULL;
}

/* Starts taker t on lock l with a wait of wait_ms. */
static void
taker_start(taker *t, cr_lock *l, int64_t wait_ms)
{
    memset(t, 0, sizeof(*t));
    t->lock = l;
    t->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&t->thread, NULL, taker_run, t), 0);
}

/* While a writer waits in line behind a read hold, the holder's reentrant
 * read comes in at once (it would never come if it waited for the
 * writer, which waits for it); a new reader does not (the writer is
 * first), and leaves no entry behind. */
static void
test_line_reentrant_read_is_not_held_up_by_a_waiting_writer(void **state)
{
    cr_client *a = line_client(0, 30000), *b = line_client(0, 30000),
              *n = line_client(0, 30000);
    cr_rwlock *ra, *rb, *rn;
    taker writer;
    int64_t t0;

    (void)state;
    assert_int_equal(cr_rwlock_new(a, "reenter", &ra), CR_OK);
    assert_int_equal(cr_rwlock_new(b, "reenter", &rb), CR_OK);
    assert_int_equal(cr_rwlock_new(n, "reenter", &rn), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_read_lock(ra), CR_LEASE_WATCHDOG),
                     CR_OK);
    taker_start(&writer, cr_rwlock_write_lock(rb), slow(10000));
    assert_true(cr_test_wait_until(line_reaches, &(line_of){"reenter", 1},
                                   slow(5000)));
    t0 = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(cr_rwlock_read_lock(ra), slow(3000),
                                      CR_LEASE_WATCHDOG), CR_OK);
    assert_true(cr_test_now_ms() - t0 < slow(500));
    /* Writers first: a new reader is refused, without an entry. */
    assert_int_equal(cr_lock_try_lock(cr_rwlock_read_lock(rn), 0,
                                      CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(line_length("reenter"), 1);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(ra)), CR_OK);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(ra)), CR_OK);
    pthread_join(writer.thread, NULL);
    assert_int_equal(writer.rc, CR_OK);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_write_lock(rb), writer.tid),
                     CR_OK);
    cr_rwlock_free(ra);
    cr_rwlock_free(rb);
    cr_rwlock_free(rn);
    cr_client_free(a);
    cr_client_free(b);
    cr_client_free(n);
}

/* While a writer waits in line behind the write holder, the holder's
 * read comes in at once; its write unlock leaves a read hold (a
 * downgrade), which the waiting writer waits for in turn. */
static void
test_line_read_by_the_write_holder_is_not_held_up_by_a_waiting_writer(
    void **state)
{
    cr_client *a = line_client(0, 30000), *b = line_client(0, 30000);
    cr_rwlock *ra, *rb;
    taker writer;
    int64_t t0;

    (void)state;
    assert_int_equal(cr_rwlock_new(a, "holder", &ra), CR_OK);
    assert_int_equal(cr_rwlock_new(b, "holder", &rb), CR_OK);
    assert_int_equal(cr_lock_lock(cr_rwlock_write_lock(ra),
                                  CR_LEASE_WATCHDOG), CR_OK);
    taker_start(&writer, cr_rwlock_write_lock(rb), slow(10000));
    assert_true(cr_test_wait_until(line_reaches, &(line_of){"holder", 1},
                                   slow(5000)));
    t0 = cr_test_now_ms();
    assert_int_equal(cr_lock_try_lock(cr_rwlock_read_lock(ra), slow(3000),
                                      CR_LEASE_WATCHDOG), CR_OK);
    assert_true(cr_test_now_ms() - t0 < slow(500));
    assert_int_equal(cr_lock_unlock(cr_rwlock_write_lock(ra)), CR_OK);
    /* A read hold is left: the writer still waits. */
    usleep(100000);
    assert_int_equal(writer.at, 0);
    assert_int_equal(line_length("holder"), 1);
    assert_int_equal(cr_lock_unlock(cr_rwlock_read_lock(ra)), CR_OK);
    pthread_join(writer.thread, NULL);
    assert_int_equal(writer.rc, CR_OK);
    assert_int_equal(cr_lock_unlock_tid(cr_rwlock_write_lock(rb), writer.tid),
                     CR_OK);
    cr_rwlock_free(ra);
    cr_rwlock_free(rb);
    cr_client_free(a);
    cr_client_free(b);
}

/* Holds taken in run r so far. */
static int
holds_so_far(const cycle_run *r)
{
    int w, n = 0;

    for (w = 0; w < r->workers; w++)
        n += atomic_load(&r->block->cycles_done[w]);
    return n;
}

/* cr_test_wait_until condition: a third of r's holds were taken. */
static bool
a_third_done(void *arg)
{
    const cycle_run *r = arg;

    return holds_so_far(r) >= r->workers * r->cycles / 3;
}

/* Cuts every pub/sub link of every client (the waiters' own channels and
 * the object's) and empties the script cache. */
static void
kill_links_and_flush_scripts(void)
{
    assert_true(redis_ok("CLIENT KILL TYPE pubsub"));
    assert_true(redis_ok("SCRIPT FLUSH"));
}

/* 16 processes wait in line for an object the test holds; every pub/sub
 * link is cut and the script cache flushed, then the object given back;
 * again a third of the way through. Every waiter is still served, within
 * a bound that messages lost with the links allow (a waiter in line looks
 * again at least every third of its waiting lease, 30 s by default), in
 * line's order but for the places the cuts cost, and never more holders
 * than permits. */
static void
links_cut_while_the_line_is_long(const char *kind, const char *name,
                                 int permits)
{
    cycle_run r = {.kind = kind, .name = name, .cycles = 6,
                   .hold_us = 2 * order_hold_us(),
                   .permits = permits, .groups = one_each, .ngroups = 16};
    cr_lock *l = NULL;
    cr_semaphore *s = NULL;
    int64_t t0, left = -1;

    if (strcmp(kind, "lock") == 0) {
        assert_int_equal(cr_lock_new(test_client, name, &l), CR_OK);
        assert_int_equal(cr_lock_lock(l, 30000), CR_OK);
    } else {
        assert_int_equal(cr_semaphore_new(test_client, name, &s), CR_OK);
        assert_int_equal(cr_semaphore_try_set_permits(s, permits, 0, NULL),
                         CR_OK);
        assert_int_equal(cr_semaphore_acquire(s, permits), CR_OK);
    }
    start_cycles(&r);
    assert_true(cr_test_wait_until(line_reaches, &(line_of){name, 16},
                                   slow(10000)));
    kill_links_and_flush_scripts();
    t0 = cr_test_now_ms();
    if (l != NULL)
        assert_int_equal(cr_lock_unlock(l), CR_OK);
    else
        assert_int_equal(cr_semaphore_release(s, permits), CR_OK);
    assert_true(cr_test_wait_until(a_third_done, &r, slow(30000)));
    kill_links_and_flush_scripts();
    /* Lost messages cost a waiter a third of its waiting lease at most
     * (it looks again then), for each of the two cuts. */
    finish_cycles(&r, slow(2 * 30000 / 3 + 5000));
    fprintf(stderr, "%s: served in %lld ms after the links were cut\n",
            name, (long long)(cr_test_now_ms() - t0));
    check_exact(&r, name);
    if (permits == 1) {
        /* Each cut may cost a waiter its place once (its turn's message
         * lost, its turn run out): overtaken by another three times at
         * most. */
        order o = check_line_order(&r, name);

        assert_true(o.most <= 3);
    }
    if (s != NULL) {
        assert_int_equal(cr_semaphore_available_permits(s, &left), CR_OK);
        assert_int_equal(left, permits);
        cr_semaphore_free(s);
    }
    cr_lock_free(l);
    free_cycles(&r);
}

static void
test_line_lock_serves_every_waiter_after_pubsub_links_are_cut_and_scripts_flushed(
    void **state)
{
    (void)state;
    links_cut_while_the_line_is_long("lock", "cutlock", 1);
}

static void
test_line_semaphore_serves_every_waiter_after_pubsub_links_are_cut_and_scripts_flushed(
    void **state)
{
    (void)state;
    links_cut_while_the_line_is_long("sem", "cutsem", 2);
}

/* A try without a wait while a waiter has its turn on a free lock is
 * refused (no barging past the line), and leaves no entry; the waiter
 * then takes the lock. The waiter is stopped during its turn, which the
 * releaser makes long. */
static void
test_line_try_lock_without_a_wait_does_not_barge_past_a_turn(void **state)
{
    cr_client *c = line_client(5000, 30000), *t = line_client(0, 30000);
    cr_lock *l, *tl;
    proc p;

    (void)state;
    assert_int_equal(cr_lock_new(c, "barge", &l), CR_OK);
    assert_int_equal(cr_lock_new(t, "barge", &tl), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    proc_start(&p, "lock", "barge", 0);
    proc_say(&p, "L -1\n");
    await_in_line("barge", p.entry);
    proc_stop(&p);
    /* Its turn (5 s, the releaser's) begins: the lock is free. */
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(redis_int("EXISTS barge"), 0);
    assert_int_equal(cr_lock_try_lock(tl, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(redis_int("EXISTS barge"), 0);
    assert_int_equal(line_length("barge"), 1);
    /* The same through the other client's own line entry: none. */
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    assert_int_equal(line_length("barge"), 1);
    assert_int_equal(kill(p.pid, SIGCONT), 0);
    taken_by(&p, slow(5000));
    proc_release(&p);
    proc_end(&p, false);
    cr_lock_free(tl);
    cr_lock_free(l);
    cr_client_free(t);
    cr_client_free(c);
}

/* The same for a semaphore: a permit released while the first in line is
 * stopped during its turn is not taken by a try without a wait. */
static void
test_line_semaphore_try_without_a_wait_does_not_barge_past_a_turn(
    void **state)
{
    cr_client *c = line_client(5000, 30000), *t = line_client(0, 30000);
    cr_semaphore *s, *ts;
    int64_t left = -1;
    proc p;

    (void)state;
    assert_int_equal(cr_semaphore_new(c, "bargesem", &s), CR_OK);
    assert_int_equal(cr_semaphore_new(t, "bargesem", &ts), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 0, 0, NULL), CR_OK);
    proc_start(&p, "sem", "bargesem", 0);
    proc_say(&p, "L -1\n");
    await_in_line("bargesem", p.entry);
    proc_stop(&p);
    assert_int_equal(cr_semaphore_release(s, 1), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(ts, 1, 0), CR_BUSY);
    assert_int_equal(cr_semaphore_available_permits(ts, &left), CR_OK);
    assert_int_equal(left, 1);
    assert_int_equal(line_length("bargesem"), 1);
    assert_int_equal(kill(p.pid, SIGCONT), 0);
    taken_by(&p, slow(5000));
    assert_int_equal(cr_semaphore_available_permits(ts, &left), CR_OK);
    assert_int_equal(left, 0);
    proc_release(&p);
    proc_end(&p, false);
    cr_semaphore_free(ts);
    cr_semaphore_free(s);
    cr_client_free(t);
    cr_client_free(c);
}

/* A waiter whose wait runs out leaves the line (its entry goes): the one
 * behind it takes the lock at its release at once, not a turn later. The
 * releaser's turns are long, so that a turn given to the one that left
 * would show. */
static void
test_line_waiter_whose_wait_runs_out_leaves_the_line_for_the_next(
    void **state)
{
    cr_client *c = line_client(5000, 30000), *a = line_client(0, 30000),
              *b = line_client(0, 30000);
    cr_lock *l, *la, *lb;
    taker first, second;
    char key[64], state_key[64], gone[160];
    redisReply *r;
    int64_t released;

    (void)state;
    assert_int_equal(cr_lock_new(c, "runout", &l), CR_OK);
    assert_int_equal(cr_lock_new(a, "runout", &la), CR_OK);
    assert_int_equal(cr_lock_new(b, "runout", &lb), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    taker_start(&first, la, slow(600));
    assert_true(cr_test_wait_until(line_reaches, &(line_of){"runout", 1},
                                   slow(5000)));
    line_keys("runout", key, state_key, sizeof(key));
    r = cr_test_redis_cmd(&test_redis, "ZRANGE %s 0 0", key);
    assert_true(r != NULL && r->type == REDIS_REPLY_ARRAY &&
                r->elements == 1);
    snprintf(gone, sizeof(gone), "%s", r->element[0]->str);
    freeReplyObject(r);
    taker_start(&second, lb, CR_WAIT_FOREVER);
    assert_true(cr_test_wait_until(line_reaches, &(line_of){"runout", 2},
                                   slow(5000)));
    pthread_join(first.thread, NULL);
    assert_int_equal(first.rc, CR_BUSY);
    {
        in_line out = {"runout", gone, false};

        assert_true(cr_test_wait_until(in_line_is, &out, slow(2000)));
    }
    assert_int_equal(line_length("runout"), 1);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    pthread_join(second.thread, NULL);
    assert_int_equal(second.rc, CR_OK);
    assert_true(second.at - released < slow(1000));
    assert_int_equal(cr_lock_unlock_tid(lb, second.tid), CR_OK);
    cr_lock_free(l);
    cr_lock_free(la);
    cr_lock_free(lb);
    cr_client_free(c);
    cr_client_free(a);
    cr_client_free(b);
}

/* While waiters are in line, both of the line's keys have a time to live
 * (the waiting lease and a turn: a crashed line cleans itself up); once
 * nobody waits they are gone. */
static void
test_line_keys_have_a_ttl_while_waiters_wait_and_go_with_the_last(
    void **state)
{
    cr_client *c = line_client(0, 10000), *w[3];
    cr_lock *l, *wl[3];
    taker t[3];
    char key[64], state_key[64];
    long long ttl;
    int i;

    (void)state;
    line_keys("ttl", key, state_key, sizeof(key));
    assert_int_equal(cr_lock_new(c, "ttl", &l), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    for (i = 0; i < 3; i++) {
        w[i] = line_client(0, 10000);
        assert_int_equal(cr_lock_new(w[i], "ttl", &wl[i]), CR_OK);
        taker_start(&t[i], wl[i], slow(20000));
    }
    assert_true(cr_test_wait_until(line_reaches, &(line_of){"ttl", 3},
                                   slow(5000)));
    ttl = redis_int("PTTL %s", key);
    assert_true(ttl > 0 && ttl <= 10000 + DEFAULT_TURN_MS);
    ttl = redis_int("PTTL %s", state_key);
    assert_true(ttl > 0 && ttl <= 10000 + DEFAULT_TURN_MS);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    for (i = 0; i < 3; i++) {
        pthread_join(t[i].thread, NULL);
        assert_int_equal(t[i].rc, CR_OK);
        assert_int_equal(cr_lock_unlock_tid(wl[i], t[i].tid), CR_OK);
    }
    /* The last took the lock out of line: the keys went with it. */
    assert_int_equal(redis_int("EXISTS %s", key), 0);
    assert_int_equal(redis_int("EXISTS %s", state_key), 0);
    /* And with a last waiter whose wait ran out. */
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(wl[0], slow(300), CR_LEASE_WATCHDOG),
                     CR_BUSY);
    assert_true(cr_test_wait_until(key_gone, key, slow(2000)));
    assert_true(cr_test_wait_until(key_gone, state_key, slow(2000)));
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    for (i = 0; i < 3; i++) {
        cr_lock_free(wl[i]);
        cr_client_free(w[i]);
    }
    cr_lock_free(l);
    cr_client_free(c);
}

/* Whether entry `entry` of the line of `name` has a turn now (its state's
 * second field). */
static bool
turn_of(const char *name, const char *entry)
{
    char key[256], state[256];
    redisReply *r;
    long long deadline;
    int turn = 0;

    line_keys(name, key, state, sizeof(key));
    r = cr_test_redis_cmd(&test_redis, "HGET %s e:%s", state, entry);
    if (r != NULL && r->type == REDIS_REPLY_STRING &&
        sscanf(r->str, "%lld %d", &deadline, &turn) != 2)
        turn = 0;
    if (r != NULL)
        freeReplyObject(r);
    return turn == 1;
}

/* cr_test_wait_until condition on an `in_line`: the entry has a turn. */
static bool
has_a_turn(void *arg)
{
    const in_line *l = arg;

    return turn_of(l->name, l->entry);
}

/* A waiter that comes for its turn after it ran out, before anyone else
 * looked at the line, loses its place: it waits again, in line behind
 * the others, and is given a turn when they are through, like any waiter
 * (not a third of its waiting lease later, when it looks again by
 * itself). The first two of three waiters are stopped during the first's
 * turn; the first is continued first; the second holds the lock for two
 * turns, long enough for the first to find it held and go to sleep. */
static void
test_line_waiter_late_for_its_turn_goes_behind_the_others_and_is_served(
    void **state)
{
    cr_client *c = line_client(TURN_MS, 30000);
    cr_lock *l;
    proc p[3];
    in_line second_turn;
    int64_t margin, out, first;

    (void)state;
    assert_int_equal(cr_lock_new(c, "late", &l), CR_OK);
    margin = three_in_line(c, l, "late", p);
    proc_stop(&p[0]);
    proc_stop(&p[1]);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    usleep((TURN_MS + 50) * 1000);
    /* The first comes late: its attempt passes the turn to the second. */
    assert_int_equal(kill(p[0].pid, SIGCONT), 0);
    second_turn = (in_line){"late", p[1].entry, true};
    assert_true(cr_test_wait_until(has_a_turn, &second_turn, slow(5000)));
    assert_int_equal(kill(p[1].pid, SIGCONT), 0);
    taken_by(&p[1], slow(5000));
    /* The first is in line again, behind the third. */
    await_in_line("late", p[0].entry);
    assert_true(ticket_of("late", p[0].entry) >
                ticket_of("late", p[2].entry));
    usleep(2 * TURN_MS * 1000);
    proc_release(&p[1]);
    taken_by(&p[2], slow(5000));
    out = proc_release(&p[2]);
    first = taken_by(&p[0], slow(5000));
    fprintf(stderr, "late waiter: took the lock %lld ms after the release\n",
            (long long)((first - out) / 1000));
    assert_true(first > out);
    assert_true(first - out <= margin * 1000);
    proc_release(&p[0]);
    for (int i = 0; i < 3; i++)
        proc_end(&p[i], false);
    cr_lock_free(l);
    cr_client_free(c);
}

/* cr_test_wait_until condition on a `quiet`: neither client sent a
 * command for 300 ms (a waiter first in line has subscribed to the
 * lock's channel well before: CR__LINE_LISTEN_AFTER_MS). */
typedef struct quiet {
    cr_client *c[2];
    uint64_t seen[2];
    int64_t since;
} quiet;

static bool
clients_quiet(void *arg)
{
    quiet *q = arg;
    bool same = true;
    int i;

    for (i = 0; i < 2; i++) {
        uint64_t n = commands_of(q->c[i]);

        same = same && n == q->seen[i];
        q->seen[i] = n;
    }
    if (!same || q->since == 0)
        q->since = cr_test_now_ms();
    return cr_test_now_ms() - q->since >= 300;
}

/* Clients with different watchdog timeouts (waiting leases) share a line:
 * a client with a short one that only looks (a try without a wait) must
 * not shorten the keys' time to live below the leases of the entries in
 * them, or the line goes while its waiters wait, and those not listening
 * on the lock's channel sleep until they look again by themselves (a
 * third of their lease: 10 s here) though the lock is free. */
static void
test_line_keys_outlive_the_waiting_leases_of_their_entries(void **state)
{
    cr_client *c = line_client(0, 30000), *quick = line_client(0, 100),
              *w[2];
    cr_lock *l, *ql, *wl[2];
    taker t[2];
    char key[64], state_key[64];
    int64_t released;
    int i;

    (void)state;
    line_keys("mixed", key, state_key, sizeof(key));
    assert_int_equal(cr_lock_new(c, "mixed", &l), CR_OK);
    assert_int_equal(cr_lock_new(quick, "mixed", &ql), CR_OK);
    assert_int_equal(cr_lock_lock(l, CR_LEASE_WATCHDOG), CR_OK);
    for (i = 0; i < 2; i++) {
        w[i] = line_client(0, 30000);
        assert_int_equal(cr_lock_new(w[i], "mixed", &wl[i]), CR_OK);
        taker_start(&t[i], wl[i], slow(30000));
        assert_true(cr_test_wait_until(line_reaches,
                                       &(line_of){"mixed", i + 1},
                                       slow(5000)));
    }
    /* Both asleep (the first listening on the lock's channel), the quick
     * client looks last. */
    {
        quiet q = {{w[0], w[1]}, {0, 0}, 0};

        assert_true(cr_test_wait_until(clients_quiet, &q, slow(5000)));
    }
    assert_int_equal(cr_lock_try_lock(ql, 0, CR_LEASE_WATCHDOG), CR_BUSY);
    /* The entries' leases (30 s, renewed every 10 s) are the keys'. */
    assert_true(redis_int("PTTL %s", key) > 10000);
    assert_true(redis_int("PTTL %s", state_key) > 10000);
    /* Longer than the quick client's lease and a turn: the waiters are
     * served as soon as the lock is free all the same. */
    usleep(500000);
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    for (i = 0; i < 2; i++) {
        pthread_join(t[i].thread, NULL);
        assert_int_equal(t[i].rc, CR_OK);
        assert_int_equal(cr_lock_unlock_tid(wl[i], t[i].tid), CR_OK);
    }
    fprintf(stderr, "mixed leases: both served %lld ms after the release\n",
            (long long)(cr_test_now_ms() - released));
    assert_true(cr_test_now_ms() - released < slow(2000));
    for (i = 0; i < 2; i++) {
        cr_lock_free(wl[i]);
        cr_client_free(w[i]);
    }
    cr_lock_free(ql);
    cr_lock_free(l);
    cr_client_free(quick);
    cr_client_free(c);
}

/* A thread that takes permits of a semaphore with a wait on a client of
 * its own. */
typedef struct permits_taker {
    cr_semaphore *sem;
    int64_t permits, wait_ms;
    cr_status rc;
    int64_t at; /* when the call returned (ms) */
    pthread_t thread;
} permits_taker;

/* Thread body of a permits_taker: its call; returns NULL. */
static void *
permits_taker_run(void *arg)
{
    permits_taker *t = arg;

    t->rc = cr_semaphore_try_acquire(t->sem, t->permits, t->wait_ms);
    t->at = cr_test_now_ms();
    return NULL;
}

/* acquire(n > 1) at the head of a semaphore's line is served before the
 * smaller requests behind it (strict order): a permit that would do for
 * them waits for it, and a try does not take it either. */
static void
test_line_semaphore_serves_a_large_request_at_the_head_first(void **state)
{
    cr_client *a = line_client(0, 30000), *b = line_client(0, 30000);
    cr_semaphore *s, *sa, *sb;
    permits_taker ta = {0}, tb = {0};
    int64_t left = -1;

    (void)state;
    assert_int_equal(cr_semaphore_new(test_client, "strict", &s), CR_OK);
    assert_int_equal(cr_semaphore_new(a, "strict", &sa), CR_OK);
    assert_int_equal(cr_semaphore_new(b, "strict", &sb), CR_OK);
    assert_int_equal(cr_semaphore_try_set_permits(s, 0, 0, NULL), CR_OK);
    ta = (permits_taker){.sem = sa, .permits = 3, .wait_ms = slow(10000)};
    assert_int_equal(pthread_create(&ta.thread, NULL, permits_taker_run, &ta),
                     0);
    assert_true(cr_test_wait_until(line_reaches, &(line_of){"strict", 1},
                                   slow(5000)));
    tb = (permits_taker){.sem = sb, .permits = 1, .wait_ms = slow(10000)};
    assert_int_equal(pthread_create(&tb.thread, NULL, permits_taker_run, &tb),
                     0);
    assert_true(cr_test_wait_until(line_reaches, &(line_of){"strict", 2},
                                   slow(5000)));
    assert_int_equal(cr_semaphore_release(s, 1), CR_OK);
    assert_int_equal(cr_semaphore_try_acquire(s, 1, 0), CR_BUSY);
    assert_int_equal(cr_semaphore_available_permits(s, &left), CR_OK);
    assert_int_equal(left, 1);
    assert_int_equal(cr_semaphore_release(s, 2), CR_OK);
    pthread_join(ta.thread, NULL);
    assert_int_equal(ta.rc, CR_OK);
    assert_int_equal(cr_semaphore_available_permits(s, &left), CR_OK);
    assert_int_equal(left, 0);
    assert_int_equal(line_length("strict"), 1);
    assert_int_equal(cr_semaphore_release(s, 1), CR_OK);
    pthread_join(tb.thread, NULL);
    assert_int_equal(tb.rc, CR_OK);
    assert_true(ta.at <= tb.at);
    cr_semaphore_free(sa);
    cr_semaphore_free(sb);
    cr_semaphore_free(s);
    cr_client_free(a);
    cr_client_free(b);
}

/* An expirable semaphore's permit that runs out comes back without a
 * message: the first in line looks again when it expires, and takes it
 * then, neither before nor much later. */
static void
test_line_first_in_line_takes_an_expired_permit_when_it_expires(
    void **state)
{
    cr_client *a = line_client(0, 30000);
    cr_permit_semaphore *s, *sa;
    char id[CR_PERMIT_ID_LEN + 1], mine[CR_PERMIT_ID_LEN + 1];
    int64_t margin = slow(200 + 20 * round_trip_ms(a)), taken, waited;

    (void)state;
    assert_int_equal(cr_permit_semaphore_new(test_client, "expire", &s),
                     CR_OK);
    assert_int_equal(cr_permit_semaphore_new(a, "expire", &sa), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_set_permits(s, 1, NULL), CR_OK);
    assert_int_equal(cr_permit_semaphore_try_acquire(s, 0, 600, id), CR_OK);
    taken = cr_test_now_ms();
    assert_int_equal(cr_permit_semaphore_try_acquire(sa, slow(5000),
                                                     CR_LEASE_NONE, mine),
                     CR_OK);
    waited = cr_test_now_ms() - taken;
    fprintf(stderr, "expired permit taken %lld ms after it was issued "
                    "(lease 600 ms, margin %lld ms)\n",
            (long long)waited, (long long)margin);
    assert_true(waited >= 600 - 20);
    assert_true(waited <= 600 + margin);
    assert_int_equal(cr_permit_semaphore_release(sa, mine), CR_OK);
    cr_permit_semaphore_free(sa);
    cr_permit_semaphore_free(s);
    cr_client_free(a);
}

#define T(name) cmocka_unit_test_setup_teardown(name, line_up, line_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_line_32_processes_share_one_lock_in_order),
        T(test_line_threads_and_async_requests_share_a_lock_with_processes_in_order),
        T(test_line_semaphore_of_1_never_over_issues_to_32_processes),
        T(test_line_semaphore_of_2_never_over_issues_to_32_processes),
        T(test_line_semaphore_of_8_never_over_issues_to_32_processes),
        T(test_line_expirable_semaphore_of_2_never_over_issues_to_32_processes),
        T(test_line_stopped_head_delays_the_next_by_its_turn_and_loses_its_place),
        T(test_line_killed_head_delays_the_next_by_its_turn_at_most),
        T(test_line_writer_gets_in_while_readers_keep_reading),
        T(test_line_reentrant_read_is_not_held_up_by_a_waiting_writer),
        T(test_line_read_by_the_write_holder_is_not_held_up_by_a_waiting_writer),
        T(test_line_lock_serves_every_waiter_after_pubsub_links_are_cut_and_scripts_flushed),
        T(test_line_semaphore_serves_every_waiter_after_pubsub_links_are_cut_and_scripts_flushed),
        T(test_line_try_lock_without_a_wait_does_not_barge_past_a_turn),
        T(test_line_semaphore_try_without_a_wait_does_not_barge_past_a_turn),
        T(test_line_waiter_whose_wait_runs_out_leaves_the_line_for_the_next),
        T(test_line_keys_have_a_ttl_while_waiters_wait_and_go_with_the_last),
        T(test_line_waiter_late_for_its_turn_goes_behind_the_others_and_is_served),
        T(test_line_keys_outlive_the_waiting_leases_of_their_entries),
        T(test_line_semaphore_serves_a_large_request_at_the_head_first),
        T(test_line_first_in_line_takes_an_expired_permit_when_it_expires),
    };

    /* CR_TEST_FILTER=pattern runs only the matching tests. */
    if (getenv("CR_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("CR_TEST_FILTER"));
    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
