"""Remember, dedup and reinforcement, linking, get and forget through the REST API."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from starlette.testclient import TestClient
from support.api import query, remember


def _db(client: TestClient) -> sqlite3.Connection:
    conn = sqlite3.connect(client.daemon.paths.database)  # type: ignore[attr-defined]
    conn.row_factory = sqlite3.Row
    return conn


def test_remember_and_get_round_trip(client: TestClient) -> None:
    metadata = {"ticket": "OPS-12", "nested": {"ok": True, "n": [1, 2.5, None]}}
    stored = remember(
        client,
        "  We decided to move the build cache to S3. It halves CI time.  ",
        project="infra",
        metadata=metadata,
        timestamp="2024-03-01T10:00:00+02:00",
    )
    assert stored["status"] == "encoded"
    memory = client.get(f"/api/v1/memories/{stored['memory_id']}").json()
    assert memory["content"] == "We decided to move the build cache to S3. It halves CI time."
    assert memory["summary"] == "We decided to move the build cache to S3."
    assert memory["type"] == "decision"
    assert memory["salience"] == 0.85
    assert memory["project"] == "infra"
    assert memory["metadata"] == metadata
    assert memory["timestamp"].startswith("2024-03-01T08:00:00")
    assert memory["raw_id"] == stored["raw_id"]
    assert memory["state"] == "active"
    assert memory["concepts"], memory
    raw = client.get(f"/api/v1/raw/{stored['raw_id']}").json()
    assert raw["status"] == "encoded"
    assert raw["memory_id"] == stored["memory_id"]


def test_accepted_write_is_searchable_by_full_text_at_once(client: TestClient) -> None:
    response = client.post("/api/v1/memories", json={"content": "zanzibar rollout checklist"})
    assert response.status_code == 202
    assert response.json()["status"] == "accepted"
    hits = query(client, "zanzibar")["results"]
    assert hits and hits[0]["memory"]["content"] == "zanzibar rollout checklist"


def test_exact_duplicate_reinforces_and_keeps_the_raw(client: TestClient) -> None:
    first = remember(client, "Redis runs on port 6380 in staging", project="ops")
    again = remember(client, "redis   runs on port 6380 in STAGING", project="ops")
    assert again["status"] == "reinforced"
    assert again["memory_id"] == first["memory_id"]
    assert again["raw_id"] != first["raw_id"]
    memory = client.get(f"/api/v1/memories/{first['memory_id']}").json()
    assert memory["salience"] == 0.75
    assert memory["access_count"] == 1
    raw = client.get(f"/api/v1/raw/{again['raw_id']}").json()
    assert raw["content"] == "redis   runs on port 6380 in STAGING"
    assert raw["status"] == "reinforced"
    other_project = remember(client, "Redis runs on port 6380 in staging", project="web")
    assert other_project["status"] == "encoded"
    assert other_project["memory_id"] != first["memory_id"]


def test_salience_reinforcement_is_capped(client: TestClient) -> None:
    first = remember(client, "handoff: next steps are the flaky auth test", type="handoff")
    for _ in range(3):
        remember(client, "handoff: next steps are the flaky auth test", type="handoff")
    assert client.get(f"/api/v1/memories/{first['memory_id']}").json()["salience"] == 1.0


def test_near_duplicate_merges_with_pointer(client: TestClient) -> None:
    first = remember(client, "The staging database password rotates every Monday morning.")
    second = remember(client, "The staging database password rotates every Monday morning!!")
    assert second["status"] == "reinforced"
    assert second["memory_id"] == first["memory_id"]
    with _db(client) as conn:
        merged = conn.execute(
            "SELECT state, merged_into FROM memories WHERE raw_id = ?", (second["raw_id"],)
        ).fetchone()
    assert merged["state"] == "merged"
    assert merged["merged_into"] == first["memory_id"]


def test_near_duplicate_threshold_respects_type(client: TestClient) -> None:
    first = remember(client, "The staging database password rotates every Monday morning.")
    second = remember(
        client, "The staging database password rotates every Monday morning!!", type="error"
    )
    assert second["status"] == "encoded"
    assert second["memory_id"] != first["memory_id"]


def test_links_are_typed_and_bounded(make_client: Callable[..., TestClient]) -> None:
    client = make_client(encoding={"max_links_per_memory": 2})
    remember(client, "Feature flag new_checkout is enabled in production.", project="shop")
    remember(client, "The weather in Lisbon was sunny all week.", project="shop")
    remember(client, "Feature flag new_checkout is disabled in production.", project="shop")
    for i in range(4):
        remember(client, f"Checkout payment service retry policy note {i}", project="shop")
    with _db(client) as conn:
        rows = conn.execute(
            "SELECT a.relation, s.content AS a, t.content AS b, a.strength FROM associations a"
            " JOIN memories s ON s.seq = a.source_seq JOIN memories t ON t.seq = a.target_seq"
        ).fetchall()
        per_memory = conn.execute(
            "SELECT source_seq, count(*) FROM associations GROUP BY source_seq"
        ).fetchall()
    relations = {(r["relation"], r["a"], r["b"]) for r in rows}
    assert any(
        r[0] == "contradicts" and "enabled" in r[1] and "disabled" in r[2] for r in relations
    )
    assert all(0 < r["strength"] <= 1 for r in rows)
    # at most max_links similar links plus the one temporal link to the previous memory
    with _db(client) as conn:
        outgoing = conn.execute(
            "SELECT max(c) FROM (SELECT count(*) AS c FROM associations a JOIN memories m"
            " ON m.seq = max(a.source_seq, a.target_seq) GROUP BY m.seq)"
        ).fetchone()[0]
    assert outgoing <= 2 + 1 + 2, per_memory


def test_forget_archives_and_hides_from_default_recall(client: TestClient) -> None:
    stored = remember(client, "The marmalade incident happened in the build farm.")
    assert query(client, "marmalade incident")["results"][0]["memory"]["id"] == stored["memory_id"]
    response = client.delete(f"/api/v1/memories/{stored['memory_id']}")
    assert response.status_code == 200
    assert response.json()["state"] == "archived"
    ids = [r["memory"]["id"] for r in query(client, "marmalade incident")["results"]]
    assert stored["memory_id"] not in ids
    archived = query(client, "marmalade incident", state=["archived"])["results"]
    assert [r["memory"]["id"] for r in archived] == [stored["memory_id"]]
    assert client.get(f"/api/v1/memories/{stored['memory_id']}").json()["content"]


def test_batch_results_in_input_order(client: TestClient) -> None:
    items = [{"content": f"batch item number {i} about topic {i * 7}"} for i in range(30)]
    items.append({"content": "batch item number 3 about topic 21"})  # exact duplicate of #3
    response = client.post(
        "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
    )
    assert response.status_code == 201
    results = response.json()["results"]
    assert len(results) == 31
    for item, result in zip(items[:30], results, strict=False):
        got = client.get(f"/api/v1/memories/{result['memory_id']}").json()
        assert got["content"] == item["content"]
    assert results[30]["status"] == "reinforced"
    assert results[30]["memory_id"] == results[3]["memory_id"]


def test_secrets_are_redacted_before_storage(client: TestClient) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    stored = remember(client, f"export GITHUB_TOKEN={secret} for the deploy script")
    memory = client.get(f"/api/v1/memories/{stored['memory_id']}").json()
    assert secret not in memory["content"]
    assert "[REDACTED:" in memory["content"]
    client.daemon.store.db  # noqa: B018 - keep daemon alive until the check below
    data = client.daemon.paths.database.read_bytes()  # type: ignore[attr-defined]
    wal = client.daemon.paths.database.with_name("mnemonic.db-wal")  # type: ignore[attr-defined]
    assert secret.encode() not in data
    if wal.exists():
        assert secret.encode() not in wal.read_bytes()
