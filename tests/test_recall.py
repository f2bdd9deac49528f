"""Recall through the REST API: both entry points, spreading, filters, MMR, explain,
feedback."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient
from support.api import query, remember

NOTES = [
    ("The CI pipeline failed because the Postgres container ran out of disk.", "api", "infra"),
    ("We decided to pin numpy below 3 until the ABI settles.", "user", "infra"),
    ("TIL: git worktree lets you check out two branches at once.", "terminal", "tools"),
    ("Caroline went to the LGBTQ support group yesterday.", "ingest", "chat"),
    ("The café on Rua Augusta serves the best pastel de nata.", "api", "travel"),
    ("会議は日本語で行われました", "api", "travel"),
    ("Deploy went fine 🚀 after the rollback", "terminal", "infra"),
]


@pytest.fixture
def loaded(client: TestClient) -> dict[str, str]:
    ids = {}
    for i, (text, source, project) in enumerate(NOTES):
        stamp = f"2024-0{1 + i % 6}-1{i}T12:00:00Z"
        ids[text] = remember(client, text, source=source, project=project, timestamp=stamp)[
            "memory_id"
        ]
    return ids


def _ids(answer: dict[str, object]) -> list[str]:
    return [r["memory"]["id"] for r in answer["results"]]  # type: ignore[attr-defined,index]


def test_finds_by_words_and_by_meaning(client: TestClient, loaded: dict[str, str]) -> None:
    by_words = query(client, "Postgres container disk", explain=True)
    top = by_words["results"][0]
    assert top["memory"]["id"] == loaded[NOTES[0][0]]
    assert top["explain"]["fts_rank"] == 1
    by_meaning = query(client, "database ran out of storage space in the build", explain=True)
    top = by_meaning["results"][0]
    assert top["memory"]["id"] == loaded[NOTES[0][0]]
    assert top["explain"]["vector_rank"] == 1


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("cafe pastel", 4),
        ("café", 4),
        ("日本語", 5),
        ("会議は日本語で行われました", 5),
        ("🚀 rollback", 6),
    ],
)
def test_non_ascii_queries(
    client: TestClient, loaded: dict[str, str], text: str, needle: int
) -> None:
    answer = query(client, text, explain=True)
    assert _ids(answer)[0] == loaded[NOTES[needle][0]]


def test_non_ascii_found_by_full_text_path(client: TestClient, loaded: dict[str, str]) -> None:
    for text, needle in (("café", 4), ("cafe", 4), ("日本語で行われました", 5)):
        hit = query(client, text, explain=True)["results"][0]
        if needle == 5 and hit["explain"]["fts_rank"] is None:
            # unicode61 keeps a CJK run as one token: the whole run matches, a part does not
            continue
        assert hit["memory"]["id"] == loaded[NOTES[needle][0]]
        assert hit["explain"]["fts_rank"] == 1, text
    whole = query(client, "会議は日本語で行われました", explain=True)["results"][0]
    assert whole["explain"]["fts_rank"] == 1
    assert whole["explain"]["vector_rank"] == 1


@pytest.mark.parametrize(
    "nasty",
    [
        '"',
        '""',
        "*",
        "(",
        ")",
        "AND",
        "OR NOT",
        "NEAR(",
        'NEAR("a" "b", 2)',
        "content:",
        "col:umn",
        "^start",
        "-minus",
        "a' OR '1'='1",
        "\\",
        "{}",
        "[x]",
        "   ?   ",
        "\x00",
    ],
)
def test_fts_syntax_in_queries_is_just_text(client: TestClient, nasty: str) -> None:
    remember(client, "NEAR the AND gate, OR maybe content: the (parenthesis) star *")
    response = client.post("/api/v1/query", json={"query": f"{nasty} gate"})
    assert response.status_code == 200, response.text
    assert response.json()["results"], nasty


def test_filters(client: TestClient, loaded: dict[str, str]) -> None:
    # a stopword is no evidence: by default nothing; min_score 0 lists every candidate
    assert query(client, "the", limit=50)["results"] == []
    ids = lambda **f: set(_ids(query(client, "the", limit=50, min_score=0, **f)))  # noqa: E731
    assert ids(project="infra") == {loaded[t] for t, _, p in NOTES if p == "infra"}
    assert ids(source=["terminal"]) == {loaded[t] for t, s, _ in NOTES if s == "terminal"}
    assert ids(source="terminal") == ids(source=["terminal"])
    assert ids(type=["decision"]) == {loaded[NOTES[1][0]]}
    assert ids(type=["learning"]) == {loaded[NOTES[2][0]]}
    assert ids(since="2024-05-01T00:00:00Z") == {
        loaded[NOTES[i][0]] for i in range(len(NOTES)) if 1 + i % 6 >= 5
    }
    assert ids(until="2024-01-31T00:00:00Z") == {loaded[NOTES[0][0]], loaded[NOTES[6][0]]}
    salience = {i: client.get(f"/api/v1/memories/{i}").json()["salience"] for i in loaded.values()}
    assert ids(min_salience=0.81) == {i for i, s in salience.items() if s >= 0.81}
    assert 0 < len(ids(min_salience=0.81)) < len(loaded)
    assert ids(project="nothing-here") == set()


def test_limit_is_filled_after_mmr(make_client: Callable[..., TestClient]) -> None:
    client = make_client(recall={"mmr_lambda": 0.3})
    for i in range(15):
        remember(client, f"Kubernetes pod crash loop on node {i}: OOMKilled container worker-{i}")
    for i in range(5):
        remember(client, f"Unrelated note {i}: buy oat milk and coffee beans")
    for limit in (1, 5, 10, 20):
        answer = query(client, "kubernetes pod OOMKilled", limit=limit)
        assert len(answer["results"]) == limit
        assert len(set(_ids(answer))) == limit


def test_explain_contributions_sum_to_score(client: TestClient, loaded: dict[str, str]) -> None:
    answer = query(client, "git branches worktree", explain=True, limit=5)
    assert answer["results"]
    for result in answer["results"]:
        parts = result["explain"]["contributions"]
        assert set(parts) == {"direct", "spread", "recency", "salience", "significance"}
        assert math.isclose(sum(parts.values()), result["score"], rel_tol=1e-9, abs_tol=1e-12)
    scores = [r["score"] for r in answer["results"]]
    assert scores[0] == max(scores)


def test_spreading_activation_surfaces_linked_memory(client: TestClient) -> None:
    anchor = remember(client, "Project Falcon uses the Kestrel message broker.", project="p")
    linked = remember(client, "Kestrel broker restarts nightly at 03:00.", project="p")
    for i in range(5):
        remember(client, f"Unrelated filler about gardening tomatoes {i}", project="p")
    answer = query(client, "What does Project Falcon use?", project="p", explain=True)
    by_id = {r["memory"]["id"]: r for r in answer["results"]}
    assert answer["results"][0]["memory"]["id"] == anchor["memory_id"]
    assert linked["memory_id"] in by_id
    assert by_id[linked["memory_id"]]["explain"]["spread"] > 0


def test_feedback_moves_utility_within_bounds(client: TestClient) -> None:
    stored = remember(client, "Use ruff format instead of black in this repo.")
    utilities = []
    for _ in range(12):
        answer = query(client, "ruff format black")
        client.post(
            "/api/v1/feedback",
            json={
                "query_id": answer["query_id"],
                "quality": "helpful",
                "memory_ids": [stored["memory_id"]],
            },
        ).raise_for_status()
        utilities.append(client.get(f"/api/v1/memories/{stored['memory_id']}").json()["utility"])
    assert utilities[0] == pytest.approx(1.1)
    assert max(utilities) == pytest.approx(1.5)
    for _ in range(20):
        answer = query(client, "ruff format black")
        client.post(
            "/api/v1/feedback",
            json={
                "query_id": answer["query_id"],
                "quality": "irrelevant",
                "memory_ids": [stored["memory_id"]],
            },
        ).raise_for_status()
    memory = client.get(f"/api/v1/memories/{stored['memory_id']}").json()
    assert memory["utility"] == pytest.approx(0.5)
    assert memory["access_count"] >= 32


def test_feedback_changes_ranking(client: TestClient) -> None:
    a = remember(client, "Deploy notes: the api service deploys with helm.")["memory_id"]
    b = remember(client, "Deploy notes: the web service deploys with helm.")["memory_id"]
    answer = query(client, "deploy notes helm service")
    first = _ids(answer)[0]
    loser = b if first == a else a
    for _ in range(5):
        answer = query(client, "deploy notes helm service")
        client.post(
            "/api/v1/feedback",
            json={"query_id": answer["query_id"], "quality": "irrelevant", "memory_ids": [first]},
        ).raise_for_status()
    assert _ids(query(client, "deploy notes helm service"))[0] == loser
