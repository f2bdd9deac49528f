"""Metacognition's pure judgments: thresholds, each audit's value, the self-test's scoring,
grounded LLM questions, bounded suppression plans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.cognition.metacognition import (
    Probe,
    Rated,
    SuppressParams,
    Threshold,
    accept_question,
    audit_dead_ratio,
    audit_irrelevant_feedback,
    audit_self_test,
    audit_source_skew,
    audit_stale_consolidation,
    audit_store_size,
    audit_unembedded,
    judge,
    memory_question,
    plan_suppressions,
    score_probe,
    wants_consolidation,
)
from mnemonic.config import MetacognitionConfig

RANK = {"ok": 0, "warning": 1, "alert": 2}
HIGH = Threshold(0.5, 0.75)
LOW = Threshold(0.8, 0.6, lower_is_worse=True)


@pytest.mark.parametrize(
    ("value", "threshold", "expected"),
    [
        (None, HIGH, "ok"),
        (0.0, HIGH, "ok"),
        (0.49, HIGH, "ok"),
        (0.5, HIGH, "warning"),
        (0.74, HIGH, "warning"),
        (0.75, HIGH, "alert"),
        (1.0, HIGH, "alert"),
        (1.0, LOW, "ok"),
        (0.81, LOW, "ok"),
        (0.8, LOW, "warning"),
        (0.61, LOW, "warning"),
        (0.6, LOW, "alert"),
        (0.0, LOW, "alert"),
        (None, LOW, "ok"),
    ],
)
def test_judge_table(value: float | None, threshold: Threshold, expected: str) -> None:
    assert judge(value, threshold) == expected


def test_a_threshold_whose_alert_is_milder_is_refused() -> None:
    with pytest.raises(ValueError, match="milder"):
        Threshold(0.5, 0.4)
    with pytest.raises(ValueError, match="milder"):
        Threshold(0.6, 0.8, lower_is_worse=True)
    with pytest.raises(ValueError, match="warning level"):
        MetacognitionConfig(dead_ratio_warning=0.8, dead_ratio_alert=0.7)
    with pytest.raises(ValueError, match="lower is worse"):
        MetacognitionConfig(self_test_warning=0.5, self_test_alert=0.7)


_levels = st.tuples(st.floats(0, 1e12, allow_nan=False), st.floats(0, 1e12, allow_nan=False)).map(
    sorted
)


@given(levels=_levels, a=st.floats(0, 1e12), b=st.floats(0, 1e12), lower=st.booleans())
def test_severity_is_monotone_in_the_value(
    levels: list[float], a: float, b: float, lower: bool
) -> None:
    lo, hi = levels
    threshold = Threshold(hi, lo, lower_is_worse=True) if lower else Threshold(lo, hi)
    worse, better = (min(a, b), max(a, b)) if lower else (max(a, b), min(a, b))
    assert RANK[judge(worse, threshold)] >= RANK[judge(better, threshold)]


def test_audits_measure_what_they_say() -> None:
    f = audit_unembedded(200, 10, Threshold(0.02, 0.1))
    assert (f.kind, f.value, f.severity, f.threshold) == ("unembedded", 0.05, "warning", 0.02)
    assert audit_unembedded(0, 0, Threshold(0.02, 0.1)).value is None

    skew = audit_source_skew({"git": 95, "api": 5}, Threshold(0.9, 0.98), 50)
    assert (skew.value, skew.severity, skew.detail["largest"]) == (0.95, "warning", "git")
    few = audit_source_skew({"git": 10}, Threshold(0.9, 0.98), 50)
    assert few.value is None and few.severity == "ok" and "skipped" in few.detail

    dead = audit_dead_ratio(
        {"active": 20, "fading": 5, "archived": 60, "merged": 15}, HIGH, min_memories=50
    )
    assert dead.value == 0.75 and dead.severity == "alert" and dead.threshold == 0.75

    now = datetime(2026, 3, 1, tzinfo=UTC)
    stale = audit_stale_consolidation(
        now - timedelta(days=2), None, now, Threshold(86400, 3 * 86400)
    )
    assert stale.value == 2 * 86400 and stale.severity == "warning"
    never = audit_stale_consolidation(None, now - timedelta(days=5), now, Threshold(86400, 259200))
    assert never.severity == "alert" and never.detail["never_ran"] is True
    empty = audit_stale_consolidation(None, None, now, Threshold(86400, 259200))
    assert empty.value is None and empty.severity == "ok"

    fb = audit_irrelevant_feedback({"irrelevant": 6, "helpful": 4}, Threshold(0.3, 0.5), 10, 3600.0)
    assert fb.value == 0.6 and fb.severity == "alert"
    assert audit_irrelevant_feedback({"irrelevant": 6}, HIGH, 10, 1.0).value is None

    size = audit_store_size(3 << 30, Threshold(1 << 30, 4 << 30))
    assert size.kind == "store_size" and size.value == float(3 << 30)
    assert size.severity == "warning"


def test_self_test_scoring_and_rates() -> None:
    p1 = Probe("memory:a", "q", frozenset({1}))
    p2 = Probe("memory:b", "q", frozenset({2}), by="llm")
    p3 = Probe("pattern:x", "q", frozenset({7, 8}))
    r1 = score_probe(p1, [5, 1, 9])
    r2 = score_probe(p2, [5, 1, 9])
    r3 = score_probe(p3, [8])
    assert (r1.hit, r1.rank, r2.hit, r2.rank, r3.rank) == (True, 2, False, None, 1)
    f = audit_self_test([r1, r2, r3], 10, LOW)
    assert f.kind == "recall_self_test"
    assert f.value == pytest.approx(2 / 3) and f.severity == "warning"
    assert f.detail["memory_hit_rate"] == 0.5 and f.detail["pattern_hit_rate"] == 1.0
    assert f.detail["missed"] == ["memory:b"] and f.detail["llm_questions"] == 1
    assert f.detail["mean_rank"] == 1.5
    nothing = audit_self_test([], 10, LOW)
    assert nothing.value is None and nothing.severity == "ok"


def test_heuristic_probe_questions() -> None:
    assert memory_question("A summary.", ["redis sessions", "mysql", "latency"]) == (
        "redis sessions mysql latency"
    )
    assert memory_question("Keep sessions in Redis.", ["redis"]) == "Keep sessions in Redis."
    assert memory_question("  ", []) is None


NOTE = "Decided to keep sessions in Redis because MySQL was too slow under 4000 requests."


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"question": "Why are sessions kept in Redis?"}, "Why are sessions kept in Redis?"),
        ({"question": "Why are sessions kept in Postgres?"}, None),  # a name not in the note
        ({"question": "How many requests did MySQL fail at, 5000?"}, None),  # a number
        ({"question": "keep sessions in Redis"}, None),  # the note's own words
        ({"question": 3}, None),
        (None, None),
        ({}, None),
    ],
)
def test_llm_questions_must_be_grounded(
    answer: dict[str, object] | None, expected: str | None
) -> None:
    assert accept_question(answer, NOTE) == expected


def test_suppression_plan_is_bounded() -> None:
    params = SuppressParams(after=3, factor=0.5, floor=0.2, per_cycle=2)
    rated = [
        Rated(1, "a", 1.0, irrelevant=5, helpful=0),
        Rated(2, "b", 1.0, irrelevant=3, helpful=3),  # as often helpful: kept
        Rated(3, "c", 0.3, irrelevant=4, helpful=0),  # floored at 0.2
        Rated(4, "d", 0.2, irrelevant=9, helpful=0),  # at the floor already
        Rated(5, "e", 1.0, irrelevant=2, helpful=0),  # not repeatedly enough
        Rated(6, "f", 1.0, irrelevant=8, helpful=0),  # suppressed recently
    ]
    plan = plan_suppressions(rated, frozenset({6}), params)
    assert [(r.seq, new) for r, new in plan] == [(1, 0.5), (3, 0.2)]
    one = plan_suppressions(rated, frozenset(), SuppressParams(3, 0.5, 0.2, 1))
    assert [r.seq for r, _ in one] == [6]  # the most rated irrelevant that can still drop
    assert plan_suppressions(rated, frozenset(), SuppressParams(0, 0.5, 0.2, 5)) == []


def test_consolidation_is_wanted_only_for_its_kinds() -> None:
    dead = audit_dead_ratio({"archived": 80, "active": 20}, HIGH, 50)
    skew = audit_source_skew({"git": 100}, Threshold(0.9, 0.98), 50)
    assert skew.severity == "alert"
    assert wants_consolidation([dead, skew]) == ["dead_ratio"]
