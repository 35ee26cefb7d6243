#!/bin/bash
# SPDX-License-Identifier: MIT
# The symbols libcredisson.so exports are exactly the functions the public
# headers declare CR_EXPORT, and src/credisson.map (the linker's version
# script) lists exactly those: a function added to a header but not to the
# map, or left in the map after leaving the headers, fails here, and so
# does any other symbol the library lets out. Every export must carry the
# map's version node.

. "${CR_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/cli/lib.sh"

LIB="$CR_TEST_BUILDDIR/.libs/libcredisson.so"
MAP="$CR_TEST_SRCDIR/src/credisson.map"

if [ ! -e "$LIB" ]; then
    echo "SKIP: no shared libcredisson (configured with --disable-shared?)"
    exit 77
fi
if ! command -v nm >/dev/null; then
    echo "SKIP: no nm"
    exit 77
fi

# The names declared CR_EXPORT in the public headers, one a line, sorted:
# a declaration may run over lines; the name is the last identifier
# before its first "(".
header_symbols() {
    awk '
        /^[ \t]*CR_EXPORT[ \t]/ { decl = ""; in_decl = 1 }
        in_decl {
            decl = decl " " $0
            if (index(decl, "(") > 0) {
                decl = substr(decl, 1, index(decl, "(") - 1)
                sub(/[ \t]+$/, "", decl)
                n = split(decl, w, /[^A-Za-z0-9_]+/)
                print w[n]
                in_decl = 0
            }
        }' "$CR_TEST_SRCDIR"/include/credisson/*.h "$CR_TEST_SRCDIR"/include/*.h |
        sort
}

# The map without comments, one token a line.
map_tokens() {
    awk '
        { text = text $0 "\n" }
        END {
            while ((i = index(text, "/*")) > 0) {
                rest = substr(text, i + 2)
                j = index(rest, "*/")
                if (j == 0) { print "unterminated comment" > "/dev/stderr"; exit 1 }
                text = substr(text, 1, i - 1) " " substr(rest, j + 2)
            }
            gsub(/#[^\n]*/, "", text)
            gsub(/[{};]/, " & ", text)
            n = split(text, t, /[ \t\n]+/)
            for (k = 1; k <= n; k++) if (t[k] != "") print t[k]
        }' "$MAP"
}

# The names listed in the map's global: sections, sorted.
map_symbols() {
    map_tokens | awk '
        $0 == "global:" { global = 1; next }
        $0 == "local:" || $0 == "}" { global = 0; next }
        global && $0 != ";" { print }' | sort
}

# The map's version nodes (a name followed by "{").
map_nodes() {
    map_tokens | awk 'prev != "" && $0 == "{" { print prev } { prev = $0 }' |
        sort
}

# What the library exports: defined dynamic symbols, version nodes (type
# A) aside, as NAME or NAME@@NODE.
exported() {
    nm -D --defined-only "$LIB" | awk '$2 != "A" { print $3 }' | sort
}

test_headers_declare_functions() {
    local n
    n=$(header_symbols | grep -c '')
    [ "$n" -ge 50 ] || fail "only $n CR_EXPORT functions found in the headers"
    header_symbols | grep -v '^cr_[a-z0-9_]*$' | grep -q . &&
        fail "a CR_EXPORT name not of the form cr_*: $(header_symbols | grep -v '^cr_')"
    return 0
}

test_map_lists_exactly_the_exported_declarations() {
    local missing extra dup
    missing=$(comm -23 <(header_symbols) <(map_symbols))
    extra=$(comm -13 <(header_symbols) <(map_symbols))
    dup=$(map_symbols | uniq -d)
    expect_eq "$missing" "" "CR_EXPORT in a header, missing from $MAP"
    expect_eq "$extra" "" "in $MAP, not declared CR_EXPORT in any header"
    expect_eq "$dup" "" "listed twice in $MAP"
    map_tokens | grep -q '^local:$' || fail "the map has no local: section"
}

test_library_exports_exactly_the_map() {
    local names missing extra
    names=$(exported | sed 's/@.*//' | sort)
    missing=$(comm -23 <(map_symbols) <(printf '%s\n' "$names"))
    extra=$(comm -13 <(map_symbols) <(printf '%s\n' "$names"))
    expect_eq "$missing" "" "in the map, not exported by $LIB"
    expect_eq "$extra" "" "exported by $LIB, not in the map"
}

test_exports_carry_the_version_node() {
    local nodes sym node bad=""
    nodes=$(map_nodes)
    expect_eq "$(printf '%s\n' "$nodes" | grep -c '')" 1 "version nodes"
    if ! exported | grep -q '@@'; then
        # Linked without the version script (a linker that takes none):
        # visibility alone made the list above.
        echo "    (library not versioned: linker without --version-script)"
        return 0
    fi
    while read -r sym; do
        node=${sym#*@@}
        [ "$node" != "$sym" ] && printf '%s\n' "$nodes" | grep -qx "$node" ||
            bad="$bad $sym"
    done < <(exported)
    expect_eq "$bad" "" "exports without a version node of the map"
}

# The Debian symbols file of libcredisson1 lists exactly the map's
# functions, each under the map's node, and the node itself.
test_debian_symbols_file_lists_the_map() {
    local file="$CR_TEST_SRCDIR/debian/libcredisson1.symbols" node listed
    [ -f "$file" ] || fail "no $file"
    node=$(map_nodes)
    listed=$(sed -n 's/^ \([^ ]*\) .*/\1/p' "$file" | sort)
    expect_eq "$listed" "$( (echo "$node@$node"; map_symbols |
        sed "s/\$/@$node/") | sort)" "symbols in $file"
    expect_eq "$(head -n 1 "$file" | cut -d' ' -f1,2)" \
        "libcredisson.so.1 libcredisson1" "the symbols file's soname line"
}

run_test test_headers_declare_functions
run_test test_map_lists_exactly_the_exported_declarations
run_test test_library_exports_exactly_the_map
run_test test_exports_carry_the_version_node
run_test test_debian_symbols_file_lists_the_map
finish
