"""``mnemonic completion bash|zsh|fish``: print the shell completion script.

The script is Typer's own (the one ``--show-completion`` prints): the shell calls
``mnemonic`` back with ``_MNEMONIC_COMPLETE=complete_<shell>`` and Typer answers with the
commands, options and values (``watch --types`` completes event names). Printing it,
rather than Typer's ``--install-completion`` editing rc files, lets the user or a
package put it where their shell looks.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from mnemonic.cli.runtime import emit_line

PROG_NAME = "mnemonic"
COMPLETE_VAR = "_MNEMONIC_COMPLETE"

_HOW = {
    "bash": 'add to ~/.bashrc:  eval "$(mnemonic completion bash)"',
    "zsh": 'add to ~/.zshrc (after compinit):  eval "$(mnemonic completion zsh)"',
    "fish": "mnemonic completion fish > ~/.config/fish/completions/mnemonic.fish",
}


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def script(shell: Shell) -> str:
    """The completion script for ``shell`` (Typer has no public name for this function;
    a test runs the bash script in a real bash, so an upgrade that moves it fails there)."""
    from typer._completion_shared import get_completion_script

    return get_completion_script(prog_name=PROG_NAME, complete_var=COMPLETE_VAR, shell=shell)


def completion(
    shell: Annotated[Shell, typer.Argument(help="The shell to print the script for.")],
) -> None:
    """Print the shell completion script (bash, zsh or fish)."""
    emit_line(script(shell))


def register(app: typer.Typer) -> None:
    app.command(epilog="; ".join(f"{k}: {v}" for k, v in _HOW.items()))(completion)
