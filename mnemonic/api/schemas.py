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
    WithJsonSchema,
    field_validator,
)

from mnemonic.events.types import EVENT_TYPES_BY_NAME
from mnemonic.jsonsafe import MAX_METADATA_DEPTH, depth
from mnemonic.project_names import PROJECT_MAX_CHARS, PROJECT_PATTERN, project_problem
from mnemonic.redact import redact
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


def _whitespace_class() -> str:
    """Python's whitespace (what ``str.strip()`` strips) as explicit code points: ``\\s``
    means something else in ECMA 262 (the dialect of schema patterns), which counts
    U+001C..U+001F and U+0085 as text, so fuzzers sent "\\x1e" as valid content."""
    points = [c for c in range(0x3001) if chr(c).isspace()]
    return "".join(f"\\u{c:04x}" for c in points)


_SPACE = _whitespace_class()
# Anchored on purpose: an unanchored "\\S" means the same, but schemathesis's coverage
# phase cannot build a value for it and sends a body of 0 as "valid" instead.
_HAS_TEXT = f"^[{_SPACE}]*[^{_SPACE}]"


def _has_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain non-whitespace text")
    return value


def _text_field(max_length: int) -> Any:
    """Something besides whitespace, said in the schema too (a ``pattern``), so
    schema-driven clients and fuzzers do not send a lone form feed and get a 422."""
    return Field(min_length=1, max_length=max_length, json_schema_extra={"pattern": _HAS_TEXT})


def _valid_project(value: str) -> str:
    # judged as sent (a control character at either end breaks the published pattern
    # too), then stripped
    problem = project_problem(value, _redact_text)
    if problem is not None:
        raise ValueError(problem)
    return value.strip()


def _redact_text(text: str) -> str:
    return redact(text).text


ProjectName = Annotated[
    str,
    Field(max_length=PROJECT_MAX_CHARS, json_schema_extra={"pattern": PROJECT_PATTERN}),
    AfterValidator(_valid_project),
]
"""A project name (see :mod:`mnemonic.project_names`): stripped; "" means none."""

Content = Annotated[str, _text_field(100_000), AfterValidator(_has_text)]
QueryText = Annotated[str, _text_field(2000), AfterValidator(_has_text)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberBody(_Body):
    content: Content
    source: Source = Source.API
    type: MemoryType | None = None
    project: ProjectName = ""
    timestamp: When | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source")
    @classmethod
    def _not_internal(cls, value: Source) -> Source:
        """``dreaming`` marks insights the dreamer wrote, with provenance rows; a client
        writing it would forge that provenance."""
        if value is Source.DREAMING:
            raise ValueError("source 'dreaming' is written only by the dreaming agent")
        return value

    @field_validator("metadata")
    @classmethod
    def _small(cls, value: dict[str, Any]) -> dict[str, Any]:
        if depth(value) > MAX_METADATA_DEPTH:
            raise ValueError(f"metadata must be nested at most {MAX_METADATA_DEPTH} levels deep")
        if len(json.dumps(value, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata must be at most {MAX_METADATA_BYTES} bytes as JSON")
        return value


class BatchBody(_Body):
    memories: Annotated[list[RememberBody], Field(min_length=1, max_length=1000)]


def _integral(value: Any) -> Any:
    """JSON Schema counts 68.0 as an integer; strict pydantic would not (bools stay out)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class QueryBody(_Body):
    query: QueryText
    # strict: a JSON body says 10 and true, not "10" or 0 (the schema promises that)
    limit: Annotated[int, Field(ge=1, le=100, strict=True), BeforeValidator(_integral)] = 10
    project: ProjectName | None = None
    source: list[Source] | None = None
    type: list[MemoryType] | None = None
    state: list[MemoryState] | None = None
    since: When | None = None
    until: When | None = None
    min_salience: Annotated[StrictFloat, Field(ge=0, le=1)] | None = None
    min_score: Annotated[StrictFloat, Field(ge=0, le=1)] | None = None
    explain: StrictBool = False
    as_of: Annotated[
        When | None,
        Field(
            description="Recall as memory stood at this time: memories dated after it are "
            "hidden and supersessions by them are ignored."
        ),
    ] = None
    asked_at: Annotated[
        When | None,
        Field(
            description="When the question is asked: time phrases in it ('two weeks ago', "
            "'last Friday', 'in the past month') count back from here. Default: as_of if "
            "given, else now."
        ),
    ] = None

    _lists = field_validator("source", "type", "state", mode="before")(_as_list)


class FeedbackBody(_Body):
    query_id: Annotated[str, Field(min_length=1, max_length=64)]
    quality: Quality
    memory_ids: Annotated[list[str], Field(max_length=100)] | None = None


class AmendBody(_Body):
    content: Content
    reason: Annotated[str, Field(max_length=1000)] | None = None


def split_list(value: Any) -> Any:
    """Query lists arrive as repeated keys or comma-separated values."""
    if isinstance(value, str):
        return value.split(",")
    if isinstance(value, list):
        return [v for item in value for v in str(item).split(",")]
    return value


class ListParams(_Body):
    """``GET /api/v1/memories``: filters, newest first, cursor pagination."""

    project: ProjectName | None = None
    source: list[Source] | None = None
    type: list[MemoryType] | None = None
    state: list[MemoryState] | None = None
    since: When | None = None
    until: When | None = None
    min_salience: Annotated[float, Field(ge=0, le=1)] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: Annotated[str, Field(max_length=200)] | None = None

    _lists = field_validator("source", "type", "state", mode="before")(split_list)


class ContextParams(_Body):
    limit: Annotated[int, Field(ge=1, le=200)] = 20


class GraphParams(_Body):
    memory_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    project: ProjectName | None = None
    state: list[MemoryState] | None = None
    depth: Annotated[int, Field(ge=1, le=3)] = 2
    limit: Annotated[int, Field(ge=1, le=500)] = 200

    _lists = field_validator("state", mode="before")(split_list)


class AssociationParams(_Body):
    memory_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    relation: Relation | None = None
    min_strength: Annotated[float, Field(ge=0, le=1)] = 0.0
    limit: Annotated[int, Field(ge=1, le=500)] = 100
    cursor: Annotated[str, Field(max_length=200)] | None = None


class ActivityParams(_Body):
    limit: Annotated[int, Field(ge=1, le=1000)] = 100
    types: list[EventName] | None = None
    project: ProjectName | None = None

    _lists = field_validator("types", mode="before")(split_list)


_ABSOLUTE = r"^[/~][^\x00]*$"  # absolute or ~-relative, no NUL


class ExclusionBody(_Body):
    path: Annotated[str, Field(min_length=1, max_length=4096, pattern=_ABSOLUTE)]
    reason: Annotated[str, Field(max_length=200)] | None = None


class ExclusionParams(_Body):
    path: Annotated[str, Field(min_length=1, max_length=4096, pattern=_ABSOLUTE)]
