"""The pattern signal's index (index/patterns.py): centroids, thresholds, masks, reloads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.index.patterns import PatternEvidence, PatternSet


def _unit(*values: float) -> npt.NDArray[np.float32]:
    v = np.array(values, np.float32)
    return v / np.linalg.norm(v)


VECTORS = {
    1: _unit(1, 0, 0),
    2: _unit(0.9, 0.1, 0),
    3: _unit(0, 1, 0),
    4: _unit(0, 0.9, 0.1),
    5: _unit(0, 0, 1),
}


def lookup(seqs: Sequence[int]) -> Mapping[int, npt.NDArray[np.float32]]:
    return {s: VECTORS[s] for s in seqs if s in VECTORS}


def loaded(*patterns: PatternEvidence) -> PatternSet:
    out = PatternSet()
    out.load(patterns, lookup)
    return out


ALL = np.ones(8, bool)


def test_a_query_near_a_pattern_lifts_its_evidence_by_similarity_times_strength() -> None:
    patterns = loaded(
        PatternEvidence("p-x", "x things", 0.5, (1, 2)),
        PatternEvidence("p-y", "y things", 1.0, (3, 4)),
    )
    found = patterns.match(_unit(1, 0, 0), ALL, threshold=0.5, top=3)
    assert set(found) == {1, 2}  # y's centroid is orthogonal to the query
    centroid = (VECTORS[1] + VECTORS[2]) / np.linalg.norm(VECTORS[1] + VECTORS[2])
    assert abs(found[1].lift - float(centroid[0]) * 0.5) < 1e-6
    assert found[1].pattern_id == "p-x" and found[1].title == "x things"


def test_the_threshold_and_top_bound_what_matches() -> None:
    patterns = loaded(
        PatternEvidence("p-x", "x", 1.0, (1,)),
        PatternEvidence("p-y", "y", 1.0, (3,)),
    )
    query = _unit(1, 0.8, 0)
    assert set(patterns.match(query, ALL, threshold=0.5, top=2)) == {1, 3}
    assert set(patterns.match(query, ALL, threshold=0.5, top=1)) == {1}  # x is closer
    assert patterns.match(query, ALL, threshold=0.99, top=2) == {}
    assert patterns.match(query, ALL, threshold=0.5, top=0) == {}


def test_memories_the_query_may_not_see_are_never_lifted() -> None:
    patterns = loaded(PatternEvidence("p", "x", 1.0, (1, 2)))
    allowed = ALL.copy()
    allowed[2] = False
    assert set(patterns.match(_unit(1, 0, 0), allowed, threshold=0.0, top=1)) == {1}
    short = np.ones(2, bool)  # a seq past the mask (written after it was made) is left out
    assert set(patterns.match(_unit(1, 0, 0), short, threshold=0.0, top=1)) == {1}


def test_a_memory_in_two_patterns_keeps_its_best_lift() -> None:
    patterns = loaded(
        PatternEvidence("weak", "w", 0.2, (1, 2)),
        PatternEvidence("strong", "s", 0.9, (1, 2)),
    )
    found = patterns.match(_unit(1, 0, 0), ALL, threshold=0.0, top=2)
    assert found[1].pattern_id == "strong"


def test_reload_replaces_the_set_and_patterns_without_vectors_are_left_out() -> None:
    patterns = loaded(PatternEvidence("p", "x", 1.0, (1,)))
    assert len(patterns) == 1
    held = patterns.load([PatternEvidence("gone", "g", 1.0, (99,))], lookup)
    assert held == 0 and len(patterns) == 0
    assert patterns.match(_unit(1, 0, 0), ALL, threshold=-1.0, top=3) == {}


def test_a_query_of_another_dimension_matches_nothing() -> None:
    patterns = loaded(PatternEvidence("p", "x", 1.0, (1,)))
    assert patterns.match(np.ones(5, np.float32), ALL, threshold=-1.0, top=3) == {}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1), st.lists(st.integers(1, 5), min_size=1, max_size=5, unique=True)
        ),
        max_size=6,
    ),
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_lifts_are_bounded_and_only_on_allowed_evidence(
    specs: list[tuple[float, list[int]]], query: list[float], mask: list[bool]
) -> None:
    patterns = loaded(
        *(
            PatternEvidence(f"p{i}", "t", strength, tuple(seqs))
            for i, (strength, seqs) in enumerate(specs)
        )
    )
    vector = np.array(query, np.float32)
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        return
    allowed = np.array(mask, bool)
    found = patterns.match(vector / norm, allowed, threshold=-1.0, top=10)
    evidence = {s for _, seqs in specs for s in seqs}
    for seq, match in found.items():
        assert allowed[seq] and seq in evidence
        assert -1.0 - 1e-5 <= match.lift <= 1.0 + 1e-5
