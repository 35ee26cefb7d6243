#!/usr/bin/env zsh
# SPDX-License-Identifier: MIT
# Completes a command line with a zsh completion function, as an
# interactive zsh would on TAB, and prints the candidates one a line.
# Usage: zsh_complete.zsh DIR LINE
#   DIR holds the completion file (_credisson); LINE is what is typed
#   before the TAB ("credisson lock x -").
# The completion runs in an interactive zsh on a pseudo-terminal (zpty),
# where compadd is wrapped to print what it adds after matching; the
# candidates are read back until a marker the completion's end prints.
# Exits 2 when the completion did not finish within 20 seconds.

emulate -L zsh
zmodload zsh/zpty || exit 2
local dir=$1 typed=$2 out chunk
local mark=$'\x1e''credisson-completion-done'

zpty cz zsh -f -i
zpty -w cz "PS1= PS2= RPS1= PROMPT_EOL_MARK=''"
zpty -w cz "unset zle_bracketed_paste; setopt no_beep"
zpty -w cz "fpath=(${(q)dir} \$fpath)"
zpty -w cz "autoload -Uz compinit && compinit -u -D"
zpty -w cz "zstyle ':completion:*' list-prompt ''"
zpty -w cz "zstyle ':completion:*' select-prompt ''"
# Each candidate as it is added (after matching what was typed); calls
# that only ask (-O, -A, -D) pass through untouched.
zpty -w cz 'compadd() {
  if [[ ${${@[1,(i)(-|--)]}} == *-(O|A|D)* ]]; then
    builtin compadd "$@"; return $?
  fi
  local -a __hits
  builtin compadd -A __hits "$@"
  local __h
  for __h in $__hits; do print -r -- $'"'"'\n'"'"'"<hit>"$__h; done
  builtin compadd "$@"
}'
zpty -w cz "__done() { print -r -- \$'\\n'${(q)mark} }"
zpty -w cz "comppostfuncs=(__done)"
zpty -w cz "bindkey '^I' complete-word"
zpty -n -w cz "$typed"$'\t'

out=
local start=$SECONDS
while (( SECONDS - start < 20 )); do
  zpty -r -t cz chunk || { sleep 0.05; continue }
  out+=$chunk
  [[ $out == *$mark* ]] && break
done
zpty -d cz
[[ $out == *$mark* ]] || exit 2
print -r -- ${(F)${(u)${(M)${(f)${out//$'\r'/}}:#<hit>*}#<hit>}}
