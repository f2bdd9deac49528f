"""Persistence of watched files' memories: which memory is the current one of each path
(``file_memories``, migration 0004), its metadata kept current, and the explicit link from
a "what changed" memory to its file's memory.

The link is written here rather than left to the encoding agent: the agent links by
similarity, and a small diff summary need not resemble the whole file it belongs to.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemonic.jsonsafe import dumps_stored, loads_stored
from mnemonic.store.database import Database
from mnemonic.store.models import Relation
from mnemonic.timeutil import from_db, to_db, utcnow


@dataclass(frozen=True, slots=True)
class FileRecord:
    """The current memory of one watched path."""

    path: str
    memory_id: str
    versions: int  # versions of the file this memory has held (1 = never amended)
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class LinkMade:
    source_seq: int
    target_seq: int
    created: bool  # False when the pair already had this relation (strength kept at max)


def _record(row: sqlite3.Row) -> FileRecord:
    deleted = row["deleted_at"]
    return FileRecord(
        path=row["path"],
        memory_id=row["memory_id"],
        versions=int(row["versions"]),
        deleted_at=from_db(deleted) if deleted else None,
    )


class SQLiteFiles:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def file(self, path: str) -> FileRecord | None:
        def work(conn: sqlite3.Connection) -> FileRecord | None:
            row = conn.execute("SELECT * FROM file_memories WHERE path = ?", (path,)).fetchone()
            return _record(row) if row else None

        return await self.db.run_read(work)

    async def files_with_content(self, content_hash: str) -> list[FileRecord]:
        """Mapped files whose live memory holds exactly this content (a moved file's new
        path is recognised by its content: see ``FileMemories``)."""

        def work(conn: sqlite3.Connection) -> list[FileRecord]:
            rows = conn.execute(
                "SELECT f.* FROM memories m JOIN file_memories f ON f.memory_id = m.id"
                " WHERE m.content_hash = ? AND m.state IN ('active', 'fading')",
                (content_hash,),
            ).fetchall()
            return [_record(r) for r in rows]

        return await self.db.run_read(work)

    async def save_file(
        self, record: FileRecord, metadata: dict[str, Any], release: str | None = None
    ) -> None:
        """Make ``record`` the path's current memory, in one transaction with: the keys of
        ``metadata`` set on that memory's metadata (a ``None`` value removes the key), and
        the mapping of ``release`` (a move's old path) removed."""

        def work(conn: sqlite3.Connection) -> None:
            now = to_db(utcnow())
            if release is not None and release != record.path:
                conn.execute("DELETE FROM file_memories WHERE path = ?", (release,))
            conn.execute(
                "INSERT INTO file_memories (path, memory_id, versions, deleted_at, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET"
                " memory_id = excluded.memory_id, versions = excluded.versions,"
                " deleted_at = excluded.deleted_at, updated_at = excluded.updated_at",
                (
                    record.path,
                    record.memory_id,
                    record.versions,
                    to_db(record.deleted_at) if record.deleted_at else None,
                    now,
                    now,
                ),
            )
            row = conn.execute(
                "SELECT metadata FROM memories WHERE id = ?", (record.memory_id,)
            ).fetchone()
            if row is None or not metadata:
                return
            current = loads_stored(row["metadata"], {})
            merged = current if isinstance(current, dict) else {}
            for key, value in metadata.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            conn.execute(
                "UPDATE memories SET metadata = ?, updated_at = ? WHERE id = ?",
                (dumps_stored(merged), now, record.memory_id),
            )

        await self.db.run_write(work)

    async def link(
        self, from_id: str, to_id: str, relation: Relation, strength: float
    ) -> LinkMade | None:
        """An association between two memories (stored low seq -> high seq, as the encoder
        stores them); None when either memory is unknown or they are the same."""

        def work(conn: sqlite3.Connection) -> LinkMade | None:
            rows = conn.execute(
                "SELECT id, seq FROM memories WHERE id IN (?, ?)", (from_id, to_id)
            ).fetchall()
            seqs = {r["id"]: int(r["seq"]) for r in rows}
            if from_id == to_id or len(seqs) != 2:
                return None
            low, high = sorted((seqs[from_id], seqs[to_id]))
            now = to_db(utcnow())
            exists = conn.execute(
                "SELECT 1 FROM associations WHERE source_seq = ? AND target_seq = ?"
                " AND relation = ?",
                (low, high, relation.value),
            ).fetchone()
            conn.execute(
                "INSERT INTO associations (source_seq, target_seq, relation, strength,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
                " strength = max(strength, excluded.strength), updated_at = excluded.updated_at",
                (low, high, relation.value, strength, now, now),
            )
            return LinkMade(low, high, exists is None)

        return await self.db.run_write(work)
