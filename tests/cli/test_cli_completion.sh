#!/bin/bash
# SPDX-License-Identifier: MIT
# The shell completion installed with credisson(1), for bash and for zsh:
# the bash file is sourced and asked to complete command lines as bash
# would (COMP_WORDS, COMP_CWORD); the zsh file completes them in an
# interactive zsh on a pseudo-terminal (zsh_complete.zsh). For every
# command the main help lists, both must offer exactly the options its
# --help lists, and its actions; the commands themselves are those of the
# main help. zsh is a dependency of the tests (scripts/setup.sh and CI
# install it): without it the zsh tests fail, they do not pass.

. "$(dirname "$0")/lib.sh"

BASH_FILE="$CR_TEST_SRCDIR/completions/bash/credisson"
ZSH_DIR="$CR_TEST_SRCDIR/completions/zsh"

# Completes the words "$@" (the last one being completed) with the bash
# completion, in a shell where credisson is the built one; prints the
# candidates, one a line, sorted, each once (as bash shows them).
complete_words() {
    PATH="$CR_TEST_BUILDDIR:$PATH" bash -c '
        . "$1"
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _credisson
        printf "%s\n" "${COMPREPLY[@]}"' _ "$BASH_FILE" "$@" | sort -u
}

# Completes the line $1 (what is typed before TAB) with the zsh
# completion; prints the candidates, one a line, sorted. Fails the test
# without zsh, or when the completion does not finish.
zsh_complete() {
    command -v zsh >/dev/null ||
        fail "zsh not found: install zsh (scripts/setup.sh does)"
    PATH="$CR_TEST_BUILDDIR:$PATH" zsh "$CR_TEST_SRCDIR/tests/cli/zsh_complete.zsh" \
        "$ZSH_DIR" "$1" >zsh.out || fail "zsh did not complete '$1'"
    sort -u zsh.out
}

# The commands the main --help lists, one a line, sorted.
help_commands() {
    cli --help | sed -n '/^Commands:/,/^$/p' |
        sed -n 's/^  \([a-z][a-z-]*\).*/\1/p' | sort -u
}

# The long options (and short ones) the help of every command and of
# command $1 lists, one a line, sorted.
help_options() {
    (cli --help; cli "$1" --help) |
        sed -n 's/^  \(-\([A-Za-z]\), \)\{0,1\}\(--[a-z-]*\).*/\3\n-\2/p' |
        grep -v '^-$' | sort -u
}

# The actions command $1's help lists in its forms, one a line, sorted.
help_actions() {
    cli "$1" --help | sed -n "s/^\(Usage:\)\{0,1\} *credisson $1 NAME //p" |
        sed 's/ | /\n/g' | sed -n 's/^\([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p' |
        sort -u
}

# A line that stands after NAME of command $1, where its options go.
after_name() {
    case $1 in
    latch) echo "latch x await" ;;
    *) echo "$1 x" ;;
    esac
}

test_bash_completion_registers_and_completes_commands() {
    local got
    got=$(bash -c '. "$1"; complete -p credisson' _ "$BASH_FILE")
    expect_contains "$got" "-F _credisson" "complete -p"
    got=$(complete_words credisson "")
    expect_eq "$got" "$(help_commands)" "the commands of --help"
    expect_contains "$(echo $got)" "barrier delete help inspect latch lock ratelimit semaphore unlock version" \
        "every command"
    got=$(complete_words credisson --url redis://h:1 la | tr '\n' ' ')
    expect_eq "$got" "latch " "after a global option and its value"
    got=$(complete_words credisson help l | tr '\n' ' ')
    expect_eq "$got" "latch lock " "help COMMAND"
}

test_bash_completion_completes_actions_and_the_command_to_run() {
    local got cmd
    for cmd in $(help_commands); do
        [ "$cmd" = help ] || [ "$cmd" = version ] && continue
        [ -z "$(help_actions "$cmd")" ] && continue
        got=$(complete_words credisson "$cmd" name "" | grep -x -F -f <(help_actions "$cmd"))
        expect_eq "$got" "$(help_actions "$cmd")" "actions of $cmd"
    done
    expect_eq "$(help_actions barrier)" "reset" "barrier's actions"
    expect_eq "$(help_actions ratelimit | tr '\n' ' ')" "available set-rate " \
        "ratelimit's actions"
    got=$(complete_words credisson semaphore s av | tr '\n' ' ')
    expect_contains "$got" "available" "semaphore actions"
    got=$(complete_words credisson lock jobs -w 5 -- bas)
    expect_contains "$got" "bash" "the command to run after --"
    got=$(complete_words credisson lock jobs --wait=5 bas)
    expect_contains "$got" "bash" "the command to run after --wait=5"
    got=$(complete_words credisson barrier b --parties 2 bas)
    expect_contains "$got" "bash" "barrier's command to run"
    got=$(complete_words credisson latch l bas)
    expect_eq "$got" "" "latch runs no command"
}

# The options offered for a command are exactly those its --help lists
# (which the parser's own table prints), for every command.
test_bash_completion_offers_the_options_of_help() {
    local cmd got want
    for cmd in $(help_commands); do
        [ "$cmd" = help ] || [ "$cmd" = version ] && continue
        # shellcheck disable=SC2046
        got=$(complete_words credisson $(after_name "$cmd") -)
        want=$(help_options "$cmd")
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
    got=$(complete_words credisson ratelimit r --rate "")
    expect_eq "$got" "" "--rate takes a value, not a word offered"
}

test_zsh_completion_completes_commands_and_actions() {
    local got cmd
    command -v zsh >/dev/null ||
        fail "zsh not found: install zsh (scripts/setup.sh does)"
    zsh -n "$ZSH_DIR/_credisson" || fail "zsh -n"
    got=$(zsh_complete "credisson ")
    expect_eq "$got" "$(help_commands)" "the commands of --help"
    got=$(zsh_complete "credisson help ")
    expect_eq "$got" "$(help_commands | grep -vx help)" "help COMMAND"
    for cmd in $(help_commands); do
        [ "$cmd" = help ] || [ "$cmd" = version ] && continue
        [ -z "$(help_actions "$cmd")" ] && continue
        got=$(zsh_complete "credisson $cmd x " |
            grep -x -F -f <(help_actions "$cmd"))
        expect_eq "$got" "$(help_actions "$cmd")" "actions of $cmd"
    done
    got=$(zsh_complete "credisson lock x -- ba")
    expect_contains "$got" "bash" "the command to run after --"
    got=$(zsh_complete "credisson barrier b --parties 2 ba")
    expect_contains "$got" "bash" "barrier's command to run"
}

test_zsh_completion_offers_the_options_of_help() {
    local cmd got want
    for cmd in $(help_commands); do
        [ "$cmd" = help ] || [ "$cmd" = version ] && continue
        got=$(zsh_complete "credisson $(after_name "$cmd") --" | grep '^--')
        want=$(help_options "$cmd" | grep '^--')
        expect_eq "$got" "$want" "options of $cmd"
    done
    got=$(zsh_complete "credisson --url redis-s")
    expect_eq "$got" "redis-sentinel://" "--url"
}

test_zsh_completion_offers_the_options_of_help_before_the_command() {
    local got want
    got=$(zsh_complete "credisson --" | grep '^--')
    want=$(cli --help | sed -n 's/^  \(-[A-Za-z], \)\{0,1\}\(--[a-z-]*\).*/\2/p' |
        sort -u)
    expect_eq "$got" "$want" "options of every command"
}

run_test test_bash_completion_registers_and_completes_commands
run_test test_bash_completion_completes_actions_and_the_command_to_run
run_test test_bash_completion_offers_the_options_of_help
run_test test_bash_completion_completes_option_values
run_test test_zsh_completion_completes_commands_and_actions
run_test test_zsh_completion_offers_the_options_of_help
run_test test_zsh_completion_offers_the_options_of_help_before_the_command
finish
