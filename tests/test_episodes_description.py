"""Describing an episode (``cognition/episode_description.py``): the heuristic in tables,
and what of an LLM answer is kept (only what the members' own text grounds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.cognition.episode_description import (
    Description,
    Limits,
    MemberText,
    apply_answer,
    build_request,
    command_of,
    describe,
    files_of,
    grounded,
    normalise_concept,
    salience_of,
    top_concepts,
    vocabulary,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LIMITS = Limits(summary_max_chars=200, title_max_chars=60, max_concepts=4)


def member(
    n: int,
    summary: str,
    *,
    concepts: tuple[str, ...] = (),
    source: str = "api",
    salience: float = 0.5,
    content: str | None = None,
    metadata: dict[str, Any] | None = None,
    kind: str = "general",
) -> MemberText:
    return MemberText(
        id=f"m{n}",
        seq=n,
        timestamp=T0 + timedelta(minutes=n),
        summary=summary,
        content=content if content is not None else summary,
        concepts=concepts,
        type=kind,
        source=source,
        salience=salience,
        metadata=metadata or {},
    )


SESSION = [
    member(1, "Redis cache timeouts in staging", concepts=("redis", "staging"), salience=0.4),
    member(
        2,
        "Raised the Redis pool size to 50",
        concepts=("Redis", "pool size"),
        salience=0.9,
        kind="decision",
    ),
    member(
        3,
        "pytest -k cache",
        source="terminal",
        content="pytest -k cache\n(exit status 1: failed)",
        concepts=("cache",),
        salience=0.3,
    ),
    member(
        4,
        "config/redis.yaml changed",
        source="filesystem",
        metadata={
            "watcher": "filesystem",
            "kind": "file_changed",
            "path": "/src/config/redis.yaml",
        },
        concepts=("redis.yaml", "redis"),
        salience=0.5,
    ),
    member(
        5,
        "Commit: raise pool size",
        source="git",
        metadata={"path": "/src/app", "event": {"repo": "/src/app", "files": ["a.py", "b/c.py"]}},
        concepts=("pool size",),
        salience=0.5,
    ),
]


# ---- the heuristic ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Redis", "redis"),
        ("  Pool   Size ", "pool size"),
        ("redis.", "redis"),
        ("ＲＥＤＩＳ", "redis"),  # full-width folds (NFKC)
        ("42", None),  # no letter
        ("...", None),
        ("x" * 61, None),
    ],
)
def test_normalise_concept(raw: str, expected: str | None) -> None:
    assert normalise_concept(raw) == expected


def test_concepts_rank_by_members_naming_them_then_first_seen() -> None:
    # redis: 3 members (1, 2, 4; "Redis" normalises), pool size: 2, then first seen
    assert top_concepts(SESSION, 3) == ("redis", "pool size", "staging")
    twice_in_one = [member(1, "a", concepts=("x", "X", "y")), member(2, "b", concepts=("y",))]
    assert top_concepts(twice_in_one, 5) == ("y", "x")


@pytest.mark.parametrize(
    ("m", "files", "command"),
    [
        (SESSION[3], ["/src/config/redis.yaml"], None),
        (SESSION[4], ["/src/app/a.py", "/src/app/b/c.py"], None),
        (SESSION[2], [], "pytest -k cache"),
        (SESSION[0], [], None),
        (member(9, "x", source="git", metadata={"event": {"files": "not a list"}}), [], None),
        (member(9, "x", source="filesystem", metadata={"path": 3}), [], None),
        (member(9, "", source="terminal", content="  \n  "), [], None),
    ],
)
def test_files_and_commands(m: MemberText, files: list[str], command: str | None) -> None:
    assert files_of(m) == files
    assert command_of(m) == command


def test_heuristic_description_of_a_session() -> None:
    d = describe("shop", SESSION, LIMITS)
    assert d.title == "shop: redis, pool size, staging"
    assert d.concepts == ("redis", "pool size", "staging", "cache")
    assert d.files == ("/src/config/redis.yaml", "/src/app/a.py", "/src/app/b/c.py")
    assert d.commands == ("pytest -k cache",)
    assert d.described_by == "heuristic"
    # the most salient summaries, in time order, within the bound
    assert d.summary.startswith("Redis cache timeouts in staging; Raised the Redis pool size")
    assert len(d.summary) <= LIMITS.summary_max_chars
    assert d.salience == pytest.approx(0.5 * 0.9 + 0.5 * (0.4 + 0.9 + 0.3 + 0.5 + 0.5) / 5)


def test_heuristic_title_without_concepts_or_project() -> None:
    d = describe("", [member(1, "hello"), member(2, "world")], LIMITS)
    assert d.title == "2 memories"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=300), st.floats(min_value=-1, max_value=2)),
        min_size=1,
        max_size=30,
    )
)
def test_heuristic_bounds_hold_for_any_members(items: list[tuple[str, float]]) -> None:
    members = [member(i, text, salience=s) for i, (text, s) in enumerate(items)]
    d = describe("p", members, LIMITS)
    assert 0.0 <= d.salience <= 1.0
    assert 0.0 <= salience_of(members) <= 1.0
    assert len(d.summary) <= LIMITS.summary_max_chars
    assert len(d.title) <= LIMITS.title_max_chars
    assert len(d.concepts) <= LIMITS.max_concepts


# ---- with an LLM --------------------------------------------------------------------------------


def test_the_request_carries_the_schema_and_the_members_in_time_order() -> None:
    request = build_request("shop", SESSION, Limits(llm_max_members=3))
    assert (request.operation, request.agent) == ("episode_describe", "episoding")
    assert request.schema["required"] == ["title", "summary", "concepts"]
    lines = [line for line in request.user.splitlines() if line.startswith("- ")]
    # the three most salient (0.9, 0.5, 0.5), shown in time order
    assert [line.split("] ", 1)[1] for line in lines] == [
        "Raised the Redis pool size to 50",
        "config/redis.yaml changed",
        "Commit: raise pool size",
    ]
    assert "2 less salient memories not shown" in request.user


@pytest.mark.parametrize(
    ("text", "strict", "ok"),
    [
        ("Raised the Redis pool size", True, True),
        ("Tuning the redis pool", True, True),  # "tuning" is new, but most words are known
        ("Migrating to Memcached", True, False),  # a name the members never mention
        ("Bumped Redis to 7.2", False, False),  # a number they never mention
        ("Raised the Redis pool size to 50 after staging timeouts.", False, True),
        ("Something about things", True, False),  # nothing grounded
        ("", True, False),
    ],
)
def test_grounding(text: str, strict: bool, ok: bool) -> None:
    assert grounded(text, vocabulary("shop", SESSION), strict=strict) is ok


def _heuristic() -> Description:
    return describe("shop", SESSION, LIMITS)


@pytest.mark.parametrize(
    ("answer", "title", "summary", "concepts", "by"),
    [
        (
            {
                "title": "Redis pool tuning",
                "summary": "Staging timeouts led to a larger Redis pool.",
                "concepts": ["Redis", "pool size", "redis", "kubernetes"],
            },
            "Redis pool tuning",
            "Staging timeouts led to a larger Redis pool.",
            ("redis", "pool size"),  # normalised, deduplicated, the invented one dropped
            "llm",
        ),
        (  # a fabricated title falls back; the grounded summary is kept
            {"title": "Kafka migration", "summary": "Redis pool raised.", "concepts": []},
            "shop: redis, pool size, staging",
            "Redis pool raised.",
            ("redis", "pool size", "staging", "cache"),
            "llm",
        ),
        (  # nothing grounded: all heuristic
            {"title": "Kafka", "summary": "Moved to Kafka 3.6.", "concepts": ["kafka"]},
            "shop: redis, pool size, staging",
            None,
            ("redis", "pool size", "staging", "cache"),
            "heuristic",
        ),
        (None, "shop: redis, pool size, staging", None, None, "heuristic"),
        ({"title": 3, "summary": ["x"], "concepts": "redis"}, None, None, None, "heuristic"),
    ],
)
def test_apply_answer_keeps_only_grounded_parts(
    answer: dict[str, Any] | None,
    title: str | None,
    summary: str | None,
    concepts: tuple[str, ...] | None,
    by: str,
) -> None:
    heuristic = _heuristic()
    d = apply_answer(answer, heuristic, "shop", SESSION, LIMITS)
    assert d.title == (title or heuristic.title)
    assert d.summary == (summary or heuristic.summary)
    assert d.concepts == (concepts or heuristic.concepts)
    assert d.described_by == by
    assert (d.files, d.commands, d.salience) == (
        heuristic.files,
        heuristic.commands,
        heuristic.salience,
    )


def test_an_overlong_answer_is_cut_to_the_limits() -> None:
    answer = {"title": "Redis pool " * 20, "summary": "Redis pool. " * 100, "concepts": []}
    d = apply_answer(answer, _heuristic(), "shop", SESSION, LIMITS)
    assert len(d.title) <= LIMITS.title_max_chars
    assert len(d.summary) <= LIMITS.summary_max_chars
    assert d.described_by == "llm"
