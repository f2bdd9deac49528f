"""``remember``, ``recall``, ``forget`` and ``amend``: thin adapters over the REST API."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from mnemonic.cli.exits import EX_DATAERR, EX_USAGE
from mnemonic.cli.runtime import call, emit_json, emit_line, err, out

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
STDIN = "-"


def read_text(arg: str | None, what: str) -> str:
    """The argument, or stdin when it is ``-`` (or missing and stdin is piped).

    One trailing newline is dropped (``echo`` adds it); an empty text is a data error
    (65) rather than a request the daemon would refuse anyway.
    """
    if arg is None and sys.stdin.isatty():
        err.print(f"give the {what} as an argument, or '-' to read it from stdin")
        raise typer.Exit(EX_USAGE)
    text = sys.stdin.read() if arg in (None, STDIN) else arg
    text = text.removesuffix("\n").removesuffix("\r")
    if not text.strip():
        err.print(f"the {what} is empty")
        raise typer.Exit(EX_DATAERR)
    return text


def remember(
    text: Annotated[str, typer.Argument(help="What to remember ('-' reads stdin).")],
    project: Annotated[str, typer.Option(help="Project name.")] = "",
    type_: Annotated[str | None, typer.Option("--type", help="decision, error, ...")] = None,
    source: Annotated[str, typer.Option(help="Source label.")] = "terminal",
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
    as_json: JsonFlag = False,
) -> None:
    """Recall memories by meaning and words."""
    body: dict[str, Any] = {"query": query, "limit": limit, "explain": explain}
    if project:
        body["project"] = project
    result = call("POST", "/api/v1/query", body)
    if as_json:
        emit_json(result)
        return
    out.print(recall_table(result, explain=explain))
    out.print(f"query id: {result['query_id']}", style="dim")


def recall_table(result: dict[str, Any], *, explain: bool) -> Table:
    table = Table(title=f"{len(result['results'])} memories ({result['took_ms']:.1f} ms)")
    table.add_column("score", justify="right")
    table.add_column("type")
    table.add_column("project")
    table.add_column("summary")
    if explain:
        table.add_column("why")
    for item in result["results"]:
        memory = item["memory"]
        row = [
            f"{item['score']:.3f}",
            escape(str(memory["type"])),
            escape(memory["project"] or ""),
            escape(memory["summary"] or ""),
        ]
        if explain:
            parts = item.get("explain", {}).get("contributions", {})
            row.append(", ".join(f"{k} {v:.3f}" for k, v in parts.items() if v))
        table.add_row(*row)
    return table


def forget(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Forget a memory: it is archived (kept, but no longer recalled by default)."""
    memory = call("DELETE", f"/api/v1/memories/{memory_id}")
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
