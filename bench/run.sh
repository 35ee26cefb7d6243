#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The benchmark driver behind `make bench` (doc/benchmarks.md). It starts a
# private redis-server on a free loopback port (or uses --url), measures the
# ceiling, runs every scenario for a bounded time with credisson and its
# peers side by side, and prints the table (bench/report.py) followed by one
# JSON line per scenario and per target. The default run takes about four
# to five minutes; --quick about one.
#
#   bench/run.sh [--builddir DIR] [--url URL] [--seconds S] [--quick]
#                [--only ceiling,s1,s2,s4,s5,s6,s7,s8,s9,s10,s11] [--workers 2,8,32]
#                [--latch-workers 16,64]
#                [--no-peers] [--pin] [--out FILE]
#
#   --builddir  where bench/ceiling, bench/bench_lock... were built (default:
#               the current directory)
#   --url       an existing server (redis://host:port, no password); keys
#               bench:* and the lock keys of the scenarios are written there
#   --seconds   length of each timed run (default 3; --quick: 1)
#   --workers   K of scenario 2 (workers on one lock)
#   --latch-workers  K of scenario 6 (waiters on one latch; the issue's
#               N = 16 and 64), and the parties of scenario 11 (barrier)
#   --no-peers  skip python3-redis and redlock (nothing is installed)
#   --pin       pin redis-server to the last CPU and every client to the
#               others (less noise from migrations on small machines)
#   --out       keep the raw JSON lines here (default: a temporary file)
#
# Peers are installed on first use: python3-redis with apt-get when
# /usr/bin/python3 cannot import redis (as root only), and npm's redlock@4
# and ioredis into bench/node_modules (from bench/package.json). A peer that
# cannot be installed is skipped with a note in the table.
set -u

here=$(cd "$(dirname "$0")" && pwd)
builddir=$(pwd)
url=
seconds=3
ceil_seconds=2
only=ceiling,s1,s2,s4,s5,s6,s7,s8,s9,s10,s11
workers="2 8 32"
latch_workers="16 64"
peers=1
pin=0
out=
wd_locks=10000,100000
quick=0
while [ $# -gt 0 ]; do
    case "$1" in
    --builddir) builddir=$2; shift ;;
    --url) url=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --quick) seconds=1; ceil_seconds=1; workers="2 8"; wd_locks=10000,100000
             quick=1 ;;
    --only) only=$2; shift ;;
    --workers) workers=$(echo "$2" | tr ',' ' '); shift ;;
    --latch-workers) latch_workers=$(echo "$2" | tr ',' ' '); shift ;;
    --no-peers) peers=0 ;;
    --pin) pin=1 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '3,28p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
bin=$builddir/bench
for p in ceiling bench_lock bench_latch bench_watchdog bench_wheel bench_async \
    bench_ratelimiter bench_barrier; do
    if [ ! -x "$bin/$p" ]; then
        echo "run.sh: $bin/$p is missing: run 'make bench' in the build directory" >&2
        exit 2
    fi
done
want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
log() { echo "run.sh: $*" >&2; }

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ -z "$out" ]; then
    out=$(mktemp /tmp/credisson-bench.XXXXXX)
fi
: > "$out"
note() { printf '{"bench":"note","text":"%s"}\n' "$1" >> "$out"; log "$1"; }

# ------------------------------------------------------------ the server
ncpu=$(nproc 2>/dev/null || echo 1)
server_cpu=
client_pin=
if [ "$pin" = 1 ] && [ "$ncpu" -ge 2 ] && command -v taskset > /dev/null; then
    server_cpu=$((ncpu - 1))
    client_pin="taskset -c 0-$((ncpu - 2))"
fi
redis_pid=
redis_dir=
cleanup() {
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2> /dev/null
        wait "$redis_pid" 2> /dev/null
    fi
    [ -n "$redis_dir" ] && rm -rf "$redis_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$url" ]; then
    if ! command -v redis-server > /dev/null; then
        echo "run.sh: redis-server is not on the PATH (or pass --url)" >&2
        exit 77
    fi
    redis_dir=$(mktemp -d /tmp/credisson-bench-redis.XXXXXX)
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        set -- redis-server --port "$port" --bind 127.0.0.1 --save '' \
            --appendonly no --dir "$redis_dir" --daemonize no \
            --logfile "$redis_dir/redis.log"
        if [ -n "$server_cpu" ]; then
            taskset -c "$server_cpu" "$@" &
        else
            "$@" &
        fi
        redis_pid=$!
        up=0
        for _ in $(seq 1 50); do
            if ! kill -0 "$redis_pid" 2> /dev/null; then
                break
            fi
            if redis-cli -p "$port" ping 2> /dev/null | grep -q PONG; then
                up=1
                break
            fi
            sleep 0.1
        done
        [ "$up" = 1 ] && break
        kill "$redis_pid" 2> /dev/null
        wait "$redis_pid" 2> /dev/null
        redis_pid=
    done
    if [ -z "$redis_pid" ]; then
        echo "run.sh: could not start redis-server" >&2
        exit 1
    fi
    url=redis://127.0.0.1:$port
    log "redis-server $redis_pid on $url"
fi

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
rver=$(redis-server --version 2> /dev/null | sed 's/^Redis server //;s/ sha=.*//')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)

# Runs one benchmark command, keeping its JSON lines.
run() {
    log "$*"
    if ! $client_pin "$@" >> "$out"; then
        note "failed: $(basename "$1") ${*:2}"
    fi
}

# ------------------------------------------------------------ the peers
have_py=0
have_node=0
if [ "$peers" = 1 ] && { want s1 || want s2; }; then
    if $py -c 'import redis' 2> /dev/null; then
        have_py=1
    elif [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
        log "installing python3-redis with apt-get"
        if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-redis \
                > /dev/null 2>&1 || { apt-get update -qq > /dev/null 2>&1 &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-redis \
                > /dev/null 2>&1; }; then
            py=/usr/bin/python3
            $py -c 'import redis' 2> /dev/null && have_py=1
        fi
    fi
    [ "$have_py" = 1 ] || note "python3-redis peer skipped: the package could not be installed"
    if command -v node > /dev/null && command -v npm > /dev/null; then
        if [ ! -f "$here/node_modules/redlock/package.json" ] ||
            [ ! -f "$here/node_modules/ioredis/package.json" ]; then
            log "installing redlock@4 and ioredis into $here/node_modules"
            npm install --prefix "$here" --no-audit --no-fund --no-package-lock \
                --loglevel=error > /dev/null 2>&1
        fi
        if [ -f "$here/node_modules/redlock/package.json" ]; then
            have_node=1
        else
            note "redlock peer skipped: npm install failed"
        fi
    else
        note "redlock peer skipped: node or npm is missing"
    fi
fi

# ------------------------------------------------------------ scenarios
if want ceiling; then
    run "$bin/ceiling" --url "$url" --seconds "$ceil_seconds"
fi
if want s1; then
    for impl in rlock rlock_lease naive; do
        run "$bin/bench_lock" --url "$url" --seconds "$seconds" \
            --scenario uncontended --impl "$impl"
    done
    for impl in $("$bin/bench_lock" --list-kinds 2> /dev/null); do
        run "$bin/bench_lock" --url "$url" --seconds "$seconds" \
            --scenario uncontended --impl "$impl"
    done
    [ "$have_py" = 1 ] && run $py "$here/peer_python.py" --url "$url" \
        --seconds "$seconds" --scenario uncontended
    [ "$have_node" = 1 ] && run node "$here/peer_redlock.js" --url "$url" \
        --seconds "$seconds" --scenario uncontended
fi
if want s2; then
    for k in $workers; do
        for mode in threads procs; do
            for impl in floor rlock naive; do
                run "$bin/bench_lock" --url "$url" --seconds "$seconds" \
                    --scenario contended --impl "$impl" --workers "$k" --mode "$mode"
            done
        done
        [ "$have_py" = 1 ] && run $py "$here/peer_python.py" --url "$url" \
            --seconds "$seconds" --scenario contended --workers "$k"
        [ "$have_node" = 1 ] && run node "$here/peer_redlock.js" --url "$url" \
            --seconds "$seconds" --scenario contended --workers "$k"
    done
    # Other credisson lock kinds: eight processes, next to RLock's figures.
    for impl in $("$bin/bench_lock" --list-kinds 2> /dev/null); do
        run "$bin/bench_lock" --url "$url" --seconds "$seconds" \
            --scenario contended --impl "$impl" --workers 8 --mode procs
    done
fi
if want s4; then
    # Read/write lock, 90 % of the cycles reading: the rwlock, its floor
    # (a local rwlock and the floor's commands) and RLock taking its one
    # lock for both, eight workers.
    for mode in threads procs; do
        for impl in floor_rw rwlock rlock; do
            run "$bin/bench_lock" --url "$url" --seconds "$seconds" \
                --scenario contended --impl "$impl" --workers 8 --mode "$mode" \
                --read-share 90
        done
    done
fi
if want s5; then
    # Semaphore of k permits, 4k worker processes, next to its floor (a
    # local semaphore of k and the same Redis commands).
    for k in 2 8; do
        for impl in floor_sem semaphore; do
            run "$bin/bench_lock" --url "$url" --seconds "$seconds" \
                --scenario contended --impl "$impl" --workers $((4 * k)) \
                --mode procs --permits "$k"
        done
    done
fi
if want s6; then
    for k in $latch_workers; do
        for mode in threads procs; do
            for impl in floor latch; do
                run "$bin/bench_latch" --url "$url" --seconds "$seconds" \
                    --workers "$k" --mode "$mode" --impl "$impl"
            done
        done
    done
fi
if want s7; then
    # A 3 s watchdog renews every second: many periods in a short run.
    run "$bin/bench_watchdog" --url "$url" --locks "$wd_locks" --watchdog-ms 3000
    # The default 30 s watchdog, where the CPU target is read: two periods.
    [ "$quick" = 1 ] ||
        run "$bin/bench_watchdog" --url "$url" --locks 100000 --watchdog-ms 30000 \
            --periods 2
fi
if want s8; then
    run "$bin/bench_wheel"
fi
if want s9; then
    # The rate limiter: 8 workers on a limiter of 1000 permits a second
    # (its own ceiling), and on one no client reaches (the server's).
    for mode in threads procs; do
        run "$bin/bench_ratelimiter" --url "$url" --seconds "$seconds" \
            --workers 8 --mode "$mode" --rate 1000 --interval-ms 1000
        run "$bin/bench_ratelimiter" --url "$url" --seconds "$seconds" \
            --workers 8 --mode "$mode" --rate 0
    done
fi
if want s10; then
    # The asynchronous API: one loop thread with 10,000 pending acquisitions
    # over 100 locks and 1,000 over one, next to the blocking API with one
    # thread per waiter at the first load.
    run "$bin/bench_async" --url "$url" --mode async --requests 10000 --locks 100
    run "$bin/bench_async" --url "$url" --mode async --requests 1000 --locks 1
    run "$bin/bench_async" --url "$url" --mode threads --requests 10000 \
        --locks 100 --threads 1000
fi
if want s11; then
    # The cyclic barrier's round time, 16 and 64 parties, next to the bare
    # pub/sub floor (an INCR script per arrival, one PUBLISH per round).
    for k in $latch_workers; do
        for mode in threads procs; do
            for impl in floor barrier; do
                run "$bin/bench_barrier" --url "$url" --seconds "$seconds" \
                    --workers "$k" --mode "$mode" --impl "$impl"
            done
        done
    done
fi

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
printf '{"bench":"machine","nproc":%s,"cpu":"%s","redis":"%s","load_start":"%s","load_end":"%s","seconds_total":%s,"pinned":%s,"url":"%s"}\n' \
    "$ncpu" "$cpu" "$rver" "$load_start" "$load_end" "$(( $(date +%s) - started ))" \
    "$pin" "$url" >> "$out"
if command -v "$py" > /dev/null; then
    $py "$here/report.py" "$out"
else
    cat "$out"
fi
log "raw results in $out"
