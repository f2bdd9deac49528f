"""The in-memory publish/subscribe bus.

``publish`` never blocks and never raises into the publisher: it appends the event to each
matching subscriber's own bounded queue and returns. Each subscriber has its own task, so a
slow LLM-bound agent cannot stall the WebSocket stream, and a handler that raises is logged,
counted and isolated. When a queue is full the oldest event is dropped and counted per
subscriber (an explicit policy: for a live stream, fresh events matter more than old ones;
subscribers that must not miss work, like the encoder, also sweep the store).

``publish`` must be called on the event loop's thread; threads (watchdog's observer) use
``publish_threadsafe``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from mnemonic.events.types import Event

log = logging.getLogger(__name__)

Handler = Callable[[Event], Awaitable[None] | None]
Unsubscribe = Callable[[], None]

DEFAULT_QUEUE_SIZE = 1024


@dataclass(frozen=True, slots=True)
class SubscriberStats:
    name: str
    types: tuple[str, ...] | None
    depth: int
    capacity: int
    delivered: int
    dropped: int
    failed: int
    last_error: str | None


class _Subscriber:
    """One subscriber: its queue, its task and its counters."""

    def __init__(
        self,
        name: str,
        handler: Handler,
        types: frozenset[str] | None,
        capacity: int,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.on_drop = on_drop
        self.handler = handler
        self.types = types
        self.capacity = capacity
        self.queue: deque[Event] = deque()
        self.wakeup = asyncio.Event()
        self.delivered = 0
        self.dropped = 0
        self.failed = 0
        self.last_error: str | None = None
        self.task: asyncio.Task[None] | None = None

    def wants(self, event: Event) -> bool:
        return self.types is None or event.type in self.types

    def offer(self, event: Event) -> None:
        if len(self.queue) >= self.capacity:
            self.queue.popleft()
            self.dropped += 1
            if self.on_drop is not None:
                self.on_drop()
        self.queue.append(event)
        self.wakeup.set()

    async def run(self) -> None:
        while True:
            if not self.queue:
                self.wakeup.clear()
                await self.wakeup.wait()
                continue
            event = self.queue.popleft()
            try:
                result = self.handler(event)
                if inspect.isawaitable(result):
                    await result
                self.delivered += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one failing handler must not stop the bus
                self.failed += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.error("subscriber %s failed on %s", self.name, event.type, exc_info=exc)

    def stats(self) -> SubscriberStats:
        return SubscriberStats(
            name=self.name,
            types=tuple(sorted(self.types)) if self.types is not None else None,
            depth=len(self.queue),
            capacity=self.capacity,
            delivered=self.delivered,
            dropped=self.dropped,
            failed=self.failed,
            last_error=self.last_error,
        )


class EventBus:
    """Owned by the composition root; ``close`` cancels every subscriber task."""

    def __init__(self) -> None:
        self._subscribers: list[_Subscriber] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.published = 0
        self._closed = False

    def subscribe(
        self,
        handler: Handler,
        types: Iterable[type[Event] | str] | None = None,
        *,
        name: str,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        on_drop: Callable[[], None] | None = None,
    ) -> Unsubscribe:
        """Deliver matching events (all when ``types`` is None) to ``handler`` on a task of
        its own; ``on_drop`` (which must not block) hears of each event dropped for it.
        Must be called from the running event loop."""
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        wanted = None if types is None else frozenset(_type_name(t) for t in types)
        subscriber = _Subscriber(name, handler, wanted, queue_size, on_drop)
        self._loop = asyncio.get_running_loop()
        subscriber.task = self._loop.create_task(subscriber.run(), name=f"mnemonic:bus:{name}")
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)
            if subscriber.task is not None:
                subscriber.task.cancel()

        return unsubscribe

    def publish(self, event: Event) -> None:
        """Queue ``event`` for every matching subscriber; never blocks, never raises."""
        if self._closed:
            return
        self.published += 1
        for subscriber in self._subscribers:
            try:
                if subscriber.wants(event):
                    subscriber.offer(event)
            except Exception:  # the publisher never sees a subscriber fault
                log.exception("could not queue %s for %s", event.type, subscriber.name)

    def publish_threadsafe(self, event: Event) -> None:
        """``publish`` from another thread (for example a watchdog observer)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self.publish, event)
        except RuntimeError:  # the loop closed between the check and the call
            return

    def stats(self) -> list[SubscriberStats]:
        return [s.stats() for s in self._subscribers]

    @property
    def dropped(self) -> int:
        return sum(s.dropped for s in self._subscribers)

    async def close(self, timeout_s: float = 1.0) -> None:
        """Stop delivering: cancel every subscriber task and wait for them briefly."""
        self._closed = True
        tasks = [s.task for s in self._subscribers if s.task is not None]
        self._subscribers.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)


def _type_name(value: type[Event] | str) -> str:
    return value if isinstance(value, str) else value.type
