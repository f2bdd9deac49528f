"""REST routes for episodes: ``GET /api/v1/episodes`` (filters, cursor) and
``GET /api/v1/episodes/{episode_id}`` (the episode and its memories in time order).

Thin adapters over ``store.episodes.SQLiteEpisodes`` (reads only); the request and answer
models live here, and ``openapi.py`` documents both routes with them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.responses import Count, Unit
from mnemonic.api.routes import field_errors, invalid
from mnemonic.api.schemas import ProjectName, When
from mnemonic.app.browse import decode_cursor, encode_cursor
from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.store.episodes import EpisodeRow, MemberBrief
from mnemonic.store.models import MemoryState, MemoryType, Source
from mnemonic.timeutil import to_db

MAX_MEMBERS = 2000  # memories one episode answer lists (memory_count has the total)


class EpisodeReader(Protocol):
    async def get(self, episode_id: str) -> EpisodeRow | None: ...

    async def memories_of(self, episode_id: str, limit: int) -> list[MemberBrief]: ...

    async def list(
        self,
        *,
        project: str | None = None,
        state: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        after: tuple[str, str] | None = None,
    ) -> list[EpisodeRow]: ...


# ---- request and answer models -----------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EpisodeParams(_Body):
    """``GET /api/v1/episodes``: newest first; ``since``/``until`` keep episodes that
    overlap that time."""

    project: ProjectName | None = None
    state: Literal["open", "closed"] | None = None
    since: When | None = None
    until: When | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: Annotated[str, Field(max_length=200)] | None = None


class Episode(_Out):
    id: str
    project: str | None
    state: Literal["open", "closed"]
    title: str
    summary: str
    concepts: list[str]
    files: list[str]
    commands: list[str]
    started_at: datetime
    ended_at: datetime
    salience: Unit
    memory_count: Count
    described_by: Literal["heuristic", "llm"]
    closed_at: datetime | None


class EpisodePage(_Out):
    items: list[Episode]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page.")


class EpisodeMember(_Out):
    id: str
    summary: str
    timestamp: datetime
    type: MemoryType
    state: MemoryState
    source: Source


class EpisodeDetail(_Out):
    episode: Episode
    memories: list[EpisodeMember] = Field(
        description=f"In time order; at most {MAX_MEMBERS} (see `memory_count`)."
    )
    truncated: bool


# ---- serialisation -----------------------------------------------------------------------


def episode_json(row: EpisodeRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "project": row.project or None,
        "state": row.state,
        "title": row.title,
        "summary": row.summary,
        "concepts": list(row.concepts),
        "files": list(row.files),
        "commands": list(row.commands),
        "started_at": row.started_at.isoformat(),
        "ended_at": row.ended_at.isoformat(),
        "salience": round(row.salience, 4),
        "memory_count": row.memory_count,
        "described_by": row.described_by,
        "closed_at": row.closed_at.isoformat() if row.closed_at else None,
    }


def member_json(member: MemberBrief) -> dict[str, Any]:
    return {
        "id": member.id,
        "summary": member.summary,
        "timestamp": member.timestamp.isoformat(),
        "type": member.type,
        "state": member.state,
        "source": member.source,
    }


def _after(cursor: str | None) -> tuple[str, str] | None:
    if cursor is None:
        return None
    key = decode_cursor(cursor)
    if (
        not isinstance(key, list)
        or len(key) != 2
        or not all(isinstance(part, str) and part for part in key)
    ):
        raise InvalidInputError("cursor", "not a cursor this server issued")
    return key[0], key[1]


def _params(request: Request) -> EpisodeParams:
    """The query string validated like a body: unknown or malformed parameters are 422
    (every parameter takes one value; a repeated one counts by its last)."""
    data = {key: request.query_params.getlist(key)[-1] for key in request.query_params}
    try:
        return EpisodeParams.model_validate(data)
    except ValidationError as exc:
        raise invalid(field_errors(exc, "query")) from None


def build_episode_routes(store: EpisodeReader) -> list[Route]:
    async def list_episodes(request: Request) -> Response:
        p = _params(request)
        rows = await store.list(
            project=p.project,
            state=p.state,
            since=p.since,
            until=p.until,
            limit=p.limit + 1,
            after=_after(p.cursor),
        )
        items = rows[: p.limit]
        more = len(rows) > p.limit and items
        cursor = encode_cursor([to_db(items[-1].started_at), items[-1].id]) if more else None
        return JSONResponse({"items": [episode_json(r) for r in items], "next_cursor": cursor})

    async def get_episode(request: Request) -> Response:
        episode_id = request.path_params["episode_id"]
        row = await store.get(episode_id)
        if row is None:
            raise NotFoundError("episode", episode_id)
        members = await store.memories_of(episode_id, MAX_MEMBERS + 1)
        return JSONResponse(
            {
                "episode": episode_json(row),
                "memories": [member_json(m) for m in members[:MAX_MEMBERS]],
                "truncated": len(members) > MAX_MEMBERS,
            }
        )

    return [
        Route("/api/v1/episodes", list_episodes, methods=["GET"]),
        Route("/api/v1/episodes/{episode_id}", get_episode, methods=["GET"]),
    ]
