"""Fusion of the full-text and vector entry points into one direct-hit strength in [0, 1]."""

from __future__ import annotations

from collections.abc import Sequence

Ranking = tuple[Sequence[tuple[int, float]], float]  # ((seq, score) best first, weight)


def linear(rankings: Sequence[Ranking], depths: Sequence[int]) -> dict[int, float]:
    """Weighted mean of min-max normalised scores (absent from a list = 0).

    Unlike rank fusion it keeps how far apart hits are: a BM25 hit far above the rest
    stays far above. Measured on the LoCoMo dev split: R@10 0.663 against 0.600 for RRF,
    all else equal. The floor of the scale is the last score of a list cut at its depth
    (the best of what was left out); a list that ended before ``depth`` holds everything
    that matched, so its floor is 0 and a lone or tied hit keeps its full strength.
    """
    total = sum(weight for _, weight in rankings if weight > 0)
    if total <= 0:
        return {}
    fused: dict[int, float] = {}
    for (ranked, weight), depth in zip(rankings, depths, strict=True):
        if weight <= 0 or not ranked:
            continue
        high = ranked[0][1]
        low = ranked[-1][1] if len(ranked) >= depth else min(0.0, ranked[-1][1])
        span = high - low
        for seq, value in ranked:
            share = (value - low) / span if span > 0 else 1.0
            fused[seq] = fused.get(seq, 0.0) + weight * max(0.0, share)
    return {seq: value / total for seq, value in fused.items()}


def rrf(rankings: Sequence[Ranking], k: float) -> dict[int, float]:
    """Reciprocal-rank fusion, normalised so 1 = first in every weighted list."""
    scores: dict[int, float] = {}
    best = 0.0
    for ranked, weight in rankings:
        if weight <= 0:
            continue
        best += weight / (k + 1)
        for rank, (seq, _) in enumerate(ranked, start=1):
            scores[seq] = scores.get(seq, 0.0) + weight / (k + rank)
    if best <= 0:
        return {}
    return {seq: value / best for seq, value in scores.items()}
