"""Maximal marginal relevance: trade a little relevance for less repetition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mnemonic.llm.embedding import Vectors


def mmr_order(
    ranked: Sequence[tuple[int, float]],
    vectors: Mapping[int, Vectors],
    limit: int,
    lam: float,
) -> list[int]:
    """Pick ``min(limit, len(ranked))`` items greedily by ``lam*rel - (1-lam)*max_sim``.

    Relevance is normalised by the top score so the two terms share a scale. Items with no
    vector count as dissimilar to everything. The list is never shorter than it can be:
    every pick comes from the remaining pool, so diversity reorders but never drops.
    """
    want = min(limit, len(ranked))
    if want == 0:
        return []
    if lam >= 1.0:
        return [seq for seq, _ in ranked[:want]]
    top = max(score for _, score in ranked) or 1.0
    remaining = list(ranked)
    chosen: list[int] = []
    chosen_vecs: list[Vectors] = []
    while len(chosen) < want:
        best_i, best_value = 0, -np.inf
        stacked = np.vstack(chosen_vecs) if chosen_vecs else None
        for i, (seq, score) in enumerate(remaining):
            penalty = 0.0
            vec = vectors.get(seq)
            if stacked is not None and vec is not None:
                penalty = float(np.max(stacked @ vec))
            value = lam * (score / top) - (1 - lam) * penalty
            if value > best_value:
                best_i, best_value = i, value
        seq, _ = remaining.pop(best_i)
        chosen.append(seq)
        vec = vectors.get(seq)
        if vec is not None:
            chosen_vecs.append(vec)
    return chosen
