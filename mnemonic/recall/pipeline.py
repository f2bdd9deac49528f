"""The recall pipeline: entry points, fusion, spreading activation, ranking, calibration,
relevance floor, diversity.

Two sources feed the same ranking. Normally everything up to the final ranking runs on
the in-memory recall index (``index/``: full text, vectors, graph, columns) in a worker
thread, and SQLite is read once, for the ~30 memories that can still make the answer.
While that index is being built (the first seconds after a start on a large store) or
rebuilt after a fault, the SQL path answers instead: FTS5 for full text, SQL hops for
spreading, no vector entry point.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar

import numpy as np

from mnemonic.config import RecallConfig
from mnemonic.index.columns import BoolArray, Traits
from mnemonic.index.passages import best_of
from mnemonic.index.patterns import PatternMatch
from mnemonic.index.recall_index import RecallIndex
from mnemonic.llm.embedding import EmbeddingProvider, Vectors
from mnemonic.recall.activation import Arrival, Spread, SpreadSettings, spread, spread_arrays
from mnemonic.recall.clauses import question_clauses
from mnemonic.recall.evidence import Calibration, content_terms, query_evidence
from mnemonic.recall.fts_query import query_terms
from mnemonic.recall.fusion import linear, rrf
from mnemonic.recall.intent import asks_across_events
from mnemonic.recall.mmr import Duplicates, mmr_order
from mnemonic.recall.naming import names_something, proper_names, speakers, without_names
from mnemonic.recall.query_cache import QueryVectors
from mnemonic.recall.ranking import (
    Ranked,
    Reached,
    Scored,
    Signals,
    calibrate,
    score,
    supersede,
    traits_of,
)
from mnemonic.recall.when import TimeWindow, time_window
from mnemonic.store.base import (
    AssociationStore,
    EpisodeMembership,
    Filters,
    MemoryStore,
    SearchStore,
)
from mnemonic.store.models import Association, Memory
from mnemonic.timeutil import ensure_utc, utcnow

EVIDENCE_FTS_HITS = 10  # full-text hits whose word coverage is measured per query
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Fusion:
    """How one question's entry points are cut and weighed."""

    depths: tuple[int, int]  # hits kept from the full text and from the vectors
    fts_weight: float  # the full text's weight: by whether the question names something
    clauses: tuple[str, ...] = ()  # the question's clauses, searched too (``clauses.py``)


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    results: list[Scored]
    edges: list[tuple[int, int]]
    candidates: int
    evidence: float = 0.0  # the query's entry-point evidence in [0, 1]; 0 = nothing real
    stages: dict[str, float] = field(default_factory=dict)  # seconds per pipeline stage


@dataclass(slots=True)
class _Candidates:
    """What the entry points and spreading found, ranked, before any memory is read."""

    ranked: list[Ranked]  # strongest first
    fts_ranked: list[int]
    cosine: dict[int, float]
    arrivals: dict[int, Arrival]  # how spreading reached each node (explain, feedback)
    count: int
    known: dict[int, Memory] = field(default_factory=dict)  # memories already read (SQL path)
    clause_cosine: float = 0.0  # the mean of the clauses' best cosines (``_clause_cosine``)


class _Stages:
    """Wall time per stage of one query, for ``/metrics``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._mark = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - self._mark
        self._mark = now


class Recaller:
    """Runs one query end to end; holds no per-query state.

    CPU work runs on the recaller's own two threads, not the shared default executor, so
    a query never queues behind encoder batches there; numpy and onnxruntime release the
    GIL, so a query and an encoder batch use both cores.
    """

    def __init__(
        self,
        search: SearchStore,
        associations: AssociationStore,
        memories: MemoryStore,
        index: RecallIndex,
        embedder: EmbeddingProvider,
        cfg: RecallConfig,
        episodes: EpisodeMembership | None = None,
    ) -> None:
        self._search = search
        self._episodes = episodes  # None: no episode spreading (``intent.py``)
        self._associations = associations
        self._memories = memories
        self._index = index
        self._cfg = cfg
        self._executor = ThreadPoolExecutor(2, thread_name_prefix="mnemonic-recall")
        self._vectors = QueryVectors(embedder, cfg.query_cache_size)
        self._spread = SpreadSettings(
            hops=cfg.spread_hops,
            decay=cfg.spread_decay,
            threshold=cfg.spread_threshold,
            max_nodes=cfg.spread_max_nodes,
            frontier=cfg.spread_frontier,
            relation_weights=dict(cfg.relation_weights),
        )
        self._calibration = Calibration(
            vector_floor=cfg.vector_floor, vector_full=cfg.vector_full, words_power=cfg.words_power
        )
        self._duplicates = Duplicates(cfg.mmr_duplicate_cosine, cfg.mmr_duplicate_words)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _diversified(
        self,
        ranked: list[tuple[int, float]],
        limit: int,
        texts: dict[int, str] | None,
        episodes: dict[int, str],
    ) -> list[int]:
        """MMR over the pool with its vectors (``mmr.py``), spread over ``episodes`` when
        given; runs off the event loop."""
        vectors = self._index.vectors_for([seq for seq, _ in ranked])
        return mmr_order(
            ranked,
            vectors,
            limit,
            self._cfg.mmr_lambda,
            texts=texts,
            duplicates=self._duplicates,
            groups=episodes,
            group_factor=self._cfg.episode_spread,
        )

    async def _episodes_to_spread(self, query: str, seqs: list[int]) -> dict[int, str]:
        """The episodes of the pool when the question asks about several events (a count,
        a total, a comparison: ``intent.py``) and spreading is on; else nothing."""
        if self._episodes is None or self._cfg.episode_spread >= 1 or len(seqs) < 2:
            return {}
        if not asks_across_events(query):
            return {}
        return await self._episodes.episodes_of(seqs)

    def _off_loop(self, fn: Callable[..., T], *args: object) -> asyncio.Future[T]:
        """``fn(*args)`` on the recaller's threads, started now (a coroutine would only
        start when awaited, and the full text would no longer overlap the embedding)."""
        return asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def recall(
        self,
        query: str,
        filters: Filters,
        limit: int,
        min_score: float | None = None,
        *,
        drop_copies: bool = True,
        asked_at: datetime | None = None,
    ) -> RecallOutcome:
        """The best ``limit`` memories scoring at least ``min_score`` (config default).

        A time the question names ("two weeks ago": ``when.py``) counts back from
        ``asked_at`` (default: ``filters.as_of``, else now); memories inside it are
        searched as a further entry point and lifted (``recall.when_weight``), and the
        words of a count back are not searched (``TimeWindow.search_terms``).

        Scores are calibrated (``ranking.calibrate``): a query with no real evidence scores
        0 everywhere, so any positive ``min_score`` answers it with nothing. Near copies of
        a result are dropped unless ``drop_copies`` is false (a caller acting on every
        match, such as a purge, wants them all).
        """
        cfg = self._cfg
        stages = _Stages()
        terms = query_terms(query)
        depths = (max(cfg.fts_candidates, limit), max(cfg.vector_candidates, limit))
        fusion = _Fusion(
            depths,
            cfg.fts_weight if names_something(query) else cfg.fts_weight_plain,
            # the clauses are vector searches: none with the vectors weighed out
            tuple(question_clauses(query)) if cfg.clause_weight and cfg.vector_weight else (),
        )
        keep = max(cfg.mmr_pool, limit) * 2
        in_memory = self._index.ready and cfg.index == "memory"
        window = None
        if cfg.when_weight > 0:
            window = time_window(query, asked_at or filters.as_of or utcnow())
        if window is not None:
            terms = window.search_terms(terms)
        if in_memory:
            found = await self._in_memory(query, terms, filters, fusion, keep, stages, window)
        else:
            found = await self._from_sql(terms, filters, fusion, keep, stages, window)
        pool_size = max(cfg.mmr_pool, limit)
        top_fts = found.fts_ranked[:EVIDENCE_FTS_HITS]
        wanted = [r.seq for r in found.ranked[:pool_size]] + top_fts
        # the other ends of supersessions, for explain (ids): a few per query at most
        wanted += [
            seq for r in found.ranked[:pool_size] for seq in (*r.superseded_by, *r.supersedes)
        ]
        # where spreading came from, for explain: mostly seeds, so already wanted
        wanted += [
            found.arrivals[r.seq].source
            for r in found.ranked[:pool_size]
            if r.seq in found.arrivals
        ]
        missing = [seq for seq in dict.fromkeys(wanted) if seq not in found.known]
        memories = dict(found.known)
        if missing:
            memories.update(await self._memories.get_many(missing))
        stages.lap("hydrate")
        # the best BM25 hits hold the most query words; scanning them all would cost a
        # regex pass over up to fts_candidates long texts per query
        fts_texts = {seq: _searchable(memories[seq]) for seq in top_fts if seq in memories}
        if sum(len(t) for t in fts_texts.values()) > _INLINE_EVIDENCE_CHARS:
            # one regex pass per query word over each text: long notes go to a thread
            evidence = await self._off_loop(
                query_evidence,
                terms,
                found.cosine,
                fts_texts,
                self._calibration,
                found.clause_cosine,
            )
        else:
            evidence = query_evidence(
                terms, found.cosine, fts_texts, self._calibration, found.clause_cosine
            )
        floor = cfg.min_score if min_score is None else min_score
        # ranked is strongest first, so the pool is a prefix: calibrate only that
        passing = [r for r in calibrate(found.ranked, evidence, pool_size) if r.score >= floor]
        # a memory purged since the index saw it is not in ``memories``: it cannot answer
        ids = {seq: m.id for seq, m in memories.items()}
        pool = [
            Scored.of(r, memories[r.seq], ids, via=_reached(found.arrivals.get(r.seq), memories))
            for r in passing
            if r.seq in memories
        ]
        # on the recaller's threads: an HNSW index serves vectors under the lock its
        # searches hold, and a busy 1M index kept the event loop waiting 0.3-0.7 s for it
        episodes = await self._episodes_to_spread(query, [s.memory.seq for s in pool])
        order = await self._off_loop(
            self._diversified,
            [(s.memory.seq, s.strength) for s in pool],
            limit,
            {s.memory.seq: s.memory.content for s in pool} if drop_copies else None,
            episodes,
        )
        by_seq = {s.memory.seq: s for s in pool}
        results = [_in_episode(by_seq[seq], episodes) for seq in order]
        arrivals = found.arrivals
        edges = [
            (arrivals[s.memory.seq].source, s.memory.seq)
            for s in results
            if s.memory.seq in arrivals
        ]
        stages.lap("finish")
        return RecallOutcome(
            results=results,
            edges=edges,
            candidates=found.count,
            evidence=evidence,
            stages=stages.seconds,
        )

    # ---- the in-memory path ------------------------------------------------------------
    async def _in_memory(
        self,
        query: str,
        terms: list[str],
        filters: Filters,
        fusion: _Fusion,
        keep: int,
        stages: _Stages,
        window: TimeWindow | None,
    ) -> _Candidates:
        index = self._index
        depths = fusion.depths
        # the full-text entry point runs while the query is embedded (two threads)
        full_text = self._off_loop(
            index.full_text, terms, filters, depths[0], self._cfg.fts_match_budget
        )
        reworded = await self._without_common_names(query, filters)
        vector, *clauses = await self._vectors.get_many(
            [query, *fusion.clauses, *reworded], self._executor
        )
        allowed, fts_hits = await full_text
        stages.lap("entry")
        found = await self._off_loop(
            self._rank_in_memory,
            vector,
            clauses,
            allowed,
            fts_hits,
            filters,
            fusion,
            keep,
            terms,
            window,
        )
        stages.lap("rank")
        return found

    async def _without_common_names(self, query: str, filters: Filters) -> list[str]:
        """The question without the speakers' names it holds, when it names a speaker:
        searched beside its clauses, in their ranking.

        In a conversation every turn starts with its speaker's name ("Melanie: ..."), and
        in a short turn the name weighs as much in the vector as what was said: "What
        does Melanie do to destress?" was nearest to "Melanie: Wow, what an experience!
        How did it make you feel?". The full text and the whole question keep the name;
        "What does do to destress?" finds the turns about destressing. A name counts as
        a speaker's when at least ``recall.common_name_share`` of the memories the query
        can see hold it and most of a sample of those begin with it as a label
        (``naming.speakers``): a product or topic held as widely ("Postgres" in a
        database project) says what the answer is about and stays. Measured (BENCHMARKS, session
        21): LoCoMo R@10 +0.010, multi-hop +0.024; the question itself searched twice
        instead lost 0.005.
        """
        cfg = self._cfg
        if not (cfg.common_name_share and cfg.clause_weight and cfg.vector_weight):
            return []
        names = proper_names(query)
        if not names:
            return []
        held = await self._off_loop(
            self._index.common_words, names, filters, cfg.common_name_share, LABEL_SAMPLE
        )
        if not held:
            return []
        read = await self._memories.get_many(sorted({s for seqs in held.values() for s in seqs}))
        samples = {
            name: [read[s].content for s in seqs if s in read] for name, seqs in held.items()
        }
        named = speakers(samples)
        reworded = without_names(query, named)
        if not named or not content_terms(query_terms(reworded)):
            return []  # "Who is Melanie?" without her asks nothing
        return [reworded]

    def _rank_in_memory(
        self,
        vector: Vectors,
        clauses: list[Vectors],
        allowed: BoolArray,
        fts_hits: list[tuple[int, float]],
        filters: Filters,
        fusion: _Fusion,
        keep: int,
        terms: list[str],
        window: TimeWindow | None,
    ) -> _Candidates:
        index = self._index
        depths = fusion.depths
        passages = self._cfg.passage_vectors
        vector_hits = index.nearest(vector, depths[1], allowed, filters, passages=passages)
        clause_hits: list[tuple[int, float]] | None = None
        each: list[list[tuple[int, float]]] = []
        if clauses:  # one product for all of them
            each = index.nearest_each(
                np.stack(clauses), depths[1], allowed, filters, passages=passages
            )
            clause_hits = _merged(each, depths[1])
        direct = self._fuse(fts_hits, vector_hits, fusion, clause_hits)
        within = _within(filters, window)
        windowed: list[tuple[int, float]] = []
        if within is not None:
            # the named time as an entry point: its best hits count as much as the whole
            # store's, so an answer buried under better matches from other days is found
            allowed_within, fts_within = index.full_text(
                terms, within, depths[0], self._cfg.fts_match_budget
            )
            windowed = index.nearest(vector, depths[1], allowed_within, within, passages=passages)
            # the clauses' hits inside the window: the same lists, so the same total weight
            clauses_within = None if clause_hits is None else _inside(clause_hits, allowed_within)
            for seq, value in self._fuse(fts_within, windowed, fusion, clauses_within).items():
                direct[seq] = max(direct.get(seq, 0.0), value)
        flow = spread_arrays(self._seeds(direct), index.graph, allowed, self._spread)
        cfg = self._cfg
        lifted = (
            index.patterns.match(
                vector, allowed, threshold=cfg.pattern_threshold, top=cfg.pattern_top
            )
            if cfg.pattern_weight > 0 and len(index.patterns)
            else {}
        )
        found = self._rank(
            direct,
            flow,
            fts_hits,
            vector_hits,
            keep,
            index.columns.traits,
            {},
            lifted=lifted,
            window=window,
            clause_hits=clause_hits or (),
        )
        for seq, cosine in windowed:  # evidence and explain see their cosines too
            found.cosine.setdefault(seq, cosine)
        # the clauses' evidence is theirs alone: a question without its names is looser
        found.clause_cosine = _clause_cosine(fusion.clauses, each[: len(fusion.clauses)])
        if len(index.supersessions):
            found.ranked = self._supersede(found.ranked, allowed, filters)
        return found

    def _supersede(
        self, ranked: list[Ranked], allowed: BoolArray, filters: Filters
    ) -> list[Ranked]:
        """Superseded candidates below their successors (``ranking.supersede``): a
        successor counts if it is live and, with ``as_of``, dated no later than it."""
        columns = self._index.columns
        as_of = None if filters.as_of is None else ensure_utc(filters.as_of).timestamp()

        def current(seq: int) -> bool:
            traits = columns.traits(seq)
            return (
                traits is not None
                and traits.state in _LIVE
                and (as_of is None or traits.timestamp <= as_of)
            )

        def admissible(seq: int) -> Traits | None:
            return columns.traits(seq) if seq < len(allowed) and allowed[seq] else None

        return supersede(
            ranked,
            self._index.supersessions.successors,
            current,
            admissible,
            self._cfg.superseded_factor,
        )

    # ---- the SQL path (while the in-memory index builds) --------------------------------
    async def _from_sql(
        self,
        terms: list[str],
        filters: Filters,
        fusion: _Fusion,
        keep: int,
        stages: _Stages,
        window: TimeWindow | None,
    ) -> _Candidates:
        """The full text alone (no vectors while the index builds), with the named time as
        a further full-text entry point, as in memory: a question about "two weeks ago"
        finds what those days hold under better matches from other days on this path too.
        """
        depths = fusion.depths
        budget = self._cfg.fts_match_budget
        fts_hits: list[tuple[int, float]] = []
        fts_within: list[tuple[int, float]] = []
        within = _within(filters, window)
        if terms:
            asked = [filters] if within is None else [filters, within]
            hits = await self._search.full_text_each(terms, asked, depths[0], budget)
            fts_hits, fts_within = hits[0], hits[1] if within is not None else []
        stages.lap("entry")
        direct = self._fuse(fts_hits, [], fusion)
        for seq, value in self._fuse(fts_within, [], fusion).items():
            direct[seq] = max(direct.get(seq, 0.0), value)

        async def fetch(seqs: Sequence[int]) -> list[Association]:
            return await self._associations.neighbours(seqs, filters)

        flow = await spread(self._seeds(direct), fetch, self._spread)
        relevance = _relevance(direct, flow, self._cfg.spread_weight)
        shortlist = _shortlist(relevance, keep)
        known = await self._memories.get_many(shortlist)
        states = None if filters.states is None else {s.value for s in filters.states}

        def traits(seq: int) -> Traits | None:
            memory = known.get(seq)
            if memory is None or (states is not None and memory.state.value not in states):
                return None
            return traits_of(memory)

        found = self._rank(
            direct, flow, fts_hits, [], keep, traits, known, (relevance, shortlist), window=window
        )
        stages.lap("rank")
        return found

    # ---- shared ---------------------------------------------------------------------------
    def _fuse(
        self,
        fts_hits: list[tuple[int, float]],
        vector_hits: list[tuple[int, float]],
        fusion: _Fusion,
        clause_hits: list[tuple[int, float]] | None = None,
    ) -> dict[int, float]:
        """One direct-hit strength from the entry points' lists; the clauses' nearest
        memories (``clauses.py``) are a third list whenever the question has clauses, even
        an empty one, so every list of one question weighs the same total."""
        cfg = self._cfg
        entry = [(fts_hits, fusion.fts_weight), (vector_hits, cfg.vector_weight)]
        depths = list(fusion.depths)
        if clause_hits is not None:
            entry.append((clause_hits, cfg.clause_weight))
            depths.append(fusion.depths[1])
        if cfg.fusion == "linear":
            return linear(entry, depths)
        return rrf(entry, cfg.rrf_k)

    def _seeds(self, direct: Mapping[int, float]) -> dict[int, float]:
        return dict(sorted(direct.items(), key=lambda kv: -kv[1])[: self._cfg.spread_seeds])

    def _rank(
        self,
        direct: Mapping[int, float],
        flow: Spread,
        fts_hits: list[tuple[int, float]],
        vector_hits: list[tuple[int, float]],
        keep: int,
        traits: Callable[[int], Traits | None],
        known: dict[int, Memory],
        ranked_already: tuple[dict[int, float], list[int]] | None = None,
        *,
        lifted: Mapping[int, PatternMatch] | None = None,
        window: TimeWindow | None = None,
        clause_hits: Sequence[tuple[int, float]] = (),
    ) -> _Candidates:
        """Score the ``keep`` most relevant candidates; ``ranked_already`` passes the
        relevance and shortlist a caller computed (the SQL path reads those memories
        first), so they are not computed twice."""
        cfg = self._cfg
        lifted = lifted or {}
        if ranked_already is None:
            relevance = _relevance(direct, flow, cfg.spread_weight)
            for seq, match in lifted.items():
                relevance[seq] = relevance.get(seq, 0.0) + cfg.pattern_weight * match.lift
            shortlist = _shortlist(relevance, keep)
        else:
            relevance, shortlist = ranked_already
        fts_ranked = [seq for seq, _ in fts_hits]
        fts_rank = {seq: i for i, seq in enumerate(fts_ranked, start=1)}
        vec_rank = {seq: i for i, (seq, _) in enumerate(vector_hits, start=1)}
        clause_rank = {seq: i for i, (seq, _) in enumerate(clause_hits, start=1)}
        cosine = dict(vector_hits)
        now = utcnow()
        ranked: list[Ranked] = []
        for seq in shortlist:
            found = traits(seq)
            if found is None:
                continue
            signals = Signals(
                direct=direct.get(seq, 0.0),
                spread=flow.activation.get(seq, 0.0),
                fts_rank=fts_rank.get(seq),
                vector_rank=vec_rank.get(seq),
                cosine=cosine.get(seq),
                clause_rank=clause_rank.get(seq),
            )
            by_pattern = lifted.get(seq)
            if by_pattern is not None:
                signals = replace(
                    signals,
                    pattern=by_pattern.lift,
                    pattern_id=by_pattern.pattern_id,
                    pattern_title=by_pattern.title,
                )
            ranked.append(score(seq, found, signals, cfg, now, window))
        ranked.sort(key=lambda r: -r.strength)
        return _Candidates(
            ranked=ranked,
            fts_ranked=fts_ranked,
            cosine=cosine,
            arrivals=flow.arrivals,
            count=len(relevance),
            known=known,
        )


def _merged(lists: Sequence[list[tuple[int, float]]], depth: int) -> list[tuple[int, float]]:
    """The clauses' hits as one list, best cosine first, cut at ``depth``: each clause's
    best ``depth / len(lists)`` come first, so one generic clause ("What did she do")
    cannot fill the list and leave another's evidence out; a memory several clauses
    found keeps its best cosine (``best_of``, as for a passage and its whole vector)."""
    share = -(-depth // max(len(lists), 1))
    merged: list[tuple[int, float]] = []
    for hits in lists:
        merged = best_of(merged, hits[:share], depth)
    return merged


def _clause_cosine(clauses: Sequence[str], each: Sequence[list[tuple[int, float]]]) -> float:
    """The mean over the clauses of each one's best cosine; 0 without clauses, or when one
    of them has fewer than ``EVIDENT_CLAUSE_WORDS`` content words.

    "How many years older am I than when I graduated from college?" is met by two
    memories, one per clause, and by none alone: the whole question's vector sits between
    them, nearer neither. The mean of the clauses' best cosines is about what one memory
    holding both facts would score, so it is evidence that the question has real
    matches (``query_evidence``). A clause of one content word ("How did I feel", "What
    did I say") is near something in any personal store, and with it in the mean "How
    did I feel when the segfault in the linker happened?" would count as met by any note
    about a mood; such a question keeps only its whole vector's evidence.
    """
    if not each or any(len(content_terms(query_terms(c))) < EVIDENT_CLAUSE_WORDS for c in clauses):
        return 0.0
    return sum(max((cosine for _, cosine in hits), default=0.0) for hits in each) / len(each)


def _inside(hits: list[tuple[int, float]], allowed: BoolArray) -> list[tuple[int, float]]:
    """The hits whose memory ``allowed`` lets through."""
    return [(seq, c) for seq, c in hits if seq < len(allowed) and allowed[seq]]


def _reached(arrival: Arrival | None, memories: Mapping[int, Memory]) -> Reached | None:
    """The arrival edge with its source memory read (None: not reached by spreading, or
    its source purged since the index saw it)."""
    if arrival is None or arrival.source not in memories:
        return None
    return Reached(memories[arrival.source], arrival.relation, arrival.strength, arrival.hop)


def _within(filters: Filters, window: TimeWindow | None) -> Filters | None:
    """``filters`` narrowed to the window the question names; None when it names none or
    the filters' own time range leaves nothing of it."""
    if window is None:
        return None
    since = window.start if filters.since is None else max(filters.since, window.start)
    until = window.end if filters.until is None else min(filters.until, window.end)
    return None if since > until else replace(filters, since=since, until=until)


def _in_episode(scored: Scored, episodes: Mapping[int, str]) -> Scored:
    """The result, naming the episode recall spread it by (explain), if it did."""
    episode = episodes.get(scored.memory.seq)
    return scored if episode is None else replace(scored, episode=episode)


def _shortlist(relevance: Mapping[int, float], keep: int) -> list[int]:
    return sorted(relevance, key=lambda s: -relevance[s])[:keep]


def _relevance(direct: Mapping[int, float], flow: Spread, weight: float) -> dict[int, float]:
    relevance = dict(direct)
    for seq, level in flow.activation.items():
        relevance[seq] = relevance.get(seq, 0.0) + weight * level
    return relevance


_LIVE = frozenset({"active", "fading"})
LABEL_SAMPLE = 20
"""Memories read per common name to tell a speaker's label from a topic
(``_without_common_names``): a read of at most 20 x ``naming.MAX_NAMES`` rows."""
EVIDENT_CLAUSE_WORDS = 2
"""Content words each clause needs for the clauses' cosines to be evidence
(``_clause_cosine``)."""
_INLINE_EVIDENCE_CHARS = 50_000
"""Above this much hit text, word evidence is measured off the event loop (10 hits of
100,000 adversarial characters cost ~0.9 s of regex work)."""


def _searchable(memory: Memory) -> str:
    """What the full-text index holds for a memory (bar the written-out date)."""
    return "\n".join((memory.content, memory.summary, " ".join(memory.concepts)))
