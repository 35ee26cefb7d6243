#!/bin/bash
# SPDX-License-Identifier: MIT
# Redisson 3.13.2 (tests/java/redisson.sh build_own): TREE RECIPE OVERLAY.
exec "$(dirname "$0")/../prepare-common.sh" "$1" no-rx-factories no-rx-batch
