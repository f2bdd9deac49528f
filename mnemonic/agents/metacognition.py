"""The metacognition agent: audits the memory store and recall, and acts within bounds.

One cycle (scheduled, on demand, after a consolidation by the reactor's rule) runs every
audit of ``cognition.metacognition`` (see its docstring for the kinds), each judged
``ok``/``warning``/``alert`` against configured thresholds, and writes one
``meta_observations`` row and publishes one ``MetaObservation`` event per audit. Actions,
each recorded in the row's ``action`` and the event, are bounded per cycle:

* **re-embed**: memories lacking a vector are queued to the encoder again (injected
  ``reembed``; the daemon passes the encoder's sweep, itself capped);
* **suppress**: a memory rated irrelevant repeatedly has its utility lowered (a factor, a
  floor, at most ``suppress_per_cycle`` per cycle, once per feedback window; never deleted,
  the change listed in the row's detail);
* **ask for a consolidation**: when the dead ratio or the time since the last consolidation
  is high (injected ``request_agent``; once per ``consolidation_cooldown_s``; "already
  running" is fine).

The **recall self-test** asks recall (injected ``recall``: a path that does not count as
access, no query log, no feedback; the daemon passes the ``Recaller`` itself, see
:func:`recaller_probe`) a probe question per sampled pattern and memory and checks that
the evidence comes back in the top k. Without an LLM the probe is heuristic (the memory's
top concepts, else its summary); with one, the LLM may write a question, kept only if
grounded in the memory. The orchestrator runs the self-test alone on its own schedule
(:meth:`MetacognitionAgent.run_self_test`).

All rows of a cycle, and its suppressions, are written in one transaction at its end, so a
cycle failing midway (the scheduler records it failed) leaves nothing half-written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from mnemonic.cognition.metacognition import (
    DEAD_RATIO,
    IRRELEVANT_FEEDBACK,
    STALE_CONSOLIDATION,
    UNEMBEDDED,
    Finding,
    Probe,
    ProbeResult,
    SuppressParams,
    Threshold,
    accept_question,
    audit_dead_ratio,
    audit_irrelevant_feedback,
    audit_self_test,
    audit_source_skew,
    audit_stale_consolidation,
    audit_store_size,
    audit_unembedded,
    memory_question,
    pattern_question,
    plan_suppressions,
    question_request,
    score_probe,
    wants_consolidation,
)
from mnemonic.config import MetacognitionConfig
from mnemonic.events.types import Event, MetaObservation
from mnemonic.llm.completion.base import Completer, NoCompleter
from mnemonic.recall.pipeline import Recaller
from mnemonic.runtime.agent_runs import AlreadyRunning
from mnemonic.store.base import Filters
from mnemonic.store.meta import Observation, SQLiteMeta, Suppression

log = logging.getLogger(__name__)

RecallProbe = Callable[[str, int], Awaitable[Sequence[int]]]  # question, k -> top-k seqs
Reembed = Callable[[], Awaitable[int]]  # queues memories lacking a vector; how many
RequestAgent = Callable[[str, str], object]  # (agent name, trigger); raises if unknown


def recaller_probe(recaller: Recaller, filters: Filters | None = None) -> RecallProbe:
    """Recall for the self-test: the ``Recaller`` itself, below the application layer, so
    a probe writes nothing (no ``retrieval_queries`` row, no access count, no feedback)
    and does not count in the recall metrics. No score floor: the test asks whether the
    evidence is in the top k at all."""
    wanted = filters or Filters()

    async def probe(question: str, k: int) -> list[int]:
        outcome = await recaller.recall(question, wanted, k, min_score=0.0)
        return [s.memory.seq for s in outcome.results]

    return probe


def thresholds(cfg: MetacognitionConfig) -> dict[str, Threshold]:
    return {
        UNEMBEDDED: Threshold(cfg.unembedded_warning, cfg.unembedded_alert),
        "source_skew": Threshold(cfg.source_skew_warning, cfg.source_skew_alert),
        DEAD_RATIO: Threshold(cfg.dead_ratio_warning, cfg.dead_ratio_alert),
        STALE_CONSOLIDATION: Threshold(
            cfg.stale_consolidation_warning_s, cfg.stale_consolidation_alert_s
        ),
        IRRELEVANT_FEEDBACK: Threshold(cfg.irrelevant_warning, cfg.irrelevant_alert),
        "store_size": Threshold(
            float(cfg.store_size_warning_bytes), float(cfg.store_size_alert_bytes)
        ),
        "recall_self_test": Threshold(
            cfg.self_test_warning, cfg.self_test_alert, lower_is_worse=True
        ),
    }


class MetacognitionAgent:
    """Owned by the composition root; the scheduler calls ``run_cycle``."""

    name = "metacognition"

    def __init__(
        self,
        store: SQLiteMeta,
        publish: Callable[[Event], None],
        clock: Callable[[], datetime],
        cfg: MetacognitionConfig,
        *,
        database_bytes: Callable[[], int],
        recall: RecallProbe | None = None,
        reembed: Reembed | None = None,
        request_agent: RequestAgent | None = None,
        completer: Completer | None = None,
    ) -> None:
        self._store = store
        self._publish = publish
        self._clock = clock
        self._cfg = cfg
        self._bytes = database_bytes
        self._recall = recall
        self._reembed = reembed
        self._request = request_agent
        self._completer: Completer = completer if completer is not None else NoCompleter()
        self._levels = thresholds(cfg)
        self._suppress = SuppressParams(
            cfg.suppress_after, cfg.suppress_factor, cfg.suppress_floor, cfg.suppress_per_cycle
        )
        self._self_test_lock = asyncio.Lock()
        self.cycles = 0
        self.actions: Counter[str] = Counter()
        self.last: dict[str, Any] | None = None
        self.last_self_test: dict[str, Any] | None = None  # at, hit_rate, probes

    # ---- the cycle ------------------------------------------------------------------------
    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        now = self._clock()
        t0 = time.monotonic()
        findings = await self._audits(now)
        test, cursor = await self._self_test()
        findings.append(test)
        observations, suppressions, asked = await self._act(findings, now, trigger)
        _, done = await self._store.record(
            observations,
            suppressions,
            sample_cursor=cursor,
            consolidation_asked=now if asked else None,
            keep=self._cfg.keep_per_kind,
        )
        if suppressions:
            self.actions["suppressed"] += len(done)
        for o in observations:
            if o.kind == IRRELEVANT_FEEDBACK and "suppressed" in o.detail:
                o.detail["suppressed"] = [d for d in o.detail["suppressed"] if d["seq"] in done]
            self._announce(o)
        self._remember_self_test(test, now)
        summary: dict[str, Any] = {
            "trigger": trigger,
            "severities": {o.kind: o.severity for o in observations},
            "actions": {o.kind: o.action for o in observations if o.action},
            "self_test_hit_rate": test.value,
            "self_test_probes": test.detail.get("probes", 0),
            "suppressed": len(done),
            "took_ms": round((time.monotonic() - t0) * 1000, 1),
        }
        self.cycles += 1
        self.last = summary
        return summary

    async def _audits(self, now: datetime) -> list[Finding]:
        cfg, lv = self._cfg, self._levels
        counts = await self._store.counts()
        window = now - timedelta(seconds=cfg.feedback_window_s)
        last = await self._store.last_consolidation()
        oldest = await self._store.oldest_memory() if last is None else None
        size = await asyncio.to_thread(self._bytes)
        return [
            audit_unembedded(counts.live, counts.live_unembedded, lv[UNEMBEDDED]),
            audit_source_skew(counts.live_by_source, lv["source_skew"], cfg.min_memories),
            audit_dead_ratio(counts.by_state, lv[DEAD_RATIO], cfg.min_memories),
            audit_stale_consolidation(last, oldest, now, lv[STALE_CONSOLIDATION]),
            audit_irrelevant_feedback(
                await self._store.feedback(window),
                lv[IRRELEVANT_FEEDBACK],
                cfg.feedback_min_ratings,
                cfg.feedback_window_s,
            ),
            audit_store_size(size, lv["store_size"]),
        ]

    async def _act(
        self, findings: list[Finding], now: datetime, trigger: str
    ) -> tuple[list[Observation], list[Suppression], bool]:
        actions: dict[str, str] = {}
        details: dict[str, dict[str, Any]] = {f.kind: dict(f.detail) for f in findings}
        suppressions: list[Suppression] = []
        by_kind = {f.kind: f for f in findings}
        if self._cfg.reembed and by_kind[UNEMBEDDED].severity != "ok" and self._reembed:
            queued = await self._reembed()
            actions[UNEMBEDDED] = f"re-embed: queued {queued}"
            self.actions["reembed"] += 1
        suppressions, listed = await self._plan_suppressions(now)
        if listed:
            details[IRRELEVANT_FEEDBACK]["suppressed"] = listed
            actions[IRRELEVANT_FEEDBACK] = f"suppressed {len(listed)}"
        asked = False
        wanting = wants_consolidation(findings)
        if wanting and self._cfg.request_consolidation and self._request is not None:
            note = await self._ask_consolidation(now, trigger)
            asked = note.startswith("requested")
            for kind in wanting:
                actions[kind] = note
        observations = [
            Observation(now, f.kind, f.severity, f.value, f.threshold, details[f.kind],
                        actions.get(f.kind, ""))
            for f in findings
        ]  # fmt: skip
        return observations, suppressions, asked

    async def _plan_suppressions(
        self, now: datetime
    ) -> tuple[list[Suppression], list[dict[str, Any]]]:
        p = self._suppress
        if p.after <= 0 or p.per_cycle <= 0:
            return [], []
        window = now - timedelta(seconds=self._cfg.feedback_window_s)
        rated = await self._store.rated(window, p.after, p.per_cycle * 4)
        if not rated:
            return [], []
        recently = await self._store.suppressed_since(window)
        plan = plan_suppressions(rated, recently, p)
        changes = [Suppression(r.seq, r.utility, new) for r, new in plan]
        listed = [
            {"seq": r.seq, "id": r.id, "irrelevant": r.irrelevant, "utility": [r.utility, new]}
            for r, new in plan
        ]
        return changes, listed

    async def _ask_consolidation(self, now: datetime, trigger: str) -> str:
        last = await self._store.consolidation_asked()
        cooldown = self._cfg.consolidation_cooldown_s
        if last is not None and (now - last).total_seconds() < cooldown:
            return "consolidation asked recently"
        assert self._request is not None
        try:
            self._request("consolidation", f"metacognition:{trigger}")
        except AlreadyRunning:
            return "requested consolidation (already running)"
        except Exception as exc:  # noqa: BLE001 - a missing agent must not fail the audit
            log.warning("asking for a consolidation failed: %s", exc)
            return f"consolidation request failed: {type(exc).__name__}"
        self.actions["consolidation_requested"] += 1
        return "requested consolidation"

    def _announce(self, o: Observation) -> None:
        self._publish(
            MetaObservation(
                kind=o.kind,
                detail=o.detail,
                severity=o.severity,
                value=o.value,
                threshold=o.threshold,
                action=o.action,
            )
        )

    # ---- the recall self-test ---------------------------------------------------------------
    async def run_self_test(self, trigger: str = "orchestrator") -> dict[str, Any]:
        """The self-test alone (the orchestrator's schedule): one row, one event."""
        now = self._clock()
        test, cursor = await self._self_test()
        observation = Observation(
            now, test.kind, test.severity, test.value, test.threshold,
            {**test.detail, "trigger": trigger},
        )  # fmt: skip
        await self._store.record([observation], sample_cursor=cursor, keep=self._cfg.keep_per_kind)
        self._announce(observation)
        self._remember_self_test(test, now)
        assert self.last_self_test is not None
        return self.last_self_test

    async def _self_test(self) -> tuple[Finding, int | None]:
        cfg = self._cfg
        level = self._levels["recall_self_test"]
        if self._recall is None or (cfg.self_test_patterns <= 0 and cfg.self_test_memories <= 0):
            return audit_self_test([], cfg.self_test_k, level), None
        async with self._self_test_lock:
            probes, cursor = await self._probes()
            results: list[ProbeResult] = []
            for probe in probes:
                found = await self._recall(probe.question, cfg.self_test_k)
                results.append(score_probe(probe, found[: cfg.self_test_k]))
        return audit_self_test(results, cfg.self_test_k, level), cursor

    async def _probes(self) -> tuple[list[Probe], int | None]:
        cfg = self._cfg
        probes: list[Probe] = []
        for pattern in await self._store.sample_patterns(cfg.self_test_patterns):
            question = pattern_question(pattern.title, pattern.concepts)
            if question:
                probes.append(Probe(f"pattern:{pattern.id}", question, pattern.evidence))
        sampled = await self._store.sample_memories(cfg.self_test_memories)
        llm_left = cfg.self_test_llm_questions if self._completer.available else 0
        for memory in sampled:
            question = None
            by = "heuristic"
            if llm_left > 0:
                llm_left -= 1
                answer = await self._completer.complete_json(question_request(memory.content))
                question = accept_question(answer, memory.content)
                by = "llm" if question else by
            question = question or memory_question(memory.summary, memory.concepts)
            if question:
                probes.append(Probe(f"memory:{memory.id}", question, frozenset({memory.seq}), by))
        return probes, (sampled[-1].seq if sampled else None)

    def _remember_self_test(self, test: Finding, now: datetime) -> None:
        self.last_self_test = {
            "at": now.isoformat(),
            "hit_rate": test.value,
            "probes": int(test.detail.get("probes", 0)),
            "severity": test.severity,
        }

    def health(self) -> dict[str, Any]:
        llm = self._cfg.self_test_llm_questions > 0
        return {
            "mode": self._completer.mode if llm else "heuristic",
            "cycles": self.cycles,
            "actions": dict(self.actions),
            "last": self.last,
            "last_self_test": self.last_self_test,
        }
