"""``unmerge`` and ``consolidation history``: undoing a merge, and what cycles did."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mnemonic.cli.memories import JsonFlag
from mnemonic.cli.runtime import call, emit_json, emit_line

consolidation_app = typer.Typer(help="Consolidation: decay, link pruning and merges.")

_COUNTS = ("decayed", "fading", "archived", "revived", "pruned", "merged")


def unmerge(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The gist's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Undo a consolidation merge: the gist's sources return to the states they had, the
    gist is archived (kept)."""
    result = call("POST", f"/api/v1/memories/{memory_id}/unmerge")
    if as_json:
        emit_json(result)
        return
    emit_line(f"restored {len(result['restored'])} memories; gist {memory_id} archived")
    for restored in result["restored"]:
        emit_line(f"  {restored}")


def _line(cycle: dict[str, Any]) -> str:
    counts = cycle["counts"]
    parts = ", ".join(f"{k} {counts.get(k, 0)}" for k in _COUNTS)
    budget = " (budget exhausted)" if cycle["budget_exhausted"] else ""
    return f"{cycle['started_at']}  {cycle['trigger']:<8}  {parts}{budget}"


@consolidation_app.command("history")
def history(
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many cycles.")] = 20,
    as_json: JsonFlag = False,
) -> None:
    """The latest consolidation cycles, newest first, with what each changed."""
    result = call("GET", "/api/v1/consolidation/history", limit=limit)
    if as_json:
        emit_json(result)
        return
    if not result["items"]:
        emit_line("no consolidation cycle yet")
    for cycle in result["items"]:
        emit_line(_line(cycle))


def register(app: typer.Typer) -> None:
    app.command()(unmerge)
    app.add_typer(consolidation_app, name="consolidation")
