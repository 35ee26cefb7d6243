#!/bin/bash
# SPDX-License-Identifier: MIT
# The ABI of the sized structs (cr_client_options, cr_client_stats), with
# two builds of the shared library and two builds of one program
# (tests/abi/abi_probe.c), all made by `make check`:
#
#   library  .libs/libcredisson.so.N            today's header
#   next     tests/abi/.libs/libcredisson.so.N  the same sources built
#            against tests/abi/next/credisson/client.h: today's header with
#            a field appended to each struct (a newer credisson)
#   probe_old  built against today's header
#   probe_new  built against the newer header
#
# The probes have no run path; LD_LIBRARY_PATH picks the library, as an
# upgrade or a downgrade of the installed one would, and each run checks
# that the library it asked for is the one loaded. Shown:
#   - a program built before runs against the newer library: cr_client_new
#     with its smaller size, a lock against a real redis-server, and
#     cr_client_stats_get writing nothing past its struct (canaries);
#   - a program built for the newer header runs against today's library
#     with the new field 0 (CR_OK; the counter the library does not know
#     is left alone), and gets CR_ENOTSUP with it set; the newer library
#     takes it set;
#   - a zeroed struct is CR_EINVAL with a message naming the initialiser.
# With CR_TEST_SLOW=1 (make check-valgrind) the probes run under valgrind.
# Under the sanitizers (scripts/sanitize.sh) everything here is built with
# the same -fsanitize flags by make, so the test runs there as it is.

. "${CR_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/cli/lib.sh"

ABI_DIR="$CR_TEST_BUILDDIR/tests/abi"
LIB_DIR="$CR_TEST_BUILDDIR/.libs"
NEXT_DIR="$ABI_DIR/.libs"

if [ ! -e "$LIB_DIR/libcredisson.so" ] || [ ! -e "$NEXT_DIR/libcredisson.so" ]; then
    echo "SKIP: no shared libcredisson (configured with --disable-shared?)"
    exit 77
fi
for p in probe_old probe_new; do
    [ -x "$ABI_DIR/$p" ] || { echo "$ABI_DIR/$p not built" >&2; exit 1; }
done

USE_VALGRIND=0
if [ "${CR_TEST_SLOW:-0}" = 1 ] && [ "${CR_TEST_SANITIZED:-0}" != 1 ] &&
    command -v valgrind >/dev/null; then
    USE_VALGRIND=1
    echo "(the probes run under valgrind)"
fi

# probe LIBDIR PROGRAM ARGS...: runs the probe against the library in
# LIBDIR (under valgrind with CR_TEST_SLOW=1); output in $out, status in
# $rc.
probe() {
    local dir=$1 prog=$2
    shift 2
    if [ "$USE_VALGRIND" = 1 ]; then
        LD_LIBRARY_PATH="$dir" valgrind -q --leak-check=full \
            --show-leak-kinds=definite,indirect,possible \
            --errors-for-leak-kinds=definite,indirect,possible \
            --error-exitcode=100 \
            --suppressions="$CR_TEST_SRCDIR/tests/valgrind.supp" \
            "$ABI_DIR/$prog" "$@" >"$SCRATCH/out" 2>&1
    else
        LD_LIBRARY_PATH="$dir" "$ABI_DIR/$prog" "$@" >"$SCRATCH/out" 2>&1
    fi
    rc=$?
    out=$(cat "$SCRATCH/out")
    printf '%s\n' "$out" | sed 's/^/    | /'
}

# expect_library LIBDIR PROGRAM: the probe, run with LIBDIR, loads the
# libcredisson in LIBDIR.
expect_library() {
    local want
    want=$(cd "$1" && pwd -P)
    probe "$1" "$2" sizes
    expect_eq "$rc" 0 "$2 sizes"
    case "$out" in
    *"library=$1/"* | *"library=$want/"*) ;;
    *) fail "$2 did not load the library in $1: $out" ;;
    esac
}

# Prints field $2 (name=value) of the probe's output $1.
field() {
    printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

test_newer_header_has_larger_structs() {
    local old new
    probe "$LIB_DIR" probe_old sizes
    old=$out
    probe "$LIB_DIR" probe_new sizes
    new=$out
    [ "$(field "$new" options)" -gt "$(field "$old" options)" ] ||
        fail "options not larger in the newer header: $old / $new"
    [ "$(field "$new" stats)" -gt "$(field "$old" stats)" ] ||
        fail "stats not larger in the newer header: $old / $new"
    grep -q abi_next_option "$ABI_DIR/next/credisson/client.h" ||
        fail "the newer header lacks abi_next_option"
}

test_zeroed_structs_are_refused_with_a_message() {
    probe "$LIB_DIR" probe_old misuse
    expect_eq "$rc" 0 "probe_old misuse"
    expect_contains "$out" "CR_CLIENT_OPTIONS_INIT" "message"
}

test_old_program_against_its_own_library() {
    expect_library "$LIB_DIR" probe_old
    probe "$LIB_DIR" probe_old connect "$CREDISSON_URL"
    expect_eq "$rc" 0 "probe_old connect"
    expect_contains "$out" "canaries intact" "stats"
}

test_old_program_against_newer_library() {
    expect_library "$NEXT_DIR" probe_old
    probe "$NEXT_DIR" probe_old connect "$CREDISSON_URL"
    expect_eq "$rc" 0 "probe_old connect, newer library"
    expect_contains "$out" "canaries intact" "stats"
    probe "$NEXT_DIR" probe_old misuse
    expect_eq "$rc" 0 "probe_old misuse, newer library"
}

test_new_program_against_older_library_with_new_field_zero() {
    expect_library "$LIB_DIR" probe_new
    probe "$LIB_DIR" probe_new connect "$CREDISSON_URL"
    expect_eq "$rc" 0 "probe_new connect, older library"
    expect_contains "$out" "canaries intact" "stats"
    # The counter the older library does not know keeps its canary.
    expect_contains "$out" "abi_next_counter=0xa5c3a5c3deadbeef" \
        "unknown counter"
}

test_new_program_against_older_library_with_new_field_set() {
    probe "$LIB_DIR" probe_new extra "$CREDISSON_URL" enotsup
    expect_eq "$rc" 0 "probe_new extra, older library"
    expect_contains "$out" "CR_ENOTSUP" "status"
    expect_contains "$out" "does not know" "message"
}

test_new_program_against_newer_library() {
    expect_library "$NEXT_DIR" probe_new
    probe "$NEXT_DIR" probe_new extra "$CREDISSON_URL" ok
    expect_eq "$rc" 0 "probe_new extra, newer library"
    expect_contains "$out" "abi_next_option=1: CR_OK" "status"
    probe "$NEXT_DIR" probe_new connect "$CREDISSON_URL"
    expect_eq "$rc" 0 "probe_new connect, newer library"
    # This library knows the counter: it writes it (0, it counts nothing).
    expect_contains "$out" "abi_next_counter=0" "known counter"
    expect_not_contains "$out" "abi_next_counter=0xa5" "known counter"
}

redis_up
run_test test_newer_header_has_larger_structs
run_test test_zeroed_structs_are_refused_with_a_message
run_test test_old_program_against_its_own_library
run_test test_old_program_against_newer_library
run_test test_new_program_against_older_library_with_new_field_zero
run_test test_new_program_against_older_library_with_new_field_set
run_test test_new_program_against_newer_library
finish
