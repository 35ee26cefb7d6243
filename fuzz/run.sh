#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,
# undefined) straight from the library sources, and runs each for a bounded
# time on its seed corpus under fuzz/corpus/<target>/. Usage:
#   fuzz/run.sh [SECONDS_PER_TARGET]     (default 20)
# Exits 1 when a target crashes or reports (the input is kept and its path
# printed), 0 otherwise; exits 0 with a message when clang or its fuzzer
# runtime (Debian: libclang-rt-14-dev) is missing. New inputs found go to a
# scratch directory, never into the committed corpus.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
seconds=${1:-20}
case $seconds in
    ''|*[!0-9]*) echo "usage: fuzz/run.sh [SECONDS_PER_TARGET]" >&2; exit 2 ;;
esac

cc=${CLANG:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz: $cc not found; skipping the fuzzers"
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/credisson-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' \
    > "$work/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$work/probe.c" \
        -o "$work/probe" >/dev/null 2>&1; then
    echo "fuzz: $cc cannot link -fsanitize=fuzzer (install libclang-rt-14-dev); skipping"
    exit 0
fi

# What configure would generate: config.h, version.h and the scripts.
mkdir -p "$work/gen/credisson" "$work/obj"
echo '#define _GNU_SOURCE 1' > "$work/gen/config.h"
version=$(cat VERSION)
IFS=. read -r major minor patch <<< "$version"
sed -e "s/@PACKAGE_VERSION@/$version/" -e "s/@CR_VERSION_MAJOR@/$major/" \
    -e "s/@CR_VERSION_MINOR@/$minor/" -e "s/@CR_VERSION_PATCH@/$patch/" \
    include/credisson/version.h.in > "$work/gen/credisson/version.h"
# In the order of Makefile.am's lua_files, as an in-place build's own
# src/scripts.h (which src/*.c would find first) has it.
sh build-aux/embed-lua.sh "$work/gen/scripts.c" "$work/gen/scripts.h" \
    $(sed -n '/^lua_files = /,/^$/p' Makefile.am | grep -o 'lua/[a-z_]*\.lua')

ssl_libs=$(pkg-config --libs openssl 2>/dev/null || echo -lssl -lcrypto)
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="-g -O1 -fno-omit-frame-pointer $san -I$work/gen -Iinclude -Isrc -Isrc/cli"

# The library once, instrumented for coverage, for the targets that need
# more than one module.
lib_objs=()
for src in src/*.c "$work/gen/scripts.c"; do
    # An in-place build leaves its own generated src/scripts.c: use ours.
    [ "$src" = src/scripts.c ] && continue
    obj="$work/obj/$(basename "$src" .c).o"
    if ! "$cc" $cflags -fsanitize=fuzzer-no-link -c "$src" -o "$obj"; then
        echo "fuzz: cannot compile $src" >&2
        exit 1
    fi
    lib_objs+=("$obj")
done

# build TARGET SOURCES...: link a fuzzer.
build() {
    local target=$1; shift
    "$cc" $cflags -fsanitize=fuzzer "fuzz/$target.c" "$@" $ssl_libs \
        -lpthread -o "$work/$target"
}

targets=(fuzz_url fuzz_reply)
build fuzz_url "$work/obj/url.o" || exit 1
build fuzz_reply "${lib_objs[@]}" || exit 1
if [ -f src/cli/args.c ]; then
    "$cc" $cflags -fsanitize=fuzzer-no-link -c src/cli/args.c \
        -o "$work/obj/cli_args.o" || exit 1
    "$cc" $cflags -fsanitize=fuzzer-no-link -c src/cli/values.c \
        -o "$work/obj/cli_values.o" || exit 1
    build fuzz_cli_args "$work/obj/cli_args.o" "$work/obj/cli_values.o" ||
        exit 1
    targets+=(fuzz_cli_args)
fi

status=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in "${targets[@]}"; do
    mkdir -p "$work/corpus-$t" "$work/crashes-$t"
    echo "== fuzz $t for ${seconds}s"
    if "$work/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
            -max_len=4096 -print_final_stats=1 \
            -artifact_prefix="$work/crashes-$t/" \
            "$work/corpus-$t" "fuzz/corpus/$t" > "$work/$t.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^Done' "$work/$t.log" | tail -n 2
    else
        status=1
        tail -n 60 "$work/$t.log"
        keep="$top/fuzz-crashes"
        mkdir -p "$keep"
        cp "$work/crashes-$t/"* "$keep/" 2>/dev/null
        echo "fuzz: $t failed; the input is kept in $keep/"
    fi
done
exit $status
