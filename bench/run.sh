#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The benchmark driver behind `make bench` (doc/benchmarks.md). It starts a
# private redis-server on a free loopback port (or uses --url), measures the
# ceiling, runs every scenario for a bounded time with credisson and its
# peers side by side, and prints the table (bench/report.py) followed by one
# JSON line per scenario and per target. The default run takes about six
# minutes; --quick about two.
#
#   bench/run.sh [--builddir DIR] [--url URL] [--seconds S] [--quick]
#                [--only ceiling,s1,s2,s4,s5,s6,s7,s8,s9,s10,s11,s12,s13]
#                [--workers 2,8,32] [--latch-workers 16,64]
#                [--no-peers] [--pin] [--out FILE] [--ab OLD_BUILDDIR [--ab-pairs 5]]
#
#   --builddir  where bench/ceiling, bench/bench_lock... were built (default:
#               the current directory)
#   --url       an existing server (redis://host:port, no password); keys
#               bench:* and the lock keys of the scenarios are written there
#   --seconds   length of each timed run (default 3; --quick: 1)
#   --workers   K of scenario 2 (workers on one lock)
#   --latch-workers  K of scenario 6 (waiters on one latch; the issue's
#               N = 16 and 64), and the parties of scenario 11 (barrier)
#   --no-peers  skip python3-redis, redlock and the Java Redisson client
#               (scenarios 12 and 13)
#   --pin       pin redis-server to the last CPU and every client to the
#               others (less noise from migrations on small machines)
#   --out       keep the raw JSON lines here (default: a temporary file)
#   --ab        an interleaved A/B instead of the scenarios (unless --only
#               names some): the rows of issue 30 (uncontended pairs, RLock
#               K = 2, 8, 32, the fair and write locks, the semaphores, the
#               read/write mix) run with OLD_BUILDDIR's bench_lock and this
#               build's in turn, --ab-pairs times (the order alternating);
#               the table gives each row's medians and the median of the
#               per-pair ratios (new over old)
#
# Peers are installed on first use: python3-redis with apt-get when
# /usr/bin/python3 cannot import redis (as root only), and npm's redlock@4
# and ioredis into bench/node_modules (from bench/package.json). A peer that
# cannot be installed is skipped with a note in the table. The Java Redisson
# client (scenarios 12 and 13) is built by tests/java/redisson.sh from the
# shared recipe (CR_REDISSON_JAVA) and needs a JDK; without one, those rows
# are skipped with a note.
set -u

here=$(cd "$(dirname "$0")" && pwd)
builddir=$(pwd)
url=
seconds=3
ceil_seconds=2
only=ceiling,s1,s2,s4,s5,s6,s7,s8,s9,s10,s11,s12,s13
workers="2 8 32"
latch_workers="16 64"
peers=1
pin=0
out=
wd_locks=10000,100000
quick=0
ab_old=
ab_pairs=5
only_given=0
while [ $# -gt 0 ]; do
    case "$1" in
    --builddir) builddir=$2; shift ;;
    --url) url=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --quick) seconds=1; ceil_seconds=1; workers="2 8"; wd_locks=10000,100000
             quick=1 ;;
    --only) only=$2; only_given=1; shift ;;
    --workers) workers=$(echo "$2" | tr ',' ' '); shift ;;
    --latch-workers) latch_workers=$(echo "$2" | tr ',' ' '); shift ;;
    --no-peers) peers=0 ;;
    --pin) pin=1 ;;
    --out) out=$2; shift ;;
    --ab) ab_old=$2; shift ;;
    --ab-pairs) ab_pairs=$2; shift ;;
    -h|--help) sed -n '3,41p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
bin=$builddir/bench
if [ -n "$ab_old" ]; then
    [ -x "$ab_old/bench/bench_lock" ] ||
        { echo "run.sh: $ab_old/bench/bench_lock is missing (make bench there)" >&2; exit 2; }
    [ "$only_given" = 1 ] || only=ceiling,ab
fi
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
# The real Java Redisson client and this project's peer program compiled
# against it (bench/redisson_peer), for scenarios 12 and 13.
java_cp=
if [ "$peers" = 1 ] && { want s12 || want s13; }; then
    # By its absolute path: the script's cache key includes the path it was
    # called by.
    rj=$(cd "$here/.." && pwd)/tests/java/redisson.sh
    if why=$(bash "$rj" check 2>&1 >/dev/null); then
        log "building or finding the Java Redisson client (tests/java/redisson.sh)"
        if java_cp=$(bash "$rj" classpath "$here/redisson_peer" 2>"$out.java.log"); then
            rm -f "$out.java.log"
        else
            java_cp=
            note "Redisson rows skipped: the client or bench/redisson_peer did not build ($(tail -n 1 "$out.java.log" | tr -d '"\\'))"
            rm -f "$out.java.log"
        fi
    else
        note "Redisson rows skipped: $(echo "$why" | tail -n 1 | sed 's/^redisson.sh: //;s/; the tests.*//' | tr -d '"\\')"
    fi
fi
jvm=(java -Dorg.slf4j.simpleLogger.defaultLogLevel=error -cp "$java_cp" RedissonPeer)

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
            for impl in floor tfloor rlock naive; do
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
    # Read/write lock, 90 % of the cycles reading: the rwlock, its floors
    # (a local rwlock and the instant floor's commands; the targeted floor
    # with the rwlock's own scripts) and RLock taking its one lock for both,
    # eight workers.
    for mode in threads procs; do
        for impl in floor_rw tfloor_rw rwlock rlock; do
            run "$bin/bench_lock" --url "$url" --seconds "$seconds" \
                --scenario contended --impl "$impl" --workers 8 --mode "$mode" \
                --read-share 90
        done
    done
fi
if want s5; then
    # Semaphore of k permits, 4k worker processes, next to its floors (a
    # local semaphore of k and the same Redis commands; the targeted floor).
    for k in 2 8; do
        for impl in floor_sem tfloor_sem semaphore; do
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

if want ab && [ -n "$ab_old" ]; then
    # Each row with the old build's bench_lock and this build's, in turn,
    # the order alternating from pair to pair; every JSON line is tagged
    # with its build, row and pair for report.py.
    ab_rows=(
        "uncontended pairs|--scenario uncontended --impl rlock"
        "RLock K=2 threads|--scenario contended --impl rlock --workers 2 --mode threads"
        "RLock K=2 procs|--scenario contended --impl rlock --workers 2 --mode procs"
        "RLock K=8 procs|--scenario contended --impl rlock --workers 8 --mode procs"
        "RLock K=32 procs|--scenario contended --impl rlock --workers 32 --mode procs"
        "fair lock K=8 procs|--scenario contended --impl fair --workers 8 --mode procs"
        "write lock K=8 procs|--scenario contended --impl write --workers 8 --mode procs"
        "semaphore of 2, 8 procs|--scenario contended --impl semaphore --permits 2 --workers 8 --mode procs"
        "semaphore of 8, 32 procs|--scenario contended --impl semaphore --permits 8 --workers 32 --mode procs"
        "read/write 90 %, 8 procs|--scenario contended --impl rwlock --read-share 90 --workers 8 --mode procs"
    )
    for pair in $(seq 1 "$ab_pairs"); do
        for spec in "${ab_rows[@]}"; do
            name=${spec%%|*}
            if [ $((pair % 2)) = 1 ]; then order="old new"; else order="new old"; fi
            for side in $order; do
                dir=$builddir
                [ "$side" = old ] && dir=$ab_old
                log "A/B pair $pair, $side: $name"
                # shellcheck disable=SC2086 # the row's options are words
                if res=$($client_pin "$dir/bench/bench_lock" --url "$url" \
                        --seconds "$seconds" ${spec#*|}); then
                    printf '{"ab":"%s","ab_row":"%s","pair":%s,%s\n' "$side" "$name" \
                        "$pair" "${res#\{}" >> "$out"
                else
                    note "failed: A/B $side $name"
                fi
            done
        done
    done
    printf '{"bench":"ab_builds","old":"%s","new":"%s"}\n' "$ab_old" "$builddir" >> "$out"
fi

# JVM processes on a machine with fewer cores than JVMs measure the
# scheduler more than the lock (report.py says so in the table): run up to
# four per core, and no more.
jvm_procs_max=$((4 * ncpu))
if want s12 && [ -n "$java_cp" ]; then
    # The real Java Redisson client side by side with credisson on the same
    # server: uncontended pairs; K = 8 and 32 on one RLock as threads of one
    # JVM and as JVM processes; a semaphore of 2 with 8 threads (and
    # credisson's, as threads, beside it; its processes are scenario 5's);
    # a latch with 16 waiting threads.
    log "java RedissonPeer pairs $seconds"
    $client_pin "${jvm[@]}" --url "$url" pairs "$seconds" >> "$out" ||
        note "failed: RedissonPeer pairs"
    for k in 8 32; do
        run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
            --impl redisson --workers "$k" --mode threads --java-cp "$java_cp"
        if [ "$k" -le "$jvm_procs_max" ]; then
            run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
                --impl redisson --workers "$k" --mode procs --java-cp "$java_cp"
        else
            printf '{"bench":"s12_not_run","impl":"redisson","mode":"procs","workers":%s,"nproc":%s}\n' \
                "$k" "$ncpu" >> "$out"
        fi
    done
    for impl in semaphore redisson_sem; do
        run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
            --impl "$impl" --permits 2 --workers 8 --mode threads --java-cp "$java_cp"
    done
    log "java RedissonPeer latch 16 $seconds"
    $client_pin "${jvm[@]}" --url "$url" latch 16 "$seconds" >> "$out" ||
        note "failed: RedissonPeer latch"
fi
if want s13 && [ -n "$java_cp" ]; then
    # Mixed fairness: four C processes and four threads of one JVM on one
    # RLock, then on one semaphore of 2 permits.
    run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
        --impl rlock --workers 4 --mode procs --java-workers 4 --java-mode threads \
        --java-cp "$java_cp"
    run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
        --impl semaphore --permits 2 --workers 4 --mode procs --java-workers 4 \
        --java-mode threads --java-cp "$java_cp"
    # Each side alone, with the same workers: the longest wait its own
    # protocol gives it, beside its longest wait in the mix.
    run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
        --impl rlock --workers 4 --mode procs
    run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
        --impl redisson --workers 4 --mode threads --java-cp "$java_cp"
    run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
        --impl semaphore --permits 2 --workers 4 --mode procs
    run "$bin/bench_lock" --url "$url" --seconds "$seconds" --scenario contended \
        --impl redisson_sem --permits 2 --workers 4 --mode threads --java-cp "$java_cp"
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
