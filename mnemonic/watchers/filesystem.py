"""The filesystem watcher: files created, changed, renamed and deleted under the configured
roots become ``WatcherEvent``s with the file's text (or metadata only).

Three threads of work meet here. watchdog's observer thread calls ``_on_raw_event``, which
only applies the ignore rules and records the path in :class:`PendingChanges` (a bounded,
coalescing dict, so a flood costs memory proportional to distinct paths, never to events).
The async ``run`` loop takes entries whose debounce has passed and hands them in batches
to one worker thread of its own, which reads files, updates the per-root index and builds
events; ``run`` then emits them. The same worker walks the trees: at start (a baseline,
or a comparison with the saved index), when a folder appears, and every
``reconcile_interval_s`` to catch what inotify missed. A root for which inotify runs out of
watches is polled by the same walk every ``poll_interval_s`` instead.

A root seen for the first time (no saved index) is not only recorded: its best files
(README, notes, docs first; ``fs_initial``) are read too, up to
``initial_index_max_files``, and health says how far that got ("indexing 120/200 files").
Log files give only what was appended (``log_appended``). When a ``.git`` appears under a
root, ``on_repository`` (the git watcher's ``hint``, connected by the composition root) is
told on the observer thread, so a new repository is watched within a poll.

The watcher observes only: no importance filtering, no redaction, no store access.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mnemonic.config import FilesystemWatcherConfig
from mnemonic.events.types import Event
from mnemonic.runtime.clock import Clock, SystemClock
from mnemonic.watchers.base import Emit, WatcherHealth
from mnemonic.watchers.fs_changes import ChangeProcessor, RootState, WarnOnce, display_path
from mnemonic.watchers.fs_ignore import IgnoreRules
from mnemonic.watchers.fs_index import RootIndex, load_state, save_state
from mnemonic.watchers.fs_observer import RootWatch, new_observer, schedule_roots, stop_observer
from mnemonic.watchers.fs_pending import PendingChanges, Touched
from mnemonic.watchers.fs_roots import decide_roots

log = logging.getLogger(__name__)

T = TypeVar("T")


class FilesystemWatcher:
    """Watches the configured roots until cancelled. ``home`` and ``clock`` are injectable
    for tests; ``exclude`` keeps the daemon's own folders out; ``state_path`` (optional)
    keeps the index across restarts so changes made while stopped are reported."""

    name = "filesystem"

    def __init__(
        self,
        config: FilesystemWatcherConfig,
        *,
        clock: Clock | None = None,
        home: str | os.PathLike[str] | None = None,
        exclude: tuple[str | os.PathLike[str], ...] = (),
        state_path: Path | None = None,
        on_repository: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self._clock: Clock = clock or SystemClock()
        self._home = os.fspath(home) if home is not None else str(Path.home())
        self._exclude = tuple(str(Path(os.fspath(p)).expanduser().resolve()) for p in exclude)
        self._state_path = state_path
        self._on_repository = on_repository
        self._pending = PendingChanges(config.max_pending, config.debounce_s, config.max_delay_s)
        self._warnings = WarnOnce()
        self._stop = threading.Event()
        self._roots: dict[str, RootState] = {}
        self._watches: list[RootWatch] = []
        self._processor = ChangeProcessor(
            self._roots,
            self._pending,
            config.max_file_bytes,
            self._warnings,
            self._stop,
            log_patterns=config.log_patterns,
            log_tail_bytes=config.log_tail_bytes,
            log_min_interval_s=config.log_min_interval_s,
        )
        self._state = "starting"
        self._message: str | None = None
        self._emitted: Counter[str] = Counter()
        self._detected: Counter[str] = Counter()
        self._observed = 0
        self._reconciliations = 0
        self._last_reconcile_ms: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._signalled = False
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._observer: Any = None
        self._saved_changes = -1
        self._busy = False

    # --- lifecycle ------------------------------------------------------------------------

    async def run(self, emit: Emit) -> None:
        """Watch until cancelled. Safe to call again after a crash (the supervisor restarts
        with the same object): roots are re-scheduled and the index is reconciled, not
        rebuilt, so changes made in between are reported."""
        if not self._plan():
            return
        self._stop.clear()
        self._state, self._message = "starting", None
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="mnemonic-fs-watcher"
        )
        try:
            await self._in_worker(self._start_observer)
            await self._in_worker(self._start_indexes)
            for event in self._processor.take_dropped():
                self._publish(emit, event)
            self._refresh_state()
            await self._serve(emit)
        finally:
            await self._shutdown()

    def _plan(self) -> bool:
        """Decide the roots; False (health says why) when there is nothing to watch."""
        if self._watches:  # a restart: same roots, schedule them again
            for watch in self._watches:
                if watch.refused is None:
                    watch.mode, watch.message = "pending", None
            return bool(self._roots)
        if not self.config.enabled or not self.config.roots:
            self._state = "disabled"
            self._message = "no roots configured" if self.config.enabled else "disabled"
            return False
        for decision in decide_roots(self.config.roots, self._home):
            watch = RootWatch(decision.path, refused=decision.refused)
            self._watches.append(watch)
            if decision.refused is None:
                rules = IgnoreRules(
                    decision.path,
                    self.config.ignore,
                    use_defaults=self.config.use_default_ignores,
                    use_gitignore=self.config.respect_gitignore,
                    excluded=self._exclude,
                )
                index = RootIndex(decision.path, self.config.max_index_files)
                self._roots[decision.path] = RootState(decision.path, rules, index)
            else:
                log.warning("filesystem watcher: %s: %s", decision.configured, decision.refused)
        if not self._roots:
            self._state = "disabled"
            self._message = "; ".join(w.message for w in self._watches if w.message)
            return False
        return True

    async def _shutdown(self) -> None:
        """Stop threads and save the index; the cleanup runs on the worker thread, so a
        second cancellation cannot leave the observer running."""
        self._stop.set()
        executor = self._executor
        if executor is None:
            return
        final = executor.submit(self._close)
        executor.shutdown(wait=False)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({asyncio.wrap_future(final)}, timeout=5.0)
        self._state = "stopped"

    def _close(self) -> None:
        """Runs on the worker after any job in flight, so it sees the observer even when
        the cancellation arrived while the observer was starting."""
        if self._observer is not None:
            stop_observer(self._observer)
            self._observer = None
        self._save()

    # --- the loop -------------------------------------------------------------------------

    async def _serve(self, emit: Emit) -> None:
        cfg, clock = self.config, self._clock
        next_full = clock.now() + cfg.reconcile_interval_s
        next_poll = clock.now() + cfg.poll_interval_s
        while True:
            self._rearm()
            now = clock.now()
            if now >= next_full:
                await self._reconcile(emit, [w.path for w in self._watches if w.active])
                next_full = clock.now() + cfg.reconcile_interval_s
                continue
            polled = [w.path for w in self._watches if w.mode == "polling"]
            if polled and now >= next_poll:
                await self._reconcile(emit, polled)
                next_poll = clock.now() + cfg.poll_interval_s
                continue
            if self._processor.rescan and len(self._pending) <= self._pending.capacity // 2:
                await self._reconcile(emit, sorted(self._processor.rescan))
                continue
            batch = self._pending.take_due(now, cfg.batch_size)
            if batch:
                self._busy = True
                events = await self._in_worker(self._processor.process, batch, now)
                for event in events:
                    self._publish(emit, event)
                self._busy = False
                continue
            deadlines = [next_full, next_poll if polled else next_full]
            due = self._pending.next_due()
            if due is not None:
                deadlines.append(due)
            await self._wait(min(deadlines) - now)

    async def _reconcile(self, emit: Emit, roots: list[str]) -> None:
        started = time.perf_counter()  # a measurement, not scheduling: real time
        self._busy = True
        queued = await self._in_worker(self._reconcile_roots, roots, self._clock.now())
        self._busy = False
        self._reconciliations += 1
        self._last_reconcile_ms = (time.perf_counter() - started) * 1000
        for event in self._processor.take_dropped():
            self._publish(emit, event)
        if queued:
            log.info("filesystem watcher: reconciliation queued %d changed paths", queued)

    def _reconcile_roots(self, roots: list[str], now: float) -> int:
        queued = 0
        for root in roots:
            state = self._roots.get(root)
            if state is not None and not self._stop.is_set():
                queued += self._processor.reconcile(state, now)
        self._save()
        return queued

    def _rearm(self) -> None:
        """Reset the wake-up before looking at the pending paths, so a path the observer
        adds after this point always wakes the loop (and one added before is seen)."""
        assert self._wake is not None
        self._wake.clear()
        self._signalled = False

    async def _wait(self, seconds: float) -> None:
        """Sleep on the injectable clock for ``seconds`` or until the observer thread
        reports a first pending path, whichever is sooner."""
        wake = self._wake
        assert wake is not None
        sleeper = asyncio.ensure_future(self._clock.sleep(max(0.0, seconds)))
        waiter = asyncio.ensure_future(wake.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waiter.cancel()

    async def _in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        executor = self._executor
        assert executor is not None
        return await asyncio.wrap_future(executor.submit(fn, *args))

    def _publish(self, emit: Emit, event: Event) -> None:
        emit(event)
        self._emitted[getattr(event, "kind", event.type)] += 1
        metadata = getattr(event, "metadata", None)
        if metadata:
            self._detected[str(metadata.get("detected_by"))] += 1

    # --- worker-thread jobs ---------------------------------------------------------------

    def _start_observer(self) -> None:
        self._observer = new_observer()
        schedule_roots(self._observer, self._watches, self._on_raw_event, self._stop)

    def _start_indexes(self) -> None:
        """Baseline each active root; with a saved index, report what changed meanwhile."""
        saved = load_state(self._state_path) if self._state_path is not None else {}
        now = self._clock.now()
        for watch in self._watches:
            state = self._roots.get(watch.path)
            if state is None or not watch.active or self._stop.is_set():
                continue
            if len(state.index):  # restarted after a crash: the index is still ours
                self._processor.reconcile(state, now, origin="restart")
                continue
            previous = saved.get(watch.path)
            if previous is None:
                queued = self._processor.baseline(state, self.config.initial_index_max_files, now)
                if queued:
                    log.info("filesystem watcher: reading %d files of new root", queued)
            else:
                state.index.load(previous)
                self._processor.reconcile(state, now, origin="start")
        self._save()  # so a crash before the first reconciliation still has a baseline

    def _save(self) -> None:
        """Write the index when it changed since the last write (a quiet tree costs
        nothing; 100,000 files are about 5 MB of JSON)."""
        changes = sum(s.index.changes for s in self._roots.values())
        if self._state_path is None or changes == self._saved_changes:
            return
        try:
            save_state(self._state_path, {r: s.index for r, s in self._roots.items()})
            self._saved_changes = changes
        except OSError as exc:
            log.warning("filesystem watcher cannot save its index: %s", exc)

    # --- observer thread ------------------------------------------------------------------

    def _on_raw_event(self, kind: str, src: str, dest: str | None, is_dir: bool) -> None:
        """Called on watchdog's thread for every raw event: filter, coalesce, wake."""
        self._observed += 1
        if self._on_repository is not None and kind in ("created", "moved"):
            target = dest if dest is not None else src
            if os.path.basename(target) == ".git":
                self._on_repository(os.path.dirname(target))
        now = self._clock.now()
        src_state = self._processor.root_of(src)
        src_ok = src_state is not None and not src_state.rules.ignored(src, is_dir)
        added: list[Touched] = []
        if dest is not None:
            dest_state = self._processor.root_of(dest)
            dest_ok = dest_state is not None and not dest_state.rules.ignored(dest, is_dir)
            if src_ok and src_state is not None:
                added.append(
                    self._touch(src, src_state, now, is_dir, moved_to=dest if dest_ok else None)
                )
            if dest_ok and dest_state is not None:
                added.append(
                    self._touch(dest, dest_state, now, is_dir, moved_from=src if src_ok else None)
                )
            if os.path.basename(dest) == ".gitignore" and dest_state is not None:
                dest_state.rules.invalidate()
        elif src_ok and src_state is not None:
            added.append(self._touch(src, src_state, now, is_dir))
        if os.path.basename(src) == ".gitignore" and src_state is not None:
            src_state.rules.invalidate()
        if "first" in added:
            self._signal()

    def _touch(
        self,
        path: str,
        state: RootState,
        now: float,
        is_dir: bool,
        *,
        moved_from: str | None = None,
        moved_to: str | None = None,
    ) -> Touched:
        result = self._pending.touch(
            path, state.path, now, is_dir=is_dir, moved_from=moved_from, moved_to=moved_to
        )
        if result == "refused":
            self._processor.rescan.add(state.path)
        return result

    def _signal(self) -> None:
        """Wake the loop when the first path of an idle period arrives. Later paths are due
        later than the deadline the loop already sleeps on; waking for each of them made the
        loop rescan the pending paths once per raw event during a flood."""
        if self._signalled or self._loop is None or self._wake is None:
            return
        self._signalled = True
        with contextlib.suppress(RuntimeError):  # the loop closed during shutdown
            self._loop.call_soon_threadsafe(self._wake.set)

    # --- health ---------------------------------------------------------------------------

    def _refresh_state(self) -> None:
        problems = [w.message for w in self._watches if w.message]
        self._state = "degraded" if problems else "running"
        self._message = "; ".join(p for p in problems if p) or None

    def health(self) -> WatcherHealth:
        """A fresh snapshot (callers may keep it; the watcher never mutates it)."""
        message = self._message
        done, total = self._processor.initial_done, self._processor.initial_total
        if done < total:
            progress = f"indexing {done}/{total} files of new roots"
            message = f"{progress}; {message}" if message else progress
        return WatcherHealth(
            state=self._state,
            message=message,
            events=sum(self._emitted.values()),
            warnings=self._warnings.count,
            detail=self._detail(),
        )

    def _detail(self) -> dict[str, Any]:
        return {
            "roots": [w.to_json() for w in self._watches],
            "pending": len(self._pending),
            "busy": self._busy,
            "pending_capacity": self._pending.capacity,
            "pending_high_water": self._pending.high_water,
            "pending_refused": self._pending.refused,
            # list() copies in one C call: the observer thread may add to the set meanwhile.
            "rescans_waiting": sorted(display_path(r) for r in list(self._processor.rescan)),
            "observed": self._observed,
            "emitted": dict(self._emitted),
            "detected_by": dict(self._detected),
            "indexed": {display_path(r): len(s.index) for r, s in self._roots.items()},
            "initial_index": {
                "done": self._processor.initial_done,
                "total": self._processor.initial_total,
            },
            "reconciliations": self._reconciliations,
            "last_reconcile_ms": self._last_reconcile_ms,
            "recent_warnings": list(self._warnings.recent),
        }
