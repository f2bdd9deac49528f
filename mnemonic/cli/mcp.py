"""``mnemonic mcp``: the MCP server over stdio (what MCP clients start), and
``mnemonic mcp usage`` (tool calls by tool). ``install``/``uninstall`` come from
``mnemonic.cli.mcp_install`` when it is there.

stdout belongs to the protocol while the server runs: logs go to stderr only.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer
from rich.markup import escape

from mnemonic.cli.runtime import call, daemon_url, emit_json, load, out, token

mcp_app = typer.Typer(
    help="The MCP server for coding agents: with no command, serve MCP over stdio.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@mcp_app.callback()
def mcp_root(ctx: typer.Context) -> None:
    """Serve MCP over stdio, forwarding every call to the running daemon."""
    if ctx.invoked_subcommand is not None:
        return
    import anyio

    from mnemonic.mcp.stdio import serve_stdio

    cfg, paths = load()
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="mnemonic mcp: %(message)s"
    )
    url = daemon_url(cfg.server.host, cfg.server.port)
    anyio.run(serve_stdio, cfg, paths, url, token(paths))


@mcp_app.command("usage")
def usage(
    days: Annotated[int | None, typer.Option(help="Only the last N days.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """MCP tool calls by tool: calls, errors, p50/p95 latency."""
    data = call("GET", "/api/v1/tool/usage", days=days)
    if as_json:
        emit_json(data)
        return
    if not data["tools"]:
        out.print("no MCP tool calls recorded")
        return
    out.print(f"{'tool':<22} {'calls':>7} {'errors':>7} {'p50 ms':>9} {'p95 ms':>9}")
    for row in data["tools"]:
        out.print(
            f"{escape(row['tool']):<22} {row['calls']:>7} {row['errors']:>7}"
            f" {row['p50_ms']:>9.1f} {row['p95_ms']:>9.1f}",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    try:
        from mnemonic.cli.mcp_install import register_install
    except ImportError:
        pass
    else:
        register_install(mcp_app)
    app.add_typer(mcp_app, name="mcp")
