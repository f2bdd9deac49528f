"""``mnemonic patterns`` and ``mnemonic abstractions``: recurring themes, and the
principles and axioms above them, from the shell; each command with ``--json``. The human
forms are plain functions of the JSON the daemon answers, tested without a daemon."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from mnemonic.cli.listing import Cursor, Limit, Project, dismissed, fetch, list_page, query
from mnemonic.cli.memories import JsonFlag

patterns_app = typer.Typer(help="Patterns: recurring themes. Without a subcommand: list them.")
abstractions_app = typer.Typer(
    help="Abstractions: patterns, principles, axioms. Without a subcommand: list them."
)


class Level(StrEnum):
    PATTERN = "pattern"
    PRINCIPLE = "principle"
    AXIOM = "axiom"


class State(StrEnum):
    ACTIVE = "active"
    DEMOTED = "demoted"
    ARCHIVED = "archived"
    DISMISSED = "dismissed"
    MERGED = "merged"


def abstraction_line(item: dict[str, Any]) -> str:
    """``0.82  active    12  pattern    title  id``."""
    return (
        f"{float(item.get('strength', 0)):.2f}  {item.get('state', '?'):<9} "
        f"{item.get('evidence_count', 0):>4}  {item.get('level', '?'):<9}  "
        f"{item.get('title', '')}  {item.get('id', '?')}"
    )


def show_lines(detail: dict[str, Any]) -> list[str]:
    """One abstraction: fields, concepts, then its children and evidence."""
    a = detail.get("abstraction") or {}
    keys = ("id", "level", "state", "title", "project", "strength", "confidence", "grounding")
    lines = [f"{k}: {a[k]}" for k in keys if a.get(k) not in (None, "")]
    if a.get("merged_into"):
        lines.append(f"merged into: {a['merged_into']}")
    if a.get("concepts"):
        lines.append("concepts: " + ", ".join(str(c) for c in a["concepts"]))
    if a.get("description"):
        lines += ["", str(a["description"])]
    children = detail.get("children") or []
    if children:
        lines += ["", "children:"] + [f"  {abstraction_line(c)}" for c in children]
    evidence = detail.get("evidence") or []
    if evidence:
        lines += ["", f"evidence ({a.get('evidence_count', len(evidence))} memories):"]
        lines += [
            f"  {str(e.get('timestamp', ''))[:16]}  {e.get('state', '?'):<8} "
            f"{e.get('id', '?')} {e.get('summary') or ''}".rstrip()
            for e in evidence
        ]
    if detail.get("truncated"):
        lines.append("  … (more evidence than shown)")
    return lines


_State = Annotated[State | None, typer.Option(metavar="STATE", help="Only this state.")]
_Id = Annotated[str, typer.Argument(metavar="ID", help="The id.")]


@patterns_app.callback(invoke_without_command=True)
def list_patterns(
    ctx: typer.Context,
    state: _State = None,
    project: Project = None,
    min_strength: Annotated[
        float, typer.Option(min=0, max=1, metavar="X", help="Only at least this strong.")
    ] = 0.0,
    limit: Limit = 20,
    cursor: Cursor = None,
    as_json: JsonFlag = False,
) -> None:
    """List patterns (recurring themes), strongest first."""
    params = query(
        limit=limit, state=state, project=project, min_strength=min_strength, cursor=cursor
    )
    list_page(ctx, "patterns", params, as_json, abstraction_line, "strongest first")


@patterns_app.command("dismiss")
def dismiss_pattern(
    pattern_id: Annotated[str, typer.Argument(metavar="ID", help="The pattern's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Dismiss a pattern: it stays dismissed and is not found again."""
    fetch(f"/api/v1/patterns/{pattern_id}/dismiss", dismissed, as_json, method="POST")


@abstractions_app.callback(invoke_without_command=True)
def list_abstractions(
    ctx: typer.Context,
    level: Annotated[
        Level | None, typer.Option(metavar="LEVEL", help="pattern, principle or axiom.")
    ] = None,
    state: _State = None,
    project: Project = None,
    limit: Limit = 20,
    cursor: Cursor = None,
    as_json: JsonFlag = False,
) -> None:
    """List abstractions (patterns, principles, axioms), strongest first."""
    params = query(limit=limit, level=level, state=state, project=project, cursor=cursor)
    list_page(ctx, "abstractions", params, as_json, abstraction_line, "strongest first")


@abstractions_app.command("show")
def show(abstraction_id: _Id, as_json: JsonFlag = False) -> None:
    """One abstraction with its evidence memories and children."""
    fetch(f"/api/v1/abstractions/{abstraction_id}", show_lines, as_json)


@abstractions_app.command("dismiss")
def dismiss(abstraction_id: _Id, as_json: JsonFlag = False) -> None:
    """Dismiss an abstraction of any level: it stays dismissed."""
    fetch(f"/api/v1/abstractions/{abstraction_id}/dismiss", dismissed, as_json, method="POST")


def register(app: typer.Typer) -> None:
    app.add_typer(patterns_app, name="patterns")
    app.add_typer(abstractions_app, name="abstractions")
