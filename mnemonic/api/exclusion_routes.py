"""REST routes for runtime exclusions (``/api/v1/exclusions``): paths perception ignores,
effective at once and kept across restarts."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.browse_routes import query_params
from mnemonic.api.routes import BadRequest, parse
from mnemonic.api.schemas import ExclusionBody, ExclusionParams
from mnemonic.app.exclusions import ExclusionService
from mnemonic.store.exclusions import Exclusion


def exclusion_json(row: Exclusion) -> dict[str, str]:
    return {
        "path": row.path,
        "reason": row.reason,
        "origin": row.origin,
        "created_at": row.created_at.isoformat(),
    }


def build_exclusion_routes(exclusions: ExclusionService) -> list[Route]:
    async def list_exclusions(request: Request) -> Response:
        rows = await exclusions.list()
        return JSONResponse({"items": [exclusion_json(r) for r in rows]})

    async def add_exclusion(request: Request) -> Response:
        body = await parse(request, ExclusionBody)
        row, created = await exclusions.add(body.path, body.reason or "manual")
        return JSONResponse(
            {**exclusion_json(row), "created": created}, status_code=201 if created else 200
        )

    async def remove_exclusion(request: Request) -> Response:
        p = query_params(request, ExclusionParams)
        if not await exclusions.remove(p.path):
            raise BadRequest(404, {"error": f"not excluded: {p.path}", "status": 404})
        return JSONResponse({"path": p.path, "removed": True})

    return [
        Route("/api/v1/exclusions", list_exclusions, methods=["GET"]),
        Route("/api/v1/exclusions", add_exclusion, methods=["POST"]),
        Route("/api/v1/exclusions", remove_exclusion, methods=["DELETE"]),
    ]
