"""The in-memory recall index equals what SQLite holds, after every kind of write.

Random sequences of writes go through the real REST API of a real daemon (remember,
batches, amendments, forgetting, unarchiving, feedback, purges); after each step the live
index (kept current by the change feed) is compared with one built fresh from the
database. Then recall through the index is compared with recall through SQL.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.daemon_proc import running
from support.index_check import assert_index_matches_database

from mnemonic.paths import Paths

WORDS = [
    "deploy",
    "staging",
    "postgres",
    "migration",
    "timeout",
    "grafana",
    "alert",
    "redis",
    "cache",
    "billing",
    "invoice",
    "release",
    "branch",
    "merge",
    "conflict",
    "kubernetes",
    "pod",
    "crash",
    "memory",
    "leak",
    "docker",
    "image",
    "build",
    "pipeline",
    "flaky",
    "test",
    "retry",
    "backoff",
    "schema",
    "index",
    "vacuum",
    "replica",
    "lag",
    "dashboard",
    "latency",
]
PROJECTS = ("alpha", "beta", "")


def _text(rng: random.Random) -> str:
    # a few shared words make twins (merges) and links; no underscores or hyphens, whose
    # multi-token phrases the in-memory full text approximates (see index/fulltext.py)
    # some of several sentences, which have passage vectors (index/passages.py)
    sentences = rng.choice((1, 1, 2, 3))
    return ". ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(sentences)
    )


def _ids(client: TestClient, state: str | None = None) -> list[str]:
    params: dict[str, Any] = {"limit": 200}
    if state:
        params["state"] = state
    page = client.get("/api/v1/memories", params=params)
    assert page.status_code == 200, page.text
    return [m["id"] for m in page.json()["items"]]


def _step(client: TestClient, rng: random.Random) -> str:
    """One random write through the API; returns what it did (for the failure message)."""
    ids = _ids(client)
    action = rng.choice(
        ["remember", "remember", "batch", "amend", "forget", "unarchive", "feedback", "purge"]
    )
    if action == "remember" or not ids:
        body = {"content": _text(rng), "project": rng.choice(PROJECTS)}
        answer = client.post("/api/v1/memories", params={"wait": "true"}, json=body)
        assert answer.status_code in (200, 201), answer.text
        return "remember"
    if action == "batch":
        items = [
            {"content": _text(rng), "project": rng.choice(PROJECTS)}
            for _ in range(rng.randint(2, 5))
        ]
        answer = client.post(
            "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
        )
        assert answer.status_code in (200, 201), answer.text
        return f"batch of {len(items)}"
    target = rng.choice(ids)
    if action == "amend":
        answer = client.patch(f"/api/v1/memories/{target}", json={"content": _text(rng)})
        assert answer.status_code == 200, answer.text
    elif action == "forget":
        assert client.delete(f"/api/v1/memories/{target}").status_code == 200
    elif action == "unarchive":
        archived = _ids(client, "archived")
        if archived:
            target = rng.choice(archived)
            assert client.post(f"/api/v1/memories/{target}/unarchive").status_code == 200
    elif action == "feedback":
        query = client.post("/api/v1/query", json={"query": _text(rng), "limit": 5}).json()
        quality = rng.choice(["helpful", "partial", "irrelevant"])
        answer = client.post(
            "/api/v1/feedback", json={"query_id": query["query_id"], "quality": quality}
        )
        assert answer.status_code == 200, answer.text
    else:
        answer = client.post("/api/v1/purge", json={"memory_ids": [target]})
        assert answer.status_code == 200, answer.text
    return f"{action} {target}"


@pytest.mark.parametrize("seed", [1, 2])
def test_every_write_path_keeps_the_index_equal_to_the_database(
    make_client: Callable[..., TestClient], seed: int
) -> None:
    rng = random.Random(seed)
    client = make_client()
    done: list[str] = []
    for _ in range(18):
        done.append(_step(client, rng))
        try:
            client.portal.call(assert_index_matches_database, client.daemon, WORDS)  # type: ignore[attr-defined]
        except AssertionError as exc:
            raise AssertionError(f"after {done}: {exc}") from exc
    assert any(a.startswith("purge") for a in done) or seed != 1  # seed 1 covers a purge


def test_past_the_exact_limit_vectors_move_to_hnsw_and_stay_equal_to_the_database(
    make_client: Callable[..., TestClient],
) -> None:
    """A tiny ``vector_exact_max`` makes CI cover the HNSW path: the switch happens in the
    background, writes during and after it reach the index, recall finds by meaning."""
    rng = random.Random(3)
    client = make_client(recall={"vector_exact_max": 12})
    for _ in range(4):
        items = [{"content": _text(rng), "project": rng.choice(PROJECTS)} for _ in range(6)]
        answer = client.post(
            "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
        )
        assert answer.status_code in (200, 201)
    daemon = client.daemon  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    index = daemon.index
    while "numpy-exact" in (index.vectors.kind, index.passages.vectors.kind):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert index.vectors.kind.startswith("usearch-hnsw")
    assert len(index.passages) > 12  # the passage rows past the limit moved too
    assert index.passages.vectors.kind.startswith("usearch-hnsw")
    for _ in range(6):
        _step(client, rng)
    client.portal.call(assert_index_matches_database, client.daemon, WORDS)  # type: ignore[attr-defined]
    note = "the grafana dashboard shows replica lag after the postgres migration"
    client.post("/api/v1/memories", params={"wait": "true"}, json={"content": note})
    answer = client.post("/api/v1/query", json={"query": "replication delay on the database"})
    found = [r["memory"]["content"] for r in answer.json()["results"]]
    assert note in found
    health = client.get("/api/v1/health").json()["recall_index"]
    assert health["entry_points"]["vectors"]["kind"].startswith("usearch-hnsw")
    assert health["entry_points"]["passages"]["kind"].startswith("usearch-hnsw")


def test_recall_through_the_index_ranks_as_the_sql_path_does(
    make_client: Callable[..., TestClient],
) -> None:
    """With the vector entry point off (the SQL path has none), the in-memory full text,
    graph and columns give the SQL path's ranking and signals. (Scores may differ: the
    in-memory path still measures cosine evidence for calibration, SQL has no vectors.)"""
    rng = random.Random(7)
    client = make_client(recall={"vector_weight": 0.0})
    items = [{"content": _text(rng), "project": rng.choice(PROJECTS)} for _ in range(60)]
    answer = client.post(
        "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
    )
    assert answer.status_code in (200, 201)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(12)]
    in_memory = [_ranking(client, q) for q in queries]
    daemon = client.daemon  # type: ignore[attr-defined]
    assert daemon.index.ready
    sql_client = make_client(recall={"vector_weight": 0.0, "index": "sql"})
    through_sql = [_ranking(sql_client, q) for q in queries]
    assert any(in_memory), "the queries found nothing: the comparison would be empty"
    for query, got, want in zip(queries, in_memory, through_sql, strict=True):
        assert [i for i, _ in got] == [i for i, _ in want], query
        for (_, a), (_, b) in zip(got, want, strict=True):
            assert a == pytest.approx(b, rel=1e-5), query


def _ranking(client: TestClient, query: str) -> list[tuple[str, tuple[float, float, int]]]:
    answer = client.post(
        "/api/v1/query", json={"query": query, "limit": 10, "min_score": 0, "explain": True}
    )
    assert answer.status_code == 200, answer.text
    return [
        (
            r["memory"]["id"],
            (r["explain"]["direct"], r["explain"]["spread"], r["explain"]["fts_rank"]),
        )
        for r in answer.json()["results"]
    ]


def test_after_kill_9_the_restarted_index_equals_the_database_and_keeps_up(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    """kill -9 while a batch is being encoded; the restarted daemon's index holds every
    acknowledged memory, and the encoder finishing the interrupted batch reaches it too."""
    rng = random.Random(11)
    home = paths.data_dir.parent
    with running(home) as proc, proc.client() as http:
        acked = []
        for _ in range(3):
            items = [{"content": _text(rng), "project": rng.choice(PROJECTS)} for _ in range(5)]
            answer = http.post(
                "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
            )
            assert answer.status_code in (200, 201), answer.text
            acked += [r["memory_id"] for r in answer.json()["results"]]
        items = [{"content": _text(rng)} for _ in range(8)]
        answer = http.post("/api/v1/memories/batch", json={"memories": items})  # no wait
        assert answer.status_code in (200, 201, 202), answer.text
        acked += [r["memory_id"] for r in answer.json()["results"]]
        proc.send(signal.SIGKILL)
        proc.wait(10)
    client = make_client()
    daemon = client.daemon  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while daemon.encoder.backlog and time.monotonic() < deadline:
        time.sleep(0.05)
    client.portal.call(assert_index_matches_database, daemon, WORDS)  # type: ignore[attr-defined]
    seqs = client.portal.call(daemon.store.seqs_of, list(dict.fromkeys(acked)))  # type: ignore[attr-defined]
    assert len(seqs) == len(set(acked))
    assert all(daemon.index.columns.has(s) for s in seqs.values())
    for _ in range(6):
        _step(client, rng)
        client.portal.call(assert_index_matches_database, daemon, WORDS)  # type: ignore[attr-defined]
