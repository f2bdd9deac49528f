"""Persistence of episodes (``episodes``, ``episode_memories``; migration 0006).

The episoder reads memories after its watermark (``memories.seq``, kept in
``system_meta``) in bounded batches and, in the same transaction, regroups the stretch of
stored episodes each batch reshapes (see :mod:`mnemonic.cognition.episodes`), writes the
memberships and advances the watermark: a crash between batches loses nothing and
repeats nothing. Merged and archived memories keep their membership; only a purge removes
it (``store/purge.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemonic.cognition.episode_description import Description, MemberText
from mnemonic.cognition.episodes import (
    Existing,
    Planned,
    Rules,
    Stamp,
    assign_ids,
    close_before,
    next_region,
)
from mnemonic.jsonsafe import loads_stored
from mnemonic.store.database import Database
from mnemonic.store.sql_lists import marks
from mnemonic.store.system_meta import read_meta, write_meta
from mnemonic.timeutil import from_db, to_db

WATERMARK_KEY = "episodes.watermark_seq"
_PAGE = 16  # stored episodes read at a time while a region grows
_CONTENT_CHARS = 2000  # member content read for descriptions (commands, grounding)


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    id: str
    project: str
    state: str
    title: str
    summary: str
    concepts: tuple[str, ...]
    files: tuple[str, ...]
    commands: tuple[str, ...]
    started_at: datetime
    ended_at: datetime
    salience: float
    memory_count: int
    described_by: str
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None


@dataclass(frozen=True, slots=True)
class MemberBrief:
    """A member memory as an episode lists it."""

    id: str
    summary: str
    timestamp: datetime
    type: str
    state: str
    source: str


@dataclass(frozen=True, slots=True)
class BatchResult:
    taken: int  # memories grouped
    touched: tuple[str, ...]  # episodes created or reshaped (now open)
    created: int
    removed: int  # stored episodes absorbed into others
    more: bool  # memories after the watermark are still waiting


def _strings(value: str) -> tuple[str, ...]:
    loaded = loads_stored(value, [])
    return tuple(str(v) for v in loaded) if isinstance(loaded, list) else ()


def episode_row(r: sqlite3.Row) -> EpisodeRow:
    """An ``episodes`` row (``SELECT e.*``) as an :class:`EpisodeRow`."""
    return EpisodeRow(
        id=r["id"],
        project=r["project"],
        state=r["state"],
        title=r["title"],
        summary=r["summary"],
        concepts=_strings(r["concepts"]),
        files=_strings(r["files"]),
        commands=_strings(r["commands"]),
        started_at=from_db(r["started_at"]),
        ended_at=from_db(r["ended_at"]),
        salience=float(r["salience"]),
        memory_count=int(r["memory_count"]),
        described_by=r["described_by"],
        created_at=from_db(r["created_at"]),
        updated_at=from_db(r["updated_at"]),
        closed_at=from_db(r["closed_at"]) if r["closed_at"] else None,
    )


def _stamps(conn: sqlite3.Connection, episode_id: str) -> tuple[Stamp, ...]:
    rows = conn.execute(
        "SELECT m.seq, m.timestamp FROM episode_memories e JOIN memories m"
        " ON m.seq = e.memory_seq WHERE e.episode_id = ? ORDER BY m.timestamp, m.seq",
        (episode_id,),
    ).fetchall()
    return tuple(Stamp(from_db(r[1]), int(r[0])) for r in rows)


class _SqlSource:
    """The stored episodes of one project, for :func:`next_region` (inside the batch's
    write transaction, so each region sees the ones written before it)."""

    def __init__(self, conn: sqlite3.Connection, project: str) -> None:
        self.conn = conn
        self.project = project

    def _existing(self, episode_id: str) -> Existing | None:
        stamps = _stamps(self.conn, episode_id)
        return Existing(episode_id, stamps) if stamps else None

    def last_starting_at_or_before(self, t: datetime) -> Existing | None:
        rows = self.conn.execute(
            "SELECT id FROM episodes WHERE project = ? AND started_at <= ?"
            " ORDER BY started_at DESC, id DESC LIMIT 4",
            (self.project, to_db(t)),
        ).fetchall()
        for (episode_id,) in rows:
            found = self._existing(episode_id)
            if found is not None:
                return found
        return None

    def starting_after(self, t: datetime) -> Iterator[Existing]:
        key: tuple[str, str] = (to_db(t), "\uffff")
        while True:
            rows = self.conn.execute(
                "SELECT id, started_at FROM episodes WHERE project = ?"
                " AND (started_at, id) > (?, ?) ORDER BY started_at, id LIMIT ?",
                (self.project, key[0], key[1], _PAGE),
            ).fetchall()
            if not rows:
                return
            for episode_id, started in rows:
                key = (started, episode_id)
                found = self._existing(episode_id)
                if found is not None:
                    yield found


def _write(
    conn: sqlite3.Connection,
    project: str,
    planned: Sequence[Planned],
    removed: Sequence[str],
    now: str,
) -> None:
    for p in planned:
        if p.created:
            conn.execute(
                "INSERT INTO episodes (id, project, state, started_at, ended_at, memory_count,"
                " created_at, updated_at) VALUES (?, ?, 'open', ?, ?, ?, ?, ?)",
                (p.id, project, to_db(p.start), to_db(p.end), len(p.stamps), now, now),
            )
        elif p.changed:
            conn.execute(
                "UPDATE episodes SET state = 'open', closed_at = NULL, started_at = ?,"
                " ended_at = ?, memory_count = ?, updated_at = ? WHERE id = ?",
                (to_db(p.start), to_db(p.end), len(p.stamps), now, p.id),
            )
        if p.added:  # members it kept need no write
            conn.executemany(
                "INSERT INTO episode_memories (episode_id, memory_seq) VALUES (?, ?)"
                " ON CONFLICT (memory_seq) DO UPDATE SET episode_id = excluded.episode_id",
                [(p.id, seq) for seq in p.added],
            )
    for episode_id in removed:
        conn.execute("DELETE FROM episode_memories WHERE episode_id = ?", (episode_id,))
        conn.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))


def _watermark(conn: sqlite3.Connection) -> int:
    value = read_meta(conn, WATERMARK_KEY)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


class SQLiteEpisodes:
    """Episodes over the same database as ``SQLiteStore``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- grouping -----------------------------------------------------------------------
    async def assign_batch(
        self, limit: int, rules: Rules, new_id: Callable[[], str], now: datetime
    ) -> BatchResult:
        """Group the next ``limit`` memories after the watermark, in one transaction."""

        def work(conn: sqlite3.Connection) -> BatchResult:
            mark = _watermark(conn)
            rows = conn.execute(
                "SELECT m.seq, m.project, m.timestamp,"
                " EXISTS (SELECT 1 FROM memory_merges g WHERE g.gist_seq = m.seq)"
                " FROM memories m WHERE m.seq > ?"
                " AND NOT EXISTS (SELECT 1 FROM episode_memories e WHERE e.memory_seq = m.seq)"
                " ORDER BY m.seq LIMIT ?",
                (mark, limit),
            ).fetchall()
            if not rows:
                return BatchResult(0, (), 0, 0, False)
            by_project: dict[str, list[Stamp]] = {}
            for seq, project, stamp, gist in rows:
                if gist:  # a consolidation gist is no new work: its sources are members
                    continue
                by_project.setdefault(project, []).append(Stamp(from_db(stamp), int(seq)))
            stamp_now = to_db(now)
            touched: dict[str, None] = {}
            created = removed_count = 0
            for project, pending in by_project.items():
                source = _SqlSource(conn, project)
                rest: Sequence[Stamp] = pending
                while rest:
                    region = next_region(source, rest, rules)
                    planned, removed = assign_ids(region, new_id)
                    _write(conn, project, planned, removed, stamp_now)
                    for p in planned:
                        if p.changed:
                            touched[p.id] = None
                    for gone in removed:
                        touched.pop(gone, None)
                    created += sum(p.created for p in planned)
                    removed_count += len(removed)
                    rest = region.rest
            last = int(rows[-1][0])
            write_meta(conn, {WATERMARK_KEY: str(last)}, stamp_now)
            more = (
                conn.execute("SELECT 1 FROM memories WHERE seq > ? LIMIT 1", (last,)).fetchone()
                is not None
            )
            return BatchResult(len(rows), tuple(touched), created, removed_count, more)

        return await self.db.run_write(work)

    async def watermark(self) -> int:
        return await self.db.run_read(_watermark)

    # ---- closing and describing ---------------------------------------------------------
    async def due(self, now: datetime, rules: Rules, limit: int) -> list[str]:
        """Open episodes nothing can extend in real time any more, oldest end first."""
        end_before, start_before = close_before(now, rules)

        def work(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "SELECT id FROM episodes WHERE state = 'open' AND (ended_at < ? OR started_at < ?)"
                " ORDER BY ended_at, id LIMIT ?",
                (to_db(end_before), to_db(start_before), limit),
            ).fetchall()
            return [r[0] for r in rows]

        return await self.db.run_read(work)

    async def members(self, episode_id: str, limit: int) -> list[MemberText]:
        """Up to ``limit`` members, most salient first, for describing the episode."""

        def work(conn: sqlite3.Connection) -> list[MemberText]:
            rows = conn.execute(
                "SELECT m.id, m.seq, m.timestamp, m.summary, substr(m.content, 1, ?) AS content,"
                " m.concepts, m.type, m.source, m.salience, m.metadata FROM episode_memories e"
                " JOIN memories m ON m.seq = e.memory_seq WHERE e.episode_id = ?"
                " ORDER BY m.salience DESC, m.timestamp, m.seq LIMIT ?",
                (_CONTENT_CHARS, episode_id, limit),
            ).fetchall()
            members: list[MemberText] = []
            for r in rows:
                meta = loads_stored(r["metadata"], {})
                members.append(
                    MemberText(
                        id=r["id"],
                        seq=int(r["seq"]),
                        timestamp=from_db(r["timestamp"]),
                        summary=r["summary"],
                        content=r["content"],
                        concepts=_strings(r["concepts"]),
                        type=r["type"],
                        source=r["source"],
                        salience=float(r["salience"]),
                        metadata=meta if isinstance(meta, dict) else {},
                    )
                )
            return members

        return await self.db.run_read(work)

    async def save_description(
        self, episode_id: str, description: Description, now: datetime, *, close: bool
    ) -> bool:
        """Store a description; with ``close`` also close the episode (only if it is still
        open). False when there is no such episode (or it was already closed)."""

        def work(conn: sqlite3.Connection) -> bool:
            stamp = to_db(now)
            cur = conn.execute(
                "UPDATE episodes SET title = ?, summary = ?, concepts = ?, files = ?,"
                " commands = ?, salience = ?, described_by = ?, updated_at = ?,"
                " state = CASE WHEN ? THEN 'closed' ELSE state END,"
                " closed_at = CASE WHEN ? THEN ? ELSE closed_at END"
                " WHERE id = ? AND (NOT ? OR state = 'open')",
                (
                    description.title,
                    description.summary,
                    json.dumps(list(description.concepts)),
                    json.dumps(list(description.files)),
                    json.dumps(list(description.commands)),
                    min(max(description.salience, 0.0), 1.0),
                    description.described_by,
                    stamp,
                    close,
                    close,
                    stamp,
                    episode_id,
                    close,
                ),
            )
            return cur.rowcount > 0

        return await self.db.run_write(work)

    # ---- reading ------------------------------------------------------------------------
    async def get(self, episode_id: str) -> EpisodeRow | None:
        def work(conn: sqlite3.Connection) -> EpisodeRow | None:
            row = conn.execute("SELECT * FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            return episode_row(row) if row else None

        return await self.db.run_read(work)

    async def episodes_of(self, seqs: Sequence[int]) -> dict[int, str]:
        """The episode of each memory that has one (recall spreads some answers over
        episodes; ``episode_memories.memory_seq`` is unique, so this is index lookups)."""
        if not seqs:
            return {}

        def work(conn: sqlite3.Connection) -> dict[int, str]:
            rows = conn.execute(
                "SELECT memory_seq, episode_id FROM episode_memories"
                f" WHERE memory_seq IN ({marks(seqs)})",
                list(seqs),
            ).fetchall()
            return {int(r["memory_seq"]): str(r["episode_id"]) for r in rows}

        return await self.db.run_read(work)

    async def memories_of(self, episode_id: str, limit: int) -> list[MemberBrief]:
        """The episode's memories in time order (any state: merged and archived too)."""

        def work(conn: sqlite3.Connection) -> list[MemberBrief]:
            rows = conn.execute(
                "SELECT m.id, m.summary, m.timestamp, m.type, m.state, m.source"
                " FROM episode_memories e JOIN memories m ON m.seq = e.memory_seq"
                " WHERE e.episode_id = ? ORDER BY m.timestamp, m.seq LIMIT ?",
                (episode_id, limit),
            ).fetchall()
            return [
                MemberBrief(
                    id=r["id"],
                    summary=r["summary"],
                    timestamp=from_db(r["timestamp"]),
                    type=r["type"],
                    state=r["state"],
                    source=r["source"],
                )
                for r in rows
            ]

        return await self.db.run_read(work)

    async def list(
        self,
        *,
        project: str | None = None,
        state: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        after: tuple[str, str] | None = None,
    ) -> list[EpisodeRow]:
        """Newest first (by start). ``since``/``until`` keep episodes that overlap that
        time; ``after`` is the keyset cursor ``(started_at, id)`` of the previous page."""
        where: list[str] = []
        params: list[Any] = []
        if project is not None:
            where.append("project = ?")
            params.append(project)
        if state is not None:
            where.append("state = ?")
            params.append(state)
        if since is not None:
            where.append("ended_at >= ?")
            params.append(to_db(since))
        if until is not None:
            where.append("started_at <= ?")
            params.append(to_db(until))
        if after is not None:
            where.append("(started_at, id) < (?, ?)")
            params += list(after)
        clause = " AND ".join(where) or "1"

        def work(conn: sqlite3.Connection) -> list[EpisodeRow]:
            rows = conn.execute(
                f"SELECT * FROM episodes WHERE {clause} ORDER BY started_at DESC, id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
            return [episode_row(r) for r in rows]

        return await self.db.run_read(work)

    async def counts(self) -> dict[str, int]:
        def work(conn: sqlite3.Connection) -> dict[str, int]:
            found = {"open": 0, "closed": 0}
            for state, n in conn.execute("SELECT state, count(*) FROM episodes GROUP BY state"):
                found[str(state)] = int(n)
            return found

        return await self.db.run_read(work)
