"""REST face of metacognition:

* ``GET /api/v1/meta``: the latest observation of each audit kind and the recent history,
  newest first (``kind`` narrows both, ``limit`` bounds the history; an unknown kind is a
  422 naming the known ones).

The ``cognition`` section of ``/api/v1/health`` (the orchestrator's view) is modelled here
too (``CognitionHealth``), beside the routes; ``openapi.py`` documents them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.browse_routes import query_params
from mnemonic.cognition.metacognition import KINDS

Kind = Literal[
    "unembedded",
    "source_skew",
    "dead_ratio",
    "stale_consolidation",
    "irrelevant_feedback",
    "store_size",
    "recall_self_test",
]
assert set(Kind.__args__) == set(KINDS)  # type: ignore[attr-defined]


class MetaStore(Protocol):
    """What the route needs (``SQLiteMeta`` provides it)."""

    async def latest(self, kind: str | None = None) -> list[dict[str, Any]]: ...

    async def history(self, kind: str | None, limit: int) -> list[dict[str, Any]]: ...


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetaParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Kind | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 50


class MetaObservationOut(_Out):
    id: int
    at: str = Field(description="When the audit ran (ISO 8601, UTC).")
    kind: Kind
    severity: Literal["ok", "warning", "alert"]
    value: float | None = Field(description="What was measured (a share, seconds, bytes).")
    threshold: float | None = Field(description="The level crossed (else the warning level).")
    detail: dict[str, Any] = Field(description="Counts behind the value; ids, never content.")
    action: str = Field(description="What metacognition did about it ('' for nothing).")


class MetaAnswer(_Out):
    latest: dict[str, MetaObservationOut] = Field(description="Newest observation per kind.")
    history: list[MetaObservationOut] = Field(description="Recent observations, newest first.")


class CognitionAgent(_Out):
    name: str
    state: Literal["running", "idle", "failed"]
    last_run_at: str | None
    last_ok: bool | None
    next_run_at: str | None
    runs: int
    failures: int


class CognitionLlm(_Out):
    mode: str
    configured: bool
    breaker: str | None


class CognitionHealth(_Out):
    """The orchestrator's view of the thinking half (``/api/v1/health`` ``cognition``)."""

    agents: list[CognitionAgent]
    llm: CognitionLlm
    database_bytes: int = Field(description="Database with its WAL, at the last look.")
    memories: dict[str, int]
    self_test: dict[str, Any] | None = Field(
        description="The last recall self-test: at, hit_rate, probes, severity."
    )
    self_test_next_at: str | None
    last_tick_at: str | None
    ticks: int


def build_meta_routes(store: MetaStore) -> list[Route]:
    async def meta(request: Request) -> Response:
        p = query_params(request, MetaParams)
        latest = await store.latest(p.kind)
        history = await store.history(p.kind, p.limit)
        return JSONResponse({"latest": {o["kind"]: o for o in latest}, "history": history})

    return [Route("/api/v1/meta", meta, methods=["GET"])]
