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
from mnemonic.index.columns import Traits
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
class Ranked:
    """A candidate's score and its parts, before its memory is read (``Scored``)."""

    seq: int
    score: float
    contributions: dict[str, float]
    signals: Signals
    multiplier: float
    strength: float  # the uncalibrated score: orders candidates within this query only


@dataclass(frozen=True, slots=True)
class Scored:
    memory: Memory
    score: float
    contributions: dict[str, float]
    signals: Signals
    multiplier: float
    strength: float

    @classmethod
    def of(cls, ranked: Ranked, memory: Memory) -> Scored:
        return cls(
            memory=memory,
            score=ranked.score,
            contributions=ranked.contributions,
            signals=ranked.signals,
            multiplier=ranked.multiplier,
            strength=ranked.strength,
        )


def traits_of(memory: Memory) -> Traits:
    """A read memory's ranking fields, as the in-memory columns hold them."""
    return Traits(
        type=memory.type.value,
        source=memory.source.value,
        state=memory.state.value,
        timestamp=ensure_utc(memory.timestamp).timestamp(),
        salience=memory.salience,
        significance=memory.significance,
        utility=memory.utility,
    )


def recency(timestamp: float, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now.timestamp() - timestamp) / 86400)
    return float(0.5 ** (age_days / half_life_days))


def score(seq: int, traits: Traits, signals: Signals, cfg: RecallConfig, now: datetime) -> Ranked:
    relevance_parts = {"direct": signals.direct, "spread": cfg.spread_weight * signals.spread}
    relevance = sum(relevance_parts.values())
    multiplier = (
        cfg.type_weights.get(traits.type, 1.0)
        * cfg.source_weights.get(traits.source, 1.0)
        * traits.utility
    )
    boosts = {
        "recency": cfg.recency_weight * recency(traits.timestamp, now, cfg.recency_half_life_days),
        "salience": cfg.salience_weight * traits.salience,
        "significance": cfg.significance_weight * traits.significance,
    }
    base = relevance * multiplier
    contributions = {name: value * multiplier for name, value in relevance_parts.items()}
    contributions.update({name: base * value for name, value in boosts.items()})
    total = sum(contributions.values())
    return Ranked(
        seq=seq,
        score=total,
        contributions=contributions,
        signals=signals,
        multiplier=multiplier,
        strength=total,
    )


def calibrate(scored: Sequence[Ranked], evidence: float, first: int | None = None) -> list[Ranked]:
    """Scores in [0, 1]: ``evidence x strength / best strength``, order unchanged.

    The best candidate scores the query's evidence, the others their share of it; the
    contributions are scaled by the same factor so they still sum to the score. With
    ``first``, only that many candidates of ``scored`` (strongest first) are returned:
    recall needs the pool, not the hundred behind it.
    """
    best = max((s.strength for s in scored), default=0.0)
    factor = evidence / best if best > 0 else 0.0
    return [
        replace(
            s,
            score=s.strength * factor,
            contributions={k: v * factor for k, v in s.contributions.items()},
        )
        for s in (scored if first is None else scored[:first])
    ]
