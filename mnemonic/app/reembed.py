"""Background re-embedding after the embedding model or its dimension changes.

Vectors of the old model stay in SQLite until each is replaced, so an interrupted run
simply continues on the next start; full-text recall works throughout.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from mnemonic.encoding.passages import embed_passages, embed_with_passages, row_models
from mnemonic.llm.embedding import EmbeddingProvider
from mnemonic.store.sqlite import SQLiteStore

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ReembedProgress:
    """One store's re-embedding: how far it is, and the lock that keeps two runs (the
    start-up one and a repair of damaged rows, daemon.py) from embedding the same rows."""

    total: int = 0
    done: int = 0
    running: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


async def reembed(
    store: SQLiteStore,
    embedder: EmbeddingProvider,
    progress: ReembedProgress,
    batch: int = 128,
    *,
    passage_lead_words: int,
    passage_cap: int,
) -> None:
    """Embed every memory lacking a whole vector of ``embedder``'s model or passages of
    the current recipe: after a model change, a change of the passage settings, and once
    after the upgrade that added passages (0009); rows stored damaged too. A run started
    while another is under way waits for it, then finds what is left (usually nothing)."""
    async with progress.lock:
        await _reembed(store, embedder, progress, batch, passage_lead_words, passage_cap)


async def _reembed(
    store: SQLiteStore,
    embedder: EmbeddingProvider,
    progress: ReembedProgress,
    batch: int,
    passage_lead_words: int,
    passage_cap: int,
) -> None:
    models = row_models(embedder.name, passage_lead_words, passage_cap)
    progress.done = 0
    progress.total = await store.count_stale_vectors(models)
    progress.running = progress.total > 0
    if progress.running:
        log.info("re-embedding %d memories with %s", progress.total, embedder.name)
    while True:
        stale = await store.stale_vectors(models, batch)
        if not stale:
            break
        redo = [item for item in stale if not item.whole_current]
        only = [item for item in stale if item.whole_current]
        # the recall index picks the new vectors up from the change feed
        if redo:
            vectors, passages = await asyncio.to_thread(
                embed_with_passages,
                embedder.embed,
                [item.content for item in redo],
                passage_lead_words,
                passage_cap,
            )
            await store.store_vectors(redo, vectors, models, passages)
        if only:  # the whole vector is current: its passages alone (0009, a new recipe)
            passages = await asyncio.to_thread(
                embed_passages,
                embedder.embed,
                [item.content for item in only],
                passage_lead_words,
                passage_cap,
                embedder.dim,
            )
            await store.store_passages(only, passages, models, embedder.dim)
        progress.done += len(stale)
    progress.running = False
