"""Reciprocal-rank fusion of the full-text and vector entry points."""

from __future__ import annotations

from collections.abc import Sequence


def rrf(rankings: Sequence[tuple[Sequence[int], float]], k: float) -> dict[int, float]:
    """Fused scores normalised to [0, 1] (1 = first in every ranking with weight).

    RRF needs no score calibration between BM25 and cosine, which live on unrelated scales.
    """
    scores: dict[int, float] = {}
    best = 0.0
    for ranked, weight in rankings:
        if weight <= 0:
            continue
        best += weight / (k + 1)
        for rank, seq in enumerate(ranked, start=1):
            scores[seq] = scores.get(seq, 0.0) + weight / (k + rank)
    if best <= 0:
        return {}
    return {seq: value / best for seq, value in scores.items()}
