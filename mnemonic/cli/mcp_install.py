"""``mnemonic mcp install|uninstall --client C [--scope user|project]``: put our stdio
server into (or take it out of) an MCP client's config file.

``register_install(group)`` adds the two commands to the ``mcp`` group that
``mnemonic.cli.mcp`` builds. They work offline (no daemon needed): the entry only tells
the client how to start ``mnemonic mcp``.

Data (the result line, the diff of a dry run, the ``--json`` document) goes to stdout;
notes, warnings and errors to stderr. Exit codes: 64 a usage error (a scope the client
does not have, a missing project folder), 65 the client's file cannot be parsed (left
untouched; the entry to paste by hand is shown), 70 the file could not be read or written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from mnemonic.mcp_install import (
    NAMES,
    Client,
    InstallContext,
    InstallError,
    Result,
    Scope,
    install,
    snippet,
    uninstall,
)

_err = Console(stderr=True, highlight=False, soft_wrap=True)

ClientOpt = Annotated[
    Client,
    typer.Option(
        "--client",
        case_sensitive=False,
        help="The MCP client: claude-code, claude-desktop, cursor, vscode or codex.",
    ),
]
ScopeOpt = Annotated[
    Scope,
    typer.Option(
        "--scope",
        case_sensitive=False,
        help="user: every project of this user; project: the project folder only "
        "(a file meant to be committed).",
    ),
]
ProjectOpt = Annotated[
    Path | None,
    typer.Option(
        "--project-dir",
        metavar="PATH",
        help="The project folder for --scope project (default: the current folder).",
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Show the change (a diff); write nothing.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def register_install(group: typer.Typer) -> None:
    """Add ``install`` and ``uninstall`` to the ``mcp`` command group."""
    group.command("install")(install_command)
    group.command("uninstall")(uninstall_command)


def install_command(
    client: ClientOpt,
    scope: ScopeOpt = Scope.USER,
    project_dir: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Add mnemonic to an MCP client's config (keeps everything else, backs the file up)."""
    try:
        result = install(
            InstallContext.current(), client, scope, project_dir=project_dir, dry_run=dry_run
        )
    except InstallError as exc:
        raise _fail(exc, client, scope, as_json, adding=True) from None
    _report(result, as_json)


def uninstall_command(
    client: ClientOpt,
    scope: ScopeOpt = Scope.USER,
    project_dir: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove mnemonic from an MCP client's config (only our entry; backs the file up)."""
    try:
        result = uninstall(
            InstallContext.current(), client, scope, project_dir=project_dir, dry_run=dry_run
        )
    except InstallError as exc:
        raise _fail(exc, client, scope, as_json, adding=False) from None
    _report(result, as_json)


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _note(message: str, style: str = "dim") -> None:
    _err.print(message, markup=False, style=style)


_DONE = {
    "added": "added mnemonic to {name} ({scope} scope): {path}",
    "updated": "updated mnemonic in {name} ({scope} scope): {path}",
    "unchanged": "mnemonic is already in {name} ({scope} scope), nothing changed: {path}",
    "removed": "removed mnemonic from {name} ({scope} scope): {path}",
    "absent": "mnemonic is not in {name} ({scope} scope), nothing changed: {path}",
}
_WOULD = {
    "added": "would add mnemonic to {name} ({scope} scope): {path}",
    "updated": "would update mnemonic in {name} ({scope} scope): {path}",
    "removed": "would remove mnemonic from {name} ({scope} scope): {path}",
}


def describe(result: Result) -> str:
    """The one-line outcome (pure, table-tested)."""
    target = result.target
    template = _DONE[result.action]
    if result.dry_run:
        template = _WOULD.get(result.action, template)
    return template.format(name=NAMES[target.client], scope=target.scope, path=target.path)


def _report(result: Result, as_json: bool) -> None:
    for warning in result.warnings:
        _note(f"warning: {warning}", "yellow")
    if as_json:
        _emit(result.as_dict())
        return
    out = sys.stdout
    if result.dry_run:
        out.write(f"# {describe(result)}\n")
        out.write(result.diff)
    else:
        out.write(describe(result) + "\n")
    if result.backup:
        out.write(f"backup: {result.backup}\n")
    if result.command:
        label = "or, with the client's own CLI" if result.dry_run else "same as"
        out.write(f"{label}: {result.command}\n")
    if result.action in ("added", "updated") and not result.dry_run:
        for note in result.target.notes:
            _note(note)


def _fail(
    exc: InstallError, client: Client, scope: Scope, as_json: bool, *, adding: bool
) -> typer.Exit:
    target = exc.target
    _note(exc.message, "red")
    if exc.fix:
        _note(f"fix: {exc.fix}")
    if target is not None and adding:
        _note(f"the entry to add to {target.path}:")
        _note(snippet(target).rstrip("\n"), "")
        if target.install_command:
            _note(f"or run: {target.install_command}")
    if as_json:
        _emit(
            {
                "ok": False,
                "error": exc.message,
                "fix": exc.fix,
                "exit_code": exc.exit_code,
                "client": str(client),
                "scope": str(scope),
                "path": str(target.path) if target else None,
                "entry": target.entry if target else None,
                "command": (target.install_command if adding else target.uninstall_command)
                if target
                else None,
            }
        )
    return typer.Exit(exc.exit_code)
