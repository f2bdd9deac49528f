"""One mechanism for every background agent of the thinking half: a bounded cycle run on a
schedule (an interval, or a cron expression) or on demand, one at a time, each run recorded.

The agent itself only knows how to run one cycle (``run_cycle(trigger) -> summary``).
Scheduling, the one-at-a-time guarantee (a second on-demand run is refused, the REST face
answers 409), the ``agent_runs`` log and the "last run / next run / last summary" view that
``GET /api/v1/agents`` and ``mnemonic agents`` show live here, so every later agent
(dreaming, abstraction, metacognition) gets them by being registered, not by copying code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from mnemonic.runtime.clock import Clock

log = logging.getLogger(__name__)

WallClock = Callable[[], datetime]
NextFire = Callable[[datetime], datetime | None]


class CycleAgent(Protocol):
    name: str

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        """One bounded cycle; returns a JSON-ready summary."""
        ...

    def health(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One cycle as ``agent_runs`` keeps it."""

    id: int
    agent: str
    trigger: str
    started_at: datetime
    finished_at: datetime | None = None
    ok: bool | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "trigger": self.trigger,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "ok": self.ok,
            "took_ms": (
                round((self.finished_at - self.started_at).total_seconds() * 1000, 1)
                if self.finished_at
                else None
            ),
            "summary": self.summary,
            "error": self.error,
        }


class RunLog(Protocol):
    """Where runs are recorded (``store/agent_runs.py``)."""

    async def begin(self, agent: str, trigger: str, started_at: datetime) -> int: ...

    async def finish(self, record: RunRecord) -> None: ...

    async def last_runs(self) -> dict[str, RunRecord]: ...


class AlreadyRunning(Exception):
    """A cycle of this agent is under way; runs never overlap."""

    def __init__(self, agent: str, run_id: int | None) -> None:
        super().__init__(f"agent {agent!r} is already running a cycle")
        self.agent = agent
        self.run_id = run_id


@dataclass(frozen=True, slots=True)
class Schedule:
    """Every ``interval_s`` (with jitter so agents sharing an interval do not fire together),
    or at the times a cron expression names (``next_fire``), or only on demand (neither)."""

    interval_s: float | None = None
    cron: str | None = None
    next_fire: NextFire | None = None
    jitter: float = 0.1
    first_delay_s: float | None = None  # first run sooner than a whole interval

    def describe(self) -> dict[str, Any]:
        return {"interval_s": self.interval_s, "cron": self.cron}


class ScheduledAgent:
    """Supervisor-shaped (``run`` loops until cancelled) wrapper around one cycle agent."""

    def __init__(
        self,
        agent: CycleAgent,
        schedule: Schedule,
        runs: RunLog,
        clock: Clock,
        wall: WallClock,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.agent = agent
        self.name = agent.name
        self.schedule = schedule
        self._runs = runs
        self._clock = clock
        self._wall = wall
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._lock = asyncio.Lock()
        self._current: RunRecord | None = None
        self._task: asyncio.Task[RunRecord] | None = None
        self.last: RunRecord | None = None
        self.next_run_at: datetime | None = None
        self.runs = 0
        self.failures = 0

    def restore(self, last: RunRecord | None) -> None:
        """The last recorded run (from a previous process), shown until a new one ends."""
        if last is not None and self.last is None:
            self.last = last

    def _delay(self, first: bool) -> float | None:
        now = self._wall()
        s = self.schedule
        if s.next_fire is not None:
            when = s.next_fire(now)
            if when is None:
                return None
            self.next_run_at = when
            return max(0.0, (when - now).total_seconds())
        if s.interval_s is None:
            return None
        delay = s.interval_s
        if first and s.first_delay_s is not None:
            delay = s.first_delay_s
        spread = delay * s.jitter
        delay += self._rng.uniform(-spread, spread)
        self.next_run_at = now + timedelta(seconds=delay)
        return delay

    async def run(self) -> None:
        first = True
        while True:
            delay = self._delay(first)
            first = False
            if delay is None:
                self.next_run_at = None
                await asyncio.Event().wait()  # on demand only: park until cancelled
                return
            await self._clock.sleep(delay)
            try:
                await self.run_now("schedule")
            except AlreadyRunning:
                continue  # an on-demand cycle is running: this tick is covered by it

    async def run_now(self, trigger: str) -> RunRecord:
        """Run one cycle now and return its record; ``AlreadyRunning`` if one is under way.
        A failing cycle is recorded (``ok`` false, the error) and logged, never raised: the
        next scheduled cycle still happens."""
        if self._lock.locked():
            raise AlreadyRunning(self.name, self._current.id if self._current else None)
        async with self._lock:
            started = self._wall()
            # under way from here: /agents shows the run while its row is written (the
            # write may wait behind others, e.g. a recall index checkpoint)
            self._current = RunRecord(0, self.name, trigger, started)
            try:
                run_id = await self._runs.begin(self.name, trigger, started)
            except BaseException:
                self._current = None
                raise
            self._current = RunRecord(run_id, self.name, trigger, started)
            summary: dict[str, Any] = {}
            error: str | None = None
            try:
                summary = await self.agent.run_cycle(trigger)
            except asyncio.CancelledError:
                error = "cancelled (the daemon stopped)"
                raise
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                self.failures += 1
                log.warning("agent %s cycle failed: %s", self.name, error, exc_info=exc)
            finally:
                record = RunRecord(
                    run_id,
                    self.name,
                    trigger,
                    started,
                    self._wall(),
                    error is None,
                    summary,
                    error,
                )
                self._current = None
                self.last = record
                self.runs += 1
                await asyncio.shield(self._finish(record))
            return record

    async def _finish(self, record: RunRecord) -> None:
        try:
            await self._runs.finish(record)
        except Exception:
            log.warning("recording agent run %s failed", record.id, exc_info=True)

    def start_now(self, trigger: str) -> RunRecord:
        """Start a cycle in the background (``?wait=false``); the running record is returned
        so a caller can poll ``GET /api/v1/agents``."""
        pending = self._task is not None and not self._task.done()
        if self._lock.locked() or pending:  # a task started this tick has not locked yet
            raise AlreadyRunning(self.name, self._current.id if self._current else None)
        task = asyncio.get_running_loop().create_task(
            self.run_now(trigger), name=f"mnemonic:agent-run:{self.name}"
        )
        task.add_done_callback(_report_background_failure)
        self._task = task
        return RunRecord(0, self.name, trigger, self._wall())

    async def cancel_background(self) -> None:
        """Cancel a cycle ``start_now`` began (the daemon is stopping); it is recorded as
        cancelled by ``run_now``."""
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    @property
    def running(self) -> bool:
        return self._lock.locked()

    def describe(self) -> dict[str, Any]:
        try:
            detail = self.agent.health()
        except Exception as exc:  # noqa: BLE001 - a listing must always answer
            detail = {"error": f"{type(exc).__name__}: {exc}"}
        return {
            "name": self.name,
            "schedule": self.schedule.describe(),
            "running": self.running,
            "current_run": self._current.to_json() if self._current else None,
            "last_run": self.last.to_json() if self.last else None,
            "next_run_at": self.next_run_at.isoformat() if self.next_run_at else None,
            "runs": self.runs,
            "failures": self.failures,
            "detail": detail,
        }

    def health(self) -> dict[str, Any]:
        """What the supervisor shows under ``/api/v1/health`` agents."""
        return {
            "running": self.running,
            "last_ok": self.last.ok if self.last else None,
            "next_run_at": self.next_run_at.isoformat() if self.next_run_at else None,
            "mode": self.describe()["detail"].get("mode"),
        }


def _report_background_failure(task: asyncio.Task[RunRecord]) -> None:
    """``run_now`` records a failing cycle itself; what reaches here is a failure around
    it (the run log refusing ``begin``), which would otherwise go unseen."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and not isinstance(error, AlreadyRunning):
        log.warning("background agent run %s failed", task.get_name(), exc_info=error)


class AgentRegistry:
    """The scheduled agents by name, for the REST face and the CLI."""

    def __init__(self) -> None:
        self._agents: dict[str, ScheduledAgent] = {}

    def add(self, agent: ScheduledAgent) -> None:
        if agent.name in self._agents:
            raise ValueError(f"agent {agent.name!r} registered twice")
        self._agents[agent.name] = agent

    def get(self, name: str) -> ScheduledAgent | None:
        return self._agents.get(name)

    def names(self) -> list[str]:
        return sorted(self._agents)

    def all(self) -> list[ScheduledAgent]:
        return [self._agents[n] for n in self.names()]

    async def cancel_background(self) -> None:
        """Cancel every cycle started in the background (at daemon stop)."""
        await asyncio.gather(*(a.cancel_background() for a in self._agents.values()))

    async def restore(self, runs: RunLog) -> None:
        last = await runs.last_runs()
        for agent in self._agents.values():
            agent.restore(last.get(agent.name))
