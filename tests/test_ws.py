"""The /ws event stream: the same guard as REST, filters, per-client drop accounting."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from support.api import BASE_URL, TOKEN, remember, sibling

from mnemonic.events.types import MemoryEncoded

WS = BASE_URL.replace("http://", "ws://")


def _next_of(ws: Any, wanted: str) -> dict[str, Any]:
    while True:
        message = json.loads(ws.receive_text())
        if message["type"] == wanted:
            return message


def test_stream_delivers_events_in_the_wire_shape(client: TestClient) -> None:
    with client.websocket_connect(f"{WS}/ws") as ws:
        remember(client, "Streamed: the deploy freeze starts Friday.", project="ops")
        created = _next_of(ws, "raw_memory_created")
        encoded = _next_of(ws, "memory_encoded")
    assert set(created) == {"type", "at", "context", "payload"}
    assert created["payload"]["content"] == "Streamed: the deploy freeze starts Friday."
    assert encoded["context"]["parent_id"] == created["context"]["id"]
    assert "vector" not in json.dumps(encoded)


def test_token_in_query_string_works_for_browsers(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    bare = sibling(client, base_url=BASE_URL)
    with bare.websocket_connect(f"{WS}/ws?token={TOKEN}&types=raw_memory_created") as ws:
        remember(client, "query-string token")
        assert _next_of(ws, "raw_memory_created")["payload"]["content"] == "query-string token"


@pytest.mark.parametrize(
    ("headers", "path"),
    [
        ({"Authorization": "Bearer wrong"}, "/ws"),
        ({"Authorization": ""}, "/ws"),
        ({"Origin": "https://evil.example"}, "/ws"),
        ({"Host": "evil.example:9999"}, "/ws"),
        ({"Authorization": ""}, "/ws?token=wrong"),
    ],
)
def test_unauthorised_or_cross_site_upgrades_are_refused(
    client: TestClient, headers: dict[str, str], path: str
) -> None:
    with (
        pytest.raises(WebSocketDisconnect) as info,
        client.websocket_connect(WS + path, headers=headers),
    ):
        pass
    assert info.value.code == 1008


def test_type_and_project_filters(client: TestClient) -> None:
    with client.websocket_connect(f"{WS}/ws?types=memory_encoded&project=alpha") as ws:
        remember(client, "beta note about caching", project="beta")
        remember(client, "alpha note about queues", project="alpha")
        message = json.loads(ws.receive_text())
    assert message["type"] == "memory_encoded"
    assert message["payload"]["project"] == "alpha"


def test_unknown_type_filter_is_an_error_message_then_close(client: TestClient) -> None:
    with client.websocket_connect(f"{WS}/ws?types=nope") as ws:
        assert json.loads(ws.receive_text()) == {
            "type": "error",
            "error": "unknown event types: nope",
        }
        with pytest.raises(WebSocketDisconnect) as info:
            ws.receive_text()
    assert info.value.code == 1008


def test_client_limit(make_client: Callable[..., TestClient]) -> None:
    client = make_client(websocket={"max_clients": 1})
    with client.websocket_connect(f"{WS}/ws"), client.websocket_connect(f"{WS}/ws") as second:
        assert json.loads(second.receive_text())["error"] == "too many WebSocket clients"
        with pytest.raises(WebSocketDisconnect) as info:
            second.receive_text()
    assert info.value.code == 1013


def test_overflow_drops_oldest_and_tells_the_client(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(websocket={"queue_size": 16, "content_max_chars": 10})
    daemon = client.daemon  # type: ignore[attr-defined]
    with client.websocket_connect(f"{WS}/ws?types=memory_encoded") as ws:

        async def burst() -> None:
            for n in range(200):  # in one loop turn: the sender cannot keep up
                daemon.bus.publish(
                    MemoryEncoded(
                        raw_id=f"r{n}", memory_id=f"m{n}", project=None, memory_type="general"
                    )
                )

        client.portal.call(burst)  # type: ignore[attr-defined]
        first = json.loads(ws.receive_text())
        rest = [json.loads(ws.receive_text()) for _ in range(16)]
    assert first == {"type": "dropped", "count": 184}
    assert [m["payload"]["raw_id"] for m in rest] == [f"r{n}" for n in range(184, 200)]


def test_long_content_is_truncated_in_the_stream(make_client: Callable[..., TestClient]) -> None:
    client = make_client(websocket={"content_max_chars": 12})
    with client.websocket_connect(f"{WS}/ws?types=raw_memory_created") as ws:
        remember(client, "A fairly long note that goes well past twelve characters.")
        payload = json.loads(ws.receive_text())["payload"]
    assert payload["content"] == "A fairly lon…" and payload["content_truncated"] is True


def test_one_clients_backlog_does_not_hold_the_event_loop(
    make_client: Callable[..., TestClient],
) -> None:
    """A burst of events to a /ws client used to be sent in one go: with uvicorn's
    websockets protocol a send that fits the socket buffer never yields, so 3,000 queued
    events held the loop for their whole length (the loop watchdog caught 24 such stalls
    in a benchmark). The socket is stood in for by one whose send never yields, as a real
    one with buffer room; measured by frames, not time: how many frames leave between two
    turns of another task."""
    import asyncio

    from mnemonic.api.ws import _Client

    class NeverYields:
        def __init__(self) -> None:
            self.sent: list[str] = []

        async def send_text(self, text: str) -> None:
            self.sent.append(text)

    stream = make_client().daemon.stream  # type: ignore[attr-defined]

    async def burst() -> tuple[int, int]:
        ws_client, socket = _Client(5000, None), NeverYields()
        for i in range(3000):
            event = MemoryEncoded(
                raw_id=f"r{i}", memory_id=f"m{i}", project=None, memory_type="general", links=0
            )
            ws_client.offer(event)
        sender = asyncio.create_task(stream._send(socket, ws_client))
        ws_client.wake.set()
        most, before = 0, 0
        while len(socket.sent) < 3000:
            await asyncio.sleep(0)
            most, before = max(most, len(socket.sent) - before), len(socket.sent)
        sender.cancel()
        return most, len(socket.sent)

    most_per_turn, sent = asyncio.run(burst())
    assert sent == 3000
    assert most_per_turn <= 32, most_per_turn
