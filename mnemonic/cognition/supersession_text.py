"""What the supersession detector reads in one text: tokens, update cues, values, mood.

Split from :mod:`mnemonic.cognition.supersession` so the verdict logic stays short. All of
it is linear in the text length: the text is capped at :data:`MAX_CHARS` first (an update
is said in the first sentences; the API accepts ~1 MB texts), the one regex is a single
character-class run with nothing after it (no backtracking), and every cue is found by
walking the token list once with a bounded look-ahead.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from mnemonic.encoding.text import STOPWORDS


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


def stem(word: str) -> str:
    """A crude suffix fold, enough to match "sessions"/"session", "Fridays"/"Friday",
    "linting"/"lint", "stored"/"store" (both become "stor"). Values with a digit or a
    symbol are kept as written."""
    if not word.isalpha():
        return word
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _stems(words: frozenset[str]) -> frozenset[str]:
    return words | frozenset(stem(w) for w in words)


MAX_CHARS = 4000
"""Characters of a text that are analysed; the rest is ignored."""

_TOKEN = re.compile(r"[\w$€£#~][\w.:/$€£%#~+'’-]*|->|=>|→")
_TRAILING = ".:/-'’"
_ARROWS = frozenset({"->", "=>", "→"})
_CLAUSE_END = frozenset(".;:,!?\n")
_SPAN = 4
"""Tokens read after a cue word for its value (``from X to Y``: X and Y at most 4 each)."""
_WINDOW = 6
"""Tokens looked back from "from" for the change verb ("changed the dev Redis port from")."""

# Verbs that announce a change when followed by "from X to Y" or "to Y".
CHANGE_VERBS = _set(
    """
    moved move moves moving migrated migrate migrates migrating switched switch switches
    switching changed change changes changing upgraded upgrade upgrades upgrading bumped
    bump bumps updated raised lowered increased decreased reduced cut extended postponed
    pushed shifted rescheduled relocated converted ported downgraded transitioned
    reassigned handed went cutover
    """
)
_RENAME = frozenset({"renamed", "rename", "renames", "renaming"})
_REPLACE = frozenset({"replaced", "replace", "replaces", "replacing", "swapped"})
_TAKEOVER = frozenset({"took", "taken", "takes", "taking", "inherited"})
_GENERIC_SINGLE = _set(
    """
    now anymore henceforth nowadays rewritten rewrote superseded supersedes deprecated
    dropped abandoned retired
    """
)
_GENERIC_PAIRS = frozenset(
    {
        ("going", "forward"),
        ("no", "more"),
        ("new", "owner"),
        ("new", "maintainer"),
        ("new", "lead"),
        ("as", "of"),
        ("effective", "immediately"),
        ("any", "more"),
        ("starting", "today"),
        ("starting", "tomorrow"),
        ("starting", "next"),
    }
)
# Words that make the newer text a plan, a proposal or a doubt rather than a decision.
_HEDGES = _set(
    """
    maybe perhaps might considering consider proposal propose proposed proposing planning
    thinking evaluating exploring suggest suggested suggestion rfc draft tentatively
    hypothetically undecided
    """
)
_HEDGE_PAIRS = frozenset(
    {
        ("plan", "to"),
        ("plans", "to"),
        ("should", "we"),
        ("could", "we"),
        ("what", "if"),
        ("not", "decided"),
        ("decided", "against"),
        ("if", "we"),
    }
)
# Words saying the old state stayed ("still stored in MySQL", "kept it at 30 s").
_UNCHANGED = frozenset({"still", "remains", "remain", "remained", "kept", "unchanged", "stays"})
# Phrases placing the change in somebody else's past.
_HISTORICAL_PAIRS = frozenset(
    {
        ("previous", "job"),
        ("previous", "company"),
        ("last", "job"),
        ("former", "employer"),
        ("back", "in"),
        ("years", "ago"),
        ("blog", "post"),
        ("changelog", "says"),
    }
)
_QUESTION_STARTS = _set(
    """
    should could can would will do does did is are was were shall what why how when which
    who whether
    """
)
_ALIGN_FILLERS = _stems(_set("now currently actually update correction today anymore meanwhile"))
_ADDITIVE = frozenset({"also", "too", "additionally", "another", "both"})
NEGATORS = frozenset({"not", "no", "never", "longer", "without", "n't"})
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday"
_MONTHS = "january february march april may june july august september october november december"
_VALUE_WORDS = _set(
    _WEEKDAYS
    + " "
    + _MONTHS
    + """
        one two three four five six seven eight nine ten twelve fifteen twenty thirty sixty
        hundred daily weekly biweekly fortnightly monthly quarterly yearly annually hourly
    morning afternoon evening noon midnight
    """
)
# Verbs and nouns that describe a state (a value can be replaced) rather than an event.
STATE_WORDS = _stems(
    _set(
        """
    is are be been am uses use using runs run lives live stored hosted deployed pinned pin
    set owns owned owner maintainer lead default configured version scheduled happens
    held meets costs cost priced price deadline due limit timeout port expire expires
    located points targets requires require needs must has have called named written
    uploaded triaged handled managed processed kept happen happens live
    """
    )
)
_GENERIC_SUBJECT = STATE_WORDS | _stems(_set("we our team us it they new old instead from to"))


@dataclass(frozen=True, slots=True)
class Cue:
    """One update cue: ``kind`` names it for ``explain``; ``old``/``new`` are the values
    it names (stemmed content tokens), empty when the phrasing does not say them."""

    kind: str
    old: frozenset[str]
    new: frozenset[str]


@dataclass(frozen=True, slots=True)
class Reading:
    """What one (capped) text says, as the detector needs it."""

    tokens: tuple[str, ...]  # lowercased, stemmed
    words: tuple[str, ...]  # the same tokens lowercased as written (for reasons)
    stems: frozenset[str]  # content (non-stopword) stems
    values: frozenset[str]  # value-like stems: numbers, names, paths, days
    cues: tuple[Cue, ...]
    generic_cues: tuple[str, ...]
    question: bool
    hedged: bool
    unchanged: bool
    historical: bool
    additive: bool


def read(text: str) -> Reading:
    """Analyse the first :data:`MAX_CHARS` characters of ``text``."""
    capped = text[:MAX_CHARS]
    raw: list[str] = []
    ends: list[bool] = []  # the token ends a clause
    for m in _TOKEN.finditer(capped):
        raw.append(m.group())
        nxt = capped[m.end() : m.end() + 1]
        ends.append(nxt in _CLAUSE_END or m.group()[-1:] in _CLAUSE_END)
    low = [_clean(t.lower().replace("’", "'")) for t in raw]
    tokens = tuple(stem(t) for t in low)
    values = frozenset(
        tokens[i] for i in range(len(raw)) if _value_like(raw, low, ends, i) and low[i]
    )
    pairs = set(itertools.pairwise(low))
    stripped = capped.strip()
    first = low[0] if low else ""
    return Reading(
        tokens=tokens,
        words=tuple(low),
        stems=frozenset(t for t, w in zip(tokens, low, strict=True) if _content(w)),
        values=values,
        cues=tuple(_cues(low, tokens, ends)),
        generic_cues=tuple(
            sorted(
                {w for w in low if w in _GENERIC_SINGLE}
                | {" ".join(p) for p in pairs & _GENERIC_PAIRS}
            )
        ),
        question=stripped.endswith("?") or (first in _QUESTION_STARTS and "?" in stripped),
        hedged=bool(_HEDGES.intersection(low) or pairs & _HEDGE_PAIRS),
        unchanged=any(
            w in _UNCHANGED and not (i and low[i - 1] in NEGATORS) for i, w in enumerate(low)
        ),
        historical=bool(pairs & _HISTORICAL_PAIRS) or _starts_with_year(low),
        additive=bool(_ADDITIVE.intersection(low)),
    )


def spell(reading: Reading, stems: frozenset[str] | tuple[str, ...], limit: int = 4) -> str:
    """The written words behind ``stems`` in text order ("ines", not "ine"), for reasons."""
    wanted = frozenset(stems)
    seen: set[str] = set()
    out: list[str] = []
    for token, word in zip(reading.tokens, reading.words, strict=True):
        if token in wanted and token not in seen and len(out) < limit:
            seen.add(token)
            out.append(word)
    return " ".join(out)


def align_tokens(reading: Reading) -> tuple[str, ...]:
    """Tokens for word-by-word alignment: fillers such as "now" dropped."""
    return tuple(t for t in reading.tokens if t and t not in _ALIGN_FILLERS)


def content(tokens: tuple[str, ...] | list[str]) -> frozenset[str]:
    return frozenset(t for t in tokens if _content(t))


def subject_words(reading: Reading) -> frozenset[str]:
    """Content stems that are not state verbs or generic words: what the text is about."""
    return frozenset(t for t in reading.stems if t not in _GENERIC_SUBJECT)


def _clean(token: str) -> str:
    token = token.rstrip(_TRAILING)
    return token[:-2] if token.endswith("'s") else token


def _content(word: str) -> bool:
    return bool(word) and word not in STOPWORDS and word not in NEGATORS


def _value_like(raw: list[str], low: list[str], ends: list[bool], i: int) -> bool:
    word, original = low[i], raw[i]
    if not _content(word):
        return False
    if any(c.isdigit() for c in word) or any(c in "./:_~$€£%#" for c in word.strip(".")):
        return True
    if word in _VALUE_WORDS:
        return True
    sentence_start = i == 0 or ends[i - 1]
    return not sentence_start and original[:1].isupper()


def _starts_with_year(low: list[str]) -> bool:
    return len(low) > 1 and low[0] == "in" and len(low[1]) == 4 and low[1].isdigit()


def _span(
    tokens: tuple[str, ...], ends: list[bool], start: int, stop_words: frozenset[str]
) -> tuple[int, int]:
    """``[start, end)``: up to :data:`_SPAN` tokens from ``start``, stopping before a word
    of ``stop_words`` and after a clause end."""
    end = start
    while end < len(tokens) and end - start < _SPAN and tokens[end] not in stop_words:
        end += 1
        if ends[end - 1]:
            break
    return start, end


_TO = frozenset({"to"})
_VALUE_STOP = frozenset(
    {"for", "in", "on", "with", "by", "after", "because", "since", "due", "so", "but"}
    | {"and", "which", "when", "until", "following"}
)
"""Words ending a named new value: "with Meilisearch for search" names Meilisearch."""


def _find_to(low: list[str], ends: list[bool], start: int) -> int | None:
    """The "to" of "changed <subject> to Y" within 10 tokens, same clause."""
    for j in range(start, min(len(low), start + 10)):
        if low[j] == "to":
            return j
        if ends[j]:
            return None
    return None


_WITH_BY = frozenset({"with", "by", "for"})
_NONE: frozenset[str] = frozenset()


def _cues(low: list[str], tokens: tuple[str, ...], ends: list[bool]) -> list[Cue]:
    """Explicit update cues, each with the old and/or new value it names."""
    cues: list[Cue] = []
    n = len(low)
    for i, word in enumerate(low):
        if word == "from" and i + 1 < n and low[i + 1] != "now":
            window = low[max(0, i - _WINDOW) : i]
            changing = CHANGE_VERBS.intersection(window) or _RENAME.intersection(window)
            over = "over" in window and _TAKEOVER.intersection(window)
            if changing or over:
                a, b = _span(tokens, ends, i + 1, _TO)
                old = content(tokens[a:b])
                new = _NONE
                if b < n and low[b] == "to":
                    c, d = _span(tokens, ends, b + 1, _VALUE_STOP)
                    new = content(tokens[c:d])
                    cues.append(Cue("from … to", old, new))
                elif over:
                    cues.append(Cue("took over from", old, new))
        elif word == "instead" and i + 1 < n and low[i + 1] == "of":
            a, b = _span(tokens, ends, i + 2, _NONE)
            cues.append(Cue("instead of", content(tokens[a:b]), _NONE))
        elif word == "rather" and i + 1 < n and low[i + 1] == "than":
            a, b = _span(tokens, ends, i + 2, _NONE)
            cues.append(Cue("rather than", content(tokens[a:b]), _NONE))
        elif word == "longer" and i and low[i - 1] == "no":
            cues.append(_no_longer(low, tokens, ends, i))
        elif word == "more" and i and low[i - 1] == "no":
            a, b = _span(tokens, ends, i + 1, _NONE)
            cues.append(Cue("no more", content(tokens[a:b]), _NONE))
        elif word in _ARROWS and 0 < i < n - 1:
            cues.append(Cue("->", content(tokens[i - 1 : i]), content(tokens[i + 1 : i + 2])))
        elif word in _REPLACE:
            cues.append(_replaced(low, tokens, ends, i))
        elif word in _RENAME and "from" not in low[i + 1 : i + 1 + _WINDOW]:
            a, b = _span(tokens, ends, i + 1, _TO)
            if b < n and low[b] == "to":
                c, d = _span(tokens, ends, b + 1, _NONE)
                cues.append(Cue("renamed … to", content(tokens[a:b]), content(tokens[c:d])))
        elif word in CHANGE_VERBS and "from" not in low[i + 1 : i + 1 + _WINDOW]:
            to = _find_to(low, ends, i + 1)
            if to is not None:
                c, d = _span(tokens, ends, to + 1, _VALUE_STOP)
                cues.append(Cue(f"{word} to", _NONE, content(tokens[c:d])))
    return cues


def _no_longer(low: list[str], tokens: tuple[str, ...], ends: list[bool], i: int) -> Cue:
    """ "no longer X": X follows, or, when only a state verb follows ("Node 16 is no longer
    used"), X is what came before the copula."""
    a, b = _span(tokens, ends, i + 1, _NONE)
    after = frozenset(t for t in content(tokens[a:b]) if t not in STATE_WORDS | {"used"})
    if after:
        return Cue("no longer", content(tokens[a:b]), _NONE)
    j = i - 2
    while j >= 0 and low[j] in {"is", "are", "was", "were", "be"}:
        j -= 1
    start = j
    while start >= 0 and j - start < 3 and not (start < j and ends[start]):
        start -= 1
    return Cue("no longer", content(tokens[start + 1 : j + 1]), _NONE)


def _replaced(low: list[str], tokens: tuple[str, ...], ends: list[bool], i: int) -> Cue:
    """ "replaced X with Y", "X was replaced by Y", "Y replaced X"."""
    n = len(low)
    passive = i and low[i - 1] in {"was", "were", "been", "be", "is", "are"}
    if passive and i + 1 < n and low[i + 1] == "by":
        c, d = _span(tokens, ends, i + 2, _NONE)
        return Cue("replaced by", _NONE, content(tokens[c:d]))
    a, b = _span(tokens, ends, i + 1, _WITH_BY)
    if b < n and low[b] in _WITH_BY and low[b] != "for":
        c, d = _span(tokens, ends, b + 1, _VALUE_STOP)
        return Cue("replaced … with", content(tokens[a:b]), content(tokens[c:d]))
    before = content(tokens[max(0, i - 1) : i])
    return Cue("replaced", content(tokens[a : min(b, a + 1)]), before)
