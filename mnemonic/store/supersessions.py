"""Persistence of supersessions set or removed by hand: directed ``supersedes`` edges
(source = the newer memory, target = the older one it replaces)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from mnemonic.store.database import Database
from mnemonic.store.sql_lists import marks
from mnemonic.timeutil import to_db, utcnow


@dataclass(frozen=True, slots=True)
class SupersessionRow:
    newer_id: str
    older_id: str
    strength: float
    created_at: str


@dataclass(frozen=True, slots=True)
class Chain:
    """What replaces a memory and what it replaces (direct edges, newest first)."""

    superseded_by: list[SupersessionRow]
    supersedes: list[SupersessionRow]


class UnknownMemory(LookupError):
    def __init__(self, memory_id: str) -> None:
        super().__init__(memory_id)
        self.memory_id = memory_id


_ROWS = (
    "SELECT n.id AS newer_id, o.id AS older_id, a.strength, a.created_at FROM associations a"
    " JOIN memories n ON n.seq = a.source_seq JOIN memories o ON o.seq = a.target_seq"
    " WHERE a.relation = 'supersedes'"
)


def _seqs(conn: sqlite3.Connection, *ids: str) -> dict[str, int]:
    rows = conn.execute(f"SELECT id, seq FROM memories WHERE id IN ({marks(ids)})", ids).fetchall()
    seqs = {r["id"]: int(r["seq"]) for r in rows}
    for memory_id in ids:
        if memory_id not in seqs:
            raise UnknownMemory(memory_id)
    return seqs


def _row(row: sqlite3.Row) -> SupersessionRow:
    return SupersessionRow(row["newer_id"], row["older_id"], row["strength"], row["created_at"])


class SQLiteSupersessions:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, newer_id: str, older_id: str, strength: float = 1.0) -> bool:
        """Record that ``newer_id`` supersedes ``older_id``; whether the edge is new.
        The reverse edge, if any, is removed: two memories cannot replace each other."""

        def work(conn: sqlite3.Connection) -> bool:
            seqs = _seqs(conn, newer_id, older_id)
            newer, older = seqs[newer_id], seqs[older_id]
            conn.execute(
                "DELETE FROM associations WHERE source_seq = ? AND target_seq = ?"
                " AND relation = 'supersedes'",
                (older, newer),
            )
            now = to_db(utcnow())
            cur = conn.execute(
                "INSERT INTO associations (source_seq, target_seq, relation, strength,"
                " created_at, updated_at) VALUES (?, ?, 'supersedes', ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (newer, older, strength, now, now),
            )
            return cur.rowcount == 1

        return await self.db.run_write(work)

    async def remove(self, newer_id: str, older_id: str) -> bool:
        """Whether there was such an edge (in this direction)."""

        def work(conn: sqlite3.Connection) -> bool:
            seqs = _seqs(conn, newer_id, older_id)
            cur = conn.execute(
                "DELETE FROM associations WHERE source_seq = ? AND target_seq = ?"
                " AND relation = 'supersedes'",
                (seqs[newer_id], seqs[older_id]),
            )
            return cur.rowcount == 1

        return await self.db.run_write(work)

    async def chain(self, memory_id: str) -> Chain:
        def work(conn: sqlite3.Connection) -> Chain:
            seq = _seqs(conn, memory_id)[memory_id]
            newer = conn.execute(
                f"{_ROWS} AND a.target_seq = ? ORDER BY a.created_at DESC", (seq,)
            ).fetchall()
            older = conn.execute(
                f"{_ROWS} AND a.source_seq = ? ORDER BY a.created_at DESC", (seq,)
            ).fetchall()
            return Chain([_row(r) for r in newer], [_row(r) for r in older])

        return await self.db.run_read(work)
