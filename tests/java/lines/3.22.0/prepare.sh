#!/bin/bash
# SPDX-License-Identifier: MIT
# Redisson 3.22.0 (tests/java/redisson.sh build_own): TREE RECIPE OVERLAY.
exec "$(dirname "$0")/../prepare-common.sh" "$1" no-rx-factories no-rx-batch
