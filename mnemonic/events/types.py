"""Every event the daemon publishes: frozen, slotted dataclasses with a type name, a UTC
timestamp and a context (``id``, ``parent_id``), so any memory can be traced back through
the encoding and the raw memory to the watcher event or API call that caused it.

Payload fields are plain data (str, int, float, bool, None, lists and dicts of those,
datetimes); ``payload()`` turns them into JSON-ready values for the WebSocket stream and
the activity log. Events never carry vectors.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from mnemonic.timeutil import utcnow


def new_event_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class Context:
    """Where an event sits in its causal chain (after Home Assistant's ``Context``)."""

    id: str = field(default_factory=new_event_id)
    parent_id: str | None = None

    def child(self) -> Context:
        """A new context caused by this one."""
        return Context(parent_id=self.id)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """The base of every event; subclasses add payload fields and a ``type`` name."""

    type: ClassVar[str] = "event"
    at: datetime = field(default_factory=utcnow)
    context: Context = field(default_factory=Context)

    def payload(self) -> dict[str, Any]:
        return {
            f.name: _jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.name not in ("at", "context")
        }

    def to_json(self) -> dict[str, Any]:
        """The wire shape: ``{"type", "at", "context", "payload"}``."""
        return {
            "type": self.type,
            "at": self.at.isoformat(),
            "context": {"id": self.context.id, "parent_id": self.context.parent_id},
            "payload": self.payload(),
        }


# --- memory lifecycle -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RawMemoryCreated(Event):
    """An observation was accepted and stored verbatim (after redaction)."""

    type: ClassVar[str] = "raw_memory_created"
    raw_id: str
    memory_id: str | None
    source: str
    project: str | None
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEncoded(Event):
    """A memory got its vector and links (or merged into a near-duplicate)."""

    type: ClassVar[str] = "memory_encoded"
    raw_id: str
    memory_id: str
    project: str | None
    memory_type: str
    merged_into: str | None = None
    links: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryReinforced(Event):
    """An exact duplicate arrived; the existing memory was reinforced instead."""

    type: ClassVar[str] = "memory_reinforced"
    raw_id: str
    memory_id: str
    project: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEncodingFailed(Event):
    """Encoding a raw memory failed; it will be retried or stays failed with the error."""

    type: ClassVar[str] = "memory_encoding_failed"
    raw_id: str
    memory_id: str | None
    error: str
    attempts: int
    will_retry: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryAmended(Event):
    type: ClassVar[str] = "memory_amended"
    memory_id: str
    project: str | None
    reason: str | None
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryStateChanged(Event):
    type: ClassVar[str] = "memory_state_changed"
    memory_id: str
    project: str | None
    old_state: str
    new_state: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPurged(Event):
    """A memory was deleted for good (``mnemonic purge``). Only the id: the event must not
    carry what the purge removed."""

    type: ClassVar[str] = "memory_purged"
    memory_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssociationCreated(Event):
    type: ClassVar[str] = "association_created"
    source_id: str
    target_id: str
    relation: str
    strength: float
    project: str | None = None


# --- cognition (later agents publish these) -----------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeClosed(Event):
    type: ClassVar[str] = "episode_closed"
    episode_id: str
    project: str | None
    memory_ids: tuple[str, ...]  # at most the first 200 in time order; see memory_count
    title: str
    memory_count: int = 0
    started_at: datetime | None = None
    ended_at: datetime | None = None
    described_by: str = "heuristic"  # or "llm"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsolidationCompleted(Event):
    type: ClassVar[str] = "consolidation_completed"
    decayed: int
    merged: int
    archived: int
    took_ms: float
    trigger: str = ""
    fading: int = 0
    revived: int = 0
    pruned: int = 0
    budget_exhausted: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DreamCompleted(Event):
    type: ClassVar[str] = "dream_completed"
    replayed: int
    links_added: int
    took_ms: float
    links_strengthened: int = 0
    insights: int = 0
    trigger: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PatternDiscovered(Event):
    type: ClassVar[str] = "pattern_discovered"
    pattern_id: str
    title: str
    memory_ids: tuple[str, ...]
    concepts: tuple[str, ...] = ()
    project: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AbstractionCreated(Event):
    type: ClassVar[str] = "abstraction_created"
    abstraction_id: str
    level: str
    title: str
    confidence: float = 0.0
    children: tuple[str, ...] = ()  # ids of the patterns (principles) it generalises


@dataclass(frozen=True, slots=True, kw_only=True)
class MetaObservation(Event):
    type: ClassVar[str] = "meta_observation"
    kind: str
    detail: Mapping[str, Any]
    severity: str = "ok"  # "ok", "warning" or "alert" against the audit's threshold
    value: float | None = None  # what was measured (a ratio, a count, bytes)
    threshold: float | None = None
    action: str = ""  # what metacognition did about it, if anything


# --- faces ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryExecuted(Event):
    type: ClassVar[str] = "query_executed"
    query_id: str
    query: str
    project: str | None
    results: int
    took_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class FeedbackReceived(Event):
    type: ClassVar[str] = "feedback_received"
    query_id: str
    quality: str
    memory_ids: tuple[str, ...]
    updated: int


# --- perception -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class WatcherEvent(Event):
    """Something a watcher saw, before the heuristic filter and redaction decide on it.

    ``content`` is the text that would be remembered ("" when only metadata is kept, with
    ``metadata_only`` set); ``occurred_at`` is when it happened at the source (a history
    timestamp, a commit date), ``at`` when the watcher noticed it.
    """

    type: ClassVar[str] = "watcher_event"
    watcher: str
    kind: str
    content: str
    path: str | None = None
    cwd: str | None = None
    project: str | None = None
    occurred_at: datetime | None = None
    metadata_only: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class WatcherEventDropped(Event):
    """The filter (or a watcher's own guard) dropped an event; counted by reason."""

    type: ClassVar[str] = "watcher_event_dropped"
    watcher: str
    kind: str
    reason: str
    path: str | None = None


# --- runtime --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentError(Event):
    """An agent or watcher task crashed; it is restarted with backoff."""

    type: ClassVar[str] = "agent_error"
    agent: str
    error: str
    restarts: int
    next_restart_s: float | None


ALL_EVENT_TYPES: tuple[type[Event], ...] = (
    RawMemoryCreated,
    MemoryEncoded,
    MemoryReinforced,
    MemoryEncodingFailed,
    MemoryAmended,
    MemoryStateChanged,
    MemoryPurged,
    AssociationCreated,
    EpisodeClosed,
    ConsolidationCompleted,
    DreamCompleted,
    PatternDiscovered,
    AbstractionCreated,
    MetaObservation,
    QueryExecuted,
    FeedbackReceived,
    WatcherEvent,
    WatcherEventDropped,
    AgentError,
)

EVENT_TYPES_BY_NAME: dict[str, type[Event]] = {cls.type: cls for cls in ALL_EVENT_TYPES}
