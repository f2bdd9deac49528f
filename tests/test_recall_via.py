"""``explain.via``: the link spreading activation crossed to reach a result, as recall took
it (the dashboard draws the path from it with no request per result)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import jsonschema_rs
import pytest
from starlette.testclient import TestClient
from support.api import query, remember

from mnemonic.cli.memories import recall_lines
from mnemonic.index.graph import RELATIONS, AssociationGraph
from mnemonic.recall.activation import Arrival, SpreadSettings, spread, spread_arrays
from mnemonic.store.models import Association, Relation

# 1 -temporal(0.8)- 2 -similar(0.5)- 3
CHAIN = [(1, 2, Relation.TEMPORAL, 0.8), (2, 3, Relation.SIMILAR, 0.5)]
SETTINGS = SpreadSettings(
    hops=2,
    decay=0.5,
    threshold=0.0,
    max_nodes=10,
    frontier=10,
    relation_weights={"temporal": 1.0, "similar": 0.5},
)
EXPECTED = {
    2: Arrival(1, "temporal", 0.8, 1),
    3: Arrival(2, "similar", 0.5, 2),
    1: Arrival(2, "temporal", 0.8, 2),  # a seed reached back through its neighbour
}


async def _chain(seqs: Sequence[int]) -> list[Association]:
    both = [*CHAIN, *((t, s, r, w) for s, t, r, w in CHAIN)]
    return [Association(s, t, r, w) for s, t, r, w in both if s in seqs]


def _arrays() -> AssociationGraph:
    graph = AssociationGraph()
    for s, t, r, w in CHAIN:
        graph.upsert(s, t, RELATIONS.index(r.value), w)
    return graph


@pytest.mark.parametrize("which", ["sql", "arrays"])
def test_both_spreads_record_each_arrival_edge(which: str) -> None:
    if which == "sql":
        flow = asyncio.run(spread({1: 1.0}, _chain, SETTINGS))
    else:
        flow = spread_arrays({1: 1.0}, _arrays(), None, SETTINGS)
    got = {
        seq: Arrival(a.source, a.relation, pytest.approx(a.strength), a.hop)  # float32 in arrays
        for seq, a in flow.arrivals.items()
    }
    assert got == EXPECTED
    assert all(type(a.relation) is str for a in flow.arrivals.values())  # JSON-ready
    assert flow.via == {2: (1, 2), 3: (2, 3), 1: (2, 1)}  # what feedback strengthens


def _edges(client: TestClient, memory_id: str) -> list[dict[str, Any]]:
    answer = client.get("/api/v1/associations", params={"memory_id": memory_id, "limit": 100})
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def _documented(client: TestClient, answer: dict[str, Any]) -> list[str]:
    """Errors of a /query answer against the schema the OpenAPI document gives it."""
    spec = client.get("/openapi.json").json()
    ok = spec["paths"]["/api/v1/query"]["post"]["responses"]["200"]
    schema = {**ok["content"]["application/json"]["schema"], "components": spec["components"]}
    return [e.message for e in jsonschema_rs.validator_for(schema).iter_errors(answer)]


def test_a_spread_result_names_the_link_that_reached_it(client: TestClient) -> None:
    anchor = remember(client, "Project Falcon uses the Kestrel message broker.", project="p")
    linked = remember(client, "Kestrel broker restarts nightly at 03:00.", project="p")
    for i in range(3):
        remember(client, f"Unrelated filler about gardening tomatoes {i}", project="p")
    answer = query(client, "What does Project Falcon use?", project="p", explain=True)
    assert _documented(client, answer) == []
    by_id = {r["memory"]["id"]: r for r in answer["results"]}
    reached = by_id[linked["memory_id"]]["explain"]
    assert reached["spread"] > 0
    via = reached["via"]
    # the strongest arrival: from the best direct hit, one hop, over the link written with it
    assert via["from"] == anchor["memory_id"]
    assert via["hop"] == 1
    assert via["from_summary"] == "Project Falcon uses the Kestrel message broker."
    source = client.get(f"/api/v1/memories/{via['from']}")
    assert source.status_code == 200
    links = {
        (e["relation"], e["strength"])
        for e in _edges(client, linked["memory_id"])
        if {e["source"], e["target"]} == {anchor["memory_id"], linked["memory_id"]}
    }
    assert (via["relation"], via["strength"]) in links
    # every via of the answer names a real memory and a link that exists
    for result in answer["results"]:
        step = result["explain"]["via"]
        if step is None:
            continue
        ends = {step["from"], result["memory"]["id"]}
        relations = {
            e["relation"]
            for e in _edges(client, result["memory"]["id"])
            if {e["source"], e["target"]} == ends
        }
        assert step["relation"] in relations, (step, relations)


def test_a_direct_hit_spreading_never_reached_has_no_via(client: TestClient) -> None:
    remember(client, "Project Falcon uses the Kestrel message broker.", project="p")
    lone = remember(client, "Project Osprey uses the Heron job scheduler.", project="q")
    # its links lead into project p, which the filter leaves out: nothing spreads to it
    answer = query(client, "What does Project Osprey use?", project="q", explain=True)
    assert _documented(client, answer) == []
    [result] = answer["results"]
    assert result["memory"]["id"] == lone["memory_id"]
    assert result["explain"]["direct"] > 0
    assert result["explain"]["spread"] == 0
    assert result["explain"]["via"] is None


def test_without_explain_there_is_no_via(client: TestClient) -> None:
    remember(client, "Project Falcon uses the Kestrel message broker.", project="p")
    remember(client, "Kestrel broker restarts nightly at 03:00.", project="p")
    answer = query(client, "What does Project Falcon use?", project="p")
    assert answer["results"]
    assert all("explain" not in r for r in answer["results"])


def test_query_explain_in_the_cli_prints_the_via_line() -> None:
    memory = {"id": "m-2", "content": "Kestrel broker restarts nightly", "type": "general"}
    via = {
        "from": "m-1",
        "from_summary": "Project Falcon uses the Kestrel message broker.",
        "relation": "temporal",
        "strength": 0.6,
        "hop": 1,
    }
    item = {"score": 0.5, "memory": memory, "explain": {"contributions": {}, "via": via}}
    lines = recall_lines({"results": [item]}, explain=True)
    assert lines[-1] == (
        "       via: temporal 0.60 from m-1 (Project Falcon uses the Kestrel message broker.)"
    )
    direct = {**item, "explain": {"contributions": {"direct": 0.5}, "via": None}}
    assert recall_lines({"results": [direct]}, explain=True)[-1] == "       why: direct 0.500"
