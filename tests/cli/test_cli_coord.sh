#!/bin/bash
# SPDX-License-Identifier: MIT
# `credisson barrier` and `credisson ratelimit` against a private
# redis-server: a barrier's parties in several processes let go together
# with one generation and every arrival index, a party that gives up or is
# interrupted breaks the round for the others until a reset; a rate
# limiter's permits taken by separate runs never exceed the rate in any
# window of its interval (judged on the grant times the server recorded),
# the refusal of PER_CLIENT without a keep-alive, and the warning when
# --rate differs from the stored rate.

. "$(dirname "$0")/lib.sh"

# Succeeds when $2 parties wait at barrier $1.
arrived_is() {
    [ "$(rcli hget "$1" arrived)" = "$2" ]
}

test_barrier_releases_parties_of_several_processes_together() {
    local i pids=""
    # Two of three parties arrive; neither may run its command yet.
    for i in 1 2; do
        cli barrier round --parties 3 -- sh -c \
            'echo "$CREDISSON_BARRIER_GENERATION $CREDISSON_BARRIER_INDEX" \
                >"ran.$1"' sh "$i" &
        pids="$pids $!"
    done
    wait_until 5000 arrived_is round 2 || fail "two parties never waited"
    expect_eq "$(ls ran.* 2>/dev/null | wc -l | tr -d ' ')" 0 \
        "commands run before the last party arrived"
    run_cli barrier round --parties 3
    expect_eq "$rc" 0 "exit status of the last party"
    expect_eq "$out" "generation 0 index 0" "the last party's output"
    for i in $pids; do
        wait "$i" || fail "a party failed"
    done
    expect_eq "$(cat ran.1 ran.2 | sort | tr '\n' ' ')" "0 1 0 2 " \
        "generations and indices of the others"
    # The barrier is ready for the next round.
    expect_eq "$(rcli hget round generation)" 1 "generation afterwards"
}

test_barrier_timeout_breaks_the_round_until_reset() {
    cli_exec barrier brk --parties 3 &
    local pid=$! t0
    wait_until 5000 arrived_is brk 1 || fail "the party never waited"
    t0=$(epoch_ms)
    run_cli barrier brk --parties 3 --timeout 200ms
    expect_eq "$rc" 75 "exit status of the party that gave up"
    expect_contains "$err" "gave up after 200ms" "stderr"
    wait "$pid"
    expect_eq "$?" 75 "exit status of the party left waiting"
    [ $(($(epoch_ms) - t0)) -lt "$(slow 3000)" ] ||
        fail "the waiting party was not let go at once"
    run_cli barrier brk --parties 3
    expect_eq "$rc" 75 "a party of the broken round"
    expect_contains "$err" "the round was broken" "stderr"
    run_cli barrier brk reset
    expect_eq "$rc" 0 "reset"
    run_cli barrier brk --parties 1 --timeout 0 2>/dev/null
    expect_eq "$rc" 64 "another number of parties"
    cli barrier brk --parties 3 -w 5s >/dev/null &
    pid=$!
    cli barrier brk --parties 3 -w 5s >/dev/null &
    local pid2=$!
    run_cli barrier brk --parties 3 -w 5s
    expect_eq "$rc" 0 "the round after the reset"
    wait "$pid" || fail "a party of the round after the reset failed"
    wait "$pid2" || fail "a party of the round after the reset failed"
}

test_barrier_interrupted_party_breaks_the_round() {
    cli_exec barrier intr --parties 3 &
    local a=$!
    wait_until 5000 arrived_is intr 1 || fail "the first party never waited"
    cli_exec barrier intr --parties 3 &
    local b=$!
    wait_until 5000 arrived_is intr 2 || fail "the second party never waited"
    kill -INT "$b"
    wait "$b"
    expect_eq "$?" 130 "exit status of the interrupted party"
    wait "$a"
    expect_eq "$?" 75 "exit status of the other"
    expect_eq "$(rcli hget intr broken)" 1 "broken"
}

test_barrier_usage_errors() {
    run_cli barrier x
    expect_eq "$rc" 64 "without --parties"
    expect_contains "$err" "missing --parties" "stderr"
    run_cli barrier x --parties 0
    expect_eq "$rc" 64 "--parties 0"
    run_cli --parties 2 barrier x
    expect_eq "$rc" 64 "--parties before the command word"
    run_cli barrier x reset --parties 2
    expect_eq "$rc" 64 "--parties with reset"
}

# Prints the latest grant time (epoch ms) recorded by the OVERALL rate
# limiter $1 (older records are dropped once an interval old). The
# members are binary and may hold newlines: only the score is printed.
last_grant() {
    rcli eval "return redis.call('zrange', KEYS[1], -1, -1, 'withscores')[2]" \
        1 "{$1}:permits"
}

test_ratelimit_runs_never_exceed_the_rate() {
    local i
    # Five runs of one permit each from a limiter of 2 per 700 ms: at least
    # two waits of an interval.
    for i in 1 2 3 4 5; do
        run_cli ratelimit rl --rate 2/700ms -- sh -c 'echo "$CREDISSON_RATELIMIT_NAME"'
        expect_eq "$rc" 0 "exit status of run $i"
        expect_eq "$out" rl "the command's output"
        expect_eq "$err" "" "stderr of run $i"
        last_grant rl >>times
    done
    expect_eq "$(grep -c '' times)" 5 "grants recorded"
    # Every window of one interval holds at most two grants: the grant two
    # before each one is at least 700 ms older.
    awk 'NR > 2 && $1 - t[NR - 2] < 700 { bad = 1 } { t[NR] = $1 }
         END { exit bad }' times || fail "three grants within 700 ms: $(cat times)"
    expect_eq "$(rcli hget rl rate) $(rcli hget rl interval)" "2 700" \
        "the stored rate"
}

test_ratelimit_wait_zero_exits_75_when_the_budget_is_spent() {
    cli ratelimit one --rate 1/1m -- true || fail "first run"
    run_cli ratelimit one --rate 1/1m -w 0 -- touch ran
    expect_eq "$rc" 75 "exit status"
    expect_contains "$err" "rate limiter 'one': busy" "stderr"
    file_exists ran && fail "the command ran without a permit"
    run_cli ratelimit one available
    expect_eq "$out" 0 "available"
}

test_ratelimit_warns_when_rate_differs() {
    cli ratelimit w --rate 5/1m -- true || fail "first run"
    run_cli ratelimit w --rate 7/2m -- echo ran
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" ran "the command ran"
    expect_contains "$err" "warning: rate limiter 'w' keeps its rate of 5 per 1m00s, not --rate 7/2m00s" \
        "stderr"
    run_cli ratelimit w --rate 5/1m -- true
    expect_eq "$err" "" "no warning for the same rate"
    run_cli ratelimit w available
    expect_eq "$out" 2 "available after three permits"
}

test_ratelimit_per_client_needs_keep_alive() {
    run_cli ratelimit pc --rate 1/1s --per-client -- touch ran
    expect_eq "$rc" 64 "exit status"
    expect_contains "$err" "--per-client needs --keep-alive" "stderr"
    file_exists ran && fail "the command ran"
    key_exists pc && fail "the limiter was made"
    run_cli ratelimit pc --rate 1/1s --per-client --keep-alive 10s -- touch ran
    expect_eq "$rc" 0 "exit status with --keep-alive"
    file_exists ran || fail "the command did not run"
    expect_eq "$(rcli hget pc type)" 1 "type"
    local ttl
    ttl=$(rcli pttl pc)
    [ "$ttl" -gt 0 ] && [ "$ttl" -le 10000 ] || fail "pttl of the limiter: $ttl"
}

# A PER_CLIENT limiter gives each run a budget of its own: every run says
# so, and one without a keep-alive time (as Java may make it) is not used.
test_ratelimit_per_client_made_elsewhere_is_warned_about_or_refused() {
    rcli hset jpc rate 5 interval 60000 type 1 keepAliveTime 0 >/dev/null
    run_cli ratelimit jpc -- touch ran
    expect_eq "$rc" 78 "no keep-alive time"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "rate limiter 'jpc' is PER_CLIENT without a keep-alive time" \
        "stderr"
    file_exists ran && fail "the command ran"
    [ "$(rcli keys '{jpc}:*')" = "" ] || fail "keys were left: $(rcli keys '*')"
    rcli hset jpc keepAliveTime 60000 >/dev/null
    run_cli ratelimit jpc -- echo ran
    expect_eq "$rc" 0 "with a keep-alive time"
    expect_eq "$out" ran "stdout"
    expect_contains "$err" "warning: rate limiter 'jpc' is PER_CLIENT: each run is a new client" \
        "stderr"
    run_cli ratelimit jpc -- true
    expect_contains "$err" "is PER_CLIENT" "the warning comes on every run"
}

# --keep-alive is compared too, and --rate takes the library's 2^32 - 1.
test_ratelimit_warns_when_keep_alive_differs() {
    cli ratelimit ka --rate 5/1s --keep-alive 1m -- true || fail "first run"
    run_cli ratelimit ka --rate 5/1s --keep-alive 2m -- true
    expect_eq "$rc" 0 "exit status"
    expect_contains "$err" "keeps its rate of 5 per 1.0s, keep-alive 1m00s, not --rate 5/1.0s --keep-alive 2m00s" \
        "stderr"
    run_cli ratelimit ka --rate 5/1s -- true
    expect_eq "$err" "" "no --keep-alive: no warning"
    run_cli ratelimit big --rate 4294967295/1h -- true
    expect_eq "$rc" 0 "the largest rate"
    expect_eq "$(rcli hget big rate)" 4294967295 "stored rate"
}

test_ratelimit_without_rate_fails() {
    run_cli ratelimit none -- touch ran
    expect_eq "$rc" 78 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "rate limiter 'none' has no rate" "stderr"
    expect_contains "$err" "give one with --rate R/INTERVAL" "stderr"
    file_exists ran && fail "the command ran"
    run_cli ratelimit x --keep-alive 1s -- true
    expect_eq "$rc" 64 "--keep-alive without --rate"
    run_cli ratelimit x --rate 3 -- true
    expect_eq "$rc" 64 "--rate without an interval"
    run_cli ratelimit x --rate 3/1s --keep-alive 500ms -- true
    expect_eq "$rc" 64 "--keep-alive shorter than the interval"
}

redis_up
run_test test_barrier_releases_parties_of_several_processes_together
run_test test_barrier_timeout_breaks_the_round_until_reset
run_test test_barrier_interrupted_party_breaks_the_round
run_test test_barrier_usage_errors
run_test test_ratelimit_runs_never_exceed_the_rate
run_test test_ratelimit_wait_zero_exits_75_when_the_budget_is_spent
run_test test_ratelimit_warns_when_rate_differs
run_test test_ratelimit_per_client_needs_keep_alive
run_test test_ratelimit_without_rate_fails
run_test test_ratelimit_per_client_made_elsewhere_is_warned_about_or_refused
run_test test_ratelimit_warns_when_keep_alive_differs
finish
