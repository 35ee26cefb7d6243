/* SPDX-License-Identifier: MIT */
/*
 * The client: settings, start and stop of its parts, the guard around public
 * calls, the script runner and the protocol's name helpers.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "credisson/lock.h"
#include "credisson/version.h"
#include "renewal.h"
#include "slot.h"
#include "topology.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"

/* ---------------------------------------------------------------- guard */

cr_status
cr__client_enter(cr_client *c, cr__op *op)
{
    if (c == NULL)
        return cr__fail(CR_EINVAL, "client is NULL");
    if (c->magic != CR__CLIENT_MAGIC)
        return cr__fail(CR_EINVAL, "not a live client (freed?)");
    if (c->fork_gen != cr__fork_generation())
        return cr__fail(CR_EFORKED, "this client was created before fork(); "
                        "the child must create its own client");
    atomic_fetch_add(&c->active, 1);
    if (atomic_load(&c->closing)) {
        cr__client_leave(c);
        return cr__fail(CR_ECLOSED, "the client is being freed");
    }
    cr__op_begin(op, c, -1);
    cr__op_wait(op, 0);
    return CR_OK;
}

void
cr__client_leave(cr_client *c)
{
    if (atomic_fetch_sub(&c->active, 1) == 1 && atomic_load(&c->closing)) {
        pthread_mutex_lock(&c->mu);
        pthread_cond_broadcast(&c->idle);
        pthread_mutex_unlock(&c->mu);
    }
}

int64_t
cr__op_wait(cr__op *op, int64_t wait_ms)
{
    cr_client *c = op->client;
    int64_t after = c->command_timeout_ms + c->conn_cfg.sync_timeout_ms;
    int64_t end = atomic_load(&c->deadline);

    if (end > 0) {
        int64_t room = end - after - op->start;

        if (room < 0)
            room = 0;
        if (wait_ms < 0 || wait_ms > room)
            wait_ms = room;
    }
    op->deadline = wait_ms < 0 ? -1 : op->start + wait_ms + after;
    if (end > 0 && op->deadline > end)
        op->deadline = end;
    return wait_ms;
}

/* The end of a background job begun now: two command timeouts (and the
 * replica-sync timeout), or the client's deadline when that comes first. */
static int64_t
job_deadline(const cr__op *op)
{
    cr_client *c = op->client;
    int64_t d = op->start + 2 * c->command_timeout_ms +
                c->conn_cfg.sync_timeout_ms;
    int64_t end = atomic_load(&c->deadline);

    return end > 0 && end < d ? end : d;
}

void
cr__op_event(const cr__op *op, cr_event_kind kind, cr_status status,
             const char *object, const char *name, int64_t wait_ms,
             int64_t hold_ms, bool async)
{
    if (!cr__hooked(&op->client->run.stats))
        return;
    if (op->sink != NULL) {
        *op->sink = (cr__event_sink){.kept = true, .kind = kind,
                                     .status = status, .object = object,
                                     .name = name, .hold_ms = hold_ms};
        return;
    }
    cr__event(&op->client->run.stats, kind, status, object, name, wait_ms,
              hold_ms, async);
}

/* ------------------------------------------------------------ background */

typedef struct cr__job {
    void (*run)(const cr__op *op, void *arg);
    void (*done)(void *arg, bool ran);
    void *arg;
    struct cr__job *next;
} cr__job;

/* The background thread: runs the queued jobs in order until stopped. */
static void *
background(void *arg)
{
    cr_client *c = arg;
    cr__op op;

    pthread_mutex_lock(&c->jobs_mu);
    for (;;) {
        cr__job *j;

        while (c->jobs == NULL && !c->jobs_stop)
            pthread_cond_wait(&c->jobs_cv, &c->jobs_mu);
        if (c->jobs_stop)
            break;
        j = c->jobs;
        c->jobs = j->next;
        if (c->jobs == NULL)
            c->jobs_tail = &c->jobs;
        pthread_mutex_unlock(&c->jobs_mu);
        cr__op_begin(&op, c, -1);
        op.deadline = job_deadline(&op);
        j->run(&op, j->arg);
        j->done(j->arg, true);
        free(j);
        pthread_mutex_lock(&c->jobs_mu);
    }
    pthread_mutex_unlock(&c->jobs_mu);
    return NULL;
}

cr_status
cr__background(cr_client *c, void (*run)(const cr__op *op, void *arg),
               void (*done)(void *arg, bool ran), void *arg)
{
    cr__job *j = calloc(1, sizeof(*j));

    if (j == NULL) {
        done(arg, false);
        return CR_ENOMEM;
    }
    j->run = run;
    j->done = done;
    j->arg = arg;
    pthread_mutex_lock(&c->jobs_mu);
    if (c->jobs_stop || (!c->jobs_started &&
                         pthread_create(&c->jobs_thread, NULL, background, c) != 0)) {
        pthread_mutex_unlock(&c->jobs_mu);
        free(j);
        done(arg, false);
        return cr__fail(CR_ENOMEM, "cannot start the background thread");
    }
    c->jobs_started = true;
    *c->jobs_tail = j;
    c->jobs_tail = &j->next;
    pthread_cond_signal(&c->jobs_cv);
    pthread_mutex_unlock(&c->jobs_mu);
    return CR_OK;
}

/* Stops the background thread (its I/O was aborted already) and drops the
 * jobs it did not get to. */
static void
stop_background(cr_client *c)
{
    cr__job *j;

    pthread_mutex_lock(&c->jobs_mu);
    c->jobs_stop = true;
    pthread_cond_signal(&c->jobs_cv);
    pthread_mutex_unlock(&c->jobs_mu);
    if (c->jobs_started)
        pthread_join(c->jobs_thread, NULL);
    while ((j = c->jobs) != NULL) {
        c->jobs = j->next;
        j->done(j->arg, false);
        free(j);
    }
}

/* ------------------------------------------------------------ life cycle */

/* Picks `value` when set (> 0), else `dflt`. */
static int64_t
or_default(int64_t value, int64_t dflt)
{
    return value > 0 ? value : dflt;
}

/* The smallest sizes the structs ever had: their end when `size` came in.
 * Fields added later never change these. */
#define OPTIONS_SIZE_FIRST \
    (offsetof(cr_client_options, tls_insecure) + sizeof(bool))
#define STATS_SIZE_FIRST \
    (offsetof(cr_client_stats, failovers) + sizeof(uint64_t))

/* Sizes past this are not a size of either struct but garbage (openat2's
 * bound). */
#define SIZE_MAX_PLAUSIBLE 4096

/* The one rule for the public structs that carry their size (Linux's
 * copy_struct_from_user): the caller's struct has `user_size` bytes, this
 * library's `lib_size`, and only the first min(user_size, lib_size) bytes
 * are copied from src to dst:
 * - in (to_user false; src is the caller's, dst the library's, zeroed): a
 *   smaller caller's struct leaves the fields it lacks at 0 (their
 *   default); a larger one is taken only when every byte past lib_size is
 *   0, else CR_ENOTSUP (a field this library does not know is set);
 * - out (to_user true; dst is the caller's): the leading `size` member is
 *   left as the caller set it and nothing past min() is written.
 * A user_size below `first` (0: zeroed by hand, not initialised with
 * `init`) or above SIZE_MAX_PLAUSIBLE is CR_EINVAL. */
static cr_status
sized_copy(void *dst, const void *src, size_t user_size, size_t lib_size,
           size_t first, bool to_user, const char *type, const char *init)
{
    const size_t head = sizeof(size_t);
    size_t n = user_size < lib_size ? user_size : lib_size;

    if (user_size == 0)
        return cr__fail(CR_EINVAL, "%s.size is 0: initialise the struct with "
                        "%s (or set .size = sizeof(%s))", type, init, type);
    if (user_size < first || user_size > SIZE_MAX_PLAUSIBLE)
        return cr__fail(CR_EINVAL, "%s.size is %zu, not the size of any "
                        "%s: initialise the struct with %s", type, user_size,
                        type, init);
    if (to_user) {
        memcpy((char *)dst + head, (const char *)src + head, n - head);
        return CR_OK;
    }
    for (size_t i = lib_size; i < user_size; i++)
        if (((const unsigned char *)src)[i] != 0)
            return cr__fail(CR_ENOTSUP, "%s has a field set that this "
                            "library (%s) does not know: byte %zu of %zu "
                            "is not 0 (it knows %zu); built against a "
                            "newer credisson?", type, CR_VERSION_STR, i,
                            user_size, lib_size);
    memcpy(dst, src, n);
    return CR_OK;
}

/* Checks the options' numbers: negative values are refused. */
static cr_status
check_options(const cr_client_options *o)
{
    if (o->connect_timeout_ms < 0 || o->command_timeout_ms < 0 ||
        o->pool_size < 0 || o->lock_watchdog_timeout_ms < 0 ||
        o->lock_watchdog_batch_size < 0 || o->fair_lock_wait_timeout_ms < 0 ||
        o->subscription_timeout_ms < 0 || o->reconnect_window_ms < 0 ||
        o->replica_sync_timeout_ms < 0 || o->replica_sync_timeout_ms > 3600000 ||
        o->setup_timeout_ms < 0)
        return cr__fail(CR_EINVAL, "negative option value");
    if (o->connect_timeout_ms > 3600000 || o->command_timeout_ms > 3600000 ||
        o->pool_size > 1024 || o->lock_watchdog_batch_size > 10000 ||
        o->lock_watchdog_timeout_ms > 86400000LL * 365 ||
        o->fair_lock_wait_timeout_ms > 86400000LL * 365 ||
        o->subscription_timeout_ms > 86400000LL * 365 ||
        o->reconnect_window_ms > 86400000LL * 365 ||
        o->setup_timeout_ms > 86400000LL * 365)
        return cr__fail(CR_EINVAL, "option value out of range");
    if ((int)o->sharded_pubsub < CR_SHARDED_AUTO ||
        (int)o->sharded_pubsub > CR_SHARDED_OFF)
        return cr__fail(CR_EINVAL, "sharded_pubsub is not a cr_sharded_pubsub");
    if (o->lock_watchdog_timeout_ms > 0 && o->lock_watchdog_timeout_ms < 30)
        return cr__fail(CR_EINVAL, "lock_watchdog_timeout_ms must be >= 30");
    if (o->line_turn_ms != 0 &&
        (o->line_turn_ms < 10 || o->line_turn_ms > 60000))
        return cr__fail(CR_EINVAL, "line_turn_ms must be 0 or within 10 "
                        "to 60000");
    return CR_OK;
}

/* In a cluster: sharded pub/sub or classic (protocol 1.3). The option,
 * when set, wins over the URL; AUTO asks a node whether it knows PUBSUB
 * SHARDNUMSUB (Redis 7+), as Redisson does. */
static cr_status
choose_pubsub(cr_client *c, const cr__op *op, cr_sharded_pubsub opt)
{
    const char *argv[2] = {"PUBSUB", "SHARDNUMSUB"};
    int mode = opt != CR_SHARDED_AUTO ? (int)opt : c->url.sharded;

    /* Redisson before 3.22 never used sharded pub/sub: AUTO is off. */
    if (mode == CR__SHARDED_AUTO && !c->wire.sharded_pubsub)
        mode = CR__SHARDED_OFF;
    cr__reply *r = NULL;
    cr_status rc;

    if (mode == CR__SHARDED_AUTO) {
        cr__cmd cmd = {.flags = CR__CMD_RETRY, .op = op};

        rc = cr__transport_command(c->run.transport, &cmd, 2, argv, NULL, &r);
        if (rc != CR_OK)
            return rc;
        mode = r->type == CR__REPLY_ERROR ? CR__SHARDED_OFF : CR__SHARDED_ON;
        cr__reply_free(r);
    }
    c->publish_cmd = mode == CR__SHARDED_ON ? "spublish" : "publish";
    return CR_OK;
}

/* Settles the Java side's release line: the option, else the URL's
 * ?redissonVersion=, else the newest. */
static cr_status
release_line(cr_client *c, const char *opt)
{
    char err[160];
    int version = c->url.redisson_version;

    if (opt != NULL &&
        cr__url_parse_version(opt, strlen(opt), &version, err,
                              sizeof(err)) != CR_OK)
        return cr__fail(CR_EINVAL, "the option naming the Java side's "
                        "Redisson release: %s", err);
    cr__wire_of(version, &c->wire);
    return CR_OK;
}

/* A copy of `s`, or NULL for NULL; *rc becomes CR_ENOMEM when out of
 * memory. */
static char *
dup_opt(const char *s, cr_status *rc)
{
    char *d;

    if (s == NULL)
        return NULL;
    if ((d = strdup(s)) == NULL)
        *rc = CR_ENOMEM;
    return d;
}

/* Overwrites and frees a string that held a secret. */
static void
free_secret(char *s)
{
    if (s == NULL)
        return;
    explicit_bzero(s, strlen(s));
    free(s);
}

/* Checks a client name: printable ASCII without spaces (Redis's rule for
 * CLIENT SETNAME), at most 255 bytes. */
static cr_status
check_client_name(const char *name)
{
    const char *p;

    if (strlen(name) > 255)
        return cr__fail(CR_EINVAL, "client_name is longer than 255 bytes");
    for (p = name; *p != '\0'; p++)
        if (*p < '!' || *p > '~')
            return cr__fail(CR_EINVAL, "client_name may hold printable ASCII "
                            "only, without spaces");
    return CR_OK;
}

/* Sets up what every connection needs (conn_cfg and what it points at)
 * from the options. */
static cr_status
configure_connections(cr_client *c, const cr_client_options *o)
{
    cr_status rc = CR_OK;

    c->user = dup_opt(o->username != NULL ? o->username : c->url.user, &rc);
    c->password = dup_opt(o->password != NULL ? o->password : c->url.password,
                          &rc);
    c->sentinel_user = dup_opt(o->sentinel_username, &rc);
    c->sentinel_password = dup_opt(o->sentinel_password, &rc);
    c->tls_name = dup_opt(o->tls_server_name, &rc);
    if (o->client_name != NULL && (rc = check_client_name(o->client_name)) != CR_OK)
        return rc;
    if (o->client_name == NULL)
        c->client_name = cr__name_client(c->id);
    else if (o->client_name[0] != '\0')
        c->client_name = strdup(o->client_name);
    if ((o->client_name == NULL || o->client_name[0] != '\0') &&
        c->client_name == NULL)
        rc = CR_ENOMEM;
    if (rc != CR_OK)
        return rc;
    if (!c->url.tls && (o->tls_ca_file != NULL || o->tls_ca_dir != NULL ||
                        o->tls_cert_file != NULL || o->tls_key_file != NULL ||
                        o->tls_server_name != NULL || o->tls_insecure))
        return cr__fail(CR_EINVAL, "TLS options were given with a URL that is "
                        "not rediss://, rediss-sentinel:// or rediss-cluster://");
    if (c->url.tls) {
        cr__tls_settings t = {o->tls_ca_file, o->tls_ca_dir, o->tls_cert_file,
                              o->tls_key_file, o->tls_insecure};

        if ((rc = cr__tls_new(&t, &c->tls)) != CR_OK)
            return rc;
        if (o->tls_insecure)
            cr__log(&c->log, CR_LOG_WARN, "TLS peer verification is OFF "
                    "(tls_insecure): the server is not authenticated");
    }
    if ((rc = cr__breakers_new(&c->breakers)) != CR_OK)
        return rc;
    c->abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->abort_fd < 0)
        return cr__fail(CR_EIO, "eventfd: %s", strerror(errno));
    c->conn_cfg.url = &c->url;
    c->conn_cfg.user = c->user;
    c->conn_cfg.password = c->password;
    c->conn_cfg.sentinel_user = c->sentinel_user;
    c->conn_cfg.sentinel_password = c->sentinel_password;
    c->conn_cfg.client_name = c->client_name;
    c->conn_cfg.tls = c->tls;
    c->conn_cfg.tls_name = c->tls_name;
    c->conn_cfg.sync_timeout_ms = o->replica_sync_timeout_ms;
    c->conn_cfg.connect_timeout_ms = c->connect_timeout_ms;
    c->conn_cfg.command_timeout_ms = c->command_timeout_ms;
    c->conn_cfg.stats = &c->run.stats;
    c->conn_cfg.log = &c->log;
    c->conn_cfg.breakers = c->breakers;
    c->conn_cfg.abort_fd = c->abort_fd;
    return CR_OK;
}

/* Topology listeners: after the master moved. */
static void
on_switch(void *userdata, unsigned generation)
{
    cr_client *c = userdata;

    (void)generation;
    cr__transport_master_moved(c->run.transport);
    cr__pubsub_master_moved(c->pubsub);
    cr__renewal_master_moved(c->renewal);
}

cr_status
cr_client_new(const cr_client_options *opts, cr_client **out)
{
    static const cr_client_options defaults;
    cr_client_options given = CR_CLIENT_OPTIONS_INIT;
    cr_client *c;
    char err[256];
    cr_status rc;
    int64_t setup_ms;

    int64_t begun = cr__now_ms();

    cr__clear_error();
    if (out == NULL)
        return cr__fail(CR_EINVAL, "out is NULL");
    if (opts == NULL) {
        opts = &defaults;
    } else {
        rc = sized_copy(&given, opts, opts->size, sizeof(given),
                        OPTIONS_SIZE_FIRST, false, "cr_client_options",
                        "CR_CLIENT_OPTIONS_INIT");
        if (rc != CR_OK)
            return rc;
        opts = &given;
    }
    rc = check_options(opts);
    if (rc != CR_OK)
        return rc;
    cr__registry_init();
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return CR_ENOMEM;
    c->abort_fd = -1;
    rc = cr__url_parse(opts->url != NULL ? opts->url : DEFAULT_URL, &c->url,
                       err, sizeof(err));
    if (rc != CR_OK) {
        free(c);
        return cr__fail(rc, "bad URL: %s", err);
    }
    c->magic = CR__CLIENT_MAGIC;
    c->run.stats.hook = opts->event_fn;
    c->run.stats.hook_userdata = opts->event_userdata;
    c->fork_gen = cr__fork_generation();
    c->connect_timeout_ms = or_default(opts->connect_timeout_ms, 3000);
    c->command_timeout_ms = or_default(opts->command_timeout_ms, 3000);
    c->watchdog_timeout_ms = or_default(opts->lock_watchdog_timeout_ms, 30000);
    c->watchdog_batch = (int)or_default(opts->lock_watchdog_batch_size, 100);
    rc = release_line(c, opts->redisson_version);
    if (rc != CR_OK) {
        cr__url_clear(&c->url);
        free(c);
        return rc;
    }
    c->fair_wait_timeout_ms = or_default(opts->fair_lock_wait_timeout_ms,
                                         c->wire.fair_wait_ms);
    c->subscription_timeout_ms = or_default(opts->subscription_timeout_ms, 7500);
    c->line_turn_ms = or_default(opts->line_turn_ms, 250);
    c->reconnect_window_ms = or_default(opts->reconnect_window_ms, 30000);
    /* An unlock latch outlives every send of its script (transport.c's
     * resend, route.c's redirections): two on a connection, each with a
     * connect, the command and a replica WAIT, on every master a
     * cluster's redirections may lead to. */
    c->unlock_latch_timeout_ms =
        2 * (c->connect_timeout_ms + c->command_timeout_ms +
             opts->replica_sync_timeout_ms) *
            (c->url.is_cluster ? CR__MAX_REDIRECTS + 1 : 1) +
        1000;
    c->publish_cmd = "publish";
    c->log.fn = opts->log_fn;
    c->log.userdata = opts->log_userdata;
    c->log.level = opts->log_level;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->jobs_mu, NULL);
    pthread_cond_init(&c->jobs_cv, NULL);
    c->jobs_tail = &c->jobs;
    {
        pthread_condattr_t attr;

        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&c->idle, &attr);
        pthread_condattr_destroy(&attr);
    }
    if (opts->name_prefix != NULL && opts->name_prefix[0] != '\0' &&
        (c->name_prefix = strdup(opts->name_prefix)) == NULL)
        rc = CR_ENOMEM;
    if (rc == CR_OK)
        rc = cr__uuid_v4(c->id);
    if (rc == CR_OK)
        rc = configure_connections(c, opts);
    /* Set-up: a connect and a command per server asked, and no more than
     * setup_timeout_ms in all when that is set. */
    setup_ms = (c->connect_timeout_ms + c->command_timeout_ms) *
               (c->url.nhosts > 1 ? (int64_t)c->url.nhosts : 1);
    if (opts->setup_timeout_ms > 0 && opts->setup_timeout_ms < setup_ms)
        setup_ms = opts->setup_timeout_ms;
    if (rc == CR_OK && c->url.is_sentinel) {
        rc = cr__topology_new(&c->conn_cfg, begun + setup_ms, &c->topology);
        c->conn_cfg.topology = c->topology;
    }
    if (rc == CR_OK) {
        cr__op op;

        cr__op_begin(&op, c, begun + setup_ms);
        rc = cr__transport_new(&op, &c->conn_cfg,
                               (int)or_default(opts->pool_size, 4),
                               &c->run.transport);
        if (rc == CR_OK && c->url.is_cluster)
            rc = choose_pubsub(c, &op, opts->sharded_pubsub);
    }
    if (rc == CR_OK)
        rc = cr__pubsub_new(&c->conn_cfg, c->run.transport,
                            strcmp(c->publish_cmd, "spublish") == 0,
                            &c->pubsub);
    if (rc == CR_OK)
        rc = cr__renewal_new(c, &(cr__renewal_config){
                 .id = c->id, .lease_ms = c->watchdog_timeout_ms,
                 .batch = c->watchdog_batch, .cluster = c->url.is_cluster,
                 .log = &c->log, .stats = &c->run.stats},
             &c->renewal);
    if (rc == CR_OK && c->topology != NULL)
        cr__topology_listen(c->topology, on_switch, c);
    if (rc != CR_OK) {
        char keep[512];

        /* Freeing must not replace the reason with its own messages. */
        strncpy(keep, cr_last_error(), sizeof(keep) - 1);
        keep[sizeof(keep) - 1] = '\0';
        cr_client_free(c);
        return cr__fail(rc, "%s", keep);
    }
    *out = c;
    return CR_OK;
}

void
cr_client_free(cr_client *c)
{
    if (c != NULL && c->magic == CR__CLIENT_MAGIC)
        cr_client_free_within(c, c->command_timeout_ms);
}

/* Wakes every wait on a socket, of every thread of `c`. */
static void
abort_io(cr_client *c)
{
    uint64_t one = 1;

    if (c->abort_fd >= 0 && write(c->abort_fd, &one, sizeof(one)) < 0)
        cr__log(&c->log, CR_LOG_WARN, "cannot wake the client's waits");
}

void
cr_client_free_within(cr_client *c, int64_t grace_ms)
{
    struct timespec until;
    int64_t deadline;

    if (c == NULL || c->magic != CR__CLIENT_MAGIC)
        return;
    if (c->fork_gen != cr__fork_generation()) {
        /* In a fork child: the threads are not ours and their locks may be
         * held forever; the connections are shared with the parent. Give
         * back only what is certainly ours to give: nothing touches Redis. */
        c->magic = 0;
        return;
    }
    atomic_store(&c->closing, true);
    /* Waiting calls wake and leave, tidying up on the way (a fair-lock
     * waiter leaves the queue) within the grace; then every wait on a
     * socket, of every thread, ends. */
    if (c->pubsub != NULL)
        cr__pubsub_close(c->pubsub);
    deadline = cr__now_ms() + (grace_ms > 0 ? grace_ms : 0);
    until.tv_sec = deadline / 1000;
    until.tv_nsec = (deadline % 1000) * 1000000;
    pthread_mutex_lock(&c->mu);
    while (atomic_load(&c->active) > 0 &&
           pthread_cond_timedwait(&c->idle, &c->mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&c->mu);
    abort_io(c);
    pthread_mutex_lock(&c->mu);
    while (atomic_load(&c->active) > 0)
        pthread_cond_wait(&c->idle, &c->mu);
    pthread_mutex_unlock(&c->mu);
    stop_background(c);
    /* The topology's thread calls into the parts below: it stops first;
     * their threads read its generation: it is freed last. */
    cr__topology_stop(c->topology);
    cr__renewal_free(c->renewal);
    cr__pubsub_free(c->pubsub);
    cr__transport_free(c->run.transport);
    cr__topology_free(c->topology);
    cr__breakers_free(c->breakers);
    cr__tls_free(c->tls);
    if (c->abort_fd >= 0)
        close(c->abort_fd);
    free_secret(c->password);
    free_secret(c->sentinel_password);
    free(c->user);
    free(c->sentinel_user);
    free(c->client_name);
    free(c->tls_name);
    cr__url_clear(&c->url);
    free(c->name_prefix);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->jobs_mu);
    pthread_cond_destroy(&c->jobs_cv);
    c->magic = 0;
    free(c);
}

const char *
cr_client_id(const cr_client *c)
{
    return c != NULL && c->magic == CR__CLIENT_MAGIC ? c->id : "";
}

cr_status
cr_client_set_deadline(cr_client *c, int64_t deadline_ms)
{
    cr__clear_error();
    if (c == NULL || c->magic != CR__CLIENT_MAGIC)
        return cr__fail(CR_EINVAL, "client is NULL or not a live client");
    if (deadline_ms < 0)
        return cr__fail(CR_EINVAL, "deadline_ms is negative");
    atomic_store(&c->deadline, deadline_ms);
    return CR_OK;
}

cr_status
cr_client_stats_get(cr_client *c, cr_client_stats *out)
{
    cr_client_stats now = CR_CLIENT_STATS_INIT;

    if (c == NULL || c->magic != CR__CLIENT_MAGIC || out == NULL)
        return cr__fail(CR_EINVAL, "client or out is NULL");
#define COPY(f) now.f = atomic_load_explicit(&c->run.stats.f, memory_order_relaxed)
    COPY(acquisitions);
    COPY(contended_waits);
    COPY(wait_time_total_ms);
    COPY(wait_time_max_ms);
    COPY(renewals_sent);
    COPY(renewal_calls);
    COPY(renewal_failures);
    COPY(leases_lost);
    COPY(reconnects);
    COPY(noscript_fallbacks);
    COPY(commands);
    COPY(messages);
    COPY(redirects);
    COPY(topology_refreshes);
    COPY(failovers);
#undef COPY
    return sized_copy(out, &now, out->size, sizeof(now), STATS_SIZE_FIRST,
                      true, "cr_client_stats", "CR_CLIENT_STATS_INIT");
}

const char *
cr_version_str(void)
{
    return CR_VERSION_STR;
}

unsigned
cr_version_num(void)
{
    return CR_VERSION_NUM;
}
