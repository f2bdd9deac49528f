"""The episoder end to end over a real database (production migrations): memories written
through the real ``SQLiteStore``, cycles of ``EpisodingAgent`` under a fake clock, the
routes in a Starlette app validated against the OpenAPI document, a purge, and the LLM
path against the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.testclient import TestClient
from support.cli import Run
from support.daemon_proc import free_port
from support.openai_server import OpenAIServer, chat_reply

from mnemonic.agents.episoding import EpisodingAgent
from mnemonic.api import app as api_app
from mnemonic.api.episode_routes import build_episode_routes
from mnemonic.api.openapi import ROUTE_DOCS, build_spec
from mnemonic.api.routes import BadRequest
from mnemonic.cli.episodes import episode_line, show_lines
from mnemonic.cognition.episodes import Rules, Stamp, segment
from mnemonic.config import EpisodesConfig, LlmConfig, StorageConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.events.types import EpisodeClosed, Event
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.llm.completion.client import CompletionClient
from mnemonic.llm.completion.openai_provider import OpenAIProvider
from mnemonic.store.database import Database
from mnemonic.store.episodes import WATERMARK_KEY, SQLiteEpisodes
from mnemonic.store.models import MemoryState, NewRaw, Source
from mnemonic.store.purge import SQLitePurger
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import from_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CFG = EpisodesConfig(gap_s=600, max_span_s=3600, batch_size=4, batches_per_cycle=50)
CHAT = "/v1/chat/completions"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@dataclass
class Harness:
    """A real database, the store, the agent, a fake clock and the published events."""

    db: Database
    store: SQLiteStore
    episodes: SQLiteEpisodes
    agent: EpisodingAgent
    events: list[Event] = field(default_factory=list)
    now: datetime = T0

    async def remember(
        self,
        content: str,
        minutes: float,
        project: str = "shop",
        source: Source = Source.API,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        raw = NewRaw(content, source, project, at(minutes), metadata or {})
        [done] = await self.store.accept([(raw, encode(content), content_hash(content))], 0.1)
        return done.memory_id

    async def cycle(self, minutes: float | None = None) -> dict[str, Any]:
        if minutes is not None:
            self.now = at(minutes)
        return await self.agent.run_cycle("manual")

    def closed(self) -> list[EpisodeClosed]:
        return [e for e in self.events if isinstance(e, EpisodeClosed)]

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.db.path)
        try:
            return [tuple(r) for r in conn.execute(sql, params)]
        finally:
            conn.close()

    def snapshot(self) -> tuple[list[tuple[Any, ...]], ...]:
        return (
            self.rows("SELECT * FROM episodes ORDER BY id"),
            self.rows("SELECT * FROM episode_memories ORDER BY memory_seq"),
            self.rows("SELECT value FROM system_meta WHERE key = ?", WATERMARK_KEY),
        )

    def groups(self) -> list[list[int]]:
        rows = self.rows(
            "SELECT e.episode_id, m.seq FROM episode_memories e JOIN memories m"
            " ON m.seq = e.memory_seq JOIN episodes p ON p.id = e.episode_id"
            " ORDER BY p.started_at, m.timestamp, m.seq"
        )
        found: dict[str, list[int]] = {}
        for episode_id, seq in rows:
            found.setdefault(episode_id, []).append(seq)
        return list(found.values())


def run(
    tmp_path: Path,
    body: Callable[[Harness], Awaitable[Any]],
    *,
    cfg: EpisodesConfig = CFG,
    completer: Completer | None = None,
) -> Any:
    async def main() -> Any:
        db = Database(tmp_path / "mnemonic.db", StorageConfig())
        await db.open()
        episodes = SQLiteEpisodes(db)
        holder: list[Harness] = []
        events: list[Event] = []
        agent = EpisodingAgent(
            episodes, events.append, lambda: holder[0].now, cfg, completer or NoCompleter()
        )
        h = Harness(db, SQLiteStore(db), episodes, agent, events)
        holder.append(h)
        try:
            return await body(h)
        finally:
            await db.close()

    return asyncio.run(main())


# ---- grouping, closing, describing -------------------------------------------------------


def test_a_cycle_groups_closes_describes_and_announces(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        await h.remember("Redis cache timeouts in staging", 0)
        await h.remember("Raised the Redis pool size to 50 after the timeouts", 2)
        await h.remember("pytest -k cache", 4, source=Source.TERMINAL, metadata={"kind": "command"})
        await h.remember(
            "redis.yaml: pool 20 -> 50",
            5,
            source=Source.FILESYSTEM,
            metadata={"watcher": "filesystem", "path": "/src/shop/config/redis.yaml"},
        )
        await h.remember("Blog post draft about caching", 1, project="blog")
        await h.remember("Checkout page layout fixed", 40)  # a second shop episode

        summary = await h.cycle(30)
        assert summary["assigned"] == 6
        assert summary["closed"] == 2  # shop's first (25 min quiet) and blog's
        assert summary["open"] == 1  # the one at minute 40 (the "future" for now)
        assert summary["described_heuristic"] == 2 and summary["described_llm"] == 0
        assert not summary["backlog"]

        closed = {e.project: e for e in h.closed()}
        assert set(closed) == {"shop", "blog"}
        shop = closed["shop"]
        assert shop.memory_count == 4 and len(shop.memory_ids) == 4
        assert (shop.started_at, shop.ended_at) == (at(0), at(5))
        episode = await h.episodes.get(shop.episode_id)
        assert episode is not None and episode.state == "closed"
        assert episode.closed_at == at(30)
        assert episode.title.startswith("shop: ") and "redis" in episode.title
        assert episode.files == ("/src/shop/config/redis.yaml",)
        assert episode.commands == ("pytest -k cache",)
        assert "redis" in episode.concepts
        assert 0 <= episode.salience <= 1
        members = await h.episodes.memories_of(shop.episode_id, 100)
        assert [m.id for m in members] == list(shop.memory_ids)
        assert [m.timestamp for m in members] == sorted(m.timestamp for m in members)

        health = h.agent.health()
        assert health["mode"] == "heuristic" and health["open_episodes"] == 1

        # the open one closes once the clock passes its gap
        later = await h.cycle(51)
        assert (later["assigned"], later["closed"], later["open"]) == (0, 1, 0)

    run(tmp_path, body)


def test_a_second_cycle_at_the_same_time_changes_nothing(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        for i in range(9):
            await h.remember(f"step {i} of the deploy runbook for invoices", i * 7)
        first = await h.cycle(200)
        assert first["assigned"] == 9 and first["closed"] >= 1
        before, events = h.snapshot(), len(h.events)
        second = await h.cycle()
        assert second["assigned"] == 0 and second["closed"] == 0
        assert h.snapshot() == before
        assert len(h.events) == events

    run(tmp_path, body)


def test_a_late_memory_with_a_past_timestamp_reopens_and_recloses_its_episode(
    tmp_path: Path,
) -> None:
    async def body(h: Harness) -> None:
        await h.remember("Started the invoice export", 0)
        await h.remember("Invoice export writes CSV", 5)
        await h.cycle(60)
        [first] = h.closed()
        late = await h.remember("Invoice export: added the VAT column", 12)  # an import
        summary = await h.cycle(61)
        assert summary["assigned"] == 1 and summary["closed"] == 1
        second = h.closed()[-1]
        assert second.episode_id == first.episode_id  # the same episode, grown
        assert second.memory_count == 3 and second.memory_ids[-1] == late
        assert second.ended_at == at(12)

    run(tmp_path, body)


def test_a_bridging_memory_merges_two_stored_episodes(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        for minute in (0, 2, 4):
            await h.remember(f"payment retries note {minute}", minute)
        await h.remember("payment retries follow-up", 18)
        await h.cycle(100)
        assert len(h.groups()) == 2
        await h.remember("payment retries in between", 11)
        summary = await h.cycle(101)
        assert summary["episodes_absorbed"] == 1
        assert [len(g) for g in h.groups()] == [5]
        count = h.rows("SELECT count(*), sum(memory_count) FROM episodes")
        assert count == [(1, 5)]

    run(tmp_path, body)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_order_of_arrival_does_not_change_the_stored_grouping(
    tmp_path: Path, seed: int
) -> None:
    """The same memories written in a random order, grouped in small batches (and some
    cycles between writes), end in the canonical segmentation of their timestamps."""
    rng = random.Random(seed)
    minutes = [rng.choice(range(0, 300, 3)) + rng.random() for _ in range(40)]
    order = list(range(len(minutes)))
    rng.shuffle(order)

    async def body(h: Harness) -> None:
        seq_minutes: dict[int, float] = {}
        for n, i in enumerate(order):
            memory_id = await h.remember(f"observation number {i} about billing", minutes[i])
            memory = await h.store.get(memory_id)
            assert memory is not None
            seq_minutes[memory.seq] = minutes[i]
            if n % 7 == 0:
                await h.cycle(1000)
        await h.cycle(1000)
        rules = Rules.of(CFG.gap_s, CFG.max_span_s)
        expected = segment([Stamp(at(m), s) for s, m in seq_minutes.items()], rules)
        assert h.groups() == [[s.seq for s in g] for g in expected]
        spans = h.rows("SELECT started_at, ended_at FROM episodes ORDER BY started_at")
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert from_db(end) < from_db(start)  # never overlapping

    run(tmp_path, body)


def test_a_cycle_is_bounded_and_the_backlog_continues(tmp_path: Path) -> None:
    cfg = EpisodesConfig(gap_s=600, max_span_s=3600, batch_size=3, batches_per_cycle=2)

    async def body(h: Harness) -> None:
        for i in range(10):
            await h.remember(f"bounded cycle note {i}", i)
        first = await h.cycle(5)
        assert (first["assigned"], first["backlog"]) == (6, True)
        second = await h.cycle()
        assert (second["assigned"], second["backlog"]) == (4, False)
        assert [len(g) for g in h.groups()] == [10]

    run(tmp_path, body, cfg=cfg)


def test_archived_and_merged_memories_stay_in_their_episode(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        a = await h.remember("Feature flag for the new search", 0)
        b = await h.remember("Search flag rolled out to 10%", 3)
        await h.cycle(30)
        await h.store.set_state(a, MemoryState.ARCHIVED)
        await h.db.run_write(
            lambda c: c.execute(
                "UPDATE memories SET state = 'merged', merged_into = ? WHERE id = ?", (a, b)
            )
        )
        [event] = h.closed()
        members = await h.episodes.memories_of(event.episode_id, 10)
        assert [(m.id, m.state) for m in members] == [(a, "archived"), (b, "merged")]
        again = await h.cycle(31)
        assert again["assigned"] == 0 and again["closed"] == 0

    run(tmp_path, body)


# ---- purge -----------------------------------------------------------------------------------


def test_purge_removes_memberships_fixes_counts_and_the_description(tmp_path: Path) -> None:
    async def body(h: Harness) -> None:
        keep = await h.remember("Rotated the staging database password", 0)
        secret = await h.remember("kumquat-7731 is the staging password", 2)
        await h.remember("Staging database restarted", 4)
        await h.cycle(30)
        [event] = h.closed()
        before = await h.episodes.get(event.episode_id)
        assert before is not None and "kumquat-7731" in before.summary

        purger = SQLitePurger(h.db)
        await purger.purge("id", memory_ids=[secret])
        after = await h.episodes.get(event.episode_id)
        assert after is not None
        assert (after.memory_count, after.state, after.title, after.summary) == (
            2,
            "open",
            "",
            "",
        )
        assert h.rows("SELECT count(*) FROM episode_memories") == [(2,)]
        redescribed = await h.cycle(31)
        assert redescribed["closed"] == 1
        final = await h.episodes.get(event.episode_id)
        assert final is not None and final.state == "closed"
        assert "kumquat" not in final.summary + final.title + json.dumps(final.concepts)

        # every member purged: the episode goes too
        others = [m.id for m in await h.episodes.memories_of(event.episode_id, 10)]
        assert keep in others
        await purger.purge("ids", memory_ids=others)
        assert await h.episodes.get(event.episode_id) is None
        assert h.rows("SELECT count(*) FROM episodes") == [(0,)]

    run(tmp_path, body)


def test_a_seq_freed_by_a_purge_and_reused_is_still_grouped(tmp_path: Path) -> None:
    """SQLite gives the highest freed rowid out again: without lowering the watermark in
    the purge, the next memory would sit below it and never join an episode."""

    async def body(h: Harness) -> None:
        await h.remember("first note on the release", 0)
        newest = await h.remember("second note on the release", 1)
        await h.cycle(2)
        memory = await h.store.get(newest)
        assert memory is not None
        await SQLitePurger(h.db).purge("id", memory_ids=[newest])
        again = await h.remember("third note on the release", 3)
        reused = await h.store.get(again)
        assert reused is not None and reused.seq == memory.seq  # the scenario is real
        summary = await h.cycle(4)
        assert summary["assigned"] == 1
        assert h.rows("SELECT count(*) FROM episode_memories WHERE memory_seq = ?", reused.seq) == [
            (1,)
        ]

    run(tmp_path, body)


# ---- with an LLM (the scripted server) -------------------------------------------------------


def _client(server: OpenAIServer) -> CompletionClient:
    cfg = LlmConfig.model_validate(
        {
            "provider": "openai",
            "base_url": server.base_url,
            "model": "test-model",
            "timeout_s": 5.0,
            "deadline_s": 10.0,
            "max_retries": 0,
            "repair_attempts": 0,
            "breaker_failures": 5,
        }
    )
    return CompletionClient(OpenAIProvider(cfg.base_url, cfg.model), cfg)


def test_an_llm_description_is_used_when_grounded(tmp_path: Path) -> None:
    good = json.dumps(
        {
            "title": "Redis pool tuning",
            "summary": "Staging timeouts led to a larger Redis pool.",
            "concepts": ["redis", "pool size", "memcached"],
        }
    )
    invented = json.dumps(
        {"title": "Kafka migration", "summary": "Moved to Kafka 3.6.", "concepts": ["kafka"]}
    )
    with OpenAIServer() as server:
        server.script(CHAT, chat_reply(good), chat_reply(invented), chat_reply("not json"))
        client = _client(server)

        async def body(h: Harness) -> None:
            try:
                await h.remember("Redis timeouts in staging", 0)
                await h.remember("Raised the Redis pool size to 50", 2)
                await h.remember("The invoice export broke on empty rows", 30, "b")
                await h.remember("Invoice export fixed", 32, "b")
                await h.remember("Release notes written", 100, "c")
                summary = await h.cycle(200)
                assert summary["described_llm"] == 1
                assert summary["described_heuristic"] == 2
                by_project = {e.project: e for e in h.closed()}
                shop = await h.episodes.get(by_project["shop"].episode_id)
                assert shop is not None
                assert (shop.title, shop.described_by) == ("Redis pool tuning", "llm")
                assert shop.concepts == ("redis", "pool size")  # memcached is not grounded
                b = await h.episodes.get(by_project["b"].episode_id)
                assert b is not None and b.described_by == "heuristic"
                assert "Kafka" not in b.title + b.summary + json.dumps(b.concepts)
                assert h.agent.health()["described_llm"] == 1
            finally:
                await client.aclose()

        run(tmp_path, body, completer=client)
        prompts = [r.json()["messages"][-1]["content"] for r in server.requests_to(CHAT)]
    assert len(prompts) == 3
    assert "Raised the Redis pool size to 50" in prompts[0]


# ---- REST ------------------------------------------------------------------------------------


SPEC = build_spec(ROUTE_DOCS, version="test")


def _check(method: str, template: str, response: Any) -> None:
    answers = SPEC["paths"][template][method.lower()]["responses"]
    status = str(response.status_code)
    assert status in answers, (template, status, response.text)
    schema = answers[status]["content"]["application/json"]["schema"]
    document = {**schema, "components": SPEC["components"]}
    errors = [e.message for e in jsonschema_rs.validator_for(document).iter_errors(response.json())]
    assert errors == [], errors[:3]


@dataclass
class Served:
    app: Starlette
    ids: dict[str, list[str]]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """The routes over a database with three episodes (two closed, one open)."""
    loop = asyncio.new_event_loop()
    db = Database(tmp_path / "mnemonic.db", StorageConfig())
    loop.run_until_complete(db.open())
    store, episodes = SQLiteStore(db), SQLiteEpisodes(db)
    agent = EpisodingAgent(episodes, lambda e: None, lambda: at(130), CFG, NoCompleter())
    ids: dict[str, list[str]] = {}

    async def fill() -> None:
        for project, minutes in (("shop", (0, 3, 6)), ("blog", (60,)), ("shop", (125, 126))):
            for m in minutes:
                content = f"{project} work at minute {m}"
                raw = NewRaw(content, Source.API, project, at(m))
                [done] = await store.accept([(raw, encode(content), content_hash(content))], 0.1)
                ids.setdefault(project, []).append(done.memory_id)
        await agent.run_cycle("manual")

    loop.run_until_complete(fill())
    app = Starlette(
        routes=build_episode_routes(episodes),
        exception_handlers={
            BadRequest: api_app._bad_request,
            NotFoundError: api_app._not_found,
            InvalidInputError: api_app._invalid,
        },
    )
    yield Served(app, ids)
    loop.run_until_complete(db.close())
    loop.close()


@pytest.fixture
def api(served: Served) -> Iterator[tuple[TestClient, dict[str, list[str]]]]:
    with TestClient(served.app) as client:
        yield client, served.ids


def test_list_and_filters(api: tuple[TestClient, dict[str, list[str]]]) -> None:
    client, _ = api
    everything = client.get("/api/v1/episodes")
    _check("GET", "/api/v1/episodes", everything)
    items = everything.json()["items"]
    assert [(e["project"], e["state"], e["memory_count"]) for e in items] == [
        ("shop", "open", 2),
        ("blog", "closed", 1),
        ("shop", "closed", 3),
    ]
    assert everything.json()["next_cursor"] is None

    def projects(**params: Any) -> list[tuple[str, str]]:
        response = client.get("/api/v1/episodes", params=params)
        _check("GET", "/api/v1/episodes", response)
        return [(e["project"], e["state"]) for e in response.json()["items"]]

    assert projects(project="shop") == [("shop", "open"), ("shop", "closed")]
    assert projects(state="closed") == [("blog", "closed"), ("shop", "closed")]
    assert projects(since=at(50).isoformat()) == [("shop", "open"), ("blog", "closed")]
    assert projects(until=at(5).isoformat()) == [("shop", "closed")]  # overlaps minute 5
    assert projects(project="nothing") == []


def test_cursor_pagination_walks_every_episode_once(
    api: tuple[TestClient, dict[str, list[str]]],
) -> None:
    client, _ = api
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(5):
        params: dict[str, Any] = {"limit": 1}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/api/v1/episodes", params=params)
        _check("GET", "/api/v1/episodes", page)
        seen += [e["id"] for e in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    everything = [e["id"] for e in client.get("/api/v1/episodes").json()["items"]]
    assert seen == everything and len(seen) == 3


def test_one_episode_with_its_memories_in_order(
    api: tuple[TestClient, dict[str, list[str]]],
) -> None:
    client, ids = api
    listed = client.get("/api/v1/episodes", params={"project": "shop", "state": "closed"})
    episode_id = listed.json()["items"][0]["id"]
    response = client.get(f"/api/v1/episodes/{episode_id}")
    _check("GET", "/api/v1/episodes/{episode_id}", response)
    detail = response.json()
    assert detail["episode"]["id"] == episode_id and detail["truncated"] is False
    assert [m["id"] for m in detail["memories"]] == ids["shop"][:3]
    first = detail["memories"][0]
    assert set(first) == {"id", "summary", "timestamp", "type", "state", "source"}
    assert first["state"] == "active"
    lines = show_lines(detail)
    assert f"id: {episode_id}" in lines and "memories (in time order):" in lines
    assert episode_id in episode_line(detail["episode"])


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/api/v1/episodes/no-such-episode", 404),
        ("/api/v1/episodes?limit=0", 422),
        ("/api/v1/episodes?limit=201", 422),
        ("/api/v1/episodes?state=sleeping", 422),
        ("/api/v1/episodes?since=yesterday", 422),
        ("/api/v1/episodes?since=1700000000", 422),
        ("/api/v1/episodes?cursor=%21%21%21", 422),
        ("/api/v1/episodes?cursor=WzFd", 422),  # valid base64 JSON, not our shape ([1])
        ("/api/v1/episodes?colour=blue", 422),
    ],
)
def test_bad_requests_are_4xx(
    api: tuple[TestClient, dict[str, list[str]]], url: str, status: int
) -> None:
    client, _ = api
    response = client.get(url)
    assert response.status_code == status, response.text
    template = "/api/v1/episodes/{episode_id}" if status == 404 else "/api/v1/episodes"
    _check("GET", template, response)


# ---- CLI ---------------------------------------------------------------------------------------


def test_cli_lists_and_shows_episodes_over_rest(served: Served, run: Run, tmp_path: Path) -> None:
    """``mnemonic episodes`` against the routes under a real server on a free port."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(served.app, host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.02)
        env = {
            "MNEMONIC_HOME": str(tmp_path / "cli-home"),
            "MNEMONIC_PORT": str(port),
            "MNEMONIC_TOKEN": "unused-by-this-app",
        }
        code, out, err = run(env, "episodes", "--project", "shop", "--json")
        assert code == 0, err
        page = json.loads(out)
        assert [e["state"] for e in page["items"]] == ["open", "closed"]
        code, out, err = run(env, "episodes", "--state", "closed")
        assert code == 0, err
        assert len(out.strip().splitlines()) == 2 and "2 episodes" in err
        closed_id = page["items"][1]["id"]
        code, out, err = run(env, "episodes", "show", closed_id)
        assert code == 0, err
        assert f"id: {closed_id}" in out
        assert all(memory_id in out for memory_id in served.ids["shop"][:3])
        code, out, err = run(env, "episodes", "show", "no-such-episode")
        assert code != 0 and "404" in err
        code, _, err = run(env, "episodes", "--state", "sleeping")
        assert code == 64, err
    finally:
        server.should_exit = True
        thread.join(timeout=10)
