"""The guard in front of every route: Host, Origin, token, content type, body size.

Checked in that order, before the route runs, so a rejected request has no side effect.
A loopback daemon is still reachable from a browser: Host and Origin checks stop DNS
rebinding and cross-site requests, and the token stops other local users' pages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemonic.api.session import CSRF_HEADER, SAFE_METHODS, WebAuth, csrf_ok

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WRITE_METHODS = {b"POST", b"PUT", b"PATCH"}
_OPEN_PATHS = ("/livez", "/readyz", "/metrics")
_TOKEN_PATHS = ("/api/", "/mcp")  # the REST API and the MCP endpoint (mnemonic/mcp/)


class BodyTooLarge(Exception):
    """Raised inside the app when a streamed body passes the cap."""


class SecurityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        port: int,
        token: str,
        max_body_bytes: int,
        auth: WebAuth | None = None,
    ) -> None:
        self.app = app
        self.port = port
        # the token and the dashboard's sessions; shared with the login and rotation routes
        self.auth = auth or WebAuth(token)
        self.max_body = max_body_bytes
        self.hosts = {f"{name}:{port}".encode() for name in LOOPBACK_NAMES}
        self.origins = {f"http://{name}:{port}".encode() for name in LOOPBACK_NAMES}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(_lower(scope["headers"]))
        problem = self._check(scope, headers)
        if problem is not None:
            status, message, extra = problem
            if scope["type"] == "websocket":
                # Closing before accept makes the server answer the upgrade with 403.
                await send({"type": "websocket.close", "code": 1008, "reason": message})
                return
            await _reject(send, status, message, extra)
            return
        await self.app(scope, self._capped(receive), send)

    def _check(
        self, scope: Scope, headers: dict[bytes, bytes]
    ) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        host = headers.get(b"host", b"")
        if host not in self.hosts:
            name = host.rsplit(b":", 1)[0] if not host.endswith(b"]") else host
            if name.decode("latin-1") in LOOPBACK_NAMES:
                return 421, "misdirected request: wrong port in Host", []
            return 403, "forbidden: Host must be a loopback name", []
        origin = headers.get(b"origin")
        if origin is not None and origin not in self.origins:
            return 403, "forbidden: cross-origin request", []
        path: str = scope["path"]
        if path.startswith(_OPEN_PATHS):
            return None
        # how the request proved itself; routes that take only the bearer token read it
        scope["mnemonic.auth"] = "none"
        if self._authorised(headers.get(b"authorization")):
            scope["mnemonic.auth"] = "bearer"
        elif (session := self.auth.session_of(headers.get(b"cookie"))) is not None:
            scope["mnemonic.auth"] = "session"  # the dashboard (mnemonic/api/session.py)
            # any page can make the browser send the cookie; only ours can read the CSRF one
            unsafe = scope["type"] == "http" and scope["method"] not in SAFE_METHODS
            if unsafe and not csrf_ok(session, headers.get(CSRF_HEADER.encode())):
                return 403, "forbidden: missing or wrong X-CSRF-Token", []
        auth = scope["mnemonic.auth"]
        if path.startswith(_TOKEN_PATHS) and (
            auth == "none" or (auth == "session" and not path.startswith("/api/"))
        ):
            return 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")]
        if (
            scope["type"] == "websocket"
            and auth == "none"
            and not self._query_token_ok(scope.get("query_string", b""))
        ):
            return 401, "missing or wrong bearer token", []
        if (
            scope["type"] == "http"
            and scope["method"].encode() in _WRITE_METHODS
            and _has_body(headers)
        ):
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if ctype != b"application/json":
                return 415, "content type must be application/json", []
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                return 413, f"body larger than {self.max_body} bytes", []
        return None

    def _authorised(self, header: bytes | None) -> bool:
        return self.auth.bearer_ok(header)

    def _query_token_ok(self, query: bytes) -> bool:
        """Browsers cannot set headers on a WebSocket, so ``/ws`` also takes ``?token=``."""
        from urllib.parse import parse_qs

        values = parse_qs(query.decode("latin-1")).get("token", [])
        return any(self.auth.token_ok(v) for v in values)

    def _capped(self, receive: Receive) -> Receive:
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge
            return message

        return capped


def _has_body(headers: dict[bytes, bytes]) -> bool:
    """A write without a body cannot smuggle a form post, and must reach the router so a
    method the route does not allow answers 405 (not 415); a route that needs a body then
    answers 400 for the missing JSON."""
    return headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers


def _lower(headers: Iterable[tuple[bytes, bytes]]) -> Iterable[tuple[bytes, bytes]]:
    return ((k.lower(), v) for k, v in headers)


async def _reject(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"error": message, "status": status}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
