"""``mnemonic episodes`` (list, with filters) and ``mnemonic episodes show ID``: episodes
from the shell, each with ``--json``. The human forms are plain functions of the JSON the
daemon answers, so they are tested without a daemon."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from mnemonic.cli.listing import Cursor, Limit, Project, fetch, list_page, query
from mnemonic.cli.memories import JsonFlag, local_date

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
    project: Project = None,
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
    limit: Limit = 20,
    cursor: Cursor = None,
    as_json: JsonFlag = False,
) -> None:
    """List episodes, newest first (a page at a time)."""
    params = query(
        limit=limit, project=project, state=state, since=since, until=until, cursor=cursor
    )
    list_page(ctx, "episodes", params, as_json, episode_line, "newest first")


@episodes_app.command("show")
def show(
    episode_id: Annotated[str, typer.Argument(metavar="ID", help="The episode's id.")],
    as_json: JsonFlag = False,
) -> None:
    """One episode: title, summary, files, commands and its memories in time order."""
    fetch(f"/api/v1/episodes/{episode_id}", show_lines, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(episodes_app, name="episodes")
