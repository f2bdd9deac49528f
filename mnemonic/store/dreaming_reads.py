"""The dreamer's reads as plain functions of one SQLite connection, and the worker-process
entry point that runs a cycle's read side on a connection of its own.

``store.dreaming.SQLiteDreaming`` runs these on the daemon's pooled readers; at scale the
dreamer runs ``plan_in_worker`` in a worker process instead (``cognition.dreaming_plan``
says why): a process cannot borrow the daemon's connections, so this is the one place
besides ``store.database`` that opens one, read-only (``mode=ro``, ``query_only``). WAL
lets it read beside the daemon's writer. This module imports nothing heavy (no embedding
model, no index), so a fresh worker starts quickly.

Reads never touch ``access_count`` or ``last_accessed_at``: replay is not access.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from mnemonic.cognition.dreaming import TermCache
from mnemonic.cognition.dreaming_plan import (
    CyclePlan,
    Link,
    Marks,
    PlanParams,
    QueryRow,
    TermRow,
    plan_cycle,
)
from mnemonic.store.sql_lists import IN_JSON, json_list
from mnemonic.store.system_meta import read_meta

SOURCE = "dreaming"
LIVE = "('active', 'fading')"
TERM_PAGE = 20_000


def strings(blob: str | None) -> list[str]:
    try:
        value = json.loads(blob) if blob else []
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class ConnReads:
    """The reads of a cycle (``cognition.dreaming_plan.Reads``) over one connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def meta(self, key: str) -> str | None:
        return read_meta(self.conn, key)

    def replay_window(self, after_seq: int, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` live memories after ``after_seq`` (seq order): (seq, salience).
        Insights the dreamer wrote are not replayed (they would echo themselves)."""
        rows = self.conn.execute(
            f"SELECT seq, salience FROM memories WHERE seq > ? AND state IN {LIVE}"
            " AND source <> ? ORDER BY seq LIMIT ?",
            (after_seq, SOURCE, limit),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def term_page(self, after_seq: int, limit: int) -> list[TermRow]:
        """A page of live memories (not the dreamer's own) with their concepts and
        entities (as stored) and their episode, in seq order."""
        rows = self.conn.execute(
            "SELECT m.seq, m.concepts, CASE WHEN json_valid(m.metadata)"
            " THEN json_extract(m.metadata, '$.entities') END, e.episode_id"
            " FROM memories m LEFT JOIN episode_memories e ON e.memory_seq = m.seq"
            f" WHERE m.seq > ? AND m.state IN {LIVE} AND m.source <> ?"
            " ORDER BY m.seq LIMIT ?",
            (after_seq, SOURCE, limit),
        ).fetchall()
        return [TermRow(int(r[0]), r[1], r[2], r[3]) for r in rows]

    def term_rows(self) -> list[TermRow]:
        """Every live memory's terms (pages of ``TERM_PAGE``, seq order)."""
        rows: list[TermRow] = []
        after = 0
        while True:
            page = self.term_page(after, TERM_PAGE)
            rows += page
            if len(page) < TERM_PAGE:
                return rows
            after = page[-1].seq

    def links_touching(self, seqs: Sequence[int], min_strength: float = 0.0) -> list[Link]:
        """Every link with an end in ``seqs`` at or above ``min_strength``."""
        if not seqs:
            return []
        ids = json_list(sorted(set(seqs)))
        rows = self.conn.execute(
            "SELECT source_seq, target_seq, relation, strength FROM associations"
            f" WHERE source_seq IN {IN_JSON} AND strength >= ?"
            " UNION SELECT source_seq, target_seq, relation, strength FROM associations"
            f" WHERE target_seq IN {IN_JSON} AND strength >= ?",
            (ids, min_strength, ids, min_strength),
        ).fetchall()
        return [Link(int(r[0]), int(r[1]), str(r[2]), float(r[3])) for r in rows]

    def links_of_pairs(self, pairs: Sequence[tuple[int, int]]) -> list[Link]:
        """The links (any relation) of each pair ``(low, high)``."""
        found: list[Link] = []
        for a, b in pairs:
            for rel, strength in self.conn.execute(
                "SELECT relation, strength FROM associations WHERE source_seq = ?"
                " AND target_seq = ?",
                (a, b),
            ):
                found.append(Link(a, b, str(rel), float(strength)))
        return found

    def related_counts(self, seqs: Sequence[int]) -> dict[int, int]:
        """How many ``related`` links each of ``seqs`` has."""
        out: dict[int, int] = {}
        for seq in set(seqs):
            n = self.conn.execute(
                "SELECT (SELECT count(*) FROM associations WHERE source_seq = ?"
                " AND relation = 'related') + (SELECT count(*) FROM associations"
                " WHERE target_seq = ? AND relation = 'related')",
                (seq, seq),
            ).fetchone()[0]
            if n:
                out[seq] = int(n)
        return out

    def queries(self, after_rowid: int, limit: int, *, newest: bool = False) -> list[QueryRow]:
        """Logged recalls after ``after_rowid`` (oldest first), or the newest ``limit``,
        with the ids their feedback rated helpful or irrelevant."""
        if newest:
            rows = self.conn.execute(
                "SELECT rowid, id, result_ids FROM retrieval_queries ORDER BY rowid DESC LIMIT ?",
                (limit,),
            ).fetchall()
        else:
            rows = self.conn.execute(
                "SELECT rowid, id, result_ids FROM retrieval_queries WHERE rowid > ?"
                " ORDER BY rowid LIMIT ?",
                (after_rowid, limit),
            ).fetchall()
        out: list[QueryRow] = []
        for rowid, qid, results in rows:
            rated: dict[str, list[str]] = {"helpful": [], "irrelevant": []}
            for quality, ids in self.conn.execute(
                "SELECT quality, memory_ids FROM retrieval_feedback WHERE query_id = ?", (qid,)
            ):
                if quality in rated:
                    rated[quality] += strings(ids)
            out.append(
                QueryRow(int(rowid), tuple(strings(results)), tuple(rated["helpful"]),
                         tuple(rated["irrelevant"]))
            )  # fmt: skip
        return out

    def live_seqs(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """Seq of each id that names a live memory."""
        if not memory_ids:
            return {}
        rows = self.conn.execute(
            f"SELECT id, seq FROM memories WHERE id IN {IN_JSON} AND state IN {LIVE}",
            (json.dumps(sorted(set(memory_ids))),),
        ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def insight_keys(self) -> frozenset[str]:
        """The keys of every insight written so far."""
        rows = self.conn.execute(
            "SELECT json_extract(metadata, '$.dreaming.key') FROM memories"
            " WHERE source = ? AND type = 'insight' AND json_valid(metadata)",
            (SOURCE,),
        ).fetchall()
        return frozenset(str(r[0]) for r in rows if r[0])


@contextlib.contextmanager
def open_reader(path: Path | str, busy_timeout_ms: int = 5000) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database file at ``path``, closed on exit."""
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        conn.execute("PRAGMA query_only=ON")
        yield conn
    finally:
        conn.close()


def plan_on(
    p: PlanParams,
    terms: TermCache,
    marks: Marks,
    conn: sqlite3.Connection,
    *,
    pause: Callable[[], None] | None = None,
) -> CyclePlan:
    """A cycle's plan over ``conn`` (the thread path: a pooled reader of the daemon)."""
    return plan_cycle(ConnReads(conn), p, terms, marks=marks, pause=pause)


def plan_in_worker(
    path: str,
    busy_timeout_ms: int,
    p: PlanParams,
    terms: TermCache,
    marks: Marks,
) -> CyclePlan:
    """The worker-process path: a cycle's plan over a connection of its own (its answer
    comes back through ``runtime.worker_process``'s private file, not the pipe)."""
    with open_reader(path, busy_timeout_ms) as conn:
        return plan_on(p, terms, marks, conn)
