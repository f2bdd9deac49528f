"""The enrichment agent: LLM-aware encoding, after the fact and within a budget.

Every memory is acknowledged with its heuristic encoding (``encoding/heuristic.py``); no
write ever waits for an LLM. When one is available, each cycle of this agent takes a
bounded batch of heuristically encoded memories (new ones after its watermark, then the
re-encode queue that ``mnemonic reencode`` fills), asks the LLM one structured question
per memory (``encoding/llm_encode.py``), checks the answer is faithful to the source, and
replaces the memory's summary, concepts, type, significance and salience together with
its full-text row. The content and the raw observation never change.

A judgment is dropped, and the heuristic encoding kept, when the LLM gives no answer, an
answer of the wrong shape, or one that names something the note does not contain; each is
counted in ``health``. Without an LLM a cycle does nothing (mode ``heuristic``), and new
memories that arrive during a long outage are left for an explicit re-encode rather than
queued: nothing grows without bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from mnemonic.config import EncodingConfig, EnrichmentConfig
from mnemonic.encoding.classify import initial_salience
from mnemonic.encoding.llm_encode import LlmEncoding, Verdict, build_request, judge
from mnemonic.llm.completion.base import Completer
from mnemonic.store.enrichment import (
    Candidate,
    Enrichment,
    EnrichmentStore,
    Queued,
    QueuedWork,
)
from mnemonic.store.models import MemoryType

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
NO_LLM = "no LLM available: memories keep their heuristic encoding"


class NoLlmConfigured(Exception):
    """A re-encode was asked for, but no LLM is configured to do it."""


class EnrichmentAgent:
    """One bounded cycle at a time, run by the scheduler (see the module docstring)."""

    name = "enrichment"

    def __init__(
        self,
        store: EnrichmentStore,
        completer: Completer,
        cfg: EnrichmentConfig,
        encoding: EncodingConfig,
        clock: Callable[[], datetime],
        *,
        model_name: str = "",
    ) -> None:
        self._store = store
        self._completer = completer
        self._cfg = cfg
        self._encoding = encoding
        self._clock = clock
        self._model = model_name or _model_of(completer)
        self._salience = {
            MemoryType(k): v for k, v in encoding.salience.items() if k in set(MemoryType)
        }
        self._calls: deque[datetime] = deque()  # LLM calls within the last hour
        self.counts = {
            "cycles": 0,
            "enriched": 0,
            "rejected_unfaithful": 0,
            "rejected_malformed": 0,
            "llm_failed": 0,
            "stale": 0,
        }
        self.queue_size: int | None = None
        self.last_summary: dict[str, Any] | None = None

    # ---- state ----------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return "llm" if self._cfg.enabled and self._completer.available else "heuristic"

    @property
    def llm_configured(self) -> bool:
        """An LLM is configured (it may still be unreachable right now)."""
        status = getattr(self._completer, "status", None)
        if callable(status):
            info = status()
            if isinstance(info, dict) and isinstance(info.get("configured"), bool):
                return bool(info["configured"])
        return self._completer.available

    def health(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "enabled": self._cfg.enabled,
            "llm_configured": self.llm_configured,
            "model": self._model or None,
            "calls_last_hour": len(self._calls),
            "max_per_hour": self._cfg.max_per_hour,
            "queue": self.queue_size,
            **self.counts,
        }

    # ---- re-encode ------------------------------------------------------------------------

    async def reencode(self, since: datetime, limit: int) -> Queued:
        """Queue memories encoded heuristically since ``since`` (at most ``limit``); later
        cycles work through them within the budget. Raises :class:`NoLlmConfigured`."""
        if not self.llm_configured:
            raise NoLlmConfigured(
                "no LLM is configured (llm.provider is none): re-encoding needs one"
            )
        queued = await self._store.mark_for_reencode(since, limit)
        self.queue_size = queued.size
        return queued

    # ---- one cycle ------------------------------------------------------------------------

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        self.counts["cycles"] += 1
        summary = await self._cycle()
        summary = {"trigger": trigger, **summary}
        self.last_summary = summary
        return summary

    async def _cycle(self) -> dict[str, Any]:
        now = self._clock()
        if not self._cfg.enabled:
            return {"mode": "heuristic", "enriched": 0, "note": "enrichment.enabled is false"}
        if not self._completer.available:
            self.queue_size = await self._store.queue_size()
            return {"mode": "heuristic", "enriched": 0, "queue": self.queue_size, "note": NO_LLM}
        budget = min(self._cfg.batch_size, self._hour_left(now))
        if budget <= 0:
            self.queue_size = await self._store.queue_size()
            return {
                "mode": "llm",
                "enriched": 0,
                "queue": self.queue_size,
                "note": f"hourly budget used ({self._cfg.max_per_hour} calls)",
            }
        after = await self._store.watermark() or 0
        since = now - timedelta(seconds=self._cfg.catch_up_s)
        new = await self._store.new_work(after, since, budget)
        room = budget - len(new.candidates)
        queued = await self._store.queued_work(room) if room > 0 else None
        work = new.candidates + (queued.candidates if queued else [])
        tally = dict.fromkeys(("enriched", "unfaithful", "malformed", "llm_failed", "stale"), 0)
        done: set[int] = set()
        stopped = False
        for candidate in work:
            outcome = await self._enrich(candidate)
            if outcome is None:  # the LLM became unavailable: leave the rest for later
                stopped = True
                break
            tally[outcome] += 1
            done.add(candidate.seq)
        watermark = _watermark(after, new.candidates, new.scanned_to, done)
        dequeued = _dequeued(queued, done)
        await self._store.settle(watermark, dequeued, now)
        self.queue_size = await self._store.queue_size()
        self._count(tally)
        return {
            "mode": "llm",
            "considered": len(done),
            **tally,
            "queue": self.queue_size,
            "watermark": watermark,
            "note": "the LLM became unavailable; the rest waits" if stopped else "",
        }

    async def _enrich(self, candidate: Candidate) -> str | None:
        """One memory: its outcome, or None when the LLM is gone (not counted as done)."""
        request = build_request(
            candidate.content,
            max_content_chars=self._cfg.max_content_chars,
            max_concepts=self._encoding.max_concepts,
            fixed_type=candidate.type if candidate.fixed_type else None,
        )
        self._calls.append(self._clock())
        answer = await self._completer.complete_json(request)
        if answer is None:
            if not self._completer.available:
                return None
            log.info("enrichment of memory %s: no usable LLM answer", candidate.id)
            return "llm_failed"
        verdict: Verdict = await asyncio.to_thread(
            judge,  # in a thread: the faithfulness check reads the whole note
            candidate.content,
            answer,
            max_concepts=self._encoding.max_concepts,
            summary_max_chars=self._encoding.summary_max_chars,
        )
        if verdict.encoding is None:
            log.info(
                "enrichment of memory %s rejected (%s: %s); heuristic encoding kept",
                candidate.id,
                verdict.reason,
                verdict.detail,
            )
            return verdict.reason
        applied = await self._store.apply(
            self._enrichment(candidate, verdict.encoding), self._clock()
        )
        return "enriched" if applied else "stale"

    def _enrichment(self, candidate: Candidate, llm: LlmEncoding) -> Enrichment:
        # the LLM's salience replaces the heuristic's starting value; whatever changed the
        # salience since (reinforcement, decay) is kept as an offset
        start = initial_salience(candidate.type, self._salience)
        return Enrichment(
            seq=candidate.seq,
            content_hash=candidate.content_hash,
            summary=llm.summary,
            concepts=llm.concepts,
            type=candidate.type if candidate.fixed_type else llm.type,
            significance=llm.significance,
            salience_shift=llm.salience - start,
            metadata={
                "encoded_by": "llm",
                "encoding_model": self._model,
                "encoded_hash": candidate.content_hash,
                "gist": llm.gist,
                "entities": list(llm.entities),
            },
        )

    def _hour_left(self, now: datetime) -> int:
        while self._calls and now - self._calls[0] >= HOUR:
            self._calls.popleft()
        return max(0, self._cfg.max_per_hour - len(self._calls))

    def _count(self, tally: dict[str, int]) -> None:
        self.counts["enriched"] += tally["enriched"]
        self.counts["rejected_unfaithful"] += tally["unfaithful"]
        self.counts["rejected_malformed"] += tally["malformed"]
        self.counts["llm_failed"] += tally["llm_failed"]
        self.counts["stale"] += tally["stale"]


def _watermark(after: int, candidates: list[Candidate], scanned_to: int, done: set[int]) -> int:
    """Where the watermark may move: past everything scanned when every new candidate is
    done, else to just before the first one that is not."""
    for candidate in candidates:
        if candidate.seq not in done:
            return max(after, candidate.seq - 1)
    return max(after, scanned_to)


def _dequeued(queued: QueuedWork | None, done: set[int]) -> list[int]:
    """Queue entries to drop: those done, and those no longer eligible (enriched since,
    archived, merged or purged); a candidate left undone stays queued."""
    if queued is None:
        return []
    pending = {c.seq for c in queued.candidates} - done
    return [seq for seq in queued.examined if seq not in pending]


def _model_of(completer: Completer) -> str:
    status = getattr(completer, "status", None)
    if callable(status):
        info = status()
        if isinstance(info, dict) and isinstance(info.get("model"), str):
            return str(info["model"])
    return ""
