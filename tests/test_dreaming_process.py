"""The dreamer's read side in a worker process (``dreaming.process_min_memories``): it
decides exactly what the thread path decides (same strengthened links, new links and
insights, the term cache carried across cycles), a whole cycle writes the same rows
either way, and a cycle cancelled while the worker is busy ends at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sqlite3
import time
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import psutil
from support.store import Clock, with_database

from mnemonic.agents.dreaming import DreamingAgent, plan_params
from mnemonic.cognition.dreaming import TermCache
from mnemonic.cognition.dreaming_plan import CyclePlan, Marks
from mnemonic.config import DreamingConfig
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import DreamCompleted, Event
from mnemonic.runtime.worker_process import run_in_worker
from mnemonic.store.database import Database
from mnemonic.store.dreaming import SQLiteDreaming
from mnemonic.store.dreaming_reads import plan_in_worker, plan_on
from mnemonic.store.models import Encoded, MemoryType, NewRaw, Source
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import to_db

TOPICS = [
    "quartz volume", "frobnicator cache", "helm chart", "staging cluster", "argo rollout",
    "flaky test", "redis sentinel", "temp dir", "kafka lag", "cert rotation", "dns ttl",
    "gc pause", "pg vacuum", "s3 bucket", "jwt expiry", "rate limiter",
]  # fmt: skip
MEMORIES = 160
CFG: dict[str, Any] = {
    "max_df_share": 0.2,
    "min_episodes": 3,
    "replay_batch": 60,
    "replay_window": 2,
    "neighbour_min_strength": 0.3,
    "coretrieval_min_count": 2,
    "max_insights_per_cycle": 3,
    "llm_insights": False,
}


async def _seed(db: Database, when: datetime) -> None:
    """Memories with overlapping rare concepts in 20 episodes (some outside any), links
    between neighbours, logged recalls with feedback: every step of a cycle has work."""
    rnd = random.Random(11)
    items = []
    for i in range(MEMORIES):
        concepts = [*rnd.sample(TOPICS, 2), f"unique{i}"]
        text = f"Note {i} about {concepts[0]} and {concepts[1]}."
        items.append(
            (
                NewRaw(text, Source.API, "alpha", when + timedelta(minutes=i)),
                Encoded(text[:60], tuple(concepts), MemoryType.GENERAL, rnd.random(), 0.6),
                content_hash(text),
            )
        )
    accepted = await SQLiteStore(db).accept(items, 0.05)
    seqs = [a.seq for a in accepted]
    ids = [a.memory_id for a in accepted]

    def work(conn: sqlite3.Connection) -> None:
        stamp = to_db(when)
        for e in range(20):
            start = to_db(when + timedelta(days=e))
            conn.execute(
                "INSERT INTO episodes (id, project, state, title, started_at, ended_at,"
                " created_at, updated_at) VALUES (?, 'alpha', 'closed', ?, ?, ?, ?, ?)",
                (f"e{e}", f"Episode {e}", start, start, stamp, stamp),
            )
        for i, seq in enumerate(seqs):
            if i % 8 != 7:  # every eighth memory outside any episode
                conn.execute(
                    "INSERT INTO episode_memories (episode_id, memory_seq) VALUES (?, ?)",
                    (f"e{i % 20}", seq),
                )
        links = {
            (min(a, b), max(a, b)): rnd.choice(["similar", "temporal", "supersedes"])
            for a, b in ((rnd.choice(seqs), rnd.choice(seqs)) for _ in range(400))
            if a != b
        }
        conn.executemany(
            "INSERT INTO associations (source_seq, target_seq, relation, strength,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            [(a, b, r, round(rnd.uniform(0.2, 0.9), 3), stamp, stamp)
             for (a, b), r in sorted(links.items())],
        )  # fmt: skip
        for q in range(60):
            shown = rnd.sample(ids[:40], 5)
            conn.execute(
                "INSERT INTO retrieval_queries (id, query, result_ids, took_ms, created_at)"
                " VALUES (?, 'q', ?, 1, ?)",
                (f"q{q}", json.dumps(shown), stamp),
            )
            if q % 5 == 0:
                conn.execute(
                    "INSERT INTO retrieval_feedback (query_id, quality, memory_ids, created_at)"
                    " VALUES (?, ?, ?, ?)",
                    (f"q{q}", "helpful" if q % 10 else "irrelevant", json.dumps(shown[:2]),
                     stamp),
                )  # fmt: skip

    await db.run_write(work)


def _decisions(plan: CyclePlan) -> dict[str, Any]:
    return {
        "cursor": plan.cursor,
        "strengthened_through": plan.strengthened_through,
        "query_rowid": plan.query_rowid,
        "counts": plan.counts,
        "strengthened": plan.strengthened,
        "links": plan.links,
        "coretrieval_links": plan.coretrieval_links,
        "insights": plan.insights,
    }


def test_the_worker_process_decides_what_the_thread_decides_cold_and_warm(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    params = plan_params(DreamingConfig(**CFG))

    async def scenario(db: Database) -> None:
        await _seed(db, Clock().now - timedelta(days=30))
        in_thread = TermCache(16)
        in_worker = TermCache(16)
        for cycle in range(2):  # cold, then warm (the cache came back from the worker)
            here = await db.run_read(partial(plan_on, params, in_thread, Marks()))
            there = await run_in_worker(
                tmp_path, "dreaming", CyclePlan, plan_in_worker, str(path), 5000, params,
                in_worker, Marks(),
            )  # fmt: skip
            assert _decisions(there) == _decisions(here)
            assert here.strengthened and here.links and here.insights  # each step did work
            assert here.coretrieval_links > 0
            assert there.counts["memories_parsed"] == (MEMORIES if cycle == 0 else 0)
            assert len(there.terms) == MEMORIES
            in_thread, in_worker = here.terms, there.terms

    with_database(path, scenario)


def _cycle(path: Path, clock: Clock, **cfg: Any) -> tuple[dict[str, Any], list[Any]]:
    events: list[Event] = []

    async def scenario(db: Database) -> dict[str, Any]:
        await _seed(db, clock.now - timedelta(days=30))
        agent = DreamingAgent(
            SQLiteDreaming(db), events.append, clock, DreamingConfig(**{**CFG, **cfg}),
            redact=lambda text: text,
        )  # fmt: skip
        return await agent.run_cycle("manual")

    summary = with_database(path, scenario)
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT source_seq, target_seq, relation, strength FROM associations ORDER BY 1, 2, 3"
        ).fetchall()
        rows += conn.execute(
            "SELECT seq, content, concepts FROM memories WHERE source = 'dreaming' ORDER BY seq"
        ).fetchall()
        rows += conn.execute("SELECT * FROM insight_sources ORDER BY 1, 2").fetchall()
        rows += conn.execute(
            "SELECT key, value FROM system_meta WHERE key LIKE 'dreaming.%'"
            " AND key <> 'dreaming.last_started_at' ORDER BY key"
        ).fetchall()
    finally:
        conn.close()
    return summary, rows


def test_a_cycle_in_the_worker_process_writes_what_a_thread_cycle_writes(
    tmp_path: Path,
) -> None:
    clock = Clock()
    threaded, thread_rows = _cycle(tmp_path / "thread.db", clock)
    forced, process_rows = _cycle(tmp_path / "process.db", clock, process_min_memories=0)
    assert threaded["planned_in_process"] is False  # 160 memories: under the default
    assert forced["planned_in_process"] is True
    counted = [k for k in threaded if k not in ("took_ms", "phases_ms", "planned_in_process")]
    assert {k: forced[k] for k in counted} == {k: threaded[k] for k in counted}
    assert threaded["links_added"] > 0 and threaded["insights"] > 0
    assert threaded["links_strengthened"] > 0
    assert process_rows == thread_rows
    assert list(tmp_path.glob(".dreaming-plan-*")) == []  # the worker's plan file is gone


class _LockedForWorker(SQLiteDreaming):
    """The real store, except that the file it names for a worker process is a copy
    that another connection holds an exclusive lock on, as a long write would: the
    worker waits on SQLite (its busy timeout) until the cycle is cancelled."""

    def __init__(self, db: Database, locked: Path) -> None:
        super().__init__(db)
        self.locked = locked

    @property
    def path(self) -> Path:
        return self.locked


def _locked_copy(source: Path, copy: Path) -> sqlite3.Connection:
    src = sqlite3.connect(source)
    dst = sqlite3.connect(copy)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    conn = sqlite3.connect(copy, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("UPDATE system_meta SET value = value")
    return conn


def _workers() -> list[psutil.Process]:
    """This test process's live anyio worker processes."""
    found = []
    for child in psutil.Process().children():
        try:
            cmd = " ".join(child.cmdline())
            if "anyio.to_process" in cmd and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def test_a_cycle_cancelled_while_the_worker_waits_ends_at_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = Clock()
    events: list[Event] = []

    async def scenario(db: Database) -> tuple[float, dict[str, Any]]:
        await _seed(db, clock.now - timedelta(days=30))
        locker = _locked_copy(path, tmp_path / "locked.db")
        store = _LockedForWorker(db, tmp_path / "locked.db")
        agent = DreamingAgent(
            store, events.append, clock, DreamingConfig(**{**CFG, "process_min_memories": 0}),
            redact=lambda text: text, busy_timeout_ms=60_000,
        )  # fmt: skip
        task = asyncio.create_task(agent.run_cycle("manual"))
        for _ in range(200):  # the worker is started, then waits on the lock
            await asyncio.sleep(0.05)
            if _workers():
                break
        await asyncio.sleep(1.0)
        assert not task.done() and len(_workers()) == 1
        t0 = time.monotonic()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 20)
        took = time.monotonic() - t0
        assert task.cancelled()
        assert _workers() == []  # killed, not left waiting (and holding a pool slot)
        locker.execute("ROLLBACK")
        locker.close()
        plain = DreamingAgent(
            SQLiteDreaming(db), events.append, clock,
            DreamingConfig(**{**CFG, "process_min_memories": 0}), redact=lambda text: text,
        )  # fmt: skip
        return took, await plain.run_cycle("manual")  # the pool still serves a cycle

    took, after = with_database(path, scenario)
    assert took < 5.0  # not the 60 s the worker would have waited on SQLite
    assert after["planned_in_process"] is True and after["links_added"] > 0
    # the cancelled cycle completed nothing: the one DreamCompleted is the second cycle's
    assert len([e for e in events if isinstance(e, DreamCompleted)]) == 1
