"""``mnemonic open``: the dashboard in the browser, logged in.

The CLI holds the API token; the browser must not (any script on a page could read it). So
the command asks the daemon for a one-time login link (``POST
/api/v1/dashboard/login-links``, valid once, for two minutes) and opens that; the daemon
answers the link with a session cookie and the dashboard. ``--print`` only prints the link,
for scripts and remote shells (open it in a browser on the same machine: the daemon only
answers loopback names).
"""

from __future__ import annotations

import webbrowser
from typing import Annotated, Any

import typer

from mnemonic.cli.exits import EX_USAGE
from mnemonic.cli.runtime import call, emit_json, emit_line, err

VIEWS = (
    "search",
    "timeline",
    "live",
    "graph",
    "episodes",
    "patterns",
    "insights",
    "health",
    "settings",
)


def with_view(url: str, view: str | None) -> str:
    """The login URL landing on a view: the daemon redirects to ``/``, and a fragment on
    the request URL survives the redirect (RFC 9110 section 10.2.2)."""
    return f"{url}#/{view}" if view else url


def open_dashboard(
    view: Annotated[
        str | None,
        typer.Argument(help=f"View to land on: {', '.join(VIEWS)}.", show_default=False),
    ] = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the one-time URL instead of opening it.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the link as JSON.")] = False,
) -> None:
    """Open the dashboard in the browser through a one-time login link."""
    if view is not None and view not in VIEWS:
        err.print(f"[red]unknown view {view!r}[/red]; one of: {', '.join(VIEWS)}")
        raise typer.Exit(EX_USAGE)
    answer: dict[str, Any] = call("POST", "/api/v1/dashboard/login-links")
    url = with_view(str(answer["url"]), view)
    opened = False
    if not (print_only or as_json):
        opened = webbrowser.open(url)
        if opened:
            err.print("Opened the dashboard in your browser (the link works once).")
        else:
            err.print("No browser found; open this link (it works once, for two minutes):")
    if as_json:
        emit_json({"url": url, "expires_in_s": answer.get("expires_in_s"), "opened": opened})
    elif not opened:
        emit_line(url)


def register(app: typer.Typer) -> None:
    app.command("open")(open_dashboard)
