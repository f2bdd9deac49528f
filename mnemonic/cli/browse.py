"""``list``, ``show``, ``projects``, ``exclusions``, ``feedback`` and ``stats``: the
browsing half of the REST API from the shell, each with ``--json``.

The human forms are built by plain functions (``*_lines`` / ``*_table``) from the JSON the
daemon answers, so every field is optional there and the rendering is tested without a
daemon.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

import typer
from rich.markup import escape

from mnemonic.cli.memories import JsonFlag, entry_lines, local_date
from mnemonic.cli.runtime import call, emit_json, emit_line, err
from mnemonic.store.models import MemoryState, MemoryType, Quality, Source


def list_memories(
    project: Annotated[str | None, typer.Option(metavar="NAME", help="Only this project.")] = None,
    source: Annotated[
        list[Source] | None, typer.Option(metavar="SOURCE", help="Only this source; repeatable.")
    ] = None,
    type_: Annotated[
        list[MemoryType] | None,
        typer.Option("--type", metavar="TYPE", help="Only this type; repeatable."),
    ] = None,
    state: Annotated[
        list[MemoryState] | None,
        typer.Option(metavar="STATE", help="Only this state; repeatable (default: all)."),
    ] = None,
    since: Annotated[
        str | None, typer.Option(metavar="WHEN", help="Not before (ISO date or time).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=200, metavar="N", help="Page size.")] = 50,
    cursor: Annotated[
        str | None, typer.Option(metavar="CURSOR", help="Next page (printed by the last one).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List memories, newest first (a page at a time)."""
    params: dict[str, Any] = {"limit": limit}
    for key, values in (("source", source), ("type", type_), ("state", state)):
        if values:
            params[key] = ",".join(v.value for v in values)
    for key, value in (("project", project), ("since", since), ("cursor", cursor)):
        if value:
            params[key] = value
    page = call("GET", "/api/v1/memories", **params)
    if as_json:
        emit_json(page)
        return
    items = page.get("items") or []
    err.print(f"{len(items)} memories, newest first")
    for memory in items:
        for line in entry_lines(memory):
            emit_line(line)
    if page.get("next_cursor"):
        err.print(f"more: mnemonic list --cursor {escape(page['next_cursor'])}", highlight=False)


def show_lines(ctx: dict[str, Any]) -> list[str]:
    """A memory, its links, its neighbours in time and its history (amendments)."""
    memory = ctx.get("memory") or {}
    lines = [f"{key}: {memory[key]}" for key in _SHOWN if memory.get(key) not in (None, "", [])]
    if memory.get("concepts"):
        lines.append("concepts: " + ", ".join(str(c) for c in memory["concepts"]))
    path = (memory.get("metadata") or {}).get("path")
    if path:
        lines.append(f"path: {path}")
    lines += ["", str(memory.get("content", ""))]
    links = ctx.get("associations") or []
    if links:
        lines += ["", f"associations ({len(links)}):"]
        for link in links:
            other = link.get("memory") or {}
            lines.append(
                f"  {link.get('relation', '?')} {link.get('strength', 0):.2f} "
                f"{other.get('id', '?')} {other.get('summary') or ''}".rstrip()
            )
    neighbours = ctx.get("neighbours") or []
    if neighbours:
        lines += ["", "around the same time:"]
        lines += [f"  {n.get('id', '?')} {n.get('summary') or ''}".rstrip() for n in neighbours]
    history = ctx.get("amendments") or []
    if history:
        lines += ["", f"history ({len(history)} amendments):"]
        for change in history:
            reason = f" ({change['reason']})" if change.get("reason") else ""
            lines.append(f"  {local_date(change.get('created_at'))}{reason}")
            lines.append(f"    was: {_one_line(change.get('old_content'))}")
    return lines


_SHOWN = (
    "id",
    "type",
    "source",
    "project",
    "state",
    "timestamp",
    "salience",
    "utility",
    "access_count",
    "summary",
    "merged_into",
)


def _one_line(text: Any, limit: int = 120) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def show(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    limit: Annotated[
        int, typer.Option(min=1, max=200, metavar="N", help="Most associations shown.")
    ] = 20,
    as_json: JsonFlag = False,
) -> None:
    """One memory in full: content, associations, neighbours and history."""
    ctx = call("GET", f"/api/v1/memories/{memory_id}/context", limit=limit)
    if as_json:
        emit_json(ctx)
        return
    for line in show_lines(ctx):
        emit_line(line)


def projects_lines(items: list[dict[str, Any]]) -> list[str]:
    """``name  memories (active)  first .. last``, one project per line."""
    rows = [
        (
            item.get("name") or "(none)",
            f"{item.get('memories', 0)} ({item.get('active', 0)} active)",
            f"{local_date(item.get('first_at'))} .. {local_date(item.get('last_at'))}",
        )
        for item in items
    ]
    width = max((len(r[0]) for r in rows), default=0)
    count = max((len(r[1]) for r in rows), default=0)
    return [f"{n:<{width}}  {c:<{count}}  {span}" for n, c, span in rows]


def projects(as_json: JsonFlag = False) -> None:
    """Projects with their memory counts and time span."""
    result = call("GET", "/api/v1/projects")
    if as_json:
        emit_json(result)
        return
    for line in projects_lines(result.get("items") or []):
        emit_line(line)


exclusions_app = typer.Typer(
    help="Paths perception ignores (kept across restarts). Without a subcommand: list them."
)


def exclusion_lines(items: list[dict[str, Any]]) -> list[str]:
    return [
        f"{item.get('path')}  {item.get('origin', '')}: {item.get('reason', '')}".rstrip(": ")
        for item in items
    ]


@exclusions_app.callback(invoke_without_command=True)
def exclusions(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the paths perception ignores (``add``/``remove`` change them)."""
    if ctx.invoked_subcommand is not None:
        return
    result = call("GET", "/api/v1/exclusions")
    if as_json:
        emit_json(result)
        return
    items = result.get("items") or []
    if not items:
        err.print("no exclusions")
    for line in exclusion_lines(items):
        emit_line(line)


@exclusions_app.command("add")
def exclusions_add(
    path: Annotated[str, typer.Argument(metavar="PATH", help="An absolute path.")],
    reason: Annotated[str | None, typer.Option(metavar="TEXT", help="Why (kept with it).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Ignore a path (a file or a folder and everything under it) from now on."""
    body: dict[str, Any] = {"path": path}
    if reason:
        body["reason"] = reason
    row = call("POST", "/api/v1/exclusions", body)
    if as_json:
        emit_json(row)
    else:
        emit_line(f"{'excluded' if row.get('created') else 'already excluded'}: {row['path']}")


@exclusions_app.command("remove")
def exclusions_remove(
    path: Annotated[str, typer.Argument(metavar="PATH", help="An excluded path.")],
    as_json: JsonFlag = False,
) -> None:
    """Stop ignoring a path."""
    result = call("DELETE", "/api/v1/exclusions?" + urlencode({"path": path}))
    if as_json:
        emit_json(result)
    else:
        emit_line(f"removed: {result['path']}")


def feedback(
    query_id: Annotated[
        str, typer.Argument(metavar="QUERY_ID", help="Printed under 'recall' results.")
    ],
    quality: Annotated[Quality, typer.Argument(help="How good the results were.")],
    memory_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="ID...", help="The results it is about (default: all)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Rate a recall: helpful results gain utility and links, irrelevant ones lose."""
    body: dict[str, Any] = {"query_id": query_id, "quality": quality.value}
    if memory_ids:
        body["memory_ids"] = memory_ids
    result = call("POST", "/api/v1/feedback", body)
    if as_json:
        emit_json(result)
    else:
        emit_line(f"{quality.value}: {result.get('updated', 0)} memories updated")


def _counts(counts: dict[str, Any] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in (counts or {}).items() if v) or "none"


def stats_lines(stats: dict[str, Any]) -> list[str]:
    """The headline numbers of ``/api/v1/stats``; ``--json`` has everything."""
    memories = stats.get("memories") or {}
    raw = stats.get("raw") or {}
    bus = stats.get("bus") or {}
    lines = [
        f"memories: {memories.get('total', 0)} ({_counts(memories.get('by_state'))})",
        f"by source: {_counts(memories.get('by_source'))}",
        f"by type: {_counts(memories.get('by_type'))}",
        f"by project: {_counts(memories.get('by_project'))}",
        f"associations: {memories.get('associations', 0)}",
        f"raw: {_counts(raw.get('by_status'))}",
        f"encoding queue: {(stats.get('queues') or {}).get('encoding', 0)}",
        f"events: {bus.get('published', 0)} published, {bus.get('dropped', 0)} dropped",
        f"websocket clients: {(stats.get('websocket') or {}).get('clients', 0)}",
    ]
    errors = stats.get("last_errors") or []
    if errors and isinstance(errors[0], dict):
        e = errors[0]
        lines.append(f"last error: {e.get('at', '?')} {e.get('component', '?')}: {e.get('error')}")
    return lines


def stats(as_json: JsonFlag = False) -> None:
    """What the daemon holds and does: counts, queues, events, errors."""
    result = call("GET", "/api/v1/stats")
    if as_json:
        emit_json(result)
        return
    for line in stats_lines(result):
        emit_line(line)


def register(app: typer.Typer) -> None:
    app.command("list")(list_memories)
    for command in (show, projects, feedback, stats):
        app.command()(command)
    app.add_typer(exclusions_app, name="exclusions")
