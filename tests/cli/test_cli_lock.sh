#!/bin/bash
# SPDX-License-Identifier: MIT
# `credisson lock` against a private redis-server: mutual exclusion between
# concurrent runs, the exit-code table, the command's environment, a lost
# lock stopping the command, signals forwarded with the lock released, an
# interrupted wait leaving nothing behind, and the other lock kinds; a
# release that fails (74), a signal ending a wait at once whatever the
# server does, the command stopped before its lease can end, and kept
# through stalls shorter than it.

. "$(dirname "$0")/lib.sh"

# A command that appends "<id> start" and "<id> end" to ./log with a pause
# between: two runs that overlap interleave their lines.
APPEND='echo "$1 start" >> log; sleep 0.05; echo "$1 end" >> log'

test_concurrent_runs_serialize() {
    local rounds=4 workers=3 w pids="" prev=""
    [ "${CR_TEST_SLOW:-0}" = 1 ] && rounds=2
    for w in $(seq "$workers"); do
        (for r in $(seq "$rounds"); do
            cli lock ser -- sh -c "$APPEND" sh "w$w" || exit 1
        done) &
        pids="$pids $!"
    done
    for w in $pids; do
        wait "$w" || fail "a worker failed"
    done
    expect_eq "$(grep -c '' log)" $((rounds * workers * 2)) "log lines"
    # Every start is followed by the end of the same run.
    while read -r id what; do
        if [ "$what" = start ]; then
            [ -z "$prev" ] || fail "$id started inside $prev"
            prev=$id
        else
            [ "$prev" = "$id" ] || fail "$id ended inside '$prev'"
            prev=
        fi
    done <log
    key_exists ser && fail "lock left behind"
    return 0
}

test_exit_status_of_command_is_passed_through() {
    run_cli lock st -- sh -c 'exit 3'
    expect_eq "$rc" 3 "exit 3"
    run_cli lock st -- true
    expect_eq "$rc" 0 "true"
    run_cli lock st -- sh -c 'kill -KILL $$'
    expect_eq "$rc" 137 "killed by SIGKILL"
    key_exists st && fail "lock left behind"
    return 0
}

test_command_not_found_exits_127_and_releases() {
    run_cli lock nf -- /nonexistent/program
    expect_eq "$rc" 127 "exit status"
    expect_contains "$err" "cannot run '/nonexistent/program'" "stderr"
    run_cli lock nf -- no-such-program-anywhere
    expect_eq "$rc" 127 "exit status from PATH"
    printf 'data\n' >plain
    chmod 644 plain
    run_cli lock nf -- ./plain
    expect_eq "$rc" 126 "not executable"
    key_exists nf && fail "lock left behind"
    return 0
}

test_command_sees_lock_name_and_owner() {
    run_cli lock envlock -- sh -c \
        'echo "$CREDISSON_LOCK_NAME" >name; echo "$CREDISSON_LOCK_OWNER" >owner;
         redis-cli -p "$1" hkeys envlock >field;
         echo "${CREDISSON_FENCING_TOKEN-unset}" >token' sh "$PORT"
    expect_eq "$rc" 0 "exit status"
    expect_eq "$(cat name)" envlock "CREDISSON_LOCK_NAME"
    expect_eq "$(cat owner)" "$(cat field)" "CREDISSON_LOCK_OWNER vs hash field"
    expect_eq "$(cat token)" unset "CREDISSON_FENCING_TOKEN"
}

test_wait_zero_exits_75_when_held() {
    cli_exec lock busy -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists busy || fail "holder never locked"
    run_cli lock busy --wait 0 -- true
    expect_eq "$rc" 75 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "busy" "stderr"
    run_cli lock busy --wait 300ms -- true
    expect_eq "$rc" 75 "exit status after a wait"
    expect_contains "$err" "gave up after" "stderr"
    kill -TERM "$holder"
    wait "$holder"
    expect_eq "$?" 143 "holder's exit status (sleep killed by SIGTERM)"
}

# The message of a lock not obtained names its holder: owner, host, pid,
# and after a wait for how long this run saw it held.
test_busy_names_the_holder_and_how_long_it_held() {
    cli_exec lock busy -- sh -c 'echo "$CREDISSON_LOCK_OWNER" >owner;
        exec sleep 30' &
    local holder=$! short
    wait_until 5000 test -s owner || fail "holder never ran"
    short="$(cut -c1-8 owner)...$(cut -c37- owner)"
    run_cli lock busy -n -- true
    expect_eq "$rc" 75 "exit status of -n"
    expect_lines "$err" 1 "stderr of -n"
    expect_contains "$err" "lock 'busy': busy, held by $short (host $(hostname), pid $holder), count 1" \
        "stderr of -n"
    run_cli lock busy --wait 1s -- true
    expect_eq "$rc" 75 "exit status after a wait"
    expect_contains "$err" "lock 'busy': gave up after 1.0s: held by $short (host $(hostname), pid $holder) for " \
        "stderr after a wait"
    expect_contains "$err" "s+, count 1" "how long"
    kill -TERM "$holder"
    wait "$holder"
    return 0
}

# A command that is not on PATH fails at once, even behind a holder: no
# wait, nothing taken.
test_command_not_found_fails_at_once_behind_a_holder() {
    local t0 t1
    cli_exec lock pre -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists pre || fail "holder never locked"
    t0=$(epoch_ms)
    run_cli lock pre --wait 20m -- no-such-command
    t1=$(epoch_ms)
    expect_eq "$rc" 127 "exit status"
    [ $((t1 - t0)) -lt $(slow 2000) ] || fail "took $((t1 - t0)) ms"
    expect_eq "$(rcli hlen pre)" 1 "holds on the lock"
    kill -TERM "$holder"
    wait "$holder"
    run_cli lock --fair q -- no-such-command
    expect_eq "$rc" 127 "exit status, fair lock"
    key_exists q && fail "something was taken"
    key_exists "redisson_lock_queue:{q}" && fail "the fair queue was joined"
    return 0
}

# A name that holds another kind of object is named as such, not as a
# script's error.
test_another_kind_of_object_is_named() {
    rcli set cronjob text >/dev/null
    run_cli lock cronjob -- touch ran
    expect_eq "$rc" 70 "exit status"
    expect_eq "$err" "credisson: 'cronjob' holds a Redis string, not a lock" \
        "stderr"
    run_cli semaphore cronjob -- touch ran
    expect_eq "$err" \
        "credisson: 'cronjob' holds a Redis string, not a semaphore" "stderr"
    rcli hset hh f v >/dev/null
    run_cli latch hh await -w 1s
    expect_eq "$err" "credisson: 'hh' holds a Redis hash, not a latch" \
        "stderr"
    cli latch l set 2
    run_cli ratelimit l -- touch ran
    expect_contains "$err" "'l' holds a " "stderr"
    expect_contains "$err" ", not a rate limiter" "stderr"
    file_exists ran && fail "a command ran"
    return 0
}

# flock's forms: -n is one try, -E the status of a conflict, and -q keeps
# the loser of a cron race silent.
test_nonblock_quiet_and_conflict_exit_code() {
    cli_exec lock busy -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists busy || fail "holder never locked"
    run_cli lock busy -n -- touch ran
    expect_eq "$rc" 75 "exit status of -n"
    expect_contains "$err" "lock 'busy': busy" "stderr of -n"
    run_cli -q lock busy -n -- touch ran
    expect_eq "$rc" 75 "exit status of -q -n"
    expect_eq "$err" "" "stderr of -q"
    run_cli lock busy -qnE 0 -- touch ran
    expect_eq "$rc" 0 "exit status of -E 0"
    expect_eq "$err" "" "stderr of -qnE 0"
    run_cli lock busy --wait 200ms --conflict-exit-code 3 -- touch ran
    expect_eq "$rc" 3 "exit status of -E 3 after a wait"
    expect_contains "$err" "gave up after 200ms" "stderr"
    [ -e ran ] && fail "a command ran without the lock"
    # -E is for conflicts only: the command's own status stays its own,
    # and errors keep theirs.
    kill -TERM "$holder"
    wait "$holder"
    run_cli lock busy -n -E 0 -- sh -c 'exit 7'
    expect_eq "$rc" 7 "the command's status"
    run_cli --url redis://127.0.0.1:1 -q lock busy -n -E 0 -- true
    expect_eq "$rc" 69 "unreachable with -q -E 0"
    expect_lines "$err" 1 "-q does not hide errors"
}

test_waiter_runs_once_holder_is_done() {
    cli_exec lock turn -- sh -c 'sleep 1; touch holder-done' &
    local holder=$!
    wait_until 5000 key_exists turn || fail "holder never locked"
    run_cli lock turn --wait 60s -v -- sh -c 'test -e holder-done && echo ran'
    expect_eq "$rc" 0 "exit status (after the holder's command)"
    expect_eq "$out" ran "stdout"
    # Not a terminal: --verbose shows nothing.
    expect_eq "$err" "" "stderr"
    wait "$holder"
}

test_lease_is_not_renewed() {
    # After a second: about 4000 left of the 5 s lease; a renewal by the
    # watchdog would have set it to at most 300, one by the lease to ~5000.
    run_cli lock leased --lease 5s --watchdog 300ms -- sh -c \
        'sleep 1; redis-cli -p "$1" pttl leased' sh "$PORT"
    expect_eq "$rc" 0 "exit status"
    [ "$out" -gt 300 ] && [ "$out" -le 4100 ] || fail "pttl $out not in 301..4100"
}

test_lease_running_out_under_command_exits_76() {
    # The command outlives the lease: it is stopped (SIGTERM a third of
    # the lease before the end) rather than left running unprotected.
    run_cli lock short --lease "$(slow 300)ms" -- sleep 30
    expect_eq "$rc" 76 "exit status"
    expect_contains "$err" "the lease of the lock on 'short' runs out in" \
        "stderr"
    expect_contains "$err" "'sleep' was stopped (status 143): the lease of the lock on 'short' ran out" \
        "stderr"
}

test_lost_lock_stops_command_and_exits_76() {
    cli_exec lock lost --watchdog "$(slow 300)ms" -- sh -c \
        'trap "echo term >got; exit 9" TERM; touch ready;
         while :; do sleep 0.05; done' 2>err &
    local pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    rcli del lost >/dev/null
    wait "$pid"
    expect_eq "$?" 76 "exit status"
    expect_eq "$(cat got 2>/dev/null)" term "the command got SIGTERM"
    expect_contains "$(cat err)" "was lost" "stderr"
}

test_lost_lock_kills_command_ignoring_sigterm() {
    cli_exec lock stubborn --watchdog "$(slow 300)ms" --kill-after 100ms -- \
        sh -c \
        'trap "" TERM; echo $$ >pid; while :; do sleep 0.05; done' 2>/dev/null &
    local pid=$!
    wait_until 5000 key_exists stubborn || fail "never locked"
    wait_until 5000 file_exists pid || fail "command never started"
    rcli del stubborn >/dev/null
    wait "$pid"
    expect_eq "$?" 76 "exit status"
    kill -0 "$(cat pid)" 2>/dev/null && fail "the command still runs"
    return 0
}

test_sigterm_is_forwarded_and_releases_lock() {
    cli_exec lock sig -- sh -c \
        'trap "echo term >got; exit 0" TERM; touch ready;
         while :; do sleep 0.05; done' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    kill -TERM "$pid"
    wait "$pid"
    expect_eq "$?" 0 "exit status (the command's)"
    key_exists sig && fail "lock still held right after exit"
    expect_eq "$(cat got 2>/dev/null)" term "the command got SIGTERM"
}

test_sighup_is_forwarded() {
    # A signal ignored when the shell started (under nohup) stays ignored
    # in every process it starts: none could be sent through. Skipped, not
    # left to wait for ever.
    if (( 0x$(awk '/^SigIgn:/ { print $2 }' /proc/$$/status) & 1 )); then
        echo "    SIGHUP is ignored by the test's shell (nohup): skipped" >&2
        return 0
    fi
    cli_exec lock hup -- sh -c \
        'trap "echo hup >got; exit 0" HUP; touch ready;
         while :; do sleep 0.05; done' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    kill -HUP "$pid"
    wait "$pid"
    expect_eq "$?" 0 "exit status"
    expect_eq "$(cat got 2>/dev/null)" hup "the command got SIGHUP"
    key_exists hup && fail "lock still held"
    return 0
}

# The command is sleep itself: sh -c catches SIGINT until its exec (dash
# does, as POSIX lets a shell run with -c), so a SIGINT that came between
# its `touch ready` and the exec was lost with the shell, and sleep ran its
# 30 s out (seen on a loaded machine).
test_sigint_kills_plain_command_with_its_status() {
    cli_exec lock int -- sleep 30 &
    local pid=$!
    wait_until 5000 has_child "$pid" sleep || fail "command never started"
    kill -INT "$pid"
    wait "$pid"
    expect_eq "$?" 130 "exit status (128 + SIGINT)"
    key_exists int && fail "lock still held"
    return 0
}

test_killed_credisson_stops_its_command() {
    cli_exec lock orphan -- sh -c \
        'trap "echo term >got; exit 0" TERM; echo $$ >pid;
         while :; do sleep 0.05; done' &
    local pid=$!
    wait_until 5000 file_exists pid || fail "command never started"
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    wait_until 5000 file_exists got || fail "the command was not stopped"
}

test_interrupted_wait_exits_130_and_leaves_fair_queue() {
    cli_exec lock fq --fair -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists fq || fail "holder never locked"
    cli_exec lock fq --fair -- true &
    local waiter=$!
    wait_until 5000 key_exists "redisson_lock_queue:{fq}" ||
        fail "waiter never queued"
    kill -INT "$waiter"
    wait "$waiter"
    expect_eq "$?" 130 "exit status"
    expect_eq "$(rcli llen 'redisson_lock_queue:{fq}')" 0 "queue length"
    expect_eq "$(rcli zcard 'redisson_lock_timeout:{fq}')" 0 "deadlines"
    kill -TERM "$holder"
    wait "$holder"
    key_exists fq && fail "lock left behind"
    return 0
}

test_readers_share_and_writer_waits() {
    # Each reader marks itself, waits for the other, then for ./release:
    # both must be inside at once.
    local meet='touch "$1"; i=0; while [ ! -e "$2" ] || [ ! -e release ]; do
        [ $i -lt 1200 ] || exit 1; sleep 0.05; i=$((i + 1)); done'
    cli lock rw --read -- sh -c "$meet" sh a b &
    local r1=$!
    cli lock rw --read -- sh -c "$meet" sh b a &
    local r2=$!
    wait_until 5000 file_exists a || fail "first reader never ran"
    wait_until 5000 file_exists b || fail "second reader never ran"
    run_cli lock rw --write --wait 0 -- true
    expect_eq "$rc" 75 "writer while readers hold"
    touch release
    wait "$r1" || fail "first reader did not meet the second"
    wait "$r2" || fail "second reader did not meet the first"
    run_cli lock rw --write -- sh -c 'echo "$CREDISSON_LOCK_OWNER"'
    expect_eq "$rc" 0 "writer after readers"
    expect_contains "$out" ":write" "write owner"
}

test_fenced_lock_gives_increasing_tokens() {
    run_cli lock fenced --fenced -- sh -c 'echo "$CREDISSON_FENCING_TOKEN"'
    expect_eq "$rc" 0 "first run"
    local first=$out
    run_cli lock fenced --fenced -- sh -c 'echo "$CREDISSON_FENCING_TOKEN"'
    expect_eq "$rc" 0 "second run"
    [ "$first" -ge 1 ] && [ "$out" -gt "$first" ] ||
        fail "tokens $first then $out"
    key_exists fenced && fail "lock left behind"
    return 0
}

test_caller_ignoring_sigchld_does_not_hang_the_run() {
    # Daemons often run children with SIGCHLD ignored, which exec keeps:
    # the command would then be reaped before the tool could see it end.
    timeout -k 5 "$(($(slow 20000) / 1000))" perl -e \
        '$SIG{CHLD} = "IGNORE"; exec @ARGV or exit 99' \
        "$CLI_BIN" lock chld -- sh -c 'exit 3'
    expect_eq "$?" 3 "exit status (124 or 137: the run hung)"
    key_exists chld && fail "lock left behind"
    return 0
}

test_nested_run_does_not_pass_on_the_outer_holds_variables() {
    run_cli lock --fenced outer -- "$CLI_BIN" lock inner -- sh -c \
        'echo "${CREDISSON_FENCING_TOKEN-none} $CREDISSON_LOCK_NAME"'
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" "none inner" "the inner command's variables"
}

test_command_gets_no_descriptor_of_the_tool() {
    # What the caller has open, and nothing more: no Redis socket, no pipe.
    local expected
    expected=$(echo $(sh -c 'ls /proc/$$/fd'))
    run_cli lock fds -- sh -c 'ls /proc/$$/fd'
    expect_eq "$rc" 0 "exit status"
    expect_eq "$(echo $out)" "$expected" "open descriptors"
}

# ------------------------------------------------ release failures: 74

test_release_failing_on_a_stopped_server_exits_74() {
    # The command stops the server it holds the lock on: the release then
    # meets a closed connection, and must not report success.
    start_redis
    local port=$SRV_PORT pid=$SRV_PID
    run_cli --url "redis://127.0.0.1:$port" --timeout "$(slow 1000)ms" \
        lock rel -- sh -c 'redis-cli -p "$1" shutdown nosave >/dev/null 2>&1
                           exit 3' sh "$port"
    stop_redis "$pid"
    expect_eq "$rc" 74 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "cannot release the lock on 'rel'" "stderr"
    expect_contains "$err" "'sh' exited with status 3" "stderr"
}

test_release_refused_by_redis_exits_74_and_lock_stays() {
    # The command leaves the server out of memory: the unlock script is
    # refused with an OOM error, and the lock stays until its lease ends.
    start_redis
    local port=$SRV_PORT pid=$SRV_PID
    run_cli --url "redis://127.0.0.1:$port" lock oom -- sh -c \
        'redis-cli -p "$1" config set maxmemory-policy noeviction >/dev/null
         redis-cli -p "$1" config set maxmemory 1 >/dev/null' sh "$port"
    local held
    held=$(redis-cli -p "$port" exists oom)
    stop_redis "$pid"
    expect_eq "$rc" 74 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "cannot release the lock on 'oom'" "stderr"
    expect_contains "$err" "OOM" "stderr"
    expect_contains "$err" "'sh' exited with status 0" "stderr"
    expect_eq "$held" 1 "the lock after the failed release"
}

# ----------------------------------------------- a signal ends a wait now

# The most a signal may take to end a wait, in ms, measured from the
# shell (kill to wait's return).
SIGNAL_BOUND_MS=$(slow 200)

# Sends signal $1 to the waiting credisson of pid $2 and checks that it
# exits with 128 + the signal's number $3 within SIGNAL_BOUND_MS.
expect_prompt_end() {
    local t0 t1 status
    t0=$(epoch_ms)
    kill -"$1" "$2"
    wait "$2"
    status=$?
    t1=$(epoch_ms)
    echo "    signal to exit: $((t1 - t0)) ms" >&2
    expect_eq "$status" "$3" "exit status"
    [ $((t1 - t0)) -le "$SIGNAL_BOUND_MS" ] ||
        fail "exit $((t1 - t0)) ms after SIG$1 (bound $SIGNAL_BOUND_MS ms)"
}

# Succeeds when the key $1 exists on the server on port $2.
key_exists_on() {
    [ "$(redis-cli -p "$2" exists "$1")" = 1 ]
}

# Succeeds when the server on port $1 does not answer PING in 100 ms.
server_stalled() {
    ! timeout 0.1 redis-cli -p "$1" ping >/dev/null 2>&1
}

test_sigint_ends_wait_behind_holder_at_once() {
    cli_exec lock queue -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists queue || fail "holder never locked"
    cli_exec lock queue --wait 30s -- touch ran &
    local waiter=$!
    wait_until 5000 waiters_in_line queue 1 || fail "waiter never waited"
    expect_prompt_end INT "$waiter" 130
    [ -e ran ] && fail "the command ran"
    expect_eq "$(rcli hlen queue)" 1 "holders left"
    kill -TERM "$holder"
    wait "$holder"
    return 0
}

test_sigterm_ends_wait_on_a_stalled_server_at_once() {
    start_redis --enable-debug-command yes
    local port=$SRV_PORT pid=$SRV_PID
    export CREDISSON_URL="redis://127.0.0.1:$port"
    cli_exec lock stall -- sleep 30 2>/dev/null &
    local holder=$!
    wait_until 5000 key_exists_on stall "$port" || fail "holder never locked"
    cli_exec lock stall --wait 30s -- touch ran &
    local waiter=$!
    wait_until 5000 waiters_in_line stall 1 "$port" ||
        fail "waiter never waited"
    # The server stops answering anyone for 5 s.
    redis-cli -p "$port" debug sleep 5 >/dev/null 2>&1 &
    wait_until 5000 server_stalled "$port" || fail "the server never stalled"
    expect_prompt_end TERM "$waiter" 143
    [ -e ran ] && fail "the command ran"
    kill -KILL "$holder"
    wait "$holder" 2>/dev/null
    stop_redis "$pid"
}

test_sigterm_ends_connecting_to_a_silent_server_at_once() {
    # A listener that takes connections and never answers: credisson is
    # still setting up its first connection when the signal comes.
    command -v perl >/dev/null || return 0
    perl -MIO::Socket::INET -e '
        my $s = IO::Socket::INET->new(Listen => 8, LocalAddr => "127.0.0.1",
                                      LocalPort => 0) or die "listen: $!";
        open(my $f, ">", "port.tmp") or die; print $f $s->sockport, "\n";
        close $f; rename "port.tmp", "port";
        my @keep;
        while (my $c = $s->accept) {
            push @keep, $c; open(my $g, ">>", "accepted"); close $g;
        }' &
    local silent=$!
    # A failed check ends this subshell: the listener must end with it.
    trap 'kill "$silent" 2>/dev/null' EXIT
    wait_until 5000 file_exists port || fail "no listener"
    cli_exec --url "redis://127.0.0.1:$(cat port)" --timeout 20s \
        lock silent --wait 30s -- touch ran &
    local waiter=$!
    wait_until 5000 file_exists accepted || fail "never connected"
    expect_prompt_end TERM "$waiter" 143
    [ -e ran ] && fail "the command ran"
    kill "$silent"
    wait "$silent" 2>/dev/null
    return 0
}

# --------------------------------------- the command ends before the lease

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

# The command for watch_death: ignores SIGTERM (which exec keeps), writes
# the output of the redis-cli arguments "$@" to ./expiry, then holds
# ./dead open until killed.
STUBBORN='trap "" TERM; "$@" >expiry; exec sleep 60 3>dead'

test_lease_ending_kills_command_before_the_key_expires() {
    # --lease 10s (kill_lease): SIGTERM a third of the lease before its
    # local deadline (ignored), SIGKILL at it, 1 % + 2 ms before the key
    # expires.
    watch_death
    cli_exec lock ttl --lease "$(kill_lease)ms" -- sh -c "$STUBBORN" sh \
        redis-cli -p "$PORT" pexpiretime ttl 2>err &
    local pid=$!
    wait "$pid"
    expect_eq "$?" 76 "exit status"
    wait_until 5000 file_exists died || fail "the command never died"
    local expiry died
    expiry=$(cat expiry)
    died=$(cat died)
    echo "    killed $((expiry - died)) ms before the key's expiry" >&2
    [ "$died" -lt "$expiry" ] ||
        fail "the command died at $died, the key expired at $expiry"
    expect_contains "$(cat err)" "the lease of the lock on 'ttl' ran out" \
        "stderr"
}

test_blocked_renewals_kill_command_before_the_key_expires() {
    # Writes are paused: the watchdog's renewals cannot get through, and
    # the command is stopped before the last one's lease ends.
    watch_death
    cli_exec lock pause --watchdog "$(kill_lease)ms" -- sh -c \
        'trap "" TERM; touch ready; exec sleep 60 3>dead' 2>err &
    local pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    # A failed check ends this subshell: the server must not stay paused.
    trap 'rcli client unpause >/dev/null; kill "$WATCHER" 2>/dev/null' EXIT
    rcli client pause 60000 write >/dev/null
    local expiry
    expiry=$(rcli pexpiretime pause)
    # At most the watchdog timeout after the pause (kill_lease: 10 s).
    wait_until 15000 file_exists died || fail "the command never died"
    rcli client unpause >/dev/null
    wait "$pid"
    expect_eq "$?" 76 "exit status"
    local died
    died=$(cat died)
    echo "    killed $((expiry - died)) ms before the key's expiry" >&2
    [ "$died" -lt "$expiry" ] ||
        fail "the command died at $died, the key expired at $expiry"
    expect_contains "$(cat err)" "could not be renewed" "stderr"
}

# Prints the wall-clock time (epoch ms) at which the watchdog renews the
# key $1 on the server on port $2 (its PEXPIRETIME moves on), polling every
# 10 ms; prints nothing when no renewal comes within $3 ms.
next_renewal() {
    local before now limit
    before=$(redis-cli -p "$2" pexpiretime "$1")
    limit=$(($(epoch_ms) + $3))
    while [ "$(epoch_ms)" -lt "$limit" ]; do
        now=$(redis-cli -p "$2" pexpiretime "$1")
        if [ "$now" != "$before" ]; then
            epoch_ms
            return 0
        fi
        msleep 10
    done
}

# Stalls the server on port $1 for $3 seconds (DEBUG SLEEP) at the
# wall-clock time $2 (epoch ms).
stall_at() {
    local wait=$(($2 - $(epoch_ms)))
    [ "$wait" -gt 0 ] && msleep "$wait"
    redis-cli -p "$1" debug sleep "$3" >/dev/null
}

test_two_stalls_shorter_than_the_lease_keep_the_command() {
    # Issue 31: --command-timeout 1s and a 6 s watchdog lease, renewed
    # every 2 s, with the command stopped 2 s (a third of the lease) before
    # its local deadline. Two 2 s stalls, 0.1 s apart, start 0.7 s and
    # 0.6 s before a renewal falls due: each of those renewals waits in the
    # server's queue past its command timeout and runs as its stall ends,
    # 4 s of stall against a 6 s lease. Their answers prove the lease from
    # the moment each was sent: the command is never stopped, and its own
    # exit status is kept. Every time is doubled under valgrind.
    local k=1 port pid renewed run s1 s2
    [ "${CR_TEST_SLOW:-0}" = 1 ] && k=2
    start_redis --enable-debug-command yes
    port=$SRV_PORT
    pid=$SRV_PID
    export CREDISSON_URL="redis://127.0.0.1:$port"
    cli_exec lock stalls --command-timeout "${k}s" --watchdog "$((6 * k))s" \
        -- sh -c 'touch ready; while [ ! -e done ]; do sleep 0.05; done
                  exit 7' 2>err &
    run=$!
    wait_until 5000 file_exists ready || fail "the command never started"
    renewed=$(next_renewal stalls "$port" $((5000 * k)))
    [ -n "$renewed" ] || fail "no renewal"
    # Renewals fall due at renewed + 2 s and + 4 s.
    stall_at "$port" $((renewed + 1300 * k)) $((2 * k)) &
    s1=$!
    stall_at "$port" $((renewed + 3400 * k)) $((2 * k)) &
    s2=$!
    wait "$s1"
    wait "$s2"
    # Past the end of the lease the last renewal before the stalls proved
    # (renewed + 6 s), and of the one sent in the first stall (+ 8 s).
    msleep $((renewed + 8500 * k - $(epoch_ms)))
    kill -0 "$run" 2>/dev/null || fail "the command was stopped: $(cat err)"
    touch done
    wait "$run"
    expect_eq "$?" 7 "exit status"
    expect_eq "$(cat err)" "" "stderr"
    stop_redis "$pid"
}

redis_up
run_test test_concurrent_runs_serialize
run_test test_exit_status_of_command_is_passed_through
run_test test_command_not_found_exits_127_and_releases
run_test test_command_sees_lock_name_and_owner
run_test test_wait_zero_exits_75_when_held
run_test test_busy_names_the_holder_and_how_long_it_held
run_test test_command_not_found_fails_at_once_behind_a_holder
run_test test_another_kind_of_object_is_named
run_test test_nonblock_quiet_and_conflict_exit_code
run_test test_waiter_runs_once_holder_is_done
run_test test_lease_is_not_renewed
run_test test_lease_running_out_under_command_exits_76
run_test test_lost_lock_stops_command_and_exits_76
run_test test_lost_lock_kills_command_ignoring_sigterm
run_test test_sigterm_is_forwarded_and_releases_lock
run_test test_sighup_is_forwarded
run_test test_sigint_kills_plain_command_with_its_status
run_test test_killed_credisson_stops_its_command
run_test test_interrupted_wait_exits_130_and_leaves_fair_queue
run_test test_readers_share_and_writer_waits
run_test test_fenced_lock_gives_increasing_tokens
run_test test_caller_ignoring_sigchld_does_not_hang_the_run
run_test test_nested_run_does_not_pass_on_the_outer_holds_variables
run_test test_command_gets_no_descriptor_of_the_tool
run_test test_release_failing_on_a_stopped_server_exits_74
run_test test_release_refused_by_redis_exits_74_and_lock_stays
run_test test_sigint_ends_wait_behind_holder_at_once
run_test test_sigterm_ends_wait_on_a_stalled_server_at_once
run_test test_sigterm_ends_connecting_to_a_silent_server_at_once
run_test test_lease_ending_kills_command_before_the_key_expires
run_test test_blocked_renewals_kill_command_before_the_key_expires
run_test test_two_stalls_shorter_than_the_lease_keep_the_command
finish
