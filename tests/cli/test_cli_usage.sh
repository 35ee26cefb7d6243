#!/bin/bash
# SPDX-License-Identifier: MIT
# credisson(1) on bad input and without a server: usage errors (64), an
# unreachable server (69) with the password hidden, help and version. Each
# error must be one line on stderr, and nothing may crash.

. "$(dirname "$0")/lib.sh"

# Checks the last run: exit status $1, nothing on stdout, one line on
# stderr starting with "credisson: " and containing $2.
expect_usage_error() {
    expect_eq "$rc" "$1" "exit status"
    expect_eq "$out" "" "stdout"
    expect_lines "$err" 1 "stderr"
    expect_contains "$err" "credisson: " "stderr"
    expect_contains "$err" "$2" "stderr"
}

test_unknown_option_exits_64() {
    run_cli lock jobs --frobnicate -- true
    expect_usage_error 64 "unknown option '--frobnicate'"
}

test_malformed_duration_exits_64() {
    run_cli lock jobs --wait 5parsecs -- true
    expect_usage_error 64 "invalid duration '5parsecs' for --wait"
    run_cli lock jobs --lease -3 -- true
    expect_usage_error 64 "invalid duration"
    run_cli lock jobs --wait 1m30 -- true
    expect_usage_error 64 "a number after a unit needs its own unit (1m30s)"
}

test_missing_command_exits_64() {
    run_cli
    expect_usage_error 64 "missing command"
    run_cli lock jobs --
    expect_usage_error 64 "missing the command to run"
    run_cli semaphore s
    expect_usage_error 64 "missing the command to run"
    run_cli lock
    expect_usage_error 64 "missing NAME"
}

test_unknown_command_exits_64() {
    run_cli frobnicate jobs
    expect_usage_error 64 "unknown command 'frobnicate'"
    run_cli latch jobs open
    expect_usage_error 64 "unknown latch action 'open'"
}

test_option_of_another_command_exits_64() {
    run_cli inspect jobs --wait 1
    expect_usage_error 64 "does not apply"
    run_cli lock jobs --read --write -- true
    expect_usage_error 64 "exclude each other"
}

test_control_characters_are_not_echoed() {
    run_cli "$(printf 'bad\033[31mcommand')" x
    expect_usage_error 64 "unknown command"
    expect_not_contains "$err" "$(printf '\033')" "stderr"
}

test_unreachable_server_exits_69_with_password_hidden() {
    run_cli --url "redis://app:s3cr3t@127.0.0.1:1" --timeout 2s lock jobs -- true
    expect_usage_error 69 "redis://app:***@127.0.0.1:1"
    expect_not_contains "$err" "s3cr3t" "stderr"
    run_cli --url "redis://:s3cr3t@127.0.0.1:1" inspect jobs --json
    expect_usage_error 69 "redis://:***@127.0.0.1:1"
    expect_not_contains "$err" "s3cr3t" "stderr"
}

test_url_from_environment_is_used() {
    CREDISSON_URL="redis://:hush@127.0.0.1:1/3" run_cli latch l count
    expect_usage_error 69 "redis://:***@127.0.0.1:1/3"
    expect_not_contains "$err" "hush" "stderr"
}

test_invalid_url_exits_64_without_password() {
    run_cli --url "rediss-unix://:s3cr3t@/tmp/sock" inspect jobs
    expect_usage_error 64 "bad URL: unknown scheme"
    expect_not_contains "$err" "s3cr3t" "stderr"
    run_cli --url "redis://:s3cr3t@127.0.0.1:99999" semaphore s available
    expect_usage_error 64 "bad URL: port"
    expect_not_contains "$err" "s3cr3t" "stderr"
    CREDISSON_URL="redis://:s3cr3t@127.0.0.1:99999" run_cli latch l count
    expect_usage_error 64 "(the URL is CREDISSON_URL's)"
    expect_not_contains "$err" "s3cr3t" "stderr"
}

test_empty_url_option_exits_64() {
    # --url "$UNSET_VARIABLE" must not quietly mean the local server.
    CREDISSON_URL="redis://127.0.0.1:1" run_cli --url "" latch l count
    expect_usage_error 64 "--url is empty"
}

test_help_shows_usage_and_exit_codes() {
    local form
    for form in "--help" "help" "-h"; do
        run_cli $form
        expect_eq "$rc" 0 "exit status of $form"
        expect_contains "$out" "Usage: credisson" "$form"
        expect_contains "$out" "Exit status:" "$form"
        expect_contains "$out" "76" "$form"
        expect_eq "$err" "" "stderr of $form"
    done
    run_cli help lock
    expect_contains "$out" "Usage: credisson lock NAME" "help lock"
    run_cli semaphore --help
    expect_contains "$out" "Usage: credisson semaphore NAME" "semaphore --help"
    run_cli latch x -h
    expect_contains "$out" "Usage: credisson latch NAME" "latch -h"
    run_cli inspect --help
    expect_contains "$out" "Usage: credisson inspect NAME" "inspect --help"
    run_cli help barrier
    expect_contains "$out" "Usage: credisson barrier NAME --parties N" \
        "help barrier"
    expect_contains "$out" "-w, --wait D" "help barrier lists --wait"
    run_cli help unlock
    expect_contains "$out" "Usage: credisson unlock --force NAME" \
        "help unlock"
}

# A word after NAME that is a slip of an action is refused at once, not
# run as the command (after a wait); after '--' it is the command's.
test_slip_of_an_action_exits_64_before_anything() {
    run_cli --url redis://127.0.0.1:1 semaphore s avaliable
    expect_usage_error 64 "'avaliable' is not an action of semaphore (set, add or available); did you mean 'available'?"
    run_cli --url redis://127.0.0.1:1 barrier b --parties 2 reste
    expect_usage_error 64 "did you mean 'reset'?"
    run_cli --url redis://127.0.0.1:1 ratelimit r set-rat 1/1s
    expect_usage_error 64 "did you mean 'set-rate'?"
}

# CMD is looked up on PATH before anything is asked of Redis: here the
# server is unreachable, so 69 would mean it was tried first.
test_command_to_run_is_looked_up_before_connecting() {
    local t0 t1
    t0=$(epoch_ms)
    run_cli --url redis://127.0.0.1:1 lock pre --wait 20m -- no-such-command
    t1=$(epoch_ms)
    expect_usage_error 127 "cannot run 'no-such-command': No such file"
    [ $((t1 - t0)) -lt $(slow 2000) ] || fail "took $((t1 - t0)) ms"
    run_cli --url redis://127.0.0.1:1 semaphore s acquire
    expect_usage_error 127 "cannot run 'acquire'"
    printf 'data\n' >plain
    chmod 644 plain
    run_cli --url redis://127.0.0.1:1 ratelimit r -- ./plain
    expect_usage_error 126 "cannot run './plain': Permission denied"
    mkdir dir
    run_cli --url redis://127.0.0.1:1 barrier b --parties 2 -- ./dir
    expect_usage_error 126 "cannot run './dir'"
    run_cli --url redis://127.0.0.1:1 lock pre -- /no/such/path
    expect_usage_error 127 "cannot run '/no/such/path'"
}

# Prints the options a help text lists, one "--name ARG" (or "--name") a
# line, from its lines "  -w, --wait D  ..." and "  --lease D  ...".
help_options() {
    sed -n 's/^  \(-[A-Za-z], \)\{0,1\}\(--[a-z-]*\)\( [A-Z][A-Z]*\)\{0,1\}.*/\2\3/p'
}

# The commands the main --help lists, one a line.
help_commands() {
    cli --help | sed -n '/^Commands:/,/^$/p' |
        sed -n 's/^  \([a-z][a-z]*\).*/\1/p' | sort -u
}

# Help is made from the parser's own table: for each command, every option
# its --help lists is taken there, and every other option of the tool
# (from the main --help) is refused there as one that does not apply. The
# lines are parsed, then fail on the unreachable server (69) or on what
# the option's value says, never as unknown.
test_help_lists_exactly_the_options_each_command_takes() {
    local url=redis://127.0.0.1:1 all cmd listed opt name arg val line
    local cmds="lock semaphore latch barrier ratelimit unlock delete"
    expect_eq "$(help_commands | tr '\n' ' ')" \
        "barrier delete help inspect latch lock ratelimit semaphore unlock version " \
        "the commands --help lists"
    all=$( (cli --help; for cmd in $cmds; do cli "$cmd" --help; done) |
        help_options | sort -u)
    for cmd in $cmds; do
        listed=$(cli "$cmd" --help | help_options)
        case "$listed" in *"--verbose"*) ;;
        *) fail "$cmd --help does not list -v, --verbose" ;; esac
        while read -r name arg; do
            val=
            [ -n "$arg" ] && val=3
            [ "$arg" = D ] && val=1s
            [ "$arg" = R ] && val=2/1s # R/INTERVAL
            case $cmd in
            lock) line=(lock jobs "$name" $val -- true) ;;
            semaphore) line=(semaphore s "$name" $val -- true) ;;
            latch) line=(latch l await "$name" $val) ;;
            barrier) line=(barrier b --parties 2 "$name" $val -- true) ;;
            ratelimit) line=(ratelimit r --rate 2/1s --keep-alive 1m
                "$name" $val -- true) ;;
            unlock) line=(unlock --force x "$name" $val) ;;
            delete) line=(delete x "$name" $val) ;;
            esac
            run_cli_direct --url "$url" "${line[@]}"
            expect_not_contains "$err" "unknown option" "${line[*]}"
            if printf '%s\n' "$listed" | grep -qx -- "$name${arg:+ $arg}"; then
                expect_not_contains "$err" "does not apply" "${line[*]}"
            else
                expect_usage_error 64 "option $name does not apply"
            fi
        done <<<"$all"
    done
}

# Prints the exit statuses listed after "Exit status:" in --help, one a
# line.
help_statuses() {
    cli --help | sed -n '/^Exit status:/,$p' |
        sed -n 's/^  \([0-9][0-9]*\) .*/\1/p'
}

test_exit_status_table_is_the_same_in_help_man_page_and_code() {
    local help man code
    help=$(help_statuses | sort -n | tr '\n' ' ')
    man=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' \
        "$CR_TEST_SRCDIR/doc/man1/credisson.1" |
        sed -n 's/^\.B \([0-9][0-9]*\)$/\1/p' | sort -n | tr '\n' ' ')
    code=$(sed -n 's/^#define CR__CLI_EXIT_[A-Z_]* \([0-9][0-9]*\).*/\1/p' \
        "$CR_TEST_SRCDIR/src/cli/cli.h" | sort -n | tr '\n' ' ')
    expect_eq "$help" "0 64 69 70 71 74 75 76 77 78 79 126 127 " "--help"
    expect_eq "$man" "$help" "credisson(1)"
    expect_eq "$code" "$help" "cli.h"
}

test_version_shows_versions() {
    run_cli --version
    expect_eq "$rc" 0 "exit status"
    expect_contains "$out" "credisson " "stdout"
    expect_contains "$out" "(library " "stdout"
    run_cli version
    expect_eq "$rc" 0 "exit status of version"
}

# The command line is read with getopt_long: short options bundle, values
# attach. These are parsed, then fail on the unreachable server (69), not
# as usage errors.
test_bundled_and_attached_options_are_read() {
    local url=redis://127.0.0.1:1
    run_cli -vV
    expect_eq "$rc" 0 "exit status of -vV"
    expect_contains "$out" "(library " "-vV"
    run_cli lock -vh
    expect_eq "$rc" 0 "exit status of lock -vh"
    expect_contains "$out" "Usage: credisson lock NAME" "lock -vh"
    run_cli --url "$url" --timeout 1s lock jobs -vw5 -- true
    expect_usage_error 69 "127.0.0.1:1"
    run_cli --url="$url" --timeout=1s lock -w0 jobs --wait=5 true
    expect_usage_error 69 "127.0.0.1:1"
    run_cli --url "$url" semaphore s -vw 1s --permits=2 true
    expect_usage_error 69 "127.0.0.1:1"
}

test_missing_name_exits_64() {
    run_cli lock -- true
    expect_usage_error 64 "missing NAME after 'lock'"
    run_cli semaphore --wait 5 -- true
    expect_usage_error 64 "missing NAME after 'semaphore'"
    run_cli inspect --json
    expect_usage_error 64 "missing NAME after 'inspect'"
}

# Without --, a word starting with '-' after NAME is an option of the
# tool; after --, every word is the command's.
test_command_that_looks_like_an_option() {
    run_cli lock jobs -x
    expect_usage_error 64 "unknown option '-x' for lock"
    expect_contains "$err" "goes after '--'" "stderr"
    # A program named "-x" on PATH, reached after '--'.
    printf '#!/bin/sh\nexit 0\n' >-x
    chmod +x -- -x
    PATH="$PWD:$PATH" run_cli --url redis://127.0.0.1:1 lock jobs -- -x
    expect_usage_error 69 "127.0.0.1:1"
}

test_unknown_option_at_each_stage_exits_64() {
    run_cli --frob lock jobs -- true
    expect_usage_error 64 "unknown option '--frob'"
    run_cli lock --frob jobs -- true
    expect_usage_error 64 "unknown option '--frob' for lock"
    run_cli lock jobs -vk -- true
    expect_usage_error 64 "unknown option '-k' in '-vk'"
    run_cli latch jobs await --frob
    expect_usage_error 64 "unknown option '--frob' for latch"
    # No long option is taken by its beginning.
    run_cli lock jobs --wai 5 -- true
    expect_usage_error 64 "unknown option '--wai'"
}

test_command_option_before_command_word_exits_64() {
    run_cli --wait 5 lock jobs -- true
    expect_usage_error 64 "option --wait comes after the command word"
    run_cli -w5 semaphore s -- true
    expect_usage_error 64 "option -w comes after the command word"
    run_cli --fenced lock jobs -- true
    expect_usage_error 64 "option --fenced comes after the command word"
}

test_man_page_is_clean() {
    command -v groff >/dev/null || return 0
    local w
    w=$(groff -man -Tutf8 -ww -z "$CR_TEST_SRCDIR/doc/man1/credisson.1" 2>&1)
    expect_eq "$w" "" "groff warnings"
}

run_test test_unknown_option_exits_64
run_test test_malformed_duration_exits_64
run_test test_missing_command_exits_64
run_test test_unknown_command_exits_64
run_test test_option_of_another_command_exits_64
run_test test_control_characters_are_not_echoed
run_test test_unreachable_server_exits_69_with_password_hidden
run_test test_url_from_environment_is_used
run_test test_invalid_url_exits_64_without_password
run_test test_empty_url_option_exits_64
run_test test_help_shows_usage_and_exit_codes
run_test test_help_lists_exactly_the_options_each_command_takes
run_test test_exit_status_table_is_the_same_in_help_man_page_and_code
run_test test_version_shows_versions
run_test test_man_page_is_clean
run_test test_bundled_and_attached_options_are_read
run_test test_missing_name_exits_64
run_test test_command_that_looks_like_an_option
run_test test_unknown_option_at_each_stage_exits_64
run_test test_command_option_before_command_word_exits_64
run_test test_slip_of_an_action_exits_64_before_anything
run_test test_command_to_run_is_looked_up_before_connecting
finish
