"""``agents`` (what each background agent does and when) and ``run NAME`` (one cycle now).

``run`` starts the cycle without waiting (``wait=false``) and polls the agent list until
the cycle ends, so a long consolidation never hits the client's request timeout and the
user sees that it is working.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.exits import EX_SOFTWARE, EX_TEMPFAIL
from mnemonic.cli.memories import JsonFlag
from mnemonic.cli.runtime import call, emit_json, emit_line, err

_POLL_S = 0.5


def _when(value: Any) -> str:
    return str(value)[:19].replace("T", " ") if value else "-"


def _schedule(schedule: dict[str, Any] | None) -> str:
    schedule = schedule or {}
    if schedule.get("cron"):
        return f"cron {schedule['cron']}"
    if schedule.get("interval_s"):
        seconds = float(schedule["interval_s"])
        return f"every {seconds / 3600:g} h" if seconds >= 3600 else f"every {seconds:g} s"
    return "on demand"


def summary_text(summary: dict[str, Any] | None) -> str:
    """``key value`` pairs of a cycle summary that say something: zeros, false flags,
    timings and nested values are left out (``--json`` has them all)."""
    parts = [
        f"{k}" if v is True else f"{k} {v}"
        for k, v in (summary or {}).items()
        if k not in _QUIET_KEYS
        and (v is True or (isinstance(v, int | float | str) and not isinstance(v, bool) and v))
    ]
    return ", ".join(parts) or "nothing to do"


_QUIET_KEYS = frozenset({"trigger", "took_ms"})


def agent_lines(items: list[dict[str, Any]]) -> list[str]:
    lines = []
    for item in items:
        last = item.get("last_run") or {}
        state = "running" if item.get("running") else ("failed" if last.get("ok") is False else "")
        mode = (item.get("detail") or {}).get("mode")
        lines.append(
            f"{item.get('name')}  {_schedule(item.get('schedule'))}"
            f"{'  [' + mode + ']' if mode else ''}{'  ' + state if state else ''}"
        )
        lines.append(
            f"  last {_when(last.get('finished_at'))}"
            f"  next {_when(item.get('next_run_at'))}"
            f"  {summary_text(last.get('summary')) if last else ''}".rstrip()
        )
        if last.get("error"):
            lines.append(f"  error: {last['error']}")
    return lines


def agents(as_json: JsonFlag = False) -> None:
    """List the background agents: schedule, last run, next run, last summary."""
    result = call("GET", "/api/v1/agents")
    if as_json:
        emit_json(result)
        return
    items = result.get("items") or []
    if not items:
        err.print("no background agents are configured")
    for line in agent_lines(items):
        emit_line(escape(line))


def _find(name: str) -> dict[str, Any]:
    for item in call("GET", "/api/v1/agents").get("items") or []:
        if item.get("name") == name:
            return dict(item)
    return {}


def run(
    name: Annotated[str, typer.Argument(metavar="NAME", help="An agent ('mnemonic agents').")],
    timeout: Annotated[
        float, typer.Option(metavar="SECONDS", help="Stop waiting after this long.")
    ] = 3600.0,
    as_json: JsonFlag = False,
) -> None:
    """Run one cycle of a background agent now and print its summary."""
    started = call("POST", f"/api/v1/agents/{name}/run", wait="false")
    began = time.monotonic()
    previous = (started.get("run") or {}).get("started_at")
    record: dict[str, Any] = {}
    with err.status(f"running {escape(name)}…"):
        while time.monotonic() - began < timeout:
            time.sleep(_POLL_S)
            item = _find(name)
            last = item.get("last_run") or {}
            if not item.get("running") and last.get("started_at", "") >= (previous or ""):
                record = last
                break
    if not record:
        err.print(f"{escape(name)} is still running after {timeout:g} s ('mnemonic agents')")
        raise typer.Exit(EX_TEMPFAIL)
    if as_json:
        emit_json({"agent": name, "run": record})
    else:
        took = record.get("took_ms")
        emit_line(
            escape(
                f"{name}: {'ok' if record.get('ok') else 'failed'}"
                f"{f' in {took / 1000:.1f} s' if took is not None else ''}:"
                f" {summary_text(record.get('summary'))}"
            )
        )
        if record.get("error"):
            err.print(f"[red]{escape(str(record['error']))}[/red]")
    if not record.get("ok"):
        raise typer.Exit(EX_SOFTWARE)


def register(app: typer.Typer) -> None:
    app.command()(agents)
    app.command()(run)
