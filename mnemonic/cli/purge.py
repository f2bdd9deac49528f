"""``purge`` and ``unarchive``: deleting for real, and undoing a ``forget``.

``purge`` always asks the daemon first what would go (a dry run), shows it, and purges only
after an explicit confirmation: typing ``purge`` at a terminal, or ``--yes``. Without a
terminal and without ``--yes`` it refuses (exit 64) rather than purge silently. For
``--query`` the ids that were shown are purged, not whatever the query finds a moment
later; ``--project`` purges the project as it is when confirmed.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.exits import EX_USAGE
from mnemonic.cli.memories import JsonFlag, show_state
from mnemonic.cli.runtime import call, emit_json, emit_line, err

CONFIRM_WORD = "purge"
SHOWN = 20  # memories listed before asking; the rest are counted


def _selection(
    memory_id: str | None, query: str | None, project: str | None, limit: int
) -> dict[str, Any]:
    """The body of ``POST /api/v1/purge`` for exactly one of the three selectors."""
    given = [x for x in (memory_id, query, project) if x is not None]
    if len(given) != 1:
        err.print("give exactly one of ID, --query or --project")
        raise typer.Exit(EX_USAGE)
    if memory_id is not None:
        return {"memory_ids": [memory_id]}
    if query is not None:
        return {"query": query, "limit": limit}
    return {"project": project}


def _show(preview: dict[str, Any]) -> None:
    err.print(f"[bold]{preview['count']} memories[/bold] will be deleted for good:")
    for item in preview["memories"][:SHOWN]:
        project = f" [{escape(item['project'])}]" if item["project"] else ""
        line = escape(item["first_line"] or "")
        err.print(f"  {item['id']}{project} ({item['state']}): {line}")
    if preview["count"] > SHOWN:
        err.print(f"  … and {preview['count'] - SHOWN} more")
    err.print(
        "with their raw observations, amendments, vectors, links and the query logs that "
        "name them. This cannot be undone.",
        style="dim",
    )


def _confirmed(count: int, yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        err.print("refusing to purge without a confirmation: run it at a terminal, or pass --yes")
        raise typer.Exit(EX_USAGE)
    err.print(f'type "{CONFIRM_WORD}" to delete {count} memories: ', end="")
    answer = sys.stdin.readline().strip()
    return answer == CONFIRM_WORD


def purge(
    memory_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help="The memory's id.")
    ] = None,
    query: Annotated[
        str | None, typer.Option(help="Purge what a recall for this finds (shown first).")
    ] = None,
    project: Annotated[str | None, typer.Option(help="Purge every memory of this project.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=100, help="At most this many (--query).")] = 20,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask (for scripts).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete memories for good: the memory, its raw observation, amendments, vectors,
    links and query logs, then the database file is rewritten so the bytes are gone.
    Asks first; 'forget' only archives."""
    body = _selection(memory_id, query, project, limit)
    preview = call("POST", "/api/v1/purge", {**body, "dry_run": True})
    if not preview["count"]:
        if as_json:
            emit_json(preview)
        else:
            emit_line("nothing to purge")
        return
    _show(preview)
    if not _confirmed(preview["count"], yes):
        err.print("not confirmed: nothing purged")
        return
    if memory_id is not None:
        result = call("DELETE", f"/api/v1/memories/{memory_id}", purge="true")
    elif query is not None:  # exactly the ids that were shown and confirmed
        shown = [item["id"] for item in preview["memories"]]
        result = call("POST", "/api/v1/purge", {"memory_ids": shown})
    else:
        result = call("POST", "/api/v1/purge", body)
    if as_json:
        emit_json(result)
        return
    removed = result["removed"]
    emit_line(
        f"purged: {removed['memories']} memories, {removed['raw_memories']} raw, "
        f"{removed['amendments']} amendments, {removed['associations']} links, "
        f"{removed['queries']} query logs"
    )
    if not (result["vacuumed"] and result["checkpointed"]):
        err.print(
            "[yellow]the database file could not be fully rewritten[/yellow] (see the "
            "daemon log); purged rows are zeroed but the file was not compacted"
        )


def unarchive(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Bring a forgotten (archived) memory back into default recall."""
    show_state(call("POST", f"/api/v1/memories/{memory_id}/unarchive"), as_json)


def register(app: typer.Typer) -> None:
    for command in (purge, unarchive):
        app.command()(command)
