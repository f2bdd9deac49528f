"""Marks that say "every memory (or logged query) up to this rowid is done".

Several cursors in ``system_meta`` are rowids: the episoder's watermark, consolidation's
merge mark, enrichment's watermark, dreaming's replay cursor and first-replay mark (seqs
of ``memories``), and dreaming's read position in ``retrieval_queries``. Both tables use
SQLite's plain rowids, which hand the highest freed rowid out again: after a purge of the
newest memory, the next memory gets its seq. A mark left at the purged seq would count
that memory as done, and it would never be grouped, compared for merges, enriched or
strengthened on its first replay.

So a purge lowers the marks to the newest rowid left, and an agent that read a mark,
worked, and writes it back lowers it the same way in the same transaction: a purge that
landed while it worked cannot be undone by the write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def lower_to_newest_memory(conn: sqlite3.Connection, keys: Sequence[str]) -> None:
    """Each of ``keys`` (seq marks) at most the newest seq in ``memories``."""
    _lower(conn, keys, "SELECT coalesce(max(seq), 0) FROM memories")


def lower_to_newest_query(conn: sqlite3.Connection, keys: Sequence[str]) -> None:
    """Each of ``keys`` (rowid marks) at most the newest rowid in ``retrieval_queries``."""
    _lower(conn, keys, "SELECT coalesce(max(rowid), 0) FROM retrieval_queries")


def _lower(conn: sqlite3.Connection, keys: Sequence[str], newest: str) -> None:
    if not keys:
        return
    conn.execute(
        f"UPDATE system_meta SET value = CAST(min(CAST(value AS INTEGER), ({newest})) AS TEXT)"
        f" WHERE key IN ({', '.join('?' * len(keys))})",
        tuple(keys),
    )
