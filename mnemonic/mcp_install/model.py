"""The words of ``mnemonic mcp install``: clients, scopes, the machine as the installer sees
it, what one client needs to know, and what an install or uninstall did.

The machine lives in :class:`InstallContext` (home, environment, platform, interpreter,
working folder, clock) so that tests point every path into ``tmp_path`` and render the
macOS and Windows locations on Linux; nothing in this package reads ``Path.home()`` or
``os.environ`` on its own.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from mnemonic.exits import EX_DATAERR, EX_SOFTWARE, EX_USAGE

SERVER_NAME = "mnemonic"
"""The key of our entry in every client's server table; the only one we ever touch."""


class Client(enum.StrEnum):
    CLAUDE_CODE = "claude-code"
    CLAUDE_DESKTOP = "claude-desktop"
    CURSOR = "cursor"
    VSCODE = "vscode"
    CODEX = "codex"


class Scope(enum.StrEnum):
    USER = "user"
    PROJECT = "project"


Action = Literal["added", "updated", "unchanged", "removed", "absent"]
Format = Literal["json", "toml"]


class InstallError(Exception):
    """An expected refusal (bad file, unsupported scope, unwritable folder): a message, a
    sysexits code and, where it helps, what to do instead."""

    def __init__(self, message: str, exit_code: int = EX_DATAERR, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.fix = fix
        self.target: Target | None = None  # set by ``apply`` so the CLI can show the entry


def usage_error(message: str, fix: str = "") -> InstallError:
    return InstallError(message, EX_USAGE, fix)


def write_error(message: str, fix: str = "") -> InstallError:
    return InstallError(message, EX_SOFTWARE, fix)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class InstallContext:
    """The machine as the installer sees it; ``current()`` is the real one."""

    home: Path
    env: Mapping[str, str]
    platform: str
    executable: str
    cwd: Path
    now: Callable[[], datetime] = field(default=_utc_now)

    @classmethod
    def current(cls) -> InstallContext:
        return cls(
            home=Path.home(),
            env=dict(os.environ),
            platform=sys.platform,
            executable=os.path.abspath(sys.executable),
            cwd=Path.cwd(),
        )

    def env_path(self, name: str) -> Path | None:
        """An environment variable naming a folder, ``~`` expanded against *our* home;
        ``None`` when unset or empty."""
        value = self.env.get(name, "").strip()
        if not value:
            return None
        if value == "~" or value.startswith(("~/", "~\\")):
            return self.home / value[2:]
        return Path(value)

    def appdata(self) -> Path:
        """Windows' roaming application data folder (``%APPDATA%``)."""
        return self.env_path("APPDATA") or self.home / "AppData" / "Roaming"

    def xdg_config(self) -> Path:
        """``$XDG_CONFIG_HOME`` or ``~/.config`` (Linux and the other Unixes)."""
        return self.env_path("XDG_CONFIG_HOME") or self.home / ".config"


@dataclass(frozen=True, slots=True)
class Launch:
    """How a client starts ``mnemonic mcp`` over stdio: absolute command, its arguments and
    the environment it must add (only ``MNEMONIC_HOME``, and only when it is set)."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]

    def argv(self) -> list[str]:
        return [self.command, *self.args]


@dataclass(frozen=True, slots=True)
class Target:
    """One client config file to change: where, in which format, under which key path
    the server table sits, and what our entry looks like there."""

    client: Client
    scope: Scope
    path: Path
    format: Format
    container: tuple[str, ...]
    entry: dict[str, Any]
    install_command: str | None = None
    uninstall_command: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Result:
    """What one install or uninstall did (or, with ``dry_run``, would do)."""

    target: Target
    action: Action
    dry_run: bool
    backup: Path | None = None
    diff: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def command(self) -> str | None:
        """The client's own CLI command that does the same, if it has one."""
        if self.action in ("removed", "absent"):
            return self.target.uninstall_command
        return self.target.install_command

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "client": str(self.target.client),
            "scope": str(self.target.scope),
            "path": str(self.target.path),
            "action": self.action,
            "dry_run": self.dry_run,
            "backup": str(self.backup) if self.backup else None,
            "command": self.command,
            "entry": self.target.entry,
            "diff": self.diff,
            "warnings": list(self.warnings),
            "notes": list(self.target.notes),
        }
