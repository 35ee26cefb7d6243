/* SPDX-License-Identifier: MIT */
/*
 * A network partition: a lock holder in its own network namespace is cut
 * off from the server (its link set down), its lease runs out, another
 * client takes the lock, and when the link comes back the holder learns
 * that it lost the lock (the lost callback, then CR_ELOST from unlock).
 * The history shows that the second holder got in only after the first
 * one's lease had ended.
 *
 * The test makes two network namespaces of its own, S (the server and the
 * test itself) and C (the holder), joined by a veth pair. Every address is
 * in the loopback range, 127.77.0.1 in S and 127.77.0.2 in C, with
 * route_localnet set inside the two namespaces only, so nothing of the
 * machine's own network is touched or addressed. Without iproute2 or the
 * right to make namespaces, the test is skipped (exit 77).
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "history.h"
#include "lock_common.h"

#define SERVER_ADDR "127.77.0.1"
#define HOLDER_ADDR "127.77.0.2"

static char ns_server[32], ns_holder[32], veth_server[16], veth_holder[16];
static int home_ns = -1;
static bool made_ns;
static pid_t holder_pid;

static bool sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs a shell command quietly; true when it exited 0. */
static bool
sh(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    int rc;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
    rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

/* Removes the namespaces (and with them the veth pair). */
static void
remove_namespaces(void)
{
    if (!made_ns)
        return;
    sh("ip netns del %s", ns_server);
    sh("ip netns del %s", ns_holder);
    made_ns = false;
}

/* Makes S and C and the veth pair between them; false when not allowed. */
static bool
make_namespaces(void)
{
    int pid = (int)getpid();

    snprintf(ns_server, sizeof(ns_server), "cr-part-s-%d", pid);
    snprintf(ns_holder, sizeof(ns_holder), "cr-part-c-%d", pid);
    snprintf(veth_server, sizeof(veth_server), "crps%d", pid % 10000000);
    snprintf(veth_holder, sizeof(veth_holder), "crpc%d", pid % 10000000);
    if (!sh("ip netns add %s", ns_server))
        return false;
    made_ns = true;
    if (!sh("ip netns add %s", ns_holder) ||
        !sh("ip link add %s type veth peer name %s", veth_server, veth_holder) ||
        !sh("ip link set %s netns %s", veth_server, ns_server) ||
        !sh("ip link set %s netns %s", veth_holder, ns_holder))
        return false;
    /* In S, loopback holds 127.0.0.1 alone, so that 127.77.0.2 is reached
     * through the veth and not taken for a local address. */
    if (!sh("ip -n %s link set lo up", ns_server) ||
        !sh("ip -n %s addr del 127.0.0.1/8 dev lo", ns_server) ||
        !sh("ip -n %s addr add 127.0.0.1/32 dev lo", ns_server))
        return false;
    if (!sh("ip netns exec %s sysctl -qw net.ipv4.conf.all.route_localnet=1 "
            "net.ipv4.conf.%s.route_localnet=1", ns_server, veth_server) ||
        !sh("ip netns exec %s sysctl -qw net.ipv4.conf.all.route_localnet=1 "
            "net.ipv4.conf.%s.route_localnet=1", ns_holder, veth_holder))
        return false;
    return sh("ip -n %s addr add %s peer %s dev %s", ns_server, SERVER_ADDR,
              HOLDER_ADDR, veth_server) &&
           sh("ip -n %s addr add %s peer %s dev %s", ns_holder, HOLDER_ADDR,
              SERVER_ADDR, veth_holder) &&
           sh("ip -n %s link set %s up", ns_server, veth_server) &&
           sh("ip -n %s link set %s up", ns_holder, veth_holder);
}

/* Moves the calling (main) thread into namespace `name`; threads and
 * processes it starts afterwards are there too. */
static bool
enter_namespace(const char *name)
{
    char path[128];
    int fd, rc;

    snprintf(path, sizeof(path), "/run/netns/%s", name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    rc = setns(fd, CLONE_NEWNET);
    close(fd);
    return rc == 0;
}

/* Skips the whole program, with a reason. */
static void
skip_all(const char *why)
{
    fprintf(stderr, "test_partition: SKIP: %s\n", why);
    remove_namespaces();
    exit(CR_TEST_SKIP);
}

/* Group setup: the namespaces, then a server inside S bound to loopback
 * and to S's end of the veth. */
static int
partition_up(void **state)
{
    char extra[128];
    int rc;

    (void)state;
    if (geteuid() != 0)
        skip_all("needs root to make network namespaces");
    if (!sh("ip -V"))
        skip_all("iproute2 (ip) is not installed");
    home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home_ns < 0)
        skip_all("cannot open /proc/self/ns/net");
    if (!make_namespaces())
        skip_all("ip netns add or the veth set-up is not permitted here");
    if (!enter_namespace(ns_server))
        skip_all("setns into the test's namespace is not permitted");
    /* Redis counts only 127.0.0.1 and ::1 as local: protected mode would
     * refuse the holder. The server is reachable from S and C only. */
    snprintf(extra, sizeof(extra), "--bind 127.0.0.1 %s --protected-mode no",
             SERVER_ADDR);
    rc = cr_test_redis_start(&test_redis, extra);
    if (rc == CR_TEST_SKIP)
        skip_all("redis-server is not on the PATH");
    return rc;
}

/* Group teardown: the holder, the server, back home, the namespaces. */
static int
partition_down(void **state)
{
    (void)state;
    if (holder_pid > 0) {
        kill(holder_pid, SIGKILL);
        waitpid(holder_pid, NULL, 0);
        holder_pid = 0;
    }
    cr_test_redis_destroy(&test_redis);
    if (home_ns >= 0) {
        setns(home_ns, CLONE_NEWNET);
        close(home_ns);
        home_ns = -1;
    }
    remove_namespaces();
    return 0;
}

/* A lower bound, in monotonic microseconds, of when `key` expires. */
static int64_t
expiry_lower_bound(const char *key)
{
    int64_t sent = cr_hist_now_us();
    long long pttl = redis_int("PTTL %s", key);

    return pttl > 0 ? sent + (pttl - 1) * 1000 : 0;
}

static void
test_partition_cut_off_holder_loses_its_lease_and_learns_it(void **state)
{
    char worker[512], url[64], fd[16], line[32], want[16];
    char *argv[16];
    cr_hist *h = cr_hist_new(16, 2);
    cr_hist_report rep;
    int to[2], from[2];
    int64_t until;
    cr_lock *l;
    long ev;

    (void)state;
    assert_non_null(h);
    cr_test_worker_path("rel_worker", worker, sizeof(worker));
    snprintf(url, sizeof(url), "redis://%s:%d", SERVER_ADDR, test_redis.port);
    snprintf(fd, sizeof(fd), "%d", cr_hist_fd(h));
    argv[0] = "ip";
    argv[1] = "netns";
    argv[2] = "exec";
    argv[3] = ns_holder;
    argv[4] = worker;
    argv[5] = "hold";
    argv[6] = url;
    argv[7] = "lock";
    argv[8] = "partitioned";
    argv[9] = "1500"; /* watchdog timeout: the lease */
    argv[10] = fd;
    argv[11] = "0";
    argv[12] = "500"; /* command and connect timeouts */
    argv[13] = NULL;
    assert_int_equal(pipe(to), 0);
    assert_int_equal(pipe(from), 0);
    holder_pid = fork();
    assert_true(holder_pid >= 0);
    if (holder_pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]);
        close(from[0]);
        execvp("ip", argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    assert_true(cr_test_read_line(from[0], line, sizeof(line), slow(10000)));
    assert_string_equal(line, "L");
    assert_int_equal(cr_lock_new(test_client, "partitioned", &l), CR_OK);
    assert_int_equal(cr_lock_try_lock(l, 0, CR_LEASE_WATCHDOG), CR_BUSY);

    /* The cut: S's end goes down, C's loses its carrier. */
    assert_true(sh("ip -n %s link set %s down", ns_server, veth_server));
    /* Let what was already on its way land, then read the lease left. */
    usleep(100000);
    until = expiry_lower_bound("partitioned");
    assert_true(until > 0);
    cr_hist_set_valid_until(h, 0, until);
    assert_int_equal(cr_lock_try_lock(l, slow(10000), CR_LEASE_WATCHDOG), CR_OK);
    ev = cr_hist_begin(h, 1);
    fprintf(stderr, "partition: second holder in %lld ms after the first "
                    "lease's end\n",
            (long long)(cr_hist_now_us() - until) / 1000);

    /* The link comes back: the holder's next renewal finds the hold gone. */
    assert_true(sh("ip -n %s link set %s up", ns_server, veth_server));
    assert_true(cr_test_read_line(from[0], line, sizeof(line), slow(15000)));
    assert_string_equal(line, "X");
    assert_int_equal(write(to[1], "U\n", 2), 2);
    assert_true(cr_test_read_line(from[0], line, sizeof(line), slow(10000)));
    snprintf(want, sizeof(want), "U %d", (int)CR_ELOST);
    assert_string_equal(line, want);
    assert_int_equal(write(to[1], "Q\n", 2), 2);
    waitpid(holder_pid, NULL, 0);
    holder_pid = 0;
    close(to[1]);
    close(from[0]);

    cr_hist_end(h, ev);
    cr_hist_done(h, 1);
    assert_int_equal(cr_lock_unlock(l), CR_OK);
    cr_hist_check(h, 1, &rep);
    cr_hist_print("partition/lock", &rep);
    assert_int_equal(rep.violations, 0);
    assert_int_equal(rep.hung, 0);
    assert_int_equal(rep.holds, 2);
    cr_lock_free(l);
    cr_hist_free(h);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_partition_cut_off_holder_loses_its_lease_and_learns_it,
            client_up, client_down),
    };

    return cmocka_run_group_tests(tests, partition_up, partition_down);
}
