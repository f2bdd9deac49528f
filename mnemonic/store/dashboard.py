"""Reads the dashboard needs and no other face does: memories counted per time bucket (so
the timeline stays one small answer at 100k memories), the episodes overlapping a range,
the episode a memory belongs to, and the merges a memory took part in (so the memory page
offers "unmerge" only on a gist). The graph walk is ``browse.py``'s, with a larger cap.

The counting here is SQL, what the timeline falls back to while the recall index is not
ready; once it is, ``app/aggregates.py`` counts from its columns (a scan of the table
costs half a second at 100k memories, the columns a millisecond)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta

from mnemonic.store.base import Filters
from mnemonic.store.database import Database
from mnemonic.store.episodes import EpisodeRow, episode_row
from mnemonic.store.sqlite import filter_sql
from mnemonic.timeutil import from_db, to_db


@dataclass(frozen=True, slots=True)
class Bucket:
    start: datetime
    counts: dict[str, int]  # memory type -> memories in this bucket
    episodes: int  # episodes starting in this bucket


@dataclass(frozen=True, slots=True)
class Timeline:
    since: datetime
    until: datetime
    bucket_seconds: float
    buckets: list[Bucket]
    total: int
    episodes: list[EpisodeRow]
    episodes_truncated: bool


@dataclass(frozen=True, slots=True)
class Merges:
    sources: list[tuple[str, str, str | None]]  # (memory id, state before, unmerged_at)
    merged_into: list[str]  # gists this memory was merged into (undone merges included)


def bucket_width(since: datetime, until: datetime, buckets: int) -> float:
    """Seconds per bucket so ``buckets`` of them cover ``[since, until)``; at least a
    millisecond (the resolution buckets are counted at)."""
    return max((until - since).total_seconds() / buckets, 0.001)


def bucket_index(at: datetime, since: datetime, width: float, buckets: int) -> int:
    """The bucket ``at`` falls in, clamped into range (``until`` itself goes in the last)."""
    index = int((at - since).total_seconds() // width)
    return min(max(index, 0), buckets - 1)


_DAY_MS = 86_400_000.0


def _episodes_between(
    conn: sqlite3.Connection,
    since: datetime,
    until: datetime,
    project: str | None,
    max_episodes: int,
) -> tuple[list[EpisodeRow], bool]:
    """Episodes overlapping ``[since, until]``, oldest first, at most ``max_episodes``;
    and whether more were left out."""
    where = ["e.started_at <= ?", "e.ended_at >= ?"]
    params: list[str | int] = [to_db(until), to_db(since)]
    if project is not None:
        where.append("e.project = ?")
        params.append(project)
    found = conn.execute(
        f"SELECT e.* FROM episodes e WHERE {' AND '.join(where)}"
        " ORDER BY e.started_at, e.id LIMIT ?",
        [*params, max_episodes + 1],
    ).fetchall()
    return [episode_row(r) for r in found[:max_episodes]], len(found) > max_episodes


def make_timeline(
    since: datetime,
    until: datetime,
    buckets: int,
    counts: list[dict[str, int]],
    episodes: tuple[list[EpisodeRow], bool],
) -> Timeline:
    """The answer from memories counted per bucket (however they were counted) and the
    episodes found; each episode starting inside the range is counted in its bucket."""
    width = bucket_width(since, until, buckets)
    found, truncated = episodes
    starts = [0] * buckets
    for ep in found:
        if ep.started_at >= since:
            starts[bucket_index(ep.started_at, since, width, buckets)] += 1
    return Timeline(
        since=since,
        until=until,
        bucket_seconds=width,
        buckets=[
            Bucket(since + timedelta(seconds=i * width), counts[i], starts[i])
            for i in range(buckets)
        ],
        total=sum(n for bucket in counts for n in bucket.values()),
        episodes=found,
        episodes_truncated=truncated,
    )


class SQLiteDashboard:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def span(self, filters: Filters) -> tuple[datetime, datetime] | None:
        """Oldest and newest timestamp of the memories passing ``filters`` (None if none)."""
        where, params = filter_sql(filters)

        def work(conn: sqlite3.Connection) -> tuple[datetime, datetime] | None:
            row = conn.execute(
                f"SELECT min(m.timestamp), max(m.timestamp) FROM memories m WHERE {where}", params
            ).fetchone()
            if row[0] is None:
                return None
            return from_db(row[0]), from_db(row[1])

        return await self.db.run_read(work)

    async def timeline(
        self,
        filters: Filters,
        since: datetime,
        until: datetime,
        buckets: int,
        project: str | None,
        max_episodes: int,
    ) -> Timeline:
        """Memories per bucket and type in ``[since, until]``, and the episodes that overlap
        it. The counting happens in SQLite (one grouped scan over the timestamp index), so
        the answer is ``buckets`` rows whatever the number of memories."""
        width = bucket_width(since, until, buckets)
        bounded = Filters(
            project=filters.project,
            sources=filters.sources,
            types=filters.types,
            states=filters.states,
            since=since,
            until=until,
        )
        where, params = filter_sql(bounded)
        start_jd = to_db(since)

        def work(conn: sqlite3.Connection) -> Timeline:
            rows = conn.execute(
                # rounded to whole milliseconds first: julianday's float error would put
                # a memory exactly on a bucket edge into the bucket before
                "SELECT CAST(round((julianday(m.timestamp) - julianday(?)) * ?) / ? AS INTEGER)"
                " AS b,"
                f" m.type, count(*) FROM memories m WHERE {where} GROUP BY b, m.type",
                [start_jd, _DAY_MS, width * 1000.0, *params],
            ).fetchall()
            counts: list[dict[str, int]] = [{} for _ in range(buckets)]
            for b, kind, n in rows:
                slot = counts[min(max(int(b), 0), buckets - 1)]
                slot[kind] = slot.get(kind, 0) + n
            episodes = _episodes_between(conn, since, until, project, max_episodes)
            return make_timeline(since, until, buckets, counts, episodes)

        return await self.db.run_read(work)

    async def episodes_between(
        self, since: datetime, until: datetime, project: str | None, max_episodes: int
    ) -> tuple[list[EpisodeRow], bool]:
        """Episodes overlapping the range (at most ``max_episodes``) and whether more were
        left out: what the timeline shows beside counts taken from the columns."""
        return await self.db.run_read(
            lambda conn: _episodes_between(conn, since, until, project, max_episodes)
        )

    async def episode_of(self, memory_id: str) -> EpisodeRow | None:
        def work(conn: sqlite3.Connection) -> EpisodeRow | None:
            row = conn.execute(
                "SELECT e.* FROM episodes e JOIN episode_memories em ON em.episode_id = e.id"
                " JOIN memories m ON m.seq = em.memory_seq WHERE m.id = ?",
                (memory_id,),
            ).fetchone()
            return episode_row(row) if row is not None else None

        return await self.db.run_read(work)

    async def merges(self, memory_id: str) -> Merges:
        def work(conn: sqlite3.Connection) -> Merges:
            sources = conn.execute(
                "SELECT s.id, mm.previous_state, mm.unmerged_at FROM memory_merges mm"
                " JOIN memories g ON g.seq = mm.gist_seq JOIN memories s ON s.seq = mm.source_seq"
                " WHERE g.id = ? ORDER BY s.seq",
                (memory_id,),
            ).fetchall()
            gists = conn.execute(
                "SELECT g.id FROM memory_merges mm JOIN memories g ON g.seq = mm.gist_seq"
                " JOIN memories s ON s.seq = mm.source_seq WHERE s.id = ? ORDER BY g.seq",
                (memory_id,),
            ).fetchall()
            return Merges(
                sources=[(r[0], r[1], r[2]) for r in sources],
                merged_into=[r[0] for r in gists],
            )

        return await self.db.run_read(work)
