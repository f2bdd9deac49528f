"""The dreamer inside a real daemon: run on demand over REST, its insights listed and
shown by ``/api/v1/insights``, bad parameters refused, a failing cycle recorded as failed
with nothing half-written, and the insight embedded by the encoder's sweep afterwards."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient
from support.api import remember
from support.openai_server import OpenAIServer, chat_reply, llm_settings

from mnemonic.api.insight_routes import InsightDetail, InsightPage
from mnemonic.encoding.text import content_hash
from mnemonic.store.database import Database
from mnemonic.store.models import Encoded, MemoryType, NewRaw, Source
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import to_db, utcnow

QUIET: dict[str, Any] = {
    "episodes": {"interval_s": 3600},
    "enrichment": {"interval_s": 3600},
    "supersession": {"review_interval_s": 3600},
    "dreaming": {"max_df_share": 0.3, "min_episodes": 3},
}
NOTES = [
    ("e1", "The frobnicator cache lives on the quartz-7 volume."),
    ("e2", "Moved the frobnicator cache off the quartz-7 volume."),
    ("e3", "The quartz-7 volume filled up: frobnicator cache again."),
]
CONCEPTS = ("frobnicator cache", "quartz-7 volume")


async def _seed(db: Database) -> list[str]:
    when = utcnow() - timedelta(days=5)
    texts = [t for _, t in NOTES] + [f"Unrelated note {i} on subject{i}." for i in range(8)]
    concepts = [CONCEPTS if i < 3 else (f"subject{i}",) for i in range(len(texts))]
    batch = [
        (
            NewRaw(text, Source.API, "alpha", when + timedelta(minutes=i)),
            Encoded(text[:50], concepts[i], MemoryType.GENERAL, 0.5, 0.6),
            content_hash(text),
        )
        for i, text in enumerate(texts)
    ]
    accepted = await SQLiteStore(db).accept(batch, 0.05)

    def work(conn: sqlite3.Connection) -> None:
        stamp = to_db(when)
        for (episode, _), a in zip(NOTES, accepted, strict=False):
            conn.execute(
                "INSERT INTO episodes (id, project, state, title, started_at, ended_at,"
                " created_at, updated_at) VALUES (?, 'alpha', 'closed', ?, ?, ?, ?, ?)",
                (episode, f"Work on {episode}", stamp, stamp, stamp, stamp),
            )
            conn.execute(
                "INSERT INTO episode_memories (episode_id, memory_seq) VALUES (?, ?)",
                (episode, a.seq),
            )

    await db.run_write(work)
    return [a.memory_id for a in accepted]


def _seeded(make_client: Callable[..., TestClient]) -> tuple[TestClient, list[str]]:
    client = make_client(**QUIET)
    ids: list[str] = client.portal.call(_seed, client.daemon.db)  # type: ignore[attr-defined,union-attr]
    return client, ids


def _run(client: TestClient) -> dict[str, Any]:
    response = client.post("/api/v1/agents/dreaming/run", params={"wait": "true"})
    assert response.status_code == 200, response.text
    return dict(response.json())


CHAT = "/v1/chat/completions"


def _wait_embedded(client: TestClient, memory_id: str, seconds: float = 30) -> int:
    """The memory's seq once the encoder has written its vector."""
    path = client.daemon.db.path  # type: ignore[attr-defined]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with sqlite3.connect(path) as conn:
            row = conn.execute(
                "SELECT m.seq FROM memories m JOIN memory_vectors v ON v.seq = m.seq"
                " WHERE m.id = ?",
                (memory_id,),
            ).fetchone()
        if row is not None:
            return int(row[0])
        time.sleep(0.1)
    raise AssertionError(f"{memory_id} was not embedded within {seconds} s")


def test_dreaming_runs_over_rest_and_its_insight_is_listed_and_shown(
    make_client: Callable[..., TestClient],
) -> None:
    client, ids = _seeded(make_client)
    answer = _run(client)
    run = answer["run"]
    assert run["ok"] is True and run["trigger"] == "manual"
    assert run["summary"]["insights"] == 1 and run["summary"]["links_added"] == 3
    agents = {a["name"]: a for a in client.get("/api/v1/agents").json()["items"]}
    assert agents["dreaming"]["detail"]["mode"] == "heuristic"
    assert agents["dreaming"]["schedule"]["interval_s"] == 6 * 3600

    page = client.get("/api/v1/insights").json()
    InsightPage.model_validate(page)  # the strict answer models hold (extra fields forbidden)
    assert len(page["items"]) == 1 and page["next_cursor"] is None
    insight = page["items"][0]
    assert insight["terms"] == list(CONCEPTS) and insight["episodes"] == 3
    assert insight["project"] == "alpha" and insight["source_count"] == 3
    assert insight["described_by"] == "heuristic"
    assert client.get("/api/v1/insights", params={"project": "beta"}).json()["items"] == []
    before = client.get("/api/v1/insights", params={"before": "2000-01-01T00:00:00Z"})
    assert before.json()["items"] == []

    detail = client.get(f"/api/v1/insights/{insight['id']}").json()
    InsightDetail.model_validate(detail)
    assert sorted(s["id"] for s in detail["sources"]) == sorted(ids[:3])
    # an insight is a memory like any other: readable, and embedded by the encoder's sweep
    memory = client.get(f"/api/v1/memories/{insight['id']}")
    assert memory.status_code == 200 and memory.json()["type"] == "insight"
    assert memory.json()["source"] == "dreaming"

    # a second run: the same pair never gives a second insight
    assert _run(client)["run"]["summary"]["insights"] == 0
    assert len(client.get("/api/v1/insights").json()["items"]) == 1


def test_an_llm_worded_insight_is_embedded_but_linked_to_nothing(
    make_client: Callable[..., TestClient],
) -> None:
    """An insight is drawn from its sources (``insight_sources``). Worded by an LLM it is
    close to their words, and the encoder linked it to them by likeness: a hub that spread
    a query reaching one source to all the others (LoCoMo multi-hop R@10 -0.007 with the
    scripted LLM, BENCHMARKS.md session 18). It is embedded, so recall finds it by its own
    words and vector, and it links nothing."""
    sentence = "The frobnicator cache keeps filling the quartz-7 volume."
    with OpenAIServer() as server:
        server.set_handler(CHAT, lambda _: chat_reply(json.dumps({"insight": sentence})))
        # the sweep embeds the seeded notes, so the insight has neighbours to link to
        client = make_client(llm=llm_settings(server), encoding={"sweep_interval_s": 0.2}, **QUIET)
        ids = client.portal.call(_seed, client.daemon.db)  # type: ignore[attr-defined]
        sources = [_wait_embedded(client, i) for i in ids[:3]]
        summary = _run(client)["run"]["summary"]
        assert summary["insights"] == 1 and summary["llm_insights"] == 1
        insight = client.get("/api/v1/insights").json()["items"][0]
        assert insight["described_by"] == "llm"
        seq = _wait_embedded(client, insight["id"])
        with sqlite3.connect(client.daemon.db.path) as conn:  # type: ignore[attr-defined]
            linked = conn.execute(
                "SELECT count(*) FROM associations WHERE ? IN (source_seq, target_seq)", (seq,)
            ).fetchone()[0]
            state = conn.execute("SELECT state FROM memories WHERE seq = ?", (seq,)).fetchone()
            # the likeness a link would have had: well above the encoder's threshold
            vectors = {
                row[0]: np.frombuffer(row[1], dtype=np.float32)
                for row in conn.execute(
                    f"SELECT seq, vector FROM memory_vectors WHERE seq IN ({seq}, {sources[0]})"
                )
            }
        assert float(vectors[seq] @ vectors[sources[0]]) > 0.6
        assert linked == 0
        assert state == ("active",)  # embedded as itself, not merged into a source
        found = client.post("/api/v1/query", json={"query": sentence, "limit": 10}).json()
        assert insight["id"] in [r["memory"]["id"] for r in found["results"]]

        # nor does a later observation link to it, by likeness or as the one before it
        later = remember(
            client, "Checked the quartz-7 volume today: the frobnicator cache keeps filling it.",
            project="alpha",
        )["memory_id"]  # fmt: skip
        with sqlite3.connect(client.daemon.db.path) as conn:  # type: ignore[attr-defined]
            (later_seq,) = conn.execute(
                "SELECT seq FROM memories WHERE id = ?", (later,)
            ).fetchone()
            ends = conn.execute(
                "SELECT source_seq, target_seq FROM associations WHERE ? IN (source_seq,"
                " target_seq)",
                (later_seq,),
            ).fetchall()
        others = {a if b == later_seq else b for a, b in ends}
        assert others and seq not in others  # linked, to the notes, not the insight
        assert others & set(sources)


@pytest.mark.parametrize(
    "params",
    [{"limit": "0"}, {"limit": "201"}, {"limit": "x"}, {"cursor": "garbage!"},
     {"cursor": "WyJhIl0"}, {"before": "yesterday"}, {"colour": "red"}],
)  # fmt: skip
def test_bad_parameters_are_422_and_unknown_ids_404(
    make_client: Callable[..., TestClient], params: dict[str, str]
) -> None:
    client = make_client(**QUIET)
    assert client.get("/api/v1/insights", params=params).status_code == 422
    assert client.get("/api/v1/insights/nope").status_code == 404


def test_paging_through_insights_with_the_cursor(make_client: Callable[..., TestClient]) -> None:
    client, _ = _seeded(make_client)
    _run(client)
    first = client.get("/api/v1/insights", params={"limit": 1}).json()
    assert len(first["items"]) == 1 and first["next_cursor"] is None
    # a non-insight memory is no insight
    other = client.get("/api/v1/memories", params={"limit": 1}).json()["items"][0]["id"]
    if other != first["items"][0]["id"]:
        assert client.get(f"/api/v1/insights/{other}").status_code == 404


def test_a_failing_cycle_is_recorded_and_writes_no_insight(
    make_client: Callable[..., TestClient],
) -> None:
    client, _ = _seeded(make_client)

    async def refuse(db: Database) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON insight_sources"
                " BEGIN SELECT RAISE(ABORT, 'provenance refused'); END"
            )

        await db.run_write(work)

    client.portal.call(refuse, client.daemon.db)  # type: ignore[attr-defined,union-attr]
    run = _run(client)["run"]
    assert run["ok"] is False and "provenance refused" in run["error"]
    agents = {a["name"]: a for a in client.get("/api/v1/agents").json()["items"]}
    assert agents["dreaming"]["failures"] == 1
    assert client.get("/api/v1/insights").json()["items"] == []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # nothing is waiting to be encoded either
        if client.get("/api/v1/health").json()["embedding"]["backlog"] == 0:
            break
        time.sleep(0.05)
    stats = client.get("/api/v1/stats").json()["memories"]["by_source"]
    assert "dreaming" not in stats
