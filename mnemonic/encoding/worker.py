"""The background half of encoding: embed in batches, merge near-duplicates, link.

The acknowledgement path has already stored the memory with its heuristic encoding and
made it searchable by full text; this worker adds the vector and the associations. It
batches (up to ``batch_max`` texts or ``batch_wait_ms``) so sustained ingest runs near the
embedder's own speed, and it retries a failing batch with backoff; nothing it does can
lose the raw observation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mnemonic.config import EncodingConfig
from mnemonic.encoding.linking import Neighbour, choose_links, may_merge
from mnemonic.llm.embedding import EmbeddingProvider, Vectors
from mnemonic.store.base import (
    EmbeddedOutcome,
    Filters,
    IngestStore,
    MemoryStore,
    NewLink,
    PendingMemory,
)
from mnemonic.store.models import MemoryState, RawStatus, Relation
from mnemonic.store.vector_index import IndexEntry, VectorIndex
from mnemonic.timeutil import ensure_utc

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class EncodeResult:
    raw_id: str
    status: RawStatus
    memory_id: str | None
    error: str | None = None


OnResult = Callable[[EncodeResult], None]


class EncodingWorker:
    """Consumes pending memories; owned and started by the composition root."""

    def __init__(
        self,
        ingest: IngestStore,
        memories: MemoryStore,
        index: VectorIndex,
        embedder: EmbeddingProvider,
        cfg: EncodingConfig,
        on_result: OnResult,
    ) -> None:
        self._ingest = ingest
        self._memories = memories
        self._index = index
        self._embedder = embedder
        self._cfg = cfg
        self._on_result = on_result
        self._queue: asyncio.Queue[PendingMemory] = asyncio.Queue()
        self._idle = asyncio.Event()
        self._idle.set()
        self._in_flight = 0
        self.encoded = 0
        self.merged = 0
        self.failures = 0

    @property
    def backlog(self) -> int:
        return self._queue.qsize() + self._in_flight

    def submit(self, items: Sequence[PendingMemory]) -> None:
        for item in items:
            self._queue.put_nowait(item)
        if items:
            self._idle.clear()

    async def recover(self) -> int:
        """Queue memories stored before a crash or restart but never embedded."""
        pending = await self._ingest.pending(limit=1_000_000)
        self.submit(pending)
        return len(pending)

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def run(self) -> None:
        attempts: dict[int, int] = {}
        while True:
            batch = await self._next_batch()
            self._in_flight = len(batch)
            try:
                await self._process(batch)
                for item in batch:
                    attempts.pop(item.seq, None)
            except Exception as exc:  # noqa: BLE001 - a failed batch is retried, never lost
                await self._handle_failure(batch, exc, attempts)
            finally:
                self._in_flight = 0
                if self._queue.empty():
                    self._idle.set()

    async def _next_batch(self) -> list[PendingMemory]:
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
        self, batch: list[PendingMemory], exc: Exception, attempts: dict[int, int]
    ) -> None:
        self.failures += 1
        error = f"{type(exc).__name__}: {exc}"
        log.warning("encoding batch of %d failed: %s", len(batch), error)
        await self._ingest.mark_failed([m.raw_id for m in batch], error)
        retry: list[PendingMemory] = []
        for item in batch:
            attempts[item.seq] = attempts.get(item.seq, 0) + 1
            if attempts[item.seq] >= MAX_ATTEMPTS:
                self._on_result(EncodeResult(item.raw_id, RawStatus.FAILED, item.id, error))
            else:
                retry.append(item)
        if retry:
            delay = min(30.0, 0.5 * 2 ** max(attempts[m.seq] for m in retry))
            await asyncio.sleep(delay)
            self.submit(retry)

    async def _process(self, batch: list[PendingMemory]) -> None:
        texts = [m.content for m in batch]
        vectors = await asyncio.to_thread(self._embedder.embed, texts)
        outcomes, added = await self._decide(batch, vectors)
        try:
            await self._ingest.complete(outcomes, self._embedder.name, self._cfg.reinforce_step)
        except BaseException:
            for seq in added:
                self._index.remove(seq)
            raise
        for outcome in outcomes:
            mem = outcome.memory
            if outcome.merged_into_seq is None:
                self.encoded += 1
                self._on_result(EncodeResult(mem.raw_id, RawStatus.ENCODED, mem.id))
            else:
                self.merged += 1
                target = await self._memories.get_many([outcome.merged_into_seq])
                target_id = target[outcome.merged_into_seq].id if target else None
                self._on_result(EncodeResult(mem.raw_id, RawStatus.REINFORCED, target_id))

    async def _decide(
        self, batch: list[PendingMemory], vectors: Vectors
    ) -> tuple[list[EmbeddedOutcome], list[int]]:
        """Near-duplicate or links for each item, in order, so later items see earlier ones."""
        outcomes: list[EmbeddedOutcome] = []
        added: list[int] = []
        previous: dict[str, PendingMemory] = {}
        for item, vector in zip(batch, vectors, strict=True):
            filters = Filters(project=item.project, states=(MemoryState.ACTIVE, MemoryState.FADING))
            hits = [
                (s, c)
                for s, c in self._index.search(vector, self._cfg.link_candidates + 1, filters)
                if s != item.seq
            ]
            twin = await self._near_duplicate(item, hits)
            if twin is not None:
                outcomes.append(EmbeddedOutcome(item, vector, merged_into_seq=twin))
                continue
            links = await self._links(item, hits, previous.get(item.project))
            outcomes.append(EmbeddedOutcome(item, vector, links=tuple(links)))
            self._index.add_many([_entry(item)], vector.reshape(1, -1))
            added.append(item.seq)
            previous[item.project] = item
        return outcomes, added

    async def _near_duplicate(
        self, item: PendingMemory, hits: list[tuple[int, float]]
    ) -> int | None:
        close = [s for s, c in hits if c >= self._cfg.near_duplicate_threshold]
        if not close:
            return None
        found = await self._memories.get_many(close)
        for seq in close:
            other = found.get(seq)
            if (
                other is not None
                and other.type == item.type
                and other.project == item.project
                and may_merge(item.content, other.content)
            ):
                return seq
        return None

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
            Neighbour(s, c, found[s].content, found[s].concepts, found[s].timestamp)
            for s, c in hits
            if s in found
        ]
        links = choose_links(
            item.content,
            item.concepts,
            item.timestamp,
            neighbours,
            min_similarity=self._cfg.link_min_similarity,
            max_links=self._cfg.max_links_per_memory,
            temporal_window_s=self._cfg.temporal_window_s,
        )
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


def _entry(item: PendingMemory) -> IndexEntry:
    return IndexEntry(
        seq=item.seq,
        project=item.project,
        type=item.type.value,
        source=item.source.value,
        state=MemoryState.ACTIVE.value,
        timestamp=item.timestamp,
        salience=item.salience,
    )
