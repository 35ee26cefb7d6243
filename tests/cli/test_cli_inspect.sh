#!/bin/bash
# SPDX-License-Identifier: MIT
# `credisson inspect` against a private redis-server, for every kind of
# object: made by credisson itself, and written key by key the way Java
# Redisson lays them out. Each --json output must parse.

. "$(dirname "$0")/lib.sh"

# Runs inspect on $1 (and further options) as text, then as JSON, which
# must parse; the outputs are in $text and $json. Both must exit with
# $want_rc (0 unless set).
inspect_both() {
    run_cli inspect "$@"
    expect_eq "$rc" "${want_rc:-0}" "inspect exit status"
    text=$out
    run_cli inspect "$@" --json
    expect_eq "$rc" "${want_rc:-0}" "inspect --json exit status"
    json=$out
    expect_lines "$json" 1 "JSON lines"
    printf '%s' "$json" | json_ok || fail "not JSON: $json"
}

# This host's wall clock in ms.
now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# Succeeds when no connection's name starts with $1.
no_connection_named() {
    ! rcli client list | grep -q "name=$1"
}

# Succeeds when $2 clients listen on channel $1.
listeners_are() {
    [ "$(rcli pubsub numsub "$1" | tail -n 1)" = "$2" ]
}

# Succeeds when credisson's waiting line of name $1 holds $2 entries.
line_is() {
    [ "$(rcli zcard "credisson_line:{$1}")" = "$2" ]
}

# Starts `credisson $@ --wait 60s -- true` in the background (a waiter
# that leaves as soon as it is served) and waits until it is entry $1 of
# the line of the name $3 (the name after the command); its pid is
# appended to $waiters.
waiter_joins() {
    local place=$1
    shift
    cli_exec "$@" --wait 60s -- true &
    waiters="$waiters $!"
    wait_until 5000 line_is "$2" "$place" || fail "waiter $place never in line"
}

# Checks the line of the JSON object $json against the waiters' pids in
# order (the arguments) and the writer flags in $writers (one 0 or 1 per
# waiter, or empty): each entry with its fields, no turn, ages that do not
# grow down the line.
expect_json_line() {
    printf '%s' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
pids = [int(p) for p in sys.argv[2:]]
writers = [w == "1" for w in sys.argv[1].split()] or [False] * len(pids)
assert d["line_length"] == len(pids), d["line_length"]
line = d["line"]
assert [e["client"]["pid"] for e in line] == pids, line
for e, w in zip(line, writers):
    assert set(e) == {"owner", "since_ms", "waited_ms", "turn", "lease_ms",
                      "remaining_ms", "permits", "writer", "client"}, e
    assert e["waited_ms"] >= 0 and e["remaining_ms"] > 0, e
    assert e["turn"] is False and e["permits"] == 1 and e["writer"] is w, e
assert all(a["waited_ms"] >= b["waited_ms"] for a, b in zip(line, line[1:]))
' "${writers:-}" "$@" || fail "JSON line: $json"
}

# expect_text_entry PLACE PID WHAT: text $text lists the waiter PID at
# PLACE of its line, its parenthesis holding WHAT after its age.
expect_text_entry() {
    printf '%s\n' "$text" | grep -q "^  $1\. .* (waiting [0-9.ms]*$3, lease in .*, client: host .*, pid $2," ||
        fail "text: waiter $1 (pid $2) not listed with '$3': $text"
}

# Checks that text $text lists the waiters' pids (the arguments) in order
# from the first place of its line, each entry's parenthesis holding $what
# after its age.
expect_text_line() {
    local i=1 pid
    for pid in "$@"; do
        expect_text_entry "$i" "$pid" "${what:-}"
        i=$((i + 1))
    done
}

# Ends the holder $1 (SIGTERM) and waits until every waiter of $waiters
# was served.
serve_the_line() {
    local pid
    kill -TERM "$1"
    wait "$1"
    for pid in $waiters; do
        wait "$pid" || fail "waiter $pid failed"
    done
}

test_inspect_absent_name() {
    # Nothing under the name: its own exit status, output all the same.
    want_rc=79 inspect_both nothing
    expect_contains "$text" "type:       none" "text"
    expect_contains "$json" '"type":"none"' "json"
    expect_contains "$json" '"ttl_ms":null' "json"
}

test_inspect_lock_held_by_credisson() {
    cli_exec lock held -- sh -c 'echo "$CREDISSON_LOCK_OWNER" >owner;
        exec sleep 30' &
    local pid=$!
    wait_until 5000 file_exists owner || fail "holder never ran"
    wait_until 5000 test -s owner || fail "owner never written"
    inspect_both held
    expect_contains "$text" "type:       lock" "text"
    expect_contains "$text" "state:      held (lease" "text"
    expect_contains "$text" "holder:     $(cat owner) (hold count 1)" "text"
    expect_contains "$json" '"type":"lock","redis_type":"hash"' "json"
    expect_contains "$json" '"locked":true' "json"
    expect_contains "$json" "{\"owner\":\"$(cat owner)\",\"count\":1," "json"
    kill -TERM "$pid"
    wait "$pid"
    return 0
}

test_inspect_names_the_holders_host_pid_and_address() {
    cli_exec lock named -- sh -c 'echo "$CREDISSON_LOCK_OWNER" >owner;
        exec sleep 30' &
    local pid=$!
    wait_until 5000 test -s owner || fail "holder never ran"
    inspect_both named
    expect_contains "$text" "client: host $(hostname | cut -c1-64), pid $pid, 127.0.0.1:" \
        "text"
    expect_contains "$json" "\"client\":{\"state\":\"connected\",\"host\":" "json"
    expect_contains "$json" "\"pid\":$pid,\"address\":\"127.0.0.1:" "json"
    # One CLIENT LIST per inspect, whatever the number of owners.
    rcli config resetstat >/dev/null
    run_cli inspect named
    expect_eq "$(rcli info commandstats | grep -c 'cmdstat_client|list')" 1 \
        "CLIENT LIST calls"
    expect_contains "$(rcli info commandstats | grep 'cmdstat_client|list')" \
        "calls=1," "CLIENT LIST calls"
    # Killed: its client is gone, the hold stays until its lease ends.
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    wait_until 5000 no_connection_named "credisson/" ||
        fail "the killed holder's connections stayed"
    inspect_both named
    expect_contains "$text" "client: not connected" "text"
    expect_contains "$json" '"client":{"state":"not connected"}' "json"
    # A user without CLIENT LIST cannot tell.
    rcli acl setuser looker on '>look-pw' '~*' '&*' +@all -client >/dev/null
    run_cli --url "redis://looker:look-pw@127.0.0.1:$PORT" inspect named --json
    expect_eq "$rc" 0 "inspect as looker"
    expect_contains "$out" '"client":{"state":"unknown"}' "json as looker"
    rcli acl deluser looker >/dev/null
}

test_inspect_java_reentrant_lock() {
    rcli hset jlock "8d2c5f0e-1111-2222-3333-444455556666:77" 3 >/dev/null
    rcli pexpire jlock 20000 >/dev/null
    inspect_both jlock
    expect_contains "$text" "(hold count 3)" "text"
    expect_contains "$json" '"count":3' "json"
    expect_contains "$json" '"ttl_ms":' "json"
    expect_not_contains "$json" '"ttl_ms":-' "json"
}

test_inspect_fair_lock_queue_with_deadlines() {
    local now
    now=$(now_ms)
    rcli hset flock "a:1" 1 >/dev/null
    rcli rpush "redisson_lock_queue:{flock}" "b:2" "c:3" >/dev/null
    rcli zadd "redisson_lock_timeout:{flock}" $((now + 120000)) "b:2" >/dev/null
    inspect_both flock
    expect_contains "$text" "type:       fair lock" "text"
    expect_contains "$text" "queue:      2 waiting" "text"
    expect_contains "$text" "1. b:2 (deadline in 1m" "text"
    expect_contains "$text" "2. c:3 (no deadline)" "text"
    expect_contains "$json" '"queue_length":2' "json"
    expect_contains "$json" "{\"owner\":\"b:2\",\"deadline_ms\":$((now + 120000))" \
        "json"
    expect_contains "$json" '{"owner":"c:3","deadline_ms":null,' "json"
}

test_inspect_lock_conditions() {
    # A lock's conditions as credisson writes them (doc/coordination.md):
    # "a:1" signalled, "b:2" and "c:3" in line on not-empty.
    local now
    now=$(now_ms)
    rcli hset cv "h:1" 1 >/dev/null
    rcli sadd "credisson_conditions:{cv}" not-empty >/dev/null
    rcli hset "credisson_condition:{cv}:not-empty" seq 3 "a:1" s "b:2" w \
        "c:3" w >/dev/null
    rcli zadd "credisson_condition_queue:{cv}:not-empty" 2 "b:2" 3 "c:3" \
        >/dev/null
    rcli zadd "credisson_condition_leases:{cv}:not-empty" \
        $((now + 60000)) "a:1" $((now + 90000)) "b:2" $((now + 90000)) "c:3" \
        >/dev/null
    inspect_both cv
    expect_contains "$text" "condition:  not-empty, 2 waiting" "text"
    expect_contains "$text" "  a:1 (signalled, lease in " "text"
    expect_contains "$text" "  b:2 (waiting, lease in 1m" "text"
    expect_contains "$json" '"conditions":[{"name":"not-empty","waiting":2,' \
        "json"
    expect_contains "$json" \
        "{\"owner\":\"a:1\",\"state\":\"signalled\",\"lease_ms\":$((now + 60000))" \
        "json"
    expect_contains "$json" '{"owner":"c:3","state":"waiting",' "json"
    # A name left in the registry after a foreign DEL shows nothing.
    rcli sadd "credisson_conditions:{gone}" stale >/dev/null
    want_rc=79 inspect_both gone
    expect_contains "$json" '"type":"none"' "json"
    expect_not_contains "$json" 'conditions' "json"
}

test_inspect_fair_queue_of_name_with_hash_tag() {
    rcli rpush "redisson_lock_queue:app{7}job" "w:1" >/dev/null
    inspect_both "app{7}job"
    expect_contains "$json" '"type":"lock"' "json"
    expect_contains "$json" '"locked":false' "json"
    expect_contains "$json" '"queue":[{"owner":"w:1"' "json"
}

test_inspect_read_write_lock() {
    rcli hset rw mode read "r:1" 2 "s:2" 1 >/dev/null
    rcli pexpire rw 30000 >/dev/null
    rcli set "{rw}:r:1:rwlock_timeout:1" 1 px 10000 >/dev/null
    rcli set "{rw}:r:1:rwlock_timeout:2" 1 px 25000 >/dev/null
    inspect_both rw
    expect_contains "$text" "type:       read/write lock" "text"
    expect_contains "$text" "state:      held for reading" "text"
    expect_contains "$text" "reader:     r:1 (hold count 2, lease 2" "text"
    expect_contains "$text" "reader:     s:2 (hold count 1, hold keys expired)" \
        "text"
    expect_contains "$json" '"type":"rwlock"' "json"
    expect_contains "$json" '"mode":"read"' "json"
    expect_contains "$json" '{"owner":"s:2","count":1,"mode":"read","ttl_ms":null,' \
        "json"
    rcli del rw >/dev/null
    rcli hset rw mode write "w:9:write" 2 >/dev/null
    inspect_both rw
    expect_contains "$text" "writer:     w:9:write (hold count 2)" "text"
    expect_contains "$json" '{"owner":"w:9:write","count":2,"mode":"write",' \
        "json"
}

test_inspect_read_lock_taken_by_credisson() {
    cli_exec lock rwc --read -- sh -c 'touch ready; exec sleep 30' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "reader never ran"
    inspect_both rwc
    expect_contains "$json" '"mode":"read"' "json"
    expect_not_contains "$json" '"ttl_ms":null}' "json"
    kill -TERM "$pid"
    wait "$pid"
    return 0
}

test_inspect_lists_a_locks_line_in_order_and_then_none() {
    local waiters=
    cli_exec lock held -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists held || fail "holder never locked"
    inspect_both held
    expect_not_contains "$text" "line:" "text without waiters"
    expect_not_contains "$json" '"line' "json without waiters"
    waiter_joins 1 lock held
    waiter_joins 2 lock held
    waiter_joins 3 lock held
    inspect_both held
    expect_contains "$text" "line:       3 waiting" "text"
    expect_text_line $waiters
    expect_json_line $waiters
    serve_the_line "$holder"
    want_rc=79 inspect_both held
    expect_not_contains "$text" "line:" "text once all were served"
    expect_not_contains "$json" '"line' "json once all were served"
}

test_inspect_lists_a_writer_in_line_before_a_later_reader() {
    local waiters=
    cli_exec lock rwl --read -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists rwl || fail "reader never locked"
    waiter_joins 1 lock rwl --write
    waiter_joins 2 lock rwl --read
    inspect_both rwl
    expect_contains "$text" "state:      held for reading" "text"
    local first=${waiters# } second
    second=${first#* }
    first=${first%% *}
    expect_contains "$text" "line:       2 waiting" "text"
    expect_text_entry 1 "$first" ", to write"
    expect_text_entry 2 "$second" ", to read"
    writers="1 0" expect_json_line $waiters
    serve_the_line "$holder"
}

test_inspect_lists_a_semaphores_line() {
    local waiters=
    cli semaphore sline set 1
    cli_exec semaphore sline -- sleep 30 &
    local holder=$!
    wait_until 5000 eval '[ "$(rcli get sline)" = 0 ]' ||
        fail "holder never took the permit"
    waiter_joins 1 semaphore sline
    waiter_joins 2 semaphore sline
    inspect_both sline
    expect_contains "$text" "type:       expirable semaphore" "text"
    expect_contains "$text" "line:       2 waiting" "text"
    what=", wants 1 permit" expect_text_line $waiters
    expect_json_line $waiters
    serve_the_line "$holder"
}

test_inspect_shows_a_turn_and_an_entry_without_state() {
    # A line as credisson writes it (lua/lib/line.lua): b:2 holds a turn,
    # c:3 waits, d:4 lost its state (the next walk of the line drops it).
    local now
    now=$(now_ms)
    rcli hset tl "a:1" 1 >/dev/null
    rcli zadd "credisson_line:{tl}" 1 "b:2" 2 "c:3" 3 "d:4" >/dev/null
    rcli hset "credisson_line_state:{tl}" seq 3 \
        "e:b:2" "$((now + 200000)) 1 1 0 $((now - 5000))" \
        "e:c:3" "$((now + 30000)) 0 1 0 $((now - 3000))" >/dev/null
    inspect_both tl
    expect_contains "$text" "line:       3 waiting" "text"
    expect_contains "$text" "  1. b:2 (waiting " "text: the first"
    expect_contains "$text" ", its turn, lease in 3m" "text: its turn"
    expect_contains "$text" "  3. d:4 (no state: lapsed), client: " \
        "text: the entry without state"
    expect_contains "$json" \
        "{\"owner\":\"b:2\",\"since_ms\":$((now - 5000)),\"waited_ms\":" "json"
    expect_contains "$json" \
        "\"turn\":true,\"lease_ms\":$((now + 200000)),\"remaining_ms\":" \
        "json: its turn"
    expect_contains "$json" \
        "{\"owner\":\"c:3\",\"since_ms\":$((now - 3000)),\"waited_ms\":" "json"
    expect_contains "$json" \
        '{"owner":"d:4","since_ms":null,"turn":false,"lease_ms":null,"permits":null,"writer":false,' \
        "json: the entry without state"
}

test_inspect_plain_integer_is_semaphore_or_latch() {
    rcli set num 3 >/dev/null
    inspect_both num
    expect_contains "$text" "semaphore or latch" "text"
    expect_contains "$json" '"type":"semaphore-or-latch"' "json"
    expect_contains "$json" '"value":3' "json"
}

test_inspect_semaphore_with_waiter() {
    cli semaphore sem set 0
    cli_exec semaphore sem --wait 60s -- true &
    local pid=$!
    wait_until 5000 waiters_in_line sem 1 || fail "waiter never waited"
    # It joins the line before its client subscribes to the channel.
    wait_until 5000 listeners_are "redisson_sc:{sem}" 1 ||
        fail "waiter never subscribed"
    inspect_both sem
    expect_contains "$text" "type:       semaphore" "text"
    expect_contains "$text" "available:  0" "text"
    expect_contains "$text" "subscribed: 1 connection to its channel (connections, idle and Java's too, not waiters)" \
        "text"
    expect_contains "$json" '"type":"semaphore"' "json"
    expect_contains "$json" '"available":0' "json"
    expect_contains "$json" '"subscribed_connections":1' "json"
    cli semaphore sem add 1
    wait "$pid" || fail "the waiter failed"
}

test_inspect_expirable_semaphore() {
    cli_exec semaphore pes --permits 3 -- sh -c \
        'echo "$CREDISSON_PERMIT_ID" >id; exec sleep 30' &
    local pid=$!
    wait_until 5000 test -s id || fail "holder never ran"
    # A permit issued by Java: 16 raw bytes that never expire.
    printf '\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\377' |
        rcli -x zadd "{pes}:timeout" 922337203685477 >/dev/null
    rcli decr pes >/dev/null
    inspect_both pes
    expect_contains "$text" "type:       expirable semaphore" "text"
    expect_contains "$text" "available:  1" "text"
    expect_contains "$text" "issued:     2" "text"
    expect_contains "$text" "$(cat id) (expires in" "text"
    expect_contains "$text" "0102030405060708090a0b0c0d0e0fff (never expires)" \
        "text"
    expect_contains "$json" '"type":"expirable-semaphore"' "json"
    expect_contains "$json" '"issued_count":2' "json"
    expect_contains "$json" \
        '{"id":"0102030405060708090a0b0c0d0e0fff","expires_ms":null}' "json"
    expect_contains "$json" "{\"id\":\"$(cat id)\",\"expires_ms\":" "json"
    kill -TERM "$pid"
    wait "$pid"
    return 0
}

test_inspect_latch_with_waiter() {
    cli latch lat set 2
    cli_exec latch lat await &
    local pid=$!
    wait_until 5000 listeners_are "redisson_countdownlatch__channel__{lat}" 1 ||
        fail "waiter never subscribed"
    inspect_both lat
    expect_contains "$text" "type:       latch" "text"
    expect_contains "$text" "count:      2" "text"
    expect_contains "$json" '"type":"latch"' "json"
    expect_contains "$json" '"count":2' "json"
    cli latch lat count-down
    cli latch lat count-down
    wait "$pid" || fail "the waiter failed"
}

test_inspect_barrier_with_a_waiter() {
    local owner
    cli_exec barrier bar --parties 3 &
    local pid=$!
    wait_until 5000 eval '[ "$(rcli hget bar arrived)" = 1 ]' ||
        fail "the party never waited"
    owner=$(rcli zrange "credisson_barrier_arrivals:{bar}" 0 0)
    inspect_both bar
    expect_contains "$text" "type:       barrier" "text"
    expect_contains "$text" "state:      round 0, 1 of 3 parties waiting" "text"
    expect_not_contains "$text" "holders" "text"
    expect_contains "$text" "  1. $owner (waiting " "text: the party"
    expect_contains "$text" ", lease in " "text: its lease"
    expect_contains "$text" "client: host $(hostname), pid $pid" \
        "text: its client"
    expect_not_contains "$text" "subscribed:" "text"
    expect_contains "$json" '"type":"barrier"' "json"
    expect_contains "$json" '"parties":3,"generation":0,"waiting":1,"broken":false' \
        "json"
    expect_contains "$json" "\"waiting_parties\":[{\"owner\":\"$owner\",\"index\":2,\"since_ms\":" \
        "json: the party"
    expect_contains "$json" '"remaining_ms":' "json: its lease"
    expect_contains "$json" "\"pid\":$pid" "json: its client"
    kill -INT "$pid"
    wait "$pid"
    inspect_both bar
    expect_contains "$text" "0 of 3 parties waiting, broken" "text"
    expect_contains "$json" '"broken":true' "json"
}

test_inspect_lock_counts_subscribed_connections() {
    cli_exec lock held -- sleep 30 &
    local holder=$!
    wait_until 5000 key_exists held || fail "holder never locked"
    cli_exec lock held --wait 60s -- true &
    local waiter=$!
    wait_until 5000 listeners_are "redisson_lock__channel:{held}" 1 ||
        fail "waiter never subscribed"
    inspect_both held
    expect_contains "$text" "subscribed: 1 connection to its channel" "text"
    expect_contains "$json" '"subscribed_connections":1' "json"
    kill -TERM "$holder"
    wait "$holder"
    wait "$waiter" || fail "the waiter failed"
}

test_inspect_rate_limiter() {
    cli ratelimit api --rate 10/2s -- true || fail "ratelimit"
    inspect_both api
    expect_contains "$text" "type:       rate limiter" "text"
    expect_contains "$text" "rate:       10 per 2.0s" "text"
    expect_contains "$json" '"type":"rate-limiter"' "json"
    expect_contains "$json" '"rate":10,"interval_ms":2000,"rate_type":"overall","keep_alive_ms":0' \
        "json"
    # As Java's trySetRate(PER_CLIENT, 5, 1 minute) leaves it (3.21+).
    rcli hset japi rate 5 interval 60000 type 1 keepAliveTime 0 >/dev/null
    inspect_both japi
    expect_contains "$text" "rate:       5 per 1m00s, per client" "text"
    expect_contains "$json" '"rate_type":"per-client"' "json"
}

test_inspect_fencing_token() {
    cli lock fence --fenced -- true
    cli lock fence --fenced -- true
    inspect_both fence
    expect_contains "$text" "fencing token: 2" "text"
    expect_contains "$json" '"fencing_token":2' "json"
}

test_inspect_other_key() {
    rcli rpush alist x >/dev/null
    inspect_both alist
    expect_contains "$text" "other (a Redis list" "text"
    expect_contains "$json" '"type":"other","redis_type":"list"' "json"
    rcli hset ahash field text >/dev/null
    inspect_both ahash
    expect_contains "$json" '"type":"other","redis_type":"hash"' "json"
}

test_inspect_with_name_prefix() {
    rcli hset "tenant:job" "o:1" 1 >/dev/null
    inspect_both --name-prefix tenant: job
    expect_contains "$text" "name:       job (key tenant:job)" "text"
    expect_contains "$json" '"name":"job","key":"tenant:job"' "json"
}

test_inspect_json_escapes_odd_owners() {
    rcli hset odd "$(printf 'q"b\\s\nnl\001\303\251\377:1')" 1 >/dev/null
    inspect_both odd
    expect_contains "$json" 'q\"b\\s\u000anl\u0001é\ufffd:1' "json"
    expect_not_contains "$text" "$(printf '\001')" "text"
}

redis_up
run_test test_inspect_absent_name
run_test test_inspect_lock_held_by_credisson
run_test test_inspect_names_the_holders_host_pid_and_address
run_test test_inspect_java_reentrant_lock
run_test test_inspect_fair_lock_queue_with_deadlines
run_test test_inspect_fair_queue_of_name_with_hash_tag
run_test test_inspect_lock_conditions
run_test test_inspect_read_write_lock
run_test test_inspect_read_lock_taken_by_credisson
run_test test_inspect_lists_a_locks_line_in_order_and_then_none
run_test test_inspect_lists_a_writer_in_line_before_a_later_reader
run_test test_inspect_lists_a_semaphores_line
run_test test_inspect_shows_a_turn_and_an_entry_without_state
run_test test_inspect_plain_integer_is_semaphore_or_latch
run_test test_inspect_semaphore_with_waiter
run_test test_inspect_expirable_semaphore
run_test test_inspect_latch_with_waiter
run_test test_inspect_barrier_with_a_waiter
run_test test_inspect_lock_counts_subscribed_connections
run_test test_inspect_rate_limiter
run_test test_inspect_fencing_token
run_test test_inspect_other_key
run_test test_inspect_with_name_prefix
run_test test_inspect_json_escapes_odd_owners
finish
