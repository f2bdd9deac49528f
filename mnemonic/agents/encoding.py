"""The encoding agent: the background half of encoding, behind the bus.

``RawMemoryCreated`` -> this agent -> ``MemoryEncoded`` / ``MemoryReinforced`` (or
``MemoryEncodingFailed``). The acknowledgement path has already stored the memory with its
heuristic encoding and made it searchable by full text; this agent adds the vector and the
associations. It batches (up to ``batch_max`` texts or ``batch_wait_ms``) so sustained
ingest runs near the embedder's own speed, retries a failing batch with backoff, and
sweeps the store for memories still without a vector (after a restart, or when the bus
dropped an event), so nothing it does can lose the raw observation.

A bad memory cannot hold the rest hostage:

* each attempt is counted in the store *before* it starts, so one that kills the process
  (or hangs until someone does) counts after the restart too;
* an attempt has a deadline (``batch_timeout_s``) for its embedding and link decisions;
* a memory that has been tried before is tried alone, so a failing or fatal one fails by
  itself and the other memories of its first batch are encoded on their next attempt;
* after ``max_attempts`` the memory is parked: raw status ``failed`` with the reason.

The text decisions (near-duplicate checks, contradiction and link typing over neighbour
texts of up to 100,000 characters) run in a worker thread; the store and the in-memory
index are only touched from the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from mnemonic.config import EncodingConfig
from mnemonic.encoding.linking import (
    Neighbour,
    Supersession,
    choose_links,
    may_merge,
    supersessions,
)
from mnemonic.encoding.passages import embed_with_passages, row_models
from mnemonic.events.types import (
    AssociationCreated,
    Context,
    Event,
    MemoryEncoded,
    MemoryEncodingFailed,
    MemoryReinforced,
    RawMemoryCreated,
)
from mnemonic.index.recall_index import RecallIndex
from mnemonic.llm.embedding import EmbeddingProvider, Vectors
from mnemonic.runtime.clock import Clock
from mnemonic.store.base import (
    EmbeddedOutcome,
    Filters,
    IngestStore,
    MemoryStore,
    NewLink,
    PendingMemory,
)
from mnemonic.store.models import Memory, MemoryState, Relation, Source
from mnemonic.timeutil import ensure_utc

log = logging.getLogger(__name__)

# Insights (the dreamer's) are drawn from their sources (``insight_sources``) and take no
# part in likeness, temporal or supersession links, nor merge, either way: linked to
# their sources by likeness, an LLM-worded insight (close to their words) was a hub that
# spread a query reaching one source to the other nine, round the caps on the dreamer's
# own ``related`` links (LoCoMo multi-hop R@10 -0.0047 with the scripted LLM,
# BENCHMARKS.md session 18). Recall still finds an insight by its own words and vector.
DERIVED = Source.DREAMING

SWEEP_LIMIT = 10_000

Subscribe = Callable[..., Callable[[], None]]


class AttemptTimedOut(Exception):
    """An encoding attempt passed ``batch_timeout_s``."""


class EncodingAgent:
    """Owned by the composition root and run under the supervisor."""

    name = "encoding"

    def __init__(
        self,
        subscribe: Subscribe,
        publish: Callable[[Event], None],
        ingest: IngestStore,
        memories: MemoryStore,
        index: RecallIndex,
        embedder: EmbeddingProvider,
        cfg: EncodingConfig,
        clock: Clock,
    ) -> None:
        self._subscribe = subscribe
        self._publish = publish
        self._ingest = ingest
        self._memories = memories
        self._index = index
        self._embedder = embedder
        self._cfg = cfg
        # what the vector rows it writes record (the passages' recipe comes from cfg)
        self._models = row_models(embedder.name, cfg.passage_lead_words, cfg.passage_cap)
        self._clock = clock
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        # memory ids queued, in flight or waiting for a retry: the sweep skips them
        self._known: set[str] = set()
        self._causes: dict[str, Context] = {}
        self._idle = asyncio.Event()  # set once the first sweep found nothing left to do
        self._in_flight = 0
        self.encoded = 0
        self.merged = 0
        self.failures = 0
        self.parked = 0
        self.last_error: str | None = None
        self.supersession = True  # detect supersessions (``supersession.enabled``)
        # borderline supersessions an LLM could settle (the daemon hands them to the
        # supersession review agent; the encoder never waits on an LLM)
        self.on_review: Callable[[PendingMemory, list[tuple[Supersession, str]]], None] | None = (
            None
        )

    @property
    def backlog(self) -> int:
        return self._queue.qsize() + self._in_flight

    def submit(self, memory_ids: Sequence[str]) -> int:
        added = 0
        for memory_id in memory_ids:
            if memory_id not in self._known:
                self._known.add(memory_id)
                self._queue.put_nowait(memory_id)
                added += 1
        if added:
            self._idle.clear()
        return added

    def _on_created(self, event: Event) -> None:
        if isinstance(event, RawMemoryCreated) and event.memory_id is not None:
            self._causes[event.memory_id] = event.context
            self.submit([event.memory_id])

    async def sweep(self) -> int:
        """Queue memories stored without a vector that nobody is working on: left over
        from before a restart, or announced by an event the bus had to drop."""
        added = self.submit(await self._ingest.pending_ids(limit=SWEEP_LIMIT))
        if added:
            log.info("queued %d memories still without a vector", added)
        return added

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def run(self) -> None:
        unsubscribe = self._subscribe(
            self._on_created,
            [RawMemoryCreated],
            name="encoding",
            queue_size=self._cfg.queue_size,
        )
        try:
            await self.sweep()
            if self._queue.empty() and not self._in_flight:
                self._idle.set()
            while True:
                ids = await self._next_batch()
                self._in_flight = len(ids)
                try:
                    await self._encode(ids)
                finally:
                    self._in_flight = 0
                    if self._queue.empty():
                        self._idle.set()
        finally:
            unsubscribe()

    async def _encode(self, ids: list[str]) -> None:
        batch = await self._ingest.pending_for(ids)
        for gone in set(ids) - {m.id for m in batch}:  # already encoded, or failed for good
            self._forget(gone)
        if not batch:
            return
        # A memory tried before is tried alone: it may be what failed (or killed the
        # process), and its batch neighbours should not share its fate.
        fresh = [m for m in batch if m.attempts == 0]
        groups = ([fresh] if fresh else []) + [[m] for m in batch if m.attempts > 0]
        retry: list[PendingMemory] = []
        for group in groups:
            retry += await self._attempt(group)
        if retry:
            worst = max(m.attempts + 1 for m in retry)
            await self._clock.sleep(min(30.0, self._cfg.retry_base_s * 2 ** (worst - 1)))
            for item in retry:
                self._queue.put_nowait(item.id)

    async def _attempt(self, group: list[PendingMemory]) -> list[PendingMemory]:
        """One counted attempt at ``group``; returns the memories to try again."""
        max_attempts = self._cfg.max_attempts
        parked = set(await self._ingest.begin_attempt([m.raw_id for m in group], max_attempts))
        live = [m for m in group if m.raw_id not in parked]
        for item in group:
            if item.raw_id in parked:
                reason = f"gave up after {item.attempts} attempts; the last did not finish"
                self._report(item, reason, item.attempts, will_retry=False)
        if not live:
            return []
        try:
            await self._process(live)
        except Exception as exc:  # noqa: BLE001 - a failed attempt is retried, never lost
            return await self._handle_failure(live, exc)
        for item in live:
            self._forget(item.id)
        return []

    def _forget(self, memory_id: str) -> None:
        self._known.discard(memory_id)
        self._causes.pop(memory_id, None)

    async def _next_batch(self) -> list[str]:
        batch = [await self._queue.get()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._cfg.batch_wait_ms / 1000
        while len(batch) < self._cfg.batch_max:
            try:
                batch.append(self._queue.get_nowait())
                continue
            except asyncio.QueueEmpty:
                pass
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), remaining))
            except TimeoutError:
                break
        return batch

    async def _handle_failure(
        self, batch: list[PendingMemory], exc: Exception
    ) -> list[PendingMemory]:
        self.failures += 1
        error = str(exc) if isinstance(exc, AttemptTimedOut) else f"{type(exc).__name__}: {exc}"
        self.last_error = error
        log.warning("encoding batch of %d failed: %s", len(batch), error)
        await self._ingest.mark_failed([m.raw_id for m in batch], error, self._cfg.max_attempts)
        retry: list[PendingMemory] = []
        for item in batch:
            attempts = item.attempts + 1  # the one begun for this batch
            will_retry = attempts < self._cfg.max_attempts
            self._report(item, error, attempts, will_retry=will_retry)
            if will_retry:
                retry.append(item)
        return retry

    def _report(self, item: PendingMemory, error: str, attempts: int, *, will_retry: bool) -> None:
        self._publish(
            MemoryEncodingFailed(
                raw_id=item.raw_id,
                memory_id=item.id,
                error=error,
                attempts=attempts,
                will_retry=will_retry,
                context=self._context_for(item.id),
            )
        )
        if not will_retry:
            self.parked += 1
            log.warning("encoding of raw memory %s parked as failed: %s", item.raw_id, error)
            self._forget(item.id)

    def _context_for(self, memory_id: str) -> Context:
        cause = self._causes.get(memory_id)
        return cause.child() if cause is not None else Context()

    async def _process(self, batch: list[PendingMemory]) -> None:
        texts = [m.content for m in batch]
        # A building index is waited for before the attempt's deadline starts, then the
        # attempt goes on without twins and links: inside it the wait took the whole
        # deadline, so during a long build (24 min at 1M memories) every attempt timed
        # out and its memories were parked as failed.
        await self._index.wait_ready(self._cfg.batch_timeout_s)
        deadline = asyncio.timeout(self._cfg.batch_timeout_s)
        try:
            async with deadline:
                vectors, passages = await asyncio.to_thread(
                    embed_with_passages,
                    self._embedder.embed,
                    texts,
                    self._cfg.passage_lead_words,
                    self._cfg.passage_cap,
                )
                outcomes = await self._decide(batch, vectors)
                outcomes = [
                    replace(o, passages=mine) for o, mine in zip(outcomes, passages, strict=True)
                ]
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise AttemptTimedOut(f"timed out after {self._cfg.batch_timeout_s:g} s") from exc
        # outside the deadline: a write abandoned half-way could finish unseen. The index
        # learns of the new vectors and links from the change feed once this commits.
        await self._ingest.complete(outcomes, self._models, self._cfg.reinforce_step)
        await self._announce(outcomes)

    async def _announce(self, outcomes: list[EmbeddedOutcome]) -> None:
        targets = {o.merged_into_seq for o in outcomes if o.merged_into_seq is not None}
        link_seqs = {link.target_seq for o in outcomes for link in o.links}
        known = (
            await self._memories.get_many(sorted(targets | link_seqs))
            if targets or link_seqs
            else {}
        )
        for outcome in outcomes:
            mem = outcome.memory
            context = self._context_for(mem.id)
            if outcome.merged_into_seq is not None:
                self.merged += 1
                target = known.get(outcome.merged_into_seq)
                self._publish(
                    MemoryReinforced(
                        raw_id=mem.raw_id,
                        memory_id=target.id if target is not None else mem.id,
                        project=mem.project or None,
                        context=context,
                    )
                )
                continue
            self.encoded += 1
            self._publish(
                MemoryEncoded(
                    raw_id=mem.raw_id,
                    memory_id=mem.id,
                    project=mem.project or None,
                    memory_type=mem.type.value,
                    links=len(outcome.links),
                    context=context,
                )
            )
            for link in outcome.links:
                other = known.get(link.target_seq)
                if other is not None:
                    self._publish(
                        AssociationCreated(
                            source_id=mem.id,
                            target_id=other.id,
                            relation=link.relation.value,
                            strength=round(link.strength, 4),
                            project=mem.project or None,
                            context=context.child(),
                        )
                    )

    def health(self) -> dict[str, Any]:
        return {
            "backlog": self.backlog,
            "encoded": self.encoded,
            "merged": self.merged,
            "failed_batches": self.failures,
            "parked": self.parked,
            "last_error": self.last_error,
        }

    async def _decide(self, batch: list[PendingMemory], vectors: Vectors) -> list[EmbeddedOutcome]:
        """Near-duplicate or links for each item, in order, so later items see earlier ones.

        The search against stored memories is one matrix product for the whole batch, in a
        worker thread (it was one full scan per memory on the event loop, 24-29 ms each at
        100k memories); the batch's own items are compared with one small product too.
        """
        k = self._cfg.link_candidates + 1
        active = (MemoryState.ACTIVE, MemoryState.FADING)
        filters = [Filters(project=item.project, states=active) for item in batch]
        stored = await asyncio.to_thread(self._index.nearest_many, vectors, k, filters)
        within = vectors @ vectors.T
        outcomes: list[EmbeddedOutcome] = []
        previous: dict[str, PendingMemory] = {}
        kept: list[int] = []  # batch positions later items may link to or merge into
        for i, (item, vector) in enumerate(zip(batch, vectors, strict=True)):
            if item.source == DERIVED:
                outcomes.append(EmbeddedOutcome(item, vector, links=()))
                continue
            earlier = [
                (batch[j].seq, float(within[i, j]))
                for j in kept
                if batch[j].project == item.project
            ]
            hits = sorted(
                [(s, c) for s, c in stored[i] if s != item.seq] + earlier, key=lambda h: -h[1]
            )[:k]
            twin = await self._near_duplicate(item, hits)
            if twin is not None:
                outcomes.append(EmbeddedOutcome(item, vector, merged_into_seq=twin))
                continue
            links = await self._links(item, hits, previous.get(item.project))
            outcomes.append(EmbeddedOutcome(item, vector, links=tuple(links)))
            kept.append(i)
            previous[item.project] = item
        return outcomes

    async def _near_duplicate(
        self, item: PendingMemory, hits: list[tuple[int, float]]
    ) -> int | None:
        close = [s for s, c in hits if c >= self._cfg.near_duplicate_threshold]
        if not close or item.gist:  # a gist merged into a stranger would hide its sources
            return None
        found = await self._memories.get_many(close)
        return await asyncio.to_thread(_first_twin, item, close, found)

    async def _links(
        self,
        item: PendingMemory,
        hits: list[tuple[int, float]],
        previous: PendingMemory | None,
    ) -> list[NewLink]:
        prev_seq = previous.seq if previous is not None else None
        if prev_seq is None:
            prev_seq = await self._memories.previous_in_project(item.project, item.seq)
        wanted = [s for s, _ in hits] + ([prev_seq] if prev_seq is not None else [])
        found = await self._memories.get_many(wanted)
        neighbours = [
            Neighbour(
                s,
                c,
                found[s].content,
                found[s].concepts,
                found[s].timestamp,
                found[s].type.value,
                found[s].source.value,
            )
            for s, c in hits
            if s in found and found[s].source != DERIVED
        ]
        links = await asyncio.to_thread(
            choose_links,
            item.content,
            item.concepts,
            item.timestamp,
            neighbours,
            min_similarity=self._cfg.link_min_similarity,
            max_links=self._cfg.max_links_per_memory,
            temporal_window_s=self._cfg.temporal_window_s,
        )
        if self.supersession:
            decided, review = await asyncio.to_thread(
                supersessions,
                item.content,
                item.type.value,
                item.concepts,
                item.timestamp,
                neighbours,
                item.source.value,
            )
            links += [found_one.link for found_one in decided]
            if review and self.on_review is not None:
                self.on_review(item, [(r, found[r.neighbour.seq].id) for r in review])
        prev = found.get(prev_seq) if prev_seq is not None else None
        if prev is None or self._cfg.sequence_link_strength <= 0:
            return links
        gap = abs((ensure_utc(item.timestamp) - ensure_utc(prev.timestamp)).total_seconds())
        if gap > self._cfg.temporal_window_s:
            return links
        # The observation just before this one in the same project: "what happened next"
        # is often the context a later question needs, whatever the words.
        kept = [link for link in links if link.target_seq != prev.seq]
        strength = max(
            [self._cfg.sequence_link_strength]
            + [link.strength for link in links if link.target_seq == prev.seq]
        )
        return [NewLink(prev.seq, Relation.TEMPORAL, strength), *kept]


def _first_twin(item: PendingMemory, close: list[int], found: dict[int, Memory]) -> int | None:
    """The first of ``close`` that ``item`` may merge into (pure; run in a worker thread)."""
    for seq in close:
        other = found.get(seq)
        if (
            other is not None
            and other.source != DERIVED
            and other.type == item.type
            and other.project == item.project
            and may_merge(item.content, other.content)
        ):
            return seq
    return None
