"""One cycle of each cognitive agent at 100k memories (issue 13 §7): how long each takes, and
/query latency while it runs against the same daemon quiet (target: p95 at most 2x quiet).

The store is recall_scale's cached filled home (100k short memories, ~6 links each),
copied to a temp folder (the cache itself is never written); a first start migrates and
builds, then the store is aged (``agents_phase.age_store``, ``--age-days``) so decay has
real work, as in ``bench/consolidation_scale.py``. On the measured start:

1. quiet: ``--queries`` single-client ``/query`` calls (recall_scale's query generator,
   every query distinct, half filtered by project), nothing else running;
2. for each agent in order (episoding first, so the dreamer has episodes to link across):
   ``POST /api/v1/agents/{name}/run?wait=true`` in a thread while this process keeps one
   client querying until the cycle's answer comes back; the cycle's duration and summary
   are from that answer.

Schedules are pushed far out (``interval_s`` 10^6 s), the reactor and enrichment are off,
so nothing but the agent under test runs beside the queries. No LLM is configured: every
agent runs its heuristic path (an LLM adds network wait, not daemon CPU).

    python bench/cognition_scale.py [--size 100000] [--age-days 45] [--queries 300]
        [--agents episoding,consolidation,dreaming,abstraction,metacognition] [--json]

An agent named twice in ``--agents`` runs twice (the second row is ``name#2``): the
dreamer's first cycle after a start parses every memory's terms, later ones only what
changed (``cognition.dreaming.TermCache``), so ``--agents episoding,dreaming,dreaming``
shows both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency as lat
import recall_scale as rs
from agents_phase import age_store

AGENTS = ("episoding", "consolidation", "dreaming", "abstraction", "metacognition")
FAR = "1000000"  # seconds: no scheduled cycle during the run

SETTINGS = {
    "MNEMONIC_EPISODES__INTERVAL_S": FAR,
    "MNEMONIC_CONSOLIDATION__INTERVAL_S": FAR,
    "MNEMONIC_DREAMING__ENABLED": "true",
    "MNEMONIC_DREAMING__INTERVAL_S": FAR,
    "MNEMONIC_ABSTRACTION__ENABLED": "true",
    "MNEMONIC_ABSTRACTION__INTERVAL_S": FAR,
    "MNEMONIC_METACOGNITION__ENABLED": "true",
    "MNEMONIC_METACOGNITION__INTERVAL_S": FAR,
    "MNEMONIC_ORCHESTRATOR__INTERVAL_S": FAR,
    "MNEMONIC_ORCHESTRATOR__SELF_TEST_INTERVAL_S": FAR,
    "MNEMONIC_ENRICHMENT__ENABLED": "false",
    "MNEMONIC_REACTOR__ENABLED": "false",
}


def run_cycle(client: Any, pool: rs.QueryPool, name: str, max_queries: int) -> dict[str, Any]:
    """One cycle of ``name`` (``?wait=true`` in a thread) with queries until it answers."""
    answer: dict[str, Any] = {}

    def post() -> None:
        t0 = time.perf_counter()
        try:
            with rs.client_for(str(client.base_url).rstrip("/")) as own:
                response = own.post(
                    f"/api/v1/agents/{name}/run", params={"wait": "true"}, timeout=7200
                )
            answer["status"] = response.status_code
            answer["body"] = response.json()
        except Exception as exc:
            answer["status"] = 0
            answer["body"] = {"error": f"{type(exc).__name__}: {exc}"}
        answer["wall_s"] = time.perf_counter() - t0

    thread = threading.Thread(target=post, name=f"run-{name}", daemon=True)
    thread.start()
    samples: list[float] = []
    errors = 0
    while thread.is_alive() and len(samples) < max_queries:
        i, text, project = pool.next()
        ms, status = rs.ask(client, i, text, project)
        if status == 200 and thread.is_alive():  # a query that ended after the cycle: out
            samples.append(ms)
        elif status != 200:
            errors += 1
    thread.join()
    body = answer.get("body") or {}
    body = body.get("run", body)  # 200: {"agent", "state", "run": the run record}
    return {
        "status": answer.get("status"),
        "wall_s": answer.get("wall_s"),
        "took_ms": body.get("took_ms"),
        "ok": body.get("ok"),
        "error": body.get("error"),
        "summary": body.get("summary"),
        "queries": rs.stats(samples),
        "query_errors": errors,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    source, fill = rs.cached_home(args.cache, args.size, args.links, refill=False)
    corpus_texts = {item.content for item in lat.iter_corpus(args.size)}
    pool = rs.query_pool(corpus_texts, lat.QUERIES + lat.WARMUP_QUERIES, 30_000)
    home = rs.copy_home(source)
    os.environ.update(SETTINGS)  # lat.daemon passes this process's environment on
    row: dict[str, Any] = {
        "size": args.size,
        "age_days": args.age_days,
        "commit": rs.commit(),
        "cpus": os.cpu_count(),
        "settings": SETTINGS,
    }
    try:
        lat.progress(f"copied the cached home to {home}; first start (migrate, build)")
        with lat.daemon(home) as d:
            rs.measure_start(d, time.perf_counter(), 3600)
        aged = age_store(home / "data" / "mnemonic.db", args.age_days)
        lat.progress(f"aged {aged:,} memories by {args.age_days} days; measured start")
        with lat.daemon(home) as d:
            rs.measure_start(d, time.perf_counter(), 3600)
            row["load_avg_quiet"] = os.getloadavg()
            for _ in range(lat.WARMUP_QUERIES):
                rs.ask(d.client, *pool.next())
            row["quiet"] = rs.stats(
                [rs.ask(d.client, *pool.next())[0] for _ in range(args.queries)]
            )
            lat.progress(
                f"quiet p50 {row['quiet']['p50']:.1f} ms, p95 {row['quiet']['p95']:.1f} ms"
            )
            row["cycles"] = {}
            for name in args.agents:
                # an agent named twice runs twice: "dreaming#2" is its second cycle (the
                # dreamer's term cache is warm from the first, as in a running daemon)
                runs = sum(1 for k in row["cycles"] if k.split("#")[0] == name)
                key = f"{name}#{runs + 1}" if runs else name
                row[f"load_avg_{key}"] = os.getloadavg()
                lat.progress(f"{key}: one cycle with queries beside it")
                c = row["cycles"][key] = run_cycle(d.client, pool, name, args.max_queries)
                q = c["queries"]
                lat.progress(
                    f"  {key}: HTTP {c['status']}, {c['wall_s']:.1f} s, ok {c['ok']},"
                    f" p95 {q.get('p95', 0):.1f} ms over {q.get('n', 0)} queries"
                )
            row["quiet_after"] = rs.stats(
                [rs.ask(d.client, *pool.next())[0] for _ in range(args.queries)]
            )
            row["rss_mb"] = lat.rss_mb(d.pid)
            row["problems"] = lat.log_problems(d.log)
    finally:
        row["load_avg_end"] = os.getloadavg()
        shutil.rmtree(home.parent, ignore_errors=True)
    row["fill"] = {k: fill.get(k) for k in ("size", "date", "commit")}
    return row


def table(r: dict[str, Any]) -> str:
    quiet = r["quiet"]
    after = r.get("quiet_after") or {}
    lines = [
        f"cognitive agents at {r['size']:,} memories (aged {r['age_days']} days),"
        f" commit {r['commit']}, {r['cpus']} cores, load before the quiet run"
        f" {', '.join(f'{x:.2f}' for x in r['load_avg_quiet'])}",
        "| agent | cycle | /query p50 | /query p95 | p95 / quiet p95 | queries | ok |",
        "|---|---|---|---|---|---|---|",
        f"| (quiet) | - | {quiet['p50']:.1f} ms | {quiet['p95']:.1f} ms | 1.00 |"
        f" {quiet['n']} | - |",
    ]
    for name, c in r["cycles"].items():
        q = c["queries"]
        ratio = q["p95"] / quiet["p95"] if q.get("n") else float("nan")
        target = "" if not q.get("n") else (" ✓" if ratio <= 2.0 else " ✗")
        took = c["took_ms"] / 1000 if c.get("took_ms") is not None else c["wall_s"]
        lines.append(
            f"| {name} | {took:.1f} s | {q.get('p50', 0):.1f} ms | {q.get('p95', 0):.1f} ms |"
            f" {ratio:.2f}{target} | {q.get('n', 0)} | {c['ok']} |"
        )
    if after:
        lines.append(
            f"| (quiet, after) | - | {after['p50']:.1f} ms | {after['p95']:.1f} ms |"
            f" {after['p95'] / quiet['p95']:.2f} | {after['n']} | - |"
        )
    lines.append("")
    for name, c in r["cycles"].items():
        shown = c["summary"] if c["ok"] else c["error"]
        lines.append(f"{name}: {json.dumps(shown)}")
    problems = r.get("problems") or []
    if problems:  # loop-watchdog stalls and the like: how many, and where the agents' were
        lines.append(f"daemon log problems: {len(problems)}; in agent code:")
        lines += [f"  {p}" for p in problems if "mnemonic/agents/" in p][:10]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--links", type=int, default=6)
    parser.add_argument("--age-days", type=float, default=45.0)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--max-queries", type=int, default=20_000)
    parser.add_argument(
        "--agents",
        type=lambda s: [a for a in s.split(",") if a],
        default=list(AGENTS),
        help="comma-separated, run in this order",
    )
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "mnemonic-bench")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save", type=Path, help="also write the JSON result here")
    args = parser.parse_args()
    rs.check_source()
    result = run(args)
    if args.save:
        args.save.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps(result, indent=2, default=str) if args.json else table(result))


if __name__ == "__main__":
    main()
