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
    seqs = [seq for seq, _ in ranked]
    if lam >= 1.0:
        return seqs[:want]
    top = max(score for _, score in ranked) or 1.0
    relevance = np.array([score / top for _, score in ranked], dtype=np.float64)
    dim = next((len(v) for v in vectors.values()), 0)
    matrix = np.zeros((len(seqs), dim), dtype=np.float32)
    for i, seq in enumerate(seqs):
        vec = vectors.get(seq)
        if vec is not None:
            matrix[i] = vec
    # Rows without a vector are zero, so their similarity to everything is 0.
    similarity = matrix @ matrix.T
    closest = np.zeros(len(seqs), dtype=np.float64)
    available = np.ones(len(seqs), dtype=bool)
    chosen: list[int] = []
    while len(chosen) < want:
        value = np.where(available, lam * relevance - (1 - lam) * closest, -np.inf)
        pick = int(np.argmax(value))
        chosen.append(pick)
        available[pick] = False
        closest = np.maximum(closest, similarity[pick])
    return [seqs[i] for i in chosen]
