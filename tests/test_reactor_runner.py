"""The reactor's runner over real parts: a real EventBus, a real AgentRegistry of
ScheduledAgents (with cycle agents written for these tests), a real SQLite database from
the production migrations, and a fake monotonic clock for cooldowns."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mnemonic.config import StorageConfig
from mnemonic.events.bus import EventBus
from mnemonic.events.types import EpisodeClosed, MetaObservation, RawMemoryCreated
from mnemonic.reactor.rules import BUILTIN_RULES, parse_rules
from mnemonic.reactor.runner import ReactorRunner
from mnemonic.runtime.agent_runs import AgentRegistry, RunRecord, Schedule, ScheduledAgent
from mnemonic.runtime.clock import FakeClock
from mnemonic.store.agent_runs import SQLiteRunLog
from mnemonic.store.database import Database
from mnemonic.store.reactor import SQLiteReactorFires

START = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)


class CountingAgent:
    """A cycle agent written for these tests: records its triggers; may block."""

    def __init__(self, name: str = "counting") -> None:
        self.name = name
        self.cycles: list[str] = []
        self.gate: asyncio.Event | None = None

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        self.cycles.append(trigger)
        if self.gate is not None:
            await self.gate.wait()
        return {"cycle": len(self.cycles)}

    def health(self) -> dict[str, Any]:
        return {"mode": "heuristic"}


class RefusingAgent(ScheduledAgent):
    """A scheduled agent whose start itself fails (not its cycle): the action fails."""

    def start_now(self, trigger: str) -> RunRecord:
        raise RuntimeError("no room to start")


class World:
    """Everything a runner needs, over one database file."""

    def __init__(self, db: Database, clock: FakeClock) -> None:
        self.db = db
        self.clock = clock
        self.bus = EventBus()
        self.registry = AgentRegistry()
        self.runs = SQLiteRunLog(db)
        self.fires = SQLiteReactorFires(db)
        self.agents: dict[str, CountingAgent] = {}

    def wall(self) -> datetime:
        return START + timedelta(seconds=self.clock.now())

    def add(self, name: str, cls: type[ScheduledAgent] = ScheduledAgent) -> CountingAgent:
        agent = CountingAgent(name)
        self.agents[name] = agent
        self.registry.add(cls(agent, Schedule(), self.runs, self.clock, self.wall))
        return agent

    def runner(self, rules: list[dict[str, Any]], **kwargs: Any) -> ReactorRunner:
        return ReactorRunner(
            parse_rules(rules, kwargs.pop("disabled", ())),
            self.registry,
            self.fires,
            self.bus.subscribe,
            clock=self.clock.now,
            wall=self.wall,
            **kwargs,
        )

    async def fire_rows(self) -> list[dict[str, Any]]:
        def work(conn: Any) -> list[dict[str, Any]]:
            return [dict(r) for r in conn.execute("SELECT * FROM reactor_fires ORDER BY id")]

        rows: list[dict[str, Any]] = await self.db.run_read(work)
        return rows


async def _world(tmp_path: Path) -> World:
    db = Database(tmp_path / "m.db", StorageConfig())
    await db.open()
    return World(db, FakeClock())


async def until(check: Callable[[], bool], within_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


async def settle(world: World) -> None:
    """Let the bus deliver and the writer thread record."""
    for _ in range(3):
        await asyncio.sleep(0.05)
        await until(lambda: not any(a.running for a in world.registry.all()))


def episode(count: int = 3) -> EpisodeClosed:
    return EpisodeClosed(
        episode_id="e1", project="p", memory_ids=("m1",), title="t", memory_count=count
    )


RULE = {
    "name": "count-after-episode",
    "on": "episode_closed",
    "when": {"memory_count": {"gte": 2}},
    "do": {"run_agent": "counting"},
    "cooldown_s": 60,
}


def by_name(runner: ReactorRunner) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in runner.describe()}


def test_an_event_fires_its_rule_and_the_cooldown_holds_the_next(tmp_path: Path) -> None:
    async def main() -> None:
        world = await _world(tmp_path)
        agent = world.add("counting")
        runner = world.runner([RULE])
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)

        world.bus.publish(episode(count=1))  # the condition does not hold
        await settle(world)
        assert agent.cycles == []
        assert await world.fire_rows() == []

        world.bus.publish(episode())
        await settle(world)
        assert agent.cycles == ["reactor:count-after-episode"]
        runs = await world.runs.last_runs()
        assert runs["counting"].trigger == "reactor:count-after-episode"
        assert runs["counting"].ok is True
        rows = await world.fire_rows()
        assert [(r["rule"], r["event_type"], r["action"], r["ok"], r["error"]) for r in rows] == [
            ("count-after-episode", "episode_closed", "run_agent:counting", 1, None)
        ]

        await world.clock.advance(59)
        world.bus.publish(episode())  # inside the cooldown: held back, not recorded
        await settle(world)
        assert len(agent.cycles) == 1
        view = by_name(runner)["count-after-episode"]
        assert view["fires"] == 1 and view["held"] == 1
        assert view["cooldown_remaining_s"] == pytest.approx(1)
        assert view["last_fire"]["outcome"] == "started"

        await world.clock.advance(1)
        world.bus.publish(episode())  # the cooldown is over
        await settle(world)
        assert len(agent.cycles) == 2
        assert len(await world.fire_rows()) == 2
        assert runner.health()["fires"] == 2
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    asyncio.run(main())


def test_an_agent_already_running_is_a_skipped_fire(tmp_path: Path) -> None:
    async def main() -> None:
        world = await _world(tmp_path)
        agent = world.add("counting")
        agent.gate = asyncio.Event()
        runner = world.runner([{**RULE, "cooldown_s": 0}])
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)
        world.bus.publish(episode())
        await until(lambda: agent.cycles == ["reactor:count-after-episode"])
        world.bus.publish(episode())  # the first cycle still runs
        await until(lambda: runner.health()["fires"] == 2)
        agent.gate.set()
        await settle(world)
        assert len(agent.cycles) == 1
        rows = await world.fire_rows()
        assert [r["ok"] for r in rows] == [1, 1]
        assert rows[1]["error"] == "skipped: agent 'counting' was already running"
        assert by_name(runner)["count-after-episode"]["last_fire"]["outcome"] == "skipped"
        assert runner.health()["errors"] == 0
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    asyncio.run(main())


def test_a_failing_action_is_recorded_and_the_runner_keeps_going(tmp_path: Path) -> None:
    async def main() -> None:
        world = await _world(tmp_path)
        world.add("refusing", RefusingAgent)
        counting = world.add("counting")
        rules = [
            {**RULE, "name": "refused", "do": {"run_agent": "refusing"}, "cooldown_s": 0},
            {**RULE, "cooldown_s": 0},
        ]
        runner = world.runner(rules)
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)
        world.bus.publish(episode())
        await settle(world)
        world.bus.publish(episode())
        await settle(world)
        rows = await world.fire_rows()
        refused = [r for r in rows if r["rule"] == "refused"]
        assert [(r["ok"], r["error"]) for r in refused] == [
            (0, "RuntimeError: no room to start"),
            (0, "RuntimeError: no room to start"),
        ]
        assert len(counting.cycles) == 2  # the other rule on the same event still fired
        view = by_name(runner)["refused"]
        assert view["last_fire"]["outcome"] == "failed" and view["last_fire"]["ok"] is False
        assert not task.done()  # the runner lives on

        # the fire log fails too (its own database file, closed under it; the agents' run
        # log stays up): the fire still happens, the runner still reacts
        log_db = Database(tmp_path / "fires.db", StorageConfig())
        await log_db.open()
        world.fires.db = log_db
        await log_db.close()
        errors = runner.health()["errors"]
        world.bus.publish(episode())
        await until(lambda: len(counting.cycles) == 3)
        await settle(world)
        assert runner.health()["errors"] == errors + 2  # two fires, two lost records
        assert not task.done()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    asyncio.run(main())


def test_fire_counts_and_cooldowns_survive_a_restart(tmp_path: Path) -> None:
    async def first_life() -> None:
        world = await _world(tmp_path)
        world.add("counting")
        runner = world.runner([RULE])
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)
        world.bus.publish(episode())
        await settle(world)
        await world.clock.advance(60)
        world.bus.publish(episode())
        await settle(world)
        assert runner.health()["fires"] == 2
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    async def second_life() -> None:
        world = await _world(tmp_path)
        await world.clock.advance(80)  # 20 s after the last fire (wall time)
        agent = world.add("counting")
        runner = world.runner([RULE, {**RULE, "name": "new-rule"}])
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)
        view = by_name(runner)
        assert view["count-after-episode"]["fires"] == 2
        assert view["count-after-episode"]["last_fire"]["at"] == START + timedelta(seconds=60)
        assert view["count-after-episode"]["cooldown_remaining_s"] == pytest.approx(40)
        assert view["new-rule"]["fires"] == 0 and view["new-rule"]["last_fire"] is None
        world.bus.publish(episode())  # the old rule is still cooling down; the new one fires
        await settle(world)
        assert agent.cycles == ["reactor:new-rule"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    asyncio.run(first_life())
    asyncio.run(second_life())


def test_a_rule_whose_agent_is_not_scheduled_never_fires(tmp_path: Path) -> None:
    async def main() -> None:
        world = await _world(tmp_path)
        world.add("consolidation")
        runner = world.runner(list(BUILTIN_RULES), disabled=["consolidate-on-store-size"])
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)
        world.bus.publish(episode())  # dream-after-episode: no dreaming agent here
        world.bus.publish(
            MetaObservation(kind="store_size", detail={}, severity="alert", value=3e9)
        )  # its rule is disabled
        world.bus.publish(
            MetaObservation(kind="dead_ratio", detail={}, severity="warning", value=0.6)
        )
        await settle(world)
        view = by_name(runner)
        assert view["dream-after-episode"]["agent_available"] is False
        assert view["dream-after-episode"]["fires"] == 0
        assert view["consolidate-on-store-size"]["enabled"] is False
        assert view["consolidate-on-store-size"]["fires"] == 0
        assert view["consolidate-on-dead-ratio"]["fires"] == 1
        assert world.agents["consolidation"].cycles == ["reactor:consolidate-on-dead-ratio"]
        assert [r["rule"] for r in await world.fire_rows()] == ["consolidate-on-dead-ratio"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    asyncio.run(main())


def test_a_flood_never_blocks_the_publisher_and_drops_are_counted(tmp_path: Path) -> None:
    async def main() -> None:
        world = await _world(tmp_path)
        agent = world.add("counting")
        runner = world.runner([RULE], queue_size=4)
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)
        for _ in range(500):  # synchronous: no await between publishes
            world.bus.publish(episode())
        await settle(world)
        assert runner.health()["dropped"] == 496
        assert len(agent.cycles) == 1  # the cooldown: one fire for the whole burst
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    asyncio.run(main())


def test_memory_content_never_reaches_the_log_at_info(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "the launch code is tangerine-42"
    rule = {
        "name": "on-memory",
        "on": "raw_memory_created",
        "when": {"source": "terminal"},
        "do": {"run_agent": "counting"},
        "cooldown_s": 0,
    }

    async def main() -> None:
        world = await _world(tmp_path)
        world.add("counting")
        runner = world.runner([rule, {**rule, "name": "broken", "do": {"run_agent": "refusing"}}])
        world.add("refusing", RefusingAgent)
        task = asyncio.create_task(runner.run())
        await until(lambda: runner.subscribed)
        world.bus.publish(
            RawMemoryCreated(
                raw_id="r", memory_id=None, source="terminal", project=None, content=secret
            )
        )
        await settle(world)
        assert runner.health()["fires"] == 2
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await world.bus.close()
        await world.db.close()

    with caplog.at_level(logging.INFO):
        asyncio.run(main())
    assert "reactor rule on-memory fired" in caplog.text
    assert "tangerine" not in caplog.text
