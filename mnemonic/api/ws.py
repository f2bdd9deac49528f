"""``/ws``: every bus event, live, as ``{"type", "at", "context", "payload"}``.

Each connection is one match-all (or filtered) bus subscriber whose handler only appends
to the client's own bounded queue; a sender task drains it. A slow client therefore never
slows the bus or other clients: when its queue is full the oldest event is dropped and
the client is told ``{"type": "dropped", "count": N}`` before the next event. Host,
Origin and token are checked by the security middleware before the upgrade.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from mnemonic.app.activity import event_json
from mnemonic.config import WebSocketConfig
from mnemonic.events.types import EVENT_TYPES_BY_NAME, Event
from mnemonic.timeutil import utcnow

log = logging.getLogger(__name__)

Subscribe = Callable[..., Callable[[], None]]

CLOSE_POLICY = 1008
CLOSE_TRY_AGAIN = 1013


class _Client:
    def __init__(self, capacity: int, project: str | None) -> None:
        self.capacity = capacity
        self.project = project
        self.queue: deque[Event] = deque()
        self.wake = asyncio.Event()
        self.dropped = 0
        self.unreported = 0

    def offer(self, event: Event) -> None:
        if self.project is not None and getattr(event, "project", None) != self.project:
            return
        if len(self.queue) >= self.capacity:
            self.queue.popleft()
            self.lost()
        self.queue.append(event)
        self.wake.set()

    def lost(self) -> None:
        """An event for this client was dropped (here or in its bus queue)."""
        self.dropped += 1
        self.unreported += 1
        self.wake.set()


def parse_types(raw: str | None) -> tuple[frozenset[str] | None, list[str]]:
    """The requested event type names and the unknown ones."""
    if not raw:
        return None, []
    names = {t.strip() for t in raw.split(",") if t.strip()}
    unknown = sorted(n for n in names if n not in EVENT_TYPES_BY_NAME)
    return (frozenset(names) or None), unknown


class EventStream:
    def __init__(self, subscribe: Subscribe, cfg: WebSocketConfig) -> None:
        self._subscribe = subscribe
        self._cfg = cfg
        self._clients: set[_Client] = set()
        self._serial = 0

    @property
    def clients(self) -> int:
        return len(self._clients)

    def stats(self) -> list[dict[str, Any]]:
        return [{"depth": len(c.queue), "dropped": c.dropped} for c in self._clients]

    async def endpoint(self, websocket: WebSocket) -> None:
        await websocket.accept()
        types, unknown = parse_types(websocket.query_params.get("types"))
        if unknown:
            await _refuse(websocket, CLOSE_POLICY, f"unknown event types: {', '.join(unknown)}")
            return
        if len(self._clients) >= self._cfg.max_clients:
            await _refuse(websocket, CLOSE_TRY_AGAIN, "too many WebSocket clients")
            return
        client = _Client(self._cfg.queue_size, websocket.query_params.get("project") or None)
        self._serial += 1
        unsubscribe = self._subscribe(
            client.offer,
            types,
            name=f"ws:{self._serial}",
            queue_size=self._cfg.queue_size,
            on_drop=client.lost,
        )
        self._clients.add(client)
        sender = asyncio.create_task(self._send(websocket, client), name="mnemonic:ws:send")
        try:
            await _until_disconnect(websocket)
        finally:
            unsubscribe()
            self._clients.discard(client)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender

    async def _send(self, websocket: WebSocket, client: _Client) -> None:
        loop = asyncio.get_running_loop()
        next_ping = loop.time() + self._cfg.ping_interval_s
        while True:
            timeout = max(0.0, next_ping - loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(client.wake.wait(), timeout)
            client.wake.clear()
            if loop.time() >= next_ping:
                await websocket.send_text(json.dumps({"type": "ping", "at": utcnow().isoformat()}))
                next_ping = loop.time() + self._cfg.ping_interval_s
            sent = 0
            while client.queue or client.unreported:
                sent += 1
                if sent % _FRAMES_PER_TURN == 0:
                    # a send that fits the socket buffer never yields: without this, one
                    # client's backlog of thousands of events held the loop for its length
                    await asyncio.sleep(0)
                if client.unreported:
                    count, client.unreported = client.unreported, 0
                    await websocket.send_text(json.dumps({"type": "dropped", "count": count}))
                    continue
                event = client.queue.popleft()
                body = event_json(event, self._cfg.content_max_chars)
                await websocket.send_text(json.dumps(body, ensure_ascii=False))

    async def close_all(self) -> None:
        """Nothing to do per client: their handlers end when the server closes sockets."""
        self._clients.clear()


_FRAMES_PER_TURN = 16


async def _until_disconnect(websocket: WebSocket) -> None:
    """Consume (and ignore) client messages until it goes away."""
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return


async def _refuse(websocket: WebSocket, code: int, reason: str) -> None:
    await websocket.send_text(json.dumps({"type": "error", "error": reason}))
    await websocket.close(code=code, reason=reason)
