#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The patch steps the older release lines share, run by their prepare.sh
# (tests/java/redisson.sh build_own) on the unpacked tree before the
# recipe's own patch step:
#   prepare-common.sh TREE STEP...
# Each step edits files of TREE/redisson/src/main/java in place and fails
# when its edit does not apply, so a line's steps never rot silently.
#   no-rx-factories  Redisson.java's factories of the RxJava and Reactor
#                    clients (createRx, createReactive, rxJava(),
#                    reactive()) throw: Debian has neither library, and the
#                    synchronizers never reach them.
#   no-rx-batch      every class outside the rx and reactive packages that
#                    tells a batch by `instanceof` against the RxJava or
#                    Reactor batch executors (RedissonMap, RedissonKeys...)
#                    asks only about the plain one: those executors are
#                    never made without the clients above.
set -euo pipefail
src=$1/redisson/src/main/java
shift
msg='"credisson test build: the RxJava and Reactor clients are not compiled"'

for step in "$@"; do
    case $step in
    no-rx-factories)
        f=$src/org/redisson/Redisson.java
        # The body of every method that makes one, up to the method's end
        # (a closing brace indented by four), becomes a throw.
        perl -0pi -e "s/(Redisson(?:Rx|Reactive)Client \w+\([^)]*\)\s*\{)(?:(?!\n    \}).)*?new Redisson(?:Rx|Reactive)\(.*?\n    \}/\$1\n        throw new UnsupportedOperationException($msg);\n    }/gs" "$f"
        if grep -q 'new Redisson\(Rx\|Reactive\)(' "$f" ||
            ! grep -q 'credisson test build' "$f"; then
            echo "prepare-common.sh: $step does not apply to $f" >&2
            exit 1
        fi
        ;;
    no-rx-batch)
        n=0
        while IFS= read -r -d '' f; do
            perl -0pi -e 's/^import org\.redisson\.(reactive\.CommandReactive|rx\.CommandRx)BatchService;\n//mg; s/\s*\|\|\s*commandExecutor instanceof Command(Reactive|Rx)BatchService//g' "$f"
            if grep -q 'Command\(Reactive\|Rx\)BatchService' "$f"; then
                echo "prepare-common.sh: $step does not apply to $f" >&2
                exit 1
            fi
            n=$((n + 1))
        done < <(grep -rlZ --include='*.java' \
            -e 'instanceof CommandReactiveBatchService' \
            -e 'instanceof CommandRxBatchService' "$src/org/redisson" |
            grep -zv '/org/redisson/\(rx\|reactive\)/')
        [ "$n" -gt 0 ] || {
            echo "prepare-common.sh: $step found nothing to edit" >&2
            exit 1
        }
        ;;
    *)
        echo "prepare-common.sh: no step $step" >&2
        exit 2
        ;;
    esac
done
