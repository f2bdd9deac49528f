"""A small REST client for the CLI: the CLI never opens the database itself."""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import httpx


class DaemonDown(Exception):
    """The daemon is not answering on its port."""


class ApiError(Exception):
    def __init__(self, status: int, payload: Any) -> None:
        super().__init__(f"HTTP {status}: {payload}")
        self.status = status
        self.payload = payload

    @property
    def message(self) -> str:
        """The daemon's error text (its JSON ``error`` field) or the raw body."""
        if isinstance(self.payload, dict):
            text = str(self.payload.get("error", self.payload))
            details = self.payload.get("details")
            if isinstance(details, list) and details:
                parts = [
                    f"{d.get('field', '?')}: {d.get('message', '')}"
                    for d in details
                    if isinstance(d, dict)
                ]
                text += " (" + "; ".join(parts) + ")"
            return text
        return str(self.payload)


class Client:
    """The daemon's REST API. ``trust_env=False``: the daemon is always on loopback, and a
    proxy from the environment must never see the bearer token. httpx is imported here,
    not at module load, so commands that never call the daemon (``version``, ``config``,
    shell completion) start 0.15 s faster."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0) -> None:
        import httpx

        self.base_url = base_url
        self.token = token
        self._http = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            trust_env=False,
        )

    def request(self, method: str, path: str, json: Any = None, **params: Any) -> Any:
        import httpx

        try:
            response = self._http.request(method, path, json=json, params=params or None)
        except httpx.TransportError as exc:
            raise DaemonDown(str(exc)) from exc
        payload = _payload(response)
        if response.status_code >= 400:
            raise ApiError(response.status_code, payload)
        return payload

    def close(self) -> None:
        self._http.close()


def _payload(response: httpx.Response) -> Any:
    """JSON when the body is JSON; something else on our port answers text."""
    if not response.content:
        return None
    try:
        return response.json()
    except (jsonlib.JSONDecodeError, UnicodeDecodeError):
        return response.text[:500]


def ws_url(base_url: str, path: str, params: Mapping[str, str | None]) -> str:
    """``http://host:port`` + path + the non-empty query parameters, as a ``ws://`` URL."""
    parts = urlsplit(base_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    query = urlencode({k: v for k, v in params.items() if v})
    return urlunsplit((scheme, parts.netloc, path, query, ""))
