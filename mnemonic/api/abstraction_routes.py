"""REST routes for abstractions (patterns, principles, axioms):

* ``GET /api/v1/patterns`` (state, project, min_strength, limit, cursor): strongest first;
* ``GET /api/v1/abstractions`` (level, state, project, limit, cursor);
* ``GET /api/v1/abstractions/{abstraction_id}``: one, with its evidence (memory ids and
  summaries) and children;
* ``POST /api/v1/patterns/{abstraction_id}/dismiss`` and
  ``POST /api/v1/abstractions/{abstraction_id}/dismiss``: a person's "this is not a
  theme"; idempotent, 404 for an unknown id. A dismissed abstraction is never re-created
  from the same cluster.

Thin adapters over ``store.abstractions.SQLiteAbstractions``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.responses import Count, Unit
from mnemonic.api.routes import field_errors, invalid
from mnemonic.api.schemas import ProjectName
from mnemonic.app.browse import decode_cursor, encode_cursor
from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.store.abstractions import AbstractionRow, EvidenceItem
from mnemonic.store.models import MemoryState

M = TypeVar("M", bound=BaseModel)
MAX_EVIDENCE = 200  # evidence memories one answer lists (evidence_count has the total)

Level = Literal["pattern", "principle", "axiom"]
State = Literal["active", "demoted", "archived", "dismissed", "merged"]


class AbstractionStore(Protocol):
    async def page(
        self,
        *,
        level: str | None = None,
        state: str | None = None,
        project: str | None = None,
        min_strength: float = 0.0,
        limit: int = 50,
        after: tuple[float, str] | None = None,
    ) -> list[AbstractionRow]: ...

    async def get(self, abstraction_id: str) -> AbstractionRow | None: ...

    async def evidence(self, abstraction_id: str, limit: int) -> list[EvidenceItem]: ...

    async def children_of(self, abstraction_id: str) -> list[AbstractionRow]: ...

    async def dismiss(
        self, abstraction_id: str, level: str | None, now: datetime
    ) -> str | None: ...


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PatternParams(_Strict):
    """``GET /api/v1/patterns``: strongest first."""

    state: State | None = None
    project: ProjectName | None = None
    min_strength: Annotated[float, Field(ge=0, le=1)] = 0.0
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: Annotated[str, Field(max_length=200)] | None = None


class AbstractionParams(_Strict):
    """``GET /api/v1/abstractions``: strongest first."""

    level: Level | None = None
    state: State | None = None
    project: ProjectName | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: Annotated[str, Field(max_length=200)] | None = None


class Abstraction(_Strict):
    id: str
    level: Level
    title: str
    description: str
    concepts: list[str]
    project: str | None
    strength: Unit
    confidence: Unit
    grounding: Unit = Field(description="Share of its evidence (children) still live.")
    state: State
    merged_into: str | None
    described_by: Literal["heuristic", "llm"]
    created_at: datetime
    updated_at: datetime
    last_seen_at: datetime = Field(description="When it last gained evidence (children).")
    evidence_count: Count = Field(description="Evidence memories (a pattern) or children.")


class AbstractionPage(_Strict):
    items: list[Abstraction]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page.")


class Evidence(_Strict):
    id: str
    summary: str
    state: MemoryState
    timestamp: datetime
    weight: Unit


class AbstractionDetail(_Strict):
    abstraction: Abstraction
    evidence: list[Evidence] = Field(
        description=f"A pattern's memories, newest first; at most {MAX_EVIDENCE}."
    )
    children: list[Abstraction] = Field(
        description="A principle's patterns, an axiom's principles."
    )
    truncated: bool


class Dismissed(_Strict):
    id: str
    state: Literal["dismissed"]


def abstraction_json(row: AbstractionRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "level": row.level,
        "title": row.title,
        "description": row.description,
        "concepts": list(row.concepts),
        "project": row.project or None,
        "strength": round(row.strength, 4),
        "confidence": round(row.confidence, 4),
        "grounding": round(row.grounding, 4),
        "state": row.state,
        "merged_into": row.merged_into,
        "described_by": row.described_by,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
        "last_seen_at": row.last_seen_at.isoformat(),
        "evidence_count": row.evidence_count,
    }


def _evidence_json(item: EvidenceItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "summary": item.summary,
        "state": item.state,
        "timestamp": item.timestamp.isoformat(),
        "weight": round(item.weight, 4),
    }


def _after(cursor: str | None) -> tuple[float, str] | None:
    if cursor is None:
        return None
    key = decode_cursor(cursor)
    if (
        not isinstance(key, list)
        or len(key) != 2
        or not isinstance(key[0], int | float)
        or isinstance(key[0], bool)
        or not isinstance(key[1], str)
        or not key[1]
    ):
        raise InvalidInputError("cursor", "not a cursor this server issued")
    return float(key[0]), key[1]


def _query(request: Request, model: type[M]) -> M:
    data = {key: request.query_params.getlist(key)[-1] for key in request.query_params}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(field_errors(exc, "query")) from None


def _page(rows: list[AbstractionRow], limit: int) -> dict[str, Any]:
    items = rows[:limit]
    more = len(rows) > limit and items
    cursor = encode_cursor([items[-1].strength, items[-1].id]) if more else None
    return {"items": [abstraction_json(r) for r in items], "next_cursor": cursor}


def build_abstraction_routes(
    store: AbstractionStore,
    clock: Callable[[], datetime],
    *,
    on_change: Callable[[], Awaitable[object]] | None = None,
) -> list[Route]:
    """``on_change`` runs after a dismissal (the daemon reloads recall's patterns)."""

    async def list_patterns(request: Request) -> Response:
        p = _query(request, PatternParams)
        rows = await store.page(
            level="pattern",
            state=p.state,
            project=p.project,
            min_strength=p.min_strength,
            limit=p.limit + 1,
            after=_after(p.cursor),
        )
        return JSONResponse(_page(rows, p.limit))

    async def list_abstractions(request: Request) -> Response:
        p = _query(request, AbstractionParams)
        rows = await store.page(
            level=p.level,
            state=p.state,
            project=p.project,
            limit=p.limit + 1,
            after=_after(p.cursor),
        )
        return JSONResponse(_page(rows, p.limit))

    async def get_abstraction(request: Request) -> Response:
        abstraction_id = request.path_params["abstraction_id"]
        row = await store.get(abstraction_id)
        if row is None:
            raise NotFoundError("abstraction", abstraction_id)
        evidence = await store.evidence(abstraction_id, MAX_EVIDENCE + 1)
        children = await store.children_of(abstraction_id)
        return JSONResponse(
            {
                "abstraction": abstraction_json(row),
                "evidence": [_evidence_json(e) for e in evidence[:MAX_EVIDENCE]],
                "children": [abstraction_json(c) for c in children],
                "truncated": len(evidence) > MAX_EVIDENCE,
            }
        )

    def dismisser(level: str | None, kind: str) -> Callable[[Request], Any]:
        async def dismiss(request: Request) -> Response:
            abstraction_id = request.path_params["abstraction_id"]
            state = await store.dismiss(abstraction_id, level, clock())
            if state is None:
                raise NotFoundError(kind, abstraction_id)
            if on_change is not None:
                await on_change()
            return JSONResponse({"id": abstraction_id, "state": state})

        return dismiss

    return [
        Route("/api/v1/patterns", list_patterns, methods=["GET"]),
        Route("/api/v1/abstractions", list_abstractions, methods=["GET"]),
        Route("/api/v1/abstractions/{abstraction_id}", get_abstraction, methods=["GET"]),
        Route(
            "/api/v1/patterns/{abstraction_id}/dismiss",
            dismisser("pattern", "pattern"),
            methods=["POST"],
        ),
        Route(
            "/api/v1/abstractions/{abstraction_id}/dismiss",
            dismisser(None, "abstraction"),
            methods=["POST"],
        ),
    ]
