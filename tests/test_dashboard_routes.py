"""The REST routes the dashboard views need (graph neighbourhood up to 2,000 nodes, the
bucketed timeline, a memory's provenance), against the real app and store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.api import remember

from mnemonic.api.dashboard_routes import timeline_range, watcher_origin
from mnemonic.errors import InvalidInputError
from mnemonic.paths import Paths
from mnemonic.store.dashboard import bucket_index, bucket_width

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def _seed(client: TestClient) -> list[str]:
    notes = [
        ("Deploys go through the blue-green pipeline in Jenkins.", "infra", 0),
        ("The Jenkins pipeline needs the deploy key rotated every quarter.", "infra", 5),
        ("We decided to use PostgreSQL 16 for the billing service.", "billing", 60),
        ("Error: invoice job failed with a deadlock on the ledger table.", "billing", 61),
        ("Billing invoices are generated nightly at 02:00 UTC.", "billing", 600),
    ]
    return [
        remember(client, text, project=project, timestamp=_at(minute))["memory_id"]
        for text, project, minute in notes
    ]


# ---- pure helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "buckets", "width"),
    [(3600, 60, 60.0), (10, 100, 0.1), (0, 10, 0.001), (86400, 1, 86400.0)],
)
def test_bucket_width(seconds: int, buckets: int, width: float) -> None:
    assert bucket_width(T0, T0 + timedelta(seconds=seconds), buckets) == width


@pytest.mark.parametrize(
    ("offset", "index"), [(-5, 0), (0, 0), (59.9, 0), (60, 1), (599, 9), (600, 9), (10_000, 9)]
)
def test_bucket_index_clamps(offset: float, index: int) -> None:
    assert bucket_index(T0 + timedelta(seconds=offset), T0, 60.0, 10) == index


def test_timeline_range_rules() -> None:
    span = (T0, T0 + timedelta(hours=1))
    assert timeline_range(None, None, span) == span
    assert timeline_range(T0 + timedelta(minutes=5), None, span)[0] == T0 + timedelta(minutes=5)
    start, end = timeline_range(T0, T0, None)
    assert (start, end) == (T0 - timedelta(seconds=30), T0 + timedelta(seconds=30))
    start, end = timeline_range(T0, T0 + timedelta(seconds=2), None)  # one burst
    assert (start, end) == (T0 - timedelta(seconds=29), T0 + timedelta(seconds=31))
    with pytest.raises(InvalidInputError):
        timeline_range(T0 + timedelta(hours=2), T0, span)
    start, end = timeline_range(None, None, None)  # empty store: the last day
    assert end - start == timedelta(days=1)


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({}, None),
        ({"watcher": 3}, None),
        (
            {"watcher": "git", "kind": "commit", "score": 0.5, "event": {"sha": "abc"}},
            {
                "watcher": "git",
                "kind": "commit",
                "path": None,
                "cwd": None,
                "score": 0.5,
                "event": {"sha": "abc"},
            },
        ),
        (
            {"watcher": "fs", "path": "/a", "score": "high", "event": [1]},
            {
                "watcher": "fs",
                "kind": None,
                "path": "/a",
                "cwd": None,
                "score": None,
                "event": None,
            },
        ),
    ],
)
def test_watcher_origin(metadata: dict[str, Any], expected: dict[str, Any] | None) -> None:
    assert watcher_origin(metadata) == expected


# ---- routes --------------------------------------------------------------------------------


def test_timeline_counts_by_bucket_and_type(client: TestClient) -> None:
    ids = _seed(client)
    whole = client.get("/api/v1/timeline", params={"buckets": 10}).json()
    assert whole["total"] == len(ids)
    assert whole["since"] == _at(0) and whole["until"] == _at(600)
    assert whole["bucket_seconds"] == 3600.0
    assert [b["total"] for b in whole["buckets"]] == [2, 2, 0, 0, 0, 0, 0, 0, 0, 1]
    assert sum(b["counts"].get("error", 0) for b in whole["buckets"]) == 1
    zoom = client.get(
        "/api/v1/timeline",
        params={"since": _at(0), "until": _at(120), "buckets": 4, "project": "billing"},
    ).json()
    assert [b["total"] for b in zoom["buckets"]] == [0, 0, 2, 0]
    typed = client.get("/api/v1/timeline", params={"type": "error", "buckets": 3}).json()
    assert typed["total"] == 1


def test_timeline_rejects_bad_input(client: TestClient) -> None:
    for params in (
        {"buckets": 0},
        {"buckets": 5000},
        {"since": _at(10), "until": _at(0)},
        {"type": "nonsense"},
        {"since": "soon"},
        {"other": "x"},
    ):
        response = client.get("/api/v1/timeline", params=params)
        assert response.status_code == 422, (params, response.text)


def test_timeline_lists_episodes_in_range(client: TestClient) -> None:
    _seed(client)
    ran = client.post("/api/v1/agents/episoding/run", params={"wait": "true"})
    assert ran.status_code == 200, ran.text
    answer = client.get("/api/v1/timeline", params={"buckets": 10}).json()
    assert answer["episodes"], answer
    assert sum(b["episodes"] for b in answer["buckets"]) == len(answer["episodes"])
    assert {e["project"] for e in answer["episodes"]} == {"infra", "billing"}
    only = client.get("/api/v1/timeline", params={"project": "infra"}).json()
    assert {e["project"] for e in only["episodes"]} == {"infra"}


def test_provenance_of_an_api_memory(client: TestClient) -> None:
    ids = _seed(client)
    client.post("/api/v1/agents/episoding/run", params={"wait": "true"})
    body = client.get(f"/api/v1/memories/{ids[2]}/provenance").json()
    assert body["memory_id"] == ids[2]
    assert body["raw"]["content"].startswith("We decided to use PostgreSQL")
    assert body["watcher"] is None  # written through the API, no watcher behind it
    assert body["episode"]["project"] == "billing"
    assert body["merged_from"] == [] and body["merged_into"] == []
    assert client.get("/api/v1/memories/nope/provenance").status_code == 404


def test_provenance_shows_the_watcher_event(client: TestClient) -> None:
    metadata = {"watcher": "git", "kind": "commit", "score": 0.8, "event": {"sha": "abc123"}}
    made = remember(client, "Commit abc123: fix the ledger deadlock", metadata=metadata)
    body = client.get(f"/api/v1/memories/{made['memory_id']}/provenance").json()
    assert body["watcher"]["watcher"] == "git"
    assert body["watcher"]["event"] == {"sha": "abc123"}
    assert body["raw"]["id"] == made["raw_id"]


def test_neighbourhood_goes_beyond_the_browse_limit(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client()
    first = remember(client, "Seed memory for the graph", project="big")["memory_id"]
    db = client.daemon.db.path  # type: ignore[attr-defined]
    _bulk_copies(db, first, 700)
    around = client.get("/api/v1/graph/neighbourhood", params={"project": "big", "limit": 650})
    assert around.status_code == 200, around.text
    body = around.json()
    assert len(body["nodes"]) == 650 and body["truncated"] is True
    assert body["center"] is None
    ring = client.get(
        "/api/v1/graph/neighbourhood", params={"memory_id": first, "limit": 2000, "depth": 1}
    ).json()
    assert ring["center"] == first
    assert len(ring["nodes"]) == 601  # the seed and the 600 it links to
    assert all(e["relation"] == "similar" and 0 <= e["strength"] <= 1 for e in ring["edges"])
    assert len(ring["edges"]) == 600


def _bulk_copies(db_path: Any, seed_id: str, n: int) -> None:
    """``n`` copies of the seed memory written straight to the file (the encoder would take
    minutes), the first 600 linked to the seed."""
    conn = sqlite3.connect(db_path)
    try:
        with conn:
            seed = conn.execute("SELECT * FROM memories WHERE id = ?", (seed_id,)).fetchone()
            cols = [d[1] for d in conn.execute("PRAGMA table_info(memories)")]
            row = dict(zip(cols, seed, strict=True))
            for i in range(n):
                copy = {**row, "seq": None, "id": f"bulk{i:05d}", "content_hash": f"h{i}"}
                conn.execute(
                    f"INSERT INTO memories ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                    [copy[c] for c in cols],
                )
            seqs = [r[0] for r in conn.execute("SELECT seq FROM memories WHERE id LIKE 'bulk%'")]
            acols = [d[1] for d in conn.execute("PRAGMA table_info(associations)")]
            for seq in seqs[:600]:
                values = {
                    "source_seq": row["seq"],
                    "target_seq": seq,
                    "relation": "similar",
                    "strength": 0.5,
                    "created_at": row["created_at"],
                    "updated_at": row["created_at"],
                }
                names = [c for c in acols if c in values]
                conn.execute(
                    f"INSERT INTO associations ({','.join(names)}) VALUES"
                    f" ({','.join('?' * len(names))})",
                    [values[c] for c in names],
                )
    finally:
        conn.close()


def test_neighbourhood_rejects_bad_input(client: TestClient) -> None:
    made = remember(client, "A lone memory")["memory_id"]
    for params in (
        {"limit": 0},
        {"limit": 2001},
        {"depth": 4},
        {"memory_id": made, "project": "x"},
        {"state": "gone"},
        {"colour": "red"},
    ):
        response = client.get("/api/v1/graph/neighbourhood", params=params)
        assert response.status_code == 422, (params, response.text)
    assert (
        client.get("/api/v1/graph/neighbourhood", params={"memory_id": "nope"}).status_code == 404
    )
