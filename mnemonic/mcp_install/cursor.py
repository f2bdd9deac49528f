"""Cursor: ``~/.cursor/mcp.json`` (user, "global") or ``<project>/.cursor/mcp.json``
(project), servers under ``mcpServers``; no CLI for adding servers.

Looked up (2026): cursor.com/docs/mcp (quoted verbatim by developersdigest.tech and
mcpbundles.com): project ``.cursor/mcp.json``, global ``~/.cursor/mcp.json`` (Windows:
``%USERPROFILE%\\.cursor\\mcp.json``); a stdio entry is ``{"command", "args", "env"}``;
Cursor merges both files. Hand-written Cursor files often carry ``//`` comments: those
are refused rather than rewritten (see ``jsondoc``).
"""

from __future__ import annotations

from pathlib import Path

from mnemonic.mcp_install.entry import stdio_entry
from mnemonic.mcp_install.model import Client, InstallContext, Launch, Scope, Target


def target(ctx: InstallContext, scope: Scope, project: Path, launch: Launch) -> Target:
    base = ctx.home if scope is Scope.USER else project
    return Target(
        client=Client.CURSOR,
        scope=scope,
        path=base / ".cursor" / "mcp.json",
        format="json",
        container=("mcpServers",),
        entry=stdio_entry(launch, with_type=False),
        notes=("Cursor picks it up in Settings > MCP (toggle it on if it shows off).",),
    )
