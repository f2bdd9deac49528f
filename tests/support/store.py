"""Helpers for tests that drive the store and agents directly: a frozen clock and one
database opened, used and closed around an async function."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from mnemonic.config import StorageConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.store.base import EmbeddedOutcome
from mnemonic.store.database import Database
from mnemonic.store.models import NewRaw, Source
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.store.vector_rows import VectorModels
from mnemonic.timeutil import utcnow

T = TypeVar("T")


class Clock:
    """A clock that says ``now`` until a test moves it."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


def with_database(path: Path, fn: Callable[[Database], Awaitable[T]]) -> T:
    """Open the production database at ``path`` (migrating it), run ``fn`` on it, close."""

    async def main() -> T:
        db = Database(path, StorageConfig())
        await db.open()
        try:
            return await fn(db)
        finally:
            await db.close()

    return asyncio.run(main())


async def write_embedded(
    db: Database, embedder: OnnxEmbedder, items: list[tuple[str, str]], when: datetime
) -> list[str]:
    """Memories (project, text) accepted and embedded through the real store, whole
    vectors only, as the encoder writes them; their ids."""
    store = SQLiteStore(db)
    batch = [
        (NewRaw(text, Source.API, project, when), encode(text), content_hash(text))
        for project, text in items
    ]
    accepted = await store.accept(batch, 0.05)
    pending = await store.pending_for([a.memory_id for a in accepted])
    vectors = embedder.embed([p.content for p in pending])
    outcomes = [EmbeddedOutcome(p, v) for p, v in zip(pending, vectors, strict=True)]
    await store.complete(outcomes, VectorModels(embedder.name, embedder.name), 0.05)
    return [a.memory_id for a in accepted]
