"""Does the cognitive loop help recall? (issue 13 §6)

Ingests the LoCoMo dev conversations and the LongMemEval dev haystacks into a real daemon
(subprocess, REST, the protocols of ``bench/locomo.py`` and ``bench/longmemeval.py``), stops
it cleanly and keeps that home as a template. Each configuration then starts a daemon on a
copy of the template, lets days pass (``--days``: each day ages the store by one day and
runs one cycle of every agent of the configuration through ``POST
/api/v1/agents/{name}/run``, as ``mnemonic run NAME`` would), and asks every question.
``--rounds N`` (default 4) splits each day into N rounds (age the store 1/N day, then one
cycle of every agent), as a daemon's schedule does: dreaming, consolidation and
metacognition run every six hours, abstraction hourly; the episoder always catches up.
Until session 18 the bench ran one round a day (``--rounds 1``), which hid an agent whose
effect grew with every cycle (BENCHMARKS.md, session 18).

Configurations: ``before`` (no agent ran), ``loop`` (every agent), and one ablation per agent
(``loop - NAME``: the loop with that agent off), so each agent's contribution is the drop
when it is taken out. Agents the daemon does not have are left out and said so.

    python bench/cognition.py [--datasets locomo,longmemeval] [--lme-limit N] [--days 3]
        [--rounds 4] [--no-ablation] [--llm none|scripted] [--set section.key=value ...] [--json]
        [--keep-loop DIR | --from-loop DIR] [--dump DIR]

``--keep-loop DIR`` keeps the state the loop left (``DIR/DATASET``: its home, stopped, and
the question map); ``--from-loop DIR`` starts a daemon on a copy of it and asks again,
running no agent, so a recall setting (``--set recall.x=y``) is measured on the loop's state
in a minute or two instead of a whole loop (session 19 found the full-text weights so; a
kept state gives the loop's numbers to the last digit).

``--dump DIR`` writes each question's top ten, as scored, to ``DIR/DATASET-CONFIG.jsonl``
(the question, its evidence or answer sessions, each result's labels, score and text), for
reading why a question misses without writing another script.

``--llm scripted`` gives every configuration the scripted OpenAI-compatible stand-in of
``lifecycle_scripted_llm.py`` (NOT a model: each answer is copied from its prompt) for the
agents' cycles; the templates stay encoded without an LLM and enrichment is off, so the
difference from ``--llm none`` is what the agents do with an LLM's answers.

The ingested templates are cached under ``~/.cache/mnemonic-bench/cognition-*`` keyed by
the data file, the limit, the migrations and the package version, so a second run skips the
ingest (minutes for LongMemEval's 246 haystacks).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo
import longmemeval
from agents_phase import age_store
from lifecycle_scripted_llm import scripted_llm
from server import running_daemon

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path.home() / ".cache" / "mnemonic-bench"
AGENTS = ("episoding", "consolidation", "dreaming", "abstraction", "metacognition")
# ../shared/data beside the repository; MNEMONIC_BENCH_DATA when run from an export
SHARED = Path(os.environ.get("MNEMONIC_BENCH_DATA", ROOT.parent / "shared" / "data"))


def load(dataset: str, limit: int | None) -> list[dict[str, Any]]:
    if dataset == "locomo":
        data: list[dict[str, Any]] = json.loads((SHARED / "locomo-dev.json").read_text())
        return data
    with gzip.open(SHARED / "longmemeval-dev.json.gz", "rt") as fh:
        rows: list[dict[str, Any]] = json.load(fh)
    return rows[:limit] if limit else rows


# No cycle agent may run outside the bench's own calls, in the template's ingest as in
# each configuration: the reactor (dream after an episode closes, ...), the orchestrator's
# self-test and the episoder's 60 s schedule. Until session 13 the ingest ran with the
# defaults, so "before" already held the episodes and `related` links of the 16 episoder
# cycles and the dream the reactor started during a 25-minute LongMemEval ingest.
QUIET = {
    "MNEMONIC_REACTOR__ENABLED": "false",
    "MNEMONIC_ORCHESTRATOR__ENABLED": "false",
    "MNEMONIC_EPISODES__INTERVAL_S": "86400",
}
TEMPLATE_FORMAT = "quiet-ingest"  # in the cache key: templates built otherwise are not reused


def cache_key(dataset: str, limit: int | None) -> str:
    """What the template home depends on: a change to any of it ingests again. The
    passage splitter's version is in it because passages are embedded at ingest: a new
    splitter measured on the old template's passages would measure nothing."""
    from mnemonic import __version__
    from mnemonic.encoding.passages import SPLITTER

    key = f"{dataset}:{limit}:{__version__}:{TEMPLATE_FORMAT}:splitter{SPLITTER}"
    digest = hashlib.sha256(key.encode())
    for path in sorted((ROOT / "migrations").glob("*.sql")):
        digest.update(path.read_bytes())
    for name in ("locomo-dev.json", "longmemeval-dev.json.gz"):
        digest.update(_file_digest(SHARED / name))
    return digest.hexdigest()[:12]


@functools.cache
def _file_digest(path: Path) -> bytes:
    """The SHA-256 of a data file's bytes (about 0.1 s for LongMemEval's 38 MB): its
    modification time changed with every fresh copy of the data, and each change cost a
    re-ingest of LongMemEval (many minutes)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()


# --- ingest once into a template home --------------------------------------------------------


def ingest_locomo(client: Any, data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spaces = []
    for sample in data:
        project = sample["sample_id"]
        items = locomo.turns(sample)
        dias: dict[str, list[str]] = {}
        for t, r in locomo.ingest(client, items, project, "dia_id"):
            dias.setdefault(r["memory_id"], []).append(t["dia_id"])
        known = {t["dia_id"] for t in items}
        spaces.append(
            {"project": project, "ids": dias, "questions": locomo.questions(sample, known)}
        )
    return spaces


def ingest_longmemeval(client: Any, data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spaces = []
    for question in data:
        items = longmemeval.user_turns(question)
        if not longmemeval.usable(question, items):
            continue
        by_id: dict[str, dict[str, Any]] = {}
        for t, r in locomo.ingest(client, items, question["question_id"], "session"):
            held = by_id.get(r["memory_id"])
            by_id[r["memory_id"]] = (
                t if held is None else {**held, "answer": held["answer"] or t["answer"]}
            )
        answers = [t for t in items if t["answer"]]
        newest = max(answers, key=lambda t: (t["timestamp"], t["session"]))["session"]
        spaces.append(
            {
                "project": question["question_id"],
                "question": question["question"],
                "type": question["question_type"],
                "ids": {
                    k: {"session": v["session"], "answer": v["answer"]} for k, v in by_id.items()
                },
                "answer_sessions": sorted({t["session"] for t in answers}),
                "newest": newest,
            }
        )
    return spaces


def pending(home: Path) -> int:
    """Observations accepted but not yet encoded (no memory or no vector yet), and
    memories without passage vectors (a store from before migration 0009: the daemon's
    re-embedding backfills them at its start, as it would for a user who upgrades)."""
    conn = sqlite3.connect(f"file:{home / 'data' / 'mnemonic.db'}?mode=ro", uri=True)
    try:
        raw = "SELECT count(*) FROM raw_memories WHERE status = 'accepted'"
        waiting = int(conn.execute(raw).fetchone()[0])
        has_passages = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'memory_passages'"
        ).fetchone()
        lacking = (
            "SELECT count(*) FROM memories m WHERE m.embedded = 1"
            " AND NOT EXISTS (SELECT 1 FROM memory_passages p WHERE p.seq = m.seq)"
            if has_passages
            else "SELECT count(*) FROM memories WHERE embedded = 1"
        )
        return waiting + int(conn.execute(lacking).fetchone()[0])
    finally:
        conn.close()


def settle(home: Path) -> None:
    """Run a daemon on the template until the encoder's backlog is empty. A batch's
    ``wait=true`` gives up after its timeout on a loaded machine, and a configuration
    measured at once would then miss what a later one (after minutes of agent cycles)
    finds: the first LongMemEval template held 477 unencoded turns, which made every
    configuration that ran agents look 0.015 better than "before"."""
    if not pending(home):
        return
    with running_daemon(QUIET, home) as (_client, _cold):
        deadline = time.monotonic() + 3600
        while pending(home) and time.monotonic() < deadline:
            time.sleep(2)
    left = pending(home)
    if left:
        raise RuntimeError(f"{left} observations still unencoded after an hour")


def resolve(folder: Path, dataset: str, limit: int | None) -> None:
    """Map memories the ingest answered without an id (still being encoded when the
    batch's wait gave up) to their turns, by project and text, once they exist."""
    spaces = json.loads((folder / "spaces.json").read_text())
    data = load(dataset, limit)
    conn = sqlite3.connect(f"file:{folder / 'home' / 'data' / 'mnemonic.db'}?mode=ro", uri=True)
    added = 0
    try:
        for space in spaces:
            ids = space["ids"]
            ids.pop("null", None)  # the turns answered without an id (JSON keys)
            if dataset == "locomo":
                sample = next(d for d in data if d["sample_id"] == space["project"])
                by_text: dict[str, Any] = {}
                for t in locomo.turns(sample):
                    by_text.setdefault(t["text"], []).append(t["dia_id"])
            else:
                question = next(d for d in data if d["question_id"] == space["project"])
                by_text = {}
                for t in longmemeval.user_turns(question):
                    held = by_text.get(t["text"])
                    by_text[t["text"]] = {
                        "session": t["session"] if held is None else held["session"],
                        "answer": t["answer"] or bool(held and held["answer"]),
                    }
            rows = conn.execute(
                "SELECT id, content FROM memories WHERE project = ?", (space["project"],)
            )
            for memory_id, content in rows:
                if memory_id not in ids and content in by_text:
                    ids[memory_id] = by_text[content]
                    added += 1
    finally:
        conn.close()
    (folder / "spaces.json").write_text(json.dumps(spaces))
    if added:
        print(f"  resolved {added} memories ingested without an id", file=sys.stderr)


def template(dataset: str, limit: int | None) -> Path:
    """The cached home with the dataset ingested (built on first use) and encoded."""
    folder = CACHE / f"cognition-{dataset}-{cache_key(dataset, limit)}"
    if (folder / "spaces.json").exists():
        if pending(folder / "home"):
            settle(folder / "home")
            resolve(folder, dataset, limit)
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    home = folder / "home"
    home.mkdir(parents=True)
    data = load(dataset, limit)
    t0 = time.perf_counter()
    with running_daemon(QUIET, home) as (client, _cold):
        ingest = ingest_locomo if dataset == "locomo" else ingest_longmemeval
        spaces = ingest(client, data)
    settle(home)
    print(f"  ingested {dataset} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    (folder / "spaces.json").write_text(json.dumps(spaces))
    resolve(folder, dataset, limit)
    return folder


# --- one configuration ---------------------------------------------------------------------


Answers = list[dict[str, Any]]
"""Each question's top ten as the bench scored it (``--dump``), for reading the misses."""
DUMP_CHARS = 200  # of each result's text


def _shown(result: dict[str, Any], label: Any) -> dict[str, Any]:
    return {
        "label": label,
        "score": result["score"],
        "text": result["memory"]["content"][:DUMP_CHARS],
    }


def ask_locomo(
    client: Any, spaces: list[dict[str, Any]], answers: Answers
) -> dict[str, dict[str, float]]:
    rows: list[tuple[int, dict[str, float]]] = []
    for space in spaces:
        for q in space["questions"]:
            resp = client.post(
                "/api/v1/query",
                json={"query": q["question"], "project": space["project"], "limit": 10},
            )
            resp.raise_for_status()
            results = resp.json()["results"]
            ranked = [space["ids"].get(r["memory"]["id"], []) for r in results]
            rows.append((q["category"], locomo.metrics(ranked, q["evidence"])))
            answers.append(
                {
                    "question": q["question"],
                    "category": q["category"],
                    "evidence": q["evidence"],
                    "results": [_shown(r, dias) for r, dias in zip(results, ranked, strict=True)],
                }
            )
    return locomo.summarise(rows)


def ask_longmemeval(
    client: Any, spaces: list[dict[str, Any]], answers: Answers
) -> dict[str, dict[str, float]]:
    rows: list[tuple[str, dict[str, float]]] = []
    asked = question_dates()
    for space in spaces:
        resp = client.post(
            "/api/v1/query",
            json={
                "query": space["question"],
                "project": space["project"],
                "limit": 10,
                "asked_at": longmemeval.parse_date(asked[space["project"]]).isoformat(),
            },
        )
        resp.raise_for_status()
        ids = space["ids"]
        results = [r for r in resp.json()["results"] if r["memory"]["id"] in ids]
        ranked = [ids[r["memory"]["id"]] for r in results]
        rows.append(
            (
                space["type"],
                longmemeval.metrics(ranked, set(space["answer_sessions"]), space["newest"]),
            )
        )
        answers.append(
            {
                "question": space["question"],
                "type": space["type"],
                "answer_sessions": space["answer_sessions"],
                "newest": space["newest"],
                "results": [_shown(r, turn) for r, turn in zip(results, ranked, strict=True)],
            }
        )
    return longmemeval.summarise(rows)


@functools.cache
def question_dates() -> dict[str, str]:
    """Each LongMemEval question's date by id, read once (the file is 38 MB of gzip, and
    every configuration asks). A question is asked on its date (the protocol gives it):
    "two weeks ago" in it counts back from there, as it would from now in a live daemon."""
    return {q["question_id"]: q["question_date"] for q in load("longmemeval", None)}


def wait_for_index(client: Any, timeout_s: float = 600) -> None:
    """Until the recall index is ready. A store past ``recall.index_wait_below`` (20k;
    LongMemEval's is 50k) is served through SQL, without vectors, while the index builds:
    a configuration asked at once would be measuring that, and one asked after minutes of
    agent cycles the index (the first runs of this bench did exactly that)."""
    deadline = time.monotonic() + timeout_s
    while client.get("/api/v1/health").json()["recall_index"]["state"] != "ready":
        if time.monotonic() > deadline:
            raise RuntimeError("the recall index was not ready in time")
        time.sleep(0.5)


def available_agents(client: Any) -> list[str]:
    resp = client.get("/api/v1/agents")
    resp.raise_for_status()
    return [a["name"] for a in resp.json()["items"]]


def run_agent(client: Any, name: str) -> Any:
    """One cycle through REST, waiting for it. A cycle the reactor started meanwhile
    (dreaming after an episode closed, metacognition after a consolidation) answers 409:
    wait for it to finish, then run ours."""
    deadline = time.monotonic() + 3600
    while True:
        resp = client.post(f"/api/v1/agents/{name}/run", params={"wait": "true"}, timeout=3600)
        if resp.status_code != 409 or time.monotonic() > deadline:
            resp.raise_for_status()
            return resp
        time.sleep(0.5)


MAX_CATCH_UP = 200


def run_caught_up(client: Any, name: str) -> tuple[dict[str, Any], int]:
    """Cycles of ``name`` until its summary reports no backlog (at most MAX_CATCH_UP). A
    day of a real daemon runs the episoder every 60 s; one cycle takes 5,000 memories, so
    a single run a "day" left 35k of LongMemEval's 50k memories outside any episode after
    three days."""
    cycles = 0
    while True:
        cycles += 1
        record: dict[str, Any] = run_agent(client, name).json()["run"]
        if not record["ok"]:
            raise RuntimeError(f"{name} failed: {record['error']}")
        if not record["summary"].get("backlog") or cycles >= MAX_CATCH_UP:
            return record, cycles


def run_config(
    folder: Path,
    dataset: str,
    agents: list[str],
    days: int,
    settings: dict[str, str],
    rounds: int,
    keep: Path | None = None,
) -> dict[str, Any]:
    """One configuration on a copy of ``folder`` (a template: ``home`` and ``spaces.json``);
    with ``keep``, the home as the configuration left it (daemon stopped) is copied there in
    the same shape, so ``--from-loop`` can ask it again under other recall settings."""
    spaces = json.loads((folder / "spaces.json").read_text())
    # the bench runs the agents itself: anything else would run agents an ablation turned off
    settings = {**QUIET, **settings}
    ask: Callable[[Any, list[dict[str, Any]], Answers], dict[str, dict[str, float]]] = (
        ask_locomo if dataset == "locomo" else ask_longmemeval
    )
    answers: Answers = []
    with tempfile.TemporaryDirectory(prefix="mnemonic-cognition-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(folder / "home", home)
        phase: list[dict[str, Any]] = []
        with running_daemon(settings, home) as (client, _cold):
            wait_for_index(client)
            have = available_agents(client)
            missing = [a for a in agents if a not in have]
            run = [a for a in agents if a in have]
            for day, part in [(d, r) for d in range(days if run else 0) for r in range(rounds)]:
                age_store(home / "data" / "mnemonic.db", 1.0 / rounds)
                for name in run:
                    t0 = time.perf_counter()
                    record, cycles = run_caught_up(client, name)
                    phase.append(
                        {
                            "day": day + 1,
                            "round": part + 1,
                            "agent": name,
                            "cycles": cycles,
                            "took_s": round(time.perf_counter() - t0, 2),
                            "summary": record["summary"],
                        }
                    )
            table = ask(client, spaces, answers)
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(home, keep / "home")
            shutil.copy2(folder / "spaces.json", keep / "spaces.json")
    return {"table": table, "agents": run, "missing": missing, "phase": phase, "answers": answers}


# --- report ----------------------------------------------------------------------------------

LOCOMO_COLUMNS = [
    ("overall", "R@10"),
    ("overall", "nDCG@10"),
    ("multi-hop", "R@10"),
    ("temporal", "R@10"),
    ("open-domain", "R@10"),
    ("single-hop", "R@10"),
]
LME_COLUMNS = [
    ("overall", "turn R@10"),
    ("overall", "session all@5"),
    ("multi-session", "session all@5"),
    ("temporal-reasoning", "session all@5"),
    ("knowledge-update", "newest first"),
]


def print_table(dataset: str, results: dict[str, dict[str, Any]]) -> None:
    columns = LOCOMO_COLUMNS if dataset == "locomo" else LME_COLUMNS
    header = " | ".join(f"{group} {metric}" for group, metric in columns)
    print(f"\n{dataset}\n| configuration | {header} |")
    print("|---|" + "---|" * len(columns))
    for name, result in results.items():
        table = result["table"]
        cells = " | ".join(f"{table.get(g, {}).get(m, float('nan')):.3f}" for g, m in columns)
        print(f"| {name} | {cells} |")


def dump_answers(folder: Path, dataset: str, results: dict[str, dict[str, Any]]) -> None:
    """One JSON line per question and configuration: the question, what answers it (LoCoMo:
    evidence turn ids; LongMemEval: answer sessions) and the top ten as scored (each
    result's labels, score and first characters). The report keeps only the tables."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, result in results.items():
        path = folder / f"{dataset}-{name.replace(' ', '')}.jsonl"
        with path.open("w") as handle:
            for answer in result["answers"]:
                handle.write(json.dumps(answer) + "\n")
        print(f"  {dataset} {name}: answers in {path}", file=sys.stderr)


def _drop_answers(results: dict[str, dict[str, Any]]) -> None:
    for result in results.values():
        result.pop("answers", None)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", default="locomo,longmemeval")
    parser.add_argument("--lme-limit", type=int, default=None)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--rounds", type=_positive, default=4, help="agent rounds per day")
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--no-ablation", action="store_true")
    parser.add_argument("--llm", choices=("none", "scripted"), default="none")
    parser.add_argument("--set", action="append", default=[], help="section.key=value")
    parser.add_argument("--json", action="store_true")
    kept = parser.add_mutually_exclusive_group()
    kept.add_argument(
        "--keep-loop",
        type=Path,
        metavar="DIR",
        help="keep the loop's state (DIR/DATASET) for --from-loop",
    )
    kept.add_argument(
        "--from-loop",
        type=Path,
        metavar="DIR",
        help="ask a state kept by --keep-loop again (with --set), running no agent",
    )
    parser.add_argument(
        "--dump",
        type=Path,
        metavar="DIR",
        help="write each question's top ten to DIR/DATASET-CONFIGURATION.jsonl",
    )
    args = parser.parse_args()
    with scripted_llm(args.llm == "scripted") as (llm_settings, server):
        if server is not None:
            llm_settings["MNEMONIC_ENRICHMENT__ENABLED"] = "false"
        report = run_all(args, llm_settings)
        if server is not None:
            report["llm_requests"] = len(server.requests_to("/v1/chat/completions"))
            if not args.json:
                print(f"\n(scripted LLM: {report['llm_requests']} chat completions answered)")
    if args.json:
        print(json.dumps(report, indent=2, default=str))


def run_all(args: argparse.Namespace, llm_settings: dict[str, str]) -> dict[str, Any]:
    """Every dataset and configuration; prints the tables unless ``--json``."""
    settings = dict(llm_settings)
    for item in args.set:
        key, value = item.split("=", 1)
        section, name = key.split(".", 1)
        settings[f"MNEMONIC_{section.upper()}__{name.upper()}"] = value
    agents = [a for a in args.agents.split(",") if a]
    report: dict[str, Any] = {
        "settings": settings,
        "llm": args.llm,
        "days": args.days,
        "rounds": args.rounds,
        "datasets": {},
    }
    for dataset in [d for d in args.datasets.split(",") if d]:
        configs: dict[str, list[str]] = {"before": [], "loop": agents}
        if args.from_loop:  # the kept state, asked again: recall settings only, no agents
            folder = args.from_loop / dataset
            if not (folder / "spaces.json").exists():
                raise SystemExit(f"no kept loop for {dataset} in {args.from_loop}")
            configs = {"loop": []}
        else:
            folder = template(dataset, args.lme_limit if dataset == "longmemeval" else None)
            if not args.no_ablation:
                configs.update({f"loop - {a}": [x for x in agents if x != a] for a in agents})
        results: dict[str, dict[str, Any]] = {}
        for name, chosen in configs.items():
            t0 = time.perf_counter()
            keep = args.keep_loop / dataset if args.keep_loop and name == "loop" else None
            results[name] = run_config(
                folder, dataset, chosen, args.days, settings, args.rounds, keep
            )
            print(f"  {dataset} {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        if args.dump:
            dump_answers(args.dump, dataset, results)
        _drop_answers(results)
        report["datasets"][dataset] = results
        if not args.json:
            print_table(dataset, results)
            missing = results["loop"]["missing"]
            if missing:
                print(f"(agents this daemon does not have, left out: {', '.join(missing)})")
    return report


if __name__ == "__main__":
    main()
