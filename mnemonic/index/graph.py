"""The association graph in memory, so spreading activation runs no SQL per query.

Edges are undirected, typed and weighted: one edge per unordered pair of seqs and relation,
as the ``associations`` table stores them. The graph has three layers, newest first:

- ``live``: a small mutable overlay of edges written since the last compaction began;
- ``frozen``: the overlay a compaction under way is folding in (read-only, usually absent);
- ``base``: an immutable CSR (compressed sparse rows) holding every edge in both directions,
  so the edges touching a seq are one contiguous slice. At 1M memories and 8M edges that is
  9 bytes per direction (int32 other end, int8 relation, float32 strength): 152 MB.

An overlay is ``{seq: {(other seq, relation code): strength}}`` holding both directions of
each edge; strength NaN is a tombstone (the edge was removed). A key found in a newer layer
hides the same key in older ones, so a read is "base slice, minus keys the overlays name,
plus the overlays' live entries".

Compaction folds the overlay into a new CSR in three steps, so the heavy middle step can run
in a worker thread while the event loop keeps mutating::

    job = graph.compaction_input()   # cheap: freezes the live overlay, starts a new one
    csr = build_csr(job)             # heavy, pure: O(edges) array work, no locks
    graph.install(job, csr)          # cheap: the new base replaces base + frozen layer

Mutations made between the first and last step land in the new live overlay, which sits
above both the frozen layer and the new base, so none is lost. If ``build_csr`` fails, call
``graph.abandon(job)`` to fold the frozen layer back into the live one.

Threads: mutations (``upsert``, ``remove_*``, ``compaction_input``, ``install``,
``abandon``) come from one thread at a time; reads may run in worker threads concurrently.
Every mutation of the live overlay and every read of it holds ``_lock`` briefly (reads copy
the few rows they need while holding it, then work on the copies); base and frozen layers
are never changed in place, only replaced under the lock, so a read that took references to
them works on one consistent state.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemonic.distinct import distinct
from mnemonic.store.models import Relation

RELATIONS: tuple[str, ...] = tuple(r.value for r in Relation)
"""Relation names in enum order; a relation's code (int8) is its index here."""
RELATION_CODES: dict[str, int] = {name: code for code, name in enumerate(RELATIONS)}

MAX_SEQ = 2**30 - 1
"""Largest seq the graph takes: (seq, other, relation) packs into one int64 key."""

COMPACT_MIN_ENTRIES = 10_000
COMPACT_FRACTION = 0.01
"""Compaction is due when the overlay holds more than max(10,000, 1% of edges) keys.

An overlay key costs ~600 bytes of Python objects (both directions; measured with
tracemalloc) against 18 in the CSR, and a read pays a dict lookup per frontier seq plus a
mask over the overlay rows it meets (a 40-seq ``neighbours`` at 1M nodes: 0.05 ms with no
overlay, 0.11 ms with 10,000 keys). A compaction is one O(edges) pass in a worker thread:
at 8M edges ~0.16 s CPU with 10,000 keys, ~0.8 s with 80,000. At 20 writes/s with ~10
links each, 1% of 8M edges is ~7 minutes of writes and ~50 MB of overlay; at 100k memories
the 10,000 floor means a compaction of a few tens of ms about once a minute.
"""

_OVERLAY_BYTES_PER_KEY = 600  # measured: two dict slots, tuple keys, boxed ints, row dicts

Seqs = npt.NDArray[np.int64]
Codes = npt.NDArray[np.int8]
Strengths = npt.NDArray[np.float32]
Edges = tuple[Seqs, Seqs, Codes, Strengths]
"""(source, target, relation code, strength), one entry per directed edge."""
Overlay = dict[int, dict[tuple[int, int], float]]


@dataclass(frozen=True, slots=True, eq=False)
class Csr:
    """Every edge in both directions; row ``seq`` is ``[indptr[seq], indptr[seq + 1])``."""

    indptr: npt.NDArray[np.int64]  # length nodes + 1
    other: npt.NDArray[np.int32]  # the far end of each directed entry
    relation: Codes
    strength: Strengths

    @property
    def nodes(self) -> int:
        return len(self.indptr) - 1

    @property
    def nbytes(self) -> int:
        arrays = (self.indptr, self.other, self.relation, self.strength)
        return sum(int(a.nbytes) for a in arrays)


EMPTY_CSR = Csr(
    np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int8), np.zeros(0, np.float32)
)


@dataclass(frozen=True, slots=True, eq=False)
class CompactionInput:
    """What :func:`build_csr` folds together; also the ticket :meth:`install` checks."""

    base: Csr
    overlay: Overlay  # frozen: nothing writes to it any more


def _key(rows: Seqs, others: Seqs, codes: npt.NDArray[Any]) -> Seqs:
    """One int64 per (row, other, relation), for set membership tests."""
    return (rows << 33) | (others << 3) | codes.astype(np.int64)


def _gather(indptr: npt.NDArray[np.int64], seqs: Seqs) -> tuple[Seqs, Seqs]:
    """(row seq, position) of every base entry in the rows ``seqs`` (vectorised slices)."""
    seqs = seqs[(seqs >= 0) & (seqs < len(indptr) - 1)]
    starts = indptr[seqs]
    lengths = indptr[seqs + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty
    offsets = np.cumsum(lengths) - lengths
    positions = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, lengths)
    return np.repeat(seqs, lengths), positions


def _check_seqs(*arrays: npt.NDArray[Any]) -> None:
    for a in arrays:
        if len(a) and (int(a.min()) < 0 or int(a.max()) > MAX_SEQ):
            raise ValueError(f"seqs must lie in [0, {MAX_SEQ}]")


def build_base(
    source: npt.ArrayLike, target: npt.ArrayLike, relation: npt.ArrayLike, strength: npt.ArrayLike
) -> Csr:
    """A CSR from one entry per undirected edge (pure; run it in a worker thread).

    Each (unordered pair, relation) must appear once, as the table's primary key and
    low-high storage guarantee; a duplicate is kept as a second edge, as SQL would return it.
    Relation names map to codes through :data:`RELATION_CODES`. Peak extra memory is ~1.8x
    the result (8M edges: 267 MB for a 145 MB graph; the sort order, then one column being
    permuted); no second copy of the input is made, and the caller may drop it afterwards.
    """
    src, tgt = np.asarray(source), np.asarray(target)
    rel, st = np.asarray(relation), np.asarray(strength)
    count = len(src)
    if not (src.ndim == tgt.ndim == rel.ndim == st.ndim == 1) or not (
        len(tgt) == len(rel) == len(st) == count
    ):
        raise ValueError("edge arrays must be one-dimensional and of equal length")
    if count == 0:
        return EMPTY_CSR
    _check_seqs(src, tgt)
    if int(rel.min()) < 0 or int(rel.max()) >= len(RELATIONS):
        raise ValueError("relation codes must index RELATIONS")
    if np.any(src == tgt):
        raise ValueError("an association needs two different memories")
    nodes = int(max(src.max(), tgt.max())) + 1
    rows = np.empty(2 * count, np.int32)
    rows[:count], rows[count:] = src, tgt
    indptr = np.zeros(nodes + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=nodes), out=indptr[1:])
    # the order inside a row does not matter, so the fast unstable sort does
    order = np.argsort(rows).astype(np.int32)
    del rows
    return Csr(
        indptr,
        _both_ways(tgt, src, np.int32, order),
        _both_ways(rel, rel, np.int8, order),
        _both_ways(st, st, np.float32, order),
    )


def _both_ways(
    first: npt.NDArray[Any], second: npt.NDArray[Any], dtype: Any, order: npt.NDArray[np.int32]
) -> Any:
    column = np.empty(len(first) + len(second), dtype)
    column[: len(first)], column[len(first) :] = first, second
    return column[order]


def build_csr(job: CompactionInput) -> Csr:
    """The base of ``job`` with its overlay folded in (pure; O(edges) array passes).

    Kept base entries keep their order; each row's overlay entries go at the row's end.
    """
    base, overlay = job.base, job.overlay
    if not overlay:
        return base
    rows_l: list[int] = []
    others_l: list[int] = []
    codes_l: list[int] = []
    values_l: list[float] = []
    for seq, row in overlay.items():
        for (other, code), value in row.items():
            rows_l.append(seq)
            others_l.append(other)
            codes_l.append(code)
            values_l.append(value)
    rows, others = np.array(rows_l, np.int64), np.array(others_l, np.int64)
    codes, values = np.array(codes_l, np.int8), np.array(values_l, np.float32)
    # base entries an overlay key hides
    base_rows, base_pos = _gather(base.indptr, distinct(rows))
    hidden = np.isin(
        _key(base_rows, base.other[base_pos].astype(np.int64), base.relation[base_pos]),
        _key(rows, others, codes),
    )
    drop_rows, drop_pos = base_rows[hidden], base_pos[hidden]
    alive = ~np.isnan(values)
    rows, others, codes, values = rows[alive], others[alive], codes[alive], values[alive]
    order = np.lexsort((others, rows))
    rows, others, codes, values = rows[order], others[order], codes[order], values[order]

    nodes = max(base.nodes, int(rows.max()) + 1 if len(rows) else 0)
    added = np.bincount(rows, minlength=nodes)
    degree = added - np.bincount(drop_rows, minlength=nodes)
    degree[: base.nodes] += np.diff(base.indptr)
    indptr = np.zeros(nodes + 1, np.int64)
    np.cumsum(degree, out=indptr[1:])
    # each row's added entries take its last slots; kept base entries fill the rest in order
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
    slots = indptr[rows + 1] - added[rows] + rank
    kept = np.ones(int(indptr[-1]), np.bool_)
    kept[slots] = False
    keep = np.ones(len(base.other), np.bool_)
    keep[drop_pos] = False

    def merged(old: npt.NDArray[Any], new: npt.NDArray[Any]) -> Any:
        out = np.empty(len(kept), old.dtype)
        out[kept] = old[keep] if len(drop_pos) else old
        out[slots] = new
        return out

    return Csr(
        indptr,
        merged(base.other, others),
        merged(base.relation, codes),
        merged(base.strength, values),
    )


class AssociationGraph:
    """Undirected weighted typed edges between seqs: CSR base plus mutable overlay."""

    def __init__(self, base: Csr = EMPTY_CSR) -> None:
        self._lock = threading.Lock()
        self._base = base
        self._frozen: Overlay | None = None
        self._frozen_keys = 0
        self._live: Overlay = {}
        self._live_keys = 0  # undirected keys (edges or tombstones) in the live overlay
        self._edges = len(base.other) // 2

    @classmethod
    def build(
        cls,
        source: npt.ArrayLike,
        target: npt.ArrayLike,
        relation: npt.ArrayLike,
        strength: npt.ArrayLike,
    ) -> AssociationGraph:
        """The graph of one row per stored association (relation as codes; see
        :func:`build_base`)."""
        return cls(build_base(source, target, relation, strength))

    # ---- reads -----------------------------------------------------------------------
    def neighbours(self, seqs: npt.ArrayLike) -> Edges:
        """Every edge touching any of ``seqs``, oriented outward (source in ``seqs``).

        An edge between two of ``seqs`` comes back once in each direction, as the SQL
        ``neighbours`` returns it. Order is unspecified.
        """
        wanted = distinct(np.asarray(seqs, dtype=np.int64))
        with self._lock:
            base, frozen = self._base, self._frozen
            live = [(s, dict(self._live[s])) for s in wanted.tolist() if s in self._live]
        rows = self._overlay_rows(wanted, frozen, live)
        base_rows, pos = _gather(base.indptr, wanted)
        source, target = base_rows, base.other[pos].astype(np.int64)
        relation, strength = base.relation[pos], base.strength[pos]
        if not rows:
            return source, target, relation, strength
        o_src, o_tgt, o_rel, o_st = _flatten(rows)
        visible = ~np.isin(_key(source, target, relation), _key(o_src, o_tgt, o_rel))
        alive = ~np.isnan(o_st)
        return (
            np.concatenate((source[visible], o_src[alive])),
            np.concatenate((target[visible], o_tgt[alive])),
            np.concatenate((relation[visible], o_rel[alive])),
            np.concatenate((strength[visible], o_st[alive])),
        )

    @staticmethod
    def _overlay_rows(
        wanted: Seqs, frozen: Overlay | None, live: list[tuple[int, dict[tuple[int, int], float]]]
    ) -> dict[int, dict[tuple[int, int], float]]:
        """Overlay rows of ``wanted`` with the live layer over the frozen one."""
        rows: dict[int, dict[tuple[int, int], float]] = {}
        if frozen:
            rows = {s: dict(frozen[s]) for s in wanted.tolist() if s in frozen}
        for seq, row in live:
            rows.setdefault(seq, {}).update(row)
        return rows

    def edges_of(self, seq: int) -> Edges:
        return self.neighbours(np.array([seq], np.int64))

    def strength(self, source: int, target: int, relation_code: int) -> float | None:
        """The stored strength of one edge (either orientation), None if absent."""
        with self._lock:
            value = self._live.get(source, {}).get((target, relation_code))
            base, frozen = self._base, self._frozen
        return self._lookup(source, target, relation_code, value, base, frozen)

    @staticmethod
    def _lookup(
        source: int, target: int, code: int, live: float | None, base: Csr, frozen: Overlay | None
    ) -> float | None:
        value = live
        if value is None and frozen is not None:
            value = frozen.get(source, {}).get((target, code))
        if value is None and 0 <= source < base.nodes:
            lo, hi = int(base.indptr[source]), int(base.indptr[source + 1])
            hit = np.flatnonzero((base.other[lo:hi] == target) & (base.relation[lo:hi] == code))
            value = float(base.strength[lo + int(hit[0])]) if len(hit) else None
        return None if value is None or math.isnan(value) else value

    def _current(self, source: int, target: int, code: int) -> float | None:
        """Like :meth:`strength`, without the lock: only the mutating thread calls it."""
        live = self._live.get(source, {}).get((target, code))
        return self._lookup(source, target, code, live, self._base, self._frozen)

    @property
    def edge_count(self) -> int:
        return self._edges

    @property
    def overlay_size(self) -> int:
        """Undirected keys (edges or tombstones) held outside the CSR."""
        return self._live_keys + self._frozen_keys

    @property
    def needs_compaction(self) -> bool:
        """True when the overlay outgrew its budget and no compaction is under way."""
        budget = max(COMPACT_MIN_ENTRIES, COMPACT_FRACTION * self._edges)
        return self._frozen is None and self._live_keys > budget

    @property
    def nbytes(self) -> int:
        """CSR bytes plus an estimate of the overlay's Python objects."""
        return self._base.nbytes + _OVERLAY_BYTES_PER_KEY * self.overlay_size

    def describe(self) -> dict[str, object]:
        return {
            "kind": "csr",
            "entries": self._edges,
            "edges": self._edges,
            "nodes": self._base.nodes,
            "overlay": self.overlay_size,
            "compacting": self._frozen is not None,
            "bytes": self.nbytes,
        }

    # ---- mutations (one thread at a time) -------------------------------------------
    def upsert(self, source: int, target: int, relation_code: int, strength: float) -> None:
        """Set an edge's strength (the value SQLite now stores), adding the edge if new."""
        _check_edge(source, target, relation_code)
        if not 0.0 <= strength <= 1.0:
            raise ValueError("strength must lie in [0, 1]")
        value = float(np.float32(strength))  # what the CSR will hold once compacted
        if self._current(source, target, relation_code) is None:
            self._edges += 1
        with self._lock:
            self._put(source, target, relation_code, value)

    def remove_edge(self, source: int, target: int, relation_code: int) -> bool:
        """Drop one edge (either orientation); False if it was not there."""
        _check_edge(source, target, relation_code)
        if self._current(source, target, relation_code) is None:
            return False
        self._edges -= 1
        with self._lock:
            self._put(source, target, relation_code, math.nan)
        return True

    def remove_node(self, seq: int) -> int:
        """Drop every edge touching ``seq`` (a purge); returns how many went."""
        _, others, codes, _ = self.edges_of(seq)
        with self._lock:
            for other, code in zip(others.tolist(), codes.tolist(), strict=True):
                self._put(seq, other, code, math.nan)
        self._edges -= len(others)
        return len(others)

    def _put(self, a: int, b: int, code: int, value: float) -> None:
        row_a = self._live.setdefault(a, {})
        if (b, code) not in row_a:
            self._live_keys += 1
        row_a[(b, code)] = value
        self._live.setdefault(b, {})[(a, code)] = value

    # ---- compaction -----------------------------------------------------------------
    def compaction_input(self) -> CompactionInput:
        """Freeze the live overlay for :func:`build_csr`; later writes go to a new one."""
        with self._lock:
            if self._frozen is not None:
                raise RuntimeError("a compaction is already under way")
            job = CompactionInput(self._base, self._live)
            self._frozen, self._frozen_keys = self._live, self._live_keys
            self._live, self._live_keys = {}, 0
        return job

    def install(self, job: CompactionInput, csr: Csr) -> None:
        """Swap in ``build_csr(job)``: it replaces the base and the frozen overlay."""
        with self._lock:
            if job.base is not self._base or job.overlay is not self._frozen:
                raise RuntimeError("this compaction is not the one under way")
            self._base, self._frozen, self._frozen_keys = csr, None, 0

    def abandon(self, job: CompactionInput) -> None:
        """Give up a compaction: its frozen overlay goes back under the live one."""
        with self._lock:
            if job.overlay is not self._frozen:
                raise RuntimeError("this compaction is not the one under way")
            # a copy: readers may still hold the frozen layer and must never see it change
            live = {seq: dict(row) for seq, row in self._frozen.items()}
            self._live_keys = self._frozen_keys
            for seq, row in self._live.items():
                target = live.setdefault(seq, {})
                for key, value in row.items():
                    if key not in target and seq < key[0]:
                        self._live_keys += 1
                    target[key] = value
            self._live, self._frozen, self._frozen_keys = live, None, 0

    def compact(self) -> None:
        """All three compaction steps at once (blocks for the O(edges) build)."""
        job = self.compaction_input()
        self.install(job, build_csr(job))

    def export(self) -> Csr:
        """The CSR holding every edge, for a snapshot (``index/snapshot.py``; the
        constructor takes it back). The overlay is folded in first, so removed edges are
        gone from it; raises if a compaction is under way or the edge count disagrees."""
        if self.overlay_size:
            self.compact()
        with self._lock:
            if self.overlay_size:
                raise RuntimeError("the graph changed while it was exported")
            base = self._base
        if len(base.other) != 2 * self._edges:
            raise RuntimeError("the graph's edge count disagrees with its CSR")
        return base


def _check_edge(source: int, target: int, code: int) -> None:
    if source == target or not (0 <= source <= MAX_SEQ and 0 <= target <= MAX_SEQ):
        raise ValueError("an association joins two different seqs in range")
    if not 0 <= code < len(RELATIONS):
        raise ValueError("relation codes must index RELATIONS")


def _flatten(rows: Mapping[int, Mapping[tuple[int, int], float]]) -> Edges:
    flat = [(s, o, c, v) for s, row in rows.items() for (o, c), v in row.items()]
    return (
        np.array([f[0] for f in flat], np.int64),
        np.array([f[1] for f in flat], np.int64),
        np.array([f[2] for f in flat], np.int8),
        np.array([f[3] for f in flat], np.float32),
    )


def relation_weights(weights: Mapping[str, float]) -> npt.NDArray[np.float64]:
    """Per-relation weights as an array indexed by relation code (missing = 0)."""
    return np.array([float(weights.get(name, 0.0)) for name in RELATIONS], np.float64)
