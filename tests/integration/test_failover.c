/* SPDX-License-Identifier: MIT */
/*
 * Following Sentinel through graceful failovers (SENTINEL FAILOVER): one
 * master, one replica and three sentinels on free 127.0.0.1 ports, all
 * real processes. The clients learn the switch from the sentinels (their
 * +switch-master message, or asking every second) and then leave the old
 * master, which stays a master for a while after a graceful failover:
 * contenders in other processes keep exclusion across the switch and get
 * in on the new master soon after it; nothing of a client reaches the old
 * master once it knows; a hold the new master lacks is reported lost
 * within a poll period and a command of the switch; an idle client learns
 * of the switch within a poll period of the sentinels, and a client with
 * an event hook hears it as one CR_EVENT_FAILOVER.
 *
 * A second group starts sentinels of their own with credentials (a
 * password, an ACL user) and one without, in front of a master with a
 * password, and checks the sentinel credentials of the client options.
 *
 * Between two failovers the fixture makes the old master a replica of the
 * new one itself (the sentinels would do it some ten seconds later), and
 * waits until its link is up and every sentinel knows it as the replica:
 * only then is the next failover sure to find a replica to promote and to
 * promote one that has the data.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "history.h"
#include "lock_common.h"
#include "topology.h" /* TOPOLOGY_POLL_MS, TOPOLOGY_SETTLE_MS */

#define NSENTINELS 3
/* The command timeout of every client of these tests. */
#define CMD_TIMEOUT_MS 1000

/* An ACL user of the sentinels that may not SUBSCRIBE: a client that
 * logs in as it cannot hear +switch-master and learns of a switch by
 * asking. (The sentinels' default user stays as it is.) */
#define NOSUB_USER "nosub"
#define NOSUB_PW "nosub-pw"

/* The two data servers: servers[master_i] is the master. */
static cr_test_redis servers[2];
static int master_i;
static cr_test_redis sentinels[NSENTINELS];
static char url[512];

#define MASTER (&servers[master_i])
#define REPLICA (&servers[1 - master_i])

/* ---------------------------------------------------- looking at servers */

static redisReply *server_cmd(const cr_test_redis *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A command on a fresh connection to `r` (hiredis format); NULL on error. */
static redisReply *
server_cmd(const cr_test_redis *r, const char *fmt, ...)
{
    redisContext *c = cr_test_redis_connect(r);
    redisReply *rep;
    va_list ap;

    if (c == NULL)
        return NULL;
    va_start(ap, fmt);
    rep = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return rep;
}

/* The integer reply of a command on `r`, or -999. */
static long long
server_int(const cr_test_redis *r, const char *what, const char *key)
{
    redisReply *rep = server_cmd(r, "%s %s", what, key);
    long long v = -999;

    if (rep != NULL && rep->type == REDIS_REPLY_INTEGER)
        v = rep->integer;
    if (rep != NULL)
        freeReplyObject(rep);
    return v;
}

/* Whether the text reply `rep` (INFO, CLIENT LIST; freed here) contains
 * `needle`; *count (may be NULL) gets how many times. */
static bool
reply_has(redisReply *rep, const char *needle, int *count)
{
    const char *p;
    int n = 0;

    if (rep != NULL && rep->type == REDIS_REPLY_STRING)
        for (p = rep->str; (p = strstr(p, needle)) != NULL; p++)
            n++;
    if (rep != NULL)
        freeReplyObject(rep);
    if (count != NULL)
        *count = n;
    return n > 0;
}

/* Whether INFO `section` of `r` contains `needle`. */
static bool
info_has(const cr_test_redis *r, const char *section, const char *needle)
{
    return reply_has(server_cmd(r, "INFO %s", section), needle, NULL);
}

/* The port sentinel k reports for mymaster, or -1. */
static int
reported_port(int k)
{
    return cr_test_sentinel_master_port(&sentinels[k], "mymaster");
}

/* cr_test_wait_until condition: every sentinel reports port *arg. */
static bool
all_report(void *arg)
{
    int k;

    for (k = 0; k < NSENTINELS; k++)
        if (reported_port(k) != *(int *)arg)
            return false;
    return true;
}

/* Whether sentinel k knows exactly one replica of mymaster, at `port`,
 * and does not think it is down or unreachable. */
static bool
knows_replica(int k, int port)
{
    redisReply *r = server_cmd(&sentinels[k], "SENTINEL replicas mymaster");
    bool port_ok = false, flags_ok = false;
    size_t i;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_ARRAY) {
        redisReply *e = r->element[0];

        for (i = 0; i + 1 < e->elements; i += 2) {
            const char *f = e->element[i]->str, *v = e->element[i + 1]->str;

            if (f == NULL || v == NULL)
                continue;
            if (strcmp(f, "port") == 0)
                port_ok = atoi(v) == port;
            else if (strcmp(f, "flags") == 0)
                flags_ok = strstr(v, "down") == NULL &&
                           strstr(v, "disconnected") == NULL;
        }
    }
    if (r != NULL)
        freeReplyObject(r);
    return port_ok && flags_ok;
}

/* cr_test_wait_until condition: the deployment is ready for a failover.
 * The replica's link to the master is up and it has everything the master
 * sent; every sentinel reports the master and knows the replica. */
static bool
settled(void *arg)
{
    char link[64];
    int k;

    (void)arg;
    snprintf(link, sizeof(link), "master_port:%d", MASTER->port);
    if (!info_has(REPLICA, "replication", "master_link_status:up") ||
        !info_has(REPLICA, "replication", link) ||
        !info_has(MASTER, "replication", "state=online"))
        return false;
    for (k = 0; k < NSENTINELS; k++)
        if (reported_port(k) != MASTER->port ||
            !knows_replica(k, REPLICA->port))
            return false;
    return true;
}

/* Brings the deployment to a settled state: the master is the server the
 * sentinels report; the other one, if it is still a master (the old one
 * after a graceful failover), is made its replica. */
static int
converge(void)
{
    int port = reported_port(0);
    redisReply *r;

    if (servers[1].port == port)
        master_i = 1;
    else if (servers[0].port == port)
        master_i = 0;
    else
        return -1;
    if (!info_has(REPLICA, "replication", "role:slave")) {
        r = server_cmd(REPLICA, "REPLICAOF 127.0.0.1 %d", MASTER->port);
        if (r == NULL || r->type == REDIS_REPLY_ERROR)
            return -1;
        freeReplyObject(r);
    }
    if (!cr_test_wait_until(settled, NULL, 30000)) {
        fprintf(stderr, "the Sentinel deployment did not settle\n");
        return -1;
    }
    return 0;
}

/* Asks sentinel 0 for a failover (again while it answers that it cannot
 * start one yet) and waits until every sentinel reports the new master;
 * returns when they did (monotonic ms) and makes the new master MASTER. */
static int64_t
fail_over(void)
{
    int64_t deadline = cr_test_now_ms() + slow(10000), reported;
    int new_port = REPLICA->port;

    for (;;) {
        redisReply *r = server_cmd(&sentinels[0], "SENTINEL FAILOVER mymaster");
        bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;

        if (!ok)
            fprintf(stderr, "SENTINEL FAILOVER: %s\n",
                    r != NULL && r->str != NULL ? r->str : "no answer");
        if (r != NULL)
            freeReplyObject(r);
        if (ok)
            break;
        assert_true(cr_test_now_ms() < deadline);
        usleep(100000);
    }
    assert_true(cr_test_wait_until(all_report, &new_port, slow(15000)));
    reported = cr_test_now_ms();
    master_i = 1 - master_i;
    return reported;
}

/* ------------------------------------------------------------- fixtures */

static int
deployment_up(void **state)
{
    const char *args = "--repl-diskless-sync-delay 0 --replica-read-only no";
    char replica_args[160], conf[512];
    size_t off;
    int i, rc;

    (void)state;
    /* The replica is writable: a test removes a key from it alone, so
     * that the promoted replica lacks a hold the old master has. */
    rc = cr_test_redis_start(&servers[0], args);
    if (rc == CR_TEST_SKIP || !cr_test_on_path("redis-sentinel"))
        exit(CR_TEST_SKIP);
    if (rc != 0)
        return -1;
    snprintf(replica_args, sizeof(replica_args), "%s --replicaof 127.0.0.1 %d",
             args, servers[0].port);
    if (cr_test_redis_start(&servers[1], replica_args) != 0)
        return -1;
    master_i = 0;
    snprintf(conf, sizeof(conf),
             "user " NOSUB_USER " on >" NOSUB_PW " ~* &* +@all -subscribe "
             "-psubscribe\n"
             "sentinel monitor mymaster 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds mymaster 1000\n"
             "sentinel failover-timeout mymaster 3000\n"
             "sentinel parallel-syncs mymaster 1\n",
             servers[0].port);
    for (i = 0; i < NSENTINELS; i++)
        if (cr_test_redis_start_conf(&sentinels[i], conf, "--sentinel") != 0)
            return -1;
    off = (size_t)snprintf(url, sizeof(url), "redis-sentinel://");
    for (i = 0; i < NSENTINELS; i++)
        off += (size_t)snprintf(url + off, sizeof(url) - off, "%s127.0.0.1:%d",
                                i > 0 ? "," : "", sentinels[i].port);
    snprintf(url + off, sizeof(url) - off, "/mymaster");
    return converge();
}

static int
deployment_down(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < NSENTINELS; i++)
        cr_test_redis_destroy(&sentinels[i]);
    cr_test_redis_destroy(&servers[0]);
    cr_test_redis_destroy(&servers[1]);
    return 0;
}

/* Per-test setup: a settled deployment and a flushed master. */
static int
settle_up(void **state)
{
    redisReply *r;

    (void)state;
    if (converge() != 0)
        return -1;
    r = server_cmd(MASTER, "FLUSHALL");
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* A client through the sentinels at `sentinel_url`, logging in to them
 * as `sentinel_user` (NULL: no credentials), with event hook `hook` (may
 * be NULL). */
static cr_client *
client_hooked(const char *sentinel_url, const char *sentinel_user,
              const char *sentinel_pw, int64_t watchdog_ms, cr_event_fn hook,
              void *hook_userdata)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = sentinel_url;
    o.event_fn = hook;
    o.event_userdata = hook_userdata;
    o.sentinel_username = sentinel_user;
    o.sentinel_password = sentinel_pw;
    o.lock_watchdog_timeout_ms = watchdog_ms;
    o.command_timeout_ms = CMD_TIMEOUT_MS;
    o.connect_timeout_ms = 500;
    if (cr_client_new(&o, &c) != CR_OK)
        fprintf(stderr, "cr_client_new(%s): %s\n", sentinel_url,
                cr_last_error());
    return c;
}

/* A client through the sentinels at `sentinel_url`, logging in to them
 * as `sentinel_user` (NULL: no credentials). */
static cr_client *
client_as(const char *sentinel_url, const char *sentinel_user,
          const char *sentinel_pw, int64_t watchdog_ms)
{
    return client_hooked(sentinel_url, sentinel_user, sentinel_pw,
                         watchdog_ms, NULL, NULL);
}

/* A client through the sentinels at `sentinel_url`. */
static cr_client *
client_at(const char *sentinel_url, int64_t watchdog_ms)
{
    return client_as(sentinel_url, NULL, NULL, watchdog_ms);
}

/* Master switches client `c` has followed. */
static uint64_t
failovers_of(cr_client *c)
{
    cr_client_stats st = CR_CLIENT_STATS_INIT;

    return cr_client_stats_get(c, &st) == CR_OK ? st.failovers : 0;
}

static bool
has_followed(void *arg)
{
    return failovers_of(arg) >= 1;
}

/* A lost callback that keeps the time it came (monotonic ms). */
typedef struct lost_clock {
    atomic_llong at_ms;
} lost_clock;

static void
clock_lost(void *userdata, const char *name, int64_t thread_id)
{
    lost_clock *l = userdata;

    (void)name;
    (void)thread_id;
    atomic_store(&l->at_ms, (long long)cr_test_now_ms());
}

static bool
clock_rang(void *arg)
{
    return atomic_load(&((lost_clock *)arg)->at_ms) != 0;
}

/* ------------------------------------------------------ worker processes */

#define MAX_PROCS 8

/* A failover_worker and what it said so far. */
typedef struct proc {
    pid_t pid;
    int to, from;
    char buf[256];
    size_t len;
    bool ready, eof, holding;
    int failovers, lost, errors;
    int unlocked; /* the status its bridge unlock returned; -1 before */
} proc;

static proc procs[MAX_PROCS];
static int nprocs;

/* Starts failover_worker on lock `name`; *index is its worker number in
 * the history. */
static proc *
worker_start(const char *name, int64_t lease_ms, long hold_ms, cr_hist *h,
             int index, int64_t watchdog_ms)
{
    char lease[24], hold[24], fd[24], idx[24], wd[24];
    const char *args[] = {url, name, lease, hold, fd, idx, wd, NULL};
    proc *p;

    assert_true(nprocs < MAX_PROCS);
    p = &procs[nprocs++];
    memset(p, 0, sizeof(*p));
    p->unlocked = -1;
    snprintf(lease, sizeof(lease), "%lld", (long long)lease_ms);
    snprintf(hold, sizeof(hold), "%ld", hold_ms);
    snprintf(fd, sizeof(fd), "%d", cr_hist_fd(h));
    snprintf(idx, sizeof(idx), "%d", index);
    snprintf(wd, sizeof(wd), "%lld", (long long)watchdog_ms);
    p->pid = cr_test_spawn_piped("failover_worker", args, &p->to, &p->from);
    assert_true(p->pid > 0);
    fcntl(p->from, F_SETFL, O_NONBLOCK);
    return p;
}

/* Reads what every worker has written so far and notes its lines. */
static void
pump(void)
{
    int i;

    for (i = 0; i < nprocs; i++) {
        proc *p = &procs[i];
        ssize_t n = -1;
        char *nl;

        while (!p->eof &&
               (n = read(p->from, p->buf + p->len, sizeof(p->buf) - 1 - p->len)) != 0) {
            if (n < 0)
                break;
            p->len += (size_t)n;
            p->buf[p->len] = '\0';
            while ((nl = strchr(p->buf, '\n')) != NULL) {
                *nl = '\0';
                if (p->buf[0] == 'R')
                    p->ready = true;
                else if (p->buf[0] == 'F')
                    p->failovers = atoi(p->buf + 2);
                else if (p->buf[0] == 'X')
                    p->lost++;
                else if (p->buf[0] == 'E')
                    p->errors++;
                else if (p->buf[0] == 'L')
                    p->holding = true;
                else if (p->buf[0] == 'U')
                    p->unlocked = atoi(p->buf + 2);
                p->len -= (size_t)(nl + 1 - p->buf);
                memmove(p->buf, nl + 1, p->len + 1);
            }
        }
        if (n == 0)
            p->eof = true;
    }
}

/* cr_test_wait_until condition: workers [from, to) are ready. */
typedef struct range {
    int from, to;
} range;

static bool
ready(void *arg)
{
    range *r = arg;
    int i;

    pump();
    for (i = r->from; i < r->to; i++)
        if (!procs[i].ready)
            return false;
    return true;
}

/* cr_test_wait_until condition: the bridge worker `arg` holds the lock. */
static bool
holding(void *arg)
{
    pump();
    return ((proc *)arg)->holding;
}

/* cr_test_wait_until condition: the bridge worker `arg` has unlocked. */
static bool
unlocked(void *arg)
{
    pump();
    return ((proc *)arg)->unlocked >= 0;
}

/* cr_test_wait_until condition: workers [from, to) followed a switch. */
static bool
all_followed(void *arg)
{
    range *r = arg;
    int i;

    pump();
    for (i = r->from; i < r->to; i++)
        if (procs[i].failovers < 1)
            return false;
    return true;
}

/* Tells every worker to stop, waits until all are done in the history,
 * and reaps them. */
static void
workers_stop(cr_hist *h)
{
    int i;

    for (i = 0; i < nprocs; i++)
        if (write(procs[i].to, "Q\n", 2) != 2)
            fprintf(stderr, "worker %d: cannot tell it to stop\n", i);
    assert_true(cr_hist_wait_done(h, slow(40000)));
    for (i = 0; i < nprocs; i++) {
        waitpid(procs[i].pid, NULL, 0);
        procs[i].pid = 0;
    }
    /* What they said last. */
    pump();
    for (i = 0; i < nprocs; i++) {
        close(procs[i].to);
        close(procs[i].from);
    }
}

/* Kills what a failed test left running. */
static int
workers_reap(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < nprocs; i++)
        if (procs[i].pid > 0) {
            kill(procs[i].pid, SIGKILL);
            close(procs[i].to);
            close(procs[i].from);
            waitpid(procs[i].pid, NULL, 0);
        }
    nprocs = 0;
    return 0;
}

/* ------------------------------------------------------ the old master */

/* Connections on `r` whose name a credisson client set. */
static int
library_connections(const cr_test_redis *r)
{
    int n = 0;

    reply_has(server_cmd(r, "CLIENT LIST"), "name=credisson/", &n);
    return n;
}

static bool
no_library_connections(void *arg)
{
    return library_connections(arg) == 0;
}

/* The calls on `r` of the commands a lock client sends and sentinels and
 * this test never send to a data server (INFO commandstats). */
static long long
library_commands(const cr_test_redis *r)
{
    static const char *const cmds[] = {"evalsha", "eval", "hget", "hexists",
                                       "exists", "pttl", "role"};
    redisReply *rep = server_cmd(r, "INFO commandstats");
    long long sum = 0;
    char needle[64];
    size_t i;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        const char *p;

        snprintf(needle, sizeof(needle), "cmdstat_%s:calls=", cmds[i]);
        if ((p = strstr(rep->str, needle)) != NULL)
            sum += atoll(p + strlen(needle));
    }
    freeReplyObject(rep);
    return sum;
}

/* ------------------------------------------------------------- the tests */

#define BEFORE 4 /* workers started before the failover */
#define AFTER 2  /* workers started once the sentinels report the new master */
#define BRIDGE (BEFORE + AFTER) /* the test's own hold, in the history */

/* What holds_since waits for: `at_least` holds in `h` begun at or after
 * `since_us`. */
typedef struct holds_wanted {
    cr_hist *h;
    int64_t since_us;
    size_t at_least;
} holds_wanted;

static bool
holds_since(void *arg)
{
    holds_wanted *w = arg;
    size_t n = 0;

    cr_hist_first_begin_after(w->h, w->since_us, &n);
    return n >= w->at_least;
}

/* What key_there waits for: `key` on server `r`. */
typedef struct key_at {
    const cr_test_redis *r;
    const char *key;
} key_at;

static bool
key_there(void *arg)
{
    key_at *k = arg;

    return server_int(k->r, "EXISTS", k->key) == 1;
}

/* Contenders across a graceful failover (see the two tests below); with
 * `with_bridge` a process holds the lock across the switch. */
static void
contended_failover(bool with_bridge)
{
    /* Watchdog holders and holders with leases of 2 to 4 s, each keeping
     * the lock 20 to 60 ms a round. */
    static const int64_t leases[BEFORE + AFTER] = {-1, 2000, -1, 4000, -1, 3000};
    static const long holds[BEFORE + AFTER] = {20, 40, 60, 30, 50, 25};
    cr_hist *h = cr_hist_new(50000, BEFORE + AFTER + 1);
    /* Processes: the contenders begun before the failover, the bridge,
     * the contenders begun after it. */
    range contenders = {0, BEFORE}, before = {0, BEFORE + 1};
    range after = {BEFORE + 1, BEFORE + 1 + AFTER};
    proc *bridge = NULL;
    cr_test_redis *old;
    cr_hist_report rep;
    int64_t reported, followed, first;
    holds_wanted want;
    key_at on_master;
    long long calls;
    int i, lost = 0, errors = 0;

    assert_non_null(h);
    for (i = 0; i < BEFORE; i++)
        worker_start("fo:contended", leases[i], holds[i], h, i, 3000);
    assert_true(cr_test_wait_until(ready, &contenders, slow(10000)));
    want.h = h;
    want.since_us = 0;
    want.at_least = 20;
    assert_true(cr_test_wait_until(holds_since, &want, slow(10000)));

    /* The lock is never free while the clients disagree on the master: a
     * free lock could then be granted by both masters at once, which no
     * client can see (doc/safety.md). A grant of the old master after the
     * promotion is reported lost when its client follows the switch, but
     * a client that followed a moment sooner may get in on the new master
     * first (without this hold, 3 runs of 8 showed such an overlap, of
     * 0.3 to 1.3 ms). So a bridge holds the lock across the switch, with
     * the watchdog, and lets go only once every client knows. It is a
     * process of its own, as every client here, so that this one frees
     * no Sentinel client that waited (see the last test). */
    if (with_bridge) {
        bridge = worker_start("fo:contended", -1, -1, h, BRIDGE, 5000);
        assert_true(cr_test_wait_until(holding, bridge, slow(10000)));
    } else {
        cr_hist_done(h, BRIDGE); /* no bridge process */
        before.to = BEFORE;
        after.from = BEFORE;
        after.to = BEFORE + AFTER;
    }

    old = MASTER;
    reported = fail_over();
    fprintf(stderr, "failover: the sentinels report %d\n", MASTER->port);
    for (i = 0; i < AFTER; i++)
        worker_start("fo:contended", leases[BEFORE + i], holds[BEFORE + i], h,
                     BEFORE + i, 3000);
    assert_true(cr_test_wait_until(ready, &after, slow(10000)));
    /* Every client that was up learns of the switch within a poll period
     * and a command of the sentinels telling. */
    assert_true(cr_test_wait_until(all_followed, &before, slow(5000)));
    followed = cr_test_now_ms();
    fprintf(stderr, "failover: every client followed within %lld ms of the "
                    "sentinels\n",
            (long long)(followed - reported));
    assert_true(followed - reported <= TOPOLOGY_POLL_MS + CMD_TIMEOUT_MS +
                                           slow(500));

    /* The old master, still a master, has none of their connections left
     * a command timeout later, and gets nothing from them from now on. */
    assert_true(info_has(old, "replication", "role:master"));
    assert_true(cr_test_wait_until(no_library_connections, old,
                                   CMD_TIMEOUT_MS + slow(500)));
    calls = library_commands(old);

    /* The bridge's hold moved with the switch: it is renewed and released
     * on the new master, and the waiters, which moved too, get in there. */
    want.since_us = cr_hist_now_us();
    want.at_least = 1;
    if (with_bridge) {
        assert_int_equal(write(bridge->to, "U\n", 2), 2);
        assert_true(cr_test_wait_until(unlocked, bridge, slow(5000)));
        assert_int_equal(bridge->unlocked, CR_OK);
    }
    assert_true(cr_test_wait_until(holds_since, &want, slow(5000)));
    first = cr_hist_first_begin_after(h, want.since_us, NULL);
    fprintf(stderr, "failover: first hold after the switch %lld ms after the "
                    "sentinels reported it (%lld ms after the release)\n",
            (long long)(first / 1000 - reported),
            (long long)(first - want.since_us) / 1000);
    assert_true(first / 1000 - reported <= slow(4000));
    on_master.r = MASTER;
    on_master.key = "fo:contended";
    assert_true(cr_test_wait_until(key_there, &on_master, slow(3000)));
    /* A good while of contention on the new master. */
    want.at_least = 40;
    assert_true(cr_test_wait_until(holds_since, &want, slow(10000)));
    assert_int_equal(library_connections(old), 0);
    assert_int_equal(library_commands(old), calls);

    workers_stop(h);
    for (i = 0; i < nprocs; i++) {
        lost += procs[i].lost;
        errors += procs[i].errors;
        /* One switch followed, no going back and forth; the later
         * clients found the new master at once. */
        assert_int_equal(procs[i].failovers, i < before.to ? 1 : 0);
    }
    cr_hist_check(h, 1, &rep);
    cr_hist_print("failover/contended", &rep);
    fprintf(stderr, "failover: %d holds reported lost, %d unexpected statuses\n",
            lost, errors);
    if (with_bridge)
        assert_int_equal(bridge->lost, 0);
    assert_int_equal(rep.violations, 0);
    assert_int_equal(rep.hung, 0);
    assert_int_equal(rep.open, 0);
    assert_int_equal(rep.counter, rep.bumps);
    assert_int_equal(rep.errors, 0);
    cr_hist_free(h);
}

static void
test_failover_contenders_keep_exclusion_and_get_in_on_the_new_master(void **state)
{
    (void)state;
    contended_failover(true);
}

/* Without a hold across the switch: a grant of the old master after the
 * promotion is reported lost when its client follows, and every client
 * holds back TOPOLOGY_SETTLE_MS after it followed before taking the lock on
 * the new master, so no hold overlaps one that was not told first. */
static void
test_failover_contenders_keep_exclusion_without_a_hold_across_the_switch(void **state)
{
    (void)state;
    contended_failover(false);
}

static void
test_failover_a_hold_the_new_master_lacks_is_reported_lost_within_a_poll(void **state)
{
    cr_client *c = client_at(url, 3000);
    cr_client *other = client_at(url, 3000);
    lost_clock lost[2] = {{0}, {0}}, kept_lost = {0};
    cr_lock *behind[2], *kept, *taker;
    int64_t reported, left = -1, last;
    key_at on_replica;
    bool is_lost = false;
    int i;

    (void)state;
    assert_non_null(c);
    assert_non_null(other);
    /* Two holds that stay behind, one with a lease, one with the
     * watchdog, and one that moves with the switch. */
    assert_int_equal(cr_lock_new(c, "fo:behind-lease", &behind[0]), CR_OK);
    assert_int_equal(cr_lock_new(c, "fo:behind-watchdog", &behind[1]), CR_OK);
    assert_int_equal(cr_lock_new(c, "fo:kept", &kept), CR_OK);
    for (i = 0; i < 2; i++)
        assert_int_equal(cr_lock_set_lost_callback(behind[i], clock_lost,
                                                   &lost[i]), CR_OK);
    assert_int_equal(cr_lock_set_lost_callback(kept, clock_lost, &kept_lost),
                     CR_OK);
    assert_int_equal(cr_lock_try_lock(behind[0], 0, 60000), CR_OK);
    assert_int_equal(cr_lock_try_lock(behind[1], 0, CR_LEASE_WATCHDOG), CR_OK);
    assert_int_equal(cr_lock_try_lock(kept, 0, 60000), CR_OK);
    /* The replica had them, and loses the first two alone. */
    on_replica.r = REPLICA;
    on_replica.key = "fo:kept";
    assert_true(cr_test_wait_until(key_there, &on_replica, slow(2000)));
    for (i = 0; i < 2; i++) {
        const char *name = cr_lock_name(behind[i]);
        redisReply *r;

        on_replica.key = name;
        assert_true(cr_test_wait_until(key_there, &on_replica, slow(2000)));
        r = server_cmd(REPLICA, "DEL %s", name);
        assert_non_null(r);
        freeReplyObject(r);
        assert_int_equal(server_int(REPLICA, "EXISTS", name), 0);
        assert_int_equal(server_int(MASTER, "EXISTS", name), 1);
    }
    assert_int_equal(server_int(REPLICA, "EXISTS", "fo:kept"), 1);
    assert_int_equal(cr_lock_is_lost(behind[0], &is_lost), CR_OK);
    assert_false(is_lost);

    reported = fail_over();
    for (i = 0; i < 2; i++)
        assert_true(cr_test_wait_until(clock_rang, &lost[i], slow(5000)));
    last = atomic_load(&lost[0].at_ms) > atomic_load(&lost[1].at_ms)
               ? atomic_load(&lost[0].at_ms)
               : atomic_load(&lost[1].at_ms);
    fprintf(stderr, "failover: holds behind reported lost %lld and %lld ms "
                    "after the sentinels reported the switch\n",
            (long long)(atomic_load(&lost[0].at_ms) - reported),
            (long long)(atomic_load(&lost[1].at_ms) - reported));
    assert_true(last - reported <= TOPOLOGY_POLL_MS + CMD_TIMEOUT_MS +
                                       slow(500));
    for (i = 0; i < 2; i++) {
        assert_int_equal(cr_lock_is_lost(behind[i], &is_lost), CR_OK);
        assert_true(is_lost);
        assert_int_equal(cr_lock_lease_left(behind[i], &left), CR_OK);
        assert_int_equal(left, 0);
    }
    /* The hold the new master has stands, and is released there. */
    assert_true(cr_test_wait_until(has_followed, c, slow(2000)));
    assert_int_equal(cr_lock_is_lost(kept, &is_lost), CR_OK);
    assert_false(is_lost);
    assert_int_equal(cr_lock_unlock(kept), CR_OK);
    assert_int_equal(atomic_load(&kept_lost.at_ms), 0);
    assert_int_equal(cr_lock_unlock(behind[0]), CR_ELOST);
    assert_int_equal(cr_lock_unlock(behind[1]), CR_ELOST);
    /* Another client takes the lock on the new master, once the switch has
     * settled (TOPOLOGY_SETTLE_MS: a client that learns of it later is
     * told first that a lock the old master granted it is lost). */
    assert_int_equal(cr_lock_new(other, "fo:behind-lease", &taker), CR_OK);
    assert_int_equal(cr_lock_try_lock(taker, TOPOLOGY_SETTLE_MS + slow(1000),
                                      60000), CR_OK);
    assert_int_equal(server_int(MASTER, "EXISTS", "fo:behind-lease"), 1);
    assert_int_equal(cr_lock_unlock(taker), CR_OK);
    cr_lock_free(taker);
    cr_lock_free(behind[0]);
    cr_lock_free(behind[1]);
    cr_lock_free(kept);
    cr_client_free(c);
    cr_client_free(other);
}

static void
test_failover_an_idle_client_learns_the_switch_within_a_poll_of_the_sentinels(void **state)
{
    char reversed[512];
    cr_client *c[3];
    int64_t reported, learned[3];
    size_t off;
    int i;

    (void)state;
    /* One client follows the sentinel the failover is asked of, another
     * one of the others, which learn it from the first; the third may not
     * subscribe to +switch-master and must find it by asking. */
    off = (size_t)snprintf(reversed, sizeof(reversed), "redis-sentinel://");
    for (i = NSENTINELS - 1; i >= 0; i--)
        off += (size_t)snprintf(reversed + off, sizeof(reversed) - off,
                                "127.0.0.1:%d%s", sentinels[i].port,
                                i > 0 ? "," : "");
    snprintf(reversed + off, sizeof(reversed) - off, "/mymaster");
    c[0] = client_at(url, 3000);
    c[1] = client_at(reversed, 3000);
    c[2] = client_as(url, NOSUB_USER, NOSUB_PW, 3000);
    for (i = 0; i < 3; i++)
        assert_non_null(c[i]);
    reported = fail_over();
    for (i = 0; i < 3; i++) {
        assert_true(cr_test_wait_until(has_followed, c[i], slow(5000)));
        learned[i] = cr_test_now_ms();
        fprintf(stderr, "failover: idle client %d followed %lld ms after the "
                        "sentinels reported the switch\n",
                i, (long long)(learned[i] - reported));
        assert_true(learned[i] - reported <= TOPOLOGY_POLL_MS + slow(500));
        assert_int_equal(failovers_of(c[i]), 1);
    }
    for (i = 0; i < 3; i++)
        cr_client_free(c[i]);
}

/* What the event hook heard of failovers: how many, and how many had a
 * field other than the documented (CR_OK, no object or name, no times,
 * not asynchronous). */
typedef struct failover_log {
    pthread_mutex_t mu;
    int n, malformed;
} failover_log;

static void
on_failover(void *userdata, const cr_event *ev)
{
    failover_log *log = userdata;

    if (ev->kind != CR_EVENT_FAILOVER)
        return;
    pthread_mutex_lock(&log->mu);
    log->n++;
    log->malformed += ev->status != CR_OK || ev->object != NULL ||
                      ev->name != NULL || ev->wait_ms != -1 ||
                      ev->hold_ms != -1 || ev->async;
    pthread_mutex_unlock(&log->mu);
}

static int
failovers_heard(failover_log *log)
{
    int n;

    pthread_mutex_lock(&log->mu);
    n = log->n;
    pthread_mutex_unlock(&log->mu);
    return n;
}

static bool
failover_heard(void *arg)
{
    return failovers_heard(arg) >= 1;
}

/* SENTINEL FAILOVER under a client with an event hook: when the client
 * follows the new master, the hook hears exactly one CR_EVENT_FAILOVER
 * (one per switch the client's counters show), and the client locks on
 * the new master. */
static void
test_failover_the_switch_is_reported_as_one_failover_event(void **state)
{
    failover_log log = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    cr_client *c = client_hooked(url, NULL, NULL, 3000, on_failover, &log);
    cr_lock *l;

    (void)state;
    assert_non_null(c);
    assert_int_equal(cr_lock_new(c, "fo:event", &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, 30000), CR_OK);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(failovers_heard(&log), 0);
    fail_over();
    assert_true(cr_test_wait_until(failover_heard, &log, slow(5000)));
    assert_true(cr_test_wait_until(has_followed, c, slow(5000)));
    assert_int_equal(failovers_heard(&log), 1);
    assert_int_equal(failovers_of(c), 1);
    pthread_mutex_lock(&log.mu);
    assert_int_equal(log.malformed, 0);
    pthread_mutex_unlock(&log.mu);
    assert_int_equal(cr_lock_try_lock(l, slow(5000), 30000), CR_OK);
    assert_int_equal(server_int(MASTER, "EXISTS", "fo:event"), 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    assert_int_equal(failovers_heard(&log), 1);
    cr_lock_free(l);
    cr_client_free(c);
}

/* ---------------------------------------------- sentinels with passwords */

#define MASTER_PW "master-pw"
#define SENTINEL_PW "sentinel-pw"

/* The master of this group has a password; sentinel 0 has one too
 * (requirepass), sentinel 1 an ACL user "sen" and no default user,
 * sentinel 2 none. Each monitors it under a name of its own, so that they
 * do not meet. */
static cr_test_redis auth_master;
static cr_test_redis auth_sentinels[3];
static const char *const auth_names[3] = {"with-password", "with-acl-user",
                                          "open"};

static int
auth_up(void **state)
{
    static const char *const extra[3] = {
        "requirepass " SENTINEL_PW "\n",
        "user default off\nuser sen on >sen-pw ~* &* +@all\n", ""};
    char conf[512];
    int i, rc;

    (void)state;
    rc = cr_test_redis_start(&auth_master, "--requirepass " MASTER_PW);
    if (rc == CR_TEST_SKIP || !cr_test_on_path("redis-sentinel"))
        exit(CR_TEST_SKIP);
    if (rc != 0)
        return -1;
    for (i = 0; i < 3; i++) {
        snprintf(conf, sizeof(conf),
                 "%ssentinel monitor %s 127.0.0.1 %d 1\n"
                 "sentinel auth-pass %s " MASTER_PW "\n",
                 extra[i], auth_names[i], auth_master.port, auth_names[i]);
        if (cr_test_redis_start_conf(&auth_sentinels[i], conf, "--sentinel") != 0)
            return -1;
    }
    return 0;
}

static int
auth_down(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < 3; i++)
        cr_test_redis_destroy(&auth_sentinels[i]);
    cr_test_redis_destroy(&auth_master);
    return 0;
}

/* A client through auth sentinel k with the master's password and the
 * given sentinel credentials (NULL: none). */
static cr_status
auth_client(int k, const char *sentinel_user, const char *sentinel_pw,
            cr_client **out)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    char u[128];

    snprintf(u, sizeof(u), "redis-sentinel://127.0.0.1:%d/%s",
             auth_sentinels[k].port, auth_names[k]);
    o.url = u;
    o.password = MASTER_PW;
    o.sentinel_username = sentinel_user;
    o.sentinel_password = sentinel_pw;
    o.command_timeout_ms = slow(2000);
    o.connect_timeout_ms = slow(1000);
    *out = NULL;
    return cr_client_new(&o, out);
}

/* The count a command about object `name` answers on the auth master:
 * an integer, or an array's length; -1 on error. */
static long long
auth_count(const char *fmt, const char *name)
{
    redisContext *c = cr_test_redis_connect(&auth_master);
    redisReply *r;
    long long n = -1;

    if (c == NULL)
        return -1;
    r = redisCommand(c, "AUTH %s", MASTER_PW);
    if (r != NULL)
        freeReplyObject(r);
    r = redisCommand(c, fmt, name);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        n = r->integer;
    else if (r != NULL && r->type == REDIS_REPLY_ARRAY)
        n = (long long)r->elements;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return n;
}

/* cr_test_wait_until condition: the waiting line of object `arg` on the
 * auth master has a waiter, listening on its own channel. */
static bool
auth_waits_in_line(void *arg)
{
    return auth_count("ZCARD credisson_line:{%s}", arg) >= 1 &&
           auth_count("PUBSUB CHANNELS credisson_line__channel:{%s}:*",
                      arg) >= 1;
}

typedef struct auth_waiter {
    cr_lock *lock;
    cr_status rc;
    int64_t got_at;
    pthread_t thread;
} auth_waiter;

static void *
auth_wait_run(void *arg)
{
    auth_waiter *w = arg;

    w->rc = cr_lock_try_lock(w->lock, slow(20000), CR_LEASE_WATCHDOG);
    w->got_at = cr_test_now_ms();
    if (w->rc == CR_OK)
        w->rc = cr_lock_unlock(w->lock);
    return NULL;
}

/* A client of the auth master itself, by a plain URL. */
static cr_client *
auth_direct_client(void)
{
    cr_client_options o = CR_CLIENT_OPTIONS_INIT;
    cr_client *c = NULL;

    o.url = auth_master.url;
    o.password = MASTER_PW;
    o.command_timeout_ms = slow(2000);
    assert_int_equal(cr_client_new(&o, &c), CR_OK);
    return c;
}

/* Locks through client `c` and wakes a waiter with the release: the
 * client found the master through its sentinel, and its unlock reaches
 * the waiter, whose lease hint would be 30 s. The waiter is of a client
 * of the master itself, by a plain URL: this process frees no Sentinel
 * client whose thread waited (see
 * test_failover_freeing_a_sentinel_client_after_a_wait_uses_no_freed_memory). */
static void
lock_and_wake(cr_client *c, const char *name)
{
    cr_client *plain = auth_direct_client();
    auth_waiter w;
    cr_lock *l;
    int64_t released;

    assert_int_equal(cr_lock_new(c, name, &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_OK);
    memset(&w, 0, sizeof(w));
    assert_int_equal(cr_lock_new(plain, name, &w.lock), CR_OK);
    assert_int_equal(pthread_create(&w.thread, NULL, auth_wait_run, &w), 0);
    assert_true(cr_test_wait_until(auth_waits_in_line, (void *)name,
                                   slow(5000)));
    released = cr_test_now_ms();
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.rc, CR_OK);
    assert_true(w.got_at - released < slow(2000));
    cr_lock_free(w.lock);
    cr_lock_free(l);
    cr_client_free(plain);
}

static void
test_failover_sentinel_password_lets_the_client_lock_and_wake_a_waiter(void **state)
{
    cr_client *c;

    (void)state;
    assert_int_equal(auth_client(0, NULL, SENTINEL_PW, &c), CR_OK);
    lock_and_wake(c, "auth:password");
    cr_client_free(c);
}

static void
test_failover_wrong_sentinel_password_is_refused_with_eauth(void **state)
{
    cr_client *c;

    (void)state;
    assert_int_equal(auth_client(0, NULL, "not-the-password", &c), CR_EAUTH);
    assert_null(c);
    /* Without sentinel credentials the master's password is sent to the
     * sentinel, which wants its own. */
    assert_int_equal(auth_client(0, NULL, NULL, &c), CR_EAUTH);
    assert_null(c);
}

static void
test_failover_sentinel_acl_user_is_accepted_with_sentinel_username(void **state)
{
    cr_client *c;

    (void)state;
    assert_int_equal(auth_client(1, "sen", "sen-pw", &c), CR_OK);
    lock_and_wake(c, "auth:acl");
    cr_client_free(c);
    assert_int_equal(auth_client(1, "sen", "not-the-password", &c), CR_EAUTH);
    assert_null(c);
}

static void
test_failover_sentinel_without_password_accepts_the_master_credentials(void **state)
{
    cr_client *c;

    (void)state;
    assert_int_equal(auth_client(2, NULL, NULL, &c), CR_OK);
    lock_and_wake(c, "auth:open");
    cr_client_free(c);
}

/* A thread that publishes on a channel of the auth master without pause
 * until told to stop: every message wakes the subscribers' dispatchers. */
typedef struct flood {
    const char *channel;
    atomic_bool stop;
    atomic_long heard; /* messages a subscriber received */
    pthread_t thread;
} flood;

static void *
flood_run(void *arg)
{
    flood *f = arg;
    redisContext *c = cr_test_redis_connect(&auth_master);
    redisReply *r;

    if (c == NULL)
        return NULL;
    r = redisCommand(c, "AUTH %s", MASTER_PW);
    if (r != NULL)
        freeReplyObject(r);
    while (!atomic_load(&f->stop)) {
        r = redisCommand(c, "PUBLISH %s flood", f->channel);
        if (r == NULL)
            break;
        if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
            atomic_fetch_add(&f->heard, 1);
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

static bool
flood_heard(void *arg)
{
    return atomic_load(&((flood *)arg)->heard) > 0;
}

/* Freeing a Sentinel client whose pub/sub dispatcher is awake: the
 * topology must outlive every thread that reads it (under valgrind or
 * AddressSanitizer a read of freed memory fails the run). A thread waits
 * while messages keep coming on its channel, so the dispatcher wakes again
 * and again while the client is freed. */
static void
test_failover_freeing_a_sentinel_client_after_a_wait_uses_no_freed_memory(void **state)
{
    cr_client *plain, *c;
    cr_lock *held;
    flood f;
    int i;

    (void)state;
    plain = auth_direct_client();
    assert_int_equal(cr_lock_new(plain, "auth:freed", &held), CR_OK);
    assert_int_equal(cr_lock_try_lock(held, 0, CR_LEASE_WATCHDOG), CR_OK);
    for (i = 0; i < 20; i++) {
        auth_waiter w;

        assert_int_equal(auth_client(2, NULL, NULL, &c), CR_OK);
        memset(&w, 0, sizeof(w));
        assert_int_equal(cr_lock_new(c, "auth:freed", &w.lock), CR_OK);
        assert_int_equal(pthread_create(&w.thread, NULL, auth_wait_run, &w), 0);
        memset(&f, 0, sizeof(f));
        f.channel = "redisson_lock__channel:{auth:freed}";
        assert_int_equal(pthread_create(&f.thread, NULL, flood_run, &f), 0);
        /* The waiter listens: its client's dispatcher hears the flood. */
        assert_true(cr_test_wait_until(flood_heard, &f, slow(5000)));
        cr_client_free(c);
        atomic_store(&f.stop, true);
        pthread_join(f.thread, NULL);
        pthread_join(w.thread, NULL);
        assert_int_equal(w.rc, CR_ECLOSED);
        cr_lock_free(w.lock);
    }
    assert_int_equal(cr_lock_unlock(held), CR_OK);
    cr_lock_free(held);
    cr_client_free(plain);
}

int
main(void)
{
    const struct CMUnitTest auth_tests[] = {
        cmocka_unit_test(test_failover_sentinel_password_lets_the_client_lock_and_wake_a_waiter),
        cmocka_unit_test(test_failover_wrong_sentinel_password_is_refused_with_eauth),
        cmocka_unit_test(test_failover_sentinel_acl_user_is_accepted_with_sentinel_username),
        cmocka_unit_test(test_failover_sentinel_without_password_accepts_the_master_credentials),
        cmocka_unit_test(test_failover_freeing_a_sentinel_client_after_a_wait_uses_no_freed_memory),
    };
    const struct CMUnitTest failover_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, settle_up, workers_reap)
        T(test_failover_contenders_keep_exclusion_and_get_in_on_the_new_master),
        T(test_failover_contenders_keep_exclusion_without_a_hold_across_the_switch),
        T(test_failover_a_hold_the_new_master_lacks_is_reported_lost_within_a_poll),
        T(test_failover_an_idle_client_learns_the_switch_within_a_poll_of_the_sentinels),
        T(test_failover_the_switch_is_reported_as_one_failover_event),
#undef T
    };
    int failed;

    (void)client_up;
    (void)client_down;
    (void)redis_up;
    (void)redis_down;
    /* CR_TEST_FILTER=pattern runs only the matching tests. */
    if (getenv("CR_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("CR_TEST_FILTER"));
    failed = cmocka_run_group_tests_name("sentinel credentials", auth_tests,
                                         auth_up, auth_down);
    failed += cmocka_run_group_tests_name("failover", failover_tests,
                                          deployment_up, deployment_down);
    return failed;
}
