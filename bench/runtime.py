"""Daemon runtime benchmark (issue 3 §8): idle CPU, RSS, /query under a write load, /ws fan-out.

One real ``mnemonic serve`` subprocess on a fresh MNEMONIC_HOME holding ``--size`` memories
(default 100k), written straight through the store layer by ``latency.fill_direct`` (heuristic
encoding, random unit vectors, 8 links each) because embedding 100k texts through the API
would take about an hour here. Then, in order, against that one daemon:

1. idle CPU: no requests for ``--idle-seconds``; psutil CPU time of the daemon / wall time;
2. RSS (VmRSS, VmHWM) after start, after the idle phase, after the query phase, at the end;
3. ``POST /api/v1/query`` from 16 concurrent clients (half filtered by project) while a thread
   writes 50 new memories/s with single ``POST /api/v1/memories`` on a monotonic schedule;
4. ``/ws`` fan-out: 10 clients while ~1,000 new memories/s arrive as batches of 50 (open
   loop), first subscribed to ``raw_memory_created`` only for ``--ws-seconds`` (so each client
   should get exactly what was posted), then to every type for ``--ws-all-seconds`` (shorter:
   the clients stay connected until the encoder has embedded every one of those memories, so
   each outcome and each announced link event is counted too, and that drain is the longest
   part of the run).

The encoder backlog is drained (``latency.wait_idle``) after every write phase. Client and
daemon share the machine's cores: each phase reports the CPU used by the daemon, by this
process (the load generator) and by everything else on the machine.

    python bench/runtime.py [--size 100000] [--idle-seconds 60] [--query-seconds 60] [--json]
    python bench/runtime.py --size 10000 --idle-seconds 10 --query-seconds 10   # quick

Not a test: the table goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from itertools import count
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency
from latency import pct, progress
from server import TOKEN

FILL_LINKS = 8  # the REST-built 100k store of bench/latency.py has 8.3 links per memory
WRITE_SEED = 5150  # background writes: same generator as the fill, other seed, so new texts
WS_SEEDS = (6161, 7272)
QUERIES_PER_CLIENT = 400
WRITERS = 8  # lanes of the background write schedule
SETTLE_S = 3.0
AUTH = {"Authorization": f"Bearer {TOKEN}"}

T_IDLE_CPU = 1.0
T_RSS_MB = 500.0
T_QUERY_P95 = 50.0


# ---- CPU accounting ------------------------------------------------------------------------


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children (psutil is imported lazily)."""
    import psutil  # type: ignore[import-untyped,unused-ignore]

    proc = psutil.Process(pid)
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        times = p.cpu_times()
        total += times.user + times.system
    return total


def _machine_busy_s() -> float:
    import psutil  # type: ignore[import-untyped,unused-ignore]

    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0))


@dataclass
class CpuWindow:
    """CPU shares over a stretch of wall time, each as % of one core: the daemon (with any
    children), this process alone (the load generator; the daemon is its child, so not
    ``children()`` here) and everything else on the machine."""

    daemon_pid: int
    started: float = 0.0
    marks: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        self.started = time.perf_counter()
        self.marks = (_process_cpu_s(self.daemon_pid), time.process_time(), _machine_busy_s())

    def stop(self) -> dict[str, float]:
        wall = time.perf_counter() - self.started
        daemon = _process_cpu_s(self.daemon_pid) - self.marks[0]
        bench = time.process_time() - self.marks[1]
        busy = _machine_busy_s() - self.marks[2]
        return {
            "wall_s": wall,
            "daemon_pct": 100 * daemon / wall,
            "bench_pct": 100 * bench / wall,
            "others_pct": max(0.0, 100 * (busy - daemon - bench) / wall),
        }


# ---- phase 0: the filled home --------------------------------------------------------------


def fill(home: Path, size: int) -> dict[str, Any]:
    """Schema and model metadata from one daemon start, then the direct store fill."""
    with latency.daemon(home) as d:
        cold_empty = d.cold_s
    # The pool forks before this process has any thread (aiosqlite starts one per connection).
    pool = multiprocessing.get_context("fork").Pool(2)
    try:
        result = asyncio.run(latency.fill_direct(home, size, FILL_LINKS, 60.0, pool))
    finally:
        pool.close()
        pool.join()
    return {"cold_empty_s": cold_empty, **result}


# ---- phase 1: idle -------------------------------------------------------------------------


def idle(pid: int, seconds: float) -> dict[str, Any]:
    """No requests at all; CPU per second too, so a periodic job shows up as a peak."""
    window = CpuWindow(pid)
    per_second: list[float] = []
    deadline = time.perf_counter() + seconds
    last = (time.perf_counter(), _process_cpu_s(pid))
    while (left := deadline - time.perf_counter()) > 0:
        time.sleep(min(1.0, left))
        now = (time.perf_counter(), _process_cpu_s(pid))
        per_second.append(100 * (now[1] - last[1]) / (now[0] - last[0]))
        last = now
    return {**window.stop(), "peak_1s_pct": max(per_second, default=0.0)}


# ---- phase 2: /query under a write load ----------------------------------------------------


@dataclass
class Tally:
    """One worker's samples; merged after the threads end (no shared mutable state)."""

    ms: list[float] = field(default_factory=list)
    took_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    lag_s: float = 0.0
    seconds: float = 0.0


def _client(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers=AUTH, timeout=60)


def write_load(
    base_url: str, rate: float, lane: tuple[int, int], t0: float, stop: threading.Event
) -> Tally:
    """Lane ``k`` of ``n`` writers sends slots k, k+n, k+2n... of one monotonic schedule of
    ``rate`` single writes/s (no ``wait``), so a slow acknowledgement delays only its own
    lane, the offered rate holds, and a late write goes out at once."""
    k, n = lane
    tally = Tally()
    items = latency.iter_corpus(10_000_000, seed=WRITE_SEED + k)
    with _client(base_url) as client:
        for i in count(k, n):
            slot = t0 + i / rate
            if (delay := slot - time.perf_counter()) > 0 and stop.wait(delay):
                break
            if stop.is_set():
                break
            tally.lag_s = max(tally.lag_s, time.perf_counter() - slot)
            item = next(items)
            body = {"content": item.content, "project": item.project, "source": item.source}
            _timed_post(client, "/api/v1/memories", body, tally, expect=202)
    tally.seconds = time.perf_counter() - t0
    return tally


def _timed_post(
    client: httpx.Client, url: str, body: dict[str, Any], tally: Tally, expect: int
) -> httpx.Response | None:
    t0 = time.perf_counter()
    try:
        response = client.post(url, json=body)
    except httpx.HTTPError as exc:
        tally.errors[type(exc).__name__] += 1
        return None
    if response.status_code != expect:
        tally.errors[str(response.status_code)] += 1
        return None
    tally.ms.append((time.perf_counter() - t0) * 1000)
    return response


def query_worker(base_url: str, asked: list[tuple[str, str]], until: float) -> Tally:
    """Back-to-back queries; even-numbered ones filtered by the query's project."""
    tally = Tally()
    with _client(base_url) as client:
        for i in count():
            if time.perf_counter() >= until:
                break
            text, project = asked[i % len(asked)]
            body: dict[str, Any] = {"query": text, "limit": 10}
            if i % 2 == 0:
                body["project"] = project
            response = _timed_post(client, "/api/v1/query", body, tally, expect=200)
            if response is not None:
                tally.took_ms.append(float(response.json()["took_ms"]))
    return tally


def query_load(
    d: latency.Running, size: int, seconds: float, clients: int, write_rate: float
) -> dict[str, Any]:
    base = str(d.client.base_url)
    corpus = {item.content for item in latency.iter_corpus(size)}
    asked = latency.make_queries(clients * QUERIES_PER_CLIENT + clients, corpus)
    for text, project in asked[-clients:]:  # warm-up, not counted
        d.client.post("/api/v1/query", json={"query": text, "project": project}).raise_for_status()
    stop = threading.Event()
    with ThreadPoolExecutor(clients + WRITERS, thread_name_prefix="bench") as pool:
        t0 = time.perf_counter()
        writes = [
            pool.submit(write_load, base, write_rate, (k, WRITERS), t0, stop)
            for k in range(WRITERS if write_rate > 0 else 0)  # 0: queries alone, for comparison
        ]
        time.sleep(1.0)  # the write load is steady before the first timed query
        window = CpuWindow(d.pid)
        until = time.perf_counter() + seconds
        futures = [
            pool.submit(query_worker, base, asked[w:-clients:clients], until)
            for w in range(clients)
        ]
        tallies = [f.result() for f in futures]
        cpu = window.stop()
        stop.set()
        writer = _merge([f.result() for f in writes])
    ms = [x for t in tallies for x in t.ms]
    errors = sum((t.errors for t in tallies), Counter[str]())
    if not ms:
        raise RuntimeError(f"no query succeeded: {dict(errors)}")
    return {
        "clients": clients,
        "queries": len(ms),
        "p50": pct(ms, 0.5),
        "p95": pct(ms, 0.95),
        "p99": pct(ms, 0.99),
        "max": max(ms),
        "server_took_p50": pct([x for t in tallies for x in t.took_ms], 0.5),
        "server_took_p95": pct([x for t in tallies for x in t.took_ms], 0.95),
        "per_s": len(ms) / cpu["wall_s"],
        "errors": dict(errors),
        "cpu": cpu,
        "writes": _write_summary(writer, write_rate),
    }


def _merge(tallies: list[Tally]) -> Tally:
    return Tally(
        ms=[x for t in tallies for x in t.ms],
        errors=sum((t.errors for t in tallies), Counter[str]()),
        lag_s=max((t.lag_s for t in tallies), default=0.0),
        seconds=max((t.seconds for t in tallies), default=0.0),
    )


def _write_summary(t: Tally, target: float) -> dict[str, Any]:
    return {
        "target_per_s": target,
        "acked": len(t.ms),
        "per_s": len(t.ms) / t.seconds if t.seconds else 0.0,
        "seconds": t.seconds,
        "ack_p50": pct(t.ms, 0.5) if t.ms else float("nan"),
        "ack_p95": pct(t.ms, 0.95) if t.ms else float("nan"),
        "ack_max": max(t.ms, default=float("nan")),
        "max_lag_s": t.lag_s,
        "errors": dict(t.errors),
    }


# ---- phase 3: /ws fan-out ------------------------------------------------------------------


@dataclass
class Receiver:
    """One /ws client: counts per event type, ``dropped`` notices, delivery latency."""

    counts: Counter[str] = field(default_factory=Counter)
    dropped: int = 0
    notices: int = 0
    ms: dict[str, list[float]] = field(default_factory=dict)
    links: int = 0  # sum of ``links`` in memory_encoded payloads: association events expected
    closed: str = ""

    async def run(self, conn: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for message in conn:
                received = time.time()
                body = json.loads(message)
                kind = body["type"]
                if kind == "dropped":
                    self.dropped += int(body["count"])
                    self.notices += 1
                elif kind != "ping":
                    self.counts[kind] += 1
                    at = datetime.fromisoformat(body["at"]).timestamp()
                    self.ms.setdefault(kind, []).append((received - at) * 1000)
                    if kind == "memory_encoded":
                        self.links += int(body["payload"].get("links", 0))
        except ConnectionClosed as exc:
            self.closed = f"{type(exc).__name__}: {exc}"


def _batches(seed: int, batch: int) -> Iterator[list[dict[str, Any]]]:
    items = latency.iter_corpus(10_000_000, seed=seed)
    while True:
        chunk = [next(items) for _ in range(batch)]
        yield [{"content": i.content, "project": i.project, "source": i.source} for i in chunk]


async def post_open_loop(
    client: httpx.AsyncClient, seconds: float, per_s: float, batch: int, seed: int
) -> dict[str, Any]:
    """Batches on a fixed schedule, each its own task, so a slow acknowledgement does not
    lower the offered rate (open loop)."""
    loop = asyncio.get_running_loop()
    tally = Tally()
    accepted: list[int] = []

    async def one(body: list[dict[str, Any]]) -> None:
        t0 = time.perf_counter()
        try:
            response = await client.post("/api/v1/memories/batch", json={"memories": body})
        except httpx.HTTPError as exc:
            tally.errors[type(exc).__name__] += 1
            return
        if response.status_code != 202:
            tally.errors[str(response.status_code)] += 1
            return
        tally.ms.append((time.perf_counter() - t0) * 1000)
        accepted.append(len(response.json()["results"]))

    bodies = _batches(seed, batch)
    n = round(seconds * per_s / batch)
    started = loop.time()
    tasks = []
    for i in range(n):
        slot = started + i * batch / per_s
        if (delay := slot - loop.time()) > 0:
            await asyncio.sleep(delay)
        tally.lag_s = max(tally.lag_s, loop.time() - slot)
        tasks.append(asyncio.create_task(one(next(bodies))))
    await asyncio.gather(*tasks)
    wall = loop.time() - started
    return {
        "posted": sum(accepted),
        "batches": len(accepted),
        "seconds": wall,
        "per_s": sum(accepted) / wall,
        "ack_p50": pct(tally.ms, 0.5) if tally.ms else float("nan"),
        "ack_p95": pct(tally.ms, 0.95) if tally.ms else float("nan"),
        "max_lag_s": tally.lag_s,
        "errors": dict(tally.errors),
    }


async def _health(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/api/v1/health")
    response.raise_for_status()
    return dict(response.json())


async def _drained(client: httpx.AsyncClient, limit_s: float = 1800.0) -> float:
    """Seconds until the encoder has nothing queued or in flight (like latency.wait_idle)."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        h = await _health(client)
        if h["embedding"]["backlog"] == 0 and h["memories"]["raw_pending"] == 0:
            return time.perf_counter() - started
        await asyncio.sleep(0.5)
    raise RuntimeError(f"encoder still busy after {limit_s:.0f} s")


async def _quiet(
    receivers: list[Receiver], want: int, only_raw: bool, limit_s: float = 60.0
) -> None:
    """Until every client has ``want`` raw_memory_created events and no (raw, or any) event
    arrived for a second; or nothing at all for five seconds; or ``limit_s``."""
    started = last_change = time.perf_counter()
    seen = -1
    while time.perf_counter() - started < limit_s:
        total = sum(
            r.counts["raw_memory_created"] if only_raw else sum(r.counts.values())
            for r in receivers
        )
        if total != seen:
            seen, last_change = total, time.perf_counter()
        done = all(r.counts["raw_memory_created"] >= want for r in receivers)
        idle_for = time.perf_counter() - last_change
        if (done and idle_for >= 1.0) or idle_for >= 5.0:
            return
        await asyncio.sleep(0.1)


async def ws_variant(
    d: latency.Running, types: str | None, args: argparse.Namespace, seed: int
) -> dict[str, Any]:
    from websockets.asyncio.client import connect

    base = str(d.client.base_url)
    uri = base.replace("http://", "ws://") + "/ws" + (f"?types={types}" if types else "")
    receivers = [Receiver() for _ in range(args.ws_clients)]
    conns = [await connect(uri, additional_headers=AUTH) for _ in receivers]
    tasks = [asyncio.create_task(r.run(c)) for r, c in zip(receivers, conns, strict=True)]
    async with httpx.AsyncClient(base_url=base, headers=AUTH, timeout=120) as client:
        await _wait_clients(client, len(conns))
        window = CpuWindow(d.pid)
        seconds = args.ws_seconds if types else args.ws_all_seconds
        posted = await post_open_loop(client, seconds, args.ws_rate, args.ws_batch, seed)
        await _quiet(receivers, posted["posted"], only_raw=True)
        cpu = window.stop()
        drain_s = await _drained(client)
        if types is None:  # keep listening to the encoder's outcome and link events
            await _quiet(receivers, posted["posted"], only_raw=False)
        stats = (await client.get("/api/v1/stats")).json()
    for conn in conns:
        await conn.close()
    await asyncio.gather(*tasks)
    return _ws_summary(types, receivers, posted, cpu, drain_s, stats, conns[0])


async def _wait_clients(client: httpx.AsyncClient, n: int) -> None:
    """The server subscribes just after the handshake: wait until it counts all clients."""
    for _ in range(100):
        stats = (await client.get("/api/v1/stats")).json()
        if stats["websocket"]["clients"] >= n:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the daemon does not see {n} WebSocket clients")


def _ws_summary(
    types: str | None,
    receivers: list[Receiver],
    posted: dict[str, Any],
    cpu: dict[str, float],
    drain_s: float,
    stats: dict[str, Any],
    conn: Any,
) -> dict[str, Any]:
    kinds = sorted({k for r in receivers for k in r.counts})
    raw_ms = [x for r in receivers for x in r.ms.get("raw_memory_created", [])]
    all_ms = [x for r in receivers for xs in r.ms.values() for x in xs]
    server_drops = sum(c["dropped"] for c in stats["websocket"]["per_client"])
    bus_drops = sum(
        s["dropped"] for s in stats["bus"]["subscribers"] if s["name"].startswith("ws:")
    )
    return {
        "types": types or "all",
        "clients": len(receivers),
        "posted": posted,
        "received_min": {k: min(r.counts[k] for r in receivers) for k in kinds},
        "received_max": {k: max(r.counts[k] for r in receivers) for k in kinds},
        "links_announced_min": min(r.links for r in receivers),
        "dropped": sum(r.dropped for r in receivers),
        "dropped_notices": sum(r.notices for r in receivers),
        "server_ws_dropped": server_drops,
        "server_bus_ws_dropped": bus_drops,
        "closed_with_error": [r.closed for r in receivers if r.closed],
        "raw_latency_p50": pct(raw_ms, 0.5) if raw_ms else float("nan"),
        "raw_latency_p95": pct(raw_ms, 0.95) if raw_ms else float("nan"),
        "raw_latency_max": max(raw_ms, default=float("nan")),
        "all_latency_p95": pct(all_ms, 0.95) if all_ms else float("nan"),
        "extensions": [str(e.name) for e in getattr(conn.protocol, "extensions", [])],
        "cpu": cpu,
        "drain_s": drain_s,
    }


# ---- the run -------------------------------------------------------------------------------


def _rss(pid: int) -> dict[str, float]:
    rss, hwm = latency.rss_mb(pid)
    return {"rss": rss, "hwm": hwm}


def _drain(d: latency.Running) -> float:
    started = time.perf_counter()
    latency.wait_idle(d.client)
    return time.perf_counter() - started


def measure(d: latency.Running, args: argparse.Namespace, out: dict[str, Any]) -> None:
    """Phases 1-3 against one running daemon, in order."""
    phases = out["phases_s"]
    out["rss_mb"]["start"] = _rss(d.pid)
    latency.wait_idle(d.client)
    time.sleep(SETTLE_S)
    progress(f"idle: {args.idle_seconds:.0f} s without requests")
    out["idle"] = idle(d.pid, args.idle_seconds)
    phases["idle"] = out["idle"]["wall_s"]
    out["rss_mb"]["after_idle"] = _rss(d.pid)
    progress(f"  idle CPU {out['idle']['daemon_pct']:.2f} % of a core")

    started = time.perf_counter()
    progress(
        f"query: {args.query_clients} clients for {args.query_seconds:.0f} s,"
        f" {args.write_rate:.0f} writes/s in the background"
    )
    out["query"] = query_load(d, args.size, args.query_seconds, args.query_clients, args.write_rate)
    out["rss_mb"]["after_query"] = _rss(d.pid)
    q = out["query"]
    progress(f"  p50 {q['p50']:.1f} / p95 {q['p95']:.1f} ms, {q['per_s']:.1f}/s; draining")
    out["query"]["drain_s"] = _drain(d)
    phases["query"] = time.perf_counter() - started

    out["ws"] = []
    for types, seed in zip(("raw_memory_created", None), WS_SEEDS, strict=True):
        started = time.perf_counter()
        progress(
            f"ws: {args.ws_clients} clients ({types or 'all types'}),"
            f" {args.ws_rate:.0f} memories/s for"
            f" {args.ws_seconds if types else args.ws_all_seconds:.0f} s"
        )
        row = asyncio.run(ws_variant(d, types, args, seed))
        out["ws"].append(row)
        phases[f"ws_{row['types']}"] = time.perf_counter() - started
        progress(
            f"  posted {row['posted']['posted']:,} at {row['posted']['per_s']:.0f}/s,"
            f" received {row['received_min']}, dropped {row['dropped']},"
            f" drained in {row['drain_s']:.0f} s"
        )
    out["rss_mb"]["end"] = _rss(d.pid)
    out["stalls"] = loop_stalls(d)
    final = latency.health(d.client)
    out["final"] = {"status": final["status"], "reasons": final["reasons"], **final["memories"]}
    out["problems"] = latency.log_problems(d.log)


def loop_stalls(d: latency.Running) -> dict[str, float]:
    """The daemon's own event-loop stall counters (issue 9): wake-ups of its watchdog later
    than agents.loop_stall_threshold_s over the whole run, and the longest."""
    text = d.client.get("/metrics").text
    values: dict[str, float] = {}
    for line in text.splitlines():
        for name in (
            "mnemonic_event_loop_stalls_total",
            "mnemonic_event_loop_longest_stall_seconds",
        ):
            if line.startswith(name + " "):
                values[name] = float(line.split()[-1])
    return {
        "count": values.get("mnemonic_event_loop_stalls_total", float("nan")),
        "longest_s": values.get("mnemonic_event_loop_longest_stall_seconds", float("nan")),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"mnemonic-runtime-{args.size}-"))
    out: dict[str, Any] = {"size": args.size, "home": str(home), "phases_s": {}, "rss_mb": {}}
    try:
        started = time.perf_counter()
        progress(f"fill: {args.size:,} memories through the store layer into {home}")
        out["fill"] = fill(home, args.size)
        out["phases_s"]["fill"] = time.perf_counter() - started
        out["calibration"] = latency.calibrate()
        progress(f"  embedder alone right now: {out['calibration']}")
        with latency.daemon(home) as d:
            out["cold_filled_s"] = d.cold_s
            out["code"] = d.code
            progress(f"daemon healthy in {d.cold_s:.1f} s (pid {d.pid})")
            measure(d, args, out)
        out["phases_s"]["total"] = time.perf_counter() - started
    finally:
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    return out


# ---- output --------------------------------------------------------------------------------


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _ws_complete(w: dict[str, Any]) -> bool:
    """Every client got every posted memory's event, nothing was dropped, and in the
    all-types run every outcome and every announced link arrived too."""
    posted = w["posted"]["posted"]
    low = w["received_min"]
    ok = w["dropped"] == 0 and w["server_ws_dropped"] == 0 and not w["closed_with_error"]
    ok = ok and low.get("raw_memory_created", 0) == posted
    if w["types"] == "all":
        outcomes = low.get("memory_encoded", 0) + low.get("memory_reinforced", 0)
        ok = ok and outcomes >= posted
        ok = ok and low.get("association_created", 0) == w["links_announced_min"]
    return bool(ok)


def table(r: dict[str, Any], args: argparse.Namespace) -> str:
    n = f"{r['size']:,}"
    i, q, wr = r["idle"], r["query"], r["query"]["writes"]
    rss = r["rss_mb"]
    at_size = max(rss[k]["rss"] for k in ("start", "after_idle", "after_query"))
    rows = [
        "| criterion (issue 3 §8) | target | measured | |",
        "|---|---|---|:-:|",
        f"| idle CPU, {n} memories, {i['wall_s']:.0f} s without requests | ≤ {T_IDLE_CPU:g} % of"
        f" one core | {i['daemon_pct']:.2f} % (busiest second {i['peak_1s_pct']:.1f} %)"
        f" | {_mark(i['daemon_pct'] <= T_IDLE_CPU)} |",
        f"| RSS at {n} memories: VmRSS after start / after idle / after the query phase"
        f" | ≤ {T_RSS_MB:g} MB | {rss['start']['rss']:.0f} / {rss['after_idle']['rss']:.0f} /"
        f" {rss['after_query']['rss']:.0f} MB (peak VmHWM {rss['after_query']['hwm']:.0f} MB)"
        f" | {_mark(at_size <= T_RSS_MB)} |",
        f"| RSS at the end ({r['final']['memories_active']:,} active memories after the /ws"
        f" bursts) | report | VmRSS {rss['end']['rss']:.0f} MB, VmHWM {rss['end']['hwm']:.0f} MB"
        " | |",
        f"| /query p50 / p95 / p99, {q['clients']} clients, {wr['target_per_s']:g} writes/s |"
        f" p95 ≤ {T_QUERY_P95:g} ms | {q['p50']:.1f} / {q['p95']:.1f} / {q['p99']:.1f} ms"
        f" (server took_ms p95 {q['server_took_p95']:.1f}) | {_mark(q['p95'] <= T_QUERY_P95)} |",
        f"| /query throughput | report | {q['per_s']:.1f} queries/s ({q['queries']:,} in"
        f" {q['cpu']['wall_s']:.0f} s), errors {q['errors'] or 0} | |",
        f"| background writes (single POST, no wait) | {wr['target_per_s']:g}/s |"
        f" {wr['per_s']:.1f}/s, ack p50 / p95 / max {wr['ack_p50']:.1f} / {wr['ack_p95']:.1f} /"
        f" {wr['ack_max']:.0f} ms, errors {wr['errors'] or 0}"
        f" | {_mark(wr['per_s'] >= 0.95 * wr['target_per_s']) if wr['target_per_s'] else ''} |",
    ]
    for w in r["ws"]:
        rows.extend(_ws_rows(w, args.ws_rate))
    st = r["stalls"]
    rows.append(
        f"| event-loop stalls over 250 ms, whole run (issue 9) | report | {st['count']:.0f},"
        f" longest {st['longest_s'] * 1000:.0f} ms | |"
    )
    return "\n".join(rows)


def _ws_rows(w: dict[str, Any], rate: float) -> list[str]:
    p = w["posted"]
    got = ", ".join(
        f"{k} {w['received_min'][k]:,}"
        + ("" if w["received_min"][k] == w["received_max"][k] else f"–{w['received_max'][k]:,}")
        for k in w["received_min"]
    )
    if w["types"] == "all":
        got += f" (links announced in memory_encoded: {w['links_announced_min']:,})"
    name = f"/ws to {w['clients']} clients, types={w['types']}"
    return [
        f"| {name}: event rate | {rate:,.0f} events/s | {p['posted']:,} memories posted in"
        f" {p['seconds']:.1f} s = {p['per_s']:,.0f} raw_memory_created/s (batch ack p95"
        f" {p['ack_p95'] / 1000:.1f} s) | {_mark(p['per_s'] >= 0.95 * rate)} |",
        f"| {name}: delivery | all, no drops | each client got {got}; dropped {w['dropped']}"
        f" (server {w['server_ws_dropped']}); raw_memory_created latency p50 / p95 / max"
        f" {w['raw_latency_p50']:.1f} / {w['raw_latency_p95']:.1f} /"
        f" {w['raw_latency_max']:.0f} ms | {_mark(_ws_complete(w))} |",
    ]


def cpu_table(r: dict[str, Any]) -> str:
    rows = [
        "| phase | wall | daemon | load generator (this process) | rest of the machine |",
        "|---|---:|---:|---:|---:|",
    ]
    windows = [("idle", r["idle"]), ("query + writes", r["query"]["cpu"])]
    windows += [(f"ws {w['types']} (posting + delivery)", w["cpu"]) for w in r["ws"]]
    for name, c in windows:
        rows.append(
            f"| {name} | {c['wall_s']:.1f} s | {c['daemon_pct']:.1f} % | {c['bench_pct']:.1f} %"
            f" | {c['others_pct']:.1f} % |"
        )
    return "\n".join(rows)


def notes(r: dict[str, Any], info: dict[str, Any]) -> str:
    f, q = r["fill"], r["query"]
    phases = ", ".join(f"{k} {v:.0f} s" for k, v in r["phases_s"].items())
    cal = r["calibration"]
    lines = [
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['mem_total_mb']:,.0f} MB RAM,"
        f" Python {info['python']}; {info['date']}; load average at start"
        f" {', '.join(f'{x:.2f}' for x in info['load_avg_at_start'])}. Client and daemon share"
        f" these cores (CPU % below are of one core).",
        f"- Store: {r['size']:,} memories filled directly through the store layer"
        f" (latency.fill_direct: heuristic encoding, random unit vectors, {FILL_LINKS} links"
        f" each; {f['seconds']:.0f} s, {f['rate']:,.0f}/s), not through the embedder; daemon"
        f" cold start on it {r['cold_filled_s']:.1f} s; code {r['code']}.",
        f"- Embedder alone in the bench process before the daemon started:"
        f" {cal['embed_batch_per_s']:.0f} texts/s in batches, one text"
        f" {cal['embed_one_p50_ms']:.1f} ms (p50).",
        f"- Queries: latency.make_queries texts, even-numbered ones filtered by project, limit 10;"
        f" warm-up not counted; max {q['max']:.0f} ms; write schedule max lag"
        f" {q['writes']['max_lag_s'] * 1000:.0f} ms; the write backlog drained in"
        f" {q['drain_s']:.0f} s.",
        "- /ws: new memories posted as batches on an open-loop schedule to"
        " POST /api/v1/memories/batch (no wait); latency = receive time - event `at`"
        " (same clock; includes the client's own parsing);"
        f" extensions {r['ws'][0]['extensions'] if r['ws'] else []}.",
        f"- Phases: {phases}. Final health {r['final']['status']} {r['final']['reasons']};"
        f" daemon warnings/errors in its log: {len(r['problems'])}.",
    ]
    for w in r["ws"]:
        lines.append(
            f"- ws {w['types']}: batch ack p50 / p95 {w['posted']['ack_p50']:.0f} /"
            f" {w['posted']['ack_p95']:.0f} ms, schedule max lag"
            f" {w['posted']['max_lag_s'] * 1000:.0f} ms, post errors {w['posted']['errors'] or 0},"
            f" latency p95 over all types {w['all_latency_p95']:.1f} ms, encoder drained in"
            f" {w['drain_s']:.0f} s, closed with error: {len(w['closed_with_error'])}."
        )
    if r["problems"]:
        lines.append(f"- first daemon warning: {r['problems'][0][:300]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--query-seconds", type=float, default=60.0)
    parser.add_argument("--query-clients", type=int, default=16)
    parser.add_argument(
        "--write-rate", type=float, default=50.0, help="background writes/s (0: none)"
    )
    parser.add_argument("--ws-clients", type=int, default=10)
    parser.add_argument("--ws-rate", type=float, default=1000.0, help="new memories/s")
    parser.add_argument("--ws-seconds", type=float, default=10.0, help="raw_memory_created run")
    parser.add_argument(
        "--ws-all-seconds",
        type=float,
        default=3.0,
        help="all-types run (shorter: the clients stay until its memories are all encoded)",
    )
    parser.add_argument("--ws-batch", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="keep the MNEMONIC_HOME folder")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--save", type=Path, help="also write the JSON output to this file")
    args = parser.parse_args()

    info = latency.machine()
    result = run(args)
    output = json.dumps({"machine": info, "args": vars(args), **result}, indent=2, default=str)
    if args.save:
        args.save.write_text(output + "\n")
    if args.json:
        print(output)
        return
    print(table(result, args))
    print()
    print(cpu_table(result))
    print()
    print(notes(result, info))


if __name__ == "__main__":
    main()
