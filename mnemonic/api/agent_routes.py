"""REST routes for the background agents of the thinking half:

* ``GET /api/v1/agents``: every scheduled agent with its schedule, last run, next run and
  last summary;
* ``POST /api/v1/agents/{name}/run``: one cycle now. ``?wait=true`` (the default) answers
  with the cycle's record when it ends; ``wait=false`` answers 202 at once. 409 while a
  cycle of that agent is under way (cycles never overlap), 404 for an unknown name.

The answer models live here beside the routes; ``openapi.py`` documents them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.routes import invalid
from mnemonic.errors import NotFoundError
from mnemonic.runtime.agent_runs import AgentRegistry, AlreadyRunning

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentRun(_Out):
    id: int
    trigger: str
    started_at: str
    finished_at: str | None
    ok: bool | None
    took_ms: float | None
    summary: dict[str, Any]
    error: str | None


class AgentSchedule(_Out):
    interval_s: float | None
    cron: str | None


class AgentInfo(_Out):
    name: str
    schedule: AgentSchedule
    running: bool
    current_run: AgentRun | None
    last_run: AgentRun | None
    next_run_at: str | None
    runs: int
    failures: int
    detail: dict[str, Any]


class AgentList(_Out):
    items: list[AgentInfo]


class AgentRunAnswer(_Out):
    agent: str
    state: str  # finished | started
    run: AgentRun


def _wait(request: Request) -> bool:
    raw = request.query_params.get("wait", "true").lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise invalid([{"field": "query.wait", "message": "must be true or false"}])


def build_agent_routes(agents: AgentRegistry) -> list[Route]:
    async def list_agents(request: Request) -> Response:
        return JSONResponse({"items": [a.describe() for a in agents.all()]})

    async def run_agent(request: Request) -> Response:
        name = request.path_params["name"]
        wait = _wait(request)
        agent = agents.get(name)
        if agent is None:
            raise NotFoundError("agent", name)
        try:
            if wait:
                record = await agent.run_now("manual")
                return JSONResponse(
                    {"agent": name, "state": "finished", "run": record.to_json()},
                    status_code=200,
                )
            started = agent.start_now("manual")
        except AlreadyRunning as exc:
            return JSONResponse(
                {"error": f"{exc}; try again when it ends", "status": 409}, status_code=409
            )
        return JSONResponse(
            {"agent": name, "state": "started", "run": started.to_json()}, status_code=202
        )

    return [
        Route("/api/v1/agents", list_agents, methods=["GET"]),
        Route("/api/v1/agents/{name}/run", run_agent, methods=["POST"]),
    ]
