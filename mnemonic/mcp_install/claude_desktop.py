"""Claude Desktop: ``claude_desktop_config.json``, servers under ``mcpServers``; user
scope only, no CLI.

Looked up (2026): the file lives in ``~/Library/Application Support/Claude/`` on macOS and
``%APPDATA%\\Claude\\`` on Windows (MCP user quickstart, as quoted by the Playwright MCP
and Confluent MCP docs); Linux builds use ``~/.config/Claude/`` (``$XDG_CONFIG_HOME``
honoured, as community installers do). Entries are ``{"command", "args", "env"}``;
absolute paths are required because the app's working folder and PATH are not the
shell's; the app must be quit and restarted to load a change.
"""

from __future__ import annotations

from pathlib import Path

from mnemonic.mcp_install.entry import stdio_entry
from mnemonic.mcp_install.model import Client, InstallContext, Launch, Scope, Target, usage_error

FILE_NAME = "claude_desktop_config.json"


def config_folder(ctx: InstallContext) -> Path:
    if ctx.platform == "darwin":
        return ctx.home / "Library" / "Application Support" / "Claude"
    if ctx.platform == "win32":
        return ctx.appdata() / "Claude"
    return ctx.xdg_config() / "Claude"


def target(ctx: InstallContext, scope: Scope, project: Path, launch: Launch) -> Target:
    if scope is not Scope.USER:
        raise usage_error(
            "Claude Desktop has no project scope: it reads one config file per user",
            fix="use --scope user",
        )
    return Target(
        client=Client.CLAUDE_DESKTOP,
        scope=scope,
        path=config_folder(ctx) / FILE_NAME,
        format="json",
        container=("mcpServers",),
        entry=stdio_entry(launch, with_type=False),
        notes=("Quit and restart Claude Desktop to load it.",),
    )
