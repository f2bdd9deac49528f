"""Does a question name something: a proper name, a number, an identifier?

The two entry points are good at different questions. Full text is exact: a name
("Caroline", "Starbucks"), a number ("issue 4521", "port 8080") or an identifier
(``api_server``, ``ECONNREFUSED``, ``src/app.py``) either occurs in a memory or does not,
and BM25 finds the few that hold it. A question that only describes ("How many kitchen
items did I replace or fix?") is matched better by meaning: its words are common ones, a
long memory that happens to use several of them scores high in full text, and the memory
that answers often says it in other words ("I got rid of the old toaster"). So recall
weighs the full-text ranking by ``recall.fts_weight`` for a question that names something
and by ``recall.fts_weight_plain`` for one that does not (BENCHMARKS.md, session 19: on
LongMemEval the plain questions gain and the naming ones do not move; on LoCoMo, whose
questions name a speaker, a lower weight for naming questions loses).

A word names something when it is capitalised and does not start a sentence (after ".",
"!", "?", ":" or a line break, but not after "e.g." or "vs."; nor is it "I" or one of its
contractions), is written in capitals ("API"; not "OK"), is identifier-shaped as the
encoder reads it (``encoding.text.is_identifier``: snake_case, "GitPython", "app.py",
"v2.3"; not "e.g"), holds ``/``, ``::``, ``@`` or ``#``, or is a number of three digits or
more ("2023", "8080"; the "5" of "5 days ago" is a count) or mixes digits and letters
("v2", "ipv6"; not a quantity such as "3rd", "5pm" or "10k"). A question typed in lower
case therefore counts as plain; it loses only the extra weight of its words.

One pass over the words of at most ``SCANNED_CHARS`` characters; each word is tested by
patterns that cannot backtrack (the encoder's among them, in the adversarial-input guard).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from mnemonic.encoding.text import STOPWORDS, is_identifier

SCANNED_CHARS = 1000
MAX_NAMES = 8  # proper names a question is searched without, at most (each one is looked up)
_LABEL_LEAD = 16  # leading whitespace a speaker's label may follow
# a run of word characters and the joiners an identifier keeps, or what ends a sentence
_TOKEN = re.compile(r"[@#]?[\w'’]+(?:(?:::|[./@#-])[\w'’]+)*|[.!?:\n]")
_ENDS = frozenset({".", "!", "?", ":", "\n"})  # "Question: What ..." starts one too
_PRONOUN = frozenset({"i", "i'm", "i've", "i'd", "i'll", "i’m", "i’ve", "i’d", "i’ll"})
# a period after these ends no sentence: "e.g. Paris" names Paris
_ABBREVIATIONS = frozenset({"e.g", "i.e", "vs", "etc", "cf", "incl", "approx", "viz", "ca"})
_NOT_ACRONYMS = frozenset({"OK", "AM", "PM"})
_JOINERS = ("/", "::", "@", "#")  # beside what ``is_identifier`` already reads
_POSSESSIVE = re.compile(r"['’]s$")
# a count or a quantity, not a name: "3rd", "5pm", "10k", "2x", "15th"
_QUANTITY = re.compile(r"\d+(?:st|nd|rd|th|am|pm|k|m|h|s|d|x|kg|km|mb|gb)?")


def names_something(question: str) -> bool:
    """True when a word of ``question`` is a name, a number or an identifier (see module)."""
    return any(_is_name(word, starts) for word, starts in _words(question))


def proper_names(question: str) -> list[str]:
    """The first ``MAX_NAMES`` proper names of ``question``: words of letters only,
    capitalised past a sentence start, not acronyms, identifiers or stopwords ("Melanie",
    "Paris"; not "I", "API", "GitHub", "The"), without a possessive "'s", each once, in
    order. What ``without_names`` can take out."""
    found: dict[str, None] = {}
    for word, starts in _words(question):
        name = _POSSESSIVE.sub("", word.strip("'’.-"))
        if (
            name.isalpha()
            and _is_name(name, starts)
            and not name.isupper()
            and not is_identifier(name)
            and name.casefold() not in STOPWORDS
        ):
            found[name] = None
            if len(found) == MAX_NAMES:
                break
    return list(found)


def without_names(question: str, names: Sequence[str]) -> str:
    """``question`` with every whole-word occurrence of ``names`` (and its possessive)
    taken out: "What do Melanie's kids like?" without Melanie is "What do kids like?".
    A name joined to another word ("Tim-Tam", "Tim's-") is left as it is."""
    if not names:
        return question
    words = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    cut = re.sub(rf"(?<![\w'’-])(?:{words})(?:['’]s)?(?![\w'’-])", "", question)
    return " ".join(cut.split())


def speakers(samples: Mapping[str, Sequence[str]]) -> list[str]:
    """The names whose sampled holders mostly begin with them as a speaker's label
    ("Melanie: ..."): ``samples`` maps each name to some of the memories that hold it.
    A topic held as widely ("Postgres" in a database project) is no label."""
    return [
        name
        for name, contents in samples.items()
        if contents and 2 * sum(_labels(content, name) for content in contents) >= len(contents)
    ]


def _labels(content: str, name: str) -> bool:
    """Does ``content`` begin with ``name`` as a speaker's label? Only its start is looked
    at (a memory may be megabytes long)."""
    text = content[: len(name) + _LABEL_LEAD].lstrip()
    return text.startswith(name) and text[len(name) : len(name) + 1] == ":"


def _words(question: str) -> Iterator[tuple[str, bool]]:
    """Each word of ``question``'s first ``SCANNED_CHARS`` characters, and whether it
    starts a sentence."""
    starts_sentence = True
    previous = ""
    for word in _TOKEN.findall(question[:SCANNED_CHARS]):
        if word in _ENDS:
            if not (word == "." and previous.casefold() in _ABBREVIATIONS):
                starts_sentence = True
            continue
        yield word, starts_sentence
        starts_sentence = False
        previous = word


def _is_name(token: str, starts_sentence: bool) -> bool:
    word = token.strip("'’.-")
    if not word:
        return False
    if any(joiner in word for joiner in _JOINERS):
        return True  # a path, a handle, a qualified name
    if is_identifier(word):  # the encoder's test: snake_case, GitPython, app.py, v2.3
        return word.casefold() not in _ABBREVIATIONS  # "e.g" is dotted, not a name
    if any(c.isdigit() for c in word):
        if word.isdigit():
            return len(word) >= 3  # "2023", "8080"; not the 5 of "5 days ago"
        return _QUANTITY.fullmatch(word.casefold()) is None  # "v2", "ipv6"; not "3rd"
    letters = [c for c in word if c.isalpha()]
    if not letters or word.casefold() in _PRONOUN:
        return False
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return word not in _NOT_ACRONYMS  # an acronym or a constant, wherever it stands
    return word[0].isupper() and not starts_sentence
