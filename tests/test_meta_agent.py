"""The metacognition agent over a real SQLite store (production migrations), memories
written through the real ``SQLiteStore`` and embedded by the real model, and the recall
self-test through a real ``Recaller`` over a real recall index."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from support.store import Clock, write_embedded

from mnemonic.agents.metacognition import MetacognitionAgent, recaller_probe
from mnemonic.api.meta_routes import MetaObservationOut
from mnemonic.cognition.metacognition import KINDS
from mnemonic.config import MetacognitionConfig, RecallConfig, StorageConfig
from mnemonic.events.types import Event, MetaObservation
from mnemonic.index.recall_index import RecallIndex
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.recall.pipeline import Recaller
from mnemonic.runtime.agent_runs import AlreadyRunning, RunRecord, Schedule, ScheduledAgent
from mnemonic.runtime.clock import FakeClock
from mnemonic.store.agent_runs import SQLiteRunLog
from mnemonic.store.base import QueryRecord
from mnemonic.store.database import Database
from mnemonic.store.meta import SQLiteMeta, database_bytes
from mnemonic.store.models import Quality
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import new_id, utcnow

T = TypeVar("T")

NOTES = [
    "Decided to keep sessions in Redis because MySQL was too slow under load.",
    "The nightly backup job copies the database to the S3 bucket at 2am.",
    "The flaky checkout test was caused by a shared temp directory between workers.",
    "Deploys of the payments service go through the Argo pipeline on Fridays.",
    "The API server listens on port 8080 behind the nginx reverse proxy.",
    "Grafana dashboards for the billing cluster live in the observability repo.",
    "Use poetry export to produce requirements.txt for the lambda packaging step.",
    "The websocket gateway drops idle connections after ninety seconds.",
    "Kafka consumer lag alerts page the data platform on-call rotation.",
    "Terraform state for staging is stored in the shared GCS bucket with locking.",
]


@dataclass
class World:
    db: Database
    store: SQLiteStore
    meta: SQLiteMeta
    recaller: Recaller
    ids: list[str]
    path: Path
    events: list[Event] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    reembeds: list[int] = field(default_factory=list)


def _run(path: Path, embedder: OnnxEmbedder, fn: Callable[[World], Awaitable[T]]) -> T:
    async def main() -> T:
        db = Database(path, StorageConfig())
        index = RecallIndex(
            embedder.dim, embedder.name, vector_exact_max=RecallConfig().vector_exact_max
        )
        db.follow_changes(index)
        await db.open()
        store = SQLiteStore(db)
        recaller = Recaller(store, store, store, index, embedder, RecallConfig())
        try:
            ids = await write_embedded(db, embedder, [("alpha", t) for t in NOTES], utcnow())
            await index.build(db.run_read)
            world = World(db, store, SQLiteMeta(db), recaller, ids, path)
            return await fn(world)
        finally:
            recaller.close()
            await db.close()

    return asyncio.run(main())


def _agent(w: World, clock: Clock, **cfg: Any) -> MetacognitionAgent:
    async def reembed() -> int:
        w.reembeds.append(1)
        return 7

    def request(name: str, trigger: str) -> None:
        w.requests.append((name, trigger))

    settings = {"min_memories": 5, "self_test_llm_questions": 0, **cfg}
    return MetacognitionAgent(
        w.meta,
        w.events.append,
        clock,
        MetacognitionConfig(**settings),
        database_bytes=lambda: database_bytes(w.path),
        recall=recaller_probe(w.recaller),
        reembed=reembed,
        request_agent=request,
    )


def _sql(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(sql, args).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()


async def _exec(db: Database, sql: str, *args: Any) -> None:
    def work(conn: sqlite3.Connection) -> None:
        conn.execute(sql, args)

    await db.run_write(work)


async def _rate(w: World, memory_id: str, quality: Quality, times: int) -> None:
    for _ in range(times):
        record = QueryRecord(new_id(), "q", (memory_id,), ())
        await w.store.record_query(record, {}, 1.0, [])
        await w.store.record_feedback(record.id, quality, [memory_id], 0.0, (0.1, 2.0))


def test_a_cycle_audits_everything_acts_and_records(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    clock = Clock()

    async def scenario(w: World) -> dict[str, Any]:
        # 6 of 10 archived or merged: dead ratio 0.6 (warning); 1 live memory unembedded
        for mid in w.ids[:5]:
            await _exec(w.db, "UPDATE memories SET state = 'archived' WHERE id = ?", mid)
        await _exec(w.db, "UPDATE memories SET state = 'merged' WHERE id = ?", w.ids[5])
        await _exec(w.db, "UPDATE memories SET embedded = 0 WHERE id = ?", w.ids[9])
        agent = _agent(w, clock)
        first = await agent.run_cycle("manual")
        rows = await w.meta.history(None, 100)
        clock.now += timedelta(hours=1)
        second = await agent.run_cycle("manual")  # within the request cooldown
        latest = await w.meta.latest()
        return {"first": first, "rows": rows, "second": second, "latest": latest}

    out = _run(tmp_path / "m.db", embedder, scenario)
    rows = out["rows"]
    assert sorted(r["kind"] for r in rows) == sorted(KINDS)  # one row per audit
    for row in rows:
        MetaObservationOut.model_validate(row)  # the REST model accepts every row
    by = {r["kind"]: r for r in rows}
    assert by["dead_ratio"]["value"] == pytest.approx(0.6)
    assert by["dead_ratio"]["severity"] == "warning"
    assert by["dead_ratio"]["action"] == "requested consolidation"
    # never consolidated: stale since the oldest memory, a moment ago: ok, but dead ratio asks
    assert by["stale_consolidation"]["severity"] == "ok"
    assert by["unembedded"]["value"] == pytest.approx(1 / 4)
    assert by["unembedded"]["severity"] == "alert"
    assert by["unembedded"]["action"] == "re-embed: queued 7"
    assert by["store_size"]["value"] == by["store_size"]["detail"]["bytes"] > 0
    assert by["source_skew"]["value"] is None  # 4 live memories: too few to judge
    assert "skipped" in by["source_skew"]["detail"]
    assert by["irrelevant_feedback"]["value"] is None  # no ratings yet
    assert out["first"]["severities"]["dead_ratio"] == "warning"
    second = out["second"]
    assert second["actions"]["dead_ratio"] == "consolidation asked recently"
    assert len(out["latest"]) == len(KINDS)


def test_events_match_the_rows_and_the_reactor_fields(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    clock = Clock()
    holder: dict[str, Any] = {}

    async def scenario(w: World) -> None:
        agent = _agent(w, clock, dead_ratio_warning=0.0, dead_ratio_alert=0.5)
        await agent.run_cycle("manual")
        holder["events"] = list(w.events)
        holder["requests"] = list(w.requests)
        holder["reembeds"] = list(w.reembeds)

    _run(tmp_path / "m.db", embedder, scenario)
    events = [e for e in holder["events"] if isinstance(e, MetaObservation)]
    assert sorted(e.kind for e in events) == sorted(KINDS)
    dead = next(e for e in events if e.kind == "dead_ratio")
    assert dead.severity == "warning" and dead.value == 0.0 and dead.threshold == 0.0
    assert holder["requests"] == [("consolidation", "metacognition:manual")]
    size = next(e for e in events if e.kind == "store_size")
    assert size.value is not None and size.value > 0
    assert holder["reembeds"] == []  # every memory has a vector: no re-embed


def test_the_self_test_finds_memories_and_patterns_without_counting_access(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    clock = Clock()
    path = tmp_path / "m.db"

    async def scenario(w: World) -> dict[str, Any]:
        now = "2026-01-01T00:00:00.000000+00:00"
        await _exec(
            w.db,
            "INSERT INTO abstractions (id, level, title, concepts, strength, created_at,"
            " updated_at, last_seen_at) VALUES ('p1', 'pattern', 'Backups to S3',"
            " '[\"nightly backup\", \"s3 bucket\"]', 0.5, ?, ?, ?)",
            now, now, now,
        )  # fmt: skip
        seq = (await w.store.seqs_of([w.ids[1]]))[w.ids[1]]
        await _exec(
            w.db,
            "INSERT INTO abstraction_evidence (abstraction_id, memory_seq, added_at)"
            " VALUES ('p1', ?, ?)",
            seq,
            now,
        )
        before = _sql(path, "SELECT id, access_count, last_accessed_at, utility FROM memories")
        agent = _agent(w, clock, self_test_memories=10)
        result = await agent.run_self_test("test")
        after = _sql(path, "SELECT id, access_count, last_accessed_at, utility FROM memories")
        queries = _sql(path, "SELECT count(*) FROM retrieval_queries")[0][0]
        feedback = _sql(path, "SELECT count(*) FROM retrieval_feedback")[0][0]
        rows = await w.meta.history("recall_self_test", 10)
        return {"result": result, "before": before, "after": after, "queries": queries,
                "feedback": feedback, "rows": rows, "events": list(w.events)}  # fmt: skip

    out = _run(path, embedder, scenario)
    assert out["before"] == out["after"]  # no access count, no utility moved
    assert out["queries"] == 0 and out["feedback"] == 0
    row = out["rows"][0]
    assert row["detail"]["probes"] == 11  # 10 memories + 1 pattern
    assert row["detail"]["pattern_probes"] == 1 and row["detail"]["pattern_hit_rate"] == 1.0
    # ten distinct notes probed by their own concepts: recall finds nearly all
    assert row["value"] >= 0.9, row["detail"]
    assert out["result"]["hit_rate"] == row["value"]
    assert [e.kind for e in out["events"]] == ["recall_self_test"]


def test_the_sample_rotates_through_the_store(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    clock = Clock()

    async def scenario(w: World) -> list[list[str]]:
        agent = _agent(w, clock, self_test_memories=4, self_test_patterns=0)
        seen = []
        for _ in range(3):
            await agent.run_self_test("test")
            row = (await w.meta.history("recall_self_test", 1))[0]
            seen.append(row["detail"]["missed"])
            seen.append([s.id for s in await w.meta.sample_memories(4)])
        return seen

    seen = _run(tmp_path / "m.db", embedder, scenario)
    samples = seen[1::2]
    assert samples[0] != samples[1]  # the cursor moved
    assert len(set(samples[0]) | set(samples[1]) | set(samples[2])) == 10  # wrapped round


def test_suppression_is_bounded_recorded_and_once_per_window(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    clock = Clock()
    path = tmp_path / "m.db"

    async def scenario(w: World) -> dict[str, Any]:
        await _rate(w, w.ids[0], Quality.IRRELEVANT, 4)
        await _rate(w, w.ids[1], Quality.IRRELEVANT, 3)
        await _rate(w, w.ids[2], Quality.IRRELEVANT, 5)
        await _rate(w, w.ids[3], Quality.IRRELEVANT, 3)
        await _rate(w, w.ids[3], Quality.HELPFUL, 3)  # as often helpful: left alone
        await _rate(w, w.ids[4], Quality.IRRELEVANT, 2)  # not repeatedly enough
        utility = "SELECT id, utility FROM memories ORDER BY seq"
        before = dict(_sql(path, utility))
        agent = _agent(w, clock, suppress_per_cycle=2, suppress_after=3)
        first = await agent.run_cycle("manual")
        middle = dict(_sql(path, utility))
        clock.now += timedelta(minutes=5)
        second = await agent.run_cycle("manual")
        after = dict(_sql(path, utility))
        rows = await w.meta.history("irrelevant_feedback", 10)
        count = _sql(path, "SELECT count(*) FROM memories")
        return {"before": before, "middle": middle, "after": after, "first": first,
                "second": second, "rows": rows, "count": count}  # fmt: skip

    out = _run(path, embedder, scenario)
    ids = list(out["before"])
    before, middle, after = out["before"], out["middle"], out["after"]
    assert out["first"]["suppressed"] == 2  # capped per cycle: the two most rated first
    assert middle[ids[2]] == pytest.approx(before[ids[2]] * 0.5)
    assert middle[ids[0]] == pytest.approx(before[ids[0]] * 0.5)
    assert middle[ids[1]] == before[ids[1]]
    assert out["second"]["suppressed"] == 1  # the next one; the first two not again
    assert after[ids[1]] == pytest.approx(before[ids[1]] * 0.5)
    assert after[ids[0]] == middle[ids[0]] and after[ids[2]] == middle[ids[2]]
    assert after[ids[3]] == before[ids[3]] and after[ids[4]] == before[ids[4]]
    assert out["count"] == [(10,)]  # nothing deleted
    newest, oldest = out["rows"][0], out["rows"][1]
    assert [d["id"] for d in oldest["detail"]["suppressed"]] == [ids[2], ids[0]]
    assert oldest["action"] == "suppressed 2"
    assert oldest["detail"]["suppressed"][0]["utility"] == [before[ids[2]], middle[ids[2]]]
    assert newest["action"] == "suppressed 1"


def test_suppression_never_goes_below_the_floor(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    clock = Clock()
    path = tmp_path / "m.db"

    async def scenario(w: World) -> list[float]:
        await _rate(w, w.ids[0], Quality.IRRELEVANT, 3)
        agent = _agent(w, clock, suppress_factor=0.1, suppress_floor=0.3)
        seen = []
        for _ in range(3):
            await agent.run_cycle("manual")
            seen.append(_sql(path, "SELECT utility FROM memories WHERE id = ?", w.ids[0])[0][0])
            await _rate(w, w.ids[0], Quality.IRRELEVANT, 3)  # still rated irrelevant
        return seen

    seen = _run(path, embedder, scenario)
    assert seen == pytest.approx([0.3, 0.3, 0.3])  # floored, and once per window


def test_a_failing_cycle_is_recorded_failed_and_writes_nothing(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    clock = Clock()
    path = tmp_path / "m.db"

    async def scenario(w: World) -> RunRecord:
        await _rate(w, w.ids[0], Quality.IRRELEVANT, 4)

        async def broken(question: str, k: int) -> list[int]:
            raise RuntimeError("index gone")

        agent = _agent(w, clock)
        agent._recall = broken  # the recall the daemon injected fails mid-cycle
        scheduled = ScheduledAgent(agent, Schedule(), SQLiteRunLog(w.db), FakeClock(), clock)
        return await scheduled.run_now("manual")

    record = _run(path, embedder, scenario)
    assert record.ok is False and record.error == "RuntimeError: index gone"
    assert _sql(path, "SELECT count(*) FROM meta_observations") == [(0,)]
    assert _sql(path, "SELECT ok, error FROM agent_runs") == [(0, "RuntimeError: index gone")]
    utilities = {u for (u,) in _sql(path, "SELECT utility FROM memories")}
    assert utilities == {1.0}  # no suppression applied by a failed cycle


def test_already_running_consolidation_is_fine(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    clock = Clock()

    async def scenario(w: World) -> dict[str, Any]:
        def busy(name: str, trigger: str) -> None:
            raise AlreadyRunning(name, 3)

        agent = _agent(w, clock, dead_ratio_warning=0.0)
        agent._request = busy
        return await agent.run_cycle("manual")

    summary = _run(tmp_path / "m.db", embedder, scenario)
    assert summary["actions"]["dead_ratio"] == "requested consolidation (already running)"


def test_history_is_trimmed_per_kind(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    clock = Clock()
    path = tmp_path / "m.db"

    async def scenario(w: World) -> None:
        agent = _agent(w, clock, keep_per_kind=2, self_test_memories=1, self_test_patterns=0)
        for _ in range(4):
            await agent.run_cycle("manual")

    _run(path, embedder, scenario)
    counts = _sql(path, "SELECT kind, count(*) FROM meta_observations GROUP BY kind")
    assert sorted(counts) == sorted((k, 2) for k in KINDS)
