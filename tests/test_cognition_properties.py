"""The thinking half stays bounded over a long life (issue 13, section 7).

A seeded random walk drives a real SQLite store (production migrations) through 1,000
cycles of the five cognitive agents (episoding, consolidation, dreaming, abstraction,
metacognition), each run through the real ``ScheduledAgent.run_now`` with its run log, in a
random order, interleaved with new memories (embedded as the encoder would, with synthetic
vectors), recalls with feedback written through the production ``SQLiteStore`` paths, and a
fake clock moved by minutes to days. After every cycle the invariants are checked:

* every cycle succeeds (``agent_runs.ok``);
* association strengths, abstraction strength/confidence/grounding, memory salience and
  significance stay in [0, 1], utility stays positive (the schema's CHECKs would refuse
  a write outside; this also catches a NaN read back as NULL);
* active patterns, principles and axioms stay under ``abstraction.max_*``;
* ``related`` links between live memories stay under ``dreaming.max_related_per_memory``
  per memory, gists included (a gist inherited every source's until the walk found it;
  the regression test is at the end), and one dreaming cycle adds at most
  ``dreaming.max_links_per_cycle``;
* no memory row is ever deleted, and no memory's content changes;
* no cycle touches ``access_count`` / ``last_accessed_at`` (only the recalls do).

The caps are set small so that they bind. The walk is a plain seeded ``random.Random``
(not Hypothesis): one case is 1,000 stateful cycles, and a failure names its seed and
step, which replays it exactly.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemonic.agents.abstraction import AbstractionAgent
from mnemonic.agents.consolidation import ConsolidationAgent
from mnemonic.agents.dreaming import DreamingAgent
from mnemonic.agents.episoding import EpisodingAgent
from mnemonic.agents.metacognition import MetacognitionAgent
from mnemonic.config import (
    AbstractionConfig,
    ConsolidationConfig,
    DreamingConfig,
    EpisodesConfig,
    MetacognitionConfig,
    StorageConfig,
)
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import Event
from mnemonic.llm.completion.base import NoCompleter
from mnemonic.runtime.agent_runs import CycleAgent, Schedule, ScheduledAgent
from mnemonic.runtime.clock import FakeClock
from mnemonic.store.abstractions import SQLiteAbstractions
from mnemonic.store.agent_runs import SQLiteRunLog
from mnemonic.store.base import EmbeddedOutcome, QueryRecord
from mnemonic.store.consolidation import SQLiteConsolidation
from mnemonic.store.database import Database
from mnemonic.store.dreaming import SQLiteDreaming
from mnemonic.store.episodes import SQLiteEpisodes
from mnemonic.store.meta import SQLiteMeta
from mnemonic.store.models import Encoded, MemoryType, NewRaw, Quality, Source
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.store.vector_rows import VectorModels
from mnemonic.timeutil import to_db, utcnow

DIM = 16
MODEL = "fake-16"
CYCLES = 1000
INITIAL = 96  # memories at the start; the walk adds ~200 more (with gists, insights)

# themes: recurring concepts (what abstraction and dreaming look for)
THEMES: dict[str, list[str]] = {
    "docker": ["docker compose", "volume mount", "registry image", "container network"],
    "pytest": ["pytest fixture", "conftest scope", "fixture teardown", "parametrized test"],
    "redis": ["redis cache", "session store", "cache eviction", "latency spike"],
    "deploy": ["staging deploy", "release tag", "rollback plan", "deploy pipeline"],
    "postgres": ["postgres index", "slow query", "vacuum job", "connection pool"],
    "frontend": ["react hook", "bundle size", "css grid", "render loop"],
}
PROJECTS = ("alpha", "beta")
TWIN_WORDS = ("Again:", "Once more:", "Still:", "Recurring:")

DREAMING = DreamingConfig(
    max_related_per_memory=3,
    max_links_per_cycle=12,
    min_episodes=2,
    max_insights_per_cycle=2,
    max_df_share=0.3,
    replay_batch=40,
)
ABSTRACTION = AbstractionConfig(
    max_patterns=5,
    max_principles=2,
    max_axioms=1,
    max_new_per_cycle=3,
    min_evidence=4,
    max_nodes=150,
)
CONSOLIDATION = ConsolidationConfig(pace=0.0, decay_min_interval_s=1800.0)
EPISODES = EpisodesConfig(gap_s=1800.0, max_span_s=6 * 3600.0)
META = MetacognitionConfig(
    min_memories=10,
    suppress_after=2,
    feedback_min_ratings=2,
    self_test_patterns=0,
    self_test_memories=0,
)


class WallClock:
    """The agents' ``utcnow``: moves only when the walk moves it."""

    def __init__(self) -> None:
        self.now = utcnow()  # rows stamped by the store itself (created_at) are not ahead

    def __call__(self) -> datetime:
        return self.now


@dataclass
class World:
    """The store, the agents and what the walk knows must hold."""

    path: Path
    db: Database
    store: SQLiteStore
    clock: WallClock
    rng: random.Random
    agents: dict[str, ScheduledAgent] = field(default_factory=dict)
    content: dict[str, str] = field(default_factory=dict)  # memory id -> content_hash
    access: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    theme_of: dict[str, str] = field(default_factory=dict)
    texts: dict[str, tuple[str, str, MemoryType]] = field(default_factory=dict)
    vectors: dict[str, np.ndarray[Any, np.dtype[np.float32]]] = field(default_factory=dict)
    bases: dict[str, np.ndarray[Any, np.dtype[np.float32]]] = field(default_factory=dict)
    written: int = 0
    queries: int = 0
    requests: list[str] = field(default_factory=list)
    ran: Counter[str] = field(default_factory=Counter)
    used: set[str] = field(default_factory=set)  # every text written (no duplicates)


def _build_agents(world: World) -> None:
    db, clock = world.db, world.clock
    events: list[Event] = []

    def publish(event: Event) -> None:
        if len(events) > 1000:
            events.clear()
        events.append(event)

    cycle_agents: list[CycleAgent] = [
        EpisodingAgent(SQLiteEpisodes(db), publish, clock, EPISODES, NoCompleter()),
        ConsolidationAgent(SQLiteConsolidation(db), publish, clock, CONSOLIDATION),
        DreamingAgent(SQLiteDreaming(db), publish, clock, DREAMING, redact=lambda text: text),
        AbstractionAgent(SQLiteAbstractions(db), publish, clock, ABSTRACTION),
        MetacognitionAgent(
            SQLiteMeta(db),
            publish,
            clock,
            META,
            database_bytes=lambda: os.path.getsize(world.path),
            request_agent=lambda name, trigger: world.requests.append(name),
        ),
    ]
    runs = SQLiteRunLog(db)
    for agent in cycle_agents:
        world.agents[agent.name] = ScheduledAgent(agent, Schedule(), runs, FakeClock(), clock)


def _vector(world: World, theme: str | None) -> np.ndarray[Any, np.dtype[np.float32]]:
    noise = world.rng.gauss
    if theme is None:
        base = np.zeros(DIM, dtype=np.float32)
        scale = 1.0
    else:
        base = world.bases[theme]
        scale = 0.35
    v = base + np.array([noise(0, scale) for _ in range(DIM)], dtype=np.float32)
    return v.astype(np.float32)


async def _embed_pending(world: World) -> None:
    """The encoder's part: every memory still without a vector gets one (the gists and
    insights the agents write too), through the production ``complete``."""
    ids = await world.store.pending_ids(1000)
    if not ids:
        return
    pending = await world.store.pending_for(ids)
    outcomes = []
    for p in pending:
        vec = world.vectors.get(p.id)
        if vec is None:
            vec = _vector(world, world.theme_of.get(p.id))
        outcomes.append(EmbeddedOutcome(p, vec))
    await world.store.complete(outcomes, VectorModels(MODEL, MODEL), 0.05)


async def _write(world: World, n: int) -> None:
    """``n`` new memories on themes; some are near-copies of an earlier one (merge bait)."""
    rng = world.rng
    batch: list[tuple[NewRaw, Encoded, str]] = []
    themes: list[str] = []
    copies: list[np.ndarray[Any, np.dtype[np.float32]] | None] = []
    known = list(world.theme_of)
    for _ in range(n):
        world.written += 1
        k = world.written
        text = ""
        if known and rng.random() < 0.12:
            # a restatement (a superset of the words, no new number): merge bait; never an
            # exact duplicate, which the store would count as an access (reinforcement)
            source = rng.choice(known)
            theme = world.theme_of[source]
            first, project, kind = world.texts[source]
            concepts = [c for c in THEMES[theme] if c in first]
            fresh = [f"{w} {first}" for w in TWIN_WORDS if f"{w} {first}" not in world.used]
            text = fresh[0] if fresh else ""
        if text:
            copies.append(world.vectors[source] + np.float32(0.01))
        else:
            theme = rng.choice(list(THEMES))
            concepts = rng.sample(THEMES[theme], rng.choice((2, 3)))
            text = (
                f"Note {k}: the {' and the '.join(concepts)} needed work"
                f" {rng.choice(('today', 'again', 'after the upgrade', 'on the laptop'))}."
            )
            copies.append(None)
            kind = rng.choice((MemoryType.GENERAL, MemoryType.LEARNING, MemoryType.ERROR))
            project = rng.choice(PROJECTS)
        when = world.clock.now - timedelta(minutes=rng.randint(0, 90))
        raw = NewRaw(text, Source.API, project, when)
        encoded = Encoded(
            text[:80], (*concepts, f"item{k}"), kind, rng.uniform(0.2, 0.9), rng.uniform(0.3, 1.0)
        )
        batch.append((raw, encoded, content_hash(text)))
        world.used.add(text)
        themes.append(theme)
    accepted = await world.store.accept(batch, 0.05)
    for a, theme, copy, item in zip(accepted, themes, copies, batch, strict=True):
        world.theme_of[a.memory_id] = theme
        world.texts[a.memory_id] = (item[0].content, item[0].project, item[1].type)
        world.vectors[a.memory_id] = copy if copy is not None else _vector(world, theme)
    await _embed_pending(world)
    await _observe_new(world)


async def _observe_new(world: World) -> None:
    """Memories the walk has not seen yet (its own, or written by an agent) join the
    record: their content hash, and their access state (a new memory starts unread)."""
    rows = _rows(world.path, "SELECT id, content_hash, access_count, last_accessed_at,"
                 " content FROM memories")  # fmt: skip
    for mid, digest, count, last, content in rows:
        if mid not in world.content:
            assert digest == content_hash(content)
            world.content[mid] = digest
            world.access[mid] = (count, last)


async def _recall(world: World) -> None:
    """A recall as the service records it (production ``record_query``: the access count
    moves), sometimes rated (production ``record_feedback``: utility moves); the log rows
    are stamped with the walk's time, so the agents' windows see them."""
    rng = world.rng
    live = _rows(world.path, "SELECT id, seq FROM memories WHERE state IN ('active', 'fading')")
    if len(live) < 5:
        return
    theme = rng.choice(list(THEMES))
    on_theme = [(i, s) for i, s in live if world.theme_of.get(i) == theme]
    picked = rng.sample(on_theme, min(len(on_theme), rng.randint(2, 6)))
    picked += rng.sample(live, rng.randint(0, 2))
    picked = list(dict.fromkeys(picked))
    world.queries += 1
    qid = f"q{world.queries}"
    ids = tuple(i for i, _ in picked)
    await world.store.record_query(
        QueryRecord(qid, f"{theme} trouble", ids, ()), {}, 3.0, [s for _, s in picked]
    )
    quality = rng.choice((None, Quality.HELPFUL, Quality.IRRELEVANT, Quality.IRRELEVANT))
    if quality is not None:
        rated = list(ids[: rng.randint(1, len(ids))])
        delta = 0.1 if quality is Quality.HELPFUL else -0.1
        await world.store.record_feedback(qid, quality, rated, delta, (0.5, 1.5))
    stamp = to_db(world.clock.now)

    def restamp(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE retrieval_queries SET created_at = ? WHERE id = ?", (stamp, qid))
        conn.execute(
            "UPDATE retrieval_feedback SET created_at = ? WHERE query_id = ?", (stamp, qid)
        )

    await world.db.run_write(restamp)
    for mid, count, last in _rows(
        world.path,
        f"SELECT id, access_count, last_accessed_at FROM memories"
        f" WHERE id IN ({','.join('?' * len(ids))})",
        *ids,
    ):
        world.access[mid] = (count, last)


def _rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


LIVE_RELATED = (
    "SELECT a.source_seq, a.target_seq FROM associations a JOIN memories s"
    " ON s.seq = a.source_seq JOIN memories t ON t.seq = a.target_seq WHERE a.relation ="
    " 'related' AND s.state IN ('active', 'fading') AND t.state IN ('active', 'fading')"
)


def _related(path: Path, live: bool = False) -> tuple[int, Counter[int]]:
    sql = "SELECT source_seq, target_seq FROM associations WHERE relation = 'related'"
    rows = _rows(path, LIVE_RELATED if live else sql)
    per: Counter[int] = Counter()
    for a, b in rows:
        per[a] += 1
        per[b] += 1
    return len(rows), per


def _check(world: World, name: str, where: str, related_before: int) -> None:
    p = world.path
    bad = _rows(p, "SELECT count(*) FROM associations WHERE NOT (strength BETWEEN 0 AND 1)"
                " OR strength IS NULL")[0][0]  # fmt: skip
    assert bad == 0, f"{where}: association strength out of [0, 1]"
    bad = _rows(p, "SELECT id, strength, confidence, grounding FROM abstractions WHERE NOT"
                " (strength BETWEEN 0 AND 1 AND confidence BETWEEN 0 AND 1 AND grounding"
                " BETWEEN 0 AND 1)")  # fmt: skip
    assert bad == [], f"{where}: abstraction out of range {bad[:3]}"
    bad = _rows(p, "SELECT id, salience, significance, utility FROM memories WHERE NOT"
                " (salience BETWEEN 0 AND 1 AND significance BETWEEN 0 AND 1 AND utility > 0)"
                " OR salience IS NULL OR utility IS NULL")  # fmt: skip
    assert bad == [], f"{where}: memory out of range {bad[:3]}"

    active = dict(_rows(p, "SELECT level, count(*) FROM abstractions WHERE state = 'active'"
                        " GROUP BY level"))  # fmt: skip
    assert active.get("pattern", 0) <= ABSTRACTION.max_patterns, f"{where}: {active}"
    assert active.get("principle", 0) <= ABSTRACTION.max_principles, f"{where}: {active}"
    assert active.get("axiom", 0) <= ABSTRACTION.max_axioms, f"{where}: {active}"

    total, _ = _related(p)
    _, per = _related(p, live=True)  # a merged source's links no longer count
    cap = DREAMING.max_related_per_memory
    over = {s: n for s, n in per.items() if n > cap}  # gists too (_cap_related)
    assert not over, f"{where}: related links per memory over the cap: {over}"
    if name == "dreaming":
        assert total - related_before <= DREAMING.max_links_per_cycle, where

    rows = _rows(p, "SELECT id, content_hash, content, access_count, last_accessed_at"
                 " FROM memories")  # fmt: skip
    now = {mid: (digest, text, count, last) for mid, digest, text, count, last in rows}
    missing = set(world.content) - set(now)
    assert not missing, f"{where}: memories deleted: {sorted(missing)[:5]}"
    for mid, digest in world.content.items():
        got_digest, text, count, last = now[mid]
        assert got_digest == digest and content_hash(text) == digest, (
            f"{where}: memory {mid} content changed"
        )
        assert (count, last) == world.access[mid], (
            f"{where}: {name} changed the access of {mid}: {world.access[mid]} -> {(count, last)}"
        )


async def _walk(path: Path, seed: int, cycles: int) -> World:
    db = Database(path, StorageConfig())
    await db.open()
    try:
        rng = random.Random(seed)
        world = World(path, db, SQLiteStore(db), WallClock(), rng)
        world.bases = {
            t: np.array([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32) for t in THEMES
        }
        _build_agents(world)
        for _ in range(INITIAL // 8):
            await _write(world, 8)
            world.clock.now += timedelta(minutes=rng.randint(5, 240))
        names = sorted(world.agents)
        done = step = 0
        while done < cycles:
            step += 1
            roll = rng.random()
            if roll < 0.05:
                await _write(world, rng.randint(1, 3))
            elif roll < 0.30:
                await _recall(world)
            elif roll < 0.45:
                world.clock.now += timedelta(
                    minutes=rng.choice((5, 20, 45)) if rng.random() < 0.5 else 0,
                    hours=rng.choice((0, 1, 3, 8)),
                    days=rng.choice((0, 0, 0, 0, 0, 1, 2)),
                )
            else:
                name = rng.choice(names)
                related_before, _ = _related(path)
                world.clock.now += timedelta(minutes=rng.randint(1, 30))
                record = await world.agents[name].run_now("schedule")
                done += 1
                world.ran[name] += 1
                where = f"seed {seed}, step {step}, cycle {done} ({name})"
                assert record.ok, f"{where}: the cycle failed: {record.error}"
                await _observe_new(world)
                _check(world, name, where, related_before)
        return world
    finally:
        await db.close()


@pytest.mark.parametrize("seed", [7])
def test_a_thousand_cycles_stay_bounded_and_never_lose_a_memory(tmp_path: Path, seed: int) -> None:
    world = asyncio.run(_walk(tmp_path / "m.db", seed, CYCLES))
    path = world.path
    # the walk exercised what it claims to: every agent ran and did real work
    assert min(world.ran.values()) >= CYCLES // 8, world.ran
    states = dict(_rows(path, "SELECT state, count(*) FROM memories GROUP BY state"))
    assert 200 <= sum(states.values()) <= 500, states
    assert states.get("fading", 0) + states.get("archived", 0) > 0, states  # decay acted
    assert states.get("merged", 0) > 0, states  # consolidation merged twins
    levels = dict(_rows(path, "SELECT level, count(*) FROM abstractions GROUP BY level"))
    assert levels.get("pattern", 0) > ABSTRACTION.max_patterns, levels  # the cap was hit
    assert _rows(path, "SELECT count(*) FROM associations WHERE relation = 'related'")[0][0] > 0
    assert _rows(path, "SELECT count(*) FROM episodes WHERE state = 'closed'")[0][0] > 0
    assert _rows(path, "SELECT count(*) FROM meta_observations")[0][0] > 0
    runs = _rows(path, "SELECT agent, count(*), sum(ok) FROM agent_runs GROUP BY agent")
    assert all(n == ok for _, n, ok in runs), runs
    dreams = [json.loads(s) for (s,) in _rows(
        path, "SELECT summary FROM agent_runs WHERE agent = 'dreaming'")]  # fmt: skip
    assert sum(d.get("replayed", 0) for d in dreams) > 0


async def _gist_scenario(path: Path) -> tuple[int, int]:
    """Two restatements A and B, each with ``cap`` related links to other memories (each
    side within the cap); consolidation merges A and B into a gist. Returns (the gist's
    live related links, the cap)."""
    db = Database(path, StorageConfig())
    await db.open()
    try:
        store = SQLiteStore(db)
        cap = DREAMING.max_related_per_memory
        base = "Always run make test before pushing to main."
        texts = [base, f"Again: {base}"] + [
            f"Unrelated note {k} about topic{k}." for k in range(2 * cap)
        ]
        when = utcnow() - timedelta(days=1)
        items = [
            (
                NewRaw(t, Source.API, "alpha", when),
                Encoded(t[:40], (), MemoryType.GENERAL, 0.5, 0.6),
                content_hash(t),
            )
            for t in texts
        ]
        accepted = await store.accept(items, 0.05)
        seqs = [a.seq for a in accepted]
        rng = np.random.default_rng(1)
        twin = rng.normal(size=DIM).astype(np.float32)
        pending = await store.pending_for([a.memory_id for a in accepted])
        vectors = [twin if "make test" in p.content else rng.normal(size=DIM) for p in pending]
        outcomes = [
            EmbeddedOutcome(p, v.astype(np.float32)) for p, v in zip(pending, vectors, strict=True)
        ]
        await store.complete(outcomes, VectorModels(MODEL, MODEL), 0.05)
        a, b, others = seqs[0], seqs[1], seqs[2:]
        stamp = to_db(utcnow())
        links = [(a, o) for o in others[:cap]] + [(b, o) for o in others[cap:]]

        def link(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO associations (source_seq, target_seq, relation, strength,"
                " created_at, updated_at) VALUES (?, ?, 'related', 0.5, ?, ?)",
                [(min(x, y), max(x, y), stamp, stamp) for x, y in links],
            )

        await db.run_write(link)
        agent = ConsolidationAgent(SQLiteConsolidation(db), lambda _e: None, utcnow, CONSOLIDATION)
        summary = await agent.run_cycle("manual")
        assert summary["merged"] == 1
        _, per = _related(path, live=True)
        (gist,) = {g for (g,) in _rows(path, "SELECT gist_seq FROM memory_merges")}
        return per[gist], cap
    finally:
        await db.close()


def test_a_gist_keeps_related_links_under_the_dreamers_cap(tmp_path: Path) -> None:
    held, cap = asyncio.run(_gist_scenario(tmp_path / "m.db"))
    assert held <= cap, f"the gist holds {held} related links, the cap is {cap}"
