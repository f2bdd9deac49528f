"""The content score: how much a piece of observed text looks worth remembering.

Every text starts at ``BASE`` (0.5). Words that mark knowledge (error, failed, exception,
todo, fixme, decision, decided, fixed, bug, because...) raise it, each distinct keyword
once, by at most ``keyword_cap`` in all; signs of machine noise lower it:

=================  ========  =====================================================
noise              penalty   what it catches
=================  ========  =====================================================
progress_bar       0.40      ``[#####    ] 45%``, ``45%|████  |``, ``━━━━ 12/40 MB``
package_warning    0.40      ``npm WARN ...``, ``npm notice``, ``yarn warning``
blob               0.05-0.45 hex runs of 32+ or random-looking base64 runs of 40+
                             characters: 0.05, 0.15 from 40% of the text, 0.45
                             from 75% (a command naming one commit keeps its place)
repetitive         0.30      five or more lines, fewer than half of them distinct
symbols            0.20      40+ characters, under 30% of them letters (of the
                             first 2,000)
minified           0.30      a line over 1,000 characters with under 5% spaces
=================  ========  =====================================================

The result is clamped to [0, 1]. Only the first ``max_chars`` characters are scored, and
each check is a substring search or a single pass (no regex is tried at every position of a
long text), so an event costs tens of microseconds for a command and about a millisecond
for a 20 KB file (``bench/perception_filter.py``). Pure functions; the thresholds live with
the filter.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

BASE = 0.5


_PERCENT_END = re.compile(r"\d(?:\.\d{1,2})?\s?%$")  # searched up to a "%" only
_BAR = re.compile(r"[#=█▉▊▋▌▍▎▏━■>]{4}")
# Tried only where a run of bar cells starts (the lookbehind), and the run is read
# possessively: ``[━─]{8,4096}`` without both re-read up to 4,096 cells from every position
# of a long rule line (12.8 s for 100,000 "━" characters).
_TRANSFER = re.compile(
    r"(?<![━─])[━─]{8,}+\s{1,4}\d{1,6}(?:\.\d{1,3})?/\d{1,6}(?:\.\d{1,3})?\s?[kKMG]?i?B"
)
_SYMBOL_SAMPLE = 2000  # characters checked for the share of letters
_BAR_REACH = 120  # characters around a percentage searched for a bar
_PACKAGE_WARNING = re.compile(r"(?im)^\s{0,4}(?:npm (?:WARN|notice)|yarn warning|pnpm WARN)\b")
_RUN = re.compile(r"[A-Za-z0-9+/_-]{32,4096}={0,2}")  # run inside whitespace-free tokens
_HEX = frozenset("0123456789abcdefABCDEF")
_LETTERS = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True, slots=True)
class Score:
    value: float
    keywords: tuple[str, ...]
    noise: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Keywords:
    """Keywords prepared once (case folded, inner whitespace made one space), with weights."""

    weights: Mapping[str, float]


def compile_keywords(keywords: Mapping[str, float]) -> Keywords:
    return Keywords({" ".join(k.casefold().split()): w for k, w in keywords.items() if k.strip()})


def score_text(
    text: str, keywords: Keywords, *, keyword_cap: float = 0.4, max_chars: int = 20_000
) -> Score:
    """Score ``text`` (see the module docstring)."""
    sample = text[:max_chars]
    lowered = sample.casefold()
    found = [k for k in keywords.weights if " " not in k and has_word(lowered, k)]
    phrases = [k for k in keywords.weights if " " in k and has_word(lowered, k.split()[0])]
    if phrases:  # whitespace is normalised only when a phrase may be there
        spaced = " ".join(lowered.split())
        found += [k for k in phrases if has_word(spaced, k)]
    boost = min(keyword_cap, sum(keywords.weights[k] for k in found))
    noise = noise_penalties(sample, lowered)
    value = max(0.0, min(1.0, BASE + boost - sum(noise.values())))
    return Score(round(value, 4), tuple(sorted(found)), tuple(sorted(noise)))


def has_word(text: str, word: str, max_tries: int = 64) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole token: not inside a longer run of
    letters, digits, ``_`` or ``-`` (``todo:`` and ``fix/x`` count, ``unfixed`` and
    ``fix-up`` do not). A substring search per keyword, with the boundary checked only
    where it is found, is far cheaper than a regex alternation tried at every position;
    at most ``max_tries`` occurrences are checked, so the cost stays bounded."""
    start = 0
    for _ in range(max_tries):
        at = text.find(word, start)
        if at < 0:
            return False
        end = at + len(word)
        if (at == 0 or not _is_word_char(text[at - 1])) and (
            end == len(text) or not _is_word_char(text[end])
        ):
            return True
        start = at + 1
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char in "_-"


def noise_penalties(text: str, lowered: str | None = None) -> dict[str, float]:
    """Each kind of noise found in ``text`` and its penalty (``lowered``: the text case
    folded, when the caller has it). Each check starts from a cheap substring test or
    from a single pass, because a regex tried at every position of a 20,000-character
    file costs milliseconds in Python."""
    lowered = text.casefold() if lowered is None else lowered
    lines = text.splitlines()
    out: dict[str, float] = {}
    if _progress(text):
        out["progress_bar"] = 0.4
    if ("warn" in lowered or "notice" in lowered) and _PACKAGE_WARNING.search(text):
        out["package_warning"] = 0.4
    blob_chars = sum(
        len(m.group(0))
        for token in text.split()
        if len(token) >= 32
        for m in _RUN.finditer(token)
        if is_blob(m.group(0))
    )
    if blob_chars:
        share = blob_chars / len(text)
        out["blob"] = 0.45 if share >= 0.75 else 0.15 if share >= 0.4 else 0.05
    if _repetitive(lines):
        out["repetitive"] = 0.3
    head = text[:_SYMBOL_SAMPLE]
    if len(head) >= 40 and len(head) - len(_LETTERS.sub("", head)) < 0.3 * len(head):
        out["symbols"] = 0.2
    if any(len(line) > 1000 and line.count(" ") < 0.05 * len(line) for line in lines):
        out["minified"] = 0.3
    return out


def _progress(text: str) -> bool:
    """A percentage with a bar of four or more filled cells near it (before: ``[####  ]
    45%``, after: ``45%|████  |``), or a transfer bar (``━━━━ 12/40 MB``)."""
    at = text.find("%")
    for _ in range(100):
        if at < 0:
            break
        if _PERCENT_END.search(text, max(0, at - 8), at + 1) and _BAR.search(
            text, max(0, at - _BAR_REACH), at + _BAR_REACH
        ):
            return True
        at = text.find("%", at + 1)
    if "━" in text or "─" in text:
        return _TRANSFER.search(text) is not None
    return False


def is_blob(run: str) -> bool:
    """A hash or encoded data rather than words: 32+ hex digits, or 40+ characters of
    base64 mixing cases and digits with high entropy (an identifier such as
    ``test_stream_handler_parser_returns_none`` or a long path is neither)."""
    token = run.rstrip("=")
    if len(token) >= 32 and _HEX.issuperset(token):
        return True
    if len(token) < 40 or token.count("/") > len(token) // 16 or token.count("_") > 2:
        return False
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False
    if not any(c.isdigit() for c in token):
        return False
    return _entropy(token) >= 4.2


def _entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _repetitive(lines: list[str]) -> bool:
    kept = [line.strip() for line in lines[:1000] if line.strip()]
    return len(kept) >= 5 and len(set(kept)) < len(kept) / 2
