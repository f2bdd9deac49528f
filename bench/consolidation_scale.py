"""One consolidation cycle at 100k memories (issue 12 §8): how long it takes, and /query
latency while it runs against the same daemon quiet (target: p95 at most 2x quiet).

The store is recall_scale's cached filled home (100k short memories, ~6 links each),
copied; a first start migrates and builds, the measured start loads. To give decay real
work the store is aged first (``agents_phase.age_store``: learning and access times moved
back ``--age-days``), as a fake clock would. Then:

1. quiet: ``--queries`` single-client queries, nothing else running;
2. cycle: ``POST /api/v1/agents/consolidation/run?wait=false``, and the same kind of
   queries from one client until the cycle ends (its duration and summary from
   ``GET /api/v1/agents``);
3. again: a second cycle at once (idempotent: it should change nothing, read-only cost).

    python bench/consolidation_scale.py [--size 100000] [--age-days 45] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency as lat
import recall_scale as rs
from agents_phase import age_store


def _agent(client: Any, name: str) -> dict[str, Any]:
    for item in client.get("/api/v1/agents").json()["items"]:
        if item["name"] == name:
            return dict(item)
    raise SystemExit(f"no agent {name!r} in GET /api/v1/agents")


def _queries_until(client: Any, pool: rs.QueryPool, done: Any, limit: int) -> list[float]:
    samples: list[float] = []
    while not done() and len(samples) < limit:
        i, text, project = pool.next()
        ms, status = rs.ask(client, i, text, project)
        if status == 200:
            samples.append(ms)
    return samples


def cycle(client: Any, pool: rs.QueryPool, max_queries: int) -> dict[str, Any]:
    before = _agent(client, "consolidation").get("last_run") or {}
    t0 = time.perf_counter()
    response = client.post("/api/v1/agents/consolidation/run", params={"wait": "false"})
    response.raise_for_status()
    state: dict[str, Any] = {}

    def done() -> bool:
        item = _agent(client, "consolidation")
        last = item.get("last_run") or {}
        if not item["running"] and last.get("id") != before.get("id"):
            state.update(last)
            return True
        return False

    samples = _queries_until(client, pool, done, max_queries)
    while not done():
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "took_ms": state.get("took_ms"),
        "ok": state.get("ok"),
        "summary": state.get("summary"),
        "queries": rs.stats(samples),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    source, fill = rs.cached_home(args.cache, args.size, args.links, refill=False)
    corpus_texts = {item.content for item in lat.iter_corpus(args.size)}
    pool = rs.query_pool(corpus_texts, lat.QUERIES + lat.WARMUP_QUERIES, 20_000)
    home = rs.copy_home(source)
    row: dict[str, Any] = {"size": args.size, "age_days": args.age_days, "commit": rs.commit()}
    try:
        lat.progress("first start (migrate, build the recall index)")
        with lat.daemon(home) as d:
            rs.measure_start(d, time.perf_counter(), 3600)
        aged = age_store(home / "data" / "mnemonic.db", args.age_days)
        lat.progress(f"aged {aged:,} memories by {args.age_days} days; measured start")
        with lat.daemon(home) as d:
            rs.measure_start(d, time.perf_counter(), 3600)
            row["load_avg_before"] = os.getloadavg()
            row["quiet"] = rs.stats(
                [rs.ask(d.client, *pool.next())[0] for _ in range(args.queries)]
            )
            lat.progress(f"quiet p95 {row['quiet']['p95']:.1f} ms; consolidation cycle")
            row["cycle"] = cycle(d.client, pool, args.max_queries)
            c = row["cycle"]
            lat.progress(
                f"cycle {c['wall_s']:.1f} s, p95 during it {c['queries'].get('p95', 0):.1f} ms"
            )
            row["again"] = cycle(d.client, pool, args.max_queries)
            row["rss_mb"] = lat.rss_mb(d.pid)
            row["problems"] = lat.log_problems(d.log)
    finally:
        shutil.rmtree(home.parent, ignore_errors=True)
    row["fill"] = {k: fill.get(k) for k in ("size", "date", "commit")}
    return row


def table(r: dict[str, Any]) -> str:
    quiet = r["quiet"]
    lines = [
        f"consolidation at {r['size']:,} memories (aged {r['age_days']} days),"
        f" commit {r['commit']}",
        "| phase | wall | /query p50 | /query p95 | p95 / quiet | queries |",
        "|---|---|---|---|---|---|",
        f"| quiet | - | {quiet['p50']:.1f} ms | {quiet['p95']:.1f} ms | 1.00 | {quiet['n']} |",
    ]
    for name in ("cycle", "again"):
        c = r[name]
        q = c["queries"]
        ratio = q.get("p95", 0) / quiet["p95"] if q.get("n") else float("nan")
        lines.append(
            f"| {name} | {c['wall_s']:.1f} s | {q.get('p50', 0):.1f} ms |"
            f" {q.get('p95', 0):.1f} ms | {ratio:.2f} | {q.get('n', 0)} |"
        )
    lines.append(f"\nfirst cycle: {json.dumps(r['cycle']['summary'])}")
    lines.append(f"second cycle: {json.dumps(r['again']['summary'])}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--links", type=int, default=6)
    parser.add_argument("--age-days", type=float, default=45.0)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--max-queries", type=int, default=5000)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "mnemonic-bench")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rs.check_source()
    result = run(args)
    print(json.dumps(result, indent=2, default=str) if args.json else table(result))


if __name__ == "__main__":
    main()
