"""Absolute evidence that a query has real matches, so scores mean the same in every query.

Fusion normalises each entry-point list by its own best hit (min-max), which ranks well
but hides how good that best hit is: the best of a gibberish query's weak neighbours also
becomes 1.0. The calibration here looks at absolute signals instead:

- **meaning:** the raw cosine of a vector neighbour. With the bundled MiniLM, unrelated
  texts sit at 0.0-0.25 (measured: gibberish and off-topic questions against software
  notes, at most 0.20), paraphrases from about 0.34 up, and the best turn for a LoCoMo dev
  question is at least 0.33 (median 0.63). Evidence rises linearly from ``vector_floor``
  to 1 at ``vector_full``.
- **words:** the share of the query's content words (stopwords left out) a full-text hit
  holds, raised to ``words_power`` (2): every word 1, half of them 0.25, two of five 0.16,
  one common word out of five ("long" in a cooking question) 0.04, under the default
  ``min_score``. A query of stopwords only has no word evidence. A hard "more than half"
  rule instead lost LongMemEval questions whose evidence shares two of five words and
  sits at cosine 0.21.

A hit's evidence combines both as independent signals (``1 - (1-v)(1-w)``); the query's
evidence is its strongest hit's, or that of its clauses' mean best cosine, whichever is
more: a question told in parts (``recall/clauses.py``) can be met by one memory per part
and by none alone (``pipeline._clause_cosine`` says when the clauses count). Measured
(BENCHMARKS, session 21): one LongMemEval question more is answered; the best clause
alone instead answered 7 of 60 off-topic probes more.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from mnemonic.encoding.text import STOPWORDS

_SUFFIXES = ("ing", "ed", "s")  # enough for prefix matching: "deploys" finds "deployment"
_PART = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Calibration:
    vector_floor: float
    vector_full: float
    words_power: float


def vector_evidence(cosine: float, floor: float, full: float) -> float:
    """0 at or below ``floor``, rising linearly to 1 at ``full``."""
    if cosine <= floor:
        return 0.0
    if full <= floor:
        return 1.0
    return min(1.0, (cosine - floor) / (full - floor))


def word_evidence(coverage: float, power: float) -> float:
    """The share of query words held, raised to ``power``: partial matches count less."""
    return float(coverage**power) if coverage > 0 else 0.0


def combine(vector: float, words: float) -> float:
    """Two independent signals: agreement counts more than either alone, never above 1."""
    return 1.0 - (1.0 - vector) * (1.0 - words)


def content_terms(terms: Iterable[str]) -> list[str]:
    """Query terms that can carry evidence: no stopwords, no single letters."""
    return [t for t in terms if t not in STOPWORDS and len(t) > 1]


def coverage(terms: Sequence[str], text: str) -> float:
    """Share of ``terms`` found in ``text``, approximating the index's stemming.

    A term counts when each of its word parts starts a word of the text after a light
    suffix strip ("deploys" finds "deploy", "deployment"), or, for scripts written without
    spaces (CJK), appears anywhere in it. It is evidence, not the index's match: close is
    enough.
    """
    if not terms:
        return 0.0
    haystack = _fold(text)
    held = sum(1 for term in terms if _pattern(term).search(haystack))
    return held / len(terms)


def query_evidence(
    terms: Sequence[str],
    cosines: Mapping[int, float],
    texts: Mapping[int, str],
    calibration: Calibration,
    clause_cosine: float = 0.0,
) -> float:
    """The query's evidence in [0, 1], its strongest entry-point hit's or its clauses':
    0 means nothing real matched.

    ``cosines`` are the vector neighbours' raw similarities, ``texts`` the full-text hits'
    searchable text (hits not hydrated are left out; the strongest ones always are),
    ``clause_cosine`` the mean of the question's clauses' best cosines (0: no clauses).
    """
    words = content_terms(terms)
    best = vector_evidence(clause_cosine, calibration.vector_floor, calibration.vector_full)
    for seq in set(cosines) | set(texts):
        v = vector_evidence(
            cosines.get(seq, 0.0), calibration.vector_floor, calibration.vector_full
        )
        w = 0.0
        if words and seq in texts:
            w = word_evidence(coverage(words, texts[seq]), calibration.words_power)
        best = max(best, combine(v, w))
    return best


def _fold(text: str) -> str:
    """Casefold and strip diacritics, as the index's unicode61 tokenizer does."""
    if text.isascii():  # nothing to decompose: skip the per-character pass (most texts)
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=1024)
def _pattern(term: str) -> re.Pattern[str]:
    parts = [_stem(p) for p in _PART.findall(_fold(term))] or [_fold(term)]
    pieces = [re.escape(p) if _spaceless(p) else r"(?<!\w)" + re.escape(p) for p in parts]
    return re.compile(r"\W*".join(pieces) if len(pieces) > 1 else pieces[0])


def _stem(part: str) -> str:
    for suffix in _SUFFIXES:
        if part.endswith(suffix) and len(part) - len(suffix) >= 3:
            return part[: -len(suffix)]
    return part


def _spaceless(part: str) -> bool:
    return any(unicodedata.east_asian_width(ch) in ("W", "F") for ch in part)
