"""LoCoMo retrieval benchmark through the public REST API of a real daemon.

Protocol (../shared/data/README.md): one memory per dialog turn ("speaker: text") with its
dia_id in metadata and the session date as timestamp, one project per conversation, batch
ingest with wait=true, /query with the project filter. Relevant = the question's evidence
turns. Baselines (BM25, MiniLM cosine, their RRF) run in this process on the same data.

    python bench/locomo.py [--data PATH] [--set recall.spread_weight=0.4 ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agents_phase import age_store, run_agents
from server import running_daemon

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# Queries nothing in a conversation between friends answers: gibberish and software
# questions. With a relevance floor each should come back empty (issue 10 §2).
OFF_TOPIC = [
    "zzzzqqq nonexistent gibberish",
    "qwxv plmk",
    "How do I fix a segfault in my C++ destructor?",
    "kubernetes pod OOMKilled after the helm upgrade",
    "What does the SQLite WAL checkpoint do?",
    "Which numpy version pins the ABI?",
]
_WORD = re.compile(r"\w+", re.UNICODE)


def ingest(
    client: Any, items: list[dict[str, Any]], project: str, key: str
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Post ``items`` (turns with text and timestamp) as memories of ``project`` in batches
    of 500, waiting for encoding; each turn with the API's result for it. ``key`` names the
    turn's own id, kept in metadata."""
    for start in range(0, len(items), 500):
        chunk = items[start : start + 500]
        body = {
            "memories": [
                {
                    "content": t["text"],
                    "timestamp": t["timestamp"],
                    "project": project,
                    "source": "ingest",
                    "metadata": {key: t[key]},
                }
                for t in chunk
            ]
        }
        resp = client.post("/api/v1/memories/batch", params={"wait": "true"}, json=body)
        resp.raise_for_status()
        yield from zip(chunk, resp.json()["results"], strict=True)


def parse_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        when = parse_date(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            out.append(
                {
                    "dia_id": turn["dia_id"],
                    "text": f"{turn['speaker']}: {turn['text']}",
                    "timestamp": when.isoformat(),
                }
            )
        n += 1
    return out


def evidence(raw: list[str], known: set[str]) -> list[str]:
    found: list[str] = []
    for item in raw:
        for piece in re.split(r"[;,]\s*", item):
            part = piece.strip().replace("D:", "D")
            if part in known and part not in found:
                found.append(part)
    return found


def questions(sample: dict[str, Any], known: set[str]) -> list[dict[str, Any]]:
    out = []
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        ev = evidence(qa.get("evidence", []), known)
        if ev:
            out.append({"question": qa["question"], "category": qa["category"], "evidence": ev})
    return out


def metrics(ranked: list[list[str]], relevant: list[str]) -> dict[str, float]:
    """R@k = share of evidence turns in the top k; nDCG@10 with binary gains."""
    rel = set(relevant)

    def recall_at(k: int) -> float:
        seen = {d for group in ranked[:k] for d in group}
        return len(seen & rel) / len(rel)

    dcg = 0.0
    credited: set[str] = set()
    for i, group in enumerate(ranked[:10]):
        hits = (set(group) & rel) - credited
        if hits:
            dcg += 1 / math.log2(i + 2)
            credited |= hits
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), 10)))
    return {"R@5": recall_at(5), "R@10": recall_at(10), "nDCG@10": dcg / ideal}


class BM25:
    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.tokens = [[w.lower() for w in _WORD.findall(d)] for d in docs]
        self.k1, self.b = k1, b
        self.avgdl = sum(map(len, self.tokens)) / max(1, len(self.tokens))
        df: Counter[str] = Counter()
        for toks in self.tokens:
            df.update(set(toks))
        n = len(self.tokens)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.tf = [Counter(t) for t in self.tokens]

    def scores(self, query: str) -> np.ndarray:
        q = [w.lower() for w in _WORD.findall(query)]
        out = np.zeros(len(self.tokens))
        for i, tf in enumerate(self.tf):
            dl = len(self.tokens[i])
            s = 0.0
            for t in q:
                f = tf.get(t)
                if f:
                    s += (
                        self.idf[t]
                        * f
                        * (self.k1 + 1)
                        / (f + self.k1 * (1 - self.b + self.b * dl / self.avgdl))
                    )
            out[i] = s
        return out


def rrf_rank(rankings: list[list[int]], k: float = 60.0) -> list[int]:
    score: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for r, i in enumerate(ranking, start=1):
            score[i] += 1 / (k + r)
    return sorted(score, key=lambda i: -score[i])


def summarise(rows: list[tuple[int, dict[str, float]]]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for cat, m in rows:
        groups["overall"].append(m)
        groups[CATEGORIES[cat]].append(m)
    for name, ms in groups.items():
        table[name] = {k: float(np.mean([m[k] for m in ms])) for k in ("R@5", "R@10", "nDCG@10")}
        table[name]["n"] = len(ms)
    return table


def run_daemon(
    data: list[dict[str, Any]],
    settings: dict[str, str],
    agents: list[str] | None = None,
    age_days: float = 0.0,
) -> dict[str, Any]:
    """Ingest every conversation, then (with ``agents``) age the store and run one cycle of
    each agent (``agents_phase.py``), then ask every question."""
    rows: list[tuple[int, dict[str, float]]] = []
    timings: dict[str, float] = {}
    phase: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="mnemonic-locomo-") as home,
        running_daemon(settings, Path(home)) as (client, cold),
    ):
        timings["cold_start_s"] = cold
        ingest_s = 0.0
        query_ms: list[float] = []
        answered: list[int] = []  # results per query: the relevance floor may cut a list
        off_topic_answered = 0  # off-topic probes that returned anything
        n_turns = 0
        spaces: list[tuple[str, dict[str, list[str]], set[str], dict[str, Any]]] = []
        for sample in data:
            project = sample["sample_id"]
            items = turns(sample)
            n_turns += len(items)
            memory_dias: dict[str, list[str]] = defaultdict(list)
            t0 = time.perf_counter()
            for t, r in ingest(client, items, project, "dia_id"):
                memory_dias[r["memory_id"]].append(t["dia_id"])
            ingest_s += time.perf_counter() - t0
            spaces.append((project, memory_dias, {t["dia_id"] for t in items}, sample))
        if agents:
            phase["aged_rows"] = age_store(Path(home) / "data" / "mnemonic.db", age_days)
            phase["agents"] = run_agents(client, agents)
        for project, memory_dias, known, sample in spaces:
            for q in questions(sample, known):
                t1 = time.perf_counter()
                resp = client.post(
                    "/api/v1/query",
                    json={"query": q["question"], "project": project, "limit": 10},
                )
                query_ms.append((time.perf_counter() - t1) * 1000)
                resp.raise_for_status()
                ranked = [memory_dias.get(r["memory"]["id"], []) for r in resp.json()["results"]]
                answered.append(len(ranked))
                rows.append((q["category"], metrics(ranked, q["evidence"])))
            for text in OFF_TOPIC:
                resp = client.post(
                    "/api/v1/query", json={"query": text, "project": project, "limit": 10}
                )
                resp.raise_for_status()
                off_topic_answered += bool(resp.json()["results"])
        timings["ingest_per_s"] = n_turns / ingest_s
        timings["query_p50_ms"] = float(np.percentile(query_ms, 50))
        timings["query_p95_ms"] = float(np.percentile(query_ms, 95))
        timings["off_topic_answered"] = float(off_topic_answered)
        timings["off_topic_queries"] = float(len(OFF_TOPIC) * len(data))
        timings["short_answers"] = float(sum(n < 10 for n in answered))
        timings["empty_answers"] = float(sum(n == 0 for n in answered))
    return {"table": summarise(rows), "timings": timings, "phase": phase}


def run_baselines(data: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    from mnemonic.llm.embedding.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()
    out: dict[str, list[tuple[int, dict[str, float]]]] = defaultdict(list)
    for sample in data:
        items = turns(sample)
        texts = [t["text"] for t in items]
        dias = [t["dia_id"] for t in items]
        bm25 = BM25(texts)
        vecs = embedder.embed(texts)
        qs = questions(sample, set(dias))
        qvecs = embedder.embed([q["question"] for q in qs])
        for q, qv in zip(qs, qvecs, strict=True):
            b = list(np.argsort(-bm25.scores(q["question"]), kind="stable")[:100])
            v = list(np.argsort(-(vecs @ qv), kind="stable")[:100])
            f = rrf_rank([b, v])
            for name, ranking in (("BM25", b), ("MiniLM cosine", v), ("RRF(BM25, MiniLM)", f)):
                out[name].append(
                    (q["category"], metrics([[dias[i]] for i in ranking[:10]], q["evidence"]))
                )
    return {name: summarise(rows) for name, rows in out.items()}


def print_table(results: dict[str, dict[str, dict[str, float]]]) -> None:
    cats = ["overall", *CATEGORIES.values()]
    header = f"{'retriever':<22} " + " ".join(f"{c + ' R@10':>17}" for c in cats)
    print(
        f"\n{'retriever':<22} {'R@5':>6} {'R@10':>6} {'nDCG@10':>8}   "
        + "  ".join(f"{c[:11]:>11}" for c in cats[1:])
    )
    print("-" * len(header))
    for name, table in results.items():
        o = table["overall"]
        per = "  ".join(f"{table[c]['R@10']:>11.3f}" for c in cats[1:] if c in table)
        print(f"{name:<22} {o['R@5']:>6.3f} {o['R@10']:>6.3f} {o['nDCG@10']:>8.3f}   {per}")
    print("(per-category columns: R@10)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--set", action="append", default=[], help="section.key=value config override"
    )
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument(
        "--agents",
        default="",
        help="comma-separated agents to run once after ingest, before the questions"
        " (e.g. episoding,consolidation)",
    )
    parser.add_argument(
        "--age-days", type=float, default=0.0, help="with --agents: age the store this much first"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    data = json.loads(args.data.read_text())
    settings = {}
    for item in args.set:
        key, value = item.split("=", 1)
        section, name = key.split(".", 1)
        settings[f"MNEMONIC_{section.upper()}__{name.upper()}"] = value
    agents = [a for a in args.agents.split(",") if a]
    result = run_daemon(data, settings, agents, args.age_days)
    results = {"mnemonic": result["table"]}
    if not args.no_baselines:
        results.update(run_baselines(data))
    if args.json:
        print(
            json.dumps(
                {"results": results, "timings": result["timings"], "phase": result["phase"]},
                indent=2,
            )
        )
        return
    n = result["table"]["overall"]["n"]
    print(
        f"LoCoMo dev: {len(data)} conversations, {n:.0f} queries;"
        f" settings: {settings or 'defaults'}"
    )
    print_table(results)
    if result["phase"]:
        print(f"\nagents after ingest: {json.dumps(result['phase'])}")
    t = result["timings"]
    print(
        f"\ncold start {t['cold_start_s']:.2f} s, ingest {t['ingest_per_s']:.0f} turns/s,"
        f" query p50 {t['query_p50_ms']:.1f} ms, p95 {t['query_p95_ms']:.1f} ms,"
        f" answers under 10 results {t['short_answers']:.0f}, empty {t['empty_answers']:.0f};"
        f" off-topic probes answered {t['off_topic_answered']:.0f}/{t['off_topic_queries']:.0f}"
    )


if __name__ == "__main__":
    main()
