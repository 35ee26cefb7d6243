#!/bin/bash
# SPDX-License-Identifier: MIT
# credisson(1) over TLS, against a private redis-server that speaks only
# TLS, with certificates made here by openssl (ECDSA P-256, as
# tests/fixture/tls_fixture.c makes them): a CA, a server certificate for
# 127.0.0.1 and localhost, a client certificate, and an unrelated CA. The
# options --tls, --cacert, --cacertdir, --cert, --key, --sni and
# --insecure, their variables, and what a plain URL to the TLS port gets.

. "$(dirname "$0")/lib.sh"

CERTS="$SCRATCH/certs"

# Makes one ECDSA key and certificate: name $1, extensions section $2,
# subject $3, signed by the CA named $4 (none: by itself).
make_cert() {
    local ca=()
    [ -n "${4:-}" ] && ca=(-CA "$CERTS/$4.crt" -CAkey "$CERTS/$4.key")
    openssl req -x509 -config "$CERTS/openssl.cnf" -extensions "$2" \
        -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc \
        -keyout "$CERTS/$1.key" -out "$CERTS/$1.crt" -days 2 -subj "$3" \
        "${ca[@]}" >"$CERTS/openssl.out" 2>&1 ||
        { cat "$CERTS/openssl.out" >&2; return 1; }
}

# Makes the certificates; exits 77 (SKIP) without openssl.
make_certs() {
    if ! command -v openssl >/dev/null; then
        echo "SKIP: openssl not found"
        exit 77
    fi
    mkdir -p "$CERTS/cadir"
    cat >"$CERTS/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
EOF
    make_cert ca ca_ext "/CN=credisson test CA" &&
        make_cert server server_ext "/CN=localhost" ca &&
        make_cert client client_ext "/CN=credisson test client" ca &&
        make_cert other ca_ext "/CN=unrelated test CA" || exit 1
    cp "$CERTS/ca.crt" "$CERTS/cadir/"
    openssl rehash "$CERTS/cadir" >/dev/null 2>&1 || exit 1
}

# Starts the TLS-only server, which asks clients for no certificate
# until a test says otherwise, and points CREDISSON_URL at it (plain
# redis://, as a caller would leave it).
tls_up() {
    SRV_CLI_OPTS=(--tls --cacert "$CERTS/ca.crt")
    start_redis --tls-cert-file "$CERTS/server.crt" \
        --tls-key-file "$CERTS/server.key" \
        --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients no
    PORT=$SRV_PORT
    export CREDISSON_URL="redis://127.0.0.1:$PORT"
}

# redis-cli on the TLS server; rcli too, for the runner's FLUSHALL.
tcli() {
    redis-cli --tls --cacert "$CERTS/ca.crt" -p "$PORT" "$@"
}
rcli() {
    tcli "$@"
}

# Prints how many connections the TLS server has seen so far: those it
# took (total_connections_received, one of them this count's own) and
# those whose TLS handshake failed, which only its log tells.
connections() {
    local taken failed
    taken=$(tcli info stats | tr -d '\r' |
        sed -n 's/^total_connections_received://p')
    failed=$(grep -c "Error accepting a client connection" \
        "$SCRATCH/redis-$PORT.log")
    echo $((taken + failed))
}

test_lock_over_tls_with_cacert() {
    run_cli --url "rediss://127.0.0.1:$PORT" --cacert "$CERTS/ca.crt" \
        lock tls -- sh -c 'redis-cli --tls --cacert "$1" -p "$2" hlen tls' \
        sh "$CERTS/ca.crt" "$PORT"
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" 1 "the lock, seen from the command"
    expect_eq "$err" "" "stderr"
    expect_eq "$(tcli exists tls)" 0 "lock left behind"
}

test_tls_option_makes_urls_rediss() {
    # --tls turns the plain URL of CREDISSON_URL into rediss://, and the
    # CA comes from CREDISSON_CACERT.
    CREDISSON_CACERT="$CERTS/ca.crt" run_cli --tls lock tls -- echo ran
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" ran "stdout"
    run_cli --tls --cacert "$CERTS/ca.crt" semaphore s available
    expect_eq "$rc" 0 "semaphore available"
    expect_eq "$out" 0 "available permits"
}

test_options_win_over_variables() {
    CREDISSON_CACERT="$CERTS/other.crt" run_cli --tls \
        --cacert "$CERTS/ca.crt" lock tls -- true
    expect_eq "$rc" 0 "--cacert over CREDISSON_CACERT"
    CREDISSON_CACERT="$CERTS/ca.crt" run_cli --tls \
        --cacert "$CERTS/other.crt" lock tls -- true
    expect_eq "$rc" 78 "a wrong --cacert is used, not the variable"
}

test_cacertdir_verifies_the_server() {
    run_cli --tls --cacertdir "$CERTS/cadir" lock tls -- echo ran
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" ran "stdout"
}

test_wrong_ca_exits_78_with_verify_failed() {
    run_cli --tls --cacert "$CERTS/other.crt" lock tls -- touch ran
    expect_eq "$rc" 78 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "certificate verify failed" "stderr"
    [ -e ran ] && fail "the command ran"
    return 0
}

test_sni_names_the_server_to_verify() {
    run_cli --tls --cacert "$CERTS/ca.crt" --sni localhost lock tls -- true
    expect_eq "$rc" 0 "a name the certificate carries"
    CREDISSON_SNI=wrong.example.com run_cli --tls --cacert "$CERTS/ca.crt" \
        lock tls -- true
    expect_eq "$rc" 78 "a name it does not carry"
    expect_lines "$err" 1 "stderr"
}

test_mutual_tls_with_cert_and_key() {
    tcli config set tls-auth-clients yes >/dev/null
    run_cli --tls --cacert "$CERTS/ca.crt" lock mtls -- touch ran
    local without=$rc without_err=$err
    run_cli --tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" \
        --key "$CERTS/client.key" lock mtls -- echo ran
    local with=$rc with_out=$out
    CREDISSON_CERT="$CERTS/client.crt" CREDISSON_KEY="$CERTS/client.key" \
        run_cli --tls --cacert "$CERTS/ca.crt" lock mtls -- true
    local from_env=$rc
    tcli --cert "$CERTS/client.crt" --key "$CERTS/client.key" \
        config set tls-auth-clients no >/dev/null
    [ "$without" = 0 ] && fail "connected without a client certificate"
    expect_contains "$without_err" "give it with --cert F and --key F" \
        "the hint without a certificate"
    [ -e ran ] && fail "the command ran without a client certificate"
    expect_eq "$with" 0 "exit status with --cert and --key"
    expect_eq "$with_out" ran "stdout"
    expect_eq "$from_env" 0 "exit status with CREDISSON_CERT and _KEY"
}

test_insecure_connects_with_a_warning() {
    run_cli --tls --insecure lock tls -- echo ran
    expect_eq "$rc" 0 "exit status"
    expect_eq "$out" ran "stdout"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "not verified" "stderr"
    CREDISSON_INSECURE=1 run_cli --tls lock tls -- true
    expect_eq "$rc" 0 "CREDISSON_INSECURE=1"
    expect_contains "$err" "not verified" "stderr"
}

test_tls_options_without_tls_exit_64() {
    run_cli --url redis://127.0.0.1:1 --cacert "$CERTS/ca.crt" lock x -- true
    expect_eq "$rc" 64 "--cacert on a plain URL"
    expect_contains "$err" "--cacert applies to TLS only" "stderr"
    run_cli --url unix:///tmp/x.sock --tls lock x -- true
    expect_eq "$rc" 64 "--tls on a unix socket"
    expect_contains "$err" "no TLS form" "stderr"
}

test_plain_url_to_tls_port_exits_69_with_hint_without_flooding() {
    local before after t0 t1 ms timeout_ms=$(slow 2000)
    before=$(connections)
    t0=$(epoch_ms)
    run_cli --timeout "${timeout_ms}ms" lock plain --wait 10s -- touch ran
    t1=$(epoch_ms)
    after=$(connections)
    ms=$((t1 - t0))
    # One connection is the count's own.
    echo "    $((after - before - 1)) connection(s) in $ms ms" >&2
    [ $((after - before - 1)) -ge 1 ] || fail "no connection was counted"
    expect_eq "$rc" 69 "exit status"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "TLS" "the hint"
    expect_eq "$(printf '%s' "$err" | grep -o 'TLS' | wc -l)" 1 \
        "the hint, once"
    [ -e ran ] && fail "the command ran"
    [ "$ms" -le $((timeout_ms + $(slow 1000))) ] ||
        fail "took $ms ms, over the $timeout_ms ms timeout"
    [ $(((after - before - 1) * 1000)) -le $((10 * (ms + 1000))) ] ||
        fail "$((after - before - 1)) connections in $ms ms"
    return 0
}

make_certs
tls_up
run_test test_lock_over_tls_with_cacert
run_test test_tls_option_makes_urls_rediss
run_test test_options_win_over_variables
run_test test_cacertdir_verifies_the_server
run_test test_wrong_ca_exits_78_with_verify_failed
run_test test_sni_names_the_server_to_verify
run_test test_mutual_tls_with_cert_and_key
run_test test_insecure_connects_with_a_warning
run_test test_tls_options_without_tls_exit_64
run_test test_plain_url_to_tls_port_exits_69_with_hint_without_flooding
finish
