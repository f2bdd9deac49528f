"""``mnemonic mcp install|uninstall``: put (or take) our stdio server entry into the config
file of an MCP client: Claude Code, Claude Desktop, Cursor, VS Code, Codex.

One module per client knows its file, its table and its own CLI command (``claude_code``,
``claude_desktop``, ``cursor``, ``vscode``, ``codex``; each cites where its format was
looked up); ``jsondoc`` and ``tomldoc`` edit the two formats; ``files`` backs up and writes
atomically; ``apply`` puts it together. Every change keeps the other servers and keys,
backs the file up first, is idempotent, and refuses a file it cannot parse.
"""

from mnemonic.mcp_install.apply import CLIENTS, NAMES, install, resolve, snippet, uninstall
from mnemonic.mcp_install.model import (
    SERVER_NAME,
    Client,
    InstallContext,
    InstallError,
    Launch,
    Result,
    Scope,
    Target,
)

__all__ = [
    "CLIENTS",
    "NAMES",
    "SERVER_NAME",
    "Client",
    "InstallContext",
    "InstallError",
    "Launch",
    "Result",
    "Scope",
    "Target",
    "install",
    "resolve",
    "snippet",
    "uninstall",
]
