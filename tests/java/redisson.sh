#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The real Java Redisson client, for the cross-implementation tests and the
# benchmark. It is built from Redisson's own sources by the recipe in the
# team's shared tree (CR_REDISSON_JAVA, default ../shared/redisson-java
# beside the source tree), never from a copy in this project, and kept in a
# cache keyed by the hash of the source tarball and of every script that
# builds it, so each release line is compiled once per machine.
#
#   tests/java/redisson.sh check          exit 0 when the client can be
#                                          built here; else say why, exit 77
#   tests/java/redisson.sh jar [LINE]     build LINE (default 4.7) when not
#                                          cached; print the jar's path
#   tests/java/redisson.sh classpath DIR [LINE]
#                                          compile the project's own Java
#                                          sources under DIR (a peer, a
#                                          benchmark driver) against LINE's
#                                          client when not cached; print the
#                                          class path that runs them
#   tests/java/redisson.sh lines          the release lines the recipe has
#
# Environment: CR_REDISSON_JAVA (the recipe), CR_REDISSON_CACHE (default
# $XDG_CACHE_HOME/credisson/redisson, else ~/.cache/credisson/redisson).
# Builds of one line by several test programs at once take turns (flock).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
recipe=${CR_REDISSON_JAVA:-$top/../shared/redisson-java}
cache=${CR_REDISSON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/credisson/redisson}

skip() {
    echo "redisson.sh: $*; the tests against the real Redisson client are skipped" >&2
    exit 77
}

# The checks a build needs, each saying what is missing.
check() {
    [ -d "$recipe" ] || skip "no Redisson recipe at $recipe (set CR_REDISSON_JAVA)"
    [ -x "$recipe/build.sh" ] || skip "$recipe/build.sh is missing"
    command -v javac >/dev/null 2>&1 || skip "no JDK (javac): install openjdk-17-jdk-headless"
    command -v java >/dev/null 2>&1 || skip "no java on PATH"
    for j in netty-buffer netty-handler jackson-databind byte-buddy \
        reactive-streams slf4j-api caffeine snakeyaml spring3-beans \
        protobuf objenesis slf4j-simple; do
        [ -f "/usr/share/java/$j.jar" ] ||
            skip "/usr/share/java/$j.jar is missing ($recipe/build.sh --apt names the packages)"
    done
}

# The tarball of a release line.
tarball() {
    local line=$1 f
    for f in "$recipe"/sources/redisson-"$line".tar.gz "$recipe"/sources/redisson-"$line"-*.tar.gz; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    echo "redisson.sh: no sources for Redisson $line in $recipe/sources" >&2
    return 1
}

# What a build depends on: the tarball, the recipe's scripts, stubs and
# driver, this project's own steps for the line, and the JDK.
build_key() {
    local tar=$1 line=$2
    {
        sha256sum "$tar"
        (cd "$recipe" && find build.sh patch-sources.sh driver stubs overrides -type f -print0 |
            sort -z | xargs -0 sha256sum)
        if [ -d "$here/lines/$line" ]; then
            (cd "$here/lines/$line" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
        fi
        sha256sum "$0"
        javac -version 2>&1
    } | sha256sum | cut -c1-16
}

jar() {
    local line=${1:-4.7} tar key dir tmp log
    check
    tar=$(tarball "$line") || exit 1
    key=$(build_key "$tar" "$line")
    dir=$cache/$line-$key
    mkdir -p "$cache"
    exec 9>"$cache/.lock-$line"
    flock 9
    if [ ! -f "$dir/redisson-driver.jar" ]; then
        tmp=$(mktemp -d "$cache/.build-$line.XXXXXX")
        log=$tmp/build.log
        echo "redisson.sh: building Redisson $line (cached in $dir)" >&2
        if ! build_line "$line" "$tar" "$tmp" >"$log" 2>&1; then
            tail -n 30 "$log" >&2
            rm -rf "$tmp"
            echo "redisson.sh: Redisson $line did not build" >&2
            exit 1
        fi
        rm -rf "$dir"
        mv "$tmp" "$dir"
        # Older builds of this line are of no use any more.
        find "$cache" -maxdepth 1 -name "$line-*" ! -name "$line-$key" -exec rm -rf {} +
    fi
    flock -u 9
    echo "$dir/redisson-driver.jar"
}

# Builds one line into $3. A line that needs more than the shared recipe
# gives it in lines/LINE/prepare.sh, which gets the unpacked tree and
# returns with it ready for build.sh --src.
build_line() {
    local line=$1 tar=$2 out=$3
    if [ -x "$here/lines/$line/prepare.sh" ]; then
        mkdir -p "$out/tree"
        tar -xzf "$tar" -C "$out/tree" --strip-components=1
        "$here/lines/$line/prepare.sh" "$out/tree" "$recipe"
        "$recipe/build.sh" --src "$out/tree" --out "$out"
    else
        "$recipe/build.sh" --tar "$tar" --out "$out"
    fi
    rm -rf "$out/src" "$out/patched" "$out/tree"
}

# Compiles the .java files under $1 against line $2's client, once per
# content of those files and that jar.
classpath() {
    local src=$1 line=${2:-4.7} j key dir tmp
    [ -d "$src" ] || { echo "redisson.sh: no directory $src" >&2; exit 2; }
    src=$(cd "$src" && pwd)
    j=$(jar "$line")
    key=$({
        echo "$j"
        (cd "$src" && find . -name '*.java' -print0 | sort -z | xargs -0 sha256sum)
    } | sha256sum | cut -c1-16)
    dir=$cache/classes-$(basename "$src")-$line-$key
    exec 8>"$cache/.lock-classes"
    flock 8
    if [ ! -d "$dir" ]; then
        tmp=$(mktemp -d "$cache/.classes.XXXXXX")
        if ! find "$src" -name '*.java' -print0 |
            xargs -0 javac -nowarn -encoding UTF-8 -cp "$j" -d "$tmp" >"$tmp.log" 2>&1; then
            cat "$tmp.log" >&2
            rm -rf "$tmp" "$tmp.log"
            echo "redisson.sh: $src does not compile against Redisson $line" >&2
            exit 1
        fi
        rm -f "$tmp.log"
        find "$cache" -maxdepth 1 -name "classes-$(basename "$src")-$line-*" -exec rm -rf {} +
        mv "$tmp" "$dir"
    fi
    flock -u 8
    echo "$dir:$j"
}

case "${1:-}" in
check) check ;;
jar) shift; jar "$@" ;;
classpath) shift; classpath "$@" ;;
lines) check; ls "$recipe/sources" | sed -n 's/^redisson-\([0-9][0-9.]*\).*\.tar\.gz$/\1/p' ;;
*) sed -n '3,25p' "$0" >&2; exit 2 ;;
esac
