"""``mnemonic insights`` (list, newest first) and ``mnemonic insights show ID``: the
dreamer's insights from the shell, each with ``--json``. The human forms are plain
functions of the JSON the daemon answers, so they are tested without a daemon."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.memories import JsonFlag, local_date
from mnemonic.cli.runtime import call, emit_json, emit_line, err

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
    project: Annotated[str | None, typer.Option(metavar="NAME", help="Only this project.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=200, metavar="N", help="Page size.")] = 20,
    cursor: Annotated[
        str | None, typer.Option(metavar="CURSOR", help="Next page (printed by the last one).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List insights, newest first (a page at a time)."""
    if ctx.invoked_subcommand is not None:
        return
    params: dict[str, Any] = {"limit": limit}
    if project:
        params["project"] = project
    if cursor:
        params["cursor"] = cursor
    page = call("GET", "/api/v1/insights", **params)
    if as_json:
        emit_json(page)
        return
    items = page.get("items") or []
    err.print(f"{len(items)} insights, newest first")
    for item in items:
        emit_line(insight_line(item))
    if page.get("next_cursor"):
        err.print(
            f"more: mnemonic insights --cursor {escape(page['next_cursor'])}", highlight=False
        )


@insights_app.command("show")
def show(
    insight_id: Annotated[str, typer.Argument(metavar="ID", help="The insight's id.")],
    as_json: JsonFlag = False,
) -> None:
    """One insight and the memories it came from."""
    detail = call("GET", f"/api/v1/insights/{insight_id}")
    if as_json:
        emit_json(detail)
        return
    for line in show_lines(detail):
        emit_line(line)


def register(app: typer.Typer) -> None:
    app.add_typer(insights_app, name="insights")
