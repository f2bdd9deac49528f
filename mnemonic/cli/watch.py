"""``mnemonic watch``: tail the daemon's event stream (``/ws``).

One line per event (local time, type, a short payload) or, with ``--json``, the events
as JSON lines for ``jq``. The server's own keep-alive messages are skipped; when the
server had to drop events for this client it says so on stderr (and in the JSON stream).
Ctrl-C ends with 0. When the daemon restarts (it closes the stream with 1012, "service
restart") the tail reconnects with backoff for up to ``--reconnect-for`` seconds; events
published while it was away are not replayed. Any other close ends with 69 (or 64 when the
daemon refused the filter, 75 when it has too many clients), so a supervisor can restart
the tail.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.client import ws_url
from mnemonic.cli.exits import EX_OK, EX_TEMPFAIL, EX_UNAVAILABLE, EX_USAGE, exit_for_status
from mnemonic.cli.runtime import daemon_url, emit_line, err, load, token
from mnemonic.events.types import EVENT_TYPES_BY_NAME

if TYPE_CHECKING:
    from websockets.sync.client import ClientConnection

CLOSE_POLICY = 1008
CLOSE_TRY_AGAIN = 1013
CLOSE_RESTART = 1012
"""What uvicorn sends every WebSocket when the daemon shuts down (a restart or a stop)."""
BACKOFF_FIRST_S = 0.25
BACKOFF_MAX_S = 5.0
RECONNECT_FOR_S = 300.0
VALUE_CHARS = 60
LINE_CHARS = 200
_SKIP = frozenset({"ping"})


def parse_types(raw: str | None) -> list[str]:
    """``"a, b,a"`` -> ``["a", "b"]`` (order kept, blanks and repeats dropped)."""
    seen: list[str] = []
    for part in (raw or "").split(","):
        name = part.strip()
        if name and name not in seen:
            seen.append(name)
    return seen


def unknown_types(names: Iterable[str]) -> list[str]:
    return sorted(n for n in names if n not in EVENT_TYPES_BY_NAME)


def complete_types(incomplete: str) -> list[str]:
    """Shell completion for ``--types``: the event names, after the last comma."""
    head, _, last = incomplete.rpartition(",")
    prefix = f"{head}," if head else ""
    return [prefix + name for name in sorted(EVENT_TYPES_BY_NAME) if name.startswith(last)]


def short_value(value: Any, limit: int = VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def local_time(at: Any) -> str:
    """``HH:MM:SS`` in local time; the raw value when it is not an ISO timestamp."""
    try:
        return datetime.fromisoformat(str(at)).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return str(at)


def format_event(message: dict[str, Any], width: int = LINE_CHARS) -> str:
    """``12:03:04 memory_encoded memory_id=... project=web links=2`` (empty fields left out)."""
    parts = [local_time(message.get("at", "")), str(message.get("type", "?"))]
    payload = message.get("payload")
    if isinstance(payload, dict):
        for key, value in payload.items():
            if value in (None, "", [], {}) or key.endswith("_truncated"):
                continue
            parts.append(f"{key}={short_value(value)}")
    line = " ".join(parts)
    return line if len(line) <= width else line[: width - 1] + "…"


def close_exit(code: int | None) -> int:
    """The exit code for a connection the server closed."""
    if code == CLOSE_POLICY:
        return EX_USAGE
    if code == CLOSE_TRY_AGAIN:
        return EX_TEMPFAIL
    return EX_UNAVAILABLE


def handle(message: dict[str, Any], as_json: bool) -> None:
    kind = message.get("type")
    if kind in _SKIP:
        return
    if kind == "error":
        err.print(f"[red]the daemon refused the stream:[/red] {escape(str(message.get('error')))}")
        return
    if as_json:
        emit_line(json.dumps(message, ensure_ascii=False))
    elif kind == "dropped":
        err.print(
            f"[yellow]{message.get('count', '?')} events dropped[/yellow] "
            "(this client fell behind the daemon's queue)"
        )
    else:
        emit_line(format_event(message))


def backoff(first: float = BACKOFF_FIRST_S, cap: float = BACKOFF_MAX_S) -> Iterator[float]:
    """0.25, 0.5, 1, 2, 4, 5, 5, ... seconds: quick while a restart is likely, then
    gentle on a daemon that takes longer to come back (loading the model)."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, cap)


def stream(ws: ClientConnection, as_json: bool) -> int | None:
    """Print messages until the connection closes; the close code received (None when the
    connection dropped without one)."""
    from websockets.exceptions import ConnectionClosed

    try:
        while True:
            raw = ws.recv()
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            try:
                message = json.loads(text)
            except ValueError:
                continue
            if isinstance(message, dict):
                handle(message, as_json)
    except ConnectionClosed as closed:
        frame = closed.rcvd
        code = frame.code if frame is not None else None
        reason = f": {frame.reason}" if frame is not None and frame.reason else ""
        err.print(f"the daemon closed the event stream (code {code}{escape(reason)})")
        return code


class NotAnswering(Exception):
    """Nothing (or nothing ready) answers the stream's address."""


def try_open(url: str, bearer: str) -> ClientConnection:
    """Connect; :class:`NotAnswering` when the daemon is down or still starting, the
    command ends (with the HTTP mapping) when it refuses this client."""
    from websockets.exceptions import InvalidHandshake, InvalidStatus
    from websockets.sync.client import connect

    try:
        return connect(
            url,
            additional_headers={"Authorization": f"Bearer {bearer}"},
            proxy=None,
            open_timeout=10,
            close_timeout=2,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        if status in (429, 503):
            raise NotAnswering(f"HTTP {status}") from None
        err.print(
            f"[red]the daemon refused the event stream (HTTP {status})[/red]: check the token "
            "(MNEMONIC_TOKEN or the token file; see 'mnemonic paths')"
        )
        raise typer.Exit(exit_for_status(status)) from None
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        raise NotAnswering(str(exc)) from None


def open_stream(url: str, bearer: str) -> ClientConnection:
    """Connect, or end the command: 69 when nothing answers, the HTTP mapping on refusal."""
    try:
        return try_open(url, bearer)
    except NotAnswering:
        err.print(
            f"[red]mnemonic is not running at {escape(url)}.[/red] Start it with "
            "[bold]mnemonic serve[/bold] (foreground) or [bold]mnemonic service install[/bold]."
        )
        raise typer.Exit(EX_UNAVAILABLE) from None


def reconnect(
    url: str,
    bearer: str,
    within_s: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> ClientConnection | None:
    """Try again with backoff until the daemon answers or ``within_s`` has passed."""
    deadline = clock() + within_s
    for delay in backoff():
        remaining = deadline - clock()
        if remaining <= 0:
            return None
        sleep(min(delay, remaining))
        try:
            return try_open(url, bearer)
        except NotAnswering:
            continue
    return None  # pragma: no cover - backoff() never ends


def follow(url: str, bearer: str, as_json: bool, reconnect_for: float) -> int:
    """Stream, reconnecting after each restart; the exit code once it ends for good."""
    ws = open_stream(url, bearer)
    err.print(f"watching {escape(url)} (Ctrl-C to stop)")
    while True:
        try:
            code = stream(ws, as_json)
        finally:
            ws.close()
        if code != CLOSE_RESTART or reconnect_for <= 0:
            return close_exit(code)
        err.print(f"reconnecting (for up to {reconnect_for:g}s)...")
        again = reconnect(url, bearer, reconnect_for)
        if again is None:
            err.print(f"[red]the daemon did not come back within {reconnect_for:g}s[/red]")
            return EX_UNAVAILABLE
        ws = again
        err.print("reconnected (events published meanwhile are not replayed)")


def watch(
    types: Annotated[
        str | None,
        typer.Option(
            help="Only these event types, comma-separated (e.g. memory_encoded,agent_error).",
            autocompletion=complete_types,
        ),
    ] = None,
    project: Annotated[str | None, typer.Option(help="Only events of this project.")] = None,
    reconnect_for: Annotated[
        float,
        typer.Option(
            min=0,
            metavar="SECONDS",
            help="How long to keep reconnecting when the daemon restarts (0: exit at once).",
        ),
    ] = RECONNECT_FOR_S,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """Tail the daemon's events live (Ctrl-C stops)."""
    names = parse_types(types)
    unknown = unknown_types(names)
    if unknown:
        err.print(
            f"unknown event types: {', '.join(unknown)}\n"
            f"known: {', '.join(sorted(EVENT_TYPES_BY_NAME))}"
        )
        raise typer.Exit(EX_USAGE)
    cfg, paths = load()
    base = daemon_url(cfg.server.host, cfg.server.port)
    url = ws_url(base, "/ws", {"types": ",".join(names), "project": project})
    try:
        code = follow(url, token(paths), as_json, reconnect_for)
    except KeyboardInterrupt:
        code = EX_OK
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command()(watch)
