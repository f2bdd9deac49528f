"""Request bodies, parsed at the edge. Pydantic errors become 422 answers naming the field."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mnemonic.store.models import MemoryState, MemoryType, Quality, Relation, Source

MAX_METADATA_BYTES = 16 * 1024


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberBody(_Body):
    content: Annotated[str, Field(min_length=1, max_length=100_000)]
    source: Source = Source.API
    type: MemoryType | None = None
    project: Annotated[str, Field(max_length=200)] = ""
    timestamp: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must contain non-whitespace text")
        return value

    @field_validator("metadata")
    @classmethod
    def _small(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(json.dumps(value, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata must be at most {MAX_METADATA_BYTES} bytes as JSON")
        return value


class BatchBody(_Body):
    memories: Annotated[list[RememberBody], Field(min_length=1, max_length=1000)]


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class QueryBody(_Body):
    query: Annotated[str, Field(min_length=1, max_length=2000)]
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    project: Annotated[str, Field(max_length=200)] | None = None
    source: list[Source] | None = None
    type: list[MemoryType] | None = None
    state: list[MemoryState] | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_salience: Annotated[float, Field(ge=0, le=1)] | None = None
    explain: bool = False

    _lists = field_validator("source", "type", "state", mode="before")(_as_list)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must contain non-whitespace text")
        return value


class FeedbackBody(_Body):
    query_id: Annotated[str, Field(min_length=1, max_length=64)]
    quality: Quality
    memory_ids: Annotated[list[str], Field(max_length=100)] | None = None


class AmendBody(_Body):
    content: Annotated[str, Field(min_length=1, max_length=100_000)]
    reason: Annotated[str, Field(max_length=1000)] | None = None

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must contain non-whitespace text")
        return value


def _split(value: Any) -> Any:
    """Query lists arrive as repeated keys or comma-separated values."""
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    if isinstance(value, list):
        return [v for item in value for v in str(item).split(",") if v]
    return value


class ListParams(_Body):
    """``GET /api/v1/memories``: filters, newest first, cursor pagination."""

    project: Annotated[str, Field(max_length=200)] | None = None
    source: list[Source] | None = None
    type: list[MemoryType] | None = None
    state: list[MemoryState] | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_salience: Annotated[float, Field(ge=0, le=1)] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: Annotated[str, Field(max_length=200)] | None = None

    _lists = field_validator("source", "type", "state", mode="before")(_split)


class ContextParams(_Body):
    limit: Annotated[int, Field(ge=1, le=200)] = 20


class GraphParams(_Body):
    memory_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    project: Annotated[str, Field(max_length=200)] | None = None
    state: list[MemoryState] | None = None
    depth: Annotated[int, Field(ge=1, le=3)] = 2
    limit: Annotated[int, Field(ge=1, le=500)] = 200

    _lists = field_validator("state", mode="before")(_split)


class AssociationParams(_Body):
    memory_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    relation: Relation | None = None
    min_strength: Annotated[float, Field(ge=0, le=1)] = 0.0
    limit: Annotated[int, Field(ge=1, le=500)] = 100
    cursor: Annotated[str, Field(max_length=200)] | None = None


class ActivityParams(_Body):
    limit: Annotated[int, Field(ge=1, le=1000)] = 100
    types: list[str] | None = None
    project: Annotated[str, Field(max_length=200)] | None = None

    _lists = field_validator("types", mode="before")(_split)
