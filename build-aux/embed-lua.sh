#!/bin/sh
# SPDX-License-Identifier: MIT
# Turns lua/*.lua into a C source holding each script's body and SHA1, so the
# library can run scripts by EVALSHA and fall back to EVAL. Usage:
#   embed-lua.sh out.c script1.lua script2.lua ...
# The table is indexed by designated initialisers named after each file
# (CR__SCRIPT_<NAME IN CAPITALS>), so the order of the files does not matter;
# an enum value without a file is caught when a client is created.
set -eu
out=$1; shift
tmp=$out.tmp
{
    echo "/* generated from the lua directory by build-aux/embed-lua.sh, do not edit */"
    echo "#include \"scripts.h\""
    echo
    echo "const cr__script cr__scripts[CR__SCRIPT_COUNT] = {"
    for f in "$@"; do
        name=$(basename "$f" .lua)
        sha=$(sha1sum < "$f" | cut -d' ' -f1)
        upper=$(echo "$name" | tr 'a-z' 'A-Z')
        echo "    [CR__SCRIPT_$upper] = {\"$name\", \"$sha\","
        # Each line becomes a C string literal: escape backslashes and quotes.
        sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/        "/' -e 's/$/\\n"/' "$f"
        printf '        , %s},\n' "$(wc -c < "$f" | tr -d ' ')"
    done
    echo "};"
} > "$tmp"
mv "$tmp" "$out"
