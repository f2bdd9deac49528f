"""Judgments of the abstraction agent (pure): which cluster is which pattern, how strong
and how grounded an abstraction is, when it is demoted, archived or merged, and how
patterns group into principles and principles into axioms.

The failure this guards against (seen in the system we learn from): one pattern absorbed
every new cluster, because matching looked at shared memories alone, and a popular memory
is in many clusters. Here a cluster updates a pattern only when

* their concepts overlap (Jaccard >= ``match_jaccard``) **and** they share real evidence
  (``min_evidence_overlap`` of the cluster), or their concepts are nearly the same
  (``same_theme_jaccard``: the same theme seen in fresh memories);
* only members that carry one of the pattern's concepts join its evidence (the *topic
  guard*: a cluster that matched still cannot drag unrelated memories in);
* one pattern's evidence grows by at most ``max(growth_min, growth_share * evidence)``
  memories per cycle, and never past ``max_evidence``.

A cluster that matches a dismissed pattern is dropped (a dismissal sticks); one that
matches an archived pattern with new evidence revives it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from mnemonic.cognition.clustering import Cluster
from mnemonic.encoding.llm_encode import unsupported_claims
from mnemonic.llm.completion.base import CompletionRequest

LIVE_STATES = ("active", "demoted")  # abstractions that can still grow or recover


@dataclass(frozen=True, slots=True)
class MatchParams:
    match_jaccard: float = 0.34
    same_theme_jaccard: float = 0.7
    min_evidence_overlap: float = 0.2
    merge_jaccard: float = 0.6
    merge_evidence_overlap: float = 0.5
    growth_min: int = 10
    growth_share: float = 0.5
    max_evidence: int = 500
    max_new: int = 20
    max_concepts: int = 6


@dataclass(frozen=True, slots=True)
class LifeParams:
    strength_k: float = 8.0
    half_life_days: float = 30.0
    demote_below: float = 0.5
    archive_below: float = 0.2
    demoted_archive_days: float = 30.0


@dataclass(frozen=True, slots=True)
class Known:
    """A stored abstraction as matching sees it (``evidence``: memory seqs of a pattern,
    child ids of a principle or axiom)."""

    id: str
    state: str
    concepts: tuple[str, ...]
    evidence: frozenset[Any]
    created: float = 0.0  # timestamp: the older of two near-duplicates survives


@dataclass(frozen=True, slots=True)
class NewPattern:
    cluster: Cluster
    evidence: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Growth:
    id: str
    added: tuple[int, ...]
    concepts: tuple[str, ...]
    revive: bool  # an archived pattern seen again with new evidence


@dataclass(slots=True)
class PatternPlan:
    created: list[NewPattern] = field(default_factory=list)
    grown: list[Growth] = field(default_factory=list)
    suppressed: int = 0  # clusters matching a dismissed pattern
    guarded: int = 0  # members kept out by the topic guard or the growth cap
    unchanged: int = 0  # clusters matching a pattern that already holds them
    deferred: int = 0  # new patterns beyond ``max_new`` (found again next cycle)


# ---- measures ------------------------------------------------------------------------------


def jaccard(a: Sequence[str] | frozenset[str], b: Sequence[str] | frozenset[str]) -> float:
    sa, sb = set(a), set(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def strength(live: int, k: float) -> float:
    """Grows with live evidence, bounded: ``1 - exp(-live / k)`` in [0, 1)."""
    if live <= 0 or k <= 0:
        return 0.0
    return min(1.0, max(0.0, 1.0 - math.exp(-live / k)))


def decayed(value: float, idle_days: float, half_life_days: float) -> float:
    """``value`` halved every ``half_life_days`` without new evidence."""
    if half_life_days <= 0 or idle_days <= 0:
        return min(1.0, max(0.0, value))
    return min(1.0, max(0.0, value * math.pow(0.5, idle_days / half_life_days)))


def grounding(live: int, total: int) -> float:
    """The share of evidence (or children) still live; nothing at all grounds nothing."""
    if total <= 0:
        return 0.0
    return min(1.0, max(0.0, live / total))


def confidence(child_strengths: Sequence[float], child_groundings: Sequence[float]) -> float:
    """A principle's (axiom's) belief: its children's mean strength and grounding, times a
    support term that grows with their number (2 children: 0.63, 4: 0.86)."""
    n = len(child_strengths)
    if n == 0:
        return 0.0
    mean_s = sum(child_strengths) / n
    mean_g = sum(child_groundings) / max(len(child_groundings), 1)
    return min(1.0, max(0.0, mean_s * mean_g * (1.0 - math.exp(-n / 2.0))))


def next_state(state: str, ground: float, idle_days: float, p: LifeParams) -> str:
    """Active -> demoted when grounding falls below ``demote_below``; demoted -> active when
    it recovers, -> archived below ``archive_below`` or after ``demoted_archive_days``
    without new evidence. One step per cycle: an abstraction is demoted before it is
    archived. Other states (dismissed, merged, archived) are left alone."""
    if state == "active":
        return "demoted" if ground < p.demote_below else "active"
    if state == "demoted":
        if ground >= p.demote_below:
            return "active"
        if ground < p.archive_below or idle_days >= p.demoted_archive_days:
            return "archived"
    return state


def over_cap(rows: Sequence[tuple[str, float, float]], cap: int) -> list[str]:
    """Ids of ``(id, strength, created)`` rows beyond ``cap``: the weakest (then newest)."""
    if len(rows) <= cap:
        return []
    ranked = sorted(rows, key=lambda r: (-r[1], r[2], r[0]))
    return [r[0] for r in ranked[max(cap, 0) :]]


# ---- matching ------------------------------------------------------------------------------


def _evidence_overlap(seqs: Sequence[int], evidence: frozenset[Any]) -> float:
    return len(evidence.intersection(seqs)) / len(seqs) if seqs else 0.0


def best_match(cluster: Cluster, known: Sequence[Known], p: MatchParams) -> Known | None:
    """The stored pattern this cluster is (see the module docstring), or None."""
    best: tuple[float, float, str] | None = None
    found: Known | None = None
    for k in known:
        cj = jaccard(cluster.concepts, k.concepts)
        if cj < p.match_jaccard:
            continue  # the super-attractor guard: no shared theme, no match
        ov = _evidence_overlap(cluster.seqs, k.evidence)
        if ov < p.min_evidence_overlap and cj < p.same_theme_jaccard:
            continue
        key = (cj, ov, k.id)
        if best is None or key > best:
            best, found = key, k
    return found


def on_topic(terms: frozenset[str], concepts: Sequence[str]) -> bool:
    return not terms.isdisjoint(concepts)


def allowance(current: int, p: MatchParams) -> int:
    """New evidence one pattern may take this cycle."""
    share = math.ceil(current * p.growth_share)
    return max(0, min(max(p.growth_min, share), p.max_evidence - current))


def _ranked(cluster: Cluster, terms_of: Mapping[int, frozenset[str]]) -> list[int]:
    """Members most on the cluster's theme first (then newest)."""

    def hits(seq: int) -> int:
        return len(terms_of.get(seq, frozenset()).intersection(cluster.concepts))

    return sorted(cluster.seqs, key=lambda s: (-hits(s), -s))


def plan_patterns(
    clusters: Sequence[Cluster],
    known: Sequence[Known],
    terms_of: Mapping[int, frozenset[str]],
    p: MatchParams,
) -> PatternPlan:
    """What this cycle's clusters do to the stored patterns."""
    plan = PatternPlan()
    taken: Counter[str] = Counter()  # evidence added per pattern this cycle
    grown: dict[str, Growth] = {}
    for cluster in clusters:
        match = best_match(cluster, known, p)
        if match is None:
            if len(plan.created) >= p.max_new:
                plan.deferred += 1
                continue
            evidence = _ranked(cluster, terms_of)[: p.max_evidence]
            plan.created.append(NewPattern(cluster, tuple(sorted(evidence))))
            continue
        if match.state == "dismissed":
            plan.suppressed += 1
            continue
        before = grown.get(match.id)
        have = match.evidence | frozenset(before.added if before else ())
        fresh = [s for s in _ranked(cluster, terms_of) if s not in have]
        guarded = [s for s in fresh if on_topic(terms_of.get(s, frozenset()), match.concepts)]
        room = allowance(len(match.evidence), p) - taken[match.id]
        added = guarded[: max(room, 0)]
        plan.guarded += len(fresh) - len(added)
        if not added:
            plan.unchanged += 1
            continue
        taken[match.id] += len(added)
        concepts = list(before.concepts if before else match.concepts)
        for c in cluster.concepts:
            if len(concepts) >= p.max_concepts:
                break
            if c not in concepts:
                concepts.append(c)
        grown[match.id] = Growth(
            match.id,
            tuple(sorted((before.added if before else ()) + tuple(added))),
            tuple(concepts),
            revive=match.state == "archived",
        )
    plan.grown = list(grown.values())
    return plan


def near_duplicates(patterns: Sequence[Known], p: MatchParams) -> list[tuple[str, str]]:
    """``(newer, older)`` pairs to merge: concepts and evidence both overlap strongly.
    Each newer one is merged into the oldest survivor it duplicates."""
    ordered = sorted(patterns, key=lambda k: (k.created, k.id))
    into: dict[str, str] = {}
    for i, newer in enumerate(ordered):
        for older in ordered[:i]:
            if older.id in into:
                continue
            if jaccard(newer.concepts, older.concepts) < p.merge_jaccard:
                continue
            small = min(len(newer.evidence), len(older.evidence))
            shared = len(newer.evidence & older.evidence)
            if small and shared / small >= p.merge_evidence_overlap:
                into[newer.id] = older.id
                break
    return list(into.items())


# ---- principles and axioms -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Child:
    id: str
    concepts: tuple[str, ...]
    strength: float
    grounding: float
    project: str


@dataclass(frozen=True, slots=True)
class Group:
    children: tuple[str, ...]
    concepts: tuple[str, ...]  # concepts shared by at least two children, most shared first
    project: str


def group_children(
    children: Sequence[Child], min_shared: int, max_concepts: int, seed: int
) -> list[Group]:
    """Groups of >= 2 children sharing >= ``min_shared`` concepts (Louvain over the small
    graph of children, so a chain a~b~c of weak resemblances does not become one group)."""
    graph = nx.Graph()
    for i, a in enumerate(children):
        for b in children[i + 1 :]:
            common = len(set(a.concepts) & set(b.concepts))
            if common >= min_shared:
                graph.add_edge(a.id, b.id, weight=float(common))
    if graph.number_of_edges() == 0:
        return []
    by_id = {c.id: c for c in children}
    groups: list[Group] = []
    for community in nx.community.louvain_communities(graph, weight="weight", seed=seed):
        members = sorted(community)
        if len(members) < 2:
            continue
        counts: Counter[str] = Counter()
        for m in members:
            counts.update(set(by_id[m].concepts))
        shared = [c for c, n in sorted(counts.items(), key=lambda cn: (-cn[1], cn[0])) if n >= 2]
        if not shared:
            continue
        projects = {by_id[m].project for m in members}
        groups.append(
            Group(
                tuple(members),
                tuple(shared[:max_concepts]),
                projects.pop() if len(projects) == 1 else "",
            )
        )
    groups.sort(key=lambda g: (-len(g.children), g.children))
    return groups


def match_group(group: Group, known: Sequence[Known], p: MatchParams) -> Known | None:
    """The stored parent this group is: most of the same children, or the same concepts
    with a child in common."""
    best: tuple[float, str] | None = None
    found: Known | None = None
    for k in known:
        cj = jaccard(group.concepts, k.concepts)
        kids = jaccard(frozenset(group.children), frozenset(str(c) for c in k.evidence))
        shared = not k.evidence.isdisjoint(group.children)
        if kids >= 0.5 or (cj >= p.match_jaccard and shared):
            key = (kids + cj, k.id)
            if best is None or key > best:
                best, found = key, k
    return found


# ---- titles and descriptions ---------------------------------------------------------------

_NOUNS = {"pattern": "Recurring theme", "principle": "Principle", "axiom": "Axiom"}


def heuristic_title(level: str, concepts: Sequence[str], max_chars: int) -> str:
    head = _NOUNS.get(level, "Theme")
    text = f"{head}: {', '.join(concepts[:4])}" if concepts else head
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def pattern_description(cluster: Cluster) -> str:
    return (
        f"Seen in {len(cluster.seqs)} memories over {cluster.days} days"
        f" and {cluster.episodes} episodes."
    )


def parent_description(level: str, n_children: int) -> str:
    kind = "patterns" if level == "principle" else "principles"
    return f"Shared by {n_children} {kind}."


DESCRIBE_SYSTEM = (
    "You name recurring themes in a developer's notes. Given the theme's key concepts and "
    "excerpts (or the titles of the themes it generalises), answer with a short title (at "
    "most 8 words) and a one-sentence description. Use only facts present in the input: "
    "no new names, numbers, tools or paths."
)

DESCRIBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 200},
        "description": {"type": "string", "maxLength": 1000},
    },
    "required": ["title", "description"],
    "additionalProperties": False,
}


def describe_request(
    level: str, concepts: Sequence[str], texts: Sequence[str]
) -> CompletionRequest:
    lines = "\n".join(f"- {t}" for t in texts)
    user = f"Level: {level}\nConcepts: {', '.join(concepts)}\nEvidence:\n<<<\n{lines}\n>>>"
    return CompletionRequest(
        operation="abstraction",
        agent="abstraction",
        system=DESCRIBE_SYSTEM,
        user=user,
        schema=DESCRIBE_SCHEMA,
        max_tokens=200,
        schema_name="abstraction",
    )


def accept_description(
    answer: Mapping[str, Any] | None,
    concepts: Sequence[str],
    texts: Sequence[str],
    title_max: int,
    description_max: int,
) -> tuple[str, str] | None:
    """The LLM's title and description when well-formed and grounded: every name, number
    and path they mention occurs in the evidence (or the concepts); else None."""
    if not answer:
        return None
    title = " ".join(str(answer.get("title", "")).split())
    text = " ".join(str(answer.get("description", "")).split())
    if not title or len(title) > title_max or len(text) > description_max:
        return None
    source = "\n".join([*texts, ", ".join(concepts)])
    if unsupported_claims(source, [title, text]):
        return None
    return title, text
