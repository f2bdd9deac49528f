"""Does a question ask about several events at once?

"How many doctor's appointments did I go to in March?", "What is the total I spent on
gifts?", "Which did I buy first, the necklace or the photo album?", "How many days passed
between the workshop and the planting?": the answer is spread over several episodes (one
per appointment, purchase or event), and a ranking by relevance alone fills the top with
the turns of whichever episode matches best. For such a question recall spreads its
results over episodes (``recall.episode_spread``); for any other it changes nothing.

The test is lexical (English cue words), on words only, so it is linear in the question
and cannot be made to backtrack: one pass to split words, one over the words. Only the
first ``SCANNED_CHARS`` characters are read: a question states what it asks early, and a
pasted page is not a question.
"""

from __future__ import annotations

import re

SCANNED_CHARS = 1000
_WORD = re.compile(r"[^\W\d_]+|\?")  # words, and question marks (a question ends)

# one word that asks for a sum or a set
_AGGREGATE_WORDS = frozenset({"total", "altogether", "combined", "both", "list"})
# two adjacent words that do
_AGGREGATE_PAIRS = frozenset(
    {("how", "many"), ("how", "much"), ("in", "total"), ("all", "the"), ("each", "of")}
)
# an ordering word followed (later) by "or": which of two events came first
_ORDER_WORDS = frozenset({"first", "earlier", "later", "sooner"})
_ORDER_PAIRS = frozenset({("most", "recently")})
# "compared to/with" a second thing
_COMPARE_PAIRS = frozenset({("compared", "to"), ("compared", "with")})


def asks_across_events(question: str) -> bool:
    """True for a count, a total, a set, or a comparison of two events (see module)."""
    words = _WORD.findall(question[:SCANNED_CHARS].casefold())
    ordering = between = False
    previous = ""
    for word in words:
        if word == "?":  # "first ... or" and "between ... and" within one question
            ordering = between = False
        pair = (previous, word)
        if word in _AGGREGATE_WORDS or pair in _AGGREGATE_PAIRS or pair in _COMPARE_PAIRS:
            return True
        if (ordering and word == "or") or (between and word == "and"):
            return True
        ordering = ordering or word in _ORDER_WORDS or pair in _ORDER_PAIRS
        between = between or word == "between"
        previous = word
    return False
