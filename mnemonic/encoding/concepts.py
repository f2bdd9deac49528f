"""Keyphrase ("concept") extraction: a small RAKE-style scorer tuned for dev notes.

Concepts index a memory for lexical recall and linking, so they must be cheap,
deterministic and made only of words that occur in the text.

Algorithm (one pass over the tokens of :data:`mnemonic.encoding.text.WORD_RE`):

0. Traceback boilerplate ("Traceback (most recent call last)", ``", line 42``)
   is blanked out, and every path or URL (``src/app/main.py``,
   ``https://host/a/b``) is replaced by its last component: directories and
   hosts are noise, the file name is the concept.

1. Candidate phrases are runs of up to three adjacent content words. A run is
   broken by a stopword, a weak word (generic verbs/fillers such as "went",
   "really", "thanks"), a number, a one-character token, or any punctuation
   between two tokens. Runs longer than three words are cut into chunks of
   three from the left.
2. Word score = RAKE degree/frequency (how long the phrases it appears in are)
   + bonuses: identifier shape (snake_case, CamelCase, dotted/file names,
   versions) +2, all-caps acronym or a capitalised word that
   does not start a sentence +1, letters mixed with digits (``sha256``) +0.5,
   and +0.5 per repeat of the word (up to +2).
   Phrase score = sum of its word scores + 0.5 per repeat of the phrase
   (up to +2).
3. Ranked by score (desc) then first occurrence. A three-word phrase is
   replaced by one of its two-word halves if that half occurs at least twice
   and more often than the whole (counting occurrences inside other phrases):
   "the support group met ... the support group was great" yields "support
   group", not the accidental "support group met". A phrase whose words
   appear contiguously inside an already chosen phrase is dropped.

Everything is lowercased (``str.lower``) for matching, identifiers included,
and a possessive ``'s`` is removed; numbers (``42``, ``3.5``, ``1e9``,
``2024-01-05``, ``250ms``, ``16gb``), hex hashes/UUIDs and tokens over 40
characters are never concepts, but versions with two or more dots
(``1.18.1``) are. Cost is linear in the text length.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from mnemonic.encoding.text import STOPWORDS, WORD_RE, has_letter, is_identifier

MAX_PHRASE_WORDS = 3
_MAX_TOKEN_CHARS = 40

_WEAK_WORDS_TEXT = """
 also actually anyway basically btw got get gets getting go goes going gone
 went come came comes make makes made making kept keep keeps take took put
 said say says think thought know knew want wanted need needed needs like
 liked feel felt seem seems seemed really pretty maybe probably definitely
 thing things stuff lot lots way ways yeah yes yep nope ok okay thanks thank
 hey hi hello lol haha wow oh today yesterday tomorrow tonight right sure
 something anything everything nothing someone anyone everyone use used uses
 using one two http https www see still instead last next week weeks month
 months year years day days ago til fyi imo tbh
"""
_WEAK_WORDS = frozenset(_WEAK_WORDS_TEXT.split())
"""Words too generic to be concepts, on top of :data:`STOPWORDS`."""

_TOKEN_GAP_RE = re.compile(rf"({WORD_RE.pattern})(\W{{0,1000}})")
_SENTENCE_GAP_RE = re.compile(r"[.!?\n。！？]")
_HEXISH_RE = re.compile(r"[0-9a-f][0-9a-f\-]{6,60}")
_NUMBERISH_RE = re.compile(r"\d[\d.,]{0,30}(?:e[+-]?\d{1,4}|[kmgtp]?b|[mun]?s|min|[hdkmx%])?")
_VERSION_RE = re.compile(r"v?\d{1,6}(?:\.\d{1,6}){2,3}")
_TRACEBACK_HEAD = "Traceback (most recent call last)"
_LINE_NO_RE = re.compile(r'", line \d{1,9}')
_SPACE_RE = re.compile(r"\s")
_ROOTED_RE = re.compile(r"[\"'(<\[]?(?:[a-z][\w+.-]{0,20}://|~/|\.{1,2}/|/|[A-Za-z]:/)")
_TRAILING_PUNCT = "/.,;:!?)]}>\"'`"


def extract_concepts(text: str, max_concepts: int = 8) -> tuple[str, ...]:
    """Return up to ``max_concepts`` lowercase keyphrases, best first."""
    if max_concepts <= 0 or not text:
        return ()
    phrases, bonus = _candidates(_prepare(text))
    if not phrases:
        return ()
    counts = Counter(phrases)  # insertion order = first occurrence
    scores = _score(counts, bonus)
    ranked = sorted(counts, key=lambda phrase: -scores[phrase])  # stable sort
    halves = _bigram_counts(counts)
    chosen: list[str] = []
    padded: list[str] = []
    for candidate in ranked:
        phrase = _core(candidate, counts[candidate], halves) if len(candidate) == 3 else candidate
        joined = " ".join(phrase)
        probe = f" {joined} "
        if any(probe in other for other in padded):
            continue
        chosen.append(joined)
        padded.append(probe)
        if len(chosen) == max_concepts:
            break
    return tuple(chosen)


def _bigram_counts(counts: Counter[tuple[str, ...]]) -> dict[tuple[str, ...], int]:
    """Occurrences of every two-word sequence, alone or inside a three-word phrase."""
    halves: dict[tuple[str, ...], int] = {}
    for phrase, count in counts.items():
        for i in range(len(phrase) - 1):
            half = phrase[i : i + 2]
            halves[half] = halves.get(half, 0) + count
    return halves


def _core(
    phrase: tuple[str, ...], count: int, halves: dict[tuple[str, ...], int]
) -> tuple[str, ...]:
    """The more frequent two-word half of a three-word phrase, or the phrase itself."""
    left, right = phrase[:2], phrase[1:]
    best = left if halves[left] >= halves[right] else right
    return best if halves[best] >= 2 and halves[best] > count else phrase


def _prepare(text: str) -> str:
    """Blank traceback boilerplate and reduce paths/URLs to their last component."""
    if _TRACEBACK_HEAD in text:
        text = text.replace(_TRACEBACK_HEAD, ";")
    if '", line ' in text:
        text = _LINE_NO_RE.sub('";', text)
    if "/" in text:
        text = _reduce_paths(text)
    return text


def _reduce_paths(text: str) -> str:
    """Replace each whitespace-delimited chunk containing ``/`` via :func:`_path_leaf`."""
    pieces: list[str] = []
    pos = 0
    slash = text.find("/")
    while slash >= 0:
        start = max(text.rfind(c, pos, slash) for c in " \n\t\r") + 1
        start = max(start, pos)
        space = _SPACE_RE.search(text, slash)
        end = space.start() if space else len(text)
        pieces.append(text[pos:start])
        pieces.append(_path_leaf(text[start:end]))
        pos = end
        slash = text.find("/", end)
    pieces.append(text[pos:])
    return "".join(pieces)


def _path_leaf(value: str) -> str:
    """Replacement for a slash chunk: its leaf, fenced so it forms its own phrase.

    A chunk is a path if it is rooted (``/``, ``~/``, ``./``, a drive letter or
    a URL scheme), has two or more slashes, or its leaf has a file extension;
    ``and/or`` and ``client/server`` stay two ordinary words.
    """
    body = value.rstrip(_TRAILING_PUNCT)
    leaf = body[body.rfind("/") + 1 :]
    if not (_ROOTED_RE.match(value) or body.count("/") >= 2 or "." in leaf):
        return value
    return f"; {leaf}{value[len(body) :]}"


def _candidates(text: str) -> tuple[list[tuple[str, ...]], dict[str, float]]:
    """Split ``text`` into candidate phrases and collect per-word bonuses."""
    phrases: list[tuple[str, ...]] = []
    bonus: dict[str, float] = {}
    run: list[str] = []
    sentence_start = True
    for raw, gap in _TOKEN_GAP_RE.findall(text):
        key, mid_bonus, start_bonus = _analyse(raw)
        if key is None or key in run:
            _flush(run, phrases)
        if key is not None:
            word_bonus = start_bonus if sentence_start else mid_bonus
            if word_bonus > bonus.get(key, -1.0):
                bonus[key] = word_bonus
            run.append(key)
            if len(run) == MAX_PHRASE_WORDS:
                _flush(run, phrases)  # long runs are cut into chunks of three
        if gap == " ":
            sentence_start = False
            continue
        if run and ("\n" in gap or gap.strip() or len(gap) == 1000):
            _flush(run, phrases)
        sentence_start = _SENTENCE_GAP_RE.search(gap) is not None
    _flush(run, phrases)
    return phrases, bonus


def _flush(run: list[str], phrases: list[tuple[str, ...]]) -> None:
    for i in range(0, len(run), MAX_PHRASE_WORDS):
        phrases.append(tuple(run[i : i + MAX_PHRASE_WORDS]))
    run.clear()


@lru_cache(maxsize=32768)
def _analyse(raw: str) -> tuple[str | None, float, float]:
    """(matching key or None, bonus mid-sentence, bonus at a sentence start).

    Memoised: the vocabulary of a memory store repeats, and this is the
    per-token hot path. Bonuses are described in the module docstring.
    """
    key = _content_key(raw)
    if key is None:
        return None, 0.0, 0.0
    shape = 0.0
    if is_identifier(raw):
        shape = 2.0
    elif not raw.isalpha() and any(c.isdigit() for c in raw) and has_letter(raw):
        shape = 0.5
    if raw.isupper():
        return key, shape + 1.0, shape + 1.0  # acronym: LGBTQ, VPS, CI
    if raw[0].isupper():
        return key, shape + 1.0, shape  # capitalised: a name unless it starts a sentence
    return key, shape, shape


def _content_key(raw: str) -> str | None:
    """Lowercased matching key for a content word, or None for non-candidates."""
    key = raw.lower()
    if key.endswith(("'s", "’s")):
        key = key[:-2]
    if len(key) < 2 or len(key) > _MAX_TOKEN_CHARS:
        return None
    lookup = key.replace("’", "'") if "’" in key else key
    if lookup in STOPWORDS or lookup in _WEAK_WORDS:
        return None
    if key[0].isdigit() and (_NUMBERISH_RE.fullmatch(key) or not has_letter(key)):
        return key if _VERSION_RE.fullmatch(key) else None
    if not has_letter(key):
        return None
    if _HEXISH_RE.fullmatch(key) and any(c.isdigit() for c in key):
        return None  # commit SHAs, UUIDs, hex digests
    return key


def _score(
    counts: Counter[tuple[str, ...]], bonus: dict[str, float]
) -> dict[tuple[str, ...], float]:
    """RAKE degree/frequency plus shape and repetition bonuses, per phrase."""
    stats: dict[str, list[int]] = {}  # word -> [frequency, degree]
    for phrase, count in counts.items():
        size = len(phrase) * count
        for word in phrase:
            entry = stats.get(word)
            if entry is None:
                stats[word] = [count, size]
            else:
                entry[0] += count
                entry[1] += size
    word_score = {
        word: degree / freq + bonus[word] + 0.5 * min(freq - 1, 4)
        for word, (freq, degree) in stats.items()
    }
    return {
        phrase: sum([word_score[w] for w in phrase]) + 0.5 * min(count - 1, 4)
        for phrase, count in counts.items()
    }
