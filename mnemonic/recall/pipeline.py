"""The recall pipeline: entry points, fusion, spreading activation, ranking, calibration,
relevance floor, diversity."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from mnemonic.config import RecallConfig
from mnemonic.llm.embedding import EmbeddingProvider
from mnemonic.recall.activation import SpreadSettings, spread
from mnemonic.recall.evidence import Calibration, query_evidence
from mnemonic.recall.fts_query import query_terms
from mnemonic.recall.fusion import linear, rrf
from mnemonic.recall.mmr import Duplicates, mmr_order
from mnemonic.recall.ranking import Scored, Signals, calibrate, score
from mnemonic.store.base import AssociationStore, Filters, MemoryStore, SearchStore
from mnemonic.store.models import Association, Memory
from mnemonic.store.vector_index import VectorIndex
from mnemonic.timeutil import utcnow

EVIDENCE_FTS_HITS = 10  # full-text hits whose word coverage is measured per query


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    results: list[Scored]
    edges: list[tuple[int, int]]
    candidates: int
    evidence: float = 0.0  # the query's entry-point evidence in [0, 1]; 0 = nothing real


class Recaller:
    """Runs one query end to end; holds no per-query state."""

    def __init__(
        self,
        search: SearchStore,
        associations: AssociationStore,
        memories: MemoryStore,
        index: VectorIndex,
        embedder: EmbeddingProvider,
        cfg: RecallConfig,
    ) -> None:
        self._search = search
        self._associations = associations
        self._memories = memories
        self._index = index
        self._embedder = embedder
        self._cfg = cfg
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

    async def recall(
        self,
        query: str,
        filters: Filters,
        limit: int,
        min_score: float | None = None,
        *,
        drop_copies: bool = True,
    ) -> RecallOutcome:
        """The best ``limit`` memories scoring at least ``min_score`` (config default).

        Scores are calibrated (``ranking.calibrate``): a query with no real evidence scores
        0 everywhere, so any positive ``min_score`` answers it with nothing. Near copies of
        a result are dropped unless ``drop_copies`` is false (a caller acting on every
        match, such as a purge, wants them all).
        """
        cfg = self._cfg
        depths = (max(cfg.fts_candidates, limit), max(cfg.vector_candidates, limit))
        fts_hits, vector_hits = await asyncio.gather(
            self._full_text(query, filters, depths[0]),
            self._nearest(query, filters, depths[1]),
        )
        fts_ranked = [seq for seq, _ in fts_hits]
        vec_ranked = [seq for seq, _ in vector_hits]
        entry = [(fts_hits, cfg.fts_weight), (vector_hits, cfg.vector_weight)]
        direct = linear(entry, depths) if cfg.fusion == "linear" else rrf(entry, cfg.rrf_k)
        seeds = dict(sorted(direct.items(), key=lambda kv: -kv[1])[: cfg.spread_seeds])

        async def fetch(seqs: Sequence[int]) -> list[Association]:
            return await self._associations.neighbours(seqs, filters)

        flow = await spread(seeds, fetch, self._spread)
        relevance = dict(direct)
        for seq, level in flow.activation.items():
            relevance[seq] = relevance.get(seq, 0.0) + cfg.spread_weight * level
        keep = max(cfg.mmr_pool, limit) * 2
        shortlist = sorted(relevance, key=lambda s: -relevance[s])[:keep]
        memories = await self._memories.get_many(shortlist)
        fts_rank = {seq: i for i, seq in enumerate(fts_ranked, start=1)}
        vec_rank = {seq: i for i, seq in enumerate(vec_ranked, start=1)}
        cosine = dict(vector_hits)
        now = utcnow()
        scored = [
            score(
                memories[seq],
                Signals(
                    direct=direct.get(seq, 0.0),
                    spread=flow.activation.get(seq, 0.0),
                    fts_rank=fts_rank.get(seq),
                    vector_rank=vec_rank.get(seq),
                    cosine=cosine.get(seq),
                ),
                cfg,
                now,
            )
            for seq in shortlist
            if seq in memories and _passes(memories[seq].state.value, filters)
        ]
        scored.sort(key=lambda s: -s.strength)
        # the best BM25 hits hold the most query words; scanning them all would cost a
        # regex pass over up to fts_candidates long texts per query
        top_fts = fts_ranked[:EVIDENCE_FTS_HITS]
        fts_texts = {seq: _searchable(memories[seq]) for seq in top_fts if seq in memories}
        terms = query_terms(query)
        if sum(len(t) for t in fts_texts.values()) > _INLINE_EVIDENCE_CHARS:
            # one regex pass per query word over each text: long notes go to a thread
            evidence = await asyncio.to_thread(
                query_evidence, terms, cosine, fts_texts, self._calibration
            )
        else:
            evidence = query_evidence(terms, cosine, fts_texts, self._calibration)
        floor = cfg.min_score if min_score is None else min_score
        passing = [s for s in calibrate(scored, evidence) if s.score >= floor]
        pool = passing[: max(cfg.mmr_pool, limit)]
        order = mmr_order(
            [(s.memory.seq, s.strength) for s in pool],
            self._index.vectors_for([s.memory.seq for s in pool]),
            limit,
            cfg.mmr_lambda,
            texts={s.memory.seq: s.memory.content for s in pool} if drop_copies else None,
            duplicates=self._duplicates,
        )
        by_seq = {s.memory.seq: s for s in pool}
        results = [by_seq[seq] for seq in order]
        edges = [flow.via[s.memory.seq] for s in results if s.memory.seq in flow.via]
        return RecallOutcome(
            results=results, edges=edges, candidates=len(relevance), evidence=evidence
        )

    async def _full_text(self, query: str, filters: Filters, limit: int) -> list[tuple[int, float]]:
        terms = query_terms(query)
        if not terms:
            return []
        return await self._search.full_text(terms, filters, limit, self._cfg.fts_match_budget)

    async def _nearest(self, query: str, filters: Filters, limit: int) -> list[tuple[int, float]]:
        vectors = await asyncio.to_thread(self._embedder.embed, [query])
        return self._index.search(vectors[0], limit, filters)


_INLINE_EVIDENCE_CHARS = 50_000
"""Above this much hit text, word evidence is measured off the event loop (10 hits of
100,000 adversarial characters cost ~0.9 s of regex work)."""


def _searchable(memory: Memory) -> str:
    """What the full-text index holds for a memory (bar the written-out date)."""
    return "\n".join((memory.content, memory.summary, " ".join(memory.concepts)))


def _passes(state: str, filters: Filters) -> bool:
    return filters.states is None or state in {s.value for s in filters.states}
