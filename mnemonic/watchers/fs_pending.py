"""The bounded hand-off between watchdog's observer thread and the watcher's async side:
a dict of pending paths, not a queue of events.

Every raw event for a path lands on the same entry, so an editor's save burst (write a
temporary file, rename it over the original, chmod, three modifies) is one entry whose
deadline moves with each event (the debounce); the entry is decided later by looking at
the file, so the event carries the final content. A path that keeps changing is still
flushed ``max_delay_s`` after its first event, so a log being appended to is not starved.

The dict holds at most ``capacity`` paths. When it is full, a *new* path is refused (a path
already pending still coalesces) and the caller marks its root for a rescan: the
reconciliation walk finds the refused files later, so a flood costs latency, never
completeness, and memory stays bounded (an entry is about 250 bytes, so the default
10,000 is about 2.5 MB).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

Touched = Literal["first", "added", "merged", "refused"]


@dataclass(slots=True)
class Pending:
    """One path waiting for its debounce. ``moved_from`` is the original source of a
    rename chain (a -> b -> c gives c ``moved_from=a``); ``moved_to`` marks a source whose
    destination will report the move."""

    path: str
    root: str
    is_dir: bool
    first_seen: float
    last_seen: float
    origin: str
    moved_from: str | None = None
    moved_to: str | None = None

    def due_at(self, debounce_s: float, max_delay_s: float) -> float:
        return min(self.last_seen + debounce_s, self.first_seen + max_delay_s)


class PendingChanges:
    """Thread-safe; ``touch`` is called from the observer thread, the rest from the
    watcher's loop and its worker thread."""

    def __init__(self, capacity: int, debounce_s: float, max_delay_s: float) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.debounce_s = debounce_s
        self.max_delay_s = max(max_delay_s, debounce_s)
        self._items: dict[str, Pending] = {}
        self._lock = threading.Lock()
        self.high_water = 0
        self.refused = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, path: object) -> bool:
        return path in self._items

    def touch(
        self,
        path: str,
        root: str,
        now: float,
        *,
        is_dir: bool = False,
        origin: str = "event",
        moved_from: str | None = None,
        moved_to: str | None = None,
        due_now: bool = False,
    ) -> Touched:
        """Record a change at ``path``: ``first`` (a new entry in an empty dict: the only
        case where a sleeping consumer must be woken, since every later entry is due later),
        ``added``, ``merged`` (an existing entry absorbed it) or ``refused`` (full)."""
        with self._lock:
            item = self._items.get(path)
            if item is not None:
                item.is_dir = is_dir
                if not due_now:
                    item.last_seen = max(item.last_seen, now)
                if moved_from is not None:
                    item.moved_from = self._origin_of(moved_from)
                if moved_to is not None:
                    item.moved_to = moved_to
                return "merged"
            if len(self._items) >= self.capacity:
                self.refused += 1
                return "refused"
            was_empty = not self._items
            seen = now - self.debounce_s if due_now else now
            self._items[path] = Pending(
                path,
                root,
                is_dir,
                first_seen=seen,
                last_seen=seen,
                origin=origin,
                moved_from=None if moved_from is None else self._origin_of(moved_from),
                moved_to=moved_to,
            )
            self.high_water = max(self.high_water, len(self._items))
            return "first" if was_empty else "added"

    def _origin_of(self, source: str) -> str:
        """Follow a rename chain back to its first source (lock held)."""
        earlier = self._items.get(source)
        if earlier is not None and earlier.moved_from is not None:
            return earlier.moved_from
        return source

    def take_due(self, now: float, limit: int) -> list[Pending]:
        """Remove and return up to ``limit`` entries whose deadline has passed, oldest
        first, so a source and its rename destination leave together."""
        due: list[Pending] = []
        with self._lock:
            for item in self._items.values():
                if item.due_at(self.debounce_s, self.max_delay_s) <= now:
                    due.append(item)
                    if len(due) >= limit:
                        break
            for item in due:
                del self._items[item.path]
        return due

    def discard(self, path: str) -> None:
        with self._lock:
            self._items.pop(path, None)

    def next_due(self) -> float | None:
        with self._lock:
            if not self._items:
                return None
            return min(i.due_at(self.debounce_s, self.max_delay_s) for i in self._items.values())
