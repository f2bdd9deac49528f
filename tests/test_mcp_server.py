"""The MCP server end to end, with the official ``mcp`` client library: a real daemon
subprocess (one per module), its ``/mcp`` over streamable HTTP, and ``mnemonic mcp`` over
stdio as a real subprocess forwarding to it. Every tool is called over both transports and
its structured result is checked against its ``outputSchema``."""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx
import httpx2
import jsonschema
import pytest
from mcp import Client, MCPDeprecationWarning
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, ListRootsResult, Root
from mcp_types.version import LATEST_PROTOCOL_VERSION

from tests.support.daemon_proc import TOKEN, DaemonProc, free_port, running

PROJECT = "mcp-e2e-proj"

EXPECTED_TOOLS = {
    "remember", "recall", "batch_recall", "get_context", "recall_project", "recall_timeline",
    "recall_session", "list_sessions", "session_summary", "forget", "amend", "feedback",
    "check_memory", "status", "get_patterns", "get_insights", "get_abstractions",
    "dismiss_pattern", "dismiss_abstraction", "list_episodes", "exclude_path",
    "list_exclusions", "create_handoff",
}  # fmt: skip


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    home = tmp_path_factory.mktemp("mcp-home")
    with running(home) as proc:
        yield proc


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stdio client's working folder: its name is the session's project."""
    folder = tmp_path_factory.mktemp("ws") / PROJECT
    folder.mkdir()
    return folder


def _headers(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def http_client(daemon: DaemonProc, roots: list[Path] | None = None) -> AsyncIterator[Client]:
    """The current protocol revision, or (with ``roots``) the handshake era, where a client
    can tell the server its workspace folders."""
    http = httpx2.AsyncClient(headers=_headers(), timeout=60)
    transport = streamable_http_client(f"{daemon.base_url}/mcp", http_client=http)
    if roots is None:
        async with http, Client(transport) as c:
            yield c
        return

    async def list_roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=r.as_uri()) for r in roots])  # type: ignore[arg-type]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots: deprecated in 2026-07-28
        client = Client(transport, mode="legacy", list_roots_callback=list_roots)
    async with http, client as c:
        yield c


def stdio_env(home: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"MNEMONIC_HOME": str(home), "MNEMONIC_PORT": str(port), "MNEMONIC_TOKEN": TOKEN})
    return env


@asynccontextmanager
async def stdio(
    home: Path, port: int, cwd: Path, errlog: TextIO, env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mnemonic", "mcp"],
        env=env or stdio_env(home, port),
        cwd=str(cwd),
    )
    async with Client(stdio_client(params, errlog=errlog)) as c:
        yield c


def check_structured(result: CallToolResult, schema: dict[str, Any]) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    jsonschema.validate(data, schema)
    return data


async def call_all(client: Client, tag: str) -> dict[str, dict[str, Any]]:
    """Every tool once (in an order that gives the later ones something to work on)."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == EXPECTED_TOOLS
    out: dict[str, dict[str, Any]] = {}

    async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(name, args)
        out[name] = check_structured(result, tools[name].output_schema or {})
        return out[name]

    first = await call(
        "remember",
        {
            "content": f"Decision {tag}: we use SQLite WAL mode for the zebra cache because"
            " readers must not block the writer.",
            "type": "decision",
        },
    )
    assert first["memory_id"] and first["project"] == PROJECT
    second = await call(
        "remember",
        {
            "content": f"Decision {tag}: the zebra cache now uses SQLite WAL with a 5 s busy"
            " timeout.",
            "supersedes": [first["memory_id"]],
            "links": [first["memory_id"]],
        },
    )
    assert second["supersedes"] == [first["memory_id"]]
    assert second["links"] == [first["memory_id"]]  # linked through POST /associations
    rec = await call("recall", {"query": f"zebra cache SQLite {tag}", "explain": True})
    assert rec["project"] == PROJECT and rec["results"]
    # asked tomorrow, "yesterday" is today: the decisions just stored are inside it
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    timed = await call(
        "recall",
        {"query": f"zebra cache SQLite {tag} yesterday", "explain": True, "asked_at": tomorrow},
    )
    assert timed["results"][0]["explain"]["contributions"]["when"] > 0
    await call(
        "recall",
        {
            "query": "zebra",
            "all_projects": True,
            "type": ["decision"],
            "state": ["active"],
            "as_of": "2100-01-01T00:00:00Z",
            "limit": 3,
        },
    )
    await call("batch_recall", {"queries": ["zebra cache", "busy timeout"]})
    await call("get_context", {})
    await call(
        "feedback",
        {
            "query_id": rec["query_id"],
            "quality": "helpful",
            "memory_ids": [rec["results"][0]["memory"]["id"]],
        },
    )
    check = await call("check_memory", {"memory_id": first["memory_id"]})
    assert check["current"] is False and check["superseded_by"] == [second["memory_id"]]
    await call(
        "amend",
        {
            "memory_id": second["memory_id"],
            "content": f"Decision {tag}: zebra cache uses WAL, busy timeout 5 s.",
            "reason": "shorter",
        },
    )
    await call("status", {})
    overview = await call("recall_project", {})
    assert overview["memories"] >= 2
    await call("recall_timeline", {"since": "2000-01-01T00:00:00Z", "type": ["decision"]})
    await call("list_sessions", {})
    episodes = await call("list_episodes", {"state": "open"})
    if episodes["episodes"]:
        await call("recall_session", {"episode_id": episodes["episodes"][0]["id"]})
    else:
        out["recall_session"] = {}
    await call("session_summary", {})
    await call("exclude_path", {"path": f"/tmp/mcp-secret-{tag}", "reason": "test"})
    listed = await call("list_exclusions", {})
    assert any(e["path"] == f"/tmp/mcp-secret-{tag}" for e in listed["items"])
    await call("get_patterns", {})
    await call("get_insights", {})
    await call("get_abstractions", {"level": "principle"})
    handoff = await call(
        "create_handoff",
        {
            "completed": f"zebra cache {tag} done",
            "pending": "tune timeout",
            "next_hint": "bench it",
        },
    )
    assert "Completed:\nzebra cache" in handoff["content"]
    gone = await call("forget", {"memory_id": first["memory_id"]})
    assert gone["state"] == "archived"
    # dismissing needs a pattern; an unknown id is a tool error naming it, not a crash
    for name, key in (("dismiss_pattern", "pattern_id"), ("dismiss_abstraction", "abstraction_id")):
        result = await client.call_tool(name, {key: "no-such-id"})
        assert result.is_error and "not found" in result.content[0].text  # type: ignore[union-attr]
        out[name] = {}
    return out


def test_http_lists_tools_with_full_schemas(daemon: DaemonProc) -> None:
    async def main() -> None:
        async with http_client(daemon) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == EXPECTED_TOOLS
            for tool in tools:
                assert tool.title and len(tool.description or "") > 40, tool.name
                assert tool.input_schema["type"] == "object"
                jsonschema.Draft202012Validator.check_schema(tool.input_schema)
                assert tool.output_schema is not None, tool.name
                jsonschema.Draft202012Validator.check_schema(tool.output_schema)
                hints = tool.annotations
                assert hints is not None
                assert None not in (
                    hints.read_only_hint,
                    hints.destructive_hint,
                    hints.idempotent_hint,
                ), tool.name
            by_name = {t.name: t for t in tools}
            assert by_name["recall"].annotations.read_only_hint  # type: ignore[union-attr]
            assert by_name["forget"].annotations.destructive_hint  # type: ignore[union-attr]
            recall_args = set(by_name["recall"].input_schema["properties"])
            assert {
                "query",
                "project",
                "source",
                "type",
                "state",
                "since",
                "until",
                "min_salience",
                "min_score",
                "explain",
                "as_of",
                "asked_at",
                "limit",
            } <= recall_args

    anyio.run(main)


def test_every_tool_over_http(daemon: DaemonProc, workdir: Path) -> None:
    """The session's project comes from the client's roots (its workspace folders)."""

    async def main() -> None:
        async with http_client(daemon, roots=[workdir]) as client:
            called = await call_all(client, "http")
            assert set(called) == EXPECTED_TOOLS

    anyio.run(main)


def test_current_protocol_over_http_and_project_argument(daemon: DaemonProc) -> None:
    async def main() -> None:
        async with http_client(daemon) as client:
            assert client.protocol_version == LATEST_PROTOCOL_VERSION
            tools = {t.name: t for t in (await client.list_tools()).tools}
            res = await client.call_tool(
                "remember", {"content": "HTTP session note about the yak shaver", "project": "web"}
            )
            assert check_structured(res, tools["remember"].output_schema or {})["project"] == "web"
            # no roots, no working folder: no project, so recall searches everything
            rec = await client.call_tool("recall", {"query": "yak shaver"})
            data = check_structured(rec, tools["recall"].output_schema or {})
            assert data["project"] is None
            assert data["results"][0]["memory"]["project"] == "web"

    anyio.run(main)


def test_every_tool_over_stdio(daemon: DaemonProc, workdir: Path, tmp_path: Path) -> None:
    async def main() -> None:
        with (tmp_path / "stdio.err").open("w") as errlog:
            async with stdio(daemon.home, daemon.port, workdir, errlog) as client:
                called = await call_all(client, "stdio")
                assert set(called) == EXPECTED_TOOLS

    anyio.run(main)


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        (_headers("wrong-token-0123456789"), 401),
        ({**_headers(), "Origin": "http://evil.example"}, 403),
        ({**_headers(), "Host": "evil.example"}, 403),
    ],
    ids=["no-token", "wrong-token", "foreign-origin", "foreign-host"],
)
def test_mcp_endpoint_is_guarded(daemon: DaemonProc, headers: dict[str, str], status: int) -> None:
    with httpx.Client(base_url=daemon.base_url, timeout=10) as http:
        got = http.post("/mcp", json=INIT, headers={**MCP_HEADERS, **headers})
        assert got.status_code == status, got.text
        ok = http.post("/mcp", json=INIT, headers={**MCP_HEADERS, **_headers()})
        assert ok.status_code == 200, ok.text


def test_tool_errors_are_results_not_crashes(daemon: DaemonProc) -> None:
    async def main() -> None:
        async with http_client(daemon) as client:
            missing = await client.call_tool("forget", {"memory_id": "no-such-memory"})
            assert missing.is_error and "not found" in missing.content[0].text  # type: ignore[union-attr]
            bad = await client.call_tool("recall", {"query": "x", "limit": 1000})
            assert bad.is_error and "limit" in bad.content[0].text  # type: ignore[union-attr]
            refused = await client.call_tool(
                "recall", {"query": "x", "since": "yesterday-ish"}
            )  # the REST API's 422 becomes the tool's error text
            assert refused.is_error and "since" in refused.content[0].text  # type: ignore[union-attr]
            empty = await client.call_tool("create_handoff", {"completed": "  "})
            assert empty.is_error
            # the session survives every error
            assert not (await client.call_tool("status", {})).is_error

    anyio.run(main)


def test_usage_is_recorded_per_tool(daemon: DaemonProc) -> None:
    async def main() -> None:
        async with http_client(daemon) as client:
            for _ in range(3):
                await client.call_tool("list_exclusions", {})
            await client.call_tool("check_memory", {"memory_id": "nope"})

    with daemon.client() as http:
        before = {t["tool"]: t for t in http.get("/api/v1/tool/usage").json()["tools"]}
        anyio.run(main)
        after = http.get("/api/v1/tool/usage").json()
    tools = {t["tool"]: t for t in after["tools"]}
    calls = tools["list_exclusions"]["calls"] - before.get("list_exclusions", {"calls": 0})["calls"]
    assert calls == 3
    errors = tools["check_memory"]["errors"] - before.get("check_memory", {"errors": 0})["errors"]
    assert errors == 1
    assert 0 < tools["list_exclusions"]["p50_ms"] <= tools["list_exclusions"]["p95_ms"]
    assert after["calls"] == sum(t["calls"] for t in after["tools"])


def test_resources_and_prompts(daemon: DaemonProc) -> None:
    async def main() -> None:
        async with http_client(daemon) as client:
            made = await client.call_tool(
                "create_handoff",
                {
                    "completed": "wired the quokka parser",
                    "known_issues": "quokka CRLF",
                    "project": "quokka",
                },
            )
            memory_id = made.structured_content["memory_id"]  # type: ignore[index]
            templates = {
                t.uri_template for t in (await client.list_resource_templates()).resource_templates
            }
            assert templates == {"memory://{memory_id}", "handoff://{project}"}
            got = await client.read_resource(f"memory://{memory_id}")
            memory = json.loads(got.contents[0].text)  # type: ignore[union-attr]
            assert memory["type"] == "handoff"
            assert memory["content"].startswith("Handoff for project quokka")
            latest = json.loads((await client.read_resource("handoff://quokka")).contents[0].text)  # type: ignore[union-attr]
            assert latest["id"] == memory_id
            assert "Known issues:\nquokka CRLF" in latest["content"]
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert prompts == {"start_of_session", "end_of_session"}
            start = await client.get_prompt("start_of_session", {"project": "quokka"})
            text = start.messages[0].content.text  # type: ignore[union-attr]
            assert "wired the quokka parser" in text
            end = await client.get_prompt("end_of_session", {"project": "quokka"})
            assert "create_handoff" in end.messages[0].content.text  # type: ignore[union-attr]

    anyio.run(main)


def test_daemon_down_says_how_to_start_it(tmp_path: Path) -> None:
    port = free_port()  # nothing listens here

    async def main() -> None:
        with (tmp_path / "stdio.err").open("w") as errlog:
            async with stdio(tmp_path / "home", port, tmp_path, errlog) as client:
                result = await client.call_tool("status", {})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert f"not running at http://127.0.0.1:{port}" in text
                assert f"MNEMONIC_HOME={tmp_path / 'home'} mnemonic serve" in text
                assert len((await client.list_tools()).tools) == len(EXPECTED_TOOLS)

    anyio.run(main)


def test_autostart_starts_the_daemon(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    env = {**stdio_env(home, port), "MNEMONIC_MCP__AUTOSTART": "true"}

    async def main() -> None:
        with (tmp_path / "stdio.err").open("w") as errlog:
            async with stdio(home, port, tmp_path, errlog, env=env) as client:
                result = await client.call_tool("status", {})
                assert not result.is_error, result.content
                assert result.structured_content["status"] in ("ok", "degraded")  # type: ignore[index]

    try:
        anyio.run(main)
    finally:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            pid = http.get("/api/v1/health", headers=_headers()).json()["pid"]
        os.kill(pid, 15)
