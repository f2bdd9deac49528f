"""``GET /api/v1/reactor/rules``: every reactor rule with its definition, whether it is on,
how often it fired, its last fire and the cooldown left.

A thin adapter over ``reactor.runner.ReactorRunner.describe``; the answer is built through
its model, so the route cannot answer a shape the OpenAPI document does not describe.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.responses import Count


class RuleLister(Protocol):
    enabled: bool

    def describe(self) -> list[dict[str, Any]]: ...


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LastFire(_Out):
    at: datetime
    ok: bool
    outcome: Literal["started", "skipped", "failed"] = Field(
        description="started: the agent's cycle began; skipped: it was already running;"
        " failed: the action raised (see `error`)."
    )
    event_type: str
    error: str | None


class ReactorRule(_Out):
    name: str
    on: str = Field(description="The event type the rule listens for.")
    when: dict[str, Any] = Field(description="Conditions on the event's fields (all must hold).")
    do: dict[str, str] = Field(description="The action, e.g. {run_agent: dreaming}.")
    cooldown_s: Annotated[float, Field(ge=0)]
    enabled: bool = Field(description="False when switched off (rule, reactor.disabled, reactor).")
    builtin: bool = Field(description="One of the built-in rules, unchanged.")
    agent_available: bool = Field(
        description="Its agent is scheduled in this daemon (a rule whose agent is not never fires)."
    )
    fires: Count = Field(description="Fires recorded, all time.")
    held: Count = Field(description="Matches held back by the cooldown since the daemon started.")
    last_fire: LastFire | None
    cooldown_remaining_s: Annotated[float, Field(ge=0)]


class ReactorRules(_Out):
    enabled: bool = Field(description="reactor.enabled")
    rules: list[ReactorRule]


def build_reactor_routes(reactor: RuleLister) -> list[Route]:
    async def list_rules(request: Request) -> Response:
        answer = ReactorRules.model_validate(
            {"enabled": reactor.enabled, "rules": reactor.describe()}
        )
        return JSONResponse(answer.model_dump(mode="json"))

    return [Route("/api/v1/reactor/rules", list_rules, methods=["GET"])]
