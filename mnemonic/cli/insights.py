"""``mnemonic insights`` (list, newest first) and ``mnemonic insights show ID``: the
dreamer's insights from the shell, each with ``--json``. The human forms are plain
functions of the JSON the daemon answers, so they are tested without a daemon."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mnemonic.cli.listing import Cursor, Limit, Project, fetch, list_page, query
from mnemonic.cli.memories import JsonFlag, local_date

insights_app = typer.Typer(
    help="Insights the dreamer wrote (recurring co-occurrences across episodes). "
    "Without a subcommand: list them."
)


def insight_line(item: dict[str, Any]) -> str:
    """``2026-03-14 15:09  [project]  content  id``."""
    project = f"[{item['project']}] " if item.get("project") else ""
    when = local_date(item.get("timestamp"))
    return f"{when}  {project}{item.get('content', '')}  {item.get('id', '?')}"


def show_lines(detail: dict[str, Any]) -> list[str]:
    """An insight: its fields, then the memories it came from."""
    insight = detail.get("insight") or {}
    lines = [
        f"{key}: {insight[key]}"
        for key in ("id", "project", "state", "timestamp", "described_by", "episodes")
        if insight.get(key) not in (None, "")
    ]
    if insight.get("terms"):
        lines.append("terms: " + ", ".join(str(t) for t in insight["terms"]))
    lines += ["", str(insight.get("content", ""))]
    sources = detail.get("sources") or []
    if sources:
        lines += ["", f"from {len(sources)} memories:"]
        for s in sources:
            when = local_date(s.get("timestamp"))
            lines.append(f"  {when}  {s.get('id', '?')} {s.get('summary') or ''}".rstrip())
    return lines


@insights_app.callback(invoke_without_command=True)
def list_insights(
    ctx: typer.Context,
    project: Project = None,
    limit: Limit = 20,
    cursor: Cursor = None,
    as_json: JsonFlag = False,
) -> None:
    """List insights, newest first (a page at a time)."""
    params = query(limit=limit, project=project, cursor=cursor)
    list_page(ctx, "insights", params, as_json, insight_line, "newest first")


@insights_app.command("show")
def show(
    insight_id: Annotated[str, typer.Argument(metavar="ID", help="The insight's id.")],
    as_json: JsonFlag = False,
) -> None:
    """One insight and the memories it came from."""
    fetch(f"/api/v1/insights/{insight_id}", show_lines, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(insights_app, name="insights")
