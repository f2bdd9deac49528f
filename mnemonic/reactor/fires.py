"""One fire of a reactor rule, as ``reactor_fires`` keeps it, and the log's protocol."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

SKIPPED = "skipped: "  # `error` of a fire whose action was not needed (ok stays true)

Outcome = Literal["started", "skipped", "failed"]


@dataclass(frozen=True, slots=True)
class Fire:
    rule: str
    at: datetime
    event_type: str
    action: str
    ok: bool
    error: str | None = None

    @property
    def outcome(self) -> Outcome:
        """``started``; ``skipped`` (ok, nothing to do: the agent was already running);
        ``failed`` (the action raised; ``error`` says why)."""
        if not self.ok:
            return "failed"
        return "skipped" if (self.error or "").startswith(SKIPPED) else "started"


@dataclass(frozen=True, slots=True)
class FireTotals:
    count: int
    last: Fire | None


class FireLog(Protocol):
    """Where fires are recorded (``store/reactor.py``)."""

    async def record(self, fire: Fire) -> None: ...

    async def totals(self) -> dict[str, FireTotals]: ...
