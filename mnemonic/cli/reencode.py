"""``reencode``: after an LLM outage, queue memories encoded heuristically for the LLM.

Opt-in and budgeted: the daemon's enrichment agent works through the queue within
``enrichment.max_per_hour``. Without a configured LLM the daemon answers 409 and this
command prints its message (exit 65).
"""

from __future__ import annotations

from typing import Annotated

import typer

from mnemonic.cli.memories import JsonFlag
from mnemonic.cli.runtime import call, emit_json, emit_line


def reencode(
    since: Annotated[
        str,
        typer.Option(
            metavar="WHEN",
            help="Memories stored since: a duration back from now (7d, 12h, 30m) or an ISO time.",
        ),
    ] = "7d",
    limit: Annotated[
        int, typer.Option(min=1, max=10_000, help="Queue at most this many (newest first).")
    ] = 500,
    as_json: JsonFlag = False,
) -> None:
    """Queue memories encoded without an LLM for LLM encoding (after an outage)."""
    result = call("POST", "/api/v1/reencode", {"since": since, "limit": limit})
    if as_json:
        emit_json(result)
        return
    emit_line(
        f"queued {result['queued']} memories for re-encoding ({result['queue']} waiting); "
        "the enrichment agent works through them within its hourly budget"
    )


def register(app: typer.Typer) -> None:
    app.command()(reencode)
