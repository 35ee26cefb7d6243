#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs the whole test suite (unit and integration tests) twice, each in its
# own out-of-tree build: once built with AddressSanitizer and
# UndefinedBehaviorSanitizer, once with ThreadSanitizer. Any report fails
# the test that caused it (halt_on_error, leaks included). Usage:
#   scripts/sanitize.sh [address|thread]    (default: both, in that order)
# Set SANITIZE_KEEP=1 to keep the build directories (their paths are
# printed); CR_TEST_JOBS: the test programs run at a time (default two per
# core, as scripts/test.sh). Exits non-zero when a run fails.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)

work=$(mktemp -d "${TMPDIR:-/tmp}/credisson-sanitize.XXXXXX")
[ "${SANITIZE_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

# configure refuses to build out of tree from a source tree configured in
# place, so the builds start from a clean copy of the sources: the files
# git knows of or would add (what is ignored, such as build products,
# stays out), with the build system generated anew.
src=$top
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    src=$work/src
    mkdir -p "$src"
    (cd "$top" && git ls-files -z -co --exclude-standard |
        while IFS= read -r -d '' f; do
            # Programs built in place that .gitignore misses stay out too.
            [ -f "$f" ] && [ "$(head -c 4 "$f" | tr -d '\0')" != $'\x7fELF' ] &&
                printf '%s\0' "$f"
        done |
        tar --null -T - -cf - | tar -xf - -C "$src") || exit 1
    (cd "$src" && autoreconf -fi >/dev/null 2>&1) || {
        echo "sanitize: autoreconf failed" >&2
        exit 1
    }
elif [ -f "$top/config.status" ]; then
    echo "sanitize: $top is configured in place and is not a git checkout;" \
         "run make distclean there first" >&2
    exit 1
fi

# Reports are fatal; leaks are reported; forked children that exit
# normally are checked too.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:exitcode=86:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87"
export LSAN_OPTIONS="exitcode=88"
tsan_opts="halt_on_error=1:exitcode=89:second_deadlock_stack=1"
if [ -f "$src/tests/tsan.supp" ]; then
    tsan_opts="$tsan_opts:suppressions=$src/tests/tsan.supp"
fi
export TSAN_OPTIONS="$tsan_opts"
# Sanitized programs run several times slower: widen the tests' time bounds
# as for valgrind (CR_TEST_SLOW), but run them directly, not under valgrind
# (CR_TEST_SANITIZED: the CLI tests otherwise wrap credisson in valgrind).
export CR_TEST_SLOW=1 CR_TEST_SANITIZED=1

# Prints, for each test log of build $2 that matches $1, its name and the
# lines that match $3 with $4 lines before and $5 after, at most $6 lines.
logs_matching() {
    grep -l -E "$1" "$2"/tests/*/*.log 2>/dev/null |
        while read -r log; do
            echo "--- $log"
            grep -B "$4" -A "$5" -E "$3" "$log" | head -n "$6"
        done
}

# One kind: configure, build and run the suite in $work/build-KIND.
run_kind() {
    local kind=$1 flags build start
    case $kind in
        address) flags=address,undefined ;;
        thread) flags=thread ;;
        *) echo "sanitize: unknown kind $kind (address or thread)" >&2; return 2 ;;
    esac
    build=$work/build-$kind
    mkdir -p "$build"
    echo "== sanitize: $flags (in $build)"
    if ! (cd "$build" && "$src/configure" -q --with-sanitizer="$flags" \
            >/dev/null); then
        echo "sanitize: configure --with-sanitizer=$flags failed" >&2
        return 1
    fi
    start=$(date +%s)
    if (cd "$build" && make -j"$(nproc)" >/dev/null &&
            make -j"${CR_TEST_JOBS:-$((2 * $(nproc)))}" check); then
        echo "== sanitize: $flags passed in $(( $(date +%s) - start )) s"
        return 0
    fi
    echo "== sanitize: $flags FAILED; the reports:"
    logs_matching 'Sanitizer|runtime error' "$build" \
        '^(==[0-9]+==ERROR|WARNING: ThreadSanitizer|SUMMARY|.*runtime error)' \
        0 30 80
    # What each failed program said where it failed (a timing failure has
    # no report above).
    logs_matching '^FAIL ' "$build" \
        '^\[  (ERROR|FAILED) +\]|^\[   LINE   \]|^    .*: got ' 3 0 40
    tail -n 40 "$build/test-suite.log" 2>/dev/null
    return 1
}

# The kinds run one after the other: side by side (each suite mostly
# waits) they saved three minutes, but the load they put on each other
# made the TSan build's order and timing checks fail in two CI runs.
status=0
for kind in "${kinds[@]}"; do
    run_kind "$kind" || status=1
done
[ "${SANITIZE_KEEP:-0}" = 1 ] && echo "sanitize: builds kept in $work"
exit $status
