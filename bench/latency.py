"""Latency, throughput, cold start and memory of a real daemon at 10k, 100k (and 1M) memories.

Everything goes through the public REST API of a real ``mnemonic serve`` subprocess with its
own fresh MNEMONIC_HOME, except the ``--million`` fill, which writes 1M memories straight
through the store layer (raw rows, memories, full text, random unit vectors, a few links
each) because embedding 1M texts through the API would take over an hour on a laptop.

Per size: cold start on the empty home; batch ingest (``POST /memories/batch?wait=true``,
500 per batch) of a synthetic developer-memory corpus; restart on the filled home (cold
start); 300 single writes without ``wait`` spaced 10 ms apart (acknowledgement latency);
300 ``/query`` calls, half filtered by project; the daemon's RSS from /proc.

    python bench/latency.py [--sizes 10000,100000] [--million] [--passages MEAN] [--json]

``--passages MEAN`` gives each directly filled memory random passage vectors as well
(Poisson with that mean, 2 to 12 when any; the benchmarks' turns average 2.2-2.7), so a
store of the size has what the encoder would have written; without it the fill has whole
vectors only, as before passages existed.

Not a test: it prints a table (and the machine it ran on). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import multiprocessing
import multiprocessing.pool
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from mnemonic.config import Config
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.llm.embedding.onnx import MODEL_DIM, MODEL_NAME, OnnxEmbedder
from mnemonic.paths import resolve_paths
from mnemonic.store.base import EmbeddedOutcome, NewLink, PendingMemory
from mnemonic.store.database import Database
from mnemonic.store.models import NewRaw, RawStatus, Relation, Source
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.store.vector_rows import VectorModels

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import TOKEN, free_port

BATCH = 500
WRITES = 300
WRITE_SPACING_S = 0.010
QUERIES = 300
WARMUP_QUERIES = 5
CORPUS_SEED = 20240601
QUERY_SEED = 777
START = datetime(2024, 6, 1, tzinfo=UTC)
YEAR = timedelta(days=365)

# Targets (None = no target at that size).
T_INGEST = 200.0
T_ACK_P95 = 15.0
T_RSS_MB = 500.0


def query_targets(size: int) -> tuple[float | None, float]:
    """(p50, p95) in ms: 15/30 up to 100k, p95 150 at 1M."""
    return (15.0, 30.0) if size <= 100_000 else (None, 150.0)


# ---- synthetic corpus ----------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


PROJECTS = _words("""
atlas billing-api web-dashboard ingest-pipeline mobile-app auth-service search infra
data-warehouse notifications payments cli-tools docs-site ml-training edge-proxy inventory
analytics chat-bot scheduler design-system""")
# Some projects are much busier than others (weights ~ 1/rank^0.8).
PROJECT_WEIGHTS = [1 / (i + 1) ** 0.8 for i in range(len(PROJECTS))]
SERVICES = _words("""
auth-gateway billing-worker search-indexer thumbnailer mailer ws-relay cron-runner
export-api ledger feature-flags geo-lookup pdf-renderer rate-limiter session-store
webhook-dispatcher audit-log image-proxy recommender tax-calculator sync-agent""")
MODULES = _words("""
parser scheduler cache router exporter session invoice queue retry webhook migrations
tokenizer uploader metrics indexer ratelimit config auth checkout notifier storage sync reports
graphql i18n telemetry""")
VERBS = _words("""
load parse flush resolve build fetch validate render encode merge retry schedule compute
sync rotate normalize""")
NOUNS = _words("""
config header batch token invoice manifest schema cursor payload session thumbnail index
snapshot checksum quota webhook""")
DIRS = _words("src lib app pkg internal services cmd web/src")
EXTS = _words("py ts go rs tsx sql yaml js")
ENVS = _words("prod staging dev qa canary")
TABLES = _words("""
users orders invoices events sessions payments audit_log line_items subscriptions
api_keys feature_flags shipments""")
PACKAGES = _words("""
numpy pydantic react typescript tokio serde django fastapi sqlalchemy webpack vite
eslint pytest celery redis boto3 axios prisma grpcio uvicorn""")
PEOPLE = _words("""
Alice Bob Priya Marco Chen Fatima Jonas Lena Omar Sara Tomás Yuki Dmitri Amara Noah
Ines""")
TECH = _words("""
Postgres SQLite Redis Kafka RabbitMQ gRPC GraphQL S3 MinIO Celery Temporal Nginx Envoy
Terraform Pulumi Poetry uv pnpm ClickHouse DuckDB""")
REASONS = [
    "the p99 latency doubled under load",
    "the license changed",
    "nobody on the team knows how to operate it",
    "it halves our cloud bill",
    "the migration path is simpler",
    "it already runs in staging without issues",
    "the old client leaks connections",
    "we need exactly-once delivery",
    "the vendor is ending support next year",
    "local development gets much faster",
]
CONDITIONS = [
    "the CI runner is under load",
    "two workers share the same tmp dir",
    "the clock skew exceeds a second",
    "the cache is cold",
    "the locale is not UTF-8",
    "the disk is almost full",
    "tests run in parallel",
    "the VPN is on",
]
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday")
MONTHS = _words("""
January February March April May June July August September October November
December""")
SOURCES = {
    "shell": "terminal",
    "error": "terminal",
    "commit": "git",
    "decision": "api",
    "note": "user",
    "chat": "mcp",
}
# "category: template". Every template carries at least one number, so two texts from the
# same template differ in their numbers and the daemon links them instead of merging.
_TEMPLATES = """
shell: pytest tests/{module}/test_{func}.py -k {func} -x --maxfail={n}
shell: docker compose -f deploy/{env}.yml up -d {svc} --build --scale {svc}={small} -t {n}
shell: git rebase -i HEAD~{small} on branch {branch} before opening PR #{pr}
shell: kubectl rollout restart deployment/{svc} -n {proj}-{env} --timeout={n}s
shell: psql -h {host} -p {port} -d {proj_u} -c 'select count(*) from {table} where id > {big}'
shell: rsync -avz --delete build/ deploy@{host}:/srv/{proj}/releases/{big}/
shell: curl -s -X POST localhost:{port}/api/v{small}/{module} -d @{noun}.json | jq .{noun}
shell: terraform plan -var-file=envs/{env}.tfvars -target=module.{module} -parallelism={small}
shell: make bench-{module} SIZE={big} THREADS={small} in the {proj} repo
shell: python -m {module}.{func} --batch-size {n} --since 2024-{mm}-{dd} --dry-run
shell: npm run build -- --filter {module} && du -sh dist/{module} shows {n2}.{small} MB
shell: redis-cli -h {host} -p {port} --scan --pattern '{module}:{noun}:*' | wc -l gave {big}
error: TypeError: 'NoneType' object is not subscriptable in {func} at {file}:{line}
error: ConnectionRefusedError: [Errno 111] connecting to {host}:{port} from {svc}
error: psycopg.errors.UniqueViolation: duplicate key violates {table}_pkey, key (id)=({big})
error: npm ERR! ERESOLVE could not resolve dependency {pkg}@{ver} required by {module}-ui@{ver2}
error: panic: runtime error: index out of range [{n}] with length {small} in {func} ({file})
error: pod {svc}-{hex} OOMKilled after exceeding its {mb}Mi memory limit in {env}
error: TimeoutError: {svc} did not answer /{module}/{noun} within {ms} ms (attempt {small} of 5)
error: AssertionError in test_{func}: expected {n} {noun}s but got {n2} on the {env} fixture
error: error[E0502]: cannot borrow `{noun}` as mutable because it is also borrowed at {file}:{line}
error: Build #{big} failed: {pkg} {ver} wheel missing for Python 3.{small} on linux aarch64
commit: fix({module}): handle empty {noun} in {func} (#{pr})
commit: feat({module}): add {noun} export to {svc}, closes #{pr}
commit: refactor({module}): split {file} into {func} and {func2}, no behaviour change (#{pr})
commit: chore(deps): bump {pkg} from {ver} to {ver2} in /{proj}
commit: perf({module}): cache {noun} lookups in {func}, p95 down from {ms} ms to {ms2} ms
commit: revert "{module}: switch {noun} storage to {tech}" because of incident {inc}
commit: test({module}): cover {func} with {n} new cases for the {table} table
decision: We decided to use {tech} instead of {tech2} for the {module} because {reason} (ADR-{n}).
decision: Decision: pin {pkg} below {ver} in {proj} until {reason}; revisit in Q{q}.
decision: Agreed with {person} to move {module} from {proj} into {svc} by {month} {dd}.
decision: From sprint {n} on, every {module} change needs a migration test on a {big}-row copy.
decision: We keep {tech} for {module} in {proj}: it did {n2}k writes/s, enough until {month}.
note: {person} says the {module} tests are flaky on {env} when {condition}; seen {n} times.
note: Remember: {env} {svc} listens on port {port}, the others use {port2}.
note: The {table} table in {proj} has about {big} rows; the nightly {func} job takes {n} min.
note: TODO rotate the {svc} API key for {proj} before {month} {dd}, ticket {proj_u}-{pr}.
note: Staging {svc} needs at least {mb} MB of RAM or {func} gets killed in the {module} import.
note: Learned that {tech} drops {noun} messages over {mb} KB unless max_message_size is raised.
note: Onboarding tip for {proj}: run {func} once after cloning, it seeds {n} fake {table}.
chat: {person}: can you review PR #{pr} for {module} before the {hh}:30 standup on {weekday}?
chat: {person}: {svc} is down again on {env}, error rate {n}%, looking into it now
chat: {person}: I moved the {noun} docs to docs/{module}/{func}.md, ping me if links broke
chat: {person}: the {proj} release {ver} is tagged, {n} commits since {ver2}, changelog in #{pr}
chat: {person}: heads-up, {table} migration {big} locks the table for ~{n} minutes in {env}
chat: {person}: does anyone know why {func} in {file} sleeps {ms} ms before retrying?
"""
TEMPLATES: list[tuple[str, str]] = [
    (line.split(": ", 1)[0], line.split(": ", 1)[1]) for line in _TEMPLATES.strip().splitlines()
]


# Endings appended to short texts (and to some others), so texts run ~8-30 words.
TAILS: dict[str, list[str]] = {
    "shell": [
        " # to reproduce the flaky {module} test from ticket {proj_u}-{pr}",
        " # before the {env} deploy on {weekday}, takes about {n} s",
        " # to check the {table} backfill, {person} asked for it",
        " # needed after every {pkg} upgrade, last time {ver}",
        " # from the {proj} repo root, not from {module}/",
    ],
    "error": [
        " — seen on {env} after deploy {big}",
        " (happens about {n} times a day since {ver})",
        " — {person} is on it, ticket {proj_u}-{pr}",
        " after the {pkg} {ver} upgrade in {proj}",
    ],
    "commit": [
        "; reviewed by {person}, follow-up in #{pr}",
        "; part of the {month} {module} cleanup ({n} files)",
        "; needed for the {env} rollout of {svc} {ver}",
    ],
    "other": [
        " Ticket {proj_u}-{pr}.",
        " Follow-up in sprint {n}, owner {person}.",
        " {person} mentioned it in #{proj} on {weekday}.",
        " It took {n} minutes to figure out on {env}.",
    ],
}


def _func(rng: random.Random) -> str:
    name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
    if rng.random() < 0.25:  # some code bases are camelCase
        head, tail = name.split("_")
        name = head + tail.capitalize()
    return name


def _slots(rng: random.Random, project: str) -> dict[str, str]:
    module = rng.choice(MODULES)
    func = _func(rng)
    env = rng.choice(ENVS)
    svc = rng.choice(SERVICES)
    person = rng.choice(PEOPLE)
    pair = rng.sample(TECH, 2)
    return {
        "proj": project,
        "proj_u": project.replace("-", "_").upper(),
        "module": module,
        "func": func,
        "func2": _func(rng),
        "noun": rng.choice(NOUNS),
        "file": f"{rng.choice(DIRS)}/{module}/{func}.{rng.choice(EXTS)}",
        "line": str(rng.randint(10, 2400)),
        "env": env,
        "svc": svc,
        "host": f"{env}-{svc}-{rng.randint(1, 40):02d}.internal",
        "port": str(rng.choice([5432, 6379, 8080, 9200, 5672, 3000, rng.randint(3001, 9999)])),
        "port2": str(rng.randint(3001, 9999)),
        "table": rng.choice(TABLES),
        "pkg": rng.choice(PACKAGES),
        "ver": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
        "ver2": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
        "person": person,
        "person_l": person.lower(),
        "tech": pair[0],
        "tech2": pair[1],
        "reason": rng.choice(REASONS),
        "condition": rng.choice(CONDITIONS),
        "branch": f"{rng.choice(['feature', 'fix', 'chore'])}/{module}-{rng.randint(100, 999)}",
        "pr": str(rng.randint(100, 9999)),
        "inc": f"INC-{rng.randint(1000, 9999)}",
        "n": str(rng.randint(2, 120)),
        "n2": str(rng.randint(2, 120)),
        "small": str(rng.randint(2, 9)),
        "big": str(rng.randint(1_000, 9_000_000)),
        "ms": str(rng.randint(20, 5000)),
        "ms2": str(rng.randint(2, 400)),
        "mb": str(rng.choice([128, 256, 512, 768, 1024, 2048, rng.randint(64, 4096)])),
        "hex": f"{rng.getrandbits(40):010x}",
        "mm": f"{rng.randint(1, 12):02d}",
        "dd": f"{rng.randint(1, 28):02d}",
        "hh": f"{rng.randint(8, 17):02d}",
        "q": str(rng.randint(1, 4)),
        "month": rng.choice(MONTHS),
        "weekday": rng.choice(WEEKDAYS),
    }


def make_text(rng: random.Random) -> tuple[str, str, str]:
    """(text, project, source) of one synthetic developer memory."""
    project = rng.choices(PROJECTS, PROJECT_WEIGHTS)[0]
    category, template = rng.choice(TEMPLATES)
    source = SOURCES[category]
    slots = _slots(rng, project)
    text = template.format(**slots)
    if len(text.split()) < 9 or rng.random() < 0.35:
        text += rng.choice(TAILS.get(category, TAILS["other"])).format(**slots)
    return text, project, source


@dataclass(frozen=True, slots=True)
class Item:
    content: str
    project: str
    source: str
    timestamp: datetime

    def body(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "project": self.project,
            "source": self.source,
            "timestamp": self.timestamp.isoformat(),
        }


def iter_corpus(n: int, seed: int = CORPUS_SEED) -> Iterator[Item]:
    """``n`` memories in time order, spread evenly (with jitter) over one year."""
    rng = random.Random(seed)
    step = YEAR / n
    for i in range(n):
        text, project, source = make_text(rng)
        yield Item(text, project, source, START + step * (i + rng.random()))


def make_queries(n: int, exclude: set[str], seed: int = QUERY_SEED) -> list[tuple[str, str]]:
    """(text, project) pairs from the same generator, none identical to a corpus text."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    while len(out) < n:
        text, project, _ = make_text(rng)
        if text not in exclude:
            out.append((text, project))
    return out


# ---- the daemon ----------------------------------------------------------------------------


@dataclass
class Running:
    client: httpx.Client
    cold_s: float
    pid: int
    log: Path
    code: str


def code_hash() -> str:
    """Hash of the daemon's sources at spawn time: others may edit the tree during a run."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted([*root.glob("mnemonic/**/*.py"), *root.glob("migrations/*.sql")]):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@contextmanager
def daemon(home: Path, health_deadline_s: float = 900.0) -> Iterator[Running]:
    """Start ``mnemonic serve`` on ``home`` (like bench/server.py, but we keep its pid and
    send its stderr to a file, so a chatty daemon cannot block on a full pipe)."""
    port = free_port()
    env = dict(os.environ)
    env.update(
        {
            "MNEMONIC_HOME": str(home),
            "MNEMONIC_PORT": str(port),
            "MNEMONIC_TOKEN": TOKEN,
            "MNEMONIC_LOGGING__LEVEL": "WARNING",
        }
    )
    log = home / f"daemon-stderr-{int(time.time() * 1000)}.log"
    code = code_hash()
    home.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "mnemonic", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=900,
    )
    try:
        cold = _wait_healthy(client, proc, started, health_deadline_s, log)
        yield Running(client, cold, proc.pid, log, code)
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_healthy(
    client: httpx.Client, proc: subprocess.Popen[bytes], started: float, limit: float, log: Path
) -> float:
    while time.perf_counter() < started + limit:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if client.get("/api/v1/health").status_code == 200:
                return time.perf_counter() - started
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"daemon did not become healthy in {limit:.0f} s")


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MiB, from /proc/<pid>/status."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def health(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/api/v1/health")
    response.raise_for_status()
    return dict(response.json())


def loop_stalls(client: httpx.Client) -> dict[str, float]:
    """The event-loop watchdog's counters since the daemon started (/metrics): stalls
    of at least its threshold (0.25 s), and the longest."""
    response = client.get("/metrics")
    response.raise_for_status()
    found = {"stalls": 0.0, "longest_s": 0.0}
    for line in response.text.splitlines():
        if line.startswith("mnemonic_event_loop_stalls_total"):
            found["stalls"] = float(line.split()[-1])
        elif line.startswith("mnemonic_event_loop_longest_stall_seconds"):
            found["longest_s"] = float(line.split()[-1])
    return found


def wait_backlog(client: httpx.Client, below: int) -> None:
    """Poll /health until fewer than ``below`` memories wait for the encoder."""
    while health(client)["embedding"]["backlog"] >= below:
        time.sleep(0.25)


def wait_index(client: httpx.Client, limit_s: float = 3600.0) -> float:
    """Seconds until the recall index is ready and settled. A store past
    ``recall.index_wait_below`` is served through SQL while the index loads or builds in
    the background, and a ready index may still be switching its vectors to HNSW or
    compacting its graph (searching exactly meanwhile); measuring then would time that
    work, not the daemon's steady state."""
    started = time.perf_counter()
    while not _settled(health(client)["recall_index"]):
        if time.perf_counter() - started > limit_s:
            raise RuntimeError(f"the recall index was not settled in {limit_s:.0f} s")
        time.sleep(0.5)
    return time.perf_counter() - started


def _settled(index: dict[str, Any]) -> bool:
    parts = index.get("entry_points", {}).values()
    busy = any(p.get("switching") or p.get("compacting") for p in parts if isinstance(p, dict))
    return index["state"] == "ready" and not busy


def wait_idle(client: httpx.Client, limit_s: float = 3600.0) -> dict[str, Any]:
    """Poll /health until the encoder has nothing queued or in flight."""
    deadline = time.perf_counter() + limit_s
    while True:
        h = health(client)
        if h["embedding"]["backlog"] == 0 and h["memories"]["raw_pending"] == 0:
            return h
        if time.perf_counter() > deadline:
            raise RuntimeError(f"encoder still busy after {limit_s:.0f} s: {h['embedding']}")
        time.sleep(0.25)


def log_problems(log: Path) -> list[str]:
    """WARNING and worse lines the daemon wrote to stderr."""
    if not log.exists():
        return []
    return [
        line
        for line in log.read_text(errors="replace").splitlines()
        if any(word in line for word in ('"WARNING"', '"ERROR"', '"CRITICAL"', "Traceback"))
    ]


# ---- measurements --------------------------------------------------------------------------


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def progress(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def ingest(client: httpx.Client, n: int) -> dict[str, Any]:
    """Batches of 500 with wait=true; the rate counts until the encoder is idle."""
    statuses: Counter[str] = Counter()
    codes: Counter[int] = Counter()
    batch_s: list[float] = []
    started = time.perf_counter()
    items = iter_corpus(n)
    done = 0
    while done < n:
        chunk = [next(items).body() for _ in range(min(BATCH, n - done))]
        t0 = time.perf_counter()
        response = client.post("/api/v1/memories/batch?wait=true", json={"memories": chunk})
        batch_s.append(time.perf_counter() - t0)
        codes[response.status_code] += 1
        if response.status_code not in (201, 202):
            raise RuntimeError(f"batch answered {response.status_code}: {response.text[:500]}")
        statuses.update(r["status"] for r in response.json()["results"])
        done += len(chunk)
        if response.status_code == 202:  # wait=true timed out: let the encoder catch up
            wait_backlog(client, BATCH)
        if len(batch_s) % 10 == 0 or done == n:
            rate = done / (time.perf_counter() - started)
            eta = (n - done) / rate if rate else 0
            progress(f"  ingest {done:,}/{n:,}: {rate:,.0f}/s, eta {eta:,.0f} s")
    final = wait_idle(client)
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "rate": n / seconds,
        "batch_p50_s": pct(batch_s, 0.5),
        "batch_max_s": max(batch_s),
        "http_codes": dict(codes),
        "statuses": dict(statuses),
        "health": final,
    }


def write_ack(client: httpx.Client, count: int = WRITES) -> dict[str, Any]:
    """Single writes without wait, one every 10 ms; latency of each acknowledgement."""
    rng = random.Random(4242)
    latencies: list[float] = []
    codes: Counter[int] = Counter()
    started = time.perf_counter()
    for i in range(count):
        slot = started + i * WRITE_SPACING_S
        delay = slot - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        text, project, source = make_text(rng)
        body = {"content": f"{text} (ack probe {i})", "project": project, "source": source}
        t0 = time.perf_counter()
        response = client.post("/api/v1/memories", json=body)
        latencies.append((time.perf_counter() - t0) * 1000)
        codes[response.status_code] += 1
    wall = time.perf_counter() - started
    wait_idle(client)
    return {
        "p50": pct(latencies, 0.5),
        "p95": pct(latencies, 0.95),
        "p99": pct(latencies, 0.99),
        "max": max(latencies),
        "http_codes": dict(codes),
        "offered_per_s": count / wall,
    }


def queries(client: httpx.Client, corpus_texts: set[str]) -> dict[str, Any]:
    """300 queries, even ones filtered by the query's project; a few warm-ups first."""
    asked = make_queries(QUERIES + WARMUP_QUERIES, corpus_texts)
    latencies: dict[str, list[float]] = {"filtered": [], "unfiltered": []}
    server_ms: list[float] = []
    hits: list[int] = []
    codes: Counter[int] = Counter()
    for i, (text, project) in enumerate(asked):
        kind = "filtered" if i % 2 == 0 else "unfiltered"
        body: dict[str, Any] = {"query": text, "limit": 10}
        if kind == "filtered":
            body["project"] = project
        t0 = time.perf_counter()
        response = client.post("/api/v1/query", json=body)
        ms = (time.perf_counter() - t0) * 1000
        codes[response.status_code] += 1
        if i < WARMUP_QUERIES:
            continue
        response.raise_for_status()
        answer = response.json()
        latencies[kind].append(ms)
        server_ms.append(float(answer["took_ms"]))
        hits.append(len(answer["results"]))
    both = latencies["filtered"] + latencies["unfiltered"]
    return {
        "p50": pct(both, 0.5),
        "p95": pct(both, 0.95),
        "p99": pct(both, 0.99),
        "max": max(both),
        "filtered_p50": pct(latencies["filtered"], 0.5),
        "filtered_p95": pct(latencies["filtered"], 0.95),
        "unfiltered_p50": pct(latencies["unfiltered"], 0.5),
        "unfiltered_p95": pct(latencies["unfiltered"], 0.95),
        "server_took_p50": pct(server_ms, 0.5),
        "server_took_p95": pct(server_ms, 0.95),
        "mean_results": sum(hits) / len(hits),
        "http_codes": dict(codes),
    }


def associations_per_memory(h: dict[str, Any]) -> float:
    active = h["memories"]["memories_active"]
    return h["memories"]["associations"] / active if active else 0.0


def measure_filled(home: Path, corpus_texts: set[str], row: dict[str, Any]) -> None:
    """Restart on the filled home, then ack latency, queries and RSS (measurements 1, 3-5)."""
    progress("  restarting on the filled home")
    with daemon(home) as d:
        row["cold_filled_s"] = d.cold_s
        row["rss_restart_mb"] = rss_mb(d.pid)[0]
        row.setdefault("code", []).append(d.code)
        row["index_ready_s"] = wait_index(d.client) + d.cold_s
        row["start_stalls"] = loop_stalls(d.client)
        progress(
            f"  healthy in {d.cold_s:.1f} s, recall index settled after"
            f" {row['index_ready_s']:.1f} s (event loop meanwhile: "
            f"{row['start_stalls']['stalls']:.0f} stalls, longest"
            f" {row['start_stalls']['longest_s']:.2f} s);"
            f" {WRITES} single writes, 10 ms apart"
        )
        row["ack"] = write_ack(d.client)
        progress(f"  ack p95 {row['ack']['p95']:.1f} ms; {QUERIES} queries")
        row["query"] = queries(d.client, corpus_texts)
        progress(f"  query p50 {row['query']['p50']:.1f} ms, p95 {row['query']['p95']:.1f} ms")
        row["rss_mb"], row["rss_peak_mb"] = rss_mb(d.pid)
        h = health(d.client)
        row["final_counts"] = h["memories"]
        row["vector_index"] = h["vector_index"]
        row["status"] = h["status"]
        row["load_avg_end"] = os.getloadavg()
        row["problems"] = row.get("problems", []) + log_problems(d.log)


def run_size(n: int, keep: bool) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"mnemonic-latency-{n}-"))
    row: dict[str, Any] = {"size": n, "fill": "REST batch ingest", "home": str(home)}
    row["load_avg_start"] = os.getloadavg()
    progress(f"size {n:,}: home {home}")
    try:
        with daemon(home) as d:
            row["cold_empty_s"] = d.cold_s
            row["rss_empty_mb"] = rss_mb(d.pid)[0]
            row["code"] = [d.code]
            progress(f"  cold start on the empty home: {d.cold_s:.2f} s")
            row["ingest"] = ingest(d.client, n)
            h = row["ingest"]["health"]
            row["assoc_per_memory"] = associations_per_memory(h)
            row["counts_after_fill"] = h["memories"]
            row["rss_fill_mb"], row["rss_fill_peak_mb"] = rss_mb(d.pid)
            row["problems"] = log_problems(d.log)
            progress(
                f"  ingest {row['ingest']['rate']:,.0f}/s; rss {row['rss_fill_mb']:.0f} MB;"
                f" {row['assoc_per_memory']:.2f} associations per memory"
            )
        texts = {item.content for item in iter_corpus(n)}
        measure_filled(home, texts, row)
    finally:
        if not keep:
            _remove(home)
    return row


def _remove(home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)


# ---- the 1M fill through the store layer ---------------------------------------------------


FILL_CHUNK = 5_000


def _encode_chunk(items: list[Item]) -> tuple[list[Item], list[Any]]:
    """Heuristic encoding of one chunk, in a worker process (it costs ~0.6 ms a text)."""
    limit = Config().encoding.summary_max_chars
    return items, [encode(it.content, summary_max_chars=limit) for it in items]


def _chunks(n: int, seed: int) -> Iterator[list[Item]]:
    items = iter_corpus(n, seed)
    for start in range(0, n, FILL_CHUNK):
        yield [next(items) for _ in range(min(FILL_CHUNK, n - start))]


async def fill_direct(
    home: Path,
    n: int,
    links: int,
    max_minutes: float,
    pool: multiprocessing.pool.Pool,
    seed: int = CORPUS_SEED,
    passages: float = 0.0,
) -> dict[str, Any]:
    """Insert ``n`` memories through SQLiteStore.accept/complete, one transaction each per
    5k rows: heuristic encoding (in ``pool``), FTS rows, random unit vectors and ``links``
    associations each (the previous memory of the project as temporal, the others random
    earlier memories of the same project, biased to recent ones)."""
    cfg = Config()
    step = cfg.encoding.reinforce_step
    db = Database(resolve_paths(home).database, cfg.storage)
    await db.open()
    store = SQLiteStore(db)
    rng = random.Random(seed + 1)
    vec_rng = np.random.default_rng(seed)
    by_project: dict[str, list[int]] = defaultdict(list)
    relations = [Relation.SIMILAR, Relation.REINFORCES, Relation.TEMPORAL]
    statuses: Counter[str] = Counter()
    started = time.perf_counter()
    done = 0
    passage_rows = 0
    try:
        # At most three chunks in flight, so an early stop never leaves a feeder thread
        # blocked on a full pipe (Pool.imap over a generator + terminate() deadlocks).
        chunks = _chunks(n, seed)
        inflight: deque[multiprocessing.pool.AsyncResult[tuple[list[Item], list[Any]]]] = deque()
        for chunk in islice(chunks, 3):
            inflight.append(pool.apply_async(_encode_chunk, (chunk,)))
        while inflight:
            batch, encoded = inflight.popleft().get()
            for chunk in islice(chunks, 1):
                inflight.append(pool.apply_async(_encode_chunk, (chunk,)))
            prepared = [
                (
                    NewRaw(it.content, Source(it.source), it.project, it.timestamp),
                    enc,
                    content_hash(it.content),
                )
                for it, enc in zip(batch, encoded, strict=True)
            ]
            accepted = await store.accept(prepared, step)
            vectors = vec_rng.standard_normal((len(batch), MODEL_DIM), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            outcomes = []
            for a, (raw, enc, _), vector in zip(accepted, prepared, vectors, strict=True):
                statuses[a.status.value] += 1
                if a.status is not RawStatus.ACCEPTED:
                    continue
                earlier = by_project[raw.project]
                new_links: dict[int, NewLink] = {}
                if earlier:
                    new_links[earlier[-1]] = NewLink(earlier[-1], Relation.TEMPORAL, 0.6)
                    for _ in range(links - 1):
                        target = earlier[int(len(earlier) * rng.random() ** 0.5)]
                        strength = round(rng.uniform(0.3, 0.95), 3)
                        new_links.setdefault(
                            target, NewLink(target, rng.choice(relations), strength)
                        )
                earlier.append(a.seq)
                pending = PendingMemory(
                    a.seq,
                    a.memory_id,
                    a.raw_id,
                    raw.content,
                    raw.project,
                    enc.type,
                    raw.source,
                    enc.concepts,
                    raw.timestamp,
                    enc.salience,
                )
                mine = None
                if passages > 0:
                    count = min(12, int(vec_rng.poisson(passages)))
                    count = 2 if count == 1 else count  # one sentence has no passages
                    mine = vec_rng.standard_normal((count, MODEL_DIM), dtype=np.float32)
                    mine /= np.linalg.norm(mine, axis=1, keepdims=True) if count else 1.0
                    passage_rows += count
                outcomes.append(
                    EmbeddedOutcome(pending, vector, links=tuple(new_links.values()), passages=mine)
                )
            await store.complete(outcomes, VectorModels(MODEL_NAME, MODEL_NAME), step)
            done += len(batch)
            rate = done / (time.perf_counter() - started)
            if done % 50_000 == 0 or done == n:
                progress(
                    f"  direct fill {done:,}/{n:,}: {rate:,.0f}/s, eta {(n - done) / rate:,.0f} s"
                )
            if done < n and done >= 50_000 and (n / rate) / 60 > max_minutes:
                raise TimeoutError(
                    f"the fill would take {(n / rate) / 60:.0f} min (> {max_minutes:.0f})"
                )
    finally:
        await db.close()
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "rate": n / seconds,
        "statuses": dict(statuses),
        "links": links,
        "passage_rows": passage_rows,
    }


def available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_million(
    n: int, links: int, max_minutes: float, keep: bool, passages: float = 0.0
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"mnemonic-latency-{n}-"))
    with_passages = f", passages {passages:g} per memory on average" if passages else ""
    row: dict[str, Any] = {
        "size": n,
        "fill": f"direct through the store layer (random vectors{with_passages},"
        f" {links} links each)",
        "home": str(home),
        "load_avg_start": os.getloadavg(),
    }
    progress(f"size {n:,} (direct fill): home {home}, {available_mb():,.0f} MB available")
    try:
        with daemon(home) as d:  # creates the folders, the schema and the model metadata
            row["cold_empty_s"] = d.cold_s
            row["code"] = [d.code]
            row["rss_empty_mb"] = rss_mb(d.pid)[0]
        # The pool forks before any thread exists (aiosqlite starts one per connection).
        pool = multiprocessing.get_context("fork").Pool(2)
        try:
            row["direct_fill"] = asyncio.run(
                fill_direct(home, n, links, max_minutes, pool, passages=passages)
            )
        finally:
            pool.close()  # not terminate(): the workers finish the chunks in flight and exit
            pool.join()
        with daemon(home) as d:  # association count of the fill, before our own writes
            row["cold_filled_s"] = d.cold_s
            h = health(d.client)
            row["assoc_per_memory"] = associations_per_memory(h)
            row["counts_after_fill"] = h["memories"]
        texts = {item.content for item in iter_corpus(n)}
        measure_filled(home, texts, row)
    finally:
        if not keep:
            _remove(home)
    return row


# ---- output --------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "mem_total_mb": _meminfo("MemTotal"),
        "load_avg_at_start": os.getloadavg(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def calibrate() -> dict[str, float]:
    """The embedder alone in this process, right now: how busy is the machine?"""
    embedder = OnnxEmbedder(threads=Config().embedding.threads)
    texts = [item.content for item in iter_corpus(256, seed=1)]
    embedder.embed(texts[:32])
    started = time.perf_counter()
    embedder.embed(texts)
    per_s = len(texts) / (time.perf_counter() - started)
    single = []
    for text in texts[:40]:
        t0 = time.perf_counter()
        embedder.embed([text])
        single.append((time.perf_counter() - t0) * 1000)
    return {"embed_batch_per_s": per_s, "embed_one_p50_ms": pct(single, 0.5)}


def _meminfo(key: str) -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024)
    return 0.0


def _mark(value: float, target: float | None, higher_is_better: bool = False) -> str:
    if target is None:
        return ""
    ok = value >= target if higher_is_better else value <= target
    return " ✓" if ok else " ✗"


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| memories | fill | cold start empty / filled | ingest (≥ 200/s) | assoc/memory"
        " | write ack p50 / p95 / p99 (p95 ≤ 15 ms) | /query p50 / p95 (≤ 15 / 30 ms; 1M p95 ≤ 150)"
        " | RSS after fill / after run (≤ 500 MB at 100k) |"
    )
    lines = [head, "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = r["size"]
        if "ingest" in r:
            rate = r["ingest"]["rate"]
            ingest_cell = f"{rate:,.0f}/s{_mark(rate, T_INGEST, higher_is_better=True)}"
            fill = "REST batch"
            rss_fill = f"{r['rss_fill_mb']:,.0f}"
        else:
            ingest_cell = f"n/a (direct fill {r['direct_fill']['rate']:,.0f}/s)"
            fill = "store layer, random vectors"
            rss_fill = "n/a"
        ack = r["ack"]
        q = r["query"]
        q50, q95 = query_targets(n)
        rss_target = T_RSS_MB if n <= 100_000 else None
        rss = max(r["rss_mb"], r.get("rss_fill_mb", 0.0))
        lines.append(
            f"| {n:,} | {fill} | {r['cold_empty_s']:.2f} s / {r['cold_filled_s']:.2f} s"
            f" | {ingest_cell} | {r['assoc_per_memory']:.2f}"
            f" | {ack['p50']:.1f} / {ack['p95']:.1f} / {ack['p99']:.1f} ms"
            f"{_mark(ack['p95'], T_ACK_P95)}"
            f" | {q['p50']:.1f}{_mark(q['p50'], q50)} / {q['p95']:.1f} ms{_mark(q['p95'], q95)}"
            f" | {rss_fill} / {r['rss_mb']:,.0f} MB{_mark(rss, rss_target)} |"
        )
    return "\n".join(lines)


def details(rows: list[dict[str, Any]]) -> str:
    out: list[str] = []
    for r in rows:
        q = r["query"]
        counts = r["final_counts"]
        out.append(
            f"- {r['size']:,}: /query filtered p50/p95"
            f" {q['filtered_p50']:.1f}/{q['filtered_p95']:.1f} ms, unfiltered"
            f" {q['unfiltered_p50']:.1f}/{q['unfiltered_p95']:.1f} ms,"
            f" server took_ms p50/p95 {q['server_took_p50']:.1f}/{q['server_took_p95']:.1f},"
            f" max {q['max']:.0f} ms, {q['mean_results']:.1f} results;"
            f" ack max {r['ack']['max']:.1f} ms ({r['ack']['offered_per_s']:.0f} writes/s offered);"
            f" peak RSS since restart {r['rss_peak_mb']:,.0f} MB;"
            f" active {counts['memories_active']:,},"
            f" merged {counts['memories_merged']:,}, associations {counts['associations']:,},"
            f" failed {counts['raw_failed']}; status {r['status']};"
            f" RSS on the empty home {r['rss_empty_mb']:,.0f} MB;"
            f" recall index settled {r.get('index_ready_s', float('nan')):.1f} s after the restart"
            " (measured after it);"
            f" event-loop stalls until then {r.get('start_stalls', {}).get('stalls', 0):.0f},"
            f" longest {r.get('start_stalls', {}).get('longest_s', 0):.2f} s;"
            f" load average start/end {r['load_avg_start'][0]:.2f}/{r['load_avg_end'][0]:.2f}"
        )
        if "ingest" in r:
            ing = r["ingest"]
            out.append(
                f"  ingest {ing['seconds']:.0f} s, batch of {BATCH} p50 {ing['batch_p50_s']:.2f} s"
                f" max {ing['batch_max_s']:.2f} s, HTTP {ing['http_codes']},"
                f" results {ing['statuses']}"
            )
        else:
            fill = r["direct_fill"]
            out.append(
                f"  direct fill {fill['seconds']:.0f} s ({fill['rate']:,.0f}/s), {fill['links']}"
                f" links each, {fill.get('passage_rows', 0):,} passage rows,"
                f" results {fill['statuses']}"
            )
        out.append(f"  daemon sources (sha256 of mnemonic/, migrations/): {', '.join(r['code'])}")
        if len(set(r["code"])) > 1:
            out.append(f"  WARNING: the daemon's code changed during this row: {r['code']}")
        if r.get("problems"):
            out.append(f"  daemon warnings/errors: {len(r['problems'])}, first: {r['problems'][0]}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated, '' for none")
    parser.add_argument("--million", action="store_true", help="add a 1M row (direct fill)")
    parser.add_argument("--million-size", type=int, default=1_000_000, help=argparse.SUPPRESS)
    parser.add_argument("--million-links", type=int, default=6, help="links per filled memory")
    parser.add_argument("--million-max-minutes", type=float, default=15.0)
    parser.add_argument(
        "--passages", type=float, default=0.0, help="mean passage vectors per filled memory"
    )
    parser.add_argument("--keep", action="store_true", help="keep the MNEMONIC_HOME folders")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--save", type=Path, help="also write the JSON output to this file")
    args = parser.parse_args()

    info = machine()
    info["calibration"] = calibrate()
    progress(f"machine: {info}")
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        rows.append(run_size(size, args.keep))
    if args.million:
        need_mb = args.million_size * 6 / 1000  # vectors, their load at start, python rows
        if available_mb() < need_mb:
            skipped.append(
                f"1M skipped: {available_mb():,.0f} MB available, ~{need_mb:,.0f} needed"
            )
        else:
            try:
                rows.append(
                    run_million(
                        args.million_size,
                        args.million_links,
                        args.million_max_minutes,
                        args.keep,
                        args.passages,
                    )
                )
            except TimeoutError as exc:
                skipped.append(f"1M skipped: {exc}")
    for r in rows:
        r.get("ingest", {}).pop("health", None)
    output = json.dumps({"machine": info, "rows": rows, "skipped": skipped}, indent=2, default=str)
    if args.save:
        args.save.write_text(output + "\n")
    if args.json:
        print(output)
        return
    print(
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['mem_total_mb']:,.0f} MB RAM,"
        f" Python {info['python']}, {info['platform']}; {info['date']};"
        f" load average at start {', '.join(f'{x:.2f}' for x in info['load_avg_at_start'])}"
    )
    cal = info["calibration"]
    print(
        f"Embedder alone in the bench process before the runs: {cal['embed_batch_per_s']:,.0f}"
        f" texts/s in batches, {cal['embed_one_p50_ms']:.1f} ms for one text (p50)"
    )
    print(
        f"Corpus: synthetic developer memories (shell commands, errors, commits, decisions, notes,"
        f" chat), {len(TEMPLATES)} templates, {len(PROJECTS)} projects, one year of timestamps;"
        f" batches of {BATCH} with wait=true; {WRITES} single writes 10 ms apart;"
        f" {QUERIES} queries (half project-filtered, {WARMUP_QUERIES} warm-ups not counted)."
    )
    print()
    print(table(rows))
    print()
    print(details(rows))
    for line in skipped:
        print(line)


if __name__ == "__main__":
    main()
