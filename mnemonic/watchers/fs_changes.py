"""Turning settled pending paths into events, on the watcher's worker thread.

An entry is decided by looking at the file now and comparing with the index, not by
replaying the raw events: after a save burst only the final state matters, and the same
code then serves live events, new-folder scans and reconciliation walks alike.

=========================  ================  ===================================
file now                   in the index       event
=========================  ================  ===================================
gone                       yes                ``file_deleted`` (metadata only)
gone                       no                 none (a temporary file came and went)
there, renamed from a      source indexed     ``file_moved`` with ``old_path``
vanished source
there                      no                 ``file_created``
there, size/mtime differ   yes                ``file_modified``
there, unchanged           yes                none (chmod, touch-free rename back)
=========================  ================  ===================================

A rename source whose destination is still pending (or in the same batch) says nothing:
the destination reports the move.

Two kinds come from the same table with a different reading. A log file (``log_patterns``)
created or modified gives ``log_appended`` with only the bytes written since the size the
index remembers (at most ``log_tail_bytes``; from 0 again when it shrank), at most once per
``log_min_interval_s`` per file, so a chatty log costs a read every half minute rather
than one per write (the filter never auto-excludes a log for its dull tails, so an error
written to it later is still seen). A file picked on a root's first walk
(``fs_initial``) gives ``file_indexed``.
"""

from __future__ import annotations

import heapq
import logging
import os
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from mnemonic.events.types import Event, WatcherEvent, WatcherEventDropped
from mnemonic.redact.paths import is_secret_path
from mnemonic.watchers.fs_ignore import IgnoreRules
from mnemonic.watchers.fs_index import RootIndex, fingerprint, fingerprint_size, walk_files
from mnemonic.watchers.fs_initial import initial_candidate, initial_rank, is_log
from mnemonic.watchers.fs_pending import Pending, PendingChanges
from mnemonic.watchers.fs_read import FileSnapshot, read_snapshot, read_tail

log = logging.getLogger(__name__)

WATCHER = "filesystem"
_MAX_SWEEP_FOLDERS = 64


def classify(
    exists: bool, old: int | None, new: int | None, moved_from_indexed: bool
) -> str | None:
    """The event kind for one settled path (see the module table), or None."""
    if not exists:
        return "file_deleted" if old is not None else None
    if moved_from_indexed:
        return "file_moved"
    if old is None:
        return "file_created"
    return "file_modified" if old != new else None


def display_path(path: str) -> str:
    """A path that is valid UTF-8 (undecodable name bytes become U+FFFD), because events
    end up in JSON and SQLite; the watcher itself keeps the real name."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class WarnOnce:
    """One warning per path, at most ``limit`` remembered (then further ones are only
    counted), so an unreadable file touched a thousand times logs once."""

    def __init__(self, limit: int = 10_000) -> None:
        self._seen: set[str] = set()
        self._limit = limit
        self._lock = threading.Lock()
        self.count = 0
        self.recent: deque[str] = deque(maxlen=5)

    def first(self, key: str, message: str) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            self.count += 1
            if len(self._seen) < self._limit:
                self._seen.add(key)
            self.recent.append(message)
            return True


@dataclass(slots=True)
class RootState:
    """Everything the worker knows about one watched root."""

    path: str
    rules: IgnoreRules
    index: RootIndex


class ChangeProcessor:
    """Decides pending entries and walks trees; only ever called from the worker thread."""

    def __init__(
        self,
        roots: dict[str, RootState],
        pending: PendingChanges,
        max_bytes: int,
        warnings: WarnOnce,
        stop: threading.Event,
        *,
        log_patterns: Sequence[str] = (),
        log_tail_bytes: int = 8192,
        log_min_interval_s: float = 0.0,
    ) -> None:
        self.roots = roots
        self.pending = pending
        self.max_bytes = max_bytes
        self.warnings = warnings
        self.stop = stop
        self.log_patterns = tuple(log_patterns)
        self.log_tail_bytes = log_tail_bytes
        self.log_min_interval_s = log_min_interval_s
        self.rescan: set[str] = set()
        self.initial_total = 0  # files picked on first walks, and how many were read
        self.initial_done = 0
        self._log_due: dict[str, float] = {}  # log path -> earliest time of its next read
        self._dropped: list[Event] = []

    # --- settled entries ------------------------------------------------------------------

    def process(self, batch: list[Pending], now: float) -> list[Event]:
        events: list[Event] = []
        in_batch = {item.path for item in batch}
        folders: list[Pending] = []
        for item in batch:
            if self.stop.is_set():
                break
            state = self.roots.get(item.root)
            if state is None:
                continue
            if item.is_dir:
                folders.append(item)
            else:
                events.extend(self._file(item, state, in_batch, now))
                if item.origin == "initial":
                    self.initial_done += 1
        if folders and not self.stop.is_set():
            self._folders(folders, now, in_batch)
        return events + self.take_dropped()

    def take_dropped(self) -> list[Event]:
        dropped, self._dropped = self._dropped, []
        return dropped

    def _file(self, item: Pending, state: RootState, in_batch: set[str], now: float) -> list[Event]:
        path = item.path
        index = state.index
        log_file = is_log(os.path.basename(path), self.log_patterns)
        if log_file:
            if now < self._log_due.get(path, 0.0):
                return []  # read later: the index keeps the old size, a walk requeues it
            known = index.get(path)
            size = None if known is None else fingerprint_size(known)
            snap = read_tail(path, size, self.log_tail_bytes, secret=is_secret_path(path))
        else:
            snap = read_snapshot(path, self.max_bytes, secret=is_secret_path(path))
        if snap.status in ("missing", "directory", "symlink"):
            target = item.moved_to
            if target is not None and (target in in_batch or target in self.pending):
                return []
            old = index.pop(path)
            return [] if old is None else [self._deleted(item, old)]
        if snap.status != "ok":
            self._skip(path, snap, "file_created" if index.get(path) is None else "file_modified")
            return []
        old_path = self._claim_move_source(item)
        old = index.get(path)
        new = fingerprint(snap.size, snap.mtime_ns)
        kind = classify(True, old, new, old_path is not None)
        if kind is None:
            return []
        if not index.put(path, new):
            self._index_full(state)
        if item.origin == "initial" and kind == "file_created":
            if snap.text is None or not snap.text.strip():
                return []  # binary or empty after all: indexed, nothing to tell
            kind = "file_indexed"
        if log_file and kind in ("file_created", "file_modified"):
            if snap.text is not None and not snap.text.strip():
                return []  # touched, or only whitespace appended
            self._log_due[path] = now + self.log_min_interval_s
            if len(self._log_due) > 4096:  # bounded: forget logs whose slot has passed
                self._log_due = {p: t for p, t in self._log_due.items() if t > now}
            kind = "log_appended"
        return [self._event(kind, item, snap, old_path)]

    def _claim_move_source(self, item: Pending) -> str | None:
        """The rename source, if it was indexed and is gone; it leaves the index."""
        source = item.moved_from
        if source is None or os.path.lexists(source):
            return None
        state = self.root_of(source)
        if state is None or state.index.pop(source) is None:
            return None
        self.pending.discard(source)
        return source

    def _folders(self, items: list[Pending], now: float, in_batch: set[str]) -> None:
        """Folders that appeared: queue their files (inotify misses those written before
        the watch on a new folder exists); a folder inside another new one is covered by
        its parent's walk. Folders that vanished (moved out, deleted): queue their indexed
        files as deletions, in one pass over the index per root."""
        vanished: dict[str, list[str]] = {}
        walked: list[str] = []
        for item in sorted(items, key=lambda i: i.path):
            path = item.path
            state = self.roots[item.root]
            if not (os.path.isdir(path) and not os.path.islink(path)):
                vanished.setdefault(item.root, []).append(path)
            elif not path.startswith(tuple(walked)) and not state.rules.ignored(path, True):
                walked.append(path + os.sep)
                self._queue_walk(state, path, now, origin="scan", deletions=False)
        for root, folders in vanished.items():
            self._queue_gone(self.roots[root], folders, now, in_batch)

    def _queue_gone(
        self, state: RootState, folders: list[str], now: float, in_batch: set[str]
    ) -> None:
        if len(folders) > _MAX_SWEEP_FOLDERS:  # a big rm -rf: one walk beats many sweeps
            self.rescan.add(state.path)
            return
        prefixes = tuple(state.index.key(f) + os.sep for f in folders)
        for key in [k for k in state.index.files if k.startswith(prefixes)]:
            path = os.path.join(state.path, key)
            if path not in in_batch and path not in self.pending:
                self._queue(state, path, now, "scan")

    # --- reconciliation -------------------------------------------------------------------

    def baseline(self, state: RootState, initial: int = 0, now: float = 0.0) -> int:
        """Fill an empty index from a walk (a root seen for the first time). Up to
        ``initial`` files, best first (``fs_initial``), are left out of the index and
        queued instead, so they are read and told as ``file_indexed``; returns how many."""
        index = state.index

        def candidates() -> Iterator[tuple[tuple[int, int, int, str], str]]:
            for path, st in walk_files(state.path, state.rules, self._walk_error, self.stop):
                if not index.put(path, fingerprint(st.st_size, st.st_mtime_ns)):
                    self._index_full(state)
                    return
                if initial and _candidate(path, st, self.max_bytes, self.log_patterns):
                    yield initial_rank(index.key(path), st.st_mtime_ns), path

        limit = max(0, min(initial, self.pending.capacity // 2 - len(self.pending)))
        if limit:
            chosen = heapq.nsmallest(limit, candidates())
        else:
            chosen = []
            deque(candidates(), maxlen=0)  # the walk still fills the index
        queued = 0
        for _, path in chosen:
            index.pop(path)
            if not self._queue(state, path, now, "initial"):
                break
            queued += 1
        self.initial_total += queued
        return queued

    def reconcile(self, state: RootState, now: float, origin: str = "reconcile") -> int:
        """Walk the root and queue every difference from the index; returns how many."""
        self.rescan.discard(state.path)
        return self._queue_walk(state, state.path, now, origin=origin, deletions=True)

    def _queue_walk(
        self, state: RootState, top: str, now: float, *, origin: str, deletions: bool
    ) -> int:
        index = state.index
        seen: set[str] = set()
        errors: list[str] = []
        queued = 0

        def on_error(path: str, exc: OSError) -> None:
            errors.append(path)
            self._walk_error(path, exc)

        for path, st in walk_files(top, state.rules, on_error, self.stop):
            key = index.key(path)
            seen.add(key)
            known = index.files.get(key)
            if known != fingerprint(st.st_size, st.st_mtime_ns):
                if path in self.pending:
                    continue
                if known is None and index.full and deletions:
                    continue  # past the cap we cannot tell new files from old ones
                if not self._queue(state, path, now, origin):
                    return queued
                queued += 1
        if deletions and not self.stop.is_set():
            queued += self._queue_vanished(state, seen, errors, now, origin)
        return queued

    def _queue_vanished(
        self, state: RootState, seen: set[str], errors: list[str], now: float, origin: str
    ) -> int:
        index, queued = state.index, 0
        blind = tuple(e + os.sep for e in errors)  # folders we could not list
        for key in [k for k in index.files if k not in seen]:
            path = os.path.join(state.path, key)
            if path.startswith(blind) or path in self.pending:
                continue
            if os.path.lexists(path) and state.rules.ignored(path, False):
                index.pop(path)  # newly ignored: forget quietly
                continue
            if not self._queue(state, path, now, origin):
                break
            queued += 1
        return queued

    def _queue(self, state: RootState, path: str, now: float, origin: str) -> bool:
        added = self.pending.touch(path, state.path, now, origin=origin, due_now=True)
        if added == "refused":
            self.rescan.add(state.path)
            return False
        return True

    def root_of(self, path: str) -> RootState | None:
        for root, state in self.roots.items():
            if path.startswith(root + os.sep):
                return state
        return None

    # --- events ---------------------------------------------------------------------------

    def _event(
        self, kind: str, item: Pending, snap: FileSnapshot, old_path: str | None
    ) -> WatcherEvent:
        mtime = datetime.fromtimestamp(snap.mtime_ns / 1e9, UTC)
        metadata: dict[str, object] = {
            "root": display_path(item.root),
            "size": snap.size,
            "mtime": mtime.isoformat(),
            "detected_by": item.origin,
        }
        if snap.reason is not None:
            metadata["reason"] = snap.reason
        if kind == "log_appended":
            metadata["offset"] = snap.offset
            if snap.restarted:
                metadata["restarted"] = True
        if snap.decode_errors:
            metadata["decode_errors"] = True
        if old_path is not None:
            metadata["old_path"] = display_path(old_path)
        shown = display_path(item.path)
        if shown != item.path:
            metadata["path_lossy"] = True
        return WatcherEvent(
            watcher=WATCHER,
            kind=kind,
            content=snap.text or "",
            path=shown,
            occurred_at=mtime,
            metadata_only=snap.text is None,
            metadata=metadata,
        )

    def _deleted(self, item: Pending, old: int) -> WatcherEvent:
        return WatcherEvent(
            watcher=WATCHER,
            kind="file_deleted",
            content="",
            path=display_path(item.path),
            metadata_only=True,
            metadata={
                "root": display_path(item.root),
                "size": fingerprint_size(old),
                "detected_by": item.origin,
            },
        )

    def _skip(self, path: str, snap: FileSnapshot, kind: str) -> None:
        reason = "special_file" if snap.status == "special" else "unreadable"
        detail = snap.error or "not a regular file"
        if self.warnings.first(path, f"{reason}: {display_path(path)}"):
            log.warning("filesystem watcher skips %s (%s: %s)", display_path(path), reason, detail)
            self._dropped.append(
                WatcherEventDropped(
                    watcher=WATCHER, kind=kind, reason=reason, path=display_path(path)
                )
            )

    def _walk_error(self, path: str, exc: OSError) -> None:
        if self.warnings.first(path, f"unreadable: {display_path(path)}"):
            log.warning("filesystem watcher cannot read %s: %s", display_path(path), exc.strerror)
            self._dropped.append(
                WatcherEventDropped(
                    watcher=WATCHER, kind="scan", reason="unreadable", path=display_path(path)
                )
            )

    def _index_full(self, state: RootState) -> None:
        key = f"index_full:{state.path}"
        message = (
            f"{display_path(state.path)} has more than {state.index.max_files} files; "
            "new ones are not reconciled (narrow the root or raise max_index_files)"
        )
        if self.warnings.first(key, message):
            log.warning("filesystem watcher: %s", message)
            self._dropped.append(
                WatcherEventDropped(
                    watcher=WATCHER,
                    kind="scan",
                    reason="index_full",
                    path=display_path(state.path),
                )
            )


def _candidate(path: str, st: os.stat_result, max_bytes: int, logs: Sequence[str]) -> bool:
    name = os.path.basename(path)
    return initial_candidate(name, st.st_size, max_bytes, logs) and not is_secret_path(path)
