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


def test_a_question_and_its_clauses_are_embedded_in_one_call_and_cached(
    embedder: OnnxEmbedder,
) -> None:
    async def scenario() -> None:
        cache = QueryVectors(embedder, size=8)
        held = await cache.get("How old was I")
        texts = ["How old was I when Alex was born?", "How old was I", "Alex was born"]
        vectors = await cache.get_many(texts)
        # the cached clause is reused, the two others cost one model call between them
        assert vectors[1] is held and (cache.hits, cache.misses) == (1, 3)
        expected = embedder.embed(texts)
        for got, want in zip(vectors, expected, strict=True):
            np.testing.assert_allclose(got, want, atol=1e-6)
        again = await cache.get_many(texts)
        assert all(a is b for a, b in zip(again, vectors, strict=True))
        assert (cache.hits, cache.misses) == (4, 3)

    asyncio.run(scenario())
