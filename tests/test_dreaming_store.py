"""The dreaming agent over a real SQLite store built by the production migrations, with
memories written through the real ``SQLiteStore`` and episodes and recall logs seeded as
rows; a fake clock drives the cycles. No embedder is needed: the dreamer reads concepts,
episodes, links and recall logs, never vectors."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from support.store import Clock, with_database

from mnemonic.agents.dreaming import DreamingAgent
from mnemonic.config import DreamingConfig
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import DreamCompleted, Event, RawMemoryCreated
from mnemonic.store.database import Database
from mnemonic.store.dreaming import CURSOR_META, SQLiteDreaming
from mnemonic.store.models import Encoded, MemoryType, NewRaw, Source
from mnemonic.store.purge import SQLitePurger
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import to_db

# (episode, text, concepts); the three 'quartz' notes sit in three episodes
Q = ["frobnicator cache", "quartz-7 volume"]
H = ["helm chart", "staging cluster"]
NOTES: list[tuple[str | None, str, list[str]]] = [
    ("e1", "The frobnicator cache lives on the quartz-7 volume.", Q),
    ("e2", "Moved the frobnicator cache off the quartz-7 volume.", Q),
    ("e3", "The quartz-7 volume filled up: frobnicator cache again.", Q[::-1]),
    ("e4", "Pinned the helm chart to 3.2 for the staging cluster.", H),
    ("e4", "The staging cluster rejects the helm chart without it.", H),
]
FILLER = 25  # memories with one unique concept each, so that N makes the terms above rare


CFG: dict[str, Any] = {"max_df_share": 0.2, "min_episodes": 3}


async def _seed(db: Database, when: datetime) -> list[str]:
    """The notes and the filler, their episodes; returns the memory ids (in seq order)."""
    items = [(e, t, c) for e, t, c in NOTES] + [
        (None, f"Filler note number {i} about topic{i}.", [f"topic{i}"]) for i in range(FILLER)
    ]
    batch = [
        (
            NewRaw(text, Source.API, "alpha", when + timedelta(minutes=i)),
            Encoded(text[:60], tuple(concepts), MemoryType.GENERAL, 0.5, 0.6),
            content_hash(text),
        )
        for i, (_, text, concepts) in enumerate(items)
    ]
    accepted = await SQLiteStore(db).accept(batch, 0.05)

    def work(conn: sqlite3.Connection) -> None:
        stamp = to_db(when)
        for n, name in enumerate(("e1", "e2", "e3", "e4")):
            start = to_db(when + timedelta(days=n))
            conn.execute(
                "INSERT INTO episodes (id, project, state, title, started_at, ended_at,"
                " created_at, updated_at) VALUES (?, 'alpha', 'closed', ?, ?, ?, ?, ?)",
                (name, f"Episode {name}", start, start, stamp, stamp),
            )
        for a, (episode, _, _) in zip(accepted, items, strict=True):
            if episode is not None:
                conn.execute(
                    "INSERT INTO episode_memories (episode_id, memory_seq) VALUES (?, ?)",
                    (episode, a.seq),
                )

    await db.run_write(work)
    return [a.memory_id for a in accepted]


def _agent(db: Database, clock: Clock, events: list[Event], **cfg: Any) -> DreamingAgent:
    return DreamingAgent(
        SQLiteDreaming(db), events.append, clock, DreamingConfig(**{**CFG, **cfg}),
        redact=lambda text: text.replace("SECRET", "[redacted]"),
    )  # fmt: skip


def _rows(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


_MEMORY_COLS = "seq, id, content, summary, concepts, state, access_count, last_accessed_at"


def test_a_cycle_links_across_episodes_writes_one_insight_and_touches_no_memory(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    clock = Clock()
    events: list[Event] = []

    async def scenario(db: Database) -> dict[str, Any]:
        ids = await _seed(db, clock.now - timedelta(days=10))
        before = _rows(path, f"SELECT {_MEMORY_COLS} FROM memories ORDER BY seq")
        agent = _agent(db, clock, events)
        first = await agent.run_cycle("manual")
        links1 = _rows(path, "SELECT * FROM associations ORDER BY 1, 2, 3")
        clock.now += timedelta(hours=7)
        second = await agent.run_cycle("schedule")
        links2 = _rows(path, "SELECT * FROM associations ORDER BY 1, 2, 3")
        return {"ids": ids, "before": before, "first": first, "second": second,
                "links1": links1, "links2": links2, "health": agent.health()}  # fmt: skip

    out = with_database(path, scenario)
    first, second = out["first"], out["second"]
    assert first["replayed"] == len(NOTES) + FILLER
    # quartz notes pairwise (3 pairs); the helm notes share one episode: no link
    assert first["links_added"] == 3 and first["insights"] == 1
    seq = {mid: s for s, mid in _rows(path, "SELECT seq, id FROM memories")}
    quartz = sorted(seq[i] for i in out["ids"][:3])
    related = [(a, b, s) for a, b, rel, s, *_ in out["links1"] if rel == "related"]
    assert [(a, b) for a, b, _ in related] == [
        (quartz[0], quartz[1]), (quartz[0], quartz[2]), (quartz[1], quartz[2])
    ]  # fmt: skip
    assert all(0 < s <= 0.8 for _, _, s in related)
    # the second cycle finds the same links and the same insight: nothing new
    assert second["links_added"] == 0 and second["insights"] == 0
    assert out["links2"] == out["links1"]

    # replay is not access; no memory was deleted or changed
    after = _rows(path, f"SELECT {_MEMORY_COLS} FROM memories ORDER BY seq")
    assert after[: len(out["before"])] == out["before"]
    new = _rows(path, "SELECT id, type, source, project, content, metadata FROM memories"
                      f" WHERE seq > {out['before'][-1][0]}")  # fmt: skip
    assert len(new) == 1
    insight_id, kind, source, project, content, meta = new[0]
    assert (kind, source, project) == ("insight", "dreaming", "alpha")
    assert content.startswith('"frobnicator cache" and "quartz-7 volume" came up together in 3')
    assert "Episode e1" in content
    assert json.loads(meta)["dreaming"]["key"] == "cooccurrence:frobnicator cache|quartz-7 volume"
    sources = _rows(path, "SELECT source_seq FROM insight_sources ORDER BY 1")
    assert sorted(s for (s,) in sources) == quartz
    embedded, fts = _rows(path, "SELECT m.embedded, (SELECT count(*) FROM memories_fts f"
                                " WHERE f.rowid = m.seq) FROM memories m WHERE id = ?",
                          (insight_id,))[0]  # fmt: skip
    assert (embedded, fts) == (0, 1)  # the encoder's sweep embeds it

    done = [e for e in events if isinstance(e, DreamCompleted)]
    assert [(e.trigger, e.links_added, e.insights) for e in done] == [
        ("manual", 3, 1), ("schedule", 0, 0)
    ]  # fmt: skip
    created = [e for e in events if isinstance(e, RawMemoryCreated)]
    assert [(e.memory_id, e.source) for e in created] == [(insight_id, "dreaming")]
    health = out["health"]
    assert health["mode"] == "heuristic" and health["cycles"] == 2
    assert health["totals"]["insights"] == 1


def _coactivation_links(
    q: list[int], f: list[int], seq: dict[str, int], now: datetime, conn: sqlite3.Connection
) -> None:
    """Links among the quartz notes ``q`` and the fillers ``f``, and three logged recalls
    (one rated helpful) that returned f6, f7, f3 and f4 together."""
    stamp = to_db(now)
    rows = [
        (q[0], q[1], "similar", 0.8),  # q0's neighbourhood: q1 and q2
        (q[0], q[2], "similar", 0.8),
        (q[1], q[2], "similar", 0.4),  # -> strengthened (co-activated, shared terms)
        (f[0], f[1], "similar", 0.8),  # f0's neighbourhood: f1 and f2
        (f[0], f[2], "similar", 0.8),
        (f[1], f[2], "similar", 0.4),  # co-activated, but f1 and f2 share no term
        (f[3], f[4], "similar", 0.5),  # recalled together -> strengthened
        (f[3], f[5], "supersedes", 0.5),  # never strengthened
    ]
    conn.executemany(
        "INSERT INTO associations (source_seq, target_seq, relation, strength,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        [(a, b, r, s, stamp, stamp) for a, b, r, s in rows],
    )
    by = {s: i for i, s in seq.items()}
    for n in range(3):  # f6 and f7 unlinked, recalled together three times
        conn.execute(
            "INSERT INTO retrieval_queries (id, query, result_ids, took_ms, created_at)"
            " VALUES (?, 'q', ?, 1, ?)",
            (f"q{n}", json.dumps([by[f[6]], by[f[7]], by[f[3]], by[f[4]]]), stamp),
        )
    conn.execute(
        "INSERT INTO retrieval_feedback (query_id, quality, memory_ids, created_at)"
        " VALUES ('q0', 'helpful', ?, ?)",
        (json.dumps([by[f[3]], by[f[4]]]), stamp),
    )


def test_coactivation_strengthens_links_and_links_what_is_recalled_together(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    clock = Clock()
    events: list[Event] = []

    async def scenario(db: Database) -> dict[str, Any]:
        ids = await _seed(db, clock.now - timedelta(days=10))
        seq = dict(_rows(path, "SELECT id, seq FROM memories"))
        f = [seq[i] for i in ids[len(NOTES):]]  # filler seqs  # fmt: skip
        q = [seq[i] for i in ids[:3]]  # the quartz notes: they share rare concepts

        await db.run_write(partial(_coactivation_links, q, f, seq, clock.now))
        before = _rows(path, "SELECT seq, access_count, last_accessed_at FROM memories")
        agent = _agent(db, clock, events, max_insights_per_cycle=0)
        summary = await agent.run_cycle("manual")
        after = _rows(path, "SELECT seq, access_count, last_accessed_at FROM memories")
        return {"f": f, "q": q, "summary": summary, "before": before, "after": after}

    out = with_database(path, scenario)
    f, q = out["f"], out["q"]
    assert out["after"] == out["before"]  # replay and reading recalls count as no access
    strength = {(a, b, r): s for a, b, r, s in _rows(
        path, "SELECT source_seq, target_seq, relation, strength FROM associations")}  # fmt: skip
    assert strength[(q[1], q[2], "similar")] == pytest.approx(0.4 + 0.05 * (0.9 - 0.4))
    # replay alone is no evidence: a triangle whose ends share nothing stays as it was
    assert strength[(f[1], f[2], "similar")] == 0.4
    assert out["summary"]["replay_pairs_unshared"] >= 1
    # three recalls plus a helpful rating (2 steps): five steps toward the ceiling
    assert strength[(f[3], f[4], "similar")] == pytest.approx(0.9 - 0.4 * 0.95**5)
    assert strength[(f[3], f[5], "supersedes")] == 0.5
    assert strength[(f[0], f[1], "similar")] == 0.8  # not a co-activated pair
    assert strength[(f[6], f[7], "related")] == 0.3  # recalled together three times
    assert (f[3], f[6], "related") in strength  # also three times in the top five
    assert out["summary"]["links_strengthened"] == 2
    assert out["summary"]["coretrieval_links"] >= 1
    assert out["summary"]["queries_read"] == 3


def test_replay_strengthens_a_neighbourhood_once_and_recalls_go_on_counting(
    tmp_path: Path,
) -> None:
    """Each pass of the replay cursor found the same shared terms again, so a daemon
    dreaming four times a day raised the same pairs every pass (BENCHMARKS.md, session
    18). The second cycle here replays the same memories (the store is smaller than the
    window, so the cursor wraps) and must leave their neighbourhoods alone, while a new
    recall is new evidence and still counts."""
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> dict[str, Any]:
        ids = await _seed(db, clock.now - timedelta(days=10))
        seq = dict(_rows(path, "SELECT id, seq FROM memories"))
        f = [seq[i] for i in ids[len(NOTES):]]  # fmt: skip
        q = [seq[i] for i in ids[:3]]
        await db.run_write(partial(_coactivation_links, q, f, seq, clock.now))
        agent = _agent(db, clock, [], max_insights_per_cycle=0)
        first = await agent.run_cycle("manual")
        by = {s: i for i, s in seq.items()}

        def recall_again(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO retrieval_queries (id, query, result_ids, took_ms, created_at)"
                " VALUES ('q9', 'q', ?, 1, ?)",
                (json.dumps([by[f[3]], by[f[4]]]), to_db(clock.now)),
            )

        await db.run_write(recall_again)
        clock.now += timedelta(hours=6)
        second = await agent.run_cycle("manual")
        return {"q": q, "f": f, "first": first, "second": second}

    out = with_database(path, scenario)
    q, f, first, second = out["q"], out["f"], out["first"], out["second"]
    strength = {(a, b, r): s for a, b, r, s in _rows(
        path, "SELECT source_seq, target_seq, relation, strength FROM associations")}  # fmt: skip
    assert first["links_strengthened"] == 2 and first["replay_strengthened_before"] == 0
    assert second["replayed"] == first["replayed"] > 0
    assert second["replay_strengthened_before"] == second["replayed"]
    # only the new recall's pair moved: one more step toward the ceiling
    assert second["links_strengthened"] == 1
    assert strength[(q[1], q[2], "similar")] == pytest.approx(0.4 + 0.05 * (0.9 - 0.4))
    # f3-f4: five steps in the first cycle, one for the new recall in the second
    assert strength[(f[3], f[4], "similar")] == pytest.approx(0.9 - 0.4 * 0.95**6)
    with sqlite3.connect(path) as conn:
        (through,) = conn.execute(
            "SELECT value FROM system_meta WHERE key = 'dreaming.strengthened_through'"
        ).fetchone()
    assert int(through) == max(s for (s,) in _rows(path, "SELECT seq FROM memories"))


def test_cooldown_skips_all_but_manual_runs_and_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = Clock()
    events: list[Event] = []

    async def scenario(db: Database) -> list[dict[str, Any]]:
        await _seed(db, clock.now)
        agent = _agent(db, clock, events)
        runs = [await agent.run_cycle("schedule")]
        clock.now += timedelta(seconds=60)
        runs.append(await agent.run_cycle("reactor"))
        runs.append(await agent.run_cycle("manual"))
        restarted = _agent(db, clock, events)  # a new process: the start time is stored
        clock.now += timedelta(seconds=60)
        runs.append(await restarted.run_cycle("reactor"))
        clock.now += timedelta(seconds=601)
        runs.append(await restarted.run_cycle("reactor"))
        return runs

    runs = with_database(path, scenario)
    assert [r.get("skipped") for r in runs] == [None, "cooldown", None, "cooldown", None]
    assert [e.trigger for e in events if isinstance(e, DreamCompleted)] == [
        "schedule", "manual", "reactor"
    ]  # fmt: skip


def test_the_replay_cursor_rotates_and_wraps_around(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> list[tuple[int, str | None]]:
        await _seed(db, clock.now)
        agent = _agent(db, clock, [], replay_batch=4, replay_window=3, max_insights_per_cycle=0)
        seen: list[tuple[int, str | None]] = []
        for _ in range(4):
            summary = await agent.run_cycle("manual")
            seen.append((summary["replayed"], await SQLiteDreaming(db).get_meta(CURSOR_META)))
        return seen

    seen = with_database(path, scenario)
    total = len(NOTES) + FILLER  # 30: windows of 12, 12, then 6 (wraps), then 12 again
    assert [n for n, _ in seen] == [4, 4, 4, 4]
    cursors = [int(c or 0) for _, c in seen]
    assert cursors[0] == 12 and cursors[1] == 24 and cursors[2] == 0 and cursors[3] == 12
    assert total == 30


def test_a_failure_mid_cycle_leaves_no_half_written_insight(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = Clock()
    events: list[Event] = []

    async def scenario(db: Database) -> None:
        await _seed(db, clock.now)

        def break_provenance(conn: sqlite3.Connection) -> None:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON insight_sources"
                " BEGIN SELECT RAISE(ABORT, 'provenance refused'); END"
            )

        await db.run_write(break_provenance)
        agent = _agent(db, clock, events)
        with pytest.raises(sqlite3.IntegrityError, match="provenance refused"):
            await agent.run_cycle("manual")

    with_database(path, scenario)
    assert _rows(path, "SELECT count(*) FROM memories WHERE source = 'dreaming'") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM raw_memories WHERE source = 'dreaming'") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM insight_sources") == [(0,)]
    # the steps before it are whole: the three cross-episode links were written
    assert _rows(path, "SELECT count(*) FROM associations WHERE relation = 'related'") == [(3,)]
    assert not [e for e in events if isinstance(e, DreamCompleted)]


def test_purging_a_source_purges_its_insight_and_purging_an_insight_keeps_sources(
    tmp_path: Path,
) -> None:
    """An insight's text names terms and episode titles taken from its sources, so a purge
    of a source takes the insight with it; purging the insight leaves its sources."""
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> tuple[str, list[str]]:
        ids = await _seed(db, clock.now)
        await _agent(db, clock, []).run_cycle("manual")
        (insight,) = _rows(path, "SELECT id FROM memories WHERE source = 'dreaming'")
        purged = await SQLitePurger(db).purge("id", [ids[0]])
        assert purged.counts.memories == 2  # the source and the insight drawn from it
        return str(insight[0]), ids

    insight, ids = with_database(path, scenario)
    assert _rows(path, "SELECT count(*) FROM insight_sources") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM memories WHERE id = ?", (insight,)) == [(0,)]
    assert _rows(path, "SELECT count(*) FROM memories WHERE id = ?", (ids[1],)) == [(1,)]


def test_purging_an_insight_keeps_its_sources(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> list[str]:
        ids = await _seed(db, clock.now)
        await _agent(db, clock, []).run_cycle("manual")
        (insight,) = _rows(path, "SELECT id FROM memories WHERE source = 'dreaming'")
        purged = await SQLitePurger(db).purge("id", [str(insight[0])])
        assert purged.counts.memories == 1
        return ids

    ids = with_database(path, scenario)
    assert _rows(path, "SELECT count(*) FROM insight_sources") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM memories WHERE source = 'dreaming'") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM memories WHERE id IN (?, ?)", tuple(ids[:2])) == [(2,)]


def test_insight_text_goes_through_redaction_and_listing_reads_it_back(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> tuple[Any, Any, Any]:
        await _seed(db, clock.now)

        def rename(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE episodes SET title = 'SECRET rollout' WHERE id = 'e1'")

        await db.run_write(rename)
        await _agent(db, clock, []).run_cycle("manual")
        store = SQLiteDreaming(db)
        listed = await store.list_insights(limit=5)
        other = await store.list_insights(project="beta")
        detail = await store.get_insight(listed[0].id)
        return listed, other, detail

    listed, other, detail = with_database(path, scenario)
    assert len(listed) == 1 and other == []
    assert "SECRET" not in listed[0].content and "[redacted] rollout" in listed[0].content
    row, sources = detail
    assert row.source_count == 3 and len(sources) == 3
    assert all(s.project == "alpha" for s in sources)
