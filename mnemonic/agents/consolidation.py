"""The consolidation agent: decay, link pruning and merging, one bounded cycle at a time.

A cycle (scheduled, cron, on demand or at start; the scheduler runs one at a time):

1. **Decay** every live memory by the time since it was last decayed, in seq order and
   chunks (``cognition.decay``); state changes active -> fading -> archived. A pass that
   runs out of budget resumes where it stopped next cycle; watermarks make it idempotent.
2. **Prune** weak links nobody used (``cognition.links``).
3. **Merge** near-duplicate clusters among memories new since the last scan into a gist
   (``cognition.merging``); sources become ``merged`` with a pointer to the gist and can be
   restored (``unmerge``).

Every phase shares one budget (``max_changes`` rows, ``max_seconds``). Judgments and
vector products run in worker threads; the store runs on its own threads. A cycle writes a
``consolidation_history`` row and publishes ``ConsolidationCompleted``; state changes are
published as individual ``MemoryStateChanged`` events only up to ``max_state_events`` (the
rest are counted), so a cycle that fades 100,000 memories does not flood the bus.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemonic.cognition.decay import (
    STATE_NAMES,
    DecayParams,
    Watermarks,
    decay,
)
from mnemonic.cognition.links import PROTECTED_RELATIONS, PruneParams, prune_mask
from mnemonic.cognition.merging import (
    Candidate,
    MergeParams,
    accept_summary,
    clusters,
    gist_request,
    plan_gist,
)
from mnemonic.config import DEFAULT_HALF_LIVES, ConsolidationConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import (
    ConsolidationCompleted,
    Event,
    MemoryStateChanged,
    RawMemoryCreated,
)
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.store.consolidation import (
    DECAY_META,
    MERGE_META,
    PRUNE_META,
    DecayWrite,
    GistPlan,
    Merged,
    SQLiteConsolidation,
)
from mnemonic.store.models import MemoryType, NewRaw, Source
from mnemonic.timeutil import from_db

log = logging.getLogger(__name__)

CHUNK = 20_000  # memories read per decay step
LINK_PAGE = 5_000
VECTOR_PAGE = 20_000
_END = 2**62


class _Budget:
    def __init__(self, changes: int, seconds: float) -> None:
        self.left = changes
        self.deadline = time.monotonic() + seconds
        self.exhausted = False

    def out(self) -> bool:
        if self.left <= 0 or time.monotonic() >= self.deadline:
            self.exhausted = True
        return self.exhausted

    def take(self, wanted: int) -> int:
        """How many of ``wanted`` changes fit; marks the budget exhausted when not all."""
        n = max(0, min(wanted, self.left))
        if n < wanted:
            self.exhausted = True
        self.left -= n
        return n


def decay_params(cfg: ConsolidationConfig) -> DecayParams:
    return DecayParams(
        half_life_days={**DEFAULT_HALF_LIVES, **cfg.half_life_days},
        salience_floor=cfg.salience_floor,
        grace_days=cfg.grace_days,
        utility_exponent=cfg.utility_exponent,
        fading_below=cfg.fading_below,
        revive_above=max(cfg.revive_above, cfg.fading_below),
        archive_below=cfg.archive_below,
        archive_idle_days=cfg.archive_idle_days,
    )


class ConsolidationAgent:
    """Owned by the composition root; the scheduler calls ``run_cycle``."""

    name = "consolidation"

    def __init__(
        self,
        store: SQLiteConsolidation,
        publish: Callable[[Event], None],
        clock: Callable[[], datetime],
        cfg: ConsolidationConfig,
        completer: Completer | None = None,
        *,
        summary_max_chars: int = 200,
        max_concepts: int = 8,
    ) -> None:
        self._store = store
        self._publish = publish
        self._clock = clock
        self._cfg = cfg
        self._completer: Completer = completer if completer is not None else NoCompleter()
        self._summary_max_chars = summary_max_chars
        self._max_concepts = max_concepts
        self._decay = decay_params(cfg)
        self._prune = PruneParams(cfg.link_prune_below, cfg.link_prune_age_days)
        self._merge = MergeParams(
            cfg.merge_similarity, cfg.merge_min_word_overlap, cfg.merge_max_cluster,
            cfg.gist_max_chars,
        )  # fmt: skip
        self.cycles = 0
        self.totals: Counter[str] = Counter()
        self.last: dict[str, Any] | None = None

    # ---- the cycle ------------------------------------------------------------------------
    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        started = self._clock()
        t0 = time.monotonic()
        budget = _Budget(self._cfg.max_changes, self._cfg.max_seconds)
        counts: Counter[str] = Counter()
        events: list[tuple[int, str, str, str]] = []  # (seq, old, new, reason) to announce
        await self._decay_phase(started, budget, counts, events)
        await self._prune_phase(started, budget, counts)
        merged = await self._merge_phase(started, budget, counts, events)
        await self._announce_states(events)
        for m in merged:
            self._publish(
                RawMemoryCreated(
                    raw_id=m.raw_id,
                    memory_id=m.gist_id,
                    source="consolidation",
                    project=None,
                    content="",
                )
            )
        finished = self._clock()
        summary: dict[str, Any] = {
            "trigger": trigger,
            **{k: int(counts.get(k, 0)) for k in _COUNT_KEYS},
            "budget_exhausted": budget.exhausted,
            "took_ms": round((time.monotonic() - t0) * 1000, 1),
        }
        await self._store.record_cycle(
            started, finished, trigger, _counts_json(summary), budget.exhausted
        )
        self._publish(
            ConsolidationCompleted(
                decayed=summary["decayed"],
                merged=summary["merged"],
                archived=summary["archived"],
                took_ms=summary["took_ms"],
                trigger=trigger,
                fading=summary["fading"],
                revived=summary["revived"],
                pruned=summary["pruned"],
                budget_exhausted=budget.exhausted,
            )
        )
        self.cycles += 1
        self.totals.update({k: summary[k] for k in _COUNT_KEYS})
        self.last = summary
        return summary

    # ---- decay ----------------------------------------------------------------------------
    async def _decay_phase(
        self,
        now: datetime,
        budget: _Budget,
        counts: Counter[str],
        events: list[tuple[int, str, str, str]],
    ) -> None:
        at = now.timestamp()
        wm = Watermarks.from_json(await self._store.get_meta(DECAY_META))
        if wm.cursor == 0 and min(wm.times) > at - self._cfg.decay_min_interval_s:
            # every memory decayed less than the interval ago: a pass now would rewrite
            # ~every row for a negligible change (94,550 rows 18 s after a pass at 100k,
            # doubling /query p95 meanwhile); skipping loses nothing, the next pass
            # decays over the whole elapsed time
            counts["decay_skipped"] = 1
            return
        lo = wm.cursor
        while not budget.out():
            rows, access = await self._store.decay_chunk(lo, CHUNK)
            if len(rows) == 0:
                wm.mark(lo, _END, at)
                wm.finish_pass()
                break
            since = wm.since(rows.seq)
            tick = time.monotonic()
            result = await asyncio.to_thread(decay, rows, since, at, self._decay)
            changed = np.flatnonzero(result.changed)
            end = int(rows.seq[-1])
            for start in range(0, len(changed), self._cfg.write_batch):
                idx = changed[start : start + self._cfg.write_batch]
                n = budget.take(len(idx))
                idx = idx[:n]
                if n == 0:
                    break
                last = start + self._cfg.write_batch >= len(changed) and n == len(idx)
                hi = end if last and not budget.exhausted else int(rows.seq[idx[-1]])
                writes = [
                    DecayWrite(
                        int(rows.seq[i]),
                        float(rows.salience[i]),
                        STATE_NAMES[int(rows.state[i])],
                        access[i],
                        float(result.salience[i]),
                        STATE_NAMES[int(result.state[i])],
                    )
                    for i in idx
                ]
                wm.mark(lo, hi, at)
                wm.cursor = lo = hi
                moved = await self._store.write_decay(writes, wm.to_json(), now)
                counts["decayed"] += sum(
                    1 for w in writes if w.salience != w.old_salience
                )  # attempted; a row changed meanwhile is skipped by the store
                for seq, old, new in moved:
                    counts[_transition(old, new)] += 1
                    events.append((seq, old, new, "decay"))
                if budget.exhausted:
                    break
            if budget.exhausted:
                break
            wm.mark(lo, end, at)
            wm.cursor = lo = end
            await self._pause(tick)
        await self._store.set_meta(DECAY_META, wm.to_json(), now)

    async def _pause(self, since: float) -> None:
        """Give queries the cores back: a background cycle rests ``consolidation.pace``
        times as long as its last chunk worked (measured at 100k: /query p95 doubled
        while an unpaced cycle ran)."""
        if self._cfg.pace > 0:
            await asyncio.sleep((time.monotonic() - since) * self._cfg.pace)

    # ---- links ----------------------------------------------------------------------------
    async def _prune_phase(self, now: datetime, budget: _Budget, counts: Counter[str]) -> None:
        """Walk every link for weak, unused, old ones; at most once per
        ``prune_min_interval_s`` (a walk reads every link: ~7 s at 600k links)."""
        if self._prune.below <= 0:
            return
        last = await self._store.get_meta(PRUNE_META)
        if last is not None and float(last) > now.timestamp() - self._cfg.prune_min_interval_s:
            counts["prune_skipped"] = 1
            return
        key: tuple[int, int, str] | None = (0, 0, "")
        while key is not None and not budget.out():
            tick = time.monotonic()
            weak, key = await self._store.weak_links(key, LINK_PAGE, self._prune.below)
            await self._pause(tick)
            if not weak:
                continue
            mask = prune_mask(
                np.array([w.strength for w in weak]),
                np.array([w.activation_count for w in weak], dtype=np.int64),
                np.array([w.created for w in weak]),
                np.array([w.relation in PROTECTED_RELATIONS for w in weak]),
                now.timestamp(),
                self._prune,
            )
            pairs = zip(weak, mask, strict=True)
            doomed = [(w.source_seq, w.target_seq, w.relation) for w, m in pairs if m]
            doomed = doomed[: budget.take(len(doomed))]
            if doomed:
                counts["pruned"] += await self._store.delete_links(doomed, self._prune.below)
        if key is None:  # walked to the end
            await self._store.set_meta(PRUNE_META, str(now.timestamp()), now)

    # ---- merging --------------------------------------------------------------------------
    async def _merge_phase(
        self,
        now: datetime,
        budget: _Budget,
        counts: Counter[str],
        events: list[tuple[int, str, str, str]],
    ) -> list[Merged]:
        if self._cfg.merge_scan_per_cycle <= 0 or budget.out():
            return []
        after = int(await self._store.get_meta(MERGE_META) or 0)
        seeds = await self._store.merge_seeds(after, self._cfg.merge_scan_per_cycle)
        if not seeds:
            return []
        by_project: dict[str, list[int]] = defaultdict(list)
        for seq, project in seeds:
            by_project[project].append(seq)
        done: list[Merged] = []
        watermark = max(s for s, _ in seeds)
        for project, seqs in sorted(by_project.items(), key=lambda kv: kv[1][0]):
            if budget.out():
                watermark = min(watermark, seqs[0] - 1)
                continue
            done += await self._merge_project(project, seqs, now, budget, counts, events)
        await self._store.set_meta(MERGE_META, str(watermark), now)
        return done

    async def _merge_project(
        self,
        project: str,
        seeds: list[int],
        now: datetime,
        budget: _Budget,
        counts: Counter[str],
        events: list[tuple[int, str, str, str]],
    ) -> list[Merged]:
        seed_seqs, seed_vecs = await self._store.vectors(project, 0, 0, seqs=seeds)
        if len(seed_seqs) == 0:
            return []
        seed_vecs = _unit(seed_vecs)
        neighbours: dict[int, list[tuple[int, float]]] = {int(s): [] for s in seed_seqs}
        cursor = 0
        while True:
            seqs, mat = await self._store.vectors(project, cursor, VECTOR_PAGE)
            if len(seqs) == 0:
                break
            cursor = int(seqs[-1])
            if mat.shape[1] != seed_vecs.shape[1]:
                continue
            hits = await asyncio.to_thread(  # the norms too: a page is 20k rows (a 1 s stall)
                _close_unit_pairs, seed_seqs, seed_vecs, seqs, mat, self._merge.similarity
            )
            for a, b, cos in hits:
                neighbours[a].append((b, cos))
        keep = self._merge.max_cluster * 4
        for found in neighbours.values():
            found.sort(key=lambda h: -h[1])
            del found[keep:]
        wanted = sorted({s for s in neighbours} | {b for v in neighbours.values() for b, _ in v})
        found_c = await self._store.candidates(wanted)
        groups = await asyncio.to_thread(
            clusters, sorted(neighbours), neighbours, found_c, self._merge
        )
        plans: list[GistPlan] = []
        for group in groups:
            if budget.out() or budget.take(len(group)) < len(group):
                break
            plan = await self._plan(project, [found_c[s] for s in group], counts)
            if plan is not None:
                plans.append(plan)
        merged = await self._store.merge(plans, now) if plans else []
        counts["skipped_merges"] += len(plans) - len(merged)
        for m in merged:
            counts["merged"] += 1
            counts["merged_sources"] += len(m.sources)
            for source_seq, old_state in m.sources:
                events.append((source_seq, old_state, "merged", f"merged into {m.gist_id}"))
        return merged

    async def _plan(
        self, project: str, members: list[Candidate], counts: Counter[str]
    ) -> GistPlan | None:
        gist = await asyncio.to_thread(plan_gist, members, self._merge)
        if gist is None:
            counts["skipped_long"] += 1
            return None
        kind = MemoryType(members[0].type)
        encoded = await asyncio.to_thread(
            encode,
            gist,
            explicit_type=kind,
            summary_max_chars=self._summary_max_chars,
            max_concepts=self._max_concepts,
        )
        ordered = sorted(members, key=lambda m: (m.timestamp, m.seq))
        texts = [m.content for m in ordered]
        summary_by = "heuristic"
        if self._cfg.llm_gist and self._completer.available:
            answer = await self._completer.complete_json(gist_request(texts))
            summary = accept_summary(answer, texts)
            if summary is not None:
                encoded = dataclasses.replace(encoded, summary=summary)
                summary_by = "llm"
                counts["llm_summaries"] += 1
            else:
                counts["llm_rejected"] += 1
        raw = NewRaw(
            content=gist,
            source=_source(ordered[0].source),
            project=project,
            timestamp=from_db(ordered[-1].timestamp),
            metadata={
                "consolidation": {
                    "gist_of": [m.id for m in ordered],
                    "summary_by": summary_by,
                }
            },
            type=kind,
        )
        sources = tuple((m.seq, m.state) for m in ordered)
        return GistPlan(sources, raw, encoded, content_hash(gist))

    async def _announce_states(self, events: list[tuple[int, str, str, str]]) -> None:
        shown = events[: self._cfg.max_state_events]
        described = await self._store.describe([(s, o, n) for s, o, n, _ in shown])
        reasons = {s: r for s, _, _, r in shown}
        for change in described:
            self._publish(
                MemoryStateChanged(
                    memory_id=change.id,
                    project=change.project or None,
                    old_state=change.old_state,
                    new_state=change.new_state,
                    reason=reasons.get(change.seq, "consolidation"),
                )
            )

    def health(self) -> dict[str, Any]:
        mode = self._completer.mode if self._cfg.llm_gist else "heuristic"
        return {
            "mode": mode,
            "cycles": self.cycles,
            "totals": dict(self.totals),
            "last": self.last,
        }


_COUNT_KEYS = (
    "decayed",
    "decay_skipped",
    "prune_skipped",
    "fading",
    "archived",
    "revived",
    "pruned",
    "merged",
    "merged_sources",
    "skipped_merges",
    "skipped_long",
    "llm_summaries",
    "llm_rejected",
)


def _counts_json(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in _COUNT_KEYS}


def _transition(old: str, new: str) -> str:
    if new == "archived":
        return "archived"
    if new == "fading":
        return "fading"
    if new == "active" and old == "fading":
        return "revived"
    return f"{old}_to_{new}"


def _source(value: str) -> Source:
    try:
        return Source(value)
    except ValueError:
        return Source.API


def _unit(mat: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = (mat / norms).astype(np.float32, copy=False)
    return out


def _close_unit_pairs(
    seed_seqs: npt.NDArray[np.int64],
    seed_vecs: npt.NDArray[np.float32],
    seqs: npt.NDArray[np.int64],
    mat: npt.NDArray[np.float32],
    threshold: float,
) -> list[tuple[int, int, float]]:
    """``_close_pairs`` over a page normalised here, in the worker thread."""
    return _close_pairs(seed_seqs, seed_vecs, seqs, _unit(mat), threshold)


def _close_pairs(
    seed_seqs: npt.NDArray[np.int64],
    seeds: npt.NDArray[np.float32],
    seqs: npt.NDArray[np.int64],
    mat: npt.NDArray[np.float32],
    threshold: float,
) -> list[tuple[int, int, float]]:
    """(seed, other, cosine) of every pair at or above ``threshold`` (not a seed with
    itself); one matrix product (worker thread)."""
    sims = seeds @ mat.T
    rows, cols = np.nonzero(sims >= threshold)
    return [
        (int(seed_seqs[r]), int(seqs[c]), float(sims[r, c]))
        for r, c in zip(rows, cols, strict=True)
        if seed_seqs[r] != seqs[c]
    ]
