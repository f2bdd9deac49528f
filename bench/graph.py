"""Cost of the in-memory association graph (mnemonic/index/graph.py) at scale.

Random undirected edges between seqs 1..N (8 per memory on average, as the encoder's
linking makes), rows given in primary-key order as SQLite returns them. Prints one table:
build time and peak extra memory, a 40-seq neighbour expansion, compaction, and one
spreading activation (20 seeds, 3 hops, default recall settings) through ``spread_arrays``
against the SQL-era ``spread`` loop fed from memory (its SQL cost is in BENCHMARKS.md).

    .venv/bin/python bench/graph.py [--nodes 1000000] [--small 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence

import numpy as np

from mnemonic.config import RecallConfig
from mnemonic.index.graph import RELATIONS, AssociationGraph, build_csr
from mnemonic.recall.activation import SpreadSettings, spread, spread_arrays
from mnemonic.store.models import Association, Relation

Row = tuple[str, str]


def edges(nodes: int, per_node: int, seed: int = 1) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    count = nodes * per_node
    a = rng.integers(1, nodes + 1, count)
    b = rng.integers(1, nodes + 1, count)
    keep = a != b
    lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    rel = rng.integers(0, len(RELATIONS), len(lo)).astype(np.int8)
    order = np.lexsort((rel, hi, lo))
    lo, hi, rel = lo[order], hi[order], rel[order]
    unique = np.ones(len(lo), bool)
    unique[1:] = (np.diff(lo) != 0) | (np.diff(hi) != 0) | (np.diff(rel) != 0)
    strength = rng.uniform(0.05, 1.0, int(unique.sum()))
    return lo[unique], hi[unique], rel[unique], strength


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(p50, p95) milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def settings() -> SpreadSettings:
    cfg = RecallConfig()
    return SpreadSettings(
        hops=cfg.spread_hops,
        decay=cfg.spread_decay,
        threshold=cfg.spread_threshold,
        max_nodes=cfg.spread_max_nodes,
        frontier=cfg.spread_frontier,
        relation_weights=dict(cfg.relation_weights),
    )


def large(nodes: int, rows: list[Row]) -> None:
    src, tgt, rel, strength = edges(nodes, 8)
    gc.collect()
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start, cpu = time.perf_counter(), time.process_time()
    graph = AssociationGraph.build(src, tgt, rel, strength)
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    inputs = sum(a.nbytes for a in (src, tgt, rel, strength))
    label = f"{nodes:,} nodes x {len(src):,} edges"
    rows.append((f"build ({label})", f"{took:.2f} s wall, {cpu:.2f} s CPU"))
    rows.append(("  input arrays (caller's)", f"{inputs / 2**20:.0f} MB"))
    rows.append(("  graph size (nbytes)", f"{graph.nbytes / 2**20:.0f} MB"))
    rows.append(("  peak extra memory during build", f"{peak / 2**20:.0f} MB"))
    del src, tgt, rel, strength

    rng = np.random.default_rng(2)
    frontiers = [rng.integers(1, nodes + 1, 40) for _ in range(500)]
    it = iter(frontiers * 4)
    p50, p95 = timed(lambda: graph.neighbours(next(it)), 2000)
    rows.append(("neighbours, 40-seq frontier (CSR only)", f"p50 {p50:.3f} / p95 {p95:.3f} ms"))
    for i in range(10_000):  # an overlay at the 10,000-key floor
        a, b = rng.integers(1, nodes + 1, 2).tolist()
        if a != b:
            graph.upsert(a, b, i % len(RELATIONS), 0.5)
    it = iter(frontiers * 4)
    p50, p95 = timed(lambda: graph.neighbours(next(it)), 2000)
    rows.append(("neighbours, 40 seqs, 10k-key overlay", f"p50 {p50:.3f} / p95 {p95:.3f} ms"))
    for keys in (10_000, 80_000):
        while graph.overlay_size < keys:
            a, b = rng.integers(1, nodes + 1, 2).tolist()
            if a != b:
                graph.upsert(a, b, int(rng.integers(len(RELATIONS))), 0.7)
        job = graph.compaction_input()
        start, cpu = time.perf_counter(), time.process_time()
        csr = build_csr(job)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        graph.install(job, csr)
        rows.append(
            (
                f"compaction, {keys:,}-key overlay (build_csr)",
                f"{took * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU",
            )
        )


def small(nodes: int, rows: list[Row]) -> None:
    src, tgt, rel, strength = edges(nodes, 8, seed=3)
    graph = AssociationGraph.build(src, tgt, rel, strength)
    cfg = settings()
    rng = np.random.default_rng(4)
    seedings = []
    for _ in range(100):
        picked = rng.choice(np.arange(1, nodes + 1), 20, replace=False).tolist()
        seedings.append(dict(zip(picked, sorted(rng.random(20), reverse=True), strict=True)))
    allowed = rng.random(nodes + 1) < 0.9
    it = iter(seedings * 3)
    label = f"{nodes:,} nodes x {len(src):,} edges"
    p50, p95 = timed(lambda: spread_arrays(next(it), graph, None, cfg), 300)
    rows.append((f"spread_arrays, 20 seeds, 3 hops ({label})", f"p50 {p50:.2f} / p95 {p95:.2f} ms"))
    it = iter(seedings * 3)
    p50, p95 = timed(lambda: spread_arrays(next(it), graph, allowed, cfg), 300)
    rows.append(("  same, with a 90% `allowed` mask", f"p50 {p50:.2f} / p95 {p95:.2f} ms"))
    flow = spread_arrays(seedings[0], graph, None, cfg)
    rows.append(("  nodes reached / edges seen", f"{len(flow.activation)} / {flow.edges_seen}"))

    async def fetch(seqs: Sequence[int]) -> list[Association]:
        s, t, r, v = graph.neighbours(np.array(seqs, np.int64))
        names = [Relation(n) for n in RELATIONS]
        return [
            Association(a, b, names[c], w)
            for a, b, c, w in zip(s.tolist(), t.tolist(), r.tolist(), v.tolist(), strict=True)
        ]

    it = iter(seedings * 3)
    p50, p95 = timed(lambda: asyncio.run(spread(next(it), fetch, cfg)), 300)
    rows.append(("  old `spread` loop, fetch from memory", f"p50 {p50:.2f} / p95 {p95:.2f} ms"))
    rows.append(("  old `spread`, three SQL hops (BENCHMARKS.md)", "27.9 ms"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    args = parser.parse_args()
    rows: list[Row] = []
    small(args.small, rows)
    large(args.nodes, rows)
    width = max(len(r[0]) for r in rows)
    print(f"| {'measure':<{width}} | value |\n|{'-' * (width + 2)}|---|")
    for name, value in rows:
        print(f"| {name:<{width}} | {value} |")


if __name__ == "__main__":
    main()
