"""Table tests for the pure pieces of recall: fusion, spreading activation, MMR, evidence
and calibration."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from mnemonic.recall.activation import SpreadSettings, spread
from mnemonic.recall.evidence import Calibration, coverage, query_evidence, vector_evidence
from mnemonic.recall.fusion import linear, rrf
from mnemonic.recall.mmr import Duplicates, jaccard, mmr_order, word_pairs
from mnemonic.recall.ranking import Scored, Signals, calibrate
from mnemonic.store.models import Association, Memory, Relation


def test_linear_fusion_keeps_gaps_and_lone_hits() -> None:
    fts = [(1, 10.0), (2, 9.0), (3, 1.0)]
    vec = [(3, 0.9), (1, 0.5)]
    fused = linear([(fts, 1.0), (vec, 1.0)], depths=(60, 60))
    # short lists hold everything that matched: the floor is 0, not their last score
    assert fused[1] == pytest.approx((1.0 + 0.5 / 0.9) / 2)
    assert fused[2] == pytest.approx(0.9 / 2)
    assert fused[3] == pytest.approx((0.1 + 1.0) / 2)
    assert linear([([(7, 3.0)], 1.0)], depths=(60,)) == {7: 1.0}
    assert linear([([(7, 3.0), (8, 3.0)], 1.0)], depths=(60,)) == {7: 1.0, 8: 1.0}


def test_linear_fusion_of_a_cut_list_floors_at_its_last_score() -> None:
    cut = [(1, 5.0), (2, 3.0), (3, 1.0)]
    fused = linear([(cut, 2.0), ([], 1.0)], depths=(3, 3))
    # the empty list keeps its weight: "nothing found by meaning" is evidence too
    assert fused == {1: pytest.approx(2 / 3), 2: pytest.approx(1 / 3), 3: pytest.approx(0.0)}
    assert linear([(cut, 0.0)], depths=(3,)) == {}


def test_rrf_is_normalised() -> None:
    fused = rrf([([(1, 0.0), (2, 0.0)], 1.0), ([(1, 0.0)], 1.0)], k=60)
    assert fused[1] == pytest.approx(1.0)
    assert fused[2] == pytest.approx((1 / 62) / (2 / 61))


GRAPH = {
    1: [(2, Relation.TEMPORAL, 1.0), (3, Relation.SIMILAR, 0.5)],
    2: [(1, Relation.TEMPORAL, 1.0), (4, Relation.TEMPORAL, 1.0)],
    3: [(1, Relation.SIMILAR, 0.5)],
    4: [(2, Relation.TEMPORAL, 1.0), (5, Relation.CONTRADICTS, 1.0)],
    5: [(4, Relation.CONTRADICTS, 1.0)],
}


async def _fetch(seqs: Sequence[int]) -> list[Association]:
    return [Association(s, t, rel, st) for s in seqs for t, rel, st in GRAPH.get(s, [])]


def _settings(**kw: object) -> SpreadSettings:
    base: dict[str, object] = {
        "hops": 3,
        "decay": 0.5,
        "threshold": 0.01,
        "max_nodes": 100,
        "frontier": 10,
        "relation_weights": {"temporal": 1.0, "similar": 0.4, "contradicts": 0.0},
    }
    base.update(kw)
    return SpreadSettings(**base)  # type: ignore[arg-type]


def test_spread_decays_per_hop_and_respects_relation_weights() -> None:
    result = asyncio.run(spread({1: 1.0}, _fetch, _settings()))
    assert result.activation[2] == pytest.approx(0.5 + 0.125)  # hop 1, then back via 4 at hop 3
    assert result.activation[3] == pytest.approx(0.5 * 0.4 * 0.5 + 0.25 * 0.5 * 0.4 * 0.5)
    assert result.activation[4] == pytest.approx(0.25)
    assert 5 not in result.activation  # contradicts carries nothing here
    assert result.via[4] == (2, 4)
    assert result.hops_run == 3


def test_spread_work_is_bounded() -> None:
    one_hop = asyncio.run(spread({1: 1.0}, _fetch, _settings(hops=1)))
    assert set(one_hop.activation) == {2, 3}
    pruned = asyncio.run(spread({1: 1.0}, _fetch, _settings(threshold=0.3)))
    assert set(pruned.activation) == {2}
    capped = asyncio.run(spread({1: 1.0}, _fetch, _settings(max_nodes=1)))
    assert set(capped.activation) == {2}
    assert asyncio.run(spread({}, _fetch, _settings())).activation == {}


def test_mmr_reorders_but_never_drops() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    ranked = [(1, 1.0), (2, 0.99), (3, 0.9), (4, 0.5)]
    vectors = {1: a, 2: a, 3: b}  # 4 has no vector yet
    assert mmr_order(ranked, vectors, 4, 1.0) == [1, 2, 3, 4]
    diverse = mmr_order(ranked, vectors, 4, 0.5)
    assert diverse[:2] == [1, 3]
    assert sorted(diverse) == [1, 2, 3, 4]
    assert mmr_order(ranked, vectors, 10, 0.5).__len__() == 4
    assert mmr_order([], vectors, 5, 0.5) == []


def test_mmr_discount_scales_with_relevance() -> None:
    """Diversity reorders candidates of similar relevance; it never lifts a barely
    relevant stray over a relevant memory because the stray is unlike the top hit."""
    a = np.array([1.0, 0.0], dtype=np.float32)
    near_a = np.array([0.8, 0.6], dtype=np.float32)  # cosine 0.8 with a
    b = np.array([0.0, 1.0], dtype=np.float32)  # unlike a, 0.6 with near_a
    ranked = [(1, 1.0), (2, 0.6), (3, 0.35)]
    vectors = {1: a, 2: near_a, 3: b}
    # 2 keeps 0.6 * (1 - 0.3 * 0.8) = 0.456 against 3's 0.35; a subtracted penalty
    # (0.7 * 0.6 - 0.3 * 0.8 = 0.18 against 0.245) would have put 3 first
    assert mmr_order(ranked, vectors, 3, 0.7) == [1, 2, 3]
    # near the top the discount still decides: a twin direction at 0.95 keeps 0.665
    twin = [(1, 1.0), (2, 0.95), (3, 0.9)]
    assert mmr_order(twin, {1: a, 2: a, 3: b}, 3, 0.7) == [1, 3, 2]
    # an opposite vector counts as unlike, not as more relevant
    spread = [(1, 1.0), (2, 0.5), (3, 0.55)]
    assert mmr_order(spread, {1: a, 2: -a, 3: b}, 3, 0.7) == [1, 3, 2]


def test_mmr_drops_near_copies_but_keeps_templated_lines() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    near_a = np.array([0.99, 0.141], dtype=np.float32)  # cosine ~0.99 with a
    body = " ".join(f"line {i} of the rate limiter module" for i in range(40))
    texts = {
        1: body + " DEFAULT = 100",
        2: body + " DEFAULT = 101",  # a one-line edit: a near copy of 1
        3: "Kubernetes pod crash loop on node 3: OOMKilled",
        4: "Kubernetes pod crash loop on node 4: OOMKilled",  # close vector, other fact
        5: "  THE SAME note, twice ",
        6: "the same   note, twice",  # same text after folding case and spacing
    }
    vectors = {1: a, 2: near_a, 3: b, 4: b, 5: a}  # 6 has no vector yet
    ranked = [(1, 1.0), (2, 0.99), (3, 0.9), (4, 0.8), (5, 0.5), (6, 0.4)]
    dup = Duplicates(cosine=0.95, words=0.8)
    order = mmr_order(ranked, vectors, 10, 1.0, texts=texts, duplicates=dup)
    assert order == [1, 3, 4, 5]
    # without texts (or with the check off) nothing is dropped
    assert mmr_order(ranked, vectors, 10, 1.0) == [1, 2, 3, 4, 5, 6]
    assert mmr_order(ranked, vectors, 2, 1.0, texts=texts, duplicates=dup) == [1, 3]


def test_word_pairs_jaccard() -> None:
    assert jaccard(word_pairs("a b c"), word_pairs("a b c")) == 1.0
    assert jaccard(word_pairs("a b c"), word_pairs("c b a")) == 0.0  # order matters
    assert jaccard(word_pairs("one"), word_pairs("One")) == 1.0
    assert jaccard(word_pairs(""), word_pairs("")) == 1.0


@pytest.mark.parametrize(
    ("cosine", "expected"),
    [(-0.2, 0.0), (0.1, 0.0), (0.3, 0.0), (0.525, 0.5), (0.75, 1.0), (0.95, 1.0)],
)
def test_vector_evidence_is_linear_between_floor_and_full(cosine: float, expected: float) -> None:
    assert vector_evidence(cosine, 0.3, 0.75) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("terms", "text", "expected"),
    [
        (["postgres", "disk"], "The Postgres container ran out of disk.", 1.0),
        (["deploys"], "deployment of the api", 1.0),  # light stemming, prefix match
        (["cafe"], "Le café est ouvert", 1.0),  # diacritics folded like the index does
        (["日本語"], "会議は日本語で行われました", 1.0),  # CJK: no word boundaries
        (["al", "dente", "pasta", "long", "boil"], "a long-running build", 0.2),
        (["worker-3"], "OOMKilled worker-3 again", 1.0),
        (["worker-3"], "OOMKilled worker-4 again", 0.0),
        (["ore"], "more", 0.0),  # a term starts a word; it is not any substring
        ([], "anything", 0.0),
    ],
)
def test_coverage(terms: list[str], text: str, expected: float) -> None:
    assert coverage(terms, text) == pytest.approx(expected)


CAL = Calibration(vector_floor=0.3, vector_full=0.75, words_power=2.0)


def test_query_evidence() -> None:
    # nothing near, nothing held: no evidence
    assert query_evidence(["zzzq", "plmk"], {1: 0.2, 2: 0.1}, {}, CAL) == 0.0
    # one common word of five is weak (under the default min_score 0.05); a stopword is none
    five = ["long", "boil", "pasta", "al", "dente"]
    assert query_evidence(five, {1: 0.15}, {1: "a long build"}, CAL) == pytest.approx(0.04)
    assert query_evidence(["the"], {}, {1: "the end"}, CAL) == 0.0
    assert query_evidence(["pasta", "recipe"], {}, {1: "build recipe"}, CAL) == 0.25
    # every word held: full; meaning and words combine, never above 1
    assert query_evidence(["postgres"], {}, {1: "postgres"}, CAL) == 1.0
    both = query_evidence(["disk", "full", "ci"], {1: 0.525}, {1: "disk full"}, CAL)
    assert both == pytest.approx(1 - 0.5 * (1 - 4 / 9))
    # the strongest hit decides
    assert query_evidence([], {1: 0.525, 2: 0.3}, {}, CAL) == pytest.approx(0.5)
    # the clauses' mean best cosine is evidence too, when it beats every hit
    assert query_evidence([], {1: 0.2}, {}, CAL, clause_cosine=0.525) == pytest.approx(0.5)
    assert query_evidence([], {1: 0.525}, {}, CAL, clause_cosine=0.4) == pytest.approx(0.5)
    assert query_evidence([], {1: 0.2}, {}, CAL, clause_cosine=0.3) == 0.0


def _scored(seq: int, strength: float) -> Scored:
    memory = cast(Memory, SimpleNamespace(seq=seq))
    parts = {"direct": strength * 0.75, "recency": strength * 0.25}
    signals = Signals(direct=0.0, spread=0.0, fts_rank=None, vector_rank=None, cosine=None)
    return Scored(memory, strength, parts, signals, 1.0, strength)


def test_calibrate_scales_to_the_evidence_and_keeps_sums() -> None:
    out = calibrate([_scored(1, 2.0), _scored(2, 1.0), _scored(3, 0.0)], 0.8)
    assert [s.score for s in out] == pytest.approx([0.8, 0.4, 0.0])
    assert [s.strength for s in out] == [2.0, 1.0, 0.0]
    for s in out:
        assert sum(s.contributions.values()) == pytest.approx(s.score)
    assert [s.score for s in calibrate([_scored(1, 2.0)], 0.0)] == [0.0]
    assert calibrate([], 0.7) == []
