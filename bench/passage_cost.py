"""What passage vectors cost at ingest: embedding time and bytes per memory.

The encoder embeds a batch's whole texts and their passages in one call
(``encoding/passages.py``). This script times that against the whole texts alone, on the
same real memories in the same process, alternating the two a batch at a time (so a
machine that slows down mid-run slows both): LoCoMo turns and LongMemEval user turns, in
the encoder's batches of 64, with the embedded model.

    python bench/passage_cost.py [--memories 3000] [--lead-words 4] [--cap 12] [--json]

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="locomo,longmemeval")
    parser.add_argument("--memories", type=int, default=3000, help="per dataset")
    parser.add_argument("--lead-words", type=int, default=4)
    parser.add_argument("--cap", type=int, default=12)
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


if __name__ == "__main__":
    main()
