"""Approximate vector search keyed by seq on a usearch HNSW graph, quantised.

Above a few hundred thousand memories the exact float32 matrix is too big for the daemon's
memory budget (1.5 GB at 1M) and too slow per query; an HNSW graph over int8 (or float16)
vectors keeps both small. usearch's Python API takes no filter predicate, so a filter is
served three ways, by cost:

- few rows pass (``exact_rows``): their vectors are fetched and scored exactly;
- a share too small for the graph (it would have to be asked for thousands of neighbours to
  keep k that pass, and a search costs in proportion to the count asked: at 1M 7 ms at 600,
  55 ms at 3,600, 139 ms at 8,192): a **sign scan**. Each vector's signs are kept as bits
  (48 bytes at 384-d, beside the graph); the passing rows' bits are compared with the
  query's by Hamming distance, and the closest few hundred are fetched from the index
  and scored exactly. Its cost grows with the rows that pass, not with the count asked: a
  project of 2% of 1M rows took 111 ms through the graph and takes 6 ms so. On real
  MiniLM embeddings at 1M (``bench/vectors.py``, 5% projects) its recall@10 is 0.984
  against the graph's 0.965, and its p95 7.7 ms against 16.3;
- otherwise the graph, asked first for ``expansion_search`` neighbours (the price of ``k``)
  and again, with more, only when too few of them pass (``_graph``).

int8: usearch turns a float into int8 as ``int(x * 127)``, truncating, and the components
of a 384-d unit vector are mostly below 0.1, so they land on a handful of levels (measured
on real MiniLM embeddings: recall@10 0.95 even for usearch's own brute force). Cosine
ignores scale, so each vector is divided by its largest component and rounded to int8
here, and the index is given int8 arrays: brute-force recall@10 then 0.995, HNSW 0.99.

expansion_search is 512: at 1M vectors (``bench/vectors.py``, real MiniLM embeddings with
noise) recall@10 against exact search is 0.983 at 512 and 0.969 at 256, for about 0.6 ms
more a query; 1024 adds nothing (0.984). Below ``recall.vector_exact_max`` there is no graph.

usearch keeps per-thread search contexts and a mutating call must not overlap a search,
so one lock serialises calls into the index; a search holds it for about a millisecond.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

# usearch 2.26's extension loaded first makes a later `import onnxruntime` (1.32) crash
# with SIGSEGV at import; loaded in this order both work. The embedder needs onnxruntime
# in the same process, so it is loaded here before usearch.
with contextlib.suppress(ImportError):
    import onnxruntime  # noqa: F401
from usearch.index import Index

from mnemonic.distinct import distinct
from mnemonic.index.vectors import (
    F32,
    I64,
    Hits,
    Mask,
    as_seqs,
    check_vectors,
    group_queries,
    last_wins,
    top_k,
    within,
)

QUANTISATIONS = ("i8", "f16", "f32")
_OVERSAMPLE = 3.0
"""What a filtered graph search is expected to ask for: k / (share of rows allowed) x this.
Only the choice between graph and scan uses it; a search sizes its second try by the share
of its first answers that passed."""
_MARGIN = 2.0
"""A second filtered graph search asks for k / (share of the first answers that passed) x
this, so the share's noise rarely needs a third."""
_SCAN_POOL_MIN = 400
_SCAN_POOL_PER_K = 16
"""Rows a sign scan scores exactly: 16 per neighbour asked, at least 400 (recall's 60 entry
points: 960; the encoder's 10 link candidates: 400). On real MiniLM embeddings (200k, a 5%
project) recall@10 against exact float search is 0.969 at 200, 0.983 at 400, 0.989 at
1000, and 0.992 when every passing row is scored from its int8 vector (the quantisation's
own ceiling); fetching 1,000 rows from the index costs about 2 ms, which at one pool per
new memory was a tenth of the encoder's time during a 100k ingest (py-spy)."""
SCAN_RATIO = 120.0
"""Rows a sign scan covers for the cost of one neighbour the graph is expected to be asked
for; the scan is chosen below that. Measured at 1M (k = 60, one query at a time), scan
against graph: a project of 2% of rows 6 / 111 ms, 5% 8 / 50 ms, 9% 11 / 37 ms, 12% 12 /
14 ms, 21% 19 / 11 ms. The crossover lies between 81 and 245 rows per neighbour asked;
below it the scan also has the better recall (``bench/vectors.py``)."""
_MAX_COUNT = 8192
"""Beyond this many neighbours a graph search costs more than it saves (about 50 ms)."""
_LOAD_BLOCK = 16384
SCRUB_MAX = 256
"""Most freed slots :meth:`HnswVectors.scrub` overwrites in one go (see there)."""
_FILLER_KEY = 2**62  # scrub's temporary keys: far above any seq or passage row
Signs = npt.NDArray[np.uint64]


def _normalise(vectors: F32) -> F32:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: F32 = (vectors / norms).astype(np.float32, copy=False)
    return out


class HnswVectors:
    """A usearch HNSW index over seqs with a presence mask; see the module docstring."""

    def __init__(
        self,
        dim: int,
        quantisation: str = "i8",
        connectivity: int = 16,
        expansion_add: int = 128,
        expansion_search: int = 512,
        exact_rows: int = 2048,
        scan_ratio: float = SCAN_RATIO,
        _index: Index | None = None,
        _viewing: Path | None = None,
    ) -> None:
        if quantisation not in QUANTISATIONS:
            raise ValueError(f"quantisation must be one of {QUANTISATIONS}")
        self._dim = dim
        self._quantisation = quantisation
        self.exact_rows = exact_rows
        self.scan_ratio = scan_ratio
        """0 turns the sign scan off (tests of the graph path)."""
        self._index = _index or Index(
            ndim=dim,
            metric="cos",
            dtype=quantisation,
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansion_search,
        )
        self._index.expansion_search = expansion_search  # type: ignore[misc]
        self._viewing = _viewing  # a memory-mapped file: read-only until materialised
        self._present: Mask = np.zeros(1024, dtype=np.bool_)
        self._words = (dim + 63) // 64
        self._signs: Signs = np.zeros((1024, self._words), dtype=np.uint64)
        self._count = 0
        self._lock = threading.Lock()

    # ---- properties ------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def kind(self) -> str:
        return f"usearch-hnsw-{self._quantisation}"

    @property
    def quantisation(self) -> str:
        return self._quantisation

    @property
    def expansion_search(self) -> int:
        return int(self._index.expansion_search)

    @expansion_search.setter
    def expansion_search(self, value: int) -> None:
        with self._lock:
            self._index.expansion_search = value  # type: ignore[misc]

    def __len__(self) -> int:
        return self._count

    def __contains__(self, seq: object) -> bool:
        if not isinstance(seq, int | np.integer):
            return False
        s, present = int(seq), self._present
        return 0 <= s < len(present) and bool(present[s])

    @property
    def nbytes(self) -> int:
        return int(self._index.memory_usage) + int(self._present.nbytes) + self._signs.nbytes

    def describe(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "entries": len(self),
            "bytes": self.nbytes,
            "dim": self.dim,
            "connectivity": int(self._index.connectivity),
            "expansion_search": self.expansion_search,
            "sign_scan": self.scan_ratio > 0,
            "memory_mapped": self._viewing is not None,
        }

    # ---- mutations -------------------------------------------------------------------------

    def _prepare(self, vectors: F32) -> npt.NDArray[np.float32 | np.int8]:
        """Unit vectors; for int8 stretched to the full range and rounded here (see above)."""
        vecs = _normalise(np.asarray(vectors, dtype=np.float32))
        if self._quantisation != "i8":
            return vecs
        peak = np.abs(vecs).max(axis=1, keepdims=True)
        peak[peak == 0] = 1.0
        quantised: npt.NDArray[np.int8] = np.round(vecs * (127.0 / peak)).astype(np.int8)
        return quantised

    def _mark(self, seqs: I64, value: bool, signs: Signs | None = None) -> None:
        """Set presence (and, for added rows, their sign bits) of ``seqs``."""
        present = self._present
        top = int(seqs.max()) if len(seqs) else -1
        if top >= len(present):
            size = max(top + 1, len(present) + len(present) // 4 + 1024)
            grown = np.zeros(size, np.bool_)
            grown[: len(present)] = present
            present = grown
        if len(self._signs) < len(present):
            wider = np.zeros((len(present), self._words), np.uint64)
            wider[: len(self._signs)] = self._signs
            self._signs = wider  # replaced, never resized: searches hold the old one
        if signs is not None:
            self._signs[seqs] = signs
        present[seqs] = value
        self._present = present  # replaced, never resized: searches hold the old one

    def _sign_bits(self, prepared: npt.NDArray[np.float32 | np.int8]) -> Signs:
        """One bit per component (positive or not), packed into ``_words`` uint64 words."""
        packed = np.packbits(prepared > 0, axis=1)
        padded = np.zeros((len(prepared), self._words * 8), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        return padded.view(np.uint64)

    def _signs_from_index(self, keys: I64) -> None:
        """Sign bits of every vector the index holds (an index saved without them)."""
        for a in range(0, len(keys), _LOAD_BLOCK):
            block = keys[a : a + _LOAD_BLOCK]
            self._signs[block] = self._sign_bits(self._fetch(block))  # scaling keeps signs

    @property
    def signs(self) -> Signs:
        """The sign bits by seq, for a checkpoint (rows past the present mask are zero)."""
        return self._signs[: len(self._present)]

    def _materialise(self) -> None:
        """A memory-mapped index cannot change: copy it into memory before the first write."""
        if self._viewing is not None:
            loaded = Index.restore(self._viewing, view=False)
            if loaded is None:
                raise RuntimeError(f"cannot load {self._viewing}")
            loaded.expansion_search = self._index.expansion_search  # type: ignore[misc]
            self._index = loaded
            self._viewing = None

    def materialise(self) -> None:
        """Copy a memory-mapped index into memory now (call it from a worker thread before
        writes arrive, or the first write pays for it). The copy is read outside the lock
        (a mapped index never changes), so searches go on meanwhile."""
        path = self._viewing
        if path is None:
            return
        loaded = Index.restore(path, view=False)
        if loaded is None:
            raise RuntimeError(f"cannot load {path}")
        with self._lock:
            if self._viewing == path:
                loaded.expansion_search = self._index.expansion_search  # type: ignore[misc]
                self._index = loaded
                self._viewing = None

    def set(self, seqs: I64, vectors: F32) -> None:
        seqs = as_seqs(seqs)
        vectors = check_vectors(seqs, vectors, self._dim)
        if not len(seqs):
            return
        seqs, vectors = last_wins(seqs, vectors)
        prepared = self._prepare(vectors)
        with self._lock:
            self._materialise()
            old = within(seqs, self._present)
            if len(old):
                self._index.remove(old.astype(np.uint64))
            self._index.add(seqs.astype(np.uint64), prepared, threads=0)
            self._count += len(seqs) - len(old)
            self._mark(seqs, True, self._sign_bits(prepared))

    def remove(self, seqs: I64) -> None:
        seqs = within(distinct(as_seqs(seqs)), self._present)
        if not len(seqs):
            return
        with self._lock:
            self._materialise()
            self._index.remove(seqs.astype(np.uint64))
            self._count -= len(seqs)
            self._mark(seqs, False)
            self._signs[seqs] = 0  # a checkpoint saves the signs: none of a removed vector

    def scrub(self) -> bool:
        """Overwrite every freed slot of the graph, so a saved file holds nothing of a
        removed vector (a purge): usearch only marks a removed node deleted, and its
        vector bytes stay in the file until an add reuses the slot. Adds reuse freed
        slots while any is left, so one filler vector per freed slot, under keys no seq
        takes, then removed again, leaves filler bytes in every one.

        True when that is checked done: the slot count (``stats.nodes``, live and freed)
        did not grow, so every filler went into a freed slot. False when it grew (a
        usearch that no longer reuses slots) or when more than ``SCRUB_MAX`` slots are
        free (a project purge): the caller must then treat the file as holding purged
        bytes, and a start rebuilds it. Freed slots stay freed after a scrub (they hold
        filler bytes now) until adds reuse them, so a later scrub overwrites them again:
        the count is of every freed slot, not of the last purge's.

        The lock is held throughout, so no search sees a filler and no write lands
        between the adds and the check; writes on the event loop wait for it. Measured
        at 100k 384-d int8 vectors (usearch 2.26): 6 ms for 4 freed slots, 29 ms for 64,
        93 ms for 250, hence the cap. Fillers are random, so the links they take from live
        nodes (lost again when they go) are spread over the graph, not taken around one
        point."""
        with self._lock:
            self._materialise()
            index = self._index
            slots = int(index.stats.nodes)
            freed = slots - len(index)
            if freed <= 0:
                return True
            if freed > SCRUB_MAX:
                return False
            keys = np.arange(_FILLER_KEY, _FILLER_KEY + freed, dtype=np.uint64)
            noise = np.random.default_rng(freed).standard_normal((freed, self._dim))
            try:
                index.add(keys, self._prepare(noise.astype(np.float32)), threads=0)
                return int(index.stats.nodes) == slots
            finally:  # never leave a filler to be found, even when the add failed half-way
                left = keys[np.asarray(index.contains(keys), dtype=np.bool_)]
                if len(left):
                    index.remove(left)

    def load(self, seqs: I64, matrix: F32) -> None:
        """Build from ``matrix[i]`` = vector of ``seqs[i]``, in blocks (no full copy)."""
        seqs = as_seqs(seqs)
        for a in range(0, len(seqs), _LOAD_BLOCK):
            self.set(seqs[a : a + _LOAD_BLOCK], matrix[a : a + _LOAD_BLOCK])

    # ---- files -----------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str], *, exclusive: bool = True) -> None:
        """Write to a temporary file beside ``path``, sync it, then rename over ``path``: a
        reader never sees half a file, and a crash leaves the old one.

        ``exclusive=False`` is for a caller that guarantees nothing changes the index
        meanwhile (the checkpoint holds the database's write lock, and changes are only
        applied after a commit): saving reads the graph only, so searches go on instead of
        waiting for the whole save (seconds at a million vectors)."""
        target = Path(path)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            if exclusive:
                with self._lock:
                    self._index.save(str(tmp))
            else:
                self._index.save(str(tmp))
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        view: bool = False,
        expansion_search: int = 512,
        exact_rows: int = 2048,
        signs: Signs | None = None,
    ) -> HnswVectors:
        """Open a saved index; ``view`` memory-maps it (fast, shared pages; copied into
        memory on the first write). Staleness is the caller's to check. ``signs`` are the
        sign bits saved with it (``signs``); without them (an index saved before they
        existed) they are read back from the index, about 6 s at 1M."""
        target = Path(path)
        index = Index.restore(str(target), view=view)
        if index is None:
            raise ValueError(f"{target} is not a usearch index")
        quantisation = str(index.dtype).rsplit(".", 1)[-1].lower()
        if quantisation not in QUANTISATIONS:
            raise ValueError(f"unsupported quantisation {quantisation}")
        out = cls(
            int(index.ndim),
            quantisation=quantisation,
            expansion_search=expansion_search,
            exact_rows=exact_rows,
            _index=index,
            _viewing=target if view else None,
        )
        keys = np.asarray(index.keys, dtype=np.int64)
        if len(keys):
            if signs is not None:
                if signs.ndim != 2 or signs.shape[1] != out._words or len(signs) <= keys.max():
                    raise ValueError("the sign bits do not match the index")
                out._signs = np.ascontiguousarray(signs, dtype=np.uint64)  # adopted, no copy
            out._mark(keys, True)  # widens the signs only if present outgrows them
            if signs is None:
                out._signs_from_index(keys)
        out._count = len(keys)
        return out

    # ---- searches --------------------------------------------------------------------------

    def _present_vectors(self, seqs: I64) -> tuple[I64, F32]:
        """Those of ``seqs`` still present and their vectors; call with the lock held. A
        search picks its rows without the lock, and a row removed since (a forget on the
        writer's thread) has no vector left to fetch."""
        keep = within(seqs, self._present)
        return keep, self._fetch(keep)

    def _fetch(self, seqs: I64) -> F32:
        """Unit float32 vectors of present ``seqs`` (decoded from the index's dtype)."""
        if not len(seqs):
            return np.zeros((0, self._dim), dtype=np.float32)
        got = self._index.get(seqs.astype(np.uint64), dtype="f32")
        if not isinstance(got, tuple):
            raise RuntimeError("usearch returned no batch")
        rows = cast(tuple[F32, ...], got)  # present seqs only (``_present_vectors``)
        return _normalise(np.concatenate(rows).reshape(len(seqs), self._dim))

    def vectors_for(self, seqs: Sequence[int] | I64) -> dict[int, F32]:
        with self._lock:
            keep, vecs = self._present_vectors(as_seqs(seqs))
        return {int(s): v for s, v in zip(keep, vecs, strict=True)}

    def search(
        self, query: F32, k: int, allowed: Mask | None = None, candidates: I64 | None = None
    ) -> Hits:
        return self.search_many(np.asarray(query).reshape(1, -1), k, [allowed], [candidates])[0]

    def search_many(
        self,
        queries: F32,
        k: int,
        allowed_per_query: Sequence[Mask | None],
        candidates_per_query: Sequence[I64 | None],
    ) -> list[Hits]:
        """Per group of queries sharing their arrays: an exact product over few allowed
        rows, a sign scan or a graph search (filtered) otherwise, as ``_search_group``
        chooses."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self._dim:
            raise ValueError(f"queries must have shape [b, {self._dim}]")
        if len(queries) != len(allowed_per_query) or len(queries) != len(candidates_per_query):
            raise ValueError("one allowed and one candidates entry per query")
        out: list[Hits] = [[] for _ in range(len(queries))]
        if k <= 0 or not self._count:
            return out
        for positions in group_queries(allowed_per_query, candidates_per_query).values():
            i0 = positions[0]
            block = queries[positions]
            hits = self._search_group(block, k, allowed_per_query[i0], candidates_per_query[i0])
            for pos, h in zip(positions, hits, strict=True):
                out[pos] = h
        return out

    def _search_group(
        self, block: F32, k: int, allowed: Mask | None, candidates: I64 | None
    ) -> list[Hits]:
        present = self._present
        if candidates is None and allowed is None:
            return self._graph(block, k, None, self._count)
        # one pass over a bool array, not a sort of the candidates (a project's 210k seqs)
        mask = np.zeros(len(present), dtype=np.bool_)
        if candidates is not None:
            mask[within(as_seqs(candidates), present)] = True
        else:
            mask[:] = present
        if allowed is not None:
            m = min(len(present), len(allowed))
            mask[:m] &= allowed[:m]
            mask[m:] = False
        rows = np.flatnonzero(mask).astype(np.int64)
        if not len(rows):
            return [[] for _ in range(len(block))]
        if len(rows) <= self.exact_rows:
            return self._exact(block, k, rows)
        if self._scan_pays(k, len(rows)):
            return self._scan(block, k, rows)
        return self._graph(block, k, mask, len(rows))

    def _scan_pays(self, k: int, passing: int) -> bool:
        """The sign scan over ``passing`` rows costs less than the expected graph search."""
        if self.scan_ratio <= 0:
            return False
        asked = max(self.expansion_search, k * self._count / passing * _OVERSAMPLE)
        return passing < asked * self.scan_ratio

    def _scan(self, block: F32, k: int, rows: I64) -> list[Hits]:
        """Hamming distance of the rows' sign bits to each query's, then the pool nearest
        scored exactly (see ``_SCAN_POOL_PER_K``)."""
        signs = self._signs  # a reference: a write replaces the array, never resizes it
        held = np.take(signs, rows, axis=0)  # 6x faster than signs[rows]
        query_signs = self._sign_bits(self._prepare(block))
        units = _normalise(block)
        pool = max(_SCAN_POOL_MIN, _SCAN_POOL_PER_K * k)
        out: list[Hits] = []
        for j in range(len(block)):
            bits = np.bitwise_count(held ^ query_signs[j])
            distance = bits[:, 0].astype(np.int32)
            for word in range(1, self._words):  # faster than a sum over a 6-wide axis
                distance += bits[:, word]
            near = rows if len(rows) <= pool else rows[np.argpartition(distance, pool)[:pool]]
            with self._lock:
                near, vecs = self._present_vectors(near)
            out.append(top_k(vecs @ units[j], near, k))
        return out

    def _exact(self, block: F32, k: int, rows: I64) -> list[Hits]:
        with self._lock:
            rows, vecs = self._present_vectors(rows)
        scores = _normalise(block) @ vecs.T
        return [top_k(scores[j], rows, k) for j in range(len(block))]

    def _graph(self, block: F32, k: int, mask: Mask | None, passing: int) -> list[Hits]:
        """The graph's ``k`` nearest, or with a mask its nearest that pass, best first.

        A filtered search first asks for ``expansion_search`` neighbours: the graph visits
        that many candidates whatever the count asked, so they come at the price of ``k``,
        and a query about a project finds its rows among its neighbours more often than
        the project's share of all rows. When ``k`` of them pass, they are the best passing
        rows the graph can rank (anything it ranks lower is below all of them). Otherwise
        it asks again for ``k`` over the share that passed (or, when none did, the share
        of rows the mask allows) times ``_MARGIN``, then four times more each round up to
        ``_MAX_COUNT``."""
        total = max(self._count, 1)
        cap = min(total, _MAX_COUNT)
        want = k if mask is None else max(k, min(self.expansion_search, cap))
        prepared = self._prepare(block)
        out: list[Hits] = [[] for _ in range(len(block))]
        todo = list(range(len(block)))
        first = True
        while todo:
            with self._lock:
                found = self._index.search(prepared[todo], want, threads=1)
            keys = np.asarray(found.keys).reshape(len(todo), -1)
            dists = np.asarray(found.distances).reshape(len(todo), -1)
            counts = np.asarray(getattr(found, "counts", [len(keys[0])])).reshape(-1)
            again: list[int] = []
            grow = want * (2 if first else 4)
            for j, pos in enumerate(todo):
                seqs = keys[j, : counts[j]].astype(np.int64)
                scores = 1.0 - dists[j, : counts[j]]
                if mask is None and len(seqs) and seqs.max() >= _FILLER_KEY:  # a scrub's
                    real = seqs < _FILLER_KEY
                    seqs, scores = seqs[real], scores[real]
                if mask is not None:
                    ok = seqs < len(mask)
                    ok[ok] = mask[seqs[ok]]
                    seqs, scores = seqs[ok], scores[ok]
                out[pos] = [(int(s), float(c)) for s, c in zip(seqs[:k], scores[:k], strict=True)]
                if len(out[pos]) < min(k, passing) and counts[j] >= want:
                    again.append(pos)
                    if first:  # size the second search by the share that passed
                        share = len(seqs) / counts[j] if len(seqs) else passing / total
                        grow = max(grow, math.ceil(k / share * _MARGIN))
            if not again or want >= cap:
                break
            todo, want, first = again, min(grow, cap), False
        return out
