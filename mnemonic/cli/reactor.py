"""``reactor``: the reactor's rules, whether each is on, how often it fired and when last."""

from __future__ import annotations

from typing import Any

import typer

from mnemonic.cli.listing import fetch
from mnemonic.cli.memories import JsonFlag


def _when(value: Any) -> str:
    return str(value)[:19].replace("T", " ") if value else "-"


def _state(rule: dict[str, Any]) -> str:
    if not rule["enabled"]:
        return "off"
    return "on" if rule["agent_available"] else "no agent"


def _last(rule: dict[str, Any]) -> str:
    last = rule.get("last_fire")
    if not last:
        return "-"
    return f"{_when(last['at'])} {last['outcome']}"


def rule_lines(answer: dict[str, Any]) -> list[str]:
    """One row per rule: name, state, event -> action, cooldown, fires, last fire."""
    rows = [("RULE", "STATE", "ON", "DO", "COOLDOWN", "FIRES", "LAST FIRE", "WAIT")]
    for rule in answer["rules"]:
        action = ", ".join(f"{k} {v}" for k, v in rule["do"].items())
        wait = rule["cooldown_remaining_s"]
        rows.append(
            (
                rule["name"],
                _state(rule),
                rule["on"],
                action,
                f"{rule['cooldown_s']:g}s",
                str(rule["fires"]),
                _last(rule),
                f"{wait:.0f}s" if wait else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    if not answer["enabled"]:
        lines.append("the reactor is off (reactor.enabled: false)")
    return lines


def reactor(as_json: JsonFlag = False) -> None:
    """The reactor's rules: event -> action, cooldown, fire count and last fire."""
    fetch("/api/v1/reactor/rules", rule_lines, as_json)


def register(app: typer.Typer) -> None:
    app.command()(reactor)
