"""Recall can say "nothing relevant": calibrated scores, the relevance floor, ``min_score``,
and near-identical memories that do not fill a result list (issue 10 §1 MMR part, §2)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from support.api import query, remember
from support.cli import Run
from support.daemon_proc import TOKEN, running

NOTES = [
    "The CI pipeline failed because the Postgres container ran out of disk.",
    "We decided to pin numpy below 3 until the ABI settles.",
    "TIL: git worktree lets you check out two branches at once.",
    "Deploy went fine after the rollback of the payments service.",
    "Use ruff format instead of black in this repo.",
    "Kubernetes pod crash loop on node 3: OOMKilled, raised the memory limit to 2Gi.",
    "The flaky test in test_api.py times out when the network is slow; retry longer.",
    "Redis cache eviction policy set to allkeys-lru to stop out-of-memory errors.",
    "Refactored the auth middleware to validate JWT expiry before the database lookup.",
    "The build takes a long time because webpack re-bundles every vendor file.",
    "Switched the logging to structured JSON so Loki can parse the fields.",
    "Alembic migration 42 adds an index on orders.created_at for the slow report query.",
]

GIBBERISH = ["zzzzqqq nonexistent gibberish", "qwxv plmk", "xj9 vvbq zzt"]
OFF_TOPIC = [
    "How long should I boil pasta for al dente?",
    "What is a good recipe for banana bread?",
    "best hiking trails in the alps",
    "who won the football world cup in 1998",
]
REAL = [
    ("Postgres container disk", 0),
    ("database ran out of storage space in the build", 0),
    ("why is the webpack build slow", 9),
    ("how do we handle JWT tokens", 8),
    ("numpy version pin", 1),
    ("git branches at once", 2),
    ("memory problems with the redis cache", 7),
]


@pytest.fixture
def notes(client: TestClient) -> list[str]:
    return [remember(client, text, project="dev")["memory_id"] for text in NOTES]


@pytest.mark.parametrize("text", GIBBERISH + OFF_TOPIC)
def test_no_real_evidence_returns_nothing(client: TestClient, notes: list[str], text: str) -> None:
    assert query(client, text)["results"] == []
    assert query(client, text, project="dev", limit=50)["results"] == []


def test_real_queries_still_find_their_hits(client: TestClient, notes: list[str]) -> None:
    for text, needle in REAL:
        answer = query(client, text, explain=True)
        assert answer["results"], text
        top = answer["results"][0]
        assert top["memory"]["id"] == notes[needle], text
        for result in answer["results"]:
            assert 0 < result["score"] <= 1, text
            parts = result["explain"]["contributions"]
            assert math.isclose(sum(parts.values()), result["score"], rel_tol=1e-9), text


def test_scores_are_comparable_across_queries(client: TestClient, notes: list[str]) -> None:
    """A real hit outscores anything a meaningless query can produce, and strong evidence
    (the words and the meaning of a note) scores higher than a loose paraphrase."""
    real_tops = {text: query(client, text)["results"][0]["score"] for text, _ in REAL}
    loose_text = "database ran out of storage space in the build"  # cosine 0.34: weak
    assert 0.05 <= real_tops.pop(loose_text) < 0.3
    for text in GIBBERISH + OFF_TOPIC:
        everything = query(client, text, min_score=0, limit=50)["results"]
        assert len(everything) == len(NOTES)  # min_score 0 keeps even no-evidence candidates
        # nothing, or one common word of several ("long" in the pasta question): 0.04
        assert max(r["score"] for r in everything) < 0.05, text
    assert min(real_tops.values()) >= 0.3
    exact = query(client, NOTES[4])["results"][0]
    assert exact["memory"]["id"] == notes[4]
    assert exact["score"] >= 0.9


def test_the_answer_says_its_evidence(client: TestClient, notes: list[str]) -> None:
    """The query's evidence is in the answer: the strongest candidate's score, so a query
    answered with nothing says why (evidence under ``min_score``)."""
    for text, _needle in REAL:
        answer = query(client, text)
        assert answer["evidence"] == pytest.approx(max(r["score"] for r in answer["results"]))
    for text in GIBBERISH + OFF_TOPIC:
        answer = query(client, text)
        assert answer["results"] == [] and answer["evidence"] < 0.05, text


def test_min_score_cuts_weak_results(client: TestClient, notes: list[str]) -> None:
    every = query(client, "Postgres container disk", min_score=0, limit=50)["results"]
    assert len(every) == len(NOTES)
    scores = [r["score"] for r in every]
    assert scores[0] == max(scores) == pytest.approx(1.0)  # MMR may swap neighbours further down
    assert min(scores) < 0.05  # some notes share nothing with the query
    default = query(client, "Postgres container disk", limit=50)["results"]
    assert 1 <= len(default) < len(every)
    assert all(r["score"] >= 0.05 for r in default)
    strict = query(client, "Postgres container disk", min_score=0.5, limit=50)["results"]
    assert strict[0]["memory"]["id"] == notes[0]
    assert all(r["score"] >= 0.5 for r in strict)
    assert len(strict) < len(default)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True, None])
def test_min_score_is_validated(client: TestClient, bad: object) -> None:
    response = client.post("/api/v1/query", json={"query": "disk", "min_score": bad})
    if bad is None:
        assert response.status_code == 200
    else:
        assert response.status_code == 422, response.text


def test_min_score_default_comes_from_config(make_client: Callable[..., TestClient]) -> None:
    client = make_client(recall={"min_score": 0.0})
    for text in NOTES[:4]:
        remember(client, text)
    assert len(query(client, GIBBERISH[0])["results"]) == 4
    assert query(client, GIBBERISH[0], min_score=0.01)["results"] == []


def _source_file(version: int) -> str:
    lines = [
        '"""Rate limiter for the public API: a token bucket per client key."""',
        "",
        "from __future__ import annotations",
        "",
        "import time",
        "from dataclasses import dataclass, field",
        "",
        "",
        "@dataclass",
        "class Bucket:",
        "    capacity: int",
        "    refill_per_s: float",
        "    tokens: float = 0.0",
        "    updated: float = field(default_factory=time.monotonic)",
        "",
        "    def take(self, n: int = 1) -> bool:",
        "        now = time.monotonic()",
        "        elapsed = now - self.updated",
        "        self.tokens = min(self.capacity, self.tokens + elapsed * self.refill_per_s)",
        "        self.updated = now",
        "        if self.tokens < n:",
        "            return False",
        "        self.tokens -= n",
        "        return True",
        "",
        "",
        "class RateLimiter:",
        "    def __init__(self, capacity: int, refill_per_s: float) -> None:",
        "        self.capacity = capacity",
        "        self.refill_per_s = refill_per_s",
        "        self.buckets: dict[str, Bucket] = {}",
        "",
        "    def allow(self, key: str) -> bool:",
        "        bucket = self.buckets.get(key)",
        "        if bucket is None:",
        "            bucket = Bucket(self.capacity, self.refill_per_s, self.capacity)",
        "            self.buckets[key] = bucket",
        "        return bucket.take()",
        "",
        f"DEFAULT_CAPACITY = {100 + version}  # requests per client, edit {version}",
    ]
    return "\n".join(lines)


def test_near_identical_versions_appear_once(client: TestClient, notes: list[str]) -> None:
    versions = [
        remember(client, _source_file(v), project="dev", source="filesystem")["memory_id"]
        for v in range(10)
    ]
    assert len(set(versions)) == 10  # stored as ten memories, not merged on the way in
    answer = query(client, "token bucket rate limiter for the API", project="dev", limit=10)
    ids = [r["memory"]["id"] for r in answer["results"]]
    assert len(set(ids) & set(versions)) == 1, ids
    # a word query for the file finds it once too, and distinct notes still fill the list
    answer = query(client, "RateLimiter Bucket refill_per_s", limit=5, min_score=0)
    ids = [r["memory"]["id"] for r in answer["results"]]
    assert len(set(ids) & set(versions)) == 1, ids
    assert len(ids) == 5


def test_templated_lines_are_not_near_copies(client: TestClient) -> None:
    """Lines that differ in one value embed at about 0.98 but are different facts: kept."""
    ids = [
        remember(client, f"Kubernetes pod crash loop on node {i}: OOMKilled worker-{i}")[
            "memory_id"
        ]
        for i in range(6)
    ]
    found = [r["memory"]["id"] for r in query(client, "kubernetes OOMKilled", limit=6)["results"]]
    assert sorted(found) == sorted(ids)


def test_cli_min_score(run: Run, tmp_path: Path) -> None:
    """``mnemonic recall --min-score`` reaches /query; out of range is a usage error."""
    with running(tmp_path / "home") as proc:
        env = {
            "MNEMONIC_HOME": str(proc.home),
            "MNEMONIC_PORT": str(proc.port),
            "MNEMONIC_TOKEN": TOKEN,
        }
        for text in NOTES[:3]:
            assert run(env, "remember", text, "--project", "cli", "--json")[0] == 0

        def recall(*extra: str) -> list[dict[str, object]]:
            code, out, err = run(env, "recall", GIBBERISH[0], "--project", "cli", "--json", *extra)
            assert code == 0, err
            results: list[dict[str, object]] = json.loads(out)["results"]
            return results

        assert recall() == []
        assert len(recall("--min-score", "0")) == 3
        assert run(env, "recall", "x", "--min-score", "1.5")[0] == 64
