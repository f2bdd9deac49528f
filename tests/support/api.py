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
