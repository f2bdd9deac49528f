"""Patterns as a recall signal: a query that matches a pattern lifts the pattern's evidence.

The abstraction agent finds patterns (recurring themes) and records which memories are
their evidence. Recall uses them the way a person uses a theme they have noticed: a
question about "what does Melanie do with her family" recalls the camping trip, the beach
and the swim although none of them says "family activity", because they were seen together
as one theme. Each pattern is held as the centroid of its evidence vectors (unit length),
so matching a query is one small matrix-vector product (patterns are capped at a few
hundred), no SQL and no per-query embedding work beyond the query's own.

Only a few strong matches count (``top``), each above a cosine ``threshold``; the lift of an
evidence memory is ``similarity x strength`` of the best pattern holding it. The pipeline
adds it as the ``pattern`` signal, explained with the pattern's id and title. The daemon
reloads the set after every abstraction cycle and on a dismissal (``load``); between loads a
purged or archived evidence memory is masked out by the query's ``allowed`` array.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class PatternEvidence:
    """What recall needs of one active pattern."""

    id: str
    title: str
    strength: float
    seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PatternMatch:
    """A memory lifted by a pattern the query matched."""

    lift: float
    pattern_id: str
    title: str


class PatternSet:
    """The active patterns' centroids and evidence, swapped whole on each load."""

    def __init__(self) -> None:
        self._centroids: F32 = np.zeros((0, 0), np.float32)
        self._patterns: tuple[PatternEvidence, ...] = ()
        self._evidence: tuple[I64, ...] = ()

    def __len__(self) -> int:
        return len(self._patterns)

    def load(
        self,
        patterns: Sequence[PatternEvidence],
        vectors_for: Callable[[Sequence[int]], Mapping[int, npt.NDArray[np.generic]]],
    ) -> int:
        """Replace the set; a pattern none of whose evidence has a vector is left out.
        Returns how many patterns are held."""
        kept: list[PatternEvidence] = []
        centroids: list[F32] = []
        evidence: list[I64] = []
        for pattern in patterns:
            found = vectors_for(list(pattern.seqs))
            if not found:
                continue
            matrix = np.stack([np.asarray(v, np.float32) for v in found.values()])
            centroid = matrix.mean(axis=0)
            norm = float(np.linalg.norm(centroid))
            if norm == 0.0:
                continue
            kept.append(pattern)
            centroids.append((centroid / norm).astype(np.float32))
            evidence.append(np.fromiter(found.keys(), np.int64, len(found)))
        # one assignment each, so a concurrent query sees the old set or the new one
        self._centroids = np.stack(centroids) if centroids else np.zeros((0, 0), np.float32)
        self._evidence = tuple(evidence)
        self._patterns = tuple(kept)
        return len(kept)

    def match(
        self, query: F32, allowed: BoolArray, *, threshold: float, top: int
    ) -> dict[int, PatternMatch]:
        """Evidence memories of the ``top`` patterns whose centroid is at least
        ``threshold`` similar to the (unit) query vector, each with its best lift."""
        centroids, patterns, evidence = self._centroids, self._patterns, self._evidence
        if not patterns or top <= 0 or centroids.shape[1] != query.shape[-1]:
            return {}
        sims = centroids @ np.asarray(query, np.float32).reshape(-1)
        order = np.argsort(-sims)[:top]
        out: dict[int, PatternMatch] = {}
        for i in order:
            sim = float(sims[i])
            if sim < threshold:
                break
            pattern = patterns[int(i)]
            lift = sim * pattern.strength
            seqs = evidence[int(i)]
            seqs = seqs[seqs < len(allowed)]
            for seq in seqs[allowed[seqs]].tolist():
                held = out.get(seq)
                if held is None or held.lift < lift:
                    out[seq] = PatternMatch(lift, pattern.id, pattern.title)
        return out
