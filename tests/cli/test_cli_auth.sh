#!/bin/bash
# SPDX-License-Identifier: MIT
# credisson(1) against a private redis-server that wants a password (and
# an ACL user, and a sentinel with a password of its own): credentials
# from --user, --password-file, CREDISSON_PASSWORD and the URL, refused
# or missing ones (77), a password in --url hidden from ps, a command
# run without the credentials unless --pass-credentials, and
# --client-name.

. "$(dirname "$0")/lib.sh"

PASSWORD=s3cr3t-pw

# Writes the password $2 into the file $1, readable by its owner only.
password_file() {
    (umask 077 && printf '%s\nsecond line\n' "$2" >"$1")
}

# redis-cli on the server, with the password.
rcli() {
    REDISCLI_AUTH=$PASSWORD redis-cli -p "$PORT" "$@"
}

# Starts the server, wanting PASSWORD, and an ACL user "app" (password
# app-pw) that may not run scripts.
auth_up() {
    SRV_CLI_OPTS=(--no-auth-warning -a "$PASSWORD")
    start_redis --requirepass "$PASSWORD"
    REDIS_PID=$SRV_PID
    PORT=$SRV_PORT
    rcli acl setuser app on '>app-pw' '~*' '&*' '+@all' >/dev/null
    rcli acl setuser noscripts on '>ns-pw' '~*' '&*' '+@all' \
        '-@scripting' >/dev/null
    export CREDISSON_URL="redis://127.0.0.1:$PORT"
}

test_password_file_gives_the_password() {
    password_file pw "$PASSWORD"
    run_cli --password-file pw lock auth -- echo ran
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" ran "stdout"
    expect_eq "$err" "" "stderr (a file only its owner reads)"
}

test_password_variable_gives_the_password() {
    CREDISSON_PASSWORD=$PASSWORD run_cli lock auth -- echo ran
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" ran "stdout"
}

test_password_file_readable_by_others_warns() {
    printf '%s\n' "$PASSWORD" >pw
    chmod 644 pw
    run_cli --password-file pw lock auth -- true
    expect_eq "$rc" 0 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "can be read by others" "stderr"
}

test_missing_password_file_exits_78() {
    run_cli --password-file nowhere lock auth -- touch ran
    expect_eq "$rc" 78 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "cannot read the --password-file 'nowhere'" \
        "stderr"
    [ -e ran ] && fail "the command ran"
    return 0
}

test_wrong_password_exits_77() {
    password_file pw wrong-password
    run_cli --password-file pw lock auth -- touch ran
    expect_eq "$rc" 77 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_not_contains "$err" wrong-password "stderr"
    CREDISSON_PASSWORD=wrong-password run_cli lock auth -- touch ran
    expect_eq "$rc" 77 "exit status from the variable"
    [ -e ran ] && fail "the command ran"
    return 0
}

test_missing_password_exits_77_with_hint() {
    run_cli lock auth -- touch ran
    expect_eq "$rc" 77 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "--password-file" "the hint"
    [ -e ran ] && fail "the command ran"
    return 0
}

test_user_and_password_for_an_acl_user() {
    password_file pw app-pw
    run_cli --user app --password-file pw lock acl -- echo ran
    expect_eq "$rc" 0 "--user"
    expect_eq "$out" ran "stdout"
    CREDISSON_USER=app CREDISSON_PASSWORD=app-pw run_cli lock acl -- true
    expect_eq "$rc" 0 "CREDISSON_USER"
    CREDISSON_USER=nobody CREDISSON_PASSWORD=app-pw run_cli lock acl -- true
    expect_eq "$rc" 77 "an unknown user"
}

test_acl_refusing_scripts_exits_77() {
    password_file pw ns-pw
    run_cli --user noscripts --password-file pw lock acl -- touch ran
    expect_eq "$rc" 77 "exit status"
    expect_lines "$err" 1 "stderr"
    [ -e ran ] && fail "the command ran"
    return 0
}

test_password_in_url_is_hidden_from_ps() {
    # Under valgrind, ps shows valgrind's own copy of the arguments.
    [ "${CR_TEST_SLOW:-0}" = 1 ] && return 0
    cli_exec --url "redis://:$PASSWORD@127.0.0.1:$PORT" lock ps -- \
        sh -c 'touch ready; exec sleep 30' &
    local pid=$! args
    wait_until 5000 file_exists ready || fail "command never started"
    args=$(ps -o args= -p "$pid")
    kill -TERM "$pid"
    wait "$pid"
    expect_not_contains "$args" "$PASSWORD" "ps"
    expect_contains "$args" "--url redis://:*********@127.0.0.1:$PORT lock" \
        "ps"
}

# A password in the environment is read, then blotted out of credisson's
# own environment (what `ps e` and /proc/PID/environ show); the command
# run never had it.
test_password_in_the_environment_is_hidden_from_ps_e() {
    [ "${CR_TEST_SLOW:-0}" = 1 ] && return 0
    local env stars
    stars=$(printf '%s' "$PASSWORD" | tr -c '' '*')
    CREDISSON_PASSWORD=$PASSWORD cli_exec lock ps -- \
        sh -c 'tr "\0" "\n" </proc/$$/environ >child-env; touch ready;
            exec sleep 30' &
    local pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    env=$(tr '\0' '\n' <"/proc/$pid/environ")
    kill -TERM "$pid"
    wait "$pid"
    expect_not_contains "$env" "$PASSWORD" "/proc/PID/environ"
    expect_contains "$env" "CREDISSON_PASSWORD=$stars" "/proc/PID/environ"
    expect_not_contains "$(cat child-env)" "$PASSWORD" "the command's"
    rm -f ready
    CREDISSON_URL="redis://:$PASSWORD@127.0.0.1:$PORT" cli_exec lock ps -- \
        sh -c 'touch ready; exec sleep 30' &
    pid=$!
    wait_until 5000 file_exists ready || fail "command never started"
    env=$(tr '\0' '\n' <"/proc/$pid/environ")
    kill -TERM "$pid"
    wait "$pid"
    expect_not_contains "$env" "$PASSWORD" "/proc/PID/environ"
    expect_contains "$env" "CREDISSON_URL=redis://:$stars@127.0.0.1:$PORT" \
        "/proc/PID/environ"
}

test_password_in_url_is_hidden_from_ps_wherever_given() {
    [ "${CR_TEST_SLOW:-0}" = 1 ] && return 0
    local stars
    stars=$(printf '%s' "$PASSWORD" | tr -c '' '*')
    # --url after NAME, with its value after '=', among bundled options.
    cli_exec lock ps -vw5 --url="redis://:$PASSWORD@127.0.0.1:$PORT" -- \
        sh -c 'touch ready; exec sleep 30' &
    local pid=$! args
    wait_until 5000 file_exists ready || fail "command never started"
    args=$(ps -o args= -p "$pid")
    kill -TERM "$pid"
    wait "$pid"
    expect_not_contains "$args" "$PASSWORD" "ps"
    expect_contains "$args" \
        "lock ps -vw5 --url=redis://:$stars@127.0.0.1:$PORT -- sh" "ps"
}

test_command_gets_no_password() {
    local url="redis://:$PASSWORD@127.0.0.1:$PORT"
    CREDISSON_PASSWORD=$PASSWORD CREDISSON_SENTINEL_PASSWORD=$PASSWORD \
        run_cli --url "$url" lock env -- sh -c 'env >env.out'
    expect_eq "$rc" 0 "exit status"
    expect_not_contains "$(cat env.out)" "$PASSWORD" "the command's env"
    CREDISSON_URL=$url run_cli lock env -- sh -c 'env >env.out'
    expect_eq "$rc" 0 "exit status"
    expect_not_contains "$(cat env.out)" "$PASSWORD" "the command's env"
    expect_not_contains "$(cat env.out)" "CREDISSON_URL=" "the command's env"
    # A URL without a password is left to the command.
    CREDISSON_PASSWORD=$PASSWORD run_cli lock env -- sh -c 'env >env.out'
    expect_contains "$(cat env.out)" "CREDISSON_URL=$CREDISSON_URL" \
        "the command's env"
    expect_not_contains "$(cat env.out)" "$PASSWORD" "the command's env"
}

test_pass_credentials_lets_a_nested_run_connect() {
    password_file pw "$PASSWORD"
    run_cli --password-file pw lock outer -- "$CLI_BIN" lock inner -- true
    expect_eq "$rc" 77 "a nested run without --pass-credentials"
    run_cli --password-file pw --pass-credentials lock outer -- \
        "$CLI_BIN" lock inner -- sh -c 'echo "$CREDISSON_LOCK_NAME"'
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" inner "the inner command's output"
    run_cli --url "redis://app:app-pw@127.0.0.1:$PORT" --pass-credentials \
        semaphore outer --permits 1 -- "$CLI_BIN" lock inner -- true
    expect_eq "$rc" 0 "a URL with a password, passed on"
}

test_client_name_names_the_connections() {
    password_file pw "$PASSWORD"
    REDISCLI_AUTH=$PASSWORD run_cli --password-file pw \
        --client-name nightly-job lock named -- redis-cli -p "$PORT" client list
    expect_eq "$rc" 0 "exit status"
    expect_contains "$out" "name=nightly-job " "CLIENT LIST"
}

# Succeeds when the sentinel on port $1 knows master m.
sentinel_knows() {
    [ -n "$(REDISCLI_AUTH=sentinel-pw redis-cli -p "$1" \
        sentinel get-master-addr-by-name m 2>/dev/null)" ]
}

test_sentinel_password_for_the_sentinels() {
    local dir="$SCRATCH/sentinel" port try sentinel= up=
    mkdir -p "$dir"
    # A port that looked free may be taken before the sentinel binds it (by
    # another test run on this machine): then start it again elsewhere.
    for try in 1 2 3 4 5 6 7 8; do
        port=$((20000 + (RANDOM * 7 + $$ + try * 131) % 40000))
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
        cat >"$dir/sentinel.conf" <<EOF
port $port
bind 127.0.0.1
dir $dir
sentinel monitor m 127.0.0.1 $PORT 1
sentinel auth-pass m $PASSWORD
requirepass sentinel-pw
EOF
        redis-server "$dir/sentinel.conf" --sentinel >/dev/null 2>&1 &
        sentinel=$!
        echo "$sentinel" >>"$SCRATCH/servers"
        if wait_until 10000 sentinel_knows "$port"; then
            up=1
            break
        fi
        stop_redis "$sentinel"
    done
    [ -n "$up" ] || fail "the sentinel never answered"
    password_file pw "$PASSWORD"
    password_file spw sentinel-pw
    run_cli --url "redis-sentinel://127.0.0.1:$port/m" --password-file pw \
        --sentinel-password-file spw lock sent -- echo ran
    local with=$rc with_out=$out
    run_cli --url "redis-sentinel://127.0.0.1:$port/m" --password-file pw \
        lock sent -- touch ran
    local without=$rc
    CREDISSON_SENTINEL_PASSWORD=sentinel-pw run_cli \
        --url "redis-sentinel://127.0.0.1:$port/m" --password-file pw \
        lock sent -- true
    local from_env=$rc
    stop_redis "$sentinel"
    expect_eq "$with" 0 "with --sentinel-password-file"
    expect_eq "$with_out" ran "stdout"
    expect_eq "$without" 77 "without the sentinels' password"
    expect_eq "$from_env" 0 "with CREDISSON_SENTINEL_PASSWORD"
    [ -e ran ] && fail "the command ran without the sentinels' password"
    return 0
}

auth_up
run_test test_password_file_gives_the_password
run_test test_password_variable_gives_the_password
run_test test_password_file_readable_by_others_warns
run_test test_missing_password_file_exits_78
run_test test_wrong_password_exits_77
run_test test_missing_password_exits_77_with_hint
run_test test_user_and_password_for_an_acl_user
run_test test_acl_refusing_scripts_exits_77
run_test test_password_in_url_is_hidden_from_ps
run_test test_password_in_url_is_hidden_from_ps_wherever_given
run_test test_password_in_the_environment_is_hidden_from_ps_e
run_test test_command_gets_no_password
run_test test_pass_credentials_lets_a_nested_run_connect
run_test test_client_name_names_the_connections
run_test test_sentinel_password_for_the_sentinels
finish
