"""Vector search keyed by seq: an exact numpy matrix, and the adaptive switch to HNSW.

SQLite holds the vectors (the source of truth); these copies answer nearest-neighbour
queries. For a small store one matrix product over every unit vector is exact and fast;
past ``exact_max`` (``recall.vector_exact_max``, 50k) :class:`AdaptiveVectors` moves to a
quantised usearch HNSW graph (:mod:`mnemonic.index.hnsw`): at 100k the float32 matrix
costs 154 MB and 3.5 ms a query, the int8 graph 90 MB and about a millisecond, and at 1M
the matrix alone would outgrow the daemon's memory budget (1.5 GB).

Rows are indexed by seq directly, so there is no seq -> row dict to keep in step and a
filter arrives as ``allowed``, a bool array indexed by seq. Mutations come from one thread
at a time; a search may run concurrently in another thread, so a search takes references
to the arrays first and a mutation replaces (never resizes) an array.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from mnemonic.distinct import distinct, distinct_count

if TYPE_CHECKING:
    from mnemonic.index.hnsw import HnswVectors

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Hits = list[tuple[int, float]]

_SELECTIVE = 4
"""Gather the allowed rows when at most 1/_SELECTIVE of the rows pass: copying few rows and
multiplying them beats multiplying every row and throwing most scores away."""

_LOAD_BLOCK = 8192


class VectorSearch(Protocol):
    """What the recall index needs from a vector backend (exact or HNSW)."""

    @property
    def dim(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...
    def __contains__(self, seq: object) -> bool: ...
    def set(self, seqs: I64, vectors: F32) -> None: ...
    def remove(self, seqs: I64) -> None: ...
    def load(self, seqs: I64, matrix: F32) -> None: ...
    def search(
        self, query: F32, k: int, allowed: Mask | None = None, candidates: I64 | None = None
    ) -> Hits: ...
    def search_many(
        self,
        queries: F32,
        k: int,
        allowed_per_query: Sequence[Mask | None],
        candidates_per_query: Sequence[I64 | None],
    ) -> list[Hits]: ...
    def vectors_for(self, seqs: Sequence[int] | I64) -> dict[int, F32]: ...
    def describe(self) -> dict[str, object]: ...


# ---- pure helpers shared by both backends ---------------------------------------------------


def as_seqs(seqs: Sequence[int] | I64) -> I64:
    out = np.asarray(seqs, dtype=np.int64).reshape(-1)
    if out.size and int(out.min()) < 0:
        raise ValueError("seqs must be >= 0")
    return out


def check_vectors(seqs: I64, vectors: F32, dim: int) -> F32:
    vecs = np.asarray(vectors, dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[1] != dim:
        raise ValueError(f"vectors must have shape [n, {dim}], got {vecs.shape}")
    if len(vecs) != len(seqs):
        raise ValueError("seqs and vectors differ in length")
    return vecs


def last_wins(seqs: I64, vectors: F32) -> tuple[I64, F32]:
    """Drop all but the last write of a seq repeated within one call."""
    if distinct_count(seqs) == len(seqs):
        return seqs, vectors
    rev = seqs[::-1]
    _, first = np.unique(rev, return_index=True)
    keep = np.sort(len(seqs) - 1 - first)
    return seqs[keep], vectors[keep]


def within(seqs: I64, mask: Mask) -> I64:
    """The seqs of ``seqs`` set in ``mask`` (seqs beyond its length are not set)."""
    seqs = seqs[seqs < len(mask)]
    return seqs[mask[seqs]]


def top_k(scores: F32, ids: I64, k: int) -> Hits:
    """The ``k`` highest scores as (id, score), best first; ties keep id order."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return []
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # every row tied with the k-th score, so the lowest ids win the ties
        part = np.flatnonzero(scores >= scores[part].min())
        part = part[np.lexsort((ids[part], -scores[part]))][:k]
    else:
        part = np.lexsort((ids, -scores))
    return [(int(ids[i]), float(scores[i])) for i in part]


def group_queries(
    allowed_per_query: Sequence[Mask | None], candidates_per_query: Sequence[I64 | None]
) -> dict[tuple[int, int], list[int]]:
    """Query positions grouped by the identity of their (allowed, candidates) arrays, so a
    batch whose items share one project's arrays costs one matrix product."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (allowed, cands) in enumerate(zip(allowed_per_query, candidates_per_query, strict=True)):
        groups.setdefault((id(allowed), id(cands)), []).append(i)
    return groups


# ---- exact ----------------------------------------------------------------------------------


class ExactVectors:
    """Unit float32 vectors in one matrix indexed by seq, searched by one product."""

    kind = "numpy-exact"

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self._dim = dim
        self._vecs: F32 = np.zeros((capacity, dim), dtype=np.float32)
        self._present: Mask = np.zeros(capacity, dtype=np.bool_)
        self._hi = 0  # max present-ever seq + 1: rows beyond are never scanned
        self._count = 0

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return self._count

    def __contains__(self, seq: object) -> bool:
        if not isinstance(seq, int | np.integer):
            return False
        s = int(seq)
        present = self._present
        return 0 <= s < len(present) and bool(present[s])

    @property
    def nbytes(self) -> int:
        return int(self._vecs.nbytes + self._present.nbytes)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "entries": len(self), "bytes": self.nbytes, "dim": self.dim}

    def reserve(self, max_seq: int) -> None:
        """Make room for seqs up to ``max_seq``, growing by 1.25x (2x would hold 150 MB of
        empty rows at 100k); the old arrays stay valid for searches holding them."""
        capacity = len(self._present)
        if max_seq < capacity:
            return
        new_capacity = max(max_seq + 1, capacity + capacity // 4 + 1024)
        vecs = np.zeros((new_capacity, self._dim), dtype=np.float32)
        vecs[:capacity] = self._vecs
        present = np.zeros(new_capacity, dtype=np.bool_)
        present[:capacity] = self._present
        self._vecs = vecs
        self._present = present

    def make_room(self) -> None:
        """Room for a quarter more than the highest seq ever set, so the writes after a
        start's catch-up (run in a worker thread) do not copy the matrix on the event loop
        (150 MB at 100k vectors: a 1 s stall was seen)."""
        self.reserve(self._hi + self._hi // 4 + 1024)

    def set(self, seqs: I64, vectors: F32) -> None:
        """Add or replace vectors (unit length; cosine is their dot product)."""
        seqs = as_seqs(seqs)
        vectors = check_vectors(seqs, vectors, self._dim)
        if not len(seqs):
            return
        seqs, vectors = last_wins(seqs, vectors)
        self.reserve(int(seqs.max()))
        self._vecs[seqs] = vectors
        present = self._present
        self._count += int(np.count_nonzero(~present[seqs]))
        present[seqs] = True
        self._hi = max(self._hi, int(seqs.max()) + 1)

    def remove(self, seqs: I64) -> None:
        seqs = distinct(as_seqs(seqs))
        seqs = within(seqs, self._present)
        self._present[seqs] = False
        self._count -= len(seqs)

    def load(self, seqs: I64, matrix: F32) -> None:
        """Fill an empty index at start. ``matrix[i]`` is the vector of ``seqs[i]``. When
        ``seqs`` ascend and ``matrix`` has at least ``max(seqs) + 1`` rows (the caller
        allocates that and streams rows into its top), the matrix is adopted and its rows
        moved to their seq in place, so the vectors are never held twice at the start peak
        (at 100k a copy is 154 MB more)."""
        if self._count:
            raise RuntimeError("load() fills an empty index; use set() on a filled one")
        seqs = as_seqs(seqs)
        if not len(seqs):
            return
        top = int(seqs.max())
        adoptable = (
            isinstance(matrix, np.ndarray)
            and matrix.dtype == np.float32
            and matrix.ndim == 2
            and matrix.shape[1] == self._dim
            and matrix.flags.c_contiguous
            and matrix.flags.writeable
            and len(matrix) > top
            and bool(np.all(np.diff(seqs) > 0))
        )
        if not adoptable:
            for a in range(0, len(seqs), _LOAD_BLOCK):
                self.set(seqs[a : a + _LOAD_BLOCK], matrix[a : a + _LOAD_BLOCK])
            return
        # seqs ascend, so seqs[i] >= i: moving blocks from the last down never overwrites a
        # row that is still to be moved.
        moved = np.zeros(len(matrix), dtype=np.bool_)
        for b in range(len(seqs), 0, -_LOAD_BLOCK):
            a = max(0, b - _LOAD_BLOCK)
            block = matrix[a:b].copy()
            matrix[seqs[a:b]] = block
            moved[seqs[a:b]] = True
        matrix[~moved] = 0.0
        self._vecs = matrix
        self._present = moved
        self._hi = top + 1
        self._count = len(seqs)

    def adopt_placed(self, matrix: F32, seqs: I64) -> None:
        """Fill an empty index at start with ``matrix``, whose row ``seq`` already holds
        that seq's vector for every seq in ``seqs`` and zeros elsewhere (the builder writes
        rows in place into a zero-filled matrix with headroom; nothing is moved or copied,
        and untouched headroom rows stay unmapped)."""
        if self._count:
            raise RuntimeError("adopt_placed() fills an empty index")
        seqs = as_seqs(seqs)
        if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[1] != self._dim:
            raise ValueError(f"matrix must be float32 [n, {self._dim}]")
        top = int(seqs.max()) if len(seqs) else -1
        if top >= len(matrix):
            raise ValueError("a seq lies beyond the matrix")
        present = np.zeros(len(matrix), dtype=np.bool_)
        present[seqs] = True
        self._vecs = matrix
        self._present = present
        self._hi = top + 1
        self._count = int(present.sum())

    def vectors_for(self, seqs: Sequence[int] | I64) -> dict[int, F32]:
        vecs, present = self._vecs, self._present
        keep = within(as_seqs(seqs), present)
        return {int(s): vecs[s].copy() for s in keep}

    def export(self) -> tuple[F32, Mask]:
        """The matrix and presence mask up to the highest seq ever present, for a snapshot
        (``index/snapshot.py``). Rows of removed vectors are zeroed first (no search or
        read looks at them), so a snapshot keeps no vector of a purged memory. References,
        not copies: write them before the next change."""
        hi = self._hi
        vecs, present = self._vecs[:hi], self._present[:hi]
        vecs[~present] = 0.0
        return vecs, present

    @classmethod
    def restore(cls, matrix: F32, present: Mask) -> ExactVectors:
        """An index adopting :meth:`export`'s arrays (``matrix[seq]`` is seq's vector when
        ``present[seq]``), which the caller has checked (shape, dtype, finite)."""
        out = cls(int(matrix.shape[1]), capacity=0)
        out._vecs = np.ascontiguousarray(matrix, dtype=np.float32)
        out._present = np.asarray(present, dtype=np.bool_)
        out._hi = len(out._present)
        out._count = int(np.count_nonzero(out._present))
        # headroom now (start-up, a worker thread), not at the first write on the event
        # loop: growing a 100k-row matrix there stalled the loop for 0.3 s
        out.reserve(out._hi + out._hi // 4 + 1024)
        return out

    def rows(self) -> tuple[I64, F32]:
        """The present seqs and a reference to the matrix they index (for a build)."""
        hi = self._hi
        present, vecs = self._present, self._vecs
        return np.flatnonzero(present[:hi]).astype(np.int64), vecs

    def _scope(self, allowed: Mask | None, candidates: I64 | None) -> tuple[I64 | None, Mask]:
        """Rows to gather (or None: scan [0, hi) and mask) and the mask over [0, hi)."""
        hi = self._hi
        present = self._present[:hi]
        if candidates is not None:
            rows = within(as_seqs(candidates), present)
            if allowed is not None:
                rows = within(rows, allowed)
            return distinct(rows), present
        mask = present
        if allowed is not None:
            mask = np.zeros(hi, dtype=np.bool_)
            m = min(hi, len(allowed))
            mask[:m] = present[:m] & allowed[:m]
        count = int(np.count_nonzero(mask))
        if count * _SELECTIVE <= hi:
            return np.flatnonzero(mask).astype(np.int64), mask
        return None, mask

    def search(
        self, query: F32, k: int, allowed: Mask | None = None, candidates: I64 | None = None
    ) -> Hits:
        """The ``k`` best (seq, cosine) among present seqs that are allowed (and among
        ``candidates`` when given), best first."""
        return self.search_many(np.asarray(query).reshape(1, -1), k, [allowed], [candidates])[0]

    def search_many(
        self,
        queries: F32,
        k: int,
        allowed_per_query: Sequence[Mask | None],
        candidates_per_query: Sequence[I64 | None],
    ) -> list[Hits]:
        """One product per group of queries sharing their arrays (by identity)."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self._dim:
            raise ValueError(f"queries must have shape [b, {self._dim}]")
        if len(queries) != len(allowed_per_query) or len(queries) != len(candidates_per_query):
            raise ValueError("one allowed and one candidates entry per query")
        out: list[Hits] = [[] for _ in range(len(queries))]
        if k <= 0:
            return out
        hi = self._hi
        vecs = self._vecs  # after hi: a replacing grow keeps every row below hi
        for positions in group_queries(allowed_per_query, candidates_per_query).values():
            i0 = positions[0]
            rows, mask = self._scope(allowed_per_query[i0], candidates_per_query[i0])
            block = queries[positions]
            if rows is not None:
                if not len(rows):
                    continue
                scores = block @ vecs[rows].T
                ids = rows
            else:
                scores = block @ vecs[:hi].T
                ids = np.flatnonzero(mask).astype(np.int64)
                scores = scores[:, mask]
            for j, pos in enumerate(positions):
                out[pos] = top_k(scores[j], ids, k)
        return out


# ---- adaptive: exact, then HNSW -------------------------------------------------------------


@dataclass
class _Pending:
    """Writes made while an HNSW index is being built, replayed onto it before the swap."""

    ops: list[tuple[I64, F32 | None]] = field(default_factory=list)


class AdaptiveVectors:
    """Exact while small; an HNSW index once more than ``exact_max`` vectors are present.

    The switch is three steps so the heavy one can run in a worker thread:
    ``build = begin_switch()`` (mutation thread), ``hnsw = build()`` (any thread; minutes at
    a million), ``finish_switch(hnsw)`` (mutation thread: replays the writes made meanwhile,
    then swaps). Searches keep answering from the exact index until the swap. It never
    switches back: deletions below the threshold leave it on HNSW until the next start.
    """

    def __init__(self, dim: int, exact_max: int = 200_000, **hnsw_options: object) -> None:
        self._dim = dim
        self.exact_max = exact_max
        self._hnsw_options = hnsw_options
        self._active: ExactVectors | HnswVectors = ExactVectors(dim)
        self._pending: _Pending | None = None
        self._lock = threading.Lock()  # guards the pending list against a concurrent swap

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def kind(self) -> str:
        return self._active.kind

    @property
    def active(self) -> ExactVectors | HnswVectors:
        return self._active

    @property
    def switching(self) -> bool:
        return self._pending is not None

    @property
    def needs_switch(self) -> bool:
        """True when the exact index has outgrown ``exact_max`` and no build is under way."""
        return (
            isinstance(self._active, ExactVectors)
            and len(self._active) > self.exact_max
            and self._pending is None
        )

    def __len__(self) -> int:
        return len(self._active)

    def __contains__(self, seq: object) -> bool:
        return seq in self._active

    @property
    def nbytes(self) -> int:
        return self._active.nbytes

    def describe(self) -> dict[str, object]:
        out = self._active.describe()
        out["exact_max"] = self.exact_max
        out["switching"] = self.switching
        return out

    def set(self, seqs: I64, vectors: F32) -> None:
        seqs = as_seqs(seqs)
        vectors = check_vectors(seqs, vectors, self._dim)
        self._active.set(seqs, vectors)
        with self._lock:
            if self._pending is not None:
                self._pending.ops.append((seqs.copy(), vectors.copy()))

    def remove(self, seqs: I64) -> None:
        seqs = as_seqs(seqs)
        self._active.remove(seqs)
        with self._lock:
            if self._pending is not None:
                self._pending.ops.append((seqs.copy(), None))

    def load(self, seqs: I64, matrix: F32) -> None:
        """Fill at start: exact up to ``exact_max``, else an HNSW build (slow at a million:
        the caller should prefer :meth:`adopt` of a saved index)."""
        if len(self._active):
            raise RuntimeError("load() fills an empty index")
        if len(seqs) <= self.exact_max:
            self._active.load(seqs, matrix)
            return
        from mnemonic.index.hnsw import HnswVectors

        hnsw = HnswVectors(self._dim, **self._hnsw_options)  # type: ignore[arg-type]
        hnsw.load(seqs, matrix)
        self._active = hnsw

    def make_room(self) -> None:
        """See ``ExactVectors.make_room``; an HNSW index grows by itself."""
        active = self._active
        if isinstance(active, ExactVectors):
            active.make_room()

    def load_placed(self, matrix: F32, seqs: I64) -> None:
        """Start-up fill of the exact index from a matrix indexed by seq (see
        ``ExactVectors.adopt_placed``)."""
        if len(self._active):
            raise RuntimeError("load_placed() fills an empty index")
        if not isinstance(self._active, ExactVectors):
            raise RuntimeError("load_placed() is for the exact index")
        self._active.adopt_placed(matrix, seqs)

    def adopt(self, index: ExactVectors | HnswVectors) -> None:
        """Install an index built elsewhere or loaded from a snapshot (the caller checked
        it is current)."""
        if index.dim != self._dim:
            raise ValueError("dimension differs")
        self._active = index

    def scrub(self) -> bool:
        """Leave nothing of removed vectors in what a checkpoint would save: nothing to do
        for the exact index (its removed rows are blanked); the HNSW graph's freed slots
        overwritten (``HnswVectors.scrub``). False during a switch: the graph being built
        replays the removals made meanwhile, so it is scrubbed once it takes over."""
        if self.switching:
            return False
        active = self._active
        return True if isinstance(active, ExactVectors) else active.scrub()

    def begin_switch(self) -> Callable[[], HnswVectors]:
        """Start recording writes and return the heavy build for a worker thread."""
        from mnemonic.index.hnsw import HnswVectors

        exact = self._active
        if not isinstance(exact, ExactVectors):
            raise RuntimeError("already on HNSW")
        with self._lock:
            if self._pending is not None:
                raise RuntimeError("a switch is already under way")
            self._pending = _Pending()
        seqs, matrix = exact.rows()
        options = self._hnsw_options
        dim = self._dim

        def build() -> HnswVectors:
            hnsw = HnswVectors(dim, **options)  # type: ignore[arg-type]
            for a in range(0, len(seqs), _LOAD_BLOCK):
                part = seqs[a : a + _LOAD_BLOCK]
                # rows overwritten during the build are replayed from the pending list
                hnsw.set(part, matrix[part])
            return hnsw

        return build

    def finish_switch(self, hnsw: HnswVectors) -> None:
        """Replay the writes made during the build onto ``hnsw``, then search it."""
        with self._lock:
            pending = self._pending
            if pending is None:
                raise RuntimeError("no switch under way")
            for seqs, vectors in pending.ops:
                if vectors is None:
                    hnsw.remove(seqs)
                else:
                    hnsw.set(seqs, vectors)
            self._active = hnsw
            self._pending = None

    def abort_switch(self) -> None:
        """Forget a failed build; the exact index stays and a later switch may retry."""
        with self._lock:
            self._pending = None

    def switch_now(self) -> None:
        """The whole switch in the calling thread (tests, tools)."""
        self.finish_switch(self.begin_switch()())

    def search(
        self, query: F32, k: int, allowed: Mask | None = None, candidates: I64 | None = None
    ) -> Hits:
        return self._active.search(query, k, allowed, candidates)

    def search_many(
        self,
        queries: F32,
        k: int,
        allowed_per_query: Sequence[Mask | None],
        candidates_per_query: Sequence[I64 | None],
    ) -> list[Hits]:
        return self._active.search_many(queries, k, allowed_per_query, candidates_per_query)

    def vectors_for(self, seqs: Sequence[int] | I64) -> dict[int, F32]:
        return self._active.vectors_for(seqs)
