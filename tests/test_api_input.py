"""Bad input gets a clear 4xx naming the problem, never a 500."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient
from support.api import remember


@pytest.mark.parametrize(
    ("path", "body", "status", "field"),
    [
        ("/api/v1/memories", b"{not json", 400, None),
        ("/api/v1/memories", b"\xff\xfe", 400, None),
        ("/api/v1/memories", b"[]", 422, "body"),
        ("/api/v1/memories", b'{"content": ""}', 422, "content"),
        ("/api/v1/memories", b'{"content": "   "}', 422, "content"),
        ("/api/v1/memories", b'{"content": 5}', 422, "content"),
        ("/api/v1/memories", b'{"content": "x", "source": "telepathy"}', 422, "source"),
        ("/api/v1/memories", b'{"content": "x", "source": "dreaming"}', 422, "source"),
        ("/api/v1/memories", b'{"content": "x", "type": "gossip"}', 422, "type"),
        ("/api/v1/memories", b'{"content": "x", "timestamp": "yesterday-ish"}', 422, "timestamp"),
        ("/api/v1/memories", b'{"content": "x", "metadata": [1]}', 422, "metadata"),
        ("/api/v1/memories", b'{"content": "x", "unknown": 1}', 422, "unknown"),
        ("/api/v1/memories/batch", b'{"memories": []}', 422, "memories"),
        ("/api/v1/query", b'{"query": ""}', 422, "query"),
        ("/api/v1/query", b'{"query": "x", "limit": 0}', 422, "limit"),
        ("/api/v1/query", b'{"query": "x", "limit": 101}', 422, "limit"),
        ("/api/v1/query", b'{"query": "x", "min_salience": 2}', 422, "min_salience"),
        ("/api/v1/query", b'{"query": "x", "state": ["lost"]}', 422, "state.0"),
        ("/api/v1/feedback", b'{"query_id": "q", "quality": "meh"}', 422, "quality"),
    ],
)
def test_bad_input(
    client: TestClient, path: str, body: bytes, status: int, field: str | None
) -> None:
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    payload = response.json()
    assert payload["status"] == status
    if field is not None:
        assert field in [d["field"] for d in payload["details"]], payload


def test_size_limits(client: TestClient) -> None:
    too_long = {"content": "a" * 100_001}
    assert client.post("/api/v1/memories", json=too_long).status_code == 422
    big_meta = {"content": "x", "metadata": {"blob": "b" * 17_000}}
    response = client.post("/api/v1/memories", json=big_meta)
    assert response.status_code == 422
    assert response.json()["details"][0]["field"] == "metadata"
    project = {"content": "x", "project": "p" * 201}
    assert client.post("/api/v1/memories", json=project).status_code == 422
    batch = {"memories": [{"content": f"item {i}"} for i in range(1001)]}
    assert client.post("/api/v1/memories/batch", json=batch).status_code == 422
    long_query = {"query": "q" * 2001}
    assert client.post("/api/v1/query", json=long_query).status_code == 422


def test_unknown_ids_are_404(client: TestClient) -> None:
    assert client.get("/api/v1/memories/nope").status_code == 404
    assert client.delete("/api/v1/memories/nope").status_code == 404
    assert client.get("/api/v1/raw/nope").status_code == 404
    response = client.post("/api/v1/feedback", json={"query_id": "nope", "quality": "helpful"})
    assert response.status_code == 404


def test_feedback_for_memory_outside_the_results_is_422(client: TestClient) -> None:
    stored = remember(client, "We chose PostgreSQL for the billing service.")
    other = remember(client, "The cat sleeps on the warm laptop keyboard.")
    answer = client.post("/api/v1/query", json={"query": "billing database", "limit": 1}).json()
    assert answer["results"][0]["memory"]["id"] == stored["memory_id"]
    response = client.post(
        "/api/v1/feedback",
        json={
            "query_id": answer["query_id"],
            "quality": "helpful",
            "memory_ids": [other["memory_id"]],
        },
    )
    assert response.status_code == 422
    assert response.json()["details"][0]["field"] == "memory_ids"
