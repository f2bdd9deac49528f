"""SQLite for consolidation: decay in chunks, link pruning, merges and their undo.

Every write is a short ``BEGIN IMMEDIATE`` transaction of at most ``write_batch`` rows, so
recall and ingest interleave with a cycle over a million memories. The in-memory recall
index follows writes to ``memories`` and ``associations`` by its own triggers.

Decay writes are optimistic: a row is updated only if its salience, state and access
count are still what the cycle read, so a memory reinforced or recalled meanwhile keeps
that (it simply misses one interval of decay). The decay watermarks are saved in the same
transaction as the rows they describe, so a crash never lets a memory decay twice.

A gist is created through the same insert as any observation (``accept_one``: raw row,
memory, full-text row) with ``embedded = 0``, so the encoder's sweep gives it a vector and
links. Its sources are set ``merged`` *first*, in the same transaction, so the exact-
duplicate check of that insert cannot reinforce one of them instead.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemonic.cognition.decay import STATE_CODES, STATE_NAMES, TYPE_CODES, Rows
from mnemonic.cognition.merging import Candidate, inherited_links, supersede_gist
from mnemonic.errors import MnemonicError, NotFoundError
from mnemonic.store.database import Database
from mnemonic.store.marks import lower_to_newest_memory
from mnemonic.store.models import Encoded, NewRaw, RawStatus
from mnemonic.store.sql_lists import marks
from mnemonic.store.sqlite import accept_one
from mnemonic.store.system_meta import read_meta, write_meta
from mnemonic.store.vector_rows import whole_intact
from mnemonic.timeutil import from_db, to_db

DECAY_META = "consolidation.decay_watermarks"
MERGE_META = "consolidation.merge_seq"
PRUNE_META = "consolidation.pruned_at"  # epoch seconds of the last full walk of the links
_EPOCH = "(julianday({col}) - 2440587.5) * 86400.0"


class NotAGist(MnemonicError):
    """Unmerge of a memory that is no gist, or whose merge was already undone (409)."""


@dataclass(frozen=True, slots=True)
class DecayWrite:
    """One decayed row: the values read (the optimistic check) and the new ones."""

    seq: int
    old_salience: float
    old_state: str
    access_count: int
    salience: float
    state: str


@dataclass(frozen=True, slots=True)
class LinkRow:
    source_seq: int
    target_seq: int
    relation: str
    strength: float
    activation_count: int
    created: float  # epoch seconds


@dataclass(frozen=True, slots=True)
class StateChange:
    seq: int
    id: str
    project: str
    old_state: str
    new_state: str


@dataclass(frozen=True, slots=True)
class GistPlan:
    """A merge to write: the sources (seqs with the state each was read in) and the gist."""

    sources: tuple[tuple[int, str], ...]
    raw: NewRaw
    encoded: Encoded
    digest: str


@dataclass(frozen=True, slots=True)
class Merged:
    gist_id: str
    gist_seq: int
    raw_id: str
    source_ids: tuple[str, ...]
    sources: tuple[tuple[int, str], ...]  # (seq, state before the merge)


class SQLiteConsolidation:
    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- meta -----------------------------------------------------------------------------
    async def get_meta(self, key: str) -> str | None:
        return await self.db.run_read(lambda conn: read_meta(conn, key))

    async def set_meta(self, key: str, value: str, now: datetime) -> None:
        def work(conn: sqlite3.Connection) -> None:
            write_meta(conn, {key: value}, to_db(now))
            if key == MERGE_META:  # a purge during the merges may have freed the seq
                lower_to_newest_memory(conn, (key,))

        await self.db.run_write(work)

    # ---- decay ----------------------------------------------------------------------------
    async def decay_chunk(self, after_seq: int, limit: int) -> tuple[Rows, list[int]]:
        """Up to ``limit`` non-merged memories after ``after_seq`` (seq order) as columns,
        and their access counts (for the optimistic write)."""

        def work(conn: sqlite3.Connection) -> tuple[Rows, list[int]]:
            rows = conn.execute(
                "SELECT seq, type, state, salience, utility,"
                f" {_EPOCH.format(col='created_at')},"
                f" {_EPOCH.format(col='last_accessed_at')}, access_count"
                " FROM memories WHERE seq > ? AND state <> 'merged' ORDER BY seq LIMIT ?",
                (after_seq, limit),
            ).fetchall()
            return _rows(rows), [int(r[7]) for r in rows]

        return await self.db.run_read(work)

    async def write_decay(
        self, writes: Sequence[DecayWrite], watermarks: str, now: datetime
    ) -> list[tuple[int, str, str]]:
        """Apply ``writes`` whose row is unchanged since it was read, and save the
        watermarks, in one transaction. Returns (seq, old, new) of applied state changes."""
        stamp = to_db(now)

        def work(conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
            moved: list[tuple[int, str, str]] = []
            for w in writes:
                cur = conn.execute(
                    "UPDATE memories SET salience = ?, state = ?,"
                    " updated_at = CASE WHEN state = ? THEN updated_at ELSE ? END"
                    " WHERE seq = ? AND salience = ? AND state = ? AND access_count = ?",
                    (
                        w.salience,
                        w.state,
                        w.state,
                        stamp,
                        w.seq,
                        w.old_salience,
                        w.old_state,
                        w.access_count,
                    ),
                )
                if cur.rowcount and w.state != w.old_state:
                    moved.append((w.seq, w.old_state, w.state))
            write_meta(conn, {DECAY_META: watermarks}, stamp)
            return moved

        return await self.db.run_write(work)

    async def describe(self, moves: Sequence[tuple[int, str, str]]) -> list[StateChange]:
        """Ids and projects of a few state changes (for events)."""
        if not moves:
            return []
        seqs = [m[0] for m in moves]

        def work(conn: sqlite3.Connection) -> dict[int, tuple[str, str]]:
            rows = conn.execute(
                f"SELECT seq, id, project FROM memories WHERE seq IN ({marks(seqs)})", seqs
            ).fetchall()
            return {int(r[0]): (str(r[1]), str(r[2])) for r in rows}

        known = await self.db.run_read(work)
        return [
            StateChange(seq, known[seq][0], known[seq][1], old, new)
            for seq, old, new in moves
            if seq in known
        ]

    # ---- links ----------------------------------------------------------------------------
    async def weak_links(
        self, after: tuple[int, int, str], limit: int, below: float
    ) -> tuple[list[LinkRow], tuple[int, int, str] | None]:
        """Of up to ``limit`` links after key ``after`` (primary-key order), those weaker
        than ``below``, and the key to continue from (None at the end)."""

        def work(conn: sqlite3.Connection) -> tuple[list[LinkRow], tuple[int, int, str] | None]:
            rows = conn.execute(
                "SELECT source_seq, target_seq, relation, strength, activation_count,"
                f" {_EPOCH.format(col='created_at')} FROM associations"
                " WHERE (source_seq, target_seq, relation) > (?, ?, ?)"
                " ORDER BY source_seq, target_seq, relation LIMIT ?",
                (*after, limit),
            ).fetchall()
            weak = [
                LinkRow(int(r[0]), int(r[1]), str(r[2]), float(r[3]), int(r[4]), float(r[5]))
                for r in rows
                if float(r[3]) < below
            ]
            last = (int(rows[-1][0]), int(rows[-1][1]), str(rows[-1][2])) if rows else None
            return weak, last if len(rows) == limit else None

        return await self.db.run_read(work)

    async def delete_links(self, keys: Sequence[tuple[int, int, str]], below: float) -> int:
        """Delete links still weak and unused (rechecked: feedback may have used one)."""

        def work(conn: sqlite3.Connection) -> int:
            gone = 0
            for a, b, rel in keys:
                gone += conn.execute(
                    "DELETE FROM associations WHERE source_seq = ? AND target_seq = ?"
                    " AND relation = ? AND activation_count = 0 AND strength < ?",
                    (a, b, rel, below),
                ).rowcount
            return gone

        return await self.db.run_write(work)

    # ---- merges ---------------------------------------------------------------------------
    async def merge_seeds(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """Active or fading memories with a vector after ``after_seq``: (seq, project)."""

        def work(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            # stop before the first memory still waiting for its vector: the watermark must
            # not pass it, or it would never be compared
            pending = conn.execute(
                "SELECT min(m.seq) FROM memories m JOIN raw_memories r ON r.id = m.raw_id"
                " WHERE m.embedded = 0 AND r.status <> 'failed' AND m.seq > ?",
                (after_seq,),
            ).fetchone()[0]
            rows = conn.execute(
                "SELECT m.seq, m.project FROM memories m JOIN memory_vectors v ON v.seq = m.seq"
                " WHERE m.seq > ? AND m.seq < ? AND m.state IN ('active', 'fading')"
                " ORDER BY m.seq LIMIT ?",
                (after_seq, pending if pending is not None else 2**62, limit),
            ).fetchall()
            return [(int(r[0]), str(r[1])) for r in rows]

        return await self.db.run_read(work)

    async def vectors(
        self, project: str, after_seq: int, limit: int, seqs: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Vectors of active/fading memories of ``project`` (seq order, keyset paged), or
        of exactly ``seqs``; rows of another dimension than the first are left out."""

        def work(conn: sqlite3.Connection) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
            if seqs is not None:
                rows = conn.execute(
                    f"SELECT seq, vector FROM memory_vectors WHERE seq IN ({marks(seqs)})"
                    " ORDER BY seq",
                    list(seqs),
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT m.seq, v.vector FROM memories m JOIN memory_vectors v"
                    " ON v.seq = m.seq WHERE m.project = ? AND m.seq > ?"
                    " AND m.state IN ('active', 'fading') ORDER BY m.seq LIMIT ?",
                    (project, after_seq, limit),
                ).fetchall()
            return _matrix(rows)

        return await self.db.run_read(work)

    async def candidates(self, seqs: Sequence[int]) -> dict[int, Candidate]:
        """Merge candidates among ``seqs`` (still active or fading)."""
        if not seqs:
            return {}

        def work(conn: sqlite3.Connection) -> dict[int, Candidate]:
            rows = conn.execute(
                "SELECT seq, id, project, type, content, timestamp, source, state FROM memories"
                f" WHERE seq IN ({marks(seqs)}) AND state IN ('active', 'fading')",
                list(seqs),
            ).fetchall()
            return {
                int(r[0]): Candidate(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7])
                for r in rows
            }

        return await self.db.run_read(work)

    async def merge(self, plans: Sequence[GistPlan], now: datetime) -> list[Merged]:
        """Write each plan whose sources are all still in the state they were read in."""
        stamp = to_db(now)

        def work(conn: sqlite3.Connection) -> list[Merged]:
            done: list[Merged] = []
            for plan in plans:
                conn.execute("SAVEPOINT gist")
                merged = _merge_one(conn, plan, stamp)
                if merged is None:
                    conn.execute("ROLLBACK TO gist")
                else:
                    done.append(merged)
                conn.execute("RELEASE gist")
            return done

        return await self.db.run_write(work)

    async def unmerge(self, gist_id: str, now: datetime) -> list[str]:
        """Undo the merge behind ``gist_id``: each source back to its earlier state, the
        gist archived (kept). ``NotFoundError`` for an unknown id, ``NotAGist`` when there
        is nothing to undo."""

        def work(conn: sqlite3.Connection) -> list[str]:
            return _unmerge(conn, gist_id, to_db(now))

        return await self.db.run_write(work)

    # ---- history --------------------------------------------------------------------------
    async def record_cycle(
        self,
        started: datetime,
        finished: datetime,
        trigger: str,
        counts: dict[str, Any],
        exhausted: bool,
    ) -> int:
        def work(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO consolidation_history (started_at, finished_at, trigger, counts,"
                " budget_exhausted) VALUES (?, ?, ?, ?, ?)",
                (to_db(started), to_db(finished), trigger, json.dumps(counts), int(exhausted)),
            )
            return int(cur.lastrowid or 0)

        return await self.db.run_write(work, bookkeeping=True)

    async def history(self, limit: int) -> list[dict[str, Any]]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT id, started_at, finished_at, trigger, counts, budget_exhausted"
                " FROM consolidation_history ORDER BY id DESC LIMIT ?",
                (limit,),
            ).fetchall()
            return [
                {
                    "id": int(r[0]),
                    "started_at": from_db(r[1]).isoformat(),
                    "finished_at": from_db(r[2]).isoformat(),
                    "trigger": r[3],
                    "counts": json.loads(r[4]),
                    "budget_exhausted": bool(r[5]),
                }
                for r in rows
            ]

        return await self.db.run_read(work)


def _rows(rows: list[Any]) -> Rows:
    n = len(rows)
    seq = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    kind = np.fromiter((TYPE_CODES.get(r[1], 0) for r in rows), dtype=np.int64, count=n)
    state = np.fromiter((STATE_CODES[r[2]] for r in rows), dtype=np.int64, count=n)
    sal = np.fromiter((r[3] for r in rows), dtype=np.float64, count=n)
    util = np.fromiter((r[4] for r in rows), dtype=np.float64, count=n)
    created = np.fromiter((r[5] for r in rows), dtype=np.float64, count=n)
    accessed = np.fromiter(
        (np.nan if r[6] is None else r[6] for r in rows), dtype=np.float64, count=n
    )
    return Rows(seq, kind, state, sal, util, created, accessed)


def _matrix(rows: list[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    # the dimension most rows have: a first row of another dimension, or a damaged one,
    # must not decide
    dim = Counter(len(r[1]) for r in rows).most_common(1)[0][0] // 4
    kept = [r for r in rows if whole_intact(r[1], dim)]
    seqs = np.fromiter((r[0] for r in kept), dtype=np.int64, count=len(kept))
    mat = np.frombuffer(b"".join(r[1] for r in kept), dtype=np.float32).reshape(len(kept), dim)
    return seqs, mat


def state_name(code: int) -> str:
    return STATE_NAMES[code]


def _merge_one(conn: sqlite3.Connection, plan: GistPlan, stamp: str) -> Merged | None:
    seqs = [s for s, _ in plan.sources]
    rows = conn.execute(
        f"SELECT seq, id, state, salience, utility, access_count, last_accessed_at"
        f" FROM memories WHERE seq IN ({marks(seqs)})",
        seqs,
    ).fetchall()
    read_as = dict(plan.sources)
    if len(rows) != len(seqs) or any(r[2] != read_as[int(r[0])] for r in rows):
        return None  # changed since the cycle read it: leave it for the next cycle
    conn.executemany(
        "UPDATE memories SET state = 'merged', updated_at = ? WHERE seq = ?",
        [(stamp, s) for s in seqs],
    )
    accepted = accept_one(conn, plan.raw, plan.encoded, plan.digest, 0.0)
    if accepted.status is not RawStatus.ACCEPTED:
        return None  # an identical live memory exists outside the cluster
    accessed = [r[6] for r in rows if r[6] is not None]
    conn.execute(
        "UPDATE memories SET salience = ?, utility = ?, access_count = ?,"
        " last_accessed_at = ? WHERE seq = ?",
        (
            max(float(r[3]) for r in rows),
            max(float(r[4]) for r in rows),
            sum(int(r[5]) for r in rows),
            max(accessed) if accessed else None,
            accepted.seq,
        ),
    )
    conn.executemany(
        "UPDATE memories SET merged_into = ? WHERE seq = ?",
        [(accepted.memory_id, s) for s in seqs],
    )
    conn.executemany(
        "INSERT INTO memory_merges (gist_seq, source_seq, previous_state, merged_at)"
        " VALUES (?, ?, ?, ?)",
        [(accepted.seq, s, read_as[s], stamp) for s in seqs],
    )
    _copy_links(conn, seqs, accepted.seq, stamp)
    return Merged(
        accepted.memory_id,
        accepted.seq,
        accepted.raw_id,
        tuple(str(r[1]) for r in rows),
        plan.sources,
    )


def _copy_links(conn: sqlite3.Connection, seqs: list[int], gist: int, stamp: str) -> None:
    """The gist inherits its sources' links (``merging.inherited_links`` decides which)."""
    rows = conn.execute(
        "SELECT source_seq, target_seq, relation, strength FROM associations"
        f" WHERE source_seq IN ({marks(seqs)}) OR target_seq IN ({marks(seqs)})",
        [*seqs, *seqs],
    ).fetchall()
    links = [(int(a), int(b), str(rel), float(s)) for a, b, rel, s in rows]
    best, incoming = inherited_links(links, set(seqs), gist)
    if incoming:
        stamps = dict(
            conn.execute(
                f"SELECT seq, timestamp FROM memories WHERE seq IN ({marks(incoming) + ', ?'})",
                [a for a, _ in incoming] + [gist],
            ).fetchall()
        )
        supersede_gist(best, incoming, stamps, gist)
    conn.executemany(
        "INSERT INTO associations (source_seq, target_seq, relation, strength, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
        " strength = max(strength, excluded.strength), updated_at = excluded.updated_at",
        [(a, b, rel, s, stamp, stamp) for (a, b, rel), s in best.items()],
    )


def _unmerge(conn: sqlite3.Connection, gist_id: str, stamp: str) -> list[str]:
    gist = conn.execute("SELECT seq, state FROM memories WHERE id = ?", (gist_id,)).fetchone()
    if gist is None:
        raise NotFoundError("memory", gist_id)
    gist_seq, gist_state = int(gist[0]), str(gist[1])
    rows = conn.execute(
        "SELECT mm.source_seq, mm.previous_state, m.id, m.state, m.merged_into"
        " FROM memory_merges mm JOIN memories m ON m.seq = mm.source_seq"
        " WHERE mm.gist_seq = ? AND mm.unmerged_at IS NULL ORDER BY mm.source_seq",
        (gist_seq,),
    ).fetchall()
    if not rows:
        raise NotAGist(f"memory {gist_id!r} is not a gist with a merge to undo")
    if gist_state == "merged":
        raise NotAGist(f"memory {gist_id!r} is itself merged: unmerge the gist it is part of")
    restored: list[str] = []
    for seq, previous, mid, state, merged_into in rows:
        if state == "merged" and merged_into == gist_id:
            conn.execute(
                "UPDATE memories SET state = ?, merged_into = NULL, updated_at = ? WHERE seq = ?",
                (previous, stamp, seq),
            )
            restored.append(str(mid))
    conn.execute(
        "UPDATE memory_merges SET unmerged_at = ? WHERE gist_seq = ? AND unmerged_at IS NULL",
        (stamp, gist_seq),
    )
    conn.execute(
        "UPDATE memories SET state = 'archived', updated_at = ?, metadata = CASE"
        " WHEN json_valid(metadata) THEN json_set(metadata, '$.unmerged_at', ?)"
        " ELSE metadata END WHERE seq = ?",
        (stamp, stamp, gist_seq),
    )
    return restored
