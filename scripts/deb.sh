#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages (libcredisson1, libcredisson-dev, credisson)
# from a clean copy of the tree, so that neither a configured tree nor
# build products get in, and the tree itself is left as it was; then runs
# lintian on them, which must report no error.
#   scripts/deb.sh [OUTDIR]    (default: $TMPDIR/credisson-deb)
# The suite is not run again (DEB_BUILD_OPTIONS=nocheck unless set).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${TMPDIR:-/tmp}/credisson-deb}
version=$(cat VERSION)

# The changelog's version is the package's.
deb_version=$(dpkg-parsechangelog -S Version)
if [ "$deb_version" != "$version" ]; then
    echo "debian/changelog says $deb_version, VERSION says $version" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/credisson-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src="$work/credisson-$version"
mkdir "$src"
# The files git knows or would add: not the ignored build products.
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
        [ -e "$f" ] && printf '%s\0' "$f"
    done | tar --null -T - -cf - | tar -xf - -C "$src"

(cd "$src" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-nocheck} \
    dpkg-buildpackage -us -uc -b)

mkdir -p "$out"
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
changes=$(ls "$out"/credisson_"$version"_*.changes)
echo "== lintian $changes"
lintian --fail-on error --info "$changes"
echo "packages in $out:"
ls "$out"/*.deb
