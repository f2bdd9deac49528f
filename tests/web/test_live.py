"""The Live view against a real daemon: events within a second of a write, server-side
filters, pause, reconnect with backoff, the dropped counter, bounded rows, hostile text."""

from __future__ import annotations

import itertools
import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

LIVE = "section.view[data-view='live']"
WS = re.compile(r".*/ws(\?.*)?$")


def _live(page: Any) -> None:
    page.wait_for_selector(f"{LIVE}[data-socket='live']")


def test_a_write_appears_within_a_second(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("live")
    _live(page)
    marker = f"live-marker-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    web_daemon.remember(
        f"The {marker} was written to test the live view.", project="atlas", wait=False
    )
    page.wait_for_selector(
        f"{LIVE} li.event[data-type='raw_memory_created']:has-text('{marker}')", timeout=1000
    )
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, elapsed
    row = page.locator(f"{LIVE} li.event", has_text=marker).first
    assert row.locator(".event-project").inner_text() == "atlas"
    assert row.locator("a.memory-link").get_attribute("href").startswith("#/memory?id=")


def test_type_and_project_filters_apply_on_the_server(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("live", "types=memory_encoded&project=beacon")
    _live(page)
    assert page.locator(f"{LIVE} .live-types input:checked").evaluate_all(
        "els => els.map(e => e.value)"
    ) == ["memory_encoded"]
    other = f"atlas-{uuid.uuid4().hex[:6]}"
    web_daemon.remember(f"Filtered out: {other} in atlas.", project="atlas", wait=True)
    mine = f"beacon-{uuid.uuid4().hex[:6]}"
    web_daemon.remember(f"Kept: {mine} in beacon.", project="beacon", wait=True)
    page.wait_for_selector(f"{LIVE} li.event[data-type='memory_encoded']")
    types = page.eval_on_selector_all(f"{LIVE} li.event", "els => els.map(e => e.dataset.type)")
    assert set(types) == {"memory_encoded"}
    projects = page.eval_on_selector_all(
        f"{LIVE} li.event .event-project", "els => els.map(e => e.textContent)"
    )
    assert set(projects) == {"beacon"}
    # choosing types in the picker rewrites the URL and reconnects with them
    page.click(f"{LIVE} .live-types summary")
    page.check(f"{LIVE} .live-types input[value='raw_memory_created']")
    page.click(f"{LIVE} .live-apply")
    page.wait_for_function("location.hash.includes('raw_memory_created')")
    _live(page)


def test_pause_holds_events_until_resume(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("live", "types=raw_memory_created")
    _live(page)
    page.click(f"{LIVE} .live-pause")
    page.wait_for_function("location.hash.includes('paused=1')")
    marker = f"paused-{uuid.uuid4().hex[:8]}"
    web_daemon.remember(f"Written while {marker}.", wait=False)
    page.wait_for_function(
        "document.querySelector(\"section.view[data-view='live'] .live-counters\")"
        ".textContent.includes('1 held')"
    )
    assert page.locator(f"{LIVE} li.event", has_text=marker).count() == 0
    page.click(f"{LIVE} .live-pause")
    page.wait_for_selector(f"{LIVE} li.event:has-text('{marker}')", timeout=1000)


def test_reconnects_with_backoff_and_counts_drops(page: Any, open_view: Callable[..., Any]) -> None:
    attempts: list[float] = []

    def handler(ws: Any) -> None:
        attempts.append(time.monotonic())
        if len(attempts) <= 2:
            ws.close()  # the daemon went away
            return
        ws.connect_to_server()
        ws.send(json.dumps({"type": "dropped", "count": 7}))
        ws.send(json.dumps({"type": "dropped", "count": 5}))

    page.route_web_socket(WS, handler)
    open_view("live")
    page.wait_for_selector(f"{LIVE}[data-socket='reconnecting']")
    _live(page)
    assert len(attempts) == 3
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps[0] >= 0.4 and gaps[1] >= 0.9, gaps  # 0.5 s, then 1 s
    page.wait_for_function(
        "document.querySelector(\"section.view[data-view='live']\").dataset.dropped === '12'"
    )
    assert "12 dropped" in page.inner_text(f"{LIVE} .live-counters")
    delays = page.evaluate("import('/views/live.js').then(m => [0, 1, 2, 5, 20].map(m.backoffMs))")
    assert delays == [500, 1000, 2000, 15000, 15000]


def test_rows_stay_bounded(page: Any, open_view: Callable[..., Any]) -> None:
    def handler(ws: Any) -> None:
        for i in range(450):
            event = {
                "type": "query_executed",
                "at": "2026-01-01T00:00:00+00:00",
                "context": {"id": str(i), "parent_id": None},
                "payload": {"query": f"q{i}", "project": None},
            }
            ws.send(json.dumps(event))

    page.route_web_socket(WS, handler)
    open_view("live")
    page.wait_for_function(
        "document.querySelector(\"section.view[data-view='live']\").dataset.received === '450'"
    )
    rows = page.locator(f"{LIVE} li.event")
    max_rows = page.evaluate("import('/views/live.js').then(m => m.MAX_ROWS)")
    assert rows.count() == max_rows
    assert rows.first.inner_text().endswith("q449") or "q449" in rows.first.inner_text()


def test_hostile_event_text_stays_text(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("live", "types=raw_memory_created")
    _live(page)
    marker = uuid.uuid4().hex[:8]
    hostile = (
        f'{marker} <img src=x onerror="window.__xss=1;alert(1)">'
        "</script><script>window.__xss=2</script>"
    )
    web_daemon.remember(hostile, project=web_daemon.hostile_project, wait=False)
    row = page.wait_for_selector(f"{LIVE} li.event:has-text('{marker}')", timeout=2000)
    assert "<img src=x onerror=" in row.inner_text()
    assert row.query_selector("img, script") is None
    assert page.evaluate("window.__xss") is None
