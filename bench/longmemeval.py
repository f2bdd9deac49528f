"""LongMemEval retrieval benchmark through the public REST API of a real daemon.

Protocol (../shared/data/README.md): each question is its own memory space (a project);
every user turn of its haystack is one memory with its session's date as timestamp and the
session's position in metadata; batch ingest with wait=true, then /query with the question
and the project filter. Abstention questions (``_abs``) and questions with no user turn
marked ``has_answer`` are left out. Scores: turn recall_any@5/@10 (any evidence turn in the
top k) and session recall_any@5 / recall_all@5 over the first 5 distinct sessions in rank
order, by question type. The data stays in ../shared/data (MIT; never copied here).

    python bench/longmemeval.py [--data PATH] [--limit N] [--set recall.x=y ...] [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agents_phase import age_store, run_agents
from locomo import ingest
from server import running_daemon

DEFAULT_DATA = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "longmemeval-dev.json.gz"
)
MAX_CHARS = 100_000  # the API's content limit; a handful of pasted documents are longer
METRICS = ("turn R@5", "turn R@10", "session any@5", "session all@5", "newest first")


def parse_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def user_turns(question: dict[str, Any]) -> list[dict[str, Any]]:
    """One item per user turn: text, timestamp, session position, evidence flag."""
    out = []
    dates = question["haystack_dates"]
    for position, session in enumerate(question["haystack_sessions"]):
        when = parse_date(dates[position]).isoformat()
        for turn in session:
            if turn["role"] != "user" or not turn["content"].strip():
                continue
            out.append(
                {
                    "text": turn["content"][:MAX_CHARS],
                    "timestamp": when,
                    "session": position,
                    "answer": bool(turn.get("has_answer")),
                }
            )
    return out


def usable(question: dict[str, Any], items: list[dict[str, Any]]) -> bool:
    return not question["question_id"].endswith("_abs") and any(t["answer"] for t in items)


def metrics(
    ranked: list[dict[str, Any]], answer_sessions: set[int], newest: int | None = None
) -> dict[str, float]:
    """``newest first`` (NaN unless the evidence spans sessions): whether the first evidence
    turn in the ranking comes from the latest evidence session. For knowledge-update
    questions that is the newer fact ranking above the one it replaced."""

    def turn_any(k: int) -> float:
        return float(any(t["answer"] for t in ranked[:k]))

    sessions: list[int] = []
    for t in ranked:
        if t["session"] not in sessions:
            sessions.append(t["session"])
    top = set(sessions[:5])
    first = next((t for t in ranked if t["answer"]), None)
    newest_first = float("nan")
    if newest is not None and len(answer_sessions) > 1:
        newest_first = float(first is not None and first["session"] == newest)
    return {
        "turn R@5": turn_any(5),
        "turn R@10": turn_any(10),
        "session any@5": float(bool(top & answer_sessions)),
        "session all@5": float(answer_sessions <= top),
        "newest first": newest_first,
    }


def summarise(rows: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for kind, m in rows:
        groups["overall"].append(m)
        groups[kind].append(m)
    table: dict[str, dict[str, float]] = {}
    for name, ms in groups.items():
        table[name] = {
            k: float(np.nanmean(values)) if not np.isnan(values).all() else float("nan")
            for k in METRICS
            for values in [[m[k] for m in ms]]
        }
        table[name]["n"] = len(ms)
    return table


def run_daemon(
    data: list[dict[str, Any]],
    settings: dict[str, str],
    agents: list[str] | None = None,
    age_days: float = 0.0,
) -> dict[str, Any]:
    """Ingest every question's haystack, then (with ``agents``) age the store and run one
    cycle of each agent (``agents_phase.py``), then ask every question."""
    rows: list[tuple[str, dict[str, float]]] = []
    query_ms: list[float] = []
    empty = 0
    phase: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="mnemonic-longmemeval-") as home,
        running_daemon(settings, Path(home)) as (client, cold),
    ):
        ingest_s, n_turns = 0.0, 0
        spaces: list[tuple[dict[str, Any], list[dict[str, Any]], dict[str, dict[str, Any]]]] = []
        for question in data:
            items = user_turns(question)
            if not usable(question, items):
                continue
            project = question["question_id"]
            by_id: dict[str, dict[str, Any]] = {}
            t0 = time.perf_counter()
            for t, r in ingest(client, items, project, "session"):
                # a repeated turn is one memory: it counts as evidence if any copy is
                held = by_id.get(r["memory_id"])
                by_id[r["memory_id"]] = (
                    t if held is None else {**held, "answer": held["answer"] or t["answer"]}
                )
            ingest_s += time.perf_counter() - t0
            n_turns += len(items)
            spaces.append((question, items, by_id))
        if agents:
            phase["aged_rows"] = age_store(Path(home) / "data" / "mnemonic.db", age_days)
            phase["agents"] = run_agents(client, agents)
        for question, items, by_id in spaces:
            t1 = time.perf_counter()
            resp = client.post(
                "/api/v1/query",
                json={
                    "query": question["question"],
                    "project": question["question_id"],
                    "limit": 10,
                    # asked on its date (the protocol gives it): "two weeks ago" counts
                    # back from there, as it would from now in a live daemon
                    "asked_at": parse_date(question["question_date"]).isoformat(),
                },
            )
            query_ms.append((time.perf_counter() - t1) * 1000)
            resp.raise_for_status()
            results = resp.json()["results"]
            empty += not results
            ranked = [by_id[r["memory"]["id"]] for r in results if r["memory"]["id"] in by_id]
            answer_sessions = {t["session"] for t in items if t["answer"]}
            newest = max(
                (t for t in items if t["answer"]), key=lambda t: (t["timestamp"], t["session"])
            )["session"]
            rows.append((question["question_type"], metrics(ranked, answer_sessions, newest)))
        timings = {
            "cold_start_s": cold,
            "ingest_per_s": n_turns / ingest_s if ingest_s else 0.0,
            "query_p50_ms": float(np.percentile(query_ms, 50)),
            "query_p95_ms": float(np.percentile(query_ms, 95)),
            "empty_answers": float(empty),
        }
    return {"table": summarise(rows), "timings": timings, "phase": phase}


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"\n{'question type':<28} {'n':>4} " + " ".join(f"{m:>14}" for m in METRICS))
    for name in ["overall", *sorted(k for k in table if k != "overall")]:
        row = table[name]
        values = " ".join(f"{row[m]:>14.3f}" for m in METRICS)
        print(f"{name:<28} {row['n']:>4.0f} {values}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=0, help="first N questions only")
    parser.add_argument(
        "--type", default="", help="only questions of this question_type (e.g. knowledge-update)"
    )
    parser.add_argument(
        "--set", action="append", default=[], help="section.key=value config override"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--agents",
        default="",
        help="comma-separated agents to run once after ingest, before the questions",
    )
    parser.add_argument(
        "--age-days", type=float, default=0.0, help="with --agents: age the store this much first"
    )
    args = parser.parse_args()
    with gzip.open(args.data, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    if args.type:
        data = [q for q in data if q["question_type"] == args.type]
    if args.limit:
        data = data[: args.limit]
    settings = {}
    for item in args.set:
        key, value = item.split("=", 1)
        section, name = key.split(".", 1)
        settings[f"MNEMONIC_{section.upper()}__{name.upper()}"] = value
    agents = [a for a in args.agents.split(",") if a]
    result = run_daemon(data, settings, agents, args.age_days)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    n = result["table"]["overall"]["n"]
    print(f"LongMemEval dev: {n:.0f} questions; settings: {settings or 'defaults'}")
    print_table(result["table"])
    if result["phase"]:
        print(f"\nagents after ingest: {json.dumps(result['phase'])}")
    t = result["timings"]
    print(
        f"\ncold start {t['cold_start_s']:.2f} s, ingest {t['ingest_per_s']:.0f} turns/s,"
        f" query p50 {t['query_p50_ms']:.1f} ms, p95 {t['query_p95_ms']:.1f} ms,"
        f" empty answers {t['empty_answers']:.0f}"
    )


if __name__ == "__main__":
    main()
