"""Metacognition's judgments: what each audit measures, how bad it is, and what may be done
about it. Pure functions (no SQL, no clock: ``now`` is a parameter), so every threshold is
a table test.

Every audit yields one :class:`Finding` of a **kind** (the ``meta_observations.kind``
column and the ``MetaObservation.kind`` field; the reactor's rules match on these names):

``unembedded``
    Share of live (active or fading) memories without a vector (``embedded = 0``); recall
    cannot find them by meaning. Higher is worse. Action: re-embed.
``source_skew``
    Share of live memories from the largest source (one watcher drowning the others).
    Higher is worse. No action (a person decides which watcher to quiet).
``dead_ratio``
    Share of all memories that are archived or merged. Higher is worse. Action: ask for a
    consolidation (the built-in reactor rule ``consolidate-on-dead-ratio`` matches it too).
``stale_consolidation``
    Seconds since the last consolidation cycle finished (or since the oldest memory, when
    none ever ran). Higher is worse. Action: ask for a consolidation.
``irrelevant_feedback``
    Share of ratings in the feedback window that said "irrelevant". Higher is worse.
    Action: suppress (lower the utility of, never delete) memories rated irrelevant
    repeatedly.
``store_size``
    Bytes of the database file with its WAL and shared-memory files. Higher is worse
    (``value`` in bytes; the reactor's ``consolidate-on-store-size`` rule matches it).
``recall_self_test``
    Hit rate of the recall self-test: for a sample of patterns and of memories, does
    recall still return the evidence in its top k for a probe question? *Lower* is worse;
    no probe (an empty store) is ``ok`` with no value.

Severity is ``ok``, ``warning`` or ``alert``; it only ever rises as a measure moves in its
worse direction (tested with Hypothesis).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from mnemonic.encoding.llm_encode import unsupported_claims
from mnemonic.llm.completion.base import CompletionRequest

Severity = Literal["ok", "warning", "alert"]
SEVERITIES: tuple[Severity, ...] = ("ok", "warning", "alert")

UNEMBEDDED = "unembedded"
SOURCE_SKEW = "source_skew"
DEAD_RATIO = "dead_ratio"
STALE_CONSOLIDATION = "stale_consolidation"
IRRELEVANT_FEEDBACK = "irrelevant_feedback"
STORE_SIZE = "store_size"
RECALL_SELF_TEST = "recall_self_test"
KINDS = (
    UNEMBEDDED,
    SOURCE_SKEW,
    DEAD_RATIO,
    STALE_CONSOLIDATION,
    IRRELEVANT_FEEDBACK,
    STORE_SIZE,
    RECALL_SELF_TEST,
)

LIVE_STATES = ("active", "fading")
DEAD_STATES = ("archived", "merged")


@dataclass(frozen=True, slots=True)
class Threshold:
    """``warning`` and ``alert`` levels of one measure. ``lower_is_worse`` flips the
    direction (a hit rate): then the alert level is at or below the warning level."""

    warning: float
    alert: float
    lower_is_worse: bool = False

    def __post_init__(self) -> None:
        ordered = self.alert <= self.warning if self.lower_is_worse else self.alert >= self.warning
        if not ordered:
            raise ValueError(f"alert level {self.alert} is milder than warning {self.warning}")


def judge(value: float | None, threshold: Threshold) -> Severity:
    """``ok`` / ``warning`` / ``alert`` of ``value``; an unmeasured value is ``ok``."""
    if value is None:
        return "ok"
    if threshold.lower_is_worse:
        if value <= threshold.alert:
            return "alert"
        return "warning" if value <= threshold.warning else "ok"
    if value >= threshold.alert:
        return "alert"
    return "warning" if value >= threshold.warning else "ok"


@dataclass(frozen=True, slots=True)
class Finding:
    """One audit's result, before any action: what ``meta_observations`` records."""

    kind: str
    severity: Severity
    value: float | None
    threshold: float | None  # the level crossed (the warning level when none was)
    detail: dict[str, Any] = field(default_factory=dict)


def finding(
    kind: str, value: float | None, threshold: Threshold, detail: dict[str, Any]
) -> Finding:
    severity = judge(value, threshold)
    level = threshold.alert if severity == "alert" else threshold.warning
    return Finding(kind, severity, value, level, detail)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole > 0 else None


# ---- the audits ------------------------------------------------------------------------


def audit_unembedded(live: int, unembedded: int, threshold: Threshold) -> Finding:
    value = _share(unembedded, live)
    return finding(UNEMBEDDED, value, threshold, {"unembedded": unembedded, "live": live})


def audit_source_skew(
    by_source: Mapping[str, int], threshold: Threshold, min_memories: int
) -> Finding:
    """Share of the largest source among live memories; too few memories to say is ok."""
    total = sum(by_source.values())
    detail: dict[str, Any] = {"live": total, "by_source": dict(sorted(by_source.items()))}
    if total < max(1, min_memories):
        detail["skipped"] = f"fewer than {min_memories} live memories"
        return finding(SOURCE_SKEW, None, threshold, detail)
    top, count = max(by_source.items(), key=lambda kv: (kv[1], kv[0]))
    detail["largest"] = top
    return finding(SOURCE_SKEW, count / total, threshold, detail)


def audit_dead_ratio(
    by_state: Mapping[str, int], threshold: Threshold, min_memories: int
) -> Finding:
    total = sum(by_state.values())
    dead = sum(by_state.get(s, 0) for s in DEAD_STATES)
    detail: dict[str, Any] = {"dead": dead, "total": total, "by_state": dict(by_state)}
    if total < max(1, min_memories):
        detail["skipped"] = f"fewer than {min_memories} memories"
        return finding(DEAD_RATIO, None, threshold, detail)
    return finding(DEAD_RATIO, dead / total, threshold, detail)


def audit_stale_consolidation(
    last_run: datetime | None, oldest_memory: datetime | None, now: datetime, threshold: Threshold
) -> Finding:
    """Seconds since the last consolidation; with none ever run, since the oldest memory
    (an empty store has nothing to consolidate: ok)."""
    since = last_run or oldest_memory
    value = None if since is None else max(0.0, (now - since).total_seconds())
    detail = {
        "last_run_at": last_run.isoformat() if last_run else None,
        "never_ran": last_run is None,
    }
    return finding(STALE_CONSOLIDATION, value, threshold, detail)


def audit_irrelevant_feedback(
    by_quality: Mapping[str, int], threshold: Threshold, min_ratings: int, window_s: float
) -> Finding:
    total = sum(by_quality.values())
    irrelevant = by_quality.get("irrelevant", 0)
    detail: dict[str, Any] = {
        "ratings": total,
        "irrelevant": irrelevant,
        "window_s": window_s,
    }
    if total < max(1, min_ratings):
        detail["skipped"] = f"fewer than {min_ratings} ratings in the window"
        return finding(IRRELEVANT_FEEDBACK, None, threshold, detail)
    return finding(IRRELEVANT_FEEDBACK, irrelevant / total, threshold, detail)


def audit_store_size(total_bytes: int, threshold: Threshold) -> Finding:
    return finding(STORE_SIZE, float(total_bytes), threshold, {"bytes": total_bytes})


# ---- the recall self-test ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Probe:
    """One question recall must answer with one of ``expected`` in its top k."""

    subject: str  # "pattern:<id>" or "memory:<id>"
    question: str
    expected: frozenset[int]  # seqs; any one of them in the top k is a hit
    by: str = "heuristic"  # who wrote the question: heuristic or llm


@dataclass(frozen=True, slots=True)
class ProbeResult:
    probe: Probe
    hit: bool
    rank: int | None  # 1-based rank of the first expected memory, None when missed


def memory_question(summary: str, concepts: Sequence[str], max_concepts: int = 4) -> str | None:
    """The heuristic probe of a memory: its top concepts as a keyword query when it has at
    least two (closer to what a person types than the memory's own words), else its
    summary. None when neither says anything."""
    picked = [c.strip() for c in concepts if c.strip()][:max_concepts]
    if len(picked) >= 2:
        return " ".join(picked)
    text = " ".join(summary.split())
    return text or None


def pattern_question(title: str, concepts: Sequence[str], max_concepts: int = 4) -> str | None:
    picked = [c.strip() for c in concepts if c.strip()][:max_concepts]
    text = " ".join(picked) if picked else " ".join(title.split())
    return text or None


def score_probe(probe: Probe, found: Sequence[int]) -> ProbeResult:
    for rank, seq in enumerate(found, start=1):
        if seq in probe.expected:
            return ProbeResult(probe, True, rank)
    return ProbeResult(probe, False, None)


def audit_self_test(results: Sequence[ProbeResult], k: int, threshold: Threshold) -> Finding:
    """Hit rate over every probe (patterns and memories), with each half's own rate and
    the subjects recall missed (ids only, never content)."""
    detail: dict[str, Any] = {"k": k, "probes": len(results)}
    for label in ("pattern", "memory"):
        own = [r for r in results if r.probe.subject.startswith(label + ":")]
        detail[f"{label}_probes"] = len(own)
        detail[f"{label}_hit_rate"] = _rate(own)
    detail["llm_questions"] = sum(1 for r in results if r.probe.by == "llm")
    detail["missed"] = [r.probe.subject for r in results if not r.hit][:20]
    ranks = [r.rank for r in results if r.rank is not None]
    detail["mean_rank"] = round(sum(ranks) / len(ranks), 2) if ranks else None
    return finding(RECALL_SELF_TEST, _rate(results), threshold, detail)


def _rate(results: Sequence[ProbeResult]) -> float | None:
    if not results:
        return None
    return sum(1 for r in results if r.hit) / len(results)


# An LLM may write a better probe question for a memory; it must be grounded: every name,
# number and path in the question must occur in the memory (``unsupported_claims``).
_QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": 3, "maxLength": 300}},
    "required": ["question"],
    "additionalProperties": False,
}
_QUESTION_SYSTEM = (
    "You test a memory system. Given one stored note, write one short question a person "
    "would ask that this note answers. Use only names, numbers and paths that occur in the "
    'note. Do not copy the note. Answer as JSON: {"question": "..."}.'
)


def question_request(content: str, max_chars: int = 1500) -> CompletionRequest:
    note = content if len(content) <= max_chars else content[:max_chars] + " …"
    return CompletionRequest(
        operation="self_test_question",
        agent="metacognition",
        system=_QUESTION_SYSTEM,
        user=f"Note:\n<<<\n{note}\n>>>",
        schema=_QUESTION_SCHEMA,
        max_tokens=120,
        schema_name="probe_question",
    )


_WORDS = re.compile(r"\w+")


def accept_question(answer: Mapping[str, Any] | None, content: str) -> str | None:
    """The LLM's question when it is grounded in the note and not a copy of it."""
    if not answer or not isinstance(answer.get("question"), str):
        return None
    question = " ".join(answer["question"].split())
    if len(question) < 3 or unsupported_claims(content, [question]):
        return None
    words = _WORDS.findall(question.casefold())
    if not words or " ".join(words) in " ".join(_WORDS.findall(content.casefold())):
        return None  # the note's own words: tests nothing
    return question


# ---- actions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rated:
    """A memory's ratings in the feedback window."""

    seq: int
    id: str
    utility: float
    irrelevant: int
    helpful: int  # helpful or partial


@dataclass(frozen=True, slots=True)
class SuppressParams:
    after: int  # irrelevant ratings in the window before a memory is suppressed
    factor: float  # utility multiplied by this
    floor: float  # never below this
    per_cycle: int


def plan_suppressions(
    rated: Iterable[Rated], recently: frozenset[int], params: SuppressParams
) -> list[tuple[Rated, float]]:
    """(memory, new utility) for memories rated irrelevant at least ``after`` times and more
    often than helpful, not suppressed already within the window (``recently``: seqs), not
    at the floor already; the most often rated irrelevant first, at most ``per_cycle``."""
    if params.after <= 0 or params.per_cycle <= 0:
        return []
    chosen: list[tuple[Rated, float]] = []
    for r in sorted(rated, key=lambda r: (-r.irrelevant, r.seq)):
        if r.irrelevant < params.after or r.irrelevant <= r.helpful or r.seq in recently:
            continue
        new = max(params.floor, r.utility * params.factor)
        if new >= r.utility:
            continue
        chosen.append((r, round(new, 6)))
        if len(chosen) >= params.per_cycle:
            break
    return chosen


def wants_consolidation(findings: Iterable[Finding]) -> list[str]:
    """The kinds among ``findings`` that call for a consolidation (warning or worse)."""
    return [
        f.kind
        for f in findings
        if f.kind in (DEAD_RATIO, STALE_CONSOLIDATION) and f.severity != "ok"
    ]
