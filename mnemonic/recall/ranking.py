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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from mnemonic.config import RecallConfig
from mnemonic.index.columns import Traits
from mnemonic.recall.when import TimeWindow
from mnemonic.store.models import Memory
from mnemonic.timeutil import ensure_utc


@dataclass(frozen=True, slots=True)
class Signals:
    direct: float
    spread: float
    fts_rank: int | None
    vector_rank: int | None
    cosine: float | None
    pattern: float = 0.0  # lift from a pattern the query matched (index/patterns.py)
    pattern_id: str | None = None
    pattern_title: str | None = None
    clause_rank: int | None = None  # among the nearest of its clauses and speaker-free wording


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate's score and its parts, before its memory is read (``Scored``)."""

    seq: int
    score: float
    contributions: dict[str, float]
    signals: Signals
    multiplier: float
    strength: float  # the uncalibrated score: orders candidates within this query only
    superseded_by: tuple[int, ...] = ()  # seqs of current memories that replace this one
    supersedes: tuple[int, ...] = ()  # seqs of candidates this one replaces


@dataclass(frozen=True, slots=True)
class Reached:
    """How spreading activation reached a result (``explain``): the memory it came from
    and the edge it crossed (``activation.Arrival`` with its source read)."""

    source: Memory
    relation: str
    strength: float  # the edge's strength when it was crossed
    hop: int  # 1 = the source is an entry point (a seed)


@dataclass(frozen=True, slots=True)
class Scored:
    memory: Memory
    score: float
    contributions: dict[str, float]
    signals: Signals
    multiplier: float
    strength: float
    superseded_by: tuple[str, ...] = ()  # ids
    supersedes: tuple[str, ...] = ()  # ids
    fallback: bool = False  # found by the archived fallback (``app/service.py``)
    via: Reached | None = None  # None: not reached by spreading (an entry point only)
    episode: str | None = None  # the episode recall spread this result by (``intent.py``)

    @classmethod
    def of(
        cls,
        ranked: Ranked,
        memory: Memory,
        ids: dict[int, str] | None = None,
        *,
        via: Reached | None = None,
    ) -> Scored:
        ids = ids or {}
        return cls(
            memory=memory,
            score=ranked.score,
            contributions=ranked.contributions,
            signals=ranked.signals,
            multiplier=ranked.multiplier,
            strength=ranked.strength,
            superseded_by=tuple(ids[s] for s in ranked.superseded_by if s in ids),
            supersedes=tuple(ids[s] for s in ranked.supersedes if s in ids),
            via=via,
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


def score(
    seq: int,
    traits: Traits,
    signals: Signals,
    cfg: RecallConfig,
    now: datetime,
    window: TimeWindow | None = None,
) -> Ranked:
    relevance_parts = {"direct": signals.direct, "spread": cfg.spread_weight * signals.spread}
    if signals.pattern:
        relevance_parts["pattern"] = cfg.pattern_weight * signals.pattern
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
    if window is not None:  # the question named a time (``when.py``)
        boosts["when"] = cfg.when_weight * window.closeness(traits.timestamp)
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


def supersede(
    ranked: list[Ranked],
    successors: Callable[[int], tuple[int, ...]],
    current: Callable[[int], bool],
    admissible: Callable[[int], Traits | None],
    factor: float,
) -> list[Ranked]:
    """Rank each superseded candidate below its successor, strongest first again.

    A candidate with a current successor (``current``: present, not archived or merged,
    not after ``as_of``) keeps ``factor`` of its strength; the successor ranks at least
    where the older memory stood, pulled in when the query did not find it (if it passes
    the query's filters: ``admissible`` gives its traits). Both changes are explained as
    contributions (``superseded``, ``successor``) so the parts still sum to the strength.
    """
    by_seq = {r.seq: r for r in ranked}
    floors: dict[int, tuple[float, list[int]]] = {}
    for r in ranked:
        newer = tuple(s for s in successors(r.seq) if s != r.seq and current(s))
        if not newer:
            continue
        by_seq[r.seq] = _adjusted(by_seq[r.seq], r.strength * factor, "superseded", newer=newer)
        for s in newer:
            floor, older = floors.get(s, (0.0, []))
            floors[s] = (max(floor, r.strength), [*older, r.seq])
    for s, (floor, older) in floors.items():
        found = by_seq.get(s)
        if found is None:
            traits = admissible(s)
            if traits is None:
                continue
            found = Ranked(s, 0.0, {}, Signals(0.0, 0.0, None, None, None), traits.utility, 0.0)
        by_seq[s] = _adjusted(found, max(found.strength, floor), "successor", older=tuple(older))
    return sorted(by_seq.values(), key=lambda r: -r.strength)


def _adjusted(
    r: Ranked,
    strength: float,
    reason: str,
    *,
    newer: tuple[int, ...] = (),
    older: tuple[int, ...] = (),
) -> Ranked:
    contributions = dict(r.contributions)
    if strength != r.strength:
        contributions[reason] = contributions.get(reason, 0.0) + strength - r.strength
    return replace(
        r,
        score=strength,
        strength=strength,
        contributions=contributions,
        superseded_by=r.superseded_by + newer,
        supersedes=r.supersedes + older,
    )
