"""The MCP server: one definition for both transports (see the package docstring)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from mnemonic import __version__
from mnemonic.api.security import LOOPBACK_NAMES
from mnemonic.mcp.backend import RestBackend
from mnemonic.mcp.kit import Kit
from mnemonic.mcp.resources import register_prompts, register_resources
from mnemonic.mcp.session import Resolver, Sessions
from mnemonic.mcp.tools_browse import register_browse_tools
from mnemonic.mcp.tools_memory import register_memory_tools

INSTRUCTIONS = (
    "mnemonic is this machine's long-term memory for coding work. Recall before acting"
    " (past decisions, errors and fixes, conventions); remember decisions, errors with their"
    " fixes and learnings as you go; at the end of a session write a handoff with"
    " create_handoff. Tools act on the project of your workspace unless you name another."
)


def build_server(
    backend: RestBackend, resolver: Resolver, *, cwd: str | None, context_limit: int
) -> MCPServer[Any]:
    """``cwd`` is the stdio process's working folder (one client per process); None over
    HTTP, where each client session has its own state."""
    mcp: MCPServer[Any] = MCPServer(
        name="mnemonic",
        title="mnemonic memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    kit = Kit(backend, Sessions(resolver, cwd), context_limit=context_limit)
    register_memory_tools(mcp, kit)
    register_browse_tools(mcp, kit)
    register_resources(mcp, kit)
    register_prompts(mcp, kit)
    return mcp


def http_app(mcp: MCPServer[Any], port: int) -> Starlette:
    """The streamable HTTP endpoint at ``/mcp``, to mount in the daemon's app (whose guard
    already checks Host, Origin and the token; the SDK checks Host and Origin again).
    Its session manager must run in the daemon's lifespan (``mcp.session_manager.run()``)."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in LOOPBACK_NAMES],
        allowed_origins=[f"http://{name}:{port}" for name in LOOPBACK_NAMES],
    )
    return mcp.streamable_http_app(
        streamable_http_path="/mcp", transport_security=security, host="127.0.0.1"
    )
