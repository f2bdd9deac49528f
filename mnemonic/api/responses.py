"""Response bodies of the REST API, as pydantic models.

They exist for the OpenAPI document (``openapi.py``): the routes build their answers with
``serialize.py`` and the route modules, and these models describe exactly those shapes.
Every model forbids extra fields, so the schema says ``additionalProperties: false``; the
fuzzing test validates every answer against it, and a field added to a serializer without
its model here fails that test instead of drifting silently out of the documentation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemonic.api.meta_routes import CognitionHealth
from mnemonic.store.models import MemoryState, MemoryType, RawStatus, Relation, Source

Unit = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int, Field(ge=0)]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- errors ---------------------------------------------------------------------------------


class Error(_Out):
    """Every 4xx/5xx answer: a readable message and the status repeated in the body."""

    error: str
    status: int
    retry: str | None = Field(None, description="503 only: when writes resume.")


class FieldError(_Out):
    field: str = Field(description="Dotted path of the offending field ('body' or 'query').")
    message: str


class ValidationError(_Out):
    """422: the body or query had the wrong shape; one entry per offending field."""

    error: str
    details: list[FieldError]
    status: Literal[422]


# ---- probes ---------------------------------------------------------------------------------


class Live(_Out):
    status: Literal["ok"]


class Ready(_Out):
    ready: bool


# ---- memories -------------------------------------------------------------------------------


class Memory(_Out):
    """An encoded memory (never its vector)."""

    id: str
    content: str
    summary: str
    concepts: list[str]
    type: MemoryType
    source: Source
    project: str | None
    state: MemoryState
    salience: Unit
    significance: Unit
    utility: Annotated[float, Field(ge=0)]
    access_count: Count
    timestamp: datetime
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]
    raw_id: str
    merged_into: str | None = Field(description="The gist this memory was merged into.")


class RawMemory(_Out):
    """The observation as received (after redaction) and its encoding status."""

    id: str
    content: str
    source: Source
    type: MemoryType | None
    project: str | None
    timestamp: datetime
    created_at: datetime
    metadata: dict[str, Any]
    status: RawStatus
    memory_id: str | None
    attempts: Count
    error: str | None


class Remembered(_Out):
    raw_id: str
    memory_id: str | None
    status: RawStatus


class RememberedBatch(_Out):
    results: list[Remembered]


class PatternLift(_Out):
    """The pattern (a recurring theme) that lifted this memory: it is part of its evidence."""

    id: str
    title: str | None
    lift: float


class ActivationStep(_Out):
    """The link spreading activation crossed to reach a result: the strongest arrival, as
    recall took it. Follow ``from`` through the other results' ``via`` for the whole path;
    a source that is not a result is named by its id and ``from_summary``."""

    from_: str = Field(alias="from", description="The memory the activation came from.")
    from_summary: str = Field(
        description="Its summary's (or content's) first line, up to 120 characters."
    )
    relation: Relation
    strength: float = Field(description="The link's strength when recall crossed it.")
    hop: Annotated[int, Field(ge=1)] = Field(
        description="1: the source is an entry point (a full-text or vector hit)."
    )


class Explain(_Out):
    """Why a result ranked where it did: additive contributions that sum to the score."""

    contributions: dict[str, float]
    multiplier: float
    direct: float
    spread: float
    fts_rank: int | None
    vector_rank: int | None
    clause_rank: int | None = Field(
        description="Rank among the nearest memories of the question's clauses ('How old was"
        " I when Alex was born?' also asks 'How old was I' and 'Alex was born') and of its"
        " wording without a speaker's name ('What does Melanie do to destress?' also asks"
        " 'What does do to destress?', `recall.common_name_share`); null when the"
        " question has neither, this memory is not among them, `recall.clause_weight` is 0"
        " or recall ran without vectors (the SQL path while the index builds).",
    )
    cosine: float | None
    pattern: PatternLift | None = Field(
        None, description="A pattern the query matched that holds this memory as evidence."
    )
    superseded_by: list[str] = Field(
        default_factory=list,
        description="Newer memories that replace this one (it ranks below them).",
    )
    supersedes: list[str] = Field(
        default_factory=list, description="Older memories this one replaces."
    )
    archived_fallback: bool = Field(
        False,
        description="Archived, found because active and fading memories answered weakly"
        " (ranked below, `recall.archived_factor`).",
    )
    via: ActivationStep | None = Field(
        None,
        description="How spreading activation reached this memory (the link that brought it"
        " the most); null when it did not (a full-text or vector hit only).",
    )
    episode: str | None = Field(
        None,
        description="The episode of this result, when the question asked about several events"
        " (a count, a total, a comparison) and recall spread its results over episodes"
        " (`recall.episode_spread`); null otherwise.",
    )


class RecallResult(_Out):
    memory: Memory
    score: float
    explain: Explain | None = Field(None, description="Present when the query asked for it.")


class QueryAnswer(_Out):
    query_id: str = Field(description="Quote it in /api/v1/feedback.")
    results: list[RecallResult]
    took_ms: Annotated[float, Field(ge=0)]
    evidence: Unit = Field(
        description="How surely the query has real matches, from 0 (none: every score is 0"
        " and any positive `min_score` answers nothing) to 1: the best entry-point hit's"
        " meaning and words, or the question's clauses met one memory each. The best"
        " candidate scores exactly this."
    )


class FeedbackDone(_Out):
    query_id: str
    updated: Count


# ---- health ---------------------------------------------------------------------------------


class Reembedding(_Out):
    running: bool
    done: Count
    total: Count


class EmbeddingHealth(_Out):
    model: str
    dim: int
    backlog: Count
    reembedding: Reembedding


class VectorIndexHealth(_Out):
    path: str
    vectors: Count
    storage: str
    bytes: Count


class CheckpointHealth(_Out):
    enabled: bool = Field(description="recall.index_snapshot.")
    saves: Count = Field(description="Checkpoints saved since the daemon started.")
    last_reason: str | None = Field(description="Why the last one was saved.")
    last_seconds: float | None = Field(description="How long it took (writes waited).")
    last_bytes: Count | None
    last_position: Count | None = Field(description="The change-log position it was taken at.")
    last_error: str | None = Field(description="Why the last attempt did not save.")


class RecallIndexHealth(_Out):
    state: Literal["empty", "building", "ready", "stale"] = Field(
        description="ready = recall runs in memory; otherwise it answers through SQL."
    )
    build_seconds: float | None = Field(description="How long the latest build took.")
    built_from: Literal["sqlite", "snapshot"] | None = Field(
        description="Where the latest build read the index from (snapshot: the last"
        " checkpoint, with the changes logged since replayed onto it)."
    )
    replayed: Count = Field(
        0, description="Logged changes replayed onto the checkpoint at the latest load."
    )
    damaged: Count = Field(
        0,
        description="Stored vector rows the latest build from SQLite left out because their"
        " size disagrees with their row; they are embedded again in the background.",
    )
    checkpoint: CheckpointHealth | None = Field(
        None, description="The background checkpoints of the index (index/checkpoints.py)."
    )
    builds: Count
    last_error: str | None
    supersessions: Count = Field(
        0, description="Directed `supersedes` edges recall knows (older memory -> newer)."
    )
    patterns: Count = Field(
        0, description="Active patterns whose evidence recall may lift (`recall.pattern_weight`)."
    )
    entry_points: dict[str, dict[str, Any]] = Field(
        description="Per entry point (full_text, vectors, graph, columns): kind and size."
    )


class AgentStatus(_Out):
    name: str
    state: str = Field(description="starting, running, restarting, finished or stopped.")
    restarts: Count
    last_error: str | None
    last_error_at: datetime | None


class AgentHealth(AgentStatus):
    detail: dict[str, Any] = Field(description="Agent-specific progress and counters.")


class Health(_Out):
    status: Literal["ok", "degraded"]
    reasons: list[str]
    version: str
    pid: int
    url: str
    uptime_s: Annotated[float, Field(ge=0)]
    memories: dict[str, int]
    embedding: EmbeddingHealth
    vector_index: VectorIndexHealth
    recall_index: RecallIndexHealth
    agents: list[AgentHealth]
    llm: dict[str, Any] = Field(
        default_factory=dict,
        description="The LLM (`configured`, provider, model, breaker) and which mode each"
        " task runs in (`tasks`: llm or heuristic).",
    )
    cognition: CognitionHealth | None = Field(
        None, description="The orchestrator's view: agents, LLM mode, database size, self-test."
    )
    schema_version: int


# ---- browsing -------------------------------------------------------------------------------


class MemoryPage(_Out):
    items: list[Memory]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page.")


class Node(_Out):
    """A memory in a graph or a list of links: enough to draw and label it."""

    id: str
    summary: str
    type: MemoryType
    source: Source
    project: str | None
    state: MemoryState
    salience: Unit
    timestamp: datetime


class Link(_Out):
    memory: Node
    relation: Relation
    strength: Unit
    activation_count: Count
    created_at: datetime


class Amendment(_Out):
    old_content: str
    new_content: str
    reason: str | None
    created_at: datetime


class MemoryContext(_Out):
    memory: Memory
    associations: list[Link]
    neighbours: list[Node] = Field(description="Same-project memories just before and after.")
    amendments: list[Amendment]


class Edge(_Out):
    source: str
    target: str
    relation: Relation
    strength: Unit


class Graph(_Out):
    nodes: list[Node]
    edges: list[Edge]
    truncated: bool = Field(description="True when the node limit cut the graph short.")


class Association(_Out):
    source: str
    target: str
    relation: Relation
    strength: Unit
    activation_count: Count
    created_at: datetime
    updated_at: datetime


class AssociationPage(_Out):
    items: list[Association]
    next_cursor: str | None


class Project(_Out):
    name: str | None = Field(description="null for memories stored without a project.")
    memories: Count
    active: Count
    first_at: datetime | None
    last_at: datetime | None


class Projects(_Out):
    items: list[Project]


class EventContext(_Out):
    id: str
    parent_id: str | None


class EventOut(_Out):
    """A bus event as the activity log and ``/ws`` send it."""

    type: str
    at: datetime
    context: EventContext
    payload: dict[str, Any]


class Activity(_Out):
    items: list[EventOut]


# ---- stats ----------------------------------------------------------------------------------


class MemoryCounts(_Out):
    total: Count
    by_state: dict[str, int]
    by_source: dict[str, int]
    by_type: dict[str, int]
    by_project: dict[str, int] = Field(description="The 100 largest projects ('' = none).")
    associations: Count


class FailedRaw(_Out):
    raw_id: str
    error: str | None
    attempts: Count
    created_at: datetime


class RawCounts(_Out):
    by_status: dict[str, int]
    failed: list[FailedRaw]


class Subscriber(_Out):
    name: str
    depth: Count
    capacity: Count
    delivered: Count
    dropped: Count
    failed: Count


class BusStats(_Out):
    published: Count
    dropped: Count
    subscribers: list[Subscriber]


class WsClient(_Out):
    depth: Count
    dropped: Count


class WebSocketStats(_Out):
    clients: Count
    per_client: list[WsClient]


class LastError(_Out):
    at: datetime
    component: str
    error: str
    raw_id: str | None = None


class Exclusion(_Out):
    path: str = Field(description="Absolute path; everything below it is ignored too.")
    reason: str = Field(description="`manual`, the reason given, or `auto:<drop reason>`.")
    origin: Literal["user", "auto"]
    created_at: datetime


class ExclusionAdded(Exclusion):
    created: bool = Field(description="False when the path was already excluded.")


class Exclusions(_Out):
    items: list[Exclusion]


class ExclusionRemoved(_Out):
    path: str
    removed: bool


class FilterStats(_Out):
    seen: Count
    accepted: Count
    dropped: dict[str, int] = Field(description="Drops by reason, zeros included.")
    auto_excluded: Count
    llm_errors: Count
    exclusions: Count
    frequency_keys: Count


class PerceptionStats(_Out):
    filter: FilterStats
    watcher_drops: dict[str, int] = Field(description="Drops the watchers made themselves.")
    remembered: Count
    write_errors: Count = Field(description="Events lost to storage errors (disk full...).")


class Stats(_Out):
    memories: MemoryCounts
    raw: RawCounts
    queues: dict[str, int]
    bus: BusStats
    websocket: WebSocketStats
    perception: PerceptionStats
    agents: list[AgentStatus]
    last_errors: list[LastError]
