"""Starts agents from a list, restarts a crashed one with exponential backoff (publishing
an ``AgentError``), and stops them in reverse order with a timeout per stage.

Every task is named ``mnemonic:agent:<name>`` and referenced until it is done. An agent
whose ``run`` returns normally is finished (for example a watcher that cannot run on this
machine) and is not restarted: restarting it would only loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mnemonic.events.types import AgentError, Event
from mnemonic.runtime.clock import Clock
from mnemonic.timeutil import utcnow

log = logging.getLogger(__name__)


class Agent(Protocol):
    name: str

    async def run(self) -> None:
        """Work until cancelled; raise to be restarted; return when there is nothing to do."""
        ...

    def health(self) -> dict[str, Any]: ...


@dataclass(slots=True)
class AgentStatus:
    name: str
    state: str = "starting"  # running | restarting | finished | stopped
    restarts: int = 0
    last_error: str | None = None
    last_error_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "last_error_at": self.last_error_at.isoformat() if self.last_error_at else None,
        }


class Supervisor:
    def __init__(
        self,
        publish: Callable[[Event], None],
        clock: Clock,
        *,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 60.0,
        stable_after_s: float = 60.0,
    ) -> None:
        self._publish = publish
        self._clock = clock
        self._backoff_initial = backoff_initial_s
        self._backoff_max = backoff_max_s
        self._stable_after = stable_after_s
        self._agents: list[Agent] = []
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._status: dict[str, AgentStatus] = {}

    def start(self, agents: Sequence[Agent]) -> None:
        for agent in agents:
            if agent.name in self._tasks:
                raise ValueError(f"agent {agent.name!r} started twice")
            self._agents.append(agent)
            self._status[agent.name] = AgentStatus(agent.name)
            self._tasks[agent.name] = asyncio.create_task(
                self._supervise(agent), name=f"mnemonic:agent:{agent.name}"
            )

    async def _supervise(self, agent: Agent) -> None:
        status = self._status[agent.name]
        backoff = self._backoff_initial
        while True:
            status.state = "running"
            started = self._clock.now()
            try:
                await agent.run()
            except asyncio.CancelledError:
                status.state = "stopped"
                raise
            except Exception as exc:  # restarted with backoff, reported
                if self._clock.now() - started >= self._stable_after:
                    backoff = self._backoff_initial
                status.restarts += 1
                status.last_error = f"{type(exc).__name__}: {exc}"
                status.last_error_at = utcnow()
                status.state = "restarting"
                log.error("agent %s crashed; restart in %.1fs", agent.name, backoff, exc_info=exc)
                self._publish(
                    AgentError(
                        agent=agent.name,
                        error=status.last_error,
                        restarts=status.restarts,
                        next_restart_s=backoff,
                    )
                )
                await self._clock.sleep(backoff)
                backoff = min(self._backoff_max, backoff * 2)
                continue
            status.state = "finished"
            return

    async def stop(self, timeout_per_agent_s: float = 2.0) -> list[str]:
        """Cancel in reverse start order; returns the names that did not stop in time."""
        stuck: list[str] = []
        for agent in reversed(self._agents):
            task = self._tasks.pop(agent.name, None)
            if task is None:
                continue
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=timeout_per_agent_s)
            if not done:
                stuck.append(agent.name)
                log.warning("agent %s did not stop within %.1fs", agent.name, timeout_per_agent_s)
            self._status[agent.name].state = "stopped"
        self._agents.clear()
        return stuck

    def statuses(self) -> list[AgentStatus]:
        return list(self._status.values())

    def health(self) -> list[dict[str, Any]]:
        out = []
        for agent in self._agents:
            entry = self._status[agent.name].to_json()
            try:
                entry["detail"] = agent.health()
            except Exception as exc:  # noqa: BLE001 - health must always answer
                entry["detail"] = {"error": f"{type(exc).__name__}: {exc}"}
            out.append(entry)
        return out
