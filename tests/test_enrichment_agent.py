"""The enrichment agent end to end: a real SQLite file from the production migrations,
memories written through the real ``SQLiteStore``, and the LLM played only by the scripted
OpenAI-compatible server over a real socket (through the real ``CompletionClient``)."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from support.cli import Run
from support.openai_server import OpenAIServer, chat_reply

from mnemonic.agents.enrichment import NO_LLM, EnrichmentAgent
from mnemonic.api.app import _bad_request
from mnemonic.api.enrichment_routes import build_enrichment_routes
from mnemonic.api.routes import BadRequest
from mnemonic.config import EncodingConfig, EnrichmentConfig, LlmConfig, StorageConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.llm.completion.client import CompletionClient
from mnemonic.llm.completion.openai_provider import OpenAIProvider
from mnemonic.store.base import Filters
from mnemonic.store.database import Database
from mnemonic.store.enrichment import Enrichment, SQLiteEnrichment
from mnemonic.store.models import MemoryState, MemoryType, NewRaw, Source
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import utcnow

NOTE = (
    "We switched the session store from MySQL to Redis because MySQL row locks hurt at "
    "1,000 requests per second. Config is in src/app/session.py."
)
GOOD = {
    "gist": "Session store moved from MySQL to Redis",
    "summary": "Sessions moved from MySQL to Redis because row locks hurt at 1000 rps.",
    "concepts": ["Session store", "redis", "caching layer", "row locks", "the redis"],
    "entities": ["MySQL", "Redis", "src/app/session.py"],
    "type": "decision",
    "significance": 0.9,
    "salience": 0.95,
}
CHAT = "/v1/chat/completions"


class Env:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.store = SQLiteStore(db)
        self.enrichment = SQLiteEnrichment(db)

    async def remember(self, text: str, kind: MemoryType | None = None) -> str:
        raw = NewRaw(content=text, source=Source.API, project="demo", timestamp=utcnow(), type=kind)
        [accepted] = await self.store.accept(
            [(raw, encode(text, explicit_type=kind), content_hash(text))], 0.05
        )
        return accepted.memory_id

    def agent(self, completer: Completer, **cfg: Any) -> EnrichmentAgent:
        return EnrichmentAgent(
            self.enrichment, completer, EnrichmentConfig(**cfg), EncodingConfig(), utcnow
        )

    async def row(self, memory_id: str) -> dict[str, Any]:
        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            m = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
            f = conn.execute(
                "SELECT summary, concepts FROM memories_fts WHERE rowid = ?", (m["seq"],)
            ).fetchone()
            r = conn.execute("SELECT * FROM raw_memories WHERE id = ?", (m["raw_id"],)).fetchone()
            return {
                **dict(m),
                "fts_summary": f["summary"],
                "fts_concepts": f["concepts"],
                "raw": dict(r),
            }

        return await self.db.run_read(work)

    async def finds(self, term: str) -> list[str]:
        hits = await self.store.full_text([term], Filters(), 10, 100_000)
        found = await self.store.get_many([seq for seq, _ in hits])
        return [m.id for m in found.values()]


def _run(tmp_path: Path, body: Callable[[Env], Awaitable[None]]) -> None:
    async def main() -> None:
        db = Database(tmp_path / "mnemonic.db", StorageConfig())
        await db.open()
        try:
            await body(Env(db))
        finally:
            await db.close()

    asyncio.run(main())


def _client(base_url: str, **overrides: Any) -> CompletionClient:
    cfg = LlmConfig(
        provider="openai",
        base_url=base_url,
        model="test-model",
        max_retries=0,
        repair_attempts=1,
        timeout_s=5,
        deadline_s=10,
        **overrides,
    )
    return CompletionClient(OpenAIProvider(base_url, "test-model"), cfg)


def _unchanged(before: dict[str, Any], after: dict[str, Any]) -> None:
    for key in ("content", "content_hash", "summary", "concepts", "type", "significance"):
        assert after[key] == before[key], key
    assert after["salience"] == before["salience"]
    assert after["metadata"] == before["metadata"]
    assert after["raw"] == before["raw"]
    assert after["fts_summary"] == before["fts_summary"]
    assert after["fts_concepts"] == before["fts_concepts"]


def test_a_good_answer_enriches_the_memory_and_makes_it_findable(tmp_path: Path) -> None:
    async def body(env: Env) -> None:
        with OpenAIServer() as server:
            server.script(CHAT, chat_reply(json.dumps(GOOD)))
            client = _client(server.base_url)
            memory_id = await env.remember(NOTE)
            before = await env.row(memory_id)
            assert await env.finds("caching") == []  # the word is nowhere in the note

            agent = env.agent(client)
            summary = await agent.run_cycle("manual")
            assert summary["mode"] == "llm"
            assert summary["enriched"] == 1
            after = await env.row(memory_id)
            # the observation is verbatim, in the memory and in the raw row
            assert after["content"] == before["content"] == NOTE
            assert after["raw"] == before["raw"]
            assert after["summary"] == GOOD["summary"]
            assert json.loads(after["concepts"]) == [
                "session store",
                "redis",
                "caching layer",
                "row locks",
            ]
            assert after["type"] == "decision"
            assert after["significance"] == 0.9
            metadata = json.loads(after["metadata"])
            assert metadata["encoded_by"] == "llm"
            assert metadata["encoding_model"] == "test-model"
            assert metadata["gist"] == GOOD["gist"]
            assert metadata["entities"] == GOOD["entities"]
            # the full-text row follows in the same transaction
            assert after["fts_summary"] == GOOD["summary"]
            assert after["fts_concepts"] == "session store redis caching layer row locks"
            assert await env.finds("caching") == [memory_id]

            # the question was bounded and carried the note (redacted, stored text)
            [request] = server.requests_to(CHAT)
            sent = request.json()
            assert any(NOTE in m["content"] for m in sent["messages"])

            # done once: the next cycle asks nothing
            again = await agent.run_cycle("schedule")
            assert again["enriched"] == 0
            assert len(server.requests_to(CHAT)) == 1
            assert agent.health()["enriched"] == 1
            await client.aclose()

    _run(tmp_path, body)


def test_a_fabricated_entity_is_rejected_and_the_heuristic_kept(tmp_path: Path) -> None:
    async def body(env: Env) -> None:
        with OpenAIServer() as server:
            invented = {**GOOD, "summary": "Sessions moved from MySQL to PostgreSQL at 1000 rps."}
            server.script(CHAT, chat_reply(json.dumps(invented)))
            client = _client(server.base_url)
            memory_id = await env.remember(NOTE)
            before = await env.row(memory_id)
            agent = env.agent(client)
            summary = await agent.run_cycle("manual")
            assert summary["unfaithful"] == 1
            assert summary["enriched"] == 0
            _unchanged(before, await env.row(memory_id))
            assert agent.health()["rejected_unfaithful"] == 1
            assert await env.finds("postgresql") == []
            await client.aclose()

    _run(tmp_path, body)


def test_malformed_json_keeps_the_heuristic(tmp_path: Path) -> None:
    async def body(env: Env) -> None:
        with OpenAIServer() as server:
            server.set_handler(CHAT, lambda _r: chat_reply('{"gist": "Sessions", "summary": '))
            client = _client(server.base_url, breaker_failures=10)
            memory_id = await env.remember(NOTE)
            before = await env.row(memory_id)
            agent = env.agent(client)
            summary = await agent.run_cycle("manual")
            assert summary["llm_failed"] == 1
            assert summary["enriched"] == 0
            assert len(server.requests_to(CHAT)) >= 1
            _unchanged(before, await env.row(memory_id))
            assert agent.health()["llm_failed"] == 1
            await client.aclose()

    _run(tmp_path, body)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_without_an_llm_a_cycle_does_nothing(tmp_path: Path) -> None:
    async def body(env: Env) -> None:
        memory_id = await env.remember(NOTE)
        before = await env.row(memory_id)
        # no LLM configured
        agent = env.agent(NoCompleter())
        summary = await agent.run_cycle("schedule")
        assert summary["mode"] == "heuristic"
        assert summary["note"] == NO_LLM
        assert agent.health()["mode"] == "heuristic"
        assert agent.health()["llm_configured"] is False
        # configured, but the server is down: one failed try opens the breaker, the cycle
        # stops without writing, and the next cycle does nothing at all
        down = _client(f"http://127.0.0.1:{_closed_port()}/v1", breaker_failures=1)
        agent = env.agent(down)
        first = await agent.run_cycle("schedule")
        assert first["enriched"] == 0
        assert first["watermark"] == 0  # the memory is still ahead, for when it returns
        second = await agent.run_cycle("schedule")
        assert second["mode"] == "heuristic"
        assert second["note"] == NO_LLM
        assert agent.health()["mode"] == "heuristic"
        assert agent.health()["llm_configured"] is True
        _unchanged(before, await env.row(memory_id))
        assert await env.enrichment.watermark() == 0
        await down.aclose()

    _run(tmp_path, body)


def test_the_hourly_budget_bounds_the_calls(tmp_path: Path) -> None:
    async def body(env: Env) -> None:
        with OpenAIServer(default_chat_reply=json.dumps(GOOD)) as server:
            client = _client(server.base_url)
            for i in range(3):
                await env.remember(f"{NOTE} Variant {i}.")
            agent = env.agent(client, max_per_hour=2, batch_size=20)
            first = await agent.run_cycle("manual")
            assert first["enriched"] == 2
            second = await agent.run_cycle("manual")
            assert second["enriched"] == 0
            assert "budget" in second["note"]
            assert len(server.requests_to(CHAT)) == 2
            await client.aclose()

    _run(tmp_path, body)


def test_reencode_marks_only_heuristic_memories_in_the_window(tmp_path: Path) -> None:
    async def body(env: Env) -> None:
        old = [await env.remember(f"older note number {i} about caching") for i in range(2)]
        await asyncio.sleep(0.01)
        since = utcnow()
        await asyncio.sleep(0.01)
        llm_done = await env.remember("a note already encoded by the LLM about MySQL")
        fresh = [await env.remember(f"newer note {i} about Redis sessions") for i in range(3)]
        archived = await env.remember("an archived note about Redis")
        seqs = await env.store.seqs_of([*old, llm_done, *fresh, archived])
        row = await env.row(llm_done)
        await env.enrichment.apply(
            Enrichment(
                seq=seqs[llm_done],
                content_hash=row["content_hash"],
                summary="A note about MySQL.",
                concepts=("mysql",),
                type=MemoryType.GENERAL,
                significance=0.5,
                salience_shift=0.0,
                metadata={"encoded_by": "llm", "encoded_hash": row["content_hash"]},
            ),
            utcnow(),
        )
        await env.store.set_state(archived, MemoryState.ARCHIVED)

        first = await env.enrichment.mark_for_reencode(since, limit=2)
        assert (first.added, first.size) == (2, 2)
        second = await env.enrichment.mark_for_reencode(since, limit=100)
        assert (second.added, second.size) == (1, 3)  # nothing queued twice
        work = await env.enrichment.queued_work(100)
        assert sorted(c.id for c in work.candidates) == sorted(fresh)

        # the agent works through the queue (catch_up_s=0: nothing counts as new)
        with OpenAIServer() as server:
            server.set_handler(
                CHAT,
                lambda _r: chat_reply(
                    json.dumps(
                        {
                            **GOOD,
                            "gist": "Newer note about Redis sessions",
                            "summary": "A newer note about Redis sessions.",
                            "entities": ["Redis"],
                        }
                    )
                ),
            )
            client = _client(server.base_url)
            agent = env.agent(client, catch_up_s=0)
            summary = await agent.run_cycle("manual")
            assert summary["enriched"] == 3
            assert summary["queue"] == 0
            for memory_id in fresh:
                assert json.loads((await env.row(memory_id))["metadata"])["encoded_by"] == "llm"
            for memory_id in old:
                assert "encoded_by" not in json.loads((await env.row(memory_id))["metadata"])
            await client.aclose()

    _run(tmp_path, body)


def test_the_reencode_route(tmp_path: Path) -> None:
    async def body(env: Env) -> None:
        await env.remember(NOTE)

        async def post(agent: EnrichmentAgent, payload: Any) -> httpx.Response:
            app = Starlette(
                routes=build_enrichment_routes(agent, utcnow),
                exception_handlers={BadRequest: _bad_request},
            )
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                return await http.post("/api/v1/reencode", json=payload)

        none = await post(env.agent(NoCompleter()), {"since": "7d"})
        assert none.status_code == 409
        assert "no LLM is configured" in none.json()["error"]

        with OpenAIServer() as server:
            client = _client(server.base_url)
            agent = env.agent(client)
            ok = await post(agent, {"since": "7d", "limit": 10})
            assert ok.status_code == 202
            assert ok.json()["queued"] == 1
            assert ok.json()["queue"] == 1
            for bad in (
                {"since": "last week"},
                {"since": "7d", "limit": 0},
                {"since": "7d", "limit": 10_001},
                {"since": "7d", "limit": "5"},
                {"limit": 5},
                {"since": "7d", "extra": 1},
            ):
                answer = await post(agent, bad)
                assert answer.status_code == 422, bad
            await client.aclose()

    _run(tmp_path, body)


@pytest.mark.parametrize("kind", [MemoryType.ERROR])
def test_an_explicit_type_is_kept(tmp_path: Path, kind: MemoryType) -> None:
    async def body(env: Env) -> None:
        with OpenAIServer(default_chat_reply=json.dumps(GOOD)) as server:
            client = _client(server.base_url)
            memory_id = await env.remember(NOTE, kind)
            agent = env.agent(client)
            assert (await agent.run_cycle("manual"))["enriched"] == 1
            after = await env.row(memory_id)
            assert after["type"] == kind.value  # the writer said so; the LLM's guess is not used
            assert after["summary"] == GOOD["summary"]
            await client.aclose()

    _run(tmp_path, body)


def test_the_reencode_command_is_registered(run: Run, tmp_path: Path) -> None:
    env = {"MNEMONIC_HOME": str(tmp_path / "home"), "MNEMONIC_PORT": str(_closed_port())}
    code, out, _ = run(env, "reencode", "--help")
    assert code == 0
    assert "--since" in out and "--limit" in out and "--json" in out
    code, _, err = run(env, "reencode", "--since", "7d", "--limit", "5")
    assert code == 69, err  # nothing listens: the daemon is not running
    assert "not running" in err
