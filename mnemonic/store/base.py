"""Narrow store protocols: each service asks only for the ones it uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mnemonic.llm.embedding import Vectors
from mnemonic.store.files import FileRecord, LinkMade
from mnemonic.store.models import (
    Association,
    Encoded,
    Memory,
    MemoryState,
    MemoryType,
    NewRaw,
    Quality,
    RawMemory,
    RawStatus,
    Relation,
    Source,
)
from mnemonic.store.vector_rows import VectorModels


@dataclass(frozen=True, slots=True)
class Accepted:
    """The outcome of storing one raw observation on the acknowledgement path."""

    raw_id: str
    memory_id: str
    seq: int
    status: RawStatus  # accepted (awaiting its vector) or reinforced (exact duplicate)


@dataclass(frozen=True, slots=True)
class PendingMemory:
    """A memory stored without its vector yet: the encoder's unit of work."""

    seq: int
    id: str
    raw_id: str
    content: str
    project: str
    type: MemoryType
    source: Source
    concepts: tuple[str, ...]
    timestamp: datetime
    salience: float
    attempts: int = 0  # encoding attempts already begun (one may have died with the process)
    gist: bool = False  # made by consolidation from merged sources: never a duplicate itself


@dataclass(frozen=True, slots=True)
class NewLink:
    """A link from a memory being encoded to ``target_seq``. Links are undirected except
    ``supersedes``: the new memory supersedes the target, or with ``incoming`` the target
    supersedes the new memory (an import whose timestamp is older than its neighbour's)."""

    target_seq: int
    relation: Relation
    strength: float
    incoming: bool = False

    def ends(self, seq: int) -> tuple[int, int]:
        """(source_seq, target_seq) as stored: the pair in order, or for ``supersedes``
        (newer, older)."""
        if self.relation is Relation.SUPERSEDES:
            return (self.target_seq, seq) if self.incoming else (seq, self.target_seq)
        return min(seq, self.target_seq), max(seq, self.target_seq)


@dataclass(frozen=True, slots=True)
class EmbeddedOutcome:
    """What the encoder decided for one pending memory."""

    memory: PendingMemory
    vector: Vectors
    merged_into_seq: int | None = None
    links: tuple[NewLink, ...] = ()
    passages: Vectors | None = None  # [n, dim], n >= 0 (encoding/passages.py); None: not computed


@dataclass(frozen=True, slots=True)
class Filters:
    """Recall filters; ``None`` means no restriction (the service fills in default states)."""

    project: str | None = None
    sources: tuple[Source, ...] | None = None
    types: tuple[MemoryType, ...] | None = None
    states: tuple[MemoryState, ...] | None = (MemoryState.ACTIVE, MemoryState.FADING)
    since: datetime | None = None
    until: datetime | None = None
    min_salience: float | None = None
    # recall as memory stood then: later memories hidden (the service folds it into
    # ``until``), supersessions by later memories ignored
    as_of: datetime | None = None


@dataclass(frozen=True, slots=True)
class QueryRecord:
    id: str
    query: str
    result_ids: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]


class IngestStore(Protocol):
    async def accept(
        self, items: Sequence[tuple[NewRaw, Encoded, str]], reinforce_step: float
    ) -> list[Accepted]: ...

    async def complete(
        self, outcomes: Sequence[EmbeddedOutcome], models: VectorModels, step: float
    ) -> None: ...

    async def begin_attempt(self, raw_ids: Sequence[str], max_attempts: int) -> list[str]: ...

    async def mark_failed(self, raw_ids: Sequence[str], error: str, max_attempts: int) -> None: ...

    async def pending_ids(self, limit: int) -> list[str]: ...

    async def pending_for(self, memory_ids: Sequence[str]) -> list[PendingMemory]: ...


class RawMemoryStore(Protocol):
    async def get_raw(self, raw_id: str) -> RawMemory | None: ...


class MemoryStore(Protocol):
    async def get(self, memory_id: str) -> Memory | None: ...

    async def get_many(self, seqs: Sequence[int]) -> dict[int, Memory]: ...

    async def set_state(self, memory_id: str, state: MemoryState) -> Memory | None:
        """By the user's hand: archiving marks the memory forgotten (``forgotten_at``)."""
        ...

    async def counts(self) -> dict[str, int]: ...

    async def seqs_of(self, memory_ids: Sequence[str]) -> dict[str, int]: ...

    async def previous_in_project(self, project: str, before_seq: int) -> int | None: ...


class SearchStore(Protocol):
    async def full_text(
        self, terms: Sequence[str], filters: Filters, limit: int, match_budget: int
    ) -> list[tuple[int, float]]: ...

    async def full_text_each(
        self,
        terms: Sequence[str],
        filters: Sequence[Filters],
        limit: int,
        match_budget: int,
    ) -> list[list[tuple[int, float]]]: ...


class AssociationStore(Protocol):
    async def neighbours(self, seqs: Sequence[int], filters: Filters) -> list[Association]: ...

    async def adjust_strength(self, edges: Sequence[tuple[int, int]], delta: float) -> int: ...


class EpisodeMembership(Protocol):
    async def episodes_of(self, seqs: Sequence[int]) -> dict[int, str]:
        """The episode of each memory that has one (the others are left out)."""
        ...


class FeedbackStore(Protocol):
    async def record_query(
        self, record: QueryRecord, filters: dict[str, object], took_ms: float, seqs: Sequence[int]
    ) -> None: ...

    async def get_query(self, query_id: str) -> QueryRecord | None: ...

    async def record_feedback(
        self,
        query_id: str,
        quality: Quality,
        memory_ids: Sequence[str],
        utility_delta: float,
        bounds: tuple[float, float],
    ) -> int | None: ...


class MetaStore(Protocol):
    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...


class FileMemoryStore(Protocol):
    """Which memory is the current one of each watched file (``store/files.py``)."""

    async def file(self, path: str) -> FileRecord | None: ...

    async def files_with_content(self, content_hash: str) -> list[FileRecord]: ...

    async def save_file(
        self, record: FileRecord, metadata: dict[str, Any], release: str | None = None
    ) -> None: ...

    async def link(
        self, from_id: str, to_id: str, relation: Relation, strength: float
    ) -> LinkMade | None: ...
