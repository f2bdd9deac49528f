"""Runtime exclusions: paths whose events the filter drops at once (``excluded_path``),
added by the user (``POST /api/v1/exclusions``) or automatically when a path keeps producing
rejected events.

The set lives in memory and is checked for every event (one dictionary lookup per folder
level of the path); persisting it (the ``runtime_exclusions`` table) is the daemon's job,
through the filter's ``on_auto_exclude`` callback and the REST handlers.
"""

from __future__ import annotations

import os
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from mnemonic.timeutil import utcnow

_V = TypeVar("_V")


def _bound(table: OrderedDict[str, _V], limit: int) -> None:
    """Drop the least recently used keys beyond ``limit``."""
    while len(table) > limit:
        table.popitem(last=False)


def normalise_path(path: str) -> str:
    """Absolute, ``~`` expanded, no trailing separator, ``..`` folded (no disk access).

    A ``~name`` with a NUL in the name names no user and stays as it is: ``expanduser``
    would raise looking it up, and a watcher's event (a shell history line's working
    folder) can hold any character."""
    user = path.split("/", 1)[0]
    expanded = path if path.startswith("~") and "\x00" in user else os.path.expanduser(path)
    return os.path.normpath(os.path.abspath(expanded))


@dataclass(frozen=True, slots=True)
class Exclusion:
    path: str
    reason: str  # "manual", or "auto:<drop reason>"
    created_at: datetime = field(default_factory=utcnow)

    @property
    def auto(self) -> bool:
        return self.reason.startswith("auto")


class RuntimeExclusions:
    """A set of excluded paths; a path is excluded when it or any folder above it is."""

    def __init__(self, entries: Iterable[Exclusion] = ()) -> None:
        self._entries: dict[str, Exclusion] = {}
        for entry in entries:
            self._entries[normalise_path(entry.path)] = entry

    def add(self, path: str, reason: str = "manual") -> Exclusion:
        """Exclude ``path`` (idempotent: an existing entry is returned unchanged)."""
        key = normalise_path(path)
        existing = self._entries.get(key)
        if existing is not None:
            return existing
        entry = Exclusion(key, reason)
        self._entries[key] = entry
        return entry

    def remove(self, path: str) -> bool:
        """Stop excluding ``path``; False when it was not excluded."""
        return self._entries.pop(normalise_path(path), None) is not None

    def list(self) -> list[Exclusion]:
        return sorted(self._entries.values(), key=lambda e: e.path)

    def match(self, path: str) -> Exclusion | None:
        """The exclusion covering ``path`` (itself or the nearest folder above), if any."""
        if not self._entries:
            return None
        current = normalise_path(path)
        while True:
            entry = self._entries.get(current)
            if entry is not None:
                return entry
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and normalise_path(path) in self._entries


class RejectionTracker:
    """Counts rejected events per path and per folder over a sliding window, in bounded
    memory, and says when one crosses the threshold.

    A folder qualifies only when at least ``min_files`` different files in it were
    rejected (one noisy file excludes that file, not its folder), and never when it is the
    filesystem root, a top-level folder, or the home folder or above it.
    """

    def __init__(
        self,
        threshold: int,
        window_s: float,
        *,
        min_files: int = 3,
        max_keys: int = 10_000,
        home: str | None = None,
    ) -> None:
        self._threshold = threshold
        self._window = window_s
        self._min_files = min_files
        self._max_keys = max_keys
        self._home = normalise_path(home if home is not None else os.path.expanduser("~"))
        self._hits: OrderedDict[str, deque[float]] = OrderedDict()
        self._files: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()

    def record(self, path: str, now: float) -> str | None:
        """Note a rejection of ``path``; the path or folder to exclude now, if any."""
        if self._threshold <= 0:
            return None
        path = normalise_path(path)
        if self._hit(path, now):
            self._forget(path)
            return path
        folder = os.path.dirname(path)
        files = self._files.setdefault(folder, OrderedDict())
        files[path] = None
        while len(files) > self._min_files:
            files.popitem(last=False)
        _bound(self._files, self._max_keys)
        if self._hit(folder, now) and len(files) >= self._min_files and self._may_exclude(folder):
            self._forget(folder)
            return folder
        return None

    def _hit(self, key: str, now: float) -> bool:
        hits = self._hits.get(key)
        if hits is None:
            hits = self._hits[key] = deque(maxlen=self._threshold)
        self._hits.move_to_end(key)
        hits.append(now)
        _bound(self._hits, self._max_keys)
        return len(hits) >= self._threshold and now - hits[0] <= self._window

    def _forget(self, key: str) -> None:
        self._hits.pop(key, None)
        self._files.pop(key, None)

    def _may_exclude(self, folder: str) -> bool:
        if len(folder.strip(os.sep).split(os.sep)) < 2:
            return False  # "/" or a top-level folder such as /tmp
        home = self._home
        return not (folder == home or home.startswith(folder.rstrip(os.sep) + os.sep))
