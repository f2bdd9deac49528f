"""The shape the read-only CLI commands share: fetch from the daemon's REST API, then print
either the JSON it answered (``--json``) or human lines made from it by a plain function.

Keeping that shape here means a command is its options plus its line function, and every
command treats ``--json``, paging and the "more:" hint the same way. Errors need nothing
here: ``call`` already turns a down daemon or a 4xx/5xx into a clear message and a
sysexits code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.runtime import call, emit_json, emit_line, err

Limit = Annotated[int, typer.Option(min=1, max=200, metavar="N", help="Page size.")]
Cursor = Annotated[
    str | None, typer.Option(metavar="CURSOR", help="Next page (printed by the last one).")
]
Project = Annotated[str | None, typer.Option(metavar="NAME", help="Only this project.")]

Lines = Callable[[Any], Iterable[str]]


def query(**values: Any) -> dict[str, Any]:
    """The query parameters that were given: empty ones (None, "", 0) left out, enums as
    their value, so the daemon applies its own defaults."""
    return {k: (v.value if isinstance(v, Enum) else v) for k, v in values.items() if v}


def emit(data: Any, lines: Lines, as_json: bool) -> None:
    """The daemon's answer as JSON, or as the lines ``lines`` makes of it."""
    if as_json:
        emit_json(data)
        return
    for line in lines(data):
        emit_line(line)


def fetch(path: str, lines: Lines, as_json: bool, method: str = "GET", **params: Any) -> None:
    """One REST call, its answer printed as JSON or as lines (a show, a dismiss, a report)."""
    emit(call(method, path, **params), lines, as_json)


def print_page(
    page: Mapping[str, Any], line: Callable[[dict[str, Any]], str], heading: str, more: str
) -> None:
    """A page of a listing: a count on stderr, one line per item on stdout, and the command
    for the next page when there is one (stderr, so a pipe sees only the items)."""
    items = page.get("items") or []
    err.print(f"{len(items)} {heading}")
    for item in items:
        emit_line(line(item))
    if page.get("next_cursor"):
        err.print(f"more: {more} --cursor {escape(page['next_cursor'])}", highlight=False)


def list_page(
    ctx: typer.Context,
    what: str,
    params: Mapping[str, Any],
    as_json: bool,
    line: Callable[[dict[str, Any]], str],
    order: str,
) -> None:
    """``mnemonic <what>``: GET one page of ``/api/v1/<what>`` and print it (``print_page``)
    or its JSON. The listing is its command group's callback, so it stays quiet when a
    subcommand (``show``, ``dismiss``) is what was asked for."""
    if ctx.invoked_subcommand is not None:
        return
    page = call("GET", f"/api/v1/{what}", **params)
    if as_json:
        emit_json(page)
        return
    print_page(page, line, f"{what}, {order}", f"mnemonic {what}")


def dismissed(result: dict[str, Any]) -> list[str]:
    """The human answer of a dismiss route."""
    return [f"dismissed {result['id']}"]
