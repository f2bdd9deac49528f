"""REST routes of the LLM layer: ``GET /api/v1/llm/status`` (is an LLM configured and
usable, its breaker, its counters) and ``GET /api/v1/llm/usage`` (what judgments cost, by
day, operation and model). The request and answer models live here beside the routes;
``openapi.py`` documents the routes with them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api import responses as r
from mnemonic.api.browse_routes import query_params
from mnemonic.api.schemas import When
from mnemonic.store.llm_usage import UsageSummary, UsageTotals
from mnemonic.timeutil import utcnow


class StatusSource(Protocol):
    def status(self) -> dict[str, Any]: ...


class UsageSource(Protocol):
    async def summary(self, since: datetime | None = None) -> UsageSummary: ...


# ---- requests ------------------------------------------------------------------------------


class UsageParams(BaseModel):
    """At most one of ``since`` and ``days``; neither means every row."""

    model_config = ConfigDict(extra="forbid")

    since: When | None = Field(None, description="Only calls at or after this time.")
    days: Annotated[int, Field(ge=1, le=3650)] | None = Field(
        None, description="Only calls of the last N days."
    )

    @model_validator(mode="after")
    def _one_window(self) -> UsageParams:
        if self.since is not None and self.days is not None:
            raise ValueError("give since or days, not both")
        return self


# ---- answers -------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UsageTotalsOut(_Out):
    calls: r.Count
    failures: r.Count
    prompt_tokens: r.Count
    completion_tokens: r.Count
    cost_usd: Annotated[float, Field(ge=0, description="Estimated from the price table.")]
    latency_ms_avg: Annotated[float, Field(ge=0)]


class UsageGroup(UsageTotalsOut):
    key: str = Field(description="The day (YYYY-MM-DD, UTC), operation or model.")


class LlmUsage(_Out):
    since: datetime | None
    totals: UsageTotalsOut
    by_day: list[UsageGroup]
    by_operation: list[UsageGroup]
    by_model: list[UsageGroup]


class BreakerOut(_Out):
    state: Literal["closed", "open", "half_open"]
    consecutive_failures: r.Count
    times_opened: r.Count
    retry_in_s: Annotated[float, Field(ge=0, description="Until the next probe (open only).")]


class LlmStatus(_Out):
    configured: bool = Field(description="False for provider none (or an unusable one).")
    provider: str
    base_url: str
    model: str
    mode: Literal["llm", "heuristic"] = Field(description="What tasks use right now.")
    json_mode: Literal["auto", "schema", "prompt"] | None
    schema_supported: bool | None = Field(
        description="False once the server refused response_format (auto mode)."
    )
    breaker: BreakerOut | None
    calls: r.Count
    failures: r.Count
    skipped: r.Count = Field(description="Calls refused by the open breaker.")
    rejected: r.Count = Field(description="Calls that found no free slot in time.")
    in_flight: r.Count
    last_error: str | None
    reason: str | None = Field(description="Why a configured LLM is not used.")


# ---- routes --------------------------------------------------------------------------------


def _totals(totals: UsageTotals) -> dict[str, Any]:
    return totals.to_json()


def usage_json(summary: UsageSummary) -> dict[str, Any]:
    def groups(items: list[tuple[str, UsageTotals]]) -> list[dict[str, Any]]:
        return [{"key": key, **_totals(t)} for key, t in items]

    return {
        "since": summary.since.isoformat() if summary.since else None,
        "totals": _totals(summary.totals),
        "by_day": groups(summary.by_day),
        "by_operation": groups(summary.by_operation),
        "by_model": groups(summary.by_model),
    }


def build_llm_routes(client: StatusSource, usage: UsageSource) -> list[Route]:
    async def llm_status(request: Request) -> Response:
        return JSONResponse(client.status())

    async def llm_usage(request: Request) -> Response:
        params = query_params(request, UsageParams)
        since = params.since
        if params.days is not None:
            since = utcnow() - timedelta(days=params.days)
        return JSONResponse(usage_json(await usage.summary(since)))

    return [
        Route("/api/v1/llm/status", llm_status, methods=["GET"]),
        Route("/api/v1/llm/usage", llm_usage, methods=["GET"]),
    ]
