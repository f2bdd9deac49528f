"""The cycle-agent mechanism (``runtime/agent_runs.py``) over a real SQLite run log and a
fake clock: schedules, one cycle at a time, failures recorded, history across restarts."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mnemonic.config import StorageConfig
from mnemonic.runtime.agent_runs import AgentRegistry, AlreadyRunning, Schedule, ScheduledAgent
from mnemonic.runtime.clock import FakeClock
from mnemonic.store.agent_runs import SQLiteRunLog
from mnemonic.store.database import Database

START = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)


class CountingAgent:
    """A cycle agent written for these tests: counts cycles, may block or fail."""

    name = "counting"

    def __init__(self) -> None:
        self.cycles: list[str] = []
        self.gate: asyncio.Event | None = None
        self.fail_next = False

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        self.cycles.append(trigger)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("disk on fire")
        return {"cycle": len(self.cycles), "nested": {"kept": True}}

    def health(self) -> dict[str, Any]:
        return {"mode": "heuristic"}


class Wall:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def __call__(self) -> datetime:
        return START + timedelta(seconds=self.clock.now())


async def _db(path: Path) -> Database:
    db = Database(path, StorageConfig())
    await db.open()
    return db


def test_interval_schedule_runs_cycles_and_records_them(tmp_path: Path) -> None:
    async def main() -> None:
        db = await _db(tmp_path / "m.db")
        clock = FakeClock()
        agent = CountingAgent()
        runs = SQLiteRunLog(db)
        scheduled = ScheduledAgent(
            agent, Schedule(interval_s=60, jitter=0.0), runs, clock, Wall(clock)
        )
        task = asyncio.create_task(scheduled.run())
        await clock.advance(0)
        assert scheduled.next_run_at == START + timedelta(seconds=60)
        await clock.advance(59)
        assert agent.cycles == []
        await clock.advance(1)
        await asyncio.sleep(0.05)  # the run log write goes through the writer thread
        assert agent.cycles == ["schedule"]
        await clock.advance(60)
        await asyncio.sleep(0.05)
        assert agent.cycles == ["schedule", "schedule"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        last = (await runs.last_runs())["counting"]
        assert last.ok is True
        assert last.summary == {"cycle": 2, "nested": {"kept": True}}
        assert last.trigger == "schedule"
        assert len(await runs.history("counting", 10)) == 2
        await db.close()

    asyncio.run(main())


def test_cycles_never_overlap_and_failures_are_recorded(tmp_path: Path) -> None:
    async def main() -> None:
        db = await _db(tmp_path / "m.db")
        clock = FakeClock()
        agent = CountingAgent()
        agent.gate = asyncio.Event()
        scheduled = ScheduledAgent(agent, Schedule(), SQLiteRunLog(db), clock, Wall(clock))
        first = asyncio.create_task(scheduled.run_now("manual"))
        await asyncio.sleep(0.05)
        assert scheduled.running
        assert scheduled.describe()["current_run"]["trigger"] == "manual"
        with pytest.raises(AlreadyRunning):
            await scheduled.run_now("manual")
        with pytest.raises(AlreadyRunning):
            scheduled.start_now("manual")
        agent.gate.set()
        record = await first
        assert record.ok is True
        assert agent.cycles == ["manual"]

        agent.gate = None
        agent.fail_next = True
        failed = await scheduled.run_now("manual")  # recorded, not raised
        assert failed.ok is False
        assert failed.error == "RuntimeError: disk on fire"
        assert scheduled.failures == 1
        again = await scheduled.run_now("manual")  # the next cycle still runs
        assert again.ok is True
        await db.close()

    asyncio.run(main())


def test_the_last_run_survives_a_restart(tmp_path: Path) -> None:
    async def first_life() -> None:
        db = await _db(tmp_path / "m.db")
        clock = FakeClock()
        scheduled = ScheduledAgent(
            CountingAgent(), Schedule(), SQLiteRunLog(db), clock, Wall(clock)
        )
        await scheduled.run_now("manual")
        await db.close()

    async def second_life() -> dict[str, Any]:
        db = await _db(tmp_path / "m.db")
        clock = FakeClock()
        registry = AgentRegistry()
        registry.add(
            ScheduledAgent(CountingAgent(), Schedule(), SQLiteRunLog(db), clock, Wall(clock))
        )
        with pytest.raises(ValueError, match="twice"):
            registry.add(
                ScheduledAgent(CountingAgent(), Schedule(), SQLiteRunLog(db), clock, Wall(clock))
            )
        await registry.restore(SQLiteRunLog(db))
        described = registry.all()[0].describe()
        await db.close()
        return described

    asyncio.run(first_life())
    described = asyncio.run(second_life())
    assert described["last_run"]["ok"] is True
    assert described["last_run"]["summary"]["cycle"] == 1
    assert described["runs"] == 0  # none in this process yet
    assert described["schedule"] == {"interval_s": None, "cron": None}


def test_a_cron_schedule_sleeps_until_its_next_fire_time(tmp_path: Path) -> None:
    async def main() -> None:
        db = await _db(tmp_path / "m.db")
        clock = FakeClock()
        agent = CountingAgent()

        def nightly(now: datetime) -> datetime:  # 03:00 UTC every day
            today = now.replace(hour=3, minute=0, second=0, microsecond=0)
            return today if today > now else today + timedelta(days=1)

        scheduled = ScheduledAgent(
            agent,
            Schedule(cron="0 3 * * *", next_fire=nightly),
            SQLiteRunLog(db),
            clock,
            Wall(clock),
        )
        task = asyncio.create_task(scheduled.run())
        await clock.advance(0)
        assert scheduled.next_run_at == START + timedelta(days=1)  # START is 03:00 sharp
        await clock.advance(86_399)
        assert agent.cycles == []
        await clock.advance(1)
        await asyncio.sleep(0.05)
        assert agent.cycles == ["schedule"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await db.close()

    asyncio.run(main())


def test_rest_lists_agents_and_refuses_unknown_names(client: Any) -> None:
    listed = client.get("/api/v1/agents")
    assert listed.status_code == 200
    names = [item["name"] for item in listed.json()["items"]]
    assert names == sorted(names)
    assert client.post("/api/v1/agents/no-such-agent/run").status_code == 404
    bad = client.post("/api/v1/agents/no-such-agent/run?wait=maybe")
    assert bad.status_code == 422
    assert bad.json()["details"][0]["field"] == "query.wait"


def test_the_cli_prints_what_a_cycle_did_not_its_zeros() -> None:
    from mnemonic.cli.agents import summary_text

    summary = {
        "trigger": "manual",
        "decayed": 0,
        "merged": 2,
        "budget_exhausted": False,
        "backlog": True,
        "took_ms": 4.1,
        "nested": {"x": 1},
        "mode": "heuristic",
    }
    assert summary_text(summary) == "merged 2, backlog, mode heuristic"
    assert summary_text({"trigger": "manual", "decayed": 0}) == "nothing to do"


def test_background_starts_refuse_a_second_in_the_same_tick_and_stop_cancels_them(
    tmp_path: Path,
) -> None:
    """The reactor may start an agent twice before the first task took the lock; the second
    start is refused at once (not an unseen AlreadyRunning inside a task), and a stopping
    daemon cancels a cycle still running in the background, recorded as cancelled."""

    async def main() -> None:
        db = await _db(tmp_path / "m.db")
        clock = FakeClock()
        agent = CountingAgent()
        agent.gate = asyncio.Event()  # never set: the cycle runs until cancelled
        runs = SQLiteRunLog(db)
        scheduled = ScheduledAgent(agent, Schedule(), runs, clock, Wall(clock))
        registry = AgentRegistry()
        registry.add(scheduled)
        scheduled.start_now("reactor:a")
        with pytest.raises(AlreadyRunning):
            scheduled.start_now("reactor:b")  # same tick: the first has not locked yet
        await asyncio.sleep(0.05)
        assert scheduled.running and agent.cycles == ["reactor:a"]
        await registry.cancel_background()
        assert not scheduled.running
        last = (await runs.last_runs())["counting"]
        assert last.ok is False and last.error is not None and "cancelled" in last.error
        await db.close()

    asyncio.run(main())


def test_the_run_log_keeps_the_newest_500_of_each_agent_however_they_interleave(
    tmp_path: Path,
) -> None:
    """Ids are shared by every agent: trimming by id arithmetic kept about 500 / (number of
    agents) runs of each (found by the 1,000-cycle walk: 86 of 191)."""

    async def main() -> None:
        db = await _db(tmp_path / "m.db")
        runs = SQLiteRunLog(db)
        for i in range(600):
            for agent in ("a", "b", "c"):
                await runs.begin(agent, "schedule", START + timedelta(seconds=i))

        def counts(conn: Any) -> dict[str, int]:
            rows = conn.execute("SELECT agent, count(*) FROM agent_runs GROUP BY agent")
            return {str(a): int(n) for a, n in rows}

        assert await db.run_read(counts) == {"a": 500, "b": 500, "c": 500}
        await db.close()

    asyncio.run(main())


def test_a_run_waiting_for_its_log_row_already_shows_as_under_way(tmp_path: Path) -> None:
    """The run's row is a write: while it waits behind another writer (a recall index
    checkpoint holds the lock for seconds at scale), /agents must already say which run
    is under way, not "running" with no run."""

    async def main() -> None:
        db = await _db(tmp_path / "m.db")
        clock = FakeClock()
        scheduled = ScheduledAgent(
            CountingAgent(), Schedule(interval_s=60), SQLiteRunLog(db), clock, Wall(clock)
        )
        release = threading.Event()
        holding = asyncio.create_task(db.run_maintenance(lambda _conn: release.wait(10)))
        await asyncio.sleep(0.05)  # the writer is busy: the run's row must wait
        run = asyncio.create_task(scheduled.run_now("manual"))
        await asyncio.sleep(0.05)
        shown = scheduled.describe()
        assert shown["running"] is True
        assert shown["current_run"] is not None and shown["current_run"]["trigger"] == "manual"
        release.set()
        record = await run
        await holding
        assert record.ok and record.id > 0
        assert scheduled.describe()["current_run"] is None
        await db.close()

    asyncio.run(main())
