"""Lifecycle simulation (issue 12 §8): 90 simulated days of developer work through a real
daemon, and what the thinking half makes of it.

What it measures, per run (without an LLM, and with a scripted stand-in for one):
raw memories posted, memories by state (active / fading / archived / merged), merges
(gist memories) and unmerges, episodes (count, mean size, closed, how described), links
by relation (supersedes included, and which kind of observation the newer side of each
supersedes link was), LLM calls per 1,000 raw memories by operation, consolidation cycles
and what they changed, how a simulated user's recall probes fared (does the current value
of a changed fact rank first?), wall time by phase; and invariants checked on the way and
on a final read-only look at the SQLite file: every posted observation is a raw memory,
no memory row ever disappears (counts never decrease), salience in [0, 1], utility within
the feedback bounds, supersedes links point from newer to older, episode sizes match their
member rows, merged memories point at a live memory (their gist, or the earlier twin the
encoder merged a near-duplicate into), raw rows beyond the observations are the gists'.

Ground truth comes from the generator (``bench/lifecycle_events.py``): each observation
carries its kind (and, for the mutable facts, which fact and which value) in metadata, so
a ``supersedes`` link is counted correct only when both sides state the same fact and the
newer side a later value. The LLM run uses ``bench/lifecycle_scripted_llm.py``: a scripted
stand-in that copies words from the prompt, not a model (its docstring says what it does).

How time is simulated. There is no test clock in the daemon, so the simulation moves the
*store* instead of the clock: day ``d`` of ``D`` happens ``D - d`` days before the real
now (observations carry those timestamps, which the episoder and supersession read), and
after each simulated day :func:`advance_clock` moves every stored time that decay and
pruning measure one day into the past: memories' ``created_at`` and ``last_accessed_at``
(``bench/agents_phase.age_store``), links' ``created_at``, and the consolidation's decay
watermarks (without the last one, decay would see only the real seconds between two
nightly cycles). One simulated day is:

1. post the day's observations (``POST /api/v1/memories/batch?wait=true``);
2. the simulated user asks a few questions (``/api/v1/query``) and rates some results
   (``/api/v1/feedback``: helpful when a result states the current value, irrelevant when
   it states none or only a stale one), so access and feedback protection take part;
3. the nightly agents, each through ``POST /api/v1/agents/{name}/run?wait=true``:
   episoding, enrichment, supersession (the LLM review of borderline pairs), consolidation.
   The daemon runs the first three every 60 s, so within a day they are repeated until
   their backlog is empty (bounded); consolidation runs once, as a nightly cron would;
4. the clock moves on: ``advance_clock(db, 1.0)``.

The agents run before the day is aged: the enrichment agent only takes memories that
arrived within ``enrichment.catch_up_s`` (1 h), as a daemon running all day would.
Settings that only make sense in real time are changed for the simulation and printed:
the agents' own schedules are pushed out (the script runs them), the enrichment budget
per wall-clock hour is lifted (90 days pass in minutes), the perception watchers are off
(nothing from this machine enters the store).

Size: the issue asks for ~100-200 observations per working day; the default is 60 because
ingest runs at ~35 memories/s on the shared 2-core machine (the embedder is the limit), and
a full default run (both modes) should stay near 5 minutes. ``--per-day 150`` is the
full-size run (~2.5x longer).

    python bench/lifecycle.py [--days 90] [--per-day 60] [--seed 7]
                              [--llm none|scripted|both] [--json] [--keep]
                              [--save report.json] [--progress]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from agents_phase import age_store  # noqa: E402
from lifecycle_events import Day, Generator, Probe  # noqa: E402
from lifecycle_scripted_llm import scripted_llm  # noqa: E402
from server import running_daemon  # noqa: E402

STATES = ("active", "fading", "archived", "merged")
SIM_SETTINGS = {
    "MNEMONIC_EPISODES__INTERVAL_S": "1000000",
    "MNEMONIC_ENRICHMENT__INTERVAL_S": "1000000",
    "MNEMONIC_SUPERSESSION__REVIEW_INTERVAL_S": "1000000",
    "MNEMONIC_CONSOLIDATION__INTERVAL_S": "0",
    "MNEMONIC_ENRICHMENT__MAX_PER_HOUR": "1000000",
    "MNEMONIC_SHELL_HISTORY__ENABLED": "false",
    "MNEMONIC_GIT__ENABLED": "false",
    "MNEMONIC_FILESYSTEM__ENABLED": "false",
}
GAUGES = frozenset({"pending", "queue", "watermark", "open", "took_ms"})  # not summed
REPEATED = {"episoding": 20, "enrichment": 100, "supersession": 100}  # cycles a day at most
SNAPSHOT_EVERY = 15  # days between timeline rows


# -- the clock --------------------------------------------------------------------------

DECAY_WATERMARKS = "consolidation.decay_watermarks"  # store/consolidation.py DECAY_META


def advance_clock(db: Path, days: float) -> None:
    """One more simulated day for everything in the store that measures elapsed time.

    ``age_store`` moves memories' ``created_at`` and ``last_accessed_at``. Two more clocks
    live in the store and must move with them, or a multi-day simulation stops decaying
    after the first cycle: the consolidation's decay watermarks (the real time up to which
    each seq range was already decayed; the next cycle decays from there) and the links'
    ``created_at`` (pruning spares links younger than ``link_prune_age_days``).
    """
    age_store(db, days)
    shift = timedelta(days=days).total_seconds()
    conn = sqlite3.connect(db, timeout=60)
    back = f"strftime('%Y-%m-%dT%H:%M:%f000+00:00', julianday({{col}}) - {days!r})"
    try:
        with conn:
            conn.execute(
                f"UPDATE associations SET created_at = {back.format(col='created_at')},"
                f" updated_at = {back.format(col='updated_at')}"
            )
            found = conn.execute(
                "SELECT value FROM system_meta WHERE key = ?", (DECAY_WATERMARKS,)
            ).fetchone()
            if found:
                marks = json.loads(found[0])
                marks["times"] = [None if t is None else float(t) - shift for t in marks["times"]]
                conn.execute(
                    "UPDATE system_meta SET value = ? WHERE key = ?",
                    (json.dumps(marks), DECAY_WATERMARKS),
                )
    finally:
        conn.close()


# -- the agents --------------------------------------------------------------------------


def run_agent(client: httpx.Client, name: str) -> dict[str, Any]:
    """One cycle (waiting); a 409 (a cycle already under way) is retried."""
    for _ in range(600):
        resp = client.post(f"/api/v1/agents/{name}/run", params={"wait": "true"}, timeout=3600)
        if resp.status_code == 409:
            time.sleep(0.1)
            continue
        resp.raise_for_status()
        run = resp.json()["run"]
        if not run["ok"]:
            raise RuntimeError(f"agent {name} failed: {run['error']}")
        summary: dict[str, Any] = run["summary"]
        return summary
    raise RuntimeError(f"agent {name} stayed busy for a minute")


def _more(name: str, summary: dict[str, Any]) -> bool:
    """Whether a repeated agent still has work after this cycle."""
    if name == "episoding":
        return bool(summary.get("backlog"))
    if name == "enrichment":
        return summary.get("mode") == "llm" and int(summary.get("considered", 0)) > 0
    if name == "supersession":
        return int(summary.get("pending", 0)) > 0 and int(summary.get("judged", 0)) > 0
    return False


def _add(totals: dict[str, float], summary: dict[str, Any]) -> None:
    """Sum a cycle's counters into ``totals`` (gauges such as a queue length are kept as
    their last value instead)."""
    for key, value in summary.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            if key in GAUGES:
                totals[f"last_{key}"] = value
            else:
                totals[key] = totals.get(key, 0) + value


def nightly(client: httpx.Client, stats: dict[str, Any]) -> None:
    """The day's agent cycles, in order; counts and times go into ``stats``."""
    for name in ("episoding", "enrichment", "supersession"):
        t0 = time.perf_counter()
        for _ in range(REPEATED[name]):
            summary = run_agent(client, name)
            stats["cycles"][name] += 1
            _add(stats["agent_totals"][name], summary)
            if not _more(name, summary):
                break
        stats["time"][f"agent_{name}"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = run_agent(client, "consolidation")
    stats["cycles"]["consolidation"] += 1
    _add(stats["agent_totals"]["consolidation"], summary)
    stats["time"]["agent_consolidation"] += time.perf_counter() - t0


# -- the simulated user ------------------------------------------------------------------


def _has(text: str, words: tuple[str, ...]) -> bool:
    low = text.lower()
    return bool(words) and all(w in low for w in words)


def ask(client: httpx.Client, probe: Probe, rate: bool, stats: dict[str, Any]) -> None:
    """One question; with ``rate``, feedback on the top five as a user who knows the
    current value would give it."""
    resp = client.post(
        "/api/v1/query", json={"query": probe.query, "project": probe.project, "limit": 10}
    )
    resp.raise_for_status()
    answer = resp.json()
    results = [r["memory"] for r in answer["results"]]
    p = stats["probes"]
    p["asked"] += 1
    top5 = results[:5]
    p["hit_at_5"] += any(_has(m["content"], probe.expect) for m in top5)
    if probe.updated:
        p["updated_asked"] += 1
        if results:
            first = results[0]["content"]
            p["current_first"] += _has(first, probe.expect)
            p["stale_first"] += _has(first, probe.stale) and not _has(first, probe.expect)
    if not rate or not top5:
        return
    helpful = [m["id"] for m in top5 if _has(m["content"], probe.expect)]
    useless = [m["id"] for m in top5 if not _has(m["content"], probe.expect)][:2]
    for quality, ids in (("helpful", helpful), ("irrelevant", useless)):
        if ids:
            body = {"query_id": answer["query_id"], "quality": quality, "memory_ids": ids}
            client.post("/api/v1/feedback", json=body).raise_for_status()
            p[f"rated_{quality}"] += len(ids)


# -- reading the store -------------------------------------------------------------------


def _ro(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)


def snapshot(db: Path) -> dict[str, int]:
    """Counts a day's invariants and the timeline need (read-only)."""
    conn = _ro(db)
    try:
        raw, observed = conn.execute(
            "SELECT count(*), coalesce(sum(json_extract(metadata, '$.sim_kind') IS NOT NULL), 0)"
            " FROM raw_memories"
        ).fetchone()
        total, top = conn.execute("SELECT count(*), coalesce(max(seq), 0) FROM memories").fetchone()
        states = dict(conn.execute("SELECT state, count(*) FROM memories GROUP BY state"))
        episodes = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
        sup = conn.execute(
            "SELECT count(*) FROM associations WHERE relation = 'supersedes'"
        ).fetchone()[0]
    finally:
        conn.close()
    out = {
        "raw": raw,
        "raw_observed": observed,
        "memories": total,
        "max_seq": top,
        "episodes": episodes,
        "supersedes": sup,
    }
    out.update({s: int(states.get(s, 0)) for s in STATES})
    return out


def final_read(db: Path, bounds: tuple[float, float]) -> dict[str, Any]:
    """Everything the report needs from the SQLite file, read-only, and the invariants."""
    conn = _ro(db)
    q = conn.execute
    try:
        rel = dict(q("SELECT relation, count(*) FROM associations GROUP BY relation"))
        lo_s, hi_s, lo_u, hi_u = q(
            "SELECT min(salience), max(salience), min(utility), max(utility) FROM memories"
        ).fetchone()
        gists, sources, unmerged = q(
            "SELECT count(DISTINCT gist_seq), count(*), coalesce(sum(unmerged_at IS NOT NULL), 0)"
            " FROM memory_merges"
        ).fetchone()
        dangling_merged = q(
            "SELECT count(*) FROM memories WHERE state = 'merged' AND (merged_into IS NULL"
            " OR merged_into NOT IN (SELECT id FROM memories))"
        ).fetchone()[0]
        backwards = [
            list(row)
            for row in q(
                "SELECT n.seq, n.timestamp, n.state, coalesce(json_extract(n.metadata,"
                " '$.sim_kind'), 'gist'), o.seq, o.timestamp, o.state,"
                " coalesce(json_extract(o.metadata, '$.sim_kind'), 'gist'), a.created_at"
                " FROM associations a JOIN memories n ON n.seq = a.source_seq"
                " JOIN memories o ON o.seq = a.target_seq WHERE a.relation = 'supersedes'"
                " AND julianday(n.timestamp) < julianday(o.timestamp)"
            )
        ]
        edges = q(
            "SELECT n.seq, " + _SIM.format(t="n") + ", " + _SIM.format(t="o") + " FROM"
            " associations a JOIN memories n ON n.seq = a.source_seq"
            " JOIN memories o ON o.seq = a.target_seq WHERE a.relation = 'supersedes'"
        ).fetchall()
        updates = q(
            "SELECT count(*) FROM memories WHERE json_extract(metadata, '$.sim_kind') = 'update'"
        ).fetchone()[0]
        raw_gists = q(
            "SELECT count(*) FROM raw_memories WHERE json_extract(metadata, '$.sim_kind') IS NULL"
        ).fetchone()[0]
        merged_at_ingest = q(
            "SELECT count(*) FROM memories WHERE state = 'merged'"
            " AND seq NOT IN (SELECT source_seq FROM memory_merges)"
        ).fetchone()[0]
        wrong_sizes = q(
            "SELECT count(*) FROM episodes e WHERE memory_count !="
            " (SELECT count(*) FROM episode_memories m WHERE m.episode_id = e.id)"
        ).fetchone()[0]
        outside = q(
            "SELECT count(*) FROM memories WHERE seq NOT IN (SELECT memory_seq FROM"
            " episode_memories) AND seq NOT IN (SELECT gist_seq FROM memory_merges)"
        ).fetchone()[0]
        by_kind_state = [
            tuple(r)
            for r in q(
                "SELECT coalesce(json_extract(metadata, '$.sim_kind'), 'gist'), state, count(*)"
                " FROM memories GROUP BY 1, 2"
            )
        ]
        enriched = q(
            "SELECT count(*) FROM memories WHERE json_extract(metadata, '$.encoded_by') = 'llm'"
        ).fetchone()[0]
    finally:
        conn.close()
    invariants = {
        "salience_in_0_1": lo_s is not None and lo_s >= 0.0 and hi_s <= 1.0,
        "utility_in_bounds": lo_u is not None and bounds[0] - 1e-9 <= lo_u <= hi_u <= bounds[1],
        "merged_point_at_live_memory": dangling_merged == 0,
        "supersedes_newer_to_older": not backwards,
        "episode_sizes_match": wrong_sizes == 0,
        "no_unmerges": unmerged == 0,
        "raw_rows_beyond_observations_are_gists": raw_gists == gists,
    }
    kind_state: dict[str, dict[str, int]] = defaultdict(dict)
    for kind, state, n in by_kind_state:
        kind_state[str(kind)][str(state)] = int(n)
    return {
        "links_by_relation": {str(k): int(v) for k, v in sorted(rel.items())},
        "salience_range": [lo_s, hi_s],
        "utility_range": [lo_u, hi_u],
        "gists": gists,
        "merged_sources": sources,
        "unmerged": unmerged,
        **supersession_truth(edges, updates),
        "supersedes_backwards": backwards[:20],
        "merged_at_ingest": merged_at_ingest,
        "memories_outside_episodes": outside,
        "state_by_kind": dict(kind_state),
        "enriched_by_llm": enriched,
        "invariants": invariants,
    }


_SIM = (
    "{t}.type, json_extract({t}.metadata, '$.sim_kind'), json_extract({t}.metadata, '$.sim_fact'),"
    " json_extract({t}.metadata, '$.sim_value')"
)


def supersession_truth(edges: list[tuple[Any, ...]], updates: int) -> dict[str, Any]:
    """Each ``supersedes`` link judged against the generator's ground truth: correct when
    both sides state the same mutable fact and the newer one a later value of it."""
    verdicts: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    unrelated: Counter[str] = Counter()
    updates_linked: set[int] = set()
    for seq, n_type, n_kind, n_fact, n_value, o_type, o_kind, o_fact, o_value in edges:
        by_kind[str(n_kind or "gist")] += 1
        if n_type == o_type == "handoff":
            verdicts["handoff_chain"] += 1  # the newest handoff replaces the last: debatable
        elif n_fact is not None and n_fact == o_fact:
            if n_value > o_value:
                verdicts["correct"] += 1
                if n_kind == "update":
                    updates_linked.add(seq)
            else:
                verdicts["same_fact_not_newer"] += 1
        else:
            verdicts["unrelated"] += 1
            unrelated[f"{n_kind or 'gist'}>{o_kind or 'gist'}"] += 1
    return {
        "supersedes_verdicts": dict(verdicts),
        "supersedes_by_newer_kind": dict(by_kind.most_common()),
        "supersedes_unrelated_pairs": dict(unrelated.most_common()),
        "updates_posted": updates,
        "updates_linked": len(updates_linked),
    }


def episodes(client: httpx.Client) -> dict[str, Any]:
    """Every episode through ``GET /api/v1/episodes`` (paged)."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 200}
        if cursor:
            params["cursor"] = cursor
        resp = client.get("/api/v1/episodes", params=params)
        resp.raise_for_status()
        page = resp.json()
        items.extend(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            break
    sizes = [int(e["memory_count"]) for e in items]
    return {
        "count": len(items),
        "closed": sum(e["state"] == "closed" for e in items),
        "mean_size": sum(sizes) / len(sizes) if sizes else 0.0,
        "max_size": max(sizes, default=0),
        "described_by": dict(Counter(e["described_by"] for e in items)),
        "with_files": sum(bool(e["files"]) for e in items),
        "with_commands": sum(bool(e["commands"]) for e in items),
    }


def llm_usage(client: httpx.Client, raw: int) -> dict[str, Any]:
    resp = client.get("/api/v1/llm/usage")
    resp.raise_for_status()
    usage = resp.json()
    per_k = {
        g["key"]: round(1000 * int(g["calls"]) / raw, 1) if raw else 0.0
        for g in usage["by_operation"]
    }
    return {
        "calls": usage["totals"]["calls"],
        "failures": usage["totals"]["failures"],
        "by_operation": {g["key"]: g["calls"] for g in usage["by_operation"]},
        "per_1000_raw": per_k,
        "per_1000_raw_total": round(1000 * usage["totals"]["calls"] / raw, 1) if raw else 0.0,
    }


def consolidation(client: httpx.Client) -> dict[str, Any]:
    resp = client.get("/api/v1/consolidation/history", params={"limit": 1000})
    resp.raise_for_status()
    rows = resp.json()["items"]
    totals: Counter[str] = Counter()
    for row in rows:
        totals.update({k: v for k, v in row["counts"].items() if isinstance(v, int)})
    return {
        "cycles": len(rows),
        "budget_exhausted": sum(bool(r["budget_exhausted"]) for r in rows),
        "changed": dict(totals),
        "cycles_that_changed": sum(any(v for v in r["counts"].values()) for r in rows),
    }


# -- one run -----------------------------------------------------------------------------


def _stats() -> dict[str, Any]:
    return {
        "cycles": Counter(),
        "agent_totals": defaultdict(dict),
        "time": Counter(),
        "probes": Counter(),
        "posted_status": Counter(),
    }


def simulate(args: argparse.Namespace, llm: str) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"mnemonic-lifecycle-{llm}-"))
    started = time.perf_counter()
    stats = _stats()
    broken: list[str] = []
    timeline: list[dict[str, Any]] = []
    posted = 0
    try:
        with (
            scripted_llm(llm == "scripted") as (llm_settings, server),
            running_daemon({**SIM_SETTINGS, **llm_settings}, home) as (client, cold),
        ):
            stats["time"]["cold_start"] = cold
            db = home / "data" / "mnemonic.db"
            gen = Generator(args.seed, args.days, args.per_day, datetime.now(UTC))
            last = snapshot(db)
            for d in range(args.days):
                day = gen.day(d)
                posted += post_day(client, day, stats)
                t0 = time.perf_counter()
                for i, probe in enumerate(day.probes):
                    ask(client, probe, rate=(d + i) % 3 != 0, stats=stats)
                stats["time"]["recall"] += time.perf_counter() - t0
                nightly(client, stats)
                t0 = time.perf_counter()
                advance_clock(db, 1.0)
                stats["time"]["aging"] += time.perf_counter() - t0
                now = snapshot(db)
                broken.extend(_daily_checks(d, last, now, posted))
                last = now
                if (d + 1) % SNAPSHOT_EVERY == 0 or d + 1 == args.days:
                    timeline.append({"day": d + 1, **now})
                if args.progress:
                    print(f"[{llm}] day {d + 1}/{args.days}: {now}", file=sys.stderr)
            result = collect(client, db, posted, stats)
            if server is not None:
                result["llm"]["server_chat_requests"] = len(
                    server.requests_to("/v1/chat/completions")
                )
    finally:
        if args.keep:
            print(f"[{llm}] home kept at {home}", file=sys.stderr)
        else:
            shutil.rmtree(home, ignore_errors=True)
    result["invariants"]["daily"] = not broken
    result["broken"] = broken[:20]
    result["timeline"] = timeline
    result["llm_mode"] = llm
    result["posted"] = posted
    result["posted_status"] = dict(stats["posted_status"])
    result["agent_cycles"] = dict(stats["cycles"])
    result["agent_totals"] = {k: dict(v) for k, v in stats["agent_totals"].items()}
    result["probes"] = dict(stats["probes"])
    result["time_s"] = {k: round(v, 2) for k, v in stats["time"].items()}
    result["time_s"]["total"] = round(time.perf_counter() - started, 2)
    return result


def post_day(client: httpx.Client, day: Day, stats: dict[str, Any]) -> int:
    t0 = time.perf_counter()
    bodies = [o.body() for o in day.observations]
    for start in range(0, len(bodies), 500):
        chunk = bodies[start : start + 500]
        resp = client.post(
            "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": chunk}
        )
        resp.raise_for_status()
        stats["posted_status"].update(r["status"] for r in resp.json()["results"])
    stats["time"]["ingest"] += time.perf_counter() - t0
    return len(bodies)


def _daily_checks(d: int, last: dict[str, int], now: dict[str, int], posted: int) -> list[str]:
    out = []
    if now["raw_observed"] != posted:
        out.append(f"day {d}: {now['raw_observed']} raw memories of observations, {posted} posted")
    for key in ("memories", "max_seq", "raw"):
        if now[key] < last[key]:
            out.append(f"day {d}: {key} went down from {last[key]} to {now[key]}")
    return out


def collect(client: httpx.Client, db: Path, posted: int, stats: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    resp = client.get("/api/v1/stats")
    resp.raise_for_status()
    api_stats = resp.json()
    health = client.get("/api/v1/health").json()
    store = final_read(db, (0.5, 1.5))
    mem = api_stats["memories"]
    raw = sum(api_stats["raw"]["by_status"].values())
    out = {
        "raw_memories": raw,
        "memories": mem["total"],
        "by_state": {s: int(mem["by_state"].get(s, 0)) for s in STATES},
        "health_status": health.get("status"),
        "episodes": episodes(client),
        "llm": llm_usage(client, raw),
        "consolidation": consolidation(client),
        **store,
    }
    out["raw_observed"] = snapshot(db)["raw_observed"]
    out["invariants"]["raw_equals_posted"] = out["raw_observed"] == posted
    stats["time"]["collect"] += time.perf_counter() - t0
    return out


# -- output ------------------------------------------------------------------------------


def _rows(r: dict[str, Any], ops: list[str], changed: list[str]) -> list[tuple[str, str]]:
    ep = r["episodes"]
    cons = r["consolidation"]
    pr = r["probes"]
    sv = r["supersedes_verdicts"]
    upd = pr.get("updated_asked", 0)
    per_k = r["llm"]["per_1000_raw"]
    return [
        ("observations posted", f"{r['posted']:,}"),
        ("raw memories (observations + gists)", f"{r['raw_memories']:,}"),
        ("  of observations (= posted)", f"{r['raw_observed']:,}"),
        ("  reinforced on ingest (exact repeat)", f"{r['posted_status'].get('reinforced', 0):,}"),
        ("memories (incl. gists)", f"{r['memories']:,}"),
        *[(f"  {s}", f"{r['by_state'][s]:,}") for s in STATES],
        ("  merged at ingest (encoder twin)", f"{r['merged_at_ingest']:,}"),
        ("enriched by the LLM", f"{r['enriched_by_llm']:,}"),
        ("  answers rejected unfaithful / malformed", _rejected(r)),
        ("supersession review: judged / changed", _reviewed(r)),
        ("merges: gists / sources", f"{r['gists']:,} / {r['merged_sources']:,}"),
        ("unmerges", f"{r['unmerged']}"),
        ("episodes / closed", f"{ep['count']:,} / {ep['closed']:,}"),
        ("episode mean / max size", f"{ep['mean_size']:.1f} / {ep['max_size']}"),
        ("episodes by llm / heuristic", _described(ep)),
        ("memories outside episodes", f"{r['memories_outside_episodes']:,}"),
        *[(f"links {k}", f"{r['links_by_relation'].get(k, 0):,}") for k in RELATIONS],
        (
            "supersedes: correct / handoff chain / wrong",
            " / ".join(str(sv.get(k, 0)) for k in ("correct", "handoff_chain", "unrelated")),
        ),
        ("  wrong, newer>older kind (top 2)", _pairs(r["supersedes_unrelated_pairs"])),
        ("updates linked to an older value", f"{r['updates_linked']} / {r['updates_posted']}"),
        ("LLM calls (llm_usage rows)", f"{r['llm']['calls']:,}"),
        ("LLM calls per 1,000 raw", f"{r['llm']['per_1000_raw_total']}"),
        *[(f"  {k} per 1,000 raw", f"{per_k.get(k, 0.0)}") for k in ops],
        ("scripted server chat requests", f"{r['llm'].get('server_chat_requests', 0):,}"),
        ("consolidation cycles / changed", f"{cons['cycles']} / {cons['cycles_that_changed']}"),
        *[(f"  {k}", f"{cons['changed'].get(k, 0):,}") for k in changed],
        ("probes asked / hit@5", f"{pr.get('asked', 0)} / {pr.get('hit_at_5', 0)}"),
        (
            "changed-fact probes: current / stale first",
            f"{pr.get('current_first', 0)} / {pr.get('stale_first', 0)} of {upd}",
        ),
        (
            "feedback helpful / irrelevant (ids)",
            f"{pr.get('rated_helpful', 0)} / {pr.get('rated_irrelevant', 0)}",
        ),
        ("salience range", "{:.3f}..{:.3f}".format(*r["salience_range"])),
        ("utility range", "{:.3f}..{:.3f}".format(*r["utility_range"])),
        ("invariants", "ok" if all(r["invariants"].values()) else _failed(r)),
        ("wall time s: total (ingest / agents)", _time(r["time_s"])),
    ]


RELATIONS = (
    "similar",
    "temporal",
    "reinforces",
    "caused_by",
    "part_of",
    "contradicts",
    "supersedes",
)


def _rejected(r: dict[str, Any]) -> str:
    e = r["agent_totals"].get("enrichment", {})
    return f"{int(e.get('unfaithful', 0))} / {int(e.get('malformed', 0))}"


def _reviewed(r: dict[str, Any]) -> str:
    s = r["agent_totals"].get("supersession", {})
    return f"{int(s.get('judged', 0))} / {int(s.get('changed', 0))}"


def _pairs(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in list(counts.items())[:2]) or "-"


def _described(ep: dict[str, Any]) -> str:
    by = ep["described_by"]
    return f"{by.get('llm', 0):,} / {by.get('heuristic', 0):,}"


def _failed(r: dict[str, Any]) -> str:
    return "BROKEN: " + ", ".join(k for k, v in r["invariants"].items() if not v)


def _time(t: dict[str, float]) -> str:
    agents = sum(v for k, v in t.items() if k.startswith("agent_"))
    return f"{t['total']:.0f} ({t.get('ingest', 0):.0f} / {agents:.0f})"


def _union(results: list[dict[str, Any]], pick: Any) -> list[str]:
    keys: dict[str, None] = {}
    for r in results:
        keys.update(dict.fromkeys(pick(r)))
    return list(keys)


def render(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    names = [r["llm_mode"] for r in results]
    ops = _union(results, lambda r: r["llm"]["per_1000_raw"])
    changed = _union(results, lambda r: [k for k, v in r["consolidation"]["changed"].items() if v])
    table = [_rows(r, ops, changed) for r in results]
    width = max(len(label) for label, _ in table[0]) + 2
    cols = [
        max(len(n), *(len(v) for _, v in rows)) + 2 for n, rows in zip(names, table, strict=True)
    ]
    head = "".join(n.rjust(c) for n, c in zip(names, cols, strict=True))
    lines = [
        f"lifecycle: {args.days} days, ~{args.per_day}/working day, seed {args.seed}",
        "metric".ljust(width) + head,
    ]
    for i, (label, _) in enumerate(table[0]):
        cells = "".join(rows[i][1].rjust(c) for rows, c in zip(table, cols, strict=True))
        lines.append(label.ljust(width) + cells)
    for r in results:
        lines.append(f"\ntimeline ({r['llm_mode']}):")
        lines.append(
            "  day    raw  memories  active  fading  archived  merged  episodes  superseded"
        )
        for row in r["timeline"]:
            lines.append(
                f"  {row['day']:>3} {row['raw']:>6} {row['memories']:>9} {row['active']:>7}"
                f" {row['fading']:>7} {row['archived']:>9} {row['merged']:>7}"
                f" {row['episodes']:>9} {row['supersedes']:>11}"
            )
        t = r["time_s"]
        lines.append("  wall time s: " + ", ".join(f"{k} {v}" for k, v in sorted(t.items())))
        if r["broken"]:
            lines.append("  BROKEN: " + "; ".join(r["broken"]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--per-day", type=int, default=60, help="observations per working day")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--llm", choices=("none", "scripted", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--keep", action="store_true", help="keep each run's MNEMONIC_HOME")
    parser.add_argument("--save", type=Path, help="also write the JSON report to this file")
    parser.add_argument("--render", type=Path, help="only print the table of a saved report")
    parser.add_argument("--progress", action="store_true", help="one line a day on stderr")
    args = parser.parse_args()
    # a plain SIGTERM would skip the cleanup that stops the daemon and removes its home
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.render:
        saved = json.loads(args.render.read_text())
        vars(args).update({k: saved["meta"][k] for k in ("days", "per_day", "seed")})
        print(render(saved["runs"], args))
        return
    modes = ["none", "scripted"] if args.llm == "both" else [args.llm]
    results = [simulate(args, mode) for mode in modes]
    meta = {
        "days": args.days,
        "per_day": args.per_day,
        "seed": args.seed,
        "settings": SIM_SETTINGS,
    }
    report = json.dumps({"meta": meta, "runs": results}, indent=2, default=str)
    if args.save:
        args.save.write_text(report + "\n")
    if args.json:
        print(report)
    else:
        print(render(results, args))
        print("\nsimulation settings: " + ", ".join(f"{k}={v}" for k, v in SIM_SETTINGS.items()))


if __name__ == "__main__":
    main()
