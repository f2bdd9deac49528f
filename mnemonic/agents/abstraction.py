"""The abstraction agent: patterns -> principles -> axioms, one bounded cycle at a time.

A cycle:

1. **Snapshot** up to ``max_nodes`` live memories (the newest and the most salient older
   ones) with their concepts, entities, episodes and the links among them.
2. **Cluster** them (``cognition.clustering``: a graph of links and shared rare terms,
   Louvain communities) in a worker thread; keep recurring themes.
3. **Match** each theme to the stored patterns (``cognition.abstraction.plan_patterns``:
   concept overlap and real shared evidence, the topic guard, a growth cap per cycle;
   dismissed patterns suppress their theme) and write new and grown patterns (one
   transaction). New patterns are titled by heuristic, or by the LLM when it answers with
   a title and description grounded in the evidence.
4. **Lifecycle** (one transaction): near-duplicates merged into the older, strength
   (``1 - exp(-live/k)``, halving without new evidence), grounding (share of live
   evidence), demotion and archiving, the cap on active patterns.
5. **Principles** from groups of active patterns sharing concepts, **axioms** from groups
   of principles (one transaction per level), each with a confidence from its children.

Measured (2 cores, synthetic store, ``bench`` numbers in the report to the lead): the cost
is the snapshot read and the graph; Louvain on 5,000 memories takes a fraction of what
greedy modularity takes, hence the default. At 100k memories a cycle takes ~2-3 s, most of
it Louvain; the snapshot's link query had taken 6.5-7 s more (it probed every pair of
nodes). The summary's ``phases_ms`` says where a cycle's time went.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from mnemonic.cognition.abstraction import (
    Child,
    Group,
    LifeParams,
    MatchParams,
    accept_description,
    describe_request,
    group_children,
    heuristic_title,
    match_group,
    parent_description,
    pattern_description,
    plan_patterns,
)
from mnemonic.cognition.clustering import Cluster, GraphParams, find_clusters
from mnemonic.config import AbstractionConfig
from mnemonic.events.types import AbstractionCreated, Event, PatternDiscovered
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.runtime.worker_process import run_in_worker
from mnemonic.store.abstractions import (
    Created,
    Described,
    ParentPlan,
    SQLiteAbstractions,
)
from mnemonic.timeutil import new_id

log = logging.getLogger(__name__)

_COUNT_KEYS = (
    "nodes", "links", "clusters", "patterns_created", "patterns_grown", "suppressed",
    "guarded", "deferred", "merged", "demoted", "archived", "restored", "capped",
    "principles_created", "axioms_created", "llm_described",
)  # fmt: skip


def graph_params(cfg: AbstractionConfig) -> GraphParams:
    return GraphParams(
        max_term_df=cfg.max_term_df,
        term_window=cfg.term_window,
        algorithm=cfg.algorithm,
        resolution=cfg.resolution,
        seed=cfg.seed,
    )


def match_params(cfg: AbstractionConfig) -> MatchParams:
    return MatchParams(
        match_jaccard=cfg.match_jaccard,
        same_theme_jaccard=cfg.same_theme_jaccard,
        min_evidence_overlap=cfg.min_evidence_overlap,
        merge_jaccard=cfg.merge_jaccard,
        merge_evidence_overlap=cfg.merge_evidence_overlap,
        growth_min=cfg.growth_min,
        growth_share=cfg.growth_share,
        max_evidence=cfg.max_evidence,
        max_new=cfg.max_new_per_cycle,
        max_concepts=cfg.max_concepts,
    )


def life_params(cfg: AbstractionConfig) -> LifeParams:
    return LifeParams(
        strength_k=cfg.strength_k,
        half_life_days=cfg.strength_half_life_days,
        demote_below=cfg.demote_below,
        archive_below=max(0.0, min(cfg.archive_below, cfg.demote_below)),
        demoted_archive_days=cfg.demoted_archive_days,
    )


class AbstractionAgent:
    """Owned by the composition root; the scheduler calls ``run_cycle``."""

    name = "abstraction"

    def __init__(
        self,
        store: SQLiteAbstractions,
        publish: Callable[[Event], None],
        clock: Callable[[], datetime],
        cfg: AbstractionConfig,
        completer: Completer | None = None,
    ) -> None:
        self._store = store
        self._publish = publish
        self._clock = clock
        self._cfg = cfg
        self._completer: Completer = completer if completer is not None else NoCompleter()
        self._graph = graph_params(cfg)
        self._match = match_params(cfg)
        self._life = life_params(cfg)
        self.cycles = 0
        self.totals: Counter[str] = Counter()
        self.last: dict[str, Any] | None = None
        self._llm_left = 0

    @property
    def store(self) -> SQLiteAbstractions:
        """The agent's store (the REST face reads and dismisses through it)."""
        return self._store

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        t0 = time.monotonic()
        now = self._clock()
        counts: Counter[str] = Counter()
        self._llm_left = self._cfg.llm_max_per_cycle if self._cfg.llm_describe else 0
        phases: dict[str, float] = {}
        patterns = await self._patterns_step(now, counts, phases)
        tick = time.monotonic()
        counts.update(
            await self._store.maintain_patterns(
                self._match, self._life, self._cfg.max_patterns, now
            )
        )
        phases["lifecycle"] = time.monotonic() - tick
        tick = time.monotonic()
        principles = await self._parents_step(
            "principle", "pattern", self._cfg.max_principles, now, counts
        )
        axioms = await self._parents_step("axiom", "principle", self._cfg.max_axioms, now, counts)
        phases["parents"] = time.monotonic() - tick
        for p in patterns:
            self._publish(
                PatternDiscovered(
                    pattern_id=p.id,
                    title=p.title,
                    memory_ids=p.members,
                    concepts=p.concepts,
                    project=p.project,
                )
            )
        for a in (*principles, *axioms):
            self._publish(
                AbstractionCreated(
                    abstraction_id=a.id,
                    level=a.level,
                    title=a.title,
                    confidence=a.confidence,
                    children=a.members,
                )
            )
        summary: dict[str, Any] = {
            "trigger": trigger,
            **{k: int(counts.get(k, 0)) for k in _COUNT_KEYS},
            "took_ms": round((time.monotonic() - t0) * 1000, 1),
            "cluster_ms": round(counts.get("cluster_us", 0) / 1000, 1),
            "clustered_in_process": bool(counts.get("clustered_in_process", 0)),
            # where a cycle's time goes (a slow cycle at scale is found from the summary)
            "phases_ms": {k: round(v * 1000, 1) for k, v in phases.items()},
        }
        self.cycles += 1
        self.totals.update({k: summary[k] for k in _COUNT_KEYS})
        self.last = summary
        return summary

    # ---- patterns -------------------------------------------------------------------------
    async def _patterns_step(
        self, now: datetime, counts: Counter[str], phases: dict[str, float]
    ) -> list[Created]:
        cfg = self._cfg
        tick = time.monotonic()
        nodes, links = await self._store.snapshot(cfg.max_nodes, cfg.salient_share)
        counts["nodes"], counts["links"] = len(nodes), len(links)
        phases["snapshot"] = time.monotonic() - tick
        tick = time.monotonic()
        cluster = partial(
            find_clusters, min_evidence=cfg.min_evidence, max_concepts=cfg.max_concepts
        )
        if len(nodes) >= cfg.process_min_nodes:
            # Louvain over thousands of nodes is seconds of pure Python: in a thread it
            # holds the GIL against every request (/query p95 3-10x quiet at 100k), in a
            # worker process (killed if the cycle is cancelled; its answer comes back
            # through a private file, ``runtime.worker_process``) it does not
            clusters = await run_in_worker(
                self._store.folder, "abstraction", list, cluster, list(nodes), list(links),
                self._graph,
            )  # fmt: skip
            counts["clustered_in_process"] = 1
        else:
            clusters = await asyncio.to_thread(cluster, list(nodes), list(links), self._graph)
        counts["cluster_us"] = int((time.monotonic() - tick) * 1e6)
        phases["cluster"] = time.monotonic() - tick
        tick = time.monotonic()
        counts["clusters"] = len(clusters)
        known = await self._store.known("pattern", cfg.archived_matched)
        terms_of = {n.seq: n.terms for n in nodes}
        plan = await asyncio.to_thread(plan_patterns, clusters, known, terms_of, self._match)
        counts["suppressed"] += plan.suppressed
        counts["guarded"] += plan.guarded
        counts["deferred"] += plan.deferred
        counts["patterns_grown"] += len(plan.grown)
        described = [
            await self._describe_pattern(n.cluster, n.evidence, counts) for n in plan.created
        ]
        made = await self._store.write_patterns(plan, described, now, new_id)
        counts["patterns_created"] += len(made)
        phases["patterns"] = time.monotonic() - tick
        return made

    async def _describe_pattern(
        self, cluster: Cluster, evidence: tuple[int, ...], counts: Counter[str]
    ) -> Described:
        title = heuristic_title("pattern", cluster.concepts, self._cfg.title_max_chars)
        fallback = Described(title, pattern_description(cluster), "heuristic")
        if self._llm_left <= 0 or not self._completer.available:
            return fallback
        texts = await self._store.texts(evidence[-self._cfg.llm_evidence :], self._cfg.llm_evidence)
        return await self._llm(fallback, "pattern", cluster.concepts, texts, counts)

    async def _llm(
        self,
        fallback: Described,
        level: str,
        concepts: tuple[str, ...],
        texts: list[str],
        counts: Counter[str],
    ) -> Described:
        self._llm_left -= 1
        answer = await self._completer.complete_json(describe_request(level, concepts, texts))
        accepted = accept_description(
            answer, concepts, texts, self._cfg.title_max_chars, self._cfg.description_max_chars
        )
        if accepted is None:
            if answer is not None:
                counts["llm_rejected"] += 1
            return fallback
        counts["llm_described"] += 1
        return Described(accepted[0], accepted[1], "llm")

    # ---- principles and axioms ------------------------------------------------------------
    async def _parents_step(
        self, level: str, child_level: str, cap: int, now: datetime, counts: Counter[str]
    ) -> list[Created]:
        children = await self._store.children(child_level)
        groups = await asyncio.to_thread(
            group_children,
            children,
            self._cfg.min_shared_concepts,
            self._cfg.max_concepts,
            self._cfg.seed,
        )
        known = await self._store.known(level, self._cfg.archived_matched)
        create: list[tuple[Group, Described]] = []
        grow: list[tuple[str, Group]] = []
        for group in groups:
            match = match_group(group, known, self._match)
            if match is not None:
                if match.state == "dismissed":
                    counts["suppressed"] += 1
                else:
                    grow.append((match.id, group))
                continue
            if len(create) >= self._cfg.max_new_per_cycle:
                counts["deferred"] += 1
                continue
            create.append((group, await self._describe_parent(level, group, children, counts)))
        made, moved = await self._store.write_parents(
            level, child_level, ParentPlan(tuple(create), tuple(grow)), self._life, cap, now, new_id
        )
        counts[f"{level}s_created"] += len(made)
        for key, n in moved.items():
            counts[key] += n
        return made

    async def _describe_parent(
        self, level: str, group: Group, children: list[Child], counts: Counter[str]
    ) -> Described:
        title = heuristic_title(level, group.concepts, self._cfg.title_max_chars)
        fallback = Described(title, parent_description(level, len(group.children)), "heuristic")
        if self._llm_left <= 0 or not self._completer.available:
            return fallback
        titles = await self._store.titles(group.children[: self._cfg.llm_evidence])
        return await self._llm(fallback, level, group.concepts, titles, counts)

    def health(self) -> dict[str, Any]:
        return {
            "mode": "llm" if self._completer.available and self._cfg.llm_describe else "heuristic",
            "cycles": self.cycles,
            "totals": dict(self.totals),
            "last": self.last,
        }
