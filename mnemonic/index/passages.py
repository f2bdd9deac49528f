"""Passage vectors in memory: many rows per memory, searched as one, collapsed by max.

Each memory of two or more sentences has a few passage vectors besides its whole one
(``encoding/passages.py``). Recall asks for the memory's best passage: the rows live in
an :class:`AdaptiveVectors` (exact, or HNSW past ``recall.vector_exact_max`` rows) keyed
by a row number, and ``owner[row]`` names the memory. A search maps the query's filter
(a mask over seqs) to a mask over rows, asks for a few rows per wanted memory and keeps
each memory's best.

Rows freed when a memory's passages change are reused, so the matrix does not grow with
amendments or a re-embedding. Mutations come from the event loop; a search in a worker
thread holds references to the arrays it reads, and a mutation replaces, never resizes,
the owner array. A row reused between a search's product and its owner lookup names its
new memory, which the search then checks against the filter again: one query may miss a
passage that moved, never return a memory its filter excludes.
"""

from __future__ import annotations

import numpy as np

from mnemonic.index.vectors import F32, I64, AdaptiveVectors, Hits, Mask

ROWS_PER_HIT = 4
"""Rows asked for per memory wanted: the benchmarks' memories have 2.4-2.7 passages, so
four rows per hit leave room for a memory matching with all of them."""


class PassageVectors:
    """The passage rows of every memory (see the module docstring)."""

    def __init__(self, dim: int, exact_max: int) -> None:
        self.vectors = AdaptiveVectors(dim, exact_max=exact_max)
        self._owner: I64 = np.full(0, -1, dtype=np.int64)
        self._rows: dict[int, I64] = {}
        self._free: list[int] = []
        self._top = 0  # rows ever handed out: owner[:top] is all a search reads

    @property
    def dim(self) -> int:
        return self.vectors.dim

    @property
    def memories(self) -> int:
        return len(self._rows)

    def __len__(self) -> int:
        return len(self.vectors)

    def describe(self) -> dict[str, object]:
        out = self.vectors.describe()
        out["memories"] = len(self._rows)
        out["owner_bytes"] = int(self._owner.nbytes)
        return out

    # ---- mutation (one thread) --------------------------------------------------------
    def set(self, seq: int, matrix: F32) -> None:
        """Replace memory ``seq``'s passages with ``matrix`` ([n, dim]; n = 0 removes)."""
        self.remove([seq])
        if not len(matrix):
            return
        rows = self._allocate(len(matrix))
        self.vectors.set(rows, np.asarray(matrix, dtype=np.float32))
        owner = self._owner
        owner[rows] = seq
        self._rows[seq] = rows

    def remove(self, seqs: list[int] | I64) -> None:
        freed: list[I64] = []
        for seq in seqs:
            rows = self._rows.pop(int(seq), None)
            if rows is not None:
                freed.append(rows)
        if not freed:
            return
        rows = np.concatenate(freed)
        self.vectors.remove(rows)
        self._owner[rows] = -1
        self._free.extend(int(r) for r in rows)

    def _allocate(self, n: int) -> I64:
        taken = [self._free.pop() for _ in range(min(n, len(self._free)))]
        fresh = n - len(taken)
        start = self._top
        self._top += fresh
        if self._top > len(self._owner):
            grown = np.full(self._top + self._top // 4 + 1024, -1, dtype=np.int64)
            grown[: len(self._owner)] = self._owner
            self._owner = grown  # replaced: a search holding the old array reads it whole
        return np.asarray(taken + list(range(start, start + fresh)), dtype=np.int64)

    def load(self, owners: I64, matrix: F32) -> None:
        """Fill an empty index at start: row ``i`` is ``matrix[i]``, a passage of memory
        ``owners[i]`` (rows of one memory adjacent). Zero rows past ``len(owners)`` are
        headroom the exact index adopts as is, so the first writes after a start do not
        copy the matrix on the event loop."""
        if len(self.vectors) or self._rows:
            raise RuntimeError("load() fills an empty index")
        owners = np.asarray(owners, dtype=np.int64)
        if len(owners) > self.vectors.exact_max:
            matrix = matrix[: len(owners)]
        self.vectors.load(np.arange(len(owners), dtype=np.int64), matrix)
        self._adopt_owner(owners)

    def adopt(self, vectors: AdaptiveVectors, owner: I64) -> None:
        """Install rows loaded from a snapshot: ``owner[row]`` is -1 for a free row."""
        self.vectors = vectors
        self._adopt_owner(np.asarray(owner, dtype=np.int64))

    def _adopt_owner(self, owners: I64) -> None:
        top = len(owners)
        self._owner = np.full(top + top // 4 + 1024, -1, dtype=np.int64)
        self._owner[:top] = owners
        self._top = top
        self._free = [int(r) for r in np.flatnonzero(owners < 0)[::-1]]
        present = np.flatnonzero(owners >= 0)
        if not len(present):
            return
        by_seq = np.argsort(owners[present], kind="stable")
        rows = present[by_seq]
        seqs = owners[rows]
        starts = np.flatnonzero(np.r_[True, seqs[1:] != seqs[:-1]])
        for rows_of, seq in zip(np.split(rows, starts[1:]), seqs[starts], strict=True):
            self._rows[int(seq)] = rows_of.astype(np.int64)

    def of(self, seq: int) -> F32:
        """Memory ``seq``'s passage vectors ([n, dim], in row order; HNSW: its int8 copy)."""
        rows = self._rows.get(seq)
        if rows is None:
            return np.zeros((0, self.dim), dtype=np.float32)
        found = self.vectors.vectors_for(rows)
        return np.stack([found[int(r)] for r in rows]).astype(np.float32)

    def owner(self) -> I64:
        """The owner of each row handed out (-1: free), for a snapshot. A copy."""
        return self._owner[: self._top].copy()

    # ---- search (any thread) ------------------------------------------------------------
    def search(self, query: F32, k: int, allowed: Mask | None) -> Hits:
        """The ``k`` memories whose best passage is nearest ``query`` (seq, cosine), best
        first, among the seqs ``allowed`` lets through (all when None)."""
        return self.search_many(np.asarray(query, dtype=np.float32).reshape(1, -1), k, allowed)[0]

    def search_many(self, queries: F32, k: int, allowed: Mask | None) -> list[Hits]:
        """``search`` for each row of ``queries`` under one mask: one product over the
        passage rows for all of them (a question's clauses, ``recall/clauses.py``)."""
        empty: list[Hits] = [[] for _ in range(len(queries))]
        if k <= 0 or not len(self.vectors):
            return empty
        top = self._top
        owner = self._owner[:top]  # rows handed out after this are not searched
        if allowed is None:
            row_mask = owner >= 0
        else:
            row_mask = np.zeros(top, dtype=np.bool_)
            inside = np.flatnonzero((owner >= 0) & (owner < len(allowed)))
            row_mask[inside] = allowed[owner[inside]]
        if not row_mask.any():
            return empty
        found = self.vectors.search_many(
            queries, k * ROWS_PER_HIT, [row_mask] * len(queries), [None] * len(queries)
        )
        out: list[Hits] = []
        for hits in found:
            best: dict[int, float] = {}
            for row, score in hits:
                seq = int(owner[row]) if row < top else -1
                if seq < 0 or (allowed is not None and (seq >= len(allowed) or not allowed[seq])):
                    continue  # a row freed, or handed to another memory, since the mask was made
                if score > best.get(seq, -2.0):
                    best[seq] = score
            out.append(sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        return out


def best_of(whole: Hits, passages: Hits, k: int) -> Hits:
    """Each memory's higher cosine of its whole vector and its best passage, top ``k``."""
    best = dict(whole)
    for seq, score in passages:
        if score > best.get(seq, -2.0):
            best[seq] = score
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
