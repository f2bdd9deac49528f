"""The watchdog side of the filesystem watcher: one observer, one recursive watch per root,
and the fallback to polling when inotify runs out of watches or instances.

watchdog is imported here, lazily, and nowhere else. Each root is scheduled after the
observer has started, so an inotify limit error names the root that hit it (scheduling
before ``start`` raises from ``start`` for whichever root failed first). The watch only
asks for create, modify, move and delete: without ``IN_OPEN``/``IN_CLOSE_NOWRITE`` the
watcher's own reads do not come back to it as events.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemonic.watchers.fs_roots import inotify_limit_advice, is_inotify_limit

log = logging.getLogger(__name__)

RawCallback = Callable[[str, str, str | None, bool], None]
"""``(event_type, src_path, dest_path or None, is_directory)``, on the observer thread."""


@dataclass(slots=True)
class RootWatch:
    """One configured root and how it is watched: ``inotify`` (native events; FSEvents or
    kqueue elsewhere), ``polling`` (walked every ``poll_interval_s``), ``missing`` or
    ``refused``; ``message`` is the health line when it is not plain ``inotify``."""

    path: str
    refused: str | None = None
    mode: str = "pending"
    message: str | None = None

    def __post_init__(self) -> None:
        if self.refused is not None:
            self.mode = "refused"
            self.message = f"{self.path}: {self.refused}"

    @property
    def active(self) -> bool:
        return self.mode in ("inotify", "polling")

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "mode": self.mode, "message": self.message}


def new_observer() -> Any:
    """A started observer with no watches yet (watchdog picks inotify, FSEvents, ...)."""
    from watchdog.observers import Observer

    observer = Observer()
    observer.start()
    return observer


def schedule_roots(
    observer: Any, watches: list[RootWatch], callback: RawCallback, stop: threading.Event
) -> None:
    """Schedule every pending root (blocking: adding inotify watches walks each tree).
    Roots that cannot be watched natively are set to polling, with the reason."""
    handler = _make_handler(callback)
    event_filter = _event_filter()
    for watch in watches:
        if stop.is_set():
            return
        if watch.mode != "pending":
            continue
        if not os.path.isdir(watch.path):
            watch.mode = "missing"
            watch.message = f"{watch.path}: not a folder (create it and restart the daemon)"
            log.warning("filesystem watcher: %s", watch.message)
            continue
        try:
            observer.schedule(handler, watch.path, recursive=True, event_filter=event_filter)
        except OSError as exc:
            _release_leaked_inotify(exc)
            advice = inotify_limit_advice(exc) if is_inotify_limit(exc) else str(exc)
            watch.mode = "polling"
            watch.message = f"{watch.path}: {advice}"
            log.warning("filesystem watcher: %s", watch.message)
        else:
            watch.mode = "inotify"


def stop_observer(observer: Any, timeout_s: float = 2.0) -> None:
    """Stop the emitter threads (closing their inotify descriptors) and the dispatcher."""
    observer.stop()
    observer.join(timeout_s)


def _event_filter() -> list[Any]:
    from watchdog.events import (
        DirCreatedEvent,
        DirDeletedEvent,
        DirMovedEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        FileModifiedEvent,
        FileMovedEvent,
    )

    return [
        FileCreatedEvent,
        FileModifiedEvent,
        FileMovedEvent,
        FileDeletedEvent,
        DirCreatedEvent,
        DirMovedEvent,
        DirDeletedEvent,
    ]


def _make_handler(callback: RawCallback) -> Any:
    from watchdog.events import FileSystemEvent, FileSystemEventHandler

    class _Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            try:
                src = os.fsdecode(event.src_path)
                dest = None
                if event.event_type == "moved" and event.dest_path:
                    dest = os.fsdecode(event.dest_path)
                callback(event.event_type, src, dest, event.is_directory)
            except Exception:  # an exception here would end watchdog's dispatcher thread
                log.exception("filesystem watcher: failed to handle %s", event.event_type)

    return _Handler()


def _release_leaked_inotify(exc: OSError) -> None:
    """Close the inotify instance that watchdog leaks when adding watches fails.

    watchdog 6's ``Inotify.__init__`` opens the inotify descriptor (and a pipe), then adds
    a watch per folder; when that raises ENOSPC half-way, the object is dropped without
    closing anything, so the watches already added stay charged to the user's limit and
    starve every other inotify user (editors, other roots). The half-built object is still
    referenced by the traceback's frames; closing its descriptors releases those watches.
    """
    try:
        from watchdog.observers.inotify_c import Inotify
    except ImportError:  # not Linux
        return
    seen: set[int] = set()
    tb = exc.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, Inotify) and id(candidate) not in seen:
            seen.add(id(candidate))
            with contextlib.suppress(OSError):
                candidate._close_resources()
        tb = tb.tb_next
