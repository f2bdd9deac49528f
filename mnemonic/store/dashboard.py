"""Reads the dashboard needs and no other face does: memories counted per time bucket (so
the timeline stays one small answer at 100k memories), a graph of up to 2,000 nodes (light
rows, edges found from each node's own key range), the episode a memory belongs to, and
the merges a memory took part in (so the memory page offers "unmerge" only on a gist)."""

from __future__ import annotations

import json
import sqlite3
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta

from mnemonic.store.base import Filters
from mnemonic.store.database import Database
from mnemonic.store.episodes import EpisodeRow, _row
from mnemonic.store.models import Relation
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


@dataclass(frozen=True, slots=True)
class GraphNode:
    seq: int
    id: str
    summary: str
    type: str
    source: str
    project: str
    state: str
    salience: float
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class GraphEdge:
    source_seq: int
    target_seq: int
    relation: Relation
    strength: float


@dataclass(frozen=True, slots=True)
class NodeGraph:
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool


def bucket_width(since: datetime, until: datetime, buckets: int) -> float:
    """Seconds per bucket so ``buckets`` of them cover ``[since, until)``; at least a
    millisecond (the resolution buckets are counted at)."""
    return max((until - since).total_seconds() / buckets, 0.001)


def bucket_index(at: datetime, since: datetime, width: float, buckets: int) -> int:
    """The bucket ``at`` falls in, clamped into range (``until`` itself goes in the last)."""
    index = int((at - since).total_seconds() // width)
    return min(max(index, 0), buckets - 1)


_DAY_MS = 86_400_000.0
_NODE_COLUMNS = "seq, id, summary, type, source, project, state, salience, timestamp"


def _adjacent(conn: sqlite3.Connection, seq: int) -> list[int]:
    rows = conn.execute(
        "SELECT target_seq FROM associations WHERE source_seq = ? UNION"
        " SELECT source_seq FROM associations WHERE target_seq = ?",
        (seq, seq),
    ).fetchall()
    return [r[0] for r in rows]


def _subgraph(conn: sqlite3.Connection, seqs: list[int], truncated: bool) -> NodeGraph:
    """The nodes and the edges among them. Edges are read by source (one primary-key range
    per node) and kept when the target is in the set: asking SQLite for ``source IN (…) AND
    target IN (…)`` probes every pair, 4 million lookups (3 s) at 2,000 nodes."""
    if not seqs:
        return NodeGraph([], [], truncated)
    wanted = json.dumps(seqs)
    nodes = [
        GraphNode(r[0], r[1], r[2], r[3], r[4], r[5], r[6], float(r[7]), from_db(r[8]))
        for r in conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM memories"
            " WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
            (wanted,),
        )
    ]
    members = set(seqs)
    edges = [
        GraphEdge(r[0], r[1], Relation(r[2]), float(r[3]))
        for r in conn.execute(
            "SELECT a.source_seq, a.target_seq, a.relation, a.strength"
            " FROM json_each(?) AS s JOIN associations a ON a.source_seq = s.value",
            (wanted,),
        )
        if r[1] in members
    ]
    return NodeGraph(nodes, edges, truncated)


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
            total = 0
            for b, kind, n in rows:
                slot = counts[min(max(int(b), 0), buckets - 1)]
                slot[kind] = slot.get(kind, 0) + n
                total += n
            ep_where = ["e.started_at <= ?", "e.ended_at >= ?"]
            ep_params: list[str] = [to_db(until), to_db(since)]
            if project is not None:
                ep_where.append("e.project = ?")
                ep_params.append(project)
            found = conn.execute(
                f"SELECT e.* FROM episodes e WHERE {' AND '.join(ep_where)}"
                " ORDER BY e.started_at, e.id LIMIT ?",
                [*ep_params, max_episodes + 1],
            ).fetchall()
            episodes = [_row(r) for r in found]
            starts = [0] * buckets
            for ep in episodes[:max_episodes]:
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
                total=total,
                episodes=episodes[:max_episodes],
                episodes_truncated=len(episodes) > max_episodes,
            )

        return await self.db.run_read(work)

    async def graph_around(self, seq: int, depth: int, max_nodes: int) -> NodeGraph:
        """Breadth-first from one memory, at most ``depth`` hops and ``max_nodes`` nodes."""

        def work(conn: sqlite3.Connection) -> NodeGraph:
            seen = {seq}
            frontier = deque([(seq, 0)])
            truncated = False
            while frontier and not truncated:
                current, dist = frontier.popleft()
                if dist >= depth:
                    continue
                for other in _adjacent(conn, current):
                    if other in seen:
                        continue
                    if len(seen) >= max_nodes:
                        truncated = True
                        break
                    seen.add(other)
                    frontier.append((other, dist + 1))
            return _subgraph(conn, sorted(seen), truncated)

        return await self.db.run_read(work)

    async def graph_of(self, filters: Filters, max_nodes: int) -> NodeGraph:
        """The most recent ``max_nodes`` memories passing ``filters``, edges among them."""
        where, params = filter_sql(filters)

        def work(conn: sqlite3.Connection) -> NodeGraph:
            rows = conn.execute(
                f"SELECT m.seq FROM memories m WHERE {where} ORDER BY m.seq DESC LIMIT ?",
                [*params, max_nodes + 1],
            ).fetchall()
            seqs = [r[0] for r in rows]
            return _subgraph(conn, sorted(seqs[:max_nodes]), len(seqs) > max_nodes)

        return await self.db.run_read(work)

    async def episode_of(self, memory_id: str) -> EpisodeRow | None:
        def work(conn: sqlite3.Connection) -> EpisodeRow | None:
            row = conn.execute(
                "SELECT e.* FROM episodes e JOIN episode_memories em ON em.episode_id = e.id"
                " JOIN memories m ON m.seq = em.memory_seq WHERE m.id = ?",
                (memory_id,),
            ).fetchone()
            return _row(row) if row is not None else None

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
