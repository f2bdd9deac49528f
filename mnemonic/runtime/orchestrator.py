"""The orchestrator: one small supervised task that watches the thinking half as a whole.

Every ``orchestrator.interval_s`` it looks at the cycle agents (``AgentRegistry``: running,
last run, next run, failures), the LLM (mode, breaker), the store's counts and the size of
the database; publishes a ``MetaObservation`` of kind ``store_size`` (value in bytes,
severity against metacognition's size thresholds; the reactor's built-in rule consolidates
past a size) and keeps what it saw for ``/api/v1/health`` (``cognition``) and ``/metrics``.
Every ``orchestrator.self_test_interval_s`` it runs the recall self-test (injected: the
daemon passes the metacognition agent's ``run_self_test``), the first one when the last
recorded self-test is older than that interval (or there is none).

It decides nothing else: acting is metacognition's and the reactor's job, so the
orchestrator can never start a storm of cycles.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol

from mnemonic.cognition.metacognition import STORE_SIZE, Threshold, judge
from mnemonic.events.types import Event, MetaObservation
from mnemonic.runtime.agent_runs import AgentRegistry
from mnemonic.runtime.clock import Clock

log = logging.getLogger(__name__)

SelfTest = Callable[[str], Awaitable[dict[str, Any]]]  # trigger -> {at, hit_rate, probes, ...}
LastSelfTest = Callable[[], Awaitable[datetime | None]]


class LlmState(Protocol):
    @property
    def mode(self) -> str: ...

    def status(self) -> dict[str, Any]: ...


class Orchestrator:
    """Supervisor-shaped: ``run`` loops until cancelled; ``describe`` never blocks."""

    name = "orchestrator"

    def __init__(
        self,
        agents: AgentRegistry,
        llm: LlmState,
        counts: Callable[[], Awaitable[dict[str, int]]],
        database_bytes: Callable[[], int],
        publish: Callable[[Event], None],
        clock: Clock,
        wall: Callable[[], datetime],
        *,
        interval_s: float,
        self_test_interval_s: float,
        size_threshold: Threshold,
        self_test: SelfTest | None = None,
        last_self_test: LastSelfTest | None = None,
        self_test_result: Callable[[], dict[str, Any] | None] | None = None,
    ) -> None:
        self._agents = agents
        self._llm = llm
        self._counts = counts
        self._bytes = database_bytes
        self._publish = publish
        self._clock = clock
        self._wall = wall
        self.interval_s = interval_s
        self.self_test_interval_s = self_test_interval_s
        self._size = size_threshold
        self._self_test = self_test
        self._last_self_test = last_self_test
        self._result = self_test_result  # the latest test, whoever ran it
        self.ticks = 0
        self.last_tick_at: datetime | None = None
        self.database_bytes = 0
        self.memories: dict[str, int] = {}
        self.self_test: dict[str, Any] | None = None
        self.self_test_failures = 0
        self._self_test_due: datetime | None = None

    async def run(self) -> None:
        await self._plan_first_self_test()
        while True:
            await self.tick()
            await self._clock.sleep(self.interval_s)

    async def _plan_first_self_test(self) -> None:
        if self._self_test is None or self.self_test_interval_s <= 0:
            return
        last = None
        if self._last_self_test is not None:
            try:
                last = await self._last_self_test()
            except Exception:
                log.warning("reading the last self-test failed", exc_info=True)
        now = self._wall()
        if last is None:
            self._self_test_due = now
        else:
            self._self_test_due = datetime.fromtimestamp(
                last.timestamp() + self.self_test_interval_s, tz=now.tzinfo
            )

    async def tick(self) -> None:
        """One look: counts, size, the store_size event, and the self-test when due."""
        now = self._wall()
        try:
            self.memories = await self._counts()
        except Exception:
            log.warning("orchestrator could not read the store's counts", exc_info=True)
        self.database_bytes = await asyncio.to_thread(self._bytes)
        value = float(self.database_bytes)
        severity = judge(value, self._size)
        self._publish(
            MetaObservation(
                kind=STORE_SIZE,
                detail={"bytes": self.database_bytes, "by": "orchestrator"},
                severity=severity,
                value=value,
                threshold=self._size.alert if severity == "alert" else self._size.warning,
            )
        )
        self.ticks += 1
        self.last_tick_at = now
        if self._self_test_due is not None and now >= self._self_test_due:
            await self._run_self_test(now)

    async def _run_self_test(self, now: datetime) -> None:
        assert self._self_test is not None
        self._self_test_due = datetime.fromtimestamp(
            now.timestamp() + self.self_test_interval_s, tz=now.tzinfo
        )
        try:
            self.self_test = await self._self_test("orchestrator")
        except Exception as exc:
            self.self_test_failures += 1
            log.warning("recall self-test failed: %s", exc, exc_info=True)

    # ---- what health and metrics show ---------------------------------------------------
    def agent_states(self) -> list[dict[str, Any]]:
        states: list[dict[str, Any]] = []
        for agent in self._agents.all():
            last = agent.last
            states.append(
                {
                    "name": agent.name,
                    "state": "running"
                    if agent.running
                    else ("failed" if last is not None and last.ok is False else "idle"),
                    "last_run_at": last.started_at.isoformat() if last else None,
                    "last_ok": last.ok if last else None,
                    "next_run_at": agent.next_run_at.isoformat() if agent.next_run_at else None,
                    "runs": agent.runs,
                    "failures": agent.failures,
                }
            )
        return states

    def latest_self_test(self) -> dict[str, Any] | None:
        """The last self-test, the orchestrator's or a metacognition cycle's."""
        if self._result is not None:
            return self._result() or self.self_test
        return self.self_test

    def describe(self) -> dict[str, Any]:
        status = self._llm.status()
        breaker = status.get("breaker")
        return {
            "agents": self.agent_states(),
            "llm": {
                "mode": self._llm.mode,
                "configured": bool(status.get("configured")),
                "breaker": breaker.get("state") if isinstance(breaker, dict) else None,
            },
            "database_bytes": self.database_bytes,
            "memories": dict(self.memories),
            "self_test": self.latest_self_test(),
            "self_test_next_at": self._self_test_due.isoformat() if self._self_test_due else None,
            "last_tick_at": self.last_tick_at.isoformat() if self.last_tick_at else None,
            "ticks": self.ticks,
        }

    def health(self) -> dict[str, Any]:
        """What the supervisor lists for this task."""
        return {
            "ticks": self.ticks,
            "database_bytes": self.database_bytes,
            "self_test_failures": self.self_test_failures,
        }
