"""Resources (a memory by URI, the latest handoff of a project) and prompts (start and end
of a session)."""

# No ``from __future__ import annotations``: the SDK reads these signatures at runtime.

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from mnemonic.mcp.backend import BackendError, DaemonUnavailable
from mnemonic.mcp.kit import Kit
from mnemonic.mcp.tools_browse import latest_handoff


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def register_resources(mcp: MCPServer, kit: Kit) -> None:
    @mcp.resource(
        "memory://{memory_id}",
        name="memory",
        title="A memory",
        description="One memory by id, as JSON (content, type, project, state, salience...).",
        mime_type="application/json",
    )
    async def memory(memory_id: str) -> str:
        try:
            return _dump(await kit.call("GET", f"/api/v1/memories/{memory_id}"))
        except (BackendError, DaemonUnavailable) as exc:
            raise ResourceError(str(exc)) from None

    @mcp.resource(
        "handoff://{project}",
        name="handoff",
        title="Latest handoff of a project",
        description="The newest handoff memory of the project, verbatim, as JSON; null when"
        " the project has none.",
        mime_type="application/json",
    )
    async def handoff(project: str) -> str:
        try:
            return _dump(await latest_handoff(kit, kit.sessions.resolver.canonical(project)))
        except (BackendError, DaemonUnavailable) as exc:
            raise ResourceError(str(exc)) from None


async def _context_lines(kit: Kit, ctx: Context, project: str) -> list[str]:
    scope = project or None
    recent = await kit.call("GET", "/api/v1/memories", params={"project": scope, "limit": 5})
    if not recent["items"]:
        return []
    text = " ".join((i.get("summary") or i["content"])[:300] for i in recent["items"])[:2000]
    body: dict[str, Any] = {"query": text, "limit": kit.context_limit}
    if scope:
        body["project"] = scope
    got = await kit.call("POST", "/api/v1/query", json_body=body)
    kit.state(ctx).mark_shown(r["memory"]["id"] for r in got["results"])
    return [
        f"- [{r['memory']['type']}] {r['memory'].get('summary') or r['memory']['content'][:300]}"
        f" (id {r['memory']['id']})"
        for r in got["results"]
    ]


def register_prompts(mcp: MCPServer, kit: Kit) -> None:
    @mcp.prompt(
        name="start_of_session",
        title="Start of session",
        description="Begin work with the last handoff and the memories relevant to the recent"
        " activity of this project.",
    )
    async def start_of_session(ctx: Context, project: str = "") -> str:
        try:
            proj = await kit.project(ctx, project or None)
            found = await latest_handoff(kit, proj)
            lines = await _context_lines(kit, ctx, proj)
        except DaemonUnavailable as exc:
            return f"Memory is unavailable: {exc}"
        except BackendError as exc:
            return f"Memory answered with an error: {exc.message}"
        name = proj or "(no project)"
        parts = [f"You are starting a work session on project {name}."]
        if found is not None:
            parts.append(f"The last session left this handoff ({found['timestamp']}):")
            parts.append(found["content"])
        else:
            parts.append("No handoff was left for this project.")
        if lines:
            parts.append("Relevant memories:")
            parts.extend(lines)
        parts.append(
            "Use the recall tool before changing code you have not seen, and remember"
            " decisions, errors and fixes as you go."
        )
        return "\n\n".join(parts)

    @mcp.prompt(
        name="end_of_session",
        title="End of session",
        description="Wrap up: write a handoff for the next session with create_handoff.",
    )
    async def end_of_session(ctx: Context, project: str = "") -> str:
        try:
            proj = await kit.project(ctx, project or None)
        except DaemonUnavailable as exc:
            return f"Memory is unavailable: {exc}"
        name = proj or "(no project)"
        return (
            f"The work session on project {name} is ending. Call the create_handoff tool once,"
            " filling: completed (what was done, with file names), pending (what is left),"
            " to_test (what needs checking), known_issues (what is broken or fragile) and"
            " next_hint (the first thing the next session should do). Be concrete and short;"
            " it is stored verbatim. Before that, remember any decision or fix not yet stored."
        )
