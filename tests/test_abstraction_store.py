"""The abstraction agent over a real SQLite store (production migrations), memories
written through the real ``SQLiteStore``: themes found, not duplicated, dismissals that
stick, demotion when evidence is archived, purge, a failing step, and the LLM path
through the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.openai_server import OpenAIServer, chat_reply
from support.store import Clock, with_database

from mnemonic.agents.abstraction import AbstractionAgent
from mnemonic.config import AbstractionConfig, LlmConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import AbstractionCreated, Event, PatternDiscovered
from mnemonic.llm.completion.base import Completer
from mnemonic.llm.completion.client import CompletionClient
from mnemonic.llm.completion.openai_provider import OpenAIProvider
from mnemonic.store.abstractions import SQLiteAbstractions
from mnemonic.store.database import Database
from mnemonic.store.models import NewRaw, Source
from mnemonic.store.purge import SQLitePurger
from mnemonic.store.sqlite import SQLiteStore

CHAT = "/v1/chat/completions"

DOCKER = [
    "Docker compose volume mounts break when the container runs as root.",
    "Rebuilt the docker image after the compose file changed the volume path.",
    "The docker container could not reach the compose network on startup.",
    "Pinned the docker base image so compose builds stop drifting.",
    "Docker compose logs showed the volume was mounted read only.",
    "Cleaned dangling docker images to free disk for compose builds.",
]
PYTEST = [
    "pytest fixtures in conftest leak temp directories between tests.",
    "The pytest fixture for the database must be function scoped.",
    "Parametrized pytest fixtures doubled the test run time.",
    "A session scoped pytest fixture now loads the model once.",
    "pytest fixture teardown did not close the sqlite connection.",
    "Moved shared pytest fixtures into conftest for reuse.",
]
DOCKER_DEPLOY = [
    "Docker deploy to staging failed on the registry login.",
    "The docker registry rejected the deploy image tag.",
    "Docker deploy pipeline pushes the registry image nightly.",
    "Retagged the docker image before the registry deploy.",
    "Docker registry credentials expired during the deploy.",
]


async def _write(
    db: Database, texts: list[str], start: datetime, project: str = "alpha"
) -> list[str]:
    batch = [
        (NewRaw(t, Source.API, project, start + timedelta(days=i % 3)), encode(t), content_hash(t))
        for i, t in enumerate(texts)
    ]
    return [a.memory_id for a in await SQLiteStore(db).accept(batch, 0.05)]


def _agent(db: Database, clock: Clock, events: list[Event], completer: Completer | None = None,
           **cfg: Any) -> AbstractionAgent:  # fmt: skip
    return AbstractionAgent(
        SQLiteAbstractions(db), events.append, clock, AbstractionConfig(**cfg), completer
    )


def _rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_themes_are_found_once_and_grouped_into_a_principle(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()
    events: list[Event] = []

    async def scenario(db: Database) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
        ids = await _write(db, DOCKER + PYTEST + DOCKER_DEPLOY, clock.now - timedelta(days=5))
        agent = _agent(db, clock, events)
        first = await agent.run_cycle("manual")
        second = await agent.run_cycle("manual")
        return first, second, ids

    first, second, ids = with_database(path, scenario)
    assert first["patterns_created"] == 3 and second["patterns_created"] == 0
    patterns = _rows(path, "SELECT id, concepts, state, strength, grounding FROM abstractions"
                     " WHERE level = 'pattern'")  # fmt: skip
    by_theme = {tuple(sorted(json.loads(c)[:2])): (i, s, st, g) for i, c, s, st, g in patterns}
    themes = {frozenset(json.loads(c)) for _, c, *_ in patterns}
    assert any({"pytest", "fixture"} <= t for t in themes)
    assert any({"docker", "compose"} <= t for t in themes)
    assert any({"docker", "registry"} <= t or {"docker", "deploy"} <= t for t in themes)
    assert all(0 < row[3] < 1 and row[4] == 1.0 and row[2] == "active" for row in patterns)
    assert len(by_theme) == 3
    evidence = _rows(path, "SELECT count(*) FROM abstraction_evidence")[0][0]
    assert evidence == 17
    discovered = [e for e in events if isinstance(e, PatternDiscovered)]
    assert len(discovered) == 3 and all(set(e.memory_ids) <= set(ids) for e in discovered)
    principles = _rows(
        path, "SELECT id, concepts, confidence FROM abstractions WHERE level = 'principle'"
    )
    assert len(principles) == 1 and "docker" in json.loads(principles[0][1])
    assert 0 < principles[0][2] <= 1
    kids = _rows(
        path, "SELECT count(*) FROM abstraction_sources WHERE parent_id = ?", principles[0][0]
    )
    assert kids[0][0] == 2
    assert [e.level for e in events if isinstance(e, AbstractionCreated)] == ["principle"]


def test_dismissed_stays_dismissed_and_new_evidence_grows_a_pattern(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()

    async def scenario(db: Database) -> list[dict[str, Any]]:
        await _write(db, DOCKER + PYTEST, clock.now - timedelta(days=5))
        agent = _agent(db, clock, [])
        out = [await agent.run_cycle("manual")]
        (pid,) = [r.id for r in await agent.store.page(level="pattern") if "pytest" in r.concepts]
        assert await agent.store.dismiss(pid, "pattern", clock.now) == "dismissed"
        assert await agent.store.dismiss(pid, "pattern", clock.now) == "dismissed"  # idempotent
        assert await agent.store.dismiss(pid, "principle", clock.now) is None
        await _write(db, ["Another pytest fixture broke the conftest import order.",
                          "Docker compose volume permissions fixed with a user mapping."],
                     clock.now - timedelta(days=1))  # fmt: skip
        out.append(await agent.run_cycle("manual"))
        return out

    _, second = with_database(path, scenario)
    assert second["patterns_created"] == 0 and second["suppressed"] == 1
    assert second["patterns_grown"] == 1
    states = dict(_rows(path, "SELECT state, count(*) FROM abstractions GROUP BY state"))
    assert states == {"active": 1, "dismissed": 1}
    assert _rows(path, "SELECT count(*) FROM abstraction_evidence e JOIN abstractions a"
                 " ON a.id = e.abstraction_id WHERE a.state = 'active'")[0][0] == 7  # fmt: skip


def test_archived_evidence_demotes_then_archives_and_purge_removes_evidence(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()

    async def scenario(db: Database) -> list[str]:
        ids = await _write(db, DOCKER + PYTEST, clock.now - timedelta(days=5))
        agent = _agent(db, clock, [])
        await agent.run_cycle("manual")
        await db.run_write(lambda c: c.execute(
            "UPDATE memories SET state = 'archived' WHERE content LIKE '%ocker%'"))  # fmt: skip
        states = []
        for _ in range(2):
            await agent.run_cycle("manual")
            states.append(
                _rows(path, "SELECT state FROM abstractions WHERE concepts LIKE '%docker%'")[0][0]
            )
        purged = await SQLitePurger(db).purge("ids", memory_ids=ids[6:8])
        assert purged.counts.memories == 2
        await agent.run_cycle("manual")
        return states

    states = with_database(path, scenario)
    assert states == ["demoted", "archived"]
    left = _rows(path, "SELECT a.grounding, count(e.memory_seq) FROM abstractions a JOIN"
                 " abstraction_evidence e ON e.abstraction_id = a.id"
                 " WHERE a.concepts LIKE '%pytest%' GROUP BY a.id")  # fmt: skip
    assert left == [(1.0, 4)]  # the two purged memories' evidence rows went with them


def test_near_duplicate_patterns_are_merged_into_the_older(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()

    async def scenario(db: Database) -> dict[str, Any]:
        await _write(db, DOCKER, clock.now - timedelta(days=5))
        agent = _agent(db, clock, [])
        await agent.run_cycle("manual")
        (old,) = await agent.store.page(level="pattern")
        twin_id = "00000000-twin"  # a duplicate another run (or an older build) left behind
        await db.run_write(lambda c: (
            c.execute("INSERT INTO abstractions (id, level, title, concepts, created_at,"
                      " updated_at, last_seen_at) SELECT ?, 'pattern', 't', concepts, ?, ?, ?"
                      " FROM abstractions WHERE id = ?",
                      (twin_id, "2999-01-01", "2999-01-01", "2999-01-01", old.id)),
            c.execute("INSERT INTO abstraction_evidence (abstraction_id, memory_seq, added_at)"
                      " SELECT ?, memory_seq, added_at FROM abstraction_evidence"
                      " WHERE abstraction_id = ?", (twin_id, old.id)),
        ))  # fmt: skip
        return await agent.run_cycle("manual")

    summary = with_database(path, scenario)
    assert summary["merged"] == 1
    rows = dict(_rows(path, "SELECT state, count(*) FROM abstractions GROUP BY state"))
    assert rows == {"active": 1, "merged": 1}
    assert _rows(
        path, "SELECT merged_into IS NOT NULL FROM abstractions WHERE id = '00000000-twin'"
    ) == [(1,)]


def test_a_failing_step_rolls_back_whole_and_the_earlier_steps_stand(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()

    async def scenario(db: Database) -> None:
        await _write(db, DOCKER + DOCKER_DEPLOY, clock.now - timedelta(days=5))
        await db.run_write(lambda c: c.execute(
            "CREATE TRIGGER no_sources BEFORE INSERT ON abstraction_sources"
            " BEGIN SELECT RAISE(ABORT, 'disk says no'); END"))  # fmt: skip
        agent = _agent(db, clock, [])
        with pytest.raises(sqlite3.IntegrityError, match="disk says no"):
            await agent.run_cycle("manual")

    with_database(path, scenario)
    assert _rows(path, "SELECT level, count(*) FROM abstractions GROUP BY level") == [
        ("pattern", 2)
    ]
    assert _rows(path, "SELECT count(*) FROM abstraction_sources") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM abstractions WHERE strength > 0") == [(2,)]


def _client(server: OpenAIServer) -> CompletionClient:
    cfg = LlmConfig.model_validate({"provider": "openai", "base_url": server.base_url,
                                    "model": "m", "timeout_s": 5.0, "deadline_s": 10.0,
                                    "max_retries": 0, "repair_attempts": 0})  # fmt: skip
    return CompletionClient(OpenAIProvider(cfg.base_url, cfg.model), cfg)


def test_the_llm_titles_patterns_only_when_grounded(tmp_path: Path) -> None:
    path, clock = tmp_path / "m.db", Clock()
    good = json.dumps(
        {
            "title": "Docker compose volume trouble",
            "description": "Compose volumes and docker images keep breaking.",
        }
    )
    invented = json.dumps(
        {"title": "Kubernetes fixtures", "description": "Moved to Kubernetes 1.29."}
    )
    with OpenAIServer() as server:
        server.script(CHAT, chat_reply(good), chat_reply(invented))
        client = _client(server)

        async def scenario(db: Database) -> dict[str, Any]:
            try:
                await _write(db, DOCKER + PYTEST, clock.now - timedelta(days=5))
                return await _agent(db, clock, [], client).run_cycle("manual")
            finally:
                await client.aclose()

        summary = with_database(path, scenario)
        prompts = [r.json()["messages"][-1]["content"] for r in server.requests_to(CHAT)]
    assert summary["llm_described"] == 1
    rows = _rows(path, "SELECT title, described_by FROM abstractions ORDER BY described_by")
    assert ("Docker compose volume trouble", "llm") in rows
    assert all("Kubernetes" not in t for t, _ in rows)
    assert len(prompts) == 2 and any("Docker compose volume mounts" in p for p in prompts)
