# SPDX-License-Identifier: MIT
# What the shell tests of credisson(1) share, sourced by each of them: a
# private redis-server on a free loopback port, a way to run the built
# credisson (under valgrind when CR_TEST_SLOW=1), assertions, and a runner
# that prints cmocka-style lines and ends with "N passed, N failed".
#
# Each test is a shell function run in a subshell on a flushed server; an
# assertion that fails prints why and exits that subshell with 1.

set -u

: "${CR_TEST_BUILDDIR:=$(pwd)}"
: "${CR_TEST_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
CLI_BIN="$CR_TEST_BUILDDIR/credisson"
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/credisson-cli-test.XXXXXX")
REDIS_PID=
PORT=
t_passed=0
t_failed=0

# ------------------------------------------------------------------ timing

# Prints ms scaled for valgrind runs (ten times longer with CR_TEST_SLOW=1).
slow() {
    if [ "${CR_TEST_SLOW:-0}" = 1 ]; then echo $(($1 * 10)); else echo "$1"; fi
}

# Prints the lease (ms) of a hold whose command credisson must kill before
# the lease ends. credisson kills it 1 % + 2 ms before the end; that margin
# must outlast the scheduling delays between the deadline and the test's
# seeing the command dead (credisson's wake, the command's exit, the
# watcher's wake), which a loaded machine stretched past the 32 ms of a
# 3 s lease. 10 s leaves 102 ms; runs scaled by slow get 30 s (302 ms).
kill_lease() {
    local ms
    ms=$(slow 3000)
    [ "$ms" -ge 10000 ] || ms=10000
    echo "$ms"
}

# Prints the wall clock in ms since the epoch (bash's EPOCHREALTIME: no
# process is started, so the reading is taken when asked).
epoch_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((t / 1000))
}

# Sleeps for ms milliseconds.
msleep() {
    sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"
}

# Waits until the command "$@" succeeds, polling every 50 ms, for at most
# the first argument in ms (scaled by slow). Returns 1 when it never did.
wait_until() {
    local limit=$(slow "$1") waited=0
    shift
    until "$@"; do
        [ "$waited" -ge "$limit" ] && return 1
        msleep 50
        waited=$((waited + 50))
    done
}

# ------------------------------------------------------------------ server

# Options redis-cli needs for the servers start_redis starts (--tls
# --cacert ... for TLS ones).
SRV_CLI_OPTS=()

# Starts a redis-server with the options "$@" added on a free loopback
# port (its TLS port when the options have --tls-cert-file) and waits
# until it answers as the one started. Sets SRV_PORT and SRV_PID; the
# server is stopped at the end of the script if not before. Exits 77
# (automake's SKIP) when there is no redis-server.
start_redis() {
    local try port
    if ! command -v redis-server >/dev/null ||
        ! command -v redis-cli >/dev/null; then
        echo "SKIP: redis-server or redis-cli not found"
        exit 77
    fi
    for try in 1 2 3 4 5 6 7 8; do
        port=$((20000 + (RANDOM * 7 + $$ + try * 131) % 40000))
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
        case " $* " in
        *" --tls-cert-file "*)
            redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 \
                --save '' --appendonly no --dir "$SCRATCH" \
                --logfile "$SCRATCH/redis-$port.log" "$@" >/dev/null 2>&1 &
            ;;
        *)
            redis-server --port "$port" --bind 127.0.0.1 --save '' \
                --appendonly no --dir "$SCRATCH" \
                --logfile "$SCRATCH/redis-$port.log" "$@" >/dev/null 2>&1 &
            ;;
        esac
        SRV_PID=$!
        SRV_PORT=$port
        echo "$SRV_PID" >>"$SCRATCH/servers"
        wait_until 5000 server_is_ours "$SRV_PORT" "$SRV_PID" && return 0
        stop_redis "$SRV_PID"
    done
    echo "cannot start redis-server" >&2
    exit 1
}

# Succeeds when the server answering on port $1 is process $2 (another
# one may have taken the port first).
server_is_ours() {
    local pid
    pid=$(redis-cli "${SRV_CLI_OPTS[@]}" -p "$1" info server 2>/dev/null |
        tr -d '\r' | sed -n 's/^process_id://p')
    [ -n "$pid" ] && [ "$pid" = "$2" ]
}

# Stops the server of pid $1 at once (SIGKILL: it may be stalled).
stop_redis() {
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    return 0
}

# Starts the test server shared by a script's tests and exports
# CREDISSON_URL.
redis_up() {
    start_redis
    REDIS_PID=$SRV_PID
    PORT=$SRV_PORT
    export CREDISSON_URL="redis://127.0.0.1:$PORT"
}

# Stops the servers and removes the scratch directory.
cleanup() {
    local pid
    if [ -f "$SCRATCH/servers" ]; then
        while read -r pid; do
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        done <"$SCRATCH/servers"
    fi
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

# redis-cli on the test server.
rcli() {
    redis-cli -p "$PORT" "$@"
}

# Succeeds when the waiting line of object $1 (credisson_line:{$1}, where
# the waiters of a lock or a semaphore queue) has $2 waiters, on the
# server on port $3 (default: the test server).
waiters_in_line() {
    [ "$(redis-cli -p "${3:-$PORT}" zcard "credisson_line:{$1}")" = "$2" ]
}

# ------------------------------------------------------------------- tool

# Runs the built credisson; under valgrind when CR_TEST_SLOW=1 (through
# libtool, which knows where the uninstalled library is).
cli() {
    (cli_exec "$@")
}

# As cli, but replacing the calling (sub)shell, so that `cli_exec ... &`
# leaves the pid of credisson itself (or of valgrind running it) in $!.
cli_exec() {
    if [ "${CR_TEST_SLOW:-0}" = 1 ] && [ "${CR_TEST_SANITIZED:-0}" != 1 ] &&
        command -v valgrind >/dev/null; then
        exec "$CR_TEST_BUILDDIR/libtool" --mode=execute valgrind -q \
            --leak-check=full --show-leak-kinds=definite,indirect,possible \
            --errors-for-leak-kinds=definite,indirect,possible \
            --error-exitcode=100 --child-silent-after-fork=yes \
            --suppressions="$CR_TEST_SRCDIR/tests/valgrind.supp" \
            --suppressions="$CR_TEST_SRCDIR/tests/cli/valgrind.supp" \
            "$CLI_BIN" "$@"
    else
        exec "$CLI_BIN" "$@"
    fi
}

# ------------------------------------------------------------- assertions

# Fails the test with a message.
fail() {
    echo "    $*" >&2
    exit 1
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
    [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# expect_contains HAYSTACK NEEDLE WHAT
expect_contains() {
    case "$1" in
    *"$2"*) ;;
    *) fail "$3: '$2' not in: $1" ;;
    esac
}

# expect_not_contains HAYSTACK NEEDLE WHAT
expect_not_contains() {
    case "$1" in
    *"$2"*) fail "$3: '$2' found in: $1" ;;
    esac
}

# expect_lines TEXT N WHAT: TEXT has exactly N lines.
expect_lines() {
    local n
    n=$(printf '%s' "$1" | grep -c '')
    [ "$n" = "$2" ] || fail "$3: $n lines, expected $2: $1"
}

# Succeeds when the key $1 exists on the test server.
key_exists() {
    [ "$(rcli exists "$1")" = 1 ]
}

# Succeeds when the file $1 exists.
file_exists() {
    [ -e "$1" ]
}

# Succeeds when process $1 (credisson, or valgrind running it) has a child
# that runs program $2 (its name in /proc), started from any of its
# threads.
has_child() {
    local c
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        [ "$(cat /proc/"$c"/comm 2>/dev/null)" = "$2" ] && return 0
    done
    return 1
}

# Runs credisson with "$@", keeping its exit status in $rc and its
# output in $out and $err.
run_cli() {
    run_into cli "$@"
}

# As run_cli, but never under valgrind: for a loop of hundreds of runs
# that checks a table rather than memory (valgrind costs about 0.45 s of
# CPU a run; the same paths run under valgrind in test_cli_args' parser
# tests and in the other scripts, and under ASan in the sanitizer pass).
run_cli_direct() {
    run_into "$CLI_BIN" "$@"
}

# Runs "$@" with its exit status in $rc and its output in $out and $err.
run_into() {
    "$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
    rc=$?
    out=$(cat "$SCRATCH/out")
    err=$(cat "$SCRATCH/err")
}

# Checks that the text on stdin is valid JSON: with python3 or jq when
# there is one, otherwise by a rough look (one line, braces at both ends,
# balanced brackets outside strings).
json_ok() {
    local text
    text=$(cat)
    if command -v python3 >/dev/null &&
        python3 -c 'import json' 2>/dev/null; then
        printf '%s' "$text" | python3 -m json.tool >/dev/null
    elif command -v jq >/dev/null; then
        printf '%s' "$text" | jq -e . >/dev/null
    else
        printf '%s\n' "$text" | awk '
            NR > 1 { bad = 1 }
            { s = $0; depth = 0; instr = 0
              if (substr(s, 1, 1) != "{" || substr(s, length(s), 1) != "}")
                  bad = 1
              for (i = 1; i <= length(s); i++) {
                  c = substr(s, i, 1)
                  if (instr) {
                      if (c == "\\") i++
                      else if (c == "\"") instr = 0
                      continue
                  }
                  if (c == "\"") instr = 1
                  else if (c == "{" || c == "[") depth++
                  else if (c == "}" || c == "]") {
                      depth--
                      if (depth < 0) bad = 1
                  }
              }
              if (depth != 0 || instr) bad = 1 }
            END { exit bad }'
    fi
}

# ----------------------------------------------------------------- runner

# Runs the test function $1 in a subshell on a flushed server.
run_test() {
    local name=$1
    echo "[ RUN      ] $name"
    [ -n "$PORT" ] && rcli flushall >/dev/null
    rm -rf "$SCRATCH/t"
    mkdir -p "$SCRATCH/t"
    if (cd "$SCRATCH/t" && "$name"); then
        echo "[       OK ] $name"
        t_passed=$((t_passed + 1))
    else
        echo "[  FAILED  ] $name"
        t_failed=$((t_failed + 1))
    fi
}

# Prints the summary and exits non-zero when a test failed.
finish() {
    echo "$t_passed passed, $t_failed failed"
    [ "$t_failed" = 0 ]
    exit $?
}

if [ ! -x "$CLI_BIN" ]; then
    echo "credisson not built at $CLI_BIN" >&2
    exit 1
fi
