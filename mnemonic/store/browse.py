"""Read models for browsing the memory (lists, graph, projects, stats) and amendments.

Kept apart from the hot write and recall paths in ``sqlite.py``; each coroutine is one
unit of work on a connection's own thread. The graph walk here serves both the browse
graph (500 nodes) and the dashboard's neighbourhood (2,000): the cap is the caller's.
"""

from __future__ import annotations

import json
import sqlite3
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemonic.llm.embedding import Vectors
from mnemonic.store.base import Filters
from mnemonic.store.database import Database
from mnemonic.store.models import (
    Association,
    Encoded,
    Memory,
    MemoryState,
    MemoryType,
    RawStatus,
    Relation,
    Source,
)
from mnemonic.store.sql_lists import IN_JSON, json_list, marks
from mnemonic.store.sqlite import filter_sql, memory_from_row
from mnemonic.store.vector_rows import VectorModels, write_vectors
from mnemonic.timeutil import from_db, to_db, utcnow


@dataclass(frozen=True, slots=True)
class Link:
    """An association seen from one memory: the other end and the edge."""

    other: Memory
    relation: Relation
    strength: float
    activation_count: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class GraphNode:
    """A memory as a graph draws it: the light columns, without content or metadata (at
    2,000 nodes the whole rows would be most of the answer's cost)."""

    seq: int
    id: str
    summary: str
    type: MemoryType
    source: Source
    project: str
    state: MemoryState
    salience: float
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class Graph:
    nodes: list[GraphNode]
    edges: list[Association]
    truncated: bool


@dataclass(frozen=True, slots=True)
class EdgeRow:
    source_id: str
    target_id: str
    source_seq: int
    target_seq: int
    relation: Relation
    strength: float
    activation_count: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ProjectRow:
    name: str
    memories: int
    active: int
    first_at: datetime | None
    last_at: datetime | None


@dataclass(frozen=True, slots=True)
class Amended:
    memory: Memory
    old_content: str


class SQLiteBrowser:
    """Browsing queries and amendments over the same database as ``SQLiteStore``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def list_memories(
        self, filters: Filters, limit: int, before_seq: int | None
    ) -> list[Memory]:
        """Newest first; ``before_seq`` is the keyset cursor of the previous page."""
        where, params = filter_sql(filters)
        if before_seq is not None:
            where += " AND m.seq < ?"
            params.append(before_seq)

        def work(conn: sqlite3.Connection) -> list[Memory]:
            rows = conn.execute(
                f"SELECT m.* FROM memories m WHERE {where} ORDER BY m.seq DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
            return [memory_from_row(r) for r in rows]

        return await self.db.run_read(work)

    async def links_of(self, seq: int, limit: int) -> list[Link]:
        """The strongest associations of one memory, in any state."""

        def work(conn: sqlite3.Connection) -> list[Link]:
            rows = conn.execute(
                "SELECT other, relation, strength, activation_count, created_at FROM ("
                " SELECT target_seq AS other, relation, strength, activation_count, created_at"
                " FROM associations WHERE source_seq = ? UNION ALL"
                " SELECT source_seq, relation, strength, activation_count, created_at"
                " FROM associations WHERE target_seq = ?)"
                " ORDER BY strength DESC, other LIMIT ?",
                (seq, seq, limit),
            ).fetchall()
            found = _memories_by_seq(conn, [r["other"] for r in rows])
            return [
                Link(
                    other=found[r["other"]],
                    relation=Relation(r["relation"]),
                    strength=float(r["strength"]),
                    activation_count=int(r["activation_count"]),
                    created_at=from_db(r["created_at"]),
                )
                for r in rows
                if r["other"] in found
            ]

        return await self.db.run_read(work)

    async def neighbours_in_time(self, memory: Memory, count: int) -> list[Memory]:
        """The memories of the same project just before and just after this one."""

        def work(conn: sqlite3.Connection) -> list[Memory]:
            before = conn.execute(
                "SELECT * FROM memories WHERE project = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (memory.project, memory.seq, count),
            ).fetchall()
            after = conn.execute(
                "SELECT * FROM memories WHERE project = ? AND seq > ? ORDER BY seq LIMIT ?",
                (memory.project, memory.seq, count),
            ).fetchall()
            return [memory_from_row(r) for r in reversed(before)] + [
                memory_from_row(r) for r in after
            ]

        return await self.db.run_read(work)

    async def graph_around(self, seq: int, depth: int, max_nodes: int) -> Graph:
        """Breadth-first from one memory, at most ``depth`` hops and ``max_nodes`` nodes;
        the walk stops at the first node that does not fit (``truncated``)."""

        def work(conn: sqlite3.Connection) -> Graph:
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

    async def graph_of(self, filters: Filters, max_nodes: int) -> Graph:
        """The most recent ``max_nodes`` memories passing ``filters`` and the edges among them."""
        where, params = filter_sql(filters)

        def work(conn: sqlite3.Connection) -> Graph:
            rows = conn.execute(
                f"SELECT m.seq FROM memories m WHERE {where} ORDER BY m.seq DESC LIMIT ?",
                [*params, max_nodes + 1],
            ).fetchall()
            seqs = [r[0] for r in rows]
            return _subgraph(conn, sorted(seqs[:max_nodes]), len(seqs) > max_nodes)

        return await self.db.run_read(work)

    async def list_associations(
        self,
        seq: int | None,
        relation: Relation | None,
        min_strength: float,
        limit: int,
        after: tuple[int, int, str] | None,
    ) -> list[EdgeRow]:
        """Edges in key order (keyset cursor ``after``), optionally of one memory."""
        where = ["a.strength >= ?"]
        params: list[Any] = [min_strength]
        if seq is not None:
            where.append("(a.source_seq = ? OR a.target_seq = ?)")
            params += [seq, seq]
        if relation is not None:
            where.append("a.relation = ?")
            params.append(relation.value)
        if after is not None:
            where.append("(a.source_seq, a.target_seq, a.relation) > (?, ?, ?)")
            params += list(after)

        def work(conn: sqlite3.Connection) -> list[EdgeRow]:
            rows = conn.execute(
                "SELECT a.*, s.id AS source_id, t.id AS target_id FROM associations a"
                " JOIN memories s ON s.seq = a.source_seq JOIN memories t ON t.seq = a.target_seq"
                f" WHERE {' AND '.join(where)}"
                " ORDER BY a.source_seq, a.target_seq, a.relation LIMIT ?",
                [*params, limit],
            ).fetchall()
            return [
                EdgeRow(
                    source_id=r["source_id"],
                    target_id=r["target_id"],
                    source_seq=r["source_seq"],
                    target_seq=r["target_seq"],
                    relation=Relation(r["relation"]),
                    strength=float(r["strength"]),
                    activation_count=int(r["activation_count"]),
                    created_at=from_db(r["created_at"]),
                    updated_at=from_db(r["updated_at"]),
                )
                for r in rows
            ]

        return await self.db.run_read(work)

    async def projects(self) -> list[ProjectRow]:
        def work(conn: sqlite3.Connection) -> list[ProjectRow]:
            rows = conn.execute(
                "SELECT project, count(*) AS n,"
                " sum(state IN ('active', 'fading')) AS active,"
                " min(timestamp) AS first_at, max(timestamp) AS last_at"
                " FROM memories GROUP BY project ORDER BY last_at DESC, project"
            ).fetchall()
            return [
                ProjectRow(
                    name=r["project"],
                    memories=int(r["n"]),
                    active=int(r["active"] or 0),
                    first_at=from_db(r["first_at"]) if r["first_at"] else None,
                    last_at=from_db(r["last_at"]) if r["last_at"] else None,
                )
                for r in rows
            ]

        return await self.db.run_read(work)

    async def gauges(self) -> tuple[dict[str, int], dict[str, int]]:
        """Memories by state and raw memories by status, every known value present (0
        rather than a missing series): what ``/metrics`` exports. Both are index-only
        counts (8 ms each at 100k memories); the whole breakdown scans the table twice
        more (230 ms), too much for every Prometheus scrape."""

        def work(conn: sqlite3.Connection) -> tuple[dict[str, int], dict[str, int]]:
            states, statuses = _grouped(conn, _BY_STATE), _grouped(conn, _RAW_BY_STATUS)
            return (
                {s.value: states.get(s.value, 0) for s in MemoryState},
                {s.value: statuses.get(s.value, 0) for s in RawStatus},
            )

        return await self.db.run_read(work)

    async def breakdown(self, failed_limit: int = 20) -> dict[str, Any]:
        """Counts by state, source, type and project; raw memories by status; the failed.
        The memory counts scan the table (230 ms at 100k memories): the application layer
        takes them from the recall index's columns when it is ready (``app/aggregates.py``)
        and asks only :meth:`raw_breakdown` here."""

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            return {
                "by_state": _grouped(conn, _BY_STATE),
                "by_source": _grouped(
                    conn, "SELECT source, count(*) FROM memories GROUP BY source"
                ),
                "by_type": _grouped(conn, "SELECT type, count(*) FROM memories GROUP BY type"),
                "by_project": _grouped(
                    conn,
                    "SELECT project, count(*) AS n FROM memories GROUP BY project"
                    f" ORDER BY n DESC, project LIMIT {TOP_PROJECTS}",
                ),
                **_raw_breakdown(conn, failed_limit),
            }

        return await self.db.run_read(work)

    async def raw_breakdown(self, failed_limit: int = 20) -> dict[str, Any]:
        """What :meth:`breakdown` adds to the memory counts, all index-only or bounded:
        raw memories by status, the association count and the latest failures."""
        return await self.db.run_read(lambda conn: _raw_breakdown(conn, failed_limit))

    async def amend(
        self,
        memory_id: str,
        content: str,
        digest: str,
        enc: Encoded,
        reason: str | None,
        vector: tuple[Vectors, VectorModels, Vectors] | None,
    ) -> Amended | None:
        """Replace the content, keep every link, and record the old text.

        ``vector`` (the new vector, the models it records and the new passage vectors) is
        stored only for a memory that already had one; a memory still waiting for the
        encoder gets its vectors from there.
        """

        def work(conn: sqlite3.Connection) -> Amended | None:
            row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                return None
            now = to_db(utcnow())
            conn.execute(
                "INSERT INTO memory_amendments (memory_id, old_content, new_content, reason,"
                " created_at) VALUES (?, ?, ?, ?, ?)",
                (memory_id, row["content"], content, reason, now),
            )
            conn.execute(
                "UPDATE memories SET content = ?, content_hash = ?, summary = ?, concepts = ?,"
                " significance = ?, updated_at = ? WHERE seq = ?",
                (
                    content,
                    digest,
                    enc.summary,
                    json.dumps(list(enc.concepts)),
                    enc.significance,
                    now,
                    row["seq"],
                ),
            )
            conn.execute(
                "UPDATE memories_fts SET content = ?, summary = ?, concepts = ? WHERE rowid = ?",
                (content, enc.summary, " ".join(enc.concepts), row["seq"]),
            )
            if vector is not None and row["embedded"]:
                values, models, passages = vector
                write_vectors(conn, row["seq"], models, values, passages)
            new = conn.execute("SELECT * FROM memories WHERE seq = ?", (row["seq"],)).fetchone()
            return Amended(memory_from_row(new), row["content"])

        return await self.db.run_write(work)

    async def amendments(self, memory_id: str) -> list[dict[str, Any]]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT old_content, new_content, reason, created_at FROM memory_amendments"
                " WHERE memory_id = ? ORDER BY id",
                (memory_id,),
            ).fetchall()
            return [dict(r) for r in rows]

        return await self.db.run_read(work)


def _memories_by_seq(conn: sqlite3.Connection, seqs: Sequence[int]) -> dict[int, Memory]:
    if not seqs:
        return {}
    rows = conn.execute(
        f"SELECT * FROM memories WHERE seq IN ({marks(seqs)})", list(seqs)
    ).fetchall()
    return {r["seq"]: memory_from_row(r) for r in rows}


def _adjacent(conn: sqlite3.Connection, seq: int) -> list[int]:
    rows = conn.execute(
        "SELECT target_seq FROM associations WHERE source_seq = ? UNION"
        " SELECT source_seq FROM associations WHERE target_seq = ?",
        (seq, seq),
    ).fetchall()
    return [r[0] for r in rows]


_NODE_COLUMNS = "seq, id, summary, type, source, project, state, salience, timestamp"


def _subgraph(conn: sqlite3.Connection, seqs: list[int], truncated: bool) -> Graph:
    """The nodes (light rows, in seq order) and the edges among them."""
    if not seqs:
        return Graph([], [], truncated)
    wanted = json_list(seqs)
    nodes = [
        GraphNode(
            seq=r[0],
            id=r[1],
            summary=r[2],
            type=MemoryType(r[3]),
            source=Source(r[4]),
            project=r[5],
            state=MemoryState(r[6]),
            salience=float(r[7]),
            timestamp=from_db(r[8]),
        )
        for r in conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM memories WHERE seq IN {IN_JSON} ORDER BY seq",
            (wanted,),
        )
    ]
    # each node's own edges through the primary key, the other end checked here: an
    # `IN (..) AND IN (..)` over both columns made SQLite test every pair of nodes
    # (3.0 s for 2,000 nodes over 200k edges, against 0.05 s this way)
    inside = set(seqs)
    edges = [
        Association(r[0], r[1], Relation(r[2]), float(r[3]))
        for r in conn.execute(
            "SELECT a.source_seq, a.target_seq, a.relation, a.strength"
            " FROM json_each(?) AS j JOIN associations AS a ON a.source_seq = j.value",
            (wanted,),
        )
        if r[1] in inside
    ]
    return Graph(nodes, edges, truncated)


TOP_PROJECTS = 100
"""The projects ``/stats`` lists, the largest first."""


def _raw_breakdown(conn: sqlite3.Connection, failed_limit: int) -> dict[str, Any]:
    failed = conn.execute(
        "SELECT id, error, attempts, created_at FROM raw_memories WHERE status = 'failed'"
        " ORDER BY created_at DESC LIMIT ?",
        (failed_limit,),
    ).fetchall()
    return {
        "raw_by_status": _grouped(conn, _RAW_BY_STATUS),
        "associations": conn.execute("SELECT count(*) FROM associations").fetchone()[0],
        "failed": [
            {
                "raw_id": r["id"],
                "error": r["error"],
                "attempts": r["attempts"],
                "created_at": r["created_at"],
            }
            for r in failed
        ],
    }


_BY_STATE = "SELECT state, count(*) FROM memories GROUP BY state"
_RAW_BY_STATUS = "SELECT status, count(*) FROM raw_memories GROUP BY status"


def _grouped(conn: sqlite3.Connection, sql: str) -> dict[str, int]:
    return {str(k): int(n) for k, n in conn.execute(sql)}
