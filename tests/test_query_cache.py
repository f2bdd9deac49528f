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
