"""Developer-workflow recall benchmark through the public REST API of a real daemon.

Issue 12 §8 asks that consolidation not lower recall on a workflow scenario set by more
than 0.005. The set (``bench/data/workflow_scenarios.json``) is hand-written: a
developer's notes, shell commands, commit messages and file edits across five projects,
with questions naming the memories that answer them. Kinds: ``lookup`` (a fact stated
once), ``update`` (a fact that changed; the current memory should rank above the ones it
replaced), ``old`` (an old memory nothing touched since: what decay could hide),
``restated`` (said twice days apart: what merging folds together) and ``multi``.

Protocol: one daemon, one project per scenario project; each project's memories are
posted oldest first in one batch (``wait=true``) with their own type, source and
timestamp and their scenario id in metadata. With ``--agents`` the store is aged
``--age-days`` and one cycle of each agent runs (``agents_phase.py``, as in locomo.py).
Every question is then asked with ``/api/v1/query`` (project filter, limit 10).

A result stands for the scenario memories it holds: its own (a batch may reinforce an
existing memory, so several) and, for a consolidation gist, those of every memory listed
in ``metadata.consolidation.gist_of`` (the gist keeps their sentences). A question's
``relevant`` entries are facts; a nested list names memories that each state that fact.

Scores per question: R@1 and R@5 (share of facts found in the top k), MRR (reciprocal rank
of the first result holding any fact), nDCG@10 (binary gain per fact, first time found);
for update questions ``current first``: a current memory ranks strictly above every
superseded one (a superseded one absent from the top 10 counts as below; the current one
absent counts as a miss).

    python bench/workflow.py [--data PATH] [--set recall.x=y ...]
        [--agents episoding,consolidation --age-days 60] [--json]

It imports nothing from ``mnemonic``: run with ``PYTHONPATH=<another tree>`` it measures
that tree's daemon.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agents_phase import age_store, run_agents
from server import running_daemon

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "workflow_scenarios.json"
KINDS = ("lookup", "update", "old", "restated", "multi")
METRICS = ("R@1", "R@5", "MRR", "nDCG@10")
TYPES = frozenset({"decision", "error", "learning", "general", "handoff", "insight"})
SOURCES = frozenset({"terminal", "filesystem", "git", "api", "user"})


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    project: str
    kind: str
    text: str
    facts: tuple[frozenset[str], ...]  # each: the memories that state one needed fact
    current: frozenset[str] = frozenset()
    superseded: frozenset[str] = frozenset()


@dataclass(slots=True)
class Loaded:
    memories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by project
    questions: list[Question] = field(default_factory=list)


def load(path: Path) -> Loaded:
    """Read and check the scenario file: unique ids, known types and sources, references
    that exist, and update questions whose current memory is one of their facts."""
    doc = json.loads(path.read_text())
    out = Loaded()
    ids: set[str] = set()
    for scenario in doc["scenarios"]:
        project = scenario["project"]
        own = {m["id"] for m in scenario["memories"]}
        if own & ids:
            raise ValueError(f"{scenario['id']}: duplicate memory ids {sorted(own & ids)}")
        ids |= own
        for m in scenario["memories"]:
            if m["type"] not in TYPES or m["source"] not in SOURCES or m["project"] != project:
                raise ValueError(f"{m['id']}: bad type, source or project")
            out.memories.setdefault(project, []).append(m)
        for q in scenario["questions"]:
            facts = tuple(frozenset(r if isinstance(r, list) else [r]) for r in q["relevant"])
            current = frozenset(q.get("current", []))
            superseded = frozenset(q.get("superseded", []))
            refs = set().union(*facts, current, superseded)
            if q["kind"] not in KINDS or not facts or refs - own:
                raise ValueError(f"{q['id']}: bad kind or references {sorted(refs - own)}")
            if q["kind"] == "update" and (
                not current or not superseded or not any(current <= f for f in facts)
            ):
                raise ValueError(f"{q['id']}: an update names its current and superseded ids")
            out.questions.append(
                Question(q["id"], project, q["kind"], q["question"], facts, current, superseded)
            )
    for items in out.memories.values():
        items.sort(key=lambda m: (m["timestamp"], m["id"]))
    return out


def score(ranked: list[set[str]], q: Question) -> dict[str, float]:
    """The scores of one answer; ``ranked`` holds the scenario memories of each result."""

    def found(k: int) -> int:
        held = set().union(*ranked[:k]) if ranked[:k] else set()
        return sum(bool(f & held) for f in q.facts)

    first = next((i for i, held in enumerate(ranked) if any(f & held for f in q.facts)), None)
    dcg = 0.0
    credited: set[int] = set()
    for i, held in enumerate(ranked[:10]):
        new = {n for n, f in enumerate(q.facts) if f & held} - credited
        if new:
            dcg += len(new) / math.log2(i + 2)  # one result may hold two facts (a gist)
            credited |= new
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(q.facts), 10)))
    out = {
        "R@1": found(1) / len(q.facts),
        "R@5": found(5) / len(q.facts),
        "MRR": 0.0 if first is None else 1 / (first + 1),
        "nDCG@10": min(1.0, dcg / ideal),
    }
    if q.kind == "update":
        out["current first"] = float(current_first(ranked, q))
    return out


def current_first(ranked: list[set[str]], q: Question) -> bool:
    """A current memory ranks strictly above every superseded one. A result holding both
    (a gist of the old and the new fact) does not count as above."""
    cur = next((i for i, held in enumerate(ranked) if held & q.current), None)
    old = next((i for i, held in enumerate(ranked) if held & q.superseded), None)
    return cur is not None and (old is None or cur < old)


def ingest(
    client: httpx.Client, project: str, items: list[dict[str, Any]], batch: int
) -> dict[str, set[str]]:
    """Post one project's memories oldest first, ``batch`` at a time; API memory id ->
    scenario memory ids."""
    held: dict[str, set[str]] = defaultdict(set)
    for start in range(0, len(items), batch):
        chunk = items[start : start + batch]
        body = {
            "memories": [
                {
                    "content": m["text"],
                    "timestamp": m["timestamp"],
                    "project": project,
                    "type": m["type"],
                    "source": m["source"],
                    "metadata": {"workflow_id": m["id"]},
                }
                for m in chunk
            ]
        }
        resp = client.post("/api/v1/memories/batch", params={"wait": "true"}, json=body)
        resp.raise_for_status()
        for m, r in zip(chunk, resp.json()["results"], strict=True):
            if r["memory_id"] is None:
                raise RuntimeError(f"{m['id']} was not encoded: {r}")
            held[r["memory_id"]].add(m["id"])
    return held


def holds(result: dict[str, Any], held: dict[str, set[str]]) -> set[str]:
    """The scenario memories one query result stands for (its own, or a gist's sources)."""
    memory = result["memory"]
    out = set(held.get(memory["id"], set()))
    gist = (memory.get("metadata") or {}).get("consolidation") or {}
    for source in gist.get("gist_of") or []:
        out |= held.get(source, set())
    return out


def states(client: httpx.Client, held: dict[str, set[str]]) -> dict[str, int]:
    """How many ingested memories are in each state (active, fading, archived, merged)."""
    count: Counter[str] = Counter()
    for memory_id in held:
        resp = client.get(f"/api/v1/memories/{memory_id}")
        resp.raise_for_status()
        count[resp.json()["state"]] += 1
    return dict(count)


def supersessions(
    client: httpx.Client, held: dict[str, set[str]], questions: list[Question]
) -> dict[str, Any] | None:
    """The ``supersedes`` links the daemon drew between ingested memories, in scenario ids:
    how many of the update questions' (current, superseded) pairs it linked, and every
    other link (a false one, or a pair no question asks about). None on a daemon without
    supersessions."""
    edges: set[tuple[str, str]] = set()
    for memory_id in held:
        resp = client.get(f"/api/v1/memories/{memory_id}/supersessions")
        if resp.status_code == 404:  # every memory here exists: the route does not
            return None  # (a daemon from before issue 12)
        resp.raise_for_status()
        for edge in resp.json()["supersedes"]:
            for newer in held.get(edge["newer_id"], set()):
                for older in held.get(edge["older_id"], set()):
                    edges.add((newer, older))
    expected = {
        (c, o) for q in questions if q.kind == "update" for c in q.current for o in q.superseded
    }
    updates = [q for q in questions if q.kind == "update"]
    linked = [
        q.id for q in updates if any((c, o) in edges for c in q.current for o in q.superseded)
    ]
    return {
        "update_questions": len(updates),
        "linked": len(linked),
        "unlinked": sorted(q.id for q in updates if q.id not in linked),
        "other_links": sorted(f"{n} -> {o}" for n, o in edges - expected),
    }


def agent_runs(client: httpx.Client) -> dict[str, Any]:
    """Every background agent's runs so far and its last run's trigger (what ran on its
    own during the bench); empty on a daemon without agents."""
    resp = client.get("/api/v1/agents")
    if resp.status_code == 404:
        return {}
    resp.raise_for_status()
    return {
        a["name"]: {
            "runs": a["runs"],
            "last_trigger": (a["last_run"] or {}).get("trigger"),
        }
        for a in resp.json()["items"]
    }


def run(
    data: Loaded, settings: dict[str, str], agents: list[str], age_days: float, batch: int
) -> dict[str, Any]:
    rows: list[tuple[Question, dict[str, float]]] = []
    info: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="mnemonic-workflow-") as home,
        running_daemon(settings, Path(home)) as (client, cold),
    ):
        info["cold_start_s"] = cold
        held: dict[str, set[str]] = {}
        t0 = time.perf_counter()
        for project, items in data.memories.items():
            held.update(ingest(client, project, items, batch))
        info["ingest_s"] = time.perf_counter() - t0
        info["memories_sent"] = sum(len(v) for v in data.memories.values())
        info["memories_stored"] = len(held)
        # the encoder folds a near-duplicate into the memory it repeats (reinforced)
        info["folded_at_ingest"] = sorted(sorted(ids) for ids in held.values() if len(ids) > 1)
        info["supersessions"] = supersessions(client, held, data.questions)
        if agents:
            info["aged_rows"] = age_store(Path(home) / "data" / "mnemonic.db", age_days)
            info["agents"] = run_agents(client, agents)
        info["states"] = states(client, held)
        query_ms: list[float] = []
        answers: dict[str, list[list[str]]] = {}
        for q in data.questions:
            t1 = time.perf_counter()
            resp = client.post(
                "/api/v1/query", json={"query": q.text, "project": q.project, "limit": 10}
            )
            query_ms.append((time.perf_counter() - t1) * 1000)
            resp.raise_for_status()
            ranked = [holds(r, held) for r in resp.json()["results"]]
            answers[q.id] = [sorted(h) for h in ranked]
            rows.append((q, score(ranked, q)))
        query_ms.sort()
        info["query_p50_ms"] = query_ms[len(query_ms) // 2]
        info["query_p95_ms"] = query_ms[min(len(query_ms) - 1, int(len(query_ms) * 0.95))]
        info["empty_answers"] = sum(not a for a in answers.values())
        info["agent_runs"] = agent_runs(client)
    return {"table": summarise(rows), "info": info, "answers": answers, "misses": misses(rows)}


def summarise(rows: list[tuple[Question, dict[str, float]]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q, m in rows:
        groups["overall"].append(m)
        groups[q.kind].append(m)
    table: dict[str, dict[str, float]] = {}
    for name in ("overall", *KINDS):
        ms = groups.get(name)
        if not ms:
            continue
        table[name] = {k: sum(m[k] for m in ms) / len(ms) for k in METRICS}
        firsts = [m["current first"] for m in ms if "current first" in m]
        if firsts:
            table[name]["current first"] = sum(firsts) / len(firsts)
        table[name]["n"] = float(len(ms))
    return table


def misses(rows: list[tuple[Question, dict[str, float]]]) -> list[str]:
    """Questions whose first relevant result is not first, or whose update is misordered."""
    out = []
    for q, m in rows:
        if m["MRR"] < 1 or m.get("current first", 1.0) < 1:
            out.append(
                f"{q.id} ({q.kind}): MRR {m['MRR']:.2f} R@5 {m['R@5']:.2f}"
                + (f" current first {m['current first']:.0f}" if q.kind == "update" else "")
            )
    return out


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"\n{'kind':<10} {'n':>3} " + " ".join(f"{k:>8}" for k in METRICS) + f" {'cur 1st':>8}")
    print("-" * 60)
    for name, row in table.items():
        cf = f"{row['current first']:>8.3f}" if "current first" in row else f"{'':>8}"
        print(
            f"{name:<10} {row['n']:>3.0f} "
            + " ".join(f"{row[k]:>8.3f}" for k in METRICS)
            + f" {cf}"
        )


def parse_settings(items: list[str]) -> dict[str, str]:
    """``section.key=value`` -> the daemon's ``MNEMONIC_SECTION__KEY`` environment."""
    settings = {}
    for item in items:
        key, value = item.split("=", 1)
        section, name = key.split(".", 1)
        settings[f"MNEMONIC_{section.upper()}__{name.upper()}"] = value
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--set", action="append", default=[], help="section.key=value config override"
    )
    parser.add_argument(
        "--agents",
        default="",
        help="comma-separated agents to run once after ingest, before the questions"
        " (e.g. episoding,consolidation)",
    )
    parser.add_argument(
        "--age-days", type=float, default=0.0, help="with --agents: age the store this much first"
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=500,
        help="memories per batch request (1: one by one, as a live session would send them)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--answers", action="store_true", help="with --json: include every ranked answer"
    )
    args = parser.parse_args()
    data = load(args.data)
    settings = parse_settings(args.set)
    agents = [a for a in args.agents.split(",") if a]
    result = run(data, settings, agents, args.age_days, max(1, args.batch))
    if args.json:
        if not args.answers:
            result.pop("answers")
        print(json.dumps(result, indent=2))
        return
    info = result["info"]
    print(
        f"workflow scenarios: {len(data.memories)} projects, {info['memories_sent']} memories"
        f" ({info['memories_stored']} stored), {len(data.questions)} questions;"
        f" settings: {settings or 'defaults'}; agents: {agents or 'none'}"
        + (f" after aging {args.age_days:g} days" if agents else "")
    )
    print_table(result["table"])
    print(f"\nmemory states: {info['states']}")
    print(f"folded into one memory at ingest: {info['folded_at_ingest']}")
    links = info["supersessions"]
    if links is None:
        print("supersessions: none (no supersession route on this daemon)")
    else:
        print(
            f"supersessions after ingest: {links['linked']}/{links['update_questions']} update"
            f" pairs linked; unlinked {', '.join(links['unlinked']) or 'none'};"
            f" other links {', '.join(links['other_links']) or 'none'}"
        )
    if agents:
        print(f"agents: {json.dumps(info['agents'])}")
    print(f"background agent runs: {json.dumps(info['agent_runs'])}")
    print(
        f"cold start {info['cold_start_s']:.2f} s, ingest {info['ingest_s']:.2f} s,"
        f" query p50 {info['query_p50_ms']:.1f} ms, p95 {info['query_p95_ms']:.1f} ms,"
        f" empty answers {info['empty_answers']}"
    )
    print("not first: " + ("; ".join(result["misses"]) or "none"))


if __name__ == "__main__":
    main()
