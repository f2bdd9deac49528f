"""Helpers for tests that talk to the REST API through a TestClient."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

TOKEN = "test-token-0123456789"
PORT = 9999
BASE_URL = f"http://127.0.0.1:{PORT}"


def remember(client: TestClient, content: str, **fields: Any) -> dict[str, Any]:
    response = client.post(
        "/api/v1/memories", params={"wait": "true"}, json={"content": content, **fields}
    )
    assert response.status_code in (201, 202), response.text
    body: dict[str, Any] = response.json()
    return body


def query(client: TestClient, text: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/api/v1/query", json={"query": text, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def sibling(client: TestClient, **kwargs: Any) -> TestClient:
    """A second client (no token, another cookie jar) on ``client``'s running daemon.

    It shares ``client``'s event loop: a TestClient used outside ``with`` runs each request
    in a loop of its own, and a request that waits on the daemon's asyncio locks (the write
    lock a background checkpoint holds) from another loop fails with "bound to a different
    event loop", which no real server can do."""
    other = TestClient(client.app, **{"base_url": str(client.base_url), **kwargs})
    other.portal = client.portal
    return other
