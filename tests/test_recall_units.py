"""Table tests for the pure pieces of recall: fusion, spreading activation, MMR."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from mnemonic.recall.activation import SpreadSettings, spread
from mnemonic.recall.fusion import linear, rrf
from mnemonic.recall.mmr import mmr_order
from mnemonic.store.models import Association, Relation


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
