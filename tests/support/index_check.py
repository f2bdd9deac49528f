"""Compare the daemon's live recall index with one built fresh from its database.

The live index is kept current by the change feed; a fresh build reads SQLite, the source
of truth. Equal parts mean every write path reached the index. Parts are compared by
what they answer, not by layout (the live one has overlays and deltas a build has not).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from mnemonic.daemon import Daemon
from mnemonic.index.builder import Built, read_everything
from mnemonic.index.columns import MemoryColumns
from mnemonic.index.fulltext import FullTextIndex
from mnemonic.index.graph import AssociationGraph
from mnemonic.index.recall_index import RecallIndex


async def fresh_index(daemon: Daemon) -> Built:
    index = daemon.index
    read = partial(read_everything, model=index.model, dim=index.dim, exact_max=10**9)
    return await daemon.db.run_read(read)


async def assert_index_matches_database(daemon: Daemon, probe_terms: list[str]) -> None:
    """Fail with the first difference between the live index and a fresh build."""
    live: RecallIndex = daemon.index
    assert live.ready, f"index not ready: {live.state} {live.last_error}"
    fresh = await fresh_index(daemon)
    _same_columns(live.columns, fresh.columns)
    seqs = fresh.columns.seqs().tolist()
    live_vectors = live.vectors_for(range(max(seqs, default=0) + 1))
    fresh_vectors = fresh.vectors.vectors_for(list(range(max(seqs, default=0) + 1)))
    assert sorted(live_vectors) == sorted(fresh_vectors), "vector seqs differ"
    exact = live.vectors.kind == "numpy-exact"
    for seq, vector in fresh_vectors.items():
        if exact:
            np.testing.assert_allclose(live_vectors[seq], vector, atol=1e-6, err_msg=str(seq))
        else:  # int8 HNSW hands back its quantised copy: the same direction, not the bits
            cosine = float(live_vectors[seq] @ vector) / float(
                np.linalg.norm(live_vectors[seq]) * np.linalg.norm(vector)
            )
            assert cosine > 0.999, f"vector {seq} differs (cosine {cosine:.4f})"
    _same_passages(live, fresh, max(seqs, default=0))
    _same_graph(live.graph, fresh.graph, max(seqs, default=0))
    _same_full_text(live.fulltext, fresh.fulltext, probe_terms)


def _same_passages(live: RecallIndex, fresh: Built, top: int) -> None:
    assert len(live.passages) == len(fresh.passages), "passage row counts differ"
    assert live.passages.memories == fresh.passages.memories, "memories with passages differ"
    for seq in range(top + 1):
        got, want = live.passages.of(seq), fresh.passages.of(seq)
        assert got.shape == want.shape, f"passages of {seq} differ in number"
        if len(want):  # float16 on disk both ways; HNSW hands back int8 copies
            cosines = np.sum(got * want, axis=1) / (
                np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1)
            )
            assert bool(np.all(cosines > 0.999)), f"passages of {seq} differ"


def _same_columns(live: MemoryColumns, fresh: MemoryColumns) -> None:
    assert live.seqs().tolist() == fresh.seqs().tolist(), "memories differ"
    assert len(live) == len(fresh)
    for seq in fresh.seqs().tolist():
        assert live.traits(seq) == fresh.traits(seq), f"columns of {seq} differ"
        assert live.project_of(seq) == fresh.project_of(seq), f"project of {seq} differs"


def _same_graph(live: AssociationGraph, fresh: AssociationGraph, top: int) -> None:
    assert live.edge_count == fresh.edge_count, "edge counts differ"
    for seq in range(top + 1):
        assert _edges(live, seq) == _edges(fresh, seq), f"edges of {seq} differ"


def _edges(graph: AssociationGraph, seq: int) -> list[tuple[int, int, float]]:
    _, target, relation, strength = graph.edges_of(seq)
    return sorted(
        (int(t), int(r), round(float(w), 6))
        for t, r, w in zip(target, relation, strength, strict=True)
    )


def _same_full_text(live: FullTextIndex, fresh: FullTextIndex, terms: list[str]) -> None:
    assert live.document_count == fresh.document_count, "document counts differ"
    for term in terms:
        got = live.search([term], None, 10_000)
        want = fresh.search([term], None, 10_000)
        assert [s for s, _ in got] == [s for s, _ in want] or sorted(s for s, _ in got) == sorted(
            s for s, _ in want
        ), f"hits for {term!r} differ"
        scores = dict(want)
        for seq, value in got:
            assert abs(value - scores[seq]) <= 1e-6 * max(1.0, abs(value)), (term, seq)
