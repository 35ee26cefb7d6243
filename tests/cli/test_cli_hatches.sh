#!/bin/bash
# SPDX-License-Identifier: MIT
# The escape hatches of credisson(1) against a private redis-server:
# `unlock --force` for every lock kind (waking the waiters), `delete` for
# every kind of object, each naming whom it removed and refusing while
# that holder's client is connected unless --yes; a lock held without a
# command until a signal or the end of standard input; and
# `ratelimit NAME set-rate`.

. "$(dirname "$0")/lib.sh"

# Starts `credisson lock NAME` without a command, options "$@" after the
# name, holding until its standard input (a pipe, whose writing end this
# shell keeps as fd 7) ends; its stdout goes to ./held. Sets HOLDER to its
# pid and waits until it has said it holds the lock.
hold_lock() {
    local name=$1
    shift
    rm -f held fifo
    mkfifo fifo
    cli_exec lock "$name" "$@" <fifo >held &
    HOLDER=$!
    exec 7>fifo
    wait_until 5000 test -s held || fail "the lock was never held"
}

# Succeeds when the process $1, a child of this shell, has ended (a
# zombie not yet waited for counts as ended).
has_ended() {
    local state
    state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -z "$state" ] || [ "$state" = Z ]
}

# Succeeds when $2 or more connections listen on channel $1.
subscribed() {
    [ "$(rcli pubsub numsub "$1" | tail -n 1)" -ge "$2" ]
}

# Ends the hold started by hold_lock by closing its standard input, and
# checks that it exits with status $1.
end_hold() {
    exec 7>&-
    wait "$HOLDER"
    expect_eq "$?" "$1" "the holder's exit status"
}

test_lock_without_a_command_holds_until_stdin_ends() {
    hold_lock held
    expect_contains "$(cat held)" "owner " "what it printed"
    expect_eq "$(rcli hkeys held)" "$(cut -d' ' -f2 held)" "the owner"
    run_cli lock held -n -- true
    expect_eq "$rc" 75 "another run while it is held"
    end_hold 0
    key_exists held && fail "the lock was not released"
    return 0
}

test_lock_without_a_command_holds_until_sigterm() {
    # A background job of a script gets /dev/null as stdin: that end must
    # not end the hold.
    cli_exec lock bg --fenced --json </dev/null >held &
    local pid=$!
    wait_until 5000 test -s held || fail "the lock was never held"
    printf '%s' "$(cat held)" | json_ok || fail "not JSON: $(cat held)"
    expect_contains "$(cat held)" '"name":"bg","owner":"' "JSON"
    expect_contains "$(cat held)" '"fencing_token":1}' "JSON"
    msleep 300
    key_exists bg || fail "released before the signal"
    kill -TERM "$pid"
    wait "$pid"
    expect_eq "$?" 0 "exit status after SIGTERM"
    key_exists bg && fail "the lock was not released"
    return 0
}

test_lock_held_without_a_command_exits_76_when_lost() {
    # Renewed every second: the first renewal after the deletion finds it.
    hold_lock gone --watchdog 3s
    rcli del gone >/dev/null
    wait_until 5000 has_ended "$HOLDER" || fail "the holder kept going"
    exec 7>&-
    wait "$HOLDER"
    expect_eq "$?" 76 "exit status"
}

# With --lease the hold ends at its local deadline, the lease less its
# margin for clock rates (1 % and 2 ms), before Redis lets anyone else in.
test_lock_held_with_a_lease_ends_with_it() {
    local t0 t1 lease=$(slow 1000)
    t0=$(epoch_ms)
    hold_lock short --lease "${lease}ms"
    wait "$HOLDER"
    expect_eq "$?" 76 "exit status"
    t1=$(epoch_ms)
    exec 7>&-
    [ $((t1 - t0)) -ge $((lease - lease / 100 - 2)) ] ||
        fail "ended after $((t1 - t0)) ms, before its deadline"
    [ $((t1 - t0)) -lt $((lease + $(slow 2000))) ] ||
        fail "ended after $((t1 - t0)) ms"
}

# The recipe of the README and credisson(1), as written there, with the
# steps replaced: the lock is held from the owner's line until the pipe
# closes.
test_readme_recipe_holds_the_lock_across_steps() {
    PATH="$CR_TEST_BUILDDIR:$PATH" bash -c '
        coproc HOLD { credisson lock --wait 1m30s release-train; }
        pid=$HOLD_PID in=${HOLD[1]}         # bash unsets both once it exits
        read -r _ owner <&"${HOLD[0]}" || exit 75   # held from here
        redis-cli -p "$1" hkeys release-train >during
        echo "$owner" >owner
        exec {in}>&-                        # releases the lock
        # (the test: until bash has reaped it, as it may before the next
        # line on a loaded machine; HOLD_PID is gone then)
        while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
        wait "$pid"                         # 0, or 76 if it was lost meanwhile
        ' _ "$PORT"
    expect_eq "$?" 0 "the recipe's status"
    expect_eq "$(cat during)" "$(cat owner)" "the lock during the steps"
    key_exists release-train && fail "not released"
    return 0
}

test_force_unlock_of_a_held_lock_refused_then_done_with_yes() {
    hold_lock fu --watchdog 3s
    run_cli unlock --force fu
    expect_eq "$rc" 75 "refused while the holder is connected"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "'fu' is held by $(cut -d' ' -f2 held)" "stderr"
    expect_contains "$err" "host $(hostname), pid $HOLDER" "stderr"
    expect_contains "$err" "give --yes" "stderr"
    key_exists fu || fail "unlocked although refused"
    run_cli unlock --force fu --yes
    expect_eq "$rc" 0 "exit status with --yes"
    expect_contains "$out" "unlocked 'fu' (a lock)" "stdout"
    expect_contains "$out" "holder $(cut -d' ' -f2 held) (hold count 1)" \
        "stdout"
    expect_contains "$out" "pid $HOLDER" "stdout"
    key_exists fu && fail "still locked"
    # The holder finds its lock gone.
    wait "$HOLDER"
    expect_eq "$?" 76 "the holder's exit status"
    exec 7>&-
}

test_force_unlock_wakes_a_waiter_at_once() {
    local t0 t1
    hold_lock wake
    cli_exec lock wake --wait 60s -- touch ran &
    local waiter=$!
    wait_until 5000 subscribed "redisson_lock__channel:{wake}" 1 ||
        fail "the waiter never subscribed"
    t0=$(epoch_ms)
    cli unlock --force --yes wake >/dev/null
    wait "$waiter"
    expect_eq "$?" 0 "the waiter's exit status"
    t1=$(epoch_ms)
    file_exists ran || fail "the waiter did not run"
    # Woken by the message, not by the holder's lease (30 s) running out.
    [ $((t1 - t0)) -lt $(slow 5000) ] || fail "woken after $((t1 - t0)) ms"
    end_hold 76
}

test_force_unlock_of_each_kind() {
    local kind
    for kind in --fair --read --write; do
        hold_lock "k$kind" "$kind" --watchdog 3s
        run_cli unlock --force --yes "k$kind"
        expect_eq "$rc" 0 "unlock --force of $kind"
        key_exists "k$kind" && fail "$kind: still locked"
        end_hold 76
    done
    run_cli unlock --force --json nothing-here
    expect_eq "$rc" 79 "nothing under the name"
    cli semaphore s set 1 >/dev/null
    run_cli unlock --force s
    expect_eq "$rc" 64 "not a lock"
    expect_contains "$err" "'s' holds a semaphore" "stderr"
    # A holder whose client is gone: no --yes needed.
    rcli hset dead "6a2c8b1e-0000-4000-8000-000000000000:1" 1 >/dev/null
    run_cli unlock --force dead --json
    expect_eq "$rc" 0 "a dead holder"
    printf '%s' "$out" | json_ok || fail "not JSON: $out"
    expect_contains "$out" '"unlocked":true' "JSON"
    expect_contains "$out" '"client":{"state":"not connected"}' "JSON"
}

test_delete_each_kind_of_object() {
    cli semaphore sem set 2 >/dev/null
    cli latch lat set 2
    cli ratelimit rl set-rate 5/1s >/dev/null
    cli lock lk --fenced -- true
    rcli set str text >/dev/null
    run_cli delete sem
    expect_eq "$rc" 0 "delete a semaphore"
    expect_contains "$out" "deleted 'sem' (a semaphore" "stdout"
    key_exists sem && fail "semaphore left"
    run_cli delete lat
    expect_eq "$rc" 0 "delete a latch"
    key_exists lat && fail "latch left"
    run_cli delete rl
    expect_eq "$rc" 0 "delete a rate limiter"
    expect_contains "$out" "(a rate limiter)" "stdout"
    key_exists rl && fail "rate limiter left"
    run_cli delete lk
    expect_eq "$rc" 0 "delete a fenced lock"
    expect_contains "$out" "tokens start again from 1" "stdout"
    key_exists "redisson_lock_token:{lk}" && fail "token left"
    run_cli delete str
    expect_eq "$rc" 64 "a string"
    expect_contains "$err" "'str' holds a Redis string" "stderr"
    key_exists str || fail "the string was deleted"
    run_cli delete none
    expect_eq "$rc" 79 "nothing"
}

test_delete_refuses_while_permits_are_out() {
    cli_exec semaphore pes --permits 1 -- sh -c 'touch ready; exec sleep 30' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "holder never ran"
    run_cli delete pes
    expect_eq "$rc" 75 "refused"
    expect_contains "$err" "1 permit out" "stderr"
    run_cli delete pes --yes
    expect_eq "$rc" 0 "with --yes"
    key_exists pes && fail "semaphore left"
    wait "$pid"
    expect_eq "$?" 76 "the permit's command was stopped: its permit is gone"
}

test_delete_barrier_breaks_its_waiting_parties() {
    cli_exec barrier bar --parties 3 -w 60s &
    local pid=$!
    wait_until 5000 eval '[ "$(rcli hget bar arrived)" = 1 ]' ||
        fail "the party never waited"
    run_cli delete bar
    expect_eq "$rc" 75 "refused while a party waits"
    expect_contains "$err" "'bar' is held by" "stderr"
    run_cli delete bar --yes
    expect_eq "$rc" 0 "with --yes"
    expect_contains "$out" "waiting party " "stdout"
    wait "$pid"
    expect_eq "$?" 75 "the party's exit status: broken"
}

test_ratelimit_set_rate_prints_before_and_after() {
    run_cli ratelimit api set-rate 10/1s
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" "before: no rate
after:  10 per 1.0s" "stdout"
    run_cli ratelimit api set-rate 20/1m --json
    printf '%s' "$out" | json_ok || fail "not JSON: $out"
    expect_contains "$out" '"before":{"rate":10,"interval_ms":1000' "JSON"
    expect_contains "$out" '"after":{"rate":20,"interval_ms":60000' "JSON"
    expect_eq "$(rcli hget api rate)" 20 "stored rate"
    run_cli ratelimit api set-rate 5/1s --per-client --keep-alive 1m
    expect_eq "$rc" 0 "per client"
    expect_contains "$out" "after:  5 per 1.0s, per client, keep-alive 1m00s" \
        "stdout"
}

redis_up
run_test test_lock_without_a_command_holds_until_stdin_ends
run_test test_lock_without_a_command_holds_until_sigterm
run_test test_lock_held_without_a_command_exits_76_when_lost
run_test test_lock_held_with_a_lease_ends_with_it
run_test test_readme_recipe_holds_the_lock_across_steps
run_test test_force_unlock_of_a_held_lock_refused_then_done_with_yes
run_test test_force_unlock_wakes_a_waiter_at_once
run_test test_force_unlock_of_each_kind
run_test test_delete_each_kind_of_object
run_test test_delete_refuses_while_permits_are_out
run_test test_delete_barrier_breaks_its_waiting_parties
run_test test_ratelimit_set_rate_prints_before_and_after
finish
