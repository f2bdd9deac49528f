"""The orchestrator over a real store and a real metacognition agent: a fake clock drives
its loop; it publishes the store size, runs the recall self-test on its own schedule
(restored from the recorded history), and describes the thinking half for health."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemonic.agents.metacognition import MetacognitionAgent
from mnemonic.api.meta_routes import CognitionHealth
from mnemonic.cognition.metacognition import Threshold
from mnemonic.config import MetacognitionConfig, StorageConfig
from mnemonic.events.types import Event, MetaObservation
from mnemonic.llm.completion.base import NoCompleter
from mnemonic.runtime.agent_runs import AgentRegistry, Schedule, ScheduledAgent
from mnemonic.runtime.clock import FakeClock
from mnemonic.runtime.orchestrator import Orchestrator
from mnemonic.store.agent_runs import SQLiteRunLog
from mnemonic.store.database import Database
from mnemonic.store.meta import SQLiteMeta, database_bytes
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import utcnow


class Wall:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


def _self_tests(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute(
                "SELECT count(*) FROM meta_observations WHERE kind = 'recall_self_test'"
            ).fetchone()[0]
        )
    finally:
        conn.close()


async def _probe(question: str, k: int) -> list[int]:
    return []


async def _asleep(clock: FakeClock, orchestrator: Orchestrator, ticks: int) -> None:
    """Until the loop has ticked ``ticks`` times and sleeps again (so an advance wakes it)."""
    for _ in range(2000):
        if orchestrator.ticks >= ticks and clock.sleepers:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"orchestrator stuck at {orchestrator.ticks} ticks")


def _world(db: Database, path: Path, wall: Wall, clock: FakeClock, events: list[Event]) -> tuple[
    Orchestrator, MetacognitionAgent, AgentRegistry
]:  # fmt: skip
    meta = SQLiteMeta(db)
    agent = MetacognitionAgent(
        meta, events.append, wall, MetacognitionConfig(),
        database_bytes=lambda: database_bytes(path), recall=_probe,
    )  # fmt: skip
    registry = AgentRegistry()
    registry.add(ScheduledAgent(agent, Schedule(interval_s=3600), SQLiteRunLog(db), clock, wall))
    orchestrator = Orchestrator(
        registry, NoCompleter(), SQLiteStore(db).counts, lambda: database_bytes(path),
        events.append, clock, wall, interval_s=60, self_test_interval_s=600,
        size_threshold=Threshold(1.0, 1e15), self_test=agent.run_self_test,
        last_self_test=meta.last_self_test, self_test_result=lambda: agent.last_self_test,
    )  # fmt: skip
    return orchestrator, agent, registry


def test_the_loop_publishes_size_and_runs_the_self_test_on_schedule(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    wall = Wall()
    events: list[Event] = []

    async def scenario() -> dict[str, Any]:
        db = Database(path, StorageConfig())
        await db.open()
        clock = FakeClock()
        orchestrator, _, _ = _world(db, path, wall, clock, events)
        task = asyncio.create_task(orchestrator.run())
        seen: list[int] = []
        try:
            for _ in range(12):  # 12 ticks a minute apart: 11 minutes
                await _asleep(clock, orchestrator, len(seen) + 1)
                seen.append(_self_tests(path))
                wall.now += timedelta(seconds=60)
                await clock.advance(60)
            described = orchestrator.describe()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await db.close()
        return {"seen": seen, "described": described}

    out = asyncio.run(scenario())
    # the first tick tests at once (no history), the next one 600 s later
    assert out["seen"][0] == 1
    assert out["seen"][9] == 1 and out["seen"][10] == 2
    sizes = [e for e in events if isinstance(e, MetaObservation) and e.kind == "store_size"]
    assert len(sizes) >= 12
    assert sizes[0].value == float(sizes[0].detail["bytes"]) > 0
    assert sizes[0].severity == "warning"  # over the 1-byte warning level of this test
    described = CognitionHealth.model_validate(out["described"])
    assert described.database_bytes > 0
    assert [a.name for a in described.agents] == ["metacognition"]
    assert described.agents[0].state == "idle" and described.agents[0].next_run_at is None
    assert described.llm.mode == "heuristic" and described.llm.configured is False
    assert described.self_test is not None and described.self_test["probes"] == 0
    assert described.memories["memories_active"] == 0


def test_a_recent_self_test_is_not_repeated_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    wall = Wall()
    events: list[Event] = []

    async def scenario() -> tuple[int, int, str | None]:
        db = Database(path, StorageConfig())
        await db.open()
        try:
            clock = FakeClock()
            _, agent, _ = _world(db, path, wall, clock, events)
            await agent.run_self_test("earlier run")  # recorded by a previous process
            wall.now += timedelta(seconds=300)
            fresh, _, _ = _world(db, path, wall, clock, events)
            task = asyncio.create_task(fresh.run())
            await _asleep(clock, fresh, 1)
            first = _self_tests(path)
            wall.now += timedelta(seconds=301)
            await clock.advance(60)
            await _asleep(clock, fresh, 2)
            second = _self_tests(path)
            nxt = fresh.describe()["self_test_next_at"]
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return first, second, nxt
        finally:
            await db.close()

    first, second, nxt = asyncio.run(scenario())
    assert (first, second) == (1, 2)  # due 600 s after the recorded one, not at start
    assert nxt is not None


def test_a_failing_self_test_does_not_stop_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    wall = Wall()
    events: list[Event] = []

    async def scenario() -> tuple[int, int]:
        db = Database(path, StorageConfig())
        await db.open()
        try:
            clock = FakeClock()
            orchestrator, _, _ = _world(db, path, wall, clock, events)

            async def broken(trigger: str) -> dict[str, Any]:
                raise RuntimeError("recall down")

            orchestrator._self_test = broken
            orchestrator.self_test_interval_s = 60
            task = asyncio.create_task(orchestrator.run())
            for n in range(1, 4):
                await _asleep(clock, orchestrator, n)
                wall.now += timedelta(seconds=60)
                await clock.advance(60)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return orchestrator.ticks, orchestrator.self_test_failures
        finally:
            await db.close()

    ticks, failures = asyncio.run(scenario())
    assert ticks >= 3 and failures >= 3
