"""The structured results of the MCP tools (each tool's ``outputSchema``).

Fields a model needs to act on are named and typed; the rest of what the REST API answers
passes through (``extra="allow"``), so a new REST field reaches clients without a change
here and the schema still tells a model what it can rely on.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class MemoryOut(_Loose):
    id: str
    content: str
    type: str
    project: str | None = None
    state: str
    timestamp: str


class Hit(_Loose):
    memory: MemoryOut
    score: float


class Remembered(BaseModel):
    memory_id: str | None = Field(description="The stored memory (None while still encoding).")
    raw_id: str
    status: str = Field(description="encoded, reinforced (a duplicate strengthened), queued...")
    project: str
    supersedes: list[str] = Field(default_factory=list)
    links: list[str] = Field(default_factory=list)


class Recalled(BaseModel):
    query_id: str = Field(description="Pass to the feedback tool to rate these results.")
    project: str | None = Field(description="The project searched (None: every project).")
    results: list[Hit]
    took_ms: float


class BatchAnswer(BaseModel):
    query: str
    query_id: str
    results: list[Hit]


class BatchRecalled(BaseModel):
    project: str | None
    answers: list[BatchAnswer]


class ContextOut(BaseModel):
    project: str | None
    based_on: list[str] = Field(description="Ids of the recent memories the search started from.")
    memories: list[MemoryOut] = Field(description="Relevant, not yet shown in this session.")
    query_id: str | None


class MemoryList(BaseModel):
    project: str | None
    memories: list[MemoryOut]
    next_cursor: str | None = None


class ProjectOverview(BaseModel):
    project: str
    memories: int
    active: int
    first_at: str | None
    last_at: str | None
    recent: list[MemoryOut]
    latest_handoff: MemoryOut | None


class EpisodeOut(_Loose):
    id: str
    project: str | None = None
    state: str
    title: str
    summary: str
    started_at: str
    ended_at: str
    memory_count: int


class EpisodeList(BaseModel):
    episodes: list[EpisodeOut]
    next_cursor: str | None = None


class EpisodeMemberOut(_Loose):
    id: str
    summary: str
    timestamp: str
    type: str


class EpisodeDetail(BaseModel):
    episode: EpisodeOut
    memories: list[EpisodeMemberOut]
    truncated: bool


class SessionSummary(BaseModel):
    episode: EpisodeOut | None = Field(description="None: no session recorded for the project.")
    text: str = Field(description="The summary in a few lines.")
    memories: list[EpisodeMemberOut]


class Forgotten(BaseModel):
    memory_id: str
    purged: bool
    state: str | None = Field(description="archived (recoverable), or None when purged.")


class Amended(BaseModel):
    memory: MemoryOut


class FeedbackOut(BaseModel):
    query_id: str
    updated: int


class MemoryCheck(BaseModel):
    memory: MemoryOut
    current: bool = Field(description="Active or fading and superseded by nothing.")
    superseded_by: list[str]
    supersedes: list[str]
    note: str


class StatusOut(_Loose):
    status: str
    version: str
    memories: dict[str, Any]
    session_project: str | None = None


class Listing(BaseModel):
    """Patterns, insights or abstractions as the REST API lists them."""

    items: list[dict[str, Any]]
    next_cursor: str | None = None


class Dismissed(BaseModel):
    id: str
    state: str


class Exclusion(_Loose):
    path: str


class ExclusionOut(_Loose):
    path: str
    created: bool | None = None


class Exclusions(BaseModel):
    items: list[Exclusion]


class Handoff(BaseModel):
    memory_id: str | None
    project: str
    content: str = Field(description="Exactly what was stored.")
