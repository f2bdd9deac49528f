"""Tools over single memories: remember, recall, batch_recall, get_context, forget, amend,
feedback, check_memory, create_handoff. Descriptions are written for the model that calls
them: when to use the tool, what comes back, what to do next."""

# No ``from __future__ import annotations``: the SDK reads these signatures at runtime.

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from mnemonic.mcp import models as m
from mnemonic.mcp.kit import Kit, MemoryTypeName, SourceName, StateName

READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False)
DESTROY = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True)
EDIT = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False)

ProjectArg = Annotated[
    str | None,
    Field(
        description="Project name. Leave empty to use this session's project (from the"
        " client's workspace folder)."
    ),
]
MemoryId = Annotated[str, Field(min_length=1, max_length=64, description="A memory id.")]
HANDOFF_SECTIONS = (
    ("completed", "Completed"),
    ("pending", "Pending"),
    ("to_test", "To test"),
    ("known_issues", "Known issues"),
    ("next_hint", "Next"),
)


def handoff_text(project: str, parts: dict[str, str]) -> str:
    """The handoff as stored: a heading and each non-empty section verbatim."""
    lines = [f"Handoff for project {project}" if project else "Handoff"]
    for key, title in HANDOFF_SECTIONS:
        text = parts.get(key, "").strip()
        if text:
            lines.append(f"\n{title}:\n{text}")
    return "\n".join(lines)


def _scope(project: str, all_projects: bool) -> str | None:
    return None if all_projects or not project else project


def register_memory_tools(mcp: MCPServer, kit: Kit) -> None:  # noqa: PLR0915 - one closure per tool
    @mcp.tool(
        name="remember",
        title="Remember",
        annotations=WRITE,
        description="Store something worth knowing later: a decision and its reason, an error"
        " and its fix, a learning, an insight. Write one self-contained fact per call, with the"
        " names, paths and numbers that make it findable. The type is guessed when left out."
        " `supersedes` lists ids of memories this one replaces (they stop showing up as"
        " current); `links` lists ids of related memories (linked as `related`, so recalling"
        " one brings the others).",
    )
    async def remember(
        content: Annotated[str, Field(min_length=1, max_length=100_000)],
        ctx: Context,
        type: MemoryTypeName | None = None,
        project: ProjectArg = None,
        supersedes: Annotated[list[str], Field(max_length=20)] | None = None,
        links: Annotated[list[str], Field(max_length=20)] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> m.Remembered:
        async def work(proj: str) -> m.Remembered:
            meta = dict(metadata or {})
            for linked in links or []:  # before writing: a bad id stops the call unwritten
                await kit.call("GET", f"/api/v1/memories/{linked}")  # 404 names it
            body: dict[str, Any] = {"content": content, "source": "mcp", "project": proj}
            if type is not None:
                body["type"] = type
            if meta:
                body["metadata"] = meta
            got = await kit.call(
                "POST", "/api/v1/memories", json_body=body, params={"wait": "true"}
            )
            new_id = got.get("memory_id")
            done = []
            for older in supersedes or []:
                if new_id is None:
                    break
                await kit.call(
                    "POST", f"/api/v1/memories/{new_id}/supersedes", json_body={"older_id": older}
                )
                done.append(older)
            linked_to = []
            for linked in links or []:
                if new_id is None:
                    break
                await kit.call(
                    "POST",
                    "/api/v1/associations",
                    json_body={"source_id": new_id, "target_id": linked, "relation": "related"},
                )
                linked_to.append(linked)
            return m.Remembered(
                memory_id=new_id,
                raw_id=got["raw_id"],
                status=got["status"],
                project=proj,
                supersedes=done,
                links=linked_to,
            )

        return await kit.run(ctx, "remember", project, work)

    @mcp.tool(
        name="recall",
        title="Recall",
        annotations=READ,
        description="Search memory before you act: past decisions, errors and their fixes,"
        " conventions of this project. Ask in plain words (what you are about to do or the"
        " error you see). Searches this session's project unless `project` is given or"
        " `all_projects` is true. Every filter of the REST query is available; `explain`"
        " adds why each result ranked; `as_of` recalls memory as it stood at that time;"
        " `asked_at` is when the question was asked, if not now (time phrases such as"
        " 'two weeks ago' count back from it)."
        " Rate useful results with the feedback tool (pass `query_id`).",
    )
    async def recall(
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        project: ProjectArg = None,
        all_projects: bool = False,
        type: list[MemoryTypeName] | None = None,
        source: list[SourceName] | None = None,
        state: list[StateName] | None = None,
        since: Annotated[str | None, Field(description="ISO 8601 date-time")] = None,
        until: Annotated[str | None, Field(description="ISO 8601 date-time")] = None,
        min_salience: Annotated[float, Field(ge=0, le=1)] | None = None,
        min_score: Annotated[float, Field(ge=0, le=1)] | None = None,
        explain: bool = False,
        as_of: Annotated[
            str | None, Field(description="ISO 8601 date-time: recall memory as it stood then")
        ] = None,
        asked_at: Annotated[
            str | None,
            Field(description="ISO 8601 date-time: 'two weeks ago' in the query counts from here"),
        ] = None,
    ) -> m.Recalled:
        async def work(proj: str) -> m.Recalled:
            scope = _scope(proj, all_projects)
            body: dict[str, Any] = {"query": query, "limit": limit, "explain": explain}
            extra = {
                "project": scope,
                "type": type,
                "source": source,
                "state": state,
                "since": since,
                "until": until,
                "min_salience": min_salience,
                "min_score": min_score,
                "as_of": as_of,
                "asked_at": asked_at,
            }
            body.update({k: v for k, v in extra.items() if v is not None})
            got = await kit.call("POST", "/api/v1/query", json_body=body)
            kit.state(ctx).mark_shown(r["memory"]["id"] for r in got["results"])
            return m.Recalled(
                query_id=got["query_id"],
                project=scope,
                results=got["results"],
                took_ms=got["took_ms"],
            )

        return await kit.run(ctx, "recall", project, work)

    @mcp.tool(
        name="batch_recall",
        title="Recall several questions",
        annotations=READ,
        description="Several recall queries in one call (up to 10), e.g. one per file or"
        " error you are about to touch. Same project rules as recall.",
    )
    async def batch_recall(
        queries: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=2000)]],
            Field(min_length=1, max_length=10),
        ],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        project: ProjectArg = None,
        all_projects: bool = False,
    ) -> m.BatchRecalled:
        async def work(proj: str) -> m.BatchRecalled:
            scope = _scope(proj, all_projects)
            answers = []
            for q in queries:
                body: dict[str, Any] = {"query": q, "limit": limit}
                if scope:
                    body["project"] = scope
                got = await kit.call("POST", "/api/v1/query", json_body=body)
                kit.state(ctx).mark_shown(r["memory"]["id"] for r in got["results"])
                answers.append(
                    m.BatchAnswer(query=q, query_id=got["query_id"], results=got["results"])
                )
            return m.BatchRecalled(project=scope, answers=answers)

        return await kit.run(ctx, "batch_recall", project, work)

    @mcp.tool(
        name="get_context",
        title="Get context",
        annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=False),
        description="What memory knows that matters to the recent activity of this project,"
        " leaving out what this session was already shown. Call it at the start of work and"
        " whenever you switch tasks; calling it again gives the next most relevant memories.",
    )
    async def get_context(
        ctx: Context,
        project: ProjectArg = None,
        limit: Annotated[int | None, Field(ge=1, le=50)] = None,
    ) -> m.ContextOut:
        want = limit or kit.context_limit

        async def work(proj: str) -> m.ContextOut:
            scope = proj or None
            recent = await kit.call(
                "GET",
                "/api/v1/memories",
                params={"project": scope, "limit": 5, "state": "active"},
            )
            base = recent["items"]
            if not base:
                return m.ContextOut(project=scope, based_on=[], memories=[], query_id=None)
            text = " ".join((b.get("summary") or b["content"])[:300] for b in base)[:2000]
            shown = kit.state(ctx).shown
            body: dict[str, Any] = {"query": text, "limit": min(100, want + len(shown) + 5)}
            if scope:
                body["project"] = scope
            got = await kit.call("POST", "/api/v1/query", json_body=body)
            fresh = [r["memory"] for r in got["results"] if r["memory"]["id"] not in shown]
            fresh = fresh[:want]
            kit.state(ctx).mark_shown(f["id"] for f in fresh)
            return m.ContextOut(
                project=scope,
                based_on=[b["id"] for b in base],
                memories=fresh,
                query_id=got["query_id"],
            )

        return await kit.run(ctx, "get_context", project, work)

    @mcp.tool(
        name="forget",
        title="Forget a memory",
        annotations=DESTROY,
        description="Archive a memory that is wrong or no longer useful (it leaves recall but"
        " can be restored). With purge=true it is deleted for good: only for data that must"
        " not be kept (a leaked secret, private data).",
    )
    async def forget(memory_id: MemoryId, ctx: Context, purge: bool = False) -> m.Forgotten:
        async def work(proj: str) -> m.Forgotten:
            got = await kit.call(
                "DELETE", f"/api/v1/memories/{memory_id}", params={"purge": str(purge).lower()}
            )
            if purge:
                if not got.get("count"):
                    raise ToolError(f"memory {memory_id} not found")
                return m.Forgotten(memory_id=memory_id, purged=True, state=None)
            return m.Forgotten(memory_id=memory_id, purged=False, state=got["state"])

        return await kit.run(ctx, "forget", None, work)

    @mcp.tool(
        name="amend",
        title="Correct a memory",
        annotations=EDIT,
        description="Replace the content of a memory that is partly wrong or outdated, with a"
        " short reason. The old text is kept in the memory's history.",
    )
    async def amend(
        memory_id: MemoryId,
        content: Annotated[str, Field(min_length=1, max_length=100_000)],
        ctx: Context,
        reason: Annotated[str, Field(max_length=1000)] | None = None,
    ) -> m.Amended:
        async def work(proj: str) -> m.Amended:
            body: dict[str, Any] = {"content": content}
            if reason:
                body["reason"] = reason
            got = await kit.call("PATCH", f"/api/v1/memories/{memory_id}", json_body=body)
            return m.Amended(memory=got)

        return await kit.run(ctx, "amend", None, work)

    @mcp.tool(
        name="feedback",
        title="Rate recall results",
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True),
        description="Say how useful a recall was (helpful, partial, irrelevant), optionally"
        " naming the memories that helped. Memory learns from this which results to rank first.",
    )
    async def feedback(
        query_id: Annotated[str, Field(min_length=1, max_length=64)],
        quality: Annotated[str, Field(pattern="^(helpful|partial|irrelevant)$")],
        ctx: Context,
        memory_ids: Annotated[list[str], Field(max_length=100)] | None = None,
    ) -> m.FeedbackOut:
        async def work(proj: str) -> m.FeedbackOut:
            body: dict[str, Any] = {"query_id": query_id, "quality": quality}
            if memory_ids is not None:
                body["memory_ids"] = memory_ids
            got = await kit.call("POST", "/api/v1/feedback", json_body=body)
            return m.FeedbackOut(query_id=got["query_id"], updated=got["updated"])

        return await kit.run(ctx, "feedback", None, work)

    @mcp.tool(
        name="check_memory",
        title="Check a memory",
        annotations=READ,
        description="Is this memory still current? Shows the memory, its state, and which"
        " memories replace it or it replaces. Use before relying on an old decision.",
    )
    async def check_memory(memory_id: MemoryId, ctx: Context) -> m.MemoryCheck:
        async def work(proj: str) -> m.MemoryCheck:
            memory = await kit.call("GET", f"/api/v1/memories/{memory_id}")
            chain = await kit.call("GET", f"/api/v1/memories/{memory_id}/supersessions")
            newer = [e["newer_id"] for e in chain["superseded_by"]]
            older = [e["older_id"] for e in chain["supersedes"]]
            current = memory["state"] in ("active", "fading") and not newer
            if newer:
                note = "Superseded: read the newer memories instead."
            elif memory["state"] == "merged":
                note = f"Merged into {memory.get('merged_into')}."
            elif memory["state"] == "archived":
                note = "Archived: it was forgotten or faded; treat with care."
            else:
                note = "Current."
            return m.MemoryCheck(
                memory=memory,
                current=current,
                superseded_by=[str(n) for n in newer],
                supersedes=[str(o) for o in older],
                note=note,
            )

        return await kit.run(ctx, "check_memory", None, work)

    @mcp.tool(
        name="create_handoff",
        title="Write a handoff",
        annotations=WRITE,
        description="Before you stop, leave a handoff for the next session (yours or another"
        " agent's): what was completed, what is pending, what to test, known issues and a"
        " hint for the next step. Stored verbatim as a memory of type handoff; it never"
        " fades and is never merged. The next session reads it with the start_of_session"
        " prompt or the handoff resource.",
    )
    async def create_handoff(
        completed: Annotated[str, Field(max_length=20_000)],
        ctx: Context,
        pending: Annotated[str, Field(max_length=20_000)] = "",
        to_test: Annotated[str, Field(max_length=20_000)] = "",
        known_issues: Annotated[str, Field(max_length=20_000)] = "",
        next_hint: Annotated[str, Field(max_length=20_000)] = "",
        project: ProjectArg = None,
    ) -> m.Handoff:
        parts = {
            "completed": completed,
            "pending": pending,
            "to_test": to_test,
            "known_issues": known_issues,
            "next_hint": next_hint,
        }

        async def work(proj: str) -> m.Handoff:
            if not any(v.strip() for v in parts.values()):
                raise ToolError("a handoff needs at least one non-empty section")
            content = handoff_text(proj, parts)
            body = {
                "content": content,
                "source": "mcp",
                "type": "handoff",
                "project": proj,
                "metadata": {"handoff": {k: v for k, v in parts.items() if v.strip()}},
            }
            got = await kit.call(
                "POST", "/api/v1/memories", json_body=body, params={"wait": "true"}
            )
            return m.Handoff(memory_id=got.get("memory_id"), project=proj, content=content)

        return await kit.run(ctx, "create_handoff", project, work)
