"""Vector search at 100k and 1M: exact float32 vs usearch HNSW (i8 / f16 / f32).

Not a timed test: prints markdown tables for BENCHMARKS.md.

Vectors. Real embeddings first: LoCoMo turns (``speaker: text``) and LongMemEval user turns
from ``../shared/data`` (read in place, never copied) plus synthetic developer memories from
``bench/latency.py``'s ``iter_corpus``, embedded once with the project's ONNX model and
cached in ``--cache`` (outside the repository). Larger sets are derived: vector ``j`` is
real vector ``j mod R`` plus Gaussian noise of norm ``s`` (``s`` uniform in [0.35, 0.9] per
vector, i.e. cosine 0.74-0.94 to its base), renormalised, so the clusters of the real
embedding space stay and each real memory gets a cloud of near variants (like repeated
commands and edits of one note). Queries are held-out real texts (never a base), each
with the project of its source (a LoCoMo conversation, a LongMemEval question, a synthetic
project: ``project = source group mod P`` for each ``--projects`` P; groups differ in size,
so with 20 projects a query's project averages 12% of rows, with 80 about 3%); the
filtered query allows its own project's rows only. Recall@k is against exact float32
search over the same vectors and filter.

    python bench/vectors.py --sizes 100000 1000000 --quant i8 f16 f32 [--expansion 256 512]
        [--k 10]

Each filtered query runs twice on the same built index: through the graph (the sign scan
off) and as the index chooses (``HnswVectors._scan_pays``: the sign scan for the 5% projects
here). ``--k``: neighbours asked per query, and recall is recall@k against exact search
(recall itself asks for 60 entry points).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from latency import iter_corpus

from mnemonic.index import hnsw as hnsw_module
from mnemonic.index.hnsw import HnswVectors
from mnemonic.index.vectors import ExactVectors, Hits, VectorSearch

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PATHS = (("graph", 0.0), ("chosen", hnsw_module.SCAN_RATIO))
"""A filtered query through the graph only, and as the index chooses (graph or sign scan)."""
F32 = npt.NDArray[np.float32]


def real_texts(n_lme: int, n_synth: int) -> tuple[list[str], list[int]]:
    """(texts, source group) from LoCoMo, LongMemEval and the synthetic generator."""
    texts: list[str] = []
    groups: list[int] = []
    for g, sample in enumerate(json.loads((DATA / "locomo-dev.json").read_text())):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for t in turns:
                    texts.append(f"{t['speaker']}: {t['text']}")
                    groups.append(g)
    seen: set[str] = set()
    with gzip.open(DATA / "longmemeval-dev.json.gz", "rt") as f:
        questions = json.load(f)
    taken = 0
    for qi, q in enumerate(questions):
        for session in q["haystack_sessions"]:
            for turn in session:
                text = turn["content"][:600]
                if turn["role"] == "user" and text not in seen and taken < n_lme:
                    seen.add(text)
                    texts.append(text)
                    groups.append(100 + qi)
                    taken += 1
    names: dict[str, int] = {}
    for item in iter_corpus(n_synth):
        texts.append(item.content)
        groups.append(1000 + names.setdefault(item.project, len(names)))
    return texts, groups


def embedded(cache: Path, n_lme: int, n_synth: int) -> tuple[F32, npt.NDArray[np.int64]]:
    if cache.exists():
        z = np.load(cache)
        return z["vectors"], z["groups"]
    from mnemonic.llm.embedding.onnx import OnnxEmbedder

    texts, groups = real_texts(n_lme, n_synth)
    embedder = OnnxEmbedder(threads=2)
    started = time.perf_counter()
    parts = []
    for a in range(0, len(texts), 256):
        parts.append(np.asarray(embedder.embed(texts[a : a + 256]), dtype=np.float32))
        print(f"embedded {a + 256}/{len(texts)}", file=sys.stderr, flush=True)
    rate = len(texts) / (time.perf_counter() - started)
    print(f"embedded {len(texts)} real texts at {rate:.0f} texts/s", file=sys.stderr)
    vectors = np.concatenate(parts)
    np.savez(cache, vectors=vectors, groups=np.asarray(groups, dtype=np.int64))
    return vectors, np.asarray(groups, dtype=np.int64)


def derive(base: F32, n: int, seed: int = 1) -> tuple[F32, npt.NDArray[np.int64]]:
    """``n`` vectors: base[j mod R] + noise of norm U(0.35, 0.9), renormalised (in blocks)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    origin = np.arange(n, dtype=np.int64) % len(base)
    for a in range(0, n, 100_000):
        b = min(n, a + 100_000)
        noise = rng.standard_normal((b - a, base.shape[1])).astype(np.float32)
        noise *= (
            rng.uniform(0.35, 0.9, (b - a, 1)) / np.linalg.norm(noise, axis=1, keepdims=True)
        ).astype(np.float32)
        block = base[origin[a:b]] + noise
        out[a:b] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out, origin


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


Mask = npt.NDArray[np.bool_]


def timed_queries(
    index: VectorSearch, queries: F32, masks: list[Mask | None], k: int
) -> tuple[list[Hits], list[float]]:
    results, times = [], []
    for q, m in zip(queries, masks, strict=True):
        t = time.perf_counter()
        results.append(index.search(q, k, m))
        times.append((time.perf_counter() - t) * 1000)
    return results, times


def recall(truth: list[Hits], got: list[Hits]) -> float:
    vals = []
    for t, g in zip(truth, got, strict=True):
        want = {s for s, _ in t}
        if want:
            vals.append(len(want & {s for s, _ in g}) / len(want))
    return statistics.fmean(vals)


def rss_after_open(path: Path, queries: Path, view: bool) -> tuple[float, float, float]:
    """(open seconds, RSS MB after open + 200 searches, RSS MB of a bare interpreter)."""
    code = f"""
import time, numpy as np
from mnemonic.index.hnsw import HnswVectors
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'): return int(line.split()[1]) / 1024
base = rss()
t = time.perf_counter()
h = HnswVectors.open({str(path)!r}, view={view})
t = time.perf_counter() - t
for q in np.load({str(queries)!r})[:200]: h.search(q, 10)
print(t, rss(), base)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    a, b, c = out.stdout.split()
    return float(a), float(b), float(c)


Filters = dict[str, list[Mask | None]]
"""Per filter (labelled with its share of rows): one mask per query."""


def exact_phase(
    vectors: F32, seqs: npt.NDArray[np.int64], queries: F32, filters: Filters, k: int
) -> tuple[list[Hits], dict[str, list[Hits]]]:
    n = len(vectors)
    exact = ExactVectors(vectors.shape[1], capacity=n + 1)
    exact.set(seqs, vectors)
    truth, t = timed_queries(exact, queries, [None] * len(queries), k)
    print(
        f"exact f32: {exact.nbytes / n:.0f} B/vector; search p50/p95 "
        f"{pct(t, 50):.1f}/{pct(t, 95):.1f} ms"
    )
    truths: dict[str, list[Hits]] = {}
    for label, masks in filters.items():
        truths[label], t_f = timed_queries(exact, queries, masks, k)
        print(f"exact f32 filtered ({label}): p50/p95 {pct(t_f, 50):.1f}/{pct(t_f, 95):.1f} ms")
    print()
    return truth, truths


HEADER = (
    "| quant | build s | B/vector (usearch + signs) | ef_search | filtered path | recall@10 "
    "| p50 / p95 ms "
    "| filtered recall@10 | filtered p50 / p95 ms | save s | open s (view / load) "
    "| RSS MB after open+200 q (view / load; bare python) |"
)


def hnsw_phase(
    quant: str,
    vectors: F32,
    seqs: npt.NDArray[np.int64],
    queries: F32,
    filters: Filters,
    truths: tuple[list[Hits], dict[str, list[Hits]]],
    expansions: list[int],
    tmp: Path,
    k: int,
) -> None:
    n = len(vectors)
    h = HnswVectors(vectors.shape[1], quantisation=quant)
    t0 = time.perf_counter()
    h.load(seqs, vectors)
    build = time.perf_counter() - t0
    path = tmp / f"{quant}.usearch"
    t0 = time.perf_counter()
    h.save(path)
    save = time.perf_counter() - t0
    ov, rv, bare = rss_after_open(path, tmp / "q.npy", True)
    ol, rl, _ = rss_after_open(path, tmp / "q.npy", False)
    path.unlink()
    for ef in expansions:
        h.expansion_search = ef
        got, tq = timed_queries(h, queries, [None] * len(queries), k)
        runs = [(label, name, ratio) for label in filters for name, ratio in PATHS]
        for label, path_name, scan_ratio in runs:
            h.scan_ratio = scan_ratio
            got_f, tq_f = timed_queries(h, queries, filters[label], k)
            cells = [
                quant,
                f"{build:.0f}",
                f"{h.nbytes / n:.0f}",
                str(ef),
                f"{label}: {path_name}",
                f"{recall(truths[0], got):.4f}",
                f"{pct(tq, 50):.2f} / {pct(tq, 95):.2f}",
                f"{recall(truths[1][label], got_f):.4f}",
                f"{pct(tq_f, 50):.2f} / {pct(tq_f, 95):.2f}",
                f"{save:.2f}",
                f"{ov:.2f} / {ol:.2f}",
                f"{rv:.0f} / {rl:.0f}; {bare:.0f}",
            ]
            print("| " + " | ".join(cells) + " |", flush=True)


def run_size(
    n: int,
    base: F32,
    groups: npt.NDArray[np.int64],
    queries: F32,
    qgroups: npt.NDArray[np.int64],
    quants: list[str],
    expansions: list[int],
    project_counts: list[int],
    k: int,
) -> None:
    vectors, origin = derive(base, n)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    filters: Filters = {}
    for count in project_counts:
        project = groups[origin] % count
        masks: list[Mask | None] = []
        for p in qgroups % count:
            m = np.zeros(n + 1, dtype=np.bool_)
            m[1:] = project == p
            masks.append(m)
        share = statistics.fmean(float(m.mean()) for m in masks if m is not None)
        filters[f"{count} projects, {share:.1%}"] = masks
    print(f"\n### {n:,} vectors (filters: {', '.join(filters)} of rows)\n", flush=True)
    truths = exact_phase(vectors, seqs, queries, filters, k)
    print(HEADER)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="vecbench-"))
    np.save(tmp / "q.npy", queries)
    for quant in quants:
        hnsw_phase(quant, vectors, seqs, queries, filters, truths, expansions, tmp, k)
    (tmp / "q.npy").unlink()
    tmp.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--quant", nargs="+", default=["i8", "f16", "f32"])
    ap.add_argument("--expansion", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--projects", type=int, nargs="+", default=[20, 80])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--lme", type=int, default=1500)
    ap.add_argument("--synthetic", type=int, default=2500)
    ap.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "mnemonic-bench-vectors.npz"
    )
    args = ap.parse_args()
    real, groups = embedded(args.cache, args.lme, args.synthetic)
    rng = np.random.default_rng(7)
    held = rng.choice(len(real), args.queries, replace=False)
    keep = np.setdiff1d(np.arange(len(real)), held)
    print(
        f"{len(real):,} real embeddings ({len(keep):,} bases, {len(held)} held-out queries); "
        f"usearch threads=1 per query; {os.cpu_count()} cores"
    )
    for n in args.sizes:
        run_size(
            n,
            real[keep],
            groups[keep],
            real[held],
            groups[held],
            args.quant,
            args.expansion,
            args.projects,
            args.k,
        )


if __name__ == "__main__":
    main()
