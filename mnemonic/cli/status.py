"""``mnemonic status``: is the daemon up, and what does it hold?

It reads ``/api/v1/health`` and, when the daemon has it, ``/api/v1/stats``. Every field is
optional in the rendering so an older or newer daemon never breaks the command; the
formatting is plain functions tested with tables of inputs.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mnemonic.cli.client import ApiError, DaemonDown
from mnemonic.cli.exits import EX_UNAVAILABLE
from mnemonic.cli.runtime import api_failed, connect, daemon_down, emit_json, emit_line

WATCHER_PREFIX = "watcher:"


def format_duration(seconds: float | None) -> str:
    """``42s``, ``5m 07s``, ``3h 04m``, ``2d 03h``; ``?`` when unknown."""
    if seconds is None or seconds < 0:
        return "?"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def memory_counts(health: dict[str, Any], stats: dict[str, Any] | None) -> dict[str, int]:
    """Memories by state, from stats when present, else from health's ``memories_<state>``."""
    by_state = ((stats or {}).get("memories") or {}).get("by_state")
    if isinstance(by_state, dict) and by_state:
        return {str(k): int(v) for k, v in by_state.items()}
    counts = health.get("memories") or {}
    return {
        key.removeprefix("memories_"): int(value)
        for key, value in counts.items()
        if key.startswith("memories_") and isinstance(value, int)
    }


def last_error(health: dict[str, Any], stats: dict[str, Any] | None) -> dict[str, Any] | None:
    """The newest recorded error: stats' ``last_errors``, else a crashed agent's."""
    errors = (stats or {}).get("last_errors") or []
    if errors and isinstance(errors[0], dict):
        return dict(errors[0])
    agents = (stats or {}).get("agents") or []
    for agent in agents:
        if isinstance(agent, dict) and agent.get("last_error"):
            return {
                "at": agent.get("last_error_at"),
                "component": agent.get("name"),
                "error": agent["last_error"],
            }
    return None


def agent_state(agent: dict[str, Any]) -> str:
    """A watcher's own state (``disabled``, ``degraded``...) rather than its supervisor's
    (a watcher that cannot run here returns at once: ``finished`` says nothing useful)."""
    detail = agent.get("detail")
    if str(agent.get("name", "")).startswith(WATCHER_PREFIX) and isinstance(detail, dict):
        own = detail.get("state")
        if isinstance(own, str) and own:
            return own
    return str(agent.get("state", "?"))


def watchers(health: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each watcher's state and the reason it gives, from health's agents."""
    found: dict[str, dict[str, Any]] = {}
    for agent in health.get("agents") or []:
        name = str(agent.get("name", "")) if isinstance(agent, dict) else ""
        if name.startswith(WATCHER_PREFIX):
            detail = agent.get("detail")
            message = detail.get("message") if isinstance(detail, dict) else None
            found[name.removeprefix(WATCHER_PREFIX)] = {
                "state": agent_state(agent),
                "message": message,
            }
    return found


def status_lines(health: dict[str, Any], stats: dict[str, Any] | None) -> list[str]:
    """Human lines, plain text."""
    state = health.get("status", "?")
    lines = [
        f"mnemonic {health.get('version', '?')} is running ({state}), "
        f"pid {health.get('pid', '?')}, up {format_duration(health.get('uptime_s'))}"
    ]
    if health.get("url"):
        lines.append(f"url: {health['url']}")
    lines.extend(f"degraded: {reason}" for reason in health.get("reasons") or [])
    by_state = memory_counts(health, stats)
    raw = health.get("memories") or {}
    shown = ", ".join(f"{n} {s}" for s, n in by_state.items())
    line = f"memories: {sum(by_state.values())}" + (f" ({shown})" if shown else "")
    if "raw_pending" in raw or "raw_failed" in raw:
        line += f"; raw: {raw.get('raw_pending', 0)} pending, {raw.get('raw_failed', 0)} failed"
    lines.append(line)
    emb = health.get("embedding") or {}
    if emb:
        vectors = (health.get("vector_index") or {}).get("path", "?")
        lines.append(
            f"embedding: {emb.get('model', '?')} ({emb.get('dim', '?')}-d), "
            f"backlog {emb.get('backlog', 0)}; vectors: {vectors}"
        )
    agents = health.get("agents") or (stats or {}).get("agents") or []
    if agents:
        lines.append("agents: " + ", ".join(f"{a.get('name')} {agent_state(a)}" for a in agents))
    for name, watcher in watchers(health).items():
        if watcher["state"] in ("disabled", "degraded") and watcher["message"]:
            lines.append(f"{name} watcher {watcher['state']}: {watcher['message']}")
    error = last_error(health, stats)
    if error:
        lines.append(
            f"last error: {error.get('at') or '?'} {error.get('component') or '?'}: "
            f"{error.get('error')}"
        )
    return lines


def _fetch() -> tuple[dict[str, Any], dict[str, Any] | None]:
    with connect() as client:
        try:
            health = client.request("GET", "/api/v1/health")
        except DaemonDown:
            daemon_down(client.base_url)
        except ApiError as exc:
            api_failed(exc)
        try:
            stats = client.request("GET", "/api/v1/stats")
        except (DaemonDown, ApiError):
            stats = None  # an older daemon without /stats, or it just went away
        return health, stats


def status(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Is the daemon running, and what does it hold? Exit 69 when it is down."""
    try:
        health, stats = _fetch()
    except typer.Exit as stop:
        if as_json and stop.exit_code == EX_UNAVAILABLE:
            emit_json({"running": False})
        raise
    if as_json:
        emit_json(
            {
                **health,
                "running": True,
                "watchers": watchers(health),
                "last_error": last_error(health, stats),
                "stats": stats,
            }
        )
        return
    for line in status_lines(health, stats):
        emit_line(line)


def register(app: typer.Typer) -> None:
    app.command()(status)
