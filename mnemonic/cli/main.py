"""The ``mnemonic`` command. Every command but ``serve`` is a client of the daemon's REST
API (the CLI never opens the database). Data goes to stdout, messages to stderr; exit
codes follow sysexits (see ``mnemonic.cli.exits`` and the ``--help`` epilog).

Commands live in one module each and add themselves with ``register(app)``; this module
builds the app, holds the small commands and maps click's usage errors to 64.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from mnemonic import __version__
from mnemonic.cli import (
    abstractions,
    agents,
    browse,
    completion,
    config_cmd,
    consolidation,
    doctor,
    episodes,
    insights,
    llm,
    mcp,
    memories,
    meta,
    open_cmd,
    purge,
    reactor,
    reencode,
    service,
    shell_hook,
    status,
    supersede,
    watch,
)
from mnemonic.cli.exits import (
    CLICK_USAGE,
    EPILOG,
    EX_CONFIG,
    EX_DATAERR,
    EX_SOFTWARE,
    EX_TEMPFAIL,
    EX_UNAVAILABLE,
    EX_USAGE,
)
from mnemonic.cli.runtime import emit_json, emit_line, err, load, parse_assignments, set_flags
from mnemonic.cli.runtime import token as read_token
from mnemonic.paths import resolve_paths

__all__ = [
    "EX_CONFIG",
    "EX_DATAERR",
    "EX_SOFTWARE",
    "EX_TEMPFAIL",
    "EX_UNAVAILABLE",
    "EX_USAGE",
    "app",
    "main",
]

app = typer.Typer(
    help="mnemonic: a local memory daemon for LLM agents.",
    epilog=EPILOG,
    no_args_is_help=True,
)


@app.callback()
def root(
    assignments: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Override a setting for this command, e.g. --set server.port=9998 "
            "(a flag: stronger than MNEMONIC_* variables and config.yaml). Repeatable.",
        ),
    ] = None,
) -> None:
    """mnemonic: a local memory daemon for LLM agents."""
    try:
        set_flags(parse_assignments(assignments or []))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--set") from None


@app.command()
def serve(
    port: Annotated[int | None, typer.Option(help="Port (default from config, 9999).")] = None,
) -> None:
    """Run the daemon in the foreground."""
    from mnemonic.daemon import serve as run_server

    cfg, paths = load({"server": {"port": port}} if port is not None else None)
    code = run_server(cfg, paths)
    if code:
        raise typer.Exit(code)


@app.command()
def token() -> None:
    """Print the API token (for Authorization: Bearer)."""
    paths = resolve_paths()  # not load(): a broken config.yaml must not hide the token
    value = read_token(paths)
    if not value:
        err.print("no token yet: start the daemon once (mnemonic serve) to create it")
        raise typer.Exit(EX_UNAVAILABLE)
    emit_line(value)


@app.command()
def paths(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Where config, data and logs live."""
    p = resolve_paths()  # not load(): the place to look when config.yaml is broken
    data = {
        "config_file": str(p.config_file),
        "data_dir": str(p.data_dir),
        "database": str(p.database),
        "log_dir": str(p.log_dir),
    }
    if as_json:
        emit_json(data)
    else:
        for key, value in data.items():
            emit_line(f"{key}: {value}")


@app.command()
def version(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Print the version."""
    if as_json:
        emit_json({"version": __version__})
    else:
        emit_line(__version__)


for _module in (
    memories,
    purge,
    browse,
    status,
    watch,
    completion,
    shell_hook,
    doctor,
    service,
    agents,
    supersede,
    llm,
    reencode,
    episodes,
    consolidation,
    reactor,
    abstractions,
    insights,
    meta,
    mcp,
    open_cmd,
):
    _module.register(app)
app.add_typer(config_cmd.config_app, name="config")


def label_params(command: Any) -> Any:
    """Help that says what each option takes: nothing for a flag (typer would print
    ``<bool>``), the option's own metavar or its name in capitals for a value (``--project
    NAME`` rather than ``<str>``). Applied to every command, ``--help`` included."""
    params = list(command.params)
    helper = command.get_help_option(typer.Context(command))
    if helper is not None:
        params.append(helper)
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif param.metavar is None and param.name:
            param.metavar = param.name.upper()
    for sub in getattr(command, "commands", {}).values():
        label_params(sub)
    return command


def main() -> None:
    """The console entry point: click's usage errors (exit 2) become 64 (EX_USAGE)."""
    try:
        label_params(typer.main.get_command(app))(prog_name="mnemonic")
    except SystemExit as exc:
        if exc.code == CLICK_USAGE:
            sys.exit(EX_USAGE)
        raise
