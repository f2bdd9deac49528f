"""REST routes of consolidation:

* ``POST /api/v1/memories/{memory_id}/unmerge``: undo the merge behind a gist (its sources
  return to the states they had, the gist is archived, nothing is deleted). 404 for an
  unknown id, 422 when the memory is no gist or its merge was already undone;
* ``GET /api/v1/consolidation/history``: the latest cycles, newest first.

The answer models live here beside the routes; ``openapi.py`` documents them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.browse_routes import query_params
from mnemonic.errors import InvalidInputError
from mnemonic.store.consolidation import NotAGist


class Consolidations(Protocol):
    """What the routes need (``SQLiteConsolidation`` provides it)."""

    async def unmerge(self, gist_id: str, now: datetime) -> list[str]: ...

    async def history(self, limit: int) -> list[dict[str, Any]]: ...


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Field(ge=1, le=1000)] = 20


class Unmerged(_Out):
    gist_id: str
    restored: list[str]
    gist_state: str


class ConsolidationCycle(_Out):
    id: int
    started_at: str
    finished_at: str
    trigger: str
    counts: dict[str, Any]
    budget_exhausted: bool


class ConsolidationHistory(_Out):
    items: list[ConsolidationCycle]


def build_consolidation_routes(store: Consolidations, clock: Callable[[], datetime]) -> list[Route]:
    async def unmerge(request: Request) -> Response:
        gist_id = request.path_params["memory_id"]
        try:
            restored = await store.unmerge(gist_id, clock())
        except NotAGist as exc:  # the id names a memory, but not one this can apply to
            raise InvalidInputError("memory_id", str(exc)) from None
        return JSONResponse({"gist_id": gist_id, "restored": restored, "gist_state": "archived"})

    async def history(request: Request) -> Response:
        p = query_params(request, HistoryParams)
        return JSONResponse({"items": await store.history(p.limit)})

    return [
        Route("/api/v1/memories/{memory_id}/unmerge", unmerge, methods=["POST"]),
        Route("/api/v1/consolidation/history", history, methods=["GET"]),
    ]
