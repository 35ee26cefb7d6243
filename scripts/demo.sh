#!/bin/bash
# SPDX-License-Identifier: MIT
# Sets everything up and runs the demo: worker processes sharing a counter
# under one RLock, then a long hold kept alive by the watchdog. Uses
# $CREDISSON_URL when set, otherwise a private redis-server on a free
# loopback port that is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

url=${CREDISSON_URL:-}
if [ -z "$url" ]; then
    dir=$(mktemp -d)
    trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
    for _ in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 30000))
        (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$dir" --logfile "$dir/redis.log" &
        pid=$!
        for _ in $(seq 50); do
            redis-cli -p "$port" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        kill "$pid" 2>/dev/null || true
    done
    url="redis://127.0.0.1:$port"
    echo "private redis-server at $url"
fi
./examples/counter_demo "$url" 4 100
