"""The application layer's purge: the one implementation REST (and, through REST, the
CLI) calls.

``forget`` archives and ``unarchive`` brings an archived memory back (both in
``app/service.py``); ``purge`` is the only operation that destroys content. A purge
removes the selection from the store (see ``store/purge.py`` for every table it touches;
the recall index follows through the change feed), drops the buffered activity events that
name it, publishes ``MemoryPurged`` (ids only) and then rewrites the database file so the bytes
are gone from it and its WAL.

Preview and purge are separate calls on purpose: a face shows the preview and asks before it
purges (the CLI refuses to purge without a confirmation or ``--yes``). A purge by query
purges what the query finds at that moment; the CLI instead purges the ids it showed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass

from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.events.types import Event, MemoryPurged
from mnemonic.recall.pipeline import Recaller
from mnemonic.store.base import Filters, MemoryStore
from mnemonic.store.models import MemoryState
from mnemonic.store.purge import PurgeCounts, PurgeItem, Scope, SQLitePurger

log = logging.getLogger(__name__)

Publish = Callable[[Event], None]
FindSeqs = Callable[[str, Filters, int], Awaitable[list[int]]]
"""A read-only recall: (query, filters, limit) -> seqs, best first; records nothing."""

MAX_IDS = 1000


@dataclass(frozen=True, slots=True)
class PurgeReport:
    """A preview (``dry_run``) or the outcome of a purge."""

    dry_run: bool
    items: tuple[PurgeItem, ...]
    counts: PurgeCounts
    vacuumed: bool = False
    checkpointed: bool = False
    took_ms: float = 0.0


def recall_seqs(recaller: Recaller) -> FindSeqs:
    """A ``FindSeqs`` over the recall pipeline itself: unlike ``MemoryService.recall`` it
    logs no query and counts no access."""

    async def find(query: str, filters: Filters, limit: int) -> list[int]:
        # every copy of what the query finds must go too (recall drops near copies), and
        # the relevance floor stays: the list is shown for confirmation before anything goes
        outcome = await recaller.recall(query, filters, limit, drop_copies=False)
        return [scored.memory.seq for scored in outcome.results]

    return find


class PurgeService:
    def __init__(
        self,
        purger: SQLitePurger,
        memories: MemoryStore,
        find: FindSeqs,
        publish: Publish,
        drain: Callable[[], Awaitable[None]],
        forget_events: Callable[[Collection[str]], int],
    ) -> None:
        self._purger = purger
        self._memories = memories
        self._find = find
        self._publish = publish
        self._drain = drain  # waits for query logs being written (they may name the purged)
        self._forget_events = forget_events

    # ---- selections ---------------------------------------------------------------------
    async def purge_ids(
        self, memory_ids: Sequence[str], *, dry_run: bool = False, scope: Scope = "ids"
    ) -> PurgeReport:
        """Purge these memories (and the memories merged into them). Any unknown id is a
        404 and nothing is purged."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            raise InvalidInputError("memory_ids", "name at least one memory")
        if len(ids) > MAX_IDS:
            raise InvalidInputError("memory_ids", f"at most {MAX_IDS} ids per purge")
        items, unknown = await self._purger.preview(memory_ids=ids)
        if unknown:
            raise NotFoundError("memory", unknown[0])
        if dry_run:
            return PurgeReport(True, tuple(items), PurgeCounts(memories=len(items)))
        return await self._purge(scope, memory_ids=ids)

    async def purge_project(self, project: str, *, dry_run: bool = False) -> PurgeReport:
        """Purge every memory and raw observation of a project. An empty project purges
        nothing (200 with zero counts), so asking twice is harmless."""
        if dry_run:
            items, _ = await self._purger.preview(project=project)
            return PurgeReport(True, tuple(items), PurgeCounts(memories=len(items)))
        return await self._purge("project", project=project)

    async def purge_query(self, query: str, limit: int, *, dry_run: bool = False) -> PurgeReport:
        """Purge what a recall over every state (archived and merged included) finds for
        ``query`` now. The recall is not logged: the query text may be the secret."""
        if not query.strip():
            raise InvalidInputError("query", "must contain non-whitespace text")
        seqs = await self._find(query, Filters(states=tuple(MemoryState)), limit)
        if dry_run:
            items, _ = await self._purger.preview(seqs=seqs)
            return PurgeReport(True, tuple(items), PurgeCounts(memories=len(items)))
        if not seqs:
            return PurgeReport(False, (), PurgeCounts())
        return await self._purge("query", seqs=seqs)

    # ---- the purge ----------------------------------------------------------------------
    async def _purge(
        self,
        scope: Scope,
        *,
        memory_ids: Sequence[str] = (),
        seqs: Sequence[int] = (),
        project: str | None = None,
    ) -> PurgeReport:
        started = time.perf_counter()
        await self._drain()
        purged = await self._purger.purge(scope, memory_ids, seqs, project)
        ids = [item.id for item in purged.items]
        counts = purged.counts
        # a recall answered before the purge may have logged its query after it
        await self._drain()
        if ids:
            late = await self._purger.scrub_queries(ids, purged.texts)
            counts = counts + PurgeCounts(queries=len(late))
        self._forget_events([*ids, *purged.raw_ids, *purged.query_ids])
        compacted = await self._purger.compact()
        for memory_id in ids:
            self._publish(MemoryPurged(memory_id=memory_id))
        took_ms = (time.perf_counter() - started) * 1000
        log.info(
            "purge (%s): %d memories, %d raw, %d queries in %.0f ms",
            scope,
            counts.memories,
            counts.raw_memories,
            counts.queries,
            took_ms,
        )
        return PurgeReport(
            False,
            tuple(_without_text(i) for i in purged.items),
            counts,
            compacted.vacuumed,
            compacted.checkpointed,
            took_ms,
        )


def _without_text(item: PurgeItem) -> PurgeItem:
    """After a purge the answer names what went, without quoting it back."""
    return PurgeItem(item.id, item.seq, item.project, item.state, "")
