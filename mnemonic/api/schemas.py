"""Request bodies, parsed at the edge. Pydantic errors become 422 answers naming the field."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mnemonic.store.models import MemoryState, MemoryType, Quality, Source

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
