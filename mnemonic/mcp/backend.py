"""How the MCP tools reach memory: the daemon's REST API, over HTTP or in-process.

See the package docstring for why the tools speak REST even inside the daemon.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

Params = Mapping[str, str | int | float | bool | list[str] | None]


class BackendError(Exception):
    """The daemon answered with an error (4xx/5xx); ``message`` is its explanation."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class DaemonUnavailable(Exception):
    """Nothing answers at the daemon's address; the message says how to start it."""


class RestBackend:
    """Calls the REST API with the bearer token. ``transport`` is a real socket (stdio
    mode) or ``httpx.ASGITransport`` over the daemon's own app (HTTP mode).

    ``on_down`` (stdio with ``mcp.autostart``) is awaited when the daemon does not answer;
    when it returns True (it started one) the call is tried once more.
    """

    def __init__(
        self,
        base_url: str,
        token: str | Callable[[], str],
        *,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        down_message: str = "mnemonic is not running",
        on_down: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self.base_url = base_url
        self.down_message = down_message
        self.on_down = on_down
        # a callable follows token rotation (the daemon's in-process backend)
        self._token = token if callable(token) else (lambda: token)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout_s,
            transport=transport,
            trust_env=False,  # a proxy from the environment must never see the token
        )

    async def request(
        self, method: str, path: str, *, json_body: Any = None, params: Params | None = None
    ) -> Any:
        try:
            return await self._once(method, path, json_body, params)
        except DaemonUnavailable:
            if self.on_down is None or not await self.on_down():
                raise
            return await self._once(method, path, json_body, params)

    async def _once(self, method: str, path: str, json_body: Any, params: Params | None) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = await self._http.request(
                method,
                path,
                json=json_body,
                params=query,
                headers={"Authorization": f"Bearer {self._token()}"},
            )
        except httpx.TransportError as exc:
            raise DaemonUnavailable(self.down_message) from exc
        payload = _payload(response)
        if response.status_code >= 400:
            raise BackendError(response.status_code, error_text(response.status_code, payload))
        return payload

    async def aclose(self) -> None:
        await self._http.aclose()


def _payload(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:500]


def error_text(status: int, payload: Any) -> str:
    """The daemon's error as one line a model can act on: the message and each bad field."""
    if not isinstance(payload, dict):
        return f"HTTP {status}: {payload}"
    text = str(payload.get("error", f"HTTP {status}"))
    details = payload.get("details")
    if isinstance(details, list) and details:
        parts = [
            f"{d.get('field', '?')}: {d.get('message', '')}" for d in details if isinstance(d, dict)
        ]
        text += " (" + "; ".join(parts) + ")"
    if status == 401:
        text += (
            ". The token comes from MNEMONIC_TOKEN or the token file in the data folder"
            " ('mnemonic paths'); it must match the running daemon's."
        )
    return f"{text} [HTTP {status}]"
