"""``/mcp`` in the daemon: the MCP server over streamable HTTP, its tools calling the
daemon's own app in-process (``httpx.ASGITransport``, no socket; see the package
docstring for why through REST).

The daemon builds one ``McpMount``, binds it to its finished app (:meth:`bind`), and runs
:meth:`running` inside its lifespan (the SDK's session manager owns the sessions' tasks).

``/mcp`` is not a route of the app's table: that table is the REST API, which
``/openapi.json`` documents and the fuzzer checks operation by operation, while ``/mcp``
speaks JSON-RPC as the MCP specification defines it. ``bind`` puts it in front of the app
instead, behind its own instance of the REST API's guard (``SecurityMiddleware``: the same
Host, Origin, token and body checks, the same code).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from mnemonic.api.security import SecurityMiddleware
from mnemonic.api.session import WebAuth
from mnemonic.config import Config
from mnemonic.mcp.backend import RestBackend
from mnemonic.mcp.server import build_server, http_app
from mnemonic.mcp.session import Resolver


class _LateApp:
    """The daemon's app, known only after it is built."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            raise RuntimeError("the MCP backend was used before the app was bound")
        await self.app(scope, receive, send)


class _McpFirst:
    """Sends ``/mcp`` to the MCP endpoint and everything else to the app."""

    def __init__(self, app: ASGIApp, *, endpoint: ASGIApp) -> None:
        self.app = app
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == PATH:
            await self.endpoint(scope, receive, send)
        else:
            await self.app(scope, receive, send)


PATH = "/mcp"


class McpMount:
    """``auth`` is the daemon's own (``WebAuth``): the guard and the tools' backend follow
    a token rotation at once."""

    def __init__(self, cfg: Config, auth: WebAuth, resolver: Resolver) -> None:
        self._late = _LateApp()
        self._auth = auth
        port = self._port = cfg.server.port
        self._max_body = cfg.server.max_body_bytes
        self.backend = RestBackend(
            f"http://127.0.0.1:{port}",  # the Host the daemon's guard expects
            lambda: auth.token,
            timeout_s=cfg.mcp.request_timeout_s,
            transport=httpx.ASGITransport(app=self._late),
        )
        self.server = build_server(
            self.backend, resolver, cwd=None, context_limit=cfg.mcp.context_limit
        )
        self._http = http_app(self.server, port)

    def bind(self, app: Starlette) -> None:
        """Serve ``/mcp`` in front of ``app``, and let the tools call ``app``."""
        self._late.app = app
        guard = SecurityMiddleware(
            self._http,
            port=self._port,
            token=self._auth.token,
            max_body_bytes=self._max_body,
            auth=self._auth,
        )
        app.add_middleware(_McpFirst, endpoint=guard)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        try:
            async with self.server.session_manager.run():
                yield
        finally:
            await self.backend.aclose()
