"""``mnemonic shell-hook bash|zsh|fish``: print an opt-in hook that records each command
with its working folder and exit status.

History files do not say where a command ran or whether it failed (bash and zsh record
neither; fish records neither either), so a command from them has no project and a failure
looks like a success. The hook writes what the shell knows at the next prompt as one JSON
line, ``{"v":1,"shell":"bash","t":<epoch>,"status":<exit>,"cwd":"...","cmd":"..."}``, to
``<data>/shell-hook.jsonl``, which the terminal watcher reads like a history file.

The hook never talks to the daemon: it appends one line with the shell's own ``printf``
(no network, nothing to wait for; a stopped daemon reads the lines later). The file is
created private to the user (0600). bash needs one fork per prompt to read ``history 1``
(about a millisecond); zsh needs none; fish forks ``date`` once per command.
"""

from __future__ import annotations

import shlex
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from mnemonic.cli.runtime import emit_line
from mnemonic.paths import resolve_paths

HOOK_FILE = "shell-hook.jsonl"


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


_HOW = {
    "bash": 'add to ~/.bashrc:  eval "$(mnemonic shell-hook bash)"',
    "zsh": 'add to ~/.zshrc:  eval "$(mnemonic shell-hook zsh)"',
    "fish": "add to ~/.config/fish/config.fish:  mnemonic shell-hook fish | source",
}

# The JSON escaping is done with the shells' own substitutions (backslash, quote, newline,
# tab, carriage return); other control characters are rare and the reader accepts them.
_BASH = r"""# mnemonic shell hook (bash): one JSON line per command, read by the terminal watcher
__mnemonic_hook_file=@FILE@
__mnemonic_json() {
  local v=$1
  v=${v//\\/\\\\}; v=${v//\"/\\\"}; v=${v//$'\n'/\\n}; v=${v//$'\t'/\\t}; v=${v//$'\r'/\\r}
  __mnemonic_out=$v
}
__mnemonic_hook() {
  local s=$? l n c d t
  l=$(HISTTIMEFORMAT= builtin history 1)
  if [[ $l =~ ^[[:space:]]*([0-9]+)[*]?[[:space:]]+(.*)$ ]]; then
    n=${BASH_REMATCH[1]}; c=${BASH_REMATCH[2]}
  else
    n=0; c=
  fi
  # the first prompt, an empty line or a command kept out of history: nothing new
  if [[ -z ${__mnemonic_last+x} || $n == "$__mnemonic_last" || -z $c ]]; then
    __mnemonic_last=$n; return $s
  fi
  __mnemonic_last=$n
  __mnemonic_json "$c"; c=$__mnemonic_out
  __mnemonic_json "$PWD"; d=$__mnemonic_out
  printf -v t '%(%s)T' -1
  [[ -e $__mnemonic_hook_file ]] || (umask 077; : >>"$__mnemonic_hook_file") 2>/dev/null
  printf '{"v":1,"shell":"bash","t":%s,"status":%s,"cwd":"%s","cmd":"%s"}\n' \
    "$t" "$s" "$d" "$c" >>"$__mnemonic_hook_file" 2>/dev/null
  return $s
}
if [[ ${PROMPT_COMMAND-} != *__mnemonic_hook* ]]; then
  PROMPT_COMMAND="__mnemonic_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
"""

_ZSH = r"""# mnemonic shell hook (zsh): one JSON line per command, read by the terminal watcher
zmodload -F zsh/datetime p:EPOCHSECONDS 2>/dev/null
typeset -g __mnemonic_hook_file=@FILE@
__mnemonic_json() {
  local v=$1
  v=${v//\\/\\\\}; v=${v//\"/\\\"}; v=${v//$'\n'/\\n}; v=${v//$'\t'/\\t}; v=${v//$'\r'/\\r}
  typeset -g __mnemonic_out=$v
}
__mnemonic_preexec() { typeset -g __mnemonic_cmd=$1 }
__mnemonic_precmd() {
  local s=$?
  [[ -n ${__mnemonic_cmd-} ]] || return $s
  local c d
  __mnemonic_json "$__mnemonic_cmd"; c=$__mnemonic_out
  __mnemonic_json "$PWD"; d=$__mnemonic_out
  unset __mnemonic_cmd
  [[ -e $__mnemonic_hook_file ]] || (umask 077; : >>| "$__mnemonic_hook_file") 2>/dev/null
  printf '{"v":1,"shell":"zsh","t":%s,"status":%s,"cwd":"%s","cmd":"%s"}\n' \
    "${EPOCHSECONDS:-0}" "$s" "$d" "$c" >>| "$__mnemonic_hook_file" 2>/dev/null
  return $s
}
if (( ! ${precmd_functions[(I)__mnemonic_precmd]} )); then
  preexec_functions+=(__mnemonic_preexec)
  precmd_functions=(__mnemonic_precmd $precmd_functions)  # first: $? is the command's
fi
"""

_FISH = r"""# mnemonic shell hook (fish): one JSON line per command, read by the terminal watcher
set -g __mnemonic_hook_file @FILE@
function __mnemonic_json
    string replace -a -- '\\' '\\\\' $argv[1] | string replace -a -- '"' '\\"' \
        | string replace -a -- \t '\\t' | string replace -a -- \r '\\r' | string join -- '\n'
end
function __mnemonic_postexec --on-event fish_postexec
    set -l s $status
    test -n "$argv[1]"; or return
    if not test -e $__mnemonic_hook_file
        set -l old (umask)
        umask 077
        touch $__mnemonic_hook_file 2>/dev/null
        umask $old
    end
    printf '{"v":1,"shell":"fish","t":%s,"status":%s,"cwd":"%s","cmd":"%s"}\n' \
        (date +%s) $s (__mnemonic_json $PWD) (__mnemonic_json $argv[1]) \
        >>$__mnemonic_hook_file 2>/dev/null
end
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def snippet(shell: Shell, hook_file: Path) -> str:
    """The hook for ``shell``, writing to ``hook_file``."""
    if shell is Shell.fish:
        return _FISH.replace("@FILE@", _fish_quote(str(hook_file)))
    template = _ZSH if shell is Shell.zsh else _BASH
    return template.replace("@FILE@", shlex.quote(str(hook_file)))


def hook_file() -> Path:
    return resolve_paths().data_dir / HOOK_FILE


def shell_hook(
    shell: Annotated[Shell, typer.Argument(help="The shell to print the hook for.")],
) -> None:
    """Print a hook that records each command's folder and exit status (opt-in)."""
    emit_line(snippet(shell, hook_file()).rstrip("\n"))


def register(app: typer.Typer) -> None:
    app.command("shell-hook", epilog="; ".join(f"{k}: {v}" for k, v in _HOW.items()))(shell_hook)
