"""REST routes for deleting for real and for undoing a forget:

* ``DELETE /api/v1/memories/{id}`` forgets (archives) as always; ``?purge=true`` purges;
* ``POST /api/v1/purge`` purges a list of ids, a project or what a query finds, or with
  ``dry_run`` only says what that would remove (the CLI shows it and asks first);
* ``POST /api/v1/memories/{id}/unarchive`` brings an archived memory back.

The request and answer models live here beside the routes that use them; ``openapi.py``
documents the routes with them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, StrictBool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api import responses as r
from mnemonic.api.routes import invalid, parse
from mnemonic.api.schemas import QueryText
from mnemonic.api.serialize import memory_json
from mnemonic.app.purge import MAX_IDS, PurgeReport, PurgeService
from mnemonic.app.service import MemoryService
from mnemonic.store.models import MemoryState

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})

MemoryId = Annotated[str, Field(min_length=1, max_length=200)]


# ---- requests ------------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PurgeIds(_Body):
    memory_ids: Annotated[list[MemoryId], Field(min_length=1, max_length=MAX_IDS)]
    dry_run: StrictBool = False


class PurgeProject(_Body):
    project: Annotated[
        str,
        Field(max_length=200, description='Every memory of this project ("" = no project).'),
    ]
    dry_run: StrictBool = False


class PurgeQuery(_Body):
    query: QueryText
    limit: Annotated[int, Field(ge=1, le=100, strict=True)] = 20
    dry_run: StrictBool = False


class PurgeBody(RootModel[PurgeIds | PurgeProject | PurgeQuery]):
    """Exactly one of ``memory_ids``, ``project`` or ``query``; ``dry_run`` to preview."""


# ---- answers -------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PurgeMemory(_Out):
    id: str
    project: str | None
    state: MemoryState
    first_line: str | None = Field(description="Dry runs only: the start of its text.")


class PurgeCounts(_Out):
    memories: r.Count
    raw_memories: r.Count
    amendments: r.Count
    associations: r.Count
    queries: r.Count = Field(description="Logged recalls that returned or quoted them.")


class PurgeAnswer(_Out):
    """What a purge removed, or with ``dry_run`` what it would remove."""

    dry_run: bool
    count: r.Count = Field(description="Memories (merged copies included).")
    memories: list[PurgeMemory]
    removed: PurgeCounts | None = Field(description="Null for a dry run.")
    vacuumed: bool = Field(description="The file was rewritten without the purged bytes.")
    checkpointed: bool = Field(description="The WAL was truncated to zero bytes.")
    took_ms: float


class ForgetAnswer(RootModel[r.Memory | PurgeAnswer]):
    """The archived memory, or with ``purge=true`` what the purge removed."""


# ---- routes --------------------------------------------------------------------------------


def purge_json(report: PurgeReport) -> dict[str, Any]:
    removed = None
    if not report.dry_run:
        c = report.counts
        removed = {
            "memories": c.memories,
            "raw_memories": c.raw_memories,
            "amendments": c.amendments,
            "associations": c.associations,
            "queries": c.queries,
        }
    return {
        "dry_run": report.dry_run,
        "count": len(report.items),
        "memories": [
            {
                "id": item.id,
                "project": item.project or None,
                "state": item.state,
                "first_line": item.first_line if report.dry_run else None,
            }
            for item in report.items
        ],
        "removed": removed,
        "vacuumed": report.vacuumed,
        "checkpointed": report.checkpointed,
        "took_ms": round(report.took_ms, 3),
    }


def flag(request: Request, name: str) -> bool:
    """A boolean query parameter; anything but a boolean word is 422, never "no"."""
    value = request.query_params.get(name, "false").strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise invalid([{"field": name, "message": "must be true or false"}])


def build_purge_routes(service: MemoryService, purges: PurgeService) -> list[Route]:
    async def delete_memory(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        if flag(request, "purge"):
            report = await purges.purge_ids([memory_id], scope="id")
            return JSONResponse(purge_json(report))
        memory = await service.forget(memory_id)
        return JSONResponse(memory_json(memory))

    async def purge(request: Request) -> Response:
        body = (await parse(request, PurgeBody)).root
        if isinstance(body, PurgeIds):
            report = await purges.purge_ids(body.memory_ids, dry_run=body.dry_run)
        elif isinstance(body, PurgeProject):
            report = await purges.purge_project(body.project, dry_run=body.dry_run)
        else:
            report = await purges.purge_query(body.query, body.limit, dry_run=body.dry_run)
        return JSONResponse(purge_json(report))

    async def unarchive(request: Request) -> Response:
        memory = await service.unarchive(request.path_params["memory_id"])
        return JSONResponse(memory_json(memory))

    return [
        Route("/api/v1/memories/{memory_id}", delete_memory, methods=["DELETE"]),
        Route("/api/v1/memories/{memory_id}/unarchive", unarchive, methods=["POST"]),
        Route("/api/v1/purge", purge, methods=["POST"]),
    ]
