#!/bin/bash
# SPDX-License-Identifier: MIT
# examples/metrics against a private redis-server: its output is valid
# Prometheus text (tests/build/check_prometheus.py), its object names are
# folded into bounded labels (order:12340..order:12344 are one series),
# and it counts what its run did: five lock waits and holds, a semaphore
# try that was busy, a latch await.

. "${CR_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/cli/lib.sh"

METRICS="$CR_TEST_BUILDDIR/examples/metrics"
CHECK="$CR_TEST_SRCDIR/tests/build/check_prometheus.py"

command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
[ -x "$METRICS" ] || { echo "$METRICS not built" >&2; exit 1; }

test_metrics_prints_valid_prometheus_text_with_the_run_counted() {
    local L='object="lock",name="order"'
    local S='object="semaphore",name="pool"'
    "$METRICS" --url "$CREDISSON_URL" >out 2>err || fail "metrics: $(cat err)"
    python3 "$CHECK" \
        "credisson_wait_seconds_count{$L}=5" \
        "credisson_hold_seconds_count{$L}=5" \
        "credisson_busy_total{$S}=1" \
        "credisson_busy_total{$L}=0" \
        'credisson_wait_seconds_count{object="latch",name="deploy"}=1' \
        "credisson_leases_lost_total{$L}=0" \
        "credisson_reconnects_total=0" <out || fail "$(cat out)"
    ! grep -q 'name="order:' out || fail "a raw name became a label"
}

test_check_refuses_text_that_is_not_prometheus() {
    printf 'credisson_x_total 1\n' | python3 "$CHECK" >/dev/null &&
        fail "a sample without TYPE passed"
    printf '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n' |
        python3 "$CHECK" >/dev/null && fail "non-cumulative buckets passed"
    return 0
}

redis_up
run_test test_metrics_prints_valid_prometheus_text_with_the_run_counted
run_test test_check_refuses_text_that_is_not_prometheus
finish
