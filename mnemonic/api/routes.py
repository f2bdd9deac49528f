"""REST routes under /api/v1: thin adapters from HTTP to the application layer."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.schemas import BatchBody, FeedbackBody, QueryBody, RememberBody
from mnemonic.api.serialize import memory_json, raw_json, result_json
from mnemonic.app.service import MemoryService, RecallRequest, Remembered, RememberInput
from mnemonic.jsonsafe import depth, non_finite_paths
from mnemonic.store.base import Filters
from mnemonic.store.models import RawStatus

B = TypeVar("B", bound=BaseModel)
HealthFn = Callable[[], Awaitable[dict[str, Any]]]


class BadRequest(Exception):
    def __init__(self, status: int, payload: dict[str, Any]) -> None:
        super().__init__(payload.get("error", ""))
        self.status = status
        self.payload = payload


MAX_BODY_DEPTH = 64
"""Deepest nesting a request body may have; metadata has its own, smaller limit."""


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (RFC 8259); Python's parser accepts them by default."""
    raise ValueError(f"{name} is not valid JSON")


async def parse(request: Request, model: type[B]) -> B:
    """JSON that does not parse is 400; JSON of the wrong shape is 422 naming the fields.

    Numbers JSON can write but a float cannot hold (``1e999``) are refused here, where the
    field can still be named: stored, they would fail every later read of the row.
    """
    raw = await request.body()
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequest(400, {"error": "invalid JSON: nested too deeply"}) from None
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(400, {"error": f"invalid JSON: {exc}"}) from None
    if depth(data, MAX_BODY_DEPTH) > MAX_BODY_DEPTH:
        raise invalid([{"field": "body", "message": f"nested deeper than {MAX_BODY_DEPTH}"}])
    overflow = non_finite_paths(data)
    if overflow:
        message = "must be a finite number (JSON numbers beyond a float's range are refused)"
        raise invalid([{"field": f"body.{path}", "message": message} for path in overflow])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(field_errors(exc, "body")) from None


def invalid(details: list[dict[str, str]]) -> BadRequest:
    """The one shape of every 422: each field and what is wrong with it."""
    return BadRequest(422, {"error": "validation failed", "details": details})


def field_errors(exc: ValidationError, whole: str) -> list[dict[str, str]]:
    """Pydantic's errors as ``{"field": "a.0.b", "message"}``; ``whole`` names the input
    itself when the error is not about one field."""
    return [
        {"field": ".".join(str(p) for p in err["loc"]) or whole, "message": err["msg"]}
        for err in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def _input(body: RememberBody) -> RememberInput:
    return RememberInput(
        content=body.content,
        source=body.source,
        type=body.type,
        project=body.project,
        timestamp=body.timestamp,
        metadata=body.metadata,
    )


def _remembered(r: Remembered) -> dict[str, Any]:
    return {"raw_id": r.raw_id, "memory_id": r.memory_id, "status": r.status.value}


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _wait(request: Request) -> bool:
    """``?wait=``: a boolean; anything else is 422 rather than silently "no"."""
    value = request.query_params.get("wait", "false").strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise invalid([{"field": "wait", "message": "must be true or false"}])


def build_routes(service: MemoryService, health: HealthFn) -> list[Route]:
    async def remember(request: Request) -> Response:
        body = await parse(request, RememberBody)
        wait = _wait(request)
        result = await service.remember(_input(body), wait=wait)
        done = result.status in (RawStatus.ENCODED, RawStatus.REINFORCED)
        return JSONResponse(_remembered(result), status_code=201 if wait and done else 202)

    async def remember_batch(request: Request) -> Response:
        body = await parse(request, BatchBody)
        wait = _wait(request)
        results = await service.remember_batch([_input(b) for b in body.memories], wait=wait)
        done = all(r.status in (RawStatus.ENCODED, RawStatus.REINFORCED) for r in results)
        return JSONResponse(
            {"results": [_remembered(r) for r in results]},
            status_code=201 if wait and done else 202,
        )

    async def get_memory(request: Request) -> Response:
        memory = await service.get(request.path_params["memory_id"])
        return JSONResponse(memory_json(memory))

    async def get_raw(request: Request) -> Response:
        raw = await service.get_raw(request.path_params["raw_id"])
        return JSONResponse(raw_json(raw))

    async def query(request: Request) -> Response:
        body = await parse(request, QueryBody)
        filters = Filters(
            project=body.project,
            sources=tuple(body.source) if body.source else None,
            types=tuple(body.type) if body.type else None,
            states=tuple(body.state) if body.state else None,
            since=body.since,
            until=body.until,
            min_salience=body.min_salience,
            as_of=body.as_of,
        )
        answer = await service.recall(
            RecallRequest(
                body.query,
                body.limit,
                filters,
                min_score=body.min_score,
                asked_at=body.asked_at,
            )
        )
        return JSONResponse(
            {
                "query_id": answer.query_id,
                "results": [result_json(s, explain=body.explain) for s in answer.results],
                "took_ms": round(answer.took_ms, 3),
                "evidence": round(answer.evidence, 6),
            }
        )

    async def feedback(request: Request) -> Response:
        body = await parse(request, FeedbackBody)
        changed = await service.feedback(body.query_id, body.quality, body.memory_ids)
        return JSONResponse({"query_id": body.query_id, "updated": changed})

    async def get_health(request: Request) -> Response:
        return JSONResponse(await health())

    return [
        Route("/api/v1/memories", remember, methods=["POST"]),
        Route("/api/v1/memories/batch", remember_batch, methods=["POST"]),
        Route("/api/v1/memories/{memory_id}", get_memory, methods=["GET"]),
        # DELETE /api/v1/memories/{memory_id} (forget, or purge) is in purge_routes.py
        Route("/api/v1/raw/{raw_id}", get_raw, methods=["GET"]),
        Route("/api/v1/query", query, methods=["POST"]),
        Route("/api/v1/feedback", feedback, methods=["POST"]),
        Route("/api/v1/health", get_health, methods=["GET"]),
    ]
