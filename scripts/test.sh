#!/bin/bash
# SPDX-License-Identifier: MIT
# Sets everything up and runs every test: the suite (unit tests and
# integration tests against private redis-server processes), the same suite
# under valgrind memcheck, and make distcheck. Ends with a summary line
# "tests: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

status=0
summary() {
    # Counts cmocka's per-test results in the logs of the last run.
    local passed failed
    passed=$(cat tests/*/*.log 2>/dev/null | grep -c '^\[       OK \]')
    failed=$(cat tests/*/*.log 2>/dev/null | grep -c '^\[  FAILED  \]\|^\[  ERROR   \]')
    echo "$1: $passed passed, $failed failed"
}
run() {
    echo "== $*"
    if ! "$@"; then
        status=1
        cat test-suite.log 2>/dev/null | tail -n 200
    fi
}

run make -j2 check
summary "make check"
run make check-valgrind
summary "make check-valgrind"
if [ "${CR_SKIP_DISTCHECK:-0}" != 1 ]; then
    run make -j2 distcheck
fi
exit $status
