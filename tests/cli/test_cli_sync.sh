#!/bin/bash
# SPDX-License-Identifier: MIT
# `credisson semaphore` and `credisson latch` against a private
# redis-server: a bound on concurrent commands, expirable permits that a
# killed credisson does not keep, a lost permit stopping its command, the
# counting subcommands, and a latch shared by several processes; a
# permit's command stopped before its lease can end, and a release that
# fails (74).

. "$(dirname "$0")/lib.sh"

# Prints the number of permits available on semaphore $1.
available() {
    cli semaphore "$1" available
}

# Succeeds when semaphore $1 has $2 permits available.
available_is() {
    [ "$(available "$1")" = "$2" ]
}

# Succeeds when $2 clients listen on the channel of latch $1.
latch_listeners_are() {
    [ "$(rcli pubsub numsub "redisson_countdownlatch__channel__{$1}" |
        tail -n 1)" = "$2" ]
}

test_semaphore_bounds_concurrent_commands() {
    # Each command marks itself in ./in, counts the marks, and records the
    # count; a count above 2 is a real overlap of three holders.
    local body='mkdir -p in; touch "in/$1"; ls in | wc -l >>counts;
        sleep 0.2; rm -f "in/$1"'
    local i pids=""
    for i in 1 2 3 4 5 6; do
        cli semaphore pool --permits 2 -- sh -c "$body" sh "c$i" &
        pids="$pids $!"
    done
    for i in $pids; do
        wait "$i" || fail "a command failed"
    done
    expect_eq "$(grep -c '' counts)" 6 "commands run"
    expect_eq "$(sort -n counts | tail -n 1 | tr -d ' ')" 2 \
        "most commands at once"
    expect_eq "$(available pool)" 2 "permits after the runs"
}

test_semaphore_command_sees_permit_id() {
    run_cli semaphore ids --permits 1 -- sh -c \
        'echo "$CREDISSON_SEMAPHORE_NAME $CREDISSON_PERMIT_ID"'
    expect_eq "$rc" 0 "exit status"
    case "$out" in
    "ids "[0-9a-f]*) ;;
    *) fail "environment: $out" ;;
    esac
    expect_eq "${#out}" $((4 + 32)) "id length"
}

test_semaphore_wait_zero_exits_75_when_none_available() {
    cli_exec semaphore one --permits 1 -- sh -c 'touch ready; exec sleep 30' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "holder never ran"
    run_cli semaphore one --wait 0 -- true
    expect_eq "$rc" 75 "exit status"
    expect_contains "$err" "busy" "stderr"
    kill -TERM "$pid"
    wait "$pid"
    expect_eq "$(available one)" 1 "permits after the holder stopped"
}

test_semaphore_permit_of_killed_credisson_expires() {
    cli_exec semaphore exp --permits 1 --watchdog "$(slow 1000)ms" -- sh -c \
        'touch ready; exec sleep 30' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "holder never ran"
    expect_eq "$(available exp)" 0 "permits while held"
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    wait_until 10000 available_is exp 1 || fail "the permit never came back"
}

test_semaphore_lost_permit_stops_command() {
    cli_exec semaphore gone --permits 1 --watchdog "$(slow 600)ms" -- \
        sh -c 'trap "echo term >got; exit 0" TERM; touch ready;
               while :; do sleep 0.05; done' 2>err &
    local pid=$!
    wait_until 5000 file_exists ready || fail "holder never ran"
    rcli del "{gone}:timeout" >/dev/null
    wait "$pid"
    expect_eq "$?" 76 "exit status"
    expect_eq "$(cat got 2>/dev/null)" term "the command got SIGTERM"
    expect_contains "$(cat err)" "permit on 'gone' was lost" "stderr"
}

test_semaphore_set_add_available() {
    run_cli semaphore cnt set 3
    expect_eq "$rc" 0 "set"
    expect_eq "$out" "before: 0 available, 0 out
after:  3 available, 0 out" "set prints the counts before and after"
    expect_eq "$(available cnt)" 3 "after set 3"
    run_cli semaphore cnt add 2
    expect_eq "$rc" 0 "add"
    expect_eq "$(available cnt)" 5 "after add 2"
    run_cli semaphore cnt add -4
    expect_eq "$(available cnt)" 1 "after add -4"
    run_cli semaphore cnt available --json
    expect_eq "$out" '{"name":"cnt","available":1}' "json"
    printf '%s' "$out" | json_ok || fail "not JSON: $out"
    run_cli semaphore empty available
    expect_eq "$out" 0 "a semaphore never set"
}

# --permits K sets K permits only where none is set (trySetPermits): a
# run on a name whose permits are out (a Java RSemaphore's holders leave
# no record) does not give them back. A total other than K is warned
# about; "set K" prints what it changed, the permits out counted in.
test_semaphore_permits_option_sets_only_a_semaphore_without_permits() {
    cli semaphore tp --permits 2 -- true || fail "first run"
    expect_eq "$(available tp)" 2 "set by the first run"
    # One permit taken as an RSemaphore's acquire takes it: no record.
    rcli decr tp >/dev/null
    run_cli semaphore tp --permits 2 -- echo ran
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" ran "the command ran"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "warning: semaphore 'tp' is set already (1 available, 0 out as expirable permits), which is not --permits 2" \
        "stderr"
    expect_eq "$(available tp)" 1 "the permit out is not given back"
    cli_exec semaphore tp --permits 1 -- sh -c 'touch ready; exec sleep 30' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "holder never ran"
    run_cli semaphore tp set 3
    expect_eq "$out" "before: 0 available, 1 out
after:  2 available, 1 out" "set with a permit out"
    run_cli semaphore tp set 2 --json
    printf '%s' "$out" | json_ok || fail "not JSON: $out"
    expect_eq "$out" \
        '{"name":"tp","before":{"available":2,"out":1},"after":{"available":1,"out":1}}' \
        "JSON"
    kill -TERM "$pid"
    wait "$pid"
    return 0
}

test_latch_opens_for_waiters_in_other_processes() {
    local i pids=""
    run_cli latch gate set 3
    expect_eq "$rc" 0 "set"
    for i in 1 2 3; do
        (cli latch gate await && touch "open$i") &
        pids="$pids $!"
    done
    wait_until 5000 latch_listeners_are gate 3 ||
        fail "waiters never subscribed"
    cli latch gate count-down
    cli latch gate count-down
    expect_eq "$(cli latch gate count)" 1 "count"
    msleep "$(slow 200)"
    for i in 1 2 3; do
        [ -e "open$i" ] && fail "a waiter went through a closed latch"
    done
    cli latch gate count-down
    for i in $pids; do
        wait "$i" || fail "a waiter failed"
    done
    for i in 1 2 3; do
        [ -e "open$i" ] || fail "waiter $i did not go through the open latch"
    done
    expect_eq "$(cli latch gate count)" 0 "count once open"
}

test_latch_await_timeout_exits_75() {
    cli latch shut set 1
    run_cli latch shut await --timeout 200ms
    expect_eq "$rc" 75 "exit status"
    expect_contains "$err" "gave up after 200ms" "stderr"
    run_cli latch missing await --timeout 200ms
    expect_eq "$rc" 0 "a latch that does not exist is open"
}

# The README's CI recipe: the merge step may start before the latch is
# set; with --must-exist it waits for the set and the last count down
# instead of taking the missing latch for an open one.
test_latch_await_must_exist_waits_for_the_set() {
    run_cli latch typo await --wait 300ms
    expect_eq "$rc" 0 "a latch never set is open without --must-exist"
    run_cli latch typo await --must-exist --wait 300ms
    expect_eq "$rc" 75 "never set, with --must-exist"
    expect_contains "$err" "gave up after 300ms" "stderr"
    run_cli latch typo await --must-exist -n -E 9
    expect_eq "$rc" 9 "-n -E 9"
    cli_exec latch build await --must-exist --wait 60s >/dev/null 2>&1 &
    local merge=$!
    wait_until 5000 latch_listeners_are build 1 ||
        fail "the merge step never waited"
    cli latch build set 2 || fail "set"
    cli latch build count-down || fail "first count-down"
    cli latch build count-down || fail "second count-down"
    wait "$merge"
    expect_eq "$?" 0 "the merge step's status once opened"
    # Afterwards too: the latch was set and opened.
    run_cli latch build await --must-exist -n
    expect_eq "$rc" 0 "opened before the look"
}

test_latch_set_twice_exits_75() {
    run_cli latch twice set 2
    expect_eq "$rc" 0 "first set"
    run_cli latch twice set 5
    expect_eq "$rc" 75 "second set"
    expect_contains "$err" "already has a count" "stderr"
    run_cli latch twice count --json
    expect_eq "$out" '{"name":"twice","count":2}' "json"
}

test_interrupted_latch_await_exits_130() {
    cli latch intr set 1
    cli_exec latch intr await &
    local pid=$!
    wait_until 5000 latch_listeners_are intr 1 ||
        fail "waiter never subscribed"
    kill -INT "$pid"
    wait "$pid"
    expect_eq "$?" 130 "exit status"
}

# Starts, in the background, a reader of the FIFO ./dead that writes the
# wall-clock time (epoch ms) at which its last writer closed it into
# ./died: the moment the command holding it open died. The reader ends
# with the test's subshell if no command ever opened the FIFO.
watch_death() {
    mkfifo dead
    (read -r _ <dead; epoch_ms >died) &
    WATCHER=$!
    trap 'kill "$WATCHER" 2>/dev/null' EXIT
}

# Prints the expiry (epoch ms) of the only permit issued by semaphore $1:
# its score, the last line of ZRANGE WITHSCORES whatever bytes the member
# (a raw 16-byte id, which may hold a newline) has. ZRANGE is read-only, so
# it answers while writes are paused; a script would wait for the pause's
# end.
permit_expiry() {
    rcli zrange "{$1}:timeout" 0 0 withscores | tail -n 1
}

# Checks that ./died is earlier than the permit expiry $1.
expect_died_before() {
    local died
    wait_until 5000 file_exists died || fail "the command never died"
    died=$(cat died)
    echo "    killed $(($1 - died)) ms before the permit's expiry" >&2
    [ "$died" -lt "$1" ] ||
        fail "the command died at $died, the permit expired at $1"
}

test_semaphore_lease_ending_kills_command_before_the_permit_expires() {
    watch_death
    cli_exec semaphore lease --permits 1 --lease "$(kill_lease)ms" -- sh -c \
        'trap "" TERM; touch ready; exec sleep 60 3>dead' 2>err &
    local pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    local expiry
    expiry=$(permit_expiry lease)
    wait "$pid"
    expect_eq "$?" 76 "exit status"
    expect_died_before "$expiry"
    expect_contains "$(cat err)" "the lease of the permit on 'lease' ran out" \
        "stderr"
}

test_semaphore_blocked_renewals_kill_command_before_the_permit_expires() {
    watch_death
    cli_exec semaphore renew --permits 1 --watchdog "$(kill_lease)ms" -- \
        sh -c 'trap "" TERM; touch ready; exec sleep 60 3>dead' 2>err &
    local pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    # A failed check ends this subshell: the server must not stay paused.
    trap 'rcli client unpause >/dev/null; kill "$WATCHER" 2>/dev/null' EXIT
    rcli client pause 60000 write >/dev/null
    local expiry
    expiry=$(permit_expiry renew)
    # At most the watchdog timeout after the pause (kill_lease: 10 s).
    wait_until 15000 file_exists died || fail "the command never died"
    rcli client unpause >/dev/null
    wait "$pid"
    expect_eq "$?" 76 "exit status"
    expect_died_before "$expiry"
    expect_contains "$(cat err)" "the permit on 'renew' could not be renewed" \
        "stderr"
}

test_semaphore_release_failing_exits_74() {
    start_redis
    local port=$SRV_PORT pid=$SRV_PID
    run_cli --url "redis://127.0.0.1:$port" --timeout "$(slow 1000)ms" \
        semaphore rel --permits 1 -- sh -c \
        'redis-cli -p "$1" shutdown nosave >/dev/null 2>&1; exit 5' sh "$port"
    stop_redis "$pid"
    expect_eq "$rc" 74 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "cannot release the permit on 'rel'" "stderr"
    expect_contains "$err" "'sh' exited with status 5" "stderr"
}

redis_up
run_test test_semaphore_bounds_concurrent_commands
run_test test_semaphore_command_sees_permit_id
run_test test_semaphore_wait_zero_exits_75_when_none_available
run_test test_semaphore_permit_of_killed_credisson_expires
run_test test_semaphore_lost_permit_stops_command
run_test test_semaphore_set_add_available
run_test test_semaphore_permits_option_sets_only_a_semaphore_without_permits
run_test test_latch_opens_for_waiters_in_other_processes
run_test test_latch_await_timeout_exits_75
run_test test_latch_await_must_exist_waits_for_the_set
run_test test_latch_set_twice_exits_75
run_test test_interrupted_latch_await_exits_130
run_test test_semaphore_lease_ending_kills_command_before_the_permit_expires
run_test test_semaphore_blocked_renewals_kill_command_before_the_permit_expires
run_test test_semaphore_release_failing_exits_74
finish
