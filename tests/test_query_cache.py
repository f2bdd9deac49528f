"""The query-vector LRU: a repeated query costs no model run; it never grows past its size."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.recall.query_cache import MAX_KEY_CHARS, QueryVectors


def test_a_repeated_query_reuses_its_vector_and_the_oldest_leaves_first(
    embedder: OnnxEmbedder,
) -> None:
    async def scenario() -> None:
        cache = QueryVectors(embedder, size=2)
        first = await cache.get("postgres timeout on staging")
        again = await cache.get("postgres timeout on staging")
        assert again is first and (cache.hits, cache.misses) == (1, 1)
        np.testing.assert_allclose(first, embedder.embed(["postgres timeout on staging"])[0])
        with pytest.raises(ValueError):
            first[0] = 1.0  # shared between queries: read-only
        await cache.get("grafana alert")
        await cache.get("redis cache")  # evicts the least recently used: postgres
        assert len(cache) == 2
        await cache.get("postgres timeout on staging")
        assert cache.misses == 4

    asyncio.run(scenario())


def test_long_queries_and_a_zero_size_are_not_cached(embedder: OnnxEmbedder) -> None:
    async def scenario() -> None:
        off = QueryVectors(embedder, size=0)
        await off.get("grafana alert")
        await off.get("grafana alert")
        assert len(off) == 0 and off.misses == 2
        cache = QueryVectors(embedder, size=8)
        await cache.get("x" * (MAX_KEY_CHARS + 1))
        assert len(cache) == 0

    asyncio.run(scenario())


class _Counting:
    """The real model, with a record of each call it gets (texts, urgent)."""

    def __init__(self, embedder: OnnxEmbedder) -> None:
        self.inner = embedder
        self.calls: list[tuple[list[str], bool]] = []
        self.name, self.dim = embedder.name, embedder.dim

    def embed(self, texts: list[str], *, urgent: bool = False) -> np.ndarray:
        self.calls.append((list(texts), urgent))
        return self.inner.embed(texts, urgent=urgent)


def test_a_question_and_its_clauses_are_embedded_in_one_urgent_call_and_cached(
    embedder: OnnxEmbedder,
) -> None:
    async def scenario() -> None:
        counting = _Counting(embedder)
        cache = QueryVectors(counting, size=8)
        held = await cache.get("How old was I")
        texts = ["How old was I when Alex was born?", "How old was I", "Alex was born"]
        vectors = await cache.get_many(texts)
        # the cached clause is reused; the two others cost one call, urgent (a question
        # waits for it, so it goes before encoder batches even with three texts or more)
        assert counting.calls == [
            (["How old was I"], True),
            (["How old was I when Alex was born?", "Alex was born"], True),
        ]
        assert vectors[1] is held and (cache.hits, cache.misses) == (1, 3)
        for got, want in zip(vectors, embedder.embed(texts), strict=True):
            np.testing.assert_allclose(got, want, atol=1e-6)
            assert got.base is None and not got.flags.writeable  # its own read-only array
        again = await cache.get_many(texts)
        assert all(a is b for a, b in zip(again, vectors, strict=True))
        assert (cache.hits, cache.misses) == (4, 3) and len(counting.calls) == 2

    asyncio.run(scenario())


def test_the_question_outlives_its_clauses_in_a_small_cache(embedder: OnnxEmbedder) -> None:
    async def scenario() -> None:
        cache = QueryVectors(embedder, size=1)
        await cache.get_many(["How old was I when Alex was born?", "How old was I"])
        await cache.get("How old was I when Alex was born?")
        assert (cache.hits, cache.misses) == (1, 2)

    asyncio.run(scenario())
