"""Issue 11's recall-at-scale targets, over HTTP against a real ``mnemonic serve``.

A store of N synthetic memories (100k by default, 1M with ``--million``) is filled once per
machine straight through the store layer (``bench/latency.py``'s ``fill_direct``: heuristic
encoding, full text, random unit vectors, a few links each) and cached under ``--cache``,
keyed by the size and a hash of the fill code. Each run copies (reflinks
where the file system can) the cached home to a temp folder, then measures:

* start-up: a first start on the copied home (whatever the daemon derives from a fresh
  database), then the measured cold start: seconds from spawn until ``/api/v1/health``
  answers and a ``/query`` answers, and until health's ``recall_index.state`` is
  ``ready`` (when health has that section); peak RSS during start-up (VmHWM, which the
  kernel keeps per process: the exact peak, not a sample);
* one client, quiet: 300 ``/query`` calls, half project-filtered (``latency.queries``), with
  the per-stage means from ``/metrics`` (``mnemonic_recall_stage_seconds{stage=...}``,
  when the daemon exports it);
* RSS after a 1,000-query burst (4 clients);
* 8 concurrent query clients for 30 s while a writer posts 20 short single writes a second;
* ingest of 2,000 short (8-15 word) memories posted by 4 writers as fast as the daemon acks,
  until the encoder's backlog drains, against the embedder's own speed on the same texts in
  this process just before (the same-run baseline).

    python bench/recall_scale.py [--million] [--parts start,quiet,burst,concurrent,ingest]
                                 [--cache DIR] [--json] [--save FILE]

Not a test: a table per size goes to stdout (with the machine, the load average and the
commit), progress to stderr. Queries are never repeated within one daemon's life, so a
query cache cannot flatter the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import itertools
import json
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

import mnemonic

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency as lat
from server import TOKEN

from mnemonic.config import Config
from mnemonic.llm.embedding.onnx import OnnxEmbedder

ROOT = Path(__file__).resolve().parents[1]
# The daemon (``python -m mnemonic``, started with this process's environment) runs the
# package this process imports: the working tree, or a clean export of a commit put first
# on PYTHONPATH (other people edit the working tree while benchmarks run).
SOURCE = Path(mnemonic.__file__).resolve().parents[1]
MILLION = 1_000_000
DEFAULT_SIZE = 100_000
PARTS = ("start", "quiet", "burst", "concurrent", "ingest")
STARTUP_QUERY = "where is the staging deploy config for the billing worker"
STAGE_METRIC = "mnemonic_recall_stage_seconds"
RECALL_METRIC = "mnemonic_recall_duration_seconds"

# Targets (issue 11). Sizes above 100k use the 1M column.
T_P50_100K = 10.0
T_P95_100K = 20.0
T_P95_1M = 100.0
T_COLD_1M = 10.0
T_RSS_100K = 500.0
T_RSS_1M = 1536.0
T_CONC_QPS = 100.0
T_CONC_P95 = 100.0
T_INGEST = 200.0
T_INGEST_ACK_P95 = 10.0


def progress(message: str) -> None:
    lat.progress(message)


# ---- the filled home, cached per machine ---------------------------------------------------


def fill_key(n: int, links: int) -> str:
    """Hash of everything that decides the filled database: the corpus and fill code in
    bench/latency.py and this module's fill wrapper. Not the migrations: a newer schema is
    applied by the first (warm-up) start of each run's copy, never by the measured one."""
    digest = hashlib.sha256(f"{n}:{links}:{lat.CORPUS_SEED}:{lat.FILL_CHUNK}".encode())
    for obj in (
        lat.fill_direct,
        lat._encode_chunk,
        lat._chunks,
        lat.iter_corpus,
        lat.make_text,
        lat._slots,
        lat._func,
        lat.Item,
        make_filled_home,
    ):
        digest.update(inspect.getsource(obj).encode())
    digest.update(repr((lat.TEMPLATES, lat.TAILS, lat.PROJECTS, lat.SOURCES)).encode())
    return digest.hexdigest()[:12]


def make_filled_home(home: Path, n: int, links: int) -> dict[str, Any]:
    """One daemon start creates the folders, the schema and the model metadata; then the
    direct fill. The worker pool forks before this process has any thread."""
    pool = multiprocessing.get_context("fork").Pool(2)
    try:
        with lat.daemon(home):
            pass
        fill = asyncio.run(lat.fill_direct(home, n, links, max_minutes=10_000.0, pool=pool))
    finally:
        pool.close()
        pool.join()
    for log in home.glob("daemon-stderr-*.log"):
        log.unlink()
    return fill


def cached_home(cache: Path, n: int, links: int, refill: bool) -> tuple[Path, dict[str, Any]]:
    """The cached filled home for ``n`` (made now if missing) and its fill record."""
    entry = cache / f"recall-scale-{n}-links{links}-{fill_key(n, links)}"
    meta_path = entry / "fill.json"
    if refill and entry.exists():
        shutil.rmtree(entry)
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        progress(f"fill {n:,}: cached at {entry} (made {meta['date']}, {meta['seconds']:.0f} s)")
        return entry / "home", meta
    cache.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".building-{n}-", dir=cache))
    progress(f"fill {n:,}: none cached, filling {building} ({lat.available_mb():,.0f} MB free)")
    fill = make_filled_home(building / "home", n, links)
    meta = {
        **fill,
        "size": n,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "load_avg_end": os.getloadavg(),
        "bytes": sum(p.stat().st_size for p in (building / "home").rglob("*") if p.is_file()),
    }
    (building / "fill.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    building.rename(entry)  # a half-made fill is never mistaken for a cached one
    progress(f"fill {n:,}: {fill['seconds']:.0f} s ({fill['rate']:,.0f}/s), cached at {entry}")
    return entry / "home", meta


def copy_home(source: Path) -> Path:
    """A private copy of the cached home (the run writes to it)."""
    parent = Path(tempfile.mkdtemp(prefix="mnemonic-recall-scale-"))
    home = parent / "home"
    subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(home)], check=True)
    return home


# ---- workload text -------------------------------------------------------------------------


SHORT_TEMPLATES = [
    "{person} says the {module} tests fail on {env} about {n} times a week.",
    "Remember to rotate the {svc} key before {month} {dd} this year.",
    "The {table} backfill in {proj} took {n} minutes last {weekday}.",
    "We moved the {module} queue from {tech} to {tech2} in sprint {n}.",
    "Deploy {svc} {ver} to {env} after the {hh}:30 standup.",
    "{person} fixed the flaky {module} test by raising its timeout to {ms} ms.",
    "Staging {svc} needs {mb} MB of memory or the import job dies.",
    "Ask {person} before changing the {noun} schema in {proj}, ticket {pr}.",
    "The {module} cache hit rate fell to {n} percent after the {pkg} upgrade.",
    "Use port {port} for the local {svc}, not the default one.",
    "{person} thinks {tech} is why the {module} job takes {n} minutes now.",
    "Nightly {func} run on {env} finished {big} rows in {n} minutes.",
]


def short_texts(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` distinct (text, project) pairs of 8-15 plain words: what an agent jots down,
    and short enough that the embedder, not tokenisation, sets the pace."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    while len(out) < n:
        project = rng.choices(lat.PROJECTS, lat.PROJECT_WEIGHTS)[0]
        text = rng.choice(SHORT_TEMPLATES).format(**lat._slots(rng, project))
        if 8 <= len(text.split()) <= 15 and text not in seen:
            seen.add(text)
            out.append((text, project))
    return out


class QueryPool:
    """Distinct query texts handed out once each, across threads."""

    def __init__(self, asked: list[tuple[str, str]]) -> None:
        self._items = iter(asked)
        self._lock = threading.Lock()
        self._counter = itertools.count()

    def next(self) -> tuple[int, str, str]:
        with self._lock:
            text, project = next(self._items)
            return next(self._counter), text, project


def query_pool(corpus_texts: set[str], skip: int, n: int) -> QueryPool:
    """Queries from latency's generator after the first ``skip`` (which ``latency.queries``
    asks in the quiet run), without repeats."""
    seen: set[str] = set()
    asked: list[tuple[str, str]] = []
    for text, project in lat.make_queries(skip + n, corpus_texts):
        if text not in seen:
            seen.add(text)
            asked.append((text, project))
    return QueryPool(asked[skip:])


# ---- HTTP helpers --------------------------------------------------------------------------


def client_for(base_url: str) -> httpx.Client:
    return httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600
    )


def ask(client: httpx.Client, i: int, text: str, project: str) -> tuple[float, int]:
    """One /query (even ``i`` filtered by project): (ms, HTTP status)."""
    body: dict[str, Any] = {"query": text, "limit": 10}
    if i % 2 == 0:
        body["project"] = project
    t0 = time.perf_counter()
    response = client.post("/api/v1/query", json=body)
    return (time.perf_counter() - t0) * 1000, response.status_code


def post_memory(client: httpx.Client, text: str, project: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    response = client.post(
        "/api/v1/memories", json={"content": text, "project": project, "source": "api"}
    )
    return (time.perf_counter() - t0) * 1000, response.status_code


def run_threads(count: int, work: Callable[[int], None]) -> float:
    """Run ``work(k)`` in ``count`` threads; the wall seconds until all are done."""
    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(count)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def stats(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"n": 0}
    return {
        "n": len(samples),
        "p50": lat.pct(samples, 0.5),
        "p95": lat.pct(samples, 0.95),
        "p99": lat.pct(samples, 0.99),
        "max": max(samples),
    }


# ---- /metrics ------------------------------------------------------------------------------


_SERIES = re.compile(r"^(\w+?)_(sum|count)(\{[^}]*\})?\s+(\S+)$")
_STAGE = re.compile(r'stage="([^"]*)"')


def recall_metrics(client: httpx.Client) -> dict[str, dict[str, float]]:
    """{stage or "total": {"sum": s, "count": n}} from /metrics; empty stages when the daemon
    does not export the stage histogram."""
    out: dict[str, dict[str, float]] = {}
    for line in client.get("/metrics").text.splitlines():
        match = _SERIES.match(line)
        if not match:
            continue
        name, kind, labels, value = match.groups()
        if name == STAGE_METRIC:
            stage = _STAGE.search(labels or "")
            key = f"stage:{stage.group(1) if stage else '?'}"
        elif name == RECALL_METRIC:
            key = "total"
        else:
            continue
        out.setdefault(key, {"sum": 0.0, "count": 0.0})[kind] += float(value)
    return out


def stage_shares(
    before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]
) -> dict[str, Any]:
    """Per stage: mean ms per observation and share of the recall total over the window.
    Stages may overlap (embedding runs beside BM25), so shares need not add up to 1."""

    def delta(key: str, kind: str) -> float:
        return after.get(key, {}).get(kind, 0.0) - before.get(key, {}).get(kind, 0.0)

    total = delta("total", "sum")
    stages: dict[str, dict[str, float]] = {}
    for key in sorted(after):
        if not key.startswith("stage:"):
            continue
        s, c = delta(key, "sum"), delta(key, "count")
        if c <= 0:
            continue
        stages[key.removeprefix("stage:")] = {
            "mean_ms": s / c * 1000,
            "count": c,
            "share": s / total if total > 0 else float("nan"),
        }
    count = delta("total", "count")
    return {
        "exported": any(k.startswith("stage:") for k in after),
        "recall_mean_ms": total / count * 1000 if count else None,
        "recalls": count,
        "stages": stages,
    }


# ---- the parts -----------------------------------------------------------------------------


def measure_start(d: lat.Running, yielded_at: float, ready_limit_s: float) -> dict[str, Any]:
    """After ``latency.daemon`` yields (health answered): first /query, recall_index ready."""
    out: dict[str, Any] = {"health_s": d.cold_s}
    ms, code = ask(d.client, 1, STARTUP_QUERY, "")
    out["first_query_ms"] = ms
    out["first_query_status"] = code
    out["health_and_query_s"] = d.cold_s + (time.perf_counter() - yielded_at)
    h = lat.health(d.client)
    index = h.get("recall_index")
    out["recall_index_reported"] = index is not None
    if index is not None:
        deadline = time.perf_counter() + ready_limit_s
        while index is not None and index.get("state") not in ("ready", "failed"):
            if time.perf_counter() > deadline:
                out["recall_index_timeout"] = True
                break
            time.sleep(0.1)
            index = lat.health(d.client).get("recall_index")
        out["recall_index_ready_s"] = d.cold_s + (time.perf_counter() - yielded_at)
        out["recall_index"] = index
    out["ready_s"] = max(out["health_and_query_s"], out.get("recall_index_ready_s", 0.0))
    out["rss_mb"], out["rss_peak_mb"] = lat.rss_mb(d.pid)
    out["vector_index"] = h.get("vector_index")
    out["memories"] = h.get("memories")
    return out


def wait_checkpoint(d: lat.Running, limit_s: float) -> dict[str, Any] | None:
    """The first start built the index from SQLite: wait for the checkpoint the daemon
    saves right after (index/checkpoints.py), so the measured start loads it as a user's
    next start would. None when the daemon has no checkpoints (an older commit)."""
    deadline = time.perf_counter() + limit_s
    while time.perf_counter() < deadline:
        index = lat.health(d.client).get("recall_index") or {}
        point = index.get("checkpoint")
        if not isinstance(point, dict):
            return None
        if point.get("saves") or point.get("last_error"):
            return dict(point)
        time.sleep(0.2)
    return {"timeout": True}


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far: CPU per query depends much less on the
    machine's other load than wall time does."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quiet(d: lat.Running, corpus_texts: set[str]) -> dict[str, Any]:
    before = recall_metrics(d.client)
    cpu = cpu_s(d.pid)
    out = lat.queries(d.client, corpus_texts)
    out["daemon_cpu_ms_per_query"] = (
        (cpu_s(d.pid) - cpu) * 1000 / (lat.QUERIES + lat.WARMUP_QUERIES)
    )
    out["stages"] = stage_shares(before, recall_metrics(d.client))
    return out


def burst(base_url: str, pool: QueryPool, total: int, clients: int) -> dict[str, Any]:
    latencies: list[float] = []
    codes: Counter[int] = Counter()
    lock = threading.Lock()
    left = itertools.count()

    def work(_: int) -> None:
        with client_for(base_url) as client:
            while next(left) < total:
                i, text, project = pool.next()
                ms, code = ask(client, i, text, project)
                with lock:
                    latencies.append(ms)
                    codes[code] += 1

    wall = run_threads(clients, work)
    return {**stats(latencies), "qps": len(latencies) / wall, "codes": dict(codes)}


def concurrent(
    base_url: str, pool: QueryPool, clients: int, seconds: float, write_rate: float
) -> dict[str, Any]:
    """``clients`` query loops plus one paced writer of short memories, for ``seconds``."""
    q_ms: list[float] = []
    w_ms: list[float] = []
    q_codes: Counter[int] = Counter()
    w_codes: Counter[int] = Counter()
    lock = threading.Lock()
    writes = short_texts(int(seconds * write_rate) + 10, seed=31)
    started = time.perf_counter()
    deadline = started + seconds

    def work(k: int) -> None:
        with client_for(base_url) as client:
            if k == clients:  # the writer
                for j, (text, project) in enumerate(writes):
                    slot = started + j / write_rate
                    if slot >= deadline:
                        break
                    if (delay := slot - time.perf_counter()) > 0:
                        time.sleep(delay)
                    ms, code = post_memory(client, f"{text} (live write {j})", project)
                    with lock:
                        w_ms.append(ms)
                        w_codes[code] += 1
                return
            while time.perf_counter() < deadline:
                i, text, project = pool.next()
                ms, code = ask(client, i, text, project)
                with lock:
                    q_ms.append(ms)
                    q_codes[code] += 1

    wall = run_threads(clients + 1, work)
    ok = sum(n for code, n in q_codes.items() if code == 200)
    return {
        "query": {**stats(q_ms), "qps": ok / wall, "codes": dict(q_codes)},
        "write_ack": {**stats(w_ms), "per_s": len(w_ms) / seconds, "codes": dict(w_codes)},
        "wall_s": wall,
    }


def embedder_baseline(texts: list[str]) -> dict[str, float]:
    """The embedder alone in this process on the ingest's own texts, in the encoder's
    batch size: the ceiling that ingest is compared with."""
    cfg = Config()
    emb = cfg.embedding
    embedder = OnnxEmbedder(
        threads=emb.threads,
        max_tokens=emb.max_tokens,
        batch_size=emb.batch_size,
        batch_tokens=emb.batch_tokens,
    )
    batch = cfg.encoding.batch_max
    embedder.embed(texts[:batch])  # warm-up
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    seconds = time.perf_counter() - started
    return {"texts": len(texts), "per_s": len(texts) / seconds, "batch": batch}


def ingest(base_url: str, client: httpx.Client, n: int, writers: int) -> dict[str, Any]:
    """``n`` short memories from ``writers`` threads as fast as acks come, then until the
    encoder is idle; the baseline embeds the first 512 of the same texts first."""
    lat.wait_idle(client)
    texts = short_texts(n, seed=97)
    progress(f"  embedder baseline on {min(n, 512)} of the {n:,} short texts")
    baseline = embedder_baseline([t for t, _ in texts[:512]])
    progress(f"  embedder alone: {baseline['per_s']:,.0f} texts/s; ingesting {n:,}")
    acks: list[float] = []
    codes: Counter[int] = Counter()
    lock = threading.Lock()
    items = iter(texts)

    def work(_: int) -> None:
        with client_for(base_url) as c:
            while True:
                with lock:
                    item = next(items, None)
                if item is None:
                    return
                text, project = item
                ms, code = post_memory(c, text, project)
                with lock:
                    acks.append(ms)
                    codes[code] += 1

    started = time.perf_counter()
    posting = run_threads(writers, work)
    progress(f"  {n:,} posted in {posting:.1f} s; waiting for the encoder")
    final = lat.wait_idle(client)
    seconds = time.perf_counter() - started
    rate = n / seconds
    return {
        "memories": n,
        "writers": writers,
        "seconds": seconds,
        "post_seconds": posting,
        "rate": rate,
        "ack": stats(acks),
        "codes": dict(codes),
        "baseline": baseline,
        "ratio": rate / baseline["per_s"],
        "counts": final["memories"],
    }


# ---- one size ------------------------------------------------------------------------------


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    source, fill = cached_home(args.cache, n, args.links, args.refill)
    row: dict[str, Any] = {"size": n, "fill": fill, "cache": str(source.parent)}
    row["load_avg_start"] = os.getloadavg()
    progress(f"size {n:,}: corpus texts (to keep queries out of the corpus)")
    corpus_texts = {item.content for item in lat.iter_corpus(n)}
    quiet_n = lat.QUERIES + lat.WARMUP_QUERIES
    pool = query_pool(corpus_texts, quiet_n, args.burst + int(700 * args.seconds) + 500)
    t0 = time.perf_counter()
    home = copy_home(source)
    row["copy_s"] = time.perf_counter() - t0
    progress(f"  copied to {home} in {row['copy_s']:.1f} s")
    parts = set(args.parts)
    try:
        if "start" in parts:
            progress("  first start on the copied home")
            with lat.daemon(home) as d:
                row["first_start"] = measure_start(d, time.perf_counter(), args.ready_limit)
                row["first_checkpoint"] = wait_checkpoint(d, args.ready_limit)
            progress(f"  first start ready in {row['first_start']['ready_s']:.1f} s; restarting")
        with lat.daemon(home) as d:
            yielded = time.perf_counter()
            base_url = str(d.client.base_url).rstrip("/")
            row["code"] = source_hash()
            if "start" in parts:
                row["start"] = measure_start(d, yielded, args.ready_limit)
                s = row["start"]
                progress(
                    f"  cold start: health {s['health_s']:.1f} s, +query"
                    f" {s['health_and_query_s']:.1f} s, ready {s['ready_s']:.1f} s,"
                    f" peak RSS {s['rss_peak_mb']:,.0f} MB"
                )
            if "quiet" in parts:
                progress(f"  {lat.QUERIES} quiet queries")
                row["load_avg_quiet_before"] = os.getloadavg()
                row["quiet"] = quiet(d, corpus_texts)
                progress(
                    f"  quiet p50 {row['quiet']['p50']:.1f} ms, p95 {row['quiet']['p95']:.1f} ms"
                )
            if "burst" in parts:
                progress(f"  {args.burst:,}-query burst, 4 clients")
                row["burst"] = burst(base_url, pool, args.burst, 4)
                row["rss_after_burst_mb"], row["rss_peak_after_burst_mb"] = lat.rss_mb(d.pid)
                progress(f"  RSS after the burst {row['rss_after_burst_mb']:,.0f} MB")
            if "concurrent" in parts:
                progress(
                    f"  {args.clients} clients for {args.seconds:.0f} s"
                    f" with {args.write_rate:.0f} writes/s"
                )
                row["load_avg_concurrent_before"] = os.getloadavg()
                cpu = cpu_s(d.pid)
                row["concurrent"] = concurrent(
                    base_url, pool, args.clients, args.seconds, args.write_rate
                )
                row["concurrent"]["daemon_cpu_share"] = (cpu_s(d.pid) - cpu) / row["concurrent"][
                    "wall_s"
                ]
                c = row["concurrent"]
                progress(
                    f"  {c['query']['qps']:.1f} q/s, p95 {c['query'].get('p95', 0):.0f} ms;"
                    f" write ack p95 {c['write_ack'].get('p95', 0):.1f} ms"
                )
            if "ingest" in parts:
                row["load_avg_ingest_before"] = os.getloadavg()
                row["ingest"] = ingest(base_url, d.client, args.ingest, args.ingest_writers)
                i = row["ingest"]
                progress(
                    f"  ingest {i['rate']:,.0f}/s ({i['ratio']:.0%} of the embedder),"
                    f" ack p95 {i['ack']['p95']:.1f} ms"
                )
            row["rss_end_mb"], row["rss_peak_mb"] = lat.rss_mb(d.pid)
            h = lat.health(d.client)
            row["health_end"] = {k: h.get(k) for k in ("status", "reasons", "memories")}
            row["recall_index_end"] = h.get("recall_index")
            row["problems"] = lat.log_problems(d.log)
            row["code_end"] = source_hash()
    finally:
        row["load_avg_end"] = os.getloadavg()
        if not args.keep:
            shutil.rmtree(home.parent, ignore_errors=True)
    return row


# ---- output --------------------------------------------------------------------------------


def source_hash() -> str:
    """Hash of the daemon's sources (``SOURCE``): catches edits made during a run."""
    digest = hashlib.sha256()
    for path in sorted([*SOURCE.glob("mnemonic/**/*.py"), *SOURCE.glob("migrations/*.sql")]):
        digest.update(str(path.relative_to(SOURCE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def check_source() -> None:
    """``python -m`` puts the current directory first on sys.path: a ``mnemonic`` package
    there would be what the daemon runs, whatever PYTHONPATH says."""
    here = Path.cwd() / "mnemonic"
    if here.is_dir() and here.resolve() != (SOURCE / "mnemonic"):
        sys.exit(f"run from another directory: the daemon would run {here}, not {SOURCE}")


def commit() -> str:
    """The commit of the daemon's sources: ``COMMIT`` in an export, else HEAD of the working
    tree (read only: no git state is touched; uncommitted edits show in ``source_hash``)."""
    marker = SOURCE / "COMMIT"
    if marker.exists():
        return f"{marker.read_text().strip()[:10]} (export at {SOURCE})"
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def mark(value: float | None, target: float, higher_is_better: bool = False) -> str:
    if value is None:
        return "–"
    return "✓" if (value >= target if higher_is_better else value <= target) else "✗"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} ms"


def table(r: dict[str, Any]) -> str:
    n = r["size"]
    big = n > DEFAULT_SIZE
    rows: list[tuple[str, str, str, str]] = []
    if "start" in r:
        s, f = r["start"], r.get("first_start", {})
        ready_note = (
            f"health {s['health_s']:.2f} s, +first query {s['health_and_query_s']:.2f} s"
            + (
                f", recall_index ready {s['recall_index_ready_s']:.2f} s"
                if "recall_index_ready_s" in s
                else ", no recall_index in health"
            )
        )
        rows.append(
            (
                "cold start (restart on the filled home)",
                f"{s['ready_s']:.2f} s ({ready_note})",
                "≤ 10 s at 1M" if big else "–",
                mark(s["ready_s"], T_COLD_1M) if big else "",
            )
        )
        if f:
            rows.append(
                (
                    "first start after the copy (ready; peak RSS)",
                    f"{f['ready_s']:.2f} s; {f['rss_peak_mb']:,.0f} MB",
                    "–",
                    "",
                )
            )
        point = r.get("first_checkpoint")
        if point:
            rows.append(
                (
                    "checkpoint after that build (save; size)",
                    "timed out"
                    if point.get("timeout")
                    else f"{point.get('last_seconds')} s;"
                    f" {(point.get('last_bytes') or 0) / 1e6:,.0f} MB"
                    + (f" ({point['last_error']})" if point.get("last_error") else ""),
                    "–",
                    "",
                )
            )
        index = s.get("recall_index") or {}
        if index.get("built_from"):
            rows.append(
                (
                    "the measured start's index came from",
                    f"{index['built_from']} ({index.get('replayed', 0):,} changes replayed)",
                    "snapshot",
                    "",
                )
            )
        rows.append(
            (
                "peak RSS during start-up (VmHWM)",
                f"{s['rss_peak_mb']:,.0f} MB",
                "≤ 1.5 GB at 1M" if big else "–",
                mark(s["rss_peak_mb"], T_RSS_1M) if big else "",
            )
        )
    if "quiet" in r:
        q = r["quiet"]
        rows.append(
            (
                "/query one client, quiet: p50",
                _ms(q["p50"]),
                "–" if big else "≤ 10 ms",
                "" if big else mark(q["p50"], T_P50_100K),
            )
        )
        rows.append(
            (
                "/query one client, quiet: p95 / p99",
                f"{q['p95']:.1f} / {q['p99']:.1f} ms",
                "≤ 100 ms" if big else "≤ 20 ms",
                mark(q["p95"], T_P95_1M if big else T_P95_100K),
            )
        )
        rows.append(
            (
                "  filtered / unfiltered p50, p95",
                f"{q['filtered_p50']:.1f}, {q['filtered_p95']:.1f} /"
                f" {q['unfiltered_p50']:.1f}, {q['unfiltered_p95']:.1f} ms"
                f" (server took_ms p50 {q['server_took_p50']:.1f};"
                f" daemon CPU {q['daemon_cpu_ms_per_query']:.0f} ms a query)",
                "",
                "",
            )
        )
    if "burst" in r:
        b = r["burst"]
        rows.append(
            (
                f"RSS after a {b['n']:,}-query burst",
                f"{r['rss_after_burst_mb']:,.0f} MB (burst {b['qps']:.0f} q/s,"
                f" p95 {b.get('p95', 0):.0f} ms, 4 clients)",
                "≤ 1.5 GB" if big else "≤ 500 MB",
                mark(r["rss_after_burst_mb"], T_RSS_1M if big else T_RSS_100K),
            )
        )
    if "concurrent" in r:
        c = r["concurrent"]
        cq, cw = c["query"], c["write_ack"]
        rows.append(
            (
                "8 clients + 20 writes/s: queries/s",
                f"{cq['qps']:.1f}",
                "≥ 100" if not big else "–",
                mark(cq["qps"], T_CONC_QPS, higher_is_better=True) if not big else "",
            )
        )
        rows.append(
            (
                "8 clients + 20 writes/s: query p50 / p95",
                f"{cq.get('p50', 0):.1f} / {cq.get('p95', 0):.1f} ms",
                "p95 ≤ 100 ms" if not big else "–",
                mark(cq.get("p95"), T_CONC_P95) if not big else "",
            )
        )
        rows.append(
            (
                "8 clients + 20 writes/s: write ack p50 / p95",
                f"{cw.get('p50', 0):.1f} / {cw.get('p95', 0):.1f} ms"
                f" ({cw['per_s']:.1f} writes/s, codes {cw['codes']};"
                f" daemon used {c['daemon_cpu_share']:.2f} cores)",
                "–",
                "",
            )
        )
    if "ingest" in r:
        i = r["ingest"]
        rows.append(
            (
                f"ingest of {i['memories']:,} short memories ({i['writers']} writers)",
                f"{i['rate']:,.0f}/s = {i['ratio']:.0%} of the embedder alone"
                f" ({i['baseline']['per_s']:,.0f} texts/s); posting took {i['post_seconds']:.1f} s",
                "≥ 200/s",
                mark(i["rate"], T_INGEST, higher_is_better=True),
            )
        )
        rows.append(
            (
                "write ack during ingest: p50 / p95",
                f"{i['ack']['p50']:.1f} / {i['ack']['p95']:.1f} ms (max {i['ack']['max']:.0f})",
                "p95 ≤ 10 ms",
                mark(i["ack"]["p95"], T_INGEST_ACK_P95),
            )
        )
    rows.append(
        (
            "RSS at the end / peak of the run",
            f"{r['rss_end_mb']:,.0f} / {r['rss_peak_mb']:,.0f} MB",
            "–",
            "",
        )
    )
    lines = [
        f"| {n:,} memories | value | target | |",
        "|---|---|---|:-:|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
    ]
    stages = r.get("quiet", {}).get("stages")
    if stages:
        lines.append("")
        if stages["exported"]:
            mean = stages["recall_mean_ms"]
            lines.append(
                f"Recall stages over the quiet run ({stages['recalls']:.0f} recalls,"
                f" server-side recall mean {_ms(mean)}):"
            )
            lines.append("| stage | mean | share of recall |")
            lines.append("|---|---:|---:|")
            for name, st in sorted(stages["stages"].items(), key=lambda kv: -kv[1]["mean_ms"]):
                lines.append(f"| {name} | {st['mean_ms']:.2f} ms | {st['share']:.0%} |")
        else:
            lines.append(
                f"Recall stages: /metrics has no {STAGE_METRIC} (server-side recall mean"
                f" {_ms(stages['recall_mean_ms'])} over {stages['recalls']:.0f} recalls)."
            )
    return "\n".join(lines)


def details(r: dict[str, Any]) -> str:
    fill = r["fill"]
    out = [
        f"- fill: {fill['seconds']:.0f} s ({fill['rate']:,.0f}/s) on {fill['date']} at commit"
        f" {fill['commit']}, {fill['links']} links each, {fill['bytes'] / 2**20:,.0f} MB;"
        f" cached in {r['cache']}; copied to the run's home in {r['copy_s']:.1f} s",
        f"- load average (1 min): start {r['load_avg_start'][0]:.2f}"
        + (
            f", before the quiet run {r['load_avg_quiet_before'][0]:.2f}"
            if "load_avg_quiet_before" in r
            else ""
        )
        + (
            f", before the concurrent run {r['load_avg_concurrent_before'][0]:.2f}"
            if "load_avg_concurrent_before" in r
            else ""
        )
        + (
            f", before ingest {r['load_avg_ingest_before'][0]:.2f}"
            if "load_avg_ingest_before" in r
            else ""
        )
        + f", end {r['load_avg_end'][0]:.2f}",
        f"- daemon sources (sha256 of mnemonic/, migrations/): {r['code']}"
        + ("" if r["code_end"] == r["code"] else f", CHANGED during the run to {r['code_end']}"),
        f"- health at the end: {r['health_end']['status']} {r['health_end']['reasons']},"
        f" recall_index {r.get('recall_index_end')}",
    ]
    if "start" in r:
        out.append(f"- vector index at start: {r['start']['vector_index']}")
    if r.get("problems"):
        out.append(f"- daemon warnings/errors: {len(r['problems'])}, first: {r['problems'][0]}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="memories (0: none)")
    parser.add_argument("--million", action="store_true", help="also run at 1M memories")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"some of {','.join(PARTS)}")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "mnemonic-bench")
    parser.add_argument("--refill", action="store_true", help="remake the cached fill")
    parser.add_argument("--links", type=int, default=6, help="links per filled memory")
    parser.add_argument("--burst", type=int, default=1_000, help="queries in the RSS burst")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--write-rate", type=float, default=20.0)
    parser.add_argument("--ingest", type=int, default=2_000, help="short memories to ingest")
    parser.add_argument("--ingest-writers", type=int, default=4)
    parser.add_argument("--ready-limit", type=float, default=900.0, help="s to wait for ready")
    parser.add_argument("--keep", action="store_true", help="keep the run's home copy")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--save", type=Path, help="also write the JSON to this file")
    args = parser.parse_args()
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}")

    check_source()
    info = lat.machine()
    info["commit"] = commit()
    sizes = [s for s in [args.size, MILLION if args.million else 0] if s > 0]
    rows = [run_size(n, args) for n in sizes]
    info["load_avg_at_end"] = os.getloadavg()
    output = json.dumps({"machine": info, "parts": args.parts, "rows": rows}, indent=2, default=str)
    if args.save:
        args.save.write_text(output + "\n")
    if args.json:
        print(output)
        return
    print(
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['mem_total_mb']:,.0f} MB RAM,"
        f" Python {info['python']}; {info['date']}; commit {info['commit']};"
        f" load average at start {', '.join(f'{x:.2f}' for x in info['load_avg_at_start'])},"
        f" at end {', '.join(f'{x:.2f}' for x in info['load_avg_at_end'])}"
    )
    print(
        "Store filled through the store layer (latency.fill_direct: synthetic developer"
        " memories, random unit vectors); queries from latency.make_queries, never repeated;"
        " writes are short 8-15 word sentences. The bench client shares the machine's cores."
    )
    for r in rows:
        print()
        print(table(r))
        print()
        print(details(r))


if __name__ == "__main__":
    main()
