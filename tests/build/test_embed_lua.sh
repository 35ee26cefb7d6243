#!/bin/bash
# SPDX-License-Identifier: MIT
# build-aux/embed-lua.sh checks each script's "--! keys:" / "--! argv:"
# header when the library is built: a script without it, a name given
# twice, or a KEYS[n] / ARGV[n] past what the header declares stops the
# build. The real lua/ directory passes, and the header lines are not part
# of what Redis is sent.
set -u
src=${CR_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
embed=$src/build-aux/embed-lua.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Runs the generator on one script with the given text; $1: expected
# outcome (ok or refused), $2: text of stderr it must contain when refused.
try() {
    local want=$1 msg=$2 body=$3
    printf '%s\n' "$body" > "$dir/probe.lua"
    if sh "$embed" "$dir/out.c" "$dir/out.h" "$dir/probe.lua" 2> "$dir/err"; then
        [ "$want" = ok ] || fail "accepted: $body"
    else
        [ "$want" = refused ] || fail "refused: $body ($(cat "$dir/err"))"
        grep -q -- "$msg" "$dir/err" || fail "message lacks '$msg': $(cat "$dir/err")"
    fi
}

try ok "" $'--! keys: lock\n--! argv: lease_ms:int owner\nreturn KEYS[1] .. ARGV[2]'
try refused 'needs a "--! keys:"' $'--! argv: owner\nreturn ARGV[1]'
try refused 'named twice' $'--! keys: lock\n--! argv: lock\nreturn 1'
try refused 'uses KEYS\[2\] but declares 1 keys' $'--! keys: lock\n--! argv:\nreturn KEYS[2]'
try refused 'uses ARGV\[3\] but declares 2 arguments' $'--! keys:\n--! argv: a b:int\nreturn ARGV[3]'
try refused 'bad type' $'--! keys: lock:float\n--! argv:\nreturn 1'
try refused 'only the last' $'--! keys: many... one\n--! argv:\nreturn 1'
try ok "" $'--! keys: locks...\n--! argv: lease_ms:int owners...\nreturn KEYS[7] .. ARGV[9]'

# The real scripts: generated, with the header lines left out of the body.
if sh "$embed" "$dir/s.c" "$dir/s.h" "$src"/lua/*.lua 2> "$dir/err"; then
    grep -q -- '"--!' "$dir/s.c" && fail "a header line is embedded in a body"
    grep -q 'typedef struct cr__lock_unlock_args' "$dir/s.h" ||
        fail "no argument struct for lock_unlock"
else
    fail "lua/ refused: $(cat "$dir/err")"
fi

[ "$failures" -eq 0 ] && echo "PASS: embed-lua checks" && exit 0
exit 1
