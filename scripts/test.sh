#!/bin/bash
# SPDX-License-Identifier: MIT
# Sets everything up and runs every test:
#   1. make check: unit tests, integration tests against private redis-server
#      (and Sentinel) processes, CLI tests;
#   2. make check-valgrind: the same suite under valgrind memcheck;
#   3. scripts/sanitize.sh: the suite built with ASan+UBSan, then with TSan;
#   4. fuzz/run.sh: each libFuzzer target for a bounded time;
#   5. make distcheck (packaging, VPATH build, install; the suite already ran).
# Ends with the line "total: N passed, N failed" (tests counted in 1).
# CR_QUICK=1 runs step 1 only. Each pass runs CR_TEST_JOBS programs at a
# time, by default two per core: most of the suite waits (on leases, on
# servers, on timeouts widened for valgrind and the sanitizers) rather
# than computes, and the tests' bounds hold on a loaded machine.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
export CR_TEST_JOBS=${CR_TEST_JOBS:-$((2 * $(nproc)))}

status=0
passed=0
failed=0

# Counts the results in the logs of the last make check: cmocka's per-test
# lines, and the "N passed, N failed" line each shell test ends with.
count() {
    local p f
    p=$(cat tests/*/*.log 2>/dev/null | grep -c '^\[       OK \]')
    # cmocka ends a run with failures with "[  FAILED  ] N test(s), listed
    # below:". A program that dies without a summary is caught by its exit
    # status (the total then says at least 1 failed).
    f=$(cat tests/*/*.log 2>/dev/null |
        sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:$/\1/p' |
        awk '{ n += $1 } END { print n + 0 }')
    for log in tests/cli/*.log; do
        [ -f "$log" ] || continue
        line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
        [ -n "$line" ] || continue
        p=$((p + $(echo "$line" | cut -d' ' -f1)))
        f=$((f + $(echo "$line" | cut -d' ' -f3)))
    done
    echo "$1: $p passed, $f failed"
    if [ "$1" = check ]; then
        passed=$p
        failed=$f
    fi
}
run() {
    local start=$SECONDS
    echo "== $*"
    if ! "$@"; then
        status=1
        tail -n 200 test-suite.log 2>/dev/null
    fi
    echo "== $* took $((SECONDS - start)) s"
}

run make -j"$CR_TEST_JOBS" check
count check
if [ "${CR_QUICK:-0}" != 1 ]; then
    run make -j"$CR_TEST_JOBS" check-valgrind
    count valgrind
    run scripts/sanitize.sh
    run fuzz/run.sh "${CR_FUZZ_SECONDS:-20}"
    run make -j"$(nproc)" distcheck TESTS=
fi
[ $status -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
echo "total: $passed passed, $failed failed"
exit $status
