"""The pure half of LLM-aware encoding: the bounded question, the answer's checks, the
concept normaliser and the faithfulness check (tables, with fabricated entities)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemonic.api.enrichment_routes import parse_since
from mnemonic.encoding.llm_encode import (
    GIST_MAX_CHARS,
    MalformedAnswer,
    answer_schema,
    bounded_content,
    build_request,
    judge,
    normalise_concepts,
    parse_answer,
    unsupported_claims,
)
from mnemonic.store.models import MemoryType

SOURCE = (
    "We switched the session store from MySQL to Redis because MySQL row locks hurt at "
    "1,000 requests per second. Config is in src/app/session.py; pinned redis-py v5.0.1 "
    "and set the TTL to 30 minutes. Alice reviewed it; retry two times on timeout."
)


def _answer(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "gist": "Session store moved from MySQL to Redis",
        "summary": "Sessions moved from MySQL to Redis because row locks hurt at 1000 rps.",
        "concepts": ["session store", "Redis", "row locks", "caching"],
        "entities": ["MySQL", "Redis", "Alice"],
        "type": "decision",
        "significance": 0.8,
        "salience": 0.9,
    }
    base.update(overrides)
    return base


# ---- faithfulness ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("Sessions moved from MySQL to Redis.", []),
        ("The session store now uses Redis, reviewed by Alice.", []),
        ("Switched to Redis at 1000 requests per second.", []),  # 1,000 == 1000
        ("Pinned redis-py v5.0.1 in session.py; TTL of 30 minutes.", []),
        ("Retries 2 times on timeout.", []),  # "two" in the source
        ("Move Session Storage To Redis", []),  # a Title Case headline
        # fabricated names, numbers, versions and paths
        ("Sessions moved from MySQL to PostgreSQL.", ["PostgreSQL"]),
        ("The session store uses Redis, reviewed by Bob.", ["Bob"]),
        ("Kubernetes now runs the session store.", ["Kubernetes"]),  # opens the sentence
        ("Switched to Redis at 2000 requests per second.", ["2000"]),
        ("Pinned redis-py v5.2.0.", ["5.2.0", "v5.2.0"]),
        ("Config lives in src/app/db.py.", ["src/app/db.py", "db.py"]),
        ("TTL set to 45 minutes by the SRE team.", ["45", "SRE"]),
    ],
)
def test_claims_must_occur_in_the_source(text: str, missing: list[str]) -> None:
    assert sorted(unsupported_claims(SOURCE, [text])) == sorted(missing)


@pytest.mark.parametrize(
    ("entities", "missing"),
    [
        (["MySQL", "Redis", "src/app/session.py", "Alice"], []),
        (["mysql", "session store"], []),  # case does not matter, phrases do
        (["PostgreSQL", "Redis"], ["PostgreSQL"]),
        (["Ali"], ["Ali"]),  # a prefix of a word is not the word
        (["Redis Cluster"], ["Redis Cluster"]),
    ],
)
def test_listed_entities_must_occur_in_the_source(entities: list[str], missing: list[str]) -> None:
    assert unsupported_claims(SOURCE, [], entities) == missing


def test_judge_accepts_a_faithful_answer_and_rejects_an_invented_one() -> None:
    good = judge(SOURCE, _answer(), max_concepts=8, summary_max_chars=200)
    assert good.encoding is not None
    assert good.encoding.type is MemoryType.DECISION
    assert good.encoding.concepts == ("session store", "redis", "row locks", "caching")

    invented = _answer(summary="Sessions moved from MySQL to DynamoDB.")
    bad = judge(SOURCE, invented, max_concepts=8, summary_max_chars=200)
    assert bad.encoding is None
    assert bad.reason == "unfaithful"
    assert "DynamoDB" not in bad.detail  # the detail is safe to log: no content

    gist_only = judge(
        SOURCE, _answer(gist="Sessions now in Memcached"), max_concepts=8, summary_max_chars=200
    )
    assert gist_only.reason == "unfaithful"
    listed = judge(
        SOURCE, _answer(entities=["Redis", "Bob"]), max_concepts=8, summary_max_chars=200
    )
    assert listed.reason == "unfaithful"


# ---- the answer's shape ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"summary": "   "}, "summary is empty"),
        ({"summary": 3}, "summary must be a string"),
        ({"type": "opinion"}, "unknown type"),
        ({"concepts": "redis"}, "concepts must be a list"),
        ({"concepts": ["the", "42", "a"]}, "no usable concepts"),
        ({"entities": [1, 2]}, "entities must be a list"),
        ({"significance": 1.5}, "significance must be between 0 and 1"),
        ({"salience": True}, "salience must be a number"),
        ({"salience": float("nan")}, "salience must be between 0 and 1"),
    ],
)
def test_a_malformed_answer_is_refused_whole(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(MalformedAnswer, match=message):
        parse_answer(_answer(**overrides), max_concepts=8, summary_max_chars=200)
    verdict = judge(SOURCE, _answer(**overrides), max_concepts=8, summary_max_chars=200)
    assert verdict.encoding is None
    assert verdict.reason == "malformed"


def test_long_fields_are_cut_to_their_caps() -> None:
    long = "Redis " * 200
    parsed = parse_answer(
        _answer(summary=long, gist=long, entities=[f"e{i}" for i in range(40)]),
        max_concepts=2,
        summary_max_chars=120,
    )
    assert len(parsed.summary) <= 120
    assert parsed.summary.endswith("…")
    assert len(parsed.gist) <= GIST_MAX_CHARS
    assert len(parsed.concepts) == 2
    assert len(parsed.entities) == 12


@pytest.mark.parametrize(
    ("phrases", "expected"),
    [
        (["Redis", "redis", "REDIS"], ("redis",)),
        (["the Session Store", "session store", "session"], ("session store",)),
        (["Redis's locks", "  row   locks "], ("redis locks", "row locks")),
        (["redis", "redis cluster"], ("redis cluster",)),  # the longer phrase replaces
        (["42", "1.5", "a", "", "of the"], ()),
        (["v1.18.1", "setup.py"], ("v1.18.1", "setup.py")),
        (["one two three four five"], ()),  # too long to be a keyphrase
    ],
)
def test_concepts_are_normalised_and_deduplicated(
    phrases: list[str], expected: tuple[str, ...]
) -> None:
    assert normalise_concepts(phrases, 8) == expected


# ---- the question --------------------------------------------------------------------------


def test_the_question_is_bounded_and_carries_a_schema() -> None:
    content = "important detail " * 2000  # 34,000 characters
    request = build_request(content, max_content_chars=1000, max_concepts=8)
    assert len(request.user) < 1200
    assert "[… truncated]" in request.user
    assert request.schema == answer_schema(8)
    assert set(request.schema["required"]) == {
        "gist",
        "summary",
        "concepts",
        "entities",
        "type",
        "significance",
        "salience",
    }
    assert (request.operation, request.agent) == ("encode", "enrichment")
    fixed = build_request(
        "short", max_content_chars=1000, max_concepts=8, fixed_type=MemoryType.ERROR
    )
    assert '"error"' in fixed.user
    assert bounded_content("short", 10) == "short"


# ---- since ---------------------------------------------------------------------------------

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7d", NOW - timedelta(days=7)),
        ("12h", NOW - timedelta(hours=12)),
        ("30m", NOW - timedelta(minutes=30)),
        ("90s", NOW - timedelta(seconds=90)),
        ("2W", NOW - timedelta(weeks=2)),
        ("999999d", NOW - timedelta(days=3650)),  # capped
        ("2026-03-01T00:00:00+01:00", datetime(2026, 2, 28, 23, 0, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),  # no zone: UTC
    ],
)
def test_since_is_a_duration_or_a_time(text: str, expected: datetime) -> None:
    assert parse_since(text, NOW) == expected


@pytest.mark.parametrize("text", ["", "7", "d", "7 days", "-7d", "yesterday", "7d ago"])
def test_an_unreadable_since_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_since(text, NOW)
