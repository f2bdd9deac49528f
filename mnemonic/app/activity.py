"""Recent events for ``/api/v1/activity`` and the last errors for ``/api/v1/stats``: a
match-all bus subscriber keeping two bounded rings in memory (nothing is persisted;
the store already records what matters)."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import Any

from mnemonic.events.types import AgentError, Event, MemoryEncodingFailed

_ERROR_RING = 50


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


def event_json(event: Event, max_chars: int) -> dict[str, Any]:
    body = event.to_json()
    body["payload"] = truncate_payload(body["payload"], max_chars)
    return body


class ActivityLog:
    def __init__(self, size: int, content_max_chars: int) -> None:
        self._events: deque[Event] = deque(maxlen=size)
        self._errors: deque[dict[str, Any]] = deque(maxlen=_ERROR_RING)
        self._max_chars = content_max_chars

    def on_event(self, event: Event) -> None:
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
