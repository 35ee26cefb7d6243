#!/bin/bash
# SPDX-License-Identifier: MIT
# The house rules doc/architecture.md states, checked on src/ and on the
# tool's src/cli/, each a graph of its own:
# - no two modules (x.c with x.h) include each other, directly or around a
#   loop, and no module calls another that calls it back (direct calls to
#   functions defined without `static`; callbacks do not count);
# - no Redisson key or channel name is spelled outside src/names.c (and
#   lua/), and the library never calls hiredis;
# - the tool uses the public headers only: it includes no header of src/,
#   calls no internal cr__ function it does not define itself, and
#   credisson_SOURCES in Makefile.am compiles no file of the library in.
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
sources() { ls "$1"/*.c "$1"/*.h | grep -v '/scripts\.[ch]$'; }

# Checks the directory $1 (named $2 in messages): no include or call
# cycle among its modules. Leaves its definitions in $dir/defs.
check_graph() {
    local d=$1 what=$2 f m h g
    for f in $(sources "$d" | grep '\.c$'); do
        # A definition starts at the left margin, its type on the line
        # before (the library's style) or before its name (the tool's).
        awk -v m="$(basename "$f" .c)" '
            /^[a-z_]/ && !/^static/ && !/;[ \t]*$/ &&
            match($0, /[a-z_][a-z0-9_]*\(/) &&
            !(RSTART == 1 && prev ~ /^static/) {
                print substr($0, RSTART, RLENGTH - 1), m
            }
            { prev = $0 }' "$f"
    done | sort -u > "$dir/defs"

    # Edges "from to": includes of another module's header, calls of
    # another module's function.
    for f in $(sources "$d"); do
        m=$(basename "$f"); m=${m%.*}
        grep -o '^#include "[a-z_]*\.h"' "$f" | sed 's/.*"\(.*\)\.h"/\1/' |
            while read -r h; do
                [ "$h" != "$m" ] && [ -e "$d/$h.h" ] && echo "$m $h"
            done
    done | sort -u > "$dir/includes"
    for f in $(sources "$d" | grep '\.c$'); do
        m=$(basename "$f" .c)
        strip "$f" | grep -o '\b[a-z_][a-z0-9_]*[ ]*(' | sed 's/[ (]*$//' |
            sort -u > "$dir/called"
        awk -v m="$m" 'NR == FNR { seen[$1] = 1; next }
                       ($1 in seen) && $2 != m { print m, $2 }' \
            "$dir/called" "$dir/defs"
    done | sort -u > "$dir/calls"

    for g in includes calls; do
        if ! tsort "$dir/$g" > /dev/null 2> "$dir/err"; then
            fail "the $g graph of $what has a cycle: $(tr '\n' ' ' < "$dir/err")"
        fi
    done
    [ -s "$dir/calls" ] || fail "no call found in $what: the check itself is broken"
}

check_graph "$src" "src/"

# Names: only names.c spells them.
if grep -n '"[^"]*\(redisson_\|credisson_\)[a-z_]*' $(sources "$src") |
        grep -v '^[^:]*/names\.c:'; then
    fail "a Redisson name is spelled outside src/names.c (above)"
fi
if for f in $(sources "$src"); do strip "$f"; done |
        grep -n '#include <hiredis\|redisContext\|redisCommand\|redisReply'; then
    fail "the library calls hiredis (above)"
fi

# The tool, src/cli/: its own floors, and the library through the public
# headers only: it includes its own headers (and config.h), calls no
# internal cr__ function it does not define, and compiles no file of the
# library in.
cli=$src/cli
check_graph "$cli" "src/cli/"
for f in $(sources "$cli"); do
    grep -o '^#include "[^"]*"' "$f" | sed 's/.*"\(.*\)"/\1/' |
        while read -r h; do
            [ "$h" = config.h ] || [ -e "$cli/$h" ] ||
                echo "$(basename "$f") includes the library's private $h"
        done
done > "$dir/private"
[ -s "$dir/private" ] && fail "src/cli/ reaches past the public headers: $(tr '\n' ';' < "$dir/private")"
for f in $(sources "$cli" | grep '\.c$'); do
    strip "$f" | grep -o '\bcr__[a-z0-9_]*[ ]*(' | sed 's/[ (]*$//'
done | sort -u | while read -r fn; do
    grep -q "^$fn " "$dir/defs" || echo "$fn"
done > "$dir/internal"
[ -s "$dir/internal" ] && fail "src/cli/ calls the library's internal functions: $(tr '\n' ' ' < "$dir/internal")"
am=$src/../Makefile.am
if [ -f "$am" ] &&
    sed -n '/^credisson_SOURCES/,/[^\\]$/p' "$am" | tr ' \t\\' '\n\n\n' |
        grep '^src/' | grep -v '^src/cli/'; then
    fail "credisson_SOURCES compiles files of the library in (above)"
fi

[ "$failures" -eq 0 ] && echo "PASS: layers" && exit 0
exit 1
