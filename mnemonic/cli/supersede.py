"""``supersede NEW OLD`` (and ``--remove``): say by hand that one memory replaces another,
so recall ranks the older one below it; ``supersessions ID`` shows a memory's chain."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.memories import JsonFlag
from mnemonic.cli.runtime import call, emit_json, emit_line


def supersede(
    newer_id: Annotated[str, typer.Argument(metavar="NEW", help="The memory that is current.")],
    older_id: Annotated[str, typer.Argument(metavar="OLD", help="The memory it replaces.")],
    remove: Annotated[
        bool, typer.Option("--remove", help="Take the supersession back instead.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Mark NEW as superseding OLD (both stay stored; recall ranks OLD below NEW)."""
    if remove:
        result = call("DELETE", f"/api/v1/memories/{newer_id}/supersedes/{older_id}")
        message = f"{newer_id} no longer supersedes {older_id}"
    else:
        result = call("POST", f"/api/v1/memories/{newer_id}/supersedes", {"older_id": older_id})
        state = "now supersedes" if result.get("created") else "already supersedes"
        message = f"{newer_id} {state} {older_id}"
    if as_json:
        emit_json(result)
    else:
        emit_line(escape(message))


def chain_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"superseded by {r.get('newer_id')}" for r in result.get("superseded_by") or []]
    lines += [f"supersedes {r.get('older_id')}" for r in result.get("supersedes") or []]
    return lines or ["no supersessions"]


def supersessions(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="A memory id.")],
    as_json: JsonFlag = False,
) -> None:
    """What replaces a memory and what it replaces."""
    result = call("GET", f"/api/v1/memories/{memory_id}/supersessions")
    if as_json:
        emit_json(result)
        return
    for line in chain_lines(result):
        emit_line(escape(line))


def register(app: typer.Typer) -> None:
    app.command()(supersede)
    app.command()(supersessions)
