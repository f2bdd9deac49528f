"""``GET /api/v1/llm/status`` and ``GET /api/v1/llm/usage`` over the real app, with and
without an LLM; answers match the OpenAPI document and bad parameters are 422."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema_rs
import pytest
from starlette.testclient import TestClient
from support.openai_server import OpenAIServer, chat_reply

from mnemonic.llm.completion.base import CompletionRequest

CHAT = "/v1/chat/completions"
REQUEST = CompletionRequest(
    operation="episode",
    agent="episoding",
    system="Title this episode.",
    user="fixed the login bug",
    schema={"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
)


def check_documented(client: TestClient, template: str, response: Any) -> None:
    """The answer validates against the schema the document gives its status."""
    spec = client.get("/openapi.json").json()
    answers = spec["paths"][template]["get"]["responses"]
    status = str(response.status_code)
    assert status in answers, (template, status, response.text)
    schema = answers[status]["content"]["application/json"]["schema"]
    document = {**schema, "components": spec["components"]}
    errors = [e.message for e in jsonschema_rs.validator_for(document).iter_errors(response.json())]
    assert errors == [], errors[:3]


def test_without_an_llm_status_says_heuristic_and_usage_is_empty(client: TestClient) -> None:
    status = client.get("/api/v1/llm/status")
    assert status.status_code == 200
    body = status.json()
    assert body["configured"] is False and body["mode"] == "heuristic"
    assert body["provider"] == "none" and body["breaker"] is None
    check_documented(client, "/api/v1/llm/status", status)
    usage = client.get("/api/v1/llm/usage")
    assert usage.status_code == 200
    assert usage.json()["totals"]["calls"] == 0 and usage.json()["by_day"] == []
    check_documented(client, "/api/v1/llm/usage", usage)


def test_with_an_llm_calls_show_in_status_and_usage(
    make_client: Callable[..., TestClient],
) -> None:
    with OpenAIServer() as server:
        server.set_handler(
            CHAT,
            lambda r: chat_reply('{"title": "login fix"}', prompt_tokens=50, completion_tokens=7),
        )
        base_url = server.base_url
        client = make_client(
            llm={
                "provider": "openai",
                "base_url": base_url,
                "model": "gpt-4o-mini",  # a priced model: the cost is not zero
                "json_mode": "prompt",
            }
        )
        completer = client.daemon.completer  # type: ignore[attr-defined]
        for _ in range(2):
            answer = client.portal.call(completer.complete_json, REQUEST)  # type: ignore[union-attr]
            assert answer == {"title": "login fix"}
        status = client.get("/api/v1/llm/status")
        usage = client.get("/api/v1/llm/usage", params={"days": 1})
        older = client.get("/api/v1/llm/usage", params={"since": "2000-01-01T00:00:00Z"})
        later = client.get("/api/v1/llm/usage", params={"since": "2999-01-01T00:00:00Z"})
    body = status.json()
    assert body["configured"] is True and body["mode"] == "llm"
    assert (body["provider"], body["model"]) == ("openai", "gpt-4o-mini")
    assert body["base_url"] == base_url
    assert body["calls"] == 2 and body["breaker"]["state"] == "closed"
    check_documented(client, "/api/v1/llm/status", status)
    summary = usage.json()
    check_documented(client, "/api/v1/llm/usage", usage)
    assert summary["totals"]["calls"] == 2
    assert summary["totals"]["prompt_tokens"] == 100
    assert summary["totals"]["completion_tokens"] == 14
    assert summary["totals"]["cost_usd"] == pytest.approx((100 * 0.15 + 14 * 0.6) / 1e6, rel=1e-3)
    assert [g["key"] for g in summary["by_operation"]] == ["episode"]
    assert [g["key"] for g in summary["by_model"]] == ["gpt-4o-mini"]
    assert len(summary["by_day"]) == 1 and summary["by_day"][0]["calls"] == 2
    assert summary["since"] is not None
    assert older.json()["totals"]["calls"] == 2
    assert later.json()["totals"]["calls"] == 0


@pytest.mark.parametrize(
    "params",
    [
        {"days": "0"},
        {"days": "-3"},
        {"days": "many"},
        {"since": "yesterday"},
        {"since": "2026-01-01T00:00:00Z", "days": "1"},
        {"bogus": "1"},
    ],
)
def test_bad_usage_parameters_are_422(client: TestClient, params: dict[str, str]) -> None:
    response = client.get("/api/v1/llm/usage", params=params)
    assert response.status_code == 422, response.text
    assert response.json()["details"]
    check_documented(client, "/api/v1/llm/usage", response)


def test_llm_routes_need_the_token(client: TestClient) -> None:
    for path in ("/api/v1/llm/status", "/api/v1/llm/usage"):
        response = client.get(path, headers={"Authorization": "Bearer wrong"})
        assert response.status_code == 401
