"""Persistence of runtime exclusions (paths perception must ignore)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime

from mnemonic.store.database import Database
from mnemonic.timeutil import from_db, to_db, utcnow


@dataclass(frozen=True, slots=True)
class Exclusion:
    path: str  # absolute, normalised; stored in the ``pattern`` column
    reason: str
    origin: str  # user | auto
    created_at: datetime


_COLUMNS = "SELECT pattern, reason, origin, created_at FROM runtime_exclusions"


def _exclusion(row: sqlite3.Row) -> Exclusion:
    return Exclusion(row["pattern"], row["reason"], row["origin"], from_db(row["created_at"]))


class SQLiteExclusions:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def all(self) -> list[Exclusion]:
        def work(conn: sqlite3.Connection) -> list[Exclusion]:
            rows = conn.execute(f"{_COLUMNS} ORDER BY created_at, pattern").fetchall()
            return [_exclusion(r) for r in rows]

        return await self.db.run_read(work)

    async def add(self, path: str, reason: str, origin: str) -> tuple[Exclusion, bool]:
        """Returns the exclusion and whether it is new (adding twice is not an error)."""

        def work(conn: sqlite3.Connection) -> tuple[Exclusion, bool]:
            cur = conn.execute(
                "INSERT INTO runtime_exclusions (pattern, reason, origin, created_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (pattern) DO NOTHING",
                (path, reason, origin, to_db(utcnow())),
            )
            row = conn.execute(f"{_COLUMNS} WHERE pattern = ?", (path,)).fetchone()
            return _exclusion(row), cur.rowcount == 1

        return await self.db.run_write(work)

    async def remove(self, path: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("DELETE FROM runtime_exclusions WHERE pattern = ?", (path,))
            return cur.rowcount == 1

        return await self.db.run_write(work)
