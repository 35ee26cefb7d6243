#!/bin/bash
# SPDX-License-Identifier: MIT
# The status line of credisson(1) while it waits: shown by default when
# standard error is a terminal (a pseudo-terminal made by python3's pty
# module), with what is waited for and for how long, who holds it (owner,
# host and pid, read with CLIENT LIST) and the place in a fair lock's
# queue or in credisson's waiting line; cleared when the wait ends; never shown with --no-status or -q,
# nor when standard error is not a terminal; and it changes neither exit
# statuses nor how fast a signal ends a wait.

. "$(dirname "$0")/lib.sh"

PTY_RUN="$CR_TEST_SRCDIR/tests/cli/pty_run.py"

# The bound on the time from a signal to the end of a wait, as in
# test_cli_lock.sh.
SIGNAL_BOUND_MS=$(slow 200)

# Without python3 there is no terminal to look at.
have_pty() {
    command -v python3 >/dev/null && python3 -c 'import pty' 2>/dev/null
}

# Runs credisson with "$@" on a pseudo-terminal in the background; what it
# shows goes to ./screen, its pid to ./waiter.pid; $pty_pid is the runner's.
cli_on_pty() {
    python3 "$PTY_RUN" screen waiter.pid "$CLI_BIN" "$@" &
    pty_pid=$!
}

# Succeeds when ./screen has the text $1.
screen_has() {
    [ -e screen ] && grep -qF -- "$1" screen
}

# A holder of lock $1 (with the options after it) that writes its owner id
# to ./owner and holds until ./go exists. Its pid is in $holder.
hold_until_go() {
    local name=$1
    shift
    cli_exec lock "$name" "$@" -- sh -c 'echo "$CREDISSON_LOCK_OWNER" >owner;
        while [ ! -e go ]; do sleep 0.05; done' &
    holder=$!
    wait_until 5000 test -s owner || fail "holder never ran"
}

# Succeeds when $2 entries are in the fair lock queue of $1.
queue_is() {
    [ "$(rcli llen "redisson_lock_queue:{$1}")" = "$2" ]
}

test_status_line_shows_the_holder_by_default_and_is_cleared() {
    have_pty || return 0
    hold_until_go tty
    cli_on_pty lock tty -- echo acquired
    wait_until 5000 screen_has "for lock 'tty': place 1 of 1 in line; held by $(cut -c1-8 owner)..." ||
        fail "no status line: $(cat screen)"
    # The holder's host and pid come from its connection's name.
    wait_until 5000 screen_has "host $(hostname), pid $holder" ||
        fail "no host and pid of the holder: $(cat screen)"
    touch go
    wait "$pty_pid"
    expect_eq "$?" 0 "exit status"
    wait "$holder"
    local shown last_line
    shown=$(cat screen)
    expect_contains "$shown" "waiting " "status line"
    expect_contains "$shown" ", count 1, lease " "status line"
    # Cleared before the command's output: the last thing before
    # "acquired" is the erasing of the line.
    last_line=${shown%%acquired*}
    last_line=${last_line##*$'\r'}
    expect_eq "$last_line" $'\033[K' "what stands before the command's output"
}

test_status_line_shows_the_place_in_a_fair_queue() {
    have_pty || return 0
    hold_until_go fq --fair
    cli_exec lock fq --fair -- true &
    local first=$!
    wait_until 5000 queue_is fq 1 || fail "first waiter never queued"
    cli_on_pty lock fq --fair -- echo acquired
    wait_until 5000 screen_has "place 2 of 2 in the queue" ||
        fail "no place in the queue: $(cat screen)"
    touch go
    wait "$first" || fail "first waiter failed"
    wait "$pty_pid"
    expect_eq "$?" 0 "exit status"
    wait "$holder"
}

# Succeeds when $2 entries are in credisson's waiting line of $1.
line_is() {
    [ "$(rcli zcard "credisson_line:{$1}")" = "$2" ]
}

test_status_line_shows_the_place_in_line() {
    have_pty || return 0
    hold_until_go ln
    cli_exec lock ln -- true &
    local first=$!
    wait_until 5000 line_is ln 1 || fail "first waiter never in line"
    cli_on_pty lock ln -- echo acquired
    wait_until 5000 screen_has "place 2 of 2 in line; held by $(cut -c1-8 owner)..." ||
        fail "no place in line: $(cat screen)"
    touch go
    wait "$first" || fail "first waiter failed"
    wait "$pty_pid"
    expect_eq "$?" 0 "exit status"
    wait "$holder"
}

test_status_line_shows_a_semaphore_waiters_place_in_line() {
    have_pty || return 0
    cli semaphore sln set 1
    cli_exec semaphore sln -- sh -c 'while [ ! -e go ]; do sleep 0.05; done' &
    local holder=$!
    wait_until 5000 eval '[ "$(rcli get sln)" = 0 ]' ||
        fail "holder never took the permit"
    cli_on_pty semaphore sln -- echo acquired
    wait_until 5000 screen_has "place 1 of 1 in line; 0 available, 1 issued" ||
        fail "no place in line: $(cat screen)"
    touch go
    wait "$pty_pid"
    expect_eq "$?" 0 "exit status"
    wait "$holder"
}

test_no_status_and_quiet_show_no_line_on_a_terminal() {
    have_pty || return 0
    local opts
    hold_until_go quiet
    for opts in --no-status -q; do
        rm -f screen
        # A wait long enough for several readings, ended by its limit.
        python3 "$PTY_RUN" screen waiter.pid "$CLI_BIN" lock quiet $opts \
            --wait 1200ms -- true
        expect_eq "$?" 75 "exit status with $opts"
        screen_has "waiting " && fail "a status line with $opts: $(cat screen)"
    done
    expect_contains "$(cat screen)" "" "screen"
    screen_has "gave up" && fail "-q printed: $(cat screen)"
    touch go
    wait "$holder"
    return 0
}

test_no_status_line_when_stderr_is_not_a_terminal() {
    hold_until_go plain
    cli_exec lock plain -- echo acquired >out 2>err &
    local waiter=$!
    wait_until 5000 waiters_in_line plain 1 || fail "waiter never waited"
    touch go
    wait "$waiter"
    expect_eq "$?" 0 "exit status"
    expect_eq "$(cat out)" acquired "stdout"
    expect_eq "$(cat err)" "" "stderr"
    wait "$holder"
}

# Succeeds when the key $1 exists on the server on port $2.
key_exists_on() {
    [ "$(redis-cli -p "$2" exists "$1")" = 1 ]
}

# Succeeds when the server on port $1 does not answer PING in 100 ms.
server_stalled() {
    ! timeout 0.1 redis-cli -p "$1" ping >/dev/null 2>&1
}

# The status line reads through Redis on a thread of its own: a stalled
# server holds that reading, not the signal that ends the wait.
test_signal_ends_a_wait_with_status_line_on_a_stalled_server_at_once() {
    have_pty || return 0
    start_redis --enable-debug-command yes
    local port=$SRV_PORT pid=$SRV_PID t0 t1 status
    export CREDISSON_URL="redis://127.0.0.1:$port"
    cli_exec lock stall -- sleep 30 2>/dev/null &
    holder=$!
    wait_until 5000 key_exists_on stall "$port" || fail "holder never locked"
    cli_on_pty lock stall --wait 30s -- touch ran
    wait_until 5000 screen_has "for lock 'stall'" || fail "no status line"
    # The server stops answering anyone for 5 s, after a reading is due.
    redis-cli -p "$port" debug sleep 5 >/dev/null 2>&1 &
    wait_until 5000 server_stalled "$port" || fail "the server never stalled"
    # Not a synchronisation: a reading is due every 500 ms, so after this
    # one is certainly held by the stalled server.
    msleep 600
    t0=$(epoch_ms)
    kill -TERM "$(cat waiter.pid)"
    wait "$pty_pid"
    status=$?
    t1=$(epoch_ms)
    echo "    signal to exit: $((t1 - t0)) ms" >&2
    expect_eq "$status" 143 "exit status"
    [ $((t1 - t0)) -le "$SIGNAL_BOUND_MS" ] ||
        fail "exit $((t1 - t0)) ms after SIGTERM (bound $SIGNAL_BOUND_MS ms)"
    [ -e ran ] && fail "the command ran"
    kill -KILL "$holder"
    wait "$holder" 2>/dev/null
    stop_redis "$pid"
}

redis_up
run_test test_status_line_shows_the_holder_by_default_and_is_cleared
run_test test_status_line_shows_the_place_in_a_fair_queue
run_test test_status_line_shows_the_place_in_line
run_test test_status_line_shows_a_semaphore_waiters_place_in_line
run_test test_no_status_and_quiet_show_no_line_on_a_terminal
run_test test_no_status_line_when_stderr_is_not_a_terminal
run_test test_signal_ends_a_wait_with_status_line_on_a_stalled_server_at_once
finish
