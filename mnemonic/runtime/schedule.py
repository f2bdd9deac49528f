"""The one helper for periodic work: a job run every interval with jitter (so jobs that
share an interval do not fire together), on an injectable clock, supervised like an agent.

A failing run is logged and counted and the next one still happens; the job's own budget
keeps it bounded. Cron expressions are not offered, so APScheduler is not needed.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from mnemonic.runtime.clock import Clock

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[Any]]


class PeriodicJob:
    """An agent-shaped periodic job: ``run`` loops until cancelled."""

    def __init__(
        self,
        name: str,
        interval_s: float,
        job: Job,
        clock: Clock,
        *,
        jitter: float = 0.1,
        run_at_start: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        if not 0 <= jitter < 1:
            raise ValueError("jitter must be in [0, 1)")
        self.name = name
        self.interval_s = interval_s
        self._job = job
        self._clock = clock
        self._jitter = jitter
        self._run_at_start = run_at_start
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self.runs = 0
        self.failures = 0
        self.last_error: str | None = None
        self.last_run_at: float | None = None

    def next_delay(self) -> float:
        spread = self.interval_s * self._jitter
        return self.interval_s + self._rng.uniform(-spread, spread)

    async def run(self) -> None:
        if self._run_at_start:
            await self._once()
        while True:
            await self._clock.sleep(self.next_delay())
            await self._once()

    async def _once(self) -> None:
        self.last_run_at = self._clock.now()
        try:
            await self._job()
            self.runs += 1
        except Exception as exc:  # noqa: BLE001 - the next run still happens
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("periodic job %s failed: %s", self.name, self.last_error)

    def health(self) -> dict[str, Any]:
        return {
            "interval_s": self.interval_s,
            "runs": self.runs,
            "failures": self.failures,
            "last_error": self.last_error,
        }
