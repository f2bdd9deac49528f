"""``mnemonic meta``: metacognition's audits from the shell (the latest observation of each
kind, then the recent history), with ``--json``. The human form is a plain function of the
JSON the daemon answers, so it is tested without a daemon."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from mnemonic.cli.listing import fetch, query
from mnemonic.cli.memories import JsonFlag, local_date


class Kind(StrEnum):
    UNEMBEDDED = "unembedded"
    SOURCE_SKEW = "source_skew"
    DEAD_RATIO = "dead_ratio"
    STALE_CONSOLIDATION = "stale_consolidation"
    IRRELEVANT_FEEDBACK = "irrelevant_feedback"
    STORE_SIZE = "store_size"
    RECALL_SELF_TEST = "recall_self_test"


_SHARES = {"unembedded", "source_skew", "dead_ratio", "irrelevant_feedback", "recall_self_test"}


def show_value(kind: str, value: float | None) -> str:
    """A share as a percentage, seconds as hours, bytes as MiB; '-' when unmeasured."""
    if value is None:
        return "-"
    if kind in _SHARES:
        return f"{value * 100:.1f}%"
    if kind == "stale_consolidation":
        return f"{value / 3600:.1f} h"
    if kind == "store_size":
        return f"{value / (1 << 20):.1f} MiB"
    return f"{value:g}"


def observation_line(o: dict[str, Any]) -> str:
    """``2026-03-14 15:09  dead_ratio           warning  62.0%  requested consolidation``."""
    action = f"  {o['action']}" if o.get("action") else ""
    return (
        f"{local_date(o.get('at'))}  {o.get('kind', '?'):<20} {o.get('severity', '?'):<7}  "
        f"{show_value(str(o.get('kind')), o.get('value'))}{action}"
    )


def meta_lines(answer: dict[str, Any]) -> list[str]:
    latest = answer.get("latest") or {}
    if not latest:
        return ["no metacognition observation yet (mnemonic run metacognition)"]
    lines = ["latest:"]
    lines += [f"  {observation_line(o)}" for _, o in sorted(latest.items())]
    history = answer.get("history") or []
    if history:
        lines.append("history:")
        lines += [f"  {observation_line(o)}" for o in history]
    return lines


def meta(
    kind: Annotated[Kind | None, typer.Option("--kind", help="Only this audit.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="History rows.")] = 20,
    as_json: JsonFlag = False,
) -> None:
    """Metacognition's audits: the latest observation per kind (severity, value, what was
    done), then the recent history."""
    fetch("/api/v1/meta", meta_lines, as_json, limit=limit, **query(kind=kind))


def register(app: typer.Typer) -> None:
    app.command()(meta)
