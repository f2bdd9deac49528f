"""SQLite for metacognition: what its audits read (counts, the last consolidation, feedback
in a window, samples for the recall self-test), and the one write of a cycle (its
``meta_observations`` rows together with any suppression of a memory's utility, in one
transaction: a cycle that fails leaves nothing half-written).

Reads are aggregate counts over indexed columns or bounded samples; nothing here reads a
memory's content except the few the self-test probes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mnemonic.cognition.metacognition import IRRELEVANT_FEEDBACK, LIVE_STATES, Rated
from mnemonic.jsonsafe import loads_stored
from mnemonic.store.database import Database
from mnemonic.store.system_meta import read_meta, write_meta
from mnemonic.timeutil import from_db, to_db

SAMPLE_CURSOR = "metacognition.sample_cursor"  # system_meta: where the memory sample resumes
CONSOLIDATION_ASKED = "metacognition.consolidation_requested_at"


def database_bytes(path: Path) -> int:
    """Bytes of the database with its ``-wal`` and ``-shm`` files (missing ones count 0)."""
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += (path.parent / (path.name + suffix)).stat().st_size
        except OSError:
            continue
    return total


@dataclass(frozen=True, slots=True)
class StoreCounts:
    by_state: dict[str, int]
    live_by_source: dict[str, int]
    live_unembedded: int

    @property
    def live(self) -> int:
        return sum(self.by_state.get(s, 0) for s in LIVE_STATES)


@dataclass(frozen=True, slots=True)
class Observation:
    """One row of ``meta_observations``."""

    at: datetime
    kind: str
    severity: str
    value: float | None
    threshold: float | None
    detail: dict[str, Any]
    action: str = ""

    def to_json(self, row_id: int | None = None) -> dict[str, Any]:
        return {
            "id": row_id,
            "at": self.at.isoformat(),
            "kind": self.kind,
            "severity": self.severity,
            "value": self.value,
            "threshold": self.threshold,
            "detail": self.detail,
            "action": self.action,
        }


@dataclass(frozen=True, slots=True)
class Suppression:
    """A memory's utility lowered because it was rated irrelevant repeatedly; applied only
    if the utility is still ``old`` (a rating meanwhile wins)."""

    seq: int
    old: float
    new: float


@dataclass(frozen=True, slots=True)
class SampledMemory:
    seq: int
    id: str
    summary: str
    content: str
    concepts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SampledPattern:
    id: str
    title: str
    concepts: tuple[str, ...]
    evidence: frozenset[int]  # live evidence seqs


def _strings(raw: str) -> tuple[str, ...]:
    value = loads_stored(raw, [])
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _observation(row: sqlite3.Row) -> dict[str, Any]:
    detail = loads_stored(row["detail"], {})
    return {
        "id": int(row["id"]),
        "at": from_db(row["at"]).isoformat(),
        "kind": row["kind"],
        "severity": row["severity"],
        "value": row["value"],
        "threshold": row["threshold"],
        "detail": detail if isinstance(detail, dict) else {},
        "action": row["action"],
    }


class SQLiteMeta:
    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- what the audits read -----------------------------------------------------------
    async def counts(self) -> StoreCounts:
        def work(conn: sqlite3.Connection) -> StoreCounts:
            by_state = {
                r[0]: int(r[1])
                for r in conn.execute("SELECT state, count(*) FROM memories GROUP BY state")
            }
            live = ",".join("?" * len(LIVE_STATES))
            by_source = {
                r[0]: int(r[1])
                for r in conn.execute(
                    f"SELECT source, count(*) FROM memories WHERE state IN ({live})"
                    " GROUP BY source",
                    LIVE_STATES,
                )
            }
            unembedded = conn.execute(
                f"SELECT count(*) FROM memories WHERE embedded = 0 AND state IN ({live})",
                LIVE_STATES,
            ).fetchone()[0]
            return StoreCounts(by_state, by_source, int(unembedded))

        return await self.db.run_read(work)

    async def last_consolidation(self) -> datetime | None:
        """When the last consolidation cycle finished (its history or a successful run)."""

        def work(conn: sqlite3.Connection) -> datetime | None:
            a = conn.execute("SELECT max(finished_at) FROM consolidation_history").fetchone()[0]
            b = conn.execute(
                "SELECT max(finished_at) FROM agent_runs WHERE agent = 'consolidation' AND ok = 1"
            ).fetchone()[0]
            found = [from_db(v) for v in (a, b) if v]
            return max(found) if found else None

        return await self.db.run_read(work)

    async def oldest_memory(self) -> datetime | None:
        def work(conn: sqlite3.Connection) -> datetime | None:
            row = conn.execute("SELECT created_at FROM memories ORDER BY seq LIMIT 1").fetchone()
            return from_db(row[0]) if row else None

        return await self.db.run_read(work)

    async def feedback(self, since: datetime) -> dict[str, int]:
        def work(conn: sqlite3.Connection) -> dict[str, int]:
            rows = conn.execute(
                "SELECT quality, count(*) FROM retrieval_feedback WHERE created_at >= ?"
                " GROUP BY quality",
                (to_db(since),),
            )
            return {r[0]: int(r[1]) for r in rows}

        return await self.db.run_read(work)

    async def rated(self, since: datetime, min_irrelevant: int, limit: int) -> list[Rated]:
        """Live memories rated irrelevant at least ``min_irrelevant`` times since ``since``,
        with their helpful (or partial) ratings in the same window."""

        def work(conn: sqlite3.Connection) -> list[Rated]:
            rows = conn.execute(
                "SELECT m.seq, m.id, m.utility,"
                " sum(f.quality = 'irrelevant') AS bad, sum(f.quality <> 'irrelevant') AS good"
                " FROM retrieval_feedback f, json_each(f.memory_ids) j"
                " JOIN memories m ON m.id = j.value"
                " WHERE f.created_at >= ? AND m.state IN ('active', 'fading')"
                " GROUP BY m.seq HAVING bad >= ? ORDER BY bad DESC, m.seq LIMIT ?",
                (to_db(since), max(1, min_irrelevant), limit),
            ).fetchall()
            return [Rated(int(r[0]), r[1], float(r[2]), int(r[3]), int(r[4])) for r in rows]

        return await self.db.run_read(work)

    async def suppressed_since(self, since: datetime) -> frozenset[int]:
        """Seqs suppressed by an observation recorded since ``since``."""

        def work(conn: sqlite3.Connection) -> frozenset[int]:
            rows = conn.execute(
                "SELECT detail FROM meta_observations WHERE kind = ? AND at >= ?",
                (IRRELEVANT_FEEDBACK, to_db(since)),
            ).fetchall()
            seqs: set[int] = set()
            for (raw,) in rows:
                detail = loads_stored(raw, {})
                if isinstance(detail, dict):
                    for item in detail.get("suppressed", []):
                        if isinstance(item, dict) and isinstance(item.get("seq"), int):
                            seqs.add(item["seq"])
            return frozenset(seqs)

        return await self.db.run_read(work)

    async def sample_memories(self, n: int) -> list[SampledMemory]:
        """``n`` active, embedded memories, rotating through the store by seq (a cursor in
        ``system_meta``, moved by :meth:`record`), so successive self-tests probe
        different memories."""
        if n <= 0:
            return []

        def work(conn: sqlite3.Connection) -> list[SampledMemory]:
            cursor = read_meta(conn, SAMPLE_CURSOR)
            after = int(cursor) if cursor is not None and cursor.isdigit() else 0
            query = (
                "SELECT seq, id, summary, content, concepts FROM memories"
                " WHERE seq > ? AND state = 'active' AND embedded = 1 ORDER BY seq LIMIT ?"
            )
            rows = conn.execute(query, (after, n)).fetchall()
            if len(rows) < n and after > 0:  # wrap around
                seen = {r[0] for r in rows}
                more = conn.execute(query, (0, n - len(rows))).fetchall()
                rows += [r for r in more if r[0] not in seen]
            return [SampledMemory(int(r[0]), r[1], r[2], r[3], _strings(r[4])) for r in rows]

        return await self.db.run_read(work)

    async def sample_patterns(self, n: int) -> list[SampledPattern]:
        """The ``n`` strongest active patterns with their live evidence (none yet when the
        abstraction agent has not run)."""
        if n <= 0:
            return []

        def work(conn: sqlite3.Connection) -> list[SampledPattern]:
            patterns = conn.execute(
                "SELECT id, title, concepts FROM abstractions"
                " WHERE level = 'pattern' AND state = 'active'"
                " ORDER BY strength DESC, id LIMIT ?",
                (n,),
            ).fetchall()
            found: list[SampledPattern] = []
            for pid, title, concepts in patterns:
                evidence = conn.execute(
                    "SELECT e.memory_seq FROM abstraction_evidence e"
                    " JOIN memories m ON m.seq = e.memory_seq"
                    " WHERE e.abstraction_id = ? AND m.state IN ('active', 'fading')",
                    (pid,),
                ).fetchall()
                if evidence:
                    seqs = frozenset(int(r[0]) for r in evidence)
                    found.append(SampledPattern(pid, title, _strings(concepts), seqs))
            return found

        return await self.db.run_read(work)

    # ---- the cycle's one write -----------------------------------------------------------
    async def record(
        self,
        observations: Sequence[Observation],
        suppressions: Sequence[Suppression] = (),
        *,
        sample_cursor: int | None = None,
        consolidation_asked: datetime | None = None,
        keep: int = 0,
    ) -> tuple[list[int], list[int]]:
        """Insert the observations, apply the suppressions (each only if the utility is
        unchanged) and move the sample cursor, in one transaction; ``keep`` > 0 trims all
        but the newest ``keep`` rows per kind. Returns (row ids, seqs suppressed)."""

        def work(conn: sqlite3.Connection) -> tuple[list[int], list[int]]:
            done: list[int] = []
            stamp = to_db(observations[0].at) if observations else ""
            for s in suppressions:
                cur = conn.execute(
                    "UPDATE memories SET utility = ?, updated_at = ? WHERE seq = ? AND utility = ?",
                    (s.new, stamp, s.seq, s.old),
                )
                if cur.rowcount:
                    done.append(s.seq)
            ids: list[int] = []
            for o in observations:
                detail = dict(o.detail)
                if "suppressed" in detail:  # only those actually applied
                    detail["suppressed"] = [d for d in detail["suppressed"] if d["seq"] in done]
                cur = conn.execute(
                    "INSERT INTO meta_observations (at, kind, severity, value, threshold,"
                    " detail, action) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        to_db(o.at),
                        o.kind,
                        o.severity,
                        o.value,
                        o.threshold,
                        json.dumps(detail),
                        o.action,
                    ),
                )
                ids.append(int(cur.lastrowid or 0))
                if keep > 0:
                    _trim(conn, o.kind, keep)
            meta: dict[str, str] = {}
            if sample_cursor is not None:
                meta[SAMPLE_CURSOR] = str(sample_cursor)
            if consolidation_asked is not None:
                meta[CONSOLIDATION_ASKED] = to_db(consolidation_asked)
            write_meta(conn, meta, stamp)
            return ids, done

        return await self.db.run_write(work)

    async def consolidation_asked(self) -> datetime | None:
        def work(conn: sqlite3.Connection) -> datetime | None:
            asked = read_meta(conn, CONSOLIDATION_ASKED)
            return None if asked is None else from_db(asked)

        return await self.db.run_read(work)

    async def last_self_test(self) -> datetime | None:
        def work(conn: sqlite3.Connection) -> datetime | None:
            row = conn.execute(
                "SELECT max(at) FROM meta_observations WHERE kind = 'recall_self_test'"
            ).fetchone()
            return from_db(row[0]) if row and row[0] else None

        return await self.db.run_read(work)

    # ---- what the faces read --------------------------------------------------------------
    async def latest(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The newest observation of each kind (or of ``kind``), by kind."""

        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            sql = (
                "SELECT o.* FROM meta_observations o JOIN (SELECT kind, max(id) AS id"
                " FROM meta_observations {where} GROUP BY kind) l ON o.id = l.id ORDER BY o.kind"
            )
            if kind is None:
                rows = conn.execute(sql.format(where="")).fetchall()
            else:
                rows = conn.execute(sql.format(where="WHERE kind = ?"), (kind,)).fetchall()
            return [_observation(r) for r in rows]

        return await self.db.run_read(work)

    async def history(self, kind: str | None, limit: int) -> list[dict[str, Any]]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            if kind is None:
                rows = conn.execute(
                    "SELECT * FROM meta_observations ORDER BY id DESC LIMIT ?", (limit,)
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT * FROM meta_observations WHERE kind = ? ORDER BY id DESC LIMIT ?",
                    (kind, limit),
                ).fetchall()
            return [_observation(r) for r in rows]

        return await self.db.run_read(work)


def _trim(conn: sqlite3.Connection, kind: str, keep: int) -> None:
    conn.execute(
        "DELETE FROM meta_observations WHERE kind = ? AND id NOT IN"
        " (SELECT id FROM meta_observations WHERE kind = ? ORDER BY id DESC LIMIT ?)",
        (kind, kind, keep),
    )
