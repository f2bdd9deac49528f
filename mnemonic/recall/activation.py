"""Spreading activation over the association graph.

Seeds are the strongest direct hits. Each hop passes ``activation x decay x relation weight
x edge strength`` along every edge; within a hop a node takes its strongest arrival (summing
let hubs with many weak links outrank a memory with one strong link: R@10 0.664 against
0.679 on the LoCoMo dev split), and arrivals over successive hops add up, capped at 1.
Work is bounded by hops, a relative threshold, the frontier size and a node budget, so a
dense graph cannot make a query slow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mnemonic.index.graph import RELATIONS, AssociationGraph, relation_weights
from mnemonic.store.models import Association

Fetch = Callable[[Sequence[int]], Awaitable[list[Association]]]


@dataclass(frozen=True, slots=True)
class SpreadSettings:
    hops: int
    decay: float
    threshold: float
    max_nodes: int
    frontier: int
    relation_weights: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Arrival:
    """The edge that brought a node the most activation: the node it came from, the
    relation and strength of that edge when it was crossed, and the hop (1 = the node is a
    neighbour of a seed). It is the path ``explain`` shows, with no second look-up."""

    source: int
    relation: str
    strength: float
    hop: int


@dataclass(slots=True)
class Spread:
    activation: dict[int, float] = field(default_factory=dict)
    arrivals: dict[int, Arrival] = field(default_factory=dict)
    hops_run: int = 0
    edges_seen: int = 0

    @property
    def via(self) -> dict[int, tuple[int, int]]:
        """(source, target) of each reached node's arrival edge (feedback strengthens it)."""
        return {target: (a.source, target) for target, a in self.arrivals.items()}


async def spread(seeds: Mapping[int, float], fetch: Fetch, settings: SpreadSettings) -> Spread:
    """Activation that flows from ``seeds`` (seq -> strength in [0, 1]) to other nodes.

    The seeds' own strengths are not included in the result; ``arrivals`` (and ``via``)
    name, for each node, the edge that brought it the most activation (feedback strengthens
    those edges, ``explain`` shows them).
    """
    result = Spread()
    if not seeds or settings.hops <= 0:
        return result
    floor = settings.threshold * max(seeds.values())
    frontier = _strongest(seeds, settings.frontier)
    best_in: dict[int, float] = {}
    for _ in range(settings.hops):
        edges = await fetch(list(frontier))
        result.hops_run += 1
        result.edges_seen += len(edges)
        # target -> strongest (amount, source, relation, edge strength)
        arriving: dict[int, tuple[float, int, str, float]] = {}
        for edge in edges:
            source_level = frontier.get(edge.source_seq)
            if source_level is None:
                continue
            weight = settings.relation_weights.get(edge.relation, 0.0)  # StrEnum == str key
            amount = source_level * settings.decay * weight * edge.strength
            if amount < floor or amount <= 0:
                continue
            best = arriving.get(edge.target_seq)
            if best is None or amount > best[0]:
                arriving[edge.target_seq] = (amount, edge.source_seq, edge.relation, edge.strength)
        ordered = sorted(arriving.items(), key=lambda kv: -kv[1][0])  # stable: row order
        hop = [(target, *arrival) for target, arrival in ordered]
        frontier = _strongest(_admit(hop, result, best_in, settings), settings.frontier)
        if not frontier:
            break
    return result


Hop = list[tuple[int, float, int, str, float]]
"""One hop's arrivals: (target, amount, source, relation, edge strength)."""


def _admit(
    hop: Hop, result: Spread, best_in: dict[int, float], settings: SpreadSettings
) -> dict[int, float]:
    """Record one hop's arrivals (strongest first, one per target): ``arrivals`` keeps the
    strongest over all hops, activation adds up to 1 within the node budget. Returns what
    reached each node this hop (the next frontier's candidates). Shared by both spreads so
    they cannot drift apart."""
    for target, amount, source, relation, strength in hop:
        if amount > best_in.get(target, 0.0):
            best_in[target] = amount
            result.arrivals[target] = Arrival(source, str(relation), strength, result.hops_run)
    reached: dict[int, float] = {}
    for target, amount, *_ in hop:
        if target not in result.activation and len(result.activation) >= settings.max_nodes:
            break
        result.activation[target] = min(1.0, result.activation.get(target, 0.0) + amount)
        reached[target] = amount
    return reached


def _strongest(levels: Mapping[int, float], n: int) -> dict[int, float]:
    return dict(sorted(levels.items(), key=lambda kv: -kv[1])[:n])


def spread_arrays(
    seeds: Mapping[int, float],
    graph: AssociationGraph,
    allowed: npt.NDArray[np.bool_] | None,
    settings: SpreadSettings,
) -> Spread:
    """What :func:`spread` computes when its fetch returns the edges of ``graph`` whose other
    end is ``allowed`` (bool array indexed by seq, shorter = not allowed; None = all), with
    each hop's edge work done in numpy instead of a Python loop over ``Association`` rows.

    The arithmetic is the same float64 expression in the same order, so results are equal
    bit for bit. Only exact ties can differ, where :func:`spread` follows SQL's row order
    (arbitrary): among equal arrivals this admits the lower seq first when the node budget
    or the frontier cuts, and ``arrivals`` may name another of the equally strong edges.
    """
    result = Spread()
    if not seeds or settings.hops <= 0:
        return result
    floor = settings.threshold * max(seeds.values())
    weights = relation_weights(settings.relation_weights)
    frontier = _strongest(seeds, settings.frontier)
    best_in: dict[int, float] = {}
    for _ in range(settings.hops):
        hop = _arrivals(frontier, graph, allowed, weights, settings.decay, floor, result)
        frontier = _strongest(_admit(hop, result, best_in, settings), settings.frontier)
        if not frontier:
            break
    return result


def _arrivals(
    frontier: Mapping[int, float],
    graph: AssociationGraph,
    allowed: npt.NDArray[np.bool_] | None,
    weights: npt.NDArray[np.float64],
    decay: float,
    floor: float,
    result: Spread,
) -> Hop:
    """One hop: each reached node's strongest arrival, the node it came from and the edge,
    strongest first (equal amounts: lower seq first)."""
    seqs = np.fromiter(frontier.keys(), np.int64, len(frontier))
    levels = np.fromiter(frontier.values(), np.float64, len(frontier))
    source, target, relation, strength = graph.neighbours(seqs)
    if allowed is not None:
        inside = target < len(allowed)
        inside[inside] = allowed[target[inside]]
        source, target, relation, strength = (
            source[inside],
            target[inside],
            relation[inside],
            strength[inside],
        )
    result.hops_run += 1
    result.edges_seen += len(target)
    by_seq = np.argsort(seqs)
    level = levels[by_seq][np.searchsorted(seqs[by_seq], source)]
    amount = level * decay * weights[relation] * strength.astype(np.float64)
    keep = (amount >= floor) & (amount > 0)
    source, target, amount = source[keep], target[keep], amount[keep]
    relation, strength = relation[keep], strength[keep]
    order = np.lexsort((target, -amount))
    first = np.sort(np.unique(target[order], return_index=True)[1])  # each target's strongest
    pick = order[first]
    return list(
        zip(
            target[pick].tolist(),
            amount[pick].tolist(),
            source[pick].tolist(),
            [RELATIONS[code] for code in relation[pick].tolist()],
            strength[pick].astype(np.float64).tolist(),
            strict=True,
        )
    )
