#!/bin/sh
# SPDX-License-Identifier: MIT
# Every function a section 3 page names in its NAME section, and every type
# and macro its '.\" Also:' lines name, gets a link of its own name to the
# page, so that "man cr_lock_lock" finds cr_lock_try_lock.3 and
# "man cr_status" finds cr_strerror.3.
# Usage:
#   man-aliases.sh install|uninstall MAN3DIR page.3 ...
# (MAN3DIR with DESTDIR in front; the pages as the source tree has them.)
set -eu
action=$1 dir=$2
shift 2
for page in "$@"; do
    base=$(basename "$page")
    # The lines from ".SH NAME" to the one with "\-", the names before it
    # (requests such as ".ad l" left out).
    names=$(sed -n '/^\.SH NAME/,/\\-/p' "$page" |
        sed '1d; /^\./d; s/\\-.*//' | tr ',' ' ')
    also=$(sed -n 's/^\.\\" Also://p' "$page")
    for name in $names $also; do
        [ "$name.3" = "$base" ] && continue
        rm -f "$dir/$name.3"
        if [ "$action" = install ]; then
            ln -s "$base" "$dir/$name.3"
        fi
    done
done
