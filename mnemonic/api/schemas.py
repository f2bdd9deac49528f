"""Request bodies, parsed at the edge. Pydantic errors become 422 answers naming the field."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    WithJsonSchema,
    field_validator,
)

from mnemonic.events.types import EVENT_TYPES_BY_NAME
from mnemonic.store.models import MemoryState, MemoryType, Quality, Relation, Source

MAX_METADATA_BYTES = 16 * 1024
_NUMBER = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")


def _no_epoch_numbers(value: Any) -> Any:
    """Pydantic would read 1e15 as a Unix time far outside what datetime can convert;
    times are ISO 8601 strings here, nothing else."""
    if isinstance(value, bool | int | float) or (
        isinstance(value, str) and _NUMBER.fullmatch(value)
    ):
        raise ValueError("must be an ISO 8601 date-time, e.g. 2026-11-23T10:00:00Z")
    return value


def _as_utc(value: datetime) -> datetime:
    """Naive times are UTC; an aware time that UTC cannot hold (year 1 at +14:00) is 422."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of the representable range in UTC") from None


When = Annotated[
    datetime,
    BeforeValidator(_no_epoch_numbers),
    AfterValidator(_as_utc),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


def _known_event(name: str) -> str:
    if name not in EVENT_TYPES_BY_NAME:
        raise ValueError(f"unknown event type {name!r}")
    return name


EventName = Annotated[
    str,
    AfterValidator(_known_event),
    WithJsonSchema({"type": "string", "enum": sorted(EVENT_TYPES_BY_NAME)}),
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberBody(_Body):
    content: Annotated[str, Field(min_length=1, max_length=100_000)]
    source: Source = Source.API
    type: MemoryType | None = None
    project: Annotated[str, Field(max_length=200)] = ""
    timestamp: When | None = None
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
    # strict: a JSON body says 10 and true, not "10" or 0 (the schema promises that)
    limit: Annotated[StrictInt, Field(ge=1, le=100)] = 10
    project: Annotated[str, Field(max_length=200)] | None = None
    source: list[Source] | None = None
    type: list[MemoryType] | None = None
    state: list[MemoryState] | None = None
    since: When | None = None
    until: When | None = None
    min_salience: Annotated[StrictFloat, Field(ge=0, le=1)] | None = None
    explain: StrictBool = False

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
        return value.split(",")
    if isinstance(value, list):
        return [v for item in value for v in str(item).split(",")]
    return value


class ListParams(_Body):
    """``GET /api/v1/memories``: filters, newest first, cursor pagination."""

    project: Annotated[str, Field(max_length=200)] | None = None
    source: list[Source] | None = None
    type: list[MemoryType] | None = None
    state: list[MemoryState] | None = None
    since: When | None = None
    until: When | None = None
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
    types: list[EventName] | None = None
    project: Annotated[str, Field(max_length=200)] | None = None

    _lists = field_validator("types", mode="before")(_split)


_ABSOLUTE = r"^[/~][^\x00]*$"  # absolute or ~-relative, no NUL


class ExclusionBody(_Body):
    path: Annotated[str, Field(min_length=1, max_length=4096, pattern=_ABSOLUTE)]
    reason: Annotated[str, Field(max_length=200)] | None = None


class ExclusionParams(_Body):
    path: Annotated[str, Field(min_length=1, max_length=4096, pattern=_ABSOLUTE)]
