"""The pure parts of the LLM layer: reading JSON out of small models' replies, checking it
against a schema, prices, retry delays, Retry-After and the circuit breaker's states."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.llm.completion.breaker import CircuitBreaker
from mnemonic.llm.completion.client import BACKOFF_CAP_S, retry_delay
from mnemonic.llm.completion.prices import DEFAULT_PRICES, Price, estimate_cost, price_table
from mnemonic.llm.completion.provider import kind_for_status, parse_retry_after
from mnemonic.llm.completion.structured import NotJson, extract_json, parse_answer, validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 20},
        "salience": {"type": "number", "minimum": 0, "maximum": 1},
        "kind": {"enum": ["decision", "error"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "count": {"type": "integer"},
    },
    "required": ["title", "salience"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n{"a": 1}\n', {"a": 1}),
        ('Sure! Here is the JSON:\n```json\n{"a": 1}\n```\nHope that helps.', {"a": 1}),
        ('```\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('The answer is {"a": "x}y"} as requested.', {"a": "x}y"}),
        ('<think>maybe {"a": 0}? no.</think>{"a": 2}', {"a": 2}),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ('text {"a": {"b": "\\"}"}} tail {"c": 3}', {"a": {"b": '"}'}}),
        ("[1, 2]", [1, 2]),
    ],
)
def test_extract_json_finds_the_object(reply: str, expected: Any) -> None:
    assert extract_json(reply) == expected


@pytest.mark.parametrize(
    "reply",
    ["", "   ", "I cannot answer that.", '{"a": 1', "{'a': 1}", "<think>{}</think>", "{a: 1}"],
)
def test_extract_json_refuses_what_is_not_json(reply: str) -> None:
    with pytest.raises(NotJson):
        extract_json(reply)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"salience": 0.5}, 'missing required field "title"'),
        ({"title": "", "salience": 0.5}, "$.title: length must be at least 1"),
        ({"title": "x" * 21, "salience": 0.5}, "length must be at most 20"),
        ({"title": "t", "salience": 1.5}, "$.salience must be at most 1"),
        ({"title": "t", "salience": "high"}, "$.salience: expected number, got string"),
        ({"title": "t", "salience": True}, "expected number, got boolean"),
        ({"title": "t", "salience": 0, "kind": "note"}, '$.kind: must be one of "decision"'),
        ({"title": "t", "salience": 0, "tags": ["a", 1]}, "$.tags[1]: expected string"),
        ({"title": "t", "salience": 0, "tags": ["a"] * 4}, "item count must be at most 3"),
        ({"title": "t", "salience": 0, "count": 1.5}, "$.count: expected integer"),
        ({"title": "t", "salience": 0, "extra": 1}, 'unexpected field "extra"'),
    ],
)
def test_validate_names_each_problem(value: dict[str, Any], fragment: str) -> None:
    errors = validate(value, SCHEMA)
    assert any(fragment in e for e in errors), errors


def test_validate_accepts_a_valid_object_and_integral_floats() -> None:
    value = {"title": "t", "salience": 1, "kind": "error", "tags": [], "count": 3.0}
    assert validate(value, SCHEMA) == []


def test_validate_any_of_and_type_lists() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert validate(None, schema) == []
    assert validate(3, schema) == ["$: matches none of the allowed shapes"]
    assert validate(None, {"type": ["string", "null"]}) == []


def test_parse_answer_classifies_failures() -> None:
    assert parse_answer('{"title": "t", "salience": 0.2}', SCHEMA) == (
        {"title": "t", "salience": 0.2},
        "",
        "",
    )
    assert parse_answer("no json here", SCHEMA)[2] == "invalid_json"
    assert parse_answer("[1]", SCHEMA)[2] == "invalid_json"
    value, problem, kind = parse_answer('{"title": "t"}', SCHEMA)
    assert value is None and kind == "schema_invalid" and "salience" in problem


# ---- prices ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o-mini", (1000 * 0.15 + 500 * 0.60) / 1e6),
        ("gpt-4o-mini-2024-07-18", (1000 * 0.15 + 500 * 0.60) / 1e6),  # longest prefix wins
        ("gpt-4o", (1000 * 2.50 + 500 * 10.0) / 1e6),
        ("openai/gpt-4o", (1000 * 2.50 + 500 * 10.0) / 1e6),  # litellm's provider prefix
        ("anthropic/claude-3-5-haiku-20241022", (1000 * 0.80 + 500 * 4.0) / 1e6),
        ("llama3.2:3b", 0.0),  # local models cost nothing
        ("", 0.0),
    ],
)
def test_estimate_cost(model: str, expected: float) -> None:
    assert estimate_cost(model, 1000, 500, DEFAULT_PRICES) == pytest.approx(expected)


def test_config_prices_override_and_extend_the_table() -> None:
    table = price_table({"gpt-4o-mini": Price(1.0, 2.0), "llama": Price(0.01, 0.01)})
    assert estimate_cost("gpt-4o-mini", 1_000_000, 0, table) == pytest.approx(1.0)
    assert estimate_cost("llama3.2:3b", 1_000_000, 1_000_000, table) == pytest.approx(0.02)
    assert estimate_cost("gpt-4o", 1_000_000, 0, table) == pytest.approx(2.5)  # untouched


# ---- retries -------------------------------------------------------------------------------


@given(st.integers(0, 20), st.floats(0, 1))
def test_backoff_is_jittered_and_bounded(attempt: int, rand: float) -> None:
    delay = retry_delay(attempt, None, rand)
    ceiling = min(BACKOFF_CAP_S, 0.5 * 2**attempt)
    assert ceiling / 2 <= delay <= ceiling


@given(st.floats(0, 3600), st.floats(0, 1))
def test_retry_after_is_honoured_with_a_little_jitter(after: float, rand: float) -> None:
    delay = retry_delay(0, after, rand)
    assert after <= delay <= after * 1.1 + 1e-9


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("2", 2.0),
        (" 0.5 ", 0.5),
        ("0", 0.0),
        ("-1", None),
        ("nan", None),
        ("100000", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header) == expected


def test_parse_retry_after_reads_an_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = parse_retry_after(when)
    assert seconds is not None and 25 <= seconds <= 31


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "rate_limited"),
        (500, "server"),
        (503, "server"),
        (401, "auth"),
        (403, "auth"),
        (404, "not_found"),
        (400, "unsupported"),
        (422, "unsupported"),
        (409, "bad_request"),
    ],
)
def test_status_kinds(status: int, kind: str) -> None:
    assert kind_for_status(status) == kind


# ---- breaker -------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_n_failures_and_probes_once_after_the_cooldown() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(3, 10.0, clock)
    for _ in range(2):
        assert breaker.allow()
        breaker.failure()
    assert breaker.state == "closed"
    breaker.success()  # a success resets the count: failures must be consecutive
    for _ in range(3):
        assert breaker.allow()
        breaker.failure()
    assert breaker.state == "open" and breaker.times_opened == 1
    assert not breaker.allow() and not breaker.would_allow()
    assert breaker.retry_in() == pytest.approx(10.0)
    clock.now += 9.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.state == "half_open" and breaker.would_allow()
    assert breaker.allow()  # the probe
    assert not breaker.allow()  # only one
    breaker.failure()  # the probe failed: open for another cool-down
    assert breaker.state == "open" and breaker.times_opened == 2
    clock.now += 10
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed" and breaker.consecutive_failures == 0
    assert breaker.allow() and breaker.allow()


def test_a_released_probe_lets_the_next_caller_probe() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(1, 5.0, clock)
    breaker.failure()
    clock.now += 5
    assert breaker.allow()
    breaker.release()  # cancelled before a verdict
    assert breaker.state == "half_open"
    assert breaker.allow()


@given(st.lists(st.sampled_from(["ok", "fail", "tick", "allow"]), max_size=60))
def test_breaker_state_is_always_consistent(ops: list[str]) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(2, 3.0, clock)
    for op in ops:
        if op == "ok":
            breaker.success()
        elif op == "fail":
            breaker.failure()
        elif op == "tick":
            clock.now += 1.0
        else:
            breaker.allow()
        assert breaker.state in ("closed", "open", "half_open")
        assert (breaker.state == "open") == (breaker.retry_in() > 0)
        if breaker.state == "closed":
            assert breaker.consecutive_failures < 2 and breaker.would_allow()
