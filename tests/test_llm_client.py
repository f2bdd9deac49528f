"""``CompletionClient`` over the real ``openai`` SDK against the scripted server on a real
socket: structured answers, repair, deadlines, Retry-After, the breaker, the concurrency
limit, redaction, and the ``llm_usage`` rows it writes to a real SQLite store."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.openai_server import OpenAIServer, Reply, Request, chat_reply, error_reply
from support.secrets import load_secret_cases

from mnemonic.config import LlmConfig, StorageConfig
from mnemonic.llm.completion.base import CompletionRequest, NoCompleter
from mnemonic.llm.completion.build import build_completer
from mnemonic.llm.completion.client import CompletionClient
from mnemonic.llm.completion.openai_provider import OpenAIProvider
from mnemonic.store.database import Database
from mnemonic.store.llm_usage import SQLiteLlmUsage, UsageRow

CHAT = "/v1/chat/completions"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "salience": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["title", "salience"],
}
GOOD = '{"title": "moved sessions to Redis", "salience": 0.7}'
REQUEST = CompletionRequest(
    operation="encode",
    agent="enrichment",
    system="Describe the memory.",
    user="sessions moved from MySQL to Redis",
    schema=SCHEMA,
)


def config(server: OpenAIServer | None = None, **overrides: Any) -> LlmConfig:
    values: dict[str, Any] = {
        "provider": "openai",
        "base_url": server.base_url if server else "http://127.0.0.1:9/v1",
        "model": "test-model",
        "timeout_s": 5.0,
        "deadline_s": 10.0,
        "max_retries": 2,
        "breaker_failures": 3,
        "breaker_cooldown_s": 60.0,
        "max_concurrency": 2,
        "max_wait_s": 1.0,
        "json_mode": "auto",
    }
    values.update(overrides)
    return LlmConfig.model_validate(values)


def run_with(
    tmp_path: Path,
    cfg: LlmConfig,
    body: Callable[[CompletionClient, SQLiteLlmUsage], Awaitable[Any]],
) -> Any:
    """Run ``body`` with a client over a real store; the store is closed afterwards."""

    async def main() -> Any:
        db = Database(tmp_path / "mnemonic.db", StorageConfig())
        await db.open()
        usage = SQLiteLlmUsage(db)
        client = CompletionClient(OpenAIProvider(cfg.base_url, cfg.model), cfg, usage)
        try:
            return await body(client, usage)
        finally:
            await client.aclose()
            await db.close()

    return asyncio.run(main())


def usage_rows(tmp_path: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(tmp_path / "mnemonic.db")
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM llm_usage ORDER BY id").fetchall()
    finally:
        conn.close()


def messages_of(request: Request) -> list[dict[str, Any]]:
    return list(request.json()["messages"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---- answers -------------------------------------------------------------------------------


def test_a_good_answer_is_returned_and_recorded_with_tokens_latency_and_cost(
    tmp_path: Path,
) -> None:
    with OpenAIServer() as server:
        cfg = config(server, prices={"test-model": {"input": 1.0, "output": 2.0}})
        server.script(CHAT, chat_reply(GOOD, prompt_tokens=1200, completion_tokens=300))

        async def body(client: CompletionClient, usage: SQLiteLlmUsage) -> Any:
            return await client.complete_json(REQUEST), client.status()

        answer, status = run_with(tmp_path, cfg, body)
        sent = server.requests_to(CHAT)[0].json()
    assert answer == {"title": "moved sessions to Redis", "salience": 0.7}
    assert sent["model"] == "test-model"
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "JSON Schema" in sent["messages"][0]["content"]  # the prompt states it too
    assert status["calls"] == 1 and status["failures"] == 0 and status["mode"] == "llm"
    assert status["schema_supported"] is True
    [row] = usage_rows(tmp_path)
    assert (row["operation"], row["agent"], row["provider"], row["model"]) == (
        "encode",
        "enrichment",
        "openai",
        "test-model",
    )
    assert (row["prompt_tokens"], row["completion_tokens"]) == (1200, 300)
    assert row["success"] == 1 and row["error"] is None
    assert row["latency_ms"] > 0
    assert row["cost_usd"] == pytest.approx((1200 * 1.0 + 300 * 2.0) / 1e6)


def test_prose_wrapped_json_is_read_without_asking_again(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.script(CHAT, chat_reply(f"Here you go:\n```json\n{GOOD}\n```\nAnything else?"))
        answer = run_with(tmp_path, config(server), lambda c, u: c.complete_json(REQUEST))
        assert len(server.requests_to(CHAT)) == 1
    assert answer is not None and answer["salience"] == 0.7


def test_malformed_json_is_repaired_by_asking_again_with_the_problem(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.script(
            CHAT,
            chat_reply('{"title": "x", "salience": '),  # cut off
            chat_reply(GOOD, prompt_tokens=10, completion_tokens=5),
        )
        answer = run_with(tmp_path, config(server), lambda c, u: c.complete_json(REQUEST))
        first, second = server.requests_to(CHAT)
    assert answer is not None and answer["title"] == "moved sessions to Redis"
    repair = messages_of(second)
    assert repair[:2] == messages_of(first)
    assert repair[2] == {"role": "assistant", "content": '{"title": "x", "salience": '}
    assert repair[3]["role"] == "user" and "no JSON object" in repair[3]["content"]
    [row] = usage_rows(tmp_path)  # one judgment, one row
    assert row["success"] == 1 and row["prompt_tokens"] == 10


def test_a_schema_invalid_answer_is_repaired_then_given_up_after_the_budget(
    tmp_path: Path,
) -> None:
    bad = '{"title": "t", "salience": 7}'
    with OpenAIServer(default_chat_reply=bad) as server:
        answer = run_with(
            tmp_path, config(server, repair_attempts=2), lambda c, u: c.complete_json(REQUEST)
        )
        requests = server.requests_to(CHAT)
    assert answer is None
    assert len(requests) == 3  # the question and two repairs, no more
    assert "$.salience must be at most 1" in messages_of(requests[1])[-1]["content"]
    [row] = usage_rows(tmp_path)
    assert row["success"] == 0 and row["error"] == "schema_invalid"


def test_auto_mode_falls_back_to_the_prompt_when_response_format_is_refused(
    tmp_path: Path,
) -> None:
    def refuse_schema(request: Request) -> Reply:
        if "response_format" in request.json():
            return error_reply(400, "response_format json_schema is not supported")
        return chat_reply(GOOD)

    with OpenAIServer() as server:
        server.set_handler(CHAT, refuse_schema)

        async def body(client: CompletionClient, usage: SQLiteLlmUsage) -> Any:
            first = await client.complete_json(REQUEST)
            second = await client.complete_json(REQUEST)
            return first, second, client.status()

        first, second, status = run_with(tmp_path, config(server), body)
        with_format = ["response_format" in r.json() for r in server.requests_to(CHAT)]
    assert first == second and first is not None
    assert with_format == [True, False, False]  # learned once, remembered
    assert status["schema_supported"] is False and status["breaker"]["state"] == "closed"


def test_prompt_mode_never_sends_response_format(tmp_path: Path) -> None:
    with OpenAIServer(default_chat_reply=GOOD) as server:
        answer = run_with(
            tmp_path, config(server, json_mode="prompt"), lambda c, u: c.complete_json(REQUEST)
        )
        [sent] = server.requests_to(CHAT)
    assert answer is not None and "response_format" not in sent.json()


# ---- deadlines and retries -------------------------------------------------------------------


def test_a_slow_server_times_out_within_the_request_timeout(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.script(CHAT, Reply(body=chat_reply(GOOD).body, delay=3.0))
        started = time.monotonic()
        answer = run_with(
            tmp_path,
            config(server, timeout_s=0.4, max_retries=0),
            lambda c, u: c.complete_json(REQUEST),
        )
        elapsed = time.monotonic() - started
    assert answer is None
    assert elapsed < 2.0
    [row] = usage_rows(tmp_path)
    assert row["success"] == 0 and row["error"] == "timeout"


def test_the_deadline_bounds_the_whole_judgment(tmp_path: Path) -> None:
    """Retries and long request timeouts cannot stretch a judgment past its deadline."""
    with OpenAIServer() as server:
        server.set_handler(CHAT, lambda r: Reply(body=chat_reply(GOOD).body, delay=3.0))
        started = time.monotonic()
        answer = run_with(
            tmp_path,
            config(server, timeout_s=30, deadline_s=0.6, max_retries=5),
            lambda c, u: c.complete_json(REQUEST),
        )
        elapsed = time.monotonic() - started
    assert answer is None
    assert 0.5 <= elapsed < 2.0
    [row] = usage_rows(tmp_path)
    assert row["error"] in ("deadline", "timeout") and row["latency_ms"] < 1500


def test_429_with_retry_after_is_honoured(tmp_path: Path) -> None:
    server_times: list[float] = []

    def limited_once(request: Request) -> Reply:
        server_times.append(time.monotonic())
        if len(server_times) == 1:
            return error_reply(429, "slow down", retry_after="1")
        return chat_reply(GOOD)

    with OpenAIServer() as server:
        server.set_handler(CHAT, limited_once)
        answer = run_with(tmp_path, config(server), lambda c, u: c.complete_json(REQUEST))
    assert answer is not None
    assert len(server_times) == 2
    waited = server_times[1] - server_times[0]
    assert 1.0 <= waited < 1.6, waited  # the second asked for, plus at most 10% jitter


def test_500s_are_retried_then_succeed(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.script(CHAT, error_reply(500), error_reply(503), chat_reply(GOOD))
        answer = run_with(tmp_path, config(server), lambda c, u: c.complete_json(REQUEST))
        assert len(server.requests_to(CHAT)) == 3
    assert answer is not None
    [row] = usage_rows(tmp_path)
    assert row["success"] == 1


def test_failures_open_the_breaker_and_a_half_open_probe_closes_it(tmp_path: Path) -> None:
    cfg_kw = {"max_retries": 1, "breaker_failures": 2, "breaker_cooldown_s": 0.5}
    with OpenAIServer() as server:
        server.set_handler(CHAT, lambda r: error_reply(500))
        cfg = config(server, **cfg_kw)

        async def body(client: CompletionClient, usage: SQLiteLlmUsage) -> dict[str, Any]:
            seen: dict[str, Any] = {}
            seen["answers"] = [await client.complete_json(REQUEST) for _ in range(2)]
            seen["requests_when_open"] = len(server.requests_to(CHAT))
            seen["open"] = (client.status(), client.available, client.mode)
            seen["refused"] = await client.complete_json(REQUEST)
            seen["requests_after_refusal"] = len(server.requests_to(CHAT))
            await asyncio.sleep(0.6)
            seen["half_open"] = client.status()["breaker"]["state"]
            seen["probe_fails"] = await client.complete_json(REQUEST)
            seen["reopened"] = client.status()["breaker"]
            await asyncio.sleep(0.6)
            server.set_handler(CHAT, lambda r: chat_reply(GOOD))
            seen["probe_ok"] = await client.complete_json(REQUEST)
            seen["closed"] = client.status()
            return seen

        seen = run_with(tmp_path, cfg, body)
    assert seen["answers"] == [None, None]
    assert seen["requests_when_open"] == 4  # two judgments, each a request and one retry
    status, available, mode = seen["open"]
    assert status["breaker"]["state"] == "open" and not available and mode == "heuristic"
    assert status["mode"] == "heuristic" and status["breaker"]["retry_in_s"] > 0
    assert seen["refused"] is None
    assert seen["requests_after_refusal"] == 4  # refused without touching the server
    assert seen["half_open"] == "half_open"
    assert seen["probe_fails"] is None
    assert seen["reopened"]["state"] == "open" and seen["reopened"]["times_opened"] == 2
    assert seen["probe_ok"] is not None
    closed = seen["closed"]
    assert closed["breaker"]["state"] == "closed" and closed["mode"] == "llm"
    assert closed["skipped"] == 1 and closed["calls"] == 4 and closed["failures"] == 3
    errors = [(r["success"], r["error"]) for r in usage_rows(tmp_path)]
    assert errors == [(0, "server"), (0, "server"), (0, "server"), (1, None)]


def test_an_endpoint_that_is_down_fails_fast_and_counts_against_the_breaker(
    tmp_path: Path,
) -> None:
    cfg = config(None, base_url=f"http://127.0.0.1:{free_port()}/v1", breaker_failures=1)

    async def body(client: CompletionClient, usage: SQLiteLlmUsage) -> Any:
        started = time.monotonic()
        answer = await client.complete_json(REQUEST)
        return answer, time.monotonic() - started, client.status()

    answer, elapsed, status = run_with(tmp_path, cfg, body)
    assert answer is None and elapsed < 5.0
    assert status["breaker"]["state"] == "open"
    assert "cannot connect to http://127.0.0.1:" in status["last_error"]
    [row] = usage_rows(tmp_path)
    assert row["error"] == "connect"


# ---- concurrency -------------------------------------------------------------------------------


def test_a_saturated_client_returns_none_after_a_bounded_wait(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.set_handler(CHAT, lambda r: Reply(body=chat_reply(GOOD).body, delay=1.5))
        cfg = config(server, max_concurrency=1, max_wait_s=0.2)

        async def body(client: CompletionClient, usage: SQLiteLlmUsage) -> Any:
            async def timed() -> tuple[dict[str, Any] | None, float]:
                started = time.monotonic()
                answer = await client.complete_json(REQUEST)
                return answer, time.monotonic() - started

            first = asyncio.create_task(timed())
            await asyncio.sleep(0.1)  # the first holds the only slot
            others = await asyncio.gather(*(timed() for _ in range(3)))
            return await first, others, client.status()

        (answer, slow), others, status = run_with(tmp_path, cfg, body)
        assert len(server.requests_to(CHAT)) == 1  # nothing queued behind the slot
    assert answer is not None and slow >= 1.4
    for other, waited in others:
        assert other is None
        assert waited < 0.6  # max_wait_s, not the 1.5 s the slot was busy
    assert status["rejected"] == 3 and status["calls"] == 1


# ---- secrets -----------------------------------------------------------------------------------


def test_prompts_are_redacted_before_they_leave(tmp_path: Path) -> None:
    cases = [c for c in load_secret_cases() if "\n" not in c.text][:8]
    assert cases
    leaky = CompletionRequest(
        operation="encode",
        agent="test",
        system="Context: " + cases[0].text,
        user="\n".join(c.text for c in cases[1:]),
        schema=SCHEMA,
    )
    with OpenAIServer(default_chat_reply=GOOD) as server:
        run_with(tmp_path, config(server), lambda c, u: c.complete_json(leaky))
        [sent] = server.requests_to(CHAT)
    text = json.dumps(sent.json()["messages"], ensure_ascii=False)
    for case in cases:
        for secret in case.secrets:
            assert secret not in text, (case.line, case.kinds)
    assert "[REDACTED:" in text


# ---- without an LLM ----------------------------------------------------------------------------


def test_no_completer_answers_none_and_says_why() -> None:
    completer = build_completer(LlmConfig(), usage=None)
    assert isinstance(completer, NoCompleter)
    assert asyncio.run(completer.complete_json(REQUEST)) is None
    status = completer.status()
    assert status["configured"] is False and status["mode"] == "heuristic"
    assert not completer.available


def test_a_configured_provider_builds_a_client() -> None:
    completer = build_completer(config(None), usage=None)
    assert isinstance(completer, CompletionClient)
    status = completer.status()
    assert status["configured"] is True
    assert (status["provider"], status["model"]) == ("openai", "test-model")
    assert status["base_url"] == "http://127.0.0.1:9/v1"
    asyncio.run(completer.aclose())


# ---- the usage store ---------------------------------------------------------------------------


def test_usage_summary_groups_by_day_operation_and_model_with_a_since_filter(
    tmp_path: Path,
) -> None:
    base = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def row(days: int, operation: str, model: str, ok: bool, tokens: int) -> UsageRow:
        return UsageRow(
            at=base + timedelta(days=days),
            operation=operation,
            agent="a",
            provider="openai",
            model=model,
            prompt_tokens=tokens,
            completion_tokens=tokens // 2,
            latency_ms=100.0 * (days + 1),
            success=ok,
            error=None if ok else "timeout",
            cost_usd=0.001 * tokens / 100,
        )

    async def main() -> Any:
        db = Database(tmp_path / "mnemonic.db", StorageConfig())
        await db.open()
        usage = SQLiteLlmUsage(db)
        try:
            for r in [
                row(0, "encode", "m1", True, 100),
                row(0, "encode", "m2", False, 0),
                row(1, "episode", "m1", True, 200),
                row(2, "encode", "m1", True, 300),
            ]:
                await usage.record(r)
            return await usage.summary(), await usage.summary(base + timedelta(days=1))
        finally:
            await db.close()

    everything, recent = asyncio.run(main())
    assert everything.totals.calls == 4 and everything.totals.failures == 1
    assert everything.totals.prompt_tokens == 600
    assert everything.totals.completion_tokens == 300
    assert everything.totals.cost_usd == pytest.approx(0.006)
    assert [k for k, _ in everything.by_day] == ["2026-03-01", "2026-03-02", "2026-03-03"]
    assert everything.by_day[0][1].calls == 2
    assert [(k, t.calls) for k, t in everything.by_operation] == [("encode", 3), ("episode", 1)]
    assert [(k, t.calls) for k, t in everything.by_model] == [("m1", 3), ("m2", 1)]
    assert recent.totals.calls == 2 and recent.totals.prompt_tokens == 500
    assert recent.totals.latency_ms_avg == pytest.approx(250.0)
    assert [k for k, _ in recent.by_day] == ["2026-03-02", "2026-03-03"]
