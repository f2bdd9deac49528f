"""Recent events for ``/api/v1/activity`` and the last errors for ``/api/v1/stats``: a
match-all bus subscriber keeping two bounded rings in memory (nothing is persisted;
the store already records what matters)."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import Any

from mnemonic.events.types import AgentError, Event, MemoryEncodingFailed

_ERROR_RING = 50
_PURGED_REMEMBERED = 10_000


def truncate_payload(payload: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """Shorten long text fields (content, queries) so streams and logs stay small."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if isinstance(value, str) and len(value) > max_chars:
            out[key] = value[:max_chars] + "…"
            out[f"{key}_truncated"] = True
        else:
            out[key] = value
    return out


def mentions(event: Event, idents: Collection[str]) -> bool:
    """Whether an id field of ``event`` (``*_id``, ``*_ids``, ``merged_into``) is, or
    lists, one of ``idents``: how a purge finds the events about what it removed."""
    for name, value in event.payload().items():
        if not (name.endswith(("_id", "_ids")) or name == "merged_into"):
            continue
        if isinstance(value, str) and value in idents:
            return True
        if isinstance(value, list) and any(isinstance(v, str) and v in idents for v in value):
            return True
    return False


def event_json(event: Event, max_chars: int) -> dict[str, Any]:
    body = event.to_json()
    body["payload"] = truncate_payload(body["payload"], max_chars)
    return body


class ActivityLog:
    def __init__(self, size: int, content_max_chars: int) -> None:
        self._events: deque[Event] = deque(maxlen=size)
        self._errors: deque[dict[str, Any]] = deque(maxlen=_ERROR_RING)
        self._max_chars = content_max_chars
        # ids a purge removed: events about them still on their way are dropped on arrival
        self._purged: dict[str, None] = {}

    def on_event(self, event: Event) -> None:
        if self._purged and mentions(event, self._purged):
            return
        self._events.append(event)
        if isinstance(event, AgentError):
            self._errors.append(
                {"at": event.at.isoformat(), "component": event.agent, "error": event.error}
            )
        elif isinstance(event, MemoryEncodingFailed):
            self._errors.append(
                {
                    "at": event.at.isoformat(),
                    "component": "encoding",
                    "error": event.error,
                    "raw_id": event.raw_id,
                }
            )

    def forget(self, idents: Collection[str]) -> int:
        """Drop the buffered events that name any of ``idents`` (memory, raw memory or
        query ids), and the events that caused them (the watcher event behind a raw
        memory carries its text too). Returns how many events were dropped."""
        gone = {id(e) for e in self._events if mentions(e, idents)}
        causes = {e.context.parent_id for e in self._events if id(e) in gone} - {None}
        while causes:
            more = {id(e) for e in self._events if e.context.id in causes and id(e) not in gone}
            gone |= more
            causes = {e.context.parent_id for e in self._events if id(e) in more} - {None}
        kept = [e for e in self._events if id(e) not in gone]
        self._events.clear()
        self._events.extend(kept)
        errors = [e for e in self._errors if e.get("raw_id") not in idents]
        self._errors.clear()
        self._errors.extend(errors)
        self._purged.update(dict.fromkeys(idents))
        while len(self._purged) > _PURGED_REMEMBERED:
            del self._purged[next(iter(self._purged))]
        return len(gone)

    def recent(
        self, limit: int, types: Collection[str] | None = None, project: str | None = None
    ) -> list[dict[str, Any]]:
        """Newest first."""
        out: list[dict[str, Any]] = []
        for event in reversed(self._events):
            if types and event.type not in types:
                continue
            if project is not None and getattr(event, "project", None) != project:
                continue
            out.append(event_json(event, self._max_chars))
            if len(out) >= limit:
                break
        return out

    def last_errors(self, limit: int = 10) -> list[dict[str, Any]]:
        return list(reversed(self._errors))[:limit]
