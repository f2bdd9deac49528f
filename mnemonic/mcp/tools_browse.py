"""Tools that look around: status, recall_project, recall_timeline, the session
(episode) tools, exclusions, and the thinking half's patterns, insights and abstractions."""

# No ``from __future__ import annotations``: the SDK reads these signatures at runtime.

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from mnemonic.mcp import models as m
from mnemonic.mcp.kit import Kit, MemoryTypeName
from mnemonic.mcp.tools_memory import READ, ProjectArg

WRITE_ONCE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)
DISMISS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True)
When = Annotated[str | None, Field(description="ISO 8601 date-time, e.g. 2026-05-01T00:00:00Z")]
Limit = Annotated[int, Field(ge=1, le=200)]
Cursor = Annotated[str | None, Field(max_length=200, description="next_cursor of a listing")]
EpisodeId = Annotated[str, Field(min_length=1, max_length=64, description="An episode id.")]
AbsId = Annotated[str, Field(min_length=1, max_length=64)]
T = TypeVar("T")


async def latest_handoff(kit: Kit, project: str) -> dict[str, Any] | None:
    got = await kit.call(
        "GET",
        "/api/v1/memories",
        params={"project": project or None, "type": "handoff", "limit": 1},
    )
    items: list[dict[str, Any]] = got["items"]
    return items[0] if items else None


def summary_text(episode: dict[str, Any], members: list[dict[str, Any]]) -> str:
    head = f"{episode['title']} ({episode['started_at']} to {episode['ended_at']})"
    lines = [head, episode.get("summary") or ""]
    lines += [f"- {x['summary']}" for x in members[:20]]
    if len(members) > 20:
        lines.append(f"... and {len(members) - 20} more")
    return "\n".join(line for line in lines if line)


def episode_list(got: dict[str, Any]) -> m.EpisodeList:
    """The REST page of episodes as the MCP answer (``items`` named ``episodes``)."""
    return m.EpisodeList(episodes=got["items"], next_cursor=got["next_cursor"])


async def listed(
    kit: Kit,
    ctx: Context,
    tool: str,
    project: str | None,
    path: str,
    shape: Callable[[Any], T],
    **params: Any,
) -> T:
    """Most tools are one REST read scoped to a project (the argument, else the session's):
    GET ``path`` with the project and ``params``, the answer shaped by ``shape``."""

    async def work(proj: str) -> T:
        return shape(await kit.call("GET", path, params={"project": proj or None, **params}))

    return await kit.run(ctx, tool, project, work)


async def fetched(
    kit: Kit,
    ctx: Context,
    tool: str,
    path: str,
    shape: Callable[[Any], T],
    *,
    method: str = "GET",
    body: Any = None,
) -> T:
    """One REST call that needs no project (an id names what it is about)."""

    async def work(proj: str) -> T:
        return shape(await kit.call(method, path, json_body=body))

    return await kit.run(ctx, tool, None, work)


def register_browse_tools(mcp: MCPServer, kit: Kit) -> None:
    @mcp.tool(
        name="status",
        title="Memory status",
        annotations=READ,
        description="Is memory working? The daemon's health, version, how many memories it"
        " holds by state, and the project this session is on.",
    )
    async def status(ctx: Context) -> m.StatusOut:
        async def work(proj: str) -> m.StatusOut:
            got = await kit.call("GET", "/api/v1/health")
            return m.StatusOut(**{**got, "session_project": proj or None})

        return await kit.run(ctx, "status", None, work)

    @mcp.tool(
        name="recall_project",
        title="Project overview",
        annotations=READ,
        description="An overview of one project's memory: how much there is, its newest"
        " memories and its latest handoff. Good first call in an unfamiliar project.",
    )
    async def recall_project(
        ctx: Context, project: ProjectArg = None, limit: Annotated[int, Field(ge=1, le=50)] = 10
    ) -> m.ProjectOverview:
        async def work(proj: str) -> m.ProjectOverview:
            projects = await kit.call("GET", "/api/v1/projects")
            row = next((p for p in projects["items"] if (p["name"] or "") == proj), None)
            recent = await kit.call(
                "GET", "/api/v1/memories", params={"project": proj or None, "limit": limit}
            )
            return m.ProjectOverview(
                project=proj,
                memories=row["memories"] if row else 0,
                active=row["active"] if row else 0,
                first_at=row["first_at"] if row else None,
                last_at=row["last_at"] if row else None,
                recent=recent["items"],
                latest_handoff=await latest_handoff(kit, proj),
            )

        return await kit.run(ctx, "recall_project", project, work)

    @mcp.tool(
        name="recall_timeline",
        title="Timeline",
        annotations=READ,
        description="Memories of a time range in time order (oldest first): what happened"
        " between `since` and `until` in this project. Filter by type; page with `cursor`.",
    )
    async def recall_timeline(
        ctx: Context,
        since: When = None,
        until: When = None,
        project: ProjectArg = None,
        type: list[MemoryTypeName] | None = None,
        limit: Limit = 50,
        cursor: Cursor = None,
    ) -> m.MemoryList:
        async def work(proj: str) -> m.MemoryList:
            params = {
                "project": proj or None,
                "since": since,
                "until": until,
                "type": ",".join(type) if type else None,
                "limit": limit,
                "cursor": cursor,
            }
            got = await kit.call("GET", "/api/v1/memories", params=params)
            items = list(reversed(got["items"]))  # newest first there
            return m.MemoryList(
                project=proj or None, memories=items, next_cursor=got["next_cursor"]
            )

        return await kit.run(ctx, "recall_timeline", project, work)

    @mcp.tool(
        name="list_sessions",
        title="Recent sessions",
        annotations=READ,
        description="The recent work sessions (episodes) of this project, newest first, each"
        " with a title and summary. Read one with recall_session.",
    )
    async def list_sessions(
        ctx: Context, project: ProjectArg = None, limit: Annotated[int, Field(ge=1, le=50)] = 10
    ) -> m.EpisodeList:
        return await listed(
            kit, ctx, "list_sessions", project, "/api/v1/episodes", episode_list, limit=limit
        )

    @mcp.tool(
        name="list_episodes",
        title="List episodes",
        annotations=READ,
        description="Episodes (stretches of work grouped by project and time) with every"
        " filter: project, state (open or closed), time range; page with `cursor`.",
    )
    async def list_episodes(
        ctx: Context,
        project: ProjectArg = None,
        state: Literal["open", "closed"] | None = None,
        since: When = None,
        until: When = None,
        limit: Limit = 50,
        cursor: Cursor = None,
    ) -> m.EpisodeList:
        page = {"state": state, "since": since, "until": until, "limit": limit, "cursor": cursor}
        return await listed(
            kit, ctx, "list_episodes", project, "/api/v1/episodes", episode_list, **page
        )

    @mcp.tool(
        name="recall_session",
        title="Read a session",
        annotations=READ,
        description="One work session (episode): its title, summary and memories in time order.",
    )
    async def recall_session(episode_id: EpisodeId, ctx: Context) -> m.EpisodeDetail:
        path = f"/api/v1/episodes/{episode_id}"
        return await fetched(kit, ctx, "recall_session", path, m.EpisodeDetail.model_validate)

    @mcp.tool(
        name="session_summary",
        title="Summarise a session",
        annotations=READ,
        description="A few lines on a work session: the given episode, else the latest one of"
        " this project. Use it to pick up where the last session stopped.",
    )
    async def session_summary(
        ctx: Context, episode_id: EpisodeId | None = None, project: ProjectArg = None
    ) -> m.SessionSummary:
        async def work(proj: str) -> m.SessionSummary:
            target = episode_id
            if target is None:
                got = await kit.call(
                    "GET", "/api/v1/episodes", params={"project": proj or None, "limit": 1}
                )
                if not got["items"]:
                    text = f"No session recorded yet for project {proj or '(none)'}."
                    return m.SessionSummary(episode=None, text=text, memories=[])
                target = got["items"][0]["id"]
            detail = await kit.call("GET", f"/api/v1/episodes/{target}")
            return m.SessionSummary(
                episode=detail["episode"],
                text=summary_text(detail["episode"], detail["memories"]),
                memories=detail["memories"],
            )

        return await kit.run(ctx, "session_summary", project, work)

    @mcp.tool(
        name="exclude_path",
        title="Exclude a path",
        annotations=WRITE_ONCE,
        description="Stop watching a file or folder (absolute or ~ path): nothing under it"
        " is remembered from now on. Use for secrets, generated files, private folders.",
    )
    async def exclude_path(
        path: Annotated[str, Field(min_length=1, max_length=4096, pattern=r"^[/~]")],
        ctx: Context,
        reason: Annotated[str, Field(max_length=200)] | None = None,
    ) -> m.ExclusionOut:
        body: dict[str, Any] = {"path": path}
        if reason:
            body["reason"] = reason
        shape = m.ExclusionOut.model_validate
        return await fetched(
            kit, ctx, "exclude_path", "/api/v1/exclusions", shape, method="POST", body=body
        )

    @mcp.tool(
        name="list_exclusions",
        title="List exclusions",
        annotations=READ,
        description="The paths memory does not watch (set by hand or found automatically).",
    )
    async def list_exclusions(ctx: Context) -> m.Exclusions:
        path = "/api/v1/exclusions"
        return await fetched(kit, ctx, "list_exclusions", path, m.Exclusions.model_validate)

    register_thinking_tools(mcp, kit)


def register_thinking_tools(mcp: MCPServer, kit: Kit) -> None:
    """Patterns, insights and abstractions: what the background agents concluded. They
    list alike (``items`` and ``next_cursor``) and dismiss alike (POST ``.../dismiss``)."""

    async def listing(
        ctx: Context, tool: str, project: str | None, path: str, **params: Any
    ) -> m.Listing:
        return await listed(kit, ctx, tool, project, path, m.Listing.model_validate, **params)

    async def dismiss(ctx: Context, tool: str, path: str) -> m.Dismissed:
        shape = m.Dismissed.model_validate
        return await fetched(kit, ctx, tool, f"{path}/dismiss", shape, method="POST")

    @mcp.tool(
        name="get_patterns",
        title="Patterns",
        annotations=READ,
        description="Recurring patterns memory found across many memories of this project"
        " (e.g. a kind of error that keeps coming back), strongest first.",
    )
    async def get_patterns(
        ctx: Context,
        project: ProjectArg = None,
        min_strength: Annotated[float, Field(ge=0, le=1)] = 0.0,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> m.Listing:
        page = {"min_strength": min_strength, "limit": limit, "cursor": cursor}
        return await listing(ctx, "get_patterns", project, "/api/v1/patterns", **page)

    @mcp.tool(
        name="get_insights",
        title="Insights",
        annotations=READ,
        description="Insights the dreaming agent drew by connecting memories across sessions,"
        " newest first, each with its sources.",
    )
    async def get_insights(
        ctx: Context, project: ProjectArg = None, limit: Limit = 20, cursor: Cursor = None
    ) -> m.Listing:
        page = {"limit": limit, "cursor": cursor}
        return await listing(ctx, "get_insights", project, "/api/v1/insights", **page)

    @mcp.tool(
        name="get_abstractions",
        title="Abstractions",
        annotations=READ,
        description="Principles and axioms generalised from patterns (level pattern,"
        " principle or axiom), strongest first.",
    )
    async def get_abstractions(
        ctx: Context,
        project: ProjectArg = None,
        level: Literal["pattern", "principle", "axiom"] | None = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> m.Listing:
        page = {"level": level, "limit": limit, "cursor": cursor}
        return await listing(ctx, "get_abstractions", project, "/api/v1/abstractions", **page)

    @mcp.tool(
        name="dismiss_pattern",
        title="Dismiss a pattern",
        annotations=DISMISS,
        description="Mark a pattern as wrong or useless: it stops influencing recall.",
    )
    async def dismiss_pattern(pattern_id: AbsId, ctx: Context) -> m.Dismissed:
        return await dismiss(ctx, "dismiss_pattern", f"/api/v1/patterns/{pattern_id}")

    @mcp.tool(
        name="dismiss_abstraction",
        title="Dismiss an abstraction",
        annotations=DISMISS,
        description="Mark a principle or axiom (or pattern) as wrong: it is no longer offered.",
    )
    async def dismiss_abstraction(abstraction_id: AbsId, ctx: Context) -> m.Dismissed:
        path = f"/api/v1/abstractions/{abstraction_id}"
        return await dismiss(ctx, "dismiss_abstraction", path)
