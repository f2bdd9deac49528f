"""Frozen domain records passed between the store, the services and the faces."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class MemoryType(StrEnum):
    DECISION = "decision"
    ERROR = "error"
    INSIGHT = "insight"
    LEARNING = "learning"
    GENERAL = "general"
    HANDOFF = "handoff"


class Source(StrEnum):
    API = "api"
    MCP = "mcp"
    TERMINAL = "terminal"
    FILESYSTEM = "filesystem"
    CLIPBOARD = "clipboard"
    GIT = "git"
    USER = "user"
    INGEST = "ingest"
    CLI = "cli"  # `mnemonic remember`; "terminal" is the shell-history watcher
    DREAMING = "dreaming"  # insights the dreamer wrote (agents/dreaming.py)


class MemoryState(StrEnum):
    ACTIVE = "active"
    FADING = "fading"
    ARCHIVED = "archived"
    MERGED = "merged"


class RawStatus(StrEnum):
    ACCEPTED = "accepted"
    ENCODED = "encoded"
    REINFORCED = "reinforced"
    FAILED = "failed"


class Relation(StrEnum):
    SIMILAR = "similar"
    CAUSED_BY = "caused_by"
    PART_OF = "part_of"
    CONTRADICTS = "contradicts"
    TEMPORAL = "temporal"
    REINFORCES = "reinforces"
    SUPERSEDES = "supersedes"
    RELATED = "related"  # shares entities or concepts across episodes (the dreamer)


class Quality(StrEnum):
    HELPFUL = "helpful"
    PARTIAL = "partial"
    IRRELEVANT = "irrelevant"


@dataclass(frozen=True, slots=True)
class NewRaw:
    """An observation as a caller hands it in, already validated and redacted."""

    content: str
    source: Source
    project: str
    timestamp: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    type: MemoryType | None = None


@dataclass(frozen=True, slots=True)
class RawMemory:
    id: str
    content: str
    source: Source
    project: str
    type: MemoryType | None
    timestamp: datetime
    created_at: datetime
    metadata: dict[str, Any]
    status: RawStatus
    memory_id: str | None
    attempts: int
    error: str | None


@dataclass(frozen=True, slots=True)
class Memory:
    seq: int
    id: str
    raw_id: str
    content: str
    summary: str
    concepts: tuple[str, ...]
    type: MemoryType
    source: Source
    project: str
    significance: float
    salience: float
    utility: float
    state: MemoryState
    access_count: int
    timestamp: datetime
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    metadata: dict[str, Any]
    merged_into: str | None


@dataclass(frozen=True, slots=True)
class Association:
    source_seq: int
    target_seq: int
    relation: Relation
    strength: float


@dataclass(frozen=True, slots=True)
class Encoded:
    """What the heuristic encoder derives from a raw observation."""

    summary: str
    concepts: tuple[str, ...]
    type: MemoryType
    significance: float
    salience: float
