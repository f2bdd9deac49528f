"""The dreaming agent: replay, co-activation, cross-episode links and insights, one bounded
cycle at a time (scheduled every ``dreaming.interval_s``, by the reactor after an episode
closes, or on demand; the scheduler runs one at a time).

1. **Replay** the most salient memories of a rotating window (cursor in ``system_meta``,
   wrapping around). Replay is not access: nothing here touches ``access_count`` or
   ``last_accessed_at``.
2. **Strengthen** links that co-activate (``cognition.dreaming.strengthen``): links
   between two strong neighbours of one replayed memory, and links between memories that
   recent recalls returned together (more for a helpful rating). Unlinked memories recalled
   together ``coretrieval_min_count`` times get a ``related`` link.
3. **Link** memories that share rare concepts or entities across episodes or projects
   (``related``, strength from idf evidence, caps per memory and per cycle).
4. **Insights**: two terms that recur together across ``min_episodes`` episodes become an
   ``insight`` memory (source ``dreaming``) with its provenance in ``insight_sources``;
   worded by the LLM when one is available and the sentence is grounded, else by a
   template. The same pair never gives a second insight.

Every write step is one transaction (``store.dreaming``); the index and the vector work
run in worker threads. Counts go to the summary, to ``DreamCompleted`` and to ``health``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np

from mnemonic.cognition.dreaming import (
    FIXED_RELATIONS,
    EpisodeNote,
    LinkParams,
    Recurrence,
    TermCache,
    TermIndex,
    accept_insight,
    choose_links,
    coretrieved,
    cross_candidates,
    evidence_strength,
    insight_request,
    insight_text,
    neighbourhood_pairs,
    pick_replay,
    recurrences,
    strengthen,
)
from mnemonic.config import DreamingConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import DreamCompleted, Event, RawMemoryCreated
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.store.dreaming import (
    CURSOR_META,
    QUERY_META,
    STARTED_META,
    TERM_PAGE,
    InsightPlan,
    Link,
    SQLiteDreaming,
    TermRow,
)
from mnemonic.store.models import MemoryType, NewRaw, Relation, Source

log = logging.getLogger(__name__)

RELATED = Relation.RELATED.value
LLM_SOURCE_CHARS = 600  # characters of each source shown to the LLM
LLM_SOURCES = 8

COUNT_KEYS = (
    "replayed",
    "links_strengthened",
    "links_added",
    "links_raised",
    "coretrieval_links",
    "insights",
    "llm_insights",
    "llm_rejected",
    "queries_read",
    "memories_indexed",
    "memories_parsed",
)


class DreamingAgent:
    """Owned by the composition root; the scheduler calls ``run_cycle``."""

    name = "dreaming"

    def __init__(
        self,
        store: SQLiteDreaming,
        publish: Callable[[Event], None],
        clock: Callable[[], datetime],
        cfg: DreamingConfig,
        completer: Completer | None = None,
        *,
        redact: Callable[[str], str],
        summary_max_chars: int = 200,
        max_concepts: int = 8,
    ) -> None:
        self._store = store
        self._publish = publish
        self._clock = clock
        self._cfg = cfg
        self._completer: Completer = completer if completer is not None else NoCompleter()
        self._redact = redact
        self._summary_max_chars = summary_max_chars
        self._max_concepts = max_concepts
        self._links = LinkParams(
            cfg.max_df_share, cfg.max_term_df, cfg.min_shared_idf, cfg.max_link_strength,
            cfg.max_related_per_memory, cfg.max_links_per_cycle,
        )  # fmt: skip
        self._last_started: float | None = None
        self._terms = TermCache(cfg.max_terms_per_memory)
        self.cycles = 0
        self.skipped = 0
        self.totals: Counter[str] = Counter()
        self.last: dict[str, Any] | None = None

    # ---- the cycle ------------------------------------------------------------------------
    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        now = self._clock()
        t0 = time.monotonic()
        if trigger != "manual" and await self._cooling(now.timestamp()):
            self.skipped += 1
            return {"trigger": trigger, "skipped": "cooldown", **dict.fromkeys(COUNT_KEYS, 0)}
        self._last_started = now.timestamp()
        counts: Counter[str] = Counter()
        meta: dict[str, str] = {STARTED_META: str(now.timestamp())}
        phases: dict[str, float] = {}
        tick = time.monotonic()

        def lap(name: str) -> None:
            nonlocal tick
            phases[name] = round((time.monotonic() - tick) * 1000, 1)
            tick = time.monotonic()

        seeds = await self._replay(meta, counts)
        lap("replay")
        new_links = await self._coactivation(seeds, now, meta, counts)
        await self._store.set_meta(meta, now)
        lap("coactivation")
        index = await self._index(counts)
        seed_rows = _rows_of(index, seeds)
        lap("index")
        await self._cross_links(index, seed_rows, new_links, now, counts)
        lap("links")
        await self._insights(index, seed_rows, now, counts)
        lap("insights")
        summary: dict[str, Any] = {
            "trigger": trigger,
            **{k: int(counts.get(k, 0)) for k in COUNT_KEYS},
            "took_ms": round((time.monotonic() - t0) * 1000, 1),
            "phases_ms": phases,  # where a cycle's time goes (found from the summary)
        }
        self._publish(
            DreamCompleted(
                replayed=summary["replayed"],
                links_added=summary["links_added"],
                took_ms=summary["took_ms"],
                links_strengthened=summary["links_strengthened"],
                insights=summary["insights"],
                trigger=trigger,
            )
        )
        self.cycles += 1
        self.totals.update({k: summary[k] for k in COUNT_KEYS})
        self.last = summary
        return summary

    async def _cooling(self, at: float) -> bool:
        last = self._last_started
        if last is None:
            stored = await self._store.get_meta(STARTED_META)
            last = float(stored) if stored else None
        return last is not None and 0 <= at - last < self._cfg.min_interval_s

    # ---- 1. replay ------------------------------------------------------------------------
    async def _replay(self, meta: dict[str, str], counts: Counter[str]) -> list[int]:
        batch = self._cfg.replay_batch
        if batch <= 0:
            return []
        cursor = int(await self._store.get_meta(CURSOR_META) or 0)
        window = await self._store.replay_window(cursor, batch * self._cfg.replay_window)
        if not window and cursor > 0:  # wrapped around
            window = await self._store.replay_window(0, batch * self._cfg.replay_window)
        if not window:
            return []
        seqs = np.fromiter((s for s, _ in window), dtype=np.int64, count=len(window))
        sal = np.fromiter((v for _, v in window), dtype=np.float64, count=len(window))
        chosen = pick_replay(seqs, sal, batch)
        full = len(window) == batch * self._cfg.replay_window
        meta[CURSOR_META] = str(int(seqs[-1]) if full else 0)
        counts["replayed"] = len(chosen)
        return [int(s) for s in chosen]

    # ---- 2. co-activation -----------------------------------------------------------------
    async def _coactivation(
        self, seeds: list[int], now: datetime, meta: dict[str, str], counts: Counter[str]
    ) -> list[Link]:
        """Strengthen co-activated links; return the co-retrieval links to add."""
        steps: Counter[tuple[int, int]] = Counter()
        known: dict[tuple[int, int], list[Link]] = {}
        if seeds and self._cfg.max_neighbours > 0:
            strong = await self._store.links_touching(seeds, self._cfg.neighbour_min_strength)
            near = _neighbours(seeds, strong, self._cfg.max_neighbours)
            around = sorted({n for ns in near.values() for n in ns})
            links = await self._store.links_touching(around)

            def pairs_around() -> Counter[tuple[int, int]]:
                # tens of thousands of links at 100k: off the loop (it served /query in
                # 200 ms spikes while this ran on it)
                for link in links:
                    known.setdefault((link.a, link.b), []).append(link)
                return neighbourhood_pairs(near, known)

            steps.update(await asyncio.to_thread(pairs_around))
        after = int(await self._store.get_meta(QUERY_META) or 0)
        fresh = await self._store.queries(after, self._cfg.queries_per_cycle)
        counts["queries_read"] = len(fresh)
        if fresh:
            meta[QUERY_META] = str(fresh[-1].rowid)
            recalled = await self._recall_pairs(fresh)
            pairs = await asyncio.to_thread(lambda: sorted(set(recalled) - set(known)))
            for link in await self._store.links_of_pairs(pairs):
                known.setdefault((link.a, link.b), []).append(link)
            steps.update(recalled)
        updates = await asyncio.to_thread(self._updates, steps, known)
        counts["links_strengthened"] = await self._store.raise_strengths(updates, now)
        return await self._coretrieval_links(known)

    async def _recall_pairs(self, rows: list[Any]) -> Counter[tuple[int, int]]:
        ids = {i for r in rows for i in (*r.results, *r.helpful, *r.irrelevant)}
        seq = await self._store.live_seqs(sorted(ids))

        def count() -> Counter[tuple[int, int]]:  # every pair of up to ~1,000 recalls
            return coretrieved(
                ([seq[i] for i in r.results if i in seq] for r in rows),
                ([seq[i] for i in r.helpful if i in seq] for r in rows),
                [seq[i] for r in rows for i in r.irrelevant if i in seq],
                top=self._cfg.coretrieval_top,
                helpful_weight=self._cfg.helpful_weight,
            )

        return await asyncio.to_thread(count)

    def _updates(
        self, steps: Counter[tuple[int, int]], known: dict[tuple[int, int], list[Link]]
    ) -> list[Link]:
        found = [
            (link, n)
            for pair, n in steps.items()
            for link in known.get(pair, [])
            if link.relation not in FIXED_RELATIONS and link.strength < self._cfg.strength_ceiling
        ]
        found.sort(key=lambda x: (-x[1], x[0].a, x[0].b, x[0].relation))
        found = found[: self._cfg.max_strengthened_per_cycle]
        if not found:
            return []
        grown = strengthen(
            np.array([link.strength for link, _ in found]),
            np.array([n for _, n in found]),
            self._cfg.eta,
            self._cfg.strength_ceiling,
        )
        return [
            Link(link.a, link.b, link.relation, float(s))
            for (link, _), s in zip(found, grown, strict=True)
            if s > link.strength
        ]

    async def _coretrieval_links(self, known: dict[tuple[int, int], list[Link]]) -> list[Link]:
        """Unlinked pairs recalled together often enough in the recent recalls."""
        if self._cfg.coretrieval_lookback <= 0:
            return []
        recent = await self._store.queries(0, self._cfg.coretrieval_lookback, newest=True)
        if not recent:
            return []
        together = await self._recall_pairs(recent)
        least = self._cfg.coretrieval_min_count
        often = await asyncio.to_thread(lambda: [p for p, n in together.items() if n >= least])
        linked = {(link.a, link.b) for link in await self._store.links_of_pairs(often)}
        linked |= set(known)
        strength = self._cfg.coretrieval_link_strength
        return [Link(a, b, RELATED, strength) for a, b in sorted(often) if (a, b) not in linked]

    # ---- 3. cross-episode links -----------------------------------------------------------
    async def _index(self, counts: Counter[str]) -> TermIndex:
        rows: list[TermRow] = []
        after = 0
        while True:
            page = await self._store.term_rows(after, TERM_PAGE)
            rows += page
            if len(page) < TERM_PAGE:
                break
            after = page[-1].seq
        counts["memories_indexed"] = len(rows)
        # the cache parses only memories new or changed since the last cycle, in a worker
        # thread that yields the GIL every few thousand rows (the event loop keeps serving)
        index = await asyncio.to_thread(
            self._terms.index,
            [r.seq for r in rows],
            [r.key for r in rows],
            lambda i: rows[i].terms,
            [r.episode for r in rows],
            pause=_yield_gil,
        )
        counts["memories_parsed"] = self._terms.parsed
        return index

    async def _cross_links(
        self,
        index: TermIndex,
        seed_rows: np.ndarray[Any, np.dtype[np.int64]],
        extra: list[Link],
        now: datetime,
        counts: Counter[str],
    ) -> None:
        # every step over the candidates runs in a worker thread: at 100k memories building
        # the pairs and their lookups held the event loop for ~0.3 s (a measured stall)
        a, b, evidence = await asyncio.to_thread(cross_candidates, index, seed_rows, self._links)
        max_strength = self._cfg.max_link_strength

        def pairs_of() -> tuple[list[tuple[int, int]], Any]:
            pairs = [(int(index.seq[i]), int(index.seq[j])) for i, j in zip(a, b, strict=True)]
            return pairs, evidence_strength(evidence, max_strength)

        pairs, strengths = await asyncio.to_thread(pairs_of)
        existing = await self._store.links_touching(sorted({s for p in pairs for s in p}))

        def split() -> tuple[list[Link], list[Link], list[tuple[tuple[int, int], float, float]]]:
            by_pair: dict[tuple[int, int], set[str]] = {}
            for link in existing:
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
                (p, float(s), float(e))
                for p, s, e in zip(pairs, strengths, evidence, strict=True)
                if p not in by_pair and p not in taken
            ]
            # co-retrieval links first (behaviour beats word overlap), then by evidence
            cand = [((k.a, k.b), k.strength, float("inf")) for k in kept] + fresh
            return raised, kept, cand

        raise_, extra, cand = await asyncio.to_thread(split)
        have = await self._store.related_counts(sorted({s for p, _, _ in cand for s in p}))
        chosen = await asyncio.to_thread(
            choose_links,
            [p[0] for p, _, _ in cand],
            [p[1] for p, _, _ in cand],
            [e for _, _, e in cand],
            have,
            self._cfg.max_related_per_memory,
            self._cfg.max_links_per_cycle,
        )
        links = [Link(cand[i][0][0], cand[i][0][1], RELATED, cand[i][1]) for i in chosen]
        added, raised = await self._store.add_links(links + raise_, now)
        counts["links_added"] = added
        counts["links_raised"] = raised
        counts["coretrieval_links"] = sum(1 for i in chosen if i < len(extra))

    # ---- 4. insights ----------------------------------------------------------------------
    async def _insights(
        self,
        index: TermIndex,
        seed_rows: np.ndarray[Any, np.dtype[np.int64]],
        now: datetime,
        counts: Counter[str],
    ) -> None:
        if self._cfg.max_insights_per_cycle <= 0 or len(seed_rows) == 0:
            return
        known = await self._store.insight_keys()
        found = await asyncio.to_thread(
            recurrences,
            index,
            seed_rows,
            min_episodes=self._cfg.min_episodes,
            max_df_share=self._cfg.max_df_share,
            known=known,
        )
        plans: list[InsightPlan] = []
        for rec in found[: self._cfg.max_insights_per_cycle]:
            plans.append(await self._plan(rec, index, now, counts))
        written = await self._store.write_insights(plans)
        counts["insights"] = len(written)
        for w in written:
            self._publish(
                RawMemoryCreated(
                    raw_id=w.raw_id,
                    memory_id=w.memory_id,
                    source=Source.DREAMING.value,
                    project=w.project or None,
                    content="",
                )
            )

    async def _plan(
        self, rec: Recurrence, index: TermIndex, now: datetime, counts: Counter[str]
    ) -> InsightPlan:
        seqs = [int(index.seq[d]) for d in rec.docs]
        details = await self._store.source_details(seqs)
        ranked = sorted(details, key=lambda s: (-details[s][2], s))
        sources = tuple(sorted(ranked[: self._cfg.insight_max_sources]))
        notes: dict[str, EpisodeNote] = {}
        for _, _, _, episode, title, _, started in details.values():
            if episode is not None and started is not None:
                notes[episode] = EpisodeNote(title, started)
        text = insight_text(rec, list(notes.values()))
        described_by = "heuristic"
        if self._cfg.llm_insights and self._completer.available:
            texts = [details[s][1][:LLM_SOURCE_CHARS] for s in ranked[:LLM_SOURCES]]
            sentence = accept_insight(
                await self._completer.complete_json(insight_request(rec, texts)), texts
            )
            if sentence is not None:
                text, described_by = sentence, "llm"
                counts["llm_insights"] += 1
            else:
                counts["llm_rejected"] += 1
        text = self._redact(text)
        projects = {details[s][0] for s in sources}
        encoded = await asyncio.to_thread(
            encode,
            text,
            explicit_type=MemoryType.INSIGHT,
            summary_max_chars=self._summary_max_chars,
            max_concepts=self._max_concepts,
        )
        concepts = tuple(dict.fromkeys((rec.first, rec.second, *encoded.concepts)))
        raw = NewRaw(
            content=text,
            source=Source.DREAMING,
            project=projects.pop() if len(projects) == 1 else "",
            timestamp=now,
            metadata={
                "dreaming": {
                    "key": rec.key,
                    "terms": [rec.first, rec.second],
                    "episodes": rec.episodes,
                    "described_by": described_by,
                }
            },
            type=MemoryType.INSIGHT,
        )
        encoded = dataclasses.replace(encoded, concepts=concepts[: self._max_concepts])
        return InsightPlan(raw, encoded, content_hash(text), sources)

    @property
    def store(self) -> SQLiteDreaming:
        """The dreamer's store (the insight routes read through it)."""
        return self._store

    def health(self) -> dict[str, Any]:
        mode = self._completer.mode if self._cfg.llm_insights else "heuristic"
        return {
            "mode": mode,
            "cycles": self.cycles,
            "skipped_cooldown": self.skipped,
            "totals": dict(self.totals),
            "last": self.last,
        }


def _yield_gil() -> None:
    """Let the event loop's thread take the GIL between slices of pure-Python work (with 2
    cores a worker thread otherwise holds it in 5 ms turns against every request)."""
    time.sleep(0)


def _neighbours(seeds: list[int], strong: list[Link], keep: int) -> dict[int, list[int]]:
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


def _rows_of(index: TermIndex, seqs: list[int]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Index rows of the replayed memories that the term index holds."""
    if index.n == 0:
        return np.zeros(0, dtype=np.int64)
    wanted = np.asarray(sorted(seqs), dtype=np.int64)
    pos = np.searchsorted(index.seq, wanted)
    ok = (pos < index.n) & (index.seq[np.minimum(pos, index.n - 1)] == wanted)
    out: np.ndarray[Any, np.dtype[np.int64]] = pos[ok].astype(np.int64)
    return out
