#!/bin/bash
# SPDX-License-Identifier: MIT
# credisson(1)'s bound: whatever the server does, a run ends within its
# wait (none for a command that does not wait) plus one command timeout
# of its start, connecting included. Every command is run at once against
# a server stalled by DEBUG SLEEP, one stopped by SIGSTOP, a listener that
# takes connections and never answers, and a rediss:// URL to a plain port
# (a TLS handshake the server never answers); the waiting ones also
# against a server that stalls while they wait behind holders.
#
# A run is timed from its start by the shell, so its time holds what the
# bound leaves out: the process's start and exit, and its wake-up at the
# deadline, which a loaded machine stretches. That is measured in the
# same moment: runs of the same scheme that ask nothing of a server (a
# refused connection ends at once) are started beside the runs under
# test, and the longest of them counts twice in the margin (once for the
# start and exit, once for the wake-up, which waits behind the same
# load), with 250 ms more (slow).
# The command timeout is long enough that the bound before the fix (a
# connect timeout and a command timeout for connecting alone: 3 s here)
# lies well past the bound and its margin.

. "${CR_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/cli/lib.sh"

CMD_MS=1500
WAIT_MS=200
# A wait for the scenario where the server stalls while the commands
# wait: long enough for every one of them to be in its wait first.
LONG_WAIT_MS=1500
# Under valgrind (and the sanitizers) a run is slower from its start to
# its first answer, which the bound counts; its start before main, slower
# still, it does not. A few times these, not ten, keep the runs short.
if [ "${CR_TEST_SLOW:-0}" = 1 ]; then
    CMD_MS=5000
    WAIT_MS=1000
    LONG_WAIT_MS=5000
fi

# The waiting commands, one a line: a label, then the arguments after the
# common options (a command that waits has --wait added).
WAITING='lock|lock b:lock -- true
fair lock|lock b:fair --fair -- true
fenced lock|lock b:fenced --fenced -- true
read lock|lock b:rw --read -- true
write lock|lock b:rw --write -- true
semaphore|semaphore b:sem -- true
latch await|latch b:latch await
barrier|barrier b:bar --parties 2
ratelimit|ratelimit b:rate -- true'

# The commands that do not wait.
NOT_WAITING='inspect|inspect b:lock
semaphore available|semaphore b:sem available
semaphore set|semaphore b:sem set 1
semaphore add|semaphore b:sem add 1
latch count|latch b:latch count
latch set|latch b:other set 1
latch count-down|latch b:latch count-down
ratelimit available|ratelimit b:rate available
ratelimit set-rate|ratelimit b:rate set-rate 5/1s
barrier reset|barrier b:bar reset
unlock --force|unlock --force b:lock --yes
delete|delete b:latch --yes'

# How many reference runs go beside the runs under test.
REFS=3

# Under valgrind (CR_TEST_SLOW=1 without the sanitizers) a run costs
# seconds of processor before it asks anything, and two dozen at once
# would take minutes: there, the lock, the semaphore and the latch's await,
# and two that do not wait, stand for the rest, their memory checked (the
# plain and the sanitized runs time every command).
if [ "${CR_TEST_SLOW:-0}" = 1 ] && [ "${CR_TEST_SANITIZED:-0}" != 1 ]; then
    WAITING=$(grep -E '^(lock|semaphore|latch await)[|]' <<<"$WAITING")
    NOT_WAITING=$(grep -E '^(inspect|semaphore set)[|]' <<<"$NOT_WAITING")
    REFS=2
fi
# The pids of the runs under way.
RUNS=()

# start_all URL WAIT_MS WHICH: starts, in the background in ./runs/, one
# run of every command of WHICH ("waiting", "not_waiting" or "both")
# against URL (the waiting ones with --wait WAIT_MS), and the reference
# runs; each writes its status, its time in ms and its stderr.
start_all() {
    local url=$1 wait_ms=$2 which=$3 line label args i=0 list=
    mkdir -p runs
    case $which in
    waiting) list=$WAITING ;;
    not_waiting) list=$NOT_WAITING ;;
    both) list="$WAITING"$'\n'"$NOT_WAITING" ;;
    esac
    while IFS= read -r line; do
        label=${line%%|*}
        args=${line#*|}
        i=$((i + 1))
        echo "$label" >"runs/$i.label"
        case "$WAITING" in
        *"|$args"*) echo "$wait_ms" >"runs/$i.wait" ;;
        *) echo 0 >"runs/$i.wait" ;;
        esac
        # shellcheck disable=SC2086 # the arguments are words
        timed_run "runs/$i" --url "$url" --command-timeout "${CMD_MS}ms" \
            $(with_wait "$args" "$(cat "runs/$i.wait")") &
        RUNS+=($!)
    done <<<"$list"
    # The references speak the same scheme: a TLS one makes its context
    # (under valgrind, seconds) before it is refused.
    for i in $(seq 1 "$REFS"); do
        timed_run "runs/ref$i" --url "${url%%://*}://127.0.0.1:1" \
            --command-timeout "${CMD_MS}ms" latch b:latch count &
        RUNS+=($!)
    done
}

# Waits for the runs start_all started.
join_all() {
    wait "${RUNS[@]}" 2>/dev/null
    RUNS=()
    return 0
}

# with_wait ARGS WAIT_MS: ARGS with "--wait WAIT_MS" before its "--" (at
# its end when it has none) when the command waits (WAIT_MS > 0), else
# ARGS.
with_wait() {
    if [ "$2" -le 0 ]; then
        echo "$1"
    elif [[ "$1" == *" -- "* ]]; then
        echo "${1%% -- *} --wait $2ms -- ${1#* -- }"
    else
        echo "$1 --wait $2ms"
    fi
}

# timed_run PREFIX ARGS...: runs credisson with ARGS, writing PREFIX.rc,
# PREFIX.ms (from just before the start to just after the end) and
# PREFIX.err.
timed_run() {
    local prefix=$1 t0 t1 rc
    shift
    t0=$(epoch_ms)
    cli "$@" </dev/null >/dev/null 2>"$prefix.err"
    rc=$?
    t1=$(epoch_ms)
    echo "$rc" >"$prefix.rc"
    echo $((t1 - t0)) >"$prefix.ms"
}

# The margin over the promised bound: twice the longest reference run,
# and 250 ms (slow).
margin() {
    local i m=0 ms
    for i in $(seq 1 "$REFS"); do
        ms=$(cat "runs/ref$i.ms")
        [ "$ms" -gt "$m" ] && m=$ms
    done
    echo $((2 * m + $(slow 250)))
}

# check_all WHAT PATTERN...: every run in ./runs ended within its wait,
# one command timeout and the margin, with a status and a message that
# fits (each PATTERN is "STATUS:TEXT"; one of them must match).
check_all() {
    local what=$1 n=0 i label rc ms wait bound margin_ms ok p
    shift
    margin_ms=$(margin)
    for f in runs/[0-9]*.label; do
        i=${f#runs/}
        i=${i%.label}
        label=$(cat "$f")
        rc=$(cat "runs/$i.rc")
        ms=$(cat "runs/$i.ms")
        wait=$(cat "runs/$i.wait")
        bound=$((wait + CMD_MS))
        echo "    $what: $label: status $rc after $ms ms (bound $bound ms" \
            "+ margin $margin_ms ms)" >&2
        [ "$ms" -le $((bound + margin_ms)) ] ||
            fail "$what: $label took $ms ms, over $bound ms + $margin_ms ms:" \
                "$(cat "runs/$i.err")"
        ok=0
        for p in "$@"; do
            if [ "$rc" = "${p%%:*}" ] &&
                grep -qF -- "${p#*:}" "runs/$i.err"; then
                ok=1
            fi
        done
        [ "$ok" = 1 ] ||
            fail "$what: $label: status $rc, message: $(cat "runs/$i.err")"
        n=$((n + 1))
    done
    [ "$n" -gt 0 ] || fail "no run was checked"
}

# all_say TEXT: the message of every run in ./runs holds TEXT.
all_say() {
    local f
    for f in runs/[0-9]*.err; do
        grep -qF -- "$1" "$f" || fail "'$1' not in: $(cat "$f")"
    done
}

# Succeeds when the key $1 exists on the server on port $2.
key_exists_on() {
    [ "$(redis-cli -p "$2" exists "$1")" = 1 ]
}

# Succeeds when the server on port $1 does not answer PING in 100 ms.
server_stalled() {
    ! timeout 0.1 redis-cli -p "$1" ping >/dev/null 2>&1
}

# Stalls the server on port $1 for $2 s (DEBUG SLEEP) and waits until it
# no longer answers.
stall() {
    redis-cli -p "$1" debug sleep "$2" >/dev/null 2>&1 &
    wait_until 5000 server_stalled "$1" || fail "the server never stalled"
}

# How long a stall must last to outlast every run: twice the longest
# bound with its margin, in whole seconds.
stall_s() {
    echo $(((2 * ($1 + CMD_MS) + $(slow 2000)) / 1000 + 1))
}

test_every_command_ends_in_time_on_a_stalled_server() {
    start_redis --enable-debug-command yes
    local port=$SRV_PORT pid=$SRV_PID
    trap "kill -KILL $pid 2>/dev/null" EXIT
    stall "$port" "$(stall_s "$WAIT_MS")"
    start_all "redis://127.0.0.1:$port" "$WAIT_MS" both
    join_all
    check_all "stalled" "69:timed out"
    all_say "cannot use Redis at redis://127.0.0.1:$port:"
    stop_redis "$pid"
}

test_every_command_ends_in_time_on_a_stopped_server() {
    start_redis
    local port=$SRV_PORT pid=$SRV_PID
    # SIGSTOP: the kernel still takes connections into the listening
    # queue, and nothing is ever answered. A failed check ends this
    # subshell: the server must end with it.
    trap "kill -KILL $pid 2>/dev/null" EXIT
    kill -STOP "$pid"
    start_all "redis://127.0.0.1:$port" "$WAIT_MS" both
    join_all
    check_all "stopped" "69:timed out"
    all_say "cannot use Redis at redis://127.0.0.1:$port:"
    stop_redis "$pid"
}

# Starts a listener that takes connections and never answers, and writes
# its port to ./port.
silent_listener() {
    python3 -c '
import os, socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
with open("port.tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename("port.tmp", "port")
keep = []
while True:
    keep.append(s.accept()[0])
' &
    SILENT=$!
    trap 'kill "$SILENT" 2>/dev/null' EXIT
    wait_until 5000 file_exists port || fail "no listener"
}

test_every_command_ends_in_time_against_a_server_that_never_answers() {
    command -v python3 >/dev/null || fail "python3 is needed"
    silent_listener
    local port
    port=$(cat port)
    start_all "redis://127.0.0.1:$port" "$WAIT_MS" both
    join_all
    kill "$SILENT"
    wait "$SILENT" 2>/dev/null
    check_all "silent" "69:timed out"
    all_say "cannot use Redis at redis://127.0.0.1:$port:"
}

test_every_command_ends_in_time_with_tls_to_a_plain_port() {
    start_redis
    local port=$SRV_PORT pid=$SRV_PID
    # Two dozen TLS contexts made at once load the machine: the references
    # took up to 1.8 s, and their margin would hide the bound before the
    # fix (a connect and a command timeout). A longer command timeout
    # keeps that bound past this one and its margin.
    local CMD_MS=$((3 * CMD_MS))
    trap "kill -KILL $pid 2>/dev/null" EXIT
    start_all "rediss://127.0.0.1:$port" "$WAIT_MS" both
    join_all
    # A run the load kept from its handshake until its time was up says
    # so; at least one must have met the plain port.
    check_all "TLS to a plain port" \
        "69:does the server speak TLS on this port?" "69:timed out"
    all_say "cannot use Redis at rediss://127.0.0.1:$port:"
    grep -qF "does the server speak TLS on this port?" runs/[0-9]*.err ||
        fail "no run met the plain port: $(cat runs/1.err)"
    stop_redis "$pid"
}

# Prints how many subscriber connections the server on port $1 has.
subscribers() {
    redis-cli -p "$1" client list type pubsub | grep -c '^id='
}

# Succeeds when the server on port $2 has $1 subscriber connections or
# more.
subscribed() {
    [ "$(subscribers "$2")" -ge "$1" ]
}

test_waiting_commands_end_in_time_when_the_server_stalls_as_they_wait() {
    start_redis --enable-debug-command yes
    local port=$SRV_PORT pid=$SRV_PID url before holders=()
    url="redis://127.0.0.1:$port"
    # Everything is taken: each waiting command waits behind someone.
    for args in "lock b:lock" "lock b:fair --fair" "lock b:fenced --fenced" \
        "lock b:rw --write"; do
        # shellcheck disable=SC2086 # the arguments are words
        cli_exec --url "$url" $args --lease 10m -- sleep 600 &
        holders+=($!)
    done
    # A failed check ends this subshell: the holders must end with it.
    trap "kill -KILL ${holders[*]} $pid 2>/dev/null" EXIT
    cli --url "$url" semaphore b:sem set 0 >/dev/null ||
        fail "semaphore set"
    cli --url "$url" latch b:latch set 1 || fail "latch set"
    cli --url "$url" ratelimit b:rate set-rate 1/1h >/dev/null ||
        fail "ratelimit set-rate"
    cli --url "$url" ratelimit b:rate -- true || fail "the rate's one permit"
    for key in b:lock b:fair b:fenced b:rw; do
        wait_until 10000 key_exists_on "$key" "$port" ||
            fail "$key was never taken"
    done
    before=$(subscribers "$port")
    start_all "$url" "$LONG_WAIT_MS" waiting
    # Every waiting command but the rate limiter's (which sleeps without
    # a channel) listens on a channel once it is in its wait: each has a
    # subscriber connection of its own.
    wait_until 1500 subscribed \
        $((before + $(grep -vc '^ratelimit[|]' <<<"$WAITING"))) "$port" ||
        fail "the waiters never all listened"
    stall "$port" "$(stall_s "$LONG_WAIT_MS")"
    join_all
    check_all "stalled during the wait" \
        "69:connection or timeout error" "75:gave up after" \
        "75:the round was broken"
    kill -KILL "${holders[@]}" 2>/dev/null
    wait "${holders[@]}" 2>/dev/null
    stop_redis "$pid"
}

run_test test_every_command_ends_in_time_on_a_stalled_server
run_test test_every_command_ends_in_time_on_a_stopped_server
run_test test_every_command_ends_in_time_against_a_server_that_never_answers
run_test test_every_command_ends_in_time_with_tls_to_a_plain_port
run_test test_waiting_commands_end_in_time_when_the_server_stalls_as_they_wait
finish
