#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes the CMake package files from their templates, at make time (when
# the installation directories are known in full).
# Usage:
#   cmake-config.sh IN OUT PREFIX LIBDIR INCLUDEDIR [NAME=VALUE ...]
# replaces @NAME@ by VALUE for each pair, and @CMAKE_UP@, @CMAKE_LIBDIR@,
# @CMAKE_INCLUDEDIR@ by paths that start from the installed file's own
# directory, $(libdir)/cmake/credisson: up to the prefix, then down. When
# the library or the headers are not under the prefix, the paths are
# absolute (that tree is then found only where it was installed).
set -eu
in=$1 out=$2 prefix=${3%/} libdir=${4%/} includedir=${5%/}
shift 5

up= lib=$libdir inc=$includedir
case $libdir in
"$prefix"/*)
    rel=${libdir#"$prefix"/}
    up=..
    # One step up per directory between the prefix and the file's own.
    for _ in $(echo "$rel/cmake" | tr '/' ' '); do
        up=$up/..
    done
    lib="\${_credisson_prefix}/$rel"
    case $includedir in
    "$prefix"/*) inc="\${_credisson_prefix}/${includedir#"$prefix"/}" ;;
    esac
    ;;
esac
[ -n "$up" ] || up=.

escape() { printf '%s' "$1" | sed 's/[\\&|]/\\&/g'; }
script="s|@CMAKE_UP@|$(escape "$up")|g
s|@CMAKE_LIBDIR@|$(escape "$lib")|g
s|@CMAKE_INCLUDEDIR@|$(escape "$inc")|g"
for pair in "$@"; do
    script="$script
s|@${pair%%=*}@|$(escape "${pair#*=}")|g"
done
sed "$script" "$in" >"$out.tmp"
if grep -n '@[A-Z_]*@' "$out.tmp" >&2; then
    echo "$0: $out: a placeholder is left" >&2
    rm -f "$out.tmp"
    exit 1
fi
mv "$out.tmp" "$out"
