"""Each cognitive agent survives its store or its LLM failing mid-cycle (issue 13, 7).

The store fails for real: a TEMP trigger on the writer's connection refuses an insert with
``RAISE(ABORT)`` partway through one of the agent's write transactions (the first rows of
that transaction already written when it fires). The cycle runs through the real
``ScheduledAgent.run_now`` and its ``agent_runs`` log; it must be recorded as failed (ok
false, the error kept), the failing transaction must leave nothing behind (the tables it
writes are compared before and after), and once the fault is gone the next cycle works.

The LLM fails for real too: the scripted OpenAI-compatible server answers once, then
errors (HTTP 500) or stalls past the client's timeout; the agent, built with
``build_completer`` and the openai provider, falls back to its heuristic and the cycle
succeeds with nothing half-written.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.openai_server import OpenAIServer, Reply, chat_reply, error_reply
from support.store import Clock, with_database

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
    LlmConfig,
    MetacognitionConfig,
)
from mnemonic.encoding.text import content_hash
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.llm.completion.build import build_completer
from mnemonic.runtime.agent_runs import CycleAgent, RunRecord, Schedule, ScheduledAgent
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
from mnemonic.timeutil import to_db

CHAT = "/v1/chat/completions"
DIM = 8

# three themes over three days (so three episodes each), plus two restatements to merge
THEMES = {
    "docker": ("docker compose", "volume mount", "registry image"),
    "pytest": ("pytest fixture", "conftest scope", "fixture teardown"),
    "redis": ("redis cache", "session store", "cache eviction"),
}
TWIN = "Always run make test before pushing to main."


def _rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _tables(path: Path, *names: str) -> dict[str, list[tuple[Any, ...]]]:
    return {n: _rows(path, f"SELECT * FROM {n} ORDER BY 1, 2") for n in names}


async def _seed(db: Database, clock: Clock) -> dict[str, int]:
    """Themed memories over three days, two restatements (same vector), every memory
    embedded as the encoder would; returns memory id -> seq."""
    rng = np.random.default_rng(5)
    store = SQLiteStore(db)
    start = clock.now - timedelta(days=6)
    items: list[tuple[NewRaw, Encoded, str]] = []
    for day in range(3):
        for n, (theme, concepts) in enumerate(THEMES.items()):
            for k in range(2):
                pair = f"the {concepts[k]} and the {concepts[k + 1]}"
                text = f"Day {day}: {pair} needed work ({theme} {n}{k})."
                when = start + timedelta(days=day, minutes=10 * (3 * n + k))
                enc = Encoded(
                    text[:60], (concepts[k], concepts[k + 1]), MemoryType.GENERAL, 0.5, 0.6
                )
                items.append((NewRaw(text, Source.API, "alpha", when), enc, content_hash(text)))
    for i, text in enumerate((TWIN, f"Again: {TWIN.lower()}")):
        when = start + timedelta(days=3, minutes=i)
        enc = Encoded(text[:60], ("make test",), MemoryType.GENERAL, 0.5, 0.6)
        items.append((NewRaw(text, Source.API, "alpha", when), enc, content_hash(text)))
    accepted = await store.accept(items, 0.05)
    pending = await store.pending_for([a.memory_id for a in accepted])
    twin = rng.normal(size=DIM).astype(np.float32)
    outcomes = [
        EmbeddedOutcome(
            p, twin if "make test" in p.content else rng.normal(size=DIM).astype(np.float32)
        )
        for p in pending
    ]
    await store.complete(outcomes, VectorModels("fake-8", "fake-8"), 0.05)
    return {a.memory_id: a.seq for a in accepted}


async def _refuse(db: Database, table: str, after: int, message: str) -> None:
    """From now on, the insert into ``table`` that would take it past ``after`` rows
    aborts its transaction (a TEMP trigger on the writer's connection)."""

    def work(conn: sqlite3.Connection) -> None:
        conn.execute(
            f"CREATE TEMP TRIGGER refuse_{table} BEFORE INSERT ON main.{table}"
            f" WHEN (SELECT count(*) FROM main.{table}) >= {after}"
            f" BEGIN SELECT RAISE(ABORT, '{message}'); END"
        )

    await db.run_write(work)


async def _allow(db: Database, table: str) -> None:
    await db.run_write(lambda conn: conn.execute(f"DROP TRIGGER temp.refuse_{table}"))


def _scheduled(db: Database, agent: CycleAgent, clock: Clock) -> ScheduledAgent:
    return ScheduledAgent(agent, Schedule(), SQLiteRunLog(db), FakeClock(), clock)


def _assert_failed(path: Path, record: RunRecord, message: str) -> None:
    assert record.ok is False and record.error is not None and message in record.error
    ok, error = _rows(path, "SELECT ok, error FROM agent_runs WHERE id = ?", record.id)[0]
    assert ok == 0 and message in error


def _count(path: Path, table: str, where: str = "1") -> int:
    return int(_rows(path, f"SELECT count(*) FROM {table} WHERE {where}")[0][0])


def _episoding(db: Database, clock: Clock, completer: Completer | None = None) -> EpisodingAgent:
    cfg = EpisodesConfig(gap_s=1800.0, max_span_s=4 * 3600.0)
    return EpisodingAgent(
        SQLiteEpisodes(db), lambda _e: None, clock, cfg, completer or NoCompleter()
    )


# ---- the store failing mid-cycle -----------------------------------------------------------


def test_episoding_failing_mid_batch_writes_no_episode_and_recovers(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()

    async def scenario(db: Database) -> tuple[RunRecord, RunRecord, dict[str, Any], dict[str, Any]]:
        await _seed(db, clock)
        agent = _scheduled(db, _episoding(db, clock), clock)
        await _refuse(db, "episode_memories", 3, "episode refused")
        before = _tables(path, "episodes", "episode_memories", "system_meta")
        failed = await agent.run_now("schedule")
        after = _tables(path, "episodes", "episode_memories", "system_meta")
        await _allow(db, "episode_memories")
        return failed, await agent.run_now("schedule"), before, after

    failed, again, before, after = with_database(path, scenario)
    _assert_failed(path, failed, "episode refused")
    assert after == before  # no episode, no member, no watermark moved
    assert again.ok and again.summary["assigned"] == 20
    assert _count(path, "episode_memories") == 20


def test_consolidation_failing_in_the_merge_leaves_no_gist_and_recovers(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()
    decayed: list[int] = []

    async def scenario(db: Database) -> tuple[RunRecord, RunRecord, dict[str, Any], dict[str, Any]]:
        await _seed(db, clock)
        agent = _scheduled(
            db, ConsolidationAgent(SQLiteConsolidation(db), lambda _e: None, clock,
                                   ConsolidationConfig(pace=0.0)), clock,
        )  # fmt: skip
        clock.now += timedelta(days=20)  # the decay step has work to commit first
        await _refuse(db, "memory_merges", 1, "merge refused")
        names = ("memory_merges", "raw_memories", "associations", "consolidation_history")
        before = _tables(path, *names)
        before_mem = _rows(path, "SELECT seq, id, content, state, merged_into FROM memories")
        failed = await agent.run_now("schedule")
        after = _tables(path, *names)
        after_mem = _rows(path, "SELECT seq, id, content, state, merged_into FROM memories")
        decayed.append(_count(path, "memories", "salience < 0.6"))
        await _allow(db, "memory_merges")
        again = await agent.run_now("schedule")
        return failed, again, {**before, "memories": before_mem}, {**after, "memories": after_mem}

    failed, again, before, after = with_database(path, scenario)
    _assert_failed(path, failed, "merge refused")
    assert after == before  # no gist, no source marked merged, no history row
    # the decay pass before it is whole and kept (salience moved, every row one pass)
    assert decayed == [20]
    assert again.ok and again.summary["merged"] == 1
    assert _count(path, "memories", "state = 'merged'") == 2


def test_dreaming_failing_mid_links_writes_no_link_and_recovers(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()
    cfg = DreamingConfig(min_episodes=2, max_df_share=0.5)

    async def scenario(db: Database) -> tuple[RunRecord, RunRecord, dict[str, Any], dict[str, Any]]:
        await _seed(db, clock)
        await _scheduled(db, _episoding(db, clock), clock).run_now("schedule")
        agent = _scheduled(
            db, DreamingAgent(SQLiteDreaming(db), lambda _e: None, clock, cfg,
                              redact=lambda t: t), clock,
        )  # fmt: skip
        await _refuse(db, "associations", 1, "link refused")  # the second new link aborts
        names = ("associations", "memories", "raw_memories", "insight_sources")
        before = _tables(path, *names)
        failed = await agent.run_now("manual")
        after = _tables(path, *names)
        await _allow(db, "associations")
        return failed, await agent.run_now("manual"), before, after

    failed, again, before, after = with_database(path, scenario)
    _assert_failed(path, failed, "link refused")
    assert after == before  # not one link of the batch, and the insight step never ran
    assert again.ok and again.summary["links_added"] >= 2
    assert again.summary["insights"] >= 1


def test_dreaming_failing_in_the_insight_writes_no_memory(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()
    cfg = DreamingConfig(min_episodes=2, max_df_share=0.5)

    async def scenario(db: Database) -> tuple[RunRecord, dict[str, Any], dict[str, Any], int]:
        await _seed(db, clock)
        await _scheduled(db, _episoding(db, clock), clock).run_now("schedule")
        agent = _scheduled(
            db, DreamingAgent(SQLiteDreaming(db), lambda _e: None, clock, cfg,
                              redact=lambda t: t), clock,
        )  # fmt: skip
        await _refuse(db, "insight_sources", 1, "provenance refused")
        names = ("memories", "raw_memories", "memories_fts", "insight_sources")
        before = _tables(path, *names)
        failed = await agent.run_now("manual")
        return failed, before, _tables(path, *names), _count(path, "associations")

    failed, before, after, links = with_database(path, scenario)
    _assert_failed(path, failed, "provenance refused")
    assert after == before  # the insight memory, its raw row and its provenance: all or none
    assert links > 0  # the link step before it committed whole


def test_abstraction_failing_mid_pattern_writes_none_and_recovers(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()
    cfg = AbstractionConfig(min_evidence=4)

    async def scenario(db: Database) -> tuple[RunRecord, RunRecord, dict[str, Any], dict[str, Any]]:
        await _seed(db, clock)
        agent = _scheduled(
            db, AbstractionAgent(SQLiteAbstractions(db), lambda _e: None, clock, cfg), clock
        )
        await _refuse(db, "abstraction_evidence", 2, "evidence refused")
        names = ("abstractions", "abstraction_evidence", "abstraction_sources")
        before = _tables(path, *names)
        failed = await agent.run_now("manual")
        after = _tables(path, *names)
        await _allow(db, "abstraction_evidence")
        return failed, await agent.run_now("manual"), before, after

    failed, again, before, after = with_database(path, scenario)
    _assert_failed(path, failed, "evidence refused")
    assert after == before == {n: [] for n in after}
    assert again.ok and again.summary["patterns_created"] >= 2
    orphans = _count(path, "abstractions a", "level = 'pattern' AND NOT EXISTS (SELECT 1 FROM"
                     " abstraction_evidence e WHERE e.abstraction_id = a.id)")  # fmt: skip
    assert orphans == 0


def test_metacognition_failing_mid_record_suppresses_nothing(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()
    cfg = MetacognitionConfig(min_memories=5, suppress_after=2, feedback_min_ratings=2,
                              self_test_patterns=0, self_test_memories=0)  # fmt: skip

    async def scenario(db: Database) -> tuple[RunRecord, RunRecord, dict[str, Any], dict[str, Any]]:
        ids = list(await _seed(db, clock))
        store = SQLiteStore(db)
        for n in range(3):  # the first two memories rated irrelevant three times
            qid = f"q{n}"
            await store.record_query(QueryRecord(qid, "q", tuple(ids[:4]), ()), {}, 1.0, [])
            await store.record_feedback(qid, Quality.IRRELEVANT, ids[:2], -0.05, (0.5, 1.5))
        stamp = to_db(clock.now)
        await db.run_write(
            lambda c: c.execute("UPDATE retrieval_feedback SET created_at = ?", (stamp,))
        )
        agent = _scheduled(
            db, MetacognitionAgent(SQLiteMeta(db), lambda _e: None, clock, cfg,
                                   database_bytes=lambda: os.path.getsize(path)), clock,
        )  # fmt: skip
        await _refuse(db, "meta_observations", 2, "observation refused")
        before = _tables(path, "meta_observations", "system_meta")
        before["utility"] = _rows(path, "SELECT seq, utility FROM memories")
        failed = await agent.run_now("schedule")
        after = _tables(path, "meta_observations", "system_meta")
        after["utility"] = _rows(path, "SELECT seq, utility FROM memories")
        await _allow(db, "meta_observations")
        return failed, await agent.run_now("schedule"), before, after

    failed, again, before, after = with_database(path, scenario)
    _assert_failed(path, failed, "observation refused")
    assert after == before  # no observation row, no utility lowered
    assert again.ok and again.summary["suppressed"] == 2
    assert _count(path, "meta_observations") == 7


# ---- the LLM failing mid-cycle -------------------------------------------------------------


def _completer(server: OpenAIServer) -> Any:
    cfg = LlmConfig.model_validate(
        {"provider": "openai", "base_url": server.base_url, "model": "m", "timeout_s": 1.0,
         "deadline_s": 2.0, "max_retries": 0, "repair_attempts": 0, "breaker_failures": 100}
    )  # fmt: skip
    completer = build_completer(cfg, None)
    assert completer.available
    return completer


@pytest.mark.parametrize("failure", ["error", "timeout"])
def test_each_agent_falls_back_to_its_heuristic_when_the_llm_fails_mid_cycle(
    tmp_path: Path, failure: str
) -> None:
    """The first answer is good, every later one fails: episoding (descriptions),
    abstraction (titles), dreaming (insight wording) and consolidation (gist summary) all
    finish their cycle with heuristic text, and write every row they would without an LLM."""
    path, clock = tmp_path / "m.db", Clock()
    broken: Reply = (
        error_reply(500) if failure == "error" else Reply(body=chat_reply("{}").body, delay=3.0)
    )
    good = json.dumps({"title": "Docker compose volume mount work",
                       "description": "The docker compose volume mount needed work.",
                       "summary": "The docker compose volume mount needed work."})  # fmt: skip

    with OpenAIServer() as server:
        server.script(CHAT, chat_reply(good))
        server.set_handler(CHAT, lambda _request: broken)
        completer = _completer(server)

        async def scenario(db: Database) -> dict[str, RunRecord]:
            try:
                await _seed(db, clock)
                clock.now += timedelta(days=20)
                agents: list[CycleAgent] = [
                    _episoding(db, clock, completer),
                    AbstractionAgent(SQLiteAbstractions(db), lambda _e: None, clock,
                                     AbstractionConfig(min_evidence=4, llm_max_per_cycle=3),
                                     completer),
                    DreamingAgent(SQLiteDreaming(db), lambda _e: None, clock,
                                  DreamingConfig(min_episodes=2, max_df_share=0.5), completer,
                                  redact=lambda t: t),
                    ConsolidationAgent(SQLiteConsolidation(db), lambda _e: None, clock,
                                       ConsolidationConfig(pace=0.0), completer),
                ]  # fmt: skip
                out = {}
                for agent in agents:
                    out[agent.name] = await _scheduled(db, agent, clock).run_now("manual")
                return out
            finally:
                await completer.aclose()

        runs = with_database(path, scenario)
        asked = len(server.requests_to(CHAT))
    assert all(r.ok for r in runs.values()), {n: r.error for n, r in runs.items()}
    assert asked >= 5  # every agent asked, the first answer only was good
    s = {n: r.summary for n, r in runs.items()}
    assert s["episoding"]["closed"] >= 3 and s["episoding"]["described_heuristic"] >= 2
    assert s["abstraction"]["patterns_created"] >= 2
    assert s["dreaming"]["insights"] >= 1 and s["dreaming"]["llm_insights"] == 0
    assert s["consolidation"]["merged"] == 1 and s["consolidation"]["llm_summaries"] == 0
    described = dict(_rows(path, "SELECT described_by, count(*) FROM episodes GROUP BY 1"))
    assert described.get("heuristic", 0) >= 2
    titled = dict(_rows(path, "SELECT described_by, count(*) FROM abstractions GROUP BY 1"))
    assert titled.get("heuristic", 0) >= 2 and titled.get("llm", 0) <= 1
    # every insight has its provenance and every gist its sources: nothing half-written
    assert _count(path, "memories m", "source = 'dreaming' AND NOT EXISTS (SELECT 1 FROM"
                  " insight_sources s WHERE s.insight_seq = m.seq)") == 0  # fmt: skip
    assert _count(path, "memory_merges") == 2
