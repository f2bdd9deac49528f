"""``mnemonic episodes`` (list, with filters) and ``mnemonic episodes show ID``: episodes
from the shell, each with ``--json``. The human forms are plain functions of the JSON the
daemon answers, so they are tested without a daemon."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.memories import JsonFlag, local_date
from mnemonic.cli.runtime import call, emit_json, emit_line, err

episodes_app = typer.Typer(
    help="Episodes: stretches of work per project. Without a subcommand: list them."
)


class EpisodeState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


def episode_line(item: dict[str, Any]) -> str:
    """``2026-03-14 15:09 .. 16:02  closed  12  project: title  id``."""
    start, end = local_date(item.get("started_at")), local_date(item.get("ended_at"))
    if start[:10] == end[:10]:
        end = end[11:]
    title = item.get("title") or "(not described yet)"
    return (
        f"{start} .. {end}  {item.get('state', '?'):<6}  {item.get('memory_count', 0):>4}  "
        f"{title}  {item.get('id', '?')}"
    )


def show_lines(detail: dict[str, Any]) -> list[str]:
    """An episode: its fields, then its memories in time order."""
    episode = detail.get("episode") or {}
    lines = [
        f"{key}: {episode[key]}"
        for key in ("id", "project", "state", "title", "started_at", "ended_at", "salience")
        if episode.get(key) not in (None, "")
    ]
    lines.append(f"memories: {episode.get('memory_count', 0)}")
    for key in ("concepts", "files", "commands"):
        values = episode.get(key) or []
        if values:
            lines.append(f"{key}: " + ", ".join(str(v) for v in values))
    if episode.get("summary"):
        lines += ["", str(episode["summary"])]
    members = detail.get("memories") or []
    if members:
        lines += ["", "memories (in time order):"]
        lines += [
            f"  {local_date(m.get('timestamp'))}  {m.get('type', '?'):<8} "
            f"{m.get('id', '?')} {m.get('summary') or ''}".rstrip()
            for m in members
        ]
    if detail.get("truncated"):
        lines.append("  … (more memories than shown)")
    return lines


@episodes_app.callback(invoke_without_command=True)
def list_episodes(
    ctx: typer.Context,
    project: Annotated[str | None, typer.Option(metavar="NAME", help="Only this project.")] = None,
    state: Annotated[
        EpisodeState | None,
        typer.Option(metavar="STATE", help="Only open or only closed episodes."),
    ] = None,
    since: Annotated[
        str | None, typer.Option(metavar="WHEN", help="Overlapping this time or later (ISO).")
    ] = None,
    until: Annotated[
        str | None, typer.Option(metavar="WHEN", help="Overlapping this time or earlier (ISO).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=200, metavar="N", help="Page size.")] = 20,
    cursor: Annotated[
        str | None, typer.Option(metavar="CURSOR", help="Next page (printed by the last one).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List episodes, newest first (a page at a time)."""
    if ctx.invoked_subcommand is not None:
        return
    params: dict[str, Any] = {"limit": limit}
    for key, value in (
        ("project", project),
        ("state", state.value if state else None),
        ("since", since),
        ("until", until),
        ("cursor", cursor),
    ):
        if value:
            params[key] = value
    page = call("GET", "/api/v1/episodes", **params)
    if as_json:
        emit_json(page)
        return
    items = page.get("items") or []
    err.print(f"{len(items)} episodes, newest first")
    for item in items:
        emit_line(episode_line(item))
    if page.get("next_cursor"):
        err.print(
            f"more: mnemonic episodes --cursor {escape(page['next_cursor'])}", highlight=False
        )


@episodes_app.command("show")
def show(
    episode_id: Annotated[str, typer.Argument(metavar="ID", help="The episode's id.")],
    as_json: JsonFlag = False,
) -> None:
    """One episode: title, summary, files, commands and its memories in time order."""
    detail = call("GET", f"/api/v1/episodes/{episode_id}")
    if as_json:
        emit_json(detail)
        return
    for line in show_lines(detail):
        emit_line(line)


def register(app: typer.Typer) -> None:
    app.add_typer(episodes_app, name="episodes")
