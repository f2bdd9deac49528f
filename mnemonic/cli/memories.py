"""``remember``, ``recall``, ``forget`` and ``amend``: thin adapters over the REST API."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.exits import EX_DATAERR, EX_USAGE
from mnemonic.cli.runtime import call, emit_json, emit_line, err

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
STDIN = "-"


def read_text(arg: str | None, what: str) -> str:
    """The argument, or stdin when it is ``-``.

    A missing argument is a usage error (64), even with stdin piped: reading stdin only
    because it is not a terminal would hang under a scheduler or eat a script's input.
    One trailing newline is dropped (``echo`` adds it); an empty text is a data error
    (65) rather than a request the daemon would refuse anyway.
    """
    if arg is None:
        err.print(f"give the {what} as an argument, or '-' to read it from stdin")
        raise typer.Exit(EX_USAGE)
    text = sys.stdin.read() if arg == STDIN else arg
    text = text.removesuffix("\n").removesuffix("\r")
    if not text.strip():
        err.print(f"the {what} is empty")
        raise typer.Exit(EX_DATAERR)
    return text


def remember(
    text: Annotated[str, typer.Argument(help="What to remember ('-' reads stdin).")],
    project: Annotated[str, typer.Option(help="Project name.")] = "",
    type_: Annotated[str | None, typer.Option("--type", help="decision, error, ...")] = None,
    source: Annotated[
        str, typer.Option(metavar="SOURCE", help="Where it came from (api, mcp, user, ...).")
    ] = "cli",
    as_json: JsonFlag = False,
) -> None:
    """Store a memory (waits until it is encoded)."""
    body: dict[str, Any] = {
        "content": read_text(text, "memory"),
        "project": project,
        "source": source,
    }
    if type_:
        body["type"] = type_
    result = call("POST", "/api/v1/memories", body, wait="true")
    if as_json:
        emit_json(result)
    else:
        emit_line(f"{result['status']}: memory {result['memory_id']}")


def recall(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option(min=1, max=100)] = 10,
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    explain: Annotated[bool, typer.Option(help="Show each signal's contribution.")] = False,
    min_score: Annotated[
        float | None,
        typer.Option(
            min=0.0, max=1.0, help="Leave out results scoring below this (0-1; 0 keeps all)."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(metavar="WHEN", help="Only memories from then on (ISO date or time)."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(metavar="WHEN", help="Only memories up to then (ISO date or time)."),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN",
            help="Recall as memory stood then: later memories and supersessions are ignored.",
        ),
    ] = None,
    asked_at: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN",
            help="Read 'last week', 'two days ago', ... in the query from then (default: "
            "--as-of, else now).",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Recall memories by meaning and words."""
    body: dict[str, Any] = {"query": query, "limit": limit, "explain": explain}
    if project:
        body["project"] = project
    if min_score is not None:
        body["min_score"] = min_score
    # passed as given: the daemon parses them; a bad one is its 422, a data error (65)
    for key, when in (("since", since), ("until", until), ("as_of", as_of), ("asked_at", asked_at)):
        if when:
            body[key] = when
    result = call("POST", "/api/v1/query", body)
    if as_json:
        emit_json(result)
        return
    err.print(f"{len(result['results'])} memories ({result['took_ms']:.1f} ms)")
    for line in recall_lines(result, explain=explain):
        emit_line(line)
    emit_line(f"query id: {result['query_id']}")


def entry_lines(memory: dict[str, Any], lead: str = "") -> list[str]:
    """Two lines per memory, readable at any terminal width and greppable: ``lead`` (a
    score), the whole id (``forget``/``amend``/``show`` take it), source/type, local
    date, project; then the title, indented."""
    head = [
        str(memory.get("id", "?")),
        f"{memory.get('source', '?')}/{memory.get('type', '?')}",
        local_date(memory.get("timestamp")),
    ]
    if memory.get("project"):
        head.append(str(memory["project"]))
    if memory.get("state") not in (None, "active"):
        head.append(f"[{memory['state']}]")
    indent = " " * (len(lead) + 2) if lead else "  "
    first = "  ".join([lead, *head]) if lead else "  ".join(head)
    return [first, indent + _one_line(title(memory))]


def recall_lines(result: dict[str, Any], *, explain: bool) -> list[str]:
    lines: list[str] = []
    for item in result.get("results") or []:
        lead = f"{item.get('score', 0):.3f}"
        lines += entry_lines(item.get("memory") or {}, lead)
        if explain:
            parts = (item.get("explain") or {}).get("contributions") or {}
            why = ", ".join(f"{k} {v:.3f}" for k, v in parts.items() if v)
            lines.append(" " * (len(lead) + 2) + f"why: {why or '-'}")
            via = (item.get("explain") or {}).get("via")
            if via:  # the link spreading activation crossed to reach it
                lines.append(
                    " " * (len(lead) + 2)
                    + f"via: {via['relation']} {via['strength']:.2f} from {via['from']}"
                    + f" ({_one_line(str(via.get('from_summary') or ''), 60)})"
                )
    return lines


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def local_date(at: Any) -> str:
    """``2026-03-14 15:09`` in local time; the raw value when it is not ISO."""
    try:
        return datetime.fromisoformat(str(at)).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return str(at or "")


def title(memory: dict[str, Any]) -> str:
    """A file memory is titled by its path (its first line is usually an import or a
    heading that says nothing about which file it is); others by their summary."""
    metadata = memory.get("metadata")
    path = metadata.get("path") if isinstance(metadata, dict) else None
    if memory.get("source") == "filesystem" and isinstance(path, str) and path:
        return path
    return str(memory.get("summary") or memory.get("content") or "")


def forget(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Forget a memory: it is archived (kept, but no longer recalled by default)."""
    show_state(call("DELETE", f"/api/v1/memories/{memory_id}"), as_json)


def show_state(memory: dict[str, Any], as_json: bool) -> None:
    """A memory whose state a command changed: the memory as JSON, or its new state."""
    if as_json:
        emit_json(memory)
    else:
        emit_line(f"{memory['state']}: memory {memory['id']}")


def amend(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    content: Annotated[
        str | None,
        typer.Argument(metavar="CONTENT|-", help="The corrected text; '-' reads stdin."),
    ] = None,
    reason: Annotated[str | None, typer.Option(help="Why it changed (kept with it).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Correct a memory's content; the old text is kept in its amendments."""
    body = {"content": read_text(content, "new content"), "reason": reason}
    memory = call("PATCH", f"/api/v1/memories/{memory_id}", body)
    if as_json:
        emit_json(memory)
    else:
        emit_line(f"amended: memory {memory['id']}")
        err.print(f"summary: {escape(str(memory.get('summary', '')))}", style="dim")


def register(app: typer.Typer) -> None:
    for command in (remember, recall, forget, amend):
        app.command()(command)
