"""SQLite implementation of the store protocols.

Each public coroutine is one unit of work: a sync function that runs on a connection's own
thread (see ``Database``), so a multi-statement write is one transaction and one hop.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mnemonic.jsonsafe import dumps_stored, loads_stored
from mnemonic.llm.embedding import Vectors
from mnemonic.store.base import (
    Accepted,
    EmbeddedOutcome,
    Filters,
    PendingMemory,
    QueryRecord,
)
from mnemonic.store.database import Database
from mnemonic.store.models import (
    Association,
    Encoded,
    Memory,
    MemoryState,
    MemoryType,
    NewRaw,
    Quality,
    RawMemory,
    RawStatus,
    Relation,
    Source,
)
from mnemonic.store.sql_lists import marks
from mnemonic.store.system_meta import read_meta, write_meta
from mnemonic.store.vector_rows import (
    DAMAGED_PASSAGES,
    DAMAGED_WHOLE,
    VectorModels,
    write_passages,
    write_vectors,
)
from mnemonic.timeutil import from_db, new_id, to_db, utcnow, when_text


def memory_from_row(row: sqlite3.Row) -> Memory:
    """A ``memories`` row (``SELECT *`` or its columns) as a :class:`Memory`."""
    return Memory(
        seq=row["seq"],
        id=row["id"],
        raw_id=row["raw_id"],
        content=row["content"],
        summary=row["summary"],
        concepts=tuple(json.loads(row["concepts"])),
        type=MemoryType(row["type"]),
        source=Source(row["source"]),
        project=row["project"],
        significance=row["significance"],
        salience=row["salience"],
        utility=row["utility"],
        state=MemoryState(row["state"]),
        access_count=row["access_count"],
        timestamp=from_db(row["timestamp"]),
        created_at=from_db(row["created_at"]),
        updated_at=from_db(row["updated_at"]),
        last_accessed_at=from_db(row["last_accessed_at"]) if row["last_accessed_at"] else None,
        metadata=loads_stored(row["metadata"], {}),
        merged_into=row["merged_into"],
    )


_PENDING_SQL = (
    "SELECT m.seq, m.id, m.raw_id, m.content, m.project, m.type, m.source,"
    " m.concepts, m.timestamp, m.salience, r.attempts,"
    " EXISTS (SELECT 1 FROM memory_merges g WHERE g.gist_seq = m.seq) AS gist"
    " FROM memories m"
    " JOIN raw_memories r ON r.id = m.raw_id"
    " WHERE m.embedded = 0 AND r.status <> 'failed'"
)


def _pending(r: sqlite3.Row) -> PendingMemory:
    return PendingMemory(
        seq=r["seq"],
        id=r["id"],
        raw_id=r["raw_id"],
        content=r["content"],
        project=r["project"],
        type=MemoryType(r["type"]),
        source=Source(r["source"]),
        concepts=tuple(json.loads(r["concepts"])),
        timestamp=from_db(r["timestamp"]),
        salience=r["salience"],
        attempts=r["attempts"],
        gist=bool(r["gist"]),
    )


def _raw(row: sqlite3.Row) -> RawMemory:
    return RawMemory(
        id=row["id"],
        content=row["content"],
        source=Source(row["source"]),
        project=row["project"],
        type=MemoryType(row["type"]) if row["type"] else None,
        timestamp=from_db(row["timestamp"]),
        created_at=from_db(row["created_at"]),
        metadata=loads_stored(row["metadata"], {}),
        status=RawStatus(row["status"]),
        memory_id=row["memory_id"],
        attempts=row["attempts"],
        error=row["error"],
    )


def filter_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """SQL conditions (joined with AND) and parameters for recall filters."""
    where: list[str] = []
    params: list[Any] = []
    if filters.project is not None:
        where.append(f"{alias}.project = ?")
        params.append(filters.project)
    for column, values in (
        ("state", filters.states),
        ("source", filters.sources),
        ("type", filters.types),
    ):
        if values is not None:
            where.append(f"{alias}.{column} IN ({','.join('?' * len(values))})")
            params.extend(str(v) for v in values)
    if filters.since is not None:
        where.append(f"{alias}.timestamp >= ?")
        params.append(to_db(filters.since))
    if filters.until is not None:
        where.append(f"{alias}.timestamp <= ?")
        params.append(to_db(filters.until))
    if filters.min_salience is not None:
        where.append(f"{alias}.salience >= ?")
        params.append(filters.min_salience)
    return (" AND ".join(where) or "1"), params


_STALE = (
    " FROM memories m LEFT JOIN memory_vectors v ON v.seq = m.seq"
    " LEFT JOIN memory_passages p ON p.seq = m.seq"
    " WHERE m.embedded = 1 AND (v.model IS NULL OR v.model <> ? OR p.model IS NULL"
    f" OR p.model <> ? OR {DAMAGED_WHOLE} OR {DAMAGED_PASSAGES})"
)
"""Embedded memories lacking a vector of the model or passages of its recipe (after a
model change, a change of passage settings, and once after migration 0009: passages
backfilled in the background), or whose rows are damaged (the size of a blob disagrees
with its row: the index skips them, ``index/builder.py``)."""


class _VectorMaintenance:
    """Queries for re-embedding; mixed into SQLiteStore below."""

    db: Database

    async def count_stale_vectors(self, models: VectorModels) -> int:
        def work(conn: sqlite3.Connection) -> int:
            params = (models.whole, models.passages)
            return int(conn.execute(f"SELECT count(*){_STALE}", params).fetchone()[0])

        return await self.db.run_read(work)

    async def stale_vectors(self, models: VectorModels, limit: int) -> list[StaleVector]:
        """Up to ``limit`` embedded memories lacking a vector or passages of ``models``."""

        def work(conn: sqlite3.Connection) -> list[StaleVector]:
            rows = conn.execute(
                "SELECT m.seq, m.content, m.content_hash,"
                f" coalesce(v.model = ? AND NOT ({DAMAGED_WHOLE}), 0){_STALE}"
                " ORDER BY m.seq LIMIT ?",
                (models.whole, models.whole, models.passages, limit),
            ).fetchall()
            return [StaleVector(int(r[0]), r[1], r[2], bool(r[3])) for r in rows]

        return await self.db.run_read(work)

    async def store_passages(
        self,
        stale: Sequence[StaleVector],
        passages: Sequence[Vectors],
        models: VectorModels,
        dim: int,
    ) -> None:
        """Each memory's passage vectors ([n, dim], n >= 0) alone, for the memories whose
        content is still the one embedded."""

        def work(conn: sqlite3.Connection) -> None:
            current = _unchanged(conn, stale)
            for item, mine in zip(stale, passages, strict=True):
                if item.seq in current:
                    kept = _searched_passages(mine, merged=current[item.seq])
                    write_passages(conn, item.seq, models.passages, dim, kept)

        await self.db.run_write(work)

    async def store_vectors(
        self,
        stale: Sequence[StaleVector],
        vectors: Vectors,
        models: VectorModels,
        passages: Sequence[Vectors],
    ) -> None:
        """Whole vectors and each memory's passage vectors ([n, dim]), for the memories
        whose content is still the one embedded: an amendment committed while the model
        ran wrote its own, which this must not overwrite with the old text's."""

        def work(conn: sqlite3.Connection) -> None:
            current = _unchanged(conn, stale)
            for item, vec, mine in zip(stale, vectors, passages, strict=True):
                if item.seq in current:
                    kept = _searched_passages(mine, merged=current[item.seq])
                    write_vectors(conn, item.seq, models, vec, kept)

        await self.db.run_write(work)


@dataclass(frozen=True, slots=True)
class StaleVector:
    """An embedded memory lacking a vector or passages of the current model."""

    seq: int
    content: str
    digest: str  # its content hash when read: a write checks it is still the same
    whole_current: bool  # the whole vector is the model's: only passages lack


def _unchanged(conn: sqlite3.Connection, stale: Sequence[StaleVector]) -> dict[int, bool]:
    """The seqs of ``stale`` whose content hash is still the one read, each with whether
    it is a merged twin."""
    wanted = {item.seq: item.digest for item in stale}
    out: dict[int, bool] = {}
    seqs = list(wanted)
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        for seq, digest, state in conn.execute(
            f"SELECT seq, content_hash, state FROM memories WHERE seq IN ({marks(chunk)})",
            chunk,
        ):
            if wanted.get(int(seq)) == digest:
                out[int(seq)] = state == "merged"
    return out


def _searched_passages(passages: Vectors, *, merged: bool) -> Vectors:
    """A twin merged into another memory is never searched: it keeps a row of none."""
    return passages[:0] if merged else passages


class SQLiteStore(_VectorMaintenance):
    """Implements every store protocol over one ``Database``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- ingest -------------------------------------------------------------------------
    async def accept(
        self, items: Sequence[tuple[NewRaw, Encoded, str]], reinforce_step: float
    ) -> list[Accepted]:
        """Store raw observations and their heuristic encoding in one transaction.

        An exact duplicate (same normalised content, same project, live) reinforces the
        existing memory instead; the raw row is kept either way with a pointer.
        """

        def work(conn: sqlite3.Connection) -> list[Accepted]:
            return [
                accept_one(conn, raw, enc, digest, reinforce_step) for raw, enc, digest in items
            ]

        return await self.db.run_write(work)

    async def complete(
        self, outcomes: Sequence[EmbeddedOutcome], models: VectorModels, step: float
    ) -> None:
        """Persist vectors, near-duplicate merges and links decided by the encoder."""

        def work(conn: sqlite3.Connection) -> None:
            now = to_db(utcnow())
            for outcome in outcomes:
                _complete_one(conn, outcome, models, step, now)

        await self.db.run_write(work)

    async def begin_attempt(self, raw_ids: Sequence[str], max_attempts: int) -> list[str]:
        """Count an encoding attempt of each still-pending raw memory *before* the work, so
        an attempt that takes the process down (or hangs until it is killed) still counts
        after a restart; until the attempt ends its error says it did not finish. Those whose
        ``max_attempts`` are used up are parked instead (status ``failed``, the reason kept
        in ``error``) and returned: they are not to be tried again."""
        if not raw_ids:
            return []

        def work(conn: sqlite3.Connection) -> list[str]:
            parked = [
                r["id"]
                for r in conn.execute(
                    f"SELECT id FROM raw_memories WHERE id IN ({marks(raw_ids)})"
                    " AND status = 'accepted' AND attempts >= ?",
                    [*raw_ids, max_attempts],
                )
            ]
            conn.executemany(
                "UPDATE raw_memories SET status = 'failed', error = substr('gave up after '"
                " || attempts || CASE attempts WHEN 1 THEN ' attempt: ' ELSE ' attempts: ' END"
                " || coalesce(error, 'no error recorded'), 1, 500)"
                " WHERE id = ?",
                [(rid,) for rid in parked],
            )
            gone = set(parked)
            conn.executemany(
                "UPDATE raw_memories SET attempts = attempts + 1, error = 'attempt '"
                " || (attempts + 1) || ' did not finish (the daemon stopped or crashed)'"
                " WHERE id = ? AND status = 'accepted'",
                [(rid,) for rid in raw_ids if rid not in gone],
            )
            return parked

        return await self.db.run_write(work, bookkeeping=True)

    async def mark_failed(self, raw_ids: Sequence[str], error: str, max_attempts: int) -> None:
        """Record why the attempt counted by ``begin_attempt`` failed; a raw memory whose
        ``max_attempts`` are used up is parked (status ``failed``). Only pending rows are
        touched: an attempt abandoned at its deadline may still have finished its write."""

        def work(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "UPDATE raw_memories SET attempts = max(attempts, 1),"
                " error = substr(CASE WHEN max(attempts, 1) >= ?1"
                " THEN 'gave up after ' || max(attempts, 1)"
                " || CASE max(attempts, 1) WHEN 1 THEN ' attempt: ' ELSE ' attempts: ' END || ?2"
                " ELSE ?2 END, 1, 500),"
                " status = CASE WHEN max(attempts, 1) >= ?1 THEN 'failed' ELSE status END"
                " WHERE id = ?3 AND status = 'accepted'",
                [(max_attempts, error[:500], rid) for rid in raw_ids],
            )

        # recording a failure proves nothing about the disk: it fits in pages it already has
        await self.db.run_write(work, bookkeeping=True)

    async def pending_ids(self, limit: int) -> list[str]:
        """Ids of memories still waiting for a vector, oldest first: the sweep needs only
        ids (the content of 10,000 long notes would be up to a gigabyte)."""

        def work(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "SELECT m.id FROM memories m JOIN raw_memories r ON r.id = m.raw_id"
                " WHERE m.embedded = 0 AND r.status <> 'failed' ORDER BY m.seq LIMIT ?",
                (limit,),
            ).fetchall()
            return [str(r[0]) for r in rows]

        return await self.db.run_read(work)

    async def pending_for(self, memory_ids: Sequence[str]) -> list[PendingMemory]:
        """Those of ``memory_ids`` still waiting for a vector (not encoded, not failed)."""
        if not memory_ids:
            return []

        def work(conn: sqlite3.Connection) -> list[PendingMemory]:
            rows = conn.execute(
                f"{_PENDING_SQL} AND m.id IN ({marks(memory_ids)}) ORDER BY m.seq",
                list(memory_ids),
            ).fetchall()
            return [_pending(r) for r in rows]

        return await self.db.run_read(work)

    # ---- raw and memories ----------------------------------------------------------------
    async def get_raw(self, raw_id: str) -> RawMemory | None:
        def work(conn: sqlite3.Connection) -> RawMemory | None:
            row = conn.execute("SELECT * FROM raw_memories WHERE id = ?", (raw_id,)).fetchone()
            return _raw(row) if row else None

        return await self.db.run_read(work)

    async def get(self, memory_id: str) -> Memory | None:
        def work(conn: sqlite3.Connection) -> Memory | None:
            row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
            return memory_from_row(row) if row else None

        return await self.db.run_read(work)

    async def get_many(self, seqs: Sequence[int]) -> dict[int, Memory]:
        if not seqs:
            return {}

        def work(conn: sqlite3.Connection) -> dict[int, Memory]:
            rows = conn.execute(
                f"SELECT * FROM memories WHERE seq IN ({marks(seqs)})", list(seqs)
            ).fetchall()
            return {row["seq"]: memory_from_row(row) for row in rows}

        return await self.db.run_read(work)

    async def seqs_of(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """Internal keys of public ids (unknown ids are left out)."""
        if not memory_ids:
            return {}

        def work(conn: sqlite3.Connection) -> dict[str, int]:
            rows = conn.execute(
                f"SELECT id, seq FROM memories WHERE id IN ({marks(memory_ids)})",
                list(memory_ids),
            ).fetchall()
            return {r["id"]: int(r["seq"]) for r in rows}

        return await self.db.run_read(work)

    async def previous_in_project(self, project: str, before_seq: int) -> int | None:
        """The live observation stored just before ``before_seq`` in ``project``; the
        dreamer's insights are no observation (``agents/encoding.py``: ``DERIVED``)."""

        def work(conn: sqlite3.Connection) -> int | None:
            row = conn.execute(
                "SELECT seq FROM memories WHERE project = ? AND seq < ? AND source != ?"
                " AND state IN ('active', 'fading') ORDER BY seq DESC LIMIT 1",
                (project, before_seq, Source.DREAMING.value),
            ).fetchone()
            return int(row[0]) if row else None

        return await self.db.run_read(work)

    async def set_state(self, memory_id: str, state: MemoryState) -> Memory | None:
        """Set the state by the user's hand (forget, unarchive). A forgotten memory is
        marked ``forgotten_at`` in its metadata: recall's archived fallback skips it, as it
        must not bring back what the user asked to forget (decay archives stay findable)."""

        def work(conn: sqlite3.Connection) -> Memory | None:
            now = to_db(utcnow())
            conn.execute(
                "UPDATE memories SET state = ?, updated_at = ?, metadata = CASE"
                " WHEN NOT json_valid(metadata) THEN metadata"
                " WHEN ? = 'archived' THEN json_set(metadata, '$.forgotten_at', ?)"
                " ELSE json_remove(metadata, '$.forgotten_at') END WHERE id = ?",
                (state.value, now, state.value, now, memory_id),
            )
            row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
            return memory_from_row(row) if row else None

        return await self.db.run_write(work)

    async def max_seq(self) -> int:
        """The highest memory seq (0 when empty): an O(1) size estimate."""

        def work(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0])

        return await self.db.run_read(work)

    async def counts(self) -> dict[str, int]:
        def work(conn: sqlite3.Connection) -> dict[str, int]:
            out = {f"memories_{state}": 0 for state in MemoryState}
            for state, n in conn.execute("SELECT state, count(*) FROM memories GROUP BY state"):
                out[f"memories_{state}"] = n
            out["raw_memories"] = conn.execute("SELECT count(*) FROM raw_memories").fetchone()[0]
            out["raw_pending"] = conn.execute(
                "SELECT count(*) FROM raw_memories WHERE status = 'accepted'"
            ).fetchone()[0]
            out["raw_failed"] = conn.execute(
                "SELECT count(*) FROM raw_memories WHERE status = 'failed'"
            ).fetchone()[0]
            out["associations"] = conn.execute("SELECT count(*) FROM associations").fetchone()[0]
            return out

        return await self.db.run_read(work)

    # ---- search -----------------------------------------------------------------------------
    async def full_text(
        self, terms: Sequence[str], filters: Filters, limit: int, match_budget: int
    ) -> list[tuple[int, float]]:
        """BM25 hits for any of ``terms`` as (seq, score), higher = better.

        Ranking costs about 3 µs per matching row (measured at 100k memories: 111 ms for a
        query whose common words matched 30k rows). When the terms' document frequencies
        add up to more than ``match_budget``, the commonest terms (the lowest IDF, so the
        least say in BM25) are dropped first; the rarest term always stays.
        """
        return (await self.full_text_each(terms, [filters], limit, match_budget))[0]

    async def full_text_each(
        self,
        terms: Sequence[str],
        filters: Sequence[Filters],
        limit: int,
        match_budget: int,
    ) -> list[list[tuple[int, float]]]:
        """``full_text`` under each of ``filters`` in one read: the terms' document
        frequencies, which decide which terms the budget keeps, are counted once (recall
        asks the whole store and the time a question names)."""
        clauses = [filter_sql(f) for f in filters]

        def work(conn: sqlite3.Connection) -> list[list[tuple[int, float]]]:
            kept = _within_budget(conn, list(terms), match_budget)
            if not kept:
                return [[] for _ in clauses]
            match = match_any(kept)

            def ranked(where: str, params: list[object]) -> list[tuple[int, float]]:
                rows = conn.execute(
                    "SELECT f.rowid AS seq, bm25(memories_fts, 1.0, 0.5, 0.5, 0.5) AS rank"
                    " FROM memories_fts f JOIN memories m ON m.seq = f.rowid"
                    f" WHERE memories_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
                    [match, *params, limit],
                ).fetchall()
                return [(int(r["seq"]), -float(r["rank"])) for r in rows]

            return [ranked(where, params) for where, params in clauses]

        return await self.db.run_read(work)

    # ---- associations --------------------------------------------------------------------
    async def neighbours(self, seqs: Sequence[int], filters: Filters) -> list[Association]:
        """Edges touching ``seqs`` whose other end passes the filters."""
        if not seqs:
            return []
        where, params = filter_sql(filters)
        listed = marks(seqs)

        def work(conn: sqlite3.Connection) -> list[Association]:
            rows = conn.execute(
                # CROSS JOIN pins the join order: edges of the frontier first, then their
                # other ends. Left to itself the planner scans the whole project instead.
                "SELECT a.source_seq, a.target_seq, a.relation, a.strength FROM associations a"
                f" CROSS JOIN memories m ON m.seq = a.target_seq WHERE a.source_seq IN ({listed})"
                f" AND {where} UNION ALL "
                "SELECT a.target_seq, a.source_seq, a.relation, a.strength FROM associations a"
                f" CROSS JOIN memories m ON m.seq = a.source_seq WHERE a.target_seq IN ({listed})"
                f" AND {where}",
                [*seqs, *params, *seqs, *params],
            ).fetchall()
            return [Association(r[0], r[1], Relation(r[2]), float(r[3])) for r in rows]

        return await self.db.run_read(work)

    async def adjust_strength(self, edges: Sequence[tuple[int, int]], delta: float) -> int:
        """Move traversed links' strength by ``delta`` within [0.05, 1]."""
        if not edges:
            return 0

        def work(conn: sqlite3.Connection) -> int:
            now = to_db(utcnow())
            changed = 0
            for a, b in edges:
                cur = conn.execute(
                    "UPDATE associations SET strength = max(0.05, min(1.0, strength + ?)),"
                    " activation_count = activation_count + 1, updated_at = ?"
                    " WHERE source_seq = ? AND target_seq = ?",  # pairs are stored low-high
                    (delta, now, min(a, b), max(a, b)),
                )
                changed += cur.rowcount
            return changed

        return await self.db.run_write(work)

    # ---- queries and feedback ------------------------------------------------------------
    async def record_query(
        self, record: QueryRecord, filters: dict[str, object], took_ms: float, seqs: Sequence[int]
    ) -> None:
        def work(conn: sqlite3.Connection) -> None:
            now = to_db(utcnow())
            conn.execute(
                "INSERT INTO retrieval_queries (id, query, filters, result_ids, edges, took_ms,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.query,
                    dumps_stored(filters),
                    json.dumps(list(record.result_ids)),
                    json.dumps([list(e) for e in record.edges]),
                    took_ms,
                    now,
                ),
            )
            if seqs:
                conn.execute(
                    "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?"
                    f" WHERE seq IN ({marks(seqs)})",
                    [now, *seqs],
                )

        await self.db.run_write(work, bookkeeping=True)

    async def get_query(self, query_id: str) -> QueryRecord | None:
        def work(conn: sqlite3.Connection) -> QueryRecord | None:
            row = conn.execute(
                "SELECT id, query, result_ids, edges FROM retrieval_queries WHERE id = ?",
                (query_id,),
            ).fetchone()
            if row is None:
                return None
            return QueryRecord(
                id=row["id"],
                query=row["query"],
                result_ids=tuple(json.loads(row["result_ids"])),
                edges=tuple((int(a), int(b)) for a, b in json.loads(row["edges"])),
            )

        return await self.db.run_read(work)

    async def record_feedback(
        self,
        query_id: str,
        quality: Quality,
        memory_ids: Sequence[str],
        utility_delta: float,
        bounds: tuple[float, float],
    ) -> int | None:
        """Store the rating and move the rated memories' utility, clamped to ``bounds``;
        None when the query is no longer recorded (a purge removed it after it was read)."""

        def work(conn: sqlite3.Connection) -> int | None:
            now = to_db(utcnow())
            if (
                conn.execute("SELECT 1 FROM retrieval_queries WHERE id = ?", (query_id,)).fetchone()
                is None
            ):
                return None
            conn.execute(
                "INSERT INTO retrieval_feedback (query_id, quality, memory_ids, created_at)"
                " VALUES (?, ?, ?, ?)",
                (query_id, quality.value, json.dumps(list(memory_ids)), now),
            )
            if not memory_ids:
                return 0
            cur = conn.execute(
                "UPDATE memories SET utility = max(?, min(?, utility + ?)), updated_at = ?"
                f" WHERE id IN ({marks(memory_ids)})",
                [bounds[0], bounds[1], utility_delta, now, *memory_ids],
            )
            return cur.rowcount

        return await self.db.run_write(work)

    # ---- meta ---------------------------------------------------------------------------
    async def get_meta(self, key: str) -> str | None:
        return await self.db.run_read(lambda conn: read_meta(conn, key))

    async def set_meta(self, key: str, value: str) -> None:
        await self.db.run_write(lambda conn: write_meta(conn, {key: value}, to_db(utcnow())))


def fts_phrase(term: str) -> str:
    """A term as an FTS5 string: quoted, so FTS syntax inside it is plain text."""
    return '"' + term.replace('"', '""') + '"'


def match_any(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression for documents holding any of ``terms``."""
    return " OR ".join(fts_phrase(term) for term in terms)


def _within_budget(conn: sqlite3.Connection, terms: list[str], budget: int) -> list[str]:
    if len(terms) < 2:
        return terms
    df = {
        t: conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (fts_phrase(t),)
        ).fetchone()[0]
        for t in terms
    }
    kept = sorted((t for t in terms if df[t] > 0), key=lambda t: df[t])
    while len(kept) > 1 and sum(df[t] for t in kept) > budget:
        kept.pop()
    return kept


def accept_one(
    conn: sqlite3.Connection, raw: NewRaw, enc: Encoded, digest: str, step: float
) -> Accepted:
    """One observation's raw row and memory in the caller's write transaction; a known
    content hash reinforces that memory by ``step`` instead. Gists and insights are
    written through it too, so they are memories like any other."""
    now = to_db(utcnow())
    raw_id = new_id()
    conn.execute(
        "INSERT INTO raw_memories (id, content, content_hash, source, type, project, timestamp,"
        " created_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            raw_id,
            raw.content,
            digest,
            raw.source.value,
            raw.type.value if raw.type else None,
            raw.project,
            to_db(raw.timestamp),
            now,
            dumps_stored(raw.metadata),
        ),
    )
    existing = conn.execute(
        "SELECT seq, id FROM memories WHERE project = ? AND content_hash = ?"
        " AND state IN ('active', 'fading') ORDER BY seq LIMIT 1",
        (raw.project, digest),
    ).fetchone()
    if existing is not None:
        _reinforce(conn, existing["seq"], step, now)
        conn.execute(
            "UPDATE raw_memories SET status = 'reinforced', memory_id = ? WHERE id = ?",
            (existing["id"], raw_id),
        )
        return Accepted(raw_id, existing["id"], existing["seq"], RawStatus.REINFORCED)
    memory_id = new_id()
    cur = conn.execute(
        "INSERT INTO memories (id, raw_id, content, content_hash, summary, concepts, type,"
        " source, project, significance, salience, timestamp, created_at, updated_at, metadata)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            memory_id,
            raw_id,
            raw.content,
            digest,
            enc.summary,
            json.dumps(list(enc.concepts)),
            enc.type.value,
            raw.source.value,
            raw.project,
            enc.significance,
            enc.salience,
            to_db(raw.timestamp),
            now,
            now,
            dumps_stored(raw.metadata),
        ),
    )
    seq = int(cur.lastrowid or 0)
    conn.execute(
        "INSERT INTO memories_fts (rowid, content, summary, concepts, when_text)"
        " VALUES (?, ?, ?, ?, ?)",
        (seq, raw.content, enc.summary, " ".join(enc.concepts), when_text(raw.timestamp)),
    )
    conn.execute("UPDATE raw_memories SET memory_id = ? WHERE id = ?", (memory_id, raw_id))
    return Accepted(raw_id, memory_id, seq, RawStatus.ACCEPTED)


def _reinforce(conn: sqlite3.Connection, seq: int, step: float, now: str) -> None:
    conn.execute(
        "UPDATE memories SET salience = min(1.0, salience + ?), access_count = access_count + 1,"
        " updated_at = ? WHERE seq = ?",
        (step, now, seq),
    )


def _complete_one(
    conn: sqlite3.Connection, outcome: EmbeddedOutcome, models: VectorModels, step: float, now: str
) -> None:
    mem = outcome.memory
    passages = outcome.passages
    if passages is not None:
        passages = _searched_passages(passages, merged=outcome.merged_into_seq is not None)
    write_vectors(conn, mem.seq, models, outcome.vector, passages)
    if outcome.merged_into_seq is not None:
        target = conn.execute(
            "SELECT id FROM memories WHERE seq = ?", (outcome.merged_into_seq,)
        ).fetchone()
        conn.execute(
            "UPDATE memories SET embedded = 1, state = 'merged', merged_into = ?, updated_at = ?"
            " WHERE seq = ?",
            (target["id"], now, mem.seq),
        )
        _reinforce(conn, outcome.merged_into_seq, step, now)
        conn.execute(
            "UPDATE raw_memories SET status = 'reinforced', memory_id = ? WHERE id = ?",
            (target["id"], mem.raw_id),
        )
        return
    conn.execute("UPDATE memories SET embedded = 1 WHERE seq = ?", (mem.seq,))
    conn.executemany(
        "INSERT INTO associations (source_seq, target_seq, relation, strength, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
        " strength = max(strength, excluded.strength), updated_at = excluded.updated_at",
        [
            (*link.ends(mem.seq), link.relation.value, link.strength, now, now)
            for link in outcome.links
        ],
    )
    conn.execute(
        "UPDATE raw_memories SET status = 'encoded', error = NULL WHERE id = ?", (mem.raw_id,)
    )
