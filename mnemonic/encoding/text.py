"""Text primitives shared by the heuristic encoder: normalisation, hashing, tokens.

Everything here is a pure function over ``str`` so that duplicate detection,
concept extraction, classification and contradiction checks all agree on what
a "word" is.

Tokenizer rules (:func:`words`), chosen so developer text survives intact:

* A word starts with a Unicode letter, digit or underscore (``\\w``) and may
  continue with more of those or with combining marks (so decomposed ``café``
  and Devanagari/Thai words are not cut at their vowel signs).
* A single ``.``, ``-``, ``'`` or ``’`` *between* two word characters joins them:
  ``setup.py``, ``v1.2.3``, ``os.path.join``, ``pytest-timeout``, ``don't``,
  ``2024-01-05`` and ``e.g`` are one token each. Leading/trailing punctuation
  is never part of a token (``--force`` -> ``force``, ``end.`` -> ``end``).
* Identifiers keep their shape: ``foo_bar``, ``__init__``, ``CamelCase``.
* CJK text is one token per run of ideographs/kana (no dictionary
  segmentation); emoji and symbols are not words.
* ``/``, ``:``, ``@`` and ``+`` split tokens, so paths and URLs yield their
  components (callers that care about paths look at the raw text).
* Case is preserved; callers lowercase when they match.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Combining marks that may continue (never start) a word. Python's ``\w`` does
# not match them, which would split decomposed Latin and most Indic scripts.
# The Indic range skips the dandas (U+0964/U+0965), which end sentences.
_MARKS = (
    "\u0300-\u036f"  # combining diacritical marks
    "\u0483-\u0489"  # Cyrillic
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"  # Hebrew points
    "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
    "\u0900-\u0963\u0966-\u0dff"  # Devanagari .. Sinhala blocks
    "\u0e31\u0e34-\u0e3a\u0e47-\u0e4e"  # Thai
    "\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd"  # Lao
    "\u0f71-\u0f87\u0f8d-\u0fbc"  # Tibetan
    "\u102b-\u103e\u1056-\u1059"  # Myanmar
    "\u17b4-\u17d3"  # Khmer
    "\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20f0\ufe20-\ufe2f"  # combining extensions
    "\u3099\u309a"  # combining kana voicing
    "\u200c\u200d"  # zero-width (non-)joiner inside Indic/Persian words
)
_PART = rf"\w[\w{_MARKS}]{{0,200}}"
WORD_RE = re.compile(rf"{_PART}(?:['’.\-]{_PART}){{0,30}}")
"""The token pattern behind :func:`words`; exported for span-aware callers."""

_WS_RE = re.compile(r"\s+")
_IDENTIFIER_RE = re.compile(
    r"[^\W_]_[^\W_]"  # snake_case, SCREAMING_CASE
    r"|^__\w"  # dunder / private names
    r"|[a-z][A-Z]"  # camelCase, CamelCase, iPhone
    r"|[A-Z]{2}[a-z]"  # HTTPServer
    r"|[^\W\d_]\w*\.[^\W\d_]"  # dotted names and file names: os.path, setup.py
    r"|^v?\d{1,6}(?:\.\d{1,6}){1,3}(?:[-+.]?\w{1,20})?$"  # versions with a v or 2+ dots
)
_PLAIN_DECIMAL_RE = re.compile(r"\d{1,30}\.\d{1,30}")

_STOPWORDS_TEXT = """
a about above after again against all also am an and any are aren't as at
be because been before being below between both but by
can can't cannot could couldn't
did didn't do does doesn't doing don't down during
each either else etc e.g ever every
few for from further
had hadn't has hasn't have haven't having he he'd he'll he's her here here's
hers herself him himself his how how's however
i i'd i'll i'm i've i.e if in into is isn't it it's its itself
just
let's
may me might more most much must mustn't my myself
neither no nor not now
of off often on once only or other ought our ours ourselves out over own
per please
quite
rather
same shall shan't she she'd she'll she's should shouldn't so some such
than that that's the their theirs them themselves then there there's these
they they'd they'll they're they've this those though through thus to too
under until up upon us
very via
was wasn't we we'd we'll we're we've were weren't what what's whatever when
when's whenever where where's whereas wherever whether which while who
who's whoever whom whose why why's will with within without won't would
wouldn't
yet you you'd you'll you're you've your yours yourself yourselves
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORDS_TEXT.split())
"""Common English function words (incl. question words and contractions).

Lowercase, with ASCII apostrophes; callers map ``’`` to ``'`` before lookup.
Content verbs and nouns are deliberately absent so that recall queries such as
"when did Caroline go to the support group" keep their meaningful terms.
"""


def normalise(text: str) -> str:
    """Canonical form for exact-duplicate detection.

    NFKC folds compatibility forms (full-width letters, ligatures, ``ﬁ``),
    casefold handles ``ß``/``ẞ`` and other locale-free case pairs, and
    whitespace runs collapse to one space. Punctuation is kept: ``rm -rf /``
    and ``rm -rf`` are different observations.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    # casefold can produce text that is no longer NFKC (e.g. U+0130), so
    # normalise again to make the function idempotent.
    folded = unicodedata.normalize("NFKC", folded)
    return _WS_RE.sub(" ", folded).strip()


def content_hash(text: str) -> str:
    """SHA-256 hex digest of :func:`normalise` (whitespace/case-insensitive)."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def words(text: str) -> list[str]:
    """Split ``text`` into word tokens (original case); see the module docstring."""
    return WORD_RE.findall(text)


def has_letter(token: str) -> bool:
    """True if ``token`` contains at least one letter (any script; not ``㉈``, ``Ⅻ``)."""
    return token[:1].isalpha() or any(ch.isalpha() for ch in token)


def is_identifier(token: str) -> bool:
    """True for code-shaped tokens: snake_case, CamelCase, dotted/file names, versions.

    A plain decimal such as ``3.5`` is a number, not a version; ``v3.5`` and
    ``1.2.3`` are versions.
    """
    if _PLAIN_DECIMAL_RE.fullmatch(token):
        return False
    return _IDENTIFIER_RE.search(token) is not None
