"""REST routes for the dreamer's insights: ``GET /api/v1/insights`` (newest first, a page
at a time, optionally one project's) and ``GET /api/v1/insights/{insight_id}`` (the
insight and the memories it came from).

Thin adapters over ``store.dreaming.SQLiteDreaming`` (reads only); the request and answer
models live here, and ``openapi.py`` documents both routes with them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.responses import Count, Unit
from mnemonic.api.routes import field_errors, invalid
from mnemonic.api.schemas import ProjectName, When
from mnemonic.app.browse import decode_cursor, encode_cursor
from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.store.dreaming import InsightRow, SourceBrief
from mnemonic.store.models import MemoryState, MemoryType


class InsightReader(Protocol):
    async def list_insights(
        self,
        *,
        project: str | None = None,
        before_seq: int | None = None,
        before: datetime | None = None,
        limit: int = 50,
    ) -> list[InsightRow]: ...

    async def get_insight(self, memory_id: str) -> tuple[InsightRow, list[SourceBrief]] | None: ...


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InsightParams(_Model):
    """``GET /api/v1/insights``: newest first; ``before`` keeps insights written before
    that time; ``cursor`` continues a listing."""

    project: ProjectName | None = None
    before: When | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: Annotated[str, Field(max_length=200)] | None = None


class Insight(_Model):
    id: str
    project: str | None
    content: str
    summary: str
    concepts: list[str]
    terms: list[str] = Field(description="The recurring concepts or entities it is about.")
    episodes: Count = Field(description="Distinct episodes they came up together in.")
    described_by: Literal["heuristic", "llm"]
    state: MemoryState
    timestamp: datetime
    salience: Unit
    source_count: Count


class InsightPage(_Model):
    items: list[Insight]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page.")


class InsightSource(_Model):
    id: str
    summary: str
    project: str | None
    type: MemoryType
    state: MemoryState
    timestamp: datetime


class InsightDetail(_Model):
    insight: Insight
    sources: list[InsightSource] = Field(description="The memories it came from (oldest first).")


def insight_json(row: InsightRow) -> dict[str, Any]:
    info = row.metadata.get("dreaming")
    info = info if isinstance(info, dict) else {}
    terms = info.get("terms")
    episodes = info.get("episodes")
    return {
        "id": row.id,
        "project": row.project or None,
        "content": row.content,
        "summary": row.summary,
        "concepts": list(row.concepts),
        "terms": [t for t in terms if isinstance(t, str)] if isinstance(terms, list) else [],
        "episodes": episodes if isinstance(episodes, int) and episodes >= 0 else 0,
        "described_by": "llm" if info.get("described_by") == "llm" else "heuristic",
        "state": row.state,
        "timestamp": row.timestamp.isoformat(),
        "salience": round(min(1.0, max(0.0, row.salience)), 4),
        "source_count": row.source_count,
    }


def source_json(s: SourceBrief) -> dict[str, Any]:
    return {
        "id": s.id,
        "summary": s.summary,
        "project": s.project or None,
        "type": s.type,
        "state": s.state,
        "timestamp": s.timestamp.isoformat(),
    }


def _params(request: Request) -> InsightParams:
    """The query string validated like a body: unknown or malformed parameters are 422."""
    data = {key: request.query_params.getlist(key)[-1] for key in request.query_params}
    try:
        return InsightParams.model_validate(data)
    except ValidationError as exc:
        raise invalid(field_errors(exc, "query")) from None


def _before_seq(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    key = decode_cursor(cursor)
    if not isinstance(key, list) or len(key) != 1 or type(key[0]) is not int or key[0] < 1:
        raise InvalidInputError("cursor", "not a cursor this server issued")
    return int(key[0])


def build_insight_routes(store: InsightReader) -> list[Route]:
    async def list_insights(request: Request) -> Response:
        p = _params(request)
        rows = await store.list_insights(
            project=p.project, before_seq=_before_seq(p.cursor), before=p.before, limit=p.limit + 1
        )
        items = rows[: p.limit]
        more = len(rows) > p.limit and items
        cursor = encode_cursor([items[-1].seq]) if more else None
        return JSONResponse({"items": [insight_json(r) for r in items], "next_cursor": cursor})

    async def get_insight(request: Request) -> Response:
        insight_id = request.path_params["insight_id"]
        found = await store.get_insight(insight_id)
        if found is None:
            raise NotFoundError("insight", insight_id)
        row, sources = found
        return JSONResponse(
            {"insight": insight_json(row), "sources": [source_json(s) for s in sources]}
        )

    return [
        Route("/api/v1/insights", list_insights, methods=["GET"]),
        Route("/api/v1/insights/{insight_id}", get_insight, methods=["GET"]),
    ]
