"""What overwriting a purge's freed HNSW slots costs (``HnswVectors.scrub``).

Not a timed test: prints markdown tables for BENCHMARKS.md.

After a purge the recall index overwrites every freed slot of its usearch graphs with a
random filler and removes the fillers again, so a checkpoint holds nothing of the purged
vectors (``mnemonic/index/hnsw.py``). Two questions: how long the index lock is held for a
given number of freed slots, and whether the fillers' passage through the graph (they take
links from live nodes and give them up when removed) lowers search quality. The graph is
built once over ``--size`` clustered 384-d vectors (int8, the daemon's settings); each
round removes ``k`` vectors, times ``scrub`` and measures recall@10 of graph searches
against exact search over the live vectors. A control graph gets the same removals without
scrubbing, so the difference is the fillers' alone.

    python bench/scrub.py [--size 100000] [--rounds 40] [--queries 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mnemonic.index.hnsw import SCRUB_MAX, HnswVectors
from mnemonic.index.vectors import ExactVectors

F32 = npt.NDArray[np.float32]
DIM = 384


def clustered(rng: np.random.Generator, n: int, centres: F32) -> F32:
    """Unit vectors around random centres (real embeddings cluster by topic)."""
    label = rng.integers(0, len(centres), n)
    vecs = centres[label] + rng.standard_normal((n, DIM)).astype(np.float32) * 0.08
    out: F32 = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    return out


def recall_at_10(graph: HnswVectors, exact: ExactVectors, queries: F32) -> float:
    hits = 0
    for q in queries:
        want = {s for s, _ in exact.search(q, 10)}
        got = {s for s, _ in graph.search(q, 10)}
        hits += len(want & got)
    return hits / (10 * len(queries))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((200, DIM)).astype(np.float32)
    vectors = clustered(rng, args.size, centres)
    seqs = np.arange(1, args.size + 1, dtype=np.int64)
    queries = clustered(rng, args.queries, centres)
    started = time.perf_counter()
    scrubbed = HnswVectors(DIM, scan_ratio=0.0)
    scrubbed.load(seqs, vectors)
    control = HnswVectors(DIM, scan_ratio=0.0)
    control.load(seqs, vectors)
    exact = ExactVectors(DIM)
    exact.set(seqs, vectors)
    print(f"built two graphs of {args.size:,} in {time.perf_counter() - started:.0f} s\n")

    print("| freed slots | scrub, ms (median of 5) |")
    print("|---|---|")
    live = list(seqs)
    next_seq = args.size + 1

    def new_seqs(k: int) -> npt.NDArray[np.int64]:
        nonlocal next_seq
        out = np.arange(next_seq, next_seq + k, dtype=np.int64)
        next_seq += k
        return out

    for k in (1, 4, 16, 64, SCRUB_MAX):
        times = []
        for _ in range(5):
            gone = np.asarray([live.pop() for _ in range(k)], dtype=np.int64)
            scrubbed.remove(gone)
            t0 = time.perf_counter()
            assert scrubbed.scrub()
            times.append((time.perf_counter() - t0) * 1000)
            # the freed slots stay freed (filler bytes now): new memories reuse them
            fresh, added = clustered(rng, k, centres), new_seqs(k)
            scrubbed.set(added, fresh)
            control.remove(gone)
            control.set(added, fresh)
            exact.remove(gone)
            exact.set(added, fresh)
        print(f"| {k} | {statistics.median(times):.1f} |")

    print("\n| purges (4 memories each, then 4 new ones) | recall@10 scrubbed | control |")
    print("|---|---|---|")
    print(
        f"| 0 | {recall_at_10(scrubbed, exact, queries):.4f}"
        f" | {recall_at_10(control, exact, queries):.4f} |"
    )
    for done in range(1, args.rounds + 1):
        gone = np.asarray([live.pop() for _ in range(4)], dtype=np.int64)
        fresh, added = clustered(rng, 4, centres), new_seqs(4)
        for graph in (scrubbed, control):
            graph.remove(gone)
            if graph is scrubbed:
                assert graph.scrub()
            graph.set(added, fresh)
        exact.remove(gone)
        exact.set(added, fresh)
        if done % max(1, args.rounds // 4) == 0:
            print(
                f"| {done} | {recall_at_10(scrubbed, exact, queries):.4f}"
                f" | {recall_at_10(control, exact, queries):.4f} |"
            )


if __name__ == "__main__":
    main()
