"""REST routes for supersessions set by hand:

* ``GET /api/v1/memories/{id}/supersessions``: what replaces this memory and what it
  replaces;
* ``POST /api/v1/memories/{id}/supersedes`` with ``{"older_id": ...}``: this memory
  replaces the older one (201 new, 200 already so);
* ``DELETE /api/v1/memories/{id}/supersedes/{older_id}``: take that back (404 if there was
  no such supersession).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.routes import parse
from mnemonic.app.supersession import SupersessionService
from mnemonic.errors import NotFoundError
from mnemonic.store.supersessions import SupersessionRow


class SupersedeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    older_id: Annotated[str, Field(min_length=1, max_length=64)]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SupersessionEdge(_Out):
    newer_id: str
    older_id: str
    strength: float
    created_at: str


class SupersessionChain(_Out):
    memory_id: str
    superseded_by: list[SupersessionEdge]
    supersedes: list[SupersessionEdge]


class SupersedeAnswer(_Out):
    newer_id: str
    older_id: str
    created: bool


def _edge(row: SupersessionRow) -> dict[str, object]:
    return {
        "newer_id": row.newer_id,
        "older_id": row.older_id,
        "strength": row.strength,
        "created_at": row.created_at,
    }


def build_supersession_routes(service: SupersessionService) -> list[Route]:
    async def chain(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        found = await service.chain(memory_id)
        return JSONResponse(
            {
                "memory_id": memory_id,
                "superseded_by": [_edge(r) for r in found.superseded_by],
                "supersedes": [_edge(r) for r in found.supersedes],
            }
        )

    async def add(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        body = await parse(request, SupersedeBody)
        created = await service.add(memory_id, body.older_id)
        return JSONResponse(
            {"newer_id": memory_id, "older_id": body.older_id, "created": created},
            status_code=201 if created else 200,
        )

    async def remove(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        older_id = request.path_params["older_id"]
        if not await service.remove(memory_id, older_id):
            raise NotFoundError("supersession", f"{memory_id} -> {older_id}")
        return JSONResponse({"newer_id": memory_id, "older_id": older_id, "created": False})

    return [
        Route("/api/v1/memories/{memory_id}/supersessions", chain, methods=["GET"]),
        Route("/api/v1/memories/{memory_id}/supersedes", add, methods=["POST"]),
        Route("/api/v1/memories/{memory_id}/supersedes/{older_id}", remove, methods=["DELETE"]),
    ]
