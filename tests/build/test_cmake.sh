#!/bin/bash
# SPDX-License-Identifier: MIT
# find_package(credisson) on an installed tree: the library, headers and
# package files are installed with DESTDIR into a scratch directory (so
# every path inside differs from the one configure chose), and the project
# of tests/cmake is configured, built and run against them: with the shared
# library, with the static one (whose private libraries the package must
# bring), after the tree was moved elsewhere, and with version requests the
# version file must accept or refuse. The pkg-config file must name the
# same version.

. "${CR_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/cli/lib.sh"

if ! command -v cmake >/dev/null; then
    echo "SKIP: no cmake"
    exit 77
fi

ROOT="$SCRATCH/root"
PREFIX=$(sed -n 's/^prefix=//p' "$CR_TEST_BUILDDIR/credisson.pc")
LIBDIR=$(sed -n 's/^libdir=//p' "$CR_TEST_BUILDDIR/credisson.pc")
LIBDIR=${LIBDIR/\$\{exec_prefix\}/$PREFIX}
VERSION=$(cat "$CR_TEST_SRCDIR/VERSION")

# Only the parts a program builds against (no tool, no pages), as built:
# the library is never rebuilt here (-o), since other tests run it.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$CR_TEST_BUILDDIR" \
    -o libcredisson.la -o libcredisson_core.la \
    DESTDIR="$ROOT" install-libLTLIBRARIES install-includeHEADERS \
    install-credissonincludeHEADERS install-nodist_credissonincludeHEADERS \
    install-pkgconfigDATA install-cmakeDATA >"$SCRATCH/install.log" 2>&1 || {
    cat "$SCRATCH/install.log"
    echo "install into $ROOT failed" >&2
    exit 1
}

# build DIR PREFIX_PATH [CMAKE ARGS...]: configures and builds the consumer
# in DIR; its output is in DIR.log.
build() {
    local dir=$1 prefix_path=$2
    shift 2
    cmake -S "$CR_TEST_SRCDIR/tests/cmake" -B "$dir" \
        -DCMAKE_PREFIX_PATH="$prefix_path" "$@" >"$dir.log" 2>&1 &&
        cmake --build "$dir" >>"$dir.log" 2>&1
}

# needed FILE: the shared libraries FILE names (DT_NEEDED), one a line.
needed() {
    LC_ALL=C readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

test_shared_library_through_find_package() {
    build b "$ROOT$PREFIX" || fail "build: $(cat b.log)"
    expect_contains "$(needed b/consumer)" libcredisson.so.1 "NEEDED"
    out=$(LD_LIBRARY_PATH="$ROOT$LIBDIR" ./b/consumer) || fail "run: $out"
    expect_contains "$out" "credisson $VERSION" "consumer output"
}

test_static_library_brings_its_private_libraries() {
    [ -e "$ROOT$LIBDIR/libcredisson.a" ] || {
        echo "    (no static library: configured with --disable-static)"
        return 0
    }
    build b "$ROOT$PREFIX" -DCREDISSON_USE_STATIC_LIBS=ON ||
        fail "build: $(cat b.log)"
    expect_not_contains "$(needed b/consumer)" libcredisson "NEEDED"
    expect_contains "$(needed b/consumer)" libssl "NEEDED"
    out=$(./b/consumer) || fail "run: $out"
    expect_contains "$out" "credisson $VERSION" "consumer output"
}

test_moved_tree_is_found_where_it_is() {
    cp -a "$ROOT" moved || fail "copy"
    build b "$PWD/moved$PREFIX" || fail "build: $(cat b.log)"
    grep -q -- "-I$PWD/moved$PREFIX/include\|isystem $PWD/moved$PREFIX/include" \
        b/CMakeFiles/consumer.dir/flags.make ||
        fail "include path: $(cat b/CMakeFiles/consumer.dir/flags.make)"
    out=$(LD_LIBRARY_PATH="$PWD/moved$LIBDIR" ./b/consumer) || fail "run: $out"
    expect_contains "$out" "credisson $VERSION" "consumer output"
}

test_version_file_accepts_and_refuses() {
    local major=${VERSION%%.*} rest=${VERSION#*.} minor
    minor=${rest%%.*}
    build ok "$ROOT$PREFIX" -DCR_TEST_REQUEST="$major.$minor" ||
        fail "$major.$minor refused: $(cat ok.log)"
    build exact "$ROOT$PREFIX" -DCR_TEST_REQUEST="$VERSION" ||
        fail "$VERSION refused: $(cat exact.log)"
    ! build newer "$ROOT$PREFIX" -DCR_TEST_REQUEST="$major.$minor.999" ||
        fail "$major.$minor.999 accepted"
    ! build major "$ROOT$PREFIX" -DCR_TEST_REQUEST="$((major + 1)).0" ||
        fail "$((major + 1)).0 accepted"
    if [ "$major" = 0 ] && [ "$minor" -gt 0 ]; then
        ! build minor "$ROOT$PREFIX" -DCR_TEST_REQUEST="0.$((minor - 1))" ||
            fail "0.$((minor - 1)) accepted by $VERSION"
    fi
}

test_pkg_config_file_agrees() {
    local pc="$ROOT$LIBDIR/pkgconfig"
    command -v pkg-config >/dev/null || {
        echo "    (no pkg-config)"
        return 0
    }
    expect_eq "$(PKG_CONFIG_PATH="$pc" pkg-config --modversion credisson)" \
        "$VERSION" "pkg-config version"
    expect_contains "$(PKG_CONFIG_PATH="$pc" pkg-config --static --libs \
        credisson)" "-lssl" "static libs"
}

run_test test_shared_library_through_find_package
run_test test_static_library_brings_its_private_libraries
run_test test_moved_tree_is_found_where_it_is
run_test test_version_file_accepts_and_refuses
run_test test_pkg_config_file_agrees
finish
