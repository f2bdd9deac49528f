"""Metacognition and the orchestrator inside a real daemon: the agent runs on demand over
REST, ``GET /api/v1/meta`` answers its rows, health carries the ``cognition`` section,
``/metrics`` the gauges, and the self-test leaves access counts alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient

from mnemonic.cli.meta import meta_lines
from tests.support.api import remember

QUIET: dict[str, Any] = {
    "episodes": {"interval_s": 3600},
    "enrichment": {"interval_s": 3600},
    "supersession": {"review_interval_s": 3600},
    "metacognition": {"min_memories": 1, "self_test_llm_questions": 0},
    "orchestrator": {"interval_s": 3600},
}
NOTES = [
    "Decided to keep sessions in Redis because MySQL was too slow under load.",
    "The nightly backup job copies the database to the S3 bucket at 2am.",
    "Deploys of the payments service go through the Argo pipeline on Fridays.",
]


def test_meta_route_health_and_metrics(make_client: Callable[..., TestClient]) -> None:
    client = make_client(**QUIET)
    ids = [remember(client, text)["memory_id"] for text in NOTES]
    before = [client.get(f"/api/v1/memories/{i}").json()["access_count"] for i in ids]

    run = client.post("/api/v1/agents/metacognition/run", params={"wait": "true"})
    assert run.status_code == 200, run.text
    summary = run.json()["run"]["summary"] if "run" in run.json() else run.json()["summary"]
    assert summary["self_test_probes"] == 3 and summary["self_test_hit_rate"] == 1.0

    after = [client.get(f"/api/v1/memories/{i}").json()["access_count"] for i in ids]
    assert after == before  # the self-test is no access

    answer = client.get("/api/v1/meta").json()
    assert set(answer["latest"]) == {
        "unembedded", "source_skew", "dead_ratio", "stale_consolidation",
        "irrelevant_feedback", "store_size", "recall_self_test",
    }  # fmt: skip
    assert answer["latest"]["source_skew"]["value"] == 1.0  # every memory came from the API
    assert answer["latest"]["source_skew"]["severity"] == "alert"
    # the cycle's seven rows, and the orchestrator's first self-test at start (no history)
    kinds = [o["kind"] for o in answer["history"]]
    assert len(kinds) == 8 and kinds.count("recall_self_test") == 2
    assert any("recall_self_test" in line for line in meta_lines(answer))

    one = client.get("/api/v1/meta", params={"kind": "dead_ratio", "limit": 1}).json()
    assert list(one["latest"]) == ["dead_ratio"] and len(one["history"]) == 1
    assert client.get("/api/v1/meta", params={"kind": "nonsense"}).status_code == 422
    assert client.get("/api/v1/meta", params={"limit": 0}).status_code == 422
    assert client.get("/api/v1/meta", params={"bogus": 1}).status_code == 422

    health = client.get("/api/v1/health").json()
    cognition = health["cognition"]
    names = {a["name"] for a in cognition["agents"]}
    assert "metacognition" in names and "consolidation" in names
    meta_agent = next(a for a in cognition["agents"] if a["name"] == "metacognition")
    assert meta_agent["last_ok"] is True and meta_agent["runs"] >= 1
    assert cognition["self_test"]["hit_rate"] == 1.0
    assert cognition["database_bytes"] > 0  # the orchestrator's first look at start
    assert cognition["llm"]["mode"] == "heuristic"

    metrics = client.get("/metrics").text
    assert "mnemonic_database_bytes " in metrics
    assert "mnemonic_recall_self_test_hit_rate 1.0" in metrics
    assert 'mnemonic_agent_cycle_failures{agent="metacognition"} 0.0' in metrics


def test_an_empty_store_answers_an_empty_meta(make_client: Callable[..., TestClient]) -> None:
    client = make_client(**{**QUIET, "orchestrator": {"enabled": False}})
    answer = client.get("/api/v1/meta").json()
    assert answer == {"latest": {}, "history": []}
    assert meta_lines(answer)[0].startswith("no metacognition observation yet")
    assert client.get("/api/v1/health").json()["cognition"]["ticks"] == 0
