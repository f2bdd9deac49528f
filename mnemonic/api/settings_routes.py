"""REST routes the dashboard's Settings page needs beyond exclusions:

* ``GET /api/v1/watchers``: each watcher (filesystem, git, terminal, clipboard) with
  whether config switches it on, its live state and the roots or files it watches. Roots
  are read-only here: they come from config.yaml (the answer says which key);
* ``POST /api/v1/token/rotate``: a new API token, written where the CLI reads it (the
  token file, 0600), in force at once (the old bearer token and every browser session
  stop working), answered once. 409 when the token comes from ``MNEMONIC_TOKEN``: the
  daemon cannot change a variable in the shells of its clients, so rotating there would
  lock the CLI out. A dashboard page that asks is logged in again under the new token (new
  session cookies in the answer), so it keeps working; other pages must be re-opened. The
  page is not shown the token: a session cannot mint login links (``web_routes.py``), and
  must not be able to turn itself into the bearer token either.

The answer models live here beside the routes; ``openapi.py`` documents them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.responses import Count
from mnemonic.api.routes import BadRequest
from mnemonic.api.session import LoginLink, session_cookies
from mnemonic.config import Config
from mnemonic.watchers.base import Watcher

log = logging.getLogger(__name__)

# ---- answers ------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WatchedRoot(_Out):
    path: str = Field(description="As configured (~ kept) or as watched (expanded).")
    mode: str | None = Field(
        description="How it is watched now (inotify, polling, missing...); null when the "
        "watcher is not running or does not say."
    )
    message: str | None


class WatcherInfo(_Out):
    name: Literal["filesystem", "git", "terminal", "clipboard"]
    config_key: str = Field(description="The config.yaml section that sets it up.")
    enabled: bool = Field(description="Switched on in config.")
    running: bool = Field(description="Part of this daemon (enabled when it started).")
    state: str = Field(
        description="starting, running, degraded, disabled or stopped; off when not running."
    )
    message: str | None
    events: Count
    roots: list[WatchedRoot] = Field(
        description="Folders (filesystem, git) or history files (terminal; empty = the "
        "shell's defaults)."
    )


class WatcherList(_Out):
    items: list[WatcherInfo]


class TokenRotated(_Out):
    token: str | None = Field(
        description="The new bearer token, answered once, to a bearer-token caller only (a "
        "dashboard session gets null: a page must not turn its session into the token). "
        "The CLI reads it from the file."
    )
    token_file: str = Field(description="Where it was written (0600).")
    sessions_ended: Count = Field(description="Browser sessions the rotation ended.")
    session_renewed: bool = Field(
        description="The request came from a dashboard session: it was given a new one "
        "(new cookies), so that page keeps working; every other session must log in again."
    )


# ---- watchers -----------------------------------------------------------------------------

_SECTIONS: tuple[tuple[str, str], ...] = (
    ("filesystem", "filesystem"),
    ("git", "git"),
    ("terminal", "shell_history"),
    ("clipboard", "clipboard"),
)


def _configured_roots(cfg: Config, key: str) -> list[str]:
    if key == "filesystem":
        return list(cfg.filesystem.roots)
    if key == "git":
        return list(cfg.git.roots)
    if key == "shell_history":
        return list(cfg.shell_history.files)
    return []


def _enabled(cfg: Config, key: str) -> bool:
    section = getattr(cfg, key)
    return bool(section.enabled)


def watcher_rows(cfg: Config, running: Sequence[Watcher]) -> list[dict[str, Any]]:
    """One row per known watcher: config says whether it is on and what it watches; a
    running watcher's health says how (a filesystem root may be polled or missing)."""
    live = {w.name: w for w in running}
    rows: list[dict[str, Any]] = []
    for name, key in _SECTIONS:
        watcher = live.get(name)
        roots = [{"path": p, "mode": None, "message": None} for p in _configured_roots(cfg, key)]
        row: dict[str, Any] = {
            "name": name,
            "config_key": key,
            "enabled": _enabled(cfg, key),
            "running": watcher is not None,
            "state": "off",
            "message": None,
            "events": 0,
            "roots": roots,
        }
        if watcher is not None:
            health = watcher.health()
            row.update(state=health.state, message=health.message, events=health.events)
            watched = health.detail.get("roots") if isinstance(health.detail, dict) else None
            if isinstance(watched, list) and watched:
                row["roots"] = [_root(r) for r in watched if isinstance(r, dict)]
        rows.append(row)
    return rows


def _root(raw: dict[str, Any]) -> dict[str, Any]:
    def text(value: Any) -> str | None:
        return value if isinstance(value, str) else None

    return {
        "path": str(raw.get("path", "")),
        "mode": text(raw.get("mode")),
        "message": text(raw.get("message")),
    }


# ---- token rotation ------------------------------------------------------------------------


class TokenFromEnvironment(Exception):
    """The token in force comes from ``MNEMONIC_TOKEN``; a new file would not reach the CLI."""


def write_token_file(path: Path, token: str) -> None:
    """Replace the token file atomically (a reader sees the old token or the new one, never
    an empty file), created 0600 from the start so the token is never world-readable."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class TokenRotator:
    """Makes a new token, writes it, then tells ``apply`` (the daemon swaps the token the
    guard checks and ends browser sessions; it answers how many sessions ended).

    The file is written first: if the write fails, the old token stays in force
    everywhere, so a client is never left with a token the daemon does not accept."""

    def __init__(
        self,
        token_file: Path,
        apply: Callable[[str], int],
        *,
        env_token: Callable[[], str | None],
    ) -> None:
        self.token_file = token_file
        self._apply = apply
        self._env_token = env_token
        # two rotations at once must not leave the file with one token, the guard another
        self._lock = asyncio.Lock()

    async def rotate(self) -> tuple[str, int]:
        env = self._env_token()
        if env and env.strip():
            raise TokenFromEnvironment
        token = secrets.token_urlsafe(32)
        async with self._lock:
            await asyncio.to_thread(write_token_file, self.token_file, token)
            return token, self._apply(token)


# ---- routes --------------------------------------------------------------------------------


class SessionMinter(Protocol):
    """What rotation needs from the dashboard's sessions (``session.WebAuth``)."""

    session_ttl_s: float

    def mint_login(self) -> LoginLink: ...

    def redeem_login(self, code: str) -> tuple[str, str] | None: ...


def build_settings_routes(
    cfg: Config,
    watchers: Callable[[], Sequence[Watcher]],
    rotator: TokenRotator,
    sessions: SessionMinter,
) -> list[Route]:
    """``sessions`` must be the guard's own ``WebAuth`` (the one ``rotator`` applies the
    new token to): a browser that rotates is logged in again under the new token."""

    async def list_watchers(request: Request) -> Response:
        return JSONResponse({"items": watcher_rows(cfg, watchers())})

    async def rotate_token(request: Request) -> Response:
        try:
            token, ended = await rotator.rotate()
        except TokenFromEnvironment:
            raise BadRequest(
                409,
                {
                    "error": "the token comes from MNEMONIC_TOKEN; set a new value there and "
                    "restart the daemon (rotating here would lock the CLI out)"
                },
            ) from None
        # never the token itself: who rotated and what it ended
        log.info(
            "API token rotated by a %s client; %d dashboard sessions ended",
            request.scope.get("mnemonic.auth", "?"),
            ended,
        )
        renewed = None
        if request.scope.get("mnemonic.auth") == "session":
            renewed = sessions.redeem_login(sessions.mint_login().code)
        body = {
            "token": token if request.scope.get("mnemonic.auth") == "bearer" else None,
            "token_file": str(rotator.token_file),
            "sessions_ended": ended,
            "session_renewed": renewed is not None,
        }
        # The token is answered once: nothing between here and the browser may keep it.
        response = JSONResponse(body, headers={"Cache-Control": "no-store"})
        if renewed is not None:
            for cookie in session_cookies(*renewed, int(sessions.session_ttl_s)):
                response.raw_headers.append((b"set-cookie", cookie.encode("latin-1")))
        return response

    return [
        Route("/api/v1/watchers", list_watchers, methods=["GET"]),
        Route("/api/v1/token/rotate", rotate_token, methods=["POST"]),
    ]
