"""Per-rule cooldowns over a monotonic clock (pure: ``now`` is a parameter).

A rule that fired at ``t`` fires again at the earliest at ``t + cooldown_s``; what arrives
in between is held back (counted, not queued: the next matching event after the cooldown
fires it). A fire counts whatever its outcome, so a failing action cannot loop hot.
"""

from __future__ import annotations


class Cooldowns:
    def __init__(self) -> None:
        self._last: dict[str, float] = {}

    def admit(self, rule: str, cooldown_s: float, now: float) -> bool:
        """Whether ``rule`` may fire at ``now``; if so, its cooldown starts at ``now``."""
        last = self._last.get(rule)
        if last is not None and now - last < cooldown_s:  # the elapsed time, as measured
            return False
        self._last[rule] = now
        return True

    def remaining(self, rule: str, cooldown_s: float, now: float) -> float:
        last = self._last.get(rule)
        if last is None:
            return 0.0
        return max(0.0, cooldown_s - (now - last))

    def restore(self, rule: str, ago_s: float, now: float) -> None:
        """A fire ``ago_s`` seconds back (wall time, from the log of an earlier process)
        keeps its cooldown running across a restart."""
        self._last[rule] = now - max(0.0, ago_s)
