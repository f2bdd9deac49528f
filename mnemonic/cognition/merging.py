"""Near-duplicate clusters and their gist (pure).

Merging must never make a stored fact unfindable, so it is deliberately conservative:

* two memories may join a cluster only when the embedder finds them nearly identical
  (cosine >= ``similarity``, checked by the caller), they have the same project and type,
  the same numbers and no contradiction (``may_merge``, shared with the encoder), most of
  their content words in common, **and** one's content words contain the other's. The
  last rule is what keeps "deploy to staging" and "deploy to production" apart: each has
  a word the other lacks, so one is not a restatement of the other;
* the gist's content keeps every distinct sentence of its sources, oldest first; a
  sentence is dropped only when its full-text tokens (the tokens FTS5 stores, stems
  included) are all in one kept sentence, so every query that found a source by words
  finds the gist;
* a cluster whose gist would be longer than ``gist_max_chars`` is skipped.

An LLM may write the gist's *summary* (what a recall shows first), never its content, and
only when the summary keeps every named entity and number of the sources and adds no
number of its own (``faithful``); otherwise the heuristic summary is kept.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemonic.encoding.linking import may_merge, numberish
from mnemonic.encoding.text import STOPWORDS, is_identifier, words
from mnemonic.index.tokenize import raw_tokens, stem, tokens
from mnemonic.llm.completion.base import CompletionRequest

NEVER_MERGED = frozenset({"handoff"})
"""Types kept verbatim: a handoff is one session's note to the next, never a gist's part."""


@dataclass(frozen=True, slots=True)
class MergeParams:
    similarity: float = 0.93
    min_word_overlap: float = 0.6
    max_cluster: int = 5
    gist_max_chars: int = 4000


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory that may merge (active or fading, with a vector)."""

    seq: int
    id: str
    project: str
    type: str
    content: str
    timestamp: str  # ISO-8601 UTC as stored: string order is time order
    source: str = "api"
    state: str = "active"


def content_words(text: str) -> frozenset[str]:
    """Stemmed words of ``text`` without stopwords."""
    return frozenset(stem(w) for w in raw_tokens(text) if w not in STOPWORDS)


def may_join(a: str, b: str, p: MergeParams) -> bool:
    """Whether two near-identical texts (by vector) are restatements of one another."""
    if not may_merge(a, b):
        return False
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return wa == wb
    if not (wa <= wb or wb <= wa):
        return False  # each says something the other does not: a different fact
    return len(wa & wb) / len(wa | wb) >= p.min_word_overlap


def clusters(
    seeds: Sequence[int],
    neighbours: Mapping[int, Sequence[tuple[int, float]]],
    found: Mapping[int, Candidate],
    p: MergeParams,
) -> list[list[int]]:
    """Disjoint clusters (seqs, seed first) of at most ``max_cluster`` memories.

    ``neighbours[seed]`` lists (seq, cosine) of memories at or above ``similarity``.
    A member joins only if it may join every member already in (complete linkage on the
    word rules), so a chain A~B~C cannot pull in a C that contradicts A.
    """
    used: set[int] = set()
    out: list[list[int]] = []
    for seed in seeds:
        first = found.get(seed)
        if seed in used or first is None or first.type in NEVER_MERGED:
            continue
        members = [seed]
        for other, cosine in sorted(neighbours.get(seed, ()), key=lambda h: (-h[1], h[0])):
            cand = found.get(other)
            if cosine < p.similarity or cand is None or other in used or other in members:
                continue
            if cand.project != first.project or cand.type != first.type:
                continue
            if all(may_join(cand.content, found[m].content, p) for m in members):
                members.append(other)
                if len(members) >= p.max_cluster:
                    break
        if len(members) >= 2:
            used.update(members)
            out.append(members)
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def sentences(text: str) -> list[str]:
    """``text`` split at sentence ends and line breaks, trimmed, empty parts dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def heuristic_gist(texts: Sequence[str]) -> str:
    """Every distinct sentence of ``texts`` (given oldest first), in order, one per line.

    A sentence whose FTS tokens all occur (with their counts) in one longer kept sentence
    adds nothing a query could find, so it is dropped; everything else is kept verbatim.
    """
    parts: list[tuple[int, str, Counter[str]]] = []
    for text in texts:
        for sentence in sentences(text):
            parts.append((len(parts), sentence, Counter(tokens(sentence))))
    kept: list[tuple[int, str, Counter[str]]] = []
    seen_plain: set[str] = set()
    for order, sentence, counts in sorted(parts, key=lambda t: (-sum(t[2].values()), t[0])):
        plain = " ".join(sentence.split()).casefold()
        if plain in seen_plain:
            continue
        if counts and any(counts <= other for _, _, other in kept):
            continue
        seen_plain.add(plain)
        kept.append((order, sentence, counts))
    return "\n".join(s for _, s, _ in sorted(kept, key=lambda t: t[0]))


def plan_gist(members: Sequence[Candidate], p: MergeParams) -> str | None:
    """The gist content of a cluster, or None when it would exceed ``gist_max_chars``."""
    ordered = sorted(members, key=lambda m: (m.timestamp, m.seq))
    if sum(len(m.content) for m in ordered) > p.gist_max_chars * len(ordered):
        return None
    gist = heuristic_gist([m.content for m in ordered])
    return gist if 0 < len(gist) <= p.gist_max_chars else None


_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w.+-]*[A-Za-z0-9]")


def named_entities(text: str) -> frozenset[str]:
    """Names a faithful rewrite must keep (case folded): numbers and versions, code-like
    identifiers, quoted or backticked terms, and capitalised words inside a sentence."""
    found: set[str] = set(numberish(text))
    found.update(w.casefold() for w in words(text) if is_identifier(w))
    found.update(q.casefold() for q in re.findall(r"[`\"']([^`\"'\n]{1,60})[`\"']", text))
    for sentence in sentences(text):
        found.update(m.casefold() for m in _CAPITALISED.findall(sentence))
    return frozenset(e.strip() for e in found if e.strip())


def faithful(summary: str, sources: Sequence[str]) -> bool:
    """True when ``summary`` keeps every named entity of ``sources`` and adds no number."""
    text = summary.casefold()
    wanted = frozenset().union(*(named_entities(s) for s in sources))
    if any(entity not in text for entity in wanted):
        return False
    known = frozenset().union(*(numberish(s) for s in sources))
    return numberish(summary) <= known


GIST_MAX_SUMMARY = 300

_SYSTEM = (
    "You merge near-duplicate notes of a developer's memory into one short summary. "
    "Keep every name, identifier, path, version and number exactly as written. "
    "Do not add anything that is not in the notes."
)


def gist_request(texts: Sequence[str]) -> CompletionRequest:
    """The question for an LLM summary of a cluster (texts are stored, redacted text)."""
    notes = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(texts))
    return CompletionRequest(
        operation="gist",
        agent="consolidation",
        system=_SYSTEM,
        user=f"Notes:\n{notes}\n\nAnswer with the summary as JSON.",
        schema={
            "type": "object",
            "properties": {"summary": {"type": "string", "maxLength": GIST_MAX_SUMMARY}},
            "required": ["summary"],
            "additionalProperties": False,
        },
        max_tokens=256,
    )


def accept_summary(answer: Mapping[str, Any] | None, sources: Sequence[str]) -> str | None:
    """The LLM's summary if it is usable and faithful, else None (keep the heuristic)."""
    if not answer:
        return None
    summary = answer.get("summary")
    if not isinstance(summary, str):
        return None
    summary = " ".join(summary.split())
    if not summary or len(summary) > GIST_MAX_SUMMARY:
        return None
    return summary if faithful(summary, sources) else None


# ---- the gist's links --------------------------------------------------------------------

LinkRow = tuple[int, int, str, float]
"""An association: source seq, target seq, relation, strength."""
LinkKey = tuple[int, int, str]


def inherited_links(
    rows: Sequence[LinkRow], inside: set[int], gist: int
) -> tuple[dict[LinkKey, float], list[tuple[int, float]]]:
    """The links a gist inherits from its sources (``inside``): the strongest per
    neighbour and relation, so spreading activation still reaches what the sources were
    linked to, with ``related`` links capped (``cap_related``). Also the memories that
    superseded a source, with their strengths: whether they supersede the gist depends on
    dates (``supersede_gist``)."""
    best: dict[LinkKey, float] = {}
    incoming: list[tuple[int, float]] = []
    for a, b, rel, strength in rows:
        if a in inside and b in inside:
            continue
        if rel == "supersedes":  # directed: newer -> older
            if a not in inside:
                incoming.append((a, strength))
                continue
            key = (gist, b, rel)
        else:
            other = b if a in inside else a
            key = (min(gist, other), max(gist, other), rel)
        best[key] = max(best.get(key, 0.0), strength)
    cap_related(best, rows, inside)
    return best, incoming


def cap_related(best: dict[LinkKey, float], rows: Sequence[LinkRow], inside: set[int]) -> None:
    """Keep only the strongest ``related`` links of the gist, as many as its best-linked
    source had: the dreamer caps them per memory (``dreaming.max_related_per_memory``),
    and a gist inheriting every source's would hold several times that (found by the
    1,000-cycle walk, tests/test_cognition_properties.py)."""
    per_source: dict[int, int] = {}
    for a, b, rel, _ in rows:
        if rel == "related" and not (a in inside and b in inside):
            source = a if a in inside else b
            per_source[source] = per_source.get(source, 0) + 1
    related = sorted((k for k in best if k[2] == "related"), key=lambda k: -best[k])
    for key in related[max(per_source.values(), default=0) :]:
        del best[key]


def supersede_gist(
    best: dict[LinkKey, float],
    incoming: Sequence[tuple[int, float]],
    stamps: Mapping[int, str],
    gist: int,
) -> None:
    """A memory that superseded one source supersedes the gist only if it is newer than
    every source (the gist carries the newest one's date; ``stamps`` are stored
    timestamps, which sort as text); else the gist, holding a later fact too, would rank
    below something older, or two memories would each supersede the other (measured in
    bench/lifecycle.py)."""
    for a, strength in incoming:
        if stamps.get(a, "") > stamps[gist] and (gist, a, "supersedes") not in best:
            key = (a, gist, "supersedes")
            best[key] = max(best.get(key, 0.0), strength)
