"""Persistence of LLM enrichment: which memories still carry only their heuristic encoding,
the re-encode queue, and the write that replaces an encoding.

A memory is *heuristically encoded* unless its metadata says ``encoded_by: "llm"`` for its
current content (``encoded_hash`` equals ``content_hash``): an amendment re-encodes the
content heuristically without touching metadata, and the hash tells the two apart.

Two sources of work, both bounded and kept in ``system_meta``:

* the watermark (``enrichment.watermark``): the highest memory seq already considered, so
  new memories are enriched in arrival order;
* the re-encode queue (``enrichment.queue``): seqs queued by ``mark_for_reencode`` (after
  an LLM outage), a JSON list of at most :data:`MAX_QUEUE` entries.

The write changes the ``memories`` row and its ``memories_fts`` row in one transaction;
the content and the raw observation are never touched. The in-memory recall index follows
through the writer's change feed.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from mnemonic.jsonsafe import dumps_stored, loads_stored
from mnemonic.store.database import Database
from mnemonic.store.marks import lower_to_newest_memory
from mnemonic.store.models import MemoryType
from mnemonic.store.sql_lists import IN_JSON, json_list
from mnemonic.store.system_meta import read_meta, write_meta
from mnemonic.timeutil import to_db, utcnow

WATERMARK_KEY = "enrichment.watermark"
QUEUE_KEY = "enrichment.queue"
MAX_QUEUE = 10_000
"""Most memories the re-encode queue holds; asking for more queues nothing beyond it."""

_LIVE = "m.state IN ('active', 'fading')"
# CASE keeps json_extract away from a metadata text that is not JSON (it would raise)
_LLM_ENCODED = (
    "(CASE WHEN json_valid(m.metadata) THEN"
    " coalesce(json_extract(m.metadata, '$.encoded_by'), '') = 'llm'"
    " AND coalesce(json_extract(m.metadata, '$.encoded_hash'), '') = m.content_hash"
    " ELSE 0 END)"
)
_STALE_LLM = (
    "(CASE WHEN json_valid(m.metadata) THEN"
    " coalesce(json_extract(m.metadata, '$.encoded_by'), '') = 'llm' ELSE 0 END)"
)
_CANDIDATE_SQL = (
    "SELECT m.seq, m.id, m.content, m.content_hash, m.type, m.salience, m.project,"
    " r.type AS raw_type FROM memories m JOIN raw_memories r ON r.id = m.raw_id"
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A heuristically encoded memory to ask the LLM about."""

    seq: int
    id: str
    content: str
    content_hash: str
    type: MemoryType
    fixed_type: bool  # the writer gave the type explicitly: the LLM does not change it
    salience: float
    project: str


@dataclass(frozen=True, slots=True)
class NewWork:
    """Candidates after the watermark, and the seq the watermark may move to once all of
    them are done (memories in between were not eligible)."""

    candidates: list[Candidate]
    scanned_to: int


@dataclass(frozen=True, slots=True)
class QueuedWork:
    candidates: list[Candidate]
    examined: list[int]  # queue entries looked at (the ineligible ones are dropped)
    size: int  # queue length before this batch


@dataclass(frozen=True, slots=True)
class Enrichment:
    """The new encoding of one memory. ``content_hash`` is the hash the LLM saw: when the
    content changed since (an amendment), the write is skipped."""

    seq: int
    content_hash: str
    summary: str
    concepts: tuple[str, ...]
    type: MemoryType
    significance: float
    salience_shift: float  # added to the current salience (reinforcement and decay kept)
    metadata: dict[str, Any] = field(default_factory=dict)  # keys set on the memory's metadata


@dataclass(frozen=True, slots=True)
class Queued:
    added: int
    size: int


class EnrichmentStore(Protocol):
    """What the enrichment agent needs (implemented by :class:`SQLiteEnrichment`)."""

    async def watermark(self) -> int | None: ...

    async def new_work(self, after_seq: int, created_since: datetime, limit: int) -> NewWork: ...

    async def queued_work(self, limit: int) -> QueuedWork: ...

    async def queue_size(self) -> int: ...

    async def mark_for_reencode(self, since: datetime, limit: int) -> Queued: ...

    async def settle(self, watermark: int | None, dequeued: list[int], now: datetime) -> None: ...

    async def apply(self, enrichment: Enrichment, now: datetime) -> bool: ...


def _candidate(row: sqlite3.Row) -> Candidate:
    return Candidate(
        seq=int(row["seq"]),
        id=row["id"],
        content=row["content"],
        content_hash=row["content_hash"],
        type=MemoryType(row["type"]),
        fixed_type=row["raw_type"] is not None,
        salience=float(row["salience"]),
        project=row["project"],
    )


def _read_queue(conn: sqlite3.Connection) -> list[int]:
    stored = read_meta(conn, QUEUE_KEY)
    value = loads_stored(stored, []) if stored is not None else []
    if not isinstance(value, list):
        return []
    return [int(v) for v in value if isinstance(v, int) and not isinstance(v, bool)]


class SQLiteEnrichment:
    """The enrichment agent's reads and writes over one ``Database``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def watermark(self) -> int | None:
        """The highest seq already considered; None before the first cycle."""

        def work(conn: sqlite3.Connection) -> int | None:
            value = read_meta(conn, WATERMARK_KEY)
            try:
                return int(value) if value is not None else None
            except ValueError:
                return None

        return await self.db.run_read(work)

    async def max_seq(self) -> int:
        def work(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0])

        return await self.db.run_read(work)

    async def new_work(self, after_seq: int, created_since: datetime, limit: int) -> NewWork:
        """Up to ``limit`` live, heuristically encoded memories after ``after_seq`` that
        arrived at or after ``created_since``, oldest first. Older ones are left to an
        explicit re-encode: after a long outage the backlog is the user's call."""

        def work(conn: sqlite3.Connection) -> NewWork:
            top = int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0])
            rows = conn.execute(
                f"{_CANDIDATE_SQL} WHERE m.seq > ? AND m.seq <= ? AND m.created_at >= ?"
                f" AND {_LIVE} AND NOT {_LLM_ENCODED} ORDER BY m.seq LIMIT ?",
                (after_seq, top, to_db(created_since), limit),
            ).fetchall()
            found = [_candidate(r) for r in rows]
            scanned_to = found[-1].seq if len(found) == limit else max(top, after_seq)
            return NewWork(found, scanned_to)

        return await self.db.run_read(work)

    async def queued_work(self, limit: int) -> QueuedWork:
        """The first ``limit`` entries of the re-encode queue that are still eligible."""

        def work(conn: sqlite3.Connection) -> QueuedWork:
            queue = _read_queue(conn)
            examined = queue[:limit]
            if not examined:
                return QueuedWork([], [], len(queue))
            rows = conn.execute(
                f"{_CANDIDATE_SQL} WHERE m.seq IN {IN_JSON} AND {_LIVE} AND NOT {_LLM_ENCODED}",
                (json_list(examined),),
            ).fetchall()
            by_seq = {int(r["seq"]): _candidate(r) for r in rows}
            return QueuedWork([by_seq[s] for s in examined if s in by_seq], examined, len(queue))

        return await self.db.run_read(work)

    async def queue_size(self) -> int:
        return await self.db.run_read(lambda conn: len(_read_queue(conn)))

    async def mark_for_reencode(self, since: datetime, limit: int) -> Queued:
        """Queue up to ``limit`` live memories encoded heuristically since ``since``
        (created then, or amended then after an LLM encoding), newest first; the queue never
        grows past :data:`MAX_QUEUE`. Memories already queued are not counted again."""

        def work(conn: sqlite3.Connection) -> Queued:
            queue = _read_queue(conn)
            room = max(0, min(limit, MAX_QUEUE - len(queue)))
            if room == 0:
                return Queued(0, len(queue))
            when = to_db(since)
            rows = conn.execute(
                f"SELECT m.seq FROM memories m WHERE {_LIVE} AND NOT {_LLM_ENCODED}"
                f" AND (m.created_at >= ? OR ({_STALE_LLM} AND m.updated_at >= ?))"
                f" AND m.seq NOT IN {IN_JSON}"
                " ORDER BY m.seq DESC LIMIT ?",
                (when, when, json_list(queue), room),
            ).fetchall()
            added = sorted(int(r[0]) for r in rows)
            if added:
                queue += added
                write_meta(conn, {QUEUE_KEY: json.dumps(queue)}, to_db(utcnow()))
            return Queued(len(added), len(queue))

        return await self.db.run_write(work)

    async def settle(self, watermark: int | None, dequeued: list[int], now: datetime) -> None:
        """Record a cycle's progress: the new watermark (None: unchanged) and the queue
        entries that are done, in one small transaction."""

        def work(conn: sqlite3.Connection) -> None:
            stamp = to_db(now)
            if watermark is not None:
                write_meta(conn, {WATERMARK_KEY: str(watermark)}, stamp)
                # a purge during the cycle's LLM calls may have freed the seq it names
                lower_to_newest_memory(conn, (WATERMARK_KEY,))
            if dequeued:
                gone = set(dequeued)
                queue = [s for s in _read_queue(conn) if s not in gone]
                write_meta(conn, {QUEUE_KEY: json.dumps(queue)}, stamp)

        await self.db.run_write(work, bookkeeping=True)

    async def apply(self, enrichment: Enrichment, now: datetime) -> bool:
        """Replace one memory's encoding (summary, concepts, type, significance, salience,
        metadata keys) and its full-text row in one transaction. False, and nothing
        written, when the memory is gone, no longer live, or its content changed."""

        def work(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT content_hash, salience, metadata, state FROM memories WHERE seq = ?",
                (enrichment.seq,),
            ).fetchone()
            if row is None or row["content_hash"] != enrichment.content_hash:
                return False
            metadata = loads_stored(row["metadata"], None)
            if row["state"] not in ("active", "fading") or not isinstance(metadata, dict):
                return False
            metadata.update(enrichment.metadata)
            salience = min(1.0, max(0.0, float(row["salience"]) + enrichment.salience_shift))
            concepts = list(enrichment.concepts)
            conn.execute(
                "UPDATE memories SET summary = ?, concepts = ?, type = ?, significance = ?,"
                " salience = ?, metadata = ?, updated_at = ? WHERE seq = ?",
                (
                    enrichment.summary,
                    json.dumps(concepts),
                    enrichment.type.value,
                    enrichment.significance,
                    round(salience, 4),
                    dumps_stored(metadata),
                    to_db(now),
                    enrichment.seq,
                ),
            )
            conn.execute(
                "UPDATE memories_fts SET summary = ?, concepts = ? WHERE rowid = ?",
                (enrichment.summary, " ".join(concepts), enrichment.seq),
            )
            return True

        return await self.db.run_write(work)
