"""VS Code (GitHub Copilot agent mode): ``mcp.json`` with a top-level ``servers`` object
(not ``mcpServers``) whose stdio entries carry ``"type": "stdio"``.

Looked up (2026): code.visualstudio.com/docs/copilot/reference/mcp-configuration: the
file is ``.vscode/mcp.json`` in a workspace or ``mcp.json`` in the user profile; it has
``"servers"`` and an optional ``"inputs"``; a stdio server needs ``type: "stdio"`` and
``command``, optional ``args``, ``env``, ``envFile``. The MCP developer guide
(code.visualstudio.com/docs/copilot/guides/mcp-developer-guide) adds that servers can be
installed from the command line with ``code --add-mcp '<json>'`` where the JSON is the
server entry plus a ``"name"`` (it goes to the user profile). The default profile's user
folder is ``~/Library/Application Support/Code/User`` (macOS), ``%APPDATA%\\Code\\User``
(Windows), ``~/.config/Code/User`` (Linux), the same folder as ``settings.json``; other
profiles keep theirs under ``User/profiles/<id>/``: use ``code --add-mcp`` for those.

The file is JSONC (comments allowed); one with comments is refused, not rewritten, and the
refusal shows the ``code --add-mcp`` command, which VS Code applies with its own writer.
"""

from __future__ import annotations

import json
from pathlib import Path

from mnemonic.mcp_install.entry import shell_join, stdio_entry
from mnemonic.mcp_install.model import SERVER_NAME, Client, InstallContext, Launch, Scope, Target


def user_folder(ctx: InstallContext) -> Path:
    if ctx.platform == "darwin":
        return ctx.home / "Library" / "Application Support" / "Code" / "User"
    if ctx.platform == "win32":
        return ctx.appdata() / "Code" / "User"
    return ctx.xdg_config() / "Code" / "User"


def target(ctx: InstallContext, scope: Scope, project: Path, launch: Launch) -> Target:
    entry = stdio_entry(launch, with_type=True)
    folder = user_folder(ctx) if scope is Scope.USER else project / ".vscode"
    path = folder / "mcp.json"
    command = None
    if scope is Scope.USER:
        spec = json.dumps({"name": SERVER_NAME, **entry}, ensure_ascii=False)
        command = shell_join(ctx, ["code", "--add-mcp", spec])
    return Target(
        client=Client.VSCODE,
        scope=scope,
        path=path,
        format="json",
        container=("servers",),
        entry=entry,
        install_command=command,
        notes=("In VS Code run 'MCP: List Servers' to start it; tools show in agent mode.",),
    )
