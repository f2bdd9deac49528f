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

The read side of a cycle (steps 1-4 up to their writes) is one call,
``cognition.dreaming_plan.plan_cycle``: from ``dreaming.process_min_memories`` live
memories on it runs in a worker process with a read-only connection of its own, so its
seconds of Python never hold the daemon's GIL against requests (that module's docstring
has the profile and why the term cache stays here); below, on a pooled reader's thread.
The summary's ``planned_in_process`` says which. Every write step is one transaction
(``store.dreaming``), written here after the plan; the vector work runs in worker threads.
Counts go to the summary, to ``DreamCompleted`` and to ``health``.
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

from mnemonic.cognition.dreaming import (
    EpisodeNote,
    LinkParams,
    TermCache,
    accept_insight,
    insight_request,
    insight_text,
)
from mnemonic.cognition.dreaming_plan import CyclePlan, Found, Marks, PlanParams
from mnemonic.config import DreamingConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import DreamCompleted, Event, RawMemoryCreated
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.runtime.worker_process import run_in_worker
from mnemonic.store.dreaming import (
    CURSOR_META,
    QUERY_META,
    STARTED_META,
    STRENGTHENED_META,
    InsightPlan,
    SQLiteDreaming,
)
from mnemonic.store.dreaming_reads import plan_in_worker
from mnemonic.store.models import MemoryType, NewRaw, Source

log = logging.getLogger(__name__)

LLM_SOURCE_CHARS = 600  # characters of each source shown to the LLM
LLM_SOURCES = 8

COUNT_KEYS = (
    "replayed",
    "links_strengthened",
    "replay_pairs_unshared",
    "replay_strengthened_before",
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
        busy_timeout_ms: int = 5000,
    ) -> None:
        self._store = store
        self._publish = publish
        self._clock = clock
        self._cfg = cfg
        self._completer: Completer = completer if completer is not None else NoCompleter()
        self._redact = redact
        self._summary_max_chars = summary_max_chars
        self._max_concepts = max_concepts
        self._busy_timeout_ms = busy_timeout_ms
        self._params = plan_params(cfg)
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
        tick = time.monotonic()
        plan, in_process = await self._planned()
        self._terms = plan.terms  # refreshed: the next cycle parses only what changes
        counts.update(plan.counts)
        phases: dict[str, float] = {**plan.phases_ms, "plan": _ms(tick)}
        tick = time.monotonic()
        counts["links_strengthened"] = await self._store.raise_strengths(plan.strengthened, now)
        meta = {
            STARTED_META: str(now.timestamp()),
            CURSOR_META: str(plan.cursor),
            STRENGTHENED_META: str(plan.strengthened_through),
        }
        if plan.query_rowid is not None:
            meta[QUERY_META] = str(plan.query_rowid)
        await self._store.set_meta(meta, now)
        counts["links_added"], counts["links_raised"] = await self._store.add_links(plan.links, now)
        counts["coretrieval_links"] = plan.coretrieval_links
        phases["write_links"] = _ms(tick)
        tick = time.monotonic()
        await self._insights(plan.insights, now, counts)
        phases["write_insights"] = _ms(tick)
        summary: dict[str, Any] = {
            "trigger": trigger,
            **{k: int(counts.get(k, 0)) for k in COUNT_KEYS},
            "planned_in_process": in_process,
            "took_ms": _ms(t0),
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

    async def _planned(self) -> tuple[CyclePlan, bool]:
        """The cycle's read side (``plan_cycle``) and whether it ran in a worker process.

        From ``process_min_memories`` live memories on, a worker process reads the store
        through a connection of its own and does the Python work there (anyio's pool;
        the worker is killed if the cycle is cancelled, e.g. by the daemon stopping), so
        the daemon's GIL stays with its requests. The term cache goes there and back as
        numpy arrays. Fewer memories: a pooled reader's thread, yielding the GIL between
        slices of the term index."""
        marks = Marks(
            cursor=int(await self._store.get_meta(CURSOR_META) or 0),
            query_after=int(await self._store.get_meta(QUERY_META) or 0),
            strengthened_through=int(await self._store.get_meta(STRENGTHENED_META) or 0),
        )
        if await self._store.live_count() >= self._cfg.process_min_memories:
            # the plan comes back through a private file, not the worker's pipe
            # (``runtime.worker_process`` says why)
            plan = await run_in_worker(
                self._store.folder, "dreaming", CyclePlan, plan_in_worker,
                str(self._store.path), self._busy_timeout_ms, self._params, self._terms, marks,
            )  # fmt: skip
            return plan, True
        return await self._store.plan(self._params, self._terms, marks, _yield_gil), False

    async def _cooling(self, at: float) -> bool:
        last = self._last_started
        if last is None:
            stored = await self._store.get_meta(STARTED_META)
            last = float(stored) if stored else None
        return last is not None and 0 <= at - last < self._cfg.min_interval_s

    # ---- insights -------------------------------------------------------------------------
    async def _insights(self, found: list[Found], now: datetime, counts: Counter[str]) -> None:
        if not found:
            return
        plans = [await self._plan(f, now, counts) for f in found]
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

    async def _plan(self, found: Found, now: datetime, counts: Counter[str]) -> InsightPlan:
        rec = found.recurrence
        details = await self._store.source_details(found.seqs)
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


def _ms(since: float) -> float:
    return round((time.monotonic() - since) * 1000, 1)


def plan_params(cfg: DreamingConfig) -> PlanParams:
    """The settings the read side needs, as plain values (they go to a worker process)."""
    links = LinkParams(
        cfg.max_df_share, cfg.max_term_df, cfg.min_shared_idf, cfg.max_link_strength,
        cfg.max_related_per_memory, cfg.max_links_per_cycle,
    )  # fmt: skip
    return PlanParams(
        replay_batch=cfg.replay_batch,
        replay_window=cfg.replay_window,
        neighbour_min_strength=cfg.neighbour_min_strength,
        max_neighbours=cfg.max_neighbours,
        eta=cfg.eta,
        strength_ceiling=cfg.strength_ceiling,
        max_strengthened_per_cycle=cfg.max_strengthened_per_cycle,
        queries_per_cycle=cfg.queries_per_cycle,
        coretrieval_top=cfg.coretrieval_top,
        helpful_weight=cfg.helpful_weight,
        coretrieval_min_count=cfg.coretrieval_min_count,
        coretrieval_lookback=cfg.coretrieval_lookback,
        coretrieval_link_strength=cfg.coretrieval_link_strength,
        links=links,
        min_episodes=cfg.min_episodes,
        max_insights_per_cycle=cfg.max_insights_per_cycle,
    )
