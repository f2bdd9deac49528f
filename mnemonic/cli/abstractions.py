"""``mnemonic patterns`` and ``mnemonic abstractions``: recurring themes, and the
principles and axioms above them, from the shell; each command with ``--json``. The human
forms are plain functions of the JSON the daemon answers, tested without a daemon."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.memories import JsonFlag
from mnemonic.cli.runtime import call, emit_json, emit_line, err

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


def _print_page(page: dict[str, Any], what: str, more: str) -> None:
    items = page.get("items") or []
    err.print(f"{len(items)} {what}, strongest first")
    for item in items:
        emit_line(abstraction_line(item))
    if page.get("next_cursor"):
        err.print(f"more: {more} --cursor {escape(page['next_cursor'])}", highlight=False)


_Limit = Annotated[int, typer.Option(min=1, max=200, metavar="N", help="Page size.")]
_Cursor = Annotated[
    str | None, typer.Option(metavar="CURSOR", help="Next page (printed by the last one).")
]
_State = Annotated[State | None, typer.Option(metavar="STATE", help="Only this state.")]
_Project = Annotated[str | None, typer.Option(metavar="NAME", help="Only this project.")]


def _params(**values: Any) -> dict[str, Any]:
    return {k: (v.value if isinstance(v, StrEnum) else v) for k, v in values.items() if v}


@patterns_app.callback(invoke_without_command=True)
def list_patterns(
    ctx: typer.Context,
    state: _State = None,
    project: _Project = None,
    min_strength: Annotated[
        float, typer.Option(min=0, max=1, metavar="X", help="Only at least this strong.")
    ] = 0.0,
    limit: _Limit = 20,
    cursor: _Cursor = None,
    as_json: JsonFlag = False,
) -> None:
    """List patterns (recurring themes), strongest first."""
    if ctx.invoked_subcommand is not None:
        return
    params = _params(state=state, project=project, min_strength=min_strength, cursor=cursor)
    page = call("GET", "/api/v1/patterns", limit=limit, **params)
    if as_json:
        emit_json(page)
        return
    _print_page(page, "patterns", "mnemonic patterns")


@patterns_app.command("dismiss")
def dismiss_pattern(
    pattern_id: Annotated[str, typer.Argument(metavar="ID", help="The pattern's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Dismiss a pattern: it stays dismissed and is not found again."""
    result = call("POST", f"/api/v1/patterns/{pattern_id}/dismiss")
    if as_json:
        emit_json(result)
        return
    emit_line(f"dismissed {result['id']}")


@abstractions_app.callback(invoke_without_command=True)
def list_abstractions(
    ctx: typer.Context,
    level: Annotated[
        Level | None, typer.Option(metavar="LEVEL", help="pattern, principle or axiom.")
    ] = None,
    state: _State = None,
    project: _Project = None,
    limit: _Limit = 20,
    cursor: _Cursor = None,
    as_json: JsonFlag = False,
) -> None:
    """List abstractions (patterns, principles, axioms), strongest first."""
    if ctx.invoked_subcommand is not None:
        return
    params = _params(level=level, state=state, project=project, cursor=cursor)
    page = call("GET", "/api/v1/abstractions", limit=limit, **params)
    if as_json:
        emit_json(page)
        return
    _print_page(page, "abstractions", "mnemonic abstractions")


@abstractions_app.command("show")
def show(
    abstraction_id: Annotated[str, typer.Argument(metavar="ID", help="The id.")],
    as_json: JsonFlag = False,
) -> None:
    """One abstraction with its evidence memories and children."""
    detail = call("GET", f"/api/v1/abstractions/{abstraction_id}")
    if as_json:
        emit_json(detail)
        return
    for line in show_lines(detail):
        emit_line(line)


@abstractions_app.command("dismiss")
def dismiss(
    abstraction_id: Annotated[str, typer.Argument(metavar="ID", help="The id.")],
    as_json: JsonFlag = False,
) -> None:
    """Dismiss an abstraction of any level: it stays dismissed."""
    result = call("POST", f"/api/v1/abstractions/{abstraction_id}/dismiss")
    if as_json:
        emit_json(result)
        return
    emit_line(f"dismissed {result['id']}")


def register(app: typer.Typer) -> None:
    app.add_typer(patterns_app, name="patterns")
    app.add_typer(abstractions_app, name="abstractions")
