"""Keeps recall's pattern signal (``index/patterns.py``) in step with the abstraction store.

Patterns change only when the abstraction agent runs or a person dismisses one, so the set
is reloaded then (``RefreshAfterCycle`` wraps the agent; the dismissal routes call
``refresh``) and once the recall index is ready at start. A reload reads one query's rows
and averages a few hundred evidence vectors, in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from mnemonic.errors import StorageUnavailable
from mnemonic.index.patterns import PatternEvidence
from mnemonic.index.recall_index import RecallIndex
from mnemonic.runtime.agent_runs import CycleAgent

log = logging.getLogger(__name__)


class PatternRow(Protocol):
    """What the abstraction store gives for one active pattern."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def strength(self) -> float: ...
    @property
    def evidence(self) -> tuple[int, ...]: ...


class PatternRefresher:
    def __init__(
        self, source: Callable[[], Awaitable[Sequence[PatternRow]]], index: RecallIndex
    ) -> None:
        self._source = source
        self._index = index
        self._lock = asyncio.Lock()
        self.loaded = 0

    async def refresh(self) -> int:
        """Reload the active patterns; how many recall now holds. Never raises on a
        storage failure (the previous set stays; the next cycle tries again)."""
        async with self._lock:
            try:
                rows = await self._source()
            except StorageUnavailable:
                log.warning("patterns not reloaded: storage unavailable")
                return self.loaded
            evidence = [PatternEvidence(r.id, r.title, r.strength, r.evidence) for r in rows]
            index = self._index
            self.loaded = await asyncio.to_thread(index.patterns.load, evidence, index.vectors_for)
            return self.loaded


class RefreshAfterCycle:
    """A cycle agent that reloads the patterns after each of its cycles."""

    def __init__(self, agent: CycleAgent, refresher: PatternRefresher) -> None:
        self._agent = agent
        self._refresher = refresher
        self.name = agent.name

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        try:
            return await self._agent.run_cycle(trigger)
        finally:
            await self._refresher.refresh()

    def health(self) -> dict[str, Any]:
        return {**self._agent.health(), "patterns_in_recall": self._refresher.loaded}
