"""When the recall index is saved as a checkpoint (``index/snapshot.py``).

A checkpoint plus the durable change log (migration 0008) is what lets a start load the
index in seconds instead of building it from SQLite (24 minutes at a million memories).
Saving is not free: the writer's lock is held while the arrays are written (about 0.5 s
at 100k memories, 6 s at a million), so writes queue behind it. The policy below spends
that cost where it buys the most:

- **after a build from SQLite**: the expensive state exists only in memory; a crash would
  cost the whole build again;
- **once enough has changed**: more than ``recall.snapshot_change_share`` of the store's
  size (at least ``snapshot_min_changes``), or any change once the checkpoint is older
  than ``snapshot_max_age_s``; a start replays every change since, so this bounds the
  replay. It waits for ``snapshot_quiet_s`` without a write, so an ingest burst is not
  stalled, unless twice the threshold has piled up;
- **at a stop** only when the last saves say it fits in ``snapshot_stop_budget_s``: the
  stop must end within its grace period (5 s), and the log already covers what a save
  would add, so skipping it costs the next start a replay, never a build.

A purge deletes the checkpoint (it holds vectors and postings of the purged memories); the
next save writes one without them. With ``recall.index_snapshot`` off nothing is saved and
the log is pruned on the same schedule, so it never grows.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from mnemonic.config import RecallConfig
from mnemonic.index.recall_index import RecallIndex
from mnemonic.index.snapshot import (
    Checkpoint,
    NotSaved,
    SnapshotInfo,
    discard_snapshot,
    forget_checkpoints,
    read_checkpoint,
    save_current,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
Run = Callable[[Callable[[Any], T]], Awaitable[T]]

# seconds a save takes per memory before one is measured (6.2 s at a million, loaded)
DEFAULT_SAVE_S_PER_MEMORY = 7e-6


@dataclass(frozen=True, slots=True)
class Policy:
    """The thresholds of the module docstring, from ``RecallConfig``."""

    change_share: float
    min_changes: int
    max_age_s: float
    quiet_s: float
    stop_budget_s: float

    @classmethod
    def of(cls, cfg: RecallConfig) -> Policy:
        return cls(
            change_share=cfg.snapshot_change_share,
            min_changes=cfg.snapshot_min_changes,
            max_age_s=cfg.snapshot_max_age_s,
            quiet_s=cfg.snapshot_quiet_s,
            stop_budget_s=cfg.snapshot_stop_budget_s,
        )

    def threshold(self, memories: int) -> int:
        return max(self.min_changes, int(self.change_share * memories))


def save_reason(
    policy: Policy,
    *,
    behind: int,
    memories: int,
    unsaved_build: bool,
    age_s: float | None,
    quiet_for_s: float,
) -> str | None:
    """Why a checkpoint is due now, or None. ``behind``: changes since the last one;
    ``unsaved_build``: the index was built from SQLite and not saved since; ``age_s``: the
    last checkpoint's age (None: there is none)."""
    if unsaved_build:
        return "built from SQLite"
    if behind <= 0:
        return None
    threshold = policy.threshold(memories)
    if behind >= 2 * threshold:
        return f"{behind} changes since the last checkpoint"
    quiet = quiet_for_s >= policy.quiet_s
    if behind >= threshold and quiet:
        return f"{behind} changes since the last checkpoint"
    if age_s is None:
        return "no checkpoint yet" if quiet else None
    if age_s >= policy.max_age_s and quiet:
        return f"the last checkpoint is {age_s / 3600:.1f} h old"
    return None


class Checkpointer:
    """Saves the recall index when :func:`save_reason` says so (see module docstring)."""

    def __init__(
        self,
        index: RecallIndex,
        run_read: Run[Any],
        run_maintenance: Run[Any],
        folder: Path,
        cfg: RecallConfig,
    ) -> None:
        self._index = index
        self._read = run_read
        self._maintain = run_maintenance
        self.folder = folder
        self.enabled = cfg.index_snapshot
        self.policy = Policy.of(cfg)
        self._saved_builds = 0  # index.builds when the last checkpoint was saved or loaded
        self._saved_at: float | None = None
        self._s_per_memory = DEFAULT_SAVE_S_PER_MEMORY
        self.last: SnapshotInfo | None = None
        self.last_reason: str | None = None
        self.last_error: str | None = None
        self.saves = 0
        self.skipped_at_stop = False
        self._discarding: asyncio.Task[None] | None = None
        self._saving = asyncio.Lock()  # one save at a time: a due tick skips a running one
        self._after_build: asyncio.Task[SnapshotInfo | None] | None = None

    # ---- the periodic job ------------------------------------------------------------------
    async def tick(self) -> SnapshotInfo | None:
        """One check (``recall.snapshot_check_s``): save if due; prune when disabled."""
        index = self._index
        if not index.ready or self._saving.locked():
            return None
        point = await self._read(read_checkpoint)
        if point is None:
            return None
        if not self.enabled:
            if point.behind:
                pruned = await self._maintain(forget_checkpoints)
                log.debug("recall index log pruned (%d changes; checkpoints are off)", pruned)
            return None
        if index.built_from == "snapshot" and self._saved_builds < index.builds:
            self._saved_builds = index.builds  # loaded from a checkpoint: that one counts
            self._saved_at = time.monotonic()
        reason = save_reason(
            self.policy,
            behind=point.behind,
            memories=len(index.columns),
            unsaved_build=index.built_from == "sqlite" and self._saved_builds < index.builds,
            age_s=None if self._saved_at is None else time.monotonic() - self._saved_at,
            quiet_for_s=time.monotonic() - index.last_change,
        )
        if reason is None:
            return None
        return await self.save(reason)

    async def save(self, reason: str) -> SnapshotInfo | None:
        """Save now (the write lock is held meanwhile). None when the index is in no state
        to be saved (logged); a failure is logged and never raised."""
        async with self._saving:
            return await self._save(reason)

    async def _save(self, reason: str) -> SnapshotInfo | None:
        index = self._index
        if not (self.enabled and index.ready):
            return None
        builds = index.builds
        stop = threading.Event()
        try:
            if self._discarding is not None:  # a purge's delete first: it globs our temp folder
                await asyncio.gather(self._discarding, return_exceptions=True)
            await index.settle()
            info: SnapshotInfo = await self._maintain(
                partial(save_current, index, self.folder, stop=stop)
            )
        except asyncio.CancelledError:
            stop.set()  # the writer's thread gives up between two files
            raise
        except NotSaved as exc:
            if str(exc) != self.last_error:  # e.g. a purge's HNSW slots not yet overwritten
                log.info("recall index checkpoint not saved: %s", exc)
            self.last_error = str(exc)
            return None
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            if error != self.last_error:  # a read-only folder fails every tick: say it once
                log.warning("saving the recall index checkpoint failed", exc_info=True)
            self.last_error = error
            return None
        self.last, self.last_reason, self.last_error = info, reason, None
        self.saves += 1
        self._saved_builds = builds
        self._saved_at = time.monotonic()
        if info.memories:
            self._s_per_memory = info.seconds / info.memories
        log.info("recall index checkpoint (%s): %.2f s", reason, info.seconds)
        return info

    async def to_load(self) -> Path | None:
        """The folder a start loads the index from; None with checkpoints off (an older
        run's checkpoint is deleted then: it would only go stale on disk)."""
        if self.enabled:
            return self.folder
        await asyncio.to_thread(discard_snapshot, self.folder)
        return None

    def built(self) -> None:
        """The index is ready: after a build from SQLite, save a checkpoint at once, in a
        task of its own (a crash now would cost the whole build again; the next tick may
        be a minute away, and a stop right after the build has no time for a save)."""
        if self._index.ready and self._index.built_from == "sqlite":
            self._after_build = asyncio.get_running_loop().create_task(
                self.save("built from SQLite"), name="mnemonic:index-checkpoint"
            )

    # ---- stop and purge ----------------------------------------------------------------
    def estimated_save_s(self) -> float:
        return self._s_per_memory * len(self._index.columns)

    async def at_stop(self) -> SnapshotInfo | None:
        """Save if anything changed since the last checkpoint and a save fits the stop's
        budget; otherwise the next start replays the log (or, with none, builds)."""
        self.skipped_at_stop = False
        pending = self._after_build
        if pending is not None and not pending.done():  # a save at this size overruns a stop
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
        if self._discarding is not None:
            await asyncio.gather(self._discarding, return_exceptions=True)
        if not (self.enabled and self._index.ready):
            return None
        point: Checkpoint | None = await self._read(read_checkpoint)
        if point is None:
            return None
        unsaved = self._index.built_from == "sqlite" and self._saved_builds < self._index.builds
        if point.behind == 0 and point.token is not None and not unsaved:
            return None  # the checkpoint on disk is current
        if self.estimated_save_s() > self.policy.stop_budget_s:
            self.skipped_at_stop = True
            log.info(
                "recall index not saved at stop (about %.1f s, over the %.1f s budget):"
                " the next start replays %d changes",
                self.estimated_save_s(),
                self.policy.stop_budget_s,
                point.behind,
            )
            return None
        return await self.save("stopping")

    def forgot(self) -> None:
        """Memories were purged: delete the checkpoint now (called on the event loop by
        the index when a change deletes memories)."""
        self._saved_at = None
        task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(discard_snapshot, self.folder), name="mnemonic:index-discard"
        )
        self._discarding = task
        task.add_done_callback(_log_discard_failure)

    def describe(self) -> dict[str, object]:
        """What ``/api/v1/health`` shows under ``recall_index.checkpoint``."""
        last = self.last
        return {
            "enabled": self.enabled,
            "saves": self.saves,
            "last_reason": self.last_reason,
            "last_seconds": None if last is None else round(last.seconds, 3),
            "last_bytes": None if last is None else last.bytes,
            "last_position": None if last is None else last.position,
            "last_error": self.last_error,
        }


def _log_discard_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("could not delete the recall index checkpoint", exc_info=task.exception())
