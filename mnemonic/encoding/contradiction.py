"""Cheap lexical contradiction signals between two texts.

Used when linking a new memory to its neighbours: if two otherwise similar
memories use opposite words ("cache is enabled" / "cache is disabled") the
newer one probably contradicts or supersedes the older. This is a signal,
not a proof; it is tuned to miss rather than to over-fire.

Rules:

* Words are :func:`mnemonic.encoding.text.words` tokens, lowercased, with
  ``’`` read as ``'``; matching is whole-word (``enabled`` does not match
  ``re-enabled`` or ``enabled_flag``).
* An opposite pair ``(x, y)`` fires when one text has ``x`` but not ``y`` and
  the other has ``y`` but not ``x``. A text using both words is discussing the
  contrast, not asserting a side.
* A pair word right after a negator ("not enabled", "never works", "isn't
  public") is ignored for pairs: its polarity is flipped and ambiguous. The
  negation rule below covers "is X" / "is not X" instead.
* ``on``/``off`` only count as state words: after a copula or switch verb
  ("is on", "turned off", "set to off") or before punctuation/the end
  ("logging: on."); "depends on the flag" is not a state.
* Deliberately not pairs: ``yes``/``no`` ("no" is mostly a determiner: "no
  idea", "no longer") and ``sync``/``async`` (usually complementary APIs
  described side by side, and "sync" is also a verb).
* Negation: "<copula> X" in one text and "<copula> not X" / "<copula>n't X" /
  "<copula> no longer X" in the other, for the same following content word X
  (articles and intensifiers are skipped: "is not a blocker" -> X=blocker).
  Copulas: is/are/am (reported as "is"), was/were ("was"), can, will, does,
  do, did, should, has, have. Reported as ``("is cached", "is not cached")``.
"""

from __future__ import annotations

import functools

from mnemonic.encoding.text import STOPWORDS, WORD_RE

OPPOSITE_PAIRS: tuple[tuple[str, str], ...] = (
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("enables", "disables"),
    ("added", "removed"),
    ("add", "remove"),
    ("true", "false"),
    ("on", "off"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("success", "failure"),
    ("succeeded", "failed"),
    ("succeeds", "fails"),
    ("pass", "fail"),
    ("passed", "failed"),
    ("passes", "fails"),
    ("passing", "failing"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("start", "stop"),
    ("started", "stopped"),
    ("open", "closed"),
    ("include", "exclude"),
    ("included", "excluded"),
    ("always", "never"),
    ("works", "broken"),
    ("working", "broken"),
    ("installed", "uninstalled"),
    ("public", "private"),
    ("valid", "invalid"),
    ("supported", "unsupported"),
    ("correct", "incorrect"),
    ("available", "unavailable"),
    ("online", "offline"),
)
"""Opposite words, checked in this order (which is also the result order)."""

_STATE_WORDS = frozenset({"on", "off"})
_STATE_PRECEDERS_TEXT = """
is are was were be been being am turned turn turns turning switched switch
switches set toggled stays stay stayed remains remain remained kept now
"""
_STATE_PRECEDERS = frozenset(_STATE_PRECEDERS_TEXT.split())
_NEGATORS = frozenset({"not", "never", "no", "without", "non", "cannot"})
_FILLERS = frozenset(
    {"a", "an", "the", "very", "really", "quite", "so", "too", "actually", "currently", "yet"}
)
_COPULAS = {
    "is": "is",
    "are": "is",
    "am": "is",
    "was": "was",
    "were": "was",
    "can": "can",
    "will": "will",
    "does": "does",
    "do": "do",
    "did": "did",
    "should": "should",
    "has": "has",
    "have": "have",
}
_NEGATED_COPULAS = {
    "isn't": "is",
    "aren't": "is",
    "wasn't": "was",
    "weren't": "was",
    "can't": "can",
    "cannot": "can",
    "won't": "will",
    "doesn't": "does",
    "don't": "do",
    "didn't": "did",
    "shouldn't": "should",
    "hasn't": "has",
    "haven't": "have",
}
_STATE_END = frozenset(".,;:!?)]}\"'\n")


def opposing_pairs(a: str, b: str) -> list[tuple[str, str]]:
    """Opposite-word pairs asserted one way in ``a`` and the other way in ``b``.

    Each tuple is ``(word or phrase from a, word or phrase from b)``; word pairs
    come first in :data:`OPPOSITE_PAIRS` order, then negation pairs sorted.
    """
    words_a, pos_a, neg_a = _analyse(a)
    words_b, pos_b, neg_b = _analyse(b)
    found: list[tuple[str, str]] = []
    for x, y in OPPOSITE_PAIRS:
        has_ax, has_ay = x in words_a, y in words_a
        has_bx, has_by = x in words_b, y in words_b
        if has_ax and not has_ay and has_by and not has_bx:
            found.append((x, y))
        elif has_ay and not has_ax and has_bx and not has_by:
            found.append((y, x))
    for cop, word in sorted((pos_a & neg_b) - (neg_a | pos_b)):
        found.append((f"{cop} {word}", f"{cop} not {word}"))
    for cop, word in sorted((neg_a & pos_b) - (pos_a | neg_b)):
        found.append((f"{cop} not {word}", f"{cop} {word}"))
    return found


def contradicts(a: str, b: str) -> bool:
    """True if :func:`opposing_pairs` finds at least one pair."""
    return bool(opposing_pairs(a, b))


_Claims = set[tuple[str, str]]


_Analysis = tuple[frozenset[str], frozenset[tuple[str, str]], frozenset[tuple[str, str]]]
_SHORT_TEXT = 4096


def _analyse(text: str) -> _Analysis:
    """(un-negated pair words, positive copula claims, negated copula claims).

    Cached: the encoder compares one new memory with several neighbours, and each
    neighbour with many new memories. The cache holds a text as its key, so long texts
    (up to 100,000 characters each) get a small cache of their own: 8,192 of them would
    pin most of a gigabyte.
    """
    if len(text) <= _SHORT_TEXT:
        return _analyse_short(text)
    return _analyse_long(text)


def _analyse_uncached(text: str) -> _Analysis:
    spans = [
        (m.group().lower().replace("’", "'"), m.start(), m.end()) for m in WORD_RE.finditer(text)
    ]
    tokens = [t for t, _, _ in spans]
    present: set[str] = set()
    positive: _Claims = set()
    negative: _Claims = set()
    for i, token in enumerate(tokens):
        negated = _negated(tokens[i - 1] if i else "", tokens[i - 2] if i > 1 else "")
        if not negated and (token not in _STATE_WORDS or _is_state(text, spans, i)):
            present.add(token)
        _collect_claim(tokens, i, positive, negative)
    return frozenset(present), frozenset(positive), frozenset(negative)


_analyse_short = functools.lru_cache(maxsize=8192)(_analyse_uncached)
_analyse_long = functools.lru_cache(maxsize=64)(_analyse_uncached)


def _negated(previous: str, before_previous: str) -> bool:
    if previous in _NEGATORS or previous.endswith("n't"):
        return True
    return previous == "longer" and before_previous == "no"


def _is_state(text: str, spans: list[tuple[str, int, int]], i: int) -> bool:
    """``on``/``off`` used as a state, not as a preposition or particle."""
    if i and spans[i - 1][0] in _STATE_PRECEDERS:
        return True
    if i > 1 and spans[i - 1][0] == "to" and spans[i - 2][0] == "set":
        return True
    before = text[spans[i - 1][2] if i else 0 : spans[i][1]].strip()
    if before.endswith(("=", ":")):
        return True
    after = text[spans[i][2] : spans[i][2] + 2].lstrip(" \t")
    return not after or after[0] in _STATE_END


def _collect_claim(tokens: list[str], i: int, positive: _Claims, negative: _Claims) -> None:
    """Record "<copula> X" / "<copula> not X" claims starting at token ``i``."""
    token = tokens[i]
    j = i + 1
    if token in _NEGATED_COPULAS:
        cop, bucket = _NEGATED_COPULAS[token], negative
    elif token in _COPULAS:
        cop, bucket = _COPULAS[token], positive
        if j < len(tokens) and tokens[j] == "not":
            bucket, j = negative, j + 1
        elif j + 1 < len(tokens) and tokens[j] == "no" and tokens[j + 1] == "longer":
            bucket, j = negative, j + 2
    else:
        return
    while j < len(tokens) and tokens[j] in _FILLERS:
        j += 1
    if j < len(tokens) and tokens[j] not in STOPWORDS and len(tokens[j]) > 1:
        bucket.add((cop, tokens[j]))
