"""Query vectors, cached: an agent that recalls on every turn repeats itself.

Embedding a short query costs 4-5 ms of model time on two cores, a third of the whole
in-memory recall; a repeated query (the same question asked by two tools, a retry, a
dashboard refresh) costs a dictionary lookup instead. The cache holds vectors only, never
results, so it can never answer with stale memories; it is keyed by the exact text.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from concurrent.futures import Executor
from functools import partial

import numpy as np

from mnemonic.llm.embedding import EmbeddingProvider, Vectors

MAX_KEY_CHARS = 2_000  # longer queries are embedded every time rather than held as keys


class QueryVectors:
    """An LRU of query text -> unit vector, in front of the embedder."""

    def __init__(self, embedder: EmbeddingProvider, size: int) -> None:
        self._embedder = embedder
        self._size = size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._cache)

    async def get(self, query: str, executor: Executor | None = None) -> Vectors:
        return (await self.get_many([query], executor))[0]

    async def get_many(self, queries: list[str], executor: Executor | None = None) -> list[Vectors]:
        """The vector of each query; those not cached are embedded in one model call (a
        question and its clauses, ``recall/clauses.py``)."""
        found: dict[str, Vectors] = {}
        for query in queries:
            cached = self._cache.get(query)
            if cached is not None:
                self._cache.move_to_end(query)
                self.hits += 1
                found[query] = cached
        missing = [q for q in dict.fromkeys(queries) if q not in found]
        if missing:
            self.misses += len(missing)
            loop = asyncio.get_running_loop()
            embed = partial(self._embedder.embed, missing, urgent=True)
            vectors = await loop.run_in_executor(executor, embed)
            # each its own array (a row would keep the whole batch alive), read-only as it
            # is shared between queries; the first text (the question) held last, so its
            # own clauses do not push it out of a small cache
            for query, row in reversed(list(zip(missing, vectors, strict=True))):
                vector: Vectors = np.array(row, dtype=np.float32)
                vector.setflags(write=False)
                found[query] = vector
                self._hold(query, vector)
        return [found[q] for q in queries]

    def _hold(self, query: str, vector: Vectors) -> None:
        if self._size > 0 and len(query) <= MAX_KEY_CHARS:
            self._cache[query] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
