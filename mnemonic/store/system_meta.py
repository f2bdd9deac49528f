"""``system_meta``, the store's small key-value table: agents' marks and cursors, the
embedding model in use, one-off repairs done. Every store reads and writes it through these
two functions on the connection it already holds, so a write joins the caller's
transaction (a mark moves with the work it marks) and the upsert is spelled once."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping


def read_meta(conn: sqlite3.Connection, key: str) -> str | None:
    """The value under ``key``; None when there is none."""
    row = conn.execute("SELECT value FROM system_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def write_meta(conn: sqlite3.Connection, values: Mapping[str, str], stamp: str) -> None:
    """Set each key to its value (inserted or replaced), stamped ``stamp`` (``to_db``)."""
    conn.executemany(
        "INSERT INTO system_meta (key, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value,"
        " updated_at = excluded.updated_at",
        [(key, value, stamp) for key, value in values.items()],
    )
