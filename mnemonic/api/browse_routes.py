"""REST routes for browsing and amending: lists, context, graph, associations, projects,
activity, stats. Thin adapters from HTTP to the application layer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.routes import field_errors, invalid, parse
from mnemonic.api.schemas import (
    ActivityParams,
    AmendBody,
    AssociationParams,
    ContextParams,
    GraphParams,
    ListParams,
)
from mnemonic.api.serialize import memory_json
from mnemonic.app.activity import ActivityLog
from mnemonic.app.browse import BrowseService
from mnemonic.app.service import MemoryService
from mnemonic.store.base import Filters
from mnemonic.store.browse import EdgeRow, Graph, GraphNode
from mnemonic.store.models import Association, Memory

P = TypeVar("P", bound=BaseModel)
StatsFn = Callable[[], Awaitable[dict[str, Any]]]

_MULTI = ("source", "type", "state", "types")


def query_params(request: Request, model: type[P]) -> P:
    """Query strings validated like bodies: unknown or malformed parameters are 422."""
    data: dict[str, Any] = {}
    for key in request.query_params:
        values = request.query_params.getlist(key)
        data[key] = values if key in _MULTI else values[-1]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(field_errors(exc, "query")) from None


def _edge(edge: Association, ids: dict[int, str]) -> dict[str, Any]:
    return {
        "source": ids[edge.source_seq],
        "target": ids[edge.target_seq],
        "relation": edge.relation.value,
        "strength": round(edge.strength, 4),
    }


def _node(memory: Memory | GraphNode) -> dict[str, Any]:
    return {
        "id": memory.id,
        "summary": memory.summary,
        "type": memory.type.value,
        "source": memory.source.value,
        "project": memory.project or None,
        "state": memory.state.value,
        "salience": round(memory.salience, 4),
        "timestamp": memory.timestamp.isoformat(),
    }


def graph_json(graph: Graph) -> dict[str, Any]:
    """Nodes, the edges among them and whether the walk stopped at its cap: the answer of
    ``/api/v1/graph`` and, with a ``center``, of ``/api/v1/graph/neighbourhood``."""
    ids = {m.seq: m.id for m in graph.nodes}
    edges = [e for e in graph.edges if e.source_seq in ids and e.target_seq in ids]
    return {
        "nodes": [_node(m) for m in graph.nodes],
        "edges": [_edge(e, ids) for e in edges],
        "truncated": graph.truncated,
    }


def edge_row_json(row: EdgeRow) -> dict[str, Any]:
    return {
        "source": row.source_id,
        "target": row.target_id,
        "relation": row.relation.value,
        "strength": round(row.strength, 4),
        "activation_count": row.activation_count,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


def build_browse_routes(
    service: MemoryService, browse: BrowseService, activity: ActivityLog, stats: StatsFn
) -> list[Route]:
    async def list_memories(request: Request) -> Response:
        p = query_params(request, ListParams)
        filters = Filters(
            project=p.project,
            sources=tuple(p.source) if p.source else None,
            types=tuple(p.type) if p.type else None,
            states=tuple(p.state) if p.state else None,
            since=p.since,
            until=p.until,
            min_salience=p.min_salience,
        )
        page = await browse.list_memories(filters, p.limit, p.cursor)
        return JSONResponse(
            {"items": [memory_json(m) for m in page.items], "next_cursor": page.next_cursor}
        )

    async def amend(request: Request) -> Response:
        body = await parse(request, AmendBody)
        memory = await service.amend(request.path_params["memory_id"], body.content, body.reason)
        return JSONResponse(memory_json(memory))

    async def context(request: Request) -> Response:
        p = query_params(request, ContextParams)
        memory_id = request.path_params["memory_id"]
        ctx = await browse.context(memory_id, p.limit)
        return JSONResponse(
            {
                "memory": memory_json(ctx.memory),
                "associations": [
                    {
                        "memory": _node(link.other),
                        "relation": link.relation.value,
                        "strength": round(link.strength, 4),
                        "activation_count": link.activation_count,
                        "created_at": link.created_at.isoformat(),
                    }
                    for link in ctx.links
                ],
                "neighbours": [_node(m) for m in ctx.before_after],
                "amendments": await browse.amendments(memory_id),
            }
        )

    async def graph(request: Request) -> Response:
        p = query_params(request, GraphParams)
        filters = Filters(project=p.project, states=tuple(p.state) if p.state else None)
        result = await browse.graph(p.memory_id, filters, p.depth, p.limit)
        return JSONResponse(graph_json(result))

    async def associations(request: Request) -> Response:
        p = query_params(request, AssociationParams)
        page = await browse.associations(p.memory_id, p.relation, p.min_strength, p.limit, p.cursor)
        return JSONResponse(
            {"items": [edge_row_json(r) for r in page.items], "next_cursor": page.next_cursor}
        )

    async def projects(request: Request) -> Response:
        rows = await browse.projects()
        return JSONResponse(
            {
                "items": [
                    {
                        "name": r.name or None,
                        "memories": r.memories,
                        "active": r.active,
                        "first_at": r.first_at.isoformat() if r.first_at else None,
                        "last_at": r.last_at.isoformat() if r.last_at else None,
                    }
                    for r in rows
                ]
            }
        )

    async def recent(request: Request) -> Response:
        p = query_params(request, ActivityParams)  # unknown event types are 422 there
        return JSONResponse({"items": activity.recent(p.limit, p.types, p.project)})

    async def get_stats(request: Request) -> Response:
        return JSONResponse(await stats())

    return [
        Route("/api/v1/memories", list_memories, methods=["GET"]),
        Route("/api/v1/memories/{memory_id}", amend, methods=["PATCH"]),
        Route("/api/v1/memories/{memory_id}/context", context, methods=["GET"]),
        Route("/api/v1/graph", graph, methods=["GET"]),
        Route("/api/v1/associations", associations, methods=["GET"]),
        Route("/api/v1/projects", projects, methods=["GET"]),
        Route("/api/v1/activity", recent, methods=["GET"]),
        Route("/api/v1/stats", get_stats, methods=["GET"]),
    ]
