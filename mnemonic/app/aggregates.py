"""Counts over every memory for the dashboard and ``/stats`` (projects, memories by state,
type, source and project, the timeline's buckets), taken from the recall index's columns.

SQL answers these with a scan of the ``memories`` table, half a second at 100k memories
(a ``GROUP BY`` reads every row: the columns grouped on are not all in one index). The
recall index already holds those columns as arrays, kept equal to SQLite by every write
(applied right after the commit, before the write returns: ``Database.follow_changes``),
so the same counts are a few vectorised passes, about a millisecond at 100k. While the
index is not ready (building at start, stale after a failed change) the SQL reads answer,
so no answer ever comes from an index that may be behind.

The numpy work runs in a worker thread over one :class:`ColumnView`; the pure functions
below take the view and return plain values, and are tested against the SQL answers.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import numpy as np

from mnemonic.index.columns import SOURCES, STATES, TYPES, BoolArray, ColumnView, MemoryColumns
from mnemonic.store.base import Filters
from mnemonic.store.browse import TOP_PROJECTS, ProjectRow, SQLiteBrowser
from mnemonic.store.dashboard import SQLiteDashboard, Timeline, bucket_width, make_timeline
from mnemonic.store.models import MemoryState
from mnemonic.timeutil import ensure_utc

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LIVE = np.array([STATES.index(MemoryState.ACTIVE.value), STATES.index(MemoryState.FADING.value)])


class ColumnSource(Protocol):
    """The recall index as these counts see it (``index/recall_index.py``)."""

    @property
    def ready(self) -> bool: ...

    @property
    def columns(self) -> MemoryColumns: ...


# ---- pure counting over one view -----------------------------------------------------------


def from_epoch(seconds: float) -> datetime:
    """A column timestamp back to the stored instant, to the microsecond (the columns hold
    whole microseconds divided by a million, so rounding recovers them exactly)."""
    return _EPOCH + timedelta(microseconds=round(seconds * 1_000_000))


def held(view: ColumnView) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Seqs holding a memory whose project code the view can name. A purge running on the
    event loop clears a row's state before its project, and a project created after the
    view was taken has no name in it: both rows are left out, not failed on."""
    known = (view.project >= 0) & (view.project < len(view.projects))
    return np.flatnonzero((view.state != 0) & known)


def _named(counts: np.ndarray[Any, Any], names: tuple[str, ...], *, blank: bool) -> dict[str, int]:
    """Counts by code as counts by name, zeros left out; code 0 of a state, type or source
    means no value (``blank=False``), a project named "" is a real one."""
    return {
        names[code]: int(n)
        for code, n in enumerate(counts.tolist())
        if n and (blank or names[code])
    }


def memory_counts(view: ColumnView) -> dict[str, dict[str, int]]:
    """Memories by state, source, type and project (the ``TOP_PROJECTS`` largest, then by
    name), every state counted: the memory half of ``/stats``. Only values that occur are
    keys, as a SQL ``GROUP BY`` gives them."""
    seqs = held(view)
    projects = np.bincount(view.project[seqs], minlength=len(view.projects))
    by_project = _named(projects, view.projects, blank=True)
    top = sorted(by_project.items(), key=lambda item: (-item[1], item[0]))[:TOP_PROJECTS]
    return {
        "by_state": _named(
            np.bincount(view.state[seqs], minlength=len(STATES)), STATES, blank=False
        ),
        "by_source": _named(
            np.bincount(view.source[seqs], minlength=len(SOURCES)), SOURCES, blank=False
        ),
        "by_type": _named(np.bincount(view.type[seqs], minlength=len(TYPES)), TYPES, blank=False),
        "by_project": dict(top),
    }


def project_rows(view: ColumnView) -> list[ProjectRow]:
    """Each project with memories: how many, how many active or fading, the first and last
    timestamp; most recently active first (then by name), as ``SQLiteBrowser.projects``."""
    seqs = held(view)
    if len(seqs) == 0:
        return []
    codes = view.project[seqs]
    stamps = view.timestamp[seqs]
    size = len(view.projects)
    counts = np.bincount(codes, minlength=size)
    live = np.bincount(codes[np.isin(view.state[seqs], _LIVE)], minlength=size)
    first = np.full(size, np.inf)
    last = np.full(size, -np.inf)
    np.minimum.at(first, codes, stamps)
    np.maximum.at(last, codes, stamps)
    present = np.flatnonzero(counts).tolist()
    present.sort(key=lambda code: (-last[code], view.projects[code]))
    return [
        ProjectRow(
            name=view.projects[code],
            memories=int(counts[code]),
            active=int(live[code]),
            first_at=from_epoch(float(first[code])),
            last_at=from_epoch(float(last[code])),
        )
        for code in present
    ]


def _passing(view: ColumnView, mask: BoolArray) -> np.ndarray[Any, np.dtype[np.int64]]:
    # the mask was computed just after the view was taken: a growth in between makes it
    # longer, by rows written meanwhile
    n = min(len(mask), len(view.state))
    return np.flatnonzero(mask[:n])


def span_of(view: ColumnView, mask: BoolArray) -> tuple[datetime, datetime] | None:
    """Oldest and newest timestamp of the memories in ``mask`` (None if none)."""
    seqs = _passing(view, mask)
    if len(seqs) == 0:
        return None
    stamps = view.timestamp[seqs]
    return from_epoch(float(stamps.min())), from_epoch(float(stamps.max()))


def bucket_counts(
    view: ColumnView, mask: BoolArray, since: datetime, width: float, buckets: int
) -> list[dict[str, int]]:
    """Memories in ``mask`` per bucket and type. As the SQL count does: the offset from
    ``since`` rounded to whole milliseconds, then divided by the width; out-of-range
    buckets clamped (``until`` itself falls in the last)."""
    seqs = _passing(view, mask)
    offset_ms = np.floor((view.timestamp[seqs] - ensure_utc(since).timestamp()) * 1000.0 + 0.5)
    index = np.clip(np.floor(offset_ms / (width * 1000.0)), 0, buckets - 1).astype(np.int64)
    kinds = len(TYPES)
    grid = np.bincount(index * kinds + view.type[seqs], minlength=buckets * kinds)
    counts: list[dict[str, int]] = [{} for _ in range(buckets)]
    for cell in np.flatnonzero(grid).tolist():
        bucket, kind = divmod(cell, kinds)
        if TYPES[kind]:
            counts[bucket][TYPES[kind]] = int(grid[cell])
    return counts


# ---- the service ---------------------------------------------------------------------------


class Aggregates:
    """The counts from the columns when the recall index is ready, else from SQL."""

    def __init__(
        self, index: ColumnSource, browser: SQLiteBrowser, dashboard: SQLiteDashboard
    ) -> None:
        self._index = index
        self._browser = browser
        self._dashboard = dashboard

    def _columns(self) -> MemoryColumns | None:
        return self._index.columns if self._index.ready else None

    async def projects(self) -> list[ProjectRow]:
        columns = self._columns()
        if columns is None:
            return await self._browser.projects()
        return await asyncio.to_thread(project_rows, columns.view())

    async def breakdown(self) -> dict[str, Any]:
        """What ``/stats`` reports of the store: memory counts, raw memories by status, the
        association count and the latest failures."""
        columns = self._columns()
        if columns is None:
            return await self._browser.breakdown()
        counts = await asyncio.to_thread(memory_counts, columns.view())
        return {**counts, **await self._browser.raw_breakdown()}

    async def span(self, filters: Filters) -> tuple[datetime, datetime] | None:
        columns = self._columns()
        if columns is None:
            return await self._dashboard.span(filters)
        return await asyncio.to_thread(lambda: span_of(columns.view(), columns.mask(filters)))

    async def timeline(
        self,
        filters: Filters,
        since: datetime,
        until: datetime,
        buckets: int,
        project: str | None,
        max_episodes: int,
    ) -> Timeline:
        """Memories per bucket and type in ``[since, until]`` and the episodes overlapping
        it (those always from SQL: a few hundred rows through their own index)."""
        columns = self._columns()
        if columns is None:
            return await self._dashboard.timeline(
                filters, since, until, buckets, project, max_episodes
            )
        width = bucket_width(since, until, buckets)
        bounded = Filters(
            project=filters.project,
            sources=filters.sources,
            types=filters.types,
            states=filters.states,
            since=since,
            until=until,
        )
        counts = await asyncio.to_thread(
            lambda: bucket_counts(columns.view(), columns.mask(bounded), since, width, buckets)
        )
        episodes = await self._dashboard.episodes_between(since, until, project, max_episodes)
        return make_timeline(since, until, buckets, counts, episodes)
