"""The abstraction agent inside a real daemon: run on demand over REST, then the patterns,
abstractions, detail and dismiss routes (strict answers, 4xx on bad input)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from starlette.testclient import TestClient

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
