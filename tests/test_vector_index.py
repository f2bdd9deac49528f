"""The in-memory index returns exactly what brute force over the filtered rows returns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from mnemonic.store.base import Filters
from mnemonic.store.models import MemoryState, MemoryType, Source
from mnemonic.store.vector_index import IndexEntry, VectorIndex

START = datetime(2024, 1, 1, tzinfo=UTC)


def _index(n: int = 500, dim: int = 16) -> tuple[VectorIndex, list[IndexEntry], np.ndarray]:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    types, sources, states = list(MemoryType), list(Source), ["active", "fading", "archived"]
    entries = [
        IndexEntry(
            seq=1000 + i,
            project=f"p{i % 4}",
            type=types[i % len(types)].value,
            source=sources[i % len(sources)].value,
            state=states[i % 3],
            timestamp=START + timedelta(days=i),
            salience=(i % 10) / 10,
        )
        for i in range(n)
    ]
    index = VectorIndex(dim, capacity=8)  # forces growth
    index.add_many(entries[:100], vectors[:100])
    index.add_many(entries[100:], vectors[100:])
    return index, entries, vectors


def _brute(entries: list[IndexEntry], vectors: np.ndarray, q: np.ndarray, keep: object, k: int):
    scored = [(e.seq, float(v @ q)) for e, v in zip(entries, vectors, strict=True) if keep(e)]  # type: ignore[operator]
    return sorted(scored, key=lambda x: -x[1])[:k]


def test_filtered_search_matches_brute_force() -> None:
    index, entries, vectors = _index()
    q = vectors[3]
    cases = [
        (Filters(states=None), lambda e: True),
        (Filters(project="p2"), lambda e: e.project == "p2" and e.state in ("active", "fading")),
        (
            Filters(project="p1", types=(MemoryType.ERROR,), states=(MemoryState.ACTIVE,)),
            lambda e: e.project == "p1" and e.type == "error" and e.state == "active",
        ),
        (
            Filters(sources=(Source.GIT,), since=START + timedelta(days=100), states=None),
            lambda e: e.source == "git" and e.timestamp >= START + timedelta(days=100),
        ),
        (Filters(min_salience=0.75, states=None), lambda e: e.salience >= 0.75),
    ]
    for filters, keep in cases:
        got = index.search(q, 10, filters)
        want = _brute(entries, vectors, q, keep, 10)
        assert [s for s, _ in got] == [s for s, _ in want], filters
        assert np.allclose([c for _, c in got], [c for _, c in want], atol=1e-5)


def test_state_changes_and_removal_apply_to_project_scans() -> None:
    index, _, vectors = _index()
    q = vectors[8]  # row 8: project p0, state archived (8 % 3 == 2)
    assert 1008 not in [s for s, _ in index.search(q, 5, Filters(project="p0"))]
    index.set_state(1008, "active")
    assert index.search(q, 1, Filters(project="p0"))[0][0] == 1008
    index.remove(1008)
    assert 1008 not in [s for s, _ in index.search(q, 50, Filters(project="p0", states=None))]
    assert index.search(q, 5, Filters(project="nope")) == []


def test_load_fills_an_empty_index_like_add_many_and_it_grows_afterwards() -> None:
    built, entries, vectors = _index(n=300)
    loaded = VectorIndex(16, capacity=8)
    loaded.load(entries[:250], vectors[:250].copy())  # adopted as the matrix
    loaded.add_many(entries[250:], vectors[250:])  # past the adopted capacity: grows
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.standard_normal(16).astype(np.float32)
        q /= np.linalg.norm(q)
        for filters in (None, Filters(project="p1"), Filters(states=[MemoryState.ACTIVE])):
            assert loaded.search(q, 7, filters) == built.search(q, 7, filters)
    small = VectorIndex(16)  # fewer rows than its capacity: copied, not adopted
    small.load(entries[:5], vectors[:5])
    small.add_many(entries[5:9], vectors[5:9])
    assert [s for s, _ in small.search(vectors[7], 1)] == [entries[7].seq]
    with pytest.raises(RuntimeError, match="empty index"):
        small.load(entries[:1], vectors[:1])
