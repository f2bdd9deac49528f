"""Background re-embedding after the embedding model or its dimension changes.

Vectors of the old model stay in SQLite until each is replaced, so an interrupted run
simply continues on the next start; full-text recall works throughout.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from mnemonic.encoding.passages import embed_with_passages
from mnemonic.llm.embedding import EmbeddingProvider
from mnemonic.store.sqlite import SQLiteStore

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ReembedProgress:
    total: int = 0
    done: int = 0
    running: bool = False


async def reembed(
    store: SQLiteStore,
    embedder: EmbeddingProvider,
    progress: ReembedProgress,
    batch: int = 128,
    *,
    passage_lead_words: int = 4,
    passage_cap: int = 12,
) -> None:
    """Embed every memory lacking a whole vector or passages of ``embedder``'s model:
    after a model change, and once after the upgrade that added passages (0009)."""
    progress.total = await store.count_stale_vectors(embedder.name)
    progress.running = progress.total > 0
    if progress.running:
        log.info("re-embedding %d memories with %s", progress.total, embedder.name)
    while True:
        seqs, texts = await store.stale_vectors(embedder.name, batch)
        if not seqs:
            break
        vectors, passages = await asyncio.to_thread(
            embed_with_passages, embedder.embed, texts, passage_lead_words, passage_cap
        )
        # the recall index picks the new vectors up from the change feed
        await store.store_vectors(seqs, vectors, embedder.name, passages)
        progress.done += len(seqs)
    progress.running = False
