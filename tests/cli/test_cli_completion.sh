#!/bin/bash
# SPDX-License-Identifier: MIT
# The shell completion installed with credisson(1): the bash file is
# sourced and asked to complete command lines as bash would (COMP_WORDS,
# COMP_CWORD); its options must be those each command's --help lists. The
# zsh file is checked for syntax when zsh is there.

. "$(dirname "$0")/lib.sh"

BASH_FILE="$CR_TEST_SRCDIR/completions/bash/credisson"
ZSH_FILE="$CR_TEST_SRCDIR/completions/zsh/_credisson"

# Completes the words "$@" (the last one being completed) with the bash
# completion, in a shell where credisson is the built one; prints the
# candidates, one a line, sorted.
complete_words() {
    PATH="$CR_TEST_BUILDDIR:$PATH" bash -c '
        . "$1"
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _credisson
        printf "%s\n" "${COMPREPLY[@]}"' _ "$BASH_FILE" "$@" | sort
}

test_bash_completion_registers_and_completes_commands() {
    local got
    got=$(bash -c '. "$1"; complete -p credisson' _ "$BASH_FILE")
    expect_contains "$got" "-F _credisson" "complete -p"
    got=$(complete_words credisson "" | tr '\n' ' ')
    expect_eq "$got" "help inspect latch lock semaphore version " "commands"
    got=$(complete_words credisson --url redis://h:1 la | tr '\n' ' ')
    expect_eq "$got" "latch " "after a global option and its value"
    got=$(complete_words credisson help l | tr '\n' ' ')
    expect_eq "$got" "latch lock " "help COMMAND"
}

test_bash_completion_completes_actions_and_the_command_to_run() {
    local got
    got=$(complete_words credisson latch build "" | tr '\n' ' ')
    expect_eq "$got" "await count count-down set " "latch actions"
    got=$(complete_words credisson semaphore s av | tr '\n' ' ')
    expect_contains "$got" "available" "semaphore actions"
    got=$(complete_words credisson lock jobs -w 5 -- bas)
    expect_contains "$got" "bash" "the command to run after --"
    got=$(complete_words credisson lock jobs --wait=5 bas)
    expect_contains "$got" "bash" "the command to run after --wait=5"
}

# The options offered for a command are exactly those its --help lists
# (which the parser's own table prints), for every command.
test_bash_completion_offers_the_options_of_help() {
    local cmd got want
    for cmd in lock semaphore latch inspect; do
        case $cmd in
        latch) got=$(complete_words credisson latch name await --) ;;
        *) got=$(complete_words credisson "$cmd" name --) ;;
        esac
        want=$( (cli --help; cli "$cmd" --help) |
            sed -n 's/^  \(-[A-Za-z], \)\{0,1\}\(--[a-z-]*\).*/\2/p' | sort -u)
        expect_eq "$got" "$want" "options of $cmd"
    done
    got=$(complete_words credisson lock jobs -q | tr '\n' ' ')
    expect_eq "$got" "-q " "a short option"
}

test_bash_completion_completes_option_values() {
    local got
    touch pw.txt
    got=$(cd "$SCRATCH/t" && complete_words credisson --password-file pw)
    expect_eq "$got" "pw.txt" "a file for --password-file"
    got=$(complete_words credisson lock jobs --wait "")
    expect_eq "$got" "forever" "--wait"
    got=$(complete_words credisson --url redis-s)
    expect_eq "$got" "redis-sentinel://" "--url"
}

test_zsh_completion_parses() {
    command -v zsh >/dev/null || return 0
    zsh -n "$ZSH_FILE" || fail "zsh -n $ZSH_FILE"
}

run_test test_bash_completion_registers_and_completes_commands
run_test test_bash_completion_completes_actions_and_the_command_to_run
run_test test_bash_completion_offers_the_options_of_help
run_test test_bash_completion_completes_option_values
run_test test_zsh_completion_parses
finish
