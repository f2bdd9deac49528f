"""Screenshots of every dashboard view at 1280x800, light and dark, into docs/screenshots/.

A throwaway daemon (temporary MNEMONIC_HOME, free port) is seeded with a small, realistic
set of memories in three projects; Debian's Chromium (``/usr/bin/chromium``) renders each
view through Playwright. A view whose module does not exist yet is skipped with a note.

    .venv/bin/python bench/screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.daemon_proc import DaemonProc  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}

MEMORIES = [
    (
        "atlas",
        "decision",
        "We deploy atlas with blue-green releases every Friday after the smoke tests pass.",
    ),
    (
        "atlas",
        "learning",
        "Rolling back an atlas deploy means switching the load balancer back to the green pool.",
    ),
    (
        "atlas",
        "general",
        "Atlas keeps its job queue in Postgres 16; the queue table is partitioned by day.",
    ),
    (
        "atlas",
        "error",
        "psycopg.OperationalError: too many connections while the nightly export ran (atlas).",
    ),
    (
        "atlas",
        "learning",
        "Raising the pool size did not help: the export leaked connections until it closed cursors",
    ),
    (
        "atlas",
        "decision",
        "Nightly exports now use a read replica so they never compete with the job queue.",
    ),
    (
        "atlas",
        "handoff",
        "Handoff: the replica lag alert is noisy; threshold raised to 30 s, revisit next sprint.",
    ),
    (
        "beacon",
        "error",
        "Beacon's websocket reconnect loop leaked timers until we cleared them on close.",
    ),
    (
        "beacon",
        "learning",
        "Reconnect with exponential backoff capped at 15 s keeps beacon clients from stampeding.",
    ),
    ("beacon", "general", "The beacon dashboard uses CSS variables for its light and dark themes."),
    (
        "beacon",
        "decision",
        "Beacon vendors its chart library instead of loading it from a CDN (offline installs).",
    ),
    (
        "beacon",
        "insight",
        "Most beacon incidents this quarter started with a config change, not a code change.",
    ),
    (
        "notes",
        "general",
        "The team prefers small pull requests: under 400 lines changed reviews twice as fast.",
    ),
    (
        "notes",
        "learning",
        "pytest -x -q -p no:cacheprovider keeps the shared checkout free of cache folders.",
    ),
    ("notes", "decision", "Secrets live in the OS keyring; config files only name the key."),
    (
        "notes",
        "general",
        "Friday deploys stop at 15:00 so someone is around if a rollback is needed.",
    ),
]
QUERIES = [
    "how do we deploy atlas on Friday",
    "websocket reconnect backoff",
    "postgres connections",
]


def seed(daemon: DaemonProc) -> dict[str, Any]:
    with daemon.client() as http:
        body = {"memories": [{"content": c, "project": p, "type": t} for p, t, c in MEMORIES]}
        answer = http.post("/api/v1/memories/batch", params={"wait": "true"}, json=body)
        answer.raise_for_status()
        ids = [r["memory_id"] for r in answer.json()["results"]]
        for query in QUERIES:
            found = http.post("/api/v1/query", json={"query": query, "limit": 5}).json()
            if found["results"]:
                http.post(
                    "/api/v1/feedback", json={"query_id": found["query_id"], "quality": "helpful"}
                )
        link = http.post("/api/v1/dashboard/login-links").json()["url"]
    return {"ids": ids, "login": link}


def shots(ids: list[str]) -> list[tuple[str, str]]:
    """(file stem, hash route) of every view."""
    return [
        ("search", "#/search?q=how+do+we+deploy+atlas+on+Friday"),
        ("memory", f"#/memory?id={ids[0]}"),
        ("timeline", "#/timeline"),
        ("live", "#/live"),
        ("graph", "#/graph?project=atlas"),
        ("episodes", "#/episodes"),
        ("patterns", "#/patterns"),
        ("insights", "#/insights"),
        ("health", "#/health"),
        ("settings", "#/settings"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mnemonic-shots-"))
    daemon = DaemonProc(work / "home")
    notes: list[str] = []
    light_cookies: list[Any] = []
    try:
        daemon.wait_ready()
        seeded = seed(daemon)
        with daemon.client() as http:
            listing = http.get("/views/index.json").json()["views"]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
            for scheme in ("light", "dark"):
                context = browser.new_context(viewport=VIEWPORT, color_scheme=scheme)
                page = context.new_page()
                if scheme == "light":
                    page.goto(seeded["login"])
                else:  # a login link works once: carry the session over
                    context.add_cookies(light_cookies)
                    page.goto(daemon.base_url + "/")
                for stem, route in shots(seeded["ids"]):
                    if not listing.get(stem, {}).get("js"):
                        notes.append(f"{stem}: view not built yet, skipped")
                        continue
                    page.evaluate("(h) => { window.location.hash = h; }", route)
                    page.wait_for_selector(
                        f"section.view[data-view='{stem}'][data-ready]", timeout=15000
                    )
                    page.wait_for_load_state("networkidle")
                    if stem == "live":  # something to show: a few writes and a recall
                        with daemon.client() as http:
                            for _, _, content in MEMORIES[:4]:
                                http.post(
                                    "/api/v1/memories", json={"content": content + " (again)"}
                                )
                            http.post("/api/v1/query", json={"query": QUERIES[0]})
                        time.sleep(1.5)
                    time.sleep(0.6)  # charts and the graph layout settle
                    path = args.out / f"{stem}-{scheme}.png"
                    page.screenshot(path=str(path))
                    print(f"wrote {path.relative_to(ROOT)}")
                if scheme == "light":
                    light_cookies = list(context.cookies())
                context.close()
            browser.close()
    finally:
        daemon.close()
        shutil.rmtree(work, ignore_errors=True)
    for note in sorted(set(notes)):
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
