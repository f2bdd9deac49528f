"""Perception: watchers run as agents, their events are redacted before they reach the bus,
and the perception agent turns the ones the heuristic filter accepts into raw memories.

Redaction happens at the watcher's ``emit``, not after the filter: the bus fans every
event out to ``/ws`` clients and the activity log, so an unredacted ``WatcherEvent`` would
show a secret to anyone tailing the stream. The memory service redacts again on write
(cheap, and idempotent), so no path into the store depends on this one alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemonic.errors import InvalidInputError, StorageUnavailable
from mnemonic.events.types import Context, Event, WatcherEvent, WatcherEventDropped
from mnemonic.perception.filter import Accept, HeuristicFilter, event_text
from mnemonic.store.models import Source
from mnemonic.watchers.base import Emit, Watcher

log = logging.getLogger(__name__)

Subscribe = Callable[..., Callable[[], None]]
RedactText = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Perceived:
    """What the agent asks the memory service to remember (the composition root adapts
    it: agents talk to the rest through events and plain callables, never the app layer)."""

    content: str
    source: Source
    project: str
    timestamp: datetime | None
    metadata: dict[str, Any]
    cause: Context


Remember = Callable[[Perceived], Awaitable[object]]

# watcher name -> the memory's source (the shell history watcher calls itself "terminal")
SOURCES: dict[str, Source] = {
    "filesystem": Source.FILESYSTEM,
    "terminal": Source.TERMINAL,
    "clipboard": Source.CLIPBOARD,
    "git": Source.GIT,
}


def redacting(emit: Emit, redact_text: RedactText) -> Emit:
    """``emit`` that redacts a watcher event's content and metadata before passing it on."""
    from mnemonic.redact import redact_json

    def emit_redacted(event: Event) -> None:
        if isinstance(event, WatcherEvent):
            event = dataclasses.replace(
                event,
                content=redact_text(event.content) if event.content else event.content,
                metadata=redact_json(dict(event.metadata), redact_text),
            )
        emit(event)

    return emit_redacted


class WatcherAgent:
    """A watcher under the supervisor: ``run`` watches until cancelled, ``health`` reports
    the watcher's own state (``disabled`` with a reason when it cannot run here)."""

    def __init__(self, watcher: Watcher, emit: Emit) -> None:
        self.watcher = watcher
        self.name = f"watcher:{watcher.name}"
        self._emit = emit

    async def run(self) -> None:
        await self.watcher.run(self._emit)

    def health(self) -> dict[str, Any]:
        return dataclasses.asdict(self.watcher.health())


class PerceptionAgent:
    """``WatcherEvent`` -> heuristic filter -> raw memory (``source`` and ``project`` set,
    the event's context as the cause, so the memory traces back to what was seen).

    Drops are published as ``WatcherEventDropped`` and counted by reason, together with
    the drops the watchers report themselves (oversized commands, concealed clipboard
    content), so ``/api/v1/stats`` shows every reason in one place.
    """

    name = "perception"

    def __init__(
        self,
        subscribe: Subscribe,
        publish: Callable[[Event], None],
        filter_: HeuristicFilter,
        remember: Remember,
        *,
        queue_size: int,
    ) -> None:
        self._subscribe = subscribe
        self._publish = publish
        self._filter = filter_
        self._remember = remember
        self._queue_size = queue_size
        self.remembered = 0
        self.write_errors = 0
        self.watcher_drops: Counter[str] = Counter()
        self.last_error: str | None = None

    async def run(self) -> None:
        unsubscribe = self._subscribe(
            self._on_event,
            [WatcherEvent, WatcherEventDropped],
            name="perception",
            queue_size=self._queue_size,
        )
        try:
            await asyncio.Event().wait()  # the work happens on the subscription's task
        finally:
            unsubscribe()

    async def _on_event(self, event: Event) -> None:
        if isinstance(event, WatcherEventDropped):
            if not event.reason.startswith("filter:"):
                self.watcher_drops[event.reason] += 1
            return
        if not isinstance(event, WatcherEvent):
            return
        decision = await self._filter.decide(event)
        if not isinstance(decision, Accept):
            self._publish(
                WatcherEventDropped(
                    watcher=event.watcher,
                    kind=event.kind,
                    reason=f"filter:{decision.reason.value}",
                    path=event.path,
                    context=event.context.child(),
                )
            )
            return
        await self._store(event, decision)

    async def _store(self, event: WatcherEvent, decision: Accept) -> None:
        metadata: dict[str, Any] = {
            "watcher": event.watcher,
            "kind": event.kind,
            "score": round(decision.score, 3),
        }
        if event.path:
            metadata["path"] = event.path
        if event.cwd:
            metadata["cwd"] = event.cwd
        if event.metadata_only:
            metadata["metadata_only"] = True
        if event.metadata:
            # watchers may carry datetimes or paths; the store keeps JSON
            metadata["event"] = json.loads(json.dumps(dict(event.metadata), default=str))
        item = Perceived(
            content=event_text(event),
            source=SOURCES.get(event.watcher, Source.INGEST),
            project=decision.project or "",
            timestamp=event.occurred_at,
            metadata=metadata,
            cause=event.context,
        )
        try:
            await self._remember(item)
        except InvalidInputError:  # nothing left after redaction: a drop, not a fault
            self.watcher_drops["empty_after_redaction"] += 1
            return
        except StorageUnavailable as exc:
            # health already says writes fail (the store's write_failure); keep watching
            self.write_errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("perception could not store a %s event: %s", event.watcher, exc)
            return
        self.remembered += 1

    def stats(self) -> dict[str, Any]:
        return {
            "filter": self._filter.stats(),
            "watcher_drops": dict(self.watcher_drops),
            "remembered": self.remembered,
            "write_errors": self.write_errors,
        }

    def health(self) -> dict[str, Any]:
        return {
            "remembered": self.remembered,
            "write_errors": self.write_errors,
            "last_error": self.last_error,
        }
