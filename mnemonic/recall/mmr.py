"""Maximal marginal relevance: trade a little relevance for less repetition.

The discount is relative: a candidate keeps ``1 - (1 - lam) * sim`` of its relevance,
where ``sim`` is its cosine to the closest pick so far. Carbonell and Goldstein's
original form subtracts instead (``lam * rel - (1 - lam) * sim``), and a subtraction
does not scale with relevance: a memory that is barely relevant but unlike everything
picked (only reached by spreading, no word or meaning in common with the question)
overtakes a relevant one that resembles the top hit. On LongMemEval that pushed answer
sessions out of the top five (a turn about baptism, reached only by spreading, ranked
fifth for "How many graduation ceremonies have I attended?"; numbers in BENCHMARKS.md,
session 16). With the ratio, diversity still reorders candidates of similar relevance,
and only them.

Near-identical memories (ten saved versions of one file, the same note stored twice) are
not diversity's business alone: MMR only discounts them, so with a high relevance share
they still fill the list. A candidate that is a near copy of one already picked is
dropped instead: the same vector neighbourhood (cosine >= ``duplicate_cosine``) *and*
nearly the same words (word-pair Jaccard >= ``duplicate_words``), or the same text after
folding case and spacing. Both are required because templated lines that differ in one
value ("OOMKilled on node 3" / "on node 4") embed at 0.98 yet are different facts.

Groups (episodes) are a second kind of repetition, for questions that ask about several
events (``intent.py``): each pick from a group multiplies the relevance of that group's
other candidates by ``group_factor``, so the list reaches into the next episode before
it takes a third turn of the first. Vector similarity does not see this: turns of one
conversation about different things are far apart, and the same kind of event on two
days is close.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from mnemonic.llm.embedding import Vectors

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Duplicates:
    cosine: float  # vector similarity at which two memories may be copies
    words: float  # word-pair Jaccard at which they are


NO_DUPLICATES = Duplicates(cosine=2.0, words=2.0)


def mmr_order(
    ranked: Sequence[tuple[int, float]],
    vectors: Mapping[int, Vectors],
    limit: int,
    lam: float,
    texts: Mapping[int, str] | None = None,
    duplicates: Duplicates = NO_DUPLICATES,
    groups: Mapping[int, str] | None = None,
    group_factor: float = 1.0,
) -> list[int]:
    """Pick up to ``limit`` items greedily by ``rel * f * (1 - (1-lam) * max_sim)``, where
    ``f`` is ``group_factor`` to the power of the picks already taken from the item's
    group (``groups``: item -> group; an item in none is never discounted) and
    ``max_sim`` the item's cosine to its closest pick (negative counts as 0).

    Relevance is normalised by the top score. Items with no vector count as dissimilar to
    everything. Diversity reorders; only near copies of a pick (see the module docstring;
    needs ``texts``) are dropped, so the list is shorter than ``min(limit, len(ranked))``
    only when nothing but copies is left.
    """
    want = min(limit, len(ranked))
    if want == 0:
        return []
    seqs = [seq for seq, _ in ranked]
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
    copies = _Copies(seqs, texts or {}, duplicates, [seq in vectors for seq in seqs])
    members = _members(seqs, groups or {}) if group_factor < 1 else {}
    chosen: list[int] = []
    while len(chosen) < want and available.any():
        kept = 1.0 - (1.0 - lam) * closest  # closest starts at 0: never negative
        value = np.where(available, relevance * kept, -np.inf)
        pick = int(np.argmax(value))
        chosen.append(pick)
        available[pick] = False
        closest = np.maximum(closest, similarity[pick])
        if pick in members:
            relevance[members[pick]] *= group_factor
        for other in np.flatnonzero(available):
            if copies.same(pick, int(other), float(similarity[pick, other])):
                available[other] = False
    return [seqs[i] for i in chosen]


def _members(seqs: Sequence[int], groups: Mapping[int, str]) -> dict[int, np.ndarray]:
    """For each grouped position, the positions of its whole group (itself included: it
    is picked, so discounting it too changes nothing)."""
    by_group: dict[str, list[int]] = {}
    for i, seq in enumerate(seqs):
        group = groups.get(seq)
        if group is not None:
            by_group.setdefault(group, []).append(i)
    arrays = {group: np.array(rows, dtype=np.intp) for group, rows in by_group.items()}
    return {i: arrays[group] for group, rows in by_group.items() for i in rows}


class _Copies:
    """Near-copy tests, with each text's word pairs computed once and only when needed."""

    def __init__(
        self,
        seqs: Sequence[int],
        texts: Mapping[int, str],
        dup: Duplicates,
        embedded: Sequence[bool],
    ) -> None:
        self._texts = [texts.get(seq) for seq in seqs]
        self._dup = dup
        self._embedded = embedded
        self._pairs: dict[int, frozenset[tuple[str, str]]] = {}
        self._folded: dict[int, str] = {}

    def same(self, a: int, b: int, cosine: float) -> bool:
        if self._texts[a] is None or self._texts[b] is None:
            return False
        close = cosine >= self._dup.cosine
        # equal texts embed alike, so only a pair without a vector needs the text compared
        if not close and self._embedded[a] and self._embedded[b]:
            return False
        if self._fold(a) == self._fold(b):
            return True
        if not close:
            return False
        return jaccard(self._word_pairs(a), self._word_pairs(b)) >= self._dup.words

    def _fold(self, i: int) -> str:
        if i not in self._folded:
            self._folded[i] = " ".join((self._texts[i] or "").casefold().split())
        return self._folded[i]

    def _word_pairs(self, i: int) -> frozenset[tuple[str, str]]:
        if i not in self._pairs:
            # a near copy shows in its first 20,000 characters; the rest would only make a
            # 100 KB file's comparison cost more on the event loop
            self._pairs[i] = word_pairs(self._fold(i)[:_COMPARED_CHARS])
        return self._pairs[i]


_COMPARED_CHARS = 20_000


def word_pairs(text: str) -> frozenset[tuple[str, str]]:
    """Adjacent word pairs (single words for a one-word text): order-aware shingles."""
    tokens = _WORD.findall(text.casefold())
    if len(tokens) < 2:
        return frozenset((t, "") for t in tokens)
    return frozenset(pairwise(tokens))


def jaccard(a: frozenset[tuple[str, str]], b: frozenset[tuple[str, str]]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
