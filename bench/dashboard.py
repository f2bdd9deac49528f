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

``--only graph`` measures the Graph view panning a neighbourhood at the route's 2,000-node
cap (the largest project's, unless ``--graph-query`` names one): the page settles, then
the mouse drags the stage in small steps for ``--pan-seconds``, ``--pans`` times. Counted
in the page (installed with ``page.evaluate``, which goes through the DevTools protocol
and so past the CSP that forbids inline script): requestAnimationFrame callbacks (the
frames the page produced) and sigma's own time per render (its ``beforeRender`` /
``afterRender`` events). Each Chromium flag set in ``--flag-sets`` gets its own browser;
each is measured with the view's settings ("shipped") and with sigma drawing edges and
labels while the camera moves ("draw-all", the view before issue 15's change).

    .venv/bin/python bench/dashboard.py --only graph [--pans 3] [--flag-sets default swiftshader]

``--routes`` skips the browser: it times the aggregate routes the views start with
(``/timeline``, ``/projects``, ``/stats``, the graphs) over HTTP against the same warm
daemon, once the recall index is ready, and prints the median of ``--repeat`` requests.

    .venv/bin/python bench/dashboard.py --routes [--repeat 15] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

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


@contextmanager
def daemon_on_copy(report: dict[str, Any]) -> Iterator[DaemonProc]:
    """A daemon on a temporary copy of the cached 100k home (the cache itself is never
    written), ready; the copy is removed afterwards. Notes the home and the start time."""
    source = find_home()
    progress(f"copying {source} ...")
    home = copy_home(source)
    report["home"] = source.parent.name
    daemon = DaemonProc(home)
    try:
        report["daemon_ready_s"] = round(daemon.wait_ready(timeout=600), 1)
        yield daemon
    finally:
        daemon.close()
        shutil.rmtree(home.parent, ignore_errors=True)


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


FLAG_SETS: dict[str, list[str]] = {
    "default": [],
    "gpu-raster": ["--enable-gpu-rasterization", "--ignore-gpu-blocklist"],
    "swiftshader": ["--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
    # WebGL still on SwiftShader, the page's layers composited by Skia on the CPU
    "cpu-compositing": ["--disable-gpu-compositing"],
}

GRAPH_READY = "section.view-graph[data-nodes]"
# the renderer settings "draw-all" puts back: sigma's defaults for drawing while moving
DRAW_ALL = {"hideEdgesOnMove": False, "hideLabelsOnMove": False}
GRAPH_PROBE = """
([overrides, noHover]) => {
  // a frame counter and sigma's render time, recorded only while window.__bench.on
  const view = document.querySelector('.gr-stage').graphView;
  const s = view.sigma;
  for (const [k, v] of Object.entries(overrides)) s.setSetting(k, v);
  // an experiment, not the view: hover picking reads a pixel back from the GPU on every
  // mouse move (gl.readPixels, a synchronous round trip); this measures what that costs
  if (noHover) s.getNodeAtPosition = () => null;
  const b = (window.__bench = { on: false, frames: [], renders: [] });
  const tick = (t) => { if (b.on) b.frames.push(t); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  let t0 = 0;
  s.on('beforeRender', () => { t0 = performance.now(); });
  s.on('afterRender', () => { if (b.on) b.renders.push(performance.now() - t0); });
  const gl = document.createElement('canvas').getContext('webgl');
  const info = gl && gl.getExtension('WEBGL_debug_renderer_info');
  const settings = {};
  for (const k of ['hideEdgesOnMove', 'hideLabelsOnMove', 'renderEdgeLabels',
                   'enableEdgeEvents', 'labelRenderedSizeThreshold']) settings[k] = s.getSetting(k);
  const box = document.querySelector('.gr-stage').getBoundingClientRect();
  return { settings, canvases: Object.keys(s.getCanvases()),
           webgl: info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : String(gl),
           dpr: window.devicePixelRatio,
           box: [box.left, box.top, box.width, box.height] };
}
"""
GRAPH_TAKE = """
(on) => {
  const b = window.__bench;
  b.on = on;
  if (on) { b.frames = []; b.renders = []; return null; }
  return { frames: b.frames, renders: b.renders };
}
"""


# a drag as a real mouse gives it: Chromium delivers at most one mousemove per frame, so
# one synthetic move per animation frame, where the pointer is at that moment
PAGE_DRAG = """
async (seconds) => {
  const el = document.querySelector('.gr-stage').graphView.sigma.getCanvases().mouse;
  const box = el.getBoundingClientRect();
  const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
  const fire = (type, x, y, buttons) => el.dispatchEvent(new MouseEvent(type,
    { clientX: x, clientY: y, bubbles: true, cancelable: true, button: 0, buttons }));
  fire('mousemove', cx, cy, 0);
  fire('mousedown', cx, cy, 1);
  const t0 = performance.now();
  let moves = 0, x = cx, y = cy;
  await new Promise((done) => {
    const step = (t) => {
      const e = (t - t0) / 1000;
      if (e >= seconds) return done();
      const phase = 2 * Math.PI * e;
      x = cx + 150 * Math.sin(phase);
      y = cy + 60 * Math.sin(2 * phase);
      fire('mousemove', x, y, 1);
      moves++;
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
  fire('mouseup', x, y, 0);
  return { wall: (performance.now() - t0) / 1000, moves };
}
"""


def pick_graph_query(http: Any) -> dict[str, Any]:
    """The largest project's neighbourhood at the 2,000-node cap: enough memories that
    the cap is reached whatever the links."""
    items = http.get("/api/v1/projects").json()["items"]
    named = [p for p in items if p.get("name")]
    best = max(named, key=lambda p: p["active"]) if named else None
    query: dict[str, Any] = {"depth": 2, "limit": 2000}
    if best is not None:
        query["project"] = best["name"]
    return query


def frame_stats(frames: list[float], renders: list[float], seconds: float) -> dict[str, Any]:
    gaps = [b - a for a, b in itertools.pairwise(frames)]
    return {
        "fps": round((len(frames) - 1) / ((frames[-1] - frames[0]) / 1000), 1)
        if len(frames) > 1
        else 0.0,
        "frames": len(frames),
        "frame_ms_median": med(gaps) if gaps else None,
        "frame_ms_p95": p95(gaps) if gaps else None,
        "frame_ms_max": round(max(gaps), 1) if gaps else None,
        "sigma_renders": len(renders),
        "sigma_renders_per_s": round(len(renders) / seconds, 1),
        "sigma_ms_median": med(renders) if renders else None,
        "sigma_ms_p95": p95(renders) if renders else None,
    }


def pan(page: Any, box: list[float], seconds: float) -> tuple[float, int]:
    """Drag the stage back and forth for ``seconds`` in small steps (each step is one
    input event Chromium acknowledges before the next is sent); the wall time and the
    number of moves."""
    import math

    left, top, width, height = box
    cx, cy = left + width / 2, top + height / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    moves = 0
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        phase = 2 * math.pi * elapsed / 1.0  # one loop a second, 150 px across
        page.mouse.move(cx + 150 * math.sin(phase), cy + 60 * math.sin(2 * phase))
        moves += 1
    page.mouse.up()
    return time.monotonic() - started, moves


def measure_graph(
    context: Any, url: str, mode: str, drives: list[str], pans: int, seconds: float
) -> dict[str, Any]:
    """One fresh page of the Graph view, settings per ``mode``, dragged ``pans`` times by
    each of ``drives``: "mouse" (Playwright's mouse, each step acknowledged by Chromium
    before the next is sent, so the step rate follows the frame rate) and "page" (one
    synthetic move per animation frame, as a continuously moving real mouse gives)."""
    page = context.new_page()
    started = time.monotonic()
    page.goto(url)
    page.wait_for_selector(GRAPH_READY, timeout=60_000)
    ready_s = time.monotonic() - started
    data = page.evaluate(f"() => document.querySelector('{GRAPH_READY}').dataset")
    page.wait_for_timeout(1000)  # let the first frame and any resize settle
    overrides = DRAW_ALL if mode == "draw-all" else {}
    probe = page.evaluate(GRAPH_PROBE, [overrides, mode == "no-hover"])
    page.wait_for_timeout(300)
    # the page at rest, nothing moving: what the frame loop alone costs here
    page.evaluate(GRAPH_TAKE, True)
    page.wait_for_timeout(1000)
    idle = page.evaluate(GRAPH_TAKE, False)
    out: dict[str, Any] = {
        "nodes": int(data["nodes"]),
        "edges": int(data["edges"]),
        "layout_ms": int(data["layoutMs"]),
        "ready_s": round(ready_s, 2),
        "settings": probe["settings"],
        "canvases": len(probe["canvases"]),
        "webgl": probe["webgl"],
        "idle_fps": frame_stats(idle["frames"], idle["renders"], 1.0)["fps"],
    }
    for drive in drives:
        runs = []
        for _ in range(pans):
            page.evaluate(GRAPH_TAKE, True)
            if drive == "mouse":
                wall, moves = pan(page, probe["box"], seconds)
            else:
                done = page.evaluate(PAGE_DRAG, seconds)
                wall, moves = done["wall"], done["moves"]
            got = page.evaluate(GRAPH_TAKE, False)
            runs.append({**frame_stats(got["frames"], got["renders"], wall), "moves": moves})
            page.wait_for_timeout(500)  # inertia ends, the full frame is drawn again
        out[drive] = {
            # frames in which sigma drew the moved camera: what the eye sees
            "drawn_fps": med([r["sigma_renders_per_s"] for r in runs]),
            "raf_fps": med([r["fps"] for r in runs]),
            "frame_ms_p95": med([r["frame_ms_p95"] or 0 for r in runs]),
            "sigma_ms_median": med([r["sigma_ms_median"] or 0 for r in runs]),
            "pans": runs,
        }
    page.close()
    return out


def graph_main(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright

    report: dict[str, Any] = {}
    with daemon_on_copy(report) as daemon:
        with daemon.client(timeout=120) as http:
            report["index_wait_s"] = round(wait_index(http), 1)
            query = json.loads(args.graph_query) if args.graph_query else pick_graph_query(http)
            answer = http.get("/api/v1/graph/neighbourhood", params=query).json()
        report["graph_query"] = query
        report["graph_served"] = {"nodes": len(answer["nodes"]), "edges": len(answer["edges"])}
        progress(f"graph {query}: {report['graph_served']}")
        url = f"{daemon.base_url}/#/graph?{urlencode(query)}"
        with sync_playwright() as pw:
            for name in args.flag_sets:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=FLAG_SETS[name]
                )
                context = browser.new_context(viewport=VIEWPORT)
                login(context, daemon)
                # warm-up: module cache, shaders
                measure_graph(context, url, "shipped", ["page"], 1, 0.5)
                for mode in args.graph_modes:
                    result = measure_graph(
                        context, url, mode, args.drives, args.pans, args.pan_seconds
                    )
                    report[f"{name}/{mode}"] = result
                    brief = {
                        k: {x: y for x, y in v.items() if x != "pans"} if k in args.drives else v
                        for k, v in result.items()
                        if k not in ("settings", "webgl")
                    }
                    progress(f"{name}/{mode}: {brief}")
                browser.close()
    show(report, args.json)
    return 0


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
        choices=["search", "timeline", "graph"],
        help="search: its first paint and round trip only; timeline: its first paint only; "
        "graph: the Graph view's frames while panning 2,000 nodes",
    )
    parser.add_argument("--pans", type=int, default=3, help="drags per measure (graph)")
    parser.add_argument("--pan-seconds", type=float, default=2.0, help="one drag (graph)")
    parser.add_argument("--flag-sets", nargs="+", choices=list(FLAG_SETS), default=list(FLAG_SETS))
    parser.add_argument(
        "--graph-modes",
        nargs="+",
        choices=["shipped", "draw-all", "no-hover"],
        default=["shipped", "draw-all"],
        help="draw-all: edges and labels drawn while moving; no-hover: shipped without "
        "hover picking (an experiment)",
    )
    parser.add_argument("--drives", nargs="+", choices=["mouse", "page"], default=["mouse", "page"])
    parser.add_argument(
        "--graph-query", help='JSON query of the neighbourhood, e.g. {"project": "x"}'
    )
    parser.add_argument("--routes", action="store_true", help="time the API routes only")
    parser.add_argument("--repeat", type=int, default=15, help="requests per route (--routes)")
    args = parser.parse_args()
    if args.routes:
        return routes_main(args)
    if args.only == "graph":
        return graph_main(args)
    if args.only == "search":
        args.hours = []  # the live page is still opened, but fed nothing
    from playwright.sync_api import sync_playwright

    report: dict[str, Any] = {}
    with daemon_on_copy(report) as daemon:
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
    show(report, args.json)
    return 0


def routes_main(args: argparse.Namespace) -> int:
    report: dict[str, Any] = {}
    with daemon_on_copy(report) as daemon:
        report.update(time_routes(daemon, args.repeat))
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
