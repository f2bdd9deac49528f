"""Persistence of abstractions (``abstractions``, ``abstraction_evidence``,
``abstraction_sources``; migration 0007).

A cycle reads a bounded snapshot (live memories, the links between them, the stored
abstractions) and then writes one transaction per step: the patterns step (new patterns,
grown ones), the lifecycle step (near-duplicate merges, strength, grounding, demotion,
archiving, the cap), then one step per level above (principles, axioms). A failure in a
step rolls that step back whole; the steps before it stand and are consistent alone.

Nothing here deletes an abstraction: states move (``active`` -> ``demoted`` ->
``archived``; ``dismissed`` by a person; ``merged`` into an older near-duplicate). Only a
purge of a memory removes its evidence rows (``store/purge.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mnemonic.cognition.abstraction import (
    Child,
    Group,
    Known,
    LifeParams,
    MatchParams,
    PatternPlan,
    confidence,
    decayed,
    grounding,
    near_duplicates,
    next_state,
    over_cap,
    strength,
)
from mnemonic.cognition.clustering import Link, Node, terms_of
from mnemonic.jsonsafe import loads_stored
from mnemonic.store.database import Database
from mnemonic.store.sql_lists import IN_JSON, json_list
from mnemonic.timeutil import from_db, to_db

LEVELS = ("pattern", "principle", "axiom")
_LIVE_MEMORY = "('active', 'fading')"
_DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class PatternView:
    """An active pattern as recall uses it (``SQLiteAbstractions.active_patterns``)."""

    id: str
    title: str
    concepts: tuple[str, ...]
    strength: float
    evidence: tuple[int, ...]  # memory seqs


@dataclass(frozen=True, slots=True)
class AbstractionRow:
    id: str
    level: str
    title: str
    description: str
    concepts: tuple[str, ...]
    project: str
    strength: float
    confidence: float
    grounding: float
    state: str
    merged_into: str | None
    described_by: str
    created_at: datetime
    updated_at: datetime
    last_seen_at: datetime
    evidence_count: int


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    id: str
    summary: str
    state: str
    timestamp: datetime
    weight: float


@dataclass(frozen=True, slots=True)
class Described:
    title: str
    description: str
    by: str  # heuristic | llm


@dataclass(frozen=True, slots=True)
class Created:
    id: str
    level: str
    title: str
    concepts: tuple[str, ...]
    members: tuple[str, ...]  # memory ids (patterns) or child ids (principles, axioms)
    confidence: float = 0.0
    strength: float = 0.0
    project: str = ""


@dataclass(frozen=True, slots=True)
class ParentPlan:
    """A principle (axiom) step: groups to create and matched parents to grow."""

    create: tuple[tuple[Group, Described], ...]
    grow: tuple[tuple[str, Group], ...]


def _strings(value: str) -> tuple[str, ...]:
    loaded = loads_stored(value, [])
    return tuple(str(v) for v in loaded) if isinstance(loaded, list) else ()


def _row(r: sqlite3.Row) -> AbstractionRow:
    return AbstractionRow(
        id=r["id"],
        level=r["level"],
        title=r["title"],
        description=r["description"],
        concepts=_strings(r["concepts"]),
        project=r["project"],
        strength=float(r["strength"]),
        confidence=float(r["confidence"]),
        grounding=float(r["grounding"]),
        state=r["state"],
        merged_into=r["merged_into"],
        described_by=r["described_by"],
        created_at=from_db(r["created_at"]),
        updated_at=from_db(r["updated_at"]),
        last_seen_at=from_db(r["last_seen_at"]),
        evidence_count=int(r["evidence_count"]),
    )


_SELECT = (
    "SELECT a.*, CASE a.level WHEN 'pattern' THEN"
    " (SELECT count(*) FROM abstraction_evidence e WHERE e.abstraction_id = a.id)"
    " ELSE (SELECT count(*) FROM abstraction_sources s WHERE s.parent_id = a.id) END"
    " AS evidence_count FROM abstractions a"
)


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


class SQLiteAbstractions:
    """Abstractions over the same database as ``SQLiteStore``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def folder(self) -> Path:
        """The database's folder (private: a worker process's answer is written there)."""
        return self.db.path.parent

    # ---- the cycle's reads ---------------------------------------------------------------
    async def snapshot(self, max_nodes: int, salient_share: float) -> tuple[list[Node], list[Link]]:
        """Up to ``max_nodes`` live memories (the newest, plus the most salient older ones:
        ``salient_share`` of the cap) and the associations among them."""

        def work(conn: sqlite3.Connection) -> tuple[list[Node], list[Link]]:
            salient = int(max_nodes * salient_share)
            cols = (
                "SELECT m.seq, m.concepts, json_extract(m.metadata, '$.entities'), m.project,"
                " substr(m.timestamp, 1, 10), e.episode_id FROM memories m"
                " LEFT JOIN episode_memories e ON e.memory_seq = m.seq"
                f" WHERE m.state IN {_LIVE_MEMORY}"
            )
            rows = conn.execute(
                cols + " ORDER BY m.seq DESC LIMIT ?", (max_nodes - salient,)
            ).fetchall()
            floor = min((r[0] for r in rows), default=2**62)
            if salient > 0:
                rows += conn.execute(
                    cols + " AND m.seq < ? ORDER BY m.salience DESC, m.seq DESC LIMIT ?",
                    (floor, salient),
                ).fetchall()
            nodes = [_node(r) for r in rows]
            seqs = json_list(n.seq for n in nodes)
            # the unary + keeps target_seq out of the index lookup: with both ends as index
            # keys SQLite probed every (source, target) pair of the lists, 25M lookups for
            # 5,000 nodes (6.5-7 s of the cycle at 100k memories); now a range seek per
            # source and a probe of the list per link found (~0.03 s)
            links = [
                Link(int(a), int(b), float(s))
                for a, b, s in conn.execute(
                    "SELECT source_seq, target_seq, max(strength) FROM associations"
                    " WHERE relation NOT IN ('contradicts', 'supersedes')"
                    f" AND source_seq IN {IN_JSON}"
                    f" AND +target_seq IN {IN_JSON}"
                    " GROUP BY source_seq, target_seq",
                    (seqs, seqs),
                )
            ]
            return nodes, links

        return await self.db.run_read(work)

    async def known(self, level: str, archived_limit: int) -> list[Known]:
        """Stored abstractions of ``level`` a new cluster (group) may be: every active,
        demoted and dismissed one, and the ``archived_limit`` most recently updated
        archived ones (merged ones live on in the one they were merged into)."""

        def work(conn: sqlite3.Connection) -> list[Known]:
            return _known(conn, level, archived_limit)

        return await self.db.run_read(work)

    async def texts(self, seqs: Sequence[int], limit: int) -> list[str]:
        """Summaries of the first ``limit`` of ``seqs`` (for an LLM description)."""

        def work(conn: sqlite3.Connection) -> list[str]:
            wanted = json_list(list(seqs)[:limit])
            return [
                str(s)
                for (s,) in conn.execute(
                    f"SELECT summary FROM memories WHERE seq IN {IN_JSON} ORDER BY seq",
                    (wanted,),
                )
            ]

        return await self.db.run_read(work)

    async def titles(self, ids: Sequence[str]) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            return [
                str(t)
                for (t,) in conn.execute(
                    f"SELECT title FROM abstractions WHERE id IN {IN_JSON} ORDER BY id",
                    (json_list(ids),),
                )
            ]

        return await self.db.run_read(work)

    async def children(self, level: str) -> list[Child]:
        """Active abstractions of ``level`` as children for the level above."""

        def work(conn: sqlite3.Connection) -> list[Child]:
            rows = conn.execute(
                "SELECT id, concepts, strength, grounding, project FROM abstractions"
                " WHERE level = ? AND state = 'active' ORDER BY id",
                (level,),
            ).fetchall()
            return [Child(r[0], _strings(r[1]), float(r[2]), float(r[3]), r[4]) for r in rows]

        return await self.db.run_read(work)

    # ---- the cycle's writes --------------------------------------------------------------
    async def write_patterns(
        self,
        plan: PatternPlan,
        described: Sequence[Described],
        now: datetime,
        new_id: Callable[[], str],
    ) -> list[Created]:
        """The patterns step in one transaction: ``plan.created[i]`` described by
        ``described[i]``, and every grown pattern."""

        def work(conn: sqlite3.Connection) -> list[Created]:
            stamp = to_db(now)
            made: list[Created] = []
            for new, desc in zip(plan.created, described, strict=True):
                pid = new_id()
                c = new.cluster
                conn.execute(
                    "INSERT INTO abstractions (id, level, title, description, concepts, project,"
                    " strength, confidence, grounding, described_by, created_at, updated_at,"
                    " last_seen_at) VALUES (?, 'pattern', ?, ?, ?, ?, 0, 0, 1, ?, ?, ?, ?)",
                    (pid, desc.title, desc.description, json.dumps(list(c.concepts)),
                     c.project, desc.by, stamp, stamp, stamp),
                )  # fmt: skip
                _add_evidence(conn, pid, new.evidence, stamp)
                ids = _memory_ids(conn, new.evidence)
                made.append(Created(pid, "pattern", desc.title, c.concepts, ids, project=c.project))
            for g in plan.grown:
                conn.execute(
                    "UPDATE abstractions SET concepts = ?, last_seen_at = ?, updated_at = ?,"
                    " state = CASE WHEN ? THEN 'active' ELSE state END"
                    " WHERE id = ? AND level = 'pattern' AND state NOT IN ('dismissed', 'merged')",
                    (json.dumps(list(g.concepts)), stamp, stamp, int(g.revive), g.id),
                )
                _add_evidence(conn, g.id, g.added, stamp)
            return made

        return await self.db.run_write(work)

    async def maintain_patterns(
        self, match: MatchParams, life: LifeParams, max_patterns: int, now: datetime
    ) -> dict[str, int]:
        """The lifecycle step in one transaction: merge near-duplicates into the older
        one, recompute strength and grounding, move states, archive beyond the cap."""

        def work(conn: sqlite3.Connection) -> dict[str, int]:
            stamp = to_db(now)
            counts = {"merged": 0, "demoted": 0, "archived": 0, "restored": 0, "capped": 0}
            live = [k for k in _known(conn, "pattern", 0) if k.state == "active"]
            for newer, older in near_duplicates(live, match):
                conn.execute(
                    "INSERT OR IGNORE INTO abstraction_evidence"
                    " (abstraction_id, memory_seq, weight, added_at)"
                    " SELECT ?, memory_seq, weight, ? FROM abstraction_evidence"
                    " WHERE abstraction_id = ?",
                    (older, stamp, newer),
                )
                conn.execute(
                    "UPDATE abstractions SET state = 'merged', merged_into = ?, updated_at = ?"
                    " WHERE id = ?",
                    (older, stamp, newer),
                )
                counts["merged"] += 1
            rows = conn.execute(
                "SELECT a.id, a.state, a.last_seen_at, a.created_at,"
                " count(e.memory_seq), count(CASE WHEN m.state IN "
                f"{_LIVE_MEMORY} THEN 1 END) FROM abstractions a"
                " LEFT JOIN abstraction_evidence e ON e.abstraction_id = a.id"
                " LEFT JOIN memories m ON m.seq = e.memory_seq"
                " WHERE a.level = 'pattern' AND a.state IN ('active', 'demoted')"
                " GROUP BY a.id"
            ).fetchall()
            at = now.timestamp()
            survivors: list[tuple[str, float, float]] = []
            for pid, state, seen, created, total, n_live in rows:
                idle = max(0.0, (at - from_db(seen).timestamp()) / _DAY_S)
                g = grounding(int(n_live), int(total))
                s = decayed(strength(int(n_live), life.strength_k), idle, life.half_life_days)
                new_state = next_state(state, g, idle, life)
                _count_move(counts, state, new_state)
                conn.execute(
                    "UPDATE abstractions SET strength = ?, grounding = ?, confidence = ?,"
                    " state = ?, updated_at = ? WHERE id = ?",
                    (_unit(s), _unit(g), _unit(s * g), new_state, stamp, pid),
                )
                if new_state == "active":
                    survivors.append((pid, s, from_db(created).timestamp()))
            counts["capped"] = _archive(conn, over_cap(survivors, max_patterns), stamp)
            return counts

        return await self.db.run_write(work)

    async def write_parents(
        self,
        level: str,
        child_level: str,
        plan: ParentPlan,
        life: LifeParams,
        cap: int,
        now: datetime,
        new_id: Callable[[], str],
    ) -> tuple[list[Created], dict[str, int]]:
        """One level above patterns in one transaction: new parents with their children,
        matched ones grown, then every parent's confidence, grounding, state and the cap."""

        def work(conn: sqlite3.Connection) -> tuple[list[Created], dict[str, int]]:
            stamp = to_db(now)
            made: list[Created] = []
            for group, desc in plan.create:
                pid = new_id()
                conn.execute(
                    "INSERT INTO abstractions (id, level, title, description, concepts, project,"
                    " described_by, created_at, updated_at, last_seen_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (pid, level, desc.title, desc.description, json.dumps(list(group.concepts)),
                     group.project, desc.by, stamp, stamp, stamp),
                )  # fmt: skip
                _add_children(conn, pid, group.children, stamp)
                made.append(Created(pid, level, desc.title, group.concepts, group.children))
            for pid, group in plan.grow:
                before = conn.total_changes
                _add_children(conn, pid, group.children, stamp)
                if conn.total_changes != before:
                    conn.execute(
                        "UPDATE abstractions SET last_seen_at = ?, updated_at = ?,"
                        " state = CASE state WHEN 'archived' THEN 'active' ELSE state END"
                        " WHERE id = ?",
                        (stamp, stamp, pid),
                    )
            counts = _maintain_parents(conn, level, child_level, life, cap, now)
            scores = {
                r[0]: (float(r[1]), float(r[2]))
                for r in conn.execute(
                    f"SELECT id, confidence, strength FROM abstractions WHERE id IN {IN_JSON}",
                    (json_list(m.id for m in made),),
                )
            }
            made = [
                Created(m.id, m.level, m.title, m.concepts, m.members, *scores.get(m.id, (0, 0)))
                for m in made
            ]
            return made, counts

        return await self.db.run_write(work)

    # ---- recall --------------------------------------------------------------------------
    async def active_patterns(self) -> list[PatternView]:
        """Every active pattern with its evidence seqs, strongest first, in one query (at
        most ``abstraction.max_patterns`` rows; the evidence of each is capped by
        ``abstraction.max_evidence``). Meant to be cached by the caller per cycle."""

        def work(conn: sqlite3.Connection) -> list[PatternView]:
            rows = conn.execute(
                "SELECT a.id, a.title, a.concepts, a.strength,"
                " (SELECT json_group_array(e.memory_seq) FROM abstraction_evidence e"
                "  WHERE e.abstraction_id = a.id)"
                " FROM abstractions a WHERE a.level = 'pattern' AND a.state = 'active'"
                " ORDER BY a.strength DESC, a.id"
            ).fetchall()
            return [
                PatternView(r[0], r[1], _strings(r[2]), float(r[3]),
                            tuple(sorted(int(s) for s in json.loads(r[4] or "[]"))))
                for r in rows
            ]  # fmt: skip

        return await self.db.run_read(work)

    # ---- faces ---------------------------------------------------------------------------
    async def page(
        self,
        *,
        level: str | None = None,
        state: str | None = None,
        project: str | None = None,
        min_strength: float = 0.0,
        limit: int = 50,
        after: tuple[float, str] | None = None,
    ) -> list[AbstractionRow]:
        """Strongest first (then by id); ``after`` = (strength, id) of the last row seen."""

        def work(conn: sqlite3.Connection) -> list[AbstractionRow]:
            where: list[str] = ["a.strength >= ?"]
            args: list[Any] = [min_strength]
            for col, value in (("level", level), ("state", state), ("project", project)):
                if value is not None:
                    where.append(f"a.{col} = ?")
                    args.append(value)
            if after is not None:
                where.append("(a.strength < ? OR (a.strength = ? AND a.id > ?))")
                args += [after[0], after[0], after[1]]
            rows = conn.execute(
                f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY a.strength DESC, a.id LIMIT ?",
                (*args, limit),
            ).fetchall()
            return [_row(r) for r in rows]

        return await self.db.run_read(work)

    async def get(self, abstraction_id: str) -> AbstractionRow | None:
        def work(conn: sqlite3.Connection) -> AbstractionRow | None:
            r = conn.execute(f"{_SELECT} WHERE a.id = ?", (abstraction_id,)).fetchone()
            return _row(r) if r else None

        return await self.db.run_read(work)

    async def evidence(self, abstraction_id: str, limit: int) -> list[EvidenceItem]:
        def work(conn: sqlite3.Connection) -> list[EvidenceItem]:
            rows = conn.execute(
                "SELECT m.id, m.summary, m.state, m.timestamp, e.weight"
                " FROM abstraction_evidence e JOIN memories m ON m.seq = e.memory_seq"
                " WHERE e.abstraction_id = ? ORDER BY m.timestamp DESC, m.seq DESC LIMIT ?",
                (abstraction_id, limit),
            ).fetchall()
            return [EvidenceItem(r[0], r[1], r[2], from_db(r[3]), float(r[4])) for r in rows]

        return await self.db.run_read(work)

    async def children_of(self, abstraction_id: str) -> list[AbstractionRow]:
        def work(conn: sqlite3.Connection) -> list[AbstractionRow]:
            rows = conn.execute(
                f"{_SELECT} WHERE a.id IN (SELECT child_id FROM abstraction_sources"
                " WHERE parent_id = ?) ORDER BY a.strength DESC, a.id",
                (abstraction_id,),
            ).fetchall()
            return [_row(r) for r in rows]

        return await self.db.run_read(work)

    async def dismiss(self, abstraction_id: str, level: str | None, now: datetime) -> str | None:
        """Dismiss one abstraction (idempotent); its state after, or None when unknown
        (of ``level`` when given). A merged one is dismissed too: it is a person's say."""

        def work(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT level FROM abstractions WHERE id = ?", (abstraction_id,)
            ).fetchone()
            if row is None or (level is not None and row[0] != level):
                return None
            conn.execute(
                "UPDATE abstractions SET state = 'dismissed', updated_at = ?"
                " WHERE id = ? AND state <> 'dismissed'",
                (to_db(now), abstraction_id),
            )
            return "dismissed"

        return await self.db.run_write(work)

    async def counts(self) -> dict[str, int]:
        def work(conn: sqlite3.Connection) -> dict[str, int]:
            return {
                f"{lvl}.{st}": int(n)
                for lvl, st, n in conn.execute(
                    "SELECT level, state, count(*) FROM abstractions GROUP BY level, state"
                )
            }

        return await self.db.run_read(work)


# ---- helpers inside a transaction ----------------------------------------------------------


def _node(r: sqlite3.Row | tuple[Any, ...]) -> Node:
    seq, concepts, entities, project, day, episode = tuple(r)
    terms = terms_of(_strings(concepts), _strings(entities) if entities else ())
    try:
        ordinal = datetime.fromisoformat(day).toordinal()
    except (TypeError, ValueError):
        ordinal = 0
    return Node(int(seq), terms, project, episode, ordinal)


def _known(conn: sqlite3.Connection, level: str, archived_limit: int) -> list[Known]:
    rows = conn.execute(
        "SELECT id, state, concepts, created_at FROM abstractions WHERE level = ?"
        " AND state IN ('active', 'demoted', 'dismissed')"
        " UNION ALL SELECT * FROM (SELECT id, state, concepts, created_at FROM abstractions"
        " WHERE level = ? AND state = 'archived' ORDER BY updated_at DESC LIMIT ?)",
        (level, level, archived_limit),
    ).fetchall()
    if level == "pattern":
        sql = "SELECT memory_seq FROM abstraction_evidence WHERE abstraction_id = ?"
    else:
        sql = "SELECT child_id FROM abstraction_sources WHERE parent_id = ?"
    return [
        Known(
            r[0],
            r[1],
            _strings(r[2]),
            frozenset(v for (v,) in conn.execute(sql, (r[0],))),
            from_db(r[3]).timestamp(),
        )
        for r in rows
    ]


def _add_evidence(conn: sqlite3.Connection, pid: str, seqs: Sequence[int], stamp: str) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO abstraction_evidence (abstraction_id, memory_seq, weight, added_at)"
        " SELECT ?, seq, 1, ? FROM memories WHERE seq = ?",  # a memory purged meanwhile: skip
        [(pid, stamp, s) for s in seqs],
    )


def _add_children(conn: sqlite3.Connection, pid: str, ids: Sequence[str], stamp: str) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO abstraction_sources (parent_id, child_id, added_at)"
        " VALUES (?, ?, ?)",
        [(pid, c, stamp) for c in ids if c != pid],
    )


def _memory_ids(conn: sqlite3.Connection, seqs: Sequence[int]) -> tuple[str, ...]:
    return tuple(
        i
        for (i,) in conn.execute(
            f"SELECT id FROM memories WHERE seq IN {IN_JSON} ORDER BY seq",
            (json_list(seqs),),
        )
    )


def _archive(conn: sqlite3.Connection, ids: Sequence[str], stamp: str) -> int:
    conn.executemany(
        "UPDATE abstractions SET state = 'archived', updated_at = ? WHERE id = ?",
        [(stamp, i) for i in ids],
    )
    return len(ids)


def _count_move(counts: dict[str, int], old: str, new: str) -> None:
    if old == new:
        return
    key = {"demoted": "demoted", "archived": "archived", "active": "restored"}[new]
    counts[key] += 1


def _maintain_parents(
    conn: sqlite3.Connection,
    level: str,
    child_level: str,
    life: LifeParams,
    cap: int,
    now: datetime,
) -> dict[str, int]:
    """Confidence, strength (children's mean), grounding (share of children still active),
    state and cap of every live parent of ``level``."""
    stamp = to_db(now)
    counts = {"demoted": 0, "archived": 0, "restored": 0, "capped": 0}
    parents = conn.execute(
        "SELECT id, state, last_seen_at, created_at FROM abstractions"
        " WHERE level = ? AND state IN ('active', 'demoted')",
        (level,),
    ).fetchall()
    at = now.timestamp()
    survivors: list[tuple[str, float, float]] = []
    for pid, state, seen, created in parents:
        kids = conn.execute(
            "SELECT c.state, c.strength, c.grounding FROM abstraction_sources s"
            " JOIN abstractions c ON c.id = s.child_id WHERE s.parent_id = ? AND c.level = ?",
            (pid, child_level),
        ).fetchall()
        active = [(float(k[1]), float(k[2])) for k in kids if k[0] == "active"]
        g = grounding(len(active), len(kids))
        conf = confidence([a[0] for a in active], [a[1] for a in active]) * g
        s = sum(a[0] for a in active) / len(active) if active else 0.0
        idle = max(0.0, (at - from_db(seen).timestamp()) / _DAY_S)
        new_state = next_state(state, g, idle, life)
        _count_move(counts, state, new_state)
        conn.execute(
            "UPDATE abstractions SET strength = ?, grounding = ?, confidence = ?, state = ?,"
            " updated_at = ? WHERE id = ?",
            (_unit(s), _unit(g), _unit(conf), new_state, stamp, pid),
        )
        if new_state == "active":
            survivors.append((pid, conf, from_db(created).timestamp()))
    counts["capped"] = _archive(conn, over_cap(survivors, cap), stamp)
    return counts
