/* SPDX-License-Identifier: MIT */
/*
 * The runner of the credisson tool: waits that a signal can interrupt, and
 * a command run as a child while a lock or permit is held.
 *
 * The signals the tool forwards, and SIGCHLD, are blocked in every thread
 * (the mask is set before the library starts its threads) and read from a
 * signalfd by the main thread, which also polls a self-pipe written by the
 * library's watchdog thread when a hold is found lost. So no signal handler
 * runs anywhere, and the main loop sees every event in order.
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

#include "cli.h"

extern char **environ;

/* The signals passed on to the command (and that end a wait). */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                SIGUSR2};

/* How often the status line is redrawn while waiting. */
#define STATUS_EVERY_MS 500

/* How long an interrupted wait gives its call to finish before the client
 * is freed under it. */
#define ABANDON_GRACE_MS 300

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

/* Milliseconds on the monotonic clock. */
static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* ---------------------------------------------------------------- waits */

/* A call run on a thread of its own by cr__cli_wait. */
typedef struct waiter {
    cr_status (*fn)(void *ctx);
    void *ctx;
    cr_status rc;
    char error[256];   /* the thread's cr_last_error() after a failure */
    int done_fd;
} waiter;

/* The waiting thread: runs the call, keeps the detail of a failure (it is
 * per thread), then tells the main loop. */
static void *waiter_main(void *arg)
{
    waiter *w = arg;
    ssize_t ignored;

    w->rc = w->fn(w->ctx);
    if (w->rc != CR_OK && w->rc != CR_BUSY && w->rc != CR_TIMEOUT)
        snprintf(w->error, sizeof(w->error), "%s", cr_last_error());
    ignored = write(w->done_fd, "D", 1);
    (void)ignored;
    return NULL;
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

int cr__cli_wait(cr__cli *cli, cr_status (*fn)(void *ctx), void *ctx,
                 cr__cli_status_fn status, cr_status *rc)
{
    int64_t start = now_ms(), next_draw = start;
    bool drawn = false, done = false;
    pthread_t thread;
    waiter w;
    int stop = 0;

    w.fn = fn;
    w.ctx = ctx;
    w.rc = CR_OK;
    w.error[0] = '\0';
    w.done_fd = cli->events[1];
    if (pthread_create(&thread, NULL, waiter_main, &w) != 0) {
        /* No thread: wait here, without interruption or status line. */
        *rc = fn(ctx);
        return 0;
    }
    while (!done && stop == 0) {
        struct pollfd p[2] = {{cli->sigfd, POLLIN, 0},
                              {cli->events[0], POLLIN, 0}};
        int timeout = -1;

        if (cli->status_line && status != NULL) {
            int64_t now = now_ms();

            if (now >= next_draw) {
                char line[512];

                status(cli, ctx, now - start, line, sizeof(line));
                draw_status(line);
                drawn = true;
                next_draw = now + STATUS_EVERY_MS;
            }
            timeout = (int)(next_draw - now);
        }
        if (poll(p, 2, timeout) < 0 && errno != EINTR)
            break;
        if (p[1].revents & POLLIN)
            done = drain_events(cli->events[0], 'D');
        if (!done && (p[0].revents & POLLIN))
            drain_signals(cli->sigfd, note_stop_signal, &stop);
    }
    if (drawn)
        draw_status(NULL);
    if (!done) {
        /* The call may be finishing just now (the lock granted as the
         * signal came): a moment's grace lets the caller release what it
         * got through the live client. */
        struct pollfd p = {cli->events[0], POLLIN, 0};

        if (poll(&p, 1, ABANDON_GRACE_MS) > 0)
            done = drain_events(cli->events[0], 'D');
    }
    if (!done) {
        /* Freeing the client makes the waiting call return CR_ECLOSED
         * (a fair-lock waiter leaves the queue on its way out). */
        cr_client_free(cli->client);
        cli->client = NULL;
    }
    pthread_join(thread, NULL);
    *rc = w.rc;
    memcpy(cli->wait_error, w.error, sizeof(cli->wait_error));
    if (stop == 0 && !done)
        stop = SIGTERM; /* poll() failed: nothing left to wait with */
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

/* Builds the command's environment: this process's without any of
 * own_vars, with each NAME=VALUE of `extra` replacing any variable of the
 * same name. Returns a malloc'd array (the strings are borrowed) or NULL
 * when out of memory. */
static char **build_env(char **extra)
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
        bool replaced = is_own_var(environ[i]);

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

int cr__cli_run(cr__cli *cli, char **extra_env, const cr__cli_hold *hold)
{
    const cr__cli_args *a = cli->args;
    char path[PATH_MAX], cmd_shown[64];
    int64_t next_check, kill_at = -1;
    bool lost = false, term_sent = false;
    char **env;
    child c;
    int err, code;
    cr_status rc;

    cr__cli_printable(a->cmd[0], cmd_shown, sizeof(cmd_shown));
    err = find_program(a->cmd[0], path, sizeof(path));
    env = err == 0 ? build_env(extra_env) : NULL;
    memset(&c, 0, sizeof(c));
    if (err == 0 && env == NULL) {
        err = ENOMEM;
        c.pid = -2; /* the system's failure, not the command's */
    } else if (err == 0) {
        c.pid = start_child(path, a->cmd, env, &err);
    }
    free(env);
    if (err != 0) {
        rc = hold->release(hold->ctx);
        if (rc != CR_OK && rc != CR_ELOST)
            cr__cli_fail(cli, rc, "cannot release the %s on '%s'",
                         hold->what, cli->name_shown);
        cr__cli_error(cli, "cannot run '%s': %s", cmd_shown, strerror(err));
        if (c.pid == -2)
            return CR__CLI_EXIT_OSERR;
        return err == ENOENT ? CR__CLI_EXIT_NOT_FOUND
                             : CR__CLI_EXIT_CANNOT_RUN;
    }
    next_check = now_ms() + hold->check_ms;
    while (!c.exited) {
        struct pollfd p[2] = {{cli->sigfd, POLLIN, 0},
                              {cli->events[0], POLLIN, 0}};
        int64_t now = now_ms(), timeout = next_check - now;

        if (kill_at >= 0 && kill_at - now < timeout)
            timeout = kill_at - now;
        if (timeout > INT_MAX)
            timeout = INT_MAX; /* a check more than 24 days away */
        if (poll(p, 2, timeout < 0 ? 0 : (int)timeout) < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            drain_signals(cli->sigfd, forward_signal, &c);
        if ((p[1].revents & POLLIN) && drain_events(cli->events[0], 'L'))
            lost = true;
        reap(&c);
        if (c.exited)
            break;
        now = now_ms();
        if (now >= next_check) {
            bool gone = false;

            if (hold->check(hold->ctx, &gone) == CR_OK && gone)
                lost = true;
            next_check = now + hold->check_ms;
        }
        if (lost && !term_sent) {
            char grace[32];

            cr__cli_error(cli, "the %s on '%s' was lost; stopping '%s' "
                          "(SIGTERM, SIGKILL after %s)", hold->what,
                          cli->name_shown, cmd_shown,
                          cr__cli_fmt_ms(a->kill_after_ms, grace,
                                         sizeof(grace)));
            kill(c.pid, SIGTERM);
            term_sent = true;
            kill_at = now + a->kill_after_ms;
        } else if (kill_at >= 0 && now >= kill_at) {
            kill(c.pid, SIGKILL);
            kill_at = -1;
        }
    }
    if (!c.exited) {
        /* poll() failed: nothing left to supervise with; wait it out. */
        while (waitpid(c.pid, &c.status, 0) < 0 && errno == EINTR)
            ;
    }
    code = WIFEXITED(c.status) ? WEXITSTATUS(c.status)
                               : 128 + WTERMSIG(c.status);
    rc = hold->release(hold->ctx);
    if (rc == CR_ELOST) {
        lost = true;
    } else if (rc != CR_OK) {
        /* The command did run under the hold; it will expire by itself. */
        cr__cli_fail(cli, rc, "warning: cannot release the %s on '%s'",
                     hold->what, cli->name_shown);
    }
    if (lost) {
        if (!term_sent)
            cr__cli_error(cli, "the %s on '%s' was lost while '%s' ran "
                          "(it exited with status %d)", hold->what,
                          cli->name_shown, cmd_shown, code);
        return CR__CLI_EXIT_LOST;
    }
    return code;
}
