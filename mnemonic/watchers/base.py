"""The one protocol every watcher implements.

A watcher turns something it observes into :class:`~mnemonic.events.types.WatcherEvent`
values and hands them to ``emit`` (the bus's ``publish``, which never blocks or raises).
It does not decide what is worth remembering (the heuristic filter does), does not redact
(the perception agent does, before the first write) and never touches the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mnemonic.events.types import Event

Emit = Callable[[Event], None]


@dataclass(slots=True)
class WatcherHealth:
    """What ``/api/v1/health`` and ``mnemonic doctor`` show for one watcher.

    ``state`` is one of ``starting``, ``running``, ``degraded`` (working with a reduced
    scope, e.g. polling after inotify ran out of watches), ``disabled`` (cannot run here,
    e.g. no clipboard on a headless machine) or ``stopped``; ``message`` says why and what
    to do, in one line.
    """

    state: str = "starting"
    message: str | None = None
    events: int = 0
    warnings: int = 0
    detail: dict[str, Any] = field(default_factory=dict)


class Watcher(Protocol):
    name: str

    async def run(self, emit: Emit) -> None:
        """Watch until cancelled, calling ``emit`` for each observation."""
        ...

    def health(self) -> WatcherHealth: ...
