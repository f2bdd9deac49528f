"""REST routes the dashboard's memory, timeline and graph views need beyond the browse API:

* ``GET /api/v1/graph/neighbourhood``: like ``/api/v1/graph`` but up to 2,000 nodes (the
  graph view draws them with WebGL), centred on a memory or drawn for a project;
* ``GET /api/v1/timeline``: memories counted per time bucket and type, and the episodes
  overlapping the range: one small answer whatever the number of memories;
* ``GET /api/v1/memories/{memory_id}/provenance``: the raw observation behind a memory, the
  watcher event recorded with it, its episode and the merges it took part in.

The request and answer models live here; ``openapi.py`` documents the routes with them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api import responses as r
from mnemonic.api.browse_routes import graph_json, query_params
from mnemonic.api.episode_routes import Episode, episode_json
from mnemonic.api.schemas import ProjectName, When, split_list
from mnemonic.api.serialize import raw_json
from mnemonic.app.browse import BrowseService
from mnemonic.app.service import MemoryService
from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.store.base import Filters
from mnemonic.store.dashboard import Merges, Timeline
from mnemonic.store.episodes import EpisodeRow
from mnemonic.store.models import MemoryState, MemoryType, Source

MAX_NODES = 2000
MAX_TIMELINE_EPISODES = 500
MIN_SPAN = timedelta(minutes=1)


class TimelineReader(Protocol):
    """``app/aggregates.py``: counted from the recall index's columns once it is ready."""

    async def span(self, filters: Filters) -> tuple[datetime, datetime] | None: ...

    async def timeline(
        self,
        filters: Filters,
        since: datetime,
        until: datetime,
        buckets: int,
        project: str | None,
        max_episodes: int,
    ) -> Timeline: ...


class ProvenanceReader(Protocol):
    """``store/dashboard.py``."""

    async def episode_of(self, memory_id: str) -> EpisodeRow | None: ...

    async def merges(self, memory_id: str) -> Merges: ...


# ---- requests ------------------------------------------------------------------------------


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NeighbourhoodParams(_Params):
    """Exactly one of ``memory_id`` (breadth-first around it) or ``project`` (its most
    recent memories and the edges among them); neither means the most recent memories."""

    memory_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    project: ProjectName | None = None
    state: list[MemoryState] | None = None
    depth: Annotated[int, Field(ge=1, le=3)] = 2
    limit: Annotated[int, Field(ge=1, le=MAX_NODES)] = 500

    _lists = field_validator("state", mode="before")(split_list)


class TimelineParams(_Params):
    """Without ``since``/``until`` the range is that of the memories passing the filters."""

    since: When | None = None
    until: When | None = None
    buckets: Annotated[int, Field(ge=1, le=1000)] = 120
    project: ProjectName | None = None
    source: list[Source] | None = None
    type: list[MemoryType] | None = None
    state: list[MemoryState] | None = None

    _lists = field_validator("source", "type", "state", mode="before")(split_list)


# ---- answers -------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Neighbourhood(r.Graph):
    center: str | None = Field(description="The memory the graph was drawn around.")


class TimelineBucket(_Out):
    start: datetime
    total: r.Count
    counts: dict[str, int] = Field(description="Memories in the bucket by type.")
    episodes: r.Count = Field(description="Episodes starting in the bucket.")


class TimelineAnswer(_Out):
    since: datetime
    until: datetime
    bucket_seconds: float
    total: r.Count
    buckets: list[TimelineBucket]
    episodes: list[Episode] = Field(
        description=f"Overlapping the range, oldest first; at most {MAX_TIMELINE_EPISODES}."
    )
    episodes_truncated: bool


class WatcherOrigin(_Out):
    watcher: str | None
    kind: str | None
    path: str | None
    cwd: str | None
    score: float | None
    event: dict[str, Any] | None = Field(description="What the watcher recorded with it.")


class MergedSource(_Out):
    memory_id: str
    previous_state: str
    unmerged_at: str | None


class Provenance(_Out):
    memory_id: str
    raw: r.RawMemory | None = Field(description="The observation as received (null if purged).")
    watcher: WatcherOrigin | None = Field(description="Null when no watcher perceived it.")
    episode: Episode | None
    merged_from: list[MergedSource] = Field(description="When it is a gist: its sources.")
    merged_into: list[str] = Field(description="Gists it was merged into (undone ones too).")


# ---- helpers -------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def watcher_origin(metadata: dict[str, Any]) -> dict[str, Any] | None:
    """The watcher event perception recorded in a raw memory's metadata, or None when the
    observation came through the API (no ``watcher`` key)."""
    watcher = _text(metadata.get("watcher"))
    if watcher is None:
        return None
    score = metadata.get("score")
    event = metadata.get("event")
    return {
        "watcher": watcher,
        "kind": _text(metadata.get("kind")),
        "path": _text(metadata.get("path")),
        "cwd": _text(metadata.get("cwd")),
        "score": float(score) if isinstance(score, int | float) else None,
        "event": event if isinstance(event, dict) else None,
    }


def timeline_range(
    since: datetime | None, until: datetime | None, span: tuple[datetime, datetime] | None
) -> tuple[datetime, datetime]:
    """The range to draw: what was asked, else the data's own span, else the last day.
    A range shorter than a minute widens to a minute around its middle, so memories
    written in one burst still spread over a readable chart."""
    if span is None:
        span_end = datetime.now(UTC)
        span = (span_end - timedelta(days=1), span_end)
    start = since if since is not None else span[0]
    end = until if until is not None else span[1]
    if start > end:
        raise InvalidInputError("since", "must not be after until")
    if end - start < MIN_SPAN:
        middle = start + (end - start) / 2
        start, end = middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
    return start, end


def _timeline_json(t: Timeline) -> dict[str, Any]:
    return {
        "since": t.since.isoformat(),
        "until": t.until.isoformat(),
        "bucket_seconds": t.bucket_seconds,
        "total": t.total,
        "buckets": [
            {
                "start": b.start.isoformat(),
                "total": sum(b.counts.values()),
                "counts": b.counts,
                "episodes": b.episodes,
            }
            for b in t.buckets
        ],
        "episodes": [episode_json(e) for e in t.episodes],
        "episodes_truncated": t.episodes_truncated,
    }


# ---- routes --------------------------------------------------------------------------------


def build_dashboard_routes(
    service: MemoryService,
    browse: BrowseService,
    timelines: TimelineReader,
    dashboard: ProvenanceReader,
) -> list[Route]:
    async def neighbourhood(request: Request) -> Response:
        p = query_params(request, NeighbourhoodParams)
        if p.memory_id is not None and p.project is not None:
            raise InvalidInputError("memory_id", "give memory_id or project, not both")
        # unlike /api/v1/graph, active and fading memories only unless states are named
        states = tuple(p.state) if p.state else Filters().states
        graph = await browse.graph(
            p.memory_id, Filters(project=p.project, states=states), p.depth, p.limit, MAX_NODES
        )
        return JSONResponse({**graph_json(graph), "center": p.memory_id})

    async def timeline(request: Request) -> Response:
        p = query_params(request, TimelineParams)
        filters = Filters(
            project=p.project,
            sources=tuple(p.source) if p.source else None,
            types=tuple(p.type) if p.type else None,
            states=tuple(p.state) if p.state else Filters().states,
        )
        span = None
        if p.since is None or p.until is None:
            span = await timelines.span(filters)
        since, until = timeline_range(p.since, p.until, span)
        found = await timelines.timeline(
            filters, since, until, p.buckets, p.project, MAX_TIMELINE_EPISODES
        )
        return JSONResponse(_timeline_json(found))

    async def provenance(request: Request) -> Response:
        memory = await service.get(request.path_params["memory_id"])
        try:
            raw: dict[str, Any] | None = raw_json(await service.get_raw(memory.raw_id))
        except NotFoundError:  # purged observation: the memory still stands
            raw = None
        episode = await dashboard.episode_of(memory.id)
        merges = await dashboard.merges(memory.id)
        return JSONResponse(
            {
                "memory_id": memory.id,
                "raw": raw,
                "watcher": watcher_origin(raw["metadata"]) if raw else None,
                "episode": episode_json(episode) if episode else None,
                "merged_from": [
                    {"memory_id": s, "previous_state": prev, "unmerged_at": undone}
                    for s, prev, undone in merges.sources
                ],
                "merged_into": merges.merged_into,
            }
        )

    return [
        Route("/api/v1/graph/neighbourhood", neighbourhood, methods=["GET"]),
        Route("/api/v1/timeline", timeline, methods=["GET"]),
        Route("/api/v1/memories/{memory_id}/provenance", provenance, methods=["GET"]),
    ]
