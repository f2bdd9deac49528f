"""Memory of the embedded ONNX embedder on long texts: peak RSS and throughput per setting.

Run: ``.venv/bin/python bench/embedding_memory.py`` (about 2 minutes on 2 cores). Each
setting runs in a fresh interpreter, because RSS is per process and onnxruntime's arena
never gives memory back to the one that grew it. The texts are notes of 5..250 words
(up to the model's 256 tokens), the shape that made attention tensors, texts x tokens²,
dominate the daemon's memory. ``--child`` is the worker mode the parent starts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time

import latency  # this folder: bench scripts run as files

SETTINGS = [
    # (label, batch_size, batch_tokens, shrink_arena)
    ("before: 32 texts, no token budget, arena kept", 32, 1 << 30, False),
    ("32 texts, no token budget, arena shrinks", 32, 1 << 30, True),
    ("32 texts, 4,096-token budget, arena kept", 32, 4096, False),
    ("default: 32 texts, 2,048-token budget, arena shrinks", 32, 2048, True),
    ("32 texts, 1,024-token budget, arena shrinks", 32, 1024, True),
]


def child(batch_size: int, batch_tokens: int, shrink: bool, texts: int) -> dict[str, float]:
    from mnemonic.llm.embedding.onnx import OnnxEmbedder

    embedder = OnnxEmbedder(batch_size=batch_size, batch_tokens=batch_tokens, shrink_arena=shrink)
    loaded, _ = latency.rss_mb(os.getpid())
    rng = random.Random(7)
    words = "the deploy failed because the migration locked the billing table while the"
    words += " nightly export was still reading it so we moved the export to a replica"
    vocabulary = words.split()
    lengths = [rng.randint(5, 250) for _ in range(texts)]
    corpus = [" ".join(rng.choice(vocabulary) for _ in range(n)) for n in lengths]
    started = time.perf_counter()
    embedder.embed(corpus)
    seconds = time.perf_counter() - started
    query_started = time.perf_counter()
    for _ in range(100):
        embedder.embed(["why did the billing export fail"])
    query_ms = (time.perf_counter() - query_started) * 10
    after, peak = latency.rss_mb(os.getpid())
    return {
        "loaded_mb": loaded,
        "peak_mb": peak,
        "after_mb": after,
        "texts_per_s": texts / seconds,
        "query_ms": query_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("BATCH", "TOKENS", "SHRINK"))
    args = parser.parse_args()
    if args.child:
        batch, tokens, shrink = args.child
        print(json.dumps(child(int(batch), int(tokens), shrink == "1", args.texts)))
        return
    rows = []
    for label, batch, tokens, shrink in SETTINGS:
        print(f"running: {label}", file=sys.stderr)
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--texts",
                str(args.texts),
                "--child",
                str(batch),
                str(tokens),
                "1" if shrink else "0",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append({"setting": label, **json.loads(done.stdout)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {args.texts} texts of 5-250 words\n"
    )
    print("| setting | RSS loaded | peak RSS | RSS after | texts/s | one query |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['setting']} | {r['loaded_mb']:.0f} MB | {r['peak_mb']:.0f} MB | "
            f"{r['after_mb']:.0f} MB | {r['texts_per_s']:.1f} | {r['query_ms']:.1f} ms |"
        )


if __name__ == "__main__":
    main()
