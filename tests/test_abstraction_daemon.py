"""The abstraction agent inside a real daemon: run on demand over REST, then the patterns,
abstractions, detail and dismiss routes (strict answers, 4xx on bad input)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient
from support.daemon_proc import running

from tests.support.api import remember

THEMES = [
    "Docker compose volume mounts break when the container runs as root.",
    "Rebuilt the docker image after the compose file changed the volume path.",
    "The docker container could not reach the compose network on startup.",
    "Docker compose logs showed the volume was mounted read only.",
    "pytest fixtures in conftest leak temp directories between tests.",
    "The pytest fixture for the database must be function scoped.",
    "A session scoped pytest fixture now loads the model once.",
    "Moved shared pytest fixtures into conftest for reuse.",
]
QUIET = {
    "episodes": {"interval_s": 3600},
    "enrichment": {"interval_s": 3600},
    "supersession": {"review_interval_s": 3600},
    "abstraction": {"interval_s": 3600},
}


def test_run_list_show_and_dismiss(make_client: Callable[..., TestClient]) -> None:
    client = make_client(**QUIET)
    start = datetime.now(UTC) - timedelta(days=6)
    for i, text in enumerate(THEMES):
        remember(
            client, text, project="alpha", timestamp=(start + timedelta(days=i % 3)).isoformat()
        )
    run = client.post("/api/v1/agents/abstraction/run")
    assert run.status_code == 200, run.text
    assert run.json()["run"]["ok"] is True, run.json()
    assert run.json()["run"]["summary"]["patterns_created"] == 2
    page = client.get("/api/v1/patterns", params={"limit": 1}).json()
    assert len(page["items"]) == 1 and page["next_cursor"]
    rest = client.get("/api/v1/patterns", params={"cursor": page["next_cursor"]}).json()
    items = page["items"] + rest["items"]
    assert len(items) == 2 and rest["next_cursor"] is None
    assert all(i["level"] == "pattern" and i["project"] == "alpha" for i in items)
    detail = client.get(f"/api/v1/abstractions/{items[0]['id']}").json()
    assert len(detail["evidence"]) == items[0]["evidence_count"] == 4
    assert detail["children"] == [] and detail["truncated"] is False
    assert client.get("/api/v1/abstractions", params={"level": "principle"}).json()["items"] == []

    for path in ("/api/v1/patterns/nope/dismiss", "/api/v1/abstractions/nope/dismiss"):
        assert client.post(path).status_code == 404
    assert client.get("/api/v1/abstractions/nope").status_code == 404
    for bad in ({"min_strength": "2"}, {"state": "bogus"}, {"cursor": "!!"}, {"limit": "0"},
                {"whatever": "1"}):  # fmt: skip
        assert client.get("/api/v1/patterns", params=bad).status_code in (400, 422), bad
    assert client.get("/api/v1/abstractions", params={"level": "x"}).status_code == 422

    pid = items[0]["id"]
    for _ in range(2):  # idempotent
        answer = client.post(f"/api/v1/patterns/{pid}/dismiss")
        assert answer.status_code == 200 and answer.json() == {"id": pid, "state": "dismissed"}
    again = client.post("/api/v1/agents/abstraction/run").json()
    assert again["run"]["summary"]["patterns_created"] == 0
    active = client.get("/api/v1/patterns", params={"state": "active"}).json()["items"]
    assert [i["id"] for i in active] == [items[1]["id"]]
    health = client.get("/api/v1/agents").json()
    assert "abstraction" in str(health)


def _themes_found(make_client: Callable[..., TestClient], process_min_nodes: int) -> Any:
    settings = {"interval_s": 3600, "process_min_nodes": process_min_nodes}
    client = make_client(**{**QUIET, "abstraction": settings})
    start = datetime(2026, 3, 2, tzinfo=UTC)
    for i, text in enumerate(THEMES):
        remember(
            client, text, project="alpha", timestamp=(start + timedelta(days=i % 3)).isoformat()
        )
    run = client.post("/api/v1/agents/abstraction/run").json()["run"]
    assert run["ok"] is True, run
    items = client.get("/api/v1/patterns").json()["items"]
    evidence = [
        sorted(
            e["summary"] for e in client.get(f"/api/v1/abstractions/{i['id']}").json()["evidence"]
        )
        for i in items
    ]
    return run["summary"]["clustered_in_process"], sorted(evidence)


def test_clustering_in_a_worker_process_finds_the_same_themes(
    make_client: Callable[..., TestClient],
) -> None:
    """Past ``process_min_nodes`` Louvain runs in a worker process (anyio's pool), so its
    seconds of pure Python never hold the daemon's GIL; the themes are the same as in a
    thread (the seed and the sorted edge order make it reproducible across processes)."""
    in_process, themes = _themes_found(make_client, 1)
    in_thread, same = _themes_found(make_client, 100_000)
    assert (in_process, in_thread) == (True, False)
    assert len(themes) == 2 and all(len(t) == 4 for t in themes)
    assert themes == same


def test_a_served_daemon_clusters_in_a_worker_process(tmp_path: Path) -> None:
    """Through ``python -m mnemonic serve``: the worker loads the parent's main module as
    ``__mp_main__`` and must not run the CLI again (it did: exit 64, every cycle failed)."""
    env = {
        "MNEMONIC_ABSTRACTION__PROCESS_MIN_NODES": "1",
        "MNEMONIC_ABSTRACTION__INTERVAL_S": "3600",
        "MNEMONIC_REACTOR__ENABLED": "false",
        "MNEMONIC_ORCHESTRATOR__ENABLED": "false",
    }
    start = datetime(2026, 3, 2, tzinfo=UTC)
    with running(tmp_path / "home", env=env) as daemon, daemon.client(timeout=120) as http:
        for i, text in enumerate(THEMES):
            body = {"content": text, "project": "alpha",
                    "timestamp": (start + timedelta(days=i % 3)).isoformat()}  # fmt: skip
            stored = http.post("/api/v1/memories", params={"wait": "true"}, json=body)
            assert stored.status_code == 201, stored.text
        run = http.post("/api/v1/agents/abstraction/run", params={"wait": "true"}).json()["run"]
    assert run["ok"] is True, run
    assert run["summary"]["clustered_in_process"] is True
    assert run["summary"]["patterns_created"] == 2
