"""Claude Code: ``~/.claude.json`` (user scope) or ``<project>/.mcp.json`` (project scope),
servers under ``mcpServers``; its own CLI is ``claude mcp add``.

Looked up (2026): Anthropic's Claude Code MCP documentation (code.claude.com/docs/en/mcp,
as quoted by several guides) gives three scopes: ``local`` (the default, stored in
``~/.claude.json`` under the project's path), ``project`` (``.mcp.json`` at the project
root, meant to be committed; Claude Code asks each user to approve its servers) and
``user`` (``~/.claude.json``, top-level ``mcpServers``, every project). A stdio server is
added with ``claude mcp add --transport stdio [--scope S] [--env K=V] <name> -- <command>
[args...]``; all options go before the name, and ``--`` separates the server's own
arguments. ``claude mcp add`` writes ``{"type": "stdio", "command", "args", "env"}``, the
shape used here. Removal: ``claude mcp remove --scope S <name>``.

``~/.claude.json`` also holds Claude Code's own state and is rewritten by it while it runs;
the writer refuses when the file changes between our read and our write (see ``files``).
"""

from __future__ import annotations

from pathlib import Path

from mnemonic.mcp_install.entry import env_flags, shell_join, stdio_entry
from mnemonic.mcp_install.model import SERVER_NAME, Client, InstallContext, Launch, Scope, Target


def target(ctx: InstallContext, scope: Scope, project: Path, launch: Launch) -> Target:
    path = ctx.home / ".claude.json" if scope is Scope.USER else project / ".mcp.json"
    add = [
        "claude", "mcp", "add", "--transport", "stdio", "--scope", str(scope),
        *env_flags("--env", launch.env), SERVER_NAME, "--", *launch.argv(),
    ]  # fmt: skip
    remove = ["claude", "mcp", "remove", "--scope", str(scope), SERVER_NAME]
    notes = ["Claude Code loads it in new sessions; check with `claude mcp list` or /mcp."]
    if scope is Scope.PROJECT:
        notes.append("Claude Code asks once per user to approve servers from .mcp.json.")
    return Target(
        client=Client.CLAUDE_CODE,
        scope=scope,
        path=path,
        format="json",
        container=("mcpServers",),
        entry=stdio_entry(launch, with_type=True),
        install_command=shell_join(ctx, add),
        uninstall_command=shell_join(ctx, remove),
        notes=tuple(notes),
    )
