/* SPDX-License-Identifier: MIT */
/*
 * The runner of the credisson tool: waits that a signal can interrupt, and
 * a command run as a child while a lock or permit is held.
 *
 * The signals the tool forwards, and SIGCHLD, are blocked in every thread
 * (the mask is set before the library starts its threads) and read from a
 * signalfd by the main thread, which also polls a self-pipe written by
 * other threads: the waiting thread when its call returns ('R'), the
 * library's lease clock or the permit's renewing thread when a hold is
 * found lost ('L'). So no signal handler runs anywhere, and the main loop
 * sees every event in order.
 *
 * A wait ended by a signal never waits on Redis: what the call got in the
 * meantime is given back on its own thread, and a call still under way is
 * cut off by freeing the client under it with a short grace. While the
 * command runs, the loop keeps the hold's local deadline (where its lease
 * ends by this host's clock, before Redis can let anyone else in) and
 * stops the command ahead of it: SIGTERM --kill-after before, SIGKILL at
 * it; a hold found lost earlier gets SIGTERM at once.
 *
 * The child is started with fork() and execve() rather than posix_spawn()
 * so that it can ask for SIGTERM when credisson dies (PR_SET_PDEATHSIG): a
 * command whose lock can no longer be renewed or released should not go on
 * as if it still held it. Only async-signal-safe calls run between fork()
 * and execve(); the program's path and environment are prepared before.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run.h"
#include "util.h"

extern char **environ;

/* The signals passed on to the command (and that end a wait). */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                SIGUSR2};

/* How often the status line is redrawn while waiting. */
#define STATUS_EVERY_MS 500

/* How long a wait without a status line goes before its one reading of
 * the holder: an acquisition that is quick costs no reading. */
#define ONCE_AFTER_MS 200

/* File descriptors below this are tracked as inherited or not. */
#define FD_TRACKED 1024

/* The signal mask the tool started with, given back to the command. */
static sigset_t start_mask;

/* Whether the tool started with SIGCHLD ignored (its children would then
 * be reaped unseen); the command gets that disposition back. */
static bool chld_ignored;

/* The descriptors that were open when the tool started: the command
 * inherits those, and none of the tool's own (Redis sockets, pipes). */
static unsigned char inherited[FD_TRACKED / 8];

/* -------------------------------------------------------------- helpers */

/* Calls fn(fd) for every open descriptor of this process from 3 up, as
 * listed by /proc/self/fd (nothing when /proc is not mounted). */
static void each_open_fd(void (*fn)(int fd))
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);

        if (*end == '\0' && end != e->d_name && fd >= 3 && fd != dirfd(d))
            fn((int)fd);
    }
    closedir(d);
}

/* Records fd as inherited from whoever started the tool. */
static void mark_inherited(int fd)
{
    if (fd < FD_TRACKED)
        inherited[fd / 8] |= (unsigned char)(1u << (fd % 8));
}

/* Sets close-on-exec on fd unless it was inherited, so that the command
 * gets the caller's descriptors but not the tool's. */
static void close_on_exec_if_own(int fd)
{
    if (fd < FD_TRACKED && (inherited[fd / 8] & (1u << (fd % 8))))
        return;
    fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
}

/* Draws the status line on stderr, cut to the terminal's width so that it
 * never wraps, or clears it when line is NULL. */
static void draw_status(const char *line)
{
    struct winsize ws;
    int width = 80;

    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
        width = ws.ws_col;
    if (line == NULL)
        fputs("\r\033[K", stderr);
    else
        fprintf(stderr, "\r\033[K%.*s", width - 1, line);
    fflush(stderr);
}

/* Reads every pending signal from the signalfd. For each one, calls
 * on_signal(arg, signo, from_kernel). */
static void drain_signals(int fd, void (*on_signal)(void *arg, int signo,
                                                    bool from_kernel),
                          void *arg)
{
    struct signalfd_siginfo si;

    while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        on_signal(arg, (int)si.ssi_signo, si.ssi_code == SI_KERNEL);
}

/* Reads every pending byte of the self-pipe; returns whether `want` was
 * among them. */
static bool drain_events(int fd, char want)
{
    char buf[64];
    ssize_t n;
    bool seen = false;

    while ((n = read(fd, buf, sizeof(buf))) > 0)
        if (memchr(buf, want, (size_t)n) != NULL)
            seen = true;
    return seen;
}

/* ------------------------------------------------------------- signals */

int cr__cli_signals_start(cr__cli *cli)
{
    sigset_t set;
    size_t i;

    each_open_fd(mark_inherited);
    /* Inherited SIG_IGN would reap the command before waitpid saw it. */
    chld_ignored = signal(SIGCHLD, SIG_DFL) == SIG_IGN;
    sigemptyset(&set);
    for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&set, forwarded[i]);
    sigaddset(&set, SIGCHLD);
    if (pthread_sigmask(SIG_BLOCK, &set, &start_mask) != 0) {
        cr__cli_error(cli, "cannot block signals");
        return CR__CLI_EXIT_OSERR;
    }
    cli->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (cli->sigfd < 0) {
        cr__cli_error(cli, "cannot open a signalfd: %s", strerror(errno));
        return CR__CLI_EXIT_OSERR;
    }
    if (pipe2(cli->events, O_CLOEXEC | O_NONBLOCK) != 0) {
        cli->events[0] = cli->events[1] = -1;
        cr__cli_error(cli, "cannot open a pipe: %s", strerror(errno));
        return CR__CLI_EXIT_OSERR;
    }
    return 0;
}

void cr__cli_signals_stop(cr__cli *cli)
{
    if (cli->sigfd >= 0)
        close(cli->sigfd);
    if (cli->events[0] >= 0)
        close(cli->events[0]);
    if (cli->events[1] >= 0)
        close(cli->events[1]);
    cli->sigfd = cli->events[0] = cli->events[1] = -1;
}

void cr__cli_notify_lost(cr__cli *cli)
{
    ssize_t ignored = write(cli->events[1], "L", 1);

    (void)ignored;
}

/* ---------------------------------------------------------- status line */

/* The thread that reads the object's state for the status line. It does
 * the reading (one inspection, a round trip to Redis that a stalled
 * server can hold up to the command timeout) so that the main thread
 * never waits on Redis: signals end a wait as fast with the status line
 * as without it, and the line changes no exit status and no deadline. */
typedef struct status_job {
    cr__cli *cli;
    cr_client *client;    /* the client the wait began with */
    cr__cli_status_fn fn;
    void *ctx;
    int64_t start;        /* when the wait began (monotonic ms) */
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* on the monotonic clock */
    bool stop;            /* the wait is over: read no more */
    bool once;            /* no line to draw: one reading, for the
                           * message if the wait runs out */
    bool fresh;           /* line holds a reading not drawn yet */
    char line[512];
    pthread_t thread;
} status_job;

/* The reader of the wait under way, or of the last one: joined once the
 * client is freed (cr__cli_status_end). */
static status_job *status_reader;

/* The reading thread: a reading at once, then one every STATUS_EVERY_MS
 * after the last one ended, each handed to the main loop ('S'). */
static void *status_main(void *arg)
{
    status_job *j = arg;
    char line[sizeof(j->line)];
    ssize_t ignored;

    pthread_mutex_lock(&j->mu);
    if (j->once)
        cr__cli_sleep_until(&j->cv, &j->mu, &j->stop,
                            j->start + ONCE_AFTER_MS);
    while (!j->stop) {
        pthread_mutex_unlock(&j->mu);
        j->fn(j->cli, j->client, j->ctx, cr__cli_now_ms() - j->start, line,
              sizeof(line));
        pthread_mutex_lock(&j->mu);
        if (j->stop)
            break;
        if (j->once)
            break;
        memcpy(j->line, line, sizeof(line));
        j->fresh = true;
        ignored = write(j->cli->events[1], "S", 1);
        (void)ignored;
        cr__cli_sleep_until(&j->cv, &j->mu, &j->stop,
                            cr__cli_now_ms() + STATUS_EVERY_MS);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Starts the reading thread for a wait, for the status line or, with
 * `once`, for one reading that tells how long the holder seen then has
 * held what the wait is for; NULL when it cannot (then the wait shows no
 * status line). */
static status_job *status_start(cr__cli *cli, cr__cli_status_fn fn,
                                void *ctx, int64_t start, bool once)
{
    status_job *j;

    if (status_reader != NULL)
        return NULL; /* one per run: the last one has not been joined */
    j = calloc(1, sizeof(*j));
    if (j == NULL)
        return NULL;
    j->cli = cli;
    j->client = cli->client;
    j->fn = fn;
    j->ctx = ctx;
    j->start = start;
    j->once = once;
    cr__cli_sync_init(&j->mu, &j->cv);
    if (pthread_create(&j->thread, NULL, status_main, j) != 0) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        free(j);
        return NULL;
    }
    status_reader = j;
    return j;
}

/* Copies the reading not drawn yet into buf; returns whether there was
 * one. */
static bool status_take(status_job *j, char *buf, size_t len)
{
    bool fresh;

    pthread_mutex_lock(&j->mu);
    fresh = j->fresh;
    if (fresh)
        snprintf(buf, len, "%s", j->line);
    j->fresh = false;
    pthread_mutex_unlock(&j->mu);
    return fresh;
}

/* Tells the reading thread that the wait is over, without waiting for a
 * reading under way: it ends by itself, or when the client is freed. */
static void status_stop(status_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->stop = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

void cr__cli_status_end(cr__cli *cli)
{
    status_job *j = status_reader;

    (void)cli;
    if (j == NULL)
        return;
    status_stop(j);
    pthread_join(j->thread, NULL);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
    status_reader = NULL;
}

/* ---------------------------------------------------------------- waits */

/* How long a wait ended by a signal gives a call that may be finishing
 * just then (the lock granted as the signal came) before cutting it off. */
#define ABANDON_GRACE_MS 30

/* How long the client, freed under a call that is cut off, lets it tidy up
 * (a fair-lock waiter leaving the queue) before every command still under
 * way is cut off, whatever the server does. With ABANDON_GRACE_MS, this
 * bounds the time from a signal to the end of a wait. */
#define CUT_GRACE_MS 100

/* Where the waiting thread is; changed under the waiter's mutex. */
typedef enum waiter_state {
    W_CALLING = 0, /* in fn */
    W_RETURNED,    /* fn returned: awaiting the verdict, or undoing */
    W_FINISHED     /* nothing more to do */
} waiter_state;

/* What the main thread decided about the call's result. */
typedef enum waiter_verdict {
    V_PENDING = 0,
    V_KEEP,        /* the wait ended normally: the caller takes the result */
    V_UNDO,        /* a signal came: give back what fn got */
    V_CUT          /* cut off while in fn: touch nothing any more */
} waiter_verdict;

/* A call run on a thread of its own by cr__cli_wait. It is allocated, and
 * left allocated when the thread is left running. */
typedef struct waiter {
    cr__cli *cli;
    cr_status (*fn)(void *ctx);
    void (*undo)(void *ctx);
    void *ctx;
    cr_status rc;
    char error[256];   /* the thread's cr_last_error() after a failure */
    int done_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    waiter_state state;
    waiter_verdict verdict;
} waiter;

/* Ends the run's bound (cli->deadline_ms) once a call obtained what it
 * waited for (rc CR_OK): what was obtained is kept, and given back,
 * whatever the time. Connecting (no client yet) leaves it in force. */
static void bound_over(cr__cli *cli, cr_status rc)
{
    if (rc == CR_OK && cli->client != NULL)
        cr_client_set_deadline(cli->client, 0);
}

/* The waiting thread: runs the call and keeps the detail of a failure (it
 * is per thread), tells the main loop ('R'), waits for its verdict, and
 * gives back what the call got when the wait was abandoned after it
 * returned. A call cut off in fn (V_CUT) touches nothing more. */
static void *waiter_main(void *arg)
{
    waiter *w = arg;
    waiter_verdict v;
    ssize_t ignored;

    w->rc = w->fn(w->ctx);
    if (w->rc != CR_OK && w->rc != CR_BUSY && w->rc != CR_TIMEOUT)
        snprintf(w->error, sizeof(w->error), "%s", cr_last_error());
    pthread_mutex_lock(&w->mu);
    w->state = W_RETURNED;
    ignored = write(w->done_fd, "R", 1);
    while (w->verdict == V_PENDING)
        pthread_cond_wait(&w->cv, &w->mu);
    v = w->verdict;
    pthread_mutex_unlock(&w->mu);
    /* A call cut off touches nothing: its client is being freed. */
    if (v != V_CUT)
        bound_over(w->cli, w->rc);
    if (v == V_UNDO && w->rc == CR_OK && w->undo != NULL)
        w->undo(w->ctx);
    pthread_mutex_lock(&w->mu);
    w->state = W_FINISHED;
    pthread_mutex_unlock(&w->mu);
    (void)ignored;
    return NULL;
}

/* Gives the waiting thread its verdict, V_KEEP or V_UNDO. Returns the
 * state the thread was in then. */
static waiter_state give_verdict(waiter *w, waiter_verdict v)
{
    waiter_state st;

    pthread_mutex_lock(&w->mu);
    st = w->state;
    w->verdict = v;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return st;
}

/* Marks the call as cut off if it is still in fn, so that the thread
 * touches nothing once fn returns. Returns whether it was. */
static bool cut_if_calling(waiter *w)
{
    bool calling;

    pthread_mutex_lock(&w->mu);
    calling = w->state == W_CALLING;
    if (calling)
        w->verdict = V_CUT;
    pthread_mutex_unlock(&w->mu);
    return calling;
}

/* Remembers the first signal that ends a wait; SIGCHLD and the user
 * signals do not. */
static void note_stop_signal(void *arg, int signo, bool from_kernel)
{
    int *stop = arg;

    (void)from_kernel;
    if (*stop == 0 && signo != SIGCHLD && signo != SIGUSR1 &&
        signo != SIGUSR2)
        *stop = signo;
}

/* Polls the self-pipe for the waiting thread's 'R' for at most ms.
 * Returns whether it came. */
static bool await_returned(cr__cli *cli, int64_t ms)
{
    int64_t until = cr__cli_now_ms() + ms, left;

    while ((left = until - cr__cli_now_ms()) > 0) {
        struct pollfd p = {cli->events[0], POLLIN, 0};

        if (poll(&p, 1, (int)left) > 0 && drain_events(cli->events[0], 'R'))
            return true;
    }
    return false;
}

/* Ends a wait abandoned for a signal: the verdict is V_UNDO, so a call
 * that returns within the grace has what it got given back on its thread
 * (a plain release on a server that just answered, awaited to the end).
 * A call still in fn then is cut off: the client is freed under it, which
 * bounds the rest to CUT_GRACE_MS; with no client yet (connecting), the
 * thread is left running and the caller must end the process. Returns
 * whether the thread was joined. */
static bool abandon(cr__cli *cli, waiter *w, pthread_t thread)
{
    if (give_verdict(w, V_UNDO) == W_CALLING) {
        await_returned(cli, ABANDON_GRACE_MS);
        if (cut_if_calling(w)) {
            if (cli->client == NULL) {
                pthread_detach(thread);
                cli->abandoned = true;
                return false;
            }
            cr_client_free_within(cli->client, CUT_GRACE_MS);
            cli->client = NULL;
        }
    }
    pthread_join(thread, NULL);
    return true;
}

int cr__cli_wait(cr__cli *cli, cr_status (*fn)(void *ctx),
                 void (*undo)(void *ctx), void *ctx, cr__cli_status_fn status,
                 cr_status *rc)
{
    int64_t start = cr__cli_now_ms();
    bool drawn = false, returned = false;
    status_job *reader = NULL;
    pthread_t thread;
    waiter *w = calloc(1, sizeof(*w));
    int stop = 0;

    if (w == NULL) {
        /* No memory for a thread: wait here, without interruption. */
        *rc = fn(ctx);
        bound_over(cli, *rc);
        return 0;
    }
    w->cli = cli;
    w->fn = fn;
    w->undo = undo;
    w->ctx = ctx;
    w->done_fd = cli->events[1];
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&thread, NULL, waiter_main, w) != 0) {
        /* No thread: wait here, without interruption or status line. */
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        *rc = fn(ctx);
        bound_over(cli, *rc);
        return 0;
    }
    /* Without a line to draw, one reading when the wait begins lets a
     * message say for how long the holder has held it, if it runs out. */
    if (status != NULL && cli->client != NULL &&
        (cli->status_line ||
         (cli->args->wait_ms != 0 && !cli->args->quiet)))
        reader = status_start(cli, status, ctx, start, !cli->status_line);
    while (!returned && stop == 0) {
        struct pollfd p[2] = {{cli->sigfd, POLLIN, 0},
                              {cli->events[0], POLLIN, 0}};
        char line[512];

        if (reader != NULL && status_take(reader, line, sizeof(line))) {
            draw_status(line);
            drawn = true;
        }
        if (poll(p, 2, -1) < 0 && errno != EINTR) {
            stop = SIGTERM; /* nothing left to wait with */
            break;
        }
        /* A signal read in the same turn as the call's end wins: the
         * command is not started, and what the call got is given back. */
        if (p[0].revents & POLLIN)
            drain_signals(cli->sigfd, note_stop_signal, &stop);
        if (stop == 0 && (p[1].revents & POLLIN))
            returned = drain_events(cli->events[0], 'R');
    }
    /* The line goes before anything else is printed; a reading under way
     * is not waited for (after a signal, freeing the client cuts it). */
    if (reader != NULL)
        status_stop(reader);
    if (drawn)
        draw_status(NULL);
    if (stop == 0) {
        give_verdict(w, V_KEEP);
        pthread_join(thread, NULL);
        *rc = w->rc;
    } else if (abandon(cli, w, thread)) {
        *rc = w->verdict == V_CUT ? CR_ECLOSED : w->rc;
    } else {
        *rc = CR_ECLOSED;
        return stop; /* w stays with the thread left running */
    }
    memcpy(cli->wait_error, w->error, sizeof(cli->wait_error));
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    return stop;
}

/* -------------------------------------------------------------- the child */

/* The variables a run gives its command. An outer run's (a credisson
 * inside a credisson) are not passed on: they describe another hold. */
static const char *const own_vars[] = {
    "CREDISSON_LOCK_NAME=", "CREDISSON_LOCK_OWNER=", "CREDISSON_FENCING_TOKEN=",
    "CREDISSON_SEMAPHORE_NAME=", "CREDISSON_PERMIT_ID="};

/* Whether environment entry `var` is one of own_vars. */
static bool is_own_var(const char *var)
{
    size_t i;

    for (i = 0; i < sizeof(own_vars) / sizeof(own_vars[0]); i++)
        if (strncmp(var, own_vars[i], strlen(own_vars[i])) == 0)
            return true;
    return false;
}

/* Whether environment entry `var` is one of the variables named in
 * `drop` (names without '=', NULL-terminated). */
static bool is_dropped(const char *var, const char *const *drop)
{
    size_t i, len;

    for (i = 0; drop[i] != NULL; i++) {
        len = strlen(drop[i]);
        if (strncmp(var, drop[i], len) == 0 && var[len] == '=')
            return true;
    }
    return false;
}

/* Builds the command's environment: this process's without any of
 * own_vars or of the variables named in `drop`, with each NAME=VALUE of
 * `extra` replacing any variable of the same name. Returns a malloc'd
 * array (the strings are borrowed) or NULL when out of memory. */
static char **build_env(char **extra, const char *const *drop)
{
    size_t n = 0, k = 0, i, j;
    char **env;

    while (environ[n] != NULL)
        n++;
    while (extra[k] != NULL)
        k++;
    env = calloc(n + k + 1, sizeof(*env));
    if (env == NULL)
        return NULL;
    for (i = 0, n = 0; environ[i] != NULL; i++) {
        bool replaced = is_own_var(environ[i]) || is_dropped(environ[i], drop);

        for (j = 0; j < k && !replaced; j++) {
            size_t len = strcspn(extra[j], "=") + 1;

            replaced = strncmp(environ[i], extra[j], len) == 0;
        }
        if (!replaced)
            env[n++] = environ[i];
    }
    for (j = 0; j < k; j++)
        env[n++] = extra[j];
    env[n] = NULL;
    return env;
}

/* Finds the program `file` as execvp() would: as given when it contains a
 * '/', otherwise in each directory of $PATH. Writes its path into out.
 * Returns 0, ENOENT (not found) or EACCES (found, but not executable). */
static int find_program(const char *file, char *out, size_t len)
{
    const char *path = getenv("PATH"), *p;
    int err = ENOENT;

    if (*file == '\0')
        return ENOENT;
    if (strchr(file, '/') != NULL) {
        if (strlen(file) >= len)
            return ENAMETOOLONG;
        strcpy(out, file);
        return 0;
    }
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (p = path;; p++) {
        size_t dlen = strcspn(p, ":");
        struct stat st;
        int n = dlen == 0 ? snprintf(out, len, "./%s", file)
                          : snprintf(out, len, "%.*s/%s", (int)dlen, p, file);

        if (n > 0 && (size_t)n < len && stat(out, &st) == 0 &&
            S_ISREG(st.st_mode)) {
            if (access(out, X_OK) == 0)
                return 0;
            err = EACCES;
        }
        p += dlen;
        if (*p == '\0')
            break;
    }
    return err;
}

/* Starts the command: fork, then in the child restore the signal mask,
 * ask for SIGTERM when the tool dies, and exec. Returns the child's pid,
 * or -1 with *err the errno of the exec that failed (read back through a
 * close-on-exec pipe), or -2 with *err that of the pipe or the fork. */
static pid_t start_child(const char *path, char **argv, char **env, int *err)
{
    pid_t parent = getpid(), pid;
    int pfd[2], e = 0;
    ssize_t n;

    if (pipe2(pfd, O_CLOEXEC) != 0) {
        *err = errno;
        return -2;
    }
    each_open_fd(close_on_exec_if_own);
    pid = fork();
    if (pid < 0) {
        *err = errno;
        close(pfd[0]);
        close(pfd[1]);
        return -2;
    }
    if (pid == 0) {
        if (chld_ignored)
            signal(SIGCHLD, SIG_IGN);
        sigprocmask(SIG_SETMASK, &start_mask, NULL);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(CR__CLI_EXIT_LOST);
#endif
        execve(path, argv, env);
        e = errno;
        n = write(pfd[1], &e, sizeof(e));
        (void)n;
        _exit(CR__CLI_EXIT_NOT_FOUND);
    }
    close(pfd[1]);
    do
        n = read(pfd[0], &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == (ssize_t)sizeof(e)) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        *err = e;
        return -1;
    }
    return pid;
}

/* What the supervision loop knows about the running command. */
typedef struct child {
    pid_t pid;
    bool exited;
    int status;
} child;

/* Passes a signal on to the command, except SIGCHLD (its end is read with
 * waitpid) and signals the kernel sent to the whole terminal's process
 * group, which the command, in that group too, has already received. */
static void forward_signal(void *arg, int signo, bool from_kernel)
{
    child *c = arg;

    if (signo == SIGCHLD || c->exited || from_kernel)
        return;
    kill(c->pid, signo);
}

/* Collects the command's status if it has ended. */
static void reap(child *c)
{
    int status;

    if (!c->exited && waitpid(c->pid, &status, WNOHANG) == c->pid) {
        c->exited = true;
        c->status = status;
    }
}

/* Why the supervision loop stopped the command, if it did. */
typedef enum stop_reason {
    STOP_NONE = 0,
    STOP_LOST,         /* the hold was found lost */
    STOP_RUNNING_OUT   /* its lease was about to end */
} stop_reason;

/* What the supervision loop knows about the hold and the command. */
typedef struct supervision {
    cr__cli *cli;
    const cr__cli_hold *hold;
    child c;
    char cmd_shown[64];
    int64_t deadline;  /* the hold's local deadline; -1: none known */
    int64_t kill_at;   /* when SIGKILL is due; -1: not yet */
    bool lost;         /* the hold is known lost */
    bool lost_handled; /* and the schedule has acted on it */
    bool kill_sent;
    stop_reason stopped;
} supervision;

/* Sends SIGTERM to the command for `why`, with SIGKILL due at kill_at,
 * and says so on stderr. */
static void stop_command(supervision *s, stop_reason why, int64_t now,
                         int64_t kill_at)
{
    const cr__cli_hold *h = s->hold;
    char in[32];

    cr__cli_fmt_ms(kill_at - now, in, sizeof(in));
    if (why == STOP_LOST)
        cr__cli_error(s->cli, "the %s on '%s' was lost; stopping '%s' "
                      "(SIGTERM, SIGKILL in %s)", h->what,
                      s->cli->name_shown, s->cmd_shown, in);
    else if (h->leased)
        cr__cli_error(s->cli, "the lease of the %s on '%s' runs out in %s; "
                      "stopping '%s' (SIGTERM, SIGKILL in %s)", h->what,
                      s->cli->name_shown, in, s->cmd_shown, in);
    else
        cr__cli_error(s->cli, "the %s on '%s' could not be renewed and its "
                      "lease runs out in %s; stopping '%s' (SIGTERM, SIGKILL "
                      "in %s)", h->what, s->cli->name_shown, in, s->cmd_shown,
                      in);
    kill(s->c.pid, SIGTERM);
    s->stopped = why;
    s->kill_at = kill_at;
}

/* One turn of the stop schedule at `now`: reads where the hold stands,
 * then sends what is due. A hold found lost gets SIGTERM at once and
 * SIGKILL kill_after later, or at its deadline if that comes first and
 * has not passed; a hold that stands gets SIGTERM kill_after before its
 * deadline and SIGKILL at it. */
static void schedule(supervision *s, int64_t now)
{
    int64_t ka = s->cli->args->kill_after_ms, k;

    if (!s->lost &&
        s->hold->state(s->hold->ctx, &s->deadline) == CR_ELOST)
        s->lost = true;
    if (s->lost && !s->lost_handled) {
        s->lost_handled = true;
        k = s->deadline > now && s->deadline < now + ka ? s->deadline
                                                        : now + ka;
        if (s->stopped == STOP_NONE)
            stop_command(s, STOP_LOST, now, k);
        else if (k < s->kill_at)
            s->kill_at = k;
    } else if (!s->lost && s->stopped == STOP_NONE && s->deadline >= 0 &&
               now >= s->deadline - ka) {
        stop_command(s, STOP_RUNNING_OUT, now, s->deadline);
    }
    if (s->kill_at >= 0 && !s->kill_sent && now >= s->kill_at) {
        kill(s->c.pid, SIGKILL);
        s->kill_sent = true;
    }
}

/* How long the supervision loop may sleep from `now`: until the next
 * check, SIGTERM or SIGKILL due, whichever comes first, in ms. */
static int sleep_for(const supervision *s, int64_t now, int64_t next_check)
{
    int64_t until = next_check;

    if (s->stopped == STOP_NONE && s->deadline >= 0 &&
        s->deadline - s->cli->args->kill_after_ms < until)
        until = s->deadline - s->cli->args->kill_after_ms;
    if (s->kill_at >= 0 && !s->kill_sent && s->kill_at < until)
        until = s->kill_at;
    if (until - now > INT_MAX)
        return INT_MAX; /* a check more than 24 days away */
    return until <= now ? 0 : (int)(until - now);
}

int cr__cli_run(cr__cli *cli, char **extra_env, const cr__cli_hold *hold)
{
    const cr__cli_args *a = cli->args;
    char path[PATH_MAX], why[384];
    int64_t next_check;
    supervision s;
    char **env;
    int err, code;
    cr_status rc;

    memset(&s, 0, sizeof(s));
    s.cli = cli;
    s.hold = hold;
    s.deadline = s.kill_at = -1;
    cr__cli_printable(a->cmd[0], s.cmd_shown, sizeof(s.cmd_shown));
    err = find_program(a->cmd[0], path, sizeof(path));
    env = err == 0 ? build_env(extra_env, cli->env_drop) : NULL;
    if (err == 0 && env == NULL) {
        err = ENOMEM;
        s.c.pid = -2; /* the system's failure, not the command's */
    } else if (err == 0) {
        s.c.pid = start_child(path, a->cmd, env, &err);
    }
    free(env);
    if (err != 0) {
        rc = hold->release(hold->ctx);
        if (rc != CR_OK && rc != CR_ELOST)
            cr__cli_fail(cli, rc, "cannot release the %s on '%s'",
                         hold->what, cli->name_shown);
        cr__cli_error(cli, "cannot run '%s': %s", s.cmd_shown,
                      strerror(err));
        if (s.c.pid == -2)
            return CR__CLI_EXIT_OSERR;
        return err == ENOENT ? CR__CLI_EXIT_NOT_FOUND
                             : CR__CLI_EXIT_CANNOT_RUN;
    }
    next_check = cr__cli_now_ms() + hold->check_ms;
    schedule(&s, cr__cli_now_ms());
    while (!s.c.exited) {
        struct pollfd p[2] = {{cli->sigfd, POLLIN, 0},
                              {cli->events[0], POLLIN, 0}};
        int64_t now = cr__cli_now_ms();

        if (poll(p, 2, sleep_for(&s, now, next_check)) < 0 &&
            errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            drain_signals(cli->sigfd, forward_signal, &s.c);
        if ((p[1].revents & POLLIN) && drain_events(cli->events[0], 'L'))
            s.lost = true;
        reap(&s.c);
        if (s.c.exited)
            break;
        now = cr__cli_now_ms();
        if (now >= next_check)
            next_check = now + hold->check_ms;
        schedule(&s, now);
    }
    if (!s.c.exited) {
        /* poll() failed: nothing left to supervise with; wait it out. */
        while (waitpid(s.c.pid, &s.c.status, 0) < 0 && errno == EINTR)
            ;
    }
    code = WIFEXITED(s.c.status) ? WEXITSTATUS(s.c.status)
                                 : 128 + WTERMSIG(s.c.status);
    rc = hold->release(hold->ctx);
    if (rc == CR_ELOST) {
        s.lost = true;
    } else if (rc != CR_OK) {
        /* The command did run under the hold, which stays until its lease
         * ends unless somebody releases it; a status that hid this would
         * tell the caller the work is done and the lock free. */
        cr__cli_error(cli, "cannot release the %s on '%s': %s; it stays "
                      "until its lease ends; '%s' exited with status %d",
                      hold->what, cli->name_shown,
                      cr__cli_describe(cli, rc, why, sizeof(why)),
                      s.cmd_shown, code);
        if (s.stopped == STOP_NONE && !s.lost)
            return CR__CLI_EXIT_RELEASE;
    }
    if (s.stopped == STOP_RUNNING_OUT) {
        cr__cli_error(cli, "'%s' was stopped (status %d): the lease of the "
                      "%s on '%s' ran out", s.cmd_shown, code, hold->what,
                      cli->name_shown);
        return CR__CLI_EXIT_LOST;
    }
    if (s.stopped == STOP_LOST) {
        cr__cli_error(cli, "'%s' was stopped (status %d): the %s on '%s' "
                      "was lost", s.cmd_shown, code, hold->what,
                      cli->name_shown);
        return CR__CLI_EXIT_LOST;
    }
    if (s.lost) {
        cr__cli_error(cli, "the %s on '%s' was lost while '%s' ran (it "
                      "exited with status %d)", hold->what, cli->name_shown,
                      s.cmd_shown, code);
        return CR__CLI_EXIT_LOST;
    }
    return code;
}

/* ---------------------------------------------------------- checks, hold */

int cr__cli_check_program(cr__cli *cli)
{
    char path[PATH_MAX], shown[64];
    struct stat st;
    int err = find_program(cli->args->cmd[0], path, sizeof(path));

    /* A path with a '/' is taken as it is: look at it now too. */
    if (err == 0 && stat(path, &st) != 0)
        err = errno;
    else if (err == 0 && (!S_ISREG(st.st_mode) || access(path, X_OK) != 0))
        err = EACCES;
    if (err == 0)
        return 0;
    cr__cli_error(cli, "cannot run '%s': %s",
                  cr__cli_printable(cli->args->cmd[0], shown, sizeof(shown)),
                  strerror(err));
    return err == ENOENT ? CR__CLI_EXIT_NOT_FOUND : CR__CLI_EXIT_CANNOT_RUN;
}

/* Whether the end of standard input ends a hold: when it is a pipe, a
 * socket, or a terminal whose foreground this process is in. A file or
 * /dev/null (a command started in the background by a script) ends at
 * once, and would end every hold; a job in the background of an
 * interactive shell would be stopped for reading the terminal. */
static bool stdin_ends_hold(void)
{
    struct stat st;

    if (fstat(STDIN_FILENO, &st) != 0)
        return false;
    if (isatty(STDIN_FILENO))
        return tcgetpgrp(STDIN_FILENO) == getpgrp();
    return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

/* Reads and drops what standard input has; returns whether it ended (end
 * of file, an error, or the other side hung up). */
static bool stdin_ended(short revents)
{
    char buf[256];
    ssize_t n;

    if (revents & POLLIN) {
        n = read(STDIN_FILENO, buf, sizeof(buf));
        if (n > 0)
            return false;
        return n == 0 || errno != EINTR;
    }
    return (revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

int cr__cli_keep(cr__cli *cli, const cr__cli_hold *hold)
{
    int64_t deadline = -1, next_check, now;
    bool watch_in = stdin_ends_hold(), lost = false, ended = false;
    char why[384];
    int stop = 0;
    cr_status rc;

    next_check = cr__cli_now_ms();
    while (!lost && !ended && stop == 0) {
        struct pollfd p[3] = {{cli->sigfd, POLLIN, 0},
                              {cli->events[0], POLLIN, 0},
                              {watch_in ? STDIN_FILENO : -1, POLLIN, 0}};
        int64_t until;

        now = cr__cli_now_ms();
        if (now >= next_check) {
            next_check = now + hold->check_ms;
            lost = hold->state(hold->ctx, &deadline) == CR_ELOST;
        }
        if (lost || (deadline >= 0 && now >= deadline))
            break;
        until = deadline >= 0 && deadline < next_check ? deadline
                                                       : next_check;
        if (poll(p, 3, until - now > INT_MAX ? INT_MAX : (int)(until - now)) <
                0 &&
            errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            drain_signals(cli->sigfd, note_stop_signal, &stop);
        if ((p[1].revents & POLLIN) && drain_events(cli->events[0], 'L'))
            lost = true;
        if (watch_in && p[2].revents != 0)
            ended = stdin_ended(p[2].revents);
    }
    now = cr__cli_now_ms();
    if (!lost && stop == 0 && !ended && deadline >= 0 && now >= deadline) {
        cr__cli_error(cli, hold->leased
                               ? "the lease of the %s on '%s' ran out"
                               : "the %s on '%s' could not be renewed and "
                                 "its lease ran out",
                      hold->what, cli->name_shown);
        hold->release(hold->ctx);
        return CR__CLI_EXIT_LOST;
    }
    rc = hold->release(hold->ctx);
    if (lost || rc == CR_ELOST) {
        cr__cli_error(cli, "the %s on '%s' was lost while it was held",
                      hold->what, cli->name_shown);
        return CR__CLI_EXIT_LOST;
    }
    if (rc != CR_OK) {
        cr__cli_error(cli, "cannot release the %s on '%s': %s; it stays "
                      "until its lease ends", hold->what, cli->name_shown,
                      cr__cli_describe(cli, rc, why, sizeof(why)));
        return CR__CLI_EXIT_RELEASE;
    }
    return 0;
}
