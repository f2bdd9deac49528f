"""Pure rules that type the links a new memory gets to its neighbours."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from mnemonic.cognition.supersession import MemoryFacts, Verdict, detect
from mnemonic.encoding.contradiction import contradicts
from mnemonic.store.base import NewLink
from mnemonic.store.models import Relation
from mnemonic.timeutil import ensure_utc

# A run of word characters and ``. : / -`` that holds a digit: "6379", "v1.2.3", "10:30",
# "2024-01-05", "sha256". The match may only start where a run starts (the lookbehind) and
# both loops are possessive, so every character is read a bounded number of times. The
# previous pattern, ``\w*\d[\w.:/-]{0,60}``, retried ``\w*`` from every position of a
# long word without a digit: quadratic, 4 s for 20,000 characters on the event loop.
_NUMBERISH = re.compile(r"(?<![\w.:/-])(?:[^\W\d]|[.:/-])*+\d[\w.:/-]*+")
_RUN_PUNCT = ".:/-"


def numberish(text: str) -> frozenset[str]:
    """The distinct number-ish runs of ``text`` (case folded, trailing ``.:/-`` removed, so
    "port 6379." and "port 6379" agree). Linear in ``len(text)``."""
    return frozenset(m.rstrip(_RUN_PUNCT) for m in _NUMBERISH.findall(text.casefold()))


def may_merge(a: str, b: str) -> bool:
    """Whether two texts the embedder finds nearly identical may merge as duplicates.

    Sentence embeddings barely see numbers and negations: "port 6379" and "port 6380", or
    "enabled" and "disabled", score above 0.95. Those are different facts, so they link
    instead of merging.
    """
    if numberish(a) != numberish(b):
        return False
    return not contradicts(a, b)


@dataclass(frozen=True, slots=True)
class Neighbour:
    seq: int
    similarity: float
    content: str
    concepts: tuple[str, ...]
    timestamp: datetime
    type: str = "general"
    source: str = ""


def relation_for(
    content: str,
    concepts: tuple[str, ...],
    timestamp: datetime,
    other: Neighbour,
    temporal_window_s: float,
) -> Relation:
    """contradicts > reinforces (>= 2 shared concepts) > temporal (close in time) > similar."""
    if contradicts(content, other.content):
        return Relation.CONTRADICTS
    if len(set(concepts) & set(other.concepts)) >= 2:
        return Relation.REINFORCES
    gap = abs((ensure_utc(timestamp) - ensure_utc(other.timestamp)).total_seconds())
    if gap <= temporal_window_s:
        return Relation.TEMPORAL
    return Relation.SIMILAR


def choose_links(
    content: str,
    concepts: tuple[str, ...],
    timestamp: datetime,
    neighbours: Sequence[Neighbour],
    *,
    min_similarity: float,
    max_links: int,
    temporal_window_s: float,
) -> list[NewLink]:
    """Links to the most similar neighbours above ``min_similarity``, at most ``max_links``.

    Strength is the cosine similarity clipped to [0, 1]: a link is as strong as the
    evidence that the two memories are about the same thing.
    """
    ranked = sorted(
        (n for n in neighbours if n.similarity > min_similarity), key=lambda n: -n.similarity
    )
    return [
        NewLink(
            target_seq=n.seq,
            relation=relation_for(content, concepts, timestamp, n, temporal_window_s),
            strength=min(1.0, max(0.0, n.similarity)),
        )
        for n in ranked[:max_links]
    ]


@dataclass(frozen=True, slots=True)
class Supersession:
    """A detected supersession between a new memory and a neighbour of its project:
    ``incoming`` when the neighbour is the newer one (an import dated before it)."""

    neighbour: Neighbour
    verdict: Verdict
    incoming: bool

    @property
    def link(self) -> NewLink:
        return NewLink(
            self.neighbour.seq,
            Relation.SUPERSEDES,
            min(1.0, max(0.0, self.verdict.confidence)),
            incoming=self.incoming,
        )


_EVENT_SOURCES = frozenset({"terminal"})
"""A shell command is an event, never a statement of what is current: a later command
does not replace an earlier one (measured: a ``dbt run`` "superseding" another)."""


def supersessions(
    content: str,
    memory_type: str,
    concepts: tuple[str, ...],
    timestamp: datetime,
    neighbours: Sequence[Neighbour],
    source: str = "",
) -> tuple[list[Supersession], list[Supersession]]:
    """(decided, to review): the neighbours this memory supersedes or is superseded by
    (``cognition.supersession.detect``, tuned to miss), and the borderline pairs an LLM
    could settle, most similar first. Pure; linear in the texts (each is capped)."""
    facts = MemoryFacts(content, timestamp, None, memory_type, concepts)
    decided: list[Supersession] = []
    review: list[Supersession] = []
    if source in _EVENT_SOURCES:
        return decided, review
    for n in sorted(neighbours, key=lambda n: -n.similarity):
        if n.source in _EVENT_SOURCES:
            continue
        other = MemoryFacts(n.content, n.timestamp, None, n.type, n.concepts)
        incoming = ensure_utc(n.timestamp) > ensure_utc(timestamp)
        new, old = (other, facts) if incoming else (facts, other)
        verdict = detect(new, old, n.similarity)
        found = Supersession(n, verdict, incoming)
        if verdict.supersedes:
            decided.append(found)
        if verdict.ask_llm:
            review.append(found)
    return decided, review
