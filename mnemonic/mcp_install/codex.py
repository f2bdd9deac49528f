"""OpenAI Codex: ``config.toml``, table ``[mcp_servers.mnemonic]`` with ``command``,
``args`` and ``env``; its own CLI is ``codex mcp add``.

Looked up (2026): developers.openai.com/codex (config reference, MCP page, environment
variables): user config is ``$CODEX_HOME/config.toml``, ``CODEX_HOME`` defaulting to
``~/.codex``; a project may have ``.codex/config.toml``, loaded only for trusted projects;
a stdio server is ``[mcp_servers.<name>]`` with ``command``, optional ``args``, ``env``
(``env = { "K" = "v" }`` or a ``[mcp_servers.<name>.env]`` table), ``env_vars``, ``cwd``,
``startup_timeout_sec`` and others. ``codex mcp add <name> [--env K=V] -- <command>...``
writes the user file; ``codex mcp remove <name>`` removes it. There is no CLI form for
the project file, so project scope prints no command.
"""

from __future__ import annotations

from pathlib import Path

from mnemonic.mcp_install.entry import env_flags, shell_join, stdio_entry
from mnemonic.mcp_install.model import SERVER_NAME, Client, InstallContext, Launch, Scope, Target


def codex_home(ctx: InstallContext) -> Path:
    return ctx.env_path("CODEX_HOME") or ctx.home / ".codex"


def target(ctx: InstallContext, scope: Scope, project: Path, launch: Launch) -> Target:
    install = remove = None
    notes = ["Codex loads it in new sessions; check with `codex mcp list` or /mcp."]
    if scope is Scope.USER:
        path = codex_home(ctx) / "config.toml"
        add = ["codex", "mcp", "add", *env_flags("--env", launch.env), SERVER_NAME, "--"]
        install = shell_join(ctx, [*add, *launch.argv()])
        remove = shell_join(ctx, ["codex", "mcp", "remove", SERVER_NAME])
    else:
        path = project / ".codex" / "config.toml"
        notes.append("Codex reads a project's .codex/config.toml only when it trusts the project.")
    return Target(
        client=Client.CODEX,
        scope=scope,
        path=path,
        format="toml",
        container=("mcp_servers",),
        entry=stdio_entry(launch, with_type=False),
        install_command=install,
        uninstall_command=remove,
        notes=tuple(notes),
    )
