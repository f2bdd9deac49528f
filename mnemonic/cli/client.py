"""A small REST client for the CLI: the CLI never opens the database itself."""

from __future__ import annotations

from typing import Any

import httpx

from mnemonic.paths import Paths


class DaemonDown(Exception):
    """The daemon is not answering on its port."""


class ApiError(Exception):
    def __init__(self, status: int, payload: Any) -> None:
        super().__init__(f"HTTP {status}: {payload}")
        self.status = status
        self.payload = payload


class Client:
    def __init__(self, base_url: str, token: str, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self._http = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )

    def request(self, method: str, path: str, json: Any = None, **params: Any) -> Any:
        try:
            response = self._http.request(method, path, json=json, params=params or None)
        except httpx.TransportError as exc:
            raise DaemonDown(str(exc)) from exc
        payload = response.json() if response.content else None
        if response.status_code >= 400:
            raise ApiError(response.status_code, payload)
        return payload

    def close(self) -> None:
        self._http.close()


def token_for(paths: Paths, env_token: str | None) -> str:
    if env_token:
        return env_token
    try:
        return paths.token_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""
