"""Install or uninstall our entry in one client's config file: find the file, plan the new
text, and (unless it is a dry run or nothing changes) back up and write.

Order matters for safety: the whole new text is computed and checked before anything is
written, so a refusal (invalid JSON/TOML, an unexpected shape) leaves the file and its
folder exactly as they were; the backup is taken only when the file is about to change,
so an idempotent second install leaves no clutter.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from mnemonic.mcp_install import (
    claude_code,
    claude_desktop,
    codex,
    cursor,
    files,
    jsondoc,
    tomldoc,
    vscode,
)
from mnemonic.mcp_install.entry import launch, launch_warnings
from mnemonic.mcp_install.model import (
    Action,
    Client,
    InstallContext,
    InstallError,
    Launch,
    Result,
    Scope,
    Target,
    usage_error,
)

TargetFactory = Callable[[InstallContext, Scope, Path, Launch], Target]

CLIENTS: dict[Client, TargetFactory] = {
    Client.CLAUDE_CODE: claude_code.target,
    Client.CLAUDE_DESKTOP: claude_desktop.target,
    Client.CURSOR: cursor.target,
    Client.VSCODE: vscode.target,
    Client.CODEX: codex.target,
}

NAMES: dict[Client, str] = {
    Client.CLAUDE_CODE: "Claude Code",
    Client.CLAUDE_DESKTOP: "Claude Desktop",
    Client.CURSOR: "Cursor",
    Client.VSCODE: "VS Code",
    Client.CODEX: "Codex",
}


class _Document(Protocol):
    def install(
        self, path: Path, text: str, container: tuple[str, ...], entry: dict[str, Any]
    ) -> tuple[str, Action]: ...

    def uninstall(
        self, path: Path, text: str, container: tuple[str, ...]
    ) -> tuple[str, Action]: ...

    def snippet(self, container: tuple[str, ...], entry: dict[str, Any]) -> str: ...


def _document(target: Target) -> _Document:
    return jsondoc if target.format == "json" else tomldoc


def snippet(target: Target) -> str:
    """The entry as the fragment of the client's file a person would paste."""
    return _document(target).snippet(target.container, target.entry)


def resolve(
    ctx: InstallContext, client: Client, scope: Scope, project_dir: Path | None = None
) -> tuple[Target, list[str]]:
    """The file and entry for ``client`` at ``scope``, and warnings about the command."""
    project = ctx.cwd if project_dir is None else project_dir
    if not project.is_absolute():
        project = ctx.cwd / project
    if scope is Scope.PROJECT and not project.is_dir():
        raise usage_error(f"project folder {project} does not exist")
    started = launch(ctx)
    return CLIENTS[client](ctx, scope, project, started), launch_warnings(ctx, started.command)


def install(
    ctx: InstallContext,
    client: Client,
    scope: Scope,
    *,
    project_dir: Path | None = None,
    dry_run: bool = False,
) -> Result:
    """Add or update our entry; ``unchanged`` (and nothing written) when it is current."""
    target, warnings = resolve(ctx, client, scope, project_dir)
    return _change(ctx, target, warnings, dry_run, removing=False)


def uninstall(
    ctx: InstallContext,
    client: Client,
    scope: Scope,
    *,
    project_dir: Path | None = None,
    dry_run: bool = False,
) -> Result:
    """Remove our entry only; ``absent`` when there is none (or no file)."""
    target, _ = resolve(ctx, client, scope, project_dir)
    return _change(ctx, target, [], dry_run, removing=True)


def _change(
    ctx: InstallContext, target: Target, warnings: list[str], dry_run: bool, *, removing: bool
) -> Result:
    try:
        snapshot = files.read(target.path)
        document = _document(target)
        if removing:
            if snapshot.data is None:
                return Result(target, "absent", dry_run, warnings=tuple(warnings))
            text, action = document.uninstall(target.path, snapshot.text, target.container)
        else:
            text, action = document.install(
                target.path, snapshot.text, target.container, target.entry
            )
        if action in ("unchanged", "absent"):
            return Result(target, action, dry_run, warnings=tuple(warnings))
        diff = files.unified_diff(target.path, snapshot.text, text)
        if not removing and not snapshot.path.parent.exists() and target.scope is Scope.USER:
            warnings.append(
                f"{snapshot.path.parent} did not exist (is {NAMES[target.client]} installed?)"
            )
        if dry_run:
            return Result(target, action, True, diff=diff, warnings=tuple(warnings))
        saved = files.backup(snapshot, ctx.now()) if snapshot.data is not None else None
        files.write_atomic(snapshot, text)
    except InstallError as exc:
        exc.target = target
        raise
    return Result(target, action, False, backup=saved, diff=diff, warnings=tuple(warnings))
