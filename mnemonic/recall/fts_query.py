"""Any user text becomes a valid FTS5 MATCH expression.

Every term is reduced to word characters and double-quoted, so FTS syntax in the input
(``"``, ``*``, ``(``, ``AND``, ``NEAR(``, ``column:``) is just text. Terms are OR-ed: BM25
ranks documents that share more (and rarer) terms higher, which is what free-text recall
wants; stopwords are dropped unless nothing else is left.
"""

from __future__ import annotations

from mnemonic.encoding.text import STOPWORDS, words
from mnemonic.store.sqlite import match_any

MAX_TERMS = 32


def query_terms(text: str) -> list[str]:
    """Distinct lowercase search terms, stopwords removed where anything else remains."""
    seen: dict[str, None] = {}
    for word in words(text):
        term = word.casefold()
        if term and term not in seen:
            seen[term] = None
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS and len(t) > 1]
    return (content or terms)[:MAX_TERMS]


def to_match(text: str) -> str | None:
    """The MATCH expression for ``text`` (all terms OR-ed), or None when it has none."""
    terms = query_terms(text)
    if not terms:
        return None
    return match_any(terms)
