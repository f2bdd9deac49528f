"""The event bus: isolation between subscribers, bounded queues, drop accounting."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from mnemonic.events.bus import EventBus
from mnemonic.events.types import (
    ALL_EVENT_TYPES,
    EVENT_TYPES_BY_NAME,
    AgentError,
    Context,
    Event,
    MemoryEncoded,
    QueryExecuted,
    RawMemoryCreated,
    WatcherEvent,
)


def _raw(n: int) -> RawMemoryCreated:
    return RawMemoryCreated(
        raw_id=f"r{n}", memory_id=f"m{n}", source="api", project=None, content=f"c{n}"
    )


async def _settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


def test_every_event_type_has_a_unique_name_and_serialises() -> None:
    assert len(EVENT_TYPES_BY_NAME) == len(ALL_EVENT_TYPES)
    event = WatcherEvent(watcher="fs", kind="file_created", content="x", metadata={"n": 1})
    wire = event.to_json()
    assert set(wire) == {"type", "at", "context", "payload"}
    assert wire["type"] == "watcher_event"
    assert wire["at"].endswith("+00:00")
    assert "at" not in wire["payload"] and "context" not in wire["payload"]
    assert wire["payload"]["metadata"] == {"n": 1}


def test_events_are_frozen_and_slotted() -> None:
    event = _raw(1)
    with pytest.raises(AttributeError):
        event.raw_id = "other"  # type: ignore[misc]
    assert not hasattr(event, "__dict__")


def test_context_child_points_at_parent() -> None:
    parent = Context()
    child = parent.child()
    assert child.parent_id == parent.id and child.id != parent.id


def test_subscribers_get_matching_events_in_order() -> None:
    async def main() -> tuple[list[str], list[str]]:
        bus = EventBus()
        raws: list[str] = []
        everything: list[str] = []
        bus.subscribe(lambda e: raws.append(e.raw_id), [RawMemoryCreated], name="raws")  # type: ignore[attr-defined]
        bus.subscribe(lambda e: everything.append(e.type), None, name="all")
        for n in range(3):
            bus.publish(_raw(n))
        bus.publish(QueryExecuted(query_id="q", query="x", project=None, results=0, took_ms=1))
        await _settle()
        await bus.close()
        return raws, everything

    raws, everything = asyncio.run(main())
    assert raws == ["r0", "r1", "r2"]
    assert everything == ["raw_memory_created"] * 3 + ["query_executed"]


def test_a_failing_handler_is_isolated_counted_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> tuple[list[str], Any]:
        bus = EventBus()
        seen: list[str] = []

        def broken(event: Event) -> None:
            raise RuntimeError("boom")

        bus.subscribe(broken, None, name="broken")
        bus.subscribe(lambda e: seen.append(e.type), None, name="fine")
        bus.publish(_raw(1))  # must not raise
        bus.publish(_raw(2))
        await _settle()
        stats = {s.name: s for s in bus.stats()}
        await bus.close()
        return seen, stats

    with caplog.at_level(logging.ERROR):
        seen, stats = asyncio.run(main())
    assert seen == ["raw_memory_created", "raw_memory_created"]
    assert stats["broken"].failed == 2 and stats["broken"].delivered == 0
    assert stats["broken"].last_error == "RuntimeError: boom"
    assert stats["fine"].delivered == 2
    assert "subscriber broken failed" in caplog.text


def test_overflow_drops_the_oldest_and_counts_per_subscriber() -> None:
    async def main() -> tuple[list[str], dict[str, Any], int]:
        bus = EventBus()
        got: list[str] = []
        release = asyncio.Event()

        async def slow(event: Event) -> None:
            await release.wait()
            got.append(event.raw_id)  # type: ignore[attr-defined]

        fast: list[str] = []
        bus.subscribe(slow, None, name="slow", queue_size=3)
        bus.subscribe(lambda e: fast.append(e.raw_id), None, name="fast", queue_size=100)  # type: ignore[attr-defined]
        bus.publish(_raw(0))
        await _settle()  # slow now holds r0 in its handler
        for n in range(1, 8):
            bus.publish(_raw(n))  # never blocks although slow is stuck
        stats = {s.name: s for s in bus.stats()}
        release.set()
        await _settle()
        await bus.close()
        return got, {"slow": stats["slow"], "fast_count": len(fast)}, bus.published

    got, stats, published = asyncio.run(main())
    assert published == 8
    assert stats["slow"].dropped == 4 and stats["slow"].depth == 3
    assert got == ["r0", "r5", "r6", "r7"]  # the oldest queued were dropped
    assert stats["fast_count"] == 8


def test_unsubscribe_stops_delivery_and_cancels_the_task() -> None:
    async def main() -> tuple[list[str], int]:
        bus = EventBus()
        got: list[str] = []
        unsubscribe = bus.subscribe(lambda e: got.append(e.type), None, name="x")
        bus.publish(_raw(1))
        await _settle()
        unsubscribe()
        bus.publish(_raw(2))
        await _settle()
        tasks = [t for t in asyncio.all_tasks() if t.get_name() == "mnemonic:bus:x"]
        return got, len(tasks)

    got, tasks = asyncio.run(main())
    assert got == ["raw_memory_created"]
    assert tasks == 0


def test_publish_threadsafe_from_another_thread() -> None:
    async def main() -> list[str]:
        bus = EventBus()
        got: list[str] = []
        bus.subscribe(lambda e: got.append(e.type), [AgentError], name="x")
        await asyncio.to_thread(
            bus.publish_threadsafe,
            AgentError(agent="a", error="e", restarts=1, next_restart_s=None),
        )
        await _settle()
        await bus.close()
        return got

    assert asyncio.run(main()) == ["agent_error"]


def test_publish_after_close_is_a_no_op() -> None:
    async def main() -> int:
        bus = EventBus()
        bus.subscribe(lambda e: None, None, name="x")
        await bus.close()
        bus.publish(MemoryEncoded(raw_id="r", memory_id="m", project=None, memory_type="general"))
        return bus.published

    assert asyncio.run(main()) == 0


def test_queue_size_must_be_positive() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="queue_size"):
            EventBus().subscribe(lambda e: None, None, name="x", queue_size=0)

    asyncio.run(main())
