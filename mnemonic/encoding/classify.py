"""Memory type, initial salience and significance by cheap, explainable heuristics.

Classification precedence (first rule that matches wins):

1. ``handoff``: explicit hand-over framing ("handoff", "next steps",
   "for whoever", "where I left off", "picking up where/from", "todo for").
   The framing says what the note is *for*, whatever it mentions.
2. ``error`` (strong): a failure artifact: a Python traceback, a line that
   starts with ``SomethingError:``/``Exception``/``fatal:``/``panic:``/
   ``error[E...]:``, "segfault"/"segmentation fault"/"core dumped", a
   non-zero exit code/status, ``npm ERR!``, "panicked at". Pasted output is
   unambiguous evidence that something failed.
3. ``decision``: "decided", "decision:", "we will/we'll" (not "we'll see/
   talk/miss/catch up"), "going with", "chose", "switch(ed) to", "let's
   use", "settled on", "opted for", "agreed to/on".
4. ``learning``: "TIL" (upper case), "today I learned", "learned/learnt",
   "note to self", "remember that/to", "pro tip", and "how to" only at the
   start of a sentence or after "figured out/found out/here's/this is"
   ("I don't know how to feel" is chat, not a lesson).
5. ``insight``: "realised/realized", "turns/turned out", "the reason is/was
   /why", "root cause", "insight", "the (actual) problem/issue/culprit is",
   "which explains", "that's/this is why", and "because" only right after a
   behaviour word ("fails because", "was slow because"); a bare "because"
   is far too common to mean insight.
6. ``error`` (weak): the words error(s), exception, failed/failing/failure,
   fatal, crash(ed), "permission denied", "command not found", "no such
   file or directory", or an exception class name anywhere (``ImportError``).
   These appear in many decisions and lessons ("decided
   to retry on error"), so they only win when nothing more specific did.
7. ``general`` otherwise.

Significance (:func:`significance`) is a bounded additive score in [0, 1]
answering "how much is this worth remembering?", independent of salience
(which decays and is reinforced later):

* pure small talk ("ok", "thanks!", "lol", "sounds good 👍") or text without
  any word: 0.05, whatever the type;
* otherwise start at 0.45 and add: length in words (1-2: -0.15, 3-5: -0.05,
  6-150: +0.1, 151-600: +0.05, longer: 0, since huge pastes are less
  focused); +0.1 if any identifier-shaped token (``foo_bar``, ``setup.py``,
  ``v1.2.3``); +0.05 if any number; +0.05 if a path or URL; type weight
  (decision/insight/handoff +0.15, error/learning +0.1, general 0); -0.05 for
  a short text (< 40 words) containing ``?``, since questions record a need
  rather than knowledge. The result is clamped to [0, 1] and rounded to 4
  places so it is stable across platforms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from mnemonic.encoding.text import WORD_RE, is_identifier
from mnemonic.store.models import MemoryType

DEFAULT_SALIENCE: Mapping[MemoryType, float] = MappingProxyType(
    {
        MemoryType.DECISION: 0.85,
        MemoryType.ERROR: 0.8,
        MemoryType.INSIGHT: 0.9,
        MemoryType.LEARNING: 0.8,
        MemoryType.GENERAL: 0.7,
        MemoryType.HANDOFF: 0.95,
    }
)
"""Initial salience per type (read-only; pass your own mapping to override)."""

_I = re.IGNORECASE
_M = re.MULTILINE

_HANDOFF_RE = re.compile(
    r"\bhand(?:ing|ed)?[- ]?(?:off|over)s?\b|\bnext steps?\b|\bfor whoever\b"
    r"|\bwhere (?:i|we|you|they|he|she) left off\b|\bleft off at\b"
    r"|\bpicking (?:this |it )?up (?:where|from)\b|\btodo for\b",
    _I,
)
_ERROR_STRONG_RE = re.compile(
    r"^Traceback \(most recent call last\)"
    r"|^\s{0,8}(?:[\w.]{0,200}\.)?(?-i:[A-Z]\w{0,100}(?:Error|Exception))\b(?::|$)"
    r"|^Exception in thread\b"
    r"|^\s{0,8}(?:fatal|panic|error(?:\[\w{1,10}\])?)\s?:"
    r"|\bsegfault(?:ed)?\b|\bsegmentation fault\b|\bcore dumped\b"
    r"|\bexit(?:ed)?(?: with)?(?: exit)? (?:code|status) [1-9]\d{0,5}\b"
    r"|\bnon-zero exit\b|(?-i:\bnpm ERR!)|\bpanicked at\b",
    _M | _I,
)
_DECISION_RE = re.compile(
    r"\bdecided\b|\bdecision:|\bwe(?: will|'ll|’ll) (?!see\b|talk\b|miss\b|catch up\b)"
    r"|\bgoing with\b|\bchose\b"
    r"|\bswitch(?:ed|ing)? (?:over )?to\b|\blet(?:'|’)?s (?:use|go with)\b"
    r"|\bsettled on\b|\bopted (?:for|to)\b|\bagreed (?:to|on)\b",
    _I,
)
_LEARNING_RE = re.compile(
    r"\btoday i learned\b|\blearn(?:ed|t)\b|\bnote to self\b"
    r"|(?:^|[.!?:]\s{1,5})how to\b|\b(?:figured out|found out|here's|here is|this is) how to\b"
    r"|\bremember (?:that|to)\b|\bpro tip\b",
    _I | _M,
)
_TIL_RE = re.compile(r"\bTIL\b")
_INSIGHT_RE = re.compile(
    r"\breali[sz](?:e|ed|ing)\b|\bturn(?:s|ed) out\b|\bthe reason (?:is|was|why)\b"
    r"|\broot cause\b|\binsights?\b"
    r"|\bthe (?:real |actual )?(?:problem|issue|culprit|bug) (?:is|was)\b"
    r"|\bwhich explains\b|\b(?:that's|that’s|this is|that is) why\b|\bexplains why\b"
    r"|\b(?:fail(?:s|ed)?|broke|breaks|crash(?:es|ed)?|hangs?|hung|happen(?:s|ed)"
    r"|slow|works?|worked|timed? out|leaks?|leaked) because\b",
    _I,
)
_ERROR_WEAK_RE = re.compile(
    r"\berrors?\b|\bexceptions?\b|\bfail(?:ed|ing|ure|s)\b|\bfatal\b|\bcrash(?:ed|es|ing)?\b"
    r"|\bpermission denied\b|\bcommand not found\b|\bno such file or directory\b"
    r"|(?-i:\b[A-Z]\w{0,100}(?:Error|Exception)\b)",
    _I,
)


# (type, lowercase hints, pattern) in precedence order. A pattern can only
# match if one of its hints occurs in the lowercased text; checking the hints
# with ``in`` first keeps classification of chat lines and 100 KB pastes cheap.
_RULES: tuple[tuple[MemoryType, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        MemoryType.HANDOFF,
        ("hand", "next step", "whoever", "left off", "picking", "todo for"),
        _HANDOFF_RE,
    ),
    (
        MemoryType.ERROR,
        (
            "traceback",
            "error",
            "exception",
            "fatal",
            "panic",
            "seg",
            "core dumped",
            "exit",
            "npm err",
        ),
        _ERROR_STRONG_RE,
    ),
    (
        MemoryType.DECISION,
        (
            "decid",
            "decision",
            "we ",
            "we'",
            "we’",
            "going with",
            "chose",
            "switch",
            "let",
            "settled",
            "opted",
            "agreed",
        ),
        _DECISION_RE,
    ),
    (MemoryType.LEARNING, ("til",), _TIL_RE),
    (
        MemoryType.LEARNING,
        ("today i", "learn", "note to self", "how to", "remember", "pro tip"),
        _LEARNING_RE,
    ),
    (
        MemoryType.INSIGHT,
        ("reali", "turn", "reason", "root cause", "insight", "the ", "explains", "why", "because"),
        _INSIGHT_RE,
    ),
    (
        MemoryType.ERROR,
        ("error", "exception", "fail", "fatal", "crash", "denied", "not found", "no such file"),
        _ERROR_WEAK_RE,
    ),
)


def classify_type(text: str) -> MemoryType:
    """Classify ``text`` with the documented precedence (module docstring)."""
    lowered = text.lower()
    for memory_type, hints, pattern in _RULES:
        if any(hint in lowered for hint in hints) and pattern.search(text):
            return memory_type
    return MemoryType.GENERAL


def initial_salience(
    memory_type: MemoryType, table: Mapping[MemoryType, float] = DEFAULT_SALIENCE
) -> float:
    """Starting salience for a new memory of ``memory_type``, clamped to [0, 1].

    A table without the type falls back to its ``general`` entry, then to the
    default table, so a partial override cannot crash encoding.
    """
    if memory_type in table:
        value = table[memory_type]
    else:
        value = table.get(MemoryType.GENERAL, DEFAULT_SALIENCE[memory_type])
    return min(1.0, max(0.0, float(value)))


SMALL_TALK_SCORE = 0.05
_SMALL_TALK_TEXT = """
ok okay k kk thanks thank you ty thx cheers lol lmao rofl haha hahaha hehe yes
yeah yep yup no nope nah sure cool nice great good awesome hi hello hey bye cya
morning night gn gm np yw welcome wow oh ah hmm um alright right fine perfect
done got it sounds will do me too same agreed indeed true lgtm ack noted
"""
_SMALL_TALK_WORDS = frozenset(_SMALL_TALK_TEXT.split())
_LAUGHTER_RE = re.compile(r"(?:ha|he|hi){2,10}h?|l(?:ol){1,10}|lo{1,10}l", _I)
_DIGIT_RE = re.compile(r"\d")
# URLs, rooted paths with a directory, and relative paths ending in a file name.
# Each alternative can only start at a boundary, which keeps the scan linear.
_PATH_OR_URL_RE = re.compile(
    r"\b[a-z][\w+.-]{0,20}://\S"
    r"|(?<![\w/.~-])(?:~|\.{1,2})?/[\w.-]{1,200}/"
    r"|(?<![\w/.-])[\w.-]{1,200}/[\w./-]{0,400}\.[a-z]{1,10}\b",
    _I,
)
_TYPE_WEIGHT: Mapping[MemoryType, float] = MappingProxyType(
    {
        MemoryType.DECISION: 0.15,
        MemoryType.INSIGHT: 0.15,
        MemoryType.HANDOFF: 0.15,
        MemoryType.ERROR: 0.1,
        MemoryType.LEARNING: 0.1,
        MemoryType.GENERAL: 0.0,
    }
)
_MAX_FEATURE_TOKENS = 5000


def significance(text: str, memory_type: MemoryType) -> float:
    """How much ``text`` is worth remembering, in [0, 1] (see the module docstring)."""
    tokens = WORD_RE.findall(text)
    if is_small_talk(tokens):
        return SMALL_TALK_SCORE
    count = len(tokens)
    score = 0.45 + _length_term(count) + _TYPE_WEIGHT.get(memory_type, 0.0)
    sample = tokens[:_MAX_FEATURE_TOKENS]
    # Plain lower-case words cannot be identifiers; skip the regex for them.
    if any(is_identifier(t) for t in sample if not (t.isalpha() and t.islower())):
        score += 0.1
    if _DIGIT_RE.search(text):
        score += 0.05
    if "/" in text and _PATH_OR_URL_RE.search(text):
        score += 0.05
    if count < 40 and "?" in text:
        score -= 0.05
    return round(min(1.0, max(0.0, score)), 4)


def is_small_talk(tokens: list[str]) -> bool:
    """True for texts with no words, or at most four words that are all chit-chat."""
    if len(tokens) > 4:
        return False
    return all(
        token.lower() in _SMALL_TALK_WORDS or _LAUGHTER_RE.fullmatch(token) for token in tokens
    )


def _length_term(count: int) -> float:
    """Length contribution: a sweet spot of 6-150 words."""
    if count <= 2:
        return -0.15
    if count <= 5:
        return -0.05
    if count <= 150:
        return 0.1
    if count <= 600:
        return 0.05
    return 0.0
