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
# The newest line (4.7) is built by the recipe's build.sh, the shared
# driver included. An older line whose own directory lines/LINE holds a
# file `own-build` is built here instead (build_own below): the recipe's
# driver does not compile against it, so the jar holds the client alone
# (redisson-client.jar, no Main-Class), reached from the classes in ROOTS,
# and the project's peer (`classpath`) is what runs it. Its prepare.sh and
# the project's compile-only stubs (lines/stubs, lines/LINE/stubs) are what
# it needs beyond the recipe; tests/java/README says which lines build and
# why the others do not.
#
# Environment: CR_REDISSON_JAVA (the recipe), CR_REDISSON_CACHE (default
# $XDG_CACHE_HOME/credisson/redisson, else ~/.cache/credisson/redisson).
# Builds of one line by several test programs at once take turns (flock).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
recipe=${CR_REDISSON_JAVA:-$top/../shared/redisson-java}
cache=${CR_REDISSON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/credisson/redisson}

# Debian's jars the client is compiled against and runs with
# (/usr/share/java; the packages are those build.sh --apt installs).
DEB_JARS="netty-buffer netty-codec netty-common netty-handler netty-resolver
netty-resolver-dns netty-codec-dns netty-transport
netty-transport-native-epoll netty-transport-native-kqueue
netty-transport-native-unix-common jackson-databind jackson-core
jackson-annotations byte-buddy reactive-streams slf4j-api caffeine snakeyaml
spring3-beans spring3-core protobuf objenesis"
DEB_RUNTIME_JARS="slf4j-simple"
# Where an own build starts: everything else it compiles is reached from
# these (the peer's imports included).
ROOTS="org/redisson/Redisson.java org/redisson/client/codec/StringCodec.java
org/redisson/client/codec/LongCodec.java"

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
    for j in $DEB_JARS $DEB_RUNTIME_JARS; do
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
        sha256sum <"$tar"
        (cd "$recipe" && find build.sh patch-sources.sh driver stubs overrides -type f -print0 |
            sort -z | xargs -0 sha256sum)
        if [ -d "$here/lines/$line" ]; then
            (cd "$here/lines/$line" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
            if [ -f "$here/lines/$line/own-build" ]; then
                (cd "$here/lines" && find prepare-common.sh stubs* -type f -print0 |
                    sort -z | xargs -0 sha256sum)
            fi
        fi
        sha256sum <"$0"
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
    if [ -z "$(built_jar "$dir")" ]; then
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
    fi
    # Builds of this line unused for a week go. Other checkouts (another
    # branch's scripts, another key) may still use a newer one: a build is
    # never removed because it is not this one.
    touch "$dir"
    find "$cache" -maxdepth 1 -name "$line-*" ! -name "$line-$key" -mtime +7 \
        -exec rm -rf {} +
    flock -u 9
    built_jar "$dir"
}

# The jar a finished build in $1 left, or nothing.
built_jar() {
    local f
    for f in "$1/redisson-driver.jar" "$1/redisson-client.jar"; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    return 0
}

# Builds one line into $3; fails when any step does (its caller tests it
# in an `if`, where set -e does not act). A line that needs more than the
# shared recipe gives it in lines/LINE/prepare.sh, which gets the unpacked
# tree and returns with it ready for build.sh --src; a line with
# lines/LINE/own-build is built by build_own.
build_line() {
    local line=$1 tar=$2 out=$3 rc=0
    if [ -f "$here/lines/$line/own-build" ]; then
        build_own "$line" "$tar" "$out" || rc=1
    elif [ -x "$here/lines/$line/prepare.sh" ]; then
        { mkdir -p "$out/tree" &&
            tar -xzf "$tar" -C "$out/tree" --strip-components=1 &&
            "$here/lines/$line/prepare.sh" "$out/tree" "$recipe" &&
            "$recipe/build.sh" --src "$out/tree" --out "$out"; } || rc=1
    else
        "$recipe/build.sh" --tar "$tar" --out "$out" || rc=1
    fi
    rm -rf "$out/src" "$out/patched" "$out/tree"
    [ -n "$(built_jar "$out")" ] || rc=1
    return $rc
}

# Builds line $1 from $2 into $3 without the recipe's driver: the tree
# unpacked, lines/LINE/prepare.sh run on it (with the recipe's directory
# and the overlay directory of patched copies), the recipe's patch step in
# its lenient mode (a patch that does not apply to this line leaves the
# file as prepare.sh made it), then javac from ROOTS over the project's
# stubs, the recipe's overrides, the overlay, the recipe's stubs and the
# tree, in that order.
build_own() {
    local line=$1 tar=$2 out=$3 src cp="" j roots="" r stubs
    mkdir -p "$out/tree" "$out/patched" "$out/classes"
    tar -xzf "$tar" -C "$out/tree" --strip-components=1
    src=$out/tree/redisson/src/main/java
    if [ -x "$here/lines/$line/prepare.sh" ]; then
        "$here/lines/$line/prepare.sh" "$out/tree" "$recipe" "$out/patched" ||
            return 1
    fi
    REDISSON_PATCHES_LENIENT=1 "$recipe/patch-sources.sh" "$src" "$out/patched" ||
        return 1
    for j in $DEB_JARS; do cp="$cp${cp:+:}/usr/share/java/$j.jar"; done
    # A root is compiled from the file named, so take the patched copy
    # where there is one.
    for r in $ROOTS; do
        if [ -f "$out/patched/$r" ]; then roots="$roots $out/patched/$r"
        else roots="$roots $src/$r"; fi
    done
    # own-build names the extra stub sets (directories under lines/) the
    # line needs before lines/stubs, one per line.
    stubs=$here/lines/stubs
    while read -r r; do
        [ -n "$r" ] && stubs="$here/lines/$r:$stubs"
    done <"$here/lines/$line/own-build"
    # shellcheck disable=SC2086
    if ! javac -J-Xmx1500m -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC -nowarn -proc:none -encoding UTF-8 -g -Xmaxerrs 500 \
        -d "$out/classes" -cp "$cp" -implicit:class \
        -sourcepath "$stubs:$recipe/overrides:$out/patched:$recipe/stubs:$src" \
        $roots; then
        echo "redisson.sh: javac failed for Redisson $line" >&2
        return 1
    fi
    {
        printf 'Class-Path:'
        for j in $DEB_JARS $DEB_RUNTIME_JARS; do
            printf ' \n file:/usr/share/java/%s.jar' "$j"
        done
        echo
    } >"$out/MANIFEST.MF"
    command jar --create --file "$out/redisson-client.jar" --manifest "$out/MANIFEST.MF" \
        -C "$out/classes" . || return 1
    rm -rf "$out/classes"
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
        mv "$tmp" "$dir"
    fi
    touch "$dir"
    find "$cache" -maxdepth 1 -name "classes-$(basename "$src")-$line-*" \
        ! -name "$(basename "$dir")" -mtime +7 -exec rm -rf {} +
    flock -u 8
    echo "$dir:$j"
}

case "${1:-}" in
check) check ;;
jar) shift; jar "$@" ;;
classpath) shift; classpath "$@" ;;
lines) check; ls "$recipe/sources" | sed -n 's/^redisson-\([0-9][0-9.]*\).*\.tar\.gz$/\1/p' ;;
*) sed -n '3,35p' "$0" >&2; exit 2 ;;
esac
