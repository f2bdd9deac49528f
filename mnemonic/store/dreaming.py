"""SQLite for the dreamer: what it replays, the terms it links by, the recalls it learns
from, and its writes (link strengths, ``related`` links, insight memories).

Reads never touch ``access_count`` or ``last_accessed_at``: replay is not access. Each
write step is one ``BEGIN IMMEDIATE`` transaction, so a cycle that fails leaves every step
either done or not at all. Links are stored once per unordered pair (``source_seq <
target_seq``); a write only raises a strength (``max``), never lowers one, and never links
a memory that left the live states (or the store) since the cycle read it.

The reads are plain functions of a connection in ``store.dreaming_reads`` (a cycle's
read side runs them in one call, at scale in a worker process); this class runs them on
the daemon's pooled readers and does the writes.

An insight is written through the same insert as any observation (``accept_one``: raw
row, memory, full-text row, ``embedded = 0``), so the encoder's sweep gives it a vector
and links, as consolidation does for a gist; its provenance goes to ``insight_sources``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from mnemonic.cognition.dreaming import TermCache
from mnemonic.cognition.dreaming_plan import CyclePlan, Link, Marks, PlanParams
from mnemonic.store.database import Database
from mnemonic.store.dreaming_reads import (
    LIVE,
    SOURCE,
    ConnReads,
    plan_on,
    strings,
)
from mnemonic.store.marks import lower_to_newest_memory, lower_to_newest_query
from mnemonic.store.models import Encoded, NewRaw, RawStatus
from mnemonic.store.sql_lists import IN_JSON, json_list
from mnemonic.store.sqlite import accept_one
from mnemonic.store.system_meta import write_meta
from mnemonic.timeutil import from_db, to_db

CURSOR_META = "dreaming.replay_cursor"  # seq the next replay window starts after
QUERY_META = "dreaming.query_rowid"  # retrieval_queries rowid read up to
# the highest seq whose neighbourhood replay has strengthened (``Marks``)
STRENGTHENED_META = "dreaming.strengthened_through"
STARTED_META = "dreaming.last_started_at"  # epoch seconds of the last cycle's start
_SEQ_KEYS = (CURSOR_META, STRENGTHENED_META)  # seq marks (store/marks.py)


@dataclass(frozen=True, slots=True)
class InsightPlan:
    raw: NewRaw
    encoded: Encoded
    digest: str
    sources: tuple[int, ...]  # seqs


@dataclass(frozen=True, slots=True)
class Written:
    memory_id: str
    seq: int
    raw_id: str
    project: str


@dataclass(frozen=True, slots=True)
class InsightRow:
    seq: int
    id: str
    project: str
    content: str
    summary: str
    concepts: tuple[str, ...]
    state: str
    timestamp: datetime
    salience: float
    metadata: dict[str, Any]
    source_count: int


@dataclass(frozen=True, slots=True)
class SourceBrief:
    id: str
    summary: str
    project: str
    type: str
    state: str
    timestamp: datetime


class SQLiteDreaming:
    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def path(self) -> Path:
        """The database file (a worker process opens its own connection to it)."""
        return self.db.path

    @property
    def folder(self) -> Path:
        """The database's folder (private: a worker process's answer is written there)."""
        return self.db.path.parent

    # ---- meta -----------------------------------------------------------------------------
    async def get_meta(self, key: str) -> str | None:
        return await self.db.run_read(lambda conn: ConnReads(conn).meta(key))

    async def set_meta(self, values: dict[str, str], now: datetime) -> None:
        stamp = to_db(now)

        def work(conn: sqlite3.Connection) -> None:
            write_meta(conn, values, stamp)
            # a purge while the cycle planned may have freed the seqs these name
            lower_to_newest_memory(conn, [k for k in values if k in _SEQ_KEYS])
            lower_to_newest_query(conn, [k for k in values if k == QUERY_META])

        await self.db.run_write(work, bookkeeping=True)

    async def plan(
        self,
        params: PlanParams,
        terms: TermCache,
        marks: Marks,
        pause: Callable[[], None] | None = None,
    ) -> CyclePlan:
        """A cycle's read side (``cognition.dreaming_plan``) on a pooled reader's thread;
        at scale the dreamer runs it in a worker process instead, on ``path``."""
        return await self.db.run_read(partial(plan_on, params, terms, marks, pause=pause))

    async def live_count(self) -> int:
        """Live memories, about the size of a cycle's term index (the dreamer's own
        insights count here; the covering index on ``state`` makes it milliseconds)."""

        def work(conn: sqlite3.Connection) -> int:
            return int(
                conn.execute(f"SELECT count(*) FROM memories WHERE state IN {LIVE}").fetchone()[0]
            )

        return await self.db.run_read(work)

    async def raise_strengths(self, updates: Sequence[Link], now: datetime) -> int:
        """Raise each existing link to the given strength (never lower; the link must
        still exist). One transaction; returns the links changed."""
        stamp = to_db(now)

        def work(conn: sqlite3.Connection) -> int:
            changed = 0
            for u in updates:
                changed += conn.execute(
                    "UPDATE associations SET strength = ?, updated_at = ? WHERE source_seq = ?"
                    " AND target_seq = ? AND relation = ? AND strength < ?",
                    (u.strength, stamp, u.a, u.b, u.relation, u.strength),
                ).rowcount
            return changed

        return await self.db.run_write(work) if updates else 0

    async def add_links(self, links: Sequence[Link], now: datetime) -> tuple[int, int]:
        """Insert each link between two memories still live, or raise an existing one of
        the same pair and relation; one transaction. Returns (added, raised)."""
        stamp = to_db(now)

        def work(conn: sqlite3.Connection) -> tuple[int, int]:
            added = raised = 0
            for link in links:
                live = conn.execute(
                    f"SELECT count(*) FROM memories WHERE seq IN (?, ?) AND state IN {LIVE}",
                    (link.a, link.b),
                ).fetchone()[0]
                if live != 2:
                    continue
                old = conn.execute(
                    "SELECT strength FROM associations WHERE source_seq = ? AND target_seq = ?"
                    " AND relation = ?",
                    (link.a, link.b, link.relation),
                ).fetchone()
                if old is None:
                    conn.execute(
                        "INSERT INTO associations (source_seq, target_seq, relation, strength,"
                        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (link.a, link.b, link.relation, link.strength, stamp, stamp),
                    )
                    added += 1
                elif float(old[0]) < link.strength:
                    conn.execute(
                        "UPDATE associations SET strength = ?, updated_at = ? WHERE"
                        " source_seq = ? AND target_seq = ? AND relation = ?",
                        (link.strength, stamp, link.a, link.b, link.relation),
                    )
                    raised += 1
            return added, raised

        return await self.db.run_write(work) if links else (0, 0)

    # ---- insights ---------------------------------------------------------------------------
    async def source_details(
        self, seqs: Sequence[int]
    ) -> dict[int, tuple[str, str, float, str | None, str, str, datetime | None]]:
        """Per seq: (project, content, salience, episode id, episode title, timestamp,
        episode start)."""

        def work(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(
                "SELECT m.seq, m.project, m.content, m.salience, e.id, e.title, m.timestamp,"
                " e.started_at FROM memories m LEFT JOIN episode_memories em"
                " ON em.memory_seq = m.seq LEFT JOIN episodes e ON e.id = em.episode_id"
                f" WHERE m.seq IN {IN_JSON}",
                (json_list(sorted(set(seqs))),),
            ).fetchall()

        rows = await self.db.run_read(work)
        return {
            int(r[0]): (
                str(r[1]), str(r[2]), float(r[3]), r[4], str(r[5] or ""), str(r[6]),
                from_db(r[7]) if r[7] else None,
            )
            for r in rows
        }  # fmt: skip

    async def write_insights(self, plans: Sequence[InsightPlan]) -> list[Written]:
        """Each insight with its provenance, all in one transaction; one whose sources are
        no longer all there, or whose text already lives in its project, is skipped."""

        def work(conn: sqlite3.Connection) -> list[Written]:
            done: list[Written] = []
            for plan in plans:
                there = conn.execute(
                    f"SELECT count(*) FROM memories WHERE seq IN {IN_JSON}",
                    (json_list(plan.sources),),
                ).fetchone()[0]
                if there != len(set(plan.sources)):
                    continue
                conn.execute("SAVEPOINT insight")
                accepted = accept_one(conn, plan.raw, plan.encoded, plan.digest, 0.0)
                if accepted.status is not RawStatus.ACCEPTED:  # never reinforce on replay
                    conn.execute("ROLLBACK TO insight")
                    conn.execute("RELEASE insight")
                    continue
                conn.executemany(
                    "INSERT INTO insight_sources (insight_seq, source_seq) VALUES (?, ?)",
                    [(accepted.seq, s) for s in sorted(set(plan.sources))],
                )
                conn.execute("RELEASE insight")
                done.append(
                    Written(accepted.memory_id, accepted.seq, accepted.raw_id, plan.raw.project)
                )
            return done

        return await self.db.run_write(work) if plans else []

    async def list_insights(
        self,
        *,
        project: str | None = None,
        before_seq: int | None = None,
        before: datetime | None = None,
        limit: int = 50,
    ) -> list[InsightRow]:
        """The dreamer's insights, newest first."""

        def work(conn: sqlite3.Connection) -> list[InsightRow]:
            where = ["type = 'insight'", "source = ?"]
            args: list[Any] = [SOURCE]
            if project is not None:
                where.append("project = ?")
                args.append(project)
            if before_seq is not None:
                where.append("seq < ?")
                args.append(before_seq)
            if before is not None:
                where.append("timestamp < ?")
                args.append(to_db(before))
            rows = conn.execute(
                f"SELECT {_INSIGHT_COLS} FROM memories WHERE {' AND '.join(where)}"
                " ORDER BY seq DESC LIMIT ?",
                [*args, limit],
            ).fetchall()
            return [_insight(conn, r) for r in rows]

        return await self.db.run_read(work)

    async def get_insight(self, memory_id: str) -> tuple[InsightRow, list[SourceBrief]] | None:
        """An insight and its source memories (seq order), or None."""

        def work(conn: sqlite3.Connection) -> tuple[InsightRow, list[SourceBrief]] | None:
            row = conn.execute(
                f"SELECT {_INSIGHT_COLS} FROM memories WHERE id = ? AND type = 'insight'"
                " AND source = ?",
                (memory_id, SOURCE),
            ).fetchone()
            if row is None:
                return None
            sources = conn.execute(
                "SELECT m.id, m.summary, m.project, m.type, m.state, m.timestamp FROM"
                " insight_sources s JOIN memories m ON m.seq = s.source_seq"
                " WHERE s.insight_seq = ? ORDER BY m.seq",
                (int(row[0]),),
            ).fetchall()
            briefs = [
                SourceBrief(str(s[0]), str(s[1]), str(s[2]), str(s[3]), str(s[4]), from_db(s[5]))
                for s in sources
            ]
            return _insight(conn, row), briefs

        return await self.db.run_read(work)


_INSIGHT_COLS = "seq, id, project, content, summary, concepts, state, timestamp, salience, metadata"


def _insight(conn: sqlite3.Connection, r: Any) -> InsightRow:
    n = conn.execute(
        "SELECT count(*) FROM insight_sources WHERE insight_seq = ?", (int(r[0]),)
    ).fetchone()[0]
    try:
        meta = json.loads(r[9])
    except ValueError:
        meta = {}
    return InsightRow(
        int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), tuple(strings(r[5])),
        str(r[6]), from_db(r[7]), float(r[8]), meta if isinstance(meta, dict) else {}, int(n),
    )  # fmt: skip
