"""The application layer: the one implementation of remember, recall, feedback, get and
forget. REST, the CLI (through REST) and later MCP and the proxy all come through here."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from mnemonic.config import Config
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.passages import embed_with_passages, row_models
from mnemonic.encoding.text import content_hash
from mnemonic.errors import InvalidInputError, NotFoundError, StorageUnavailable
from mnemonic.events.types import (
    Context,
    Event,
    FeedbackReceived,
    MemoryAmended,
    MemoryEncoded,
    MemoryEncodingFailed,
    MemoryReinforced,
    MemoryStateChanged,
    QueryExecuted,
    RawMemoryCreated,
)
from mnemonic.llm.embedding import EmbeddingProvider
from mnemonic.project_names import clean_project
from mnemonic.recall.pipeline import Recaller, RecallOutcome
from mnemonic.recall.ranking import Scored
from mnemonic.redact import redact_json
from mnemonic.store.base import (
    Accepted,
    AssociationStore,
    FeedbackStore,
    Filters,
    IngestStore,
    MemoryStore,
    QueryRecord,
    RawMemoryStore,
)
from mnemonic.store.browse import SQLiteBrowser
from mnemonic.store.models import (
    Encoded,
    Memory,
    MemoryState,
    MemoryType,
    NewRaw,
    Quality,
    RawMemory,
    RawStatus,
    Source,
)
from mnemonic.timeutil import new_id

log = logging.getLogger(__name__)

Redactor = Callable[[str], str]
Publish = Callable[[Event], None]
_INLINE_BATCH = 16
# encoding costs ~1.8 ms per KB (181 ms for a 100 KB watched file): longer text goes to a thread
_INLINE_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class RememberInput:
    content: str
    source: Source = Source.API
    type: MemoryType | None = None
    project: str = ""
    timestamp: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # the event that caused this write (a watcher event), so the memory can be traced to it
    cause: Context | None = None


@dataclass(frozen=True, slots=True)
class Remembered:
    raw_id: str
    memory_id: str | None
    status: RawStatus


@dataclass(frozen=True, slots=True)
class RecallRequest:
    query: str
    limit: int = 10
    filters: Filters = field(default_factory=Filters)
    min_score: float | None = None  # None = recall.min_score
    asked_at: datetime | None = None  # time phrases count back from here (None: as_of, now)


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    query_id: str
    results: list[Scored]
    took_ms: float
    evidence: float = 0.0  # the query's evidence in [0, 1] (recall/evidence.py)


class MemoryService:
    def __init__(
        self,
        cfg: Config,
        ingest: IngestStore,
        raws: RawMemoryStore,
        memories: MemoryStore,
        associations: AssociationStore,
        feedback: FeedbackStore,
        recaller: Recaller,
        browser: SQLiteBrowser,
        embedder: EmbeddingProvider,
        publish: Publish,
        redact: Redactor,
        clock: Callable[[], datetime],
        canonical_project: Callable[[str], str] | None = None,
    ) -> None:
        self._cfg = cfg
        self._ingest = ingest
        self._raws = raws
        self._memories = memories
        self._associations = associations
        self._feedback = feedback
        self._recaller = recaller
        self._browser = browser
        self._embedder = embedder
        # what an amendment's vector rows record (the passages' recipe comes from cfg)
        self._models = row_models(
            embedder.name, cfg.encoding.passage_lead_words, cfg.encoding.passage_cap
        )
        self._publish = publish
        self._redact = redact
        self._clock = clock
        # configured project aliases (``perception.projects``): "billing" names the project
        # whose alias it is, in writes and in recall filters alike
        self._canonical = canonical_project or _same_name
        self._waiters: dict[str, asyncio.Future[Remembered]] = {}
        self.recall_observers: list[Callable[[float], None]] = []
        self.stage_observers: list[Callable[[Mapping[str, float]], None]] = []
        # query id -> the write that records it; recall answers without waiting for it
        self._recording: dict[str, asyncio.Task[None]] = {}

    # ---- writes -------------------------------------------------------------------------
    OUTCOME_EVENTS = (MemoryEncoded, MemoryReinforced, MemoryEncodingFailed)

    def on_outcome(self, event: Event) -> None:
        """Subscribed to the encoder's outcome events; wakes a caller waiting on that raw
        memory (a failure that will be retried keeps it waiting)."""
        if isinstance(event, MemoryEncodingFailed) and event.will_retry:
            return
        if not isinstance(event, self.OUTCOME_EVENTS):
            return
        future = self._waiters.pop(event.raw_id, None)
        if future is None or future.done():
            return
        if isinstance(event, MemoryEncoded):
            future.set_result(Remembered(event.raw_id, event.memory_id, RawStatus.ENCODED))
        elif isinstance(event, MemoryReinforced):
            future.set_result(Remembered(event.raw_id, event.memory_id, RawStatus.REINFORCED))
        else:
            future.set_result(Remembered(event.raw_id, event.memory_id, RawStatus.FAILED))

    async def remember(self, item: RememberInput, *, wait: bool = False) -> Remembered:
        return (await self.remember_batch([item], wait=wait))[0]

    async def remember_batch(
        self, items: Sequence[RememberInput], *, wait: bool = False
    ) -> list[Remembered]:
        """Redact, encode heuristically, store (searchable by full text on return), then
        hand the new memories to the encoder for vectors and links."""
        if len(items) > _INLINE_BATCH or sum(len(i.content) for i in items) > _INLINE_CHARS:
            # ~0.3 ms of pure Python per item: a big batch would stall every other request
            prepared = await asyncio.to_thread(lambda: [self._prepare(i) for i in items])
        else:
            prepared = [self._prepare(item) for item in items]
        step = self._cfg.encoding.reinforce_step
        accepted = await self._ingest.accept(prepared, step)
        loop = asyncio.get_running_loop()
        futures: dict[str, asyncio.Future[Remembered]] = {}
        if wait:
            futures = {
                a.raw_id: loop.create_future() for a in accepted if a.status is RawStatus.ACCEPTED
            }
            self._waiters.update(futures)
        for a, item, (raw, _, _) in zip(accepted, items, prepared, strict=True):
            self._announce(a, item, raw)
        if futures:
            await self._wait(futures)
        return [self._outcome(a, futures) for a in accepted]

    def _announce(self, a: Accepted, item: RememberInput, raw: NewRaw) -> None:
        context = item.cause.child() if item.cause is not None else Context()
        self._publish(
            RawMemoryCreated(
                raw_id=a.raw_id,
                memory_id=a.memory_id,
                source=raw.source.value,
                project=raw.project or None,
                content=raw.content,
                context=context,
            )
        )
        if a.status is RawStatus.REINFORCED:
            self._publish(
                MemoryReinforced(
                    raw_id=a.raw_id,
                    memory_id=a.memory_id,
                    project=raw.project or None,
                    context=context.child(),
                )
            )

    def _prepare(self, item: RememberInput) -> tuple[NewRaw, Encoded, str]:
        content = self._redact(item.content.strip())
        if not content:
            raise InvalidInputError("content", "must contain non-whitespace text")
        raw = NewRaw(
            content=content,
            source=item.source,
            project=self._canonical(clean_project(item.project, self._redact)),
            timestamp=item.timestamp or self._clock(),
            metadata=redact_json(item.metadata, self._redact),
            type=item.type,
        )
        enc = encode(
            content,
            explicit_type=item.type,
            summary_max_chars=self._cfg.encoding.summary_max_chars,
            max_concepts=self._cfg.encoding.max_concepts,
            salience_table=_salience_table(self._cfg.encoding.salience),
        )
        return raw, enc, content_hash(content)

    async def _wait(self, futures: dict[str, asyncio.Future[Remembered]]) -> None:
        try:
            await asyncio.wait_for(
                asyncio.gather(*futures.values()), self._cfg.encoding.wait_timeout_s
            )
        except TimeoutError:
            for raw_id in futures:
                self._waiters.pop(raw_id, None)

    @staticmethod
    def _outcome(a: Accepted, futures: dict[str, asyncio.Future[Remembered]]) -> Remembered:
        future = futures.get(a.raw_id)
        if future is not None and future.done() and not future.cancelled():
            return future.result()
        return Remembered(a.raw_id, a.memory_id, a.status)

    # ---- reads --------------------------------------------------------------------------
    async def get(self, memory_id: str) -> Memory:
        memory = await self._memories.get(memory_id)
        if memory is None:
            raise NotFoundError("memory", memory_id)
        return memory

    async def get_raw(self, raw_id: str) -> RawMemory:
        raw = await self._raws.get_raw(raw_id)
        if raw is None:
            raise NotFoundError("raw memory", raw_id)
        return raw

    async def forget(self, memory_id: str) -> Memory:
        """Archive: hidden from default recall, never deleted."""
        before = await self.get(memory_id)
        return await self._set_state(before, MemoryState.ARCHIVED, "forgotten")

    async def unarchive(self, memory_id: str) -> Memory:
        """Archived -> active, the way back from ``forget``. Any other state is answered
        unchanged (idempotent: calling it twice, or on a memory that was never archived, is
        not an error); a merged memory stays merged, its gist holds its text."""
        memory = await self.get(memory_id)
        if memory.state is not MemoryState.ARCHIVED:
            return memory
        return await self._set_state(memory, MemoryState.ACTIVE, "unarchived")

    async def _set_state(self, before: Memory, state: MemoryState, reason: str) -> Memory:
        """Store the state and say so (the recall index follows through the change feed)."""
        memory = await self._memories.set_state(before.id, state)
        if memory is None:  # purged in between
            raise NotFoundError("memory", before.id)
        if before.state is not memory.state:
            self._publish(
                MemoryStateChanged(
                    memory_id=memory.id,
                    project=memory.project or None,
                    old_state=before.state.value,
                    new_state=memory.state.value,
                    reason=reason,
                )
            )
        return memory

    async def amend(self, memory_id: str, content: str, reason: str | None) -> Memory:
        """Replace a memory's content: re-encoded and re-embedded, links kept, the old text
        recorded in ``memory_amendments``."""
        text = await asyncio.to_thread(self._redact, content.strip())
        if not text:
            raise InvalidInputError("content", "must contain non-whitespace text")
        current = await self.get(memory_id)
        enc = await asyncio.to_thread(
            encode,  # in a thread: ~1.8 ms per KB, a watched file can be 100 KB
            text,
            explicit_type=current.type,
            summary_max_chars=self._cfg.encoding.summary_max_chars,
            max_concepts=self._cfg.encoding.max_concepts,
            salience_table=_salience_table(self._cfg.encoding.salience),
        )
        encoding = self._cfg.encoding
        vectors, passages = await asyncio.to_thread(
            embed_with_passages,
            self._embedder.embed,
            [text],
            encoding.passage_lead_words,
            encoding.passage_cap,
        )
        clean_reason = self._redact(reason) if reason else None
        amended = await self._browser.amend(
            memory_id,
            text,
            content_hash(text),
            enc,
            clean_reason,
            (vectors[0], self._models, passages[0]),
        )
        if amended is None:
            raise NotFoundError("memory", memory_id)
        memory = amended.memory
        self._publish(
            MemoryAmended(
                memory_id=memory.id,
                project=memory.project or None,
                reason=clean_reason,
                content=memory.content,
            )
        )
        return memory

    async def recall(self, request: RecallRequest) -> RecallAnswer:
        started = time.perf_counter()
        filters = request.filters
        if filters.project:
            filters = replace(filters, project=self._canonical(filters.project))
        defaults = filters.states is None
        if filters.states is None:
            default = tuple(MemoryState(s) for s in self._cfg.recall.default_states)
            filters = replace(filters, states=default)
        if filters.as_of is not None:
            until = filters.as_of if filters.until is None else min(filters.until, filters.as_of)
            filters = replace(filters, until=until)
        outcome = await self._recaller.recall(
            request.query, filters, request.limit, request.min_score, asked_at=request.asked_at
        )
        if defaults and self._answered_weakly(outcome.results, request.limit, filters):
            outcome = await self._with_archived(request, filters, outcome)
        took_ms = (time.perf_counter() - started) * 1000
        # The query runs as typed (stored text is redacted, so a secret in it matches
        # nothing), but it is recorded and published only redacted.
        shown_query = self._redact(request.query)
        record = QueryRecord(
            id=new_id(),
            query=shown_query,
            result_ids=tuple(s.memory.id for s in outcome.results),
            edges=tuple(outcome.edges),
        )
        # Recording waits for the writer, which an ingest batch may hold: the answer does not.
        task = asyncio.create_task(
            self._record_query(record, filters, took_ms, [s.memory.seq for s in outcome.results]),
            name=f"mnemonic:record-query:{record.id}",
        )
        self._recording[record.id] = task
        task.add_done_callback(lambda _: self._recording.pop(record.id, None))
        for observe in self.recall_observers:
            observe(took_ms / 1000)
        for observe_stages in self.stage_observers:
            observe_stages(outcome.stages)
        self._publish(
            QueryExecuted(
                query_id=record.id,
                query=shown_query,
                project=filters.project,
                results=len(outcome.results),
                took_ms=round(took_ms, 3),
            )
        )
        return RecallAnswer(record.id, outcome.results, took_ms, outcome.evidence)

    def _answered_weakly(self, results: list[Scored], limit: int, filters: Filters) -> bool:
        cfg = self._cfg.recall
        if not cfg.archived_fallback or MemoryState.ARCHIVED in (filters.states or ()):
            return False
        return len(results) < limit or results[0].score < cfg.archived_fallback_below

    async def _with_archived(
        self, request: RecallRequest, filters: Filters, outcome: RecallOutcome
    ) -> RecallOutcome:
        """Archived memories join a weak answer, each at ``recall.archived_factor`` of its
        score, so consolidation never makes a stored fact unfindable by a specific query;
        an archived memory outranks a live one only when it answers far better."""
        archived = await self._recaller.recall(
            request.query,
            replace(filters, states=(MemoryState.ARCHIVED,)),
            request.limit,
            request.min_score,
            asked_at=request.asked_at,
        )
        found = [s for s in archived.results if not _withdrawn(s.memory)]
        if not found:
            return outcome
        factor = self._cfg.recall.archived_factor
        demoted = [
            replace(
                s,
                score=s.score * factor,
                contributions={
                    **s.contributions,
                    "archived": s.score * factor - s.score,
                },
                fallback=True,
            )
            for s in found
        ]
        merged = _interleave(outcome.results, demoted)[: request.limit]
        stages = dict(outcome.stages)
        for stage, seconds in archived.stages.items():
            stages[stage] = stages.get(stage, 0.0) + seconds
        return replace(
            outcome,
            results=merged,
            edges=[*outcome.edges, *archived.edges],
            candidates=outcome.candidates + archived.candidates,
            stages=stages,
        )

    async def _record_query(
        self, record: QueryRecord, filters: Filters, took_ms: float, seqs: list[int]
    ) -> None:
        try:
            await self._feedback.record_query(record, _filters_json(filters), took_ms, seqs)
        except StorageUnavailable:
            # recall still answered; feedback on this query will say it is unknown
            log.warning("query %s not recorded: storage unavailable", record.id)

    async def drain(self) -> None:
        """Wait for background query records (called by the daemon before it stops)."""
        if self._recording:
            await asyncio.gather(*list(self._recording.values()), return_exceptions=True)

    async def feedback(
        self, query_id: str, quality: Quality, memory_ids: Sequence[str] | None = None
    ) -> int:
        """Move the rated memories' utility (bounded) and the links that led to them."""
        pending = self._recording.get(query_id)
        if pending is not None:
            await pending
        record = await self._feedback.get_query(query_id)
        if record is None:
            raise NotFoundError("query", query_id)
        rated = list(record.result_ids) if memory_ids is None else list(memory_ids)
        unknown = [m for m in rated if m not in record.result_ids]
        if unknown:
            raise InvalidInputError("memory_ids", f"not results of this query: {unknown[:5]}")
        fb = self._cfg.feedback
        delta = {
            Quality.HELPFUL: fb.helpful_step,
            Quality.PARTIAL: fb.partial_step,
            Quality.IRRELEVANT: -fb.irrelevant_step,
        }[quality]
        changed = await self._feedback.record_feedback(
            query_id, quality, rated, delta, (fb.utility_min, fb.utility_max)
        )
        if changed is None:  # purged while this request was on its way
            raise NotFoundError("query", query_id)
        rated_seqs = set((await self._memories.seqs_of(rated)).values())
        edges = [e for e in record.edges if e[1] in rated_seqs]
        link_delta = fb.link_step if quality is not Quality.IRRELEVANT else -fb.link_step
        await self._associations.adjust_strength(edges, link_delta)
        self._publish(
            FeedbackReceived(
                query_id=query_id, quality=quality.value, memory_ids=tuple(rated), updated=changed
            )
        )
        return changed

    async def counts(self) -> dict[str, int]:
        return await self._memories.counts()


def _withdrawn(memory: Memory) -> bool:
    """Archived by the user's hand (forget) or an undone merge's gist: the archived
    fallback never brings these back (their facts live elsewhere or were unwanted)."""
    return "forgotten_at" in memory.metadata or "unmerged_at" in memory.metadata


def _interleave(live: list[Scored], archived: list[Scored]) -> list[Scored]:
    """Both lists merged by score at each step, each keeping its own order: the live
    results' diversified order survives, archived ones slot in where they outscore."""
    out: list[Scored] = []
    i = j = 0
    while i < len(live) or j < len(archived):
        if j == len(archived) or (i < len(live) and live[i].score >= archived[j].score):
            out.append(live[i])
            i += 1
        else:
            out.append(archived[j])
            j += 1
    return out


def _same_name(name: str) -> str:
    return name


def _salience_table(raw: dict[str, float]) -> dict[MemoryType, float]:
    return {MemoryType(k): v for k, v in raw.items() if k in MemoryType._value2member_map_}


def _filters_json(filters: Filters) -> dict[str, object]:
    return {
        "project": filters.project,
        "sources": [str(s) for s in filters.sources] if filters.sources else None,
        "types": [str(t) for t in filters.types] if filters.types else None,
        "states": [str(s) for s in filters.states] if filters.states else None,
        "since": filters.since.isoformat() if filters.since else None,
        "until": filters.until.isoformat() if filters.until else None,
        "min_salience": filters.min_salience,
        "as_of": filters.as_of.isoformat() if filters.as_of else None,
    }
