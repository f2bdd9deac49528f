"""What one MCP session knows: its client, its project and which memories it was shown.

The project of a session comes from the client's roots (folders the client works in), else
the working folder of the stdio process, through the configured projects (paths, aliases;
``perception.projects``), else the folder's (git root's) name. A tool's ``project``
argument always wins. ``shown`` lets ``get_context`` offer only what this session has not
seen yet.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit
from weakref import WeakKeyDictionary

log = logging.getLogger(__name__)

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.:/ -]")
SHOWN_MAX = 5000  # ids remembered per session; the oldest are forgotten past this


class Resolver(Protocol):
    def resolve(
        self, *, path: str | None = None, cwd: str | None = None, project: str | None = None
    ) -> str | None: ...

    def canonical(self, name: str) -> str: ...


def root_paths(uris: Iterable[str]) -> list[str]:
    """The local folders of ``file://`` root URIs (others are ignored)."""
    out = []
    for uri in uris:
        parts = urlsplit(uri)
        if parts.scheme == "file" and parts.netloc in ("", "localhost") and parts.path:
            out.append(unquote(parts.path))
    return out


def project_of(resolver: Resolver, roots: Iterable[str], cwd: str | None) -> str:
    """The project of the first root that names one, else of ``cwd``; "" when none does."""
    for folder in [*roots, *([cwd] if cwd else [])]:
        name = resolver.resolve(cwd=folder)
        if name:
            return name
    return ""


@dataclass
class SessionState:
    client: str = ""
    project: str | None = None  # None: not resolved yet
    shown: dict[str, None] = field(default_factory=dict)  # insertion-ordered set

    def mark_shown(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            self.shown.pop(memory_id, None)
            self.shown[memory_id] = None
        while len(self.shown) > SHOWN_MAX:
            self.shown.pop(next(iter(self.shown)))


class Sessions:
    """Session state per client connection. stdio serves one client per process, so it
    uses one state; over HTTP the SDK's session object is the key (weakly held, so a closed
    session's state goes with it)."""

    def __init__(self, resolver: Resolver, cwd: str | None) -> None:
        self.resolver = resolver
        self.cwd = cwd
        self._single = SessionState() if cwd is not None else None
        self._by_session: WeakKeyDictionary[Any, SessionState] = WeakKeyDictionary()

    def state(self, session: Any) -> SessionState:
        if self._single is not None:
            return self._single
        try:
            found = self._by_session.get(session)
            if found is None:
                found = self._by_session[session] = SessionState()
            return found
        except TypeError:  # not weakly referenceable: no memory across calls
            return SessionState()

    async def project(self, session: Any, argument: str | None) -> str:
        """``argument`` (canonicalised) when given, else the session's project."""
        if argument is not None and argument.strip():
            return self.resolver.canonical(argument.strip())
        state = self.state(session)
        if state.project is None:
            roots = await _client_roots(session)
            state.project = project_of(self.resolver, roots, self.cwd)
        return state.project


async def _client_roots(session: Any) -> list[str]:
    """The client's root folders when it declares the roots capability (handshake-era
    protocol revisions; 2026-07-28 deprecates roots); [] when it has none or fails."""
    import anyio

    caps = getattr(session, "client_capabilities", None)
    if session is None or caps is None or getattr(caps, "roots", None) is None:
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with anyio.fail_after(5):
                result = await session.list_roots()
    except Exception as exc:  # noqa: BLE001 - a client's failure only means no roots
        log.debug("roots/list failed: %s", type(exc).__name__)
        return []
    return root_paths(str(root.uri) for root in result.roots)


def client_name(session: Any) -> str:
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", "") or ""
    return _UNSAFE_NAME.sub("-", str(name))[:100]
