"""REST routes of MCP tool usage: ``POST /api/v1/tool/usage`` (one call, recorded by the
MCP server; the stdio forwarder has no database, so it records over REST like everything
else) and ``GET /api/v1/tool/usage`` (by tool: calls, errors, p50/p95 latency).

The request and answer models live here; ``openapi.py`` documents both routes with them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api import responses as r
from mnemonic.api.browse_routes import query_params
from mnemonic.api.routes import parse
from mnemonic.api.schemas import When
from mnemonic.store.tool_usage import ToolCall, ToolStat
from mnemonic.timeutil import utcnow

_NAME = r"^[A-Za-z0-9_.:/ -]*$"  # tool and client names: printable, no markup or quotes


class UsageStore(Protocol):
    async def record(self, call: ToolCall) -> None: ...

    async def summary(
        self, *, since: datetime | None = None, client: str | None = None
    ) -> list[ToolStat]: ...


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallBody(_Strict):
    tool: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
    client: Annotated[str, Field(max_length=100, pattern=_NAME)] = ""
    project: Annotated[str, Field(max_length=200)] = ""
    latency_ms: Annotated[float, Field(strict=True, ge=0, le=86_400_000)]  # not `false`
    ok: StrictBool
    error: Annotated[str, Field(max_length=64, pattern=r"^[A-Za-z0-9_.-]*$")] | None = Field(
        None, description="A short error class (never message text)."
    )


class ToolUsageParams(_Strict):
    since: When | None = Field(None, description="Only calls at or after this time.")
    days: Annotated[int, Field(ge=1, le=3650)] | None = Field(
        None, description="Only calls of the last N days."
    )
    client: Annotated[str, Field(max_length=100)] | None = None

    @model_validator(mode="after")
    def _one_window(self) -> ToolUsageParams:
        if self.since is not None and self.days is not None:
            raise ValueError("give since or days, not both")
        return self


class ToolStatOut(_Strict):
    tool: str
    calls: r.Count
    errors: r.Count
    p50_ms: Annotated[float, Field(ge=0)]
    p95_ms: Annotated[float, Field(ge=0)]


class ToolUsage(_Strict):
    since: datetime | None
    calls: r.Count
    errors: r.Count
    tools: list[ToolStatOut]


class ToolCallRecorded(_Strict):
    recorded: bool


def build_tool_usage_routes(store: UsageStore) -> list[Route]:
    async def record(request: Request) -> Response:
        body = await parse(request, ToolCallBody)
        await store.record(
            ToolCall(
                at=utcnow(),
                tool=body.tool,
                client=body.client,
                project=body.project.strip(),
                latency_ms=body.latency_ms,
                ok=body.ok,
                error=body.error,
            )
        )
        return JSONResponse({"recorded": True}, status_code=201)

    async def summary(request: Request) -> Response:
        p = query_params(request, ToolUsageParams)
        since = p.since
        if p.days is not None:
            since = utcnow() - timedelta(days=p.days)
        stats = await store.summary(since=since, client=p.client)
        return JSONResponse(
            {
                "since": since.isoformat() if since else None,
                "calls": sum(s.calls for s in stats),
                "errors": sum(s.errors for s in stats),
                "tools": [s.to_json() for s in stats],
            }
        )

    return [
        Route("/api/v1/tool/usage", record, methods=["POST"]),
        Route("/api/v1/tool/usage", summary, methods=["GET"]),
    ]
