"""Would a vector per passage beat one per memory? (one process, no daemon)

A memory is embedded whole today: one mean-pooled vector for up to 256 tokens. A long
memory (a chat turn of several sentences, a pasted paragraph) then matches a question only
as well as the average of its sentences, and the one sentence that answers is diluted.
Passage-level scoring ("MaxP": score a document by its best passage) is the standard
remedy. This bench measures it on both external benchmarks with the embedded model and no
daemon, against a whole-memory vector computed in the same process:

- ``whole``: one vector per memory (what the daemon stores);
- ``sentences``: a vector per sentence of 3 words or more (a memory of one sentence keeps
  its whole vector), the memory scoring by its best sentence or its whole vector;
- ``sentences+lead``: the same, each sentence embedded after the memory's first
  ``--lead-words`` words (who or what the memory is about is often said once, first);
- ``windows``: two adjacent sentences per vector (stride one), with the lead.

Each is measured alone (vector recall) and fused with BM25 by reciprocal rank (the shape of
the daemon's two entry points). Both benchmarks read ``../shared/data`` (or
``MNEMONIC_BENCH_DATA``), with the protocols of ``bench/locomo.py`` and
``bench/longmemeval.py``; LongMemEval takes every ``--lme-step``-th question.

    python bench/chunking.py [--datasets locomo,longmemeval] [--lme-step 5]
        [--schemes whole,sentences,sentences+lead,windows] [--lead-words 4] [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo
import longmemeval

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MNEMONIC_BENCH_DATA", ROOT.parent / "shared" / "data"))
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MIN_WORDS = 3
Embed = Callable[[list[str]], np.ndarray]


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text.strip()) if len(s.split()) >= MIN_WORDS]


def passages(text: str, scheme: str, lead_words: int) -> list[str]:
    """The texts embedded for one memory besides its whole text (none: whole only)."""
    parts = sentences(text)
    if len(parts) < 2 or scheme == "whole":
        return []
    lead = " ".join(text.split()[:lead_words])
    if scheme == "sentences":
        return parts
    if scheme == "sentences+lead":
        return [p if p.startswith(lead) else f"{lead} … {p}" for p in parts]
    windows = [" ".join(parts[i : i + 2]) for i in range(len(parts) - 1)]
    return [w if w.startswith(lead) else f"{lead} … {w}" for w in windows]


class PassageIndex:
    """Whole-memory vectors plus passage vectors; a memory scores by its best one."""

    def __init__(
        self, texts: list[str], whole: np.ndarray, scheme: str, lead_words: int, embed: Embed
    ) -> None:
        owner: list[int] = []
        extra: list[str] = []
        for i, text in enumerate(texts):
            for passage in passages(text, scheme, lead_words):
                owner.append(i)
                extra.append(passage)
        self.whole = whole  # embedded once per haystack, shared by every scheme
        self.owner = np.asarray(owner, dtype=np.int64)
        self.extra = embed(extra) if extra else np.zeros((0, self.whole.shape[1]), np.float32)
        self.vectors = len(texts) + len(extra)

    def scores(self, query: np.ndarray) -> np.ndarray:
        best = self.whole @ query
        if len(self.owner):
            np.maximum.at(best, self.owner, self.extra @ query)
        return best


def top(scores: np.ndarray, k: int = 100) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


SCHEMES = ("whole", "sentences", "sentences+lead", "windows")


def run_locomo(embed: Embed, lead_words: int, schemes: list[str]) -> dict[str, Any]:
    data: list[dict[str, Any]] = json.loads((SHARED / "locomo-dev.json").read_text())
    rows: dict[str, list[tuple[int, dict[str, float]]]] = defaultdict(list)
    size: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for sample in data:
        items = locomo.turns(sample)
        texts = [t["text"] for t in items]
        dias = [t["dia_id"] for t in items]
        bm25 = locomo.BM25(texts)
        whole = embed(texts)
        qs = locomo.questions(sample, set(dias))
        qvecs = embed([q["question"] for q in qs])
        words = [top(bm25.scores(q["question"])) for q in qs]
        for scheme in schemes:
            index = PassageIndex(texts, whole, scheme, lead_words, embed)
            size[scheme][0] += len(texts)
            size[scheme][1] += index.vectors
            for q, qv, by_words in zip(qs, qvecs, words, strict=True):
                vec = top(index.scores(qv))
                fused = locomo.rrf_rank([by_words, vec])
                for name, ranking in (("vector", vec), ("BM25+vector", fused)):
                    ranked = [[dias[i]] for i in ranking[:10]]
                    rows[f"{scheme} | {name}"].append(
                        (q["category"], locomo.metrics(ranked, q["evidence"]))
                    )
    tables = {name: locomo.summarise(r) for name, r in rows.items()}
    return {"tables": tables, "vectors_per_memory": {s: b / a for s, (a, b) in size.items()}}


def run_longmemeval(embed: Embed, lead_words: int, step: int, schemes: list[str]) -> dict[str, Any]:
    with gzip.open(SHARED / "longmemeval-dev.json.gz", "rt") as fh:
        data: list[dict[str, Any]] = json.load(fh)
    rows: dict[str, list[tuple[str, dict[str, float]]]] = defaultdict(list)
    size: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for question in data[::step]:
        items = longmemeval.user_turns(question)
        if not longmemeval.usable(question, items):
            continue
        texts = [t["text"] for t in items]
        answers = {t["session"] for t in items if t["answer"]}
        whole = embed(texts)
        qv = embed([question["question"]])[0]
        words = top(locomo.BM25(texts).scores(question["question"]))
        for scheme in schemes:
            index = PassageIndex(texts, whole, scheme, lead_words, embed)
            size[scheme][0] += len(texts)
            size[scheme][1] += index.vectors
            vec = top(index.scores(qv))
            fused = locomo.rrf_rank([words, vec])
            for name, ranking in (("vector", vec), ("BM25+vector", fused)):
                rows[f"{scheme} | {name}"].append(
                    (
                        question["question_type"],
                        longmemeval.metrics([items[i] for i in ranking], answers),
                    )
                )
    tables = {name: longmemeval.summarise(r) for name, r in rows.items()}
    return {"tables": tables, "vectors_per_memory": {s: b / a for s, (a, b) in size.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="locomo,longmemeval")
    parser.add_argument("--lme-step", type=int, default=5)
    parser.add_argument("--lead-words", type=int, default=4)
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    schemes = args.schemes.split(",")
    if unknown := set(schemes) - set(SCHEMES):
        parser.error(f"unknown schemes {sorted(unknown)}; known: {', '.join(SCHEMES)}")

    from mnemonic.llm.embedding.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    report: dict[str, Any] = {
        "lead_words": args.lead_words,
        "lme_step": args.lme_step,
        "schemes": schemes,
    }
    for dataset in args.datasets.split(","):
        t0 = time.perf_counter()
        if dataset == "locomo":
            report[dataset] = run_locomo(embed, args.lead_words, schemes)
        else:
            report[dataset] = run_longmemeval(embed, args.lead_words, args.lme_step, schemes)
        report[dataset]["seconds"] = round(time.perf_counter() - t0, 1)
        print(f"  {dataset}: {report[dataset]['seconds']} s", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print_report(report)


def print_report(report: dict[str, Any]) -> None:
    if "locomo" in report:
        print("\nLoCoMo dev, R@10 (760 questions)")
        print("| scheme | retriever | vectors/memory | overall | multi-hop | temporal |"
              " open-domain | single-hop | nDCG@10 |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        per = report["locomo"]["vectors_per_memory"]
        for name, t in report["locomo"]["tables"].items():
            scheme, retriever = name.split(" | ")
            cells = " | ".join(
                f"{t[g]['R@10']:.4f}"
                for g in ("overall", "multi-hop", "temporal", "open-domain", "single-hop")
            )
            print(f"| {scheme} | {retriever} | {per[scheme]:.2f} | {cells} |"
                  f" {t['overall']['nDCG@10']:.4f} |")  # fmt: skip
    if "longmemeval" in report:
        n = next(iter(report["longmemeval"]["tables"].values()))["overall"]["n"]
        print(f"\nLongMemEval dev, session all@5 and turn R@10 ({n} questions)")
        print("| scheme | retriever | vectors/memory | all@5 | multi-session | temporal |"
              " turn R@10 |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        per = report["longmemeval"]["vectors_per_memory"]
        for name, t in report["longmemeval"]["tables"].items():
            scheme, retriever = name.split(" | ")
            print(
                f"| {scheme} | {retriever} | {per[scheme]:.2f} |"
                f" {t['overall']['session all@5']:.3f} |"
                f" {t['multi-session']['session all@5']:.3f} |"
                f" {t['temporal-reasoning']['session all@5']:.3f} |"
                f" {t['overall']['turn R@10']:.3f} |"
            )


if __name__ == "__main__":
    main()
