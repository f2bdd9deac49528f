"""The fake clock, the periodic-job helper and the supervisor: time moves only when the
test says so, so backoff and intervals are checked without sleeping."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from typing import Any

import pytest

from mnemonic.events.bus import EventBus
from mnemonic.events.types import AgentError, Event
from mnemonic.runtime.clock import FakeClock
from mnemonic.runtime.schedule import PeriodicJob
from mnemonic.runtime.supervisor import Supervisor


def test_fake_clock_wakes_sleepers_in_deadline_order() -> None:
    async def main() -> list[str]:
        clock = FakeClock()
        order: list[str] = []

        async def sleeper(name: str, seconds: float) -> None:
            await clock.sleep(seconds)
            order.append(f"{name}@{clock.now():g}")

        tasks = [
            asyncio.create_task(sleeper("b", 5)),
            asyncio.create_task(sleeper("a", 2)),
            asyncio.create_task(sleeper("c", 9)),
        ]
        await asyncio.sleep(0)
        await clock.advance(6)
        assert clock.sleepers == 1
        await clock.advance(10)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(main()) == ["a@2", "b@5", "c@9"]


def test_periodic_job_runs_every_interval_with_bounded_jitter() -> None:
    async def main() -> tuple[int, list[float]]:
        clock = FakeClock()
        runs: list[float] = []

        async def job() -> None:
            runs.append(clock.now())

        periodic = PeriodicJob("j", 10, job, clock, jitter=0.2, rng=random.Random(1))
        task = asyncio.create_task(periodic.run())
        await asyncio.sleep(0)
        await clock.advance(100)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return periodic.runs, runs

    count, runs = asyncio.run(main())
    gaps = [b - a for a, b in zip([0.0, *runs], runs, strict=False)]
    assert 8 <= count <= 12
    assert all(8 <= g <= 12 for g in gaps), gaps
    assert len(set(round(g, 6) for g in gaps)) > 1  # jittered, not fixed


def test_periodic_job_survives_a_failing_run() -> None:
    async def main() -> PeriodicJob:
        clock = FakeClock()
        calls = 0

        async def flaky() -> None:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise OSError("disk")

        periodic = PeriodicJob("j", 1, flaky, clock, jitter=0, run_at_start=True)
        task = asyncio.create_task(periodic.run())
        await asyncio.sleep(0)
        await clock.advance(3)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return periodic

    periodic = asyncio.run(main())
    assert periodic.failures == 1 and periodic.runs == 3
    assert periodic.last_error == "OSError: disk"
    assert periodic.health()["failures"] == 1


@pytest.mark.parametrize(("interval", "jitter"), [(0, 0.1), (1, 1.0), (1, -0.1)])
def test_periodic_job_rejects_bad_settings(interval: float, jitter: float) -> None:
    async def job() -> None:
        return None

    with pytest.raises(ValueError):
        PeriodicJob("j", interval, job, FakeClock(), jitter=jitter)


class Crashy:
    """Fails ``fail_times`` times, then runs until cancelled."""

    def __init__(self, name: str, fail_times: int, log: list[str]) -> None:
        self.name = name
        self.fail_times = fail_times
        self.starts = 0
        self.log = log

    async def run(self) -> None:
        self.starts += 1
        self.log.append(f"start {self.name}")
        if self.starts <= self.fail_times:
            raise RuntimeError(f"crash {self.starts}")
        try:
            await asyncio.Event().wait()
        finally:
            self.log.append(f"stop {self.name}")

    def health(self) -> dict[str, Any]:
        return {"starts": self.starts}


def test_supervisor_restarts_with_doubling_backoff_and_reports() -> None:
    async def main() -> tuple[Crashy, list[Event], list[dict[str, Any]], float]:
        clock = FakeClock()
        bus = EventBus()
        errors: list[Event] = []
        bus.subscribe(errors.append, [AgentError], name="errors")
        sup = Supervisor(bus.publish, clock, backoff_initial_s=1, backoff_max_s=4)
        agent = Crashy("a", fail_times=4, log=[])
        sup.start([agent])
        await asyncio.sleep(0)
        assert agent.starts == 1
        await clock.advance(0.99)
        assert agent.starts == 1  # first restart only after 1 s
        await clock.advance(0.02)
        assert agent.starts == 2
        await clock.advance(2)  # second delay: 2 s
        assert agent.starts == 3
        await clock.advance(4)  # third: 4 s
        assert agent.starts == 4
        await clock.advance(4)  # capped at 4 s
        assert agent.starts == 5
        health = sup.health()
        await asyncio.sleep(0)
        await sup.stop()
        await bus.close()
        return agent, errors, health, clock.now()

    _, errors, health, _ = asyncio.run(main())
    assert [e.restarts for e in errors] == [1, 2, 3, 4]  # type: ignore[attr-defined]
    assert [e.next_restart_s for e in errors] == [1, 2, 4, 4]  # type: ignore[attr-defined]
    assert health[0]["state"] == "running" and health[0]["restarts"] == 4
    assert health[0]["last_error"] == "RuntimeError: crash 4"
    assert health[0]["detail"] == {"starts": 5}


def test_supervisor_stops_in_reverse_order_and_reports_stuck_agents() -> None:
    class Stubborn:
        name = "stubborn"

        async def run(self) -> None:
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    continue  # ignores cancellation (a bug the supervisor must survive)

        def health(self) -> dict[str, Any]:
            return {}

    async def main() -> tuple[list[str], list[str]]:
        log: list[str] = []
        sup = Supervisor(lambda e: None, FakeClock())
        sup.start([Crashy("first", 0, log), Crashy("second", 0, log)])
        await asyncio.sleep(0)
        stuck = await sup.stop(timeout_per_agent_s=0.5)
        sup2 = Supervisor(lambda e: None, FakeClock())
        stubborn = Stubborn()
        sup2.start([stubborn])
        await asyncio.sleep(0)
        stuck2 = await sup2.stop(timeout_per_agent_s=0.1)
        for task in asyncio.all_tasks():
            if task.get_name() == "mnemonic:agent:stubborn":
                task.get_coro().close()  # type: ignore[union-attr]
        return log, stuck + stuck2

    log, stuck = asyncio.run(asyncio.wait_for(main(), 10))
    assert log == ["start first", "start second", "stop second", "stop first"]
    assert stuck == ["stubborn"]


def test_an_agent_that_returns_is_finished_not_restarted() -> None:
    class Disabled:
        name = "clipboard"
        runs = 0

        async def run(self) -> None:
            Disabled.runs += 1

        def health(self) -> dict[str, Any]:
            return {"state": "disabled"}

    async def main() -> str:
        clock = FakeClock()
        sup = Supervisor(lambda e: None, clock)
        sup.start([Disabled()])
        await asyncio.sleep(0)
        await clock.advance(120)
        state = sup.statuses()[0].state
        await sup.stop()
        return state

    assert asyncio.run(main()) == "finished"
    assert Disabled.runs == 1


def test_starting_the_same_agent_twice_is_refused() -> None:
    async def main() -> None:
        sup = Supervisor(lambda e: None, FakeClock())
        sup.start([Crashy("a", 0, [])])
        with pytest.raises(ValueError, match="twice"):
            sup.start([Crashy("a", 0, [])])
        await sup.stop()

    asyncio.run(main())


def test_malloc_arenas_are_capped_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    from mnemonic.runtime.heap import limit_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False  # the user's own setting wins
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert limit_malloc_arenas() is glibc


_FRAGMENTED_HEAP = """
import json
from mnemonic.runtime.heap import trim_heap

def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))

blocks = [bytes(1000 + i % 50) for i in range(200_000)]  # ~200 MB in glibc malloc chunks
survivors = blocks[::50]  # one live chunk in fifty: nothing at the heap's top is free
del blocks
freed = rss_mb()
trimmed = trim_heap()
print(json.dumps({"freed": freed, "trimmed": trimmed, "after": rss_mb()}))
"""


def test_a_heap_trim_hands_freed_memory_back() -> None:
    """glibc keeps freed chunks below a live one resident; ``trim_heap`` releases them."""
    import platform

    if not (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"):
        pytest.skip("malloc_trim is glibc's; elsewhere trim_heap is a documented no-op")
    done = subprocess.run(
        [sys.executable, "-c", _FRAGMENTED_HEAP], capture_output=True, text=True, check=True
    )
    sizes = json.loads(done.stdout)
    assert sizes["freed"] >= 150, sizes  # the freed memory was still resident...
    assert sizes["trimmed"] is True
    assert sizes["after"] <= sizes["freed"] - 100, sizes  # ...until the trim
