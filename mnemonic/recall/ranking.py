"""The final score of a candidate and its explanation.

``strength = relevance x multiplier x (1 + boosts)`` where relevance = direct hit strength
plus weighted spread activation, the multiplier comes from type, source and feedback
utility, and the boosts from recency, salience and significance. Strength orders one
query's candidates but means nothing across queries (fusion rescales every query's best
hit to 1), so the score a caller sees is calibrated: ``score = evidence x strength / best
strength``, where evidence in [0, 1] is the query's absolute entry-point evidence
(``evidence.py``). The explanation lists additive contributions that sum to the score
exactly, so a caller can see what moved a result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from mnemonic.config import RecallConfig
from mnemonic.store.models import Memory
from mnemonic.timeutil import ensure_utc


@dataclass(frozen=True, slots=True)
class Signals:
    direct: float
    spread: float
    fts_rank: int | None
    vector_rank: int | None
    cosine: float | None


@dataclass(frozen=True, slots=True)
class Scored:
    memory: Memory
    score: float
    contributions: dict[str, float]
    signals: Signals
    multiplier: float
    strength: float  # the uncalibrated score: orders candidates within this query only


def recency(timestamp: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - ensure_utc(timestamp)).total_seconds() / 86400)
    return float(0.5 ** (age_days / half_life_days))


def score(memory: Memory, signals: Signals, cfg: RecallConfig, now: datetime) -> Scored:
    relevance_parts = {"direct": signals.direct, "spread": cfg.spread_weight * signals.spread}
    relevance = sum(relevance_parts.values())
    multiplier = (
        cfg.type_weights.get(memory.type.value, 1.0)
        * cfg.source_weights.get(memory.source.value, 1.0)
        * memory.utility
    )
    boosts = {
        "recency": cfg.recency_weight * recency(memory.timestamp, now, cfg.recency_half_life_days),
        "salience": cfg.salience_weight * memory.salience,
        "significance": cfg.significance_weight * memory.significance,
    }
    base = relevance * multiplier
    contributions = {name: value * multiplier for name, value in relevance_parts.items()}
    contributions.update({name: base * value for name, value in boosts.items()})
    total = sum(contributions.values())
    return Scored(
        memory=memory,
        score=total,
        contributions=contributions,
        signals=signals,
        multiplier=multiplier,
        strength=total,
    )


def calibrate(scored: Sequence[Scored], evidence: float) -> list[Scored]:
    """Scores in [0, 1]: ``evidence x strength / best strength``, order unchanged.

    The best candidate scores the query's evidence, the others their share of it; the
    contributions are scaled by the same factor so they still sum to the score.
    """
    best = max((s.strength for s in scored), default=0.0)
    factor = evidence / best if best > 0 else 0.0
    return [
        replace(
            s,
            score=s.strength * factor,
            contributions={k: v * factor for k, v in s.contributions.items()},
        )
        for s in scored
    ]
