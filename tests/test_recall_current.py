"""Memory that knows what is current, through the REST API of a real daemon: supersessions
set by hand rank the older memory below its successor (explained), ``as_of`` looks back,
and archived memories come back only when live ones answer a query weakly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient

from tests.support.api import query, remember

OLD = "Session data for the checkout service is stored in MySQL."
NEW = "Checkout sessions moved from MySQL to Redis last sprint."


def _ids(answer: dict[str, Any]) -> list[str]:
    return [r["memory"]["id"] for r in answer["results"]]


def _two(client: TestClient) -> tuple[str, str]:
    old = remember(client, OLD, timestamp="2026-01-05T10:00:00Z")["memory_id"]
    new = remember(client, NEW, timestamp="2026-03-02T10:00:00Z")["memory_id"]
    return old, new


def test_an_update_is_detected_when_it_is_encoded(client: TestClient) -> None:
    old, new = _two(client)
    chain = client.get(f"/api/v1/memories/{old}/supersessions").json()
    assert [e["newer_id"] for e in chain["superseded_by"]] == [new]
    answer = query(client, "where is checkout session data stored in MySQL", explain=True)
    order = _ids(answer)
    assert order.index(new) < order.index(old)
    assert answer["results"][order.index(old)]["explain"]["superseded_by"] == [new]
    # a look-alike that is not an update links nothing
    other = remember(client, "Session data for the billing service is stored in Postgres.")
    chain = client.get(f"/api/v1/memories/{other['memory_id']}/supersessions").json()
    assert chain == {"memory_id": other["memory_id"], "superseded_by": [], "supersedes": []}


def test_a_superseded_memory_ranks_below_its_successor_and_says_why(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(supersession={"enabled": False})  # by hand only
    old, new = _two(client)
    question = "where is checkout session data stored in MySQL"
    before = _ids(query(client, question))
    assert before.index(old) < before.index(new)  # the premise: the old wording wins

    response = client.post(f"/api/v1/memories/{new}/supersedes", json={"older_id": old})
    assert response.status_code == 201, response.text
    assert client.post(f"/api/v1/memories/{new}/supersedes", json={"older_id": old}).json() == {
        "newer_id": new,
        "older_id": old,
        "created": False,
    }

    answer = query(client, question, explain=True)
    order = _ids(answer)
    assert order.index(new) < order.index(old)
    by_id = {r["memory"]["id"]: r for r in answer["results"]}
    assert by_id[old]["explain"]["superseded_by"] == [new]
    assert by_id[new]["explain"]["supersedes"] == [old]
    assert by_id[old]["explain"]["contributions"]["superseded"] < 0
    for result in answer["results"]:  # the explanation still sums to the score
        assert abs(sum(result["explain"]["contributions"].values()) - result["score"]) < 1e-6

    chain = client.get(f"/api/v1/memories/{old}/supersessions").json()
    assert [e["newer_id"] for e in chain["superseded_by"]] == [new]
    assert chain["supersedes"] == []


def test_the_successor_is_pulled_in_when_the_query_misses_it(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(supersession={"enabled": False})
    old = remember(
        client,
        "The nightly backup job runs at 02:00 on the db-7 host.",
        timestamp="2026-01-05T10:00:00Z",
    )["memory_id"]
    for host in (3, 4, 5, 6):
        remember(
            client,
            f"The nightly backup job on the db-{host} host runs at 0{host}:15.",
            timestamp=f"2026-02-0{host}T10:00:00Z",
        )
    new = remember(
        client, "Moved it: now 04:30, see ops wiki page 12.", timestamp="2026-03-09T10:00:00Z"
    )["memory_id"]
    question = "when does the nightly backup job run on db-7"
    assert new not in _ids(query(client, question, limit=3))
    client.post(f"/api/v1/memories/{new}/supersedes", json={"older_id": old})
    assert new in _ids(query(client, question, limit=3))  # pulled in by the edge
    order = _ids(query(client, question, limit=8))  # the superseded one may drop out of 3
    assert order.index(new) < order.index(old)


def test_as_of_looks_back_before_the_update(client: TestClient) -> None:
    old, new = _two(client)  # the encoder links the update by itself
    question = "where is checkout session data stored"
    then = query(client, question, as_of="2026-02-01T00:00:00Z", explain=True)
    assert _ids(then)[0] == old
    assert new not in _ids(then)
    assert then["results"][0]["explain"]["superseded_by"] == []
    now = _ids(query(client, question))
    assert now.index(new) < now.index(old)


def test_removing_a_supersession_restores_the_ranking(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(supersession={"enabled": False})
    old, new = _two(client)
    question = "where is checkout session data stored in MySQL"
    baseline = _ids(query(client, question))
    client.post(f"/api/v1/memories/{new}/supersedes", json={"older_id": old})
    assert client.delete(f"/api/v1/memories/{new}/supersedes/{old}").status_code == 200
    assert client.delete(f"/api/v1/memories/{new}/supersedes/{old}").status_code == 404
    assert _ids(query(client, question)) == baseline


def test_reversing_a_supersession_replaces_the_edge(client: TestClient) -> None:
    old, new = _two(client)
    client.post(f"/api/v1/memories/{new}/supersedes", json={"older_id": old})
    client.post(f"/api/v1/memories/{old}/supersedes", json={"older_id": new})
    chain = client.get(f"/api/v1/memories/{old}/supersessions").json()
    assert [e["older_id"] for e in chain["supersedes"]] == [new]
    assert chain["superseded_by"] == []


def test_bad_supersessions_are_client_errors(client: TestClient) -> None:
    old, _ = _two(client)
    missing = client.post(f"/api/v1/memories/{old}/supersedes", json={"older_id": "nope"})
    assert missing.status_code == 422  # the path's memory exists; the body names nothing
    assert missing.json()["details"][0]["field"] == "older_id"
    unknown = client.post("/api/v1/memories/nope/supersedes", json={"older_id": old})
    assert unknown.status_code == 404 and "nope" in unknown.json()["error"]
    assert client.delete(f"/api/v1/memories/{old}/supersedes/nope").status_code == 422
    assert client.delete(f"/api/v1/memories/{old}/supersedes/{old}").status_code == 422
    itself = client.post(f"/api/v1/memories/{old}/supersedes", json={"older_id": old})
    assert itself.status_code == 422
    extra = client.post(f"/api/v1/memories/{old}/supersedes", json={"older_id": "x", "y": 1})
    assert extra.status_code == 422
    assert client.get("/api/v1/memories/nope/supersessions").status_code == 404
    bad_time = client.post("/api/v1/query", json={"query": "x", "as_of": "yesterday-ish"})
    assert bad_time.status_code == 422


def _archive_by_decay(client: TestClient, memory_id: str) -> None:
    """Archive the way consolidation does (a state change with no user 'forget')."""
    daemon = client.daemon  # type: ignore[attr-defined]

    def work(conn: Any) -> None:
        conn.execute("UPDATE memories SET state = 'archived' WHERE id = ?", (memory_id,))

    client.portal.call(daemon.db.run_write, work)  # type: ignore[union-attr]


def test_archived_memories_answer_when_live_ones_do_not(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    faded = remember(client, "The zephyr-9 calibration constant is 0.0172.")["memory_id"]
    remember(client, "Lunch options near the office include a noodle bar.")
    _archive_by_decay(client, faded)
    answer = query(client, "zephyr-9 calibration constant", explain=True)
    assert _ids(answer)[0] == faded
    top = answer["results"][0]
    assert top["memory"]["state"] == "archived"
    assert top["explain"]["archived_fallback"] is True
    assert top["explain"]["contributions"]["archived"] < 0
    # asked for live memories only, explicitly: no fallback
    live = query(client, "zephyr-9 calibration constant", state=["active", "fading"])
    assert faded not in _ids(live)

    off = make_client(recall={"archived_fallback": False})
    assert faded not in _ids(query(off, "zephyr-9 calibration constant"))


def test_a_forgotten_memory_does_not_come_back_through_the_fallback(client: TestClient) -> None:
    forgotten = remember(client, "The quokka-3 door code is kept in the vault.")["memory_id"]
    assert client.delete(f"/api/v1/memories/{forgotten}").status_code == 200
    assert forgotten not in _ids(query(client, "quokka-3 door code"))
    memory = client.get(f"/api/v1/memories/{forgotten}").json()
    assert "forgotten_at" in memory["metadata"]
    client.post(f"/api/v1/memories/{forgotten}/unarchive")
    memory = client.get(f"/api/v1/memories/{forgotten}").json()
    assert "forgotten_at" not in memory["metadata"]
    assert _ids(query(client, "quokka-3 door code"))[0] == forgotten
