#!/bin/bash
# SPDX-License-Identifier: MIT
# credisson(1) on objects the real Java Redisson client made and holds,
# through its driver (tests/java/redisson.sh builds it from Redisson's own
# sources): --permits leaves a Java RSemaphore's held permits taken, and
# "set" says what it changed; a PER_CLIENT rate limiter made by Java is
# refused without a keep-alive time and warned about with one; unlock
# --force and delete wake Java's waiters, and inspect counts a Java
# waiter's subscribed connection.
#
# Skipped (77, with the reason) where the client cannot be built, and
# under valgrind or the sanitizers: the JVM is not what they check.

. "$(dirname "$0")/lib.sh"

if [ "${CR_TEST_SLOW:-0}" = 1 ] || [ "${CR_TEST_SANITIZED:-0}" = 1 ]; then
    echo "SKIP: the Java client's tests run in the plain pass only"
    exit 77
fi
"$CR_TEST_SRCDIR/tests/java/redisson.sh" check || exit 77
JAR=$("$CR_TEST_SRCDIR/tests/java/redisson.sh" jar) || {
    echo "the real Redisson client did not build" >&2
    exit 1
}

# Runs one driver command ("$@") against the test server; prints its JSON
# line.
jdrv() {
    java -jar "$JAR" --addr "redis://127.0.0.1:$PORT" "$@" 2>/dev/null |
        tail -n 1
}

# The value of field $2 in the JSON line $1 (numbers and true/false).
jfield() {
    printf '%s' "$1" | sed -n "s/.*\"$2\":\\([^,}]*\\).*/\\1/p"
}

# Starts a driver in repl mode, reading commands from the fifo ./jin (kept
# open as fd 8) and writing its lines to ./jout. Sets JREPL to its pid.
jrepl_start() {
    rm -f jin jout
    mkfifo jin
    java -jar "$JAR" --addr "redis://127.0.0.1:$PORT" repl <jin >jout 2>/dev/null &
    JREPL=$!
    exec 8>jin
}

# Sends the command "$*" to the repl and waits (up to 30 s: a JVM starts
# slowly on a busy machine) for its answer, line $1 of ./jout; prints it.
jrepl() {
    local n=$1
    shift
    echo "$*" >&8
    wait_until 30000 eval '[ "$(grep -c "" jout 2>/dev/null)" -ge "$n" ]' ||
        fail "the Java driver did not answer '$*'"
    sed -n "${n}p" jout
}

# Ends the repl.
jrepl_stop() {
    echo quit >&8
    exec 8>&-
    wait "$JREPL" 2>/dev/null
    return 0
}

# --permits K on a name Java uses as an RSemaphore: the permits Java took
# leave no record, and setting the total on every run would give them
# back. It only sets a semaphore that has none, and warns.
test_permits_option_does_not_give_back_the_permits_java_holds() {
    local got
    got=$(jdrv sem-set js 2)
    expect_eq "$(jfield "$got" set)" true "Java's trySetPermits"
    got=$(jdrv sem-acquire js 2 0 -1)
    expect_eq "$(jfield "$got" acquired)" true "Java took both permits"
    run_cli semaphore js --permits 2 -n -- touch ran
    expect_eq "$rc" 75 "no permit for credisson"
    expect_contains "$err" "warning: semaphore 'js' is set already (0 available, 0 out as expirable permits), which is not --permits 2" \
        "stderr"
    file_exists ran && fail "the command ran on a permit Java holds"
    got=$(jdrv sem-avail js)
    expect_eq "$(jfield "$got" available)" 0 "Java's availablePermits"
    # "set" is Redisson's setPermits, which cannot see Java's holders
    # either: it says what it changed.
    run_cli semaphore js set 2
    expect_eq "$out" "before: 0 available, 0 out
after:  2 available, 0 out" "set's counts"
    got=$(jdrv sem-avail js)
    expect_eq "$(jfield "$got" available)" 2 "Java's availablePermits after set"
}

# A PER_CLIENT limiter Java made without a keep-alive time: each run of
# credisson is a new client whose two keys would stay for good, so it is
# refused; with one, every run is warned that its budget is its own.
test_per_client_limiter_made_by_java() {
    local got keys
    got=$(jdrv rl-set jr 5 60000 per_client)
    expect_eq "$(rcli hget jr type)" 1 "Java's PER_CLIENT limiter"
    run_cli ratelimit jr -- touch ran
    expect_eq "$rc" 78 "refused without a keep-alive time"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "rate limiter 'jr' is PER_CLIENT without a keep-alive time" \
        "stderr"
    file_exists ran && fail "the command ran"
    keys=$(rcli --scan --pattern '{jr}:*')
    expect_eq "$keys" "" "keys a run left behind"
    # As Java's trySetRate(PER_CLIENT, 5, 1 minute, keepAlive 1 minute).
    rcli hset jr keepAliveTime 60000 >/dev/null
    run_cli ratelimit jr -- touch ran
    expect_eq "$rc" 0 "with a keep-alive time"
    file_exists ran || fail "the command did not run"
    expect_contains "$err" "warning: rate limiter 'jr' is PER_CLIENT" "stderr"
    keys=$(rcli --scan --pattern '{jr}:value:*')
    [ -n "$keys" ] || fail "no per-client state was made"
    [ "$(rcli pttl "$keys")" -gt 0 ] || fail "the run's keys never expire"
    got=$(jdrv rl-acquire jr 1 0)
    expect_eq "$(jfield "$got" acquired)" true "Java's own budget"
}

# credisson's forceUnlock of a lock Java holds publishes what Redisson
# does: a Java waiter wakes and takes it at once, for each lock kind. A
# Java holder's connections carry no name, so credisson cannot tell it
# gone, and refuses without --yes. Inspect counts the Java waiter's
# subscribed connection.
test_force_unlock_wakes_java_waiters_of_each_kind() {
    local type drv got t0 t1 n=0 json
    jrepl_start
    for type in lock fair write; do
        case $type in
        lock) drv=lock ;;
        fair) drv=fairlock ;;
        write) drv=rlock-write ;;
        esac
        n=$((n + 1))
        got=$(jrepl "$n" lock-acquire "$type" "j$type" -1)
        expect_eq "$(jfield "$got" acquired)" true "$type: Java holds it"
        rm -f waiter.out
        java -jar "$JAR" --addr "redis://127.0.0.1:$PORT" "$drv" "j$type" 0 60000 \
            2>/dev/null >waiter.out &
        local waiter=$!
        if [ "$type" = lock ]; then
            wait_until 30000 eval '[ "$(rcli pubsub numsub "redisson_lock__channel:{jlock}" |
                tail -n 1)" -ge 1 ]' || fail "the Java waiter never subscribed"
            run_cli inspect jlock --json
            json=$out
            expect_contains "$json" '"subscribed_connections":1' \
                "the Java waiter's connection"
        elif [ "$type" = fair ]; then
            wait_until 30000 eval '[ "$(rcli llen "redisson_lock_queue:{jfair}")" = 1 ]' ||
                fail "the Java waiter never queued"
        else
            wait_until 30000 eval '[ "$(rcli pubsub numsub "redisson_rwlock:{jwrite}" |
                tail -n 1)" -ge 1 ]' || fail "the Java waiter never subscribed"
        fi
        # Let the waiter settle into its wait (it subscribed, then tried).
        msleep 500
        run_cli unlock --force "j$type"
        expect_eq "$rc" 75 "$type: refused while Java's client may be alive"
        expect_contains "$err" "cannot be told gone" "$type: why"
        t0=$(epoch_ms)
        run_cli unlock --force --yes "j$type"
        expect_eq "$rc" 0 "$type: with --yes"
        wait "$waiter"
        got=$(tail -n 1 waiter.out)
        expect_eq "$(jfield "$got" acquired)" true "$type: the Java waiter"
        t1=$(jfield "$got" t_acquired_ms)
        # Woken by the message: the holder's watchdog keeps its lease, so
        # nothing else could let the waiter in.
        [ $((t1 - t0)) -lt 5000 ] ||
            fail "$type: the Java waiter took it $((t1 - t0)) ms later"
    done
    jrepl_stop
}

redis_up
run_test test_permits_option_does_not_give_back_the_permits_java_holds
run_test test_per_client_limiter_made_by_java
run_test test_force_unlock_wakes_java_waiters_of_each_kind
finish
