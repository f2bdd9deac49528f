"""The clauses of a question that joins facts: "How old was I when Alex was born?".

Why: a question's one vector is an average of everything it asks. When it joins two facts
that were told apart (the asker's age in one conversation, Alex's birth in another; "the
events before the move and after the wedding"), the memory holding each fact alone can sit
far from that average, under memories that match neither well but both a little. Recall
embeds each clause too, and the nearest memories of every clause join the vector entry
point as a further list (``recall.clause_weight``), so the evidence of each part is a
candidate. Measured in BENCHMARKS.md (session 20).

A question is cut at connective words: when, than, before, after, since, while, and, or.
A part needs two words or more ("and I" joins nothing), there must be two parts at least,
and at most ``MAX_CLAUSES`` are kept. Only the first ``SCANNED_CHARS`` characters are read:
one regex split over literal words, linear, nothing to backtrack.
"""

from __future__ import annotations

import re

SCANNED_CHARS = 1000
MAX_CLAUSES = 4  # each clause is one more embedding and one more vector search
_CONNECTIVE = re.compile(r"\b(?:when|than|before|after|since|while|and|or)\b", re.IGNORECASE)
_EDGES = " \t\r\n?!.,;:\"'"


def question_clauses(question: str) -> list[str]:
    """The clauses of ``question`` (see module); none when it does not join facts."""
    parts = (part.strip(_EDGES) for part in _CONNECTIVE.split(question[:SCANNED_CHARS]))
    kept = list(dict.fromkeys(part for part in parts if len(part.split(maxsplit=1)) >= 2))
    return kept[:MAX_CLAUSES] if len(kept) >= 2 else []
