"""What passage vectors cost at ingest: embedding time and bytes per memory.

The encoder embeds a batch's whole texts and their passages in one call
(``encoding/passages.py``). This script times that against the whole texts alone, on the
same real memories in the same process, alternating the two a batch at a time (so a
machine that slows down mid-run slows both): LoCoMo turns and LongMemEval user turns, in
the encoder's batches of 64, with the embedded model.

    python bench/passage_cost.py [--memories 3000] [--lead-words 4] [--cap 12]
        [--search-memories 100000] [--json]

``--search-memories`` also times one query's vector entry point at that many memories
(random unit vectors, the benchmarks' 2.5 passages per memory): the whole vectors alone
against whole vectors plus passage rows, as ``RecallIndex.nearest`` runs them, both past
``recall.vector_exact_max`` (HNSW) as a store of that size would be.

Not a test: it prints a table. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo
import longmemeval

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MNEMONIC_BENCH_DATA", ROOT.parent / "shared" / "data"))
BATCH = 64  # encoding.batch_max


def texts_of(dataset: str, limit: int) -> list[str]:
    out: list[str] = []
    if dataset == "locomo":
        for sample in json.loads((SHARED / "locomo-dev.json").read_text()):
            out.extend(t["text"] for t in locomo.turns(sample))
    else:
        with gzip.open(SHARED / "longmemeval-dev.json.gz", "rt") as fh:
            seen: set[str] = set()
            for question in json.load(fh):
                for turn in longmemeval.user_turns(question):
                    if turn["text"] not in seen:
                        seen.add(turn["text"])
                        out.append(turn["text"])
                if len(out) >= limit:
                    break
    return out[:limit]


def measure(texts: list[str], lead_words: int, cap: int) -> dict[str, Any]:
    from mnemonic.encoding.passages import embed_with_passages, passage_texts
    from mnemonic.llm.embedding.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()
    embedder.embed(texts[:BATCH])  # warm the session
    whole_s = both_s = 0.0
    for start in range(0, len(texts), BATCH):
        batch = texts[start : start + BATCH]
        t0 = time.perf_counter()
        embedder.embed(batch)
        t1 = time.perf_counter()
        embed_with_passages(embedder.embed, batch, lead_words, cap)
        t2 = time.perf_counter()
        whole_s += t1 - t0
        both_s += t2 - t1
    counts = np.array([len(passage_texts(t, lead_words, cap)) for t in texts])
    return {
        "memories": len(texts),
        "with_passages": float(np.mean(counts > 0)),
        "passages_per_memory": float(counts.mean()),
        "max_passages": int(counts.max()),
        "whole_per_s": len(texts) / whole_s,
        "with_passages_per_s": len(texts) / both_s,
        "cost_ratio": both_s / whole_s,
        "passage_bytes_per_memory": float(counts.mean()) * embedder.dim * 2,
        "whole_bytes_per_memory": embedder.dim * 4,
    }


def search_cost(memories: int, per_memory: float, queries: int = 300) -> dict[str, Any]:
    from mnemonic.index.passages import PassageVectors, best_of
    from mnemonic.index.vectors import AdaptiveVectors

    dim, k = 384, 60
    rng = np.random.default_rng(0)

    def unit(n: int) -> np.ndarray:
        m = rng.standard_normal((n, dim), dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    whole = AdaptiveVectors(dim, exact_max=50_000)
    whole.load(np.arange(1, memories + 1, dtype=np.int64), unit(memories))
    counts = rng.poisson(per_memory, memories)
    owners = np.repeat(np.arange(1, memories + 1, dtype=np.int64), counts)
    passages = PassageVectors(dim, exact_max=50_000)
    passages.load(owners, unit(len(owners)))
    allowed = np.ones(memories + 1, dtype=np.bool_)
    probes = unit(queries)
    whole_ms: list[float] = []
    both_ms: list[float] = []
    for q in probes:
        t0 = time.perf_counter()
        hits = whole.search(q, k, allowed)
        t1 = time.perf_counter()
        best_of(hits, passages.search(q, k, allowed), k)
        t2 = time.perf_counter()
        whole_ms.append((t1 - t0) * 1000)
        both_ms.append((t1 - t0 + t2 - t1) * 1000)
    return {
        "memories": memories,
        "passage_rows": len(owners),
        "kinds": [whole.kind, passages.vectors.kind],
        "whole_p50_ms": float(np.percentile(whole_ms, 50)),
        "whole_p95_ms": float(np.percentile(whole_ms, 95)),
        "with_passages_p50_ms": float(np.percentile(both_ms, 50)),
        "with_passages_p95_ms": float(np.percentile(both_ms, 95)),
        "index_bytes": [whole.nbytes, passages.vectors.nbytes],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="locomo,longmemeval")
    parser.add_argument("--memories", type=int, default=3000, help="per dataset")
    parser.add_argument("--lead-words", type=int, default=4)
    parser.add_argument("--cap", type=int, default=12)
    parser.add_argument("--search-memories", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    python = platform.python_version()
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {python}",
        "lead_words": args.lead_words,
        "cap": args.cap,
    }
    for dataset in args.datasets.split(","):
        texts = texts_of(dataset, args.memories)
        print(f"  {dataset}: {len(texts)} memories", file=sys.stderr)
        report[dataset] = measure(texts, args.lead_words, args.cap)
    if args.search_memories:
        print(f"  search at {args.search_memories} memories", file=sys.stderr)
        report["search"] = search_cost(args.search_memories, 2.5)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"machine: {report['machine']}; lead {args.lead_words} words, cap {args.cap}")
    print(
        "| dataset | memories | with passages | passages/memory | max | whole only /s"
        " | with passages /s | cost | passage bytes/memory |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for dataset in args.datasets.split(","):
        r = report[dataset]
        print(
            f"| {dataset} | {r['memories']} | {r['with_passages']:.0%} |"
            f" {r['passages_per_memory']:.2f} | {r['max_passages']} | {r['whole_per_s']:.0f} |"
            f" {r['with_passages_per_s']:.0f} | {r['cost_ratio']:.2f}x |"
            f" {r['passage_bytes_per_memory']:.0f} |"
        )
    if "search" in report:
        r = report["search"]
        print(
            f"\nvector entry point at {r['memories']} memories, {r['passage_rows']} passage rows"
            f" ({' / '.join(r['kinds'])}): whole alone p50 {r['whole_p50_ms']:.2f} ms,"
            f" p95 {r['whole_p95_ms']:.2f} ms; with passages p50"
            f" {r['with_passages_p50_ms']:.2f} ms, p95 {r['with_passages_p95_ms']:.2f} ms;"
            f" index bytes {r['index_bytes'][0] / 1e6:.0f} MB + {r['index_bytes'][1] / 1e6:.0f} MB"
        )


if __name__ == "__main__":
    main()
