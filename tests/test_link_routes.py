"""POST /api/v1/associations: links drawn by hand reach the store, the events and recall."""

from __future__ import annotations

from starlette.testclient import TestClient
from support.api import query, remember


def test_a_link_by_hand_is_stored_once_announced_and_followed_by_recall(
    client: TestClient,
) -> None:
    # two projects: the encoder links nothing between them (temporal links stay in one)
    a = remember(client, "The quokka deploy pipeline runs nightly at 02:00.", project="ops")
    b = remember(client, "Marmalade invoices are exported as CSV.", project="finance")
    a, b = a["memory_id"], b["memory_id"]
    assert client.get("/api/v1/associations", params={"memory_id": a}).json()["items"] == []
    body = {"source_id": a, "target_id": b, "relation": "related", "strength": 0.9}

    first = client.post("/api/v1/associations", json=body)
    assert first.status_code == 201, first.text
    assert first.json() == {**body, "created": True}
    again = client.post("/api/v1/associations", json={**body, "strength": 0.4})
    assert again.status_code == 200 and again.json()["created"] is False

    listed = client.get("/api/v1/associations", params={"memory_id": a, "relation": "related"})
    assert listed.status_code == 200
    (edge,) = listed.json()["items"]
    assert edge["strength"] == 0.9  # the larger strength is kept

    events = client.get("/api/v1/activity", params={"types": "association_created"}).json()
    announced = [e["payload"] for e in events["items"]]
    assert [(e["source_id"], e["target_id"], e["strength"]) for e in announced] == [(a, b, 0.9)]

    # the query matches only the first memory; the link brings the second by spreading
    found = query(client, "quokka deploy pipeline nightly", explain=True)["results"]
    ids = [r["memory"]["id"] for r in found]
    assert ids[0] == a and b in ids
    linked = next(r for r in found if r["memory"]["id"] == b)
    assert linked["explain"]["spread"] > 0


def test_bad_links_are_clear_4xx(client: TestClient) -> None:
    a = remember(client, "The walrus cache is warmed at start-up.")["memory_id"]
    cases = [
        ({"source_id": a, "target_id": "no-such-memory"}, 404),
        ({"source_id": a, "target_id": a}, 422),
        ({"source_id": a, "target_id": a, "relation": "supersedes"}, 422),
        ({"source_id": a, "target_id": "x", "strength": 0}, 422),
        ({"source_id": a, "target_id": "x", "strength": 1.5}, 422),
        ({"source_id": a}, 422),
    ]
    for body, status in cases:
        response = client.post("/api/v1/associations", json=body)
        assert response.status_code == status, (body, response.text)
    assert client.get("/api/v1/associations", params={"memory_id": a}).json()["items"] == []
