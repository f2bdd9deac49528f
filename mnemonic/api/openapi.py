"""``/openapi.json``: the API described from one declarative table, ``ROUTE_DOCS``.

Each operation of the app has one ``RouteDoc`` entry: its method and Starlette path
template, a summary, and the pydantic models of its query string, body and answer. The
error answers follow from the entry (a body can be malformed JSON, too large or of the
wrong type; a path id can name nothing; a protected route needs the token), so an entry
lists only the errors peculiar to that route.

Adding a route means adding one entry here::

    RouteDoc("GET", "/api/v1/things/{thing_id}", "Read one thing",
             response=r.Thing, query=ThingParams, tags=("things",))

``response`` names a model in ``responses.py`` that matches what the route returns;
``body`` and ``query`` reuse the request models of ``schemas.py``. Path parameters come
from the template (describe new names in ``PATH_PARAMS``). A WebSocket route is written
with the method ``"WEBSOCKET"``; a ``Mount`` needs one entry at its path with any method.
``tests/test_openapi.py`` fails when a route of the daemon's app has no entry, or an entry
names no route, so the document cannot drift from the app.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from mnemonic.api import responses as r
from mnemonic.api.abstraction_routes import (
    AbstractionDetail,
    AbstractionPage,
    AbstractionParams,
    Dismissed,
    PatternParams,
)
from mnemonic.api.agent_routes import AgentList, AgentRunAnswer
from mnemonic.api.consolidation_routes import ConsolidationHistory, HistoryParams, Unmerged
from mnemonic.api.dashboard_routes import (
    Neighbourhood,
    NeighbourhoodParams,
    Provenance,
    TimelineAnswer,
    TimelineParams,
)
from mnemonic.api.docs import ASSETS
from mnemonic.api.enrichment_routes import ReencodeBody, ReencodeQueued
from mnemonic.api.episode_routes import EpisodeDetail, EpisodePage, EpisodeParams
from mnemonic.api.insight_routes import InsightDetail, InsightPage, InsightParams
from mnemonic.api.link_routes import LinkAnswer, LinkBody
from mnemonic.api.llm_routes import LlmStatus, LlmUsage, UsageParams
from mnemonic.api.meta_routes import MetaAnswer, MetaParams
from mnemonic.api.purge_routes import ForgetAnswer, PurgeAnswer, PurgeBody
from mnemonic.api.reactor_routes import ReactorRules
from mnemonic.api.schemas import (
    ActivityParams,
    AmendBody,
    AssociationParams,
    BatchBody,
    ContextParams,
    ExclusionBody,
    ExclusionParams,
    FeedbackBody,
    GraphParams,
    ListParams,
    QueryBody,
    RememberBody,
)
from mnemonic.api.settings_routes import TokenRotated, WatcherList
from mnemonic.api.supersession_routes import SupersedeAnswer, SupersedeBody, SupersessionChain
from mnemonic.api.tool_usage_routes import (
    ToolCallBody,
    ToolCallRecorded,
    ToolUsage,
    ToolUsageParams,
)
from mnemonic.api.web_routes import LoggedOut, LoginLink, SessionInfo

log = logging.getLogger(__name__)

JSON = "application/json"
WEBSOCKET = "WEBSOCKET"
_REF = "#/components/schemas/{model}"
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_PARAM = re.compile(r"{([a-zA-Z_][a-zA-Z0-9_]*)(?::[a-z]+)?}")

_ID = {"type": "string", "minLength": 1}
# name in a path template -> (description, schema)
PATH_PARAMS: dict[str, tuple[str, dict[str, Any]]] = {
    "memory_id": ("Id of a memory (as returned by a write, a list or a recall).", _ID),
    "raw_id": ("Id of a raw memory (`raw_id` of a write).", _ID),
    "episode_id": ("Id of an episode (as listed by `GET /api/v1/episodes`).", _ID),
    "insight_id": ("Id of an insight (as listed by `GET /api/v1/insights`).", _ID),
    "abstraction_id": ("Id of a pattern, principle or axiom.", _ID),
    "name": ("Name of a background agent (`GET /api/v1/agents`).", _ID),
    "older_id": ("Id of the older memory of a supersession.", _ID),
    "asset": ("File name of a docs page asset.", {"type": "string", "enum": sorted(ASSETS)}),
    "file": ("Path of a dashboard file inside that folder (`web/`).", _ID),
}

ERRORS: dict[int, tuple[str, type[BaseModel]]] = {
    400: ("The body is not valid JSON.", r.Error),
    401: ("Missing or wrong bearer token.", r.Error),
    403: ("Host is not a loopback name, or Origin is not the daemon's own.", r.Error),
    404: ("No such id (or no such path).", r.Error),
    409: ("Conflict: the target is busy or not in a state that allows this.", r.Error),
    413: ("The body is larger than `server.max_body_bytes`.", r.Error),
    415: ("The body is not `application/json`.", r.Error),
    421: ("Host names a loopback address on another port.", r.Error),
    422: (
        "Body or query string of the wrong shape; `details` names each field.",
        r.ValidationError,
    ),
    503: ("Storage cannot take writes (disk full, read-only); reads keep working.", r.Error),
}
_SUCCESS = {
    201: "Created (and encoded).",
    202: "Accepted; encoding continues in the background.",
    503: "Not ready (starting or stopping).",
}


@dataclass(frozen=True, slots=True)
class QueryParam:
    """A query parameter not backed by a pydantic model (a flag the route reads itself)."""

    name: str
    schema: dict[str, Any]
    description: str


@dataclass(frozen=True, slots=True)
class RouteDoc:
    """One operation of the API. See the module docstring for how to add one."""

    method: str
    path: str
    summary: str
    response: type[BaseModel] | None = None
    ok: tuple[int, ...] = (200,)
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    flags: tuple[QueryParam, ...] = ()
    errors: tuple[int, ...] = ()
    auth: bool = True
    media_type: str = JSON
    description: str = ""
    tags: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.path


PURGE = QueryParam(
    "purge",
    {"type": "boolean", "default": False},
    "Delete for good instead of archiving (the answer is then a purge report).",
)
WAIT = QueryParam(
    "wait",
    {"type": "boolean", "default": False},
    "Wait for encoding: 201 when done, 202 with the pending status after the timeout.",
)
_MEMORY = "/api/v1/memories/{memory_id}"

ROUTE_DOCS: tuple[RouteDoc, ...] = (
    # ---- probes and documents (no token) ----------------------------------------------
    RouteDoc("GET", "/livez", "The process answers", r.Live, auth=False, tags=("probes",)),
    RouteDoc(
        "GET",
        "/readyz",
        "Store and embedder are ready (503 while starting or stopping)",
        r.Ready,
        ok=(200, 503),
        auth=False,
        tags=("probes",),
    ),
    RouteDoc(
        "GET",
        "/metrics",
        "Prometheus metrics",
        media_type="text/plain",
        auth=False,
        description="Request counts and durations by route template, recall duration, "
        "memories by state, queue depths, bus drops, build info.",
        tags=("probes",),
    ),
    RouteDoc("GET", "/openapi.json", "This document", auth=False, tags=("docs",)),
    RouteDoc(
        "GET",
        "/docs",
        "Browsable API reference (works offline)",
        media_type="text/html",
        auth=False,
        tags=("docs",),
    ),
    RouteDoc(
        "GET",
        "/docs/{asset}",
        "A static asset of the reference page",
        errors=(404,),
        media_type="text/*",
        auth=False,
        tags=("docs",),
    ),
    # ---- the dashboard (api/web_routes.py, api/session.py) ----------------------------
    RouteDoc(
        "GET",
        "/",
        "The dashboard (single page; its data comes from this API with a session cookie)",
        media_type="text/html",
        auth=False,
        tags=("dashboard",),
    ),
    *(
        RouteDoc(
            "GET",
            f"/{name}",
            "A static file of the dashboard",
            media_type="text/*",
            auth=False,
            tags=("dashboard",),
        )
        for name in ("app.js", "style.css")
    ),
    *(
        RouteDoc(
            "GET",
            f"/{folder}/{{file:path}}",
            f"A static file of the dashboard's `{folder}/` folder",
            media_type="*/*",
            auth=False,
            tags=("dashboard",),
        )
        for folder in ("lib", "views", "vendor")
    ),
    RouteDoc(
        "GET",
        "/login",
        "Redeem a one-time login link: session cookies, then a redirect to `/`",
        ok=(303,),
        media_type="text/plain",
        auth=False,
        flags=(QueryParam("code", {"type": "string"}, "The code of a login link."),),
        description="Sets the HttpOnly, SameSite=Strict cookie `mnemonic_session` and the "
        "readable `mnemonic_csrf` cookie, which state-changing requests echo in "
        "`X-CSRF-Token`. A code works once, for two minutes; an unknown, used or expired "
        "code answers 403.",
        tags=("dashboard",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/dashboard/login-links",
        "A one-time dashboard login URL (bearer token only; `mnemonic open` uses it)",
        LoginLink,
        ok=(201,),
        description="403 when called with a session cookie instead of the bearer token.",
        tags=("dashboard",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/dashboard/session",
        "Whether this request is logged in, and how (bearer token or session cookie)",
        SessionInfo,
        tags=("dashboard",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/dashboard/logout",
        "End this browser session and clear its cookies",
        LoggedOut,
        tags=("dashboard",),
    ),
    # ---- memories ---------------------------------------------------------------------
    RouteDoc(
        "POST",
        "/api/v1/memories",
        "Remember one observation",
        r.Remembered,
        ok=(201, 202),
        body=RememberBody,
        flags=(WAIT,),
        tags=("memories",),
        description="Stored at once and searchable by full text; encoded (embedded, "
        "linked) in the background. 202 unless `wait=true` saw it encoded.",
    ),
    RouteDoc(
        "POST",
        "/api/v1/memories/batch",
        "Remember up to 1000 observations",
        r.RememberedBatch,
        ok=(201, 202),
        body=BatchBody,
        flags=(WAIT,),
        tags=("memories",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/memories",
        "List memories, newest first",
        r.MemoryPage,
        query=ListParams,
        tags=("memories",),
    ),
    RouteDoc("GET", _MEMORY, "Read one memory", r.Memory, tags=("memories",)),
    RouteDoc(
        "PATCH",
        _MEMORY,
        "Amend a memory's content",
        r.Memory,
        body=AmendBody,
        description="Re-encodes and re-embeds; links are kept and the old text is recorded "
        "as an amendment.",
        tags=("memories",),
    ),
    RouteDoc(
        "DELETE",
        _MEMORY,
        "Forget a memory (archive it), or with purge=true delete it for good",
        ForgetAnswer,
        flags=(PURGE,),
        errors=(422,),
        tags=("memories",),
        description="Without `purge` the memory is archived: hidden from default recall, "
        "nothing destroyed. `purge=true` removes it, the memories merged into it, their raw "
        "observations, amendments, vectors, links and the query logs that name them, then "
        "rewrites the database file (VACUUM, WAL truncated) so the bytes are gone.",
    ),
    RouteDoc(
        "POST",
        _MEMORY + "/unarchive",
        "Bring an archived memory back (archived -> active)",
        r.Memory,
        tags=("memories",),
        description="A memory in any other state is answered unchanged (200).",
    ),
    RouteDoc(
        "POST",
        _MEMORY + "/unmerge",
        "Undo a consolidation merge: sources back to their states, the gist archived",
        Unmerged,
        errors=(422,),
        tags=("memories",),
        description="422 when the memory is no gist, its merge was already undone, or it "
        "is itself merged into a later gist.",
    ),
    RouteDoc(
        "GET",
        "/api/v1/consolidation/history",
        "Consolidation cycles, newest first, with their counts",
        ConsolidationHistory,
        query=HistoryParams,
        tags=("agents",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/purge",
        "Delete memories for good: a list of ids, a project, or what a query finds",
        PurgeAnswer,
        body=PurgeBody,
        errors=(404,),
        tags=("memories",),
        description="`dry_run: true` only lists what would be removed (with each "
        "memory's first line). A query is matched over every state and is not logged. 404 "
        "when an id names no memory (nothing is purged then). An audit row records that a "
        "purge happened and how much it removed, never what.",
    ),
    RouteDoc(
        "GET",
        _MEMORY + "/context",
        "A memory with its links, neighbours and amendments",
        r.MemoryContext,
        query=ContextParams,
        tags=("memories",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/raw/{raw_id}",
        "A raw memory and its encoding status",
        r.RawMemory,
        tags=("memories",),
    ),
    # ---- recall -----------------------------------------------------------------------
    RouteDoc(
        "POST",
        "/api/v1/query",
        "Recall memories",
        r.QueryAnswer,
        body=QueryBody,
        description="Full text and meaning, spread over associations, ranked and "
        "diversified. `explain` adds each signal's contribution and `via`, the link "
        "spreading activation crossed to reach the result (null for a direct hit only).",
        tags=("recall",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/feedback",
        "Rate the results of a query",
        r.FeedbackDone,
        body=FeedbackBody,
        errors=(404,),
        tags=("recall",),
        description="Moves the rated memories' utility and the links that led to them. 404 "
        "for an unknown query id; 422 for memory ids that were not its results.",
    ),
    # ---- browsing ---------------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/graph",
        "Nodes and edges around a memory or for a project",
        r.Graph,
        query=GraphParams,
        errors=(404,),
        tags=("browse",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/associations",
        "List associations, strongest first",
        r.AssociationPage,
        query=AssociationParams,
        errors=(404,),
        tags=("browse",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/associations",
        "Link two memories by hand (201 new, 200 when the pair already had that relation)",
        LinkAnswer,
        ok=(201, 200),
        body=LinkBody,
        errors=(404, 422),
        tags=("browse",),
        description="Spreading activation follows the link at once. An existing link keeps"
        " the larger strength. `supersedes` has its own route"
        " (`POST /api/v1/memories/{memory_id}/supersedes`).",
    ),
    RouteDoc(
        "GET", "/api/v1/projects", "Projects and their memory counts", r.Projects, tags=("browse",)
    ),
    RouteDoc(
        "GET",
        "/api/v1/activity",
        "Recent events, newest first",
        r.Activity,
        query=ActivityParams,
        tags=("browse",),
    ),
    # ---- llm --------------------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/llm/status",
        "The LLM: configured or not, mode (llm|heuristic), breaker, counters",
        LlmStatus,
        tags=("llm",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/llm/usage",
        "LLM calls, tokens, latency and estimated cost by day, operation and model",
        LlmUsage,
        query=UsageParams,
        tags=("llm",),
        description="`since` (a time) or `days` (the last N days), not both; neither "
        "means every recorded call. Costs are estimates from the editable price table.",
    ),
    # ---- MCP tool usage (api/tool_usage_routes.py; /mcp itself is JSON-RPC, see mcp/) --
    RouteDoc(
        "POST",
        "/api/v1/tool/usage",
        "Record one MCP tool call (the MCP server does, over either transport)",
        ToolCallRecorded,
        ok=(201,),
        body=ToolCallBody,
        tags=("mcp",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/tool/usage",
        "MCP tool calls by tool: calls, errors, p50/p95 latency",
        ToolUsage,
        query=ToolUsageParams,
        tags=("mcp",),
        description="`since` (a time) or `days` (the last N days), not both; `client` keeps "
        "one client's calls.",
    ),
    # ---- abstractions -----------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/patterns",
        "List patterns (recurring themes), strongest first",
        AbstractionPage,
        query=PatternParams,
        tags=("abstractions",),
        description="A pattern's strength grows with its live evidence and halves without "
        "new evidence; grounding is the share of its evidence still live.",
    ),
    RouteDoc(
        "GET",
        "/api/v1/abstractions",
        "List abstractions (patterns, principles, axioms), strongest first",
        AbstractionPage,
        query=AbstractionParams,
        tags=("abstractions",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/abstractions/{abstraction_id}",
        "An abstraction with its evidence memories and children",
        AbstractionDetail,
        tags=("abstractions",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/patterns/{abstraction_id}/dismiss",
        "Dismiss a pattern (idempotent); it is never found again from the same theme",
        Dismissed,
        tags=("abstractions",),
        description="404 when the id names no pattern.",
    ),
    RouteDoc(
        "POST",
        "/api/v1/abstractions/{abstraction_id}/dismiss",
        "Dismiss a pattern, principle or axiom (idempotent)",
        Dismissed,
        tags=("abstractions",),
    ),
    # ---- episodes ---------------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/episodes",
        "List episodes (stretches of work per project), newest first",
        EpisodePage,
        query=EpisodeParams,
        tags=("episodes",),
        description="`since`/`until` keep episodes that overlap that time. Open episodes "
        "are still growing; a closed one has its final title and summary.",
    ),
    RouteDoc(
        "GET",
        "/api/v1/episodes/{episode_id}",
        "An episode and its memories in time order",
        EpisodeDetail,
        tags=("episodes",),
    ),
    # ---- dashboard views ----------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/graph/neighbourhood",
        "Nodes and typed edges around a memory or for a project, up to 2,000 nodes",
        Neighbourhood,
        query=NeighbourhoodParams,
        errors=(404,),
        tags=("browse",),
        description="Breadth-first from `memory_id` (at most `depth` hops), or the most "
        "recent memories of `project` and the edges among them; `truncated` says the limit "
        "cut it short. Giving both `memory_id` and `project` is 422.",
    ),
    RouteDoc(
        "GET",
        "/api/v1/timeline",
        "Memories per time bucket and type, and the episodes in the range",
        TimelineAnswer,
        query=TimelineParams,
        tags=("browse",),
        description="Counted in the database, so the answer stays `buckets` rows at any "
        "size. Without `since`/`until` the range is the filtered memories' own span; "
        "`since` after `until` is 422.",
    ),
    RouteDoc(
        "GET",
        "/api/v1/memories/{memory_id}/provenance",
        "Where a memory came from: raw observation, watcher event, episode, merges",
        Provenance,
        errors=(404,),
        tags=("browse",),
    ),
    # ---- insights ---------------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/insights",
        "List the dreamer's insights, newest first",
        InsightPage,
        query=InsightParams,
        tags=("insights",),
        description="Insights are memories of type `insight` (source `dreaming`): terms "
        "that recur together across episodes. `before` keeps those written before a time.",
    ),
    RouteDoc(
        "GET",
        "/api/v1/insights/{insight_id}",
        "An insight and the memories it came from",
        InsightDetail,
        tags=("insights",),
        errors=(404,),
    ),
    # ---- metacognition ----------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/meta",
        "Metacognition's audits: the latest observation per kind and recent history",
        MetaAnswer,
        query=MetaParams,
        tags=("agents",),
        description="Kinds: unembedded, source_skew, dead_ratio, stale_consolidation, "
        "irrelevant_feedback, store_size (bytes), recall_self_test (hit rate; lower is "
        "worse). Each with severity ok/warning/alert and what was done (`action`).",
    ),
    # ---- reactor ----------------------------------------------------------------------
    RouteDoc(
        "GET",
        "/api/v1/reactor/rules",
        "Reactor rules: event -> action, cooldown, fire count and last fire",
        ReactorRules,
        tags=("agents",),
        description="Rules come from `reactor.rules` in config.yaml (built-ins by default). "
        "A rule whose agent is not scheduled here never fires (`agent_available`).",
    ),
    # ---- daemon -----------------------------------------------------------------------
    RouteDoc(
        "GET", "/api/v1/health", "Health, counts, embedder and agents", r.Health, tags=("daemon",)
    ),
    RouteDoc(
        "GET",
        "/api/v1/stats",
        "Counts, queues, bus drops, agents, last errors",
        r.Stats,
        tags=("daemon",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/exclusions",
        "Runtime exclusions: paths perception ignores",
        r.Exclusions,
        tags=("perception",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/exclusions",
        "Exclude a path from perception (now and after restarts)",
        r.ExclusionAdded,
        ok=(200, 201),
        body=ExclusionBody,
        description="201 when the path is newly excluded, 200 when it already was.",
        tags=("perception",),
    ),
    RouteDoc(
        "DELETE",
        "/api/v1/exclusions",
        "Stop excluding a path",
        r.ExclusionRemoved,
        query=ExclusionParams,
        errors=(404,),
        tags=("perception",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/watchers",
        "Watchers: on or off, live state, and the roots or files each watches",
        WatcherList,
        tags=("perception",),
        description="Roots come from config.yaml (`config_key`); this route only reads them.",
    ),
    RouteDoc(
        "POST",
        "/api/v1/token/rotate",
        "Replace the API token (written to the token file, in force at once)",
        TokenRotated,
        errors=(409,),
        tags=("daemon",),
        description="The old bearer token and every dashboard session stop working at once; "
        "the new token is answered once and written where the CLI reads it. A dashboard "
        "session that asks gets new session cookies. 409 when the token comes from "
        "`MNEMONIC_TOKEN` (change it there and restart).",
    ),
    # ---- background agents and supersessions (issue 12) -----------------------------------
    RouteDoc(
        "POST",
        "/api/v1/reencode",
        "Queue memories encoded without an LLM for LLM encoding",
        ReencodeQueued,
        ok=(202,),
        body=ReencodeBody,
        errors=(409,),
        description="Opt-in after an LLM outage: memories stored since `since` (7d, 12h or "
        "an ISO time) that carry only their heuristic encoding are queued (at most `limit`, "
        "newest first); the enrichment agent works through them within its hourly budget. "
        "409 when no LLM is configured.",
        tags=("agents",),
    ),
    RouteDoc(
        "GET",
        "/api/v1/agents",
        "Background agents: schedule, last run, next run, last summary",
        AgentList,
        tags=("agents",),
    ),
    RouteDoc(
        "POST",
        "/api/v1/agents/{name}/run",
        "Run one cycle of an agent now",
        AgentRunAnswer,
        ok=(200, 202),
        flags=(
            QueryParam(
                "wait",
                {"type": "boolean", "default": True},
                "Answer when the cycle ends (200) or at once (202).",
            ),
        ),
        errors=(404, 409, 422),
        description="409 while a cycle of that agent is under way (cycles never overlap); "
        "422 for a `wait` that is not a boolean.",
        tags=("agents",),
    ),
    RouteDoc(
        "GET",
        _MEMORY + "/supersessions",
        "What replaces a memory and what it replaces",
        SupersessionChain,
        errors=(404,),
        tags=("memories",),
    ),
    RouteDoc(
        "POST",
        _MEMORY + "/supersedes",
        "Mark this memory as superseding an older one",
        SupersedeAnswer,
        ok=(200, 201),
        body=SupersedeBody,
        errors=(404,),
        description="Both stay stored; recall ranks the older one below this one. 201 when "
        "new, 200 when it already was so. 404 when this memory is unknown; 422 when the "
        "older one is, or is this one.",
        tags=("memories",),
    ),
    RouteDoc(
        "DELETE",
        _MEMORY + "/supersedes/{older_id}",
        "Take a supersession back",
        SupersedeAnswer,
        errors=(404, 422),
        description="404 when this memory or the supersession is unknown; 422 when the "
        "older memory is unknown or is this one.",
        tags=("memories",),
    ),
    RouteDoc(
        WEBSOCKET,
        "/ws",
        "Live event stream (WebSocket)",
        ok=(101,),
        tags=("daemon",),
        flags=(
            QueryParam("types", {"type": "string"}, "Comma-separated event types to receive."),
            QueryParam("project", {"type": "string"}, "Only events of this project."),
            QueryParam("token", {"type": "string"}, "The token, for browsers (no headers)."),
        ),
        description='Every bus event as `{"type", "at", "context", "payload"}`; '
        '`{"type": "dropped", "count": N}` when this client fell behind. A refused upgrade '
        "(Host, Origin, token) answers 403; a plain GET without an upgrade answers 404.",
    ),
)


# ---- walking the app --------------------------------------------------------------------


def route_keys(routes: Iterable[BaseRoute]) -> list[tuple[str, str]]:
    """(method, path template) of every operation; HEAD is implied by GET."""
    keys: list[tuple[str, str]] = []
    for route in routes:
        if isinstance(route, Route):
            methods = sorted((route.methods or {"GET"}) - {"HEAD"})
            keys.extend((m, route.path) for m in methods)
        elif isinstance(route, WebSocketRoute):
            keys.append((WEBSOCKET, route.path))
        elif isinstance(route, Mount):
            keys.append(("*", route.path))
    return keys


def _documents(doc: RouteDoc, key: tuple[str, str]) -> bool:
    return doc.key == key or (key[0] == "*" and doc.path == key[1])


def undocumented(routes: Iterable[BaseRoute], docs: Sequence[RouteDoc]) -> list[str]:
    return [
        f"{m} {p}" for m, p in route_keys(routes) if not any(_documents(d, (m, p)) for d in docs)
    ]


def stale(routes: Iterable[BaseRoute], docs: Sequence[RouteDoc]) -> list[str]:
    """Entries that document no route of the app."""
    keys = route_keys(routes)
    return [f"{d.method} {d.path}" for d in docs if not any(_documents(d, k) for k in keys)]


def for_app(routes: Iterable[BaseRoute], docs: Sequence[RouteDoc]) -> list[RouteDoc]:
    """The entries of the routes this app has (a test app may mount only some)."""
    keys = route_keys(routes)
    return [d for d in docs if any(_documents(d, k) for k in keys)]


# ---- building the document --------------------------------------------------------------


class _Components:
    """Schemas shared by reference; each model's own ``$defs`` are hoisted in here."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}

    def add(self, name: str, schema: dict[str, Any]) -> None:
        if self.schemas.setdefault(name, schema) != schema:
            raise ValueError(f"two different schemas are both named {name!r}")

    def ref(self, model: type[BaseModel], mode: Literal["validation", "serialization"]) -> Any:
        schema = model.model_json_schema(ref_template=_REF, mode=mode)
        self.hoist(schema)
        self.add(model.__name__, schema)
        return {"$ref": _REF.format(model=model.__name__)}

    def hoist(self, schema: dict[str, Any]) -> None:
        for name, sub in schema.pop("$defs", {}).items():
            self.add(name, sub)


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``X | None`` in a query string means "absent": drop the null branch."""
    options = [o for o in schema.get("anyOf", ()) if o != {"type": "null"}]
    if len(options) != 1:
        return schema
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default", "title")}
    if schema.get("default") is not None:
        rest["default"] = schema["default"]
    return {**options[0], **rest}


def _query_params(model: type[BaseModel], components: _Components) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=_REF, mode="validation")
    components.hoist(schema)
    required = set(schema.get("required", ()))
    out = []
    for name, raw in schema["properties"].items():
        prop = _without_null(raw)
        prop.pop("title", None)
        param: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
        if prop.get("type") == "array":
            param |= {"style": "form", "explode": True}
        if "description" in prop:
            param["description"] = prop.pop("description")
        out.append(param | {"schema": prop})
    return out


def _parameters(doc: RouteDoc, components: _Components) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    for name in _PARAM.findall(doc.path):
        description, schema = PATH_PARAMS.get(name, (name, _ID))
        params.append(
            {"name": name, "in": "path", "required": True, "description": description}
            | {"schema": schema}
        )
    if doc.query is not None:
        params.extend(_query_params(doc.query, components))
    params.extend(
        {
            "name": f.name,
            "in": "query",
            "required": False,
            "description": f.description,
            "schema": f.schema,
        }
        for f in doc.flags
    )
    return params


def error_statuses(doc: RouteDoc) -> list[int]:
    """The failures every route of this kind can answer, plus the entry's own."""
    codes = {403, 421, *doc.errors}
    if doc.auth:
        codes.add(401)
    if doc.body is not None:
        codes |= {400, 413, 415, 422}
    if doc.query is not None:
        codes.add(422)
    if _PARAM.search(doc.path):
        codes.add(404)
    if doc.auth and doc.method in _WRITES:
        codes.add(503)
    if doc.method == WEBSOCKET:
        codes = {403, 404}
    return sorted(codes)


def _success(doc: RouteDoc, status: int, components: _Components) -> dict[str, Any]:
    if status == 101:
        return {"description": "Switching Protocols: the WebSocket is open."}
    if doc.response is not None:
        schema = components.ref(doc.response, "serialization")
    elif doc.media_type == JSON:
        schema = {"type": "object"}
    else:
        schema = {"type": "string"}
    description = _SUCCESS.get(status, "OK")
    return {"description": description, "content": {doc.media_type: {"schema": schema}}}


def _operation(doc: RouteDoc, components: _Components) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": _operation_id(doc),
        "summary": doc.summary,
        "tags": list(doc.tags),
        "parameters": _parameters(doc, components),
        "security": [{"bearer": []}] if doc.auth else [],
        "responses": {},
    }
    if doc.description:
        op["description"] = doc.description
    if doc.method == WEBSOCKET:
        op["security"] = [{"bearer": []}, {"queryToken": []}]
        op["x-websocket"] = True
    if doc.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {JSON: {"schema": components.ref(doc.body, "validation")}},
        }
    for status in doc.ok:
        op["responses"][str(status)] = _success(doc, status, components)
    for status in error_statuses(doc):
        if str(status) in op["responses"]:
            raise ValueError(f"{doc.method} {doc.path}: {status} is both success and error")
        text, model = ERRORS[status]
        if doc.method == WEBSOCKET:
            text = {403: "Upgrade refused: Host, Origin or token.", 404: "Not an upgrade."}[status]
        content = {JSON: {"schema": components.ref(model, "serialization")}}
        op["responses"][str(status)] = {"description": text, "content": content}
    return op


def _operation_id(doc: RouteDoc) -> str:
    words = re.sub(r"[^a-zA-Z0-9]+", "_", doc.path).strip("_")
    return f"{doc.method.lower()}_{words or 'root'}"


def build_spec(docs: Sequence[RouteDoc], *, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document for these entries."""
    components = _Components()
    paths: dict[str, dict[str, Any]] = {}
    for doc in docs:
        method = "get" if doc.method == WEBSOCKET else doc.method.lower()
        # OpenAPI names a path parameter `{file}`; Starlette's `{file:path}` is routing only
        path = _PARAM.sub(lambda m: "{" + m.group(1) + "}", doc.path)
        if method in paths.get(path, {}):
            raise ValueError(f"two entries for {doc.method} {doc.path}")
        paths.setdefault(path, {})[method] = _operation(doc, components)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mnemonic",
            "version": version,
            "description": "A local-first memory daemon for LLM agents. Every `/api/` route "
            "needs `Authorization: Bearer <token>` (`mnemonic token` prints it).",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.schemas.items())),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "queryToken": {"type": "apiKey", "in": "query", "name": "token"},
            },
        },
    }


def openapi_endpoint(routes: Sequence[BaseRoute], *, version: str) -> Route:
    """``GET /openapi.json`` for ``routes`` (read at the first request, so the list may
    still grow while the app is being assembled); built once and cached."""
    cache: list[bytes] = []

    async def openapi(request: Request) -> Response:
        if not cache:
            missing = undocumented(routes, ROUTE_DOCS)
            if missing:
                log.warning("routes missing from /openapi.json: %s", ", ".join(missing))
            spec = build_spec(for_app(routes, ROUTE_DOCS), version=version)
            cache.append(json.dumps(spec, separators=(",", ":")).encode())
        return Response(cache[0], media_type=JSON)

    return Route("/openapi.json", openapi, methods=["GET"])
