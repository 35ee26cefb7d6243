#!/bin/sh
# SPDX-License-Identifier: MIT
# Turns lua/*.lua into C: a header with one enum value and one typed
# argument struct per script, and a source with each script's body and SHA1
# and one call per script that puts its struct on the wire. Usage:
#   embed-lua.sh out.c out.h script1.lua script2.lua ...
#
# Each script opens with two lines that say what it takes, in order:
#   --! keys: lock channel latch
#   --! argv: message:int lease_ms:int owner publish latch_ms:int
# A name alone is a C string; name:int an int64_t sent in decimal; name:bin
# bytes with a length (cr__bytes); a last name ending in "..." takes any
# number of strings (an array, with lengths or not, and a count). Those
# lines are not sent to Redis (nor counted in the SHA1), so that what the
# server runs is the rest of the file byte for byte. The build fails when a
# script lacks them, names something twice, or uses KEYS[n] or ARGV[n] past
# what it declares. A third line may name shared parts that go before the
# script's own text, from lua/lib/<part>.lua (which use no KEYS or ARGV):
#   --! uses: line
set -eu
out_c=$1 out_h=$2
shift 2
tmp_c=$out_c.tmp tmp_h=$out_h.tmp
trap 'rm -f "$tmp_c" "$tmp_h" "$tmp_c.body"' EXIT

# Prints "name|upper|nkeys|nargs|fields" for one script, fields being
# "k:name:type" and "a:name:type" items separated by spaces (type str, int,
# bin, var); fails with a message on a malformed header.
describe() {
    awk -v file="$1" '
    function fail(msg) { printf "%s: %s\n", file, msg > "/dev/stderr"; bad = 1; exit 1 }
    function take(kind, list,    n, i, item, name, type, seen_var) {
        n = split(list, items, /[ \t]+/)
        count[kind] = 0
        for (i = 1; i <= n; i++) {
            item = items[i]
            if (item == "") continue
            if (seen_var) fail("only the last " kind " may take many (\"...\")")
            type = "str"; name = item
            if (item ~ /\.\.\.$/) { type = "var"; name = substr(item, 1, length(item) - 3); seen_var = 1 }
            else if (item ~ /:/) { name = substr(item, 1, index(item, ":") - 1); type = substr(item, index(item, ":") + 1) }
            if (name !~ /^[a-z_][a-z0-9_]*$/) fail("bad name \"" name "\"")
            if (type != "str" && type != "int" && type != "bin" && type != "var") fail("bad type \"" type "\"")
            if (name in used) fail("\"" name "\" named twice")
            used[name] = 1
            fields = fields " " substr(kind, 1, 1) ":" name ":" type
            count[kind]++
            if (type == "var") variadic[kind] = 1
        }
    }
    /^--! keys:/ { if (have_keys++) fail("two keys lines"); sub(/^--! keys:/, ""); take("keys", $0); next }
    /^--! argv:/ { if (have_argv++) fail("two argv lines"); sub(/^--! argv:/, ""); take("argv", $0); next }
    /^--! uses:/ { if (have_uses++) fail("two uses lines"); next }
    /^--!/ { fail("unknown header line: " $0) }
    {
        line = $0
        while (match(line, /(KEYS|ARGV)\[[0-9]+\]/)) {
            ref = substr(line, RSTART, RLENGTH)
            idx = substr(ref, 6, length(ref) - 6) + 0
            what = substr(ref, 1, 4) == "KEYS" ? "keys" : "argv"
            if (idx > most[what]) most[what] = idx
            line = substr(line, RSTART + RLENGTH)
        }
    }
    END {
        if (bad) exit 1
        if (!have_keys || !have_argv) fail("needs a \"--! keys:\" and a \"--! argv:\" line")
        if (!variadic["keys"] && most["keys"] > count["keys"])
            fail("uses KEYS[" most["keys"] "] but declares " count["keys"] " keys")
        if (!variadic["argv"] && most["argv"] > count["argv"])
            fail("uses ARGV[" most["argv"] "] but declares " count["argv"] " arguments")
        print count["keys"] "|" count["argv"] "|" fields
    }' "$1"
}

{
    echo "/* generated from the lua directory by build-aux/embed-lua.sh, do not edit */"
    echo "#ifndef CR_SCRIPTS_H"
    echo "#define CR_SCRIPTS_H"
    echo
    echo "#include \"script.h\""
    echo
    echo "/* One per lua/<name>.lua; the enum name is the file name in capitals. */"
    echo "typedef enum cr__script_id {"
    for f in "$@"; do
        echo "    CR__SCRIPT_$(basename "$f" .lua | tr 'a-z' 'A-Z'),"
    done
    echo "    CR__SCRIPT_COUNT"
    echo "} cr__script_id;"
    echo
    echo "extern const cr__script cr__scripts[CR__SCRIPT_COUNT];"
} > "$tmp_h"
{
    echo "/* generated from the lua directory by build-aux/embed-lua.sh, do not edit */"
    echo "#include \"config.h\""
    echo
    echo "#include <stdlib.h>"
    echo "#include <string.h>"
    echo
    echo "#include \"common.h\""
    echo "#include \"scripts.h\""
    echo
    echo "const cr__script cr__scripts[CR__SCRIPT_COUNT] = {"
} > "$tmp_c"

# What the server runs for script $1: its shared parts, then its own text
# without the header lines.
body() {
    for part in $(sed -n 's/^--! uses://p' "$1"); do
        lib=$(dirname "$1")/lib/$part.lua
        if [ ! -f "$lib" ]; then
            echo "$1: no shared part $lib" >&2
            return 1
        fi
        if grep -q 'KEYS\[\|ARGV\[' "$lib"; then
            echo "$lib: a shared part may not use KEYS or ARGV" >&2
            return 1
        fi
        cat "$lib"
    done
    grep -v '^--!' "$1"
}

for f in "$@"; do
    name=$(basename "$f" .lua)
    upper=$(echo "$name" | tr 'a-z' 'A-Z')
    desc=$(describe "$f")
    body "$f" > "$tmp_c.body"
    nkeys=${desc%%|*}; rest=${desc#*|}
    nargs=${rest%%|*}; fields=${rest#*|}
    sha=$(sha1sum < "$tmp_c.body" | cut -d' ' -f1)
    len=$(wc -c < "$tmp_c.body" | tr -d ' ')
    {
        echo "    [CR__SCRIPT_$upper] = {\"$name\", \"$sha\","
        # Each line becomes a C string literal: escape backslashes and quotes.
        sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/        "/' -e 's/$/\\n"/' \
            < "$tmp_c.body"
        echo "        , $len},"
    } >> "$tmp_c"

    # The argument struct, and the call that sends it.
    {
        echo
        echo "/* lua/$name.lua */"
        echo "typedef struct cr__${name}_args {"
        for fl in $fields; do
            n=${fl#*:}; t=${n#*:}; n=${n%%:*}
            case $t in
            str) echo "    const char *$n;" ;;
            int) echo "    int64_t $n;" ;;
            bin) echo "    cr__bytes $n;" ;;
            var) echo "    const char *const *$n; /* n_$n of them */"
                 echo "    const size_t *${n}_lens; /* NULL: C strings */"
                 echo "    size_t n_$n;" ;;
            esac
        done
        echo "} cr__${name}_args;"
        echo
        echo "cr_status cr__build_$name(const cr__${name}_args *a,"
        echo "    cr__script_call *call);"
        echo "cr_status cr__run_$name(const cr__op *op, cr__cmd *cmd,"
        echo "    const cr__${name}_args *a, cr__reply **out);"
    } >> "$tmp_h"
    gen_c=$tmp_c.$name
    fixed=0 ints=0 count=
    for fl in $fields; do
        t=${fl##*:}
        n=${fl#*:}; n=${n%%:*}
        if [ "$t" = var ]; then
            count="$count + a->n_$n"
        else
            fixed=$((fixed + 1))
        fi
        if [ "$t" = int ]; then ints=$((ints + 1)); fi
    done
    if [ "$ints" -gt 8 ] || [ "$fixed" -gt 24 ]; then
        echo "$f: more arguments than cr__script_call holds" >&2
        exit 1
    fi
    {
        echo
        echo "cr_status"
        echo "cr__build_$name(const cr__${name}_args *a, cr__script_call *call)"
        echo "{"
        if [ -n "$count" ]; then
            echo "    size_t i, j;"
        else
            echo "    size_t i;"
        fi
        echo
        echo "    if (!cr__script_call_init(call, &cr__scripts[CR__SCRIPT_$upper],"
        echo "                              CR__SCRIPT_ARGV0 + $fixed$count))"
        echo "        return CR_ENOMEM;"
        echo "    i = CR__SCRIPT_ARGV0;"
        k=0 keys_done=
        for fl in $fields; do
            kind=${fl%%:*}
            n=${fl#*:}; t=${n#*:}; n=${n%%:*}
            if [ "$kind" = a ] && [ -z "$keys_done" ]; then
                echo "    call->nkeys = i - CR__SCRIPT_ARGV0;"
                keys_done=1
            fi
            case $t in
            str) echo "    call->argv[i] = a->$n;"
                 echo "    call->lens[i++] = strlen(a->$n);" ;;
            int) echo "    call->argv[i] = call->ints[$k];"
                 echo "    call->lens[i++] = cr__fmt_i64(call->ints[$k], a->$n);"
                 k=$((k + 1)) ;;
            bin) echo "    call->argv[i] = a->$n.p;"
                 echo "    call->lens[i++] = a->$n.len;" ;;
            var) echo "    for (j = 0; j < a->n_$n; j++) {"
                 echo "        call->argv[i] = a->$n[j];"
                 echo "        call->lens[i++] = a->${n}_lens != NULL ? a->${n}_lens[j]"
                 echo "                                              : strlen(a->$n[j]);"
                 echo "    }" ;;
            esac
        done
        if [ -z "$keys_done" ]; then
            echo "    call->nkeys = i - CR__SCRIPT_ARGV0;"
        fi
        echo "    call->argc = i;"
        echo "    return CR_OK;"
        echo "}"
        echo
        echo "cr_status"
        echo "cr__run_$name(const cr__op *op, cr__cmd *cmd,"
        echo "    const cr__${name}_args *a, cr__reply **out)"
        echo "{"
        echo "    cr__script_call call;"
        echo "    cr_status rc = cr__build_$name(a, &call);"
        echo
        echo "    if (rc == CR_OK)"
        echo "        rc = cr__script_call_run(op, cmd, &call, out);"
        echo "    cr__script_call_free(&call);"
        echo "    return rc;"
        echo "}"
    } > "$gen_c"
done
echo "};" >> "$tmp_c"
for f in "$@"; do
    cat "$tmp_c.$(basename "$f" .lua)" >> "$tmp_c"
    rm -f "$tmp_c.$(basename "$f" .lua)"
done
echo >> "$tmp_h"
echo "#endif" >> "$tmp_h"
mv "$tmp_c" "$out_c"
mv "$tmp_h" "$out_h"
