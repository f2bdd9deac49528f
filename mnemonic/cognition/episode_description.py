"""What an episode was about: title, summary, concepts, files, commands and salience.

The heuristic needs no LLM and is always computed: concepts by how many members name
them, the summary from the most salient members' summaries, files from the paths the
filesystem and git watchers record, commands from shell-history memories. With an LLM the
title, summary and concepts may come from its answer instead, but only what is grounded in
the members' own text is kept (a model that names a library, a person or a number the
members never mention is ignored, and the heuristic stands). Prompts are built only from
stored, already redacted text.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mnemonic.encoding.text import STOPWORDS, has_letter, is_identifier, words
from mnemonic.llm.completion.base import CompletionRequest

OPERATION = "episode_describe"
AGENT = "episoding"
_LINE_CHARS = 200  # longest member line in a prompt, and longest command kept
_CONCEPT_CHARS = 60
_STEM = 5  # plain words match the members' text on their first five letters


@dataclass(frozen=True, slots=True)
class MemberText:
    """A member memory as description needs it (stored, redacted text only)."""

    id: str
    seq: int
    timestamp: datetime
    summary: str
    content: str
    concepts: tuple[str, ...]
    type: str
    source: str
    salience: float
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Limits:
    summary_max_chars: int = 600
    title_max_chars: int = 80
    max_concepts: int = 8
    max_files: int = 30
    max_commands: int = 30
    llm_max_members: int = 40


@dataclass(frozen=True, slots=True)
class Description:
    title: str
    summary: str
    concepts: tuple[str, ...]
    files: tuple[str, ...]
    commands: tuple[str, ...]
    salience: float
    described_by: str = "heuristic"  # or "llm"


# ---- the heuristic ----------------------------------------------------------------------


def normalise_concept(text: str) -> str | None:
    """Lowercase, NFKC, one space between words, no punctuation at either end; None when
    nothing with a letter is left or it is too long to be a concept."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    folded = folded.strip(" .,;:!?\"'`()[]{}<>-_/")
    if not folded or len(folded) > _CONCEPT_CHARS or not has_letter(folded):
        return None
    return folded


def _words_of(concept: str) -> list[str]:
    """The content words of a multi-word concept ("redis pool size" -> redis, pool, size)."""
    found = [w for w in concept.split() if len(w) > 2 and has_letter(w) and w not in STOPWORDS]
    return found if len(found) > 1 else []


def top_concepts(members: Sequence[MemberText], limit: int) -> tuple[str, ...]:
    """The concepts most members name (each member counts once per concept), ties to the
    one named first.

    Members rarely name the same phrase ("redis pool size", "redis cache timeouts"), so
    the words of a phrase are candidates too: a word several members share outranks a
    phrase only one names. A word is left out when a phrase already chosen holds it and
    is named as often (it would say nothing more)."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for member in sorted(members, key=lambda m: (m.timestamp, m.seq)):
        seen: dict[str, None] = {}
        for raw in member.concepts:
            phrase = normalise_concept(raw)
            if phrase:
                seen[phrase] = None
                seen.update(dict.fromkeys(_words_of(phrase)))
        for concept in seen:
            counts[concept] += 1
            first.setdefault(concept, len(first))
    chosen: list[str] = []
    for concept in sorted(counts, key=lambda c: (-counts[c], first[c])):
        if len(chosen) >= limit:
            break
        if " " not in concept and any(
            concept in c.split() and counts[c] >= counts[concept] for c in chosen
        ):
            continue
        chosen.append(concept)
    return tuple(chosen)


def files_of(member: MemberText) -> list[str]:
    """Paths a member touched: a filesystem memory's ``path``; a git memory's changed
    ``files`` (relative to its repository, which is joined in front)."""
    meta = member.metadata
    event = meta.get("event")
    event = event if isinstance(event, Mapping) else {}
    if member.source == "filesystem":
        path = meta.get("path")
        return [path] if isinstance(path, str) and path else []
    if member.source == "git":
        repo = event.get("repo") or meta.get("path")
        listed = event.get("files")
        if not isinstance(listed, list):
            return []
        prefix = repo.rstrip("/") + "/" if isinstance(repo, str) and repo else ""
        return [prefix + f for f in listed if isinstance(f, str) and f]
    return []


def command_of(member: MemberText) -> str | None:
    """The command of a shell-history memory (its first line: the content of a failed one
    goes on with its exit status)."""
    if member.source != "terminal":
        return None
    line = next((part.strip() for part in member.content.splitlines() if part.strip()), "")
    return _cut(line, _LINE_CHARS) or None


def _unique(items: Sequence[str], limit: int) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))[:limit]


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def salience_of(members: Sequence[MemberText]) -> float:
    """Half the most salient member, half the mean: one striking moment counts, a long
    run of routine does not dilute it away. Always within [0, 1]."""
    if not members:
        return 0.0
    values = [min(max(m.salience, 0.0), 1.0) for m in members]
    return min(max(0.5 * max(values) + 0.5 * sum(values) / len(values), 0.0), 1.0)


def heuristic_title(project: str, concepts: Sequence[str], count: int, limit: int) -> str:
    prefix = f"{project}: " if project else ""
    body = ", ".join(concepts[:3]) if concepts else f"{count} memories"
    return _cut(prefix + body, limit)


def heuristic_summary(members: Sequence[MemberText], limit: int) -> str:
    """The most salient members' summaries, in time order, within ``limit`` characters."""
    ranked = sorted(members, key=lambda m: (-m.salience, m.timestamp, m.seq))
    chosen: list[MemberText] = []
    seen: set[str] = set()
    used = 0
    for member in ranked:
        text = _cut(member.summary, _LINE_CHARS)
        key = text.casefold()
        if not text or key in seen:
            continue
        if chosen and used + len(text) + 2 > limit:
            break
        chosen.append(member)
        seen.add(key)
        used += len(text) + 2
    parts = [
        _cut(m.summary, _LINE_CHARS) for m in sorted(chosen, key=lambda m: (m.timestamp, m.seq))
    ]
    # a sentence keeps its own full stop; only bare phrases get a separator
    joined = " ".join(p if p.endswith((".", "!", "?", ";")) else f"{p};" for p in parts)
    return _cut(joined.rstrip(";"), limit)


def describe(project: str, members: Sequence[MemberText], limits: Limits) -> Description:
    """The heuristic description (no LLM)."""
    ordered = sorted(members, key=lambda m: (m.timestamp, m.seq))
    concepts = top_concepts(ordered, limits.max_concepts)
    files = _unique([f for m in ordered for f in files_of(m)], limits.max_files)
    commands = _unique([c for m in ordered if (c := command_of(m))], limits.max_commands)
    return Description(
        title=heuristic_title(project, concepts, len(ordered), limits.title_max_chars),
        summary=heuristic_summary(ordered, limits.summary_max_chars),
        concepts=concepts,
        files=files,
        commands=commands,
        salience=salience_of(ordered),
    )


# ---- with an LLM ------------------------------------------------------------------------

SYSTEM = (
    "You describe one episode of a software developer's work: a stretch of memories from "
    "one project. Answer with a JSON object: a short title (a few words naming what was "
    "worked on), a summary of one to three sentences, and up to {concepts} key concepts "
    "(lowercase words or short phrases). Use only names, files, tools and facts that "
    "appear in the memories; do not invent anything."
)


def answer_schema(limits: Limits) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": limits.title_max_chars},
            "summary": {
                "type": "string",
                "minLength": 1,
                "maxLength": limits.summary_max_chars,
            },
            "concepts": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": _CONCEPT_CHARS},
                "maxItems": limits.max_concepts,
            },
        },
        "required": ["title", "summary", "concepts"],
        "additionalProperties": False,
    }


def build_request(project: str, members: Sequence[MemberText], limits: Limits) -> CompletionRequest:
    """The question for one episode: its most salient members, in time order, one line
    each (time, type, source, summary)."""
    ranked = sorted(members, key=lambda m: (-m.salience, m.timestamp, m.seq))
    shown = sorted(ranked[: limits.llm_max_members], key=lambda m: (m.timestamp, m.seq))
    lines = [
        f"- {m.timestamp:%Y-%m-%d %H:%M} [{m.type}, {m.source}] "
        f"{_cut(m.summary or m.content, _LINE_CHARS)}"
        for m in shown
    ]
    extra = len(members) - len(shown)
    more = f"\n({extra} less salient memories not shown)" if extra > 0 else ""
    user = f"Project: {project or '(none)'}\nMemories ({len(members)}):\n" + "\n".join(lines) + more
    return CompletionRequest(
        operation=OPERATION,
        agent=AGENT,
        system=SYSTEM.format(concepts=limits.max_concepts),
        user=user,
        schema=answer_schema(limits),
        max_tokens=400,
        schema_name="episode",
    )


_SENTENCE_START = re.compile(r"(^|[.!?:;]\s+)$")


def vocabulary(project: str, members: Sequence[MemberText]) -> frozenset[str]:
    """Every word of the members' stored text, lowercased (what an answer may mention)."""
    found: set[str] = {w.casefold() for w in words(project)}
    for m in members:
        for text in (m.summary, m.content, " ".join(m.concepts)):
            found.update(w.casefold() for w in words(text))
    return frozenset(found)


def _named(text: str) -> list[str]:
    """Tokens that name something (a capitalised word inside a sentence, an acronym, an
    identifier, anything with a digit): each must occur in the members' text."""
    named: list[str] = []
    for match in re.finditer(r"\S+", text):
        for token in words(match.group()):
            starts = _SENTENCE_START.search(text[: match.start()]) is not None
            capital = token[:1].isupper() and not starts
            if (
                capital
                or (token.isupper() and len(token) > 1)
                or is_identifier(token)
                or any(c.isdigit() for c in token)
            ):
                named.append(token.casefold())
    return named


def _known(word: str, vocab: frozenset[str]) -> bool:
    if word in vocab:
        return True
    if len(word) >= _STEM and has_letter(word):
        stem = word[:_STEM]
        return any(v.startswith(stem) for v in vocab)
    return False


def grounded(text: str, vocab: frozenset[str], *, strict: bool) -> bool:
    """Every named token occurs in the members' text; with ``strict`` (titles, concepts)
    most of the plain content words do too (on their stem)."""
    if any(token not in vocab for token in _named(text)):
        return False
    if not strict:
        return True
    plain = [
        w.casefold()
        for w in words(text)
        if has_letter(w) and w.casefold() not in STOPWORDS and len(w) > 2
    ]
    if not plain:
        return False
    return sum(_known(w, vocab) for w in plain) * 2 >= len(plain)


def _concept_grounded(concept: str, vocab: frozenset[str]) -> bool:
    tokens = [w.casefold() for w in words(concept)]
    return bool(tokens) and all(_known(t, vocab) for t in tokens)


def apply_answer(
    answer: Mapping[str, Any] | None,
    heuristic: Description,
    project: str,
    members: Sequence[MemberText],
    limits: Limits,
) -> Description:
    """The LLM's title, summary and concepts where they are valid and grounded in the
    members' text; the heuristic's for everything else. Files, commands and salience are
    always the heuristic's (facts, not judgments)."""
    if not isinstance(answer, Mapping):
        return heuristic
    vocab = vocabulary(project, members)
    title, summary = answer.get("title"), answer.get("summary")
    llm_title = (
        _cut(title, limits.title_max_chars)
        if isinstance(title, str) and title.strip() and grounded(title, vocab, strict=True)
        else None
    )
    llm_summary = (
        _cut(summary, limits.summary_max_chars)
        if isinstance(summary, str) and summary.strip() and grounded(summary, vocab, strict=False)
        else None
    )
    raw = answer.get("concepts")
    concepts: list[str] = []
    if isinstance(raw, list):
        for item in raw:
            concept = normalise_concept(item) if isinstance(item, str) else None
            if concept and concept not in concepts and _concept_grounded(concept, vocab):
                concepts.append(concept)
    used = llm_title is not None or llm_summary is not None
    return Description(
        title=llm_title or heuristic.title,
        summary=llm_summary or heuristic.summary,
        concepts=tuple(concepts[: limits.max_concepts]) or heuristic.concepts,
        files=heuristic.files,
        commands=heuristic.commands,
        salience=heuristic.salience,
        described_by="llm" if used else "heuristic",
    )
