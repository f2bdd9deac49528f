"""A circuit breaker: stop calling an endpoint that keeps failing, try again later.

Closed: calls flow. After ``failures`` consecutive failures it opens: every call is
refused at once (the task uses its heuristic) until ``cooldown_s`` has passed. Then it is
half-open: exactly one probe call is let through; its success closes the breaker, its
failure opens it for another cool-down. The clock is injected (monotonic seconds), so the
states are tested without sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(self, failures: int, cooldown_s: float, clock: Callable[[], float]) -> None:
        if failures < 1:
            raise ValueError("failures must be at least 1")
        self.failures_to_open = failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._consecutive = 0
        self._opened_at: float | None = None
        self._probing = False
        self.times_opened = 0

    @property
    def state(self) -> State:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.cooldown_s:
            return "half_open"
        return "open"

    @property
    def consecutive_failures(self) -> int:
        return self._consecutive

    def would_allow(self) -> bool:
        """Whether ``allow`` would let a call through now (without taking the probe)."""
        state = self.state
        return state == "closed" or (state == "half_open" and not self._probing)

    def allow(self) -> bool:
        """May a call start now? In half-open state the first caller takes the probe."""
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._probing:
            self._probing = True
            return True
        return False

    def success(self) -> None:
        self._consecutive = 0
        self._opened_at = None
        self._probing = False

    def failure(self) -> None:
        self._consecutive += 1
        if self._probing or self._consecutive >= self.failures_to_open:
            if self._opened_at is None or self._probing:
                self.times_opened += 1
            self._opened_at = self._clock()
        self._probing = False

    def release(self) -> None:
        """A call that took the probe ended without a verdict (cancelled, or the server was
        fine but the answer unusable): let the next caller probe instead."""
        self._probing = False

    def retry_in(self) -> float:
        """Seconds until the next probe may start (0 unless open)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self.cooldown_s - (self._clock() - self._opened_at))
