"""The Starlette application: routes, metrics, the security guard and error mapping."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from mnemonic import __version__
from mnemonic.api.docs import docs_routes
from mnemonic.api.metrics import Metrics, MetricsMiddleware, metrics_route
from mnemonic.api.openapi import openapi_endpoint
from mnemonic.api.routes import BadRequest, HealthFn, build_routes, invalid
from mnemonic.api.security import BodyTooLarge, SecurityMiddleware
from mnemonic.api.session import WebAuth
from mnemonic.api.web_routes import build_web_routes
from mnemonic.app.service import MemoryService
from mnemonic.errors import InvalidInputError, NotFoundError, StorageUnavailable

log = logging.getLogger(__name__)

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def build_app(
    service: MemoryService,
    health: HealthFn,
    *,
    port: int,
    token: str,
    max_body_bytes: int,
    ready: Callable[[], bool],
    lifespan: Lifespan | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    metrics: Metrics | None = None,
    auth: WebAuth | None = None,
) -> Starlette:
    async def livez(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        ok = ready()
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

    metrics = metrics or Metrics(version=__version__)
    auth = auth or WebAuth(token)  # the token and the dashboard's sessions (session.py)
    routes: list[BaseRoute] = [
        Route("/livez", livez, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        *build_routes(service, health),
        *extra_routes,
        metrics_route(metrics),
        *docs_routes(),
        *build_web_routes(auth, port=port),
    ]
    # It reads the final list at its first request, so it documents itself too.
    routes.append(openapi_endpoint(routes, version=__version__))
    app = Starlette(
        routes=routes,
        middleware=[
            # Outside the guard, so rejected requests are counted too.
            Middleware(MetricsMiddleware, metrics=metrics, routes=routes),
            Middleware(
                SecurityMiddleware,
                port=port,
                token=token,
                max_body_bytes=max_body_bytes,
                auth=auth,
            ),
        ],
        exception_handlers={
            BadRequest: _bad_request,
            NotFoundError: _not_found,
            InvalidInputError: _invalid,
            BodyTooLarge: _too_large,
            StorageUnavailable: _unavailable,
            HTTPException: _http_error,
            ClientDisconnect: _client_gone,
            Exception: _server_error,
        },
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    app.state.auth = auth
    return app


async def _bad_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, BadRequest)
    return JSONResponse({**exc.payload, "status": exc.status}, status_code=exc.status)


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": str(exc), "status": 404}, status_code=404)


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, InvalidInputError)
    return await _bad_request(request, invalid([{"field": exc.field, "message": exc.message}]))


async def _too_large(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "body too large", "status": 413}, status_code=413)


async def _unavailable(request: Request, exc: Exception) -> Response:
    body = {"error": str(exc), "status": 503, "retry": "writes resume once storage recovers"}
    return JSONResponse(body, status_code=503, headers={"Retry-After": "5"})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette names only the first route of the path; one path has several here.
        headers["Allow"] = allowed_methods(request.app.router.routes, request.scope)
    body = {"error": exc.detail, "status": exc.status_code}
    return JSONResponse(body, exc.status_code, headers=headers)


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> str:
    """The Allow of a 405 (RFC 9110): every method of the template the router chose,
    which several routes may share (``/memories/batch`` is not ``/memories/{memory_id}``)."""
    http = [route for route in routes if isinstance(route, Route)]
    chosen = next((r.path for r in http if r.matches(scope)[0] is not Match.NONE), None)
    methods = {m for r in http if r.path == chosen for m in r.methods or ()}
    return ", ".join(sorted(methods))


async def _client_gone(request: Request, exc: Exception) -> Response:
    """A client that hung up before its body arrived is normal (a cancelled command, a
    closed tab): no traceback, and the answer goes nowhere."""
    log.debug("client went away during %s %s", request.method, request.url.path)
    return Response(status_code=499)


async def _server_error(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": "internal error", "status": 500}, status_code=500)
