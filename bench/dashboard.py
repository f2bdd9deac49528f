"""The dashboard with 100k memories, in a real Chromium against a real daemon.

Measures (issue 15):

* **first meaningful paint** of Search (a query in the URL: results drawn) and Timeline
  (chart drawn and the first memories listed), from navigation start, in a fresh tab with
  a warm daemon; the median of several loads (and the browser's first-contentful-paint);
* **search round trip in the page**: Enter in the query box until the results are drawn
  (the next animation frame), over varied queries; the fetch alone is reported too;
* **the page's own memory under live events**: the Live view fed an hour (and four) of
  events at ``--rate`` events/s. The events are injected into the page's WebSocket
  (Playwright's WebSocket routing): a daemon cannot be made to emit 36,000 realistic
  events in seconds, and the page cannot tell the difference. JS heap after a forced GC
  and DOM node count, before and after.

The 100k home is the one ``bench/recall_scale.py`` caches (``~/.cache/mnemonic-bench/
recall-scale-100000-*``), copied to a temp folder first: the cache is never written.

    .venv/bin/python bench/dashboard.py [--loads 5] [--searches 30] [--rate 10] [--json]

``--only search`` measures Search alone (its first paint and round trip), once the recall
index is ready like every run (the page would otherwise time the SQL fallback).

``--routes`` skips the browser: it times the aggregate routes the views start with
(``/timeline``, ``/projects``, ``/stats``, the graphs) over HTTP against the same warm
daemon, once the recall index is ready, and prints the median of ``--repeat`` requests.

    .venv/bin/python bench/dashboard.py --routes [--repeat 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.daemon_proc import DaemonProc  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CACHE = Path.home() / ".cache" / "mnemonic-bench"
VIEWPORT = {"width": 1280, "height": 800}
QUERIES = [
    "deploy the billing service to staging",
    "flaky test timeout",
    "rotate the api key",
    "postgres backfill took minutes",
    "queue moved to kafka",
    "standup notes about the release",
    "cache hit rate after the upgrade",
    "who fixed the login bug",
    "migration failed on production",
    "memory leak in the worker",
]

RECEIVED = (
    "document.querySelector(\"section.view[data-view='live']\").dataset.received === '{sent}'"
)
SEARCH_JS = """
async (query) => {
  const input = document.querySelector("input[name=q]");
  const root = document.querySelector("section.view[data-view='search']");
  input.value = query;
  const before = root.dataset.queryId;
  const t0 = performance.now();
  input.form.requestSubmit();
  while (root.dataset.state !== "done" || root.dataset.queryId === before) {
    await new Promise((r) => setTimeout(r, 1));
  }
  await new Promise((r) => requestAnimationFrame(() => r()));
  return { total: performance.now() - t0, fetch: Number(root.dataset.roundtripMs) };
}
"""


def live_event(n: int, rate: float) -> str:
    """The ``n``-th simulated event, ``rate`` per second from 2026-01-01."""
    kinds = ("raw_memory_created", "memory_encoded", "query_executed")
    return json.dumps(
        {
            "type": kinds[n % 3],
            "at": _at(n / rate),
            "context": {"id": str(n), "parent_id": None},
            "payload": {
                "memory_id": f"m{n}",
                "project": f"proj{n % 7}",
                "content": f"A live event body of ordinary length, number {n}, with some words.",
                "query": f"q{n}",
            },
        }
    )


def _at(seconds: float) -> str:
    from datetime import UTC, datetime, timedelta

    return (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)).isoformat()


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def find_home() -> Path:
    found = sorted(CACHE.glob("recall-scale-100000-*/home"))
    if not found:
        raise SystemExit("no cached 100k home: run `make bench-recall-scale` first")
    return found[-1]


def copy_home(source: Path) -> Path:
    parent = Path(tempfile.mkdtemp(prefix="mnemonic-dashboard-bench-"))
    home = parent / "home"
    subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(home)], check=True)
    return home


def login(context: Any, daemon: DaemonProc) -> None:
    with daemon.client() as http:
        url = http.post("/api/v1/dashboard/login-links").json()["url"]
    page = context.new_page()
    page.goto(url)
    page.close()


READY_WATCH = """
(selectors) => {
  // the first moment each selector matches, seen by the page itself: a wait from the
  // test driver would add its own polling and round trips to the number
  window.__readyAt = {};
  const check = () => {
    for (const s of selectors) {
      if (!(s in window.__readyAt) && document.querySelector(s)) {
        window.__readyAt[s] = performance.now();
      }
    }
  };
  const all = { subtree: true, childList: true, attributes: true };
  new MutationObserver(check).observe(document, all);
}
"""


def first_paint(context: Any, url: str, ready: str) -> dict[str, float]:
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector(ready, timeout=30_000)
    times = page.evaluate(
        """(ready) => ({ready: window.__readyAt[ready],
                  fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {})
                       .startTime || 0,
                  api: performance.getEntriesByType('resource')
                       .filter((e) => e.name.includes('/api/'))
                       .map((e) => [new URL(e.name).pathname, Math.round(e.startTime),
                                    Math.round(e.duration)])})""",
        ready,
    )
    page.close()
    return {"ready_ms": times["ready"], "fcp_ms": times["fcp"], "api": times["api"]}


def heap(page: Any, cdp: Any) -> dict[str, float]:
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {
        "js_heap_mb": round(metrics["JSHeapUsedSize"] / 2**20, 2),
        "dom_nodes": int(metrics["Nodes"]),
        "rows": page.locator("section.view[data-view='live'] li.event").count(),
    }


def med(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)


ROUTES: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/timeline", {"buckets": 120}),
    ("/api/v1/projects", {}),
    ("/api/v1/stats", {}),
    ("/api/v1/graph", {"limit": 500}),
    ("/api/v1/graph/neighbourhood", {"limit": 2000}),
]


def wait_index(http: Any, timeout: float = 600.0) -> float:
    """Seconds until the recall index reports ready (the aggregates read it)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        index = http.get("/api/v1/health").json().get("recall_index") or {}
        if index.get("state") == "ready":
            return time.monotonic() - started
        time.sleep(0.2)
    raise SystemExit(f"recall index not ready in {timeout} s")


def time_routes(daemon: DaemonProc, repeat: int) -> dict[str, Any]:
    """Median, min and max wall time of each of :data:`ROUTES` over ``repeat`` requests
    (after one warm-up request each), from a client on the same machine."""
    out: dict[str, Any] = {}
    with daemon.client(timeout=120) as http:
        out["index_wait_s"] = round(wait_index(http), 1)
        for path, params in ROUTES:
            first = time.perf_counter()
            answer = http.get(path, params=params)
            answer.raise_for_status()
            cold = (time.perf_counter() - first) * 1000
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                http.get(path, params=params).raise_for_status()
                times.append((time.perf_counter() - started) * 1000)
            out[path] = {
                "first_ms": round(cold, 1),
                "median_ms": med(times),
                "min_ms": round(min(times), 1),
                "max_ms": round(max(times), 1),
                "bytes": len(answer.content),
            }
            progress(f"{path}: {out[path]}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--searches", type=int, default=30)
    parser.add_argument("--rate", type=float, default=10.0, help="live events per second")
    parser.add_argument("--hours", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--only",
        choices=["search", "timeline"],
        help="search: its first paint and round trip only; timeline: its first paint only",
    )
    parser.add_argument("--routes", action="store_true", help="time the API routes only")
    parser.add_argument("--repeat", type=int, default=15, help="requests per route (--routes)")
    args = parser.parse_args()
    if args.routes:
        return routes_main(args)
    if args.only == "search":
        args.hours = []  # the live page is still opened, but fed nothing
    from playwright.sync_api import sync_playwright

    source = find_home()
    progress(f"copying {source} ...")
    home = copy_home(source)
    report: dict[str, Any] = {"home": str(source.parent.name)}
    daemon = DaemonProc(home)
    try:
        report["daemon_ready_s"] = round(daemon.wait_ready(timeout=600), 1)
        with daemon.client() as http:
            report["index_wait_s"] = round(wait_index(http), 1)  # else recall runs on SQL
            stats = http.get("/api/v1/stats").json()
            report["memories"] = (stats.get("memories") or {}).get("total")
            # warm the daemon's query path and the timeline (first runs load caches)
            http.post("/api/v1/query", json={"query": QUERIES[0], "explain": True})
            http.get("/api/v1/timeline", params={"buckets": 120})
        progress(f"daemon ready in {report['daemon_ready_s']} s with {report['memories']} memories")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
            context = browser.new_context(viewport=VIEWPORT)
            login(context, daemon)
            base = daemon.base_url
            search_ready = "section.view[data-view='search'][data-state='done'] li.result"
            timeline_ready = (
                "section.view[data-view='timeline'] .tl-chart-wrap[aria-busy='false'] ~ "
                ".tl-lists .tl-memories > li"
            )
            selectors = json.dumps([search_ready, timeline_ready])
            context.add_init_script(f"({READY_WATCH})({selectors})")
            search_url = f"{base}/#/search?q=deploy+the+billing+service"
            timeline_url = f"{base}/#/timeline"
            for name, url, ready in (
                ("search", search_url, search_ready),
                ("timeline", timeline_url, timeline_ready),
            ):
                if args.only and name != args.only:
                    continue
                first_paint(context, url, ready)  # warm-up: module cache, daemon caches
                loads = [first_paint(context, url, ready) for _ in range(args.loads)]
                report[f"{name}_first_paint_ms"] = med([x["ready_ms"] for x in loads])
                report[f"{name}_fcp_ms"] = med([x["fcp_ms"] for x in loads])
                # [path, start ms, duration ms] of the API calls of the median load
                ordered = sorted(loads, key=lambda x: x["ready_ms"])
                report[f"{name}_api_calls"] = ordered[len(ordered) // 2]["api"]
                progress(f"{name}: meaningful paint {report[f'{name}_first_paint_ms']} ms")

            if args.only == "timeline":
                browser.close()
                show(report, args.json)
                return 0  # the daemon is stopped and the copy removed below

            page = context.new_page()
            page.goto(search_url)
            page.wait_for_selector(search_ready)
            totals, fetches = [], []
            for i in range(args.searches):
                query = f"{QUERIES[i % len(QUERIES)]} {i}"
                result = page.evaluate(SEARCH_JS, query)
                totals.append(result["total"])
                fetches.append(result["fetch"])
            report["search_round_trip_ms"] = {"median": med(totals), "p95": p95(totals)}
            report["search_fetch_ms"] = {"median": med(fetches), "p95": p95(fetches)}
            progress(f"search round trip: {report['search_round_trip_ms']}")
            page.close()

            page = context.new_page()

            sockets: list[Any] = []

            def keep(ws: Any) -> None:  # no server behind it: the bench feeds the page
                sockets.append(ws)

            page.route_web_socket("**/ws*", keep)
            page.goto(f"{base}/#/live")
            page.wait_for_selector("section.view[data-view='live'][data-ready]")
            deadline = time.monotonic() + 10
            while not sockets and time.monotonic() < deadline:
                page.wait_for_timeout(50)
            socket = sockets[0]
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            memory = {"0h": heap(page, cdp)}
            sent = 0
            started = time.monotonic()
            for hours in sorted(args.hours):
                target = int(hours * 3600 * args.rate)
                while sent < target:  # each send is one message on the page's socket
                    socket.send(live_event(sent, args.rate))
                    sent += 1
                # polled from here: Playwright's wait_for_function evals in the page,
                # which the dashboard's CSP refuses
                deadline = time.monotonic() + 300
                while not page.evaluate(RECEIVED.format(sent=sent)):
                    if time.monotonic() > deadline:
                        raise SystemExit(f"the page did not take {sent} events in 300 s")
                    page.wait_for_timeout(100)
                memory[f"{hours:g}h"] = heap(page, cdp)
                progress(f"live after {hours:g} h ({sent} events): {memory[f'{hours:g}h']}")
            report["live_events_per_s"] = args.rate
            report["live_events_fed"] = sent
            report["live_feed_seconds"] = round(time.monotonic() - started, 1)
            report["live_memory"] = memory
            browser.close()
    finally:
        daemon.close()
        shutil.rmtree(home.parent, ignore_errors=True)
    show(report, args.json)
    return 0


def routes_main(args: argparse.Namespace) -> int:
    source = find_home()
    progress(f"copying {source} ...")
    home = copy_home(source)
    report: dict[str, Any] = {"home": str(source.parent.name)}
    daemon = DaemonProc(home)
    try:
        report["daemon_ready_s"] = round(daemon.wait_ready(timeout=600), 1)
        report.update(time_routes(daemon, args.repeat))
    finally:
        daemon.close()
        shutil.rmtree(home.parent, ignore_errors=True)
    show(report, args.json)
    return 0


def show(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    sys.exit(main())
