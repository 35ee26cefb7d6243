#!/bin/bash
# SPDX-License-Identifier: MIT
# The house rules doc/architecture.md states, checked on src/:
# - no two modules (x.c with x.h) include each other, directly or around a
#   loop, and no module calls another that calls it back (direct calls to
#   functions defined without `static`; callbacks do not count);
# - no Redisson key or channel name is spelled outside src/names.c (and
#   lua/), and the library never calls hiredis.
set -u
src=${CR_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/src
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Source without comments or string literals, so that neither makes an edge.
strip() {
    sed -e ':a' -e 's|/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/||g' -e '/\/\*/{N;ba}' "$1" |
        sed -e 's/"\([^"\\]\|\\.\)*"/""/g'
}

# Functions defined without `static`: "name module".
# src/scripts.c is generated from lua/ (in-tree builds leave it there).
sources() { ls "$src"/*.c "$src"/*.h | grep -v '/scripts\.[ch]$'; }

for f in $(sources | grep '\.c$'); do
    awk -v m="$(basename "$f" .c)" '
        /^[a-z_][a-z0-9_]*\(/ && prev !~ /^static/ {
            sub(/\(.*/, ""); print $0, m
        }
        { prev = $0 }' "$f"
done | sort -u > "$dir/defs"

# Edges "from to": includes of another module's header, calls of another
# module's function.
for f in $(sources); do
    m=$(basename "$f"); m=${m%.*}
    grep -o '^#include "[a-z_]*\.h"' "$f" | sed 's/.*"\(.*\)\.h"/\1/' |
        while read -r h; do
            [ "$h" != "$m" ] && [ -e "$src/$h.h" ] && echo "$m $h"
        done
done | sort -u > "$dir/includes"
for f in $(sources | grep '\.c$'); do
    m=$(basename "$f" .c)
    strip "$f" | grep -o '\b[a-z_][a-z0-9_]*[ ]*(' | sed 's/[ (]*$//' |
        sort -u > "$dir/called"
    awk -v m="$m" 'NR == FNR { seen[$1] = 1; next }
                   ($1 in seen) && $2 != m { print m, $2 }' \
        "$dir/called" "$dir/defs"
done | sort -u > "$dir/calls"

for g in includes calls; do
    if ! tsort "$dir/$g" > /dev/null 2> "$dir/err"; then
        fail "the $g graph has a cycle: $(tr '\n' ' ' < "$dir/err")"
    fi
done
[ -s "$dir/calls" ] || fail "no call found: the check itself is broken"

# Names: only names.c spells them.
if grep -n '"[^"]*\(redisson_\|credisson_\)[a-z_]*' $(sources) |
        grep -v '^[^:]*/names\.c:'; then
    fail "a Redisson name is spelled outside src/names.c (above)"
fi
if for f in $(sources); do strip "$f"; done |
        grep -n '#include <hiredis\|redisContext\|redisCommand\|redisReply'; then
    fail "the library calls hiredis (above)"
fi

[ "$failures" -eq 0 ] && echo "PASS: layers" && exit 0
exit 1
