"""Consolidation over a real SQLite store (production migrations) with memories written
through the real ``SQLiteStore`` and embedded by the real model; a fake clock drives the
cycles."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.store import Clock, with_database, write_embedded

from mnemonic.agents.consolidation import ConsolidationAgent
from mnemonic.config import ConsolidationConfig
from mnemonic.events.types import ConsolidationCompleted, Event, MemoryStateChanged
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.store.consolidation import NotAGist, SQLiteConsolidation
from mnemonic.store.database import Database
from mnemonic.store.purge import SQLitePurger
from mnemonic.timeutil import to_db

TWINS = [
    ("alpha", "Run make test before pushing to main."),
    ("alpha", "Always run make test before pushing to main."),
    ("alpha", "The API server listens on port 8080."),
    ("alpha", "The API server listens on port 8080 in production."),
]
LOOKALIKES = [
    ("alpha", "Deploy the web app to staging every Friday."),
    ("alpha", "Deploy the web app to production every Friday."),
]
OTHER = [
    ("beta", "Run make test before pushing to main."),  # same text, other project
    ("alpha", "The nightly backup job copies the database to the S3 bucket."),
    ("alpha", "Decided to keep sessions in Redis because MySQL was too slow."),
]


def _snapshot(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {
            "memories": conn.execute("SELECT * FROM memories ORDER BY seq").fetchall(),
            "associations": conn.execute("SELECT * FROM associations ORDER BY 1, 2, 3").fetchall(),
            "merges": conn.execute("SELECT * FROM memory_merges ORDER BY 1, 2").fetchall(),
        }
    finally:
        conn.close()


def _agent(db: Database, clock: Clock, events: list[Event], **cfg: Any) -> ConsolidationAgent:
    return ConsolidationAgent(
        SQLiteConsolidation(db), events.append, clock, ConsolidationConfig(**cfg)
    )


def test_a_cycle_decays_merges_and_is_idempotent(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    path = tmp_path / "m.db"
    clock = Clock()
    events: list[Event] = []

    async def scenario(db: Database) -> dict[str, Any]:
        ids = await write_embedded(db, embedder, TWINS + LOOKALIKES + OTHER, clock.now)
        agent = _agent(db, clock, events)
        clock.now += timedelta(days=40)
        first = await agent.run_cycle("manual")
        before = _snapshot(path)
        second = await agent.run_cycle("manual")  # same time: nothing to do
        after = _snapshot(path)
        history = await SQLiteConsolidation(db).history(10)
        return {"ids": ids, "first": first, "second": second, "before": before,
                "after": after, "history": history}  # fmt: skip

    out = with_database(path, scenario)
    first, second = out["first"], out["second"]
    assert first["merged"] == 2 and first["merged_sources"] == 4
    assert first["decayed"] >= len(TWINS + LOOKALIKES + OTHER) - 4
    assert out["before"] == out["after"]  # the second cycle changed nothing
    assert second["decayed"] == second["merged"] == second["pruned"] == 0
    assert [h["trigger"] for h in out["history"]] == ["manual", "manual"]
    assert out["history"][1]["counts"]["merged"] == 2

    conn = sqlite3.connect(path)
    rows = {
        r[0]: r[1:]
        for r in conn.execute("SELECT id, state, merged_into, project, content FROM memories")
    }
    ids = out["ids"]
    twins, look, other = ids[:4], ids[4:6], ids[6:]
    gists = {rows[i][1] for i in twins}
    assert len(gists) == 2 and all(rows[i][0] == "merged" for i in twins)
    for gist in gists:
        assert rows[gist][0] in ("active", "fading") and rows[gist][2] == "alpha"
    # every distinct statement is still findable by its own words in the gists
    fts = conn.execute(
        "SELECT m.id FROM memories_fts f JOIN memories m ON m.seq = f.rowid"
        " WHERE memories_fts MATCH 'production AND 8080' AND m.state <> 'merged'"
    ).fetchall()
    assert [r[0] for r in fts] and fts[0][0] in gists
    assert all(rows[i][0] != "merged" for i in look + other)  # look-alikes never merge
    assert conn.execute("SELECT count(*) FROM memory_merges").fetchone()[0] == 4
    pending = conn.execute("SELECT count(*) FROM memories WHERE embedded = 0").fetchone()[0]
    assert pending == 2  # the gists wait for the encoder's vector like any new memory
    conn.close()

    done = [e for e in events if isinstance(e, ConsolidationCompleted)]
    assert len(done) == 2 and done[0].merged == 2 and done[0].trigger == "manual"
    merged_events = [e for e in events if isinstance(e, MemoryStateChanged)]
    assert sum(e.new_state == "merged" for e in merged_events) == 4


def test_merge_then_unmerge_restores_states_and_pointers(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> None:
        await write_embedded(db, embedder, TWINS[:2], clock.now)
        conn = sqlite3.connect(path)
        conn.execute("UPDATE memories SET state = 'fading', salience = 0.25 WHERE seq = 1")
        conn.commit()
        before = conn.execute("SELECT seq, state, merged_into FROM memories").fetchall()
        agent = _agent(db, clock, [], grace_days=1000)  # no decay: states as set
        summary = await agent.run_cycle("manual")
        assert summary["merged"] == 1
        store = SQLiteConsolidation(db)
        gist_id = conn.execute("SELECT merged_into FROM memories WHERE seq = 1").fetchone()[0]
        restored = await store.unmerge(gist_id, clock.now)
        assert len(restored) == 2
        after = conn.execute("SELECT seq, state, merged_into FROM memories WHERE seq <= 2")
        assert after.fetchall() == before
        gist = conn.execute("SELECT state FROM memories WHERE id = ?", (gist_id,)).fetchone()
        assert gist[0] == "archived"  # kept, not deleted
        assert (
            conn.execute(
                "SELECT count(*) FROM memory_merges WHERE unmerged_at IS NOT NULL"
            ).fetchone()[0]
            == 2
        )
        with pytest.raises(NotAGist):
            await store.unmerge(gist_id, clock.now)  # already undone
        with pytest.raises(NotAGist):
            await store.unmerge(restored[0], clock.now)  # not a gist
        conn.close()

    with_database(path, scenario)


def test_no_memory_is_ever_deleted_over_many_cycles(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    """Sixty cycles, 3 days apart, with accesses on the way: rows only gain (gists), only
    state, salience and merge pointers move, and every value stays in range."""
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> None:
        await write_embedded(db, embedder, TWINS + LOOKALIKES + OTHER, clock.now)
        conn = sqlite3.connect(path)
        cols = "id, content, summary, type, project, raw_id, significance, utility, created_at"
        original = {r[0]: r for r in conn.execute(f"SELECT {cols} FROM memories")}
        agent = _agent(db, clock, [], merge_scan_per_cycle=0)
        for cycle in range(60):
            clock.now += timedelta(days=3)
            if cycle % 7 == 0:
                conn.execute(
                    "UPDATE memories SET last_accessed_at = ?, access_count = access_count + 1"
                    " WHERE seq = 1",
                    (clock.now.isoformat(timespec="microseconds"),),
                )
                conn.commit()
            await agent.run_cycle("schedule")
            now = {r[0]: r for r in conn.execute(f"SELECT {cols} FROM memories")}
            assert set(original) <= set(now)
            assert all(now[k] == v for k, v in original.items())
            bad = conn.execute(
                "SELECT count(*) FROM memories WHERE salience < 0 OR salience > 1 OR utility <= 0"
            ).fetchone()[0]
            assert bad == 0
        states = dict(conn.execute("SELECT state, count(*) FROM memories GROUP BY state"))
        assert states.get("archived", 0) > 0  # 180 idle days archive the unused ones
        assert conn.execute("SELECT state FROM memories WHERE seq = 1").fetchone()[0] != (
            "archived"
        )  # recalled every 3 weeks: never idle long enough
        conn.close()

    with_database(path, scenario)


def test_weak_unused_old_links_are_pruned_structural_ones_kept(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> None:
        await write_embedded(db, embedder, OTHER, clock.now)
        conn = sqlite3.connect(path)
        conn.execute("DELETE FROM associations")
        old = (clock.now - timedelta(days=90)).isoformat(timespec="microseconds")
        links = [
            (1, 2, "similar", 0.05, 0),  # weak, unused, old: pruned
            (1, 3, "similar", 0.05, 3),  # used by recalls: kept
            (2, 3, "similar", 0.5, 0),  # strong: kept
            (2, 3, "part_of", 0.05, 0),  # structural: kept
            (3, 1, "supersedes", 0.05, 0),  # structural: kept
        ]
        conn.executemany(
            "INSERT INTO associations (source_seq, target_seq, relation, strength,"
            " activation_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(*link, old, old) for link in links],
        )
        conn.commit()
        summary = await _agent(db, clock, [], merge_scan_per_cycle=0).run_cycle("manual")
        assert summary["pruned"] == 1
        left = conn.execute("SELECT source_seq, target_seq, relation FROM associations")
        assert sorted(left.fetchall()) == [
            (1, 3, "similar"), (2, 3, "part_of"), (2, 3, "similar"), (3, 1, "supersedes"),
        ]  # fmt: skip
        conn.close()

    with_database(path, scenario)


def test_a_purge_removes_the_merge_records(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> None:
        ids = await write_embedded(db, embedder, TWINS[:2], clock.now)
        await _agent(db, clock, []).run_cycle("manual")
        conn = sqlite3.connect(path)
        gist = conn.execute("SELECT merged_into FROM memories WHERE id = ?", (ids[0],))
        gist_id = gist.fetchone()[0]
        assert conn.execute("SELECT count(*) FROM memory_merges").fetchone()[0] == 2
        purged = await SQLitePurger(db).purge("id", [gist_id])
        assert purged.counts.memories == 3  # the gist and the two sources merged into it
        assert conn.execute("SELECT count(*) FROM memory_merges").fetchone()[0] == 0
        conn.close()

    with_database(path, scenario)


def test_a_cycle_stops_at_its_budget_and_resumes(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> None:
        await write_embedded(db, embedder, LOOKALIKES + OTHER, clock.now)
        agent = _agent(db, clock, [], max_changes=2, write_batch=1, merge_scan_per_cycle=0)
        clock.now += timedelta(days=40)
        first = await agent.run_cycle("manual")
        assert first["budget_exhausted"] and first["decayed"] == 2
        second = await agent.run_cycle("manual")
        third = await agent.run_cycle("manual")
        assert second["decayed"] == 2 and third["decayed"] == 1
        assert (await agent.run_cycle("manual"))["decayed"] == 0  # each decayed once
        conn = sqlite3.connect(path)
        sal = [r[0] for r in conn.execute("SELECT salience FROM memories ORDER BY seq")]
        conn.close()
        fresh = _agent(db, clock, [], merge_scan_per_cycle=0)
        assert (await fresh.run_cycle("manual"))["decayed"] == 0
        # same type, same decay (their created_at differ by the microseconds between writes)
        assert abs(sal[0] - sal[1]) < 1e-6

    with_database(path, scenario)


def test_unmerge_and_history_routes(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    """The REST face over the real store: 200 with the restored ids, 422 twice or for a
    non-gist, 404 for an unknown id, 422 for a bad limit; history newest first."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from mnemonic.api.app import _bad_request, _invalid, _not_found
    from mnemonic.api.consolidation_routes import build_consolidation_routes
    from mnemonic.api.routes import BadRequest
    from mnemonic.errors import InvalidInputError, NotFoundError

    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> tuple[list[str], str]:
        ids = await write_embedded(db, embedder, TWINS[:2], clock.now)
        await _agent(db, clock, []).run_cycle("startup")
        conn = sqlite3.connect(path)
        gist = conn.execute("SELECT merged_into FROM memories WHERE id = ?", (ids[0],))
        gist_id = str(gist.fetchone()[0])
        conn.close()
        return ids, gist_id

    ids, gist_id = with_database(path, scenario)

    async def serve(db: Database) -> None:
        app = Starlette(
            routes=build_consolidation_routes(SQLiteConsolidation(db), clock),
            exception_handlers={
                NotFoundError: _not_found,
                BadRequest: _bad_request,
                InvalidInputError: _invalid,
            },
        )
        # TestClient runs the app in its own loop thread; the Database is bound to this
        # one, so the calls go through asyncio.to_thread
        with TestClient(app) as client:
            ok = await asyncio.to_thread(client.post, f"/api/v1/memories/{gist_id}/unmerge")
            again = await asyncio.to_thread(client.post, f"/api/v1/memories/{gist_id}/unmerge")
            source = await asyncio.to_thread(client.post, f"/api/v1/memories/{ids[0]}/unmerge")
            missing = await asyncio.to_thread(client.post, "/api/v1/memories/nope/unmerge")
            hist = await asyncio.to_thread(client.get, "/api/v1/consolidation/history?limit=5")
            bad = await asyncio.to_thread(client.get, "/api/v1/consolidation/history?limit=0")
        assert ok.status_code == 200, ok.text
        assert sorted(ok.json()["restored"]) == sorted(ids)
        assert ok.json()["gist_state"] == "archived"
        assert again.status_code == 422 and source.status_code == 422
        assert missing.status_code == 404
        assert hist.status_code == 200
        assert [c["trigger"] for c in hist.json()["items"]] == ["startup"]
        assert hist.json()["items"][0]["counts"]["merged"] == 1
        assert bad.status_code == 422

    with_database(path, serve)


def test_a_gist_inherits_only_supersessions_that_keep_time_order(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """A memory that superseded one source supersedes the gist only if it is newer than
    every source; what a source superseded, the gist supersedes (bench/lifecycle.py found
    an older handoff superseding a newer gist, and pairs superseding each other)."""
    path = tmp_path / "m.db"
    clock = Clock()
    t0 = clock.now - timedelta(days=30)

    async def scenario(db: Database) -> list[str]:
        older = await write_embedded(
            db, embedder, [("alpha", "Lint runs in CI on every push.")], t0
        )
        first = await write_embedded(db, embedder, TWINS[:1], t0 + timedelta(days=1))
        middle = await write_embedded(
            db,
            embedder,
            [("alpha", "The release train leaves on Tuesdays.")],
            t0 + timedelta(days=2),
        )
        second = await write_embedded(db, embedder, TWINS[1:2], t0 + timedelta(days=3))
        newest = await write_embedded(
            db,
            embedder,
            [("alpha", "Pushing to main now needs a green build.")],
            t0 + timedelta(days=4),
        )
        ids = [*older, *first, *middle, *second, *newest]

        def link(conn: sqlite3.Connection) -> None:
            seq = {r[0]: r[1] for r in conn.execute("SELECT id, seq FROM memories")}
            now = to_db(clock.now)
            for newer, old in ((ids[1], ids[0]), (ids[2], ids[1]), (ids[4], ids[1])):
                conn.execute(
                    "INSERT INTO associations (source_seq, target_seq, relation, strength,"
                    " created_at, updated_at) VALUES (?, ?, 'supersedes', 0.9, ?, ?)",
                    (seq[newer], seq[old], now, now),
                )

        await db.run_write(link)
        first_cycle = await _agent(db, clock, []).run_cycle("manual")
        assert first_cycle["merged"] == 1
        return ids

    ids = with_database(path, scenario)
    conn = sqlite3.connect(path)
    gist = conn.execute("SELECT merged_into FROM memories WHERE id = ?", (ids[1],)).fetchone()[0]
    seq = {r[0]: r[1] for r in conn.execute("SELECT id, seq FROM memories")}
    edges = {
        (a, b)
        for a, b in conn.execute(
            "SELECT source_seq, target_seq FROM associations WHERE relation = 'supersedes'"
        )
    }
    conn.close()
    assert (seq[gist], seq[ids[0]]) in edges  # a source superseded it: so does the gist
    assert (seq[ids[4]], seq[gist]) in edges  # newer than every source: supersedes the gist
    assert (seq[ids[2]], seq[gist]) not in edges  # dated between the sources: not inherited
    assert not any((b, a) in edges for a, b in edges)  # never both ways


def test_a_cycle_soon_after_a_full_pass_does_not_decay_again(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """A pass rewrites nearly every row; one minutes after the last would do that for a
    negligible change (94,550 rows at 100k in bench/consolidation_scale.py). It waits for
    ``decay_min_interval_s`` and then decays over the whole time, so nothing is lost."""
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> None:
        await write_embedded(db, embedder, LOOKALIKES + OTHER, clock.now)
        agent = _agent(db, clock, [], merge_scan_per_cycle=0, decay_min_interval_s=3600)
        clock.now += timedelta(days=40)
        assert (await agent.run_cycle("manual"))["decayed"] == 5
        clock.now += timedelta(minutes=5)
        soon = await agent.run_cycle("manual")
        assert soon["decayed"] == 0 and soon["decay_skipped"] == 1
        assert soon["prune_skipped"] == 1  # the link walk waits a day
        clock.now += timedelta(hours=2)
        later = await agent.run_cycle("manual")
        assert later["decayed"] == 5 and later["prune_skipped"] == 1
        clock.now += timedelta(days=1)
        assert (await agent.run_cycle("manual"))["prune_skipped"] == 0

    with_database(path, scenario)


def test_purging_a_source_also_purges_the_gist_that_quotes_it(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """A gist keeps every sentence of its sources verbatim: a purge of one source that
    left the gist would leave the text the user asked to remove."""
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> None:
        ids = await write_embedded(db, embedder, [*TWINS[:2], OTHER[1]], clock.now)
        await _agent(db, clock, []).run_cycle("manual")
        purged = await SQLitePurger(db).purge("id", [ids[0]])
        assert purged.counts.memories == 3  # the source, its gist, the gist's other source
        conn = sqlite3.connect(path)
        left = [r[0] for r in conn.execute("SELECT content FROM memories")]
        hits = conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'pushing'"
        ).fetchone()[0]
        conn.close()
        assert left == [OTHER[1][1]] and hits == 0

    with_database(path, scenario)


def test_a_damaged_first_vector_does_not_hide_the_others(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """The vectors consolidation compares take the size most rows have: a first row cut
    short (a page damaged on disk) is left out, not the rows after it."""
    path = tmp_path / "m.db"
    clock = Clock()

    async def scenario(db: Database) -> tuple[list[int], int]:
        await write_embedded(db, embedder, TWINS, clock.now)
        with sqlite3.connect(path) as conn:
            first = conn.execute("SELECT min(seq) FROM memory_vectors").fetchone()[0]
            conn.execute("UPDATE memory_vectors SET vector = x'0000803f' WHERE seq = ?", (first,))
        seqs, matrix = await SQLiteConsolidation(db).vectors("alpha", 0, 100)
        return [int(s) for s in seqs], int(matrix.shape[1])

    seqs, dim = with_database(path, scenario)
    assert dim == 384
    assert len(seqs) == len(TWINS) - 1
