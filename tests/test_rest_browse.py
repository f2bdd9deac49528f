"""The browsing and amending REST surface: lists with cursors, context, graph,
associations, projects, activity and stats, against the real app and store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient
from support.api import query, remember

from mnemonic.paths import Paths

NOTES = [
    ("Deploys go through the blue-green pipeline in Jenkins.", "infra"),
    ("The Jenkins pipeline needs the deploy key rotated every quarter.", "infra"),
    ("We decided to use PostgreSQL 16 for the billing service.", "billing"),
    ("Billing invoices are generated nightly at 02:00 UTC.", "billing"),
    ("Error: invoice job failed with a deadlock on the ledger table.", "billing"),
]


def _seed(client: TestClient) -> list[dict[str, Any]]:
    return [remember(client, text, project=project) for text, project in NOTES]


def test_list_memories_newest_first_with_filters_and_cursor(client: TestClient) -> None:
    seeded = _seed(client)
    ids = [s["memory_id"] for s in seeded]
    page = client.get("/api/v1/memories", params={"limit": 2}).json()
    assert [m["id"] for m in page["items"]] == ids[::-1][:2]
    assert all("vector" not in m and "embedding" not in m for m in page["items"])
    seen = [m["id"] for m in page["items"]]
    cursor = page["next_cursor"]
    while cursor:
        page = client.get("/api/v1/memories", params={"limit": 2, "cursor": cursor}).json()
        seen += [m["id"] for m in page["items"]]
        cursor = page["next_cursor"]
    assert seen == ids[::-1]
    billing = client.get("/api/v1/memories", params={"project": "billing"}).json()
    assert {m["id"] for m in billing["items"]} == set(ids[2:])
    errors = client.get("/api/v1/memories", params={"type": "error"}).json()["items"]
    assert [m["id"] for m in errors] == [ids[4]]
    both = client.get("/api/v1/memories", params=[("type", "error"), ("type", "decision")])
    assert {m["id"] for m in both.json()["items"]} == {ids[2], ids[4]}


def test_list_rejects_bad_parameters_with_422(client: TestClient) -> None:
    for params in (
        {"limit": 0},
        {"limit": "many"},
        {"state": "gone"},
        {"cursor": "!!!"},
        {"cursor": "bm90LWFuLWludA"},  # base64 of "not-an-int": decodes, wrong shape
        {"unknown": "x"},
        {"since": "yesterday-ish"},
    ):
        response = client.get("/api/v1/memories", params=params)
        assert response.status_code == 422, (params, response.text)
        assert response.json()["details"][0]["field"]


def test_amend_replaces_content_keeps_links_and_records_the_old_text(
    client: TestClient, paths: Paths
) -> None:
    seeded = _seed(client)
    target = seeded[3]["memory_id"]
    before = client.get(f"/api/v1/memories/{target}/context").json()
    links_before = {(a["memory"]["id"], a["relation"]) for a in before["associations"]}
    assert links_before, "the seeded memory should have links"
    new_text = "Billing invoices are generated nightly at 03:30 UTC since the DST change."
    response = client.patch(
        f"/api/v1/memories/{target}", json={"content": new_text, "reason": "schedule moved"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["content"] == new_text
    after = client.get(f"/api/v1/memories/{target}/context").json()
    assert {(a["memory"]["id"], a["relation"]) for a in after["associations"]} == links_before
    assert after["amendments"] == [
        {
            "old_content": NOTES[3][0],
            "new_content": new_text,
            "reason": "schedule moved",
            "created_at": after["amendments"][0]["created_at"],
        }
    ]
    # re-indexed for full text and re-embedded for meaning
    hit = query(client, "daylight saving change 03:30", explain=True)["results"][0]
    assert hit["memory"]["id"] == target
    assert hit["explain"]["fts_rank"] == 1 and hit["explain"]["vector_rank"] == 1
    with sqlite3.connect(paths.database) as conn:
        fts = conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '\"02:00\"'"
        ).fetchone()[0]
    assert fts == 0


def test_amend_redacts_and_validates(client: TestClient) -> None:
    memory_id = remember(client, "The staging token lives in the vault.")["memory_id"]
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    response = client.patch(
        f"/api/v1/memories/{memory_id}", json={"content": f"staging token is {secret}"}
    )
    assert response.status_code == 200
    assert secret not in response.text and "[REDACTED:" in response.json()["content"]
    assert client.patch("/api/v1/memories/nope", json={"content": "x"}).status_code == 404
    for body in ({"content": "   "}, {"content": ""}, {}, {"content": "x", "extra": 1}):
        assert client.patch(f"/api/v1/memories/{memory_id}", json=body).status_code == 422


def test_context_lists_links_and_neighbours_in_time(client: TestClient) -> None:
    seeded = _seed(client)
    middle = seeded[3]["memory_id"]
    ctx = client.get(f"/api/v1/memories/{middle}/context").json()
    assert ctx["memory"]["id"] == middle
    neighbour_ids = [n["id"] for n in ctx["neighbours"]]
    assert neighbour_ids == [seeded[2]["memory_id"], seeded[4]["memory_id"]]
    relations = {a["relation"] for a in ctx["associations"]}
    assert "temporal" in relations
    strengths = [a["strength"] for a in ctx["associations"]]
    assert strengths == sorted(strengths, reverse=True)
    assert client.get("/api/v1/memories/unknown/context").status_code == 404


def test_graph_around_a_memory_and_for_a_project_is_bounded(client: TestClient) -> None:
    seeded = _seed(client)
    start = seeded[2]["memory_id"]
    graph = client.get("/api/v1/graph", params={"memory_id": start, "depth": 2}).json()
    node_ids = {n["id"] for n in graph["nodes"]}
    assert start in node_ids and len(node_ids) >= 2
    assert all(e["source"] in node_ids and e["target"] in node_ids for e in graph["edges"])
    small = client.get("/api/v1/graph", params={"memory_id": start, "limit": 1}).json()
    assert [n["id"] for n in small["nodes"]] == [start] and small["truncated"] is True
    project = client.get("/api/v1/graph", params={"project": "billing"}).json()
    assert {n["id"] for n in project["nodes"]} == {s["memory_id"] for s in seeded[2:]}
    assert project["truncated"] is False
    assert client.get("/api/v1/graph", params={"depth": 9}).status_code == 422
    assert client.get("/api/v1/graph", params={"memory_id": "nope"}).status_code == 404


def test_associations_page_through_every_edge_once(client: TestClient) -> None:
    _seed(client)
    total = client.get("/api/v1/stats").json()["memories"]["associations"]
    assert total > 2
    seen: list[tuple[str, str, str]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/api/v1/associations", params=params).json()
        seen += [(e["source"], e["target"], e["relation"]) for e in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == total == len(set(seen))
    temporal = client.get("/api/v1/associations", params={"relation": "temporal"}).json()
    assert temporal["items"] and all(e["relation"] == "temporal" for e in temporal["items"])
    assert client.get("/api/v1/associations", params={"relation": "x"}).status_code == 422


def test_projects_list_counts_and_last_activity(client: TestClient) -> None:
    _seed(client)
    items = {p["name"]: p for p in client.get("/api/v1/projects").json()["items"]}
    assert items["infra"]["memories"] == 2 and items["billing"]["memories"] == 3
    assert items["billing"]["active"] == 3 and items["billing"]["last_at"]


def test_activity_shows_recent_events_newest_first_with_filters(client: TestClient) -> None:
    _seed(client)
    query(client, "jenkins pipeline")
    items = client.get("/api/v1/activity", params={"limit": 500}).json()["items"]
    types = [i["type"] for i in items]
    assert types[0] == "query_executed"
    assert types.count("raw_memory_created") == len(NOTES)
    assert types.count("memory_encoded") == len(NOTES)
    only = client.get("/api/v1/activity", params={"types": "memory_encoded"}).json()["items"]
    assert {i["type"] for i in only} == {"memory_encoded"}
    infra = client.get("/api/v1/activity", params={"project": "infra"}).json()["items"]
    assert infra and all(i["payload"]["project"] == "infra" for i in infra)
    assert client.get("/api/v1/activity", params={"types": "bogus"}).status_code == 422


def test_events_trace_a_memory_back_to_its_raw_memory(client: TestClient) -> None:
    raw_id = remember(client, "Traceable: the cache TTL is 300 seconds.")["raw_id"]
    items = client.get("/api/v1/activity", params={"limit": 50}).json()["items"]
    created = next(i for i in items if i["type"] == "raw_memory_created")
    encoded = next(i for i in items if i["type"] == "memory_encoded")
    assert created["payload"]["raw_id"] == encoded["payload"]["raw_id"] == raw_id
    assert encoded["context"]["parent_id"] == created["context"]["id"]


def test_stats_break_down_counts_queues_agents(client: TestClient) -> None:
    _seed(client)
    stats = client.get("/api/v1/stats").json()
    mem = stats["memories"]
    assert mem["total"] == len(NOTES)
    assert mem["by_state"] == {"active": len(NOTES)}
    assert mem["by_source"] == {"api": len(NOTES)}
    assert mem["by_project"] == {"billing": 3, "infra": 2}
    assert sum(mem["by_type"].values()) == len(NOTES) and mem["by_type"]["error"] == 1
    assert stats["raw"]["by_status"] == {"encoded": len(NOTES)}
    assert stats["raw"]["failed"] == []
    names = {s["name"] for s in stats["bus"]["subscribers"]}
    assert {"activity", "write-waiters", "encoding"} <= names
    assert all(s["dropped"] == 0 for s in stats["bus"]["subscribers"])
    agents = {a["name"]: a for a in stats["agents"]}
    assert agents["encoding"]["state"] == "running"
    assert "encoding-sweep" in agents
    assert "heap-trim" in agents  # agents.heap_trim_interval_s > 0 by default
    assert stats["queues"]["encoding"] == 0


def test_wait_times_out_with_202_and_the_pending_status(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(
        encoding={"batch_wait_ms": 60_000, "batch_max": 1000, "wait_timeout_s": 0.3}
    )
    response = client.post(
        "/api/v1/memories", params={"wait": "true"}, json={"content": "slow to embed"}
    )
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "accepted"
    raw = client.get(f"/api/v1/raw/{body['raw_id']}").json()
    assert raw["status"] == "accepted"
