"""``/mcp`` inside a daemon built in-process (``make_client``): the token rotation reaches
the MCP guard and the tools' in-process backend at once, and a handoff written through MCP
survives a consolidation cycle untouched."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient

from tests.support.api import TOKEN

ACCEPT = {"Accept": "application/json, text/event-stream"}


def rpc(client: TestClient, token: str, body: dict[str, Any], session: str | None = None) -> Any:
    headers = {**ACCEPT, "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
    if session:
        headers["Mcp-Session-Id"] = session
    return client.post("/mcp", json=body, headers=headers)


def answer(response: Any) -> dict[str, Any]:
    """The JSON-RPC answer of a POST (an SSE stream or plain JSON)."""
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


def open_session(client: TestClient, token: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "unit client", "version": "1"},
        },
    }
    got = rpc(client, token, init)
    assert got.status_code == 200, got.text
    session = got.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert rpc(client, token, note, session).status_code == 202
    return str(session)


def call_tool(
    client: TestClient, token: str, session: str, name: str, args: dict[str, Any]
) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": args},
    }
    got = rpc(client, token, body, session)
    assert got.status_code == 200, got.text
    return dict(answer(got)["result"])


def test_token_rotation_reaches_mcp(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    rotated = client.post("/api/v1/token/rotate")
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()["token"]
    assert rpc(client, TOKEN, {"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 401
    session = open_session(client, new)
    result = call_tool(client, new, session, "list_exclusions", {})
    assert result.get("isError") is not True, result  # the in-process backend uses the new one
    usage = client.get("/api/v1/tool/usage", headers={"Authorization": f"Bearer {new}"}).json()
    assert usage["tools"][0]["tool"] == "list_exclusions" and usage["errors"] == 0


def test_handoff_survives_consolidation(make_client: Callable[..., TestClient]) -> None:
    # configured to decay handoffs within seconds: they must not anyway
    client = make_client(consolidation={"half_life_days": {"handoff": 0.00001}, "grace_days": 0.0})
    session = open_session(client, TOKEN)
    made = call_tool(
        client, TOKEN, session, "create_handoff",
        {"completed": "ported the walrus index", "pending": "walrus docs", "project": "walrus"},
    )  # fmt: skip
    memory_id = made["structuredContent"]["memory_id"]
    twin = call_tool(
        client, TOKEN, session, "create_handoff",
        {"completed": "ported the walrus index.", "pending": "walrus docs", "project": "walrus"},
    )  # fmt: skip
    before = client.get(f"/api/v1/memories/{memory_id}").json()
    time.sleep(1.0)  # a few half-lives of the configured one
    run = client.post("/api/v1/agents/consolidation/run")
    assert run.status_code == 200, run.text
    after = client.get(f"/api/v1/memories/{memory_id}").json()
    assert after["state"] == "active" and after["salience"] == before["salience"]
    assert after["content"] == made["structuredContent"]["content"]
    other = client.get(f"/api/v1/memories/{twin['structuredContent']['memory_id']}").json()
    assert other["state"] == "active" and other["merged_into"] is None
