"""The read side of a dreaming cycle in one call: replay, co-activation, the term index,
cross-episode link candidates and recurring term pairs, decided from store reads alone;
the dreamer then writes what it returns (strengths, links, insights).

Why one call: at 100k memories these steps are seconds of Python, and in the daemon's
process every second of it holds the GIL against the event loop (/query p95 3.4-3.6x
quiet while dreaming, p50 unchanged: a tail of ~190 ms spikes). A py-spy profile of two
cycles (``--gil``, 100 Hz; BENCHMARKS.md) put the GIL time in: reading every live
memory's terms into Python rows (~0.7 s a cycle), parsing them (cold cycle only, ~1 s),
reading the links around the replayed memories into Python objects twice (~0.4 s),
``recurrences`` (~0.2 s) and the neighbourhood pairs (~0.2 s). Moving only the pure
functions to another process would leave the reads, which build the Python objects, in
the daemon; so past ``dreaming.process_min_memories`` the whole read side runs in a
worker process (anyio's pool) that opens its own read-only connection to the database
file (WAL lets it read beside the daemon's writer) and hands back only what the cycle
writes: a few hundred links, a few recurrences and the term cache. Below that threshold
it runs on a pooled read connection's thread, as before, so small stores and tests stay
fast. Both paths run this same function, so they decide the same links and insights
(``tests/test_dreaming_process.py``).

The term cache (``TermCache``) lives in the daemon, not in the worker: anyio reuses idle
workers (the most recently used first) but kills one idle for 5 minutes and shares the
pool with the abstraction agent, while the dreamer runs every few hours, so a cache kept
in a worker would almost never be found again. Kept as numpy arrays and one string it
pickles both ways in milliseconds (measured at 99,963 memories and 56,689 terms: 8.7 MB,
``dumps`` 7 ms, ``loads`` 1-3 ms, against ~1 s for a cold parse); the worker hands back
the refreshed one with the plan (through a private file: ``store.dreaming_reads.
plan_to_file`` says why not through its pipe), and a cycle that fails or is cancelled
keeps the old one (the next cycle parses what changed since the last one that finished).

All reads happen before any write of the cycle. That gives the same decisions as reading
between the writes did: the strength raises the co-activation step writes change neither
which pairs are linked nor how many ``related`` links a memory has, the two things the
later steps read.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from mnemonic.cognition.dreaming import (
    FIXED_RELATIONS,
    LinkParams,
    Recurrence,
    TermCache,
    TermIndex,
    choose_links,
    coretrieved,
    cross_candidates,
    evidence_strength,
    neighbourhood_pairs,
    pick_replay,
    recurrences,
    sharing_terms,
    strengthen,
    usable_terms,
)

RELATED = "related"


@dataclass(frozen=True, slots=True)
class Link:
    a: int
    b: int
    relation: str
    strength: float


@dataclass(frozen=True, slots=True)
class TermRow:
    """A live memory's terms as stored (JSON text, parsed only when asked: the term cache
    parses a memory again only when this text changed) and its episode."""

    seq: int
    concepts: str | None
    entities: str | None
    episode: str | None

    @property
    def key(self) -> tuple[str | None, str | None]:
        return self.concepts, self.entities

    @property
    def terms(self) -> tuple[str, ...]:
        found: list[str] = []
        for blob in (self.entities, self.concepts):
            try:
                value = json.loads(blob) if blob else []
            except ValueError:
                continue
            if isinstance(value, list):
                found += [v for v in value if isinstance(v, str)]
        return tuple(found)


@dataclass(frozen=True, slots=True)
class QueryRow:
    rowid: int
    results: tuple[str, ...]  # memory ids, best first
    helpful: tuple[str, ...]  # ids rated helpful
    irrelevant: tuple[str, ...]


class Reads(Protocol):
    """What the plan reads (``store.dreaming_reads.ConnReads`` over one connection)."""

    def replay_window(self, after_seq: int, limit: int) -> list[tuple[int, float]]: ...
    def term_rows(self) -> list[TermRow]: ...
    def links_touching(self, seqs: Sequence[int], min_strength: float = 0.0) -> list[Link]: ...
    def links_of_pairs(self, pairs: Sequence[tuple[int, int]]) -> list[Link]: ...
    def related_counts(self, seqs: Sequence[int]) -> dict[int, int]: ...
    def queries(self, after_rowid: int, limit: int, *, newest: bool = False) -> list[QueryRow]: ...
    def live_seqs(self, memory_ids: Sequence[str]) -> dict[str, int]: ...
    def insight_keys(self) -> frozenset[str]: ...


@dataclass(frozen=True, slots=True)
class PlanParams:
    """The dreamer's settings the read side needs (plain values: sent to a worker)."""

    replay_batch: int = 500
    replay_window: int = 4
    neighbour_min_strength: float = 0.5
    max_neighbours: int = 20
    eta: float = 0.05
    strength_ceiling: float = 0.9
    max_strengthened_per_cycle: int = 500
    queries_per_cycle: int = 1000
    coretrieval_top: int = 5
    helpful_weight: int = 2
    coretrieval_min_count: int = 3
    coretrieval_lookback: int = 2000
    coretrieval_link_strength: float = 0.3
    links: LinkParams = field(default_factory=LinkParams)
    min_episodes: int = 3
    max_insights_per_cycle: int = 3


@dataclass(frozen=True, slots=True)
class Found:
    """A recurrence worth an insight and the seqs of the memories it was found in."""

    recurrence: Recurrence
    seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Marks:
    """Where the cycles so far left off (kept in ``system_meta``)."""

    cursor: int = 0  # the replay window starts after this seq
    query_after: int = 0  # logged recalls were read up to this rowid
    strengthened_through: int = 0  # replay strengthened the neighbourhoods of seqs up to this


@dataclass(frozen=True, slots=True)
class CyclePlan:
    """What one cycle writes, decided from reads alone."""

    cursor: int  # the replay cursor for the next cycle
    strengthened_through: int  # ``Marks.strengthened_through`` for the next cycle
    query_rowid: int | None  # logged recalls read up to (None: no new one)
    counts: dict[str, int]
    strengthened: list[Link]  # existing links raised by co-activation
    links: list[Link]  # new ``related`` links, then existing ones raised
    coretrieval_links: int  # of ``links``, made from co-retrieval
    insights: list[Found]
    terms: TermCache  # refreshed (the caller keeps it for the next cycle)
    phases_ms: dict[str, float]  # where the time went (measured only, never decides)


def plan_cycle(
    reads: Reads,
    p: PlanParams,
    terms: TermCache,
    *,
    marks: Marks,
    pause: Callable[[], None] | None = None,
) -> CyclePlan:
    """The cycle's decisions. ``marks`` are where the last cycle left off; ``terms`` is
    refreshed in place and returned in the plan; ``pause`` is called between slices of
    long loops (a caller in a thread yields the GIL)."""
    counts: Counter[str] = Counter()
    phases: dict[str, float] = {}
    tick = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal tick
        phases[name] = round((time.perf_counter() - tick) * 1000, 1)
        tick = time.perf_counter()

    seeds, next_cursor = _replay(reads, p, marks.cursor, counts)
    lap("replay")
    rows = reads.term_rows()
    counts["memories_indexed"] = len(rows)
    index = terms.index(
        [r.seq for r in rows],
        [r.key for r in rows],
        lambda i: rows[i].terms,
        [r.episode for r in rows],
        pause=pause,
    )
    counts["memories_parsed"] = terms.parsed
    seed_rows = rows_of(index, seeds)
    lap("index")
    first = [s for s in seeds if s > marks.strengthened_through]
    counts["replay_strengthened_before"] = len(seeds) - len(first)
    strengthened, extra, query_rowid = _coactivation(
        reads, p, first, marks.query_after, counts, index
    )
    lap("coactivation")
    links, from_recalls = _cross_links(reads, p, index, seed_rows, extra)
    lap("links")
    found = _insights(reads, p, index, seed_rows)
    lap("insights")
    through = max([marks.strengthened_through, *seeds])
    return CyclePlan(
        next_cursor, through, query_rowid, dict(counts), strengthened, links, from_recalls,
        found, terms, phases,
    )  # fmt: skip


# ---- 1. replay ----------------------------------------------------------------------------
def _replay(
    reads: Reads, p: PlanParams, cursor: int, counts: Counter[str]
) -> tuple[list[int], int]:
    """The replayed seqs and the next cursor (unchanged when nothing is replayed)."""
    if p.replay_batch <= 0:
        return [], cursor
    size = p.replay_batch * p.replay_window
    window = reads.replay_window(cursor, size)
    if not window and cursor > 0:  # wrapped around
        window = reads.replay_window(0, size)
    if not window:
        return [], cursor
    seqs = np.fromiter((s for s, _ in window), dtype=np.int64, count=len(window))
    sal = np.fromiter((v for _, v in window), dtype=np.float64, count=len(window))
    chosen = pick_replay(seqs, sal, p.replay_batch)
    counts["replayed"] = len(chosen)
    return [int(s) for s in chosen], int(seqs[-1]) if len(window) == size else 0


# ---- 2. co-activation ---------------------------------------------------------------------
def _coactivation(
    reads: Reads,
    p: PlanParams,
    seeds: list[int],
    query_after: int,
    counts: Counter[str],
    index: TermIndex,
) -> tuple[list[Link], list[Link], int | None]:
    """Links to strengthen, co-retrieval links to add and the rowid of the last recall
    read. ``seeds`` are the replayed memories whose neighbourhoods replay has not
    strengthened yet.

    Replay co-activates the links among a replayed memory's neighbours, but that alone is
    circular: the triangle exists because of those links, and every later replay found it
    again, so replay raised the same links toward the ceiling with no new evidence. That
    made spreading favour the neighbours of direct hits over the hits themselves: three
    days of it cost LoCoMo multi-hop R@10 0.0053 (0.4403 to 0.4350; 0.4403 with replay
    strengthening off). A replayed pair now counts only when its two memories also share
    rare concepts or entities, as much as a cross-episode link needs
    (``links.min_shared_idf``); recalls that returned both and helpful ratings count as
    before: they are evidence from use.

    Even so, replay found the same shared terms at every pass of its cursor over the
    store, so a daemon dreaming four times a day raised the same pairs again each pass:
    at four rounds a day LoCoMo temporal R@10 fell 0.0086 below no agents at all
    (BENCHMARKS.md, session 18). Replay now strengthens the neighbourhood of a memory on
    its first replay only (``Marks.strengthened_through``, the highest seq replayed so
    far): what it counts is evidence once, and a new memory brings new evidence."""
    steps: Counter[tuple[int, int]] = Counter()
    known: dict[tuple[int, int], list[Link]] = {}
    if seeds and p.max_neighbours > 0:
        strong = reads.links_touching(seeds, p.neighbour_min_strength)
        near = neighbours(seeds, strong, p.max_neighbours)
        around = sorted({n for ns in near.values() for n in ns})
        for link in reads.links_touching(around):
            known.setdefault((link.a, link.b), []).append(link)
        replayed = neighbourhood_pairs(near, known)
        usable = usable_terms(index, p.links.max_df_share, p.links.max_term_df)
        shared = set(sharing_terms(index, replayed, usable, p.links.min_shared_idf))
        counts["replay_pairs_unshared"] = len(replayed) - len(shared)
        steps.update({pair: n for pair, n in replayed.items() if pair in shared})
    fresh = reads.queries(query_after, p.queries_per_cycle)
    counts["queries_read"] = len(fresh)
    query_rowid = None
    if fresh:
        query_rowid = fresh[-1].rowid
        recalled = _recall_pairs(reads, p, fresh)
        for link in reads.links_of_pairs(sorted(set(recalled) - set(known))):
            known.setdefault((link.a, link.b), []).append(link)
        steps.update(recalled)
    updates = _updates(p, steps, known)
    return updates, _coretrieval_links(reads, p, known), query_rowid


def _recall_pairs(reads: Reads, p: PlanParams, rows: list[QueryRow]) -> Counter[tuple[int, int]]:
    ids = {i for r in rows for i in (*r.results, *r.helpful, *r.irrelevant)}
    seq = reads.live_seqs(sorted(ids))
    return coretrieved(
        ([seq[i] for i in r.results if i in seq] for r in rows),
        ([seq[i] for i in r.helpful if i in seq] for r in rows),
        [seq[i] for r in rows for i in r.irrelevant if i in seq],
        top=p.coretrieval_top,
        helpful_weight=p.helpful_weight,
    )


def _updates(
    p: PlanParams, steps: Counter[tuple[int, int]], known: dict[tuple[int, int], list[Link]]
) -> list[Link]:
    found = [
        (link, n)
        for pair, n in steps.items()
        for link in known.get(pair, [])
        if link.relation not in FIXED_RELATIONS and link.strength < p.strength_ceiling
    ]
    found.sort(key=lambda x: (-x[1], x[0].a, x[0].b, x[0].relation))
    found = found[: p.max_strengthened_per_cycle]
    if not found:
        return []
    grown = strengthen(
        np.array([link.strength for link, _ in found]),
        np.array([n for _, n in found]),
        p.eta,
        p.strength_ceiling,
    )
    return [
        Link(link.a, link.b, link.relation, float(s))
        for (link, _), s in zip(found, grown, strict=True)
        if s > link.strength
    ]


def _coretrieval_links(
    reads: Reads, p: PlanParams, known: dict[tuple[int, int], list[Link]]
) -> list[Link]:
    """Unlinked pairs recalled together often enough in the recent recalls."""
    if p.coretrieval_lookback <= 0:
        return []
    recent = reads.queries(0, p.coretrieval_lookback, newest=True)
    if not recent:
        return []
    together = _recall_pairs(reads, p, recent)
    often = [pair for pair, n in together.items() if n >= p.coretrieval_min_count]
    linked = {(link.a, link.b) for link in reads.links_of_pairs(often)}
    linked |= set(known)
    strength = p.coretrieval_link_strength
    return [Link(a, b, RELATED, strength) for a, b in sorted(often) if (a, b) not in linked]


def neighbours(seeds: list[int], strong: list[Link], keep: int) -> dict[int, list[int]]:
    """Each replayed memory's strongest neighbours over co-activating links. The dreamer's
    own ``related`` links do not make a neighbourhood: a clique of them would otherwise
    strengthen itself every cycle up to the ceiling with no new evidence."""
    mine = set(seeds)
    found: dict[int, list[tuple[float, int]]] = {s: [] for s in seeds}
    for link in strong:
        if link.relation in FIXED_RELATIONS or link.relation == RELATED:
            continue
        if link.a in mine:
            found[link.a].append((link.strength, link.b))
        if link.b in mine:
            found[link.b].append((link.strength, link.a))
    return {
        s: [n for _, n in sorted(v, key=lambda x: (-x[0], x[1]))[:keep]] for s, v in found.items()
    }


# ---- 3. cross-episode links ---------------------------------------------------------------
def rows_of(index: TermIndex, seqs: list[int]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Index rows of the replayed memories that the term index holds."""
    if index.n == 0:
        return np.zeros(0, dtype=np.int64)
    wanted = np.asarray(sorted(seqs), dtype=np.int64)
    pos = np.searchsorted(index.seq, wanted)
    ok = (pos < index.n) & (index.seq[np.minimum(pos, index.n - 1)] == wanted)
    out: np.ndarray[Any, np.dtype[np.int64]] = pos[ok].astype(np.int64)
    return out


def _cross_links(
    reads: Reads,
    p: PlanParams,
    index: TermIndex,
    seed_rows: np.ndarray[Any, np.dtype[np.int64]],
    extra: list[Link],
) -> tuple[list[Link], int]:
    """The new ``related`` links (co-retrieval ones first, then by evidence, within the
    caps) followed by the existing ``related`` links to raise; and how many of the new
    ones came from co-retrieval."""
    a, b, evidence = cross_candidates(index, seed_rows, p.links)
    pairs = [(int(index.seq[i]), int(index.seq[j])) for i, j in zip(a, b, strict=True)]
    strengths = evidence_strength(evidence, p.links.max_link_strength)
    by_pair: dict[tuple[int, int], set[str]] = {}
    for link in reads.links_touching(sorted({s for pair in pairs for s in pair})):
        by_pair.setdefault((link.a, link.b), set()).add(link.relation)
    # a pair linked by another relation is connected already; a related one is raised
    raised = [
        Link(x, y, RELATED, float(s))
        for (x, y), s in zip(pairs, strengths, strict=True)
        if RELATED in by_pair.get((x, y), set())
    ]
    kept = [k for k in extra if (k.a, k.b) not in by_pair]
    taken = {(k.a, k.b) for k in kept}
    fresh = [
        (pair, float(s), float(e))
        for pair, s, e in zip(pairs, strengths, evidence, strict=True)
        if pair not in by_pair and pair not in taken
    ]
    # co-retrieval links first (behaviour beats word overlap), then by evidence
    cand = [((k.a, k.b), k.strength, float("inf")) for k in kept] + fresh
    have = reads.related_counts(sorted({s for pair, _, _ in cand for s in pair}))
    chosen = choose_links(
        [pair[0] for pair, _, _ in cand],
        [pair[1] for pair, _, _ in cand],
        [e for _, _, e in cand],
        have,
        p.links.max_related_per_memory,
        p.links.max_links_per_cycle,
    )
    links = [Link(cand[i][0][0], cand[i][0][1], RELATED, cand[i][1]) for i in chosen]
    return links + raised, sum(1 for i in chosen if i < len(kept))


# ---- 4. insights --------------------------------------------------------------------------
def _insights(
    reads: Reads, p: PlanParams, index: TermIndex, seed_rows: np.ndarray[Any, np.dtype[np.int64]]
) -> list[Found]:
    if p.max_insights_per_cycle <= 0 or len(seed_rows) == 0:
        return []
    found = recurrences(
        index,
        seed_rows,
        min_episodes=p.min_episodes,
        max_df_share=p.links.max_df_share,
        known=reads.insight_keys(),
    )
    return [
        Found(rec, tuple(int(index.seq[d]) for d in rec.docs))
        for rec in found[: p.max_insights_per_cycle]
    ]
